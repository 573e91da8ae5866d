// Child simulations (children.h): forks running the program's entry point (or posix_spawn of
// /proc/self/exe), N at a time, with a progress bar and clean stops on SIGINT/SIGTERM.
#include "scenarios/children.h"

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string_view>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "frontends/netperf_cli.h"
#include "model/error.h"
#include "util/number.h"

extern char** environ;

namespace hcasim::scenarios {

namespace {

namespace fs = std::filesystem;

/// The signal (SIGINT, SIGTERM) that asked the sweep to stop, or 0.
volatile std::sig_atomic_t g_stop_signal = 0;
extern "C" void on_stop_signal(int sig) { g_stop_signal = sig; }

/// set_child_entry's entry point, or null: children are executed.
ProgramEntry g_child_entry = nullptr;
/// The dispositions of SIGINT and SIGTERM before StopSignals replaced them: what a forked child
/// gets back (an executed one gets SIG_DFL for a handled signal, and keeps SIG_IGN).
struct sigaction g_child_int {}, g_child_term {};

/// Installs on_stop_signal for SIGINT and SIGTERM without SA_RESTART (so waitpid returns
/// EINTR), restoring the previous handlers on destruction: an interrupted sweep stops its
/// children and removes its temporary directory instead of dying in the middle.
class StopSignals {
 public:
  StopSignals() {
    g_stop_signal = 0;
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, &old_int_);
    ::sigaction(SIGTERM, &sa, &old_term_);
    g_child_int = old_int_;
    g_child_term = old_term_;
  }
  ~StopSignals() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  struct sigaction old_int_ {}, old_term_ {};
};

/// A private temporary directory, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = fmt::format("{}/hcasim-run-XXXXXX", base && *base ? base : "/tmp");
    if (!::mkdtemp(pattern.data()))
      throw InputError(fmt::format("cannot create a temporary directory {} ({})", pattern,
                                   std::strerror(errno)));
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

/// `words` as the NULL-terminated char* array posix_spawn takes (pointing into `words`).
std::vector<char*> c_argv(const std::vector<std::string>& words) {
  std::vector<char*> argv;
  for (const auto& w : words) argv.push_back(const_cast<char*>(w.c_str()));
  argv.push_back(nullptr);
  return argv;
}

/// In a forked child: `path` opened as descriptor `fd`, or the child exits with status 127
/// (as a shell's command that cannot start).
void reopen_or_exit(int fd, const char* path, int flags) {
  const int opened = ::open(path, flags | O_CLOEXEC, 0600);
  if (opened < 0 || ::dup2(opened, fd) < 0) ::_exit(127);
  ::close(opened);
}

/// A child forked from this process running g_child_entry on `argv_words`. Output buffered
/// here is flushed first, so that the child does not write it again.
pid_t fork_entry(const std::vector<std::string>& argv_words, const std::string& err_path) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(fmt::format("cannot fork a child: {}", std::strerror(errno)));
  if (pid > 0) return pid;
  ::sigaction(SIGINT, &g_child_int, nullptr);
  ::sigaction(SIGTERM, &g_child_term, nullptr);
  reopen_or_exit(STDIN_FILENO, "/dev/null", O_RDONLY);
  reopen_or_exit(STDOUT_FILENO, "/dev/null", O_WRONLY);
  reopen_or_exit(STDERR_FILENO, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC);
  std::vector<std::string> words = argv_words;
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  int status = 3;
  try {
    status = g_child_entry(static_cast<int>(words.size()), argv.data());
  } catch (...) {
    // The entry point reports its own errors; anything past it is an internal error (status 3).
  }
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  ::_exit(status);  // no destructor or atexit handler of the parent's state runs twice
}

pid_t spawn(const std::vector<std::string>& argv_words, const std::string& err_path) {
  if (g_child_entry != nullptr) return fork_entry(argv_words, err_path);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<char*> argv = c_argv(argv_words);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    throw std::runtime_error(fmt::format("cannot start /proc/self/exe: {}", std::strerror(rc)));
  return pid;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

/// "\r[#####.....]  12/28  LABEL" on one terminal line (erased to its end).
void draw_progress(size_t done, size_t total, const std::string& label) {
  constexpr size_t kWidth = 24;
  const size_t filled = total ? done * kWidth / total : kWidth;
  std::cerr << fmt::format("\r[{}{}] {:>4}/{} {}\033[K", std::string(filled, '#'),
                           std::string(kWidth - filled, '.'), done, total, label)
            << std::flush;
}

/// The error a child's stderr line reports, as first_error_line quotes it: the text after
/// "hcasim: error: ", or "internal error: ..." of "hcasim: internal error: ..."; else empty.
std::string_view error_text(std::string_view line) {
  if (line.rfind("hcasim: error: ", 0) == 0) return line.substr(15);
  if (line.rfind("hcasim: internal error: ", 0) == 0) return line.substr(8);
  return {};
}

}  // namespace

void set_child_entry(ProgramEntry entry) { g_child_entry = entry; }

Interrupted::Interrupted(int signal_, size_t done_, size_t total_)
    : std::runtime_error(fmt::format("interrupted by signal {} ({} of {} runs done)", signal_, done_, total_)),
      signal(signal_),
      done(done_),
      total(total_) {}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return fmt::format("exit status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("killed by signal {}", WTERMSIG(status));
  return "stopped";
}

int print_child_failure(const ChildFailure& failure) {
  // The child's stderr, less its notes and the error line the parent's message already quotes:
  // a child that failed on one bad value gives one line, not the same error twice.
  const std::string what = failure.what();
  std::istringstream in(failure.errors);
  std::string line;
  while (std::getline(in, line)) {
    const std::string_view quoted = error_text(line);
    if (!quoted.empty() && what.find(quoted) != std::string::npos) continue;
    if (line.rfind("hcasim: note: ", 0) == 0) continue;
    std::cerr << line << "\n";
  }
  std::cerr << "hcasim: error: " << what << "\n";
  return 2;
}

int print_interrupted(const Interrupted& interrupted) {
  std::cerr << "hcasim: error: " << interrupted.what() << "; nothing written\n";
  return 128 + interrupted.signal;
}

ProgramResult run_program(const std::vector<std::string>& argv_words, const std::string& cwd) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0)
    throw InputError(fmt::format("cannot run {} ({})", argv_words.at(0), std::strerror(errno)));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], STDERR_FILENO);
  posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
  std::vector<char*> argv = c_argv(argv_words);

  const StopSignals signals;
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  if (rc != 0) {
    ::close(pipe_fds[0]);
    throw InputError(fmt::format("cannot run {} ({})", argv_words[0], std::strerror(rc)));
  }
  ProgramResult result;
  char buffer[4096];
  while (!g_stop_signal) {  // its stderr until it closes it
    const ssize_t n = ::read(pipe_fds[0], buffer, sizeof buffer);
    if (n > 0) result.errors.append(buffer, static_cast<size_t>(n));
    if (n == 0 || (n < 0 && errno != EINTR)) break;
  }
  ::close(pipe_fds[0]);
  if (g_stop_signal) ::kill(pid, SIGTERM);
  while (::waitpid(pid, &result.status, 0) < 0 && errno == EINTR) {
  }
  if (g_stop_signal) throw Interrupted(static_cast<int>(g_stop_signal), 0, 1);
  return result;
}

int online_cpus() {
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

int parse_jobs(const std::string& text) {
  const auto n = util::parse_number(text);
  if (!n || *n != std::floor(*n)) throw InputError(fmt::format("-j: '{}' is not a number", text));
  if (*n < 1 || *n > 4096) throw InputError(fmt::format("-j: '{}' must be 1..4096", text));
  return static_cast<int>(*n);
}

std::string first_error_line(const std::string& errors) {
  std::istringstream in(errors);
  std::string line, first;
  while (std::getline(in, line)) {
    if (const std::string_view text = error_text(line); !text.empty()) return std::string(text);
    if (first.empty() && !line.empty()) first = line;
  }
  return first.empty() ? "(no message)" : first;
}

std::vector<ChildResult> run_children(const std::vector<ChildRun>& runs, size_t parallel) {
  if (parallel < 1) parallel = 1;
  TempDir tmp;
  auto csv_path = [&](size_t i) { return fmt::format("{}/run-{}.csv", tmp.path(), i + 1); };
  auto err_path = [&](size_t i) { return fmt::format("{}/run-{}.err", tmp.path(), i + 1); };

  std::vector<ChildResult> results(runs.size());
  const bool progress = ::isatty(STDERR_FILENO) != 0;
  std::map<pid_t, size_t> running;
  size_t next = 0, done = 0;
  std::string last_label;

  auto stop_all = [&]() {
    for (const auto& [pid, index] : running) ::kill(pid, SIGTERM);
    for (const auto& [pid, index] : running) {
      int status = 0;
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
    running.clear();
    if (progress) std::cerr << "\r\033[K" << std::flush;
  };

  const StopSignals signals;
  try {
    while (!g_stop_signal && (next < runs.size() || !running.empty())) {
      while (next < runs.size() && running.size() < parallel) {
        std::vector<std::string> argv = runs[next].argv;
        argv.insert(argv.end(), {"--csv", csv_path(next)});
        last_label = runs[next].label;
        if (progress) draw_progress(done, runs.size(), last_label);
        running[spawn(argv, err_path(next))] = next;
        ++next;
      }
      int status = 0;
      const pid_t pid = ::waitpid(-1, &status, 0);
      if (g_stop_signal) break;  // Ctrl-C reaches the children too: their deaths are not failures
      if (pid < 0) {
        if (errno == EINTR) continue;
        throw std::runtime_error(fmt::format("waitpid: {}", std::strerror(errno)));
      }
      const auto it = running.find(pid);
      if (it == running.end()) continue;  // not one of ours
      const size_t i = it->second;
      running.erase(it);
      ++done;
      if (progress) draw_progress(done, runs.size(), last_label);
      results[i].errors = slurp(err_path(i));
      const std::string who = runs[i].where.empty() ? runs[i].label : runs[i].where + ": " + runs[i].label;
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        throw ChildFailure(i, fmt::format("{} failed ({}): {}", who, describe_status(status),
                                          first_error_line(results[i].errors)),
                           results[i].errors);
      if (!fs::exists(csv_path(i)))
        throw ChildFailure(i, fmt::format("{} failed: it wrote no CSV", who), results[i].errors);
      results[i].csv = slurp(csv_path(i));
    }
  } catch (...) {
    stop_all();
    throw;
  }
  stop_all();
  if (g_stop_signal) throw Interrupted(static_cast<int>(g_stop_signal), done, runs.size());
  return results;
}

}  // namespace hcasim::scenarios
