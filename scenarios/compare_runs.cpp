// `hcasim compare` (compare_runs.h): run files as scenarios without references, simulated and
// reported as `hcasim run` does.
#include "scenarios/compare_runs.h"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <iostream>
#include <optional>

#include <fmt/format.h>

#include "frontends/json_output.h"
#include "frontends/netperf_cli.h"
#include "scenarios/children.h"
#include "scenarios/datadir.h"
#include "scenarios/json_report.h"
#include "scenarios/run_file.h"
#include "scenarios/run_report.h"
#include "util/cli_values.h"
#include "util/number.h"
#include "util/output_file.h"

namespace hcasim::scenarios {

namespace {

namespace fs = std::filesystem;

/// "sdp.zcopy_thresh=1 platform=NAME": a run's settings as a mode, or "-" without any.
std::string settings_mode(const RealRun& run) {
  std::string mode;
  for (const auto& s : run.set) mode += (mode.empty() ? "" : " ") + s;
  if (run.platform) mode += (mode.empty() ? "" : " ") + ("platform=" + *run.platform);
  return mode.empty() ? "-" : mode;
}

/// A netperf command's test options (the words after "--"), as a size flag reads.
std::string test_options(const std::vector<std::string>& words) {
  std::string out;
  bool after = false;
  for (const auto& w : words) {
    if (after) out += (out.empty() ? "" : " ") + w;
    if (w == "--") after = true;
  }
  return out;
}

}  // namespace

CompareOptions parse_compare_args(const std::vector<std::string>& args) {
  CLI::App app{"Compares real runs pasted in run files with their simulation.", "hcasim compare"};
  app.set_help_flag();
  CompareOptions o;
  std::string platform, jobs, csv, duration, iterations;
  app.add_option("runfiles", o.run_files, "run files")->required();
  auto* opt_platform = app.add_option("--platform", platform, "platform NAME or FILE");
  app.add_option("--set", o.sets, "KEY=VALUE for both hosts of every run");
  auto* opt_jobs = app.add_option("-j,--jobs", jobs, "runs simulated at once");
  auto* opt_csv = app.add_option("--csv", csv, "results CSV");
  auto* opt_duration = app.add_option("--duration", duration, "netperf's simulated seconds");
  auto* opt_iterations = app.add_option("--iterations", iterations, "perftest's -n cap");
  app.add_flag("--json", o.json, "the reports as JSON");
  for (auto* opt : {opt_platform, opt_jobs, opt_csv, opt_duration, opt_iterations})
    opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  util::check_option_values(app, args);
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::RequiredError&) {
    throw InputError("compare: give one or more run files (commands pasted with their output)");
  } catch (const CLI::ParseError& e) {
    throw InputError(util::parse_error_message(app, e));
  }
  util::check_single_value("--platform", opt_platform->results());
  util::check_single_value("-j", opt_jobs->results());
  util::check_single_value("--duration", opt_duration->results());
  util::check_single_value("--iterations", opt_iterations->results());
  if (opt_platform->count()) o.platform = platform;
  if (opt_jobs->count()) o.jobs = parse_jobs(jobs);
  if (opt_csv->count()) {
    util::check_given_once("--csv", opt_csv->results());
    if (csv.empty()) throw InputError("--csv: empty path");
    o.csv_path = csv;
  }
  if (opt_duration->count())
    if (const double d = parse_duration_flag(duration); d > 0) o.length.duration_s = d;
  if (opt_iterations->count()) {
    if (const uint64_t n = parse_iterations_flag(iterations); n > 0) o.length.iterations = n;
  }
  if (o.json)
    if (const std::string conflict = frontends::json_csv_conflict(o.csv_path); !conflict.empty())
      throw InputError(conflict);
  o.args = args;
  return o;
}

Scenario run_file_scenario(const std::string& path, const CompareOptions& o, MeasuredPoints* measured) {
  Scenario s;
  s.name = fs::path(path).filename().string();
  s.origin = path;
  s.platform = o.platform.value_or(frontends::kDefaultPlatform);
  const std::string file = s.name;
  // Errors are relative to the measurement: a measured value of 0 or below is a bad run.
  auto measured_positive = [&](uint32_t line, const char* what, std::optional<double> v) {
    if (v && !(*v > 0))
      throw InputError(fmt::format("{}:{}: measured {} is {}: compare needs a value > 0", path, line, what, *v));
  };
  for (const RealRun& run : load_run_file(path)) {
    ScenarioPoint p;
    p.table = fmt::format("{}:{}", file, run.line);
    p.mode = settings_mode(run);
    p.set = run.set;
    p.set.insert(p.set.end(), o.sets.begin(), o.sets.end());
    for (const uint32_t line : run.set_lines) p.set_origins.push_back(fmt::format("{}:{}", path, line));
    p.set_origins.resize(p.set.size(), "--set");
    p.platform = s.platform;
    if (run.platform) {
      // A relative FILE in a directive is relative to the run file, as calibrate reads it.
      const fs::path beside = fs::path(run.origin).parent_path() / *run.platform;
      p.platform = fs::path(*run.platform).is_relative() && fs::is_regular_file(beside) ? beside.string() : *run.platform;
      try {
        (void)resolve_platform(p.platform);
      } catch (const InputError& e) {
        throw InputError(fmt::format("{}:{}: {}", path, run.platform_line, e.what()));  // the directive's line
      }
    }
    p.command = run.command;
    p.tool = run.tool;
    p.words = run.words;
    p.gated = false;
    p.line = run.line;
    if (const auto* n = std::get_if<NetperfReading>(&run.output)) {
      // TCP_RR's first figure is its transaction rate and its service demands are per
      // transaction; the streams' are throughput and us/KB.
      const bool rr = n->test == "TCP_RR";
      p.kind = rr ? PointKind::NetperfRr : PointKind::Netperf;
      p.size_flag = test_options(run.words);
      Figures m;
      if (rr)
        m.transaction_rate = n->transaction_rate;
      else
        m.throughput_mbps = n->throughput_mbps;
      m.sd_local = rr ? n->sd_local_us_per_tr : n->sd_local_us_per_kb;
      m.sd_remote = rr ? n->sd_remote_us_per_tr : n->sd_remote_us_per_kb;
      m.util_local = n->util_local_pct;
      m.util_remote = n->util_remote_pct;
      measured_positive(n->line, rr ? "transaction rate" : "throughput", rr ? m.transaction_rate : m.throughput_mbps);
      measured_positive(n->line, "local service demand", m.sd_local);
      measured_positive(n->line, "remote service demand", m.sd_remote);
      s.points.push_back(p);
      measured->netperf.push_back(m);
      measured->latency.emplace_back();
      measured->bandwidth.emplace_back();
      measured->pingpong.emplace_back();
      continue;
    }
    if (const auto* g = std::get_if<PingpongReading>(&run.output)) {
      // One point: the shown side's two result lines (usec/iter and the Mbit/sec it implies).
      p.kind = PointKind::Pingpong;
      measured_positive(g->line, "usec/iter", g->usec_per_iter);
      measured_positive(g->line, "Mbit/sec", g->mbit_s);
      s.points.push_back(p);
      measured->netperf.emplace_back();
      measured->latency.emplace_back();
      measured->bandwidth.emplace_back();
      measured->pingpong.push_back({g->iters ? g->bytes / (2 * g->iters) : 0, g->iters, g->usec_per_iter, g->mbit_s});
      continue;
    }
    const auto& table = std::get<PerftestReading>(run.output);
    if (table.cycles)
      throw InputError(fmt::format("{}:{}: the output is in CPU cycles (perftest -C); compare reads "
                                   "microseconds: run it without -C",
                                   path, run.line));
    p.kind = table.bandwidth.empty() ? PointKind::Latency : PointKind::Bandwidth;
    for (const LatencyRow& row : table.latency) {
      measured_positive(row.line, "t_typical", row.t_typical);
      s.points.push_back(p);
      measured->netperf.emplace_back();
      measured->latency.push_back({row.bytes, row.t_min, row.t_max, row.t_typical});
      measured->bandwidth.emplace_back();
      measured->pingpong.emplace_back();
    }
    for (const BandwidthRow& row : table.bandwidth) {
      measured_positive(row.line, "BW average", row.bw_average_gbit_s);
      s.points.push_back(p);
      measured->netperf.emplace_back();
      measured->latency.emplace_back();
      measured->bandwidth.push_back({row.bytes, row.bw_average_gbit_s, row.msg_rate_mpps});
      measured->pingpong.emplace_back();
    }
  }
  if (s.points.empty()) throw InputError(fmt::format("{}: no netperf, perftest or pingpong run in it", path));
  return s;
}

int compare_runs(const CompareOptions& o) {
  std::vector<Scenario> scenarios;
  std::vector<MeasuredPoints> measured;
  for (const auto& path : o.run_files) {
    MeasuredPoints m;
    scenarios.push_back(run_file_scenario(path, o, &m));
    measured.push_back(std::move(m));
  }
  if (o.csv_path) {
    util::check_output_path(*o.csv_path, "--csv");
    std::vector<std::string> inputs = o.run_files;
    if (o.platform) inputs.push_back(resolve_platform(*o.platform));
    util::check_not_an_input(*o.csv_path, inputs, "--csv");
  }
  const size_t parallel = static_cast<size_t>(o.jobs > 0 ? o.jobs : online_cpus());
  std::vector<std::vector<PointOutcome>> outcomes;
  try {
    outcomes = simulate_scenarios(scenarios, parallel, o.length, &measured);
  } catch (const ChildFailure& e) {
    return print_child_failure(e);
  } catch (const Interrupted& e) {
    return print_interrupted(e);
  }
  CsvColumns columns;
  for (const auto& s : scenarios)
    for (const auto& p : s.points) {
      columns.latency = columns.latency || p.kind == PointKind::Latency;
      columns.bandwidth = columns.bandwidth || p.kind == PointKind::Bandwidth;
      columns.rr = columns.rr || p.kind == PointKind::NetperfRr;
      columns.pingpong = columns.pingpong || p.kind == PointKind::Pingpong;
    }
  std::string csv, report;
  for (size_t k = 0; k < scenarios.size(); ++k) {
    std::string part = format_run_csv(scenarios[k], outcomes[k], columns);
    csv += k ? part.substr(part.find('\n') + 1) : part;
    report += (k ? "\n" : "") + format_run_report(scenarios[k], outcomes[k]);
  }
  if (o.length.duration_s || o.length.iterations)
    report += fmt::format("\nsimulated shorter than typed:{}{}\n",
                          o.length.duration_s ? fmt::format(" netperf -l {}", *o.length.duration_s) : "",
                          o.length.iterations ? fmt::format(" perftest -n at most {}", *o.length.iterations) : "");
  const bool csv_to_stdout = o.csv_path && util::is_stdout_path(*o.csv_path);
  if (o.csv_path && !csv_to_stdout) util::write_file_atomically(*o.csv_path, csv, "--csv");
  if (o.json) {
    frontends::Json doc;
    doc["schema"] = "hcasim.compare/1";
    doc["command_line"] = frontends::json_command_line("compare", o.args);
    doc["duration_s"] = o.length.duration_s ? frontends::Json(*o.length.duration_s) : frontends::Json(nullptr);
    doc["iterations"] = o.length.iterations ? frontends::Json(*o.length.iterations) : frontends::Json(nullptr);
    frontends::Json files = frontends::Json::array();
    for (size_t k = 0; k < scenarios.size(); ++k) {
      frontends::Json one = scenario_report_json(scenarios[k], outcomes[k]);
      one["run_file"] = o.run_files[k];
      files.push_back(std::move(one));
    }
    doc["run_files"] = std::move(files);
    std::cout << frontends::dump_json(doc);
  } else {
    std::cout << report;
  }
  std::cout << std::flush;
  if (csv_to_stdout) util::write_file_atomically(*o.csv_path, csv, "--csv");
  return 0;
}

}  // namespace hcasim::scenarios
