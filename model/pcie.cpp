/// \file PCIe byte accounting and ceilings; every formula and constant is sourced in pcie.h.
#include "model/pcie.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "model/error.h"
#include "model/params.h"

namespace hcasim::model::pcie {
namespace {

bool is_pow2_in(uint64_t v, uint64_t lo, uint64_t hi) {
  return v >= lo && v <= hi && (v & (v - 1)) == 0;
}

void check_gen(int gen) {
  if (gen < 1 || gen > 3)
    throw InputError("pcie.gen: " + std::to_string(gen) + " is not 1, 2 or 3");
}

uint64_t align_down(uint64_t x, uint64_t a) { return x / a * a; }
uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

/// Bytes of the whole DWs that cover [a, b): TLP payloads are counted in DWs (spec 2.2.2).
uint64_t dw_span(uint64_t a, uint64_t b) { return align_up(b, 4) - align_down(a, 4); }

/// Number of `block`-aligned blocks that [a, b) touches (b > a).
uint64_t blocks_touched(uint64_t a, uint64_t b, uint64_t block) {
  return (b - 1) / block - a / block + 1;
}

uint64_t checked_end(uint64_t addr, uint64_t len) {
  if (len > UINT64_MAX - addr) throw std::invalid_argument("pcie: addr + len overflows");
  return addr + len;
}

/// Per-TLP bytes outside the payload: framing + header + optional ECRC.
uint32_t tlp_overhead(TlpType t, const Config& cfg) {
  return kTlpFramingBytes + tlp_header_bytes(t, cfg) + (cfg.ecrc ? 4u : 0u);
}

/// AckFactor of the spec's Ack/UpdateFC latency formula (spec 3.5.3.1; see pcie.h).
double ack_factor(uint32_t mps, int lanes) {
  if (mps <= 256) return lanes <= 4 ? 1.4 : lanes == 8 ? 2.5 : 3.0;
  return lanes <= 8 ? 1.0 : 2.0;
}

/// InternalDelay in symbol times: 19 at 2.5 GT/s, 70 at 5.0 GT/s, 115 at 8.0 GT/s.
double internal_delay(int gen) { return gen == 1 ? 19.0 : gen == 2 ? 70.0 : 115.0; }

}  // namespace

void validate(const Config& c) {
  check_gen(c.gen);
  switch (c.lanes) {
    case 1: case 2: case 4: case 8: case 12: case 16: case 32: break;
    default:
      throw InputError("pcie.lanes: " + std::to_string(c.lanes) +
                       " is not one of 1, 2, 4, 8, 12, 16, 32");
  }
  if (!is_pow2_in(c.max_payload, 128, 4096))
    throw InputError("pcie.max_payload: " + std::to_string(c.max_payload) +
                     " is not a power of two in 128..4096");
  if (!is_pow2_in(c.max_read_request, 128, 4096))
    throw InputError("pcie.max_read_request: " + std::to_string(c.max_read_request) +
                     " is not a power of two in 128..4096");
  if (c.read_completion_boundary != 64 && c.read_completion_boundary != 128)
    throw InputError("pcie.read_completion_boundary: " +
                     std::to_string(c.read_completion_boundary) + " is not 64 or 128");
  if (!is_pow2_in(c.completion_size, c.read_completion_boundary, c.max_payload))
    throw InputError("pcie.completion_size: " + std::to_string(c.completion_size) +
                     " is not a power of two in read_completion_boundary..max_payload (" +
                     std::to_string(c.read_completion_boundary) + ".." +
                     std::to_string(c.max_payload) + ")");
}

double transfer_rate_gtps(int gen) {
  check_gen(gen);
  return gen == 1 ? 2.5 : gen == 2 ? 5.0 : 8.0;
}

double encoding_efficiency(int gen) {
  check_gen(gen);
  return gen <= 2 ? 8.0 / 10.0 : 128.0 / 130.0;
}

double link_data_rate_gbps(const Config& c) {
  validate(c);
  return transfer_rate_gtps(c.gen) * encoding_efficiency(c.gen) * c.lanes;
}

uint32_t tlp_header_bytes(TlpType t, const Config& c) {
  switch (t) {
    case TlpType::MWr:
    case TlpType::MRd: return c.addr64 ? 16 : 12;
    case TlpType::CplD:
    case TlpType::Cpl: return 12;
  }
  throw std::invalid_argument("pcie: unknown TlpType");
}

uint32_t tlp_wire_bytes(TlpType t, uint32_t payload, const Config& c) {
  const bool data = t == TlpType::MWr || t == TlpType::CplD;
  if (!data && payload != 0)
    throw std::invalid_argument("pcie: MRd and Cpl TLPs carry no payload");
  if (data && payload > c.max_payload)
    throw std::invalid_argument("pcie: TLP payload " + std::to_string(payload) +
                                " exceeds max_payload " + std::to_string(c.max_payload));
  return tlp_overhead(t, c) + static_cast<uint32_t>(align_up(payload, 4));
}

Traffic dma_write(const Config& c, uint64_t addr, uint64_t len) {
  validate(c);
  if (len == 0) return {};
  const uint64_t end = checked_end(addr, len);
  Traffic t;
  t.payload_bytes = len;
  // Split points are the multiples of MPS (powers of two <= 4 KB, so 4 KB is never crossed).
  t.tlps = blocks_touched(addr, end, c.max_payload);
  // Every split point is DW-aligned, so the pieces' DW spans add up to the whole range's.
  t.wire_bytes = t.tlps * tlp_overhead(TlpType::MWr, c) + dw_span(addr, end);
  return t;
}

ReadTraffic dma_read(const Config& c, uint64_t addr, uint64_t len) {
  validate(c);
  if (len == 0) return {};
  const uint64_t end = checked_end(addr, len);
  ReadTraffic r;
  // Requests: split at the multiples of MRRS (a power of two <= 4 KB: never crosses 4 KB).
  r.requests.tlps = blocks_touched(addr, end, c.max_read_request);
  r.requests.wire_bytes = r.requests.tlps * tlp_overhead(TlpType::MRd, c);
  // Completions end on multiples of completion_size within each request. Both sizes are
  // powers of two, so the finer of the two grids contains the coarser one: every completion
  // is one block of min(completion_size, MRRS) touched by [addr, end).
  const uint64_t grid = std::min<uint64_t>(c.completion_size, c.max_read_request);
  r.completions.payload_bytes = len;
  r.completions.tlps = blocks_touched(addr, end, grid);
  r.completions.wire_bytes =
      r.completions.tlps * tlp_overhead(TlpType::CplD, c) + dw_span(addr, end);
  return r;
}

uint32_t dllp_wire_bytes() { return 8; }

double skip_efficiency(const Config& c) {
  validate(c);
  if (c.gen <= 2) return (1180.0 - 4.0) / 1180.0;  // 4-symbol SKP OS every 1180 symbol times
  return 370.0 / 371.0;                            // 1 SKP block per 370 data blocks
}

uint32_t ack_latency_symbols(const Config& c) {
  validate(c);
  const double v = (c.max_payload + 28.0) * ack_factor(c.max_payload, c.lanes) / c.lanes +
                   internal_delay(c.gen);
  return static_cast<uint32_t>(std::floor(v));
}

uint32_t update_fc_latency_symbols(const Config& c) { return ack_latency_symbols(c); }

uint64_t tlps_per_coalesced_dllp(uint32_t latency_symbols, double spacing_symbols) {
  if (!(spacing_symbols > 0)) throw std::invalid_argument("pcie: TLP spacing must be > 0");
  return static_cast<uint64_t>(std::floor(latency_symbols / spacing_symbols)) + 1;
}

uint64_t reverse_dllp_bytes(const Config& c, TlpType type, uint64_t tlps,
                            uint64_t payload_bytes) {
  validate(c);
  if (tlps == 0) return 0;
  // DW padding of the payload is unknown here; payload_bytes is taken as given.
  const double wire = static_cast<double>(tlps) * tlp_overhead(type, c) +
                      static_cast<double>(payload_bytes);
  const double spacing = wire / static_cast<double>(tlps) / c.lanes;
  const uint64_t per_ack = tlps_per_coalesced_dllp(ack_latency_symbols(c), spacing);
  const uint64_t acks = (tlps + per_ack - 1) / per_ack;
  uint64_t fcs = 0;
  if (type == TlpType::MWr || type == TlpType::MRd) {
    const uint64_t per_fc = tlps_per_coalesced_dllp(update_fc_latency_symbols(c), spacing);
    fcs = (tlps + per_fc - 1) / per_fc;
  }
  return (acks + fcs) * dllp_wire_bytes();
}

uint64_t reverse_dllp_bytes(const Config& c, uint64_t tlps, uint64_t payload_bytes) {
  return reverse_dllp_bytes(c, payload_bytes > 0 ? TlpType::MWr : TlpType::MRd, tlps,
                            payload_bytes);
}

double dma_write_ceiling_gbps(const Config& c) {
  validate(c);
  const double tlp = tlp_wire_bytes(TlpType::MWr, c.max_payload, c);
  return link_data_rate_gbps(c) * c.max_payload / tlp * skip_efficiency(c);
}

ReadStreamBytes dma_read_stream_bytes(const Config& c) {
  validate(c);
  const ReadTraffic one = dma_read(c, 0, c.max_read_request);
  const double dllp = dllp_wire_bytes();
  ReadStreamBytes b;
  b.payload = c.max_read_request;
  // MRds arrive one per completion train: spacing = train bytes / lanes symbol times.
  const double train = static_cast<double>(one.completions.wire_bytes);
  const double mrd_spacing = train / c.lanes;
  const double acks_per_mrd =
      1.0 / static_cast<double>(tlps_per_coalesced_dllp(ack_latency_symbols(c), mrd_spacing));
  const double fcs_per_mrd = 1.0 / static_cast<double>(tlps_per_coalesced_dllp(
                                       update_fc_latency_symbols(c), mrd_spacing));
  b.completion_dir = train + (acks_per_mrd + fcs_per_mrd) * dllp;
  // CplDs arrive back-to-back; the device Acks them; no UpdateFC (infinite Cpl credits).
  const double k = static_cast<double>(one.completions.tlps);
  const double cpl_spacing = train / k / c.lanes;
  const double acks_per_cpl =
      1.0 / static_cast<double>(tlps_per_coalesced_dllp(ack_latency_symbols(c), cpl_spacing));
  b.request_dir = static_cast<double>(one.requests.wire_bytes) + k * acks_per_cpl * dllp;
  return b;
}

double dma_read_ceiling_gbps(const Config& c) {
  const ReadStreamBytes b = dma_read_stream_bytes(c);
  return link_data_rate_gbps(c) * skip_efficiency(c) * b.payload /
         std::max(b.completion_dir, b.request_dir);
}

double dma_read_latency_bound_gbps(const Config& c, double rtt_ns, int max_outstanding_reads) {
  validate(c);
  if (!(rtt_ns > 0))
    throw InputError("pcie.dma_read_rtt: " + std::to_string(rtt_ns) + " ns is not > 0");
  if (max_outstanding_reads < 1)
    throw InputError("pcie.max_outstanding_reads: " + std::to_string(max_outstanding_reads) +
                     " is not >= 1");
  return static_cast<double>(max_outstanding_reads) * c.max_read_request * 8.0 / rtt_ns;
}

}  // namespace hcasim::model::pcie

namespace hcasim::model::schema {
namespace {
using namespace decl;
using W = ParamWhen;
constexpr ParamSpec kPcie[] = {
    one_of("pcie.gen", "", ParamType::Integer, "1|2|3",
           "link generation: 2.5, 5 or 8 GT/s per lane (8b/10b, 8b/10b, 128b/130b)",
           W::Pcie),
    one_of("pcie.lanes", "", ParamType::Integer, "1|2|4|8|12|16|32",
           "negotiated link width, lanes (x1..x32, the widths PCIe defines)", W::Pcie),
    power_of_two("pcie.max_payload", "B", 128, 4096, "Max_Payload_Size (Device Control, PCIe 3.0 7.8.4)", W::Pcie),
    power_of_two("pcie.max_read_request", "B", 128, 4096, "Max_Read_Request_Size (Device Control, PCIe 3.0 7.8.4)",
                 W::Pcie),
    one_of("pcie.read_completion_boundary", "B", ParamType::Integer, "64|128",
           "Read Completion Boundary of the root complex (PCIe 3.0 2.3.1.1)", W::Pcie),
    power_of_two("pcie.completion_size", "B", 64, 4096,
                 "CplD payload the root complex returns; read_completion_boundary..max_payload", W::Pcie),
    flag("pcie.addr64", "64-bit addresses: 4 DW TLP headers for MWr/MRd, else 3 DW (PCIe 3.0 2.2.4.1)", W::Pcie),
    positive("pcie.dma_read_rtt", "ns", "MRd sent to its first CplD back (> 0: it bounds the reads in flight)",
             W::Pcie),
    nonneg("pcie.posted_write_latency", "ns", "an HCA's MWr to the data being visible in memory", W::Pcie),
    nonneg("pcie.mmio_write_latency", "ns", "a CPU store (doorbell) to its arrival at the HCA", W::Pcie),
};
}  // namespace
std::span<const ParamSpec> pcie() { return kPcie; }
}  // namespace hcasim::model::schema
