#include "model/mlx4.h"

namespace hcasim::model::mlx4 {

namespace {
uint32_t round_up(uint32_t v, uint32_t to) { return (v + to - 1) / to * to; }
}  // namespace

uint32_t inline_segments(uint32_t header_offset, uint32_t bytes) {
  // Data starts right after the first header; every time it reaches a 64 B boundary the
  // piece is closed and a new header takes the first 4 B of the next block.
  uint32_t off = (header_offset + kInlineSegHeaderBytes) % kInlineAlign;
  uint32_t segments = 0;
  while (bytes >= kInlineAlign - off) {
    bytes -= kInlineAlign - off;
    ++segments;
    off = kInlineSegHeaderBytes;
  }
  return segments + (bytes > 0 ? 1 : 0);
}

uint32_t wqe_size_16(const WqeShape& w) {
  uint32_t size = kCtrlSegBytes / 16;
  const uint32_t datagram = w.ud ? kDatagramSegBytes : 0;
  size += datagram / 16;
  const bool rdma = w.opcode == Opcode::RdmaWrite || w.opcode == Opcode::RdmaRead;
  if (rdma) size += kRaddrSegBytes / 16;
  if (w.opcode == Opcode::Atomic) size += (kRaddrSegBytes + kAtomicSegBytes) / 16;
  if (w.inline_data && w.opcode != Opcode::RdmaRead && w.opcode != Opcode::Atomic && w.num_sge > 0) {
    const uint32_t header_at = kCtrlSegBytes + datagram + (rdma ? kRaddrSegBytes : 0);
    const uint32_t segs = inline_segments(header_at, w.inline_bytes);
    size += (w.inline_bytes + segs * kInlineSegHeaderBytes + 15) / 16;
  } else {
    size += w.num_sge * (kDataSegBytes / 16);
  }
  return size;
}

uint32_t wqe_basic_blocks(const WqeShape& w) { return round_up(wqe_bytes(w), kWqeBasicBlock) / kWqeBasicBlock; }

bool blueflame_eligible(uint32_t nreq, const WqeShape& w, uint32_t bf_buf_size) {
  const bool inl = (w.inline_data && w.inline_bytes > 0) || w.opcode == Opcode::RdmaRead || w.num_sge == 0;
  const uint32_t size = wqe_size_16(w);
  return nreq == 1 && inl && size > 1 && size <= bf_buf_size / 16;
}

uint32_t blueflame_copy_bytes(const WqeShape& w) { return round_up(wqe_bytes(w), kWqeBasicBlock); }

uint32_t max_inline_data(uint32_t wqe_bytes_max) {
  const uint32_t room = wqe_bytes_max - kCtrlSegBytes - kRaddrSegBytes;
  return room - kInlineSegHeaderBytes * (round_up(room, kInlineAlign) / kInlineAlign);
}

}  // namespace hcasim::model::mlx4
