#pragma once
/// \file SIGINT and SIGTERM in the SDP programs (hcasim-sdp-server, hcasim-sdp-client): one line
/// on stderr and exit status 128 + N, as every hcasim command (scenarios/signals.h); the
/// programs write no file, so nothing is left half-written.

namespace hcasim::rt {

/// Installs handlers for SIGINT and SIGTERM that write "PROGRAM: interrupted by signal N
/// (SIGINT)" (or SIGTERM) on stderr and _exit(128 + N) at once: async-signal-safe (write(2) of a
/// line built here, _exit), no destructor runs. `program` must outlive the process (a literal).
/// A signal the process was started ignoring (SIG_IGN: nohup, a shell's background job) stays
/// ignored.
void exit_on_interrupt(const char* program);

}  // namespace hcasim::rt
