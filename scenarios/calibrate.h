#pragma once
/// \file `hcasim calibrate`: fits a few physical parameters of a platform to real runs.
///
///     hcasim calibrate --platform BASE --fit KEY[=LO:HI],... [--start KEY=V]... [--set KEY=V]...
///                      RUNS... [--holdout RUNS...] [-o FILE] [--csv PATH] [-j N] [--max-evals N]
///                      [--duration S] [--iterations N] [--steady REL]
///                      [--remote-platform BASE2 [--remote-output FILE]]
///
/// A RUNS item is a run file (a pasted terminal session: commands and their real output,
/// scenarios/run_file.h) or a scenario (NAME or FILE.toml, scenarios/scenario.h), optionally
/// followed by `:REGEX` to keep only the runs whose label matches (ECMAScript, anywhere in the
/// label). A scenario point's label is "SCENARIO TABLE MODE SIZE" (e.g. "seed002 T0_0 SDP -m
/// 64K"); a run file's is "FILE:LINE COMMAND [SETTINGS]" (e.g. "runs.txt:5 netperf -C -c ...
/// ---m 64K [sdp.zcopy_thresh=1]", "runs.txt:7 ... ib_write_lat ... [--platform
/// connectx3-pcie3x8-kvm, hca.blueflame=on]"). Each command is simulated on BASE
/// (both hosts) with the run's own settings (a run file's `echo N > .../sdp_zcopy_thresh`, a
/// point's `set` list), then --set, then the fitted values.
///
/// Two different machines (seed 003's rx2600 -> rx4640): --remote-platform BASE2 is the other
/// end of every run, and `remote:KEY` fits one of BASE2's parameters. Each evaluation writes
/// both platforms with their fitted values to a private temporary directory and simulates
/// `--platform LOCAL --remote-platform REMOTE`, then the run's settings and --set (both
/// hosts, as `hcasim netperf --set`); a fitted key that a run or --set also sets is refused.
/// -o takes BASE's fitted file, --remote-output BASE2's.
///
/// What is compared (the quantities of a run): netperf, the throughput and each service demand
/// the run measured; a perftest latency tool (ib_write_lat, ib_send_lat, ib_read_lat,
/// ib_atomic_lat), t_typical of every size in the table; a bw tool (ib_write_bw, ib_send_bw,
/// ib_read_bw, ib_atomic_bw), BW average of every size; a libibverbs example (ibv_rc_pingpong
/// ...), its usec/iter. The error of a quantity is relative,
/// (simulated - measured) / measured, and the fit minimises the RMS of all the fitting runs'
/// errors with NLopt's BOBYQA (bounded, derivative-free; Powell 2009) on the parameters'
/// logarithms, so that every parameter moves by ratios whatever its unit.
///
/// Simulation length: netperf runs are simulated for --duration seconds (default 4; 0 = the
/// command's -l) and perftest runs for at most --iterations iterations (default 20000; 0 = the
/// command's -n): steady-state figures need far less than a real run's 60 s, and a fit
/// evaluates every run dozens of times. Within --duration, netperf runs over SDP are measured
/// in their steady state (--steady REL, default 0.002: sim/netperf_sim.h), which ends most of
/// them after about 0.1 simulated s. The report says so.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/platform.h"
#include "scenarios/fitted_platform.h"
#include "scenarios/observations.h"
#include "scenarios/scenario.h"
#include "scenarios/simulate.h"

namespace hcasim::scenarios {

/// One parameter to fit: bounds and start in the unit its platform file declares.
struct FitParam {
  std::string key;          ///< "section.name"
  std::string unit;         ///< as declared in the platform file
  double start = 0;         ///< the platform's value, or --start
  double lower = 0, upper = 0;  ///< bounds; default start/4 .. start*4
  bool integer = false;     ///< the file writes an integer: simulated values are rounded
  bool remote = false;      ///< a parameter of --remote-platform (given as "remote:KEY")
  /// The name calibrate prints: KEY, or "remote:KEY" for the remote host's.
  std::string name() const { return remote ? "remote:" + key : key; }
};

/// Parses one --fit item "KEY" or "KEY=LO:HI" against `platform` (with --start values in
/// `starts`, "KEY=VALUE"). Throws InputError "--fit ITEM: ..." for an unknown key, a value that
/// is not a number (bool, string), an integer without a unit (a count: structure, not a
/// quantity), a start <= 0 (fitting works on logarithms), bounds that are
/// not numbers, LO >= HI, LO <= 0, or a start outside [LO, HI].
FitParam parse_fit_param(const std::string& item, const model::Platform& platform,
                         const std::vector<std::string>& starts);

/// Root mean square of `errors` (0 when empty).
double rms(const std::vector<double>& errors);

/// Options of `hcasim calibrate`.
struct CalibrateOptions {
  std::string platform;                  ///< --platform NAME|FILE (required): netperf's host, perftest's client
  /// --remote-platform NAME|FILE: the other host of every run (netserver, perftest's server),
  /// whose parameters are fitted as "remote:KEY"; unset = both hosts are --platform
  std::optional<std::string> remote_platform;
  std::vector<std::string> fit;          ///< --fit items, comma-separated on the command line
  std::vector<std::string> starts;       ///< --start KEY=VALUE
  std::vector<std::string> sets;         ///< --set KEY=VALUE (not fitted; written to the output)
  std::vector<std::string> runs;         ///< RUNS items to fit
  std::vector<std::string> holdout;      ///< --holdout RUNS items, only predicted
  std::optional<std::string> output;     ///< -o FILE; default "<platform name>-fitted.toml"
  /// --remote-output FILE: the fitted remote platform (with --remote-platform); default
  /// "<remote platform name>-fitted.toml"
  std::optional<std::string> remote_output;
  /// --csv PATH: one row per run and quantity, header
  /// set,run,quantity,measured,start,start_error_pct,fitted,fitted_error_pct (set: fit or
  /// holdout; values in the quantity's unit, errors in % of measured)
  std::optional<std::string> csv_path;
  int jobs = 0;                          ///< -j N; 0 = online CPUs
  int max_evals = 60;                    ///< --max-evals: NLopt's maxeval
  double duration_s = 4;                 ///< --duration: netperf's simulated -l, 0 = as typed
  uint64_t iterations = 20000;           ///< --iterations: perftest's -n cap, 0 = as typed
  /// --steady: netperf-over-SDP runs measured in their steady state to this relative precision
  /// (sim/netperf_sim.h), at most --duration; 0 = the whole --duration
  double steady_rel = 0.002;
  bool json = false;                     ///< --json: the report as JSON on stdout, no text
  std::vector<std::string> args;         ///< the words after `calibrate`, as given (the JSON's command_line)
};

/// Parses the words after `hcasim calibrate` (CLI11). Throws InputError naming the flag.
CalibrateOptions parse_calibrate_args(const std::vector<std::string>& args);

/// Runs the fit: prints the settings, one line per evaluation, the parameters (start, fitted,
/// bounds, sensitivity) and the error of every run and quantity at the start and fitted
/// values, fit and holdout; writes the fitted platform file (and --csv). With --json it prints
/// nothing while it fits and, once the files are written, one document (schema
/// "hcasim.calibrate/1": the settings, every evaluation, the parameters with their sensitivity,
/// each run's quantities at the start and fitted, the files written). Returns 0, 2 on a failed child,
/// 128 + signal when interrupted (nothing written). Throws InputError for bad input, before
/// any simulation.
int run_calibrate(const CalibrateOptions& options);

}  // namespace hcasim::scenarios
