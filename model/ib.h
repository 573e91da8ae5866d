#pragma once
/// \file InfiniBand link byte accounting: packet headers of RC operations, wire bytes of
/// messages and goodput ceilings. Plain C++, no SimGrid.
///
/// Units: bytes (B), Gbit/s (10^9 bit/s).
///
/// Sources. Primary: InfiniBand Architecture Specification Release 1.2 (IBTA, 2004), Vol. 1
/// ch. 5 (data packet format), 7 (link layer: LRH, VCRC, ICRC), 9 (transport: BTH, RETH,
/// AETH, opcodes), Vol. 2 ch. 5-6 (physical layer: 8b/10b, lane striping, delimiters);
/// members only, so section numbers are those public secondary sources quote. Public
/// secondary sources: T. Shanley (MindShare), "InfiniBand Network Architecture",
/// Addison-Wesley 2002, ch. 21 (packet length rules), ch. 25 (link layer, CRCs, packet
/// delimiters), ch. 26 (physical layer, Skip ordered sets); the header sizes as listed in
/// adcs.restack.tech "InfiniBand Packet Format Reference" (from IBA 1.5 Vol. 1) and in the
/// Wireshark InfiniBand dissector.
///
/// Physical layer: every packet on the wire is framed by a start delimiter (SDP for data
/// packets) and an end delimiter (EGP), one symbol each, which we charge as 2 B per packet
/// (kDelimiterBytes; Shanley ch. 25 "packet delimiters"). A data packet is 4n + 2 bytes
/// (LRH..ICRC are whole DWs, VCRC is 2 B), so with its 2 delimiters it fills whole 4-byte
/// columns of a 4x link and needs no idle padding. Not charged (each < 0.1 % of a saturated
/// link): Skip ordered sets for clock compensation (Shanley ch. 26; the interval, several
/// thousand symbol times, could not be checked in a public source) and link-level
/// flow-control packets.
#include <cstdint>
#include <string_view>

namespace hcasim::model::ib {

/// Lane signalling rate: SDR 2.5, DDR 5.0, QDR 10.0 Gbaud with 8b/10b coding (IBA 1.2
/// Vol. 2); FDR10 10.3125 and FDR 14.0625 Gbaud with 64b/66b coding (IBA 1.3 Vol. 2, as
/// quoted by the Mellanox ConnectX-3 product brief: FDR 4x = 56 Gbit/s signalling).
enum class Speed { SDR, DDR, QDR, FDR10, FDR };

/// "SDR", "DDR", "QDR", "FDR10" or "FDR", case-insensitive; anything else throws
/// hcasim::InputError "ib.speed: 'X' is not SDR, DDR, QDR, FDR10 or FDR".
Speed parse_speed(std::string_view);

/// One IB link.
struct Config {
  Speed speed = Speed::DDR;
  int width = 4;        ///< lanes: 1, 4, 8 or 12 (IBA 1.2 Vol. 2: 1x, 4x, 8x, 12x)
  uint32_t mtu = 2048;  ///< path MTU, B: 256, 512, 1024, 2048 or 4096 (IBA Vol. 1 PMTU values)
};

/// Throws InputError naming the bad field ("ib.width: 3 is not one of 1, 4, 8, 12";
/// "ib.mtu: 300 is not one of 256, 512, 1024, 2048, 4096"; "ib.speed: ...").
void validate(const Config&);

/// The link two ports train to, each port given by its own configuration (its highest speed and
/// width and its MTU): the highest speed both support, a port supporting every speed below its
/// own (Speed is in order of rate, FDR10 below FDR); the widest width both support, a port of
/// width w supporting 1x, 4x and w (IBA 1.2 Vol. 2 ch. 5: link training, LinkWidthSupported;
/// so 8x against 12x trains to 4x); and the smaller MTU (PortInfo NeighborMTU, the path
/// record's MTU). Validates both (validate()'s errors).
Config trained(const Config& a, const Config& b);

/// Signalling rate of the link, Gbit/s: lane rate (2.5/5/10/10.3125/14.0625 Gbaud) * width;
/// 4x = 10/20/40/41.25/56.25.
double signalling_rate_gbps(const Config&);

/// Data rate after line coding, Gbit/s: signalling_rate * 0.8 (8b/10b: SDR, DDR, QDR) or
/// * 64/66 (FDR10, FDR); 4x = 8/16/32/40/54.545. The packet delimiters are charged as 2 B
/// per packet at every speed (at 64b/66b they are control block types; close enough for a
/// per-packet overhead of < 0.1 % of an MTU packet).
double data_rate_gbps(const Config&);

/// RC packet kinds (BTH opcodes, IBA Vol. 1 ch. 9). SEND without immediate data.
enum class Packet {
  SendFirst, SendMiddle, SendLast, SendOnly,
  RdmaWriteFirst, RdmaWriteMiddle, RdmaWriteLast, RdmaWriteOnly,
  RdmaReadRequest,
  RdmaReadResponseFirst, RdmaReadResponseMiddle, RdmaReadResponseLast, RdmaReadResponseOnly,
  Ack
};

/// Non-payload bytes of one packet, B: LRH 8 + BTH 12 + RETH 16 (RDMA WRITE First/Only and
/// RDMA READ Request) + AETH 4 (RDMA READ Response First/Last/Only and Ack) + ICRC 4 +
/// VCRC 2 (IBA Vol. 1 ch. 5, 7.7 LRH, 7.8.1 ICRC, 7.8.2 VCRC, ch. 9 BTH/RETH/AETH). No GRH
/// (local subnet), no immediate data. Excludes the physical-layer delimiters (kDelimiterBytes).
/// Send* and RdmaWriteMiddle/Last and RdmaReadResponseMiddle: 26; RdmaWriteFirst/Only and
/// RdmaReadRequest: 42; RdmaReadResponseFirst/Last/Only and Ack: 30.
uint32_t header_bytes(Packet);

/// Start delimiter + end delimiter, one symbol each, per packet on the wire (see file doc).
inline constexpr uint32_t kDelimiterBytes = 2;

/// Wire bytes of one packet carrying `payload` bytes: header_bytes + payload padded to a
/// multiple of 4 (BTH PadCnt, IBA Vol. 1 ch. 9; Shanley ch. 21: PktLen counts DWs)
/// + kDelimiterBytes.
uint32_t packet_wire_bytes(Packet, uint32_t payload);

/// Packets of a message of `message_bytes` at path MTU `mtu`: ceil(bytes / mtu), and 1 for a
/// zero-length message (a SEND/RDMA WRITE Only packet with no payload; IBA Vol. 1 ch. 9).
/// Throws InputError for an invalid mtu.
uint32_t packets_for(uint64_t message_bytes, uint32_t mtu);

/// Wire bytes of all packets of one SEND message (First/Middle/Last or Only).
uint64_t send_wire_bytes(const Config&, uint64_t message_bytes);
/// Wire bytes of all packets of one RDMA WRITE message (RETH in First/Only).
uint64_t rdma_write_wire_bytes(const Config&, uint64_t message_bytes);
/// Wire bytes of the RDMA READ Request packet (no payload): 42 + 2 = 44.
uint64_t rdma_read_request_wire_bytes();
/// Wire bytes of all response packets of an RDMA READ of `message_bytes` (AETH in
/// First/Last/Only, not in Middle).
uint64_t rdma_read_response_wire_bytes(const Config&, uint64_t message_bytes);
/// Wire bytes of one RC ACK packet: 30 + 2 = 32.
uint64_t ack_wire_bytes();

/// Goodput ceiling of back-to-back SEND messages of `message_bytes`, Gbit/s of payload, from
/// link bytes only: data_rate * message_bytes / send_wire_bytes (Acks travel the other way).
/// DDR 4x MTU 2048, 32 KB: 16 * 32768 / 33216 = 15.784 Gbit/s. 0 for an empty message.
double send_goodput_ceiling_gbps(const Config&, uint64_t message_bytes);

}  // namespace hcasim::model::ib
