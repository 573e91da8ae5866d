#pragma once
/// \file The HCA core's queue pair without time: its types and states, the one table of
/// ibv_modify_qp(3) transitions with the attributes each requires and allows (IBA 1.2.1 10.3.1
/// figure 124, 11.2.4.2 table 92; the kernel's ib_modify_qp_is_ok), the attribute ranges, the
/// checks a post makes (ibv_post_send(3), ibv_post_recv(3)) with the errno of each refusal, and
/// the completions of the error state (flush). The simulated HCA, the emulated one and the verbs
/// shim all ask these; none keeps a table of its own.
#include <cerrno>
#include <cstdint>
#include <string>

#include "hca/wqe.h"
#include "sdp/verbs.h"

namespace hcasim::hca {

/// ibv_qp_type: the transports the core runs (IBA 9.8: reliable and unreliable connected,
/// unreliable datagram) and the two halves of an XRC connection (IBA 1.2.1 annex A14, eXtended
/// Reliable Connected): XrcSend (IBV_QPT_XRC_SEND, the XRC initiator: a send queue only, each
/// request naming the remote XRC SRQ in its XRCETH) and XrcRecv (IBV_QPT_XRC_RECV, the XRC
/// target: no send or receive queue of its own, its receives taken from the XRC SRQ each request
/// names, within its XRC domain).
enum class QpType : uint8_t { Rc, Uc, Ud, XrcSend, XrcRecv };
/// "RC", "UC", "UD", "XRC_SEND", "XRC_RECV".
const char* qp_type_name(QpType t);
/// True for the reliable connected types: RC and both XRC halves (ACKs, retries, RDMA READ and
/// atomics; an XRC connection runs RC's protocol, IBA A14).
constexpr bool reliable_connected(QpType t) { return t == QpType::Rc || t == QpType::XrcSend || t == QpType::XrcRecv; }
/// True for an XRC QP (either half).
constexpr bool is_xrc(QpType t) { return t == QpType::XrcSend || t == QpType::XrcRecv; }

/// ibv_qp_state, the subset the core goes through (SQD and SQE are not emulated).
enum class QpState : uint8_t { Reset, Init, Rtr, Rts, Error };
/// "RESET", "INIT", "RTR", "RTS", "ERROR" (ibv_qp_state's names).
const char* qp_state_name(QpState s);

/// ibv_qp_attr_mask bits, with libibverbs' values (verbs.h enum ibv_qp_attr_mask), so that a mask
/// passes between the verbs shim and the core unchanged.
namespace attr {
inline constexpr unsigned kState = 1u << 0;
inline constexpr unsigned kCurState = 1u << 1;
inline constexpr unsigned kAccessFlags = 1u << 3;
inline constexpr unsigned kPkeyIndex = 1u << 4;
inline constexpr unsigned kPort = 1u << 5;
inline constexpr unsigned kQkey = 1u << 6;
inline constexpr unsigned kAv = 1u << 7;
inline constexpr unsigned kPathMtu = 1u << 8;
inline constexpr unsigned kTimeout = 1u << 9;
inline constexpr unsigned kRetryCnt = 1u << 10;
inline constexpr unsigned kRnrRetry = 1u << 11;
inline constexpr unsigned kRqPsn = 1u << 12;
inline constexpr unsigned kMaxQpRdAtomic = 1u << 13;
inline constexpr unsigned kAltPath = 1u << 14;
inline constexpr unsigned kMinRnrTimer = 1u << 15;
inline constexpr unsigned kSqPsn = 1u << 16;
inline constexpr unsigned kMaxDestRdAtomic = 1u << 17;
inline constexpr unsigned kPathMigState = 1u << 18;
inline constexpr unsigned kCap = 1u << 19;
inline constexpr unsigned kDestQpn = 1u << 20;
}  // namespace attr

/// The attributes a transition requires and those it also allows (IBA table 92).
struct ModifyRule {
  bool valid = false;     ///< the transition exists for the QP type
  unsigned required = 0;  ///< attr:: bits that must be given
  unsigned optional = 0;  ///< attr:: bits that may be given
};
/// The rule of `type` going from `cur` to `next` (any state to RESET or ERROR needs nothing; RESET
/// -> INIT, INIT -> INIT, INIT -> RTR, RTR -> RTS, RTS -> RTS; UD without a peer, UC without the
/// retry, RNR and RDMA READ attributes). Everything else is not valid.
ModifyRule modify_rule(QpType type, QpState cur, QpState next);
/// True when the transition exists for an RC QP.
inline bool transition_allowed(QpState from, QpState to) { return modify_rule(QpType::Rc, from, to).valid; }
/// Throws sdp::VerbsError "modify_qp: QP 0x48 cannot go from RESET to RTS" unless the transition
/// exists for `type`.
void check_transition(uint32_t qpn, QpState from, QpState to, QpType type = QpType::Rc);

/// The values ibv_modify_qp(3) gives a QP, as the core keeps them. Units: path_mtu in bytes
/// (256 .. 4096), the timers as the IBA's 5-bit codes.
struct QpAttr {
  QpState qp_state = QpState::Reset;
  QpState cur_qp_state = QpState::Reset;
  unsigned qp_access_flags = 0;  ///< sdp::kRemoteWrite / kRemoteRead, kRemoteAtomic
  uint16_t pkey_index = 0;
  uint8_t port_num = 1;
  uint32_t qkey = 0;
  uint16_t dlid = 0;             ///< the address vector's destination LID
  uint8_t ah_port_num = 1;       ///< the address vector's port (0 or 1: the one port)
  uint32_t path_mtu = 2048;      ///< bytes
  uint8_t timeout = 14;          ///< local ACK timeout code: 4.096 us x 2^timeout, 0 = none
  uint8_t retry_cnt = 7;         ///< 0-7
  uint8_t rnr_retry = 7;         ///< 0-7, 7 = for ever
  uint32_t rq_psn = 0;           ///< 24 bits
  uint32_t sq_psn = 0;           ///< 24 bits
  uint8_t max_rd_atomic = 1;     ///< RDMA READs and atomics this QP has outstanding as requester
  uint8_t max_dest_rd_atomic = 1;  ///< ... and answers at once as responder
  uint8_t min_rnr_timer = 12;    ///< IBA table 45 code of this QP's RNR NAKs
  uint32_t dest_qp_num = 0;      ///< 24 bits
};

/// The device limits the core enforces (ibv_query_device(3), ibv_query_port(3)): what a backend's
/// device reports, checked in one place.
struct DeviceLimits {
  uint32_t max_qp_wr = 16351;      ///< ConnectX-3 (emu/verbs_shim/device.h)
  uint32_t max_sge = sdp::kMaxSge;
  uint32_t max_inline_data = 912;  ///< mlx4's, as perftest uses it (MAX_INLINE)
  uint64_t max_msg_sz = 1u << 30;  ///< ConnectX-3 max_msg_sz 0x40000000
  uint8_t max_qp_rd_atom = 16;     ///< max_qp_rd_atom and max_qp_init_rd_atom
  uint32_t port_mtu = 2048;        ///< the port's active MTU, bytes: the largest UD message
};

/// ibv_modify_qp(3)'s value checks (IBA 11.2.4.2), for the attributes of `mask`: 0 or EINVAL
/// (a port other than 1, a P_Key index other than 0, a path MTU not one of 256..4096, a
/// destination QPN over 24 bits, read/atomic depths over the device's, an RNR timer or local ACK
/// timeout code over 31, a retry count over 7, an address vector without a destination LID or
/// on another port).
int check_attr(const QpAttr& a, unsigned mask, const DeviceLimits& lim);
/// The path MTU in bytes of ibv_mtu `code` (1 = 256 .. 5 = 4096); 0 for any other code.
constexpr uint32_t mtu_bytes(int code) { return code >= 1 && code <= 5 ? 128u << code : 0u; }
/// The ibv_mtu code of `bytes` (256 -> 1 .. 4096 -> 5); 0 for any other size.
constexpr int mtu_code(uint32_t bytes) {
  for (int c = 1; c <= 5; ++c)
    if (mtu_bytes(c) == bytes) return c;
  return 0;
}

/// What a post does with a WR.
enum class Post : uint8_t {
  Accept,  ///< queued
  Flush,   ///< the QP is in ERROR: the WR completes at once with WR_FLUSH_ERR (IBA 10.3.1,
           ///< "Error" state: WRs posted are completed with flush error; mlx4/mlx5 accept them)
  Refuse,  ///< an immediate error (the verb returns the PostError's errno)
};
/// Why a post is refused; post_errno gives the errno the verb returns.
enum class PostError : uint8_t {
  None,
  TooManySge,      ///< num_sge > the QP's max_send_sge / max_recv_sge: EINVAL
  WrongState,      ///< send: not RTS (nor ERROR); receive: RESET (IBA 10.3.1: receives may be posted from INIT): EINVAL
  QueueFull,       ///< max_send_wr / max_recv_wr WRs outstanding: ENOMEM (libmlx4 mlx4_post_send wq_overflow)
  InlineRead,      ///< IBV_SEND_INLINE on an RDMA READ or an atomic (nothing to gather): EINVAL
  InlineTooLong,   ///< inline payload over max_inline_data: ENOMEM (libmlx4 mlx4_post_send)
  /// an opcode the QP type lacks (UC: no READ, atomics or SEND with Invalidate; UD: SEND only,
  /// IBA 9.8): EINVAL
  BadOpcode,
  SrqAttached,     ///< ibv_post_recv on a QP that takes its receives from an SRQ: EINVAL
};
/// The errno of a refused post (0 for None).
int post_errno(PostError e);

/// The send queue's limits.
struct SendLimits {
  uint32_t max_send_wr = 0;
  uint32_t max_inline_data = 0;  ///< bytes
};

/// The verdict of a post.
struct PostCheck {
  Post post = Post::Accept;
  PostError error = PostError::None;
};
/// The verdict of ibv_post_send for `w` on a QP of `type` in `state` with `outstanding` send WRs
/// not yet completed. The checks run in this order: SGE count, opcode for the type, state (ERROR
/// flushes), queue room, inline rules. Cheap: compares only (it runs on every post). The message
/// size against max_msg_sz and an atomic's local length are the requester's (LOC_LEN_ERR
/// completions), an atomic's remote alignment the responder's (a NAK): libmlx4's mlx4_post_send
/// checks neither (rdma-core providers/mlx4/qp.c), where rxe's provider refuses both with EINVAL.
inline PostCheck check_post_send(QpType type, QpState state, uint32_t outstanding, const SendLimits& lim,
                                 const SendWqe& w) {
  const sdp::SendWr& wr = w.wr;
  if (wr.num_sge > sdp::kMaxSge) return {Post::Refuse, PostError::TooManySge};
  // READ, the atomics and SEND with Invalidate are RC's only (IBA 9.2.1 table 38 gives UC and UD
  // none of their opcodes).
  if (!reliable_connected(type) && (w.rd_atomic() || w.x.kind == WrExt::Kind::SendInv)) [[unlikely]]
    return {Post::Refuse, PostError::BadOpcode};
  // An XRC target has no send queue (IBA A14; mlx4 creates none for IBV_QPT_XRC_RECV).
  if (type == QpType::XrcRecv) [[unlikely]]
    return {Post::Refuse, PostError::BadOpcode};
  if (type == QpType::Ud && (wr.opcode != sdp::WrOpcode::Send || w.x.kind == WrExt::Kind::WriteImm || w.x.local()))
      [[unlikely]]
    return {Post::Refuse, PostError::BadOpcode};
  if (state == QpState::Error) return {Post::Flush, PostError::None};
  if (state != QpState::Rts) return {Post::Refuse, PostError::WrongState};
  if (outstanding >= lim.max_send_wr) return {Post::Refuse, PostError::QueueFull};
  if (wr.inline_data) {
    if (w.rd_atomic()) return {Post::Refuse, PostError::InlineRead};
    if (wr.length() > lim.max_inline_data) return {Post::Refuse, PostError::InlineTooLong};
  }
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

}  // namespace hcasim::hca
