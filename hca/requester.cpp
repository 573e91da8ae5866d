#include "hca/requester.h"

#include <algorithm>

#include "hca/queue_pair.h"
#include "hca/rc.h"

namespace hcasim::hca {

void Requester::reset(uint32_t sq_psn) {
  npsn_ = hi_psn_ = sq_psn & kPsnMask;
  next_ = 0;
  pkt_ = 0;
  rd_outstanding_ = 0;
  rnr_wait_ = false;
  halted_ = false;
}

bool Requester::ready() const {
  const QueuePair& q = qp_;
  if (q.attr_.qp_state != QpState::Rts || rnr_wait_ || halted_ || next_ >= q.sq_.size()) return false;
  const QueuePair::SqEntry& e = q.sq_[next_];
  // An RDMA READ or atomic waits while max_rd_atomic of them are outstanding (IBA 9.7.7.2.4
  // rdma read resources; rxe_req.c holds the WQE the same way).
  return e.started || !e.w.rd_atomic() || rd_outstanding_ < q.attr_.max_rd_atomic;
}

void Requester::start(size_t index) {
  QueuePair& q = qp_;
  QueuePair::SqEntry& e = q.sq_[index];
  e.started = true;
  e.first_psn = npsn_;
  if (e.w.x.local()) [[unlikely]] {
    // A memory window's bind or invalidation: executed now, in its turn; no packet, no PSN.
    e.npkts = 0;
    if (!q.be_.local_op(e.w, q.qpn_, q.pd_)) e.local_error = sdp::WcStatus::MwBindErr;
    return;
  }
  const sdp::SendWr& wr = e.w.wr;
  const uint64_t len = wr.length();
  // The local checks before anything leaves: the gather list's (or, for an RDMA READ and an
  // atomic, the scatter list's) keys in the QP's PD; inline data was copied into the WQE at post
  // and has no key (libmlx4 copies it from the SGE addresses).
  if (!wr.inline_data) {
    const unsigned need = e.w.rd_atomic() ? unsigned{sdp::kLocalWrite} : 0u;
    for (uint8_t i = 0; i < wr.num_sge; ++i)
      if (q.be_.check_mr(wr.sg[i].lkey, q.pd_, wr.sg[i].addr, wr.sg[i].length, need) != MrRefusal::None) {
        e.local_error = sdp::WcStatus::LocProtErr;
        return;
      }
  }
  // A message over max_msg_sz, a UD message over the port's MTU (a UD message is one packet,
  // IBA 9.8.3), or an atomic whose local SGEs are not 8 bytes (its operand, IBA 9.4.5; "an Atomic
  // operation which its size is different than 8 bytes" is IBV_WC_LOC_LEN_ERR on Mellanox HCAs,
  // rdmamojo.com ibv_poll_cq) completes with a local length error, and nothing is sent.
  if (len > q.lim_.max_msg_sz || (q.type_ == QpType::Ud && len > q.lim_.port_mtu) || (wr.atomic() && len != 8))
      [[unlikely]] {
    e.local_error = sdp::WcStatus::LocLenErr;
    return;
  }
  e.npkts = q.type_ == QpType::Ud || wr.atomic() ? 1 : q.packets_of(len);
  npsn_ = psn_add(npsn_, e.npkts);
  if (e.w.rd_atomic()) ++rd_outstanding_;
}

bool Requester::next(uint32_t max_pkts, Packet& out) {
  QueuePair& q = qp_;
  while (true) {
    if (!ready()) return false;
    if (!q.sq_[next_].started) {
      start(next_);
      if (q.sq_[next_].local_error) {
        halted_ = true;
        ++next_;
        pkt_ = 0;
        q.comp_.check_front();
        return false;
      }
    }
    if (!q.sq_[next_].w.x.local()) break;
    // A local WQE, done (or passed again by go-back-N): it completes when it is at the front.
    ++next_;
    pkt_ = 0;
    q.comp_.check_front();
  }
  const QueuePair::SqEntry& e = q.sq_[next_];
  const sdp::SendWr& wr = e.w.wr;
  const WrExt& x = e.w.x;
  const uint32_t mtu = q.attr_.path_mtu;
  const uint64_t len = wr.length();
  out = Packet{};
  out.dest_qpn = q.attr_.dest_qp_num;
  out.src_qpn = q.qpn_;
  out.wqe_seq = e.w.seq;
  out.psn = psn_add(e.first_psn, pkt_);
  bool done = false;  // the WQE's last packet is in this train
  if (e.w.rd_atomic()) {
    // One request packet. An RDMA READ goes again from the first response packet missing (the
    // responder answers from its PSN: va and length move on by as many MTUs, IBA 9.7.5.1.4).
    out.npkts = 1;
    out.ack_req = true;
    out.rkey = wr.rkey;
    if (wr.atomic()) {
      out.op = out.last_op = wr.opcode == sdp::WrOpcode::AtomicCmpSwap ? Opcode::RcCompareSwap : Opcode::RcFetchAdd;
      out.va = wr.remote_addr;
      out.compare = wr.compare_add;
      out.swap = wr.swap;
    } else {
      const uint64_t off = std::min<uint64_t>(len, static_cast<uint64_t>(pkt_) * mtu);
      out.op = out.last_op = Opcode::RcReadRequest;
      out.va = wr.remote_addr + off;
      out.dma_len = static_cast<uint32_t>(len - off);
      out.msg_offset = off;
    }
    done = true;
  } else if (q.type_ == QpType::Ud) {
    out.op = out.last_op = x.kind == WrExt::Kind::SendImm ? Opcode::UdSendOnlyImm : Opcode::UdSendOnly;
    out.dest_qpn = x.ud_qpn;
    out.dlid = x.ud_dlid;
    out.qkey = (x.ud_qkey & 0x80000000u) != 0 ? q.attr_.qkey : x.ud_qkey;  // IBA 10.2.5: the QP's own
    out.imm = x.imm;
    out.payload_len = static_cast<uint32_t>(len);
    out.sg = wr.sg;
    out.num_sge = wr.num_sge;
    out.inline_data = wr.inline_data;
    done = true;
  } else {
    const uint8_t transport = q.type_ == QpType::Uc ? 1 : 0;
    const OpKind kind = wr.opcode == sdp::WrOpcode::Send ? OpKind::Send : OpKind::Write;
    const bool imm = x.imm_data();
    // SEND with Invalidate: the message's last packet is SEND Last / Only with Invalidate and
    // carries the R_Key in its IETH, the Invalidate Extended Transport Header (IBA 9.2.1 table
    // 38, 9.3; RC only, hca::check_post_send).
    const bool inv = x.kind == WrExt::Kind::SendInv;
    const uint32_t n = std::min(max_pkts, e.npkts - pkt_);
    const uint32_t last = pkt_ + n - 1;  // index of the train's last packet
    out.op = data_opcode(transport, kind, pkt_ == 0, pkt_ + 1 == e.npkts, imm, inv);
    out.last_op = data_opcode(transport, kind, last == 0, last + 1 == e.npkts, imm, inv);
    out.npkts = n;
    out.sg = wr.sg;
    out.num_sge = wr.num_sge;
    out.inline_data = wr.inline_data;
    out.msg_offset = static_cast<uint64_t>(pkt_) * mtu;
    out.payload_len = static_cast<uint32_t>(std::min<uint64_t>(len, static_cast<uint64_t>(last + 1) * mtu) - out.msg_offset);
    if (kind == OpKind::Write && pkt_ == 0) {
      out.va = wr.remote_addr;
      out.rkey = wr.rkey;
      out.dma_len = static_cast<uint32_t>(len);
    }
    done = last + 1 == e.npkts;
    if (imm && done) out.imm = x.imm;
    if (inv && done) out.ieth_rkey = x.imm;
    out.ack_req = done && reliable_connected(q.type_);
    pkt_ = last + 1;
  }
  // Packets before hi_psn_ were sent before: go-back-N sends them again. An RDMA READ request
  // takes the PSNs of its whole response.
  const uint32_t end = e.w.rd_atomic() ? psn_add(e.first_psn, e.npkts) : psn_add(out.psn, out.npkts);
  if (psn_before(out.psn, hi_psn_)) {
    const uint32_t again = psn_before(hi_psn_, end) ? (hi_psn_ - out.psn) & kPsnMask : out.npkts;
    q.stats_.retransmitted += std::min(again, out.npkts);
  }
  if (psn_before(hi_psn_, end)) hi_psn_ = end;
  if (done) {
    ++next_;
    pkt_ = 0;
  }
  if (q.type_ == QpType::XrcSend) {  // every XRC request names the target's XRC SRQ (IBA A14)
    out.xrc = true;
    out.xrc_srqn = x.xrc_srqn & 0xFFFFFF;
  }
  if (reliable_connected(q.type_)) {
    if (out.ack_req) q.timer_start();
  } else if (done) {
    q.retire_front(sdp::WcStatus::Success);  // UC and UD: complete once sent (IBA 9.8.2, 9.8.3)
  }
  return true;
}

bool Requester::peek(uint64_t& seq, bool& fresh) const {
  if (!ready()) return false;
  const QueuePair::SqEntry& e = qp_.sq_[next_];
  seq = e.w.seq;
  fresh = !e.started;
  return true;
}

void Requester::rewind(uint32_t psn) {
  QueuePair& q = qp_;
  for (size_t i = 0; i < q.sq_.size(); ++i) {
    const QueuePair::SqEntry& e = q.sq_[i];
    if (!e.started || e.local_error) break;
    if (!psn_before(psn, e.first_psn) && psn_before(psn, psn_add(e.first_psn, e.npkts))) {
      next_ = i;
      pkt_ = (psn - e.first_psn) & kPsnMask;
      return;
    }
  }
  // Nothing sent at or after `psn` is still in the send queue: continue with the first WQE not
  // started (or a failed one, whose turn it then is).
  size_t i = 0;
  while (i < q.sq_.size() && q.sq_[i].started && !q.sq_[i].local_error) ++i;
  next_ = i;
  pkt_ = 0;
}

void Requester::retired_front() {
  if (next_ > 0)
    --next_;
  else
    pkt_ = 0;  // the WQE being sent again was acknowledged meanwhile
}

}  // namespace hcasim::hca
