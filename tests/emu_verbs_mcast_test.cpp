// Multicast on the emulated HCA, in one process (the test links libhcasim-verbs-emu.so, so
// ibv_* are the shim's): ibv_attach_mcast(3) / ibv_detach_mcast(3) and the delivery of a UD
// send to a multicast LID (IBA 10.5.2.3: DestQP 0xFFFFFF, the GRH required) to every QP
// attached to the group on the subnet, each receive with IBV_WC_GRH and the GRH in its first
// 40 bytes (IBA 8.3: DGID the MGID, SGID the sender's port GID, next header 0x1B).
#include <gtest/gtest.h>

#include <infiniband/verbs.h>
#include <arpa/inet.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "tests/subnet_env.h"
#include "tests/verbs_fixture.h"

namespace {

const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new hcasim::testing::SubnetEnv("hcasim-mcast-test"));
using hcasim::testing::kLid;
using hcasim::testing::VerbsQp;

constexpr uint32_t kQkey = 0x01234567;
constexpr uint16_t kMlid = 0xC123;
constexpr uint32_t kMulticastQpn = 0xFFFFFF;
/// An MGID of the RDMA CM's IPv4 mapping (ff12:4001:ffff::/96 + 239.1.2.3's low 28 bits).
constexpr std::array<uint8_t, 16> kMgid = {0xff, 0x12, 0x40, 0x01, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0x0f, 0x01, 0x02, 0x03};

struct Mcast : VerbsQp {
  ibv_cq* cq = ibv_create_cq(ctx, 64, nullptr, nullptr, 0);
  ibv_gid mgid{};
  ibv_ah* ah = nullptr;
  Mcast() {
    std::memcpy(mgid.raw, kMgid.data(), 16);
    ibv_ah_attr aa{};
    aa.dlid = kMlid;
    aa.port_num = 1;
    aa.is_global = 1;
    aa.grh.dgid = mgid;
    ah = ibv_create_ah(pd, &aa);
  }
  ~Mcast() override {
    if (ah != nullptr) ibv_destroy_ah(ah);
    ibv_destroy_cq(cq);
  }
  /// A UD QP in RTS with Q_Key `qkey`.
  ibv_qp* ud_qp(uint32_t qkey = kQkey) {
    ibv_qp* q = make_qp(cq, cq, nullptr, IBV_QPT_UD);
    ibv_qp_attr m{};
    m.qp_state = IBV_QPS_INIT;
    m.port_num = 1;
    m.qkey = qkey;
    EXPECT_EQ(ibv_modify_qp(q, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY), 0);
    m.qp_state = IBV_QPS_RTR;
    EXPECT_EQ(ibv_modify_qp(q, &m, IBV_QP_STATE), 0);
    m.qp_state = IBV_QPS_RTS;
    EXPECT_EQ(ibv_modify_qp(q, &m, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
    return q;
  }
  /// Sends "mcast-N" (7 bytes) from `from` to the group's MLID, QPN 0xFFFFFF, Q_Key kQkey.
  void send(ibv_qp* from, char n) {
    char* msg = buf.data() + 60000;
    std::memcpy(msg, "mcast-", 6);
    msg[6] = n;
    ibv_sge sg{reinterpret_cast<uintptr_t>(msg), 7, mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = 100;
    wr.sg_list = &sg;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.ud.ah = ah;
    wr.wr.ud.remote_qpn = kMulticastQpn;
    wr.wr.ud.remote_qkey = kQkey;
    ibv_send_wr* bad = nullptr;
    ASSERT_EQ(ibv_post_send(from, &wr, &bad), 0);
  }
  /// The receive completions among `n` completions, by QPN.
  std::vector<ibv_wc> receives(size_t n) {
    std::vector<ibv_wc> out;
    for (const ibv_wc& c : poll_n(cq, n))
      if (c.opcode == IBV_WC_RECV) out.push_back(c);
    return out;
  }
  /// Nothing more arrives within 50 ms.
  void expect_quiet() {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ibv_wc extra;
    EXPECT_EQ(ibv_poll_cq(cq, 1, &extra), 0) << "a completion of QP " << extra.qp_num;
  }
};

TEST_F(Mcast, AttachRefusesWhatTheKernelRefuses) {
  ibv_qp* ud = ud_qp();
  ibv_qp* rc = make_qp(cq, cq);
  EXPECT_EQ(ibv_attach_mcast(rc, &mgid, kMlid), EINVAL);  // not UD
  ibv_gid unicast{};
  ASSERT_EQ(ibv_query_gid(ctx, 1, 0, &unicast), 0);
  EXPECT_EQ(ibv_attach_mcast(ud, &unicast, kMlid), EINVAL);  // not ff00::/8
  EXPECT_EQ(ibv_attach_mcast(ud, &mgid, 0x0001), EINVAL);    // a unicast LID
  EXPECT_EQ(ibv_attach_mcast(ud, &mgid, 0xFFFF), EINVAL);    // the permissive LID
  EXPECT_EQ(ibv_detach_mcast(ud, &mgid, kMlid), EINVAL);     // never attached
  EXPECT_EQ(ibv_attach_mcast(ud, &mgid, kMlid), 0);
  EXPECT_EQ(ibv_attach_mcast(ud, &mgid, kMlid), 0);  // again: still one member
  EXPECT_EQ(ibv_detach_mcast(ud, &mgid, kMlid), 0);
  EXPECT_EQ(ibv_detach_mcast(ud, &mgid, kMlid), EINVAL);
  ibv_destroy_qp(rc);
  ibv_destroy_qp(ud);
}

TEST_F(Mcast, ASendReachesEveryAttachedQpWithTheGrh) {
  ASSERT_NE(ah, nullptr);
  ibv_qp* sender = ud_qp();
  ibv_qp* r1 = ud_qp();
  ibv_qp* r2 = ud_qp();
  ibv_qp* outsider = ud_qp();  // not attached: gets nothing
  ASSERT_EQ(ibv_attach_mcast(r1, &mgid, kMlid), 0);
  ASSERT_EQ(ibv_attach_mcast(r2, &mgid, kMlid), 0);
  post_recv(r1, 1, 0, 40 + 64);
  post_recv(r2, 2, 4096, 40 + 64);
  post_recv(outsider, 3, 8192, 40 + 64);
  send(sender, '1');
  const auto got = receives(3);  // the send's completion and two receives
  ASSERT_EQ(got.size(), 2u);
  ibv_gid own{};
  ASSERT_EQ(ibv_query_gid(ctx, 1, 0, &own), 0);
  for (const ibv_wc& c : got) {
    EXPECT_EQ(c.status, IBV_WC_SUCCESS);
    EXPECT_EQ(c.byte_len, 40u + 7u);
    EXPECT_EQ(c.src_qp, sender->qp_num);
    EXPECT_EQ(c.slid, kLid);
    EXPECT_NE(c.wc_flags & IBV_WC_GRH, 0u);
    ASSERT_TRUE(c.qp_num == r1->qp_num || c.qp_num == r2->qp_num) << c.qp_num;
    const auto* g = reinterpret_cast<const uint8_t*>(buf.data() + (c.qp_num == r1->qp_num ? 0 : 4096));
    EXPECT_EQ(g[0] >> 4, 6);                        // IPVer
    EXPECT_EQ((g[4] << 8) | g[5], 12 + 8 + 7 + 4);  // PayLen: BTH, DETH, payload, ICRC
    EXPECT_EQ(g[6], 0x1B);                          // NxtHdr: the BTH
    EXPECT_EQ(std::memcmp(g + 8, own.raw, 16), 0);  // SGID: the sender's port
    EXPECT_EQ(std::memcmp(g + 24, kMgid.data(), 16), 0);
    EXPECT_EQ(std::memcmp(g + 40, "mcast-1", 7), 0);
  }
  expect_quiet();
  // A detached QP gets nothing more; the other still does.
  ASSERT_EQ(ibv_detach_mcast(r2, &mgid, kMlid), 0);
  post_recv(r1, 4, 0, 40 + 64);
  send(sender, '2');
  const auto after = receives(2);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0].qp_num, r1->qp_num);
  EXPECT_EQ(std::memcmp(buf.data() + 40, "mcast-2", 7), 0);
  expect_quiet();
  for (ibv_qp* q : {sender, r1, r2, outsider}) ibv_destroy_qp(q);
}

// mlx4 loops a multicast send back to the sending port's attached QPs, the sender's own
// included (IPoIB drops its own by SLID and QPN, drivers/infiniband/ulp/ipoib/ipoib_ib.c);
// a receiver of another Q_Key drops it (IBA 10.2.5).
TEST_F(Mcast, TheSenderAttachedGetsItsOwnSendAndAWrongQkeyDrops) {
  ASSERT_NE(ah, nullptr);
  ibv_qp* sender = ud_qp();
  ibv_qp* other_qkey = ud_qp(0x0BADBEEF);
  ASSERT_EQ(ibv_attach_mcast(sender, &mgid, kMlid), 0);
  ASSERT_EQ(ibv_attach_mcast(other_qkey, &mgid, kMlid), 0);
  post_recv(sender, 1, 0, 40 + 64);
  post_recv(other_qkey, 2, 4096, 40 + 64);
  send(sender, '3');
  const auto got = receives(2);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].qp_num, sender->qp_num);
  EXPECT_EQ(got[0].src_qp, sender->qp_num);
  EXPECT_EQ(std::memcmp(buf.data() + 40, "mcast-3", 7), 0);
  expect_quiet();
  ibv_destroy_qp(sender);  // destroying an attached QP detaches it
  ibv_destroy_qp(other_qkey);
}

}  // namespace

namespace {

// IBV_QP_CREATE_BLOCK_SELF_MCAST_LB (mlx4's MLX4_IB_QP_BLOCK_MULTICAST_LOOPBACK): the sender's
// own multicast send is not looped back to it; another QP of the port attached gets it.
TEST_F(Mcast, BlockSelfLoopbackKeepsTheSendersOwnSendAway) {
  ASSERT_NE(ah, nullptr);
  ibv_qp_init_attr_ex ia{};
  ia.send_cq = ia.recv_cq = cq;
  ia.qp_type = IBV_QPT_UD;
  ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
  ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
  ia.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
  ia.pd = pd;
  ia.create_flags = IBV_QP_CREATE_BLOCK_SELF_MCAST_LB;
  ibv_qp* sender = ibv_create_qp_ex(ctx, &ia);
  ASSERT_NE(sender, nullptr);
  ibv_qp_attr m{};
  m.qp_state = IBV_QPS_INIT;
  m.port_num = 1;
  m.qkey = kQkey;
  ASSERT_EQ(ibv_modify_qp(sender, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY), 0);
  m.qp_state = IBV_QPS_RTR;
  ASSERT_EQ(ibv_modify_qp(sender, &m, IBV_QP_STATE), 0);
  m.qp_state = IBV_QPS_RTS;
  ASSERT_EQ(ibv_modify_qp(sender, &m, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
  ibv_qp* other = ud_qp();
  ASSERT_EQ(ibv_attach_mcast(sender, &mgid, kMlid), 0);
  ASSERT_EQ(ibv_attach_mcast(other, &mgid, kMlid), 0);
  post_recv(sender, 1, 0, 40 + 64);
  post_recv(other, 2, 4096, 40 + 64);
  send(sender, '4');
  const auto got = receives(2);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].qp_num, other->qp_num);
  EXPECT_EQ(std::memcmp(buf.data() + 4096 + 40, "mcast-4", 7), 0);
  expect_quiet();
  ibv_destroy_qp(sender);
  ibv_destroy_qp(other);
}

}  // namespace
