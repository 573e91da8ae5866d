#pragma once
/// \file MMIO stores from the CPU to a device page (the UAR doorbell, the BlueFlame register):
/// how many PCIe MWr TLPs a copy becomes, how long the CPU is busy, and when the device holds
/// the bytes it needs. Plain C++, no SimGrid.
///
/// Mechanism (docs/design.md "Facts"; Intel SDM vol. 3 ch. 11.3 memory types; seed 001, the mlx4
/// "disable BF when write combining is not available" thread):
///  - write-combining (WC) mapping: stores fill a 64 B WC buffer at core speed; a full buffer
///    leaves as one 64 B MWr; the sfence after the copy (mmio_flush_writes) drains the rest.
///  - uncached (UC) mapping: every store is its own MWr carrying the store's bytes, and the
///    core issues the next store only after the previous one left (UC stores are strongly
///    ordered and not buffered), so the CPU stalls for each.
/// TLPs then queue on the host -> device link (serialised at its data rate) and reach the
/// device after the posted-write latency.
#include <cstdint>

#include "model/bus.h"
#include "model/pcie.h"

namespace hcasim::model {
class Platform;
}

namespace hcasim::model::mmio {

/// How the host maps a device page and what its stores cost.
struct Config {
  bool write_combining = true;  ///< host.write_combining: WC mapping of the BlueFlame page
  double wc_store_ns = 0;       ///< cpu.wc_store: one 8 B store into a WC buffer, ns
  double wc_flush_ns = 0;       ///< cpu.wc_flush: the sfence that drains the WC buffers, ns
  double uc_store_ns = 0;       ///< cpu.uc_store: one uncached store until it leaves the core, ns
  /// pcie.mmio_write_latency (pcix.mmio_write_latency on a PCI-X platform): the store leaves
  /// the CPU -> at the device, ns
  double latency_ns = 0;

  /// Reads host.write_combining, cpu.wc_store, cpu.wc_flush, cpu.uc_store and the bus's
  /// MmioWrite latency (HostBus::latency_key: pcie.* or pcix.*; ns, >= 0). Throws InputError
  /// on a missing or negative value.
  static Config from_platform(const Platform& p);
};

/// What one copy of `bytes` to a device page costs.
struct CopyTiming {
  uint32_t stores = 0;      ///< CPU stores of store_bytes each
  uint32_t tlps = 0;        ///< MWr TLPs on the link
  uint32_t tlp_payload = 0; ///< bytes per TLP: 64 (WC) or store_bytes (UC)
  uint64_t wire_bytes = 0;  ///< link bytes of all the TLPs (pcie::tlp_wire_bytes); 0 on PCI-X
  double bus_ns = 0;        ///< bus busy time of all the TLPs (link_ns) or PCI-X write transactions
  double cpu_ns = 0;        ///< CPU busy from the first store until it may go on
  double ready_ns = 0;      ///< from the first store until the device holds the first `needed` bytes
};

/// A copy of `bytes` (a multiple of `store_bytes`, starting 64 B aligned) of which the device
/// needs the first `needed` bytes before it can act (<= bytes; the rest is padding).
/// WC (cfg.write_combining): stores at wc_store_ns each; 64 B line j leaves when its last
/// store is issued; cpu_ns = stores x wc_store + wc_flush. UC: store k leaves at
/// (k + 1) x uc_store; cpu_ns = stores x uc_store. Each TLP starts on the link when it
/// has left and the previous TLP is through, takes tlp_wire_bytes / link rate, and arrives
/// latency_ns later. `uncached` forces UC whatever the mapping (the UAR doorbell page).
/// Throws std::invalid_argument when bytes is 0, not a multiple of store_bytes, or needed > bytes.
CopyTiming copy_to_device(const Config& cfg, const pcie::Config& link, uint32_t bytes, uint32_t needed,
                          uint32_t store_bytes, bool uncached = false);

/// The doorbell: one 4 B uncached store of the QPN to the UAR page (libmlx4
/// mmio_write32_be(uar + MLX4_SEND_DOORBELL)).
CopyTiming doorbell(const Config& cfg, const pcie::Config& link);
/// The doorbell on either bus: as above on PCIe; on PCI-X one uncached 4 B store that the
/// host bridge writes to the device in one transaction (HostBus::mmio_store_ns).
CopyTiming doorbell(const Config& cfg, const HostBus& bus);

/// Host -> device link time of `wire_bytes`, ns: wire_bytes x 8 / link data rate (Gbit/s)
/// / skip_efficiency.
double link_ns(const pcie::Config& link, uint64_t wire_bytes);

}  // namespace hcasim::model::mmio
