#include "model/interrupt.h"

#include <fmt/format.h>

#include "model/error.h"
#include "model/platform.h"
#include "model/topology.h"

namespace hcasim::model {

IrqConfig IrqConfig::from_platform(const Platform& p, int cpus) {
  IrqConfig c;
  const Param& a = p.param("irq.affinity");
  const auto* i = std::get_if<int64_t>(&a.value);
  const std::string list = i ? std::to_string(*i) : p.str("irq.affinity");
  try {
    c.affinity = parse_cpu_list(list, cpus);
  } catch (const InputError& e) {
    p.fail("irq.affinity", e.what());
  }
  c.msi_x = p.flag("hca.msi_x");
  c.intx_ack_ns = p.nonneg("cpu.intx_ack", "ns");
  const int64_t n = p.integer("hca.cq_moderation_count", "");
  if (n < 0 || n > 65535) p.fail("hca.cq_moderation_count", fmt::format("{} must be 0..65535", n));
  c.moderation_count = static_cast<uint32_t>(n);
  const double period_us = p.nonneg("hca.cq_moderation_period", "us");
  // mlx4's CQ context holds cq_period as a 16-bit count of us (Mellanox PRM, CQ context).
  if (period_us > 65535) p.fail("hca.cq_moderation_period", fmt::format("{} us must be 0..65535", period_us));
  c.moderation_period_ns = period_us * 1e3;
  return c;
}

EventModerator::Decision EventModerator::on_cqe(double now_ns) {
  if (count_ <= 1 || period_ns_ <= 0) {
    reset();
    return Decision::Fire;
  }
  if (!open_) {
    open_ = true;
    seen_ = 0;
    deadline_ns_ = now_ns + period_ns_;
  }
  if (++seen_ >= count_) {
    reset();
    return Decision::Fire;
  }
  return seen_ == 1 ? Decision::Wait : Decision::Pending;
}

bool EventModerator::on_deadline(uint64_t w) {
  if (!open_ || w != window_) return false;
  reset();
  return true;
}

}  // namespace hcasim::model
