// Platform files (see platform.h): TOML read with toml++ 3.3, every parameter checked for a
// value, a unit and a source; errors name "PATH:LINE: section.key: what is wrong".
#include "model/platform.h"

#include <toml++/toml.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include <fmt/format.h>

#include "model/units.h"

namespace hcasim::model {

namespace {

/// Line of `node` in the file, else of its key (toml++ records both; either may be unset).
uint32_t line_of(const toml::node& node, const toml::key& key) {
  if (node.source().begin.line != 0) return node.source().begin.line;
  return key.source().begin.line;
}

[[noreturn]] void fail_at(const std::string& origin, uint32_t line, const std::string& key,
                          const std::string& what) {
  throw InputError(fmt::format("{}:{}: {}: {}", origin, line, key, what));
}

/// What a TOML node is, for messages ("an array", "a date", ...).
const char* kind_of(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a floating-point number";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    default: return "nothing";
  }
}

/// Article + type name of a parameter value ("an integer", "a number", ...).
const char* kind_of(const Param& p) {
  switch (p.value.index()) {
    case 0: return "a number";
    case 1: return "an integer";
    case 2: return "a boolean";
    default: return "a string";
  }
}

/// The value as the user would write it, for messages.
std::string value_text(const Param& p) { return param_value_text(p, true); }

/// Reads one parameter `{ value = ..., unit = "...", source = "..." }` named `full_key`.
Param read_param(const toml::table& tbl, const std::string& full_key, uint32_t line,
                 const std::string& origin) {
  Param p;
  p.key = full_key;
  p.origin = fmt::format("{}:{}", origin, line);
  bool have_value = false, have_unit = false, have_source = false;
  for (const auto& [k, node] : tbl) {
    const std::string field(k.str());
    const uint32_t field_line = line_of(node, k) != 0 ? line_of(node, k) : line;
    if (field == "value") {
      have_value = true;
      if (auto v = node.as_integer()) {
        p.value = v->get();
      } else if (auto d = node.as_floating_point()) {
        p.value = d->get();
      } else if (auto b = node.as_boolean()) {
        p.value = b->get();
      } else if (auto s = node.as_string()) {
        p.value = s->get();
      } else {
        fail_at(origin, field_line, full_key,
                fmt::format("value must be a number, a boolean or a string, not {}",
                            kind_of(node)));
      }
    } else if (field == "unit") {
      have_unit = true;
      auto s = node.as_string();
      if (!s) fail_at(origin, field_line, full_key,
                      fmt::format("unit must be a string, not {}", kind_of(node)));
      p.unit = s->get();
    } else if (field == "source") {
      have_source = true;
      auto s = node.as_string();
      if (!s) fail_at(origin, field_line, full_key,
                      fmt::format("source must be a string, not {}", kind_of(node)));
      p.source = s->get();
      if (p.source.find_first_not_of(" \t") == std::string::npos)
        fail_at(origin, field_line, full_key, "empty source (say where the number comes from)");
    } else {
      fail_at(origin, field_line, full_key,
              fmt::format("unknown field '{}' (a parameter has value, unit and source)", field));
    }
  }
  if (!have_value) fail_at(origin, line, full_key, "missing 'value'");
  if (!have_unit) fail_at(origin, line, full_key, "missing 'unit' (use \"\" for counts and flags)");
  if (!have_source) fail_at(origin, line, full_key, "missing 'source'");
  return p;
}

/// Reads the parameters of a [section] (depth 1) or [section.sub] (depth 2).
void read_section(const toml::table& section, const std::string& prefix, int depth,
                  const std::string& origin, std::map<std::string, Param>& out) {
  for (const auto& [k, node] : section) {
    const std::string full_key = prefix + "." + std::string(k.str());
    const uint32_t line = line_of(node, k);
    const toml::table* tbl = node.as_table();
    if (tbl && tbl->is_inline()) {
      out.emplace(full_key, read_param(*tbl, full_key, line, origin));
    } else if (tbl && depth == 1) {
      read_section(*tbl, full_key, depth + 1, origin, out);
    } else if (tbl) {
      fail_at(origin, line, full_key, "sections nest one level at most ([section.sub])");
    } else {
      fail_at(origin, line, full_key,
              fmt::format("expected an inline table {{ value = ..., unit = \"...\", source = "
                          "\"...\" }}, found {}",
                          kind_of(node)));
    }
  }
}

std::string_view trim(std::string_view s) {
  const auto is_space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

/// Whole-text integer parse (optional leading '-').
std::optional<int64_t> parse_int(std::string_view s) {
  int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

/// Whole-text finite decimal parse ("2.5", "1e3", "7").
std::optional<double> parse_double(std::string_view s) {
  double v = 0;
  const auto [ptr, ec] =
      std::from_chars(s.data(), s.data() + s.size(), v, std::chars_format::general);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(v))
    return std::nullopt;
  return v;
}

/// Netperf-suffixed size, or nothing.
std::optional<uint64_t> parse_size_opt(std::string_view s) {
  try {
    return parse_size(s, "");
  } catch (const InputError&) {
    return std::nullopt;
  }
}

std::optional<bool> parse_bool(std::string_view s) {
  std::string lower(s);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "on" || lower == "true" || lower == "1") return true;
  if (lower == "off" || lower == "false" || lower == "0") return false;
  return std::nullopt;
}

}  // namespace

Platform Platform::load_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open platform file");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw InputError(path + ": cannot open platform file");
  return parse(text.str(), path);
}

Platform Platform::parse(std::string_view toml_text, const std::string& origin) {
  toml::table root;
  try {
    root = toml::parse(toml_text, origin);
  } catch (const toml::parse_error& e) {
    throw InputError(fmt::format("{}:{}:{}: {}", origin, e.source().begin.line,
                                 e.source().begin.column, e.description()));
  }

  Platform p;
  p.origin_ = origin;
  for (const auto& [k, node] : root) {
    const std::string key(k.str());
    const uint32_t line = line_of(node, k);
    if (key == "name" || key == "description") {
      auto s = node.as_string();
      if (!s) fail_at(origin, line, key, fmt::format("must be a string, not {}", kind_of(node)));
      if (key == "name") p.name_ = s->get();
      continue;
    }
    const toml::table* tbl = node.as_table();
    if (!tbl || tbl->is_inline())
      fail_at(origin, line, key,
              "parameters belong in a [section]; only 'name' and 'description' are top-level");
    read_section(*tbl, key, 1, origin, p.params_);
  }
  if (p.name_.empty()) p.name_ = std::filesystem::path(origin).stem().string();
  return p;
}

void Platform::set(const std::string& assignment) {
  const auto eq = assignment.find('=');
  const std::string_view all(assignment);
  if (eq == std::string::npos || trim(all.substr(0, eq)).empty())
    throw InputError("--set '" + assignment + "': expected section.key=value");
  const std::string key(trim(all.substr(0, eq)));
  const std::string_view text = trim(all.substr(eq + 1));

  auto it = params_.find(key);
  if (it == params_.end()) {
    const ParamSpec* spec = find_param(key);
    if (!spec) throw InputError(fmt::format("--set {}: unknown platform parameter (platform {})", key, name_));
    if (spec->when == ParamWhen::Always)
      throw InputError(fmt::format("--set {}: missing from platform {} (every platform must have it)", key, name_));
    throw InputError(
        fmt::format("--set {}: not in platform {} (a parameter of {})", key, name_, when_text(spec->when)));
  }
  Param& p = it->second;
  const bool bytes = p.unit == "B";

  auto bad = [&]() -> InputError {
    // A whole number in the file of a key the schema calls a number takes fractions too.
    const ParamSpec* spec = find_param(key);
    const char* kind = p.value.index() == 1 && spec != nullptr && spec->type == ParamType::Number ? "a number" : kind_of(p);
    std::string msg = fmt::format("--set {}: bad value '{}' for {}", key, text, kind);
    if (!p.unit.empty()) msg += " in " + p.unit;
    return InputError(msg);
  };

  switch (p.value.index()) {
    case 0: {  // double: decimals and integers; sizes when in bytes
      if (auto d = parse_double(text)) {
        p.value = *d;
      } else if (auto s = bytes ? parse_size_opt(text) : std::nullopt) {
        p.value = static_cast<double>(*s);
      } else {
        throw bad();
      }
      break;
    }
    case 1: {  // int64: integers; sizes when in bytes; a fraction when the schema says number
      const ParamSpec* spec = find_param(key);
      if (auto i = parse_int(text)) {
        p.value = *i;
      } else if (auto d = spec != nullptr && spec->type == ParamType::Number ? parse_double(text) : std::nullopt) {
        p.value = *d;  // the file wrote the number as an integer; its schema allows any
      } else if (auto s = bytes ? parse_size_opt(text) : std::nullopt;
                 s && *s <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        p.value = static_cast<int64_t>(*s);
      } else {
        throw bad();
      }
      break;
    }
    case 2: {
      auto b = parse_bool(text);
      if (!b) throw bad();
      p.value = *b;
      break;
    }
    default:
      p.value = std::string(text);
      break;
  }
  p.origin = "--set";
}

void Platform::fail(const std::string& key, const std::string& what) const {
  const Param& p = param(key);
  if (p.origin == "--set") throw InputError(fmt::format("--set {}: {} (platform {})", key, what, name_));
  throw InputError(fmt::format("{}: {}: {}", p.origin, key, what));
}

void Platform::fail_from(const InputError& e) const {
  const std::string_view msg = e.what();
  const size_t colon = msg.find(": ");
  if (colon != std::string_view::npos) {
    const std::string key(msg.substr(0, colon));
    if (has(key)) fail(key, std::string(msg.substr(colon + 2)));
  }
  throw InputError(fmt::format("platform {}: {}", name_, msg));
}

void Platform::check_all_used(std::optional<ParamWhen> skip) const {
  for (const auto& [key, p] : params_) {
    if (used_.count(key)) continue;
    const ParamSpec* spec = find_param(key);
    if (!spec) throw InputError(fmt::format("{}: {}: unknown parameter (hcasim does not use it)", p.origin, key));
    if (skip && spec->when == *skip) continue;
    if (spec->when == ParamWhen::Always)
      throw InputError(fmt::format("{}: {}: not used on this platform", p.origin, key));
    throw InputError(fmt::format("{}: {}: not used on this platform (a parameter of {})", p.origin, key,
                                 when_text(spec->when)));
  }
}

void Platform::check_used_in(ParamWhen only) const {
  for (const auto& [key, p] : params_) {
    if (used_.count(key)) continue;
    const ParamSpec* spec = find_param(key);
    if (!spec) throw InputError(fmt::format("{}: {}: unknown parameter (hcasim does not use it)", p.origin, key));
    if (spec->when == only)
      throw InputError(fmt::format("{}: {}: not used on this platform (a parameter of {})", p.origin, key,
                                   when_text(spec->when)));
  }
}

const Param& Platform::param(const std::string& key) const {
  auto it = params_.find(key);
  if (it == params_.end())
    throw InputError(fmt::format("{}: missing parameter {} (platform {})", origin_, key, name_));
  return it->second;
}

bool Platform::has(const std::string& key) const { return params_.count(key) != 0; }

namespace {
/// The entry of `key`, which a reader reads as `type` (Number readers read Integers too).
const ParamSpec& entry_for(const std::string& key, ParamType type) {
  const ParamSpec& s = declared_param(key);
  const bool ok = s.type == type || (type == ParamType::Number && s.type == ParamType::Integer);
  if (!ok)
    throw std::logic_error(fmt::format("internal error: platform parameter {} is declared {}, read as {}", key,
                                       type_name(s.type), type_name(type)));
  return s;
}
}  // namespace

const Param& Platform::read(const std::string& key) const {
  (void)declared_param(key);
  const Param& p = param(key);
  used_.insert(key);
  return p;
}

double Platform::cost_ns(const std::string& key) const {
  const ParamSpec& s = declared_param(key);
  const bool rate = s.unit == "B/cycle" || s.unit == "B/ns";
  if (s.kind == CostKind::None || rate)
    throw std::logic_error(fmt::format("internal error: {} is read as a CPU cost in ns but is declared in '{}'", key, s.unit));
  const double v = num(key);
  return s.kind == CostKind::Work ? v / num("host.clock") : v;
}

double Platform::rate_per_ns(const std::string& key) const {
  const ParamSpec& s = declared_param(key);
  if (s.kind == CostKind::None || !(s.unit == "B/cycle" || s.unit == "B/ns"))
    throw std::logic_error(fmt::format("internal error: {} is read as a CPU rate but is declared in '{}'", key, s.unit));
  const double v = num(key);
  return s.kind == CostKind::Work ? v * num("host.clock") : v;
}

double Platform::num(const std::string& key) const {
  const ParamSpec& s = entry_for(key, ParamType::Number);
  const Param& p = read(key);
  if (p.unit != s.unit)  // the file is the user's: a wrong unit is bad input
    throw InputError(fmt::format("{}: {}: unit '{}', expected '{}'", p.origin, key, p.unit, s.unit));
  double v = 0;
  if (const auto* d = std::get_if<double>(&p.value)) {
    if (!std::isfinite(*d))  // TOML has inf and nan; --set refuses them already
      throw InputError(fmt::format("{}: {}: expected a finite number, found {}", p.origin, key, *d));
    v = *d;
    // 2^63 is exact in a double; an integral double in [-2^63, 2^63) converts exactly.
    constexpr double kTwo63 = 9223372036854775808.0;
    if (s.type == ParamType::Integer && (std::trunc(v) != v || v < -kTwo63 || v >= kTwo63))
      throw InputError(fmt::format("{}: {}: expected an integer, found {}", p.origin, key, value_text(p)));
  } else if (const auto* i = std::get_if<int64_t>(&p.value)) {
    v = static_cast<double>(*i);
  } else {
    throw InputError(fmt::format("{}: {}: expected {}, found {} {}", p.origin, key,
                                 s.type == ParamType::Integer ? "an integer" : "a number", kind_of(p), value_text(p)));
  }
  if (auto why = range_error(s, v)) fail(key, *why);
  return v;
}

int64_t Platform::integer(const std::string& key) const {
  (void)entry_for(key, ParamType::Integer);
  const double v = num(key);  // checks presence, unit, integrality and range
  if (const auto* i = std::get_if<int64_t>(&param(key).value)) return *i;
  return static_cast<int64_t>(v);
}

uint32_t Platform::u32(const std::string& key) const {
  const ParamSpec& s = entry_for(key, ParamType::Integer);
  const bool fits = s.choices.empty() ? s.lo >= 0 && s.hi <= 4294967295.0 : true;
  if (!fits) throw std::logic_error(fmt::format("internal error: platform parameter {} is read as a 32-bit count, "
                                                "but its range {} exceeds one", key, range_text(s)));
  const int64_t v = integer(key);
  if (v < 0 || v > 4294967295)  // the range check above keeps it inside
    throw std::logic_error(fmt::format("internal error: {} = {} read as a 32-bit count", key, v));
  return static_cast<uint32_t>(v);
}

bool Platform::flag(const std::string& key) const {
  (void)entry_for(key, ParamType::Flag);
  const Param& p = read(key);
  if (const auto* b = std::get_if<bool>(&p.value)) return *b;
  throw InputError(fmt::format("{}: {}: expected a boolean, found {} {}", p.origin, key,
                               kind_of(p), value_text(p)));
}

std::string Platform::str(const std::string& key) const {
  const ParamSpec& s = entry_for(key, ParamType::Text);
  const Param& p = read(key);
  const auto* v = std::get_if<std::string>(&p.value);
  if (!v)
    throw InputError(fmt::format("{}: {}: expected a string, found {} {}", p.origin, key, kind_of(p), value_text(p)));
  if (auto why = range_error(s, *v)) fail(key, *why);
  return *v;
}

std::string param_value_text(const Param& p, bool quote_strings) {
  return std::visit(
      [quote_strings](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::string>) {
          return quote_strings ? fmt::format("\"{}\"", v) : v;
        } else {
          return fmt::format("{}", v);
        }
      },
      p.value);
}

}  // namespace hcasim::model
