// libFuzzer target: a scenario file (scenarios/scenario.h parse_scenario) and the CSV readers of
// reference data. Bad input is an InputError with one line, never a crash.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fuzz/one_line.h"
#include "model/error.h"
#include "scenarios/reference.h"
#include "scenarios/scenario.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    hcasim::scenarios::parse_scenario(text, "fuzz.toml");
  } catch (const hcasim::InputError& e) {
    hcasim::fuzz::expect_one_line(e);
  }
  try {
    hcasim::scenarios::netperf_csv_figures(text, "fuzz.csv");
  } catch (const hcasim::InputError& e) {
    hcasim::fuzz::expect_one_line(e);
  }
  try {
    hcasim::scenarios::latency_csv_rows(text, "fuzz.csv");
  } catch (const hcasim::InputError& e) {
    hcasim::fuzz::expect_one_line(e);
  }
  return 0;
}
