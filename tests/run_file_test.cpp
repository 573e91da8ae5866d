// Readers of real netperf and perftest runs (scenarios/run_file.h): seed 000's, 001's and 003's
// pasted sessions (verbatim), the output of hcasim's own netperf and perftest printers read back,
// the formats a real run may have (confidence banner and warning, -v 0, -f, perftest 4.5's
// columns, bandwidth tables, cycles), the session rules (prompts, sudo/env/taskset, settings) and
// every error with its file:line.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "frontends/netperf_cli.h"
#include "frontends/netperf_output.h"
#include "frontends/perftest_cli.h"
#include "frontends/perftest_output.h"
#include "scenarios/run_file.h"
#include "util/command_words.h"

namespace hcasim::scenarios {
namespace {

using namespace ::hcasim::util;


const NetperfReading& netperf_of(const RealRun& run) { return std::get<NetperfReading>(run.output); }
const PerftestReading& perftest_of(const RealRun& run) {
  return std::get<PerftestReading>(run.output);
}

/// The message of the InputError parse_run_file throws on `text` (named "runs.txt"), or "".
std::string error_of(const std::string& text) {
  try {
    parse_run_file(text, "runs.txt");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// --- seed 000 ----------------------------------------------------------------------------------

/// shared/seeds/000_e020891d04dfaba2.txt lines 82-121, verbatim: line N of this text is line
/// N + 81 of the seed.
constexpr const char* kSeed000 = R"SEED(  # echo $LD_PRELOAD
  libsdp.so
  # echo 0 > /sys/module/ib_sdp/sdp_zcopy_thresh
  # netperf -C -c -P 0 -t TCP_STREAM -H 193.168.10.143 -l 60 ---r 64K
  87380 16384 16384 60.00 7106.72 13.32 14.87 1.228 1.370
  # netperf -C -c -P 0 -t TCP_STREAM -H 193.168.10.143 -l 60 ---r 128K
  87380 16384 16384 60.00 6906.18 14.02 15.18 1.330 1.441
  # netperf -C -c -P 0 -t TCP_STREAM -H 193.168.10.143 -l 60 ---r 1M
  87380 16384 16384 60.00 7030.98 13.97 15.13 1.303 1.410
  # echo 1 > /sys/module/ib_sdp/sdp_zcopy_thresh
  # netperf -C -c -P 0 -t TCP_STREAM -H 193.168.10.143 -l 60 ---r 64K
  87380 16384 16384 60.00 6491.93 13.83 14.90 1.396 1.504
  # netperf -C -c -P 0 -t TCP_STREAM -H 193.168.10.143 -l 60 ---r 128K
  87380 16384 16384 60.00 6536.61 14.19 14.80 1.423 1.484
  # netperf -C -c -P 0 -t TCP_STREAM -H 193.168.10.143 -l 60 ---r 1M
  87380 16384 16384 60.00 6623.94 13.68 14.82 1.353 1.466

Now these numbers look like what you report.  The problem here is that
we are giving SDP data in 16K chunks (Send Message Size bytes is 16384),
and the overhead of pinning 16K, sending it, and unpinning it is too
high to give us any benefit. 

Rerunning the whole test with -m instead of -r give me the numbers that
I keep reporting:
  # echo $LD_PRELOAD
  libsdp.so
  # echo 0 > /sys/module/ib_sdp/sdp_zcopy_thresh
  # netperf -C -c -P 0 -t TCP_STREAM -H 193.168.10.143 -l 60 ---m 64K
  87380  16384  65536  60.00  8323.20 12.96 13.64 1.020 1.074
  # netperf -C -c -P 0 -t TCP_STREAM -H 193.168.10.143 -l 60 ---m 128K
  87380  16384 131072  60.00  6661.77 13.74 13.41 1.352 1.320
  # netperf -C -c -P 0 -t TCP_STREAM -H 193.168.10.143 -l 60 ---m 1M
  87380  16384 1048576 60.00  6691.83 13.39 13.58 1.312 1.330
  # echo 1 > /sys/module/ib_sdp/sdp_zcopy_thresh
  # netperf -C -c -P 0 -t TCP_STREAM -H 193.168.10.143 -l 60 ---m 64K
  87380  16384  65536  60.00  9052.22 12.88 14.18 0.932 1.027
  # netperf -C -c -P 0 -t TCP_STREAM -H 193.168.10.143 -l 60 ---m 128K
  87380  16384 131072  60.00 10294.87 12.70 13.44 0.808 0.855
  # netperf -C -c -P 0 -t TCP_STREAM -H 193.168.10.143 -l 60 ---m 1M
  87380  16384 1048576 60.00 10254.89  7.74 13.07 0.495 0.835
)SEED";
constexpr uint32_t kSeed000Offset = 81;

struct Seed000Row {
  uint32_t seed_line;  ///< the command's line in the seed file
  std::string flag;    ///< "-r" or "-m"
  std::string size;
  std::string zcopy;
  double message, throughput, util_local, util_remote, sd_local, sd_remote;
};

const std::vector<Seed000Row>& seed000_rows() {
  static const std::vector<Seed000Row> rows = {
      {85, "-r", "64K", "0", 16384, 7106.72, 13.32, 14.87, 1.228, 1.370},
      {87, "-r", "128K", "0", 16384, 6906.18, 14.02, 15.18, 1.330, 1.441},
      {89, "-r", "1M", "0", 16384, 7030.98, 13.97, 15.13, 1.303, 1.410},
      {92, "-r", "64K", "1", 16384, 6491.93, 13.83, 14.90, 1.396, 1.504},
      {94, "-r", "128K", "1", 16384, 6536.61, 14.19, 14.80, 1.423, 1.484},
      {96, "-r", "1M", "1", 16384, 6623.94, 13.68, 14.82, 1.353, 1.466},
      {109, "-m", "64K", "0", 65536, 8323.20, 12.96, 13.64, 1.020, 1.074},
      {111, "-m", "128K", "0", 131072, 6661.77, 13.74, 13.41, 1.352, 1.320},
      {113, "-m", "1M", "0", 1048576, 6691.83, 13.39, 13.58, 1.312, 1.330},
      {116, "-m", "64K", "1", 65536, 9052.22, 12.88, 14.18, 0.932, 1.027},
      {118, "-m", "128K", "1", 131072, 10294.87, 12.70, 13.44, 0.808, 0.855},
      {120, "-m", "1M", "1", 1048576, 10254.89, 7.74, 13.07, 0.495, 0.835},
  };
  return rows;
}

/// Checks the 12 runs of seed 000 against the seed's rows; `offset` = seed line - run line.
void expect_seed000(const std::vector<RealRun>& runs, uint32_t offset, const std::string& origin) {
  const auto& rows = seed000_rows();
  ASSERT_EQ(runs.size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    SCOPED_TRACE(i);
    const RealRun& run = runs[i];
    const Seed000Row& row = rows[i];
    EXPECT_EQ(run.origin, origin);
    EXPECT_EQ(run.line, row.seed_line - offset);
    EXPECT_EQ(run.tool, "netperf");
    EXPECT_EQ(run.command, "netperf -C -c -P 0 -t TCP_STREAM -H 193.168.10.143 -l 60 --" +
                               row.flag + " " + row.size);
    EXPECT_EQ(run.words, (std::vector<std::string>{"-C", "-c", "-P", "0", "-t", "TCP_STREAM", "-H",
                                                   "193.168.10.143", "-l", "60", "--", row.flag,
                                                   row.size}));
    EXPECT_EQ(run.set, std::vector<std::string>{"sdp.zcopy_thresh=" + row.zcopy});
    EXPECT_FALSE(run.platform.has_value());
    const NetperfReading& r = netperf_of(run);
    EXPECT_EQ(r.line, row.seed_line + 1 - offset);
    EXPECT_EQ(r.recv_socket_bytes, 87380);
    EXPECT_EQ(r.send_socket_bytes, 16384);
    EXPECT_EQ(r.send_message_bytes, row.message);
    EXPECT_EQ(r.elapsed_s, 60.0);
    EXPECT_EQ(r.format, 'm');
    EXPECT_DOUBLE_EQ(r.throughput, row.throughput);
    EXPECT_DOUBLE_EQ(r.throughput_mbps, row.throughput);
    EXPECT_EQ(r.util_local_pct, row.util_local);
    EXPECT_EQ(r.util_remote_pct, row.util_remote);
    EXPECT_EQ(r.sd_local_us_per_kb, row.sd_local);
    EXPECT_EQ(r.sd_remote_us_per_kb, row.sd_remote);
    EXPECT_FALSE(r.confidence.has_value());
    EXPECT_TRUE(r.confidence_achieved);
    EXPECT_FALSE(r.terse);
  }
}

TEST(RunFile, Seed000BothBlocks) {
  expect_seed000(parse_run_file(kSeed000, "seed000.txt"), kSeed000Offset, "seed000.txt");
}

TEST(RunFile, Seed000DataFileLoads) {
  // validation/seed000/runs.txt: a header line and a blank line, then seed lines 82-121.
  const std::string path = std::string(HCASIM_REFERENCE_DIR) + "/seed000/runs.txt";
  expect_seed000(load_run_file(path), kSeed000Offset - 2, path);
}

// --- seed 001 ----------------------------------------------------------------------------------

/// shared/seeds/001_8b23f244a99ed935.txt lines 88-99, verbatim (line N is seed line N + 87).
constexpr const char* kSeed001BareMetalBf = R"SEED(# /usr/bin/taskset -c 0 ib_write_lat -d mlx4_0 -i 1  -F -a -n 1000000

[1] BF on, WC available
#bytes #iterations    t_min[usec]    t_max[usec] t_typical[usec]
2       1000000          0.74           131.62       0.79
4       1000000          0.74           134.51       0.79
8       1000000          0.74           154.30       0.79
16      1000000          0.74           1437.57      0.79
32      1000000          0.79           138.23       0.83
64      1000000          0.82           135.86       0.85
128     1000000          0.94           131.11       0.98

)SEED";

/// shared/seeds/001_8b23f244a99ed935.txt lines 60-80, verbatim: one command, two tables.
constexpr const char* kSeed001KvmBoth = R"SEED(# /usr/bin/taskset -c 0 ib_write_lat -d mlx4_0 -i 1  -F -a -n 1000000

[2] BF on without WC
  #bytes #iterations    t_min[usec]    t_max[usec] t_typical[usec]
  2       1000000          0.74           186.16       0.79
  4       1000000          0.70           103.62       0.78
  8       1000000          0.74           77.02        0.78
  16      1000000          0.65           640.75       0.86
  32      1000000          0.90           134.63       0.96
  64      1000000          1.05           808.52       1.11
  128     1000000          1.05           405.58       1.47

[3] BF off and using doorbell
  #bytes #iterations    t_min[usec]    t_max[usec] t_typical[usec]
  2       1000000          0.85           107.29       0.89
  4       1000000          0.84           705.90       0.89
  8       1000000          0.85           457.72       0.89
  16      1000000          0.85           1041.43      0.90
  32      1000000          0.88           773.67       0.92
  64      1000000          0.90           82.70        0.93
  128     1000000          0.96           78.20        1.00
)SEED";

struct LatRow {
  uint64_t bytes;
  double t_min, t_max, t_typical;
};

void expect_table(const PerftestReading& r, const std::vector<LatRow>& rows, uint32_t first_line) {
  EXPECT_FALSE(r.cycles);
  EXPECT_FALSE(r.extended);
  EXPECT_TRUE(r.bandwidth.empty());
  ASSERT_EQ(r.latency.size(), rows.size());
  EXPECT_EQ(r.header_line, first_line - 1);
  for (size_t i = 0; i < rows.size(); ++i) {
    SCOPED_TRACE(i);
    const LatencyRow& l = r.latency[i];
    EXPECT_EQ(l.bytes, rows[i].bytes);
    EXPECT_EQ(l.iterations, 1000000u);
    EXPECT_DOUBLE_EQ(l.t_min, rows[i].t_min);
    EXPECT_DOUBLE_EQ(l.t_max, rows[i].t_max);
    EXPECT_DOUBLE_EQ(l.t_typical, rows[i].t_typical);
    EXPECT_FALSE(l.t_avg || l.t_stdev || l.p99 || l.p999);
    EXPECT_EQ(l.line, first_line + i);
  }
}

const std::vector<LatRow> kBareMetalBf = {{2, 0.74, 131.62, 0.79},  {4, 0.74, 134.51, 0.79},
                                          {8, 0.74, 154.30, 0.79},  {16, 0.74, 1437.57, 0.79},
                                          {32, 0.79, 138.23, 0.83}, {64, 0.82, 135.86, 0.85},
                                          {128, 0.94, 131.11, 0.98}};

TEST(RunFile, Seed001OneTable) {
  const auto runs = parse_run_file(kSeed001BareMetalBf, "seed001.txt");
  ASSERT_EQ(runs.size(), 1u);
  const RealRun& run = runs[0];
  EXPECT_EQ(run.line, 1u);  // seed line 88
  EXPECT_EQ(run.tool, "ib_write_lat");
  EXPECT_EQ(run.command, "/usr/bin/taskset -c 0 ib_write_lat -d mlx4_0 -i 1  -F -a -n 1000000");
  EXPECT_EQ(run.words, (std::vector<std::string>{"-d", "mlx4_0", "-i", "1", "-F", "-a", "-n",
                                                 "1000000"}));
  EXPECT_TRUE(run.set.empty());
  expect_table(perftest_of(run), kBareMetalBf, 5);  // seed lines 92-98
}

TEST(RunFile, Seed001TwoTablesUnderOneCommandAreRefused) {
  // The [3] table's header is seed line 73, line 14 here; the command is line 1 (seed 60).
  EXPECT_EQ(error_of(kSeed001KvmBoth),
            "runs.txt:14: a second results table under the ib_write_lat command of line 1: repeat "
            "the command line before each table");
}

TEST(RunFile, Seed001DataFileLoads) {
  const std::string path = std::string(HCASIM_REFERENCE_DIR) + "/seed001/runs.txt";
  const auto runs = load_run_file(path);
  ASSERT_EQ(runs.size(), 4u);
  const std::string kvm = "connectx3-pcie3x8-kvm", bare = "connectx3-pcie3x8";
  const std::vector<std::string> platforms = {kvm, kvm, bare, bare};
  const std::vector<std::string> blueflame = {"on", "off", "on", "off"};
  for (size_t i = 0; i < runs.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(runs[i].platform, platforms[i]);
    EXPECT_EQ(runs[i].set, std::vector<std::string>{"hca.blueflame=" + blueflame[i]});
    EXPECT_EQ(runs[i].words.size(), 8u);
    EXPECT_EQ(perftest_of(runs[i]).latency.size(), 7u);
  }
  // [2] BF on without WC, 128 B: "128     1000000          1.05           405.58       1.47".
  const LatencyRow& kvm_bf_128 = perftest_of(runs[0]).latency[6];
  EXPECT_EQ(kvm_bf_128.bytes, 128u);
  EXPECT_DOUBLE_EQ(kvm_bf_128.t_typical, 1.47);
  // [3] BF off (KVM), 16 B: "16      1000000          0.85           1041.43      0.90".
  EXPECT_DOUBLE_EQ(perftest_of(runs[1]).latency[3].t_max, 1041.43);
  expect_table(perftest_of(runs[2]), kBareMetalBf, runs[2].line + 4);
  // [3] BF off (bare metal), 128 B: "128     1000000          1.22           212.19       1.27".
  const LatencyRow& bare_db_128 = perftest_of(runs[3]).latency.back();
  EXPECT_DOUBLE_EQ(bare_db_128.t_min, 1.22);
  EXPECT_DOUBLE_EQ(bare_db_128.t_typical, 1.27);
}

// --- seed 003 ----------------------------------------------------------------------------------

/// shared/seeds/003_53dfb8b0c199e3c9.txt lines 1-33, verbatim: prose, the bare netperf 2.3
/// command (line 20), its confidence banner, titles and row, then a prompt with another command.
constexpr const char* kSeed003 = R"SEED([openib-general] ip over ib throughtput

Wed Jan 12 17:34:06 PST 2005

On Tue, Jan 04, 2005 at 01:10:15PM -0800, Roland Dreier wrote:
>     Josh> I'm seeing about 364 MB/s between 2 PCIe Xeon 3.2GHz boxes
>     Josh> using netperf-2.3pl1.
> 
> Are you using MSI-X?  To use it, set CONFIG_PCI_MSI=y when you build
> your kernel and either "modprobe ib_mthca msi_x=1"...

Good news: Topspin firmware 3.3.2 can run netperf w/MSI-X on ia64 too
Bad news: I'm getting weak perf #s on the ZX1 boxes (~1580 Mbps == ~200MB/s)

This is with MSI-X enabled on both systems.
RX2600 sending TCP_Stream packets to RX4640 via topspin 12port switch.
Rx2600 has "Low Profile" (Cougarcub) and rx4640 has "Cougar" installed
in "dual rope" slots.

/opt/netperf/netperf -l 60 -H 10.0.1.81 -t TCP_STREAM -i 5,2 -I 99,5 -- -m 8192 -s 262144 -S 262144

TCP STREAM TEST to 10.0.1.81 : +/-2.5% @ 99% conf.
Recv   Send    Send                          
Socket Socket  Message  Elapsed              
Size   Size    Size     Time     Throughput  
bytes  bytes   bytes    secs.    10^6bits/sec  

262142 262142   8192    60.00    1588.33   

q-syscollect on netperf client (RX2600, dual 1.5Ghz):

ionize:~/.q# q-view kernel-cpu1.info#0 | less
Flat profile of CPU_CYCLES in kernel-cpu1.hist#0:
)SEED";

TEST(RunFile, Seed003BareCommandWithConfidenceBanner) {
  const auto runs = parse_run_file(kSeed003, "seed003.txt");
  ASSERT_EQ(runs.size(), 1u);
  const RealRun& run = runs[0];
  EXPECT_EQ(run.line, 20u);
  EXPECT_EQ(run.command, "/opt/netperf/netperf -l 60 -H 10.0.1.81 -t TCP_STREAM -i 5,2 -I 99,5 -- "
                         "-m 8192 -s 262144 -S 262144");
  EXPECT_EQ(run.words, (std::vector<std::string>{"-l", "60", "-H", "10.0.1.81", "-t", "TCP_STREAM",
                                                 "-i", "5,2", "-I", "99,5", "--", "-m", "8192",
                                                 "-s", "262144", "-S", "262144"}));
  const NetperfReading& r = netperf_of(run);
  EXPECT_EQ(r.line, 28u);
  EXPECT_EQ(r.recv_socket_bytes, 262142);
  EXPECT_EQ(r.send_socket_bytes, 262142);
  EXPECT_EQ(r.send_message_bytes, 8192);
  EXPECT_EQ(r.elapsed_s, 60.0);
  EXPECT_DOUBLE_EQ(r.throughput_mbps, 1588.33);
  EXPECT_EQ(r.format, 'm');
  EXPECT_FALSE(r.util_local_pct || r.util_remote_pct || r.sd_local_us_per_kb ||
               r.sd_remote_us_per_kb);
  EXPECT_EQ(r.confidence, "+/-2.5% @ 99% conf.");
  EXPECT_TRUE(r.confidence_achieved);
}

// --- hcasim's own netperf printer, read back ---------------------------------------------------

/// Seed 000 T3 SDP -m 64K as the simulation would report it: 62 424 000 000 B in 60 s (8323.20
/// Mbit/s), 8 CPUs per host, 12.96 % and 13.64 % busy.
frontends::TcpStreamResult t3_result() {
  frontends::TcpStreamResult r;
  r.remote_recv_socket = 87380;
  r.local_send_socket = 16384;
  r.send_size = 65536;
  r.recv_size = 87380;
  r.elapsed_s = 60.0;
  r.bytes_sent = r.bytes_received = 62424000000;
  r.send_calls = 952515;
  r.recv_calls = 1905030;
  r.local_cpus = r.remote_cpus = 8;
  r.local_util_pct = 12.96;
  r.remote_util_pct = 13.64;
  return r;
}

std::vector<std::string> words_of(const std::string& line) {
  return split_command_line(line);
}

/// `hcasim netperf WORDS` output for t3_result(), as a run file: "$ netperf WORDS" and the output.
std::string printed_netperf(const std::string& words) {
  const frontends::NetperfOptions o = frontends::parse_netperf_args(words_of(words));
  const auto r = t3_result();
  return "$ netperf " + words + "\n" + frontends::format_netperf_output(o, r, frontends::netperf_figures(o, r));
}

TEST(RunFile, PrinterHeadersAndCpuColumns) {
  const std::string text = printed_netperf("-c -C -H 10.0.0.2 -l 60 -- -m 64K");
  ASSERT_NE(text.find("us/KB   us/KB"), std::string::npos);  // the -P 1 CPU titles
  const auto runs = parse_run_file(text, "p.txt");
  ASSERT_EQ(runs.size(), 1u);
  const NetperfReading& r = netperf_of(runs[0]);
  EXPECT_EQ(r.line, 8u);  // command, banner, four title lines, a blank line, the row
  EXPECT_EQ(r.recv_socket_bytes, 87380);
  EXPECT_EQ(r.send_socket_bytes, 16384);
  EXPECT_EQ(r.send_message_bytes, 65536);
  EXPECT_EQ(r.elapsed_s, 60.0);
  EXPECT_EQ(r.format, 'm');
  EXPECT_DOUBLE_EQ(r.throughput_mbps, 8323.20);
  EXPECT_EQ(r.util_local_pct, 12.96);
  EXPECT_EQ(r.util_remote_pct, 13.64);
  // 12.96 % x 8 CPUs x 10^4 / (62424000000 / 1024 / 60 KB/s) = 1.0205 us/KB; 13.64 %: 1.0740.
  EXPECT_EQ(r.sd_local_us_per_kb, 1.020);
  EXPECT_EQ(r.sd_remote_us_per_kb, 1.074);
  EXPECT_FALSE(r.confidence.has_value());
}

TEST(RunFile, PrinterOneSideMeasured) {
  // -c only: netperf prints -1.00 / -1.000 for the remote side.
  const std::string text = printed_netperf("-P 0 -c -l 60 -- -m 64K");
  ASSERT_NE(text.find("-1.00"), std::string::npos);
  const NetperfReading r = netperf_of(parse_run_file(text, "p.txt").at(0));
  EXPECT_EQ(r.line, 2u);
  EXPECT_EQ(r.util_local_pct, 12.96);
  EXPECT_EQ(r.sd_local_us_per_kb, 1.020);
  EXPECT_FALSE(r.util_remote_pct.has_value());
  EXPECT_FALSE(r.sd_remote_us_per_kb.has_value());
}

TEST(RunFile, PrinterKilobytesWithAndWithoutTitles) {
  // 62424000000 B / 1024 / 60 s = 1016015.625 KB/s, printed "1016015.62" (round half to even);
  // back in Mbit/s: 1016015.62 x 8192 / 10^6.
  const double mbps = 1016015.62 * 8192 / 1e6;
  for (const std::string flags : {"-f K -l 60 -- -m 64K", "-P 0 -f K -l 60 -- -m 64K"}) {
    SCOPED_TRACE(flags);
    const NetperfReading r = netperf_of(parse_run_file(printed_netperf(flags), "p.txt").at(0));
    EXPECT_EQ(r.format, 'K');
    EXPECT_DOUBLE_EQ(r.throughput, 1016015.62);
    EXPECT_DOUBLE_EQ(r.throughput_mbps, mbps);
    EXPECT_FALSE(r.util_local_pct.has_value());
  }
}

TEST(RunFile, PrinterUnitsWithCpuTitles) {
  // The CPU titles print the unit as "%-8.8s/s": "10^9bits/s", "MBytes  /s".
  struct Case {
    const char* flags;
    char format;
    double printed, mbps;
  };
  // 62424000000 B / 60 s: 8.32 Gbit/s (8.3232); 992.20 MB/s (992.2027...) = 8323.20 Mbit/s x 2^20 / 10^6.
  for (const Case& c : {Case{"-c -C -f g -l 60 -- -m 64K", 'g', 8.32, 8320.0},
                        Case{"-c -C -f M -l 60 -- -m 64K", 'M', 992.20, 992.20 * 1048576 * 8 / 1e6}}) {
    SCOPED_TRACE(c.flags);
    const NetperfReading r = netperf_of(parse_run_file(printed_netperf(c.flags), "p.txt").at(0));
    EXPECT_EQ(r.format, c.format);
    EXPECT_DOUBLE_EQ(r.throughput, c.printed);
    EXPECT_DOUBLE_EQ(r.throughput_mbps, c.mbps);
    EXPECT_EQ(r.sd_remote_us_per_kb, 1.074);
  }
}

TEST(RunFile, PrinterVerbose2BlocksAreSkipped) {
  // -v 2 adds the alignment/bytes/sends/recvs block and the MSS block after the row; the next
  // command (another run) is read as usual.
  const std::string text = printed_netperf("-v 2 -c -C -l 60 -- -m 64K") +
                           printed_netperf("-P 0 -v 2 -l 60 -- -m 64K");
  ASSERT_NE(text.find("Segment"), std::string::npos);
  const auto runs = parse_run_file(text, "p.txt");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(netperf_of(runs[0]).sd_local_us_per_kb, 1.020);
  EXPECT_DOUBLE_EQ(netperf_of(runs[1]).throughput_mbps, 8323.20);
  EXPECT_EQ(netperf_of(runs[1]).line, runs[1].line + 1);
  EXPECT_EQ(runs[1].words, words_of("-P 0 -v 2 -l 60 -- -m 64K"));
}

TEST(RunFile, PrinterTerse) {
  for (const std::string flags : {"-v 0 -l 60", "-P 0 -v 0 -l 60", "-v 0 -f k -l 60"}) {
    SCOPED_TRACE(flags);
    const NetperfReading r = netperf_of(parse_run_file(printed_netperf(flags), "p.txt").at(0));
    EXPECT_TRUE(r.terse);
    EXPECT_DOUBLE_EQ(r.throughput_mbps, 8323.20);
    EXPECT_EQ(r.elapsed_s, 0.0);
  }
}

// --- netperf TCP_RR and TCP_MAERTS: real netperf 2.4.3 output --------------------------------

// The rows below are netperf 2.4.3's format strings (src/nettest_bsd.c) applied by hand, as
// printf prints them: send_tcp_rr's tput_fmt_1_line_1 "%-6d %-6d %-6d   %-6d  %-6.2f   %7.2f   %s\n",
// tput_fmt_1_line_2 "%-6d %-6d\n", cpu_fmt_1_line_1 "%-6d %-6d %-6d  %-6d %-6.2f  %-6.2f  %-6.2f
// %-6.2f %-6.3f  %-6.3f %s\n" and tput_fmt_0 "%7.2f %s\n"; send_tcp_maerts's tput_fmt_1 "%6d %6d
// %6d    %-6.2f   %7.2f   \n %s" and cpu_fmt_1 "%6d %6d %6d    %-6.2f     %7.2f   %-6.2f   %-6.2f
// %-6.3f  %-6.3f %s\n". The titles are tput_title and cpu_title verbatim.

/// send_tcp_rr with -P 1, no -c/-C: banner, tput_title, the row and the remote socket sizes.
constexpr const char* kRrTitles = R"RUN($ netperf -H 192.168.1.2 -t TCP_RR -l 10 -- -r 64,1024
TCP REQUEST/RESPONSE TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to 192.168.1.2 (192.168.1.2) port 0 AF_INET
Local /Remote
Socket Size   Request  Resp.   Elapsed  Trans.
Send   Recv   Size     Size    Time     Rate         
bytes  Bytes  bytes    bytes   secs.    per sec   

16384  87380  64       1024    10.00    24562.31   
16384  87380 
$ echo done
)RUN";

/// send_tcp_rr with -P 1 -c -C: cpu_title (% S: /proc/stat), cpu_fmt_1_line_1/2. 8 CPUs a host:
/// 12.45 % x 8 x 10^4 / 13718.45 Tr/s = 72.602 us/Tr, 11.98 %: 69.862.
constexpr const char* kRrCpuTitles = R"RUN(root@ionize:~# netperf -c -C -t TCP_RR -H 10.0.0.2 -l 10
TCP REQUEST/RESPONSE TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to 10.0.0.2 (10.0.0.2) port 0 AF_INET
Local /Remote
Socket Size   Request Resp.  Elapsed Trans.   CPU    CPU    S.dem   S.dem
Send   Recv   Size    Size   Time    Rate     local  remote local   remote
bytes  bytes  bytes   bytes  secs.   per sec  % S    % S    us/Tr   us/Tr

16384  87380  1       1      10.00   13718.45  12.45  11.98  72.602  69.862 
16384  87380 
)RUN";

TEST(RunFile, NetperfRrTitles) {
  const auto runs = parse_run_file(kRrTitles, "rr.txt");
  ASSERT_EQ(runs.size(), 1u);
  const NetperfReading& r = netperf_of(runs[0]);
  EXPECT_EQ(r.test, "TCP_RR");
  EXPECT_EQ(r.line, 8u);
  EXPECT_EQ(r.local_send_socket_bytes, 16384);
  EXPECT_EQ(r.local_recv_socket_bytes, 87380);
  EXPECT_EQ(r.request_bytes, 64);
  EXPECT_EQ(r.response_bytes, 1024);
  EXPECT_EQ(r.elapsed_s, 10.0);
  EXPECT_EQ(r.transaction_rate, 24562.31);
  EXPECT_EQ(r.remote_send_socket_bytes, 16384);
  EXPECT_EQ(r.remote_recv_socket_bytes, 87380);
  EXPECT_FALSE(r.util_local_pct || r.util_remote_pct || r.sd_local_us_per_tr || r.sd_remote_us_per_tr);
  EXPECT_FALSE(r.sd_local_us_per_kb || r.sd_remote_us_per_kb);
  EXPECT_EQ(r.throughput_mbps, 0.0);  // a transaction rate, not a throughput
  EXPECT_FALSE(r.terse);
}

TEST(RunFile, NetperfRrCpuTitles) {
  const NetperfReading r = netperf_of(parse_run_file(kRrCpuTitles, "rr.txt").at(0));
  EXPECT_EQ(r.line, 8u);
  EXPECT_EQ(r.request_bytes, 1);  // netperf's default -r 1,1
  EXPECT_EQ(r.response_bytes, 1);
  EXPECT_EQ(r.transaction_rate, 13718.45);
  EXPECT_EQ(r.util_local_pct, 12.45);
  EXPECT_EQ(r.util_remote_pct, 11.98);
  EXPECT_EQ(r.sd_local_us_per_tr, 72.602);
  EXPECT_EQ(r.sd_remote_us_per_tr, 69.862);
  EXPECT_FALSE(r.sd_local_us_per_kb.has_value());
  EXPECT_EQ(r.remote_recv_socket_bytes, 87380);
}

TEST(RunFile, NetperfRrRowsOnlyAndTerse) {
  // -P 0: the two row lines alone; -v 0: tput_fmt_0, the rate alone; -v 2: ksink_fmt's
  // alignment block (four numbers) after the rows is skipped; -c only: -1 for the remote side.
  const std::string text =
      "# netperf -P 0 -t TCP_RR -l 10 -- -r 64,1024\n"
      "16384  87380  64       1024    10.00    24562.31   \n"
      "16384  87380 \n"
      "# netperf -P 0 -v 0 -t tcp_rr -l 10\n"
      "13718.45 \n"
      "# netperf -P 0 -v 2 -c -t TCP_RR -l 10\n"
      "16384  87380  1       1      10.00   13718.45  12.45  -1.00  72.602  -1.000 \n"
      "16384  87380 \n"
      "Alignment      Offset\n"
      "Local  Remote  Local  Remote\n"
      "Send   Recv    Send   Recv\n"
      "    8      0       0      0\n";
  const auto runs = parse_run_file(text, "rr.txt");
  ASSERT_EQ(runs.size(), 3u);
  const NetperfReading& a = netperf_of(runs[0]);
  EXPECT_EQ(a.line, 2u);
  EXPECT_EQ(a.transaction_rate, 24562.31);
  EXPECT_EQ(a.remote_recv_socket_bytes, 87380);
  const NetperfReading& b = netperf_of(runs[1]);
  EXPECT_EQ(b.test, "TCP_RR");
  EXPECT_TRUE(b.terse);
  EXPECT_EQ(b.transaction_rate, 13718.45);
  EXPECT_EQ(b.request_bytes, 0);  // not printed at -v 0
  const NetperfReading& c = netperf_of(runs[2]);
  EXPECT_EQ(c.line, 7u);
  EXPECT_EQ(c.util_local_pct, 12.45);
  EXPECT_EQ(c.sd_local_us_per_tr, 72.602);
  EXPECT_FALSE(c.util_remote_pct.has_value());
  EXPECT_FALSE(c.sd_remote_us_per_tr.has_value());
}

TEST(RunFile, NetperfMaertsRealOutput) {
  // send_tcp_maerts 2.4.3: the -P 1 row without -c/-C ends "   \n " (a line of one blank, the
  // next prompt after it on the same line); with -c/-C 2.4.3's titles say "Send local / Recv
  // remote" (send_tcp_stream's), 2.4.5's "Recv local / Send remote": the same row either way.
  const std::string text =
      "$ netperf -H 10.0.0.2 -t TCP_MAERTS -l 10\n"
      "TCP MAERTS TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to 10.0.0.2 (10.0.0.2) port 0 AF_INET\n"
      "Recv   Send    Send                          \n"
      "Socket Socket  Message  Elapsed              \n"
      "Size   Size    Size     Time     Throughput  \n"
      "bytes  bytes   bytes    secs.    10^6bits/sec  \n"
      "\n"
      " 87380  16384  16384    10.00    7106.72   \n"
      " $ netperf -c -C -t TCP_MAERTS -H 10.0.0.2 -l 10 -- -m 64K\n"
      "TCP MAERTS TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to 10.0.0.2 (10.0.0.2) port 0 AF_INET\n"
      "Recv   Send    Send                          Utilization       Service Demand\n"
      "Socket Socket  Message  Elapsed              Recv     Send     Recv    Send\n"
      "Size   Size    Size     Time     Throughput  local    remote   local   remote\n"
      "bytes  bytes   bytes    secs.    10^6bits/s  % S      % S      us/KB   us/KB\n"
      "\n"
      " 87380  16384  65536    10.00      8323.20   12.96    13.64    1.020   1.074  \n"
      "$ netperf -P 0 -t TCP_MAERTS -f K -l 10\n"
      " 87380  16384  16384    10.00    1016015.62   \n"
      " ";
  const auto runs = parse_run_file(text, "maerts.txt");
  ASSERT_EQ(runs.size(), 3u);
  const NetperfReading& a = netperf_of(runs[0]);
  EXPECT_EQ(a.test, "TCP_MAERTS");
  EXPECT_EQ(a.line, 8u);
  EXPECT_EQ(a.recv_socket_bytes, 87380);  // netperf's (the receiver's) socket
  EXPECT_EQ(a.send_socket_bytes, 16384);  // netserver's
  EXPECT_EQ(a.send_message_bytes, 16384);
  EXPECT_DOUBLE_EQ(a.throughput_mbps, 7106.72);
  EXPECT_EQ(runs[1].line, 9u);  // the prompt after the row's one-blank line
  const NetperfReading& b = netperf_of(runs[1]);
  EXPECT_EQ(b.send_message_bytes, 65536);
  EXPECT_DOUBLE_EQ(b.throughput_mbps, 8323.20);
  EXPECT_EQ(b.util_local_pct, 12.96);  // netperf's host: the receiver
  EXPECT_EQ(b.sd_local_us_per_kb, 1.020);
  EXPECT_EQ(b.sd_remote_us_per_kb, 1.074);
  // 1016015.62 KB/s x 8192 / 10^6 Mbit/s.
  EXPECT_DOUBLE_EQ(netperf_of(runs[2]).throughput_mbps, 1016015.62 * 8192 / 1e6);
}

/// A TCP_RR as the simulation would report it (the figures of docs/cli.md's TCP_RR example):
/// 741600 transactions of 1 B each way in 10 s, 8 CPUs a host, 14.49 % busy each.
frontends::TcpStreamResult rr_result() {
  frontends::TcpStreamResult r;
  r.local_send_socket = 16384;
  r.local_recv_socket = 87380;
  r.remote_send_socket = 16384;
  r.remote_recv_socket = 87380;
  r.request_size = r.response_size = 1;
  r.transactions = 741600;
  r.bytes_sent = r.bytes_received = 741600;
  r.elapsed_s = 10.0;
  r.local_cpus = r.remote_cpus = 8;
  r.local_util_pct = r.remote_util_pct = 14.49;
  return r;
}

/// `hcasim netperf WORDS` output for `r`, as a run file: "$ netperf WORDS" and the output.
std::string printed_netperf(const std::string& words, const frontends::TcpStreamResult& r) {
  const frontends::NetperfOptions o = frontends::parse_netperf_args(words_of(words));
  return "$ netperf " + words + "\n" + frontends::format_netperf_output(o, r, frontends::netperf_figures(o, r));
}

TEST(RunFile, PrinterRrReadsBack) {
  // 741600 / 10 s = 74160.00 Tr/s; 14.49 % x 8 CPUs x 10^6 / 74160 = 15.631 us/Tr.
  for (const std::string flags : {"-t TCP_RR -l 10", "-P 0 -t TCP_RR -l 10", "-c -C -t TCP_RR -l 10",
                                  "-P 0 -c -C -t TCP_RR -l 10", "-v 2 -c -C -t TCP_RR -l 10",
                                  "-P 0 -v 2 -t TCP_RR -l 10 -- -r 1,1"}) {
    SCOPED_TRACE(flags);
    const std::string text = printed_netperf(flags, rr_result());
    const NetperfReading r = netperf_of(parse_run_file(text, "p.txt").at(0));
    EXPECT_EQ(r.test, "TCP_RR");
    EXPECT_EQ(r.transaction_rate, 74160.00);
    EXPECT_EQ(r.elapsed_s, 10.0);
    EXPECT_EQ(r.request_bytes, 1);
    EXPECT_EQ(r.response_bytes, 1);
    EXPECT_EQ(r.local_send_socket_bytes, 16384);
    EXPECT_EQ(r.local_recv_socket_bytes, 87380);
    EXPECT_EQ(r.remote_send_socket_bytes, 16384);
    EXPECT_EQ(r.remote_recv_socket_bytes, 87380);
    const bool cpu = flags.find("-c") != std::string::npos;
    EXPECT_EQ(r.util_local_pct, cpu ? std::optional<double>(14.49) : std::nullopt);
    EXPECT_EQ(r.sd_remote_us_per_tr, cpu ? std::optional<double>(15.631) : std::nullopt);
  }
  const NetperfReading terse = netperf_of(parse_run_file(printed_netperf("-v 0 -t TCP_RR -l 10", rr_result()), "p.txt").at(0));
  EXPECT_TRUE(terse.terse);
  EXPECT_EQ(terse.transaction_rate, 74160.00);
  // -r 64,3000: the row says 64 and 3000, as the command.
  frontends::TcpStreamResult sized = rr_result();
  sized.request_size = 64;
  sized.response_size = 3000;
  const NetperfReading s =
      netperf_of(parse_run_file(printed_netperf("-P 0 -t TCP_RR -l 10 -- -r 64,3000", sized), "p.txt").at(0));
  EXPECT_EQ(s.request_bytes, 64);
  EXPECT_EQ(s.response_bytes, 3000);
}

TEST(RunFile, PrinterMaertsReadsBack) {
  // t3_result() turned round: netserver sent 62424000000 B in 60 s, 8323.20 Mbit/s; hcasim
  // prints send_tcp_maerts's row, whose tput_fmt_1 ends in a line of one blank without a newline.
  frontends::TcpStreamResult r = t3_result();
  r.local_recv_socket = 87380;
  r.remote_send_socket = 16384;
  for (const std::string flags : {"-t TCP_MAERTS -l 60 -- -m 64K", "-P 0 -t TCP_MAERTS -l 60 -- -m 64K",
                                  "-c -C -t TCP_MAERTS -l 60 -- -m 64K", "-P 0 -v 2 -t TCP_MAERTS -l 60 -- -m 64K",
                                  "-v 0 -t TCP_MAERTS -l 60 -- -m 64K"}) {
    SCOPED_TRACE(flags);
    // A second command after it: its prompt follows the one blank, as on a terminal.
    const std::string text = printed_netperf(flags, r) + printed_netperf("-P 0 -l 60 -- -m 64K");
    const auto runs = parse_run_file(text, "p.txt");
    ASSERT_EQ(runs.size(), 2u);
    const NetperfReading& m = netperf_of(runs[0]);
    EXPECT_EQ(m.test, "TCP_MAERTS");
    EXPECT_DOUBLE_EQ(m.throughput_mbps, 8323.20);
    if (!m.terse) {
      EXPECT_EQ(m.recv_socket_bytes, 87380);
      EXPECT_EQ(m.send_socket_bytes, 16384);
      EXPECT_EQ(m.send_message_bytes, 65536);
    }
    if (flags.find("-c") != std::string::npos) {
      EXPECT_EQ(m.util_local_pct, 12.96);
      EXPECT_EQ(m.sd_local_us_per_kb, 1.020);
    }
    EXPECT_EQ(netperf_of(runs[1]).test, "TCP_STREAM");
    EXPECT_DOUBLE_EQ(netperf_of(runs[1]).throughput_mbps, 8323.20);
  }
}

// --- netperf formats of real runs --------------------------------------------------------------

TEST(RunFile, NetperfConfidenceNotAchieved) {
  // netperf 2.4's banner with -i/-I and its warning block (netlib.c display_confidence).
  const std::string text =
      "$ netperf -H tardy -i 3 -I 99,5\n"
      "TCP STREAM TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to tardy (15.244.44.58) port 0 "
      "AF_INET : +/-2.5% @ 99% conf.\n"
      "!!! WARNING\n"
      "!!! Desired confidence was not achieved within the specified iterations.\n"
      "!!! This implies that there was variability in the test environment that\n"
      "!!! must be investigated before going further.\n"
      "!!! Confidence intervals: Throughput      :  6.8%\n"
      "!!!                       Local CPU util  :  0.0%\n"
      "!!!                       Remote CPU util :  0.0%\n"
      "\n"
      "Recv   Send    Send\n"
      "Socket Socket  Message  Elapsed\n"
      "Size   Size    Size     Time     Throughput\n"
      "bytes  bytes   bytes    secs.    10^6bits/sec\n"
      "\n"
      " 32768  16384  16384    10.01      40.23\n";
  const NetperfReading r = netperf_of(parse_run_file(text, "ci.txt").at(0));
  EXPECT_EQ(r.confidence, "+/-2.5% @ 99% conf.");
  EXPECT_FALSE(r.confidence_achieved);
  EXPECT_EQ(r.line, 16u);
  EXPECT_EQ(r.recv_socket_bytes, 32768);
  EXPECT_EQ(r.elapsed_s, 10.01);
  EXPECT_DOUBLE_EQ(r.throughput_mbps, 40.23);

  // With -P 0 there is no banner, but the warning block still precedes the row.
  const std::string p0 =
      "# netperf -P 0 -H tardy -i 3\n"
      "!!! WARNING\n"
      "!!! Desired confidence was not achieved within the specified iterations.\n"
      "!!! Confidence intervals: Throughput      :  6.8%\n"
      "\n"
      " 32768  16384  16384    10.01      40.23\n";
  const NetperfReading q = netperf_of(parse_run_file(p0, "ci.txt").at(0));
  EXPECT_FALSE(q.confidence_achieved);
  EXPECT_FALSE(q.confidence.has_value());
  EXPECT_EQ(q.line, 6u);
}

// --- hcasim's own perftest printer, read back --------------------------------------------------

constexpr double kMhz = 1000.0;  // one cycle per ns

/// A latency point: posts at the given gaps (ns; at 1000 MHz also cycles, so each gap is a round
/// trip of gap/2000 us one way).
frontends::PerftestPoint lat_point(uint64_t bytes, const std::vector<double>& gaps_ns) {
  frontends::PerftestPoint p;
  p.bytes = bytes;
  p.iterations = gaps_ns.size() + 1;
  double t = 1000;
  p.tposted_ns.push_back(t);
  for (double g : gaps_ns) p.tposted_ns.push_back(t += g);
  return p;
}

/// A bw point: `n` WRs posted every `post_ns`, each completing `latency_ns` after its post.
frontends::PerftestPoint bw_point(uint64_t bytes, size_t n, double post_ns, double latency_ns) {
  frontends::PerftestPoint p;
  p.bytes = bytes;
  p.iterations = n;
  for (size_t i = 0; i < n; ++i) {
    p.tposted_ns.push_back(1000 + static_cast<double>(i) * post_ns);
    p.tcompleted_ns.push_back(p.tposted_ns.back() + latency_ns);
  }
  return p;
}

std::string printed_perftest(frontends::PerftestTest test, const std::string& words,
                             const frontends::PerftestResult& result) {
  const frontends::PerftestOptions o = frontends::parse_perftest_args(test, words_of(words));
  return "# " + std::string(frontends::perftest_tool_name(test)) + " " + words + "\n" +
         frontends::format_perftest_output(o, result, kMhz);
}

const std::vector<double> kGaps = {2000, 2200, 2000, 2400, 2060, 2000, 9000, 2100, 3000, 2240};

TEST(RunFile, PrinterLatencyClassicAndExtended) {
  frontends::PerftestResult result;
  result.points = {lat_point(2, kGaps), lat_point(64, kGaps)};
  // Sorted round trips (cycles): 2000 2000 2000 2060 2100 2200 2240 2400 3000 9000. perftest
  // keeps the first 8: t_min 2000/2000 = 1.00 us; t_max is delta[8], 3000/2000 = 1.50; the
  // median of 8 is (2060 + 2100)/2 = 2080 -> 1.04; the average 17000/8/2000 = 1.0625 -> "1.06".
  for (const char* columns : {"classic", "extended"}) {
    SCOPED_TRACE(columns);
    const std::string words = std::string("-a -n 11 --columns ") + columns;
    const std::string text = printed_perftest(frontends::PerftestTest::WriteLat, words, result);
    const auto runs = parse_run_file(text, "p.txt");
    ASSERT_EQ(runs.size(), 1u);
    const PerftestReading& r = perftest_of(runs[0]);
    ASSERT_EQ(r.latency.size(), 2u);
    EXPECT_EQ(r.extended, std::string(columns) == "extended");
    EXPECT_FALSE(r.cycles);
    for (size_t i = 0; i < 2; ++i) {
      const LatencyRow& l = r.latency[i];
      const frontends::PerftestLatFigures f = frontends::perftest_lat_figures(result.points[i], kMhz);
      EXPECT_EQ(l.bytes, i == 0 ? 2u : 64u);
      EXPECT_EQ(l.iterations, 11u);
      EXPECT_DOUBLE_EQ(l.t_min, 1.00);
      EXPECT_DOUBLE_EQ(l.t_max, 1.50);
      EXPECT_DOUBLE_EQ(l.t_typical, 1.04);
      EXPECT_NEAR(l.t_typical, f.t_typical_us, 0.005);
      if (r.extended) {
        EXPECT_DOUBLE_EQ(*l.t_avg, 1.06);
        EXPECT_NEAR(*l.t_avg, f.t_avg_us, 0.005);
        EXPECT_NEAR(*l.t_stdev, f.t_stdev_us, 0.005);
        EXPECT_NEAR(*l.p99, f.t_p99_us, 0.005);
        EXPECT_NEAR(*l.p999, f.t_p99_9_us, 0.005);
      } else {
        EXPECT_FALSE(l.t_avg || l.t_stdev || l.p99 || l.p999);
      }
    }
    EXPECT_EQ(r.latency[1].line, r.latency[0].line + 1);
    EXPECT_EQ(r.header_line + 1, r.latency[0].line);
  }
}

TEST(RunFile, PrinterBandwidthMegabytesAndGigabits) {
  frontends::PerftestResult result;
  // 20 WRs of 64 KB, one every 500 ns, each done 1000 ns later: the last completion is at
  // 19 x 500 + 1000 = 10500 cycles after the first post.
  result.points = {bw_point(65536, 20, 500, 1000)};
  const frontends::PerftestBwFigures f = frontends::perftest_bw_figures(result.points[0], kMhz, 1, false);
  // Average: 65536 x 20 B / 10.5 us = 124.83 GB/s = 119047.62 MB/s (2^20 B).
  ASSERT_NEAR(f.bw_avg_mib_s, 65536.0 * 20 / 10.5e-6 / 1048576, 1e-6);
  for (bool gbits : {false, true}) {
    SCOPED_TRACE(gbits);
    const std::string words = std::string("-s 65536 -n 20 -Q 1") + (gbits ? " --report_gbits" : "");
    const auto runs =
        parse_run_file(printed_perftest(frontends::PerftestTest::WriteBw, words, result), "p.txt");
    const PerftestReading& r = perftest_of(runs.at(0));
    ASSERT_EQ(r.bandwidth.size(), 1u);
    EXPECT_TRUE(r.latency.empty());
    EXPECT_EQ(r.bandwidth_unit, gbits ? BandwidthUnit::Gbps : BandwidthUnit::MiBps);
    const BandwidthRow& b = r.bandwidth[0];
    EXPECT_EQ(b.bytes, 65536u);
    EXPECT_EQ(b.iterations, 20u);
    EXPECT_NEAR(b.bw_average, gbits ? f.bw_avg_gbit_s : f.bw_avg_mib_s, 0.005);
    EXPECT_NEAR(b.bw_peak, gbits ? f.bw_peak_gbit_s : f.bw_peak_mib_s, 0.005);
    // Canonical Gbit/s from either unit: 65536 x 20 x 8 bit / 10.5 us = 998.6 Gbit/s.
    EXPECT_NEAR(b.bw_average_gbit_s, 65536.0 * 20 * 8 / 10.5e-6 / 1e9, gbits ? 0.005 : 0.0001);
    EXPECT_NEAR(b.msg_rate_mpps, 20 / 10.5, 0.0000005);
  }
}

TEST(RunFile, PrinterSmallGigabitsSixDecimals) {
  // Below 0.1 Gb/s perftest 4.5 prints six decimals (REPORT_FMT_EXT): 2 B x 20 / 10.5 us =
  // 0.030476 Gbit/s.
  frontends::PerftestResult result;
  result.points = {bw_point(2, 20, 500, 1000)};
  const std::string text = printed_perftest(frontends::PerftestTest::SendBw,
                                            "-s 2 -n 20 -Q 1 --report_gbits --columns extended",
                                            result);
  const BandwidthRow b = perftest_of(parse_run_file(text, "p.txt").at(0)).bandwidth.at(0);
  EXPECT_DOUBLE_EQ(b.bw_average, 0.030476);
  EXPECT_DOUBLE_EQ(b.bw_average_gbit_s, 0.030476);
}

// --- perftest formats of real runs -------------------------------------------------------------

TEST(RunFile, PerftestCycles) {
  // perftest 4.5 with -C keeps "[usec]" in its header: the command says the values are cycles.
  const std::string with_flag =
      "$ ib_write_lat -aC -n 1000\n"
      " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n"
      " 2       1000          1830.00        5012.00      1902.00\n";
  const auto runs = parse_run_file(with_flag, "c.txt");
  EXPECT_TRUE(perftest_of(runs.at(0)).cycles);
  EXPECT_EQ(runs[0].words, (std::vector<std::string>{"-a", "-n", "1000"}));
  EXPECT_DOUBLE_EQ(perftest_of(runs[0]).latency.at(0).t_typical, 1902.0);

  const std::string long_flag = "$ ib_write_lat --report-cycles -s 2\n" +
                                with_flag.substr(with_flag.find('\n') + 1);
  const auto long_runs = parse_run_file(long_flag, "c.txt");
  EXPECT_TRUE(perftest_of(long_runs.at(0)).cycles);
  EXPECT_EQ(long_runs[0].words, (std::vector<std::string>{"-s", "2"}));

  // A header that says [cycles] is read as cycles without the flag.
  const std::string header =
      "$ ib_write_lat -s 2\n"
      " #bytes #iterations    t_min[cycles]    t_max[cycles]  t_typical[cycles]\n"
      " 2       1000          1830.00        5012.00      1902.00\n";
  EXPECT_TRUE(perftest_of(parse_run_file(header, "c.txt").at(0)).cycles);

  const std::string plain = "$ ib_write_lat -s 2\n" + with_flag.substr(with_flag.find('\n') + 1);
  EXPECT_FALSE(perftest_of(parse_run_file(plain, "c.txt").at(0)).cycles);

  // As getopt reads it, the word after an option that takes a value is that value: "-d -C"
  // names a device "-C" and is no -C flag.
  const std::string device = "$ ib_write_lat -s 2 -d -C\n" + with_flag.substr(with_flag.find('\n') + 1);
  const auto device_runs = parse_run_file(device, "c.txt");
  EXPECT_FALSE(perftest_of(device_runs.at(0)).cycles);
  EXPECT_EQ(device_runs[0].words, (std::vector<std::string>{"-s", "2", "-d", "-C"}));
}

TEST(RunFile, PerftestMebibyteHeaderOfLaterReleases) {
  const std::string text =
      "$ ib_send_bw -s 65536 -n 5000\n"
      " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]\n"
      " 65536      5000             11578.25            11576.12\t\t   0.185218\n";
  const PerftestReading r = perftest_of(parse_run_file(text, "m.txt").at(0));
  EXPECT_EQ(r.bandwidth_unit, BandwidthUnit::MiBps);
  EXPECT_DOUBLE_EQ(r.bandwidth.at(0).bw_peak, 11578.25);
  EXPECT_DOUBLE_EQ(r.bandwidth[0].bw_average_gbit_s, 11576.12 * 1048576 * 8 / 1e9);
  EXPECT_DOUBLE_EQ(r.bandwidth[0].msg_rate_mpps, 0.185218);
}

// --- perftest 4.5's other tools -----------------------------------------------------------------

/// tests/golden/ib_read_lat.tesh's output of `hcasim ib_read_lat` (perftest 4.5's print_report_lat:
/// READ's latency is the whole round trip, rtt_factor 1), verbatim.
constexpr const char* kReadLat = R"(# ib_read_lat
---------------------------------------------------------------------------------------
                    RDMA_Read Latency Test
 Dual-port       : OFF		Device         : mlx4_0
 Number of qps   : 1		Transport type : IB
 Connection type : RC		Using SRQ      : OFF
 PCIe relax order: ON
 ibv_wr* API     : OFF
 TX depth        : 1
 Mtu             : 2048[B]
 Link type       : IB
 Outstand reads  : 16
 rdma_cm QPs	 : OFF
 Data ex. method : Ethernet
---------------------------------------------------------------------------------------
 local address: LID 0x01 QPN 0x0048 PSN 0x5cd429 RKey 0x000100 VAddr 0x007f4ca97dc000
 remote address: LID 0x02 QPN 0x0048 PSN 0x8cd95e RKey 0x000100 VAddr 0x007f4410b12000
---------------------------------------------------------------------------------------
 #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]
 2       1000          2.85           2.90         2.90   
---------------------------------------------------------------------------------------
)";

TEST(RunFile, PerftestLatencyToolsOfEveryVerb) {
  // The rows of tests/golden/ib_send_lat.tesh, ib_read_lat.tesh and ib_atomic_lat.tesh, each under
  // its command (the banner and address lines of the golden are in kReadLat; the reader skips
  // them, so the others keep only the table).
  const std::string text = std::string(kReadLat) +
                           "$ ib_send_lat\n"
                           " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n"
                           " 2       1000          1.39           1.52         1.42   \n"
                           "---------------------------------------------------------------------------------------\n"
                           "$ ib_atomic_lat -A CMP_AND_SWAP\n"
                           "                    Atomic CMP_AND_SWAP Latency Test\n"
                           " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n"
                           " 8       1000          4.26           4.31         4.31   \n";
  const auto runs = parse_run_file(text, "lat.txt");
  ASSERT_EQ(runs.size(), 3u);
  struct Expected {
    const char* tool;
    uint32_t line;
    uint64_t bytes;
    double t_min, t_max, t_typical;
  };
  const Expected expected[] = {{"ib_read_lat", 1, 2, 2.85, 2.90, 2.90},
                               {"ib_send_lat", 22, 2, 1.39, 1.52, 1.42},
                               {"ib_atomic_lat", 26, 8, 4.26, 4.31, 4.31}};
  for (size_t i = 0; i < runs.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(runs[i].tool, expected[i].tool);
    EXPECT_EQ(runs[i].line, expected[i].line);
    const PerftestReading& r = perftest_of(runs[i]);
    ASSERT_EQ(r.latency.size(), 1u);
    EXPECT_TRUE(r.bandwidth.empty());
    EXPECT_FALSE(r.cycles);
    const LatencyRow& l = r.latency[0];
    EXPECT_EQ(l.bytes, expected[i].bytes);
    EXPECT_EQ(l.iterations, 1000u);
    EXPECT_DOUBLE_EQ(l.t_min, expected[i].t_min);
    EXPECT_DOUBLE_EQ(l.t_max, expected[i].t_max);
    EXPECT_DOUBLE_EQ(l.t_typical, expected[i].t_typical);
  }
  EXPECT_EQ(perftest_of(runs[0]).header_line, 19u);
  EXPECT_EQ(perftest_of(runs[0]).latency[0].line, 20u);
  EXPECT_EQ(runs[2].words, (std::vector<std::string>{"-A", "CMP_AND_SWAP"}));
}

TEST(RunFile, PerftestBandwidthToolsOfEveryVerb) {
  // The tables of tests/golden/ib_read_bw.tesh and ib_atomic_bw.tesh (perftest 4.5's REPORT_FMT:
  // the tab before MsgRate as printed).
  const std::string text =
      "$ ib_read_bw\n"
      "                    RDMA_Read BW Test\n"
      " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
      " 65536      1000           1394.78            1394.78\t\t   0.022316\n"
      "---------------------------------------------------------------------------------------\n"
      "$ ib_atomic_bw\n"
      " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
      " 8          1000           8.17               8.17   \t\t   1.070980\n";
  const auto runs = parse_run_file(text, "bw.txt");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].tool, "ib_read_bw");
  EXPECT_EQ(runs[1].tool, "ib_atomic_bw");
  const BandwidthRow read = perftest_of(runs[0]).bandwidth.at(0);
  EXPECT_EQ(read.bytes, 65536u);
  EXPECT_EQ(read.iterations, 1000u);
  EXPECT_DOUBLE_EQ(read.bw_peak, 1394.78);
  EXPECT_DOUBLE_EQ(read.bw_average, 1394.78);
  // 1394.78 MB/s x 2^20 B x 8 bit = 11.700 Gbit/s.
  EXPECT_DOUBLE_EQ(read.bw_average_gbit_s, 1394.78 * 1048576 * 8 / 1e9);
  EXPECT_NEAR(read.bw_average_gbit_s, 11.7002, 0.0001);
  EXPECT_DOUBLE_EQ(read.msg_rate_mpps, 0.022316);
  const BandwidthRow atomic = perftest_of(runs[1]).bandwidth.at(0);
  EXPECT_EQ(atomic.bytes, 8u);
  EXPECT_DOUBLE_EQ(atomic.bw_average, 8.17);
  // 8.17 MB/s = 8.17 x 2^20 / 8 B = 1.0709 M atomics/s: the printed MsgRate, 1.070980.
  EXPECT_NEAR(atomic.bw_average * 1048576 / 8 / 1e6, atomic.msg_rate_mpps, 0.0007);
  EXPECT_DOUBLE_EQ(atomic.msg_rate_mpps, 1.070980);
}

TEST(RunFile, PerftestSamplesBeforeTheReport) {
  // tests/golden/ib_read_lat_unsorted.tesh (-U: the round trips in the order measured) and
  // ib_send_lat_histogram_cycles.tesh (-H -C with 4.5's columns: the sorted samples in cycles).
  const std::string text =
      "$ ib_read_lat -n 12 -U\n"
      " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n"
      "#, usec\n"
      "1, 2.85021\n"
      "2, 2.90043\n"
      "---------------------------------------------------------------------------------------\n"
      " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n"
      " 2       12          2.85           2.90         2.90   \n"
      "---------------------------------------------------------------------------------------\n"
      "$ ib_send_lat -n 12 -H -C\n"
      " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% "
      "percentile[usec]   99.9% percentile[usec] \n"
      "#, cycles\n"
      "1, 3247\n"
      "2, 3305\n"
      "---------------------------------------------------------------------------------------\n"
      " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% "
      "percentile[usec]   99.9% percentile[usec] \n"
      " 2       12          3247.00        3305.50      3305.50  \t       3298.89     \t17.92  \t\t3305.50 "
      "\t\t3305.50\n";
  const auto runs = parse_run_file(text, "u.txt");
  ASSERT_EQ(runs.size(), 2u);
  const PerftestReading& u = perftest_of(runs[0]);
  EXPECT_EQ(u.header_line, 7u);
  ASSERT_EQ(u.latency.size(), 1u);
  EXPECT_EQ(u.latency[0].iterations, 12u);
  EXPECT_DOUBLE_EQ(u.latency[0].t_min, 2.85);
  EXPECT_DOUBLE_EQ(u.latency[0].t_typical, 2.90);
  EXPECT_FALSE(u.cycles);
  const PerftestReading& h = perftest_of(runs[1]);
  EXPECT_TRUE(h.cycles);
  EXPECT_TRUE(h.extended);
  EXPECT_EQ(runs[1].words, (std::vector<std::string>{"-n", "12", "-H"}));
  ASSERT_EQ(h.latency.size(), 1u);
  EXPECT_DOUBLE_EQ(h.latency[0].t_typical, 3305.50);
  EXPECT_DOUBLE_EQ(*h.latency[0].t_avg, 3298.89);
  EXPECT_DOUBLE_EQ(*h.latency[0].p999, 3305.50);
}

TEST(RunFile, PrinterReadLatencyIsTheWholeRoundTrip) {
  // hcasim's printer for ib_read_lat read back: READ's rtt_factor is 1, so a round trip of
  // 2000 cycles at 1000 MHz prints as 2.00 us (ib_write_lat's 1.00). Sorted round trips of kGaps
  // without the two largest: min 2000, max delta[8] 3000, median (2060 + 2100) / 2 = 2080.
  frontends::PerftestResult result;
  result.points = {lat_point(2, kGaps)};
  const std::string text = printed_perftest(frontends::PerftestTest::ReadLat, "-s 2 -n 11", result);
  const auto runs = parse_run_file(text, "p.txt");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].tool, "ib_read_lat");
  const LatencyRow& l = perftest_of(runs[0]).latency.at(0);
  EXPECT_DOUBLE_EQ(l.t_min, 2.00);
  EXPECT_DOUBLE_EQ(l.t_max, 3.00);
  EXPECT_DOUBLE_EQ(l.t_typical, 2.08);
}

// --- session rules -----------------------------------------------------------------------------

TEST(RunFile, PromptsPrefixesAndSettings) {
  const std::string text =
      "notes before the first command, and a row that is not output:\n"
      " 87380  16384  65536    60.00      1.00\n"
      "# hcasim: --set sdp.recv_poll=0 --set=ib.speed=QDR\n"
      "[root@x ~]# netperf -P 0 -l 60\n"
      " 87380  16384  16384    60.00      100.00\n"
      "user@host:~$ echo 1 > /sys/module/ib_sdp/parameters/sdp_zcopy_thresh\n"
      "user@host:~$ sudo -E LD_PRELOAD=libsdp.so taskset -c 1 netperf -P 0 -l 60\n"
      " 87380  16384  16384    60.00      200.00\n"
      "$ echo $LD_PRELOAD\n"
      "libsdp.so\n"
      "echo 0 >/sys/module/ib_sdp/sdp_zcopy_thresh\n"
      "$ env X=1 /usr/local/bin/netperf -P 0 -l 60\n"
      "\n"
      " 87380  16384  16384    60.00      300.00\n"
      "netperf is slow here, and the next line is a bare command\n"
      "netperf -P 0 -l 60\r\n"
      " 87380  16384  16384    60.00      400.00\r\n"
      "$ echo 64 | sudo tee /sys/module/ib_sdp/sdp_zcopy_thresh\n"
      "# hcasim: --platform infinihost3-pcie1x8 --set ib.speed=SDR\n"
      "ionize:~# ./netperf -P 0 -l 60\n"
      " 87380  16384  16384    60.00      500.00\n"
      "$\n"
      " 1 2 3 4 5 6 7 8 9\n";
  const auto runs = parse_run_file(text, "s.txt");
  ASSERT_EQ(runs.size(), 5u);
  const std::vector<uint32_t> lines = {4, 7, 12, 16, 20};
  const std::vector<double> mbps = {100, 200, 300, 400, 500};
  const std::vector<std::vector<std::string>> sets = {
      {"sdp.recv_poll=0", "ib.speed=QDR"},
      {"sdp.recv_poll=0", "ib.speed=QDR", "sdp.zcopy_thresh=1"},
      {"sdp.recv_poll=0", "ib.speed=QDR", "sdp.zcopy_thresh=0"},
      {"sdp.recv_poll=0", "ib.speed=QDR", "sdp.zcopy_thresh=0"},
      {"sdp.recv_poll=0", "sdp.zcopy_thresh=64", "ib.speed=SDR"}};
  for (size_t i = 0; i < runs.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(runs[i].line, lines[i]);
    EXPECT_EQ(runs[i].tool, "netperf");
    EXPECT_EQ(runs[i].words, (std::vector<std::string>{"-P", "0", "-l", "60"}));
    EXPECT_DOUBLE_EQ(netperf_of(runs[i]).throughput_mbps, mbps[i]);
    EXPECT_EQ(runs[i].set, sets[i]);
    EXPECT_EQ(runs[i].platform.has_value(), i == 4);
  }
  EXPECT_EQ(runs[1].command, "sudo -E LD_PRELOAD=libsdp.so taskset -c 1 netperf -P 0 -l 60");
  EXPECT_EQ(runs[2].command, "env X=1 /usr/local/bin/netperf -P 0 -l 60");
  EXPECT_EQ(runs[3].command, "netperf -P 0 -l 60");
  EXPECT_EQ(runs[4].platform, "infinihost3-pcie1x8");
}

TEST(RunFile, NoCommandNoRuns) {
  EXPECT_TRUE(parse_run_file("", "e.txt").empty());
  EXPECT_TRUE(parse_run_file("just prose\n# ls\nfile\n", "e.txt").empty());
}

// --- errors ------------------------------------------------------------------------------------

TEST(RunFileErrors, NetperfOutputEndsBeforeRow) {
  EXPECT_EQ(error_of("intro\n# netperf -P 0 -l 60\n\n# echo done\n"),
            "runs.txt:2: netperf output ends before its result row");
  EXPECT_EQ(error_of("$ netperf -l 60\nTCP STREAM TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET\n"),
            "runs.txt:1: netperf output ends before its column titles ('bytes  bytes   bytes    "
            "secs. ...'; the command has no -P 0)");
  EXPECT_EQ(error_of(printed_netperf("-l 60").substr(0, printed_netperf("-l 60").rfind(" 87380"))),
            "runs.txt:1: netperf output ends before its result row");
}

TEST(RunFileErrors, NetperfRowFields) {
  EXPECT_EQ(error_of("# netperf -C -c -P 0 -l 60\n  87380 16384 16384 60.00 7106.72 13.32 14.87 1.228\n"),
            "runs.txt:2: netperf result row has 8 fields, expected 9 (the command has -c/-C: sizes, "
            "elapsed time, throughput, two utilisations and two service demands)");
  EXPECT_EQ(error_of("# netperf -P 0 -l 60\n\n\n  87380 16384 16384 60.00 7106.72x\n"),
            "runs.txt:4: netperf result row: column 5 (Throughput) '7106.72x' is not a number");
  EXPECT_EQ(error_of("# netperf -c -P 0 -l 60\n  87380 16384 16384 60.00 7106.72 13.32 - 1.228 -1\n"),
            "runs.txt:2: netperf result row: column 7 (Utilization Recv remote) '-' is not a "
            "number");
}

TEST(RunFileErrors, NetperfUnreadableLayouts) {
  EXPECT_EQ(error_of("# netperf -v 0 -c -l 60\n 1.020 S\n"),
            "runs.txt:1: netperf -v 0 with -c/-C prints only a service demand, not the "
            "throughput: hcasim cannot read that run (repeat it without -v 0)");
  EXPECT_EQ(error_of("$ netperf -l 1\nbytes  bytes   bytes    secs.    10^6bytes/sec\n"),
            "runs.txt:2: netperf column titles: unknown throughput unit '10^6bytes/sec' (netperf "
            "prints 10^3bits, 10^6bits, 10^9bits, KBytes, MBytes or GBytes)");
}

TEST(RunFileErrors, BadCommands) {
  EXPECT_EQ(error_of("text\n\n  # netperf -Z -P 0\n 1 2 3 4 5\n"),
            "runs.txt:3: netperf: unknown option -Z");
  EXPECT_EQ(error_of("# netperf -P 0 -t UDP_STREAM\n"),
            "runs.txt:1: netperf: -t UDP_STREAM: hcasim simulates TCP_STREAM, TCP_MAERTS and TCP_RR");
  EXPECT_EQ(error_of("x\n$ ib_write_lat --frobnicate\n"),
            "runs.txt:2: ib_write_lat: unknown option --frobnicate");
  EXPECT_EQ(error_of("$ ib_write_lat -l 4 -s 2\n"),
            "runs.txt:1: ib_write_lat: -l (--post_list): perftest flag not supported by "
            "hcasim ib_write_lat");
  EXPECT_EQ(error_of("$ netperf -H 'host -P 0\n"),
            "runs.txt:1: netperf: unterminated single quote in: netperf -H 'host -P 0");
  // hcasim's options naming the machine or its settings are directives, not command words (a
  // --platform here was silently overridden by calibrate's).
  EXPECT_EQ(error_of("# netperf -P 0 --platform infinihost3-pcie1x8 -- -m 1M\n"),
            "runs.txt:1: netperf: --platform is hcasim's option, not netperf's: give it as a '# hcasim: "
            "--platform ...' line before the command");
  EXPECT_EQ(error_of("# ib_write_lat -s 2 --set=cpu.cqe=5\n"),
            "runs.txt:1: ib_write_lat: --set is hcasim's option, not ib_write_lat's: give it as a '# hcasim: "
            "--set ...' line before the command");
  EXPECT_EQ(error_of("# netperf -P 0 --remote-platform zx1-rx4640-pcix\n"),
            "runs.txt:1: netperf: --remote-platform: the runs of a run file are between two of the machine it "
            "describes ('# hcasim: --platform')");
}

TEST(RunFileErrors, UnrecognisedTool) {
  const std::string tools =
      "hcasim reads runs of netperf, ib_write_lat, ib_write_bw, ib_send_lat, ib_send_bw, ib_read_lat, ib_read_bw, "
      "ib_atomic_lat, ib_atomic_bw, ibv_rc_pingpong, ibv_uc_pingpong, ibv_ud_pingpong and ibv_srq_pingpong only";
  EXPECT_EQ(error_of("a\nb\n# ib_read_dc_lat -a\n"), "runs.txt:3: ib_read_dc_lat: " + tools);
  EXPECT_EQ(error_of("$ taskset -c 2 /usr/bin/raw_ethernet_bw -s 64\n"), "runs.txt:1: raw_ethernet_bw: " + tools);
}

TEST(RunFileErrors, PerftestFlagsRefusedAsTheToolRefusesThem) {
  // Each tool's command is read with its own parser: what `hcasim TOOL` refuses (golden
  // bad_atomic_size, bad_read_inline, bad_bw_cycles, hostile ib_read_lat_multiple_qps), a run
  // file refuses at the command's line.
  EXPECT_EQ(error_of("$ ib_atomic_bw -s 64\n"),
            "runs.txt:1: ib_atomic_bw: -s: 64 B: perftest's atomic tests move 8 B (message size cannot be changed "
            "for atomic tests)");
  EXPECT_EQ(error_of("x\n$ ib_read_lat -I 64\n"),
            "runs.txt:2: ib_read_lat: -I: perftest's inline feature is not available on READ/atomic tests");
  EXPECT_EQ(error_of("$ ib_read_bw -C -s 65536\n"),
            "runs.txt:1: ib_read_bw: -C: perftest's cycles report is for the latency tests only");
  EXPECT_EQ(error_of("$ ib_atomic_lat -q 2\n"),
            "runs.txt:1: ib_atomic_lat: -q: multiple QPs are for perftest's bw tests only (ib_atomic_lat has one QP)");
  // A row of another size than the atomic tests' 8 B.
  EXPECT_EQ(error_of("$ ib_atomic_lat -n 1000\n #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n"
                     " 2       1000          4.26           4.31         4.31\n"),
            "runs.txt:3: perftest row: 2 B differs from the command's -s 8 (line 1)");
  // -U's samples without the report after them.
  EXPECT_EQ(error_of("$ ib_read_lat -n 12 -U\n #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n"
                     "#, usec\n1, 2.85021\n"),
            "runs.txt:1: ib_read_lat output ends in its samples (-U / -H), before the results table");
}

TEST(RunFileErrors, PerftestTables) {
  EXPECT_EQ(error_of("# ib_write_lat -s 2\nCouldn't connect to 10.0.0.1:18515\n"),
            "runs.txt:1: ib_write_lat output ends before its results table (a '#bytes "
            "#iterations ...' header and its rows)");
  EXPECT_EQ(error_of("# ib_write_lat -s 2\n #bytes #iterations    t_min[usec]    t_max[usec]  "
                     "t_typical[usec]\n-----\n"),
            "runs.txt:2: ib_write_lat results table has no rows");
  const std::string header =
      "# ib_write_lat -s 2\n #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n";
  EXPECT_EQ(error_of(header + " 2       1000          0.74           131.62\n"),
            "runs.txt:3: perftest row has 4 fields, expected 5 (the header of line 2)");
  EXPECT_EQ(error_of(header + " 2       1000          0.74           1,31.62       0.79\n"),
            "runs.txt:3: perftest row: column 4 (t_max[usec]) '1,31.62' is not a number");
  EXPECT_EQ(error_of(header + " 2.5     1000          0.74           131.62       0.79\n"),
            "runs.txt:3: perftest row: column 1 (#bytes) '2.5' is not a whole number");
  EXPECT_EQ(error_of(header + " 2       1000          -0.74          131.62       0.79\n"),
            "runs.txt:3: perftest row: column 3 (t_min[usec]) '-0.74' is negative: not a value perftest prints");
  // A median outside [t_min, t_max]: perftest's t_typical is a sample of the sorted run.
  EXPECT_EQ(error_of(header + " 2       1000          9.00           131.62       0.79\n"),
            "runs.txt:3: perftest row: t_typical 0.79 is not between t_min 9 and t_max 131.62: not a row perftest "
            "prints");
  EXPECT_EQ(error_of(header + " 2       1000          0.74           0.75         0.79\n"),
            "runs.txt:3: perftest row: t_typical 0.79 is not between t_min 0.74 and t_max 0.75: not a row perftest "
            "prints");
}

TEST(RunFileErrors, PerftestHeaders) {
  EXPECT_EQ(error_of("# ib_write_bw -s 2\n #bytes #iterations    t_min[usec]    t_max[usec]  "
                     "t_typical[usec]\n 2 1000 1 2 3\n"),
            "runs.txt:2: perftest table header: column 't_min[usec]' belongs to a latency table, "
            "not ib_write_bw's");
  EXPECT_EQ(error_of("# ib_write_lat -s 2\n #bytes #iterations    t_min[usec]    t_median[usec]\n"),
            "runs.txt:2: perftest table header: unrecognised column 't_median[usec]'");
  EXPECT_EQ(error_of("# ib_write_lat -s 2\n #bytes #iterations    t_min[usec]    t_typical[usec]\n"),
            "runs.txt:2: perftest table header: no t_max column");
  EXPECT_EQ(error_of("# ib_write_bw -s 2\n #bytes     #iterations    BW peak[KB/sec]    BW "
                     "average[KB/sec]   MsgRate[Mpps]\n"),
            "runs.txt:2: perftest table header: column 'BW peak[KB/sec]': unit 'KB/sec' is not "
            "MB/sec, MiB/sec or Gb/sec");
}

TEST(RunFileErrors, Settings) {
  EXPECT_EQ(error_of("# hcasim: --set sdp.zcopy_thresh\n"),
            "runs.txt:1: hcasim directive: --set: 'sdp.zcopy_thresh' is not key=value");
  EXPECT_EQ(error_of("\n# hcasim: --seed 3\n"),
            "runs.txt:2: hcasim directive: unknown option '--seed' (a directive is '# hcasim: "
            "--set key=value' or '# hcasim: --platform NAME')");
  EXPECT_EQ(error_of("# hcasim: --set\n"), "runs.txt:1: hcasim directive: --set: missing value");
  EXPECT_EQ(error_of("# netperf -P 0\n 1 2 3 4 5\n# echo on > /sys/module/ib_sdp/sdp_zcopy_thresh\n"),
            "runs.txt:3: sdp_zcopy_thresh: 'on' is not a whole number");
}

TEST(RunFile, AppendRedirectAndDirectiveWithoutSpace) {
  // ">>" writes a sysfs parameter as ">" does; "#hcasim:" is a directive as "# hcasim:" is.
  const auto runs = parse_run_file("# echo 0 >> /sys/module/ib_sdp/sdp_zcopy_thresh\n"
                                   "#hcasim: --set ib.speed=QDR\n"
                                   "# echo 1 >>/sys/module/ib_sdp/sdp_zcopy_thresh\n"
                                   "# netperf -P 0 -l 60\n"
                                   " 87380  16384  16384    60.00      100.00\n",
                                   "a.txt");
  ASSERT_EQ(runs.size(), 1u);
  // The later zcopy value replaces the earlier one, in its own place: last.
  EXPECT_EQ(runs[0].set, (std::vector<std::string>{"ib.speed=QDR", "sdp.zcopy_thresh=1"}));
  // A bare ">>" with no path is no sysfs write: an ignored command, not a crash.
  EXPECT_EQ(parse_run_file("$ echo 0 >>\n", "a.txt").size(), 0u);
}

TEST(RunFileErrors, ZcopyThresholdSetSomeOtherWay) {
  const std::string what =
      ": a command that sets sdp_zcopy_thresh in a form hcasim does not read (write 'echo N > "
      "/sys/module/ib_sdp/sdp_zcopy_thresh' or '# hcasim: --set sdp.zcopy_thresh=N')";
  EXPECT_EQ(error_of("$ sudo sh -c \"echo 1 > /sys/module/ib_sdp/parameters/sdp_zcopy_thresh\"\n"),
            "runs.txt:1" + what);
  EXPECT_EQ(error_of("\n# modprobe ib_sdp sdp_zcopy_thresh=1\n"), "runs.txt:2" + what);
  EXPECT_EQ(error_of("# echo -n 1 > /sys/module/ib_sdp/sdp_zcopy_thresh\n"), "runs.txt:1" + what);
  // Prose may name it.
  EXPECT_EQ(parse_run_file("I set sdp_zcopy_thresh to 1 first.\n", "a.txt").size(), 0u);
}

TEST(RunFileErrors, NetperfRrAndMaertsContradictions) {
  // A row of other -r sizes than the command's (netperf prints the -r it was given, 1,1 without).
  EXPECT_EQ(error_of("# netperf -P 0 -t TCP_RR -l 10 -- -r 64,1024\n"
                     "16384  87380  64       512     10.00    24562.31   \n16384  87380 \n"),
            "runs.txt:2: netperf TCP_RR result row: Request/Response Size 64 512 differs from the command's -r "
            "64,1024 (line 1)");
  EXPECT_EQ(error_of("# netperf -P 0 -t TCP_RR -l 10\n"
                     "16384  87380  64       1024    10.00    24562.31   \n16384  87380 \n"),
            "runs.txt:2: netperf TCP_RR result row: Request/Response Size 64 1024 differs from the command's -r "
            "1,1 (line 1; netperf's default without -r)");
  // No row, or no second line.
  EXPECT_EQ(error_of("# netperf -P 0 -t TCP_RR -l 10\n\n# date\n"),
            "runs.txt:1: netperf output ends before its result row");
  EXPECT_EQ(error_of("$ netperf -t TCP_RR -l 10\nTCP REQUEST/RESPONSE TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET\n"),
            "runs.txt:1: netperf output ends before its column titles ('bytes  Bytes  bytes    bytes   secs.    per "
            "sec'; the command has no -P 0)");
  EXPECT_EQ(error_of("# netperf -P 0 -t TCP_RR -l 10\n16384  87380  1       1       10.00    24562.31   \n"),
            "runs.txt:2: netperf TCP_RR output ends after its row, before the line of the remote Send and Recv "
            "socket sizes");
  EXPECT_EQ(error_of("# netperf -P 0 -t TCP_RR -l 10\n16384  87380  1       1       10.00    24562.31   \n\n"
                     "that was fast\n"),
            "runs.txt:4: netperf TCP_RR result: expected the remote Send and Recv socket sizes (2 numbers) on the "
            "line after the row of line 2");
  // A stream row (5 numbers) under a TCP_RR command; a TCP_RR row under -c.
  EXPECT_EQ(error_of("# netperf -P 0 -t TCP_RR -l 10\n 87380  16384  16384    10.00    7106.72\n"),
            "runs.txt:2: netperf TCP_RR result row has 5 fields, expected 6 (no -c/-C: two socket sizes, request "
            "and response sizes, elapsed time and transaction rate)");
  EXPECT_EQ(error_of("# netperf -P 0 -c -t TCP_RR -l 10\n16384  87380  1       1       10.00    24562.31   \n"),
            "runs.txt:2: netperf TCP_RR result row has 6 fields, expected 10 (the command has -c/-C: two socket "
            "sizes, request and response sizes, elapsed time, transaction rate, two utilisations and two service "
            "demands)");
  EXPECT_EQ(error_of("# netperf -P 0 -t TCP_RR -l 10\n16384  87380  1       1       10.00    fast\n16384 87380\n"),
            "runs.txt:2: netperf TCP_RR result row: column 6 (Trans. Rate) 'fast' is not a number");
  // Two runs under one command line.
  EXPECT_EQ(error_of("# netperf -P 0 -t TCP_RR -l 10\n16384  87380  1  1  10.00  24562.31\n16384  87380\n"
                     "16384  87380  1  1  10.00  24569.00\n16384  87380\n"),
            "runs.txt:4: a second netperf result row under the command of line 1 (the first is line 2): repeat the "
            "command line before each run");
  // Figures no netperf prints: a negative size, an absurd rate, a utilisation above 100 %, a
  // negative service demand other than netperf's -1 (not measured).
  EXPECT_EQ(error_of("# netperf -P 0 -t TCP_RR -l 10\n-16384  87380  1  1  10.00  24562.31\n16384  87380\n"),
            "runs.txt:2: netperf TCP_RR result row: column 1 (Send Socket Size) '-16384' is not a figure netperf "
            "prints (0..1e12)");
  EXPECT_EQ(error_of("# netperf -P 0 -t TCP_RR -l 10\n16384  87380  1  1  10.00  1e308\n16384  87380\n"),
            "runs.txt:2: netperf TCP_RR result row: column 6 (Trans. Rate) '1e308' is not a figure netperf prints "
            "(0..1e12)");
  EXPECT_EQ(error_of("# netperf -P 0 -c -C -t TCP_RR -l 10\n"
                     "16384  87380  1  1  10.00  24562.31  214.49  14.49  15.626  15.626\n16384  87380\n"),
            "runs.txt:2: netperf TCP_RR result row: column 7 (CPU local) '214.49' is not a utilisation (0..100 % of "
            "the host's CPUs, or -1: not measured)");
  EXPECT_EQ(error_of("# netperf -P 0 -c -C -t TCP_MAERTS -l 10 -- -m 64K\n"
                     " 87380  16384  65536  10.00  8642.51  13.04  13.04  -0.989  0.989\n"),
            "runs.txt:2: netperf result row: column 8 (Service Demand Send local) '-0.989' is not a service demand "
            "(>= 0, or -1: not measured)");
  EXPECT_EQ(error_of("# netperf -P 0 -t TCP_RR -l 10\n16384  87380  1  1  10.00  24562.31\n16384  -87380\n"),
            "runs.txt:3: netperf TCP_RR result: expected the remote Send and Recv socket sizes (2 numbers) on the "
            "line after the row of line 2");
  // A banner of another test than the command's.
  EXPECT_EQ(error_of("$ netperf -t TCP_MAERTS -l 10\n"
                     "TCP STREAM TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to h (1.2.3.4) port 0 AF_INET\n"),
            "runs.txt:2: a TCP STREAM TEST banner under the -t TCP_MAERTS command of line 1: netperf prints 'TCP "
            "MAERTS TEST'");
  EXPECT_EQ(error_of("$ netperf -l 10\nTCP REQUEST/RESPONSE TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET\n"),
            "runs.txt:2: a TCP REQUEST/RESPONSE TEST banner under the -t TCP_STREAM command of line 1: netperf "
            "prints 'TCP STREAM TEST'");
  // A line that only mentions another test is prose, skipped as before the row.
  EXPECT_EQ(netperf_of(parse_run_file("# netperf -P 0 -t TCP_RR -l 10\nslower than the TCP STREAM TEST above:\n"
                                      "16384  87380  1       1       10.00    24562.31   \n16384  87380 \n",
                                      "runs.txt")
                           .at(0))
                .transaction_rate,
            24562.31);
  // MAERTS: another -m than the command's (netserver's send size, as netperf prints it).
  EXPECT_EQ(error_of("# netperf -P 0 -t TCP_MAERTS -l 10 -- -m 64K\n 87380  16384  16384    10.00    7106.72   \n "),
            "runs.txt:2: netperf result row: Send Message Size 16384 differs from the command's -m 65536 (line 1)");
}

TEST(RunFileErrors, NetperfRrUnreadableLayouts) {
  // netperf 2.4.4 and later with -f: a throughput in the -f unit (tput_title_band, cpu_title_tput).
  EXPECT_EQ(error_of("$ netperf -t TCP_RR -f m -l 10\n"
                     "TCP REQUEST/RESPONSE TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to h (1.2.3.4) port 0 AF_INET\n"
                     "Local /Remote\n"
                     "Socket Size   Request  Resp.   Elapsed  \n"
                     "Send   Recv   Size     Size    Time     Throughput \n"
                     "bytes  Bytes  bytes    bytes   secs.    10^6bits/sec   \n"),
            "runs.txt:5: netperf TCP_RR column titles: a throughput (netperf 2.4.4 or later with -f), not netperf "
            "2.4.3's transaction rate ('Trans. Rate per sec'): repeat the run without -f");
  EXPECT_EQ(error_of("$ netperf -t TCP_RR -f m -l 10\n"
                     "bytes  Bytes  bytes    bytes   secs.    10^6bits/sec   \n"),
            "runs.txt:2: netperf TCP_RR column titles: a throughput in 10^6bits/sec (netperf 2.4.4 or later with "
            "-f), not netperf 2.4.3's transaction rate ('Trans. Rate per sec'): repeat the run without -f");
  // Without titles (-P 0, -v 0) the row cannot say which of the two it is.
  EXPECT_EQ(error_of("# netperf -t TCP_RR -P 0 -f k -l 10\n 16384  87380  1        1       10.00    14000.00\n"
                     " 16384  87380\n"),
            "runs.txt:1: netperf TCP_RR with -f and -P 0: netperf 2.4.4 and later print a throughput in the -f unit, "
            "2.4.3 a transaction rate, and without column titles the row does not say which (repeat the run without "
            "-f, or with its titles)");
  EXPECT_EQ(error_of("# netperf -t TCP_RR -v 0 -f m -l 10\n 14000.00\n"),
            "runs.txt:1: netperf TCP_RR with -f and -v 0: netperf 2.4.4 and later print a throughput in the -f unit, "
            "2.4.3 a transaction rate, and without column titles the row does not say which (repeat the run without "
            "-f, or with its titles)");
  EXPECT_EQ(error_of("# netperf -v 0 -c -t TCP_RR -l 10\n 15.631 S\n"),
            "runs.txt:1: netperf -v 0 with -c/-C prints only a service demand, not the transaction rate: hcasim "
            "cannot read that run (repeat it without -v 0)");
  EXPECT_EQ(error_of("# netperf -v 3 -t TCP_RR -l 10\n"),
            "runs.txt:1: netperf 2.4.3 prints no TCP_RR result row at -v 3 (use -v 1 or -v 2)");
  // What `hcasim netperf` refuses for TCP_RR, refused at the command's line.
  EXPECT_EQ(error_of("# netperf -P 0 -t TCP_RR -l 10 -- -m 64K\n"),
            "runs.txt:1: netperf: -m: TCP_RR sends requests and responses of -r's sizes; -m and -M belong to "
            "TCP_STREAM and TCP_MAERTS");
  // netperf 2.7's output selectors print no 2.4 table.
  EXPECT_EQ(error_of("# netperf -P 0 -t TCP_RR -l 10 -- -O THROUGHPUT\n"),
            "runs.txt:1: netperf: -o, -O, -k: netperf 2.7's output selectors; a run file reads netperf 2.4's "
            "TCP_STREAM, TCP_MAERTS and TCP_RR tables (repeat the run without them)");
}

TEST(RunFileErrors, LoadMissingFile) {
  const std::string path = std::string(HCASIM_REFERENCE_DIR) + "/no-such-runs.txt";
  try {
    load_run_file(path);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": cannot read (No such file or directory)");
  }
}


// --- the libibverbs example programs ------------------------------------------------------------

TEST(RunFilePingpong, ClientAndServerResultLines) {
  // rdma-core v44 rc_pingpong.c prints, on both sides after the loop, bytes = size x iters x 2,
  // seconds = usec / 1e6, Mbit/sec = bytes x 8 / usec, usec/iter = usec / iters: here
  // 64 x 2000 x 2 = 256000 B in 7500 us: 273.07 Mbit/s and 3.75 us per iteration.
  const std::string text =
      "$ ibv_rc_pingpong -g 0 -n 2000 -s 64 server1\n"
      "  local address:  LID 0x0003, QPN 0x000211, PSN 0x8c3f1e, GID fe80::2:c903:0:1\n"
      "  remote address: LID 0x0004, QPN 0x000212, PSN 0x1a2b3c, GID fe80::2:c903:0:2\n"
      "256000 bytes in 0.01 seconds = 273.07 Mbit/sec\n"
      "2000 iters in 0.01 seconds = 3.75 usec/iter\n"
      "server1$ ibv_ud_pingpong\n"
      "  local address:  LID 0x0004, QPN 0x000212, PSN 0x1a2b3c: GID ::\n"
      "  remote address: LID 0x0003, QPN 0x000211, PSN 0x8c3f1e, GID ::\n"
      "2048000 bytes in 0.02 seconds = 819.20 Mbit/sec\n"
      "1000 iters in 0.02 seconds = 20.00 usec/iter\n";
  const auto runs = parse_run_file(text, "pp.txt");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].tool, "ibv_rc_pingpong");
  EXPECT_EQ(runs[0].words, (std::vector<std::string>{"-g", "0", "-n", "2000", "-s", "64", "server1"}));
  const auto& a = std::get<PingpongReading>(runs[0].output);
  EXPECT_EQ(a.bytes, 256000u);
  EXPECT_EQ(a.iters, 2000u);
  EXPECT_DOUBLE_EQ(a.seconds, 0.01);
  EXPECT_DOUBLE_EQ(a.mbit_s, 273.07);
  EXPECT_DOUBLE_EQ(a.usec_per_iter, 3.75);
  EXPECT_EQ(a.line, 5u);
  // The server (no servername) of ud_pingpong, whose default size is 1024 B (its usage says
  // 2048): 1024 x 1000 x 2.
  EXPECT_EQ(runs[1].tool, "ibv_ud_pingpong");
  const auto& b = std::get<PingpongReading>(runs[1].output);
  EXPECT_EQ(b.bytes, 2048000u);
  EXPECT_DOUBLE_EQ(b.usec_per_iter, 20.0);
}

TEST(RunFilePingpong, WhatContradictsTheCommandIsAnError) {
  const std::string cmd = "$ ibv_rc_pingpong -n 10 -s 64 host\n";
  const std::string bytes_ok = "1280 bytes in 0.00 seconds = 102.40 Mbit/sec\n";
  const std::string iters_ok = "10 iters in 0.00 seconds = 10.00 usec/iter\n";
  EXPECT_EQ(error_of(cmd + "  local address: LID 0x0001\n"),
            "runs.txt:1: ibv_rc_pingpong output ends before its result lines ('N bytes in S seconds = R Mbit/sec', "
            "'N iters in S seconds = U usec/iter')");
  EXPECT_EQ(error_of(cmd + "2560 bytes in 0.00 seconds = 102.40 Mbit/sec\n" + iters_ok),
            "runs.txt:2: ibv_rc_pingpong: 2560 bytes, the command's -s 64 x -n 10 x 2 = 1280");
  EXPECT_EQ(error_of(cmd + bytes_ok + "11 iters in 0.00 seconds = 10.00 usec/iter\n"),
            "runs.txt:3: ibv_rc_pingpong: 11 iters, the command runs -n 10");
  EXPECT_EQ(error_of(cmd + iters_ok + bytes_ok),
            "runs.txt:2: ibv_rc_pingpong: 'iters ... usec/iter' before its 'bytes ... Mbit/sec' line");
  EXPECT_EQ(error_of(cmd + bytes_ok + iters_ok + bytes_ok),
            "runs.txt:4: ibv_rc_pingpong: a second result under one command");
  EXPECT_EQ(error_of(cmd + bytes_ok + "10 iters in 0.01 seconds = 10.00 usec/iter\n"),
            "runs.txt:3: ibv_rc_pingpong: 0.01 seconds, the line before says 0.00");
  EXPECT_EQ(error_of("$ ibv_rc_pingpong -m 1000 host\n"),
            "runs.txt:1: ibv_rc_pingpong: -m: 1000 is not an IB MTU (256, 512, 1024, 2048 or 4096)");
}

}  // namespace
}  // namespace hcasim::scenarios
