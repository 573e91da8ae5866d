#include "model/mmio.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "model/platform.h"

namespace hcasim::model::mmio {

namespace {
constexpr uint32_t kWcLineBytes = 64;  // WC buffer = one cache line (Intel SDM vol. 3 11.3.1)
}  // namespace

Config Config::from_platform(const Platform& p) {
  Config c;
  c.write_combining = p.flag("host.write_combining");
  c.wc_store_ns = p.cost_ns("cpu.wc_store");
  c.wc_flush_ns = p.cost_ns("cpu.wc_flush");
  c.uc_store_ns = p.cost_ns("cpu.uc_store");
  c.latency_ns = p.num(HostBus::latency_key(p, HostBus::Latency::MmioWrite));
  return c;
}

double link_ns(const pcie::Config& link, uint64_t wire_bytes) {
  return static_cast<double>(wire_bytes) * 8.0 / pcie::link_data_rate_gbps(link) / pcie::skip_efficiency(link);
}

CopyTiming copy_to_device(const Config& cfg, const pcie::Config& link, uint32_t bytes, uint32_t needed,
                          uint32_t store_bytes, bool uncached) {
  if (bytes == 0 || store_bytes == 0 || bytes % store_bytes != 0 || needed > bytes)
    throw std::invalid_argument(fmt::format("mmio::copy_to_device: {} B in {} B stores, {} needed", bytes,
                                            store_bytes, needed));
  const bool wc = cfg.write_combining && !uncached;
  CopyTiming t;
  t.stores = bytes / store_bytes;
  t.tlp_payload = wc ? kWcLineBytes : store_bytes;
  t.tlps = (bytes + t.tlp_payload - 1) / t.tlp_payload;
  const uint32_t stores_per_tlp = t.tlp_payload / store_bytes;
  const uint32_t needed_tlps = std::max<uint32_t>(1, (needed + t.tlp_payload - 1) / t.tlp_payload);
  const double per_store = wc ? cfg.wc_store_ns : cfg.uc_store_ns;
  double link_free = 0;
  for (uint32_t j = 0; j < needed_tlps; ++j) {
    const uint32_t payload = std::min(t.tlp_payload, bytes - j * t.tlp_payload);
    const double leaves = static_cast<double>((j + 1) * stores_per_tlp) * per_store;
    const double start = std::max(leaves, link_free);
    link_free = start + link_ns(link, pcie::tlp_wire_bytes(pcie::TlpType::MWr, payload, link));
  }
  t.ready_ns = link_free + cfg.latency_ns;
  for (uint32_t j = 0; j < t.tlps; ++j)
    t.wire_bytes += pcie::tlp_wire_bytes(pcie::TlpType::MWr, std::min(t.tlp_payload, bytes - j * t.tlp_payload), link);
  t.bus_ns = link_ns(link, t.wire_bytes);
  t.cpu_ns = static_cast<double>(t.stores) * per_store + (wc ? cfg.wc_flush_ns : 0.0);
  return t;
}

CopyTiming doorbell(const Config& cfg, const pcie::Config& link) {
  return copy_to_device(cfg, link, 4, 4, 4, /*uncached=*/true);
}

CopyTiming doorbell(const Config& cfg, const HostBus& bus) {
  if (!bus.is_pcix()) return doorbell(cfg, bus.pcie);
  CopyTiming t;
  t.stores = 1;
  t.tlps = 1;
  t.tlp_payload = 4;
  t.bus_ns = bus.mmio_store_ns(4);
  t.cpu_ns = cfg.uc_store_ns;
  t.ready_ns = cfg.uc_store_ns + t.bus_ns + cfg.latency_ns;
  return t;
}

}  // namespace hcasim::model::mmio

namespace hcasim::model::schema {
namespace {
using namespace decl;
constexpr ParamSpec kMmio[] = {
    flag("host.write_combining", "the BlueFlame page is mapped write-combining (x86 PAT); off: uncached stores"),
    work("cpu.wc_store", "cycles", "one 8 B store into a write-combining buffer"),
    stall("cpu.wc_flush", "ns", "sfence draining the write-combining buffers"),
    stall("cpu.uc_store", "ns", "the core's stall on one uncached MMIO store (a UAR doorbell)"),
};
}  // namespace
std::span<const ParamSpec> mmio() { return kMmio; }
}  // namespace hcasim::model::schema
