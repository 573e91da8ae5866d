#include "emu/cm.h"

#include <poll.h>

#include <array>
#include <vector>

#include <fmt/format.h>

#include "sdp/device.h"

namespace hcasim::emu {

namespace asio = boost::asio;
using asio::ip::tcp;

Packet read_frame_until(tcp::socket& s, std::chrono::steady_clock::time_point deadline, const std::string& peer) {
  auto read_exact = [&](uint8_t* out, size_t n) {
    size_t got = 0;
    while (got < n) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) throw sdp::DeviceError(fmt::format("{}: no answer within {} ms during connection setup", peer, kCmTimeoutMs));
      pollfd pfd{s.native_handle(), POLLIN, 0};
      if (::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) continue;
      boost::system::error_code ec;
      const size_t k = s.read_some(asio::buffer(out + got, n - got), ec);
      if (ec == asio::error::eof) throw sdp::DeviceError(fmt::format("{}: connection closed during connection setup", peer));
      if (ec) throw sdp::DeviceError(fmt::format("{}: {} during connection setup", peer, ec.message()));
      got += k;
    }
  };
  std::array<uint8_t, kLengthSize> len{};
  read_exact(len.data(), len.size());
  try {
    std::vector<uint8_t> body(decode_length(len));
    read_exact(body.data(), body.size());
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
