#pragma once
/// \file perftest's output for a simulated ib_write_lat / ib_write_bw / ib_send_bw client, plus
/// hcasim's CSV and statistics line.
///
/// The figures are computed from the simulation's raw timestamps exactly as perftest 4.5
/// (Debian's 4.5+0.17, "Version: 6.06") computes them from its cycle counters
/// (src/perftest_parameters.c print_report_lat, print_report_bw, get_median): every timestamp
/// becomes a cycle count of the client's CPU clock first, and the arithmetic (unsigned 64-bit
/// cycle differences, integer divisions, perftest's int-truncated stdev) is perftest's. The text
/// is perftest 4.5's (ctx_print_test_info, ctx_print_pingpong_data in perftest_communication.c,
/// RESULT_FMT* / REPORT_FMT* of perftest_parameters.h, all checked against the strings of the
/// installed binary); with --columns classic the results table is perftest 2.x's
/// (perftest_parameters.h of 2013-2014: RESULT_FMT_LAT " #bytes #iterations    t_min[usec]
/// t_max[usec]  t_typical[usec]", REPORT_FMT_LAT " %-7lu %d          %-7.2f        %-7.2f
/// %-7.2f"), the layout of the 2014 seed (shared/seeds/001_*.txt).
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "frontends/perftest_cli.h"
#include "frontends/perftest_config.h"

namespace hcasim::frontends {

/// The client's cycle-counter rate perftest divides by (get_cpu_mhz: /proc/cpuinfo's "cpu MHz",
/// three decimals), in MHz = cycles per us, from a clock in GHz (the platform's host.clock):
/// rounded to the kHz.
double perftest_cpu_mhz(double clock_ghz);

/// The cycle counter read at `t_ns` (ns of simulated time since the start): floor(t_ns x MHz /
/// 1000), as a TSC read returns a whole count.
uint64_t perftest_cycles(double t_ns, double cpu_mhz);

/// One row of a latency tool, as print_report_lat computes it. Times in us: half the round trip
/// (WRITE, SEND), the whole round trip (READ, atomics).
struct PerftestLatFigures {
  uint64_t bytes = 0;
  uint64_t iterations = 0;   ///< the #iterations column (perftest's iters)
  double t_min_us = 0;       ///< smallest delta
  double t_max_us = 0;       ///< delta[measure_cnt]: the second largest (the largest is dropped)
  double t_typical_us = 0;   ///< the median (perftest's integer mean of the two middle deltas)
  double t_avg_us = 0;       ///< mean of all but the two largest deltas
  double t_stdev_us = 0;     ///< perftest's stdev: each deviation truncated to a whole us (int)
  double t_p99_us = 0;       ///< delta[ceil(0.99 x measure_cnt)]
  double t_p99_9_us = 0;     ///< delta[ceil(0.999 x measure_cnt)]
};

/// print_report_lat (perftest 4.5) on `point`: delta[i] = cycles(tposted[i+1]) -
/// cycles(tposted[i]) for the iters-1 round trips; sorted; measure_cnt = iters - 1 - 2
/// (LAT_MEASURE_TAIL: the two largest are dropped); median = get_median(measure_cnt): the middle
/// delta when measure_cnt is odd, else (delta[n/2] + delta[n/2-1]) / 2 in integer cycles; every
/// time is cycles / (MHz x rtt_factor): 2 for WRITE and SEND (ib_write_lat, ib_send_lat), 1 for
/// READ and atomics (perftest_rtt_factor). Throws std::invalid_argument when the point has fewer
/// than 4 timestamps (perftest needs -n >= 5).
/// With `cycles` (-C) the times are in cycles / rtt_factor instead (cycles_to_units 1), the
/// fields' _us names notwithstanding.
PerftestLatFigures perftest_lat_figures(const PerftestPoint& point, double cpu_mhz, int rtt_factor = 2,
                                        bool cycles = false);

/// print_report_lat's sample lists: -U (`unsorted`) prints "#, UNITS" then every delta in the
/// order measured, -H (`histogram`) "#, UNITS" then the sorted deltas without the two largest,
/// each line "%d, %g" (1-based index, the delta / (units x rtt_factor)); UNITS is "usec", or
/// "cycles" with `cycles` (-C). Empty when neither is asked. Throws as perftest_lat_figures.
std::string perftest_lat_samples(const PerftestPoint& point, double cpu_mhz, int rtt_factor, bool cycles,
                                 bool unsorted, bool histogram);

/// The peak's per-message time in cycles: the smallest (completed[j] - posted[i]) / (j - i + 1),
/// integer division, over every i <= j where perftest has a completion time (j + 1 a multiple
/// of `cq_mod`, or j = N - 1): print_report_bw's opt_delta loop, in O(N log N) instead of its
/// O(N^2 / cq_mod). `posted` in posting order, `completed` sorted (the k-th completion in
/// time); `bytes` only names the point in errors. Throws std::invalid_argument when the sizes
/// differ or are 0, when cq_mod is 0, or when a completion time it reads precedes a post paired
/// with it (perftest's unsigned difference would wrap; a simulated WR never completes before it
/// is posted).
uint64_t perftest_peak_cycles(const std::vector<uint64_t>& posted, const std::vector<uint64_t>& completed,
                              uint32_t cq_mod, uint64_t bytes = 0);

/// One row of ib_write_bw / ib_send_bw, as print_report_bw computes it.
struct PerftestBwFigures {
  uint64_t bytes = 0;
  uint64_t iterations = 0;      ///< the #iterations column: iterations x QPs
  double bw_peak_mib_s = 0;     ///< BW peak, MB/s with MB = 2^20 B (0 when no peak is measured)
  double bw_avg_mib_s = 0;      ///< BW average, MB/s (2^20 B)
  double bw_peak_gbit_s = 0;    ///< the same in Gb/s (10^9 bit/s; --report_gbits)
  double bw_avg_gbit_s = 0;
  double msg_rate_mpps = 0;     ///< MsgRate, 10^6 messages per second
  /// -b: this side's own average in Gb/s, which print_full_bw_report's inc_accuracy tests before
  /// it adds the peer's report; below 0 (one side's figures): bw_avg_gbit_s itself.
  double own_bw_avg_gbit_s = -1;
};

/// print_report_bw (perftest 4.5) on `point` (N = tposted_ns.size() WRs over all QPs):
/// - average: size x N x Hz / ((tcompleted[N-1] - tposted[0]) x 2^20) MB/s (125 000 000 instead
///   of 2^20 for Gb/s); MsgRate: N x Hz / ((tcompleted[N-1] - tposted[0]) x 10^6); Hz = MHz x
///   10^6 and tcompleted[N-1] the last completion;
/// - peak: the smallest per-message time (tcompleted[j] - tposted[i]) / (j - i + 1) in integer
///   cycles over every first message i and every j at which perftest has a completion time:
///   j = k x cq_mod - 1 (run_iter_bw stores the time of the k-th CQE polled there) and N - 1;
///   peak = size x Hz / (that time x 2^20). The k-th CQE polled is the k-th completion in time,
///   so tcompleted is used sorted (with one QP it is already in order). The slot 0 is written
///   only when cq_mod is 1; otherwise perftest's starting value (tcompleted[0] - tposted[0]
///   with tcompleted[0] never written, 0) wraps to a huge number and never wins.
///   The minimum is perftest_peak_cycles's (O(N log N)).
/// - with `no_peak` (-N, or more than 20000 iterations) the peak is 0.
/// Throws std::invalid_argument when tposted and tcompleted differ in size or are empty.
PerftestBwFigures perftest_bw_figures(const PerftestPoint& point, double cpu_mhz,
                                      uint32_t cq_mod, bool no_peak);

/// print_report_bw in duration mode (-D) on `point`: noPeak, so the peak is 0; the iterations are
/// those of the sampled window (point.iterations, over all QPs), and the time is the window's,
/// cycles(sample_end_ns) - cycles(sample_start_ns): average = size x iterations x Hz / (cycles x
/// 2^20) MB/s (125 000 000 for Gb/s), MsgRate = iterations x Hz / (cycles x 10^6).
PerftestBwFigures perftest_bw_duration_figures(const PerftestPoint& point, double cpu_mhz);

/// print_full_bw_report with the remote side's report (-b): BW peak, BW average and MsgRate are
/// the sums of both sides', #iterations the local side's; own_bw_avg_gbit_s keeps the local
/// average (perftest's inc_accuracy test precedes the sum).
PerftestBwFigures perftest_bw_sum(const PerftestBwFigures& local, const PerftestBwFigures& remote);

/// The bw row of size `k` as the client prints it: its own figures (perftest_bw_figures, or
/// perftest_bw_duration_figures with -D), summed with the server's (result.remote_points) when
/// perftest sums both sides (perftest_sums_both_sides).
PerftestBwFigures perftest_bw_report(const PerftestOptions& options, const PerftestResult& result, size_t k,
                                     double cpu_mhz);

/// One row of a latency tool in duration mode (-D), as print_report_lat_duration computes it:
/// the sampled window in cycles, t_avg = cycles / MHz / rtt_factor / iterations us, tps =
/// iterations / (cycles / (MHz x 10^6)) round trips per second.
struct PerftestLatDurationFigures {
  uint64_t bytes = 0;
  uint64_t iterations = 0;  ///< iterations completed in the sampled window
  double t_avg_us = 0;
  double tps = 0;
};
PerftestLatDurationFigures perftest_lat_duration_figures(const PerftestPoint& point, double cpu_mhz, int rtt_factor);

/// The row of a latency tool in duration mode (with its "\n"): REPORT_FMT_LAT_DUR " %-7lu
/// %" PRIu64 "            %-7.2f        %-7.2f" then REPORT_EXT.
std::string perftest_lat_duration_row(const PerftestLatDurationFigures& f);

/// A results row as perftest prints it (with its "\n"): ib_write_lat in classic (2.x
/// REPORT_FMT_LAT) or extended (4.5 REPORT_FMT_LAT) form.
std::string perftest_lat_row(const PerftestLatFigures& f, PerftestColumns columns);

/// A bw results row (with its "\n"): classic = perftest 2.x REPORT_FMT " %-7lu    %d
/// %-7.2lf            %-7.2lf\t\t   %-7.6lf"; extended = 4.5 REPORT_FMT (%-10lu iterations), or
/// with `gbits` and an average below 0.1 Gb/s 4.5's REPORT_FMT_EXT (six decimals).
std::string perftest_bw_row(const PerftestBwFigures& f, PerftestColumns columns, bool gbits);

/// The header line of the results table (with its "\n").
std::string perftest_results_header(const PerftestOptions& options);

/// The values of one "local address" / "remote address" line. The simulation does not report
/// them (PerftestResult has no QPN, PSN, key or address), so they are fixed, plausible
/// values: LID 0x01 for the client's port and 0x02 for the server's; QPN 0x48 + QP index (the
/// emulated HCA numbers QPs from 0x48, sim/hca.h); PSN lrand48() & 0xffffff as perftest draws it
/// (perftest_resources.c set_up_connection) after srand48(seed x 2 + side); RKey 0x100 (the
/// emulated HCA's first key, sim/hca.h); VAddr = buffer + (QPs + i) x BUFF_SIZE (as
/// set_up_connection computes it; BUFF_SIZE is the message size, 8 MB with -a, at least a 4 KB
/// page) with the buffer at a page-aligned address of the mmap area drawn from the same lrand48;
/// GID fe80::2:c903:0:N (N = 1 client, 2 server; Mellanox OUI 00:02:c9).
struct PerftestAddress {
  uint32_t lid = 0;
  uint32_t qpn = 0;
  uint32_t psn = 0;
  uint32_t rkey = 0;
  uint64_t vaddr = 0;
  std::array<uint8_t, 16> gid{};
};

/// One address line as ctx_print_pingpong_data prints it (with its "\n"): BASIC_ADDR_FMT
/// " %s address: LID %#04x QPN %#06x PSN %#06x", then for every verb but SEND (`rdma`) RDMA_FMT
/// " RKey %#08x VAddr %#016llx", then with `gid` (-x) the GID line GID_FMT " GID: %02d:...".
std::string perftest_address_line(const PerftestAddress& a, bool remote, bool rdma, bool gid);

/// The addresses of the client's (`remote` false) or the server's QPs, one per QP; `buffer_size`
/// is perftest's BUFF_SIZE argument (the message size, or 8388608 with -a).
std::vector<PerftestAddress> perftest_addresses(bool remote, uint32_t num_qps, uint64_t buffer_size,
                                                uint64_t seed);

/// glibc's lrand48 after srand48(seed): X = (seed << 16) | 0x330E, then X = (0x5DEECE66D X +
/// 0xB) mod 2^48 and the result is X >> 17. `state` carries X between calls.
uint32_t perftest_lrand48(uint64_t& state);
/// The state srand48(seed) sets (low 32 bits of the seed).
uint64_t perftest_srand48(uint64_t seed);

/// The banner ctx_print_test_info prints on the client (between two 87-dash lines): test name,
/// "Dual-port : OFF", device (-d), QPs, transport IB, connection RC, SRQ OFF, "PCIe relax order:
/// ON", "ibv_wr* API : OFF" (perftest 4.5 falls back to ibv_post_send on ConnectX/ConnectX-2/3),
/// TX depth, CQ Moderation (bw), Mtu (`result.mtu`), link IB, GID index (-x), Max inline data
/// (or, for READ and atomics, "Outstand reads" with `result.out_reads`), rdma_cm QPs (-R) and
/// the data exchange method (-R or -z: rdma_cm, else Ethernet). The title names the verb
/// (testsStr: Send, RDMA_Write, RDMA_Read, Atomic) and an atomic's type (atomicTypesStr).
std::string perftest_banner(const PerftestOptions& options, const PerftestConfig& config,
                            const PerftestResult& result);

/// What perftest prints before it measures anything: the CQ moderation warning when it applies,
/// an 87-dash line when -o asked for more outstanding reads than the device has (perftest's
/// ctx_set_out_reads prints it on stdout, its message on stderr), the banner, the address lines, the 87-dash line and the table header. Needs only the
/// result's banner facts (sim::check_perftest's), so it can be printed before the simulation.
std::string format_perftest_head(const PerftestOptions& options, const PerftestResult& result);

/// What perftest prints once it measured: one row per size (from `result`'s points) and the
/// closing 87-dash line.
std::string format_perftest_rows(const PerftestOptions& options, const PerftestResult& result, double cpu_mhz);

/// --explain after perftest's report, per size: the bw tools' resources, bottleneck and what-if
/// (frontends/explain.h format_explain), ib_write_lat's one-way stages against its t_typical
/// (format_latency_stages). Empty without --explain.
std::string format_perftest_explain(const PerftestOptions& options, const PerftestResult& result, double cpu_mhz);

/// The whole stdout of the perftest client: perftest's parse-time CQ moderation warning when it
/// applies (-Q above 1 with a size above 8192 B), the banner, the address lines (local then
/// remote, one per QP, with GID lines after -x), the 87-dash line, the table header, one row per
/// size, and the closing 87-dash line (format_perftest_head, then format_perftest_rows). `cpu_mhz`
/// is the client's cycle rate (perftest_cpu_mhz).
std::string format_perftest_output(const PerftestOptions& options, const PerftestResult& result,
                                   double cpu_mhz);

/// Header of hcasim's perftest CSV (--csv) for `test`, without newline. Latency:
/// test,blueflame,write_combining,bytes,iterations,t_min_us,t_max_us,t_typical_us,t_avg_us,
/// t_stdev_us,t_p99_us,t_p99_9_us. Bandwidth: test,blueflame,write_combining,bytes,iterations,
/// num_qps,bw_peak_mib_s,bw_avg_mib_s,bw_peak_gbit_s,bw_avg_gbit_s,msg_rate_mpps.
std::string perftest_csv_header(PerftestTest test);

/// The --csv file: perftest_csv_header and one row per size, each ending in "\n"; numbers in
/// full precision (shortest round-trip form), blueflame/write_combining as on/off.
std::string format_perftest_csv(const PerftestOptions& options, const PerftestResult& result,
                                double cpu_mhz);

/// --stats: "hcasim: stats: activities=N time_steps=N blueflame_posts=N doorbell_posts=N
/// simulated_s=X wall_s=Y speed=Z simulated s per wall s max_rss_mb=M" (no newline): SimGrid's
/// own counts (sim::SimGridStats) and the peak RSS in MiB.
std::string format_perftest_stats_line(const PerftestResult& result);

}  // namespace hcasim::frontends
