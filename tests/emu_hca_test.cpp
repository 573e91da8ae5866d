// The emulated HCA between two devices over loopback TCP (emu/emu_device.h): protection
// checks, RDMA, RNR, connection setup and refusal. The devices live in one process here;
// the two-process runs are in emu_sdp_e2e_test.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
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
/// Faults and retry attributes of one side's HCA.
struct Side {
  model::FaultConfig faults{};
  model::RcRetry retry{};
};

struct Pair {
  std::unique_ptr<sdp::Device> a, b;
  std::unique_ptr<sdp::Connection> ca, cb;
  uint64_t size = kBuf;                  // bytes of each buffer
  sdp::Addr a_buf = 0, b_buf = 0;        // a's local buffer; b's remotely accessible one
  uint32_t a_key = 0, b_rkey = 0, b_ro_rkey = 0;  // b_ro_rkey: the same buffer, remote read only

  explicit Pair(const sdp::QpCaps& caps = {}, const Side& sa = {}, const Side& sb = {}, uint64_t buf = kBuf)
      : a(emu::open_emu_device(8u << 20, sa.faults, sa.retry)),
        b(emu::open_emu_device(8u << 20, sb.faults, sb.retry)),
        size(buf) {
    const uint64_t bytes = size;  // the buffers' size below
    a_buf = a->memory().allocate(bytes, sdp::DataMode::Bytes);
    b_buf = b->memory().allocate(bytes, sdp::DataMode::Bytes);
    auto listener = b->listen("127.0.0.1", 0);
    const uint16_t port = listener->port();
    std::thread server([&] {
      cb = listener->next()->accept(caps, [&](sdp::Verbs& v, std::span<const uint8_t>) {
        b_rkey = v.reg_mr(b_buf, bytes, sdp::kLocalWrite | sdp::kRemoteWrite | sdp::kRemoteRead);
        b_ro_rkey = v.reg_mr(b_buf, bytes, sdp::kRemoteRead);
        std::vector<uint8_t> rep(16);
        sdp::be::put64(rep.data(), b_buf);
        sdp::be::put32(rep.data() + 8, b_rkey);
        sdp::be::put32(rep.data() + 12, b_ro_rkey);
        return rep;
      });
    });
    std::vector<uint8_t> reply;
    ca = a->connect("127.0.0.1", port, caps, [&](sdp::Verbs& v) {
      a_key = v.reg_mr(a_buf, bytes, sdp::kLocalWrite);
      return std::vector<uint8_t>{};
    }, reply);
    server.join();
    EXPECT_EQ(sdp::be::get64(reply.data()), b_buf);
    EXPECT_EQ(sdp::be::get32(reply.data() + 8), b_rkey);
  }
  uint8_t* a_bytes() { return a->memory().bytes(a_buf, size); }
  uint8_t* b_bytes() { return b->memory().bytes(b_buf, size); }
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
  } catch (const sdp::DeviceError& e) {
    EXPECT_EQ(std::string(e.what()), "cannot connect to 127.0.0.1:" + std::to_string(port) + ": Connection refused");
  }
}

TEST(EmuHca, ARejectedRequestTellsTheActiveSideWhy) {
  auto a = emu::open_emu_device(1u << 20), b = emu::open_emu_device(1u << 20);
  auto listener = b->listen("127.0.0.1", 0);
  std::string server_error;
  std::thread server([&] {
    try {
      listener->next()->accept({}, [](sdp::Verbs&, std::span<const uint8_t>) -> std::vector<uint8_t> {
        throw std::runtime_error("HH: bad version");
      });
    } catch (const sdp::DeviceError& e) {
      server_error = e.what();
    }
  });
  std::vector<uint8_t> reply;
  try {
    a->connect("127.0.0.1", listener->port(), {}, [](sdp::Verbs&) { return std::vector<uint8_t>{1}; }, reply);
    ADD_FAILURE() << "connected";
  } catch (const sdp::DeviceError& e) {
    EXPECT_EQ(std::string(e.what()), "127.0.0.1:" + std::to_string(listener->port()) +
                                         " rejected the connection: HH: bad version");
  }
  server.join();
  EXPECT_NE(server_error.find("rejected the connection from 127.0.0.1:"), std::string::npos) << server_error;
}

// ---- faults on the wire and RC retransmission (model/fault.h) ---------------------------------

namespace {

/// Byte j of message i of the fault tests: depends on both, so a message landing in another's
/// slot, or twice, or shifted, shows.
uint8_t pattern(uint64_t i, uint64_t j) { return static_cast<uint8_t>((i * 131 + j * 7 + (j >> 8)) ^ (i >> 3)); }

/// `count` events of probability `p` among `n` trials lie within 5 sigma of n p.
void expect_binomial(uint64_t count, uint64_t n, double p, const char* what) {
  const double mean = static_cast<double>(n) * p, sigma = std::sqrt(static_cast<double>(n) * p * (1 - p));
  EXPECT_NEAR(static_cast<double>(count), mean, 5 * sigma) << what << ": " << count << " of " << n << " at p=" << p;
}

}  // namespace

TEST(EmuHcaFaults, EveryMessageArrivesOnceInOrderThroughLossCorruptionDuplicationAndReordering) {
  Side s;
  s.faults = {.loss = 0.05, .corrupt = 0.02, .dup = 0.02, .reorder = 0.02, .seed = 7};
  // The default local ACK timeout (qp.timeout=14, 67.1 ms): with 4.2 ms x 8 tries, a loaded
  // 2-core machine (load 6-9) sometimes kept an I/O thread from running long enough to exhaust
  // retry_cnt without any fault to blame.
  sdp::QpCaps caps;
  caps.max_send_wr = 64;
  caps.max_recv_wr = 64;
  caps.cq_entries = 256;
  constexpr uint64_t kSlot = 8192, kSlots = 32, kSends = 2000, kWrites = 200, kWriteStride = 2048;
  constexpr uint64_t kWriteArea = kSlot * kSlots;  // b: receive slots, then the WRITE targets
  Pair p(caps, s, s, kWriteArea + kWrites * kWriteStride);
  sdp::Verbs& va = p.ca->verbs();
  sdp::Verbs& vb = p.cb->verbs();
  auto send_size = [](uint64_t i) { return 1 + (i * 7919) % kSlot; };  // 1 B to 8 KiB
  auto write_size = [](uint64_t k) { return 1 + (k * 331) % kWriteStride; };
  const uint64_t total = kSends + kWrites;
  uint64_t posted = 0, done = 0, recv_posted = 0, received = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while ((done < total || received < kSends) && std::chrono::steady_clock::now() < until) {
    while (recv_posted < kSends && recv_posted < received + kSlots) {
      sdp::RecvWr r;
      r.wr_id = recv_posted;
      r.sg[0] = {p.b_buf + (recv_posted % kSlots) * kSlot, static_cast<uint32_t>(kSlot), p.b_rkey};
      r.num_sge = 1;
      vb.post_recv(r);
      ++recv_posted;
    }
    while (posted < total && posted < done + kSlots) {  // WR i uses a's slot i % kSlots
      const bool write = posted >= kSends;
      const uint64_t k = posted - kSends, len = write ? write_size(k) : send_size(posted);
      uint8_t* src = p.a_bytes() + (posted % kSlots) * kSlot;
      for (uint64_t j = 0; j < len; ++j) src[j] = pattern(posted, j);
      sdp::SendWr wr = write ? rdma(sdp::WrOpcode::RdmaWrite, p.a_buf + (posted % kSlots) * kSlot, p.a_key,
                                    static_cast<uint32_t>(len), p.b_buf + kWriteArea + k * kWriteStride, p.b_rkey)
                             : rdma(sdp::WrOpcode::Send, p.a_buf + (posted % kSlots) * kSlot, p.a_key,
                                    static_cast<uint32_t>(len), 0, 0);
      wr.wr_id = posted;
      va.post_send(wr);
      ++posted;
    }
    std::array<sdp::Wc, 16> wc;
    for (int i = 0, n = va.poll_cq(wc); i < n; ++i) {
      ASSERT_EQ(wc[i].status, WcStatus::Success) << "WR " << wc[i].wr_id << ": " << p.ca->error_reason();
      ASSERT_EQ(wc[i].wr_id, done) << "send completions out of order";
      ++done;
    }
    for (int i = 0, n = vb.poll_cq(wc); i < n; ++i) {
      ASSERT_EQ(wc[i].status, WcStatus::Success) << p.cb->error_reason();
      ASSERT_EQ(wc[i].wr_id, received);
      ASSERT_EQ(wc[i].byte_len, send_size(received)) << "message " << received;
      const uint8_t* got = p.b_bytes() + (received % kSlots) * kSlot;
      for (uint64_t j = 0; j < wc[i].byte_len; ++j)
        ASSERT_EQ(got[j], pattern(received, j)) << "message " << received << " byte " << j;
      ++received;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  ASSERT_EQ(done, total) << "sends completed";
  ASSERT_EQ(received, kSends) << "messages received";
  for (uint64_t k = 0; k < kWrites; ++k) {
    const uint8_t* got = p.b_bytes() + kWriteArea + k * kWriteStride;
    for (uint64_t j = 0; j < kWriteStride; ++j)
      ASSERT_EQ(got[j], j < write_size(k) ? pattern(kSends + k, j) : 0) << "WRITE " << k << " byte " << j;
  }
  // RDMA READs of what the WRITEs left, through the same faults: a lost or duplicated READ
  // request or response is recovered (duplicate requests are executed again, IBA 9.7.5.1.2).
  uint64_t read_posted = 0, read_done = 0;
  while (read_done < kWrites && std::chrono::steady_clock::now() < until) {
    while (read_posted < kWrites && read_posted < read_done + kSlots) {
      sdp::SendWr wr = rdma(sdp::WrOpcode::RdmaRead, p.a_buf + (read_posted % kSlots) * kSlot, p.a_key,
                            static_cast<uint32_t>(write_size(read_posted)),
                            p.b_buf + kWriteArea + read_posted * kWriteStride, p.b_rkey);
      wr.wr_id = total + read_posted;
      va.post_send(wr);
      ++read_posted;
    }
    std::array<sdp::Wc, 16> wc;
    for (int i = 0, n = va.poll_cq(wc); i < n; ++i) {
      ASSERT_EQ(wc[i].status, WcStatus::Success) << "READ " << wc[i].wr_id - total << ": " << p.ca->error_reason();
      ASSERT_EQ(wc[i].wr_id, total + read_done);
      const uint8_t* got = p.a_bytes() + (read_done % kSlots) * kSlot;
      for (uint64_t j = 0; j < write_size(read_done); ++j)
        ASSERT_EQ(got[j], pattern(kSends + read_done, j)) << "READ " << read_done << " byte " << j;
      ++read_done;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  ASSERT_EQ(read_done, kWrites) << "READs completed";
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // late duplicates, if any, would land now
  std::array<sdp::Wc, 4> extra;
  EXPECT_EQ(vb.poll_cq(extra), 0) << "a message delivered twice";
  const model::FaultStats fa = p.ca->fault_stats(), fb = p.cb->fault_stats();
  std::printf("requester %s\nresponder %s\n", fa.summary().c_str(), fb.summary().c_str());
  EXPECT_GE(fa.packets, total);
  EXPECT_GT(fa.retransmitted, 0u);
  EXPECT_GT(fa.naks + fa.timeouts, 0u);
  EXPECT_GT(fb.packets, 0u);  // ACKs and NAKs
  for (const auto& [st, who] : {std::pair{fa, "requester"}, std::pair{fb, "responder"}}) {
    SCOPED_TRACE(who);
    expect_binomial(st.lost, st.packets, 0.05, "lost");
    expect_binomial(st.corrupted, st.packets, 0.02, "corrupted");
    expect_binomial(st.duplicated, st.packets, 0.02, "duplicated");
    expect_binomial(st.reordered, st.packets, 0.02, "reordered");
  }
  // Every corrupted frame was dropped by the other side's ICRC check, and nothing else was.
  EXPECT_EQ(emu::icrc_drops(vb), fa.corrupted);
  EXPECT_EQ(emu::icrc_drops(va), fb.corrupted);
}

TEST(EmuHcaFaults, APeerThatNeverAnswersEndsInRetryExceededAfterRetryCntPlusOneTransmissions) {
  Side s;
  s.faults = {.loss = 0.999, .seed = 3};  // a's frames: all lost (3 draws under 0.999 with this seed)
  s.retry.retry_cnt = 2;
  s.retry.timeout = 4;  // 4.096 us x 2^4 = 65.5 us
  Pair p({}, s, {});
  // One WR alone on the wire: only the local ACK timer can notice that nothing came back.
  sdp::SendWr first = rdma(sdp::WrOpcode::RdmaWrite, p.a_buf, p.a_key, 64, p.b_buf, p.b_rkey);
  const auto t0 = std::chrono::steady_clock::now();
  p.ca->verbs().post_send(first);
  const sdp::Wc wc = wait_wc(p.ca->verbs());
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(wc.wr_id, 42u);
  EXPECT_EQ(wc.status, WcStatus::RetryExcErr);
  EXPECT_GE(us, 3 * 65.5);  // three timer expiries
  const model::FaultStats st = p.ca->fault_stats();
  std::printf("%s; RETRY_EXC_ERR after %.0f us\n", st.summary().c_str(), us);
  // Sent once and retried twice: three transmissions, all lost; the third expiry gives up.
  EXPECT_EQ(st.packets, 3u);
  EXPECT_EQ(st.lost, 3u);
  EXPECT_EQ(st.timeouts, 2u);
  EXPECT_EQ(st.retransmitted, 2u);
  EXPECT_NE(p.ca->error_reason().find("transport retry counter exceeded: a timeout after 2 retries without an ACK (retry_cnt 2, "
                                         "local ACK timeout 65.5 us)"), std::string::npos)
      << p.ca->error_reason();
  // The QP is in ERROR: a WR posted now flushes.
  sdp::SendWr later = first;
  later.wr_id = 44;
  p.ca->verbs().post_send(later);
  const sdp::Wc lw = wait_wc(p.ca->verbs());
  EXPECT_EQ(lw.wr_id, 44u);
  EXPECT_EQ(lw.status, WcStatus::WrFlushErr);
  EXPECT_EQ(std::count(p.b_bytes(), p.b_bytes() + kBuf, 0), static_cast<long>(kBuf));  // nothing arrived
}

TEST(EmuHcaFaults, RnrRetryFromTheQpSettingsEndsInRnrRetryExceeded) {
  Side s;
  s.retry.rnr_retry = 1;  // the first try and one retry, both RNR NAKed
  Pair p({}, s, {});
  p.ca->verbs().post_send(rdma(sdp::WrOpcode::Send, p.a_buf, p.a_key, 64, 0, 0));
  EXPECT_EQ(wait_wc(p.ca->verbs()).status, WcStatus::RnrRetryExcErr);
  const model::FaultStats st = p.ca->fault_stats();
  EXPECT_EQ(st.rnr_naks, 2u);
  EXPECT_EQ(st.packets, 2u);
  EXPECT_EQ(st.retransmitted, 1u);
  EXPECT_NE(p.ca->error_reason().find("receiver not ready after 1 retries"), std::string::npos) << p.ca->error_reason();
}
