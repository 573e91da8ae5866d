#pragma once
/// \file Runtime failures of a simulated run the user's injected faults caused.
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "model/error.h"

namespace hcasim::scenarios {

/// A run that failed because of the faults injected on the wire (fault.*, qp.*): the transport
/// retries ran out, or the watchdog stopped a stream that could no longer finish. A runtime
/// failure, as a real netperf or perftest run that fails: "hcasim: error: ..." and exit status
/// 1 (docs/cli.md "Errors and exit status"). Without faults the same failure is the simulator's own (exit 3).
struct RunFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Calls `simulate`; when `faults` is true, a failure of the simulation (not an InputError)
/// is rethrown as RunFailure "WHAT", with " (with faults on the wire: fault.*)" unless WHAT
/// already speaks of them.
template <class F>
auto run_under_faults(bool faults, F&& simulate) -> decltype(simulate()) {
  try {
    return simulate();
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    if (!faults) throw;
    const std::string what = e.what();
    throw RunFailure(what.find("faults on the wire") != std::string::npos
                         ? what
                         : fmt::format("{} (with faults on the wire: fault.*)", what));
  }
}

}  // namespace hcasim::scenarios
