// libFuzzer target: a platform file (model/platform.h), read and checked the way a run reads
// it (sim::read_host_params: every section, unit and range). Bad input is an InputError with
// one line, never a crash.
#include <cstdlib>
#include <string>

#include "fuzz/one_line.h"
#include "model/error.h"
#include "model/platform.h"
#include "sim/testbed.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const auto p = hcasim::model::Platform::parse(text, "fuzz.toml");
    hcasim::sim::read_host_params(p);
  } catch (const hcasim::InputError& e) {
    hcasim::fuzz::expect_one_line(e);
  }
  return 0;
}
