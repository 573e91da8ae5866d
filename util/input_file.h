#pragma once
/// \file Input files (platforms, scenarios, run files, reference CSVs, netperf's output
/// selection files): only regular files, read whole and bounded, so that a FIFO, a directory
/// or /dev/zero is a one-line error rather than a hang, a crash or a run out of memory.
#include <cstddef>
#include <string>

namespace hcasim::util {

/// The most read_text reads of one file: 64 MiB. The largest input shipped (a scenario, a
/// reference CSV, a run file of pasted output) is a few tens of KB.
inline constexpr size_t kMaxInputBytes = size_t{64} << 20;

/// What is at `path` when it is not a regular file, following symbolic links: "a directory",
/// "a FIFO", "a character device", "a block device", "a socket" or "not a regular file"; ""
/// for a regular file or for nothing at all.
std::string not_a_file(const std::string& path);

/// Throws InputError "WHAT: KIND, not a regular file (hcasim reads its inputs only from
/// regular files)" when something other than a regular file is at `path` (not_a_file).
void refuse_non_file(const std::string& path, const std::string& what);

/// The whole of file `path`, bytes as they are. Throws InputError (`what` is usually the path
/// itself) "WHAT: cannot read (reason)" when it cannot be opened, "WHAT: a FIFO, not a regular
/// file (...)" (a directory, a character device ...) for anything but a regular file (or a
/// symlink to one), and "WHAT: larger than 64 MiB, ..." past kMaxInputBytes.
std::string read_text(const std::string& path, const std::string& what);

}  // namespace hcasim::util
