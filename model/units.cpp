#include "model/units.h"

#include <limits>
#include <string>

namespace hcasim::model {

namespace {

[[noreturn]] void bad_size(std::string_view text, std::string_view what) {
  throw InputError(std::string(what) + ": bad size '" + std::string(text) +
                   "' (use a number with an optional K/M/G or k/m/g suffix)");
}

/// Multiplier of a netperf size suffix, 0 when `c` is not one.
uint64_t suffix_multiplier(char c) {
  switch (c) {
    case 'K': return uint64_t{1} << 10;
    case 'M': return uint64_t{1} << 20;
    case 'G': return uint64_t{1} << 30;
    case 'k': return 1'000;
    case 'm': return 1'000'000;
    case 'g': return 1'000'000'000;
    default: return 0;
  }
}

}  // namespace

uint64_t parse_size(std::string_view text, std::string_view what) {
  std::string_view digits = text;
  uint64_t multiplier = 1;
  if (!digits.empty()) {
    if (uint64_t m = suffix_multiplier(digits.back()); m != 0) {
      multiplier = m;
      digits.remove_suffix(1);
    }
  }
  if (digits.empty()) bad_size(text, what);

  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  uint64_t value = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') bad_size(text, what);
    const auto d = static_cast<uint64_t>(c - '0');
    if (value > (kMax - d) / 10) bad_size(text, what);  // value * 10 + d would overflow
    value = value * 10 + d;
  }
  if (value > kMax / multiplier) bad_size(text, what);
  return value * multiplier;
}

}  // namespace hcasim::model
