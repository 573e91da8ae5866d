#include "model/noise.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "model/error.h"
#include "model/platform.h"

namespace hcasim::model {

namespace {
double nonneg(const Platform& p, const std::string& key, std::string_view unit) {
  const double v = p.num(key, unit);
  if (!(v >= 0) || !std::isfinite(v))
    throw InputError(fmt::format("platform {}: {} = {} {} must be >= 0", p.name(), key, v, unit));
  return v;
}
constexpr double kNever = std::numeric_limits<double>::infinity();
}  // namespace

NoiseConfig NoiseConfig::from_platform(const Platform& p) {
  NoiseConfig c;
  c.timer_hz = nonneg(p, "host.timer_hz", "Hz");
  c.timer_tick_ns = nonneg(p, "cpu.timer_tick", "ns");
  c.interference_rate_hz = nonneg(p, "host.interference_rate", "1/s");
  c.interference_mean_ns = nonneg(p, "host.interference_mean", "us") * 1e3;
  if (c.timer_hz * c.timer_tick_ns >= 1e9)
    throw InputError(fmt::format("platform {}: host.timer_hz x cpu.timer_tick = {} ns per s leaves no time to run",
                                 p.name(), c.timer_hz * c.timer_tick_ns));
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
  const double period = cfg_.timer_hz > 0 ? 1e9 / cfg_.timer_hz : kNever;
  next_tick_ns_ = cfg_.timer_hz > 0 && cfg_.timer_tick_ns > 0 ? rng_.uniform() * period : kNever;
  if (cfg_.interference_rate_hz > 0 && cfg_.interference_mean_ns > 0) {
    next_event_ns_ = rng_.exponential(1e9 / cfg_.interference_rate_hz);
    event_len_ns_ = rng_.exponential(cfg_.interference_mean_ns);
  } else {
    next_event_ns_ = kNever;
  }
}

double CpuNoise::available_at(double t) {
  const double period = cfg_.timer_hz > 0 ? 1e9 / cfg_.timer_hz : kNever;
  for (;;) {
    bool moved = false;
    while (next_tick_ns_ + cfg_.timer_tick_ns <= t) next_tick_ns_ += period;  // ticks wholly past
    if (next_tick_ns_ <= t) {  // inside a tick
      t = next_tick_ns_ + cfg_.timer_tick_ns;
      next_tick_ns_ += period;
      moved = true;
    }
    while (next_event_ns_ + event_len_ns_ <= t) {  // interference wholly past
      next_event_ns_ += event_len_ns_ + rng_.exponential(1e9 / cfg_.interference_rate_hz);
      event_len_ns_ = rng_.exponential(cfg_.interference_mean_ns);
    }
    if (next_event_ns_ <= t) {
      t = next_event_ns_ + event_len_ns_;
      moved = true;
    }
    if (!moved) return t;
  }
}

}  // namespace hcasim::model
