#pragma once
/// \file CSV text as rows of cells (RFC 4180), for the reference and result CSVs.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "model/error.h"

namespace hcasim::util {

/// A CSV file as rows of cells (RFC 4180 quoting; "\n" or "\r\n" line ends; empty lines
/// skipped). Throws InputError "ORIGIN:LINE: unterminated quote". `row_lines`, when given,
/// gets the line each row begins on (1-based).
std::vector<std::vector<std::string>> parse_csv(std::string_view text, const std::string& origin,
                                                std::vector<size_t>* row_lines = nullptr);

/// Quotes a CSV cell when it holds a comma, a quote or a line break.
std::string csv_cell(std::string_view text);

}  // namespace hcasim::util
