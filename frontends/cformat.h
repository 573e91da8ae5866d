#pragma once
/// \file printf into a std::string: the tools hcasim imitates (netperf, perftest) print with C
/// printf formats (%-7.2f, %#06x, %g), and reproducing their output means using the same.
#include <string>

namespace hcasim::frontends {

/// vsnprintf of `format` and its arguments into a string.
[[gnu::format(printf, 1, 2)]] std::string cformat(const char* format, ...);

}  // namespace hcasim::frontends
