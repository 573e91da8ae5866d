#include "model/bus.h"

#include <algorithm>

#include <fmt/format.h>

#include "model/error.h"
#include "model/mmio.h"
#include "model/platform.h"

namespace hcasim::model {

bool HostBus::is_pcix_platform(const Platform& p) { return p.has("pcix.clock_mhz"); }

const char* HostBus::latency_key(const Platform& p, Latency which) {
  const bool pcix = is_pcix_platform(p);
  switch (which) {
    case Latency::DmaRead: return pcix ? "pcix.split_completion_latency_ns" : "pcie.dma_read_rtt";
    case Latency::PostedWrite: return pcix ? "pcix.posted_write_latency" : "pcie.posted_write_latency";
    case Latency::MmioWrite: return pcix ? "pcix.mmio_write_latency" : "pcie.mmio_write_latency";
  }
  return "";
}

HostBus HostBus::from_platform(const Platform& p) {
  HostBus b;
  // Each key's domain (a power of two in 128..4096, one of 66, 100 or 133, ...) is its schema
  // entry's (model/pcie.cpp, model/pcix.cpp), checked on the read before narrowing; pcie::validate
  // and pcix::validate then check the fields against each other (completion_size within
  // read_completion_boundary..max_payload) and name the key's FILE:LINE or --set.
  auto count = [&](const char* key) { return static_cast<int>(p.u32(key)); };
  if (is_pcix_platform(p)) {
    if (p.has("pcie.gen"))
      p.fail("pcix.clock_mhz", "the platform declares both a PCI-X bus and a PCIe link (pcie.gen); its HCA sits on one");
    b.kind = Kind::Pcix;
    pcix::Config& c = b.pcix;
    c.clock_mhz = count("pcix.clock_mhz");
    c.width_bits = count("pcix.width_bits");
    c.max_memory_read_byte_count = count("pcix.max_memory_read_byte_count");
    c.max_outstanding_split = count("pcix.max_outstanding_split");
    c.write_burst = count("pcix.write_burst");
    c.write_disconnect_size = count("pcix.write_disconnect_size");
    c.split_completion_size = count("pcix.split_completion_size");
    c.dual_address_cycle = p.flag("pcix.dual_address_cycle");
    c.host_decode_clocks = count("pcix.host_decode_clocks");
    c.device_decode_clocks = count("pcix.device_decode_clocks");
    c.target_wait_states = count("pcix.target_wait_states");
    c.idle_clocks = count("pcix.idle_clocks");
    c.arbitration_clocks = count("pcix.arbitration_clocks");
    c.split_completion_latency_ns = p.num("pcix.split_completion_latency_ns");
    try {
      pcix::validate(c);  // its messages name the field, which is the platform key
    } catch (const InputError& e) {
      p.fail_from(e);
    }
    return b;
  }
  pcie::Config& c = b.pcie;
  c.gen = count("pcie.gen");
  c.lanes = count("pcie.lanes");
  c.max_payload = count("pcie.max_payload");
  c.max_read_request = count("pcie.max_read_request");
  c.read_completion_boundary = count("pcie.read_completion_boundary");
  c.completion_size = count("pcie.completion_size");
  c.addr64 = p.flag("pcie.addr64");
  try {
    pcie::validate(c);  // as pcix::validate
  } catch (const InputError& e) {
    p.fail_from(e);
  }
  return b;
}

std::string HostBus::describe() const {
  if (is_pcix()) return fmt::format("PCI-X {} MHz {}-bit", pcix.clock_mhz, pcix.width_bits);
  return fmt::format("PCIe gen{} x{}", pcie.gen, pcie.lanes);
}

double HostBus::dma_read_ns(uint64_t bytes) const {
  if (is_pcix()) return pcix::bus_time_ns(pcix, pcix::dma_read(pcix, 0, bytes).clocks());
  return mmio::link_ns(pcie, pcie::dma_read(pcie, 0, bytes).completions.wire_bytes);
}

double HostBus::dma_write_ns(uint64_t bytes) const {
  if (is_pcix()) return pcix::bus_time_ns(pcix, pcix::dma_write(pcix, 0, bytes).clocks);
  return mmio::link_ns(pcie, pcie::dma_write(pcie, 0, bytes).wire_bytes);
}

double HostBus::mmio_store_ns(uint32_t bytes) const {
  if (is_pcix()) return pcix::bus_time_ns(pcix, pcix::write_transaction_clocks(pcix, 0, bytes));
  return mmio::link_ns(pcie, pcie::tlp_wire_bytes(pcie::TlpType::MWr, bytes, pcie));
}

double HostBus::dma_read_ceiling_gbps() const {
  return is_pcix() ? pcix::dma_read_ceiling_gbps(pcix) : pcie::dma_read_ceiling_gbps(pcie);
}

double HostBus::dma_write_ceiling_gbps() const {
  return is_pcix() ? pcix::dma_write_ceiling_gbps(pcix) : pcie::dma_write_ceiling_gbps(pcie);
}

double HostBus::dma_read_latency_bound_gbps(double rtt_ns, int max_outstanding_reads) const {
  if (is_pcix()) return pcix::dma_read_latency_bound_gbps(pcix);
  return pcie::dma_read_latency_bound_gbps(pcie, rtt_ns, max_outstanding_reads);
}

double HostBus::dma_read_wait_ns(uint64_t bytes, double rtt_ns) const {
  if (!is_pcix()) return rtt_ns;
  const uint64_t m = pcix.max_memory_read_byte_count;
  const uint64_t outstanding = static_cast<uint64_t>(pcix.max_outstanding_split);
  const uint64_t requests = (bytes + m - 1) / m;
  const uint64_t rounds = std::max<uint64_t>((requests + outstanding - 1) / outstanding, 1);
  return static_cast<double>(rounds) * pcix.split_completion_latency_ns;
}

}  // namespace hcasim::model
