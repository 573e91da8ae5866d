// hcasim command line: `hcasim netperf ...` (a simulated netperf 2.4 TCP_STREAM),
// `hcasim ib_write_lat|ib_write_bw|ib_send_lat|ib_send_bw|ib_read_lat|ib_read_bw|ib_atomic_lat|ib_atomic_bw ...`
// (simulated perftest) and `hcasim run ...`
// (a scenario of such runs compared with measurements) and `hcasim validate` (every scenario,
// summarised), `hcasim params` (the platform parameters, scenarios/params.cpp).
#include <algorithm>
#include <exception>
#include <filesystem>
#include <optional>
#include <iostream>
#include <string>
#include <vector>

#include <unistd.h>

#include <fmt/format.h>

#include "frontends/config_error.h"
#include "frontends/explain.h"
#include "frontends/json_output.h"
#include "frontends/netperf_cli.h"
#include "frontends/netperf_omni.h"
#include "frontends/netperf_output.h"
#include "frontends/perftest_cli.h"
#include "frontends/qview_output.h"
#include "model/error.h"
#include "model/platform.h"
#include "scenarios/calibrate.h"
#include "scenarios/children.h"
#include "scenarios/datadir.h"
#include "scenarios/params.h"
#include "scenarios/perftest_main.h"
#include "scenarios/pingpong_main.h"
#include "frontends/pingpong_cli.h"
#include "scenarios/run.h"
#include "scenarios/run_failure.h"
#include "scenarios/signals.h"
#include "scenarios/sweep.h"
#include "scenarios/compare_runs.h"
#include "scenarios/validate.h"
#include "sim/ipoib_sim.h"
#include "sim/netperf_sim.h"
#include "sim/progress.h"
#include "util/output_file.h"

namespace {

using namespace hcasim;
using namespace hcasim::scenarios;

/// Project version (CMakeLists.txt project(... VERSION)).
constexpr const char* kVersion = "0.1.0";

constexpr const char* kUsage = R"(hcasim: a simulated InfiniBand HCA and the host around it

Usage:
  hcasim netperf [hcasim options] [netperf global options] [-- netperf test options]
  hcasim ib_write_lat|ib_write_bw|ib_send_lat|ib_send_bw [hcasim options and perftest flags]
  hcasim ib_read_lat|ib_read_bw|ib_atomic_lat|ib_atomic_bw [hcasim options and perftest flags]
  hcasim ibv_rc_pingpong|ibv_uc_pingpong|ibv_ud_pingpong|ibv_srq_pingpong [hcasim options and the program's flags] [servername]
  hcasim run [FILE|NAME] [-j N] [--csv PATH] [--list-commands DIR | --collect DIR]
  hcasim sweep TOOL [tool flags with a size list or range] [--vary KEY=V1,V2]... [-j N]
               [--csv PATH] [--plot PREFIX] [--reference CSV|RUNFILE] [--list-commands DIR | --collect DIR]
  hcasim compare RUNFILE... [--platform NAME|FILE] [--set KEY=V]... [-j N] [--csv PATH]
  hcasim calibrate --platform BASE --fit KEY[=LO:HI],... RUNS... [--holdout RUNS...] [-o FILE]
                   [--steady REL] [--remote-platform BASE2] (docs/calibrate.md)
  hcasim validate [NAME|FILE...] [-j N] [--report DIR] [--duration S] [--iterations N]
  hcasim params [--platform NAME|FILE] [--set KEY=V]... [--json]
  hcasim --help | --version
run, sweep, compare, calibrate, validate and params take --json (docs/cli.md "--json").

hcasim netperf takes netperf 2.4's flags and prints netperf's output from a simulation:
  -t TCP_STREAM|TCP_MAERTS|TCP_RR   -l SECONDS|-BYTES|-TRANSACTIONS   -c [RATE]   -C [RATE]
  -P 0|1   -T lcpu[,rcpu]   -v N   -f k|m|g|K|M|G   (-H host, -4, -6, -i, -I are accepted and ignored)
  -D [INTERVAL[,UNITS]] (demo mode: interim results, as a netperf built with --enable-demo)
  test options after --:  -m SIZE  -M SIZE  -s SIZE[,SIZE]  -S SIZE[,SIZE]  -D  -P PORT[,PORT]
                          -r REQ[,RSP] (TCP_RR: request and response sizes, default 1,1;
                          the stream tests ignore it)
                          -o|-O|-k [LIST] (netperf 2.7's output selectors: CSV, columns, keyval)
  sizes take K/M/G (2^10..) or k/m/g (10^3..) suffixes
  TCP_RR (SDP or IPoIB) takes neither -m/-M nor --steady, --explain, --trace;
  TCP_MAERTS (netserver sends) takes neither --explain nor --trace
hcasim options:
  --platform NAME|FILE         local host (default connectx-ddr-pcie1x8)
  --remote-platform NAME|FILE  remote host (default: same as --platform)
  --transport sdp|ipoib        SDP (default) or TCP/IP over IPoIB (--set ipoib.mode=
                               datagram|connected; see docs/cli.md)
  --set section.key=value      change a platform parameter on both hosts (repeatable);
                               fault.loss|corrupt|dup|reorder=P, fault.seed=N and
                               qp.retry_cnt|rnr_retry|timeout=N inject faults on the wire
                               (docs/cli.md "Faults on the simulated wire")
  --stats                      simulator statistics on stderr
  --profile                    per-CPU flat profile (time by activity) of both hosts, after
                               netperf's output
  --explain                    after the output, each resource's utilisation (PCIe, DMA reads,
                               IB link, HCA, CPUs), the bottleneck and a what-if (perftest too)
  --csv PATH                   results as CSV
  --json                       the output as one JSON document on stdout (docs/cli.md)
  --trace FILE                 the run's steps (CPUs, HCA, PCIe, IB, SDP messages or TCP
                               segments) as a trace for ui.perfetto.dev (docs/cli.md "--trace")
  --trace-window START,LEN     the trace's window, simulated s after the stream's start
                               (default 0,0.001)
  --verify-data                move real bytes and check them at the receiver (and
                               compare the crc32 of both ends' streams; exit 1 if unequal)
  --seed N                     seed of the data pattern
  --steady REL                 measure only the steady state, to the relative precision REL
                               (e.g. 0.002), within -l; SDP only (docs/cli.md)

hcasim ib_write_lat, ib_write_bw, ib_send_lat, ib_send_bw, ib_read_lat, ib_read_bw, ib_atomic_lat
and ib_atomic_bw take perftest 4.5's flags (-a -s -n -I -o -A -q -t -r -Q --report_gbits ...; see
hcasim ib_write_lat -h) and print perftest's report; the same hcasim
options as netperf but --profile, plus --columns classic|extended (perftest 2.x's five latency
columns, or 4.x's nine). --set hca.blueflame=off and --set host.write_combining=off ask the what-ifs.

hcasim ibv_rc_pingpong, ibv_uc_pingpong, ibv_ud_pingpong and ibv_srq_pingpong take rdma-core's
example programs' flags (-s -n -r -m -e -c ..., -q for srq; see hcasim ibv_rc_pingpong -h) and
print what the program prints: the client's lines with a servername, the server's without; both
sides are simulated. ibv_srq_pingpong runs -q RC QPs (default 16) on one SRQ per side.
--platform, --remote-platform, --set, --seed, --json and --stats as for perftest.

hcasim run runs every point of a scenario file (default: seed000) in its own simulation,
-j N at once (default: the number of online CPUs), and compares it with its measurement.
Exit status: 0 ok, 1 a gated point out of tolerance, 2 bad input or a failed point.
run and sweep --list-commands DIR print one standalone command per point (each writes its CSV
into DIR) for GNU parallel or a batch system; --collect DIR then reads them into the same
report, CSV and plot (docs/cli.md "Past one machine").

hcasim sweep runs TOOL (netperf, ib_write_lat, ib_write_bw, ib_send_lat, ib_send_bw, ib_read_lat,
ib_read_bw) once per message size
and variant, each point its own `hcasim TOOL ...` in a child process (-j N at once), and prints
a table: sizes as netperf's -- -m or perftest's -s take them, a list 64,1K,64K or a doubling
range 64..4M (perftest's -a: its own 2..8M); --vary KEY=V1,V2 (a --set key, or platform=NAME,NAME;
repeatable: every combination); --csv PATH the points as the tool's CSV rows behind their variant;
--plot PREFIX draws PREFIX.png and PREFIX.svg with gnuplot (and keeps PREFIX.dat, PREFIX.gp);
--reference CSV|RUNFILE adds measured points to the plot. See docs/cli.md "hcasim sweep".

hcasim compare simulates every run pasted in the run files (commands with their real netperf or
perftest output; docs/calibrate.md) as typed and prints `hcasim run`'s report: measured,
simulated, error. Nothing is fitted, nothing written but --csv. --platform (default
connectx-ddr-pcie1x8, or each run's `# hcasim: --platform`) and --set apply to every run;
--duration S and --iterations N shorten them as validate's do.

hcasim calibrate fits the named platform parameters (NLopt BOBYQA, bounded, default start/4 ..
start*4) to RUNS: run files (pasted commands with their real netperf/perftest output) or
scenarios (NAME[:REGEX] selects points by label), writes the fitted platform (-o, default
NAME-fitted.toml) and prints each parameter's sensitivity and every run's error, fitted and
held out (--holdout). Options: --start KEY=V, --set KEY=V, -j N, --max-evals N (60),
--duration S (netperf's simulated -l, default 4, 0 = as typed), --iterations N (perftest's -n
cap, default 20000, 0 = as typed).

hcasim validate runs every scenario file (default: all of scenarios/*.toml) in one sweep,
prints each scenario's report and a summary (per table and metric: median and max |error|,
tolerance, gated points within it, and the project's target for netperf tables); --report DIR
also writes DIR/report.md, the results CSVs and gnuplot PNG plots; --duration S and --iterations N
shorten every point as calibrate's do (default: as typed) and say so. Same exit status as run.

hcasim params lists every platform parameter (key, type, unit, range, doc); with --platform
also each one's value, where it was given and its source (hcasim params --help).
)";

int netperf_main(const std::vector<std::string>& args) {
  const frontends::NetperfOptions opts = frontends::parse_netperf_args(args, /*allow_byte_count=*/true);
  if (opts.help) {
    std::cout << kUsage;
    return 0;
  }
  const StopOnSignal stop_on_signal;  // before the Engine: SIGINT 130, SIGTERM 143, not SimGrid's exit 1
  if (opts.json)
    if (const std::string conflict = frontends::json_csv_conflict(opts.csv_path); !conflict.empty())
      throw InputError(conflict);
  if (opts.csv_path) util::check_output_path(*opts.csv_path, "--csv");
  if (opts.trace_path) check_trace_path(*opts.trace_path, opts.csv_path);
  frontends::check_verify_data_memory(opts);
  for (const auto& note : opts.notes) std::cerr << note << "\n";

  auto [local, remote] = load_host_platforms(opts.platform, opts.remote_platform, opts.sets);
  if (opts.csv_path) util::check_not_an_input(*opts.csv_path, platform_files(opts.platform, opts.remote_platform), "--csv");
  if (opts.trace_path)
    util::check_not_an_input(*opts.trace_path, platform_files(opts.platform, opts.remote_platform), "--trace");

  const frontends::TcpStreamConfig config = frontends::to_tcp_stream_config(opts);
  // On a terminal, a timed run that takes more than a wall second says how far it is and how
  // long it will take (stderr only; erased at the end). Elsewhere nothing is added.
  bool progress_shown = false;
  if (opts.length_bytes == 0 && ::isatty(STDERR_FILENO))
    sim::report_progress([&progress_shown, length = opts.length_s](double simulated_s, double wall_s) {
      std::cerr << "\r\033[K" << frontends::format_progress_line(simulated_s, length, wall_s) << std::flush;
      progress_shown = true;
    });
  std::optional<frontends::IpoibStreamResult> ipoib;
  // Init-captures: clang before 16 cannot capture a structured binding. sim/ names a config
  // field the platforms refuse; netperf's option names it to the user.
  const auto simulate = [&l = local, &r = remote, &config, &ipoib, &opts]() -> frontends::TcpStreamResult {
    try {
      switch (config.test) {
        case frontends::NetperfTest::Rr:
          if (opts.transport == "ipoib") return (ipoib = sim::run_ipoib_rr(l, r, config))->stream;
          return sim::run_tcp_rr(l, r, config);
        case frontends::NetperfTest::Maerts:
          if (opts.transport == "ipoib") return (ipoib = sim::run_ipoib_maerts(l, r, config))->stream;
          return sim::run_tcp_maerts(l, r, config);
        case frontends::NetperfTest::Stream: break;
      }
      if (opts.transport == "ipoib") return (ipoib = sim::run_ipoib_stream(l, r, config))->stream;
      return sim::run_tcp_stream(l, r, config);
    } catch (const frontends::ConfigError& e) {
      throw frontends::worded(e, frontends::netperf_option);
    }
  };
  const frontends::TcpStreamResult result = run_under_faults(config.faults.any(), simulate);
  if (progress_shown) std::cerr << "\r\033[K" << std::flush;
  // A run too short to deliver one message measured nothing: a throughput of 0 and a service
  // demand of 0 / 0 (netperf's -l is whole seconds; 1e-300 s ends before the first send).
  if (config.test == frontends::NetperfTest::Rr && result.transactions == 0)
    throw InputError(fmt::format("-l {}: too short to complete one transaction ({:.3g} s simulated); give a longer -l",
                                 opts.length_s, result.elapsed_s));
  if (result.bytes_received == 0)
    throw InputError(fmt::format("-l {}: too short to move one message (the receiver got 0 bytes in {:.3g} s "
                                 "simulated); give a longer -l",
                                 opts.length_s, result.elapsed_s));
  if (const std::string note = frontends::request_size_note(opts, result.send_size); !note.empty())
    std::cerr << note << "\n";
  if (opts.steady_rel > 0 && !result.steady_settled)
    std::cerr << fmt::format("hcasim: note: --steady {}: the stream did not settle to that precision within -l {} s; "
                             "measured whole\n",
                             opts.steady_rel, opts.length_s);

  const frontends::NetperfFigures figures = frontends::netperf_figures(opts, result);
  const OutputSection writing;  // a signal now waits for the outputs to be whole
  // A file first (a failure to write it leaves stdout empty); --csv /dev/stdout after the output.
  const bool csv_to_stdout = opts.csv_path && util::is_stdout_path(*opts.csv_path);
  if (opts.csv_path && !csv_to_stdout)
    util::write_file_atomically(*opts.csv_path, frontends::format_netperf_csv(opts, result, figures), "--csv");
  if (opts.trace_path) util::write_file_atomically(*opts.trace_path, result.trace_json, "--trace");
  if (opts.json) {
    std::cout << frontends::dump_json(frontends::netperf_json(args, opts, result, figures, local.name(), remote.name(),
                                                              ipoib ? &*ipoib : nullptr));
  } else {
    if (opts.output_mode != frontends::NetperfOptions::OutputMode::Classic)
      std::cout << frontends::format_netperf_omni(opts, frontends::parse_output_selection(opts), result,
                                                  ipoib ? &*ipoib : nullptr);
    else
      std::cout << frontends::format_netperf_output(opts, result, figures);
    if (opts.profile)
      std::cout << (ipoib ? frontends::format_ipoib_profile(*ipoib, local.name(), remote.name()) : frontends::format_netperf_profile(result));
    if (opts.explain && result.explain) std::cout << frontends::format_explain(frontends::explain(*result.explain));
  }
  std::cout << std::flush;
  if (csv_to_stdout) util::write_file_atomically(*opts.csv_path, frontends::format_netperf_csv(opts, result, figures), "--csv");
  // hcasim's own lines go to stderr after netperf's output, which stays netperf's alone.
  if (result.faults_configured) {
    std::cerr << "hcasim: local  " << result.local_faults.summary() << "\n";
    std::cerr << "hcasim: remote " << result.remote_faults.summary() << "\n";
  }
  const bool rr = config.test == frontends::NetperfTest::Rr;
  if (opts.verify_data && rr)
    std::cerr << fmt::format("hcasim: data: {} B of requests and {} B of responses, crc32 {:08x} as sent, {:08x} as "
                             "received\n",
                             result.crc_bytes_sent, result.crc_bytes_received, result.sent_crc32,
                             result.received_crc32);
  else if (opts.verify_data)
    std::cerr << fmt::format("hcasim: data: {} B sent, crc32 {:08x}; {} B received, crc32 {:08x}\n",
                             result.crc_bytes_sent, result.sent_crc32, result.crc_bytes_received,
                             result.received_crc32);
  if (opts.stats) {
    std::cerr << frontends::format_stats_line(result) << "\n";
    if (!result.link_busy_s.empty()) std::cerr << frontends::format_link_busy_line(result.link_busy_s, result.elapsed_s) << "\n";
    if (ipoib) std::cerr << frontends::format_tcp_tuning_line(*ipoib) << "\n";
  }
  if (opts.verify_data && !result.data_verified) {
    std::cerr << "hcasim: error: --verify-data: the data received differ from the data sent\n";
    return 1;
  }
  if (opts.verify_data && rr)
    std::cerr << fmt::format("hcasim: note: --verify-data: {} bytes compared at their receivers, all equal\n",
                             result.crc_bytes_sent + result.crc_bytes_received);
  else if (opts.verify_data)
    std::cerr << fmt::format("hcasim: note: --verify-data: {} {} compared at the receiver, all equal\n",
                             result.crc_bytes_received, result.crc_bytes_received == 1 ? "byte" : "bytes");
  return 0;
}

}  // namespace

/// The program: `hcasim COMMAND ...`. Also the entry point of `run`, `validate` and
/// `calibrate`'s forked children (scenarios/children.h).
static int hcasim_main(int argc, char** argv) {
  const std::vector<std::string> words(argv + 1, argv + argc);
  try {
    if (words.empty()) {
      std::cerr << kUsage;
      return 2;
    }
    const std::string& command = words.front();
    const std::vector<std::string> rest(words.begin() + 1, words.end());
    if (command == "--help" || command == "-h" || command == "help") {
      std::cout << kUsage;
      return 0;
    }
    if (command == "--version") {
      std::cout << "hcasim " << kVersion << "\n";
      return 0;
    }
    if (command == "netperf") {
      for (const auto& w : rest) {
        if (w == "--") break;
        if (w == "--help") {
          std::cout << kUsage;
          return 0;
        }
      }
      return netperf_main(rest);
    }
    if (const auto test = frontends::perftest_test_named(command)) return perftest_main(*test, rest);
    if (command.rfind("ibv_", 0) == 0)
      if (const auto program = frontends::pingpong_program_named(command)) return pingpong_main(*program, rest);
    if (command == "run") {
      for (const auto& w : rest)
        if (w == "--help" || w == "-h") {
          std::cout << kUsage;
          return 0;
        }
      return run_scenario(parse_run_args(rest));
    }
    const bool wants_help = std::any_of(rest.begin(), rest.end(), [](const std::string& w) { return w == "--help" || w == "-h"; });
    if (command == "calibrate") {
      if (wants_help) {
        std::cout << kUsage;
        return 0;
      }
      return run_calibrate(parse_calibrate_args(rest));
    }
    if (command == "params") return params_main(rest);
    if (command == "sweep") {
      // The tool's -h / --help too: its usage is hcasim's (a point would print it and measure nothing).
      if (wants_help) {
        std::cout << kUsage;
        return 0;
      }
      return run_sweep(parse_sweep_args(rest));
    }
    if (command == "compare") {
      if (wants_help) {
        std::cout << kUsage;
        return 0;
      }
      return compare_runs(parse_compare_args(rest));
    }
    if (command == "validate") {
      if (wants_help) {
        std::cout << kUsage;
        return 0;
      }
      return validate(parse_validate_args(rest));
    }
    throw InputError(fmt::format("unknown command '{}' (use netperf, ib_write_lat, ib_write_bw, ib_send_lat, "
                                 "ib_send_bw, ib_read_lat, ib_read_bw, ib_atomic_lat, ib_atomic_bw, ibv_rc_pingpong, "
                                 "ibv_uc_pingpong, ibv_ud_pingpong, ibv_srq_pingpong, run, "
                                 "sweep, compare, validate, calibrate or params; "
                                 "see hcasim --help)",
                                 command));
  } catch (const InputError& e) {
    std::cerr << "hcasim: error: " << e.what() << "\n";
    return 2;
  } catch (const RunFailure& e) {
    std::cerr << "hcasim: error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "hcasim: internal error: " << e.what() << "\n";
    return 3;
  }
}

int main(int argc, char** argv) {
  hcasim::scenarios::set_child_entry(&hcasim_main);
  return hcasim_main(argc, argv);
}
