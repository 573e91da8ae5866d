#include "util/statistics.h"

#include <algorithm>
#include <cstddef>

namespace hcasim::util {

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2.0;
}

}  // namespace hcasim::util
