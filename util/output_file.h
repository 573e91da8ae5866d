#pragma once
/// \file Output files of a run (--csv, --report, calibrate's and validate's outputs): checked
/// before a long run, written whole or not at all, /dev/stdout accepted; and the checks that an
/// output or a single-valued option is given once.
#include <string>
#include <vector>

namespace hcasim::util {

/// Throws InputError "WHAT: given twice (A, then B): one run writes one WHAT" when an output
/// option was given more than once (`paths` in command-line order); the last one used to win
/// silently, and the other was never written.
void check_given_once(const std::string& what, const std::vector<std::string>& paths);

/// True for "/dev/stdout", "/dev/fd/1", "/proc/self/fd/1" or "/proc/thread-self/fd/1" (after
/// lexical normalisation: "//dev/./stdout" too): an output (--csv) written to the program's
/// stdout, whole, after what the program prints there, rather than into a file (the only device
/// an output may name).
bool is_stdout_path(const std::string& path);

/// Checks before a long run that `path` can be written later: its directory exists and is
/// writable, and `path` is not a directory, nor anything but a regular file (/dev/stdout is
/// accepted: is_stdout_path). Throws InputError "WHAT PATH: cannot write (reason)" otherwise.
void check_output_path(const std::string& path, const std::string& what);

/// Throws InputError "WHAT: given twice (A, then B); give it once" when `values` (every value a
/// single-valued option was given, in order) has more than one: the last no longer wins
/// silently.
void check_single_value(const std::string& what, const std::vector<std::string>& values);

/// Whether paths `a` and `b` name one file, existing or not: "a.toml", "./a.toml" and its
/// absolute path are one (both made absolute, then weakly_canonical: symbolic links of the
/// existing part resolved, the rest normalised). For two outputs of one run, before either is
/// written.
bool same_path(const std::string& a, const std::string& b);

/// Throws InputError "WHAT PATH: it is an input of this run (INPUT), not overwritten" when
/// `path` names the same existing file as one of `inputs` (a platform, scenario, reference or
/// run file): `--csv` over the scenario it runs replaced the scenario.
void check_not_an_input(const std::string& path, const std::vector<std::string>& inputs, const std::string& what);

/// Writes `content` to `path` whole or not at all: into PATH.tmp.PID in the same directory,
/// then rename(2); /dev/stdout (is_stdout_path) gets it on std::cout, flushed. On any error
/// removes the temporary file and throws InputError "WHAT PATH: cannot write (reason)" (`what`
/// names the option, e.g. "--csv").
void write_file_atomically(const std::string& path, const std::string& content,
                           const std::string& what);

}  // namespace hcasim::util
