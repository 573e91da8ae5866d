#pragma once
/// \file The emulated HCA's shared queues: the completion queue any number of QPs complete into,
/// and the shared receive queue. Both are the HCA core's rules (hca/cq.h) under a lock of their
/// own, with the waiting a program does on them (completion events, ibv_get_cq_event(3)).
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>

#include "hca/cq.h"
#include "hca/wqe.h"
#include "sdp/fifo.h"
#include "sdp/verbs.h"

namespace hcasim::emu {

/// A completion queue (ibv_create_cq(3)): hca::BasicCq's depth and overrun under a lock of its
/// own, the arming of ibv_req_notify_cq(3) and the completion event. Any number of QPs complete
/// into it, each its send or receive side or both; completions are polled in the order they
/// were written. Lock order: a Qp's lock, then its CQs'.
class CompQueue {
 public:
  /// Called (with the CQ's lock held) for the completion event of an armed CQ. Must not call
  /// back into the CQ or a QP.
  using EventHandler = std::function<void()>;
  explicit CompQueue(uint32_t depth) : cq_(depth) {}
  /// Writes `c`; an armed CQ disarms and raises its event. False on overrun (hca::BasicCq::push).
  bool push(const hca::Cqe& c);
  /// ibv_poll_cq(3): up to out.size() completions, oldest first; how many.
  int poll(std::span<hca::Cqe> out);
  /// The same, sdp::Wc only (the sdp::Verbs face).
  int poll(std::span<sdp::Wc> out);
  /// ibv_req_notify_cq(3): the next completion raises one event. True when completions wait
  /// already (the caller polls again before it sleeps).
  bool arm();
  /// Sets the event handler (nullptr: none; wait_event still sees events).
  void set_event_handler(EventHandler h);
  /// Blocks at most timeout_ms for a completion event (taking it); false on timeout or wake().
  bool wait_event(int timeout_ms);
  /// Makes every wait_event return (a QP closed).
  void wake();
  /// Removes the completions of QP `qpn` (it went to RESET, IBA 10.3.1), keeping the other QPs'
  /// in order, also on a CQ that overran.
  void remove_qp(uint32_t qpn);
  /// The CQ's depth (ibv_create_cq's cqe; ibv_resize_cq's since).
  uint32_t depth() {
    std::lock_guard g(m_);
    return cq_.depth();
  }
  /// ibv_resize_cq(3): `depth` entries from now on (hca::BasicCq::resize); false, changing
  /// nothing, when more completions than that wait.
  bool resize(uint32_t depth);
  /// CQEs written and not yet polled, plus one once the CQ has overrun (the overrun completion
  /// was not written): what a test waits for before it polls. No verb returns it.
  size_t written();

 private:
  std::mutex m_;
  std::condition_variable cv_;
  hca::BasicCq<hca::Cqe> cq_;
  bool armed_ = false, event_ = false;
  uint64_t wakes_ = 0;
  EventHandler on_event_;
};

/// A shared receive queue (ibv_create_srq(3), IBA 10.2.9): receive WRs that any QP created on
/// it consumes in the order posted, instead of a receive queue of its own. A QP going to ERROR
/// flushes none of them (they belong to the SRQ). Lock order: a Qp's lock, then its SRQ's.
///
/// An XRC SRQ (ibv_create_srq_ex(3) with IBV_SRQT_XRC; IBA 1.2.1 annex A14) belongs to an XRC
/// domain and has a PD and a CQ of its own: an XRC target QP of that domain takes the receive WQE
/// of each request from the XRC SRQ its XRCETH names, checks the request's memory accesses in
/// that SRQ's PD and completes the receive on that SRQ's CQ.
class Srq {
 public:
  /// A basic SRQ of `max_wr` WRs; with `xrcd` (not 0) an XRC SRQ of that XRC domain, whose
  /// requests use PD `pd` and complete on `cq`.
  explicit Srq(uint32_t max_wr, uint32_t xrcd = 0, uint32_t pd = 0, std::shared_ptr<CompQueue> cq = {})
      : max_wr_(max_wr), xrcd_(xrcd), pd_(pd), cq_(std::move(cq)) {}
  /// The SRQ number (ibv_get_srq_num(3), the XRCETH's XRC SRQ): Hca::add_srq's.
  uint32_t srqn() const { return srqn_; }
  void set_srqn(uint32_t n) { srqn_ = n; }
  /// The XRC domain (Hca::alloc_xrcd's number); 0 for a basic SRQ.
  uint32_t xrcd() const { return xrcd_; }
  /// An XRC SRQ's PD and CQ.
  uint32_t pd() const { return pd_; }
  const std::shared_ptr<CompQueue>& cq() const { return cq_; }
  /// ibv_post_srq_recv(3): false when max_wr WRs wait already.
  bool post(const sdp::RecvWr& wr);
  /// The oldest WR into `out`; false when none waits (the responder answers RNR NAK).
  bool take(sdp::RecvWr& out);
  uint32_t max_wr() const { return max_wr_; }

 private:
  std::mutex m_;
  sdp::Fifo<sdp::RecvWr> q_;
  uint32_t max_wr_;
  uint32_t xrcd_ = 0, pd_ = 0;
  std::shared_ptr<CompQueue> cq_;
  uint32_t srqn_ = 0;
};

}  // namespace hcasim::emu
