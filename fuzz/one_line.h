#pragma once
/// \file The fuzz targets' check that an error reaching the user is one line.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "model/error.h"

namespace hcasim::fuzz {

/// Aborts (a finding) when e.what() spans lines, after printing it.
inline void expect_one_line(const InputError& e) {
  if (std::string(e.what()).find('\n') == std::string::npos) return;
  std::fprintf(stderr, "an error of more than one line: [%s]\n", e.what());
  std::abort();
}

}  // namespace hcasim::fuzz
