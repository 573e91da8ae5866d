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

void write_frame(tcp::socket& s, const Packet& p, const std::string& peer) {
  boost::system::error_code ec;
  asio::write(s, asio::buffer(encode(p)), ec);
  if (ec) throw sdp::DeviceError(fmt::format("{}: {} during connection setup", peer, ec.message()));
}

}  // namespace hcasim::emu
