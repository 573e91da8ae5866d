#include "model/noise.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "model/error.h"
#include "model/platform.h"

namespace hcasim::model {

namespace {
constexpr double kNever = std::numeric_limits<double>::infinity();
}  // namespace

NoiseConfig NoiseConfig::from_platform(const Platform& p, const CpuCosts& costs) {
  NoiseConfig c;
  c.timer_hz = costs.timer_hz;
  c.timer_tick_ns = costs.timer_tick_ns;
  c.interference_rate_hz = p.num("host.interference_rate");
  c.interference_mean_ns = p.num("host.interference_mean") * 1e3;
  return c;
}

uint64_t SplitMix64::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double SplitMix64::uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

double SplitMix64::exponential(double mean) { return -mean * std::log1p(-uniform()); }

CpuNoise::CpuNoise(const NoiseConfig& cfg, uint64_t seed) : cfg_(cfg), rng_(seed) {
  if (cfg_.timer_hz > 0) tick_phase_ns_ = rng_.uniform() * 1e9 / cfg_.timer_hz;
  if (cfg_.interference_rate_hz > 0 && cfg_.interference_mean_ns > 0) {
    const double start = rng_.exponential(1e9 / cfg_.interference_rate_hz);
    windows_.push_back({start, start + rng_.exponential(cfg_.interference_mean_ns)});
  }
}

double CpuNoise::available_at(double query) {
  const bool ticks = cfg_.timer_hz > 0 && cfg_.timer_tick_ns > 0;
  const double period = ticks ? 1e9 / cfg_.timer_hz : kNever;
  // Windows wholly before the query can no longer matter (queries do not go back in time).
  while (!windows_.empty() && windows_.front().end_ns <= query) {
    const double start = windows_.back().end_ns + rng_.exponential(1e9 / cfg_.interference_rate_hz);
    if (windows_.size() == 1) windows_.push_back({start, start + rng_.exponential(cfg_.interference_mean_ns)});
    windows_.pop_front();
  }
  double t = query;
  for (bool moved = true; moved;) {
    moved = false;
    if (ticks && t >= tick_phase_ns_) {  // the tick starting at or before t, if it still runs
      const double tick_start = tick_phase_ns_ + std::floor((t - tick_phase_ns_) / period) * period;
      if (t < tick_start + cfg_.timer_tick_ns) {
        t = tick_start + cfg_.timer_tick_ns;
        moved = true;
      }
    }
    if (windows_.empty()) continue;
    while (windows_.back().start_ns <= t) {  // generate the windows that may cover t
      const double start = windows_.back().end_ns + rng_.exponential(1e9 / cfg_.interference_rate_hz);
      windows_.push_back({start, start + rng_.exponential(cfg_.interference_mean_ns)});
    }
    for (const Window& w : windows_)
      if (w.start_ns <= t && t < w.end_ns) {
        t = w.end_ns;
        moved = true;
      }
  }
  return t;
}

}  // namespace hcasim::model

namespace hcasim::model::schema {
namespace {
using namespace decl;
constexpr ParamSpec kNoise[] = {
    nonneg("host.interference_rate", "1/s",
           "rate of rare stalls of a CPU (other interrupts, SMIs, preemption); 0: none"),
    nonneg("host.interference_mean", "us", "mean length of such a stall (exponential)"),
};
}  // namespace
std::span<const ParamSpec> noise() { return kNoise; }
}  // namespace hcasim::model::schema
