#pragma once
/// \file A private directory for one test, named after it and the process, removed at the end
/// (also when an assertion ends the test early).
#include <unistd.h>

#include <filesystem>
#include <string>

namespace hcasim::test {

struct Scratch {
  std::filesystem::path dir;
  explicit Scratch(const std::string& name)
      : dir(std::filesystem::temp_directory_path() / ("hcasim-" + name + "-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(dir);
  }
  ~Scratch() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  /// `file` inside the directory.
  std::string path(const std::string& file) const { return (dir / file).string(); }
};

}  // namespace hcasim::test
