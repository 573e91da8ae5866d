#include "hca/packet.h"

namespace hcasim::hca {

const char* opcode_name(Opcode op) {
  switch (op) {
    case Opcode::RcSendFirst: return "RC SEND_FIRST";
    case Opcode::RcSendMiddle: return "RC SEND_MIDDLE";
    case Opcode::RcSendLast: return "RC SEND_LAST";
    case Opcode::RcSendLastImm: return "RC SEND_LAST_WITH_IMMEDIATE";
    case Opcode::RcSendOnly: return "RC SEND_ONLY";
    case Opcode::RcSendOnlyImm: return "RC SEND_ONLY_WITH_IMMEDIATE";
    case Opcode::RcWriteFirst: return "RC RDMA_WRITE_FIRST";
    case Opcode::RcWriteMiddle: return "RC RDMA_WRITE_MIDDLE";
    case Opcode::RcWriteLast: return "RC RDMA_WRITE_LAST";
    case Opcode::RcWriteLastImm: return "RC RDMA_WRITE_LAST_WITH_IMMEDIATE";
    case Opcode::RcWriteOnly: return "RC RDMA_WRITE_ONLY";
    case Opcode::RcWriteOnlyImm: return "RC RDMA_WRITE_ONLY_WITH_IMMEDIATE";
    case Opcode::RcReadRequest: return "RC RDMA_READ_REQUEST";
    case Opcode::RcReadResponseFirst: return "RC RDMA_READ_RESPONSE_FIRST";
    case Opcode::RcReadResponseMiddle: return "RC RDMA_READ_RESPONSE_MIDDLE";
    case Opcode::RcReadResponseLast: return "RC RDMA_READ_RESPONSE_LAST";
    case Opcode::RcReadResponseOnly: return "RC RDMA_READ_RESPONSE_ONLY";
    case Opcode::RcAcknowledge: return "RC ACKNOWLEDGE";
    case Opcode::RcAtomicAcknowledge: return "RC ATOMIC_ACKNOWLEDGE";
    case Opcode::RcCompareSwap: return "RC CMP_SWAP";
    case Opcode::RcFetchAdd: return "RC FETCH_ADD";
    case Opcode::RcSendLastInv: return "RC SEND_LAST_WITH_INVALIDATE";
    case Opcode::RcSendOnlyInv: return "RC SEND_ONLY_WITH_INVALIDATE";
    case Opcode::UcSendFirst: return "UC SEND_FIRST";
    case Opcode::UcSendMiddle: return "UC SEND_MIDDLE";
    case Opcode::UcSendLast: return "UC SEND_LAST";
    case Opcode::UcSendLastImm: return "UC SEND_LAST_WITH_IMMEDIATE";
    case Opcode::UcSendOnly: return "UC SEND_ONLY";
    case Opcode::UcSendOnlyImm: return "UC SEND_ONLY_WITH_IMMEDIATE";
    case Opcode::UcWriteFirst: return "UC RDMA_WRITE_FIRST";
    case Opcode::UcWriteMiddle: return "UC RDMA_WRITE_MIDDLE";
    case Opcode::UcWriteLast: return "UC RDMA_WRITE_LAST";
    case Opcode::UcWriteLastImm: return "UC RDMA_WRITE_LAST_WITH_IMMEDIATE";
    case Opcode::UcWriteOnly: return "UC RDMA_WRITE_ONLY";
    case Opcode::UcWriteOnlyImm: return "UC RDMA_WRITE_ONLY_WITH_IMMEDIATE";
    case Opcode::UdSendOnly: return "UD SEND_ONLY";
    case Opcode::UdSendOnlyImm: return "UD SEND_ONLY_WITH_IMMEDIATE";
  }
  return "?";
}

Packet packet_slice(const Packet& p, uint32_t a, uint32_t b, uint32_t mtu) {
  if (a == 0 && b == p.npkts) return p;
  Packet s = p;
  const OpKind k = op_kind(p.op);
  auto middle = [&] {
    return k == OpKind::ReadResponse ? Opcode::RcReadResponseMiddle : data_opcode(op_transport(p.op), k, false, false, false);
  };
  auto op_at = [&](uint32_t i) { return i == 0 ? p.op : i + 1 == p.npkts ? p.last_op : middle(); };
  s.op = op_at(a);
  s.last_op = op_at(b - 1);
  s.npkts = b - a;
  s.psn = (p.psn + a) & 0xFFFFFF;
  const uint64_t lo = static_cast<uint64_t>(a) * mtu;
  const uint64_t hi = b == p.npkts ? p.payload_len : static_cast<uint64_t>(b) * mtu;
  s.payload_len = static_cast<uint32_t>(hi - lo);
  s.msg_offset = p.msg_offset + lo;
  if (k == OpKind::ReadResponse) s.va = p.va + lo;  // the responder's source address
  if (a != 0 && k == OpKind::Write) {
    s.va = 0;
    s.rkey = 0;
    s.dma_len = 0;
  }
  if (b != p.npkts) {
    s.ack_req = false;
    s.imm = 0;
    s.ieth_rkey = 0;
  }
  return s;
}

bool opcode_known(uint8_t code) {
  if (code <= 0x14 || code == 0x16 || code == 0x17) return true;  // RC (0x15 is reserved on RC)
  if (code >= 0x20 && code <= 0x2B) return true;  // UC: SEND and RDMA WRITE
  return code == 0x64 || code == 0x65;     // UD SEND
}

}  // namespace hcasim::hca
