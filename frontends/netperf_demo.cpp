// netperf's demo mode clock (netperf_demo.h).
#include "frontends/netperf_demo.h"

#include <cmath>

namespace hcasim::frontends {

namespace {
/// gettimeofday of the simulated clock, in whole microseconds.
int64_t timestamp_us(double now_ns) { return static_cast<int64_t>(std::floor(now_ns / 1000.0)); }
}  // namespace

double demo_default_units(const DemoConfig& config, bool rr, uint64_t stream_a, uint64_t stream_b) {
  if (config.units > 0) return config.units;
  if (rr || config.omni_default) return config.rr_default_units;
  // DEMO_STREAM_SETUP(a, b): twice the larger of the two buffers.
  return 2.0 * static_cast<double>(stream_a > stream_b ? stream_a : stream_b);
}

DemoClock::DemoClock(const DemoConfig& config, double default_units) : config_(config), units_(default_units) {}

void DemoClock::start(double now_ns) {
  one_us_ = timestamp_us(now_ns);
  units_this_tick_ = 0;
}

void DemoClock::tick(double now_ns, double units) {
  if (!config_.on) return;
  units_this_tick_ += units;
  if (units_this_tick_ < units_) return;
  const int64_t two_us = timestamp_us(now_ns);
  const auto actual = static_cast<double>(two_us - one_us_);
  // Re-time the guess whether or not a result is due (a zero interval makes it infinite, as
  // netperf's division does: no further result).
  units_ = units_ * (config_.interval_us / actual);
  if (actual >= config_.interval_us) {
    results_.push_back({units_this_tick_, actual, two_us});
    units_this_tick_ = 0;
    one_us_ = two_us;
  }
}

void DemoClock::finish(double now_ns) {
  if (!config_.on || !config_.final_interim || !(units_this_tick_ > 0)) return;
  const int64_t two_us = timestamp_us(now_ns);
  results_.push_back({units_this_tick_, static_cast<double>(two_us - one_us_), two_us});
  units_this_tick_ = 0;
}

}  // namespace hcasim::frontends
