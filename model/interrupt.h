#pragma once
/// \file Interrupts from the HCA: how they are signalled (MSI-X or legacy INTx), which CPU
/// takes them (the IRQ's affinity), and completion-event moderation.
///
/// Linux delivers a device interrupt to one CPU of its affinity mask (/proc/irq/N/
/// smp_affinity_list); with x86 physical destination mode that is the first CPU of the mask
/// (Linux 2.6 cpu_mask_to_apicid), and irqbalance off keeps it there, as seed 002 runs.
#include <cstdint>
#include <vector>

namespace hcasim::model {

class Platform;

/// Interrupt configuration of one host and its HCA.
struct IrqConfig {
  std::vector<int> affinity;   ///< irq.affinity: the CPUs allowed to take the HCA's interrupts
  bool msi_x = true;           ///< hca.msi_x: MSI-X vectors (true) or the legacy INTx line
  double intx_ack_ns = 0;      ///< cpu.intx_ack: INTx only, the handler's extra MMIO work to
                               ///< acknowledge and deassert the line, ns
  uint32_t moderation_count = 0;     ///< hca.cq_moderation_count: CQEs per event (0/1 = every)
  double moderation_period_ns = 0;   ///< hca.cq_moderation_period: longest wait, ns (0 = none)

  /// Reads irq.affinity (a CPU list, model/topology.h parse_cpu_list, or an integer), hca.msi_x,
  /// cpu.intx_ack, hca.cq_moderation_count and hca.cq_moderation_period (us). Throws InputError
  /// naming the key on a bad value or a CPU >= cpus.
  static IrqConfig from_platform(const Platform& p, int cpus);
  /// The CPU that takes the interrupts: the first of the affinity list.
  int target_cpu() const { return affinity.front(); }
  /// CPU time of one interrupt's entry, EQ handling and exit, ns: `msi_x_ns` (cpu.interrupt,
  /// the MSI-X path) plus intx_ack_ns without MSI-X.
  double handler_ns(double msi_x_ns) const { return msi_x ? msi_x_ns : msi_x_ns + intx_ack_ns; }
};

/// Completion-event moderation of one CQ (mlx4 CQ moderation, Mellanox PRM "CQ moderation":
/// after arming, the event is generated when `count` CQEs have arrived or `period` has passed
/// since the first of them, whichever comes first; count <= 1 or period 0 = an event at the
/// first CQE). Pure state: the caller schedules the deadline and asks again when it comes.
class EventModerator {
 public:
  EventModerator(uint32_t count, double period_ns) : count_(count), period_ns_(period_ns) {}

  enum class Decision { Fire, Wait, Pending };
  /// A CQE arrived on the armed CQ at `now_ns`. Fire: generate the event now (the window
  /// closes). Wait: the first CQE of a window; call on_deadline(window()) at deadline_ns().
  /// Pending: a window is open and its count is not reached yet.
  Decision on_cqe(double now_ns);
  /// The deadline of window `w` came: true when that window is still open (fire it now; the
  /// window closes), false when it already fired on its count.
  bool on_deadline(uint64_t w);
  /// Closes any open window (the CQ was re-armed or the event fired otherwise).
  void reset() { open_ = false; ++window_; }
  uint64_t window() const { return window_; }
  double deadline_ns() const { return deadline_ns_; }

 private:
  uint32_t count_;
  double period_ns_;
  bool open_ = false;
  uint32_t seen_ = 0;
  uint64_t window_ = 0;
  double deadline_ns_ = 0;
};

}  // namespace hcasim::model
