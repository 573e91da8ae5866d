// The librdmacm half of the verbs shim (emu/verbs_shim/shim.h): the functions of
// <rdma/rdma_cma.h> (rdma-core 44) that hw/rdma_device.cpp calls, with their names, types and
// return conventions (0, or -1 with errno; rdma_cm(7) and the man page of each), on the
// emulated HCA's CM over TCP (emu/wire.h: REQ, REP, RTU, REJ, DREQ).
//
// Addresses: the TCP endpoint of a cm_id is its RDMA CM address. rdma_bind_addr binds a TCP
// socket there (port 0: any free port, which rdma_get_src_port reports); rdma_listen listens
// on it, and a thread per listening cm_id accepts each connection and hands it to the I/O
// thread, which reads its REQ (a connection from this machine first proves the subnet's secret,
// emu/cm.h; each within kHandshakeTimeoutMs, at most kMaxHandshakes at once) and queues a
// CONNECT_REQUEST with its private data. rdma_resolve_addr and rdma_resolve_route only record
// the destination (ADDR_RESOLVED, ROUTE_RESOLVED; an unbound id's source is the route's);
// rdma_connect opens the TCP connection, sends the REQ and waits (at most emu::kCmTimeoutMs;
// an asynchronous id on a thread of its own, after the call returned) for the REP or REJ, then
// queues ESTABLISHED or REJECTED: a refused TCP connection (for a second: kRefusedGraceMs) is the IB CM's REJ for a
// REQ nobody listens for (status 8, invalid service ID), a REJ from the peer is status 28
// (consumer defined) with its private data. rdma_accept sends the REP and waits for the RTU;
// rdma_reject sends the REJ. A DREQ from the peer, its stream breaking, or the id's own rdma_disconnect queues DISCONNECTED (once).
//
// Synchronous ids (no channel: rdma_create_ep, rdma_get_request) wait in each call for its
// event, as librdmacm's; rdma_getaddrinfo is emu/verbs_shim/cm_addrinfo.cpp's, the event
// channels emu/verbs_shim/rdmacm_events.cpp's. Not emulated:
// AF_IB but as a multicast group's MGID, RDMA_PS_IPOIB, rdma_set_option's IB_PATH, ECE.
//
// UD (RDMA_PS_UDP): rdma_connect runs the SIDR exchange (IBA 12.11) on the same TCP stream,
// SIDR_REQ then SIDR_REP with the listener's QPN and Q_Key (RDMA_UDP_QKEY); rdma_create_qp
// takes a UD QP to RTS at once. Multicast: rdma_join_multicast attaches the id's UD QP to the
// group's MGID and MLID on the emulated HCA (emu::Hca::attach_mcast), whose UD sends to the
// MLID reach every attached QP of the subnet. An id without rdma_create_qp (an external QP)
// gets CONNECT_RESPONSE, rdma_init_qp_attr's attributes (the peer's LID and QPN from the REQ /
// REP) and rdma_establish's RTU.
#include <fcntl.h>
#include <infiniband/ib.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <map>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "emu/cloexec.h"
#include "emu/cm.h"
#include "emu/verbs_shim/device.h"
#include "emu/verbs_shim/rdmacm.h"
#include "emu/verbs_shim/shim.h"

namespace hcasim::emu::shim {

namespace {

namespace asio = boost::asio;
using asio::ip::tcp;

/// The IB CM's REJ reasons the shim reports (IBA vol. 1 12.6.7.2; enum ib_cm_rej_reason).
constexpr int kRejInvalidServiceId = 8;
constexpr int kRejConsumerDefined = 28;
/// Private data a REQ carries for RDMA_PS_TCP over the IB CM (rdma_connect(3)), bytes.
constexpr size_t kReqPrivateDataTcp = 56;
/// How long rdma_connect keeps trying a destination nobody listens on before the REJ (invalid
/// service ID), ms, trying again every kRefusedRetryMs. A real REQ goes out only after the
/// address and route resolution (ARP, an SA path query: milliseconds), which the emulated CM
/// answers at once; without this grace a client re-connecting right after an exchange with its
/// server (perftest -R: a control connection, then the test's, on the same port; its retry
/// path in perftest 4.5-0.17 uses freed memory) outruns the server's rdma_listen.
constexpr int kRefusedGraceMs = 1000;
constexpr int kRefusedRetryMs = 5;
/// Private data a SIDR_REQ carries for RDMA_PS_UDP (rdma_connect(3)): IBA 12.11.1's 216 bytes
/// less the RDMA CM's 36-byte header (the kernel's cma.c, cma_user_data_offset), bytes.
constexpr size_t kSidrReqPrivateDataUdp = 180;
/// SIDR_REP statuses (IBA 12.11.2, table 119; enum ib_cm_sidr_status): the service ID is not
/// listened for, or the consumer rejected the request (rdma_reject(3) on a UD id).
constexpr uint8_t kSidrUnsupported = 1;
constexpr uint8_t kSidrReject = 2;
/// The path MTU the RDMA CM gives a connected QP: the port's active MTU (emu/verbs_shim/device.h).
constexpr ibv_mtu kCmPathMtu = IBV_MTU_2048;

socklen_t sockaddr_len(const sockaddr* sa) {
  if (sa->sa_family == AF_IB) return sizeof(sockaddr_ib);
  return sa->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
}

tcp::endpoint to_endpoint(const sockaddr* sa) {
  tcp::endpoint ep;
  std::memcpy(ep.data(), sa, sockaddr_len(sa));
  return ep;
}

void set_addr(sockaddr_storage& out, const tcp::endpoint& ep) {
  std::memset(&out, 0, sizeof out);
  std::memcpy(&out, ep.data(), ep.size());
}

/// Whether `id` is of a UD port space (RDMA_PS_UDP): SIDR instead of REQ / REP / RTU.
bool is_ud(const rdma_cm_id* id) { return id->ps == RDMA_PS_UDP; }

/// The id's Q_Key, set to RDMA_UDP_QKEY (0x01234567, <rdma/rdma_cma.h>) at first use as the
/// kernel's cma_set_qkey does for RDMA_PS_UDP.
uint32_t id_qkey(rdma_cm_id* id) {
  CmId* c = cm_of(id);
  if (c->qkey == 0) c->qkey = RDMA_UDP_QKEY;
  return c->qkey;
}

/// The QP of a cm_id's rdma_create_qp, or null.
std::shared_ptr<Qp> emu_qp(rdma_cm_id* id) { return id->qp != nullptr ? qp_of(id->qp)->emu : nullptr; }

/// Queues DISCONNECTED on a connected id, once (the peer's DREQ, the stream breaking, or the
/// id's own rdma_disconnect, whichever comes first: the IB CM's DREQ / DREP exchange gives
/// each side one).
void post_disconnected(rdma_cm_id* id) {
  CmId* c = cm_of(id);
  if (!c->connected.load() || c->disconnected.exchange(true)) return;
  post_event(id, RDMA_CM_EVENT_DISCONNECTED, 0);
}

/// The id is connected: from now on the peer's DREQ or a broken stream queues DISCONNECTED.
void watch_link(rdma_cm_id* id, Qp& qp) {
  cm_of(id)->connected = true;
  qp.set_link_handler([id](bool, const std::string&) { post_disconnected(id); });
}

/// What rdma_connect's caller gave for the QP's RTS and the ESTABLISHED event.
struct ConnectParams {
  std::optional<uint8_t> rnr_retry;
  uint8_t initiator_depth = 0, responder_resources = 0;
};

/// The active side once its REQ is out: waits (at most kCmTimeoutMs) for the REP or REJ on the
/// QP's stream, answers a REP with the RTU and moves the QP to RTS, and queues ESTABLISHED,
/// REJECTED, CONNECT_ERROR or UNREACHABLE on the id. With `w` (an asynchronous id, on a thread
/// of its own) nothing is done once the id or its QP is being destroyed.
void await_rep(rdma_cm_id* id, const std::shared_ptr<Qp>& qp, const std::string& peer, ConnectParams params,
               std::optional<uint8_t> ack_timeout, const std::shared_ptr<ConnectWait>& w) {
  rdma_cm_event_type type = RDMA_CM_EVENT_ESTABLISHED;
  int status = 0;
  Packet rep;
  try {
    rep = read_frame_until(qp->socket(), std::chrono::steady_clock::now() + std::chrono::milliseconds(kCmTimeoutMs),
                           peer);
    if (rep.op == Op::CmRej)
      type = RDMA_CM_EVENT_REJECTED, status = kRejConsumerDefined;
    else if (rep.op != Op::CmRep)
      type = RDMA_CM_EVENT_CONNECT_ERROR, status = -EPROTO;
  } catch (const hcasim::sdp::DeviceError&) {
    // No REP in time, or the stream closed: the IB CM's unanswered REQ.
    type = RDMA_CM_EVENT_UNREACHABLE, status = -ETIMEDOUT;
  }
  std::unique_lock<std::mutex> g;
  if (w) {
    g = std::unique_lock(w->m);
    w->waiting = false;
    // The id being destroyed, or its QP destroyed (its stream shut down by forget_cm_qp): the
    // program gave the connection up; an event now would only be the shutdown's.
    if (!w->id_alive || w->qp == nullptr) return;
  }
  if (type != RDMA_CM_EVENT_ESTABLISHED) params.initiator_depth = params.responder_resources = 0;
  if (type == RDMA_CM_EVENT_ESTABLISHED) {
    try {
      write_frame(qp->socket(), Packet{.op = Op::CmRtu, .dest_qpn = rep.local_qpn}, peer);
    } catch (const hcasim::sdp::DeviceError&) {
      post_event(id, RDMA_CM_EVENT_CONNECT_ERROR, -ECONNRESET);
      return;
    }
    if (params.rnr_retry) qp->set_rnr_retry(*params.rnr_retry);
    qp->to_rts(rep.local_qpn, ack_timeout);
    id->qp->state = IBV_QPS_RTS;
    watch_link(id, *qp);
  }
  post_event(id, type, status, rep.payload, nullptr, params.initiator_depth, params.responder_resources);
}

}  // namespace

void forget_cm_qp(rdma_cm_id* id) {
  const std::shared_ptr<ConnectWait> w = cm_of(id)->connect_wait;
  if (w == nullptr) return;
  std::lock_guard g(w->m);
  w->qp = nullptr;
  // Still waiting for the REP: its stream ends now (the QP's close would close the descriptor
  // under the waiting thread's poll without waking it).
  if (const std::shared_ptr<Qp> q = emu_qp(id); w->waiting && q != nullptr)
    ::shutdown(q->socket().native_handle(), SHUT_RDWR);
}

/// A listening cm_id's requests under way: connections accepted whose handshake (from this
/// machine: emu/cm.h cm_connect_handshake's other side) and CM REQ are read on the I/O thread,
/// each within kHandshakeTimeoutMs, at most kMaxHandshakes at once (a new one closes the
/// oldest). `m` guards all of it: the I/O thread's handlers and stop_listener.
struct PendingRequests {
  struct Req {
    Req(tcp::socket s, asio::io_context& io) : sock(std::move(s)), timer(io) {}
    tcp::socket sock;
    asio::steady_timer timer;
    tcp::endpoint peer;
    Challenge challenge{};
    Answer answer{};
    Proof proof{};
    std::array<uint8_t, kLengthSize> length{};
    std::vector<uint8_t> body;
    bool done = false;  // handed over or closed: later handlers do nothing
    uint64_t serial = 0;
  };
  std::mutex m;
  CmId* listener = nullptr;  // null once it stopped listening
  std::map<uint64_t, std::shared_ptr<Req>> reqs;
  uint64_t serial = 0;
};

namespace {

using Req = PendingRequests::Req;

/// Closes a request that did not end in a CM REQ (the peer sees its setup fail) and counts it
/// with the port's refused strangers, unless the listener stopped first. Under p.m.
void drop_request(PendingRequests& p, const std::shared_ptr<Req>& r) {
  if (r->done) return;
  r->done = true;
  boost::system::error_code ec;
  r->timer.cancel();
  r->sock.close(ec);
  p.reqs.erase(r->serial);
  if (p.listener != nullptr) device().hca->count_stranger();
}

/// The request's CM REQ has come: a new cm_id holding the stream, and its CONNECT_REQUEST on
/// the listener's channel. Under p.m, p.listener set.
void hand_over(PendingRequests& p, const std::shared_ptr<Req>& r, const Packet& req) {
  CmId* l = p.listener;
  r->done = true;
  r->timer.cancel();
  p.reqs.erase(r->serial);
  boost::system::error_code ec;
  auto* child = new CmId;
  child->id.verbs = &device().ctx;
  child->id.pd = l->id.pd;
  child->id.context = l->id.context;
  child->id.ps = l->id.ps;
  child->id.port_num = 1;
  const bool sidr = req.op == Op::CmSidrReq;
  child->id.qp_type = sidr ? IBV_QPT_UD : IBV_QPT_RC;
  set_addr(child->id.route.addr.src_storage, r->sock.local_endpoint(ec));
  set_addr(child->id.route.addr.dst_storage, r->peer);
  child->remote_qpn = req.local_qpn;
  child->peer_qpn = req.local_qpn;
  child->peer_lid = req.slid;
  child->remote_lid = req.slid;
  child->socket.emplace(std::move(r->sock));
  {
    std::lock_guard g(g_channels);
    child->id.channel = l->id.channel;
  }
  if (l->sync) {
    // A synchronous listener's requests are synchronous ids on channels of their own
    // (rdma_get_request(3) takes the request from the listener's channel).
    child->sync = true;
    child->id.channel = new_channel();
  }
  if (sidr) {
    // A SIDR_REQ's event carries its private data alone (the kernel's cma_ib_req_handler):
    // no address, QPN or Q_Key of the requester (a SIDR_REQ has none).
    const rdma_ud_param ud{};
    post_event(&child->id, RDMA_CM_EVENT_CONNECT_REQUEST, 0, req.payload, &l->id, 0, 0, &ud);
    return;
  }
  // The emulated REQ carries no RDMA read depths: the device's are offered.
  post_event(&child->id, RDMA_CM_EVENT_CONNECT_REQUEST, 0, req.payload, &l->id, kRdAtom, kRdAtom);
}

/// Reads the request's CM REQ frame (its length field, then its body), on the I/O thread.
void read_request(const std::shared_ptr<PendingRequests>& p, const std::shared_ptr<Req>& r) {
  asio::async_read(r->sock, asio::buffer(r->length), [p, r](boost::system::error_code e1, size_t) {
    std::lock_guard g(p->m);
    if (r->done) return;
    if (e1 || p->listener == nullptr) return drop_request(*p, r);
    try {
      r->body.resize(decode_length(r->length));
    } catch (const WireError&) {
      return drop_request(*p, r);
    }
    asio::async_read(r->sock, asio::buffer(r->body), [p, r](boost::system::error_code e2, size_t) {
      std::lock_guard g2(p->m);
      if (r->done) return;
      if (e2 || p->listener == nullptr || !icrc_ok(r->body)) return drop_request(*p, r);
      Packet req;
      try {
        req = decode(r->body);
      } catch (const WireError&) {
        return drop_request(*p, r);
      }
      // A UD listener takes SIDR_REQs, a connected one REQs (the kernel's cma_check_req_qp_type).
      const bool ud = is_ud(&p->listener->id);
      if (req.op != (ud ? Op::CmSidrReq : Op::CmReq)) return drop_request(*p, r);
      hand_over(*p, r, req);
    });
  });
}

/// A connection the listener thread accepted: its handshake when it comes from this machine,
/// then its REQ, on the I/O thread, all within kHandshakeTimeoutMs.
void start_request(const std::shared_ptr<PendingRequests>& p, tcp::socket s) {
  std::lock_guard g(p->m);
  boost::system::error_code ec;
  if (p->listener == nullptr) return;  // s closes
  if (p->reqs.size() >= kMaxHandshakes) drop_request(*p, p->reqs.begin()->second);
  auto r = std::make_shared<Req>(std::move(s), device().hca->io());
  r->peer = r->sock.remote_endpoint(ec);
  r->serial = p->serial++;
  p->reqs.emplace(r->serial, r);
  r->timer.expires_after(std::chrono::milliseconds(kHandshakeTimeoutMs));
  r->timer.async_wait([p, r](boost::system::error_code e) {
    std::lock_guard g2(p->m);
    if (!e) drop_request(*p, r);
  });
  if (ec) return drop_request(*p, r);  // gone already
  if (!is_local_address(r->peer.address())) return read_request(p, r);  // another host: no secret to prove
  r->challenge = make_nonce();
  asio::async_write(r->sock, asio::buffer(r->challenge), [p, r](boost::system::error_code e1, size_t) {
    std::lock_guard g2(p->m);
    if (r->done) return;
    if (e1) return drop_request(*p, r);
    asio::async_read(r->sock, asio::buffer(r->answer), [p, r](boost::system::error_code e2, size_t) {
      std::lock_guard g3(p->m);
      if (r->done) return;
      if (e2) return drop_request(*p, r);
      Nonce theirs{};
      const std::optional<StreamReq> fields = check_answer(device().hca->secret(), r->challenge, r->answer, theirs);
      if (!fields) return drop_request(*p, r);
      r->proof = make_proof(device().hca->secret(), r->challenge, theirs, *fields);
      asio::async_write(r->sock, asio::buffer(r->proof), [p, r](boost::system::error_code e3, size_t) {
        {
          std::lock_guard g4(p->m);
          if (r->done) return;
          if (e3) return drop_request(*p, r);
        }
        read_request(p, r);
      });
    });
  });
}

/// The listener thread of a listening cm_id: accepts TCP connections (close-on-exec) and hands
/// each to the I/O thread (start_request), so that no connection holds up the next; out of
/// descriptors or memory, it accepts again after kAcceptBackoffMs.
void listen_loop(CmId* l) {
  std::array<pollfd, 2> fds{{{l->acceptor->native_handle(), POLLIN, 0}, {l->stop_fd, POLLIN, 0}}};
  const std::shared_ptr<PendingRequests> pending = l->pending;
  for (;;) {
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    tcp::socket s(device().hca->io());
    boost::system::error_code ec;
    accept_cloexec(*l->acceptor, s, ec);
    if (ec == asio::error::no_descriptors || ec == asio::error::no_buffer_space || ec == asio::error::no_memory ||
        ec.value() == ENFILE) {
      // Out of descriptors or memory: the connection waits in the backlog and the listener
      // tries again a little later, as the subnet port does, instead of spinning.
      if (::poll(&fds[1], 1, kAcceptBackoffMs) > 0) return;
      continue;
    }
    if (ec) continue;  // would block, or the peer gave up already
    s.set_option(tcp::no_delay(true), ec);
    auto held = std::make_shared<tcp::socket>(std::move(s));
    asio::post(device().hca->io(), [pending, held] { start_request(pending, std::move(*held)); });
  }
}

void stop_listener(CmId* c) {
  if (c->listener.joinable()) {
    const uint64_t one = 1;
    if (::write(c->stop_fd, &one, sizeof one) < 0) {
      // An eventfd write fails only on counter overflow; the thread wakes anyway.
    }
    c->listener.join();
  }
  if (c->stop_fd >= 0) ::close(c->stop_fd);
  c->stop_fd = -1;
  if (c->pending) {
    // Requests under way end here: their streams are shut down, so that their handlers run at
    // once on the I/O thread and close them; none reaches the listener any more. The table
    // goes with its last holder, which may be this one: after its lock is released.
    const std::shared_ptr<PendingRequests> p = std::move(c->pending);
    std::lock_guard g(p->m);
    p->listener = nullptr;
    for (auto& [serial, r] : p->reqs) ::shutdown(r->sock.native_handle(), SHUT_RDWR);
  }
  boost::system::error_code ec;
  if (c->acceptor) c->acceptor->close(ec);
}

/// The PD a cm_id is given when it binds to the device (librdmacm's per-device PD): one for
/// the process, never freed.
ibv_pd* device_pd() {
  static ibv_pd* pd = ibv_alloc_pd(&device().ctx);
  return pd;
}

/// The source address the kernel's routing gives a datagram to `dst`, with the ephemeral port
/// it bound for it, into `out` (left as it is when there is no route): what the kernel's RDMA
/// CM records as an unbound id's source when it resolves a destination
/// (drivers/infiniband/core/cma.c, rdma_resolve_addr binding the id; core/addr.c,
/// addr4_resolve / addr6_resolve taking the route's source address).
void route_source(const sockaddr* dst, sockaddr_storage& out) {
  sockaddr_storage to{};
  std::memcpy(&to, dst, sockaddr_len(dst));
  auto* port = to.ss_family == AF_INET ? &reinterpret_cast<sockaddr_in*>(&to)->sin_port
                                       : &reinterpret_cast<sockaddr_in6*>(&to)->sin6_port;
  if (*port == 0) *port = htons(9);  // any port: the route depends on the address only
  const int fd = ::socket(to.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  sockaddr_storage src{};
  socklen_t len = sizeof src;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&to), sockaddr_len(dst)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&src), &len) == 0)
    out = src;
  ::close(fd);
}

void bind_to_device(rdma_cm_id* id) {
  id->verbs = &device().ctx;
  id->port_num = 1;
  if (id->pd == nullptr) id->pd = device_pd();
}

/// Destroys the CQs and completion channels rdma_create_qp made for the id.
void destroy_own_cqs(rdma_cm_id* id) {
  CmId* c = cm_of(id);
  if (!c->own_cqs) return;
  c->own_cqs = false;
  if (id->recv_cq != nullptr) ibv_destroy_cq(id->recv_cq);
  if (id->send_cq != nullptr && id->send_cq != id->recv_cq) ibv_destroy_cq(id->send_cq);
  if (id->recv_cq_channel != nullptr) ibv_destroy_comp_channel(id->recv_cq_channel);
  if (id->send_cq_channel != nullptr && id->send_cq_channel != id->recv_cq_channel)
    ibv_destroy_comp_channel(id->send_cq_channel);
  id->recv_cq = id->send_cq = nullptr;
  id->recv_cq_channel = id->send_cq_channel = nullptr;
}

}  // namespace

}  // namespace hcasim::emu::shim

namespace hcasim::emu::shim {
namespace {

/// Opens the CM stream of `id` to its resolved destination in `s`: connect(2), trying again for
/// kRefusedGraceMs while nobody listens, then the subnet's handshake with a listener of this
/// machine (emu/cm.h). True when the stream is up; otherwise the failure's event is queued (for
/// nobody listening: `refused` with `refused_status`) and false returned.
bool open_cm_stream(rdma_cm_id* id, tcp::socket& s, const std::string& peer, rdma_cm_event_type refused,
                    int refused_status) {
  const tcp::endpoint dst = to_endpoint(&id->route.addr.dst_addr);
  boost::system::error_code ec;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(kRefusedGraceMs);
  for (;;) {
    open_cloexec(s, dst.protocol(), ec);
    if (!ec) s.connect(dst, ec);
    if (ec != boost::asio::error::connection_refused || std::chrono::steady_clock::now() >= give_up) break;
    boost::system::error_code ignored;
    s.close(ignored);
    std::this_thread::sleep_for(std::chrono::milliseconds(kRefusedRetryMs));
  }
  if (ec == boost::asio::error::connection_refused) {
    post_event(id, refused, refused_status);
    return false;
  }
  if (ec) {
    post_event(id, RDMA_CM_EVENT_UNREACHABLE, -ec.value());
    return false;
  }
  s.set_option(tcp::no_delay(true), ec);
  if (is_local_address(dst.address())) {
    try {
      cm_connect_handshake(s, device().hca->secret(), peer);
    } catch (const hcasim::sdp::DeviceError&) {
      device().hca->count_stranger();
      post_event(id, RDMA_CM_EVENT_UNREACHABLE, -ECONNREFUSED);
      return false;
    }
  }
  set_addr(id->route.addr.src_storage, s.local_endpoint(ec));
  return true;
}

/// The private data of a conn_param, or none.
std::vector<uint8_t> private_data_of(const rdma_conn_param* p) {
  std::vector<uint8_t> pd;
  if (p != nullptr && p->private_data != nullptr) {
    const auto* b = static_cast<const uint8_t*>(p->private_data);
    pd.assign(b, b + p->private_data_len);
  }
  return pd;
}

/// A connection of an id without a QP of the CM's (an external QP): its CM stream, watched
/// after the RTU for the peer's DREQ or its end (DISCONNECTED, once); `id` is cleared when the
/// id is destroyed, under `m`.
struct LinkWatch {
  std::mutex m;
  rdma_cm_id* id = nullptr;
  std::array<uint8_t, 64> buf{};
};

std::mutex g_watch_lock;
std::map<CmId*, std::shared_ptr<LinkWatch>>& watches() {
  static auto* w = new std::map<CmId*, std::shared_ptr<LinkWatch>>;
  return *w;
}

void watch_read(const std::shared_ptr<LinkWatch>& w, tcp::socket& s) {
  s.async_read_some(boost::asio::buffer(w->buf), [w](boost::system::error_code ec, size_t) {
    if (ec == boost::asio::error::operation_aborted) return;
    std::lock_guard g(w->m);
    if (w->id == nullptr) return;
    // Nothing but the peer's DREQ follows an RTU on a CM stream: any bytes, or the stream's
    // end, end the connection.
    post_disconnected(w->id);
  });
}

/// The external-QP connection of `id` is established: DISCONNECTED follows the peer's DREQ or
/// the stream's end.
void watch_ext_link(rdma_cm_id* id) {
  CmId* c = cm_of(id);
  c->connected = true;
  auto w = std::make_shared<LinkWatch>();
  w->id = id;
  {
    std::lock_guard g(g_watch_lock);
    watches()[c] = w;
  }
  tcp::socket& s = *c->socket;
  boost::asio::post(device().hca->io(), [w, &s] {
    std::lock_guard g(w->m);
    if (w->id == nullptr) return;
    watch_read(w, s);
  });
}

/// Stops watching `c`'s external-QP connection (the id is being destroyed).
void unwatch(CmId* c) {
  std::shared_ptr<LinkWatch> w;
  {
    std::lock_guard g(g_watch_lock);
    auto it = watches().find(c);
    if (it == watches().end()) return;
    w = it->second;
    watches().erase(it);
  }
  std::lock_guard g(w->m);
  w->id = nullptr;
}

/// rdma_connect(3) of a UD id: the SIDR exchange (IBA 12.11). The SIDR_REQ carries the
/// private data (at most 180 bytes) and the requester's port; the SIDR_REP answers with the
/// listener's QPN and Q_Key, and ESTABLISHED carries them with an address vector to the
/// listener's port (rdma_ud_param), or UNREACHABLE its status (1: nobody listens, 2: rejected;
/// -ETIMEDOUT without an answer), as the kernel's cma_sidr_rep_handler.
int connect_ud(rdma_cm_id* id, const rdma_conn_param* conn_param) {
  const std::vector<uint8_t> pd = private_data_of(conn_param);
  if (pd.size() > kSidrReqPrivateDataUdp) return fail(EINVAL);
  const uint32_t qpn = id->qp != nullptr ? id->qp->qp_num : conn_param != nullptr ? conn_param->qp_num : 0;
  const tcp::endpoint dst = to_endpoint(&id->route.addr.dst_addr);
  if (port_lid() == 0) return fail(ENODEV);
  const std::string peer = fmt::format("{}:{}", dst.address().to_string(), dst.port());
  tcp::socket s(device().hca->io());
  if (!open_cm_stream(id, s, peer, RDMA_CM_EVENT_UNREACHABLE, kSidrUnsupported)) return complete(id);
  try {
    write_frame(s, Packet{.op = Op::CmSidrReq, .local_qpn = qpn, .slid = port_lid(), .payload = pd}, peer);
    const Packet rep =
        read_frame_until(s, std::chrono::steady_clock::now() + std::chrono::milliseconds(kCmTimeoutMs), peer);
    boost::system::error_code ec;
    s.close(ec);
    rdma_ud_param ud{};
    if (rep.op != Op::CmSidrRep) {
      post_event(id, RDMA_CM_EVENT_UNREACHABLE, -EPROTO, {}, nullptr, 0, 0, &ud);
    } else if (rep.status != 0) {
      post_event(id, RDMA_CM_EVENT_UNREACHABLE, rep.status, rep.payload, nullptr, 0, 0, &ud);
    } else {
      cm_of(id)->qkey = rep.qkey;
      cm_of(id)->peer_lid = rep.slid;
      cm_of(id)->peer_qpn = rep.local_qpn;
      ud.ah_attr.dlid = rep.slid;
      ud.ah_attr.port_num = 1;
      ud.qp_num = rep.local_qpn;
      ud.qkey = rep.qkey;
      post_event(id, RDMA_CM_EVENT_ESTABLISHED, 0, rep.payload, nullptr, 0, 0, &ud);
    }
  } catch (const hcasim::sdp::DeviceError&) {
    const rdma_ud_param ud{};
    post_event(id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, {}, nullptr, 0, 0, &ud);
  }
  return complete(id);
}

/// rdma_connect(3) of a connected id without a QP of its own (conn_param->qp_num names the
/// caller's QP): the REQ with that QPN and this port's LID; the REP's QPN and LID are kept for
/// rdma_init_qp_attr, and CONNECT_RESPONSE (its private data) is queued instead of ESTABLISHED:
/// the caller moves its QP to RTS, then rdma_establish sends the RTU (the kernel's
/// cma_ib_handler, IB_CM_REP_RECEIVED without id->qp).
int connect_ext(rdma_cm_id* id, const rdma_conn_param* conn_param) {
  const std::vector<uint8_t> pd = private_data_of(conn_param);
  if (pd.size() > kReqPrivateDataTcp) return fail(EINVAL);
  CmId* c = cm_of(id);
  const tcp::endpoint dst = to_endpoint(&id->route.addr.dst_addr);
  if (port_lid() == 0) return fail(ENODEV);
  const std::string peer = fmt::format("{}:{}", dst.address().to_string(), dst.port());
  tcp::socket s(device().hca->io());
  if (!open_cm_stream(id, s, peer, RDMA_CM_EVENT_REJECTED, kRejInvalidServiceId)) return complete(id);
  c->ext_qpn = conn_param->qp_num;
  try {
    write_frame(s, Packet{.op = Op::CmReq, .local_qpn = c->ext_qpn, .slid = port_lid(), .payload = pd}, peer);
    const Packet rep =
        read_frame_until(s, std::chrono::steady_clock::now() + std::chrono::milliseconds(kCmTimeoutMs), peer);
    if (rep.op == Op::CmRej) {
      post_event(id, RDMA_CM_EVENT_REJECTED, kRejConsumerDefined, rep.payload);
      return complete(id);
    }
    if (rep.op != Op::CmRep) {
      post_event(id, RDMA_CM_EVENT_CONNECT_ERROR, -EPROTO);
      return complete(id);
    }
    c->peer_qpn = rep.local_qpn;
    c->peer_lid = rep.slid;
    c->socket.emplace(std::move(s));
    const uint8_t depth = conn_param->initiator_depth, res = conn_param->responder_resources;
    if (conn_param->rnr_retry_count != 0) c->rnr_retry = std::min<uint8_t>(conn_param->rnr_retry_count, 7);
    post_event(id, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, rep.payload, nullptr, depth, res);
  } catch (const hcasim::sdp::DeviceError&) {
    post_event(id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
  }
  return complete(id);
}

/// The MGID the RDMA CM joins for the multicast address `sa` (the kernel's cma_set_mgid): an
/// IPv6 address that is an SA-assigned MGID (ff1x:a01b::/32) as it is; another IPv4 or IPv6
/// multicast address mapped as IPoIB maps it (include/net/ip.h ip_ib_mc_map, ipv6_ib_mc_map:
/// ff12:401b:ffff::/96 + the low 28 bits of the IPv4 address, ff12:601b:ffff:: + the low 80
/// bits of the IPv6 one; the link-local scope and default P_Key of the port's broadcast
/// address), with the RDMA CM's signature 0x01 in byte 3 (4001, 6001) for RDMA_PS_UDP; an
/// AF_IB address (<infiniband/ib.h> sockaddr_ib) is the MGID itself. Nothing for another family.
std::optional<std::array<uint8_t, 16>> mgid_of_addr(const sockaddr* sa) {
  std::array<uint8_t, 16> g{};
  if (sa->sa_family == AF_IB) {
    const auto* ib = reinterpret_cast<const sockaddr_ib*>(sa);
    std::memcpy(g.data(), &ib->sib_addr, 16);
    return g;
  }
  if (sa->sa_family == AF_INET) {
    const uint32_t a = ntohl(reinterpret_cast<const sockaddr_in*>(sa)->sin_addr.s_addr);
    g = {0xff, 0x12, 0x40, 0x01, 0xff, 0xff, 0, 0, 0, 0, 0, 0,
         static_cast<uint8_t>((a >> 24) & 0x0f), static_cast<uint8_t>(a >> 16), static_cast<uint8_t>(a >> 8),
         static_cast<uint8_t>(a)};
    return g;
  }
  if (sa->sa_family == AF_INET6) {
    const uint8_t* a = reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr.s6_addr;
    if (a[0] == 0xff && (a[1] & 0xf0) == 0x10 && a[2] == 0xa0 && a[3] == 0x1b) {
      std::copy(a, a + 16, g.begin());
      return g;
    }
    g[0] = 0xff;
    g[1] = 0x12;
    g[2] = 0x60;
    g[3] = 0x01;
    g[4] = 0xff;
    g[5] = 0xff;
    std::copy(a + 6, a + 16, g.begin() + 6);
    return g;
  }
  return std::nullopt;
}

/// The MLID of the group `mgid`: the emulated subnet has no SA to assign one, so every process
/// derives it alike, 0xC000 + CRC-32(MGID) mod 0x3FFF (0xC000-0xFFFE, IBA 4.1.3's multicast
/// range).
uint16_t mlid_of(const std::array<uint8_t, 16>& mgid) {
  uint32_t crc = 0xFFFFFFFFu;
  for (const uint8_t b : mgid) {
    crc ^= b;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  crc = ~crc;
  return static_cast<uint16_t>(kMinMulticastLid + crc % (kMaxMulticastLid - kMinMulticastLid + 1));
}

/// Whether two socket addresses name the same IP address (the port is not compared).
bool same_ip(const sockaddr* a, const sockaddr* b) {
  if (a->sa_family != b->sa_family) return false;
  if (a->sa_family == AF_INET)
    return reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr ==
           reinterpret_cast<const sockaddr_in*>(b)->sin_addr.s_addr;
  if (a->sa_family == AF_INET6)
    return std::memcmp(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr,
                       &reinterpret_cast<const sockaddr_in6*>(b)->sin6_addr, 16) == 0;
  if (a->sa_family == AF_IB)
    return std::memcmp(&reinterpret_cast<const sockaddr_ib*>(a)->sib_addr,
                       &reinterpret_cast<const sockaddr_ib*>(b)->sib_addr, 16) == 0;
  return false;
}

/// Leaves every group the id joined (it is being destroyed): its QP detached.
void leave_all(rdma_cm_id* id) {
  CmId* c = cm_of(id);
  for (const CmId::McGroup& g : c->groups)
    if (g.qpn != 0) device().hca->detach_mcast(g.qpn, g.mgid, g.mlid);
  c->groups.clear();
}

}  // namespace
}  // namespace hcasim::emu::shim

using hcasim::emu::shim::CmId;
using hcasim::emu::shim::device;

/// rdma_get_devices(3): the emulated device's context alone, null-terminated; free with
/// rdma_free_devices. Null with errno ENOMEM.
ibv_context** rdma_get_devices(int* num_devices) {
  auto** list = static_cast<ibv_context**>(std::calloc(2, sizeof(ibv_context*)));
  if (list == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  list[0] = &device().ctx;
  if (num_devices != nullptr) *num_devices = 1;
  return list;
}

/// rdma_free_devices(3).
void rdma_free_devices(ibv_context** list) { std::free(list); }

/// rdma_create_id(3): RDMA_PS_TCP (and RDMA_PS_IB) give RC cm_ids, RDMA_PS_UDP UD ones (SIDR
/// for rdma_connect, multicast); other port spaces EINVAL (RDMA_PS_IPOIB needs an IPoIB
/// interface's broadcast group, which the emulated port has not).
/// Without a channel the id is synchronous: it has a channel of its own and rdma_resolve_addr,
/// rdma_resolve_route, rdma_connect, rdma_accept and rdma_disconnect return once their event
/// came (left in id->event), failing with its status.
int rdma_create_id(rdma_event_channel* channel, rdma_cm_id** id, void* context, rdma_port_space ps) {
  if (id == nullptr) return hcasim::emu::shim::fail(EINVAL);
  if (ps != RDMA_PS_TCP && ps != RDMA_PS_IB && ps != RDMA_PS_UDP) return hcasim::emu::shim::fail(EINVAL);
  auto* c = new CmId;
  if (channel == nullptr) {
    c->sync = true;
    channel = hcasim::emu::shim::new_channel();
    if (channel == nullptr) {
      delete c;
      return -1;
    }
  }
  c->id.channel = channel;
  c->id.context = context;
  c->id.ps = ps;
  c->id.qp_type = ps == RDMA_PS_UDP ? IBV_QPT_UD : IBV_QPT_RC;
  *id = &c->id;
  return 0;
}

/// rdma_destroy_id(3): stops listening, closes a request's stream not accepted (the peer
/// sees the setup fail). The QP must have been destroyed. Returns 0.
int rdma_destroy_id(rdma_cm_id* id) {
  if (id == nullptr) return hcasim::emu::shim::fail(EINVAL);
  CmId* c = hcasim::emu::shim::cm_of(id);
  if (c->connect_wait != nullptr) {
    // A connect still waiting for its REP posts nothing to this id from now on.
    std::lock_guard g(c->connect_wait->m);
    c->connect_wait->id_alive = false;
  }
  hcasim::emu::shim::stop_listener(c);
  hcasim::emu::shim::unwatch(c);
  hcasim::emu::shim::leave_all(id);
  if (id->qp != nullptr) {  // a QP that outlives its id (rping destroys the id first)
    hcasim::emu::shim::emu_qp(id)->set_link_handler(nullptr);
    hcasim::emu::shim::qp_of(id->qp)->cm_id = nullptr;
  }
  hcasim::emu::shim::drop_events(id);
  if (c->socket) {
    boost::system::error_code ec;
    c->socket->close(ec);
  }
  if (c->sync) {
    if (id->event != nullptr) rdma_ack_cm_event(id->event);
    hcasim::emu::shim::delete_channel(id->channel, false);
  }
  delete c;
  return 0;
}

/// rdma_bind_addr(3): binds the TCP socket of the emulated CM to the address (IPv4 or IPv6;
/// port 0: any free port) and the id to the emulated device. -1 with errno from bind(2)
/// (EADDRINUSE, EADDRNOTAVAIL, ...) or EAFNOSUPPORT.
int rdma_bind_addr(rdma_cm_id* id, sockaddr* addr) {
  using hcasim::emu::shim::fail;
  if (id == nullptr || addr == nullptr) return fail(EINVAL);
  if (addr->sa_family != AF_INET && addr->sa_family != AF_INET6) return fail(EAFNOSUPPORT);
  CmId* c = hcasim::emu::shim::cm_of(id);
  if (c->acceptor) return fail(EINVAL);
  const auto ep = hcasim::emu::shim::to_endpoint(addr);
  boost::system::error_code ec;
  c->acceptor.emplace(device().hca->io());
  hcasim::emu::open_cloexec(*c->acceptor, ep.protocol(), ec);
  if (!ec) c->acceptor->set_option(boost::asio::ip::tcp::acceptor::reuse_address(true), ec);
  if (!ec && c->afonly && ep.protocol() == boost::asio::ip::tcp::v6())
    c->acceptor->set_option(boost::asio::ip::v6_only(true), ec);
  if (!ec) c->acceptor->bind(ep, ec);
  if (ec) {
    c->acceptor.reset();
    return fail(ec.value());
  }
  hcasim::emu::shim::set_addr(id->route.addr.src_storage, c->acceptor->local_endpoint(ec));
  hcasim::emu::shim::bind_to_device(id);
  return 0;
}

/// rdma_listen(3): listens on the bound address; CONNECT_REQUEST events follow, for connections
/// from this machine only once they proved the subnet's secret (emu/cm.h; the others are closed
/// and counted in emu::Hca::strangers_refused). An id not bound yet is bound first to the IPv4
/// wildcard address and a free port, as the kernel binds it (drivers/infiniband/core/cma.c,
/// rdma_listen: an idle id takes AF_INET's any address; libfabric's ofi_rxm listens so and
/// publishes the port). -1 with errno EINVAL when already listening, ENODEV when the port
/// cannot join the subnet (its secret unreadable: one line on stderr), else from bind(2) or
/// listen(2).
int rdma_listen(rdma_cm_id* id, int backlog) {
  using hcasim::emu::shim::fail;
  if (id == nullptr) return fail(EINVAL);
  CmId* c = hcasim::emu::shim::cm_of(id);
  if (c->listener.joinable()) return fail(EINVAL);
  if (!c->acceptor) {
    sockaddr_in any{};
    any.sin_family = AF_INET;
    if (rdma_bind_addr(id, reinterpret_cast<sockaddr*>(&any)) != 0) return -1;
  }
  boost::system::error_code ec;
  c->acceptor->listen(backlog > 0 ? backlog : 8, ec);
  if (!ec) c->acceptor->non_blocking(true, ec);
  if (ec) return fail(ec.value());
  // Whoever connects from this machine proves the subnet's secret: the port reads it first.
  if (hcasim::emu::shim::port_lid() == 0) return fail(ENODEV);
  c->stop_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (c->stop_fd < 0) return -1;
  c->pending = std::make_shared<hcasim::emu::shim::PendingRequests>();
  c->pending->listener = c;
  c->listener = std::thread(hcasim::emu::shim::listen_loop, c);
  return 0;
}

/// rdma_resolve_addr(3): records the destination (and the source, when given) and binds the
/// id to the emulated device; ADDR_RESOLVED follows at once (reachability shows at
/// rdma_connect). -1 with errno EAFNOSUPPORT for a non-IP address.
int rdma_resolve_addr(rdma_cm_id* id, sockaddr* src_addr, sockaddr* dst_addr, int /*timeout_ms*/) {
  using hcasim::emu::shim::fail;
  if (id == nullptr || dst_addr == nullptr) return fail(EINVAL);
  if (dst_addr->sa_family != AF_INET && dst_addr->sa_family != AF_INET6) return fail(EAFNOSUPPORT);
  std::memset(&id->route.addr.dst_storage, 0, sizeof id->route.addr.dst_storage);
  std::memcpy(&id->route.addr.dst_storage, dst_addr, hcasim::emu::shim::sockaddr_len(dst_addr));
  if (src_addr != nullptr && (src_addr->sa_family == AF_INET || src_addr->sa_family == AF_INET6)) {
    std::memset(&id->route.addr.src_storage, 0, sizeof id->route.addr.src_storage);
    std::memcpy(&id->route.addr.src_storage, src_addr, hcasim::emu::shim::sockaddr_len(src_addr));
  } else if (id->route.addr.src_storage.ss_family != AF_INET && id->route.addr.src_storage.ss_family != AF_INET6) {
    hcasim::emu::shim::route_source(dst_addr, id->route.addr.src_storage);
  }
  hcasim::emu::shim::bind_to_device(id);
  hcasim::emu::shim::post_event(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
  return hcasim::emu::shim::complete(id);
}

/// rdma_resolve_route(3): ROUTE_RESOLVED follows at once. -1 with errno EINVAL before
/// rdma_resolve_addr.
int rdma_resolve_route(rdma_cm_id* id, int /*timeout_ms*/) {
  if (id == nullptr || id->verbs == nullptr) return hcasim::emu::shim::fail(EINVAL);
  hcasim::emu::shim::post_event(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
  return hcasim::emu::shim::complete(id);
}

/// rdma_create_qp(3): an RC QP on the id's device (shim::create_qp's limits), in INIT, ready
/// for receives. Without a PD, the id's (the device's); without a send or receive CQ, one of
/// cap.max_send_wr / cap.max_recv_wr entries with a completion channel of its own, as
/// librdmacm makes (cq_context the id; in id->send_cq / recv_cq and their channels, destroyed
/// by rdma_destroy_qp). The caps given are written back. -1 with errno EINVAL (unbound id, a
/// QP already, bad attributes) or EOPNOTSUPP.
int rdma_create_qp(rdma_cm_id* id, ibv_pd* pd, ibv_qp_init_attr* qp_init_attr) {
  namespace shim = hcasim::emu::shim;
  if (id == nullptr || id->verbs == nullptr || id->qp != nullptr || qp_init_attr == nullptr) return shim::fail(EINVAL);
  if (pd == nullptr) pd = id->pd;
  if (pd == nullptr) return shim::fail(EINVAL);
  CmId* c = shim::cm_of(id);
  ibv_qp_init_attr attr = *qp_init_attr;
  if (attr.qp_type == 0) attr.qp_type = id->qp_type;
  const bool make_send = attr.send_cq == nullptr && id->send_cq == nullptr;
  const bool make_recv = attr.recv_cq == nullptr && id->recv_cq == nullptr;
  if (make_send || make_recv) {
    auto make = [&](uint32_t n, ibv_cq*& cq, ibv_comp_channel*& ch) {
      ch = ibv_create_comp_channel(id->verbs);
      if (ch == nullptr) return false;
      cq = ibv_create_cq(id->verbs, static_cast<int>(std::max<uint32_t>(n, 1)), id, ch, 0);
      return cq != nullptr;
    };
    c->own_cqs = true;
    if ((make_recv && !make(attr.cap.max_recv_wr, id->recv_cq, id->recv_cq_channel)) ||
        (make_send && !make(attr.cap.max_send_wr, id->send_cq, id->send_cq_channel))) {
      const int e = errno;
      shim::destroy_own_cqs(id);
      return shim::fail(e != 0 ? e : ENOMEM);
    }
  }
  if (attr.send_cq == nullptr) attr.send_cq = id->send_cq;
  if (attr.recv_cq == nullptr) attr.recv_cq = id->recv_cq;
  shim::QpObj* q = shim::create_qp(pd, &attr);
  if (q == nullptr) {
    const int e = errno;
    shim::destroy_own_cqs(id);
    return shim::fail(e);
  }
  if (attr.qp_type == IBV_QPT_UD) {
    // A UD QP is ready at once (librdmacm's ucma_init_ud_qp): INIT with the port, P_Key index
    // and the id's Q_Key (RDMA_UDP_QKEY unless a SIDR REP or a group gave another), RTR, then
    // RTS with send PSN 0.
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.pkey_index = 0;
    a.qkey = shim::id_qkey(id);
    int e = ibv_modify_qp(&q->qp, &a, IBV_QP_STATE | IBV_QP_PORT | IBV_QP_PKEY_INDEX | IBV_QP_QKEY);
    if (e == 0) {
      a.qp_state = IBV_QPS_RTR;
      e = ibv_modify_qp(&q->qp, &a, IBV_QP_STATE);
    }
    if (e == 0) {
      a.qp_state = IBV_QPS_RTS;
      a.sq_psn = 0;
      e = ibv_modify_qp(&q->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
    }
    if (e != 0) {
      shim::destroy_qp(q);
      shim::destroy_own_cqs(id);
      return shim::fail(e);
    }
  }
  qp_init_attr->cap = attr.cap;
  q->cm_id = id;
  id->qp = &q->qp;
  id->pd = pd;
  if (!c->own_cqs) {
    id->send_cq = attr.send_cq;
    id->recv_cq = attr.recv_cq;
    id->send_cq_channel = attr.send_cq->channel;
    id->recv_cq_channel = attr.recv_cq->channel;
  }
  return 0;
}

/// rdma_create_qp_ex(3): rdma_create_qp with an ibv_qp_init_attr_ex: its PD (comp_mask
/// IBV_QP_INIT_ATTR_PD, else the id's) and create flags (IBV_QP_INIT_ATTR_CREATE_FLAGS:
/// IBV_QP_CREATE_BLOCK_SELF_MCAST_LB on a UD QP, which then does not receive its own multicast
/// sends: mckey -l). The caps are written back. -1 with errno EINVAL for another create flag or
/// that flag on a QP that is not UD, EOPNOTSUPP for another comp_mask bit (as ibv_create_qp_ex
/// on mlx4), else rdma_create_qp's.
int rdma_create_qp_ex(rdma_cm_id* id, ibv_qp_init_attr_ex* attr) {
  namespace shim = hcasim::emu::shim;
  if (id == nullptr || attr == nullptr) return shim::fail(EINVAL);
  if ((attr->comp_mask & ~(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS)) != 0) return shim::fail(EOPNOTSUPP);
  const uint32_t flags = (attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) != 0 ? attr->create_flags : 0;
  const ibv_qp_type type = attr->qp_type != 0 ? attr->qp_type : id->qp_type;
  if ((flags & ~IBV_QP_CREATE_BLOCK_SELF_MCAST_LB) != 0 || (flags != 0 && type != IBV_QPT_UD))
    return shim::fail(EINVAL);
  ibv_qp_init_attr init{};
  init.qp_context = attr->qp_context;
  init.send_cq = attr->send_cq;
  init.recv_cq = attr->recv_cq;
  init.srq = attr->srq;
  init.cap = attr->cap;
  init.qp_type = type;
  init.sq_sig_all = attr->sq_sig_all;
  ibv_pd* pd = (attr->comp_mask & IBV_QP_INIT_ATTR_PD) != 0 ? attr->pd : nullptr;
  if (rdma_create_qp(id, pd, &init) != 0) return -1;
  attr->cap = init.cap;
  if ((flags & IBV_QP_CREATE_BLOCK_SELF_MCAST_LB) != 0) shim::emu_qp(id)->block_self_multicast();
  return 0;
}

/// rdma_destroy_qp(3): the QP, and the CQs rdma_create_qp made for it.
void rdma_destroy_qp(rdma_cm_id* id) {
  if (id == nullptr || id->qp == nullptr) return;
  hcasim::emu::shim::destroy_qp(hcasim::emu::shim::qp_of(id->qp));
  id->qp = nullptr;
  if (hcasim::emu::shim::cm_of(id)->own_cqs)
    hcasim::emu::shim::destroy_own_cqs(id);
  else
    id->send_cq = id->recv_cq = nullptr, id->send_cq_channel = id->recv_cq_channel = nullptr;
}

/// rdma_connect(3) on an id with a QP: the REQ (private data at most 56 bytes, RDMA_PS_TCP)
/// goes to the resolved address; ESTABLISHED (the REP's private data; the QP in RTS), REJECTED
/// (status 8 once nobody listened for kRefusedGraceMs) or UNREACHABLE follows. A synchronous id
/// waits here for the answer; an asynchronous one returns once the REQ is out, as the kernel's
/// (drivers/infiniband/core/cma.c, rdma_connect sends the REQ; the REP comes as an event), and
/// its answer is awaited on a thread of its own: the peer may be an id of the same program that
/// accepts only once this call returned (libfabric's ofi_rxm connecting to itself).
/// conn_param's rnr_retry_count is the QP's (retry_count is not: the emulated QP's comes from
/// $HCASIM_FAULT's qp.retry_cnt). A listener of this machine must prove
/// the subnet's secret first (emu/cm.h): one that does not is UNREACHABLE with status
/// -ECONNREFUSED, counted in emu::Hca::strangers_refused. -1 with errno EINVAL without a
/// resolved route or a QP, or with too much private data, ENODEV for a destination on this
/// machine when the port cannot join the subnet; a synchronous id fails with the event's error
/// (ECONNREFUSED for REJECTED). A UD id runs the SIDR exchange instead (connect_ud), an id
/// without a QP whose conn_param names one connects it as an external QP (connect_ext).
int rdma_connect(rdma_cm_id* id, rdma_conn_param* conn_param) {
  namespace shim = hcasim::emu::shim;
  namespace emu = hcasim::emu;
  using boost::asio::ip::tcp;
  if (id == nullptr || id->verbs == nullptr) return shim::fail(EINVAL);
  if (shim::is_ud(id)) return shim::connect_ud(id, conn_param);
  if (id->qp == nullptr) {
    if (conn_param == nullptr || conn_param->qp_num == 0) return shim::fail(EINVAL);
    return shim::connect_ext(id, conn_param);
  }
  std::vector<uint8_t> pd = shim::private_data_of(conn_param);
  if (pd.size() > shim::kReqPrivateDataTcp) return shim::fail(EINVAL);
  std::shared_ptr<emu::Qp> qp = shim::emu_qp(id);
  const tcp::endpoint dst = shim::to_endpoint(&id->route.addr.dst_addr);
  if (emu::is_local_address(dst.address()) && shim::port_lid() == 0) return shim::fail(ENODEV);  // no secret
  const std::string peer = fmt::format("{}:{}", dst.address().to_string(), dst.port());
  tcp::socket s(device().hca->io());
  boost::system::error_code ec;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(shim::kRefusedGraceMs);
  for (;;) {
    emu::open_cloexec(s, dst.protocol(), ec);
    if (!ec) s.connect(dst, ec);
    if (ec != boost::asio::error::connection_refused || std::chrono::steady_clock::now() >= give_up) break;
    boost::system::error_code ignored;
    s.close(ignored);
    std::this_thread::sleep_for(std::chrono::milliseconds(shim::kRefusedRetryMs));
  }
  if (ec == boost::asio::error::connection_refused) {
    shim::post_event(id, RDMA_CM_EVENT_REJECTED, shim::kRejInvalidServiceId);
    return shim::complete(id);
  }
  if (ec) {
    shim::post_event(id, RDMA_CM_EVENT_UNREACHABLE, -ec.value());
    return shim::complete(id);
  }
  s.set_option(tcp::no_delay(true), ec);
  if (emu::is_local_address(dst.address())) {
    // A listener of this machine: it proves the subnet's secret (emu/cm.h), and so does this
    // side, before the REQ; anything else on that address is not the peer.
    try {
      emu::cm_connect_handshake(s, device().hca->secret(), peer);
    } catch (const hcasim::sdp::DeviceError&) {
      device().hca->count_stranger();
      shim::post_event(id, RDMA_CM_EVENT_UNREACHABLE, -ECONNREFUSED);
      return shim::complete(id);
    }
  }
  shim::set_addr(id->route.addr.src_storage, s.local_endpoint(ec));
  qp->attach(std::move(s));
  try {
    emu::write_frame(qp->socket(),
                     emu::Packet{.op = emu::Op::CmReq, .local_qpn = qp->qp_num(), .slid = shim::port_lid(), .payload = pd},
                     peer);
  } catch (const hcasim::sdp::DeviceError&) {
    shim::post_event(id, RDMA_CM_EVENT_UNREACHABLE, -ECONNRESET);
    return shim::complete(id);
  }
  shim::ConnectParams params;
  if (conn_param != nullptr) {
    params.rnr_retry = std::min<uint8_t>(conn_param->rnr_retry_count, 7);
    params.initiator_depth = conn_param->initiator_depth;
    params.responder_resources = conn_param->responder_resources;
  }
  CmId* c = shim::cm_of(id);
  if (c->sync) {
    shim::await_rep(id, qp, peer, params, c->ack_timeout, nullptr);
    return shim::complete(id);
  }
  // Asynchronous: the answer is the peer program's (its rdma_accept), which may be this very
  // thread's next event (two endpoints of one process, one event loop): wait on a thread.
  auto w = std::make_shared<shim::ConnectWait>();
  w->qp = id->qp;
  c->connect_wait = w;
  std::thread([id, qp, peer, params, ack = c->ack_timeout, w] { shim::await_rep(id, qp, peer, params, ack, w); })
      .detach();
  return 0;
}

/// rdma_accept(3) on a CONNECT_REQUEST's id with a QP: the REP (private data at most 196
/// bytes) goes out and the RTU is awaited here; ESTABLISHED (the QP in RTS) or CONNECT_ERROR
/// follows. -1 with errno EINVAL for an id without a request or a QP, or too much private data.
int rdma_accept(rdma_cm_id* id, rdma_conn_param* conn_param) {
  namespace shim = hcasim::emu::shim;
  namespace emu = hcasim::emu;
  if (id == nullptr) return shim::fail(EINVAL);
  CmId* c = shim::cm_of(id);
  if (!c->socket) return shim::fail(EINVAL);
  const std::vector<uint8_t> pd = shim::private_data_of(conn_param);
  if (shim::is_ud(id)) {
    // The SIDR_REP (IBA 12.11.2): this side's QPN (its rdma_create_qp's, else conn_param's)
    // and the id's Q_Key; no event follows on this side (the kernel's cma_send_sidr_rep).
    if (pd.size() > emu::kSidrRepPrivateData) return shim::fail(EINVAL);
    const uint32_t qpn = id->qp != nullptr ? id->qp->qp_num : conn_param != nullptr ? conn_param->qp_num : 0;
    boost::system::error_code ec;
    const emu::Packet rep{.op = emu::Op::CmSidrRep, .local_qpn = qpn, .qkey = shim::id_qkey(id),
                          .slid = shim::port_lid(), .payload = pd};
    boost::asio::write(*c->socket, boost::asio::buffer(emu::encode(rep)), ec);
    c->socket->close(ec);
    c->socket.reset();
    return ec ? shim::fail(ec.value()) : 0;
  }
  if (pd.size() > emu::kRepPrivateData) return shim::fail(EINVAL);
  if (id->qp == nullptr) {
    // An external QP (conn_param->qp_num): the REP names it; once the RTU came, ESTABLISHED,
    // and the stream stays to carry the DREQ.
    if (conn_param == nullptr || conn_param->qp_num == 0) return shim::fail(EINVAL);
    c->ext_qpn = conn_param->qp_num;
    try {
      emu::write_frame(*c->socket,
                       emu::Packet{.op = emu::Op::CmRep, .dest_qpn = c->remote_qpn, .local_qpn = c->ext_qpn,
                                   .slid = shim::port_lid(), .payload = pd},
                       "peer");
      const emu::Packet rtu = emu::read_frame_until(
          *c->socket, std::chrono::steady_clock::now() + std::chrono::milliseconds(emu::kCmTimeoutMs), "peer");
      if (rtu.op != emu::Op::CmRtu) {
        shim::post_event(id, RDMA_CM_EVENT_CONNECT_ERROR, -EPROTO);
        return shim::complete(id);
      }
    } catch (const hcasim::sdp::DeviceError&) {
      shim::post_event(id, RDMA_CM_EVENT_CONNECT_ERROR, -ETIMEDOUT);
      return shim::complete(id);
    }
    shim::post_event(id, RDMA_CM_EVENT_ESTABLISHED, 0, {}, nullptr, conn_param->initiator_depth,
                     conn_param->responder_resources);
    shim::watch_ext_link(id);
    return shim::complete(id);
  }
  std::shared_ptr<emu::Qp> qp = shim::emu_qp(id);
  qp->attach(std::move(*c->socket));
  c->socket.reset();
  const std::string peer = "peer";
  try {
    emu::write_frame(qp->socket(),
                     emu::Packet{.op = emu::Op::CmRep, .dest_qpn = c->remote_qpn, .local_qpn = qp->qp_num(),
                                 .slid = shim::port_lid(), .payload = pd},
                     peer);
    const emu::Packet rtu = emu::read_frame_until(
        qp->socket(), std::chrono::steady_clock::now() + std::chrono::milliseconds(emu::kCmTimeoutMs), peer);
    if (rtu.op != emu::Op::CmRtu) {
      shim::post_event(id, RDMA_CM_EVENT_CONNECT_ERROR, -EPROTO);
      return shim::complete(id);
    }
  } catch (const hcasim::sdp::DeviceError&) {
    shim::post_event(id, RDMA_CM_EVENT_CONNECT_ERROR, -ETIMEDOUT);
    return shim::complete(id);
  }
  if (conn_param != nullptr) qp->set_rnr_retry(std::min<uint8_t>(conn_param->rnr_retry_count, 7));
  qp->to_rts(c->remote_qpn, c->ack_timeout);
  id->qp->state = IBV_QPS_RTS;
  shim::watch_link(id, *qp);
  const uint8_t depth = conn_param != nullptr ? conn_param->initiator_depth : 0;
  const uint8_t res = conn_param != nullptr ? conn_param->responder_resources : 0;
  shim::post_event(id, RDMA_CM_EVENT_ESTABLISHED, 0, {}, nullptr, depth, res);
  return shim::complete(id);
}

/// rdma_reject(3): the REJ (private data, at most 148 bytes) goes to the requester, whose
/// REJECTED event carries it; the stream closes. -1 with errno EINVAL for an id without a
/// pending request.
int rdma_reject(rdma_cm_id* id, const void* private_data, uint8_t private_data_len) {
  namespace emu = hcasim::emu;
  CmId* c = hcasim::emu::shim::cm_of(id);
  if (id == nullptr || !c->socket) return hcasim::emu::shim::fail(EINVAL);
  // A UD id's request is answered by a SIDR_REP with status 2 (rejected) and the private data
  // (at most 136 bytes): the requester's UNREACHABLE (the kernel's cma_send_sidr_rep).
  const bool ud = hcasim::emu::shim::is_ud(id);
  emu::Packet answer{.op = ud ? emu::Op::CmSidrRep : emu::Op::CmRej,
                     .status = ud ? hcasim::emu::shim::kSidrReject : uint8_t{0}};
  if (private_data != nullptr) {
    const auto* p = static_cast<const uint8_t*>(private_data);
    answer.payload.assign(p, p + std::min<size_t>(private_data_len, ud ? emu::kSidrRepPrivateData : emu::kRejReason));
  }
  boost::system::error_code ec;
  boost::asio::write(*c->socket, boost::asio::buffer(emu::encode(answer)), ec);
  c->socket->close(ec);
  c->socket.reset();
  return 0;
}

/// rdma_disconnect(3): the QP goes to ERROR (its WRs flush) and the peer gets the DREQ (its
/// DISCONNECTED); this id's DISCONNECTED follows too (at once: the emulated DREP), unless the
/// peer's came first. Returns 0 (a synchronous id: once its DISCONNECTED came); -1 with errno
/// EINVAL for an id never connected or disconnected by this call before.
int rdma_disconnect(rdma_cm_id* id) {
  namespace shim = hcasim::emu::shim;
  if (id == nullptr) return shim::fail(EINVAL);
  CmId* c = shim::cm_of(id);
  if (!c->connected.load() || c->disconnect_called) return shim::fail(EINVAL);
  c->disconnect_called = true;
  if (id->qp != nullptr) {
    shim::emu_qp(id)->disconnect();
    id->qp->state = IBV_QPS_ERR;
  } else if (c->socket) {
    // An external QP's connection: the DREQ on the CM stream (the caller's QP is its own to
    // move to ERROR, as the kernel leaves a QP it does not know).
    boost::system::error_code ec;
    boost::asio::write(*c->socket, boost::asio::buffer(hcasim::emu::encode(hcasim::emu::Packet{.op = hcasim::emu::Op::CmDreq})), ec);
    ::shutdown(c->socket->native_handle(), SHUT_WR);
  }
  shim::post_disconnected(id);
  return shim::complete(id);
}

/// rdma_get_src_port(3): the local port, network byte order (0 before binding or connecting).
__be16 rdma_get_src_port(rdma_cm_id* id) { return id->route.addr.src_sin.sin_port; }

/// rdma_get_dst_port(3): the peer's port, network byte order.
__be16 rdma_get_dst_port(rdma_cm_id* id) { return id->route.addr.dst_sin.sin_port; }

/// rdma_get_request(3) on a synchronous listening id (rdma_create_ep(3) with RAI_PASSIVE):
/// waits for the next CONNECT_REQUEST and returns its new id (synchronous, the request in
/// (*id)->event), with a QP of the listener's rdma_create_ep qp_init_attr when it had one.
/// -1 with errno EINVAL (an asynchronous id, another event), ECONNREFUSED, or the QP's.
int rdma_get_request(rdma_cm_id* listen, rdma_cm_id** id) {
  namespace shim = hcasim::emu::shim;
  if (listen == nullptr || id == nullptr) return shim::fail(EINVAL);
  CmId* l = shim::cm_of(listen);
  if (!l->sync) return shim::fail(EINVAL);
  if (listen->event != nullptr) {
    rdma_ack_cm_event(listen->event);
    listen->event = nullptr;
  }
  rdma_cm_event* event = nullptr;
  if (rdma_get_cm_event(listen->channel, &event) != 0) return -1;
  int err = 0;
  if (event->event == RDMA_CM_EVENT_REJECTED)
    err = ECONNREFUSED;
  else if (event->status != 0)
    err = event->status < 0 ? -event->status : event->status;
  else if (event->event != RDMA_CM_EVENT_CONNECT_REQUEST)
    err = EINVAL;
  if (err == 0 && l->ep_qp_init) {
    ibv_qp_init_attr attr = *l->ep_qp_init;
    if (rdma_create_qp(event->id, listen->pd, &attr) != 0) err = errno;
  }
  if (err != 0) {
    listen->event = event;
    return shim::fail(err);
  }
  *id = event->id;
  (*id)->event = event;
  return 0;
}

/// rdma_create_ep(3): a synchronous id for `res` (rdma_getaddrinfo(3)). RAI_PASSIVE: bound to
/// res->ai_src_addr, ready for rdma_listen, its requests given a QP of `qp_init_attr` by
/// rdma_get_request; else the destination's address and route resolved and, with
/// `qp_init_attr`, its QP created (on `pd`, or the device's PD; CQs of its own when none are
/// given). -1 with errno from the step that failed (the id is then destroyed).
int rdma_create_ep(rdma_cm_id** id, rdma_addrinfo* res, ibv_pd* pd, ibv_qp_init_attr* qp_init_attr) {
  namespace shim = hcasim::emu::shim;
  if (id == nullptr || res == nullptr) return shim::fail(EINVAL);
  rdma_cm_id* cm = nullptr;
  const auto ps = res->ai_port_space != 0 ? static_cast<rdma_port_space>(res->ai_port_space) : RDMA_PS_TCP;
  if (rdma_create_id(nullptr, &cm, nullptr, ps) != 0) return -1;
  const ibv_qp_type type = res->ai_qp_type != 0 ? static_cast<ibv_qp_type>(res->ai_qp_type) : IBV_QPT_RC;
  int ret = 0;
  if ((res->ai_flags & RAI_PASSIVE) != 0) {
    ret = res->ai_src_addr != nullptr ? rdma_bind_addr(cm, res->ai_src_addr) : shim::fail(EINVAL);
    if (ret == 0) {
      if (pd != nullptr) cm->pd = pd;
      if (qp_init_attr != nullptr) {
        CmId* c = shim::cm_of(cm);
        c->ep_qp_init = *qp_init_attr;
        c->ep_qp_init->qp_type = type;
      }
    }
  } else {
    ret = res->ai_dst_addr != nullptr ? rdma_resolve_addr(cm, res->ai_src_addr, res->ai_dst_addr, 2000)
                                      : shim::fail(EINVAL);
    if (ret == 0) ret = rdma_resolve_route(cm, 2000);
    if (ret == 0 && qp_init_attr != nullptr) {
      qp_init_attr->qp_type = type;
      ret = rdma_create_qp(cm, pd, qp_init_attr);
    }
  }
  if (ret != 0) {
    const int e = errno;
    rdma_destroy_ep(cm);
    return shim::fail(e);
  }
  *id = cm;
  return 0;
}

/// rdma_destroy_ep(3): the id's QP (and the CQs made for it), then the id.
void rdma_destroy_ep(rdma_cm_id* id) {
  if (id == nullptr) return;
  if (id->qp != nullptr) rdma_destroy_qp(id);
  rdma_destroy_id(id);
}

/// rdma_set_option(3): RDMA_OPTION_ID_ACK_TIMEOUT (a uint8_t, 0-31: the local ACK timeout
/// 4.096 us x 2^N of the id's QP when the CM moves it to RTS, instead of $HCASIM_FAULT's
/// qp.timeout) and RDMA_OPTION_ID_TOS (a uint8_t, taken: the emulated wire has no service
/// level), RDMA_OPTION_ID_REUSEADDR (an int, taken before rdma_listen: the emulated CM's TCP
/// port is bound with SO_REUSEADDR always) and RDMA_OPTION_ID_AFONLY (an int, before
/// rdma_bind_addr: an IPv6 address then takes IPv6 alone, IPV6_V6ONLY). -1 with errno EINVAL
/// for a null id or value, another optlen, a timeout over 31, REUSEADDR on a listening id or
/// AFONLY on a bound one (the kernel's rdma_set_reuseaddr, rdma_set_afonly); ENOSYS for an
/// option the kernel does not know (ucma_set_option); EOPNOTSUPP, said once on stderr, for
/// RDMA_OPTION_IB_PATH.
int rdma_set_option(rdma_cm_id* id, int level, int optname, void* optval, size_t optlen) {
  namespace shim = hcasim::emu::shim;
  if (id == nullptr || optval == nullptr) return shim::fail(EINVAL);
  if (level == RDMA_OPTION_ID && (optname == RDMA_OPTION_ID_ACK_TIMEOUT || optname == RDMA_OPTION_ID_TOS)) {
    if (optlen != sizeof(uint8_t)) return shim::fail(EINVAL);
    const uint8_t v = *static_cast<const uint8_t*>(optval);
    if (optname == RDMA_OPTION_ID_ACK_TIMEOUT) {
      if (v > 31) return shim::fail(EINVAL);
      shim::cm_of(id)->ack_timeout = v;
    }
    return 0;
  }
  if (level == RDMA_OPTION_ID && (optname == RDMA_OPTION_ID_REUSEADDR || optname == RDMA_OPTION_ID_AFONLY)) {
    if (optlen != sizeof(int)) return shim::fail(EINVAL);
    CmId* c = shim::cm_of(id);
    if (optname == RDMA_OPTION_ID_REUSEADDR) return c->listener.joinable() ? shim::fail(EINVAL) : 0;
    if (c->acceptor) return shim::fail(EINVAL);
    c->afonly = *static_cast<const int*>(optval) != 0;
    return 0;
  }
  if (level == RDMA_OPTION_IB && optname == RDMA_OPTION_IB_PATH) {
    static std::atomic<bool> said;
    shim::not_emulated(said, "rdma_set_option (IB_PATH)");
    return shim::fail(EOPNOTSUPP);
  }
  return shim::fail(ENOSYS);
}

/// rdma_establish(3): the active side of a connection whose QP the caller owns (rdma_connect
/// with conn_param->qp_num, its CONNECT_RESPONSE taken, the QP moved to RTS with
/// rdma_init_qp_attr's attributes) sends the RTU; the peer's ESTABLISHED follows, none here
/// (the kernel's cma.c rdma_accept on the active side, ib_send_cm_rtu). From then on the
/// peer's DREQ queues DISCONNECTED. -1 with errno EINVAL for an id with a QP of the CM's or
/// without a CONNECT_RESPONSE, or the stream's error.
int rdma_establish(rdma_cm_id* id) {
  namespace shim = hcasim::emu::shim;
  namespace emu = hcasim::emu;
  if (id == nullptr || id->qp != nullptr) return shim::fail(EINVAL);
  CmId* c = shim::cm_of(id);
  if (!c->socket || c->ext_qpn == 0 || c->connected.load()) return shim::fail(EINVAL);
  try {
    emu::write_frame(*c->socket, emu::Packet{.op = emu::Op::CmRtu, .dest_qpn = c->peer_qpn}, "peer");
  } catch (const hcasim::sdp::DeviceError&) {
    return shim::fail(ECONNRESET);
  }
  shim::watch_ext_link(id);
  return 0;
}

/// rdma_init_qp_attr(3): the attributes and mask that move the id's QP (or the caller's own)
/// to `qp_attr->qp_state` as the RDMA CM would (the kernel's cma.c rdma_init_qp_attr,
/// cma_ib_init_qp_attr and cm.c ib_cm_init_qp_attr): INIT with port 1, P_Key index 0 and, for
/// UD, the id's Q_Key (RDMA_UDP_QKEY), for RC the remote access rights (none before the CM
/// exchange; remote write, read and atomics after it); RTR (UD: the state alone; RC: the
/// peer's port LID and QPN from the REQ / REP, path MTU 2048, receive PSN 0, the device's
/// RDMA read depth, RNR timer 0); RTS (UD: send PSN 0; RC: send PSN 0, the ACK timeout of
/// RDMA_OPTION_ID_ACK_TIMEOUT or $HCASIM_FAULT's qp.timeout, retry_cnt and rnr_retry 7 or
/// conn_param's rnr_retry_count, the device's RDMA read depth). 0, or -1 with errno EINVAL for
/// another state, RTR / RTS of an RC id whose peer is not known yet, or a null argument.
int rdma_init_qp_attr(rdma_cm_id* id, ibv_qp_attr* qp_attr, int* qp_attr_mask) {
  namespace shim = hcasim::emu::shim;
  if (id == nullptr || qp_attr == nullptr || qp_attr_mask == nullptr || id->verbs == nullptr)
    return shim::fail(EINVAL);
  CmId* c = shim::cm_of(id);
  const ibv_qp_state state = qp_attr->qp_state;
  const bool ud = id->qp_type == IBV_QPT_UD;
  const bool peer_known = c->peer_lid != 0;
  std::memset(qp_attr, 0, sizeof *qp_attr);
  qp_attr->qp_state = state;
  int mask = IBV_QP_STATE;
  switch (state) {
    case IBV_QPS_INIT:
      qp_attr->port_num = 1;
      qp_attr->pkey_index = 0;
      mask |= IBV_QP_PORT | IBV_QP_PKEY_INDEX;
      if (ud) {
        qp_attr->qkey = shim::id_qkey(id);
        mask |= IBV_QP_QKEY;
      } else {
        qp_attr->qp_access_flags =
            peer_known ? IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC : 0;
        mask |= IBV_QP_ACCESS_FLAGS;
      }
      break;
    case IBV_QPS_RTR:
      if (ud) break;
      if (!peer_known) return shim::fail(EINVAL);
      qp_attr->ah_attr.dlid = c->peer_lid;
      qp_attr->ah_attr.port_num = 1;
      qp_attr->path_mtu = shim::kCmPathMtu;
      qp_attr->dest_qp_num = c->peer_qpn;
      qp_attr->rq_psn = 0;
      qp_attr->max_dest_rd_atomic = hcasim::emu::shim::kRdAtom;
      qp_attr->min_rnr_timer = 0;
      mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
              IBV_QP_MIN_RNR_TIMER;
      break;
    case IBV_QPS_RTS:
      qp_attr->sq_psn = 0;
      mask |= IBV_QP_SQ_PSN;
      if (ud) break;
      if (!peer_known) return shim::fail(EINVAL);
      qp_attr->timeout = c->ack_timeout.value_or(device().hca->retry().timeout);
      qp_attr->retry_cnt = device().hca->retry().retry_cnt;
      qp_attr->rnr_retry = c->rnr_retry.value_or(7);
      qp_attr->max_rd_atomic = hcasim::emu::shim::kRdAtom;
      mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
      break;
    default:
      return shim::fail(EINVAL);
  }
  *qp_attr_mask = mask;
  return 0;
}

/// rdma_join_multicast_ex(3): the UD id joins the group of mc_join_attr->addr (an IPv4 or
/// IPv6 multicast address; the MGID as the kernel's cma_set_mgid maps it, its MLID derived
/// from the MGID: the emulated subnet has no SA), its QP, when it has one, attached
/// (ibv_attach_mcast, as librdmacm's ucma_process_join). MULTICAST_JOIN follows with
/// rdma_ud_param: an address vector with a GRH to the group (DLID the MLID, DGID the MGID),
/// QPN 0xFFFFFF, the id's Q_Key (RDMA_UDP_QKEY), and `context` as private_data.
/// RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER joins without attaching the QP (its sends reach the
/// group, the group's do not reach it). -1 with errno EINVAL without the address and join flags
/// in comp_mask, for another flag, an id that is not UD or not bound to the device (resolve or
/// bind first), EAFNOSUPPORT for an address neither IPv4, IPv6 nor AF_IB (an MGID: mckey -M).
int rdma_join_multicast_ex(rdma_cm_id* id, rdma_cm_join_mc_attr_ex* mc_join_attr, void* context) {
  namespace shim = hcasim::emu::shim;
  if (id == nullptr || mc_join_attr == nullptr) return shim::fail(EINVAL);
  if ((mc_join_attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS) == 0 ||
      (mc_join_attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS) == 0 || mc_join_attr->addr == nullptr)
    return shim::fail(EINVAL);
  const uint32_t flags = mc_join_attr->join_flags;
  if (flags != RDMA_MC_JOIN_FLAG_FULLMEMBER && flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
    return shim::fail(EINVAL);
  if (id->verbs == nullptr || id->qp_type != IBV_QPT_UD) return shim::fail(EINVAL);
  const std::optional<std::array<uint8_t, 16>> mgid = shim::mgid_of_addr(mc_join_attr->addr);
  if (!mgid) return shim::fail(EAFNOSUPPORT);
  CmId::McGroup g;
  std::memcpy(&g.addr, mc_join_attr->addr, shim::sockaddr_len(mc_join_attr->addr));
  g.mgid = *mgid;
  g.mlid = shim::mlid_of(*mgid);
  g.context = context;
  if (shim::port_lid() == 0) return shim::fail(ENODEV);
  if (id->qp != nullptr && flags == RDMA_MC_JOIN_FLAG_FULLMEMBER) {
    const int e = device().hca->attach_mcast(id->qp->qp_num, g.mgid, g.mlid);
    if (e != 0) return shim::fail(e);
    g.qpn = id->qp->qp_num;
  }
  shim::cm_of(id)->groups.push_back(g);
  rdma_ud_param ud{};
  ud.private_data = context;
  ud.ah_attr.dlid = g.mlid;
  ud.ah_attr.port_num = 1;
  ud.ah_attr.is_global = 1;
  std::memcpy(ud.ah_attr.grh.dgid.raw, g.mgid.data(), 16);
  ud.ah_attr.grh.sgid_index = 0;
  ud.ah_attr.grh.hop_limit = 0;
  ud.qp_num = hcasim::hca::kMulticastQpn;
  ud.qkey = shim::id_qkey(id);
  shim::post_event(id, RDMA_CM_EVENT_MULTICAST_JOIN, 0, {}, nullptr, 0, 0, &ud);
  return shim::complete(id);
}

/// rdma_join_multicast(3): rdma_join_multicast_ex as a full member.
int rdma_join_multicast(rdma_cm_id* id, sockaddr* addr, void* context) {
  rdma_cm_join_mc_attr_ex attr{};
  attr.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS | RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
  attr.join_flags = RDMA_MC_JOIN_FLAG_FULLMEMBER;
  attr.addr = addr;
  return rdma_join_multicast_ex(id, &attr, context);
}

/// rdma_leave_multicast(3): the id leaves the group of `addr` it joined, its QP detached
/// (librdmacm's rdma_leave_multicast). 0, or -1 with errno EINVAL for a null argument,
/// EADDRNOTAVAIL when the id did not join that address.
int rdma_leave_multicast(rdma_cm_id* id, sockaddr* addr) {
  namespace shim = hcasim::emu::shim;
  if (id == nullptr || addr == nullptr) return shim::fail(EINVAL);
  auto& groups = shim::cm_of(id)->groups;
  for (auto it = groups.begin(); it != groups.end(); ++it) {
    if (!shim::same_ip(reinterpret_cast<const sockaddr*>(&it->addr), addr)) continue;
    if (it->qpn != 0) device().hca->detach_mcast(it->qpn, it->mgid, it->mlid);
    groups.erase(it);
    return 0;
  }
  return shim::fail(EADDRNOTAVAIL);
}
