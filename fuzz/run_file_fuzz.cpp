// libFuzzer target: the readers of real netperf and perftest output (scenarios/run_file.h), and
// the netperf and perftest command lines in them. Bad input is one FILE:LINE InputError line.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "frontends/netperf_cli.h"
#include "frontends/perftest_cli.h"
#include "fuzz/one_line.h"
#include "model/error.h"
#include "scenarios/run_file.h"
#include "util/command_words.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hcasim::scenarios;
  using namespace hcasim::util;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    parse_run_file(text, "fuzz.txt");
  } catch (const hcasim::InputError& e) {
    hcasim::fuzz::expect_one_line(e);
  }
  try {
    const auto words = split_command_line(text);
    try {
      hcasim::frontends::parse_netperf_args(words);
    } catch (const hcasim::InputError& e) {
      hcasim::fuzz::expect_one_line(e);
    }
    try {
      hcasim::frontends::parse_perftest_args(hcasim::frontends::PerftestTest::WriteLat, words);
    } catch (const hcasim::InputError& e) {
      hcasim::fuzz::expect_one_line(e);
    }
  } catch (const hcasim::InputError& e) {
    hcasim::fuzz::expect_one_line(e);
  }
  return 0;
}
