// The conformance cases of the verbs contract (the backends and the fixture: tests/hca_conformance.h):
// CQ overrun depth, the opcode of flushed send WRs, MR bounds that wrap past 2^64, PDs, the
// responder's state after a remote access error, requests to a peer that is not in RTR/RTS, QP
// states and WR checks, message size, modify_qp's ranges, flush order, RNR, UD receive failures.
#include "tests/hca_conformance.h"

// ---- success paths ---------------------------------------------------------------------------

TYPED_TEST(HcaConformance, SendRdmaWriteAndRdmaReadMoveTheBytes) {
  OPEN_OR_SKIP();
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll), back = this->buf(0, 4096, kAll);
    auto r = this->buf(1, 4096, kAll);
    this->fill(0, a.addr, 4096, 7);
    // SEND of 1000 B from two SGEs (600 + 400) into a receive of two SGEs (300 + 3796).
    sdp::RecvWr rw = this->recv(50, r, 300);
    rw.sg[1] = {r.addr + 300, 3796, r.key};
    rw.num_sge = 2;
    this->b.qp(1).post_recv(rw);
    sdp::SendWr s = this->wr(WrOpcode::Send, 1, a, 600);
    s.sg[1] = {a.addr + 600, 400, a.key};
    s.num_sge = 2;
    this->b.qp(0).post_send(s);
    sdp::Wc wc = this->next(0);
    EXPECT_EQ(wc.wr_id, 1u);
    EXPECT_EQ(wc.status, WcStatus::Success);
    EXPECT_EQ(wc.opcode, WcOpcode::Send);
    EXPECT_EQ(wc.qp_num, this->b.qp(0).qp_num());
    wc = this->next(1);
    EXPECT_EQ(wc.wr_id, 50u);
    EXPECT_EQ(wc.status, WcStatus::Success);
    EXPECT_EQ(wc.opcode, WcOpcode::Recv);
    EXPECT_EQ(wc.byte_len, 1000u);
    EXPECT_EQ(wc.qp_num, this->b.qp(1).qp_num());
    EXPECT_EQ(this->read(1, r.addr, 1000), this->ramp(1000, 7));

    // RDMA WRITE of 2048 B at offset 1024 of the responder's buffer.
    this->fill(0, a.addr, 2048, 100);
    this->b.qp(0).post_send(this->wr(WrOpcode::RdmaWrite, 2, a, 2048, r.addr + 1024, r.key));
    wc = this->next(0);
    EXPECT_EQ(wc.wr_id, 2u);
    EXPECT_EQ(wc.status, WcStatus::Success);
    EXPECT_EQ(wc.opcode, WcOpcode::RdmaWrite);
    // The completion says the responder acknowledged the WRITE, not that its CPU sees the data
    // yet: the responder's DMA write is posted (the simulated HCA drains its packet store after
    // the ACK, model::receive_store_ns). Look once the write has had its time.
    this->b.pause();
    EXPECT_EQ(this->read(1, r.addr + 1024, 2048), this->ramp(2048, 100));
    EXPECT_EQ(this->read(1, r.addr + 1000, 24), std::vector<uint8_t>(24, 0));  // between the SEND's bytes and the WRITE's

    // RDMA READ of those 2048 B back.
    this->b.qp(0).post_send(this->wr(WrOpcode::RdmaRead, 3, back, 2048, r.addr + 1024, r.key));
    wc = this->next(0);
    EXPECT_EQ(wc.wr_id, 3u);
    EXPECT_EQ(wc.status, WcStatus::Success);
    EXPECT_EQ(wc.opcode, WcOpcode::RdmaRead);
    EXPECT_EQ(this->read(0, back.addr, 2048), this->ramp(2048, 100));
  });
}

TYPED_TEST(HcaConformance, InlineSendUpToMaxInlineData) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.run([&] {
    const uint32_t n = this->b.max_inline();
    EXPECT_EQ(n, 912u);  // both emulators: mlx4's 912 B (perftest MAX_INLINE)
    auto a = this->buf(0, 4096, kAll);
    auto r = this->buf(1, 4096, kAll);
    this->fill(0, a.addr, n, 3);
    this->b.qp(1).post_recv(this->recv(9, r, 4096));
    sdp::SendWr s = this->wr(WrOpcode::Send, 4, a, n);
    s.inline_data = true;
    this->b.qp(0).post_send(s);
    EXPECT_EQ(this->next(0).status, WcStatus::Success);
    const sdp::Wc wc = this->next(1);
    EXPECT_EQ(wc.status, WcStatus::Success);
    EXPECT_EQ(wc.byte_len, n);
    EXPECT_EQ(this->read(1, r.addr, n), this->ramp(n, 3));
  });
}

// ---- memory regions --------------------------------------------------------------------------

TYPED_TEST(HcaConformance, MrBoundsAreExact) {
  OPEN_OR_SKIP();
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll);
    auto r = this->buf(1, 4096, kAll);
    auto r2 = this->buf(1, 4096, kAll);
    EXPECT_NE(r.key, r2.key);  // one key per MR
    this->fill(0, a.addr, 16, 1);
    // The MR's last 8 bytes: allowed.
    this->b.qp(0).post_send(this->wr(WrOpcode::RdmaWrite, 1, a, 8, r.addr + 4096 - 8, r.key));
    EXPECT_EQ(this->next(0).status, WcStatus::Success);
    EXPECT_EQ(this->read(1, r.addr + 4088, 8), this->ramp(8, 1));
    // 9 bytes from there: one past the end, the responder refuses and writes nothing.
    this->fill(0, a.addr, 16, 0xA0);
    this->b.qp(0).post_send(this->wr(WrOpcode::RdmaWrite, 2, a, 9, r.addr + 4096 - 8, r.key));
    const sdp::Wc wc = this->next(0);
    EXPECT_EQ(wc.wr_id, 2u);
    EXPECT_EQ(wc.status, WcStatus::RemAccessErr);
    EXPECT_EQ(this->read(1, r.addr + 4088, 8), this->ramp(8, 1));
  });
}

// Divergence 3: sim's check was addr + len <= mr.addr + mr.len, which wraps.
TYPED_TEST(HcaConformance, MrBoundsDoNotWrapPast2To64) {
  OPEN_OR_SKIP();
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll);
    auto r = this->buf(1, 4096, kAll);
    this->fill(0, a.addr, 16, 0x55);
    // remote_addr 2^64 - 8 with 16 bytes: addr + len wraps to 8, "inside" by the naive check.
    this->b.qp(0).post_send(this->wr(WrOpcode::RdmaWrite, 7, a, 16, UINT64_MAX - 7, r.key));
    const sdp::Wc wc = this->next(0);
    EXPECT_EQ(wc.wr_id, 7u);
    EXPECT_EQ(wc.status, WcStatus::RemAccessErr);
    EXPECT_EQ(this->read(1, r.addr, 16), std::vector<uint8_t>(16, 0));
    // Registering a range that wraps is refused.
    EXPECT_THROW(this->b.qp(0).reg_mr(UINT64_MAX - 7, 16, sdp::kLocalWrite), sdp::VerbsError);
  });
}

TYPED_TEST(HcaConformance, LocalSgeOutsideItsMrIsLocalProtectionError) {
  OPEN_OR_SKIP();
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll);
    auto r = this->buf(1, 4096, kAll);
    sdp::SendWr w = this->wr(WrOpcode::RdmaWrite, 5, a, 4097, r.addr, r.key);  // one byte past the lkey's MR
    this->b.qp(0).post_send(w);
    const sdp::Wc wc = this->next(0);
    EXPECT_EQ(wc.wr_id, 5u);
    EXPECT_EQ(wc.status, WcStatus::LocProtErr);
    EXPECT_EQ(sdp::wc_status_code(wc.status), 4);  // IBV_WC_LOC_PROT_ERR
  });
}

TYPED_TEST(HcaConformance, RemoteWriteNeedsRemoteWriteAccess) {
  OPEN_OR_SKIP();
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll);
    auto ro = this->buf(1, 4096, sdp::kLocalWrite | sdp::kRemoteRead);  // no kRemoteWrite
    this->fill(0, a.addr, 64, 9);
    this->b.qp(0).post_send(this->wr(WrOpcode::RdmaWrite, 11, a, 64, ro.addr, ro.key));
    const sdp::Wc wc = this->next(0);
    EXPECT_EQ(wc.wr_id, 11u);
    EXPECT_EQ(wc.status, WcStatus::RemAccessErr);
    EXPECT_EQ(sdp::wc_status_code(wc.status), 10);  // IBV_WC_REM_ACCESS_ERR
    EXPECT_EQ(this->read(1, ro.addr, 64), std::vector<uint8_t>(64, 0));
  });
}

TYPED_TEST(HcaConformance, RemoteReadNeedsRemoteReadAccess) {
  OPEN_OR_SKIP();
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll);
    auto wo = this->buf(1, 4096, sdp::kLocalWrite | sdp::kRemoteWrite);  // no kRemoteRead
    this->b.qp(0).post_send(this->wr(WrOpcode::RdmaRead, 12, a, 64, wo.addr, wo.key));
    const sdp::Wc wc = this->next(0);
    EXPECT_EQ(wc.wr_id, 12u);
    EXPECT_EQ(wc.status, WcStatus::RemAccessErr);
  });
}

TYPED_TEST(HcaConformance, RemoteAccessErrorTakesTheResponderToErrorToo) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll);
    auto ro = this->buf(1, 4096, sdp::kLocalWrite | sdp::kRemoteRead);
    this->b.qp(0).post_send(this->wr(WrOpcode::RdmaWrite, 13, a, 64, ro.addr, ro.key));
    EXPECT_EQ(this->next(0).status, WcStatus::RemAccessErr);
    this->b.pause();
    // IBA 9.9.3.1.2 (class C, responder): the NAK'ing responder's QP goes to ERROR as well.
    EXPECT_EQ(this->b.state(0), QpState::Error);
    EXPECT_EQ(this->b.state(1), QpState::Error);
  });
}

TYPED_TEST(HcaConformance, LocalSgeInAnMrOfAnotherPdIsLocalProtectionError) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll);
    auto r = this->buf(1, 4096, kAll);
    a.key = this->b.reg_other_pd(0, a.addr, 4096, kAll);  // same bytes, the MR of another PD
    this->b.qp(0).post_send(this->wr(WrOpcode::RdmaWrite, 14, a, 64, r.addr, r.key));
    const sdp::Wc wc = this->next(0);
    EXPECT_EQ(wc.wr_id, 14u);
    EXPECT_EQ(wc.status, WcStatus::LocProtErr);  // IBA 10.6.3.2: an lkey serves its PD's QPs only
  });
}

TYPED_TEST(HcaConformance, RkeyOfAnMrOfAnotherPdIsRemoteAccessError) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll);
    auto r = this->buf(1, 4096, kAll);
    this->fill(0, a.addr, 64, 3);
    const uint32_t other = this->b.reg_other_pd(1, r.addr, 4096, kAll);
    this->b.qp(0).post_send(this->wr(WrOpcode::RdmaWrite, 15, a, 64, r.addr, other));
    const sdp::Wc wc = this->next(0);
    EXPECT_EQ(wc.wr_id, 15u);
    EXPECT_EQ(wc.status, WcStatus::RemAccessErr);
    EXPECT_EQ(this->read(1, r.addr, 64), std::vector<uint8_t>(64, 0));  // nothing written
  });
}

TYPED_TEST(HcaConformance, RequestsToAPeerNotInRtrOrRtsEndInRetryExceeded) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll);
    auto r = this->buf(1, 4096, kAll);
    this->b.to_error(1);
    this->b.pause();
    // The responder in ERROR drops every request (IBA 10.3.1: no packets are processed in the
    // Error state), so no ACK comes: retry_cnt 7 retries of the 67.1 ms timer, then
    // RETRY_EXC_ERR, and the rest flush.
    this->b.qp(0).post_send(this->wr(WrOpcode::Send, 16, a, 64));
    this->b.qp(0).post_send(this->wr(WrOpcode::RdmaWrite, 17, a, 64, r.addr, r.key));
    this->b.qp(0).post_send(this->wr(WrOpcode::RdmaRead, 18, a, 64, r.addr, r.key));
    sdp::Wc wc = this->next(0);
    EXPECT_EQ(wc.wr_id, 16u);
    EXPECT_EQ(wc.status, WcStatus::RetryExcErr);
    EXPECT_EQ(sdp::wc_status_code(wc.status), 12);  // IBV_WC_RETRY_EXC_ERR
    for (uint64_t id : {17u, 18u}) {
      wc = this->next(0);
      EXPECT_EQ(wc.wr_id, id);
      EXPECT_EQ(wc.status, WcStatus::WrFlushErr);
    }
    EXPECT_EQ(this->b.state(0), QpState::Error);
    EXPECT_EQ(this->read(1, r.addr, 64), std::vector<uint8_t>(64, 0));
  });
}

// ---- QP state machine and WR checks ----------------------------------------------------------

TYPED_TEST(HcaConformance, QpStateTransitionsAndPostsInTheWrongState) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.run([&] {
    sdp::Verbs& q = this->b.fresh();
    auto a = this->buf(0, 4096, kAll);
    const sdp::RecvWr r = this->recv(21, a, 64);
    const sdp::SendWr s = this->wr(WrOpcode::RdmaWrite, 22, a, 64, a.addr, a.key);
    EXPECT_EQ(this->b.fresh_state(), QpState::Reset);
    EXPECT_THROW(q.post_send(s), sdp::VerbsError);  // RESET: no posts
    EXPECT_THROW(q.post_recv(r), sdp::VerbsError);
    EXPECT_THROW(this->b.modify_fresh(QpState::Rts), sdp::VerbsError);  // RESET -> RTS skips INIT, RTR
    EXPECT_THROW(this->b.modify_fresh(QpState::Rtr), sdp::VerbsError);
    this->b.modify_fresh(QpState::Init);
    EXPECT_EQ(this->b.fresh_state(), QpState::Init);
    EXPECT_NO_THROW(q.post_recv(r));                // INIT: receives may be posted
    EXPECT_THROW(q.post_send(s), sdp::VerbsError);  // sends need RTS
    this->b.modify_fresh(QpState::Error);
    EXPECT_EQ(this->b.fresh_state(), QpState::Error);
    std::array<sdp::Wc, 4> wc{};
    ASSERT_EQ(q.poll_cq(wc), 1);  // the receive posted in INIT flushed
    EXPECT_EQ(wc[0].wr_id, 21u);
    EXPECT_EQ(wc[0].status, WcStatus::WrFlushErr);
    EXPECT_EQ(wc[0].opcode, WcOpcode::Recv);
    q.post_send(s);  // ERROR: accepted, completes at once with WR_FLUSH_ERR
    ASSERT_EQ(q.poll_cq(wc), 1);
    EXPECT_EQ(wc[0].wr_id, 22u);
    EXPECT_EQ(wc[0].status, WcStatus::WrFlushErr);
    EXPECT_EQ(wc[0].opcode, WcOpcode::RdmaWrite);
    EXPECT_THROW(this->b.modify_fresh(QpState::Init), sdp::VerbsError);  // ERROR -> INIT: via RESET only
    q.post_recv(r);  // flushed into the CQ, then RESET empties it
    this->b.modify_fresh(QpState::Reset);
    EXPECT_EQ(q.poll_cq(wc), 0);
    this->b.modify_fresh(QpState::Init);
    EXPECT_EQ(this->b.fresh_state(), QpState::Init);
  });
}

TYPED_TEST(HcaConformance, WrChecksRefuseTooManySgesAndTooLongInline) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll);
    auto r = this->buf(1, 4096, kAll);
    sdp::SendWr s = this->wr(WrOpcode::Send, 1, a, 8);
    s.num_sge = sdp::kMaxSge + 1;
    EXPECT_THROW(this->b.qp(0).post_send(s), sdp::VerbsError);
    sdp::RecvWr rw = this->recv(2, r, 8);
    rw.num_sge = sdp::kMaxSge + 1;
    EXPECT_THROW(this->b.qp(1).post_recv(rw), sdp::VerbsError);
    sdp::SendWr in = this->wr(WrOpcode::Send, 3, a, this->b.max_inline() + 1);
    in.inline_data = true;
    EXPECT_THROW(this->b.qp(0).post_send(in), sdp::VerbsError);  // libmlx4: ENOMEM
    sdp::SendWr rd = this->wr(WrOpcode::RdmaRead, 4, a, 8, r.addr, r.key);
    rd.inline_data = true;
    EXPECT_THROW(this->b.qp(0).post_send(rd), sdp::VerbsError);  // nothing to gather inline
    // None of them reached the QP: it is still RTS, nothing completed.
    EXPECT_EQ(this->b.state(0), QpState::Rts);
    EXPECT_EQ(this->b.state(1), QpState::Rts);
    this->b.pause();
    EXPECT_TRUE(this->drain(0).empty());
    EXPECT_TRUE(this->drain(1).empty());
  });
}

// ibv_post_send(3) (rdma-core libibverbs/man/ibv_post_send.3): IBV_SEND_INLINE is "valid only
// for Send and RDMA Write"; an RDMA READ has nothing to gather. The core refuses it with EINVAL
// (hca/qp.h PostError::InlineRead), on both emulators the same. rdma-core 44's libmlx4 does not
// check the opcode (providers/mlx4/qp.c mlx4_post_send copies the gather list into the WQE as
// inline data and returns 0), so a ConnectX-3 is not held to this: the case needs the errno of a
// backend's own post and skips on the hardware.
TYPED_TEST(HcaConformance, InlineRdmaReadIsRefusedWithEinval) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll);
    auto r = this->buf(1, 4096, kAll);
    sdp::SendWr rd = this->wr(WrOpcode::RdmaRead, 4, a, 8, r.addr, r.key);
    rd.inline_data = true;
    EXPECT_EQ(this->b.post_errno(0, rd), EINVAL);
    rd.inline_data = false;  // the same WR without the flag is a good one
    EXPECT_EQ(this->b.post_errno(0, rd), 0);
    const sdp::Wc wc = this->next(0);
    EXPECT_EQ(wc.wr_id, 4u);
    EXPECT_EQ(wc.status, WcStatus::Success);
    this->b.pause();
    EXPECT_TRUE(this->drain(0).empty());  // the refused one left no completion
    EXPECT_EQ(this->b.state(0), QpState::Rts);
  });
}

// ---- message size ----------------------------------------------------------------------------

// The largest message is the device's max_msg_sz, hca::DeviceLimits (ConnectX-3: 0x40000000,
// ibv_devinfo -v; the platform files' hca.max_msg_size for sim), checked by the core's requester
// alone (hca/requester.cpp) before a packet leaves. A WR over it completes with a local length
// error (IBA 1.3 11.6.2, Local Length Error: a send WR's data segments total more than the CA's
// message length) and, as any send error, takes the QP to ERROR (IBA 1.3 10.3.1). The two SGEs
// gather the same 512 MiB MR: no byte of it is touched.
TYPED_TEST(HcaConformance, MessageOverMaxMsgSzIsLocalLengthError) {
  Caps c;
  c.memory = (1u << 29) + (16u << 20);
  OPEN_OR_SKIP(c);
  NEEDS_INTERNALS();
  this->b.run([&] {
    const uint64_t max = this->b.max_msg_sz();
    EXPECT_EQ(max, hca::DeviceLimits{}.max_msg_sz);
    EXPECT_EQ(max, 0x40000000u);
    auto big = this->buf(0, (1u << 29) + 1, kAll);
    auto r = this->buf(1, 4096, kAll);
    sdp::SendWr w = this->wr(WrOpcode::RdmaWrite, 61, big, 1u << 29, r.addr, r.key);
    w.sg[1] = {big.addr, (1u << 29) + 1, big.key};
    w.num_sge = 2;
    ASSERT_EQ(w.length(), max + 1);
    this->b.qp(0).post_send(w);
    const sdp::Wc wc = this->next(0);
    EXPECT_EQ(wc.wr_id, 61u);
    EXPECT_EQ(wc.status, WcStatus::LocLenErr);
    EXPECT_EQ(sdp::wc_status_code(wc.status), 1);  // IBV_WC_LOC_LEN_ERR
    EXPECT_EQ(this->b.state(0), QpState::Error);
    this->b.pause();
    EXPECT_EQ(this->b.state(1), QpState::Rts);  // nothing reached the responder
    EXPECT_TRUE(this->drain(1).empty());
    EXPECT_EQ(this->read(1, r.addr, 64), std::vector<uint8_t>(64, 0));
  });
}

// ---- modify_qp -------------------------------------------------------------------------------

namespace {
/// RTR -> RTS with every attribute IBA 1.3 table 92 requires (hca/qp.h modify_rule).
constexpr unsigned kToRts = hca::attr::kState | hca::attr::kSqPsn | hca::attr::kTimeout | hca::attr::kRetryCnt |
                            hca::attr::kRnrRetry | hca::attr::kMaxQpRdAtomic;
hca::QpAttr to_rts(hca::QpAttr a) {
  a.qp_state = QpState::Rts;
  a.sq_psn = 0;
  a.timeout = 18;
  a.retry_cnt = 5;
  a.rnr_retry = 3;
  a.max_rd_atomic = 1;
  return a;
}
}  // namespace

// The ranges of ibv_modify_qp(3)'s RTS attributes: the local ACK timeout is a 5-bit code (IBA 1.3
// 9.7.6.1.3: 4.096 us x 2^timeout), retry_cnt and rnr_retry 3-bit counts (IBA 1.3 9.7.5.2.8,
// 9.7.6.1.3; 7 = retry for ever for rnr_retry). The core refuses a value outside them with EINVAL
// and leaves the QP as it was (hca/qp.h check_attr), as rxe does for the timeout (Linux
// drivers/infiniband/sw/rxe/rxe_qp.c rxe_qp_chk_attr: "invalid QP timeout %d > 31", -EINVAL). The
// mlx4 kernel driver does not range-check these three (drivers/infiniband/hw/mlx4/qp.c
// __mlx4_ib_modify_qp shifts retry_cnt << 16 and rnr_retry << 13 into the QP context as given):
// the case needs a backend's fresh QP and skips on the hardware.
TYPED_TEST(HcaConformance, ModifyWithAnAttributeOutOfRangeIsRefusedAndTheQpStays) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.run([&] {
    this->b.modify_fresh(QpState::Init);
    this->b.fresh_to_rtr();
    ASSERT_EQ(this->b.fresh_state(), QpState::Rtr);
    const hca::QpAttr before = this->b.fresh_attr();
    hca::QpAttr a = to_rts(before);
    a.timeout = 32;
    EXPECT_EQ(this->b.modify_fresh(a, kToRts), EINVAL);
    a = to_rts(before);
    a.retry_cnt = 8;
    EXPECT_EQ(this->b.modify_fresh(a, kToRts), EINVAL);
    a = to_rts(before);
    a.rnr_retry = 8;
    EXPECT_EQ(this->b.modify_fresh(a, kToRts), EINVAL);
    // Refused: still RTR with the attributes it had.
    EXPECT_EQ(this->b.fresh_state(), QpState::Rtr);
    EXPECT_EQ(this->b.fresh_attr().timeout, before.timeout);
    EXPECT_EQ(this->b.fresh_attr().retry_cnt, before.retry_cnt);
    EXPECT_EQ(this->b.fresh_attr().rnr_retry, before.rnr_retry);
    // The top of each range is allowed and kept.
    a = to_rts(before);
    a.timeout = 31;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    EXPECT_EQ(this->b.modify_fresh(a, kToRts), 0);
    EXPECT_EQ(this->b.fresh_state(), QpState::Rts);
    EXPECT_EQ(this->b.fresh_attr().timeout, 31);
    EXPECT_EQ(this->b.fresh_attr().retry_cnt, 7);
    EXPECT_EQ(this->b.fresh_attr().rnr_retry, 7);
  });
}

// RTS is entered from RTR only (IBA 1.3 10.3.1 figure 124; SQD and SQE are not emulated): the
// kernel's ib_modify_qp_is_ok (drivers/infiniband/core/verbs.c qp_state_table) has no RESET,
// INIT or ERROR -> RTS entry, and mlx4's modify_qp returns -EINVAL when it says no
// (drivers/infiniband/hw/mlx4/qp.c _mlx4_ib_modify_qp). Refused, not ignored: the state stays.
TYPED_TEST(HcaConformance, ModifyToRtsFromAStateOtherThanRtrIsRefused) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.run([&] {
    const hca::QpAttr a = to_rts(this->b.fresh_attr());
    EXPECT_EQ(this->b.modify_fresh(a, kToRts), EINVAL);  // RESET -> RTS
    EXPECT_EQ(this->b.fresh_state(), QpState::Reset);
    this->b.modify_fresh(QpState::Init);
    EXPECT_EQ(this->b.modify_fresh(a, kToRts), EINVAL);  // INIT -> RTS, with every RTS attribute
    EXPECT_EQ(this->b.fresh_state(), QpState::Init);
    EXPECT_THROW(this->b.modify_fresh(QpState::Rts), sdp::VerbsError);
    EXPECT_EQ(this->b.fresh_state(), QpState::Init);
    this->b.modify_fresh(QpState::Error);
    EXPECT_EQ(this->b.modify_fresh(a, kToRts), EINVAL);  // ERROR -> RTS
    EXPECT_THROW(this->b.modify_fresh(QpState::Rts), sdp::VerbsError);
    EXPECT_EQ(this->b.fresh_state(), QpState::Error);
  });
}

// ---- CQ --------------------------------------------------------------------------------------

// Divergence 1: sim overran when a completion found cq_entries waiting, emu only after writing
// one more. The core: a CQ of depth N holds N; the (N+1)-th unpolled completion is the overrun.
TYPED_TEST(HcaConformance, CqOfDepthFourHoldsFourAndTheFifthOverruns) {
  Caps c;
  c.cq_entries = 4;
  c.max_send_wr = 8;
  OPEN_OR_SKIP(c);
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll);
    auto r = this->buf(1, 4096, kAll);
    for (uint64_t i = 0; i < 4; ++i) this->b.qp(0).post_send(this->wr(WrOpcode::RdmaWrite, i, a, 64, r.addr, r.key));
    this->b.pause();  // all four completed, none polled: the CQ is full, not overrun
    if (TypeParam::kInternals) { EXPECT_EQ(this->b.state(0), QpState::Rts); }
    this->b.qp(0).post_send(this->wr(WrOpcode::RdmaWrite, 4, a, 64, r.addr, r.key));
    this->b.pause();
    if (TypeParam::kInternals) { EXPECT_EQ(this->b.state(0), QpState::Error); }  // the overrun
    const std::vector<sdp::Wc> all = this->drain(0);
    ASSERT_EQ(all.size(), 4u);  // the four; the fifth's CQE is lost, nothing is written after it
    for (uint64_t i = 0; i < 4; ++i) {
      EXPECT_EQ(all[i].wr_id, i);
      EXPECT_EQ(all[i].status, WcStatus::Success);
    }
  });
}

// ---- flush -----------------------------------------------------------------------------------

// Divergence 2: sim flushed every send WR as IBV_WC_SEND, emu with its own opcode. The core:
// the WR's own opcode (hca/qp.h; ibv_poll_cq(3) leaves it undefined on an error, so a real
// device is not held to it).
TYPED_TEST(HcaConformance, FlushCompletesOutstandingSendsThenReceivesInOrder) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll), back = this->buf(0, 4096, kAll);
    auto r = this->buf(1, 4096, kAll);
    this->b.qp(0).post_recv(this->recv(100, back, 64));
    this->b.qp(0).post_recv(this->recv(101, back, 64));
    // B has no receive: the SEND is RNR NAKed for ever (rnr_retry 7), the WRs behind it wait.
    this->b.set_rnr_retry(0, hca::kRnrRetryForever);
    this->b.qp(0).post_send(this->wr(WrOpcode::Send, 1, a, 64));
    this->b.qp(0).post_send(this->wr(WrOpcode::RdmaWrite, 2, a, 64, r.addr, r.key));
    this->b.qp(0).post_send(this->wr(WrOpcode::RdmaRead, 3, a, 64, r.addr, r.key));
    this->b.pause();
    EXPECT_TRUE(this->drain(0).empty());
    this->b.to_error(0);
    this->b.pause();
    const std::vector<sdp::Wc> all = this->drain(0);
    ASSERT_EQ(all.size(), 5u);
    const uint64_t ids[] = {1, 2, 3, 100, 101};
    const WcOpcode ops[] = {WcOpcode::Send, WcOpcode::RdmaWrite, WcOpcode::RdmaRead, WcOpcode::Recv, WcOpcode::Recv};
    for (size_t i = 0; i < 5; ++i) {
      EXPECT_EQ(all[i].wr_id, ids[i]) << i;
      EXPECT_EQ(all[i].status, WcStatus::WrFlushErr) << i;
      EXPECT_EQ(sdp::wc_status_code(all[i].status), 5);  // IBV_WC_WR_FLUSH_ERR
      EXPECT_EQ(all[i].qp_num, this->b.qp(0).qp_num()) << i;
      if (TypeParam::kOwnErrorOpcode) { EXPECT_EQ(all[i].opcode, ops[i]) << i; }
    }
    EXPECT_EQ(this->read(1, r.addr, 64), std::vector<uint8_t>(64, 0));  // the WRITE never ran
  });
}

// ---- RNR -------------------------------------------------------------------------------------

TYPED_TEST(HcaConformance, SendWithoutAReceiveEndsInRnrRetryExceeded) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll);
    this->b.set_rnr_retry(0, 2);  // the first try and two retries, all RNR NAKed
    this->b.qp(0).post_send(this->wr(WrOpcode::Send, 31, a, 64));
    const sdp::Wc wc = this->next(0);
    EXPECT_EQ(wc.wr_id, 31u);
    EXPECT_EQ(wc.status, WcStatus::RnrRetryExcErr);
    EXPECT_EQ(sdp::wc_status_code(wc.status), 13);  // IBV_WC_RNR_RETRY_EXC_ERR
    EXPECT_EQ(this->b.state(0), QpState::Error);
    EXPECT_TRUE(this->drain(1).empty());  // the responder completed nothing
  });
}

TYPED_TEST(HcaConformance, SendWaitsThroughRnrNaksForAReceivePostedLater) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll);
    auto r = this->buf(1, 4096, kAll);
    this->fill(0, a.addr, 256, 40);
    this->b.set_rnr_retry(0, hca::kRnrRetryForever);
    this->b.qp(0).post_send(this->wr(WrOpcode::Send, 41, a, 256));
    this->b.pause();  // several RNR NAK rounds (0.64 ms each)
    EXPECT_TRUE(this->drain(0).empty());
    this->b.qp(1).post_recv(this->recv(42, r, 4096));
    sdp::Wc wc = this->next(0);
    EXPECT_EQ(wc.wr_id, 41u);
    EXPECT_EQ(wc.status, WcStatus::Success);
    wc = this->next(1);
    EXPECT_EQ(wc.wr_id, 42u);
    EXPECT_EQ(wc.byte_len, 256u);
    EXPECT_EQ(this->read(1, r.addr, 256), this->ramp(256, 40));
  });
}

// ---- UD receive failures ---------------------------------------------------------------------

namespace {
/// The Q_Key both UD QPs of a case take (IPoIB's IPOIB_QKEY, any value would do).
constexpr uint32_t kUdQkey = 0x0b1b;
/// IBA 1.3 11.4.1.2: a UD receive buffer begins with 40 B of room for the GRH (present or not),
/// and the receive completion's byte_len counts them.
constexpr uint32_t kGrhRoom = 40;
}  // namespace

// A datagram longer than its receive WQE. The receive completes with a local length error: the
// payload and the 40 B of GRH room exceed the WQE's SGEs (IBA 1.3 11.6.2, Local Length Error;
// mlx4: CQE syndrome MLX4_CQE_SYNDROME_LOCAL_LENGTH_ERR is IB_WC_LOC_LEN_ERR, Linux
// drivers/infiniband/hw/mlx4/cq.c mlx4_ib_handle_error_cqe). A datagram one byte shorter fits
// exactly. The sender is never told: UD has no acknowledgement, its SEND completes once sent
// (IBA 1.3 9.8.3). A receive WQE completed in error takes the QP to ERROR (IBA 1.3 10.3.1: SQE
// is the state of a UC or UD send-queue error only; an error of the receive queue is the Error
// state), and the receive WQEs behind it flush. rdma-core's libhns adds a vendor "general
// error" CQE for just this UD case, to keep its QP out of ERROR (providers/hns/hns_roce_u_hw_v2.c),
// which a ConnectX-3 has not; rxe drops such a datagram without a completion instead
// (drivers/infiniband/sw/rxe/rxe_resp.c RESPST_ERR_LENGTH, class D). The case reads the QP
// state and skips on the hardware.
TYPED_TEST(HcaConformance, UdSendOverItsReceiveIsLocalLengthErrorAndTheReceiverGoesToError) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.open_ud(kUdQkey);
  this->b.run([&] {
    auto s = this->ud_buf(0, 4096);
    auto r = this->ud_buf(1, 4096);
    this->fill(0, s.addr, 4096, 5);
    // Two receives of 100 + 39 B (two SGEs), then one of 4096 B behind them.
    for (uint64_t id : {70u, 71u}) {
      sdp::RecvWr rw = this->recv(id, r, 100);
      rw.sg[1] = {r.addr + 100, 39, r.key};
      rw.num_sge = 2;
      this->b.ud(1).post_recv(rw);
    }
    this->b.ud(1).post_recv(this->recv(72, r, 4096));
    // 99 B: 40 + 99 = 139, exactly the WQE's room.
    this->ud_send_completes(1, s, 99, kUdQkey);
    sdp::Wc wc = this->next_ud(1);
    EXPECT_EQ(wc.wr_id, 70u);
    EXPECT_EQ(wc.status, WcStatus::Success);
    EXPECT_EQ(wc.byte_len, kGrhRoom + 99);
    EXPECT_EQ(this->read(1, r.addr + kGrhRoom, 99), this->ramp(99, 5));  // 60 B in the first SGE, 39 in the second
    // 100 B: 140 > 139.
    this->ud_send_completes(2, s, 100, kUdQkey);  // no ACK: the sender does not know
    wc = this->next_ud(1);
    EXPECT_EQ(wc.wr_id, 71u);
    EXPECT_EQ(wc.status, WcStatus::LocLenErr);
    EXPECT_EQ(sdp::wc_status_code(wc.status), 1);  // IBV_WC_LOC_LEN_ERR
    EXPECT_EQ(wc.opcode, WcOpcode::Recv);
    EXPECT_EQ(this->b.ud_state(1), QpState::Error);
    wc = this->next_ud(1);
    EXPECT_EQ(wc.wr_id, 72u);
    EXPECT_EQ(wc.status, WcStatus::WrFlushErr);
    EXPECT_EQ(this->b.ud_state(0), QpState::Rts);  // the sender's QP is untouched
    this->b.pause();
    EXPECT_TRUE(this->drain(this->b.ud(1)).empty());
  });
}

// A UD receive WQE whose SGE the datagram cannot be written to: the receive completes with a
// local protection error (IBA 1.3 11.6.2, Local Protection Error: the WQE's data segment does
// not reference a memory region valid for the operation; mlx4: MLX4_CQE_SYNDROME_LOCAL_PROT_ERR
// is IB_WC_LOC_PROT_ERR, drivers/infiniband/hw/mlx4/cq.c). The core checks every SGE the
// datagram reaches (its GRH room included) against the MR table before a byte is written: a key
// no MR has, a key of another PD, no local write, or bytes outside the MR are all this one
// refusal (hca/responder.cpp execute_ud, hca/mr.h MrTable::check); rxe calls the same receive
// a malformed WQE (IBV_WC_LOC_QP_OP_ERR, rxe_resp.c). As a local length error, it takes the QP
// to ERROR (IBA 1.3 10.3.1) and the receive behind it flushes; the sender's SEND succeeds
// (IBA 1.3 9.8.3).
TYPED_TEST(HcaConformance, UdReceiveWithAnInvalidLkeyIsLocalProtectionError) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.open_ud(kUdQkey);
  this->b.run([&] {
    auto r = this->ud_buf(1, 4096);
    sdp::RecvWr rw = this->recv(0, r, 4096);
    rw.sg[0].lkey = r.key + 0x10000;  // no MR has it: 256 indexes past any of the test's MRs
    this->ud_send_into_a_bad_receive(rw, kUdQkey);
    EXPECT_EQ(this->read(1, r.addr, 64), std::vector<uint8_t>(64, 0));
  });
}

TYPED_TEST(HcaConformance, UdReceiveSgeOutsideItsMrIsLocalProtectionError) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.open_ud(kUdQkey);
  this->b.run([&] {
    auto r = this->ud_buf(1, 64);  // an MR of 64 B; the SGE names 4096 B from its start
    this->ud_send_into_a_bad_receive(this->recv(0, r, 4096), kUdQkey);
    EXPECT_EQ(this->read(1, r.addr, 64), std::vector<uint8_t>(64, 0));  // not even the part inside the MR
  });
}

// A datagram whose DETH Q_Key is not the receiving QP's is dropped in silence (IBA 1.3 10.2.5,
// Q_Keys: the destination QP's Q_Key check of a datagram; hca/responder.cpp execute_ud): no
// receive completion, no error, the receive WQE is not consumed, and the next datagram with the
// right Q_Key lands in it. The sender cannot tell (IBA 1.3 9.8.3): its SEND completes.
TYPED_TEST(HcaConformance, UdSendWithAWrongQkeyIsDroppedAndTheReceiveStaysPosted) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.open_ud(kUdQkey);
  this->b.run([&] {
    auto s = this->ud_buf(0, 4096);
    auto r = this->ud_buf(1, 4096);
    this->b.ud(1).post_recv(this->recv(80, r, 4096));
    this->fill(0, s.addr, 64, 0xC0);
    this->ud_send_completes(4, s, 64, kUdQkey + 1);
    this->b.pause();
    EXPECT_TRUE(this->drain(this->b.ud(1)).empty());  // dropped: no completion
    EXPECT_EQ(this->b.ud_state(1), QpState::Rts);     // and no error
    EXPECT_EQ(this->read(1, r.addr, kGrhRoom + 64), std::vector<uint8_t>(kGrhRoom + 64, 0));
    this->fill(0, s.addr, 64, 0x30);
    this->ud_send_completes(5, s, 64, kUdQkey);
    sdp::Wc wc = this->next_ud(1);
    EXPECT_EQ(wc.wr_id, 80u);  // the WQE the dropped datagram left posted
    EXPECT_EQ(wc.status, WcStatus::Success);
    EXPECT_EQ(wc.byte_len, kGrhRoom + 64);
    EXPECT_EQ(this->read(1, r.addr + kGrhRoom, 64), this->ramp(64, 0x30));
    this->b.pause();
    EXPECT_TRUE(this->drain(this->b.ud(1)).empty());
  });
}
