#include "emu/cm.h"

#include <poll.h>

#include <array>
#include <vector>

#include <fmt/format.h>

#include "sdp/device.h"

namespace hcasim::emu {

namespace asio = boost::asio;
using asio::ip::tcp;

void read_exact_until(tcp::socket& s, std::span<uint8_t> out, std::chrono::steady_clock::time_point deadline,
                      int timeout_ms, const std::string& peer) {
  size_t got = 0;
  while (got < out.size()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      throw sdp::DeviceError(fmt::format("{}: no answer within {} ms during connection setup", peer, timeout_ms));
    pollfd pfd{s.native_handle(), POLLIN, 0};
    if (::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) continue;
    boost::system::error_code ec;
    const size_t k = s.read_some(asio::buffer(out.data() + got, out.size() - got), ec);
    if (ec == asio::error::eof) throw sdp::DeviceError(fmt::format("{}: connection closed during connection setup", peer));
    if (ec) throw sdp::DeviceError(fmt::format("{}: {} during connection setup", peer, ec.message()));
    got += k;
  }
}

Packet read_frame_until(tcp::socket& s, std::chrono::steady_clock::time_point deadline, const std::string& peer) {
  std::array<uint8_t, kLengthSize> len{};
  read_exact_until(s, len, deadline, kCmTimeoutMs, peer);
  try {
    std::vector<uint8_t> body(decode_length(len));
    read_exact_until(s, body, deadline, kCmTimeoutMs, peer);
    if (!icrc_ok(body)) throw WireError("bad ICRC");  // the CM's frames are not fault-injected
    return decode(body);
  } catch (const WireError& e) {
    throw sdp::DeviceError(fmt::format("{}: malformed CM message: {}", peer, e.what()));
  }
}

bool is_local_address(const asio::ip::address& a) {
  if (a.is_loopback()) return true;
  if (a.is_v6() && a.to_v6().is_v4_mapped())
    return is_local_address(asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6()));
  if (a.is_unspecified()) return true;  // 0.0.0.0 and :: reach this machine
  asio::io_context io;
  asio::ip::udp::socket probe(io);
  boost::system::error_code ec;
  probe.open(a.is_v4() ? asio::ip::udp::v4() : asio::ip::udp::v6(), ec);
  if (!ec) probe.bind(asio::ip::udp::endpoint(a, 0), ec);
  return !ec;
}

void cm_connect_handshake(tcp::socket& s, const SubnetSecret& key, const std::string& peer) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kHandshakeTimeoutMs);
  Challenge challenge{};
  read_exact_until(s, challenge, deadline, kHandshakeTimeoutMs, peer);
  const StreamReq req{};
  const Nonce mine = make_nonce();
  const Answer answer = make_answer(key, challenge, mine, req);
  boost::system::error_code ec;
  asio::write(s, asio::buffer(answer), ec);
  if (ec) throw sdp::DeviceError(fmt::format("{}: {} during connection setup", peer, ec.message()));
  Proof proof{};
  read_exact_until(s, proof, deadline, kHandshakeTimeoutMs, peer);
  if (!check_proof(key, challenge, mine, req, proof))
    throw sdp::DeviceError(fmt::format("{}: the listener does not know the emulated subnet's secret", peer));
}

void cm_accept_handshake(tcp::socket& s, const SubnetSecret& key, const std::string& peer) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kHandshakeTimeoutMs);
  const Challenge challenge = make_nonce();
  boost::system::error_code ec;
  asio::write(s, asio::buffer(challenge), ec);
  if (ec) throw sdp::DeviceError(fmt::format("{}: {} during connection setup", peer, ec.message()));
  Answer answer{};
  read_exact_until(s, answer, deadline, kHandshakeTimeoutMs, peer);
  Nonce theirs{};
  const std::optional<StreamReq> req = check_answer(key, challenge, answer, theirs);
  if (!req)
    throw sdp::DeviceError(fmt::format("{}: a process of this machine that does not know the emulated subnet's secret",
                                       peer));
  const Proof proof = make_proof(key, challenge, theirs, *req);
  asio::write(s, asio::buffer(proof), ec);
  if (ec) throw sdp::DeviceError(fmt::format("{}: {} during connection setup", peer, ec.message()));
}

void write_frame(tcp::socket& s, const Packet& p, const std::string& peer) {
  boost::system::error_code ec;
  asio::write(s, asio::buffer(encode(p)), ec);
  if (ec) throw sdp::DeviceError(fmt::format("{}: {} during connection setup", peer, ec.message()));
}

}  // namespace hcasim::emu
