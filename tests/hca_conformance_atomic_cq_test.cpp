// Conformance cases of the atomics (IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD) and
// of a CQ that two QPs share, on the backends of tests/hca_conformance.h: the outcome an mlx4
// (ConnectX-3) HCA gives, cited to the IBA (1.3), the drivers (rdma-core providers/mlx4, Linux
// drivers/infiniband/hw/mlx4) and rxe as a cross-check.
#include "tests/hca_conformance.h"

// ---- atomics ---------------------------------------------------------------------------------

namespace {
/// Where the cases' 8-byte target sits in the responder's MR (8-byte aligned).
constexpr uint32_t kTarget = 64;
}  // namespace

// Fetch-and-add and compare-and-swap on one 8-byte target (IBA 1.3 9.4.5): the responder reads
// the target, writes back the sum (modulo 2^64) or, when it equals the compare value, the swap
// value, and returns what it read; the requester puts that value in the WR's 8-byte SGE. The
// completion is IBV_WC_FETCH_ADD / IBV_WC_COMP_SWAP with byte_len 8 (libmlx4 mlx4_poll_one,
// rdma-core providers/mlx4/cq.c). A compare that does not match changes nothing and still
// returns the value. The byte order of the target is the host's (both emulators; the hardware
// case has not been run here).
TYPED_TEST(HcaConformance, AtomicFetchAddAndCompareSwapReturnTheOldEightBytes) {
  OPEN_OR_SKIP();
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll);
    auto r = this->buf(1, 4096, kAllAtomic);
    const sdp::Addr t = r.addr + kTarget;
    this->write_u64(1, t, 40);
    struct Step {
      WrOpcode op;
      uint64_t compare_add, swap, before, after;
    };
    // 40 + 2 = 42; 42 + 3 = 45; 45 == 45: 99 goes in; 99 != 45: stays 99; 99 + (2^64 - 1) = 98.
    const Step steps[] = {{WrOpcode::AtomicFetchAdd, 2, 0, 40, 42},
                          {WrOpcode::AtomicFetchAdd, 3, 0, 42, 45},
                          {WrOpcode::AtomicCmpSwap, 45, 99, 45, 99},
                          {WrOpcode::AtomicCmpSwap, 45, 7, 99, 99},
                          {WrOpcode::AtomicFetchAdd, UINT64_MAX, 0, 99, 98}};
    uint64_t id = 20;
    for (const Step& s : steps) {
      this->write_u64(0, a.addr, 0x5555555555555555u);
      this->b.qp(0).post_send(this->atomic(s.op, id, a, 8, t, r.key, s.compare_add, s.swap));
      const sdp::Wc wc = this->next(0);
      EXPECT_EQ(wc.wr_id, id);
      EXPECT_EQ(wc.status, WcStatus::Success);
      EXPECT_EQ(wc.opcode, s.op == WrOpcode::AtomicCmpSwap ? WcOpcode::CompSwap : WcOpcode::FetchAdd);
      EXPECT_EQ(wc.byte_len, 8u);
      EXPECT_EQ(wc.qp_num, this->b.qp(0).qp_num());
      EXPECT_EQ(this->read_u64(0, a.addr), s.before) << id;
      EXPECT_EQ(this->read_u64(1, t), s.after) << id;
      ++id;
    }
    EXPECT_EQ(this->read(1, t + 8, 8), std::vector<uint8_t>(8, 0));  // the 8 bytes only
    EXPECT_TRUE(this->drain(1).empty());                           // no receive consumed
  });
}

// An atomic to a responder QP whose qp_access_flags lack IBV_ACCESS_REMOTE_ATOMIC, its MR
// allowing it: the QP does not support the operation, which the responder NAKs as an invalid
// request (IBA 1.3 9.7.5.2.4, class C), so the requester completes with IBV_WC_REM_INV_REQ_ERR
// (9) and both QPs go to ERROR (IBA 9.9.3.1.2, as after a remote access error). rxe: check_op_valid
// -> RESPST_ERR_UNSUPPORTED_OPCODE -> NAK invalid request, IB_WC_REM_INV_REQ_ERR
// (drivers/infiniband/sw/rxe/rxe_resp.c); the vendors' table of the status names "the operation
// is not supported by this receive queue" among its causes (rdmamojo.com, ibv_poll_cq; Marvell
// FastLinQ user's guide, table 7-3). Not IBV_WC_REM_ACCESS_ERR: that is the MR's refusal, below.
TYPED_TEST(HcaConformance, AtomicToAQpWithoutRemoteAtomicIsRemoteInvalidRequest) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll);
    auto r = this->buf(1, 4096, kAllAtomic);
    this->write_u64(1, r.addr + kTarget, 40);
    this->write_u64(0, a.addr, 7);
    this->b.set_qp_access(1, sdp::kRemoteWrite | sdp::kRemoteRead);
    this->b.qp(0).post_send(this->atomic(WrOpcode::AtomicFetchAdd, 30, a, 8, r.addr + kTarget, r.key, 1));
    const sdp::Wc wc = this->next(0);
    EXPECT_EQ(wc.wr_id, 30u);
    EXPECT_EQ(wc.status, WcStatus::RemInvReqErr);
    EXPECT_EQ(sdp::wc_status_code(wc.status), 9);  // IBV_WC_REM_INV_REQ_ERR
    this->b.pause();
    EXPECT_EQ(this->read_u64(1, r.addr + kTarget), 40u);  // not executed
    EXPECT_EQ(this->read_u64(0, a.addr), 7u);             // nothing came back
    EXPECT_EQ(this->b.state(0), QpState::Error);
    EXPECT_EQ(this->b.state(1), QpState::Error);
  });
}

// An atomic to an MR registered without IBV_ACCESS_REMOTE_ATOMIC (the QP allows atomics): an R_Key
// violation, NAK remote access error, IBV_WC_REM_ACCESS_ERR (10) at the requester ("a protection
// error occurred on a remote data buffer to be ... accessed by an atomic operation", rdmamojo.com
// ibv_poll_cq); the target is not touched and the responder goes to ERROR with the requester
// (IBA 1.3 9.9.3.1.2, class C, as RemoteAccessErrorTakesTheResponderToErrorToo). rxe: check_rkey (mr lacks IB_ACCESS_REMOTE_ATOMIC)
// -> RESPST_ERR_RKEY_VIOLATION -> AETH_NAK_REM_ACC_ERR, IB_WC_REM_ACCESS_ERR (rxe_resp.c).
TYPED_TEST(HcaConformance, AtomicToAnMrWithoutRemoteAtomicIsRemoteAccessError) {
  OPEN_OR_SKIP();
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll);
    auto r = this->buf(1, 4096, kAll);  // no kRemoteAtomic
    this->write_u64(1, r.addr + kTarget, 40);
    this->b.qp(0).post_send(this->atomic(WrOpcode::AtomicCmpSwap, 31, a, 8, r.addr + kTarget, r.key, 40, 1));
    const sdp::Wc wc = this->next(0);
    EXPECT_EQ(wc.wr_id, 31u);
    EXPECT_EQ(wc.status, WcStatus::RemAccessErr);
    EXPECT_EQ(sdp::wc_status_code(wc.status), 10);  // IBV_WC_REM_ACCESS_ERR
    EXPECT_EQ(this->read_u64(1, r.addr + kTarget), 40u);  // the compare matched, yet nothing was swapped
    if (TypeParam::kInternals) {
      this->b.pause();
      EXPECT_EQ(this->b.state(0), QpState::Error);
      EXPECT_EQ(this->b.state(1), QpState::Error);
    }
  });
}

// An atomic to a remote address that is not 8-byte aligned. libmlx4 posts it (mlx4_post_send
// writes wr.atomic.remote_addr into the WQE's raddr segment unchecked, rdma-core
// providers/mlx4/qp.c); the responder refuses a misaligned atomic with NAK invalid request (IBA
// 1.3 9.4.5: an atomic's virtual address is naturally aligned to 8 bytes; class C), so the WR
// completes with IBV_WC_REM_INV_REQ_ERR (9), the target untouched. rxe's kernel responder gives
// the same (check_rkey: RESPST_ERR_MISALIGNED_ATOMIC -> do_class_ac_error(AETH_NAK_INVALID_REQ,
// IB_WC_REM_INV_REQ_ERR), rxe_resp.c); rxe's provider refuses the post itself with EINVAL
// (providers/rxe/rxe.c validate_send_wr), which mlx4 does not.
TYPED_TEST(HcaConformance, AtomicToAMisalignedAddressIsRemoteInvalidRequest) {
  OPEN_OR_SKIP();
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll);
    auto r = this->buf(1, 4096, kAllAtomic);
    this->write_u64(1, r.addr + kTarget, 0x1111111111111111u);
    this->write_u64(1, r.addr + kTarget + 8, 0x2222222222222222u);
    if (TypeParam::kInternals) {  // the post is accepted
      EXPECT_EQ(this->b.post_errno(0, this->atomic(WrOpcode::AtomicFetchAdd, 32, a, 8, r.addr + kTarget + 4, r.key, 1)), 0);
    } else {
      this->b.qp(0).post_send(this->atomic(WrOpcode::AtomicFetchAdd, 32, a, 8, r.addr + kTarget + 4, r.key, 1));
    }
    const sdp::Wc wc = this->next(0);
    EXPECT_EQ(wc.wr_id, 32u);
    EXPECT_EQ(wc.status, WcStatus::RemInvReqErr);
    EXPECT_EQ(sdp::wc_status_code(wc.status), 9);  // IBV_WC_REM_INV_REQ_ERR
    EXPECT_EQ(this->read_u64(1, r.addr + kTarget), 0x1111111111111111u);
    EXPECT_EQ(this->read_u64(1, r.addr + kTarget + 8), 0x2222222222222222u);
    if (TypeParam::kInternals) {
      this->b.pause();
      EXPECT_EQ(this->b.state(1), QpState::Error);  // class C: the responder too
    }
  });
}

// An atomic whose local SGE is not 8 bytes (4 here). libmlx4 posts it (mlx4_post_send checks no
// atomic's length, rdma-core providers/mlx4/qp.c); the HCA completes it with IBV_WC_LOC_LEN_ERR
// (1): "an Atomic operation which its size is different than 8 bytes" is a local length error on
// Mellanox HCAs (rdmamojo.com, ibv_poll_cq, IBV_WC_LOC_LEN_ERR). The requester's QP goes to ERROR
// with it (IBA 1.3 10.3.1). That nothing reaches the responder (its target unchanged, its QP in
// RTS) is the emulators' rule (hca/requester.cpp: the local length check before anything is
// sent), asserted on them only: the driver does not say where the HCA finds the length.
TYPED_TEST(HcaConformance, AtomicWithALocalSgeOtherThanEightBytesIsLocalLengthError) {
  OPEN_OR_SKIP();
  this->b.run([&] {
    auto a = this->buf(0, 4096, kAll);
    auto r = this->buf(1, 4096, kAllAtomic);
    this->write_u64(1, r.addr + kTarget, 40);
    this->write_u64(0, a.addr, 0x3333333333333333u);
    const sdp::SendWr w = this->atomic(WrOpcode::AtomicFetchAdd, 33, a, 4, r.addr + kTarget, r.key, 1);
    if (TypeParam::kInternals) {
      EXPECT_EQ(this->b.post_errno(0, w), 0);  // the post is accepted
    } else {
      this->b.qp(0).post_send(w);
    }
    const sdp::Wc wc = this->next(0);
    EXPECT_EQ(wc.wr_id, 33u);
    EXPECT_EQ(wc.status, WcStatus::LocLenErr);
    EXPECT_EQ(sdp::wc_status_code(wc.status), 1);  // IBV_WC_LOC_LEN_ERR
    if (TypeParam::kInternals) {
      this->b.pause();
      EXPECT_EQ(this->b.state(0), QpState::Error);
      EXPECT_EQ(this->b.state(1), QpState::Rts);
      EXPECT_EQ(this->read_u64(1, r.addr + kTarget), 40u);
      EXPECT_EQ(this->read_u64(0, a.addr), 0x3333333333333333u);
    }
  });
}

// ---- a CQ two QPs share ----------------------------------------------------------------------

// Two QPs complete into one CQ, their completions interleaved; one of them is destroyed before
// the CQ is polled. ibv_destroy_qp on mlx4 removes that QP's CQEs from the CQ and keeps the
// others' in their order: libmlx4's mlx4_destroy_qp calls __mlx4_cq_clean on its send and receive
// CQs, which sweeps the CQ and drops the CQEs of that QPN only (rdma-core providers/mlx4/verbs.c,
// cq.c); the kernel does the same for its own CQs (destroy_qp_common -> __mlx4_ib_cq_clean,
// drivers/infiniband/hw/mlx4/qp.c, cq.c). The other QP's completions are all polled, in order,
// and it goes on completing into the CQ.
TYPED_TEST(HcaConformance, DestroyingAQpOnASharedCqRemovesOnlyItsCompletions) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.open_shared_cq(16);
  this->b.run([&] {
    sdp::Verbs& qa = this->b.shared(0);
    sdp::Verbs& qb = this->b.shared(1);
    ASSERT_NE(qa.qp_num(), qb.qp_num());
    auto la = this->buf_on(this->b.shared_mem(0), qa, 4096), lb = this->buf_on(this->b.shared_mem(0), qb, 4096);
    auto ra = this->buf_on(this->b.shared_mem(1), this->b.shared_peer(0), 4096);
    auto rb = this->buf_on(this->b.shared_mem(1), this->b.shared_peer(1), 4096);
    // A 1, B 101, A 2, B 102, A 3: each completes before the next is posted.
    const uint64_t order[] = {1, 101, 2, 102, 3};
    size_t posted = 0;
    for (uint64_t id : order) {
      if (id < 100) {
        qa.post_send(this->wr(WrOpcode::RdmaWrite, id, la, 64, ra.addr, ra.key));
      } else {
        qb.post_send(this->wr(WrOpcode::RdmaWrite, id, lb, 64, rb.addr, rb.key));
      }
      this->b.settle_shared(++posted);
    }
    this->b.destroy_shared(1);
    std::vector<sdp::Wc> all = this->drain(qa);
    ASSERT_EQ(all.size(), 3u);  // B's two are gone
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(all[i].wr_id, i + 1);
      EXPECT_EQ(all[i].status, WcStatus::Success);
      EXPECT_EQ(all[i].qp_num, qa.qp_num());
    }
    // A goes on, into the same CQ.
    qa.post_send(this->wr(WrOpcode::RdmaWrite, 4, la, 64, ra.addr, ra.key));
    sdp::Wc wc;
    ASSERT_TRUE(this->b.poll(qa, wc));
    EXPECT_EQ(wc.wr_id, 4u);
    EXPECT_EQ(wc.status, WcStatus::Success);
    EXPECT_EQ(this->b.shared_state(0), QpState::Rts);
  });
}

// The same with a CQ that overran first: a CQ of 4 holds A 1, B 101, A 2, B 102, and A's next
// completion is the overrun (hca/cq.h: not written, nothing written after it, A to ERROR; the
// IBA's CQ error, an affiliated asynchronous error of IBA 1.2.1 ch. 11). Destroying B then removes B's CQEs and keeps A's two, which
// are still polled in order; the CQ stays in error, so A's flushes never appear. That the CQEs
// written before an overrun stay pollable is the core's rule, not a guarantee of the IBA or of
// mlx4 (hca/cq.h); the case shows the destroy loses none of them.
TYPED_TEST(HcaConformance, DestroyingAQpOnAnOverrunSharedCqKeepsTheOthersCompletions) {
  OPEN_OR_SKIP();
  NEEDS_INTERNALS();
  this->b.open_shared_cq(4);
  this->b.run([&] {
    sdp::Verbs& qa = this->b.shared(0);
    sdp::Verbs& qb = this->b.shared(1);
    auto la = this->buf_on(this->b.shared_mem(0), qa, 4096), lb = this->buf_on(this->b.shared_mem(0), qb, 4096);
    auto ra = this->buf_on(this->b.shared_mem(1), this->b.shared_peer(0), 4096);
    auto rb = this->buf_on(this->b.shared_mem(1), this->b.shared_peer(1), 4096);
    const uint64_t order[] = {1, 101, 2, 102, 3};
    size_t posted = 0;
    for (uint64_t id : order) {
      if (id < 100) {
        qa.post_send(this->wr(WrOpcode::RdmaWrite, id, la, 64, ra.addr, ra.key));
      } else {
        qb.post_send(this->wr(WrOpcode::RdmaWrite, id, lb, 64, rb.addr, rb.key));
      }
      this->b.settle_shared(++posted);
    }
    EXPECT_EQ(this->b.shared_state(0), QpState::Error);  // A's third completion overran the CQ
    this->b.destroy_shared(1);
    std::vector<sdp::Wc> all = this->drain(qa);
    ASSERT_EQ(all.size(), 2u);
    EXPECT_EQ(all[0].wr_id, 1u);
    EXPECT_EQ(all[1].wr_id, 2u);
    for (const sdp::Wc& c : all) {
      EXPECT_EQ(c.status, WcStatus::Success);
      EXPECT_EQ(c.qp_num, qa.qp_num());
    }
    this->b.pause();
    EXPECT_TRUE(this->drain(qa).empty());  // nothing after the overrun
  });
}
