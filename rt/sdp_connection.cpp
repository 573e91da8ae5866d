#include "rt/sdp_connection.h"

#include <mutex>

#include <fmt/format.h>

#include "sdp/bsdh.h"

namespace hcasim::rt {

sdp::QpCaps sdp_qp_caps(const sdp::SdpConfig& config) {
  sdp::QpCaps c;
  c.max_send_wr = config.tx_ring;
  c.max_recv_wr = config.rx_ring;
  c.cq_entries = config.tx_ring + config.rx_ring;
  return c;
}

std::unique_ptr<SdpConnection> SdpConnection::connect(sdp::Device& device, WallHost& host, const std::string& peer_host,
                                                      uint16_t port, const sdp::SdpConfig& config) {
  std::unique_ptr<SdpConnection> c(new SdpConnection(host, config));
  std::vector<uint8_t> reply;
  c->conn_ = device.connect(peer_host, port, sdp_qp_caps(config),
                            [&](sdp::Verbs& verbs) {
                              std::lock_guard g(host.engine_lock());
                              c->socket_ = std::make_unique<sdp::SdpSocket>(host, verbs, config, "client");
                              return c->socket_->hello(port);
                            },
                            reply);
  {
    std::lock_guard g(host.engine_lock());
    c->socket_->hello_ack(reply);
    c->conn_->verbs().req_notify_cq();
  }
  c->start_completion_thread();
  return c;
}

std::unique_ptr<SdpConnection> SdpConnection::accept(WallHost& host, sdp::Incoming& request,
                                                     const sdp::SdpConfig& config) {
  std::unique_ptr<SdpConnection> c(new SdpConnection(host, config));
  c->conn_ = request.accept(sdp_qp_caps(config), [&](sdp::Verbs& verbs, std::span<const uint8_t> hello) {
    std::lock_guard g(host.engine_lock());
    c->socket_.reset();
    c->socket_ = std::make_unique<sdp::SdpSocket>(host, verbs, config, "server");
    return c->socket_->accept_hello(hello);
  });
  {
    std::lock_guard g(host.engine_lock());
    c->conn_->verbs().req_notify_cq();
  }
  c->start_completion_thread();
  return c;
}

void SdpConnection::start_completion_thread() {
  completion_ = std::thread([this] {
    while (!stop_) {
      if (!conn_->wait_cq_event(50)) continue;
      try {
        std::lock_guard g(host_.engine_lock());
        socket_->on_cq_event();
      } catch (const std::exception&) {
        // The completion work refused by the HCA (a backend's bug; a QP in ERROR flushes
        // posts rather than refuse them): the connection goes down, its WRs flush, and the
        // engine tells the application through the completion errors that follow.
        conn_->disconnect();
      }
    }
  });
}

SdpConnection::~SdpConnection() {
  if (conn_) conn_->disconnect();
  stop_ = true;
  if (completion_.joinable()) completion_.join();
  conn_.reset();  // before the socket: no completion refers to it any more
}

template <class F>
auto SdpConnection::explained(F&& f) {
  try {
    std::lock_guard g(host_.engine_lock());
    return f();
  } catch (const sdp::ProtocolError& e) {
    const std::string why = conn_->error_reason();
    if (why.empty()) throw;
    throw sdp::DeviceError(fmt::format("{} (the QP went to ERROR: {})", e.what(), why));
  }
}

uint64_t SdpConnection::send(sdp::Addr user, uint64_t len) {
  return explained([&] { return socket_->send(user, len); });
}

uint64_t SdpConnection::recv(sdp::Addr user, uint64_t len) {
  return explained([&] { return socket_->recv(user, len); });
}

bool SdpConnection::recv_exact(sdp::Addr user, uint64_t len) {
  for (uint64_t got = 0; got < len;) {
    const uint64_t n = recv(user + got, len - got);
    if (n == 0) return false;
    got += n;
  }
  return true;
}

void SdpConnection::close() {
  std::lock_guard g(host_.engine_lock());
  socket_->close();
}

void SdpConnection::finish(int timeout_ms) {
  conn_->drain(timeout_ms);
  conn_->disconnect();
}

sdp::SdpStats SdpConnection::stats() {
  std::lock_guard g(host_.engine_lock());
  return socket_->stats();
}

}  // namespace hcasim::rt
