// MMIO stores and TLPs, mlx4 WQE sizes, libmlx4's BlueFlame rule and the post path: every
// expected number is worked by hand in the comment next to it (sources in model/mmio.h,
// model/mlx4.h, model/hca.h).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "model/error.h"
#include "model/hca.h"
#include "model/mlx4.h"
#include "model/mmio.h"
#include "model/noise.h"
#include "model/platform.h"

using namespace hcasim::model;

namespace {

mlx4::WqeShape inline_write(uint32_t bytes) {
  mlx4::WqeShape w;
  w.opcode = mlx4::Opcode::RdmaWrite;
  w.num_sge = 1;
  w.inline_data = true;
  w.inline_bytes = bytes;
  return w;
}

pcie::Config gen3x8() {
  pcie::Config c;
  c.gen = 3;
  c.lanes = 8;
  c.max_payload = 256;
  return c;
}

// gen3 x8: 8 GT/s x 128/130 x 8 lanes = 63.0154 Gbit/s, times SKP efficiency 370/371.
const double kGen3x8Gbps = 8.0 * 128 / 130 * 8 * 370 / 371;

}  // namespace

TEST(Mlx4Wqe, InlineSegmentsNeverCrossA64ByteBoundary) {
  // RC RDMA WRITE: ctrl 16 + raddr 16, first inline header at byte 32, data from 36: the first
  // piece holds 28 B, every later one 60 B (64 minus its 4 B header).
  EXPECT_EQ(mlx4::inline_segments(32, 2), 1u);
  EXPECT_EQ(mlx4::inline_segments(32, 28), 1u);   // exactly fills the first block
  EXPECT_EQ(mlx4::inline_segments(32, 29), 2u);
  EXPECT_EQ(mlx4::inline_segments(32, 88), 2u);   // 28 + 60
  EXPECT_EQ(mlx4::inline_segments(32, 89), 3u);
  EXPECT_EQ(mlx4::inline_segments(32, 128), 3u);  // 28 + 60 + 40
  // SEND: header at 16, first piece 44 B.
  EXPECT_EQ(mlx4::inline_segments(16, 44), 1u);
  EXPECT_EQ(mlx4::inline_segments(16, 45), 2u);
}

TEST(Mlx4Wqe, SizesOfSeed001sMessages) {
  // size (16 B units) = 2 + ceil((bytes + 4 x segments) / 16):
  //   2 B: (2 + 4 + 15) / 16 = 1 -> 3 (48 B); 8 B: 12 -> 1 -> 3; 16 B: 20 -> 2 -> 4 (64 B);
  //   32 B: 2 segments, 40 -> 3 -> 5 (80 B); 64 B: 72 -> 5 -> 7 (112 B);
  //   128 B: 3 segments, 140 -> 9 -> 11 (176 B).
  const uint32_t bytes[] = {2, 4, 8, 16, 32, 64, 128};
  const uint32_t units[] = {3, 3, 3, 4, 5, 7, 11};
  const uint32_t copies[] = {64, 64, 64, 64, 128, 128, 192};  // rounded up to 64 B
  for (size_t i = 0; i < 7; ++i) {
    EXPECT_EQ(mlx4::wqe_size_16(inline_write(bytes[i])), units[i]) << bytes[i] << " B";
    EXPECT_EQ(mlx4::blueflame_copy_bytes(inline_write(bytes[i])), copies[i]) << bytes[i] << " B";
  }
  mlx4::WqeShape gathered;  // RDMA WRITE with one data segment: ctrl + raddr + data = 48 B
  gathered.opcode = mlx4::Opcode::RdmaWrite;
  EXPECT_EQ(mlx4::wqe_bytes(gathered), 48u);
  gathered.opcode = mlx4::Opcode::Send;  // SEND with two data segments: 16 + 2 x 16
  gathered.num_sge = 2;
  EXPECT_EQ(mlx4::wqe_bytes(gathered), 48u);
  gathered.opcode = mlx4::Opcode::Atomic;  // ctrl + raddr + atomic + one data segment: 4 x 16
  gathered.num_sge = 1;
  EXPECT_EQ(mlx4::wqe_bytes(gathered), 64u);
  EXPECT_EQ(mlx4::wqe_basic_blocks(inline_write(128)), 3u);
}

TEST(Mlx4Wqe, UdSendsCarryTheDatagramSegment) {
  // libmlx4 mlx4_post_send, IBV_QPT_UD: ctrl (16) + mlx4_wqe_datagram_seg (48) before the data.
  //   2 B inline: the header at byte 64 (a new 64 B block), ceil((2 + 4) / 16) = 1: 1 + 3 + 1 = 5
  //     units (80 B), copied by BlueFlame as 128 B; 60 B inline fills that block (60 + 4 = 64):
  //     1 + 3 + 4 = 8 (128 B); 61 B needs a second header: ceil((61 + 8) / 16) = 5 -> 9 (144 B);
  //   one gathered SGE: 1 + 3 + 1 = 5 (80 B), two basic blocks for the HCA to fetch.
  mlx4::WqeShape w;
  w.ud = true;
  w.inline_data = true;
  w.inline_bytes = 2;
  EXPECT_EQ(mlx4::wqe_size_16(w), 5u);
  EXPECT_EQ(mlx4::blueflame_copy_bytes(w), 128u);
  w.inline_bytes = 60;
  EXPECT_EQ(mlx4::wqe_size_16(w), 8u);
  w.inline_bytes = 61;
  EXPECT_EQ(mlx4::wqe_size_16(w), 9u);
  w.inline_data = false;
  w.inline_bytes = 0;
  EXPECT_EQ(mlx4::wqe_bytes(w), 80u);
  EXPECT_EQ(mlx4::wqe_basic_blocks(w), 2u);
}

TEST(Mlx4Wqe, BlueFlameFollowsLibmlx4sRule) {
  EXPECT_TRUE(mlx4::blueflame_eligible(1, inline_write(2), 256));
  EXPECT_TRUE(mlx4::blueflame_eligible(1, inline_write(128), 256));  // 11 units <= 256 / 16
  // 200 B: 28 + 60 + 60 + 52 = 4 segments, (200 + 16 + 15) / 16 = 14 -> 16 units = 256 B: fits.
  EXPECT_TRUE(mlx4::blueflame_eligible(1, inline_write(200), 256));
  // 220 B: 5 segments, (220 + 20 + 15) / 16 = 15 -> 17 units = 272 B > 256 B: doorbell.
  EXPECT_FALSE(mlx4::blueflame_eligible(1, inline_write(220), 256));
  EXPECT_FALSE(mlx4::blueflame_eligible(2, inline_write(2), 256));   // a list of two WRs
  EXPECT_FALSE(mlx4::blueflame_eligible(1, inline_write(2), 0));     // no BF registers
  mlx4::WqeShape gathered = inline_write(2);
  gathered.inline_data = false;
  EXPECT_FALSE(mlx4::blueflame_eligible(1, gathered, 256));          // not inline
  gathered.opcode = mlx4::Opcode::RdmaRead;                          // libmlx4 sets inl for reads
  EXPECT_TRUE(mlx4::blueflame_eligible(1, gathered, 256));
  gathered.opcode = mlx4::Opcode::Atomic;                            // and not for atomics
  EXPECT_FALSE(mlx4::blueflame_eligible(1, gathered, 256));
}

TEST(Mlx4Wqe, MaxInlineDataOfAQpWithGivenWqeSize) {
  // 256 B WQE: 256 - 32 = 224, minus 4 headers (224 rounds up to 4 x 64): 208.
  EXPECT_EQ(mlx4::max_inline_data(256), 208u);
  // 512 B: 480 - 8 x 4 = 448.
  EXPECT_EQ(mlx4::max_inline_data(512), 448u);
}

TEST(Mmio, WriteCombiningSendsOne64ByteMWrPerLine) {
  mmio::Config c;
  c.write_combining = true;
  c.wc_store_ns = 0.5;
  c.wc_flush_ns = 20;
  c.uc_store_ns = 36;
  c.latency_ns = 100;
  // The 128 B BlueFlame copy of a 32 B write (80 B WQE): 16 stores, 2 MWr of 64 B, each
  // 8 framing + 16 header + 64 = 88 B on the link.
  const mmio::CopyTiming t = mmio::copy_to_device(c, gen3x8(), 128, 80, 8);
  EXPECT_EQ(t.stores, 16u);
  EXPECT_EQ(t.tlps, 2u);
  EXPECT_EQ(t.tlp_payload, 64u);
  EXPECT_EQ(t.wire_bytes, 176u);
  EXPECT_DOUBLE_EQ(t.cpu_ns, 16 * 0.5 + 20);
  // Line 0 leaves at 8 x 0.5 = 4 ns and takes 88 x 8 / 62.845 = 11.202 ns; line 1 leaves at
  // 8 ns but waits for the link until 15.202, ends at 26.404; + 100 ns latency.
  const double ser = 88 * 8 / kGen3x8Gbps;
  EXPECT_NEAR(t.ready_ns, 4 + 2 * ser + 100, 1e-9);
}

TEST(Mmio, UncachedStoresAreOneTlpEachAndStallTheCore) {
  mmio::Config c;
  c.write_combining = false;
  c.wc_store_ns = 0.5;
  c.uc_store_ns = 36;
  c.latency_ns = 100;
  // Same copy without WC: 16 MWr of 8 B (8 + 16 + 8 = 32 B each); the HCA needs the first
  // 80 B = 10 stores: the 10th leaves at 10 x 36 = 360 ns, takes 32 x 8 / 62.845 = 4.074 ns.
  const mmio::CopyTiming t = mmio::copy_to_device(c, gen3x8(), 128, 80, 8);
  EXPECT_EQ(t.stores, 16u);
  EXPECT_EQ(t.tlps, 16u);
  EXPECT_EQ(t.tlp_payload, 8u);
  EXPECT_EQ(t.wire_bytes, 16u * 32);
  EXPECT_DOUBLE_EQ(t.cpu_ns, 16 * 36.0);  // no flush on an uncached mapping
  EXPECT_NEAR(t.ready_ns, 360 + 32 * 8 / kGen3x8Gbps + 100, 1e-9);
  // The doorbell is an uncached 4 B store whatever the BlueFlame mapping: 28 B on the link.
  c.write_combining = true;
  const mmio::CopyTiming d = mmio::doorbell(c, gen3x8());
  EXPECT_EQ(d.tlps, 1u);
  EXPECT_EQ(d.wire_bytes, 28u);
  EXPECT_DOUBLE_EQ(d.cpu_ns, 36);
  EXPECT_NEAR(d.ready_ns, 36 + 28 * 8 / kGen3x8Gbps + 100, 1e-9);
  EXPECT_THROW(mmio::copy_to_device(c, gen3x8(), 12, 12, 8), std::invalid_argument);
}

TEST(PostPath, BlueFlameSkipsTheWqeFetchTheDoorbellNeeds) {
  PostConfig p;
  p.bus.pcie = gen3x8();
  p.mmio.write_combining = true;
  p.mmio.wc_store_ns = 0.5;
  p.mmio.wc_flush_ns = 20;
  p.mmio.uc_store_ns = 50;
  p.mmio.latency_ns = 200;
  p.dma_read_rtt_ns = 275;
  p.blueflame = true;
  p.bf_buf_size = 256;
  // 2 B inline write: BlueFlame, one line (4 ns of stores), 11.202 ns on the link, 200 ns.
  const PostTiming bf = post_timing(p, inline_write(2));
  EXPECT_TRUE(bf.blueflame);
  EXPECT_EQ(bf.wqe_bytes, 48u);
  EXPECT_NEAR(bf.wqe_at_hca_ns, 4 + 88 * 8 / kGen3x8Gbps + 200, 1e-9);
  EXPECT_DOUBLE_EQ(bf.cpu_ns, 8 * 0.5 + 20);
  // BlueFlame off: doorbell (50 + 28 B + 200), then the 64 B WQE block read: 275 ns round
  // trip + one CplD of 8 + 12 + 64 = 84 B.
  p.blueflame = false;
  const PostTiming db = post_timing(p, inline_write(2));
  EXPECT_FALSE(db.blueflame);
  EXPECT_NEAR(db.wqe_at_hca_ns, 50 + 28 * 8 / kGen3x8Gbps + 200 + 275 + 84 * 8 / kGen3x8Gbps, 1e-9);
  EXPECT_DOUBLE_EQ(db.cpu_ns, 50);
  // The doorbell path is slower by the fetch minus the copy: the seed's ~0.3 us on bare metal.
  EXPECT_NEAR(db.wqe_at_hca_ns - bf.wqe_at_hca_ns, 50 + 275 + (28 + 84 - 88) * 8 / kGen3x8Gbps - 4, 1e-9);
}

TEST(PostPath, PciXDoorbellAndWqeFetchTakeBusClocks) {
  // The zx1 slot of model/pcix.h's defaults: 133 MHz (7.5 ns clocks), 64-bit, dual address
  // cycle, decode A, one idle clock, MMRBC 512 B.
  PostConfig p;
  p.bus.kind = HostBus::Kind::Pcix;
  p.mmio.uc_store_ns = 50;
  p.mmio.latency_ns = 200;
  p.dma_read_rtt_ns = 275;  // the split completion latency
  p.blueflame = false;
  // The doorbell: one 4 B write transaction by the bridge: address 2 (DAC) + attribute 1 +
  // decode 1 + one data phase + idle 1 = 6 clocks = 45 ns. Then the WQE's 64 B block: a
  // Memory Read Block request (2 + 1 + 1 + split response 1 + idle 1 = 6 clocks) and one
  // split completion (address 1 + attribute 1 + decode 1 + 8 data phases + idle 1 = 12).
  const PostTiming db = post_timing(p, inline_write(2));
  EXPECT_DOUBLE_EQ(db.mmio.bus_ns, 45);
  EXPECT_EQ(db.mmio.wire_bytes, 0u);
  EXPECT_DOUBLE_EQ(db.cpu_ns, 50);
  EXPECT_NEAR(db.wqe_at_hca_ns, 50 + 45 + 200 + 275 + 18 * 7.5, 1e-9);
  // A 32 KB SEND between two such slots, posted with its doorbell: the sender's bus carries
  // the doorbell, the fetch and 64 requests + 64 split completions of 512 B (64 x (6 + 68)
  // clocks = 35520 ns); the receiver's carries 8 writes of 4 KB (517 clocks each) and the
  // 32 B CQE (2 + 1 + 1 + 4 + 1 = 9 clocks). The SDR 4x link is faster than the sender's bus.
  const ib::Config sdr{.speed = ib::Speed::SDR, .width = 4, .mtu = 2048};
  const MessageWire w = message_wire(p.bus, sdr, p.bus, db, false, 32768, true);
  EXPECT_NEAR(w.tx_bus_ns, 45 + 18 * 7.5 + 64 * 74 * 7.5, 1e-6);
  EXPECT_NEAR(w.rx_bus_ns, (8 * 517 + 9) * 7.5, 1e-6);
  EXPECT_NEAR(message_link_time_ns(sdr, w), w.tx_bus_ns, 1e-9);
  EXPECT_LT(static_cast<double>(w.ib) * 8 / ib::data_rate_gbps(sdr), w.tx_bus_ns);
}

TEST(PostPath, DmaReadWaitIsOneSplitLatencyPerRoundOfOutstandingRequests) {
  HostBus pcie;  // PCIe: the requests' round trips overlap, one rtt whatever the size
  EXPECT_DOUBLE_EQ(pcie.dma_read_wait_ns(64, 275), 275);
  EXPECT_DOUBLE_EQ(pcie.dma_read_wait_ns(65536, 275), 275);
  HostBus x;
  x.kind = HostBus::Kind::Pcix;
  x.pcix.split_completion_latency_ns = 400;
  x.pcix.max_memory_read_byte_count = 512;
  x.pcix.max_outstanding_split = 1;
  // A 2044 B IPoIB frame with MMRBC 512 and one split outstanding: ceil(2044 / 512) = 4
  // requests, 4 rounds of 400 ns; the rtt argument is the PCIe one and is not used.
  EXPECT_DOUBLE_EQ(x.dma_read_wait_ns(2044, 275), 4 * 400);
  EXPECT_DOUBLE_EQ(x.dma_read_wait_ns(64, 275), 400);
  EXPECT_DOUBLE_EQ(x.dma_read_wait_ns(0, 275), 400);  // at least one round
  // 4 outstanding: the 4 requests go in one round; 9 requests (4097..4608 B) in 3.
  x.pcix.max_outstanding_split = 4;
  EXPECT_DOUBLE_EQ(x.dma_read_wait_ns(2044, 275), 400);
  EXPECT_DOUBLE_EQ(x.dma_read_wait_ns(4608, 275), 3 * 400);
}

TEST(PostPath, BlueFlameOnPciXIsAnInputError) {
  const Platform plat = Platform::parse(R"(
[pcix]
clock_mhz = { value = 133, unit = "MHz", source = "t" }
mmio_write_latency = { value = 1, unit = "ns", source = "t" }
[cpu]
wc_store = { value = 1, unit = "cycles", source = "t" }
wc_flush = { value = 1, unit = "ns", source = "t" }
uc_store = { value = 1, unit = "ns", source = "t" }
[host]
clock = { value = 1, unit = "GHz", source = "t: a cycle is 1 ns" }
write_combining = { value = true, unit = "", source = "t" }
[hca]
device = { value = "mlx4_0", unit = "", source = "t" }
blueflame = { value = true, unit = "", source = "t" }
bf_buf_size = { value = 256, unit = "B", source = "t" }
)", "bf.toml");
  HostBus bus;
  bus.kind = HostBus::Kind::Pcix;
  try {
    (void)PostConfig::from_platform(plat, bus, 100);
    FAIL() << "BlueFlame on PCI-X accepted";
  } catch (const hcasim::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("hca.blueflame: BlueFlame needs a PCIe slot; this HCA sits on PCI-X 133 MHz 64-bit"),
              std::string::npos)
        << e.what();
  }
}

TEST(Noise, SplitMix64MatchesItsPublishedSequence) {
  // SplitMix64 from state 0: the first output is 0xe220a8397b1dcdaf (the reference
  // implementation of Vigna's splitmix64.c, also the seed generator of xoshiro).
  SplitMix64 g(0);
  EXPECT_EQ(g.next(), 0xe220a8397b1dcdafULL);
  SplitMix64 a(42), b(42);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(a.next(), b.next());
}

TEST(Noise, TimerTicksDelayAFractionTickTimesHz) {
  NoiseConfig c;
  c.timer_hz = 1000;
  c.timer_tick_ns = 2000;
  CpuNoise n(c, 7);
  // Sample every 1 us for 1 s: the CPU is away 1000 x 2 us = 0.2 % of the time, so about
  // 2000 of 1,000,000 samples land in a tick and are pushed to its end (never more than
  // 2 us later).
  int delayed = 0;
  for (int i = 0; i < 1000000; ++i) {
    const double t = i * 1000.0;
    const double a = n.available_at(t);
    ASSERT_GE(a, t);
    ASSERT_LE(a - t, 2000.0);
    if (a > t) ++delayed;
  }
  EXPECT_NEAR(delayed, 2000, 2);
}

TEST(PostPath, BusLatenciesComeFromTheSectionOfTheHostBus) {
  // The same three latencies under [pcie] and under [pcix] (HostBus::latency_key): the values
  // differ so that a key read from the wrong section shows.
  const std::string common = R"(
[cpu]
wc_store = { value = 1, unit = "cycles", source = "t" }
wc_flush = { value = 1, unit = "ns", source = "t" }
uc_store = { value = 1, unit = "ns", source = "t" }
[host]
clock = { value = 1, unit = "GHz", source = "t: a cycle is 1 ns" }
write_combining = { value = false, unit = "", source = "t" }
[hca]
tx_processing = { value = 1, unit = "ns", source = "t" }
rx_processing = { value = 1, unit = "ns", source = "t" }
interrupt_latency = { value = 1, unit = "ns", source = "t" }
inline_copy_rate = { value = 1, unit = "B/ns", source = "t" }
atomic = { value = 1, unit = "ns", source = "t" }
qp_wqe_time = { value = 1, unit = "ns", source = "t" }
tx_packet_time = { value = 1, unit = "ns", source = "t" }
rx_packet_time = { value = 1, unit = "ns", source = "t" }
[ib]
propagation = { value = 1, unit = "ns", source = "t" }
)";
  const Platform e = Platform::parse(common + R"(
[pcie]
dma_read_rtt = { value = 900, unit = "ns", source = "t" }
posted_write_latency = { value = 300, unit = "ns", source = "t" }
mmio_write_latency = { value = 250, unit = "ns", source = "t" }
)", "e.toml");
  const Platform x = Platform::parse(common + R"(
[pcix]
clock_mhz = { value = 133, unit = "MHz", source = "t" }
split_completion_latency_ns = { value = 1000, unit = "ns", source = "t" }
posted_write_latency = { value = 500, unit = "ns", source = "t" }
mmio_write_latency = { value = 450, unit = "ns", source = "t" }
)", "x.toml");
  EXPECT_STREQ(HostBus::latency_key(x, HostBus::Latency::DmaRead), "pcix.split_completion_latency_ns");
  EXPECT_STREQ(HostBus::latency_key(e, HostBus::Latency::MmioWrite), "pcie.mmio_write_latency");
  const HcaTiming te = HcaTiming::from_platform(e), tx = HcaTiming::from_platform(x);
  EXPECT_DOUBLE_EQ(te.dma_read_rtt_ns, 900);
  EXPECT_DOUBLE_EQ(te.posted_write_ns, 300);
  EXPECT_DOUBLE_EQ(tx.dma_read_rtt_ns, 1000);
  EXPECT_DOUBLE_EQ(tx.posted_write_ns, 500);
  EXPECT_DOUBLE_EQ(mmio::Config::from_platform(e).latency_ns, 250);
  EXPECT_DOUBLE_EQ(mmio::Config::from_platform(x).latency_ns, 450);
  // A zero read latency would allow unbounded DMA reads in flight: refused, naming the key.
  Platform zero = e;
  zero.set("pcie.dma_read_rtt=0");
  try {
    (void)HcaTiming::from_platform(zero);
    FAIL() << "pcie.dma_read_rtt = 0 accepted";
  } catch (const hcasim::InputError& err) {
    EXPECT_EQ(std::string(err.what()), "--set pcie.dma_read_rtt: 0 ns must be > 0 (platform e)") << err.what();
  }
}
