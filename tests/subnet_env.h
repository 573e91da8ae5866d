#pragma once
/// \file A fresh emulated subnet (emu/subnet.h, $HCASIM_SUBNET) for a test process that opens
/// the verbs shim's device itself: its port is alone on it (LID 1), and no other test process
/// or stock program sees it. Removed at the end.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace hcasim::testing {

/// Install once per test binary: `::testing::AddGlobalTestEnvironment(new SubnetEnv("NAME"))`.
class SubnetEnv : public ::testing::Environment {
 public:
  /// `prefix` names the directory /tmp/PREFIX-XXXXXX.
  explicit SubnetEnv(std::string prefix) : prefix_(std::move(prefix)) {}
  void SetUp() override {
    std::string tmpl = "/tmp/" + prefix_ + "-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    ::setenv("HCASIM_SUBNET", dir_.c_str(), 1);
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

 private:
  std::string prefix_;
  std::string dir_;
};

}  // namespace hcasim::testing
