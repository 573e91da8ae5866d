// The verbs shim's QPs and CQs without the CM, in one process (the test links
// libhcasim-verbs-emu.so itself, so ibv_* are the shim's): ibv_modify_qp(3)'s RC transitions
// and attr_mask checks (EINVAL for a missing or a foreign attribute, the QP unchanged),
// ibv_query_qp(3), two QPs of one process connected through the emulated subnet (one port,
// so the QPN decides which side connects) with the given PSNs, and CQs shared by several QPs,
// a send CQ apart from the receive CQ, and completion events through a channel's fd polled
// with poll(2).
#include <gtest/gtest.h>

#include <infiniband/verbs.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/forked_child.h"
#include "tests/subnet_env.h"
#include "tests/verbs_fixture.h"

namespace {

/// An MR's access for a window over it; IBV_ACCESS_MW_BIND is of another enumeration in
/// <infiniband/verbs.h> (ib_uverbs_access_flags), hence the int.
constexpr int kWindowable =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | static_cast<int>(IBV_ACCESS_MW_BIND);

const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new hcasim::testing::SubnetEnv("hcasim-qp-test"));
using hcasim::testing::kLid;
using hcasim::testing::VerbsQp;

// ibv_reg_mr(3): "If IBV_ACCESS_REMOTE_WRITE or IBV_ACCESS_REMOTE_ATOMIC is set, then
// IBV_ACCESS_LOCAL_WRITE must be set too"; the kernel answers EINVAL, and so does the shim.
TEST_F(VerbsQp, RemoteWriteOrAtomicWithoutLocalWriteIsEinval) {
  for (const int access : {int{IBV_ACCESS_REMOTE_WRITE}, IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_REMOTE_READ}) {
    errno = 0;
    EXPECT_EQ(ibv_reg_mr(pd, buf.data(), 64, access), nullptr) << access;
    EXPECT_EQ(errno, EINVAL) << access;
  }
  ibv_mr* ok = ibv_reg_mr(pd, buf.data(), 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  ASSERT_NE(ok, nullptr);
  EXPECT_EQ(ibv_dereg_mr(ok), 0);
}

TEST_F(VerbsQp, CreatedInResetAndQueriedBack) {
  ibv_cq* cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
  ibv_qp* qp = make_qp(cq, cq);
  ASSERT_NE(qp, nullptr);
  ibv_qp_attr a{};
  ibv_qp_init_attr init{};
  ASSERT_EQ(ibv_query_qp(qp, &a, IBV_QP_STATE, &init), 0);
  EXPECT_EQ(a.qp_state, IBV_QPS_RESET);
  EXPECT_EQ(init.cap.max_send_wr, 64u);
  EXPECT_EQ(init.send_cq, cq);
  EXPECT_EQ(ibv_destroy_cq(cq), EBUSY);  // a QP is on it
  EXPECT_EQ(ibv_destroy_qp(qp), 0);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
}

TEST_F(VerbsQp, ModifyQpRefusesMissingAndForeignAttributes) {
  ibv_cq* cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
  ibv_qp* qp = make_qp(cq, cq);
  ibv_qp* peer = make_qp(cq, cq);
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.port_num = 1;
  // RESET -> INIT without IBV_QP_ACCESS_FLAGS; RESET -> RTR; INIT with port 2; RESET -> INIT
  // with a DEST_QPN it does not take.
  EXPECT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT), EINVAL);
  EXPECT_EQ(to_rtr(qp, peer->qp_num, 0), EINVAL);
  a.port_num = 2;
  EXPECT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), EINVAL);
  a.port_num = 1;
  EXPECT_EQ(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS | IBV_QP_DEST_QPN),
            EINVAL);
  ibv_qp_attr q{};
  ibv_qp_init_attr init{};
  ASSERT_EQ(ibv_query_qp(qp, &q, IBV_QP_STATE, &init), 0);
  EXPECT_EQ(q.qp_state, IBV_QPS_RESET);  // unchanged by the refusals
  ASSERT_EQ(to_init(qp), 0);
  // INIT -> RTR without RQ_PSN, without MIN_RNR_TIMER; INIT -> RTS.
  EXPECT_EQ(to_rtr(qp, peer->qp_num, 0, kRtrMask & ~IBV_QP_RQ_PSN), EINVAL);
  EXPECT_EQ(to_rtr(qp, peer->qp_num, 0, kRtrMask & ~IBV_QP_MIN_RNR_TIMER), EINVAL);
  EXPECT_EQ(to_rts(qp, 0), EINVAL);
  ASSERT_EQ(to_rtr(qp, peer->qp_num, 0x123456), 0);
  // RTR -> RTS without SQ_PSN, with a retry_cnt of 8.
  EXPECT_EQ(to_rts(qp, 1, kRtsMask & ~IBV_QP_SQ_PSN), EINVAL);
  ibv_qp_attr r{};
  r.qp_state = IBV_QPS_RTS;
  r.retry_cnt = 8;
  EXPECT_EQ(ibv_modify_qp(qp, &r, kRtsMask), EINVAL);
  ASSERT_EQ(to_rts(qp, 0xABCDEF), 0);
  ASSERT_EQ(ibv_query_qp(qp, &q, IBV_QP_STATE, &init), 0);
  EXPECT_EQ(q.qp_state, IBV_QPS_RTS);
  EXPECT_EQ(q.dest_qp_num, peer->qp_num);
  EXPECT_EQ(q.rq_psn, 0x123456u);
  EXPECT_EQ(q.sq_psn, 0xABCDEFu);
  EXPECT_EQ(q.path_mtu, IBV_MTU_1024);
  EXPECT_EQ(q.min_rnr_timer, 12);
  EXPECT_EQ(q.timeout, 14);
  EXPECT_EQ(q.ah_attr.dlid, kLid);
  // IBV_QP_CUR_STATE that is not the current state; RTS -> RTR.
  ibv_qp_attr c{};
  c.qp_state = IBV_QPS_RTS;
  c.cur_qp_state = IBV_QPS_RTR;
  EXPECT_EQ(ibv_modify_qp(qp, &c, IBV_QP_STATE | IBV_QP_CUR_STATE), EINVAL);
  EXPECT_EQ(to_rtr(qp, peer->qp_num, 0), EINVAL);
  // Any state -> ERR -> RESET.
  ibv_qp_attr e{};
  e.qp_state = IBV_QPS_ERR;
  EXPECT_EQ(ibv_modify_qp(qp, &e, IBV_QP_STATE), 0);
  e.qp_state = IBV_QPS_RESET;
  EXPECT_EQ(ibv_modify_qp(qp, &e, IBV_QP_STATE), 0);
  ASSERT_EQ(ibv_query_qp(qp, &q, IBV_QP_STATE, &init), 0);
  EXPECT_EQ(q.qp_state, IBV_QPS_RESET);
  ibv_destroy_qp(qp);
  ibv_destroy_qp(peer);
  ibv_destroy_cq(cq);
}

TEST_F(VerbsQp, ConnectedByModifyQpWithGivenPsnsAndSharedCqs) {
  // Two pairs on one send CQ; receives on a CQ of their own: four QPs, two CQs.
  ibv_cq* scq = ibv_create_cq(ctx, 64, nullptr, nullptr, 0);
  ibv_cq* rcq = ibv_create_cq(ctx, 64, nullptr, nullptr, 0);
  ibv_qp* a1 = make_qp(scq, rcq);
  ibv_qp* b1 = make_qp(scq, rcq);
  ibv_qp* a2 = make_qp(scq, rcq);
  ibv_qp* b2 = make_qp(scq, rcq);
  ASSERT_TRUE(a1 && b1 && a2 && b2);
  connect(a1, b1, 0xFFFFFE, 0x10);  // a1's PSNs wrap past 2^24
  connect(b2, a2, 7, 0x800000);     // the higher QPN's RTR first
  for (int i = 0; i < 4; ++i) {
    post_recv(b1, 100 + i, 1024 * i, 1024);
    post_recv(b2, 200 + i, 8192 + 1024 * i, 1024);
  }
  for (int i = 0; i < 4; ++i) {
    post_send(a1, 10 + i, 32768, 100 + i);
    post_send(a2, 20 + i, 32768, 200 + i);
  }
  const auto sends = poll_n(scq, 8);
  const auto recvs = poll_n(rcq, 8);
  ASSERT_EQ(sends.size(), 8u);
  ASSERT_EQ(recvs.size(), 8u);
  int next1 = 10, next2 = 20;
  for (const ibv_wc& w : sends) {
    EXPECT_EQ(w.status, IBV_WC_SUCCESS);
    EXPECT_EQ(w.opcode, IBV_WC_SEND);
    ASSERT_TRUE(w.qp_num == a1->qp_num || w.qp_num == a2->qp_num);
    EXPECT_EQ(w.wr_id, static_cast<uint64_t>(w.qp_num == a1->qp_num ? next1++ : next2++));  // in order per QP
  }
  int r1 = 0, r2 = 0;
  for (const ibv_wc& w : recvs) {
    EXPECT_EQ(w.status, IBV_WC_SUCCESS);
    EXPECT_EQ(w.opcode, IBV_WC_RECV);
    if (w.qp_num == b1->qp_num) {
      EXPECT_EQ(w.wr_id, static_cast<uint64_t>(100 + r1));
      EXPECT_EQ(w.byte_len, static_cast<uint32_t>(100 + r1++));
    } else {
      EXPECT_EQ(w.qp_num, b2->qp_num);
      EXPECT_EQ(w.wr_id, static_cast<uint64_t>(200 + r2));
      EXPECT_EQ(w.byte_len, static_cast<uint32_t>(200 + r2++));
    }
  }
  EXPECT_EQ(r1, 4);
  EXPECT_EQ(r2, 4);
  for (ibv_qp* q : {a1, b1, a2, b2}) ibv_destroy_qp(q);
  EXPECT_EQ(ibv_destroy_cq(scq), 0);
  EXPECT_EQ(ibv_destroy_cq(rcq), 0);
}

TEST_F(VerbsQp, RequestsBeforeThePeersRtrWait) {
  ibv_cq* cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
  ibv_qp* a = make_qp(cq, cq);
  ibv_qp* b = make_qp(cq, cq);
  ASSERT_EQ(to_init(a), 0);
  ASSERT_EQ(to_init(b), 0);
  // a (the lower QPN: it connects) is at RTS and sends while b is still in INIT.
  ASSERT_EQ(to_rtr(a, b->qp_num, 5), 0);
  ASSERT_EQ(to_rts(a, 9), 0);
  post_send(a, 1, 0, 64);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ibv_wc wc;
  EXPECT_EQ(ibv_poll_cq(cq, 1, &wc), 0);
  post_recv(b, 2, 4096, 64);
  ASSERT_EQ(to_rtr(b, a->qp_num, 9), 0);
  ASSERT_EQ(to_rts(b, 5), 0);
  const auto got = poll_n(cq, 2);
  ASSERT_EQ(got.size(), 2u);
  for (const ibv_wc& w : got) EXPECT_EQ(w.status, IBV_WC_SUCCESS) << ibv_wc_status_str(w.status);
  ibv_destroy_qp(a);
  ibv_destroy_qp(b);
  ibv_destroy_cq(cq);
}

TEST_F(VerbsQp, CompletionEventsPerCqThroughThePolledChannelFd) {
  ibv_comp_channel* ch = ibv_create_comp_channel(ctx);
  ibv_cq* scq = ibv_create_cq(ctx, 16, reinterpret_cast<void*>(0x5), ch, 0);
  ibv_cq* rcq = ibv_create_cq(ctx, 16, reinterpret_cast<void*>(0x6), ch, 0);
  ibv_qp* a = make_qp(scq, rcq);
  ibv_qp* b = make_qp(scq, rcq);
  connect(a, b, 1, 2);
  ASSERT_EQ(ibv_req_notify_cq(rcq, 0), 0);
  pollfd p{ch->fd, POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 0);  // nothing yet
  post_recv(b, 7, 0, 64);
  post_send(a, 8, 4096, 64);  // scq is not armed: its completion raises no event
  ASSERT_EQ(::poll(&p, 1, 10000), 1);
  ibv_cq* ev = nullptr;
  void* ctx_of = nullptr;
  ASSERT_EQ(ibv_get_cq_event(ch, &ev, &ctx_of), 0);
  EXPECT_EQ(ev, rcq);
  EXPECT_EQ(ctx_of, reinterpret_cast<void*>(0x6));
  ibv_ack_cq_events(ev, 1);
  EXPECT_EQ(poll_n(rcq, 1).size(), 1u);
  EXPECT_EQ(poll_n(scq, 1).size(), 1u);
  EXPECT_EQ(::poll(&p, 1, 50), 0);  // one event per arming
  ibv_destroy_qp(a);
  ibv_destroy_qp(b);
  ibv_destroy_cq(scq);
  ibv_destroy_cq(rcq);
  ibv_destroy_comp_channel(ch);
}

TEST_F(VerbsQp, TwoQpsTakeTheirReceivesFromOneSrqInPostingOrder) {
  ibv_cq* cq = ibv_create_cq(ctx, 32, nullptr, nullptr, 0);
  ibv_srq_init_attr sa{};
  sa.attr.max_wr = 4;
  sa.attr.max_sge = 1;
  ibv_srq* srq = ibv_create_srq(pd, &sa);
  ASSERT_NE(srq, nullptr);
  ibv_qp_init_attr a{};
  a.send_cq = a.recv_cq = cq;
  a.srq = srq;
  a.qp_type = IBV_QPT_RC;
  a.cap.max_send_wr = 8;
  a.cap.max_send_sge = 1;
  ibv_qp* r1 = ibv_create_qp(pd, &a);
  ibv_qp* r2 = ibv_create_qp(pd, &a);
  ibv_qp* s1 = make_qp(cq, cq);
  ibv_qp* s2 = make_qp(cq, cq);
  connect(s1, r1, 1, 2);
  connect(s2, r2, 3, 4);
  for (int i = 0; i < 4; ++i) {
    ibv_sge s{reinterpret_cast<uintptr_t>(buf.data() + 1024 * i), 1024, mr->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = 50 + i;
    wr.sg_list = &s;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_srq_recv(srq, &wr, &bad), 0);
  }
  ibv_recv_wr extra{};
  ibv_recv_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_srq_recv(srq, &extra, &bad), ENOMEM);  // max_wr 4
  EXPECT_EQ(bad, &extra);
  ibv_recv_wr own{};
  EXPECT_EQ(ibv_post_recv(r1, &own, &bad), EINVAL);  // an SRQ's QP has no receive queue
  post_send(s1, 1, 8192, 10);
  ASSERT_EQ(poll_n(cq, 2).size(), 2u);
  post_send(s2, 2, 8192, 20);
  post_send(s1, 3, 8192, 30);
  const auto got = poll_n(cq, 4);
  ASSERT_EQ(got.size(), 4u);
  std::vector<uint64_t> recv_ids;
  for (const ibv_wc& w : got) {
    EXPECT_EQ(w.status, IBV_WC_SUCCESS);
    if (w.opcode == IBV_WC_RECV) recv_ids.push_back(w.wr_id);
  }
  EXPECT_EQ(recv_ids.size(), 2u);
  for (ibv_qp* q : {r1, r2, s1, s2}) ibv_destroy_qp(q);
  EXPECT_EQ(ibv_destroy_srq(srq), 0);
  ibv_destroy_cq(cq);
}

TEST_F(VerbsQp, ImmediateDataAndAtomics) {
  ibv_cq* cq = ibv_create_cq(ctx, 32, nullptr, nullptr, 0);
  ibv_qp* a = make_qp(cq, cq);
  ibv_qp* b = make_qp(cq, cq);
  ibv_mr* amr = ibv_reg_mr(pd, buf.data() + 32768, 4096,
                           IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
  connect(a, b, 100, 200);
  auto post = [&](ibv_send_wr& wr, size_t off, uint32_t len) {
    ibv_sge sg{reinterpret_cast<uintptr_t>(buf.data() + off), len, mr->lkey};
    wr.sg_list = &sg;
    wr.num_sge = 1;
    wr.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* bad = nullptr;
    return ibv_post_send(a, &wr, &bad);
  };
  // SEND_WITH_IMM and RDMA_WRITE_WITH_IMM: each consumes a receive of b with the imm_data.
  post_recv(b, 1, 0, 256);
  post_recv(b, 2, 256, 256);
  std::memcpy(buf.data() + 1024, "immediate", 9);
  ibv_send_wr s{};
  s.wr_id = 11;
  s.opcode = IBV_WR_SEND_WITH_IMM;
  s.imm_data = htonl(0xA1B2C3D4);
  ASSERT_EQ(post(s, 1024, 9), 0);
  ibv_send_wr w{};
  w.wr_id = 12;
  w.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
  w.imm_data = htonl(7);
  w.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(buf.data() + 32768 + 64);
  w.wr.rdma.rkey = amr->rkey;
  ASSERT_EQ(post(w, 1024, 9), 0);
  const auto got = poll_n(cq, 4);
  ASSERT_EQ(got.size(), 4u);
  int recvs = 0;
  for (const ibv_wc& c : got) {
    ASSERT_EQ(c.status, IBV_WC_SUCCESS) << ibv_wc_status_str(c.status);
    if (c.qp_num != b->qp_num) continue;
    EXPECT_EQ(c.src_qp, a->qp_num);
    EXPECT_NE(c.wc_flags & IBV_WC_WITH_IMM, 0u);
    if (c.wr_id == 1) {
      EXPECT_EQ(c.opcode, IBV_WC_RECV);
      EXPECT_EQ(c.imm_data, htonl(0xA1B2C3D4));
      EXPECT_EQ(c.byte_len, 9u);
    } else {
      EXPECT_EQ(c.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
      EXPECT_EQ(c.imm_data, htonl(7));
      EXPECT_EQ(c.byte_len, 9u);
    }
    ++recvs;
  }
  EXPECT_EQ(recvs, 2);
  EXPECT_EQ(std::memcmp(buf.data() + 32768 + 64, "immediate", 9), 0);
  // FETCH_AND_ADD twice, then CMP_AND_SWP that matches and one that does not.
  uint64_t target = 40;
  std::memcpy(buf.data() + 32768, &target, 8);
  const auto atomic = [&](ibv_wr_opcode op, uint64_t compare_add, uint64_t swap) {
    ibv_send_wr x{};
    x.wr_id = 20;
    x.opcode = op;
    x.wr.atomic.remote_addr = reinterpret_cast<uintptr_t>(buf.data() + 32768);
    x.wr.atomic.rkey = amr->rkey;
    x.wr.atomic.compare_add = compare_add;
    x.wr.atomic.swap = swap;
    EXPECT_EQ(post(x, 2048, 8), 0);
    const auto c = poll_n(cq, 1);
    EXPECT_EQ(c.size(), 1u);
    EXPECT_EQ(c.at(0).status, IBV_WC_SUCCESS);
    EXPECT_EQ(c.at(0).opcode, op == IBV_WR_ATOMIC_CMP_AND_SWP ? IBV_WC_COMP_SWAP : IBV_WC_FETCH_ADD);
    uint64_t orig = 0;
    std::memcpy(&orig, buf.data() + 2048, 8);
    return orig;
  };
  EXPECT_EQ(atomic(IBV_WR_ATOMIC_FETCH_AND_ADD, 2, 0), 40u);
  EXPECT_EQ(atomic(IBV_WR_ATOMIC_FETCH_AND_ADD, 3, 0), 42u);
  EXPECT_EQ(atomic(IBV_WR_ATOMIC_CMP_AND_SWP, 45, 99), 45u);
  EXPECT_EQ(atomic(IBV_WR_ATOMIC_CMP_AND_SWP, 45, 7), 99u);
  std::memcpy(&target, buf.data() + 32768, 8);
  EXPECT_EQ(target, 99u);
  // An atomic of 4 bytes is posted (libmlx4 does not check its length) and completes with a
  // local length error; the target is not touched.
  ibv_send_wr bad4{};
  bad4.wr_id = 21;
  bad4.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
  bad4.wr.atomic.remote_addr = reinterpret_cast<uintptr_t>(buf.data() + 32768);
  bad4.wr.atomic.rkey = amr->rkey;
  bad4.wr.atomic.compare_add = 1;
  EXPECT_EQ(post(bad4, 2048, 4), 0);
  const auto c4 = poll_n(cq, 1);
  ASSERT_EQ(c4.size(), 1u);
  EXPECT_EQ(c4[0].wr_id, 21u);
  EXPECT_EQ(c4[0].status, IBV_WC_LOC_LEN_ERR);
  std::memcpy(&target, buf.data() + 32768, 8);
  EXPECT_EQ(target, 99u);
  ibv_destroy_qp(a);
  ibv_destroy_qp(b);
  ibv_dereg_mr(amr);
  ibv_destroy_cq(cq);
}

// A type 2 memory window of b, bound through b's QP (IBV_WR_BIND_MW), invalidated by a's
// IBV_WR_SEND_WITH_INV over the emulated subnet (SEND Only with Invalidate, its IETH on the wire):
// b's receive completes IBV_WC_RECV with IBV_WC_WITH_INV and the window's key in
// invalidated_rkey (libmlx4 mlx4_poll_one), and a's RDMA WRITE through it is refused
// afterwards. While the window is bound, ibv_dereg_mr and ibv_rereg_mr of its MR return EBUSY
// and leave it registered (mlx4: HW2SW_MPT fails with REG_BOUND); invalidated, it deregisters.
TEST_F(VerbsQp, SendWithInvalidateInvalidatesTheWindowAndFreesItsMr) {
  ibv_cq* cq = ibv_create_cq(ctx, 32, nullptr, nullptr, 0);
  ibv_qp* a = make_qp(cq, cq);
  ibv_qp* b = make_qp(cq, cq);
  ibv_mr* wmr = ibv_reg_mr(pd, buf.data() + 32768, 4096, kWindowable);
  ASSERT_NE(wmr, nullptr);
  ibv_mw* mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
  ASSERT_NE(mw, nullptr);
  connect(a, b, 100, 200);
  const uint32_t key = bind_type2(b, cq, mw, wmr, reinterpret_cast<uintptr_t>(buf.data() + 32768), 1024);
  ASSERT_NE(key, 0u);
  EXPECT_EQ(ibv_dereg_mr(wmr), EBUSY);
  EXPECT_EQ(ibv_rereg_mr(wmr, IBV_REREG_MR_CHANGE_ACCESS, nullptr, nullptr, 0, IBV_ACCESS_LOCAL_WRITE),
            IBV_REREG_MR_ERR_CMD);
  EXPECT_EQ(errno, EBUSY);
  auto post = [&](ibv_send_wr& wr, size_t off, uint32_t len) {
    ibv_sge sg{reinterpret_cast<uintptr_t>(buf.data() + off), len, mr->lkey};
    wr.sg_list = &sg;
    wr.num_sge = 1;
    wr.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* b2 = nullptr;
    return ibv_post_send(a, &wr, &b2);
  };
  // The window still works after the refused dereg: a writes through it.
  std::memcpy(buf.data() + 1024, "window", 6);
  ibv_send_wr w{};
  w.wr_id = 2;
  w.opcode = IBV_WR_RDMA_WRITE;
  w.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(buf.data() + 32768);
  w.wr.rdma.rkey = key;
  ASSERT_EQ(post(w, 1024, 6), 0);
  const auto c2 = poll_n(cq, 1);
  ASSERT_EQ(c2.size(), 1u);
  EXPECT_EQ(c2[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(std::memcmp(buf.data() + 32768, "window", 6), 0);
  // SEND with Invalidate of the window's key.
  post_recv(b, 3, 0, 256);
  std::memcpy(buf.data() + 2048, "invalidate", 10);
  ibv_send_wr inv{};
  inv.wr_id = 4;
  inv.opcode = IBV_WR_SEND_WITH_INV;
  inv.invalidate_rkey = key;
  ASSERT_EQ(post(inv, 2048, 10), 0);
  const auto c3 = poll_n(cq, 2);
  ASSERT_EQ(c3.size(), 2u);
  for (const ibv_wc& c : c3) {
    EXPECT_EQ(c.status, IBV_WC_SUCCESS) << c.wr_id;
    if (c.wr_id == 3) {
      EXPECT_EQ(c.opcode, IBV_WC_RECV);
      EXPECT_EQ(c.byte_len, 10u);
      EXPECT_EQ(c.wc_flags & (IBV_WC_WITH_INV | IBV_WC_WITH_IMM), unsigned{IBV_WC_WITH_INV});
      EXPECT_EQ(c.invalidated_rkey, key);
    } else {
      EXPECT_EQ(c.wr_id, 4u);
      EXPECT_EQ(c.opcode, IBV_WC_SEND);
    }
  }
  EXPECT_EQ(std::memcmp(buf.data(), "invalidate", 10), 0);
  // Invalidated: the key is refused, and the MR deregisters.
  w.wr_id = 5;
  ASSERT_EQ(post(w, 1024, 6), 0);
  const auto c4 = poll_n(cq, 1);
  ASSERT_EQ(c4.size(), 1u);
  EXPECT_EQ(c4[0].status, IBV_WC_REM_ACCESS_ERR);
  EXPECT_EQ(ibv_dereg_mr(wmr), 0);
  ibv_destroy_qp(a);
  ibv_destroy_qp(b);
  EXPECT_EQ(ibv_dealloc_mw(mw), 0);
  ibv_destroy_cq(cq);
}

// The same invalidation between two processes over the emulated subnet: this process (LID 1)
// binds a type 2 window through its QP; a forked child opens the device anew (a port of its own,
// LID 2), connects a QP of its own to it and sends SEND with Invalidate of the window's key,
// learnt through a pipe as a program learns it from its peer. The receive here completes with
// IBV_WC_WITH_INV and the key, and the MR, EBUSY before, deregisters.
TEST_F(VerbsQp, SendWithInvalidateFromAnotherProcess) {
  ibv_cq* cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
  ibv_qp* b = make_qp(cq, cq);
  ibv_mr* wmr = ibv_reg_mr(pd, buf.data() + 32768, 4096, kWindowable);
  ibv_mw* mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
  ASSERT_TRUE(b && wmr && mw);
  int to_parent[2], to_child[2];
  ASSERT_EQ(::pipe(to_parent), 0);
  ASSERT_EQ(::pipe(to_child), 0);
  const uint32_t b_qpn = b->qp_num;
  // This process's port claims its LID (1) before the child claims one of its own.
  ibv_port_attr own{};
  ASSERT_EQ(ibv_query_port(ctx, 1, &own), 0);
  ASSERT_EQ(own.lid, kLid);
  // The I/O thread idle when the child is made (AForkedChildsVerbsLeaveTheParentsQpsAndLidAlone).
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const pid_t child = ::fork();
  if (child == 0) {
    hcasim::testing::forked_child_leaks_are_not_errors();
    ::close(to_parent[0]);
    ::close(to_child[1]);
    int failed = 0;  // the first check that failed, as the exit status
    auto check = [&failed](bool ok, int code) {
      if (!ok && failed == 0) failed = code;
    };
    ibv_context* c = hcasim::testing::context();
    ibv_port_attr pa{};
    check(c != nullptr && ibv_query_port(c, 1, &pa) == 0 && pa.lid == 2, 10);
    ibv_pd* p = ibv_alloc_pd(c);
    std::vector<char> mine(1 << 12);
    std::memcpy(mine.data(), "from the child", 14);
    ibv_mr* m = ibv_reg_mr(p, mine.data(), mine.size(), int{IBV_ACCESS_LOCAL_WRITE});
    ibv_cq* q = ibv_create_cq(c, 16, nullptr, nullptr, 0);
    ibv_qp* x = make_qp(q, q, p);
    check(p && m && q && x, 11);
    uint32_t key = 0;
    if (failed == 0) {
      const uint32_t qpn = x->qp_num;
      check(::write(to_parent[1], &qpn, 4) == 4, 12);
      check(to_init(x) == 0 && to_rtr(x, b_qpn, 300, kRtrMask, kLid) == 0 && to_rts(x, 400) == 0, 13);
      check(::read(to_child[0], &key, 4) == 4, 14);
    }
    if (failed == 0) {
      ibv_sge sg{reinterpret_cast<uintptr_t>(mine.data()), 14, m->lkey};
      ibv_send_wr wr{};
      wr.wr_id = 7;
      wr.sg_list = &sg;
      wr.num_sge = 1;
      wr.opcode = IBV_WR_SEND_WITH_INV;
      wr.send_flags = IBV_SEND_SIGNALED;
      wr.invalidate_rkey = key;
      ibv_send_wr* bad = nullptr;
      check(ibv_post_send(x, &wr, &bad) == 0, 15);
      const auto got = poll_n(q, 1);
      check(got.size() == 1 && got[0].status == IBV_WC_SUCCESS && got[0].opcode == IBV_WC_SEND, 16);
      ibv_destroy_qp(x);
    }
    // _exit: no exit handlers, so no LeakSanitizer check of the parent's objects this child
    // inherited (held by the parent's threads, which do not exist here: false leaks). The LID
    // file the child leaves names a dead process, which the next claimant reclaims.
    ::_exit(failed);
  }
  ASSERT_GT(child, 0);
  ::close(to_parent[1]);  // a child that ends early is an end of file here, not a hang
  ::close(to_child[0]);
  uint32_t x_qpn = 0;
  ASSERT_EQ(::read(to_parent[0], &x_qpn, 4), 4) << "the child ended first";
  ASSERT_EQ(to_init(b), 0);
  ASSERT_EQ(to_rtr(b, x_qpn, 400, kRtrMask, 2), 0);  // the child's port
  ASSERT_EQ(to_rts(b, 300), 0);
  const uint32_t key = bind_type2(b, cq, mw, wmr, reinterpret_cast<uintptr_t>(buf.data() + 32768), 4096);
  ASSERT_NE(key, 0u);
  EXPECT_EQ(ibv_dereg_mr(wmr), EBUSY);
  post_recv(b, 2, 0, 256);
  ASSERT_EQ(::write(to_child[1], &key, 4), 4);
  const auto c2 = poll_n(cq, 1);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child's first failed check (see the test)";
  ASSERT_EQ(c2.size(), 1u);
  EXPECT_EQ(c2[0].wr_id, 2u);
  EXPECT_EQ(c2[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(c2[0].opcode, IBV_WC_RECV);
  EXPECT_EQ(c2[0].byte_len, 14u);
  EXPECT_EQ(c2[0].wc_flags & IBV_WC_WITH_INV, unsigned{IBV_WC_WITH_INV});
  EXPECT_EQ(c2[0].invalidated_rkey, key);
  EXPECT_EQ(c2[0].src_qp, x_qpn);
  EXPECT_EQ(std::memcmp(buf.data(), "from the child", 14), 0);
  EXPECT_EQ(ibv_dereg_mr(wmr), 0);
  for (int fd : {to_parent[0], to_child[1]}) ::close(fd);
  ibv_destroy_qp(b);
  EXPECT_EQ(ibv_dealloc_mw(mw), 0);
  ibv_destroy_cq(cq);
}

TEST_F(VerbsQp, UdDatagramsByAddressHandleWithQkeyCheck) {
  ibv_cq* cq = ibv_create_cq(ctx, 32, nullptr, nullptr, 0);
  ibv_qp_init_attr ia{};
  ia.send_cq = ia.recv_cq = cq;
  ia.qp_type = IBV_QPT_UD;
  ia.cap.max_send_wr = ia.cap.max_recv_wr = 8;
  ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
  ibv_qp* a = ibv_create_qp(pd, &ia);
  ibv_qp* b = ibv_create_qp(pd, &ia);
  ASSERT_TRUE(a && b);
  for (ibv_qp* q : {a, b}) {
    ibv_qp_attr m{};
    m.qp_state = IBV_QPS_INIT;
    m.port_num = 1;
    m.qkey = 0x11111111;
    // UD: RESET -> INIT needs IBV_QP_QKEY and takes no ACCESS_FLAGS.
    EXPECT_EQ(ibv_modify_qp(q, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT), EINVAL);
    EXPECT_EQ(ibv_modify_qp(q, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY | IBV_QP_ACCESS_FLAGS),
              EINVAL);
    ASSERT_EQ(ibv_modify_qp(q, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY), 0);
    m.qp_state = IBV_QPS_RTR;
    ASSERT_EQ(ibv_modify_qp(q, &m, IBV_QP_STATE), 0);
    m.qp_state = IBV_QPS_RTS;
    m.sq_psn = 5;
    ASSERT_EQ(ibv_modify_qp(q, &m, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
  }
  ibv_ah_attr aa{};
  aa.dlid = kLid;
  aa.port_num = 1;
  ibv_ah* ah = ibv_create_ah(pd, &aa);
  ASSERT_NE(ah, nullptr);
  post_recv(b, 1, 0, 40 + 64);
  std::memcpy(buf.data() + 4096, "datagram", 8);
  auto send = [&](uint32_t qkey) {
    ibv_sge sg{reinterpret_cast<uintptr_t>(buf.data() + 4096), 8, mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = 9;
    wr.sg_list = &sg;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND_WITH_IMM;
    wr.imm_data = htonl(3);
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.ud.ah = ah;
    wr.wr.ud.remote_qpn = b->qp_num;
    wr.wr.ud.remote_qkey = qkey;
    ibv_send_wr* bad = nullptr;
    return ibv_post_send(a, &wr, &bad);
  };
  ASSERT_EQ(send(0x22222222), 0);  // a wrong Q_Key: dropped at b
  ASSERT_EQ(send(0x11111111), 0);
  const auto got = poll_n(cq, 3);
  ASSERT_EQ(got.size(), 3u);
  int recvs = 0;
  for (const ibv_wc& c : got) {
    EXPECT_EQ(c.status, IBV_WC_SUCCESS);
    if (c.opcode != IBV_WC_RECV) continue;
    ++recvs;
    EXPECT_EQ(c.byte_len, 48u);  // 40 bytes of GRH room, then the payload
    EXPECT_EQ(c.src_qp, a->qp_num);
    EXPECT_EQ(c.slid, kLid);
    EXPECT_EQ(c.imm_data, htonl(3));
    EXPECT_EQ(std::memcmp(buf.data() + 40, "datagram", 8), 0);
  }
  EXPECT_EQ(recvs, 1);
  ibv_wc extra;
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(ibv_poll_cq(cq, 1, &extra), 0);
  ibv_destroy_ah(ah);
  ibv_destroy_qp(a);
  ibv_destroy_qp(b);
  ibv_destroy_cq(cq);
}

}  // namespace

// The peer QP destroyed (its process done) with nothing on the wire: the QP is not told, as on
// a real HCA (no flush of its receives); a send afterwards gets no answer: RETRY_EXC_ERR, and
// then the receives flush.
TEST_F(VerbsQp, APeerDestroyedLeavesTheQpAsItIsUntilItSends) {
  ibv_cq* cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
  ibv_qp* a = make_qp(cq, cq);
  ibv_qp* b = make_qp(cq, cq);
  connect(a, b, 1, 2);
  post_recv(b, 1, 0, 64);
  post_send(a, 2, 4096, 64);
  ASSERT_EQ(poll_n(cq, 2).size(), 2u);
  post_recv(a, 3, 0, 64);
  ASSERT_EQ(ibv_destroy_qp(b), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ibv_wc wc;
  EXPECT_EQ(ibv_poll_cq(cq, 1, &wc), 0);
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  ASSERT_EQ(ibv_query_qp(a, &attr, IBV_QP_STATE, &init), 0);
  EXPECT_EQ(attr.qp_state, IBV_QPS_RTS);
  post_send(a, 4, 4096, 64);
  const auto got = poll_n(cq, 2);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].wr_id, 4u);
  EXPECT_EQ(got[0].status, IBV_WC_RETRY_EXC_ERR) << ibv_wc_status_str(got[0].status);
  EXPECT_EQ(got[1].wr_id, 3u);
  EXPECT_EQ(got[1].status, IBV_WC_WR_FLUSH_ERR) << ibv_wc_status_str(got[1].status);
  ibv_destroy_qp(a);
  ibv_destroy_cq(cq);
}

// XRC (IBA 1.2.1 annex A14) through the shim: ibv_open_xrcd(3)'s file and oflags rules (the
// kernel's ib_uverbs_open_xrcd), an XRC SRQ, XRC send and receive QPs connected by ibv_modify_qp,
// a SEND naming the SRQ in wr.qp_type.xrc.remote_srqn (its receive completes on the SRQ's CQ, with
// the receive QP's number), and a SEND naming no XRC SRQ (NAK invalid request).
TEST_F(VerbsQp, XrcSendsLandInTheSrqTheyNameAndCompleteOnItsCq) {
  char path[] = "/tmp/hcasim-xrcd-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ibv_xrcd_init_attr xa{};
  xa.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
  xa.fd = fd;
  xa.oflags = 0;  // no domain for this file yet, and no O_CREAT
  errno = 0;
  EXPECT_EQ(ibv_open_xrcd(ctx, &xa), nullptr);
  EXPECT_EQ(errno, EINVAL);
  xa.oflags = O_CREAT;
  ibv_xrcd* xrcd = ibv_open_xrcd(ctx, &xa);
  ASSERT_NE(xrcd, nullptr);
  xa.oflags = O_CREAT | O_EXCL;  // the file has its domain already
  errno = 0;
  EXPECT_EQ(ibv_open_xrcd(ctx, &xa), nullptr);
  EXPECT_EQ(errno, EINVAL);
  xa.oflags = 0;
  ibv_xrcd* again = ibv_open_xrcd(ctx, &xa);  // the same domain, opened twice
  ASSERT_NE(again, nullptr);
  xa.fd = 9999;
  errno = 0;
  EXPECT_EQ(ibv_open_xrcd(ctx, &xa), nullptr);
  EXPECT_EQ(errno, EBADF);
  xa.comp_mask = IBV_XRCD_INIT_ATTR_FD;  // OFLAGS is required
  xa.fd = -1;
  errno = 0;
  EXPECT_EQ(ibv_open_xrcd(ctx, &xa), nullptr);
  EXPECT_EQ(errno, EINVAL);
  xa.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
  ibv_xrcd* other = ibv_open_xrcd(ctx, &xa);  // fd -1: a domain of its own
  ASSERT_NE(other, nullptr);

  ibv_cq* cq = ibv_create_cq(ctx, 32, nullptr, nullptr, 0);
  ibv_cq* scq = ibv_create_cq(ctx, 32, nullptr, nullptr, 0);
  auto make_srq = [&](ibv_xrcd* x) {
    ibv_srq_init_attr_ex sa{};
    sa.attr.max_wr = 8;
    sa.attr.max_sge = 1;
    sa.srq_type = IBV_SRQT_XRC;
    sa.pd = pd;
    sa.xrcd = x;
    sa.cq = cq;
    sa.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
    return ibv_create_srq_ex(ctx, &sa);
  };
  ibv_srq* srq = make_srq(xrcd);
  ibv_srq* foreign = make_srq(other);
  ASSERT_TRUE(srq && foreign);
  uint32_t srqn = 0, foreign_n = 0;
  ASSERT_EQ(ibv_get_srq_num(srq, &srqn), 0);
  ASSERT_EQ(ibv_get_srq_num(foreign, &foreign_n), 0);
  EXPECT_NE(srqn, foreign_n);
  EXPECT_EQ(ibv_close_xrcd(other), EBUSY);  // its SRQ is on it

  ibv_qp_init_attr_ex ra{};
  ra.qp_type = IBV_QPT_XRC_RECV;
  ra.comp_mask = IBV_QP_INIT_ATTR_XRCD;
  ra.xrcd = xrcd;
  ibv_qp* recv = ibv_create_qp_ex(ctx, &ra);
  ASSERT_NE(recv, nullptr);
  ibv_qp_init_attr_ex sa{};
  sa.qp_type = IBV_QPT_XRC_SEND;
  sa.comp_mask = IBV_QP_INIT_ATTR_PD;
  sa.pd = pd;
  sa.send_cq = scq;
  sa.cap.max_send_wr = 8;
  sa.cap.max_send_sge = 1;
  ibv_qp* send = ibv_create_qp_ex(ctx, &sa);
  ASSERT_NE(send, nullptr);
  ra.comp_mask = 0;  // an XRC receive QP without its domain
  errno = 0;
  EXPECT_EQ(ibv_create_qp_ex(ctx, &ra), nullptr);
  EXPECT_EQ(errno, EINVAL);
  // The XRC send QP has no responder: RTR takes no responder resources or RNR timer (the
  // kernel's qp_state_table for IB_QPT_XRC_INI refuses them, EINVAL).
  constexpr int kXrcSendRtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
  ASSERT_EQ(to_init(send), 0);
  ASSERT_EQ(to_init(recv), 0);
  EXPECT_EQ(to_rtr(send, recv->qp_num, 20), EINVAL);
  ASSERT_EQ(to_rtr(send, recv->qp_num, 20, kXrcSendRtr), 0);
  ASSERT_EQ(to_rtr(recv, send->qp_num, 10), 0);
  ASSERT_EQ(to_rts(send, 10), 0);
  ASSERT_EQ(to_rts(recv, 20, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_SQ_PSN), 0);  // an XRC target's RTS needs no more

  ibv_sge s{reinterpret_cast<uintptr_t>(buf.data()), 1024, mr->lkey};
  ibv_recv_wr rw{};
  rw.wr_id = 77;
  rw.sg_list = &s;
  rw.num_sge = 1;
  ibv_recv_wr* rbad = nullptr;
  ASSERT_EQ(ibv_post_srq_recv(srq, &rw, &rbad), 0);
  std::memcpy(buf.data() + 8192, "xrc!", 4);
  ibv_sge g{reinterpret_cast<uintptr_t>(buf.data() + 8192), 300, mr->lkey};
  ibv_send_wr wr{};
  wr.wr_id = 5;
  wr.sg_list = &g;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_SEND;
  wr.send_flags = IBV_SEND_SIGNALED;
  wr.qp_type.xrc.remote_srqn = srqn;
  ibv_send_wr* bad = nullptr;
  ASSERT_EQ(ibv_post_send(send, &wr, &bad), 0);
  const auto got = poll_n(cq, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(got[0].wr_id, 77u);
  EXPECT_EQ(got[0].opcode, IBV_WC_RECV);
  EXPECT_EQ(got[0].byte_len, 300u);
  EXPECT_EQ(got[0].qp_num, recv->qp_num);
  EXPECT_EQ(std::memcmp(buf.data(), "xrc!", 4), 0);
  const auto sent = poll_n(scq, 1);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].status, IBV_WC_SUCCESS);

  wr.wr_id = 6;
  wr.qp_type.xrc.remote_srqn = foreign_n;  // an XRC SRQ of another domain
  ASSERT_EQ(ibv_post_send(send, &wr, &bad), 0);
  const auto refused = poll_n(scq, 1);
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused[0].status, IBV_WC_REM_INV_REQ_ERR);
  EXPECT_EQ(refused[0].wr_id, 6u);

  EXPECT_EQ(ibv_destroy_qp(send), 0);
  EXPECT_EQ(ibv_destroy_qp(recv), 0);
  EXPECT_EQ(ibv_destroy_srq(srq), 0);
  EXPECT_EQ(ibv_destroy_srq(foreign), 0);
  EXPECT_EQ(ibv_close_xrcd(other), 0);
  EXPECT_EQ(ibv_close_xrcd(again), 0);
  EXPECT_EQ(ibv_close_xrcd(xrcd), 0);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
  EXPECT_EQ(ibv_destroy_cq(scq), 0);
  ::close(fd);
  ::unlink(path);
}
