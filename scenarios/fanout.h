#pragma once
/// \file Points past one machine: instead of running a sweep's child simulations itself
/// (children.h run_children), `--list-commands DIR` prints each as a standalone shell command
/// that writes its CSV into DIR, for GNU parallel, a Slurm job array or any batch system to run
/// anywhere DIR is shared; `--collect DIR` then reads those CSVs in place of running the
/// children, and the report, CSV and plot are the ones the sweep would have made itself, byte
/// for byte (`hcasim run`, `hcasim sweep`).
///
/// The listing also writes DIR/commands.txt (the same lines), which --collect compares with its
/// own listing: results collected for another scenario, sweep or option are refused.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "scenarios/children.h"

namespace hcasim::scenarios {

/// How a sweep's runs are executed.
struct Fanout {
  enum class Mode { Local, List, Collect };
  Mode mode = Mode::Local;
  std::string dir;  ///< List and Collect: the directory of the runs' CSVs
};

/// Sets `fanout` from --list-commands DIR or --collect DIR (at most one of them, each once):
/// InputError "--list-commands and --collect: give one of them", "--collect: empty path".
void set_fanout(Fanout& fanout, const std::vector<std::string>& list_dirs, const std::vector<std::string>& collect_dirs);

/// `word` quoted for a POSIX shell when it needs it ('...', a quote as '\'').
std::string shell_quote(const std::string& word);

/// The standalone command of run `index` of `runs`: this program's path (/proc/self/exe
/// resolved), run.argv[1..] and `--csv DIR/run-N.csv` (N = index + 1), each word shell-quoted.
std::string standalone_command(const ChildRun& run, size_t index, const std::string& dir);

/// Runs `runs` as `fanout` says. Local: run_children(runs, parallel). List: creates DIR when
/// missing, writes DIR/commands.txt, prints one standalone command per run on stdout and returns
/// nullopt (the caller prints nothing else). Collect: checks DIR/commands.txt against this
/// listing and returns each run's DIR/run-N.csv as its result. Throws InputError "--collect
/// DIR: ..." when the listing differs or a CSV is missing ("run N (LABEL): no DIR/run-N.csv:
/// was its command run?"), "--list-commands DIR: cannot write (...)", and what run_children
/// throws.
std::optional<std::vector<ChildResult>> execute_runs(const std::vector<ChildRun>& runs, size_t parallel,
                                                     const Fanout& fanout);

}  // namespace hcasim::scenarios
