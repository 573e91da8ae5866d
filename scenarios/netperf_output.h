#pragma once
/// \file netperf's output for a simulated TCP_STREAM, plus hcasim's CSV and statistics line.
///
/// The text is what netperf 2.4.3 prints (src/nettest_bsd.c send_tcp_stream: tput_title,
/// tput_fmt_0/1, cpu_title, cpu_fmt_0/1, ksink_fmt, ksink_fmt2; print_top_test_header for the
/// banner; src/netlib.c calc_thruput, format_units, calc_service_demand, format_cpu_method).
#include <cstdint>
#include <string>

#include "scenarios/netperf_cli.h"
#include "sim/netperf_sim.h"

namespace hcasim::scenarios {

/// The numbers netperf derives from a run. Unmeasured utilisation and service demand are -1,
/// as netperf sets them (send_tcp_stream) and prints them ("-1.00", "-1.000").
struct NetperfFigures {
  double elapsed_s = 0;          ///< seconds
  double throughput = 0;         ///< remote bytes received / elapsed, in the -f unit per second
  double throughput_mbps = 0;    ///< the same in 10^6 bits/s (for the CSV, whatever -f says)
  double local_util_pct = -1;    ///< % of all CPUs of the sending host; -1 without -c
  double remote_util_pct = -1;   ///< % of all CPUs of the receiving host; -1 without -C
  double local_sd_us_per_kb = -1;   ///< us of CPU per KB (1024 B) received; -1 without -c
  double remote_sd_us_per_kb = -1;  ///< -1 without -C
};

/// netlib.c calc_thruput_interval: `bytes` / divisor / `elapsed_s`, divisor 2^10, 2^20, 2^30
/// for K, M, G (bytes/s) and 10^3/8, 10^6/8, 10^9/8 for k, m, g (bits/s). Any other `format`
/// is treated as K, as netperf does.
double netperf_throughput(double bytes, double elapsed_s, char format);

/// netlib.c format_units: "KBytes", "MBytes", "GBytes", "10^3bits", "10^6bits", "10^9bits".
std::string netperf_units(char format);

/// Throughput, utilisations and service demands of `result` as netperf computes them: the
/// throughput and both service demands use the remote's bytes received; service demand comes
/// from sim::service_demand_us_per_kb (netlib.c calc_service_demand).
NetperfFigures netperf_figures(const NetperfOptions& options, const sim::TcpStreamResult& result);

/// The whole stdout of a netperf 2.4.3 TCP_STREAM run: with -P 1 the banner ("TCP STREAM TEST
/// from 0.0.0.0 (0.0.0.0) port 0 AF_INET to HOST (HOST) port 0 AF_INET", plus " : cpu bind"
/// after -T) and the column titles, then the row; the long form with utilisation and service
/// demand when -c or -C was given; at -v 0 only the terse number; at -v 2 (or more) also the
/// alignment/bytes/sends/recvs block and the TCP MSS block (-1: getsockopt(TCP_MAXSEG) has no
/// answer on an SDP socket). Sizes and counts come from `result`, numbers from `figures`.
std::string format_netperf_output(const NetperfOptions& options, const sim::TcpStreamResult& result,
                                  const NetperfFigures& figures);

/// Header of hcasim's netperf CSV (--csv), without newline.
std::string netperf_csv_header();

/// The --csv file: netperf_csv_header() and one data row, each ending in "\n". Numbers in full
/// precision (shortest round-trip form); unmeasured utilisation/service demand cells are empty.
std::string format_netperf_csv(const NetperfOptions& options, const sim::TcpStreamResult& result,
                               const NetperfFigures& figures);

/// --stats: "hcasim: stats: activities=N sdp_messages=N simulated_s=X wall_s=Y speed=Z
/// simulated s per wall s" (no newline).
std::string format_stats_line(const sim::TcpStreamResult& result);

/// Checks before a long run that `path` can be written later: its directory exists and is
/// writable, and `path` is not a directory. Throws InputError "WHAT PATH: cannot write
/// (reason)" otherwise.
void check_output_path(const std::string& path, const std::string& what);

/// Writes `content` to `path` whole or not at all: into PATH.tmp.PID in the same directory,
/// then rename(2). On any error removes the temporary file and throws InputError
/// "WHAT PATH: cannot write (reason)" (`what` names the option, e.g. "--csv").
void write_file_atomically(const std::string& path, const std::string& content,
                           const std::string& what);

}  // namespace hcasim::scenarios
