#pragma once
/// \file Work requests and completions as the HCA core holds them: the send WQE (sdp::SendWr and
/// what ibv_send_wr carries beyond it: immediate data, a UD address), the receive WQE
/// (sdp::RecvWr) and the CQE (sdp::Wc and what ibv_wc carries beyond it).
#include <cstdint>

#include "sdp/verbs.h"

namespace hcasim::hca {

/// IBV_ACCESS_REMOTE_ATOMIC (sdp::kRemoteAtomic), by the core's name for it: the right to be the
/// target of an atomic, in the MR table and in a QP's qp_access_flags.
inline constexpr unsigned kRemoteAtomic = sdp::kRemoteAtomic;

/// A send WR's kind beyond sdp::WrOpcode (ibv_wr_opcode): the immediate-data ops, SEND with
/// Invalidate, the memory window ops, and a UD WR's address. (The atomics are sdp::WrOpcode values with their operands in sdp::SendWr.)
struct WrExt {
  /// BindMw (IBV_WR_BIND_MW, and ibv_bind_mw(3)'s) and LocalInv (IBV_WR_LOCAL_INV) are local:
  /// the requester executes them in their turn, nothing goes on the wire (IBA 10.6.7.2).
  /// SendInv (IBV_WR_SEND_WITH_INV, on RC: a SEND whose last packet carries an IETH with the
  /// R_Key `imm`, which the responder invalidates, IBA 9.4.1.3, 10.6.7.2.4).
  enum class Kind : uint8_t { None, SendImm, WriteImm, BindMw, LocalInv, SendInv };
  Kind kind = Kind::None;
  /// wr.imm_data, passed through as given; LocalInv and SendInv: the R_Key to invalidate
  /// (wr.invalidate_rkey, the same union, in host order as libmlx4 takes it)
  uint32_t imm = 0;
  uint16_t ud_dlid = 0;      ///< UD: the address handle's port LID
  uint32_t ud_qpn = 0;       ///< UD: wr.ud.remote_qpn
  uint32_t ud_qkey = 0;      ///< UD: wr.ud.remote_qkey (high bit set: the QP's own Q_Key, IBA 10.2.5)
  uint32_t xrc_srqn = 0;     ///< XRC send QPs: wr.qp_type.xrc.remote_srqn, the XRCETH's XRC SRQ (24 bits)
  /// BindMw: the window's key now (`mw_key`) and after the bind (`mw_new_key`: its index with
  /// the key byte the program chose), the MR and the range and kRemote* rights it binds.
  uint32_t mw_key = 0, mw_new_key = 0, mw_mr_key = 0;
  uint64_t mw_addr = 0, mw_len = 0;
  unsigned mw_access = 0;
  bool imm_data() const { return kind == Kind::SendImm || kind == Kind::WriteImm; }
  bool local() const { return kind == Kind::BindMw || kind == Kind::LocalInv; }
};

/// A send WQE: the WR as posted, its extension and its place in the send queue (`seq`: 0, 1, ...
/// in posting order on its QP, set by the core; a backend keys what it keeps per WQE by it).
struct SendWqe {
  sdp::SendWr wr;
  WrExt x;
  uint64_t seq = 0;
  /// True for an RDMA READ or an atomic: a request answered with data, bounded by max_rd_atomic.
  bool rd_atomic() const { return wr.opcode == sdp::WrOpcode::RdmaRead || wr.atomic(); }
};

/// A completion as the CQ holds it: sdp::Wc and what ibv_wc carries beyond it.
struct Cqe {
  /// ibv_wc_opcode beyond sdp::WcOpcode.
  enum class Kind : uint8_t { Plain, RecvRdmaWithImm, BindMw, LocalInv };
  sdp::Wc wc{};
  Kind kind = Kind::Plain;
  uint32_t src_qp = 0;    ///< the peer QP (receive completions)
  uint16_t slid = 0;      ///< UD receives: the sender port's LID
  bool with_imm = false;  ///< IBV_WC_WITH_IMM: imm is the sender's imm_data
  bool grh = false;       ///< IBV_WC_GRH: the receive buffer's first 40 bytes hold the packet's GRH
  /// IBV_WC_WITH_INV: a SEND with Invalidate was received and the memory window of R_Key `imm`
  /// invalidated (ibv_wc's imm_data and invalidated_rkey are one union; libmlx4 mlx4_poll_one)
  bool with_inv = false;
  uint32_t imm = 0;
};

/// ibv_wc_opcode of a send WR's completion (IBV_WR_SEND -> IBV_WC_SEND, ...).
constexpr sdp::WcOpcode wc_opcode(sdp::WrOpcode op) {
  switch (op) {
    case sdp::WrOpcode::Send: return sdp::WcOpcode::Send;
    case sdp::WrOpcode::RdmaWrite: return sdp::WcOpcode::RdmaWrite;
    case sdp::WrOpcode::RdmaRead: return sdp::WcOpcode::RdmaRead;
    case sdp::WrOpcode::AtomicCmpSwap: return sdp::WcOpcode::CompSwap;
    case sdp::WrOpcode::AtomicFetchAdd: return sdp::WcOpcode::FetchAdd;
  }
  return sdp::WcOpcode::Send;
}

/// A send WR's completion with `status` (success or error) on QP `qpn`; byte_len 8 for an atomic
/// (libmlx4 mlx4_poll_one sets it so for IBV_WC_COMP_SWAP and IBV_WC_FETCH_ADD), else 0.
///
/// The opcode of an error completion: ibv_poll_cq(3) says that when the status is not
/// IBV_WC_SUCCESS only wr_id, status, qp_num and vendor_err are valid, so a consumer must not
/// read it; the core puts the WR's own opcode there (IBV_WC_RDMA_WRITE for a flushed RDMA
/// WRITE, IBV_WC_RECV for a flushed receive), the value a successful completion of the same WR
/// carries, so that the send/receive side of a flushed WR stays visible to a reader who does look.
constexpr sdp::Wc send_wc(const sdp::SendWr& wr, sdp::WcStatus status, uint32_t qpn) {
  return {wr.wr_id, status, wc_opcode(wr.opcode), wr.atomic() ? 8u : 0u, qpn};
}
/// The CQE of a send WQE completing with `status`.
constexpr Cqe send_cqe(const SendWqe& w, sdp::WcStatus status, uint32_t qpn) {
  Cqe c;
  c.wc = send_wc(w.wr, status, qpn);
  if (w.x.kind == WrExt::Kind::BindMw) c.kind = Cqe::Kind::BindMw;
  if (w.x.kind == WrExt::Kind::LocalInv) c.kind = Cqe::Kind::LocalInv;
  return c;
}
/// A receive WR's completion with an error `status` (byte_len 0) on QP `qpn`.
constexpr sdp::Wc recv_error_wc(const sdp::RecvWr& wr, sdp::WcStatus status, uint32_t qpn) {
  return {wr.wr_id, status, sdp::WcOpcode::Recv, 0, qpn};
}

}  // namespace hcasim::hca
