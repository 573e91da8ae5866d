// The hardware binaries on the emulated HCA: hcasim-sdp-server and hcasim-sdp-client built for
// rdma-core (hw/rdma_device.cpp, no --device, HCASIM_DEVICE unset) run with the verbs shim
// (libhcasim-verbs-emu.so, emu/verbs_shim/) LD_PRELOADed in front of libibverbs and librdmacm:
// 256 MiB streams checked by CRC-32 (bcopy and bzcopy), a refused connection, and the check that
// the client is the hardware binary (it links libibverbs); the REJ paths both ways, and the
// emulate-mode programs (--device emu) talking to the preloaded ones.
#include <gtest/gtest.h>

#include "tests/proc.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <regex>
#include <thread>

#include "emu/wire.h"
#include "tests/cm_handshake.h"


namespace {

/// LD_PRELOAD for the verbs shim. In the sanitizer build (CMake HCASIM_SANITIZE) the shim is
/// instrumented and ASan's runtime must be the first library of the process; LD_PRELOAD comes
/// before the binary's own libraries, so the runtime (HCASIM_ASAN_RUNTIME) is named first.
#ifdef HCASIM_ASAN_RUNTIME
const std::string kShim = HCASIM_ASAN_RUNTIME ":" HCASIM_VERBS_SHIM;
#else
const std::string kShim = HCASIM_VERBS_SHIM;
#endif

/// A child with the verbs shim preloaded unless `preload` says otherwise ("" = none).
struct Proc : hcasim::test::Proc {
  Proc(const std::string& name, std::vector<std::string> args, const std::string& preload = kShim)
      : hcasim::test::Proc(name, std::move(args), preload) {}
};

using hcasim::test::Clock;
using hcasim::test::lines;



/// Streams 256 MiB (netperf's -l -BYTES) between the preloaded hardware binaries with the
/// given sdp_zcopy_thresh and send size; checks both CRC-32s, the device and the bzcopy count;
/// prints netperf's throughput line.
void stream(const std::string& name, const std::string& zcopy_thresh, const std::string& send_size, bool expect_bzcopy) {
  Proc srv(name + "-server", {HCASIM_SDP_SERVER, "-p", "0", "--once"});
  const int port = srv.port();
  ASSERT_GT(port, 0) << srv.err();
  EXPECT_NE(srv.err().find("(device hcasim_emu0)"), std::string::npos) << srv.err();
  Proc cli(name + "-client", {HCASIM_SDP_CLIENT, "-p", std::to_string(port), "-l", "-268435456", "--set",
                              "sdp.zcopy_thresh=" + zcopy_thresh, "--", "-m", send_size});
  ASSERT_EQ(cli.wait(std::chrono::minutes(5)), 0) << cli.err();
  ASSERT_EQ(srv.wait(std::chrono::seconds(10)), 0) << srv.err();
  hcasim::test::expect_verified_stream(cli, srv, "hcasim_emu0", 268435456, expect_bzcopy);
  std::smatch m;
  const std::string out = cli.out();
  ASSERT_TRUE(std::regex_search(
      out, m, std::regex(R"(\n(\d+) +(\d+) +(\d+) +([0-9.]+) +([0-9.]+) *\n)")))
      << out;
  EXPECT_EQ(m[3], send_size == "64K" ? "65536" : "131072");
  EXPECT_GT(std::stod(m[5]), 0.0);
  std::printf("%s: 256 MiB SDP stream, hardware binaries on the verbs shim: %s 10^6bits/s in %s s\n%s", name.c_str(),
              m[5].str().c_str(), m[4].str().c_str(), out.c_str());
}

}  // namespace

TEST(VerbsShim, ClientIsTheHardwareBinary) {
  Proc ldd("ldd", {"/usr/bin/ldd", HCASIM_SDP_CLIENT}, "");
  ASSERT_EQ(ldd.wait(std::chrono::seconds(10)), 0) << ldd.err();
  EXPECT_NE(ldd.out().find("libibverbs.so"), std::string::npos) << ldd.out();
  EXPECT_NE(ldd.out().find("librdmacm.so"), std::string::npos) << ldd.out();
  // Without the shim the same binary finds no device (this machine has no RDMA) ...
  Proc bare("bare", {HCASIM_SDP_CLIENT, "-l1"}, "");
  EXPECT_EQ(bare.wait(std::chrono::seconds(10)), 1);
  EXPECT_NE(bare.err().find("no RDMA device"), std::string::npos) << bare.err();
}

TEST(VerbsShim, BcopyStreamArrivesIntact) { stream("bcopy", "0", "64K", false); }

TEST(VerbsShim, BzcopyStreamArrivesIntact) { stream("bzcopy", "65536", "128K", true); }

TEST(VerbsShim, NamedDeviceIsFound) {
  Proc srv("named-server", {HCASIM_SDP_SERVER, "--device", "hcasim_emu0", "-p", "0", "--once"});
  const int port = srv.port();
  ASSERT_GT(port, 0) << srv.err();
  Proc cli("named-client", {HCASIM_SDP_CLIENT, "--device", "hcasim_emu0", "-H", "127.0.0.1", "-p",
                            std::to_string(port), "-l", "-1048576"});
  EXPECT_EQ(cli.wait(std::chrono::seconds(60)), 0) << cli.err();
  EXPECT_EQ(srv.wait(std::chrono::seconds(10)), 0) << srv.err();
  EXPECT_NE(cli.err().find(": match"), std::string::npos) << cli.err();
}

TEST(VerbsShim, NobodyListeningIsARejectInOneLine) {
  int port = 0;
  {
    Proc srv("refused-server", {HCASIM_SDP_SERVER, "-p", "0", "--once"});
    port = srv.port();
    ASSERT_GT(port, 0) << srv.err();
    srv.kill9();
    srv.wait(std::chrono::seconds(5));
  }
  Proc cli("refused-client", {HCASIM_SDP_CLIENT, "-H", "127.0.0.1", "-p", std::to_string(port), "-l", "1"});
  EXPECT_EQ(cli.wait(std::chrono::seconds(20)), 1);
  const std::string err = cli.err();
  EXPECT_EQ(lines(err), 1) << err;
  EXPECT_EQ(err, "hcasim-sdp-client: connection to 127.0.0.1:" + std::to_string(port) +
                     " refused: nothing listens there (IB CM REJ reason 8, invalid service ID)\n");
  std::printf("%s", err.c_str());
}

TEST(VerbsShim, ServerKilledMidStreamEndsTheClientWithAnError) {
  Proc srv("srvkill-server", {HCASIM_SDP_SERVER, "-p", "0", "--once"});
  const int port = srv.port();
  ASSERT_GT(port, 0) << srv.err();
  Proc cli("srvkill-client", {HCASIM_SDP_CLIENT, "-p", std::to_string(port), "-l", "30"});
  std::this_thread::sleep_for(std::chrono::seconds(1));
  srv.kill9();
  const auto t0 = Clock::now();
  EXPECT_EQ(cli.wait(std::chrono::seconds(10)), 1) << "the client hangs";
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 5.0);
  const std::string err = cli.err();
  EXPECT_EQ(lines(err), 1) << err;
  std::printf("client after the server was killed: %s", err.c_str());
}

namespace {

/// A TCP socket on 127.0.0.1 speaking the emulated CM by hand (emu/wire.h), for the REJ paths.
class RawPeer {
 public:
  /// Listens on 127.0.0.1, any free port.
  RawPeer() : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 1) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      throw std::runtime_error("RawPeer: cannot listen");
    port_ = ntohs(a.sin_port);
  }
  /// Connects to 127.0.0.1:port.
  explicit RawPeer(int port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) throw std::runtime_error("RawPeer: cannot connect");
    // A process of this user: it proves the subnet's secret to the listener (emu/cm.h).
    if (!hcasim::testing::cm_prove(fd_)) throw std::runtime_error("RawPeer: the listener's handshake failed");
  }
  ~RawPeer() { ::close(fd_); }
  RawPeer(const RawPeer&) = delete;
  RawPeer& operator=(const RawPeer&) = delete;
  int port() const { return port_; }
  /// Takes the one connection (the listening socket is closed) and challenges it, as a
  /// listener of this machine does.
  void accept() {
    const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) throw std::runtime_error("RawPeer: accept failed");
    ::close(fd_);
    fd_ = c;
    if (!hcasim::testing::cm_challenge(fd_)) throw std::runtime_error("RawPeer: the client's handshake failed");
  }
  void send(const hcasim::emu::Packet& p) {
    const std::vector<uint8_t> f = hcasim::emu::encode(p);
    if (::write(fd_, f.data(), f.size()) != static_cast<ssize_t>(f.size())) throw std::runtime_error("RawPeer: write");
  }
  hcasim::emu::Packet receive() {
    std::array<uint8_t, hcasim::emu::kLengthSize> len{};
    read_exact(len.data(), len.size());
    std::vector<uint8_t> body(hcasim::emu::decode_length(len));
    read_exact(body.data(), body.size());
    return hcasim::emu::decode(body);
  }

 private:
  void read_exact(uint8_t* p, size_t n) {
    while (n > 0) {
      const ssize_t k = ::read(fd_, p, n);
      if (k <= 0) throw std::runtime_error("RawPeer: connection closed");
      p += k;
      n -= static_cast<size_t>(k);
    }
  }
  int fd_;
  int port_ = 0;
};

}  // namespace

TEST(VerbsShim, RejectFromThePeerIsOneLineWithItsReason) {
  RawPeer peer;
  Proc cli("rej-client", {HCASIM_SDP_CLIENT, "-H", "127.0.0.1", "-p", std::to_string(peer.port()), "-l", "1"});
  peer.accept();
  const hcasim::emu::Packet req = peer.receive();
  ASSERT_EQ(req.op, hcasim::emu::Op::CmReq);
  EXPECT_LE(req.payload.size(), 56u) << "RDMA_PS_TCP leaves 56 bytes of REQ private data";
  const std::string why = "go away";
  peer.send({.op = hcasim::emu::Op::CmRej, .payload = std::vector<uint8_t>(why.begin(), why.end())});
  EXPECT_EQ(cli.wait(std::chrono::seconds(20)), 1);
  EXPECT_EQ(cli.err(), "hcasim-sdp-client: connection with 127.0.0.1:" + std::to_string(peer.port()) +
                           " rejected: go away (IB CM REJ reason 28, consumer defined)\n");
  std::printf("%s", cli.err().c_str());
}

TEST(VerbsShim, ServerRejectsABadHelloWithItsReason) {
  Proc srv("rej-server", {HCASIM_SDP_SERVER, "-p", "0", "--once"});
  const int port = srv.port();
  ASSERT_GT(port, 0) << srv.err();
  RawPeer peer(port);
  peer.send({.op = hcasim::emu::Op::CmReq, .local_qpn = 0x99, .payload = std::vector<uint8_t>(56, 0xAB)});
  const hcasim::emu::Packet rej = peer.receive();
  ASSERT_EQ(rej.op, hcasim::emu::Op::CmRej);
  const std::string why(rej.payload.begin(), rej.payload.end());
  EXPECT_FALSE(why.empty());
  EXPECT_EQ(srv.wait(std::chrono::seconds(10)), 1) << srv.err();
  EXPECT_NE(srv.err().find("rejected connection from 127.0.0.1:"), std::string::npos) << srv.err();
  std::printf("REJ private data: %s\nserver: %s", why.c_str(), srv.err().c_str());
}

TEST(VerbsShim, TheEmulatedDeviceAndTheShimSpeakTheSameWire) {
  // hardware binary (shim) server, emulate-mode client, and the other way round.
  for (const bool shim_server : {true, false}) {
    std::vector<std::string> sargs{HCASIM_SDP_SERVER, "-p", "0", "--once"};
    std::vector<std::string> cargs{HCASIM_SDP_CLIENT, "-l", "-16777216"};
    if (shim_server)
      cargs.insert(cargs.begin() + 1, {"--device", "emu"});
    else
      sargs.insert(sargs.begin() + 1, {"--device", "emu"});
    Proc srv("wire-server", sargs, shim_server ? kShim : "");
    const int port = srv.port();
    ASSERT_GT(port, 0) << srv.err();
    cargs.insert(cargs.end(), {"-p", std::to_string(port)});
    Proc cli("wire-client", cargs, shim_server ? "" : kShim);
    EXPECT_EQ(cli.wait(std::chrono::seconds(60)), 0) << cli.err();
    EXPECT_EQ(srv.wait(std::chrono::seconds(10)), 0) << srv.err();
    EXPECT_NE(cli.err().find(": match"), std::string::npos) << cli.err();
  }
}

TEST(VerbsShim, ClientKilledMidStreamEndsTheServerWithAnError) {
  Proc srv("clikill-server", {HCASIM_SDP_SERVER, "-p", "0", "--once"});
  const int port = srv.port();
  ASSERT_GT(port, 0) << srv.err();
  Proc cli("clikill-client", {HCASIM_SDP_CLIENT, "-p", std::to_string(port), "-l", "30"});
  std::this_thread::sleep_for(std::chrono::seconds(1));
  cli.kill9();
  const auto t0 = Clock::now();
  EXPECT_EQ(srv.wait(std::chrono::seconds(10)), 1) << "the server hangs";
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - t0).count(), 5.0);
  const std::string err = srv.err();
  EXPECT_EQ(lines(err), 2) << err;  // "listening on", then the error
  std::printf("server after the client was killed: %s", err.c_str());
}

namespace {
/// Sets an environment variable for the children started while it lives.
struct ScopedEnv {
  std::string name;
  ScopedEnv(const std::string& n, const std::string& v) : name(n) { ::setenv(n.c_str(), v.c_str(), 1); }
  ~ScopedEnv() { ::unsetenv(name.c_str()); }
};
}  // namespace

// HCASIM_FAULT gives the shim's QPs the faults and retry attributes of --set fault.* / qp.*: the
// hardware binaries' stream goes through loss and reordering and still arrives intact.
TEST(VerbsShim, StreamThroughFaultsFromTheEnvironmentArrivesIntact) {
  ScopedEnv env("HCASIM_FAULT", "fault.loss=1e-3,fault.reorder=1e-3,qp.timeout=14");
  stream("shimfault", "0", "64K", false);
}

TEST(VerbsShim, ABadFaultSettingIsOneLineWithExitTwo) {
  ScopedEnv env("HCASIM_FAULT", "fault.loss=1e-3,qp.timeout=40");
  Proc cli("shimbad", {HCASIM_SDP_CLIENT, "-l", "1"});
  EXPECT_EQ(cli.wait(std::chrono::seconds(10)), 2);
  EXPECT_EQ(cli.err(), "hcasim-verbs-emu: HCASIM_FAULT: --set qp.timeout: 40 is above 31\n");
}
