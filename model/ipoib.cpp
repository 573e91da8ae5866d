/// \file IPoIB framing; every formula and constant is sourced in ipoib.h.
#include "model/ipoib.h"

#include <stdexcept>
#include <string>

#include "model/error.h"
#include "model/params.h"

namespace hcasim::model::ipoib {

namespace {
constexpr uint32_t kUdHeaders = 8 + 12 + 8 + 4 + 2;  // LRH + BTH + DETH + ICRC + VCRC
constexpr uint32_t kMinMtu = 576;
}  // namespace

Mode parse_mode(std::string_view s) {
  if (s == "datagram") return Mode::Datagram;
  if (s == "connected") return Mode::Connected;
  throw InputError("ipoib.mode: '" + std::string(s) + "' is not datagram or connected");
}

void validate(const Config& c) {
  if (c.mode != Mode::Datagram && c.mode != Mode::Connected)
    throw InputError("ipoib.mode: " + std::to_string(static_cast<int>(c.mode)) + " is not datagram or connected");
  if (c.connected_mtu < kMinMtu || c.connected_mtu > kMaxConnectedMtu)
    throw InputError("ipoib.connected_mtu: " + std::to_string(c.connected_mtu) + " is not in 576..65520");
}

uint32_t interface_mtu(const Config& c, const ib::Config& link) {
  validate(c);
  ib::validate(link);
  return c.mode == Mode::Datagram ? link.mtu - kEncapBytes : c.connected_mtu;
}

uint32_t tcp_mss(const Config& c, const ib::Config& link) {
  return interface_mtu(c, link) - kIpTcpHeaderBytes - (c.tcp_timestamps ? kTcpTimestampBytes : 0);
}

uint64_t ud_packet_wire_bytes(const ib::Config& link, uint32_t frame_bytes) {
  ib::validate(link);
  if (frame_bytes > link.mtu)
    throw std::invalid_argument("ud_packet_wire_bytes: frame of " + std::to_string(frame_bytes) +
                                " B exceeds the IB MTU " + std::to_string(link.mtu));
  return kUdHeaders + (uint64_t{frame_bytes} + 3) / 4 * 4 + ib::kDelimiterBytes;
}

uint64_t ip_packet_wire_bytes(const Config& c, const ib::Config& link, uint32_t ip_bytes) {
  const uint32_t mtu = interface_mtu(c, link);
  if (ip_bytes > mtu)
    throw std::invalid_argument("ip_packet_wire_bytes: IP packet of " + std::to_string(ip_bytes) +
                                " B exceeds the interface MTU " + std::to_string(mtu));
  if (c.mode == Mode::Datagram) return ud_packet_wire_bytes(link, ip_bytes + kEncapBytes);
  return ib::send_wire_bytes(link, uint64_t{ip_bytes} + kEncapBytes);
}

double tcp_goodput_ceiling_gbps(const Config& c, const ib::Config& link) {
  const uint32_t mss = tcp_mss(c, link);
  const uint32_t ip = mss + kIpTcpHeaderBytes + (c.tcp_timestamps ? kTcpTimestampBytes : 0);
  return ib::data_rate_gbps(link) * mss / static_cast<double>(ip_packet_wire_bytes(c, link, ip));
}

}  // namespace hcasim::model::ipoib

namespace hcasim::model::schema {
namespace {
using namespace decl;
constexpr ParamSpec kIpoib[] = {
    one_of("ipoib.mode", "", ParamType::Text, "datagram|connected", "IPoIB mode (/sys/class/net/ibN/mode)",
           ParamWhen::Ipoib),
    integer("ipoib.connected_mtu", "B", 576, ipoib::kMaxConnectedMtu,
            "interface MTU in connected mode (576: the IPv4 minimum, RFC 791; 65520: Linux IPOIB_CM_MTU)",
            ParamWhen::Ipoib),
    integer("ipoib.send_ring", "", 2, 65536,
            "IPoIB send queue (send_queue_size; 2: Linux IPOIB_MIN_QUEUE_SIZE; 65536: the largest HCA queue)",
            ParamWhen::Ipoib),
    integer("ipoib.recv_ring", "", 2, 65536, "IPoIB receive queue (recv_queue_size)", ParamWhen::Ipoib),
    flag("socket.tcp_timestamps", "TCP timestamps option on every segment (net.ipv4.tcp_timestamps)", ParamWhen::Ipoib),
};
}  // namespace
std::span<const ParamSpec> ipoib() { return kIpoib; }
}  // namespace hcasim::model::schema
