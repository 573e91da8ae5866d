// `hcasim ib_write_lat|ib_write_bw|ib_send_bw` command line (frontends/perftest_cli.h): perftest
// 4.5's flags as its getopt_long reads them, the values perftest derives (force_dependecies,
// ctx_set_max_inline), hcasim's long options and every error message. The limits and the
// lenient readings asserted here were checked against Debian's perftest 4.5+0.17 binary
// ("Version: 6.06"), e.g. `ib_write_lat -n 4` -> "Iteration num should be between 5 and
// 100000000", `-s 2048M` -> "Message Size should be between 1 and 2147483647", `-s 2047M` and
// `-s 1k` accepted, `--si=64` -> "option '--si=64' is ambiguous; possibilities: '--size'
// '--sig_before'".
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "frontends/config_error.h"
#include "frontends/perftest_cli.h"

namespace hcasim::frontends {
namespace {


std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

PerftestOptions lat(const std::string& line) {
  return parse_perftest_args(PerftestTest::WriteLat, words(line));
}
PerftestOptions wbw(const std::string& line) {
  return parse_perftest_args(PerftestTest::WriteBw, words(line));
}
PerftestOptions sbw(const std::string& line) {
  return parse_perftest_args(PerftestTest::SendBw, words(line));
}

std::string error_of(PerftestTest t, const std::vector<std::string>& args) {
  try {
    parse_perftest_args(t, args);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
std::string lat_error(const std::string& line) { return error_of(PerftestTest::WriteLat, words(line)); }
std::string wbw_error(const std::string& line) { return error_of(PerftestTest::WriteBw, words(line)); }
std::string sbw_error(const std::string& line) { return error_of(PerftestTest::SendBw, words(line)); }

std::vector<uint64_t> powers_of_two(int from, int to) {
  std::vector<uint64_t> v;
  for (int i = from; i <= to; ++i) v.push_back(uint64_t{1} << i);
  return v;
}

TEST(PerftestCli, WriteLatDefaultsArePerftests) {
  const PerftestOptions o = lat("");
  EXPECT_EQ(o.test, PerftestTest::WriteLat);
  EXPECT_FALSE(o.all);
  EXPECT_EQ(o.size, 2u);             // DEF_SIZE_LAT
  EXPECT_FALSE(o.size_given);
  EXPECT_EQ(o.iterations, 1000u);    // DEF_ITERS
  EXPECT_EQ(o.device, "");           // no -d: the platform's hca.device (perftest_main)
  EXPECT_EQ(o.ib_port, 1);
  EXPECT_EQ(o.tcp_port, 18515);      // DEF_PORT
  EXPECT_FALSE(o.server);
  EXPECT_EQ(o.platform, "connectx-ddr-pcie1x8");
  EXPECT_FALSE(o.remote_platform);
  EXPECT_TRUE(o.sets.empty());
  EXPECT_EQ(o.seed, 1u);
  EXPECT_FALSE(o.csv_path);
  EXPECT_FALSE(o.stats);
  EXPECT_EQ(o.columns, PerftestColumns::Classic);
  EXPECT_TRUE(o.notes.empty());

  const PerftestConfig c = to_perftest_config(o);
  EXPECT_EQ(c.test, PerftestTest::WriteLat);
  EXPECT_EQ(c.sizes, std::vector<uint64_t>{2});
  EXPECT_EQ(c.iterations, 1000u);
  EXPECT_EQ(c.inline_size, 220u);  // DEF_INLINE_WRITE: ctx_set_max_inline, LAT + WRITE + RC
  EXPECT_EQ(c.tx_depth, 1u);       // DEF_TX_LAT
  EXPECT_EQ(c.rx_depth, 1u);       // DEF_RX_RDMA
  EXPECT_EQ(c.cq_mod, 1u);
  EXPECT_EQ(c.num_qps, 1u);
  EXPECT_EQ(c.seed, 1u);
  EXPECT_FALSE(perftest_no_peak(o));
}

TEST(PerftestCli, WriteBwDefaultsArePerftests) {
  const PerftestOptions o = wbw("");
  EXPECT_EQ(o.size, 65536u);        // DEF_SIZE_BW
  EXPECT_EQ(o.iterations, 5000u);   // DEF_ITERS_WB
  const PerftestConfig c = to_perftest_config(o);
  EXPECT_EQ(c.sizes, std::vector<uint64_t>{65536});
  EXPECT_EQ(c.inline_size, 0u);     // ctx_set_max_inline: 0 for bw tests
  EXPECT_EQ(c.tx_depth, 128u);      // DEF_TX_BW
  EXPECT_EQ(c.rx_depth, 1u);
  // 65536 B > MSG_SIZE_CQ_MOD_LIMIT (8192) without -Q: CQ moderation off (1); the banner of a
  // real 65536 B ib_write_bw shows "CQ Moderation   : 1" (github.com/linux-rdma/perftest/issues/234).
  EXPECT_EQ(c.cq_mod, 1u);
  EXPECT_EQ(c.num_qps, 1u);
  EXPECT_FALSE(perftest_no_peak(o));
}

TEST(PerftestCli, SendBwDefaultsArePerftests) {
  const PerftestOptions o = sbw("");
  EXPECT_EQ(o.size, 65536u);
  EXPECT_EQ(o.iterations, 1000u);  // DEF_ITERS: DEF_ITERS_WB is for ib_write_bw only
  const PerftestConfig c = to_perftest_config(o);
  EXPECT_EQ(c.test, PerftestTest::SendBw);
  EXPECT_EQ(c.inline_size, 0u);
  EXPECT_EQ(c.tx_depth, 128u);
  EXPECT_EQ(c.rx_depth, 512u);     // DEF_RX_SEND
  EXPECT_EQ(c.cq_mod, 1u);
}

// shared/seeds/001: "/usr/bin/taskset -c 0 ib_write_lat -d mlx4_0 -i 1  -F -a -n 1000000".
TEST(PerftestCli, SeedCommandLine) {
  const PerftestOptions o = lat("/usr/bin/taskset -c 0 ib_write_lat -d mlx4_0 -i 1  -F -a -n 1000000");
  EXPECT_TRUE(o.all);
  EXPECT_TRUE(o.cpu_freq_f);
  EXPECT_EQ(o.device, "mlx4_0");
  EXPECT_EQ(o.ib_port, 1);
  EXPECT_EQ(o.iterations, 1000000u);
  EXPECT_EQ(o.notes, std::vector<std::string>{
                         "hcasim: note: taskset ignored: hcasim does not pin processes (the "
                         "simulated ib_write_lat runs where the platform puts it)"});
  const PerftestConfig c = to_perftest_config(o);
  EXPECT_EQ(c.sizes, powers_of_two(1, 23));  // 2 .. 8388608: write_lat.c `for (i = 1; i < 24; ++i)`
  EXPECT_EQ(c.sizes.size(), 23u);
  EXPECT_EQ(c.iterations, 1000000u);

  // Without taskset, and with the tool name as a path.
  const PerftestOptions p = lat("/usr/bin/ib_write_lat -d mlx4_0 -i 1 -F -a -n 1000000");
  EXPECT_TRUE(p.all);
  EXPECT_TRUE(p.notes.empty());
  EXPECT_EQ(lat("-aF -n1000000").iterations, 1000000u);
}

TEST(PerftestCli, TasksetForms) {
  EXPECT_TRUE(lat("taskset 0x1 ib_write_lat -a").all);
  EXPECT_TRUE(lat("taskset --cpu-list 0-3 ib_write_lat -a").all);
  EXPECT_EQ(lat_error("taskset -p 1234"), "taskset -p pins a running process, not a command");
  EXPECT_EQ(lat_error("taskset -c 0 -a"), "taskset must be followed by CPUS and ib_write_lat");
  EXPECT_EQ(lat_error("taskset -x 0 ib_write_lat"), "taskset: unsupported option '-x'");
}

TEST(PerftestCli, AnotherPerftestToolIsRefused) {
  EXPECT_EQ(lat_error("ib_write_bw -a"),
            "ib_write_bw: this is hcasim ib_write_lat (hcasim simulates ib_write_lat, "
            "ib_write_bw, ib_send_lat, ib_send_bw, ib_read_lat, ib_read_bw, ib_atomic_lat, ib_atomic_bw)");
  EXPECT_EQ(wbw_error("/usr/bin/ib_read_lat"),
            "/usr/bin/ib_read_lat: this is hcasim ib_write_bw (hcasim simulates ib_write_lat, "
            "ib_write_bw, ib_send_lat, ib_send_bw, ib_read_lat, ib_read_bw, ib_atomic_lat, ib_atomic_bw)");
  EXPECT_TRUE(wbw("ib_write_bw -a").all);
  EXPECT_TRUE(sbw("ib_send_bw -a").all);
}

TEST(PerftestCli, ValueFormsAsGetoptLongReadsThem) {
  for (const char* line : {"-s64", "-s 64", "--size=64", "--size 64", "--siz=64", "-as64"})
    EXPECT_EQ(lat(line).size, 64u) << line;
  EXPECT_TRUE(lat("-as64").all);
  const PerftestOptions o = lat("-Fan 100");  // grouped flags, then a value option ends the group
  EXPECT_TRUE(o.cpu_freq_f);
  EXPECT_TRUE(o.all);
  EXPECT_EQ(o.iterations, 100u);
  EXPECT_EQ(lat("--iter=100").iterations, 100u);  // a unique prefix of --iters
  EXPECT_EQ(lat("--iters 100").iterations, 100u);
  EXPECT_TRUE(lat("--all --CPU-freq").all);
  EXPECT_EQ(lat("--ib-dev=mlx4_1").device, "mlx4_1");
  EXPECT_EQ(lat("-dmlx4_1").device, "mlx4_1");
  // A later flag overrides an earlier one (perftest 4.5 has no duplicate check).
  EXPECT_EQ(lat("-s 8 -s 16").size, 16u);
  // The word after a value option is its value even when it starts with '-'.
  EXPECT_EQ(lat_error("-s -a"), "-s: '-a' is not a size (bytes, or a number with K or M)");
  EXPECT_EQ(lat_error("-n -a"), "-n: '-a' is not an integer");
}

TEST(PerftestCli, SizesAsPerftestReadsThem) {
  // K and M multiply by 2^10 and 2^20; strtol(..., 0) reads 0x.. as hex and 0.. as octal.
  EXPECT_EQ(lat("-s 64K").size, 65536u);
  EXPECT_EQ(lat("-s 1M").size, 1048576u);
  EXPECT_EQ(lat("-s 2047M").size, 2146435072u);
  EXPECT_EQ(lat("-s 2147483647").size, 2147483647u);
  EXPECT_EQ(lat("-s 0x10").size, 16u);
  PerftestOptions o = lat("-s 010");
  EXPECT_EQ(o.size, 8u);
  EXPECT_EQ(o.notes, std::vector<std::string>{
                         "hcasim: note: -s 010 read as octal (8), as perftest's strtol(..., 0) "
                         "reads it"});
  // perftest takes only K and M: anything else after the number is ignored (with a note here).
  o = lat("-s 64k");
  EXPECT_EQ(o.size, 64u);
  EXPECT_EQ(o.notes, std::vector<std::string>{
                         "hcasim: note: -s 64k read as 64 B: perftest reads the leading number and "
                         "ignores the rest (its only suffixes are K and M)"});
  EXPECT_EQ(lat("-s 1G").size, 1u);
  EXPECT_TRUE(lat("-s 64").size_given);

  EXPECT_EQ(lat_error("-s 0"), "-s: '0' is out of range (perftest: 1..2147483647 B)");
  EXPECT_EQ(lat_error("-s K"), "-s: 'K' is not a size (bytes, or a number with K or M)");
  EXPECT_EQ(lat_error("-s abc"), "-s: 'abc' is not a size (bytes, or a number with K or M)");
  EXPECT_EQ(lat_error("-s 2048M"), "-s: '2048M' is out of range (perftest: 1..2147483647 B)");
  EXPECT_EQ(lat_error("-s 2147483648"), "-s: '2147483648' is out of range (perftest: 1..2147483647 B)");
  EXPECT_EQ(lat_error("-s -5"), "-s: '-5' is out of range (perftest: 1..2147483647 B)");
  EXPECT_EQ(lat_error("-s"), "-s: missing value");
  EXPECT_EQ(lat_error("--size"), "--size: missing value");
  EXPECT_EQ(error_of(PerftestTest::WriteLat, {"-s", ""}),
            "-s: '' is not a size (bytes, or a number with K or M)");
}

TEST(PerftestCli, AllIgnoresSizeWithANote) {
  const PerftestOptions o = lat("-a -s 4096");
  EXPECT_EQ(to_perftest_config(o).sizes, powers_of_two(1, 23));
  EXPECT_EQ(o.notes, std::vector<std::string>{
                         "hcasim: note: -s ignored with -a: perftest sweeps 2..8388608 B"});
  EXPECT_EQ(perftest_all_sizes(), powers_of_two(1, 23));
}

TEST(PerftestCli, IterationsRange) {
  EXPECT_EQ(lat("-n 5").iterations, 5u);             // MIN_ITER
  EXPECT_EQ(lat("-n 100000000").iterations, 100000000u);  // MAX_ITER
  EXPECT_EQ(lat("-n 0x10").iterations, 16u);
  EXPECT_EQ(lat_error("-n 4"), "-n: 4 is out of range (perftest: 5..100000000)");
  EXPECT_EQ(lat_error("-n 0"), "-n: 0 is out of range (perftest: 5..100000000)");
  EXPECT_EQ(lat_error("-n -1"), "-n: -1 is out of range (perftest: 5..100000000)");
  EXPECT_EQ(lat_error("-n 100000001"), "-n: 100000001 is out of range (perftest: 5..100000000)");
  EXPECT_EQ(lat_error("-n 1K"), "-n: '1K' is not an integer");
  EXPECT_EQ(lat_error("-n 1e3"), "-n: '1e3' is not an integer");
  EXPECT_EQ(lat_error("--iters=5x"), "--iters: '5x' is not an integer");
  EXPECT_EQ(lat_error("-n"), "-n: missing value");
}

TEST(PerftestCli, InlineSize) {
  EXPECT_EQ(to_perftest_config(lat("-I 0")).inline_size, 0u);
  EXPECT_EQ(to_perftest_config(lat("-I 912")).inline_size, 912u);  // MAX_INLINE
  EXPECT_EQ(to_perftest_config(lat("--inline_size=64")).inline_size, 64u);
  EXPECT_EQ(to_perftest_config(wbw("-I 128")).inline_size, 128u);
  EXPECT_EQ(lat_error("-I 913"), "-I: 913 is out of range (perftest: 0..912)");
  EXPECT_EQ(lat_error("-I -1"), "-I: -1 is out of range (perftest: 0..912)");
}

TEST(PerftestCli, DepthsAndModerationFollowForceDependecies) {
  // tx depth: 1..15000, capped at the iterations.
  EXPECT_EQ(to_perftest_config(wbw("-t 256")).tx_depth, 256u);
  EXPECT_EQ(to_perftest_config(wbw("-n 50 -s 64")).tx_depth, 50u);
  EXPECT_EQ(to_perftest_config(lat("-t 4")).tx_depth, 4u);  // perftest accepts -t on write_lat
  EXPECT_EQ(wbw_error("-t 0"), "-t: 0 is out of range (perftest: 1..15000)");
  EXPECT_EQ(wbw_error("-t 15001"), "-t: 15001 is out of range (perftest: 1..15000)");

  // CQ moderation: 100 up to 8192 B, 1 above it without -Q, -Q kept, capped at the tx depth.
  EXPECT_EQ(to_perftest_config(wbw("-s 8192")).cq_mod, 100u);
  EXPECT_EQ(to_perftest_config(wbw("-s 8193")).cq_mod, 1u);
  EXPECT_EQ(to_perftest_config(wbw("-s 65536 -Q 10")).cq_mod, 10u);
  EXPECT_EQ(to_perftest_config(wbw("-a")).cq_mod, 100u);  // not disabled with -a
  EXPECT_EQ(to_perftest_config(wbw("-s 64 -n 50")).cq_mod, 50u);
  EXPECT_EQ(to_perftest_config(wbw("-s 64 -t 16")).cq_mod, 16u);
  EXPECT_EQ(to_perftest_config(wbw("-s 64 -Q 1024 -t 2000")).cq_mod, 1024u);  // MAX_CQ_MOD
  EXPECT_EQ(wbw_error("-Q 0"), "-Q: 0 is out of range (perftest: 1..1024)");
  EXPECT_EQ(wbw_error("--cq-mod=1025"), "--cq-mod: 1025 is out of range (perftest: 1..1024)");
  PerftestOptions o = lat("-Q 10");
  EXPECT_EQ(to_perftest_config(o).cq_mod, 1u);
  EXPECT_EQ(o.notes, std::vector<std::string>{"hcasim: note: -Q ignored: ib_write_lat signals every WR"});

  // rx depth (ib_send_bw): capped at the iterations, then made even (not with -a).
  EXPECT_EQ(to_perftest_config(sbw("-r 64")).rx_depth, 64u);
  EXPECT_EQ(to_perftest_config(sbw("-r 7")).rx_depth, 8u);
  EXPECT_EQ(to_perftest_config(sbw("-r 7 -a")).rx_depth, 7u);
  EXPECT_EQ(to_perftest_config(sbw("-n 5")).rx_depth, 6u);  // 512 -> 5 -> 6
  EXPECT_EQ(to_perftest_config(sbw("-r 16384")).rx_depth, 1000u);
  EXPECT_EQ(sbw_error("-r 16385"), "-r: 16385 is out of range (perftest: 1..16384)");
  // The write tools: "On RDMA verbs rx depth can be only 1".
  EXPECT_EQ(to_perftest_config(wbw("-r 1")).rx_depth, 1u);
  EXPECT_EQ(wbw_error("-r 5"), "-r: on RDMA WRITE tests perftest allows only an rx depth of 1");
  EXPECT_EQ(lat_error("-r 2"), "-r: on RDMA WRITE tests perftest allows only an rx depth of 1");
}

TEST(PerftestCli, QueuePairs) {
  EXPECT_EQ(to_perftest_config(wbw("-q 4")).num_qps, 4u);
  EXPECT_EQ(to_perftest_config(sbw("--qp=16384")).num_qps, 16384u);  // MAX_QP_NUM
  EXPECT_EQ(wbw_error("-q 0"), "-q: 0 is out of range (perftest: 1..16384)");
  // "Multiple QPs only available on bw tests", even for -q 1.
  EXPECT_EQ(lat_error("-q 1"), "-q: multiple QPs are for perftest's bw tests only (ib_write_lat has one QP)");
}

TEST(PerftestCli, PeakAndReportFormat) {
  EXPECT_FALSE(perftest_no_peak(wbw("-n 20000")));
  EXPECT_TRUE(perftest_no_peak(wbw("-n 20001")));  // force_dependecies: iters > 20000
  EXPECT_TRUE(perftest_no_peak(wbw("-N")));
  EXPECT_TRUE(perftest_no_peak(sbw("--noPeak")));
  EXPECT_FALSE(perftest_no_peak(lat("-n 100000")));
  EXPECT_EQ(lat_error("-N"), "-N: perftest's noPeak is for the bw tests only");

  EXPECT_TRUE(wbw("--report_gbits").report_gbits);
  EXPECT_TRUE(sbw("--report_g").report_gbits);
  const PerftestOptions o = lat("--report_gbits");
  EXPECT_FALSE(o.report_gbits);
  EXPECT_EQ(o.notes, std::vector<std::string>{
                         "hcasim: note: --report_gbits ignored: ib_write_lat reports latency"});
}

TEST(PerftestCli, AcceptedFlagsAndTheirNotes) {
  PerftestOptions o = lat("-R");
  EXPECT_TRUE(o.rdma_cm);
  EXPECT_EQ(o.notes, std::vector<std::string>{
                         "hcasim: note: -R: rdma_cm connection setup is not simulated (only the "
                         "banner shows it)"});
  o = lat("-z");
  EXPECT_TRUE(o.comm_rdma_cm);
  EXPECT_EQ(o.notes, std::vector<std::string>{
                         "hcasim: note: -z: the rdma_cm data exchange is not simulated (only the "
                         "banner shows it)"});
  o = lat("-x 3");
  EXPECT_EQ(o.gid_index, 3);
  EXPECT_EQ(o.notes, std::vector<std::string>{
                         "hcasim: note: -x 3: the GID is only printed (an IB port needs no GRH)"});
  EXPECT_EQ(lat("--gid-index=64").gid_index, 64);  // MAX_GID_IX
  EXPECT_EQ(lat_error("-x 65"), "-x: 65 is out of range (perftest: 0..64)");
  o = lat("-p 20000");
  EXPECT_EQ(o.tcp_port, 20000);
  EXPECT_EQ(o.notes, std::vector<std::string>{"hcasim: note: -p ignored: no TCP connection is simulated"});
  EXPECT_EQ(lat_error("-p abc"), "-p: 'abc' is not an integer");
  o = lat("-i 2");
  EXPECT_EQ(o.ib_port, 2);
  EXPECT_EQ(o.notes, std::vector<std::string>{
                         "hcasim: note: -i 2: the simulated HCA has one port, used as port 2"});
  EXPECT_EQ(lat_error("-i 0"), "-i: 0 is not a port number (perftest: at least 1)");
  EXPECT_EQ(lat_error("-i 256"), "-i: 256 is not a port number (perftest: at least 1)");  // uint8_t
  EXPECT_TRUE(lat("-c RC").notes.empty());
  EXPECT_TRUE(lat("--connection=RC").notes.empty());
  EXPECT_TRUE(lat("-h").help);
  EXPECT_TRUE(lat("--version").version);
}

TEST(PerftestCli, Mtu) {
  EXPECT_EQ(lat("-m 1024").mtu, 1024);
  EXPECT_TRUE(lat("-m 1024").notes.empty());
  const PerftestOptions odd = lat("-m 1000");
  EXPECT_EQ(odd.notes, std::vector<std::string>{
                           "hcasim: note: -m 1000: not one of 256 512 1024 2048 4096; perftest "
                           "runs with the port's active MTU"});
  std::string note;
  EXPECT_EQ(perftest_path_mtu(lat(""), 2048, &note), 2048);
  EXPECT_EQ(note, "");
  EXPECT_EQ(perftest_path_mtu(lat("-m 0"), 2048, &note), 2048);
  EXPECT_EQ(perftest_path_mtu(lat("-m 1024"), 2048, &note), 1024);
  EXPECT_EQ(note, "");
  EXPECT_EQ(perftest_path_mtu(lat("-m 256"), 2048, nullptr), 256);
  EXPECT_EQ(perftest_path_mtu(lat("-m 4096"), 2048, &note), 2048);
  EXPECT_EQ(note, "hcasim: note: -m 4096: above the port's active MTU; perftest changes to the "
                  "active MTU (2048 B)");
  EXPECT_EQ(perftest_path_mtu(odd, 2048, &note), 2048);
  EXPECT_EQ(note, "");  // noted once, by the parser
  EXPECT_EQ(lat_error("-m big"), "-m: 'big' is not an integer");
}

TEST(PerftestCli, ServerHost) {
  PerftestOptions o = lat("-a server1 -n 10");  // getopt permutes: the host may stand anywhere
  EXPECT_EQ(o.server.value(), "server1");
  EXPECT_EQ(o.iterations, 10u);
  EXPECT_EQ(o.notes, std::vector<std::string>{
                         "hcasim: note: server host server1 not used: the remote host is "
                         "simulated (--remote-platform)"});
  EXPECT_EQ(lat("-- -host").server.value(), "-host");  // "--" ends the options
  EXPECT_EQ(lat_error("a b"), "unexpected argument 'b' (perftest takes one server host, 'a' is already given)");
}

// -b as parser() case 'b' reads it: the bw tools only; the banner and the report follow it.
TEST(PerftestCli, Bidirectional) {
  EXPECT_TRUE(wbw("-b").duplex);
  EXPECT_TRUE(sbw("--bidirectional").duplex);
  EXPECT_TRUE(to_perftest_config(wbw("-b")).duplex);
  EXPECT_FALSE(wbw("").duplex);
  EXPECT_EQ(lat_error("-b"), "-b: perftest's bidirectional mode is for the bw tests only");
  EXPECT_EQ(lat_error("--bidi"), "--bidirectional: perftest's bidirectional mode is for the bw tests only");
  EXPECT_TRUE(perftest_sums_both_sides(wbw("-b")));
  EXPECT_TRUE(perftest_sums_both_sides(sbw("-b")));
  // send_bw.c skips xchg_bw_reports in duration mode: each side prints its own report.
  EXPECT_FALSE(perftest_sums_both_sides(sbw("-b -D 4")));
  EXPECT_TRUE(perftest_sums_both_sides(wbw("-b -D 4")));
  EXPECT_FALSE(perftest_sums_both_sides(wbw("")));
}

// -D and -f as parser() and force_dependecies read them.
TEST(PerftestCli, Duration) {
  const PerftestOptions o = wbw("-D 10");
  EXPECT_EQ(o.duration.value(), 10);
  EXPECT_EQ(perftest_margin(o), 2);  // DEF_INIT_MARGIN: duration / 4
  EXPECT_EQ(perftest_margin(wbw("-D 1")), 0);
  EXPECT_EQ(perftest_margin(wbw("-D 7")), 1);
  EXPECT_EQ(perftest_margin(wbw("-D 7 -f 3")), 3);
  EXPECT_EQ(perftest_margin(wbw("--duration=9 --margin=0")), 0);
  EXPECT_TRUE(perftest_no_peak(o));  // force_dependecies: noPeak with -D
  const PerftestConfig c = to_perftest_config(wbw("-D 3 -n 5"));
  EXPECT_EQ(c.duration_s, 3);
  EXPECT_EQ(c.margin_s, 0);
  EXPECT_EQ(c.tx_depth, 128u);  // not capped at -n: that is iteration mode's
  EXPECT_EQ(to_perftest_config(sbw("-D 3 -n 5")).rx_depth, 512u);
  EXPECT_EQ(to_perftest_config(wbw("-n 5")).tx_depth, 5u);
  EXPECT_EQ(wbw("-D 3 -n 5").notes,
            std::vector<std::string>{"hcasim: note: -n ignored with -D: perftest counts the iterations of the measured window"});
  EXPECT_EQ(lat("-f 2").notes,
            std::vector<std::string>{"hcasim: note: -f ignored without -D: perftest's margin bounds a duration run"});
  // perftest's refusals.
  EXPECT_EQ(lat_error("-D 0"), "-D: 0 is not a positive number of seconds (perftest: Duration period must be positive)");
  EXPECT_EQ(wbw_error("-D -3"), "-D: -3 is not a positive number of seconds (perftest: Duration period must be positive)");
  EXPECT_EQ(wbw_error("-D 1.5"), "-D: '1.5' is not an integer");
  EXPECT_EQ(wbw_error("-D 4294967297"), "-D: 4294967297 is out of range (perftest stores it in an int: -2147483648..2147483647)");
  EXPECT_EQ(wbw_error("-D 10 -f -1"), "-f: -1 is not a number of seconds (perftest: Margin must be non-negative)");
  EXPECT_EQ(wbw_error("-D 4 -f 2"),
            "-f: a margin of 2 s on each side leaves nothing to measure in 4 s (perftest: DURATION > 2*MARGIN)");
  EXPECT_EQ(lat_error("-f 3"),
            "-f: a margin of 3 s on each side leaves nothing to measure in perftest's default 5 s (perftest: "
            "DURATION > 2*MARGIN)");
  EXPECT_EQ(sbw_error("-D 2 -e"), "-e: perftest's duration mode (-D) does not work with completion events");
  EXPECT_EQ(wbw_error("-a -D 2"), "-a: perftest's duration mode (-D) does not run all sizes");
  EXPECT_EQ(wbw_error("-D 2 --json"), "--json: hcasim reports a -D run in perftest's text only (no --json)");
  EXPECT_EQ(sbw_error("-b -e"), "-e: hcasim does not simulate completion events with -b");
}

TEST(PerftestCli, UcConnectionsAndTheirReceiveDepth) {
  using hcasim::frontends::PerftestConnection;
  EXPECT_EQ(lat("-c UC").connection, PerftestConnection::Uc);
  EXPECT_EQ(lat("-c UC -c RC").connection, PerftestConnection::Rc);
  EXPECT_EQ(to_perftest_config(wbw("-c UC")).connection, PerftestConnection::Uc);
  // force_dependecies (perftest_parameters.c): in iteration mode a SEND test's rx depth is at
  // most -n; then on UC, when it is still DEF_RX_SEND (512), min(-n, UC_MAX_RX = 16000).
  EXPECT_EQ(to_perftest_config(sbw("-c UC -n 5000")).rx_depth, 5000u);
  EXPECT_EQ(to_perftest_config(sbw("-c UC -n 20000")).rx_depth, 16000u);
  EXPECT_EQ(to_perftest_config(sbw("-c UC -n 5000 -r 100")).rx_depth, 100u);
  EXPECT_EQ(to_perftest_config(sbw("-c UC -n 300")).rx_depth, 300u);  // 300 < 512: kept
  EXPECT_EQ(to_perftest_config(sbw("-n 5000")).rx_depth, 512u);       // RC: DEF_RX_SEND
}

TEST(PerftestCli, UdConnectionsTheirInlineSizeReceiveDepthAndMtu) {
  using hcasim::frontends::PerftestConnection;
  const auto sl = [](const std::string& a) {
    return hcasim::frontends::parse_perftest_args(hcasim::frontends::PerftestTest::SendLat, words(a));
  };
  EXPECT_EQ(sbw("-c UD").connection, PerftestConnection::Ud);
  // ctx_set_max_inline: ib_send_lat inlines DEF_INLINE_SEND_UD = 188 B on UD (236 on RC).
  EXPECT_EQ(to_perftest_config(sl("-c UD")).inline_size, 188u);
  EXPECT_EQ(to_perftest_config(sl("")).inline_size, 236u);
  // force_dependecies: UD's receive depth follows UC's rule (min(-n, UC_MAX_RX) while 512).
  EXPECT_EQ(to_perftest_config(sbw("-c UD -n 5000")).rx_depth, 5000u);
  // A UD message is one packet: -s above the path MTU becomes the MTU, -a stops at it (send_bw.c
  // size_max_pow = log2(MTU) + 1: 2, 4, ..., 2048 on a 2048 B MTU, 11 sizes).
  auto one = to_perftest_config(sbw("-c UD -s 65536"));
  EXPECT_EQ(hcasim::frontends::perftest_ud_sizes(sbw("-c UD -s 65536"), one, 2048), "");
  EXPECT_EQ(one.sizes, std::vector<uint64_t>{2048});
  auto all = to_perftest_config(sbw("-c UD -a"));
  EXPECT_NE(hcasim::frontends::perftest_ud_sizes(sbw("-c UD -a"), all, 2048), "");
  ASSERT_EQ(all.sizes.size(), 11u);
  EXPECT_EQ(all.sizes.front(), 2u);
  EXPECT_EQ(all.sizes.back(), 2048u);
  // force_dependecies keeps CQ moderation on UD above MSG_SIZE_CQ_MOD_LIMIT (RC turns it off).
  EXPECT_EQ(to_perftest_config(sbw("-c UD -s 65536")).cq_mod, 100u);
  EXPECT_EQ(to_perftest_config(sbw("-s 65536")).cq_mod, 1u);
  auto rc = to_perftest_config(sbw("-s 65536"));
  EXPECT_EQ(hcasim::frontends::perftest_ud_sizes(sbw("-s 65536"), rc, 2048), "");
  EXPECT_EQ(rc.sizes, std::vector<uint64_t>{65536});
}

TEST(PerftestCli, RefusedAndUnknownFlags) {
  EXPECT_EQ(wbw_error("-c UD"), "-c UD: UD connection only possible in SEND tests (perftest)");
  EXPECT_EQ(sbw_error("-c XRC"), "-c XRC: hcasim simulates RC, UC and UD connections only");
  EXPECT_EQ(lat_error("-c DC"), "-c DC: hcasim simulates RC, UC and UD connections only");
  EXPECT_EQ(lat_error("-c rc"), "-c: 'rc' is not a connection type (perftest takes RC, UC, UD, XRC, DC, SRD)");
  EXPECT_EQ(wbw_error("-H"), "-H: perftest's histogram report is for the latency tests only");
  EXPECT_EQ(sbw_error("--report-cycles"), "--report-cycles: perftest's cycles report is for the latency tests only");
  EXPECT_EQ(wbw_error("-U"), "-U: perftest's unsorted report is for the latency tests only");
  EXPECT_EQ(lat_error("-aFe"), "-e: perftest's events feature is not available on WRITE tests");
  EXPECT_EQ(wbw_error("--events"), "--events: perftest's events feature is not available on WRITE tests");
  EXPECT_EQ(lat_error("-aFX 1"), "-X (--vector): perftest flag not supported by hcasim ib_write_lat");
  EXPECT_EQ(lat_error("-l 4"), "-l (--post_list): perftest flag not supported by hcasim ib_write_lat");
  EXPECT_EQ(lat_error("-u 14"), "-u (--qp-timeout): perftest flag not supported by hcasim ib_write_lat");
  EXPECT_EQ(lat_error("--tcp"), "--tcp: perftest option not supported by hcasim ib_write_lat");
  EXPECT_EQ(lat_error("--perform_warm_up"), "--perform_warm_up: perftest option not supported by hcasim ib_write_lat");
  EXPECT_EQ(lat_error("--use_rss"), "--use_rss: perftest flag not supported by hcasim ib_write_lat");
  EXPECT_EQ(lat_error("-G"), "unknown option -G");
  EXPECT_EQ(lat_error("-a:"), "unknown option -:");
  EXPECT_EQ(lat_error("--frobnicate"), "unknown option --frobnicate");
  EXPECT_EQ(lat_error("--use_cuda=0"), "unknown option --use_cuda");  // not in perftest 4.5+0.17
  EXPECT_EQ(lat_error("--si=64"), "--si: ambiguous option (--sig_before, --size)");
  EXPECT_EQ(lat_error("--s"),
            "--s: ambiguous option (--seed, --server, --set, --sig_before, --size, --sl, "
            "--sniffer, --source_ip, --source_mac, --source_port, --stats)");
  EXPECT_EQ(lat_error("--all=1"), "--all: takes no value");
  EXPECT_EQ(lat_error("--=1"), "unknown option --=1");
}

TEST(PerftestCli, HcasimLongOptionsInAnyOrder) {
  const PerftestOptions o = parse_perftest_args(
      PerftestTest::WriteLat,
      {"--platform", "p1.toml", "-a", "--remote-platform=p2", "--set", "hca.blueflame=off",
       "--set=host.write_combining=off", "-n", "100", "--seed", "42", "--csv", "out.csv",
       "--stats", "--columns", "extended", "host1"});
  EXPECT_EQ(o.platform, "p1.toml");
  EXPECT_EQ(o.remote_platform.value(), "p2");
  EXPECT_EQ(o.sets, (std::vector<std::string>{"hca.blueflame=off", "host.write_combining=off"}));
  EXPECT_EQ(o.seed, 42u);
  EXPECT_EQ(o.csv_path.value(), "out.csv");
  EXPECT_TRUE(o.stats);
  EXPECT_EQ(o.columns, PerftestColumns::Extended);
  EXPECT_TRUE(o.all);
  EXPECT_EQ(o.iterations, 100u);
  EXPECT_EQ(o.server.value(), "host1");
  EXPECT_EQ(to_perftest_config(o).seed, 42u);
  EXPECT_EQ(lat("--columns=classic").columns, PerftestColumns::Classic);
  EXPECT_EQ(lat("--plat=x").platform, "x");  // a unique prefix, as getopt_long allows

  EXPECT_EQ(lat_error("--columns wide"), "--columns: 'wide' is not classic or extended");
  EXPECT_EQ(lat_error("--seed x"), "--seed: 'x' is not a non-negative integer");
  EXPECT_EQ(lat_error("--seed -3"), "--seed: '-3' is not a non-negative integer");
  EXPECT_EQ(lat_error("--set novalue"), "--set: 'novalue' is not section.key=value");
  EXPECT_EQ(lat_error("--set =x"), "--set: '=x' is not section.key=value");
  EXPECT_EQ(lat_error("-a --csv"), "--csv: missing value");
  EXPECT_EQ(error_of(PerftestTest::WriteLat, {"--platform", ""}), "--platform: empty value");
  EXPECT_EQ(error_of(PerftestTest::WriteLat, {"--csv="}), "--csv: empty value");
  EXPECT_EQ(lat_error("--stats=1"), "--stats: takes no value");
}

TEST(PerftestCli, ToolNamesAndUsage) {
  EXPECT_EQ(perftest_tool_name(PerftestTest::WriteLat), "ib_write_lat");
  EXPECT_EQ(perftest_tool_name(PerftestTest::WriteBw), "ib_write_bw");
  EXPECT_EQ(perftest_tool_name(PerftestTest::SendBw), "ib_send_bw");
  EXPECT_FALSE(perftest_is_bw(PerftestTest::WriteLat));
  EXPECT_TRUE(perftest_is_bw(PerftestTest::WriteBw));
  EXPECT_TRUE(perftest_is_bw(PerftestTest::SendBw));
  const std::string u = perftest_usage(PerftestTest::WriteBw);
  EXPECT_NE(u.find("hcasim ib_write_bw [hcasim options] [perftest flags] [server-host]"), std::string::npos);
  EXPECT_NE(u.find("(default 5000)"), std::string::npos);
  EXPECT_NE(u.find("--report_gbits"), std::string::npos);
  EXPECT_EQ(perftest_usage(PerftestTest::WriteLat).find("--report_gbits"), std::string::npos);
  EXPECT_NE(perftest_usage(PerftestTest::SendBw).find("-r, --rx-depth"), std::string::npos);
  EXPECT_NE(perftest_usage(PerftestTest::ReadBw).find("-b, --bidirectional"), std::string::npos);
  EXPECT_EQ(perftest_usage(PerftestTest::ReadLat).find("-b, --bidirectional"), std::string::npos);
  for (PerftestTest t : perftest_tests()) {
    EXPECT_NE(perftest_usage(t).find("-D, --duration=SECONDS"), std::string::npos) << perftest_tool_name(t);
    EXPECT_NE(perftest_usage(t).find("-f, --margin=SECONDS"), std::string::npos) << perftest_tool_name(t);
  }
}

TEST(PerftestCli, ConfigFieldsAreWordedAsPerftestsOptions) {
  // sim/ refuses "tx_depth/rx_depth" when the depths overrun hca.cq_entries (sim/perftest_sim.cpp).
  const ConfigError e("tx_depth/rx_depth", "depth above hca.cq_entries 150");
  EXPECT_STREQ(e.what(), "tx_depth/rx_depth: depth above hca.cq_entries 150");
  EXPECT_STREQ(worded(e, perftest_option).what(), "-t/-r: depth above hca.cq_entries 150");
  EXPECT_STREQ(worded(ConfigError("inline_size", "x"), perftest_option).what(), "-I: x");
  EXPECT_STREQ(worded(ConfigError("sizes", "x"), perftest_option).what(), "-s: x");
  EXPECT_STREQ(worded(ConfigError("seed", "x"), perftest_option).what(), "seed: x");  // no option: the field
}

}  // namespace
}  // namespace hcasim::frontends

TEST(PerftestCli, EventsKeepCqModerationAboveEightKilobytes) {
  using namespace hcasim::frontends;
  // force_dependecies: above MSG_SIZE_CQ_MOD_LIMIT (8192 B) cq_mod becomes 1 unless -Q, -a or -e.
  const PerftestConfig polling = to_perftest_config(parse_perftest_args(PerftestTest::SendBw, {"-s", "65536"}));
  EXPECT_EQ(polling.cq_mod, 1u);
  EXPECT_FALSE(polling.use_event);
  const PerftestConfig events = to_perftest_config(parse_perftest_args(PerftestTest::SendBw, {"-s", "65536", "-e"}));
  EXPECT_EQ(events.cq_mod, 100u);
  EXPECT_TRUE(events.use_event);
  EXPECT_TRUE(to_perftest_config(parse_perftest_args(PerftestTest::ReadLat, {"--events"})).use_event);
}

TEST(PerftestCli, CyclesUnsortedAndHistogramOnTheLatencyTools) {
  using namespace hcasim::frontends;
  const PerftestOptions o = parse_perftest_args(PerftestTest::ReadLat, {"-CU", "--report-histogrm"});
  EXPECT_TRUE(o.report_cycles);
  EXPECT_TRUE(o.report_unsorted);
  EXPECT_TRUE(o.report_histogram);
}
