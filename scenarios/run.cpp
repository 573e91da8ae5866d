// `hcasim run` (run.h): the command line, then the scenario simulated, reported and written.
#include "scenarios/run.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>

#include "frontends/json_output.h"
#include "frontends/netperf_cli.h"
#include "frontends/netperf_output.h"
#include "scenarios/children.h"
#include "scenarios/datadir.h"
#include "scenarios/json_report.h"
#include "scenarios/reference.h"
#include "scenarios/run_report.h"
#include "scenarios/scenario.h"
#include "scenarios/simulate.h"
#include "util/cli_values.h"
#include "util/output_file.h"

namespace hcasim::scenarios {

// --- the run ----------------------------------------------------------------------------------

RunOptions parse_run_args(const std::vector<std::string>& args) {
  CLI::App app{"Runs a scenario file: every point in its own simulation, compared with its "
               "measurement.",
               "hcasim run"};
  app.set_help_flag();
  RunOptions o;
  std::string csv, jobs;
  std::vector<std::string> list_dirs, collect_dirs;
  auto* opt_scenario = app.add_option("scenario", o.scenario, "scenario FILE or NAME");
  auto* opt_jobs = app.add_option("-j,--jobs", jobs, "points run at once");
  auto* opt_csv = app.add_option("--csv", csv, "results CSV");
  app.add_option("--list-commands", list_dirs, "print a standalone command per point, writing into DIR");
  app.add_option("--collect", collect_dirs, "read the points' CSVs from DIR");
  app.add_flag("--json", o.json, "the report as JSON");
  for (auto* opt : {opt_scenario, opt_jobs, opt_csv})
    opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  util::check_option_values(app, args);
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    throw InputError(util::parse_error_message(app, e));
  }
  util::check_single_value("-j", opt_jobs->results());
  if (opt_jobs->count()) o.jobs = parse_jobs(jobs);
  if (opt_csv->count()) {
    util::check_given_once("--csv", opt_csv->results());
    if (csv.empty()) throw InputError("--csv: empty path");
    o.csv_path = csv;
  }
  if (o.scenario.empty()) throw InputError("empty scenario name");
  set_fanout(o.fanout, list_dirs, collect_dirs);
  if (o.json && o.fanout.mode == Fanout::Mode::List)
    throw InputError("--json: --list-commands prints the points' commands, not figures; give --json with --collect");
  if (o.json && o.csv_path)
    if (const std::string conflict = frontends::json_csv_conflict(o.csv_path); !conflict.empty())
      throw InputError(conflict);
  o.args = args;
  return o;
}

int run_scenario(const RunOptions& options) {
  const std::string path = resolve_scenario(options.scenario);
  const Scenario s = load_scenario(path);
  // The default file lands in the working directory, whatever the name says.
  const std::string csv_path = options.csv_path.value_or(safe_file_name(s.name) + "-results.csv");
  util::check_output_path(csv_path, "--csv");
  std::vector<std::string> inputs = {path};
  for (const ScenarioPoint& p : s.points) inputs.push_back(reference_path(p.reference, data_dir()).string());
  util::check_not_an_input(csv_path, inputs, "--csv");

  const size_t parallel = static_cast<size_t>(options.jobs > 0 ? options.jobs : online_cpus());
  std::vector<PointOutcome> outcomes;
  try {
    auto all = simulate_scenarios({s}, parallel, {}, nullptr, options.fanout);
    if (all.empty()) return 0;  // --list-commands: the commands are the output
    outcomes = std::move(all.front());
  } catch (const ChildFailure& e) {
    return print_child_failure(e);
  } catch (const Interrupted& e) {
    return print_interrupted(e);
  }
  const bool all_ok = std::none_of(outcomes.begin(), outcomes.end(),
                                   [](const PointOutcome& o) { return o.status == "FAIL"; });
  // A file first (a failure to write it leaves stdout empty); --csv /dev/stdout after the report.
  if (!util::is_stdout_path(csv_path)) util::write_file_atomically(csv_path, format_run_csv(s, outcomes), "--csv");
  if (options.json) {
    frontends::Json doc;
    doc["schema"] = "hcasim.run/1";
    doc["command_line"] = frontends::json_command_line("run", options.args);
    doc["csv"] = csv_path;
    doc["scenario"] = scenario_report_json(s, outcomes);
    std::cout << frontends::dump_json(doc);
  } else {
    std::cout << format_run_report(s, outcomes);
  }
  std::cout << std::flush;
  if (util::is_stdout_path(csv_path)) util::write_file_atomically(csv_path, format_run_csv(s, outcomes), "--csv");
  return all_ok ? 0 : 1;
}

}  // namespace hcasim::scenarios
