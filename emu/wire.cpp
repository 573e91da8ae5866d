#include "emu/wire.h"

#include <fmt/format.h>
#include <zlib.h>

#include "sdp/be.h"

namespace hcasim::emu {

namespace be = sdp::be;

namespace {
constexpr size_t kXrcEth = 4, kReth = 16, kAeth = 4, kCm = 8, kRej = 2, kImm = 4, kIeth = 4, kAtomicEth = 28,
                 kAtomicAckEth = 8, kDeth = 12, kSidr = 12;
/// Header + the largest extension (RETH + ImmDt) + the largest payload + ICRC.
constexpr uint32_t kMaxBody = static_cast<uint32_t>(kHeaderSize + kXrcEth + kReth + kImm + kIcrcSize) + kMaxPayload;
/// The BTH OpCode's transport bits of XRC (IBA table 38: 101xxxxx).
constexpr uint8_t kXrcBits = hca::kXrcTransport << 5;
/// The BTH byte after the OpCode: bit 7 is AckReq (the solicited event, migration and pad bits
/// of a real BTH are not carried).
constexpr uint8_t kAckReqBit = 0x80;

uint32_t crc32_of(const uint8_t* data, size_t n) {
  return static_cast<uint32_t>(::crc32_z(0, data, static_cast<z_size_t>(n)));
}

hca::Opcode transport(Op op) { return static_cast<hca::Opcode>(op); }

bool known(uint8_t op) {
  if (op >= 0xC0) return op <= static_cast<uint8_t>(Op::CmSidrRep);
  return hca::opcode_known(op);
}

size_t extension_size(Op op) {
  switch (op) {
    case Op::CmReq: case Op::CmRep: return kCm;
    case Op::CmRej: return kRej;
    case Op::CmRtu: case Op::CmDreq: return 0;
    case Op::CmSidrReq: case Op::CmSidrRep: return kSidr;
    default: break;
  }
  const hca::Opcode t = transport(op);
  const hca::OpKind k = hca::op_kind(t);
  if (hca::op_transport(t) == 3) return kDeth + (hca::op_has_imm(t) ? kImm : 0);
  if (k == hca::OpKind::CompareSwap || k == hca::OpKind::FetchAdd) return kAtomicEth;
  if (k == hca::OpKind::AtomicAck) return kAeth + kAtomicAckEth;
  return (hca::op_has_reth(t) ? kReth : 0) + (hca::op_has_imm(t) ? kImm : 0) + (hca::op_has_ieth(t) ? kIeth : 0) +
         (hca::op_has_aeth(t) ? kAeth : 0);
}

/// True when `op` may travel on the XRC transport: an RC opcode (IBA table 38 gives XRC each of
/// RC's operations).
bool xrc_capable(Op op) { return !is_cm(op) && hca::op_transport(transport(op)) == 0; }

/// The XRCETH's bytes on `p`: XRC requests carry one.
size_t xrceth_size(Op op, bool xrc) { return xrc && hca::is_request(transport(op)) ? kXrcEth : 0; }

/// Largest payload `op` may carry.
size_t payload_limit(Op op) {
  switch (op) {
    case Op::CmReq: return kReqPrivateData;
    case Op::CmRep: return kRepPrivateData;
    case Op::CmRej: return kRejReason;
    case Op::CmRtu: case Op::CmDreq: return 0;
    case Op::CmSidrReq: return kSidrReqPrivateData;
    case Op::CmSidrRep: return kSidrRepPrivateData;
    default: return hca::op_has_payload(transport(op)) ? kMaxPayload : 0;
  }
}

/// An RDMA WRITE Only's RETH length is its payload's (one packet carries the whole WRITE).
bool write_only(Op op) {
  const hca::Opcode t = transport(op);
  return hca::op_kind(t) == hca::OpKind::Write && hca::op_starts(t) && hca::op_ends(t);
}
}  // namespace

const char* op_name(Op op) {
  switch (op) {
    case Op::SendFirst: return "SEND First";
    case Op::SendMiddle: return "SEND Middle";
    case Op::SendLast: return "SEND Last";
    case Op::SendLastWithImm: return "SEND Last with Immediate";
    case Op::SendOnly: return "SEND Only";
    case Op::SendOnlyWithImm: return "SEND Only with Immediate";
    case Op::RdmaWriteFirst: return "RDMA WRITE First";
    case Op::RdmaWriteMiddle: return "RDMA WRITE Middle";
    case Op::RdmaWriteLast: return "RDMA WRITE Last";
    case Op::RdmaWriteLastWithImm: return "RDMA WRITE Last with Immediate";
    case Op::RdmaWriteOnly: return "RDMA WRITE Only";
    case Op::RdmaWriteOnlyWithImm: return "RDMA WRITE Only with Immediate";
    case Op::RdmaReadRequest: return "RDMA READ Request";
    case Op::RdmaReadResponseFirst: return "RDMA READ Response First";
    case Op::RdmaReadResponseMiddle: return "RDMA READ Response Middle";
    case Op::RdmaReadResponseLast: return "RDMA READ Response Last";
    case Op::RdmaReadResponseOnly: return "RDMA READ Response Only";
    case Op::Acknowledge: return "Acknowledge";
    case Op::AtomicAcknowledge: return "Atomic Acknowledge";
    case Op::CompareSwap: return "CmpSwap";
    case Op::FetchAdd: return "FetchAdd";
    case Op::SendLastWithInvalidate: return "SEND Last with Invalidate";
    case Op::SendOnlyWithInvalidate: return "SEND Only with Invalidate";
    case Op::UdSendOnly: return "UD SEND Only";
    case Op::UdSendOnlyWithImm: return "UD SEND Only with Immediate";
    case Op::CmReq: return "CM REQ";
    case Op::CmRep: return "CM REP";
    case Op::CmRtu: return "CM RTU";
    case Op::CmRej: return "CM REJ";
    case Op::CmDreq: return "CM DREQ";
    case Op::CmSidrReq: return "CM SIDR_REQ";
    case Op::CmSidrRep: return "CM SIDR_REP";
  }
  return known(static_cast<uint8_t>(op)) ? hca::opcode_name(transport(op)) : "?";  // the UC opcodes
}

std::vector<uint8_t> encode(const Packet& p) {
  if (!known(static_cast<uint8_t>(p.op))) throw WireError(fmt::format("encode: unknown op {:#04x}", static_cast<unsigned>(p.op)));
  if (p.payload.size() > payload_limit(p.op))
    throw WireError(fmt::format("encode: {} carries at most {} bytes, got {}", op_name(p.op), payload_limit(p.op),
                                p.payload.size()));
  if (write_only(p.op) && p.dma_len != p.payload.size())
    throw WireError(fmt::format("encode: RETH length {} but {} payload bytes", p.dma_len, p.payload.size()));
  if (is_cm(p.op) && p.pkey != 0) throw WireError(fmt::format("encode: {} carries no P_Key", op_name(p.op)));
  if (p.xrc && !xrc_capable(p.op)) throw WireError(fmt::format("encode: {} has no XRC opcode", op_name(p.op)));
  if (p.xrc && p.xrc_srqn > 0xFFFFFF) throw WireError(fmt::format("encode: XRC SRQ number {:#x} over 24 bits", p.xrc_srqn));
  const size_t ext = xrceth_size(p.op, p.xrc) + extension_size(p.op);
  const size_t body = kHeaderSize + ext + p.payload.size() + kIcrcSize;
  std::vector<uint8_t> out(kLengthSize + body, 0);
  uint8_t* b = out.data();
  be::put32(b, static_cast<uint32_t>(body));
  b += kLengthSize;
  b[0] = static_cast<uint8_t>(static_cast<uint8_t>(p.op) | (p.xrc ? kXrcBits : 0));
  b[1] = p.ack_req ? kAckReqBit : 0;
  be::put16(b + 2, p.pkey);
  be::put32(b + 4, p.dest_qpn & 0xFFFFFF);
  be::put32(b + 8, p.psn & 0xFFFFFF);
  uint8_t* e = b + kHeaderSize;
  if (is_cm(p.op)) {
    if (p.op == Op::CmReq || p.op == Op::CmRep) {
      be::put32(e, p.local_qpn & 0xFFFFFF);
      be::put16(e + 4, p.slid);
      be::put16(e + 6, static_cast<uint16_t>(p.payload.size()));
    } else if (p.op == Op::CmRej) {
      be::put16(e, static_cast<uint16_t>(p.payload.size()));
    } else if (p.op == Op::CmSidrReq || p.op == Op::CmSidrRep) {
      be::put32(e, (uint32_t{p.status} << 24) | (p.local_qpn & 0xFFFFFF));
      be::put32(e + 4, p.qkey);
      be::put16(e + 8, p.slid);
      be::put16(e + 10, static_cast<uint16_t>(p.payload.size()));
    }
  } else {
    const hca::Opcode t = transport(p.op);
    const hca::OpKind k = hca::op_kind(t);
    uint8_t* x = e;
    if (xrceth_size(p.op, p.xrc) != 0) {
      be::put32(x, p.xrc_srqn);
      x += kXrcEth;
    }
    if (hca::op_transport(t) == 3) {  // DETH and the SLID
      be::put32(x, p.qkey);
      be::put32(x + 4, p.local_qpn & 0xFFFFFF);
      be::put16(x + 8, p.slid);
      be::put16(x + 10, p.dlid);
      x += kDeth;
    } else if (k == hca::OpKind::CompareSwap || k == hca::OpKind::FetchAdd) {
      be::put64(x, p.va);
      be::put32(x + 8, p.rkey);
      be::put64(x + 12, p.swap);
      be::put64(x + 20, p.compare);
      x += kAtomicEth;
    } else if (hca::op_has_reth(t)) {
      be::put64(x, p.va);
      be::put32(x + 8, p.rkey);
      be::put32(x + 12, p.dma_len);
      x += kReth;
    }
    if (hca::op_has_aeth(t)) {
      be::put32(x, (uint32_t{p.syndrome} << 24) | (p.msn & 0xFFFFFF));
      x += kAeth;
      if (k == hca::OpKind::AtomicAck) {
        be::put64(x, p.orig);
        x += kAtomicAckEth;
      }
    }
    if (hca::op_has_imm(t)) be::put32(x, p.imm);
    if (hca::op_has_ieth(t)) be::put32(x, p.ieth_rkey);
  }
  std::copy(p.payload.begin(), p.payload.end(), e + ext);
  be::put32(b + body - kIcrcSize, crc32_of(b, body - kIcrcSize));
  return out;
}

uint32_t decode_length(std::span<const uint8_t, kLengthSize> length_field) {
  const uint32_t n = be::get32(length_field.data());
  if (n < kHeaderSize + kIcrcSize || n > kMaxBody)
    throw WireError(fmt::format("frame length {} outside [{}, {}]", n, kHeaderSize + kIcrcSize, kMaxBody));
  return n;
}

bool icrc_ok(std::span<const uint8_t> body) {
  if (body.size() < kIcrcSize) return false;
  const size_t n = body.size() - kIcrcSize;
  return be::get32(body.data() + n) == crc32_of(body.data(), n);
}

Packet decode(std::span<const uint8_t> body) {
  if (body.size() < kHeaderSize + kIcrcSize)
    throw WireError(fmt::format("frame of {} bytes is shorter than the {} byte header and ICRC", body.size(),
                                kHeaderSize + kIcrcSize));
  body = body.first(body.size() - kIcrcSize);
  const uint8_t* b = body.data();
  Packet p;
  // XRC (101xxxxx): an RC opcode's low bits on the XRC transport.
  p.xrc = (b[0] >> 5) == hca::kXrcTransport;
  const uint8_t code = p.xrc ? static_cast<uint8_t>(b[0] & ~kXrcBits) : b[0];
  if (!known(code) || (p.xrc && !xrc_capable(static_cast<Op>(code))))
    throw WireError(fmt::format("unknown op {:#04x}", b[0]));
  p.op = static_cast<Op>(code);
  const bool cm = is_cm(p.op);
  // AckReq and the P_Key exist on transport packets only; every other bit of bytes 1-3 and the
  // top bytes of the QPN and PSN fields are reserved. The P_Key is the receiving QP's to check
  // (IBA 10.9.4), not the decoder's: any value decodes.
  if ((b[1] & ~(cm ? 0 : kAckReqBit)) != 0 || (cm && (b[2] != 0 || b[3] != 0)) || b[4] != 0 || b[8] != 0)
    throw WireError(fmt::format("{}: reserved bits set", op_name(p.op)));
  p.ack_req = (b[1] & kAckReqBit) != 0;
  p.pkey = be::get16(b + 2);
  p.dest_qpn = be::get32(b + 4);
  p.psn = be::get32(b + 8);
  const size_t ext = xrceth_size(p.op, p.xrc) + extension_size(p.op);
  if (body.size() < kHeaderSize + ext)
    throw WireError(fmt::format("{}: {} bytes, its headers need {}", op_name(p.op), body.size(), kHeaderSize + ext));
  const uint8_t* e = b + kHeaderSize;
  const size_t payload = body.size() - kHeaderSize - ext;
  if (payload > payload_limit(p.op))
    throw WireError(fmt::format("{}: {} payload bytes, at most {} allowed", op_name(p.op), payload, payload_limit(p.op)));
  if (cm) {
    if (p.op == Op::CmReq || p.op == Op::CmRep) {
      p.local_qpn = be::get32(e);
      if (e[0] != 0) throw WireError(fmt::format("{}: QPN {:#x} over 24 bits", op_name(p.op), p.local_qpn));
      p.slid = be::get16(e + 4);
      if (be::get16(e + 6) != payload)
        throw WireError(fmt::format("{}: private data length {} but {} bytes follow", op_name(p.op), be::get16(e + 6), payload));
    } else if (p.op == Op::CmRej) {
      if (be::get16(e) != payload)
        throw WireError(fmt::format("CM REJ: reason length {} but {} bytes follow", be::get16(e), payload));
    } else if (p.op == Op::CmSidrReq || p.op == Op::CmSidrRep) {
      p.status = e[0];
      p.local_qpn = be::get32(e) & 0xFFFFFF;
      p.qkey = be::get32(e + 4);
      p.slid = be::get16(e + 8);
      if (p.op == Op::CmSidrReq && p.status != 0) throw WireError("CM SIDR_REQ: reserved bits set");
      if (be::get16(e + 10) != payload)
        throw WireError(fmt::format("{}: private data length {} but {} bytes follow", op_name(p.op), be::get16(e + 10), payload));
    }
  } else {
    const hca::Opcode t = transport(p.op);
    const hca::OpKind k = hca::op_kind(t);
    const uint8_t* x = e;
    if (xrceth_size(p.op, p.xrc) != 0) {
      if (x[0] != 0) throw WireError(fmt::format("XRC {}: XRCETH reserved bits set", op_name(p.op)));
      p.xrc_srqn = be::get32(x);
      x += kXrcEth;
    }
    if (hca::op_transport(t) == 3) {
      p.qkey = be::get32(x);
      p.local_qpn = be::get32(x + 4);
      if (x[4] != 0) throw WireError(fmt::format("{}: DETH source QPN {:#x} over 24 bits", op_name(p.op), p.local_qpn));
      p.slid = be::get16(x + 8);
      p.dlid = be::get16(x + 10);
      x += kDeth;
    } else if (k == hca::OpKind::CompareSwap || k == hca::OpKind::FetchAdd) {
      p.va = be::get64(x);
      p.rkey = be::get32(x + 8);
      p.swap = be::get64(x + 12);
      p.compare = be::get64(x + 20);
      x += kAtomicEth;
    } else if (hca::op_has_reth(t)) {
      p.va = be::get64(x);
      p.rkey = be::get32(x + 8);
      p.dma_len = be::get32(x + 12);
      x += kReth;
      if (write_only(p.op) && p.dma_len != payload)
        throw WireError(fmt::format("{}: RETH length {} but {} payload bytes", op_name(p.op), p.dma_len, payload));
      if (p.dma_len > kMaxDmaLength)
        throw WireError(fmt::format("{}: RETH length {} over {}", op_name(p.op), p.dma_len, kMaxDmaLength));
    }
    if (hca::op_has_aeth(t)) {
      const uint32_t a = be::get32(x);
      p.syndrome = static_cast<uint8_t>(a >> 24);
      p.msn = a & 0xFFFFFF;
      if (p.syndrome & 0x80) throw WireError(fmt::format("{}: AETH syndrome {:#04x} has its reserved bit set", op_name(p.op), p.syndrome));
      x += kAeth;
      if (k == hca::OpKind::AtomicAck) {
        p.orig = be::get64(x);
        x += kAtomicAckEth;
      }
    }
    if (hca::op_has_imm(t)) p.imm = be::get32(x);
    if (hca::op_has_ieth(t)) p.ieth_rkey = be::get32(x);
  }
  p.payload.assign(e + ext, e + ext + payload);
  return p;
}

}  // namespace hcasim::emu
