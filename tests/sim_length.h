#pragma once
// The simulated length of the tests that simulate long runs (the ValidationReport fixture, the
// calibrate fits). A build may shorten them with the CMake cache variables
// HCASIM_TEST_SIM_SECONDS (netperf's simulated seconds), HCASIM_TEST_PERFTEST_ITERATIONS
// (perftest's iteration cap) and HCASIM_TEST_FIT_SECONDS (the fits' netperf seconds), which
// reach the tests as compile definitions of the same names; the default preset sets none of them
// and the asan preset all three (0.2 s, 2000, 0.05 s) so that the test command fits in CI
// (docs/testing.md "Test lengths"). Unset, every test simulates the lengths its commands say.
#include <string>

/// The words to add to `hcasim validate`: " --duration S --iterations N" for what the build
/// shortens, "" when it shortens nothing.
inline std::string test_validate_length_args() {
  std::string args;
#ifdef HCASIM_TEST_SIM_SECONDS
  args += " --duration " HCASIM_TEST_SIM_SECONDS;
#endif
#ifdef HCASIM_TEST_PERFTEST_ITERATIONS
  args += " --iterations " HCASIM_TEST_PERFTEST_ITERATIONS;
#endif
  return args;
}

// The calibrate fits (the round trip and the cross-validations) simulate every fitting run
// once per evaluation, up to 90 evaluations: a build may shorten them further with
// HCASIM_TEST_FIT_SECONDS; without it they follow HCASIM_TEST_SIM_SECONDS.
#if defined(HCASIM_TEST_FIT_SECONDS)
#define HCASIM_TEST_FIT_LENGTH HCASIM_TEST_FIT_SECONDS
#elif defined(HCASIM_TEST_SIM_SECONDS)
#define HCASIM_TEST_FIT_LENGTH HCASIM_TEST_SIM_SECONDS
#endif

/// netperf's -l for a calibrate test that simulates `own` seconds and compares only
/// simulations with each other (the round trip): the build's fit length when shorter.
inline std::string test_netperf_seconds(const std::string& own) {
#ifdef HCASIM_TEST_FIT_LENGTH
  if (std::stod(HCASIM_TEST_FIT_LENGTH) < std::stod(own)) return HCASIM_TEST_FIT_LENGTH;
#endif
  return own;
}

/// The words to add to `hcasim calibrate` that simulates netperf runs for its default 4 s:
/// " --duration S" when the build's fit length is shorter, "" otherwise.
inline std::string test_calibrate_length_args() {
#ifdef HCASIM_TEST_FIT_LENGTH
  if (std::stod(HCASIM_TEST_FIT_LENGTH) < 4) return " --duration " HCASIM_TEST_FIT_LENGTH;
#endif
  return "";
}
