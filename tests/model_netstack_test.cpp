// TCP/IPoIB CPU costs (model/netstack.h): Linux's socket-buffer and window arithmetic, the
// per-call cost formulas, and the [netstack] section's errors. Expected values are hand
// calculations from the sources the header cites.
#include "model/netstack.h"

#include <optional>
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

// Linux 2.6.12's tuning of buffers the application did not set (tcp_input.c). One skb charges
// its payload plus kTcpSkbOverhead = 128 + 32 + 16 + 200 = 376 B.
TEST(ModelNetstack, UnsetBuffersAreTunedAsTcpInputTunesThem) {
  // Connected mode's MSS 65468: rcvmem 65468 + 376 = 65844 gives a window of 65844 - 16461 =
  // 49383 < 65468, so it grows by 128 B 168 times to 87348 (window 87348 - 21837 = 65511;
  // 167 steps give 87220 - 21805 = 65415, short). 4 x 87348 = 349392, capped at tcp_rmem[2].
  EXPECT_EQ(tcp_fixup_rcvbuf(87380, 65468, 174760), 174760u);
  EXPECT_EQ(tcp_fixup_rcvbuf(87380, 65468, 400000), 4u * 87348u);
  // Datagram mode's 1992: 2368 -> 2496 -> 2624 -> 2752 (window 2064 >= 1992); 4 x 2752 = 11008
  // is below the 87380 default, which stays.
  EXPECT_EQ(tcp_fixup_rcvbuf(87380, 1992, 174760), 87380u);
  EXPECT_EQ(tcp_fixup_rcvbuf(256, 1992, 174760), 11008u);
  // Three skbs for the send buffer: 3 x 65844 = 197532, capped at tcp_wmem[2] = 131072;
  // 3 x 2368 = 7104 is below the 16384 default.
  EXPECT_EQ(tcp_fixup_sndbuf(16384, 65468, 131072), 131072u);
  EXPECT_EQ(tcp_fixup_sndbuf(16384, 1992, 131072), 16384u);
  // tcp_new_space: 2 x max(cwnd, 3 + 1) skbs: cwnd 2 -> 2 x 4 x 2368 = 18944; cwnd 30 ->
  // 2 x 30 x 2368 = 142080, capped at 131072.
  EXPECT_EQ(tcp_expand_sndbuf(16384, 1992, 2, 131072), 18944u);
  EXPECT_EQ(tcp_expand_sndbuf(16384, 1992, 30, 131072), 131072u);
  EXPECT_EQ(tcp_expand_sndbuf(131072, 1992, 2, 131072), 131072u);  // never shrinks
  // tcp_rcv_space_adjust: 10 segments' worth (19920 B) -> 10 x 2752 = 27520; a megabyte -> the cap.
  EXPECT_EQ(tcp_drs_rcvbuf(16384, 19920, 1992, 174760), 27520u);
  EXPECT_EQ(tcp_drs_rcvbuf(87380, 1000000, 1992, 174760), 174760u);
  EXPECT_EQ(tcp_drs_rcvbuf(87380, 100, 1992, 174760), 87380u);  // one skb at least, never less than now
}

TEST(ModelNetstack, TheSynAcksWindowHalvesALargeSegment) {
  // The 87380 B default: window 65535. Connected mode: one 65468 B segment fits (65535 > 65468,
  // quantised to 65468), within RFC 2414's 2 segments and a SYN's 16 bits; the sender then
  // bounds its segments to half of it, 32734 B, until a larger window arrives.
  EXPECT_EQ(tcp_initial_window(87380, 65468), 65468u);
  EXPECT_EQ(tcp_mss_for_window(65468, 65468, 32), 32734u);
  EXPECT_EQ(tcp_mss_for_window(65468, 130936, 32), 65468u);  // two segments: the full MSS again
  EXPECT_EQ(tcp_mss_for_window(65468, 0, 32), 65468u);       // no window yet: unbounded
  EXPECT_EQ(tcp_mss_for_window(1992, 50, 32), 36u);          // at least 68 - 32 B of TCP header
  // Datagram mode: 65535 quantised to 32 x 1992 = 63744, then RFC 2414's 3 segments (1460 <
  // 1992 <= 4380): 5976; half of it is above 1992, so segments stay whole.
  EXPECT_EQ(tcp_initial_window(87380, 1992), 5976u);
  EXPECT_EQ(tcp_mss_for_window(1992, 5976, 32), 1992u);
  // A window below one segment is offered as it is: -S 1 gives 256 B, a window of 192.
  EXPECT_EQ(tcp_initial_window(256, 1992), 192u);
  // tcp_init_cwnd (RFC 3390): 2 segments above 2190 B, 3 above 1095, else 4.
  EXPECT_EQ(tcp_initial_cwnd(65468), 2u);
  EXPECT_EQ(tcp_initial_cwnd(1992), 3u);
  EXPECT_EQ(tcp_initial_cwnd(1000), 4u);
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
  const KernelNaming zx1{HcaDriver::Mthca, /*iommu=*/true};
  EXPECT_EQ(kernel_fn_name(KernelFn::DoCsum, zx1), "do_csum");
  EXPECT_EQ(kernel_fn_name(KernelFn::IptDoTable, zx1), "ipt_do_table");
  EXPECT_EQ(kernel_fn_activity(KernelFn::CopyUser), Activity::Copy);
  EXPECT_EQ(kernel_fn_activity(KernelFn::Interrupt), Activity::Interrupt);
  for (size_t f = 0; f < kKernelFnCount; ++f) EXPECT_NE(kernel_fn_name(static_cast<KernelFn>(f), zx1), "?") << f;
}

// The two rows a host's kernel names: its HCA driver's EQ handler (drivers/infiniband/hw/mthca/
// mthca_eq.c mthca_eq_int, drivers/net/mlx4/eq.c mlx4_eq_int) and its DMA mapping (the zx1's
// arch/ia64/hp/common/sba_iommu.c sba_map_single; without an IOMMU x86_64's
// arch/x86_64/kernel/pci-nommu.c nommu_map_single). The driver comes from the verbs device name
// the driver gives (mthca_register_device: "mthca%d"; mlx4_ib_add: "mlx4_%d").
TEST(ModelNetstack, HostDependentRowsAreNamedAfterTheHostsDriverAndDmaMapping) {
  EXPECT_EQ(hca_driver("mthca0"), HcaDriver::Mthca);
  EXPECT_EQ(hca_driver("mthca12"), HcaDriver::Mthca);
  EXPECT_EQ(hca_driver("mlx4_0"), HcaDriver::Mlx4);
  EXPECT_EQ(hca_driver("mlx4_"), std::nullopt);
  EXPECT_EQ(hca_driver("mlx40"), std::nullopt);
  EXPECT_EQ(hca_driver("mthca0x"), std::nullopt);
  EXPECT_EQ(hca_driver("qib0"), std::nullopt);
  const auto shipped = [](const std::string& name) {
    return KernelNaming::from_platform(
        Platform::load_file(std::string(HCASIM_REFERENCE_DIR) + "/../scenarios/platforms/" + name + ".toml"));
  };
  const KernelNaming zx1 = shipped("zx1-rx2600-pcix");
  EXPECT_EQ(kernel_fn_name(KernelFn::Interrupt, zx1), "mthca_eq_int");
  EXPECT_EQ(kernel_fn_name(KernelFn::DmaMap, zx1), "sba_map_single");
  const KernelNaming connectx = shipped("connectx-ddr-pcie1x8");
  EXPECT_EQ(kernel_fn_name(KernelFn::Interrupt, connectx), "mlx4_eq_int");
  EXPECT_EQ(kernel_fn_name(KernelFn::DmaMap, connectx), "nommu_map_single");
  const KernelNaming infinihost = shipped("infinihost3-pcie1x8");
  EXPECT_EQ(kernel_fn_name(KernelFn::Interrupt, infinihost), "mthca_eq_int");
  EXPECT_EQ(kernel_fn_name(KernelFn::DmaMap, infinihost), "nommu_map_single");
  // Another driver's device (hca.device names no driver hcasim knows the handler of): the
  // kernel's generic handle_IRQ_event, which calls it.
  Platform other = Platform::load_file(std::string(HCASIM_REFERENCE_DIR) + "/../scenarios/platforms/connectx-ddr-pcie1x8.toml");
  other.set("hca.device=qib0");
  EXPECT_EQ(kernel_fn_name(KernelFn::Interrupt, KernelNaming::from_platform(other)), "handle_IRQ_event");
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
