#pragma once
/// \file `hcasim validate [NAME|FILE...] [-j N] [--report DIR]`: runs every reference set (by
/// default every scenario file of the data directory, DATA/scenarios/*.toml, sorted by name),
/// prints each scenario's report as `hcasim run` does, then one summary over all of them.
///
/// The summary has a row per scenario, table and metric: the table's kind (netperf, latency),
/// its number of points and of gated points, the median and max |error| over its points (gated
/// or not: netperf relative, in %; latency absolute, in us), the declared tolerance, and how
/// many of the gated points that measured the metric are within it. Metrics: throughput,
/// service demand (send and receive together) and utilisation (send and receive together) for
/// netperf tables, each only when some point of the table measured it; t_typical and t_min for
/// latency tables. Under each netperf table, the project's target, which gates
/// nothing: "target met", or "target missed (METRIC: median X %, max Y %, allowed A % / B %)"
/// naming each metric that misses it (A: the allowed median, B: the allowed max).
///
/// `--duration S` and `--iterations N` shorten every point as `hcasim calibrate`'s do (netperf's
/// -l replaced by S seconds, perftest's -n capped at N; simulate.h SimLength), for quick or
/// instrumented runs (the sanitizer build's tests); the output then says so first, and so does
/// report.md. By default every point runs as its command says.
///
/// Exit status: 0 when every gated point is within its tolerance, 1 otherwise, 2 on bad input
/// or a failed child, 128 + N when signal N (SIGINT, SIGTERM) stopped it; nothing on stdout or
/// in files depends on -j.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "scenarios/compare.h"
#include "scenarios/scenario.h"
#include "scenarios/simulate.h"

namespace hcasim::scenarios {

/// The project's target for a netperf table: median |error| <= 5 % ...
inline constexpr double kTargetMedian = 0.05;
/// ... and max |error| <= 10 %, per metric; or the seed's measured spread ([spread], scenario.h)
/// where it is larger (target_allowance).
inline constexpr double kTargetMax = 0.10;

/// The target's allowed median and max |error| of a metric whose declared spread is `spread`
/// (relative; nullopt = none declared): {max(kTargetMedian, spread), max(kTargetMax, spread)}.
std::pair<double, double> target_allowance(std::optional<double> spread);

/// One metric of one table in the summary.
struct MetricSummary {
  std::string name;              ///< "throughput", "service demand", "utilisation", "t_typical", "t_min"
  std::vector<double> abs_errors;  ///< |error| of every point of the table that has one (netperf:
                                   ///< relative, two per point for service demand and utilisation;
                                   ///< latency: us), in point order
  std::optional<double> median;  ///< median of abs_errors (mean of the middle two when even)
  std::optional<double> max;     ///< largest of abs_errors
  double tolerance = 0;          ///< declared: relative (netperf) or us (latency); 0 = not declared
  size_t gated = 0;              ///< gated points of the table that measured the metric
  size_t gated_within = 0;       ///< of those, the points within tolerance (send and receive both)
  std::optional<double> spread;  ///< netperf: the scenario's [spread] of the metric, relative
  double allowed_median = 0;     ///< netperf: the target's allowed median (target_allowance)
  double allowed_max = 0;        ///< netperf: the target's allowed max
  bool target_met = true;        ///< netperf: median <= allowed_median and max <= allowed_max
                                 ///< (true when there is no error to judge)
};

/// One table of one scenario in the summary.
struct TableSummary {
  std::string table;
  PointKind kind = PointKind::Netperf;
  size_t points = 0;  ///< points of the table
  size_t gated = 0;   ///< of those, gated
  std::vector<MetricSummary> metrics;  ///< netperf: throughput, service demand, utilisation
                                       ///< (each only when measured); latency: t_typical, t_min
  bool within = true;      ///< every gated point of the table within every tolerance
  bool target_met = true;  ///< netperf: every metric meets the target
};

/// The tables of `scenario` (netperf tables first, then latency tables, each in order of first
/// appearance, as format_run_report lists them) summarised from `outcomes` (one per point, in
/// point order).
std::vector<TableSummary> summarize_tables(const Scenario& scenario,
                                           const std::vector<PointOutcome>& outcomes);

/// The summary text `hcasim validate` prints after the scenarios' reports: a heading, a row per
/// scenario, table and metric (validate.h), the target line of each netperf table, then the
/// gated points within tolerance per scenario, how many netperf tables meet the target, and
/// the verdict ("ok: ..." or "FAIL: N of M gated points out of tolerance (...)").
/// `outcomes[k]` are the outcomes of `scenarios[k]`.
std::string format_validate_summary(const std::vector<Scenario>& scenarios,
                                    const std::vector<std::vector<PointOutcome>>& outcomes);

/// Options of `hcasim validate`.
struct ValidateOptions {
  std::vector<std::string> scenarios;     ///< NAME or FILE each; empty = every DATA/scenarios/*.toml
  int jobs = 0;                           ///< -j N, >= 1; 0 = number of online CPUs
  std::optional<std::string> report_dir;  ///< --report DIR
  double duration_s = 0;                  ///< --duration S: netperf's simulated -l, 0 = as typed
  uint64_t iterations = 0;                ///< --iterations N: perftest's -n cap, 0 = as typed
  bool json = false;                      ///< --json: reports and summary as JSON on stdout
  std::vector<std::string> args;          ///< the words after `validate`, as given (the JSON's command_line)
};

/// What validate prints first, and report.md says, when --duration or --iterations shortens
/// the points ("" when neither does): "netperf points are simulated for S s (--duration),
/// whatever their -l says" and/or "perftest points for at most N iterations (--iterations)".
std::string sim_length_note(const ValidateOptions& options);

/// Parses the words after `hcasim validate` (CLI11). Throws InputError naming the flag
/// ("-j: '0' must be 1..4096", "--report: empty path").
ValidateOptions parse_validate_args(const std::vector<std::string>& args);

/// Every scenario file of the data directory: DATA/scenarios/*.toml, sorted by file name.
/// Throws InputError "DIR: no scenario files (*.toml)" when there is none.
std::vector<std::string> default_scenario_files();

/// Runs `hcasim validate`: loads every scenario (InputError for a bad one, or for two with the
/// same name), checks --report (report.h check_report_dir, and that gnuplot is in PATH) before
/// any simulation, simulates all scenarios in one sweep (simulate_scenarios, -j at once),
/// prints each scenario's format_run_report and then format_validate_summary on stdout, and
/// with --report writes the report directory (report.h). With --json it prints instead one
/// document (schema "hcasim.validate/1": the simulated length, a scenario_report_json per
/// scenario and validate_summary_json), after the report directory is written. Returns the exit status (validate.h);
/// throws InputError for bad input (exit 2).
int validate(const ValidateOptions& options);

}  // namespace hcasim::scenarios
