// The emulated HCA between two devices over loopback TCP (emu/emu_device.h): protection
// checks, RDMA, RNR, connection setup and refusal. The devices live in one process here;
// the two-process runs are in emu_sdp_e2e_test.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "emu/emu_device.h"
#include "sdp/be.h"

using namespace hcasim;
using sdp::Access;
using sdp::WcStatus;

namespace {

constexpr uint64_t kBuf = 4096;

/// Two emulated HCAs connected by one RC connection. The passive side registers a 4 KiB
/// buffer for remote access and sends its address and rkey in the REP private data, the way
/// perftest exchanges them.
struct Pair {
  std::unique_ptr<rt::Device> a = emu::open_emu_device(8u << 20), b = emu::open_emu_device(8u << 20);
  std::unique_ptr<rt::Connection> ca, cb;
  sdp::Addr a_buf = 0, b_buf = 0;        // a's local buffer; b's remotely accessible one
  uint32_t a_key = 0, b_rkey = 0, b_ro_rkey = 0;  // b_ro_rkey: the same buffer, remote read only

  explicit Pair(const rt::QpCaps& caps = {}) {
    a_buf = a->memory().allocate(kBuf, sdp::DataMode::Bytes);
    b_buf = b->memory().allocate(kBuf, sdp::DataMode::Bytes);
    auto listener = b->listen("127.0.0.1", 0);
    const uint16_t port = listener->port();
    std::thread server([&] {
      cb = listener->accept(caps, [&](sdp::Verbs& v, std::span<const uint8_t>) {
        b_rkey = v.reg_mr(b_buf, kBuf, sdp::kLocalWrite | sdp::kRemoteWrite | sdp::kRemoteRead);
        b_ro_rkey = v.reg_mr(b_buf, kBuf, sdp::kRemoteRead);
        std::vector<uint8_t> rep(16);
        sdp::be::put64(rep.data(), b_buf);
        sdp::be::put32(rep.data() + 8, b_rkey);
        sdp::be::put32(rep.data() + 12, b_ro_rkey);
        return rep;
      });
    });
    std::vector<uint8_t> reply;
    ca = a->connect("127.0.0.1", port, caps, [&](sdp::Verbs& v) {
      a_key = v.reg_mr(a_buf, kBuf, sdp::kLocalWrite);
      return std::vector<uint8_t>{};
    }, reply);
    server.join();
    EXPECT_EQ(sdp::be::get64(reply.data()), b_buf);
    EXPECT_EQ(sdp::be::get32(reply.data() + 8), b_rkey);
  }
  uint8_t* a_bytes() { return a->memory().bytes(a_buf, kBuf); }
  uint8_t* b_bytes() { return b->memory().bytes(b_buf, kBuf); }
};

/// Polls `v` until a completion arrives (at most 5 s).
sdp::Wc wait_wc(sdp::Verbs& v) {
  std::array<sdp::Wc, 1> wc;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < until) {
    if (v.poll_cq(wc) == 1) return wc[0];
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  ADD_FAILURE() << "no completion within 5 s";
  return {};
}

sdp::SendWr rdma(sdp::WrOpcode op, sdp::Addr local, uint32_t lkey, uint32_t len, sdp::Addr remote, uint32_t rkey) {
  sdp::SendWr wr;
  wr.wr_id = 42;
  wr.opcode = op;
  wr.sg[0] = {local, len, lkey};
  wr.num_sge = 1;
  wr.remote_addr = remote;
  wr.rkey = rkey;
  return wr;
}

}  // namespace

TEST(EmuHca, RdmaWriteLandsInTheResponderBuffer) {
  Pair p;
  std::fill_n(p.a_bytes(), 100, uint8_t{0x5A});
  p.ca->verbs().post_send(rdma(sdp::WrOpcode::RdmaWrite, p.a_buf, p.a_key, 100, p.b_buf + 8, p.b_rkey));
  const sdp::Wc wc = wait_wc(p.ca->verbs());
  EXPECT_EQ(wc.status, WcStatus::Success);
  EXPECT_EQ(wc.opcode, sdp::WcOpcode::RdmaWrite);
  EXPECT_EQ(wc.wr_id, 42u);
  EXPECT_EQ(p.b_bytes()[7], 0);  // bytes 8..107 written, nothing around them
  EXPECT_EQ(p.b_bytes()[8], 0x5A);
  EXPECT_EQ(p.b_bytes()[107], 0x5A);
  EXPECT_EQ(p.b_bytes()[108], 0);
}

TEST(EmuHca, RdmaWriteWithAWrongRkeyFailsWithRemoteAccessErrorAndWritesNothing) {
  Pair p;
  std::fill_n(p.a_bytes(), kBuf, uint8_t{0xFF});
  p.ca->verbs().post_send(rdma(sdp::WrOpcode::RdmaWrite, p.a_buf, p.a_key, 64, p.b_buf, p.b_rkey + 77));
  const sdp::Wc wc = wait_wc(p.ca->verbs());
  EXPECT_EQ(wc.status, WcStatus::RemAccessErr);
  EXPECT_EQ(std::count(p.b_bytes(), p.b_bytes() + kBuf, 0), static_cast<long>(kBuf));
  // The requester's QP is in ERROR: a WR posted now is flushed (IBA 10.3.1), not executed.
  sdp::SendWr again = rdma(sdp::WrOpcode::RdmaWrite, p.a_buf, p.a_key, 8, p.b_buf, p.b_rkey);
  again.wr_id = 43;
  p.ca->verbs().post_send(again);
  const sdp::Wc flushed = wait_wc(p.ca->verbs());
  EXPECT_EQ(flushed.wr_id, 43u);
  EXPECT_EQ(flushed.status, WcStatus::WrFlushErr);
  EXPECT_EQ(std::count(p.b_bytes(), p.b_bytes() + kBuf, 0), static_cast<long>(kBuf));
}

TEST(EmuHca, RdmaWritePastTheMrEndOrWithoutRemoteWriteFails) {
  {
    Pair p;  // the last 8 bytes of the MR and 8 past it
    p.ca->verbs().post_send(rdma(sdp::WrOpcode::RdmaWrite, p.a_buf, p.a_key, 16, p.b_buf + kBuf - 8, p.b_rkey));
    EXPECT_EQ(wait_wc(p.ca->verbs()).status, WcStatus::RemAccessErr);
    EXPECT_EQ(std::count(p.b_bytes(), p.b_bytes() + kBuf, 0), static_cast<long>(kBuf));
  }
  {
    Pair p;  // a read-only rkey
    p.ca->verbs().post_send(rdma(sdp::WrOpcode::RdmaWrite, p.a_buf, p.a_key, 16, p.b_buf, p.b_ro_rkey));
    EXPECT_EQ(wait_wc(p.ca->verbs()).status, WcStatus::RemAccessErr);
  }
}

TEST(EmuHca, RdmaReadFetchesTheResponderBytes) {
  Pair p;
  for (uint64_t i = 0; i < kBuf; ++i) p.b_bytes()[i] = static_cast<uint8_t>(i * 7);
  p.ca->verbs().post_send(rdma(sdp::WrOpcode::RdmaRead, p.a_buf, p.a_key, 1000, p.b_buf + 10, p.b_ro_rkey));
  const sdp::Wc wc = wait_wc(p.ca->verbs());
  ASSERT_EQ(wc.status, WcStatus::Success);
  EXPECT_EQ(wc.opcode, sdp::WcOpcode::RdmaRead);
  EXPECT_TRUE(std::equal(p.a_bytes(), p.a_bytes() + 1000, p.b_bytes() + 10));
}

TEST(EmuHca, GatherOutsideItsMrFailsWithLocalProtectionError) {
  Pair p;  // 16 bytes from the end of a's 4 KiB MR, 32 long
  p.ca->verbs().post_send(rdma(sdp::WrOpcode::RdmaWrite, p.a_buf + kBuf - 16, p.a_key, 32, p.b_buf, p.b_rkey));
  EXPECT_EQ(wait_wc(p.ca->verbs()).status, WcStatus::LocProtErr);
  EXPECT_EQ(std::count(p.b_bytes(), p.b_bytes() + kBuf, 0), static_cast<long>(kBuf));
}

TEST(EmuHca, SendWithoutAReceiveEndsWithRnrRetryExceeded) {
  Pair p;
  emu::set_rnr_retry(p.ca->verbs(), 2);  // three tries: the first and two retries
  sdp::SendWr wr = rdma(sdp::WrOpcode::Send, p.a_buf, p.a_key, 64, 0, 0);
  p.ca->verbs().post_send(wr);
  EXPECT_EQ(wait_wc(p.ca->verbs()).status, WcStatus::RnrRetryExcErr);
}

TEST(EmuHca, SendWaitsForAReceivePostedLaterWhenRnrRetryIsInfinite) {
  Pair p;  // rnr_retry 7 (for ever), the default
  std::fill_n(p.a_bytes(), 64, uint8_t{0x33});
  p.ca->verbs().post_send(rdma(sdp::WrOpcode::Send, p.a_buf, p.a_key, 64, 0, 0));
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // several RNR NAKs go by
  sdp::RecvWr r;
  r.wr_id = 9;
  r.sg[0] = {p.b_buf, static_cast<uint32_t>(kBuf), p.b_rkey};
  r.num_sge = 1;
  p.cb->verbs().post_recv(r);
  EXPECT_EQ(wait_wc(p.ca->verbs()).status, WcStatus::Success);
  const sdp::Wc rwc = wait_wc(p.cb->verbs());
  EXPECT_EQ(rwc.status, WcStatus::Success);
  EXPECT_EQ(rwc.wr_id, 9u);
  EXPECT_EQ(rwc.byte_len, 64u);
  EXPECT_EQ(p.b_bytes()[63], 0x33);
}

TEST(EmuHca, ConnectingToAPortWithoutListenerIsRefused) {
  auto a = emu::open_emu_device(1u << 20);
  uint16_t port = 0;
  {  // a port that was free a moment ago
    auto l = a->listen("127.0.0.1", 0);
    port = l->port();
  }
  std::vector<uint8_t> reply;
  try {
    a->connect("127.0.0.1", port, {}, [](sdp::Verbs&) { return std::vector<uint8_t>{}; }, reply);
    FAIL() << "connected";
  } catch (const rt::Error& e) {
    EXPECT_EQ(std::string(e.what()), "cannot connect to 127.0.0.1:" + std::to_string(port) + ": Connection refused");
  }
}

TEST(EmuHca, ARejectedRequestTellsTheActiveSideWhy) {
  auto a = emu::open_emu_device(1u << 20), b = emu::open_emu_device(1u << 20);
  auto listener = b->listen("127.0.0.1", 0);
  std::string server_error;
  std::thread server([&] {
    try {
      listener->accept({}, [](sdp::Verbs&, std::span<const uint8_t>) -> std::vector<uint8_t> {
        throw std::runtime_error("HH: bad version");
      });
    } catch (const rt::Error& e) {
      server_error = e.what();
    }
  });
  std::vector<uint8_t> reply;
  try {
    a->connect("127.0.0.1", listener->port(), {}, [](sdp::Verbs&) { return std::vector<uint8_t>{1}; }, reply);
    ADD_FAILURE() << "connected";
  } catch (const rt::Error& e) {
    EXPECT_EQ(std::string(e.what()), "127.0.0.1:" + std::to_string(listener->port()) +
                                         " rejected the connection: HH: bad version");
  }
  server.join();
  EXPECT_NE(server_error.find("rejected the connection from 127.0.0.1:"), std::string::npos) << server_error;
}
