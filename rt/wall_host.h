#pragma once
/// \file The SDP engine's host in wall-clock time (emulate and hardware modes).
///
/// The engine is written for a kernel: a system call and the completion work never run its
/// code at the same instant on one socket except through its own socket lock, and simulate
/// mode runs one SimGrid actor at a time. Here real threads call it (the application's and
/// the completion thread), so every entry into the engine holds one mutex, engine_lock(); the
/// engine gives it up only where a kernel thread would sleep or spin (sleep() and spin()
/// wait on a condition variable with it released). CPU time is real, so charge() records
/// nothing.
#include <condition_variable>
#include <mutex>

#include "model/cpu.h"
#include "sdp/host.h"

namespace hcasim::rt {

/// sdp::Host on real threads and the steady clock.
class WallHost final : public sdp::Host {
 public:
  /// `memory` must outlive the host. `cpus` is the host's CPU count (for costs().cpus).
  WallHost(sdp::Memory& memory, int cpus);

  /// The mutex every call into the engine (send, recv, close, on_cq_event, on_cqe) holds.
  std::mutex& engine_lock() { return lock_; }

  sdp::Memory& memory() override { return memory_; }
  const model::CpuCosts& costs() const override { return costs_; }
  void charge(model::Activity, double) override {}
  void sync() override {}
  std::unique_ptr<sdp::WaitQueue> make_wait_queue() override;
  /// Waits on the queue's condition variable, engine_lock() released, until ready().
  void sleep(sdp::WaitQueue& q, const std::function<bool()>& ready) override;
  /// As sleep(), for at most timeout_ns; returns ready().
  bool spin(sdp::WaitQueue& q, const std::function<bool()>& ready, double timeout_ns) override;
  void wake(sdp::WaitQueue& q) override;
  void notify(sdp::WaitQueue& q) override;
  /// std::chrono::steady_clock, ns.
  double now_ns() override;
  void share(sdp::LineOwner&, uint32_t) override {}
  double copy_from_user_ns(sdp::Addr, uint64_t) override { return 0; }

 private:
  sdp::Memory& memory_;
  model::CpuCosts costs_;
  std::mutex lock_;
};

}  // namespace hcasim::rt
