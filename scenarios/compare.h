#pragma once
/// \file Tolerances and gates: measured against simulated figures of one point.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "model/error.h"
#include "scenarios/reference.h"
#include "scenarios/scenario.h"

namespace hcasim::scenarios {

/// Checks that `scenario` declares the tolerances its netperf point number `index` (from 0)
/// needs for what its reference row `measured` holds: throws InputError
/// "ORIGIN:LINE: tolerance: missing key 'utilisation' (point N's reference measures
/// utilisation)", LINE that of [tolerance], when the row has a utilisation value and
/// tolerance.utilisation is 0.
void check_reference_tolerances(const Scenario& scenario, size_t index, const Figures& measured);
/// One compared quantity.
struct Metric {
  std::optional<double> measured;
  std::optional<double> simulated;
  std::optional<double> error;  ///< when both are known: netperf, (simulated - measured) /
                                ///< measured; latency, simulated - measured in us
  bool within = true;           ///< |error| <= tolerance (true when not compared or not gated)
};

/// A point's comparison. A netperf point fills throughput, sd_local, sd_remote, util_local and
/// util_remote; a TCP_RR point transaction_rate, sd_local, sd_remote (us per transaction),
/// util_local and util_remote; a latency point fills bytes, t_typical, t_min and t_max (t_max is
/// never gated); a bandwidth point bytes, bw_average and msg_rate; a pingpong point bytes (its
/// -s), usec_per_iter and mbit_s.
struct PointOutcome {
  Metric throughput, sd_local, sd_remote;
  Metric transaction_rate;  ///< TCP_RR: transactions per second, error relative
  Metric util_local, util_remote;  ///< netperf: CPU utilisation, %; errors relative
  std::string status;  ///< "ok", "FAIL" (gated, some |error| beyond tolerance) or "not gated"
  PointKind kind = PointKind::Netperf;
  uint64_t bytes = 0;  ///< latency and bandwidth: the message size, B
  Metric t_typical, t_min, t_max;
  Metric bw_average, msg_rate;  ///< bandwidth: Gbit/s and Mpps, errors relative
  Metric usec_per_iter, mbit_s;  ///< pingpong: us per round trip and 10^6 bit/s, errors relative
};

/// Compares measured with simulated for a netperf `point` (TCP_STREAM, TCP_MAERTS or TCP_RR):
/// relative errors of throughput, or for a TCP_RR point (PointKind::NetperfRr) of its
/// transaction rate instead (tolerance.throughput), both
/// service demands (tolerance.service_demand) and both CPU utilisations
/// (tolerance.utilisation). A gated point FAILs when a measured quantity's |error| exceeds its
/// tolerance, or when it has no simulated value. The outcome's kind is the point's.
PointOutcome evaluate_point(const ScenarioPoint& point, const Tolerance& tolerance,
                            const Figures& measured, const Figures& simulated);

/// Compares measured with simulated for a latency `point`: errors simulated - measured in us;
/// a gated point FAILs when |error| of t_typical or t_min exceeds tolerance.t_typical_us or
/// tolerance.t_min_us (plus 1e-9 us, so that decimal inputs exactly at the limit pass), or
/// when a measured one has no simulated value. bytes is measured.bytes.
PointOutcome evaluate_latency_point(const ScenarioPoint& point, const Tolerance& tolerance,
                                    const LatencyFigures& measured,
                                    const LatencyFigures& simulated);

/// Compares measured with simulated for a bandwidth `point` (a run file's ib_write_bw or
/// ib_send_bw row): relative errors of BW average and of the message rate; a gated point FAILs
/// when |error| of BW average exceeds tolerance.throughput or it was not simulated. bytes is
/// measured.bytes.
PointOutcome evaluate_bandwidth_point(const ScenarioPoint& point, const Tolerance& tolerance,
                                      const BandwidthFigures& measured, const BandwidthFigures& simulated);

/// Compares measured with simulated for a pingpong `point` (a run file's ibv_rc_pingpong,
/// ibv_uc_pingpong, ibv_ud_pingpong or ibv_srq_pingpong run): relative errors of usec/iter and of
/// Mbit/sec; a gated point FAILs when |error| of usec/iter exceeds tolerance.usec_per_iter or it
/// was not simulated (Mbit/sec is the size over usec/iter: reported, never gated). bytes is
/// measured.size.
PointOutcome evaluate_pingpong_point(const ScenarioPoint& point, const Tolerance& tolerance,
                                     const PingpongFigures& measured, const PingpongFigures& simulated);

}  // namespace hcasim::scenarios
