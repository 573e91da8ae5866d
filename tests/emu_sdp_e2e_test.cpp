// hcasim-sdp-server and hcasim-sdp-client as two processes on the emulated HCA (--device emu):
// 1 GiB streams checked by CRC-32 on both ends, refused connections, a peer killed mid-stream,
// and the one-line error without a device.
#include <gtest/gtest.h>

#include "tests/proc.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <regex>
#include <thread>


namespace {

using hcasim::test::Proc;

using hcasim::test::Clock;
using hcasim::test::lines;


Proc server(const std::string& name) { return Proc(name + "-server", {HCASIM_SDP_SERVER, "--device", "emu", "-p", "0", "--once"}); }


/// Streams 1 GiB (netperf's -l -BYTES) with the given sdp_zcopy_thresh and send size; checks
/// both CRC-32s and the bzcopy count the client reports; prints netperf's line.
void stream_gibibyte(const std::string& name, const std::string& zcopy_thresh, const std::string& send_size,
                     bool expect_bzcopy) {
  Proc srv = server(name);
  const int port = srv.port();
  ASSERT_GT(port, 0) << srv.err();
  Proc cli(name + "-client", {HCASIM_SDP_CLIENT, "--device", "emu", "-p", std::to_string(port), "-c", "-C", "-l",
                              "-1073741824", "--set", "sdp.zcopy_thresh=" + zcopy_thresh, "--", "-m", send_size});
  ASSERT_EQ(cli.wait(std::chrono::minutes(5)), 0) << cli.err();
  ASSERT_EQ(srv.wait(std::chrono::seconds(10)), 0) << srv.err();
  hcasim::test::expect_verified_stream(cli, srv, "emu", 1073741824, expect_bzcopy);
  std::smatch m;
  // netperf's long form: the data row has 9 fields; the throughput (5th) is printed, no target.
  const std::string out = cli.out();
  ASSERT_TRUE(std::regex_search(out, m, std::regex(R"(\n(\d+) +(\d+) +(\d+) +([0-9.]+) +([0-9.]+) +([0-9.]+) +([0-9.]+) +([0-9.]+) +([0-9.]+) *\n)")))
      << out;
  EXPECT_EQ(m[3], send_size == "64K" ? "65536" : "131072");
  EXPECT_GT(std::stod(m[5]), 0.0);
  std::printf("%s: emulated 1 GiB SDP stream: %s 10^6bits/s in %s s\n%s", name.c_str(), m[5].str().c_str(),
              m[4].str().c_str(), out.c_str());
}

}  // namespace

TEST(SdpStream, OneGibibyteBcopyArrivesIntact) { stream_gibibyte("bcopy", "0", "64K", false); }

TEST(SdpStream, OneGibibyteBzcopyArrivesIntact) { stream_gibibyte("bzcopy", "65536", "128K", true); }

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
