#pragma once
/// \file The platform file `hcasim calibrate` writes: the base file, line for line, with the fitted
/// values and their sources in place (model/platform.h's one-line { value, unit, source } tables).
#include <string>
#include <tuple>
#include <vector>

#include "model/platform.h"

namespace hcasim::scenarios {

/// A numeric parameter's value (a double, or an integer as a double); NaN for a bool or a string.
double param_number(const model::Param& p);

/// The platform file `base_text` (read from `origin`) with the value and source of each
/// (key, TOML literal, source) replaced on the parameter's own line, and a top-level `name`
/// given the suffix "-fitted". Throws InputError when a key is not on a single line of its
/// section as `name = { value = ..., unit = ..., source = "..." }`. The result parses
/// (checked) and holds exactly the new values.
std::string rewrite_platform(const std::string& base_text, const std::string& origin,
                             const std::vector<std::tuple<std::string, std::string, std::string>>& changes);

}  // namespace hcasim::scenarios
