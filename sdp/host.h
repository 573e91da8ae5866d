#pragma once
/// \file The host interface of the SDP engine: memory, CPU cost, sleeping and waking.
/// In simulate mode (sim/) charging CPU advances the simulated clock of the calling thread's
/// core; in the wall-clock backends the real CPU pays and charge() records nothing.
#include <cstdint>
#include <functional>
#include <memory>

#include "model/cpu.h"
#include "sdp/memory.h"

namespace hcasim::sdp {

/// A kernel wait queue (sk_sleep): threads sleep on it until their condition holds.
class WaitQueue {
 public:
  virtual ~WaitQueue() = default;
};

/// Which core wrote a kernel object's cache lines last (Host::share), kept with the object: -1
/// until a core first touches it.
struct LineOwner {
  int core = -1;
};

/// What the engine needs of the host it runs in.
class Host {
 public:
  virtual ~Host() = default;
  /// This host's memory.
  virtual Memory& memory() = 0;
  /// This host's CPU costs (ns).
  virtual const model::CpuCosts& costs() const = 0;
  /// Charges `ns` of the calling context's core to activity `a`.
  virtual void charge(model::Activity a, double ns) = 0;
  /// Lets the calling context's clock catch up with the CPU time it was charged, so that what
  /// it does next happens at the right instant. Other contexts may run meanwhile: call it
  /// before reading the state an action depends on, never between reading and acting.
  virtual void sync() = 0;
  /// Makes a new wait queue.
  virtual std::unique_ptr<WaitQueue> make_wait_queue() = 0;
  /// Sleeps (the core goes idle) until ready() holds; ready() is re-checked after every
  /// wake(). Charges a context switch on resuming.
  virtual void sleep(WaitQueue& q, const std::function<bool()>& ready) = 0;
  /// Busy-waits (the core stays busy, charged to Poll) until ready() holds or `timeout_ns`
  /// passed; ready() is re-checked after every notify() or wake(). Returns ready().
  virtual bool spin(WaitQueue& q, const std::function<bool()>& ready, double timeout_ns) = 0;
  /// Wakes the sleepers of q (charges a wakeup to the caller when one was asleep).
  virtual void wake(WaitQueue& q) = 0;
  /// Tells spinners of q to re-check, at no cost (a CQE landed in memory they poll).
  virtual void notify(WaitQueue& q) = 0;
  /// Current time of the calling context, ns.
  virtual double now_ns() = 0;
  /// The calling context reads and writes `lines` 64 B cache lines of the kernel object whose
  /// last writer `owner` records (socket state, an skb and its pages' struct page), which
  /// another context may have written last. In simulate mode it stalls for the coherence
  /// transfers from the last writer's core (model/topology.h), charged to Activity::Coherence,
  /// and becomes the last writer.
  virtual void share(LineOwner& owner, uint32_t lines) = 0;
  /// CPU time to copy `bytes` from the user buffer at `user` into a kernel buffer
  /// (copy_from_user), ns: in simulate mode at cpu.copy_tx_hot_rate for the part of the
  /// source still in the cache (model/cache.h) and cpu.copy_tx_rate for the rest.
  virtual double copy_from_user_ns(Addr user, uint64_t bytes) = 0;
};

}  // namespace hcasim::sdp
