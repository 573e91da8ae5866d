// Faults on the simulated wire, end to end through build/hcasim as a user runs it: a 1 GiB SDP
// stream (netperf -l -BYTES) over a lossy link arrives whole (equal crc32 at both ends), slower,
// with its retransmissions reported; other faults; the settings on every command; and no trace
// of any of it without a fault. Each test starts the binary in a child process.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "tests/hcasim_run.h"

namespace fs = std::filesystem;
using hcasim::test::Outcome;
using hcasim::test::slurp;

namespace {

/// FaultStats::summary() as printed on a "hcasim: local  faults: ..." line.
struct Faults {
  bool found = false;
  uint64_t packets = 0, lost = 0, corrupted = 0, duplicated = 0, reordered = 0, retransmitted = 0, naks = 0,
           timeouts = 0, rnr_naks = 0;
};

Faults faults_of(const std::string& out, const std::string& side) {
  const std::regex re("hcasim: " + side +
                      R"(\s+faults: (\d+) packets, (\d+) lost, (\d+) corrupted, (\d+) duplicated, (\d+) reordered; )"
                      R"((\d+) retransmitted \((\d+) NAKs, (\d+) timeouts\), (\d+) RNR NAKs)");
  std::smatch m;
  Faults f;
  if (!std::regex_search(out, m, re)) return f;
  f.found = true;
  uint64_t* fields[] = {&f.packets,       &f.lost, &f.corrupted, &f.duplicated, &f.reordered,
                        &f.retransmitted, &f.naks, &f.timeouts,  &f.rnr_naks};
  for (size_t i = 0; i < 9; ++i) *fields[i] = std::stoull(m[i + 1].str());
  return f;
}

/// The throughput column of a `-P 0` netperf data row, 10^6 bits/s.
double throughput_of(const std::string& out) {
  std::istringstream in(out);
  double recv_sock = 0, send_sock = 0, msg = 0, elapsed = 0, tput = -1;
  in >> recv_sock >> send_sock >> msg >> elapsed >> tput;
  return tput;
}

class Faults_ : public hcasim::test::HcasimCommandTest {
 protected:
  Faults_() : HcasimCommandTest("fault") {}
};

/// "hcasim: data: N B sent, crc32 X; M B received, crc32 Y" -> {N, X, M, Y}.
std::smatch data_line(const std::string& out) {
  static const std::regex re(R"(hcasim: data: (\d+) B sent, crc32 ([0-9a-f]{8}); (\d+) B received, crc32 ([0-9a-f]{8}))");
  std::smatch m;
  std::regex_search(out, m, re);
  return m;
}

}  // namespace

TEST_F(Faults_, GibStreamWithPacketLossArrivesWholeSlowerAndReportsItsRetransmissions) {
  // 1 GiB in 64 KiB send() calls (bzcopy: each call waits for its SENDs' ACKs), 1e-3 of the
  // packets lost on the wire, every byte moved and compared, crc32 of both streams.
  const std::string base = "netperf -P 0 -l -1073741824 -- -m 64K";
  Outcome lossy = run(base + " --set fault.loss=1e-3 --verify-data");
  ASSERT_EQ(lossy.status, 0) << lossy.err;
  Outcome clean = run(base);
  ASSERT_EQ(clean.status, 0) << clean.err;

  const std::smatch d = data_line(lossy.err);
  ASSERT_FALSE(d.empty()) << lossy.err;
  EXPECT_EQ(d[1].str(), "1073741824");
  EXPECT_EQ(d[3].str(), "1073741824");
  EXPECT_EQ(d[2].str(), d[4].str()) << "crc32 of the sent and received streams";

  const Faults a = faults_of(lossy.err, "local "), b = faults_of(lossy.err, "remote");
  ASSERT_TRUE(a.found && b.found) << lossy.err;
  // stdout is netperf's alone: the one data row.
  EXPECT_EQ(lossy.out.find("hcasim:"), std::string::npos) << lossy.out;
  // By hand: 1 GiB in SDP messages of 32 KiB payload + 16 B BSDH = 32784 B, 17 packets at MTU
  // 2048 (16 full, one of 16 B): 32768 messages, 557056 data packets, at least 524288
  // (1 GiB / 2048), plus the retransmissions; the receiver puts one ACK per message on the wire.
  EXPECT_GE(a.packets, 557056u + a.retransmitted);
  EXPECT_GE(b.packets, 32768u);
  EXPECT_GT(a.retransmitted, 0u);
  EXPECT_GT(a.naks, 0u);
  EXPECT_EQ(a.corrupted + a.duplicated + a.reordered, 0u);
  // Each packet is lost with p = 1e-3: lost ~ Binomial(packets, p), within 5 sigma.
  const double n = static_cast<double>(a.packets + b.packets);
  const double mean = 1e-3 * n, sigma = std::sqrt(n * 1e-3 * (1 - 1e-3));
  EXPECT_NEAR(static_cast<double>(a.lost + b.lost), mean, 5 * sigma) << "of " << n << " packets";
  // Go-back-N resends from the lost packet to the end of its message: 1..17 packets each.
  EXPECT_GE(a.retransmitted, a.naks + a.timeouts);

  const double t_lossy = throughput_of(lossy.out), t_clean = throughput_of(clean.out);
  EXPECT_GT(t_clean, 5000) << clean.out;
  EXPECT_LT(t_lossy, t_clean) << lossy.out << clean.out;
  // No fault configured: netperf's output alone.
  EXPECT_EQ(clean.out.find("hcasim:"), std::string::npos) << clean.out;
}

TEST_F(Faults_, DuplicationReorderingAndBadIcrcStillDeliverEveryByte) {
  Outcome r = run("netperf -P 0 -l -268435456 --verify-data --set fault.dup=1e-3 --set fault.reorder=1e-3 "
                  "--set fault.corrupt=1e-3 --set fault.seed=7 -- -m 64K");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::smatch d = data_line(r.err);
  ASSERT_FALSE(d.empty()) << r.err;
  EXPECT_EQ(d[1].str(), "268435456");
  EXPECT_EQ(d[3].str(), "268435456");
  EXPECT_EQ(d[2].str(), d[4].str());
  const Faults a = faults_of(r.err, "local ");
  ASSERT_TRUE(a.found) << r.err;
  EXPECT_EQ(a.lost, 0u);
  EXPECT_GT(a.corrupted, 0u);
  EXPECT_GT(a.duplicated, 0u);
  EXPECT_GT(a.reordered, 0u);
  // Bad ICRC and overtaken packets are resent; duplicates are not. A packet dropped at the ICRC
  // check costs one NAK (or, with nothing behind it, one timeout). An overtaken one can cost
  // two: the packet behind it draws the NAK, the late one is then accepted and clears the
  // responder's NAK state, and the rest of the first train draws a second NAK one PSN on.
  EXPECT_GT(a.retransmitted, 0u);
  EXPECT_LE(a.naks + a.timeouts, a.corrupted + 2 * a.reordered);
}

TEST_F(Faults_, SameSeedSameFatesOtherSeedOtherFates) {
  const std::string args = "netperf -P 0 -l -16777216 --set fault.loss=1e-3 -- -m 64K";
  Outcome a = run(args), b = run(args), c = run(args + " --set fault.seed=2");
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_EQ(a.out + a.err, b.out + b.err);
  EXPECT_NE(a.err, c.err);  // the fault counts
}

TEST_F(Faults_, NoFaultConfiguredLeavesTheOutputUntouched) {
  // qp.* and fault.seed alone configure no fault: byte-identical to the plain run.
  Outcome plain = run("netperf -c -C -l 0.05 -- -m 32K");
  Outcome set = run("netperf -c -C -l 0.05 --set fault.seed=9 --set qp.retry_cnt=3 --set qp.timeout=20 -- -m 32K");
  ASSERT_EQ(plain.status, 0) << plain.err;
  ASSERT_EQ(set.status, 0) << set.err;
  EXPECT_EQ(plain.out, set.out);
  EXPECT_EQ(plain.err, set.err);
  Outcome lat = run("ib_write_lat -n 200");
  Outcome lat_set = run("ib_write_lat -n 200 --set qp.rnr_retry=7 --set fault.loss=0");
  ASSERT_EQ(lat.status, 0) << lat.err;
  EXPECT_EQ(lat.out, lat_set.out);
}

TEST_F(Faults_, PerftestReportsFaultsAfterItsOwnOutput) {
  Outcome r = run("ib_write_lat -n 1000 --set fault.loss=1e-2");
  ASSERT_EQ(r.status, 0) << r.err;
  // perftest's report on stdout, hcasim's fault lines on stderr.
  EXPECT_NE(r.out.find("t_typical"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("hcasim:"), std::string::npos) << r.out;
  const Faults a = faults_of(r.err, "local "), b = faults_of(r.err, "remote");
  EXPECT_GT(a.lost + b.lost, 0u);
  // A lost WRITE of the ping-pong has nothing behind it: the 67.1 ms local ACK timer.
  EXPECT_GT(a.timeouts + b.timeouts, 0u);
}

TEST_F(Faults_, BadFaultSettingsAreOneLineErrorsWithStatus2) {
  for (const std::string args :
       {"netperf -l 1 --set fault.loss=1.5", "netperf -l 1 --set fault.loss=0.6 --set fault.dup=0.5",
        "netperf -l 1 --set qp.retry_cnt=8", "netperf -l 1 --set fault.bogus=1", "ib_write_lat --set qp.timeout=32",
        "ib_send_bw --set fault.reorder=x"}) {
    Outcome r = run(args);
    EXPECT_EQ(r.status, 2) << args << "\n" << r.out << r.err;
    EXPECT_EQ(r.err.rfind("hcasim: error: --set ", 0), 0u) << args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << args;
  }
}

TEST_F(Faults_, RetriesRunOutInOneLineNamingTheSideOnce) {
  // 80 % of the packets lost: the 7 transport retries (qp.retry_cnt) run out and the QP goes
  // to the error state (at 60 % they do not: a NAK acknowledges the packets before its gap,
  // which is progress that starts the count again); the failure is a line that names the netperf side once. With faults
  // injected it is a runtime failure (exit 1), as a real run's, not the simulator's (exit 3).
  Outcome r = run("netperf -P 0 -l 0.05 --set fault.loss=0.8 -- -m 64K");
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(r.err.rfind("hcasim: error: netperf: completion error transport retry counter exceeded", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  // perftest's completion error prints libibverbs' status number (IBV_WC_RETRY_EXC_ERR = 12).
  Outcome p = run("ib_write_lat -n 1000 --set qp.retry_cnt=0 --set fault.loss=0.01");
  EXPECT_EQ(p.status, 1) << p.err;
  EXPECT_EQ(p.err, "hcasim: error: ib_write_lat client: completion with error (status 12: transport retry counter "
                   "exceeded) (with faults on the wire: fault.*)\n");
}

TEST_F(Faults_, LatencyPingPongOfMultiPacketWritesSurvivesEveryFault) {
  // ib_write_lat polls the last byte of each RDMA WRITE. A 4096 B message is two 2048 B packets;
  // a fault splits it into trains that land apart, and the poll must see the message once, when
  // its last packet lands: a poll woken by the first train read the previous iteration's byte.
  for (const char* fault : {"fault.dup=1e-2", "fault.loss=1e-2", "fault.reorder=1e-2", "fault.corrupt=1e-2"}) {
    Outcome r = run(std::string("ib_write_lat -s 4096 -n 2000 --set ") + fault);
    EXPECT_EQ(r.status, 0) << fault << ": " << r.err;
    EXPECT_NE(r.out.find(" 4096 "), std::string::npos) << fault << ": " << r.out;
  }
}
