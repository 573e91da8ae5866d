#pragma once
/// \file IP over InfiniBand framing: interface MTU and TCP MSS of the two IPoIB modes, and the
/// IB wire bytes of the IP packets they carry. Plain C++, no SimGrid.
///
/// Units: bytes (B), Gbit/s (10^9 bit/s).
///
/// Sources: RFC 4391 (IPoIB over UD: the 4-byte encapsulation header, section 6; the link MTU
/// is the IB MTU less that header), RFC 4755 (IPoIB connected mode over RC); Linux
/// Documentation/infiniband/ipoib.rst ("in datagram mode ... the interface MTU is equal to the
/// IB L2 MTU minus the IPoIB encapsulation header (4 bytes) ... 2048 - 4 = 2044"; connected
/// mode "allows an MTU up to the maximal IP packet size of 64K") and drivers/infiniband/ulp/
/// ipoib/ipoib.h (IPOIB_CM_MTU = 0x10000 - 0x10 = 65520, IPOIB_ENCAP_LEN 4); IBA 1.2 Vol. 1
/// ch. 9 for the UD packet's DETH (8 B: Q_Key and source QP), as model/ib.h for the rest;
/// RFC 791 (IPv4 header 20 B without options), RFC 793 (TCP header 20 B without options),
/// RFC 7323 section 3 (the timestamps option, 10 B padded to 12 with two NOPs, on every
/// segment when both ends enable it: Linux net.ipv4.tcp_timestamps, on by default since 2.2).
#include <cstdint>
#include <string_view>

#include "model/ib.h"

namespace hcasim::model::ipoib {

/// Datagram: a UD QP, one IP packet per IB packet. Connected: an RC QP per peer, one IP packet
/// per RC SEND message (which the HCA cuts into path-MTU packets).
enum class Mode { Datagram, Connected };

/// "datagram" or "connected" (the words of /sys/class/net/ibN/mode); anything else throws
/// hcasim::InputError "ipoib.mode: 'X' is not datagram or connected".
Mode parse_mode(std::string_view);

/// IPoIB encapsulation header before every IP packet: EtherType 2 B + reserved 2 B (RFC 4391
/// section 6; Linux IPOIB_ENCAP_LEN).
inline constexpr uint32_t kEncapBytes = 4;
/// Largest connected-mode MTU Linux accepts: 64 KB - 16 (ipoib.h IPOIB_CM_MTU).
inline constexpr uint32_t kMaxConnectedMtu = 65520;
/// IPv4 (RFC 791) + TCP (RFC 793) headers without options.
inline constexpr uint32_t kIpTcpHeaderBytes = 40;
/// The TCP timestamps option as Linux sends it on every segment: NOP, NOP, kind 8 length 10
/// (RFC 7323 section 3; Linux tcp_options_write TCPOLEN_TSTAMP_ALIGNED = 12).
inline constexpr uint32_t kTcpTimestampBytes = 12;

/// One IPoIB interface.
struct Config {
  Mode mode = Mode::Datagram;
  /// Interface MTU in connected mode, B (576..65520; the `ifconfig ib0 mtu` value). Datagram
  /// mode ignores it: its MTU follows the IB path MTU.
  uint32_t connected_mtu = kMaxConnectedMtu;
  bool tcp_timestamps = true;  ///< net.ipv4.tcp_timestamps (Linux default on)
};

/// Throws InputError naming the field: "ipoib.connected_mtu: 70000 is not in 576..65520"
/// (576: the IPv4 minimum datagram every host must accept, RFC 791; 65520: kMaxConnectedMtu).
void validate(const Config&);

/// Interface MTU, B: datagram = ib.mtu - kEncapBytes (2048 -> 2044); connected =
/// cfg.connected_mtu. Throws InputError for an invalid ib.mtu or Config.
uint32_t interface_mtu(const Config&, const ib::Config&);

/// TCP maximum segment size on the interface, B: MTU - 40 - (12 with timestamps). Datagram at
/// a 2048 B IB MTU: 2044 - 40 - 12 = 1992; connected at 65520: 65468.
uint32_t tcp_mss(const Config&, const ib::Config&);

/// Bytes of one UD SEND packet carrying an IPoIB frame of `frame_bytes` (the IP packet plus
/// kEncapBytes, at most the IB MTU): LRH 8 + BTH 12 + DETH 8 + frame padded to 4 B + ICRC 4 +
/// VCRC 2 + the 2 delimiter symbols (model/ib.h kDelimiterBytes). Unicast inside a subnet: no
/// GRH on the wire. Throws std::invalid_argument when the frame exceeds ib.mtu (the caller's
/// bug: IPoIB never posts one).
uint64_t ud_packet_wire_bytes(const ib::Config&, uint32_t frame_bytes);

/// IB wire bytes of one IP packet of `ip_bytes` (IP header included) in the interface's mode:
/// datagram = ud_packet_wire_bytes(ip_bytes + 4); connected = the RC SEND of ip_bytes + 4
/// (ib::send_wire_bytes). Throws std::invalid_argument when ip_bytes exceeds the MTU.
uint64_t ip_packet_wire_bytes(const Config&, const ib::Config&, uint32_t ip_bytes);

/// Payload ceiling of a bulk TCP stream on the IB link, Gbit/s: full-MSS segments back to back,
/// data_rate x MSS / wire bytes of one MSS segment's packet (the receiver's ACKs travel the
/// other way). SDR 4x datagram 2048: 8 x 1992 / 2084 = 7.647; connected 65520: 8 x 65468 /
/// 66420 = 7.885.
double tcp_goodput_ceiling_gbps(const Config&, const ib::Config&);

}  // namespace hcasim::model::ipoib
