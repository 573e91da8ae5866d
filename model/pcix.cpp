/// \file PCI-X bus accounting and ceilings; every formula and constant is sourced in pcix.h.
#include "model/pcix.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "model/error.h"
#include "model/params.h"

namespace hcasim::model::pcix {
namespace {

constexpr int kMaxIdleClocks = 1024;  // sanity bound of idle_clocks and arbitration_clocks

bool is_pow2_in(uint64_t v, uint64_t lo, uint64_t hi) {
  return v >= lo && v <= hi && (v & (v - 1)) == 0;
}

/// Number of `block`-aligned blocks that [a, b) touches (b > a).
uint64_t blocks_touched(uint64_t a, uint64_t b, uint64_t block) {
  return (b - 1) / block - a / block + 1;
}

uint64_t checked_end(uint64_t addr, uint64_t len) {
  if (len > UINT64_MAX - addr) throw std::invalid_argument("pcix: addr + len overflows");
  return addr + len;
}

void check_byte_count(uint64_t len) {
  if (len == 0 || len > kMaxByteCount)
    throw std::invalid_argument("pcix: byte count " + std::to_string(len) +
                                " of one transaction is not in 1..4096");
}

void check_decode(const char* field, int clocks) {
  if (clocks < 1 || clocks > 4)
    throw InputError(std::string("pcix.") + field + ": " + std::to_string(clocks) +
                     " is not 1..4 (decode speed A, B, C or subtractive)");
}

void check_range(const char* field, int v, int lo, int hi) {
  if (v < lo || v > hi)
    throw InputError(std::string("pcix.") + field + ": " + std::to_string(v) + " is not " +
                     std::to_string(lo) + ".." + std::to_string(hi));
}

void check_size(const char* field, uint32_t v, uint32_t lo) {
  if (!is_pow2_in(v, lo, kMaxByteCount))
    throw InputError(std::string("pcix.") + field + ": " + std::to_string(v) +
                     " is not a power of two in " + std::to_string(lo) + "..4096");
}

uint64_t address_clocks(const Config& c) { return c.dual_address_cycle ? 2 : 1; }

/// Clocks of every transaction outside its address and data/response phases.
uint64_t common_clocks(const Config& c, int decode) {
  return kAttributeClocks + static_cast<uint64_t>(decode) +
         static_cast<uint64_t>(c.target_wait_states) + static_cast<uint64_t>(c.idle_clocks) +
         static_cast<uint64_t>(c.arbitration_clocks);
}

uint64_t write_overhead(const Config& c) {
  return address_clocks(c) + common_clocks(c, c.host_decode_clocks);
}

uint64_t completion_overhead(const Config& c) {
  return kSplitCompletionAddressClocks + common_clocks(c, c.device_decode_clocks);
}

uint64_t write_grid(const Config& c) {
  return std::min(c.write_burst, c.write_disconnect_size);
}

uint64_t completion_grid(const Config& c) {
  return std::min(c.split_completion_size, c.max_memory_read_byte_count);
}

// The formulas below the public functions, on a Config already validated: each public function
// validates once and then uses these (validate runs about a dozen checks; re-running it in every
// helper made it most of an IPoIB simulation's time).
double frequency_mhz_of(const Config& c) {
  return c.clock_mhz == 66 ? 200.0 / 3.0 : c.clock_mhz == 100 ? 100.0 : 400.0 / 3.0;
}

double period_ns_of(const Config& c) { return 1000.0 / frequency_mhz_of(c); }

uint32_t width_bytes_of(const Config& c) { return static_cast<uint32_t>(c.width_bits / 8); }

uint64_t data_phases_of(const Config& c, uint64_t addr, uint64_t len) {
  if (len == 0) return 0;
  return blocks_touched(addr, checked_end(addr, len), width_bytes_of(c));
}

uint64_t read_request_clocks_of(const Config& c) {
  return address_clocks(c) + common_clocks(c, c.host_decode_clocks) + kSplitResponseClocks;
}

uint64_t write_transaction_clocks_of(const Config& c, uint64_t addr, uint64_t len) {
  check_byte_count(len);
  return write_overhead(c) + data_phases_of(c, addr, len);
}

ReadTraffic dma_read_of(const Config& c, uint64_t addr, uint64_t len) {
  if (len == 0) return {};
  const uint64_t end = checked_end(addr, len);
  ReadTraffic r;
  r.requests.transactions = blocks_touched(addr, end, c.max_memory_read_byte_count);
  r.requests.clocks = r.requests.transactions * read_request_clocks_of(c);
  // Both sizes are powers of two: the finer grid contains the coarser one, so every split
  // completion is one block of min(split_completion_size, MMRBC) touched by [addr, end).
  r.completions.data_bytes = len;
  r.completions.transactions = blocks_touched(addr, end, completion_grid(c));
  r.completions.clocks = r.completions.transactions * completion_overhead(c) + data_phases_of(c, addr, len);
  return r;
}

double write_ceiling_gbps_of(const Config& c) {
  const uint64_t burst = write_grid(c);
  return static_cast<double>(burst) * 8.0 /
         (static_cast<double>(write_transaction_clocks_of(c, 0, burst)) * period_ns_of(c));
}

double read_ceiling_gbps_of(const Config& c) {
  const uint64_t m = c.max_memory_read_byte_count;
  return static_cast<double>(m) * 8.0 / (static_cast<double>(dma_read_of(c, 0, m).clocks()) * period_ns_of(c));
}

void check_volume(const char* what, double v) {
  if (!std::isfinite(v) || v < 0)
    throw InputError(std::string("pcix.") + what + ": " + std::to_string(v) +
                     " B is not a finite number >= 0");
}

}  // namespace

void validate(const Config& c) {
  if (c.clock_mhz != 66 && c.clock_mhz != 100 && c.clock_mhz != 133)
    throw InputError("pcix.clock_mhz: " + std::to_string(c.clock_mhz) +
                     " is not 66, 100 or 133");
  if (c.width_bits != 32 && c.width_bits != 64)
    throw InputError("pcix.width_bits: " + std::to_string(c.width_bits) + " is not 32 or 64");
  check_size("max_memory_read_byte_count", c.max_memory_read_byte_count, 512);
  switch (c.max_outstanding_split) {
    case 1: case 2: case 3: case 4: case 8: case 12: case 16: case 32: break;
    default:
      throw InputError("pcix.max_outstanding_split: " +
                       std::to_string(c.max_outstanding_split) +
                       " is not one of 1, 2, 3, 4, 8, 12, 16, 32");
  }
  check_size("write_burst", c.write_burst, 8);
  check_size("write_disconnect_size", c.write_disconnect_size, kAllowableDisconnectBoundary);
  check_size("split_completion_size", c.split_completion_size, kAllowableDisconnectBoundary);
  check_decode("host_decode_clocks", c.host_decode_clocks);
  check_decode("device_decode_clocks", c.device_decode_clocks);
  check_range("target_wait_states", c.target_wait_states, 0, 16);
  check_range("idle_clocks", c.idle_clocks, 1, kMaxIdleClocks);
  check_range("arbitration_clocks", c.arbitration_clocks, 0, kMaxIdleClocks);
  if (!std::isfinite(c.split_completion_latency_ns) || c.split_completion_latency_ns < 0)
    throw InputError("pcix.split_completion_latency_ns: " +
                     std::to_string(c.split_completion_latency_ns) +
                     " is not a finite number >= 0");
}

double clock_frequency_mhz(const Config& c) {
  validate(c);
  return frequency_mhz_of(c);
}

double clock_period_ns(const Config& c) {
  validate(c);
  return period_ns_of(c);
}

uint32_t bus_width_bytes(const Config& c) {
  validate(c);
  return width_bytes_of(c);
}

double peak_data_rate_gbps(const Config& c) {
  validate(c);
  return width_bytes_of(c) * 8.0 / period_ns_of(c);
}

uint64_t data_phases(const Config& c, uint64_t addr, uint64_t len) {
  validate(c);
  return data_phases_of(c, addr, len);
}

uint64_t write_transaction_clocks(const Config& c, uint64_t addr, uint64_t len) {
  validate(c);
  return write_transaction_clocks_of(c, addr, len);
}

uint64_t read_request_clocks(const Config& c) {
  validate(c);
  return read_request_clocks_of(c);
}

uint64_t split_completion_clocks(const Config& c, uint64_t addr, uint64_t len) {
  validate(c);
  check_byte_count(len);
  return completion_overhead(c) + data_phases_of(c, addr, len);
}

Traffic dma_write(const Config& c, uint64_t addr, uint64_t len) {
  validate(c);
  if (len == 0) return {};
  const uint64_t end = checked_end(addr, len);
  Traffic t;
  t.data_bytes = len;
  t.transactions = blocks_touched(addr, end, write_grid(c));
  // Every cut point is a multiple of the grid (>= 8 B), hence of the bus width: the pieces'
  // data phases add up to those of the whole range.
  t.clocks = t.transactions * write_overhead(c) + data_phases_of(c, addr, len);
  return t;
}

ReadTraffic dma_read(const Config& c, uint64_t addr, uint64_t len) {
  validate(c);
  return dma_read_of(c, addr, len);
}

double bus_time_ns(const Config& c, uint64_t clocks) {
  validate(c);
  return static_cast<double>(clocks) * period_ns_of(c);
}

double dma_write_ceiling_gbps(const Config& c) {
  validate(c);
  return write_ceiling_gbps_of(c);
}

double dma_read_ceiling_gbps(const Config& c) {
  validate(c);
  return read_ceiling_gbps_of(c);
}

double mixed_bus_time_ns(const Config& c, double write_bytes, double read_bytes) {
  check_volume("write_bytes", write_bytes);
  check_volume("read_bytes", read_bytes);
  validate(c);
  return write_bytes * 8.0 / write_ceiling_gbps_of(c) + read_bytes * 8.0 / read_ceiling_gbps_of(c);
}

double mixed_ceiling_gbps(const Config& c, double read_share) {
  if (!(read_share >= 0.0 && read_share <= 1.0))
    throw InputError("pcix.read_share: " + std::to_string(read_share) + " is not in 0..1");
  validate(c);
  return 1.0 / (read_share / read_ceiling_gbps_of(c) + (1.0 - read_share) / write_ceiling_gbps_of(c));
}

double dma_read_latency_bound_gbps(const Config& c) {
  validate(c);
  if (!(c.split_completion_latency_ns > 0))
    throw InputError("pcix.split_completion_latency_ns: " +
                     std::to_string(c.split_completion_latency_ns) + " ns is not > 0");
  return static_cast<double>(c.max_outstanding_split) * c.max_memory_read_byte_count * 8.0 /
         c.split_completion_latency_ns;
}

}  // namespace hcasim::model::pcix

namespace hcasim::model::schema {
namespace {
using namespace decl;
using W = ParamWhen;
constexpr ParamSpec kPcix[] = {
    one_of("pcix.clock_mhz", "MHz", ParamType::Integer, "66|100|133", "bus clock (PCI-X 1.0 modes); its presence "
           "makes the platform PCI-X", W::Pcix),
    one_of("pcix.width_bits", "bit", ParamType::Integer, "32|64", "bus width", W::Pcix),
    power_of_two("pcix.max_memory_read_byte_count", "B", 512, 4096,
                 "PCI-X Command register Maximum Memory Read Byte Count: largest read request", W::Pcix),
    one_of("pcix.max_outstanding_split", "", ParamType::Integer, "1|2|3|4|8|12|16|32",
           "PCI-X Command register Maximum Outstanding Split Transactions (its 8 encodings)", W::Pcix),
    power_of_two("pcix.write_burst", "B", 8, 4096, "largest memory-write burst the HCA issues", W::Pcix),
    power_of_two("pcix.write_disconnect_size", "B", 128, 4096,
                 "the target's disconnect boundary for writes (128: the Allowable Disconnect Boundary)", W::Pcix),
    power_of_two("pcix.split_completion_size", "B", 128, 4096, "bytes per split completion the bridge returns",
                 W::Pcix),
    flag("pcix.dual_address_cycle", "64-bit addresses by dual address cycles (one more clock per transaction)",
         W::Pcix),
    integer("pcix.host_decode_clocks", "clocks", 1, 4, "the bridge's decode: speed A, B, C or subtractive", W::Pcix),
    integer("pcix.device_decode_clocks", "clocks", 1, 4, "the HCA's decode: speed A, B, C or subtractive", W::Pcix),
    integer("pcix.target_wait_states", "clocks", 0, 16, "target initial wait states (16: model/pcix.h bound)", W::Pcix),
    integer("pcix.idle_clocks", "clocks", 1, pcix::kMaxIdleClocks,
            "turnaround between transactions (1024: a sanity bound)", W::Pcix),
    integer("pcix.arbitration_clocks", "clocks", 0, pcix::kMaxIdleClocks, "arbitration per transaction (0: hidden)",
            W::Pcix),
    positive("pcix.split_completion_latency_ns", "ns", "a read request to its split completion (> 0: it bounds reads)",
             W::Pcix),
    nonneg("pcix.posted_write_latency", "ns", "an HCA's memory write to the data being visible in memory", W::Pcix),
    nonneg("pcix.mmio_write_latency", "ns", "a CPU store (doorbell) to its arrival at the HCA", W::Pcix),
};
}  // namespace
std::span<const ParamSpec> pcix() { return kPcix; }
}  // namespace hcasim::model::schema
