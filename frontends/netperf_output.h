#pragma once
/// \file netperf's output for a simulated TCP_STREAM, plus hcasim's CSV and statistics line.
///
/// The text is what netperf 2.4.3 prints (src/nettest_bsd.c send_tcp_stream: tput_title,
/// tput_fmt_0/1, cpu_title, cpu_fmt_0/1, ksink_fmt, ksink_fmt2; print_top_test_header for the
/// banner; src/netlib.c calc_thruput, format_units, calc_service_demand, format_cpu_method).
#include <cstdint>
#include <string>
#include <utility>
#include <string_view>
#include <vector>

#include "frontends/netperf_cli.h"
#include "frontends/netperf_config.h"

namespace hcasim::frontends {

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
  /// TCP_RR: transactions per second (then `throughput` too, and the service demands are us per
  /// transaction, netperf's us/Tr); 0 for the stream tests.
  double transaction_rate = 0;
};

/// netlib.c calc_thruput_interval: `bytes` / divisor / `elapsed_s`, divisor 2^10, 2^20, 2^30
/// for K, M, G (bytes/s) and 10^3/8, 10^6/8, 10^9/8 for k, m, g (bits/s). Any other `format`
/// is treated as K, as netperf does.
double netperf_throughput(double bytes, double elapsed_s, char format);

/// One -D interim result's figure, as its line prints it: TCP_RR's transactions per second, the
/// streams' throughput in the -f unit (netperf_throughput over the interval).
double interim_figure(const NetperfOptions& o, const InterimResult& ir);

/// netlib.c format_units: "KBytes", "MBytes", "GBytes", "10^3bits", "10^6bits", "10^9bits".
std::string netperf_units(char format);

/// Throughput, utilisations and service demands of `result` as netperf computes them: the
/// throughput and both service demands use the remote's bytes received; service demand comes
/// from sim::service_demand_us_per_kb (netlib.c calc_service_demand).
NetperfFigures netperf_figures(const NetperfOptions& options, const TcpStreamResult& result);

/// The whole stdout of a netperf 2.4.3 TCP_STREAM, TCP_MAERTS or TCP_RR run (options.test):
/// TCP_RR prints send_tcp_rr's transaction rate table (lss lsr request response elapsed rate, then
/// rss rsr on a second line; us/Tr service demands with -c/-C), TCP_MAERTS send_tcp_maerts's
/// stream table (its row ends "   \n " with no newline, as netperf's tput_fmt_1). For TCP_STREAM: with -P 1 the banner ("TCP STREAM TEST
/// from 0.0.0.0 (0.0.0.0) port 0 AF_INET to HOST (HOST) port 0 AF_INET", plus " : cpu bind"
/// after -T) and the column titles, then the row; the long form with utilisation and service
/// demand when -c or -C was given; at -v 0 only the terse number; at -v 2 (or more) also the
/// alignment/bytes/sends/recvs block and the TCP MSS block (-1: getsockopt(TCP_MAXSEG) has no
/// answer on an SDP socket). Sizes and counts come from `result`, numbers from `figures`.
std::string format_netperf_output(const NetperfOptions& options, const TcpStreamResult& result,
                                  const NetperfFigures& figures);

/// --profile: the flat CPU profile of one host, like a gprof/oprofile flat profile per CPU.
///
/// `cores`: one entry per CPU of the host, printed in the given order; each has its CPU number
/// and busy time by activity in ns of simulated time (any activity names, any number, as
/// TcpStreamResult::local_profile gives them). `elapsed_s`: the measured interval in
/// seconds (netperf's elapsed time); every share is of that interval. `host`: the host's name
/// in the summary line, e.g. "local host (netperf)".
///
/// Shape ("\n" ends every line; the seconds have 6 decimals, the percentages 2):
///
///     local host (netperf): utilisation 37.50 % (mean over 2 CPUs) in 2.000000 s
///       CPU 0   % time     seconds  activity
///                50.00    1.000000  copy
///                25.00    0.500000  interrupt
///                25.00    0.500000  idle
///                75.00    1.500000  total busy
///       CPU 1   % time     seconds  activity
///               100.00    2.000000  idle
///                 0.00    0.000000  total busy
///
/// Per CPU: one row per activity and an "idle" row (elapsed minus all busy time, never
/// negative), sorted by time descending (ties keep the given activity order, idle after the
/// activities); rows whose time is exactly 0 are left out; then "total busy" (all activities:
/// 100 % minus idle unless the activities add up to more than the interval), and when the CPU
/// woke or resumed a sleeper, the counts its wakeup row is made of ("wakeups N (M with an IPI),
/// context switches K": cpu.wakeup + cpu.ipi, cpu.context_switch each). % time = 100 x
/// time / elapsed. The utilisation is the mean over the CPUs of their total busy %, i.e.
/// netperf's system-wide figure (model::utilisation_pct). With `elapsed_s` <= 0 every share
/// is 0.00 and idle is 0; with no CPUs only the summary line is printed ("no CPUs").
std::string format_cpu_profile(std::string_view host, const std::vector<CoreProfile>& cores,
                               double elapsed_s);

/// --profile's whole text, printed on stdout after format_netperf_output: a blank line, the
/// local host's profile ("local host (netperf)"), a blank line, the remote host's ("remote
/// host (netserver)"), both over `result.elapsed_s`.
std::string format_netperf_profile(const TcpStreamResult& result);

/// Header of hcasim's netperf CSV (--csv), without newline.
std::string netperf_csv_header();

/// The --csv file: netperf_csv_header() and one data row, each ending in "\n". Numbers in full
/// precision (shortest round-trip form); unmeasured utilisation/service demand cells are empty.
/// TCP_RR: transaction_rate_per_s is the rate netperf prints (transactions / elapsed, the
/// elapsed time a C float as in send_tcp_rr), empty for the stream tests; its sd_* cells are us
/// per transaction and throughput_mbps the bytes of both directions.
std::string format_netperf_csv(const NetperfOptions& options, const TcpStreamResult& result,
                               const NetperfFigures& figures);

/// --stats: "hcasim: stats: activities=N time_steps=N sdp_messages=N activities_per_message=R
/// simulated_s=X wall_s=Y speed=Z simulated s per wall s max_rss_mb=M" (no newline): SimGrid's
/// own counts (sim::SimGridStats), the SDP messages both sides sent, the peak RSS in MiB.
std::string format_stats_line(const TcpStreamResult& result);

/// hcasim's line on an IPoIB run's TCP buffer tuning (for --stats): the four socket buffers, netperf's
/// then netserver's, as netperf printed them (at socket creation) against what Linux grew them
/// to by the end, "set" for those -s / -S fixed; then the data's segment size (TCP_RR: the
/// requests'), after the SYN-ACK's window first halved it and at the end, e.g.
/// "hcasim: tcp: netperf send buffer 16384 -> 131072 B (autotuned), receive buffer 87380 ->
/// 174760 B (autotuned); netserver send buffer 16384 -> 131072 B (autotuned), receive buffer
/// 87380 -> 174760 B (autotuned); segments 32734 B, then 65468 B".
std::string format_tcp_tuning_line(const IpoibStreamResult& r);
/// --stats, second line: "hcasim: link busy: NAME=Ss(U%) ..." (no newline): each SimGrid link's
/// busy time over the measured interval, seconds to 1 us, and its utilisation, busy /
/// `interval_s` (omitted when the interval is 0). sim::TwoHostBed::link_busy_s says what is
/// counted.
std::string format_link_busy_line(const std::vector<std::pair<std::string, double>>& links, double interval_s);

/// The progress line of a long timed run on a terminal (no newline): "hcasim: simulated 12.3 s of
/// 1e+09 s (0.0 %) at 4.1 simulated s per wall s, about 7.7 years to go"; the estimate is the
/// simulated seconds left over the speed so far, in s, min, h, days or years, "?" before the
/// speed is known (no wall time or no simulated time yet).
std::string format_progress_line(double simulated_s, double length_s, double wall_s);

}  // namespace hcasim::frontends
