// `hcasim run` (run.h): scenario files, reference CSVs, child processes, report and CSV, for
// netperf points and ib_write_lat latency points.
#include "scenarios/run.h"

#include <CLI/CLI.hpp>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>


#include <fmt/format.h>

#include "model/platform.h"
#include "scenarios/children.h"
#include "scenarios/command_words.h"
#include "scenarios/datadir.h"
#include "scenarios/netperf_cli.h"
#include "scenarios/perftest_cli.h"
#include "scenarios/netperf_output.h"
#include "sim/testbed.h"


namespace hcasim::scenarios {

namespace {

namespace fs = std::filesystem;

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

/// Whether `tool` (a base name) is a perftest latency tool a scenario point may run.
bool is_latency_tool(std::string_view tool) { return tool == "ib_write_lat"; }

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
    if (is_latency_tool(base_name(words.front()))) return PointKind::Latency;
    if (!pinned && words.front() == "netperf") return PointKind::Netperf;
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
  if (is_latency_tool(tool)) {
    p.kind = PointKind::Latency;
    p.tool = std::string(tool);
  } else if (tool.substr(0, 3) == "ib_") {
    fail_at(origin, p.line,
            fmt::format("{}command: {} points are not supported (points run netperf or ib_write_lat)",
                        where, tool));
  } else if (pinned) {
    fail_at(origin, p.line,
            where + "command: taskset is accepted only before ib_write_lat (netperf binds with -T)");
  } else if (tool != "netperf") {
    // A path to the tool is accepted, as seed 003's "/opt/netperf/netperf -l 60 ..." shows it.
    fail_at(origin, p.line, where + "command must start with netperf or ib_write_lat (or a path to one)");
  } else {
    p.tool = "netperf";
  }
  words.erase(words.begin());
  for (const auto& w : words) {
    for (const char* reserved : {"--platform", "--remote-platform", "--set", "--csv"}) {
      if (is_long_option(w, reserved))
        fail_at(origin, p.line,
                fmt::format("{}command: {} is set by the scenario (use the point's keys)", where,
                            reserved));
    }
  }
  if (p.kind == PointKind::Latency) {
    PerftestOptions lat;
    try {
      lat = parse_perftest_args(sim::PerftestTest::WriteLat, words);
    } catch (const InputError& e) {
      fail_at(origin, p.line, where + "command: " + e.what());
    }
    if (lat.help || lat.version)
      fail_at(origin, p.line, where + "command: -h / -V print the usage or version and run nothing");
    p.words = std::move(words);
    return p;
  }
  NetperfOptions parsed;
  try {
    parsed = parse_netperf_args(words);
  } catch (const InputError& e) {
    fail_at(origin, p.line, where + "command: " + e.what());
  }
  if (parsed.help) fail_at(origin, p.line, where + "command: -h prints the usage and runs nothing");
  p.words = std::move(words);
  for (const auto& w : parsed.test_words) p.size_flag += (p.size_flag.empty() ? "" : " ") + w;
  return p;
}

/// Index of `name` in a CSV header, or -1.
int column(const std::vector<std::string>& header, std::string_view name) {
  const auto it = std::find(header.begin(), header.end(), name);
  return it == header.end() ? -1 : static_cast<int>(it - header.begin());
}

std::optional<double> number_cell(const std::vector<std::string>& header,
                                  const std::vector<std::string>& row, std::string_view name,
                                  const std::string& origin) {
  const int c = column(header, name);
  if (c < 0 || static_cast<size_t>(c) >= row.size() || row[static_cast<size_t>(c)].empty())
    return std::nullopt;
  const std::string& text = row[static_cast<size_t>(c)];
  const auto v = parse_number(text);
  if (!v) throw InputError(fmt::format("{}: column {}: '{}' is not a number", origin, name, text));
  return v;
}

/// A non-negative integer cell (a message size); InputError "ORIGIN: column NAME: 'X' is not
/// a whole number" otherwise, also when the cell is empty.
uint64_t whole_number_cell(const std::vector<std::string>& header,
                           const std::vector<std::string>& row, std::string_view name,
                           const std::string& origin) {
  const int c = column(header, name);
  if (c < 0) throw InputError(fmt::format("{}: no column '{}'", origin, name));
  const std::string text = static_cast<size_t>(c) < row.size() ? row[static_cast<size_t>(c)] : "";
  const auto v = parse_number(text);
  if (!v || *v < 0 || *v != std::floor(*v) || *v > 9007199254740992.0)  // 2^53
    throw InputError(fmt::format("{}: column {}: '{}' is not a whole number", origin, name, text));
  return static_cast<uint64_t>(*v);
}

/// The header and the one row of CSV text that `spec.match` selects. Throws InputError
/// "ORIGIN: ..." when the file is empty, a match column is missing, or the match selects no
/// row or more than one.
struct SelectedRow {
  std::vector<std::string> header, row;
  std::string where;  ///< "ORIGIN:LINE" of the row, for the errors about its cells
};

SelectedRow select_row(std::string_view csv_text, const std::string& origin, const ReferenceSpec& spec) {
  std::vector<size_t> lines;
  auto rows = parse_csv(csv_text, origin, &lines);
  if (rows.empty()) throw InputError(origin + ": empty file");
  const auto& header = rows.front();
  // A column named twice: the match and the figures would read only the first.
  for (size_t c = 0; c < header.size(); ++c)
    if (std::find(header.begin(), header.begin() + static_cast<std::ptrdiff_t>(c), header[c]) !=
        header.begin() + static_cast<std::ptrdiff_t>(c))
      throw InputError(fmt::format("{}:{}: column '{}' twice", origin, lines[0], header[c]));
  // A row with fewer or more cells than the header is a damaged file, not unmeasured columns.
  for (size_t r = 1; r < rows.size(); ++r)
    if (rows[r].size() != header.size())
      throw InputError(fmt::format("{}:{}: {} fields, the header has {}", origin, lines[r], rows[r].size(),
                                   header.size()));
  std::vector<std::pair<size_t, std::string>> wanted;
  std::string described;
  for (const auto& [name, value] : spec.match) {
    const int c = column(header, name);
    if (c < 0) throw InputError(fmt::format("{}: no column '{}'", origin, name));
    wanted.emplace_back(static_cast<size_t>(c), value);
    described += fmt::format("{}{}={}", described.empty() ? "" : ", ", name, value);
  }
  size_t found = 0, count = 0;
  for (size_t r = 1; r < rows.size(); ++r) {
    const auto& row = rows[r];
    const bool ok = std::all_of(wanted.begin(), wanted.end(), [&](const auto& w) {
      return w.first < row.size() && row[w.first] == w.second;
    });
    if (ok) {
      found = r;
      ++count;
    }
  }
  if (count != 1)
    throw InputError(fmt::format("{}: match {{{}}} selects {} rows (must select exactly one)",
                                 origin, described, count));
  return {std::move(rows.front()), std::move(rows[found]), fmt::format("{}:{}", origin, lines[found])};
}

fs::path reference_path(const ReferenceSpec& spec, const std::string& base_dir) {
  return fs::path(spec.file).is_absolute() ? fs::path(spec.file) : fs::path(base_dir) / spec.file;
}

/// "TABLE MODE SIZE": the size flag of a netperf point, "BYTES B" of a latency point.
std::string point_label(const ScenarioPoint& p, uint64_t bytes = 0) {
  std::string label = p.table + " " + p.mode;
  if (p.kind == PointKind::Latency)
    label += fmt::format(" {} B", bytes);
  else if (!p.size_flag.empty())
    label += " " + p.size_flag;
  return label;
}

// --- report formatting ------------------------------------------------------------------

std::string num(const std::optional<double>& v, int decimals) {
  return v ? fmt::format("{:.{}f}", *v, decimals) : "-";
}

std::string pct(const std::optional<double>& e) {
  return e ? fmt::format("{:+.1f}%", *e * 100.0) : "-";
}

std::string full(const std::optional<double>& v) { return v ? fmt::format("{}", *v) : ""; }

std::string median_max(const std::vector<double>& abs_errors) {
  if (abs_errors.empty()) return "-";
  return fmt::format("{:.1f}% / {:.1f}%", median(abs_errors) * 100.0,
                     *std::max_element(abs_errors.begin(), abs_errors.end()) * 100.0);
}

/// Whether some point of `s` is of `kind`.
bool has_kind(const Scenario& s, PointKind kind) {
  return std::any_of(s.points.begin(), s.points.end(),
                     [&](const ScenarioPoint& p) { return p.kind == kind; });
}

/// The tables of the points of `kind`, in order of first appearance.
std::vector<std::string> tables_of(const Scenario& s, PointKind kind) {
  std::vector<std::string> tables;
  for (const auto& p : s.points)
    if (p.kind == kind && std::find(tables.begin(), tables.end(), p.table) == tables.end())
      tables.push_back(p.table);
  return tables;
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
  bool latency_points = false, any_netperf_point = false;
  if (point_list) {
    for (const auto& node : *point_list) {
      const auto kind = command_kind(node);
      if (kind == PointKind::Netperf) netperf_points = any_netperf_point = true;
      if (kind == PointKind::Latency) latency_points = true;
    }
  }

  const toml::node* tol = root.get("tolerance");
  if (!tol) fail_at(origin, 1, "missing table [tolerance]");
  const auto* tt = tol->as_table();
  if (!tt) fail_at(origin, line_of(*tol, 1), "'tolerance' must be a table");
  const uint32_t tol_line = line_of(*tol, 1);
  check_keys(*tt, {"throughput", "service_demand", "t_typical_us", "t_min_us", "utilisation"},
             origin, tol_line, "tolerance: ");
  s.tolerance_line = tol_line;
  // A declared tolerance is checked even when no point uses it; a needed one must be declared.
  auto tolerance = [&](std::string_view key, bool needed) {
    if (!needed && !tt->get(key)) return 0.0;
    return positive_number(*tt, key, origin, tol_line, "tolerance: ");
  };
  s.tolerance.throughput = tolerance("throughput", netperf_points);
  s.tolerance.service_demand = tolerance("service_demand", netperf_points);
  s.tolerance.t_typical_us = tolerance("t_typical_us", latency_points);
  s.tolerance.t_min_us = tolerance("t_min_us", latency_points);
  // Needed when a reference row measures utilisation, which only reading the references tells
  // (check_reference_tolerances).
  s.tolerance.utilisation = tolerance("utilisation", false);

  // The seed's own spread, for validate's target (run.h).
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
  return parse_scenario(read_text(path, path), path);
}

std::vector<std::string> split_command_line(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else if (c == '\'') {
      const size_t end = text.find('\'', i + 1);
      if (end == std::string_view::npos)
        throw InputError(fmt::format("unterminated single quote in: {}", text));
      word.append(text.substr(i + 1, end - i - 1));
      i = end;
      in_word = true;
    } else if (c == '"') {
      size_t j = i + 1;
      for (;; ++j) {
        if (j >= text.size())
          throw InputError(fmt::format("unterminated double quote in: {}", text));
        if (text[j] == '"') break;
        if (text[j] == '\\' && j + 1 < text.size() &&
            std::string_view("\"\\$`").find(text[j + 1]) != std::string_view::npos)
          ++j;
        word.push_back(text[j]);
      }
      i = j;
      in_word = true;
    } else if (c == '\\') {
      if (i + 1 >= text.size())
        throw InputError(fmt::format("trailing backslash in: {}", text));
      ++i;
      if (text[i] != '\n') word.push_back(text[i]);  // backslash-newline joins lines
      in_word = true;
    } else {
      word.push_back(c);
      in_word = true;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

// --- CSV -------------------------------------------------------------------------------------

std::vector<std::vector<std::string>> parse_csv(std::string_view text, const std::string& origin,
                                                std::vector<size_t>* row_lines) {
  // A UTF-8 byte order mark (spreadsheets write one) is not part of the first column's name.
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string cell;
  bool quoted = false, any = false;
  size_t line = 1, row_line = 1;  // the line being read, the line the current row began on
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (row.empty() && cell.empty() && !any && !quoted) row_line = line;
    if (quoted) {
      if (c == '\n') ++line;
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          cell.push_back('"');
          ++i;
        } else {
          quoted = false;
        }
      } else {
        cell.push_back(c);
      }
    } else if (c == '"') {
      quoted = true;
      any = true;
    } else if (c == ',') {
      row.push_back(std::move(cell));
      cell.clear();
      any = true;
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      if (any || !cell.empty()) {
        row.push_back(std::move(cell));
        rows.push_back(std::move(row));
        if (row_lines) row_lines->push_back(row_line);
      }
      ++line;
      row.clear();
      cell.clear();
      any = false;
    } else {
      cell.push_back(c);
    }
  }
  if (quoted) throw InputError(fmt::format("{}:{}: unterminated quote", origin, row_line));
  if (any || !cell.empty()) {
    row.push_back(std::move(cell));
    rows.push_back(std::move(row));
    if (row_lines) row_lines->push_back(row_line);
  }
  return rows;
}

std::string csv_cell(std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  return out + "\"";
}

namespace {
/// The netperf figures of one CSV row (reference or simulated: the same column names).
Figures netperf_row_figures(const std::vector<std::string>& header, const std::vector<std::string>& row,
                            const std::string& origin) {
  Figures f;
  f.throughput_mbps = number_cell(header, row, "throughput_mbps", origin);
  f.sd_local = number_cell(header, row, "sd_local_us_per_kb", origin);
  f.sd_remote = number_cell(header, row, "sd_remote_us_per_kb", origin);
  f.util_local = number_cell(header, row, "util_local_pct", origin);
  f.util_remote = number_cell(header, row, "util_remote_pct", origin);
  return f;
}

/// The latency figures of one CSV row (reference or simulated: the same column names).
LatencyFigures latency_row_figures(const std::vector<std::string>& header, const std::vector<std::string>& row,
                                   const std::string& origin) {
  LatencyFigures f;
  f.bytes = whole_number_cell(header, row, "bytes", origin);
  f.t_min_us = number_cell(header, row, "t_min_us", origin);
  f.t_max_us = number_cell(header, row, "t_max_us", origin);
  f.t_typical_us = number_cell(header, row, "t_typical_us", origin);
  return f;
}
}  // namespace

/// A measurement is > 0: the comparison divides by it (relative errors) or it is a time.
void check_measured(const std::optional<double>& v, std::string_view column, const std::string& where) {
  if (v && !(*v > 0))
    throw InputError(fmt::format("{}: column {}: measured {} (a measurement must be > 0; leave the cell empty when "
                                 "it was not measured)",
                                 where, column, *v));
}

Figures reference_figures(std::string_view csv_text, const std::string& origin,
                          const ReferenceSpec& spec) {
  const SelectedRow r = select_row(csv_text, origin, spec);
  const Figures f = netperf_row_figures(r.header, r.row, r.where);
  check_measured(f.throughput_mbps, "throughput_mbps", r.where);
  check_measured(f.sd_local, "sd_local_us_per_kb", r.where);
  check_measured(f.sd_remote, "sd_remote_us_per_kb", r.where);
  check_measured(f.util_local, "util_local_pct", r.where);
  check_measured(f.util_remote, "util_remote_pct", r.where);
  // A header without throughput_mbps (a typo) or a row with every figure empty would make a
  // gated point that compares nothing, and passes.
  if (column(r.header, "throughput_mbps") < 0) throw InputError(fmt::format("{}: no column 'throughput_mbps'", origin));
  if (!f.throughput_mbps && !f.sd_local && !f.sd_remote && !f.util_local && !f.util_remote)
    throw InputError(fmt::format("{}: no figure measured (throughput_mbps, sd_*_us_per_kb and util_*_pct are all "
                                 "empty): the point would compare nothing",
                                 r.where));
  return f;
}

Figures read_reference(const ReferenceSpec& spec, const std::string& base_dir) {
  const fs::path file = reference_path(spec, base_dir);
  return reference_figures(read_text(file.string(), file.string()), file.string(), spec);
}

void check_reference_tolerances(const Scenario& scenario, size_t index, const Figures& measured) {
  if ((measured.util_local || measured.util_remote) && !(scenario.tolerance.utilisation > 0))
    fail_at(scenario.origin, scenario.tolerance_line,
            fmt::format("tolerance: missing key 'utilisation' (point {}'s reference measures "
                        "utilisation)",
                        index + 1));
}

LatencyFigures latency_reference_figures(std::string_view csv_text, const std::string& origin,
                                         const ReferenceSpec& spec) {
  const SelectedRow r = select_row(csv_text, origin, spec);
  const LatencyFigures f = latency_row_figures(r.header, r.row, r.where);
  check_measured(f.t_min_us, "t_min_us", r.where);
  check_measured(f.t_max_us, "t_max_us", r.where);
  check_measured(f.t_typical_us, "t_typical_us", r.where);
  for (const char* name : {"t_min_us", "t_max_us", "t_typical_us"})
    if (column(r.header, name) < 0) throw InputError(fmt::format("{}: no column '{}'", origin, name));
  if (!f.t_min_us && !f.t_max_us && !f.t_typical_us)
    throw InputError(fmt::format("{}: no figure measured (t_min_us, t_max_us and t_typical_us are all empty): the "
                                 "point would compare nothing",
                                 r.where));
  return f;
}

LatencyFigures read_latency_reference(const ReferenceSpec& spec, const std::string& base_dir) {
  const fs::path file = reference_path(spec, base_dir);
  return latency_reference_figures(read_text(file.string(), file.string()), file.string(), spec);
}

Figures netperf_csv_figures(std::string_view csv_text, const std::string& origin) {
  const auto rows = parse_csv(csv_text, origin);
  if (rows.size() != 2) throw InputError(origin + ": expected a header and one row");
  return netperf_row_figures(rows[0], rows[1], origin);
}

std::vector<LatencyFigures> latency_csv_rows(std::string_view csv_text, const std::string& origin) {
  const auto rows = parse_csv(csv_text, origin);
  if (rows.empty()) throw InputError(origin + ": empty file");
  const auto& header = rows.front();
  for (const char* name : {"bytes", "t_min_us", "t_max_us", "t_typical_us"})
    if (column(header, name) < 0) throw InputError(fmt::format("{}: no column '{}'", origin, name));
  if (rows.size() < 2) throw InputError(origin + ": no data row");
  std::vector<LatencyFigures> out;
  for (size_t r = 1; r < rows.size(); ++r) out.push_back(latency_row_figures(header, rows[r], origin));
  return out;
}

std::optional<LatencyFigures> latency_row_for_bytes(const std::vector<LatencyFigures>& rows,
                                                    uint64_t bytes) {
  const auto it = std::find_if(rows.begin(), rows.end(),
                               [&](const LatencyFigures& f) { return f.bytes == bytes; });
  if (it == rows.end()) return std::nullopt;
  return *it;
}

// --- comparison and report ------------------------------------------------------------------

PointOutcome evaluate_point(const ScenarioPoint& point, const Tolerance& tolerance,
                            const Figures& measured, const Figures& simulated) {
  PointOutcome o;
  auto compare = [](Metric& m, const std::optional<double>& meas,
                    const std::optional<double>& sim, double tol) {
    m.measured = meas;
    m.simulated = sim;
    if (!meas) return;
    if (!sim) {
      m.within = false;  // measured but not simulated: nothing to vouch for it
      return;
    }
    if (*meas != 0) m.error = (*sim - *meas) / *meas;
    m.within = m.error ? std::fabs(*m.error) <= tol : *sim == *meas;
  };
  compare(o.throughput, measured.throughput_mbps, simulated.throughput_mbps, tolerance.throughput);
  compare(o.sd_local, measured.sd_local, simulated.sd_local, tolerance.service_demand);
  compare(o.sd_remote, measured.sd_remote, simulated.sd_remote, tolerance.service_demand);
  compare(o.util_local, measured.util_local, simulated.util_local, tolerance.utilisation);
  compare(o.util_remote, measured.util_remote, simulated.util_remote, tolerance.utilisation);
  if (!point.gated)
    o.status = "not gated";
  else
    o.status = o.throughput.within && o.sd_local.within && o.sd_remote.within &&
                       o.util_local.within && o.util_remote.within
                   ? "ok"
                   : "FAIL";
  return o;
}

PointOutcome evaluate_latency_point(const ScenarioPoint& point, const Tolerance& tolerance,
                                    const LatencyFigures& measured,
                                    const LatencyFigures& simulated) {
  PointOutcome o;
  o.kind = PointKind::Latency;
  o.bytes = measured.bytes;
  // Absolute errors in us. The slack of 1e-9 us keeps a decimal error exactly at the limit
  // (0.84 - 0.79 against 0.05) within despite binary rounding.
  auto compare = [](Metric& m, const std::optional<double>& meas,
                    const std::optional<double>& sim, std::optional<double> tol) {
    m.measured = meas;
    m.simulated = sim;
    if (!meas) return;
    if (!sim) {
      m.within = !tol;  // measured but not simulated: fails where gated
      return;
    }
    m.error = *sim - *meas;
    m.within = !tol || std::fabs(*m.error) <= *tol + 1e-9;
  };
  compare(o.t_typical, measured.t_typical_us, simulated.t_typical_us, tolerance.t_typical_us);
  compare(o.t_min, measured.t_min_us, simulated.t_min_us, tolerance.t_min_us);
  compare(o.t_max, measured.t_max_us, simulated.t_max_us, std::nullopt);  // reported, not gated
  if (!point.gated)
    o.status = "not gated";
  else
    o.status = o.t_typical.within && o.t_min.within ? "ok" : "FAIL";
  return o;
}

namespace {

/// The netperf part of the report: a row per netperf point, then per table the median and max
/// |error| (run.h format_run_report).
std::string format_netperf_rows(const Scenario& s, const std::vector<PointOutcome>& outcomes) {
  std::string out;
  constexpr const char* row =
      "{:<16} {:<7} {:<8} {:>9} {:>9} {:>7}  {:>6} {:>6} {:>7}  {:>6} {:>6} {:>7}  "
      "{:>6} {:>6} {:>7}  {:>6} {:>6} {:>7}  {}\n";
  std::string groups =
      fmt::format("{:<16} {:<7} {:<8} {:^27}  {:^21}  {:^21}  {:^21}  {:^21}", "", "", "",
                  "throughput, Mbit/s", "SD local, us/KB", "SD remote, us/KB", "util local, %",
                  "util remote, %");
  out += groups.erase(groups.find_last_not_of(' ') + 1) + "\n";
  out += fmt::format(row, "table", "mode", "size", "measured", "simulated", "error", "meas",
                     "sim", "error", "meas", "sim", "error", "meas", "sim", "error", "meas", "sim",
                     "error", "status");
  for (size_t i = 0; i < s.points.size(); ++i) {
    const auto& p = s.points[i];
    const auto& o = outcomes[i];
    if (p.kind != PointKind::Netperf) continue;
    out += fmt::format(row, p.table, p.mode, p.size_flag.empty() ? "-" : p.size_flag,
                       num(o.throughput.measured, 2), num(o.throughput.simulated, 2),
                       pct(o.throughput.error), num(o.sd_local.measured, 3),
                       num(o.sd_local.simulated, 3), pct(o.sd_local.error),
                       num(o.sd_remote.measured, 3), num(o.sd_remote.simulated, 3),
                       pct(o.sd_remote.error), num(o.util_local.measured, 2),
                       num(o.util_local.simulated, 2), pct(o.util_local.error),
                       num(o.util_remote.measured, 2), num(o.util_remote.simulated, 2),
                       pct(o.util_remote.error), o.status);
  }

  // Per table, in order of first appearance.
  constexpr const char* summary = "{:<16} {:>6}  {:<22} {:<26} {}\n";
  out += "\n" + fmt::format(summary, "per table", "points", "|error| throughput",
                            "|error| service demand", "|error| utilisation");
  out += fmt::format(summary, "", "", "median / max", "median / max", "median / max");
  for (const auto& table : tables_of(s, PointKind::Netperf)) {
    std::vector<double> tput, sd, util;
    size_t n = 0;
    for (size_t i = 0; i < s.points.size(); ++i) {
      if (s.points[i].table != table || s.points[i].kind != PointKind::Netperf) continue;
      ++n;
      const auto& o = outcomes[i];
      if (o.throughput.error) tput.push_back(std::fabs(*o.throughput.error));
      if (o.sd_local.error) sd.push_back(std::fabs(*o.sd_local.error));
      if (o.sd_remote.error) sd.push_back(std::fabs(*o.sd_remote.error));
      if (o.util_local.error) util.push_back(std::fabs(*o.util_local.error));
      if (o.util_remote.error) util.push_back(std::fabs(*o.util_remote.error));
    }
    out += fmt::format(summary, table, n, median_max(tput), median_max(sd), median_max(util));
  }
  return out;
}

/// The latency part of the report: its title, a row per latency point, then per table the max
/// |error| of t_typical and t_min and the platforms (run.h format_run_report).
std::string format_latency_rows(const Scenario& s, const std::vector<PointOutcome>& outcomes) {
  std::string out =
      "ib_write_lat latency: half the round trip, in us; error = simulated - measured\n";
  constexpr const char* row =
      "{:<16} {:<15} {:>7}  {:>6} {:>6} {:>7}  {:>6} {:>6} {:>7}  {:>8} {:>8}  {}\n";
  std::string groups = fmt::format("{:<16} {:<15} {:>7}  {:^21}  {:^21}  {:^17}", "", "", "",
                                   "t_typical", "t_min", "t_max (not gated)");
  out += groups.erase(groups.find_last_not_of(' ') + 1) + "\n";
  out += fmt::format(row, "table", "mode", "bytes", "meas", "sim", "error", "meas", "sim", "error",
                     "meas", "sim", "status");
  auto err = [](const Metric& m) {
    if (!m.error) return std::string("-");
    // An error that rounds to zero prints as +0.000, never -0.000.
    const double e = std::fabs(*m.error) < 0.0005 ? 0.0 : *m.error;
    return fmt::format("{:+.3f}", e);
  };
  for (size_t i = 0; i < s.points.size(); ++i) {
    const auto& p = s.points[i];
    const auto& o = outcomes[i];
    if (p.kind != PointKind::Latency) continue;
    out += fmt::format(row, p.table, p.mode, o.bytes, num(o.t_typical.measured, 3),
                       num(o.t_typical.simulated, 3), err(o.t_typical), num(o.t_min.measured, 3),
                       num(o.t_min.simulated, 3), err(o.t_min), num(o.t_max.measured, 2),
                       num(o.t_max.simulated, 2), o.status);
  }

  constexpr const char* summary = "{:<16} {:>6}  {:<21}  {:<17}  {}\n";
  out += "\n" + fmt::format(summary, "per table", "points", "max |error| t_typical",
                            "max |error| t_min", "platform");
  auto max_abs = [](const std::vector<double>& v) {
    return v.empty() ? std::string("-")
                     : fmt::format("{:.3f} us", *std::max_element(v.begin(), v.end()));
  };
  for (const auto& table : tables_of(s, PointKind::Latency)) {
    std::vector<double> typical, minimum;
    std::vector<std::string> platforms;
    size_t n = 0;
    for (size_t i = 0; i < s.points.size(); ++i) {
      const auto& p = s.points[i];
      if (p.table != table || p.kind != PointKind::Latency) continue;
      ++n;
      const auto& o = outcomes[i];
      if (o.t_typical.error) typical.push_back(std::fabs(*o.t_typical.error));
      if (o.t_min.error) minimum.push_back(std::fabs(*o.t_min.error));
      if (std::find(platforms.begin(), platforms.end(), p.platform) == platforms.end())
        platforms.push_back(p.platform);
    }
    std::string joined;
    for (const auto& name : platforms) joined += (joined.empty() ? "" : ", ") + name;
    out += fmt::format(summary, table, n, max_abs(typical), max_abs(minimum), joined);
  }
  return out;
}

}  // namespace

std::string format_run_report(const Scenario& s, const std::vector<PointOutcome>& outcomes) {
  const bool latency = has_kind(s, PointKind::Latency);
  const bool netperf = has_kind(s, PointKind::Netperf) || !latency;
  std::string tolerances;
  if (netperf)
    tolerances = fmt::format("throughput {:.0f}%, service demand {:.0f}%",
                             s.tolerance.throughput * 100.0, s.tolerance.service_demand * 100.0);
  if (netperf && s.tolerance.utilisation > 0)
    tolerances += fmt::format(", utilisation {:.0f}%", s.tolerance.utilisation * 100.0);
  if (latency)
    tolerances += fmt::format("{}t_typical {} us, t_min {} us", netperf ? ", " : "",
                              s.tolerance.t_typical_us, s.tolerance.t_min_us);
  std::string out =
      fmt::format("scenario {}: platform {}; tolerance: {}\n", s.name, s.platform, tolerances);
  if (!s.source.empty()) out += fmt::format("measured: {}\n", s.source);
  if (netperf) out += "\n" + format_netperf_rows(s, outcomes);
  if (latency) out += "\n" + format_latency_rows(s, outcomes);

  // Verdict.
  size_t gated = 0;
  std::vector<std::string> failures;
  for (size_t i = 0; i < s.points.size(); ++i) {
    const auto& p = s.points[i];
    const auto& o = outcomes[i];
    if (!p.gated) continue;
    ++gated;
    if (o.status != "FAIL") continue;
    std::vector<std::string> why;
    auto explain = [&](const Metric& m, const char* name, double tol) {
      if (m.within) return;
      why.push_back(m.error ? fmt::format("{} {} beyond {:.0f}%", name, pct(m.error), tol * 100.0)
                            : fmt::format("{} not simulated", name));
    };
    auto explain_us = [&](const Metric& m, const char* name, double tol) {
      if (m.within) return;
      why.push_back(m.error ? fmt::format("{} {:+.3f} us beyond {} us", name, *m.error, tol)
                            : fmt::format("{} not simulated", name));
    };
    if (p.kind == PointKind::Latency) {
      explain_us(o.t_typical, "t_typical", s.tolerance.t_typical_us);
      explain_us(o.t_min, "t_min", s.tolerance.t_min_us);
    } else {
      explain(o.throughput, "throughput", s.tolerance.throughput);
      explain(o.sd_local, "SD local", s.tolerance.service_demand);
      explain(o.sd_remote, "SD remote", s.tolerance.service_demand);
      explain(o.util_local, "util local", s.tolerance.utilisation);
      explain(o.util_remote, "util remote", s.tolerance.utilisation);
    }
    std::string joined;
    for (const auto& w : why) joined += (joined.empty() ? "" : ", ") + w;
    failures.push_back(fmt::format("  {} ({})", point_label(p, o.bytes), joined));
  }
  out += "\n";
  if (failures.empty()) {
    out += fmt::format("ok: all {} gated points within tolerance\n", gated);
  } else {
    out += fmt::format("FAIL: {} of {} gated points out of tolerance:\n", failures.size(), gated);
    for (const auto& f : failures) out += f + "\n";
  }
  return out;
}

std::string run_csv_header(bool latency_columns) {
  std::string header =
      "scenario,table,mode,size_flag,command,gated,meas_throughput_mbps,sim_throughput_mbps,"
      "err_throughput_pct,meas_sd_local,sim_sd_local,err_sd_local_pct,meas_sd_remote,"
      "sim_sd_remote,err_sd_remote_pct,meas_util_local_pct,sim_util_local_pct,err_util_local_pct,"
      "meas_util_remote_pct,sim_util_remote_pct,err_util_remote_pct,status";
  if (latency_columns)
    header += ",bytes,meas_t_typical_us,sim_t_typical_us,err_t_typical_us,meas_t_min_us,"
              "sim_t_min_us,err_t_min_us,meas_t_max_us,sim_t_max_us";
  return header;
}

std::string format_run_csv(const Scenario& s, const std::vector<PointOutcome>& outcomes) {
  const bool latency = has_kind(s, PointKind::Latency);
  std::string out = run_csv_header(latency) + "\n";
  auto err_pct = [](const Metric& m) {
    return m.error ? fmt::format("{:.4f}", *m.error * 100.0) : std::string();
  };
  auto err_us = [](const Metric& m) {
    return m.error ? fmt::format("{:.4f}", *m.error) : std::string();
  };
  for (size_t i = 0; i < s.points.size(); ++i) {
    const auto& p = s.points[i];
    const auto& o = outcomes[i];
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                       csv_cell(s.name), csv_cell(p.table), csv_cell(p.mode),
                       csv_cell(p.size_flag), csv_cell(p.command), p.gated ? "true" : "false",
                       full(o.throughput.measured), full(o.throughput.simulated),
                       err_pct(o.throughput), full(o.sd_local.measured),
                       full(o.sd_local.simulated), err_pct(o.sd_local),
                       full(o.sd_remote.measured), full(o.sd_remote.simulated),
                       err_pct(o.sd_remote), full(o.util_local.measured),
                       full(o.util_local.simulated), err_pct(o.util_local),
                       full(o.util_remote.measured), full(o.util_remote.simulated),
                       err_pct(o.util_remote), csv_cell(o.status));
    if (latency) {
      out += fmt::format(",{},{},{},{},{},{},{},{},{}",
                         p.kind == PointKind::Latency ? std::to_string(o.bytes) : "",
                         full(o.t_typical.measured), full(o.t_typical.simulated),
                         err_us(o.t_typical), full(o.t_min.measured), full(o.t_min.simulated),
                         err_us(o.t_min), full(o.t_max.measured), full(o.t_max.simulated));
    }
    out += "\n";
  }
  return out;
}

// --- the run ----------------------------------------------------------------------------------

RunOptions parse_run_args(const std::vector<std::string>& args) {
  CLI::App app{"Runs a scenario file: every point in its own simulation, compared with its "
               "measurement.",
               "hcasim run"};
  app.set_help_flag();
  RunOptions o;
  std::string csv, jobs;
  auto* opt_scenario = app.add_option("scenario", o.scenario, "scenario FILE or NAME");
  auto* opt_jobs = app.add_option("-j,--jobs", jobs, "points run at once");
  auto* opt_csv = app.add_option("--csv", csv, "results CSV");
  for (auto* opt : {opt_scenario, opt_jobs, opt_csv})
    opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    throw InputError(e.what());
  }
  check_single_value("-j", opt_jobs->results());
  if (opt_jobs->count()) o.jobs = parse_jobs(jobs);
  if (opt_csv->count()) {
    check_given_once("--csv", opt_csv->results());
    if (csv.empty()) throw InputError("--csv: empty path");
    o.csv_path = csv;
  }
  if (o.scenario.empty()) throw InputError("empty scenario name");
  return o;
}

std::string safe_file_name(const std::string& name) {
  std::string safe = name;
  for (char& ch : safe)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_' && ch != '.') ch = '_';
  if (safe.empty() || safe[0] == '.') safe.insert(0, "scenario");
  return safe;
}

namespace {

/// What a scenario's points need before its children start: the measured figures and the
/// resolved platform files (simulate_scenarios checks them all first).
struct CheckedScenario {
  std::vector<Figures> measured;                    // netperf points
  std::vector<LatencyFigures> measured_latency;     // latency points
  std::map<std::string, std::string> platform_files;  // point platform -> file
};

/// Reads every reference of `s` and applies every point's --set to its platform, as the child
/// will (simulate_scenarios).
CheckedScenario check_scenario(const Scenario& s, const std::string& base) {
  CheckedScenario c;
  c.measured.resize(s.points.size());
  c.measured_latency.resize(s.points.size());
  std::map<std::string, model::Platform> platforms;
  for (size_t i = 0; i < s.points.size(); ++i) {
    const ScenarioPoint& p = s.points[i];
    try {
      if (p.kind == PointKind::Latency)
        c.measured_latency[i] = read_latency_reference(p.reference, base);
      else
        c.measured[i] = read_reference(p.reference, base);
    } catch (const InputError& e) {
      fail_at(s.origin, p.line, fmt::format("point {}: reference: {}", i + 1, e.what()));
    }
    if (p.kind == PointKind::Netperf) check_reference_tolerances(s, i, c.measured[i]);
    // The platform and its --set assignments, as the child will apply them.
    try {
      for (const std::string* name : {&p.platform, &p.remote_platform}) {
        if (name->empty()) continue;
        if (!c.platform_files.count(*name)) {
          c.platform_files[*name] = resolve_platform(*name, name == &p.platform ? "platform" : "remote_platform");
          platforms.emplace(*name, load_platform(c.platform_files[*name]));
        }
        model::Platform copy = platforms.at(*name);
        for (const auto& assignment : platform_settings(p.set)) copy.set(assignment);
        // Every model check the child would make on the platform (ranges, validators,
        // consistency, unused keys), so that a bad value is a FILE:LINE error before any run.
        (void)sim::read_host_params(copy);
      }
    } catch (const InputError& e) {
      fail_at(s.origin, p.line, fmt::format("point {}: {}", i + 1, e.what()));
    }
  }
  return c;
}

}  // namespace

double parse_duration_flag(const std::string& text) {
  const auto d = parse_number(text);
  if (!d || !std::isfinite(*d) || *d < 0 || *d > 3600)
    throw InputError(fmt::format("--duration: '{}' must be 0..3600 seconds", text));
  return *d;
}

std::vector<std::string> with_sim_length(const std::string& tool, std::vector<std::string> words,
                                         const SimLength& length) {
  if (tool == "netperf" && length.duration_s) {
    const auto dashes = std::find(words.begin(), words.end(), "--");
    words.insert(dashes, {"-l", fmt::format("{}", *length.duration_s)});
  }
  if (tool != "netperf" && length.iterations) {
    uint64_t typed = tool == "ib_write_bw" ? 5000 : 1000;  // perftest's defaults
    for (size_t i = 0; i + 1 < words.size(); ++i)
      if (words[i] == "-n" || words[i] == "--iters")
        if (const auto n = parse_number(words[i + 1])) typed = static_cast<uint64_t>(*n);
    words.insert(words.end(), {"-n", fmt::format("{}", std::min(typed, *length.iterations))});
  }
  return words;
}

std::vector<std::vector<PointOutcome>> simulate_scenarios(const std::vector<Scenario>& scenarios,
                                                          size_t parallel, const SimLength& length) {
  const std::string base = data_dir();
  std::vector<CheckedScenario> checked;
  for (const Scenario& s : scenarios) checked.push_back(check_scenario(s, base));

  // One child per distinct command line; every point that has it shares its figures.
  std::vector<ChildRun> runs;
  std::vector<std::vector<size_t>> run_of(scenarios.size());
  auto prefix = [&](const Scenario& s) { return scenarios.size() > 1 ? s.name + " " : std::string(); };
  for (size_t k = 0; k < scenarios.size(); ++k) {
    const Scenario& s = scenarios[k];
    for (size_t i = 0; i < s.points.size(); ++i) {
      const auto& p = s.points[i];
      std::vector<std::string> argv = {"hcasim", p.tool};
      const std::vector<std::string> words = with_sim_length(p.tool, p.words, length);
      argv.insert(argv.end(), words.begin(), words.end());
      argv.insert(argv.end(), {"--platform", checked[k].platform_files[p.platform]});
      if (!p.remote_platform.empty())
        argv.insert(argv.end(), {"--remote-platform", checked[k].platform_files[p.remote_platform]});
      for (const auto& set : p.set) argv.insert(argv.end(), {"--set", set});
      const auto same = std::find_if(runs.begin(), runs.end(), [&](const ChildRun& r) { return r.argv == argv; });
      run_of[k].push_back(static_cast<size_t>(same - runs.begin()));
      if (same == runs.end())
        runs.push_back({std::move(argv),
                        fmt::format("{}point {} ({})", prefix(s), i + 1,
                                    point_label(p, checked[k].measured_latency[i].bytes)),
                        fmt::format("{}:{}", s.origin, p.line)});
    }
  }

  const std::vector<ChildResult> results = run_children(runs, parallel);

  std::vector<std::vector<PointOutcome>> outcomes(scenarios.size());
  for (size_t k = 0; k < scenarios.size(); ++k) {
    const Scenario& s = scenarios[k];
    const CheckedScenario& c = checked[k];
    for (size_t i = 0; i < s.points.size(); ++i) {
      const ScenarioPoint& p = s.points[i];
      const size_t run = run_of[k][i];
      const ChildResult& r = results[run];
      const std::string origin = fmt::format("{} CSV", runs[run].label);
      try {
        if (p.kind == PointKind::Netperf) {
          outcomes[k].push_back(
              evaluate_point(p, s.tolerance, c.measured[i], netperf_csv_figures(r.csv, origin)));
          continue;
        }
        // Every latency point takes the row of its reference's message size.
        const auto row = latency_row_for_bytes(latency_csv_rows(r.csv, origin), c.measured_latency[i].bytes);
        if (!row)
          throw InputError(fmt::format("its {} CSV has no row for {} bytes (does the command run that size?)",
                                       p.tool, c.measured_latency[i].bytes));
        outcomes[k].push_back(evaluate_latency_point(p, s.tolerance, c.measured_latency[i], *row));
      } catch (const InputError& e) {
        throw ChildFailure(run,
                           fmt::format("{}point {} ({}) failed: {}", prefix(s), i + 1,
                                       point_label(p, c.measured_latency[i].bytes), e.what()),
                           r.errors);
      }
    }
  }
  return outcomes;
}

std::vector<PointOutcome> simulate_scenario(const Scenario& scenario, size_t parallel) {
  return simulate_scenarios({scenario}, parallel).front();
}

int run_scenario(const RunOptions& options) {
  const std::string path = resolve_scenario(options.scenario);
  const Scenario s = load_scenario(path);
  // The default file lands in the working directory, whatever the name says.
  const std::string csv_path = options.csv_path.value_or(safe_file_name(s.name) + "-results.csv");
  check_output_path(csv_path, "--csv");
  std::vector<std::string> inputs = {path};
  for (const ScenarioPoint& p : s.points) inputs.push_back(reference_path(p.reference, data_dir()).string());
  check_not_an_input(csv_path, inputs, "--csv");

  const size_t parallel = static_cast<size_t>(options.jobs > 0 ? options.jobs : online_cpus());
  std::vector<PointOutcome> outcomes;
  try {
    outcomes = simulate_scenario(s, parallel);
  } catch (const ChildFailure& e) {
    return print_child_failure(e);
  } catch (const Interrupted& e) {
    return print_interrupted(e);
  }
  const bool all_ok = std::none_of(outcomes.begin(), outcomes.end(),
                                   [](const PointOutcome& o) { return o.status == "FAIL"; });
  // A file first (a failure to write it leaves stdout empty); --csv /dev/stdout after the report.
  if (!is_stdout_path(csv_path)) write_file_atomically(csv_path, format_run_csv(s, outcomes), "--csv");
  std::cout << format_run_report(s, outcomes) << std::flush;
  if (is_stdout_path(csv_path)) write_file_atomically(csv_path, format_run_csv(s, outcomes), "--csv");
  return all_ok ? 0 : 1;
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2.0;
}

}  // namespace hcasim::scenarios
