// Scenario files (scenario.h): the TOML, its points and their commands.
#include "scenarios/scenario.h"

#include <toml++/toml.h>

#include <algorithm>
#include <string>

#include <fmt/format.h>

#include "frontends/netperf_cli.h"
#include "frontends/perftest_cli.h"
#include "frontends/pingpong_cli.h"
#include "scenarios/datadir.h"
#include "util/command_words.h"
#include "util/input_file.h"

namespace hcasim::scenarios {

namespace {

using util::base_name;
using util::is_long_option;
using util::split_command_line;
using util::taskset_cpus_index;

[[noreturn]] void fail_at(const std::string& origin, uint32_t line, const std::string& what) {
  throw InputError(fmt::format("{}:{}: {}", origin, line, what));
}

uint32_t line_of(const toml::node& node, uint32_t fallback) {
  const uint32_t line = node.source().begin.line;
  return line != 0 ? line : fallback;
}

/// Checks that `table` has only `allowed` keys.
void check_keys(const toml::table& table, std::initializer_list<std::string_view> allowed,
                const std::string& origin, uint32_t line, const std::string& where) {
  for (auto&& [key, value] : table) {
    if (std::find(allowed.begin(), allowed.end(), key.str()) == allowed.end())
      fail_at(origin, line_of(value, line), fmt::format("{}unknown key '{}'", where, key.str()));
  }
}

std::string required_string(const toml::table& table, std::string_view key,
                            const std::string& origin, uint32_t line, const std::string& where) {
  const toml::node* node = table.get(key);
  if (!node) fail_at(origin, line, fmt::format("{}missing key '{}'", where, key));
  const auto* s = node->as_string();
  if (!s) fail_at(origin, line_of(*node, line), fmt::format("{}'{}' must be a string", where, key));
  if (s->get().empty())
    fail_at(origin, line_of(*node, line), fmt::format("{}'{}' must not be empty", where, key));
  return s->get();
}

std::string optional_string(const toml::table& table, std::string_view key,
                            const std::string& origin, uint32_t line, const std::string& where) {
  if (!table.get(key)) return "";
  return required_string(table, key, origin, line, where);
}

double positive_number(const toml::table& table, std::string_view key, const std::string& origin,
                       uint32_t line, const std::string& where) {
  const toml::node* node = table.get(key);
  if (!node) fail_at(origin, line, fmt::format("{}missing key '{}'", where, key));
  const auto v = node->value<double>();
  if (!v || !(node->is_integer() || node->is_floating_point()))
    fail_at(origin, line_of(*node, line), fmt::format("{}'{}' must be a number", where, key));
  if (!(*v > 0) || !std::isfinite(*v))
    fail_at(origin, line_of(*node, line), fmt::format("{}'{}' must be > 0", where, key));
  return *v;
}

/// Text of a match value as it appears in a CSV cell.
std::string match_text(const toml::node& node, const std::string& origin, uint32_t line,
                       const std::string& where) {
  if (const auto* s = node.as_string()) return s->get();
  if (const auto* i = node.as_integer()) return std::to_string(i->get());
  if (const auto* f = node.as_floating_point()) return fmt::format("{}", f->get());
  fail_at(origin, line_of(node, line), where + "match values must be strings or numbers");
}

/// The tools a point may run, for messages.
constexpr const char* kPointTools =
    "netperf, ib_{write,send,read,atomic}_{lat,bw} or ibv_{rc,uc,ud,srq}_pingpong";

/// The kind of point that runs `tool` with its `args` (after the tool's name): perftest's latency
/// and bw tools, the pingpongs, netperf (TCP_RR by its -t; a netperf command that does not parse
/// is a netperf point, for parse_point to refuse with the parser's words). nullopt for another
/// tool.
std::optional<PointKind> kind_of_tool(std::string_view tool, const std::vector<std::string>& args) {
  if (const auto test = frontends::perftest_test_named(tool))
    return frontends::perftest_is_bw(*test) ? PointKind::Bandwidth : PointKind::Latency;
  if (frontends::pingpong_program_named(tool)) return PointKind::Pingpong;
  if (tool != "netperf") return std::nullopt;
  try {
    if (frontends::parse_netperf_args(args).test == "TCP_RR") return PointKind::NetperfRr;
  } catch (const InputError&) {
  }
  return PointKind::Netperf;
}

/// Drops a leading util-linux `taskset [-a|--all-tasks] [-c|--cpu-list] MASK|CPUS` (command
/// form; `taskset` may be a path) from `words`: hcasim does not pin processes. Returns whether
/// it was there. Throws InputError (no location) on the pid form (-p) or another option, or
/// when the CPU mask or the command is missing.
bool drop_taskset(std::vector<std::string>& words) {
  const size_t i = taskset_cpus_index(words);
  if (i == 0) return false;
  if (i + 1 >= words.size()) throw InputError("taskset needs a CPU mask or list and a command");
  words.erase(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(i + 1));
  return true;
}

/// The kind of a [[point]] judged from its command's first word only (after taskset), before
/// the points are parsed, so that the tolerances can be checked where they are declared.
/// nullopt when the command is not one parse_point accepts: it then reports what is wrong.
std::optional<PointKind> command_kind(const toml::node& point) {
  const auto* t = point.as_table();
  const toml::node* command = t ? t->get("command") : nullptr;
  if (!command || !command->as_string()) return std::nullopt;
  try {
    std::vector<std::string> words = split_command_line(command->as_string()->get());
    const bool pinned = drop_taskset(words);
    if (words.empty()) return std::nullopt;
    const auto kind = kind_of_tool(base_name(words.front()), {words.begin() + 1, words.end()});
    // A pinned netperf is refused by parse_point, which says why.
    if (pinned && (kind == PointKind::Netperf || kind == PointKind::NetperfRr)) return std::nullopt;
    return kind;
  } catch (const InputError&) {
  }
  return std::nullopt;
}

ScenarioPoint parse_point(const toml::table& t, const Scenario& scenario, size_t index,
                          uint32_t array_line) {
  const std::string& origin = scenario.origin;
  ScenarioPoint p;
  p.line = line_of(t, array_line);
  const std::string where = fmt::format("point {}: ", index + 1);
  check_keys(t, {"table", "mode", "set", "platform", "remote_platform", "command", "reference", "gated"}, origin,
             p.line, where);
  p.table = required_string(t, "table", origin, p.line, where);
  p.mode = required_string(t, "mode", origin, p.line, where);
  p.command = required_string(t, "command", origin, p.line, where);
  p.platform = optional_string(t, "platform", origin, p.line, where);
  if (p.platform.empty()) p.platform = scenario.platform;
  p.remote_platform = optional_string(t, "remote_platform", origin, p.line, where);
  if (p.remote_platform.empty()) p.remote_platform = scenario.remote_platform;

  if (const toml::node* set = t.get("set")) {
    const auto* array = set->as_array();
    if (!array) fail_at(origin, line_of(*set, p.line), where + "'set' must be an array of strings");
    for (const auto& item : *array) {
      const auto* s = item.as_string();
      if (!s || s->get().find('=') == std::string::npos)
        fail_at(origin, line_of(item, p.line),
                where + "'set' entries must be strings \"section.key=value\"");
      p.set.push_back(s->get());
    }
  }

  if (const toml::node* gated = t.get("gated")) {
    const auto* b = gated->as_boolean();
    if (!b) fail_at(origin, line_of(*gated, p.line), where + "'gated' must be true or false");
    p.gated = b->get();
  }

  const toml::node* ref = t.get("reference");
  if (!ref) fail_at(origin, p.line, where + "missing key 'reference'");
  const auto* rt = ref->as_table();
  if (!rt) fail_at(origin, line_of(*ref, p.line), where + "'reference' must be a table");
  const uint32_t ref_line = line_of(*ref, p.line);
  check_keys(*rt, {"file", "match"}, origin, ref_line, where + "reference: ");
  p.reference.file = required_string(*rt, "file", origin, ref_line, where + "reference: ");
  const toml::node* match = rt->get("match");
  if (!match) fail_at(origin, ref_line, where + "reference: missing key 'match'");
  const auto* mt = match->as_table();
  if (!mt || mt->empty())
    fail_at(origin, line_of(*match, ref_line),
            where + "reference: 'match' must be a table of column = value");
  for (auto&& [key, value] : *mt)
    p.reference.match.emplace_back(std::string(key.str()),
                                   match_text(value, origin, ref_line, where + "reference: "));

  // The command: a netperf command line, checked with the netperf parser, or an ib_write_lat
  // one (after an optional taskset), checked with the perftest parser.
  std::vector<std::string> words;
  bool pinned = false;
  try {
    words = split_command_line(p.command);
    pinned = drop_taskset(words);
  } catch (const InputError& e) {
    fail_at(origin, p.line, where + "command: " + e.what());
  }
  const std::string_view tool = words.empty() ? std::string_view() : base_name(words.front());
  const std::optional<PointKind> kind =
      words.empty() ? std::nullopt : kind_of_tool(tool, {words.begin() + 1, words.end()});
  // A path to the tool is accepted, as seed 003's "/opt/netperf/netperf -l 60 ..." shows it.
  if (!kind) fail_at(origin, p.line, where + fmt::format("command must start with {} (or a path to one)", kPointTools));
  if (pinned && (*kind == PointKind::Netperf || *kind == PointKind::NetperfRr))
    fail_at(origin, p.line, where + "command: taskset is not taken before netperf (netperf binds with -T)");
  p.kind = *kind;
  p.tool = std::string(tool);
  words.erase(words.begin());
  for (const auto& w : words) {
    for (const char* reserved : {"--platform", "--remote-platform", "--set", "--csv"}) {
      if (is_long_option(w, reserved))
        fail_at(origin, p.line,
                fmt::format("{}command: {} is set by the scenario (use the point's keys)", where,
                            reserved));
    }
  }
  if (p.kind == PointKind::Latency || p.kind == PointKind::Bandwidth) {
    frontends::PerftestOptions perftest;
    try {
      perftest = frontends::parse_perftest_args(*frontends::perftest_test_named(p.tool), words);
    } catch (const InputError& e) {
      fail_at(origin, p.line, where + "command: " + e.what());
    }
    if (perftest.help || perftest.version)
      fail_at(origin, p.line, where + "command: -h / -V print the usage or version and run nothing");
    p.words = std::move(words);
    return p;
  }
  if (p.kind == PointKind::Pingpong) {
    try {
      frontends::parse_pingpong_args(*frontends::pingpong_program_named(p.tool), words);
    } catch (const InputError& e) {
      fail_at(origin, p.line, where + "command: " + e.what());
    }
    p.words = std::move(words);
    return p;
  }
  frontends::NetperfOptions parsed;
  try {
    parsed = frontends::parse_netperf_args(words);
    if (parsed.test != "TCP_STREAM" && parsed.test != "TCP_MAERTS" && parsed.test != "TCP_RR")
      throw InputError(fmt::format("-t {}: a scenario takes TCP_STREAM, TCP_MAERTS and TCP_RR runs", parsed.test));
  } catch (const InputError& e) {
    fail_at(origin, p.line, where + "command: " + e.what());
  }
  if (parsed.help) fail_at(origin, p.line, where + "command: -h prints the usage and runs nothing");
  p.words = std::move(words);
  for (const auto& w : parsed.test_words) p.size_flag += (p.size_flag.empty() ? "" : " ") + w;
  return p;
}

}  // namespace

// --- scenario files -----------------------------------------------------------------------

Scenario parse_scenario(std::string_view toml_text, const std::string& origin) {
  toml::table root;
  try {
    root = toml::parse(toml_text, origin);
  } catch (const toml::parse_error& e) {
    fail_at(origin, e.source().begin.line, std::string(e.description()));
  }
  Scenario s;
  s.origin = origin;
  // A platform file given where a scenario is expected (hcasim run PLATFORM.toml): say so,
  // rather than name its first section an unknown key.
  if (!root.contains("point") && (root.contains("hca") || root.contains("host") || root.contains("cpu")))
    throw InputError(fmt::format("{}: a platform file, not a scenario file (a scenario names its platform in "
                                 "platform = \"NAME\"; docs/scenarios.md); give a platform as --platform",
                                 origin));
  check_keys(root, {"name", "description", "platform", "remote_platform", "source", "tolerance", "spread", "point"},
             origin, 1, "");
  s.name = required_string(root, "name", origin, 1, "");
  s.description = optional_string(root, "description", origin, 1, "");
  s.platform = required_string(root, "platform", origin, 1, "");
  s.remote_platform = optional_string(root, "remote_platform", origin, 1, "");
  s.source = optional_string(root, "source", origin, 1, "");

  // The kinds of point the file has decide which tolerances it must declare. Without any
  // [[point]] the netperf ones are required, as before latency points existed.
  const toml::node* points = root.get("point");
  const auto* point_list = points ? points->as_array() : nullptr;
  bool netperf_points = !point_list || point_list->empty();
  bool latency_points = false, any_netperf_point = false, rate_points = false, pingpong_points = false;
  if (point_list) {
    for (const auto& node : *point_list) {
      const auto kind = command_kind(node);
      if (kind == PointKind::Netperf || kind == PointKind::NetperfRr) netperf_points = any_netperf_point = true;
      if (kind == PointKind::Latency) latency_points = true;
      if (kind == PointKind::Bandwidth) rate_points = true;
      if (kind == PointKind::Pingpong) pingpong_points = true;
    }
  }

  const toml::node* tol = root.get("tolerance");
  if (!tol) fail_at(origin, 1, "missing table [tolerance]");
  const auto* tt = tol->as_table();
  if (!tt) fail_at(origin, line_of(*tol, 1), "'tolerance' must be a table");
  const uint32_t tol_line = line_of(*tol, 1);
  check_keys(*tt, {"throughput", "service_demand", "t_typical_us", "t_min_us", "utilisation", "usec_per_iter"},
             origin, tol_line, "tolerance: ");
  s.tolerance_line = tol_line;
  // A declared tolerance is checked even when no point uses it; a needed one must be declared.
  auto tolerance = [&](std::string_view key, bool needed) {
    if (!needed && !tt->get(key)) return 0.0;
    return positive_number(*tt, key, origin, tol_line, "tolerance: ");
  };
  s.tolerance.throughput = tolerance("throughput", netperf_points || rate_points);
  s.tolerance.service_demand = tolerance("service_demand", netperf_points);
  s.tolerance.t_typical_us = tolerance("t_typical_us", latency_points);
  s.tolerance.t_min_us = tolerance("t_min_us", latency_points);
  s.tolerance.usec_per_iter = tolerance("usec_per_iter", pingpong_points);
  // Needed when a reference row measures utilisation, which only reading the references tells
  // (check_reference_tolerances).
  s.tolerance.utilisation = tolerance("utilisation", false);

  // The seed's own spread, for validate's target (scenario.h).
  if (const toml::node* spread_node = root.get("spread")) {
    const auto* st = spread_node->as_table();
    if (!st) fail_at(origin, line_of(*spread_node, 1), "'spread' must be a table");
    Spread spread;
    spread.line = line_of(*spread_node, 1);
    check_keys(*st, {"throughput", "service_demand", "utilisation", "source"}, origin,
               spread.line, "spread: ");
    auto metric = [&](std::string_view key) -> std::optional<double> {
      if (!st->get(key)) return std::nullopt;
      return positive_number(*st, key, origin, spread.line, "spread: ");
    };
    spread.throughput = metric("throughput");
    spread.service_demand = metric("service_demand");
    spread.utilisation = metric("utilisation");
    spread.source = required_string(*st, "source", origin, spread.line, "spread: ");
    if (!spread.throughput && !spread.service_demand && !spread.utilisation)
      fail_at(origin, spread.line,
              "spread: no metric declared (throughput, service_demand or utilisation)");
    if (point_list && !point_list->empty() && !any_netperf_point)
      fail_at(origin, spread.line, "spread: applies to netperf points, and the file has none");
    s.spread = std::move(spread);
  }

  if (!points) fail_at(origin, 1, "no [[point]]");
  const auto* array = points->as_array();
  if (!array || array->empty() || !array->is_array_of_tables())
    fail_at(origin, line_of(*points, 1), "'point' must be an array of tables ([[point]])");
  for (size_t i = 0; i < array->size(); ++i)
    s.points.push_back(parse_point(*(*array)[i].as_table(), s, i, line_of(*points, 1)));
  return s;
}

Scenario load_scenario(const std::string& path) {
  return parse_scenario(util::read_text(path, path), path);
}

const char* point_kind_name(PointKind kind) {
  switch (kind) {
    case PointKind::Netperf: return "netperf";
    case PointKind::NetperfRr: return "netperf_rr";
    case PointKind::Latency: return "latency";
    case PointKind::Bandwidth: return "bandwidth";
    case PointKind::Pingpong: return "pingpong";
  }
  return "netperf";
}

/// "TABLE MODE SIZE": the size flag of a netperf point, "BYTES B" of a latency point.
std::string point_label(const ScenarioPoint& p, uint64_t bytes) {
  std::string label = p.table + " " + p.mode;
  if (p.kind != PointKind::Netperf && p.kind != PointKind::NetperfRr)
    label += fmt::format(" {} B", bytes);
  else if (!p.size_flag.empty())
    label += " " + p.size_flag;
  return label;
}

}  // namespace hcasim::scenarios
