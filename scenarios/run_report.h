#pragma once
/// \file What `hcasim run` writes: the printed report and the run CSV.
#include <string>
#include <vector>

#include "scenarios/compare.h"
#include "scenarios/scenario.h"

namespace hcasim::scenarios {

/// The printed report: a title line (scenario, platform, the tolerances of the kinds of point
/// it has; utilisation only when declared). When there are netperf points: a row per netperf
/// point in scenario order (table, mode, size flag; measured, simulated and signed error % of
/// the throughput in Mbit/s, of both service demands in us/KB and of both CPU utilisations in
/// %, "-" where not measured; status), then per table the median and max |error| of
/// throughput, of service demand and of utilisation (local and remote together). When there
/// are latency points: a title line naming their tools and what they report ("ib_write_lat
/// latency: half the round trip, in us; ...", "ib_read_lat latency: the whole round trip, ...",
/// both kinds named when mixed), a row per latency point
/// (table, mode, bytes; measured, simulated and signed error in us of t_typical and t_min, 3
/// decimals; measured and simulated t_max, 2 decimals; status), then per table the max |error|
/// of t_typical and of t_min and the tables' platforms. When there are bandwidth points
/// (`hcasim compare`'s rows of perftest's bw tools): a row per point (table, mode, bytes;
/// measured, simulated and signed error % of BW average in Gb/s and of MsgRate in Mpps; status)
/// and the median and max |error| of both. When there are TCP_RR points (`hcasim compare`'s
/// netperf -t TCP_RR runs): a title line, a row per point (table, mode, size flag; measured,
/// simulated and signed error % of the transaction rate in transactions/s, of both service
/// demands in us/Tr and of both CPU utilisations in %; status) and the median and max |error|
/// of the rate, of service demand and of utilisation. When there are pingpong points (`hcasim
/// compare`'s ibv_*_pingpong runs): a title line, a row per point (table, mode, bytes; measured,
/// simulated and signed error % of usec/iter and of Mbit/sec; status) and the median and max
/// |error| of both. Last, a verdict line over all gated
/// points naming the failing ones. A scenario none of whose points is gated (`hcasim compare`'s
/// run files) says "tolerance: none (not gated)", sums its points up in one "all runs" row
/// instead of one per table, and ends "compared: N points, none gated".
std::string format_run_report(const Scenario& scenario, const std::vector<PointOutcome>& outcomes);

/// One table's absolute errors, as the report's per-table lines sum them up.
struct TableErrors {
  std::string table;  ///< the table's name, or "all runs"
  size_t points = 0;  ///< the points of the kind in it
  /// Netperf points, relative: throughput (TCP_RR: transaction rate); both service demands;
  /// both utilisations.
  std::vector<double> throughput, service_demand, utilisation;
  std::vector<double> transaction_rate;  ///< TCP_RR points, relative
  /// Latency points, us: t_typical, t_min; and the points' platforms in order of first appearance.
  std::vector<double> t_typical, t_min;
  std::vector<std::string> platforms;
  /// Bandwidth points, relative: BW average, MsgRate.
  std::vector<double> bw_average, msg_rate;
  /// Pingpong points, relative: usec/iter, Mbit/sec.
  std::vector<double> usec_per_iter, mbit_s;
};

/// Per table of `scenario`'s points of `kind`, in order of first appearance, the |error|s of its
/// measured metrics; one "all runs" table when no point is gated, and always for bandwidth,
/// TCP_RR and pingpong points. What format_run_report's per-table lines and the JSON report's "tables" print.
std::vector<TableErrors> table_errors(const Scenario& scenario, const std::vector<PointOutcome>& outcomes,
                                      PointKind kind);

/// Which optional column groups a run CSV has beyond the netperf ones (files of several
/// scenarios under one header name every group any of them needs).
struct CsvColumns {
  bool latency = false;    ///< bytes, meas_/sim_/err_t_typical_us, meas_/sim_/err_t_min_us, meas_/sim_t_max_us
  bool bandwidth = false;  ///< bw_bytes, meas_/sim_bw_avg_gbit_s, err_bw_avg_pct, meas_/sim_msg_rate_mpps,
                           ///< err_msg_rate_pct
  bool rr = false;         ///< meas_/sim_/err_transaction_rate (per s; error in %), meas_/sim_/err_sd_local_us_per_tr,
                           ///< meas_/sim_/err_sd_remote_us_per_tr (TCP_RR's service demands; errors in %)
  bool pingpong = false;   ///< pp_bytes, meas_/sim_/err_usec_per_iter (error in %), meas_/sim_/err_mbit_s (%)
};

/// Header of the run CSV, without newline: the netperf columns (throughput, SD local, SD remote,
/// then meas_/sim_/err_util_local_pct and meas_/sim_/err_util_remote_pct), ending in `status`,
/// then the groups `columns` names, in CsvColumns' order. A TCP_RR row's utilisations are in the
/// util columns, its throughput and us/KB cells empty.
std::string run_csv_header(const CsvColumns& columns = {});

/// The run CSV: header and one row per point, in scenario order. Values in full precision,
/// netperf errors in % with 4 decimals (utilisation errors too: relative, in % of the measured
/// utilisation, not percentage points), latency errors in us with 4 decimals, empty cells
/// where not measured or not of the point's kind. A column group is there when the scenario has
/// a point of its kind or `columns` names it, so a netperf scenario's CSV has only the netperf
/// columns.
std::string format_run_csv(const Scenario& scenario, const std::vector<PointOutcome>& outcomes,
                           const CsvColumns& columns = {});

/// `name` made safe as a file name: every character but letters, digits, '-', '_' and '.'
/// becomes '_', and "scenario" is put in front of an empty name or one starting with '.'
/// ("seed000" stays, "../x y" becomes "scenario.._x_y").
std::string safe_file_name(const std::string& name);

}  // namespace hcasim::scenarios
