// Comparison of a point (compare.h).
#include "scenarios/compare.h"

#include <cmath>

#include <fmt/format.h>

namespace hcasim::scenarios {

namespace {

[[noreturn]] void fail_at(const std::string& origin, uint32_t line, const std::string& what) {
  throw InputError(fmt::format("{}:{}: {}", origin, line, what));
}

/// Fills `m` with a relative error (simulated - measured) / measured, within `tol` in
/// magnitude. A measured quantity without a simulated one is not within: nothing vouches for it.
void compare_relative(Metric& m, const std::optional<double>& meas, const std::optional<double>& sim, double tol) {
  m.measured = meas;
  m.simulated = sim;
  if (!meas) return;
  if (!sim) {
    m.within = false;
    return;
  }
  if (*meas != 0) m.error = (*sim - *meas) / *meas;
  m.within = m.error ? std::fabs(*m.error) <= tol : *sim == *meas;
}

}  // namespace


void check_reference_tolerances(const Scenario& scenario, size_t index, const Figures& measured) {
  if ((measured.util_local || measured.util_remote) && !(scenario.tolerance.utilisation > 0))
    fail_at(scenario.origin, scenario.tolerance_line,
            fmt::format("tolerance: missing key 'utilisation' (point {}'s reference measures "
                        "utilisation)",
                        index + 1));
}

// --- comparison and report ------------------------------------------------------------------

PointOutcome evaluate_point(const ScenarioPoint& point, const Tolerance& tolerance,
                            const Figures& measured, const Figures& simulated) {
  PointOutcome o;
  o.kind = point.kind;
  // A TCP_RR is compared on its transaction rate, a stream on its throughput.
  if (point.kind == PointKind::NetperfRr)
    compare_relative(o.transaction_rate, measured.transaction_rate, simulated.transaction_rate, tolerance.throughput);
  else
    compare_relative(o.throughput, measured.throughput_mbps, simulated.throughput_mbps, tolerance.throughput);
  compare_relative(o.sd_local, measured.sd_local, simulated.sd_local, tolerance.service_demand);
  compare_relative(o.sd_remote, measured.sd_remote, simulated.sd_remote, tolerance.service_demand);
  compare_relative(o.util_local, measured.util_local, simulated.util_local, tolerance.utilisation);
  compare_relative(o.util_remote, measured.util_remote, simulated.util_remote, tolerance.utilisation);
  if (!point.gated)
    o.status = "not gated";
  else
    o.status = o.throughput.within && o.transaction_rate.within && o.sd_local.within && o.sd_remote.within &&
                       o.util_local.within && o.util_remote.within
                   ? "ok"
                   : "FAIL";
  return o;
}

PointOutcome evaluate_latency_point(const ScenarioPoint& point, const Tolerance& tolerance,
                                    const LatencyFigures& measured,
                                    const LatencyFigures& simulated) {
  PointOutcome o;
  o.kind = PointKind::Latency;
  o.bytes = measured.bytes;
  // Absolute errors in us. The slack of 1e-9 us keeps a decimal error exactly at the limit
  // (0.84 - 0.79 against 0.05) within despite binary rounding.
  auto compare = [](Metric& m, const std::optional<double>& meas,
                    const std::optional<double>& sim, std::optional<double> tol) {
    m.measured = meas;
    m.simulated = sim;
    if (!meas) return;
    if (!sim) {
      m.within = !tol;  // measured but not simulated: fails where gated
      return;
    }
    m.error = *sim - *meas;
    m.within = !tol || std::fabs(*m.error) <= *tol + 1e-9;
  };
  compare(o.t_typical, measured.t_typical_us, simulated.t_typical_us, tolerance.t_typical_us);
  compare(o.t_min, measured.t_min_us, simulated.t_min_us, tolerance.t_min_us);
  compare(o.t_max, measured.t_max_us, simulated.t_max_us, std::nullopt);  // reported, not gated
  if (!point.gated)
    o.status = "not gated";
  else
    o.status = o.t_typical.within && o.t_min.within ? "ok" : "FAIL";
  return o;
}

PointOutcome evaluate_bandwidth_point(const ScenarioPoint& point, const Tolerance& tolerance,
                                      const BandwidthFigures& measured, const BandwidthFigures& simulated) {
  PointOutcome o;
  o.kind = PointKind::Bandwidth;
  o.bytes = measured.bytes;
  compare_relative(o.bw_average, measured.bw_average_gbit_s, simulated.bw_average_gbit_s, tolerance.throughput);
  compare_relative(o.msg_rate, measured.msg_rate_mpps, simulated.msg_rate_mpps, tolerance.throughput);
  o.msg_rate.within = true;  // reported, not gated: it is BW average over the message size
  o.status = !point.gated ? "not gated" : o.bw_average.within ? "ok" : "FAIL";
  return o;
}

PointOutcome evaluate_pingpong_point(const ScenarioPoint& point, const Tolerance& tolerance,
                                     const PingpongFigures& measured, const PingpongFigures& simulated) {
  PointOutcome o;
  o.kind = PointKind::Pingpong;
  o.bytes = measured.size;
  compare_relative(o.usec_per_iter, measured.usec_per_iter, simulated.usec_per_iter, tolerance.usec_per_iter);
  compare_relative(o.mbit_s, measured.mbit_s, simulated.mbit_s, tolerance.usec_per_iter);
  o.mbit_s.within = true;  // reported, not gated: it is the size over usec/iter
  o.status = !point.gated ? "not gated" : o.usec_per_iter.within ? "ok" : "FAIL";
  return o;
}

}  // namespace hcasim::scenarios
