#include "model/cpu.h"

#include "model/netstack.h"

#include <fmt/format.h>

#include "model/error.h"
#include "model/platform.h"

namespace hcasim::model {

std::string_view activity_name(Activity a) {
  switch (a) {
    case Activity::Syscall: return "syscall";
    case Activity::Copy: return "copy";
    case Activity::Pin: return "pin";
    case Activity::Post: return "post";
    case Activity::Completion: return "completion";
    case Activity::Poll: return "poll";
    case Activity::Interrupt: return "interrupt";
    case Activity::Wakeup: return "wakeup";
    case Activity::Timer: return "timer";
    case Activity::Coherence: return "coherence";
    case Activity::Count_: break;
  }
  return "?";
}


CpuCosts CpuCosts::from_platform(const Platform& p) {
  CpuCosts c;
  c.cpus = static_cast<int>(p.u32("host.cpus", "", 1, 1024));
  c.syscall_ns = p.nonneg("cpu.syscall", "ns");
  c.sendmsg_ns = p.nonneg("cpu.sendmsg", "ns");
  c.skb_ns = p.nonneg("cpu.skb", "ns");
  c.copy_tx_bytes_per_ns = p.positive("cpu.copy_tx_rate", "B/ns");
  c.copy_rx_bytes_per_ns = p.positive("cpu.copy_rx_rate", "B/ns");
  c.copy_tx_hot_bytes_per_ns = p.positive("cpu.copy_tx_hot_rate", "B/ns");
  c.copy_src_cache_bytes = p.nonneg("cpu.copy_src_cache", "B");
  c.ipi_ns = p.nonneg("cpu.ipi", "ns");
  c.bzcopy_setup_ns = p.nonneg("cpu.bzcopy_setup", "ns");
  c.pin_ns_per_page = p.nonneg("cpu.pin_page", "ns/page");
  c.iommu = p.flag("host.iommu");
  if (c.iommu) {
    const NetstackCosts net = NetstackCosts::from_platform(p);
    c.dma_map_ns_per_page = net.fmr ? net.fmr_map_ns : net.iommu_map_ns;
    c.dma_map_page_bytes = net.iommu_page_bytes;
  } else {
    c.dma_map_ns_per_page = p.nonneg("cpu.dma_map_page", "ns/page");
    c.dma_map_page_bytes = static_cast<double>(p.u32("host.page_size", "B", 512, 1u << 21));
  }
  c.post_wr_ns = p.nonneg("cpu.post_wr", "ns");
  c.user_post_ns = p.nonneg("cpu.user_post", "ns");
  c.user_poll_cq_ns = p.nonneg("cpu.user_poll_cq", "ns");
  c.poll_miss_ns = p.positive("cpu.poll_miss", "ns");
  c.cqe_ns = p.nonneg("cpu.cqe", "ns");
  c.interrupt_ns = p.nonneg("cpu.interrupt", "ns");
  c.wakeup_ns = p.nonneg("cpu.wakeup", "ns");
  c.context_switch_ns = p.nonneg("cpu.context_switch", "ns");
  c.timer_hz = p.nonneg("host.timer_hz", "Hz");
  c.timer_tick_ns = p.nonneg("cpu.timer_tick", "ns");
  if (c.timer_hz * c.timer_tick_ns >= 1e9)
    throw InputError(fmt::format("platform {}: host.timer_hz x cpu.timer_tick = {} ns per s leaves no time to run",
                                 p.name(), c.timer_hz * c.timer_tick_ns));
  return c;
}

double CoreAccount::total_ns() const {
  double t = 0;
  for (double v : busy_ns) t += v;
  return t;
}

double service_demand_us_per_kb(double util_pct, int cpus, uint64_t bytes, double elapsed_s) {
  if (bytes == 0 || elapsed_s <= 0) return 0;
  const double kb_per_s = static_cast<double>(bytes) / 1024.0 / elapsed_s;
  return util_pct / 100.0 * cpus * 1e6 / kb_per_s;
}

double utilisation_pct(const std::vector<CoreAccount>& cores, double elapsed_ns) {
  if (cores.empty() || elapsed_ns <= 0) return 0;
  double busy = 0;
  for (const auto& c : cores) busy += c.total_ns();
  return 100.0 * busy / (elapsed_ns * static_cast<double>(cores.size()));
}

}  // namespace hcasim::model
