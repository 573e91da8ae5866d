#pragma once
/// \file One SDP connection in wall-clock time: the engine's socket (sdp::SdpSocket) on an
/// sdp::Device's connection, set up as SDP specifies (Hello in the CM REQ, HelloAck in the
/// REP; IBTA Annex A4), with the thread that takes the CQ's completion events and runs the
/// engine's completion work (sdp_work) the way the interrupt does in the kernel.
#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "sdp/device.h"
#include "rt/wall_host.h"
#include "sdp/socket.h"

namespace hcasim::rt {

/// QP sizes for an SDP socket with `config`'s rings: the send queue holds the tx ring, the
/// receive queue the rx ring, the CQ both.
sdp::QpCaps sdp_qp_caps(const sdp::SdpConfig& config);

/// A connected SDP socket. Every method takes the host's engine lock. Errors of the engine (the
/// peer aborted, a completion error) come out as Error with the QP's reason when the backend
/// knows it, else as sdp::ProtocolError; a misuse as sdp::VerbsError.
class SdpConnection {
 public:
  /// Active open to host:port: creates the socket, sends its Hello, takes the HelloAck.
  /// Throws Error (refused, rejected, unreachable) or sdp::ProtocolError (a bad HelloAck).
  static std::unique_ptr<SdpConnection> connect(sdp::Device& device, WallHost& host, const std::string& peer_host,
                                                uint16_t port, const sdp::SdpConfig& config);
  /// Passive open of a request taken off a Listener: completes its setup and answers its Hello
  /// with a HelloAck (a malformed Hello is rejected with the decoder's message and throws
  /// Error).
  static std::unique_ptr<SdpConnection> accept(WallHost& host, sdp::Incoming& request, const sdp::SdpConfig& config);
  /// Stops the completion thread and disconnects (the QP goes to ERROR).
  ~SdpConnection();
  SdpConnection(const SdpConnection&) = delete;
  SdpConnection& operator=(const SdpConnection&) = delete;

  /// send(2) of len bytes at `user` (an address in the device's memory).
  uint64_t send(sdp::Addr user, uint64_t len);
  /// recv(2): at most len bytes into `user`; 0 at the end of the stream.
  uint64_t recv(sdp::Addr user, uint64_t len);
  /// recv() until exactly `len` bytes are at `user` (MSG_WAITALL); false when the stream ended
  /// before.
  bool recv_exact(sdp::Addr user, uint64_t len);
  /// shutdown(SHUT_WR): DisConn after the queued data.
  void close();
  /// Waits at most timeout_ms until everything posted has left and been acknowledged, then
  /// disconnects. Call after close() and the peer's end of stream.
  void finish(int timeout_ms);
  sdp::SdpStats stats();
  /// The connection's fault counters on this side (Connection::fault_stats).
  model::FaultStats fault_stats() { return conn_->fault_stats(); }
  /// The other end, "ADDRESS:PORT" ("" when the device cannot tell).
  std::string peer() const { return conn_->peer(); }

 private:
  SdpConnection(WallHost& host, const sdp::SdpConfig& config) : host_(host), config_(config) {}
  void start_completion_thread();
  /// Runs f() under the engine lock; an engine error gets the QP's reason appended (Error).
  template <class F>
  auto explained(F&& f);

  WallHost& host_;
  sdp::SdpConfig config_;
  std::unique_ptr<sdp::Connection> conn_;
  std::unique_ptr<sdp::SdpSocket> socket_;
  std::thread completion_;
  std::atomic<bool> stop_{false};
};

}  // namespace hcasim::rt
