// `hcasim ibv_rc_pingpong|ibv_uc_pingpong|ibv_ud_pingpong ...` (pingpong_main.h), as
// perftest_main.cpp runs the perftest tools.
#include "scenarios/pingpong_main.h"

#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "frontends/config_error.h"
#include "frontends/json_output.h"
#include "frontends/pingpong_cli.h"
#include "frontends/pingpong_output.h"
#include "model/error.h"
#include "model/platform.h"
#include "scenarios/datadir.h"
#include "scenarios/run_failure.h"
#include "scenarios/signals.h"
#include "sim/pingpong_sim.h"
#include "util/output_file.h"

namespace hcasim::scenarios {

int pingpong_main(frontends::PingpongProgram program, const std::vector<std::string>& args) {
  const frontends::PingpongOptions opts = frontends::parse_pingpong_args(program, args);
  if (opts.help) {
    std::cout << frontends::pingpong_usage(program);
    return 0;
  }
  if (opts.json)
    if (const std::string conflict = frontends::json_csv_conflict(opts.csv_path); !conflict.empty())
      throw InputError(conflict);
  if (opts.csv_path) util::check_output_path(*opts.csv_path, "--csv");
  const StopOnSignal stop_on_signal;  // before the Engine: SIGINT 130, SIGTERM 143, not SimGrid's exit 1
  for (const auto& note : opts.notes) std::cerr << note << "\n";
  if (opts.csv_path) util::check_not_an_input(*opts.csv_path, platform_files(opts.platform, opts.remote_platform), "--csv");
  auto [local, remote] = load_host_platforms(opts.platform, opts.remote_platform, opts.sets);
  // main(): -d names a device of ibv_get_device_list ("IB device %s not found" otherwise); the
  // simulated host of the side the command is (the client with a servername, else the server)
  // has the one its platform names.
  const model::Platform& mine = opts.server ? local : remote;
  if (!opts.device.empty() && opts.device != mine.str("hca.device"))
    throw InputError(fmt::format("-d {}: the simulated host has one device, {} (hca.device of platform {})",
                                 opts.device, mine.str("hca.device"), mine.name()));
  const frontends::PingpongConfig config = frontends::to_pingpong_config(opts);
  // sim/ names a config field the HCAs refuse; the program's flag names it to the user.
  const auto checked = [](auto&& step) {
    try {
      return step();
    } catch (const frontends::ConfigError& e) {
      throw frontends::worded(e, frontends::pingpong_option);
    }
  };
  checked([&l = local, &r = remote, &config] { return sim::check_pingpong(l, r, config); });
  const auto simulate = [&l = local, &r = remote, &config] { return sim::run_pingpong(l, r, config); };
  const frontends::PingpongResult result = run_under_faults(config.faults.any(), [&] { return checked(simulate); });
  const OutputSection writing;  // a signal now waits for the output to be whole
  const bool csv_to_stdout = opts.csv_path && util::is_stdout_path(*opts.csv_path);
  if (opts.csv_path && !csv_to_stdout)
    util::write_file_atomically(*opts.csv_path, frontends::format_pingpong_csv(opts, result), "--csv");
  if (opts.json)
    std::cout << frontends::dump_json(frontends::pingpong_json(args, opts, result, local.name(), remote.name()));
  else
    std::cout << frontends::format_pingpong_output(opts, result);
  std::cout << std::flush;
  if (csv_to_stdout) util::write_file_atomically(*opts.csv_path, frontends::format_pingpong_csv(opts, result), "--csv");
  if (result.faults_configured) {  // hcasim's own lines, on stderr: stdout stays the program's
    std::cerr << "hcasim: local  " << result.local_faults.summary() << "\n";
    std::cerr << "hcasim: remote " << result.remote_faults.summary() << "\n";
  }
  if (opts.stats)
    // The key=value fields of the other tools' stats lines (docs/performance.md "--stats").
    std::cerr << fmt::format("hcasim: stats: inline={} max_inline_data={} path_mtu={} blueflame_posts={} "
                             "doorbell_posts={} cq_events={},{} interrupts={},{} simulated_s={:.6f} wall_s={:.3f} "
                             "speed={} simulated s per wall s max_rss_mb={:.1f}\n",
                             result.inline_sends ? "on" : "off", result.max_inline_data, result.path_mtu,
                             result.blueflame_posts, result.doorbell_posts, result.side[0].cq_events,
                             result.side[1].cq_events, result.side[0].interrupts, result.side[1].interrupts,
                             result.simulated_s, result.wall_s,
                             result.wall_s > 0 ? fmt::format("{:.2f}", result.simulated_s / result.wall_s) : "inf",
                             static_cast<double>(result.max_rss_kb) / 1024);
  return 0;
}

}  // namespace hcasim::scenarios
