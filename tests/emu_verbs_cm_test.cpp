// The verbs shim's librdmacm half in one process (the test links libhcasim-verbs-emu.so
// itself, so rdma_* and ibv_* are the shim's): rdma_getaddrinfo(3) for numeric IPv4 and IPv6
// addresses, a resolvable name, RAI_PASSIVE with and without a node, RAI_NUMERICHOST, the
// hints' source address and its errors; and synchronous endpoints (rdma_create_ep(3),
// rdma_get_request(3), rdma_accept / rdma_connect, one SEND through rdma_verbs.h's inline
// functions, rdma_disconnect on both sides) between two threads on loopback; the UD port space
// (the SIDR exchange, rdma_reject's SIDR_REP, rdma_init_qp_attr) and multicast joins.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

#include "tests/subnet_env.h"

namespace {

const auto* const g_env = ::testing::AddGlobalTestEnvironment(new hcasim::testing::SubnetEnv("hcasim-cm-test"));

std::string text(const sockaddr* sa) {
  char buf[INET6_ADDRSTRLEN] = {};
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    ::inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf);
    return std::string(buf) + ":" + std::to_string(ntohs(in->sin_port));
  }
  const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
  ::inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof buf);
  return "[" + std::string(buf) + "]:" + std::to_string(ntohs(in6->sin6_port));
}

TEST(VerbsShimCmAddrinfo, NumericIpv4IsTheDestination) {
  rdma_addrinfo* res = nullptr;
  ASSERT_EQ(rdma_getaddrinfo("127.0.0.1", "7471", nullptr, &res), 0);
  ASSERT_NE(res, nullptr);
  EXPECT_EQ(res->ai_family, AF_INET);
  EXPECT_EQ(res->ai_qp_type, IBV_QPT_RC);
  EXPECT_EQ(res->ai_port_space, RDMA_PS_TCP);
  EXPECT_EQ(res->ai_src_addr, nullptr);
  EXPECT_EQ(res->ai_src_len, 0u);
  ASSERT_NE(res->ai_dst_addr, nullptr);
  EXPECT_EQ(res->ai_dst_len, sizeof(sockaddr_in));
  EXPECT_EQ(text(res->ai_dst_addr), "127.0.0.1:7471");
  EXPECT_EQ(res->ai_next, nullptr);
  rdma_freeaddrinfo(res);
}

TEST(VerbsShimCmAddrinfo, NumericIpv6) {
  rdma_addrinfo hints{};
  hints.ai_flags = RAI_NUMERICHOST;
  rdma_addrinfo* res = nullptr;
  ASSERT_EQ(rdma_getaddrinfo("::1", "18515", &hints, &res), 0);
  EXPECT_EQ(res->ai_family, AF_INET6);
  ASSERT_NE(res->ai_dst_addr, nullptr);
  EXPECT_EQ(res->ai_dst_len, sizeof(sockaddr_in6));
  EXPECT_EQ(text(res->ai_dst_addr), "[::1]:18515");
  rdma_freeaddrinfo(res);
}

TEST(VerbsShimCmAddrinfo, PassiveIsTheSourceWildcardWithoutANode) {
  rdma_addrinfo hints{};
  hints.ai_flags = RAI_PASSIVE;
  hints.ai_family = AF_INET;
  hints.ai_port_space = RDMA_PS_TCP;
  rdma_addrinfo* res = nullptr;
  ASSERT_EQ(rdma_getaddrinfo(nullptr, "7471", &hints, &res), 0);
  EXPECT_EQ(res->ai_flags & RAI_PASSIVE, RAI_PASSIVE);
  EXPECT_EQ(res->ai_dst_addr, nullptr);
  ASSERT_NE(res->ai_src_addr, nullptr);
  EXPECT_EQ(text(res->ai_src_addr), "0.0.0.0:7471");
  rdma_freeaddrinfo(res);
}

TEST(VerbsShimCmAddrinfo, PassiveWithANode) {
  rdma_addrinfo hints{};
  hints.ai_flags = RAI_PASSIVE;
  rdma_addrinfo* res = nullptr;
  ASSERT_EQ(rdma_getaddrinfo("127.0.0.1", nullptr, &hints, &res), 0);
  ASSERT_NE(res->ai_src_addr, nullptr);
  EXPECT_EQ(text(res->ai_src_addr), "127.0.0.1:0");
  rdma_freeaddrinfo(res);
}

TEST(VerbsShimCmAddrinfo, AResolvableNameAndTheHintsSourceAddress) {
  rdma_addrinfo src_hints{};
  src_hints.ai_flags = RAI_PASSIVE | RAI_NUMERICHOST;
  rdma_addrinfo* src = nullptr;
  ASSERT_EQ(rdma_getaddrinfo("127.0.0.1", nullptr, &src_hints, &src), 0);
  rdma_addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_flags = RAI_FAMILY;
  hints.ai_src_addr = src->ai_src_addr;
  hints.ai_src_len = src->ai_src_len;
  rdma_addrinfo* res = nullptr;
  ASSERT_EQ(rdma_getaddrinfo("localhost", "7174", &hints, &res), 0);
  EXPECT_EQ(res->ai_family, AF_INET);
  ASSERT_NE(res->ai_dst_addr, nullptr);
  EXPECT_EQ(text(res->ai_dst_addr), "127.0.0.1:7174");
  ASSERT_NE(res->ai_src_addr, nullptr);
  EXPECT_NE(res->ai_src_addr, src->ai_src_addr);  // a copy of its own
  EXPECT_EQ(text(res->ai_src_addr), "127.0.0.1:0");
  rdma_freeaddrinfo(res);
  rdma_freeaddrinfo(src);
}

TEST(VerbsShimCmAddrinfo, Errors) {
  rdma_addrinfo* res = nullptr;
  errno = 0;
  EXPECT_EQ(rdma_getaddrinfo(nullptr, nullptr, nullptr, &res), -1);
  EXPECT_EQ(errno, EINVAL);
  rdma_addrinfo hints{};
  hints.ai_flags = RAI_NUMERICHOST;
  const int rc = rdma_getaddrinfo("localhost", "1", &hints, &res);
  EXPECT_EQ(rc, EAI_NONAME) << gai_strerror(rc);
  EXPECT_NE(rdma_getaddrinfo("127.0.0.1", "no-such-service-hcasim", nullptr, &res), 0);
  rdma_freeaddrinfo(nullptr);
}

TEST(VerbsShimCmEndpoint, SynchronousEndpointsExchangeASend) {
  rdma_addrinfo hints{};
  hints.ai_flags = RAI_PASSIVE;
  hints.ai_family = AF_INET;
  rdma_addrinfo* passive = nullptr;
  ASSERT_EQ(rdma_getaddrinfo("127.0.0.1", "0", &hints, &passive), 0);
  ibv_qp_init_attr attr{};
  attr.cap.max_send_wr = attr.cap.max_recv_wr = 1;
  attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
  attr.sq_sig_all = 1;
  rdma_cm_id* listen_id = nullptr;
  ASSERT_EQ(rdma_create_ep(&listen_id, passive, nullptr, &attr), 0) << std::strerror(errno);
  ASSERT_EQ(rdma_listen(listen_id, 0), 0);
  const std::string port = std::to_string(ntohs(rdma_get_src_port(listen_id)));
  ASSERT_NE(port, "0");

  char server_buf[16] = {};
  int server_rc = -1;
  std::thread server([&] {
    rdma_cm_id* id = nullptr;
    if (rdma_get_request(listen_id, &id) != 0) return;
    if (id->qp == nullptr || id->event == nullptr || id->event->event != RDMA_CM_EVENT_CONNECT_REQUEST) return;
    ibv_mr* mr = rdma_reg_msgs(id, server_buf, sizeof server_buf);
    ibv_wc wc{};
    if (mr == nullptr || rdma_post_recv(id, nullptr, server_buf, sizeof server_buf, mr) != 0 ||
        rdma_accept(id, nullptr) != 0 || rdma_get_recv_comp(id, &wc) != 1 || wc.status != IBV_WC_SUCCESS)
      return;
    server_rc = rdma_disconnect(id);
    rdma_dereg_mr(mr);
    rdma_destroy_ep(id);
  });

  rdma_addrinfo* active = nullptr;
  ASSERT_EQ(rdma_getaddrinfo("127.0.0.1", port.c_str(), nullptr, &active), 0);
  ibv_qp_init_attr cattr{};
  cattr.cap.max_send_wr = cattr.cap.max_recv_wr = 1;
  cattr.cap.max_send_sge = cattr.cap.max_recv_sge = 1;
  cattr.sq_sig_all = 1;
  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_ep(&id, active, nullptr, &cattr), 0) << std::strerror(errno);
  ASSERT_NE(id->qp, nullptr);
  ASSERT_NE(id->send_cq, nullptr);
  ASSERT_NE(id->recv_cq, nullptr);
  char msg[16] = "hello, server";
  ibv_mr* mr = rdma_reg_msgs(id, msg, sizeof msg);
  ASSERT_NE(mr, nullptr);
  ASSERT_EQ(rdma_connect(id, nullptr), 0) << std::strerror(errno);
  EXPECT_EQ(id->event->event, RDMA_CM_EVENT_ESTABLISHED);
  ASSERT_EQ(rdma_post_send(id, nullptr, msg, sizeof msg, mr, 0), 0);
  ibv_wc wc{};
  ASSERT_EQ(rdma_get_send_comp(id, &wc), 1);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  server.join();
  EXPECT_EQ(server_rc, 0);
  EXPECT_STREQ(server_buf, "hello, server");
  // The server disconnected first: this side's DISCONNECTED is there already.
  EXPECT_EQ(rdma_disconnect(id), 0);
  EXPECT_EQ(id->event->event, RDMA_CM_EVENT_DISCONNECTED);
  rdma_dereg_mr(mr);
  rdma_destroy_ep(id);
  rdma_destroy_ep(listen_id);
  rdma_freeaddrinfo(active);
  rdma_freeaddrinfo(passive);
}

TEST(VerbsShimCmEndpoint, NobodyListeningIsConnectionRefused) {
  // A port of loopback nobody listens on: bind one and close it.
  rdma_addrinfo hints{};
  hints.ai_flags = RAI_PASSIVE;
  rdma_addrinfo* passive = nullptr;
  ASSERT_EQ(rdma_getaddrinfo("127.0.0.1", "0", &hints, &passive), 0);
  rdma_cm_id* probe = nullptr;
  ASSERT_EQ(rdma_create_ep(&probe, passive, nullptr, nullptr), 0);
  const std::string port = std::to_string(ntohs(rdma_get_src_port(probe)));
  rdma_destroy_ep(probe);
  rdma_addrinfo* active = nullptr;
  ASSERT_EQ(rdma_getaddrinfo("127.0.0.1", port.c_str(), nullptr, &active), 0);
  ibv_qp_init_attr attr{};
  attr.cap.max_send_wr = attr.cap.max_recv_wr = 1;
  attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_ep(&id, active, nullptr, &attr), 0);
  errno = 0;
  EXPECT_EQ(rdma_connect(id, nullptr), -1);
  EXPECT_EQ(errno, ECONNREFUSED);
  EXPECT_EQ(id->event->event, RDMA_CM_EVENT_REJECTED);
  rdma_destroy_ep(id);
  rdma_freeaddrinfo(active);
  rdma_freeaddrinfo(passive);
}

/// A synchronous UD endpoint's hints (RDMA_PS_UDP, IBV_QPT_UD).
rdma_addrinfo ud_hints(int flags) {
  rdma_addrinfo h{};
  h.ai_flags = flags;
  h.ai_family = AF_INET;
  h.ai_port_space = RDMA_PS_UDP;
  h.ai_qp_type = IBV_QPT_UD;
  return h;
}

ibv_qp_init_attr ud_attr() {
  ibv_qp_init_attr a{};
  a.qp_type = IBV_QPT_UD;
  a.cap.max_send_wr = a.cap.max_recv_wr = 2;
  a.cap.max_send_sge = a.cap.max_recv_sge = 1;
  a.sq_sig_all = 1;
  return a;
}

// IBA 12.11 through the RDMA CM (the kernel's cma_sidr_rep_handler): the listener's QPN, the
// Q_Key RDMA_UDP_QKEY and an address vector to its port come in ESTABLISHED; both UD QPs are in
// RTS from rdma_create_qp, and a datagram reaches the listener's QP.
TEST(VerbsShimCmUd, SidrExchangeGivesTheListenersQpnAndQkey) {
  rdma_addrinfo hints = ud_hints(RAI_PASSIVE);
  rdma_addrinfo* passive = nullptr;
  ASSERT_EQ(rdma_getaddrinfo("127.0.0.1", "0", &hints, &passive), 0);
  ibv_qp_init_attr attr = ud_attr();
  rdma_cm_id* listen_id = nullptr;
  ASSERT_EQ(rdma_create_ep(&listen_id, passive, nullptr, &attr), 0) << std::strerror(errno);
  ASSERT_EQ(rdma_listen(listen_id, 0), 0);
  const std::string port = std::to_string(ntohs(rdma_get_src_port(listen_id)));

  char server_buf[40 + 16] = {};
  uint32_t server_qpn = 0, src_qp = 0;
  int accepted = -1;
  rdma_cm_id* server_id = nullptr;
  std::thread server([&] {
    if (rdma_get_request(listen_id, &server_id) != 0 || server_id->qp == nullptr) return;
    if (server_id->event->event != RDMA_CM_EVENT_CONNECT_REQUEST || server_id->qp_type != IBV_QPT_UD) return;
    server_qpn = server_id->qp->qp_num;
    ibv_mr* mr = rdma_reg_msgs(server_id, server_buf, sizeof server_buf);
    if (mr == nullptr || rdma_post_recv(server_id, nullptr, server_buf, sizeof server_buf, mr) != 0) return;
    accepted = rdma_accept(server_id, nullptr);
    ibv_wc wc{};
    if (rdma_get_recv_comp(server_id, &wc) == 1 && wc.status == IBV_WC_SUCCESS) src_qp = wc.src_qp;
    rdma_dereg_mr(mr);
  });

  rdma_addrinfo ahints = ud_hints(0);
  rdma_addrinfo* active = nullptr;
  ASSERT_EQ(rdma_getaddrinfo("127.0.0.1", port.c_str(), &ahints, &active), 0);
  ibv_qp_init_attr cattr = ud_attr();
  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_ep(&id, active, nullptr, &cattr), 0) << std::strerror(errno);
  ASSERT_NE(id->qp, nullptr);
  ibv_qp_attr qa{};
  ibv_qp_init_attr qi{};
  ASSERT_EQ(ibv_query_qp(id->qp, &qa, IBV_QP_STATE | IBV_QP_QKEY, &qi), 0);
  EXPECT_EQ(qa.qp_state, IBV_QPS_RTS);
  EXPECT_EQ(qa.qkey, 0x01234567u);  // RDMA_UDP_QKEY
  ASSERT_EQ(rdma_connect(id, nullptr), 0) << std::strerror(errno);
  ASSERT_EQ(id->event->event, RDMA_CM_EVENT_ESTABLISHED);
  const rdma_ud_param ud = id->event->param.ud;
  EXPECT_EQ(ud.qkey, 0x01234567u);
  EXPECT_EQ(ud.ah_attr.dlid, 1);  // the listener's port: the only one of this subnet
  EXPECT_EQ(ud.ah_attr.port_num, 1);
  EXPECT_EQ(ud.ah_attr.is_global, 0);
  ibv_ah* ah = ibv_create_ah(id->pd, const_cast<ibv_ah_attr*>(&ud.ah_attr));
  ASSERT_NE(ah, nullptr);
  char msg[16] = "sidr datagram";
  ibv_mr* mr = rdma_reg_msgs(id, msg, sizeof msg);
  ASSERT_EQ(rdma_post_ud_send(id, nullptr, msg, sizeof msg, mr, 0, ah, ud.qp_num), 0);
  ibv_wc wc{};
  ASSERT_EQ(rdma_get_send_comp(id, &wc), 1);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  server.join();
  EXPECT_EQ(accepted, 0);
  EXPECT_EQ(ud.qp_num, server_qpn);
  EXPECT_EQ(src_qp, id->qp->qp_num);
  EXPECT_STREQ(server_buf + 40, "sidr datagram");
  ibv_destroy_ah(ah);
  rdma_dereg_mr(mr);
  rdma_destroy_ep(id);
  if (server_id != nullptr) rdma_destroy_ep(server_id);
  rdma_destroy_ep(listen_id);
  rdma_freeaddrinfo(active);
  rdma_freeaddrinfo(passive);
}

// rdma_reject on a UD request is a SIDR_REP of status 2 (IBA 12.11.2: rejected), nobody
// listening one of status 1 (service ID not supported): UNREACHABLE with that status, as the
// kernel's cma_sidr_rep_handler reports it (a synchronous id fails with it as errno, librdmacm's
// ucma_complete).
TEST(VerbsShimCmUd, RejectAndNobodyListeningAreUnreachableWithTheSidrStatus) {
  rdma_addrinfo hints = ud_hints(RAI_PASSIVE);
  rdma_addrinfo* passive = nullptr;
  ASSERT_EQ(rdma_getaddrinfo("127.0.0.1", "0", &hints, &passive), 0);
  rdma_cm_id* listen_id = nullptr;
  ASSERT_EQ(rdma_create_ep(&listen_id, passive, nullptr, nullptr), 0);
  ASSERT_EQ(rdma_listen(listen_id, 0), 0);
  const std::string port = std::to_string(ntohs(rdma_get_src_port(listen_id)));
  std::thread server([&] {
    rdma_cm_id* req = nullptr;
    if (rdma_get_request(listen_id, &req) != 0) return;
    rdma_reject(req, "no", 3);
    rdma_destroy_ep(req);
  });
  rdma_addrinfo ahints = ud_hints(0);
  rdma_addrinfo* active = nullptr;
  ASSERT_EQ(rdma_getaddrinfo("127.0.0.1", port.c_str(), &ahints, &active), 0);
  ibv_qp_init_attr cattr = ud_attr();
  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_ep(&id, active, nullptr, &cattr), 0);
  errno = 0;
  EXPECT_EQ(rdma_connect(id, nullptr), -1);
  EXPECT_EQ(errno, 2);
  EXPECT_EQ(id->event->event, RDMA_CM_EVENT_UNREACHABLE);
  EXPECT_EQ(id->event->status, 2);
  ASSERT_EQ(id->event->param.ud.private_data_len, 3);
  EXPECT_STREQ(static_cast<const char*>(id->event->param.ud.private_data), "no");
  server.join();
  rdma_destroy_ep(id);
  rdma_destroy_ep(listen_id);  // nobody listens there any more
  id = nullptr;
  ASSERT_EQ(rdma_create_ep(&id, active, nullptr, &cattr), 0);
  errno = 0;
  EXPECT_EQ(rdma_connect(id, nullptr), -1);
  EXPECT_EQ(id->event->event, RDMA_CM_EVENT_UNREACHABLE);
  EXPECT_EQ(id->event->status, 1);
  rdma_destroy_ep(id);
  rdma_freeaddrinfo(active);
  rdma_freeaddrinfo(passive);
}

// The kernel's cma_ib_init_qp_attr: a UD id's INIT carries its Q_Key, RTR the state alone, RTS
// the send PSN; an RC id's INIT has no remote rights before the CM exchange, and its RTR needs
// the peer (EINVAL); SQD and the like are EINVAL.
TEST(VerbsShimCmUd, InitQpAttrPerState) {
  rdma_cm_id* ud = nullptr;
  rdma_cm_id* rc = nullptr;
  ASSERT_EQ(rdma_create_id(nullptr, &ud, nullptr, RDMA_PS_UDP), 0);
  ASSERT_EQ(rdma_create_id(nullptr, &rc, nullptr, RDMA_PS_TCP), 0);
  EXPECT_EQ(ud->qp_type, IBV_QPT_UD);
  sockaddr_in lo{};
  lo.sin_family = AF_INET;
  lo.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(rdma_bind_addr(ud, reinterpret_cast<sockaddr*>(&lo)), 0);
  ASSERT_EQ(rdma_bind_addr(rc, reinterpret_cast<sockaddr*>(&lo)), 0);
  ibv_qp_attr a{};
  int mask = 0;
  a.qp_state = IBV_QPS_INIT;
  ASSERT_EQ(rdma_init_qp_attr(ud, &a, &mask), 0);
  EXPECT_EQ(mask, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
  EXPECT_EQ(a.qkey, 0x01234567u);
  EXPECT_EQ(a.port_num, 1);
  a.qp_state = IBV_QPS_RTR;
  ASSERT_EQ(rdma_init_qp_attr(ud, &a, &mask), 0);
  EXPECT_EQ(mask, IBV_QP_STATE);
  a.qp_state = IBV_QPS_RTS;
  ASSERT_EQ(rdma_init_qp_attr(ud, &a, &mask), 0);
  EXPECT_EQ(mask, IBV_QP_STATE | IBV_QP_SQ_PSN);
  EXPECT_EQ(a.sq_psn, 0u);
  a.qp_state = IBV_QPS_SQD;
  errno = 0;
  EXPECT_EQ(rdma_init_qp_attr(ud, &a, &mask), -1);
  EXPECT_EQ(errno, EINVAL);
  a.qp_state = IBV_QPS_INIT;
  ASSERT_EQ(rdma_init_qp_attr(rc, &a, &mask), 0);
  EXPECT_EQ(mask, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  EXPECT_EQ(a.qp_access_flags, 0u);
  a.qp_state = IBV_QPS_RTR;
  errno = 0;
  EXPECT_EQ(rdma_init_qp_attr(rc, &a, &mask), -1);
  EXPECT_EQ(errno, EINVAL);
  rdma_destroy_id(ud);
  rdma_destroy_id(rc);
}

// rdma_join_multicast(3) of 239.1.2.3: MULTICAST_JOIN with the group's address vector (MLID,
// GRH to the MGID the kernel's cma_set_mgid maps it to), QPN 0xFFFFFF, the Q_Key, and the
// context as private_data; leaving twice is EADDRNOTAVAIL, a connected id cannot join.
TEST(VerbsShimCmUd, JoinMulticastGivesTheGroupsAddress) {
  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_id(nullptr, &id, nullptr, RDMA_PS_UDP), 0);
  sockaddr_in src{}, group{};
  src.sin_family = group.sin_family = AF_INET;
  src.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::inet_pton(AF_INET, "239.1.2.3", &group.sin_addr), 1);
  ASSERT_EQ(rdma_resolve_addr(id, reinterpret_cast<sockaddr*>(&src), reinterpret_cast<sockaddr*>(&group), 2000), 0);
  ibv_qp_init_attr attr = ud_attr();
  ASSERT_EQ(rdma_create_qp(id, nullptr, &attr), 0);
  int context = 0;
  ASSERT_EQ(rdma_join_multicast(id, reinterpret_cast<sockaddr*>(&group), &context), 0) << std::strerror(errno);
  ASSERT_EQ(id->event->event, RDMA_CM_EVENT_MULTICAST_JOIN);
  const rdma_ud_param& ud = id->event->param.ud;
  EXPECT_EQ(ud.private_data, &context);
  EXPECT_EQ(ud.qp_num, 0xFFFFFFu);
  EXPECT_EQ(ud.qkey, 0x01234567u);
  EXPECT_GE(ud.ah_attr.dlid, 0xC000);
  EXPECT_LE(ud.ah_attr.dlid, 0xFFFE);
  EXPECT_EQ(ud.ah_attr.is_global, 1);
  const uint8_t mgid[16] = {0xff, 0x12, 0x40, 0x01, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0x0f, 0x01, 0x02, 0x03};
  EXPECT_EQ(std::memcmp(ud.ah_attr.grh.dgid.raw, mgid, 16), 0);
  // The id's QP is attached: detaching it by hand succeeds once, and rdma_leave_multicast then
  // finds it gone but still leaves the group.
  ibv_gid g{};
  std::memcpy(g.raw, mgid, 16);
  EXPECT_EQ(ibv_detach_mcast(id->qp, &g, ud.ah_attr.dlid), 0);
  EXPECT_EQ(ibv_attach_mcast(id->qp, &g, ud.ah_attr.dlid), 0);
  EXPECT_EQ(rdma_leave_multicast(id, reinterpret_cast<sockaddr*>(&group)), 0);
  EXPECT_EQ(ibv_detach_mcast(id->qp, &g, ud.ah_attr.dlid), EINVAL);  // the leave detached it
  errno = 0;
  EXPECT_EQ(rdma_leave_multicast(id, reinterpret_cast<sockaddr*>(&group)), -1);
  EXPECT_EQ(errno, EADDRNOTAVAIL);
  rdma_destroy_qp(id);
  rdma_destroy_id(id);
  rdma_cm_id* rc = nullptr;
  ASSERT_EQ(rdma_create_id(nullptr, &rc, nullptr, RDMA_PS_TCP), 0);
  ASSERT_EQ(rdma_resolve_addr(rc, reinterpret_cast<sockaddr*>(&src), reinterpret_cast<sockaddr*>(&group), 2000), 0);
  errno = 0;
  EXPECT_EQ(rdma_join_multicast(rc, reinterpret_cast<sockaddr*>(&group), nullptr), -1);
  EXPECT_EQ(errno, EINVAL);
  rdma_destroy_id(rc);
}

}  // namespace
