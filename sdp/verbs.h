#pragma once
/// \file The verbs interface the SDP engine talks to, shaped after libibverbs (ibv_post_send,
/// ibv_post_recv, ibv_poll_cq, ibv_req_notify_cq). Three backends implement it: the emulated
/// HCA on SimGrid (sim/), the emulated HCA between processes, and rdma-core.
/// One Verbs object is one connection's resources: a PD, an RC QP and the CQ shared by its
/// send and receive queues (as the OFED 1.3 SDP driver sets them up).
#include <array>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>

#include "sdp/memory.h"

namespace hcasim::sdp {

/// A scatter/gather element: `length` bytes at `addr`, covered by the MR whose lkey it names.
struct Sge {
  Addr addr = 0;
  uint32_t length = 0;
  uint32_t lkey = 0;
};

/// ibv_wr_opcode: the subset SDP uses and the two atomics (IBV_WR_ATOMIC_CMP_AND_SWP,
/// IBV_WR_ATOMIC_FETCH_AND_ADD: an 8-byte read-modify-write at the responder, IBA 1.3 9.4.5, whose
/// value before lands in the WR's local SGE).
enum class WrOpcode : uint8_t { Send, RdmaWrite, RdmaRead, AtomicCmpSwap, AtomicFetchAdd };
/// ibv_wc_opcode (IBV_WC_COMP_SWAP and IBV_WC_FETCH_ADD for the atomics).
enum class WcOpcode : uint8_t { Send, RdmaWrite, RdmaRead, Recv, CompSwap, FetchAdd };
/// ibv_wc_status (the subset the emulated HCAs produce); wc_status_str gives
/// ibv_wc_status_str's text.
enum class WcStatus : uint8_t {
  Success,
  LocLenErr,      ///< a received message is longer than the posted receive buffers
  LocProtErr,     ///< an SGE outside its MR, or an unknown lkey
  RemAccessErr,   ///< RDMA to a bad rkey/range at the responder
  RemInvReqErr,   ///< the responder found the request invalid (message longer than its buffers)
  RemOpErr,       ///< the responder failed locally (a receive WQE outside its MR): NAK remote operational error
  RetryExcErr,    ///< IBV_WC_RETRY_EXC_ERR: no ACK from the responder, transport retries exhausted
  RnrRetryExcErr, ///< the responder had no receive posted (receiver not ready), retries exhausted
  WrFlushErr,     ///< the QP went to the error state with the WR outstanding
  MwBindErr,      ///< a memory window bind or invalidation the HCA refused (IBV_WC_MW_BIND_ERR)
};
const char* wc_status_str(WcStatus s);
/// The status's number in libibverbs' enum ibv_wc_status (verbs.h: IBV_WC_SUCCESS 0,
/// IBV_WC_LOC_LEN_ERR 1, IBV_WC_LOC_PROT_ERR 4, IBV_WC_WR_FLUSH_ERR 5, IBV_WC_MW_BIND_ERR 6,
/// IBV_WC_REM_INV_REQ_ERR 9,
/// IBV_WC_REM_ACCESS_ERR 10, IBV_WC_REM_OP_ERR 11, IBV_WC_RETRY_EXC_ERR 12, IBV_WC_RNR_RETRY_EXC_ERR 13), which
/// perftest prints; this enum's own order is not it.
int wc_status_code(WcStatus s);

/// Scatter/gather entries per work request (ibv_device_attr.max_sge of the emulated HCA and the
/// simulated one): 8, room for the most a program run on the emulator asks for, UCX's UD
/// transport's TX_MIN_SGE (5) + 1 (UCX 1.13 src/uct/ib/ud/base/ud_iface.c; its RC transport asks
/// 5, src/uct/ib/rc/base/rc_iface.c). SDP itself posts at most 2 (BSDH and payload).
inline constexpr std::size_t kMaxSge = 8;

/// ibv_send_wr: one work request of the send queue.
struct SendWr {
  uint64_t wr_id = 0;
  WrOpcode opcode = WrOpcode::Send;
  std::array<Sge, kMaxSge> sg{};
  uint8_t num_sge = 0;
  bool signaled = true;
  /// IBV_SEND_INLINE: the payload travels inside the WQE (no gather DMA read). The emulated
  /// HCA reads it from the gather buffers when the WQE executes, not at post time, so a
  /// caller must not change them before the WR completes (true of the perftest loops).
  bool inline_data = false;
  Addr remote_addr = 0;  ///< RDMA and atomics (wr.rdma / wr.atomic .remote_addr)
  uint32_t rkey = 0;     ///< RDMA and atomics
  uint64_t compare_add = 0;  ///< atomics (wr.atomic.compare_add): CmpSwap's compare value, FetchAdd's addend
  uint64_t swap = 0;         ///< AtomicCmpSwap (wr.atomic.swap): the value stored when the compare matches
  /// True for the two atomic opcodes.
  constexpr bool atomic() const { return opcode == WrOpcode::AtomicCmpSwap || opcode == WrOpcode::AtomicFetchAdd; }
  /// Total gather length in bytes.
  uint64_t length() const {
    uint64_t n = 0;
    for (uint8_t i = 0; i < num_sge; ++i) n += sg[i].length;
    return n;
  }
};

/// ibv_recv_wr.
struct RecvWr {
  uint64_t wr_id = 0;
  std::array<Sge, kMaxSge> sg{};
  uint8_t num_sge = 0;
};

/// ibv_wc: one completion.
struct Wc {
  uint64_t wr_id = 0;
  WcStatus status = WcStatus::Success;
  WcOpcode opcode = WcOpcode::Send;
  uint32_t byte_len = 0;  ///< received bytes (Recv); 8 for an atomic (libmlx4 mlx4_poll_one)
  uint32_t qp_num = 0;
};

/// A verbs call the backend refuses (queue full, QP not ready): the caller's bug.
class VerbsError : public std::runtime_error {
 public:
  explicit VerbsError(const std::string& what) : std::runtime_error(what) {}
};

/// MR and QP access flags (ibv_access_flags); kRemoteAtomic is IBV_ACCESS_REMOTE_ATOMIC, the
/// right to be the target of an atomic.
enum Access : unsigned { kLocalWrite = 1, kRemoteWrite = 2, kRemoteRead = 4, kRemoteAtomic = 8 };

/// One connection's verbs resources.
class Verbs {
 public:
  virtual ~Verbs() = default;
  /// Registers [addr, addr+len) and returns its key (lkey = rkey, as mlx4 does).
  virtual uint32_t reg_mr(Addr addr, uint64_t len, unsigned access) = 0;
  /// A key covering all of the host's memory (ib_get_dma_mr, used by the kernel ULPs).
  virtual uint32_t dma_mr() = 0;
  /// ibv_post_send. Throws VerbsError when the send queue is full or the QP is not in RTS.
  virtual void post_send(const SendWr& wr) = 0;
  /// ibv_post_recv. Throws VerbsError when the receive queue is full.
  virtual void post_recv(const RecvWr& wr) = 0;
  /// ibv_poll_cq: moves up to out.size() completions into out; returns how many.
  virtual int poll_cq(std::span<Wc> out) = 0;
  /// ibv_req_notify_cq(next completion): arms the CQ for one completion event. Returns true
  /// when completions are already waiting (IB_CQ_REPORT_MISSED_EVENTS): poll again.
  virtual bool req_notify_cq() = 0;
  /// Local QP number.
  virtual uint32_t qp_num() const = 0;
  /// Send and receive queue depths the QP was created with.
  virtual uint32_t max_send_wr() const = 0;
  virtual uint32_t max_recv_wr() const = 0;
};

}  // namespace hcasim::sdp
