// perftest output (frontends/perftest_output.h): the figures of print_report_lat and
// print_report_bw computed from hand-made timestamps (the expected values worked by hand in the
// comments), the row and header layouts against real perftest output (the 2014 seed rows of
// shared/seeds/001, a perftest 4.5-era ib_write_bw run quoted in github.com/linux-rdma/perftest/issues/132),
// the banner and address lines, the whole stdout, the CSV and the --stats line.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "frontends/perftest_output.h"

namespace hcasim::frontends {
namespace {


std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

PerftestOptions options(PerftestTest t, const std::string& line) {
  return parse_perftest_args(t, words(line));
}

/// A latency point from the round-trip times (ns) in the order they were measured, the first
/// post at `start_ns`.
PerftestPoint lat_point(uint64_t bytes, const std::vector<double>& rtt_ns, double start_ns = 0) {
  PerftestPoint p;
  p.bytes = bytes;
  p.tposted_ns.push_back(start_ns);
  for (double d : rtt_ns) p.tposted_ns.push_back(p.tposted_ns.back() + d);
  p.iterations = p.tposted_ns.size();
  return p;
}

// At 1000 MHz a cycle is a ns, and ib_write_lat's time is cycles / (1000 x 2) us.

TEST(PerftestLatFigures, OddCountMedianAndDroppedTail) {
  // 8 posts, 7 round trips (ns) in time order: 2000 1600 1800 9000 1700 2200 5000.
  // Sorted: 1600 1700 1800 2000 2200 | 5000 9000; measure_cnt = 7 - 2 = 5 (odd).
  const auto f = perftest_lat_figures(lat_point(2, {2000, 1600, 1800, 9000, 1700, 2200, 5000}), 1000);
  EXPECT_EQ(f.bytes, 2u);
  EXPECT_EQ(f.iterations, 8u);
  EXPECT_DOUBLE_EQ(f.t_min_us, 0.80);      // 1600 / 2000
  EXPECT_DOUBLE_EQ(f.t_max_us, 2.50);      // delta[5] = 5000: the largest (9000) is dropped
  EXPECT_DOUBLE_EQ(f.t_typical_us, 0.90);  // delta[5 / 2] = 1800
  EXPECT_DOUBLE_EQ(f.t_avg_us, (0.80 + 0.85 + 0.90 + 1.00 + 1.10) / 5);  // 0.93
  EXPECT_DOUBLE_EQ(f.t_stdev_us, 0.0);     // every |0.93 - x| < 1 us truncates to 0
  EXPECT_DOUBLE_EQ(f.t_p99_us, 2.50);      // delta[ceil(5 x 0.99) = 5]
  EXPECT_DOUBLE_EQ(f.t_p99_9_us, 2.50);    // delta[ceil(4.995) = 5]
}

TEST(PerftestLatFigures, CyclesReportDividesByTheRttFactorOnly) {
  // -C: cycles_to_units = 1. The round trips of OddCountMedianAndDroppedTail at 2000 MHz are
  // 4000 3200 3600 18000 3400 4400 10000 cycles; halved (rtt_factor 2): t_min 3200 / 2 = 1600,
  // t_max 10000 / 2 = 5000, t_typical 3600 / 2 = 1800.
  const auto f = perftest_lat_figures(lat_point(2, {2000, 1600, 1800, 9000, 1700, 2200, 5000}), 2000, 2, true);
  EXPECT_DOUBLE_EQ(f.t_min_us, 1600);
  EXPECT_DOUBLE_EQ(f.t_max_us, 5000);
  EXPECT_DOUBLE_EQ(f.t_typical_us, 1800);
}

TEST(PerftestLatSamples, UnsortedInMeasuredOrderHistogramSortedWithoutTheTail) {
  // 4 round trips of 1000 2000 500 4000 ns at 1000 MHz, READ (rtt_factor 1): -U lists them as
  // measured, 1 2 0.5 4 us; -H the sorted ones without the two largest (LAT_MEASURE_TAIL): 0.5 1.
  const PerftestPoint p = lat_point(8, {1000, 2000, 500, 4000});
  EXPECT_EQ(perftest_lat_samples(p, 1000, 1, false, true, false), "#, usec\n1, 1\n2, 2\n3, 0.5\n4, 4\n");
  EXPECT_EQ(perftest_lat_samples(p, 1000, 1, false, false, true), "#, usec\n1, 0.5\n2, 1\n");
  // -C with rtt_factor 2: cycles / 2, "%g" (1000 cycles / 2 = 500, 500 / 2 = 250).
  EXPECT_EQ(perftest_lat_samples(p, 1000, 2, true, false, true), "#, cycles\n1, 250\n2, 500\n");
  EXPECT_EQ(perftest_lat_samples(p, 1000, 2, false, false, false), "");
}

TEST(PerftestLatFigures, EvenCountMedianIsTheIntegerMeanOfTheMiddleTwo) {
  // 7 posts, 6 round trips: 1001 1000 1004 30000 7000 1006 -> sorted 1000 1001 1004 1006 | 7000
  // 30000; measure_cnt = 4 (even): median = (delta[2] + delta[1]) / 2 = (1004 + 1001) / 2 = 1002
  // in integer cycles (1002.5 exactly).
  const auto f = perftest_lat_figures(lat_point(64, {1001, 1000, 1004, 30000, 7000, 1006}), 1000);
  EXPECT_DOUBLE_EQ(f.t_typical_us, 1002.0 / 2000);
  EXPECT_DOUBLE_EQ(f.t_min_us, 0.5);
  EXPECT_DOUBLE_EQ(f.t_max_us, 3.5);       // delta[4] = 7000
  EXPECT_DOUBLE_EQ(f.t_avg_us, (1000.0 / 2000 + 1001.0 / 2000 + 1004.0 / 2000 + 1006.0 / 2000) / 4);
  EXPECT_DOUBLE_EQ(f.t_p99_us, 3.5);       // ceil(3.96) = 4
  EXPECT_DOUBLE_EQ(f.t_p99_9_us, 3.5);     // ceil(3.996) = 4
}

TEST(PerftestLatFigures, StdevTruncatesEachDeviationToWholeMicroseconds) {
  // Round trips 2000 2000 2000 8000 20000 and two larger ones (100000, 200000) that are dropped:
  // half-RTTs 1 1 1 4 10 us, average 17 / 5 = 3.4. perftest's `int temp_var = average - x`
  // gives 2 2 2 0 -6 (not 2.4 2.4 2.4 -0.6 -6.6), squares 4 4 4 0 36, so
  // stdev = sqrt(48 / 5) = 3.098 (the true one would be sqrt(12.24) = 3.499).
  const auto f =
      perftest_lat_figures(lat_point(2, {200000, 2000, 2000, 8000, 100000, 20000, 2000}), 1000);
  EXPECT_DOUBLE_EQ(f.t_avg_us, 3.4);
  EXPECT_DOUBLE_EQ(f.t_stdev_us, std::sqrt(48.0 / 5));
  EXPECT_DOUBLE_EQ(f.t_typical_us, 1.0);
  EXPECT_DOUBLE_EQ(f.t_max_us, 50.0);      // delta[5] = 100000
  EXPECT_DOUBLE_EQ(f.t_p99_us, 50.0);
}

TEST(PerftestLatFigures, TimestampsBecomeWholeCycles) {
  EXPECT_DOUBLE_EQ(perftest_cpu_mhz(2.33), 2330.0);
  EXPECT_DOUBLE_EQ(perftest_cpu_mhz(2.327505), 2327.505);
  EXPECT_DOUBLE_EQ(perftest_cpu_mhz(2.3275054), 2327.505);  // /proc/cpuinfo keeps 3 decimals
  EXPECT_EQ(perftest_cycles(1000.3, 2330), 2330u);   // 2330.699 -> 2330
  EXPECT_EQ(perftest_cycles(0.5, 2330), 1u);         // 1.165 -> 1
  EXPECT_EQ(perftest_cycles(0, 2330), 0u);
  // Posts at 0, 1000, 2000.4, 3000.9, 4001 ns at 2330 MHz: cycles 0 2330 4660 6992 9322, so the
  // deltas are 2330 2330 2332 2330 cycles: sorted 2330 2330 2330 | 2332; measure_cnt = 2: median
  // (2330 + 2330) / 2; t_max = delta[2] = 2330.
  PerftestPoint p;
  p.bytes = 2;
  p.iterations = 5;
  p.tposted_ns = {0, 1000, 2000.4, 3000.9, 4001};
  const auto f = perftest_lat_figures(p, 2330);
  EXPECT_DOUBLE_EQ(f.t_min_us, 2330.0 / 4660);
  EXPECT_DOUBLE_EQ(f.t_max_us, 2330.0 / 4660);
  EXPECT_DOUBLE_EQ(f.t_typical_us, 0.5);
}

TEST(PerftestLatFigures, TooFewTimestamps) {
  EXPECT_THROW(perftest_lat_figures(lat_point(2, {1000, 1000}), 1000), std::invalid_argument);
  EXPECT_NO_THROW(perftest_lat_figures(lat_point(2, {1000, 1000, 1000}), 1000));
}

/// 10 posts at 2000 MHz (2 cycles per ns: a half-RTT of 1 us is 4000 cycles) whose figures print
/// as the seed's first row (shared/seeds/001 [2]: "2 1000000 0.74 186.16 0.79"). Round trips in
/// time order: 500000 1480 1600 372320 1500 1580 1700 1550 1650 ns; sorted 1480 1500 1550 1580
/// 1600 1650 1700 | 372320 500000; measure_cnt = 7: t_min 2960 / 4000 = 0.74, median delta[3] =
/// 3160 / 4000 = 0.79, t_max delta[7] = 744640 / 4000 = 186.16, average 22120 / 7 / 4000 = 0.79,
/// stdev 0 (all deviations below 1 us), percentiles delta[ceil(6.93) = 7] = delta[ceil(6.993) =
/// 7] = 186.16.
PerftestPoint seed_like_point() {
  return lat_point(2, {500000, 1480, 1600, 372320, 1500, 1580, 1700, 1550, 1650}, 1000);
}

TEST(PerftestLatFigures, SeedLikePoint) {
  const auto f = perftest_lat_figures(seed_like_point(), 2000);
  EXPECT_EQ(f.iterations, 10u);
  EXPECT_DOUBLE_EQ(f.t_min_us, 0.74);
  EXPECT_DOUBLE_EQ(f.t_max_us, 186.16);
  EXPECT_DOUBLE_EQ(f.t_typical_us, 0.79);
  EXPECT_NEAR(f.t_avg_us, 0.79, 1e-12);
  EXPECT_DOUBLE_EQ(f.t_stdev_us, 0.0);
  EXPECT_DOUBLE_EQ(f.t_p99_us, 186.16);
  EXPECT_DOUBLE_EQ(f.t_p99_9_us, 186.16);
}

TEST(PerftestRows, ClassicLatencyRowIsTheSeeds) {
  // shared/seeds/001 [2] and [3] (perftest 2.x, 2014), quoted with a two-space indent.
  struct Case { PerftestLatFigures f; const char* seed_line; };
  const Case cases[] = {
      {{2, 1000000, 0.74, 186.16, 0.79}, "  2       1000000          0.74           186.16       0.79"},
      {{16, 1000000, 0.85, 1041.43, 0.90}, "  16      1000000          0.85           1041.43      0.90"},
      {{128, 1000000, 1.05, 405.58, 1.47}, "  128     1000000          1.05           405.58       1.47"},
  };
  for (const auto& c : cases) {
    const std::string row = perftest_lat_row(c.f, PerftestColumns::Classic);
    // REPORT_FMT_LAT " %-7lu %d          %-7.2f        %-7.2f      %-7.2f\n": the last %-7.2f
    // pads with spaces that the mail lost, as it lost the leading space to its own indent.
    std::string trimmed = row.substr(1, row.find_last_not_of(" \n"));
    EXPECT_EQ(trimmed, std::string(c.seed_line).substr(2));
  }
  EXPECT_EQ(perftest_lat_row({2, 1000000, 0.74, 186.16, 0.79}, PerftestColumns::Classic),
            " 2       1000000          0.74           186.16       0.79   \n");
}

TEST(PerftestRows, ExtendedLatencyRow) {
  const auto f = perftest_lat_figures(seed_like_point(), 2000);
  // perftest 4.5 REPORT_FMT_LAT " %-7lu %lu          %-7.2f        %-7.2f      %-7.2f  \t
  //        %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f" then "\n".
  EXPECT_EQ(perftest_lat_row(f, PerftestColumns::Extended),
            std::string(" 2      ") + " 10" + "          " + "0.74   " + "        " + "186.16 " +
                "      " + "0.79   " + "  \t       " + "0.79   " + "     \t" + "0.00   " + "\t\t" +
                "186.16 " + " \t\t" + "186.16 " + "\n");
  EXPECT_EQ(perftest_lat_row(f, PerftestColumns::Classic),
            " 2       10          0.74           186.16       0.79   \n");
}

TEST(PerftestRows, Headers) {
  EXPECT_EQ(perftest_results_header(options(PerftestTest::WriteLat, "")),
            " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n");
  EXPECT_EQ(perftest_results_header(options(PerftestTest::WriteLat, "--columns extended")),
            " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
            "t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] \n");
  EXPECT_EQ(perftest_results_header(options(PerftestTest::WriteBw, "")),
            " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n");
  EXPECT_EQ(perftest_results_header(options(PerftestTest::SendBw, "--report_gbits")),
            " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n");
}

TEST(PerftestRows, BandwidthRowsAreRealPerftestOutput) {
  // github.com/linux-rdma/perftest/issues/132, `ib_write_bw -a -d mlx5_0 --report_gbits node1`:
  //  " 2          5000           0.042350            0.042185            2.636533"  (REPORT_FMT_EXT:
  //    an average below 0.1 Gb/s gets six decimals)
  //  " 8          5000             0.17               0.17   \t\t   2.641399"        (REPORT_FMT)
  PerftestBwFigures small;
  small.bytes = 2;
  small.iterations = 5000;
  small.bw_peak_gbit_s = 0.042350;
  small.bw_avg_gbit_s = 0.042185;
  small.msg_rate_mpps = 2.636533;
  EXPECT_EQ(perftest_bw_row(small, PerftestColumns::Extended, true),
            " 2          5000           0.042350            0.042185            2.636533\n");
  PerftestBwFigures eight = small;
  eight.bytes = 8;
  eight.bw_peak_gbit_s = 0.17;
  eight.bw_avg_gbit_s = 0.17;
  eight.msg_rate_mpps = 2.641399;
  EXPECT_EQ(perftest_bw_row(eight, PerftestColumns::Extended, true),
            " 8          5000             0.17               0.17   \t\t   2.641399\n");
  // In MB/s there is no six-decimal form; classic is perftest 2.x's REPORT_FMT (%d iterations).
  PerftestBwFigures mb;
  mb.bytes = 65536;
  mb.iterations = 5000;
  mb.bw_peak_mib_s = 1863.42;
  mb.bw_avg_mib_s = 1862.9;
  mb.msg_rate_mpps = 0.029806;
  EXPECT_EQ(perftest_bw_row(mb, PerftestColumns::Extended, false),
            " 65536      5000             1863.42            1862.90\t\t   0.029806\n");
  EXPECT_EQ(perftest_bw_row(mb, PerftestColumns::Classic, false),
            " 65536      5000           1863.42            1862.90\t\t   0.029806\n");
}

/// A bw point: WRs posted at `posted` ns, each completed at its covering CQE's time.
PerftestPoint bw_point(uint64_t bytes, std::vector<double> posted, std::vector<double> completed) {
  PerftestPoint p;
  p.bytes = bytes;
  p.iterations = posted.size();
  p.tposted_ns = std::move(posted);
  p.tcompleted_ns = std::move(completed);
  return p;
}

TEST(PerftestBwFigures, PeakAverageAndMessageRate) {
  // 1000 MHz (1 cycle = 1 ns), cq_mod 2, 4 WRs of 1000 B posted at 0 100 200 300 ns; the CQE of
  // WRs 0-1 at 1000 ns, of WRs 2-3 at 2300 ns. perftest reads completions at j = 1 and j = 3:
  //   i=0: (1000-0)/2 = 500, (2300-0)/4 = 575;  i=1: 900/1 = 900, 2200/3 = 733;
  //   i=2: 2100/2 = 1050;  i=3: 2000/1 = 2000  -> 500 cycles per message.
  // peak = 1000 B x 1e9 Hz / (500 x 2^20) = 1907.35 MB/s = 1000 x 1e9 / (500 x 125e6) = 16 Gb/s;
  // average = 4 x 1000 x 1e9 / (2300 x 2^20) = 1658.56 MB/s = 13.913 Gb/s;
  // MsgRate = 4 x 1e9 / (2300 x 1e6) = 1.739130 Mpps.
  const auto f = perftest_bw_figures(bw_point(1000, {0, 100, 200, 300}, {1000, 1000, 2300, 2300}), 1000, 2, false);
  EXPECT_EQ(f.bytes, 1000u);
  EXPECT_EQ(f.iterations, 4u);
  EXPECT_DOUBLE_EQ(f.bw_peak_mib_s, 1000.0 * 1e9 / (500.0 * 1048576));
  EXPECT_DOUBLE_EQ(f.bw_avg_mib_s, 4000.0 * 1e9 / (2300.0 * 1048576));
  EXPECT_DOUBLE_EQ(f.bw_peak_gbit_s, 16.0);
  EXPECT_DOUBLE_EQ(f.bw_avg_gbit_s, 4000.0 * 1e9 / (2300.0 * 125e6));
  EXPECT_DOUBLE_EQ(f.msg_rate_mpps, 4e9 / 2300e6);
  EXPECT_EQ(perftest_bw_row(f, PerftestColumns::Extended, false),
            " 1000       4                1907.35            1658.56\t\t   1.739130\n");
  EXPECT_EQ(perftest_bw_row(f, PerftestColumns::Extended, true),
            " 1000       4                16.00              13.91  \t\t   1.739130\n");
}

TEST(PerftestBwFigures, LastWrIsSignaledWhenTheCountIsNotAMultipleOfCqMod) {
  // cq_mod 2, 5 WRs of 2 B posted at 0 100 110 120 130; CQEs at 200 (WRs 0-1), 300 (2-3) and 310
  // (the last WR, signaled on its own). Completion slots j = 1, 3 and N-1 = 4:
  //   i=0: 200/2=100 300/4=75 310/5=62;  i=1: 100/1=100 200/3=66 210/4=52;
  //   i=2: 190/2=95 200/3=66;  i=3: 180/1=180 190/2=95;  i=4: 180/1=180  -> 52 (i=1, j=4).
  // Without the last slot the peak would come from 66.
  const auto f = perftest_bw_figures(
      bw_point(2, {0, 100, 110, 120, 130}, {200, 200, 300, 300, 310}), 1000, 2, false);
  EXPECT_DOUBLE_EQ(f.bw_peak_mib_s, 2.0 * 1e9 / (52.0 * 1048576));
  EXPECT_DOUBLE_EQ(f.bw_avg_mib_s, 10.0 * 1e9 / (310.0 * 1048576));
  EXPECT_DOUBLE_EQ(f.msg_rate_mpps, 5e9 / 310e6);
  // The per-message time is an integer division: 210/4 = 52, not 52.5.
  EXPECT_NE(f.bw_peak_mib_s, 2.0 * 1e9 / (52.5 * 1048576));
}

TEST(PerftestBwFigures, NoPeakAndCompletionOrder) {
  const auto point = bw_point(2, {0, 100, 110, 120, 130}, {200, 200, 300, 300, 310});
  const auto f = perftest_bw_figures(point, 1000, 2, true);
  EXPECT_EQ(f.bw_peak_mib_s, 0.0);
  EXPECT_EQ(f.bw_peak_gbit_s, 0.0);
  EXPECT_DOUBLE_EQ(f.bw_avg_mib_s, 10.0 * 1e9 / (310.0 * 1048576));
  // Completions listed per WR in posting order (two QPs interleaved) are the same CQE times.
  const auto shuffled = bw_point(2, {0, 100, 110, 120, 130}, {300, 200, 310, 200, 300});
  const auto g = perftest_bw_figures(shuffled, 1000, 2, false);
  const auto h = perftest_bw_figures(point, 1000, 2, false);
  EXPECT_EQ(g.bw_peak_mib_s, h.bw_peak_mib_s);
  EXPECT_EQ(g.bw_avg_mib_s, h.bw_avg_mib_s);
}

TEST(PerftestBwFigures, CqModOneReadsEverySlot) {
  // cq_mod 1: every WR has its own CQE. Posted 0 10 20 30 40, completed 100 150 160 170 180:
  // i=0: 100 75 53 42 36;  i=1: 140 75 53 42;  i=2: 140 75 53;  i=3: 140 75;  i=4: 140 -> 36
  // (180/5). The average is the same here: N / (last completion - first post) = 5 / 180 ns.
  const auto f = perftest_bw_figures(bw_point(4096, {0, 10, 20, 30, 40}, {100, 150, 160, 170, 180}), 1000, 1, false);
  EXPECT_DOUBLE_EQ(f.bw_peak_mib_s, 4096.0 * 1e9 / (36.0 * 1048576));
  EXPECT_DOUBLE_EQ(f.bw_avg_mib_s, 5.0 * 4096 * 1e9 / (180.0 * 1048576));
  EXPECT_THROW(perftest_bw_figures(bw_point(2, {0, 1}, {5}), 1000, 1, false), std::invalid_argument);
  EXPECT_THROW(perftest_bw_figures(bw_point(2, {}, {}), 1000, 1, false), std::invalid_argument);
}

/// print_report_bw's opt_delta loop as perftest 4.5 writes it (O(N^2 / cq_mod)): the reference perftest_peak_cycles must equal.
uint64_t reference_peak_cycles(const std::vector<uint64_t>& posted, const std::vector<uint64_t>& completed,
                               uint32_t cq_mod) {
  const uint64_t n = posted.size();
  uint64_t opt_delta = cq_mod == 1 ? completed[0] - posted[0] : std::numeric_limits<uint64_t>::max();
  const uint64_t mod = cq_mod;
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t first_j = (i + 1 + mod - 1) / mod * mod - 1;
    for (uint64_t j = first_j; j < n; j += mod) {
      const uint64_t t = (completed[j] - posted[i]) / (j - i + 1);
      if (t < opt_delta) opt_delta = t;
    }
    if (n % mod) {
      const uint64_t j = n - 1;
      const uint64_t t = (completed[j] - posted[i]) / (j - i + 1);
      if (t < opt_delta) opt_delta = t;
    }
  }
  return opt_delta;
}

struct Stamps {
  std::vector<uint64_t> posted, completed;  ///< cycles; posted in posting order, completed sorted
};

/// Timestamps shaped like the simulation's bandwidth loop: `qps` QPs posted round robin (a burst
/// of one WR per QP, then a gap; now and then a stall), each group of cq_mod WRs completed by one
/// CQE some latency after its last post, polled in batches; `base` is added to every time. A WR
/// never completes before it is posted, so the k-th completion never precedes the k-th post.
Stamps random_stamps(std::mt19937_64& rng, uint64_t n, uint32_t qps, uint32_t cq_mod, uint64_t base) {
  Stamps s;
  uint64_t t = base;
  const uint64_t round_gap = 1 + rng() % 3000;
  for (uint64_t k = 0; k < n; ++k) {
    if (k % qps != 0) t += rng() % 4;                                    // within a burst
    else if (rng() % 50 == 0) t += 10000 + rng() % 200000;              // a stall
    else t += rng() % (2 * round_gap);                                   // between bursts
    s.posted.push_back(t);
  }
  std::vector<uint64_t> done(n);
  const uint64_t poll = 1 + rng() % 500;
  for (uint64_t k = 0; k < n; k += cq_mod) {
    const uint64_t last = std::min(n, k + cq_mod) - 1;
    const uint64_t cqe = s.posted[last] + 200 + rng() % 5000;
    const uint64_t polled = (cqe - base + poll - 1) / poll * poll + base;  // the next poll after it
    for (uint64_t w = k; w <= last; ++w) done[w] = polled;
  }
  std::sort(done.begin(), done.end());
  s.completed = std::move(done);
  return s;
}

TEST(PerftestBwPeak, EqualsPerftestsLoopOnRandomRuns) {
  std::mt19937_64 rng(21);
  int cases = 0, ragged = 0, nontrivial = 0;
  for (uint32_t qps : {1u, 2u, 4u, 16u, 1000u})
    for (uint32_t cq_mod : {1u, 2u, 3u, 7u, 100u})
      for (uint64_t iterations : {1u, 2u, 5u, 37u, 101u, 250u}) {
        const uint64_t n = iterations * qps;
        if (n > 20000) continue;  // the reference is quadratic
        for (uint64_t base : {uint64_t{0}, uint64_t{123456789}, uint64_t{1} << 62}) {
          const Stamps s = random_stamps(rng, n, qps, cq_mod, base);
          const uint64_t want = reference_peak_cycles(s.posted, s.completed, cq_mod);
          ASSERT_EQ(perftest_peak_cycles(s.posted, s.completed, cq_mod), want)
              << "-q " << qps << " -Q " << cq_mod << " N " << n << " base " << base;
          ++cases;
          if (cq_mod > 1 && n % cq_mod != 0) ++ragged;
          // Not the trivial pair (first post, last completion), which a wrong scan could still find.
          if (want != (s.completed[n - 1] - s.posted[0]) / n) ++nontrivial;
        }
      }
  EXPECT_GE(cases, 300);
  EXPECT_GE(ragged, 100) << "cq_mod > 1 with N not a multiple of it";
  EXPECT_GE(nontrivial, cases / 2);
}

TEST(PerftestBwPeak, EqualsPerftestsLoopOnHullShapes) {
  // Posts on a convex, a concave and a zigzag curve (hulls of every point, of two, of many
  // alternating), completions a fixed or a varying latency after them.
  for (uint32_t cq_mod : {1u, 3u, 10u})
    for (int shape = 0; shape < 3; ++shape) {
      Stamps s;
      const uint64_t n = 2003;
      for (uint64_t k = 0; k < n; ++k) {
        const double x = static_cast<double>(k);
        const double y = shape == 0 ? x * x / 10 : shape == 1 ? 4000 * std::sqrt(x) : 50 * x + (k % 2 ? 400 : 0);
        s.posted.push_back(static_cast<uint64_t>(y));
      }
      for (uint64_t k = 0; k < n; ++k) s.completed.push_back(s.posted[k] + 1000 + (shape == 2 ? 0 : (k * 7919) % 3000));
      std::sort(s.completed.begin(), s.completed.end());
      EXPECT_EQ(perftest_peak_cycles(s.posted, s.completed, cq_mod), reference_peak_cycles(s.posted, s.completed, cq_mod))
          << "shape " << shape << " -Q " << cq_mod;
    }
}

TEST(PerftestBwPeak, FiguresUseIt) {
  // The whole bw row on ns timestamps: the peak is size x Hz / (reference opt_delta x 2^20).
  std::mt19937_64 rng(4);
  for (uint32_t cq_mod : {1u, 4u, 100u}) {
    const Stamps s = random_stamps(rng, 1003, 8, cq_mod, 0);
    PerftestPoint p;
    p.bytes = 65536;
    p.iterations = 1003;
    for (uint64_t c : s.posted) p.tposted_ns.push_back(static_cast<double>(c) + 0.25);
    for (uint64_t c : s.completed) p.tcompleted_ns.push_back(static_cast<double>(c) + 0.75);
    const auto f = perftest_bw_figures(p, 1000, cq_mod, false);  // 1 cycle per ns
    const uint64_t opt = reference_peak_cycles(s.posted, s.completed, cq_mod);
    EXPECT_EQ(f.bw_peak_mib_s, static_cast<double>(65536ull * 1000000000ull) / static_cast<double>(opt * 1048576))
        << "-Q " << cq_mod;
    EXPECT_EQ(f.bw_peak_gbit_s, static_cast<double>(65536ull * 1000000000ull) / static_cast<double>(opt * 125000000))
        << "-Q " << cq_mod;
  }
}

TEST(PerftestBwPeak, RefusesACompletionBeforeItsPost) {
  // The second completion time (j = 1) precedes the second post: perftest's difference wraps.
  EXPECT_THROW(perftest_peak_cycles({0, 100}, {50, 60}, 1), std::invalid_argument);
  EXPECT_THROW(perftest_peak_cycles({0, 100}, {50, 60}, 2), std::invalid_argument);
  EXPECT_THROW(perftest_peak_cycles({0}, {}, 1), std::invalid_argument);
  EXPECT_THROW(perftest_peak_cycles({0}, {1}, 0), std::invalid_argument);
  // (0,0): 150/1, (0,1): 160/2 = 80, (1,1): 60/1 -> 60; with cq_mod 2 only j = 1: min(80, 60).
  EXPECT_EQ(perftest_peak_cycles({0, 100}, {150, 160}, 1), 60u);
  EXPECT_EQ(perftest_peak_cycles({0, 100}, {150, 170}, 2), 70u);
}

TEST(PerftestAddresses, LineFormatIsPerftests) {
  // github.com/linux-rdma/perftest/issues/132: " local address: LID 0x02 QPN 0x0032 PSN 0x5f2841 RKey
  // 0x002440 VAddr 0x007f2e5f64b000"; github.com/linux-rdma/perftest/issues/234 (RoCE, LID 0):
  // "LID 0000 QPN 0x0108 ...".
  PerftestAddress a;
  a.lid = 0x02;
  a.qpn = 0x32;
  a.psn = 0x5f2841;
  a.rkey = 0x2440;
  a.vaddr = 0x7f2e5f64b000;
  EXPECT_EQ(perftest_address_line(a, false, true, false),
            " local address: LID 0x02 QPN 0x0032 PSN 0x5f2841 RKey 0x002440 VAddr 0x007f2e5f64b000\n");
  a.lid = 0;
  a.qpn = 0x108;
  a.psn = 0x63ad7d;
  a.rkey = 0x17eedf;
  a.vaddr = 0x7f760c947000;
  a.gid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 10, 255, 255, 5};
  EXPECT_EQ(perftest_address_line(a, false, true, true),
            " local address: LID 0000 QPN 0x0108 PSN 0x63ad7d RKey 0x17eedf VAddr 0x007f760c947000\n"
            " GID: 00:00:00:00:00:00:00:00:00:00:255:255:10:255:255:05\n");
  // SEND: no RKey/VAddr.
  EXPECT_EQ(perftest_address_line(a, true, false, false),
            " remote address: LID 0000 QPN 0x0108 PSN 0x63ad7d\n");
}

TEST(PerftestAddresses, Lrand48IsGlibcs) {
  for (uint64_t seed : {0ull, 1ull, 2ull, 42ull, 0x123456789ull}) {
    ::srand48(static_cast<long>(seed & 0xffffffff));
    uint64_t state = perftest_srand48(seed);
    for (int k = 0; k < 5; ++k) EXPECT_EQ(perftest_lrand48(state), static_cast<uint32_t>(::lrand48()));
  }
}

TEST(PerftestAddresses, FixedPlausibleValues) {
  const auto local = perftest_addresses(false, 2, 65536, 7);
  const auto remote = perftest_addresses(true, 2, 65536, 7);
  ASSERT_EQ(local.size(), 2u);
  ::srand48(14);  // seed x 2 + side
  const uint64_t buffer = 0x7f0000000000ULL + (uint64_t{static_cast<uint32_t>(::lrand48()) & 0xfffffffu} << 12);
  for (uint32_t i = 0; i < 2; ++i) {
    EXPECT_EQ(local[i].lid, 1u);
    EXPECT_EQ(remote[i].lid, 2u);
    EXPECT_EQ(local[i].qpn, 0x48 + i);
    EXPECT_EQ(local[i].psn, static_cast<uint32_t>(::lrand48()) & 0xffffffu);
    EXPECT_EQ(local[i].rkey, 0x100u);
    EXPECT_EQ(local[i].vaddr, buffer + (2 + i) * 65536);  // buf + (num_qps + i) * BUFF_SIZE
    EXPECT_EQ(local[i].vaddr % 4096, 0u);
  }
  EXPECT_NE(local[0].psn, remote[0].psn);
  EXPECT_EQ(local[0].gid[15], 1);
  EXPECT_EQ(remote[0].gid[15], 2);
}

PerftestResult lat_result() {
  PerftestResult r;
  r.points = {seed_like_point()};
  r.max_inline_data = 220;
  r.mtu = 2048;
  r.blueflame = true;
  r.write_combining = false;
  return r;
}

std::string expected_addresses(const PerftestOptions& o, uint64_t buffer_size, bool rdma) {
  std::string out;
  for (bool remote : {false, true})
    for (const auto& a : perftest_addresses(remote, to_perftest_config(o).num_qps, buffer_size, o.seed))
      out += perftest_address_line(a, remote, rdma, o.gid_index.has_value());
  return out;
}

constexpr const char* kDashes =
    "---------------------------------------------------------------------------------------\n";

TEST(PerftestOutput, WriteLatWholeOutput) {
  const PerftestOptions o = options(PerftestTest::WriteLat, "-d mlx4_0 -i 1 -F -n 10");
  const std::string out = format_perftest_output(o, lat_result(), 2000);
  EXPECT_EQ(out, std::string(kDashes) +
                     "                    RDMA_Write Latency Test\n"
                     " Dual-port       : OFF\t\tDevice         : mlx4_0\n"
                     " Number of qps   : 1\t\tTransport type : IB\n"
                     " Connection type : RC\t\tUsing SRQ      : OFF\n"
                     " PCIe relax order: ON\n"
                     " ibv_wr* API     : OFF\n"
                     " TX depth        : 1\n"
                     " Mtu             : 2048[B]\n"
                     " Link type       : IB\n"
                     " Max inline data : 220[B]\n"
                     " rdma_cm QPs\t : OFF\n"
                     " Data ex. method : Ethernet\n" +
                     kDashes + expected_addresses(o, 4096, true) + kDashes +
                     " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n"
                     " 2       10          0.74           186.16       0.79   \n" +
                     kDashes);
  // The address lines: local then remote, as perftest prints them.
  EXPECT_NE(out.find("\n local address: LID 0x01 QPN 0x0048 PSN 0x"), std::string::npos);
  EXPECT_NE(out.find("\n remote address: LID 0x02 QPN 0x0048 PSN 0x"), std::string::npos);
}

TEST(PerftestOutput, BannerIsPerftest45sForABwTest) {
  // github.com/linux-rdma/perftest/issues/132 (ib_write_bw -a -d mlx5_0 --report_gbits, a 4.5-era build):
  // the same lines but "ibv_wr* API : ON" (mlx5 keeps the new post-send API, ConnectX-3 and
  // older fall back to ibv_post_send) and a 4096 B MTU.
  const std::string issue132 = std::string(kDashes) +
                               "                    RDMA_Write BW Test\n"
                               " Dual-port       : OFF\t\tDevice         : mlx5_0\n"
                               " Number of qps   : 1\t\tTransport type : IB\n"
                               " Connection type : RC\t\tUsing SRQ      : OFF\n"
                               " PCIe relax order: ON\n"
                               " ibv_wr* API     : ON\n"
                               " TX depth        : 128\n"
                               " CQ Moderation   : 100\n"
                               " Mtu             : 4096[B]\n"
                               " Link type       : IB\n"
                               " Max inline data : 0[B]\n"
                               " rdma_cm QPs\t : OFF\n"
                               " Data ex. method : Ethernet\n" +
                               kDashes;
  const PerftestOptions o = options(PerftestTest::WriteBw, "ib_write_bw -a -d mlx5_0 --report_gbits node1");
  PerftestResult r;
  r.mtu = 4096;
  std::string banner = perftest_banner(o, to_perftest_config(o), r);
  const std::string ours = " ibv_wr* API     : OFF\n";
  ASSERT_NE(banner.find(ours), std::string::npos);
  banner.replace(banner.find(ours), ours.size(), " ibv_wr* API     : ON\n");
  EXPECT_EQ(banner, issue132);
}

TEST(PerftestOutput, BannerVariants) {
  PerftestResult r;
  r.mtu = 2048;
  // ib_send_bw: "Send BW Test", CQ moderation 1 above 8192 B; -R: rdma_cm QPs and exchange.
  PerftestOptions o = options(PerftestTest::SendBw, "-R -q 2");
  std::string b = perftest_banner(o, to_perftest_config(o), r);
  EXPECT_NE(b.find("                    Send BW Test\n"), std::string::npos);
  EXPECT_NE(b.find(" Number of qps   : 2\t\tTransport type : IB\n"), std::string::npos);
  EXPECT_NE(b.find(" CQ Moderation   : 1\n"), std::string::npos);
  EXPECT_NE(b.find(" rdma_cm QPs\t : ON\n Data ex. method : rdma_cm\n"), std::string::npos);
  // -z: only the exchange goes through rdma_cm; -x: the GID index line after the link type.
  o = options(PerftestTest::WriteLat, "-z -x 0 -I 64 -t 3");
  b = perftest_banner(o, to_perftest_config(o), r);
  EXPECT_NE(b.find(" rdma_cm QPs\t : OFF\n Data ex. method : rdma_cm\n"), std::string::npos);
  EXPECT_NE(b.find(" Link type       : IB\n GID index       : 0\n Max inline data : 64[B]\n"),
            std::string::npos);
  EXPECT_NE(b.find(" TX depth        : 3\n Mtu"), std::string::npos);
  EXPECT_EQ(b.find("CQ Moderation"), std::string::npos);
  // The QP grants less inline data than asked: perftest shows what it got.
  r.max_inline_data = 128;
  o = options(PerftestTest::WriteLat, "");
  EXPECT_NE(perftest_banner(o, to_perftest_config(o), r).find(" Max inline data : 128[B]\n"), std::string::npos);
}

TEST(PerftestOutput, ExtendedColumnsAndGidLines) {
  const PerftestOptions o = options(PerftestTest::WriteLat, "-n 10 -x 0 --columns extended");
  const std::string out = format_perftest_output(o, lat_result(), 2000);
  EXPECT_NE(out.find(expected_addresses(o, 4096, true)), std::string::npos);
  EXPECT_NE(out.find(" GID: 254:128:00:00:00:00:00:00:00:02:201:03:00:00:00:01\n"), std::string::npos);
  EXPECT_NE(out.find(" GID: 254:128:00:00:00:00:00:00:00:02:201:03:00:00:00:02\n"), std::string::npos);
  EXPECT_NE(out.find("99.9% percentile[usec] \n 2       10          0.74"), std::string::npos);
}

TEST(PerftestOutput, WriteBwWholeTable) {
  const PerftestOptions o = options(PerftestTest::WriteBw, "-s 1000 -n 5 -Q 2 --columns extended");
  PerftestResult r;
  r.mtu = 2048;
  r.points = {bw_point(1000, {0, 100, 110, 120, 130}, {200, 200, 300, 300, 310})};
  const std::string out = format_perftest_output(o, r, 1000);
  // ib_write_bw client: TX depth min(128, 5) = 5, CQ moderation 2; no inline by default.
  EXPECT_NE(out.find(" TX depth        : 5\n CQ Moderation   : 2\n"), std::string::npos);
  EXPECT_NE(out.find(" Max inline data : 0[B]\n"), std::string::npos);
  // peak 1000 x 1e9 / (52 x 2^20) = 18339.89 MB/s, average 5000 x 1e9 / (310 x 2^20) = 15381.84,
  // MsgRate 5e9 / 310e6 = 16.129032.
  EXPECT_NE(out.find(std::string(kDashes) +
                     " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
                     " 1000       5                18339.89            15381.84\t\t   16.129032\n" +
                     kDashes),
            std::string::npos);
}

TEST(PerftestOutput, LargeMessageCqModerationWarning) {
  PerftestResult r;
  r.mtu = 2048;
  r.points = {bw_point(65536, {0, 100, 110, 120, 130}, {200, 200, 300, 300, 310})};
  const std::string out =
      format_perftest_output(options(PerftestTest::WriteBw, "-s 65536 -n 5 -Q 2"), r, 1000);
  EXPECT_EQ(out.rfind(std::string(kDashes) +
                          "Warning: Large message requested and CQ moderation enabled\n"
                          "Warning: It can lead to inaccurate results\n" +
                          kDashes + "                    RDMA_Write BW Test\n",
                      0),
            0u);
  const std::string quiet = format_perftest_output(options(PerftestTest::WriteBw, "-s 65536 -n 5"), r, 1000);
  EXPECT_EQ(quiet.find("Warning"), std::string::npos);
}

TEST(PerftestOutput, SendBwAddressLinesHaveNoKeys) {
  const PerftestOptions o = options(PerftestTest::SendBw, "-n 5 -s 2");
  PerftestResult r;
  r.mtu = 2048;
  r.points = {bw_point(2, {0, 100, 110, 120, 130}, {200, 200, 300, 300, 310})};
  const std::string out = format_perftest_output(o, r, 1000);
  EXPECT_NE(out.find(expected_addresses(o, 4096, false)), std::string::npos);
  EXPECT_EQ(out.find("RKey"), std::string::npos);
  EXPECT_NE(out.find("\n 2          5           "), std::string::npos);  // classic: 2.x REPORT_FMT
}

TEST(PerftestCsv, LatencyRows) {
  const PerftestOptions o = options(PerftestTest::WriteLat, "-n 10");
  PerftestResult r = lat_result();
  r.points.push_back(lat_point(4, {2000, 1600, 1800, 9000, 1700, 2200, 5000}));
  const std::string csv = format_perftest_csv(o, r, 2000);
  // The second point is OddCountMedianAndDroppedTail's: the same times at any clock rate (its
  // timestamps are whole ns, so whole cycles at 2000 MHz too).
  EXPECT_EQ(csv,
            "test,blueflame,write_combining,bytes,iterations,t_min_us,t_max_us,t_typical_us,"
            "t_avg_us,t_stdev_us,t_p99_us,t_p99_9_us\n"
            "ib_write_lat,on,off,2,10,0.74,186.16,0.79," +
                fmt::format("{}", perftest_lat_figures(seed_like_point(), 2000).t_avg_us) +
                ",0,186.16,186.16\n"
                "ib_write_lat,on,off,4,8,0.8,2.5,0.9," +
                fmt::format("{}", (0.80 + 0.85 + 0.90 + 1.00 + 1.10) / 5) + ",0,2.5,2.5\n");
  EXPECT_EQ(perftest_csv_header(PerftestTest::WriteLat), csv.substr(0, csv.find('\n')));
}

TEST(PerftestCsv, BandwidthRows) {
  const PerftestOptions o = options(PerftestTest::WriteBw, "-s 1000 -n 5 -Q 2");
  PerftestResult r;
  r.points = {bw_point(1000, {0, 100, 200, 300}, {1000, 1000, 2300, 2300})};
  EXPECT_EQ(format_perftest_csv(o, r, 1000),
            "test,blueflame,write_combining,bytes,iterations,num_qps,bw_peak_mib_s,bw_avg_mib_s,"
            "bw_peak_gbit_s,bw_avg_gbit_s,msg_rate_mpps\n"
            "ib_write_bw,off,off,1000,4,1," +
                fmt::format("{},{},16,{},{}\n", 1000.0 * 1e9 / (500.0 * 1048576),
                            4000.0 * 1e9 / (2300.0 * 1048576), 4000.0 * 1e9 / (2300.0 * 125e6),
                            4e9 / 2300e6));
}

TEST(PerftestStats, Line) {
  PerftestResult r;
  r.simgrid_activities = 123456;
  r.simgrid_time_steps = 654;
  r.kernel_events = 5000;
  r.context_switches = 4000;
  r.transfers_simgrid = 0;
  r.transfers_alone = 1000;
  r.blueflame_posts = 1000;
  r.doorbell_posts = 2;
  r.simulated_s = 0.0125;
  r.wall_s = 0.5;
  r.max_rss_kb = 1536;  // 1.5 MiB
  EXPECT_EQ(format_perftest_stats_line(r),
            "hcasim: stats: activities=123456 time_steps=654 events=5000 switches=4000 transfers_simgrid=0 "
            "transfers_alone=1000 blueflame_posts=1000 doorbell_posts=2 "
            "simulated_s=0.012500 wall_s=0.500 speed=0.03 simulated s per wall s max_rss_mb=1.5");
  r.wall_s = 0;
  EXPECT_EQ(format_perftest_stats_line(r),
            "hcasim: stats: activities=123456 time_steps=654 events=5000 switches=4000 transfers_simgrid=0 "
            "transfers_alone=1000 blueflame_posts=1000 doorbell_posts=2 "
            "simulated_s=0.012500 wall_s=0.000 speed=inf simulated s per wall s max_rss_mb=1.5");
}

}  // namespace
}  // namespace hcasim::frontends
