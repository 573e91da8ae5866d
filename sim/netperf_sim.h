#pragma once
/// \file Entry point of a simulated netperf TCP_STREAM over SDP between two hosts.
///
/// One call builds one SimGrid engine, so it may run once per process (SimGrid allows one
/// Engine per process). The front end (frontends/netperf_cli.h) parses netperf's flags
/// into a TcpStreamConfig (frontends/netperf_config.h); frontends/netperf_output.h prints the TcpStreamResult in netperf's format.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "frontends/netperf_config.h"
#include "model/cpu.h"
#include "model/fault.h"
#include "model/platform.h"

namespace hcasim::sim {

/// Runs netperf TCP_STREAM over SDP from a host described by `local` to one described by
/// `remote`. Throws InputError when a platform parameter is missing or out of range, and
/// frontends::ConfigError naming the field (local_cpu, remote_cpu) for a CPU the host lacks.
frontends::TcpStreamResult run_tcp_stream(const model::Platform& local, const model::Platform& remote,
                                          const frontends::TcpStreamConfig& config);

/// netperf's service demand formula (model/cpu.h).
using model::service_demand_us_per_kb;

}  // namespace hcasim::sim
