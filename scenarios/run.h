#pragma once
/// \file `hcasim run [FILE|NAME] [-j N] [--csv PATH]`: runs a scenario file, each point a real
/// command line (netperf, or perftest's ib_write_lat) tied to a row of a reference CSV, and
/// compares simulated with measured.
#include <optional>
#include <string>
#include <vector>

#include "model/error.h"
#include "scenarios/fanout.h"

namespace hcasim::scenarios {


/// Options of `hcasim run`.
struct RunOptions {
  std::string scenario = "seed000";     ///< FILE or NAME (data dir/scenarios/NAME.toml)
  int jobs = 0;                         ///< -j N, >= 1; 0 = number of online CPUs
  std::optional<std::string> csv_path;  ///< --csv; default "<scenario name>-results.csv"
  Fanout fanout;                        ///< --list-commands DIR / --collect DIR (fanout.h)
  bool json = false;                    ///< --json: the report as JSON on stdout (json_report.h)
  std::vector<std::string> args;        ///< the words after `run`, as given (the JSON's command_line)
};

/// Parses the words after `hcasim run` (CLI11). Throws InputError naming the flag, and "--json:
/// --list-commands prints commands, not figures ..." for the two together.
RunOptions parse_run_args(const std::vector<std::string>& args);

/// Runs every point of the scenario, each in a child process (`/proc/self/exe netperf ...` or
/// `/proc/self/exe ib_write_lat ...`, up to -j at once; identical command lines run once), prints the report on stdout, writes
/// the CSV once all points finished. Returns 0 when every gated point is within tolerance, 1
/// when some is not, 2 when a child failed or its CSV lacks what the point needs (its stderr
/// is shown, then one error line naming the point). With --list-commands it prints one
/// standalone command per distinct point and nothing else (writes no CSV); with --collect the
/// points' CSVs come from those commands' directory. With --json the report is printed as
/// JSON (schema "hcasim.run/1": scenario_report_json, with the CSV's path); the CSV is written
/// as without it. Throws InputError for a bad scenario or
/// reference, a tolerance a reference needs and the scenario lacks (check_reference_tolerances,
/// before any child starts) or a bad output path (exit 2).
int run_scenario(const RunOptions& options);


}  // namespace hcasim::scenarios
