#pragma once
/// \file Numbers in command-line and file text.
#include <optional>
#include <string_view>

namespace hcasim::util {

/// Parses a whole decimal number (optional sign, digits, optional fraction and exponent), as
/// the entire text; returns nothing on anything else (no suffixes, no spaces, no "inf"/"nan").
std::optional<double> parse_number(std::string_view text);

}  // namespace hcasim::util
