#include "hca/responder.h"

#include <algorithm>

#include <fmt/format.h>

#include "hca/queue_pair.h"
#include "hca/rc.h"

namespace hcasim::hca {

namespace {

/// The room of a receive WQE's SGEs, bytes.
uint64_t capacity(const sdp::RecvWr& w) {
  uint64_t n = 0;
  for (uint8_t i = 0; i < w.num_sge; ++i) n += w.sg[i].length;
  return n;
}

/// Calls f(addr, n, done) for each piece of message bytes [off, off + len) in the SGE list
/// (`done`: bytes of the range before the piece); false when the SGEs end first.
template <class F>
bool for_each_piece(const std::array<sdp::Sge, sdp::kMaxSge>& sg, uint8_t nsge, uint64_t off, uint64_t len, F f) {
  uint64_t pos = 0, done = 0;
  for (uint8_t i = 0; i < nsge && done < len; ++i) {
    const uint64_t end = pos + sg[i].length;
    if (end > off + done) {
      const uint64_t in = off + done - pos;
      const uint64_t n = std::min<uint64_t>(sg[i].length - in, len - done);
      if (!f(sg[i].addr + in, n, done)) return false;
      done += n;
    }
    pos = end;
  }
  return done == len;
}

}  // namespace

void Responder::reset(uint32_t rq_psn) {
  epsn_ = rq_psn & kPsnMask;
  nak_sent_ = false;
  msn_ = 0;
  in_msg_ = false;
  rwqe_.reset();
  msg_off_ = 0;
  drop_msg_ = false;
  res_.clear();
  out_.clear();
}

void Responder::receive(const Packet& in, const void* payload) {
  QueuePair& q = qp_;
  if (q.type_ == QpType::Ud) {
    execute_ud(in, payload);
    return;
  }
  // An opcode of another transport than the QP's is dropped (IBA 9.6.1: the BTH's opcode checks;
  // an XRC packet is its RC opcode with Packet::xrc, which QueuePair::receive matched already).
  if (op_transport(in.op) != (q.type_ == QpType::Uc ? 1 : 0)) return;
  if (q.type_ == QpType::XrcRecv && !xrc_select(in)) return;
  if (reliable_connected(q.type_) && in.psn == epsn_) {  // check_psn's in-order case: nothing to trim
    nak_sent_ = false;
    execute(in, payload, 0);
    return;
  }
  Packet p = in;
  uint64_t poff = 0;
  if (reliable_connected(q.type_)) {
    if (!check_psn(p, poff)) return;
  } else if (drop_msg_ || p.psn != epsn_) {
    // UC: a PSN out of order means lost packets: the message in progress is dropped, and so is
    // every packet up to the start of a new message (IBA 9.8.2; rxe_resp.c check_psn).
    drop_message();
    drop_msg_ = !op_starts(p.op);
    if (drop_msg_) return;
  }
  execute(p, payload, poff);
}

bool Responder::check_psn(Packet& p, uint64_t& poff) {
  if (p.psn == epsn_) {
    nak_sent_ = false;
    return true;
  }
  if (psn_before(p.psn, epsn_)) {
    const uint32_t d = (epsn_ - p.psn) & kPsnMask;
    const OpKind k = op_kind(p.op);
    if (d < p.npkts && (k == OpKind::Send || k == OpKind::Write)) {
      // A train that reaches the expected PSN: its first d packets are duplicates, ACKed again;
      // the rest is new.
      duplicate(p);
      const uint32_t mtu = qp_.attr_.path_mtu;
      p.op = d + 1 == p.npkts ? p.last_op
                              : data_opcode(op_transport(p.op), k, false, false, false);
      p.psn = epsn_;
      p.npkts -= d;
      poff = static_cast<uint64_t>(d) * mtu;
      p.msg_offset += poff;
      p.payload_len -= static_cast<uint32_t>(poff);
      p.va = 0;
      p.rkey = 0;
      p.dma_len = 0;
      nak_sent_ = false;
      return true;
    }
    duplicate(p);
    return false;
  }
  // A PSN beyond the expected one: packets went missing. One NAK PSN sequence error with the
  // expected PSN, then silence until it comes (IBA 9.7.5.1.1, class B).
  if (!nak_sent_) {
    nak_sent_ = true;
    ack(epsn_, aeth::kNakPsnSeq);
  }
  return false;
}

uint32_t Responder::mem_pd() const { return qp_.type_ == QpType::XrcRecv ? xrc_pd_ : qp_.pd_; }

bool Responder::xrc_select(const Packet& p) {
  QueuePair& q = qp_;
  const XrcSrqRefusal r = q.be_.xrc_srq(p.xrc_srqn, xrc_pd_);
  if (r == XrcSrqRefusal::None) return true;
  // Only a request in sequence is refused with a NAK; a duplicate or one beyond a gap naming a
  // bad XRC SRQ is dropped (its PSN is checked first, IBA 9.7.5.1).
  if (p.psn != epsn_) return false;
  fatal(p.psn, aeth::kNakInvReq, sdp::WcStatus::RemInvReqErr,
        fmt::format("{}: XRCETH names XRC SRQ {:#x}, {}", opcode_name(p.op), p.xrc_srqn,
                    r == XrcSrqRefusal::OtherXrcd ? "an SRQ of another XRC domain" : "no XRC SRQ"));
  return false;
}

void Responder::duplicate(const Packet& p) {
  QueuePair& q = qp_;
  switch (op_kind(p.op)) {
    case OpKind::Send:
    case OpKind::Write:
      // Acknowledged again, not executed again (IBA 9.7.5.1.2, C9-105).
      ack(psn_prev(epsn_), aeth::kAck);
      return;
    case OpKind::ReadRequest: {
      // Executed again, for the part of the original it asks (reads are idempotent); a request
      // no resource remembers is dropped (class D).
      const Resource* r = find_resource(p.psn);
      if (r == nullptr || !r->read || p.rkey != r->rkey || p.va < r->va || p.dma_len > r->len ||
          p.va - r->va > r->len - p.dma_len)
        return;
      const uint32_t npk = q.packets_of(p.dma_len);
      q.stats_.retransmitted += npk;  // the responder's packets sent again
      queue_read_response(p, npk, r->pd);
      q.be_.kick();
      return;
    }
    case OpKind::CompareSwap:
    case OpKind::FetchAdd: {
      // Answered with the saved result, not executed again (IBA 9.4.5).
      const Resource* r = find_resource(p.psn);
      if (r == nullptr || r->read || r->first_psn != p.psn) return;
      Response x;
      x.kind = Response::Kind::AtomicAck;
      x.psn = p.psn;
      x.syndrome = aeth::kAck;
      x.msn = msn_;
      x.orig = r->orig;
      ++q.stats_.retransmitted;
      out_.push_back(x);
      q.be_.kick();
      return;
    }
    default: return;
  }
}

void Responder::execute(const Packet& p, const void* payload, uint64_t poff) {
  QueuePair& q = qp_;
  const OpKind k = op_kind(p.op);
  const bool uc = q.type_ == QpType::Uc;
  // The opcode's place: a message in progress takes its own MIDDLE and LAST only, a new one
  // begins with FIRST or ONLY (IBA 9.7.5.1.3 opcode sequence check).
  if (in_msg_ ? (op_starts(p.op) || k != msg_kind_) : !op_starts(p.op)) {
    if (uc) {
      const bool restart = in_msg_ && op_starts(p.op);
      drop_message();
      drop_msg_ = !restart;
      if (!restart) return;
    } else {
      fatal(p.psn, aeth::kNakInvReq, sdp::WcStatus::RemInvReqErr,
            fmt::format("{} where {} was expected", opcode_name(p.op),
                        in_msg_ ? "the rest of a message" : "the start of a message"));
      return;
    }
  }
  // The QP's access flags (ibv_modify_qp's qp_access_flags): a request they do not allow is an
  // invalid request (IBA 9.7.5.2.4; rxe_resp.c check_op_valid), dropped on UC.
  const unsigned acc = q.attr_.qp_access_flags;
  const bool denied = (k == OpKind::Write && op_starts(p.op) && (acc & sdp::kRemoteWrite) == 0) ||
                      (k == OpKind::ReadRequest && (acc & sdp::kRemoteRead) == 0) ||
                      ((k == OpKind::CompareSwap || k == OpKind::FetchAdd) && (acc & kRemoteAtomic) == 0);
  if (denied) [[unlikely]] {
    if (uc) {
      drop_message();
      drop_msg_ = true;
      return;
    }
    fatal(p.psn, aeth::kNakInvReq, sdp::WcStatus::RemInvReqErr,
          fmt::format("{}: the QP's access flags do not allow it", opcode_name(p.op)));
    return;
  }
  // Resources: a SEND and a WRITE with immediate take a receive WQE (RC without one: RNR NAK,
  // class B, nothing of the packet executed; UC: the message is dropped).
  const bool takes_recv = (k == OpKind::Send && op_starts(p.op)) ||
                          (k == OpKind::Write && op_has_imm(p.last_op) && op_ends(p.last_op));
  if (takes_recv && !take_recv()) {
    if (uc) {
      drop_message();
      drop_msg_ = !op_ends(p.last_op);
      return;
    }
    ack(p.psn, static_cast<uint8_t>(aeth::kRnrNak | (q.attr_.min_rnr_timer & 0x1F)));
    nak_sent_ = true;  // what follows is discarded until the requester goes back to it
    return;
  }
  if ((k == OpKind::ReadRequest || k == OpKind::CompareSwap || k == OpKind::FetchAdd) &&
      q.attr_.max_dest_rd_atomic == 0) [[unlikely]] {
    fatal(p.psn, aeth::kNakInvReq, sdp::WcStatus::RemInvReqErr,
          fmt::format("{} to a QP with max_dest_rd_atomic 0", opcode_name(p.op)));
    return;
  }
  // Lengths: every packet but a message's last carries one whole MTU; a LAST 1 .. MTU bytes, an
  // ONLY 0 .. MTU (IBA 9.7.5.1.3's length checks; rxe_resp.c check_length).
  if (op_has_payload(p.op)) {
    const uint64_t mtu = q.attr_.path_mtu;
    const uint64_t full = static_cast<uint64_t>(p.npkts - 1) * mtu;
    const bool ok = op_ends(p.last_op)
                        ? p.payload_len >= full + (p.npkts == 1 && op_starts(p.op) ? 0 : 1) && p.payload_len <= full + mtu
                        : p.payload_len == full + mtu;
    if (!ok) [[unlikely]] {
      if (uc) {
        drop_message();
        drop_msg_ = !op_ends(p.last_op);
        return;
      }
      fatal(p.psn, aeth::kNakInvReq, sdp::WcStatus::RemInvReqErr,
            fmt::format("{} with {} B in {} packets of an MTU of {} B", opcode_name(p.op), p.payload_len, p.npkts, mtu));
      return;
    }
  }
  switch (k) {
    case OpKind::Send: execute_send(p, payload, poff); break;
    case OpKind::Write: execute_write(p, payload, poff); break;
    case OpKind::ReadRequest: execute_read(p); break;
    case OpKind::CompareSwap:
    case OpKind::FetchAdd: execute_atomic(p); break;
    default: break;
  }
}

void Responder::execute_send(const Packet& p, const void* payload, uint64_t poff) {
  QueuePair& q = qp_;
  if (op_starts(p.op)) {
    in_msg_ = true;
    msg_kind_ = OpKind::Send;
    msg_off_ = 0;
  }
  const uint64_t cap = capacity(*rwqe_);
  if (msg_off_ + p.payload_len > cap) [[unlikely]] {
    // Longer than the receive's buffers: the receive completes with a local length error and the
    // requester's with a remote invalid request error (IBA 9.7.5.2.4; class C). UC drops it.
    if (q.type_ == QpType::Uc) {
      drop_message();
      drop_msg_ = !op_ends(p.last_op);
      return;
    }
    fatal(p.psn, aeth::kNakInvReq, sdp::WcStatus::LocLenErr,
          fmt::format("a SEND of more than the {} B of its receive", cap));
    return;
  }
  if (!scatter(p, payload, poff)) [[unlikely]] {
    // The receive WQE's own SGE is bad: the responder's local error, NAK remote operational error
    // (class A: on UC too the QP goes to ERROR).
    fatal(p.psn, aeth::kNakRemOp, sdp::WcStatus::LocProtErr, "local protection error in a receive's scatter list");
    return;
  }
  msg_off_ += p.payload_len;
  if (op_has_ieth(p.last_op)) [[unlikely]] {
    // SEND with Invalidate: once the message is in, the type 2 window its IETH names is
    // invalidated, before the receive completes (IBA 9.4.1.3, 10.6.7.2.4; rxe_resp.c
    // do_complete). An R_Key that names no type 2 window bound through this QP in its PD fails the
    // receive with REM_INV_REQ_ERR and takes the QP to ERROR (rxe_resp.c
    // RESPST_ERR_INVALIDATE_RKEY, "RC - Class J"); the requester is told with NAK Invalid Request
    // (REM_INV_REQ_ERR, IBA 9.7.5.2.4), the class C answer, rather than left to its retries.
    const MrRefusal r = q.be_.remote_invalidate(p.ieth_rkey, q.qpn_, mem_pd());
    if (r != MrRefusal::None) {
      fatal(psn_add(p.psn, p.npkts - 1), aeth::kNakInvReq, sdp::WcStatus::RemInvReqErr,
            fmt::format("SEND with Invalidate of R_Key {:#x}: {}", p.ieth_rkey, mr_refusal_str(r)));
      return;
    }
  }
  epsn_ = psn_add(p.psn, p.npkts);
  if (op_ends(p.last_op)) {
    in_msg_ = false;
    msn_ = psn_add(msn_, 1);
    complete_recv(sdp::WcStatus::Success, static_cast<uint32_t>(msg_off_), &p);
  }
  if (p.ack_req) ack(psn_add(p.psn, p.npkts - 1), aeth::kAck);
}

void Responder::execute_write(const Packet& p, const void* payload, uint64_t poff) {
  QueuePair& q = qp_;
  if (op_starts(p.op)) {
    in_msg_ = true;
    msg_kind_ = OpKind::Write;
    msg_off_ = 0;
    wva_ = p.va;
    wrkey_ = p.rkey;
    wlen_ = p.dma_len;
  }
  // The first packet's key covers the whole RETH range (a zero-length WRITE needs no key:
  // rxe_resp.c check_rkey). Each later packet is translated through the MR again, as an HCA
  // looks up the MPT per packet: an MR deregistered mid-message refuses the rest of it, and the
  // memory is not touched once ibv_dereg_mr has returned.
  const MrRefusal r = op_starts(p.op) ? (wlen_ == 0 ? MrRefusal::None : q.be_.check_mr(wrkey_, mem_pd(), wva_, wlen_, sdp::kRemoteWrite))
                      : p.payload_len == 0 || msg_off_ + p.payload_len > wlen_
                          ? MrRefusal::None
                          : q.be_.check_mr(wrkey_, mem_pd(), wva_ + msg_off_, p.payload_len, sdp::kRemoteWrite);
  if (r != MrRefusal::None) [[unlikely]] {
    if (q.type_ == QpType::Uc) {
      drop_message();
      drop_msg_ = !op_ends(p.last_op);
      return;
    }
    // Remote access error: nothing (more) written, NAK, and the responder's QP goes to ERROR (class C).
    fatal(p.psn, aeth::kNakRemAccess, sdp::WcStatus::RemAccessErr,
          fmt::format("RDMA WRITE to [{:#x}, +{}) with rkey {:#x}: remote access violation: {}", wva_, wlen_, wrkey_,
                      mr_refusal_str(r)));
    return;
  }
  if (msg_off_ + p.payload_len > wlen_ || (op_ends(p.last_op) && msg_off_ + p.payload_len != wlen_)) [[unlikely]] {
    if (q.type_ == QpType::Uc) {
      drop_message();
      drop_msg_ = !op_ends(p.last_op);
      return;
    }
    fatal(p.psn, aeth::kNakInvReq, sdp::WcStatus::RemInvReqErr,
          fmt::format("an RDMA WRITE of another length than its RETH's {} B", wlen_));
    return;
  }
  if (p.payload_len > 0) q.be_.write(wva_ + msg_off_, p.payload_len, payload, poff);
  msg_off_ += p.payload_len;
  epsn_ = psn_add(p.psn, p.npkts);
  if (op_ends(p.last_op)) {
    in_msg_ = false;
    msn_ = psn_add(msn_, 1);
    if (op_has_imm(p.last_op)) complete_recv(sdp::WcStatus::Success, static_cast<uint32_t>(wlen_), &p);
  }
  if (p.ack_req) ack(psn_add(p.psn, p.npkts - 1), aeth::kAck);
}

void Responder::execute_read(const Packet& p) {
  QueuePair& q = qp_;
  const MrRefusal r = p.dma_len == 0 ? MrRefusal::None : q.be_.check_mr(p.rkey, mem_pd(), p.va, p.dma_len, sdp::kRemoteRead);
  if (r != MrRefusal::None) [[unlikely]] {
    fatal(p.psn, aeth::kNakRemAccess, sdp::WcStatus::RemAccessErr,
          fmt::format("RDMA READ of [{:#x}, +{}) with rkey {:#x}: remote access violation: {}", p.va, p.dma_len,
                      p.rkey, mr_refusal_str(r)));
    return;
  }
  const uint32_t npk = q.packets_of(p.dma_len);
  add_resource({true, p.psn, psn_add(p.psn, npk - 1), p.va, p.rkey, p.dma_len, 0, mem_pd()});
  msn_ = psn_add(msn_, 1);
  queue_read_response(p, npk, mem_pd());
  epsn_ = psn_add(p.psn, npk);
  q.be_.kick();
}

void Responder::queue_read_response(const Packet& p, uint32_t npkts, uint32_t pd) {
  Response x;
  x.pd = pd;
  x.kind = Response::Kind::Read;
  x.psn = p.psn;
  x.syndrome = aeth::kAck;
  x.msn = msn_;
  x.va = p.va;
  x.rkey = p.rkey;
  x.len = p.dma_len;
  x.npkts = npkts;
  out_.push_back(x);
}

void Responder::execute_atomic(const Packet& p) {
  QueuePair& q = qp_;
  if (p.va % 8 != 0) [[unlikely]] {
    fatal(p.psn, aeth::kNakInvReq, sdp::WcStatus::RemInvReqErr,
          fmt::format("an atomic at {:#x}: not 8-byte aligned", p.va));
    return;
  }
  const MrRefusal r = q.be_.check_mr(p.rkey, mem_pd(), p.va, 8, kRemoteAtomic);
  if (r != MrRefusal::None) [[unlikely]] {
    fatal(p.psn, aeth::kNakRemAccess, sdp::WcStatus::RemAccessErr,
          fmt::format("an atomic at {:#x} with rkey {:#x}: remote access violation: {}", p.va, p.rkey,
                      mr_refusal_str(r)));
    return;
  }
  const uint64_t orig = q.be_.atomic(p.va, p.op == Opcode::RcCompareSwap, p.compare, p.swap);
  add_resource({false, p.psn, p.psn, p.va, p.rkey, 8, orig, mem_pd()});
  msn_ = psn_add(msn_, 1);
  Response x;
  x.kind = Response::Kind::AtomicAck;
  x.psn = p.psn;
  x.syndrome = aeth::kAck;
  x.msn = msn_;
  x.orig = orig;
  out_.push_back(x);
  epsn_ = psn_add(p.psn, 1);
  q.be_.kick();
}

void Responder::execute_ud(const Packet& p, const void* payload) {
  QueuePair& q = qp_;
  if (op_transport(p.op) != 3) return;
  // A Q_Key that does not match is dropped (IBA 10.2.5: a Q_Key violation), and so is a
  // datagram without a receive WQE (IBA 9.8.3).
  if (p.qkey != q.attr_.qkey || !take_recv()) {
    ++q.ud_dropped_;
    return;
  }
  // A receive WQE that cannot take the datagram completes in error, and an error of the receive
  // queue takes the QP to ERROR (IBA 1.3 10.3.1: SQE is for send-queue errors of UC and UD
  // only), its other receive WQEs flushed; UD sends no NAK (fatal's ack is RC's only).
  const uint64_t need = kGrhBytes + static_cast<uint64_t>(p.payload_len);
  if (need > capacity(*rwqe_)) {
    fatal(p.psn, aeth::kNakInvReq, sdp::WcStatus::LocLenErr,
          fmt::format("a UD datagram of {} B and {} B of GRH room for a receive of {} B", p.payload_len, kGrhBytes,
                      capacity(*rwqe_)));
    return;
  }
  const sdp::RecvWr& w = *rwqe_;
  // Each SGE the datagram reaches is checked first (its key, local write, the QP's PD).
  uint64_t pos = 0;
  for (uint8_t i = 0; i < w.num_sge; ++i) {
    const uint64_t take = std::min<uint64_t>(w.sg[i].length, need > pos ? need - pos : 0);
    if (take > 0 && q.be_.check_mr(w.sg[i].lkey, mem_pd(), w.sg[i].addr, take, sdp::kLocalWrite) != MrRefusal::None) {
      fatal(p.psn, aeth::kNakRemOp, sdp::WcStatus::LocProtErr, "local protection error in a UD receive's scatter list");
      return;
    }
    pos += w.sg[i].length;
  }
  static constexpr std::array<uint8_t, kGrhBytes> kZeros{};
  const uint8_t* grh = p.grh != nullptr ? p.grh : kZeros.data();
  for_each_piece(w.sg, w.num_sge, 0, kGrhBytes, [&](sdp::Addr a, uint64_t n, uint64_t done) {
    q.be_.store(a, grh + done, n);
    return true;
  });
  if (p.payload_len > 0)
    for_each_piece(w.sg, w.num_sge, kGrhBytes, p.payload_len, [&](sdp::Addr a, uint64_t n, uint64_t done) {
      q.be_.write(a, n, payload, done);
      return true;
    });
  complete_recv(sdp::WcStatus::Success, static_cast<uint32_t>(need), &p);
}

bool Responder::take_recv() {
  QueuePair& q = qp_;
  if (q.srq_) {
    sdp::RecvWr w;
    if (!q.be_.take_srq_recv(w)) return false;
    rwqe_ = w;
    return true;
  }
  if (q.rq_.empty()) return false;
  rwqe_ = q.rq_.front();
  q.rq_.pop_front();
  return true;
}

bool Responder::scatter(const Packet& p, const void* payload, uint64_t poff) {
  QueuePair& q = qp_;
  const sdp::RecvWr& w = *rwqe_;
  if (p.payload_len == 0) return true;
  // Every piece is checked first (its SGE's key, local write, the QP's PD), so that a bad SGE
  // leaves the buffers unwritten; then the bytes are written.
  uint64_t pos = 0;
  const uint64_t lo = msg_off_, hi = msg_off_ + p.payload_len;
  for (uint8_t i = 0; i < w.num_sge; ++i) {
    const uint64_t end = pos + w.sg[i].length;
    if (end > lo && pos < hi) {
      const uint64_t a = std::max(pos, lo), b = std::min(end, hi);
      if (q.be_.check_mr(w.sg[i].lkey, mem_pd(), w.sg[i].addr + (a - pos), b - a, sdp::kLocalWrite) != MrRefusal::None)
        return false;
    }
    pos = end;
  }
  for_each_piece(w.sg, w.num_sge, msg_off_, p.payload_len, [&](sdp::Addr a, uint64_t n, uint64_t done) {
    q.be_.write(a, n, payload, poff + done);
    return true;
  });
  return true;
}

void Responder::ack(uint32_t psn, uint8_t syndrome) {
  QueuePair& q = qp_;
  if (!reliable_connected(q.type_)) return;  // UC and UD: no acknowledgements (IBA 9.8.2)
  if (ack_kind(syndrome) == AckKind::Ack && !out_.empty() && out_.back().kind == Response::Kind::Ack &&
      ack_kind(out_.back().syndrome) == AckKind::Ack) {
    out_.back().psn = psn;  // an ACK not yet sent is covered by this one (ACKs are cumulative)
    out_.back().msn = msn_;
  } else {
    Response x;
    x.psn = psn;
    x.syndrome = syndrome;
    x.msn = msn_;
    out_.push_back(x);
  }
  q.be_.kick();
}

void Responder::fatal(uint32_t psn, uint8_t syndrome, sdp::WcStatus recv_status, const std::string& why) {
  ack(psn, syndrome);
  if (rwqe_) complete_recv(recv_status, 0, nullptr);
  in_msg_ = false;
  qp_.enter_error(why);
}

void Responder::drop_message() {
  QueuePair& q = qp_;
  if (rwqe_) {
    // The receive WQE of a dropped UC message is used again for the next message (rxe_resp.c
    // class D1); an SRQ's completes in error (class E).
    if (!q.srq_)
      q.rq_.push_front(*rwqe_);
    else
      complete_recv(sdp::WcStatus::RemInvReqErr, 0, nullptr);
    rwqe_.reset();
  }
  in_msg_ = false;
}

void Responder::complete_recv(sdp::WcStatus status, uint32_t byte_len, const Packet* p) {
  QueuePair& q = qp_;
  Cqe c;
  c.wc = {rwqe_->wr_id, status, sdp::WcOpcode::Recv, status == sdp::WcStatus::Success ? byte_len : 0, q.qpn_};
  c.src_qp = q.type_ == QpType::Ud && p != nullptr ? p->src_qpn : q.attr_.dest_qp_num;
  if (p != nullptr && status == sdp::WcStatus::Success) {
    c.slid = p->slid;
    c.grh = q.type_ == QpType::Ud && p->grh != nullptr;
    if (op_has_imm(p->last_op)) {
      c.with_imm = true;
      c.imm = p->imm;
    }
    if (op_has_ieth(p->last_op)) {
      c.with_inv = true;
      c.imm = p->ieth_rkey;
    }
    if (op_kind(p->op) == OpKind::Write) c.kind = Cqe::Kind::RecvRdmaWithImm;
  }
  rwqe_.reset();
  q.cqe(c, true);
}

bool Responder::next_response(uint32_t max_pkts, Packet& out) {
  QueuePair& q = qp_;
  while (!out_.empty()) {
    Response& r = out_.front();
    out = Packet{};
    out.dest_qpn = q.attr_.dest_qp_num;
    out.src_qpn = q.qpn_;
    out.xrc = q.type_ == QpType::XrcRecv;  // an XRC target answers with XRC opcodes, no XRCETH
    out.syndrome = r.syndrome;
    out.msn = r.msn;
    out.psn = r.psn;
    if (r.kind == Response::Kind::Ack) {
      out.op = out.last_op = Opcode::RcAcknowledge;
      out_.pop_front();
      return true;
    }
    if (r.kind == Response::Kind::AtomicAck) {
      out.op = out.last_op = Opcode::RcAtomicAcknowledge;
      out.orig = r.orig;
      out_.pop_front();
      return true;
    }
    // An RDMA READ response, MTU by MTU, read from memory whose key is checked again for every
    // packet (the MR may have gone since the request; rxe_resp.c rxe_recheck_mr).
    if (r.len > 0 && q.be_.check_mr(r.rkey, r.pd, r.va, r.len, sdp::kRemoteRead) != MrRefusal::None) [[unlikely]] {
      const uint32_t psn = psn_add(r.psn, r.next);
      out_.pop_front();
      fatal(psn, aeth::kNakRemAccess, sdp::WcStatus::RemAccessErr,
            "the MR of an RDMA READ went before its response was sent");
      continue;  // the NAK
    }
    const uint32_t mtu = q.attr_.path_mtu;
    const uint32_t n = std::min(max_pkts, r.npkts - r.next);
    out.op = read_response_opcode(r.next, r.npkts);
    out.last_op = read_response_opcode(r.next + n - 1, r.npkts);
    out.psn = psn_add(r.psn, r.next);
    out.npkts = n;
    const uint64_t off = static_cast<uint64_t>(r.next) * mtu;
    out.msg_offset = off;
    out.va = r.va + off;
    out.payload_len = static_cast<uint32_t>(std::min<uint64_t>(r.len, static_cast<uint64_t>(r.next + n) * mtu) - off);
    r.next += n;
    if (r.next == r.npkts) out_.pop_front();
    return true;
  }
  return false;
}

std::optional<sdp::RecvWr> Responder::on_error() {
  out_.remove_if([](const Response& r) { return r.kind == Response::Kind::Read; });
  in_msg_ = false;
  std::optional<sdp::RecvWr> w = rwqe_;
  rwqe_.reset();
  return w;
}

void Responder::add_resource(const Resource& r) {
  // max_dest_rd_atomic slots: a new READ or atomic takes the oldest one's, and what is left of
  // that one's response is not sent (rxe_resp.c reuses its oldest resource the same way). A
  // requester within max_rd_atomic <= the peer's max_dest_rd_atomic never loses a response so
  // (its oldest has been answered whole before it may send another); one beyond it cannot make
  // this side hold more than max_dest_rd_atomic responses.
  const size_t cap = std::max<size_t>(1, qp_.attr_.max_dest_rd_atomic);
  while (res_.size() >= cap) {
    const Resource old = res_.front();
    res_.pop_front();
    out_.remove_if([&](const Response& x) {
      return x.kind != Response::Kind::Ack && !psn_before(x.psn, old.first_psn) && !psn_before(old.last_psn, x.psn);
    });
  }
  res_.push_back(r);
}

const Responder::Resource* Responder::find_resource(uint32_t psn) const {
  for (const Resource& r : res_)
    if (!psn_before(psn, r.first_psn) && !psn_before(r.last_psn, psn)) return &r;
  return nullptr;
}

}  // namespace hcasim::hca
