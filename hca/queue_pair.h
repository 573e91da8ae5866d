#pragma once
/// \file A queue pair's transport, time-free (IBA 1.2.1 chapters 9 and 10): its state and
/// attributes (ibv_modify_qp(3) through hca/qp.h's one table), its send and receive queues, and
/// the requester, responder and completer that run RC, UC and UD over them (hca/requester.h,
/// hca/responder.h, hca/completer.h). The simulated HCA (sim/hca.h) and the emulated one
/// (emu/emu_qp.h) each keep one per QP and supply the rest (hca/backend.h): memory, CQs, the wire
/// and the timers. Faults on the wire act on the packets a backend carries (hca/wire_faults.h), so
/// recovery from them is this code in both.
///
/// Not thread-safe: a backend serialises every call (emu/ under its QP lock, sim/ on its one
/// simulation thread).
#include <cstdint>
#include <optional>
#include <string>

#include "hca/backend.h"
#include "hca/completer.h"
#include "hca/packet.h"
#include "hca/qp.h"
#include "hca/requester.h"
#include "hca/responder.h"
#include "model/fault.h"
#include "sdp/fifo.h"

namespace hcasim::hca {

class QueuePair {
 public:
  /// A QP of `type` with number `qpn` in protection domain `pd`, room for `max_send_wr` and
  /// `max_recv_wr` WRs, in RESET; `lim` are its device's limits, `backend` its HCA (both must
  /// outlive it).
  QueuePair(QpType type, uint32_t qpn, uint32_t pd, uint32_t max_send_wr, uint32_t max_recv_wr,
            const DeviceLimits& lim, QpBackend& backend);
  QueuePair(const QueuePair&) = delete;
  QueuePair& operator=(const QueuePair&) = delete;

  QpType type() const { return type_; }
  uint32_t qpn() const { return qpn_; }
  uint32_t pd() const { return pd_; }
  QpState state() const { return attr_.qp_state; }
  /// The attributes ibv_modify_qp gave (ibv_query_qp(3)), the state among them.
  const QpAttr& attr() const { return attr_; }
  const DeviceLimits& limits() const { return lim_; }
  uint32_t max_send_wr() const { return max_send_wr_; }
  uint32_t max_recv_wr() const { return max_recv_wr_; }
  /// Receives come from an SRQ (QpBackend::take_srq_recv), not from post_recv. Before INIT.
  void set_srq(bool on) { srq_ = on; }
  bool has_srq() const { return srq_; }
  /// Why the QP went to ERROR ("" while it has not).
  const std::string& reason() const { return reason_; }

  // ---- verbs ---------------------------------------------------------------------------------
  /// ibv_post_send of `w` (its seq is set here): hca::check_post_send's verdict. Accept: queued
  /// (QpBackend::kick); Flush: its WR_FLUSH_ERR completion is written now; Refuse: nothing
  /// changes (post_errno(error) is the verb's errno).
  PostCheck post_send(const SendWqe& w);
  /// ibv_post_recv: as post_send, with check_post_recv (and SrqAttached on a QP with an SRQ).
  PostCheck post_recv(const sdp::RecvWr& wr);
  /// ibv_modify_qp(3) with the attributes of `mask` (attr:: bits) taken from `a`: 0, or EINVAL with
  /// the QP unchanged (a transition the table lacks, a required attribute missing or one it does
  /// not take, a value out of range, attr::kCurState not the current state). To RTR the responder
  /// expects rq_psn; to RTS the requester starts at sq_psn; to RESET the queues empty (the CQs'
  /// entries of the QP are the backend's to remove); to ERROR every WR flushes.
  int modify(const QpAttr& a, unsigned mask);
  /// modify() to `next` with the attributes the transition requires taken from the QP's current
  /// ones (as a connection manager fills them): for backends that set the attributes themselves.
  int modify_state(QpState next);
  /// Moves the QP to ERROR for `why` (a lost peer, a CQ error): its WRs flush (IBA 10.3.1), but
  /// the oldest one already on the wire, which completes with `first` when given (RETRY_EXC_ERR:
  /// the link to the peer is gone). With `unsent_front`, the oldest one completes with `first`
  /// even if the backend held it back (requests that would have gone out unanswered).
  void to_error(const std::string& why, std::optional<sdp::WcStatus> first = std::nullopt,
                bool unsent_front = false);
  /// The largest inline payload a post may carry, bytes (ibv_qp_init_attr.cap.max_inline_data).
  void set_max_inline_data(uint32_t bytes) { lim_.max_inline_data = bytes; }
  /// rnr_retry as requester (0-7, 7 = for ever), set outside ibv_modify_qp (the emulated SDP
  /// programs and tests). Throws sdp::VerbsError when > 7.
  void set_rnr_retry(uint8_t n) {
    comp_.set_rnr_retry(n);
    attr_.rnr_retry = n;
  }
  /// The local ACK timeout code and retry_cnt as requester (IBA 9.7.6.1.3, 10.8.3), set outside
  /// ibv_modify_qp (a simulation applies its faults' retry attributes to connected QPs). Throws
  /// sdp::VerbsError when timeout > 31 or retry_cnt > 7.
  void set_retry(uint8_t timeout, uint8_t retry_cnt);
  /// True while an RNR NAK's timer runs.
  bool rnr_waiting() const { return req_.rnr_wait(); }
  /// The seq the next WQE posted will have.
  uint64_t next_seq() const { return next_seq_; }
  /// Send WRs posted and not yet completed.
  size_t send_outstanding() const { return sq_.size(); }
  /// Receive WRs posted and not yet consumed.
  size_t recv_posted() const { return rq_.size(); }
  /// The send WQE with `seq`, while it is in the send queue (its data is gathered by the backend
  /// for every packet it sends), else nullptr.
  const SendWqe* wqe(uint64_t seq) const {
    if (sq_.empty() || seq < sq_.front().w.seq || seq - sq_.front().w.seq >= sq_.size()) return nullptr;
    return &sq_[static_cast<size_t>(seq - sq_.front().w.seq)].w;
  }
  /// The seq the oldest WQE still in the send queue has (the next one to be posted when empty): a
  /// backend drops what it keeps for WQEs before it.
  uint64_t oldest_seq() const { return sq_.empty() ? next_seq_ : sq_.front().w.seq; }

  // ---- the wire ------------------------------------------------------------------------------
  /// True when next_request has a packet.
  bool has_request() const { return req_.ready(); }
  /// Requester::peek: the WQE of the next train and whether the train is its first.
  bool peek_request(uint64_t& seq, bool& fresh) const { return req_.peek(seq, fresh); }
  /// The requester's next train of at most `max_pkts` packets (Requester::next).
  bool next_request(uint32_t max_pkts, Packet& out) { return req_.next(max_pkts, out); }
  /// True when next_response has a packet.
  bool has_response() const { return resp_.has_response(); }
  /// The responder's next response train (Responder::next_response).
  bool next_response(uint32_t max_pkts, Packet& out) { return resp_.next_response(max_pkts, out); }
  /// A train from the wire addressed to this QP: a request to the responder, a response to the
  /// completer. Dropped in silence in RESET, INIT (requests) and ERROR (IBA 10.3.1), and a
  /// response unless in RTS.
  void receive(const Packet& p, const void* payload);
  /// The local ACK timer expired (QpBackend::ack_timer).
  void ack_timeout();
  /// The RNR NAK timer ran out (QpBackend::rnr_timer).
  void rnr_timeout();
  /// The transport's counters: retransmitted packets, NAKs and timeouts that caused them, RNR NAKs
  /// received (the fault counters are the wire's, hca/wire_faults.h).
  const model::FaultStats& stats() const { return stats_; }
  /// UD datagrams dropped as responder: no receive WQE, or a Q_Key that does not match (IBA
  /// 9.8.3, 10.2.5).
  uint64_t datagrams_dropped() const { return ud_dropped_; }
  /// Packets of a message of `bytes` on this QP's path MTU (at least one).
  uint32_t packets_of(uint64_t bytes) const {
    return bytes == 0 ? 1 : static_cast<uint32_t>((bytes + attr_.path_mtu - 1) / attr_.path_mtu);
  }

 private:
  friend class Requester;
  friend class Responder;
  friend class Completer;
  /// A send WQE in the send queue: posted, not yet completed.
  struct SqEntry {
    SendWqe w;
    uint32_t first_psn = 0;
    uint32_t npkts = 0;  ///< PSNs taken (an RDMA READ: its response's packets)
    bool started = false;
    std::optional<sdp::WcStatus> local_error;
    uint32_t last_psn() const { return (first_psn + npkts - 1) & 0xFFFFFF; }
  };
  /// Writes a CQE; a refused one (the CQ overran) moves the QP to ERROR.
  void cqe(const Cqe& c, bool recv);
  /// The front WQE completes with `status` (a CQE when signaled or in error) and leaves the queue.
  void retire_front(sdp::WcStatus status);
  void enter_error(const std::string& why);
  void clear();
  /// The local ACK timer (RC): started when a request asking for an ACK leaves and it is not
  /// running, restarted on progress, stopped when nothing is outstanding (IBA 9.7.6.1.3).
  void timer_start() {
    if (!timer_on_) {
      timer_on_ = true;
      be_.ack_timer(true);
    }
  }
  void timer_restart() {
    timer_on_ = true;
    be_.ack_timer(true);
  }
  void timer_stop() {
    if (timer_on_) {
      timer_on_ = false;
      be_.ack_timer(false);
    }
  }

  QpType type_;
  uint32_t qpn_, pd_;
  uint32_t max_send_wr_, max_recv_wr_;
  DeviceLimits lim_;
  QpBackend& be_;
  QpAttr attr_;
  bool srq_ = false;
  std::string reason_;
  sdp::Fifo<SqEntry> sq_;
  sdp::Fifo<sdp::RecvWr> rq_;
  uint64_t next_seq_ = 0;
  bool timer_on_ = false;
  model::FaultStats stats_;
  uint64_t ud_dropped_ = 0;
  Requester req_;
  Responder resp_;
  Completer comp_;
};

}  // namespace hcasim::hca
