#pragma once
/// \file The SimGrid side of a simulated host: cores that accumulate busy time, execution
/// contexts (threads, interrupt handlers) bound to cores, wait queues, and a timer that runs
/// callbacks at given simulated times.
///
/// Time is in ns inside hcasim and in seconds inside SimGrid. A context charges CPU time
/// lazily: charge() adds to a debt that is slept off (one SimGrid activity) only before the
/// context does something another actor can observe (a verbs call, a wait, a wake). This keeps
/// the number of activities near one per SDP message without changing any instant at which
/// something becomes visible.
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

#include <simgrid/kernel/Timer.hpp>
#include <simgrid/s4u.hpp>

#include "model/cache.h"
#include "model/cpu.h"
#include "model/platform.h"
#include "model/topology.h"
#include "sdp/host.h"

namespace hcasim::sim {

/// What a simulation cost SimGrid, counted from SimGrid's own signals (not by hcasim's code):
/// communications and other s4u activities completed (s4u::Activity::on_completion: the HCAs'
/// data transfers; Comm::on_start is not exported by Debian's libsimgrid 3.32), actor sleeps
/// (s4u::Actor::on_sleep), actor suspensions (s4u::Actor::on_suspend: hcasim's waits and its
/// CPU-time sleeps, SimWaitQueue and sleep_until_s) and the engine's time steps
/// (s4u::Engine::on_time_advance: each distinct instant at which something happened).
/// SimGrid's signals are per process, as its engine is: one SimGridStats counts at a time, from
/// its construction (connect it before Engine::run()) to its destruction.
class SimGridStats {
 public:
  SimGridStats();
  ~SimGridStats();
  SimGridStats(const SimGridStats&) = delete;
  SimGridStats& operator=(const SimGridStats&) = delete;
  uint64_t comms = 0, sleeps = 0, suspends = 0, time_steps = 0;
  /// Activities: communications + sleeps + suspensions.
  uint64_t activities() const { return comms + sleeps + suspends; }
};

/// The process's peak resident set size so far (getrusage ru_maxrss), KiB.
uint64_t max_rss_kb();

/// Where actors report an error. SimGrid aborts the process on an exception that leaves an
/// actor; guard() catches it instead, keeps the first message and kills every other actor so
/// that Engine::run() returns and the caller can report it.
class Failure {
 public:
  /// Runs body; on an exception records "who: what" (the first one wins) and stops the run.
  void guard(const std::string& who, const std::function<void()>& body);
  /// Records "who: what" (the first one wins) and stops the run: guard()'s catch, for code that
  /// runs outside an actor (Timer's callbacks).
  void record(const std::string& who, const std::string& what);
  bool failed() const { return !message_.empty(); }
  const std::string& message() const { return message_; }

 private:
  std::string message_;
};

/// The SimGrid engine of a simulation, built as every hcasim simulation needs it: the thread
/// context factory in the sanitizer build (HCASIM_SANITIZE: AddressSanitizer loses track of the
/// stack under the raw and boost context switches; the factory is a command-line --cfg, chosen
/// when the Engine is built), SimGrid's own log silenced (its messages, its deadlock report
/// among them, would break hcasim's one-line errors; failures go through Failure), and the
/// exact-timing network configuration of DESIGN.md. One per process.
std::unique_ptr<simgrid::s4u::Engine> make_engine();

/// Seconds (SimGrid) from ns.
inline double to_s(double ns) { return ns * 1e-9; }
/// Blocks the calling actor until simulated time t_s (seconds; at once if it has passed), as
/// s4u::this_actor::sleep_until does, but through a SimGrid kernel timer that resumes the
/// suspended actor: no CPU sleep action in SimGrid's max-min system, which a sleep costs
/// (variable, constraint expansion, solve and extraction; issue 20's profile). The actor wakes
/// at exactly t_s (a sleep ends at now + (t_s - now), within an ulp of it).
void sleep_until_s(double t_s);
/// sleep_until_s(now + ns): blocks the calling actor for `ns` of simulated time.
void sleep_for_ns(double ns);

/// Lets every other actor runnable at this instant run `n` scheduling rounds before the caller
/// goes on (n simcalls). Kept where hcasim's waits used to take a SimGrid mutex (two rounds to
/// lock, one to unlock) and the fitted figures depend on that same-instant order: entering and
/// leaving SimHost::sleep and SimHost::spin, and the interrupt handler's loop. Without any of
/// them a 16 KB SDP stream moves 20 % less (6381 -> 5103 Mbit/s, 1 s); without the interrupt
/// handler's alone bzcopy -m 1M's sender utilisation moves 2 % (8.35 -> 8.54 %). The send
/// engine's were dropped: nothing moved. An order of simultaneous events the model has been
/// fitted with, not a mechanism (issue 20's note).
void yield_rounds(int n);
/// Current simulated time in ns.
inline double now_ns() { return simgrid::s4u::Engine::get_clock() * 1e9; }

/// Runs callbacks at simulated times, in (time, insertion) order. Callbacks must not block and
/// have no CPU context: they push CQEs, raise interrupts and notify.
///
/// The callbacks run in SimGrid's kernel (maestro) through one SimGrid kernel timer
/// (simgrid::kernel::timer::Timer, armed at the earliest pending time), not in an actor: a
/// callback costs no context switch and no activity, where a timer actor cost two switches and
/// a re-armed wait per callback (issue 20). hcasim keeps its own queue so that callbacks due at
/// the same instant run in the order they were scheduled (SimGrid's heap does not keep it).
/// An exception leaving a callback is reported to `failure` (the first one wins), which ends
/// the run, as it did from the timer actor.
class Timer {
 public:
  explicit Timer(Failure& failure);
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;
  /// Schedules fn at simulated time at_ns (not earlier than now).
  void at(double at_ns, std::function<void()> fn);

 private:
  struct Item {
    double t;
    uint64_t seq;
    std::function<void()> fn;
    bool operator>(const Item& o) const { return t > o.t || (t == o.t && seq > o.seq); }
  };
  /// Arms the kernel timer for the earliest item, if it is not armed for it already.
  void arm();
  /// The kernel timer's callback: runs every item due now, then re-arms.
  void fire();
  std::priority_queue<Item, std::vector<Item>, std::greater<>> queue_;
  uint64_t seq_ = 0;
  simgrid::kernel::timer::Timer* armed_ = nullptr;  ///< the pending kernel timer, if any
  double armed_s_ = 0;                              ///< its date, s
  Failure& failure_;
};

/// A wait queue of actors, without a SimGrid mutex or condition variable: each waiter
/// suspends itself, and notify_all() (or the waiter's deadline, a kernel timer) resumes it.
/// SimGrid's actors run one at a time, so the queue needs no lock; a condition variable costs
/// a lock and an unlock (three simcalls, each a switch to maestro and back) around every wait,
/// and notify_all a simcall even with nobody waiting. Here a wait is one simcall and a notify
/// with no waiter none. Notified actors run later at the same instant, in the order they began
/// to wait. An actor killed while it waits (the end of the simulation) leaves the queue
/// without a simcall.
class SimWaitQueue : public sdp::WaitQueue {
 public:
  SimWaitQueue() = default;
  SimWaitQueue(const SimWaitQueue&) = delete;
  SimWaitQueue& operator=(const SimWaitQueue&) = delete;
  /// Blocks the calling actor until notify_all() or until simulated time `deadline_s`
  /// (seconds; infinite: no deadline). Returns true when notified, false at the deadline
  /// (at once when it has passed). Callers re-check their condition in a loop.
  bool wait(double deadline_s = std::numeric_limits<double>::infinity());
  /// Wakes every actor waiting now. Callable from an actor or from a Timer callback.
  void notify_all();

  int sleepers = 0;
  std::vector<int> sleeper_cores;  ///< the core of each sleeper (a wake from another core sends an IPI)

 private:
  struct Waiter;
  std::vector<Waiter*> waiters_;
};

/// A simulated host: its memory, its cores and the execution contexts running on them.
class SimHost : public sdp::Host {
 public:
  SimHost(int id, std::string name, const model::CpuCosts& costs, const model::CpuTopology& topology,
          uint64_t seed, sdp::DataMode data_mode);

  /// Binds the calling actor to core `core` (0-based) for the rest of its life.
  void bind_current(int core);
  /// Sleeps off the calling context's pending CPU time on its core.
  void flush();
  /// Clears every core's busy time (start of the measured interval).
  void reset_accounts();
  /// Busy time per core since the last reset.
  const std::vector<model::CoreAccount>& accounts() const { return accounts_; }
  const std::string& name() const { return name_; }
  int cpus() const { return costs_.cpus; }

  // sdp::Host
  sdp::HostMemory& memory() override { return memory_; }
  const model::CpuCosts& costs() const override { return costs_; }
  void charge(model::Activity a, double ns) override;
  void sync() override { flush(); }
  std::unique_ptr<sdp::WaitQueue> make_wait_queue() override;
  void sleep(sdp::WaitQueue& q, const std::function<bool()>& ready) override;
  bool spin(sdp::WaitQueue& q, const std::function<bool()>& ready, double timeout_ns) override;
  void wake(sdp::WaitQueue& q) override;
  void notify(sdp::WaitQueue& q) override;
  double now_ns() override;
  void share(const void* object, uint32_t lines) override;
  double copy_from_user_ns(sdp::Addr user, uint64_t bytes) override;

  const model::CpuTopology& topology() const { return topology_; }

 private:
  struct Context {
    int core = 0;
    double debt_ns = 0;
  };
  Context& current();

  int id_;
  std::string name_;
  model::CpuCosts costs_;
  model::CpuTopology topology_;
  sdp::HostMemory memory_;
  std::vector<double> core_free_at_ns_;           // when each core finishes its queued work
  std::vector<double> core_ran_ns_;               // CPU time each core has run (flushed), ns
  std::vector<model::CoreAccount> accounts_;
  std::vector<std::unique_ptr<Context>> contexts_;  // by actor pid (SimGrid's pids are small, sequential)
  std::unordered_map<const void*, int> last_writer_;  // kernel object -> core that wrote it last
  std::vector<model::ReuseCache> caches_;         // one per last-level cache
};

}  // namespace hcasim::sim
