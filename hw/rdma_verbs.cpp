// sdp::Verbs over rdma-core (RdmaVerbs) and the completions it polls (to_wc_status, to_wc).
#include <infiniband/verbs.h>

#include <cerrno>
#include <mutex>

#include <fmt/format.h>

#include "hw/rdma_cm.h"
#include "hw/rdma_device.h"

namespace hcasim::hw {

using detail::errstr;

// ---- completions -----------------------------------------------------------------------------

sdp::WcStatus to_wc_status(ibv_wc_status status, bool* exact) {
  using S = sdp::WcStatus;
  bool same = true;
  S s = S::LocProtErr;
  switch (status) {
    case IBV_WC_SUCCESS: s = S::Success; break;
    case IBV_WC_LOC_LEN_ERR: s = S::LocLenErr; break;
    case IBV_WC_LOC_PROT_ERR: s = S::LocProtErr; break;
    case IBV_WC_WR_FLUSH_ERR: s = S::WrFlushErr; break;
    case IBV_WC_REM_INV_REQ_ERR: s = S::RemInvReqErr; break;
    case IBV_WC_REM_ACCESS_ERR: s = S::RemAccessErr; break;
    case IBV_WC_REM_OP_ERR: s = S::RemOpErr; break;
    case IBV_WC_RETRY_EXC_ERR: s = S::RetryExcErr; break;
    case IBV_WC_RNR_RETRY_EXC_ERR: s = S::RnrRetryExcErr; break;
    // No sdp equivalent: the nearest.
    case IBV_WC_LOC_QP_OP_ERR:       // the WQE is inconsistent with the QP
    case IBV_WC_LOC_EEC_OP_ERR:      // RD only
    case IBV_WC_MW_BIND_ERR:         // memory windows: unused
    case IBV_WC_LOC_ACCESS_ERR:      // an RDMA read response hit a local buffer without write access
    case IBV_WC_LOC_RDD_VIOL_ERR:    // RD only
    case IBV_WC_INV_EECN_ERR:        // RD only
    case IBV_WC_INV_EEC_STATE_ERR:   // RD only
    case IBV_WC_GENERAL_ERR:
    case IBV_WC_TM_ERR:              // tag matching: unused
    case IBV_WC_TM_RNDV_INCOMPLETE:
      s = S::LocProtErr;
      same = false;
      break;
    case IBV_WC_BAD_RESP_ERR:        // unexpected transport opcode in the response
    case IBV_WC_REM_INV_RD_REQ_ERR:
    case IBV_WC_REM_ABORT_ERR:
      s = S::RemInvReqErr;
      same = false;
      break;
    case IBV_WC_RESP_TIMEOUT_ERR:
      s = S::RetryExcErr;
      same = false;
      break;
    case IBV_WC_FATAL_ERR:           // the CQ or QP went to the error state
      s = S::WrFlushErr;
      same = false;
      break;
    default:
      s = S::LocProtErr;
      same = false;
      break;
  }
  if (exact != nullptr) *exact = same;
  return s;
}

sdp::Wc to_wc(const ibv_wc& wc) {
  sdp::Wc out;
  out.wr_id = wc.wr_id;
  out.status = to_wc_status(wc.status);
  out.byte_len = wc.byte_len;
  out.qp_num = wc.qp_num;
  out.opcode = sdp::WcOpcode::Send;
  if (wc.status == IBV_WC_SUCCESS) {
    if ((wc.opcode & IBV_WC_RECV) != 0)
      out.opcode = sdp::WcOpcode::Recv;
    else if (wc.opcode == IBV_WC_RDMA_WRITE)
      out.opcode = sdp::WcOpcode::RdmaWrite;
    else if (wc.opcode == IBV_WC_RDMA_READ)
      out.opcode = sdp::WcOpcode::RdmaRead;
    else if (wc.opcode == IBV_WC_COMP_SWAP)
      out.opcode = sdp::WcOpcode::CompSwap;
    else if (wc.opcode == IBV_WC_FETCH_ADD)
      out.opcode = sdp::WcOpcode::FetchAdd;
  }
  return out;
}

// ---- RdmaVerbs -------------------------------------------------------------------------------

RdmaVerbs::RdmaVerbs(ibv_pd* pd, ibv_qp* qp, ibv_cq* cq, uint32_t dma_lkey, uint32_t max_send_wr,
                     uint32_t max_recv_wr, uint32_t max_inline_data)
    : pd_(pd),
      qp_(qp),
      cq_(cq),
      dma_lkey_(dma_lkey),
      max_send_wr_(max_send_wr),
      max_recv_wr_(max_recv_wr),
      max_inline_data_(max_inline_data) {}

RdmaVerbs::~RdmaVerbs() {
  for (ibv_mr* mr : mrs_) ::ibv_dereg_mr(mr);
}

uint32_t RdmaVerbs::reg_mr(sdp::Addr addr, uint64_t len, unsigned access) {
  int flags = 0;
  if ((access & sdp::kLocalWrite) != 0) flags |= IBV_ACCESS_LOCAL_WRITE;
  if ((access & sdp::kRemoteWrite) != 0) flags |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
  if ((access & sdp::kRemoteRead) != 0) flags |= IBV_ACCESS_REMOTE_READ;
  if ((access & sdp::kRemoteAtomic) != 0) flags |= IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_LOCAL_WRITE;
  ibv_mr* mr = ::ibv_reg_mr(pd_, reinterpret_cast<void*>(static_cast<uintptr_t>(addr)), len, flags);
  if (mr == nullptr)
    throw sdp::VerbsError(fmt::format("ibv_reg_mr([{:#x}, +{}), access {:#x}): {}", addr, len, flags, errstr(errno)));
  if ((access & (sdp::kRemoteWrite | sdp::kRemoteRead | sdp::kRemoteAtomic)) != 0 && mr->lkey != mr->rkey) {
    const uint32_t lkey = mr->lkey, rkey = mr->rkey;
    ::ibv_dereg_mr(mr);
    throw sdp::VerbsError(fmt::format("ibv_reg_mr([{:#x}, +{}) gave lkey {:#x} but rkey {:#x}: this device's keys "
                                      "differ, and sdp::Verbs has one key for both",
                                      addr, len, lkey, rkey));
  }
  mrs_.push_back(mr);
  return mr->lkey;
}

namespace {
/// The first `n` SGEs of a work request as ibv_sge (the caller checked n <= kMaxSge).
std::array<ibv_sge, sdp::kMaxSge> to_ibv_sges(const std::array<sdp::Sge, sdp::kMaxSge>& sg, uint8_t n) {
  std::array<ibv_sge, sdp::kMaxSge> out{};
  for (uint8_t i = 0; i < n; ++i) out[i] = {sg[i].addr, sg[i].length, sg[i].lkey};
  return out;
}
}  // namespace

void RdmaVerbs::post_send(const sdp::SendWr& wr) {
  if (wr.num_sge > sdp::kMaxSge)
    throw sdp::VerbsError(fmt::format("ibv_post_send: {} SGEs, the QP takes {}", wr.num_sge, sdp::kMaxSge));
  std::array<ibv_sge, sdp::kMaxSge> sge = to_ibv_sges(wr.sg, wr.num_sge);
  ibv_send_wr w{};
  w.wr_id = wr.wr_id;
  w.sg_list = sge.data();
  w.num_sge = wr.num_sge;
  switch (wr.opcode) {
    case sdp::WrOpcode::Send: w.opcode = IBV_WR_SEND; break;
    case sdp::WrOpcode::RdmaWrite: w.opcode = IBV_WR_RDMA_WRITE; break;
    case sdp::WrOpcode::RdmaRead: w.opcode = IBV_WR_RDMA_READ; break;
    case sdp::WrOpcode::AtomicCmpSwap: w.opcode = IBV_WR_ATOMIC_CMP_AND_SWP; break;
    case sdp::WrOpcode::AtomicFetchAdd: w.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD; break;
  }
  unsigned flags = 0;
  if (wr.signaled) flags |= IBV_SEND_SIGNALED;
  // Inline needs a payload the WQE can hold, and carries data out only (not RDMA read, not atomics).
  if (wr.inline_data && wr.opcode != sdp::WrOpcode::RdmaRead && !wr.atomic() && wr.length() <= max_inline_data_)
    flags |= IBV_SEND_INLINE;
  w.send_flags = flags;
  if (wr.atomic()) {
    w.wr.atomic.remote_addr = wr.remote_addr;
    w.wr.atomic.rkey = wr.rkey;
    w.wr.atomic.compare_add = wr.compare_add;
    w.wr.atomic.swap = wr.swap;
  } else if (wr.opcode != sdp::WrOpcode::Send) {
    w.wr.rdma.remote_addr = wr.remote_addr;
    w.wr.rdma.rkey = wr.rkey;
  }
  // Counted before posting, so that a completion is never seen before its WR is counted.
  if (wr.signaled) sends_posted_.fetch_add(1);
  ibv_send_wr* bad = nullptr;
  const int rc = ::ibv_post_send(qp_, &w, &bad);
  if (rc != 0) {
    if (wr.signaled) sends_posted_.fetch_sub(1);
    throw sdp::VerbsError(fmt::format("ibv_post_send (QP {:#x}, wr_id {}, {} bytes): {}", qp_->qp_num, wr.wr_id,
                                      wr.length(), errstr(rc < 0 ? errno : rc)));
  }
}

void RdmaVerbs::post_recv(const sdp::RecvWr& wr) {
  if (wr.num_sge > sdp::kMaxSge)
    throw sdp::VerbsError(fmt::format("ibv_post_recv: {} SGEs, the QP takes {}", wr.num_sge, sdp::kMaxSge));
  std::array<ibv_sge, sdp::kMaxSge> sge = to_ibv_sges(wr.sg, wr.num_sge);
  ibv_recv_wr w{};
  w.wr_id = wr.wr_id;
  w.sg_list = sge.data();
  w.num_sge = wr.num_sge;
  ibv_recv_wr* bad = nullptr;
  const int rc = ::ibv_post_recv(qp_, &w, &bad);
  if (rc != 0)
    throw sdp::VerbsError(fmt::format("ibv_post_recv (QP {:#x}, wr_id {}): {}", qp_->qp_num, wr.wr_id,
                                      errstr(rc < 0 ? errno : rc)));
}

int RdmaVerbs::poll_cq(std::span<sdp::Wc> out) {
  std::array<ibv_wc, 32> wc;
  std::size_t total = 0;
  while (total < out.size()) {
    const int want = static_cast<int>(std::min(wc.size(), out.size() - total));
    const int n = ::ibv_poll_cq(cq_, want, wc.data());
    if (n < 0) throw sdp::VerbsError(fmt::format("ibv_poll_cq (QP {:#x}) failed ({})", qp_->qp_num, n));
    for (int i = 0; i < n; ++i) {
      const ibv_wc& w = wc[static_cast<std::size_t>(i)];
      const sdp::Wc c = to_wc(w);
      out[total++] = c;
      if (w.status == IBV_WC_SUCCESS) {
        if ((w.opcode & IBV_WC_RECV) == 0) sends_completed_.fetch_add(1);
        continue;
      }
      failed_.store(true);
      std::lock_guard<std::mutex> lock(error_mutex_);
      // Keep the first error: the flushes that follow it say less.
      if (error_.empty() || (error_flush_ && w.status != IBV_WC_WR_FLUSH_ERR)) {
        error_ = fmt::format("wr_id {}: {} (ibv_wc_status {}, vendor_err {:#x}), seen as {}", w.wr_id,
                             ::ibv_wc_status_str(w.status), static_cast<int>(w.status), w.vendor_err,
                             sdp::wc_status_str(c.status));
        error_flush_ = w.status == IBV_WC_WR_FLUSH_ERR;
      }
    }
    if (n < want) break;
  }
  return static_cast<int>(total);
}

bool RdmaVerbs::req_notify_cq() {
  const int rc = ::ibv_req_notify_cq(cq_, 0);
  if (rc != 0)
    throw sdp::VerbsError(fmt::format("ibv_req_notify_cq (QP {:#x}): {}", qp_->qp_num, errstr(rc < 0 ? errno : rc)));
  return false;
}

uint32_t RdmaVerbs::qp_num() const { return qp_->qp_num; }

std::string RdmaVerbs::last_wc_error() const {
  std::lock_guard<std::mutex> lock(error_mutex_);
  return error_;
}

}  // namespace hcasim::hw
