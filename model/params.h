#pragma once
/// \file The parameter schema: every key a platform file may hold, declared once beside the
/// model code that reads it (the tables are in model/cpu.cpp, model/pcie.cpp, ...; this file
/// gathers them). Each entry gives the key, the unit the platform files write, the value's type
/// and its range (bounds, a power of two, a step, or the allowed values), on which platforms
/// it is needed, and a one-line doc that names the reason of every bound that is not obvious.
///
/// Platform's typed readers (Platform::num, integer, u32, flag, str, read) look the key up
/// here: the unit, the type and the range errors of a platform value come from its entry,
/// and a read of a key no table declares is an internal error (a test runs every reader on
/// every shipped platform). `hcasim params` lists the schema.
///
/// No key has a default: every value of a platform says where it comes from (its `source`),
/// and a default would have none.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hcasim::model {

/// What a parameter's value is.
enum class ParamType : uint8_t {
  Number,   ///< a finite number, integral or not
  Integer,  ///< a whole number (an integral float such as 4096.0 is accepted)
  Flag,     ///< a TOML boolean (--set takes on/off/true/false/1/0)
  Text,     ///< a string
};

/// On which platforms a parameter is needed (and read): the others must not have it.
enum class ParamWhen : uint8_t {
  Always,   ///< every platform
  Pcie,     ///< an HCA in a PCIe slot: a platform without pcix.clock_mhz
  Pcix,     ///< an HCA on a PCI-X bus: a platform with pcix.clock_mhz
  Ipoib,    ///< the IPoIB path (--transport ipoib): a platform with a [netstack] section
  NoIommu,  ///< host.iommu = off (with an IOMMU the netstack.iommu_* keys say the cost)
};

/// What a CPU cost is made of (docs/design.md "Modelling rules"). Work is instructions that run
/// from the caches: it takes cycles, and the platform gives it in cycles ("cycles",
/// "cycles/page") or bytes per cycle ("B/cycle"), converted at host.clock. A stall waits on
/// something outside the core (memory, an MMIO store, the PCIe bus, the APIC, another cache)
/// and takes the same ns at any clock: the platform gives it in ns or B/ns. A fitted lump that
/// holds both is split where a source tells the parts, else declared as its larger part with
/// the assumption in its source.
enum class CostKind : uint8_t {
  None,   ///< not a CPU cost (a size, a count, the HCA's or the bus's own time)
  Work,   ///< cycles of the core: scales with 1 / host.clock
  Stall,  ///< ns outside the core: does not scale with the clock
};

/// One declared parameter. Bounds are inclusive unless `lo_open`; a Number with lo = 0 and
/// lo_open accepts 1e-12 and more (kSmallestPositive: a rate so small that bytes / rate
/// overflows to infinity crashed SimGrid).
struct ParamSpec {
  std::string_view key = {};      ///< "section.name"
  std::string_view unit = {};     ///< as the platform files write it; "" for counts, flags, names
  ParamType type = ParamType::Number;
  double lo = 0, hi = 0;         ///< Number/Integer: the range (unused when `choices` is set)
  bool lo_open = false;          ///< the value must be > lo (else >= lo)
  bool pow2 = false;             ///< Integer: a power of two within lo..hi
  uint32_t step = 0;             ///< Integer: a multiple of step within lo..hi (0: any)
  std::string_view choices = {};  ///< the allowed values, separated by '|' ("SDR|DDR", "1|2|3")
  ParamWhen when = ParamWhen::Always;
  std::string_view doc = {};      ///< one line: what it is, and the reason of a bound
  CostKind kind = CostKind::None;  ///< a CPU cost's kind (Work keys are in cycles or B/cycle)
};

/// Bounds of the costs, rates and sizes: beyond 10^12 is no machine's, and the times computed
/// from it (bytes / rate, a sum of costs) would overflow to infinity, which SimGrid aborts on.
inline constexpr double kLargest = 1e12, kSmallestPositive = 1e-12;

/// Entry helpers for the tables (a cost in ns >= 0, a rate > 0, a count in lo..hi, ...).
namespace decl {
constexpr ParamSpec nonneg(std::string_view key, std::string_view unit, std::string_view doc,
                           ParamWhen when = ParamWhen::Always) {
  return {.key = key, .unit = unit, .type = ParamType::Number, .lo = 0, .hi = kLargest, .when = when, .doc = doc};
}
constexpr ParamSpec positive(std::string_view key, std::string_view unit, std::string_view doc,
                             ParamWhen when = ParamWhen::Always) {
  return {.key = key, .unit = unit, .type = ParamType::Number, .lo = 0, .hi = kLargest, .lo_open = true,
          .when = when, .doc = doc};
}
/// A CPU cost of kind Work, >= 0: `unit` "cycles", "cycles/page" or "B/cycle" (then > 0).
constexpr ParamSpec work(std::string_view key, std::string_view unit, std::string_view doc,
                         ParamWhen when = ParamWhen::Always) {
  ParamSpec s = unit == "B/cycle" ? positive(key, unit, doc, when) : nonneg(key, unit, doc, when);
  s.kind = CostKind::Work;
  return s;
}
/// A CPU cost of kind Stall, >= 0: `unit` "ns", "ns/page" or "B/ns" (then > 0).
constexpr ParamSpec stall(std::string_view key, std::string_view unit, std::string_view doc,
                          ParamWhen when = ParamWhen::Always) {
  ParamSpec s = unit == "B/ns" ? positive(key, unit, doc, when) : nonneg(key, unit, doc, when);
  s.kind = CostKind::Stall;
  return s;
}
constexpr ParamSpec integer(std::string_view key, std::string_view unit, double lo, double hi, std::string_view doc,
                            ParamWhen when = ParamWhen::Always) {
  return {.key = key, .unit = unit, .type = ParamType::Integer, .lo = lo, .hi = hi, .when = when, .doc = doc};
}
constexpr ParamSpec power_of_two(std::string_view key, std::string_view unit, double lo, double hi,
                                 std::string_view doc, ParamWhen when = ParamWhen::Always) {
  return {.key = key, .unit = unit, .type = ParamType::Integer, .lo = lo, .hi = hi, .pow2 = true, .when = when,
          .doc = doc};
}
constexpr ParamSpec one_of(std::string_view key, std::string_view unit, ParamType type, std::string_view choices,
                           std::string_view doc, ParamWhen when = ParamWhen::Always) {
  return {.key = key, .unit = unit, .type = type, .choices = choices, .when = when, .doc = doc};
}
constexpr ParamSpec flag(std::string_view key, std::string_view doc, ParamWhen when = ParamWhen::Always) {
  return {.key = key, .unit = "", .type = ParamType::Flag, .when = when, .doc = doc};
}
constexpr ParamSpec text(std::string_view key, std::string_view doc, ParamWhen when = ParamWhen::Always) {
  return {.key = key, .unit = "", .type = ParamType::Text, .when = when, .doc = doc};
}
}  // namespace decl

/// The tables, one per model area, each defined beside its reader.
namespace schema {
std::span<const ParamSpec> cpu();        ///< host.*, cpu.*: model/cpu.cpp
std::span<const ParamSpec> mmio();       ///< doorbell stores: model/mmio.cpp
std::span<const ParamSpec> noise();      ///< host.interference_*: model/noise.cpp
std::span<const ParamSpec> topology();   ///< topology.*: model/topology.cpp
std::span<const ParamSpec> interrupt();  ///< irq.*, MSI-X, CQ moderation: model/interrupt.cpp
std::span<const ParamSpec> netstack();   ///< netstack.*, socket.*: model/netstack.cpp
std::span<const ParamSpec> ipoib();      ///< ipoib.*: model/ipoib.cpp
std::span<const ParamSpec> ib();         ///< ib.*: model/ib.cpp
std::span<const ParamSpec> hca();        ///< hca.*: model/hca.cpp
std::span<const ParamSpec> pcie();       ///< pcie.*: model/pcie.cpp
std::span<const ParamSpec> pcix();       ///< pcix.*: model/pcix.cpp
std::span<const ParamSpec> sdp();        ///< sdp.*: model/sdp_params.cpp (read by sim/testbed.cpp)
}  // namespace schema

/// Every declared parameter, ordered by key. Built once; a key declared twice, an empty doc,
/// a bad range or a choice list on a Flag is a std::logic_error (a test builds it).
const std::vector<ParamSpec>& param_schema();

/// The entry of `key`, or nullptr when no table declares it.
const ParamSpec* find_param(std::string_view key);

/// The entry of `key`; std::logic_error "internal error: KEY is read but not declared ..."
/// when no table declares it (a reader's bug, not the user's).
const ParamSpec& declared_param(std::string_view key);

/// Why `value` is outside `spec`'s range ("-3 ns must be >= 0", "3000 is not a power of two
/// in 128..4096", "'EDR' is not SDR, DDR, QDR, FDR10 or FDR"), or nothing when it is inside.
/// Numbers: `value` is the number; Integer specs assume an integral value.
std::optional<std::string> range_error(const ParamSpec& spec, double value);
std::optional<std::string> range_error(const ParamSpec& spec, std::string_view value);

/// The range as `hcasim params` shows it: "> 0", "0..1e12", "512..4096, power of two",
/// "SDR|DDR|QDR|FDR10|FDR", "on|off", "any text".
std::string range_text(const ParamSpec& spec);

/// "work", "stall" or "" (not a CPU cost), as `hcasim params` shows it.
std::string_view kind_name(CostKind k);

/// "number", "integer", "flag" or "text".
std::string_view type_name(ParamType t);

/// When the parameter is needed, for listings and errors: "every platform", "PCIe platforms
/// (no pcix.clock_mhz)", ...
std::string_view when_text(ParamWhen w);

}  // namespace hcasim::model
