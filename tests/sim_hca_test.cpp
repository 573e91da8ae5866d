// The emulated HCA on SimGrid: RDMA WRITE / RDMA READ / SEND move the right bytes with the
// right keys, errors complete with the IBA status, the QP state machine refuses illegal
// transitions, and a WQE's completion time is the hand-computed sum of the model's terms.
// Each TEST runs in its own process (ctest), as SimGrid allows one engine per process.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "model/platform.h"
#include "sim/testbed.h"

using namespace hcasim;
using namespace hcasim::sim;
namespace s4u = simgrid::s4u;

namespace {

HostParams params() {
  auto p = model::Platform::load_file(std::string(HCASIM_REFERENCE_DIR) +
                                      "/../scenarios/platforms/connectx-ddr-pcie1x8.toml");
  return read_host_params(p);
}

/// Runs `body` as an actor on host A's core 1 and B's memory set up by `setup_b`.
struct Bed {
  HostParams p = params();
  TwoHostBed bed{p, p, 3, sdp::DataMode::Bytes};
  std::optional<double> cqe_at;  // when A's last CQE landed, ns

  template <class F>
  void run(F body) {
    bed.qp(0).set_handlers([this] { cqe_at = now_ns(); }, nullptr);
    s4u::Actor::create("test", bed.cpu_node(0), [this, body] {
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
    while (bed.qp(0).poll_cq(wc) == 0) s4u::this_actor::sleep_for(1e-7);
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
    EXPECT_EQ(t.bed.qp(0).state(), SimQp::State::Error);
    EXPECT_THROW(t.bed.qp(0).post_send(w), sdp::VerbsError);
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
    u.bed.qp(0).post_send(s);  // B posted no receive
    EXPECT_EQ(u.wait_one().status, sdp::WcStatus::RnrRetryExcErr);
  });
}

TEST(SimHca, QpStateMachineRefusesIllegalTransitions) {
  Bed t;
  t.run([&] {
    SimQp& qp = t.bed.qp(0);
    EXPECT_EQ(qp.state(), SimQp::State::Rts);
    EXPECT_THROW(qp.modify(SimQp::State::Rtr), sdp::VerbsError);  // RTS -> RTR is not a transition
    qp.modify(SimQp::State::Reset);
    sdp::RecvWr r;
    EXPECT_THROW(qp.post_recv(r), sdp::VerbsError);  // no receives in RESET
    EXPECT_THROW(qp.modify(SimQp::State::Rts), sdp::VerbsError);  // RESET -> RTS skips INIT, RTR
    qp.modify(SimQp::State::Init);
    EXPECT_NO_THROW(qp.post_recv(r));
  });
}
