// The HCA core (hca/) alone, without time: MR keys and bounds (the overflow case), the CQ's
// depth and overrun, the QP state machine, the post checks, the flush, PSN arithmetic, the P_Key
// match, AETH syndromes, the retry counters, the RNR timer table and a pipeline stage's queueing. Values from the IBA 1.2.1 and the
// libibverbs man pages named at each case.
#include <gtest/gtest.h>

#include <vector>

#include "hca/cq.h"
#include "hca/mr.h"
#include "hca/packet.h"
#include "hca/qp.h"
#include "hca/rc.h"
#include "hca/stage.h"

using namespace hcasim;
using namespace hcasim::hca;
using sdp::WcStatus;

namespace {
/// A host memory of one region [0x10000, 0x20000), for all-memory MRs.
bool one_region(sdp::Addr a, uint64_t len) { return a >= 0x10000 && len <= 0x10000 && a - 0x10000 <= 0x10000 - len; }
/// No host memory: an all-memory MR covers nothing (and a test fails when it is asked).
bool none(sdp::Addr, uint64_t) {
  ADD_FAILURE() << "asked the memory for an MR that is not all-memory";
  return false;
}
}  // namespace

TEST(HcaCoreMr, KeysArePerMrFrom0x100AndBelongToTheirPd) {
  MrTable t;
  const uint32_t pd1 = t.alloc_pd(), pd2 = t.alloc_pd();
  EXPECT_EQ(pd1, 1u);
  EXPECT_EQ(pd2, 2u);
  const uint32_t k1 = t.reg(pd1, 0x1000, 4096, sdp::kLocalWrite);
  const uint32_t k2 = t.reg(pd2, 0x1000, 4096, sdp::kLocalWrite);
  EXPECT_EQ(k1, 0x100u);
  EXPECT_EQ(k2, 0x101u);
  EXPECT_EQ(t.check(k1, pd1, 0x1000, 4096, 0, none), MrRefusal::None);
  EXPECT_EQ(t.check(k1, pd2, 0x1000, 4096, 0, none), MrRefusal::OtherPd);
  EXPECT_EQ(t.check(0x999, pd1, 0x1000, 1, 0, none), MrRefusal::UnknownKey);
  EXPECT_THROW(t.reg(3, 0x1000, 1, 0), sdp::VerbsError);          // no PD 3
  EXPECT_TRUE(t.dereg(k1));
  EXPECT_FALSE(t.dereg(k1));
  EXPECT_EQ(t.check(k1, pd1, 0x1000, 1, 0, none), MrRefusal::UnknownKey);
}

// ibv_rereg_mr: mlx4 rewrites the MPT entry in place, so the key stays and every later check
// sees the new PD, range and access (drivers/infiniband/hw/mlx4/mr.c mlx4_ib_rereg_user_mr).
TEST(HcaCoreMr, ReregKeepsTheKeyAndChangesWhatItAllows) {
  MrTable t;
  const uint32_t pd1 = t.alloc_pd(), pd2 = t.alloc_pd();
  const uint32_t k = t.reg(pd1, 0x1000, 4096, sdp::kLocalWrite | sdp::kRemoteWrite);
  EXPECT_TRUE(t.allows(k, pd1, 0x1000, 8, sdp::kRemoteWrite, none));
  ASSERT_TRUE(t.rereg(k, pd1, 0x1000, 4096, sdp::kLocalWrite));  // remote write taken away
  EXPECT_EQ(t.check(k, pd1, 0x1000, 8, sdp::kRemoteWrite, none), MrRefusal::Access);
  ASSERT_TRUE(t.rereg(k, pd2, 0x1000, 4096, sdp::kLocalWrite));  // to another PD
  EXPECT_EQ(t.check(k, pd1, 0x1000, 8, 0, none), MrRefusal::OtherPd);
  EXPECT_EQ(t.check(k, pd2, 0x1000, 8, 0, none), MrRefusal::None);
  ASSERT_TRUE(t.rereg(k, pd2, 0x8000, 64, sdp::kLocalWrite));  // another range
  EXPECT_EQ(t.check(k, pd2, 0x1000, 8, 0, none), MrRefusal::Bounds);
  EXPECT_EQ(t.check(k, pd2, 0x8038, 8, 0, none), MrRefusal::None);
  EXPECT_EQ(t.size(), 1u);
  EXPECT_THROW(t.rereg(k, 3, 0x8000, 64, 0), sdp::VerbsError);       // no PD 3
  EXPECT_THROW(t.rereg(k, pd2, UINT64_MAX - 7, 16, 0), sdp::VerbsError);  // wraps
  EXPECT_EQ(t.check(k, pd2, 0x8038, 8, 0, none), MrRefusal::None);   // unchanged by those
  ASSERT_TRUE(t.dereg(k));
  EXPECT_FALSE(t.rereg(k, pd2, 0x8000, 64, 0));  // no MR has the key any more
}

// IBA 10.6.7.2: a window binds inside an MR that allows binding, in the QP's PD, with no more
// rights than the MR can give (remote write needs local write); a bound type 2 window must be
// invalidated before it binds again; a window is never an L_Key, nor an MR's key a window.
TEST(HcaCoreMr, WindowsBindByTheRulesAndServeRemoteAccessOnly) {
  MrTable t;
  const uint32_t pd = t.alloc_pd(), other = t.alloc_pd();
  const uint32_t mr = t.reg(pd, 0x1000, 4096, sdp::kLocalWrite | sdp::kRemoteWrite | kMwBind);
  const uint32_t ro = t.reg(pd, 0x8000, 4096, sdp::kRemoteRead | kMwBind);
  const uint32_t plain = t.reg(pd, 0x10000, 4096, sdp::kLocalWrite);
  const uint32_t w2 = t.alloc_mw(pd, 2), w1 = t.alloc_mw(pd, 1);
  EXPECT_THROW(t.alloc_mw(pd, 3), sdp::VerbsError);
  EXPECT_EQ(t.check(w2, pd, 0x1000, 8, sdp::kRemoteWrite, none, 0x48), MrRefusal::UnknownKey);  // unbound
  EXPECT_EQ(t.bind_mw(w2, plain, 0x10000, 64, sdp::kRemoteRead, 0x48, pd), MrRefusal::Access);  // no MW_BIND
  EXPECT_EQ(t.bind_mw(w2, ro, 0x8000, 64, sdp::kRemoteWrite, 0x48, pd), MrRefusal::Access);  // no local write
  EXPECT_EQ(t.bind_mw(w2, mr, 0x1F00, 512, sdp::kRemoteWrite, 0x48, pd), MrRefusal::Bounds);
  EXPECT_EQ(t.bind_mw(w2, mr, 0x1000, 64, sdp::kRemoteWrite, 0x48, other), MrRefusal::OtherPd);
  EXPECT_EQ(t.bind_mw(mr, mr, 0x1000, 64, sdp::kRemoteWrite, 0x48, pd), MrRefusal::UnknownKey);  // not a window
  ASSERT_EQ(t.bind_mw(w2, mr, 0x1100, 256, sdp::kRemoteWrite, 0x48, pd), MrRefusal::None);
  EXPECT_EQ(t.bind_mw(w2, mr, 0x1100, 256, sdp::kRemoteWrite, 0x48, pd), MrRefusal::UnknownKey);  // bound
  EXPECT_EQ(t.check(w2, pd, 0x1100, 256, sdp::kRemoteWrite, none, 0x48), MrRefusal::None);
  EXPECT_EQ(t.check(w2, pd, 0x10FF, 2, sdp::kRemoteWrite, none, 0x48), MrRefusal::Bounds);
  EXPECT_EQ(t.check(w2, pd, 0x1100, 8, sdp::kLocalWrite, none, 0x48), MrRefusal::UnknownKey);  // as an L_Key
  EXPECT_EQ(t.check(w2, pd, 0x1100, 8, sdp::kRemoteWrite, none, 0x49), MrRefusal::OtherQp);
  EXPECT_FALSE(t.rereg(w2, pd, 0x1000, 8, 0));
  EXPECT_EQ(t.invalidate_mw(w1, pd), MrRefusal::UnknownKey);  // type 1: rebound, never invalidated
  EXPECT_EQ(t.invalidate_mw(w2, other), MrRefusal::OtherPd);
  ASSERT_EQ(t.invalidate_mw(w2, pd), MrRefusal::None);
  EXPECT_EQ(t.check(w2, pd, 0x1100, 8, sdp::kRemoteWrite, none, 0x48), MrRefusal::UnknownKey);
  // A type 1 window serves any QP of its PD, and rebinds in place.
  ASSERT_EQ(t.bind_mw(w1, mr, 0x1000, 64, sdp::kRemoteWrite, 0x48, pd), MrRefusal::None);
  EXPECT_EQ(t.check(w1, pd, 0x1000, 8, sdp::kRemoteWrite, none, 0x49), MrRefusal::None);
  ASSERT_EQ(t.bind_mw(w1, mr, 0x1000, 0, sdp::kRemoteWrite, 0x48, pd), MrRefusal::None);  // zero length
  EXPECT_EQ(t.check(w1, pd, 0x1000, 8, sdp::kRemoteWrite, none, 0x49), MrRefusal::Bounds);
  ASSERT_TRUE(t.dereg(mr));  // the MR gone: its windows name nothing
  ASSERT_EQ(t.bind_mw(w2, ro, 0x8000, 64, sdp::kRemoteRead, 0x48, pd), MrRefusal::None);
  EXPECT_EQ(t.check(w1, pd, 0x1000, 0, sdp::kRemoteWrite, none, 0x48), MrRefusal::UnknownKey);
}

// SEND with Invalidate's R_Key (IBA 9.4.1.3, 10.6.7.2.4) invalidates a bound type 2 window only
// from the QP it was bound through, in its PD; IBV_WR_LOCAL_INV (no QP given) from any QP of the
// PD. A refused invalidation changes nothing: the window still serves its QP.
TEST(HcaCoreMr, RemoteInvalidationNeedsTheWindowsOwnQp) {
  MrTable t;
  const uint32_t pd = t.alloc_pd(), other = t.alloc_pd();
  const uint32_t mr = t.reg(pd, 0x1000, 4096, sdp::kLocalWrite | sdp::kRemoteWrite | kMwBind);
  const uint32_t w2 = t.alloc_mw(pd, 2), w1 = t.alloc_mw(pd, 1);
  EXPECT_EQ(t.invalidate_mw(w2, pd, 0x48), MrRefusal::UnknownKey);  // not bound yet
  ASSERT_EQ(t.bind_mw(w2, mr, 0x1000, 64, sdp::kRemoteWrite, 0x48, pd), MrRefusal::None);
  ASSERT_EQ(t.bind_mw(w1, mr, 0x1000, 64, sdp::kRemoteWrite, 0x48, pd), MrRefusal::None);
  EXPECT_EQ(t.invalidate_mw(w2, pd, 0x49), MrRefusal::OtherQp);
  EXPECT_EQ(t.invalidate_mw(w2, other, 0x48), MrRefusal::OtherPd);
  EXPECT_EQ(t.invalidate_mw(w1, pd, 0x48), MrRefusal::UnknownKey);  // type 1
  EXPECT_EQ(t.invalidate_mw(mr, pd, 0x48), MrRefusal::UnknownKey);  // an MR's key
  EXPECT_EQ(t.check(w2, pd, 0x1000, 8, sdp::kRemoteWrite, none, 0x48), MrRefusal::None);  // unchanged
  ASSERT_EQ(t.invalidate_mw(w2, pd, 0x48), MrRefusal::None);
  EXPECT_EQ(t.check(w2, pd, 0x1000, 8, sdp::kRemoteWrite, none, 0x48), MrRefusal::UnknownKey);
  EXPECT_EQ(t.invalidate_mw(w2, pd, 0x48), MrRefusal::UnknownKey);  // once only
  // Local invalidation from another QP of the PD.
  ASSERT_EQ(t.bind_mw(w2, mr, 0x1000, 64, sdp::kRemoteWrite, 0x48, pd), MrRefusal::None);
  EXPECT_EQ(t.invalidate_mw(w2, pd), MrRefusal::None);
}

// ConnectX counts the windows bound to an MR in its MPT entry and refuses to take the entry
// back (HW2SW_MPT status REG_BOUND, EBUSY from ibv_dereg_mr and ibv_rereg_mr: mlx4 mr.c
// mlx4_mr_free_reserved, cmd.c mlx4_status_to_errno) while any is: a type 2 window until it is
// invalidated or deallocated, a type 1 window until it is bound with length 0, or elsewhere.
TEST(HcaCoreMr, AnMrWithWindowsBoundIsNotDeregistered) {
  MrTable t;
  const uint32_t pd = t.alloc_pd();
  const unsigned acc = sdp::kLocalWrite | sdp::kRemoteWrite | kMwBind;
  const uint32_t mr = t.reg(pd, 0x1000, 4096, acc), mr2 = t.reg(pd, 0x8000, 4096, acc);
  const uint32_t w2 = t.alloc_mw(pd, 2), w1 = t.alloc_mw(pd, 1), spare = t.alloc_mw(pd, 2);
  EXPECT_EQ(t.windows_bound(mr), 0u);
  ASSERT_EQ(t.bind_mw(w2, mr, 0x1000, 64, sdp::kRemoteWrite, 0x48, pd), MrRefusal::None);
  ASSERT_EQ(t.bind_mw(w1, mr, 0x1000, 64, sdp::kRemoteWrite, 0x48, pd), MrRefusal::None);
  ASSERT_EQ(t.bind_mw(spare, mr, 0x1000, 64, sdp::kRemoteWrite, 0x48, pd), MrRefusal::None);
  EXPECT_EQ(t.windows_bound(mr), 3u);
  EXPECT_EQ(t.windows_bound(w2), 0u);  // a window's key counts nothing
  EXPECT_FALSE(t.dereg(mr));
  EXPECT_FALSE(t.rereg(mr, pd, 0x1000, 4096, acc));
  EXPECT_EQ(t.check(w2, pd, 0x1000, 8, sdp::kRemoteWrite, none, 0x48), MrRefusal::None);  // still there
  ASSERT_EQ(t.invalidate_mw(w2, pd), MrRefusal::None);
  ASSERT_TRUE(t.dereg(spare));  // a bound window deallocated
  EXPECT_EQ(t.windows_bound(mr), 1u);
  ASSERT_EQ(t.bind_mw(w1, mr2, 0x8000, 64, sdp::kRemoteWrite, 0x48, pd), MrRefusal::None);  // rebound elsewhere
  EXPECT_EQ(t.windows_bound(mr), 0u);
  EXPECT_EQ(t.windows_bound(mr2), 1u);
  ASSERT_EQ(t.bind_mw(w1, mr2, 0x8000, 0, 0, 0x48, pd), MrRefusal::None);  // type 1, zero length
  EXPECT_EQ(t.windows_bound(mr2), 0u);
  EXPECT_TRUE(t.dereg(mr));
  EXPECT_TRUE(t.dereg(mr2));
}

TEST(HcaCoreMr, BoundsAreExactAndCannotOverflow) {
  MrTable t;
  const uint32_t pd = t.alloc_pd();
  const uint32_t k = t.reg(pd, 0x1000, 4096, sdp::kRemoteWrite);
  EXPECT_TRUE(t.allows(k, pd, 0x1000, 4096, 0, none));   // the whole MR
  EXPECT_TRUE(t.allows(k, pd, 0x1FF8, 8, 0, none));      // its last 8 bytes
  EXPECT_FALSE(t.allows(k, pd, 0x1FF8, 9, 0, none));     // one past its end
  EXPECT_FALSE(t.allows(k, pd, 0x0FFF, 1, 0, none));     // one before its start
  EXPECT_TRUE(t.allows(k, pd, 0x2000, 0, 0, none));      // an empty range at its end
  // addr + len wraps to 0x1008, inside the MR by the naive check addr + len <= end.
  EXPECT_EQ(t.check(k, pd, UINT64_MAX - 7, 16, 0, none), MrRefusal::Bounds);
  EXPECT_EQ(t.check(k, pd, 0x1008, UINT64_MAX - 0x1000, 0, none), MrRefusal::Bounds);
  // Registering a range that wraps fails (ibv_reg_mr: EINVAL).
  EXPECT_THROW(t.reg(pd, UINT64_MAX - 7, 16, 0), sdp::VerbsError);
  EXPECT_NO_THROW(t.reg(pd, UINT64_MAX - 15, 16, 0));  // ends exactly at 2^64
}

TEST(HcaCoreMr, AccessFlagsAreRequiredBitByBit) {
  MrTable t;
  const uint32_t pd = t.alloc_pd();
  const uint32_t ro = t.reg(pd, 0x1000, 4096, sdp::kRemoteRead);
  EXPECT_EQ(t.check(ro, pd, 0x1000, 8, sdp::kRemoteRead, none), MrRefusal::None);
  EXPECT_EQ(t.check(ro, pd, 0x1000, 8, sdp::kRemoteWrite, none), MrRefusal::Access);
  EXPECT_EQ(t.check(ro, pd, 0x1000, 8, sdp::kLocalWrite, none), MrRefusal::Access);
  EXPECT_EQ(t.check(ro, pd, 0x1000, 8, 0, none), MrRefusal::None);  // local read needs no bit
  EXPECT_STREQ(mr_refusal_str(MrRefusal::Access), "access flags");
}

TEST(HcaCoreMr, AnAllMemoryMrAsksTheHostMemory) {
  MrTable t;
  const uint32_t pd = t.alloc_pd();
  const uint32_t k = t.reg_all_memory(pd, sdp::kLocalWrite);
  EXPECT_TRUE(t.allows(k, pd, 0x10000, 0x10000, sdp::kLocalWrite, one_region));
  EXPECT_EQ(t.check(k, pd, 0x1FFFF, 2, 0, one_region), MrRefusal::Bounds);
  EXPECT_EQ(t.check(k, pd, 0x10000, 1, 0, [](sdp::Addr, uint64_t) { return false; }), MrRefusal::Bounds);
  EXPECT_EQ(t.check(k, pd, 0x10000, 1, sdp::kRemoteWrite, one_region), MrRefusal::Access);
}

TEST(HcaCoreCq, HoldsExactlyItsDepthAndTheNextCompletionIsTheOverrun) {
  Cq cq(3);
  for (uint64_t i = 0; i < 3; ++i) EXPECT_TRUE(cq.push({i, WcStatus::Success, sdp::WcOpcode::Send, 0, 0x48}));
  EXPECT_FALSE(cq.overrun());
  EXPECT_FALSE(cq.push({3, WcStatus::Success, sdp::WcOpcode::Send, 0, 0x48}));  // the 4th: overrun
  EXPECT_TRUE(cq.overrun());
  std::array<sdp::Wc, 8> out{};
  ASSERT_EQ(cq.poll(out), 3);  // the three written stay, oldest first
  EXPECT_EQ(out[0].wr_id, 0u);
  EXPECT_EQ(out[2].wr_id, 2u);
  // In error: nothing more is written, even with room again.
  EXPECT_FALSE(cq.push({4, WcStatus::WrFlushErr, sdp::WcOpcode::Send, 0, 0x48}));
  EXPECT_EQ(cq.poll(out), 0);
}

// ibv_resize_cq: a CQ may shrink to the CQEs waiting in it and no further (mlx4_resize_cq:
// EINVAL below the outstanding CQEs); what waits stays, in order.
TEST(HcaCoreCq, ResizeKeepsWhatWaitsAndRefusesLessRoom) {
  Cq cq(3);
  for (uint64_t i = 0; i < 2; ++i) ASSERT_TRUE(cq.push({i, WcStatus::Success, sdp::WcOpcode::Send, 0, 0x48}));
  EXPECT_FALSE(cq.resize(1));  // 2 wait
  EXPECT_EQ(cq.depth(), 3u);
  ASSERT_TRUE(cq.resize(2));
  EXPECT_FALSE(cq.push({2, WcStatus::Success, sdp::WcOpcode::Send, 0, 0x48}));  // full at 2: overrun
  Cq big(1);
  ASSERT_TRUE(big.push({0, WcStatus::Success, sdp::WcOpcode::Send, 0, 0x48}));
  ASSERT_TRUE(big.resize(4));
  for (uint64_t i = 1; i < 4; ++i) EXPECT_TRUE(big.push({i, WcStatus::Success, sdp::WcOpcode::Send, 0, 0x48}));
  std::array<sdp::Wc, 8> out{};
  ASSERT_EQ(big.poll(out), 4);
  EXPECT_EQ(out[0].wr_id, 0u);
  EXPECT_EQ(out[3].wr_id, 3u);
}

TEST(HcaCoreCq, PollingMakesRoom) {
  Cq cq(2);
  std::array<sdp::Wc, 1> one{};
  for (uint64_t i = 0; i < 10; ++i) {
    ASSERT_TRUE(cq.push({i, WcStatus::Success, sdp::WcOpcode::Recv, 1, 0x48}));
    ASSERT_EQ(cq.poll(one), 1);
    EXPECT_EQ(one[0].wr_id, i);
  }
  EXPECT_FALSE(cq.overrun());
}

TEST(HcaCoreQp, TransitionsFollowIbaFigure124) {
  using S = QpState;
  EXPECT_TRUE(transition_allowed(S::Reset, S::Init));
  EXPECT_TRUE(transition_allowed(S::Init, S::Rtr));
  EXPECT_TRUE(transition_allowed(S::Rtr, S::Rts));
  EXPECT_TRUE(transition_allowed(S::Rts, S::Error));
  EXPECT_TRUE(transition_allowed(S::Error, S::Reset));
  EXPECT_FALSE(transition_allowed(S::Reset, S::Rtr));
  EXPECT_FALSE(transition_allowed(S::Reset, S::Rts));
  EXPECT_FALSE(transition_allowed(S::Init, S::Rts));
  EXPECT_FALSE(transition_allowed(S::Rts, S::Rtr));
  EXPECT_FALSE(transition_allowed(S::Error, S::Init));
  EXPECT_FALSE(transition_allowed(S::Error, S::Rts));
  try {
    check_transition(0x48, S::Reset, S::Rts);
    ADD_FAILURE() << "no throw";
  } catch (const sdp::VerbsError& e) {
    EXPECT_STREQ(e.what(), "modify_qp: QP 0x48 cannot go from RESET to RTS");
  }
}

TEST(HcaCoreQp, PostSendChecksInOrder) {
  const SendLimits lim{4, 64};
  SendWqe w;
  sdp::SendWr& wr = w.wr;
  wr.num_sge = 1;
  wr.sg[0] = {0x1000, 100, 0x100};
  const QpType rc = QpType::Rc;
  EXPECT_EQ(check_post_send(rc, QpState::Rts, 0, lim, w).post, Post::Accept);
  EXPECT_EQ(check_post_send(rc, QpState::Rtr, 0, lim, w).error, PostError::WrongState);
  EXPECT_EQ(check_post_send(rc, QpState::Init, 0, lim, w).error, PostError::WrongState);
  EXPECT_EQ(check_post_send(rc, QpState::Reset, 0, lim, w).error, PostError::WrongState);
  EXPECT_EQ(check_post_send(rc, QpState::Error, 0, lim, w).post, Post::Flush);
  EXPECT_EQ(check_post_send(rc, QpState::Rts, 4, lim, w).error, PostError::QueueFull);
  EXPECT_EQ(check_post_send(rc, QpState::Rts, 3, lim, w).post, Post::Accept);
  wr.inline_data = true;  // 100 B > 64 B
  EXPECT_EQ(check_post_send(rc, QpState::Rts, 0, lim, w).error, PostError::InlineTooLong);
  wr.sg[0].length = 64;
  EXPECT_EQ(check_post_send(rc, QpState::Rts, 0, lim, w).post, Post::Accept);
  wr.opcode = sdp::WrOpcode::RdmaRead;
  EXPECT_EQ(check_post_send(rc, QpState::Rts, 0, lim, w).error, PostError::InlineRead);
  wr.inline_data = false;
  // UC has no RDMA READ and no atomics, UD only SENDs (IBA 9.8.2, 9.8.3): refused in any state.
  EXPECT_EQ(check_post_send(QpType::Uc, QpState::Rts, 0, lim, w).error, PostError::BadOpcode);
  wr.opcode = sdp::WrOpcode::RdmaWrite;
  EXPECT_EQ(check_post_send(QpType::Ud, QpState::Error, 0, lim, w).error, PostError::BadOpcode);
  // An atomic's length and alignment are not the post's to refuse (libmlx4 mlx4_post_send checks
  // neither): a 4-byte SGE to an address 4 bytes off is accepted; RC only, and never inline.
  wr.opcode = sdp::WrOpcode::AtomicFetchAdd;
  wr.sg[0].length = 4;
  wr.remote_addr = 0x2004;
  EXPECT_EQ(check_post_send(rc, QpState::Rts, 0, lim, w).post, Post::Accept);
  EXPECT_EQ(check_post_send(QpType::Uc, QpState::Rts, 0, lim, w).error, PostError::BadOpcode);
  wr.inline_data = true;
  EXPECT_EQ(check_post_send(rc, QpState::Rts, 0, lim, w).error, PostError::InlineRead);
  wr.inline_data = false;
  wr.opcode = sdp::WrOpcode::RdmaWrite;
  wr.num_sge = 9;  // first check, even in ERROR
  EXPECT_EQ(check_post_send(rc, QpState::Error, 0, lim, w).error, PostError::TooManySge);
  EXPECT_EQ(post_error_text("post_send", 0x48, QpState::Rts, PostError::TooManySge, &wr, &lim),
            "post_send: QP 0x48: 9 SGEs, max 8");
  EXPECT_EQ(post_error_text("post_send", 0x48, QpState::Init, PostError::WrongState, &wr, &lim),
            "post_send: QP 0x48 is in INIT, not RTS");
}

TEST(HcaCoreQp, PostRecvFromInitOn) {
  sdp::RecvWr r;
  r.num_sge = 1;
  EXPECT_EQ(check_post_recv(QpState::Reset, 0, 2, r).error, PostError::WrongState);
  EXPECT_EQ(check_post_recv(QpState::Init, 0, 2, r).post, Post::Accept);
  EXPECT_EQ(check_post_recv(QpState::Rtr, 1, 2, r).post, Post::Accept);
  EXPECT_EQ(check_post_recv(QpState::Rts, 2, 2, r).error, PostError::QueueFull);
  EXPECT_EQ(check_post_recv(QpState::Error, 2, 2, r).post, Post::Flush);
  r.num_sge = 9;
  EXPECT_EQ(check_post_recv(QpState::Rts, 0, 2, r).error, PostError::TooManySge);
}


TEST(HcaCoreRc, PsnArithmeticWrapsAt2To24) {
  EXPECT_EQ(psn_add(0xFFFFFF, 1), 0u);
  EXPECT_EQ(psn_prev(0), 0xFFFFFFu);
  EXPECT_TRUE(psn_before(0xFFFFFF, 0));       // across the wrap
  EXPECT_FALSE(psn_before(0, 0xFFFFFF));
  EXPECT_TRUE(psn_before(0, 0x7FFFFF));       // half the space ahead: still after
  EXPECT_FALSE(psn_before(0, 0x800000));      // 2^23 ahead: counted as behind
  EXPECT_FALSE(psn_before(5, 5));
}

TEST(HcaCorePkey, MatchNeedsOnePartitionAndAFullMember) {
  // IBA 10.9.3: the packet's P_Key against the QP's; bit 15 is full membership.
  EXPECT_TRUE(pkey_match(0xFFFF, 0xFFFF));   // the default partition, both full
  EXPECT_TRUE(pkey_match(0x7FFF, 0xFFFF));   // a limited member talks to a full one
  EXPECT_TRUE(pkey_match(0xFFFF, 0x7FFF));   // ... both ways
  EXPECT_FALSE(pkey_match(0x7FFF, 0x7FFF));  // two limited members cannot talk
  EXPECT_FALSE(pkey_match(0x8001, 0xFFFF));  // another partition, though full
  EXPECT_FALSE(pkey_match(0xFFFE, 0xFFFF));  // one bit of the partition off
  EXPECT_FALSE(pkey_match(0x8000, 0x8000));  // the invalid P_Key matches nothing, itself neither
  EXPECT_FALSE(pkey_match(0x0000, 0x8000));
}

TEST(HcaCoreRc, AethSyndromes) {
  EXPECT_EQ(ack_kind(aeth::kAck), AckKind::Ack);
  EXPECT_EQ(ack_kind(0x00), AckKind::Ack);
  EXPECT_EQ(ack_kind(aeth::kRnrNak | 12), AckKind::RnrNak);
  EXPECT_EQ(rnr_code(aeth::kRnrNak | 12), 12);
  EXPECT_EQ(ack_kind(aeth::kNakPsnSeq), AckKind::NakPsnSeq);
  EXPECT_EQ(ack_kind(aeth::kNakInvReq), AckKind::NakInvReq);
  EXPECT_EQ(ack_kind(aeth::kNakRemAccess), AckKind::NakRemAccess);
  EXPECT_EQ(ack_kind(aeth::kNakRemOp), AckKind::NakRemOp);
  EXPECT_EQ(ack_kind(0x64), AckKind::Reserved);
  EXPECT_EQ(ack_kind(0x40), AckKind::Reserved);
  EXPECT_EQ(nak_status(AckKind::NakRemAccess), WcStatus::RemAccessErr);
  EXPECT_EQ(nak_status(AckKind::NakInvReq), WcStatus::RemInvReqErr);
}

TEST(HcaCoreRc, TimersFromIbaTable45AndTheLocalAckTimeout) {
  EXPECT_DOUBLE_EQ(rnr_timer_ns(1), 10e3);      // 0.01 ms
  EXPECT_DOUBLE_EQ(rnr_timer_ns(12), 640e3);    // 0.64 ms
  EXPECT_DOUBLE_EQ(rnr_timer_ns(14), 1.28e6);   // 1.28 ms
  EXPECT_DOUBLE_EQ(rnr_timer_ns(31), 491.52e6); // 491.52 ms
  EXPECT_DOUBLE_EQ(rnr_timer_ns(0), 655.36e6);  // 655.36 ms
  EXPECT_DOUBLE_EQ(local_ack_timeout_ns(14), 4096.0 * 16384);  // 67.108864 ms
  EXPECT_DOUBLE_EQ(local_ack_timeout_ns(1), 8192.0);
  EXPECT_DOUBLE_EQ(local_ack_timeout_ns(0), 0.0);  // no timer
}

TEST(HcaCoreRc, RetryCntCountsRetriesWithoutProgress) {
  RetryCounter r(2);
  EXPECT_TRUE(r.retry());
  EXPECT_TRUE(r.retry());
  EXPECT_FALSE(r.retry());  // the third without progress: RETRY_EXC_ERR
  r.progress();
  EXPECT_TRUE(r.retry());
  RetryCounter zero(0);
  EXPECT_FALSE(zero.retry());  // retry_cnt 0: the first timeout ends the WR
}

TEST(HcaCoreRc, RnrRetrySevenIsForEver) {
  RnrCounter r(1);
  EXPECT_TRUE(r.retry());
  EXPECT_FALSE(r.retry());
  RnrCounter zero(0);
  EXPECT_FALSE(zero.retry());
  RnrCounter ever(kRnrRetryForever);
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(ever.retry());
  EXPECT_THROW(RnrCounter(8), sdp::VerbsError);
}

// A stage takes one job at a time, first come first served (hca/stage.h). Jobs of 100 ns arriving
// at 0, 30 and 500 ns: the first starts at once, the second waits for it (starts at 100), the third
// finds the unit free again (starts at 500). Busy time 300 ns over 3 jobs; free at 600.
TEST(HcaStage, JobsQueueBehindTheOneInTheUnitOnly) {
  Stage s;
  EXPECT_EQ(s.take(0, 100), 0);
  EXPECT_EQ(s.take(30, 100), 100);
  EXPECT_EQ(s.free_at_ns(), 200);
  EXPECT_EQ(s.take(500, 100), 500);
  EXPECT_EQ(s.free_at_ns(), 600);
  EXPECT_EQ(s.busy_ns(), 300);
  EXPECT_EQ(s.jobs(), 3u);
  // A stage of 0 ns never delays: a job at the time the last one started starts with it.
  Stage none;
  EXPECT_EQ(none.take(10, 0), 10);
  EXPECT_EQ(none.take(10, 0), 10);
}
