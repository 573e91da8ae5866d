#pragma once
/// \file The HCA core's completion queue: a depth and the overrun rule, without time or events
/// (the backends add the completion event: sim/ through its interrupt model, emu/ through a
/// condition variable).
///
/// Depth: a CQ created with `depth` entries holds exactly `depth` CQEs (ibv_create_cq(3): "a CQ
/// with at least cqe entries"; the emulators give exactly what was asked, as they report it).
/// Overrun: a completion arriving while `depth` CQEs wait unpolled. The IBA's CQ error (IBA
/// 1.2.1 ch. 11, affiliated asynchronous errors; T. Shanley, "InfiniBand Network
/// Architecture", ch. 14, "CQ Error ... Possible causes include a CQ overrun"): the CQE is not
/// written, no CQE can be written to the CQ after it (the flush completions of its QPs
/// included), and the QPs using it go to the error state. The CQEs already there stay pollable (the spec does not guarantee them;
/// keeping them is the useful choice). So with depth N the (N+1)-th unpolled completion is the
/// overrun: N completions are polled, and nothing after them.
#include <cstdint>
#include <span>

#include "sdp/fifo.h"
#include "sdp/verbs.h"

namespace hcasim::hca {

/// The CQ of entries `E` (sdp::Wc; a backend's CQE with more fields, emu::Cqe).
template <class E>
class BasicCq {
 public:
  explicit BasicCq(uint32_t depth) : depth_(depth) {}
  /// Writes `wc`. False, writing nothing, when the CQ is full (the overrun: overrun() is true
  /// from then on) or has overrun before; the caller then moves its QP to ERROR.
  bool push(const E& wc) {
    if (overrun_ || q_.size() >= depth_) {
      overrun_ = true;
      return false;
    }
    q_.push_back(wc);
    return true;
  }
  /// ibv_poll_cq: moves up to out.size() CQEs, oldest first, into `out`; returns how many.
  int poll(std::span<E> out) {
    size_t n = 0;
    while (n < out.size() && !q_.empty()) {
      out[n++] = q_.front();
      q_.pop_front();
    }
    return static_cast<int>(n);
  }
  bool empty() const { return q_.empty(); }
  size_t size() const { return q_.size(); }
  uint32_t depth() const { return depth_; }
  /// ibv_resize_cq(3): the CQ holds `depth` CQEs from now on, keeping those that wait. False,
  /// changing nothing, when more than `depth` wait (mlx4_resize_cq: EINVAL when the new size
  /// is below the outstanding CQEs, providers/mlx4/verbs.c).
  bool resize(uint32_t depth) {
    if (q_.size() > depth) return false;
    depth_ = depth;
    return true;
  }
  /// True once a completion found the CQ full (IBV_EVENT_CQ_ERR).
  bool overrun() const { return overrun_; }
  /// Empties the CQ (its QP went to RESET, IBA 10.3.1); an overrun CQ stays in error.
  void clear() { q_.clear(); }
  /// Removes the CQEs for which `pred` holds (one QP's, going to RESET on a CQ others share),
  /// keeping the others' in order; an overrun CQ stays in error and keeps what it holds.
  template <class Pred>
  void remove_if(Pred pred) {
    q_.remove_if(pred);
  }

 private:
  uint32_t depth_;
  bool overrun_ = false;
  sdp::Fifo<E> q_;
};

using Cq = BasicCq<sdp::Wc>;

}  // namespace hcasim::hca
