// No simulated goodput above the ceilings model/ computes, for every transport that moves data
// over the buses and the link: a sweep over MPS, MRRS and the IB speed of SDP (a short bzcopy
// 1 MB stream, the configuration that pushes the links hardest), netperf over IPoIB in both
// modes, and perftest's RDMA WRITE and SEND streams. Each transport's DMA has to charge what the
// closed-form ceilings charge (TLP headers, DLLPs, SKP ordered sets; model/pcie.h), or a fast
// host would run above them. Each parameterised test runs in its own process (ctest,
// gtest_discover_tests), because SimGrid allows one engine per process.
#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <string>
#include <tuple>

#include "model/ib.h"
#include "model/pcie.h"
#include "model/platform.h"
#include "sdp/bsdh.h"
#include "model/ipoib.h"
#include "sim/ipoib_sim.h"
#include "sim/netperf_sim.h"
#include "sim/perftest_sim.h"

using namespace hcasim;

namespace {
model::Platform default_platform() {
  return model::Platform::load_file(std::string(HCASIM_REFERENCE_DIR) +
                                    "/../scenarios/platforms/connectx-ddr-pcie1x8.toml");
}

/// The platform of a sweep point: connectx-ddr-pcie1x8 with the bus and link given.
model::Platform sweep_platform(int mps, int mrrs, const std::string& speed) {
  model::Platform p = default_platform();
  p.set("pcie.max_payload=" + std::to_string(mps));
  p.set("pcie.max_read_request=" + std::to_string(mrrs));
  p.set("ib.speed=" + speed);
  return p;
}

/// The lowest of the sender's DMA-read ceiling, the receiver's DMA-write ceiling (both hosts
/// have the same bus) and `link_gbps`, Gbit/s of payload.
double ceiling_gbps(int mps, int mrrs, double link_gbps) {
  model::pcie::Config pc;
  pc.max_payload = static_cast<uint32_t>(mps);
  pc.max_read_request = static_cast<uint32_t>(mrrs);
  return std::min({model::pcie::dma_read_ceiling_gbps(pc), model::pcie::dma_write_ceiling_gbps(pc), link_gbps});
}

using Point = std::tuple<int, int, std::string>;  // MPS, MRRS, IB speed
const auto kSweep = ::testing::Values(Point{128, 512, "DDR"}, Point{256, 512, "DDR"}, Point{128, 128, "DDR"},
                                      Point{128, 4096, "DDR"}, Point{256, 1024, "QDR"}, Point{128, 512, "SDR"});
}  // namespace

TEST(Ceiling, HandCalculatedGen1x8Mps128Mrrs512) {
  // Worked by hand (PCIe 1.1; docs/design.md): gen1 x8 moves 16 Gbit/s per direction after 8b/10b.
  // A 512 B read returns 8 CplD of 64 B, each 20 B header+framing: 8 x 84 = 672 B, plus one
  // Ack and one UpdateFC DLLP (8 B each) for the MRd that flows the other way: 688 B per
  // 512 B. SKP ordered sets take 4 of every 1180 symbol times. Read ceiling:
  //   16 x 512/688 x 1176/1180 = 11.867 Gbit/s.
  // IB DDR 4x after 8b/10b: 16 Gbit/s; a 32 KB + 16 B SEND is 17 packets (16 x 2048 + 16 B),
  // each with 26 B of LRH/BTH/ICRC/VCRC and 2 B of delimiters: 32784 / (32784 + 17 x 28)
  //   x 16 = 15.77 Gbit/s.
  model::pcie::Config pc;
  EXPECT_NEAR(model::pcie::dma_read_ceiling_gbps(pc), 16.0 * 512 / 688 * 1176 / 1180, 1e-6);
  model::ib::Config ic;
  EXPECT_NEAR(model::ib::send_goodput_ceiling_gbps(ic, 32784), 16.0 * 32784 / (32784 + 17 * 28), 1e-6);
}

class CeilingSweep : public ::testing::TestWithParam<std::tuple<int, int, std::string>> {};

TEST_P(CeilingSweep, SimulatedGoodputStaysUnderTheModelCeiling) {
  const auto [mps, mrrs, speed] = GetParam();
  model::Platform p = sweep_platform(mps, mrrs, speed);
  p.set("sdp.zcopy_thresh=1");
  // A fast host so that the links, not the CPU, limit the stream.
  p.set("cpu.copy_rx_rate=100");
  p.set("cpu.copy_tx_rate=100");
  p.set("cpu.pin_page=0");
  p.set("cpu.dma_map_page=0");
  p.set("cpu.bzcopy_setup=0");
  frontends::TcpStreamConfig c;
  c.length_s = 0.02;
  c.send_size = 1 << 20;
  const auto r = sim::run_tcp_stream(p, p, c);
  const double goodput = static_cast<double>(r.bytes_received) * 8 / r.elapsed_s / 1e9;

  model::ib::Config ic;
  ic.speed = model::ib::parse_speed(speed);
  const double ceiling = ceiling_gbps(mps, mrrs, model::ib::send_goodput_ceiling_gbps(ic, 32768 + sdp::Bsdh::kSize));
  EXPECT_LE(goodput, ceiling) << "MPS " << mps << " MRRS " << mrrs << " " << speed;
  // and the stream does reach most of it (the links, not a stall, limit it)
  EXPECT_GE(goodput, 0.85 * ceiling) << "MPS " << mps << " MRRS " << mrrs << " " << speed;
}

INSTANTIATE_TEST_SUITE_P(Sweep, CeilingSweep, kSweep);

// netperf TCP_STREAM over IPoIB, both modes, on a host whose TCP/IP stack costs next to nothing,
// with socket buffers of 4 MB (as IPoIB-CM tuning guides raise them): the TCP payload stays under
// the buses' ceilings and, per mode, under model/ipoib.h's link ceiling for full-MSS segments.
// The payload is less than what the DMA moves (the IPoIB and TCP/IP headers ride along), so
// the raw DMA ceilings are upper bounds of it.
class IpoibCeilingSweep : public ::testing::TestWithParam<std::tuple<std::string, int, int, std::string>> {};

TEST_P(IpoibCeilingSweep, TcpPayloadStaysUnderTheModelCeilings) {
  const auto [mode, mps, mrrs, speed] = GetParam();
  model::Platform p = sweep_platform(mps, mrrs, speed);
  p.set("ipoib.mode=" + mode);
  p.set("socket.wmem_max=4194304");
  p.set("socket.rmem_max=4194304");
  for (const char* key : {"netstack.copy_rate=100", "hca.csum_offload=on"}) p.set(key);
  frontends::TcpStreamConfig c;
  c.length_s = 0.02;
  c.send_size = 64 << 10;
  c.local_send_socket = c.remote_recv_socket = 4 << 20;
  const auto r = sim::run_ipoib_stream(p, p, c).stream;
  const double goodput = static_cast<double>(r.bytes_received) * 8 / r.elapsed_s / 1e9;
  model::ipoib::Config ipc;
  ipc.mode = model::ipoib::parse_mode(mode);
  ipc.connected_mtu = p.u32("ipoib.connected_mtu");
  ipc.tcp_timestamps = p.flag("socket.tcp_timestamps");
  model::ib::Config ic;
  ic.speed = model::ib::parse_speed(speed);
  const double ceiling = ceiling_gbps(mps, mrrs, model::ipoib::tcp_goodput_ceiling_gbps(ipc, ic));
  std::cout << mode << " MPS " << mps << " MRRS " << mrrs << " " << speed << ": " << goodput << " Gbit/s, ceiling "
            << ceiling << "\n";
  EXPECT_LE(goodput, ceiling) << mode << " MPS " << mps << " MRRS " << mrrs << " " << speed;
  // Connected mode's 64 KB segments leave the buses the bound; datagram mode's 2 KB segments
  // still pay the interrupt and the doorbell per packet, so it is only checked for a stall.
  EXPECT_GE(goodput, (mode == "connected" ? 0.85 : 0.5) * ceiling) << mode << " MPS " << mps << " MRRS " << mrrs;
}

INSTANTIATE_TEST_SUITE_P(Sweep, IpoibCeilingSweep,
                         ::testing::Values(std::make_tuple("connected", 128, 512, "DDR"),
                                           std::make_tuple("connected", 256, 512, "DDR"),
                                           std::make_tuple("connected", 128, 128, "DDR"),
                                           std::make_tuple("connected", 256, 1024, "QDR"),
                                           std::make_tuple("datagram", 128, 512, "DDR"),
                                           std::make_tuple("datagram", 128, 128, "SDR")));

// perftest's streams: ib_write_bw and ib_send_bw of 64 KB messages, tx depth 128. perftest's
// bandwidth is the bytes of the WRs completed over the time from the first post to the last
// completion (perftest_output.h); it stays under the ceilings and, with the links the bound, reaches
// most of them. The link ceiling is that of SENDs of the same size: a WRITE's first packet
// carries a RETH too, so its own ceiling is a little lower and the SEND figure bounds it.
class PerftestCeilingSweep
    : public ::testing::TestWithParam<std::tuple<std::string, int, int, std::string>> {};

TEST_P(PerftestCeilingSweep, BandwidthStaysUnderTheModelCeilings) {
  const auto [name, mps, mrrs, speed] = GetParam();
  const model::Platform p = sweep_platform(mps, mrrs, speed);
  frontends::PerftestConfig c;
  c.test = name == "ib_write_bw" ? frontends::PerftestTest::WriteBw : frontends::PerftestTest::SendBw;
  c.sizes = {64 << 10};
  c.iterations = 400;
  c.tx_depth = 128;
  const auto r = sim::run_perftest(p, p, c);
  ASSERT_EQ(r.points.size(), 1u);
  const auto& pt = r.points[0];
  ASSERT_FALSE(pt.tcompleted_ns.empty());
  const double bits = static_cast<double>(pt.tcompleted_ns.size()) * (64 << 10) * 8;
  const double goodput = bits / (pt.tcompleted_ns.back() - pt.tposted_ns.front());  // bit/ns = Gbit/s
  model::ib::Config ic;
  ic.speed = model::ib::parse_speed(speed);
  const double ceiling = ceiling_gbps(mps, mrrs, model::ib::send_goodput_ceiling_gbps(ic, 64 << 10));
  std::cout << name << " MPS " << mps << " MRRS " << mrrs << " " << speed << ": " << goodput << " Gbit/s, ceiling "
            << ceiling << "\n";
  EXPECT_LE(goodput, ceiling) << name << " MPS " << mps << " MRRS " << mrrs << " " << speed;
  EXPECT_GE(goodput, 0.85 * ceiling) << name << " MPS " << mps << " MRRS " << mrrs << " " << speed;
}

INSTANTIATE_TEST_SUITE_P(Sweep, PerftestCeilingSweep,
                         ::testing::Combine(::testing::Values("ib_write_bw", "ib_send_bw"),
                                            ::testing::Values(128), ::testing::Values(128, 512, 4096),
                                            ::testing::Values("DDR", "QDR")));
