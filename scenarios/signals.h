#pragma once
/// \file SIGINT and SIGTERM in the commands that simulate in this process (`hcasim netperf`,
/// `ib_write_lat`, `ib_write_bw`, `ib_send_bw`): exit status 128 + N, one line, nothing
/// half-written, as `run`, `validate` and `calibrate` do (scenarios/children.h).
///
/// SimGrid installs its own SIGINT handler when the Engine is built (it prints the simulation's
/// status and exits 1, which hcasim means as "the injected faults made the run fail"). Rather
/// than race it, StopOnSignal blocks both signals in the calling thread before the Engine exists
/// (every thread started later inherits the mask, SimGrid's too) and waits for them in a thread
/// of its own with sigtimedwait, so no handler ever runs.
#include <atomic>
#include <csignal>
#include <thread>

namespace hcasim::scenarios {

/// Blocks SIGINT and SIGTERM and waits for them in a thread of its own. On one it waits for an
/// OutputSection in progress to end, prints "hcasim: error: interrupted by signal N (SIGINT);
/// nothing written" (or "...; after the output was written" once an OutputSection ended) on
/// stderr and exits 128 + N at once (_exit: no destructor of the interrupted simulation runs).
/// A signal the process was started ignoring (SIG_IGN: a shell's background job, nohup) stays
/// ignored. Construct one at the start of the command, before anything simulates; its
/// destructor stops the waiting thread and restores the signal mask.
class StopOnSignal {
 public:
  StopOnSignal();
  ~StopOnSignal();
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;

 private:
  sigset_t old_mask_{};
  sigset_t ignored_{};  ///< the signals that were SIG_IGN when it was built: they stay ignored
  std::atomic<bool> stop_{false};
  std::thread waiter_;
};

/// While one lives, a signal waits for it: the outputs it writes (--csv, stdout) are written
/// whole. Hold one around the writing of a command's results.
class OutputSection {
 public:
  OutputSection();
  ~OutputSection();
  OutputSection(const OutputSection&) = delete;
  OutputSection& operator=(const OutputSection&) = delete;
};

}  // namespace hcasim::scenarios
