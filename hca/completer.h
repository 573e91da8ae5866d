#pragma once
/// \file The completer of an RC QP's transport (IBA 1.2.1 9.7.5.2, 9.7.6; rxe_comp.c cuts the same
/// work into its COMPST_* states): responses in, send completions out. An ACK retires every WQE up
/// to its PSN (ACKs are cumulative); an RDMA READ response or atomic ACK scatters its data into the
/// WQE's local buffers and completes it; an RNR NAK waits its timer and goes back to its PSN,
/// rnr_retry times (7: for ever); a NAK PSN sequence error and a local ACK timeout go back to the
/// first unacknowledged PSN (go-back-N), retry_cnt times without progress in between; any other NAK
/// completes its WQE with the NAK's status. A WQE ending in error moves the QP to ERROR, which
/// flushes the rest (IBA 10.3.1). UC and UD WQEs complete at the requester, once sent.
#include <cstdint>
#include <optional>
#include <string>

#include "hca/packet.h"
#include "hca/rc.h"

namespace hcasim::hca {

class QueuePair;

class Completer {
 public:
  explicit Completer(QueuePair& qp) : qp_(qp), retries_(7), rnr_(7) {}
  /// Nothing outstanding from `sq_psn` on (ibv_modify_qp to RTS), the retry counts of the QP.
  void reset(uint32_t sq_psn, uint8_t retry_cnt, uint8_t rnr_retry);
  /// One response train whose payload handle is `payload`.
  void receive(const Packet& p, const void* payload);
  /// The local ACK timer expired.
  void ack_timeout();
  /// The RNR NAK timer ran out: the requester goes back to the NAKed PSN.
  void rnr_timeout();
  /// A WQE at the front of the send queue failed before its first packet: completes it now when
  /// every WQE before it is done (the QP then goes to ERROR). Local WQEs (WrExt::local()) the
  /// requester executed complete here too once at the front, successfully.
  void check_front();
  /// The first unacknowledged PSN.
  uint32_t una() const { return una_; }
  /// rnr_retry of the QP (0-7, 7 = for ever); throws sdp::VerbsError when > 7.
  void set_rnr_retry(uint8_t n) { rnr_ = RnrCounter(n); }
  /// retry_cnt of the QP (0-7).
  void set_retry_cnt(uint8_t n) { retries_ = RetryCounter(n); }

 private:
  /// Retires every WQE whose PSNs end at or before `psn` (an ACK or the implicit ACK of a NAK or
  /// a response); false when it met an RDMA READ or atomic still waiting for its data, which the
  /// responder then sent and lost: the caller goes back to it.
  bool ack_through(uint32_t psn);
  /// Progress: the retry counts start again, the timer restarts (or stops: nothing outstanding).
  void progress();
  /// One retry (a timeout or a sequence gap): go back to una, or end the front WQE with
  /// RETRY_EXC_ERR when retry_cnt retries went by without progress.
  void retry(bool timeout);
  /// A sequence gap (a NAK PSN sequence error, or a response past a lost one): retry once per una.
  void retry_gap();
  void read_response(const Packet& p, const void* payload);
  void atomic_ack(const Packet& p);
  /// Scatters train payload [0, len) into the front WQE's local SGEs from its message offset
  /// `off`; false (nothing written) when an SGE is outside its MR.
  bool scatter(uint64_t off, uint64_t len, const void* payload);
  /// The front WQE completes with `status` and the QP goes to ERROR for `why`.
  void fail_front(sdp::WcStatus status, const std::string& why);

  QueuePair& qp_;
  uint32_t una_ = 0;
  RetryCounter retries_;
  RnrCounter rnr_;
  /// The una_ a sequence gap was last retried from: the responses already in flight behind the
  /// gap (and the responder's one NAK) do not retry again until progress (rxe_comp.c: started_retry).
  std::optional<uint32_t> retried_una_;
  uint32_t rnr_psn_ = 0;
};

}  // namespace hcasim::hca
