// rsockets (rsocket(7), librdmacm's rsocket.h) on the emulated HCA: a stream socket whose
// bytes travel as SENDs with immediate data on an RC QP the shim's own RDMA CM connects, and
// riowrite's as RDMA WRITEs into the peer's riomap'ed memory. The accounting of credits and
// send slots is emu/verbs_shim/rsocket_flow.h (its comment gives the protocol).
//
// Semantics as librdmacm/rsocket.c gives a program: an rsocket is a file descriptor (its RDMA
// CM event channel's), blocking unless O_NONBLOCK (rfcntl F_SETFL, SOCK_NONBLOCK) or
// MSG_DONTWAIT, with socket errnos: EAGAIN, ECONNREFUSED when nobody listens, EPIPE when
// writing after the peer closed, ECONNRESET when it vanished without ending the stream, 0 from
// rrecv after the peer's rshutdown(SHUT_WR) or rclose. rpoll and rselect take rsockets and
// ordinary file descriptors together, as librspreload's poll/select hand them over.
// A non-blocking rconnect answers EINPROGRESS and runs the emulated CM's (synchronous)
// exchange in a thread of its own. Not provided: SOCK_DGRAM rsockets (ENOTSUP: librspreload
// then gives the program a kernel socket).
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <atomic>
#include <map>
#include <thread>
#include <memory>
#include <mutex>
#include <vector>

#include "emu/verbs_shim/rsocket_flow.h"

/// socket(2) for the shim's own streams (the emulated CM's, the QPs'), straight to the kernel:
/// the shim is linked with --wrap=socket so that librspreload, preloaded after it, cannot turn
/// the shim's TCP sockets into rsockets.
extern "C" int __wrap_socket(int domain, int type, int protocol) {
  return static_cast<int>(::syscall(SYS_socket, domain, type, protocol));
}

namespace hcasim::emu::shim {
namespace {

constexpr uint32_t kDefaultQueue = 64;         // RDMA_SQSIZE / RDMA_RQSIZE
constexpr uint32_t kDefaultInline = 64;        // RDMA_INLINE, bytes
constexpr int kDefaultBuf = 1 << 19;           // SO_RCVBUF / SO_SNDBUF, bytes
constexpr uint32_t kMinMsg = 4096, kMaxMsg = 65536;  // one receive buffer, bytes
constexpr int kLingerMs = 5000;                // rclose waits this long for its sends' ACKs
constexpr uint64_t kSendBit = 1ull << 63;      // wr_id of a send work request

struct LocalMap {
  ibv_mr* mr;
  RsIoMapWire wire;
};

enum class State { Idle, Listening, Connected, Closed };

struct Rsocket {
  int fd = -1;
  rdma_event_channel* ch = nullptr;
  rdma_cm_id* id = nullptr;
  State state = State::Idle;
  bool nonblock = false;
  int so_error = 0;
  // Options (rsetsockopt).
  int rcvbuf = kDefaultBuf, sndbuf = kDefaultBuf;
  int nodelay = 0, reuseaddr = 0, keepalive = 0, keepidle = 7200, oobinline = 0, v6only = 0;
  linger lin{};
  uint32_t sqsize = kDefaultQueue, rqsize = kDefaultQueue, inline_size = kDefaultInline, iomapsize = 0;
  // Listening: CONNECT_REQUESTs taken from the channel, with their private data.
  std::deque<std::pair<rdma_cm_id*, RsHello>> requests;
  // Connected.
  ibv_comp_channel* cc = nullptr;
  ibv_cq* cq = nullptr;
  uint8_t* rbuf = nullptr;
  uint8_t* sbuf = nullptr;
  ibv_mr* rmr = nullptr;
  ibv_mr* smr = nullptr;
  uint32_t rcount = 0, rsize = 0;  // receive buffers
  uint32_t ssize = 0;              // send slot size: the peer's receive buffer size
  uint32_t max_inline = 0;
  RsCredits credits;
  RsSlotRing slots;
  struct Rx {
    uint32_t index, len, off;
  };
  std::deque<Rx> rx;  // received data, in order
  bool fin_rcvd = false, fin_sent = false, shut_rd = false, disconnected = false;
  std::vector<LocalMap> local_maps;
  std::vector<RsIoMapWire> remote_maps;
  std::chrono::steady_clock::time_point cm_checked{};
  // A non-blocking rconnect under way: its thread holds `m` until it is done, then clears
  // `connecting` and writes `wake` (an eventfd rpoll waits on). Looked at before taking `m`.
  std::atomic<bool> connecting{false};
  std::thread connector;
  int wake = -1;
  std::mutex m;
  ~Rsocket() {
    if (connector.joinable()) connector.detach();  // the process exits with it under way
  }
};

std::mutex g_table_m;
std::map<int, std::shared_ptr<Rsocket>> g_table;

std::shared_ptr<Rsocket> lookup(int fd) {
  std::lock_guard g(g_table_m);
  auto it = g_table.find(fd);
  return it == g_table.end() ? nullptr : it->second;
}

int err(int e) {
  errno = e;
  return -1;
}

void set_nonblock_fd(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

/// Takes the next CM event of the socket's channel: blocking (poll) or not. Null when none
/// (errno EAGAIN) or on failure.
rdma_cm_event* next_event(Rsocket& rs, bool block) {
  for (;;) {
    rdma_cm_event* e = nullptr;
    if (rdma_get_cm_event(rs.ch, &e) == 0) return e;
    if (errno != EAGAIN || !block) return nullptr;
    pollfd p{rs.ch->fd, POLLIN, 0};
    ::ppoll(&p, 1, nullptr, nullptr);
  }
}

/// Takes the events of a connected or listening socket that are waiting (not blocking):
/// requests are queued, DISCONNECTED marks the peer gone.
void drain_events(Rsocket& rs) {
  while (rdma_cm_event* e = next_event(rs, false)) {
    if (e->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
      RsHello h{};
      if (e->param.conn.private_data != nullptr && e->param.conn.private_data_len >= sizeof h)
        std::memcpy(&h, e->param.conn.private_data, sizeof h);
      rs.requests.emplace_back(e->id, h);
    } else if (e->event == RDMA_CM_EVENT_DISCONNECTED) {
      rs.disconnected = true;
    }
    rdma_ack_cm_event(e);
  }
}

int post_recv(Rsocket& rs, uint32_t index) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(rs.rbuf + static_cast<size_t>(index) * rs.rsize), rs.rsize, rs.rmr->lkey};
  ibv_recv_wr wr{};
  ibv_recv_wr* bad = nullptr;
  wr.wr_id = index;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  return ibv_post_recv(rs.id->qp, &wr, &bad);
}

/// Posts one message of kind `k` (a send slot and, except for RDMA WRITEs, a credit). With
/// `remote` an RDMA WRITE of `len` bytes to it instead of a SEND.
int post_msg(Rsocket& rs, RsKind k, const void* data, uint32_t len, const RsIoMapWire* remote = nullptr,
             uint64_t remote_addr = 0) {
  const uint32_t slot = rs.slots.take();
  uint8_t* p = rs.sbuf + static_cast<size_t>(slot) * rs.ssize;
  if (len > 0) std::memcpy(p, data, len);
  ibv_sge sge{reinterpret_cast<uintptr_t>(p), len, rs.smr->lkey};
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.wr_id = kSendBit | slot;
  wr.sg_list = len > 0 ? &sge : nullptr;
  wr.num_sge = len > 0 ? 1 : 0;
  wr.send_flags = IBV_SEND_SIGNALED | (len > 0 && len <= rs.max_inline ? IBV_SEND_INLINE : 0);
  if (remote != nullptr) {
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.wr.rdma.remote_addr = remote_addr;
    wr.wr.rdma.rkey = remote->rkey;
  } else {
    wr.opcode = IBV_WR_SEND_WITH_IMM;
    wr.imm_data = htonl(rs_imm(k, rs.credits.spend()));
  }
  const int r = ibv_post_send(rs.id->qp, &wr, &bad);
  if (r != 0) {
    rs.slots.complete();
    return err(r);
  }
  return 0;
}

void poll_cq(Rsocket& rs, bool& any);

/// Polls the CQ and the CM events; returns credits the program freed when due. The CM
/// channel (a read(2) each time) is looked at when `cm` says so, or when the CQ had nothing
/// and it was not looked at for a millisecond: a program spinning on a non-blocking rrecv
/// would otherwise spend its time in the kernel.
void progress(Rsocket& rs, bool cm = false) {
  if (rs.state != State::Connected) {
    if (rs.state == State::Listening) drain_events(rs);
    return;
  }
  bool any = false;
  poll_cq(rs, any);
  const auto now = std::chrono::steady_clock::now();
  if (cm || (!any && now - rs.cm_checked > std::chrono::milliseconds(1))) {
    rs.cm_checked = now;
    const bool was = rs.disconnected;
    drain_events(rs);
    // The peer's DREQ follows its data on the wire, so every completion it sent before it is
    // in the CQ by the time DISCONNECTED is queued, but possibly after the poll above: the CQ
    // is polled again, or rrecv would report ECONNRESET before the peer's last data and Fin
    // (rsocket.c learns the end from the CQ only: rs_poll_cq's RS_CTRL_DISCONNECT and the
    // flushed receives that follow the data, never from the CM event).
    if (!was && rs.disconnected) poll_cq(rs, any);
  }
  if (!rs.disconnected && rs.credits.update_due() && rs.slots.available()) post_msg(rs, RsKind::Credit, nullptr, 0);
}

/// Takes the completions of the socket's CQ: data and Fin for rrecv, credits, send slots
/// freed; one in error marks the connection broken. `any` is set when there was one.
void poll_cq(Rsocket& rs, bool& any) {
  ibv_wc wc[16];
  int n;
  while ((n = ibv_poll_cq(rs.cq, 16, wc)) > 0) {
    any = true;
    for (int i = 0; i < n; ++i) {
      const ibv_wc& w = wc[i];
      if (w.wr_id & kSendBit) {
        rs.slots.complete();
        if (w.status != IBV_WC_SUCCESS) rs.disconnected = true;
        continue;
      }
      if (w.status != IBV_WC_SUCCESS) {
        rs.disconnected = true;
        continue;
      }
      const auto index = static_cast<uint32_t>(w.wr_id);
      const uint32_t imm = ntohl(w.imm_data);
      rs.credits.received(imm);
      switch (rs_kind(imm)) {
        case RsKind::Data:
          if (w.byte_len > 0) {
            rs.rx.push_back({index, w.byte_len, 0});
            continue;
          }
          break;
        case RsKind::Fin: rs.fin_rcvd = true; break;
        case RsKind::IoMap:
        case RsKind::IoUnmap: {
          RsIoMapWire m{};
          if (w.byte_len >= sizeof m) {
            std::memcpy(&m, rs.rbuf + static_cast<size_t>(index) * rs.rsize, sizeof m);
            auto& v = rs.remote_maps;
            v.erase(std::remove_if(v.begin(), v.end(), [&](const RsIoMapWire& x) { return x.offset == m.offset; }),
                    v.end());
            if (rs_kind(imm) == RsKind::IoMap) v.push_back(m);
          }
          break;
        }
        case RsKind::Credit:
        default: break;
      }
      if (post_recv(rs, index) == 0) rs.credits.reposted();
    }
  }
  if (n < 0) rs.disconnected = true;
}

/// What rpoll would report for the socket now (after progress()).
short readiness(Rsocket& rs) {
  switch (rs.state) {
    case State::Idle: return static_cast<short>(POLLOUT | POLLHUP | (rs.so_error != 0 ? POLLERR : 0));
    case State::Closed: return POLLNVAL;
    case State::Listening: return rs.requests.empty() ? 0 : POLLIN;
    case State::Connected: break;
  }
  short r = 0;
  if (!rs.rx.empty() || rs.fin_rcvd || rs.shut_rd || rs.disconnected) r |= POLLIN;
  if ((rs.credits.can_send_data() && rs.slots.available()) || rs.disconnected || rs.fin_sent) r |= POLLOUT;
  if (rs.disconnected) r |= POLLHUP;
  if (rs.so_error != 0) r |= POLLERR;
  return r;
}

/// Arms the CQ's event and returns the fds that wake the socket (its CM channel, its
/// completion channel).
void wake_fds(Rsocket& rs, std::vector<pollfd>& out) {
  out.push_back({rs.ch->fd, POLLIN, 0});
  if (rs.state == State::Connected) {
    ibv_req_notify_cq(rs.cq, 0);
    out.push_back({rs.cc->fd, POLLIN, 0});
  }
}

/// Takes the completion events that woke a socket (their fds are non-blocking).
void consume_cq_events(Rsocket& rs) {
  if (rs.state != State::Connected) return;
  ibv_cq* cq = nullptr;
  void* ctx = nullptr;
  while (ibv_get_cq_event(rs.cc, &cq, &ctx) == 0) ibv_ack_cq_events(cq, 1);
}

/// Blocks until the socket has one of `events` (or an error); called without rs.m held.
void wait_for(Rsocket& rs, short events) {
  pollfd p{rs.fd, events, 0};
  rpoll(&p, 1, -1);
}

void free_data_path(Rsocket& rs) {
  for (LocalMap& l : rs.local_maps) ibv_dereg_mr(l.mr);
  rs.local_maps.clear();
  if (rs.id != nullptr && rs.id->qp != nullptr) rdma_destroy_qp(rs.id);
  if (rs.rmr != nullptr) ibv_dereg_mr(rs.rmr);
  if (rs.smr != nullptr) ibv_dereg_mr(rs.smr);
  rs.rmr = rs.smr = nullptr;
  std::free(rs.rbuf);
  std::free(rs.sbuf);
  rs.rbuf = rs.sbuf = nullptr;
  if (rs.cq != nullptr) {
    consume_cq_events(rs);
    ibv_destroy_cq(rs.cq);
  }
  if (rs.cc != nullptr) ibv_destroy_comp_channel(rs.cc);
  rs.cq = nullptr;
  rs.cc = nullptr;
}

/// The QP, its CQ and receive buffers, posted; the hello to send. -1 with errno on failure.
int create_data_path(Rsocket& rs, RsHello& hello) {
  rdma_cm_id* id = rs.id;
  rs.rcount = std::clamp<uint32_t>(rs.rqsize, 4, 1024);
  rs.rsize = std::clamp<uint32_t>(static_cast<uint32_t>(rs.rcvbuf) / rs.rcount, kMinMsg, kMaxMsg);
  const uint32_t scount = std::clamp<uint32_t>(rs.sqsize, 4, 1024);
  rs.cc = ibv_create_comp_channel(id->verbs);
  if (rs.cc == nullptr) return -1;
  set_nonblock_fd(rs.cc->fd);
  rs.cq = ibv_create_cq(id->verbs, static_cast<int>(rs.rcount + scount), nullptr, rs.cc, 0);
  if (rs.cq == nullptr) return -1;
  ibv_qp_init_attr a{};
  a.send_cq = rs.cq;
  a.recv_cq = rs.cq;
  a.qp_type = IBV_QPT_RC;
  a.cap.max_send_wr = scount;
  a.cap.max_recv_wr = rs.rcount;
  a.cap.max_send_sge = 1;
  a.cap.max_recv_sge = 1;
  a.cap.max_inline_data = rs.inline_size;
  if (rdma_create_qp(id, id->pd, &a) != 0) {
    a.cap.max_inline_data = 0;
    if (rdma_create_qp(id, id->pd, &a) != 0) return -1;
  }
  rs.max_inline = std::min(a.cap.max_inline_data, rs.inline_size);
  rs.slots = RsSlotRing(scount);
  const size_t rbytes = static_cast<size_t>(rs.rcount) * rs.rsize;
  if (posix_memalign(reinterpret_cast<void**>(&rs.rbuf), 4096, rbytes) != 0) return err(ENOMEM);
  rs.rmr = ibv_reg_mr(id->pd, rs.rbuf, rbytes, int{IBV_ACCESS_LOCAL_WRITE});
  if (rs.rmr == nullptr) return -1;
  for (uint32_t i = 0; i < rs.rcount; ++i)
    if (post_recv(rs, i) != 0) return err(ENOMEM);
  hello = RsHello{kRsMagic, rs.rcount, rs.rsize};
  return 0;
}

/// The peer's hello known: send slots of its buffer size, its buffers as credits.
int finish_connect(Rsocket& rs, const RsHello& peer) {
  if (peer.magic != kRsMagic || peer.buffers == 0 || peer.size == 0) return err(ECONNREFUSED);
  rs.ssize = peer.size;
  const size_t sbytes = static_cast<size_t>(rs.slots.count()) * rs.ssize;
  if (posix_memalign(reinterpret_cast<void**>(&rs.sbuf), 4096, sbytes) != 0) return err(ENOMEM);
  rs.smr = ibv_reg_mr(rs.id->pd, rs.sbuf, sbytes, int{IBV_ACCESS_LOCAL_WRITE});
  if (rs.smr == nullptr) return -1;
  rs.credits = RsCredits(peer.buffers, rs.rcount);
  rs.state = State::Connected;
  return 0;
}

std::shared_ptr<Rsocket> new_socket(rdma_event_channel* ch, rdma_cm_id* id) {
  auto rs = std::make_shared<Rsocket>();
  rs->ch = ch;
  rs->id = id;
  rs->fd = ch->fd;
  set_nonblock_fd(ch->fd);
  std::lock_guard g(g_table_m);
  g_table[rs->fd] = rs;
  return rs;
}

/// Sends the Fin once (waiting for a credit unless `wait` is false). Called with rs.m held
/// through `lk`.
void send_fin(Rsocket& rs, std::unique_lock<std::mutex>& lk, bool wait) {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(kLingerMs);
  while (!rs.fin_sent && !rs.disconnected) {
    progress(rs);
    if (rs.credits.can_send_control() && rs.slots.available()) {
      if (post_msg(rs, RsKind::Fin, nullptr, 0) == 0) rs.fin_sent = true;
      return;
    }
    if (!wait || std::chrono::steady_clock::now() >= give_up) return;
    lk.unlock();
    pollfd p{rs.fd, POLLOUT, 0};
    rpoll(&p, 1, 100);
    lk.lock();
  }
}

socklen_t copy_addr(const sockaddr* a, sockaddr* out, socklen_t* len) {
  const socklen_t n = a->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  if (out != nullptr && len != nullptr) {
    std::memcpy(out, a, std::min(n, *len));
    *len = n;
  }
  return n;
}

/// Waits out a non-blocking rconnect under way on `rs`: 0, or -1 with errno EAGAIN when the
/// call is non-blocking (`nb`), as a TCP socket's send or recv before its connect completes.
int await_connect(Rsocket& rs, bool nb) {
  while (rs.connecting.load()) {
    if (nb) return err(EAGAIN);
    wait_for(rs, POLLOUT);
  }
  return 0;
}

ssize_t do_send(int socket, const iovec* iov, int iovcnt, int flags) {
  auto rsp = lookup(socket);
  if (!rsp) return err(EBADF);
  Rsocket& rs = *rsp;
  const bool nb = rs.nonblock || (flags & MSG_DONTWAIT);
  if (await_connect(rs, nb) != 0) return -1;
  std::unique_lock lk(rs.m);
  if (rs.state != State::Connected) return err(rs.state == State::Idle ? ENOTCONN : EPIPE);
  size_t total = 0;
  for (int i = 0; i < iovcnt; ++i) total += iov[i].iov_len;
  size_t sent = 0;
  int vi = 0;
  size_t voff = 0;
  std::vector<uint8_t> gather;
  while (sent < total) {
    progress(rs);
    if (rs.fin_sent || rs.disconnected) {
      if (sent > 0) break;
      return err(EPIPE);
    }
    if (rs.credits.can_send_data() && rs.slots.available()) {
      const auto n = static_cast<uint32_t>(std::min<size_t>(total - sent, rs.ssize));
      const void* src;
      if (iov[vi].iov_len - voff >= n) {
        src = static_cast<const uint8_t*>(iov[vi].iov_base) + voff;
        voff += n;
      } else {
        gather.resize(n);
        size_t g = 0;
        while (g < n) {
          const size_t c = std::min<size_t>(n - g, iov[vi].iov_len - voff);
          std::memcpy(gather.data() + g, static_cast<const uint8_t*>(iov[vi].iov_base) + voff, c);
          g += c;
          voff += c;
          if (voff == iov[vi].iov_len) ++vi, voff = 0;
        }
        src = gather.data();
      }
      while (vi < iovcnt && voff == iov[vi].iov_len) ++vi, voff = 0;
      if (post_msg(rs, RsKind::Data, src, n) != 0) {
        if (sent > 0) break;
        return -1;
      }
      sent += n;
      continue;
    }
    if (nb) {
      if (sent > 0) break;
      return err(EAGAIN);
    }
    lk.unlock();
    wait_for(rs, POLLOUT);
    lk.lock();
    if (rs.state != State::Connected) return sent > 0 ? static_cast<ssize_t>(sent) : err(EBADF);  // rclosed meanwhile
  }
  return static_cast<ssize_t>(sent);
}

ssize_t do_recv(int socket, const iovec* iov, int iovcnt, int flags) {
  auto rsp = lookup(socket);
  if (!rsp) return err(EBADF);
  Rsocket& rs = *rsp;
  const bool nb = rs.nonblock || (flags & MSG_DONTWAIT);
  if (await_connect(rs, nb) != 0) return -1;
  std::unique_lock lk(rs.m);
  if (rs.state != State::Connected) return err(ENOTCONN);
  size_t total = 0;
  for (int i = 0; i < iovcnt; ++i) total += iov[i].iov_len;
  const bool peek = flags & MSG_PEEK;
  size_t got = 0;
  int vi = 0;
  size_t voff = 0;
  for (;;) {
    progress(rs);
    size_t peek_skip = 0;
    for (auto it = rs.rx.begin(); it != rs.rx.end() && got < total;) {
      Rsocket::Rx& r = *it;
      const uint8_t* src = rs.rbuf + static_cast<size_t>(r.index) * rs.rsize + r.off + peek_skip;
      size_t left = r.len - r.off - peek_skip;
      while (left > 0 && got < total) {
        while (vi < iovcnt && voff == iov[vi].iov_len) ++vi, voff = 0;
        const size_t c = std::min(left, iov[vi].iov_len - voff);
        std::memcpy(static_cast<uint8_t*>(iov[vi].iov_base) + voff, src, c);
        src += c;
        left -= c;
        voff += c;
        got += c;
        if (peek) peek_skip += c;
        else r.off += static_cast<uint32_t>(c);
      }
      if (peek) {
        peek_skip = 0;
        ++it;
        continue;
      }
      if (r.off == r.len) {
        const uint32_t index = r.index;
        it = rs.rx.erase(it);
        if (post_recv(rs, index) == 0) rs.credits.reposted();
      }
    }
    if (!peek && rs.credits.update_due() && rs.slots.available() && !rs.disconnected)
      post_msg(rs, RsKind::Credit, nullptr, 0);
    if (got == total || (got > 0 && (!(flags & MSG_WAITALL) || peek))) return static_cast<ssize_t>(got);
    if (rs.fin_rcvd || rs.shut_rd) return static_cast<ssize_t>(got);
    if (rs.disconnected) {
      if (got > 0) return static_cast<ssize_t>(got);
      return err(ECONNRESET);
    }
    if (nb) {
      if (got > 0) return static_cast<ssize_t>(got);
      return err(EAGAIN);
    }
    lk.unlock();
    wait_for(rs, POLLIN);
    lk.lock();
    if (rs.state != State::Connected) return got > 0 ? static_cast<ssize_t>(got) : err(EBADF);  // rclosed meanwhile
  }
}

}  // namespace
}  // namespace hcasim::emu::shim

using hcasim::emu::shim::err;
using hcasim::emu::shim::lookup;
using hcasim::emu::shim::Rsocket;
using hcasim::emu::shim::RsHello;
using hcasim::emu::shim::RsIoMapWire;
using hcasim::emu::shim::State;

/// rsocket(3) (rsocket(7)): a stream rsocket, AF_INET or AF_INET6, SOCK_STREAM (SOCK_NONBLOCK
/// and SOCK_CLOEXEC taken), protocol 0 or IPPROTO_TCP; returns its descriptor. -1 with errno
/// EAFNOSUPPORT, ENOTSUP (SOCK_DGRAM, as no datagram rsockets are emulated), EPROTONOSUPPORT,
/// or the RDMA CM's (EMFILE, ENODEV).
int rsocket(int domain, int type, int protocol) {
  if (domain != AF_INET && domain != AF_INET6) return err(EAFNOSUPPORT);
  const int base = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (base != SOCK_STREAM) return err(ENOTSUP);
  if (protocol != 0 && protocol != IPPROTO_TCP) return err(EPROTONOSUPPORT);
  rdma_event_channel* ch = rdma_create_event_channel();
  if (ch == nullptr) return -1;
  rdma_cm_id* id = nullptr;
  if (rdma_create_id(ch, &id, nullptr, RDMA_PS_TCP) != 0) {
    const int e = errno;
    rdma_destroy_event_channel(ch);
    return err(e);
  }
  auto rs = hcasim::emu::shim::new_socket(ch, id);
  rs->nonblock = (type & SOCK_NONBLOCK) != 0;
  return rs->fd;
}

/// rbind(3): the local address (port 0: any). -1 with errno EBADF, EINVAL (bound already), or
/// bind(2)'s (EADDRINUSE, EADDRNOTAVAIL).
int rbind(int socket, const sockaddr* addr, socklen_t /*addrlen*/) {
  auto rs = lookup(socket);
  if (!rs) return err(EBADF);
  std::lock_guard g(rs->m);
  if (rs->state != State::Idle) return err(EINVAL);
  return rdma_bind_addr(rs->id, const_cast<sockaddr*>(addr));
}

/// rlisten(3): listens on the bound address (unbound: a free port of any address). -1 with
/// errno EBADF, EINVAL (connected), or the RDMA CM's.
int rlisten(int socket, int backlog) {
  auto rs = lookup(socket);
  if (!rs) return err(EBADF);
  std::lock_guard g(rs->m);
  if (rs->state == State::Listening) return 0;
  if (rs->state != State::Idle) return err(EINVAL);
  if (rs->id->verbs == nullptr) {
    sockaddr_in any{};
    any.sin_family = AF_INET;
    if (rdma_bind_addr(rs->id, reinterpret_cast<sockaddr*>(&any)) != 0) return -1;
  }
  if (rdma_listen(rs->id, backlog) != 0) return -1;
  rs->state = State::Listening;
  return 0;
}

/// raccept(3): the next connection of a listening rsocket, connected (its QP in RTS, its
/// receive buffers posted), its peer's address in addr. -1 with errno EBADF, EINVAL (not
/// listening), EAGAIN (non-blocking, none waiting), ECONNABORTED (the connection failed while
/// being accepted), or the verbs' (ENOMEM).
int raccept(int socket, sockaddr* addr, socklen_t* addrlen) {
  namespace shim = hcasim::emu::shim;
  auto lrs = lookup(socket);
  if (!lrs) return err(EBADF);
  std::unique_lock lk(lrs->m);
  if (lrs->state != State::Listening) return err(EINVAL);
  for (;;) {
    shim::progress(*lrs);
    if (!lrs->requests.empty()) break;
    if (lrs->nonblock) return err(EAGAIN);
    lk.unlock();
    shim::wait_for(*lrs, POLLIN);
    lk.lock();
    if (lrs->state != State::Listening) return err(EBADF);  // rclosed meanwhile
  }
  auto [id, peer] = lrs->requests.front();
  lrs->requests.pop_front();
  const int o_rcvbuf = lrs->rcvbuf, o_sndbuf = lrs->sndbuf, o_nodelay = lrs->nodelay, o_keepalive = lrs->keepalive,
            o_keepidle = lrs->keepidle;
  const uint32_t o_sq = lrs->sqsize, o_rq = lrs->rqsize, o_inline = lrs->inline_size, o_iomap = lrs->iomapsize;
  const linger o_lin = lrs->lin;
  lk.unlock();
  rdma_event_channel* ch = rdma_create_event_channel();
  if (ch == nullptr) {
    rdma_reject(id, nullptr, 0);
    rdma_destroy_id(id);
    return err(ENOMEM);
  }
  rdma_migrate_id(id, ch);
  auto rs = shim::new_socket(ch, id);
  std::lock_guard g(rs->m);
  rs->rcvbuf = o_rcvbuf;
  rs->sndbuf = o_sndbuf;
  rs->nodelay = o_nodelay;
  rs->keepalive = o_keepalive;
  rs->keepidle = o_keepidle;
  rs->sqsize = o_sq;
  rs->rqsize = o_rq;
  rs->inline_size = o_inline;
  rs->iomapsize = o_iomap;
  rs->lin = o_lin;
  RsHello mine{};
  int e = 0;
  if (shim::create_data_path(*rs, mine) != 0) e = errno;
  if (e == 0) {
    rdma_conn_param p{};
    p.private_data = &mine;
    p.private_data_len = sizeof mine;
    p.rnr_retry_count = 7;
    p.retry_count = 7;
    if (rdma_accept(id, &p) != 0) e = ECONNABORTED;
  } else {
    rdma_reject(id, nullptr, 0);
  }
  if (e == 0) {
    rdma_cm_event* ev = shim::next_event(*rs, true);
    if (ev == nullptr || ev->event != RDMA_CM_EVENT_ESTABLISHED) e = ECONNABORTED;
    if (ev != nullptr) rdma_ack_cm_event(ev);
  }
  if (e == 0 && shim::finish_connect(*rs, peer) != 0) e = errno;
  if (e != 0) {
    shim::free_data_path(*rs);
    {
      std::lock_guard tg(shim::g_table_m);
      shim::g_table.erase(rs->fd);
    }
    rdma_destroy_id(id);
    rdma_destroy_event_channel(ch);
    return err(e);
  }
  shim::copy_addr(&id->route.addr.dst_addr, addr, addrlen);
  return rs->fd;
}

namespace hcasim::emu::shim {
namespace {

/// The RDMA CM's exchange to addr, with rs.m held: 0 once connected, or -1 with errno (the
/// socket can connect again then, as a TCP socket after a failed connect).
int connect_now(Rsocket& rs, const sockaddr_storage& addr) {
  auto wait_event = [&](rdma_cm_event_type want, RsHello* hello) -> int {
    rdma_cm_event* ev = next_event(rs, true);
    if (ev == nullptr) return -1;
    int e = 0;
    if (ev->event == want) {
      if (hello != nullptr && ev->param.conn.private_data != nullptr &&
          ev->param.conn.private_data_len >= sizeof *hello)
        std::memcpy(hello, ev->param.conn.private_data, sizeof *hello);
    } else if (ev->event == RDMA_CM_EVENT_REJECTED || ev->event == RDMA_CM_EVENT_CONNECT_ERROR) {
      e = ECONNREFUSED;
    } else if (ev->event == RDMA_CM_EVENT_UNREACHABLE) {
      e = ev->status < 0 ? -ev->status : (ev->status != 0 ? ev->status : EHOSTUNREACH);
    } else {
      e = ev->status < 0 ? -ev->status : ECONNREFUSED;
    }
    rdma_ack_cm_event(ev);
    return e == 0 ? 0 : err(e);
  };
  RsHello mine{}, peer{};
  sockaddr_storage dst = addr;
  int r = rdma_resolve_addr(rs.id, nullptr, reinterpret_cast<sockaddr*>(&dst), 2000);
  if (r == 0) r = wait_event(RDMA_CM_EVENT_ADDR_RESOLVED, nullptr);
  if (r == 0) r = rdma_resolve_route(rs.id, 2000);
  if (r == 0) r = wait_event(RDMA_CM_EVENT_ROUTE_RESOLVED, nullptr);
  if (r == 0) r = create_data_path(rs, mine);
  if (r == 0) {
    rdma_conn_param p{};
    p.private_data = &mine;
    p.private_data_len = sizeof mine;
    p.rnr_retry_count = 7;
    p.retry_count = 7;
    r = rdma_connect(rs.id, &p);
  }
  if (r == 0) r = wait_event(RDMA_CM_EVENT_ESTABLISHED, &peer);
  if (r == 0) r = finish_connect(rs, peer);
  if (r != 0) {
    const int e = errno;
    free_data_path(rs);
    // The id cannot connect again: a fresh one on the same channel (the same descriptor).
    rdma_destroy_id(rs.id);
    rs.id = nullptr;
    if (rdma_create_id(rs.ch, &rs.id, nullptr, RDMA_PS_TCP) != 0) rs.state = State::Closed;
    return err(e);
  }
  return 0;
}

}  // namespace
}  // namespace hcasim::emu::shim

/// rconnect(3): connects to a listening rsocket at addr. Blocking, it returns once connected;
/// non-blocking, -1 with errno EINPROGRESS and the exchange goes on in a thread of its own:
/// rpoll reports POLLOUT when it is over, and SO_ERROR (rgetsockopt) says how it ended, as for
/// a TCP socket. -1 with errno EBADF, EISCONN, EALREADY (a non-blocking rconnect under way),
/// ECONNREFUSED (nobody listens, or the listener refused), ETIMEDOUT (no answer),
/// EHOSTUNREACH, or the verbs'.
int rconnect(int socket, const sockaddr* addr, socklen_t addrlen) {
  namespace shim = hcasim::emu::shim;
  auto rsp = lookup(socket);
  if (!rsp) return err(EBADF);
  Rsocket& rs = *rsp;
  if (rs.connecting.load()) return err(EALREADY);
  std::lock_guard g(rs.m);
  if (rs.state == State::Connected) return err(EISCONN);
  if (rs.state != State::Idle) return err(EINVAL);
  if (addr == nullptr || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6)) return err(EAFNOSUPPORT);
  sockaddr_storage dst{};
  std::memcpy(&dst, addr, std::min<size_t>(addrlen, sizeof dst));
  if (!rs.nonblock) return shim::connect_now(rs, dst);
  if (rs.connector.joinable()) rs.connector.join();  // an earlier one, over
  if (rs.wake < 0) rs.wake = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (rs.wake < 0) return -1;
  rs.connecting = true;
  rs.connector = std::thread([rsp, dst] {
    {
      std::lock_guard tg(rsp->m);
      if (shim::connect_now(*rsp, dst) != 0) rsp->so_error = errno;
    }
    rsp->connecting = false;
    const uint64_t one = 1;
    [[maybe_unused]] const ssize_t w = ::write(rsp->wake, &one, sizeof one);
  });
  return err(EINPROGRESS);
}

/// rshutdown(3): SHUT_WR (and SHUT_RDWR) ends the stream to the peer after the data sent
/// (its rrecv returns 0 then); SHUT_RD makes rrecv return 0. -1 with errno EBADF, EINVAL (bad
/// `how`), ENOTCONN.
int rshutdown(int socket, int how) {
  auto rsp = lookup(socket);
  if (!rsp) return err(EBADF);
  if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR) return err(EINVAL);
  Rsocket& rs = *rsp;
  std::unique_lock lk(rs.m);
  if (rs.state != State::Connected) return err(ENOTCONN);
  if (how != SHUT_WR) rs.shut_rd = true;
  if (how != SHUT_RD) hcasim::emu::shim::send_fin(rs, lk, true);
  return 0;
}

/// rclose(3): ends the stream (as rshutdown SHUT_WR), waits up to 5 s for the peer to
/// acknowledge what was sent (SO_LINGER's time when set), disconnects and frees the socket.
/// 0, or -1 with errno EBADF.
int rclose(int socket) {
  namespace shim = hcasim::emu::shim;
  std::shared_ptr<Rsocket> rsp;
  {
    std::lock_guard g(shim::g_table_m);
    auto it = shim::g_table.find(socket);
    if (it == shim::g_table.end()) return err(EBADF);
    rsp = it->second;
    shim::g_table.erase(it);
  }
  Rsocket& rs = *rsp;
  if (rs.connector.joinable()) rs.connector.join();  // a non-blocking rconnect ends first
  std::unique_lock lk(rs.m);
  if (rs.wake >= 0) ::close(rs.wake);
  rs.wake = -1;
  if (rs.state == State::Connected) {
    shim::send_fin(rs, lk, true);
    const int ms = rs.lin.l_onoff ? rs.lin.l_linger * 1000 : shim::kLingerMs;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (rs.slots.in_use() > 0 && !rs.disconnected && std::chrono::steady_clock::now() < give_up) {
      shim::progress(rs);
      if (rs.slots.in_use() == 0) break;
      std::vector<pollfd> p;
      shim::wake_fds(rs, p);
      shim::progress(rs);
      if (rs.slots.in_use() == 0) break;
      ::ppoll(p.data(), p.size(), nullptr, nullptr);
      shim::consume_cq_events(rs);
    }
    rdma_disconnect(rs.id);
  }
  for (auto& [id, h] : rs.requests) {
    rdma_reject(id, nullptr, 0);
    rdma_destroy_id(id);
  }
  rs.requests.clear();
  shim::free_data_path(rs);
  if (rs.id != nullptr) rdma_destroy_id(rs.id);
  rs.id = nullptr;
  rdma_destroy_event_channel(rs.ch);
  rs.state = State::Closed;
  return 0;
}

/// rsend(3): queues up to len bytes (a SEND per receive buffer of the peer); blocking, it
/// returns once all are queued. The bytes sent, or -1 with errno EBADF, ENOTCONN, EAGAIN
/// (non-blocking, no credit or send slot free), EPIPE (written after rshutdown or the peer's
/// close).
ssize_t rsend(int socket, const void* buf, size_t len, int flags) {
  iovec v{const_cast<void*>(buf), len};
  return hcasim::emu::shim::do_send(socket, &v, 1, flags);
}

/// rsendto(3): rsend; the address is ignored (a connected stream).
ssize_t rsendto(int socket, const void* buf, size_t len, int flags, const sockaddr*, socklen_t) {
  return rsend(socket, buf, len, flags);
}

/// rsendmsg(3): rsend of msg's iovecs (no control data).
ssize_t rsendmsg(int socket, const msghdr* msg, int flags) {
  return hcasim::emu::shim::do_send(socket, msg->msg_iov, static_cast<int>(msg->msg_iovlen), flags);
}

/// rwrite(3): rsend without flags.
ssize_t rwrite(int socket, const void* buf, size_t count) { return rsend(socket, buf, count, 0); }

/// rwritev(3): rsendmsg of the iovecs.
ssize_t rwritev(int socket, const iovec* iov, int iovcnt) { return hcasim::emu::shim::do_send(socket, iov, iovcnt, 0); }

/// rrecv(3): up to len bytes of the stream (MSG_WAITALL: len unless the stream ends;
/// MSG_PEEK: left in place; MSG_DONTWAIT). The bytes read, 0 at the end of the stream (the
/// peer's rshutdown SHUT_WR or rclose, or this side's SHUT_RD), or -1 with errno EBADF,
/// ENOTCONN, EAGAIN, ECONNRESET (the connection broke without its end).
ssize_t rrecv(int socket, void* buf, size_t len, int flags) {
  iovec v{buf, len};
  return hcasim::emu::shim::do_recv(socket, &v, 1, flags);
}

/// rrecvfrom(3): rrecv, with the peer's address.
ssize_t rrecvfrom(int socket, void* buf, size_t len, int flags, sockaddr* src_addr, socklen_t* addrlen) {
  const ssize_t r = rrecv(socket, buf, len, flags);
  if (r >= 0 && src_addr != nullptr) rgetpeername(socket, src_addr, addrlen);
  return r;
}

/// rrecvmsg(3): rrecv into msg's iovecs (no control data; msg_flags 0).
ssize_t rrecvmsg(int socket, msghdr* msg, int flags) {
  msg->msg_flags = 0;
  msg->msg_controllen = 0;
  return hcasim::emu::shim::do_recv(socket, msg->msg_iov, static_cast<int>(msg->msg_iovlen), flags);
}

/// rread(3): rrecv without flags.
ssize_t rread(int socket, void* buf, size_t count) { return rrecv(socket, buf, count, 0); }

/// rreadv(3): rrecv into the iovecs.
ssize_t rreadv(int socket, const iovec* iov, int iovcnt) { return hcasim::emu::shim::do_recv(socket, iov, iovcnt, 0); }

/// rpoll(3): poll(2) over rsockets and ordinary descriptors together. An rsocket is POLLIN
/// with bytes to read, at the end of the stream, or (listening) with a connection waiting;
/// POLLOUT with a credit and a send slot free; POLLHUP once disconnected. Blocks up to
/// `timeout` ms (-1: for ever) on the rsockets' event and completion channels and the other
/// descriptors. The count of entries with revents, or -1 with errno (EINTR, EINVAL).
int rpoll(pollfd* fds, nfds_t nfds, int timeout) {
  namespace shim = hcasim::emu::shim;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout < 0 ? 0 : timeout);
  std::vector<std::shared_ptr<Rsocket>> socks(nfds);
  for (nfds_t i = 0; i < nfds; ++i) socks[i] = fds[i].fd >= 0 ? lookup(fds[i].fd) : nullptr;
  for (;;) {
    int ready = 0;
    std::vector<pollfd> real;
    std::vector<std::pair<nfds_t, size_t>> real_of;  // (fds index, first real entry) of each
    for (nfds_t i = 0; i < nfds; ++i) {
      fds[i].revents = 0;
      if (!socks[i]) continue;
      Rsocket& rs = *socks[i];
      if (rs.connecting.load()) {  // its thread holds rs.m: wait for its eventfd
        real_of.emplace_back(i, real.size());
        real.push_back({rs.wake, POLLIN, 0});
        continue;
      }
      std::lock_guard g(rs.m);
      shim::progress(rs);
      short r = shim::readiness(rs) & (fds[i].events | POLLERR | POLLHUP | POLLNVAL);
      if (r == 0) {
        const size_t first = real.size();
        shim::wake_fds(rs, real);
        shim::progress(rs);  // what came between the check and the arming
        r = shim::readiness(rs) & (fds[i].events | POLLERR | POLLHUP | POLLNVAL);
        real_of.emplace_back(i, first);
      }
      fds[i].revents = r;
      if (r != 0) ++ready;
    }
    const size_t first_plain = real.size();
    for (nfds_t i = 0; i < nfds; ++i)
      if (!socks[i]) real.push_back({fds[i].fd, fds[i].events, 0});
    timespec ts{};
    timespec* tsp = &ts;
    if (ready == 0 && timeout != 0) {
      if (timeout < 0) {
        tsp = nullptr;
      } else {
        const auto left = std::max<int64_t>(
            0, std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - std::chrono::steady_clock::now()).count());
        ts.tv_sec = static_cast<time_t>(left / 1000000000);
        ts.tv_nsec = static_cast<long>(left % 1000000000);
      }
    }
    const int n = ::ppoll(real.data(), real.size(), tsp, nullptr);
    if (n < 0) return -1;
    size_t k = first_plain;
    for (nfds_t i = 0; i < nfds; ++i) {
      if (socks[i]) continue;
      fds[i].revents = real[k++].revents;
      if (fds[i].revents != 0) ++ready;
    }
    for (auto [i, first] : real_of) {
      Rsocket& rs = *socks[i];
      if (rs.connecting.load()) continue;
      if (rs.wake >= 0) {
        uint64_t v = 0;
        [[maybe_unused]] const ssize_t rd = ::read(rs.wake, &v, sizeof v);
      }
      std::lock_guard g(rs.m);
      shim::consume_cq_events(rs);
      if (fds[i].revents == 0) {
        shim::progress(rs, true);
        fds[i].revents = shim::readiness(rs) & (fds[i].events | POLLERR | POLLHUP | POLLNVAL);
        if (fds[i].revents != 0) ++ready;
      }
    }
    if (ready > 0 || timeout == 0) return ready;
    if (timeout > 0 && std::chrono::steady_clock::now() >= deadline) return 0;
  }
}

/// rselect(3): select(2) over rsockets and ordinary descriptors, by rpoll. The count of bits
/// set, or -1 with errno.
int rselect(int nfds, fd_set* readfds, fd_set* writefds, fd_set* exceptfds, timeval* timeout) {
  std::vector<pollfd> p;
  for (int fd = 0; fd < nfds; ++fd) {
    short ev = 0;
    if (readfds != nullptr && FD_ISSET(fd, readfds)) ev |= POLLIN;
    if (writefds != nullptr && FD_ISSET(fd, writefds)) ev |= POLLOUT;
    if (exceptfds != nullptr && FD_ISSET(fd, exceptfds)) ev |= POLLPRI;
    if (ev != 0) p.push_back({fd, ev, 0});
  }
  const int ms = timeout == nullptr ? -1 : static_cast<int>(timeout->tv_sec * 1000 + (timeout->tv_usec + 999) / 1000);
  const int r = rpoll(p.data(), p.size(), ms);
  if (r < 0) return -1;
  if (readfds != nullptr) FD_ZERO(readfds);
  if (writefds != nullptr) FD_ZERO(writefds);
  if (exceptfds != nullptr) FD_ZERO(exceptfds);
  int n = 0;
  for (const pollfd& q : p) {
    if (readfds != nullptr && (q.revents & (POLLIN | POLLHUP | POLLERR))) FD_SET(q.fd, readfds), ++n;
    if (writefds != nullptr && (q.revents & (POLLOUT | POLLERR))) FD_SET(q.fd, writefds), ++n;
    if (exceptfds != nullptr && (q.revents & POLLPRI)) FD_SET(q.fd, exceptfds), ++n;
  }
  return n;
}

/// rgetpeername(3): the peer's address. -1 with errno EBADF, ENOTCONN.
int rgetpeername(int socket, sockaddr* addr, socklen_t* addrlen) {
  auto rs = lookup(socket);
  if (!rs) return err(EBADF);
  std::lock_guard g(rs->m);
  if (rs->state != State::Connected) return err(ENOTCONN);
  hcasim::emu::shim::copy_addr(&rs->id->route.addr.dst_addr, addr, addrlen);
  return 0;
}

/// rgetsockname(3): the local address (zeros before rbind or rconnect). -1 with errno EBADF.
int rgetsockname(int socket, sockaddr* addr, socklen_t* addrlen) {
  auto rs = lookup(socket);
  if (!rs) return err(EBADF);
  std::lock_guard g(rs->m);
  sockaddr_storage z{};
  const sockaddr* a = rs->id != nullptr ? &rs->id->route.addr.src_addr : reinterpret_cast<sockaddr*>(&z);
  if (a->sa_family == 0) {
    reinterpret_cast<sockaddr_in*>(&z)->sin_family = AF_INET;
    a = reinterpret_cast<sockaddr*>(&z);
  }
  hcasim::emu::shim::copy_addr(a, addr, addrlen);
  return 0;
}

namespace {
int* int_option(Rsocket& rs, int level, int name) {
  if (level == SOL_SOCKET) {
    switch (name) {
      case SO_REUSEADDR: return &rs.reuseaddr;
      case SO_RCVBUF: return &rs.rcvbuf;
      case SO_SNDBUF: return &rs.sndbuf;
      case SO_KEEPALIVE: return &rs.keepalive;
      case SO_OOBINLINE: return &rs.oobinline;
      default: return nullptr;
    }
  }
  if (level == IPPROTO_TCP) {
    if (name == TCP_NODELAY) return &rs.nodelay;
    if (name == TCP_KEEPIDLE) return &rs.keepidle;
  }
  if (level == IPPROTO_IPV6 && name == IPV6_V6ONLY) return &rs.v6only;
  return nullptr;
}
uint32_t* rdma_option(Rsocket& rs, int name) {
  switch (name) {
    case RDMA_SQSIZE: return &rs.sqsize;
    case RDMA_RQSIZE: return &rs.rqsize;
    case RDMA_INLINE: return &rs.inline_size;
    case RDMA_IOMAPSIZE: return &rs.iomapsize;
    default: return nullptr;
  }
}
}  // namespace

/// rsetsockopt(3): the options rsocket.c takes. SOL_SOCKET: SO_REUSEADDR, SO_RCVBUF and
/// SO_SNDBUF (bytes; the receive buffers' total, read at rconnect / raccept), SO_KEEPALIVE,
/// SO_OOBINLINE, SO_LINGER (rclose's wait); IPPROTO_TCP: TCP_NODELAY (every rsend goes at
/// once anyway), TCP_MAXSEG (ignored), TCP_KEEPIDLE (s); IPPROTO_IPV6: IPV6_V6ONLY;
/// SOL_RDMA: RDMA_SQSIZE, RDMA_RQSIZE (work requests, hence send slots and receive buffers),
/// RDMA_INLINE (bytes), RDMA_IOMAPSIZE (riomap regions), RDMA_ROUTE (taken, unused: the
/// emulated CM resolves its own). -1 with errno EBADF, EINVAL (short optval), ENOTSUP
/// (another option).
int rsetsockopt(int socket, int level, int optname, const void* optval, socklen_t optlen) {
  auto rs = lookup(socket);
  if (!rs) return err(EBADF);
  std::lock_guard g(rs->m);
  if (level == SOL_SOCKET && optname == SO_LINGER) {
    if (optlen < sizeof(linger)) return err(EINVAL);
    std::memcpy(&rs->lin, optval, sizeof(linger));
    return 0;
  }
  if (level == IPPROTO_TCP && optname == TCP_MAXSEG) return 0;
  if (level == SOL_RDMA && optname == RDMA_ROUTE) return 0;
  if (int* p = int_option(*rs, level, optname)) {
    if (optlen < sizeof(int)) return err(EINVAL);
    std::memcpy(p, optval, sizeof(int));
    if ((optname == SO_RCVBUF || optname == SO_SNDBUF) && level == SOL_SOCKET && *p <= 0) *p = hcasim::emu::shim::kDefaultBuf;
    return 0;
  }
  if (level == SOL_RDMA) {
    uint32_t* p = rdma_option(*rs, optname);
    if (p == nullptr) return err(ENOTSUP);
    if (optlen < sizeof(uint32_t)) return err(EINVAL);
    std::memcpy(p, optval, sizeof(uint32_t));
    return 0;
  }
  return err(ENOTSUP);
}

/// rgetsockopt(3): the options rsetsockopt takes, and SO_ERROR (the pending error, cleared)
/// and SO_TYPE. -1 with errno EBADF, EINVAL, ENOTSUP.
int rgetsockopt(int socket, int level, int optname, void* optval, socklen_t* optlen) {
  auto rs = lookup(socket);
  if (!rs) return err(EBADF);
  if (optval == nullptr || optlen == nullptr) return err(EINVAL);
  std::lock_guard g(rs->m);
  auto put = [&](const void* v, socklen_t n) {
    std::memcpy(optval, v, std::min(n, *optlen));
    *optlen = std::min(n, *optlen);
    return 0;
  };
  if (level == SOL_SOCKET && optname == SO_ERROR) {
    const int e = rs->so_error;
    rs->so_error = 0;
    return put(&e, sizeof e);
  }
  if (level == SOL_SOCKET && optname == SO_TYPE) {
    const int t = SOCK_STREAM;
    return put(&t, sizeof t);
  }
  if (level == SOL_SOCKET && optname == SO_LINGER) return put(&rs->lin, sizeof rs->lin);
  if (level == IPPROTO_TCP && optname == TCP_MAXSEG) {
    const int mss = static_cast<int>(rs->ssize != 0 ? rs->ssize : rs->rcvbuf / rs->rqsize);
    return put(&mss, sizeof mss);
  }
  if (int* p = int_option(*rs, level, optname)) return put(p, sizeof(int));
  if (level == SOL_RDMA) {
    if (uint32_t* p = rdma_option(*rs, optname)) return put(p, sizeof(uint32_t));
  }
  return err(ENOTSUP);
}

/// rfcntl(3): F_GETFL (O_RDWR, and O_NONBLOCK when set) and F_SETFL (O_NONBLOCK). -1 with
/// errno EBADF, ENOTSUP (another command).
int rfcntl(int socket, int cmd, ...) {
  auto rs = lookup(socket);
  if (!rs) return err(EBADF);
  std::lock_guard g(rs->m);
  if (cmd == F_GETFL) return O_RDWR | (rs->nonblock ? O_NONBLOCK : 0);
  if (cmd == F_SETFL) {
    va_list ap;
    va_start(ap, cmd);
    const int flags = va_arg(ap, int);
    va_end(ap);
    rs->nonblock = (flags & O_NONBLOCK) != 0;
    return 0;
  }
  if (cmd == F_GETFD || cmd == F_SETFD) return 0;
  return err(ENOTSUP);
}

/// riomap(3): makes [buf, buf+len) writable by the peer's riowrite under `offset` (-1: the
/// buffer's address); the peer learns it in order with the stream. The offset, or -1 with
/// errno EBADF, ENOTCONN, EINVAL (prot without PROT_WRITE), ENOMEM (RDMA_IOMAPSIZE regions
/// mapped already, or the registration's), EAGAIN (non-blocking, no credit).
off_t riomap(int socket, void* buf, size_t len, int prot, int /*flags*/, off_t offset) {
  namespace shim = hcasim::emu::shim;
  auto rsp = lookup(socket);
  if (!rsp) return err(EBADF);
  Rsocket& rs = *rsp;
  std::unique_lock lk(rs.m);
  if (rs.state != State::Connected) return err(ENOTCONN);
  if (!(prot & PROT_WRITE)) return err(EINVAL);
  if (rs.iomapsize != 0 && rs.local_maps.size() >= rs.iomapsize) return err(ENOMEM);
  for (;;) {
    shim::progress(rs);
    if (rs.disconnected) return err(EPIPE);
    if (rs.credits.can_send_data() && rs.slots.available()) break;
    if (rs.nonblock) return err(EAGAIN);
    lk.unlock();
    shim::wait_for(rs, POLLOUT);
    lk.lock();
    if (rs.state != State::Connected) return err(EBADF);  // rclosed meanwhile
  }
  ibv_mr* mr = ibv_reg_mr(rs.id->pd, buf, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  if (mr == nullptr) return -1;
  const uint64_t off = offset == -1 ? reinterpret_cast<uintptr_t>(buf) : static_cast<uint64_t>(offset);
  shim::LocalMap m{mr, {off, reinterpret_cast<uintptr_t>(buf), len, mr->rkey, 0}};
  if (shim::post_msg(rs, hcasim::emu::shim::RsKind::IoMap, &m.wire, sizeof m.wire) != 0) {
    ibv_dereg_mr(mr);
    return -1;
  }
  rs.local_maps.push_back(m);
  return static_cast<off_t>(off);
}

/// riounmap(3): the region riomap gave for buf is no longer the peer's to write. -1 with
/// errno EBADF, EINVAL (no such region).
int riounmap(int socket, void* buf, size_t len) {
  namespace shim = hcasim::emu::shim;
  auto rsp = lookup(socket);
  if (!rsp) return err(EBADF);
  Rsocket& rs = *rsp;
  std::unique_lock lk(rs.m);
  auto it = std::find_if(rs.local_maps.begin(), rs.local_maps.end(), [&](const shim::LocalMap& m) {
    return m.wire.addr == reinterpret_cast<uintptr_t>(buf) && m.wire.length == len;
  });
  if (it == rs.local_maps.end()) return err(EINVAL);
  const shim::LocalMap m = *it;
  rs.local_maps.erase(it);
  if (rs.state == State::Connected && !rs.disconnected) {
    // The peer learns it when a credit allows; a closing connection drops it.
    shim::progress(rs);
    if (rs.credits.can_send_control() && rs.slots.available())
      shim::post_msg(rs, hcasim::emu::shim::RsKind::IoUnmap, &m.wire, sizeof m.wire);
  }
  ibv_dereg_mr(m.mr);
  return 0;
}

/// riowrite(3): RDMA WRITEs count bytes to the peer's riomap region holding [offset,
/// offset+count), ordered with rsend's bytes (the peer sees them before any sent after).
/// The bytes written (less than count when non-blocking and send slots ran out), or -1 (as
/// size_t) with errno EBADF, ENOTCONN, EINVAL (no such region), EAGAIN, EPIPE.
size_t riowrite(int socket, const void* buf, size_t count, off_t offset, int flags) {
  namespace shim = hcasim::emu::shim;
  auto rsp = lookup(socket);
  if (!rsp) return static_cast<size_t>(err(EBADF));
  Rsocket& rs = *rsp;
  std::unique_lock lk(rs.m);
  if (rs.state != State::Connected) return static_cast<size_t>(err(ENOTCONN));
  const bool nb = rs.nonblock || (flags & MSG_DONTWAIT);
  size_t done = 0;
  while (done < count) {
    shim::progress(rs);
    if (rs.disconnected || rs.fin_sent) {
      if (done > 0) break;
      return static_cast<size_t>(err(EPIPE));
    }
    const uint64_t at = static_cast<uint64_t>(offset) + done;
    auto it = std::find_if(rs.remote_maps.begin(), rs.remote_maps.end(), [&](const RsIoMapWire& m) {
      return at >= m.offset && at < m.offset + m.length;
    });
    if (it == rs.remote_maps.end()) {
      if (done > 0) break;
      return static_cast<size_t>(err(EINVAL));
    }
    if (rs.slots.available()) {
      const auto n = static_cast<uint32_t>(std::min<uint64_t>({count - done, rs.ssize, it->offset + it->length - at}));
      const RsIoMapWire m = *it;
      if (shim::post_msg(rs, hcasim::emu::shim::RsKind::Data, static_cast<const uint8_t*>(buf) + done, n, &m,
                         m.addr + (at - m.offset)) != 0) {
        if (done > 0) break;
        return static_cast<size_t>(-1);
      }
      done += n;
      continue;
    }
    if (nb) {
      if (done > 0) break;
      return static_cast<size_t>(err(EAGAIN));
    }
    lk.unlock();
    shim::wait_for(rs, POLLOUT);
    lk.lock();
    if (rs.state != State::Connected) return done > 0 ? done : static_cast<size_t>(err(EBADF));  // rclosed meanwhile
  }
  return done;
}
