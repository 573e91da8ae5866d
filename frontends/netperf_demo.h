#pragma once
/// \file netperf's demo mode (global -D, a netperf built with --enable-demo): interim results
/// while a test runs. Plain C++, no SimGrid: sim/ calls DemoClock at the simulated instants
/// netperf's loop would, and frontends/netperf_output.h prints what it collected.
///
/// The logic is netperf's: netperf 2.4.3 src/nettest_bsd.c DEMO_STREAM_SETUP, DEMO_RR_SETUP,
/// DEMO_STREAM_INTERVAL and DEMO_RR_INTERVAL for the classic tests; netperf 2.7.0 src/netlib.c
/// demo_interval_tick, demo_interval_final (mode 1, "use the unit accumulation first") and
/// src/nettest_omni.c send_omni_inner for a test printing output selectors (omni).
#include <cstdint>
#include <vector>

namespace hcasim::frontends {

/// What -D asked for, resolved by the front end.
struct DemoConfig {
  bool on = false;             ///< -D given
  double interval_us = 1e6;    ///< -D INTERVAL: seconds x 10^6 (netsh.c: atof(arg1) * 1000000.0), us
  double units = 0;            ///< -D ,UNITS: the first guess of units per interval; 0 = the test's default
  /// netperf 2.7 (omni): one last interim result at the end of the loop when units are left
  /// (netlib.c demo_interval_final); netperf 2.4.3 prints none.
  bool final_interim = false;
  /// The default first guess of a request/response test (DEMO_RR_SETUP): 1000 in 2.4.3's
  /// send_tcp_rr, 100 in 2.7's send_omni_inner (for every omni test, streams too).
  double rr_default_units = 1000;
  bool omni_default = false;   ///< 2.7 omni: the default is rr_default_units for a stream test too
  /// 2.7 omni request/response with a byte format (-f other than 'x'): each transaction ticks
  /// request + response bytes instead of 1.
  bool rr_ticks_bytes = false;
  /// A stream test's ticks come from the receiver's recv() (TCP_MAERTS: netperf receives).
  bool at_receiver = false;
};

/// One interim result: `units` (bytes or transactions) done over `interval_us`, which ended at
/// simulated time `end_us` (us since the simulation's start, the clock gettimeofday reads).
struct InterimResult {
  double units = 0;
  double interval_us = 0;
  int64_t end_us = 0;
};

/// netperf's interim-result clock. Time stamps are integer microseconds (HIST_timestamp is
/// gettimeofday: delta_micro of two struct timeval) of the simulated clock.
class DemoClock {
 public:
  /// `default_units`: the first guess when -D gave none (DEMO_STREAM_SETUP: twice the larger of
  /// the two socket buffers of the stream, B; DEMO_RR_SETUP: transactions).
  DemoClock(const DemoConfig& config, double default_units);
  /// The loop starts (HIST_timestamp(demo_one_ptr) before it), at `now_ns` simulated ns.
  void start(double now_ns);
  /// `units` done at `now_ns` (DEMO_STREAM_INTERVAL / demo_interval_tick): when the units
  /// reach the guess, re-time the guess to the interval, and emit a result when at least an
  /// interval has passed.
  void tick(double now_ns, double units);
  /// The loop ended at `now_ns`: with DemoConfig::final_interim and units left, a last result.
  void finish(double now_ns);
  const std::vector<InterimResult>& results() const { return results_; }

 private:
  DemoConfig config_;
  double units_ = 0;           ///< demo_units
  double units_this_tick_ = 0;
  int64_t one_us_ = 0;         ///< demo_one
  std::vector<InterimResult> results_;
};

/// The DemoClock's first guess of a test: DemoConfig::units when given, else 2.4.3's and
/// 2.7's defaults (see DemoConfig). `stream_a`, `stream_b`: a stream test's two socket buffers
/// (TCP_STREAM: local send, remote receive; TCP_MAERTS: local receive, remote send), B.
double demo_default_units(const DemoConfig& config, bool rr, uint64_t stream_a, uint64_t stream_b);

}  // namespace hcasim::frontends
