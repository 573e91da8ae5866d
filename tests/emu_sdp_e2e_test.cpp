// hcasim-sdp-server and hcasim-sdp-client as two processes on the emulated HCA (--device emu):
// 1 GiB streams checked by CRC-32 on both ends, refused connections, a peer killed mid-stream,
// and the one-line error without a device.
#include <gtest/gtest.h>

#include "tests/cm_handshake.h"
#include "tests/proc.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>

#include <fmt/format.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <regex>
#include <thread>


namespace {

using hcasim::test::Proc;

using hcasim::test::Clock;
using hcasim::test::lines;


Proc server(const std::string& name, const std::vector<std::string>& sets = {}) {
  std::vector<std::string> argv = {HCASIM_SDP_SERVER, "--device", "emu", "-p", "0", "--once"};
  for (const std::string& s : sets) argv.insert(argv.end(), {"--set", s});
  return Proc(name + "-server", argv);
}

/// The lines of `text` containing `what`, each with its newline.
std::string lines_with(const std::string& text, const std::string& what) {
  std::string out;
  for (size_t b = 0, e; b < text.size(); b = e + 1) {
    e = text.find('\n', b);
    if (e == std::string::npos) e = text.size();
    if (text.substr(b, e - b).find(what) != std::string::npos)
      out += text.substr(b, e - b) + "\n";
  }
  return out;
}

/// The fault counters line of `err` ("PROG: faults: N packets, ..."): its numbers by name.
struct FaultLine {
  bool found = false;
  uint64_t packets = 0, lost = 0, corrupted = 0, duplicated = 0, reordered = 0, retransmitted = 0;
};
FaultLine fault_line(const std::string& err, const std::string& prog) {
  std::smatch m;
  FaultLine f;
  if (!std::regex_search(err, m, std::regex(prog + R"(: faults: (\d+) packets, (\d+) lost, (\d+) corrupted, (\d+) duplicated, )"
                                                R"((\d+) reordered; (\d+) retransmitted \(\d+ NAKs, \d+ timeouts\), \d+ RNR NAKs\n)")))
    return f;
  f = {true, std::stoull(m[1]), std::stoull(m[2]), std::stoull(m[3]), std::stoull(m[4]), std::stoull(m[5]), std::stoull(m[6])};
  return f;
}


/// Streams 1 GiB (netperf's -l -BYTES) with the given sdp_zcopy_thresh and send size; checks
/// both CRC-32s and the bzcopy count the client reports; prints netperf's line.
/// `sets` (fault.* / qp.*) go to both programs. Returns netperf's throughput, 10^6 bits/s.
double stream_gibibyte(const std::string& name, const std::string& zcopy_thresh, const std::string& send_size,
                       bool expect_bzcopy, const std::vector<std::string>& sets = {}) {
  Proc srv = server(name, sets);
  const int port = srv.port();
  EXPECT_GT(port, 0) << srv.err();
  if (port <= 0) return 0;
  std::vector<std::string> argv = {HCASIM_SDP_CLIENT, "--device", "emu", "-p", std::to_string(port), "-c", "-C", "-l",
                                   "-1073741824", "--set", "sdp.zcopy_thresh=" + zcopy_thresh};
  for (const std::string& s : sets) argv.insert(argv.end(), {"--set", s});
  argv.insert(argv.end(), {"--", "-m", send_size});
  Proc cli(name + "-client", argv);
  double mbps = 0;
  [&] {
  ASSERT_EQ(cli.wait(std::chrono::minutes(5)), 0) << cli.err();
  ASSERT_EQ(srv.wait(std::chrono::seconds(10)), 0) << srv.err();
  hcasim::test::expect_verified_stream(cli, srv, "emu", 1073741824, expect_bzcopy);
  // With faults, each program reports its own side's counters on stderr; netperf's output stays netperf's.
  const bool faulty = std::any_of(sets.begin(), sets.end(), [](const std::string& s) { return s.starts_with("fault."); });
  const FaultLine fc = fault_line(cli.err(), "hcasim-sdp-client"), fs = fault_line(srv.err(), "hcasim-sdp-server");
  EXPECT_EQ(fc.found, faulty) << cli.err();
  EXPECT_EQ(fs.found, faulty) << srv.err();
  EXPECT_EQ(cli.out().find("faults"), std::string::npos) << cli.out();
  if (faulty) {
    EXPECT_GT(fc.packets, 32768u);  // at least the 16384 x 64 KiB sends in SDP messages and their ACKs
    EXPECT_GT(fc.lost + fc.corrupted + fc.duplicated + fc.reordered, 0u);
    EXPECT_GT(fs.lost + fs.corrupted + fs.duplicated + fs.reordered, 0u);
    EXPECT_GT(fc.retransmitted, 0u) << cli.err();
    std::printf("%s%s", lines_with(cli.err(), "faults:").c_str(), lines_with(srv.err(), "faults:").c_str());
  }
  std::smatch m;
  // netperf's long form: the data row has 9 fields; the throughput (5th) is printed, no target.
  const std::string out = cli.out();
  ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(\n(\d+) +(\d+) +(\d+) +([0-9.]+) +([0-9.]+) +([0-9.]+) +([0-9.]+) +([0-9.]+) +([0-9.]+) *\n)")))
      << out;
  EXPECT_EQ(m[3], send_size == "64K" ? "65536" : "131072");
  EXPECT_GT(std::stod(m[5]), 0.0);
  mbps = std::stod(m[5]);
  std::printf("%s: emulated 1 GiB SDP stream: %s 10^6bits/s in %s s\n%s", name.c_str(), m[5].str().c_str(),
              m[4].str().c_str(), out.c_str());
  }();
  return mbps;
}

}  // namespace

TEST(SdpStream, OneGibibyteBcopyArrivesIntact) { stream_gibibyte("bcopy", "0", "64K", false); }

TEST(SdpStream, OneGibibyteBzcopyArrivesIntact) { stream_gibibyte("bzcopy", "65536", "128K", true); }

// The emulated wire loses one frame in a thousand (both directions: data, credit updates and
// ACKs); go-back-N recovers every one. The local ACK timeout is the default, 67.1 ms
// (qp.timeout=14): on the shared 2-core machine (load 6-9) a process's I/O thread was seen
// not to take its readable socket for over 134 ms, so qp.timeout=10 or 12 (x 8 tries) ended
// streams with RETRY_EXC_ERR even without faults.
TEST(SdpStream, OneGibibyteBcopyThroughOneFrameInAThousandLostArrivesIntact) {
  const auto t0 = Clock::now();
  const double mbps = stream_gibibyte("loss", "0", "64K", false, {"fault.loss=1e-3", "qp.timeout=14"});
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  ASSERT_GT(mbps, 0.0);
  std::printf("fault.loss=1e-3, qp.timeout=14 (67.1 ms): %.1f 10^6bits/s, %.1f s in all\n", mbps, s);
}

TEST(SdpStream, OneGibibyteBcopyThroughDuplicationReorderingAndBadIcrcArrivesIntact) {
  const double mbps = stream_gibibyte("mix", "0", "64K", false,
                                      {"fault.dup=1e-3", "fault.reorder=1e-3", "fault.corrupt=1e-3", "qp.timeout=14"});
  ASSERT_GT(mbps, 0.0);
}

TEST(SdpStream, BadFaultSettingsAreOneLineWithExitTwo) {
  Proc cli("badset-client", {HCASIM_SDP_CLIENT, "--device", "emu", "-l", "1", "--set", "fault.loss=1.5"});
  EXPECT_EQ(cli.wait(std::chrono::seconds(10)), 2);
  EXPECT_EQ(cli.err(), "hcasim-sdp-client: --set fault.loss: 1.5 is not a probability in [0, 1)\n");
  Proc cli2("badset-client2", {HCASIM_SDP_CLIENT, "--device", "emu", "-l", "1", "--set", "net.mtu=4096"});
  EXPECT_EQ(cli2.wait(std::chrono::seconds(10)), 2);
  EXPECT_EQ(lines(cli2.err()), 1) << cli2.err();
  EXPECT_NE(cli2.err().find("sdp.zcopy_thresh, fault.* and qp.*"), std::string::npos) << cli2.err();
  Proc srv("badset-server", {HCASIM_SDP_SERVER, "--device", "emu", "-p", "0", "--set", "qp.retry_cnt=8"});
  EXPECT_EQ(srv.wait(std::chrono::seconds(10)), 2);
  EXPECT_EQ(srv.err(), "hcasim-sdp-server: --set qp.retry_cnt: 8 is above 7\n");
  Proc srv2("badset-server2", {HCASIM_SDP_SERVER, "--device", "emu", "-p", "0", "--set", "sdp.zcopy_thresh=0"});
  EXPECT_EQ(srv2.wait(std::chrono::seconds(10)), 2);
  EXPECT_EQ(srv2.err(), "hcasim-sdp-server: --set sdp.zcopy_thresh=0: the server sets only fault.* and qp.*\n");
}

TEST(SdpStream, ConnectionRefusedIsOneLine) {
  int port = 0;
  {
    Proc srv = server("refused");
    port = srv.port();
    srv.kill9();
    srv.wait(std::chrono::seconds(5));
  }
  Proc cli("refused-client", {HCASIM_SDP_CLIENT, "--device", "emu", "-p", std::to_string(port), "-l", "1"});
  EXPECT_EQ(cli.wait(std::chrono::seconds(10)), 1);
  EXPECT_EQ(cli.err(), "hcasim-sdp-client: cannot connect to localhost:" + std::to_string(port) + ": Connection refused\n");
}

TEST(SdpStream, ServerKilledMidStreamEndsTheClientWithAnError) {
  Proc srv = server("srvkill");
  const int port = srv.port();
  ASSERT_GT(port, 0);
  Proc cli("srvkill-client", {HCASIM_SDP_CLIENT, "--device", "emu", "-p", std::to_string(port), "-l", "30"});
  std::this_thread::sleep_for(std::chrono::seconds(1));
  srv.kill9();
  const auto t0 = Clock::now();
  EXPECT_EQ(cli.wait(std::chrono::seconds(10)), 1) << "the client hangs";
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_LT(s, 5.0);
  const std::string err = cli.err();
  EXPECT_EQ(lines(err), 1) << err;
  EXPECT_NE(err.find("completion error"), std::string::npos) << err;
  EXPECT_NE(err.find("lost the peer without a CM DREQ"), std::string::npos) << err;
  std::printf("client ended %.3f s after the server was killed: %s", s, err.c_str());
}

TEST(SdpStream, ClientKilledMidStreamEndsTheServerWithAnError) {
  Proc srv = server("clikill");
  const int port = srv.port();
  ASSERT_GT(port, 0);
  Proc cli("clikill-client", {HCASIM_SDP_CLIENT, "--device", "emu", "-p", std::to_string(port), "-l", "30"});
  std::this_thread::sleep_for(std::chrono::seconds(1));
  cli.kill9();
  const auto t0 = Clock::now();
  EXPECT_EQ(srv.wait(std::chrono::seconds(10)), 1) << "the server hangs";
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  EXPECT_LT(s, 5.0);
  const std::string err = srv.err();
  EXPECT_EQ(lines(err), 2) << err;  // "listening on", then the error
  EXPECT_NE(err.find("lost the peer without a CM DREQ"), std::string::npos) << err;
  std::printf("server ended %.3f s after the client was killed: %s", s, err.c_str());
}

TEST(SdpStream, WithoutADeviceBothProgramsSayItInOneLine) {
  for (const auto& [prog, flag] : {std::pair{HCASIM_SDP_CLIENT, "-l1"}, std::pair{HCASIM_SDP_SERVER, "-p0"}}) {
    Proc p("nodev", {prog, flag});
    EXPECT_EQ(p.wait(std::chrono::seconds(10)), 1) << prog;
    const std::string err = p.err();
    EXPECT_EQ(lines(err), 1) << err;
    EXPECT_NE(err.find("--device emu"), std::string::npos) << err;
    EXPECT_EQ(err.find("hcasim-sdp-"), 0u) << err;
    std::printf("%s", err.c_str());
  }
}

namespace {
/// A server serving test after test (no --once).
Proc lasting_server(const std::string& name) {
  return Proc(name + "-server", {HCASIM_SDP_SERVER, "--device", "emu", "-p", "0"});
}
}  // namespace

TEST(SdpStream, TinySendsEndCleanly) {
  // 1- and 7-byte bcopy sends: the server's DisConn and disconnect land while the client's
  // completion work still reposts receives (a post to a QP in ERROR must flush, not fail).
  Proc srv = lasting_server("tiny");
  const int port = srv.port();
  ASSERT_GT(port, 0);
  for (const char* m : {"1", "7", "1", "7", "1", "100"}) {
    Proc cli(std::string("tiny-client-") + m, {HCASIM_SDP_CLIENT, "--device", "emu", "-p", std::to_string(port), "-P",
                                               "0", "-l", "-100000", "--set", "sdp.zcopy_thresh=0", "--", "-m", m});
    ASSERT_EQ(cli.wait(std::chrono::seconds(60)), 0) << "-m " << m << ": " << cli.err();
    EXPECT_NE(cli.err().find("sent 100000 bytes"), std::string::npos) << cli.err();
    EXPECT_NE(cli.err().find(": match"), std::string::npos) << cli.err();
  }
}

TEST(SdpStream, ServerOutlivesClientsKilledMidStream) {
  Proc srv = lasting_server("outlive");
  const int port = srv.port();
  ASSERT_GT(port, 0);
  for (int i = 0; i < 6; ++i) {
    Proc cli("outlive-victim", {HCASIM_SDP_CLIENT, "--device", "emu", "-p", std::to_string(port), "-l", "30", "--",
                                "-m", "7"});
    std::this_thread::sleep_for(std::chrono::milliseconds(100 + 70 * i));
    cli.kill9();
    cli.wait(std::chrono::seconds(5));
  }
  Proc good("outlive-good", {HCASIM_SDP_CLIENT, "--device", "emu", "-p", std::to_string(port), "-P", "0", "-l",
                             "-1000000"});
  ASSERT_EQ(good.wait(std::chrono::seconds(60)), 0) << good.err() << srv.err();
  EXPECT_NE(good.err().find(": match"), std::string::npos) << good.err();
  EXPECT_EQ(srv.wait(std::chrono::milliseconds(100)), -1) << "the server ended: " << srv.err();
}

TEST(SdpStream, ARemoteCpuTheServerLacksIsANoteAndTheTestRuns) {
  Proc srv = server("unbound");
  const int port = srv.port();
  ASSERT_GT(port, 0);
  Proc cli("unbound-client", {HCASIM_SDP_CLIENT, "--device", "emu", "-p", std::to_string(port), "-P", "0", "-l",
                              "-100000", "-T", ",1023"});
  ASSERT_EQ(cli.wait(std::chrono::seconds(60)), 0) << cli.err();
  EXPECT_NE(cli.err().find("note: the server could not bind to CPU 1023 (-T ,1023) and ran unbound"), std::string::npos)
      << cli.err();
  EXPECT_EQ(srv.wait(std::chrono::seconds(10)), 0) << srv.err();
  EXPECT_NE(srv.err().find("(unbound: -T 1023: cannot bind to CPU 1023"), std::string::npos) << srv.err();
}

namespace {

/// A TCP connection to 127.0.0.1:port that passes the subnet's handshake (a process of this
/// user, emu/cm.h) and then sends nothing; -1 when it could not connect or the handshake failed.
int idle_peer(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && hcasim::testing::cm_prove(fd))
    return fd;
  if (fd >= 0) ::close(fd);
  return -1;
}

}  // namespace

// One TCP connection that says nothing must not hold hcasim-sdp-server for the CM timeout
// (10 s), nor N of them for N x 10 s, failing a real client with "no answer within 10000 ms
// during connection setup". Three idle peers of this user (past the subnet's handshake) and a
// stranger that does not answer the handshake, then a real client: it streams at once, with
// equal CRCs; the stranger is closed after the handshake's 2 s, each idle peer times out on its
// own (a line naming it), and the server goes on.
TEST(SdpStream, IdlePeersDoNotBlockTheServer) {
  Proc srv("idle-server", {HCASIM_SDP_SERVER, "--device", "emu", "-p", "0"});
  const int port = srv.port();
  ASSERT_GT(port, 0) << srv.err();
  const int stranger = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(stranger, reinterpret_cast<sockaddr*>(&to), sizeof to), 0);
  std::vector<int> idle;
  for (int i = 0; i < 3; ++i) idle.push_back(idle_peer(port));
  for (int fd : idle) ASSERT_GE(fd, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the server has accepted them
  const auto t0 = Clock::now();
  Proc cli("idle-client", {HCASIM_SDP_CLIENT, "--device", "emu", "-p", std::to_string(port), "-P", "0", "-l", "-983040"});
  ASSERT_EQ(cli.wait(std::chrono::seconds(20)), 0) << cli.err() << srv.err();
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5)) << "the client waited for the idle peers";
  for (auto until = Clock::now() + std::chrono::seconds(5);  // the server logs its test after the client ends
       Clock::now() < until && srv.err().find("received 983040 bytes") == std::string::npos;)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  hcasim::test::expect_verified_stream(cli, srv, "emu", 983040, true);  // 15 sends of 64 KiB: all bzcopy
  // The idle peers time out 10 s after their connect, one line each, and the server serves on.
  std::string err;
  for (auto until = Clock::now() + std::chrono::seconds(20); Clock::now() < until;) {
    err = srv.err();
    size_t n = 0;
    for (size_t at = err.find("no answer within 10000 ms during connection setup"); at != std::string::npos;
         at = err.find("no answer within 10000 ms during connection setup", at + 1))
      ++n;
    if (n == 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(std::regex_search(err, std::regex("hcasim-sdp-server: 127\\.0\\.0\\.1:[0-9]+: no answer within 10000 ms "
                                                "during connection setup\n(.*\n)*.*no answer.*\n(.*\n)*.*no answer")))
      << err;
  EXPECT_TRUE(std::regex_search(err, std::regex("hcasim-sdp-server: 127\\.0\\.0\\.1:[0-9]+: no answer within 2000 ms "
                                                "during connection setup\n")))
      << "the stranger, at the handshake's time: " << err;
  ::close(stranger);
  for (int fd : idle) ::close(fd);
  Proc again("idle-client2", {HCASIM_SDP_CLIENT, "--device", "emu", "-p", std::to_string(port), "-P", "0", "-l", "-1000"});
  EXPECT_EQ(again.wait(std::chrono::seconds(20)), 0) << again.err() << srv.err();
  EXPECT_EQ(srv.wait(std::chrono::milliseconds(50)), -1) << "the server ended: " << srv.err();
}

namespace {

/// netperf's data row of a -P 0 run: its elapsed seconds and throughput (10^6 bits/s).
std::pair<double, double> data_row(const std::string& out) {
  std::smatch m;
  if (!std::regex_search(out, m, std::regex(R"((\d+) +(\d+) +(\d+) +([0-9.]+) +([0-9.]+) *\n)"))) return {0, 0};
  return {std::stod(m[4]), std::stod(m[5])};
}

/// The client's CRC line: bytes sent, bytes the server received, equal CRCs.
void expect_matching_crcs(const Proc& cli, uint64_t* bytes) {
  std::smatch m;
  const std::string err = cli.err();
  ASSERT_TRUE(std::regex_search(err, m, std::regex("device emu: sent ([0-9]+) bytes crc32 ([0-9a-f]{8}), the server received "
                                                   "([0-9]+) bytes crc32 ([0-9a-f]{8}): match")))
      << err;
  EXPECT_EQ(m[1], m[3]);
  EXPECT_EQ(m[2], m[4]);
  *bytes = std::stoull(m[1]);
}

}  // namespace

// hcasim-sdp-server serves each test on a thread of its own, so a second client need not wait
// for the first test to end, nor a stalled CM frame hold the server for its 10 s: with an idle
// peer and a stalled one connected, a 3 s timed stream and a byte-count stream (kSideBySideBytes) started 0.3 s after it
// both run at once (the second ends while the first still streams), with equal CRCs; the stalled peer's close
// is its own line, and the server serves on.
// The second stream's byte count: it must end within the stalled peer's 10 s setup timeout and
// before the 3 s stream does. 256 MiB takes about 1.3 s in a Release build; the sanitizer build
// moves about 210 Mbit/s, where 256 MiB took 10.1 s once (the timeout fired), so it sends 32 MiB.
#ifdef HCASIM_SANITIZE
constexpr uint64_t kSideBySideBytes = 32u << 20;
#else
constexpr uint64_t kSideBySideBytes = 256u << 20;
#endif

TEST(SdpStream, ConcurrentClientsAndAStalledPeerAreServedSideBySide) {
  Proc srv("concurrent-server", {HCASIM_SDP_SERVER, "--device", "emu", "-p", "0"});
  const int port = srv.port();
  ASSERT_GT(port, 0) << srv.err();
  const int idle = idle_peer(port);
  const int stalled = idle_peer(port);
  ASSERT_GE(idle, 0);
  ASSERT_GE(stalled, 0);
  const uint8_t start[] = {0, 0, 0, 100, 0xC0, 0, 0};  // a 100-byte CM REQ frame's first 7 bytes
  ASSERT_EQ(::write(stalled, start, sizeof start), static_cast<ssize_t>(sizeof start));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the server has accepted both

  const auto t0 = Clock::now();
  Proc a("concurrent-a", {HCASIM_SDP_CLIENT, "--device", "emu", "-p", std::to_string(port), "-P", "0", "-l", "3"});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto tb = Clock::now();
  Proc b("concurrent-b", {HCASIM_SDP_CLIENT, "--device", "emu", "-p", std::to_string(port), "-P", "0", "-l",
                          "-" + std::to_string(kSideBySideBytes)});
  ASSERT_EQ(b.wait(std::chrono::seconds(60)), 0) << b.err() << srv.err();
  const auto b_end = Clock::now();
  EXPECT_EQ(a.wait(std::chrono::milliseconds(0)), -1) << "the 3 s stream ended before the byte-count one: not side by side\n"
                                                       << a.err() << srv.err();
  ASSERT_EQ(a.wait(std::chrono::seconds(60)), 0) << a.err() << srv.err();
  const auto a_end = Clock::now();
  uint64_t a_bytes = 0, b_bytes = 0;
  expect_matching_crcs(a, &a_bytes);
  expect_matching_crcs(b, &b_bytes);
  EXPECT_EQ(b_bytes, kSideBySideBytes);
  EXPECT_GT(a_bytes, 0u);
  const auto [a_s, a_mbps] = data_row(a.out());
  const auto [b_s, b_mbps] = data_row(b.out());
  EXPECT_GT(a_s, 2.9) << a.out();
  EXPECT_LT(a_s, 4.0) << a.out();
  EXPECT_GT(a_mbps, 0.0) << a.out();
  EXPECT_GT(b_mbps, 0.0) << b.out();
  const auto ms = [](auto d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); };
  std::printf("side by side: A (-l 3) %llu bytes, %.2f s, %.2f 10^6bits/s, ended at %lld ms; B (%llu B) %.2f s, "
              "%.2f 10^6bits/s, started at %lld ms, ended at %lld ms\n",
              static_cast<unsigned long long>(a_bytes), a_s, a_mbps, static_cast<long long>(ms(a_end - t0)),
              static_cast<unsigned long long>(kSideBySideBytes), b_s, b_mbps,
              static_cast<long long>(ms(tb - t0)), static_cast<long long>(ms(b_end - t0)));
  // The server logged both tests, each naming its client.
  std::string err;
  for (auto until = Clock::now() + std::chrono::seconds(5); Clock::now() < until; std::this_thread::sleep_for(std::chrono::milliseconds(20))) {
    err = srv.err();
    if (err.find("received " + std::to_string(kSideBySideBytes) + " bytes") != std::string::npos &&
        err.find("received " + std::to_string(a_bytes) + " bytes") != std::string::npos)
      break;
  }
  EXPECT_TRUE(std::regex_search(err, std::regex("hcasim-sdp-server: 127\\.0\\.0\\.1:[0-9]+: received " +
                                                std::to_string(kSideBySideBytes) + " bytes")))
      << err;
  EXPECT_NE(err.find("received " + std::to_string(a_bytes) + " bytes"), std::string::npos) << err;
  EXPECT_EQ(err.find("no answer within"), std::string::npos) << "less than 10 s went by: " << err;
  // The stalled peer closing mid-frame is one line naming it; the server serves on.
  ::close(stalled);
  for (auto until = Clock::now() + std::chrono::seconds(5);
       Clock::now() < until && srv.err().find("connection closed during connection setup") == std::string::npos;)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(std::regex_search(srv.err(), std::regex("hcasim-sdp-server: 127\\.0\\.0\\.1:[0-9]+: connection closed during "
                                                      "connection setup\n")))
      << srv.err();
  ::close(idle);
  Proc again("concurrent-again", {HCASIM_SDP_CLIENT, "--device", "emu", "-p", std::to_string(port), "-P", "0", "-l",
                                  "-1000"});
  EXPECT_EQ(again.wait(std::chrono::seconds(20)), 0) << again.err() << srv.err();
  EXPECT_EQ(srv.wait(std::chrono::milliseconds(50)), -1) << "the server ended: " << srv.err();
}

TEST(SdpStream, SignalsEndTheProgramsWithOneLineAnd128PlusTheSignal) {
  // As every hcasim command (Cli.SignalsExit128PlusTheSignalWritingNothing): the server while it
  // waits for a client, the client in the middle of a stream.
  for (const auto& [sig, name] : {std::pair{SIGINT, "SIGINT"}, std::pair{SIGTERM, "SIGTERM"}}) {
    Proc srv("signal-server", {HCASIM_SDP_SERVER, "--device", "emu", "-p", "0"});
    const int port = srv.port();
    ASSERT_GT(port, 0) << srv.err();
    Proc cli("signal-client", {HCASIM_SDP_CLIENT, "--device", "emu", "-p", std::to_string(port), "-P", "0", "-l", "30"});
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    ASSERT_EQ(cli.wait(std::chrono::milliseconds(0)), -1) << "the client ended early: " << cli.err();
    cli.signal(sig);
    EXPECT_EQ(cli.wait(std::chrono::seconds(10)), 128 + sig) << cli.err();
    EXPECT_EQ(cli.err(), fmt::format("hcasim-sdp-client: interrupted by signal {} ({})\n", sig, name));
    EXPECT_EQ(cli.out(), "");
    srv.signal(sig);
    EXPECT_EQ(srv.wait(std::chrono::seconds(10)), 128 + sig) << srv.err();
    EXPECT_EQ(lines_with(srv.err(), "interrupted"), fmt::format("hcasim-sdp-server: interrupted by signal {} ({})\n", sig, name));
  }
}

