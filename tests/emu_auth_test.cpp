// The emulated subnet against a local process without its secret (emu/auth.h): a stranger that
// connects to a port and forges a CM REQ with RDMA WRITEs behind it, stays idle, trickles its
// bytes or sends a huge length field, or sends UD datagrams without the MAC, is refused and
// counted, and nothing reaches the victim QP's memory, whose own transfer completes as usual;
// a port number taken by an impostor gets no frame; frames of an authenticated stream naming
// another QP, and packets whose P_Key is not the QP's, are dropped silently (IBA 9.6, 10.9.4); a
// secret file planted wrong is one line of error;
// keys have mlx4's layout with a random key byte.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "emu/adapter.h"
#include "emu/auth.h"
#include "emu/qp.h"
#include "emu/queues.h"
#include "emu/subnet.h"
#include "emu/wire.h"
#include "sdp/be.h"
#include "sdp/device.h"
#include "tests/forked_child.h"
#include "tests/subnet_env.h"

using namespace hcasim;
using hca::QpState;
using namespace std::chrono_literals;

namespace {

const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new hcasim::testing::SubnetEnv("hcasim-auth-test"));

constexpr size_t kBuf = 4096;

sdp::Addr addr_of(std::vector<uint8_t>& v) { return reinterpret_cast<sdp::Addr>(v.data()); }

/// The TCP (and UDP) port number of LID 1, read from its claim file as any local process could.
uint16_t port_from_lid_file() {
  std::ifstream f(emu::subnet_dir() + "/lid-0001");
  long pid = 0;
  unsigned port = 0;
  f >> pid >> port;
  return static_cast<uint16_t>(port);
}

/// A connected loopback TCP socket to `port`, or -1.
int tcp_connect(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

void send_all(int fd, const std::vector<uint8_t>& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t k = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (k <= 0) return;  // closed by the port: what is left goes nowhere
    off += static_cast<size_t>(k);
  }
}

/// Reads from `fd` until the peer closes it or `limit` passes; the bytes read.
std::vector<uint8_t> read_until_closed(int fd, std::chrono::milliseconds limit, bool* closed = nullptr) {
  std::vector<uint8_t> got;
  const auto end = std::chrono::steady_clock::now() + limit;
  if (closed != nullptr) *closed = false;
  while (std::chrono::steady_clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (::poll(&p, 1, static_cast<int>(std::max<long>(1, left.count()))) <= 0) continue;
    uint8_t b[4096];
    const ssize_t k = ::recv(fd, b, sizeof b, 0);
    if (k <= 0) {
      if (closed != nullptr) *closed = true;
      break;
    }
    got.insert(got.end(), b, b + k);
  }
  return got;
}

/// Waits at most 5 s until `f()` reaches `want`, then 100 ms more (a count beyond it would show).
template <class F>
uint64_t settle(F f, uint64_t want) {
  const auto end = std::chrono::steady_clock::now() + 5s;
  while (f() < want && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(100ms);
  return f();
}

/// The frames of `packets`, one after the other, as a stream carries them.
std::vector<uint8_t> frames_of(const std::vector<emu::Packet>& packets) {
  std::vector<uint8_t> out;
  for (const emu::Packet& p : packets) {
    const auto f = emu::encode(p);
    out.insert(out.end(), f.begin(), f.end());
  }
  return out;
}

/// The frames of the exploit the handshake stops: a CM REQ naming the victim QP as if from its
/// peer, then a SEND and an RDMA WRITE of 0xEE over the whole victim buffer with its real rkey.
std::vector<uint8_t> forged_stream(uint32_t victim_qpn, uint32_t peer_qpn, sdp::Addr va, uint32_t rkey) {
  std::vector<emu::Packet> packets = {{.op = emu::Op::CmReq, .dest_qpn = victim_qpn, .local_qpn = peer_qpn}};
  for (uint32_t psn = 0; psn < 4; ++psn) {
    packets.push_back({.op = emu::Op::SendOnly, .dest_qpn = victim_qpn, .psn = psn, .pkey = hca::kDefaultPkey,
                       .payload = std::vector<uint8_t>(64, 0xEE)});
    packets.push_back({.op = emu::Op::RdmaWriteOnly, .dest_qpn = victim_qpn, .psn = psn, .pkey = hca::kDefaultPkey,
                       .va = va, .rkey = rkey, .dma_len = 1024, .payload = std::vector<uint8_t>(1024, 0xEE)});
  }
  return frames_of(packets);
}

/// Two RC QPs of one adapter on the test's subnet (LID 1): `victim` and its genuine peer `peer`.
/// The peer has the smaller QPN, so it opens the stream and the victim's port accepts it; the
/// victim goes to RTR first (arm), and so waits for its stream while a stranger tries the port.
struct Victim : ::testing::Test {
  emu::Hca hca{nullptr};
  uint32_t pd = hca.alloc_pd();
  std::vector<uint8_t> peer_buf = std::vector<uint8_t>(kBuf, 0), victim_buf = std::vector<uint8_t>(kBuf, 0);
  uint32_t peer_key = hca.reg_mr(pd, addr_of(peer_buf), kBuf, sdp::kLocalWrite);
  uint32_t victim_key =
      hca.reg_mr(pd, addr_of(victim_buf), kBuf, sdp::kLocalWrite | sdp::kRemoteWrite | sdp::kRemoteRead);
  std::shared_ptr<emu::CompQueue> peer_cq = std::make_shared<emu::CompQueue>(64);
  std::shared_ptr<emu::CompQueue> victim_cq = std::make_shared<emu::CompQueue>(64);
  std::shared_ptr<emu::Qp> peer = hca.create_qp(hca::QpType::Rc, pd, sdp::QpCaps{16, 16, 64}, peer_cq, peer_cq);
  std::shared_ptr<emu::Qp> victim = hca.create_qp(hca::QpType::Rc, pd, sdp::QpCaps{16, 16, 64}, victim_cq, victim_cq);
  uint16_t port = 0;

  static void to_init(emu::Qp& q) {
    using namespace hca::attr;
    hca::QpAttr t = q.attr();
    t.qp_state = QpState::Init;
    t.pkey_index = 0;
    t.port_num = 1;
    t.qp_access_flags = sdp::kRemoteWrite | sdp::kRemoteRead;
    ASSERT_EQ(q.modify(t, kState | kPkeyIndex | kPort | kAccessFlags), 0);
  }
  static void to_rts(emu::Qp& q, uint16_t dlid, uint32_t dest) {
    using namespace hca::attr;
    hca::QpAttr t = q.attr();
    t.qp_state = QpState::Rtr;
    t.dlid = dlid;
    t.dest_qp_num = dest;
    t.rq_psn = 0;
    t.max_dest_rd_atomic = 1;
    t.min_rnr_timer = 12;
    ASSERT_EQ(q.modify(t, kState | kAv | kPathMtu | kDestQpn | kRqPsn | kMaxDestRdAtomic | kMinRnrTimer), 0);
    t = q.attr();
    t.qp_state = QpState::Rts;
    t.sq_psn = 0;
    t.timeout = 14;
    t.retry_cnt = 7;
    t.rnr_retry = 7;
    t.max_rd_atomic = 1;
    ASSERT_EQ(q.modify(t, kState | kSqPsn | kTimeout | kRetryCnt | kRnrRetry | kMaxQpRdAtomic), 0);
  }

  void SetUp() override {
    ASSERT_LT(peer->qp_num(), victim->qp_num());
    to_init(*peer);
    to_init(*victim);
    to_rts(*victim, hca.lid(), peer->qp_num());  // waits for the peer's stream
    port = port_from_lid_file();
    ASSERT_NE(port, 0);
  }
  /// The genuine peer joins: its stream goes through the handshake.
  void join() { to_rts(*peer, hca.lid(), victim->qp_num()); }

  /// The genuine transfer: a 64-byte SEND of 0x11 into the victim's offset 0 and a 64-byte RDMA
  /// WRITE of 0x22 at offset 1024; both complete, and the victim's buffer holds just those.
  void genuine_transfer() {
    sdp::RecvWr r;
    r.wr_id = 7;
    r.sg[0] = {addr_of(victim_buf), 64, victim_key};
    r.num_sge = 1;
    victim->post_recv(r);
    std::fill_n(peer_buf.begin(), 64, uint8_t{0x11});
    std::fill_n(peer_buf.begin() + 64, 64, uint8_t{0x22});
    sdp::SendWr s;
    s.wr_id = 1;
    s.sg[0] = {addr_of(peer_buf), 64, peer_key};
    s.num_sge = 1;
    peer->post_send(s);
    sdp::SendWr w = s;
    w.wr_id = 2;
    w.opcode = sdp::WrOpcode::RdmaWrite;
    w.sg[0] = {addr_of(peer_buf) + 64, 64, peer_key};
    w.remote_addr = addr_of(victim_buf) + 1024;
    w.rkey = victim_key;
    peer->post_send(w);
    const auto sent = poll_n(*peer_cq, 2);
    ASSERT_EQ(sent.size(), 2u) << peer->reason();
    EXPECT_EQ(sent[0].status, sdp::WcStatus::Success);
    EXPECT_EQ(sent[1].status, sdp::WcStatus::Success);
    const auto got = poll_n(*victim_cq, 1);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].status, sdp::WcStatus::Success);
    EXPECT_EQ(got[0].byte_len, 64u);
    std::vector<uint8_t> want(kBuf, 0);
    std::fill_n(want.begin(), 64, uint8_t{0x11});
    std::fill_n(want.begin() + 1024, 64, uint8_t{0x22});
    EXPECT_EQ(victim_buf, want);
  }
  static std::vector<sdp::Wc> poll_n(emu::CompQueue& cq, size_t n) {
    std::vector<sdp::Wc> out;
    const auto end = std::chrono::steady_clock::now() + 10s;
    while (out.size() < n && std::chrono::steady_clock::now() < end) {
      std::array<sdp::Wc, 4> wc;
      const int k = cq.poll(wc);
      out.insert(out.end(), wc.begin(), wc.begin() + k);
      if (k == 0) std::this_thread::sleep_for(100us);
    }
    return out;
  }
  bool untouched() const { return std::all_of(victim_buf.begin(), victim_buf.end(), [](uint8_t b) { return b == 0; }); }

  /// A stream to the victim's port opened as its peer QP by a process with the subnet's secret
  /// (the subnet's owner): the handshake passes and the victim takes the stream, and a receive
  /// of 64 bytes at the victim's offset 0 is posted. -1 when the handshake did not complete (a
  /// failure is recorded).
  int peer_stream() {
    const int fd = tcp_connect(port);
    EXPECT_GE(fd, 0);
    if (fd < 0) return -1;
    auto read_exact = [&](uint8_t* out, size_t n) {
      for (size_t got = 0; got < n;) {
        const ssize_t k = ::recv(fd, out + got, n - got, 0);
        if (k <= 0) return false;
        got += static_cast<size_t>(k);
      }
      return true;
    };
    emu::Challenge challenge{};
    const emu::StreamReq req{.dest_qpn = victim->qp_num(), .slid = hca.lid(), .src_qpn = peer->qp_num(), .psn = 0};
    const emu::Nonce mine = emu::make_nonce();
    emu::Proof proof{};
    bool ok = read_exact(challenge.data(), challenge.size());
    if (ok) {
      const emu::Answer answer = emu::make_answer(hca.secret(), challenge, mine, req);
      send_all(fd, std::vector<uint8_t>(answer.begin(), answer.end()));
      ok = read_exact(proof.data(), proof.size()) && emu::check_proof(hca.secret(), challenge, mine, req, proof);
    }
    EXPECT_TRUE(ok) << "the victim's port did not complete the handshake";
    if (!ok) {
      ::close(fd);
      return -1;
    }
    sdp::RecvWr r;
    r.wr_id = 9;
    r.sg[0] = {addr_of(victim_buf), 64, victim_key};
    r.num_sge = 1;
    victim->post_recv(r);
    return fd;
  }
  /// Sends on `fd` (peer_stream) the SEND the victim expects, PSN 0 and 64 bytes of 0x33 with
  /// P_Key `pkey`, and checks that it completed into the victim's receive (offset 0).
  void send_expected(int fd, uint16_t pkey) {
    send_all(fd, emu::encode({.op = emu::Op::SendOnly, .dest_qpn = victim->qp_num(), .psn = 0, .ack_req = true,
                              .pkey = pkey, .payload = std::vector<uint8_t>(64, 0x33)}));
    const auto wc = poll_n(*victim_cq, 1);
    ASSERT_EQ(wc.size(), 1u);
    EXPECT_EQ(wc[0].status, sdp::WcStatus::Success);
    EXPECT_EQ(victim_buf[0], 0x33);
  }
};

}  // namespace

TEST_F(Victim, AForgedCmReqWithWritesBehindItIsRefusedAndCounted) {
  const int fd = tcp_connect(port);
  ASSERT_GE(fd, 0);
  send_all(fd, forged_stream(victim->qp_num(), peer->qp_num(), addr_of(victim_buf), victim_key));
  bool closed = false;
  const auto got = read_until_closed(fd, 1500ms, &closed);
  ::close(fd);
  EXPECT_TRUE(closed) << "the port closes the stream as soon as the answer's MAC fails";
  EXPECT_LE(got.size(), emu::kChallengeSize) << "the challenge and nothing else";
  EXPECT_EQ(settle([&] { return hca.strangers_refused(); }, 1), 1u);
  EXPECT_TRUE(untouched());
  EXPECT_EQ(victim->state(), QpState::Rts);
  join();
  genuine_transfer();
  EXPECT_EQ(hca.strangers_refused(), 1u);
  EXPECT_EQ(victim->header_drops(), 0u);
}

TEST_F(Victim, AnotherUsersProcessIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "switching to uid 65534 needs root";
  const std::string secret = emu::subnet_dir() + "/secret";
  const std::vector<uint8_t> forged = forged_stream(victim->qp_num(), peer->qp_num(), addr_of(victim_buf), victim_key);
  const pid_t c = ::fork();
  if (c == 0) {
    // Only system calls here (the parent has threads). Exit 0: the secret unreadable, the
    // stream closed by the port after the challenge alone.
    hcasim::testing::forked_child_leaks_are_not_errors();
    if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) ::_exit(10);
    if (::open(secret.c_str(), O_RDONLY) >= 0 || errno != EACCES) ::_exit(11);
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0) ::_exit(12);
    ::send(fd, forged.data(), forged.size(), MSG_NOSIGNAL);
    size_t total = 0;
    uint8_t b[256];
    ssize_t k;
    while ((k = ::recv(fd, b, sizeof b, 0)) > 0) total += static_cast<size_t>(k);
    ::_exit(total <= emu::kChallengeSize ? 0 : 13);
  }
  int st = 0;
  ASSERT_EQ(::waitpid(c, &st, 0), c);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 0);
  EXPECT_EQ(settle([&] { return hca.strangers_refused(); }, 1), 1u);
  EXPECT_TRUE(untouched());
  join();
  genuine_transfer();
}

TEST_F(Victim, IdleAndSlowStrangersAreClosedAfterTheHandshakeTimeout) {
  const auto start = std::chrono::steady_clock::now();
  const int idle = tcp_connect(port);
  const int slow = tcp_connect(port);
  ASSERT_GE(idle, 0);
  ASSERT_GE(slow, 0);
  // The slow one sends a byte every 250 ms: each read makes progress, the whole does not.
  std::thread trickle([&] {
    for (int i = 0; i < 40; ++i) {
      const uint8_t b = 0;
      if (::send(slow, &b, 1, MSG_NOSIGNAL) != 1) return;
      std::this_thread::sleep_for(250ms);
    }
  });
  bool idle_closed = false, slow_closed = false;
  read_until_closed(idle, std::chrono::milliseconds(emu::kHandshakeTimeoutMs + 2000), &idle_closed);
  const auto idle_after = std::chrono::steady_clock::now() - start;
  read_until_closed(slow, std::chrono::milliseconds(emu::kHandshakeTimeoutMs + 2000), &slow_closed);
  const auto slow_after = std::chrono::steady_clock::now() - start;
  trickle.join();
  ::close(idle);
  ::close(slow);
  EXPECT_TRUE(idle_closed);
  EXPECT_TRUE(slow_closed);
  EXPECT_GE(idle_after, std::chrono::milliseconds(emu::kHandshakeTimeoutMs - 100));
  EXPECT_LT(slow_after, std::chrono::milliseconds(emu::kHandshakeTimeoutMs + 1500));
  EXPECT_EQ(settle([&] { return hca.strangers_refused(); }, 2), 2u);
  join();
  genuine_transfer();
  EXPECT_EQ(hca.strangers_refused(), 2u);
}

TEST_F(Victim, AHugeLengthFieldIsNeverUsedAsOne) {
  // 16 MiB announced, then bytes up to the answer's size: refused on the answer's MAC at once,
  // nothing of the length is allocated or waited for.
  const int fd = tcp_connect(port);
  ASSERT_GE(fd, 0);
  std::vector<uint8_t> bytes(emu::kAnswerSize, 0x41);
  sdp::be::put32(bytes.data(), 16u << 20);
  const auto start = std::chrono::steady_clock::now();
  send_all(fd, bytes);
  bool closed = false;
  read_until_closed(fd, 1500ms, &closed);
  EXPECT_TRUE(closed);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 1000ms);
  ::close(fd);
  // The length field alone, then nothing: closed at the timeout.
  const int fd2 = tcp_connect(port);
  ASSERT_GE(fd2, 0);
  send_all(fd2, std::vector<uint8_t>(bytes.begin(), bytes.begin() + 4));
  read_until_closed(fd2, std::chrono::milliseconds(emu::kHandshakeTimeoutMs + 2000), &closed);
  EXPECT_TRUE(closed);
  ::close(fd2);
  EXPECT_EQ(settle([&] { return hca.strangers_refused(); }, 2), 2u);
  EXPECT_TRUE(untouched());
  join();
  genuine_transfer();
}

TEST_F(Victim, FramesNamingAnotherQpAreDroppedSilentlyAndCounted) {
  // A process with the secret (the subnet's owner) opens the victim's stream as its peer: the
  // handshake passes; then frames whose BTH names another QP are dropped without an answer, and
  // the one naming the victim is executed.
  const int fd = peer_stream();
  ASSERT_GE(fd, 0);
  send_all(fd, frames_of({{.op = emu::Op::RdmaWriteOnly, .dest_qpn = victim->qp_num() + 1, .psn = 0, .ack_req = true,
                           .pkey = hca::kDefaultPkey, .va = addr_of(victim_buf) + 1024, .rkey = victim_key,
                           .dma_len = 64, .payload = std::vector<uint8_t>(64, 0xEE)},
                          {.op = emu::Op::SendOnly, .dest_qpn = 0xABCDE, .psn = 0, .ack_req = true,
                           .pkey = hca::kDefaultPkey, .payload = std::vector<uint8_t>(64, 0xEE)}}));
  EXPECT_TRUE(read_until_closed(fd, 300ms).empty()) << "no answer to a frame for another QP";
  EXPECT_EQ(victim->header_drops(), 2u);
  EXPECT_TRUE(untouched());
  send_expected(fd, hca::kDefaultPkey);
  EXPECT_FALSE(read_until_closed(fd, 1000ms).empty()) << "the SEND is ACKed";
  EXPECT_EQ(victim->header_drops(), 2u);
  EXPECT_EQ(hca.strangers_refused(), 0u);
  EXPECT_EQ(hca.pkey_violations(), 0u);
  ::close(fd);
}

TEST_F(Victim, PacketsWhosePkeyIsNotTheQpsAreDroppedSilentlyAndCounted) {
  // On the victim's own authenticated stream (its DestQP right), packets whose BTH P_Key does
  // not match the victim's (the default 0xFFFF, full member) fail the P_Key check (IBA 10.9.3):
  // dropped without an answer and counted as the port's P_Key violations (10.9.4). A limited
  // member of the default partition (0x7FFF) talks to the full member: that SEND is executed.
  const int fd = peer_stream();
  ASSERT_GE(fd, 0);
  // Another partition's full member, the invalid P_Key, one bit of the partition off.
  const uint32_t qpn = victim->qp_num();
  send_all(fd, frames_of({{.op = emu::Op::RdmaWriteOnly, .dest_qpn = qpn, .psn = 0, .ack_req = true, .pkey = 0x8001,
                           .va = addr_of(victim_buf) + 1024, .rkey = victim_key, .dma_len = 64,
                           .payload = std::vector<uint8_t>(64, 0xEE)},
                          {.op = emu::Op::SendOnly, .dest_qpn = qpn, .psn = 0, .ack_req = true, .pkey = 0,
                           .payload = std::vector<uint8_t>(64, 0xEE)},
                          {.op = emu::Op::SendOnly, .dest_qpn = qpn, .psn = 0, .ack_req = true, .pkey = 0xFFFE,
                           .payload = std::vector<uint8_t>(64, 0xEE)}}));
  EXPECT_TRUE(read_until_closed(fd, 300ms).empty()) << "no answer to a packet failing the P_Key check";
  EXPECT_EQ(hca.pkey_violations(), 3u);
  EXPECT_TRUE(untouched());
  EXPECT_EQ(victim->header_drops(), 0u) << "a P_Key violation is the port's count, not a header drop";
  EXPECT_EQ(victim->state(), QpState::Rts);
  // The transfer goes on: PSN 0 is still the one expected.
  send_expected(fd, 0x7FFF);
  // Its ACK carries the victim's own P_Key (IBA 9.2: every packet of the QP).
  const std::vector<uint8_t> ack = read_until_closed(fd, 1000ms);
  ASSERT_GE(ack.size(), emu::kLengthSize + emu::kHeaderSize + emu::kIcrcSize);
  const uint32_t len = emu::decode_length(std::span<const uint8_t, emu::kLengthSize>(ack.data(), emu::kLengthSize));
  ASSERT_GE(ack.size(), emu::kLengthSize + len);
  const emu::Packet p = emu::decode(std::span<const uint8_t>(ack.data() + emu::kLengthSize, len));
  EXPECT_EQ(p.op, emu::Op::Acknowledge);
  EXPECT_EQ(p.pkey, hca::kDefaultPkey);
  EXPECT_EQ(hca.pkey_violations(), 3u);
  ::close(fd);
}

TEST_F(Victim, KeysHaveMlx4sLayoutWithARandomKeyByte) {
  // The MR's index in bits 8-31 (the peer's MR was registered first), the key byte in 0-7.
  EXPECT_EQ(peer_key >> 8, 1u);
  EXPECT_EQ(victim_key >> 8, 2u);
  // A deregistered MR's index is the next MR's (as mlx4 reuses its MPT entries), with another
  // key byte: the old key names nothing.
  std::set<uint32_t> bytes;
  uint32_t last = 0;
  for (int i = 0; i < 64; ++i) {
    const uint32_t k = hca.reg_mr(pd, addr_of(peer_buf), 64, sdp::kLocalWrite);
    EXPECT_EQ(k >> 8, 3u);
    EXPECT_NE(k, last);
    if (i > 0) {
      EXPECT_EQ(hca.dereg_mr(last), EINVAL) << "the last MR's key names the new MR";
    }
    last = k;
    bytes.insert(k & 0xFF);
    EXPECT_EQ(hca.dereg_mr(k), 0);
  }
  EXPECT_GT(bytes.size(), 1u) << "64 key bytes all alike";
  // A key with the victim MR's index and another key byte names no MR.
  const uint32_t wrong = victim_key ^ 0x5A;
  EXPECT_EQ(hca.dereg_mr(wrong), EINVAL);
  EXPECT_EQ(hca.check_mr(wrong, pd, addr_of(victim_buf), 8, sdp::kRemoteWrite), hca::MrRefusal::UnknownKey);
  join();
  sdp::SendWr w;
  w.opcode = sdp::WrOpcode::RdmaWrite;
  std::fill_n(peer_buf.begin(), 64, uint8_t{0xEE});
  w.sg[0] = {addr_of(peer_buf), 64, peer_key};
  w.num_sge = 1;
  w.remote_addr = addr_of(victim_buf);
  w.rkey = wrong;
  peer->post_send(w);
  const auto wc = poll_n(*peer_cq, 1);
  ASSERT_EQ(wc.size(), 1u);
  EXPECT_EQ(wc[0].status, sdp::WcStatus::RemAccessErr);
  EXPECT_TRUE(untouched());
}

/// Descriptors this process has open (/proc/self/fd).
size_t open_fds() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

TEST_F(Victim, AFloodOfStrangersHoldsAtMostTheBacklogsDescriptors) {
  // 100 strangers connect and wait. The port keeps the newest kMaxHandshakes (64) handshakes and
  // closes the 36 oldest at once: this process (both ends live here) gains 100 + 64 descriptors,
  // not 200. The genuine peer's handshake then closes one more, and its transfer completes.
  const size_t before = open_fds();
  std::vector<int> fds;
  for (int i = 0; i < 100; ++i) {
    fds.push_back(tcp_connect(port));
    ASSERT_GE(fds.back(), 0);
  }
  EXPECT_EQ(settle([&] { return hca.strangers_refused(); }, 36), 36u);
  EXPECT_EQ(open_fds() - before, 100u + emu::kMaxHandshakes);
  join();
  genuine_transfer();
  EXPECT_TRUE(hca.strangers_refused() == 37u || hca.strangers_refused() == 100u);  // 100: the 2 s timeouts came first
  for (int fd : fds) ::close(fd);
}

TEST(EmuAuth, APortOutOfDescriptorsBacksOffInsteadOfSpinning) {
  // A child owns a port and then has no descriptor to spare (RLIMIT_NOFILE at the lowest free
  // one, and no stranger's handshake to close): its accept(2) fails with EMFILE while strangers
  // of the parent's queue up. Retrying at once would spin the I/O thread: a whole CPU, or at
  // least a third of one on a loaded 2-core machine. Backing off kAcceptBackoffMs (10 accept(2)
  // calls a second) costs next to nothing. The child measures its own CPU time over 1 s and
  // sends it to the parent: under 0.25 s.
#if defined(HCASIM_SANITIZE)
  // UBSan's vptr check reads a vtable's prefix only after testing it is mapped, through a pipe
  // (sanitizer_common IsAccessibleMemoryRange): with no descriptor free, every check not yet
  // cached reports an invalid vptr, and the child exits 1 on a false finding.
  GTEST_SKIP() << "needs a process without a free descriptor, where UBSan's vptr check cannot work";
#endif
  int ready[2], go[2], result[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(go), 0);
  ASSERT_EQ(::pipe(result), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(ready[0]);
    ::close(go[1]);
    ::close(result[0]);
    emu::Hca hca(nullptr);
    const uint16_t lid = hca.lid();
    (void)lid;
    const uint16_t p = port_from_lid_file();
    rlimit lim{};
    ::getrlimit(RLIMIT_NOFILE, &lim);
    // The limit is a descriptor number: the lowest free one. What is open above it stays open.
    const int lowest_free = ::dup(0);
    ::close(lowest_free);
    lim.rlim_cur = static_cast<rlim_t>(lowest_free);
    ::setrlimit(RLIMIT_NOFILE, &lim);
    if (::write(ready[1], &p, sizeof p) != sizeof p) ::_exit(3);
    char c = 0;
    if (::read(go[0], &c, 1) != 1) ::_exit(4);
    rusage r0{}, r1{};
    ::getrusage(RUSAGE_SELF, &r0);
    std::this_thread::sleep_for(1s);
    ::getrusage(RUSAGE_SELF, &r1);
    auto secs = [](const rusage& r) {
      return static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
             static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec) * 1e-6;
    };
    const double cpu = secs(r1) - secs(r0);
    ::_exit(::write(result[1], &cpu, sizeof cpu) == sizeof cpu ? 0 : 5);
  }
  // The parent keeps only its own ends: a child that dies early ends these reads with EOF.
  ::close(ready[1]);
  ::close(go[0]);
  ::close(result[1]);
  uint16_t p = 0;
  const ssize_t got = ::read(ready[0], &p, sizeof p);
  std::vector<int> fds;
  if (got == static_cast<ssize_t>(sizeof p)) {
    for (int i = 0; i < 8; ++i) fds.push_back(tcp_connect(p));  // the kernel completes them (backlog 64)
    EXPECT_EQ(::write(go[1], "g", 1), 1);
  }
  double cpu = -1;
  const ssize_t got_cpu = ::read(result[0], &cpu, sizeof cpu);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  for (int fd : fds) ::close(fd);
  for (int fd : {ready[0], go[1], result[0]}) ::close(fd);
  ASSERT_EQ(got, static_cast<ssize_t>(sizeof p)) << "the child died before its port was up; status " << status;
  EXPECT_TRUE(std::all_of(fds.begin(), fds.end(), [](int fd) { return fd >= 0; })) << "a stranger could not connect";
  ASSERT_TRUE(WIFEXITED(status)) << "the child died; status " << status;
  ASSERT_EQ(WEXITSTATUS(status), 0) << "the child's set-up failed (3, 4) or it could not report (5)";
  ASSERT_EQ(got_cpu, static_cast<ssize_t>(sizeof cpu));
  EXPECT_LT(cpu, 0.25) << "the port owner used " << cpu << " s of CPU in 1 s: it spins";
}

TEST(EmuAuth, AnImpostorOnThePeersPortNumberGetsNoFrame) {
  // LID 2's claim names a port number an impostor (no secret) listens on; a QP connecting to LID
  // 2 reads its challenge, answers, gets a proof that fails and sends nothing more.
  emu::Hca hca(nullptr);
  const uint16_t lid = hca.lid();
  ASSERT_EQ(lid, 1);
  const int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(lfd, reinterpret_cast<const sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(lfd, 4), 0);
  socklen_t len = sizeof a;
  ::getsockname(lfd, reinterpret_cast<sockaddr*>(&a), &len);
  std::ofstream(emu::subnet_dir() + "/lid-0002")
      << fmt::format("{} {} {}\n", ::getpid(), ntohs(a.sin_port), emu::process_start_time(::getpid()));
  std::vector<uint8_t> received;
  std::thread impostor([&] {
    const int fd = ::accept(lfd, nullptr, nullptr);
    if (fd < 0) return;
    send_all(fd, std::vector<uint8_t>(emu::kChallengeSize, 0x5A));
    std::vector<uint8_t> first;
    while (first.size() < emu::kAnswerSize) {
      uint8_t b[256];
      const ssize_t k = ::recv(fd, b, std::min(sizeof b, emu::kAnswerSize - first.size()), 0);
      if (k <= 0) break;
      first.insert(first.end(), b, b + k);
    }
    send_all(fd, std::vector<uint8_t>(emu::kProofSize, 0x5A));
    received = first;
    const auto rest = read_until_closed(fd, 3000ms);
    received.insert(received.end(), rest.begin(), rest.end());
    ::close(fd);
  });
  auto cq = std::make_shared<emu::CompQueue>(16);
  auto qp = hca.create_qp(hca::QpType::Rc, hca.alloc_pd(), sdp::QpCaps{4, 4, 16}, cq, cq);
  Victim::to_init(*qp);
  using namespace hca::attr;
  hca::QpAttr t = qp->attr();
  t.qp_state = QpState::Rtr;
  t.dlid = 2;
  t.dest_qp_num = 0x999;
  t.max_dest_rd_atomic = 1;
  t.min_rnr_timer = 12;
  EXPECT_EQ(qp->modify(t, kState | kAv | kPathMtu | kDestQpn | kRqPsn | kMaxDestRdAtomic | kMinRnrTimer), 0);
  impostor.join();
  ::close(lfd);
  ::unlink((emu::subnet_dir() + "/lid-0002").c_str());
  EXPECT_EQ(received.size(), emu::kAnswerSize) << "the answer, then nothing";
  EXPECT_EQ(qp->state(), QpState::Error);
  EXPECT_NE(qp->reason().find("does not know the subnet's secret"), std::string::npos) << qp->reason();
  EXPECT_EQ(hca.strangers_refused(), 1u);
}

TEST(EmuAuth, UdDatagramsWithoutTheMacOrWithAnotherPkeyAreDroppedAndCounted) {
  emu::Hca hca(nullptr);
  const uint32_t pd = hca.alloc_pd();
  std::vector<uint8_t> rbuf(kBuf, 0), sbuf(kBuf, 0x44);
  const uint32_t rkey = hca.reg_mr(pd, addr_of(rbuf), kBuf, sdp::kLocalWrite);
  const uint32_t skey = hca.reg_mr(pd, addr_of(sbuf), kBuf, sdp::kLocalWrite);
  constexpr uint32_t kUdQkey = 0x11111111;
  std::shared_ptr<emu::CompQueue> cqs[2];
  std::shared_ptr<emu::Qp> ud[2];
  for (int i = 0; i < 2; ++i) {
    using namespace hca::attr;
    cqs[i] = std::make_shared<emu::CompQueue>(16);
    ud[i] = hca.create_qp(hca::QpType::Ud, pd, sdp::QpCaps{4, 4, 16}, cqs[i], cqs[i]);
    hca::QpAttr t = ud[i]->attr();
    t.qkey = kUdQkey;
    t.pkey_index = 0;
    t.port_num = 1;
    t.qp_state = QpState::Init;
    ASSERT_EQ(ud[i]->modify(t, kState | kPkeyIndex | kPort | kQkey), 0);
    t.qp_state = QpState::Rtr;
    ASSERT_EQ(ud[i]->modify(t, kState), 0);
    t.qp_state = QpState::Rts;
    t.sq_psn = 0;
    ASSERT_EQ(ud[i]->modify(t, kState | kSqPsn), 0);
  }
  const uint16_t lid = hca.lid();
  sdp::RecvWr r;
  r.wr_id = 5;
  r.sg[0] = {addr_of(rbuf), 40 + 64, rkey};
  r.num_sge = 1;
  ud[1]->post_recv(r);
  // A well-formed UD SEND for ud[1] with the right Q_Key and P_Key: without a MAC, with a zero
  // MAC, with the MAC of another key; then one with the subnet's MAC but another partition's
  // P_Key (IBA 10.9.4: dropped by the P_Key check, counted as a P_Key violation).
  const std::vector<uint8_t> frame = emu::encode({.op = emu::Op::UdSendOnly, .dest_qpn = ud[1]->qp_num(),
                                                  .pkey = hca::kDefaultPkey, .local_qpn = ud[0]->qp_num(),
                                                  .qkey = kUdQkey, .slid = lid, .payload = std::vector<uint8_t>(64, 0xEE)});
  emu::SubnetSecret other{};
  other.fill(0x77);
  const auto bad_mac = emu::datagram_mac(other, frame);
  std::vector<uint8_t> other_partition = emu::encode({.op = emu::Op::UdSendOnly, .dest_qpn = ud[1]->qp_num(),
                                                      .pkey = 0x8001, .local_qpn = ud[0]->qp_num(), .qkey = kUdQkey,
                                                      .slid = lid, .payload = std::vector<uint8_t>(64, 0xEE)});
  const auto good_mac = emu::datagram_mac(hca.secret(), other_partition);
  other_partition.insert(other_partition.end(), good_mac.begin(), good_mac.end());
  std::vector<std::vector<uint8_t>> forged = {frame, frame, frame, {0x01}, other_partition};
  forged[1].insert(forged[1].end(), emu::kDatagramMacSize, 0);
  forged[2].insert(forged[2].end(), bad_mac.begin(), bad_mac.end());
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(port_from_lid_file());
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (const auto& d : forged)
    ASSERT_EQ(::sendto(fd, d.data(), d.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to),
              static_cast<ssize_t>(d.size()));
  ::close(fd);
  EXPECT_EQ(settle([&] { return hca.datagrams_refused(); }, 4), 4u);
  EXPECT_EQ(settle([&] { return hca.pkey_violations(); }, 1), 1u);
  std::array<sdp::Wc, 2> wc;
  EXPECT_EQ(cqs[1]->poll(wc), 0);
  EXPECT_TRUE(std::all_of(rbuf.begin(), rbuf.end(), [](uint8_t b) { return b == 0; }));
  // The genuine datagram of ud[0] arrives.
  hca::SendWqe w;
  w.wr.wr_id = 3;
  w.wr.sg[0] = {addr_of(sbuf), 64, skey};
  w.wr.num_sge = 1;
  w.x.ud_dlid = lid;
  w.x.ud_qpn = ud[1]->qp_num();
  w.x.ud_qkey = kUdQkey;
  ASSERT_EQ(ud[0]->post(w), 0);
  const auto end = std::chrono::steady_clock::now() + 5s;
  int n = 0;
  while ((n = cqs[1]->poll(wc)) == 0 && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(1ms);
  ASSERT_EQ(n, 1);
  EXPECT_EQ(wc[0].status, sdp::WcStatus::Success);
  EXPECT_EQ(rbuf[40], 0x44);
  EXPECT_EQ(hca.datagrams_refused(), 4u);
  EXPECT_EQ(hca.pkey_violations(), 1u);
  EXPECT_EQ(ud[1]->header_drops(), 0u);
}

// ---- the secret file ---------------------------------------------------------------------------

namespace {

/// The one-line error of bringing a port up on a subnet whose `secret` was planted by `plant`
/// (in a fresh subnet directory), or "" when it comes up.
template <class F>
std::string port_error(F plant) {
  std::string tmpl = "/tmp/hcasim-auth-secret-XXXXXX";
  EXPECT_NE(::mkdtemp(tmpl.data()), nullptr);
  ::setenv(emu::kSubnetEnv, tmpl.c_str(), 1);
  plant(tmpl + "/secret");
  std::string what;
  try {
    emu::Hca h(nullptr);
    h.lid();
  } catch (const sdp::DeviceError& e) {
    what = e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(tmpl + "/lid-0001")) << "no LID is claimed without the secret";
  std::error_code ec;
  std::filesystem::remove_all(tmpl, ec);
  return what;
}

void write_file(const std::string& path, size_t bytes, mode_t mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, mode);
  ASSERT_GE(fd, 0);
  const std::vector<uint8_t> b(bytes, 0x42);
  ASSERT_EQ(::write(fd, b.data(), b.size()), static_cast<ssize_t>(b.size()));
  ::fchmod(fd, mode);
  ::close(fd);
}

}  // namespace

TEST(EmuAuth, TheSecretIsMade0600Of32BytesAndSharedByThePortsOfTheSubnet) {
  emu::Hca a(nullptr), b(nullptr);
  EXPECT_NE(a.lid(), b.lid());
  struct stat st {};
  ASSERT_EQ(::lstat((emu::subnet_dir() + "/secret").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_size, 32);
  EXPECT_EQ(a.secret(), b.secret());
  EXPECT_NE(a.secret(), emu::SubnetSecret{});
}

TEST(EmuAuth, ASecretPlantedWrongIsOneLineOfErrorNamingIt) {
  const std::string target = "/tmp/hcasim-auth-target-" + std::to_string(::getpid());
  write_file(target, 32, 0600);
  struct Case {
    const char* name;
    std::function<void(const std::string&)> plant;
    const char* says;
  };
  const std::vector<Case> cases = {
      {"a symbolic link", [&](const std::string& p) { ASSERT_EQ(::symlink(target.c_str(), p.c_str()), 0); },
       "a symbolic link"},
      {"mode 0644", [](const std::string& p) { write_file(p, 32, 0644); }, "mode 0644"},
      {"mode 0640", [](const std::string& p) { write_file(p, 32, 0640); }, "mode 0640"},
      {"31 bytes", [](const std::string& p) { write_file(p, 31, 0600); }, "31 bytes, not 32"},
      {"33 bytes", [](const std::string& p) { write_file(p, 33, 0600); }, "33 bytes, not 32"},
      {"a FIFO", [](const std::string& p) { ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0); }, "not a regular file"},
      {"a directory", [](const std::string& p) { ASSERT_EQ(::mkdir(p.c_str(), 0700), 0); }, "not a regular file"},
  };
  for (const Case& c : cases) {
    const std::string e = port_error(c.plant);
    EXPECT_NE(e.find("emulated subnet secret /tmp/hcasim-auth-secret-"), std::string::npos) << c.name << ": " << e;
    EXPECT_NE(e.find(c.says), std::string::npos) << c.name << ": " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << c.name << ": " << e;
  }
  if (::geteuid() == 0) {
    const std::string e = port_error([](const std::string& p) {
      write_file(p, 32, 0600);
      ASSERT_EQ(::chown(p.c_str(), 65534, 65534), 0);
    });
    EXPECT_NE(e.find("owned by uid 65534"), std::string::npos) << e;
  }
  // The symbolic link's target was not touched.
  struct stat st {};
  ASSERT_EQ(::stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 32);
  ::unlink(target.c_str());
  // A good one, planted by the owner, is used as it is.
  EXPECT_EQ(port_error([](const std::string& p) { write_file(p, 32, 0600); }), "");
}
