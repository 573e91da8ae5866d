#include "emu/adapter.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include "emu/qp.h"
#include "emu/queues.h"
#include "emu/wire.h"

namespace hcasim::emu {

namespace asio = boost::asio;
using asio::ip::tcp;

Hca::Hca(const sdp::ProcessMemory* memory, const model::FaultConfig& faults, const model::RcRetry& retry)
    : memory_(memory), faults_(faults), retry_(retry), guard_(asio::make_work_guard(io_)) {
  pd_ = mrs_.alloc_pd();
  thread_ = std::thread([this] { io_.run(); });
}

Hca::~Hca() {
  {
    std::lock_guard g(qps_lock_);
    for (auto& [qpn, w] : qps_)
      if (auto q = w.lock()) q->close();
  }
  // The subnet port's acceptor and datagram socket wait for ever: closed, so that run() returns.
  asio::post(io_, [this] {
    boost::system::error_code ec;
    if (acceptor_) acceptor_->close(ec);
    if (udp_) udp_->close(ec);
  });
  guard_.reset();
  thread_.join();
  if (send_fd_ >= 0) ::close(send_fd_);
}

uint32_t Hca::alloc_pd() {
  std::lock_guard g(mr_lock_);
  return mrs_.alloc_pd();
}

uint32_t Hca::reg_mr(uint32_t pd, sdp::Addr addr, uint64_t len, unsigned access) {
  if (memory_ != nullptr && !memory_->contains(addr, len))
    throw sdp::VerbsError(fmt::format("reg_mr: [{:#x}, +{}) is not allocated memory", addr, len));
  std::lock_guard g(mr_lock_);
  return mrs_.reg(pd, addr, len, access);
}

bool Hca::dereg_mr(uint32_t key) {
  std::lock_guard g(mr_lock_);
  return mrs_.dereg(key);
}

uint32_t Hca::dma_mr(uint32_t pd) {
  if (memory_ == nullptr) throw sdp::VerbsError("dma_mr: this emulated HCA has no memory arena");
  std::lock_guard g(mr_lock_);
  return mrs_.reg_all_memory(pd, sdp::kLocalWrite);
}

hca::MrRefusal Hca::check_mr(uint32_t key, uint32_t pd, sdp::Addr addr, uint64_t len, unsigned need) {
  std::lock_guard g(mr_lock_);
  return mrs_.check(key, pd, addr, len, need,
                    [this](sdp::Addr a, uint64_t n) { return memory_ != nullptr && memory_->contains(a, n); });
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

std::shared_ptr<Qp> Hca::find_qp(uint32_t qpn) {
  std::lock_guard g(qps_lock_);
  auto it = qps_.find(qpn);
  return it == qps_.end() ? nullptr : it->second.lock();
}

uint16_t Hca::lid() {
  std::lock_guard g(port_lock_);
  if (port_) return port_->lid();
  // The stream acceptor and the datagram socket on one port number (TCP and UDP): a few
  // tries, for a port number whose UDP side is taken.
  boost::system::error_code ec;
  for (int attempt = 0; attempt < 8 && !acceptor_; ++attempt) {
    auto a = std::make_unique<tcp::acceptor>(io_);
    const tcp::endpoint ep(asio::ip::address_v4::loopback(), 0);
    a->open(ep.protocol(), ec);
    if (!ec) a->bind(ep, ec);
    if (!ec) a->listen(64, ec);
    if (ec) throw sdp::DeviceError(fmt::format("emulated port: cannot listen on 127.0.0.1: {}", ec.message()));
    auto u = std::make_unique<asio::ip::udp::socket>(io_);
    u->open(asio::ip::udp::v4(), ec);
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
  dgram_.resize(kLengthSize + kHeaderSize + 16 + kMaxPayload + kIcrcSize);
  asio::post(io_, [this] {
    accept_next();
    receive_datagram();
  });
  return port_->lid();
}

bool Hca::send_datagram(uint16_t dlid, const std::vector<uint8_t>& frame) {
  const std::optional<uint16_t> port = find_port(dlid);
  if (!port) return false;
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(*port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::lock_guard g(send_lock_);
  return ::sendto(send_fd_, frame.data(), frame.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to) ==
         static_cast<ssize_t>(frame.size());
}

void Hca::receive_datagram() {
  udp_->async_receive(asio::buffer(dgram_), [this](boost::system::error_code ec, size_t n) {
    if (ec == asio::error::operation_aborted) return;
    if (!ec && n >= kLengthSize) {
      try {
        const uint32_t len = decode_length(std::span<const uint8_t, kLengthSize>(dgram_.data(), kLengthSize));
        const std::span<const uint8_t> body(dgram_.data() + kLengthSize, n - kLengthSize);
        // A datagram whose ICRC fails is dropped in silence, as a packet failing its check is
        // (IBA 7.8.1); so is a malformed one.
        if (len == body.size() && icrc_ok(body)) {
          const Packet p = decode(body);
          if (p.op == Op::UdSendOnly || p.op == Op::UdSendOnlyWithImm)
            if (auto qp = find_qp(p.dest_qpn)) qp->on_datagram(p);
        }
      } catch (const WireError&) {
      }
    }
    receive_datagram();
  });
}

void Hca::accept_next() {
  // Each accepted stream's first frame is a CM REQ naming the QP it is for (Qp::modify to RTR).
  acceptor_->async_accept([this](boost::system::error_code ec, tcp::socket s) {
    // Closed (~Hca): an accept armed after the close fails at once (bad_descriptor), not with
    // operation_aborted, and arming another would spin the I/O thread for ever.
    if (ec == asio::error::operation_aborted || !acceptor_->is_open()) return;
    if (!ec) {
      s.set_option(tcp::no_delay(true), ec);
      auto sock = std::make_shared<tcp::socket>(std::move(s));
      auto len = std::make_shared<std::array<uint8_t, kLengthSize>>();
      asio::async_read(*sock, asio::buffer(*len), [this, sock, len](boost::system::error_code e1, size_t) {
        if (e1) return;
        uint32_t n = 0;
        try {
          n = decode_length(*len);
        } catch (const WireError&) {
          return;
        }
        auto body = std::make_shared<std::vector<uint8_t>>(n);
        asio::async_read(*sock, asio::buffer(*body), [this, sock, body](boost::system::error_code e2, size_t) {
          if (e2 || !icrc_ok(*body)) return;
          Packet req;
          try {
            req = decode(*body);
          } catch (const WireError&) {
            return;
          }
          if (req.op != Op::CmReq) return;
          if (auto qp = find_qp(req.dest_qpn)) qp->take_stream(std::move(*sock), req.local_qpn);
          // No such QP: the stream closes; the peer's requests time out (RETRY_EXC_ERR).
        });
      });
    }
    accept_next();
  });
}

void Hca::quiesce(int ms) {
  std::vector<std::shared_ptr<Qp>> all;
  {
    std::lock_guard g(qps_lock_);
    for (auto& [qpn, w] : qps_)
      if (auto q = w.lock()) all.push_back(std::move(q));
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  for (auto& q : all) q->wait_written(deadline);
}

void Hca::release_port() {
  std::lock_guard g(port_lock_);
  port_.reset();
}

}  // namespace hcasim::emu
