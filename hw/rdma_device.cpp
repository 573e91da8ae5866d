#include "hw/rdma_device.h"

#include "hw/rdma_cm.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/format.h>

namespace hcasim::hw {

namespace {

using detail::Clock;
using detail::CmEvent;
using detail::errstr;
using detail::expect_cm_event;
using detail::next_cm_event;
using detail::remaining_ms;

/// rdma_resolve_addr / rdma_resolve_route timeout, ms (rdma_create_ep(3) uses 2000 too).
constexpr int kResolveTimeoutMs = 2000;
/// How long connect() waits for the REP once the REQ left, ms. The IB CM gives up on an
/// unanswered REQ by itself after its retries (RDMA_CM_EVENT_UNREACHABLE); this only bounds
/// the wait when it takes longer.
constexpr int kConnectTimeoutMs = 30000;
/// How long accept() waits for the RTU once the REP left, ms.
constexpr int kEstablishTimeoutMs = 30000;
/// rdma_listen(3) backlog: connection requests queued before accept() takes them.
constexpr int kListenBacklog = 8;
/// RDMA reads outstanding per QP, each way (rdma_conn_param responder_resources and
/// initiator_depth), bounded by the device's max_qp_rd_atom / max_qp_init_rd_atom.
constexpr int kRdAtomic = 4;
/// Transport and RNR retries (3-bit counts; 7 = the RNR NAK is retried without limit, IBA
/// vol. 1 9.7.5.2.8).
constexpr uint8_t kRetryCount = 7;
constexpr uint8_t kRnrRetryCount = 7;

void set_nonblocking(int fd, const std::string& what) {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
    throw sdp::DeviceError(fmt::format("cannot make the {} non-blocking: {}", what, errstr(errno)));
}

void move_qp_to_error(ibv_qp* qp) {
  if (qp == nullptr) return;
  ibv_qp_attr attr{};
  attr.qp_state = IBV_QPS_ERR;
  ::ibv_modify_qp(qp, &attr, IBV_QP_STATE);  // fails only when already gone: nothing to do then
}

std::string device_name(ibv_context* ctx) {
  return ctx != nullptr && ctx->device != nullptr ? ::ibv_get_device_name(ctx->device) : "(none)";
}

std::string sockaddr_str(const sockaddr* sa) {
  if (sa == nullptr) return "?";
  char buf[INET6_ADDRSTRLEN] = {};
  if (sa->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    ::inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf);
    return fmt::format("{}:{}", buf, ntohs(in->sin_port));
  }
  if (sa->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof buf);
    return fmt::format("[{}]:{}", buf, ntohs(in6->sin6_port));
  }
  return fmt::format("(address family {})", sa->sa_family);
}

/// One line of text for private data: newlines become spaces, at most `max` bytes.
std::vector<uint8_t> reject_text(const std::string& why, std::size_t max) {
  std::vector<uint8_t> out(why.begin(), why.begin() + static_cast<std::ptrdiff_t>(std::min(why.size(), max)));
  for (uint8_t& c : out)
    if (c < 0x20 || c > 0x7e) c = ' ';
  return out;
}

/// getaddrinfo(3) result, freed on scope exit.
class AddrInfo {
 public:
  /// Resolves host:port (stream sockets). An empty host: INADDR_ANY when `passive`, else the
  /// loopback address. Throws sdp::DeviceError naming the host.
  AddrInfo(const std::string& host, uint16_t port, bool passive) {
    addrinfo hints{};
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_family = passive && host.empty() ? AF_INET : AF_UNSPEC;
    hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
    const std::string service = std::to_string(port);
    const int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &ai_);
    if (rc != 0)
      throw sdp::DeviceError(fmt::format("cannot resolve '{}': {}", host, rc == EAI_SYSTEM ? errstr(errno) : ::gai_strerror(rc)));
  }
  ~AddrInfo() {
    if (ai_ != nullptr) ::freeaddrinfo(ai_);
  }
  AddrInfo(const AddrInfo&) = delete;
  AddrInfo& operator=(const AddrInfo&) = delete;
  sockaddr* addr() const { return ai_->ai_addr; }

 private:
  addrinfo* ai_ = nullptr;
};

/// What a device shares with its connections and listeners, which keep it alive: the
/// librdmacm device list (holding its reference on the contexts), the context, its
/// attributes, the PD, the memory arena and its MR.
struct DeviceState {
  std::string name;
  ibv_context** cm_devices = nullptr;  // rdma_get_devices
  ibv_context* ctx = nullptr;          // one of cm_devices
  ibv_device_attr attr{};
  ibv_pd* pd = nullptr;
  std::unique_ptr<sdp::ProcessMemory> memory;
  ibv_mr* mr = nullptr;

  DeviceState() = default;
  DeviceState(const DeviceState&) = delete;
  DeviceState& operator=(const DeviceState&) = delete;
  ~DeviceState() {
    if (mr != nullptr) ::ibv_dereg_mr(mr);
    if (pd != nullptr) ::ibv_dealloc_pd(pd);
    if (cm_devices != nullptr) ::rdma_free_devices(cm_devices);
    // memory (a member) is unmapped after the MR is gone.
  }
};

/// One RC connection: its own CM event channel and cm_id, the completion channel, the CQ,
/// the QP (rdma_create_qp on the cm_id) and the thread watching the CM events. Built step by
/// step by connect() and accept(); the destructor releases whatever was built, in order.
class RdmaConnection final : public sdp::Connection {
 public:
  RdmaConnection(std::shared_ptr<DeviceState> dev, std::string peer) : dev_(std::move(dev)), peer_(std::move(peer)) {}
  ~RdmaConnection() override;
  RdmaConnection(const RdmaConnection&) = delete;
  RdmaConnection& operator=(const RdmaConnection&) = delete;

  sdp::Verbs& verbs() override { return *verbs_; }
  bool wait_cq_event(int timeout_ms) override;
  bool drain(int timeout_ms) override;
  void disconnect() override;

  /// rdma_create_event_channel(3), non-blocking.
  void create_channel();
  /// rdma_create_id(3) on the channel (active side).
  void create_id();
  /// Takes a connection request's cm_id (passive side): the connection destroys it from now.
  void adopt_id(rdma_cm_id* id);
  /// Moves the adopted cm_id to this connection's channel (rdma_migrate_id(3); its events so
  /// far must have been acknowledged), so each connection has its own CM event stream.
  void migrate_id();
  /// Throws sdp::DeviceError unless the cm_id is bound to the opened device's context (`passive`:
  /// the request came in through another device; else the peer is reached through one).
  void check_device(bool passive) const;
  /// The completion channel, the CQ and the RC QP in INIT (rdma_create_qp(3)).
  void create_qp(const sdp::QpCaps& caps);
  /// rdma_reject(3) with `why` as private data (one line, truncated to a REJ's 148 bytes).
  void reject(const std::string& why);
  /// The connection is up: from now on disconnect() sends a DREQ, and a thread moves the QP
  /// to the error state when the peer disconnects or the device goes away.
  void established();

  rdma_event_channel* channel() const { return ch_; }
  rdma_cm_id* id() const { return id_; }
  std::string peer() const override { return peer_; }

 private:
  void watch_cm_events();
  void peer_gone();

  std::shared_ptr<DeviceState> dev_;
  std::string peer_;
  rdma_event_channel* ch_ = nullptr;
  rdma_cm_id* id_ = nullptr;
  ibv_comp_channel* comp_ = nullptr;
  ibv_cq* cq_ = nullptr;
  std::unique_ptr<RdmaVerbs> verbs_;
  bool established_ = false;  // set before the CM thread starts, read-only after
  std::mutex disconnect_mutex_;
  bool disconnected_ = false;
  int stop_fd_ = -1;  // eventfd that stops the CM thread
  std::thread cm_thread_;
};

RdmaConnection::~RdmaConnection() {
  disconnect();
  if (cm_thread_.joinable()) {
    const uint64_t one = 1;
    if (::write(stop_fd_, &one, sizeof one) < 0) {
      // An eventfd write fails only on counter overflow; the thread polls it anyway.
    }
    cm_thread_.join();
  }
  if (stop_fd_ >= 0) ::close(stop_fd_);
  verbs_.reset();  // its MRs
  if (id_ != nullptr && id_->qp != nullptr) ::rdma_destroy_qp(id_);
  if (cq_ != nullptr) ::ibv_destroy_cq(cq_);  // every CQ event was acknowledged by wait_cq_event
  if (comp_ != nullptr) ::ibv_destroy_comp_channel(comp_);
  if (id_ != nullptr) ::rdma_destroy_id(id_);  // every CM event was acknowledged
  if (ch_ != nullptr) ::rdma_destroy_event_channel(ch_);
}

void RdmaConnection::create_channel() {
  ch_ = ::rdma_create_event_channel();
  if (ch_ == nullptr)
    throw sdp::DeviceError(fmt::format("cannot create an RDMA CM event channel: {} (is the rdma_ucm module loaded?)",
                                errstr(errno)));
  set_nonblocking(ch_->fd, "RDMA CM event channel");
}

void RdmaConnection::create_id() {
  // rdma-core 44 has no RDMA_PS_SDP (the kernel dropped the SDP port space with ib_sdp):
  // RDMA_PS_TCP, whose CM header leaves 56 bytes of REQ private data (rdma_connect(3)).
  if (::rdma_create_id(ch_, &id_, this, RDMA_PS_TCP) != 0)
    throw sdp::DeviceError(fmt::format("rdma_create_id: {}", errstr(errno)));
}

void RdmaConnection::adopt_id(rdma_cm_id* id) {
  id_ = id;
  id_->context = this;
}

void RdmaConnection::migrate_id() {
  if (::rdma_migrate_id(id_, ch_) != 0)
    throw sdp::DeviceError(fmt::format("connection from {}: rdma_migrate_id: {}", peer_, errstr(errno)));
}

void RdmaConnection::check_device(bool passive) const {
  if (id_->verbs == dev_->ctx) return;
  const std::string other = device_name(id_->verbs);
  if (passive)
    throw sdp::DeviceError(fmt::format("connection request from {} came in through RDMA device '{}', not the opened '{}'",
                                peer_, other, dev_->name));
  throw sdp::DeviceError(fmt::format("{} is reached through RDMA device '{}', not the opened '{}' (open '{}' instead)", peer_,
                              other, dev_->name, other));
}

void RdmaConnection::create_qp(const sdp::QpCaps& caps) {
  const ibv_device_attr& a = dev_->attr;
  comp_ = ::ibv_create_comp_channel(dev_->ctx);
  if (comp_ == nullptr)
    throw sdp::DeviceError(fmt::format("cannot create a completion channel on '{}': {}", dev_->name, errstr(errno)));
  set_nonblocking(comp_->fd, "completion channel");

  // Every outstanding WR can produce a CQE (all of them when the QP flushes): a CQ smaller
  // than both queues could overrun, which is fatal to the CQ.
  const uint64_t cqe = std::max<uint64_t>(caps.cq_entries, uint64_t{caps.max_send_wr} + caps.max_recv_wr);
  if (cqe > static_cast<uint64_t>(a.max_cqe))
    throw sdp::DeviceError(fmt::format("a CQ of {} entries exceeds the {} entries '{}' allows (max_cqe)", cqe, a.max_cqe,
                                dev_->name));
  if (caps.max_send_wr > static_cast<uint32_t>(a.max_qp_wr) || caps.max_recv_wr > static_cast<uint32_t>(a.max_qp_wr))
    throw sdp::DeviceError(fmt::format("a QP of {} send and {} receive WRs exceeds the {} '{}' allows (max_qp_wr)",
                                caps.max_send_wr, caps.max_recv_wr, a.max_qp_wr, dev_->name));
  cq_ = ::ibv_create_cq(dev_->ctx, static_cast<int>(cqe), nullptr, comp_, 0);
  if (cq_ == nullptr)
    throw sdp::DeviceError(fmt::format("cannot create a CQ of {} entries on '{}': ibv_create_cq: {}", cqe, dev_->name,
                                errstr(errno)));

  auto init_attr = [&](uint32_t max_inline) {
    ibv_qp_init_attr qa{};
    qa.send_cq = cq_;
    qa.recv_cq = cq_;
    qa.qp_type = IBV_QPT_RC;
    qa.sq_sig_all = 0;
    qa.cap.max_send_wr = caps.max_send_wr;
    qa.cap.max_recv_wr = caps.max_recv_wr;
    qa.cap.max_send_sge = sdp::kMaxSge;
    qa.cap.max_recv_sge = sdp::kMaxSge;
    qa.cap.max_inline_data = max_inline;
    return qa;
  };
  ibv_qp_init_attr qa = init_attr(kMaxInlineRequest);
  int rc = ::rdma_create_qp(id_, dev_->pd, &qa);
  if (rc != 0) {  // some devices take less inline data, or none: ask without
    qa = init_attr(0);
    rc = ::rdma_create_qp(id_, dev_->pd, &qa);
  }
  if (rc != 0)
    throw sdp::DeviceError(fmt::format("cannot create an RC QP of {} send and {} receive WRs, {} SGEs on '{}': "
                                "rdma_create_qp: {}",
                                caps.max_send_wr, caps.max_recv_wr, sdp::kMaxSge, dev_->name, errstr(errno)));
  verbs_ = std::make_unique<RdmaVerbs>(dev_->pd, id_->qp, cq_, dev_->mr->lkey, caps.max_send_wr, caps.max_recv_wr,
                                       qa.cap.max_inline_data);
}

void RdmaConnection::reject(const std::string& why) {
  const std::vector<uint8_t> text = reject_text(why, kRejPrivateDataMax);
  ::rdma_reject(id_, text.data(), static_cast<uint8_t>(text.size()));  // the id goes anyway
}

void RdmaConnection::established() {
  established_ = true;
  stop_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd_ < 0) throw sdp::DeviceError(fmt::format("eventfd: {}", errstr(errno)));
  cm_thread_ = std::thread([this] { watch_cm_events(); });
}

void RdmaConnection::watch_cm_events() {
  std::array<pollfd, 2> fds{{{ch_->fd, POLLIN, 0}, {stop_fd_, POLLIN, 0}}};
  for (;;) {
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    if ((fds[0].revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) return;
    for (;;) {
      rdma_cm_event* ev = nullptr;
      if (::rdma_get_cm_event(ch_, &ev) != 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) break;
        return;
      }
      const rdma_cm_event_type type = ev->event;
      ::rdma_ack_cm_event(ev);
      if (type == RDMA_CM_EVENT_DISCONNECTED || type == RDMA_CM_EVENT_DEVICE_REMOVAL) peer_gone();
      // TIMEWAIT_EXIT, ADDR_CHANGE: nothing to do for an established RC connection.
    }
  }
}

void RdmaConnection::peer_gone() {
  // The peer's DREQ (or the device's removal): flush the WRs so the engine sees completion
  // errors rather than waiting, and answer the DREQ with a DREP (rdma_disconnect(3)).
  if (verbs_) verbs_->mark_failed();
  move_qp_to_error(id_->qp);
  disconnect();
}

void RdmaConnection::disconnect() {
  std::lock_guard<std::mutex> lock(disconnect_mutex_);
  if (disconnected_ || id_ == nullptr) return;
  disconnected_ = true;
  if (verbs_) verbs_->mark_failed();
  // rdma_disconnect moves an IB/RoCE QP to ERROR (an iWARP one to SQD) and sends the DREQ,
  // or the DREP to the peer's DREQ. Before ESTABLISHED there is nothing to disconnect.
  if (established_) ::rdma_disconnect(id_);
  move_qp_to_error(id_->qp);
}

bool RdmaConnection::wait_cq_event(int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(std::max(timeout_ms, 0));
  for (;;) {
    const int wait_ms = timeout_ms < 0 ? -1 : remaining_ms(deadline);
    pollfd p{comp_->fd, POLLIN, 0};
    const int n = ::poll(&p, 1, wait_ms);
    if (n < 0 && errno != EINTR)
      throw sdp::DeviceError(fmt::format("poll on the completion channel: {}", errstr(errno)));
    if (n > 0) {
      ibv_cq* ev_cq = nullptr;
      void* ev_ctx = nullptr;
      if (::ibv_get_cq_event(comp_, &ev_cq, &ev_ctx) == 0) {
        ::ibv_ack_cq_events(ev_cq, 1);
        return true;
      }
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        throw sdp::DeviceError(fmt::format("ibv_get_cq_event: {}", errstr(errno)));
    }
    if (timeout_ms >= 0 && remaining_ms(deadline) == 0) return false;
  }
}

bool RdmaConnection::drain(int timeout_ms) {
  if (!verbs_) return true;
  const uint64_t target = verbs_->signaled_sends_posted();
  const auto deadline = Clock::now() + std::chrono::milliseconds(std::max(timeout_ms, 0));
  for (;;) {
    // The engine polls the CQ (its completion thread); this only watches its counters.
    if (verbs_->sends_completed() >= target) return true;
    if (verbs_->failed() || Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

/// A listening cm_id on its own event channel.
class RdmaListener final : public sdp::Listener {
 public:
  RdmaListener(std::shared_ptr<DeviceState> dev, const std::string& bind_addr, uint16_t port);
  ~RdmaListener() override;
  RdmaListener(const RdmaListener&) = delete;
  RdmaListener& operator=(const RdmaListener&) = delete;

  uint16_t port() const override { return ntohs(::rdma_get_src_port(id_)); }
  std::unique_ptr<sdp::Incoming> next() override;

 private:
  std::shared_ptr<DeviceState> dev_;
  std::string where_;
  rdma_event_channel* ch_ = nullptr;
  rdma_cm_id* id_ = nullptr;
};

RdmaListener::RdmaListener(std::shared_ptr<DeviceState> dev, const std::string& bind_addr, uint16_t port)
    : dev_(std::move(dev)), where_(fmt::format("{}:{}", bind_addr.empty() ? "*" : bind_addr, port)) {
  try {
    ch_ = ::rdma_create_event_channel();
    if (ch_ == nullptr)
      throw sdp::DeviceError(fmt::format("cannot create an RDMA CM event channel: {} (is the rdma_ucm module loaded?)",
                                  errstr(errno)));
    set_nonblocking(ch_->fd, "RDMA CM event channel");
    if (::rdma_create_id(ch_, &id_, nullptr, RDMA_PS_TCP) != 0)  // no RDMA_PS_SDP: see create_id()
      throw sdp::DeviceError(fmt::format("rdma_create_id: {}", errstr(errno)));
    const AddrInfo ai(bind_addr, port, true);
    if (::rdma_bind_addr(id_, ai.addr()) != 0) {
      const int e = errno;
      if (e == ENODEV || e == EADDRNOTAVAIL)  // -L names no RDMA-capable address here: bad input
        throw InputError(fmt::format("cannot listen on {}: rdma_bind_addr: {} (is it the address of an IPoIB or "
                                     "RoCE interface?)",
                                     where_, errstr(e)));
      throw sdp::DeviceError(fmt::format("cannot listen on {}: rdma_bind_addr: {}", where_, errstr(e)));
    }
    if (id_->verbs != nullptr && id_->verbs != dev_->ctx)
      throw sdp::DeviceError(fmt::format("{} belongs to RDMA device '{}', not the opened '{}'", where_,
                                  device_name(id_->verbs), dev_->name));
    if (::rdma_listen(id_, kListenBacklog) != 0)
      throw sdp::DeviceError(fmt::format("cannot listen on {}: rdma_listen: {}", where_, errstr(errno)));
  } catch (...) {
    if (id_ != nullptr) ::rdma_destroy_id(id_);
    if (ch_ != nullptr) ::rdma_destroy_event_channel(ch_);
    throw;
  }
}

RdmaListener::~RdmaListener() {
  ::rdma_destroy_id(id_);  // requests not taken yet are rejected by the kernel
  ::rdma_destroy_event_channel(ch_);
}

/// A CONNECT_REQUEST taken off the listener, its cm_id already on a channel of its own (so the
/// listener's channel carries no more of its events): accept() builds the QP, answers and
/// waits for ESTABLISHED on the caller's thread.
class RdmaIncoming final : public sdp::Incoming {
 public:
  RdmaIncoming(std::shared_ptr<DeviceState> dev, std::unique_ptr<RdmaConnection> conn, std::vector<uint8_t> request,
               int peer_initiator_depth, int peer_responder_resources)
      : dev_(std::move(dev)),
        conn_(std::move(conn)),
        request_(std::move(request)),
        peer_initiator_depth_(peer_initiator_depth),
        peer_responder_resources_(peer_responder_resources) {}
  ~RdmaIncoming() override {
    if (conn_) conn_->reject("the server dropped the request");
  }
  std::string peer() const override { return conn_ ? conn_->peer() : std::string(); }
  std::unique_ptr<sdp::Connection> accept(const sdp::QpCaps& caps, const sdp::AnswerRequest& answer) override;

 private:
  std::shared_ptr<DeviceState> dev_;
  std::unique_ptr<RdmaConnection> conn_;
  std::vector<uint8_t> request_;
  int peer_initiator_depth_ = 0, peer_responder_resources_ = 0;
};

std::unique_ptr<sdp::Incoming> RdmaListener::next() {
  CmEvent req;
  for (;;) {
    req = next_cm_event(ch_, -1);
    if (req->event == RDMA_CM_EVENT_CONNECT_REQUEST) break;
    if (req->event == RDMA_CM_EVENT_DEVICE_REMOVAL)
      throw sdp::DeviceError(fmt::format("RDMA device '{}' removed while listening on {}", dev_->name, where_));
    // ADDR_CHANGE and the like: keep listening.
  }
  rdma_cm_id* child = req->id;
  const auto* pd = static_cast<const uint8_t*>(req->param.conn.private_data);
  std::vector<uint8_t> request(pd, pd + (pd != nullptr ? req->param.conn.private_data_len : 0));
  // What the active side left out of the zero-filled REQ private data (see connect): the
  // engine sees the whole 92-byte field, as the kernel's SDP port space gave it.
  if (request.size() < kIbCmReqPrivateData) request.resize(kIbCmReqPrivateData, 0);
  const int peer_initiator_depth = req->param.conn.initiator_depth;
  const int peer_responder_resources = req->param.conn.responder_resources;
  auto conn = std::make_unique<RdmaConnection>(dev_, sockaddr_str(::rdma_get_peer_addr(child)));
  req.reset();  // acknowledged before rdma_migrate_id, which waits for that

  conn->adopt_id(child);
  try {
    conn->create_channel();
    conn->migrate_id();
  } catch (const std::exception& e) {
    conn->reject(e.what());
    throw;
  }
  return std::make_unique<RdmaIncoming>(dev_, std::move(conn), std::move(request), peer_initiator_depth,
                                        peer_responder_resources);
}

std::unique_ptr<sdp::Connection> RdmaIncoming::accept(const sdp::QpCaps& caps, const sdp::AnswerRequest& answer) {
  if (!conn_) throw sdp::DeviceError("the connection request was already answered");
  std::unique_ptr<RdmaConnection> conn = std::move(conn_);
  try {
    conn->check_device(true);
    conn->create_qp(caps);
  } catch (const std::exception& e) {
    conn->reject(e.what());
    throw;
  }

  std::vector<uint8_t> reply;
  try {
    reply = answer(conn->verbs(), request_);
  } catch (const std::exception& e) {
    conn->reject(e.what());
    throw sdp::DeviceError(fmt::format("rejected connection from {}: {}", conn->peer(), e.what()));
  }
  if (reply.size() > kRepPrivateDataMax) {
    const std::string why = fmt::format("the {}-byte reply private data exceeds the {} bytes of a CM REP",
                                        reply.size(), kRepPrivateDataMax);
    conn->reject(why);
    throw sdp::DeviceError(fmt::format("rejected connection from {}: {}", conn->peer(), why));
  }

  const ibv_device_attr& a = dev_->attr;
  rdma_conn_param param{};
  param.private_data = reply.empty() ? nullptr : reply.data();
  param.private_data_len = static_cast<uint8_t>(reply.size());
  // The RDMA reads the peer may have outstanding toward us cannot exceed what it asked
  // (its initiator depth), nor ours what it offers (its responder resources).
  param.responder_resources =
      static_cast<uint8_t>(std::min({kRdAtomic, a.max_qp_rd_atom, peer_initiator_depth_}));
  param.initiator_depth = static_cast<uint8_t>(std::min({kRdAtomic, a.max_qp_init_rd_atom, peer_responder_resources_}));
  param.rnr_retry_count = kRnrRetryCount;
  if (::rdma_accept(conn->id(), &param) != 0)
    throw sdp::DeviceError(fmt::format("accepting the connection from {}: rdma_accept: {}", conn->peer(), errstr(errno)));
  expect_cm_event(conn->channel(), RDMA_CM_EVENT_ESTABLISHED, kEstablishTimeoutMs, conn->peer());
  conn->established();
  return conn;
}

/// The opened HCA.
class RdmaDevice final : public sdp::Device {
 public:
  explicit RdmaDevice(std::shared_ptr<DeviceState> state) : state_(std::move(state)) {}

  std::string name() const override { return state_->name; }
  sdp::ProcessMemory& memory() override { return *state_->memory; }
  std::unique_ptr<sdp::Connection> connect(const std::string& host, uint16_t port, const sdp::QpCaps& caps,
                                          const sdp::MakeRequest& request, std::vector<uint8_t>& reply) override;
  std::unique_ptr<sdp::Listener> listen(const std::string& bind_addr, uint16_t port) override {
    return std::make_unique<RdmaListener>(state_, bind_addr, port);
  }

 private:
  std::shared_ptr<DeviceState> state_;
};

std::unique_ptr<sdp::Connection> RdmaDevice::connect(const std::string& host, uint16_t port, const sdp::QpCaps& caps,
                                                    const sdp::MakeRequest& request, std::vector<uint8_t>& reply) {
  const std::string where = fmt::format("{}:{}", host, port);
  auto conn = std::make_unique<RdmaConnection>(state_, where);
  conn->create_channel();
  conn->create_id();
  {
    const AddrInfo ai(host, port, false);
    if (::rdma_resolve_addr(conn->id(), nullptr, ai.addr(), kResolveTimeoutMs) != 0)
      throw sdp::DeviceError(fmt::format("cannot resolve {}: rdma_resolve_addr: {}", where, errstr(errno)));
  }
  // The CM reports a resolution error itself after kResolveTimeoutMs; a second is slack.
  expect_cm_event(conn->channel(), RDMA_CM_EVENT_ADDR_RESOLVED, kResolveTimeoutMs + 1000, where);
  conn->check_device(false);
  if (::rdma_resolve_route(conn->id(), kResolveTimeoutMs) != 0)
    throw sdp::DeviceError(fmt::format("no route to {}: rdma_resolve_route: {}", where, errstr(errno)));
  expect_cm_event(conn->channel(), RDMA_CM_EVENT_ROUTE_RESOLVED, kResolveTimeoutMs + 1000, where);
  conn->create_qp(caps);

  std::vector<uint8_t> req = request(conn->verbs());  // the QP is in INIT: receives may be posted
  // The IB CM REQ's private data is a zero-filled field, so trailing zeros need not travel:
  // an SDP Hello (92 B, of which the HH's IP addresses and the reserved tail are zero, as the
  // RDMA CM header carries the addresses) fits the 56 B RDMA_PS_TCP leaves. The passive side
  // pads it back (accept).
  if (req.size() > kReqPrivateDataMax &&
      std::all_of(req.begin() + kReqPrivateDataMax, req.end(), [](uint8_t b) { return b == 0; }))
    req.resize(kReqPrivateDataMax);
  if (req.size() > kReqPrivateDataMax)
    throw sdp::DeviceError(fmt::format("connection to {}: the {}-byte request private data exceeds the {} bytes a CM REQ "
                                "carries for RDMA_PS_TCP",
                                where, req.size(), kReqPrivateDataMax));
  const ibv_device_attr& a = state_->attr;
  rdma_conn_param param{};
  param.private_data = req.empty() ? nullptr : req.data();
  param.private_data_len = static_cast<uint8_t>(req.size());
  param.responder_resources = static_cast<uint8_t>(std::min(kRdAtomic, a.max_qp_rd_atom));
  param.initiator_depth = static_cast<uint8_t>(std::min(kRdAtomic, a.max_qp_init_rd_atom));
  param.retry_count = kRetryCount;
  param.rnr_retry_count = kRnrRetryCount;
  if (::rdma_connect(conn->id(), &param) != 0)
    throw sdp::DeviceError(fmt::format("connection to {}: rdma_connect: {}", where, errstr(errno)));
  {
    // librdmacm turns the REP into ESTABLISHED (QP to RTR and RTS, RTU sent) itself.
    CmEvent ev = expect_cm_event(conn->channel(), RDMA_CM_EVENT_ESTABLISHED, kConnectTimeoutMs, where);
    const auto* pd = static_cast<const uint8_t*>(ev->param.conn.private_data);
    reply.assign(pd, pd + (pd != nullptr ? ev->param.conn.private_data_len : 0));
  }
  conn->established();
  return conn;
}

}  // namespace

// ---- opening ---------------------------------------------------------------------------------

std::unique_ptr<sdp::Device> open_rdma_device(const std::string& name, uint64_t memory_bytes) {
  errno = 0;
  int n = 0;
  ibv_device** list = ::ibv_get_device_list(&n);
  if (list == nullptr) {
    const int e = errno;
    throw sdp::DeviceError(fmt::format("no RDMA device: ibv_get_device_list: {} ({}use --device emu for the emulated HCA)",
                                errstr(e),
                                e == ENOSYS ? "this kernel has no InfiniBand/RDMA support; " : ""));
  }
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) names.emplace_back(::ibv_get_device_name(list[i]));
  ::ibv_free_device_list(list);
  if (names.empty())
    throw sdp::DeviceError("no RDMA device found (ibv_get_device_list returned 0 devices; use --device emu for the "
                    "emulated HCA)");
  auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  if (!name.empty() && std::find(names.begin(), names.end(), name) == names.end())
    throw sdp::DeviceError(fmt::format("RDMA device '{}' not found (have: {})", name, join(names)));

  auto st = std::make_shared<DeviceState>();
  st->name = name.empty() ? names.front() : name;
  // The contexts librdmacm binds cm_ids to: the PD, MR and CQs must live on the same one.
  int m = 0;
  st->cm_devices = ::rdma_get_devices(&m);
  if (st->cm_devices == nullptr)
    throw sdp::DeviceError(fmt::format("cannot open RDMA device '{}': rdma_get_devices: {}", st->name, errstr(errno)));
  std::vector<std::string> cm_names;
  for (int i = 0; i < m; ++i) {
    cm_names.push_back(device_name(st->cm_devices[i]));
    if (cm_names.back() == st->name) st->ctx = st->cm_devices[i];
  }
  if (st->ctx == nullptr)
    throw sdp::DeviceError(fmt::format("RDMA device '{}' is not available to librdmacm (rdma_get_devices has: {})", st->name,
                                join(cm_names)));
  if (const int rc = ::ibv_query_device(st->ctx, &st->attr); rc != 0)
    throw sdp::DeviceError(fmt::format("cannot query RDMA device '{}': ibv_query_device: {}", st->name,
                                errstr(rc < 0 ? errno : rc)));
  st->pd = ::ibv_alloc_pd(st->ctx);
  if (st->pd == nullptr)
    throw sdp::DeviceError(fmt::format("cannot allocate a PD on RDMA device '{}': ibv_alloc_pd: {}", st->name, errstr(errno)));

  st->memory = std::make_unique<sdp::ProcessMemory>(memory_bytes);
  st->mr = ::ibv_reg_mr(st->pd, st->memory->arena(), st->memory->capacity(),
                        IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  if (st->mr == nullptr) {
    const int e = errno;
    std::string hint;
    rlimit lim{};
    if ((e == ENOMEM || e == EPERM || e == EAGAIN) && ::getrlimit(RLIMIT_MEMLOCK, &lim) == 0 &&
        lim.rlim_cur != RLIM_INFINITY)
      hint = fmt::format(" (it pins the whole arena: the locked-memory limit, ulimit -l, is {} KiB)",
                         lim.rlim_cur / 1024);
    throw sdp::DeviceError(fmt::format("cannot register the {}-byte memory arena on RDMA device '{}': ibv_reg_mr: {}{}",
                                memory_bytes, st->name, errstr(e), hint));
  }
  return std::make_unique<RdmaDevice>(std::move(st));
}

}  // namespace hcasim::hw
