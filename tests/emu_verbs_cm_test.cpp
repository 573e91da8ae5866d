// The verbs shim's librdmacm half in one process (the test links libhcasim-verbs-emu.so
// itself, so rdma_* and ibv_* are the shim's): rdma_getaddrinfo(3) for numeric IPv4 and IPv6
// addresses, a resolvable name, RAI_PASSIVE with and without a node, RAI_NUMERICHOST, the
// hints' source address and its errors; and synchronous endpoints (rdma_create_ep(3),
// rdma_get_request(3), rdma_accept / rdma_connect, one SEND through rdma_verbs.h's inline
// functions, rdma_disconnect on both sides) between two threads on loopback.
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

}  // namespace
