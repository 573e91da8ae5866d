#include "rt/wall_host.h"

#include <chrono>

namespace hcasim::rt {

namespace {
struct CvQueue final : sdp::WaitQueue {
  std::condition_variable_any cv;
};
CvQueue& cvq(sdp::WaitQueue& q) { return static_cast<CvQueue&>(q); }
}  // namespace

WallHost::WallHost(sdp::Memory& memory, int cpus) : memory_(memory) { costs_.cpus = cpus; }

std::unique_ptr<sdp::WaitQueue> WallHost::make_wait_queue() { return std::make_unique<CvQueue>(); }

void WallHost::sleep(sdp::WaitQueue& q, const std::function<bool()>& ready) { cvq(q).cv.wait(lock_, ready); }

bool WallHost::spin(sdp::WaitQueue& q, const std::function<bool()>& ready, double timeout_ns) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(static_cast<int64_t>(timeout_ns));
  return cvq(q).cv.wait_until(lock_, until, ready);
}

void WallHost::wake(sdp::WaitQueue& q) { cvq(q).cv.notify_all(); }

void WallHost::notify(sdp::WaitQueue& q) { cvq(q).cv.notify_all(); }

double WallHost::now_ns() {
  return static_cast<double>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count());
}

}  // namespace hcasim::rt
