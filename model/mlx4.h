#pragma once
/// \file mlx4 send WQE layout and libmlx4's BlueFlame rule: how many bytes a posted WR puts in
/// the send queue, and how many the CPU copies to the BlueFlame register. Plain C++.
///
/// Source: rdma-core providers/mlx4 (libmlx4), qp.c mlx4_post_send() and wqe.h; the segment
/// layouts are those of the ConnectX Programmer's Reference Manual that wqe.h transcribes.
/// A send WQE is a control segment (16 B), then for RDMA operations a remote-address segment
/// (16 B), then either data segments (16 B each: byte_count, lkey, addr) or inline data.
/// Inline data is split so that no piece crosses a 64 B boundary (MLX4_INLINE_ALIGN); each
/// piece has its own 4 B inline-segment header. The WQE size the HCA is told (ctrl->fence_size)
/// counts 16 B units. Send queue entries are 64 B basic blocks (WQEBB, sq.wqe_shift >= 6).
#include <cstdint>

namespace hcasim::model::mlx4 {

inline constexpr uint32_t kCtrlSegBytes = 16;        ///< struct mlx4_wqe_ctrl_seg
inline constexpr uint32_t kRaddrSegBytes = 16;       ///< struct mlx4_wqe_raddr_seg
inline constexpr uint32_t kDataSegBytes = 16;        ///< struct mlx4_wqe_data_seg
inline constexpr uint32_t kAtomicSegBytes = 16;      ///< struct mlx4_wqe_atomic_seg (swap_add, compare)
/// struct mlx4_wqe_datagram_seg (libmlx4 wqe.h): a UD send's address vector (32 B), destination
/// QPN, Q_Key and 8 reserved bytes, after the control segment (mlx4_post_send, IBV_QPT_UD).
inline constexpr uint32_t kDatagramSegBytes = 48;
inline constexpr uint32_t kInlineSegHeaderBytes = 4; ///< struct mlx4_wqe_inline_seg (byte_count)
inline constexpr uint32_t kInlineAlign = 64;         ///< MLX4_INLINE_ALIGN
inline constexpr uint32_t kWqeBasicBlock = 64;       ///< send WQEBB, bytes (1 << min wqe_shift)
inline constexpr uint32_t kMmioStoreBytes = 8;       ///< mmio_memcpy_x64 copies with 64-bit stores

/// The RC operations the emulated HCA executes (Atomic: IBV_WR_ATOMIC_CMP_AND_SWP and
/// IBV_WR_ATOMIC_FETCH_AND_ADD, whose WQEs have the same layout).
enum class Opcode { Send, RdmaWrite, RdmaRead, Atomic };

/// One posted send WR as far as its WQE layout is concerned.
struct WqeShape {
  Opcode opcode = Opcode::Send;
  uint32_t num_sge = 1;        ///< gather entries (data segments unless inline)
  bool inline_data = false;    ///< IBV_SEND_INLINE
  uint32_t inline_bytes = 0;   ///< total payload copied into the WQE when inline_data
  bool ud = false;             ///< a UD QP's send: a datagram segment after the control segment
};

/// Inline-segment headers needed for `bytes` of inline data whose first header sits at byte
/// `header_offset` of a 64 B block (libmlx4's loop: a new header each time the data reaches a
/// 64 B boundary, and one for a non-empty tail). RC RDMA WRITE: header at 32, first piece
/// 28 B, later pieces 60 B: 2 B -> 1, 28 B -> 1, 29 B -> 2, 128 B -> 3.
uint32_t inline_segments(uint32_t header_offset, uint32_t bytes);

/// WQE size in 16 B units, as mlx4_post_send() writes it to ctrl->fence_size: 1 (ctrl)
/// + 3 for a UD send (datagram segment) + 1 for RDMA WRITE/READ (raddr), 2 for an atomic (raddr and the atomic segment's
/// swap_add/compare) + either num_sge data segments or ceil((inline_bytes + 4 x
/// inline_segments) / 16). RDMA READ and atomics are never inline: an atomic of one SGE is 4 (64 B).
/// Examples (RDMA WRITE inline): 2 B -> 3 (48 B), 16 B -> 4, 32 B -> 5, 64 B -> 7, 128 B -> 11;
/// a UD SEND of 2 B inline: 1 + 3 + 1 = 5 (80 B), its inline header at byte 64.
uint32_t wqe_size_16(const WqeShape& w);

/// Bytes of the WQE the HCA must read or receive: wqe_size_16 x 16.
inline uint32_t wqe_bytes(const WqeShape& w) { return wqe_size_16(w) * 16; }

/// Send-queue basic blocks the WQE occupies (a doorbell's WQE fetch reads these):
/// ceil(wqe_bytes / 64).
uint32_t wqe_basic_blocks(const WqeShape& w);

/// libmlx4's BlueFlame rule (mlx4_post_send, after the WR loop): one WR in the post
/// (nreq == 1), "inl" set (inline data, an RDMA READ, or no SGE; never for an atomic with its
/// SGE), size > 1 and
/// size <= bf_buf_size / 16. `bf_buf_size` is half the BlueFlame register (the two halves
/// alternate), bytes; 0 means BlueFlame is off (mlx4 gives no BF registers).
bool blueflame_eligible(uint32_t nreq, const WqeShape& w, uint32_t bf_buf_size);

/// Bytes the CPU copies to the BlueFlame register: the WQE rounded up to 64 B
/// (mmio_memcpy_x64(..., align(size * 16, 64))).
uint32_t blueflame_copy_bytes(const WqeShape& w);

/// Largest inline payload of an RC QP whose send WQEs are `wqe_bytes_max` (a power of two
/// >= 64): mlx4_set_sq_sizes(): wqe_size = wqe_bytes_max - 16 (ctrl) - 16 (raddr), minus one
/// 4 B header per 64 B of it: 256 B WQEs -> 224 - 4 x 4 = 208 B.
uint32_t max_inline_data(uint32_t wqe_bytes_max);

}  // namespace hcasim::model::mlx4
