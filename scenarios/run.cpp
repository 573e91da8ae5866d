// `hcasim run` (run.h): scenario files, reference CSVs, child processes, report and CSV.
#include "scenarios/run.h"

#include <CLI/CLI.hpp>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "model/platform.h"
#include "scenarios/datadir.h"
#include "scenarios/netperf_cli.h"
#include "scenarios/netperf_output.h"

extern char** environ;

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

std::string read_text(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot read ({})", what, std::strerror(errno)));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
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

ScenarioPoint parse_point(const toml::table& t, const Scenario& scenario, size_t index,
                          uint32_t array_line) {
  const std::string& origin = scenario.origin;
  ScenarioPoint p;
  p.line = line_of(t, array_line);
  const std::string where = fmt::format("point {}: ", index + 1);
  check_keys(t, {"table", "mode", "set", "platform", "command", "reference", "gated"}, origin,
             p.line, where);
  p.table = required_string(t, "table", origin, p.line, where);
  p.mode = required_string(t, "mode", origin, p.line, where);
  p.command = required_string(t, "command", origin, p.line, where);
  p.platform = optional_string(t, "platform", origin, p.line, where);
  if (p.platform.empty()) p.platform = scenario.platform;

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

  // The command: a netperf command line, checked with the netperf parser.
  std::vector<std::string> words;
  try {
    words = split_command_line(p.command);
  } catch (const InputError& e) {
    fail_at(origin, p.line, where + "command: " + e.what());
  }
  if (words.empty() || words.front() != "netperf")
    fail_at(origin, p.line, where + "command must start with \"netperf\"");
  words.erase(words.begin());
  for (const auto& w : words) {
    for (const char* reserved : {"--platform", "--remote-platform", "--set", "--csv"}) {
      const std::string_view r = reserved;
      if (w == r || (w.size() > r.size() && w.compare(0, r.size(), r) == 0 && w[r.size()] == '='))
        fail_at(origin, p.line,
                fmt::format("{}command: {} is set by the scenario (use the point's keys)", where,
                            reserved));
    }
  }
  NetperfOptions parsed;
  try {
    parsed = parse_netperf_args(words);
  } catch (const InputError& e) {
    fail_at(origin, p.line, where + "command: " + e.what());
  }
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

std::string point_label(const ScenarioPoint& p) {
  std::string label = p.table + " " + p.mode;
  if (!p.size_flag.empty()) label += " " + p.size_flag;
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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

std::string median_max(const std::vector<double>& abs_errors) {
  if (abs_errors.empty()) return "-";
  return fmt::format("{:.1f}% / {:.1f}%", median(abs_errors) * 100.0,
                     *std::max_element(abs_errors.begin(), abs_errors.end()) * 100.0);
}

// --- child processes --------------------------------------------------------------------

/// A private temporary directory, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = fmt::format("{}/hcasim-run-XXXXXX", base && *base ? base : "/tmp");
    if (!::mkdtemp(pattern.data()))
      throw InputError(fmt::format("cannot create a temporary directory {} ({})", pattern,
                                   std::strerror(errno)));
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// One child run: a unique argv shared by every point that has it.
struct Job {
  std::vector<std::string> argv;
  std::vector<size_t> points;  ///< indices of the points it serves
  std::string csv_path, err_path;
  pid_t pid = -1;
  bool done = false;
  Figures simulated;
};

pid_t spawn(const Job& job) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, job.err_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<char*> argv;
  for (const auto& a : job.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    throw std::runtime_error(fmt::format("cannot start /proc/self/exe: {}", std::strerror(rc)));
  return pid;
}

/// The child's first error line: its first "hcasim: error: " or "hcasim: internal error: "
/// line, else its first line.
std::string first_error_line(const std::string& err) {
  std::istringstream in(err);
  std::string line, first;
  while (std::getline(in, line)) {
    if (line.rfind("hcasim: error: ", 0) == 0) return line.substr(15);
    if (line.rfind("hcasim: internal error: ", 0) == 0) return line.substr(8);
    if (first.empty() && !line.empty()) first = line;
  }
  return first.empty() ? "(no message)" : first;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return fmt::format("exit status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("killed by signal {}", WTERMSIG(status));
  return "stopped";
}

int online_cpus() {
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
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
  check_keys(root, {"name", "description", "platform", "source", "tolerance", "point"}, origin, 1,
             "");
  s.name = required_string(root, "name", origin, 1, "");
  s.description = optional_string(root, "description", origin, 1, "");
  s.platform = required_string(root, "platform", origin, 1, "");
  s.source = optional_string(root, "source", origin, 1, "");

  const toml::node* tol = root.get("tolerance");
  if (!tol) fail_at(origin, 1, "missing table [tolerance]");
  const auto* tt = tol->as_table();
  if (!tt) fail_at(origin, line_of(*tol, 1), "'tolerance' must be a table");
  const uint32_t tol_line = line_of(*tol, 1);
  check_keys(*tt, {"throughput", "service_demand"}, origin, tol_line, "tolerance: ");
  s.tolerance.throughput = positive_number(*tt, "throughput", origin, tol_line, "tolerance: ");
  s.tolerance.service_demand =
      positive_number(*tt, "service_demand", origin, tol_line, "tolerance: ");

  const toml::node* points = root.get("point");
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

std::vector<std::vector<std::string>> parse_csv(std::string_view text, const std::string& origin) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string cell;
  bool quoted = false, any = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
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
      }
      row.clear();
      cell.clear();
      any = false;
    } else {
      cell.push_back(c);
    }
  }
  if (quoted) throw InputError(origin + ": unterminated quote");
  if (any || !cell.empty()) {
    row.push_back(std::move(cell));
    rows.push_back(std::move(row));
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

Figures reference_figures(std::string_view csv_text, const std::string& origin,
                          const ReferenceSpec& spec) {
  const auto rows = parse_csv(csv_text, origin);
  if (rows.empty()) throw InputError(origin + ": empty file");
  const auto& header = rows.front();
  std::vector<std::pair<size_t, std::string>> wanted;
  std::string described;
  for (const auto& [name, value] : spec.match) {
    const int c = column(header, name);
    if (c < 0) throw InputError(fmt::format("{}: no column '{}'", origin, name));
    wanted.emplace_back(static_cast<size_t>(c), value);
    described += fmt::format("{}{}={}", described.empty() ? "" : ", ", name, value);
  }
  const std::vector<std::string>* found = nullptr;
  size_t count = 0;
  for (size_t r = 1; r < rows.size(); ++r) {
    const auto& row = rows[r];
    const bool ok = std::all_of(wanted.begin(), wanted.end(), [&](const auto& w) {
      return w.first < row.size() && row[w.first] == w.second;
    });
    if (ok) {
      found = &row;
      ++count;
    }
  }
  if (count != 1)
    throw InputError(fmt::format("{}: match {{{}}} selects {} rows (must select exactly one)",
                                 origin, described, count));
  Figures f;
  f.throughput_mbps = number_cell(header, *found, "throughput_mbps", origin);
  f.sd_local = number_cell(header, *found, "sd_local_us_per_kb", origin);
  f.sd_remote = number_cell(header, *found, "sd_remote_us_per_kb", origin);
  return f;
}

Figures read_reference(const ReferenceSpec& spec, const std::string& base_dir) {
  const fs::path file = fs::path(spec.file).is_absolute() ? fs::path(spec.file)
                                                          : fs::path(base_dir) / spec.file;
  return reference_figures(read_text(file.string(), file.string()), file.string(), spec);
}

Figures netperf_csv_figures(std::string_view csv_text, const std::string& origin) {
  const auto rows = parse_csv(csv_text, origin);
  if (rows.size() != 2) throw InputError(origin + ": expected a header and one row");
  Figures f;
  f.throughput_mbps = number_cell(rows[0], rows[1], "throughput_mbps", origin);
  f.sd_local = number_cell(rows[0], rows[1], "sd_local_us_per_kb", origin);
  f.sd_remote = number_cell(rows[0], rows[1], "sd_remote_us_per_kb", origin);
  return f;
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
  if (!point.gated)
    o.status = "not gated";
  else
    o.status = o.throughput.within && o.sd_local.within && o.sd_remote.within ? "ok" : "FAIL";
  return o;
}

std::string format_run_report(const Scenario& s, const std::vector<PointOutcome>& outcomes) {
  std::string out = fmt::format(
      "scenario {}: platform {}; tolerance: throughput {:.0f}%, service demand {:.0f}%\n", s.name,
      s.platform, s.tolerance.throughput * 100.0, s.tolerance.service_demand * 100.0);
  if (!s.source.empty()) out += fmt::format("measured: {}\n", s.source);
  out += "\n";
  constexpr const char* row = "{:<16} {:<7} {:<8} {:>9} {:>9} {:>7}  {:>6} {:>6} {:>7}  {:>6} {:>6} {:>7}  {}\n";
  std::string groups = fmt::format("{:<16} {:<7} {:<8} {:^27}  {:^21}  {:^21}", "", "", "",
                                    "throughput, Mbit/s", "SD local, us/KB", "SD remote, us/KB");
  out += groups.erase(groups.find_last_not_of(' ') + 1) + "\n";
  out += fmt::format(row, "table", "mode", "size", "measured", "simulated", "error", "meas",
                     "sim", "error", "meas", "sim", "error", "status");
  for (size_t i = 0; i < s.points.size(); ++i) {
    const auto& p = s.points[i];
    const auto& o = outcomes[i];
    out += fmt::format(row, p.table, p.mode, p.size_flag.empty() ? "-" : p.size_flag,
                       num(o.throughput.measured, 2), num(o.throughput.simulated, 2),
                       pct(o.throughput.error), num(o.sd_local.measured, 3),
                       num(o.sd_local.simulated, 3), pct(o.sd_local.error),
                       num(o.sd_remote.measured, 3), num(o.sd_remote.simulated, 3),
                       pct(o.sd_remote.error), o.status);
  }

  // Per table, in order of first appearance.
  out += fmt::format("\n{:<16} {:>6}  {:<22} {}\n", "per table", "points",
                     "|error| throughput", "|error| service demand");
  out += fmt::format("{:<16} {:>6}  {:<22} {}\n", "", "", "median / max", "median / max");
  std::vector<std::string> tables;
  for (const auto& p : s.points)
    if (std::find(tables.begin(), tables.end(), p.table) == tables.end()) tables.push_back(p.table);
  for (const auto& table : tables) {
    std::vector<double> tput, sd;
    size_t n = 0;
    for (size_t i = 0; i < s.points.size(); ++i) {
      if (s.points[i].table != table) continue;
      ++n;
      const auto& o = outcomes[i];
      if (o.throughput.error) tput.push_back(std::fabs(*o.throughput.error));
      if (o.sd_local.error) sd.push_back(std::fabs(*o.sd_local.error));
      if (o.sd_remote.error) sd.push_back(std::fabs(*o.sd_remote.error));
    }
    out += fmt::format("{:<16} {:>6}  {:<22} {}\n", table, n, median_max(tput), median_max(sd));
  }

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
    explain(o.throughput, "throughput", s.tolerance.throughput);
    explain(o.sd_local, "SD local", s.tolerance.service_demand);
    explain(o.sd_remote, "SD remote", s.tolerance.service_demand);
    std::string joined;
    for (const auto& w : why) joined += (joined.empty() ? "" : ", ") + w;
    failures.push_back(fmt::format("  {} ({})", point_label(p), joined));
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

std::string run_csv_header() {
  return "scenario,table,mode,size_flag,command,gated,meas_throughput_mbps,sim_throughput_mbps,"
         "err_throughput_pct,meas_sd_local,sim_sd_local,err_sd_local_pct,meas_sd_remote,"
         "sim_sd_remote,err_sd_remote_pct,status";
}

std::string format_run_csv(const Scenario& s, const std::vector<PointOutcome>& outcomes) {
  std::string out = run_csv_header() + "\n";
  auto err_pct = [](const Metric& m) {
    return m.error ? fmt::format("{:.4f}", *m.error * 100.0) : std::string();
  };
  for (size_t i = 0; i < s.points.size(); ++i) {
    const auto& p = s.points[i];
    const auto& o = outcomes[i];
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", csv_cell(s.name),
                       csv_cell(p.table), csv_cell(p.mode), csv_cell(p.size_flag),
                       csv_cell(p.command), p.gated ? "true" : "false",
                       full(o.throughput.measured), full(o.throughput.simulated),
                       err_pct(o.throughput), full(o.sd_local.measured),
                       full(o.sd_local.simulated), err_pct(o.sd_local),
                       full(o.sd_remote.measured), full(o.sd_remote.simulated),
                       err_pct(o.sd_remote), csv_cell(o.status));
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
  if (opt_jobs->count()) {
    const auto n = parse_number(jobs);
    if (!n || *n != std::floor(*n)) throw InputError(fmt::format("-j: '{}' is not a number", jobs));
    if (*n < 1 || *n > 4096) throw InputError(fmt::format("-j: '{}' must be 1..4096", jobs));
    o.jobs = static_cast<int>(*n);
  }
  if (opt_csv->count()) {
    if (csv.empty()) throw InputError("--csv: empty path");
    o.csv_path = csv;
  }
  if (o.scenario.empty()) throw InputError("empty scenario name");
  return o;
}

int run_scenario(const RunOptions& options) {
  const std::string path = resolve_scenario(options.scenario);
  const Scenario s = load_scenario(path);
  const std::string base = data_dir();
  std::string safe_name = s.name;  // the default file lands in the working directory, whatever the name says
  for (char& ch : safe_name)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_' && ch != '.') ch = '_';
  if (safe_name.empty() || safe_name[0] == '.') safe_name.insert(0, "scenario");
  const std::string csv_path = options.csv_path.value_or(safe_name + "-results.csv");
  check_output_path(csv_path, "--csv");

  // Everything the children need, checked before any of them starts.
  std::vector<Figures> measured;
  std::map<std::string, std::string> platform_files;
  std::map<std::string, model::Platform> platforms;
  for (size_t i = 0; i < s.points.size(); ++i) {
    const ScenarioPoint& p = s.points[i];
    try {
      measured.push_back(read_reference(p.reference, base));
    } catch (const InputError& e) {
      fail_at(s.origin, p.line, fmt::format("point {}: reference: {}", i + 1, e.what()));
    }
    // The platform and its --set assignments, as the child will apply them.
    try {
      if (!platform_files.count(p.platform)) {
        platform_files[p.platform] = resolve_platform(p.platform);
        platforms.emplace(p.platform, model::Platform::load_file(platform_files[p.platform]));
      }
      model::Platform copy = platforms.at(p.platform);
      for (const auto& assignment : p.set) copy.set(assignment);
    } catch (const InputError& e) {
      fail_at(s.origin, p.line, fmt::format("point {}: {}", i + 1, e.what()));
    }
  }

  TempDir tmp;
  std::vector<Job> jobs;
  std::vector<size_t> job_of(s.points.size());
  for (size_t i = 0; i < s.points.size(); ++i) {
    const auto& p = s.points[i];
    std::vector<std::string> argv = {"hcasim", "netperf"};
    argv.insert(argv.end(), p.words.begin(), p.words.end());
    argv.insert(argv.end(), {"--platform", platform_files[p.platform]});
    for (const auto& set : p.set) argv.insert(argv.end(), {"--set", set});
    const auto same = std::find_if(jobs.begin(), jobs.end(), [&](const Job& j) {
      return std::equal(j.argv.begin(), j.argv.end() - 2, argv.begin(), argv.end());
    });
    if (same != jobs.end()) {
      same->points.push_back(i);
      job_of[i] = static_cast<size_t>(same - jobs.begin());
      continue;
    }
    Job job;
    job.csv_path = fmt::format("{}/point-{}.csv", tmp.path(), i + 1);
    job.err_path = fmt::format("{}/point-{}.err", tmp.path(), i + 1);
    job.argv = std::move(argv);
    job.argv.insert(job.argv.end(), {"--csv", job.csv_path});
    job.points.push_back(i);
    job_of[i] = jobs.size();
    jobs.push_back(std::move(job));
  }

  const size_t parallel =
      static_cast<size_t>(options.jobs > 0 ? options.jobs : online_cpus());
  const bool progress = ::isatty(STDERR_FILENO) != 0;
  std::map<pid_t, size_t> running;
  size_t next = 0;
  std::optional<std::string> failure;
  std::string failed_stderr;

  auto stop_all = [&]() {
    for (const auto& [pid, index] : running) ::kill(pid, SIGTERM);
    for (const auto& [pid, index] : running) {
      int status = 0;
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
    running.clear();
  };

  try {
    while (!failure && (next < jobs.size() || !running.empty())) {
      while (next < jobs.size() && running.size() < parallel) {
        Job& job = jobs[next];
        if (progress)
          std::cerr << fmt::format("\r[{}/{}] {}\033[K", next + 1, jobs.size(),
                                   point_label(s.points[job.points.front()]))
                    << std::flush;
        job.pid = spawn(job);
        running[job.pid] = next;
        ++next;
      }
      int status = 0;
      const pid_t pid = ::waitpid(-1, &status, 0);
      if (pid < 0) {
        if (errno == EINTR) continue;
        throw std::runtime_error(fmt::format("waitpid: {}", std::strerror(errno)));
      }
      const auto it = running.find(pid);
      if (it == running.end()) continue;  // not one of ours
      Job& job = jobs[it->second];
      running.erase(it);
      job.done = true;
      const ScenarioPoint& first = s.points[job.points.front()];
      std::string err;
      {
        std::ifstream in(job.err_path);
        std::ostringstream text;
        text << in.rdbuf();
        err = text.str();
      }
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        failure = fmt::format("point {} ({}) failed ({}): {}", job.points.front() + 1,
                              point_label(first), describe_status(status), first_error_line(err));
        failed_stderr = err;
        break;
      }
      try {
        job.simulated = netperf_csv_figures(read_text(job.csv_path, job.csv_path), job.csv_path);
      } catch (const InputError& e) {
        failure = fmt::format("point {} ({}) failed: {}", job.points.front() + 1,
                              point_label(first), e.what());
        failed_stderr = err;
      }
    }
  } catch (...) {
    stop_all();
    if (progress) std::cerr << "\r\033[K" << std::flush;
    throw;
  }
  stop_all();
  if (progress) std::cerr << "\r\033[K" << std::flush;

  if (failure) {
    if (!failed_stderr.empty()) {
      std::cerr << failed_stderr;
      if (failed_stderr.back() != '\n') std::cerr << '\n';
    }
    std::cerr << "hcasim: error: " << *failure << "\n";
    return 2;
  }

  std::vector<PointOutcome> outcomes;
  bool all_ok = true;
  for (size_t i = 0; i < s.points.size(); ++i) {
    outcomes.push_back(
        evaluate_point(s.points[i], s.tolerance, measured[i], jobs[job_of[i]].simulated));
    if (outcomes.back().status == "FAIL") all_ok = false;
  }
  write_file_atomically(csv_path, format_run_csv(s, outcomes), "--csv");
  std::cout << format_run_report(s, outcomes) << std::flush;
  return all_ok ? 0 : 1;
}

}  // namespace hcasim::scenarios
