#pragma once
/// \file The hardware backend of sdp::Device: a real HCA (mlx4, mlx5, ...) through libibverbs
/// and librdmacm (rdma-core). One device = one PD and one MR over the process's memory arena;
/// one connection = one RC QP, one CQ shared by its send and receive queues, one completion
/// channel and its own RDMA CM event channel, as the OFED 1.3 SDP driver sets a socket up.
///
/// Port space: rdma-core 44's <rdma/rdma_cma.h> has no RDMA_PS_SDP (the SDP port space was
/// removed from the kernel with ib_sdp), so connections use RDMA_PS_TCP. Over the IB CM (IB
/// and RoCE) the RDMA CM then puts its own 36-byte header in front of the REQ private data,
/// which leaves kReqPrivateDataMax = 56 bytes for the caller's (see rdma_connect(3)).
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include <infiniband/verbs.h>

#include "sdp/device.h"
#include "sdp/verbs.h"

namespace hcasim::hw {

/// Bytes of a CM REQ's private data field (IBA vol. 1 ch. 12.6, CM REQ).
inline constexpr std::size_t kIbCmReqPrivateData = 92;
/// Private data bytes a CM REQ carries for the caller with RDMA_PS_TCP over the IB CM: the
/// 92-byte REQ private data (IBA vol. 1 ch. 12.6, CM REQ) less the RDMA CM's 36-byte header
/// (struct cma_hdr; rdma_connect(3): "maximum of 56 bytes" for RDMA_PS_TCP on IB).
inline constexpr std::size_t kReqPrivateDataMax = 56;
/// Private data bytes of a CM REP (IBA vol. 1 ch. 12.6, CM REP; rdma_accept(3): 196 bytes for
/// RDMA_PS_TCP).
inline constexpr std::size_t kRepPrivateDataMax = 196;
/// Private data bytes of a CM REJ (IBA vol. 1 ch. 12.6, CM REJ; the kernel's
/// IB_CM_REJ_PRIVATE_DATA_SIZE).
inline constexpr std::size_t kRejPrivateDataMax = 148;
/// Payload bytes asked for IBV_SEND_INLINE per QP (perftest's default for RC sends); a
/// device that refuses gets a QP without inline support (max_inline_data 0).
inline constexpr uint32_t kMaxInlineRequest = 236;

/// Opens the RDMA device `name` ("" = the first one ibv_get_device_list(3) lists, else the one
/// whose ibv_get_device_name(3) is `name`) with a memory arena of `memory_bytes` bytes, all of
/// it registered as one MR (ibv_reg_mr(3), local write, remote write and remote read), in a PD
/// (ibv_alloc_pd(3)) on the ibv_context librdmacm binds cm_ids of that device to
/// (rdma_get_devices(3)).
///
/// Throws sdp::DeviceError, one line: "no RDMA device: ibv_get_device_list: <strerror> (...; use
/// --device emu ...)" when libibverbs finds no RDMA support, "no RDMA device found (...)" when
/// it lists none, "RDMA device 'x' not found (have: a, b)" when `name` matches none, and a
/// message naming the device and the failing call when the PD or the MR cannot be had
/// (registering pins the whole arena: it needs `ulimit -l` >= memory_bytes). Throws
/// sdp::MemoryError when the arena cannot be reserved.
std::unique_ptr<sdp::Device> open_rdma_device(const std::string& name, uint64_t memory_bytes);

/// The sdp::WcStatus nearest to an ibv_wc_status (ibv_poll_cq(3); IBA vol. 1 ch. 11, Poll for
/// Completion). Exact for the statuses sdp has; the others map to the nearest
/// (local QP/access/bind/RDD/EEC/general errors -> LocProtErr; bad response, remote
/// operation error, remote abort, invalid RD request -> RemInvReqErr; response timeout ->
/// RetryExcErr; fatal -> WrFlushErr), so `exact` says whether the mapping lost information.
sdp::WcStatus to_wc_status(ibv_wc_status status, bool* exact = nullptr);

/// The sdp::Wc of an ibv_wc. The opcode is meaningful for successful completions only: for
/// an error completion ibv_poll_cq(3) leaves ibv_wc.opcode undefined, and it is reported as
/// WcOpcode::Send.
sdp::Wc to_wc(const ibv_wc& wc);

/// One line for the status of an RDMA_CM_EVENT_REJECTED event (rdma_get_cm_event(3)): over
/// the IB CM the status is the REJ reason (IBA vol. 1 ch. 12.6, CM REJ, reject reasons), e.g.
/// "IB CM REJ reason 8, invalid service ID"; a negative status is an errno (iWARP).
std::string reject_reason_str(int status);

/// The text in a REJ's private data when the rejecting side put printable text there (ASCII,
/// up to the first NUL, the rest zero padding), else "".
std::string printable_private_data(std::span<const uint8_t> data);

/// sdp::Verbs over one RC QP and its CQ (ibv_post_send(3), ibv_post_recv(3), ibv_poll_cq(3),
/// ibv_req_notify_cq(3)). It does not own the QP or the CQ (its connection does); it owns the
/// MRs reg_mr() made and deregisters them when destroyed. The engine serialises its calls;
/// the counters drain() reads are atomic.
class RdmaVerbs final : public sdp::Verbs {
 public:
  /// `dma_lkey` is the device MR's lkey (dma_mr()); max_send_wr / max_recv_wr are the depths
  /// the caller asked (the HCA may have rounded them up); max_inline_data is the QP's actual
  /// inline limit (ibv_qp_cap after ibv_create_qp(3)), bytes.
  RdmaVerbs(ibv_pd* pd, ibv_qp* qp, ibv_cq* cq, uint32_t dma_lkey, uint32_t max_send_wr, uint32_t max_recv_wr,
            uint32_t max_inline_data);
  ~RdmaVerbs() override;
  RdmaVerbs(const RdmaVerbs&) = delete;
  RdmaVerbs& operator=(const RdmaVerbs&) = delete;

  /// ibv_reg_mr(3) of [addr, addr+len) (addr is a pointer into this process). Remote write
  /// implies local write (ibv_reg_mr(3) requires it). Returns the lkey, which the HCA must also use
  /// as the rkey when remote access is asked (mlx4 and mlx5 do): throws sdp::VerbsError when
  /// it does not, or when the registration fails (strerror of errno).
  uint32_t reg_mr(sdp::Addr addr, uint64_t len, unsigned access) override;
  /// The lkey of the device's MR over the whole memory arena.
  uint32_t dma_mr() override { return dma_lkey_; }
  /// ibv_post_send(3): IBV_WR_SEND / IBV_WR_RDMA_WRITE / IBV_WR_RDMA_READ,
  /// IBV_SEND_SIGNALED when signaled, IBV_SEND_INLINE when inline_data and the payload fits
  /// the QP's max_inline_data (a larger one is sent gathered from its registered buffers).
  /// Throws sdp::VerbsError with strerror of the return value (ENOMEM: send queue full;
  /// EINVAL: bad WR or QP state).
  void post_send(const sdp::SendWr& wr) override;
  /// ibv_post_recv(3). Throws sdp::VerbsError with strerror of the return value.
  void post_recv(const sdp::RecvWr& wr) override;
  /// ibv_poll_cq(3). Counts successful send-queue completions for drain(); an error
  /// completion marks the QP failed and keeps its vendor text (last_wc_error()). Throws
  /// sdp::VerbsError when ibv_poll_cq fails.
  int poll_cq(std::span<sdp::Wc> out) override;
  /// ibv_req_notify_cq(cq, 0) (next completion, solicited or not). Returns false: the engine
  /// polls again after arming, which catches completions that came before. Throws
  /// sdp::VerbsError when arming fails.
  bool req_notify_cq() override;
  /// The QP's number (ibv_qp.qp_num).
  uint32_t qp_num() const override;
  /// The queue depths asked at creation, WRs (ibv_create_qp(3) may have given more; the
  /// engine posts no more than these).
  uint32_t max_send_wr() const override { return max_send_wr_; }
  uint32_t max_recv_wr() const override { return max_recv_wr_; }

  /// Signaled send WRs posted so far, and successful completions of them polled so far.
  uint64_t signaled_sends_posted() const { return sends_posted_.load(); }
  uint64_t sends_completed() const { return sends_completed_.load(); }
  /// True once an error completion was polled or mark_failed() was called: outstanding WRs
  /// flush rather than complete.
  bool failed() const { return failed_.load(); }
  /// Marks the QP as gone to the error state (the connection moved it there).
  void mark_failed() { failed_.store(true); }
  /// The first error completion polled (other than a flush, when one came), in rdma-core's words: "wr_id 7: IBV_WC_REM_OP_ERR
  /// (remote operation error), vendor_err 0x1b, seen as remote invalid request error"; "" when
  /// none.
  std::string last_wc_error() const;

 private:
  ibv_pd* pd_;
  ibv_qp* qp_;
  ibv_cq* cq_;
  uint32_t dma_lkey_;
  uint32_t max_send_wr_, max_recv_wr_, max_inline_data_;
  std::vector<ibv_mr*> mrs_;
  std::atomic<uint64_t> sends_posted_{0};
  std::atomic<uint64_t> sends_completed_{0};
  std::atomic<bool> failed_{false};
  mutable std::mutex error_mutex_;
  std::string error_;
  bool error_flush_ = false;  // error_ is a flush, which a more telling error replaces
};

}  // namespace hcasim::hw
