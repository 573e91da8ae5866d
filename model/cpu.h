#pragma once
/// \file CPU cost model: what each kernel/driver activity costs on a core, in ns, and the
/// per-core accounting netperf's CPU utilisation and service demand are computed from.
#include <array>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

namespace hcasim::model {

class Platform;

/// What a core spends its time on (the rows of --profile).
enum class Activity : uint8_t {
  Syscall,     ///< system call entry/exit and the socket layer's per-call work
  Copy,        ///< copy_from_user / copy_to_user
  Pin,         ///< get_user_pages + DMA mapping, and the release of pinned pages
  Post,        ///< building a WQE and ringing the doorbell (ib_post_send / ib_post_recv)
  Completion,  ///< polling and handling a CQE (SDP completion processing)
  Poll,        ///< busy-polling a CQ while waiting (bzcopy's wait for its sends)
  Interrupt,   ///< interrupt entry, EQ handling, exit
  Wakeup,      ///< waking a blocked thread and switching to it
  Timer,       ///< the periodic timer tick
  Coherence,   ///< stalls on cache lines another core wrote last (socket state, skb metadata)
  Count_
};
inline constexpr std::size_t kActivityCount = static_cast<std::size_t>(Activity::Count_);
/// Short lower-case name of an activity ("copy", "interrupt", ...).
std::string_view activity_name(Activity a);

/// Per-host CPU costs, ns of one core's time. Every value comes from the platform file's
/// [cpu] section, where its unit and source are recorded (see connectx-ddr-pcie1x8.toml).
struct CpuCosts {
  int cpus = 1;                    ///< cores of the host (netperf's num_cpus)
  double syscall_ns = 0;           ///< syscall entry + exit
  double sendmsg_ns = 0;           ///< sdp_sendmsg/sdp_recvmsg per-call bookkeeping (locks, checks)
  double skb_ns = 0;               ///< allocate + queue + free one SDP buffer (skb)
  double copy_tx_bytes_per_ns = 1; ///< copy_from_user into a kernel SDP buffer, B/ns
  double copy_rx_bytes_per_ns = 1; ///< copy_to_user out of a DMA-written SDP buffer, B/ns
  double copy_tx_hot_bytes_per_ns = 1;  ///< copy_from_user whose source is still in the cache, B/ns
  double copy_src_cache_bytes = 0; ///< cache capacity a re-read user buffer stays resident in, B
                                   ///< (model/cache.h C; per last-level cache)
  double ipi_ns = 0;               ///< waking a thread on another core: the reschedule IPI's cost
                                   ///< to the waker on top of wakeup_ns
  double bzcopy_setup_ns = 0;      ///< per bzcopy send call: sdp_bz_setup/sdp_bz_cleanup fixed work
  double pin_ns_per_page = 0;      ///< get_user_pages + put_page, per 4 KB page
  /// dma_map_single/page + unmap, per dma_map_page_bytes page: what mapping a buffer for one
  /// I/O costs (bzcopy's pinned pages; with an IOMMU also SDP's bcopy posts). Through the
  /// IOMMU where the host has one (from_platform).
  double dma_map_ns_per_page = 0;
  double dma_map_page_bytes = 4096;  ///< the page the mapping cost is per, B
  /// host.iommu: the host's DMA goes through an IOMMU, so every I/O's buffer is mapped and
  /// unmapped in it (post_map_ns). Without one a mapping is an address translation, taken as
  /// part of cpu.post_wr.
  bool iommu = false;
  double post_wr_ns = 0;           ///< ib_post_send/ib_post_recv of one WR in the kernel (mlx4_ib), without
                                   ///< the doorbell/BlueFlame stores (model/mmio.h charges those)
  double user_post_ns = 0;         ///< ibv_post_send of one WR in user space (libmlx4), without the MMIO stores
  double user_poll_cq_ns = 0;      ///< ibv_poll_cq finding one CQE in user space (libmlx4)
  double poll_miss_ns = 0;         ///< one turn of a loop polling a cache line a device writes (a miss), ns
  double cqe_ns = 0;               ///< poll one CQE and run SDP's handler for it
  double interrupt_ns = 0;         ///< MSI-X interrupt entry, mlx4 EQ handler, exit
  double wakeup_ns = 0;            ///< try_to_wake_up on the waker's core
  double context_switch_ns = 0;    ///< schedule() to the woken thread, on its core
  double timer_hz = 0;             ///< periodic timer ticks per second per core
  double timer_tick_ns = 0;        ///< cost of one timer tick

  /// Reads the [cpu] and [host] sections. The DMA mapping: with host.iommu on, through the
  /// IOMMU ([netstack] iommu_map, fmr_map, iommu_page: model/netstack.h), at fmr_map per IOMMU
  /// page with hca.fmr on and iommu_map without (the mechanism the IPoIB path charges too);
  /// without, cpu.dma_map_page per host.page_size page. Throws InputError on a missing or
  /// invalid value.
  static CpuCosts from_platform(const Platform& p);
  /// ns to map and unmap a buffer of `bytes` for one I/O: whole pages of dma_map_page_bytes
  /// x dma_map_ns_per_page (0 for 0 bytes).
  double dma_map_ns(uint64_t bytes) const {
    const double pages = std::ceil(static_cast<double>(bytes) / dma_map_page_bytes);
    return pages * dma_map_ns_per_page;
  }
  /// ns to map and unmap a buffer of `bytes` that a post hands the HCA (sdp_post_send's and
  /// sdp_post_recv's ib_dma_map_*): dma_map_ns with an IOMMU, 0 without.
  double post_map_ns(uint64_t bytes) const { return iommu ? dma_map_ns(bytes) : 0.0; }
  /// ns to copy `bytes` into a kernel buffer (sender side) when a fraction `hot` (0..1) of
  /// the source is in the cache.
  double copy_tx_ns(uint64_t bytes, double hot = 0) const {
    const double b = static_cast<double>(bytes);
    return b * hot / copy_tx_hot_bytes_per_ns + b * (1 - hot) / copy_tx_bytes_per_ns;
  }
  /// ns to copy `bytes` out of a DMA-written buffer (receiver side).
  double copy_rx_ns(uint64_t bytes) const { return static_cast<double>(bytes) / copy_rx_bytes_per_ns; }
};

/// Busy time of one core by activity, ns, and how often the core paid the scheduler's costs.
struct CoreAccount {
  std::array<double, kActivityCount> busy_ns{};
  uint64_t wakeups = 0;           ///< try_to_wake_up of a sleeper (cpu.wakeup each), in Activity::Wakeup
  uint64_t ipis = 0;              ///< of those, to a sleeper on another core (cpu.ipi each)
  uint64_t context_switches = 0;  ///< a sleeper resumed on this core (cpu.context_switch each)
  double total_ns() const;
};

/// Service demand as netperf computes it (netperf 2.4 netlib.c calc_service_demand): us of CPU
/// per KB (1024 B) = util_pct/100 x cpus x 1e6 / (bytes / 1024 / elapsed_s). 0 when nothing
/// moved.
double service_demand_us_per_kb(double util_pct, int cpus, uint64_t bytes, double elapsed_s);

/// System-wide CPU utilisation in percent over `elapsed_ns` of `cores`, as netperf measures
/// it on Linux from /proc/stat (busy time of all CPUs / (CPUs x elapsed)).
double utilisation_pct(const std::vector<CoreAccount>& cores, double elapsed_ns);

}  // namespace hcasim::model
