#include "emu/wire.h"

#include <fmt/format.h>
#include <zlib.h>

#include "sdp/be.h"

namespace hcasim::emu {

namespace be = sdp::be;

namespace {
constexpr size_t kReth = 16, kAeth = 4, kCm = 6, kRej = 2, kImm = 4, kAtomicEth = 28, kAtomicAckEth = 8, kDeth = 12;
/// Header + the largest extension (RETH + ImmDt) + the largest payload + ICRC.
constexpr uint32_t kMaxBody = static_cast<uint32_t>(kHeaderSize + kReth + kImm + kIcrcSize) + kMaxMessage;

uint32_t crc32_of(const uint8_t* data, size_t n) {
  return static_cast<uint32_t>(::crc32_z(0, data, static_cast<z_size_t>(n)));
}

size_t extension_size(Op op) {
  switch (op) {
    case Op::SendOnly: case Op::CmRtu: case Op::CmDreq: return 0;
    case Op::SendOnlyWithImm: return kImm;
    case Op::UdSendOnly: return kDeth;
    case Op::UdSendOnlyWithImm: return kDeth + kImm;
    case Op::RdmaWriteOnlyWithImm: return kReth + kImm;
    case Op::CompareSwap: case Op::FetchAdd: return kAtomicEth;
    case Op::AtomicAcknowledge: return kAeth + kAtomicAckEth;
    case Op::RdmaWriteOnly: case Op::RdmaReadRequest: return kReth;
    case Op::RdmaReadResponseOnly: case Op::Acknowledge: return kAeth;
    case Op::CmReq: case Op::CmRep: return kCm;
    case Op::CmRej: return kRej;
  }
  return 0;
}

bool known(uint8_t op) {
  switch (static_cast<Op>(op)) {
    case Op::SendOnly: case Op::RdmaWriteOnly: case Op::RdmaReadRequest: case Op::RdmaReadResponseOnly:
    case Op::Acknowledge: case Op::CmReq: case Op::CmRep: case Op::CmRtu: case Op::CmRej: case Op::CmDreq:
    case Op::SendOnlyWithImm: case Op::RdmaWriteOnlyWithImm: case Op::CompareSwap: case Op::FetchAdd:
    case Op::AtomicAcknowledge: case Op::UdSendOnly: case Op::UdSendOnlyWithImm:
      return true;
  }
  return false;
}

/// Largest payload `op` may carry.
size_t payload_limit(Op op) {
  switch (op) {
    case Op::SendOnly: case Op::RdmaWriteOnly: case Op::RdmaReadResponseOnly: case Op::SendOnlyWithImm:
    case Op::RdmaWriteOnlyWithImm:
      return kMaxMessage;
    case Op::UdSendOnly: case Op::UdSendOnlyWithImm: return kMaxUdPayload;
    case Op::CmReq: return kReqPrivateData;
    case Op::CmRep: return kRepPrivateData;
    case Op::CmRej: return kRejReason;
    default: return 0;
  }
}
}  // namespace

const char* op_name(Op op) {
  switch (op) {
    case Op::SendOnly: return "SEND Only";
    case Op::RdmaWriteOnly: return "RDMA WRITE Only";
    case Op::RdmaReadRequest: return "RDMA READ Request";
    case Op::RdmaReadResponseOnly: return "RDMA READ Response Only";
    case Op::Acknowledge: return "Acknowledge";
    case Op::CmReq: return "CM REQ";
    case Op::CmRep: return "CM REP";
    case Op::CmRtu: return "CM RTU";
    case Op::CmRej: return "CM REJ";
    case Op::CmDreq: return "CM DREQ";
    case Op::SendOnlyWithImm: return "SEND Only with Immediate";
    case Op::RdmaWriteOnlyWithImm: return "RDMA WRITE Only with Immediate";
    case Op::CompareSwap: return "CmpSwap";
    case Op::FetchAdd: return "FetchAdd";
    case Op::AtomicAcknowledge: return "Atomic Acknowledge";
    case Op::UdSendOnly: return "UD SEND Only";
    case Op::UdSendOnlyWithImm: return "UD SEND Only with Immediate";
  }
  return "?";
}

std::vector<uint8_t> encode(const Packet& p) {
  if (!known(static_cast<uint8_t>(p.op))) throw WireError(fmt::format("encode: unknown op {:#04x}", static_cast<unsigned>(p.op)));
  if (p.payload.size() > payload_limit(p.op))
    throw WireError(fmt::format("encode: {} carries at most {} bytes, got {}", op_name(p.op), payload_limit(p.op),
                                p.payload.size()));
  if ((p.op == Op::RdmaWriteOnly || p.op == Op::RdmaWriteOnlyWithImm) && p.dma_len != p.payload.size())
    throw WireError(fmt::format("encode: RETH length {} but {} payload bytes", p.dma_len, p.payload.size()));
  const size_t ext = extension_size(p.op);
  const size_t body = kHeaderSize + ext + p.payload.size() + kIcrcSize;
  std::vector<uint8_t> out(kLengthSize + body, 0);
  uint8_t* b = out.data();
  be::put32(b, static_cast<uint32_t>(body));
  b += kLengthSize;
  b[0] = static_cast<uint8_t>(p.op);
  be::put32(b + 4, p.dest_qpn & 0xFFFFFF);
  be::put32(b + 8, p.psn & 0xFFFFFF);
  uint8_t* e = b + kHeaderSize;
  switch (p.op) {
    case Op::RdmaWriteOnly:
    case Op::RdmaWriteOnlyWithImm:
    case Op::RdmaReadRequest:
      be::put64(e, p.va);
      be::put32(e + 8, p.rkey);
      be::put32(e + 12, p.dma_len);
      if (p.op == Op::RdmaWriteOnlyWithImm) be::put32(e + kReth, p.imm);
      break;
    case Op::SendOnlyWithImm:
      be::put32(e, p.imm);
      break;
    case Op::UdSendOnly:
    case Op::UdSendOnlyWithImm:
      be::put32(e, p.qkey);
      be::put32(e + 4, p.local_qpn & 0xFFFFFF);
      be::put16(e + 8, p.slid);
      if (p.op == Op::UdSendOnlyWithImm) be::put32(e + kDeth, p.imm);
      break;
    case Op::CompareSwap:
    case Op::FetchAdd:
      be::put64(e, p.va);
      be::put32(e + 8, p.rkey);
      be::put64(e + 12, p.swap);
      be::put64(e + 20, p.compare);
      break;
    case Op::AtomicAcknowledge:
      be::put32(e, (uint32_t{p.syndrome} << 24) | (p.msn & 0xFFFFFF));
      be::put64(e + kAeth, p.orig);
      break;
    case Op::RdmaReadResponseOnly:
    case Op::Acknowledge:
      be::put32(e, (uint32_t{p.syndrome} << 24) | (p.msn & 0xFFFFFF));
      break;
    case Op::CmReq:
    case Op::CmRep:
      be::put32(e, p.local_qpn & 0xFFFFFF);
      be::put16(e + 4, static_cast<uint16_t>(p.payload.size()));
      break;
    case Op::CmRej:
      be::put16(e, static_cast<uint16_t>(p.payload.size()));
      break;
    default:
      break;
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
  if (!known(b[0])) throw WireError(fmt::format("unknown op {:#04x}", b[0]));
  Packet p;
  p.op = static_cast<Op>(b[0]);
  if (b[1] != 0 || b[2] != 0 || b[3] != 0 || b[4] != 0 || b[8] != 0)
    throw WireError(fmt::format("{}: reserved bits set", op_name(p.op)));
  p.dest_qpn = be::get32(b + 4);
  p.psn = be::get32(b + 8);
  const size_t ext = extension_size(p.op);
  if (body.size() < kHeaderSize + ext)
    throw WireError(fmt::format("{}: {} bytes, its headers need {}", op_name(p.op), body.size(), kHeaderSize + ext));
  const uint8_t* e = b + kHeaderSize;
  const size_t payload = body.size() - kHeaderSize - ext;
  if (payload > payload_limit(p.op))
    throw WireError(fmt::format("{}: {} payload bytes, at most {} allowed", op_name(p.op), payload, payload_limit(p.op)));
  switch (p.op) {
    case Op::SendOnlyWithImm:
      p.imm = be::get32(e);
      break;
    case Op::UdSendOnly:
    case Op::UdSendOnlyWithImm:
      p.qkey = be::get32(e);
      p.local_qpn = be::get32(e + 4);
      if (e[4] != 0) throw WireError(fmt::format("{}: DETH source QPN {:#x} over 24 bits", op_name(p.op), p.local_qpn));
      p.slid = be::get16(e + 8);
      if (be::get16(e + 10) != 0) throw WireError(fmt::format("{}: DETH reserved bytes set", op_name(p.op)));
      if (p.op == Op::UdSendOnlyWithImm) p.imm = be::get32(e + kDeth);
      break;
    case Op::CompareSwap:
    case Op::FetchAdd:
      p.va = be::get64(e);
      p.rkey = be::get32(e + 8);
      p.swap = be::get64(e + 12);
      p.compare = be::get64(e + 20);
      break;
    case Op::AtomicAcknowledge: {
      const uint32_t a = be::get32(e);
      p.syndrome = static_cast<uint8_t>(a >> 24);
      p.msn = a & 0xFFFFFF;
      if (p.syndrome & 0x80) throw WireError(fmt::format("{}: AETH syndrome {:#04x} has its reserved bit set", op_name(p.op), p.syndrome));
      p.orig = be::get64(e + kAeth);
      break;
    }
    case Op::RdmaWriteOnly:
    case Op::RdmaWriteOnlyWithImm:
    case Op::RdmaReadRequest:
      p.va = be::get64(e);
      p.rkey = be::get32(e + 8);
      p.dma_len = be::get32(e + 12);
      if (p.op == Op::RdmaWriteOnlyWithImm) p.imm = be::get32(e + kReth);
      if (p.op != Op::RdmaReadRequest && p.dma_len != payload)
        throw WireError(fmt::format("RDMA WRITE Only: RETH length {} but {} payload bytes", p.dma_len, payload));
      if (p.op == Op::RdmaReadRequest && p.dma_len > kMaxMessage)
        throw WireError(fmt::format("RDMA READ Request: RETH length {} over {}", p.dma_len, kMaxMessage));
      break;
    case Op::RdmaReadResponseOnly:
    case Op::Acknowledge: {
      const uint32_t a = be::get32(e);
      p.syndrome = static_cast<uint8_t>(a >> 24);
      p.msn = a & 0xFFFFFF;
      if (p.syndrome & 0x80) throw WireError(fmt::format("{}: AETH syndrome {:#04x} has its reserved bit set", op_name(p.op), p.syndrome));
      break;
    }
    case Op::CmReq:
    case Op::CmRep:
      p.local_qpn = be::get32(e);
      if (e[0] != 0) throw WireError(fmt::format("{}: QPN {:#x} over 24 bits", op_name(p.op), p.local_qpn));
      if (be::get16(e + 4) != payload)
        throw WireError(fmt::format("{}: private data length {} but {} bytes follow", op_name(p.op), be::get16(e + 4), payload));
      break;
    case Op::CmRej:
      if (be::get16(e) != payload)
        throw WireError(fmt::format("CM REJ: reason length {} but {} bytes follow", be::get16(e), payload));
      break;
    default:
      break;
  }
  p.payload.assign(e + ext, e + ext + payload);
  return p;
}

}  // namespace hcasim::emu
