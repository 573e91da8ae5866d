#include "emu/emu_device.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "emu/adapter.h"
#include "emu/auth.h"
#include "emu/cloexec.h"
#include "emu/cm.h"
#include "emu/qp.h"
#include "emu/wire.h"
#include "model/error.h"

namespace hcasim::emu {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {
std::string endpoint_text(const tcp::socket& s) {
  boost::system::error_code ec;
  const auto ep = s.remote_endpoint(ec);
  return ec ? std::string("peer") : fmt::format("{}:{}", ep.address().to_string(), ep.port());
}
}  // namespace

// ---- the device ------------------------------------------------------------------------------

class EmuDevice final : public sdp::Device {
 public:
  EmuDevice(uint64_t memory_bytes, const model::FaultConfig& faults, const model::RcRetry& retry)
      : memory_(memory_bytes), hca_(&memory_, faults, retry) {}
  std::string name() const override { return "emu"; }
  sdp::ProcessMemory& memory() override { return memory_; }
  std::unique_ptr<sdp::Connection> connect(const std::string& host, uint16_t port, const sdp::QpCaps& caps,
                                          const sdp::MakeRequest& request, std::vector<uint8_t>& reply) override;
  std::unique_ptr<sdp::Listener> listen(const std::string& bind_addr, uint16_t port) override;
  Hca& hca() { return hca_; }
  asio::io_context& io() { return hca_.io(); }
  /// The subnet's secret (emu/subnet.h), read at the first CM stream between two processes of
  /// this machine (cm_connect_handshake). Throws sdp::DeviceError when it cannot be used.
  const SubnetSecret& secret() {
    std::lock_guard g(secret_lock_);
    if (!secret_) {
      auth_init();
      secret_ = subnet_secret();
    }
    return *secret_;
  }

 private:
  sdp::ProcessMemory memory_;
  Hca hca_;  // after memory_: its QPs close before the arena goes
  std::mutex secret_lock_;
  std::optional<SubnetSecret> secret_;
};
/// sdp::Connection over a Qp: closing it closes the QP's socket.
class EmuConnection final : public sdp::Connection {
 public:
  EmuConnection(std::shared_ptr<Qp> qp, std::string peer) : qp_(std::move(qp)), peer_(std::move(peer)) {}
  ~EmuConnection() override { qp_->close(); }
  sdp::Verbs& verbs() override { return *qp_; }
  bool wait_cq_event(int timeout_ms) override { return qp_->wait_cq_event(timeout_ms); }
  bool drain(int timeout_ms) override { return qp_->drain(timeout_ms); }
  void disconnect() override { qp_->disconnect(); }
  std::string error_reason() override { return qp_->reason(); }
  model::FaultStats fault_stats() override { return qp_->fault_stats(); }
  std::string peer() const override { return peer_; }

 private:
  std::shared_ptr<Qp> qp_;
  std::string peer_;
};

/// The passive side: next() takes TCP connections as they come and hands each over at once;
/// its CM handshake runs in EmuIncoming::accept, on the caller's thread, with its own
/// kCmTimeoutMs from the TCP accept. A peer that connects and says nothing, or starts a frame
/// and stalls, holds up only its own request, not the listener (a client connecting meanwhile
/// would otherwise wait out the whole CM timeout).
class EmuListener final : public sdp::Listener {
 public:
  EmuListener(EmuDevice& dev, tcp::acceptor acceptor) : dev_(dev), acceptor_(std::move(acceptor)) {}
  uint16_t port() const override { return acceptor_.local_endpoint().port(); }
  std::unique_ptr<sdp::Incoming> next() override;

 private:
  EmuDevice& dev_;
  tcp::acceptor acceptor_;
};

/// An accepted TCP connection whose CM REQ has not been read yet.
class EmuIncoming final : public sdp::Incoming {
 public:
  EmuIncoming(EmuDevice& dev, tcp::socket socket, std::string peer, std::chrono::steady_clock::time_point deadline)
      : dev_(dev), socket_(std::move(socket)), peer_(std::move(peer)), deadline_(deadline) {}
  std::string peer() const override { return peer_; }
  std::unique_ptr<sdp::Connection> accept(const sdp::QpCaps& caps, const sdp::AnswerRequest& answer) override;

 private:
  EmuDevice& dev_;
  tcp::socket socket_;
  std::string peer_;
  std::chrono::steady_clock::time_point deadline_;
};

// ---- connection setup ------------------------------------------------------------------------

std::unique_ptr<sdp::Connection> EmuDevice::connect(const std::string& host, uint16_t port, const sdp::QpCaps& caps,
                                                   const sdp::MakeRequest& request, std::vector<uint8_t>& reply) {
  const std::string peer = fmt::format("{}:{}", host, port);
  tcp::socket socket(io());
  boost::system::error_code ec;
  tcp::resolver resolver(io());
  const auto endpoints = resolver.resolve(host, std::to_string(port), ec);
  if (ec) throw sdp::DeviceError(fmt::format("cannot resolve {}: {}", host, ec.message()));
  // Each try on a socket made close-on-exec (emu/cloexec.h), as asio::connect's are not.
  ec = asio::error::host_not_found;
  for (const auto& e : endpoints) {
    boost::system::error_code ignored;
    socket.close(ignored);
    open_cloexec(socket, e.endpoint().protocol(), ec);
    if (!ec) socket.connect(e.endpoint(), ec);
    if (!ec) break;
  }
  if (ec) throw sdp::DeviceError(fmt::format("cannot connect to {}: {}", peer, ec.message()));
  socket.set_option(tcp::no_delay(true), ec);
  if (const auto to = socket.remote_endpoint(ec); !ec && is_local_address(to.address())) {
    try {
      cm_connect_handshake(socket, secret(), peer);
    } catch (const sdp::DeviceError&) {
      hca_.count_stranger();
      throw;
    }
  }
  auto qp = hca_.create_qp(caps);
  qp->attach(std::move(socket));
  qp->to_init();
  const std::vector<uint8_t> private_data = request(*qp);
  if (private_data.size() > kReqPrivateData)
    throw sdp::DeviceError(fmt::format("{}: {} B of REQ private data, the CM carries {}", peer, private_data.size(), kReqPrivateData));
  write_frame(qp->socket(), Packet{.op = Op::CmReq, .local_qpn = qp->qp_num(), .payload = private_data}, peer);
  const Packet rep = read_frame_until(qp->socket(), std::chrono::steady_clock::now() + std::chrono::milliseconds(kCmTimeoutMs), peer);
  if (rep.op == Op::CmRej)
    throw sdp::DeviceError(fmt::format("{} rejected the connection: {}", peer, std::string(rep.payload.begin(), rep.payload.end())));
  if (rep.op != Op::CmRep) throw sdp::DeviceError(fmt::format("{}: {} where a CM REP was expected", peer, op_name(rep.op)));
  reply = rep.payload;
  write_frame(qp->socket(), Packet{.op = Op::CmRtu, .dest_qpn = rep.local_qpn}, peer);
  qp->to_rts(rep.local_qpn);
  return std::make_unique<EmuConnection>(std::move(qp), peer);
}

std::unique_ptr<sdp::Listener> EmuDevice::listen(const std::string& bind_addr, uint16_t port) {
  boost::system::error_code ec;
  const auto addr = asio::ip::make_address(bind_addr.empty() ? "0.0.0.0" : bind_addr, ec);
  if (ec) throw sdp::DeviceError(fmt::format("cannot listen on '{}': not an IP address", bind_addr));
  tcp::acceptor acceptor(io());
  const tcp::endpoint ep(addr, port);
  open_cloexec(acceptor, ep.protocol(), ec);
  if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor.bind(ep, ec);
  if (!ec) acceptor.listen(8, ec);
  if (ec == boost::system::errc::address_not_available)  // -L names an address this machine lacks: bad input
    throw InputError(fmt::format("cannot listen on {}:{}: {} (not an address of this machine)", addr.to_string(), port,
                                 ec.message()));
  if (ec) throw sdp::DeviceError(fmt::format("cannot listen on {}:{}: {}", addr.to_string(), port, ec.message()));
  return std::make_unique<EmuListener>(*this, std::move(acceptor));
}

std::unique_ptr<sdp::Incoming> EmuListener::next() {
  tcp::socket socket(dev_.io());
  boost::system::error_code ec;
  do accept_cloexec(acceptor_, socket, ec);  // blocks: the acceptor is a blocking one
  while (ec == asio::error::interrupted || ec == asio::error::connection_aborted);
  if (ec) throw sdp::DeviceError(fmt::format("accept on port {}: {}", port(), ec.message()));
  socket.set_option(tcp::no_delay(true), ec);
  std::string peer = endpoint_text(socket);
  return std::make_unique<EmuIncoming>(dev_, std::move(socket), std::move(peer),
                                       std::chrono::steady_clock::now() + std::chrono::milliseconds(kCmTimeoutMs));
}

std::unique_ptr<sdp::Connection> EmuIncoming::accept(const sdp::QpCaps& caps, const sdp::AnswerRequest& answer) {
  const std::string& peer = peer_;
  boost::system::error_code ec;
  if (const auto from = socket_.remote_endpoint(ec); !ec && is_local_address(from.address())) {
    try {
      cm_accept_handshake(socket_, dev_.secret(), peer);
    } catch (const sdp::DeviceError&) {
      dev_.hca().count_stranger();
      throw;
    }
  }
  const Packet req = read_frame_until(socket_, deadline_, peer);
  if (req.op != Op::CmReq) throw sdp::DeviceError(fmt::format("{}: {} where a CM REQ was expected", peer, op_name(req.op)));
  auto qp = dev_.hca().create_qp(caps);
  qp->attach(std::move(socket_));
  qp->to_init();
  std::vector<uint8_t> rep;
  try {
    // The IB CM REQ's private data field is 92 bytes, zero-filled past what the sender put
    // there (an rdma-core peer sends at most 56 with RDMA_PS_TCP): the answer sees all 92.
    std::vector<uint8_t> request = req.payload;
    if (request.size() < kReqPrivateData) request.resize(kReqPrivateData, 0);
    rep = answer(*qp, request);
    if (rep.size() > kRepPrivateData)
      throw sdp::DeviceError(fmt::format("{} B of REP private data, the CM carries {}", rep.size(), kRepPrivateData));
  } catch (const std::exception& e) {
    std::string why = e.what();
    Packet rej{.op = Op::CmRej};
    rej.payload.assign(why.begin(), why.begin() + static_cast<long>(std::min(why.size(), kRejReason)));
    boost::system::error_code ignored;
    asio::write(qp->socket(), asio::buffer(encode(rej)), ignored);
    qp->close();
    throw sdp::DeviceError(fmt::format("rejected the connection from {}: {}", peer, why));
  }
  write_frame(qp->socket(), Packet{.op = Op::CmRep, .dest_qpn = req.local_qpn, .local_qpn = qp->qp_num(), .payload = rep},
              peer);
  const Packet rtu = read_frame_until(qp->socket(), deadline_, peer);
  if (rtu.op != Op::CmRtu) throw sdp::DeviceError(fmt::format("{}: {} where a CM RTU was expected", peer, op_name(rtu.op)));
  qp->to_rts(req.local_qpn);
  return std::make_unique<EmuConnection>(std::move(qp), peer);
}

// ---- public ----------------------------------------------------------------------------------

std::unique_ptr<sdp::Device> open_emu_device(uint64_t memory_bytes, const model::FaultConfig& faults,
                                            const model::RcRetry& retry) {
  try {
    return std::make_unique<EmuDevice>(memory_bytes, faults, retry);
  } catch (const sdp::MemoryError& e) {
    throw sdp::DeviceError(fmt::format("emulated HCA: {}", e.what()));
  }
}

void set_rnr_retry(sdp::Verbs& verbs, uint8_t rnr_retry) {
  auto* qp = dynamic_cast<Qp*>(&verbs);
  if (qp == nullptr) throw sdp::VerbsError("set_rnr_retry: not a QP of the emulated HCA");
  qp->set_rnr_retry(rnr_retry);
}

std::string error_reason(sdp::Verbs& verbs) {
  auto* qp = dynamic_cast<Qp*>(&verbs);
  return qp == nullptr ? std::string() : qp->reason();
}

model::FaultStats fault_stats(sdp::Verbs& verbs) {
  auto* qp = dynamic_cast<Qp*>(&verbs);
  return qp == nullptr ? model::FaultStats{} : qp->fault_stats();
}

uint64_t icrc_drops(sdp::Verbs& verbs) {
  auto* qp = dynamic_cast<Qp*>(&verbs);
  return qp == nullptr ? 0 : qp->icrc_drops();
}

}  // namespace hcasim::emu
