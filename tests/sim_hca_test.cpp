// The emulated HCA on SimGrid: RDMA WRITE / RDMA READ / SEND move the right bytes with the
// right keys, errors complete with the IBA status, the QP state machine refuses illegal
// transitions, and a WQE's completion time is the hand-computed sum of the model's terms.
// Each TEST runs in its own process (ctest), as SimGrid allows one engine per process.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "model/fault.h"
#include "model/platform.h"
#include "sim/testbed.h"

using namespace hcasim;
using namespace hcasim::sim;

namespace {

HostParams params() {
  auto p = model::Platform::load_file(std::string(HCASIM_REFERENCE_DIR) +
                                      "/../scenarios/platforms/connectx-ddr-pcie1x8.toml");
  return read_host_params(p);
}

/// Runs `body` as a context on host A's core 1 and B's memory set up by `setup_b`.
struct Bed {
  HostParams p = params();
  TwoHostBed bed{p, p, 3, sdp::DataMode::Bytes};
  std::optional<double> cqe_at;  // when A's last CQE landed, ns

  template <class F>
  void run(F body) {
    bed.qp(0).set_handlers([this] { cqe_at = now_ns(); }, nullptr);
    bed.scheduler().spawn("test", [this, body] {
      bed.failure().guard("test", [&] {
        bed.host(0).bind_current(1);
        body();
      });
    });
    bed.run(10);
    ASSERT_FALSE(bed.failure().failed()) << bed.failure().message();
  }
  /// Polls A's CQ until one completion is there.
  sdp::Wc wait_one() {
    std::array<sdp::Wc, 1> wc;
    while (bed.qp(0).poll_cq(wc) == 0) sleep_for_ns(100);
    return wc[0];
  }
};

}  // namespace

TEST(SimHca, RdmaWriteThenReadMoveTheBytes) {
  Bed t;
  t.run([&] {
    auto& ma = t.bed.host(0).memory();
    auto& mb = t.bed.host(1).memory();
    const sdp::Addr src = ma.allocate(10000, sdp::DataMode::Bytes);
    const sdp::Addr back = ma.allocate(10000, sdp::DataMode::Bytes);
    const sdp::Addr dst = mb.allocate(10000, sdp::DataMode::Bytes);
    ma.write_stream(src, 10000, 1234);
    const uint32_t lkey = t.bed.qp(0).reg_mr(src, 10000, sdp::kLocalWrite);
    const uint32_t lkey2 = t.bed.qp(0).reg_mr(back, 10000, sdp::kLocalWrite);
    const uint32_t rkey = t.bed.qp(1).reg_mr(dst, 10000, sdp::kLocalWrite | sdp::kRemoteWrite | sdp::kRemoteRead);

    sdp::SendWr w;
    w.wr_id = 7;
    w.opcode = sdp::WrOpcode::RdmaWrite;
    w.sg[0] = {src, 10000, lkey};
    w.num_sge = 1;
    w.remote_addr = dst;
    w.rkey = rkey;
    t.bed.qp(0).post_send(w);
    sdp::Wc wc = t.wait_one();
    EXPECT_EQ(wc.status, sdp::WcStatus::Success);
    EXPECT_EQ(wc.opcode, sdp::WcOpcode::RdmaWrite);
    EXPECT_EQ(wc.wr_id, 7u);
    // The ACK leaves when the last packet has passed its checks; its data drains from the
    // responder's packet store later (model::receive_store_ns). connectx-ddr-pcie1x8, after the
    // stream's end: the data is in B's memory at 1825 ns (the receive pipeline: read 900, tx 300,
    // propagation 25, rx 300, posted write 300) + 1038 ns (the 2048 B first packet at DDR 4x's
    // 15.78 Gbit/s, the write ceiling being lower) = 2863 ns; A's CQE at 2150 ns.
    EXPECT_FALSE(mb.check_stream(dst, 10000, 1234));
    sleep_for_ns(2863 - 2150 + 1);
    EXPECT_TRUE(mb.check_stream(dst, 10000, 1234));

    sdp::SendWr r = w;
    r.wr_id = 8;
    r.opcode = sdp::WrOpcode::RdmaRead;
    r.sg[0] = {back, 10000, lkey2};
    t.bed.qp(0).post_send(r);
    wc = t.wait_one();
    EXPECT_EQ(wc.status, sdp::WcStatus::Success);
    EXPECT_EQ(wc.opcode, sdp::WcOpcode::RdmaRead);
    EXPECT_TRUE(ma.check_stream(back, 10000, 1234));
  });
}

// An RDMA READ posted right behind an RDMA WRITE of the same bytes, without waiting: the READ
// request reaches the responder while the WRITE's last packet is still in its packet store
// (model::receive_store_ns), and the responder's DMA read does not pass its writes.
TEST(SimHca, AReadPostedRightBehindAWriteReadsWhatItWrote) {
  Bed t;
  t.run([&] {
    auto& ma = t.bed.host(0).memory();
    auto& mb = t.bed.host(1).memory();
    const sdp::Addr src = ma.allocate(10000, sdp::DataMode::Bytes);
    const sdp::Addr back = ma.allocate(10000, sdp::DataMode::Bytes);
    const sdp::Addr dst = mb.allocate(10000, sdp::DataMode::Bytes);
    ma.write_stream(src, 10000, 777);
    sdp::SendWr w;
    w.opcode = sdp::WrOpcode::RdmaWrite;
    w.sg[0] = {src, 10000, t.bed.qp(0).reg_mr(src, 10000, sdp::kLocalWrite)};
    w.num_sge = 1;
    w.remote_addr = dst;
    w.rkey = t.bed.qp(1).reg_mr(dst, 10000, sdp::kRemoteWrite | sdp::kRemoteRead);
    sdp::SendWr r = w;
    r.opcode = sdp::WrOpcode::RdmaRead;
    r.sg[0] = {back, 10000, t.bed.qp(0).reg_mr(back, 10000, sdp::kLocalWrite)};
    t.bed.qp(0).post_send(w);
    t.bed.qp(0).post_send(r);
    EXPECT_EQ(t.wait_one().status, sdp::WcStatus::Success);
    EXPECT_EQ(t.wait_one().status, sdp::WcStatus::Success);
    EXPECT_TRUE(ma.check_stream(back, 10000, 777));
  });
}

TEST(SimHca, RdmaWriteCompletionTimeIsTheModelsSum) {
  Bed t;
  double posted = 0;
  t.run([&] {
    auto& ma = t.bed.host(0).memory();
    auto& mb = t.bed.host(1).memory();
    const sdp::Addr src = ma.allocate(4096, sdp::DataMode::Bytes);
    const sdp::Addr dst = mb.allocate(4096, sdp::DataMode::Bytes);
    sdp::SendWr w;
    w.opcode = sdp::WrOpcode::RdmaWrite;
    w.sg[0] = {src, 4096, t.bed.qp(0).reg_mr(src, 4096, sdp::kLocalWrite)};
    w.num_sge = 1;
    w.remote_addr = dst;
    w.rkey = t.bed.qp(1).reg_mr(dst, 4096, sdp::kRemoteWrite);
    posted = now_ns();
    t.bed.qp(0).post_send(w);
    t.wait_one();
  });
  ASSERT_TRUE(t.cqe_at.has_value());
  // By hand, connectx-ddr-pcie1x8: the doorbell is an uncached 4 B store (the core stalls
  // cpu.uc_store = 200 ns until it leaves), a 28 B MWr (8 framing + 16 header + 4) on the
  // 16 Gbit/s link with SKP efficiency 1176/1180: 28 x 8 / 15.9458 = 14.047 ns, then 250 ns
  // MMIO latency; the idle queue fetches the 64 B WQE: 900 ns round trip + one 84 B CplD
  // (84 x 8 / 15.9458 = 42.144 ns). 200 + 14.047 + 250 + 900 + 42.144 = 1406.19 ns. The 4096 B then cross the
  // bottleneck, the PCIe gen1 x8 DMA-read ceiling 16 x 512/688 x 1176/1180 = 11.8671 Gbit/s:
  // 4096 x 8 / 11.8671 = 2761.3 ns. The CQE follows the ACK: read round trip 900 + tx 300 +
  // 2 x 25 propagation + responder rx 300 + requester rx 300 + CQE posted write 300 = 2150 ns.
  // (The ACK does not wait for the responder's packet store, model::receive_store_ns.)
  const double link = 16.0 * 1176 / 1180;  // Gbit/s after 8b/10b and SKP
  const double doorbell_and_fetch = 200 + 28 * 8 / link + 250 + 900 + 84 * 8 / link;
  const double expected = doorbell_and_fetch + 4096 * 8 / (16.0 * 512 / 688 * 1176 / 1180) + 2150;
  EXPECT_NEAR(*t.cqe_at - posted, expected, 1.0);
}

TEST(SimHca, BadRkeyCompletesWithRemoteAccessErrorAndErrorsTheQp) {
  Bed t;
  t.run([&] {
    auto& ma = t.bed.host(0).memory();
    auto& mb = t.bed.host(1).memory();
    const sdp::Addr src = ma.allocate(64, sdp::DataMode::Bytes);
    const sdp::Addr dst = mb.allocate(64, sdp::DataMode::Bytes);
    const uint32_t read_only = t.bed.qp(1).reg_mr(dst, 64, sdp::kRemoteRead);
    sdp::SendWr w;
    w.opcode = sdp::WrOpcode::RdmaWrite;
    w.sg[0] = {src, 64, t.bed.qp(0).reg_mr(src, 64, sdp::kLocalWrite)};
    w.num_sge = 1;
    w.remote_addr = dst;
    w.rkey = read_only;  // no remote write access
    t.bed.qp(0).post_send(w);
    EXPECT_EQ(t.wait_one().status, sdp::WcStatus::RemAccessErr);
    EXPECT_EQ(t.bed.qp(0).state(), Qp::State::Error);
    // A WR posted in ERROR completes at once with WR_FLUSH_ERR (hca::check_post_send, IBA 10.3.1).
    w.wr_id = 8;
    t.bed.qp(0).post_send(w);
    const sdp::Wc flushed = t.wait_one();
    EXPECT_EQ(flushed.wr_id, 8u);
    EXPECT_EQ(flushed.status, sdp::WcStatus::WrFlushErr);
    EXPECT_EQ(flushed.opcode, sdp::WcOpcode::RdmaWrite);
  });
}

TEST(SimHca, SgeOutsideItsMrIsLocalProtectionError) {
  Bed t;
  t.run([&] {
    auto& ma = t.bed.host(0).memory();
    const sdp::Addr src = ma.allocate(128, sdp::DataMode::Bytes);
    const uint32_t key = t.bed.qp(0).reg_mr(src, 128, sdp::kLocalWrite);
    sdp::SendWr s;
    s.opcode = sdp::WrOpcode::Send;
    s.sg[0] = {src, 129, key};  // one byte past the MR
    s.num_sge = 1;
    t.bed.qp(0).post_send(s);
    EXPECT_EQ(t.wait_one().status, sdp::WcStatus::LocProtErr);
  });
}

TEST(SimHca, SendWithoutPostedReceiveIsRnrRetryExceeded) {
  Bed u;
  u.run([&] {
    auto& ma = u.bed.host(0).memory();
    const sdp::Addr src = ma.allocate(128, sdp::DataMode::Bytes);
    sdp::SendWr s;
    s.opcode = sdp::WrOpcode::Send;
    s.sg[0] = {src, 128, u.bed.qp(0).reg_mr(src, 128, sdp::kLocalWrite)};
    s.num_sge = 1;
    u.bed.qp(0).set_rnr(0, 0);  // rnr_retry 0: the first RNR NAK ends it
    u.bed.qp(0).post_send(s);   // B posted no receive
    EXPECT_EQ(u.wait_one().status, sdp::WcStatus::RnrRetryExcErr);
  });
}

TEST(SimHca, QpStateMachineRefusesIllegalTransitions) {
  Bed t;
  t.run([&] {
    Qp& qp = t.bed.qp(0);
    EXPECT_EQ(qp.state(), Qp::State::Rts);
    EXPECT_THROW(qp.modify(Qp::State::Rtr), sdp::VerbsError);  // RTS -> RTR is not a transition
    qp.modify(Qp::State::Reset);
    sdp::RecvWr r;
    EXPECT_THROW(qp.post_recv(r), sdp::VerbsError);  // no receives in RESET
    EXPECT_THROW(qp.modify(Qp::State::Rts), sdp::VerbsError);  // RESET -> RTS skips INIT, RTR
    qp.modify(Qp::State::Init);
    EXPECT_NO_THROW(qp.post_recv(r));
  });
}

// ---- Faults on the wire (model/fault.h) ------------------------------------------------------

namespace {

/// Posts `r` on B's QP from a context of B's (a verbs call needs its host's CPU context).
void post_recv_b(Bed& t, const sdp::RecvWr& r) {
  t.bed.scheduler().spawn("b-recv", [&t, r] {
    t.bed.host(1).bind_current(1);
    t.bed.qp(1).post_recv(r);
  });
  sleep_for_ns(1);
}

/// A signaled SEND of `len` bytes from A's buffer into a receive B posts first; returns the
/// send CQE and the time from the post to A's CQE, ns.
std::pair<sdp::Wc, double> send_once(Bed& t, sdp::Addr src, uint32_t lkey, sdp::Addr dst, uint32_t rkey,
                                     uint32_t len, uint64_t id) {
  sdp::RecvWr r;
  r.wr_id = id;
  r.sg[0] = {dst, len, rkey};
  r.num_sge = 1;
  post_recv_b(t, r);
  sdp::SendWr s;
  s.wr_id = id;
  s.opcode = sdp::WrOpcode::Send;
  s.sg[0] = {src, len, lkey};
  s.num_sge = 1;
  const double posted = now_ns();
  t.bed.qp(0).post_send(s);
  const sdp::Wc wc = t.wait_one();
  return {wc, *t.cqe_at - posted};
}

bool dropped(model::Fate f) { return f == model::Fate::Lose || f == model::Fate::Corrupt; }

}  // namespace

TEST(SimHcaFaults, LostPacketOfA64KSendCostsTheNakAndTheGoBackNRetransmission) {
  // Find a seed whose fates (drawn here as the HCA draws them) lose exactly one packet k of
  // the 32 of a 64 KiB SEND (MTU 2048), k < 31 so that later packets show the gap, deliver
  // the 32 - k retransmitted packets and the ACK.
  constexpr uint32_t kLen = 65536, kMtu = 2048, kN = kLen / kMtu;
  Bed t;
  const uint32_t qpn_a = t.bed.qp(0).qp_num(), qpn_b = t.bed.qp(1).qp_num();
  model::FaultConfig cfg;
  cfg.loss = 0.03;
  uint32_t k = kN;
  for (cfg.seed = 1; cfg.seed < 10000; ++cfg.seed) {
    model::FaultDraw data(cfg, t.bed.hca(0).fault_stream(qpn_a, false));
    model::FaultDraw ack(cfg, t.bed.hca(1).fault_stream(qpn_b, true));
    std::vector<model::Fate> f;
    for (uint32_t i = 0; i < kN; ++i) f.push_back(data.next());
    const auto lost = std::count_if(f.begin(), f.end(), dropped);
    if (lost != 1 || dropped(f.back())) continue;
    const uint32_t at = static_cast<uint32_t>(std::find_if(f.begin(), f.end(), dropped) - f.begin());
    bool clean = true;
    for (uint32_t i = at; i < kN; ++i) clean = clean && data.next() == model::Fate::Deliver;
    if (!clean || ack.next() != model::Fate::Deliver) continue;
    k = at;
    break;
  }
  ASSERT_LT(k, kN - 1) << "no seed below 10000 loses exactly one packet";
  double clean_ns = 0, faulty_ns = 0;
  t.run([&] {
    auto& ma = t.bed.host(0).memory();
    auto& mb = t.bed.host(1).memory();
    const sdp::Addr src = ma.allocate(kLen, sdp::DataMode::Bytes);
    const sdp::Addr dst = mb.allocate(2 * kLen, sdp::DataMode::Bytes);
    ma.write_stream(src, kLen, 77);
    const uint32_t lkey = t.bed.qp(0).reg_mr(src, kLen, sdp::kLocalWrite);
    const uint32_t rkey = t.bed.qp(1).reg_mr(dst, 2 * kLen, sdp::kLocalWrite);
    auto [wc1, d1] = send_once(t, src, lkey, dst, rkey, kLen, 1);
    EXPECT_EQ(wc1.status, sdp::WcStatus::Success);
    clean_ns = d1;
    t.bed.set_faults(cfg, model::RcRetry{});  // the same SEND again, now on a lossy wire
    auto [wc2, d2] = send_once(t, src, lkey, dst + kLen, rkey, kLen, 2);
    EXPECT_EQ(wc2.status, sdp::WcStatus::Success);
    faulty_ns = d2;
    sleep_for_ns(100000);  // the receive CQE
    EXPECT_TRUE(mb.check_stream(dst + kLen, kLen, 77));  // the data arrived whole, once
  });
  const model::FaultStats& a = t.bed.hca(0).fault_stats();
  const model::FaultStats& b = t.bed.hca(1).fault_stats();
  EXPECT_EQ(a.packets, kN + (kN - k));  // 32, then go-back-N from k
  EXPECT_EQ(a.lost + a.corrupted, 1u);
  EXPECT_EQ(a.retransmitted, kN - k);
  EXPECT_EQ(a.naks, 1u);
  EXPECT_EQ(a.timeouts, 0u);
  EXPECT_EQ(b.packets, 2u);  // the NAK and the ACK
  // By hand (connectx-ddr-pcie1x8): the NAK's return trip is propagation 25 + responder rx
  // 300 + responder tx 300 + propagation 25 + requester rx 300 = 950 ns; then packets k..31,
  // (32 - k) x 2048 B, cross the bottleneck, the PCIe gen1 x8 DMA-read ceiling
  // 16 x 512/688 x 1176/1180 Gbit/s, once more.
  const double bottleneck_gbps = 16.0 * 512 / 688 * 1176 / 1180;
  const double expected = 950 + (kN - k) * kMtu * 8 / bottleneck_gbps;
  EXPECT_NEAR(faulty_ns - clean_ns, expected, 1.0) << "k = " << k << ", seed " << cfg.seed;
}

TEST(SimHcaFaults, RetriesExhaustedCompleteWithRetryExcErrAndFlushTheRest) {
  Bed t;
  model::FaultConfig cfg;
  cfg.loss = 0.999;
  model::RcRetry retry;
  retry.retry_cnt = 2;
  retry.timeout = 1;  // 8.192 us
  t.bed.set_faults(cfg, retry);
  t.run([&] {
    auto& ma = t.bed.host(0).memory();
    auto& mb = t.bed.host(1).memory();
    const sdp::Addr src = ma.allocate(4096, sdp::DataMode::Bytes);
    const sdp::Addr dst = mb.allocate(8192, sdp::DataMode::Bytes);
    const uint32_t lkey = t.bed.qp(0).reg_mr(src, 4096, sdp::kLocalWrite);
    const uint32_t rkey = t.bed.qp(1).reg_mr(dst, 8192, sdp::kLocalWrite);
    for (uint64_t id = 1; id <= 2; ++id) {
      sdp::RecvWr r;
      r.wr_id = id;
      r.sg[0] = {dst + (id - 1) * 4096, 4096, rkey};
      r.num_sge = 1;
      post_recv_b(t, r);
    }
    // Every packet lost, so the responder never answers: each retry is the ACK timer's
    // (8.192 us). WR 1 goes at 0, again at 8.2 and 16.4 us; the third expiry, at 24.6 us,
    // exceeds retry_cnt = 2. WR 2, posted at 20 us, goes once and is flushed.
    sdp::SendWr s;
    s.wr_id = 1;
    s.opcode = sdp::WrOpcode::Send;
    s.sg[0] = {src, 4096, lkey};
    s.num_sge = 1;
    const double posted = now_ns();
    t.bed.qp(0).post_send(s);
    sdp::SendWr s2 = s;
    s2.wr_id = 2;
    sleep_for_ns(20000);
    t.bed.qp(0).post_send(s2);
    const sdp::Wc first = t.wait_one();
    EXPECT_EQ(first.wr_id, 1u);
    EXPECT_EQ(first.status, sdp::WcStatus::RetryExcErr);
    EXPECT_GT(now_ns() - posted, 3 * 8192.0);
    EXPECT_EQ(t.bed.qp(0).state(), Qp::State::Error);
    const sdp::Wc second = t.wait_one();
    EXPECT_EQ(second.wr_id, 2u);
    EXPECT_EQ(second.status, sdp::WcStatus::WrFlushErr);
    EXPECT_EQ(second.opcode, sdp::WcOpcode::Send);  // the flushed WR's own opcode (hca/qp.h)
    s.num_sge = 9;  // a post that is refused even in ERROR
    EXPECT_THROW(t.bed.qp(0).post_send(s), sdp::VerbsError);
  });
  const model::FaultStats& a = t.bed.hca(0).fault_stats();
  EXPECT_EQ(a.timeouts, 2u);  // the third expiry exceeds retry_cnt = 2
  EXPECT_EQ(a.naks, 0u);
  EXPECT_EQ(a.retransmitted, 2u * 2);  // two go-back-N rounds of WR 1's packets (4096 B = 2 x 2048)
  EXPECT_EQ(a.packets, 2u * 3 + 2);    // WR 1 three times, WR 2 once
}

TEST(SimHcaFaults, RnrRetryOneWithoutAReceiveIsRnrRetryExceededAfterOneRnrNak) {
  Bed t;
  model::RcRetry retry;
  retry.rnr_retry = 1;
  t.bed.set_faults(model::FaultConfig{}, retry);
  double took = 0;
  t.run([&] {
    auto& ma = t.bed.host(0).memory();
    const sdp::Addr src = ma.allocate(128, sdp::DataMode::Bytes);
    sdp::SendWr s;
    s.opcode = sdp::WrOpcode::Send;
    s.sg[0] = {src, 128, t.bed.qp(0).reg_mr(src, 128, sdp::kLocalWrite)};
    s.num_sge = 1;
    const double posted = now_ns();
    t.bed.qp(0).post_send(s);  // B posted no receive
    EXPECT_EQ(t.wait_one().status, sdp::WcStatus::RnrRetryExcErr);
    took = now_ns() - posted;
    EXPECT_EQ(t.bed.qp(0).state(), Qp::State::Error);
  });
  EXPECT_EQ(t.bed.hca(0).fault_stats().rnr_naks, 2u);  // the one retried and the one that ends it
  EXPECT_GT(took, 640e3);  // one wait of B's min_rnr_timer (0.64 ms), then the second RNR NAK
  EXPECT_LT(took, 2 * 640e3);
}

TEST(SimHcaFaults, RdmaWriteAndReadOverALossyWireMoveTheRightBytes) {
  Bed t;
  model::FaultConfig cfg;
  cfg.loss = 0.1;
  cfg.corrupt = 0.05;
  model::RcRetry retry;
  retry.timeout = 4;  // 65.5 us: the test's CQ polling loop spins through every timeout
  t.bed.set_faults(cfg, retry);
  t.run([&] {
    auto& ma = t.bed.host(0).memory();
    auto& mb = t.bed.host(1).memory();
    const sdp::Addr src = ma.allocate(10000, sdp::DataMode::Bytes);
    const sdp::Addr back = ma.allocate(10000, sdp::DataMode::Bytes);
    const sdp::Addr dst = mb.allocate(10000, sdp::DataMode::Bytes);
    const uint32_t lkey = t.bed.qp(0).reg_mr(src, 10000, sdp::kLocalWrite);
    const uint32_t lkey2 = t.bed.qp(0).reg_mr(back, 10000, sdp::kLocalWrite);
    const uint32_t rkey = t.bed.qp(1).reg_mr(dst, 10000, sdp::kLocalWrite | sdp::kRemoteWrite | sdp::kRemoteRead);
    for (uint64_t round = 0; round < 20; ++round) {
      ma.write_stream(src, 10000, round * 10000);
      sdp::SendWr w;
      w.wr_id = round;
      w.opcode = sdp::WrOpcode::RdmaWrite;
      w.sg[0] = {src, 10000, lkey};
      w.num_sge = 1;
      w.remote_addr = dst;
      w.rkey = rkey;
      t.bed.qp(0).post_send(w);
      ASSERT_EQ(t.wait_one().status, sdp::WcStatus::Success);
      // The READ right behind reads what the WRITE put there: the responder's DMA read does not
      // pass its writes, still in its packet store when the WRITE's ACK came back.
      sdp::SendWr r = w;
      r.opcode = sdp::WrOpcode::RdmaRead;
      r.sg[0] = {back, 10000, lkey2};
      t.bed.qp(0).post_send(r);
      ASSERT_EQ(t.wait_one().status, sdp::WcStatus::Success);
      EXPECT_TRUE(ma.check_stream(back, 10000, round * 10000));
      EXPECT_TRUE(mb.check_stream(dst, 10000, round * 10000));
    }
  });
  const model::FaultStats& a = t.bed.hca(0).fault_stats();
  const model::FaultStats& b = t.bed.hca(1).fault_stats();
  // 20 WRITEs of 5 packets and 20 READ requests from A; 20 ACKs and 20 x 5 READ response
  // packets from B, at least; about 15 % of them dropped and sent again.
  EXPECT_GE(a.packets, 20u * 6);
  EXPECT_GE(b.packets, 20u * 6);
  EXPECT_GT(a.lost + a.corrupted, 0u);
  EXPECT_GT(b.lost + b.corrupted, 0u);
  EXPECT_GT(a.retransmitted, 0u);
  EXPECT_GT(b.retransmitted, 0u);  // READ responses resent by the responder
}

TEST(SimHca, UdDatagramLandsAfterItsGrhRoomAndOneWithoutAReceiveIsDropped) {
  // A UD QP pair of the bed (IPoIB's transport in datagram mode). IBA 11.4.1.2: a UD receive
  // buffer starts with 40 B of room for the GRH, and the CQE's byte_len counts them: a 100 B
  // datagram completes with byte_len 140 and its bytes at offset 40. IBA 9.8.3: a datagram that
  // finds no receive WQE is dropped (counted, no CQE), and the send completes anyway
  // (unacknowledged); one above the port's MTU (2048 B on connectx-ddr-pcie1x8) completes with
  // LOC_LEN_ERR.
  HostParams p = params();
  TwoHostBed bed{p, p, 3, sdp::DataMode::Bytes, /*first_pair=*/false};
  auto [a, b] = bed.add_qp_pair({hca::QpType::Ud, 4, 4, 8, 0x0b1b});
  bed.scheduler().spawn("test", [&, a = a, b = b] {
    bed.failure().guard("test", [&] {
      bed.host(0).bind_current(1);
      bed.host(1).bind_current(1);
      auto& ma = bed.host(0).memory();
      auto& mb = bed.host(1).memory();
      const sdp::Addr src = ma.allocate(4096, sdp::DataMode::Bytes);
      const sdp::Addr dst = mb.allocate(4096, sdp::DataMode::Bytes);
      ma.write_stream(src, 4096, 77);
      const uint32_t lkey = a->dma_mr();
      sdp::RecvWr r;
      r.wr_id = 5;
      r.sg[0] = {dst, 2048 + 40, b->dma_mr()};
      r.num_sge = 1;
      b->post_recv(r);
      sdp::SendWr s;
      s.wr_id = 9;
      s.opcode = sdp::WrOpcode::Send;
      s.sg[0] = {src, 100, lkey};
      s.num_sge = 1;
      auto wait = [](Qp& q) {
        std::array<sdp::Wc, 1> wc;
        while (q.poll_cq(wc) == 0) sleep_for_ns(100);
        return wc[0];
      };
      a->post_send(s);
      sdp::Wc w = wait(*a);
      EXPECT_EQ(w.status, sdp::WcStatus::Success);
      EXPECT_EQ(w.opcode, sdp::WcOpcode::Send);
      EXPECT_EQ(w.wr_id, 9u);
      w = wait(*b);
      EXPECT_EQ(w.status, sdp::WcStatus::Success);
      EXPECT_EQ(w.wr_id, 5u);
      EXPECT_EQ(w.byte_len, 140u);
      EXPECT_TRUE(mb.check_stream(dst + 40, 100, 77));

      a->post_send(s);  // B has no receive posted now
      EXPECT_EQ(wait(*a).status, sdp::WcStatus::Success);
      sleep_for_ns(20000);
      EXPECT_EQ(b->datagrams_dropped(), 1u);
      std::array<sdp::Wc, 1> none;
      EXPECT_EQ(b->poll_cq(none), 0);

      s.sg[0].length = 2049;
      a->post_send(s);
      EXPECT_EQ(wait(*a).status, sdp::WcStatus::LocLenErr);
    });
  });
  bed.run(10);
  ASSERT_FALSE(bed.failure().failed()) << bed.failure().message();
}
