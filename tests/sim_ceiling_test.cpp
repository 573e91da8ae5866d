// No simulated goodput above the ceilings model/ computes: a sweep over MPS, MRRS and the IB
// speed, each point a short bzcopy 1 MB stream (the configuration that pushes the links
// hardest). Each parameterised test runs in its own process (ctest, gtest_discover_tests),
// because SimGrid allows one engine per process.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <tuple>

#include "model/ib.h"
#include "model/pcie.h"
#include "model/platform.h"
#include "sdp/bsdh.h"
#include "sim/netperf_sim.h"

using namespace hcasim;

namespace {
model::Platform default_platform() {
  return model::Platform::load_file(std::string(HCASIM_REFERENCE_DIR) +
                                    "/../scenarios/platforms/connectx-ddr-pcie1x8.toml");
}
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
  model::Platform p = default_platform();
  p.set("pcie.max_payload=" + std::to_string(mps));
  p.set("pcie.max_read_request=" + std::to_string(mrrs));
  p.set("ib.speed=" + speed);
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

  model::pcie::Config pc;
  pc.max_payload = static_cast<uint32_t>(mps);
  pc.max_read_request = static_cast<uint32_t>(mrrs);
  model::ib::Config ic;
  ic.speed = model::ib::parse_speed(speed);
  const double ceiling = std::min({model::pcie::dma_read_ceiling_gbps(pc), model::pcie::dma_write_ceiling_gbps(pc),
                                   model::ib::send_goodput_ceiling_gbps(ic, 32768 + sdp::Bsdh::kSize)});
  EXPECT_LE(goodput, ceiling) << "MPS " << mps << " MRRS " << mrrs << " " << speed;
  // and the stream does reach most of it (the links, not a stall, limit it)
  EXPECT_GE(goodput, 0.85 * ceiling) << "MPS " << mps << " MRRS " << mrrs << " " << speed;
}

INSTANTIATE_TEST_SUITE_P(Sweep, CeilingSweep,
                         ::testing::Values(std::make_tuple(128, 512, "DDR"), std::make_tuple(256, 512, "DDR"),
                                           std::make_tuple(128, 128, "DDR"), std::make_tuple(128, 4096, "DDR"),
                                           std::make_tuple(256, 1024, "QDR"), std::make_tuple(128, 512, "SDR")));
