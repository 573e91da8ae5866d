#pragma once
/// \file The kernel of a simulation: hcasim's scheduler (contexts on a calendar of timed
/// events, SimGrid for the links), cores that accumulate busy time, execution contexts
/// (threads, interrupt handlers) bound to cores, wait queues, and a timer that runs callbacks
/// at given simulated times.
///
/// Time is in ns inside hcasim and in seconds on the calendar and in SimGrid. A context charges
/// CPU time lazily: charge() adds to a debt that is slept off (one calendar event) only before
/// the context does something another context can observe (a verbs call, a wait, a wake). This
/// keeps the number of events near ten per SDP message without changing any instant at which
/// something becomes visible.
#include <cstdint>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <new>
#include <type_traits>
#include <cstddef>
#include <string>
#include <vector>

#include <simgrid/s4u.hpp>

#include "model/cache.h"
#include "model/cpu.h"
#include "model/platform.h"
#include "model/topology.h"
#include "sdp/host.h"
#include "sim/trace.h"

namespace hcasim::sim {

/// What a simulation cost SimGrid, counted from SimGrid's own signals (not by hcasim's code):
/// communications and other s4u activities completed (s4u::Activity::on_completion: the
/// transfers that shared a link, Scheduler::transfer; Comm::on_start is not exported by Debian's
/// libsimgrid 3.32), actor sleeps (s4u::Actor::on_sleep: the scheduler bringing SimGrid's clock
/// up to date before such a transfer), actor suspensions (s4u::Actor::on_suspend) and the
/// engine's time steps (s4u::Engine::on_time_advance). Everything else happens on hcasim's own
/// calendar (Scheduler::Stats). SimGrid's signals are per process, as its engine is: one
/// SimGridStats counts at a time, from its construction (connect it before Engine::run()) to its
/// destruction.
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

/// Where contexts report an error. guard() catches an exception that would leave a context,
/// keeps the first message and stops the Scheduler, so that its run() returns and the caller
/// can report it.
class Failure {
 public:
  /// Runs body; on an exception records "who: what" (the first one wins) and stops the run.
  void guard(const std::string& who, const std::function<void()>& body);
  /// Records "who: what" (the first one wins) and stops the run: guard()'s catch, for code that
  /// runs outside a context (Timer's callbacks).
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
/// exact-timing network configuration of docs/design.md. One per process.
std::unique_ptr<simgrid::s4u::Engine> make_engine();

/// Seconds from ns.
inline double to_s(double ns) { return ns * 1e-9; }

namespace detail {
/// The simulated clock, s: the running Scheduler's (it stays at the last run's end time after).
inline double clock_s = 0;
}  // namespace detail

/// A callable of signature void() for the calendar, stored in place when it fits (kInline bytes:
/// the HCA's callbacks carry a work request or a completion by value), else on the heap; move
/// only. std::function keeps only 16 bytes in place, and the calendar made one allocation per
/// CQE, interrupt and RDMA WRITE landing with it.
class Callback {
 public:
  static constexpr size_t kInline = 176;
  Callback() = default;
  template <class F, class D = std::decay_t<F>, class = std::enable_if_t<!std::is_same_v<D, Callback>>>
  Callback(F&& f) {  // NOLINT: implicit, as std::function's
    if constexpr (sizeof(D) <= kInline && alignof(D) <= alignof(std::max_align_t) &&
                  std::is_nothrow_move_constructible_v<D>) {
      new (buf_) D(std::forward<F>(f));
      ops_ = &kOps<D, true>;
    } else {
      *reinterpret_cast<D**>(buf_) = new D(std::forward<F>(f));
      ops_ = &kOps<D, false>;
    }
  }
  Callback(Callback&& o) noexcept { take(o); }
  Callback& operator=(Callback&& o) noexcept {
    if (this != &o) {
      reset();
      take(o);
    }
    return *this;
  }
  Callback(const Callback&) = delete;
  Callback& operator=(const Callback&) = delete;
  ~Callback() { reset(); }
  explicit operator bool() const { return ops_ != nullptr; }
  void operator()() { ops_->call(buf_); }
  void reset() {
    if (ops_ != nullptr) ops_->destroy(buf_);
    ops_ = nullptr;
  }

 private:
  struct Ops {
    void (*call)(void*);
    void (*move)(void* to, void* from);  ///< move-constructs at `to`, destroys `from`
    void (*destroy)(void*);
  };
  template <class D, bool Inline>
  static constexpr Ops kOps = {
      [](void* p) { Inline ? (*static_cast<D*>(p))() : (**static_cast<D**>(p))(); },
      [](void* to, void* from) {
        if constexpr (Inline) {
          new (to) D(std::move(*static_cast<D*>(from)));
          static_cast<D*>(from)->~D();
        } else {
          *static_cast<D**>(to) = *static_cast<D**>(from);
        }
      },
      [](void* p) {
        if constexpr (Inline)
          static_cast<D*>(p)->~D();
        else
          delete *static_cast<D**>(p);
      }};
  void take(Callback& o) {
    if (o.ops_ != nullptr) o.ops_->move(buf_, o.buf_);
    ops_ = o.ops_;
    o.ops_ = nullptr;
  }
  alignas(std::max_align_t) unsigned char buf_[kInline];
  const Ops* ops_ = nullptr;
};

/// A SimGrid route between two nodes and the links it crosses, for Scheduler::transfer to know
/// which transfers share a link. `rate_Bps` is the least bandwidth of `links` (bytes/s): what a
/// transfer alone on the route gets under the exact-timing configuration (make_engine: latency
/// 0, max-min sharing, no TCP factors).
struct Route {
  simgrid::s4u::Host* from = nullptr;
  simgrid::s4u::Host* to = nullptr;
  std::vector<const simgrid::s4u::Link*> links;
  double rate_Bps = 0;
  /// Seconds per byte of each of `links` (1 / its bandwidth), in the same order.
  std::vector<double> link_s_per_byte;
  /// Busy time of each of `links` from this route's transfers since the last reset, s: every
  /// transfer adds bytes / the link's bandwidth, timed alone or in SimGrid (a link's utilisation
  /// over an interval is its busy time over the interval's length; a link in two routes, the
  /// PCI-X bus, is busy with both). Scheduler::transfer adds to it through a const Route.
  mutable std::vector<double> busy_s;
  /// Appends `link` (seals nothing: the link is SimGrid's) and its bandwidth.
  void add_link(const simgrid::s4u::Link* link);
};

/// hcasim's own discrete-event kernel: the execution contexts of a simulation
/// (application threads, interrupt handlers, the HCAs' engines) are fibers (Boost.Context) on
/// one calendar of timed events, run inside a single SimGrid actor. SimGrid is spent only on
/// what contends: the links of the route, through transfer(). A context switch costs ~20 ns
/// here, where a SimGrid simcall cost ~0.4 us and a SimGrid time step ~0.7 us (measured on
/// the 2-core CI machine), and a simulated SDP message takes about ten of them.
///
/// Order of events, as SimGrid's engine orders its actors and kernel timers (the fitted
/// figures depend on the order of what happens at one instant, yield_rounds()):
/// - Contexts that can run at the current instant run in rounds. Each runs until it blocks or
///   yields; what becomes runnable meanwhile runs in the next round, in the order it became so.
///   A context that wakes waiters (SimWaitQueue::notify_all) yields behind them, as an actor's
///   simcall was answered after its code had resumed them.
/// - When no context can run, the clock moves to the earliest event (time, then the order of
///   scheduling) and every event due then fires: timed callbacks run, sleepers and timed-out
///   waiters become runnable.
/// - A transfer on links no other transfer in flight uses takes bytes / rate exactly, as SimGrid
///   would give it alone: it is an event on the calendar and costs SimGrid nothing. A transfer
///   that shares a link with one in flight is a SimGrid communication, and so is from then on
///   every transfer it shares a link with: those in flight continue in SimGrid with the bytes
///   they have left (SimGrid's max-min sharing then applies), until none is left in flight.
/// - While a SimGrid transfer is in flight, the clock moves through SimGrid (Comm::wait_any_for
///   up to the next event): a transfer that completes first makes its context runnable at its
///   completion time, after the events due then. Between SimGrid transfers SimGrid's clock stays
///   behind and is brought up to date (one SimGrid sleep) before the next one starts.
/// With HCASIM_SIMGRID_TRANSFERS=all in the environment every transfer is a SimGrid
/// communication, as before the closed form: the check that the closed form changes nothing
/// (tests/cli_e2e_test.cpp compares the two).
/// The run ends when every non-daemon context has returned, when stop() is called (Failure), or
/// when nothing is runnable or pending; daemon contexts are then unwound (their destructors
/// run), as SimGrid kills its daemon actors. One Scheduler at a time per process.
class Scheduler {
 public:
  explicit Scheduler(Failure& failure);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  /// The Scheduler that exists now; throws std::logic_error when none does.
  static Scheduler& current() {
    if (current_ == nullptr) [[unlikely]]
      no_scheduler();
    return *current_;
  }
  /// The Scheduler that exists now, or nullptr.
  static Scheduler* current_if_any() { return current_; }
  /// Creates a context running `body`; it first runs in the first round of run(). A daemon
  /// does not keep the run going. `body` should catch its own errors (Failure::guard); an
  /// exception leaving it is recorded in the Failure and stops the run.
  void spawn(std::string name, std::function<void()> body, bool daemon = false);
  /// Runs the simulation to its end inside one SimGrid actor on `host` (the engine's run()).
  void run(simgrid::s4u::Host* host);
  /// Ends the run: no context runs again. Callable from a context or a callback.
  void stop();

  /// Id of the calling context (0-based, in order of spawn()); throws std::logic_error outside one.
  int current_id() const {
    if (running_ == nullptr) [[unlikely]]
      not_in_context();
    return running_id_;
  }
  /// Id of the calling context, or -1 outside one or when no Scheduler exists: current_id()
  /// without its checks, for callers that check it themselves (SimHost, several times per SDP
  /// message).
  static int running_id() { return running_id_; }
  /// Name of the calling context (or "the scheduler" outside one).
  const std::string& current_name() const;
  bool in_context() const { return running_ != nullptr; }

  /// Blocks the calling context until simulated time t_s (at once when it has passed).
  void sleep_until(double t_s);
  /// Lets every context runnable now run one round before the caller goes on.
  void yield();
  /// Runs fn at simulated time t_s (s; now if earlier) from the scheduler, not from a context.
  void call_at(double t_s, Callback&& fn);
  /// Moves `bytes` over `route`, blocking the calling context until the last byte arrives:
  /// alone on its links, in bytes / route.rate_Bps; sharing one, as a SimGrid communication.
  /// `route` must outlive the transfer.
  void transfer(const Route& route, uint64_t bytes);

  /// What the run cost hcasim's own kernel: events fired, context switches, transfers timed alone (closed form) and through SimGrid (started there or moved there when
  /// another came to share a link).
  struct Stats {
    uint64_t events = 0, switches = 0, transfers_alone = 0, transfers_simgrid = 0;
    /// Fills a result's kernel_events, context_switches, transfers_simgrid and transfers_alone.
    template <class Result>
    void copy_to(Result& r) const {
      r.kernel_events = events;
      r.context_switches = switches;
      r.transfers_simgrid = transfers_simgrid;
      r.transfers_alone = transfers_alone;
    }
  };
  const Stats& stats() const { return stats_; }
  /// Reports every transfer to `sink` from now on (nullptr: none, the default; --trace).
  void set_trace(TraceSink* sink) { trace_ = sink; }

  // Used by SimWaitQueue.
  struct Fiber;
  Fiber* running() const { return running_; }
  /// Blocks the calling context until make_ready() is called on it.
  void suspend();
  /// Makes a suspended context runnable in the next round and starts its next suspension
  /// (generation). Its pending event (the one timed event that could have resumed it: a sleep's
  /// end, a transfer's end, a wait's deadline), if any, is void now and taken off the calendar.
  void make_ready(Fiber* f);
  /// Generation of a context's current suspension: an event that resumes it checks it.
  static uint64_t generation(const Fiber* f);
  /// Runs fn at t_s if `f` is still in the suspension of generation `gen` then. The event is
  /// f's pending one: call it from f itself, with generation(f), at most once per suspension
  /// (a second would leave the first one on the calendar; SimWaitQueue::wait's deadline is
  /// the one user).
  void call_at_if(double t_s, Fiber* f, uint64_t gen, Callback&& fn);

 private:
  struct Transfer;
  struct Impl;
  friend struct Impl;
  /// Moves a transfer timed alone into SimGrid with the bytes it has left.
  void to_simgrid(Transfer& t);
  void loop();
  void switch_to(Fiber* f);
  void fire_due();
  void advance_to(double t_s);
  [[noreturn]] static void no_scheduler();
  [[noreturn]] static void not_in_context();
  inline static Scheduler* current_ = nullptr;  ///< the one that exists now
  std::unique_ptr<Impl> impl_;
  Fiber* running_ = nullptr;
  inline static int running_id_ = -1;  ///< running_'s id, -1 while none runs
  Failure& failure_;
  Stats stats_;
  bool stopped_ = false;
  bool all_in_simgrid_ = false;  ///< HCASIM_SIMGRID_TRANSFERS=all
  TraceSink* trace_ = nullptr;   ///< set_trace
};

/// Calls fn(clock_s) each time a Scheduler's clock advances (progress reports, sim/progress.h).
/// For the life of the process, for every Scheduler.
void on_time_advance(std::function<void(double)> fn);

/// Scheduler::current().spawn(...).
void spawn(std::string name, std::function<void()> body, bool daemon = false);
/// Blocks the calling context until simulated time t_s (seconds; at once if it has passed):
/// an event on hcasim's calendar, no SimGrid activity.
void sleep_until_s(double t_s);
/// sleep_until_s(now + ns): blocks the calling context for `ns` of simulated time.
void sleep_for_ns(double ns);

/// Lets every other context runnable at this instant run `n` scheduling rounds before the
/// caller goes on. Kept where hcasim's waits used to take a SimGrid mutex (two rounds to
/// lock, one to unlock) and the fitted figures depend on that same-instant order: entering and
/// leaving SimHost::sleep and SimHost::spin, and the interrupt handler's loop. Without any of
/// them a 16 KB SDP stream moves 20 % less (6381 -> 5103 Mbit/s, 1 s); without the interrupt
/// handler's alone bzcopy -m 1M's sender utilisation moves 2 % (8.35 -> 8.54 %). The send
/// engine's were dropped: nothing moved. An order of simultaneous events the model has been
/// fitted with, not a mechanism.
void yield_rounds(int n);
/// Current simulated time in ns.
inline double now_ns() { return detail::clock_s * 1e9; }

/// Runs callbacks at simulated times, in (time, insertion) order, on the Scheduler's calendar.
/// Callbacks must not block and have no CPU context: they push CQEs, raise interrupts and
/// notify. An exception leaving a callback is reported to the Scheduler's Failure (the first
/// one wins), which ends the run.
class Timer {
 public:
  /// Schedules fn at simulated time at_ns (not earlier than now).
  void at(double at_ns, Callback&& fn);
};

/// A wait queue of contexts. Each waiter suspends itself; notify_all() (or the waiter's
/// deadline, an event on the calendar) makes it runnable. Contexts run one at a time, so the
/// queue needs no lock. Notified contexts run later at the same instant, in the order they
/// began to wait, and a notifying context yields behind them (Scheduler's order). A context
/// unwound while it waits (the end of the simulation) leaves the queue.
class SimWaitQueue : public sdp::WaitQueue {
 public:
  SimWaitQueue() = default;
  SimWaitQueue(const SimWaitQueue&) = delete;
  SimWaitQueue& operator=(const SimWaitQueue&) = delete;
  /// Blocks the calling context until notify_all() or until simulated time `deadline_s`
  /// (seconds; infinite: no deadline). Returns true when notified, false at the deadline
  /// (at once when it has passed). Callers re-check their condition in a loop.
  bool wait(double deadline_s = std::numeric_limits<double>::infinity());
  /// Wakes every context waiting now. Callable from a context or from a Timer callback.
  void notify_all();

  int sleepers = 0;
  std::vector<int> sleeper_cores;  ///< the core of each sleeper (a wake from another core sends an IPI)

 private:
  struct Waiter;
  std::vector<Waiter*> waiters_, woken_;
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
  /// The host's index in its bed (0 = A, 1 = B).
  int id() const { return id_; }
  /// Reports the CPU work slept off and the busy-polling of every context from now on to `sink`
  /// (nullptr: none, the default; --trace). Work charged before is not reported.
  void set_trace(TraceSink* sink) { trace_ = sink; }
  /// The sink set_trace gave (nullptr: none).
  TraceSink* trace() const { return trace_; }
  /// When the calling context's CPU work charged so far would end if slept off now (ns): its
  /// core's queued work, then its own debt; now when it owes nothing. Moves no time.
  double pending_end_ns();

  // sdp::Host
  sdp::HostMemory& memory() override { return memory_; }
  const model::CpuCosts& costs() const override { return costs_; }
  void charge(model::Activity a, double ns) override;
  /// charge(), the work named `label` in a trace (a kernel function: "tcp_v4_rcv"); `label` must
  /// outlive the host (a string literal).
  void charge_labelled(model::Activity a, double ns, std::string_view label);
  void sync() override { flush(); }
  std::unique_ptr<sdp::WaitQueue> make_wait_queue() override;
  void sleep(sdp::WaitQueue& q, const std::function<bool()>& ready) override;
  bool spin(sdp::WaitQueue& q, const std::function<bool()>& ready, double timeout_ns) override;
  void wake(sdp::WaitQueue& q) override;
  void notify(sdp::WaitQueue& q) override;
  double now_ns() override;
  void share(sdp::LineOwner& owner, uint32_t lines) override;
  double copy_from_user_ns(sdp::Addr user, uint64_t bytes) override;

  const model::CpuTopology& topology() const { return topology_; }

 private:
  struct Context {
    int core = 0;
    double debt_ns = 0;
    /// With a trace: the charges making up debt_ns, in order (each becomes a span at flush),
    /// each with its label (charge_labelled) or none.
    struct Charge {
      model::Activity activity;
      double ns;
      std::string_view label;
    };
    std::vector<Charge> charges;
  };
  /// The calling context's CPU context (bind_current); throws std::logic_error when it has none.
  Context& current() {
    const auto pid = static_cast<size_t>(Scheduler::running_id());  // -1 (outside a context) is past the end
    if (pid < contexts_.size() && contexts_[pid]) [[likely]]
      return *contexts_[pid];
    unbound();
  }
  /// Throws: no Scheduler, not in a context (Scheduler's errors), or a context without a CPU context.
  [[noreturn]] void unbound() const;

  int id_;
  std::string name_;
  model::CpuCosts costs_;
  model::CpuTopology topology_;
  sdp::HostMemory memory_;
  std::vector<double> core_free_at_ns_;           // when each core finishes its queued work
  std::vector<double> core_ran_ns_;               // CPU time each core has run (flushed), ns
  std::vector<model::CoreAccount> accounts_;
  std::vector<std::unique_ptr<Context>> contexts_;  // by context id (Scheduler::current_id: small, sequential)
  std::vector<model::ReuseCache> caches_;         // one per last-level cache
  TraceSink* trace_ = nullptr;                    // set_trace
};

}  // namespace hcasim::sim
