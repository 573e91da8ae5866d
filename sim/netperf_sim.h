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
#include "sim/testbed.h"

namespace hcasim::sim {

/// The window of simulated time between two checkpoints of a steady measurement
/// (TcpStreamConfig::steady_rel), s: long enough to hold many messages of any size netperf sends
/// (a 1 MB send at 10 Gbit/s takes 0.8 ms) and the receiver's recv() calls, whose byte counts
/// are what the rates are measured from.
inline constexpr double kSteadyWindowS = 0.02;

/// Runs netperf TCP_STREAM over SDP from a host described by `local` to one described by
/// `remote`. With config.steady_rel > 0 (and a timed run) the figures are those of the stream's
/// steady state: util::SteadyState over windows of kSteadyWindowS on the bytes received and
/// each host's CPU time, measured from the checkpoint where the warm-up ended to the one where
/// the averages held still; a run whose rates never settle within -l is measured as netperf
/// measures it. Throws InputError when a platform parameter is missing or out of range, and
/// frontends::ConfigError naming the field (local_cpu, remote_cpu) for a CPU the host lacks.
frontends::TcpStreamResult run_tcp_stream(const model::Platform& local, const model::Platform& remote,
                                          const frontends::TcpStreamConfig& config);

/// What a netperf TCP_STREAM gets of its flags on two hosts, SDP's or TCP's: the socket buffers
/// as Linux's sock_setsockopt grants them (doubled, capped at 2 x socket.wmem_max/rmem_max, at
/// least SOCK_MIN_SNDBUF/RCVBUF: model::linux_socket_buffer), B; the send and receive sizes
/// (without -m / -M the socket sizes, nettest_bsd.c send_tcp_stream / recv_tcp_stream), B; the
/// CPUs (-T, else host.default_app_cpu). Throws frontends::ConfigError naming local_cpu or
/// remote_cpu for a CPU the host lacks (the message names the platform).
struct StreamSetup {
  uint64_t send_socket = 0, recv_socket = 0, send_size = 0, recv_size = 0;
  int local_cpu = 0, remote_cpu = 0;
};
StreamSetup stream_setup(const HostParams& a, const HostParams& b, const model::Platform& local,
                         const model::Platform& remote, const frontends::TcpStreamConfig& config);

/// netperf's service demand formula (model/cpu.h).
using model::service_demand_us_per_kb;

}  // namespace hcasim::sim
