#pragma once
/// \file `hcasim ibv_rc_pingpong|ibv_uc_pingpong|ibv_ud_pingpong|ibv_srq_pingpong ARGS...`: the
/// libibverbs example programs simulated (pingpong_main.cpp), their front end in
/// frontends/pingpong_cli.h.
#include <string>
#include <vector>

#include "frontends/pingpong_config.h"

namespace hcasim::scenarios {

/// Runs `hcasim TOOL ARGS...` as perftest_main runs the perftest tools: parses, prints the notes
/// on stderr, loads both platforms with every --set, checks -d against the hca.device of the
/// side the command is, runs sim::run_pingpong, and prints the shown side's lines (or --json) on
/// stdout and, with --stats, a statistics line on stderr. Returns 0; throws InputError on bad input
/// (the caller prints it and exits 2).
int pingpong_main(frontends::PingpongProgram program, const std::vector<std::string>& args);

}  // namespace hcasim::scenarios
