#pragma once
/// \file The emulated CM's blocking frame exchange (IBA 12.6: REQ, REP, RTU, REJ, DREQ; emu/wire.h
/// has their layout): one frame written or read whole on a QP's stream before its I/O starts, by
/// the side that connects (rdma_connect(3), sdp::Device::connect) and the side that accepts.
#include <chrono>
#include <span>
#include <string>

#include <utility>  // before Asio: Boost 1.74 asio/awaitable.hpp uses std::exchange without it

#include <boost/asio.hpp>

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

}  // namespace hcasim::emu
