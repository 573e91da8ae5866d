#include "hca/qp.h"

#include <fmt/format.h>

namespace hcasim::hca {

const char* qp_type_name(QpType t) {
  switch (t) {
    case QpType::Rc: return "RC";
    case QpType::Uc: return "UC";
    case QpType::Ud: return "UD";
    case QpType::XrcSend: return "XRC_SEND";
    case QpType::XrcRecv: return "XRC_RECV";
  }
  return "?";
}

const char* qp_state_name(QpState s) {
  switch (s) {
    case QpState::Reset: return "RESET";
    case QpState::Init: return "INIT";
    case QpState::Rtr: return "RTR";
    case QpState::Rts: return "RTS";
    case QpState::Error: return "ERROR";
  }
  return "?";
}

ModifyRule modify_rule(QpType type, QpState cur, QpState next) {
  using namespace attr;
  constexpr unsigned kPath = kAltPath;
  if (next == QpState::Reset || next == QpState::Error) return {true, 0, 0};
  if (type == QpType::Ud) {  // no peer: the Q_Key; RTR takes nothing
    if (cur == QpState::Reset && next == QpState::Init) return {true, kPkeyIndex | kPort | kQkey, 0};
    if (cur == QpState::Init && next == QpState::Init) return {true, 0, kPkeyIndex | kPort | kQkey};
    if (cur == QpState::Init && next == QpState::Rtr) return {true, 0, kPkeyIndex | kQkey};
    if (cur == QpState::Rtr && next == QpState::Rts) return {true, kSqPsn, kCurState | kQkey};
    if (cur == QpState::Rts && next == QpState::Rts) return {true, 0, kCurState | kQkey};
    return {};
  }
  if (type == QpType::Uc) {  // no ACKs, no RDMA READ: no retry, RNR or RDMA READ attributes
    if (cur == QpState::Reset && next == QpState::Init) return {true, kPkeyIndex | kPort | kAccessFlags, 0};
    if (cur == QpState::Init && next == QpState::Init) return {true, 0, kPkeyIndex | kPort | kAccessFlags};
    if (cur == QpState::Init && next == QpState::Rtr)
      return {true, kAv | kPathMtu | kDestQpn | kRqPsn, kPath | kAccessFlags | kPkeyIndex};
    if (cur == QpState::Rtr && next == QpState::Rts)
      return {true, kSqPsn, kCurState | kPath | kAccessFlags | kPathMigState};
    if (cur == QpState::Rts && next == QpState::Rts) return {true, 0, kCurState | kAccessFlags | kPath | kPathMigState};
    return {};
  }
  switch (cur) {
    case QpState::Reset:
      if (next == QpState::Init) return {true, kPkeyIndex | kPort | kAccessFlags, 0};
      break;
    case QpState::Init:
      if (next == QpState::Init) return {true, 0, kPkeyIndex | kPort | kAccessFlags};
      // An XRC initiator has no responder: no responder resources or RNR timer (the kernel's
      // qp_state_table, IB_QPT_XRC_INI).
      if (next == QpState::Rtr && type == QpType::XrcSend)
        return {true, kAv | kPathMtu | kDestQpn | kRqPsn, kPath | kAccessFlags | kPkeyIndex};
      if (next == QpState::Rtr)
        return {true, kAv | kPathMtu | kDestQpn | kRqPsn | kMaxDestRdAtomic | kMinRnrTimer,
                kPath | kAccessFlags | kPkeyIndex};
      break;
    case QpState::Rtr:
      // An XRC target sends no requests: RTS requires the SQ PSN and timeout only (the kernel's
      // qp_state_table, drivers/infiniband/core/verbs.c, IB_QPT_XRC_TGT), the rest optional.
      if (next == QpState::Rts && type == QpType::XrcRecv)
        return {true, kSqPsn | kTimeout,
                kRetryCnt | kRnrRetry | kMaxQpRdAtomic | kCurState | kPath | kAccessFlags | kMinRnrTimer |
                    kPathMigState};
      if (next == QpState::Rts)
        return {true, kSqPsn | kTimeout | kRetryCnt | kRnrRetry | kMaxQpRdAtomic,
                kCurState | kPath | kAccessFlags | kMinRnrTimer | kPathMigState};
      break;
    case QpState::Rts:
      if (next == QpState::Rts) return {true, 0, kCurState | kAccessFlags | kPath | kPathMigState | kMinRnrTimer};
      break;
    default: break;
  }
  return {};
}

void check_transition(uint32_t qpn, QpState from, QpState to, QpType type) {
  if (!modify_rule(type, from, to).valid)
    throw sdp::VerbsError(
        fmt::format("modify_qp: QP {:#x} cannot go from {} to {}", qpn, qp_state_name(from), qp_state_name(to)));
}

int check_attr(const QpAttr& a, unsigned mask, const DeviceLimits& lim) {
  using namespace attr;
  if ((mask & kPort) != 0 && a.port_num != 1) return EINVAL;
  if ((mask & kPkeyIndex) != 0 && a.pkey_index != 0) return EINVAL;  // one P_Key
  if ((mask & kPathMtu) != 0 && mtu_code(a.path_mtu) == 0) return EINVAL;
  if ((mask & kDestQpn) != 0 && a.dest_qp_num > 0xFFFFFF) return EINVAL;
  if ((mask & kMaxDestRdAtomic) != 0 && a.max_dest_rd_atomic > lim.max_qp_rd_atom) return EINVAL;
  if ((mask & kMaxQpRdAtomic) != 0 && a.max_rd_atomic > lim.max_qp_rd_atom) return EINVAL;
  if ((mask & kMinRnrTimer) != 0 && a.min_rnr_timer > 31) return EINVAL;
  if ((mask & kTimeout) != 0 && a.timeout > 31) return EINVAL;
  if ((mask & kRetryCnt) != 0 && a.retry_cnt > 7) return EINVAL;
  if ((mask & kRnrRetry) != 0 && a.rnr_retry > 7) return EINVAL;
  if ((mask & kAv) != 0 && (a.dlid == 0 || a.ah_port_num > 1)) return EINVAL;
  return 0;
}

int post_errno(PostError e) {
  switch (e) {
    case PostError::None: return 0;
    case PostError::QueueFull:
    case PostError::InlineTooLong: return ENOMEM;
    case PostError::TooManySge:
    case PostError::WrongState:
    case PostError::InlineRead:
    case PostError::BadOpcode:
    case PostError::SrqAttached: return EINVAL;
  }
  return EINVAL;
}

std::string post_error_text(const char* verb, uint32_t qpn, QpState state, PostError e, const sdp::SendWr* wr,
                            const SendLimits* lim) {
  const bool send = wr != nullptr;
  switch (e) {
    case PostError::None: return "";
    case PostError::TooManySge:
      return fmt::format("{}: QP {:#x}: {} SGEs, max {}", verb, qpn, send ? wr->num_sge : 0, sdp::kMaxSge);
    case PostError::WrongState:
      return send ? fmt::format("{}: QP {:#x} is in {}, not RTS", verb, qpn, qp_state_name(state))
                  : fmt::format("{}: QP {:#x} is in {}", verb, qpn, qp_state_name(state));
    case PostError::QueueFull:
      return fmt::format("{}: QP {:#x} {} queue full", verb, qpn, send ? "send" : "receive");
    case PostError::InlineRead: return fmt::format("{}: QP {:#x}: an RDMA READ or atomic cannot be inline", verb, qpn);
    case PostError::InlineTooLong:
      return fmt::format("{}: QP {:#x}: {} B inline exceeds max_inline_data {} B", verb, qpn, send ? wr->length() : 0,
                         lim != nullptr ? lim->max_inline_data : 0);
    case PostError::BadOpcode: return fmt::format("{}: QP {:#x}: an opcode its transport does not have", verb, qpn);
    case PostError::SrqAttached: return fmt::format("{}: QP {:#x} receives from its SRQ", verb, qpn);
  }
  return "";
}

}  // namespace hcasim::hca
