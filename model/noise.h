#pragma once
/// \file Host noise for the latency tools: the times at which a CPU is away from the benchmark
/// loop, so that perftest's t_max and tail percentiles are not constant. Seeded and
/// deterministic (the same seed gives the same windows on every machine). Plain C++.
///
/// Two processes per CPU (platform [host]/[cpu]):
///  - the periodic timer tick: host.timer_hz ticks per second, each taking cpu.timer_tick ns;
///    the phase of the first tick is drawn uniformly in one period;
///  - interference (other interrupts, SMIs, the hypervisor, preemption): windows lasting an
///    exponentially distributed time of mean host.interference_mean, each starting an
///    exponentially distributed gap of mean 1 / host.interference_rate after the previous one
///    ends (a renewal process; Poisson with that rate when the windows are short).
/// A poll loop that is away when its data lands notices it only when it is back.
#include <cstdint>
#include <deque>

#include "model/cpu.h"

namespace hcasim::model {

class Platform;

/// Parameters of one host's noise.
struct NoiseConfig {
  double timer_hz = 0;              ///< host.timer_hz, ticks per second per CPU
  double timer_tick_ns = 0;         ///< cpu.timer_tick, ns per tick
  double interference_rate_hz = 0;  ///< host.interference_rate, events per second per CPU
  double interference_mean_ns = 0;  ///< host.interference_mean (us in the file), mean duration

  /// The tick from `costs` (CpuCosts::from_platform read and checked it), the interference
  /// from host.interference_rate and host.interference_mean (finite, >= 0). Throws InputError
  /// otherwise.
  static NoiseConfig from_platform(const Platform& p, const CpuCosts& costs);
};

/// SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number generators",
/// OOPSLA 2014): a 64-bit generator whose output depends only on the seed, unlike the
/// distributions of <random>, whose algorithms the C++ standard leaves to the library.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next();
  /// Uniform in [0, 1), 53 bits.
  double uniform();
  /// Exponential of the given mean (inversion: -mean x ln(1 - u)).
  double exponential(double mean);

 private:
  uint64_t state_;
};

/// The away-windows of one CPU, generated lazily in time order.
class CpuNoise {
 public:
  CpuNoise(const NoiseConfig& cfg, uint64_t seed);
  /// The earliest time >= t_ns (ns) at which the CPU is in the benchmark loop: t_ns itself, or
  /// the end of the window(s) covering it. Calls must come with non-decreasing t_ns.
  double available_at(double t_ns);
  /// A uniform draw in [0, 1) from this CPU's stream (the poll loop's phase).
  double uniform() { return rng_.uniform(); }

 private:
  struct Window {
    double start_ns, end_ns;
  };
  NoiseConfig cfg_;
  SplitMix64 rng_;
  double tick_phase_ns_ = 0;      // start of the first timer tick
  std::deque<Window> windows_;    // interference windows ending after the last query, in order
};

}  // namespace hcasim::model
