#pragma once
/// \file Child simulations: SimGrid allows one engine per process, so every simulated run of a
/// sweep (`hcasim run`, `validate`, `calibrate`) is a child process of `/proc/self/exe`, N at a
/// time, each writing its figures to a CSV the parent reads back. The parent's output never
/// depends on N: results come back in the order the runs were given.
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace hcasim::scenarios {

/// One child: `/proc/self/exe ARGV[1..] --csv TMP` (argv[0] is only its name).
struct ChildRun {
  std::vector<std::string> argv;  ///< e.g. {"hcasim", "netperf", "-l", "10", ...}
  std::string label;              ///< what the progress bar and error messages call it
  std::string where{};            ///< "FILE:LINE" that gave the run, before its failure message; or empty
};

/// What a child that exited with status 0 left.
struct ChildResult {
  std::string csv;     ///< the text of its --csv file
  std::string errors;  ///< its stderr (notes)
  std::string source;  ///< the file `csv` was read from when it outlives the run (--collect), else empty
};

/// A child failed (exit status not 0, killed, or no CSV): the others were stopped.
struct ChildFailure : std::runtime_error {
  ChildFailure(size_t index_, const std::string& message, std::string errors_)
      : std::runtime_error(message), index(index_), errors(std::move(errors_)) {}
  size_t index;        ///< which run
  std::string errors;  ///< its whole stderr
};

/// SIGINT or SIGTERM arrived: the children were stopped and their files removed.
struct Interrupted : std::runtime_error {
  Interrupted(int signal_, size_t done_, size_t total_);
  int signal;
  size_t done, total;  ///< runs finished before the signal, and all runs
};

/// The program's entry point, as main's: `argv` a command line such as {"hcasim", "netperf", ...}
/// (argv[0] only its name); returns the exit status.
using ProgramEntry = int (*)(int argc, char** argv);

/// Makes run_children start each child as a fork of this process that runs `entry` on the
/// child's command line and exits with its status, instead of executing /proc/self/exe anew:
/// the child skips the dynamic loader's relocations and the libraries' start-up, about 0.2 s
/// of wall time per child on this project's 2-core machines (94 M instructions, two thirds
/// of them symbol lookups, against 13 k per simulated SDP message), which a calibration pays
/// for every run of every evaluation. Standard input and output, stderr and the signals are
/// set up as for an executed child. Call it before anything simulates: a fork must not inherit
/// a SimGrid engine (one per process). Without it (the tests) children are executed.
void set_child_entry(ProgramEntry entry);

/// Runs `runs`, at most `parallel` (>= 1) at once, in a private temporary directory removed
/// afterwards. Standard input and output of each child are /dev/null; its stderr is kept.
/// On a terminal (stderr is a tty) a progress bar on stderr shows runs done out of all and the
/// last started, and is erased at the end. Returns the results in the order of `runs`.
/// Throws ChildFailure for the first child that fails (message "[WHERE: ]LABEL failed (exit
/// status N): FIRST ERROR LINE"), Interrupted on SIGINT/SIGTERM (which reach the children too), and
/// InputError when the temporary directory cannot be made.
std::vector<ChildResult> run_children(const std::vector<ChildRun>& runs, size_t parallel);

/// What `hcasim run`, `validate` and `calibrate` do with a ChildFailure: print the child's stderr
/// less its notes and the error line WHAT already quotes (a crash report stays), then
/// "hcasim: error: WHAT", on stderr. Returns 2, their exit status for it.
int print_child_failure(const ChildFailure& failure);

/// What they do with an Interrupted: print "hcasim: error: interrupted by signal N (D of T runs
/// done); nothing written" on stderr. Returns 128 + N, their exit status for it.
int print_interrupted(const Interrupted& interrupted);

/// How a program run by run_program() ended.
struct ProgramResult {
  int status = 0;      ///< its wait status (waitpid)
  std::string errors;  ///< everything it wrote on stderr
};

/// Runs the program `argv` (argv[0] looked up in PATH when it has no '/', as execvp does) in
/// directory `cwd`, standard input and output /dev/null, and waits for it (used for gnuplot).
/// Throws Interrupted(N, 0, 1) on SIGINT/SIGTERM, after stopping it, and InputError "cannot
/// run ARGV0 (reason)" when it cannot be started.
ProgramResult run_program(const std::vector<std::string>& argv, const std::string& cwd);

/// "exit status N", "killed by signal N" or "stopped": a wait status in words.
std::string describe_status(int status);

/// The number of online CPUs (sysconf), at least 1: the default of every -j.
int online_cpus();

/// The value of a sweep's -j: a whole number 1..4096. Throws InputError "-j: 'X' is not a
/// number" or "-j: 'X' must be 1..4096".
int parse_jobs(const std::string& text);

/// The child's first error line: its first "hcasim: error: " or "hcasim: internal error: "
/// line without the "hcasim: " prefix, else its first line, else "(no message)".
std::string first_error_line(const std::string& errors);

}  // namespace hcasim::scenarios
