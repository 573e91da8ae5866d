#pragma once
/// \file `hcasim compare RUNFILE... [--platform NAME|FILE] [--set KEY=V]... [-j N] [--csv PATH]
/// [--duration S] [--iterations N]`: every real run pasted in the run files (run_file.h)
/// simulated as typed and compared with what it printed, in `hcasim run`'s report
/// (run_report.h). Nothing is fitted and nothing is written but --csv.
///
/// Each run file is one report: a row per netperf run (table: FILE:LINE of its command; mode:
/// the run's settings, e.g. "sdp.zcopy_thresh=1", or "-"; size: its test options after `--`;
/// TCP_STREAM and TCP_MAERTS: throughput, service demand in us/KB, utilisation; TCP_RR, in a
/// table of its own: transaction rate, service demand in us/Tr, utilisation)
/// and per row of a perftest table (the latency tools ib_write_lat, ib_send_lat, ib_read_lat,
/// ib_atomic_lat: t_typical, t_min, t_max; the bw tools ib_write_bw, ib_send_bw, ib_read_bw,
/// ib_atomic_bw: BW average and MsgRate; table FILE:LINE, bytes), none gated. A run is
/// simulated on its `# hcasim: --platform` (relative to the run file when it is a file there),
/// else --platform (default connectx-ddr-pcie1x8), with its own settings and then every --set;
/// its child is the same `hcasim TOOL WORDS --platform P --set ...` as `hcasim run`'s for the
/// same command, so a run also in a scenario has the same simulated figures and errors.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/error.h"
#include "scenarios/scenario.h"
#include "scenarios/simulate.h"

namespace hcasim::scenarios {

/// Options of `hcasim compare`.
struct CompareOptions {
  std::vector<std::string> run_files;   ///< RUNFILE..., at least one
  std::optional<std::string> platform;  ///< --platform NAME|FILE; default the netperf default
  std::vector<std::string> sets;        ///< --set KEY=VALUE, after each run's own settings
  int jobs = 0;                         ///< -j N; 0 = online CPUs
  std::optional<std::string> csv_path;  ///< --csv PATH (the run CSV, one header for all files)
  SimLength length;                     ///< --duration S, --iterations N (as validate's)
  bool json = false;                    ///< --json: the reports as JSON on stdout (json_report.h)
  std::vector<std::string> args;        ///< the words after `compare`, as given (the JSON's command_line)
};

/// Parses the words after `hcasim compare` (CLI11). Throws InputError naming the flag.
CompareOptions parse_compare_args(const std::vector<std::string>& args);

/// The scenario `hcasim compare` reports for run file `path` and the runs' measured figures
/// (see the \file comment). Throws InputError "PATH:LINE: ..." for a bad run file, a perftest
/// table in CPU cycles.
Scenario run_file_scenario(const std::string& path, const CompareOptions& options, MeasuredPoints* measured);

/// Runs the comparison: each file's report on stdout (blank-line separated), --csv after all
/// finished; with --json one document (schema "hcasim.compare/1": the simulated length and a
/// scenario_report_json per run file) instead of the reports. Returns 0, 2 when a child failed, 128 + N on signal N. Throws InputError for bad
/// input before any child starts.
int compare_runs(const CompareOptions& options);

}  // namespace hcasim::scenarios
