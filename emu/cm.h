#pragma once
/// \file The emulated CM's blocking frame exchange (IBA 12.6: REQ, REP, RTU, REJ, DREQ; emu/wire.h
/// has their layout): one frame written or read whole on a QP's stream before its I/O starts, by
/// the side that connects (rdma_connect(3), sdp::Device::connect) and the side that accepts.
#include <chrono>
#include <span>
#include <string>

#include <utility>  // before Asio: Boost 1.74 asio/awaitable.hpp uses std::exchange without it

#include <boost/asio.hpp>

#include "emu/auth.h"
#include "emu/wire.h"

namespace hcasim::emu {

/// How long a CM exchange (REQ -> REP -> RTU) may take before the side waiting gives up, ms.
inline constexpr int kCmTimeoutMs = 10000;

/// Reads one whole frame from `s` (blocking, not on the I/O thread) within `deadline`: the CM
/// messages, before the QP's I/O runs. Throws sdp::DeviceError naming `peer` on timeout, EOF, a
/// socket error or a malformed frame.
Packet read_frame_until(boost::asio::ip::tcp::socket& s, std::chrono::steady_clock::time_point deadline,
                        const std::string& peer);
/// Reads exactly out.size() bytes from `s` (blocking, not on the I/O thread) within `deadline`.
/// Throws sdp::DeviceError naming `peer` on timeout (saying `timeout_ms`), EOF or a socket error.
void read_exact_until(boost::asio::ip::tcp::socket& s, std::span<uint8_t> out,
                      std::chrono::steady_clock::time_point deadline, int timeout_ms, const std::string& peer);
/// Writes one whole frame to `s` (blocking). Throws sdp::DeviceError naming `peer` on a socket error.
void write_frame(boost::asio::ip::tcp::socket& s, const Packet& p, const std::string& peer);

/// Whether `a` is an address of this machine: a loopback address (127.0.0.0/8, ::1, and their
/// IPv4-mapped forms), or one a socket can be bound to (bind(2) fails EADDRNOTAVAIL for the
/// others). Any local process can reach a listener on such an address.
bool is_local_address(const boost::asio::ip::address& a);

/// The CM stream's handshake (emu/auth.h, the subnet streams' messages with zero CM REQ
/// fields), run before the CM REQ on a stream between two processes of this machine: whoever
/// connects to an emulated CM listener from this machine proves that it knows the subnet's
/// secret, and the listener proves it back. A stream from another host has no secret to prove
/// (the subnet is one machine's) and runs none.
///
/// The connector's side on `s`: reads the challenge, answers, checks the proof, all within
/// kHandshakeTimeoutMs. Throws sdp::DeviceError naming `peer` when the listener does not answer
/// in time, closes, or does not prove the secret ("... does not know the emulated subnet's secret").
void cm_connect_handshake(boost::asio::ip::tcp::socket& s, const SubnetSecret& key, const std::string& peer);
/// The listener's side, blocking (sdp::Device's server, on the connection's own thread): sends
/// the challenge, checks the answer (kHandshakeTimeoutMs), sends the proof. Throws
/// sdp::DeviceError naming `peer` when the answer does not come in time or its MAC is wrong.
void cm_accept_handshake(boost::asio::ip::tcp::socket& s, const SubnetSecret& key, const std::string& peer);

}  // namespace hcasim::emu
