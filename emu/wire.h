#pragma once
/// \file The emulated HCA's packets between processes: one frame per IB message on a TCP
/// stream, carrying the IBA headers the emulation needs (IBA 1.2.1 chapter 9: BTH, RETH,
/// AETH) and the CM messages that set a connection up (chapter 12: REQ, REP, RTU, REJ, DREQ).
///
/// The emulation does not split messages into MTU-sized packets: a message is one frame, and a
/// "packet" of IBA chapter 9 (its PSN, its ACK, its fate under fault injection, model/fault.h)
/// is one frame here. TCP keeps frames in order and intact; the ICRC trailer is there for the
/// injected corruption (fault.corrupt), which the receiver detects and drops silently as an HCA
/// drops a packet failing its ICRC check (IBA 7.8.1). Frame layout, big-endian:
///
///     offset size  field
///     0      4     length of what follows (12 + the op's extension and payload + 4)
///     4      1     op (BTH OpCode for RC transport ops, 0xC0.. for CM messages)
///     5      3     reserved, 0
///     8      4     dest_qpn (BTH DestQP, 24 bits used)
///     12     4     psn (BTH PSN, 24 bits used; CM REQ/REP: the sender's starting PSN)
///     16     ...   by op:
///        SendOnly              payload
///        SendOnlyWithImm       ImmDt (u32), payload
///        RdmaWriteOnly         RETH (va u64, rkey u32, dma_len u32), payload of dma_len bytes
///        RdmaWriteOnlyWithImm  RETH, ImmDt, payload of dma_len bytes
///        CompareSwap, FetchAdd AtomicETH (va u64, rkey u32, swap u64, compare / add u64)
///        AtomicAcknowledge     AETH, AtomicAckETH (the original remote data u64)
///        UdSendOnly            DETH (Q_Key u32, source QP u32) and the source LID (u16, 2 B
///                              reserved; the LRH's SLID), payload; a UDP datagram, not a
///                              stream frame (Hca's datagram path, emu/subnet.h)
///        UdSendOnlyWithImm     the same, ImmDt, payload
///        RdmaReadRequest       RETH
///        RdmaReadResponseOnly  AETH (syndrome u8, msn u24), payload
///        Acknowledge           AETH
///        CmReq, CmRep          local_qpn u32, private data length u16, private data
///        CmRej                 reason length u16, reason text
///        CmRtu, CmDreq         nothing
///     end-4  4     ICRC: CRC-32 (zlib's, IEEE 802.3) of the bytes from offset 4 to here
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "hca/rc.h"

namespace hcasim::emu {

/// A frame that cannot be decoded: the message names the field and the values.
class WireError : public std::runtime_error {
 public:
  explicit WireError(const std::string& what) : std::runtime_error(what) {}
};

/// Frame kinds. Transport ops carry the RC OpCode values of IBA 9.2.1 (Table 38).
enum class Op : uint8_t {
  SendOnly = 0x04,
  SendOnlyWithImm = 0x05,
  RdmaWriteOnly = 0x0A,
  RdmaWriteOnlyWithImm = 0x0B,
  RdmaReadRequest = 0x0C,
  RdmaReadResponseOnly = 0x10,
  Acknowledge = 0x11,
  AtomicAcknowledge = 0x12,
  CompareSwap = 0x13,
  FetchAdd = 0x14,
  UdSendOnly = 0x64,
  UdSendOnlyWithImm = 0x65,
  CmReq = 0xC0,
  CmRep = 0xC1,
  CmRtu = 0xC2,
  CmRej = 0xC3,
  CmDreq = 0xC4,
};
const char* op_name(Op op);

/// AETH syndromes (IBA 9.3.5, 9.7.5.2.1): the HCA core's (hca/rc.h).
namespace aeth = hca::aeth;

/// Private data limits of the IB CM messages (IBA 12.6: REQ 92 B, REP 196 B, REJ 148 B).
inline constexpr size_t kReqPrivateData = 92;
inline constexpr size_t kRepPrivateData = 196;
inline constexpr size_t kRejReason = 148;
/// Largest message the emulation carries in one frame, bytes (a real HCA's max_msg_sz is 2^31;
/// the emulator holds a whole message in memory).
inline constexpr uint32_t kMaxMessage = 16u << 20;
/// Largest UD payload, bytes: the largest IB MTU (4096; a UD message is one packet).
inline constexpr uint32_t kMaxUdPayload = 4096;
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
  uint64_t va = 0;        ///< RETH virtual address
  uint32_t rkey = 0;      ///< RETH R_Key
  uint32_t dma_len = 0;   ///< RETH DMA length, bytes
  uint8_t syndrome = 0;   ///< AETH
  uint32_t msn = 0;       ///< AETH MSN (24 bits)
  uint32_t local_qpn = 0; ///< CM REQ/REP: the sender's QPN
  uint32_t imm = 0;       ///< ImmDt (the WITH_IMM ops), as the sender's wr.imm_data
  uint64_t swap = 0;      ///< AtomicETH SwapData (CompareSwap)
  uint64_t compare = 0;   ///< AtomicETH CompareData (CompareSwap) / the addend (FetchAdd)
  uint64_t orig = 0;      ///< AtomicAckETH: the remote data before the atomic
  uint32_t qkey = 0;      ///< DETH Q_Key (UD); the DETH's source QP is local_qpn
  uint16_t slid = 0;      ///< UD: the sender port's LID
  std::vector<uint8_t> payload{};  ///< data, CM private data or the REJ reason
};

/// The whole frame, length field first, ICRC last. Throws WireError when a field is out of range (a
/// payload over kMaxMessage, private data over the CM limit, a RETH length that does not match
/// the payload).
std::vector<uint8_t> encode(const Packet& p);
/// The length field of a frame: the byte count of what follows it. Throws WireError when it is
/// shorter than the fixed header and the ICRC or longer than the largest frame.
uint32_t decode_length(std::span<const uint8_t, kLengthSize> length_field);
/// True when `body` (what follows the length field) ends with the CRC-32 of its other bytes.
/// False for a body too short to hold an ICRC.
bool icrc_ok(std::span<const uint8_t> body);
/// Decodes what follows the length field; the ICRC is not checked (icrc_ok does that, first).
/// Throws WireError naming the fault (unknown op, truncated extension, lengths that disagree,
/// reserved bits set).
Packet decode(std::span<const uint8_t> body);

}  // namespace hcasim::emu
