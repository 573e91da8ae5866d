// TCP/IPoIB CPU costs (model/netstack.h): Linux's socket-buffer and window arithmetic, the
// per-call cost formulas, and the [netstack] section's errors. Expected values are hand
// calculations from the sources the header cites.
#include "model/netstack.h"

#include <string>

#include <gtest/gtest.h>

#include "model/error.h"
#include "model/platform.h"

using namespace hcasim;
using namespace hcasim::model;

TEST(ModelNetstack, LinuxDoublesAndCapsSocketBuffers) {
  // Seed 003: netperf -s 262144 -S 262144 printed "262142 262142": min(262144, 131071) x 2.
  EXPECT_EQ(linux_socket_buffer(262144, 131071, 16384, kSockMinSndbuf), 262142u);
  EXPECT_EQ(linux_socket_buffer(32768, 131071, 16384, kSockMinSndbuf), 65536u);  // below the cap: doubled
  EXPECT_EQ(linux_socket_buffer(0, 131071, 87380, kSockMinRcvbuf), 87380u);      // no request: the default
  EXPECT_EQ(linux_socket_buffer(0, 131071, 5, kSockMinRcvbuf), 256u);            // ... at least the floor
  EXPECT_EQ(linux_socket_buffer(0, 131071, 5, kSockMinSndbuf), 2048u);
  // Below the floor: 1 x 2 = 2 is raised to SOCK_MIN_SNDBUF 2048 (send), SOCK_MIN_RCVBUF 256
  // (receive); 200 x 2 = 400 is above the receive floor.
  EXPECT_EQ(linux_socket_buffer(1, 131071, 16384, kSockMinSndbuf), 2048u);
  EXPECT_EQ(linux_socket_buffer(1, 131071, 87380, kSockMinRcvbuf), 256u);
  EXPECT_EQ(linux_socket_buffer(200, 131071, 87380, kSockMinRcvbuf), 400u);
}

TEST(ModelNetstack, WindowIsThreeQuartersOfTheBuffer) {
  // tcp_adv_win_scale 2: 262142 - 262142 / 4 = 262142 - 65535 = 196607.
  EXPECT_EQ(tcp_window_from_space(262142), 196607u);
  EXPECT_EQ(tcp_window_from_space(87380), 87380u - 21845u);  // 65535: the classic 64 KB window
  EXPECT_EQ(tcp_window_from_space(1000, 1), 500u);
  EXPECT_EQ(tcp_window_from_space(1000, -1), 500u);  // negative scale: space >> 1
}

TEST(ModelNetstack, CostFormulas) {
  NetstackCosts c;
  c.csum_call_ns = 40;
  c.csum_hot_bytes_per_ns = 5.8;
  c.csum_cold_bytes_per_ns = 0.76;
  c.copy_call_ns = 30;
  c.copy_bytes_per_ns = 9.1;
  c.iommu_map_ns = 2070;
  c.fmr_map_ns = 100;
  c.iommu_page_bytes = 4096;
  // zx1-rx4640-pcix's cold pass over a 2044 B segment (TCP 2024 + IP header 20): 40 + 2044 / 0.76.
  EXPECT_NEAR(c.csum_ns(2044, true), 40 + 2044 / 0.76, 1e-9);
  EXPECT_NEAR(c.csum_ns(2024, false), 40 + 2024 / 5.8, 1e-9);
  EXPECT_NEAR(c.copy_ns(1992), 30 + 1992 / 9.1, 1e-9);
  // An IPoIB receive buffer (2044 + 4 + 40 GRH = 2088 B) spans one 4 KB IOMMU page; a
  // connected-mode one (65524 + 40) spans 17.
  EXPECT_EQ(c.iommu_pages(2088), 1u);
  EXPECT_EQ(c.iommu_pages(65564), 17u);
  EXPECT_EQ(c.iommu_pages(0), 0u);
  EXPECT_DOUBLE_EQ(c.dma_map_ns(2088), 2070);
  c.fmr = true;
  EXPECT_DOUBLE_EQ(c.dma_map_ns(8192), 200);
}

TEST(ModelNetstack, EveryRowHasAProfileNameAndAnActivity) {
  EXPECT_EQ(kernel_fn_name(KernelFn::DoCsum), "do_csum");
  EXPECT_EQ(kernel_fn_name(KernelFn::IptDoTable), "ipt_do_table");
  EXPECT_EQ(kernel_fn_name(KernelFn::DmaMap), "sba_map_single");
  EXPECT_EQ(kernel_fn_activity(KernelFn::CopyUser), Activity::Copy);
  EXPECT_EQ(kernel_fn_activity(KernelFn::Interrupt), Activity::Interrupt);
  for (size_t f = 0; f < kKernelFnCount; ++f) EXPECT_NE(kernel_fn_name(static_cast<KernelFn>(f)), "?") << f;
}

TEST(ModelNetstack, ShippedPlatformsReadAndBadValuesNameTheirKey) {
  Platform p = Platform::load_file(std::string(HCASIM_REFERENCE_DIR) + "/../scenarios/platforms/zx1-rx4640-pcix.toml");
  const NetstackCosts c = NetstackCosts::from_platform(p);
  EXPECT_TRUE(c.netfilter);
  EXPECT_FALSE(c.fmr);
  EXPECT_FALSE(c.csum_offload);
  EXPECT_EQ(c.rmem_max, 131071u);
  EXPECT_DOUBLE_EQ(c.nf_hook_ns, 485);
  p.set("netstack.iommu_page=3000");
  try {
    NetstackCosts::from_platform(p);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "--set netstack.iommu_page: 3000 is not a power of two in 512..1073741824 "
                                     "(platform zx1-rx4640-pcix)");
  }
  p.set("netstack.iommu_page=4096");
  p.set("netstack.csum_cold_rate=0");
  EXPECT_THROW(NetstackCosts::from_platform(p), InputError);
}
