// netperf 2.4.3 TCP_STREAM output (frontends/netperf_output.h): the seed's -P 0 rows rebuilt
// from hand-made results, the -P 1 header block, -f, -v 0 / -v 2, the CSV and --stats.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <fmt/format.h>

#include "frontends/netperf_output.h"
#include "util/output_file.h"

namespace hcasim::frontends {
namespace {

/// netperf's service demand (netlib.c calc_service_demand), by hand: us of CPU per KB.
double hand_service_demand(double util_pct, int cpus, double bytes, double elapsed_s) {
  const double kb_per_s = bytes / 1024.0 / elapsed_s;
  return util_pct * 10000.0 * cpus / kb_per_s;
}

/// Seed 000, T3 SDP -m 64K: "87380 16384 65536 60.00 8323.20 12.96 13.64 1.020 1.074".
/// 8323.20 Mbit/s over 60 s is 62 424 000 000 bytes; both hosts have 8 CPUs.
TcpStreamResult t3_result() {
  TcpStreamResult r;
  r.remote_recv_socket = 87380;
  r.local_send_socket = 16384;
  r.send_size = 65536;
  r.recv_size = 87380;
  r.elapsed_s = 60.0;
  r.bytes_sent = 62424000000;
  r.bytes_received = 62424000000;
  r.send_calls = 952515;
  r.recv_calls = 1905030;
  r.local_cpus = 8;
  r.remote_cpus = 8;
  r.local_util_pct = 12.96;
  r.remote_util_pct = 13.64;
  return r;
}

NetperfFigures hand_figures(const NetperfOptions& o, const TcpStreamResult& r) {
  NetperfFigures f;
  f.elapsed_s = r.elapsed_s;
  f.throughput = netperf_throughput(static_cast<double>(r.bytes_received), r.elapsed_s, o.format);
  f.throughput_mbps = static_cast<double>(r.bytes_received) * 8 / 1e6 / r.elapsed_s;
  if (o.local_cpu) {
    f.local_util_pct = r.local_util_pct;
    f.local_sd_us_per_kb = hand_service_demand(r.local_util_pct, r.local_cpus,
                                               static_cast<double>(r.bytes_received), r.elapsed_s);
  }
  if (o.remote_cpu) {
    f.remote_util_pct = r.remote_util_pct;
    f.remote_sd_us_per_kb = hand_service_demand(r.remote_util_pct, r.remote_cpus,
                                                static_cast<double>(r.bytes_received), r.elapsed_s);
  }
  return f;
}

NetperfOptions options(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return parse_netperf_args(words);
}

std::vector<std::string> tokens(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

constexpr const char* kSeedFlags = "-C -c -P 0 -t TCP_STREAM -H 193.168.10.143 -l 60";

TEST(NetperfOutput, SeedT3RowWithCpu) {
  const NetperfOptions o = options(std::string(kSeedFlags) + " -- -m 64K");
  const auto r = t3_result();
  // netperf's cpu_fmt_1: "%6d %6d %6d    %-6.2f     %7.2f   %-6.2f   %-6.2f   %-6.3f  %-6.3f %s\n"
  EXPECT_EQ(format_netperf_output(o, r, hand_figures(o, r)),
            " 87380  16384  65536    60.00      8323.20   12.96    13.64    1.020   1.074  \n");
}

// Seed 000, T2 SDP -r 64K: "87380  16384  16384    60.00    7106.72   13.32    14.87    1.228   1.370"
// (the brief's rendering; the archive's whitespace is the mail client's). 7106.72 Mbit/s over
// 60 s is 53 300 400 000 bytes. The local service demand follows from 13.32 % of 8 CPUs
// (1.2283); the remote one does not: 14.87 % of 8 CPUs gives 1.3713, so netperf must have had
// a remote utilisation just under 14.865 % in its float arithmetic... which prints "14.86". The
// row is not self-consistent at the printed precision, so its remote service demand is set by
// hand here.
TEST(NetperfOutput, SeedT2RowWithCpu) {
  const NetperfOptions o = options(std::string(kSeedFlags) + " -- -r 64K");
  TcpStreamResult r = t3_result();
  r.send_size = 16384;
  r.bytes_received = 53300400000;
  r.local_util_pct = 13.32;
  r.remote_util_pct = 14.87;
  NetperfFigures f = hand_figures(o, r);
  EXPECT_NEAR(f.local_sd_us_per_kb, 1.2283, 1e-4);
  EXPECT_NEAR(f.remote_sd_us_per_kb, 1.3713, 1e-4);
  f.remote_sd_us_per_kb = 1.370;
  const std::string row = format_netperf_output(o, r, f);
  EXPECT_EQ(row, " 87380  16384  16384    60.00      7106.72   13.32    14.87    1.228   1.370  \n");
  EXPECT_EQ(tokens(row),
            tokens("87380  16384  16384    60.00    7106.72   13.32    14.87    1.228   1.370"));
}

TEST(NetperfOutput, SevenDigitSendSizeWidensTheColumn) {
  const NetperfOptions o = options(std::string(kSeedFlags) + " -- -m 1M");
  TcpStreamResult r = t3_result();
  r.send_size = 1048576;
  EXPECT_EQ(format_netperf_output(o, r, hand_figures(o, r)),
            " 87380  16384 1048576    60.00      8323.20   12.96    13.64    1.020   1.074  \n");
}

TEST(NetperfOutput, HeaderBlockWithCpu) {
  const NetperfOptions o = options("-c -C -H 193.168.10.143 -l 60 -- -m 64K");
  const auto r = t3_result();
  EXPECT_EQ(format_netperf_output(o, r, hand_figures(o, r)),
            "TCP STREAM TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to 193.168.10.143 "
            "(193.168.10.143) port 0 AF_INET\n"
            "Recv   Send    Send                          Utilization       Service Demand\n"
            "Socket Socket  Message  Elapsed              Send     Recv     Send    Recv\n"
            "Size   Size    Size     Time     Throughput  local    remote   local   remote\n"
            "bytes  bytes   bytes    secs.    10^6bits/s  % S      % S      us/KB   us/KB\n"
            "\n"
            " 87380  16384  65536    60.00      8323.20   12.96    13.64    1.020   1.074  \n");
}

TEST(NetperfOutput, HeaderBlockWithoutCpuAndCpuBind) {
  const NetperfOptions o = options("-T 0,1 -- -m 64K");
  const auto r = t3_result();
  EXPECT_EQ(format_netperf_output(o, r, hand_figures(o, r)),
            "TCP STREAM TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to localhost (127.0.0.1) "
            "port 0 AF_INET : cpu bind\n"
            "Recv   Send    Send                          \n"
            "Socket Socket  Message  Elapsed              \n"
            "Size   Size    Size     Time     Throughput  \n"
            "bytes  bytes   bytes    secs.    10^6bits/sec  \n"
            "\n"
            " 87380  16384  65536    60.00    8323.20   \n");
}

TEST(NetperfOutput, UnmeasuredSidePrintsMinusOne) {
  const NetperfOptions o = options("-c -H h -- -m 64K");
  const auto r = t3_result();
  EXPECT_EQ(format_netperf_output(o, r, hand_figures(o, r)),
            "TCP STREAM TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to h (h) port 0 AF_INET\n"
            "Recv   Send    Send                          Utilization       Service Demand\n"
            "Socket Socket  Message  Elapsed              Send     Recv     Send    Recv\n"
            "Size   Size    Size     Time     Throughput  local    remote   local   remote\n"
            "bytes  bytes   bytes    secs.    10^6bits/s  % S      % U      us/KB   us/KB\n"
            "\n"
            " 87380  16384  65536    60.00      8323.20   12.96    -1.00    1.020   -1.000 \n");
}

TEST(NetperfOutput, FormatUnitsInColumnAndHeader) {
  const auto r = t3_result();
  // 62 424 000 000 B / 2^20 / 60 s = 992.20 MBytes/s; netperf pads the unit with %-8.8s.
  NetperfOptions o = options("-f M -c -C -- -m 64K");
  EXPECT_EQ(format_netperf_output(o, r, hand_figures(o, r)),
            "TCP STREAM TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to localhost (127.0.0.1) "
            "port 0 AF_INET\n"
            "Recv   Send    Send                          Utilization       Service Demand\n"
            "Socket Socket  Message  Elapsed              Send     Recv     Send    Recv\n"
            "Size   Size    Size     Time     Throughput  local    remote   local   remote\n"
            "bytes  bytes   bytes    secs.    MBytes  /s  % S      % S      us/KB   us/KB\n"
            "\n"
            " 87380  16384  65536    60.00       992.20   12.96    13.64    1.020   1.074  \n");
  o = options("-f g -P 0 -- -m 64K");
  EXPECT_EQ(format_netperf_output(o, r, hand_figures(o, r)),
            " 87380  16384  65536    60.00       8.32   \n");

  EXPECT_DOUBLE_EQ(netperf_throughput(1024.0 * 1024.0 * 1024.0, 2.0, 'G'), 0.5);
  EXPECT_DOUBLE_EQ(netperf_throughput(2048.0, 1.0, 'K'), 2.0);
  EXPECT_DOUBLE_EQ(netperf_throughput(125000.0, 1.0, 'm'), 1.0);
  EXPECT_DOUBLE_EQ(netperf_throughput(125.0, 1.0, 'k'), 1.0);
  EXPECT_DOUBLE_EQ(netperf_throughput(125000000.0, 1.0, 'g'), 1.0);
  EXPECT_EQ(netperf_units('k'), "10^3bits");
  EXPECT_EQ(netperf_units('m'), "10^6bits");
  EXPECT_EQ(netperf_units('g'), "10^9bits");
  EXPECT_EQ(netperf_units('K'), "KBytes");
  EXPECT_EQ(netperf_units('M'), "MBytes");
  EXPECT_EQ(netperf_units('G'), "GBytes");
}

TEST(NetperfOutput, TerseVerbosityZero) {
  const auto r = t3_result();
  NetperfOptions o = options("-v 0 -P 0 -c -C -- -m 64K");
  EXPECT_EQ(format_netperf_output(o, r, hand_figures(o, r)), " 1.020 S \n");
  o = options("-v 0 -P 0 -C -- -m 64K");  // only remote measured: its service demand
  EXPECT_EQ(format_netperf_output(o, r, hand_figures(o, r)), " 1.074 S \n");
  o = options("-v 0 -P 0 -- -m 64K");
  EXPECT_EQ(format_netperf_output(o, r, hand_figures(o, r)), "8323.20 \n");
}

// The versions runs used -v2: the row, then alignment/offset/bytes/sends/recvs and the MSS.
TEST(NetperfOutput, VerbosityTwoBlock) {
  const NetperfOptions o =
      options("-v2 -4 -H 193.168.10.143 -l 30 -t TCP_STREAM -c -C -P 0 -- -m 64K");
  const auto r = t3_result();
  EXPECT_EQ(format_netperf_output(o, r, hand_figures(o, r)),
            " 87380  16384  65536    60.00      8323.20   12.96    13.64    1.020   1.074  \n"
            "\n"
            "Alignment      Offset         Bytes    Bytes       Sends   Bytes    Recvs\n"
            "Local  Remote  Local  Remote  Xfered   Per                 Per\n"
            "Send   Recv    Send   Recv             Send (avg)          Recv (avg)\n"
            "    8       8      0       0 6.242e+10  65535.98    952515   32767.99 1905030\n"
            "\n"
            "Maximum\n"
            "Segment\n"
            "Size (bytes)\n"
            "    -1\n");
}

TEST(NetperfOutput, FiguresUseTheSimulationsServiceDemand) {
  const NetperfOptions o = options("-c -C -- -m 64K");
  const auto r = t3_result();
  const NetperfFigures f = netperf_figures(o, r);
  EXPECT_DOUBLE_EQ(f.elapsed_s, 60.0);
  EXPECT_NEAR(f.throughput, 8323.2, 1e-9);
  EXPECT_NEAR(f.throughput_mbps, 8323.2, 1e-9);
  EXPECT_DOUBLE_EQ(f.local_util_pct, 12.96);
  EXPECT_DOUBLE_EQ(f.remote_util_pct, 13.64);
  EXPECT_NEAR(f.local_sd_us_per_kb, hand_service_demand(12.96, 8, 62424000000.0, 60.0), 1e-9);
  EXPECT_NEAR(f.remote_sd_us_per_kb, hand_service_demand(13.64, 8, 62424000000.0, 60.0), 1e-9);

  const NetperfFigures none = netperf_figures(options("-f K"), r);
  EXPECT_NEAR(none.throughput, 62424000000.0 / 1024 / 60, 1e-9);
  EXPECT_NEAR(none.throughput_mbps, 8323.2, 1e-9);
  EXPECT_EQ(none.local_util_pct, -1);
  EXPECT_EQ(none.remote_util_pct, -1);
  EXPECT_EQ(none.local_sd_us_per_kb, -1);
  EXPECT_EQ(none.remote_sd_us_per_kb, -1);
}

TEST(NetperfOutput, Csv) {
  const NetperfOptions o = options("-c -C -- -m 64K");
  const auto r = t3_result();
  NetperfFigures f = hand_figures(o, r);
  f.local_sd_us_per_kb = 1.02;
  f.remote_sd_us_per_kb = 1.074;
  EXPECT_EQ(format_netperf_csv(o, r, f),
            "test,send_size_bytes,recv_size_bytes,remote_recv_socket_bytes,"
            "local_send_socket_bytes,elapsed_s,throughput_mbps,util_local_pct,util_remote_pct,"
            "sd_local_us_per_kb,sd_remote_us_per_kb,bytes_received,send_calls,recv_calls,"
            "transaction_rate_per_s\n"
            "TCP_STREAM,65536,87380,87380,16384,60,8323.2,12.96,13.64,1.02,1.074,62424000000,"
            "952515,1905030,\n");
  const NetperfOptions local_only = options("-c -- -m 64K");
  const std::string csv = format_netperf_csv(local_only, r, f);
  EXPECT_EQ(csv.substr(csv.find('\n') + 1),
            "TCP_STREAM,65536,87380,87380,16384,60,8323.2,12.96,,1.02,,62424000000,952515,"
            "1905030,\n");
}

TEST(NetperfOutput, CsvOfTcpRrHasTheTransactionRate) {
  // 741600 transactions of 1 B each way in 10 s: 74160 a second, as the row prints it; the
  // bytes of both directions, 1483200 B x 8 / 10 s = 1.18656 Mbit/s; 14.49 % of 8 CPUs x 10^6 /
  // 74160 = 15.631 us per transaction (netperf's us/Tr), in the sd cells.
  TcpStreamResult r;
  r.request_size = r.response_size = 1;
  r.remote_recv_socket = 87380;
  r.local_send_socket = 16384;
  r.transactions = 741600;
  r.bytes_sent = r.bytes_received = 741600;
  r.elapsed_s = 10;
  r.local_cpus = r.remote_cpus = 8;
  r.local_util_pct = r.remote_util_pct = 14.49;
  const NetperfOptions o = options("-t TCP_RR -c -l 10");
  const NetperfFigures f = netperf_figures(o, r);
  EXPECT_EQ(f.transaction_rate, 74160);
  EXPECT_NEAR(f.local_sd_us_per_kb, 14.49 * 8 * 1e4 / 74160, 1e-9);
  const std::string csv = format_netperf_csv(o, r, f);
  EXPECT_EQ(csv.substr(csv.find('\n') + 1),
            fmt::format("TCP_RR,0,0,87380,16384,10,1.18656,14.49,,{},,741600,0,0,74160\n", f.local_sd_us_per_kb));
}

TEST(NetperfOutput, StatsLine) {
  TcpStreamResult r = t3_result();
  r.simgrid_activities = 123456;
  r.simgrid_time_steps = 4321;
  r.kernel_events = 98765;
  r.context_switches = 87654;
  r.transfers_simgrid = 12;
  r.transfers_alone = 3456;
  r.sdp_messages = 7890;
  r.wall_s = 12.0;
  r.max_rss_kb = 40960;
  // 123456 / 7890 = 15.647 activities per message; 60 s / 12 s = 5; 40960 KiB = 40.0 MiB.
  EXPECT_EQ(format_stats_line(r),
            "hcasim: stats: activities=123456 time_steps=4321 events=98765 switches=87654 transfers_simgrid=12 "
            "transfers_alone=3456 sdp_messages=7890 activities_per_message=15.65 "
            "simulated_s=60.000 wall_s=12.000 speed=5.00 simulated s per wall s max_rss_mb=40.0");
  r.wall_s = 0;
  r.sdp_messages = 0;
  EXPECT_EQ(format_stats_line(r),
            "hcasim: stats: activities=123456 time_steps=4321 events=98765 switches=87654 transfers_simgrid=12 "
            "transfers_alone=3456 sdp_messages=0 activities_per_message=- "
            "simulated_s=60.000 wall_s=0.000 speed=inf simulated s per wall s max_rss_mb=40.0");
}

TEST(NetperfOutput, LinkBusyLine) {
  // Busy seconds to 1 us and the share of the interval: 6.2747551 of 10 s = 62.7 %; 0.3 of
  // 0.3 s = 100.0 %; a zero interval prints no share.
  const std::vector<std::pair<std::string, double>> links{{"A-pcie-h2d", 6.2747551}, {"ib-A-to-B", 0.0}};
  EXPECT_EQ(format_link_busy_line(links, 10.0), "hcasim: link busy: A-pcie-h2d=6.274755s(62.7%) ib-A-to-B=0.000000s(0.0%)");
  EXPECT_EQ(format_link_busy_line({{"A-pcix", 0.3}}, 0.3), "hcasim: link busy: A-pcix=0.300000s(100.0%)");
  EXPECT_EQ(format_link_busy_line({{"A-pcix", 0.3}}, 0.0), "hcasim: link busy: A-pcix=0.300000s");
}

TEST(NetperfOutput, AtomicWrite) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("hcasim-output-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "out.csv").string();
  util::write_file_atomically(path, "a,b\n1,2\n", "--csv");
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), "a,b\n1,2\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);

  const std::string bad = (dir / "missing" / "out.csv").string();
  try {
    util::write_file_atomically(bad, "x", "--csv");
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "--csv " + bad + ": cannot write (No such file or directory)");
  }
  // Renaming onto a directory fails: the temporary file is removed, the target untouched.
  fs::create_directories(dir / "sub");
  EXPECT_THROW(util::write_file_atomically((dir / "sub").string(), "x", "--csv"), InputError);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 2);
  fs::remove_all(dir);
}

TEST(NetperfOutput, CheckOutputPathBeforeARun) {
  EXPECT_NO_THROW(util::check_output_path("relative.csv", "--csv"));
  EXPECT_NO_THROW(util::check_output_path("/tmp/x.csv", "--csv"));
  try {
    util::check_output_path("/nonexistent-dir/x.csv", "--csv");
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "--csv /nonexistent-dir/x.csv: cannot write (no such directory)");
  }
  try {
    util::check_output_path("/tmp", "--csv");
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "--csv /tmp: cannot write (it is a directory)");
  }
}

// --profile (format_cpu_profile): one CPU's time by activity over the measured interval.

/// A core with the given (activity, seconds) rows, in ns as the simulation gives them.
CoreProfile core(int n, const std::vector<std::pair<std::string, double>>& seconds) {
  CoreProfile c;
  c.core = n;
  for (const auto& [name, s] : seconds) c.busy_ns.emplace_back(name, s * 1e9);
  return c;
}

// Elapsed 2 s; CPU 0 copy 1.0 s and interrupt 0.5 s: 50 %, 25 % and idle 25 %. The rows come
// sorted by share, not in the given activity order; the 25 % tie keeps the activity before
// idle; syscall (exactly 0) has no row. CPU 1 does nothing: only idle.
TEST(NetperfProfile, SharesOfTheIntervalSortedWithIdle) {
  const std::vector<CoreProfile> cores = {
      core(0, {{"syscall", 0.0}, {"interrupt", 0.5}, {"copy", 1.0}, {"timer", 0.0}}),
      core(1, {{"syscall", 0.0}, {"interrupt", 0.0}, {"copy", 0.0}, {"timer", 0.0}}),
  };
  EXPECT_EQ(format_cpu_profile("local host (netperf)", cores, 2.0),
            "local host (netperf): utilisation 37.50 % (mean over 2 CPUs) in 2.000000 s\n"
            "  CPU 0   % time     seconds  activity\n"
            "           50.00    1.000000  copy\n"
            "           25.00    0.500000  interrupt\n"
            "           25.00    0.500000  idle\n"
            "           75.00    1.500000  total busy\n"
            "  CPU 1   % time     seconds  activity\n"
            "          100.00    2.000000  idle\n"
            "            0.00    0.000000  total busy\n");
}

// Any activity name is a row (new ones in model/cpu.h need no change here); a CPU busy all
// the interval has no idle row; a tiny but non-zero time (1 ns) still gets its row; a CPU
// number is printed as given.
TEST(NetperfProfile, GenericActivitiesFullyBusyAndTinyRows) {
  const std::vector<CoreProfile> cores = {
      core(7, {{"coherence", 0.25}, {"poll", 0.75}, {"timer", 1e-9}}),
  };
  EXPECT_EQ(format_cpu_profile("remote host (netserver)", cores, 1.0),
            "remote host (netserver): utilisation 100.00 % (mean over 1 CPU) in 1.000000 s\n"
            "  CPU 7   % time     seconds  activity\n"
            "           75.00    0.750000  poll\n"
            "           25.00    0.250000  coherence\n"
            "            0.00    0.000000  timer\n"
            "          100.00    1.000000  total busy\n");
}

// More busy time than the interval: idle is 0 (no row, never negative) and the total says so.
TEST(NetperfProfile, OvercommittedCpuHasNoNegativeIdle) {
  const std::string out = format_cpu_profile("h", {core(0, {{"copy", 1.5}})}, 1.0);
  EXPECT_EQ(out,
            "h: utilisation 150.00 % (mean over 1 CPU) in 1.000000 s\n"
            "  CPU 0   % time     seconds  activity\n"
            "          150.00    1.500000  copy\n"
            "          150.00    1.500000  total busy\n");
  EXPECT_EQ(out.find("idle"), std::string::npos);
}

TEST(NetperfProfile, DegenerateIntervalAndNoCpus) {
  EXPECT_EQ(format_cpu_profile("h", {}, 1.0), "h: no CPUs\n");
  EXPECT_EQ(format_cpu_profile("h", {core(0, {{"copy", 0.0}})}, 0.0),
            "h: utilisation 0.00 % (mean over 1 CPU) in 0.000000 s\n"
            "  CPU 0   % time     seconds  activity\n"
            "            0.00    0.000000  total busy\n");
}

// The utilisation line is netperf's system-wide figure: the mean of the CPUs' busy shares, the
// same arithmetic as model::utilisation_pct (which fills TcpStreamResult::local_util_pct).
TEST(NetperfProfile, UtilisationIsTheMeanOverCpus) {
  const std::vector<CoreProfile> cores = {
      core(0, {{"interrupt", 0.3}}), core(1, {{"copy", 0.1}, {"syscall", 0.05}}),
      core(2, {}), core(3, {{"timer", 0.01}})};
  const std::string out = format_cpu_profile("h", cores, 1.0);
  // (30 + 15 + 0 + 1) / 4 = 11.50
  EXPECT_EQ(out.substr(0, out.find('\n')),
            "h: utilisation 11.50 % (mean over 4 CPUs) in 1.000000 s");
}

// The whole --profile text: local host then remote host, each after a blank line, over the
// result's elapsed time; nothing of it goes into the CSV, which --profile leaves unchanged.
TEST(NetperfProfile, BothHostsAndTheCsvIsUnchanged) {
  auto r = t3_result();
  r.elapsed_s = 2.0;
  r.local_profile = {core(0, {{"copy", 1.0}})};
  r.remote_profile = {core(0, {{"interrupt", 0.5}}), core(1, {{"copy", 1.5}})};
  EXPECT_EQ(format_netperf_profile(r),
            "\n" + format_cpu_profile("local host (netperf)", r.local_profile, 2.0) + "\n" +
                format_cpu_profile("remote host (netserver)", r.remote_profile, 2.0));
  EXPECT_NE(format_netperf_profile(r).find(
                "\nremote host (netserver): utilisation 50.00 % (mean over 2 CPUs) in 2.000000 s\n"),
            std::string::npos);

  const NetperfOptions plain = options("-c -C -- -m 64K");
  const NetperfOptions profiled = options("-c -C --profile -- -m 64K");
  ASSERT_TRUE(profiled.profile);
  EXPECT_EQ(format_netperf_csv(profiled, r, hand_figures(profiled, r)),
            format_netperf_csv(plain, r, hand_figures(plain, r)));
  EXPECT_EQ(format_netperf_output(profiled, r, hand_figures(profiled, r)),
            format_netperf_output(plain, r, hand_figures(plain, r)));
}

}  // namespace
}  // namespace hcasim::frontends

namespace hcasim::frontends {
namespace {

TEST(NetperfProgress, SaysHowFarAndHowLong) {
  EXPECT_EQ(format_progress_line(12.3, 1e9, 3),
            "hcasim: simulated 12.3 s of 1000000000 s (0.0 %) at 4.1 simulated s per wall s, about 7.73 years to go");
  EXPECT_EQ(format_progress_line(30, 60, 10), "hcasim: simulated 30.0 s of 60 s (50.0 %) at 3 simulated s per wall s, "
                                              "about 10 s to go");
  EXPECT_EQ(format_progress_line(10, 3610, 1), "hcasim: simulated 10.0 s of 3610 s (0.3 %) at 10 simulated s per wall "
                                               "s, about 6 min to go");
  EXPECT_EQ(format_progress_line(1, 86401, 1), "hcasim: simulated 1.0 s of 86401 s (0.0 %) at 1 simulated s per wall s, "
                                               "about 24.0 h to go");
  EXPECT_EQ(format_progress_line(1, 259201, 1), "hcasim: simulated 1.0 s of 259201 s (0.0 %) at 1 simulated s per wall "
                                                "s, about 3.0 days to go");
  EXPECT_EQ(format_progress_line(0, 100, 1), "hcasim: simulated 0.0 s of 100 s (0.0 %) at 0 simulated s per wall s, "
                                             "about ? to go");
}

}  // namespace
}  // namespace hcasim::frontends
