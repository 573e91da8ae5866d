#pragma once
/// \file Tests that run build/hcasim as a user does (cli_e2e_test, sim_fault_test): a scratch
/// directory per test, and run(ARGS), which starts `hcasim ARGS` through the shell with its
/// stdout and stderr in files there. HCASIM_BINARY is the binary's path (CMakeLists.txt).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>

#include "tests/proc.h"

namespace hcasim::test {

/// What one command did: its exit status (-1 when a signal ended it), stdout and stderr.
struct Outcome {
  int status = -1;
  std::string out, err;
};

/// A fixture with a fresh scratch directory `dir_` (named after `tag`, the process and the
/// test, removed afterwards) and run().
class HcasimCommandTest : public ::testing::Test {
 protected:
  explicit HcasimCommandTest(std::string tag) : tag_(std::move(tag)) {}
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("hcasim-" + tag_ + "-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  /// Runs `hcasim ARGS` (ARGS as a shell would split them) and waits for it.
  Outcome run(const std::string& args) {
    const std::string cmd = std::string(HCASIM_BINARY) + " " + args + " > " + (dir_ / "out").string() + " 2> " +
                            (dir_ / "err").string();
    const int rc = std::system(cmd.c_str());
    Outcome r;
    r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    r.out = slurp(dir_ / "out");
    r.err = slurp(dir_ / "err");
    return r;
  }
  std::filesystem::path dir_;

 private:
  std::string tag_;
};

}  // namespace hcasim::test
