#include "sim/kernel.h"

#include <algorithm>
#include <cmath>

#include <sys/resource.h>

#include <fmt/format.h>
#include <simgrid/simix.hpp>
#include <xbt/log.h>

namespace hcasim::sim {

namespace s4u = simgrid::s4u;

namespace {
SimGridStats* g_stats = nullptr;  // the one counting now (SimGrid's signals are per process)
}  // namespace

SimGridStats::SimGridStats() {
  if (g_stats != nullptr) throw std::logic_error("SimGridStats: another one is already counting");
  g_stats = this;
  static bool connected = false;  // xbt::signal has no disconnect: connect once, count into g_stats
  if (!connected) {
    connected = true;
    s4u::Activity::on_completion_cb([](const s4u::Activity&) { if (g_stats) ++g_stats->comms; });
    s4u::Actor::on_sleep_cb([](const s4u::Actor&) { if (g_stats) ++g_stats->sleeps; });
    s4u::Actor::on_suspend_cb([](const s4u::Actor&) { if (g_stats) ++g_stats->suspends; });
    s4u::Engine::on_time_advance_cb([](double) { if (g_stats) ++g_stats->time_steps; });
  }
}

SimGridStats::~SimGridStats() { g_stats = nullptr; }

uint64_t max_rss_kb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<uint64_t>(u.ru_maxrss);
}

Timer::Timer(Failure& failure) : failure_(failure) {}

std::unique_ptr<s4u::Engine> make_engine() {
  char arg0[] = "hcasim";
#ifdef HCASIM_SANITIZE
  char arg1[] = "--cfg=contexts/factory:thread";
  char* argv[] = {arg0, arg1, nullptr};
  int argc = 2;
#else
  char* argv[] = {arg0, nullptr};
  int argc = 1;
#endif
  xbt_log_control_set("root.thres:critical");
  xbt_log_control_set("root.app:file:/dev/null");
  auto engine = std::make_unique<s4u::Engine>(&argc, argv);
  // Exact timing (DESIGN.md): a transfer takes latency + bytes/bandwidth, links shared max-min.
  s4u::Engine::set_config("network/model:CM02");
  s4u::Engine::set_config("network/crosstraffic:0");
  s4u::Engine::set_config("network/TCP-gamma:0");
  s4u::Engine::set_config("network/latency-factor:1");
  s4u::Engine::set_config("network/bandwidth-factor:1");
  s4u::Engine::set_config("network/weight-S:0");
  return engine;
}

void sleep_until_s(double t_s) {
  if (!(t_s > s4u::Engine::get_clock())) return;
  // SimWaitQueue::wait(t_s) on a queue of its own would do the same, but its waiter list costs
  // an allocation per sleep on the hot path (bcopy 4-7 % slower). The timer is removed if the
  // actor is killed meanwhile: SimGrid goes on running kernel timers after its last actor ended.
  struct Sleep {
    simgrid::kernel::timer::Timer* timer = nullptr;
    ~Sleep() {
      if (timer != nullptr) timer->remove();
    }
  } sleep;
  sleep.timer = simgrid::kernel::timer::Timer::set(t_s, [&sleep, self = s4u::Actor::self()] {
    sleep.timer = nullptr;  // SimGrid deletes the timer once it has run
    self->resume();
  });
  s4u::this_actor::suspend();
}

void sleep_for_ns(double ns) { sleep_until_s(s4u::Engine::get_clock() + to_s(ns)); }

Timer::~Timer() {
  if (armed_ != nullptr) armed_->remove();
}

void Timer::at(double at_ns, std::function<void()> fn) {
  queue_.push({std::max(at_ns, sim::now_ns()), seq_++, std::move(fn)});
  arm();
}

void Timer::arm() {
  if (queue_.empty()) return;
  // Compare in SimGrid's own unit: a time in ns converted to s and back may land a hair
  // before the clock.
  const double t_s = std::max(to_s(queue_.top().t), s4u::Engine::get_clock());
  if (armed_ != nullptr) {
    if (armed_s_ <= t_s) return;  // armed for this instant or an earlier one
    armed_->remove();
  }
  armed_s_ = t_s;
  armed_ = simgrid::kernel::timer::Timer::set(t_s, [this] { fire(); });
}

void Timer::fire() {
  armed_ = nullptr;  // SimGrid deletes a kernel timer once it has run
  while (!queue_.empty() && to_s(queue_.top().t) <= s4u::Engine::get_clock()) {
    auto fn = std::move(const_cast<Item&>(queue_.top()).fn);
    queue_.pop();
    try {
      fn();
    } catch (const std::exception& e) {
      failure_.record("timer", e.what());
      return;
    }
  }
  arm();
}

void Failure::guard(const std::string& who, const std::function<void()>& body) {
  try {
    body();
  } catch (const std::exception& e) {
    record(who, e.what());
  }
}

void Failure::record(const std::string& who, const std::string& what) {
  // The SDP socket names itself ("netperf: ..."): the actor's name is not repeated.
  if (message_.empty()) message_ = what.rfind(who + ": ", 0) == 0 ? what : fmt::format("{}: {}", who, what);
  s4u::Actor::kill_all();
}

struct SimWaitQueue::Waiter {
  s4u::ActorPtr actor = s4u::Actor::self();
  bool notified = false;
  simgrid::kernel::timer::Timer* deadline = nullptr;  ///< pending kernel timer of a timed wait
};

bool SimWaitQueue::wait(double deadline_s) {
  if (!(deadline_s > s4u::Engine::get_clock())) return false;
  Waiter w;
  waiters_.push_back(&w);
  if (std::isfinite(deadline_s))
    w.deadline = simgrid::kernel::timer::Timer::set(deadline_s, [this, &w] {
      w.deadline = nullptr;  // SimGrid deletes the timer once it has run
      waiters_.erase(std::find(waiters_.begin(), waiters_.end(), &w));
      w.actor->resume();
    });
  // Left by an exception (the actor killed at the end of the simulation or by Failure::guard):
  // nothing may still point into this frame.
  struct Leave {
    SimWaitQueue& q;
    Waiter& w;
    ~Leave() {
      if (w.deadline != nullptr) w.deadline->remove();
      if (auto it = std::find(q.waiters_.begin(), q.waiters_.end(), &w); it != q.waiters_.end()) q.waiters_.erase(it);
    }
  } leave{*this, w};
  s4u::this_actor::suspend();
  return w.notified;
}

void yield_rounds(int n) {
  for (int i = 0; i < n; ++i) s4u::this_actor::yield();
}

void SimWaitQueue::notify_all() {
  if (waiters_.empty()) return;
  if (!s4u::Actor::is_maestro()) {  // resume the waiters from maestro, in one simcall
    simgrid::kernel::actor::simcall_answered([this] { notify_all(); });
    return;
  }
  std::vector<Waiter*> woken;
  woken.swap(waiters_);
  for (Waiter* w : woken) {
    w->notified = true;
    if (w->deadline != nullptr) {
      w->deadline->remove();
      w->deadline = nullptr;
    }
    w->actor->resume();
  }
}

SimHost::SimHost(int id, std::string name, const model::CpuCosts& costs, const model::CpuTopology& topology,
                 uint64_t seed, sdp::DataMode data_mode)
    : id_(id),
      name_(std::move(name)),
      costs_(costs),
      topology_(topology),
      memory_(id, seed, data_mode),
      core_free_at_ns_(static_cast<size_t>(costs.cpus), 0.0),
      core_ran_ns_(static_cast<size_t>(costs.cpus), 0.0),
      accounts_(static_cast<size_t>(costs.cpus)) {
  if (topology_.cpus() != costs_.cpus)
    throw std::logic_error(fmt::format("{}: topology has {} CPUs, costs {}", name_, topology_.cpus(), costs_.cpus));
  caches_.assign(static_cast<size_t>(topology_.cpus() / topology_.cores_per_cache),
                 model::ReuseCache(costs_.copy_src_cache_bytes));
}

void SimHost::share(const void* object, uint32_t lines) {
  Context& c = current();
  auto [it, first] = last_writer_.try_emplace(object, c.core);
  if (first || it->second == c.core) return;
  charge(model::Activity::Coherence, lines * topology_.line_transfer_ns(it->second, c.core));
  it->second = c.core;
}

double SimHost::copy_from_user_ns(sdp::Addr user, uint64_t bytes) {
  const int core = current().core;
  const double hot = caches_[static_cast<size_t>(topology_.cache_of(core))].read(user, bytes);
  return costs_.copy_tx_ns(bytes, hot);
}

void SimHost::bind_current(int core) {
  if (core < 0 || core >= costs_.cpus)
    throw InputError(fmt::format("{}: CPU {} does not exist (the host has {} CPUs)", name_, core, costs_.cpus));
  const auto pid = static_cast<size_t>(s4u::this_actor::get_pid());
  if (pid >= contexts_.size()) contexts_.resize(pid + 1);
  if (!contexts_[pid]) contexts_[pid] = std::make_unique<Context>();
  contexts_[pid]->core = core;
}

SimHost::Context& SimHost::current() {
  const auto pid = static_cast<size_t>(s4u::this_actor::get_pid());
  if (pid >= contexts_.size() || !contexts_[pid])
    throw std::logic_error(fmt::format("{}: actor {} has no CPU context", name_, s4u::this_actor::get_name()));
  return *contexts_[pid];
}

void SimHost::charge(model::Activity a, double ns) {
  if (ns <= 0) return;
  Context& c = current();
  c.debt_ns += ns;
  accounts_[static_cast<size_t>(c.core)].busy_ns[static_cast<size_t>(a)] += ns;
}

void SimHost::flush() {
  Context& c = current();
  if (c.debt_ns <= 0) return;
  // A core runs one context at a time: work queued behind another context's waits for it.
  double& free_at = core_free_at_ns_[static_cast<size_t>(c.core)];
  const double start = std::max(sim::now_ns(), free_at);
  free_at = start + c.debt_ns;
  core_ran_ns_[static_cast<size_t>(c.core)] += c.debt_ns;
  c.debt_ns = 0;
  sleep_until_s(to_s(free_at));
}

void SimHost::reset_accounts() {
  for (auto& a : accounts_) a = model::CoreAccount{};
}

std::unique_ptr<sdp::WaitQueue> SimHost::make_wait_queue() { return std::make_unique<SimWaitQueue>(); }

void SimHost::sleep(sdp::WaitQueue& wq, const std::function<bool()>& ready) {
  flush();
  if (ready()) return;
  auto& q = static_cast<SimWaitQueue&>(wq);
  const int core = current().core;
  ++q.sleepers;
  yield_rounds(2);
  q.sleeper_cores.push_back(core);
  // Left by an exception when a daemon (the interrupt handler's work) is killed at the end.
  struct Leave {
    SimWaitQueue& q;
    int core;
    ~Leave() {
      --q.sleepers;
      q.sleeper_cores.erase(std::find(q.sleeper_cores.begin(), q.sleeper_cores.end(), core));
    }
  } leave{q, core};
  while (!ready()) {
    q.wait();
  }
  yield_rounds(1);
  charge(model::Activity::Wakeup, costs_.context_switch_ns);
}

bool SimHost::spin(sdp::WaitQueue& wq, const std::function<bool()>& ready, double timeout_ns) {
  flush();
  if (ready()) return true;
  auto& q = static_cast<SimWaitQueue&>(wq);
  Context& c = current();
  const double t0 = sim::now_ns();
  const double ran0 = core_ran_ns_[static_cast<size_t>(c.core)];
  const double deadline_s = to_s(t0 + timeout_ns);  // in SimGrid's unit (see Timer::arm)
  yield_rounds(2);
  while (!ready() && s4u::Engine::get_clock() < deadline_s) {
    if (!q.wait(deadline_s)) break;
  }
  yield_rounds(1);
  const double t1 = sim::now_ns();
  // The core was busy polling the whole time, except while other contexts ran on it.
  const double others = core_ran_ns_[static_cast<size_t>(c.core)] - ran0;
  accounts_[static_cast<size_t>(c.core)].busy_ns[static_cast<size_t>(model::Activity::Poll)] +=
      std::max(0.0, t1 - t0 - others);
  double& free_at = core_free_at_ns_[static_cast<size_t>(c.core)];
  free_at = std::max(free_at, t1);
  return ready();
}

void SimHost::wake(sdp::WaitQueue& wq) {
  auto& q = static_cast<SimWaitQueue&>(wq);
  if (q.sleepers > 0) {
    // try_to_wake_up; a sleeper on another core also needs the reschedule IPI.
    const int core = current().core;
    const bool remote = std::any_of(q.sleeper_cores.begin(), q.sleeper_cores.end(), [&](int c) { return c != core; });
    charge(model::Activity::Wakeup, costs_.wakeup_ns + (remote ? costs_.ipi_ns : 0));
    flush();
  }
  q.notify_all();
}

void SimHost::notify(sdp::WaitQueue& wq) { static_cast<SimWaitQueue&>(wq).notify_all(); }

double SimHost::now_ns() {
  flush();
  return sim::now_ns();
}

}  // namespace hcasim::sim
