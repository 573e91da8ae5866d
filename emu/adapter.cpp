#include "emu/adapter.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <future>

#include <sodium.h>

#include <fmt/format.h>

#include "emu/cloexec.h"
#include "emu/qp.h"
#include "emu/queues.h"
#include "emu/wire.h"

namespace hcasim::emu {

namespace asio = boost::asio;
using asio::ip::tcp;

/// A stream accepted on the port whose handshake (emu/auth.h) is under way.
struct Hca::Handshake {
  Handshake(tcp::socket s, asio::io_context& io) : sock(std::move(s)), timer(io) {}
  tcp::socket sock;
  asio::steady_timer timer;
  Challenge challenge{};
  Answer answer{};
  Proof proof{};
  bool done = false;  // handed over, refused or closed: later handlers do nothing
  uint64_t serial = 0;  // its key in handshakes_ (arrival order)
};

Hca::Hca(const sdp::ProcessMemory* memory, const model::FaultConfig& faults, const model::RcRetry& retry)
    : memory_(memory), faults_(faults), retry_(retry), guard_(asio::make_work_guard(io_)) {
  auth_init();  // the key bytes are random
  pd_ = mrs_.alloc_pd();
  thread_ = std::thread([this] {
    pthread_attr_t attr;
    if (::pthread_getattr_np(::pthread_self(), &attr) == 0) {
      void* lo = nullptr;
      size_t bytes = 0;
      if (::pthread_attr_getstack(&attr, &lo, &bytes) == 0) {
        io_stack_bytes_.store(bytes, std::memory_order_release);
        io_stack_lo_.store(lo, std::memory_order_release);
      }
      ::pthread_attr_destroy(&attr);
    }
    io_.run();
    io_end_.set_value();
  });
}

Hca::~Hca() {
  std::vector<std::shared_ptr<Qp>> open;
  {
    std::lock_guard g(qps_lock_);
    for (auto& [qpn, w] : qps_)
      if (auto q = w.lock()) open.push_back(std::move(q));
  }
  for (auto& q : open) q->close();  // outside qps_lock_: close() drops the QP from qps_
  open.clear();
  // The subnet port's acceptor and datagram socket wait for ever: closed, so that run() returns.
  asio::post(io_, [this] {
    boost::system::error_code ec;
    if (acceptor_) acceptor_->close(ec);
    if (udp_) udp_->close(ec);
    if (accept_timer_) accept_timer_->cancel();
    for (const auto& [serial, h] : handshakes_) {  // their 2 s timers would hold run() up
      h->done = true;
      h->timer.cancel();
      h->sock.close(ec);
    }
    handshakes_.clear();
  });
  guard_.reset();
  if (thread_.joinable()) thread_.join();  // not after stop_io
  if (send_fd_ >= 0) ::close(send_fd_);
  sodium_memzero(secret_.data(), secret_.size());
}

uint32_t Hca::alloc_pd() {
  std::lock_guard g(mr_lock_);
  return mrs_.alloc_pd();
}

uint32_t Hca::reg_mr(uint32_t pd, sdp::Addr addr, uint64_t len, unsigned access) {
  if (memory_ != nullptr && !memory_->contains(addr, len))
    throw sdp::VerbsError(fmt::format("reg_mr: [{:#x}, +{}) is not allocated memory", addr, len));
  std::lock_guard g(mr_lock_);
  return outer_key(mrs_.reg(pd, addr, len, access));
}

uint32_t Hca::outer_key(uint32_t inner) {
  const uint32_t index = inner - hca::MrTable::kFirstKey + 1;  // 0 is no MR's
  if (index > 0xFFFFFF) {  // freed indexes are reused: 2^24 - 1 MRs live at once
    mrs_.dereg(inner);
    throw sdp::VerbsError("reg_mr: all 16777215 MR indexes of the emulated HCA are in use");
  }
  const bool reused = index <= key_bytes_.size();
  if (!reused) {
    key_bytes_.resize(index);
    holders_.resize(index);
  }
  uint8_t b = 0;
  // A reused index gets another key byte than its last MR's: that MR's keys name nothing.
  do randombytes_buf(&b, 1);
  while (reused && b == key_bytes_[index - 1]);
  key_bytes_[index - 1] = b;
  return index << 8 | b;
}

uint32_t Hca::inner_key(uint32_t key) const {
  const uint32_t index = key >> 8;
  if (index == 0 || index > key_bytes_.size() || key_bytes_[index - 1] != (key & 0xFF)) return 0;
  return hca::MrTable::kFirstKey + index - 1;
}

int Hca::rereg_mr(uint32_t key, uint32_t pd, sdp::Addr addr, uint64_t len, unsigned access) {
  if (memory_ != nullptr && !memory_->contains(addr, len))
    throw sdp::VerbsError(fmt::format("rereg_mr: [{:#x}, +{}) is not allocated memory", addr, len));
  std::unique_lock g(mr_lock_);
  const uint32_t inner = inner_key(key);
  if (inner != 0 && mrs_.windows_bound(inner) > 0) return EBUSY;
  if (inner == 0 || !mrs_.rereg(inner, pd, addr, len, access)) return EINVAL;
  // The MR's new values hold for every later check; wait for the accesses that passed the old.
  wait_released(g, key >> 8);
  return 0;
}

void Hca::wait_released(std::unique_lock<std::mutex>& g, uint32_t index) {
  mr_released_.wait(g, [&] { return holders_[index - 1].empty(); });
}

int Hca::dereg_mr(uint32_t key) {
  std::unique_lock g(mr_lock_);
  const uint32_t inner = inner_key(key);
  if (inner != 0 && mrs_.windows_bound(inner) > 0) return EBUSY;
  const hca::Mr* m = inner == 0 ? nullptr : mrs_.find(inner);
  if (m == nullptr || m->mw_type != 0 || !mrs_.dereg(inner)) return EINVAL;
  // The key is gone for every later check; wait for the accesses that passed it already: the
  // QP locks that hold this MR. (Its index may be reused meanwhile; the new MR's holders are
  // waited for too, which only delays the return.)
  wait_released(g, key >> 8);
  return 0;
}

void Hca::release(AccessLock& l) {
  std::lock_guard g(mr_lock_);
  bool emptied = false;
  for (const uint32_t index : l.held_) {
    auto& h = holders_[index - 1];
    std::erase(h, &l);
    emptied = emptied || h.empty();
  }
  l.held_.clear();
  if (emptied) mr_released_.notify_all();
}

void AccessLock::release() { hca_.release(*this); }

void Hca::forget_qp(const std::shared_ptr<Qp>& qp) {
  detach_all_mcast(qp->qp_num());
  std::lock_guard g(qps_lock_);
  qps_.erase(qp->qp_num());
  if (closing_.size() >= closing_purge_at_) {
    std::erase_if(closing_, [](const std::weak_ptr<Qp>& w) { return w.expired(); });
    closing_purge_at_ = std::max<size_t>(64, 2 * closing_.size());
  }
  closing_.push_back(qp);
}

uint32_t Hca::dma_mr(uint32_t pd) {
  if (memory_ == nullptr) throw sdp::VerbsError("dma_mr: this emulated HCA has no memory arena");
  std::lock_guard g(mr_lock_);
  return outer_key(mrs_.reg_all_memory(pd, sdp::kLocalWrite));
}

hca::MrRefusal Hca::check_mr(uint32_t key, uint32_t pd, sdp::Addr addr, uint64_t len, unsigned need, uint32_t qpn,
                             AccessLock* holder) {
  std::lock_guard g(mr_lock_);
  const uint32_t inner = inner_key(key);
  if (inner == 0) return hca::MrRefusal::UnknownKey;
  const hca::MrRefusal r = mrs_.check(
      inner, pd, addr, len, need, [this](sdp::Addr a, uint64_t n) { return memory_ != nullptr && memory_->contains(a, n); },
      qpn);
  if (r == hca::MrRefusal::None && holder != nullptr) {
    const uint32_t index = key >> 8;
    auto& h = holders_[index - 1];
    if (std::find(h.begin(), h.end(), holder) == h.end()) {
      h.push_back(holder);
      holder->held_.push_back(index);
    }
  }
  return r;
}

uint32_t Hca::alloc_mw(uint32_t pd, uint8_t type) {
  std::lock_guard g(mr_lock_);
  return outer_key(mrs_.alloc_mw(pd, type));
}

uint32_t Hca::inner_index(uint32_t key) const {
  const uint32_t index = key >> 8;
  if (index == 0 || index > key_bytes_.size()) return 0;
  return hca::MrTable::kFirstKey + index - 1;
}

bool Hca::dealloc_mw(uint32_t key) {
  std::unique_lock g(mr_lock_);
  const uint32_t inner = inner_index(key);
  const hca::Mr* w = inner == 0 ? nullptr : mrs_.find(inner);
  if (w == nullptr || w->mw_type == 0 || !mrs_.dereg(inner)) return false;
  wait_released(g, key >> 8);
  return true;
}

bool Hca::mw_op(const hca::SendWqe& w, uint32_t qpn, uint32_t pd) {
  std::lock_guard g(mr_lock_);
  if (w.x.kind == hca::WrExt::Kind::LocalInv) {
    const uint32_t inner = inner_key(w.x.imm);
    return inner != 0 && mrs_.invalidate_mw(inner, pd) == hca::MrRefusal::None;
  }
  const uint32_t mw = inner_index(w.x.mw_key);  // the window itself, whatever its key byte now
  const uint32_t mr = inner_key(w.x.mw_mr_key);
  if (mw == 0 || mr == 0 || (w.x.mw_new_key >> 8) != (w.x.mw_key >> 8)) return false;
  if (mrs_.bind_mw(mw, mr, w.x.mw_addr, w.x.mw_len, w.x.mw_access, qpn, pd) != hca::MrRefusal::None) return false;
  key_bytes_[(w.x.mw_key >> 8) - 1] = static_cast<uint8_t>(w.x.mw_new_key & 0xFF);
  return true;
}

hca::MrRefusal Hca::remote_invalidate(uint32_t rkey, uint32_t qpn, uint32_t pd) {
  std::lock_guard g(mr_lock_);
  const uint32_t inner = inner_key(rkey);
  return inner == 0 ? hca::MrRefusal::UnknownKey : mrs_.invalidate_mw(inner, pd, qpn);
}

std::shared_ptr<Qp> Hca::create_qp(const sdp::QpCaps& caps) {
  auto cq = std::make_shared<CompQueue>(caps.cq_entries);
  auto qp = create_qp(hca::QpType::Rc, pd_, caps, cq, cq);
  qp->own_cq_ = true;
  return qp;
}

std::shared_ptr<Qp> Hca::create_qp(hca::QpType type, uint32_t pd, const sdp::QpCaps& caps,
                                   std::shared_ptr<CompQueue> send_cq, std::shared_ptr<CompQueue> recv_cq) {
  {
    std::lock_guard g(mr_lock_);
    if (!mrs_.has_pd(pd)) throw sdp::VerbsError(fmt::format("create_qp: no PD {}", pd));
  }
  std::lock_guard g(qps_lock_);
  auto qp = std::make_shared<Qp>(*this, type, next_qpn_++, pd, caps, std::move(send_cq), std::move(recv_cq));
  if (qps_.size() >= purge_at_) {
    std::erase_if(qps_, [](const auto& e) { return e.second.expired(); });
    purge_at_ = std::max<size_t>(64, 2 * qps_.size());
  }
  qps_[qp->qp_num()] = qp;
  return qp;
}

uint32_t Hca::alloc_xrcd() {
  std::lock_guard g(qps_lock_);
  return next_xrcd_++;
}

void Hca::add_srq(const std::shared_ptr<Srq>& srq) {
  std::lock_guard g(qps_lock_);
  std::erase_if(srqs_, [](const auto& e) { return e.second.expired(); });
  while (srqs_.contains(next_srqn_) || next_srqn_ == 0) next_srqn_ = (next_srqn_ + 1) & 0xFFFFFF;  // 24 bits
  srq->set_srqn(next_srqn_);
  srqs_[next_srqn_] = srq;
  next_srqn_ = (next_srqn_ + 1) & 0xFFFFFF;
}

std::shared_ptr<Srq> Hca::find_srq(uint32_t srqn) {
  std::lock_guard g(qps_lock_);
  auto it = srqs_.find(srqn);
  return it == srqs_.end() ? nullptr : it->second.lock();
}

void Hca::remove_srq(uint32_t srqn) {
  std::lock_guard g(qps_lock_);
  srqs_.erase(srqn);
}

std::shared_ptr<Qp> Hca::find_qp(uint32_t qpn) {
  std::lock_guard g(qps_lock_);
  auto it = qps_.find(qpn);
  return it == qps_.end() ? nullptr : it->second.lock();
}

uint16_t Hca::lid() {
  std::lock_guard g(port_lock_);
  if (port_) return port_->lid();
  // The secret first: without it the port could authenticate nothing, and takes no LID.
  auth_init();
  secret_ = subnet_secret();
  // The stream acceptor and the datagram socket on one port number (TCP and UDP): a few
  // tries, for a port number whose UDP side is taken.
  boost::system::error_code ec;
  for (int attempt = 0; attempt < 8 && !acceptor_; ++attempt) {
    auto a = std::make_unique<tcp::acceptor>(io_);
    const tcp::endpoint ep(asio::ip::address_v4::loopback(), 0);
    open_cloexec(*a, ep.protocol(), ec);
    if (!ec) a->bind(ep, ec);
    if (!ec) a->listen(64, ec);
    if (!ec) a->non_blocking(true, ec);  // accept_next takes connections with accept4
    if (ec) throw sdp::DeviceError(fmt::format("emulated port: cannot listen on 127.0.0.1: {}", ec.message()));
    auto u = std::make_unique<asio::ip::udp::socket>(io_);
    open_cloexec(*u, asio::ip::udp::v4(), ec);
    if (!ec) u->bind(asio::ip::udp::endpoint(asio::ip::address_v4::loopback(), a->local_endpoint().port()), ec);
    if (ec) continue;
    // A deep socket buffer: datagrams wait there while the I/O thread is not running (a UD
    // datagram is lost only when no receive WR is posted, as on a real HCA, not here).
    const int bytes = 8 << 20;
    if (::setsockopt(u->native_handle(), SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) != 0)
      ::setsockopt(u->native_handle(), SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
    acceptor_ = std::move(a);
    udp_ = std::move(u);
  }
  if (!acceptor_) throw sdp::DeviceError(fmt::format("emulated port: no UDP port on 127.0.0.1: {}", ec.message()));
  send_fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  port_ = std::make_unique<SubnetPort>(acceptor_->local_endpoint().port());
  dgram_.resize(kLengthSize + kHeaderSize + 16 + kMaxPayload + kIcrcSize + kDatagramMacSize);
  asio::post(io_, [this] {
    accept_next();
    receive_datagram();
  });
  return port_->lid();
}

bool Hca::send_datagram(uint16_t dlid, const std::vector<uint8_t>& frame) {
  if (is_multicast_lid(dlid)) {
    // The subnet's forwarding table names the member ports; each gets one copy, and its Hca
    // hands it to each QP attached there (IBA 10.5.2.3).
    bool any = false;
    for (const uint16_t lid : multicast_ports(dlid)) any = send_datagram(lid, frame) || any;
    return any;
  }
  const std::optional<uint16_t> port = find_port(dlid);
  if (!port) return false;
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(*port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const auto mac = datagram_mac(secret_, frame);
  iovec iov[2] = {{const_cast<uint8_t*>(frame.data()), frame.size()}, {const_cast<uint8_t*>(mac.data()), mac.size()}};
  msghdr m{};
  m.msg_name = &to;
  m.msg_namelen = sizeof to;
  m.msg_iov = iov;
  m.msg_iovlen = 2;
  std::lock_guard g(send_lock_);
  return ::sendmsg(send_fd_, &m, 0) == static_cast<ssize_t>(frame.size() + mac.size());
}

void Hca::receive_datagram() {
  udp_->async_receive(asio::buffer(dgram_), [this](boost::system::error_code ec, size_t n) {
    if (ec == asio::error::operation_aborted) return;
    // The MAC first (emu/auth.h): a datagram of a process without the subnet's secret is
    // dropped before any of it is decoded.
    if (!ec && !datagram_ok(secret_, std::span<const uint8_t>(dgram_.data(), n))) {
      ++datagrams_refused_;
    } else if (!ec && (n -= kDatagramMacSize) >= kLengthSize) {
      try {
        const uint32_t len = decode_length(std::span<const uint8_t, kLengthSize>(dgram_.data(), kLengthSize));
        const std::span<const uint8_t> body(dgram_.data() + kLengthSize, n - kLengthSize);
        // A datagram whose ICRC fails is dropped in silence, as a packet failing its check is
        // (IBA 7.8.1); so is a malformed one.
        if (len == body.size() && icrc_ok(body)) {
          const Packet p = decode(body);
          if (p.op == Op::UdSendOnly || p.op == Op::UdSendOnlyWithImm) {
            if (p.dest_qpn == hca::kMulticastQpn)
              deliver_multicast(p);
            else if (auto qp = find_qp(p.dest_qpn))
              qp->on_datagram(p);
          }
        }
      } catch (const WireError&) {
      }
    }
    receive_datagram();
  });
}

int Hca::attach_mcast(uint32_t qpn, const std::array<uint8_t, 16>& mgid, uint16_t mlid) {
  if (mgid[0] != 0xFF || !is_multicast_lid(mlid)) return EINVAL;
  bool first = false;
  {
    std::lock_guard g(mcast_lock_);
    auto& members = mcast_[mlid];
    for (const McastMember& m : members)
      if (m.qpn == qpn && m.mgid == mgid) return 0;
    first = members.empty();
    members.push_back({qpn, mgid});
  }
  if (first) join_multicast_port(mlid, lid());
  return 0;
}

int Hca::detach_mcast(uint32_t qpn, const std::array<uint8_t, 16>& mgid, uint16_t mlid) {
  bool last = false;
  {
    std::lock_guard g(mcast_lock_);
    auto it = mcast_.find(mlid);
    if (it == mcast_.end()) return EINVAL;
    const size_t before = it->second.size();
    std::erase_if(it->second, [&](const McastMember& m) { return m.qpn == qpn && m.mgid == mgid; });
    if (it->second.size() == before) return EINVAL;
    if (it->second.empty()) {
      mcast_.erase(it);
      last = true;
    }
  }
  if (last) leave_multicast_port(mlid, lid());
  return 0;
}

void Hca::detach_all_mcast(uint32_t qpn) {
  std::vector<uint16_t> left;
  {
    std::lock_guard g(mcast_lock_);
    for (auto it = mcast_.begin(); it != mcast_.end();) {
      std::erase_if(it->second, [&](const McastMember& m) { return m.qpn == qpn; });
      if (it->second.empty()) {
        left.push_back(it->first);
        it = mcast_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const uint16_t mlid : left) leave_multicast_port(mlid, lid());
}

std::vector<uint32_t> Hca::mcast_qps(uint16_t mlid) {
  std::lock_guard g(mcast_lock_);
  std::vector<uint32_t> out;
  if (auto it = mcast_.find(mlid); it != mcast_.end())
    for (const McastMember& m : it->second) out.push_back(m.qpn);
  return out;
}

void Hca::deliver_multicast(const Packet& p) {
  if (!is_multicast_lid(p.dlid)) return;  // QPN 0xFFFFFF to a unicast LID: no QP has it
  std::vector<McastMember> members;
  {
    std::lock_guard g(mcast_lock_);
    if (auto it = mcast_.find(p.dlid); it != mcast_.end()) members = it->second;
  }
  for (const McastMember& m : members) {
    // The GRH a multicast packet carries (IBA 8.3, 10.5.2.3: required): IP version 6, traffic
    // class and flow label 0, PayLen the bytes from the BTH through the ICRC, next header 0x1B
    // (the BTH), hop limit 0xFF, the sender's port GID as SGID and the group's MGID as DGID.
    std::array<uint8_t, hca::kGrhBytes> grh{};
    grh[0] = 0x60;
    const size_t pay = 12 + 8 + (p.op == Op::UdSendOnlyWithImm ? 4 : 0) + p.payload.size() + kIcrcSize;
    grh[4] = static_cast<uint8_t>(pay >> 8);
    grh[5] = static_cast<uint8_t>(pay);
    grh[6] = 0x1B;
    grh[7] = 0xFF;
    const std::array<uint8_t, 16> sgid = gid_of_lid(p.slid);
    std::copy(sgid.begin(), sgid.end(), grh.begin() + 8);
    std::copy(m.mgid.begin(), m.mgid.end(), grh.begin() + 24);
    auto qp = find_qp(m.qpn);
    if (qp == nullptr) continue;
    if (m.qpn == p.local_qpn && p.slid == lid() && qp->blocks_self_multicast()) continue;  // its own send
    qp->on_datagram(p, grh.data());
  }
}

void Hca::accept_next() {
  // Each accepted stream is authenticated first (challenge); only then are its CM REQ fields
  // read and the stream handed to the QP they name (Qp::take_stream). accept4 takes the
  // connections close-on-exec (emu/cloexec.h) until none is left, and only then does Asio wait
  // for the next: its reactor is edge-triggered, so a wait armed while one still waited in the
  // backlog would not end before another came.
  for (;;) {
    if (!acceptor_->is_open()) return;  // closed (~Hca)
    boost::system::error_code ec;
    tcp::socket s(io_);
    accept_cloexec(*acceptor_, s, ec);
    if (ec == asio::error::no_descriptors || ec == asio::error::no_buffer_space || ec == asio::error::no_memory ||
        ec.value() == ENFILE) {
      // Out of descriptors: the oldest stranger's goes, and the port accepts again a little
      // later (the connection waits in the backlog) instead of spinning on the same error.
      if (!handshakes_.empty()) refuse(handshakes_.begin()->second);
      if (!accept_timer_) accept_timer_ = std::make_unique<asio::steady_timer>(io_);
      accept_timer_->expires_after(std::chrono::milliseconds(kAcceptBackoffMs));
      accept_timer_->async_wait([this](boost::system::error_code e) {
        if (!e) accept_next();
      });
      return;
    }
    if (!ec) {
      s.set_option(tcp::no_delay(true), ec);
      challenge(std::make_shared<Handshake>(std::move(s), io_));
      continue;
    }
    if (ec == asio::error::connection_aborted || ec.value() == EPROTO || ec == asio::error::interrupted) continue;
    break;  // none waiting (EAGAIN), or an error the next connection may clear
  }
  acceptor_->async_wait(tcp::acceptor::wait_read, [this](boost::system::error_code ec) {
    // Closed (~Hca): a wait armed after the close fails at once (bad_descriptor), not with
    // operation_aborted, and arming another would spin the I/O thread for ever.
    if (ec == asio::error::operation_aborted || !acceptor_->is_open()) return;
    accept_next();
  });
}

void Hca::refuse(const std::shared_ptr<Handshake>& h) {
  if (h->done) return;
  // Closed without a word: a stranger learns nothing of the port's QPs.
  h->done = true;
  boost::system::error_code ec;
  h->timer.cancel();
  h->sock.close(ec);
  handshakes_.erase(h->serial);
  ++strangers_refused_;
}

void Hca::challenge(std::shared_ptr<Handshake> h) {
  // A full table: the oldest handshake under way makes room (kMaxHandshakes).
  if (handshakes_.size() >= kMaxHandshakes) refuse(handshakes_.begin()->second);
  h->serial = handshake_serial_++;
  handshakes_.emplace(h->serial, h);
  h->challenge = make_nonce();
  // The whole handshake within kHandshakeTimeoutMs: a stranger that connects and stays idle, or
  // sends its bytes slowly, holds nothing for longer.
  h->timer.expires_after(std::chrono::milliseconds(kHandshakeTimeoutMs));
  h->timer.async_wait([this, h](boost::system::error_code ec) {
    if (!ec) refuse(h);
  });
  asio::async_write(h->sock, asio::buffer(h->challenge), [this, h](boost::system::error_code e1, size_t) {
    if (h->done) return;
    if (e1) return refuse(h);
    // A fixed-size answer: nothing of it is used as a length.
    asio::async_read(h->sock, asio::buffer(h->answer), [this, h](boost::system::error_code e2, size_t) {
      if (h->done) return;
      if (e2) return refuse(h);
      Nonce theirs{};
      const std::optional<StreamReq> req = check_answer(secret_, h->challenge, h->answer, theirs);
      if (!req) return refuse(h);
      h->proof = make_proof(secret_, h->challenge, theirs, *req);
      asio::async_write(h->sock, asio::buffer(h->proof), [this, h, req = *req](boost::system::error_code e3, size_t) {
        if (h->done) return;
        h->done = true;
        h->timer.cancel();
        handshakes_.erase(h->serial);
        if (e3) return;  // the connector went away (it closes too)
        if (auto qp = find_qp(req.dest_qpn)) qp->take_stream(std::move(h->sock), req.src_qpn, req.slid);
        // No such QP: the stream closes; the peer's requests time out (RETRY_EXC_ERR).
      });
    });
  });
}

void Hca::quiesce(int ms) {
  std::vector<std::shared_ptr<Qp>> all;
  {
    std::lock_guard g(qps_lock_);
    for (auto& [qpn, w] : qps_)
      if (auto q = w.lock()) all.push_back(std::move(q));
    // A destroyed QP's last frames (the reply to the peer's last message) must reach the wire
    // before the process exits, as an HCA has sent them by the time the program exits.
    for (auto& w : closing_)
      if (auto q = w.lock()) all.push_back(std::move(q));
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  for (auto& q : all) {
    q->flush_datagrams();  // a UD QP's posted sends too: an HCA has sent them by now
    q->wait_written(deadline);
  }
}

bool Hca::stop_io(int ms) {
  if (!thread_.joinable()) return true;
  if (io_.get_executor().running_in_this_thread()) return false;  // exit() from a handler: it cannot join itself
  io_.stop();
  if (io_ended_.wait_for(std::chrono::milliseconds(ms)) != std::future_status::ready) return false;
  thread_.join();
  return true;
}

void Hca::sync(int ms) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> f = done->get_future();
  boost::asio::post(io_, [done] { done->set_value(); });
  f.wait_for(std::chrono::milliseconds(ms));
}

void Hca::release_port() {
  std::vector<uint16_t> groups;
  {
    std::lock_guard g(mcast_lock_);
    for (const auto& [mlid, members] : mcast_) groups.push_back(mlid);
  }
  std::lock_guard g(port_lock_);
  if (port_)
    for (const uint16_t mlid : groups) leave_multicast_port(mlid, port_->lid());
  port_.reset();
}

}  // namespace hcasim::emu
