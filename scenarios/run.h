#pragma once
/// \file `hcasim run [FILE|NAME] [-j N] [--csv PATH]`: runs a scenario file, each point a real
/// command line (netperf, or perftest's ib_write_lat) tied to a row of a reference CSV, and
/// compares simulated with measured.
///
/// Scenario file (TOML):
///
///     name = "seed000"
///     description = "..."                       # optional
///     platform = "connectx-ddr-pcie1x8"         # NAME or FILE, as --platform
///     source = "shared/seeds/000_...txt (...)"  # optional: where the measurements come from
///     [tolerance]
///     throughput = 0.15                         # netperf: |simulated - measured| / measured
///     service_demand = 0.25
///     utilisation = 0.25                        # netperf, optional: CPU utilisation, relative
///     t_typical_us = 0.05                       # ib_write_lat: |simulated - measured|, in us
///     t_min_us = 0.08
///     [[point]]
///     table = "T3_m_flag"
///     mode = "SDP"
///     set = ["sdp.zcopy_thresh=0"]              # optional: --set for both hosts
///     platform = "..."                          # optional: overrides the scenario's
///     command = "netperf -C -c -P 0 -t TCP_STREAM -H 193.168.10.143 -l 60 -- -m 64K"
///     reference = { file = "validation/seed000/x.csv",          # relative to the data dir
///                   match = { table = "T3_m_flag", mode = "SDP" } }  # selects exactly one row
///     gated = true                              # optional, default true
///     [spread]                                  # optional: the seed's own run-to-run spread
///     throughput = 0.0397                       # relative, like the errors; each key optional
///     service_demand = 0.2182
///     utilisation = 0.05
///     source = "max |T1 - T3| / T3 over ..."    # required: how the values were computed
///
/// `[spread]` declares, where the seed measured the same configuration twice, how far apart
/// the two measurements are (|a - b| / b, the file's comment saying which is b), per metric.
/// It gates nothing: `hcasim validate` uses it in the project's target for netperf tables
/// (validate.h: median |error| <= 5 % and max |error| <= 10 %, or the spread, whichever is
/// larger). At least one metric must be given, each a number > 0; only a scenario with netperf
/// points may declare it.
///
/// Two kinds of point, told apart by the command's first word:
///
/// - netperf points (`netperf ...`): the child is `hcasim netperf WORDS --platform P --set ...
///   --csv TMP`. The measured columns of a reference row are throughput_mbps,
///   sd_local_us_per_kb, sd_remote_us_per_kb, util_local_pct and util_remote_pct (CPU
///   utilisation, %, netperf's "Utilization Send local / Recv remote"); the child's CSV has the
///   same names. Errors are relative and gated by `throughput`, `service_demand` and
///   `utilisation` (local and remote).
/// - latency points (`ib_write_lat ...`, optionally after `taskset [-c] CPUS`, which is
///   dropped with its arguments: hcasim does not pin processes, the simulated tool runs where
///   the platform puts it): the child is `hcasim ib_write_lat WORDS --platform P --set ...
///   --csv TMP`. Its words are only split and checked for the reserved options here; the
///   child reports a bad perftest flag (exit 2). The reference row must have a `bytes` column
///   (the message size it measured); its measured columns are t_min_us, t_max_us and
///   t_typical_us. The simulated figures are the child CSV's row whose `bytes` equals the
///   reference row's (so a command may sweep sizes with -a and several points share it).
///   Errors are absolute, simulated - measured in us, gated by `t_typical_us` and `t_min_us`;
///   t_max is reported but never gated (it is the tail of a noise model).
///
/// The tolerances of a kind are required when the scenario has a point of that kind, except
/// `utilisation`, which is required only when some netperf point's reference row has a
/// utilisation value (checked when the references are read: run_scenario,
/// check_reference_tolerances); a tolerance that no point uses is allowed. An empty cell or a
/// missing measured column means "not measured" (seed 000's T1 rows have no utilisation).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/error.h"

namespace hcasim::scenarios {

/// Which row of which reference CSV a point reproduces.
struct ReferenceSpec {
  std::string file;  ///< path relative to the data directory (or absolute)
  std::vector<std::pair<std::string, std::string>> match;  ///< column -> cell text, by column name
};

/// What a point measures, from the tool its command runs.
enum class PointKind {
  Netperf,  ///< netperf TCP_STREAM: throughput and service demand, relative errors
  Latency,  ///< perftest ib_write_lat: t_min / t_typical / t_max in us, absolute errors
};

/// One point of a scenario: one command line and its measured counterpart.
struct ScenarioPoint {
  std::string table;                 ///< reference table, e.g. "T3_m_flag"
  std::string mode;                  ///< "SDP", "BZCOPY", "BF on, WC off", ...
  std::vector<std::string> set;      ///< --set assignments for both hosts
  std::string platform;              ///< the point's platform (the scenario's unless overridden)
  std::string remote_platform;       ///< netserver's platform when it differs ("" = platform)
  std::string command;               ///< the literal command line
  PointKind kind = PointKind::Netperf;
  std::string tool;                  ///< the hcasim subcommand of its child: "netperf", "ib_write_lat"
  std::vector<std::string> words;    ///< `command` split like a shell, without a leading
                                     ///< `taskset ...` and without the tool's name
  std::string size_flag;             ///< netperf: the test options of `command` ("-m 64K"), or "";
                                     ///< always "" for latency points (their size is the
                                     ///< reference row's bytes)
  ReferenceSpec reference;
  bool gated = true;                 ///< whether an error beyond tolerance fails the run
  uint32_t line = 0;                 ///< line of the point in the scenario file
};

/// Allowed errors. 0 means "not declared", which parse_scenario allows only when no point of
/// that kind needs it.
struct Tolerance {
  double throughput = 0;      ///< netperf: allowed relative error (0.15 = 15 %)
  double service_demand = 0;  ///< netperf: allowed relative error, both service demands
  double t_typical_us = 0;    ///< latency: allowed |simulated - measured| of t_typical, us
  double t_min_us = 0;        ///< latency: allowed |simulated - measured| of t_min, us
  double utilisation = 0;     ///< netperf: allowed relative error, both CPU utilisations
                              ///< (0 = not declared: no reference may measure utilisation)
};

/// The seed's own run-to-run spread ([spread]): relative, |a - b| / b between two measurements
/// of the same configuration; nullopt = not declared for that metric.
struct Spread {
  std::optional<double> throughput;      ///< relative (0.04 = 4 %)
  std::optional<double> service_demand;  ///< relative, send and receive service demand
  std::optional<double> utilisation;     ///< relative, send and receive CPU utilisation
  std::string source;                    ///< how the values were computed (which rows, which formula)
  uint32_t line = 0;                     ///< line of [spread] in the file (for messages)
};

/// A parsed scenario file.
struct Scenario {
  std::string name;
  std::string description;
  std::string platform;
  std::string remote_platform;  ///< optional: the remote host's platform for every point ("" = platform)
  std::string source;
  std::string origin;  ///< file name used in messages
  Tolerance tolerance;
  uint32_t tolerance_line = 0;  ///< line of [tolerance] in the file (for messages)
  std::optional<Spread> spread;  ///< [spread], when declared
  std::vector<ScenarioPoint> points;
};

/// Parses scenario TOML. Every command is split; netperf commands are checked with the netperf
/// parser, latency commands only for their tool name and the options the scenario sets.
/// Throws InputError "ORIGIN:LINE: what is wrong" (TOML syntax, missing or mistyped key,
/// unknown key, bad command, a tolerance missing for a kind of point the file has, a [spread]
/// without `source` or without any metric, or in a file without netperf points). A declared
/// `utilisation` is checked (a number > 0) but never required here: the references decide
/// (check_reference_tolerances).
Scenario parse_scenario(std::string_view toml_text, const std::string& origin);

/// Reads and parses a scenario file; InputError "PATH: cannot read" when it cannot be read.
Scenario load_scenario(const std::string& path);

/// Splits a command line as a POSIX shell splits words: blanks separate, single quotes keep
/// everything literally, double quotes keep all but \" \\ \$ \` escapes, a backslash outside
/// quotes escapes the next character. No expansion. Throws InputError on an unterminated quote
/// or a trailing backslash.
std::vector<std::string> split_command_line(std::string_view text);

/// A CSV file as rows of cells (RFC 4180 quoting; "\n" or "\r\n" line ends; empty lines
/// skipped). Throws InputError "ORIGIN:LINE: unterminated quote". `row_lines`, when given,
/// gets the line each row begins on (1-based).
std::vector<std::vector<std::string>> parse_csv(std::string_view text, const std::string& origin,
                                                std::vector<size_t>* row_lines = nullptr);

/// Quotes a CSV cell when it holds a comma, a quote or a line break.
std::string csv_cell(std::string_view text);

/// Measured (or simulated) values of one point; empty = not measured.
struct Figures {
  std::optional<double> throughput_mbps;  ///< 10^6 bits/s
  std::optional<double> sd_local;         ///< us/KB
  std::optional<double> sd_remote;        ///< us/KB
  std::optional<double> util_local;       ///< CPU utilisation of the sender, % (0..100)
  std::optional<double> util_remote;      ///< CPU utilisation of the receiver, % (0..100)
};

/// The reference row of `spec` in CSV text `csv_text` (named `origin` in messages). Throws
/// InputError "ORIGIN: ..." when a match column is missing, the match selects no row or more
/// than one, or a measured cell is not a number.
Figures reference_figures(std::string_view csv_text, const std::string& origin,
                          const ReferenceSpec& spec);

/// Reads spec.file (relative to `base_dir` unless absolute) and returns reference_figures().
Figures read_reference(const ReferenceSpec& spec, const std::string& base_dir);

/// Checks that `scenario` declares the tolerances its netperf point number `index` (from 0)
/// needs for what its reference row `measured` holds: throws InputError
/// "ORIGIN:LINE: tolerance: missing key 'utilisation' (point N's reference measures
/// utilisation)", LINE that of [tolerance], when the row has a utilisation value and
/// tolerance.utilisation is 0.
void check_reference_tolerances(const Scenario& scenario, size_t index, const Figures& measured);

/// The simulated figures from the CSV `hcasim netperf --csv` writes (netperf_output.h; its
/// util_* and sd_* cells are empty for a side netperf did not measure, -c / -C).
Figures netperf_csv_figures(std::string_view csv_text, const std::string& origin);

/// Measured (or simulated) latency of one message size, as perftest reports it (half the
/// round trip); empty = not measured.
struct LatencyFigures {
  uint64_t bytes = 0;                  ///< message size, B
  std::optional<double> t_min_us;      ///< us
  std::optional<double> t_max_us;      ///< us
  std::optional<double> t_typical_us;  ///< us (perftest's t_typical: the median)
};

/// The reference row of a latency point: selected as reference_figures() selects it (same
/// errors), its `bytes` cell (required: InputError "ORIGIN: no column 'bytes'" or "ORIGIN:
/// column bytes: 'X' is not a whole number") and its t_min_us, t_max_us, t_typical_us cells.
LatencyFigures latency_reference_figures(std::string_view csv_text, const std::string& origin,
                                         const ReferenceSpec& spec);

/// Reads spec.file (relative to `base_dir` unless absolute) and returns
/// latency_reference_figures().
LatencyFigures read_latency_reference(const ReferenceSpec& spec, const std::string& base_dir);

/// Every row of the CSV `hcasim ib_write_lat --csv` writes (header
/// `tool,bytes,iterations,t_min_us,t_max_us,t_typical_us,t_avg_us,t_stdev_us,t_p99_us,t_p999_us`,
/// one row per message size), in file order. Throws InputError "ORIGIN: ..." when a column
/// bytes, t_min_us, t_max_us or t_typical_us is missing, there is no data row, or a cell is
/// not a number (bytes: not a whole number).
std::vector<LatencyFigures> latency_csv_rows(std::string_view csv_text, const std::string& origin);

/// The first of `rows` whose bytes equals `bytes`, or nullopt.
std::optional<LatencyFigures> latency_row_for_bytes(const std::vector<LatencyFigures>& rows,
                                                    uint64_t bytes);

/// One compared quantity.
struct Metric {
  std::optional<double> measured;
  std::optional<double> simulated;
  std::optional<double> error;  ///< when both are known: netperf, (simulated - measured) /
                                ///< measured; latency, simulated - measured in us
  bool within = true;           ///< |error| <= tolerance (true when not compared or not gated)
};

/// A point's comparison. A netperf point fills throughput, sd_local, sd_remote, util_local and
/// util_remote; a latency point fills bytes, t_typical, t_min and t_max (t_max is never gated).
struct PointOutcome {
  Metric throughput, sd_local, sd_remote;
  Metric util_local, util_remote;  ///< netperf: CPU utilisation, %; errors relative
  std::string status;  ///< "ok", "FAIL" (gated, some |error| beyond tolerance) or "not gated"
  PointKind kind = PointKind::Netperf;
  uint64_t bytes = 0;  ///< latency: the message size, B
  Metric t_typical, t_min, t_max;
};

/// Compares measured with simulated for a netperf `point`: relative errors of throughput
/// (tolerance.throughput), both service demands (tolerance.service_demand) and both CPU
/// utilisations (tolerance.utilisation). A gated point FAILs when a measured quantity's |error|
/// exceeds its tolerance, or when it has no simulated value.
PointOutcome evaluate_point(const ScenarioPoint& point, const Tolerance& tolerance,
                            const Figures& measured, const Figures& simulated);

/// Compares measured with simulated for a latency `point`: errors simulated - measured in us;
/// a gated point FAILs when |error| of t_typical or t_min exceeds tolerance.t_typical_us or
/// tolerance.t_min_us (plus 1e-9 us, so that decimal inputs exactly at the limit pass), or
/// when a measured one has no simulated value. bytes is measured.bytes.
PointOutcome evaluate_latency_point(const ScenarioPoint& point, const Tolerance& tolerance,
                                    const LatencyFigures& measured,
                                    const LatencyFigures& simulated);

/// The printed report: a title line (scenario, platform, the tolerances of the kinds of point
/// it has; utilisation only when declared). When there are netperf points: a row per netperf
/// point in scenario order (table, mode, size flag; measured, simulated and signed error % of
/// the throughput in Mbit/s, of both service demands in us/KB and of both CPU utilisations in
/// %, "-" where not measured; status), then per table the median and max |error| of
/// throughput, of service demand and of utilisation (local and remote together). When there
/// are latency points: a title line "ib_write_lat latency, ...", a row per latency point
/// (table, mode, bytes; measured, simulated and signed error in us of t_typical and t_min, 3
/// decimals; measured and simulated t_max, 2 decimals; status), then per table the max |error|
/// of t_typical and of t_min and the tables' platforms. Last, a verdict line over all gated
/// points naming the failing ones.
std::string format_run_report(const Scenario& scenario, const std::vector<PointOutcome>& outcomes);

/// Header of the run CSV, without newline: the netperf columns (throughput, SD local, SD remote,
/// then meas_/sim_/err_util_local_pct and meas_/sim_/err_util_remote_pct), ending in `status`;
/// with `latency_columns`, followed by bytes, meas_/sim_/err_t_typical_us,
/// meas_/sim_/err_t_min_us, meas_/sim_t_max_us.
std::string run_csv_header(bool latency_columns = false);

/// The run CSV: header and one row per point, in scenario order. Values in full precision,
/// netperf errors in % with 4 decimals (utilisation errors too: relative, in % of the measured
/// utilisation, not percentage points), latency errors in us with 4 decimals, empty cells
/// where not measured or not of the point's kind. The latency columns are there only when the
/// scenario has a latency point, so a netperf scenario's CSV has none.
std::string format_run_csv(const Scenario& scenario, const std::vector<PointOutcome>& outcomes);

/// `name` made safe as a file name: every character but letters, digits, '-', '_' and '.'
/// becomes '_', and "scenario" is put in front of an empty name or one starting with '.'
/// ("seed000" stays, "../x y" becomes "scenario.._x_y").
std::string safe_file_name(const std::string& name);

/// A shorter simulation than the commands ask for (`hcasim validate` and `hcasim calibrate`
/// --duration / --iterations): steady-state figures need far less than a real run's 60 s.
struct SimLength {
  std::optional<double> duration_s;     ///< netperf's -l replaced by this many seconds (> 0)
  std::optional<uint64_t> iterations;   ///< perftest's -n capped (never raised) at this count (> 0)
};

/// The value of `--duration` (validate, calibrate): simulated seconds, 0..3600. Throws
/// InputError "--duration: 'TEXT' must be 0..3600 seconds" otherwise.
double parse_duration_flag(const std::string& text);

/// `words` (a command's words after its tool, as ScenarioPoint::words) with `length` applied for
/// `tool`: netperf gets `-l S` before its "--" (a later -l replaces an earlier one), perftest
/// gets `-n min(typed -n or its default, N)` at the end; unchanged where `length` says nothing.
std::vector<std::string> with_sim_length(const std::string& tool, std::vector<std::string> words,
                                         const SimLength& length);

/// Simulates every point of every scenario of `scenarios` in one sweep of child processes
/// (children.h run_children, at most `parallel` at once, so that the last points of one
/// scenario and the first of the next run side by side; identical command lines run once) and
/// compares each with its measurement. Returns, per scenario, its outcomes in point order;
/// they do not depend on `parallel`.
///
/// Everything the children need is checked before any starts: throws InputError for a bad
/// reference ("ORIGIN:LINE: point N: reference: ..."), a tolerance a reference needs and the
/// scenario lacks (check_reference_tolerances) or a bad platform or --set. Throws
/// Interrupted on SIGINT/SIGTERM, and ChildFailure when a child fails or its CSV lacks what
/// its point needs (what(): "[SCENARIO ]point N (LABEL) failed...", errors: its stderr; the
/// scenario's name is in front only when `scenarios` has more than one). `length` shortens
/// every point's simulation (with_sim_length); by default each runs as its command says.
std::vector<std::vector<PointOutcome>> simulate_scenarios(const std::vector<Scenario>& scenarios,
                                                          size_t parallel, const SimLength& length = {});

/// simulate_scenarios() of one scenario: its outcomes in point order.
std::vector<PointOutcome> simulate_scenario(const Scenario& scenario, size_t parallel);

/// The median of `values` (the mean of the middle two for an even count); `values` must not be
/// empty. For the per-table summaries of `hcasim run` and `validate`.
double median(std::vector<double> values);

/// Options of `hcasim run`.
struct RunOptions {
  std::string scenario = "seed000";     ///< FILE or NAME (data dir/scenarios/NAME.toml)
  int jobs = 0;                         ///< -j N, >= 1; 0 = number of online CPUs
  std::optional<std::string> csv_path;  ///< --csv; default "<scenario name>-results.csv"
};

/// Parses the words after `hcasim run` (CLI11). Throws InputError naming the flag.
RunOptions parse_run_args(const std::vector<std::string>& args);

/// Runs every point of the scenario, each in a child process (`/proc/self/exe netperf ...` or
/// `/proc/self/exe ib_write_lat ...`, up to -j at once; identical command lines run once), prints the report on stdout, writes
/// the CSV once all points finished. Returns 0 when every gated point is within tolerance, 1
/// when some is not, 2 when a child failed or its CSV lacks what the point needs (its stderr
/// is shown, then one error line naming the point). Throws InputError for a bad scenario or
/// reference, a tolerance a reference needs and the scenario lacks (check_reference_tolerances,
/// before any child starts) or a bad output path (exit 2).
int run_scenario(const RunOptions& options);

}  // namespace hcasim::scenarios
