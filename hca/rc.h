#pragma once
/// \file The arithmetic of the RC transport (IBA 1.2.1 9.7, reliable service) that the requester,
/// responder and completer share: PSNs, the AETH syndromes of ACK / NAK / RNR NAK, the retry
/// counters (qp.retry_cnt, qp.rnr_retry) and the timers (the local ACK timeout,
/// model::RcRetry::local_ack_timeout_ns; the RNR NAK timer, IBA table 45). Arming the timers is the
/// backends' part (hca/backend.h): sim/ on its calendar, emu/ with Asio steady_timers.
#include <cstdint>

#include "model/fault.h"
#include "sdp/verbs.h"

namespace hcasim::hca {

/// PSNs are 24 bits (IBA 9.7.1).
inline constexpr uint32_t kPsnMask = 0xFFFFFF;
/// The PSN `n` after `psn`, modulo 2^24.
constexpr uint32_t psn_add(uint32_t psn, uint32_t n) { return (psn + n) & kPsnMask; }
/// The PSN before `psn`, modulo 2^24.
constexpr uint32_t psn_prev(uint32_t psn) { return (psn - 1) & kPsnMask; }
/// True when PSN a comes before b in 24-bit serial arithmetic: b - a in (0, 2^23) modulo 2^24
/// (IBA 9.7.1: the responder's valid and duplicate regions are half the PSN space each).
constexpr bool psn_before(uint32_t a, uint32_t b) { return a != b && ((b - a) & kPsnMask) < 0x800000; }

/// AETH syndrome bytes (IBA 9.7.5.2.1, table 43): bits 7:5 say ACK (000), RNR NAK (001) or
/// NAK (011); bits 4:0 carry the credit count, the RNR timer code or the NAK code.
namespace aeth {
inline constexpr uint8_t kAck = 0x1F;           ///< ACK with "invalid credit count" (credits unused)
inline constexpr uint8_t kRnrNak = 0x20;        ///< | the RNR timer code (table 45), 5 bits
inline constexpr uint8_t kNakPsnSeq = 0x60;     ///< NAK: PSN sequence error
inline constexpr uint8_t kNakInvReq = 0x61;     ///< NAK: invalid request
inline constexpr uint8_t kNakRemAccess = 0x62;  ///< NAK: remote access error
inline constexpr uint8_t kNakRemOp = 0x63;      ///< NAK: remote operational error
}  // namespace aeth

/// What an AETH syndrome says to the requester.
enum class AckKind : uint8_t { Ack, RnrNak, NakPsnSeq, NakInvReq, NakRemAccess, NakRemOp, Reserved };
/// The kind of `syndrome` (table 43; NAK codes 0-3; others, and bits 7:5 = 010, Reserved).
constexpr AckKind ack_kind(uint8_t syndrome) {
  switch (syndrome & 0xE0) {
    case 0x00: return AckKind::Ack;
    case 0x20: return AckKind::RnrNak;
    case 0x60:
      switch (syndrome) {
        case aeth::kNakPsnSeq: return AckKind::NakPsnSeq;
        case aeth::kNakInvReq: return AckKind::NakInvReq;
        case aeth::kNakRemAccess: return AckKind::NakRemAccess;
        case aeth::kNakRemOp: return AckKind::NakRemOp;
        default: return AckKind::Reserved;
      }
    default: return AckKind::Reserved;
  }
}
/// The RNR timer code (bits 4:0) of an RNR NAK's syndrome.
constexpr uint8_t rnr_code(uint8_t syndrome) { return syndrome & 0x1F; }
/// The requester's completion status for a NAK that ends a WR (IBA 9.7.5.2.4, 11.6.2 table
/// of completion codes): remote access error -> REM_ACCESS_ERR; remote operational error ->
/// REM_OP_ERR; invalid request, and reserved codes, -> REM_INV_REQ_ERR.
constexpr sdp::WcStatus nak_status(AckKind k) {
  if (k == AckKind::NakRemAccess) return sdp::WcStatus::RemAccessErr;
  if (k == AckKind::NakRemOp) return sdp::WcStatus::RemOpErr;
  return sdp::WcStatus::RemInvReqErr;
}

/// The RNR NAK timer of `code` (0-31; IBA 9.7.5.2.8 table 45, ibv_modify_qp(3) min_rnr_timer),
/// ns: code 1 is 0.01 ms, 12 is 0.64 ms, 14 is 1.28 ms, 31 is 491.52 ms, 0 is 655.36 ms.
double rnr_timer_ns(uint8_t code);
/// min_rnr_timer 12 (0.64 ms): what perftest and the RDMA CM set, and the emulators' default.
inline constexpr uint8_t kDefaultMinRnrTimer = 12;
/// rnr_retry 7: retry for ever (IBA 9.7.5.2.8).
inline constexpr uint8_t kRnrRetryForever = 7;

/// The local ACK timeout of qp.timeout `exponent`, ns (IBA 9.7.6.1.3; 0 = no timer).
inline double local_ack_timeout_ns(uint8_t exponent) {
  model::RcRetry r;
  r.timeout = exponent;
  return r.local_ack_timeout_ns();
}

/// The transport retry counter (qp.retry_cnt, IBA 9.7.5.2, 10.8.3): each local ACK timeout or
/// NAK PSN sequence error without progress in between is one retry; the retry past `limit`
/// (0-7; 7 is a count) ends the WR with RETRY_EXC_ERR.
class RetryCounter {
 public:
  explicit RetryCounter(uint8_t limit) : limit_(limit) {}
  /// One more retry: true when it may be made, false when the count is exhausted.
  bool retry() { return ++count_ <= limit_; }
  /// An ACK or a READ response made progress: the count starts again.
  void progress() { count_ = 0; }
  /// Retries made since the last progress (the failed one included).
  uint32_t count() const { return count_; }
  uint8_t limit() const { return limit_; }

 private:
  uint8_t limit_;
  uint32_t count_ = 0;
};

/// The RNR retry counter (qp.rnr_retry, IBA 9.7.5.2.8): after an RNR NAK the requester waits
/// the responder's RNR timer and retries, `limit` times (0-7, kRnrRetryForever = without end);
/// the RNR NAK after the last retry ends the WR with RNR_RETRY_EXC_ERR.
class RnrCounter {
 public:
  /// Throws sdp::VerbsError "modify_qp: rnr_retry N > 7" when limit > 7.
  explicit RnrCounter(uint8_t limit) : limit_(limit) {
    if (limit > kRnrRetryForever) [[unlikely]] bad_limit(limit);
  }
  /// An RNR NAK came: true when the requester retries after the timer, false when exhausted.
  bool retry() {
    if (limit_ != kRnrRetryForever && count_ >= limit_) return false;
    ++count_;
    return true;
  }
  void progress() { count_ = 0; }
  uint32_t count() const { return count_; }
  uint8_t limit() const { return limit_; }

 private:
  [[noreturn]] static void bad_limit(uint8_t limit);
  uint8_t limit_;
  uint32_t count_ = 0;
};

}  // namespace hcasim::hca
