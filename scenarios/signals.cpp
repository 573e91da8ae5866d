// SIGINT and SIGTERM for the in-process simulations (signals.h).
#include "scenarios/signals.h"

#include <pthread.h>
#include <unistd.h>

#include <ctime>
#include <mutex>
#include <string>

#include <fmt/format.h>

namespace hcasim::scenarios {

namespace {

/// Held while outputs are written (OutputSection); the waiting thread takes it before it exits.
std::mutex g_output;
/// An OutputSection ended: the outputs were written.
std::atomic<bool> g_output_written{false};

/// The line, then _exit(128 + sig).
[[noreturn]] void exit_on(int sig) {
  const std::string line =
      fmt::format("hcasim: error: interrupted by signal {} ({}); {}\n", sig, sig == SIGINT ? "SIGINT" : "SIGTERM",
                  g_output_written.load() ? "after the output was written" : "nothing written");
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, line.data(), line.size());
  ::_exit(128 + sig);
}

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

}  // namespace

StopOnSignal::StopOnSignal() {
  const sigset_t set = stop_signals();
  // A signal this process was started ignoring (SIGINT in a shell's background job, nohup)
  // stays ignored: SimGrid's handler would replace SIG_IGN, the waiting thread drops it.
  sigset_t& ignored = ignored_;
  sigemptyset(&ignored);
  for (const int sig : {SIGINT, SIGTERM}) {
    struct sigaction now {};
    if (::sigaction(sig, nullptr, &now) == 0 && now.sa_handler == SIG_IGN) sigaddset(&ignored, sig);
  }
  pthread_sigmask(SIG_BLOCK, &set, &old_mask_);
  waiter_ = std::thread([this, set, ignored] {
    while (!stop_.load()) {
      const timespec tick{0, 50'000'000};  // 50 ms: how soon the destructor is answered
      const int sig = sigtimedwait(&set, nullptr, &tick);
      if (sig < 0 || sigismember(&ignored, sig)) continue;  // EAGAIN (the tick), EINTR, or ignored
      const std::lock_guard<std::mutex> lock(g_output);
      exit_on(sig);
    }
  });
}

StopOnSignal::~StopOnSignal() {
  stop_.store(true);
  waiter_.join();
  // A signal that arrived since the thread's last wait is still pending: take it here, so that
  // restoring the mask does not hand it to SimGrid's handler (the Engine outlives this object
  // only in a program that simulates again; the commands do not).
  const sigset_t set = stop_signals();
  const timespec none{0, 0};
  if (const int sig = sigtimedwait(&set, nullptr, &none); sig > 0 && !sigismember(&ignored_, sig)) exit_on(sig);
  pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

OutputSection::OutputSection() { g_output.lock(); }

OutputSection::~OutputSection() {
  g_output_written.store(true);
  g_output.unlock();
}

}  // namespace hcasim::scenarios
