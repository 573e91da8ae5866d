// CPU topology and coherence costs, copy-source cache residency and completion-event
// moderation (model/topology.h, model/cache.h, model/interrupt.h), against hand calculations.
#include <gtest/gtest.h>

#include "model/cache.h"
#include "model/cpu.h"
#include "model/error.h"
#include "model/interrupt.h"
#include "model/platform.h"
#include "model/topology.h"

using namespace hcasim;
using namespace hcasim::model;

namespace {

/// The seed 002 machine as infinihost3-pcie1x8 assumes it: 2 packages x 2 cores, one L2 per
/// package; 20 ns within the L2, 250 ns across packages.
CpuTopology woodcrest() {
  CpuTopology t;
  t.sockets = 2;
  t.cores_per_socket = 2;
  t.cores_per_cache = 2;
  t.line_shared_cache_ns = 20;
  t.line_same_socket_ns = 20;
  t.line_cross_socket_ns = 250;
  return t;
}

/// 2 packages x 4 cores, two L2s per package (Xeon 5300): every distance is different.
CpuTopology clovertown() {
  CpuTopology t;
  t.sockets = 2;
  t.cores_per_socket = 4;
  t.cores_per_cache = 2;
  t.line_shared_cache_ns = 20;
  t.line_same_socket_ns = 150;
  t.line_cross_socket_ns = 300;
  return t;
}

const char* kTopologyToml = R"(
name = "t"
[host]
cpus = { value = 8, unit = "", source = "test" }
[topology]
sockets = { value = 2, unit = "", source = "test" }
cores_per_socket = { value = 4, unit = "", source = "test" }
cores_per_cache = { value = 2, unit = "", source = "test" }
line_shared_cache = { value = 20, unit = "ns", source = "test" }
line_same_socket = { value = 150, unit = "ns", source = "test" }
line_cross_socket = { value = 300, unit = "ns", source = "test" }
[irq]
affinity = { value = "1,3", unit = "", source = "test" }
[cpu]
intx_ack = { value = 1000, unit = "ns", source = "test" }
[hca]
msi_x = { value = true, unit = "", source = "test" }
cq_moderation_count = { value = 16, unit = "", source = "test" }
cq_moderation_period = { value = 10, unit = "us", source = "test" }
)";

}  // namespace

TEST(Topology, DistanceFollowsLinuxNumbering) {
  const CpuTopology t = clovertown();
  // CPU c: package c / 4, L2 c / 2.
  EXPECT_EQ(t.distance(3, 3), CoreDistance::SameCore);
  EXPECT_EQ(t.distance(0, 1), CoreDistance::SharedCache);
  EXPECT_EQ(t.distance(1, 2), CoreDistance::SameSocket);
  EXPECT_EQ(t.distance(3, 4), CoreDistance::CrossSocket);
  EXPECT_EQ(t.distance(7, 0), CoreDistance::CrossSocket);
  EXPECT_DOUBLE_EQ(t.line_transfer_ns(2, 2), 0);
  EXPECT_DOUBLE_EQ(t.line_transfer_ns(6, 7), 20);
  EXPECT_DOUBLE_EQ(t.line_transfer_ns(4, 6), 150);
  EXPECT_DOUBLE_EQ(t.line_transfer_ns(1, 5), 300);
}

TEST(Topology, SeedTwoBindingsSeenFromTheInterruptCpu) {
  // Seed 002: interrupts on CPU 1. netperf -T 0 shares CPU 1's L2; -T 2 is the other package.
  const CpuTopology t = woodcrest();
  EXPECT_EQ(t.distance(1, 0), CoreDistance::SharedCache);
  EXPECT_EQ(t.distance(1, 2), CoreDistance::CrossSocket);
  // An skb of a 32 KB SDP buffer: 5 lines of sk_buff + shared info and 8 struct page lines,
  // taken by the interrupt CPU from the sender's and back: 2 x 13 lines.
  // -T 0,0: 26 x 20 = 520 ns per buffer; -T 2,2: 26 x 250 = 6500 ns.
  EXPECT_DOUBLE_EQ(2 * 13 * t.line_transfer_ns(0, 1), 520);
  EXPECT_DOUBLE_EQ(2 * 13 * t.line_transfer_ns(2, 1), 6500);
}

TEST(Topology, FromPlatformChecksTheCounts) {
  Platform p = Platform::parse(kTopologyToml, "t.toml");
  const CpuTopology t = CpuTopology::from_platform(p, 8);
  EXPECT_EQ(t.cpus(), 8);
  EXPECT_DOUBLE_EQ(t.line_transfer_ns(0, 7), 300);
  // host.cpus must be sockets x cores_per_socket.
  try {
    CpuTopology::from_platform(p, 4);
    FAIL() << "4 CPUs accepted for 2 x 4 cores";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("topology.cores_per_socket"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("host.cpus = 4"), std::string::npos) << e.what();
  }
  // A host.cpus changed with --set is the key named, not the file's cores_per_socket line.
  Platform q = Platform::parse(kTopologyToml, "t.toml");
  q.set("host.cpus=4");
  try {
    CpuTopology::from_platform(q, 4);
    FAIL() << "--set host.cpus=4 accepted for 2 x 4 cores";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--set host.cpus: ", 0), 0u) << e.what();
  }
  p.set("topology.cores_per_cache=3");
  EXPECT_THROW(CpuTopology::from_platform(p, 8), InputError);  // 3 does not divide 4
}

TEST(CpuList, ParsesLinuxListsAndRejectsTheRest) {
  EXPECT_EQ(parse_cpu_list("1", 4), (std::vector<int>{1}));
  EXPECT_EQ(parse_cpu_list("0-3", 4), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(parse_cpu_list("3,0,2-3", 4), (std::vector<int>{0, 2, 3}));
  for (const char* bad : {"", "4", "1-", "a", "2-1", "1,,2", "-1", " 1"})
    EXPECT_THROW(parse_cpu_list(bad, 4), InputError) << "'" << bad << "'";
  try {
    parse_cpu_list("0,7", 4);
    ADD_FAILURE() << "CPU 7 accepted on a 4-CPU host";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "CPU list '0,7': CPU 7 does not exist (the host has 4 CPUs)");
  }
  try {
    parse_cpu_list("-1", 4);
    ADD_FAILURE() << "-1 accepted";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "CPU list '-1': '-1' is not a CPU number or range");
  }
}

TEST(IrqConfig, FromPlatform) {
  Platform p = Platform::parse(kTopologyToml, "t.toml");
  const IrqConfig c = IrqConfig::from_platform(p, 8);
  EXPECT_EQ(c.affinity, (std::vector<int>{1, 3}));
  EXPECT_EQ(c.target_cpu(), 1);  // the first CPU of the mask takes the interrupt
  EXPECT_EQ(c.moderation_count, 16u);
  EXPECT_DOUBLE_EQ(c.moderation_period_ns, 10'000);
  // MSI-X: the handler costs cpu.interrupt; INTx adds the acknowledge (1000 ns).
  EXPECT_DOUBLE_EQ(c.handler_ns(3000), 3000);
  p.set("hca.msi_x=off");
  EXPECT_DOUBLE_EQ(IrqConfig::from_platform(p, 8).handler_ns(3000), 4000);
  // mlx4's cq_period is a 16-bit count of us.
  p.set("hca.cq_moderation_period=65535");
  EXPECT_DOUBLE_EQ(IrqConfig::from_platform(p, 8).moderation_period_ns, 65'535'000);
  p.set("hca.cq_moderation_period=65536");
  EXPECT_THROW(IrqConfig::from_platform(p, 8), InputError);
  p.set("hca.cq_moderation_period=10");
  p.set("irq.affinity=2-9");
  try {
    IrqConfig::from_platform(p, 8);
    FAIL() << "CPUs 8-9 accepted on an 8-CPU host";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("irq.affinity"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("CPU 9 does not exist"), std::string::npos) << e.what();
  }
}

TEST(EventModerator, WithoutModerationEveryArmedCqeFires) {
  for (auto [count, period] : {std::pair<uint32_t, double>{0, 0}, {1, 5000}, {16, 0}}) {
    EventModerator m(count, period);
    EXPECT_EQ(m.on_cqe(100), EventModerator::Decision::Fire);
    EXPECT_EQ(m.on_cqe(200), EventModerator::Decision::Fire);
  }
}

TEST(EventModerator, CountClosesTheWindowBeforeThePeriod) {
  // count 3, period 10 us: CQEs at 1, 2, 3 us -> the third fires; the deadline (11 us) of that
  // window then finds it closed.
  EventModerator m(3, 10'000);
  EXPECT_EQ(m.on_cqe(1'000), EventModerator::Decision::Wait);
  EXPECT_DOUBLE_EQ(m.deadline_ns(), 11'000);
  const uint64_t w = m.window();
  EXPECT_EQ(m.on_cqe(2'000), EventModerator::Decision::Pending);
  EXPECT_EQ(m.on_cqe(3'000), EventModerator::Decision::Fire);
  EXPECT_FALSE(m.on_deadline(w));
}

TEST(EventModerator, PeriodFiresAFewCqes) {
  // count 16, period 10 us: 2 CQEs at 1 and 4 us; the deadline at 11 us fires. The next CQE
  // (20 us) opens a new window with deadline 30 us; the old window's timer is stale.
  EventModerator m(16, 10'000);
  EXPECT_EQ(m.on_cqe(1'000), EventModerator::Decision::Wait);
  const uint64_t w1 = m.window();
  EXPECT_EQ(m.on_cqe(4'000), EventModerator::Decision::Pending);
  EXPECT_TRUE(m.on_deadline(w1));
  EXPECT_FALSE(m.on_deadline(w1));
  EXPECT_EQ(m.on_cqe(20'000), EventModerator::Decision::Wait);
  EXPECT_DOUBLE_EQ(m.deadline_ns(), 30'000);
  EXPECT_FALSE(m.on_deadline(w1));
  EXPECT_TRUE(m.on_deadline(m.window()));
}

TEST(ReuseCache, RingSmallerThanTheCacheStaysResident) {
  // C = 256 KB. netperf's ring of 2 x 64 KB sent in 32 KB pieces: each piece is re-read after
  // 128 KB - 32 KB = 96 KB of other data: resident. First pass: cold.
  ReuseCache c(256 * 1024.0);
  const uint64_t k32 = 32 * 1024;
  for (uint64_t a = 0; a < 4; ++a) EXPECT_DOUBLE_EQ(c.read(a * k32, k32), 0.0);
  for (uint64_t a = 0; a < 4; ++a) EXPECT_DOUBLE_EQ(c.read(a * k32, k32), 1.0);
}

TEST(ReuseCache, LargerRingHitsCapacityOverDistance) {
  // Ring of 2 x 1 MB in 32 KB pieces: reuse distance 2 MB - 32 KB = 2,064,384 B;
  // resident fraction = 262,144 / 2,064,384 = 0.12698.
  ReuseCache c(262'144);
  const uint64_t k32 = 32 * 1024, pieces = 64;
  for (uint64_t a = 0; a < pieces; ++a) c.read(a * k32, k32);
  EXPECT_NEAR(c.read(0, k32), 262'144.0 / 2'064'384.0, 1e-12);
}

TEST(CopyCost, MixesHotAndColdRates) {
  // 32 KB, hot rate 2 B/ns, cold 1 B/ns, a quarter resident: 8192/2 + 24576/1 = 28672 ns.
  CpuCosts k;
  k.copy_tx_hot_bytes_per_ns = 2;
  k.copy_tx_bytes_per_ns = 1;
  EXPECT_DOUBLE_EQ(k.copy_tx_ns(32768, 0.25), 28672);
  EXPECT_DOUBLE_EQ(k.copy_tx_ns(32768), 32768);
}
