// perftest output (perftest_output.h). The arithmetic follows perftest 4.5's
// src/perftest_parameters.c print_report_lat / print_report_bw / get_median line by line, in
// perftest's types (cycles_t = unsigned 64-bit, int where perftest uses int), so that rounding at
// the printed precision is perftest's; the formats are perftest's printf strings, printed with C
// printf semantics.
#include "frontends/perftest_output.h"

#include "frontends/explain.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "frontends/cformat.h"

namespace hcasim::frontends {

namespace {

/// Exact products of a 65-bit time difference and an index (perftest_peak_cycles); a GCC and
/// Clang extension, hence __extension__ (-Wpedantic).
__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

/// perftest_parameters.h RESULT_LINE (87 dashes).
constexpr const char* kResultLine =
    "---------------------------------------------------------------------------------------\n";

/// LAT_MEASURE_TAIL: print_report_lat drops the two largest deltas.
constexpr int kLatMeasureTail = 2;
/// print_report_bw's format_factor: MB (2^20 B) per second, or Gb/s (125 000 000 B/s).
constexpr uint64_t kMiB = 0x100000;
constexpr uint64_t kGbitBytes = 125000000;

/// perftest_parameters.c connStr / testsStr (perftest 4.5: Send, RDMA_Write, RDMA_Read, Atomic).
const char* verb_name(PerftestTest t) {
  if (perftest_is_send(t)) return "Send";
  if (perftest_is_atomic(t)) return "Atomic";
  if (perftest_is_read_or_atomic(t)) return "RDMA_Read";
  return "RDMA_Write";
}

std::vector<uint64_t> cycles_of(const std::vector<double>& ns, double cpu_mhz) {
  std::vector<uint64_t> c;
  c.reserve(ns.size());
  for (double t : ns) c.push_back(perftest_cycles(t, cpu_mhz));
  return c;
}

/// get_median (perftest_parameters.c): n is measure_cnt after the tail is dropped.
uint64_t get_median(int n, const std::vector<uint64_t>& delta) {
  const auto h = static_cast<size_t>(n / 2);
  if ((n - 1) % 2) return (delta[h] + delta[h - 1]) / 2;
  return delta[h];
}

/// perftest's cycles-per-second (print_report_bw: get_cpu_mhz() * 1000000).
double cycles_per_s(double cpu_mhz) { return cpu_mhz * 1000000; }

/// print_report_bw for one format_factor: {peak, average}.
std::pair<double, double> bw_pair(uint64_t size, uint64_t n, double hz, double sum_cycles,
                                  uint64_t opt_delta, bool no_peak, uint64_t format_factor) {
  const double avg = (static_cast<double>(size) * static_cast<double>(n) * hz) /
                     (sum_cycles * static_cast<double>(format_factor));
  const uint64_t peak_up = (no_peak ? 0 : 1) * size * static_cast<uint64_t>(hz);
  const uint64_t peak_down = opt_delta * format_factor;
  const double peak = no_peak ? 0.0 : static_cast<double>(peak_up) / static_cast<double>(peak_down);
  return {peak, avg};
}

std::string on_off(bool v) { return v ? "on" : "off"; }

/// The buffer size perftest registers per QP (BUFF_SIZE(size, cycle_buffer): at least a page);
/// with -a the size is MAX_SIZE.
uint64_t buffer_size(const PerftestOptions& o) {
  const uint64_t size = o.all ? (uint64_t{1} << kPerftestAllMaxLog2) : o.size;
  return std::max<uint64_t>(size, 4096);
}

std::string address_lines(const PerftestOptions& o, const PerftestConfig& c, bool remote) {
  std::string out;
  for (const PerftestAddress& a : perftest_addresses(remote, c.num_qps, buffer_size(o), o.seed))
    out += perftest_address_line(a, remote, !perftest_is_send(o.test),
                                 o.gid_index.has_value());
  return out;
}

}  // namespace

std::string perftest_address_line(const PerftestAddress& a, bool remote, bool rdma, bool gid) {
  std::string out = cformat(" %s address: LID %#04x QPN %#06x PSN %#06x",
                            remote ? "remote" : "local", a.lid, a.qpn, a.psn);
  if (rdma) out += cformat(" RKey %#08x VAddr %#016llx", a.rkey, static_cast<unsigned long long>(a.vaddr));
  out += "\n";
  if (gid) {
    out += " GID";
    for (size_t i = 0; i < a.gid.size(); ++i) out += cformat("%s%02d", i == 0 ? ": " : ":", a.gid[i]);
    out += "\n";
  }
  return out;
}

double perftest_cpu_mhz(double clock_ghz) { return std::round(clock_ghz * 1e6) / 1e3; }

uint64_t perftest_cycles(double t_ns, double cpu_mhz) {
  return static_cast<uint64_t>(std::floor(t_ns * cpu_mhz / 1000.0));
}

PerftestLatFigures perftest_lat_figures(const PerftestPoint& p, double cpu_mhz, int rtt_factor, bool cycles) {
  if (p.tposted_ns.size() < 4)
    throw std::invalid_argument(fmt::format(
        "perftest latency figures need at least 4 timestamps, the {} B point has {}", p.bytes,
        p.tposted_ns.size()));
  const std::vector<uint64_t> t = cycles_of(p.tposted_ns, cpu_mhz);
  int measure_cnt = static_cast<int>(t.size()) - 1;
  std::vector<uint64_t> delta(static_cast<size_t>(measure_cnt));
  for (size_t i = 0; i < delta.size(); ++i) delta[i] = t[i + 1] - t[i];
  const double q = (cycles ? 1.0 : cpu_mhz) * rtt_factor;  // cycles_rtt_quotient (-C: cycles_to_units 1)

  std::sort(delta.begin(), delta.end());  // qsort with cycles_compare
  measure_cnt -= kLatMeasureTail;
  const uint64_t median = get_median(measure_cnt, delta);

  double average_sum = 0;
  for (int i = 0; i < measure_cnt; ++i) average_sum += static_cast<double>(delta[static_cast<size_t>(i)]) / q;
  const double average = average_sum / measure_cnt;

  // perftest's stdev: `int temp_var = average - x; int pow_var = pow(temp_var, 2);`.
  double stdev_sum = 0;
  for (int i = 0; i < measure_cnt; ++i) {
    const auto temp_var =
        static_cast<int64_t>(average - static_cast<double>(delta[static_cast<size_t>(i)]) / q);
    stdev_sum += static_cast<double>(temp_var * temp_var);
  }

  const auto iters_99 = static_cast<size_t>(std::ceil(measure_cnt * 0.99));
  const auto iters_99_9 = static_cast<size_t>(std::ceil(measure_cnt * 0.999));

  PerftestLatFigures f;
  f.bytes = p.bytes;
  f.iterations = p.iterations;
  f.t_min_us = static_cast<double>(delta[0]) / q;
  f.t_max_us = static_cast<double>(delta[static_cast<size_t>(measure_cnt)]) / q;
  f.t_typical_us = static_cast<double>(median) / q;
  f.t_avg_us = average;
  f.t_stdev_us = std::sqrt(stdev_sum / measure_cnt);
  f.t_p99_us = static_cast<double>(delta[iters_99]) / q;
  f.t_p99_9_us = static_cast<double>(delta[iters_99_9]) / q;
  return f;
}

std::string perftest_lat_samples(const PerftestPoint& p, double cpu_mhz, int rtt_factor, bool cycles, bool unsorted,
                                 bool histogram) {
  if (!unsorted && !histogram) return {};
  if (p.tposted_ns.size() < 4)
    throw std::invalid_argument(fmt::format(
        "perftest latency samples need at least 4 timestamps, the {} B point has {}", p.bytes, p.tposted_ns.size()));
  const std::vector<uint64_t> t = cycles_of(p.tposted_ns, cpu_mhz);
  std::vector<uint64_t> delta(t.size() - 1);
  for (size_t i = 0; i < delta.size(); ++i) delta[i] = t[i + 1] - t[i];
  const double q = (cycles ? 1.0 : cpu_mhz) * rtt_factor;
  const char* units = cycles ? "cycles" : "usec";
  std::string out;
  // print_report_lat: the unsorted list before qsort, the "histogram" after it, without the tail.
  auto list = [&](size_t n) {
    out += cformat("#, %s\n", units);
    for (size_t i = 0; i < n; ++i) out += cformat("%d, %g\n", static_cast<int>(i + 1), static_cast<double>(delta[i]) / q);
  };
  if (unsorted) list(delta.size());
  std::sort(delta.begin(), delta.end());
  if (histogram) list(delta.size() - kLatMeasureTail);
  return out;
}

uint64_t perftest_peak_cycles(const std::vector<uint64_t>& posted, const std::vector<uint64_t>& completed,
                              uint32_t cq_mod, uint64_t bytes) {
  if (posted.empty() || posted.size() != completed.size())
    throw std::invalid_argument(fmt::format(
        "perftest peak: the {} B point has {} posted and {} completed WRs", bytes, posted.size(), completed.size()));
  if (cq_mod == 0) throw std::invalid_argument("perftest peak: cq_mod must be >= 1");
  const uint64_t n = posted.size();
  // perftest's loop: for every first WR i and every j >= i where it has a completion time (j + 1
  // a multiple of cq_mod, or j = N - 1), (completed[j] - posted[i]) / (j - i + 1). Seen as points
  // L_i = (i, posted[i]) and R_j = (j + 1, completed[j]), that is the slope of L_i -> R_j, and
  // floor is monotonic, so the smallest quotient is the floor of the smallest slope. For one j
  // the smallest slope from the points left of R_j is the tangent from R_j to their upper convex
  // hull: kept incrementally as j grows (each point pushed and popped once), found by binary
  // search along the hull, whose slopes towards R_j fall and then rise. All products in 128 bits
  // (a 65-bit difference times an index), so every comparison is exact.
  std::vector<uint64_t> hull;  // indices i of the upper hull of the L_i, x increasing
  hull.reserve(std::min<uint64_t>(n, 1u << 16));
  uint64_t best = std::numeric_limits<uint64_t>::max();
  uint64_t latest_post = 0;  // the largest posted[i] so far
  for (uint64_t j = 0; j < n; ++j) {
    // L_j joins the hull; b leaves when it lies on or below the segment from a to L_j.
    while (hull.size() >= 2) {
      const uint64_t a = hull[hull.size() - 2], b = hull.back();
      const i128 lhs = (static_cast<i128>(posted[b]) - static_cast<i128>(posted[a])) * static_cast<i128>(j - a);
      const i128 rhs = (static_cast<i128>(posted[j]) - static_cast<i128>(posted[a])) * static_cast<i128>(b - a);
      if (lhs > rhs) break;
      hull.pop_back();
    }
    hull.push_back(j);
    latest_post = std::max(latest_post, posted[j]);
    if ((j + 1) % cq_mod != 0 && j != n - 1) continue;  // perftest has no completion time at j
    const uint64_t c = completed[j];
    // A WR completes after it is posted, and the (j+1)-th completion follows the (j+1)-th post,
    // so no completion time perftest reads precedes a post it is paired with: every difference
    // below is >= 0 (perftest's unsigned arithmetic would wrap otherwise).
    if (latest_post > c)
      throw std::invalid_argument(fmt::format(
          "perftest peak: the {} B point's completion {} ({} cycles) precedes a post before it ({} cycles)", bytes, j,
          c, latest_post));
    const uint64_t x = j + 1;
    // below(k, l): slope(k) < slope(l), i.e. (c - P_k) / (x - k) < (c - P_l) / (x - l).
    const auto below = [&](uint64_t k, uint64_t l) {
      return static_cast<u128>(c - posted[k]) * (x - l) < static_cast<u128>(c - posted[l]) * (x - k);
    };
    size_t lo = 0, hi = hull.size() - 1;  // the first hull point whose successor is no better
    while (lo < hi) {
      const size_t mid = lo + (hi - lo) / 2;
      if (below(hull[mid + 1], hull[mid])) lo = mid + 1;
      else hi = mid;
    }
    const uint64_t i = hull[lo];
    best = std::min(best, (c - posted[i]) / (x - i));
  }
  return best;
}

PerftestBwFigures perftest_bw_figures(const PerftestPoint& p, double cpu_mhz, uint32_t cq_mod,
                                      bool no_peak) {
  if (p.tposted_ns.empty() || p.tposted_ns.size() != p.tcompleted_ns.size())
    throw std::invalid_argument(fmt::format(
        "perftest bw figures need one completion time per WR: the {} B point has {} posted, {} "
        "completed",
        p.bytes, p.tposted_ns.size(), p.tcompleted_ns.size()));
  if (cq_mod == 0) throw std::invalid_argument("perftest bw figures: cq_mod must be >= 1");
  const std::vector<uint64_t> posted = cycles_of(p.tposted_ns, cpu_mhz);
  std::vector<uint64_t> completed = cycles_of(p.tcompleted_ns, cpu_mhz);
  std::sort(completed.begin(), completed.end());  // the k-th CQE polled is the k-th in time
  const uint64_t n = posted.size();

  // opt_delta starts at tcompleted[0] - tposted[0]. Slot 0 holds a CQE time only with cq_mod 1;
  // otherwise it was never written (in practice 0 from a fresh allocation), and 0 minus a TSC
  // reading wraps to a value near 2^64 that every per-message time beats: the largest value here.
  // With cq_mod 1 the starting pair (0, 0) is one of the pairs perftest_peak_cycles scans, so
  // the minimum is the same either way.
  uint64_t opt_delta =
      cq_mod == 1 ? completed[0] - posted[0] : std::numeric_limits<uint64_t>::max();
  if (!no_peak) opt_delta = std::min(opt_delta, perftest_peak_cycles(posted, completed, cq_mod, p.bytes));
  const double hz = cycles_per_s(cpu_mhz);
  // location_arr is N-1 with a peak; without one perftest keeps the end time in slot 0. Both are
  // the last completion.
  const auto sum_cycles = static_cast<double>(completed[n - 1] - posted[0]);

  PerftestBwFigures f;
  f.bytes = p.bytes;
  f.iterations = p.iterations;
  std::tie(f.bw_peak_mib_s, f.bw_avg_mib_s) = bw_pair(p.bytes, n, hz, sum_cycles, opt_delta, no_peak, kMiB);
  std::tie(f.bw_peak_gbit_s, f.bw_avg_gbit_s) =
      bw_pair(p.bytes, n, hz, sum_cycles, opt_delta, no_peak, kGbitBytes);
  f.msg_rate_mpps = (static_cast<double>(n) * hz * 1) / (sum_cycles * 1000000);
  return f;
}

PerftestBwFigures perftest_bw_duration_figures(const PerftestPoint& p, double cpu_mhz) {
  if (!(p.sample_end_ns > p.sample_start_ns))
    throw std::invalid_argument(fmt::format("perftest duration figures: the {} B point has no sampled window", p.bytes));
  // catch_alarm's tposted[0] and tcompleted[0]; location_arr is 0 with noPeak.
  const auto sum_cycles =
      static_cast<double>(perftest_cycles(p.sample_end_ns, cpu_mhz) - perftest_cycles(p.sample_start_ns, cpu_mhz));
  const double hz = cycles_per_s(cpu_mhz);
  const uint64_t n = p.iterations;
  PerftestBwFigures f;
  f.bytes = p.bytes;
  f.iterations = n;
  // noPeak: peak_up is 0 and opt_delta is the window, so the peak is 0.
  std::tie(f.bw_peak_mib_s, f.bw_avg_mib_s) = bw_pair(p.bytes, n, hz, sum_cycles, 1, true, kMiB);
  std::tie(f.bw_peak_gbit_s, f.bw_avg_gbit_s) = bw_pair(p.bytes, n, hz, sum_cycles, 1, true, kGbitBytes);
  f.msg_rate_mpps = (static_cast<double>(n) * hz * 1) / (sum_cycles * 1000000);
  return f;
}

PerftestBwFigures perftest_bw_sum(const PerftestBwFigures& local, const PerftestBwFigures& remote) {
  PerftestBwFigures f = local;
  f.bw_peak_mib_s += remote.bw_peak_mib_s;
  f.bw_avg_mib_s += remote.bw_avg_mib_s;
  f.bw_peak_gbit_s += remote.bw_peak_gbit_s;
  f.bw_avg_gbit_s += remote.bw_avg_gbit_s;
  f.msg_rate_mpps += remote.msg_rate_mpps;
  f.own_bw_avg_gbit_s = local.bw_avg_gbit_s;
  return f;
}

PerftestBwFigures perftest_bw_report(const PerftestOptions& o, const PerftestResult& r, size_t k, double cpu_mhz) {
  const uint32_t cq_mod = to_perftest_config(o).cq_mod;
  const bool no_peak = perftest_no_peak(o);
  const auto one_side = [&](const PerftestPoint& p) {
    return o.duration ? perftest_bw_duration_figures(p, cpu_mhz) : perftest_bw_figures(p, cpu_mhz, cq_mod, no_peak);
  };
  const PerftestBwFigures local = one_side(r.points.at(k));
  if (!perftest_sums_both_sides(o)) return local;
  if (k >= r.remote_points.size())
    throw std::invalid_argument(fmt::format("perftest -b: no server report for the {} B point", local.bytes));
  return perftest_bw_sum(local, one_side(r.remote_points[k]));
}

PerftestLatDurationFigures perftest_lat_duration_figures(const PerftestPoint& p, double cpu_mhz, int rtt_factor) {
  if (!(p.sample_end_ns > p.sample_start_ns))
    throw std::invalid_argument(fmt::format("perftest duration figures: the {} B point has no sampled window", p.bytes));
  // print_report_lat_duration: test_sample_time is a cycles_t, iters a uint64_t.
  const uint64_t test_sample_time = perftest_cycles(p.sample_end_ns, cpu_mhz) - perftest_cycles(p.sample_start_ns, cpu_mhz);
  const double cycles = static_cast<double>(test_sample_time);
  const double iters = static_cast<double>(p.iterations);
  PerftestLatDurationFigures f;
  f.bytes = p.bytes;
  f.iterations = p.iterations;
  f.t_avg_us = ((cycles / cpu_mhz) / rtt_factor) / iters;
  f.tps = iters / (cycles / (cpu_mhz * 1000000));
  return f;
}

std::string perftest_lat_duration_row(const PerftestLatDurationFigures& f) {
  return cformat(" %-7lu       %lu            %-7.2f        %-7.2f\n", static_cast<unsigned long>(f.bytes),
                 static_cast<unsigned long>(f.iterations), f.t_avg_us, f.tps);
}

std::string perftest_lat_row(const PerftestLatFigures& f, PerftestColumns columns) {
  if (columns == PerftestColumns::Classic)  // perftest 2.x REPORT_FMT_LAT (iters is an int)
    return cformat(" %-7lu %d          %-7.2f        %-7.2f      %-7.2f\n",
                   static_cast<unsigned long>(f.bytes), static_cast<int>(f.iterations), f.t_min_us,
                   f.t_max_us, f.t_typical_us);
  // perftest 4.5 REPORT_FMT_LAT, then REPORT_EXT.
  return cformat(
      " %-7lu %lu          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f "
      "\t\t%-7.2f\n",
      static_cast<unsigned long>(f.bytes), static_cast<unsigned long>(f.iterations), f.t_min_us,
      f.t_max_us, f.t_typical_us, f.t_avg_us, f.t_stdev_us, f.t_p99_us, f.t_p99_9_us);
}

std::string perftest_bw_row(const PerftestBwFigures& f, PerftestColumns columns, bool gbits) {
  const double peak = gbits ? f.bw_peak_gbit_s : f.bw_peak_mib_s;
  const double avg = gbits ? f.bw_avg_gbit_s : f.bw_avg_mib_s;
  const auto bytes = static_cast<unsigned long>(f.bytes);
  if (columns == PerftestColumns::Classic)  // perftest 2.x REPORT_FMT
    return cformat(" %-7lu    %d           %-7.2lf            %-7.2lf\t\t   %-7.6lf\n", bytes,
                   static_cast<int>(f.iterations), peak, avg, f.msg_rate_mpps);
  const auto iters = static_cast<unsigned long>(f.iterations);
  const double own_avg = f.own_bw_avg_gbit_s >= 0 ? f.own_bw_avg_gbit_s : f.bw_avg_gbit_s;
  if (gbits && own_avg < 0.1)  // print_full_bw_report: inc_accuracy -> REPORT_FMT_EXT
    return cformat(" %-7lu    %lu           %-7.6lf            %-7.6lf            %-7.6lf\n", bytes,
                   iters, peak, avg, f.msg_rate_mpps);
  return cformat(" %-7lu    %-10lu       %-7.2lf            %-7.2lf\t\t   %-7.6lf\n", bytes, iters,
                 peak, avg, f.msg_rate_mpps);
}

std::string perftest_results_header(const PerftestOptions& o) {
  if (!perftest_is_bw(o.test)) {
    if (o.duration)  // RESULT_FMT_LAT_DUR then RESULT_EXT, whatever --columns says
      return " #bytes        #iterations       t_avg[usec]    tps average\n";
    if (o.columns == PerftestColumns::Classic)  // perftest 2.x RESULT_FMT_LAT
      return " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n";
    // perftest 4.5 RESULT_FMT_LAT then RESULT_EXT
    return " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
           "t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n";
  }
  if (o.report_gbits)  // RESULT_FMT_G
    return " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n";
  return " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n";
}

uint64_t perftest_srand48(uint64_t seed) { return ((seed & 0xffffffffu) << 16) | 0x330Eu; }

uint32_t perftest_lrand48(uint64_t& state) {
  state = (0x5DEECE66DULL * state + 0xB) & ((uint64_t{1} << 48) - 1);
  return static_cast<uint32_t>(state >> 17);
}

std::vector<PerftestAddress> perftest_addresses(bool remote, uint32_t num_qps, uint64_t buffer_size,
                                                uint64_t seed) {
  uint64_t state = perftest_srand48(seed * 2 + (remote ? 1 : 0));
  // The buffer: a page-aligned address in the x86_64 mmap area (0x7f00_0000_0000 upwards).
  const uint64_t buffer = 0x7f0000000000ULL + (uint64_t{perftest_lrand48(state) & 0xfffffffu} << 12);
  std::vector<PerftestAddress> out;
  for (uint32_t i = 0; i < num_qps; ++i) {
    PerftestAddress a;
    a.lid = remote ? 0x02 : 0x01;
    a.qpn = 0x48 + i;
    a.psn = perftest_lrand48(state) & 0xffffff;
    a.rkey = 0x100;
    a.vaddr = buffer + (uint64_t{num_qps} + i) * buffer_size;
    a.gid = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02, 0xc9, 0x03, 0, 0, 0,
             static_cast<uint8_t>(remote ? 2 : 1)};
    out.push_back(a);
  }
  return out;
}

std::string perftest_banner(const PerftestOptions& o, const PerftestConfig& c,
                            const PerftestResult& r) {
  const bool bw = perftest_is_bw(o.test);
  // ctx_qp_create: when the QP offers less inline data than asked, perftest uses what it got.
  uint32_t inline_size = c.inline_size;
  if (r.max_inline_data != 0 && r.max_inline_data < inline_size) inline_size = r.max_inline_data;
  std::string out = kResultLine;
  // ctx_print_test_info: testsStr[verb], then for ATOMIC atomicTypesStr[atomicType].
  const char* atomic_type = o.atomic == PerftestAtomic::CmpAndSwap ? "CMP_AND_SWAP " : "FETCH_AND_ADD ";
  // ... then "Bidirectional " for -b (duplex) before "BW ".
  out += cformat("                    %s %s%s%sTest\n", verb_name(o.test), perftest_is_atomic(o.test) ? atomic_type : "",
                 bw && o.duplex ? "Bidirectional " : "", bw ? "BW " : "Latency ");
  // ctx_print_test_info: -e names the completion vector (eq_num, 0 without -X).
  if (o.use_event) out += cformat(" Test with events. Using %s_comp%d\n", o.device.c_str(), 0);
  out += cformat(" Dual-port       : %s\t\tDevice         : %s\n", "OFF", o.device.c_str());
  out += cformat(" Number of qps   : %d\t\tTransport type : %s\n", static_cast<int>(c.num_qps), "IB");
  out += cformat(" Connection type : %s\t\tUsing SRQ      : %s\n", perftest_connection_name(c.connection), "OFF");
  out += cformat(" PCIe relax order: %s\n", "ON");
  out += cformat(" ibv_wr* API     : %s\n", "OFF");
  out += cformat(" TX depth        : %d\n", static_cast<int>(c.tx_depth));
  // "RX depth" on a SEND test's server or with -b (the client posts receives too).
  if (perftest_is_send(o.test) && bw && o.duplex) out += cformat(" RX depth        : %d\n", static_cast<int>(c.rx_depth));
  if (bw) out += cformat(" CQ Moderation   : %d\n", static_cast<int>(c.cq_mod));
  out += cformat(" Mtu             : %lu[B]\n", static_cast<unsigned long>(r.mtu));
  out += cformat(" Link type       : %s\n", "IB");
  if (o.gid_index) out += cformat(" GID index       : %d\n", *o.gid_index);
  if (perftest_is_read_or_atomic(o.test))
    out += cformat(" Outstand reads  : %d\n", static_cast<int>(r.out_reads));
  else
    out += cformat(" Max inline data : %d[B]\n", static_cast<int>(inline_size));
  out += cformat(" rdma_cm QPs\t : %s\n", o.rdma_cm ? "ON" : "OFF");
  out += cformat(" Data ex. method : %s", o.rdma_cm || o.comm_rdma_cm ? "rdma_cm" : "Ethernet");
  out += "\n";
  out += kResultLine;
  return out;
}

std::string format_perftest_head(const PerftestOptions& o, const PerftestResult& r) {
  const PerftestConfig c = to_perftest_config(o);
  std::string out;
  // force_dependecies: -Q above 1 kept for a message above MSG_SIZE_CQ_MOD_LIMIT (not on UD).
  if (perftest_is_bw(o.test) && o.cq_mod && *o.cq_mod > 1 && o.size > kPerftestCqModSizeLimit && !o.all &&
      !o.use_event && o.connection != PerftestConnection::Ud) {
    out += kResultLine;
    out += "Warning: Large message requested and CQ moderation enabled\n";
    out += "Warning: It can lead to inaccurate results\n";
  }
  // ctx_set_out_reads: "Number of outstanding reads is above max" (its text on stderr: perftest_main).
  if (perftest_is_read_or_atomic(o.test) && o.out_reads && *o.out_reads > static_cast<long>(r.out_reads))
    out += kResultLine;
  out += perftest_banner(o, c, r);
  out += address_lines(o, c, false);
  out += address_lines(o, c, true);
  out += kResultLine;
  out += perftest_results_header(o);
  return out;
}

std::string format_perftest_rows(const PerftestOptions& o, const PerftestResult& r, double cpu_mhz) {
  std::string out;
  for (size_t k = 0; k < r.points.size(); ++k) {
    const PerftestPoint& p = r.points[k];
    if (perftest_is_bw(o.test))
      out += perftest_bw_row(perftest_bw_report(o, r, k, cpu_mhz), o.columns, o.report_gbits);
    else if (o.duration)
      out += perftest_lat_duration_row(perftest_lat_duration_figures(p, cpu_mhz, perftest_rtt_factor(o.test)));
    else {
      const int rtt = perftest_rtt_factor(o.test);
      // print_report_lat: -U / -H print their lists, then a result line and the header again.
      const std::string samples =
          perftest_lat_samples(p, cpu_mhz, rtt, o.report_cycles, o.report_unsorted, o.report_histogram);
      if (!samples.empty()) out += samples + kResultLine + perftest_results_header(o);
      out += perftest_lat_row(perftest_lat_figures(p, cpu_mhz, rtt, o.report_cycles), o.columns);
    }
  }
  out += kResultLine;
  return out;
}

std::string format_perftest_output(const PerftestOptions& o, const PerftestResult& r,
                                   double cpu_mhz) {
  return format_perftest_head(o, r) + format_perftest_rows(o, r, cpu_mhz);
}

std::string perftest_csv_header(PerftestTest test) {
  if (perftest_is_bw(test))
    return "test,blueflame,write_combining,bytes,iterations,num_qps,bw_peak_mib_s,bw_avg_mib_s,"
           "bw_peak_gbit_s,bw_avg_gbit_s,msg_rate_mpps";
  return "test,blueflame,write_combining,bytes,iterations,t_min_us,t_max_us,t_typical_us,t_avg_us,"
         "t_stdev_us,t_p99_us,t_p99_9_us";
}

std::string format_perftest_csv(const PerftestOptions& o, const PerftestResult& r,
                                double cpu_mhz) {
  const PerftestConfig c = to_perftest_config(o);
  const std::string_view tool = perftest_tool_name(o.test);
  std::string out = perftest_csv_header(o.test) + "\n";
  for (size_t k = 0; k < r.points.size(); ++k) {
    const PerftestPoint& p = r.points[k];
    if (perftest_is_bw(o.test)) {
      const PerftestBwFigures f = perftest_bw_report(o, r, k, cpu_mhz);
      out += fmt::format("{},{},{},{},{},{},{},{},{},{},{}\n", tool, on_off(r.blueflame),
                         on_off(r.write_combining), f.bytes, f.iterations, c.num_qps,
                         f.bw_peak_mib_s, f.bw_avg_mib_s, f.bw_peak_gbit_s, f.bw_avg_gbit_s,
                         f.msg_rate_mpps);
    } else {
      const PerftestLatFigures f = perftest_lat_figures(p, cpu_mhz, perftest_rtt_factor(o.test));
      out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{}\n", tool, on_off(r.blueflame),
                         on_off(r.write_combining), f.bytes, f.iterations, f.t_min_us, f.t_max_us,
                         f.t_typical_us, f.t_avg_us, f.t_stdev_us, f.t_p99_us, f.t_p99_9_us);
    }
  }
  return out;
}

std::string format_perftest_stats_line(const PerftestResult& r) {
  const std::string speed =
      r.wall_s > 0 ? fmt::format("{:.2f}", r.simulated_s / r.wall_s) : std::string("inf");
  return fmt::format(
      "hcasim: stats: activities={} time_steps={} events={} switches={} transfers_simgrid={} transfers_alone={} "
      "blueflame_posts={} doorbell_posts={} simulated_s={:.6f} wall_s={:.3f} speed={} simulated s per wall s "
      "max_rss_mb={:.1f}",
      r.simgrid_activities, r.simgrid_time_steps, r.kernel_events, r.context_switches, r.transfers_simgrid,
      r.transfers_alone, r.blueflame_posts, r.doorbell_posts, r.simulated_s, r.wall_s, speed,
      static_cast<double>(r.max_rss_kb) / 1024);
}

std::string format_perftest_explain(const PerftestOptions& o, const PerftestResult& r, double cpu_mhz) {
  if (!o.explain) return {};
  std::string out;
  for (const PerftestPoint& p : r.points) {
    if (!perftest_is_bw(o.test)) {
      out += format_latency_stages(p.bytes, p.latency_stages, perftest_lat_figures(p, cpu_mhz).t_typical_us);
    } else if (p.explain) {
      out += fmt::format("\n#bytes {}:", p.bytes);
      out += format_explain(explain(*p.explain));
    }
  }
  return out;
}

}  // namespace hcasim::frontends
