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

/// Runs netperf TCP_RR over SDP (nettest_bsd.c send_tcp_rr / recv_tcp_rr): netperf send()s a
/// request of config.request_size bytes and recv()s until the config.response_size bytes of the
/// response are in; netserver recv()s until the whole request is in and send()s the response.
/// A timed run (length_s) ends at its alarm and counts the transactions completed by then
/// (elapsed_s is length_s); with config.transactions > 0 it runs exactly that many. The result's
/// transactions, the four socket buffers, the CPU utilisations over the interval; bytes_sent
/// and send_calls are the requests', bytes_received and recv_calls the responses', counted as
/// netperf 2.7's omni loop counts them (the request of a transaction the alarm interrupts is,
/// its response is not); with verify_data sent_crc32 and received_crc32 are each the crc32 of
/// the requests followed by the responses, as their senders wrote them and as their receivers
/// read them (crc_bytes_sent, crc_bytes_received). Throws as run_tcp_stream does.
frontends::TcpStreamResult run_tcp_rr(const model::Platform& local, const model::Platform& remote,
                                      const frontends::TcpStreamConfig& config);

/// Runs netperf TCP_MAERTS over SDP (nettest_bsd.c send_tcp_maerts): the stream of
/// run_tcp_stream from netserver's host (`remote`) to netperf's (`local`), with netserver's send
/// buffer (-S S,) and -m, netperf's receive buffer (-s ,R) and -M, each side on its -T CPU; the
/// result is netperf's (local = netperf's host). A ConfigError names the MAERTS config field
/// (maerts_field).
frontends::TcpStreamResult run_tcp_maerts(const model::Platform& local, const model::Platform& remote,
                                          const frontends::TcpStreamConfig& config);

/// The TCP_STREAM config of a TCP_MAERTS config: the same stream with the hosts' roles swapped
/// (netserver's send buffer and CPU become the sender's, netperf's receive buffer and CPU the
/// receiver's). Run it with the platforms swapped.
frontends::TcpStreamConfig maerts_stream_config(const frontends::TcpStreamConfig& config);

/// Turns the result of a maerts_stream_config run round into netperf's view: the socket buffers
/// netperf prints (lsr, rss from the run; lss, rsr as Linux grants -s S, and -S ,R on `local`
/// and `remote`), CPUs, utilisations, profiles and fault counts swapped.
void maerts_result(frontends::TcpStreamResult& result, const model::Platform& local, const model::Platform& remote,
                   const frontends::TcpStreamConfig& config);

/// The TCP_MAERTS config field that became TCP_STREAM field `field` in maerts_stream_config.
std::string maerts_field(const std::string& field);

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
