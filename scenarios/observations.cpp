// The runs calibrate fits to (observations.h): run files and scenarios read as observations,
// each one's child command line, and its simulated figures read back from the child's CSV.
#include "scenarios/observations.h"

#include <algorithm>
#include <filesystem>
#include <regex>

#include <fmt/format.h>

#include "frontends/pingpong_cli.h"
#include "model/error.h"
#include "scenarios/datadir.h"
#include "scenarios/reference.h"
#include "scenarios/run_file.h"
#include "scenarios/scenario.h"
#include "util/csv.h"
#include "util/number.h"

namespace hcasim::scenarios {

namespace fs = std::filesystem;

namespace {

bool has_extension(const std::string& item, std::string_view ext) {
  return item.size() > ext.size() && item.compare(item.size() - ext.size(), ext.size(), ext) == 0;
}

/// `obs`, once every measured value is > 0: relative errors need one (a pasted row of zeros,
/// or a negative number, is a bad run, not a target). InputError "FILE:LINE: ..." otherwise.
std::vector<Observation> checked(std::vector<Observation> obs) {
  for (const Observation& o : obs)
    for (const auto& [name, value] : o.measured)
      if (!(value > 0))
        throw InputError(fmt::format("{}: measured {} is {}: calibrate compares relative errors and needs a "
                                     "measured value > 0",
                                     o.where, name, value));
  return obs;
}

/// The ECMAScript regex of a ":REGEX" selection, or nullopt without one.
std::optional<std::regex> selection_regex(const std::optional<std::string>& selection, const std::string& item) {
  if (!selection) return std::nullopt;
  try {
    return std::regex(*selection);
  } catch (const std::regex_error& e) {
    throw InputError(fmt::format("{}: '{}' is not a regular expression ({})", item, *selection, e.what()));
  }
}

/// A scenario's points as observations (their platform is the one being calibrated).
std::vector<Observation> scenario_observations(const std::string& name,
                                               const std::optional<std::string>& selection,
                                               const std::string& item) {
  const Scenario s = load_scenario(resolve_scenario(name));
  const std::optional<std::regex> re = selection_regex(selection, item);
  const std::string base = data_dir();
  std::vector<Observation> out;
  for (size_t i = 0; i < s.points.size(); ++i) {
    const ScenarioPoint& p = s.points[i];
    Observation obs;
    obs.tool = p.tool;
    obs.where = fmt::format("{}:{}", s.origin, p.line);
    obs.platform = p.platform;
    if (!p.remote_platform.empty()) obs.remote_platform = p.remote_platform;
    obs.words = p.words;
    obs.set = p.set;
    std::string label = fmt::format("{} {}", p.table, p.mode);
    if (p.kind == PointKind::Netperf) {
      if (!p.size_flag.empty()) label += " " + p.size_flag;
      const Figures m = read_reference(p.reference, base);
      if (m.throughput_mbps) obs.measured.emplace_back("throughput", *m.throughput_mbps);
      if (m.sd_local) obs.measured.emplace_back("sd_local", *m.sd_local);
      if (m.sd_remote) obs.measured.emplace_back("sd_remote", *m.sd_remote);
    } else {
      const LatencyFigures m = read_latency_reference(p.reference, base);
      label += fmt::format(" {} B", m.bytes);
      if (m.t_typical_us) obs.measured.emplace_back(fmt::format("t_typical {} B", m.bytes), *m.t_typical_us);
    }
    obs.label = fmt::format("{} {}", s.name, label);
    if (re && !std::regex_search(obs.label, *re)) continue;
    if (!obs.measured.empty()) out.push_back(std::move(obs));
  }
  if (out.empty())
    throw InputError(fmt::format("{}: no point of scenario {} is selected{}", item, s.name,
                                 selection ? fmt::format(" by '{}'", *selection) : ""));
  return out;
}

/// A run file's runs as observations, those whose label matches `selection` when given.
std::vector<Observation> run_file_observations(const std::string& path, const std::optional<std::string>& selection,
                                               const std::string& item) {
  const std::optional<std::regex> re = selection_regex(selection, item);
  std::vector<Observation> out;
  for (const RealRun& run : load_run_file(path)) {
    Observation obs;
    obs.tool = run.tool;
    obs.where = fmt::format("{}:{}", run.origin, run.line);
    obs.words = run.words;
    obs.set = run.set;
    for (const uint32_t line : run.set_lines) obs.set_origins.push_back(fmt::format("{}:{}", run.origin, line));
    obs.label = fmt::format("{}:{} {}", fs::path(run.origin).filename().string(), run.line, run.command);
    // The settings in force, so that a selection can pick a machine or a mode.
    std::vector<std::string> settings;
    if (run.platform) settings.push_back("--platform " + *run.platform);
    settings.insert(settings.end(), run.set.begin(), run.set.end());
    if (!settings.empty()) {
      obs.label += " [";
      for (size_t i = 0; i < settings.size(); ++i) obs.label += (i ? ", " : "") + settings[i];
      obs.label += "]";
    }
    if (re && !std::regex_search(obs.label, *re)) continue;
    if (run.platform) {
      // A relative FILE in a directive is relative to the run file, as a reader expects.
      const fs::path beside = fs::path(run.origin).parent_path() / *run.platform;
      obs.platform = fs::path(*run.platform).is_relative() && fs::is_regular_file(beside) ? beside.string()
                                                                                         : *run.platform;
    }
    if (const auto* n = std::get_if<NetperfReading>(&run.output); n && n->test == "TCP_RR") {
      obs.measured.emplace_back("transaction_rate", n->transaction_rate);
      if (n->sd_local_us_per_tr) obs.measured.emplace_back("sd_local_per_tr", *n->sd_local_us_per_tr);
      if (n->sd_remote_us_per_tr) obs.measured.emplace_back("sd_remote_per_tr", *n->sd_remote_us_per_tr);
    } else if (n) {
      obs.measured.emplace_back("throughput", n->throughput_mbps);
      if (n->sd_local_us_per_kb) obs.measured.emplace_back("sd_local", *n->sd_local_us_per_kb);
      if (n->sd_remote_us_per_kb) obs.measured.emplace_back("sd_remote", *n->sd_remote_us_per_kb);
    } else if (const auto* g = std::get_if<PingpongReading>(&run.output)) {
      obs.measured.emplace_back("usec_per_iter", g->usec_per_iter);
    } else {
      const auto& p = std::get<PerftestReading>(run.output);
      if (p.cycles)
        throw InputError(fmt::format("{}:{}: the output is in CPU cycles (perftest -C); calibrate compares "
                                     "microseconds: run it without -C",
                                     run.origin, run.line));
      for (const LatencyRow& row : p.latency)
        obs.measured.emplace_back(fmt::format("t_typical {} B", row.bytes), row.t_typical);
      for (const BandwidthRow& row : p.bandwidth)
        obs.measured.emplace_back(fmt::format("bw_average {} B", row.bytes), row.bw_average_gbit_s);
    }
    out.push_back(std::move(obs));
  }
  if (out.empty())
    throw InputError(selection ? fmt::format("{}: no run of {} is selected by '{}'", item, path, *selection)
                               : fmt::format("{}: no netperf, perftest or pingpong run in it", path));
  return out;
}

/// The column `name` of a CSV header, or -1.
int column_of(const std::vector<std::string>& header, std::string_view name) {
  const auto it = std::find(header.begin(), header.end(), name);
  return it == header.end() ? -1 : static_cast<int>(it - header.begin());
}

}  // namespace

std::pair<std::string, std::optional<std::string>> split_selection(const std::string& item) {
  if (fs::exists(item)) return {item, std::nullopt};
  const auto colon = item.find(':');
  if (colon == std::string::npos) return {item, std::nullopt};
  return {item.substr(0, colon), item.substr(colon + 1)};
}

std::vector<Observation> load_observations(const std::string& item) {
  const auto [source, selection] = split_selection(item);
  // A .toml file or a name that is no file is a scenario; any other file is a run file.
  if (!has_extension(source, ".toml") && !fs::exists(source) &&
      (source.find('/') != std::string::npos || source.find('.') != std::string::npos))
    throw InputError(fmt::format("{}: no such run file", source));
  if (has_extension(source, ".toml") || !fs::exists(source)) return checked(scenario_observations(source, selection, item));
  return checked(run_file_observations(source, selection, item));
}

std::vector<double> simulated_quantities(const Observation& obs, const std::string& csv, const std::string& origin) {
  std::vector<double> out;
  if (obs.tool == "netperf") {
    const Figures f = netperf_csv_figures(csv, origin);
    for (const auto& [name, measured] : obs.measured) {
      // A TCP_RR's CSV has its rate in transaction_rate_per_s and its service demands, per
      // transaction, in the sd_* cells.
      const std::optional<double>& v = name == "throughput"                                ? f.throughput_mbps
                                       : name == "transaction_rate"                        ? f.transaction_rate
                                       : name == "sd_local" || name == "sd_local_per_tr" ? f.sd_local
                                                                                           : f.sd_remote;
      if (!v)
        throw InputError(fmt::format("{}: the simulation did not measure {}{}", origin, name,
                                     name.rfind("sd_", 0) == 0 ? " (add -c/-C?)" : ""));
      out.push_back(*v);
    }
    return out;
  }
  const auto rows = util::parse_csv(csv, origin);
  if (rows.empty()) throw InputError(fmt::format("{}: empty CSV", origin));
  const auto& header = rows.front();
  if (frontends::pingpong_program_named(obs.tool)) {
    // format_pingpong_csv: one row, the shown side's figures.
    const int c = column_of(header, "usec_per_iter");
    const std::optional<double> v =
        c >= 0 && rows.size() == 2 && rows[1].size() > static_cast<size_t>(c) ? util::parse_number(rows[1][static_cast<size_t>(c)])
                                                                              : std::nullopt;
    if (!v) throw InputError(fmt::format("{}: no usec_per_iter row", origin));
    out.push_back(*v);
    return out;
  }
  for (const auto& [name, measured] : obs.measured) {
    const auto space = name.find(' ');
    const std::string what = name.substr(0, space);
    const std::string bytes = name.substr(space + 1, name.find(' ', space + 1) - space - 1);
    const std::string col = what == "t_typical" ? "t_typical_us" : "bw_avg_gbit_s";
    const int c = column_of(header, col), b = column_of(header, "bytes");
    if (c < 0 || b < 0) throw InputError(fmt::format("{}: no column {}", origin, c < 0 ? col : "bytes"));
    std::optional<double> v;
    for (size_t r = 1; r < rows.size() && !v; ++r)
      if (rows[r].size() > static_cast<size_t>(std::max(b, c)) && rows[r][static_cast<size_t>(b)] == bytes)
        v = util::parse_number(rows[r][static_cast<size_t>(c)]);
    if (!v) throw InputError(fmt::format("{}: no simulated row for {} bytes", origin, bytes));
    out.push_back(*v);
  }
  return out;
}

std::vector<std::string> observation_argv(const Observation& obs, const std::string& platform_file,
                                          const std::vector<std::string>& sets, const SimLength& length,
                                          const std::optional<std::string>& remote_platform_file) {
  std::vector<std::string> argv = {"hcasim", obs.tool};
  const std::vector<std::string> words = with_sim_length(obs.tool, obs.words, length);
  argv.insert(argv.end(), words.begin(), words.end());
  argv.insert(argv.end(), {"--platform", platform_file});
  if (remote_platform_file) argv.insert(argv.end(), {"--remote-platform", *remote_platform_file});
  for (const auto& s : sets) argv.insert(argv.end(), {"--set", s});
  return argv;
}

}  // namespace hcasim::scenarios
