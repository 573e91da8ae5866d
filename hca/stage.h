#pragma once
/// \file A stage of the HCA's pipeline as a rate: a unit that works on one job at a time.
///
/// An HCA is a pipeline: WQE processing per QP, the port's transmit scheduler, the port's receive
/// processing (checks, the receive WQE, the scatter, the CQE). Each stage has a latency and a
/// rate, both model::HcaTiming's (model/hca.h): the latencies are added to a message's way; the
/// per-job times (hca.qp_wqe_time, tx_packet_time, rx_packet_time) are how long a Stage's unit is
/// held, so jobs that arrive faster queue behind each other, while a job that finds the unit free
/// starts at once and its latency is unchanged. A Stage keeps no clock of its own: callers pass
/// theirs (simulated ns), so every backend means the same by "a stage".
#include <algorithm>
#include <cstdint>

namespace hcasim::hca {

/// One unit that takes jobs one at a time, first come first served.
class Stage {
 public:
  /// A job arriving at `now_ns` that holds the unit `service_ns` (>= 0): returns when it starts,
  /// ns: `now_ns`, or when the job ahead of it leaves the unit.
  double take(double now_ns, double service_ns) {
    const double start = std::max(now_ns, free_ns_);
    free_ns_ = start + service_ns;
    busy_ns_ += service_ns;
    ++jobs_;
    return start;
  }
  /// When the unit can start the next job, ns.
  double free_at_ns() const { return free_ns_; }
  /// The unit's time taken by jobs so far, ns, and their number.
  double busy_ns() const { return busy_ns_; }
  uint64_t jobs() const { return jobs_; }

 private:
  double free_ns_ = 0;
  double busy_ns_ = 0;
  uint64_t jobs_ = 0;
};

}  // namespace hcasim::hca
