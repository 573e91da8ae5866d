#include "model/interrupt.h"

#include <fmt/format.h>

#include "model/error.h"
#include "model/platform.h"
#include "model/topology.h"

namespace hcasim::model {

IrqConfig IrqConfig::from_platform(const Platform& p, int cpus) {
  IrqConfig c;
  const Param& a = p.read("irq.affinity");
  const auto* i = std::get_if<int64_t>(&a.value);
  const std::string list = i ? std::to_string(*i) : p.str("irq.affinity");
  try {
    c.affinity = parse_cpu_list(list, cpus);
  } catch (const InputError& e) {
    p.fail("irq.affinity", e.what());
  }
  c.msi_x = p.flag("hca.msi_x");
  c.intx_ack_ns = p.cost_ns("cpu.intx_ack");
  c.moderation_count = p.u32("hca.cq_moderation_count");
  c.moderation_period_ns = p.num("hca.cq_moderation_period") * 1e3;
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

namespace hcasim::model::schema {
namespace {
using namespace decl;
constexpr ParamSpec kInterrupt[] = {
    text("irq.affinity", "CPUs the HCA's interrupt goes to, a Linux CPU list (\"0\", \"0-3,6\"; an integer too)"),
    flag("hca.msi_x", "the HCA signals by MSI-X; off: a legacy line interrupt, acknowledged with cpu.intx_ack"),
    stall("cpu.intx_ack", "ns", "acknowledging a line interrupt by MMIO (a clear write and a flushing read)"),
    integer("hca.cq_moderation_count", "", 0, 65535,
            "CQEs per event under CQ moderation, 0 or 1: none (a 16-bit field of the mlx4 CQ context)"),
    {.key = "hca.cq_moderation_period", .unit = "us", .type = ParamType::Number, .lo = 0, .hi = 65535,
     .doc = "longest wait for cq_moderation_count CQEs, 0: none (mlx4 CQ context cq_period, a 16-bit count of us)"},
};
}  // namespace
std::span<const ParamSpec> interrupt() { return kInterrupt; }
}  // namespace hcasim::model::schema
