#include "model/cpu.h"

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
    case Activity::Count_: break;
  }
  return "?";
}

namespace {
double positive(const Platform& p, const std::string& key, std::string_view unit, bool allow_zero) {
  double v = p.num(key, unit);
  if (!(v > 0) && !(allow_zero && v == 0))
    p.fail(key, fmt::format("{} {} must be {}", v, unit,
                                 allow_zero ? ">= 0" : "> 0"));
  return v;
}
}  // namespace

CpuCosts CpuCosts::from_platform(const Platform& p) {
  CpuCosts c;
  c.cpus = static_cast<int>(p.integer("host.cpus", ""));
  if (c.cpus < 1 || c.cpus > 1024)
    p.fail("host.cpus", fmt::format("{} must be 1..1024", c.cpus));
  c.syscall_ns = positive(p, "cpu.syscall", "ns", true);
  c.sendmsg_ns = positive(p, "cpu.sendmsg", "ns", true);
  c.skb_ns = positive(p, "cpu.skb", "ns", true);
  c.copy_tx_bytes_per_ns = positive(p, "cpu.copy_tx_rate", "B/ns", false);
  c.copy_rx_bytes_per_ns = positive(p, "cpu.copy_rx_rate", "B/ns", false);
  c.bzcopy_setup_ns = positive(p, "cpu.bzcopy_setup", "ns", true);
  c.pin_ns_per_page = positive(p, "cpu.pin_page", "ns/page", true);
  c.dma_map_ns_per_page = positive(p, "cpu.dma_map_page", "ns/page", true);
  c.post_wr_ns = positive(p, "cpu.post_wr", "ns", true);
  c.user_post_ns = positive(p, "cpu.user_post", "ns", true);
  c.user_poll_cq_ns = positive(p, "cpu.user_poll_cq", "ns", true);
  c.poll_miss_ns = positive(p, "cpu.poll_miss", "ns", false);
  c.cqe_ns = positive(p, "cpu.cqe", "ns", true);
  c.interrupt_ns = positive(p, "cpu.interrupt", "ns", true);
  c.wakeup_ns = positive(p, "cpu.wakeup", "ns", true);
  c.context_switch_ns = positive(p, "cpu.context_switch", "ns", true);
  c.timer_hz = positive(p, "host.timer_hz", "Hz", true);
  c.timer_tick_ns = positive(p, "cpu.timer_tick", "ns", true);
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
