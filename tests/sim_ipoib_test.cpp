// netperf TCP_STREAM over IPoIB (sim/ipoib_sim.h) against seeds 003 and 004
// (shared/seeds/003_53dfb8b0c199e3c9.txt, 004_928f1b11ac85aec2.txt; the numbers are
// validation/seed003/seed003_004_ipoib_zx1.csv and seed003_zx1_ipoib_profile.csv): throughput,
// the profile shares and call rates of seed 003's run, the cost of leaving netserver on the
// interrupt CPU, and connected vs datagram mode. Runs of 1 simulated second: the stream is in
// its steady state within milliseconds (the window fills in ~100 segments; 0.2 s gives the same
// throughputs to 0.1 %, which the sanitizer build uses: tests/sim_length.h). In-process runs build
// one SimGrid engine each, so each test runs one; tests comparing runs start build/hcasim.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/netstack.h"
#include "model/units.h"
#include "model/platform.h"
#include "sim/ipoib_sim.h"
#include "tests/hcasim_run.h"
#include "tests/sim_length.h"

using namespace hcasim;
using model::KernelFn;

namespace {

model::Platform platform(const std::string& name) {
  return model::Platform::load_file(std::string(HCASIM_REFERENCE_DIR) + "/../scenarios/platforms/" + name + ".toml");
}

/// Seed 003's netperf flags: -- -m 8192 -s 262144 -S 262144.
frontends::TcpStreamConfig seed003_flags(double length_s) {
  frontends::TcpStreamConfig c;
  c.length_s = length_s;
  c.send_size = 8192;
  c.local_send_socket = 262144;
  c.remote_recv_socket = 262144;
  return c;
}

/// `own` seconds, or the build's shorter HCASIM_TEST_SIM_SECONDS (the sanitizer build).
double seconds(double own) {
#ifdef HCASIM_TEST_SIM_SECONDS
  return std::min(own, std::stod(HCASIM_TEST_SIM_SECONDS));
#else
  return own;
#endif
}
std::string seconds_flag(double own) { return std::to_string(seconds(own)); }

double pct(double ns, double elapsed_s) { return 100 * ns * 1e-9 / elapsed_s; }

double busy_ns(const frontends::CoreProfile& core) {
  double t = 0;
  for (const auto& [name, ns] : core.busy_ns) t += ns;
  return t;
}

/// The throughput column (Mbit/s) of netperf's -P 0 row.
double throughput_of(const std::string& out) {
  std::istringstream in(out);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  std::istringstream row(last);
  double v = 0;
  for (int i = 0; i < 5; ++i) row >> v;
  return v;
}

class IpoibCommand : public test::HcasimCommandTest {
 protected:
  IpoibCommand() : HcasimCommandTest("ipoib") {}
  /// `hcasim netperf` between the zx1 hosts with seed 003's flags, 1 simulated second.
  double zx1(const std::string& extra) {
    const test::Outcome o = run("netperf -l " + seconds_flag(1.0) + " -P 0 -t TCP_STREAM --transport ipoib --platform zx1-rx2600-pcix "
                                "--remote-platform zx1-rx4640-pcix " + extra + " -- -m 8192 -s 262144 -S 262144");
    EXPECT_EQ(o.status, 0) << o.err;
    return throughput_of(o.out);
  }
};

}  // namespace

// Seed 003: 1588.33 Mbit/s; the receiver's CPU 3 spends 34.69 % in do_csum (16.6M calls in the
// 60 s run, 277k/s) and the sender's CPU 1 is 25.09 % idle. The project's tolerances: 10 %, 5
// points, 5 points, 20 %.
TEST(SimIpoib, Seed003ThroughputProfileSharesAndChecksumRate) {
  const frontends::IpoibStreamResult r =
      sim::run_ipoib_stream(platform("zx1-rx2600-pcix"), platform("zx1-rx4640-pcix"), seed003_flags(seconds(1.0)));
  const auto& s = r.stream;
  // Linux doubles -s/-S and caps them at 2 x 131071: netperf prints 262142 (the seed's line).
  EXPECT_EQ(s.local_send_socket, 262142u);
  EXPECT_EQ(s.remote_recv_socket, 262142u);
  EXPECT_EQ(r.mss, 1992u);  // 2048 - 4 (IPoIB) - 20 (IP) - 20 (TCP) - 12 (timestamps)
  const double mbps = static_cast<double>(s.bytes_received) * 8 / s.elapsed_s / 1e6;
  EXPECT_NEAR(mbps, 1588.33, 0.10 * 1588.33);

  const frontends::KernelProfile& rx3 = r.remote_kernel.at(3);
  const double csum_pct = pct(rx3.ns[static_cast<size_t>(KernelFn::DoCsum)], s.elapsed_s);
  EXPECT_NEAR(csum_pct, 34.69, 5.0);
  const double csum_calls_per_s = rx3.calls[static_cast<size_t>(KernelFn::DoCsum)] / s.elapsed_s;
  EXPECT_NEAR(csum_calls_per_s, 16.6e6 / 60, 0.20 * 16.6e6 / 60);

  const double sender_idle = 100 - pct(busy_ns(s.local_profile.at(1)), s.elapsed_s);
  EXPECT_NEAR(sender_idle, 25.09, 5.0);
  // netserver and the interrupts share CPU 3 (seed 003's profile); the other CPUs idle.
  EXPECT_GT(pct(busy_ns(s.remote_profile.at(3)), s.elapsed_s), 90.0);
  EXPECT_LT(pct(busy_ns(s.remote_profile.at(0)), s.elapsed_s), 1.0);
  // The receiver ACKs about once per 60 segments (its profile: ip_conntrack_in 5.60M vs
  // tcp_v4_rcv 5.51M): its reader lags and ACKs from recv().
  EXPECT_LT(static_cast<double>(r.acks), 0.05 * static_cast<double>(r.segments));
}

// Seed 004: "not pinning the netserver thread to the other CPU costs around 25% performance";
// Seed 003: with FMR, netserver on the interrupt CPU is 20-30 % below netserver pinned away.
// host.netfilter off as scenarios/seed003.toml simulates seed 004.
TEST_F(IpoibCommand, NetserverOnTheInterruptCpuCosts20To30Percent) {
  const double pinned = zx1("--set hca.fmr=on --set host.netfilter=off -T ,2");
  const double unpinned = zx1("--set hca.fmr=on --set host.netfilter=off");
  std::cout << "FMR on: netserver pinned away " << pinned << " Mbit/s, on the interrupt CPU " << unpinned
            << " Mbit/s (" << 100 * (unpinned / pinned - 1) << " %)\n";
  EXPECT_GE(unpinned, 0.70 * pinned);
  EXPECT_LE(unpinned, 0.80 * pinned);
  EXPECT_NEAR(pinned, 3500, 350);
}

// Connected mode (RC, MTU 65520) carries a 64 KB segment per packet: the per-packet work is
// spread over 33 times the bytes of datagram mode's 1992 B segments. Socket limits raised as
// IPoIB-CM tuning guides do, so that the window holds more than a few 64 KB segments.
TEST_F(IpoibCommand, ConnectedModeBeatsDatagramOnConnectX) {
  auto mode = [&](const char* m) {
    const test::Outcome o = run("netperf -l " + seconds_flag(0.5) + " -P 0 --transport ipoib --set ipoib.mode=" + m +
                                " --set socket.wmem_max=4194304 --set socket.rmem_max=4194304 -- -m 64K -s 1M -S 1M");
    EXPECT_EQ(o.status, 0) << o.err;
    return throughput_of(o.out);
  };
  const double datagram = mode("datagram"), connected = mode("connected");
  std::cout << "connectx-ddr-pcie1x8 IPoIB: datagram " << datagram << " Mbit/s, connected " << connected
            << " Mbit/s\n";
  EXPECT_GT(datagram, 1000);
  EXPECT_GT(connected, 1.2 * datagram);
  // Neither exceeds what the DDR 4x link carries of TCP payload (model/ipoib.h: 15.8 Gbit/s).
  EXPECT_LT(connected, 15800);
}

// Seed 004's SDP run between the zx1 hosts (FMR on, netserver pinned away from the interrupt
// CPU) over the PCI-X buses. netserver's CPU does the receive copies alone, out of DMA-written
// buffers at cpu.copy_rx_rate = 0.76 B/ns (zx1-rx4640-pcix: the receiver's cold read rate
// fitted to seed 003's do_csum), so SDP cannot exceed 0.76 x 8 = 6.08 Gbit/s; the PCI-X read
// stream (7.38 Gbit/s at MMRBC 512 B, model/pcix.h) and the SDR link (8 Gbit/s) are above it.
// Without FMR each 32 KB receive buffer and its header map 8 + 1 IOMMU pages at 2070 ns
// (netstack.iommu_map): 18630 ns per 32768 B = 0.569 ns/B on top of the copy's 1.316 ns/B,
// so at most 8 / 1.885 = 4.24 Gbit/s. The seed's "a bit over 3500" is not met: docs/seeds/seed003.md
// ("The missed point") says where the model and the seed part.
TEST_F(IpoibCommand, SdpOverPciXIsBoundByTheReceiversCopyAndFmr) {
  auto sdp = [&](const char* fmr) {
    const test::Outcome o = run("netperf -l " + seconds_flag(1.0) + " -P 0 -T ,2 -t TCP_STREAM --platform zx1-rx2600-pcix "
                                "--remote-platform zx1-rx4640-pcix --set hca.fmr=" + fmr +
                                " -- -m 8192 -s 262144 -S 262144");
    EXPECT_EQ(o.status, 0) << o.err;
    return throughput_of(o.out);
  };
  const double on = sdp("on"), off = sdp("off");
  std::cout << "zx1 SDP over PCI-X: FMR on " << on << " Mbit/s, off " << off << " Mbit/s\n";
  EXPECT_LT(on, 6080);
  EXPECT_GT(on, 0.8 * 6080);
  EXPECT_LT(off, 4240);
}

// Same inputs, same output, byte for byte (the report and the per-function profile).
TEST_F(IpoibCommand, SameInputsSameOutput) {
  const std::string args = "netperf -l 0.2 -c -C --transport ipoib --profile --platform zx1-rx2600-pcix "
                           "--remote-platform zx1-rx4640-pcix -- -m 8192 -s 262144 -S 262144";
  const test::Outcome a = run(args), b = run(args);
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  // The profile is q-view's, one per busy CPU: the sender's CPU 1 and the receiver's CPU 3.
  EXPECT_NE(a.out.find("Flat profile of CPU time on cpu1 of zx1-rx2600-pcix (netperf)"), std::string::npos);
  EXPECT_NE(a.out.find("Flat profile of CPU time on cpu3 of zx1-rx4640-pcix (netserver)"), std::string::npos);
  EXPECT_NE(a.out.find("% time      self     cumul     calls self/call  tot/call name"), std::string::npos);
  EXPECT_EQ(a.out.find("cpu0 of"), std::string::npos);  // idle CPUs print no profile
}

// What the IPoIB path does not model is refused, not ignored.
TEST_F(IpoibCommand, RefusesWhatItDoesNotModel) {
  const test::Outcome v = run("netperf -l 0.1 --transport ipoib --verify-data");
  EXPECT_EQ(v.status, 2);
  EXPECT_NE(v.err.find("--verify-data: the IPoIB path"), std::string::npos) << v.err;
  const test::Outcome f = run("netperf -l 0.1 --transport ipoib --set fault.loss=1e-3");
  EXPECT_EQ(f.status, 2);
  EXPECT_NE(f.err.find("fault.*"), std::string::npos) << f.err;
  const test::Outcome t = run("netperf -l 0.1 --transport rds");
  EXPECT_EQ(t.status, 2);
  EXPECT_NE(t.err.find("--transport: 'rds' is not sdp or ipoib"), std::string::npos) << t.err;
  // A receive ring of 2 buffers under a 256 KB window runs dry on the receiver: the dropped
  // datagram would need TCP's retransmission, which is not modelled.
  const test::Outcome d = run("netperf -l 0.1 --transport ipoib --set ipoib.recv_ring=2 -- -m 64K -s 256K -S 256K");
  EXPECT_EQ(d.status, 2);
  EXPECT_EQ(d.err.rfind("hcasim: error: ipoib.recv_ring: the remote host's ring of 2 buffers ran dry", 0), 0u) << d.err;
  // A platform without the TCP/IP path's costs says so, not "missing parameter".
  const test::Outcome n = run("netperf -l 0.1 --transport ipoib --platform infinihost3-pcie1x8");
  EXPECT_EQ(n.status, 2);
  EXPECT_EQ(n.err.rfind("hcasim: error: --transport ipoib: platform infinihost3-pcie1x8 has no [netstack] section", 0),
            0u)
      << n.err;
}

// netperf over IPoIB-CM without socket options, as most people run it, on connectx-ddr-pcie1x8.
// netperf prints the buffers at socket creation (16384 / 87380, the tcp_wmem / tcp_rmem
// defaults); Linux then tunes them (model/netstack.h): the SYN-ACK offers 65468 B of its 65535 B
// window, so segments start at half that, 32734 B; at establishment the send buffer grows to
// min(3 x 65844, tcp_wmem[2]) = 131072 and the receive buffer to min(4 x 87348, tcp_rmem[2]) =
// 174760, whose window (131070, clamped to 2 x 65468 = 130936) lets segments grow back to the
// full 65468 B.
TEST(SimIpoib, ConnectedModeWithoutOptionsRunsWithLinuxsAutotunedBuffers) {
  model::Platform p = platform("connectx-ddr-pcie1x8");
  p.set("ipoib.mode=connected");
  frontends::TcpStreamConfig c;
  c.length_s = seconds(1.0);
  c.send_size = 64 << 10;
  const frontends::IpoibStreamResult r = sim::run_ipoib_stream(p, p, c);
  EXPECT_EQ(r.stream.local_send_socket, 16384u);
  EXPECT_EQ(r.stream.remote_recv_socket, 87380u);
  EXPECT_TRUE(r.local_send_end.tuned && r.remote_recv_end.tuned);
  EXPECT_EQ(r.local_send_end.bytes, 131072u);
  EXPECT_EQ(r.remote_recv_end.bytes, 174760u);
  // The other two buffers carry only ACKs, but tcp_init_buffer_space grew them the same way.
  EXPECT_TRUE(r.remote_send_end.tuned && r.local_recv_end.tuned);
  EXPECT_EQ(r.remote_send_end.bytes, 131072u);
  EXPECT_EQ(r.local_recv_end.bytes, 174760u);
  EXPECT_EQ(r.mss_first, 32734u);
  EXPECT_EQ(r.mss, 65468u);
  const double mbps = static_cast<double>(r.stream.bytes_received) * 8 / r.stream.elapsed_s / 1e6;
  std::cout << "connectx-ddr-pcie1x8 IPoIB-CM without options: " << mbps << " Mbit/s\n";
  // Under the PCIe gen1 x8 DMA-read ceiling of model/pcie.h (11.867 Gbit/s of payload at MPS
  // 128, 64 B completions), which the TCP payload, headers aside, cannot pass.
  EXPECT_LT(mbps, 11867);
  EXPECT_GT(mbps, 3000);
}

// -S set: the receive buffer is locked (SOCK_RCVBUF_LOCK) at 2 x 43690 = 87380, whose window
// (65535) never holds two full segments, so the sender keeps to half of it for the whole run.
TEST(SimIpoib, ALockedSmallReceiveBufferKeepsSegmentsAtHalfItsWindow) {
  model::Platform p = platform("connectx-ddr-pcie1x8");
  p.set("ipoib.mode=connected");
  frontends::TcpStreamConfig c;
  c.length_s = seconds(0.5);
  c.send_size = 64 << 10;
  c.remote_recv_socket = 43690;
  const frontends::IpoibStreamResult r = sim::run_ipoib_stream(p, p, c);
  EXPECT_FALSE(r.remote_recv_end.tuned);
  EXPECT_EQ(r.remote_recv_end.bytes, 87380u);
  EXPECT_EQ(r.mss, 32734u);
  EXPECT_GT(r.stream.bytes_received, 0u);
}

// No stall and no watchdog for any buffer Linux accepts: -s/-S (unset, 16K, 64K, 256K, 1M, 4M;
// Linux doubles and caps them at 2 x socket.wmem_max/rmem_max) x mode x -m (1K, 16K, 64K), each
// run to its end with its printed buffers as Linux grants them and its TCP payload under the
// bus's DMA-read ceiling (11.867 Gbit/s, above).
class IpoibBufferGrid : public ::testing::TestWithParam<std::tuple<std::string, std::string, std::string>> {};

TEST_P(IpoibBufferGrid, RunsToItsEnd) {
  const auto& [mode, buffer, send] = GetParam();
  model::Platform p = platform("connectx-ddr-pcie1x8");
  p.set("ipoib.mode=" + mode);
  frontends::TcpStreamConfig c;
  c.length_s = 0.1;
  c.send_size = model::parse_size(send, "-m");
  const uint64_t req = buffer == "unset" ? 0 : model::parse_size(buffer, "-s");
  c.local_send_socket = c.remote_recv_socket = req;
  const frontends::IpoibStreamResult r = sim::run_ipoib_stream(p, p, c);
  // wmem_max = rmem_max = 131071 on this platform: a request is doubled up to 262142.
  EXPECT_EQ(r.stream.local_send_socket, req ? std::min<uint64_t>(2 * req, 262142) : 16384u);
  EXPECT_EQ(r.stream.remote_recv_socket, req ? std::min<uint64_t>(2 * req, 262142) : 87380u);
  const double mbps = static_cast<double>(r.stream.bytes_received) * 8 / r.stream.elapsed_s / 1e6;
  EXPECT_GT(mbps, 100) << mode << " " << buffer << " -m " << send;
  EXPECT_LT(mbps, 11867) << mode << " " << buffer << " -m " << send;
}

INSTANTIATE_TEST_SUITE_P(Grid, IpoibBufferGrid,
                         ::testing::Combine(::testing::Values("datagram", "connected"),
                                            ::testing::Values("unset", "16K", "64K", "256K", "1M", "4M"),
                                            ::testing::Values("1K", "16K", "64K")));

namespace {

/// netperf -t TCP_RR -l -TRANSACTIONS --transport ipoib -- -r REQUEST,RESPONSE on two
/// connectx-ddr-pcie1x8 hosts (datagram mode).
frontends::IpoibStreamResult run_rr(uint64_t transactions, uint64_t request, uint64_t response) {
  const model::Platform p = platform("connectx-ddr-pcie1x8");
  frontends::TcpStreamConfig c;
  c.test = frontends::NetperfTest::Rr;
  c.transactions = transactions;
  c.request_size = request;
  c.response_size = response;
  return sim::run_ipoib_rr(p, p, c);
}

}  // namespace

// TCP_RR over IPoIB (sim::run_ipoib_rr), datagram mode on connectx-ddr-pcie1x8: a 1 B request
// and a 1 B response are one segment each; the response carries the ACK of the request and the
// next request the ACK of the response (tcp_transmit_skb sets the ACK field of every segment),
// which clears the delayed-ACK timer each time, so no pure ACK is ever sent and a transaction is
// two segments. A pure ACK per transaction, or the 40 ms timer firing, would fail this.
TEST(SimIpoibRr, EachSegmentCarriesTheOtherDirectionsAck) {
  const frontends::IpoibStreamResult r = run_rr(2000, 1, 1);
  EXPECT_EQ(r.stream.transactions, 2000u);
  EXPECT_EQ(r.segments, 2u * 2000);
  EXPECT_EQ(r.acks, 0u);
  EXPECT_EQ(r.stream.bytes_sent, 2000u);
  EXPECT_EQ(r.stream.bytes_received, 2000u);
  // The four buffers netperf prints, Linux's defaults (tcp_wmem[1], tcp_rmem[1]).
  EXPECT_EQ(r.stream.local_send_socket, 16384u);
  EXPECT_EQ(r.stream.local_recv_socket, 87380u);
  EXPECT_EQ(r.stream.remote_send_socket, 16384u);
  EXPECT_EQ(r.stream.remote_recv_socket, 87380u);
  // Each transaction costs each host a send() and a recv() at least: the system calls, two
  // packets through TCP/IP (one out, one in) and two CQEs (the send's and the receive's).
  const model::NetstackCosts n = model::NetstackCosts::from_platform(platform("connectx-ddr-pcie1x8"));
  const double floor_ns = n.send_call_ns + n.recv_call_ns + n.tx_packet_ns + n.rx_packet_ns + n.rx_tcp_ns +
                          n.ipoib_post_ns + 2 * n.ipoib_cqe_ns;
  const double per_transaction_ns = r.stream.elapsed_s * 1e9 / 2000;
  std::cout << "IPoIB TCP_RR -r 1,1: " << per_transaction_ns << " ns per transaction, CPU floor per host "
            << floor_ns << " ns\n";
  EXPECT_GT(per_transaction_ns, 2 * floor_ns);  // the two hosts' work is in series
  EXPECT_LT(per_transaction_ns, 1e6);           // no 40 ms (or any ms) wait in it
}

// A 3000 B request over datagram mode's 1992 B segments (2044 B interface MTU - 40 B of IP and
// TCP headers - 12 B of timestamps): 1992 B, then a 1008 B tail. Linux 2.6's Nagle (Minshall's
// variant) sends the tail at once, no earlier short segment being unacknowledged; classic Nagle
// would hold it until the first segment's ACK, which the receiver delays 40 ms (one full
// segment unacknowledged is not enough to ACK at once): 25 transactions a second. The receiver
// ACKs the request at once when its second segment brings more than one full segment
// unacknowledged (__tcp_ack_snd_check): one pure ACK per transaction.
TEST(SimIpoibRr, ATwoSegmentRequestIsNotHeldForTheDelayedAck) {
  const frontends::IpoibStreamResult r = run_rr(500, 3000, 1);
  EXPECT_EQ(r.mss, 1992u);
  EXPECT_EQ(r.stream.transactions, 500u);
  EXPECT_EQ(r.segments, 3u * 500);
  EXPECT_EQ(r.acks, 500u);
  EXPECT_LT(r.stream.elapsed_s, 500 * 1e-3);  // under 1 ms a transaction, 40 ms with the tail held
}

// netperf 2.7's omni reads the four socket buffers at the end of the test (getsockopt SO_SNDBUF
// and SO_RCVBUF on Linux, netperf's socket and netserver's) for the *_SIZE_END selectors. In
// connected mode (MSS 65468) Linux 2.6's tcp_init_buffer_space grows every unset buffer of both
// sockets at establishment, whatever the test moves: the send buffers to min(3 x (65468 + 376),
// tcp_wmem[2] 131072) = 131072 (tcp_fixup_sndbuf), the receive buffers to min(4 x 87348,
// tcp_rmem[2] 174760) = 174760 (tcp_fixup_rcvbuf: 65844 B grown by 128 B until 3/4 of it holds
// 65468). A buffer set with -s or -S is locked and stays as granted (-s 32K: 65536).
TEST_F(IpoibCommand, EndOfTestBuffersAreBothSocketsAsLinuxTunedThem) {
  const std::string sel = " -o LSS_SIZE,LSS_SIZE_END,LSR_SIZE,LSR_SIZE_END,RSS_SIZE,RSS_SIZE_END,RSR_SIZE,RSR_SIZE_END";
  const std::string cmd = "netperf -l 0.02 -P 0 --transport ipoib --set ipoib.mode=connected ";
  const test::Outcome rr = run(cmd + "-t TCP_RR --stats -- -r 1,1" + sel);
  ASSERT_EQ(rr.status, 0) << rr.err;
  EXPECT_EQ(rr.out, "16384,131072,87380,174760,16384,131072,87380,174760\n");
  EXPECT_NE(rr.err.find("hcasim: tcp: netperf send buffer 16384 -> 131072 B (autotuned), receive buffer 87380 -> 174760 "
                        "B (autotuned); netserver send buffer 16384 -> 131072 B (autotuned), receive buffer 87380 -> "
                        "174760 B (autotuned); segments "),
            std::string::npos)
      << rr.err;
  // The same in --json's result.tcp: each socket's, and the requests' sender's and receiver's.
  const test::Outcome json = run("netperf -l 0.02 --json --transport ipoib --set ipoib.mode=connected -t TCP_RR");
  ASSERT_EQ(json.status, 0) << json.err;
  const auto tcp = nlohmann::json::parse(json.out)["result"]["tcp"];
  EXPECT_EQ(tcp["local_send_socket_end_bytes"], 131072);
  EXPECT_EQ(tcp["local_recv_socket_end_bytes"], 174760);
  EXPECT_EQ(tcp["remote_send_socket_end_bytes"], 131072);
  EXPECT_EQ(tcp["remote_recv_socket_end_bytes"], 174760);
  EXPECT_EQ(tcp["send_socket_end_bytes"], 131072);
  EXPECT_EQ(tcp["recv_socket_end_bytes"], 174760);
  const test::Outcome locked = run(cmd + "-t TCP_RR -- -r 1,1 -s 32K" + sel);
  ASSERT_EQ(locked.status, 0) << locked.err;
  EXPECT_EQ(locked.out, "65536,65536,65536,65536,16384,131072,87380,174760\n");
  // A stream's reverse direction carries only ACKs, but its sockets were tuned the same way.
  const test::Outcome stream = run(cmd + "-t TCP_STREAM -- -m 64K" + sel);
  ASSERT_EQ(stream.status, 0) << stream.err;
  EXPECT_EQ(stream.out, "16384,131072,87380,174760,16384,131072,87380,174760\n");
  const test::Outcome maerts = run(cmd + "-t TCP_MAERTS --stats -- -m 64K -s 32K" + sel);
  ASSERT_EQ(maerts.status, 0) << maerts.err;
  EXPECT_EQ(maerts.out, "65536,65536,65536,65536,16384,131072,87380,174760\n");
  EXPECT_NE(maerts.err.find("hcasim: tcp: netperf send buffer 65536 B (set), receive buffer 65536 B (set); netserver send "
                            "buffer 16384 -> 131072 B (autotuned), receive buffer 87380 -> 174760 B (autotuned); "),
            std::string::npos)
      << maerts.err;
}

// --profile's rows over IPoIB name the functions of each host's own kernel: its HCA driver's
// event queue handler (hca.device: mthca0 is ib_mthca's, drivers/infiniband/hw/mthca/mthca_eq.c
// mthca_eq_int; mlx4_0 is mlx4's, drivers/net/mlx4/eq.c mlx4_eq_int) and its DMA mapping
// (host.iommu on: the zx1's sba_iommu, arch/ia64/hp/common/sba_iommu.c sba_map_single; off:
// x86_64's pci-nommu, arch/x86_64/kernel/pci-nommu.c nommu_map_single).
TEST_F(IpoibCommand, ProfileNamesEachHostsDriverAndDmaMapping) {
  const test::Outcome cx = run("netperf -l 0.02 -P 0 --transport ipoib --profile");
  ASSERT_EQ(cx.status, 0) << cx.err;
  EXPECT_NE(cx.out.find(" mlx4_eq_int\n"), std::string::npos) << cx.out;
  EXPECT_NE(cx.out.find(" nommu_map_single\n"), std::string::npos) << cx.out;
  EXPECT_EQ(cx.out.find("mthca"), std::string::npos) << cx.out;
  EXPECT_EQ(cx.out.find("sba_"), std::string::npos) << cx.out;
  const test::Outcome json = run("netperf -l 0.02 --transport ipoib --profile --json");
  ASSERT_EQ(json.status, 0) << json.err;
  EXPECT_NE(json.out.find("\"mlx4_eq_int\""), std::string::npos);
  EXPECT_EQ(json.out.find("mthca"), std::string::npos);
  const test::Outcome zx1 = run("netperf -l 0.02 -P 0 --transport ipoib --platform zx1-rx2600-pcix "
                                "--remote-platform zx1-rx4640-pcix --profile");
  ASSERT_EQ(zx1.status, 0) << zx1.err;
  EXPECT_NE(zx1.out.find(" mthca_eq_int\n"), std::string::npos) << zx1.out;
  EXPECT_NE(zx1.out.find(" sba_map_single\n"), std::string::npos) << zx1.out;
  EXPECT_EQ(zx1.out.find("mlx4"), std::string::npos) << zx1.out;
  EXPECT_EQ(zx1.out.find("nommu"), std::string::npos) << zx1.out;
}
