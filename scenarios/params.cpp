// `hcasim params`: the parameter schema (model/params.h) listed, with a platform's values.
#include "scenarios/params.h"

#include <algorithm>
#include <optional>
#include <iostream>
#include <variant>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "frontends/json_output.h"
#include "model/error.h"
#include "model/params.h"
#include "scenarios/datadir.h"
#include "sim/testbed.h"
#include "util/cli_values.h"

namespace hcasim::scenarios {

namespace {

using model::ParamSpec;
using model::ParamWhen;

std::string_view section_of(std::string_view key) { return key.substr(0, key.find('.')); }

/// Where a key is needed, as a short tag after its doc; empty for every platform.
std::string_view when_tag(ParamWhen w) {
  switch (w) {
    case ParamWhen::Always: return "";
    case ParamWhen::Pcie: return "[PCIe only]";
    case ParamWhen::Pcix: return "[PCI-X only]";
    case ParamWhen::Ipoib: return "[IPoIB path only]";
    case ParamWhen::NoIommu: return "[host.iommu = off only]";
  }
  return "";
}

}  // namespace

std::string params_help() {
  return R"(Usage: hcasim params [--platform NAME|FILE] [--set section.key=value]... [--json]

Lists every platform parameter hcasim reads (the schema of model/params.h), grouped by section:
key, type, unit, kind, range and a one-line doc; a tag says when a key is needed on some
platforms only (PCIe, PCI-X, the IPoIB path, host.iommu = off). A CPU cost's kind is work
(cycles or B/cycle of the core, converted at host.clock: --set host.clock moves it) or stall
(ns outside the core: memory, MMIO, the bus; no clock moves it). No key has a default: every value of a
platform file says where it comes from.

Options:
  --platform NAME|FILE   also each key's value in that platform, where it was given
                         (FILE:LINE or --set) and its source; the platform is checked as a
                         simulation would check it
  --set section.key=value  change a parameter first (repeatable; needs --platform)
  --json                 the same as JSON
  -h, --help             this text
)";
}

ParamsOptions parse_params_args(const std::vector<std::string>& args) {
  CLI::App app{"Lists the platform parameters.", "hcasim params"};
  app.set_help_flag();
  ParamsOptions o;
  std::string platform;
  auto* opt_platform = app.add_option("--platform", platform, "platform NAME or FILE");
  app.add_option("--set", o.sets, "section.key=value");
  app.add_flag("--json", o.json, "JSON output");
  app.add_flag("-h,--help", o.help, "usage");
  opt_platform->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  util::check_option_values(app, args);
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    throw InputError(util::parse_error_message(app, e));
  }
  if (opt_platform->count()) {
    if (platform.empty()) throw InputError("--platform: empty name");
    o.platform = platform;
  }
  if (!o.sets.empty() && !o.platform) throw InputError("--set needs --platform (a platform to change)");
  return o;
}

namespace {
/// A Work entry's value in ns at the platform's host.clock, as the text listing shows it:
/// "(60 ns at 2.6 GHz)", "(3 B/ns at 2.6 GHz)"; nothing for other entries.
std::optional<std::string> work_in_ns(const model::Platform& platform, const ParamSpec& s) {
  const std::string key(s.key);
  const auto& value = platform.param(key).value;
  if (s.kind != model::CostKind::Work || std::holds_alternative<bool>(value) ||
      std::holds_alternative<std::string>(value) || !platform.has("host.clock"))
    return std::nullopt;
  const bool rate = s.unit == "B/cycle";
  const double v = rate ? platform.rate_per_ns(key) : platform.cost_ns(key);
  const std::string unit = rate ? "B/ns" : s.unit == "cycles/page" ? "ns/page" : "ns";
  return fmt::format("({:.6g} {} at {:.6g} GHz)", v, unit, platform.num("host.clock"));
}
}  // namespace

std::string format_params_text(const model::Platform* platform) {
  const auto& all = model::param_schema();
  size_t wk = 0, wt = 0, wu = 0, wr = 0, wc = std::string_view("kind").size();
  for (const ParamSpec& s : all) {
    wk = std::max(wk, s.key.size());
    wt = std::max(wt, model::type_name(s.type).size());
    wu = std::max(wu, s.unit.size());
    wc = std::max(wc, model::kind_name(s.kind).size());
    wr = std::max(wr, model::range_text(s).size());
  }
  std::string out = fmt::format("{} platform parameters{}; no key has a default (a platform file gives each value "
                                "its source)\n",
                                all.size(), platform ? fmt::format(", with platform {}", platform->name()) : "");
  out += fmt::format("{:<{}}  {:<{}}  {:<{}}  {:<{}}  {:<{}}  {}\n", "key", wk, "type", wt, "unit", wu, "kind", wc,
                     "range", wr, "doc");
  std::string_view section;
  for (const ParamSpec& s : all) {
    if (section_of(s.key) != section) {
      section = section_of(s.key);
      out += fmt::format("\n[{}]\n", section);
    }
    const std::string_view tag = when_tag(s.when);
    out += fmt::format("{:<{}}  {:<{}}  {:<{}}  {:<{}}  {:<{}}  {}{}{}\n", s.key, wk, model::type_name(s.type), wt,
                       s.unit, wu, model::kind_name(s.kind), wc, model::range_text(s), wr, s.doc,
                       tag.empty() ? "" : " ", tag);
    if (!platform) continue;
    const std::string key(s.key);
    if (!platform->has(key)) {
      out += fmt::format("{:<{}}  (not on this platform)\n", "", wk);
      continue;
    }
    const model::Param& p = platform->param(key);
    std::string value = model::param_value_text(p, false);
    if (!p.unit.empty()) value += " " + p.unit;
    if (const auto in_ns = work_in_ns(*platform, s)) value += " " + *in_ns;
    out += fmt::format("{:<{}}  = {}  ({}) {}\n", "", wk, value, p.origin, p.source);
  }
  return out;
}

std::string format_params_json(const model::Platform* platform) {
  // nlohmann::json keeps an object's keys sorted, as the TOML tables this document was first
  // built from did: the same structure and key order.
  using nlohmann::json;
  json params = json::array();
  for (const ParamSpec& s : model::param_schema()) {
    json t;
    t["key"] = s.key;
    t["section"] = section_of(s.key);
    t["type"] = model::type_name(s.type);
    t["unit"] = s.unit;
    if (s.kind != model::CostKind::None) t["kind"] = model::kind_name(s.kind);
    t["range"] = model::range_text(s);
    if (!s.choices.empty()) {
      json choices = json::array();
      std::string_view rest = s.choices;
      for (size_t bar; (bar = rest.find('|')) != std::string_view::npos; rest.remove_prefix(bar + 1))
        choices.push_back(rest.substr(0, bar));
      choices.push_back(rest);
      t["choices"] = std::move(choices);
    } else if (s.type == model::ParamType::Number || s.type == model::ParamType::Integer) {
      t["min"] = s.lo;
      t["min_exclusive"] = s.lo_open;
      t["max"] = s.hi;
      if (s.pow2) t["power_of_two"] = true;
      if (s.step != 0) t["multiple_of"] = static_cast<int64_t>(s.step);
    }
    t["needed_on"] = model::when_text(s.when);
    t["doc"] = s.doc;
    if (platform && platform->has(std::string(s.key))) {
      const model::Param& p = platform->param(std::string(s.key));
      std::visit([&](const auto& v) { t["value"] = v; }, p.value);
      t["value_unit"] = p.unit;
      if (s.kind == model::CostKind::Work && !std::holds_alternative<bool>(p.value) &&
          !std::holds_alternative<std::string>(p.value)) {
        // The value in ns (or B/ns) at the platform's host.clock, as the model uses it.
        const bool rate = s.unit == "B/cycle";
        t[rate ? "value_per_ns" : "value_ns"] = rate ? platform->rate_per_ns(std::string(s.key))
                                                     : platform->cost_ns(std::string(s.key));
      }
      t["origin"] = p.origin;
      t["source"] = p.source;
    }
    params.push_back(std::move(t));
  }
  json root;
  root["count"] = model::param_schema().size();
  if (platform) root["platform"] = platform->name();
  root["parameters"] = std::move(params);
  return frontends::dump_json(root);
}

int params_main(const std::vector<std::string>& args) {
  const ParamsOptions o = parse_params_args(args);
  if (o.help) {
    std::cout << params_help();
    return 0;
  }
  std::optional<model::Platform> platform;
  if (o.platform) {
    platform = load_host_platforms(*o.platform, std::nullopt, o.sets).first;
    (void)sim::read_host_params(*platform);  // the checks of a run: ranges, units, unknown keys
  }
  const model::Platform* p = platform ? &*platform : nullptr;
  std::cout << (o.json ? format_params_json(p) : format_params_text(p)) << std::flush;
  return 0;
}

}  // namespace hcasim::scenarios
