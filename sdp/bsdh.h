#pragma once
/// \file SDP wire headers: the Base Sockets Direct Header (BSDH) that starts every SDP message,
/// the Hello / HelloAck connection headers carried in the IB CM REQ / REP private data, and the
/// ChRcvBuf / ChRcvBufAck header. Big-endian on the wire throughout.
///
/// Sources (the IBTA Annex A4 is for members; the layouts below were checked against public
/// implementations of it):
///  - OFED 1.3 ib_sdp, drivers/infiniband/ulp/sdp/sdp.h (2008): struct sdp_bsdh, sdp_hh, sdp_hah,
///    enum sdp_mid, enum sdp_flags; sdp_cma.c: SDP_MAJV_MINV, the BSDH len of Hello/HelloAck;
///    sdp_bcopy.c: struct sdp_chrecvbuf.
///  - OpenIB gen1 SDP (Topspin, 2005), drivers/infiniband/ulp/sdp/sdp_msgs.h: the full MID list
///    of Annex A4 v1.1, BSDH flag bits (OOB_PRES 0, OOB_PEND 1, REQ_PIPE 2), HH/HAH reserved tails.
///  - Wireshark epan/dissectors/packet-infiniband_sdp.c (Mellanox, 2010): MID names, flag 0x04
///    "REQ_PIPE", the majv/minv and ipv/cap nibbles.
///
/// No SimGrid and no rdma-core here (docs/design.md, layers).
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>

namespace hcasim::sdp {

/// A malformed SDP message from the peer. what() is one line naming the header and the field,
/// e.g. "BSDH: unknown MID 0x42".
class ProtocolError : public std::runtime_error {
 public:
  explicit ProtocolError(const std::string& what) : std::runtime_error(what) {}
};

/// Message identifier, BSDH byte 0 (Annex A4 BSDH MID table; OpenIB sdp_msgs.h SDP_MID_*;
/// OFED 1.3 sdp.h enum sdp_mid uses Hello, HelloAck, DisConn, ChRcvBuf, ChRcvBufAck, Data).
/// 0x0F..0xFC are reserved or experimental and treated as unknown.
enum class Mid : uint8_t {
  Hello = 0x00,            ///< connection request, in the CM REQ private data
  HelloAck = 0x01,         ///< connection reply, in the CM REP private data
  DisConn = 0x02,          ///< orderly close of the send direction (like a TCP FIN)
  AbortConn = 0x03,        ///< abortive close
  SendSM = 0x04,           ///< request to switch the peer to buffered-send mode
  RdmaWrCompl = 0x05,      ///< RDMA Write into a SinkAvail buffer completed
  RdmaRdCompl = 0x06,      ///< RDMA Read of a SrcAvail buffer completed
  ModeChange = 0x07,       ///< flow-control mode change
  SrcAvailCancel = 0x08,   ///< cancel outstanding SrcAvail
  SinkAvailCancel = 0x09,  ///< cancel outstanding SinkAvail
  SinkCancelAck = 0x0A,    ///< acknowledges SinkAvailCancel
  ChRcvBuf = 0x0B,         ///< ask the peer to change its receive buffer size
  ChRcvBufAck = 0x0C,      ///< reply with the actual receive buffer size
  SuspComm = 0x0D,         ///< suspend communication (socket duplication)
  SuspCommAck = 0x0E,      ///< acknowledges SuspComm
  SinkAvail = 0xFD,        ///< data sink advertises a buffer for RDMA Write
  SrcAvail = 0xFE,         ///< data source advertises a buffer for RDMA Read (zero copy)
  Data = 0xFF,             ///< data, or a bare BSDH carrying a credit update
};

/// Every defined MID, in numeric order (for loops and tests).
inline constexpr std::array<Mid, 18> kAllMids = {
    Mid::Hello,           Mid::HelloAck,        Mid::DisConn,       Mid::AbortConn,
    Mid::SendSM,          Mid::RdmaWrCompl,     Mid::RdmaRdCompl,   Mid::ModeChange,
    Mid::SrcAvailCancel,  Mid::SinkAvailCancel, Mid::SinkCancelAck, Mid::ChRcvBuf,
    Mid::ChRcvBufAck,     Mid::SuspComm,        Mid::SuspCommAck,   Mid::SinkAvail,
    Mid::SrcAvail,        Mid::Data};

/// Name of a MID as the annex spells it ("Hello", "ChRcvBufAck", ...); "unknown" for a value
/// outside the enum.
const char* mid_name(Mid mid);

/// True when `mid` is one of the 18 MIDs defined by Annex A4.
bool is_known_mid(uint8_t mid);

/// Base Sockets Direct Header: 16 bytes at the start of every SDP message (Annex A4 BSDH;
/// OFED 1.3 sdp.h struct sdp_bsdh). Layout, big-endian:
///   0 mid u8 | 1 flags u8 | 2 bufs u16 | 4 len u32 | 8 mseq u32 | 12 mseq_ack u32
struct Bsdh {
  /// flags bit 0: out-of-band (urgent) data present in this message (SDP_OOB_PRES, sdp.h).
  static constexpr uint8_t kOobPres = 0x01;
  /// flags bit 1: out-of-band data pending (SDP_OOB_PEND, sdp.h).
  static constexpr uint8_t kOobPend = 0x02;
  /// flags bit 2: request a change to pipelined mode (REQ_PIPE: OpenIB sdp_msgs.h
  /// SDP_MSG_FLAG_REQ_PIPE, Wireshark "Request change to Pipelined Mode"; OFED 1.3 never sets it).
  static constexpr uint8_t kReqPipe = 0x04;
  /// Wire size of the BSDH, bytes.
  static constexpr size_t kSize = 16;

  Mid mid = Mid::Data;    ///< message identifier
  uint8_t flags = 0;      ///< kOobPres | kOobPend | kReqPipe; other bits reserved (zero)
  uint16_t bufs = 0;      ///< receive buffers the sender has posted (credits it offers), count
  uint32_t len = kSize;   ///< whole message length including this header, bytes
  uint32_t mseq = 0;      ///< sequence number of this message
  uint32_t mseq_ack = 0;  ///< mseq of the last message the sender received

  /// Writes the 16 bytes, big-endian. Does not check the fields.
  void encode(std::span<uint8_t, kSize> out) const;
  /// The 16 encoded bytes.
  std::array<uint8_t, kSize> to_bytes() const;
  /// Reads a BSDH from the first 16 bytes of `in` (more may follow: the message body).
  /// Throws ProtocolError when `in` is shorter than 16 bytes ("BSDH: 9 bytes, need 16"), the
  /// MID is not one of Annex A4's ("BSDH: unknown MID 0x42"), or len is below 16 ("BSDH: len 8
  /// shorter than the 16-byte header"). Does not compare len with in.size(): see check_len().
  static Bsdh decode(std::span<const uint8_t> in);
  /// Checks len against the bytes the receive completion reported. Throws ProtocolError
  /// "BSDH: len 100 but 64 bytes received" when they differ.
  void check_len(size_t received) const;

  bool operator==(const Bsdh&) const = default;
};

/// An IPv4 or IPv6 address as carried in the Hello header: 16 bytes in network order; an IPv4
/// address sits in the last 4 bytes after 12 zero bytes (OFED union cma_ip_addr: pad[3], addr).
using IpField = std::array<uint8_t, 16>;

/// The 16-byte address field for the IPv4 address `addr` (host order, e.g. 0xC0A80001 for
/// 192.168.0.1).
IpField ipv4_field(uint32_t addr);

/// Hello message: BSDH + Hello Header (HH), sent by the active side in the IB CM REQ private
/// data (Annex A4 HH; OFED 1.3 sdp.h struct sdp_hh). Layout, big-endian:
///   0 BSDH (mid Hello) | 16 majv_minv u8 | 17 ipv_cap u8 | 18 reserved u8 | 19 max_adverts u8
///   20 desremrcvsz u32 | 24 localrcvsz u32 | 28 port u16 | 30 reserved u16
///   32 src_addr 16 B | 48 dst_addr 16 B                       = 64 B defined (kSize)
/// then 28 reserved zero bytes up to the 92-byte CM REQ private data (kPrivateDataSize; OpenIB
/// sdp_msgs.h rsvd_3[28]). OFED 1.3 sets bsdh.len = 92 (sdp_cma.c: 16 + SDP_HH_SIZE 76).
struct HelloHeader {
  /// Bytes defined by the header, BSDH included.
  static constexpr size_t kSize = 64;
  /// Size of the IB CM REQ private data that carries it (IBTA vol. 1, CM REQ), bytes.
  static constexpr size_t kPrivateDataSize = 92;
  /// majv_minv sent by OFED 1.3: major 2, minor 2 (SDP_MAJV_MINV 0x22, sdp_cma.c).
  static constexpr uint8_t kMajvMinvOfed13 = 0x22;

  Bsdh bsdh{.mid = Mid::Hello, .len = kPrivateDataSize};
  uint8_t majv_minv = kMajvMinvOfed13;  ///< bits 7..4 major version, 3..0 minor version
  uint8_t ipv_cap = 0x40;     ///< bits 7..4 IP version (4 or 6), 3..0 capability flags
  uint8_t max_adverts = 1;    ///< max outstanding zero-copy advertisements (> 0), count
  uint32_t desremrcvsz = 0;   ///< desired size of the peer's receive buffers, bytes
  uint32_t localrcvsz = 0;    ///< size of this side's receive buffers, bytes (BSDH included)
  uint16_t port = 0;          ///< local (source) TCP-style port
  IpField src_addr{};         ///< source IP address
  IpField dst_addr{};         ///< destination IP address

  uint8_t major_version() const { return static_cast<uint8_t>(majv_minv >> 4); }
  uint8_t minor_version() const { return majv_minv & 0x0F; }
  uint8_t ip_version() const { return static_cast<uint8_t>(ipv_cap >> 4); }

  /// Writes the 64 defined bytes (reserved bytes zero), big-endian.
  void encode(std::span<uint8_t, kSize> out) const;
  std::array<uint8_t, kSize> to_bytes() const;
  /// Reads a Hello from `in` (at least 64 bytes; the 92-byte private data is fine). Throws
  /// ProtocolError on a bad BSDH (see Bsdh::decode), on fewer than 64 bytes ("HH: 40 bytes,
  /// need 64"), a MID other than Hello ("HH: MID Data (0xFF), expected Hello") or a BSDH len
  /// below 64 ("HH: len 16 shorter than the 64-byte Hello header").
  static HelloHeader decode(std::span<const uint8_t> in);

  bool operator==(const HelloHeader&) const = default;
};

/// HelloAck message: BSDH + HelloAck Header (HAH), sent by the passive side in the IB CM REP
/// private data (Annex A4 HAH; OFED 1.3 sdp.h struct sdp_hah). Layout, big-endian:
///   0 BSDH (mid HelloAck) | 16 majv_minv u8 | 17 ipv_cap u8 | 18 reserved u8
///   19 ext_max_adverts u8 | 20 actrcvsz u32                   = 24 B defined (kSize)
/// then reserved zero bytes up to the 196-byte CM REP private data (kPrivateDataSize; OpenIB
/// sdp_msgs.h rsvd_2[172]). OFED 1.3 sets bsdh.len = 196 (sdp_cma.c: 16 + SDP_HAH_SIZE 180).
struct HelloAckHeader {
  /// Bytes defined by the header, BSDH included.
  static constexpr size_t kSize = 24;
  /// Size of the IB CM REP private data that carries it (IBTA vol. 1, CM REP), bytes.
  static constexpr size_t kPrivateDataSize = 196;

  Bsdh bsdh{.mid = Mid::HelloAck, .len = kPrivateDataSize};
  uint8_t majv_minv = HelloHeader::kMajvMinvOfed13;  ///< bits 7..4 major, 3..0 minor version
  uint8_t ipv_cap = 0;          ///< bits 7..4 IP version, 3..0 capabilities (OFED 1.3 sends 0)
  uint8_t ext_max_adverts = 1;  ///< max outstanding zero-copy advertisements, count
  uint32_t actrcvsz = 0;        ///< actual size of this side's receive buffers, bytes

  uint8_t major_version() const { return static_cast<uint8_t>(majv_minv >> 4); }
  uint8_t minor_version() const { return majv_minv & 0x0F; }

  /// Writes the 24 defined bytes (reserved bytes zero), big-endian.
  void encode(std::span<uint8_t, kSize> out) const;
  std::array<uint8_t, kSize> to_bytes() const;
  /// Reads a HelloAck from `in` (at least 24 bytes). Throws ProtocolError on a bad BSDH, on
  /// fewer than 24 bytes ("HAH: 20 bytes, need 24"), a MID other than HelloAck, or a BSDH len
  /// below 24 ("HAH: len 16 shorter than the 24-byte HelloAck header").
  static HelloAckHeader decode(std::span<const uint8_t> in);

  bool operator==(const HelloAckHeader&) const = default;
};

/// ChRcvBuf / ChRcvBufAck message: BSDH + one u32 (Annex A4 CRBH / CRBAH; OFED 1.3
/// sdp_bcopy.c struct sdp_chrecvbuf, sent with htonl). Layout, big-endian:
///   0 BSDH (mid ChRcvBuf or ChRcvBufAck) | 16 size u32        = 20 B (kSize, also bsdh.len)
/// In ChRcvBuf, `size` is the receive buffer size asked of the peer; in ChRcvBufAck, the size
/// the sender's receive buffers now have (bytes; OFED 1.3 counts payload pages, no BSDH).
struct ChRcvBufHeader {
  /// Wire size, BSDH included, bytes.
  static constexpr size_t kSize = 20;

  Bsdh bsdh{.mid = Mid::ChRcvBuf, .len = kSize};
  uint32_t size = 0;  ///< receive buffer size, bytes

  /// Writes the 20 bytes, big-endian.
  void encode(std::span<uint8_t, kSize> out) const;
  std::array<uint8_t, kSize> to_bytes() const;
  /// Reads a ChRcvBuf or ChRcvBufAck from `in` (at least 20 bytes). Throws ProtocolError on a
  /// bad BSDH, on fewer than 20 bytes ("CRBH: 16 bytes, need 20"), another MID ("CRBH: MID Data
  /// (0xFF), expected ChRcvBuf or ChRcvBufAck") or a len below 20.
  static ChRcvBufHeader decode(std::span<const uint8_t> in);

  bool operator==(const ChRcvBufHeader&) const = default;
};

}  // namespace hcasim::sdp
