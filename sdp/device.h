#pragma once
/// \file An HCA opened in wall-clock time (emulate or hardware mode), as the SDP programs use
/// it: its memory, and connections set up the way SDP specifies (IBTA Annex A4): an RC QP per
/// connection, connected through the CM with the Hello in the REQ private data and the
/// HelloAck in the REP private data. Two implementations: emu/ (the emulated HCA between
/// processes over TCP) and hw/ (libibverbs + librdmacm).
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/error.h"
#include "model/fault.h"
#include "sdp/process_memory.h"
#include "sdp/verbs.h"

namespace hcasim::sdp {

/// A failure the user must hear about in one line (no device, connection refused, rejected,
/// the peer went away): the message names what and where.
class DeviceError : public std::runtime_error {
 public:
  explicit DeviceError(const std::string& what) : std::runtime_error(one_line(what)) {}
};

/// Sizes of a connection's QP and CQ (ibv_qp_cap, ibv_create_cq's cqe).
struct QpCaps {
  uint32_t max_send_wr = 128;
  uint32_t max_recv_wr = 128;
  uint32_t cq_entries = 512;  ///< send + receive completions share the CQ
};

/// One established RC connection: its QP and CQ, and the CQ's completion events.
class Connection {
 public:
  virtual ~Connection() = default;
  /// The QP and CQ (the engine's verbs interface). Thread-safe: the engine calls it from the
  /// application's thread and the completion thread, one at a time.
  virtual Verbs& verbs() = 0;
  /// Blocks for at most timeout_ms until the CQ's next completion event (ibv_get_cq_event,
  /// acknowledged with ibv_ack_cq_events). Returns true when one came; the CQ is disarmed
  /// until req_notify_cq() again.
  virtual bool wait_cq_event(int timeout_ms) = 0;
  /// Waits at most timeout_ms until every send WR posted so far has completed (so that the
  /// last messages, DisConn among them, leave before the process does). True when drained.
  virtual bool drain(int timeout_ms) = 0;
  /// Why the QP went to the ERROR state, for messages ("" while it has not, or when the
  /// backend cannot tell).
  virtual std::string error_reason() { return ""; }
  /// What the injected faults did on this side of the connection (the emulated HCA's sending
  /// side: lost, corrupted, ... frames, retransmissions), so far; zeros on a real HCA.
  virtual model::FaultStats fault_stats() { return {}; }
  /// The other end, "ADDRESS:PORT", for messages ("" when the backend cannot tell).
  virtual std::string peer() const { return ""; }
  /// Disconnects (rdma_disconnect / the CM's DREQ): the QP goes to ERROR, its WRs flush, and
  /// the peer's QP goes to ERROR too. Idempotent.
  virtual void disconnect() = 0;
};

/// Builds the REQ private data once the QP exists (its receives may be posted by then).
using MakeRequest = std::function<std::vector<uint8_t>(Verbs&)>;
/// Takes a REQ's private data on the passive side, once the QP exists, and returns the REP's;
/// throws (any std::exception) to reject the connection with that message.
using AnswerRequest = std::function<std::vector<uint8_t>(Verbs&, std::span<const uint8_t>)>;

/// A connection request taken off a Listener and not answered yet. Its setup (the CM's REQ,
/// REP and RTU, the QP) runs in accept(), on whatever thread calls it, so that a peer that is
/// slow or silent during setup holds up only its own request, not the listener. Destroying it
/// without accept() drops the request (the peer sees its connection close or a REJ).
class Incoming {
 public:
  virtual ~Incoming() = default;
  /// The requesting peer, "ADDRESS:PORT" ("" when the backend cannot tell), for messages.
  virtual std::string peer() const = 0;
  /// Completes the setup and answers the request with `answer`. Once only. Throws DeviceError when
  /// the peer was silent past the CM timeout, sent something else than the setup, was
  /// rejected by `answer` (the peer gets the REJ), or the setup failed.
  virtual std::unique_ptr<Connection> accept(const QpCaps& caps, const AnswerRequest& answer) = 0;
};

/// A listening endpoint (rdma_listen).
class Listener {
 public:
  virtual ~Listener() = default;
  /// The port it listens on (the one chosen by the system when 0 was asked).
  virtual uint16_t port() const = 0;
  /// Waits for the next connection request and returns it unanswered (Incoming::accept sets
  /// it up). Thread-safe against Incoming::accept of earlier requests on other threads, not
  /// against itself. Throws DeviceError when listening failed.
  virtual std::unique_ptr<Incoming> next() = 0;
};

/// An opened HCA.
class Device {
 public:
  virtual ~Device() = default;
  /// What was opened ("emu", or the rdma-core device's name).
  virtual std::string name() const = 0;
  /// The process memory the QPs may access (one arena; the engine's dma_mr covers it).
  virtual ProcessMemory& memory() = 0;
  /// Active open to host:port (rdma_resolve_addr, rdma_resolve_route, rdma_connect). Calls
  /// `request` once the QP exists; returns the connection, with the REP's private data in
  /// `reply`. Throws DeviceError when the peer refuses, rejects (with its reason) or is unreachable.
  virtual std::unique_ptr<Connection> connect(const std::string& host, uint16_t port, const QpCaps& caps,
                                              const MakeRequest& request, std::vector<uint8_t>& reply) = 0;
  /// Listens on bind_addr:port (port 0: any free port). Throws DeviceError when the address is in
  /// use or cannot be bound.
  virtual std::unique_ptr<Listener> listen(const std::string& bind_addr, uint16_t port) = 0;
};

}  // namespace hcasim::sdp
