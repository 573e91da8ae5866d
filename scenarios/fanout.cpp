// Standalone commands and collected results (fanout.h).
#include "scenarios/fanout.h"

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <iostream>

#include <unistd.h>

#include <fmt/format.h>

#include "model/error.h"
#include "scenarios/datadir.h"
#include "util/input_file.h"
#include "util/output_file.h"

namespace hcasim::scenarios {

namespace {

namespace fs = std::filesystem;

/// This program's path, as /proc/self/exe names it.
std::string self_path() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw InputError(fmt::format("cannot read /proc/self/exe ({})", std::strerror(errno)));
  return std::string(buf, static_cast<size_t>(n));
}

std::string csv_of(const std::string& dir, size_t index) {
  return (fs::path(dir) / fmt::format("run-{:04}.csv", index + 1)).string();
}

std::string listing(const std::vector<ChildRun>& runs, const std::string& dir) {
  std::string out;
  for (size_t i = 0; i < runs.size(); ++i) out += standalone_command(runs[i], i, dir) + "\n";
  return out;
}

}  // namespace

void set_fanout(Fanout& fanout, const std::vector<std::string>& list_dirs, const std::vector<std::string>& collect_dirs) {
  util::check_single_value("--list-commands", list_dirs);
  util::check_single_value("--collect", collect_dirs);
  if (!list_dirs.empty() && !collect_dirs.empty()) throw InputError("--list-commands and --collect: give one of them");
  for (const auto* dirs : {&list_dirs, &collect_dirs}) {
    if (dirs->empty()) continue;
    const char* name = dirs == &list_dirs ? "--list-commands" : "--collect";
    if (dirs->front().empty()) throw InputError(fmt::format("{}: empty path", name));
    fanout.mode = dirs == &list_dirs ? Fanout::Mode::List : Fanout::Mode::Collect;
    // Absolute, so that the commands run from any directory (a batch job's own).
    fanout.dir = fs::absolute(dirs->front()).lexically_normal().string();
  }
}

std::string shell_quote(const std::string& word) {
  const bool plain = !word.empty() && word.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                            "0123456789_./=:,+-@%") == std::string::npos;
  if (plain) return word;
  std::string out = "'";
  for (char c : word) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string standalone_command(const ChildRun& run, size_t index, const std::string& dir) {
  std::string line = shell_quote(self_path());
  for (size_t w = 1; w < run.argv.size(); ++w) {
    line += ' ';  // not " " + std::string&&: GCC 12's false -Wrestrict (GCC bug 105329)
    line += shell_quote(run.argv[w]);
  }
  return line + " --csv " + shell_quote(csv_of(dir, index));
}

std::optional<std::vector<ChildResult>> execute_runs(const std::vector<ChildRun>& runs, size_t parallel,
                                                     const Fanout& fanout) {
  if (fanout.mode == Fanout::Mode::Local) return run_children(runs, parallel);
  const std::string commands = listing(runs, fanout.dir);
  const std::string commands_file = (fs::path(fanout.dir) / "commands.txt").string();
  if (fanout.mode == Fanout::Mode::List) {
    std::error_code ec;
    fs::create_directories(fanout.dir, ec);
    if (ec) throw InputError(fmt::format("--list-commands {}: cannot write ({})", fanout.dir, ec.message()));
    util::write_file_atomically(commands_file, commands, "--list-commands");
    std::cout << commands << std::flush;
    return std::nullopt;
  }
  std::string listed;
  try {
    listed = util::read_text(commands_file, commands_file);
  } catch (const InputError& e) {
    throw InputError(fmt::format("--collect {}: {} (made by --list-commands {})", fanout.dir, e.what(), fanout.dir));
  }
  if (listed != commands)
    throw InputError(fmt::format("--collect {}: its commands.txt is not this listing (listed for another scenario, "
                                 "sweep or option, or another hcasim?)",
                                 fanout.dir));
  std::vector<ChildResult> results(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    const std::string path = csv_of(fanout.dir, i);
    std::error_code ec;
    if (!fs::is_regular_file(path, ec))
      throw InputError(fmt::format("--collect {}: run {} ({}): no {}: was its command run?", fanout.dir, i + 1,
                                   runs[i].label, path));
    results[i].csv = util::read_text(path, path);
    results[i].source = path;
  }
  return results;
}

}  // namespace hcasim::scenarios
