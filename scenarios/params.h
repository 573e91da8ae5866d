#pragma once
/// \file `hcasim params [--platform NAME|FILE] [--set KEY=V]... [--json]`: the parameter schema
/// (model/params.h) as a table, and with a platform each key's value, where it was given and
/// its source.
#include <optional>
#include <string>
#include <vector>

#include "model/platform.h"

namespace hcasim::scenarios {

/// The options of `hcasim params`.
struct ParamsOptions {
  std::optional<std::string> platform;  ///< --platform NAME|FILE
  std::vector<std::string> sets;        ///< --set section.key=value, in order (needs --platform)
  bool json = false;                    ///< --json: JSON instead of the text table
  bool help = false;                    ///< --help / -h: usage printed, nothing else
};

/// Parses the words after `params` (CLI11). Throws InputError with CLI11's one-line message for
/// an unknown flag or a missing value, "--set needs --platform" for a --set alone.
ParamsOptions parse_params_args(const std::vector<std::string>& args);

/// The usage `hcasim params --help` prints.
std::string params_help();

/// The schema as the text table: a title line with the key count, then per section a
/// "[section]" line and one line per key (key, type, unit, range, doc, and where the key is
/// needed when not on every platform). With `platform`, each key also gets a line with its
/// value, unit, origin (FILE:LINE or --set) and source, or "(not on this platform: ...)".
std::string format_params_text(const model::Platform* platform);

/// The same as JSON (nlohmann, keys sorted within each object): {"count": N, ["platform":
/// NAME,] "parameters": [{key, section, type, unit, kind, range, choices | min, min_exclusive,
/// max[, power_of_two, multiple_of], needed_on, doc[, value, value_unit, value_ns |
/// value_per_ns, origin, source]}...]} in schema order; docs/cli.md "--json" lists the keys.
std::string format_params_json(const model::Platform* platform);

/// Runs the command: loads the platform (when given), applies the --set assignments, checks it
/// as a simulation would (every reader of sim/testbed.cpp and sim/ipoib_sim.cpp: the same
/// errors) and prints the table or JSON on stdout. Returns 0; InputError on bad input.
int params_main(const std::vector<std::string>& args);

}  // namespace hcasim::scenarios
