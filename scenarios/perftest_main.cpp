// `hcasim ib_write_lat|ib_write_bw|ib_send_bw ...` (perftest_main.h), modelled on
// netperf_main in scenarios/main.cpp. Kept in its own file: it is the only part of the perftest
// command line that needs sim::run_perftest, so the parser and the output stay testable without
// linking the simulation.
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "frontends/config_error.h"
#include "frontends/json_output.h"
#include "frontends/netperf_output.h"  // format_link_busy_line
#include "frontends/perftest_cli.h"
#include "frontends/perftest_output.h"
#include "model/error.h"
#include "model/ib.h"
#include "model/platform.h"
#include "scenarios/datadir.h"
#include "scenarios/perftest_main.h"
#include "scenarios/run_failure.h"
#include "scenarios/signals.h"
#include "sim/perftest_sim.h"
#include "sim/testbed.h"
#include "util/output_file.h"

namespace hcasim::scenarios {

void check_trace_path(const std::string& trace, const std::optional<std::string>& csv) {
  if (util::is_stdout_path(trace))
    throw InputError(fmt::format("--trace {}: the trace would land inside the tool's output on stdout; write it to a file",
                                 trace));
  util::check_output_path(trace, "--trace");
  if (csv && util::same_path(*csv, trace))
    throw InputError(fmt::format("--trace {}: also the --csv file; give each its own file", trace));
}

int perftest_main(frontends::PerftestTest test, const std::vector<std::string>& args) {
  frontends::PerftestOptions opts = frontends::parse_perftest_args(test, args);
  if (opts.help) {
    std::cout << frontends::perftest_usage(test);
    return 0;
  }
  if (opts.version) {  // perftest -V prints "Version: 6.06" for 4.5+0.17
    std::cout << fmt::format("Version: 6.06 (perftest 4.5, simulated by hcasim {})\n",
                             frontends::perftest_tool_name(test));
    return 0;
  }
  const StopOnSignal stop_on_signal;  // before the Engine: SIGINT 130, SIGTERM 143, not SimGrid's exit 1
  if (opts.json)
    if (const std::string conflict = frontends::json_csv_conflict(opts.csv_path); !conflict.empty())
      throw InputError(conflict);
  if (opts.csv_path) util::check_output_path(*opts.csv_path, "--csv");
  if (opts.trace_path) check_trace_path(*opts.trace_path, opts.csv_path);
  for (const auto& note : opts.notes) std::cerr << note << "\n";

  auto [local, remote] = load_host_platforms(opts.platform, opts.remote_platform, opts.sets);
  if (opts.csv_path) util::check_not_an_input(*opts.csv_path, platform_files(opts.platform, opts.remote_platform), "--csv");
  if (opts.trace_path)
    util::check_not_an_input(*opts.trace_path, platform_files(opts.platform, opts.remote_platform), "--trace");
  // Without -d perftest opens the first device: the platform's (mthca0 on an InfiniHost).
  if (opts.device.empty()) opts.device = local.str("hca.device");
  // -m: the path MTU perftest picks (set_mtu) from the port's active MTU, ib.mtu of each host.
  if (opts.mtu) {
    std::string note;
    const auto active = static_cast<int>(local.integer("ib.mtu"));
    const int mtu = frontends::perftest_path_mtu(opts, active, &note);
    if (!note.empty()) std::cerr << note << "\n";
    const std::string assignment = fmt::format("ib.mtu={}", mtu);
    local.set(assignment);
    remote.set(assignment);
  }
  // The client's cycle counter rate, perftest's get_cpu_mhz().
  const double cpu_mhz = frontends::perftest_cpu_mhz(local.num("host.clock"));

  frontends::PerftestConfig config = frontends::to_perftest_config(opts);
  // -c UD: one packet per message, at most the path MTU as the link trains it (model::ib::trained,
  // which the simulated HCAs use too).
  const uint32_t path_mtu = model::ib::trained(sim::read_host_params(local).ib, sim::read_host_params(remote).ib).mtu;
  if (const std::string note = frontends::perftest_ud_sizes(opts, config, path_mtu); !note.empty())
    std::cerr << note << "\n";
  // perftest prints its banner, addresses and table header before it measures: so does hcasim,
  // once every input is checked (sim::check_perftest), so that a long run does not look hung.
  // sim/ names a config field the HCAs refuse; perftest's option names it to the user.
  const auto checked = [](auto&& step) {
    try {
      return step();
    } catch (const frontends::ConfigError& e) {
      throw frontends::worded(e, frontends::perftest_option);
    }
  };
  // With --json nothing is printed before the document, which comes whole at the end.
  const frontends::PerftestResult head =
      checked([&l = local, &r = remote, &config] { return sim::check_perftest(l, r, config); });
  // perftest's ctx_set_out_reads: "Number of outstanding reads is above max = N" and "Changing to
  // that max value" on stderr (its 87-dash line is on stdout, format_perftest_head's).
  if (frontends::perftest_is_read_or_atomic(test) && opts.out_reads && *opts.out_reads > static_cast<long>(head.out_reads))
    std::cerr << fmt::format("hcasim: note: -o {}: above the device's max_qp_rd_atom {} (hca.max_qp_rd_atom); perftest "
                             "changes to that maximum\n",
                             *opts.out_reads, head.out_reads);
  if (!opts.json) std::cout << frontends::format_perftest_head(opts, head) << std::flush;
  // Init-captures: clang before 16 cannot capture a structured binding (nor [&] one).
  const auto simulate = [&l = local, &r = remote, &config] {
    try {
      return sim::run_perftest(l, r, config);
    } catch (const sim::PerftestWaitsForEver& e) {
      throw RunFailure(e.what());  // perftest itself would hang: a failed run (exit 1)
    }
  };
  const frontends::PerftestResult result = run_under_faults(config.faults.any(), [&] { return checked(simulate); });
  const OutputSection writing;  // a signal now waits for the outputs to be whole
  const bool csv_to_stdout = opts.csv_path && util::is_stdout_path(*opts.csv_path);
  if (opts.csv_path && !csv_to_stdout)
    util::write_file_atomically(*opts.csv_path, frontends::format_perftest_csv(opts, result, cpu_mhz), "--csv");
  if (opts.trace_path) util::write_file_atomically(*opts.trace_path, result.trace_json, "--trace");
  if (opts.json)
    std::cout << frontends::dump_json(frontends::perftest_json(args, opts, result, cpu_mhz, local.name(), remote.name()));
  else
    std::cout << frontends::format_perftest_rows(opts, result, cpu_mhz) << frontends::format_perftest_explain(opts, result, cpu_mhz);
  std::cout << std::flush;
  if (csv_to_stdout) util::write_file_atomically(*opts.csv_path, frontends::format_perftest_csv(opts, result, cpu_mhz), "--csv");
  if (result.faults_configured) {  // hcasim's own lines, on stderr: stdout stays perftest's
    std::cerr << "hcasim: local  " << result.local_faults.summary() << "\n";
    std::cerr << "hcasim: remote " << result.remote_faults.summary() << "\n";
  }
  if (opts.stats) {
    std::cerr << frontends::format_perftest_stats_line(result) << "\n";
    std::cerr << frontends::format_link_busy_line(result.link_busy_s, result.simulated_s) << "\n";
  }
  return 0;
}

}  // namespace hcasim::scenarios
