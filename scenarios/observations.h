#pragma once
/// \file What `hcasim calibrate` fits to: the runs of a RUNS item (a run file, scenarios/run_file.h,
/// or a scenario, scenarios/scenario.h, optionally `:REGEX`) as observations, the child command
/// that simulates one, and the simulated figures read back from its CSV.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "scenarios/simulate.h"

namespace hcasim::scenarios {

/// A measured run to simulate: a command line and what it measured.
struct Observation {
  std::string label;               ///< "FILE:LINE netperf ... -m 64K" or "seed002 T0_0 SDP -m 64K"
  std::string where;               ///< "FILE:LINE" of the command or scenario point, for errors
  std::string tool;                ///< hcasim subcommand: netperf or a perftest tool (ib_write_lat ...)
  std::vector<std::string> words;  ///< the tool's arguments
  std::vector<std::string> set;    ///< the run's own --set assignments
  std::vector<std::string> set_origins;  ///< "FILE:LINE" of the directive that wrote each of `set`
                                         ///< (run files; empty for a scenario's points)
  std::optional<std::string> platform;  ///< the machine it ran on: a run file's `# hcasim:
                                        ///< --platform`, a scenario point's platform
  std::optional<std::string> remote_platform;  ///< a scenario point's remote_platform, when it has one
  /// The measured quantities: name ("throughput", "sd_local", "sd_remote", TCP_RR's
  /// "transaction_rate", "sd_local_per_tr", "sd_remote_per_tr", "t_typical 64 B", "bw_average
  /// 65536 B"), measured value (Mbit/s, us/KB, transactions/s, us/Tr, us, Gbit/s).
  std::vector<std::pair<std::string, double>> measured;
};

/// The observations of one RUNS item (see the file comment); an item that is an existing file
/// is never split at ':'. Throws InputError naming the file (FILE:LINE for what a run file or a
/// scenario holds), for a regex that does not parse, when a selection keeps no run, or when a
/// measured value is not > 0.
std::vector<Observation> load_observations(const std::string& item);

/// The simulated value of every measured quantity of `obs`, in order, from the CSV its child
/// wrote (`hcasim netperf --csv` or a perftest tool's `--csv`). Throws InputError
/// "ORIGIN: ..." when the CSV lacks a quantity (a size the command did not run).
std::vector<double> simulated_quantities(const Observation& obs, const std::string& csv,
                                         const std::string& origin);

/// The child's argv for `obs` (without --csv): `hcasim TOOL WORDS --platform FILE
/// [--remote-platform REMOTE_FILE] --set ...`, with the simulation length of `length`
/// (with_sim_length: netperf's -l, SDP's --steady, perftest's -n cap), each only when given.
std::vector<std::string> observation_argv(const Observation& obs, const std::string& platform_file,
                                          const std::vector<std::string>& sets, const SimLength& length,
                                          const std::optional<std::string>& remote_platform_file = std::nullopt);

/// Splits a RUNS item "SOURCE:REGEX" at its first ':', unless the whole item is an existing file.
std::pair<std::string, std::optional<std::string>> split_selection(const std::string& item);

}  // namespace hcasim::scenarios
