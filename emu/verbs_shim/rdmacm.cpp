// The librdmacm half of the verbs shim (emu/verbs_shim/shim.h): the functions of
// <rdma/rdma_cma.h> (rdma-core 44) that hw/rdma_device.cpp calls, with their names, types and
// return conventions (0, or -1 with errno; rdma_cm(7) and the man page of each), on the
// emulated HCA's CM over TCP (emu/wire.h: REQ, REP, RTU, REJ, DREQ).
//
// Addresses: the TCP endpoint of a cm_id is its RDMA CM address. rdma_bind_addr binds a TCP
// socket there (port 0: any free port, which rdma_get_src_port reports); rdma_listen listens
// on it, and a thread per listening cm_id reads each connection's REQ and queues a
// CONNECT_REQUEST with its private data. rdma_resolve_addr and rdma_resolve_route only record
// the destination (ADDR_RESOLVED, ROUTE_RESOLVED); rdma_connect opens the TCP connection, sends
// the REQ and waits (at most emu::kCmTimeoutMs) for the REP or REJ, then queues ESTABLISHED or
// REJECTED: a refused TCP connection is the IB CM's REJ for a REQ nobody listens for (status 8,
// invalid service ID), a REJ from the peer is status 28 (consumer defined) with its private
// data. rdma_accept sends the REP and waits for the RTU; rdma_reject sends the REJ. A DREQ from
// the peer, or its stream breaking, queues DISCONNECTED.
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>

#include <fmt/format.h>

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

/// An event with its private data (rdma_get_cm_event(3); freed by rdma_ack_cm_event).
struct Event {
  rdma_cm_event ev{};
  std::vector<uint8_t> data;
};

/// rdma_event_channel: a pipe whose read end is `ch.fd`, one byte per queued event.
struct EventChannel {
  rdma_event_channel ch{};
  int write_fd = -1;
  std::mutex m;
  std::deque<Event*> events;
};

/// rdma_cm_id with what the emulated CM keeps for it.
struct CmId {
  rdma_cm_id id{};
  std::optional<tcp::socket> socket;      ///< passive side: the request's stream until accept / reject
  std::optional<tcp::acceptor> acceptor;  ///< bound / listening
  std::thread listener;
  int stop_fd = -1;                       ///< eventfd stopping the listener thread
  uint32_t remote_qpn = 0;                ///< passive side: the REQ's QPN
  uint8_t initiator_depth = 0, responder_resources = 0;
};

CmId* cm_of(rdma_cm_id* id) { return reinterpret_cast<CmId*>(id); }

/// Guards every cm_id's `channel` (rdma_migrate_id moves it while events are queued).
std::mutex g_channels;

/// Queues an event on the id's current channel. `listen_id` for CONNECT_REQUEST.
void post_event(rdma_cm_id* id, rdma_cm_event_type type, int status, std::span<const uint8_t> data = {},
                rdma_cm_id* listen_id = nullptr, uint8_t initiator_depth = 0, uint8_t responder_resources = 0) {
  auto* e = new Event;
  e->data.assign(data.begin(), data.end());
  e->ev.id = id;
  e->ev.listen_id = listen_id;
  e->ev.event = type;
  e->ev.status = status;
  e->ev.param.conn.private_data = e->data.empty() ? nullptr : e->data.data();
  e->ev.param.conn.private_data_len = static_cast<uint8_t>(std::min<size_t>(e->data.size(), 255));
  e->ev.param.conn.initiator_depth = initiator_depth;
  e->ev.param.conn.responder_resources = responder_resources;
  std::lock_guard g(g_channels);
  auto* ch = reinterpret_cast<EventChannel*>(id->channel);
  std::lock_guard g2(ch->m);
  ch->events.push_back(e);
  const char one = 1;
  if (::write(ch->write_fd, &one, 1) < 0) {
    // Full pipe: thousands of unread events; the reader has plenty to read already.
  }
}

int fail(int e) {
  errno = e;
  return -1;
}

socklen_t sockaddr_len(const sockaddr* sa) {
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

/// The QP of a cm_id's rdma_create_qp, or null.
std::shared_ptr<Qp> emu_qp(rdma_cm_id* id) { return id->qp != nullptr ? qp_of(id->qp)->emu : nullptr; }

/// From now on the peer's DREQ or a broken stream queues DISCONNECTED on `id`.
void watch_link(rdma_cm_id* id, Qp& qp) {
  qp.set_link_handler([id](bool, const std::string&) { post_event(id, RDMA_CM_EVENT_DISCONNECTED, 0); });
}

/// The listener thread of a listening cm_id: accepts TCP connections, reads each REQ (at most
/// kCmTimeoutMs) and queues a CONNECT_REQUEST with a new cm_id holding the stream.
void listen_loop(CmId* l) {
  std::array<pollfd, 2> fds{{{l->acceptor->native_handle(), POLLIN, 0}, {l->stop_fd, POLLIN, 0}}};
  for (;;) {
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    tcp::socket s(device().hca->io());
    boost::system::error_code ec;
    l->acceptor->accept(s, ec);
    if (ec) continue;  // would block, or the peer gave up already
    s.set_option(tcp::no_delay(true), ec);
    const auto peer_ep = s.remote_endpoint(ec);
    const std::string peer = ec ? std::string("peer") : fmt::format("{}:{}", peer_ep.address().to_string(), peer_ep.port());
    Packet req;
    try {
      req = read_frame_until(s, std::chrono::steady_clock::now() + std::chrono::milliseconds(kCmTimeoutMs), peer);
    } catch (const sdp::DeviceError&) {
      continue;  // no REQ: the stream closes, the peer sees its connection setup fail
    }
    if (req.op != Op::CmReq) continue;
    auto* child = new CmId;
    child->id.verbs = &device().ctx;
    child->id.context = l->id.context;
    child->id.ps = l->id.ps;
    child->id.port_num = 1;
    child->id.qp_type = IBV_QPT_RC;
    set_addr(child->id.route.addr.src_storage, s.local_endpoint(ec));
    set_addr(child->id.route.addr.dst_storage, peer_ep);
    child->remote_qpn = req.local_qpn;
    child->socket.emplace(std::move(s));
    {
      std::lock_guard g(g_channels);
      child->id.channel = l->id.channel;
    }
    // The emulated REQ carries no RDMA read depths: the device's are offered.
    post_event(&child->id, RDMA_CM_EVENT_CONNECT_REQUEST, 0, req.payload, &l->id, kRdAtom, kRdAtom);
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
  boost::system::error_code ec;
  if (c->acceptor) c->acceptor->close(ec);
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

/// rdma_create_event_channel(3): its fd (a pipe's read end, close-on-exec) polls readable
/// while events wait; rdma_get_cm_event blocks unless it is made non-blocking. Null with errno
/// from pipe2(2).
rdma_event_channel* rdma_create_event_channel() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return nullptr;
  ::fcntl(fds[1], F_SETFL, O_NONBLOCK);
  auto* c = new hcasim::emu::shim::EventChannel;
  c->ch.fd = fds[0];
  c->write_fd = fds[1];
  return &c->ch;
}

/// rdma_destroy_event_channel(3): events not yet taken are dropped.
void rdma_destroy_event_channel(rdma_event_channel* channel) {
  auto* c = reinterpret_cast<hcasim::emu::shim::EventChannel*>(channel);
  ::close(c->ch.fd);
  ::close(c->write_fd);
  for (auto* e : c->events) delete e;
  delete c;
}

/// rdma_get_cm_event(3): the channel's next event. 0, or -1 with errno (EAGAIN: non-blocking
/// and none waits).
int rdma_get_cm_event(rdma_event_channel* channel, rdma_cm_event** event) {
  auto* c = reinterpret_cast<hcasim::emu::shim::EventChannel*>(channel);
  char b = 0;
  if (::read(c->ch.fd, &b, 1) != 1) return -1;
  std::lock_guard g(c->m);
  if (c->events.empty()) return hcasim::emu::shim::fail(EAGAIN);
  hcasim::emu::shim::Event* e = c->events.front();
  c->events.pop_front();
  *event = &e->ev;
  return 0;
}

/// rdma_ack_cm_event(3): frees the event and its private data. Returns 0.
int rdma_ack_cm_event(rdma_cm_event* event) {
  delete reinterpret_cast<hcasim::emu::shim::Event*>(event);
  return 0;
}

/// rdma_event_str(3): librdmacm's names.
const char* rdma_event_str(rdma_cm_event_type event) {
  switch (event) {
    case RDMA_CM_EVENT_ADDR_RESOLVED: return "RDMA_CM_EVENT_ADDR_RESOLVED";
    case RDMA_CM_EVENT_ADDR_ERROR: return "RDMA_CM_EVENT_ADDR_ERROR";
    case RDMA_CM_EVENT_ROUTE_RESOLVED: return "RDMA_CM_EVENT_ROUTE_RESOLVED";
    case RDMA_CM_EVENT_ROUTE_ERROR: return "RDMA_CM_EVENT_ROUTE_ERROR";
    case RDMA_CM_EVENT_CONNECT_REQUEST: return "RDMA_CM_EVENT_CONNECT_REQUEST";
    case RDMA_CM_EVENT_CONNECT_RESPONSE: return "RDMA_CM_EVENT_CONNECT_RESPONSE";
    case RDMA_CM_EVENT_CONNECT_ERROR: return "RDMA_CM_EVENT_CONNECT_ERROR";
    case RDMA_CM_EVENT_UNREACHABLE: return "RDMA_CM_EVENT_UNREACHABLE";
    case RDMA_CM_EVENT_REJECTED: return "RDMA_CM_EVENT_REJECTED";
    case RDMA_CM_EVENT_ESTABLISHED: return "RDMA_CM_EVENT_ESTABLISHED";
    case RDMA_CM_EVENT_DISCONNECTED: return "RDMA_CM_EVENT_DISCONNECTED";
    case RDMA_CM_EVENT_DEVICE_REMOVAL: return "RDMA_CM_EVENT_DEVICE_REMOVAL";
    case RDMA_CM_EVENT_MULTICAST_JOIN: return "RDMA_CM_EVENT_MULTICAST_JOIN";
    case RDMA_CM_EVENT_MULTICAST_ERROR: return "RDMA_CM_EVENT_MULTICAST_ERROR";
    case RDMA_CM_EVENT_ADDR_CHANGE: return "RDMA_CM_EVENT_ADDR_CHANGE";
    case RDMA_CM_EVENT_TIMEWAIT_EXIT: return "RDMA_CM_EVENT_TIMEWAIT_EXIT";
  }
  return "UNKNOWN EVENT";
}

/// rdma_create_id(3): RDMA_PS_TCP (and RDMA_PS_IB) give RC cm_ids; other port spaces EINVAL.
int rdma_create_id(rdma_event_channel* channel, rdma_cm_id** id, void* context, rdma_port_space ps) {
  if (channel == nullptr || id == nullptr) return hcasim::emu::shim::fail(EINVAL);  // no synchronous ids
  if (ps != RDMA_PS_TCP && ps != RDMA_PS_IB) return hcasim::emu::shim::fail(EINVAL);
  auto* c = new CmId;
  c->id.channel = channel;
  c->id.context = context;
  c->id.ps = ps;
  c->id.qp_type = IBV_QPT_RC;
  *id = &c->id;
  return 0;
}

/// rdma_destroy_id(3): stops listening, closes a request's stream not accepted (the peer
/// sees the setup fail). The QP must have been destroyed. Returns 0.
int rdma_destroy_id(rdma_cm_id* id) {
  CmId* c = hcasim::emu::shim::cm_of(id);
  hcasim::emu::shim::stop_listener(c);
  if (c->socket) {
    boost::system::error_code ec;
    c->socket->close(ec);
  }
  delete c;
  return 0;
}

/// rdma_migrate_id(3): the id's future events go to `channel`. Returns 0.
int rdma_migrate_id(rdma_cm_id* id, rdma_event_channel* channel) {
  if (id == nullptr || channel == nullptr) return hcasim::emu::shim::fail(EINVAL);
  std::lock_guard g(hcasim::emu::shim::g_channels);
  id->channel = channel;
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
  c->acceptor->open(ep.protocol(), ec);
  if (!ec) c->acceptor->set_option(boost::asio::ip::tcp::acceptor::reuse_address(true), ec);
  if (!ec) c->acceptor->bind(ep, ec);
  if (ec) {
    c->acceptor.reset();
    return fail(ec.value());
  }
  hcasim::emu::shim::set_addr(id->route.addr.src_storage, c->acceptor->local_endpoint(ec));
  id->verbs = &device().ctx;
  id->port_num = 1;
  return 0;
}

/// rdma_listen(3): listens on the bound address; CONNECT_REQUEST events follow. -1 with errno
/// EINVAL when not bound, else from listen(2).
int rdma_listen(rdma_cm_id* id, int backlog) {
  using hcasim::emu::shim::fail;
  CmId* c = hcasim::emu::shim::cm_of(id);
  if (!c->acceptor || c->listener.joinable()) return fail(EINVAL);
  boost::system::error_code ec;
  c->acceptor->listen(backlog > 0 ? backlog : 8, ec);
  if (!ec) c->acceptor->non_blocking(true, ec);
  if (ec) return fail(ec.value());
  c->stop_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (c->stop_fd < 0) return -1;
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
  }
  id->verbs = &device().ctx;
  id->port_num = 1;
  hcasim::emu::shim::post_event(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
  return 0;
}

/// rdma_resolve_route(3): ROUTE_RESOLVED follows at once. -1 with errno EINVAL before
/// rdma_resolve_addr.
int rdma_resolve_route(rdma_cm_id* id, int /*timeout_ms*/) {
  if (id == nullptr || id->verbs == nullptr) return hcasim::emu::shim::fail(EINVAL);
  hcasim::emu::shim::post_event(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
  return 0;
}

/// rdma_create_qp(3): an RC QP on the id's device (shim::create_qp's limits), in INIT, ready
/// for receives. -1 with errno EINVAL (unbound id, a QP already, bad attributes) or EOPNOTSUPP.
int rdma_create_qp(rdma_cm_id* id, ibv_pd* pd, ibv_qp_init_attr* qp_init_attr) {
  using hcasim::emu::shim::fail;
  if (id == nullptr || id->verbs == nullptr || id->qp != nullptr || pd == nullptr) return fail(EINVAL);
  hcasim::emu::shim::QpObj* q = hcasim::emu::shim::create_qp(pd, qp_init_attr);
  if (q == nullptr) return -1;
  id->qp = &q->qp;
  id->pd = pd;
  id->send_cq = qp_init_attr->send_cq;
  id->recv_cq = qp_init_attr->recv_cq;
  id->send_cq_channel = qp_init_attr->send_cq->channel;
  id->recv_cq_channel = qp_init_attr->recv_cq->channel;
  return 0;
}

/// rdma_destroy_qp(3).
void rdma_destroy_qp(rdma_cm_id* id) {
  if (id == nullptr || id->qp == nullptr) return;
  hcasim::emu::shim::destroy_qp(hcasim::emu::shim::qp_of(id->qp));
  id->qp = nullptr;
}

/// rdma_connect(3) on an id with a QP: the REQ (private data at most 56 bytes, RDMA_PS_TCP)
/// goes to the resolved address and the answer is awaited here; ESTABLISHED (the REP's private
/// data; the QP in RTS), REJECTED or UNREACHABLE follows. -1 with errno EINVAL without a
/// resolved route or a QP, or with too much private data.
int rdma_connect(rdma_cm_id* id, rdma_conn_param* conn_param) {
  namespace shim = hcasim::emu::shim;
  namespace emu = hcasim::emu;
  using boost::asio::ip::tcp;
  if (id == nullptr || id->verbs == nullptr || id->qp == nullptr) return shim::fail(EINVAL);
  std::vector<uint8_t> pd;
  if (conn_param != nullptr && conn_param->private_data != nullptr) {
    const auto* p = static_cast<const uint8_t*>(conn_param->private_data);
    pd.assign(p, p + conn_param->private_data_len);
  }
  if (pd.size() > shim::kReqPrivateDataTcp) return shim::fail(EINVAL);
  std::shared_ptr<emu::Qp> qp = shim::emu_qp(id);
  const tcp::endpoint dst = shim::to_endpoint(&id->route.addr.dst_addr);
  const std::string peer = fmt::format("{}:{}", dst.address().to_string(), dst.port());
  tcp::socket s(device().hca->io());
  boost::system::error_code ec;
  s.connect(dst, ec);
  if (ec == boost::asio::error::connection_refused) {
    shim::post_event(id, RDMA_CM_EVENT_REJECTED, shim::kRejInvalidServiceId);
    return 0;
  }
  if (ec) {
    shim::post_event(id, RDMA_CM_EVENT_UNREACHABLE, -ec.value());
    return 0;
  }
  s.set_option(tcp::no_delay(true), ec);
  shim::set_addr(id->route.addr.src_storage, s.local_endpoint(ec));
  qp->attach(std::move(s));
  try {
    emu::write_frame(qp->socket(), emu::Packet{.op = emu::Op::CmReq, .local_qpn = qp->qp_num(), .payload = pd}, peer);
    const emu::Packet rep = emu::read_frame_until(
        qp->socket(), std::chrono::steady_clock::now() + std::chrono::milliseconds(emu::kCmTimeoutMs), peer);
    if (rep.op == emu::Op::CmRej) {
      shim::post_event(id, RDMA_CM_EVENT_REJECTED, shim::kRejConsumerDefined, rep.payload);
      return 0;
    }
    if (rep.op != emu::Op::CmRep) {
      shim::post_event(id, RDMA_CM_EVENT_CONNECT_ERROR, -EPROTO);
      return 0;
    }
    emu::write_frame(qp->socket(), emu::Packet{.op = emu::Op::CmRtu, .dest_qpn = rep.local_qpn}, peer);
    qp->to_rts(rep.local_qpn);
    id->qp->state = IBV_QPS_RTS;
    shim::watch_link(id, *qp);
    const uint8_t depth = conn_param != nullptr ? conn_param->initiator_depth : 0;
    const uint8_t res = conn_param != nullptr ? conn_param->responder_resources : 0;
    shim::post_event(id, RDMA_CM_EVENT_ESTABLISHED, 0, rep.payload, nullptr, depth, res);
  } catch (const hcasim::sdp::DeviceError&) {
    // No REP in time, or the stream closed: the IB CM's unanswered REQ.
    shim::post_event(id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
  }
  return 0;
}

/// rdma_accept(3) on a CONNECT_REQUEST's id with a QP: the REP (private data at most 196
/// bytes) goes out and the RTU is awaited here; ESTABLISHED (the QP in RTS) or CONNECT_ERROR
/// follows. -1 with errno EINVAL for an id without a request or a QP, or too much private data.
int rdma_accept(rdma_cm_id* id, rdma_conn_param* conn_param) {
  namespace shim = hcasim::emu::shim;
  namespace emu = hcasim::emu;
  if (id == nullptr || id->qp == nullptr) return shim::fail(EINVAL);
  CmId* c = shim::cm_of(id);
  if (!c->socket) return shim::fail(EINVAL);
  std::vector<uint8_t> pd;
  if (conn_param != nullptr && conn_param->private_data != nullptr) {
    const auto* p = static_cast<const uint8_t*>(conn_param->private_data);
    pd.assign(p, p + conn_param->private_data_len);
  }
  if (pd.size() > emu::kRepPrivateData) return shim::fail(EINVAL);
  std::shared_ptr<emu::Qp> qp = shim::emu_qp(id);
  qp->attach(std::move(*c->socket));
  c->socket.reset();
  const std::string peer = "peer";
  try {
    emu::write_frame(qp->socket(),
                     emu::Packet{.op = emu::Op::CmRep, .dest_qpn = c->remote_qpn, .local_qpn = qp->qp_num(), .payload = pd},
                     peer);
    const emu::Packet rtu = emu::read_frame_until(
        qp->socket(), std::chrono::steady_clock::now() + std::chrono::milliseconds(emu::kCmTimeoutMs), peer);
    if (rtu.op != emu::Op::CmRtu) {
      shim::post_event(id, RDMA_CM_EVENT_CONNECT_ERROR, -EPROTO);
      return 0;
    }
  } catch (const hcasim::sdp::DeviceError&) {
    shim::post_event(id, RDMA_CM_EVENT_CONNECT_ERROR, -ETIMEDOUT);
    return 0;
  }
  qp->to_rts(c->remote_qpn);
  id->qp->state = IBV_QPS_RTS;
  shim::watch_link(id, *qp);
  shim::post_event(id, RDMA_CM_EVENT_ESTABLISHED, 0);
  return 0;
}

/// rdma_reject(3): the REJ (private data, at most 148 bytes) goes to the requester, whose
/// REJECTED event carries it; the stream closes. -1 with errno EINVAL for an id without a
/// pending request.
int rdma_reject(rdma_cm_id* id, const void* private_data, uint8_t private_data_len) {
  namespace emu = hcasim::emu;
  CmId* c = hcasim::emu::shim::cm_of(id);
  if (id == nullptr || !c->socket) return hcasim::emu::shim::fail(EINVAL);
  emu::Packet rej{.op = emu::Op::CmRej};
  if (private_data != nullptr) {
    const auto* p = static_cast<const uint8_t*>(private_data);
    rej.payload.assign(p, p + std::min<size_t>(private_data_len, emu::kRejReason));
  }
  boost::system::error_code ec;
  boost::asio::write(*c->socket, boost::asio::buffer(emu::encode(rej)), ec);
  c->socket->close(ec);
  c->socket.reset();
  return 0;
}

/// rdma_disconnect(3): the QP goes to ERROR (its WRs flush) and the peer gets the DREQ (its
/// DISCONNECTED). Returns 0; -1 with errno EINVAL for an id without a QP.
int rdma_disconnect(rdma_cm_id* id) {
  if (id == nullptr || id->qp == nullptr) return hcasim::emu::shim::fail(EINVAL);
  hcasim::emu::shim::emu_qp(id)->disconnect();
  id->qp->state = IBV_QPS_ERR;
  return 0;
}

/// rdma_get_src_port(3): the local port, network byte order (0 before binding or connecting).
__be16 rdma_get_src_port(rdma_cm_id* id) { return id->route.addr.src_sin.sin_port; }

/// rdma_get_dst_port(3): the peer's port, network byte order.
__be16 rdma_get_dst_port(rdma_cm_id* id) { return id->route.addr.dst_sin.sin_port; }
