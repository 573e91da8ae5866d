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
  c.cpus = static_cast<int>(p.u32("host.cpus"));
  c.syscall_ns = p.cost_ns("cpu.syscall");
  c.sendmsg_ns = p.cost_ns("cpu.sendmsg");
  c.skb_ns = p.cost_ns("cpu.skb");
  c.copy_tx_bytes_per_ns = p.rate_per_ns("cpu.copy_tx_rate");
  c.copy_rx_bytes_per_ns = p.rate_per_ns("cpu.copy_rx_rate");
  c.copy_tx_hot_bytes_per_ns = p.rate_per_ns("cpu.copy_tx_hot_rate");
  c.copy_src_cache_bytes = p.num("cpu.copy_src_cache");
  c.ipi_ns = p.cost_ns("cpu.ipi");
  c.bzcopy_setup_ns = p.cost_ns("cpu.bzcopy_setup");
  c.pin_ns_per_page = p.cost_ns("cpu.pin_page");
  c.iommu = p.flag("host.iommu");
  if (c.iommu) {
    const NetstackCosts net = NetstackCosts::from_platform(p);
    c.dma_map_ns_per_page = net.fmr ? net.fmr_map_ns : net.iommu_map_ns;
    c.dma_map_page_bytes = net.iommu_page_bytes;
  } else {
    c.dma_map_ns_per_page = p.cost_ns("cpu.dma_map_page");
    c.dma_map_page_bytes = static_cast<double>(p.u32("host.page_size"));
  }
  c.post_wr_ns = p.cost_ns("cpu.post_wr");
  c.user_post_ns = p.cost_ns("cpu.user_post");
  c.user_poll_cq_ns = p.cost_ns("cpu.user_poll_cq");
  c.poll_miss_ns = p.cost_ns("cpu.poll_miss");
  c.cqe_ns = p.cost_ns("cpu.cqe");
  c.interrupt_ns = p.cost_ns("cpu.interrupt");
  c.wakeup_ns = p.cost_ns("cpu.wakeup");
  c.context_switch_ns = p.cost_ns("cpu.context_switch");
  c.timer_hz = p.num("host.timer_hz");
  c.timer_tick_ns = p.cost_ns("cpu.timer_tick");
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

namespace hcasim::model::schema {
namespace {
using namespace decl;
constexpr ParamSpec kCpu[] = {
    integer("host.cpus", "", 1, 1024, "logical CPUs of the host (1024: the bound of every CPU count and list)"),
    {.key = "host.clock", .unit = "GHz", .type = ParamType::Number, .lo = 0.01, .hi = 10,
     .doc = "core clock: converts the work costs (cycles, B/cycle) to ns, and perftest's cycle counts "
            "(0.01..10: a clock given in Hz or MHz is an error, not a slow core)"},
    power_of_two("host.page_size", "B", 512, 2097152,
                 "base page for pinning and DMA mapping (512 B, the smallest MMU page, .. 2 MiB, an x86 large page)"),
    nonneg("host.timer_hz", "Hz",
           "timer interrupts per second per CPU (CONFIG_HZ); x cpu.timer_tick must leave time to run"),
    flag("host.iommu", "DMA goes through an IOMMU, the HP zx1's sba_iommu (then the netstack.iommu_* keys give the "
                       "mapping cost; the IPoIB profile names it sba_map_single, x86_64's nommu_map_single when off)"),
    integer("host.default_app_cpu", "", 0, 1023, "CPU of netperf/netserver without -T; must be below host.cpus"),
    work("cpu.syscall", "cycles", "entry and exit of one system call (lmbench lat_syscall null)"),
    work("cpu.sendmsg", "cycles", "SDP's per-call work in sdp_sendmsg/sdp_recvmsg"),
    work("cpu.skb", "cycles", "allocating and freeing one skb and its page"),
    stall("cpu.copy_tx_rate", "B/ns", "copy_from_user into SDP buffers (cold kernel pages)"),
    stall("cpu.copy_rx_rate", "B/ns", "copy_to_user out of DMA-written, cache-cold SDP buffers"),
    work("cpu.copy_tx_hot_rate", "B/cycle", "copy_from_user of a source still in the cache (model/cache.h)"),
    nonneg("cpu.copy_src_cache", "B", "cache that holds the sender's source buffer between sends (model/cache.h)"),
    stall("cpu.ipi", "ns", "sending a reschedule IPI to wake a thread on another core"),
    work("cpu.bzcopy_setup", "cycles", "per bzcopy (zero-copy) send: sdp_bz_setup and sdp_bz_cleanup"),
    work("cpu.pin_page", "cycles/page", "get_user_pages + put_page per page of a zero-copy send"),
    work("cpu.dma_map_page", "cycles/page", "dma_map_page without an IOMMU (a translation)", ParamWhen::NoIommu),
    work("cpu.post_wr", "cycles", "building one WQE in the kernel (mlx4_ib_post_send/recv), without the doorbell store"),
    work("cpu.user_post", "cycles", "building one WQE in user space (libmlx4 mlx4_post_send)"),
    work("cpu.user_poll_cq", "cycles", "polling one CQE in user space (libmlx4 mlx4_poll_cq)"),
    [] {
      ParamSpec s = positive("cpu.poll_miss", "ns",
                             "one turn of a loop polling a line the HCA writes: a miss to memory (> 0: the loop must advance time)");
      s.kind = CostKind::Stall;
      return s;
    }(),
    work("cpu.cqe", "cycles", "handling one CQE in the kernel (mlx4_ib_poll_cq plus SDP's completion work)"),
    work("cpu.interrupt", "cycles", "the HCA's interrupt: entry, EQ handling, SDP's work scheduling, exit"),
    work("cpu.wakeup", "cycles", "try_to_wake_up of a sleeping thread"),
    work("cpu.context_switch", "cycles", "one context switch (lmbench lat_ctx)"),
    work("cpu.timer_tick", "cycles", "one timer interrupt per CPU (do_timer, scheduler_tick)"),
};
}  // namespace
std::span<const ParamSpec> cpu() { return kCpu; }
}  // namespace hcasim::model::schema
