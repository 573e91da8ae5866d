#include <array>

#include <fmt/format.h>

#include "hca/mr.h"
#include "hca/qp.h"
#include "hca/rc.h"

namespace hcasim::hca {

// ---- MRs -------------------------------------------------------------------------------------

uint32_t MrTable::reg(uint32_t pd, sdp::Addr addr, uint64_t len, unsigned access) {
  if (!has_pd(pd)) throw sdp::VerbsError(fmt::format("reg_mr: no PD {}", pd));
  if (len > 0 && len - 1 > UINT64_MAX - addr)  // the last byte, addr + len - 1, past 2^64 - 1
    throw sdp::VerbsError(fmt::format("reg_mr: [{:#x}, +{}) wraps past the end of the address space", addr, len));
  const uint32_t key = next_key_++;
  mrs_[key] = {pd, addr, len, access, false};
  return key;
}

uint32_t MrTable::reg_all_memory(uint32_t pd, unsigned access) {
  if (!has_pd(pd)) throw sdp::VerbsError(fmt::format("dma_mr: no PD {}", pd));
  const uint32_t key = next_key_++;
  mrs_[key] = {pd, 0, 0, access, true};
  return key;
}

const char* mr_refusal_str(MrRefusal r) {
  switch (r) {
    case MrRefusal::None: return "";
    case MrRefusal::UnknownKey: return "unknown key";
    case MrRefusal::OtherPd: return "key of another PD";
    case MrRefusal::Access: return "access flags";
    case MrRefusal::Bounds: return "out of bounds";
  }
  return "";
}

// ---- QP --------------------------------------------------------------------------------------

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

void check_transition(uint32_t qpn, QpState from, QpState to) {
  if (!transition_allowed(from, to))
    throw sdp::VerbsError(
        fmt::format("modify_qp: QP {:#x} cannot go from {} to {}", qpn, qp_state_name(from), qp_state_name(to)));
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
    case PostError::InlineRead: return fmt::format("{}: QP {:#x}: an RDMA READ cannot be inline", verb, qpn);
    case PostError::InlineTooLong:
      return fmt::format("{}: QP {:#x}: {} B inline exceeds max_inline_data {} B", verb, qpn, send ? wr->length() : 0,
                         lim != nullptr ? lim->max_inline_data : 0);
    case PostError::MessageTooLong:
      return fmt::format("{}: QP {:#x}: {} B message over the HCA's {} B", verb, qpn, send ? wr->length() : 0,
                         lim != nullptr ? lim->max_message : 0);
  }
  return "";
}

// ---- RC --------------------------------------------------------------------------------------

double rnr_timer_ns(uint8_t code) {
  // IBA 1.2.1 table 45, in units of 10 ns (0.01 ms = 1000 units): codes 0..31.
  static constexpr std::array<uint32_t, 32> k10ns = {
      65536000, 1000,    2000,    3000,    4000,    6000,    8000,    12000,   16000,   24000,   32000,
      48000,    64000,   96000,   128000,  192000,  256000,  384000,  512000,  768000,  1024000, 1536000,
      2048000,  3072000, 4096000, 6144000, 8192000, 12288000, 16384000, 24576000, 32768000, 49152000};
  return 10.0 * k10ns[code & 0x1F];
}

void RnrCounter::bad_limit(uint8_t limit) {
  throw sdp::VerbsError(fmt::format("modify_qp: rnr_retry {} > 7", limit));
}

}  // namespace hcasim::hca
