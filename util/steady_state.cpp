#include "util/steady_state.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace hcasim::util {

SteadyState::SteadyState(double rel, size_t min_windows) : rel_(rel), min_windows_(min_windows) {
  if (!(rel > 0 && rel < 1)) throw std::invalid_argument("SteadyState: rel " + std::to_string(rel) + " not in (0, 1)");
  if (min_windows < 3) throw std::invalid_argument("SteadyState: min_windows must be at least 3");
}

bool SteadyState::agree(const std::vector<double>& a, const std::vector<double>& b) const {
  for (size_t i = 0; i < a.size(); ++i)
    if (std::abs(a[i] - b[i]) > rel_ * std::max(std::abs(a[i]), std::abs(b[i]))) return false;
  return true;
}

SteadyState::Step SteadyState::checkpoint(double t, std::span<const double> totals) {
  if (totals.empty()) throw std::invalid_argument("SteadyState: no quantity");
  if (have_last_ && totals.size() != last_totals_.size())
    throw std::invalid_argument("SteadyState: the number of quantities changed");
  if (have_last_ && !(t > last_t_)) throw std::invalid_argument("SteadyState: checkpoint times must increase");
  if (done_) return Step::Done;
  const std::vector<double> now(totals.begin(), totals.end());
  Step step = measuring_ ? Step::Measuring : Step::Warming;
  if (!measuring_) {
    if (have_last_) {
      std::vector<double> rates(now.size());
      for (size_t i = 0; i < now.size(); ++i) rates[i] = (now[i] - last_totals_[i]) / (t - last_t_);
      if (!last_rates_.empty() && agree(rates, last_rates_)) {
        measuring_ = true;
        origin_t_ = t;
        origin_totals_ = now;
        step = Step::Start;
      }
      last_rates_ = std::move(rates);
    }
  } else {
    std::vector<double> avg(now.size());
    for (size_t i = 0; i < now.size(); ++i) avg[i] = (now[i] - origin_totals_[i]) / (t - origin_t_);
    averages_.push_back(std::move(avg));
    if (averages_.size() > 3) averages_.erase(averages_.begin());
    ++windows_;
    if (windows_ >= min_windows_ && averages_.size() == 3) {
      bool steady = true;
      for (size_t i = 0; i < now.size() && steady; ++i) {
        const double lo = std::min({averages_[0][i], averages_[1][i], averages_[2][i]});
        const double hi = std::max({averages_[0][i], averages_[1][i], averages_[2][i]});
        steady = hi - lo <= rel_ * std::max(std::abs(lo), std::abs(hi));
      }
      if (steady) {
        done_ = true;
        step = Step::Done;
      }
    }
  }
  have_last_ = true;
  last_t_ = t;
  last_totals_ = now;
  return step;
}

}  // namespace hcasim::util
