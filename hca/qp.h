#pragma once
/// \file The HCA core's RC queue pair without time: its state machine (IBA 1.2.1 10.3.1,
/// ibv_modify_qp(3)), the checks a post makes (ibv_post_send(3), ibv_post_recv(3)) and the
/// completions of the error state (flush). Both emulated HCAs ask these and act on the answer.
#include <cstdint>
#include <string>

#include "sdp/verbs.h"

namespace hcasim::hca {

/// ibv_qp_state, the RC subset the emulators go through (SQD and SQE are not emulated).
enum class QpState : uint8_t { Reset, Init, Rtr, Rts, Error };
/// "RESET", "INIT", "RTR", "RTS", "ERROR" (ibv_qp_state's names).
const char* qp_state_name(QpState s);

/// True when ibv_modify_qp may move a QP from `from` to `to` (IBA 10.3.1, figure 124's RC
/// subset): RESET->INIT, INIT->INIT, INIT->RTR, RTR->RTS, RTS->RTS, and any state to RESET or
/// ERROR. Everything else (RESET->RTR, INIT->RTS, ERROR->INIT, ...) is EINVAL.
constexpr bool transition_allowed(QpState from, QpState to) {
  if (to == QpState::Reset || to == QpState::Error) return true;
  switch (from) {
    case QpState::Reset: return to == QpState::Init;
    case QpState::Init: return to == QpState::Init || to == QpState::Rtr;
    case QpState::Rtr: return to == QpState::Rts;
    case QpState::Rts: return to == QpState::Rts;
    case QpState::Error: return false;
  }
  return false;
}
/// Throws sdp::VerbsError "modify_qp: QP 0x48 cannot go from RESET to RTS" unless
/// transition_allowed(from, to).
void check_transition(uint32_t qpn, QpState from, QpState to);

/// What a post does with a WR.
enum class Post : uint8_t {
  Accept,  ///< queued
  Flush,   ///< the QP is in ERROR: the WR completes at once with WR_FLUSH_ERR (IBA 10.3.1,
           ///< "Error" state: WRs posted are completed with flush error; mlx4/mlx5 accept them)
  Refuse,  ///< an immediate error (the verb returns EINVAL / ENOMEM): see PostError
};
/// Why a post is refused.
enum class PostError : uint8_t {
  None,
  TooManySge,      ///< num_sge > the QP's max_send_sge / max_recv_sge (sdp::kMaxSge): EINVAL
  WrongState,      ///< send: not RTS (nor ERROR); receive: RESET (IBA 10.3.1: receives may be posted from INIT)
  QueueFull,       ///< max_send_wr / max_recv_wr WRs outstanding: ENOMEM
  InlineRead,      ///< IBV_SEND_INLINE on an RDMA READ (nothing to gather): EINVAL
  InlineTooLong,   ///< inline payload over max_inline_data (libmlx4: ENOMEM)
  MessageTooLong,  ///< over the port's max_msg_sz (the emulator's own limit)
};

/// The send queue's limits.
struct SendLimits {
  uint32_t max_send_wr = 0;
  uint32_t max_inline_data = 0;  ///< bytes
  uint64_t max_message = UINT64_MAX;  ///< bytes per WR
};

/// The verdict of ibv_post_send for `wr` on a QP in `state` with `outstanding` send WRs not
/// yet completed. The checks run in this order: SGE count, state (ERROR flushes), queue room,
/// inline rules, message size. Cheap: compares only (it runs on every post).
struct PostCheck {
  Post post = Post::Accept;
  PostError error = PostError::None;
};
inline PostCheck check_post_send(QpState state, uint32_t outstanding, const SendLimits& lim, const sdp::SendWr& wr) {
  if (wr.num_sge > sdp::kMaxSge) return {Post::Refuse, PostError::TooManySge};
  if (state == QpState::Error) return {Post::Flush, PostError::None};
  if (state != QpState::Rts) return {Post::Refuse, PostError::WrongState};
  if (outstanding >= lim.max_send_wr) return {Post::Refuse, PostError::QueueFull};
  if (wr.inline_data) {
    if (wr.opcode == sdp::WrOpcode::RdmaRead) return {Post::Refuse, PostError::InlineRead};
    if (wr.length() > lim.max_inline_data) return {Post::Refuse, PostError::InlineTooLong};
  }
  if (lim.max_message != UINT64_MAX && wr.length() > lim.max_message) return {Post::Refuse, PostError::MessageTooLong};
  return {};
}
/// The verdict of ibv_post_recv for `wr` on a QP in `state` with `posted` receive WRs waiting
/// and room for `max_recv_wr`.
inline PostCheck check_post_recv(QpState state, size_t posted, uint32_t max_recv_wr, const sdp::RecvWr& wr) {
  if (wr.num_sge > sdp::kMaxSge) return {Post::Refuse, PostError::TooManySge};
  if (state == QpState::Error) return {Post::Flush, PostError::None};
  if (state == QpState::Reset) return {Post::Refuse, PostError::WrongState};
  if (posted >= max_recv_wr) return {Post::Refuse, PostError::QueueFull};
  return {};
}
/// The sdp::VerbsError message of a refused post: "post_send: QP 0x48 is in INIT, not RTS",
/// "post_send: QP 0x48: 3 SGEs, max 2", ...
std::string post_error_text(const char* verb, uint32_t qpn, QpState state, PostError e, const sdp::SendWr* wr,
                            const SendLimits* lim);

/// ibv_wc_opcode of a send WR's completion (IBV_WR_SEND -> IBV_WC_SEND, ...).
constexpr sdp::WcOpcode wc_opcode(sdp::WrOpcode op) {
  switch (op) {
    case sdp::WrOpcode::Send: return sdp::WcOpcode::Send;
    case sdp::WrOpcode::RdmaWrite: return sdp::WcOpcode::RdmaWrite;
    case sdp::WrOpcode::RdmaRead: return sdp::WcOpcode::RdmaRead;
  }
  return sdp::WcOpcode::Send;
}

/// A send WR's completion with `status` (success or error) on QP `qpn`.
///
/// The opcode of an error completion: ibv_poll_cq(3) says that when the status is not
/// IBV_WC_SUCCESS only wr_id, status, qp_num and vendor_err are valid, so a consumer must not
/// read it; both emulators put the WR's own opcode there (IBV_WC_RDMA_WRITE for a flushed
/// RDMA WRITE, IBV_WC_RECV for a flushed receive), the value a successful completion of the
/// same WR carries, so that the send/receive side of a flushed WR stays visible to a reader
/// who does look.
constexpr sdp::Wc send_wc(const sdp::SendWr& wr, sdp::WcStatus status, uint32_t qpn) {
  return {wr.wr_id, status, wc_opcode(wr.opcode), 0, qpn};
}
/// A receive WR's completion with an error `status` (byte_len 0) on QP `qpn`.
constexpr sdp::Wc recv_error_wc(const sdp::RecvWr& wr, sdp::WcStatus status, uint32_t qpn) {
  return {wr.wr_id, status, sdp::WcOpcode::Recv, 0, qpn};
}

/// The flush of a QP entering ERROR (IBA 10.3.1, 11.5.2.2: every WR not yet completed
/// completes with WR_FLUSH_ERR, the send queue's in order, then the receive queue's):
/// calls `out(wc)` for each WR of `sq` (whose element gives its SendWr through `wr_of`) and
/// then of `rq`, and empties both. A template so that each backend keeps its own queue types
/// (no copy, no virtual call).
template <class SendQueue, class WrOf, class RecvQueue, class Out>
void flush_queues(uint32_t qpn, SendQueue& sq, WrOf wr_of, RecvQueue& rq, Out out) {
  while (!sq.empty()) {
    out(send_wc(wr_of(sq.front()), sdp::WcStatus::WrFlushErr, qpn));
    sq.pop_front();
  }
  while (!rq.empty()) {
    out(recv_error_wc(rq.front(), sdp::WcStatus::WrFlushErr, qpn));
    rq.pop_front();
  }
}

}  // namespace hcasim::hca
