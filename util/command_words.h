#pragma once
/// \file Words of a pasted command line: a shell's word splitting, and the words that come
/// before the tool itself: a path on the program name, and util-linux taskset's command form,
/// which hcasim reads and drops (it does not pin processes).
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "model/error.h"

namespace hcasim::util {

/// Splits a command line as a POSIX shell splits words: blanks separate, single quotes keep
/// everything literally, double quotes keep all but \" \\ \$ \` escapes, a backslash outside
/// quotes escapes the next character. No expansion. Throws InputError on an unterminated quote
/// or a trailing backslash.
std::vector<std::string> split_command_line(std::string_view text);

/// The last path component of `word` ("/usr/bin/taskset" -> "taskset").
std::string_view base_name(std::string_view word);

/// When `words` start with `taskset [-a|--all-tasks] [-c|--cpu-list]` (taskset may be a path),
/// the index of the word after those options: the CPU mask or list, which the command follows.
/// 0 when the first word is not taskset. Throws InputError "taskset -p pins a running process,
/// not a command" for the pid form, "taskset: unsupported option 'X'" for any other option.
/// Whether the CPU list and a command are there is the caller's to check.
size_t taskset_cpus_index(const std::vector<std::string>& words);

/// True when `word` is the long option `name` ("--set"), alone or with its value attached
/// ("--set=k=v").
bool is_long_option(std::string_view word, std::string_view name);

}  // namespace hcasim::util
