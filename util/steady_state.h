#pragma once
/// \file When a deterministic simulation's rates have settled: a warm-up that ends when two
/// consecutive windows give the same rates, then a measured interval that ends when its
/// running averages stop moving. For fits (hcasim calibrate) and sweeps that need each point's
/// steady state to a stated precision, not a fixed simulated length.
#include <cstddef>
#include <span>
#include <vector>

namespace hcasim::util {

/// Watches running totals (bytes moved, CPU ns busy, ...) sampled at checkpoints of simulated
/// time and says when to start and when to stop measuring.
///
/// - Warm-up: the rate of each quantity over the last window (its total's increase / the window's
///   length) is compared with the window before; once every quantity's two rates agree within
///   `rel` (|a - b| <= rel x max(|a|, |b|)), the measured interval starts at that checkpoint.
/// - Measuring: each quantity's average rate over the measured interval, at each checkpoint; once
///   `min_windows` checkpoints lie in the interval and the last three averages of every quantity
///   agree within `rel` (their spread <= rel x the largest), the interval ends.
///
/// A periodic steady state (a stream of equal messages) passes both tests as soon as the window
/// holds many periods, so the error of the averages against a much longer run is of the order of
/// `rel`. Checkpoint times must increase; totals must not decrease.
class SteadyState {
 public:
  /// What the caller does at a checkpoint.
  enum class Step {
    Warming,    ///< keep going, not measuring yet
    Start,      ///< the measured interval starts here: take this checkpoint as its origin
    Measuring,  ///< keep going, measuring
    Done,       ///< the measured interval ends here
  };

  /// `rel` in (0, 1): the relative precision; `min_windows` >= 3: checkpoints a measured interval
  /// holds at least. Throws std::invalid_argument otherwise.
  explicit SteadyState(double rel, size_t min_windows = 4);

  /// A checkpoint at simulated time `t` (any unit, increasing) with the running totals of the
  /// quantities (the same count at every call, at least one). Throws std::invalid_argument on a
  /// count that changes or a time that does not increase.
  Step checkpoint(double t, std::span<const double> totals);

  double relative_precision() const { return rel_; }

 private:
  /// Every pair of `a[i]`, `b[i]` within rel_ of each other.
  bool agree(const std::vector<double>& a, const std::vector<double>& b) const;

  double rel_;
  size_t min_windows_;
  bool measuring_ = false;
  bool done_ = false;
  bool have_last_ = false;
  double last_t_ = 0;
  std::vector<double> last_totals_;
  std::vector<double> last_rates_;  // warm-up: the previous window's rates (empty before one)
  double origin_t_ = 0;
  std::vector<double> origin_totals_;
  size_t windows_ = 0;                     // checkpoints since the measured interval started
  std::vector<std::vector<double>> averages_;  // the last three averages of the interval
};

}  // namespace hcasim::util
