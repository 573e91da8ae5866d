#pragma once
/// \file Parsing of user-written quantities (sizes with netperf suffixes).
#include <cstdint>
#include <string_view>

#include "model/error.h"

namespace hcasim::model {

/// Parses a byte count the way netperf 2.4 reads -m/-M/-s/-S: a plain unsigned decimal integer,
/// optionally followed by exactly one suffix: K, M, G = 2^10, 2^20, 2^30 bytes, or k, m, g =
/// 10^3, 10^6, 10^9 bytes (netperf's convert(), netlib.c). No sign, no spaces, no fraction.
/// Returns bytes. Throws InputError
/// "WHAT: bad size 'TEXT' (use a number with an optional K/M/G or k/m/g suffix)" on anything
/// else, including an empty text, a bare suffix and a value that does not fit in 64 bits.
/// `what` names the flag or key at fault (e.g. "-m" or "--set pcie.max_payload").
uint64_t parse_size(std::string_view text, std::string_view what);

}  // namespace hcasim::model
