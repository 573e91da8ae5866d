// The HCA core's transport (hca/queue_pair.h: requester, responder, completer) alone, without
// time: two QPs on a loopback wire the test pumps by hand, a memory of bytes per side, timers the
// test fires. Each case names the IBA 1.2.1 section (or the rxe driver's state) whose outcome it
// checks; the packet counts are worked out in the comments.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <numeric>
#include <vector>

#include "hca/queue_pair.h"
#include "hca/wire_faults.h"

using namespace hcasim;
using namespace hcasim::hca;
using sdp::WcStatus;
using sdp::WrOpcode;

namespace {

constexpr sdp::Addr kBase = 0x100000;
constexpr uint32_t kMem = 1 << 20;
constexpr unsigned kRemoteAll = sdp::kRemoteWrite | sdp::kRemoteRead | kRemoteAtomic;

/// One side's HCA: its MR table over a memory of bytes at kBase, its CQs, its timers.
class TestHca : public QpBackend {
 public:
  TestHca() : mem(kMem, 0) { pd = mrs.alloc_pd(); }
  MrRefusal check_mr(uint32_t key, uint32_t p, sdp::Addr addr, uint64_t len, unsigned need) override {
    return mrs.check(key, p, addr, len, need, [](sdp::Addr, uint64_t) { return false; }, qpn);
  }
  bool local_op(const SendWqe& w, uint32_t q, uint32_t p) override {
    if (w.x.kind == WrExt::Kind::LocalInv) return mrs.invalidate_mw(w.x.imm, p) == MrRefusal::None;
    return mrs.bind_mw(w.x.mw_key, w.x.mw_mr_key, w.x.mw_addr, w.x.mw_len, w.x.mw_access, q, p) == MrRefusal::None;
  }
  MrRefusal remote_invalidate(uint32_t rkey, uint32_t q, uint32_t p) override { return mrs.invalidate_mw(rkey, p, q); }
  void write(sdp::Addr dst, uint64_t len, const void* payload, uint64_t offset) override {
    std::memcpy(at(dst), static_cast<const uint8_t*>(payload) + offset, len);
    written += len;
  }
  void store(sdp::Addr dst, const void* src, uint64_t len) override { std::memcpy(at(dst), src, len); }
  uint64_t atomic(sdp::Addr addr, bool cas, uint64_t compare_add, uint64_t swap) override {
    uint64_t v;
    std::memcpy(&v, at(addr), 8);
    const uint64_t orig = v;
    v = cas ? (v == compare_add ? swap : v) : v + compare_add;
    std::memcpy(at(addr), &v, 8);
    return orig;
  }
  bool complete(const Cqe& c, bool recv) override {
    auto& q = recv && cur != nullptr ? cur->cq : recv ? rcq : scq;  // an XRC target: its SRQ's CQ
    if (q.size() >= cq_depth) return false;
    q.push_back(c);
    return true;
  }
  void kick() override { ++kicks; }
  void ack_timer(bool run) override { timer_on = run; }
  void rnr_timer(double ns) override {
    rnr_on = true;
    rnr_ns = ns;
  }
  void on_error(const std::string& why) override { error = why; }
  /// XRC target: the XRC SRQs of this side by number (their domain, PD, WRs and CQ).
  struct XrcSrq {
    uint32_t xrcd = 0, pd = 0;
    std::vector<sdp::RecvWr> wrs;
    std::vector<Cqe> cq;
  };
  XrcSrqRefusal xrc_srq(uint32_t srqn, uint32_t& p) override {
    auto it = srqs.find(srqn);
    if (it == srqs.end()) return XrcSrqRefusal::Unknown;
    if (it->second.xrcd != xrcd) return XrcSrqRefusal::OtherXrcd;
    p = it->second.pd;
    cur = &it->second;
    return XrcSrqRefusal::None;
  }
  bool take_srq_recv(sdp::RecvWr& out) override {
    if (cur == nullptr || cur->wrs.empty()) return false;
    out = cur->wrs.front();
    cur->wrs.erase(cur->wrs.begin());
    return true;
  }
  uint8_t* at(sdp::Addr a) { return mem.data() + (a - kBase); }
  std::map<uint32_t, XrcSrq> srqs;
  uint32_t xrcd = 0;  ///< the XRC target QP's domain
  XrcSrq* cur = nullptr;

  MrTable mrs;
  uint32_t pd = 0;
  uint32_t qpn = kNoQp;  ///< the QP of this side (its type 2 windows serve it)
  std::vector<uint8_t> mem;
  std::vector<Cqe> scq, rcq;
  size_t cq_depth = 1000;
  bool timer_on = false, rnr_on = false;
  double rnr_ns = 0;
  int kicks = 0;
  uint64_t written = 0;
  std::string error;
};

/// Two RC (or UC, UD) QPs, A and B, connected back to back, and the wire between them. With
/// QpType::XrcSend, A is an XRC send QP and B the XRC receive QP it is connected to (its SRQs are
/// hb.srqs, in domain hb.xrcd).
struct Link {
  explicit Link(QpType type = QpType::Rc, uint32_t mtu = 1024, uint32_t max_pkts = 1,
                const model::FaultConfig& faults = {}, uint8_t max_rd_atomic = 4, uint8_t max_dest_rd_atomic = 4)
      : a(type, 0x48, ha.pd, 64, 64, DeviceLimits{}, ha),
        b(type == QpType::XrcSend ? QpType::XrcRecv : type, 0x49, hb.pd, 64, 64, DeviceLimits{}, hb),
        train(max_pkts),
        ab(faults, 1),
        ba(faults, 2) {
    if (b.type() == QpType::XrcRecv) b.set_srq(true);
    for (QueuePair* q : {&a, &b}) {
      const uint32_t peer = q == &a ? 0x49 : 0x48;
      QpAttr x;
      x.qp_state = QpState::Init;
      x.qp_access_flags = kRemoteAll;
      x.qkey = 0x11111111;
      const unsigned init = type == QpType::Ud ? attr::kPkeyIndex | attr::kPort | attr::kQkey
                                               : attr::kPkeyIndex | attr::kPort | attr::kAccessFlags;
      EXPECT_EQ(q->modify(x, attr::kState | init), 0);
      x.qp_state = QpState::Rtr;
      x.dlid = 1;
      x.path_mtu = mtu;
      x.dest_qp_num = peer;
      x.rq_psn = 100;
      x.max_dest_rd_atomic = max_dest_rd_atomic;
      x.min_rnr_timer = 12;
      // UC and an XRC send QP (no responder of its own) take no responder resources.
      const bool no_resp = type == QpType::Uc || q->type() == QpType::XrcSend;
      const unsigned rtr = type == QpType::Ud ? 0u
                           : no_resp       ? attr::kAv | attr::kPathMtu | attr::kDestQpn | attr::kRqPsn
                                         : attr::kAv | attr::kPathMtu | attr::kDestQpn | attr::kRqPsn |
                                               attr::kMaxDestRdAtomic | attr::kMinRnrTimer;
      EXPECT_EQ(q->modify(x, attr::kState | rtr), 0);
      x.qp_state = QpState::Rts;
      x.sq_psn = 100;
      x.timeout = 14;
      x.retry_cnt = 3;
      x.rnr_retry = 2;
      x.max_rd_atomic = max_rd_atomic;
      const unsigned rts = reliable_connected(type) ? attr::kSqPsn | attr::kTimeout | attr::kRetryCnt | attr::kRnrRetry |
                                                    attr::kMaxQpRdAtomic
                                              : attr::kSqPsn;
      EXPECT_EQ(q->modify(x, attr::kState | rts), 0);
    }
  }
  /// `n` bytes of side h's memory at offset `off`, registered with `access`.
  struct Buf {
    sdp::Addr addr;
    uint32_t key;
  };
  Buf buf(TestHca& h, uint32_t off, uint32_t n, unsigned access = sdp::kLocalWrite | kRemoteAll) {
    return {kBase + off, h.mrs.reg(h.pd, kBase + off, n, access)};
  }
  static void ramp(TestHca& h, sdp::Addr a, uint32_t n, uint8_t first) {
    std::iota(h.at(a), h.at(a) + n, first);
  }
  static SendWqe wqe(WrOpcode op, uint64_t id, const Buf& b, uint32_t len, sdp::Addr remote = 0, uint32_t rkey = 0) {
    SendWqe w;
    w.wr.wr_id = id;
    w.wr.opcode = op;
    w.wr.sg[0] = {b.addr, len, b.key};
    w.wr.num_sge = 1;
    w.wr.remote_addr = remote;
    w.wr.rkey = rkey;
    return w;
  }
  static sdp::RecvWr recv(uint64_t id, const Buf& b, uint32_t len) {
    sdp::RecvWr r;
    r.wr_id = id;
    r.sg[0] = {b.addr, len, b.key};
    r.num_sge = 1;
    return r;
  }
  /// The bytes of train `p` of a requester on `h`: its gather list from msg_offset.
  static std::vector<uint8_t> gather(QueuePair&, TestHca& h, const Packet& p) {
    std::vector<uint8_t> v(p.payload_len);
    uint64_t pos = 0, done = 0;
    for (uint8_t i = 0; i < p.num_sge && done < v.size(); ++i) {
      const sdp::Sge& g = p.sg[i];
      if (pos + g.length > p.msg_offset + done) {
        const uint64_t in = p.msg_offset + done - pos;
        const uint64_t n = std::min<uint64_t>(g.length - in, v.size() - done);
        std::memcpy(v.data() + done, h.at(g.addr + in), n);
        done += n;
      }
      pos += g.length;
    }
    return v;
  }
  /// Moves every packet either way until the wire is quiet; `drop` decides per train from A.
  template <class Drop>
  int pump(Drop drop) {
    int trains = 0;
    for (bool moved = true; moved;) {
      moved = false;
      for (int side = 0; side < 2; ++side) {
        QueuePair& s = side == 0 ? a : b;
        QueuePair& d = side == 0 ? b : a;
        TestHca& hs = side == 0 ? ha : hb;
        WireFaults<std::vector<uint8_t>>& w = side == 0 ? ab : ba;
        Packet p;
        while (s.next_request(train, p) || s.next_response(train, p)) {
          std::vector<uint8_t> data = is_request(p.op) ? gather(s, hs, p) : std::vector<uint8_t>(p.payload_len);
          if (op_kind(p.op) == OpKind::ReadResponse) std::memcpy(data.data(), hs.at(p.va), p.payload_len);
          moved = true;
          ++trains;
          if (side == 0 && drop(p)) continue;
          w.transmit(p, data, s.attr().path_mtu,
                     [&](const Packet& sub, bool corrupted, const std::vector<uint8_t>& h, uint64_t skip) {
                       if (!corrupted) d.receive(sub, h.data() + skip);
                     });
        }
      }
    }
    return trains;
  }
  int pump() {
    return pump([](const Packet&) { return false; });
  }
  void expire_ack(TestHca& h, QueuePair& q) {
    ASSERT_TRUE(h.timer_on);
    h.timer_on = false;
    q.ack_timeout();
  }

  TestHca ha, hb;
  QueuePair a, b;
  uint32_t train;
  WireFaults<std::vector<uint8_t>> ab, ba;
};

}  // namespace

// ---- success paths, packet by packet and as trains -------------------------------------------

// Memory windows (IBA 10.6.7): a Bind WR and a Local Invalidate WR are executed by the requester
// in their turn and complete in order behind the WQEs before them (IBV_WC_BIND_MW,
// IBV_WC_LOCAL_INV); a bound type 2 window gives the remote side its range and rights only, on
// the QP it was bound through; invalidated, its key is refused (REM_ACCESS_ERR).
TEST(HcaTransport, MemoryWindowsBindAndInvalidateInTheirTurn) {
  Link l;
  l.hb.qpn = 0x49;
  auto s = l.buf(l.ha, 0, 4096), r = l.buf(l.hb, 0, 4096, sdp::kLocalWrite | kRemoteAll | kMwBind);
  auto ra = l.buf(l.ha, 8192, 64);
  const uint32_t mw = l.hb.mrs.alloc_mw(l.hb.pd, 2);
  EXPECT_EQ(l.a.post_recv(Link::recv(5, ra, 64)).post, Post::Accept);
  SendWqe send = Link::wqe(WrOpcode::Send, 1, r, 16);
  send.wr.signaled = true;
  SendWqe bind;
  bind.wr.wr_id = 2;
  bind.wr.signaled = true;
  bind.x.kind = WrExt::Kind::BindMw;
  bind.x.mw_key = mw;
  bind.x.mw_mr_key = r.key;
  bind.x.mw_addr = r.addr + 1024;  // 1 KiB of the 4 KiB MR, remote write only
  bind.x.mw_len = 1024;
  bind.x.mw_access = sdp::kRemoteWrite;
  EXPECT_EQ(l.b.post_send(send).post, Post::Accept);
  EXPECT_EQ(l.b.post_send(bind).post, Post::Accept);
  l.pump();
  ASSERT_EQ(l.hb.scq.size(), 2u);  // the SEND's, then the bind's, in order
  EXPECT_EQ(l.hb.scq[0].wc.wr_id, 1u);
  EXPECT_EQ(l.hb.scq[1].wc.wr_id, 2u);
  EXPECT_EQ(l.hb.scq[1].wc.status, WcStatus::Success);
  EXPECT_EQ(l.hb.scq[1].kind, Cqe::Kind::BindMw);
  // A's RDMA WRITE through the window lands where the window says.
  Link::ramp(l.ha, s.addr, 64, 3);
  SendWqe w = Link::wqe(WrOpcode::RdmaWrite, 3, s, 64, r.addr + 1024 + 960, mw);
  w.wr.signaled = true;
  EXPECT_EQ(l.a.post_send(w).post, Post::Accept);
  l.pump();
  ASSERT_EQ(l.ha.scq.size(), 1u);
  EXPECT_EQ(l.ha.scq[0].wc.status, WcStatus::Success);
  EXPECT_EQ(*l.hb.at(r.addr + 1024 + 960), 3);
  EXPECT_EQ(*l.hb.at(r.addr + 2047), 3 + 63);
  // The window's key serves remote access only, and not a read the window does not allow.
  EXPECT_EQ(l.hb.mrs.check(mw, l.hb.pd, r.addr + 1024, 8, 0, [](sdp::Addr, uint64_t) { return false; }, 0x49),
            MrRefusal::UnknownKey);
  EXPECT_EQ(l.hb.mrs.check(mw, l.hb.pd, r.addr + 1024, 8, sdp::kRemoteRead, [](sdp::Addr, uint64_t) { return false; },
                           0x49),
            MrRefusal::Access);
  EXPECT_EQ(l.hb.mrs.check(mw, l.hb.pd, r.addr + 1024, 8, sdp::kRemoteWrite,
                           [](sdp::Addr, uint64_t) { return false; }, 0x4a),
            MrRefusal::OtherQp);
  // Invalidated: the next WRITE through it is refused and writes nothing.
  SendWqe inv;
  inv.wr.wr_id = 4;
  inv.wr.signaled = true;
  inv.x.kind = WrExt::Kind::LocalInv;
  inv.x.imm = mw;
  EXPECT_EQ(l.b.post_send(inv).post, Post::Accept);
  l.pump();
  ASSERT_EQ(l.hb.scq.size(), 3u);
  EXPECT_EQ(l.hb.scq[2].kind, Cqe::Kind::LocalInv);
  EXPECT_EQ(l.hb.scq[2].wc.status, WcStatus::Success);
  Link::ramp(l.ha, s.addr, 64, 100);
  EXPECT_EQ(l.a.post_send(w).post, Post::Accept);
  l.pump();
  ASSERT_EQ(l.ha.scq.size(), 2u);
  EXPECT_EQ(l.ha.scq[1].wc.status, WcStatus::RemAccessErr);
  EXPECT_EQ(*l.hb.at(r.addr + 1024 + 960), 3);
}

// SEND with Invalidate (IBA 9.4.1.3, 10.6.7.2.4): the SEND's last packet is SEND Last (0x16) or
// SEND Only (0x17) with Invalidate and carries the R_Key in its IETH; once the message is in, the
// responder invalidates the type 2 window it names and the receive completes with IBV_WC_WITH_INV
// and that key (libmlx4 mlx4_poll_one: wc.invalidated_rkey). The window then refuses the
// requester's RDMA WRITE (REM_ACCESS_ERR). 600 B on an MTU of 256: FIRST, MIDDLE, LAST of 88 B.
TEST(HcaTransport, SendWithInvalidateInvalidatesTheWindowAndSaysSoInTheReceive) {
  for (uint32_t len : {600u, 200u}) {
    Link l(QpType::Rc, 256);
    l.hb.qpn = 0x49;
    auto s = l.buf(l.ha, 0, 4096), r = l.buf(l.hb, 0, 4096, sdp::kLocalWrite | kRemoteAll | kMwBind);
    const uint32_t mw = l.hb.mrs.alloc_mw(l.hb.pd, 2);
    ASSERT_EQ(l.hb.mrs.bind_mw(mw, r.key, r.addr + 2048, 1024, sdp::kRemoteWrite, 0x49, l.hb.pd), MrRefusal::None);
    EXPECT_EQ(l.b.post_recv(Link::recv(9, r, 1024)).post, Post::Accept);
    Link::ramp(l.ha, s.addr, len, 5);
    SendWqe inv = Link::wqe(WrOpcode::Send, 1, s, len);
    inv.wr.signaled = true;
    inv.x.kind = WrExt::Kind::SendInv;
    inv.x.imm = mw;
    EXPECT_EQ(l.a.post_send(inv).post, Post::Accept);
    std::vector<Packet> sent;
    l.pump([&](const Packet& p) {
      sent.push_back(p);
      return false;
    });
    if (len == 600) {
      ASSERT_EQ(sent.size(), 3u);
      EXPECT_EQ(sent[0].op, Opcode::RcSendFirst);
      EXPECT_EQ(sent[1].op, Opcode::RcSendMiddle);
      EXPECT_EQ(sent[2].op, Opcode::RcSendLastInv);
      EXPECT_EQ(static_cast<uint8_t>(sent[2].op), 0x16);
      EXPECT_EQ(sent[0].ieth_rkey, 0u);  // the IETH is the last packet's only
    } else {
      ASSERT_EQ(sent.size(), 1u);
      EXPECT_EQ(static_cast<uint8_t>(sent[0].op), 0x17);  // SEND Only with Invalidate
    }
    EXPECT_EQ(sent.back().ieth_rkey, mw);
    ASSERT_EQ(l.hb.rcq.size(), 1u);
    const Cqe& c = l.hb.rcq[0];
    EXPECT_EQ(c.wc.status, WcStatus::Success);
    EXPECT_EQ(c.wc.opcode, sdp::WcOpcode::Recv);
    EXPECT_EQ(c.wc.byte_len, len);
    EXPECT_TRUE(c.with_inv);
    EXPECT_FALSE(c.with_imm);
    EXPECT_EQ(c.imm, mw);
    EXPECT_EQ(std::memcmp(l.hb.at(r.addr), l.ha.at(s.addr), len), 0);
    ASSERT_EQ(l.ha.scq.size(), 1u);
    EXPECT_EQ(l.ha.scq[0].wc.status, WcStatus::Success);
    EXPECT_EQ(l.ha.scq[0].wc.opcode, sdp::WcOpcode::Send);
    EXPECT_EQ(l.hb.mrs.windows_bound(r.key), 0u);
    // The window is invalid: A's RDMA WRITE through it is refused and writes nothing.
    SendWqe w = Link::wqe(WrOpcode::RdmaWrite, 2, s, 8, r.addr + 2048, mw);
    EXPECT_EQ(l.a.post_send(w).post, Post::Accept);
    l.pump();
    ASSERT_EQ(l.ha.scq.size(), 2u);
    EXPECT_EQ(l.ha.scq[1].wc.status, WcStatus::RemAccessErr);
    EXPECT_EQ(*l.hb.at(r.addr + 2048), 0);
  }
}

// A SEND with Invalidate whose R_Key names no type 2 window bound through the receiving QP in its
// PD: the receive completes REM_INV_REQ_ERR and the responder goes to ERROR (rxe_resp.c
// RESPST_ERR_INVALIDATE_RKEY); the requester gets NAK Invalid Request, REM_INV_REQ_ERR. Nothing
// is invalidated: a window bound through another QP still serves it.
TEST(HcaTransport, SendWithInvalidateOfAKeyItMayNotInvalidateFails) {
  enum Bad { OtherQp, TypeOne, MrKey, Unbound };
  for (Bad bad : {OtherQp, TypeOne, MrKey, Unbound}) {
    SCOPED_TRACE(static_cast<int>(bad));
    Link l;
    l.hb.qpn = 0x49;
    auto s = l.buf(l.ha, 0, 4096), r = l.buf(l.hb, 0, 4096, sdp::kLocalWrite | kRemoteAll | kMwBind);
    const uint32_t mw = l.hb.mrs.alloc_mw(l.hb.pd, bad == TypeOne ? 1 : 2);
    if (bad != Unbound) {
      ASSERT_EQ(l.hb.mrs.bind_mw(mw, r.key, r.addr, 64, sdp::kRemoteWrite, bad == OtherQp ? 0x4a : 0x49, l.hb.pd),
                MrRefusal::None);
    }
    EXPECT_EQ(l.b.post_recv(Link::recv(9, r, 1024)).post, Post::Accept);
    SendWqe inv = Link::wqe(WrOpcode::Send, 1, s, 16);
    inv.x.kind = WrExt::Kind::SendInv;
    inv.x.imm = bad == MrKey ? r.key : mw;
    EXPECT_EQ(l.a.post_send(inv).post, Post::Accept);
    l.pump();
    ASSERT_EQ(l.hb.rcq.size(), 1u);
    EXPECT_EQ(l.hb.rcq[0].wc.status, WcStatus::RemInvReqErr);
    EXPECT_FALSE(l.hb.rcq[0].with_inv);
    EXPECT_EQ(l.b.state(), QpState::Error);
    ASSERT_EQ(l.ha.scq.size(), 1u);
    EXPECT_EQ(l.ha.scq[0].wc.status, WcStatus::RemInvReqErr);
    if (bad == OtherQp) {
      EXPECT_EQ(l.hb.mrs.check(mw, l.hb.pd, r.addr, 8, sdp::kRemoteWrite, [](sdp::Addr, uint64_t) { return false; },
                               0x4a),
                MrRefusal::None);
    }
  }
}

// SEND with Invalidate exists on RC only (IBA 9.2.1 table 38 has no UC or UD opcode for it): a
// post on UC or UD is refused with EINVAL (PostError::BadOpcode).
TEST(HcaTransport, SendWithInvalidateIsRcOnly) {
  for (QpType t : {QpType::Uc, QpType::Ud}) {
    Link l(t);
    auto s = l.buf(l.ha, 0, 4096);
    SendWqe inv = Link::wqe(WrOpcode::Send, 1, s, 16);
    inv.x.kind = WrExt::Kind::SendInv;
    inv.x.imm = 0x100;
    const PostCheck c = l.a.post_send(inv);
    EXPECT_EQ(c.post, Post::Refuse);
    EXPECT_EQ(c.error, PostError::BadOpcode);
    EXPECT_EQ(post_errno(c.error), EINVAL);
  }
}

// A bind the memory table refuses (here: the MR lacks IBV_ACCESS_MW_BIND) completes
// MW_BIND_ERR and takes the QP to ERROR, as any error completion of the send queue.
TEST(HcaTransport, ARefusedBindCompletesMwBindErr) {
  Link l;
  l.hb.qpn = 0x49;
  auto r = l.buf(l.hb, 0, 4096);
  SendWqe bind;
  bind.wr.wr_id = 7;
  bind.x.kind = WrExt::Kind::BindMw;
  bind.x.mw_key = l.hb.mrs.alloc_mw(l.hb.pd, 2);
  bind.x.mw_mr_key = r.key;
  bind.x.mw_addr = r.addr;
  bind.x.mw_len = 64;
  bind.x.mw_access = sdp::kRemoteWrite;
  EXPECT_EQ(l.b.post_send(bind).post, Post::Accept);
  l.pump();
  ASSERT_EQ(l.hb.scq.size(), 1u);
  EXPECT_EQ(l.hb.scq[0].wc.status, WcStatus::MwBindErr);
  EXPECT_EQ(l.b.state(), QpState::Error);
}

TEST(HcaTransport, SendOfFivePacketsArrivesWholeAndCompletesOnItsAck) {
  for (uint32_t train : {1u, 1000u}) {
    Link l(QpType::Rc, 1024, train);
    auto s = l.buf(l.ha, 0, 8192), r = l.buf(l.hb, 0, 8192);
    Link::ramp(l.ha, s.addr, 4500, 7);
    EXPECT_EQ(l.b.post_recv(Link::recv(9, r, 8192)).post, Post::Accept);
    EXPECT_EQ(l.a.post_send(Link::wqe(WrOpcode::Send, 1, s, 4500)).post, Post::Accept);
    // 4500 B on an MTU of 1024: 5 packets (FIRST, 3 MIDDLE, LAST of 404 B) and one ACK; as a
    // train, one transfer each way.
    EXPECT_EQ(l.pump(), train == 1 ? 6 : 2);
    ASSERT_EQ(l.hb.rcq.size(), 1u);
    EXPECT_EQ(l.hb.rcq[0].wc.status, WcStatus::Success);
    EXPECT_EQ(l.hb.rcq[0].wc.byte_len, 4500u);
    EXPECT_EQ(l.hb.rcq[0].src_qp, 0x48u);
    EXPECT_EQ(std::memcmp(l.hb.at(r.addr), l.ha.at(s.addr), 4500), 0);
    ASSERT_EQ(l.ha.scq.size(), 1u);
    EXPECT_EQ(l.ha.scq[0].wc.wr_id, 1u);
    EXPECT_EQ(l.ha.scq[0].wc.status, WcStatus::Success);
    EXPECT_FALSE(l.ha.timer_on);  // nothing outstanding: the ACK timer stopped
    EXPECT_EQ(l.a.send_outstanding(), 0u);
  }
}

TEST(HcaTransport, RdmaWriteReadAndAtomicsMoveTheirBytes) {
  Link l(QpType::Rc, 256);
  auto s = l.buf(l.ha, 0, 4096), back = l.buf(l.ha, 8192, 4096), r = l.buf(l.hb, 0, 4096);
  Link::ramp(l.ha, s.addr, 3000, 1);
  l.a.post_send(Link::wqe(WrOpcode::RdmaWrite, 1, s, 3000, r.addr + 100, r.key));
  l.a.post_send(Link::wqe(WrOpcode::RdmaRead, 2, back, 3000, r.addr + 100, r.key));
  // 3000 B on MTU 256: 12 WRITE packets, one ACK; one READ request, 12 response packets.
  EXPECT_EQ(l.pump(), 12 + 1 + 1 + 12);
  ASSERT_EQ(l.ha.scq.size(), 2u);
  EXPECT_EQ(l.ha.scq[0].wc.opcode, sdp::WcOpcode::RdmaWrite);
  EXPECT_EQ(l.ha.scq[1].wc.opcode, sdp::WcOpcode::RdmaRead);
  EXPECT_EQ(std::memcmp(l.ha.at(back.addr), l.ha.at(s.addr), 3000), 0);
  EXPECT_TRUE(l.hb.rcq.empty());  // a WRITE without immediate consumes no receive
  // Fetch-and-add 5 on 40, then compare 45 and swap in 7: the originals come back.
  uint64_t v = 40;
  std::memcpy(l.hb.at(r.addr + 512), &v, 8);
  SendWqe fa = Link::wqe(WrOpcode::AtomicFetchAdd, 3, back, 8, r.addr + 512, r.key);
  fa.wr.compare_add = 5;
  SendWqe cs = Link::wqe(WrOpcode::AtomicCmpSwap, 4, s, 8, r.addr + 512, r.key);
  cs.wr.compare_add = 45;
  cs.wr.swap = 7;
  l.a.post_send(fa);
  l.a.post_send(cs);
  l.pump();
  ASSERT_EQ(l.ha.scq.size(), 4u);
  EXPECT_EQ(l.ha.scq[2].wc.opcode, sdp::WcOpcode::FetchAdd);
  EXPECT_EQ(l.ha.scq[3].wc.opcode, sdp::WcOpcode::CompSwap);
  EXPECT_EQ(l.ha.scq[2].wc.byte_len, 8u);  // libmlx4: 8 for an atomic
  std::memcpy(&v, l.ha.at(back.addr), 8);
  EXPECT_EQ(v, 40u);
  std::memcpy(&v, l.ha.at(s.addr), 8);
  EXPECT_EQ(v, 45u);
  std::memcpy(&v, l.hb.at(r.addr + 512), 8);
  EXPECT_EQ(v, 7u);
}

TEST(HcaTransport, WriteWithImmediateConsumesAReceiveAndReportsTheLength) {
  Link l;
  auto s = l.buf(l.ha, 0, 4096), r = l.buf(l.hb, 0, 4096), rq = l.buf(l.hb, 8192, 64);
  l.b.post_recv(Link::recv(5, rq, 64));
  SendWqe w = Link::wqe(WrOpcode::RdmaWrite, 1, s, 2000, r.addr, r.key);
  w.x.kind = WrExt::Kind::WriteImm;
  w.x.imm = 0x12345678;
  l.a.post_send(w);
  l.pump();
  ASSERT_EQ(l.hb.rcq.size(), 1u);
  EXPECT_EQ(l.hb.rcq[0].kind, Cqe::Kind::RecvRdmaWithImm);
  EXPECT_EQ(l.hb.rcq[0].wc.byte_len, 2000u);  // the WRITE's length (rxe_resp.c do_complete)
  EXPECT_TRUE(l.hb.rcq[0].with_imm);
  EXPECT_EQ(l.hb.rcq[0].imm, 0x12345678u);
}

// ---- faults: go-back-N, timeouts, duplicates -------------------------------------------------

TEST(HcaTransport, ALostMiddlePacketIsNakedAndSentAgainFromItsPsn) {
  Link l(QpType::Rc, 1024);
  auto s = l.buf(l.ha, 0, 8192), r = l.buf(l.hb, 0, 8192);
  Link::ramp(l.ha, s.addr, 5000, 3);
  l.b.post_recv(Link::recv(9, r, 8192));
  l.a.post_send(Link::wqe(WrOpcode::Send, 1, s, 5000));
  // PSNs 100..104; 102 lost the first time: 103 shows the gap (one NAK PSN sequence error with
  // PSN 102), 104 is discarded; go-back-N sends 102, 103, 104 again.
  int lost = 0;
  l.pump([&](const Packet& p) { return p.psn == 102 && lost++ == 0; });
  ASSERT_EQ(l.hb.rcq.size(), 1u);
  EXPECT_EQ(l.hb.rcq[0].wc.byte_len, 5000u);
  EXPECT_EQ(std::memcmp(l.hb.at(r.addr), l.ha.at(s.addr), 5000), 0);
  ASSERT_EQ(l.ha.scq.size(), 1u);
  EXPECT_EQ(l.ha.scq[0].wc.status, WcStatus::Success);
  EXPECT_EQ(l.a.stats().naks, 1u);
  EXPECT_EQ(l.a.stats().retransmitted, 3u);
  EXPECT_EQ(l.a.stats().timeouts, 0u);
}

TEST(HcaTransport, ALostLastPacketWaitsForTheAckTimeout) {
  Link l(QpType::Rc, 1024);
  auto s = l.buf(l.ha, 0, 8192), r = l.buf(l.hb, 0, 8192);
  l.b.post_recv(Link::recv(9, r, 8192));
  l.a.post_send(Link::wqe(WrOpcode::Send, 1, s, 3000));
  // 100, 101, 102: the last lost, nothing behind it shows the gap: no NAK, no completion.
  int lost = 0;
  l.pump([&](const Packet& p) { return p.psn == 102 && lost++ == 0; });
  EXPECT_TRUE(l.ha.scq.empty());
  EXPECT_TRUE(l.hb.rcq.empty());
  l.expire_ack(l.ha, l.a);  // go back to the first unacknowledged PSN, 100
  l.pump();
  ASSERT_EQ(l.ha.scq.size(), 1u);
  EXPECT_EQ(l.ha.scq[0].wc.status, WcStatus::Success);
  ASSERT_EQ(l.hb.rcq.size(), 1u);  // the two duplicates were not executed again
  EXPECT_EQ(l.a.stats().timeouts, 1u);
  EXPECT_EQ(l.a.stats().retransmitted, 3u);
}

TEST(HcaTransport, ALostAckTimesOutAndTheDuplicateIsAckedNotExecuted) {
  Link l(QpType::Rc, 4096, 1000);
  auto s = l.buf(l.ha, 0, 4096), r = l.buf(l.hb, 0, 4096);
  l.b.post_recv(Link::recv(9, r, 4096));
  l.b.post_recv(Link::recv(10, r, 4096));
  l.a.post_send(Link::wqe(WrOpcode::Send, 1, s, 100));
  Packet p;
  ASSERT_TRUE(l.a.next_request(1000, p));
  std::vector<uint8_t> data = Link::gather(l.a, l.ha, p);
  l.b.receive(p, data.data());
  ASSERT_TRUE(l.b.next_response(1000, p));  // the ACK: lost
  EXPECT_EQ(l.hb.rcq.size(), 1u);
  l.expire_ack(l.ha, l.a);
  l.pump();
  EXPECT_EQ(l.hb.rcq.size(), 1u);  // receive 10 still posted: the duplicate SEND was only re-ACKed
  EXPECT_EQ(l.b.recv_posted(), 1u);
  ASSERT_EQ(l.ha.scq.size(), 1u);
  EXPECT_EQ(l.ha.scq[0].wc.status, WcStatus::Success);
}

TEST(HcaTransport, RetriesRunOutWhenThePeerIsNotInRtr) {
  Link l;
  auto s = l.buf(l.ha, 0, 4096);
  EXPECT_EQ(l.b.modify_state(QpState::Reset), 0);
  EXPECT_EQ(l.b.modify_state(QpState::Init), 0);
  l.a.post_send(Link::wqe(WrOpcode::Send, 1, s, 64));
  // B in INIT drops every request in silence (IBA 10.3.1): nothing comes back, the local ACK
  // timer expires; retry_cnt 3: three retries, and the fourth expiry ends the WR.
  for (int i = 0; i < 4; ++i) {
    l.pump();
    EXPECT_TRUE(l.ha.scq.empty()) << i;
    l.expire_ack(l.ha, l.a);
  }
  ASSERT_EQ(l.ha.scq.size(), 1u);
  EXPECT_EQ(l.ha.scq[0].wc.status, WcStatus::RetryExcErr);
  EXPECT_EQ(l.a.state(), QpState::Error);
  EXPECT_EQ(l.a.stats().timeouts, 3u);
}

TEST(HcaTransport, DuplicatedAndReorderedPacketsStillDeliverEveryByteOnce) {
  model::FaultConfig f;
  f.dup = 0.05;
  f.reorder = 0.05;
  f.seed = 7;
  Link l(QpType::Rc, 256, 1, f);
  auto s = l.buf(l.ha, 0, 65536), r = l.buf(l.hb, 0, 65536);
  for (int i = 0; i < 20; ++i) l.b.post_recv(Link::recv(i, Link::Buf{r.addr + i * 2048u, r.key}, 2048));
  Link::ramp(l.ha, s.addr, 40000, 5);
  for (int i = 0; i < 20; ++i) l.a.post_send(Link::wqe(WrOpcode::Send, i, Link::Buf{s.addr + i * 2000u, s.key}, 2000));
  for (int round = 0; round < 50 && l.ha.scq.size() < 20; ++round) {
    l.pump();
    l.ab.release([&](const Packet& p, bool, const std::vector<uint8_t>& h, uint64_t k) { l.b.receive(p, h.data() + k); });
    l.pump();
    if (l.ha.timer_on && l.ha.scq.size() < 20) l.expire_ack(l.ha, l.a);
  }
  ASSERT_EQ(l.ha.scq.size(), 20u);
  ASSERT_EQ(l.hb.rcq.size(), 20u);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(l.ha.scq[i].wc.status, WcStatus::Success);
    EXPECT_EQ(l.hb.rcq[i].wc.wr_id, static_cast<uint64_t>(i));
    EXPECT_EQ(std::memcmp(l.hb.at(r.addr + i * 2048u), l.ha.at(s.addr + i * 2000u), 2000), 0) << i;
  }
  EXPECT_GT(l.ab.stats().duplicated + l.ab.stats().reordered, 0u);
}

TEST(HcaTransport, ALostReadResponsePacketGoesAgainFromTheMissingPsn) {
  Link l(QpType::Rc, 1024);
  auto back = l.buf(l.ha, 0, 8192), r = l.buf(l.hb, 0, 8192);
  Link::ramp(l.hb, r.addr, 5000, 9);
  l.a.post_send(Link::wqe(WrOpcode::RdmaRead, 1, back, 5000, r.addr, r.key));
  // The READ takes PSNs 100..104 (five response packets). Response 102 is lost: 103 shows the gap
  // at the requester, which asks again from 102 for the last 2952 B.
  Packet p;
  ASSERT_TRUE(l.a.next_request(1, p));
  EXPECT_EQ(p.op, Opcode::RcReadRequest);
  l.b.receive(p, nullptr);
  while (l.b.next_response(1, p)) {
    if (p.psn == 102) continue;
    l.a.receive(p, l.hb.at(p.va));
  }
  EXPECT_TRUE(l.ha.scq.empty());
  ASSERT_TRUE(l.a.next_request(1, p));
  EXPECT_EQ(p.op, Opcode::RcReadRequest);
  EXPECT_EQ(p.psn, 102u);
  EXPECT_EQ(p.va, r.addr + 2048);
  EXPECT_EQ(p.dma_len, 2952u);
  l.b.receive(p, nullptr);  // a duplicate READ: executed again for the part it asks
  while (l.b.next_response(1, p)) l.a.receive(p, l.hb.at(p.va));
  ASSERT_EQ(l.ha.scq.size(), 1u);
  EXPECT_EQ(l.ha.scq[0].wc.status, WcStatus::Success);
  EXPECT_EQ(std::memcmp(l.ha.at(back.addr), l.hb.at(r.addr), 5000), 0);
}

// ---- RNR ---------------------------------------------------------------------------------------

TEST(HcaTransport, RnrNakWaitsTheResponderTimerThenSucceedsOrRunsOut) {
  Link l;
  auto s = l.buf(l.ha, 0, 4096), r = l.buf(l.hb, 0, 4096);
  l.a.post_send(Link::wqe(WrOpcode::Send, 1, s, 64));
  l.pump();
  EXPECT_TRUE(l.ha.rnr_on);
  EXPECT_DOUBLE_EQ(l.ha.rnr_ns, 640000);  // min_rnr_timer 12: 0.64 ms (IBA table 45)
  EXPECT_FALSE(l.a.has_request());        // nothing is sent while the RNR timer runs
  l.b.post_recv(Link::recv(2, r, 4096));
  l.ha.rnr_on = false;
  l.a.rnr_timeout();
  l.pump();
  ASSERT_EQ(l.ha.scq.size(), 1u);
  EXPECT_EQ(l.ha.scq[0].wc.status, WcStatus::Success);
  EXPECT_EQ(l.a.stats().rnr_naks, 1u);
  // rnr_retry 2: the first try and two retries NAKed, the third RNR NAK ends the WR.
  l.a.post_send(Link::wqe(WrOpcode::Send, 3, s, 64));
  for (int i = 0; i < 3; ++i) {
    l.pump();
    if (i < 2) {
      ASSERT_TRUE(l.ha.rnr_on) << i;
      l.ha.rnr_on = false;
      l.a.rnr_timeout();
    }
  }
  ASSERT_EQ(l.ha.scq.size(), 2u);
  EXPECT_EQ(l.ha.scq[1].wc.status, WcStatus::RnrRetryExcErr);
  EXPECT_EQ(l.a.state(), QpState::Error);
}

// ---- the responder's errors (IBA 9.9.3.1: class C moves it to ERROR) -------------------------

TEST(HcaTransport, RemoteAccessErrorNaksWritesNothingAndErrsBothQps) {
  Link l;
  auto s = l.buf(l.ha, 0, 4096), ro = l.buf(l.hb, 0, 4096, sdp::kLocalWrite | sdp::kRemoteRead);
  l.a.post_send(Link::wqe(WrOpcode::RdmaWrite, 1, s, 64, ro.addr, ro.key));
  l.a.post_send(Link::wqe(WrOpcode::RdmaWrite, 2, s, 64, ro.addr, ro.key));
  l.pump();
  ASSERT_EQ(l.ha.scq.size(), 2u);
  EXPECT_EQ(l.ha.scq[0].wc.status, WcStatus::RemAccessErr);
  EXPECT_EQ(l.ha.scq[1].wc.status, WcStatus::WrFlushErr);
  EXPECT_EQ(l.hb.written, 0u);
  EXPECT_EQ(l.b.state(), QpState::Error);
  EXPECT_EQ(l.a.state(), QpState::Error);
}

TEST(HcaTransport, AnMrDeregisteredMidWriteRefusesItsRemainingPackets) {
  // A 5000 B WRITE at MTU 1024 is PSNs 100..104. B's MR goes as PSN 102 leaves A: the HCA looks
  // the key up for every packet, so 100 and 101 land (2 x 1024 = 2048 B) and 102 is NAKed with
  // remote access error (IBA 9.7.5.2.2); nothing after the dereg touches B's memory.
  Link l;
  auto s = l.buf(l.ha, 0, 8192), r = l.buf(l.hb, 0, 8192);
  l.a.post_send(Link::wqe(WrOpcode::RdmaWrite, 1, s, 5000, r.addr, r.key));
  l.pump([&](const Packet& p) {
    if (p.psn == 102) {
      EXPECT_TRUE(l.hb.mrs.dereg(r.key));
    }
    return false;
  });
  ASSERT_EQ(l.ha.scq.size(), 1u);
  EXPECT_EQ(l.ha.scq[0].wc.status, WcStatus::RemAccessErr);
  EXPECT_EQ(l.hb.written, 2048u);
  EXPECT_EQ(l.b.state(), QpState::Error);
}

TEST(HcaTransport, TheQpsAccessFlagsGateRemoteOperations) {
  Link l;
  auto s = l.buf(l.ha, 0, 4096), r = l.buf(l.hb, 0, 4096);
  QpAttr x = l.b.attr();
  x.qp_access_flags = sdp::kRemoteRead;  // the MR allows writes, the QP does not
  ASSERT_EQ(l.b.modify(x, attr::kAccessFlags), 0);
  l.a.post_send(Link::wqe(WrOpcode::RdmaWrite, 1, s, 64, r.addr, r.key));
  l.pump();
  ASSERT_EQ(l.ha.scq.size(), 1u);
  EXPECT_EQ(l.ha.scq[0].wc.status, WcStatus::RemInvReqErr);  // NAK invalid request (rxe check_op_valid)
  EXPECT_EQ(l.hb.written, 0u);
  EXPECT_EQ(l.b.state(), QpState::Error);
}

TEST(HcaTransport, ASendLongerThanItsReceiveIsALengthErrorOnBothSides) {
  Link l;
  auto s = l.buf(l.ha, 0, 4096), r = l.buf(l.hb, 0, 4096);
  l.b.post_recv(Link::recv(9, r, 100));
  l.a.post_send(Link::wqe(WrOpcode::Send, 1, s, 101));
  l.pump();
  ASSERT_EQ(l.hb.rcq.size(), 1u);
  EXPECT_EQ(l.hb.rcq[0].wc.status, WcStatus::LocLenErr);
  ASSERT_EQ(l.ha.scq.size(), 1u);
  EXPECT_EQ(l.ha.scq[0].wc.status, WcStatus::RemInvReqErr);
  EXPECT_EQ(l.b.state(), QpState::Error);
}

TEST(HcaTransport, AReceiveOutsideItsMrIsTheRespondersOperationalError) {
  Link l;
  auto s = l.buf(l.ha, 0, 4096), r = l.buf(l.hb, 0, 64);
  l.b.post_recv(Link::recv(9, r, 4096));  // 4096 B of an MR of 64
  l.a.post_send(Link::wqe(WrOpcode::Send, 1, s, 100));
  l.pump();
  ASSERT_EQ(l.hb.rcq.size(), 1u);
  EXPECT_EQ(l.hb.rcq[0].wc.status, WcStatus::LocProtErr);
  ASSERT_EQ(l.ha.scq.size(), 1u);
  EXPECT_EQ(l.ha.scq[0].wc.status, WcStatus::RemOpErr);  // NAK remote operational error
  EXPECT_EQ(l.hb.written, 0u);
}

// ---- the requester's own checks ----------------------------------------------------------------

TEST(HcaTransport, LocalErrorsCompleteInOrderThenFlushTheRest) {
  Link l;
  auto s = l.buf(l.ha, 0, 4096), r = l.buf(l.hb, 0, 4096);
  l.a.post_send(Link::wqe(WrOpcode::RdmaWrite, 1, s, 64, r.addr, r.key));
  SendWqe bad = Link::wqe(WrOpcode::RdmaWrite, 2, s, 64, r.addr, r.key);
  bad.wr.sg[0].lkey = 0x999;
  l.a.post_send(bad);
  l.a.post_send(Link::wqe(WrOpcode::RdmaWrite, 3, s, 64, r.addr, r.key));
  l.pump();
  ASSERT_EQ(l.ha.scq.size(), 3u);
  EXPECT_EQ(l.ha.scq[0].wc.status, WcStatus::Success);
  EXPECT_EQ(l.ha.scq[1].wc.status, WcStatus::LocProtErr);
  EXPECT_EQ(l.ha.scq[2].wc.status, WcStatus::WrFlushErr);
  EXPECT_EQ(l.hb.written, 64u);  // the third WRITE never left
}

TEST(HcaTransport, MaxRdAtomicHoldsTheSecondRead) {
  Link m(QpType::Rc, 1024, 1, {}, 1);
  auto mb = m.buf(m.ha, 0, 4096), mr = m.buf(m.hb, 0, 4096);
  m.a.post_send(Link::wqe(WrOpcode::RdmaRead, 1, mb, 64, mr.addr, mr.key));
  m.a.post_send(Link::wqe(WrOpcode::RdmaRead, 2, mb, 64, mr.addr, mr.key));
  Packet p;
  ASSERT_TRUE(m.a.next_request(1, p));
  EXPECT_FALSE(m.a.has_request());  // READ 2 is held by max_rd_atomic 1
  m.b.receive(p, nullptr);
  ASSERT_TRUE(m.b.next_response(1, p));
  m.a.receive(p, m.hb.at(p.va));
  EXPECT_TRUE(m.a.has_request());  // READ 1's response came: READ 2 may go
  m.pump();
  ASSERT_EQ(m.ha.scq.size(), 2u);
  EXPECT_EQ(m.ha.scq[1].wc.status, WcStatus::Success);
}

TEST(HcaTransport, ReadsBeyondMaxDestRdAtomicHoldNoMoreResponses) {
  // A requester given max_rd_atomic 4 against a responder's max_dest_rd_atomic 1 sends 3 READs
  // of 4 packets (4096 B at MTU 1024) at once. B has one slot: each new READ takes the previous
  // one's, and only READ 3's 4 response packets are queued, not 12.
  Link m(QpType::Rc, 1024, 1, {}, 4, 1);
  auto mb = m.buf(m.ha, 0, 16384), mr = m.buf(m.hb, 0, 16384);
  for (uint64_t id = 1; id <= 3; ++id)
    m.a.post_send(Link::wqe(WrOpcode::RdmaRead, id, mb, 4096, mr.addr + 4096 * (id - 1), mr.key));
  Packet p;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(m.a.next_request(1, p));
    m.b.receive(p, nullptr);
  }
  std::vector<uint32_t> psns;
  while (m.b.next_response(1, p)) psns.push_back(p.psn);
  // READ 1 is PSNs 100-103, READ 2 104-107, READ 3 108-111.
  EXPECT_EQ(psns, (std::vector<uint32_t>{108, 109, 110, 111}));
}

TEST(HcaTransport, AMessageOverMaxMsgSzIsALocalLengthError) {
  TestHca h;
  DeviceLimits lim;
  lim.max_msg_sz = 1000;
  QueuePair q(QpType::Rc, 0x48, h.pd, 8, 8, lim, h);
  ASSERT_EQ(q.modify_state(QpState::Init), 0);
  ASSERT_EQ(q.modify_state(QpState::Rtr), 0);
  ASSERT_EQ(q.modify_state(QpState::Rts), 0);
  const uint32_t key = h.mrs.reg(h.pd, kBase, 4096, sdp::kLocalWrite);
  q.post_send(Link::wqe(WrOpcode::Send, 1, Link::Buf{kBase, key}, 1001));
  Packet p;
  EXPECT_FALSE(q.next_request(1, p));
  ASSERT_EQ(h.scq.size(), 1u);
  EXPECT_EQ(h.scq[0].wc.status, WcStatus::LocLenErr);
  EXPECT_EQ(q.state(), QpState::Error);
}

// ---- UC and UD ---------------------------------------------------------------------------------

TEST(HcaTransport, UcDropsAMessageWithALostPacketAndTakesTheNext) {
  Link l(QpType::Uc, 1024);
  auto s = l.buf(l.ha, 0, 8192), r = l.buf(l.hb, 0, 8192);
  l.b.post_recv(Link::recv(1, r, 8192));
  l.b.post_recv(Link::recv(2, r, 8192));
  l.a.post_send(Link::wqe(WrOpcode::Send, 1, s, 3000));  // PSNs 100..102, 101 lost
  l.a.post_send(Link::wqe(WrOpcode::Send, 2, s, 500));   // PSN 103
  l.pump([](const Packet& p) { return p.psn == 101; });
  ASSERT_EQ(l.ha.scq.size(), 2u);  // UC: done once sent
  ASSERT_EQ(l.hb.rcq.size(), 1u);
  EXPECT_EQ(l.hb.rcq[0].wc.wr_id, 1u);  // the dropped message's receive WQE was used again
  EXPECT_EQ(l.hb.rcq[0].wc.byte_len, 500u);
  EXPECT_EQ(l.b.state(), QpState::Rts);
}

TEST(HcaTransport, UdChecksTheQkeyAndLeavesRoomForTheGrh) {
  Link l(QpType::Ud, 2048);
  auto s = l.buf(l.ha, 0, 4096), r = l.buf(l.hb, 0, 4096);
  std::memset(l.hb.at(r.addr), 0xEE, 4096);
  Link::ramp(l.ha, s.addr, 100, 1);
  l.b.post_recv(Link::recv(1, r, 1000));
  l.b.post_recv(Link::recv(2, r, 100));
  SendWqe w = Link::wqe(WrOpcode::Send, 1, s, 100);
  w.x.ud_qpn = 0x49;
  w.x.ud_qkey = 0x22222222;  // the wrong Q_Key: dropped
  l.a.post_send(w);
  w.x.ud_qkey = 0x11111111;
  l.a.post_send(w);
  l.a.post_send(w);  // 40 + 100 B for a receive of 100: LOC_LEN_ERR
  l.pump();
  EXPECT_EQ(l.ha.scq.size(), 3u);
  ASSERT_EQ(l.hb.rcq.size(), 2u);
  EXPECT_EQ(l.hb.rcq[0].wc.status, WcStatus::Success);
  EXPECT_EQ(l.hb.rcq[0].wc.byte_len, 140u);
  EXPECT_EQ(l.hb.rcq[0].src_qp, 0x48u);
  EXPECT_EQ(l.hb.at(r.addr)[39], 0);  // the GRH's room
  EXPECT_EQ(std::memcmp(l.hb.at(r.addr + 40), l.ha.at(s.addr), 100), 0);
  EXPECT_EQ(l.hb.rcq[1].wc.status, WcStatus::LocLenErr);
}

// ---- modify_qp and post checks -----------------------------------------------------------------

TEST(HcaTransport, ModifyTakesTheTablesAttributesAndRanges) {
  TestHca h;
  QueuePair q(QpType::Rc, 0x48, h.pd, 8, 8, DeviceLimits{}, h);
  QpAttr a;
  a.qp_state = QpState::Init;
  EXPECT_EQ(q.modify(a, attr::kState | attr::kPkeyIndex | attr::kPort), EINVAL);  // access flags required
  EXPECT_EQ(q.modify(a, attr::kState | attr::kPkeyIndex | attr::kPort | attr::kAccessFlags | attr::kTimeout),
            EINVAL);  // a timeout is not INIT's
  a.port_num = 2;
  EXPECT_EQ(q.modify(a, attr::kState | attr::kPkeyIndex | attr::kPort | attr::kAccessFlags), EINVAL);
  a.port_num = 1;
  EXPECT_EQ(q.modify(a, attr::kState | attr::kPkeyIndex | attr::kPort | attr::kAccessFlags), 0);
  a.qp_state = QpState::Rts;
  EXPECT_EQ(q.modify(a, attr::kState), EINVAL);  // INIT -> RTS skips RTR
  a.cur_qp_state = QpState::Rtr;
  a.qp_state = QpState::Init;
  EXPECT_EQ(q.modify(a, attr::kState | attr::kCurState), EINVAL);  // not the current state
  a.qp_state = QpState::Rtr;
  a.dlid = 1;
  a.path_mtu = 1500;  // not an IB MTU
  const unsigned rtr = attr::kState | attr::kAv | attr::kPathMtu | attr::kDestQpn | attr::kRqPsn |
                       attr::kMaxDestRdAtomic | attr::kMinRnrTimer;
  EXPECT_EQ(q.modify(a, rtr), EINVAL);
  a.path_mtu = 4096;
  a.max_dest_rd_atomic = 17;  // over the device's 16
  EXPECT_EQ(q.modify(a, rtr), EINVAL);
  a.max_dest_rd_atomic = 16;
  EXPECT_EQ(q.modify(a, rtr), 0);
  a.qp_state = QpState::Rts;
  a.retry_cnt = 8;
  const unsigned rts =
      attr::kState | attr::kSqPsn | attr::kTimeout | attr::kRetryCnt | attr::kRnrRetry | attr::kMaxQpRdAtomic;
  EXPECT_EQ(q.modify(a, rts), EINVAL);
  a.retry_cnt = 7;
  EXPECT_EQ(q.modify(a, rts), 0);
  EXPECT_EQ(q.state(), QpState::Rts);
  EXPECT_EQ(q.attr().path_mtu, 4096u);
  // The errno of each refused post (libmlx4 mlx4_post_send, ibv_post_send(3)).
  EXPECT_EQ(post_errno(PostError::QueueFull), ENOMEM);
  EXPECT_EQ(post_errno(PostError::InlineTooLong), ENOMEM);
  EXPECT_EQ(post_errno(PostError::InlineRead), EINVAL);
  EXPECT_EQ(post_errno(PostError::WrongState), EINVAL);
  SendWqe rd;
  rd.wr.opcode = WrOpcode::RdmaRead;
  rd.wr.inline_data = true;
  EXPECT_EQ(q.post_send(rd).error, PostError::InlineRead);
}

// ---- XRC (IBA 1.2.1 annex A14) -----------------------------------------------------------------

namespace {
/// An XRC link whose target side has two XRC SRQs in its domain 1, 0x40 in PD hb.pd and 0x41 in
/// a second PD (`pd2`), and one of domain 2 (0x42).
struct XrcLink : Link {
  XrcLink() : Link(QpType::XrcSend) {
    hb.xrcd = 1;
    pd2 = hb.mrs.alloc_pd();
    hb.srqs[0x40] = {1, hb.pd, {}, {}};
    hb.srqs[0x41] = {1, pd2, {}, {}};
    hb.srqs[0x42] = {2, hb.pd, {}, {}};
  }
  static SendWqe to_srq(SendWqe w, uint32_t srqn) {
    w.x.xrc_srqn = srqn;
    return w;
  }
  uint32_t pd2 = 0;
};
}  // namespace

TEST(HcaTransport, XrcSendLandsInTheSrqItsXrcethNamesAndCompletesOnThatSrqsCq) {
  XrcLink l;
  auto s = l.buf(l.ha, 0, 4096);
  const uint32_t k2 = l.hb.mrs.reg(l.pd2, kBase, 4096, sdp::kLocalWrite);  // the receive buffer, in SRQ 0x41's PD
  Link::ramp(l.ha, s.addr, 3000, 3);
  l.hb.srqs[0x40].wrs.push_back(Link::recv(40, {kBase + 8192, l.hb.mrs.reg(l.hb.pd, kBase + 8192, 4096, sdp::kLocalWrite)}, 4096));
  l.hb.srqs[0x41].wrs.push_back(Link::recv(41, {kBase, k2}, 4096));
  ASSERT_EQ(l.a.post_send(XrcLink::to_srq(Link::wqe(WrOpcode::Send, 1, s, 3000), 0x41)).post, Post::Accept);
  // 3000 B at MTU 1024: 3 packets, each an XRC request whose XRCETH names SRQ 0x41.
  int requests = 0;
  l.pump([&](const Packet& p) {
    EXPECT_TRUE(p.xrc);
    EXPECT_EQ(p.xrc_srqn, 0x41u);
    ++requests;
    return false;
  });
  EXPECT_EQ(requests, 3);
  ASSERT_EQ(l.hb.srqs[0x41].cq.size(), 1u);
  const Cqe& c = l.hb.srqs[0x41].cq[0];
  EXPECT_EQ(c.wc.wr_id, 41u);
  EXPECT_EQ(c.wc.status, WcStatus::Success);
  EXPECT_EQ(c.wc.byte_len, 3000u);
  EXPECT_EQ(c.wc.qp_num, 0x49u);  // the XRC receive QP (mlx4_poll_one: the CQE's QPN)
  EXPECT_EQ(c.src_qp, 0x48u);
  EXPECT_EQ(std::memcmp(l.hb.at(kBase), l.ha.at(s.addr), 3000), 0);
  EXPECT_EQ(l.hb.srqs[0x40].wrs.size(), 1u);  // the other SRQ's WR untouched
  EXPECT_TRUE(l.hb.rcq.empty());
  ASSERT_EQ(l.ha.scq.size(), 1u);
  EXPECT_EQ(l.ha.scq[0].wc.status, WcStatus::Success);
}

TEST(HcaTransport, XrcRdmaAndAtomicsAreCheckedInTheNamedSrqsPd) {
  // IBA A14: an XRC target has no PD; a request's R_Key is checked in the PD of the XRC SRQ its
  // XRCETH names. The MR is in pd2 (SRQ 0x41's): through 0x41 the WRITE and the fetch-and-add
  // land, through 0x40 (PD hb.pd) the same key is another PD's: NAK remote access error.
  XrcLink l;
  auto s = l.buf(l.ha, 0, 4096), back = l.buf(l.ha, 8192, 64);
  const uint32_t rk = l.hb.mrs.reg(l.pd2, kBase, 4096, sdp::kLocalWrite | kRemoteAll);
  Link::ramp(l.ha, s.addr, 100, 9);
  l.a.post_send(XrcLink::to_srq(Link::wqe(WrOpcode::RdmaWrite, 1, s, 100, kBase + 16, rk), 0x41));
  SendWqe fa = XrcLink::to_srq(Link::wqe(WrOpcode::AtomicFetchAdd, 2, back, 8, kBase + 512, rk), 0x41);
  fa.wr.compare_add = 5;
  l.a.post_send(fa);
  l.pump();
  ASSERT_EQ(l.ha.scq.size(), 2u);
  EXPECT_EQ(l.ha.scq[0].wc.status, WcStatus::Success);
  EXPECT_EQ(l.ha.scq[1].wc.status, WcStatus::Success);
  EXPECT_EQ(std::memcmp(l.hb.at(kBase + 16), l.ha.at(s.addr), 100), 0);
  uint64_t v = 0;
  std::memcpy(&v, l.hb.at(kBase + 512), 8);
  EXPECT_EQ(v, 5u);
  l.a.post_send(XrcLink::to_srq(Link::wqe(WrOpcode::RdmaWrite, 3, s, 100, kBase + 16, rk), 0x40));
  l.pump();
  ASSERT_EQ(l.ha.scq.size(), 3u);
  EXPECT_EQ(l.ha.scq[2].wc.status, WcStatus::RemAccessErr);
  EXPECT_EQ(l.b.state(), QpState::Error);
}

TEST(HcaTransport, XrcAnUnknownSrqOrOneOfAnotherDomainIsAnInvalidRequest) {
  for (uint32_t srqn : {0x99u, 0x42u}) {  // no such SRQ; an SRQ of XRC domain 2
    XrcLink l;
    auto s = l.buf(l.ha, 0, 4096);
    l.hb.srqs[0x42].wrs.push_back(Link::recv(42, {kBase, l.hb.mrs.reg(l.hb.pd, kBase, 4096, sdp::kLocalWrite)}, 4096));
    l.a.post_send(XrcLink::to_srq(Link::wqe(WrOpcode::Send, 1, s, 64), srqn));
    l.a.post_send(XrcLink::to_srq(Link::wqe(WrOpcode::Send, 2, s, 64), 0x40));
    l.pump();
    // Class C (IBA 9.9.3.1.3): NAK invalid request, the requester's WR completes
    // REM_INV_REQ_ERR and the next flushes; the target goes to ERROR and consumes nothing.
    ASSERT_EQ(l.ha.scq.size(), 2u);
    EXPECT_EQ(l.ha.scq[0].wc.status, WcStatus::RemInvReqErr);
    EXPECT_EQ(l.ha.scq[1].wc.status, WcStatus::WrFlushErr);
    EXPECT_EQ(l.b.state(), QpState::Error);
    EXPECT_EQ(l.hb.srqs[0x42].wrs.size(), 1u);
    EXPECT_TRUE(l.hb.srqs[0x42].cq.empty());
    EXPECT_NE(l.b.reason().find(srqn == 0x99 ? "no XRC SRQ" : "another XRC domain"), std::string::npos) << l.b.reason();
  }
}

TEST(HcaTransport, XrcPacketsReachXrcQpsOnlyAndTheTargetPostsNothing) {
  // IBA 9.6.1.2: the BTH transport must be the QP's. An RC QP drops an XRC request in silence, an
  // XRC target an RC one; the target has no send queue (mlx4 creates none for IBV_QPT_XRC_RECV).
  Packet p;
  p.op = p.last_op = Opcode::RcSendOnly;
  p.psn = 100;
  p.dest_qpn = 0x49;
  p.ack_req = true;
  p.xrc = true;
  p.xrc_srqn = 0x40;
  Link rc;
  auto r = rc.buf(rc.hb, 0, 4096);
  ASSERT_EQ(rc.b.post_recv(Link::recv(1, r, 4096)).post, Post::Accept);
  rc.b.receive(p, nullptr);
  EXPECT_TRUE(rc.hb.rcq.empty());
  EXPECT_FALSE(rc.b.has_response());
  XrcLink x;
  x.hb.srqs[0x40].wrs.push_back(Link::recv(7, {kBase, x.hb.mrs.reg(x.hb.pd, kBase, 4096, sdp::kLocalWrite)}, 4096));
  p.xrc = false;
  x.b.receive(p, nullptr);
  EXPECT_TRUE(x.hb.srqs[0x40].cq.empty());
  EXPECT_FALSE(x.b.has_response());
  p.xrc = true;  // the same SEND Only of 0 bytes as XRC: received, ACKed with an XRC opcode
  x.b.receive(p, nullptr);
  ASSERT_EQ(x.hb.srqs[0x40].cq.size(), 1u);
  EXPECT_EQ(x.hb.srqs[0x40].cq[0].wc.wr_id, 7u);
  EXPECT_EQ(x.hb.srqs[0x40].cq[0].wc.byte_len, 0u);
  Packet ack;
  ASSERT_TRUE(x.b.next_response(1, ack));
  EXPECT_EQ(ack.op, Opcode::RcAcknowledge);
  EXPECT_TRUE(ack.xrc);
  EXPECT_EQ(ack.psn, 100u);
  auto s = x.buf(x.hb, 0, 64);
  EXPECT_EQ(x.b.post_send(Link::wqe(WrOpcode::Send, 1, s, 8)).post, Post::Refuse);
}
