// `hcasim validate` (validate.h): every scenario in one sweep, their reports, the summary with
// the project's target, and the report directory (report.h).
#include "scenarios/validate.h"


#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>

#include <fmt/format.h>

#include "frontends/json_output.h"
#include "frontends/netperf_cli.h"
#include "scenarios/children.h"
#include "scenarios/datadir.h"
#include "scenarios/json_report.h"
#include "scenarios/report.h"
#include "util/cli_values.h"
#include "util/number.h"
#include "util/output_file.h"
#include "util/statistics.h"

namespace hcasim::scenarios {

using util::median;


namespace {

namespace fs = std::filesystem;

/// Slack on the target's comparisons, so that a decimal error exactly at the limit meets it.
constexpr double kSlack = 1e-12;

/// Adds |error| of `m` to `s` when it has one.
void add_error(MetricSummary& s, const Metric& m) {
  if (m.error) s.abs_errors.push_back(std::fabs(*m.error));
}

/// Fills median and max from abs_errors, and for netperf the target.
void finish(MetricSummary& s, PointKind kind) {
  if (!s.abs_errors.empty()) {
    s.median = median(s.abs_errors);
    s.max = *std::max_element(s.abs_errors.begin(), s.abs_errors.end());
  }
  if (kind != PointKind::Netperf) return;
  std::tie(s.allowed_median, s.allowed_max) = target_allowance(s.spread);
  s.target_met = !s.median || (*s.median <= s.allowed_median + kSlack && *s.max <= s.allowed_max + kSlack);
}

/// "12.3 %": a relative value in percent, one decimal.
std::string percent(double relative) { return fmt::format("{:.1f} %", relative * 100.0); }

/// A tolerance as declared: "15 %", "12.5 %" (relative: every kind but latency), "0.05 us"
/// (latency); "-" when 0.
std::string tolerance_text(double tolerance, PointKind kind) {
  if (!(tolerance > 0)) return "-";
  return kind != PointKind::Latency ? fmt::format("{:.4g} %", tolerance * 100.0) : fmt::format("{:g} us", tolerance);
}

/// A median or max |error|: "3.1 %" (relative) or "0.012 us" (latency); "-" when none.
std::string error_text(const std::optional<double>& v, PointKind kind) {
  if (!v) return "-";
  return kind != PointKind::Latency ? percent(*v) : fmt::format("{:.3f} us", *v);
}

}  // namespace

std::pair<double, double> target_allowance(std::optional<double> spread) {
  const double s = spread.value_or(0.0);
  return {std::max(kTargetMedian, s), std::max(kTargetMax, s)};
}

std::vector<TableSummary> summarize_tables(const Scenario& s, const std::vector<PointOutcome>& outcomes) {
  std::vector<TableSummary> tables;
  for (const PointKind kind : {PointKind::Netperf, PointKind::Latency, PointKind::NetperfRr, PointKind::Bandwidth,
                               PointKind::Pingpong}) {
    std::vector<std::string> names;
    for (const auto& p : s.points)
      if (p.kind == kind && std::find(names.begin(), names.end(), p.table) == names.end())
        names.push_back(p.table);
    for (const auto& name : names) {
      TableSummary t;
      t.table = name;
      t.kind = kind;
      // The metrics of the kind, with what each point contributes.
      struct Part {
        MetricSummary summary;
        std::vector<const Metric PointOutcome::*> members;
      };
      std::vector<Part> parts;
      const Spread spread = s.spread.value_or(Spread{});
      auto add = [&](const char* metric, double tolerance, std::optional<double> metric_spread,
                     std::vector<const Metric PointOutcome::*> members) {
        Part part;
        part.summary.name = metric;
        part.summary.tolerance = tolerance;
        part.summary.spread = metric_spread;
        part.members = std::move(members);
        parts.push_back(std::move(part));
      };
      // A seed's [spread] is of its netperf stream runs: the other kinds have none.
      switch (kind) {
        case PointKind::Netperf:
          add("throughput", s.tolerance.throughput, spread.throughput, {&PointOutcome::throughput});
          add("service demand", s.tolerance.service_demand, spread.service_demand,
              {&PointOutcome::sd_local, &PointOutcome::sd_remote});
          add("utilisation", s.tolerance.utilisation, spread.utilisation,
              {&PointOutcome::util_local, &PointOutcome::util_remote});
          break;
        case PointKind::NetperfRr:
          add("transaction rate", s.tolerance.throughput, std::nullopt, {&PointOutcome::transaction_rate});
          add("service demand", s.tolerance.service_demand, std::nullopt,
              {&PointOutcome::sd_local, &PointOutcome::sd_remote});
          add("utilisation", s.tolerance.utilisation, std::nullopt,
              {&PointOutcome::util_local, &PointOutcome::util_remote});
          break;
        case PointKind::Latency:
          add("t_typical", s.tolerance.t_typical_us, std::nullopt, {&PointOutcome::t_typical});
          add("t_min", s.tolerance.t_min_us, std::nullopt, {&PointOutcome::t_min});
          break;
        case PointKind::Bandwidth:
          add("BW average", s.tolerance.throughput, std::nullopt, {&PointOutcome::bw_average});
          add("MsgRate", 0, std::nullopt, {&PointOutcome::msg_rate});
          break;
        case PointKind::Pingpong:
          add("usec/iter", s.tolerance.usec_per_iter, std::nullopt, {&PointOutcome::usec_per_iter});
          add("Mbit/sec", 0, std::nullopt, {&PointOutcome::mbit_s});
          break;
      }
      std::vector<bool> measured(parts.size(), false);
      for (size_t i = 0; i < s.points.size(); ++i) {
        const ScenarioPoint& p = s.points[i];
        if (p.kind != kind || p.table != name) continue;
        const PointOutcome& o = outcomes.at(i);
        ++t.points;
        if (p.gated) ++t.gated;
        if (p.gated && o.status == "FAIL") t.within = false;
        for (size_t m = 0; m < parts.size(); ++m) {
          bool point_measured = false, point_within = true;
          for (const auto member : parts[m].members) {
            const Metric& metric = o.*member;
            add_error(parts[m].summary, metric);
            point_measured = point_measured || metric.measured.has_value();
            point_within = point_within && metric.within;
          }
          if (!point_measured) continue;
          measured[m] = true;
          if (!p.gated || !(parts[m].summary.tolerance > 0)) continue;  // MsgRate, Mbit/sec: reported only
          ++parts[m].summary.gated;
          if (point_within) ++parts[m].summary.gated_within;
        }
      }
      for (size_t m = 0; m < parts.size(); ++m) {
        // Metrics that no point of the table measured are left out (seed 000's T1 has no
        // utilisation); latency tables always show both.
        if (kind != PointKind::Latency && !measured[m]) continue;
        finish(parts[m].summary, kind);
        if (!parts[m].summary.target_met) t.target_met = false;
        t.metrics.push_back(std::move(parts[m].summary));
      }
      tables.push_back(std::move(t));
    }
  }
  return tables;
}

std::string format_validate_summary(const std::vector<Scenario>& scenarios,
                                    const std::vector<std::vector<PointOutcome>>& outcomes) {
  std::vector<std::vector<TableSummary>> tables;
  size_t scenario_width = 8, table_width = 5, kind_width = 7, metric_width = 14, points = 0;
  for (size_t k = 0; k < scenarios.size(); ++k) {
    tables.push_back(summarize_tables(scenarios[k], outcomes.at(k)));
    scenario_width = std::max(scenario_width, scenarios[k].name.size());
    for (const auto& t : tables.back()) {
      table_width = std::max(table_width, t.table.size());
      kind_width = std::max(kind_width, std::string_view(point_kind_name(t.kind)).size());
      for (const auto& m : t.metrics) metric_width = std::max(metric_width, m.name.size());
    }
    points += scenarios[k].points.size();
  }

  std::string out = fmt::format("summary of {} scenario{}, {} points: |error| relative for netperf, in us for "
                                "latency; median and max over every point of a table, gated or not\n",
                                scenarios.size(), scenarios.size() == 1 ? "" : "s", points);
  const bool any_netperf = std::any_of(scenarios.begin(), scenarios.end(), [](const Scenario& s) {
    return std::any_of(s.points.begin(), s.points.end(), [](const auto& p) { return p.kind == PointKind::Netperf; });
  });
  if (any_netperf)
    out += fmt::format("target (netperf tables, not gated): median |error| <= {:g} % and max |error| <= {:g} %, "
                       "or the seed's measured spread ([spread]) where larger\n",
                       kTargetMedian * 100.0, kTargetMax * 100.0);
  out += "\n";
  const std::string row = fmt::format("{{:<{}}}  {{:<{}}}  {{:<{}}}  {{:>6}}  {{:>5}}  {{:<{}}}  {{:>9}}  {{:>9}}  "
                                      "{{:>9}}  {{}}\n",
                                      scenario_width, table_width, kind_width, metric_width);
  out += fmt::format(fmt::runtime(row), "scenario", "table", "kind", "points", "gated", "metric", "median",
                     "max", "tolerance", "gated within");
  // The target line starts under the metric column.
  const std::string indent(scenario_width + table_width + kind_width + 6 + 5 + 5 * 2, ' ');

  size_t gated = 0, failed = 0, netperf_tables = 0, targets_met = 0;
  std::vector<std::string> per_scenario, failing;
  for (size_t k = 0; k < scenarios.size(); ++k) {
    const Scenario& s = scenarios[k];
    size_t s_gated = 0, s_failed = 0;
    for (size_t i = 0; i < s.points.size(); ++i) {
      if (!s.points[i].gated) continue;
      ++s_gated;
      if (outcomes[k].at(i).status == "FAIL") ++s_failed;
    }
    gated += s_gated;
    failed += s_failed;
    per_scenario.push_back(fmt::format("{} {} of {}", s.name, s_gated - s_failed, s_gated));
    if (s_failed) failing.push_back(fmt::format("{}: {}", s.name, s_failed));

    bool first_table = true;
    for (const TableSummary& t : tables[k]) {
      bool first_metric = true;
      for (const MetricSummary& m : t.metrics) {
        std::string within = "-";
        if (m.gated) within = fmt::format("{}/{} {}", m.gated_within, m.gated, m.gated_within == m.gated ? "yes" : "NO");
        out += fmt::format(fmt::runtime(row), first_table && first_metric ? s.name : "",
                           first_metric ? t.table : "",
                           first_metric ? point_kind_name(t.kind) : "",
                           first_metric ? std::to_string(t.points) : "",
                           first_metric ? std::to_string(t.gated) : "", m.name, error_text(m.median, t.kind),
                           error_text(m.max, t.kind), tolerance_text(m.tolerance, t.kind), within);
        first_metric = false;
        first_table = false;
      }
      if (t.metrics.empty()) {  // nothing measured at all
        out += fmt::format(fmt::runtime(row), first_table ? s.name : "", t.table,
                           point_kind_name(t.kind), t.points, t.gated, "-", "-",
                           "-", "-", "-");
        first_table = false;
      }
      if (t.kind != PointKind::Netperf) continue;
      ++netperf_tables;
      if (t.target_met) {
        ++targets_met;
        out += indent + "target met\n";
        continue;
      }
      std::string missed;
      for (const MetricSummary& m : t.metrics) {
        if (m.target_met) continue;
        missed += fmt::format("{}{}: median {}, max {}, allowed {} / {}", missed.empty() ? "" : "; ", m.name,
                              percent(*m.median), percent(*m.max), percent(m.allowed_median),
                              percent(m.allowed_max));
      }
      out += indent + "target missed (" + missed + ")\n";
    }
  }

  out += "\n";
  std::string joined;
  for (const auto& p : per_scenario) joined += (joined.empty() ? "" : ", ") + p;
  out += fmt::format("gated points within tolerance: {}\n", joined);
  if (netperf_tables)
    out += fmt::format("target met by {} of {} netperf tables\n", targets_met, netperf_tables);
  if (failed == 0) {
    out += fmt::format("ok: all {} gated points of {} scenario{} within tolerance\n", gated, scenarios.size(),
                       scenarios.size() == 1 ? "" : "s");
  } else {
    std::string which;
    for (const auto& f : failing) which += (which.empty() ? "" : ", ") + f;
    out += fmt::format("FAIL: {} of {} gated points out of tolerance ({})\n", failed, gated, which);
  }
  return out;
}

// --- the command ------------------------------------------------------------------------------

ValidateOptions parse_validate_args(const std::vector<std::string>& args) {
  CLI::App app{"Runs every reference set and summarises how far the simulation is from each.",
               "hcasim validate"};
  app.set_help_flag();
  ValidateOptions o;
  std::string jobs, report, duration, iterations;
  app.add_option("scenario", o.scenarios, "scenario FILEs or NAMEs (default: every scenario file)");
  auto* opt_jobs = app.add_option("-j,--jobs", jobs, "points run at once");
  auto* opt_report = app.add_option("--report", report, "report directory");
  auto* opt_duration = app.add_option("--duration", duration, "netperf simulated seconds (0 = -l)");
  auto* opt_iter = app.add_option("--iterations", iterations, "perftest iterations cap (0 = -n)");
  app.add_flag("--json", o.json, "reports and summary as JSON");
  for (auto* opt : {opt_jobs, opt_report, opt_duration, opt_iter})
    opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  util::check_option_values(app, args);
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    throw InputError(util::parse_error_message(app, e));
  }
  util::check_single_value("-j", opt_jobs->results());
  util::check_given_once("--report", opt_report->results());
  util::check_single_value("--duration", opt_duration->results());
  util::check_single_value("--iterations", opt_iter->results());
  if (opt_jobs->count()) o.jobs = parse_jobs(jobs);
  if (opt_duration->count()) o.duration_s = parse_duration_flag(duration);
  if (opt_iter->count()) {
    o.iterations = parse_iterations_flag(iterations);
  }
  if (opt_report->count()) {
    if (report.empty()) throw InputError("--report: empty path");
    o.report_dir = report;
  }
  for (const auto& name : o.scenarios)
    if (name.empty()) throw InputError("empty scenario name");
  o.args = args;
  return o;
}

std::vector<std::string> default_scenario_files() {
  const fs::path dir = fs::path(data_dir()) / "scenarios";
  std::vector<std::string> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".toml" && it->is_regular_file()) files.push_back(it->path().string());
  if (files.empty()) throw InputError(fmt::format("{}: no scenario files (*.toml)", dir.string()));
  std::sort(files.begin(), files.end(), [](const std::string& a, const std::string& b) {
    return fs::path(a).filename().string() < fs::path(b).filename().string();
  });
  return files;
}

std::string sim_length_note(const ValidateOptions& options) {
  std::string note;
  if (options.duration_s > 0)
    note = fmt::format("netperf points are simulated for {} s (--duration), whatever their -l says", options.duration_s);
  if (options.iterations > 0)
    note += fmt::format("{}perftest points for at most {} iterations (--iterations)", note.empty() ? "" : "; ",
                        options.iterations);
  return note;
}

int validate(const ValidateOptions& options) {
  std::vector<std::string> files;
  if (options.scenarios.empty())
    files = default_scenario_files();
  else
    for (const auto& name : options.scenarios) files.push_back(resolve_scenario(name));
  std::vector<Scenario> scenarios;
  std::map<std::string, std::string> file_of_name;
  for (const auto& file : files) {
    scenarios.push_back(load_scenario(file));
    const std::string& name = scenarios.back().name;
    // Reports and result files are named after the scenario.
    const auto [it, fresh] = file_of_name.emplace(safe_file_name(name), file);
    if (!fresh)
      throw InputError(fmt::format("{}: scenario name '{}' is also that of {} (each scenario once)", file,
                                   name, it->second));
  }

  std::string gnuplot;
  if (options.report_dir) {
    check_report_dir(*options.report_dir);
    const auto found = find_in_path("gnuplot");
    if (!found)
      throw InputError("--report: gnuplot not found in PATH (Debian: apt-get install gnuplot-nox, or "
                       "scripts/install-deps.sh)");
    gnuplot = *found;
  }

  const size_t parallel = static_cast<size_t>(options.jobs > 0 ? options.jobs : online_cpus());
  const std::string note = sim_length_note(options);
  if (!note.empty() && !options.json) std::cout << note << "\n\n" << std::flush;
  std::vector<std::vector<PointOutcome>> outcomes;
  try {
    SimLength length;
    if (options.duration_s > 0) length.duration_s = options.duration_s;
    if (options.iterations > 0) length.iterations = options.iterations;
    outcomes = simulate_scenarios(scenarios, parallel, length);
  } catch (const ChildFailure& e) {
    return print_child_failure(e);
  } catch (const Interrupted& e) {
    return print_interrupted(e);
  }

  bool all_ok = true;
  for (const auto& scenario_outcomes : outcomes)
    for (const auto& o : scenario_outcomes)
      if (o.status == "FAIL") all_ok = false;
  if (options.json) {
    // The report directory first: a failure to write it leaves stdout empty.
    if (options.report_dir) {
      try {
        write_validation_report(*options.report_dir, scenarios, outcomes, gnuplot, note);
      } catch (const Interrupted& e) {
        return print_interrupted(e);
      }
    }
    frontends::Json doc;
    doc["schema"] = "hcasim.validate/1";
    doc["command_line"] = frontends::json_command_line("validate", options.args);
    doc["duration_s"] = options.duration_s > 0 ? frontends::Json(options.duration_s) : frontends::Json(nullptr);
    doc["iterations"] = options.iterations > 0 ? frontends::Json(options.iterations) : frontends::Json(nullptr);
    doc["report_dir"] = options.report_dir ? frontends::Json(*options.report_dir) : frontends::Json(nullptr);
    frontends::Json reports = frontends::Json::array();
    for (size_t k = 0; k < scenarios.size(); ++k) reports.push_back(scenario_report_json(scenarios[k], outcomes[k]));
    doc["scenarios"] = std::move(reports);
    doc["summary"] = validate_summary_json(scenarios, outcomes);
    std::cout << frontends::dump_json(doc) << std::flush;
    return all_ok ? 0 : 1;
  }
  for (size_t k = 0; k < scenarios.size(); ++k) std::cout << format_run_report(scenarios[k], outcomes[k]) << "\n";
  std::cout << format_validate_summary(scenarios, outcomes) << std::flush;

  if (options.report_dir) {
    try {
      write_validation_report(*options.report_dir, scenarios, outcomes, gnuplot, note);
    } catch (const Interrupted& e) {
      return print_interrupted(e);
    }
  }
  return all_ok ? 0 : 1;
}

}  // namespace hcasim::scenarios
