// Output files of a run (util/output_file.h).
#include "util/output_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <unistd.h>

#include "model/error.h"

namespace hcasim::util {

bool is_stdout_path(const std::string& path) {
  const std::string p = std::filesystem::path(path).lexically_normal().string();
  return p == "/dev/stdout" || p == "/dev/fd/1" || p == "/proc/self/fd/1" || p == "/proc/thread-self/fd/1";
}

void check_given_once(const std::string& what, const std::vector<std::string>& paths) {
  if (paths.size() > 1)
    throw InputError(fmt::format("{}: given twice ({}, then {}): one run writes one {}", what, paths[0], paths[1], what));
}

void check_single_value(const std::string& what, const std::vector<std::string>& values) {
  if (values.size() > 1) throw InputError(fmt::format("{}: given twice ({}, then {}); give it once", what, values[0], values[1]));
}

bool same_path(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  return fs::weakly_canonical(fs::absolute(a)) == fs::weakly_canonical(fs::absolute(b));
}

void check_not_an_input(const std::string& path, const std::vector<std::string>& inputs, const std::string& what) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (is_stdout_path(path) || !fs::exists(path, ec)) return;
  for (const auto& input : inputs)
    if (fs::equivalent(path, input, ec))
      throw InputError(fmt::format("{} {}: it is an input of this run ({}), not overwritten", what, path, input));
}

void check_output_path(const std::string& path, const std::string& what) {
  namespace fs = std::filesystem;
  auto fail = [&](const char* reason) {
    throw InputError(fmt::format("{} {}: cannot write ({})", what, path, reason));
  };
  std::error_code ec;
  if (path.empty()) fail("empty path");
  if (is_stdout_path(path)) return;
  if (fs::is_directory(path, ec)) fail("it is a directory");
  // The file is written beside the target and renamed over it: a device, FIFO or symlink
  // there would be replaced, so only a regular file (or nothing) is accepted.
  const fs::file_status st = fs::symlink_status(path, ec);
  if (!ec && fs::exists(st) && !fs::is_regular_file(st)) fail("it exists and is not a regular file");
  const fs::path parent = fs::path(path).parent_path();
  const fs::path dir = parent.empty() ? fs::path(".") : parent;
  if (!fs::is_directory(dir, ec)) fail("no such directory");
  if (::access(dir.c_str(), W_OK) != 0) fail(std::strerror(errno));
}

void write_file_atomically(const std::string& path, const std::string& content,
                           const std::string& what) {
  if (is_stdout_path(path)) {
    std::cout << content << std::flush;
    if (!std::cout) throw InputError(fmt::format("{} {}: cannot write (stdout is closed or full)", what, path));
    return;
  }
  const std::string tmp = fmt::format("{}.tmp.{}", path, static_cast<long>(::getpid()));
  auto failure = [&](int err) {
    std::remove(tmp.c_str());
    return InputError(fmt::format("{} {}: cannot write ({})", what, path, std::strerror(err)));
  };
  std::FILE* file = std::fopen(tmp.c_str(), "wb");
  if (!file) throw failure(errno);
  const bool wrote = std::fwrite(content.data(), 1, content.size(), file) == content.size();
  int err = errno;
  const bool flushed = std::fflush(file) == 0;
  if (wrote && !flushed) err = errno;
  const bool closed = std::fclose(file) == 0;
  if (wrote && flushed && !closed) err = errno;
  if (!wrote || !flushed || !closed) throw failure(err ? err : EIO);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw failure(errno);
}

}  // namespace hcasim::util
