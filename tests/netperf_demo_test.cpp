// netperf's demo mode (frontends/netperf_demo.h), output selectors (frontends/netperf_omni.h)
// and -P: hand-made ticks and results, their lines worked out by hand in the comments.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "frontends/netperf_cli.h"
#include "frontends/netperf_demo.h"
#include "frontends/netperf_omni.h"
#include "frontends/netperf_output.h"
#include "model/error.h"

namespace hcasim::frontends {
namespace {

/// A stream of 65536-byte send() calls, one every 100 us from t = 0 until `end_s`: 655 360 000
/// B/s, i.e. 655.36e6 * 8 / 1e6 = 5242.88 10^6bits/s. Returns the clock after the loop's end.
DemoClock run_constant_stream(const DemoConfig& cfg, double default_units, double end_s) {
  DemoClock clock(cfg, default_units);
  clock.start(0);
  const auto ticks = static_cast<int64_t>(end_s * 1e4 + 0.5);
  for (int64_t k = 1; k <= ticks; ++k) clock.tick(static_cast<double>(k) * 100e3, 65536);
  clock.finish(end_s * 1e9);
  return clock;
}

TEST(NetperfDemo, DefaultGuessIsTwiceTheLargerBuffer) {
  DemoConfig cfg;
  cfg.on = true;
  EXPECT_EQ(demo_default_units(cfg, false, 16384, 87380), 174760);  // DEMO_STREAM_SETUP(lss, rsr)
  EXPECT_EQ(demo_default_units(cfg, true, 16384, 87380), 1000);     // 2.4.3 DEMO_RR_SETUP(1000)
  cfg.omni_default = true;
  cfg.rr_default_units = 100;
  EXPECT_EQ(demo_default_units(cfg, false, 16384, 87380), 100);  // 2.7 demo_rr_setup(100) for every omni test
  cfg.units = 5000;
  EXPECT_EQ(demo_default_units(cfg, false, 16384, 87380), 5000);  // -D ,5000
}

// netperf 2.4.3, -D 1 (the default interval), TCP_STREAM with lss 16384, rsr 87380:
// - the first guess is 2 * 87380 = 174760 B; the 3rd send (196608 B at t = 300 us) reaches it:
//   300 us < 1 s, no line; the guess becomes 174760 * 1e6 / 300 = 582 533 333.3 B;
// - the 8889th send (582 549 504 B, t = 888 900 us) reaches that: no line (< 1 s); the guess
//   becomes 582 533 333.3 * 1e6 / 888 900 = 655 341 583.5 B;
// - the 10000th send (655 360 000 B at t = 1 000 000 us) reaches it: 1 s >= 1 s, a line of
//   655 360 000 B over 1.00 s = 5242.88 10^6bits/s; the guess becomes 655 341 583.5 (x 1);
// - from then on every 10000 sends (t = 2 s, 3 s) make a line; the run ends at 3.5 s with
//   327 680 000 B since the last line, which 2.4.3 does not print.
TEST(NetperfDemo, ConstantStreamGivesALinePerSecond) {
  DemoConfig cfg;
  cfg.on = true;
  const DemoClock clock = run_constant_stream(cfg, demo_default_units(cfg, false, 16384, 87380), 3.5);
  ASSERT_EQ(clock.results().size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(clock.results()[i].units, 655360000.0) << i;
    EXPECT_EQ(clock.results()[i].interval_us, 1e6) << i;
    EXPECT_EQ(clock.results()[i].end_us, static_cast<int64_t>(i + 1) * 1000000) << i;
  }
  NetperfOptions o;  // -f m
  TcpStreamResult r;
  r.interim = clock.results();
  r.elapsed_s = 3.5;
  r.bytes_received = r.bytes_sent = 35000ull * 65536;
  r.send_calls = 35000;
  r.recv_calls = 35000;
  r.send_size = 65536;
  r.local_send_socket = 16384;
  r.remote_recv_socket = 87380;
  o.demo = true;
  o.print_headers = false;
  const std::string out = format_netperf_output(o, r, netperf_figures(o, r));
  EXPECT_EQ(out.substr(0, 3 * 53),
            "Interim result: 5242.88 10^6bits/s over 1.00 seconds\n"
            "Interim result: 5242.88 10^6bits/s over 1.00 seconds\n"
            "Interim result: 5242.88 10^6bits/s over 1.00 seconds\n");
}

// netperf 2.7 (omni): the first guess is 100 units; the first send (65536 B at t = 100 us)
// reaches it, and the guess becomes 100 * 1e6 / 100 = 1e6 B; the 16th send (1 048 576 B at
// 1600 us) reaches that, guess 1e6 * 1e6 / 1600 = 625e6 B; the 9537th (625 016 832 B at
// 953 700 us) that, guess 625e6 / 0.9537 = 655 342 351.9 B; the 10000th (655 360 000 B, t = 1 s)
// gives the first line. Lines at 1, 2, 3 s as above, then demo_interval_final prints the last
// 5000 sends: 327 680 000 B over 0.5 s, 5242.88 10^6bits/s too.
TEST(NetperfDemo, OmniAddsTheFinalInterval) {
  DemoConfig cfg;
  cfg.on = true;
  cfg.final_interim = true;
  cfg.omni_default = true;
  cfg.rr_default_units = 100;
  const DemoClock clock = run_constant_stream(cfg, demo_default_units(cfg, false, 16384, 87380), 3.5);
  ASSERT_EQ(clock.results().size(), 4u);
  EXPECT_EQ(clock.results()[0].end_us, 1000000);
  EXPECT_EQ(clock.results()[3].units, 327680000.0);
  EXPECT_EQ(clock.results()[3].interval_us, 500000.0);
  EXPECT_EQ(clock.results()[3].end_us, 3500000);
}

TEST(NetperfDemo, OffTicksNothing) {
  const DemoClock clock = run_constant_stream(DemoConfig{}, 174760, 2.5);
  EXPECT_TRUE(clock.results().empty());
}

// TCP_RR, 2.4.3: one unit per transaction, a transaction every 50 us (20000 Trans/s); the first
// guess 1000 is reached at 50 ms (no line), the guess becomes 1000 / 0.05 = 20000; the next
// 19000 transactions reach it at t = 1 s exactly: 20000 transactions over 1.00 s.
TEST(NetperfDemo, RequestResponsePrintsTransactionsPerSecond) {
  DemoConfig cfg;
  cfg.on = true;
  DemoClock clock(cfg, demo_default_units(cfg, true, 0, 0));
  clock.start(0);
  for (int k = 1; k <= 50000; ++k) clock.tick(k * 50e3, 1);
  ASSERT_EQ(clock.results().size(), 2u);
  EXPECT_EQ(clock.results()[0].units, 20000);
  NetperfOptions o;
  o.test = "TCP_RR";
  o.demo = true;
  o.print_headers = false;
  TcpStreamResult r;
  r.interim = clock.results();
  r.elapsed_s = 2.5;
  r.transactions = 50000;
  EXPECT_EQ(format_netperf_output(o, r, netperf_figures(o, r)).substr(0, 2 * 51),
            "Interim result: 20000.00 Trans/s over 1.00 seconds\n"
            "Interim result: 20000.00 Trans/s over 1.00 seconds\n");
}

NetperfOptions parse(std::vector<std::string> args) { return parse_netperf_args(args, true); }

TEST(NetperfDemoCli, GlobalDTakesAnOptionalIntervalAndUnits) {
  EXPECT_FALSE(parse({}).demo);
  const NetperfOptions a = parse({"-D", "-l", "2"});
  EXPECT_TRUE(a.demo);
  EXPECT_EQ(a.demo_interval_s, 1.0);
  EXPECT_EQ(a.length_s, 2.0);
  const NetperfOptions b = parse({"-D", "0.5,64K"});
  EXPECT_EQ(b.demo_interval_s, 0.5);
  EXPECT_EQ(b.demo_units, 65536u);
  // The test option -D stays TCP_NODELAY.
  const NetperfOptions c = parse({"--", "-D"});
  EXPECT_FALSE(c.demo);
  EXPECT_TRUE(c.nodelay);
  EXPECT_THROW(parse({"-D", "0"}), InputError);
  EXPECT_THROW(parse({"-D", "1x"}), InputError);
}

TEST(NetperfDemoCli, TestPSetsTheDataPorts) {
  const NetperfOptions a = parse({"--", "-P", "5001,5002"});
  EXPECT_EQ(a.local_data_port, "5001");
  EXPECT_EQ(a.remote_data_port, "5002");
  const NetperfOptions b = parse({"--", "-P", ",7000"});
  EXPECT_EQ(b.local_data_port, "0");
  EXPECT_EQ(b.remote_data_port, "7000");
  EXPECT_THROW(parse({"--", "-P", "65536"}), InputError);
  EXPECT_THROW(parse({"--", "-P", "http"}), InputError);
}

/// A hand-made TCP_STREAM: 2 s, 250 000 000 B sent and received in 3815 sends of 65536 B
/// (the last shorter) and 5000 recvs: 250e6 * 8 / 2 / 1e6 = 1000.00 10^6bits/s.
TcpStreamResult hand_stream() {
  TcpStreamResult r;
  r.elapsed_s = 2.0;
  r.bytes_sent = r.bytes_received = 250000000;
  r.send_calls = 3815;
  r.recv_calls = 5000;
  r.send_size = 65536;
  r.recv_size = 87380;
  r.local_send_socket = 16384;
  r.remote_recv_socket = 87380;
  r.local_recv_socket = 87380;
  r.remote_send_socket = 16384;
  r.local_cpus = r.remote_cpus = 8;
  r.local_util_pct = 12.5;
  r.remote_util_pct = 25;
  return r;
}

TEST(NetperfOmni, CsvOfAList) {
  NetperfOptions o = parse({"-P", "0", "--", "-o", "THROUGHPUT,throughput_units,LOCAL_SEND_SIZE,ELAPSED_TIME"});
  ASSERT_EQ(o.output_mode, NetperfOptions::OutputMode::Csv);
  const OutputSelection sel = parse_output_selection(o);
  ASSERT_EQ(sel.size(), 1u);
  EXPECT_EQ(format_netperf_omni(o, sel, hand_stream(), nullptr), "1000.00,10^6bits/s,65536,2.00\n");
  o.print_headers = true;
  EXPECT_EQ(format_netperf_omni(o, sel, hand_stream(), nullptr),
            "MIGRATED TCP STREAM TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to localhost (127.0.0.1) port 0 AF_INET\n"
            "Throughput,Throughput Units,Local Send Size,Elapsed Time (sec)\n"
            "1000.00,10^6bits/s,65536,2.00\n");
}

// Service demand (netlib.c calc_service_demand_fmt): 12.5 % of 8 CPUs over 250e6 B / 1024 / 2 s
// = 122 070.3125 KB/s: 12.5 * 10000 / 122070.3125 * 8 = 8.192 us/KB; the remote's 25 %: 16.384.
TEST(NetperfOmni, KeyvalWithCpu) {
  const NetperfOptions o =
      parse({"-P", "0", "-c", "-C", "--", "-k", "LOCAL_CPU_UTIL,LOCAL_SD,REMOTE_SD,SD_UNITS;DIRECTION"});
  EXPECT_EQ(format_netperf_omni(o, parse_output_selection(o), hand_stream(), nullptr),
            "LOCAL_CPU_UTIL=12.50\nLOCAL_SD=8.192\nREMOTE_SD=16.384\nSD_UNITS=usec/KB\nDIRECTION=Send\n");
}

// print_omni_human: each column is the widest of its header lines and its value plus one,
// then one space: THROUGHPUT "Throughput" (10) and "1000.00" (7 + 1): 11 columns; ELAPSED_TIME
// "Elapsed" (7), "2.00" (4 + 1): 8; SOURCE_PORT "Source" (6), "5001" (4 + 1): 7. Lines keep
// their trailing spaces; a blank line between blocks.
TEST(NetperfOmni, HumanColumns) {
  const NetperfOptions o = parse({"-P", "0", "--", "-O", "THROUGHPUT,ELAPSED_TIME;SOURCE_PORT", "-P", "5001"});
  EXPECT_EQ(format_netperf_omni(o, parse_output_selection(o), hand_stream(), nullptr),
            "1000.00    2.00    \n\n5001   \n");
  NetperfOptions h = o;
  h.print_headers = true;
  EXPECT_EQ(format_netperf_omni(h, parse_output_selection(h), hand_stream(), nullptr),
            "MIGRATED TCP STREAM TEST from 0.0.0.0 (0.0.0.0) port 5001 AF_INET to localhost (127.0.0.1) port 5001 "
            "AF_INET\n"
            "Throughput Elapsed \n           Time    \n           (sec)   \n                   \n"
            "1000.00    2.00    \n\nSource \nPort   \n       \n       \n5001   \n");
}

TEST(NetperfOmni, UnknownNamesAreDroppedAsNetperfDropsThem) {
  NetperfOptions o = parse({"--", "-o", "THROUGHPUT,NO_SUCH_THING"});
  std::vector<std::string> dropped;
  const OutputSelection sel = parse_output_selection(o, &dropped);
  ASSERT_EQ(sel.size(), 1u);
  EXPECT_EQ(sel[0], std::vector<std::string>{"THROUGHPUT"});
  EXPECT_EQ(dropped, std::vector<std::string>{"NO_SUCH_THING"});
  ASSERT_EQ(o.notes.size(), 1u);
}

TEST(NetperfOmni, RefusesWhatItCannotFill) {
  EXPECT_THROW(parse({"--", "-o", "THROUGHPUT,LOCAL_CPU_PERCENT_USER"}), InputError);
  EXPECT_THROW(parse({"-c", "--", "-o"}), InputError);  // the default list with -c has the CPU percentages
  EXPECT_THROW(parse({"--", "-o", "MEAN_LATENCY"}), InputError);  // TCP_STREAM times no transactions
  EXPECT_NO_THROW(parse({"-t", "TCP_RR", "--", "-o", "MEAN_LATENCY"}));
  EXPECT_THROW(parse({"--", "-o", "no_such_selection_file"}), InputError);
  EXPECT_THROW(parse({"--", "-oTHROUGHPUT"}), InputError);
}

}  // namespace
}  // namespace hcasim::frontends
