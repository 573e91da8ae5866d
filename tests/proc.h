#pragma once
/// \file A child process for the two-process tests of the SDP programs (emu_sdp_e2e_test,
/// emu_preload_test): stdout and stderr in files of a scratch directory, killed and reaped
/// when the object goes.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace hcasim::test {

using Clock = std::chrono::steady_clock;

/// The whole file, "" when it cannot be read.
inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

/// Lines (newlines) in `s`.
inline int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

class Proc {
 public:
  /// Starts args[0] with args. The environment is this process's less HCASIM_DEVICE and
  /// LD_PRELOAD, plus LD_PRELOAD=`preload` when it is not empty.
  Proc(const std::string& name, std::vector<std::string> args, const std::string& preload = "") {
    dir_ = std::filesystem::temp_directory_path() / ("hcasim-proc-" + std::to_string(::getpid()) + "-" + name);
    std::filesystem::create_directories(dir_);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, (dir_ / "out").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, (dir_ / "err").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_s;
    for (char** e = environ; *e; ++e) {
      const std::string v(*e);
      if (v.rfind("HCASIM_DEVICE=", 0) != 0 && v.rfind("LD_PRELOAD=", 0) != 0) env_s.push_back(v);
    }
    if (!preload.empty()) env_s.push_back("LD_PRELOAD=" + preload);
    std::vector<char*> env;
    for (auto& e : env_s) env.push_back(e.data());
    env.push_back(nullptr);
    if (posix_spawn(&pid_, argv[0], &fa, nullptr, argv.data(), env.data()) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
  }
  ~Proc() {
    if (pid_ > 0 && !done_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    std::filesystem::remove_all(dir_);
  }
  Proc(const Proc&) = delete;
  Proc& operator=(const Proc&) = delete;

  /// Waits at most `limit`; returns the exit status (128 + signal when killed), or -1 when it
  /// did not end (the destructor kills it).
  int wait(std::chrono::milliseconds limit) {
    const auto until = Clock::now() + limit;
    while (Clock::now() < until) {
      int st = 0;
      if (::waitpid(pid_, &st, WNOHANG) == pid_) {
        done_ = true;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }
  void kill9() { ::kill(pid_, SIGKILL); }
  /// Sends `sig` (SIGINT, SIGTERM ...) to the process.
  void signal(int sig) { ::kill(pid_, sig); }
  std::string out() const { return slurp(dir_ / "out"); }
  std::string err() const { return slurp(dir_ / "err"); }
  /// A server's port, from its "listening on port N" line on stderr (waits at most 5 s; -1).
  int port() const {
    static const std::regex re("listening on port ([0-9]+)");
    for (auto until = Clock::now() + std::chrono::seconds(5); Clock::now() < until;) {
      std::smatch m;
      const std::string e = err();
      if (std::regex_search(e, m, re)) return std::stoi(m[1]);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }

 private:
  std::filesystem::path dir_;
  pid_t pid_ = -1;
  bool done_ = false;
};

/// Checks a finished hcasim-sdp-client run and its server: both CRC-32 lines equal for `bytes`
/// bytes, the server logged the same CRC, and the client's bzcopy count (every data send, or
/// none). `device` is the name the client printed ("emu", "hcasim_emu0").
inline void expect_verified_stream(const Proc& cli, const Proc& srv, const std::string& device, uint64_t bytes,
                                   bool expect_bzcopy) {
  const std::string err = cli.err(), n = std::to_string(bytes);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(err, m,
                                std::regex("device " + device + ": sent " + n + " bytes crc32 ([0-9a-f]{8}), the server "
                                           "received " + n + " bytes crc32 ([0-9a-f]{8}): match")))
      << err;
  EXPECT_EQ(m[1], m[2]);
  EXPECT_NE(srv.err().find("received " + n + " bytes"), std::string::npos) << srv.err();
  EXPECT_NE(srv.err().find("crc32 " + m[1].str()), std::string::npos) << srv.err();
  ASSERT_TRUE(std::regex_search(err, m, std::regex("([0-9]+) send calls, ([0-9]+) of them bzcopy"))) << err;
  if (expect_bzcopy)
    EXPECT_EQ(m[1], m[2]) << "every send at or above sdp_zcopy_thresh is bzcopy";
  else
    EXPECT_EQ(m[2], "0");
}

}  // namespace hcasim::test
