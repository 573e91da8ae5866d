#include "emu/queues.h"

#include <algorithm>
#include <array>
#include <chrono>

namespace hcasim::emu {

bool CompQueue::push(const hca::Cqe& c) {
  std::lock_guard g(m_);
  if (!cq_.push(c)) return false;
  if (armed_) {  // one completion event per arming (ibv_req_notify_cq(3))
    armed_ = false;
    event_ = true;
    if (on_event_) on_event_();
    cv_.notify_all();
  }
  return true;
}

int CompQueue::poll(std::span<hca::Cqe> out) {
  std::lock_guard g(m_);
  return cq_.poll(out);
}

int CompQueue::poll(std::span<sdp::Wc> out) {
  std::array<hca::Cqe, 32> buf;
  std::lock_guard g(m_);
  size_t total = 0;
  while (total < out.size()) {
    const size_t want = std::min(buf.size(), out.size() - total);
    const int n = cq_.poll(std::span<hca::Cqe>(buf.data(), want));
    for (int i = 0; i < n; ++i) out[total++] = buf[static_cast<size_t>(i)].wc;
    if (static_cast<size_t>(n) < want) break;
  }
  return static_cast<int>(total);
}

bool CompQueue::arm() {
  std::lock_guard g(m_);
  armed_ = true;
  return !cq_.empty();
}

void CompQueue::set_event_handler(EventHandler h) {
  std::lock_guard g(m_);
  on_event_ = std::move(h);
}

bool CompQueue::wait_event(int timeout_ms) {
  std::unique_lock g(m_);
  const uint64_t w = wakes_;
  if (!cv_.wait_for(g, std::chrono::milliseconds(timeout_ms), [&] { return event_ || wakes_ != w; })) return false;
  const bool e = event_;
  event_ = false;
  return e;
}

void CompQueue::wake() {
  std::lock_guard g(m_);
  ++wakes_;
  cv_.notify_all();
}

bool CompQueue::resize(uint32_t depth) {
  std::lock_guard g(m_);
  return cq_.resize(depth);
}

size_t CompQueue::written() {
  std::lock_guard g(m_);
  return cq_.size() + (cq_.overrun() ? 1 : 0);
}

void CompQueue::remove_qp(uint32_t qpn) {
  std::lock_guard g(m_);
  cq_.remove_if([qpn](const hca::Cqe& c) { return c.wc.qp_num == qpn; });
}

bool Srq::post(const sdp::RecvWr& wr) {
  std::lock_guard g(m_);
  if (q_.size() >= max_wr_) return false;
  q_.push_back(wr);
  return true;
}

bool Srq::take(sdp::RecvWr& out) {
  std::lock_guard g(m_);
  if (q_.empty()) return false;
  out = q_.front();
  q_.pop_front();
  return true;
}

}  // namespace hcasim::emu
