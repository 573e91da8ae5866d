#pragma once
/// \file `hcasim ib_write_lat|ib_write_bw|ib_send_bw ARGS...`: the perftest tools simulated
/// (perftest_main.cpp), their front end in frontends/perftest_cli.h.
#include <optional>
#include <string>
#include <vector>

#include "frontends/perftest_config.h"

namespace hcasim::scenarios {

/// Runs `hcasim TOOL ARGS...` (modelled on netperf_main in scenarios/main.cpp): parses, checks
/// the --csv path, prints the notes on stderr, loads both platforms (scenarios/datadir.h
/// resolve_platform), applies every --set and then -m (as ib.mtu) to both hosts, runs
/// sim::run_perftest, writes the CSV whole or not at all, prints perftest's output on stdout
/// and, with --stats, the statistics line on stderr. Returns 0; throws InputError on bad input
/// (the caller prints it and exits 2).
int perftest_main(frontends::PerftestTest test, const std::vector<std::string>& args);

/// --trace FILE's checks before a run (netperf's and perftest's): a file that can be written
/// (util::check_output_path), not stdout (the trace would land inside the tool's output) and not
/// the --csv file. Throws InputError naming --trace and the path.
void check_trace_path(const std::string& trace, const std::optional<std::string>& csv);

}  // namespace hcasim::scenarios
