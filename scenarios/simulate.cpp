// Simulated points in child processes (simulate.h).
#include "scenarios/simulate.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "frontends/netperf_cli.h"
#include "frontends/perftest_cli.h"
#include "frontends/pingpong_cli.h"
#include "model/platform.h"
#include "scenarios/children.h"
#include "scenarios/datadir.h"
#include "scenarios/reference.h"
#include "sim/testbed.h"
#include "util/number.h"

namespace hcasim::scenarios {

namespace {

[[noreturn]] void fail_at(const std::string& origin, uint32_t line, const std::string& what) {
  throw InputError(fmt::format("{}:{}: {}", origin, line, what));
}

/// What a scenario's points need before its children start: the measured figures and the
/// resolved platform files (simulate_scenarios checks them all first).
struct CheckedScenario {
  std::vector<Figures> measured;                    // netperf points
  std::vector<LatencyFigures> measured_latency;     // latency points
  std::vector<BandwidthFigures> measured_bandwidth;  // bandwidth points (given only)
  std::vector<PingpongFigures> measured_pingpong;    // pingpong points (given only)
  std::map<std::string, std::string> platform_files;  // point platform -> file
};

/// Reads every reference of `s` and applies every point's --set to its platform, as the child
/// will (simulate_scenarios).
/// `given`, when not null, holds the measured figures instead of the references.
CheckedScenario check_scenario(const Scenario& s, const std::string& base, const MeasuredPoints* given) {
  CheckedScenario c;
  if (given) {
    c.measured = given->netperf;
    c.measured_latency = given->latency;
    c.measured_bandwidth = given->bandwidth;
    c.measured_pingpong = given->pingpong;
  }
  c.measured.resize(s.points.size());
  c.measured_latency.resize(s.points.size());
  c.measured_bandwidth.resize(s.points.size());
  c.measured_pingpong.resize(s.points.size());
  std::map<std::string, model::Platform> platforms;
  for (size_t i = 0; i < s.points.size(); ++i) {
    const ScenarioPoint& p = s.points[i];
    if (!given) try {
      switch (p.kind) {
        case PointKind::Latency: c.measured_latency[i] = read_latency_reference(p.reference, base); break;
        case PointKind::Bandwidth:
          c.measured_bandwidth[i] = read_reference_with(p.reference, base, bandwidth_reference_figures);
          break;
        case PointKind::Pingpong: {
          // The size and the iterations are the command's (the reference row has the figures).
          const auto o = frontends::parse_pingpong_args(*frontends::pingpong_program_named(p.tool), p.words);
          c.measured_pingpong[i] = read_reference_with(p.reference, base, pingpong_reference_figures);
          c.measured_pingpong[i].size = o.size;
          c.measured_pingpong[i].iters = o.iters;
          break;
        }
        case PointKind::NetperfRr: c.measured[i] = read_reference_with(p.reference, base, rr_reference_figures); break;
        case PointKind::Netperf: c.measured[i] = read_reference(p.reference, base); break;
      }
    } catch (const InputError& e) {
      fail_at(s.origin, p.line, fmt::format("point {}: reference: {}", i + 1, e.what()));
    }
    if ((p.kind == PointKind::Netperf || p.kind == PointKind::NetperfRr) && !given)
      check_reference_tolerances(s, i, c.measured[i]);
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
      throw_at_setting(p.set, p.set_origins, e);
      fail_at(s.origin, p.line, fmt::format("point {}: {}", i + 1, e.what()));
    }
  }
  return c;
}


/// Whether netperf `words` run TCP_RR, which measures no steady state (its rate needs no warm-up
/// search: `hcasim netperf -t TCP_RR --steady` is refused). Words that do not parse are left
/// for the child to refuse.
bool is_netperf_rr(const std::vector<std::string>& words) {
  try {
    return frontends::parse_netperf_args(words).test == "TCP_RR";
  } catch (const InputError&) {
    return false;
  }
}

/// The message size point `i` of `c` names in messages (0 for a netperf point).
uint64_t point_bytes(const Scenario& s, const CheckedScenario& c, size_t i) {
  switch (s.points[i].kind) {
    case PointKind::Bandwidth: return c.measured_bandwidth[i].bytes;
    case PointKind::Pingpong: return c.measured_pingpong[i].size;
    default: return c.measured_latency[i].bytes;
  }
}

}  // namespace

double parse_duration_flag(const std::string& text) {
  const auto d = util::parse_number(text);
  if (!d || !std::isfinite(*d) || *d < 0 || *d > 3600)
    throw InputError(fmt::format("--duration: '{}' must be 0..3600 seconds", text));
  return *d;
}

uint64_t parse_iterations_flag(const std::string& text) {
  const auto n = util::parse_number(text);
  const bool whole = n && std::isfinite(*n) && *n >= 0 && *n == std::floor(*n);
  if (!whole || (*n != 0 && (*n < static_cast<double>(frontends::kPerftestMinIters) ||
                             *n > static_cast<double>(frontends::kPerftestMaxIters))))
    throw InputError(fmt::format("--iterations: '{}' must be 0 or a whole number {}..{} (perftest's -n)", text,
                                 frontends::kPerftestMinIters, frontends::kPerftestMaxIters));
  return static_cast<uint64_t>(*n);
}

bool takes_steady(const std::string& tool, const std::vector<std::string>& words) {
  if (tool != "netperf" || is_netperf_rr(words)) return false;
  const auto dashes = std::find(words.begin(), words.end(), "--");
  for (auto w = words.begin(); w != dashes; ++w)
    if (*w == "--transport=ipoib" || (*w == "--transport" && w + 1 != dashes && w[1] == "ipoib")) return false;
  return true;
}

std::vector<std::string> with_sim_length(const std::string& tool, std::vector<std::string> words,
                                         const SimLength& length) {
  if (tool == "netperf" && length.duration_s) {
    const auto dashes = std::find(words.begin(), words.end(), "--");
    words.insert(dashes, {"-l", fmt::format("{}", *length.duration_s)});
  }
  if (length.steady_rel && takes_steady(tool, words))
    words.insert(std::find(words.begin(), words.end(), "--"), {"--steady", fmt::format("{}", *length.steady_rel)});
  if (tool != "netperf" && length.iterations) {
    uint64_t typed = tool == "ib_write_bw" ? 5000 : 1000;  // perftest's defaults
    for (size_t i = 0; i + 1 < words.size(); ++i)
      if (words[i] == "-n" || words[i] == "--iters")
        if (const auto n = util::parse_number(words[i + 1])) typed = static_cast<uint64_t>(*n);
    words.insert(words.end(), {"-n", fmt::format("{}", std::min(typed, *length.iterations))});
  }
  return words;
}

std::vector<std::vector<PointOutcome>> simulate_scenarios(const std::vector<Scenario>& scenarios,
                                                          size_t parallel, const SimLength& length,
                                                          const std::vector<MeasuredPoints>* measured,
                                                          const Fanout& fanout) {
  const std::string base = data_dir();
  std::vector<CheckedScenario> checked;
  for (size_t k = 0; k < scenarios.size(); ++k)
    checked.push_back(check_scenario(scenarios[k], base, measured ? &measured->at(k) : nullptr));

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
                                    point_label(p, point_bytes(s, checked[k], i))),
                        fmt::format("{}:{}", s.origin, p.line)});
    }
  }

  const auto executed = execute_runs(runs, parallel, fanout);
  if (!executed) return {};  // listed
  const std::vector<ChildResult>& results = *executed;

  std::vector<std::vector<PointOutcome>> outcomes(scenarios.size());
  for (size_t k = 0; k < scenarios.size(); ++k) {
    const Scenario& s = scenarios[k];
    const CheckedScenario& c = checked[k];
    for (size_t i = 0; i < s.points.size(); ++i) {
      const ScenarioPoint& p = s.points[i];
      const size_t run = run_of[k][i];
      const ChildResult& r = results[run];
      const std::string origin = r.source.empty() ? fmt::format("{} CSV", runs[run].label) : r.source;
      try {
        if (p.kind == PointKind::Netperf || p.kind == PointKind::NetperfRr) {
          outcomes[k].push_back(
              evaluate_point(p, s.tolerance, c.measured[i], netperf_csv_figures(r.csv, origin)));
          continue;
        }
        if (p.kind == PointKind::Pingpong) {
          outcomes[k].push_back(
              evaluate_pingpong_point(p, s.tolerance, c.measured_pingpong[i], pingpong_csv_figures(r.csv, origin)));
          continue;
        }
        if (p.kind == PointKind::Bandwidth) {
          const auto rows = bandwidth_csv_rows(r.csv, origin);
          const auto row = std::find_if(rows.begin(), rows.end(), [&](const BandwidthFigures& f) {
            return f.bytes == c.measured_bandwidth[i].bytes;
          });
          if (row == rows.end())
            throw InputError(fmt::format("its {} CSV has no row for {} bytes (does the command run that size?)",
                                         p.tool, c.measured_bandwidth[i].bytes));
          outcomes[k].push_back(evaluate_bandwidth_point(p, s.tolerance, c.measured_bandwidth[i], *row));
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
                                       point_label(p, point_bytes(s, c, i)), e.what()),
                           r.errors);
      }
    }
  }
  return outcomes;
}

std::vector<PointOutcome> simulate_scenario(const Scenario& scenario, size_t parallel) {
  return simulate_scenarios({scenario}, parallel).front();
}

}  // namespace hcasim::scenarios
