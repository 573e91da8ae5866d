#pragma once
/// \file The HCA's host I/O bus, PCIe link or PCI-X segment, as the HCA's DMA and the CPU's
/// MMIO see it: bus busy time of one transfer and the closed-form ceilings of long DMA
/// streams, from model/pcie.h's byte accounting or model/pcix.h's clock accounting. Plain
/// C++, no SimGrid. Units: bytes (B), ns, Gbit/s (10^9 bit/s of payload).
#include <cstdint>
#include <string>

#include "model/pcie.h"
#include "model/pcix.h"

namespace hcasim::model {

class Platform;

/// One host's I/O bus. A PCIe link is full duplex: DMA reads load its host->device direction
/// (the CplDs) and DMA writes its device->host direction. A PCI-X segment is half duplex and
/// shared (model/pcix.h): reads, writes and MMIO all take the same bus clocks.
struct HostBus {
  enum class Kind { Pcie, Pcix };
  Kind kind = Kind::Pcie;
  pcie::Config pcie;  ///< when kind == Pcie
  pcix::Config pcix;  ///< when kind == Pcix

  /// Reads [pcix] when the platform has pcix.clock_mhz, else [pcie] (the keys are
  /// pcie::Config's and pcix::Config's fields; PCI-X's split latency is
  /// pcix.split_completion_latency_ns). Throws InputError naming the platform and key of a
  /// missing or bad value, and of a platform with both a [pcie] and a [pcix] bus.
  static HostBus from_platform(const Platform& p);
  /// True when the platform's HCA sits on PCI-X (pcix.clock_mhz present).
  static bool is_pcix_platform(const Platform& p);

  /// A latency of the bus, ns, whose platform key depends on the bus type.
  enum class Latency {
    DmaRead,      ///< request -> first data: pcie.dma_read_rtt (MRd -> CplD) or
                  ///< pcix.split_completion_latency_ns (Memory Read Block -> split completion)
    PostedWrite,  ///< the HCA's write (CQE, EQE, data) -> in host memory:
                  ///< pcie.posted_write_latency or pcix.posted_write_latency
    MmioWrite,    ///< a CPU store -> at the device: pcie.mmio_write_latency or pcix.mmio_write_latency
  };
  /// The platform key of `which` on `p`'s bus (is_pcix_platform picks the section).
  static const char* latency_key(const Platform& p, Latency which);

  bool is_pcix() const { return kind == Kind::Pcix; }
  /// "PCIe gen1 x8" or "PCI-X 133 MHz 64-bit", for messages.
  std::string describe() const;
  /// Bus busy time of the data of a DMA read of `bytes` at an aligned address, ns. PCIe: the
  /// CplDs on the host->device direction (pcie::dma_read, mmio::link_ns); PCI-X: the Memory
  /// Read Block requests and their split completions (pcix::dma_read, pcix::bus_time_ns).
  double dma_read_ns(uint64_t bytes) const;
  /// Bus busy time of a DMA write of `bytes` at an aligned address, ns: the MWrs on the
  /// device->host direction (PCIe), the burst write transactions (PCI-X).
  double dma_write_ns(uint64_t bytes) const;
  /// Bus busy time of one uncached CPU store of `bytes` (1..8) to the device, ns: one MWr
  /// (PCIe), one memory write transaction by the host bridge (PCI-X, charged as
  /// pcix::write_transaction_clocks: the device's decode time stands in for the bridge's).
  double mmio_store_ns(uint32_t bytes) const;
  /// Payload ceilings of long one-way streams, Gbit/s (pcie:: / pcix:: dma_*_ceiling_gbps).
  double dma_read_ceiling_gbps() const;
  double dma_write_ceiling_gbps() const;
  /// Latency bound of DMA reads, Gbit/s. PCIe: `max_outstanding_reads` requests of MRRS
  /// bytes per `rtt_ns` (pcie::dma_read_latency_bound_gbps); PCI-X: the Command register's
  /// outstanding split transactions of MMRBC bytes per split latency
  /// (pcix::dma_read_latency_bound_gbps; the arguments are not used).
  double dma_read_latency_bound_gbps(double rtt_ns, int max_outstanding_reads) const;
  /// Wait of one DMA read of `bytes` beyond its bus busy time, ns. PCIe: `rtt_ns`, the MRd ->
  /// first CplD latency (the MRRS requests are issued back to back and their round trips
  /// overlap). PCI-X: one pcix.split_completion_latency_ns per round of max_outstanding_split
  /// Memory Read Block requests of MMRBC bytes (the Command register's limits, model/pcix.h
  /// Config; `rtt_ns` is not used), at least one round.
  double dma_read_wait_ns(uint64_t bytes, double rtt_ns) const;
};

}  // namespace hcasim::model
