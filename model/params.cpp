// The parameter schema (see params.h): the area tables gathered, ordered and checked once, and
// the range checks and texts every reader and `hcasim params` share.
#include "model/params.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace hcasim::model {

namespace {

/// The alternatives of a '|' list.
std::vector<std::string_view> split_choices(std::string_view list) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (pos <= list.size()) {
    const size_t bar = std::min(list.find('|', pos), list.size());
    out.push_back(list.substr(pos, bar - pos));
    pos = bar + 1;
  }
  return out;
}

/// "A", "A or B", "A, B or C".
std::string or_list(std::string_view list) {
  const auto items = split_choices(list);
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += i + 1 == items.size() ? " or " : ", ";
    out += items[i];
  }
  return out;
}

/// A bound as a message shows it: 4096, 1073741824, 1e12, 1e-12, 0.5.
std::string bound_text(double x) {
  if (std::trunc(x) == x && std::fabs(x) < 1e10) return fmt::format("{}", static_cast<int64_t>(x));
  std::string s = fmt::format("{:g}", x);  // "1e+12", "1e-12", "0.5" (bounds have few digits)
  if (const size_t e = s.find("e+"); e != std::string::npos) s.erase(e + 1, 1);
  return s;
}

/// The value of an Integer spec as a message shows it.
std::string integer_text(double v) {
  if (std::fabs(v) < 9.2e18) return fmt::format("{}", static_cast<int64_t>(v));
  return fmt::format("{}", v);
}

bool is_pow2(double v) {
  if (!(v >= 1) || v > 9.2e18) return false;
  const auto u = static_cast<uint64_t>(v);
  return (u & (u - 1)) == 0;
}

void check_entry(const ParamSpec& s) {
  auto bad = [&](const char* what) {
    throw std::logic_error(fmt::format("internal error: parameter schema entry {}: {}", s.key, what));
  };
  if (s.key.find('.') == std::string_view::npos) bad("the key is not section.name");
  if (s.doc.empty()) bad("no doc");
  const bool ranged = s.type == ParamType::Number || s.type == ParamType::Integer;
  if (!s.choices.empty()) {
    if (s.type != ParamType::Integer && s.type != ParamType::Text) bad("choices on a number or a flag");
    if (s.type == ParamType::Integer)
      for (std::string_view c : split_choices(s.choices)) {
        int64_t v = 0;
        const auto [ptr, ec] = std::from_chars(c.data(), c.data() + c.size(), v);
        if (c.empty() || ec != std::errc() || ptr != c.data() + c.size()) bad("a choice is not an integer");
      }
  } else if (ranged) {
    if (!(s.lo <= s.hi)) bad("lo > hi");
    if ((s.pow2 || s.step != 0) && s.type != ParamType::Integer) bad("a power of two or a step on a number");
    if (s.pow2 && (!is_pow2(s.lo) || !is_pow2(s.hi))) bad("power-of-two bounds that are not powers of two");
    if (s.step != 0 && (std::fmod(s.lo, s.step) != 0 || std::fmod(s.hi, s.step) != 0))
      bad("bounds that are not multiples of the step");
  } else if (s.lo != 0 || s.hi != 0 || s.lo_open || s.pow2 || s.step != 0) {
    bad("a range on a flag or a text");
  }
}

std::vector<ParamSpec> gather() {
  std::vector<ParamSpec> all;
  for (auto table : {schema::cpu(), schema::mmio(), schema::noise(), schema::topology(), schema::interrupt(),
                     schema::netstack(), schema::ipoib(), schema::ib(), schema::hca(), schema::pcie(),
                     schema::pcix(), schema::sdp()})
    all.insert(all.end(), table.begin(), table.end());
  std::sort(all.begin(), all.end(), [](const ParamSpec& a, const ParamSpec& b) { return a.key < b.key; });
  for (size_t i = 0; i < all.size(); ++i) {
    check_entry(all[i]);
    if (i > 0 && all[i].key == all[i - 1].key)
      throw std::logic_error(fmt::format("internal error: parameter {} is declared twice", all[i].key));
  }
  return all;
}

}  // namespace

const std::vector<ParamSpec>& param_schema() {
  static const std::vector<ParamSpec> all = gather();
  return all;
}

const ParamSpec* find_param(std::string_view key) {
  const auto& all = param_schema();
  const auto it = std::lower_bound(all.begin(), all.end(), key,
                                   [](const ParamSpec& s, std::string_view k) { return s.key < k; });
  return it != all.end() && it->key == key ? &*it : nullptr;
}

const ParamSpec& declared_param(std::string_view key) {
  if (const ParamSpec* s = find_param(key)) return *s;
  throw std::logic_error(fmt::format(
      "internal error: platform parameter {} is read but not declared in the parameter schema (model/params.h)", key));
}

std::optional<std::string> range_error(const ParamSpec& s, double v) {
  if (s.type == ParamType::Integer) {
    if (!s.choices.empty()) {
      for (std::string_view c : split_choices(s.choices))
        if (integer_text(v) == c) return std::nullopt;
      return fmt::format("{} is not {}", integer_text(v), or_list(s.choices));
    }
    const bool inside = v >= s.lo && v <= s.hi;
    if (s.pow2 && (!inside || !is_pow2(v)))
      return fmt::format("{} is not a power of two in {}..{}", integer_text(v), bound_text(s.lo), bound_text(s.hi));
    if (s.step != 0 && (!inside || std::fmod(v, s.step) != 0))
      return fmt::format("{} is not a multiple of {} in {}..{}", integer_text(v), s.step, bound_text(s.lo),
                         bound_text(s.hi));
    if (!inside) return fmt::format("{} is outside {}..{}", integer_text(v), bound_text(s.lo), bound_text(s.hi));
    return std::nullopt;
  }
  if (s.type != ParamType::Number) return std::nullopt;
  const std::string unit = s.unit.empty() ? std::string() : fmt::format(" {}", s.unit);
  if (s.lo_open) {
    if (!(v > s.lo)) return fmt::format("{}{} must be > {}", v, unit, bound_text(s.lo));
    const double lo = s.lo == 0 ? kSmallestPositive : s.lo;
    if (v < lo || v > s.hi)
      return fmt::format("{}{} is out of range ({}..{})", v, unit, bound_text(lo), bound_text(s.hi));
    return std::nullopt;
  }
  if (!(v >= s.lo)) return fmt::format("{}{} must be >= {}", v, unit, bound_text(s.lo));
  if (v > s.hi) return fmt::format("{}{} is out of range ({}..{})", v, unit, bound_text(s.lo), bound_text(s.hi));
  return std::nullopt;
}

std::optional<std::string> range_error(const ParamSpec& s, std::string_view value) {
  if (s.type != ParamType::Text || s.choices.empty()) return std::nullopt;
  for (std::string_view c : split_choices(s.choices))
    if (c == value) return std::nullopt;
  return fmt::format("'{}' is not {}", value, or_list(s.choices));
}

std::string range_text(const ParamSpec& s) {
  if (!s.choices.empty()) return std::string(s.choices);
  switch (s.type) {
    case ParamType::Flag: return "on|off";
    case ParamType::Text: return "any text";
    case ParamType::Number:
      if (s.lo == 0 && s.hi == kLargest) return s.lo_open ? "> 0" : ">= 0";
      return fmt::format("{}{}..{}", s.lo_open ? "> " : "", bound_text(s.lo), bound_text(s.hi));
    case ParamType::Integer: {
      std::string r = fmt::format("{}..{}", bound_text(s.lo), bound_text(s.hi));
      if (s.pow2) r += ", power of two";
      if (s.step != 0) r += fmt::format(", multiple of {}", s.step);
      return r;
    }
  }
  return "";
}

std::string_view kind_name(CostKind k) {
  switch (k) {
    case CostKind::Work: return "work";
    case CostKind::Stall: return "stall";
    case CostKind::None: break;
  }
  return "";
}

std::string_view type_name(ParamType t) {
  switch (t) {
    case ParamType::Number: return "number";
    case ParamType::Integer: return "integer";
    case ParamType::Flag: return "flag";
    case ParamType::Text: return "text";
  }
  return "?";
}

std::string_view when_text(ParamWhen w) {
  switch (w) {
    case ParamWhen::Always: return "every platform";
    case ParamWhen::Pcie: return "PCIe platforms, those without pcix.clock_mhz";
    case ParamWhen::Pcix: return "PCI-X platforms, those with pcix.clock_mhz";
    case ParamWhen::Ipoib: return "platforms with the IPoIB path, those with a [netstack] section";
    case ParamWhen::NoIommu: return "platforms with host.iommu = off";
  }
  return "?";
}

}  // namespace hcasim::model
