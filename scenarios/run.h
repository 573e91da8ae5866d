#pragma once
/// \file `hcasim run [FILE|NAME] [-j N] [--csv PATH]`: runs a scenario file, each point a real
/// netperf command line tied to a row of a reference CSV, and compares simulated with measured.
///
/// Scenario file (TOML):
///
///     name = "seed000"
///     description = "..."                       # optional
///     platform = "connectx-ddr-pcie1x8"         # NAME or FILE, as --platform
///     source = "shared/seeds/000_...txt (...)"  # optional: where the measurements come from
///     [tolerance]
///     throughput = 0.15                         # |simulated - measured| / measured allowed
///     service_demand = 0.25
///     [[point]]
///     table = "T3_m_flag"
///     mode = "SDP"
///     set = ["sdp.zcopy_thresh=0"]              # optional: --set for both hosts
///     platform = "..."                          # optional: overrides the scenario's
///     command = "netperf -C -c -P 0 -t TCP_STREAM -H 193.168.10.143 -l 60 -- -m 64K"
///     reference = { file = "validation/seed000/x.csv",          # relative to the data dir
///                   match = { table = "T3_m_flag", mode = "SDP" } }  # selects exactly one row
///     gated = true                              # optional, default true
///
/// The measured columns of a reference row are throughput_mbps, sd_local_us_per_kb and
/// sd_remote_us_per_kb; an empty cell or a missing column means "not measured".
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

/// One point of a scenario: one netperf command line and its measured counterpart.
struct ScenarioPoint {
  std::string table;                 ///< reference table, e.g. "T3_m_flag"
  std::string mode;                  ///< "SDP", "BZCOPY", ...
  std::vector<std::string> set;      ///< --set assignments for both hosts
  std::string platform;              ///< the point's platform (the scenario's unless overridden)
  std::string command;               ///< the literal netperf command line
  std::vector<std::string> words;    ///< `command` split like a shell, without "netperf"
  std::string size_flag;             ///< the test options of `command` ("-m 64K"), or ""
  ReferenceSpec reference;
  bool gated = true;                 ///< whether an error beyond tolerance fails the run
  uint32_t line = 0;                 ///< line of the point in the scenario file
};

/// Allowed relative errors (0.15 = 15 %).
struct Tolerance {
  double throughput = 0;
  double service_demand = 0;
};

/// A parsed scenario file.
struct Scenario {
  std::string name;
  std::string description;
  std::string platform;
  std::string source;
  std::string origin;  ///< file name used in messages
  Tolerance tolerance;
  std::vector<ScenarioPoint> points;
};

/// Parses scenario TOML. Every command is split and checked with the netperf parser. Throws
/// InputError "ORIGIN:LINE: what is wrong" (TOML syntax, missing or mistyped key, unknown key,
/// bad command).
Scenario parse_scenario(std::string_view toml_text, const std::string& origin);

/// Reads and parses a scenario file; InputError "PATH: cannot read" when it cannot be read.
Scenario load_scenario(const std::string& path);

/// Splits a command line as a POSIX shell splits words: blanks separate, single quotes keep
/// everything literally, double quotes keep all but \" \\ \$ \` escapes, a backslash outside
/// quotes escapes the next character. No expansion. Throws InputError on an unterminated quote
/// or a trailing backslash.
std::vector<std::string> split_command_line(std::string_view text);

/// A CSV file as rows of cells (RFC 4180 quoting; "\n" or "\r\n" line ends; empty lines
/// skipped). Throws InputError "ORIGIN: ..." on an unterminated quote.
std::vector<std::vector<std::string>> parse_csv(std::string_view text, const std::string& origin);

/// Quotes a CSV cell when it holds a comma, a quote or a line break.
std::string csv_cell(std::string_view text);

/// Measured (or simulated) values of one point; empty = not measured.
struct Figures {
  std::optional<double> throughput_mbps;  ///< 10^6 bits/s
  std::optional<double> sd_local;         ///< us/KB
  std::optional<double> sd_remote;        ///< us/KB
};

/// The reference row of `spec` in CSV text `csv_text` (named `origin` in messages). Throws
/// InputError "ORIGIN: ..." when a match column is missing, the match selects no row or more
/// than one, or a measured cell is not a number.
Figures reference_figures(std::string_view csv_text, const std::string& origin,
                          const ReferenceSpec& spec);

/// Reads spec.file (relative to `base_dir` unless absolute) and returns reference_figures().
Figures read_reference(const ReferenceSpec& spec, const std::string& base_dir);

/// The simulated figures from the CSV `hcasim netperf --csv` writes (netperf_output.h).
Figures netperf_csv_figures(std::string_view csv_text, const std::string& origin);

/// One compared quantity.
struct Metric {
  std::optional<double> measured;
  std::optional<double> simulated;
  std::optional<double> error;  ///< (simulated - measured) / measured, when both are known
  bool within = true;           ///< |error| <= tolerance (true when not compared)
};

/// A point's comparison.
struct PointOutcome {
  Metric throughput, sd_local, sd_remote;
  std::string status;  ///< "ok", "FAIL" (gated, some |error| beyond tolerance) or "not gated"
};

/// Compares measured with simulated for `point`. A gated point FAILs when a measured
/// quantity's |error| exceeds its tolerance, or when it has no simulated value.
PointOutcome evaluate_point(const ScenarioPoint& point, const Tolerance& tolerance,
                            const Figures& measured, const Figures& simulated);

/// The printed report: a title line (scenario, platform, tolerances), a row per point in
/// scenario order (table, mode, size flag; measured, simulated and signed error % of the
/// throughput in Mbit/s and of both service demands in us/KB, "-" where not measured; status),
/// then per table the median and max |error| of throughput and of service demand (local and
/// remote together), and a verdict line naming the failing gated points.
std::string format_run_report(const Scenario& scenario, const std::vector<PointOutcome>& outcomes);

/// Header of the run CSV, without newline.
std::string run_csv_header();

/// The run CSV: header and one row per point, in scenario order. Values in full precision,
/// errors in % with 4 decimals, empty cells where not measured.
std::string format_run_csv(const Scenario& scenario, const std::vector<PointOutcome>& outcomes);

/// Options of `hcasim run`.
struct RunOptions {
  std::string scenario = "seed000";     ///< FILE or NAME (data dir/scenarios/NAME.toml)
  int jobs = 0;                         ///< -j N, >= 1; 0 = number of online CPUs
  std::optional<std::string> csv_path;  ///< --csv; default "<scenario name>-results.csv"
};

/// Parses the words after `hcasim run` (CLI11). Throws InputError naming the flag.
RunOptions parse_run_args(const std::vector<std::string>& args);

/// Runs every point of the scenario, each in a child process (`/proc/self/exe netperf ...`,
/// up to -j at once; identical command lines run once), prints the report on stdout, writes
/// the CSV once all points finished. Returns 0 when every gated point is within tolerance, 1
/// when some is not, 2 when a child failed (its stderr is shown, then one error line naming
/// the point). Throws InputError for a bad scenario, reference or output path (exit 2).
int run_scenario(const RunOptions& options);

}  // namespace hcasim::scenarios
