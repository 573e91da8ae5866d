#include "hca/completer.h"

#include <algorithm>

#include <fmt/format.h>

#include "hca/queue_pair.h"

namespace hcasim::hca {

void Completer::reset(uint32_t sq_psn, uint8_t retry_cnt, uint8_t rnr_retry) {
  una_ = sq_psn & kPsnMask;
  retries_ = RetryCounter(retry_cnt);
  rnr_ = RnrCounter(rnr_retry);
  retried_una_.reset();
  rnr_psn_ = 0;
}

void Completer::receive(const Packet& p, const void* payload) {
  QueuePair& q = qp_;
  if (q.sq_.empty() || !q.sq_.front().started) return;  // nothing outstanding: a stale response
  // A response is for a PSN in [una, the next PSN): an earlier one is a duplicate, a later one
  // answers nothing this QP sent.
  if (psn_before(p.psn, psn_prev(una_)) || !psn_before(p.psn, q.req_.next_psn())) return;
  switch (op_kind(p.op)) {
    case OpKind::Ack: break;
    case OpKind::ReadResponse: read_response(p, payload); return;
    case OpKind::AtomicAck: atomic_ack(p); return;
    default: return;
  }
  const AckKind kind = ack_kind(p.syndrome);
  if (kind == AckKind::Ack) {
    if (psn_before(p.psn, una_) && p.psn != psn_prev(una_)) return;
    if (!ack_through(p.psn)) retry_gap();
    return;
  }
  // A NAK of any kind acknowledges every PSN before its own (IBA 9.7.5.1.1).
  if (!psn_before(psn_prev(una_), p.psn)) return;  // at or before the last acknowledged: stale
  if (!ack_through(psn_prev(p.psn))) {
    retry_gap();
    return;
  }
  if (q.sq_.empty() || q.attr_.qp_state != QpState::Rts) return;
  switch (kind) {
    case AckKind::RnrNak:
      if (q.req_.rnr_wait()) return;  // a second RNR NAK of the packets sent before the first came
      ++q.stats_.rnr_naks;
      if (!rnr_.retry()) {
        fail_front(sdp::WcStatus::RnrRetryExcErr, fmt::format("receiver not ready after {} retries", rnr_.count()));
        return;
      }
      // The responder's RNR timer, from the NAK's code (IBA table 45); the ACK timer waits.
      q.req_.set_rnr_wait(true);
      rnr_psn_ = p.psn;
      q.timer_stop();
      q.be_.rnr_timer(rnr_timer_ns(rnr_code(p.syndrome)));
      return;
    case AckKind::NakPsnSeq:
      if (q.req_.rnr_wait()) return;
      retry_gap();
      return;
    default: {
      const sdp::WcStatus s = nak_status(kind);
      fail_front(s, fmt::format("the responder answered NAK ({})", sdp::wc_status_str(s)));
      return;
    }
  }
}

bool Completer::ack_through(uint32_t psn) {
  QueuePair& q = qp_;
  bool moved = false;
  while (!q.sq_.empty() && q.attr_.qp_state == QpState::Rts) {
    const QueuePair::SqEntry& e = q.sq_.front();
    if (!e.started) break;
    if (e.local_error) {
      check_front();
      return true;
    }
    if (psn_before(psn, e.last_psn())) break;
    // An RDMA READ or atomic whose data did not come, although the responder has executed what
    // came after it: its response was lost (rxe_comp.c: COMPST_ERROR_RETRY).
    if (e.w.rd_atomic()) return false;
    const uint32_t next = psn_add(e.last_psn(), 1);
    q.retire_front(sdp::WcStatus::Success);
    una_ = next;
    moved = true;
  }
  // Part of a message (a NAK's implicit ACK in its middle) is progress too.
  if (psn_before(psn_prev(una_), psn) && !q.sq_.empty() && q.sq_.front().started && !q.sq_.front().w.rd_atomic()) {
    una_ = psn_add(psn, 1);
    moved = true;
  }
  if (moved) progress();
  check_front();
  return true;
}

void Completer::progress() {
  QueuePair& q = qp_;
  retries_.progress();
  rnr_.progress();
  retried_una_.reset();
  if (psn_before(una_, q.req_.high_psn()))
    q.timer_restart();
  else
    q.timer_stop();
}

void Completer::retry(bool timeout) {
  QueuePair& q = qp_;
  if (q.sq_.empty() || q.attr_.qp_state != QpState::Rts) return;
  if (!retries_.retry()) {
    fail_front(sdp::WcStatus::RetryExcErr,
               fmt::format("transport retry counter exceeded: a {} after {} retries without an ACK (retry_cnt {}, "
                           "local ACK timeout {:.1f} us)",
                           timeout ? "timeout" : "NAK (PSN sequence error)", retries_.count() - 1,
                           q.attr_.retry_cnt, local_ack_timeout_ns(q.attr_.timeout) * 1e-3));
    return;
  }
  if (timeout)
    ++q.stats_.timeouts;
  else
    ++q.stats_.naks;
  q.timer_stop();
  q.req_.rewind(una_);
  q.be_.kick();
}

void Completer::retry_gap() {
  // One retry per gap: the responder NAKs a sequence error once, but every response already in
  // flight behind a lost one shows the same gap again.
  if (retried_una_ == una_) return;
  retried_una_ = una_;
  retry(false);
}

void Completer::ack_timeout() {
  QueuePair& q = qp_;
  if (q.req_.rnr_wait() || !psn_before(una_, q.req_.high_psn())) return;  // nothing outstanding
  retried_una_ = una_;
  retry(true);
}

void Completer::rnr_timeout() {
  QueuePair& q = qp_;
  if (!q.req_.rnr_wait()) return;
  q.req_.set_rnr_wait(false);
  q.req_.rewind(rnr_psn_);
  q.be_.kick();
}

void Completer::check_front() {
  QueuePair& q = qp_;
  // Local WQEs (memory window binds and invalidations) done at the front complete in order.
  while (!q.sq_.empty() && q.attr_.qp_state != QpState::Error && q.sq_.front().started &&
         !q.sq_.front().local_error && q.sq_.front().w.x.local())
    q.retire_front(sdp::WcStatus::Success);
  if (q.sq_.empty() || !q.sq_.front().local_error || q.attr_.qp_state == QpState::Error) return;
  const sdp::WcStatus s = *q.sq_.front().local_error;
  fail_front(s, s == sdp::WcStatus::LocProtErr   ? "local protection error in a gather list"
                : s == sdp::WcStatus::MwBindErr ? "memory window bind error: the bind or invalidation was refused"
                                                : "local length error: a message over the QP's maximum");
}

void Completer::read_response(const Packet& p, const void* payload) {
  QueuePair& q = qp_;
  // FIRST, LAST and ONLY carry an AETH: what came before the READ is acknowledged.
  if (op_has_aeth(p.op) && !ack_through(psn_prev(p.psn))) {
    retry_gap();
    return;
  }
  if (q.sq_.empty() || q.attr_.qp_state != QpState::Rts) return;
  const QueuePair::SqEntry& e = q.sq_.front();
  if (!e.started || e.local_error || !e.w.rd_atomic() || e.w.wr.atomic()) return;  // not for this WQE
  if (p.psn != una_) {
    // A later PSN: response packets went missing; the READ goes again from the first of them.
    if (psn_before(una_, p.psn)) retry_gap();
    return;  // an earlier one: a duplicate
  }
  const uint32_t mtu = q.attr_.path_mtu;
  const uint64_t off = static_cast<uint64_t>((p.psn - e.first_psn) & kPsnMask) * mtu;
  const uint64_t len = e.w.wr.length();
  if (off + p.payload_len > len || (op_ends(p.last_op) && off + p.payload_len != len)) {
    fail_front(sdp::WcStatus::RemInvReqErr, "an RDMA READ response of another length than the request");
    return;
  }
  if (!scatter(off, p.payload_len, payload)) {
    fail_front(sdp::WcStatus::LocProtErr, "local protection error in an RDMA READ's scatter list");
    return;
  }
  una_ = psn_add(p.psn, p.npkts);
  progress();
  if (op_ends(p.last_op)) {
    q.req_.rd_atomic_done();
    q.retire_front(sdp::WcStatus::Success);
    check_front();
    q.be_.kick();  // an RDMA READ or atomic held by max_rd_atomic may start
  }
}

void Completer::atomic_ack(const Packet& p) {
  QueuePair& q = qp_;
  if (!ack_through(psn_prev(p.psn))) {
    retry_gap();
    return;
  }
  if (q.sq_.empty() || q.attr_.qp_state != QpState::Rts) return;
  const QueuePair::SqEntry& e = q.sq_.front();
  if (!e.started || e.local_error || !e.w.wr.atomic() || e.first_psn != p.psn) return;
  // The original remote value lands in the WQE's 8-byte SGE, in host byte order.
  const sdp::Sge& g = e.w.wr.sg[0];
  if (q.be_.check_mr(g.lkey, q.pd_, g.addr, 8, sdp::kLocalWrite) != MrRefusal::None) {
    fail_front(sdp::WcStatus::LocProtErr, "local protection error in an atomic's SGE");
    return;
  }
  const uint64_t orig = p.orig;
  q.be_.store(g.addr, &orig, 8);
  una_ = psn_add(p.psn, 1);
  progress();
  q.req_.rd_atomic_done();
  q.retire_front(sdp::WcStatus::Success);
  check_front();
  q.be_.kick();
}

bool Completer::scatter(uint64_t off, uint64_t len, const void* payload) {
  QueuePair& q = qp_;
  const sdp::SendWr& wr = q.sq_.front().w.wr;
  // Check every piece first, so that a refused SGE leaves all of them unwritten.
  for (int pass = 0; pass < 2; ++pass) {
    uint64_t pos = 0, done = 0;
    for (uint8_t i = 0; i < wr.num_sge && done < len; ++i) {
      const sdp::Sge& g = wr.sg[i];
      const uint64_t end = pos + g.length;
      if (end > off + done) {
        const uint64_t in = off + done - pos;
        const uint64_t n = std::min<uint64_t>(g.length - in, len - done);
        if (pass == 0) {
          if (q.be_.check_mr(g.lkey, q.pd_, g.addr + in, n, sdp::kLocalWrite) != MrRefusal::None) return false;
        } else {
          q.be_.write(g.addr + in, n, payload, done);
        }
        done += n;
      }
      pos = end;
    }
  }
  return true;
}

void Completer::fail_front(sdp::WcStatus status, const std::string& why) {
  QueuePair& q = qp_;
  if (q.sq_.empty()) return;
  if (q.sq_.front().w.rd_atomic() && q.sq_.front().started && !q.sq_.front().local_error) q.req_.rd_atomic_done();
  q.retire_front(status);
  q.enter_error(why);
}

}  // namespace hcasim::hca
