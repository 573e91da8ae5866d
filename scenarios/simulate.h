#pragma once
/// \file Simulating a scenario's points, each in a child process, and comparing them with their
/// measurements (`hcasim run`, `validate`, `calibrate`).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/error.h"
#include "scenarios/compare.h"
#include "scenarios/fanout.h"
#include "scenarios/reference.h"
#include "scenarios/scenario.h"

namespace hcasim::scenarios {


/// A shorter simulation than the commands ask for (`hcasim validate` and `hcasim calibrate`
/// --duration / --iterations): steady-state figures need far less than a real run's 60 s.
struct SimLength {
  std::optional<double> duration_s;     ///< netperf's -l replaced by this many seconds (> 0)
  std::optional<uint64_t> iterations;   ///< perftest's -n capped (never raised) at this count (> 0)
  /// netperf over SDP measured in its steady state to this relative precision (`--steady`,
  /// sim/netperf_sim.h), within the length; IPoIB runs as it is.
  std::optional<double> steady_rel;
};

/// The value of `--duration` (validate, calibrate): simulated seconds, 0..3600. Throws
/// InputError "--duration: 'TEXT' must be 0..3600 seconds" otherwise.
double parse_duration_flag(const std::string& text);

/// The value of `--iterations` (validate, calibrate, compare): 0 (perftest's -n as typed) or a
/// cap perftest itself accepts as -n, 5..100000000 (MIN_ITER..MAX_ITER, frontends/perftest_cli.h).
/// Throws InputError "--iterations: 'TEXT' must be 0 or a whole number 5..100000000" otherwise.
uint64_t parse_iterations_flag(const std::string& text);

/// Whether a run of `tool` with `words` (its words after the tool) is measured in its steady
/// state when calibrate asks for it: a netperf stream over SDP (not TCP_RR, not IPoIB, which
/// have no --steady).
bool takes_steady(const std::string& tool, const std::vector<std::string>& words);

/// `words` (a command's words after its tool, as ScenarioPoint::words) with `length` applied for
/// `tool`: netperf gets `-l S` before its "--" (a later -l replaces an earlier one) and, where
/// takes_steady, `--steady REL`; perftest and the pingpongs get `-n min(typed -n or its default,
/// N)` at the end; unchanged where `length` says nothing.
std::vector<std::string> with_sim_length(const std::string& tool, std::vector<std::string> words,
                                         const SimLength& length);

/// Measured figures of a scenario's points given as they are rather than read from its
/// references (`hcasim compare`: the output pasted in a run file): by point index, the one of
/// the point's kind used.
struct MeasuredPoints {
  std::vector<Figures> netperf;          ///< netperf points
  std::vector<LatencyFigures> latency;   ///< latency points
  std::vector<BandwidthFigures> bandwidth;  ///< bandwidth points (run files only)
  std::vector<PingpongFigures> pingpong;    ///< pingpong points (run files only)
};

/// Simulates every point of every scenario of `scenarios` in one sweep of child processes
/// (children.h run_children, at most `parallel` at once, so that the last points of one
/// scenario and the first of the next run side by side; identical command lines run once) and
/// compares each with its measurement. Returns, per scenario, its outcomes in point order;
/// they do not depend on `parallel`.
///
/// Everything the children need is checked before any starts: throws InputError for a bad
/// reference ("ORIGIN:LINE: point N: reference: ..."), a tolerance a reference needs and the
/// scenario lacks (check_reference_tolerances) or a bad platform or --set. Throws
/// Interrupted on SIGINT/SIGTERM, and ChildFailure when a child fails or its CSV lacks what
/// its point needs (what(): "[SCENARIO ]point N (LABEL) failed...", errors: its stderr; the
/// scenario's name is in front only when `scenarios` has more than one). `length` shortens
/// every point's simulation (with_sim_length); by default each runs as its command says.
/// `measured`, when given (one per scenario), replaces the references: nothing is read, and no
/// tolerance is required. `fanout` (fanout.h): with --list-commands the runs are printed and
/// the result is empty; with --collect their CSVs are read instead of run.
std::vector<std::vector<PointOutcome>> simulate_scenarios(const std::vector<Scenario>& scenarios,
                                                          size_t parallel, const SimLength& length = {},
                                                          const std::vector<MeasuredPoints>* measured = nullptr,
                                                          const Fanout& fanout = {});

/// simulate_scenarios() of one scenario: its outcomes in point order.
std::vector<PointOutcome> simulate_scenario(const Scenario& scenario, size_t parallel);


}  // namespace hcasim::scenarios
