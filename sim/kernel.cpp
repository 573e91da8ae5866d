#include "sim/kernel.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include <sys/resource.h>

#include <boost/context/fiber.hpp>
#include <boost/context/preallocated.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>
#ifdef HCASIM_SANITIZE
#include <sanitizer/common_interface_defs.h>
#endif

#include <fmt/format.h>
#include <simgrid/simix.hpp>
#include <xbt/log.h>

#include "sim/calendar.h"

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
  // Exact timing (docs/design.md): a transfer takes latency + bytes/bandwidth, links shared max-min.
  s4u::Engine::set_config("network/model:CM02");
  s4u::Engine::set_config("network/crosstraffic:0");
  s4u::Engine::set_config("network/TCP-gamma:0");
  s4u::Engine::set_config("network/latency-factor:1");
  s4u::Engine::set_config("network/bandwidth-factor:1");
  s4u::Engine::set_config("network/weight-S:0");
  return engine;
}

// ---- Scheduler -------------------------------------------------------------------------------

namespace {
/// on_time_advance's hooks (progress reports), for the life of the process: a plain global, read
/// on every clock step (a function-local static costs its guard's check there).
std::vector<std::function<void(double)>> g_time_advance_hooks;
/// A context's stack. Large enough for the SDP engine and fmt's formatting with room to spare;
/// the sanitizer build's frames are several times larger. The guard page below it turns an
/// overflow into a segmentation fault, not a silent overwrite.
#ifdef HCASIM_SANITIZE
constexpr size_t kStackBytes = 4u << 20;
#else
constexpr size_t kStackBytes = 512u << 10;
#endif
}  // namespace

void on_time_advance(std::function<void(double)> fn) { g_time_advance_hooks.push_back(std::move(fn)); }

struct Scheduler::Fiber {
  int id = 0;
  std::string name;
  std::function<void()> body;
  boost::context::fiber ctx;
  bool daemon = false;
  bool killed = false;  ///< unwinding: suspend() throws Unwind
  uint64_t gen = 0;     ///< incremented each time the fiber is made runnable
  /// The calendar slot of the one event that can resume it in its current suspension (its
  /// sleep's end, its transfer's end, its wait's deadline), or kNoSlot. A fiber resumed
  /// otherwise (notified, its transfer moved to SimGrid) takes that event off the calendar.
  uint32_t pending = kNoSlot;
  static constexpr uint32_t kNoSlot = ~0u;
  const void* stack_bottom = nullptr;  ///< its stack, for AddressSanitizer's switch annotations
  size_t stack_size = 0;
  void* fake_stack = nullptr;  ///< ASan's fake stack of this fiber while it is switched out
};

namespace {
/// Thrown in a context that is being unwound (the end of a run) from the point where it waits,
/// as SimGrid unwound a killed actor. Not a std::exception: Failure::guard lets it through.
struct Unwind {};

// AddressSanitizer follows a stack switch only when told (sanitizer/common_interface_defs.h);
// Boost.Context's fcontext switches do not tell it. The sanitizer build annotates each switch.
#ifdef HCASIM_SANITIZE
void asan_start_switch(void** fake_stack_save, const void* bottom, size_t size) {
  __sanitizer_start_switch_fiber(fake_stack_save, bottom, size);
}
void asan_finish_switch(void* fake_stack_save, const void** bottom_old, size_t* size_old) {
  __sanitizer_finish_switch_fiber(fake_stack_save, bottom_old, size_old);
}
#else
void asan_start_switch(void**, const void*, size_t) {}
void asan_finish_switch(void*, const void**, size_t*) {}
#endif
}  // namespace

/// A transfer in flight: on the stack of the context that waits for it.
struct Scheduler::Transfer {
  const Route* route;
  Fiber* fiber;
  double start_s;     ///< when it started (alone: its bytes flow at route->rate_Bps from then)
  double bytes;
  s4u::CommPtr comm;  ///< its SimGrid communication, or null while it is timed alone
  bool shares(const Route& r) const {
    for (const s4u::Link* l : r.links)
      if (std::find(route->links.begin(), route->links.end(), l) != route->links.end()) return true;
    return false;
  }
};

struct Scheduler::Impl {
  std::vector<std::unique_ptr<Fiber>> fibers;
  boost::context::fiber main;  ///< the scheduler's own continuation while a context runs
  const void* main_bottom = nullptr;  ///< the scheduler's stack (ASan annotations)
  size_t main_size = 0;
  void* main_fake = nullptr;
  /// Unwinds every context that has not returned: each is resumed once more and throws Unwind
  /// from where it waits (a context never started returns at once).
  void unwind_all(Scheduler& s) {
    for (auto& f : fibers) {
      if (!f->ctx) continue;  // returned (a fiber that returned has no continuation)
      f->killed = true;
      s.switch_to(f.get());
    }
  }
  /// The contexts runnable at this instant, in the order they became so; `ready_head` is the
  /// next to run. One FIFO gives the rounds' order (docs/design.md, "Rounds"): a round is the
  /// queue's contents when it starts, and what becomes runnable meanwhile queues behind it.
  /// Emptied (head back to 0) each time it drains, so its storage stays that of one instant.
  std::vector<Fiber*> ready;
  size_t ready_head = 0;
  /// Another context can run at this instant (later in this round, or in the next).
  bool others_runnable() const { return ready_head < ready.size(); }
  /// Nothing at all can happen before `t_s` but the calling context's own resumption there:
  /// nothing else runnable, no transfer in SimGrid, every event later (an event at t_s itself
  /// was scheduled earlier and would fire first).
  bool alone_until(double t_s) const { return !others_runnable() && in_simgrid == 0 && (events.empty() || events.top().t > t_s); }
  Calendar events;
  /// Schedules an event that resumes `f` (fn empty) or runs fn if `f` is still in suspension
  /// `gen` then; an event for a context is its pending one (Fiber::pending).
  void push(double t, Fiber* f, uint64_t gen, Callback* fn = nullptr) {
    const uint32_t slot = events.push(t, f, gen, fn);
    if (f != nullptr) f->pending = slot;
  }
  /// `f` is resumed otherwise than by its pending event: that event is void, off the calendar.
  void cancel_pending(Fiber* f) {
    if (f->pending == Fiber::kNoSlot) return;
    events.cancel(f->pending);
    f->pending = Fiber::kNoSlot;
  }
  int live = 0;  ///< non-daemon contexts that have not returned
  std::vector<Transfer*> in_flight;  ///< alone and in SimGrid, in order of start
  int in_simgrid = 0;                ///< transfers of in_flight that are SimGrid communications
  std::vector<s4u::CommPtr> comms;   ///< scratch: their comms, for wait_any_for
  std::vector<Transfer*> comm_of;    ///< scratch: the transfer of each of comms
  /// Brings SimGrid's clock to the calendar's (only while nothing is in flight in SimGrid).
  void sync_simgrid() {
    if (in_simgrid == 0 && s4u::Engine::get_clock() < detail::clock_s) s4u::this_actor::sleep_until(detail::clock_s);
  }
  /// Takes `t` out of in_flight (when its context goes on, or is unwound).
  void finish(Transfer* t) {
    auto it = std::find(in_flight.begin(), in_flight.end(), t);
    if (it == in_flight.end()) return;
    if ((*it)->comm) --in_simgrid;
    in_flight.erase(it);
  }
};

Scheduler::Scheduler(Failure& failure) : impl_(std::make_unique<Impl>()), failure_(failure) {
  if (current_ != nullptr) throw std::logic_error("Scheduler: another one exists");
  current_ = this;
  detail::clock_s = 0;
  const char* env = std::getenv("HCASIM_SIMGRID_TRANSFERS");
  if (env != nullptr && *env != '\0' && std::string_view(env) != "all")
    throw InputError(fmt::format("HCASIM_SIMGRID_TRANSFERS={}: the only value is 'all' (every transfer through "
                                 "SimGrid)", env));
  all_in_simgrid_ = env != nullptr && std::string_view(env) == "all";
}

Scheduler::~Scheduler() {
  impl_->unwind_all(*this);  // what is left of a run that never ran or never ended
  impl_->fibers.clear();
  current_ = nullptr;
  running_id_ = -1;
}

void Scheduler::no_scheduler() { throw std::logic_error("no Scheduler exists"); }

void Scheduler::not_in_context() { throw std::logic_error("not called from a simulated context"); }

void Scheduler::spawn(std::string name, std::function<void()> body, bool daemon) {
  auto f = std::make_unique<Fiber>();
  Fiber* fp = f.get();
  fp->id = static_cast<int>(impl_->fibers.size());
  fp->name = std::move(name);
  fp->body = std::move(body);
  fp->daemon = daemon;
  boost::context::protected_fixedsize_stack stacks(kStackBytes);
  const boost::context::stack_context stack = stacks.allocate();
  fp->stack_bottom = static_cast<const char*>(stack.sp) - stack.size;
  fp->stack_size = stack.size;
  fp->ctx = boost::context::fiber(
      std::allocator_arg, boost::context::preallocated(stack.sp, stack.size, stack), stacks,
      [this, fp](boost::context::fiber&& sink) {
        Impl& m = *impl_;
        asan_finish_switch(nullptr, &m.main_bottom, &m.main_size);
        m.main = std::move(sink);
        if (!fp->killed) {
          try {
            fp->body();
          } catch (const Unwind&) {
          } catch (const std::exception& e) {
            failure_.record(fp->name, e.what());
          }
        }
        if (!fp->daemon) --m.live;
        asan_start_switch(nullptr, m.main_bottom, m.main_size);  // this stack is done with
        return std::move(m.main);
      });
  if (!daemon) ++impl_->live;
  impl_->fibers.push_back(std::move(f));
  impl_->ready.push_back(fp);
  if (running_ != nullptr) yield();  // as an actor's Actor::create: the creator follows the new one
}

const std::string& Scheduler::current_name() const {
  static const std::string none = "the scheduler";
  return running_ != nullptr ? running_->name : none;
}

uint64_t Scheduler::generation(const Fiber* f) { return f->gen; }

void Scheduler::switch_to(Fiber* f) {
  Impl& m = *impl_;
  running_ = f;
  running_id_ = f->id;
  ++stats_.switches;
  asan_start_switch(&m.main_fake, f->stack_bottom, f->stack_size);
  f->ctx = std::move(f->ctx).resume();
  asan_finish_switch(m.main_fake, nullptr, nullptr);
  running_ = nullptr;
  running_id_ = -1;
}

// Inline: only this file calls suspend() and make_ready() (several times per SDP message).
inline void Scheduler::suspend() {
  Fiber* f = running_;
  if (f == nullptr) throw std::logic_error("Scheduler::suspend outside a context");
  Impl& m = *impl_;
  asan_start_switch(&f->fake_stack, m.main_bottom, m.main_size);
  m.main = std::move(m.main).resume();
  asan_finish_switch(f->fake_stack, &m.main_bottom, &m.main_size);
  // Resumed to be unwound: leave from here, unless already unwinding (a destructor that waits).
  if (f->killed && std::uncaught_exceptions() == 0) throw Unwind{};
}

[[gnu::always_inline]] inline void Scheduler::make_ready(Fiber* f) {
  ++f->gen;
  impl_->cancel_pending(f);
  impl_->ready.push_back(f);
}

void Scheduler::yield() {
  // Alone at this instant, the next round would hold this context only: no switch needed.
  if (!impl_->others_runnable()) return;
  make_ready(running_);
  suspend();
}

void Scheduler::stop() { stopped_ = true; }

void Scheduler::sleep_until(double t_s) {
  if (!(t_s > detail::clock_s)) return;
  // When its own wake-up is the next thing to happen, the clock moves there and the context
  // goes on: the same instants and order as through the calendar, without it.
  if (impl_->alone_until(t_s)) {
    advance_to(t_s);
    return;
  }
  Fiber* f = running_;
  impl_->push(t_s, f, f->gen);
  suspend();
}

void Scheduler::call_at(double t_s, Callback&& fn) {
  impl_->push(std::max(t_s, detail::clock_s), nullptr, 0, &fn);
}

void Scheduler::call_at_if(double t_s, Fiber* f, uint64_t gen, Callback&& fn) {
  impl_->push(std::max(t_s, detail::clock_s), f, gen, &fn);
}

void Scheduler::to_simgrid(Transfer& t) {
  // Alone it moved route->rate_Bps bytes per second since it started; SimGrid takes whole bytes.
  const double left = t.bytes - (detail::clock_s - t.start_s) * t.route->rate_Bps;
  t.comm = s4u::Comm::sendto_async(t.route->from, t.route->to, static_cast<uint64_t>(std::llround(std::max(0.0, left))));
  ++t.fiber->gen;  // its end on the calendar is void now: SimGrid's completion resumes it
  impl_->cancel_pending(t.fiber);
  ++impl_->in_simgrid;
  ++stats_.transfers_simgrid;
}

void Route::add_link(const s4u::Link* link) {
  links.push_back(link);
  link_s_per_byte.push_back(1.0 / link->get_bandwidth());
  busy_s.push_back(0.0);
}

void Scheduler::transfer(const Route& route, uint64_t bytes) {
  Fiber* f = running_;
  if (f == nullptr) throw std::logic_error("Scheduler::transfer outside a context");
  if (trace_ != nullptr) [[unlikely]]
    trace_->transfer(route, bytes, now_ns());
  for (size_t i = 0; i < route.busy_s.size(); ++i) route.busy_s[i] += static_cast<double>(bytes) * route.link_s_per_byte[i];
  Impl& m = *impl_;
  Transfer t{&route, f, detail::clock_s, static_cast<double>(bytes), {}};
  bool shared = false;
  for (const Transfer* o : m.in_flight) shared = shared || o->shares(route);
  // Out of in_flight when the context goes on, or when it is unwound at the end of the run.
  struct Leave {
    Impl& m;
    Transfer& t;
    ~Leave() { m.finish(&t); }
  } leave{m, t};
  if (!shared && !all_in_simgrid_) {
    // Alone on its links: its end is known now, a plain resumption on the calendar (void if
    // the transfer moves to SimGrid meanwhile, to_simgrid).
    ++stats_.transfers_alone;
    const double end = detail::clock_s + static_cast<double>(bytes) / route.rate_Bps;
    if (m.alone_until(end)) {  // nothing else happens before it ends, nothing can join it
      advance_to(end);
      return;
    }
    m.in_flight.push_back(&t);
    m.push(end, f, f->gen);
    suspend();
    return;
  }
  m.sync_simgrid();
  for (Transfer* o : m.in_flight)
    if (!o->comm && o->shares(route)) to_simgrid(*o);
  m.in_flight.push_back(&t);
  t.comm = s4u::Comm::sendto_async(route.from, route.to, bytes);
  ++m.in_simgrid;
  ++stats_.transfers_simgrid;
  suspend();
}

void Scheduler::fire_due() {
  Calendar& ev = impl_->events;
  while (!ev.empty() && ev.top().t <= detail::clock_s && !stopped_) {
    const uint32_t slot = ev.pop();
    ++stats_.events;
    Calendar::Payload& p = ev.payload(slot);
    Fiber* f = p.fiber;
    if (f != nullptr) {
      if (f->pending == slot) f->pending = Fiber::kNoSlot;  // its pending event, firing now
      if (f->gen != p.gen) {  // void; cannot happen: a context resumed otherwise takes its event off
        ev.release(slot);
        continue;
      }
    }
    if (!p.fn) {  // a context's resumption (void events were taken off: Calendar::cancel)
      ev.release(slot);
      make_ready(f);
      continue;
    }
    // In place: a slot's payload does not move while it is taken, and this one stays taken
    // (not reused by the events fn schedules) until fn has returned.
    try {
      p.fn();
    } catch (const std::exception& ex) {
      failure_.record("timer", ex.what());
    }
    ev.release(slot);
  }
}

void Scheduler::advance_to(double t_s) {
  detail::clock_s = std::max(detail::clock_s, t_s);
  if (!g_time_advance_hooks.empty()) [[unlikely]]
    for (auto& hook : g_time_advance_hooks) hook(detail::clock_s);
  fire_due();
}

void Scheduler::loop() {
  Impl& m = *impl_;
  for (;;) {
    while (m.ready_head < m.ready.size() && !stopped_) switch_to(m.ready[m.ready_head++]);  // rounds at this instant
    m.ready.clear();
    m.ready_head = 0;
    if (stopped_ || m.live == 0) return;
    const double t = m.events.empty() ? std::numeric_limits<double>::infinity() : m.events.top().t;
    if (m.in_simgrid == 0) {
      if (!std::isfinite(t)) return;  // nothing runnable or pending: the run is over
      advance_to(t);
      continue;
    }
    m.comms.clear();
    m.comm_of.clear();
    for (Transfer* x : m.in_flight)
      if (x->comm) {
        m.comms.push_back(x->comm);
        m.comm_of.push_back(x);
      }
    const double now_sg = s4u::Engine::get_clock();
    const ssize_t first = s4u::Comm::wait_any_for(m.comms, std::isfinite(t) ? std::max(0.0, t - now_sg) : -1.0);
    if (first < 0) {  // the next event came first
      advance_to(t);
      continue;
    }
    // A transfer ended before the next event: its context runs at its completion time, after
    // whatever else is due then, with every other transfer that ended at that instant.
    advance_to(s4u::Engine::get_clock());
    for (size_t i = 0; i < m.comms.size(); ++i) {
      if (static_cast<ssize_t>(i) != first && !m.comms[i]->test()) continue;
      Transfer* done = m.comm_of[i];
      make_ready(done->fiber);
      m.finish(done);  // its context takes it from here
    }
  }
}

void Scheduler::run(s4u::Host* host) {
  s4u::Actor::create("hcasim-scheduler", host, [this] {
    loop();
    // Unwind every context that has not returned (daemons, and all of them after stop()).
    impl_->unwind_all(*this);
    impl_->in_flight.clear();
    impl_->in_simgrid = 0;
  });
  s4u::Engine::get_instance()->run();
}

void spawn(std::string name, std::function<void()> body, bool daemon) {
  Scheduler::current().spawn(std::move(name), std::move(body), daemon);
}

void sleep_until_s(double t_s) { Scheduler::current().sleep_until(t_s); }

void sleep_for_ns(double ns) { sleep_until_s(detail::clock_s + to_s(ns)); }

void yield_rounds(int n) {
  Scheduler& s = Scheduler::current();
  for (int i = 0; i < n; ++i) s.yield();
}

// ---- Timer, Failure, SimWaitQueue ------------------------------------------------------------

void Timer::at(double at_ns, Callback&& fn) { Scheduler::current().call_at(to_s(at_ns), std::move(fn)); }

void Failure::guard(const std::string& who, const std::function<void()>& body) {
  try {
    body();
  } catch (const std::exception& e) {
    record(who, e.what());
  }
}

void Failure::record(const std::string& who, const std::string& what) {
  // The SDP socket names itself ("netperf: ..."): the context's name is not repeated.
  if (message_.empty()) message_ = what.rfind(who + ": ", 0) == 0 ? what : fmt::format("{}: {}", who, what);
  if (Scheduler* s = Scheduler::current_if_any()) s->stop();
}

struct SimWaitQueue::Waiter {
  Scheduler::Fiber* fiber = nullptr;
  bool notified = false;
};

bool SimWaitQueue::wait(double deadline_s) {
  if (!(deadline_s > detail::clock_s)) return false;
  Scheduler& s = Scheduler::current();
  Waiter w{s.running(), false};
  if (w.fiber == nullptr) throw std::logic_error("SimWaitQueue::wait outside a context");
  waiters_.push_back(&w);
  if (std::isfinite(deadline_s)) {
    // Void once the context is resumed otherwise (notified): `w` is gone by then.
    // Two pointers: std::function keeps them without allocating.
    s.call_at_if(deadline_s, w.fiber, Scheduler::generation(w.fiber), [this, &w] {
      waiters_.erase(std::find(waiters_.begin(), waiters_.end(), &w));
      Scheduler::current().make_ready(w.fiber);
    });
  }
  // Left by an exception (the context unwound at the end of the simulation): nothing may
  // still point into this frame.
  struct Leave {
    SimWaitQueue& q;
    Waiter& w;
    ~Leave() {
      if (auto it = std::find(q.waiters_.begin(), q.waiters_.end(), &w); it != q.waiters_.end()) q.waiters_.erase(it);
    }
  } leave{*this, w};
  s.suspend();
  return w.notified;
}

void SimWaitQueue::notify_all() {
  if (waiters_.empty()) return;
  Scheduler& s = Scheduler::current();
  woken_.swap(waiters_);
  for (Waiter* w : woken_) {
    w->notified = true;
    s.make_ready(w->fiber);
  }
  woken_.clear();
  // A context notifying goes on after the woken ones, as an actor whose simcall resumed them.
  if (s.in_context()) s.yield();
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

void SimHost::share(sdp::LineOwner& owner, uint32_t lines) {
  Context& c = current();
  const int last = owner.core;
  owner.core = c.core;
  if (last < 0 || last == c.core) return;
  charge(model::Activity::Coherence, lines * topology_.line_transfer_ns(last, c.core));
}

double SimHost::copy_from_user_ns(sdp::Addr user, uint64_t bytes) {
  const int core = current().core;
  const double hot = caches_[static_cast<size_t>(topology_.cache_of(core))].read(user, bytes);
  return costs_.copy_tx_ns(bytes, hot);
}

void SimHost::bind_current(int core) {
  if (core < 0 || core >= costs_.cpus)
    throw InputError(fmt::format("{}: CPU {} does not exist (the host has {} CPUs)", name_, core, costs_.cpus));
  const auto pid = static_cast<size_t>(Scheduler::current().current_id());
  if (pid >= contexts_.size()) contexts_.resize(pid + 1);
  if (!contexts_[pid]) contexts_[pid] = std::make_unique<Context>();
  contexts_[pid]->core = core;
}

void SimHost::unbound() const {
  (void)Scheduler::current().current_id();  // throws without a Scheduler or outside a context
  throw std::logic_error(fmt::format("{}: context {} has no CPU context", name_, Scheduler::current().current_name()));
}

void SimHost::charge(model::Activity a, double ns) {
  if (ns <= 0) return;
  Context& c = current();
  c.debt_ns += ns;
  accounts_[static_cast<size_t>(c.core)].busy_ns[static_cast<size_t>(a)] += ns;
  if (trace_ != nullptr) [[unlikely]]
    c.charges.push_back({a, ns, {}});
}

void SimHost::charge_labelled(model::Activity a, double ns, std::string_view label) {
  charge(a, ns);
  if (trace_ != nullptr && ns > 0) [[unlikely]]
    current().charges.back().label = label;
}

double SimHost::pending_end_ns() {
  Context& c = current();
  if (c.debt_ns <= 0) return sim::now_ns();
  return std::max(sim::now_ns(), core_free_at_ns_[static_cast<size_t>(c.core)]) + c.debt_ns;
}

void SimHost::flush() {
  Context& c = current();
  if (c.debt_ns <= 0) return;
  // A core runs one context at a time: work queued behind another context's waits for it.
  double& free_at = core_free_at_ns_[static_cast<size_t>(c.core)];
  const double start = std::max(sim::now_ns(), free_at);
  free_at = start + c.debt_ns;
  if (trace_ != nullptr) [[unlikely]] {
    // Each charge in turn, from where the core is free: the order the context charged them.
    double t = start;
    const std::string& who = Scheduler::current().current_name();
    for (const auto& [a, ns, label] : c.charges) {
      trace_->cpu_work(id_, c.core, a, t, ns, who, label);
      t += ns;
    }
    c.charges.clear();  // filled by charge() only while a trace is on
  }
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
  ++accounts_[static_cast<size_t>(core)].context_switches;
}

bool SimHost::spin(sdp::WaitQueue& wq, const std::function<bool()>& ready, double timeout_ns) {
  flush();
  if (ready()) return true;
  auto& q = static_cast<SimWaitQueue&>(wq);
  Context& c = current();
  const double t0 = sim::now_ns();
  const double ran0 = core_ran_ns_[static_cast<size_t>(c.core)];
  const double deadline_s = to_s(t0 + timeout_ns);  // in SimGrid's unit (see Timer::arm)
  if (trace_ != nullptr) [[unlikely]]
    trace_->poll(id_, c.core, true, t0);
  yield_rounds(2);
  while (!ready() && detail::clock_s < deadline_s) {
    if (!q.wait(deadline_s)) break;
  }
  yield_rounds(1);
  const double t1 = sim::now_ns();
  if (trace_ != nullptr) [[unlikely]]
    trace_->poll(id_, c.core, false, t1);
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
    model::CoreAccount& a = accounts_[static_cast<size_t>(core)];
    ++a.wakeups;
    a.ipis += remote ? 1 : 0;
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
