/// \file InfiniBand byte accounting; every formula and constant is sourced in ib.h.
#include "model/ib.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>
#include <string>

#include "model/error.h"
#include "model/params.h"

namespace hcasim::model::ib {
namespace {

constexpr uint32_t kLrh = 8, kBth = 12, kReth = 16, kAeth = 4, kIcrc = 4, kVcrc = 2;

void check_mtu(uint32_t mtu) {
  switch (mtu) {
    case 256: case 512: case 1024: case 2048: case 4096: return;
    default:
      throw InputError("ib.mtu: " + std::to_string(mtu) +
                       " is not one of 256, 512, 1024, 2048, 4096");
  }
}

uint64_t pad4(uint64_t n) { return (n + 3) / 4 * 4; }

/// Wire bytes of a message cut into MTU packets, given the header of each packet position.
uint64_t message_wire_bytes(const Config& c, uint64_t len, Packet first, Packet middle,
                            Packet last, Packet only) {
  validate(c);
  const uint64_t n = packets_for(len, c.mtu);
  uint64_t headers = 0;
  if (n == 1) {
    headers = header_bytes(only);
  } else {
    headers = header_bytes(first) + (n - 2) * header_bytes(middle) + header_bytes(last);
  }
  // Only the last packet can be short; MTUs are multiples of 4, so it alone is padded.
  return headers + pad4(len) + n * kDelimiterBytes;
}

}  // namespace

Speed parse_speed(std::string_view s) {
  std::string up(s);
  for (char& ch : up) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  if (up == "SDR") return Speed::SDR;
  if (up == "DDR") return Speed::DDR;
  if (up == "QDR") return Speed::QDR;
  if (up == "FDR10") return Speed::FDR10;
  if (up == "FDR") return Speed::FDR;
  throw InputError("ib.speed: '" + std::string(s) + "' is not SDR, DDR, QDR, FDR10 or FDR");
}

void validate(const Config& c) {
  if (c.speed != Speed::SDR && c.speed != Speed::DDR && c.speed != Speed::QDR && c.speed != Speed::FDR10 &&
      c.speed != Speed::FDR)
    throw InputError("ib.speed: " + std::to_string(static_cast<int>(c.speed)) +
                     " is not SDR, DDR, QDR, FDR10 or FDR");
  if (c.width != 1 && c.width != 4 && c.width != 8 && c.width != 12)
    throw InputError("ib.width: " + std::to_string(c.width) + " is not one of 1, 4, 8, 12");
  check_mtu(c.mtu);
}

Config trained(const Config& a, const Config& b) {
  validate(a);
  validate(b);
  Config t;
  t.speed = std::min(a.speed, b.speed);
  // Widths a port supports: 1x, 4x and its own.
  auto supports = [](int port, int w) { return w == port || (w < port && (w == 1 || w == 4)); };
  for (int w : {12, 8, 4, 1})
    if (supports(a.width, w) && supports(b.width, w)) {
      t.width = w;
      break;
    }
  t.mtu = std::min(a.mtu, b.mtu);
  return t;
}

double signalling_rate_gbps(const Config& c) {
  validate(c);
  double lane = 0;
  switch (c.speed) {
    case Speed::SDR: lane = 2.5; break;
    case Speed::DDR: lane = 5.0; break;
    case Speed::QDR: lane = 10.0; break;
    case Speed::FDR10: lane = 10.3125; break;
    case Speed::FDR: lane = 14.0625; break;
  }
  return lane * c.width;
}

double data_rate_gbps(const Config& c) {
  const bool b64b66 = c.speed == Speed::FDR10 || c.speed == Speed::FDR;
  return signalling_rate_gbps(c) * (b64b66 ? 64.0 / 66.0 : 8.0 / 10.0);
}

uint32_t header_bytes(Packet p) {
  const uint32_t base = kLrh + kBth + kIcrc + kVcrc;  // 26
  switch (p) {
    case Packet::SendFirst:
    case Packet::SendMiddle:
    case Packet::SendLast:
    case Packet::SendOnly:
    case Packet::RdmaWriteMiddle:
    case Packet::RdmaWriteLast:
    case Packet::RdmaReadResponseMiddle: return base;
    case Packet::RdmaWriteFirst:
    case Packet::RdmaWriteOnly:
    case Packet::RdmaReadRequest: return base + kReth;
    case Packet::RdmaReadResponseFirst:
    case Packet::RdmaReadResponseLast:
    case Packet::RdmaReadResponseOnly:
    case Packet::Ack: return base + kAeth;
  }
  throw std::invalid_argument("ib: unknown Packet");
}

uint32_t packet_wire_bytes(Packet p, uint32_t payload) {
  return header_bytes(p) + static_cast<uint32_t>(pad4(payload)) + kDelimiterBytes;
}

uint32_t packets_for(uint64_t message_bytes, uint32_t mtu) {
  check_mtu(mtu);
  if (message_bytes == 0) return 1;
  return static_cast<uint32_t>((message_bytes + mtu - 1) / mtu);
}

uint64_t send_wire_bytes(const Config& c, uint64_t n) {
  return message_wire_bytes(c, n, Packet::SendFirst, Packet::SendMiddle, Packet::SendLast,
                            Packet::SendOnly);
}

uint64_t rdma_write_wire_bytes(const Config& c, uint64_t n) {
  return message_wire_bytes(c, n, Packet::RdmaWriteFirst, Packet::RdmaWriteMiddle,
                            Packet::RdmaWriteLast, Packet::RdmaWriteOnly);
}

uint64_t rdma_read_request_wire_bytes() { return packet_wire_bytes(Packet::RdmaReadRequest, 0); }

uint64_t rdma_read_response_wire_bytes(const Config& c, uint64_t n) {
  return message_wire_bytes(c, n, Packet::RdmaReadResponseFirst,
                            Packet::RdmaReadResponseMiddle, Packet::RdmaReadResponseLast,
                            Packet::RdmaReadResponseOnly);
}

uint64_t ack_wire_bytes() { return packet_wire_bytes(Packet::Ack, 0); }

double send_goodput_ceiling_gbps(const Config& c, uint64_t message_bytes) {
  const double wire = static_cast<double>(send_wire_bytes(c, message_bytes));
  return data_rate_gbps(c) * static_cast<double>(message_bytes) / wire;
}

}  // namespace hcasim::model::ib

namespace hcasim::model::schema {
namespace {
using namespace decl;
constexpr ParamSpec kIb[] = {
    one_of("ib.speed", "", ParamType::Text, "SDR|DDR|QDR|FDR10|FDR",
           "lane signalling rate: 2.5, 5, 10, 10.3125, 14.0625 Gbit/s"),
    one_of("ib.width", "", ParamType::Integer, "1|4|8|12", "lanes of the port (1x, 4x, 8x, 12x)"),
    one_of("ib.mtu", "B", ParamType::Integer, "256|512|1024|2048|4096", "path MTU, the five IBA values"),
    nonneg("ib.propagation", "ns", "one-way cable and switch latency between the two HCAs"),
};
}  // namespace
std::span<const ParamSpec> ib() { return kIb; }
}  // namespace hcasim::model::schema
