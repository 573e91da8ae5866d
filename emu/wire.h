#pragma once
/// \file The emulated HCA's packets between processes: one frame per IB packet on a TCP stream
/// (or in a UDP datagram, for UD), carrying the IBA headers the transport reads (IBA 1.2.1
/// chapter 9: BTH, RETH, AETH, ImmDt, AtomicETH, AtomicAckETH, DETH) and the CM messages that set
/// a connection up (chapter 12: REQ, REP, RTU, REJ, DREQ). Messages are cut into packets of the
/// QP's path MTU by the HCA core (hca/requester.h), so a frame's payload is at most 4096 bytes.
/// TCP keeps frames in order and intact; the ICRC trailer is there for the injected corruption
/// (fault.corrupt, hca/wire_faults.h), which the receiver detects and drops silently as an HCA drops
/// a packet failing its ICRC check (IBA 7.8.1). Frame layout, big-endian:
///
///     offset size  field
///     0      4     length of what follows (12 + the op's extension and payload + 4)
///     4      1     op (BTH OpCode, IBA table 38, for transport packets; 0xC0.. for CM messages)
///     5      1     bit 7: BTH AckReq; the other bits reserved, 0
///     6      2     BTH P_Key (IBA 9.2: the sending QP's, from its P_Key index); reserved, 0, on
///                  CM messages
///     8      4     dest_qpn (BTH DestQP, 24 bits used)
///     12     4     psn (BTH PSN, 24 bits used; CM REQ: the sender's starting PSN)
///     16     4     XRCETH (XRC requests only, IBA 1.2.1 annex A14): 8 reserved bits (0), the
///                  XRC SRQ number (24 bits); the extensions below follow it
///     16     ...   by op:
///        SEND First, Middle, Last, Only               payload
///        SEND Last / Only with Immediate              ImmDt (u32), payload
///        SEND Last / Only with Invalidate (RC)        IETH (the R_Key to invalidate, u32), payload
///        RDMA WRITE First, Only                       RETH (va u64, rkey u32, dma_len u32), payload
///        RDMA WRITE Only with Immediate               RETH, ImmDt, payload
///        RDMA WRITE Middle, Last                      payload
///        RDMA WRITE Last with Immediate               ImmDt, payload
///        RDMA READ Request                            RETH
///        RDMA READ Response First, Last, Only         AETH (syndrome u8, msn u24), payload
///        RDMA READ Response Middle                    payload
///        Acknowledge                                  AETH
///        CmpSwap, FetchAdd                            AtomicETH (va u64, rkey u32, swap u64, compare / add u64)
///        Atomic Acknowledge                           AETH, AtomicAckETH (the original remote data u64)
///        UD SEND Only (with Immediate)                DETH (Q_Key u32, source QP u32), the source
///                                                     LID (u16; the LRH's SLID) and the destination
///                                                     LID (u16; the LRH's DLID: a multicast LID for
///                                                     a multicast send), ImmDt, payload
///        CmReq, CmRep                                 local_qpn u32, the sender's port LID u16 (the
///                                                     REQ's Primary Local Port LID; the REP's LRH
///                                                     SLID), private data length u16, private data
///        CmSidrReq, CmSidrRep                         status u8 (SIDR REP: IBA 12.11.2's, 0 valid),
///                                                     QPN u24, Q_Key u32, the sender's port LID u16,
///                                                     private data length u16, private data
///        CmRej                                        reason length u16, reason text
///        CmRtu, CmDreq                                nothing
///     end-4  4     ICRC: CRC-32 (zlib's, IEEE 802.3) of the bytes from offset 4 to here
/// The UC opcodes (0x20..0x2B) carry what their RC counterparts carry, and so do the XRC ones
/// (0xA0..0xB7: table 38's 101xxxxx, RC's low bits; Packet::xrc), whose requests add the XRCETH.
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "hca/packet.h"
#include "hca/rc.h"

namespace hcasim::emu {

/// A frame that cannot be decoded: the message names the field and the values.
class WireError : public std::runtime_error {
 public:
  explicit WireError(const std::string& what) : std::runtime_error(what) {}
};

/// Frame kinds: the transport packets carry their BTH OpCode (IBA 9.2.1, table 38: hca::Opcode's
/// values), the CM messages codes of the vendor range.
enum class Op : uint8_t {
  SendFirst = 0x00,
  SendMiddle = 0x01,
  SendLast = 0x02,
  SendLastWithImm = 0x03,
  SendOnly = 0x04,
  SendOnlyWithImm = 0x05,
  RdmaWriteFirst = 0x06,
  RdmaWriteMiddle = 0x07,
  RdmaWriteLast = 0x08,
  RdmaWriteLastWithImm = 0x09,
  RdmaWriteOnly = 0x0A,
  RdmaWriteOnlyWithImm = 0x0B,
  RdmaReadRequest = 0x0C,
  RdmaReadResponseFirst = 0x0D,
  RdmaReadResponseMiddle = 0x0E,
  RdmaReadResponseLast = 0x0F,
  RdmaReadResponseOnly = 0x10,
  Acknowledge = 0x11,
  AtomicAcknowledge = 0x12,
  CompareSwap = 0x13,
  FetchAdd = 0x14,
  SendLastWithInvalidate = 0x16,
  SendOnlyWithInvalidate = 0x17,
  UdSendOnly = 0x64,
  UdSendOnlyWithImm = 0x65,
  CmReq = 0xC0,
  CmRep = 0xC1,
  CmRtu = 0xC2,
  CmRej = 0xC3,
  CmDreq = 0xC4,
  /// IBA 12.11: Service ID Resolution, the UD counterpart of REQ / REP (the RDMA CM's
  /// RDMA_PS_UDP connect and accept).
  CmSidrReq = 0xC5,
  CmSidrRep = 0xC6,
};
/// True for a CM message's op (the rest are transport packets, hca::Opcode).
constexpr bool is_cm(Op op) { return static_cast<uint8_t>(op) >= 0xC0; }
const char* op_name(Op op);

/// AETH syndromes (IBA 9.3.5, 9.7.5.2.1): the HCA core's (hca/rc.h).
namespace aeth = hca::aeth;

/// Private data limits of the IB CM messages (IBA 12.6: REQ 92 B, REP 196 B, REJ 148 B).
inline constexpr size_t kReqPrivateData = 92;
inline constexpr size_t kRepPrivateData = 196;
inline constexpr size_t kRejReason = 148;
/// Private data limits of SIDR_REQ and SIDR_REP (IBA 12.11.1, 12.11.2), bytes.
inline constexpr size_t kSidrReqPrivateData = 216;
inline constexpr size_t kSidrRepPrivateData = 136;
/// Largest payload of one packet, bytes: the largest IB MTU (IBA 7.7.3: 4096).
inline constexpr uint32_t kMaxPayload = 4096;
/// Largest RDMA length a RETH may carry, bytes (IBA 9.4.4: 2^31).
inline constexpr uint64_t kMaxDmaLength = uint64_t{1} << 31;
/// Bytes of the length field and of the fixed header after it.
inline constexpr size_t kLengthSize = 4;
inline constexpr size_t kHeaderSize = 12;
/// Bytes of the ICRC trailer (IBA 7.8.1: the invariant CRC is 32 bits).
inline constexpr size_t kIcrcSize = 4;

/// One decoded frame. Fields not carried by `op` are 0 / empty.
struct Packet {
  Op op = Op::SendOnly;
  uint32_t dest_qpn = 0;
  uint32_t psn = 0;
  bool ack_req = false;   ///< BTH AckReq
  uint16_t pkey = 0;      ///< BTH P_Key (transport packets; CM messages carry none)
  uint64_t va = 0;        ///< RETH virtual address
  uint32_t rkey = 0;      ///< RETH R_Key
  uint32_t dma_len = 0;   ///< RETH DMA length, bytes
  uint8_t syndrome = 0;   ///< AETH
  uint32_t msn = 0;       ///< AETH MSN (24 bits)
  uint32_t local_qpn = 0; ///< CM REQ/REP: the sender's QPN
  uint32_t imm = 0;       ///< ImmDt (the WITH_IMM ops), as the sender's wr.imm_data
  uint32_t ieth_rkey = 0; ///< IETH (SEND Last / Only with Invalidate): the R_Key to invalidate
  uint64_t swap = 0;      ///< AtomicETH SwapData (CompareSwap)
  uint64_t compare = 0;   ///< AtomicETH CompareData (CompareSwap) / the addend (FetchAdd)
  uint64_t orig = 0;      ///< AtomicAckETH: the remote data before the atomic
  uint32_t qkey = 0;      ///< DETH Q_Key (UD), SIDR REP's Q_Key; the DETH's source QP is local_qpn
  uint16_t slid = 0;      ///< UD, SIDR: the sender port's LID
  uint16_t dlid = 0;      ///< UD: the destination LID (unicast, or a multicast LID 0xC000-0xFFFE)
  uint8_t status = 0;     ///< SIDR REP: IBA 12.11.2's status (0 valid, 1 service ID not supported, 2 rejected)
  /// XRC transport (BTH OpCode 0xA0 | op's low bits; `op` holds the RC opcode): `op` must be an
  /// RC one. Its requests carry the XRCETH, `xrc_srqn` (24 bits).
  bool xrc = false;
  uint32_t xrc_srqn = 0;  ///< XRCETH XRC SRQ number
  std::vector<uint8_t> payload{};  ///< data, CM private data or the REJ reason
};

/// The whole frame, length field first, ICRC last. Throws WireError when a field is out of range (a
/// payload over kMaxPayload, private data over the CM limit, an RDMA WRITE Only whose RETH length
/// is not its payload's, a payload on an op that carries none, a P_Key on a CM message, XRC on
/// an op that is not RC's, an XRC SRQ number over 24 bits).
std::vector<uint8_t> encode(const Packet& p);
/// The length field of a frame: the byte count of what follows it. Throws WireError when it is
/// shorter than the fixed header and the ICRC or longer than the largest frame.
uint32_t decode_length(std::span<const uint8_t, kLengthSize> length_field);
/// True when `body` (what follows the length field) ends with the CRC-32 of its other bytes.
/// False for a body too short to hold an ICRC.
bool icrc_ok(std::span<const uint8_t> body);
/// Decodes what follows the length field; the ICRC is not checked (icrc_ok does that, first).
/// Throws WireError naming the fault (unknown op, truncated extension, lengths that disagree,
/// reserved bits set, the XRCETH's among them).
Packet decode(std::span<const uint8_t> body);

}  // namespace hcasim::emu
