#pragma once
/// \file `--json` of the commands that compare simulated with measured figures: `hcasim run`
/// and `hcasim compare` (one scenario report each, scenario_report_json) and `hcasim validate`
/// (every scenario's report and the summary, validate_summary_json). The values are those of
/// format_run_report and format_run_csv (run_report.h) and format_validate_summary
/// (validate.h), taken from the same PointOutcome and TableSummary structs, in full precision.
/// The schema, key by key, is in docs/cli.md ("--json").
#include <string>
#include <vector>

#include "frontends/json_output.h"
#include "scenarios/compare.h"
#include "scenarios/scenario.h"
#include "scenarios/validate.h"

namespace hcasim::scenarios {

/// One scenario's report: {"name", "platform", "remote_platform", "source", "gated",
/// "tolerance" (as declared: throughput_relative, service_demand_relative,
/// utilisation_relative, t_typical_us, t_min_us; null when not), "points": [...], "tables":
/// [...], "verdict"}. Per point its table, mode, size
/// flag, command, kind ("netperf", "netperf_rr", "latency", "bandwidth" or "pingpong"), gated, status and, per metric of
/// its kind, {"measured", "simulated", "error_pct" (relative errors, in % of the measured value)
/// or "error_us" (latency, simulated - measured), "within" (null unless the point is gated and
/// the quantity measured and gated)}; a value not measured or not simulated is null. "tables": the per-table lines of the text (median and max |error|, over
/// the points of each table, or of "all runs" when nothing is gated). "verdict": {"gated_points",
/// "failed": [point labels], "ok"}. `outcomes` has one entry per point, in point order.
frontends::Json scenario_report_json(const Scenario& scenario, const std::vector<PointOutcome>& outcomes);

/// `hcasim validate`'s summary: one object per scenario and table of summarize_tables, with its
/// metrics ({"name", "median_abs_error_pct" and "max_abs_error_pct" (netperf, relative errors
/// in %) or "median_abs_error_us" and "max_abs_error_us" (latency), "tolerance_relative" or
/// "tolerance_us", "gated", "gated_within", and for netperf "spread_relative",
/// "allowed_median_relative", "allowed_max_relative", "target_met"}), then the totals:
/// {"tables": [...], "gated_points", "failed_points", "netperf_tables",
/// "netperf_tables_target_met", "ok"}. Tolerances, spreads and the target are relative as the
/// scenario files declare them (0.15 = 15 %).
frontends::Json validate_summary_json(const std::vector<Scenario>& scenarios,
                                      const std::vector<std::vector<PointOutcome>>& outcomes);

}  // namespace hcasim::scenarios
