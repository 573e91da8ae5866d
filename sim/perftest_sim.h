#pragma once
/// \file Entry point of the simulated perftest tools (ib_write_lat, ib_write_bw, ib_send_bw)
/// between two hosts, each with its emulated HCA.
///
/// One call builds one SimGrid engine, so it may run once per process. The command line
/// (frontends/perftest_cli.h) turns perftest's flags into a PerftestConfig; the report
/// (frontends/perftest_output.h) turns the raw timestamps of a PerftestPoint into perftest's
/// figures exactly as perftest computes them from its cycle counters.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "frontends/perftest_config.h"
#include "model/fault.h"
#include "model/platform.h"

namespace hcasim::sim {

/// run_perftest's failure when perftest 4.5's own loop would wait for ever: with -e, run_iter_bw
/// reads one completion event and polls up to 16 completions, so completions can be left on the
/// CQ with no new one to raise an event (perftest_resources.c run_iter_bw); on UC and UD a SEND
/// that finds no receive posted is dropped (IBA 9.7.5.2.2, 9.8.3) and the server waits for it.
/// A failure of the run, as perftest's would be, not of the simulator.
struct PerftestWaitsForEver : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// What run_perftest checks before it simulates anything: the platforms' parameters
/// (read_host_params) and the config against the HCAs (the errors run_perftest throws, as
/// InputError and frontends::ConfigError). Returns the result's banner facts (max_inline_data,
/// mtu, blueflame, write_combining), no points, so that the banner can be printed before the
/// simulation runs.
frontends::PerftestResult check_perftest(const model::Platform& local, const model::Platform& remote,
                                         const frontends::PerftestConfig& config);

/// Runs `config` between a client host described by `local` and a server described by
/// `remote`. Throws InputError when a platform parameter is missing or out of range, and
/// frontends::ConfigError naming the field when the config asks for something the HCA cannot
/// do: a message above hca.max_msg_size (sizes), a depth above hca.max_qp_wr or
/// hca.cq_entries (tx_depth, rx_depth), an inline size above hca.max_inline_data (inline_size).
frontends::PerftestResult run_perftest(const model::Platform& local, const model::Platform& remote,
                                       const frontends::PerftestConfig& config);

}  // namespace hcasim::sim
