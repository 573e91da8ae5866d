#pragma once
/// \file The transport packets of the HCA core (IBA 1.2.1 chapter 9): the BTH opcodes of table
/// 38 and the header fields the requester, responder and completer read and write. The
/// backends carry them: emu/ encodes one packet per frame (emu/wire.h), sim/ moves a run of
/// consecutive packets of one message as one transfer (a "train") and hands it over whole.
#include <array>
#include <cstdint>

#include "sdp/verbs.h"

namespace hcasim::hca {

/// The GRH's room at the start of a UD receive's buffer (IBA 11.4.1.2: 40 bytes, written whether
/// or not the packet had a GRH); a UD receive's byte_len counts it.
inline constexpr uint32_t kGrhBytes = 40;
/// The DestQP of a multicast packet (IBA 10.5.2.3: 0xFFFFFF; the group's QPs take it).
inline constexpr uint32_t kMulticastQpn = 0xFFFFFF;

/// The default P_Key (IBA 10.9): the default partition, 0x7FFF, with full membership.
inline constexpr uint16_t kDefaultPkey = 0xFFFF;
/// A P_Key's membership bit (bit 15): 1 full member, 0 limited member; bits 14:0 name the
/// partition, 0 none (0x0000 and 0x8000 are the invalid P_Key, IBA 10.9).
inline constexpr uint16_t kPkeyFullMember = 0x8000;

/// IBA 10.9.3: the P_Key `pkt` of a packet's BTH matches the P_Key `qp` of the QP it reaches when
/// both name the same partition, that partition is not the invalid 0, and at least one of them
/// is a full member (two limited members cannot talk). As rxe's pkey_match
/// (drivers/infiniband/sw/rxe/rxe_verbs.h).
constexpr bool pkey_match(uint16_t pkt, uint16_t qp) {
  const uint16_t part = pkt & static_cast<uint16_t>(~kPkeyFullMember);
  return part != 0 && part == (qp & static_cast<uint16_t>(~kPkeyFullMember)) &&
         ((pkt | qp) & kPkeyFullMember) != 0;
}

/// BTH OpCode (IBA 9.2.1, table 38): bits 7:5 the transport (RC 000, UC 001, UD 011), bits 4:0
/// the operation. XRC (101) has RC's operations with its own transport bits: the core holds an
/// XRC packet as its RC opcode with Packet::xrc set (kXrcTransport). The CM messages of the emulator's wire (0xC0..) are outside this table.
enum class Opcode : uint8_t {
  RcSendFirst = 0x00,
  RcSendMiddle = 0x01,
  RcSendLast = 0x02,
  RcSendLastImm = 0x03,
  RcSendOnly = 0x04,
  RcSendOnlyImm = 0x05,
  RcWriteFirst = 0x06,
  RcWriteMiddle = 0x07,
  RcWriteLast = 0x08,
  RcWriteLastImm = 0x09,
  RcWriteOnly = 0x0A,
  RcWriteOnlyImm = 0x0B,
  RcReadRequest = 0x0C,
  RcReadResponseFirst = 0x0D,
  RcReadResponseMiddle = 0x0E,
  RcReadResponseLast = 0x0F,
  RcReadResponseOnly = 0x10,
  RcAcknowledge = 0x11,
  RcAtomicAcknowledge = 0x12,
  RcCompareSwap = 0x13,
  RcFetchAdd = 0x14,
  RcSendLastInv = 0x16,  ///< SEND Last with Invalidate (IBA 9.2.1 table 38; RC only): carries an IETH
  RcSendOnlyInv = 0x17,  ///< SEND Only with Invalidate: carries an IETH
  UcSendFirst = 0x20,
  UcSendMiddle = 0x21,
  UcSendLast = 0x22,
  UcSendLastImm = 0x23,
  UcSendOnly = 0x24,
  UcSendOnlyImm = 0x25,
  UcWriteFirst = 0x26,
  UcWriteMiddle = 0x27,
  UcWriteLast = 0x28,
  UcWriteLastImm = 0x29,
  UcWriteOnly = 0x2A,
  UcWriteOnlyImm = 0x2B,
  UdSendOnly = 0x64,
  UdSendOnlyImm = 0x65,
};

/// The BTH transport bits of XRC (IBA 1.2.1 annex A14, table 38's 101xxxxx): its opcodes are
/// 0xA0 | RC's low five bits.
inline constexpr uint8_t kXrcTransport = 5;
/// "SEND_FIRST", "RDMA_READ_REQUEST", ... (table 38's names, the transport as a prefix).
const char* opcode_name(Opcode op);
/// True when `code` is one of table 38's opcodes above.
bool opcode_known(uint8_t code);

/// The operation of an opcode, whatever its transport and place in the message.
enum class OpKind : uint8_t { Send, Write, ReadRequest, ReadResponse, Ack, AtomicAck, CompareSwap, FetchAdd };

/// The operation of `op`.
constexpr OpKind op_kind(Opcode op) {
  const uint8_t c = static_cast<uint8_t>(op) & 0x1F;
  if (static_cast<uint8_t>(op) >= 0x60) return OpKind::Send;  // UD SEND
  if (c <= 0x05 || c == 0x16 || c == 0x17) return OpKind::Send;  // and SEND with Invalidate
  if (c <= 0x0B) return OpKind::Write;
  if (c == 0x0C) return OpKind::ReadRequest;
  if (c <= 0x10) return OpKind::ReadResponse;
  if (c == 0x11) return OpKind::Ack;
  if (c == 0x12) return OpKind::AtomicAck;
  if (c == 0x13) return OpKind::CompareSwap;
  return OpKind::FetchAdd;
}
/// The transport bits 7:5 of `op`: 0 RC, 1 UC, 3 UD.
constexpr uint8_t op_transport(Opcode op) { return static_cast<uint8_t>(op) >> 5; }
/// True for an opcode a requester sends (SEND, WRITE, READ request, atomics).
constexpr bool is_request(Opcode op) {
  const OpKind k = op_kind(op);
  return k == OpKind::Send || k == OpKind::Write || k == OpKind::ReadRequest || k == OpKind::CompareSwap ||
         k == OpKind::FetchAdd;
}
/// True for the first packet of a message (FIRST or ONLY, or a single-packet request).
constexpr bool op_starts(Opcode op) {
  const uint8_t c = static_cast<uint8_t>(op) & 0x1F;
  if (static_cast<uint8_t>(op) >= 0x60) return true;
  switch (c) {
    case 0x00: case 0x04: case 0x05: case 0x06: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x10:
    case 0x11: case 0x12: case 0x13: case 0x14: case 0x17:
      return true;
    default:
      return false;
  }
}
/// True for the last packet of a message (LAST or ONLY, or a single-packet one).
constexpr bool op_ends(Opcode op) {
  const uint8_t c = static_cast<uint8_t>(op) & 0x1F;
  if (static_cast<uint8_t>(op) >= 0x60) return true;
  switch (c) {
    case 0x02: case 0x03: case 0x04: case 0x05: case 0x08: case 0x09: case 0x0A: case 0x0B: case 0x0C:
    case 0x0F: case 0x10: case 0x11: case 0x12: case 0x13: case 0x14: case 0x16: case 0x17:
      return true;
    default:
      return false;
  }
}
/// True when `op` carries ImmDt (IBA 9.3.3: the *_WITH_IMMEDIATE opcodes).
constexpr bool op_has_imm(Opcode op) {
  switch (static_cast<uint8_t>(op) & 0x1F) {
    case 0x03: case 0x05: case 0x09: case 0x0B: return op_kind(op) != OpKind::ReadResponse;
    default: return static_cast<uint8_t>(op) == 0x65;
  }
}
/// True when `op` carries an IETH (IBA 9.3, the Invalidate ETH: the R_Key to invalidate): SEND
/// Last / Only with Invalidate, which exist on RC only (table 38).
constexpr bool op_has_ieth(Opcode op) { return op == Opcode::RcSendLastInv || op == Opcode::RcSendOnlyInv; }
/// True when `op` carries a RETH (IBA 9.3.2: RDMA WRITE FIRST / ONLY, RDMA READ request).
constexpr bool op_has_reth(Opcode op) {
  const uint8_t c = static_cast<uint8_t>(op) & 0x1F;
  return static_cast<uint8_t>(op) < 0x60 && (c == 0x06 || c == 0x0A || c == 0x0B || c == 0x0C);
}
/// True when `op` carries an AETH (IBA 9.3.5: ACK, atomic ACK, READ response FIRST / LAST / ONLY).
constexpr bool op_has_aeth(Opcode op) {
  switch (op) {
    case Opcode::RcAcknowledge: case Opcode::RcAtomicAcknowledge: case Opcode::RcReadResponseFirst:
    case Opcode::RcReadResponseLast: case Opcode::RcReadResponseOnly:
      return true;
    default:
      return false;
  }
}
/// True when `op` carries a payload (SEND, WRITE, READ response data).
constexpr bool op_has_payload(Opcode op) {
  const OpKind k = op_kind(op);
  return k == OpKind::Send || k == OpKind::Write || k == OpKind::ReadResponse;
}

/// The opcode of a SEND or RDMA WRITE packet on `transport` (0 RC, 1 UC): `kind` Send or Write,
/// its place (first and/or last packet of the message) and whether the message carries
/// immediate data or, an RC SEND, an IETH (`inv`: SEND with Invalidate), both on its last
/// packet only (IBA 9.2.1 table 38).
constexpr Opcode data_opcode(uint8_t transport, OpKind kind, bool first, bool last, bool imm, bool inv = false) {
  uint8_t c = 0;
  const bool send = kind == OpKind::Send;
  if (first && last) c = send ? (inv ? 0x17 : imm ? 0x05 : 0x04) : (imm ? 0x0B : 0x0A);
  else if (first) c = send ? 0x00 : 0x06;
  else if (last) c = send ? (inv ? 0x16 : imm ? 0x03 : 0x02) : (imm ? 0x09 : 0x08);
  else c = send ? 0x01 : 0x07;
  return static_cast<Opcode>(static_cast<uint8_t>(transport << 5) | c);
}
/// The opcode of READ response packet `index` of `count` (FIRST / MIDDLE / LAST / ONLY).
constexpr Opcode read_response_opcode(uint32_t index, uint32_t count) {
  if (count <= 1) return Opcode::RcReadResponseOnly;
  if (index == 0) return Opcode::RcReadResponseFirst;
  return index + 1 == count ? Opcode::RcReadResponseLast : Opcode::RcReadResponseMiddle;
}

/// One packet, or a train of `npkts` consecutive packets of one message (PSNs psn ..
/// psn + npkts - 1): `op` is its first packet's opcode and `last_op` its last's (the same for
/// one packet), every packet between them a MIDDLE. Fields a packet's headers do not carry are 0.
///
/// Payload: `payload_len` bytes in all, MTU-sized packets but the last; where it comes from is
/// the backend's (emu/ carries the bytes in the frame, sim/ names the sender's memory), handed to
/// the core with the packet as an opaque pointer. `msg_offset` is the requester's: the offset in
/// the WQE's data (SEND / WRITE) or in the remote READ buffer of the train's first byte.
struct Packet {
  Opcode op = Opcode::RcSendOnly;
  Opcode last_op = Opcode::RcSendOnly;
  uint32_t npkts = 1;
  uint32_t dest_qpn = 0;     ///< BTH DestQP (24 bits)
  uint32_t psn = 0;          ///< BTH PSN of the first packet (24 bits)
  bool ack_req = false;      ///< BTH AckReq, of the train's last packet (IBA 9.7.5.1.1)
  // RETH (RDMA WRITE FIRST/ONLY, READ request)
  sdp::Addr va = 0;
  uint32_t rkey = 0;
  uint32_t dma_len = 0;      ///< bytes of the whole RDMA operation
  // AETH
  uint8_t syndrome = 0;
  uint32_t msn = 0;          ///< 24 bits
  // ImmDt, IETH, AtomicETH, AtomicAckETH, DETH
  uint32_t imm = 0;
  uint32_t ieth_rkey = 0;    ///< IETH (SEND Last / Only with Invalidate): the R_Key to invalidate
  uint64_t swap = 0;
  uint64_t compare = 0;      ///< CmpSwap's compare data, FetchAdd's addend
  uint64_t orig = 0;         ///< the remote data before the atomic
  uint32_t qkey = 0;         ///< DETH Q_Key (UD)
  uint32_t src_qpn = 0;      ///< DETH source QP (UD); the sending QP, for the backends
  uint16_t slid = 0;         ///< the LRH's SLID (UD receives report it)
  uint16_t dlid = 0;         ///< UD requests: the destination port's LID (the WQE's address handle)
  /// UD receives: the packet's GRH (kGrhBytes, IBA 8.3), written to the receive's GRH room and
  /// reported with IBV_WC_GRH; null for a packet without one (the room is zeroed).
  const uint8_t* grh = nullptr;
  /// An XRC packet (IBA 1.2.1 annex A14): the core carries it with its RC opcode, and the wire
  /// gives it the XRC transport's (bits 7:5 = 101, the low bits RC's). Its requests carry an
  /// XRCETH, 4 bytes after the BTH: `xrc_srqn`, the XRC SRQ of the target that receives it (24
  /// bits, the top byte reserved).
  bool xrc = false;
  uint32_t xrc_srqn = 0;     ///< XRCETH XRCSRQ (XRC requests)
  // payload
  uint32_t payload_len = 0;
  uint64_t msg_offset = 0;
  uint64_t wqe_seq = 0;      ///< requester: the send WQE the train belongs to (SendWqe::seq)
  /// Requester, SEND and WRITE: the WQE's gather list (checked), where the backend reads the
  /// payload from msg_offset on; inline data is the backend's copy of it (SendWqe::seq).
  std::array<sdp::Sge, sdp::kMaxSge> sg{};
  uint8_t num_sge = 0;
  bool inline_data = false;
};

/// Packets [a, b) of train `p` (0 <= a < b <= p.npkts) as a train of their own, on path MTU `mtu`:
/// their opcodes (a MIDDLE where the train's first or last packet is cut off), PSN, payload and
/// message offset; the RETH only when it starts at the train's start, AckReq and immediate data
/// only when it ends at the train's end (the IETH too). Its payload is `a` x mtu bytes into the train's.
Packet packet_slice(const Packet& p, uint32_t a, uint32_t b, uint32_t mtu);

}  // namespace hcasim::hca
