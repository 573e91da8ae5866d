// End-to-end checks of build/hcasim as a user runs it: determinism, bad input, real-byte data
// verification. Each test starts the binary in a child process.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/hcasim_run.h"
#include "util/csv.h"

namespace fs = std::filesystem;
using hcasim::test::Outcome;
using hcasim::test::slurp;

namespace {
class Cli : public hcasim::test::HcasimCommandTest {
 protected:
  Cli() : HcasimCommandTest("cli") {}
};
}  // namespace

TEST_F(Cli, SameCommandTwiceGivesIdenticalOutputAndCsv) {
  const std::string args = "netperf -c -C -P 1 -l 0.2 --set sdp.zcopy_thresh=0 -- -m 64K --csv ";
  Outcome a = run(args + (dir_ / "a.csv").string());
  Outcome b = run(args + (dir_ / "b.csv").string());
  ASSERT_EQ(a.status, 0) << a.err;
  ASSERT_EQ(b.status, 0) << b.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(slurp(dir_ / "a.csv"), slurp(dir_ / "b.csv"));
  EXPECT_NE(a.out.find("TCP STREAM TEST"), std::string::npos) << a.out;
}

TEST_F(Cli, VerifyDataMovesAndChecksRealBytes) {
  Outcome r = run("netperf -P 0 -l 0.01 --verify-data --set sdp.zcopy_thresh=1 -- -m 100000");
  EXPECT_EQ(r.status, 0) << r.err;
  Outcome s = run("netperf -P 0 -l 0.01 --verify-data --set sdp.zcopy_thresh=0 -- -m 3000");
  EXPECT_EQ(s.status, 0) << s.err;
}

TEST_F(Cli, SdpSocketBuffersAreDoubledAndCappedAsLinuxDoes) {
  // Linux's sock_setsockopt (net/core/sock.c) sets min(request, net.core.wmem_max) x 2 and
  // netperf prints what getsockopt returns. connectx-ddr-pcie1x8: wmem_max = rmem_max = 131071.
  // -s 262144 -> min(262144, 131071) x 2 = 262142 (seed 003 printed the same over IPoIB);
  // -S 65536 -> 65536 x 2 = 131072. Columns: Recv Socket, Send Socket, Send Message.
  Outcome r = run("netperf -P 0 -l 0.01 -- -m 8192 -s 262144 -S 65536");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("131072 262142   8192 ", 0), 0u) << r.out;
  // Without -m, netperf sends messages of the granted send socket size (nettest_bsd.c).
  Outcome d = run("netperf -P 0 -l 0.01 -- -s 32768");
  ASSERT_EQ(d.status, 0) << d.err;
  EXPECT_EQ(d.out.rfind(" 87380  65536  65536 ", 0), 0u) << d.out;
}

TEST_F(Cli, BadInputIsOneLineExitTwoAndNoCsv) {
  const fs::path csv = dir_ / "never.csv";
  const std::string tail = " --csv " + csv.string();
  struct Case {
    std::string args, needle;
  };
  const Case cases[] = {
      {"netperf -Z", "-Z"},
      {"netperf -l 1 -- -m 12Q", "-m"},
      {"netperf --set foo.bar=1", "foo.bar"},
      {"netperf --set pcie.max_payload=100", "pcie.max_payload"},
      {"netperf --platform /nonexistent/p.toml", "/nonexistent/p.toml"},
      {"netperf -T 99,0 -l 0.01", "-T"},
      {"netperf --profile=yes -l 0.01", "--profile"},
  };
  for (const auto& c : cases) {
    Outcome r = run(c.args + tail);
    EXPECT_EQ(r.status, 2) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.needle), std::string::npos) << c.args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.args << ": " << r.err;
    EXPECT_FALSE(fs::exists(csv)) << c.args;
  }
}

namespace {
// --profile's text (frontends/netperf_output.h format_cpu_profile), read back line by line.
struct ProfiledCpu {
  int rows = 0;              // activity and idle rows
  double pct_sum = 0;        // of their % time
  double seconds_sum = 0;    // of their seconds
  double busy_pct = -1;      // the "total busy" row
  double active_pct = 0;     // of the rows other than idle
  std::map<std::string, double> pct;  // % time by activity (and "idle")
  std::map<std::string, double> seconds;  // seconds by activity
  // The events line under a CPU that woke or resumed a sleeper (-1: no such line).
  long long wakeups = -1, ipis = -1, context_switches = -1;
};
struct ProfiledHost {
  std::string name;          // "local host (netperf)"
  double util_pct = -1;
  size_t cpus_announced = 0;
  double elapsed_s = 0;
  std::vector<ProfiledCpu> cpus;
};

/// The hosts in `text`; a line that is none of the profile's shapes is a test failure.
std::vector<ProfiledHost> parse_profile(const std::string& text) {
  static const std::regex summary(
      R"(^(.+ host \(.+\)): utilisation ([0-9.]+) % \(mean over ([0-9]+) CPUs?\) in ([0-9.]+) s$)");
  static const std::regex cpu_header(R"(^  CPU ([0-9]+) +% time +seconds +activity$)");
  static const std::regex row(R"(^ +([0-9]+\.[0-9]{2}) +([0-9]+\.[0-9]{6})  ([a-z_ ]+)$)");
  static const std::regex events(R"(^ +wakeups ([0-9]+) \(([0-9]+) with an IPI\), context switches ([0-9]+)$)");
  std::vector<ProfiledHost> hosts;
  std::istringstream in(text);
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    if (std::regex_match(line, m, summary)) {
      hosts.push_back({m[1], std::stod(m[2]), std::stoul(m[3]), std::stod(m[4]), {}});
    } else if (std::regex_match(line, m, cpu_header)) {
      if (hosts.empty()) ADD_FAILURE() << "CPU before any host: " << line;
      else hosts.back().cpus.emplace_back();
    } else if (std::regex_match(line, m, row)) {
      if (hosts.empty() || hosts.back().cpus.empty()) {
        ADD_FAILURE() << "row before any CPU: " << line;
        continue;
      }
      ProfiledCpu& cpu = hosts.back().cpus.back();
      const double pct = std::stod(m[1]);
      if (m[3] == "total busy") {
        cpu.busy_pct = pct;
        continue;
      }
      ++cpu.rows;
      cpu.pct[m[3]] = pct;
      cpu.seconds[m[3]] = std::stod(m[2]);
      cpu.pct_sum += pct;
      cpu.seconds_sum += std::stod(m[2]);
      if (m[3] != "idle") cpu.active_pct += pct;
    } else if (std::regex_match(line, m, events)) {
      if (hosts.empty() || hosts.back().cpus.empty()) {
        ADD_FAILURE() << "events before any CPU: " << line;
        continue;
      }
      ProfiledCpu& cpu = hosts.back().cpus.back();
      cpu.wakeups = std::stoll(m[1]);
      cpu.ipis = std::stoll(m[2]);
      cpu.context_switches = std::stoll(m[3]);
    } else {
      ADD_FAILURE() << "not a profile line: '" << line << "'";
    }
  }
  return hosts;
}
}  // namespace

// --profile: netperf's output first, byte for byte as without it, then both hosts' flat
// profiles; each CPU's rows (activities and idle) add up to 100 % and to the interval within
// the rounding of the printed rows; the CSV is the same with and without --profile.
TEST_F(Cli, ProfilePrintsBothHostsAndEachCpuSumsTo100) {
  Outcome p = run("netperf -l 1 --profile -- -m 64K --csv " + (dir_ / "p.csv").string());
  Outcome n = run("netperf -l 1 -- -m 64K --csv " + (dir_ / "n.csv").string());
  ASSERT_EQ(p.status, 0) << p.err;
  ASSERT_EQ(n.status, 0) << n.err;
  ASSERT_NE(n.out.find("TCP STREAM TEST"), std::string::npos) << n.out;
  ASSERT_EQ(p.out.substr(0, n.out.size()), n.out);
  EXPECT_EQ(slurp(dir_ / "p.csv"), slurp(dir_ / "n.csv"));
  EXPECT_EQ(n.out.find("utilisation"), std::string::npos) << "profile without --profile:\n" << n.out;

  const std::string profile = p.out.substr(n.out.size());
  const std::vector<ProfiledHost> hosts = parse_profile(profile);
  ASSERT_EQ(hosts.size(), 2u) << profile;
  EXPECT_EQ(hosts[0].name, "local host (netperf)");
  EXPECT_EQ(hosts[1].name, "remote host (netserver)");
  for (const auto& h : hosts) {
    SCOPED_TRACE(h.name);
    EXPECT_NEAR(h.elapsed_s, 1.0, 0.05);
    ASSERT_GT(h.cpus.size(), 0u) << profile;
    EXPECT_EQ(h.cpus.size(), h.cpus_announced);
    double busy_sum = 0, active_max = 0;
    for (size_t i = 0; i < h.cpus.size(); ++i) {
      SCOPED_TRACE("CPU block " + std::to_string(i));
      const ProfiledCpu& c = h.cpus[i];
      ASSERT_GT(c.rows, 0) << profile;
      // Each printed share is off by at most 0.005 from its exact value.
      EXPECT_NEAR(c.pct_sum, 100.0, 0.005 * c.rows + 1e-9) << profile;
      EXPECT_NEAR(c.seconds_sum, h.elapsed_s, 5e-7 * (c.rows + 1)) << profile;
      EXPECT_NEAR(c.busy_pct, c.active_pct, 0.005 * c.rows + 1e-9) << profile;
      // The wakeup row is its events at connectx-ddr-pcie1x8's costs: cpu.wakeup 2330 cycles /
      // 2.33 GHz = 1000 ns, cpu.ipi 500 ns, cpu.context_switch 4660 cycles = 2000 ns.
      const auto w = c.seconds.find("wakeup");
      if (w == c.seconds.end()) {
        EXPECT_EQ(c.wakeups, -1) << profile;
      } else {
        ASSERT_GE(c.wakeups, 0) << profile;
        EXPECT_LE(c.ipis, c.wakeups);
        EXPECT_NEAR(w->second,
                    (1000.0 * static_cast<double>(c.wakeups) + 500.0 * static_cast<double>(c.ipis) +
                     2000.0 * static_cast<double>(c.context_switches)) * 1e-9,
                    5e-7)
            << profile;
      }
      busy_sum += c.busy_pct;
      active_max = std::max(active_max, c.active_pct);
    }
    // The summary is the mean of the CPUs' busy shares; and the host did some work.
    EXPECT_NEAR(h.util_pct, busy_sum / static_cast<double>(h.cpus.size()), 0.0051) << profile;
    EXPECT_GT(active_max, 1.0) << profile;
  }
}

// The profile's utilisation is the one netperf prints with -c -C (the same busy time).
TEST_F(Cli, ProfileUtilisationMatchesNetperfColumns) {
  Outcome r = run("netperf -c -C -P 0 -l 0.2 --profile -- -m 64K");
  ASSERT_EQ(r.status, 0) << r.err;
  std::istringstream first(r.out.substr(0, r.out.find('\n')));
  std::vector<std::string> cols;
  for (std::string w; first >> w;) cols.push_back(w);
  ASSERT_EQ(cols.size(), 9u) << r.out;
  const std::vector<ProfiledHost> hosts = parse_profile(r.out.substr(r.out.find('\n') + 1));
  ASSERT_EQ(hosts.size(), 2u) << r.out;
  EXPECT_NEAR(hosts[0].util_pct, std::stod(cols[5]), 0.0101) << r.out;
  EXPECT_NEAR(hosts[1].util_pct, std::stod(cols[6]), 0.0101) << r.out;
}

TEST_F(Cli, MalformedPlatformFileNamesFileAndLine) {
  const fs::path p = dir_ / "bad.toml";
  std::ofstream(p) << "[pcie]\ngen = { value = 1, unit = \"\" }\n";
  Outcome r = run("netperf -l 0.01 --platform " + p.string());
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find(p.string() + ":2"), std::string::npos) << r.err;
}

// perftest tools: the same command and seed give the same report, byte for byte; another seed
// moves the noise (t_max), not the deterministic part (t_min of 2 B BlueFlame).
TEST_F(Cli, IbWriteLatIsDeterministicForAGivenSeed) {
  const std::string args = "ib_write_lat --platform connectx3-pcie3x8 -d mlx4_0 -F -s 2 -n 5000 --csv ";
  Outcome a = run(args + (dir_ / "a.csv").string());
  Outcome b = run(args + (dir_ / "b.csv").string());
  Outcome c = run(args + (dir_ / "c.csv").string() + " --seed 9");
  ASSERT_EQ(a.status, 0) << a.err;
  ASSERT_EQ(b.status, 0) << b.err;
  ASSERT_EQ(c.status, 0) << c.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_EQ(slurp(dir_ / "a.csv"), slurp(dir_ / "b.csv"));
  EXPECT_NE(slurp(dir_ / "a.csv"), slurp(dir_ / "c.csv"));
  // The classic five columns, as the seed prints them.
  EXPECT_NE(a.out.find(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]"), std::string::npos)
      << a.out;
}

TEST_F(Cli, PerftestBadInputIsOneLineAndStatus2) {
  for (const std::string args :
       {"ib_write_lat -s 0", "ib_write_lat -s abc", "ib_write_lat -n 3", "ib_write_lat -I 5000", "ib_write_lat -b",
        "ib_write_lat -q 2", "ib_write_bw -D 0", "ib_send_bw -c XRC", "ib_write_lat --set hca.blueflame=maybe",
        "ib_write_lat --set host.write_combining=2", "ib_write_lat --platform nosuch", "ib_write_bw -t 0",
        "ib_write_lat -s 4096 -I 913", "ib_write_lat --columns wide"}) {
    Outcome r = run(args + " --csv " + (dir_ / "x.csv").string());
    EXPECT_EQ(r.status, 2) << args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
    EXPECT_EQ(r.err.rfind("hcasim: error: ", 0), 0u) << args << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << args;
    EXPECT_FALSE(fs::exists(dir_ / "x.csv")) << args;
  }
}

// --csv writes a temporary file and renames it over the target: a symlink, FIFO or device
// there would be replaced, so anything but a regular file is refused (and left alone).
TEST_F(Cli, CsvRefusesToReplaceWhatIsNotARegularFile) {
  const fs::path target = dir_ / "target.csv";
  const fs::path link = dir_ / "link.csv";
  { std::ofstream(target) << "keep\n"; }
  fs::create_symlink(target, link);
  Outcome r = run("ib_write_lat -n 5 --csv " + link.string());
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(r.err, "hcasim: error: --csv " + link.string() + ": cannot write (it exists and is not a regular file)\n");
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(slurp(target), "keep\n");
}

namespace {
/// % time of `activity` on CPU `cpu` of the host whose name starts with `host` ("local",
/// "remote"), from the output of `hcasim netperf -P 0 --profile` (netperf's one row, then the
/// profile, read by parse_profile); 0 when the row is absent (a zero row is not printed).
double profile_pct(const std::string& out, const std::string& host, int cpu, const std::string& activity) {
  for (const ProfiledHost& h : parse_profile(out.substr(out.find('\n') + 1))) {
    if (h.name.rfind(host, 0) != 0) continue;
    if (static_cast<size_t>(cpu) >= h.cpus.size()) {
      ADD_FAILURE() << h.name << " has no CPU " << cpu;
      return 0;
    }
    const auto& rows = h.cpus[static_cast<size_t>(cpu)].pct;
    const auto it = rows.find(activity);
    return it == rows.end() ? 0 : it->second;
  }
  ADD_FAILURE() << "no host '" << host << "' in the profile";
  return 0;
}
}  // namespace

// Seed 002's effect and its explanation. Interrupts on CPU 1 (infinihost3-pcie1x8);
// 1 MB bcopy sends. netperf on CPU 0 shares CPU 1's L2; on CPU 2 it is on the other package, and
// every skb the completion work frees on CPU 1 (5 sk_buff lines + 8 struct page lines per 32 KB
// buffer) and the socket lines bounce across the front-side buses at 430 ns a line instead of
// 20. The sending CPU and the interrupt CPU take turns on the socket lock (the copy, then the
// completion work): together they are busy about one CPU's worth either way. With -T 2,2 a
// visible share of both goes to coherence stalls (under 1 % with -T 0,0), and the throughput
// falls by more than 15 %.
TEST_F(Cli, AffinityProfileShowsWhereTheFarBindingLoses) {
  const std::string base = "netperf --platform infinihost3-pcie1x8 --set sdp.zcopy_thresh=0 -c -C -P 0 -l 1 --profile";
  Outcome near = run(base + " -T 0,0 -- -m 1M");
  Outcome far = run(base + " -T 2,2 -- -m 1M");
  ASSERT_EQ(near.status, 0) << near.err;
  ASSERT_EQ(far.status, 0) << far.err;
  auto throughput = [](const std::string& out) {
    std::istringstream in(out);
    double recv_sock = 0, send_sock = 0, msg = 0, secs = 0, thr = 0;
    in >> recv_sock >> send_sock >> msg >> secs >> thr;
    return thr;
  };
  const double t_near = throughput(near.out), t_far = throughput(far.out);
  EXPECT_GT(t_near, 7000);
  EXPECT_LT(t_far, 0.85 * t_near) << near.out << far.out;
  // The application's CPU and the interrupt CPU together: one CPU, give or take 5 %.
  const double pair_near = 200 - profile_pct(near.out, "local", 0, "idle") - profile_pct(near.out, "local", 1, "idle");
  const double pair_far = 200 - profile_pct(far.out, "local", 2, "idle") - profile_pct(far.out, "local", 1, "idle");
  EXPECT_NEAR(pair_near, 100, 5) << near.out;
  EXPECT_NEAR(pair_far, 100, 5) << far.out;
  // What grew: coherence stalls on the sending CPU and on the interrupt CPU.
  const double coh_near = profile_pct(near.out, "local", 0, "coherence");
  const double coh_far = profile_pct(far.out, "local", 2, "coherence");
  EXPECT_LT(coh_near, 1.0) << near.out;
  EXPECT_GT(coh_far, 5.0) << far.out;
  EXPECT_GT(profile_pct(far.out, "local", 1, "coherence"), 5.0) << far.out;
  // And the share of the copy shrank with it: the CPU copies less per second.
  EXPECT_LT(profile_pct(far.out, "local", 2, "copy"), profile_pct(near.out, "local", 0, "copy") - 5.0);
}

// Interrupt signalling and moderation, seen in the sender's profile (infinihost3-pcie1x8,
// interrupts on CPU 1, -T 0,0, 64K bcopy sends: the completion work runs on CPU 1).
// - INTx instead of MSI-X adds cpu.intx_ack (1000 ns) to every cpu.interrupt (1500 ns) and
//   changes nothing else: the interrupt share grows by exactly 2500 / 1500.
// - CQ moderation (an event per 16 CQEs or 50 us) lets fewer events through: less interrupt time.
TEST_F(Cli, IntxCostsMoreAndModerationLessInterruptTime) {
  const std::string base =
      "netperf --platform infinihost3-pcie1x8 --set sdp.zcopy_thresh=0 -c -C -P 0 -l 1 --profile -T 0,0";
  Outcome msix = run(base + " -- -m 64K");
  Outcome intx = run(base + " --set hca.msi_x=off -- -m 64K");
  Outcome moderated = run(base + " --set hca.cq_moderation_count=16 --set hca.cq_moderation_period=50 -- -m 64K");
  for (const Outcome* o : {&msix, &intx, &moderated}) ASSERT_EQ(o->status, 0) << o->err;
  const double irq_msix = profile_pct(msix.out, "local", 1, "interrupt");
  const double irq_intx = profile_pct(intx.out, "local", 1, "interrupt");
  const double irq_mod = profile_pct(moderated.out, "local", 1, "interrupt");
  ASSERT_GT(irq_msix, 1.0) << msix.out;
  EXPECT_NEAR(irq_intx / irq_msix, 2500.0 / 1500.0, 0.01) << intx.out;
  EXPECT_LT(irq_mod, 0.75 * irq_msix) << moderated.out;
}

// perftest prints its banner, addresses and table header before it measures; so does hcasim,
// before the simulation: 64 B over 1000 QPs (5 million WRs) simulates for about a minute, and
// the header must not wait for it.
TEST_F(Cli, PerftestPrintsItsBannerBeforeTheSimulation) {
  hcasim::test::Proc p("banner-first", {HCASIM_BINARY, "ib_write_bw", "-s", "64", "-q", "1000"});
  std::string out;
  for (auto until = hcasim::test::Clock::now() + std::chrono::seconds(10); hcasim::test::Clock::now() < until;) {
    out = p.out();
    if (out.find("#bytes") != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_NE(out.find("RDMA_Write BW Test"), std::string::npos) << out;
  EXPECT_NE(out.find(" Number of qps   : 1000"), std::string::npos) << out;
  // The banner (15 lines), 1000 local and 1000 remote address lines, the dash line and the header.
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 15 + 2000 + 2) << out.substr(0, 2000);
  const std::string header = " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n";
  ASSERT_GE(out.size(), header.size());
  EXPECT_EQ(out.substr(out.size() - header.size()), header) << "the table's header last, no row yet";
  EXPECT_EQ(p.wait(std::chrono::milliseconds(0)), -1) << "the run ended within seconds: " << p.err();
}

// netperf -h prints the usage, as ib_write_lat -h does (netperf's -h was "not supported"), also
// as a test option after --.
TEST_F(Cli, NetperfHelpPrintsTheUsage) {
  for (const std::string args : {"netperf -h", "netperf -l 5 -- -h", "ib_write_lat -h"}) {
    Outcome r = run(args);
    EXPECT_EQ(r.status, 0) << args << ": " << r.err;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << args << ": " << r.out;
    EXPECT_EQ(r.err, "") << args;
  }
  EXPECT_NE(run("netperf -h").out.find("hcasim netperf [hcasim options]"), std::string::npos);
}

// --csv /dev/stdout: the CSV on stdout, whole, after the tool's own output (it was refused as
// "not a regular file"); byte for byte what --csv FILE writes. /dev/fd/1 and /proc/self/fd/1
// (and the same paths spelt with extra slashes) are stdout too: they were refused as "it exists
// and is not a regular file".
TEST_F(Cli, CsvToStdoutFollowsTheOutput) {
  for (const std::string args : {"netperf -P 0 -l 0.01 -c -C -- -m 64K", "ib_write_lat -n 200", "ib_write_bw -n 100"}) {
    const fs::path file = dir_ / "x.csv";
    Outcome to_file = run(args + " --csv " + file.string());
    ASSERT_EQ(to_file.status, 0) << args << ": " << to_file.err;
    const std::string csv = slurp(file);
    ASSERT_NE(csv.find("\n"), std::string::npos) << args;
    for (const char* out : {"/dev/stdout", "/dev/fd/1", "/proc/self/fd/1", "//dev//fd/1"}) {
      Outcome to_stdout = run(args + " --csv " + out);
      ASSERT_EQ(to_stdout.status, 0) << args << " --csv " << out << ": " << to_stdout.err;
      EXPECT_EQ(to_stdout.out, to_file.out + csv) << args << " --csv " << out;
      EXPECT_EQ(to_stdout.err, to_file.err) << args << " --csv " << out;
    }
    fs::remove(file);
  }
}

// A platform's socket.tcp_rmem_default below Linux's 256 B receive floor (SOCK_MIN_RCVBUF) is
// raised to it, as -S 1 is; it printed a 5 B socket.
TEST_F(Cli, DefaultSocketBufferKeepsLinuxsFloor) {
  Outcome dflt = run("netperf -P 0 -l 0.01 --set socket.tcp_rmem_default=5 -- -m 64K");
  Outcome asked = run("netperf -P 0 -l 0.01 -- -m 64K -S 1");
  ASSERT_EQ(dflt.status, 0) << dflt.err;
  ASSERT_EQ(asked.status, 0) << asked.err;
  std::istringstream row(dflt.out);
  std::string recv_socket;
  row >> recv_socket;
  EXPECT_EQ(recv_socket, "256") << dflt.out;
  EXPECT_EQ(dflt.out, asked.out);
}

// SIGINT and SIGTERM: 130 and 143 in every command, one line, nothing written. netperf and the
// perftest tools simulate in-process, where SimGrid's own SIGINT handler made Ctrl-C exit 1
// (hcasim's "the faults made the run fail") without a word; run already stopped its children.
TEST_F(Cli, SignalsExit128PlusTheSignalWritingNothing) {
  const std::string csv = (dir_ / "out.csv").string();
  struct Command {
    std::vector<std::string> args;
    std::string stdout_until;  ///< what stdout has once the simulation runs ("" for nothing)
  };
  const std::vector<Command> commands = {
      {{"netperf", "-l", "1000", "-c", "-C", "--csv", csv}, ""},
      {{"netperf", "--transport", "ipoib", "-l", "1000", "--csv", csv}, ""},
      {{"ib_write_bw", "-s", "64", "-q", "1000", "--csv", csv}, "MsgRate[Mpps]\n"},
      {{"ib_write_lat", "-n", "100000000", "--csv", csv}, "t_typical[usec]\n"},
      {{"run", "seed000", "-j", "1", "--csv", csv}, ""},
  };
  for (const Command& c : commands)
    for (const auto& [sig, name] : {std::pair{SIGINT, "SIGINT"}, std::pair{SIGTERM, "SIGTERM"}}) {
      std::vector<std::string> argv{HCASIM_BINARY};
      argv.insert(argv.end(), c.args.begin(), c.args.end());
      const std::string what = c.args[0] + " " + c.args[1] + " " + name;
      hcasim::test::Proc p("signal", argv);
      // Under way: the perftest banner is out, or a second has passed.
      const auto until = hcasim::test::Clock::now() + std::chrono::seconds(c.stdout_until.empty() ? 1 : 10);
      while (hcasim::test::Clock::now() < until &&
             (c.stdout_until.empty() || p.out().find(c.stdout_until) == std::string::npos))
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      ASSERT_EQ(p.wait(std::chrono::milliseconds(0)), -1) << what << ": ended early: " << p.err();
      const std::string out_before = p.out();
      p.signal(sig);
      EXPECT_EQ(p.wait(std::chrono::seconds(10)), 128 + sig) << what << ": " << p.err();
      const std::string err = p.err();
      const std::string line = c.args[0] == "run"
                                   ? fmt::format("hcasim: error: interrupted by signal {} \\(0 of [0-9]+ runs done\\); nothing written\n", sig)
                                   : fmt::format("hcasim: error: interrupted by signal {} \\({}\\); nothing written\n", sig, name);
      EXPECT_TRUE(std::regex_match(err, std::regex(line))) << what << ": " << err;
      EXPECT_EQ(p.out(), out_before) << what << ": no result after the signal";
      EXPECT_FALSE(fs::exists(csv)) << what;
      for (const auto& e : fs::directory_iterator(dir_)) ADD_FAILURE() << what << " left " << e.path();
    }
}

// On a terminal, a long netperf run says how far it is and how long it will take; -l 1e9 ran
// for ever without a word. (Off a terminal nothing is added: SignalsExit128... checks that
// stderr has only its one line after a second of -l 1000.)
TEST_F(Cli, LongNetperfRunShowsProgressOnATerminal) {
  int master = -1, slave = -1;
  ASSERT_EQ(::openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, slave, 2);
  posix_spawn_file_actions_addclose(&fa, master);
  std::vector<std::string> args{HCASIM_BINARY, "netperf", "-l", "1e9"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  ASSERT_EQ(posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  ::close(slave);
  std::string seen;
  static const std::regex line(
      "hcasim: simulated [0-9.]+ s of 1000000000 s \\([0-9.]+ %\\) at [0-9.e+]+ simulated s per wall s, about "
      "[0-9.e+]+ (years|days) to go");
  for (auto until = hcasim::test::Clock::now() + std::chrono::seconds(15);
       hcasim::test::Clock::now() < until && !std::regex_search(seen, line);) {
    pollfd p{master, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[512];
    const ssize_t n = ::read(master, buf, sizeof buf);
    if (n <= 0) break;
    seen.append(buf, static_cast<size_t>(n));
  }
  ::kill(pid, SIGINT);
  int st = 0;
  ::waitpid(pid, &st, 0);
  ::close(master);
  EXPECT_TRUE(std::regex_search(seen, line)) << seen;
  EXPECT_NE(seen.find("\r\033[K"), std::string::npos) << "redrawn in place";
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 130) << st;
}

TEST_F(Cli, StatsGiveEachLinksBusyTime) {
  // --stats' second line: each SimGrid link's busy time (bytes moved / its bandwidth) and its
  // share of the run (sim::TwoHostBed::link_busy_s). ib_write_bw streams 64 KB WRITEs from four
  // QPs back to back through A's one send engine, so the route's least-bandwidth link, A's PCIe
  // host->device direction (the payload's DMA reads; connectx3-pcie3x8), is busy the whole run,
  // every other link of A's route less, and B's route, which RDMA WRITE does not use (the ACKs
  // are not transfers), not at all.
  const Outcome o = run("ib_write_bw --stats --platform connectx3-pcie3x8 -s 65536 -n 5000 -q 4");
  ASSERT_EQ(o.status, 0) << o.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(o.err, m, std::regex("\nhcasim: link busy: (.*)\n"))) << o.err;
  const std::string line = m[1];
  EXPECT_TRUE(std::regex_search(line, std::regex("^A-pcie-h2d=[0-9.]+s\\(100\\.0%\\) "))) << line;
  for (const char* link : {"A-dma-read-tags", "ib-A-to-B", "B-pcie-d2h"})
    EXPECT_TRUE(std::regex_search(line, std::regex(std::string(link) + "=[0-9.]+s\\(([1-9]|[1-9][0-9])\\.[0-9]%\\)")))
        << link << ": " << line;
  for (const char* link : {"B-pcie-h2d", "B-dma-read-tags", "ib-B-to-A", "A-pcie-d2h"})
    EXPECT_NE(line.find(std::string(link) + "=0.000000s(0.0%)"), std::string::npos) << link << ": " << line;
}

TEST_F(Cli, TransfersTimedAloneGiveWhatSimGridGives) {
  // sim/kernel.h Scheduler::transfer: a transfer alone on its links is timed in closed form
  // (bytes / least bandwidth); one sharing a link goes through SimGrid. Every case that could
  // split the closed form, run both ways (HCASIM_SIMGRID_TRANSFERS=all puts every transfer
  // through SimGrid, as before): netperf's printed figures must be identical. The data and the
  // credit updates of an SDP stream flow in opposite directions on every SDP case.
  const struct {
    std::string args;
    bool shares;  // some transfer shares a link: the zx1 PCI-X bus is in both directions' routes
  } cases[] = {
      {"netperf -c -C -P 0 -l 0.2 --set sdp.zcopy_thresh=0 -- -m 1M", false},
      {"netperf -c -C -P 0 -l 0.2 --set sdp.zcopy_thresh=1 -- -m 64K", false},
      // Retransmissions (go-back-N) and duplicates cross the route again, from the same engine.
      {"netperf -c -C -P 0 -l 0.2 --set fault.loss=0.001 --set fault.dup=0.001 --set fault.seed=7 -- -m 64K",
       false},
      {"netperf -c -C -P 0 -l 0.2 --platform zx1-rx2600-pcix --remote-platform zx1-rx4640-pcix -T ,2 -- -m 8192 "
       "-s 262144 -S 262144",
       true},
      // One send engine serves the four QPs' send queues in turn.
      {"ib_write_bw --platform connectx3-pcie3x8 -s 65536 -n 500 -q 4", false},
      // The latency tool's interference events (the KVM guest's platform).
      {"ib_write_lat --platform connectx3-pcie3x8-kvm -d mlx4_0 -i 1 -F -s 64 -n 2000", false},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.args);
    const Outcome alone = run(c.args + " --stats");
    ASSERT_EQ(alone.status, 0) << alone.err;
    ::setenv("HCASIM_SIMGRID_TRANSFERS", "all", 1);
    const Outcome simgrid = run(c.args + " --stats");
    ::unsetenv("HCASIM_SIMGRID_TRANSFERS");
    ASSERT_EQ(simgrid.status, 0) << simgrid.err;
    EXPECT_EQ(alone.out, simgrid.out);
    std::smatch m;
    ASSERT_TRUE(std::regex_search(alone.err, m, std::regex("transfers_simgrid=([0-9]+) transfers_alone=([0-9]+)")))
        << alone.err;
    EXPECT_EQ(std::stoull(m[1]) > 0, c.shares) << m[0];
    EXPECT_GT(std::stoull(m[2]), 0u) << m[0];
    ASSERT_TRUE(std::regex_search(simgrid.err, m, std::regex("transfers_simgrid=([0-9]+) transfers_alone=0")))
        << simgrid.err;
  }
  // Any other value is a mistake, not the default.
  ::setenv("HCASIM_SIMGRID_TRANSFERS", "some", 1);
  const Outcome bad = run("netperf -P 0 -l 0.01");
  ::unsetenv("HCASIM_SIMGRID_TRANSFERS");
  EXPECT_EQ(bad.status, 2);
  EXPECT_EQ(bad.err, "hcasim: error: HCASIM_SIMGRID_TRANSFERS=some: the only value is 'all' (every transfer through "
                     "SimGrid)\n");
  EXPECT_EQ(bad.out, "");
}

TEST_F(Cli, UcWritesLandAsRcWritesAndCompleteWithoutWaitingForTheAck) {
  // -c UC (perftest: IBV_QPT_UC QPs) on connectx-ddr-pcie1x8. ib_write_lat's loop polls the byte
  // the peer's WRITE lands: no step of it waits for an ACK, so UC's figures are RC's exactly.
  const Outcome rc_lat = run("ib_write_lat -s 2 -n 500 --csv /dev/stdout");
  const Outcome uc_lat = run("ib_write_lat -s 2 -n 500 -c UC --csv /dev/stdout");
  ASSERT_EQ(uc_lat.status, 0) << uc_lat.err;
  const auto csv_of = [](const std::string& out) { return out.substr(out.find("test,")); };
  EXPECT_EQ(csv_of(uc_lat.out), csv_of(rc_lat.out));
  EXPECT_NE(uc_lat.out.find(" Connection type : UC"), std::string::npos) << uc_lat.out;
  // ib_write_bw -t 1: one WRITE in flight. An RC WRITE completes when its ACK is back (IBA
  // 9.7.5.1.2), a UC WRITE once its last packet has left (no ACK, IBA 9.7.5.2): each UC message
  // is shorter by at least the ACK's way back through the responder's HCA
  // (hca.rx_processing 300 ns) and the cable (ib.propagation 25 ns).
  const auto per_message_ns = [&](const std::string& conn) {
    const Outcome o = run("ib_write_bw -t 1 -Q 1 -s 64 -n 2000 -c " + conn + " --csv " + (dir_ / "bw.csv").string());
    EXPECT_EQ(o.status, 0) << o.err;
    const auto rows = hcasim::util::parse_csv(slurp(dir_ / "bw.csv"), "bw.csv");
    const auto col = std::find(rows[0].begin(), rows[0].end(), "msg_rate_mpps") - rows[0].begin();
    return 1e3 / std::stod(rows.at(1).at(static_cast<size_t>(col)));
  };
  const double rc_ns = per_message_ns("RC"), uc_ns = per_message_ns("UC");
  std::cout << "ib_write_bw -t 1 -s 64: RC " << rc_ns << " ns per message, UC " << uc_ns << " ns\n";
  EXPECT_LT(uc_ns, rc_ns - 300 - 25);
  EXPECT_GT(uc_ns, 0.4 * rc_ns);
}

// A timed TCP_RR's alarm interrupts netperf's recv() of a response. netperf 2.7's omni loop
// (nettest_omni.c send_omni_inner) has counted that transaction's request (bytes_sent and
// local_send_calls grow after send_data) but counts none of its response (recv_data returns -1
// on EINTR, before bytes_received and local_receive_calls grow). So a run of -l S that completes
// N transactions counts what a run of -l -N counts (the same seed, the same N transactions), and
// one request more. -r 64,3000: a response spans two of SDP's first 2048 B receive buffers, or
// two of datagram mode's 1992 B segments, so some take two recv() calls.
TEST_F(Cli, TimedRrCountsTheResponsesOfItsCompletedTransactionsOnly) {
  for (const std::string transport : {"sdp", "ipoib"}) {
    SCOPED_TRACE(transport);
    const std::string cmd = "netperf -t TCP_RR --json --transport " + transport;
    const Outcome timed = run(cmd + " -l 0.02 -- -r 64,3000");
    ASSERT_EQ(timed.status, 0) << timed.err;
    const auto t = nlohmann::json::parse(timed.out)["result"];
    const uint64_t n = t["transactions"].get<uint64_t>();
    ASSERT_GT(n, 100u);
    const Outcome counted = run(cmd + " -l -" + std::to_string(n) + " -- -r 64,3000");
    ASSERT_EQ(counted.status, 0) << counted.err;
    const auto c = nlohmann::json::parse(counted.out)["result"];
    ASSERT_EQ(c["transactions"].get<uint64_t>(), n);
    EXPECT_EQ(t["bytes_received"].get<uint64_t>(), n * 3000);
    EXPECT_EQ(t["bytes_received"], c["bytes_received"]);
    EXPECT_EQ(t["recv_calls"], c["recv_calls"]);
    EXPECT_GE(t["recv_calls"].get<uint64_t>(), n);
    EXPECT_EQ(t["bytes_sent"].get<uint64_t>(), (n + 1) * 64);
    EXPECT_EQ(t["send_calls"].get<uint64_t>(), n + 1);
    EXPECT_EQ(c["send_calls"].get<uint64_t>(), n);
  }
}
