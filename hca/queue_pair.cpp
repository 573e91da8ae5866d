#include "hca/queue_pair.h"

#include <fmt/format.h>

namespace hcasim::hca {

QueuePair::QueuePair(QpType type, uint32_t qpn, uint32_t pd, uint32_t max_send_wr, uint32_t max_recv_wr,
                     const DeviceLimits& lim, QpBackend& backend)
    : type_(type),
      qpn_(qpn),
      pd_(pd),
      max_send_wr_(max_send_wr),
      max_recv_wr_(max_recv_wr),
      lim_(lim),
      be_(backend),
      req_(*this),
      resp_(*this),
      comp_(*this) {}

PostCheck QueuePair::post_send(const SendWqe& w) {
  const SendLimits lim{max_send_wr_, lim_.max_inline_data};
  const PostCheck c = check_post_send(type_, attr_.qp_state, static_cast<uint32_t>(sq_.size()), lim, w);
  if (c.post == Post::Refuse) [[unlikely]]
    return c;
  if (c.post == Post::Flush) [[unlikely]] {
    cqe(send_cqe(w, sdp::WcStatus::WrFlushErr, qpn_), false);
    return c;
  }
  SqEntry e;
  e.w = w;
  e.w.seq = next_seq_++;
  sq_.push_back(e);
  be_.kick();
  return c;
}

PostCheck QueuePair::post_recv(const sdp::RecvWr& wr) {
  if (srq_) [[unlikely]]
    return {Post::Refuse, PostError::SrqAttached};
  const PostCheck c = check_post_recv(attr_.qp_state, rq_.size(), max_recv_wr_, wr);
  if (c.post == Post::Refuse) [[unlikely]]
    return c;
  if (c.post == Post::Flush) [[unlikely]] {
    Cqe f;
    f.wc = recv_error_wc(wr, sdp::WcStatus::WrFlushErr, qpn_);
    cqe(f, true);
    return c;
  }
  rq_.push_back(wr);
  return c;
}

int QueuePair::modify(const QpAttr& a, unsigned mask) {
  using namespace attr;
  const QpState cur = attr_.qp_state;
  if ((mask & kCurState) != 0 && a.cur_qp_state != cur) return EINVAL;
  const QpState next = (mask & kState) != 0 ? a.qp_state : cur;
  const ModifyRule r = modify_rule(type_, cur, next);
  const unsigned given = mask & ~(kState | kCurState);
  if (!r.valid || (given & r.required) != r.required || (given & ~(r.required | r.optional)) != 0) return EINVAL;
  if (const int e = check_attr(a, given, lim_); e != 0) return e;
  if (next == QpState::Reset) {
    clear();
    attr_ = QpAttr{};
    return 0;
  }
  if (next == QpState::Error) {
    enter_error("moved to the error state by modify_qp");
    return 0;
  }
  if ((given & kAccessFlags) != 0) attr_.qp_access_flags = a.qp_access_flags;
  if ((given & kPkeyIndex) != 0) attr_.pkey_index = a.pkey_index;
  if ((given & kPort) != 0) attr_.port_num = a.port_num;
  if ((given & kQkey) != 0) attr_.qkey = a.qkey;
  if ((given & kAv) != 0) attr_.dlid = a.dlid;
  if ((given & kPathMtu) != 0) attr_.path_mtu = a.path_mtu;
  if ((given & kTimeout) != 0) attr_.timeout = a.timeout;
  if ((given & kRetryCnt) != 0) attr_.retry_cnt = a.retry_cnt;
  if ((given & kRnrRetry) != 0) attr_.rnr_retry = a.rnr_retry;
  if ((given & kRqPsn) != 0) attr_.rq_psn = a.rq_psn & kPsnMask;
  if ((given & kSqPsn) != 0) attr_.sq_psn = a.sq_psn & kPsnMask;
  if ((given & kMaxQpRdAtomic) != 0) attr_.max_rd_atomic = a.max_rd_atomic;
  if ((given & kMaxDestRdAtomic) != 0) attr_.max_dest_rd_atomic = a.max_dest_rd_atomic;
  if ((given & kMinRnrTimer) != 0) attr_.min_rnr_timer = a.min_rnr_timer;
  if ((given & kDestQpn) != 0) attr_.dest_qp_num = a.dest_qp_num;
  if (cur == QpState::Init && next == QpState::Rtr) resp_.reset(attr_.rq_psn);
  if (cur == QpState::Rtr && next == QpState::Rts) {
    req_.reset(attr_.sq_psn);
    comp_.reset(attr_.sq_psn, attr_.retry_cnt, attr_.rnr_retry);
  }
  attr_.qp_state = attr_.cur_qp_state = next;
  if (next == QpState::Rts) be_.kick();  // WQEs posted before RTS were refused; a backend may wait
  return 0;
}

int QueuePair::modify_state(QpState next) {
  const ModifyRule r = modify_rule(type_, attr_.qp_state, next);
  if (!r.valid) return EINVAL;
  QpAttr a = attr_;
  a.qp_state = next;
  if ((r.required & attr::kAv) != 0 && a.dlid == 0) a.dlid = 1;  // a peer without a LID of its own
  return modify(a, attr::kState | r.required);
}

void QueuePair::set_retry(uint8_t timeout, uint8_t retry_cnt) {
  if (timeout > 31 || retry_cnt > 7)
    throw sdp::VerbsError(fmt::format("modify_qp: timeout {} / retry_cnt {} out of range", timeout, retry_cnt));
  attr_.timeout = timeout;
  attr_.retry_cnt = retry_cnt;
  comp_.set_retry_cnt(retry_cnt);
}

void QueuePair::to_error(const std::string& why, std::optional<sdp::WcStatus> first, bool unsent_front) {
  if (attr_.qp_state == QpState::Error) return;
  if (first && !sq_.empty() && (sq_.front().started || unsent_front) && !sq_.front().local_error) {
    if (sq_.front().w.rd_atomic()) req_.rd_atomic_done();
    retire_front(*first);
  }
  enter_error(why);
}

void QueuePair::receive(const Packet& p, const void* payload) {
  const QpState s = attr_.qp_state;
  // An XRC packet reaches XRC QPs only, an RC packet RC QPs only (IBA 9.6.1.2: the BTH's
  // transport must be the QP's).
  if (p.xrc != is_xrc(type_)) return;
  if (is_request(p.op)) {
    // RESET, INIT and ERROR: the packet is dropped in silence (IBA 10.3.1: a QP receives from RTR on).
    if (s == QpState::Rtr || s == QpState::Rts) resp_.receive(p, payload);
  } else if (s == QpState::Rts && reliable_connected(type_)) {
    comp_.receive(p, payload);
  }
}

void QueuePair::ack_timeout() {
  timer_on_ = false;
  if (attr_.qp_state == QpState::Rts && reliable_connected(type_)) comp_.ack_timeout();
}

void QueuePair::rnr_timeout() {
  if (attr_.qp_state == QpState::Rts && reliable_connected(type_)) comp_.rnr_timeout();
}

void QueuePair::cqe(const Cqe& c, bool recv) {
  if (!be_.complete(c, recv)) [[unlikely]]
    enter_error("CQ overrun");
}

void QueuePair::retire_front(sdp::WcStatus status) {
  const SendWqe w = sq_.front().w;
  sq_.pop_front();
  req_.retired_front();
  if (w.wr.signaled || status != sdp::WcStatus::Success) cqe(send_cqe(w, status, qpn_), false);
}

void QueuePair::enter_error(const std::string& why) {
  if (attr_.qp_state == QpState::Error) return;
  attr_.qp_state = attr_.cur_qp_state = QpState::Error;
  reason_ = why;
  timer_stop();
  req_.set_rnr_wait(false);
  const std::optional<sdp::RecvWr> in_progress = resp_.on_error();
  // Every WR not completed completes with WR_FLUSH_ERR, the send queue's in order, then the
  // receive queue's (the one the responder was filling first); an overrun CQ takes none.
  while (!sq_.empty()) retire_front(sdp::WcStatus::WrFlushErr);
  if (in_progress) {
    Cqe f;
    f.wc = recv_error_wc(*in_progress, sdp::WcStatus::WrFlushErr, qpn_);
    cqe(f, true);
  }
  while (!rq_.empty()) {
    Cqe f;
    f.wc = recv_error_wc(rq_.front(), sdp::WcStatus::WrFlushErr, qpn_);
    rq_.pop_front();
    cqe(f, true);
  }
  be_.on_error(why);
}

void QueuePair::clear() {
  sq_.clear();
  rq_.clear();
  timer_stop();
  req_.reset(0);
  resp_.reset(0);
  comp_.reset(0, 7, 7);
  reason_.clear();
}

}  // namespace hcasim::hca
