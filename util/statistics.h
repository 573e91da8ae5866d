#pragma once
/// \file Summary statistics of samples.
#include <vector>

namespace hcasim::util {

/// The median of `values` (the mean of the middle two for an even count); `values` must not be
/// empty. For the per-table summaries of `hcasim run` and `validate`.
double median(std::vector<double> values);

}  // namespace hcasim::util
