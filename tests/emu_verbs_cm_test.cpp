// The verbs shim's librdmacm half in one process (the test links libhcasim-verbs-emu.so
// itself, so rdma_* and ibv_* are the shim's): rdma_getaddrinfo(3) for numeric IPv4 and IPv6
// addresses, a resolvable name, RAI_PASSIVE with and without a node, RAI_NUMERICHOST, the
// hints' source address and its errors; and synchronous endpoints (rdma_create_ep(3),
// rdma_get_request(3), rdma_accept / rdma_connect, one SEND through rdma_verbs.h's inline
// functions, rdma_disconnect on both sides) between two threads on loopback; rdma_migrate_id(3)
// of an id with events queued and of synchronous ids (libfabric's verbs provider's way), and
// rdma_listen(3) of an unbound id; an asynchronous rdma_connect(3) that returns before the
// peer accepts (one thread connecting two ids of its own), and its id destroyed while it waits;
// the UD port space (the SIDR exchange, rdma_reject's SIDR_REP, rdma_init_qp_attr) and
// multicast joins.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <stdlib.h>

#include <cerrno>
#include <chrono>
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

/// True when the channel's fd polls readable within `ms` milliseconds.
bool readable(const rdma_event_channel* ch, int ms) {
  pollfd p{ch->fd, POLLIN, 0};
  return ::poll(&p, 1, ms) == 1 && (p.revents & POLLIN) != 0;
}

TEST(VerbsShimCmMigrate, QueuedEventsMoveWithTheId) {
  // The kernel moves an id's unread events to the new channel (ucma_migrate_id).
  rdma_event_channel* from = rdma_create_event_channel();
  rdma_event_channel* to = rdma_create_event_channel();
  ASSERT_NE(from, nullptr);
  ASSERT_NE(to, nullptr);
  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_id(from, &id, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(9);
  dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr*>(&dst), 2000), 0);
  ASSERT_TRUE(readable(from, 1000));
  ASSERT_EQ(rdma_migrate_id(id, to), 0);
  EXPECT_EQ(id->channel, to);
  EXPECT_FALSE(readable(from, 0));
  ASSERT_TRUE(readable(to, 0));
  rdma_cm_event* e = nullptr;
  ASSERT_EQ(rdma_get_cm_event(to, &e), 0);
  EXPECT_EQ(e->event, RDMA_CM_EVENT_ADDR_RESOLVED);
  EXPECT_EQ(e->id, id);
  rdma_ack_cm_event(e);
  EXPECT_FALSE(readable(to, 0));
  rdma_destroy_id(id);
  rdma_destroy_event_channel(to);
  rdma_destroy_event_channel(from);
}

TEST(VerbsShimCmMigrate, SynchronousIdsMovedToAChannelAsLibfabricDoes) {
  // libfabric's verbs provider: ids created without a channel (synchronous), the active one's
  // address resolved synchronously, then both moved to the EQ's channel (rdma_migrate_id), where
  // the rest of the connection's events must come; the listener is never bound (ofi_rxm).
  rdma_event_channel* ch = rdma_create_event_channel();
  ASSERT_NE(ch, nullptr);
  rdma_cm_id* listen_id = nullptr;
  ASSERT_EQ(rdma_create_id(nullptr, &listen_id, nullptr, RDMA_PS_TCP), 0);
  ASSERT_EQ(rdma_migrate_id(listen_id, ch), 0);
  // An unbound id listens on the IPv4 wildcard and a free port (the kernel's rdma_listen).
  ASSERT_EQ(rdma_listen(listen_id, 8), 0) << std::strerror(errno);
  EXPECT_EQ(text(rdma_get_local_addr(listen_id)).rfind("0.0.0.0:", 0), 0u) << text(rdma_get_local_addr(listen_id));
  const uint16_t port = ntohs(rdma_get_src_port(listen_id));
  ASSERT_NE(port, 0);

  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_id(nullptr, &id, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in dst{};
  dst.sin_family = AF_INET;
  dst.sin_port = htons(port);
  dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  // Synchronous: returns once ADDR_RESOLVED came, the route's source address recorded.
  ASSERT_EQ(rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr*>(&dst), 2000), 0);
  ASSERT_NE(id->event, nullptr);
  EXPECT_EQ(id->event->event, RDMA_CM_EVENT_ADDR_RESOLVED);
  EXPECT_EQ(text(rdma_get_local_addr(id)).rfind("127.0.0.1:", 0), 0u) << text(rdma_get_local_addr(id));
  ASSERT_EQ(rdma_migrate_id(id, ch), 0);
  EXPECT_EQ(id->event, nullptr);  // the synchronous call's event was freed with its channel
  // Asynchronous now: ROUTE_RESOLVED waits on the channel.
  ASSERT_EQ(rdma_resolve_route(id, 2000), 0);
  ASSERT_TRUE(readable(ch, 1000));
  rdma_cm_event* e = nullptr;
  ASSERT_EQ(rdma_get_cm_event(ch, &e), 0);
  EXPECT_EQ(e->event, RDMA_CM_EVENT_ROUTE_RESOLVED);
  EXPECT_EQ(e->id, id);
  rdma_ack_cm_event(e);

  ibv_qp_init_attr attr{};
  attr.cap.max_send_wr = attr.cap.max_recv_wr = 1;
  attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
  ASSERT_EQ(rdma_create_qp(id, nullptr, &attr), 0) << std::strerror(errno);
  // The listener's CONNECT_REQUEST and the active side's REJECTED both come on the one channel.
  std::thread server([&] {
    rdma_cm_event* req = nullptr;
    if (rdma_get_cm_event(ch, &req) != 0) return;
    if (req->event == RDMA_CM_EVENT_CONNECT_REQUEST && req->listen_id == listen_id) rdma_reject(req->id, nullptr, 0);
    rdma_cm_id* child = req->id;
    rdma_ack_cm_event(req);
    rdma_destroy_id(child);
  });
  ASSERT_EQ(rdma_connect(id, nullptr), 0) << std::strerror(errno);
  server.join();
  ASSERT_TRUE(readable(ch, 2000));
  ASSERT_EQ(rdma_get_cm_event(ch, &e), 0);
  EXPECT_EQ(e->event, RDMA_CM_EVENT_REJECTED);
  EXPECT_EQ(e->id, id);
  rdma_ack_cm_event(e);
  rdma_destroy_qp(id);
  rdma_destroy_id(id);
  rdma_destroy_id(listen_id);
  rdma_destroy_event_channel(ch);
}

TEST(VerbsShimCmAsync, ConnectReturnsBeforeThePeerAcceptsInOneEventLoop) {
  // Two ids of one thread on one channel (libfabric's ofi_rxm connecting to itself): the
  // kernel's rdma_connect returns once the REQ is out, so the same thread can take the
  // CONNECT_REQUEST and accept it; both sides are ESTABLISHED, and a SEND goes through.
  rdma_event_channel* ch = rdma_create_event_channel();
  ASSERT_NE(ch, nullptr);
  rdma_cm_id* listen_id = nullptr;
  ASSERT_EQ(rdma_create_id(ch, &listen_id, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(rdma_bind_addr(listen_id, reinterpret_cast<sockaddr*>(&any)), 0);
  ASSERT_EQ(rdma_listen(listen_id, 8), 0);
  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in dst = any;
  dst.sin_port = rdma_get_src_port(listen_id);
  ASSERT_EQ(rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr*>(&dst), 2000), 0);
  rdma_cm_event* e = nullptr;
  ASSERT_EQ(rdma_get_cm_event(ch, &e), 0);
  EXPECT_EQ(e->event, RDMA_CM_EVENT_ADDR_RESOLVED);
  rdma_ack_cm_event(e);
  ASSERT_EQ(rdma_resolve_route(id, 2000), 0);
  ASSERT_EQ(rdma_get_cm_event(ch, &e), 0);
  EXPECT_EQ(e->event, RDMA_CM_EVENT_ROUTE_RESOLVED);
  rdma_ack_cm_event(e);
  ibv_qp_init_attr attr{};
  attr.cap.max_send_wr = attr.cap.max_recv_wr = 1;
  attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
  attr.sq_sig_all = 1;
  ASSERT_EQ(rdma_create_qp(id, nullptr, &attr), 0);
  const char msg[16] = "to myself";
  const auto t0 = std::chrono::steady_clock::now();
  rdma_conn_param param{};
  param.private_data = msg;
  param.private_data_len = sizeof msg;
  ASSERT_EQ(rdma_connect(id, &param), 0) << std::strerror(errno);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));  // no wait for the REP
  ASSERT_TRUE(readable(ch, 2000));
  ASSERT_EQ(rdma_get_cm_event(ch, &e), 0);
  ASSERT_EQ(e->event, RDMA_CM_EVENT_CONNECT_REQUEST);
  EXPECT_EQ(e->listen_id, listen_id);
  ASSERT_GE(e->param.conn.private_data_len, sizeof msg);
  EXPECT_STREQ(static_cast<const char*>(e->param.conn.private_data), "to myself");
  rdma_cm_id* child = e->id;
  rdma_ack_cm_event(e);
  ASSERT_EQ(rdma_create_qp(child, nullptr, &attr), 0);
  char buf[16] = {};
  ibv_mr* rmr = rdma_reg_msgs(child, buf, sizeof buf);
  ASSERT_NE(rmr, nullptr);
  ASSERT_EQ(rdma_post_recv(child, nullptr, buf, sizeof buf, rmr), 0);
  ASSERT_EQ(rdma_accept(child, nullptr), 0) << std::strerror(errno);
  // Both ESTABLISHED, in either order.
  int established = 0;
  bool active = false, passive = false;
  for (int i = 0; i < 2 && readable(ch, 2000); ++i) {
    ASSERT_EQ(rdma_get_cm_event(ch, &e), 0);
    if (e->event == RDMA_CM_EVENT_ESTABLISHED) {
      ++established;
      active |= e->id == id;
      passive |= e->id == child;
    }
    rdma_ack_cm_event(e);
  }
  EXPECT_EQ(established, 2);
  EXPECT_TRUE(active);
  EXPECT_TRUE(passive);
  ibv_mr* smr = rdma_reg_msgs(id, const_cast<char*>(msg), sizeof msg);
  ASSERT_NE(smr, nullptr);
  ASSERT_EQ(rdma_post_send(id, nullptr, const_cast<char*>(msg), sizeof msg, smr, 0), 0);
  ibv_wc wc{};
  ASSERT_EQ(rdma_get_recv_comp(child, &wc), 1);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  EXPECT_EQ(wc.byte_len, sizeof msg);
  EXPECT_STREQ(buf, "to myself");
  ASSERT_EQ(rdma_get_send_comp(id, &wc), 1);
  EXPECT_EQ(wc.status, IBV_WC_SUCCESS);
  rdma_dereg_mr(smr);
  rdma_dereg_mr(rmr);
  rdma_destroy_qp(child);
  rdma_destroy_id(child);
  rdma_destroy_qp(id);
  rdma_destroy_id(id);
  rdma_destroy_id(listen_id);
  rdma_destroy_event_channel(ch);
}

TEST(VerbsShimCmAsync, DestroyingTheIdWhileItsConnectWaitsPostsNothing) {
  // A listener that never answers the REQ (no rdma_accept): the asynchronous connect waits for
  // the REP on its own thread; the QP and the id destroyed meanwhile end it without an event.
  rdma_event_channel* ch = rdma_create_event_channel();
  rdma_event_channel* lch = rdma_create_event_channel();
  ASSERT_NE(ch, nullptr);
  ASSERT_NE(lch, nullptr);
  rdma_cm_id* listen_id = nullptr;
  ASSERT_EQ(rdma_create_id(lch, &listen_id, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(rdma_bind_addr(listen_id, reinterpret_cast<sockaddr*>(&any)), 0);
  ASSERT_EQ(rdma_listen(listen_id, 8), 0);
  rdma_cm_id* id = nullptr;
  ASSERT_EQ(rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in dst = any;
  dst.sin_port = rdma_get_src_port(listen_id);
  ASSERT_EQ(rdma_resolve_addr(id, nullptr, reinterpret_cast<sockaddr*>(&dst), 2000), 0);
  ASSERT_EQ(rdma_resolve_route(id, 2000), 0);
  rdma_cm_event* e = nullptr;
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(rdma_get_cm_event(ch, &e), 0);
    rdma_ack_cm_event(e);
  }
  ibv_qp_init_attr attr{};
  attr.cap.max_send_wr = attr.cap.max_recv_wr = 1;
  attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
  ASSERT_EQ(rdma_create_qp(id, nullptr, &attr), 0);
  ASSERT_EQ(rdma_connect(id, nullptr), 0);
  ASSERT_TRUE(readable(lch, 2000));  // the REQ arrived; nobody answers it
  rdma_destroy_qp(id);
  ASSERT_EQ(rdma_destroy_id(id), 0);
  EXPECT_FALSE(readable(ch, 300));
  ASSERT_EQ(rdma_get_cm_event(lch, &e), 0);
  rdma_cm_id* child = e->id;
  rdma_ack_cm_event(e);
  rdma_destroy_id(child);
  rdma_destroy_id(listen_id);
  rdma_destroy_event_channel(lch);
  rdma_destroy_event_channel(ch);
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
