#pragma once
/// \file The verbs shim's device opened in the test process (which links the shim), a PD, a
/// 64 KiB registered buffer, and RC QPs of one process connected through the emulated subnet
/// by ibv_modify_qp(3) (one port, LID 1: the QPN decides which side connects). A test binary
/// that includes it installs tests/subnet_env.h's SubnetEnv first.
#include <gtest/gtest.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

namespace hcasim::testing {

inline constexpr uint16_t kLid = 1;

inline ibv_context* context() {
  int n = 0;
  ibv_context** list = rdma_get_devices(&n);
  EXPECT_EQ(n, 1);
  ibv_context* c = list[0];
  rdma_free_devices(list);
  return c;
}

struct VerbsQp : ::testing::Test {
  ibv_context* ctx = context();
  ibv_pd* pd = ibv_alloc_pd(ctx);
  std::vector<char> buf = std::vector<char>(1 << 16);
  ibv_mr* mr = ibv_reg_mr(pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  ~VerbsQp() override {
    ibv_dereg_mr(mr);
    ibv_dealloc_pd(pd);
  }

  /// A QP of `type` (RC unless given) of 64 WRs each way on `scq` / `rcq`, in the fixture's PD
  /// unless `on` names another.
  ibv_qp* make_qp(ibv_cq* scq, ibv_cq* rcq, ibv_pd* on = nullptr, ibv_qp_type type = IBV_QPT_RC) {
    ibv_qp_init_attr a{};
    a.send_cq = scq;
    a.recv_cq = rcq;
    a.qp_type = type;
    a.cap.max_send_wr = 64;
    a.cap.max_recv_wr = 64;
    a.cap.max_send_sge = a.cap.max_recv_sge = 1;
    return ibv_create_qp(on != nullptr ? on : pd, &a);
  }
  static int to_init(ibv_qp* qp) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
    return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  }
  static constexpr int kRtrMask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
  static constexpr int kRtsMask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                                  IBV_QP_MAX_QP_RD_ATOMIC;
  static int to_rtr(ibv_qp* qp, uint32_t dest, uint32_t rq_psn, int mask = kRtrMask, uint16_t dlid = kLid) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = IBV_MTU_1024;
    a.dest_qp_num = dest;
    a.rq_psn = rq_psn;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.ah_attr.dlid = dlid;
    a.ah_attr.port_num = 1;
    return ibv_modify_qp(qp, &a, mask);
  }
  static int to_rts(ibv_qp* qp, uint32_t sq_psn, int mask = kRtsMask) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.sq_psn = sq_psn;
    a.max_rd_atomic = 1;
    return ibv_modify_qp(qp, &a, mask);
  }
  /// Connects a and b (both in RESET) through the subnet: a sends from PSN psn_a, b from psn_b.
  static void connect(ibv_qp* a, ibv_qp* b, uint32_t psn_a, uint32_t psn_b) {
    ASSERT_EQ(to_init(a), 0);
    ASSERT_EQ(to_init(b), 0);
    ASSERT_EQ(to_rtr(a, b->qp_num, psn_b), 0);
    ASSERT_EQ(to_rtr(b, a->qp_num, psn_a), 0);
    ASSERT_EQ(to_rts(a, psn_a), 0);
    ASSERT_EQ(to_rts(b, psn_b), 0);
  }
  void post_recv(ibv_qp* qp, uint64_t id, size_t off, uint32_t len) {
    ibv_sge s{reinterpret_cast<uintptr_t>(buf.data() + off), len, mr->lkey};
    ibv_recv_wr wr{};
    wr.wr_id = id;
    wr.sg_list = &s;
    wr.num_sge = 1;
    ibv_recv_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_recv(qp, &wr, &bad), 0);
  }
  void post_send(ibv_qp* qp, uint64_t id, size_t off, uint32_t len) {
    ibv_sge s{reinterpret_cast<uintptr_t>(buf.data() + off), len, mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = id;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_send(qp, &wr, &bad), 0);
  }
  /// Binds type 2 window `mw` to [addr, addr + length) of `mr` for REMOTE_WRITE through `qp`: a
  /// signaled IBV_WR_BIND_MW (wr_id 1) with the window's next key (ibv_inc_rkey), its completion
  /// polled from `cq` and checked. Returns the key the window has now; 0 after a failed check.
  static uint32_t bind_type2(ibv_qp* qp, ibv_cq* cq, ibv_mw* mw, ibv_mr* mr, uintptr_t addr, uint64_t length) {
    ibv_send_wr bind{};
    bind.wr_id = 1;
    bind.opcode = IBV_WR_BIND_MW;
    bind.send_flags = IBV_SEND_SIGNALED;
    bind.bind_mw.mw = mw;
    bind.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
    bind.bind_mw.bind_info = {mr, addr, length, IBV_ACCESS_REMOTE_WRITE};
    ibv_send_wr* bad = nullptr;
    EXPECT_EQ(ibv_post_send(qp, &bind, &bad), 0);
    const auto c = poll_n(cq, 1);
    EXPECT_EQ(c.size(), 1u);
    if (c.size() != 1 || c[0].status != IBV_WC_SUCCESS || c[0].opcode != IBV_WC_BIND_MW) {
      ADD_FAILURE() << "the bind did not complete as IBV_WC_BIND_MW, IBV_WC_SUCCESS";
      return 0;
    }
    return bind.bind_mw.rkey;
  }
  /// Polls `cq` until n completions came (at most 10 s).
  static std::vector<ibv_wc> poll_n(ibv_cq* cq, size_t n) {
    std::vector<ibv_wc> out;
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (out.size() < n && std::chrono::steady_clock::now() < end) {
      ibv_wc wc[8];
      const int k = ibv_poll_cq(cq, 8, wc);
      for (int i = 0; i < k; ++i) out.push_back(wc[i]);
      if (k == 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    return out;
  }
};

}  // namespace hcasim::testing
