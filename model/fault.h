#pragma once
/// \file Faults injected on the wire of an RC connection, and the RC transport attributes that
/// recover from them (IBA 1.2.1 chapter 9.7: reliable service; chapter 10.2.4 / 11.2.4:
/// retry_cnt, rnr_retry and the local ACK timeout of a QP). Plain C++, shared by the simulated
/// HCA (sim/) and the emulated one (emu/).
///
/// Every packet an RC requester or responder puts on the wire meets one fate, drawn from a
/// seeded generator (the same seed gives the same fates on every machine):
///  - lost (`fault.loss`): it never arrives;
///  - corrupted (`fault.corrupt`): it arrives with a bad ICRC and the receiver drops it
///    silently (IBA 7.8.1: a packet failing its CRC checks is discarded);
///  - duplicated (`fault.dup`): it arrives twice (the responder re-ACKs a duplicate request
///    and does not execute it again, IBA 9.7.5.1.2);
///  - reordered (`fault.reorder`): it arrives after the packet sent next (the responder sees a
///    PSN beyond the one it expects, NAKs with a PSN sequence error and discards until the
///    retransmission, IBA 9.7.5.1.1; the late original is then a duplicate);
///  - delivered.
/// The requester recovers with go-back-N: on a NAK (PSN sequence error) at once, and when the
/// local ACK timer expires (4.096 us x 2^timeout) without an ACK. Each consecutive retry counts
/// against `qp.retry_cnt`; one more completes the WR with IBV_WC_RETRY_EXC_ERR and the QP goes
/// to ERROR (IBA 9.7.5.2, 10.8.3). A responder without a receive answers RNR NAK; the
/// requester waits the responder's min_rnr_timer and retries `qp.rnr_retry` times (7 = for
/// ever), then completes with IBV_WC_RNR_RETRY_EXC_ERR.
#include <cstdint>
#include <string>

#include "model/noise.h"

namespace hcasim::model {

/// The probabilities of each fault, per packet (each in [0, 1), their sum < 1), and the seed.
struct FaultConfig {
  double loss = 0;     ///< fault.loss: the packet is dropped on the wire
  double corrupt = 0;  ///< fault.corrupt: the packet arrives with a bad ICRC and is dropped
  double dup = 0;      ///< fault.dup: the packet arrives twice
  double reorder = 0;  ///< fault.reorder: the packet arrives after the next one
  uint64_t seed = 1;   ///< fault.seed: seed of the fates (each QP mixes in its QPN)

  /// True when any fault has a non-zero probability.
  bool any() const { return loss > 0 || corrupt > 0 || dup > 0 || reorder > 0; }
};

/// The RC retry attributes of a QP (ibv_modify_qp(3) to RTR/RTS; IBA 11.2.4.2).
struct RcRetry {
  /// qp.retry_cnt: retries after a local ACK timeout or a NAK-sequence error, 0-7 (3 bits; 7 is
  /// a count, not "for ever"). Default 7, what perftest sets for every RC QP
  /// (perftest_resources.c, ctx_modify_qp_to_rts).
  uint8_t retry_cnt = 7;
  /// qp.timeout: the local ACK timeout exponent, 0-31; the timer is 4.096 us x 2^timeout
  /// (IBA 9.7.6.1.3); 0 means no timer (IBA: "infinite"). Default 14 (67.1 ms), perftest's
  /// default (DEF_QP_TIME).
  uint8_t timeout = 14;
  /// qp.rnr_retry: retries after an RNR NAK, 0-7, 7 = for ever (IBA 9.7.5.2.8). Default 7, as perftest
  /// sets it (perftest_resources.c).
  uint8_t rnr_retry = 7;

  /// The local ACK timeout, ns: 4096 x 2^timeout; 0 when timeout is 0 (no timer).
  double local_ack_timeout_ns() const;
};

/// Applies one `--set` assignment when its key is `fault.*` or `qp.*` and returns true;
/// returns false for any other key (a platform key). Throws InputError "--set KEY: ..." for an
/// unknown fault./qp. key, a value that does not parse, or one out of range (probabilities in
/// [0, 1), their sum below 1; retry_cnt and rnr_retry 0-7; timeout 0-31; seed a whole number).
bool apply_fault_setting(const std::string& assignment, FaultConfig& faults, RcRetry& retry);

/// What happens to one packet on the wire.
enum class Fate { Deliver, Lose, Corrupt, Duplicate, Reorder };
/// The name of a fate ("delivered", "lost", "corrupted", "duplicated", "reordered").
const char* fate_name(Fate f);

/// Draws the fate of each packet in turn: one uniform draw per packet compared with the
/// cumulative probabilities loss, corrupt, dup, reorder (in that order). Deterministic: the
/// stream depends only on (config.seed, stream).
class FaultDraw {
 public:
  /// `stream` separates independent wires (e.g. the QPN and the direction).
  FaultDraw(const FaultConfig& config, uint64_t stream);
  /// The fate of the next packet. Deliver, without drawing, when no fault is configured.
  Fate next();

 private:
  FaultConfig config_;
  SplitMix64 rng_;
};

/// Counters of what the faults did on one side of a connection, for the run's report.
struct FaultStats {
  uint64_t packets = 0;          ///< packets put on the wire (data, ACK/NAK), retransmissions included
  uint64_t lost = 0;             ///< dropped by fault.loss
  uint64_t corrupted = 0;        ///< dropped for a bad ICRC (fault.corrupt)
  uint64_t duplicated = 0;       ///< delivered twice (fault.dup)
  uint64_t reordered = 0;        ///< delivered after the next packet (fault.reorder)
  uint64_t retransmitted = 0;    ///< packets sent again (go-back-N; responses to duplicate requests)
  uint64_t naks = 0;             ///< PSN sequence error NAKs that started a retransmission
  uint64_t timeouts = 0;         ///< local ACK timer expiries that started a retransmission
  uint64_t rnr_naks = 0;         ///< RNR NAKs received

  FaultStats& operator+=(const FaultStats& o);
  /// One line: "faults: 1048576 packets, 1049 lost, 0 corrupted, 0 duplicated, 0 reordered;
  /// 16030 retransmitted (1012 NAKs, 37 timeouts), 0 RNR NAKs".
  std::string summary() const;
};

}  // namespace hcasim::model
