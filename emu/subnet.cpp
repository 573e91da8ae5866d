#include "emu/subnet.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>

#include <fmt/format.h>

#include "sdp/device.h"

namespace hcasim::emu {

namespace {

std::string lid_name(uint16_t lid) { return fmt::format("lid-{:04x}", lid); }

/// Closes a descriptor at the end of its scope.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

}  // namespace

unsigned long long process_start_time(long pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%ld/stat", pid);
  const Fd f(::open(path, O_RDONLY | O_CLOEXEC));
  if (f.fd < 0) return 0;
  char buf[1024];
  const ssize_t n = ::read(f.fd, buf, sizeof buf - 1);
  if (n <= 0) return 0;
  buf[n] = '\0';
  // The command name (field 2) is in parentheses and may hold spaces: count from its end.
  const char* p = std::strrchr(buf, ')');
  if (p == nullptr) return 0;
  for (int field = 2; field < 22 && p != nullptr; ++field) p = std::strchr(p + 1, ' ');
  return p == nullptr ? 0 : std::strtoull(p + 1, nullptr, 10);
}

namespace {

/// A claim file's line "PID TCP_PORT START_TIME".
struct Claim {
  long pid = 0;
  unsigned port = 0;
  unsigned long long start = 0;
  /// Whether the claiming process still runs (kill(PID, 0), then its start time).
  bool alive() const {
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return false;
    const unsigned long long now = process_start_time(pid);
    return now == 0 || now == start;
  }
};

enum class Entry { Claim, Absent, Garbage };

/// Reads entry `name` of the subnet directory `dir` as a claim: never through a symbolic link,
/// never blocking (a FIFO), only from a regular file. Garbage is anything else that exists: a
/// non-regular file, or a line that is not "PID PORT START".
Entry read_claim(int dir, const std::string& name, Claim& c) {
  const Fd f(::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (f.fd < 0) return errno == ENOENT ? Entry::Absent : Entry::Garbage;
  struct stat st {};
  if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > 64) return Entry::Garbage;
  char buf[65];
  const ssize_t n = ::read(f.fd, buf, sizeof buf - 1);
  if (n <= 0) return Entry::Garbage;
  buf[n] = '\0';
  int used = 0;
  if (std::sscanf(buf, "%ld %u %llu\n%n", &c.pid, &c.port, &c.start, &used) != 3 || used != n || c.pid <= 0 ||
      c.port == 0 || c.port > 65535)
    return Entry::Garbage;
  return Entry::Claim;
}

/// Removes the temporary claim files (".claim-PID-N") of processes that are gone, and this
/// process's own: the caller holds the directory's flock, so none of ours is under way, and one
/// left is a crashed process's whose PID this one now has.
void reclaim_temporaries(int dir) {
  const int dup = ::fcntl(dir, F_DUPFD_CLOEXEC, 0);
  if (dup < 0) return;
  DIR* d = ::fdopendir(dup);
  if (d == nullptr) {
    ::close(dup);
    return;
  }
  while (const dirent* e = ::readdir(d)) {
    long pid = 0;
    if (std::sscanf(e->d_name, ".claim-%ld-", &pid) == 1 && pid > 0 &&
        (pid == ::getpid() || (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)))
      ::unlinkat(dir, e->d_name, 0);
  }
  ::closedir(d);
}

/// Renames the entry `name` of the subnet directory `dir` (at `path`), a directory that is not
/// empty, to "garbage-NAME-PID-N" beside it, so that its LID is claimed again, and says so in
/// one line on stderr: its contents are the user's to judge (removing a tree another process
/// may still change is not safe). Nothing is renamed over an existing entry.
void set_aside(int dir, const std::string& path, const std::string& name) {
  static std::atomic<unsigned> serial{0};
  const std::string aside = fmt::format("garbage-{}-{}-{}", name, ::getpid(), serial++);
  if (::renameat2(dir, name.c_str(), dir, aside.c_str(), RENAME_NOREPLACE) == 0)
    std::fprintf(stderr, "hcasim: emulated subnet %s: %s was a directory, not a claim; moved to %s/%s (remove it)\n",
                 path.c_str(), name.c_str(), path.c_str(), aside.c_str());
  else
    std::fprintf(stderr, "hcasim: emulated subnet %s: %s is a directory, not a claim, and cannot be moved (%s); its "
                 "LID is skipped: remove it\n", path.c_str(), name.c_str(), std::strerror(errno));
}

}  // namespace

std::string subnet_dir() {
  std::string dir = fmt::format("/tmp/hcasim-subnet-{}", ::getuid());
  if (const char* e = std::getenv(kSubnetEnv); e != nullptr && *e != '\0') dir = e;
  // A trailing slash makes path resolution follow a final symbolic link, O_NOFOLLOW or not.
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  return dir;
}

int open_subnet_dir(bool create) {
  const std::string dir = subnet_dir();
  if (create && ::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    throw sdp::DeviceError(fmt::format("emulated subnet {}: cannot create it: {}", dir, std::strerror(errno)));
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP || errno == ENOTDIR)
      throw sdp::DeviceError(fmt::format("emulated subnet {}: not a directory (a symbolic link or a file); remove it "
                                         "or set {} to a directory of your own",
                                         dir, kSubnetEnv));
    throw sdp::DeviceError(fmt::format("emulated subnet {}: {}", dir, std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    throw sdp::DeviceError(fmt::format("emulated subnet {}: {}", dir, std::strerror(e)));
  }
  if (st.st_uid != ::geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    ::close(fd);
    throw sdp::DeviceError(
        st.st_uid != ::geteuid()
            ? fmt::format("emulated subnet {}: owned by uid {}, not by this user (uid {}); remove it or set {} to a "
                          "directory of your own",
                          dir, st.st_uid, ::geteuid(), kSubnetEnv)
            : fmt::format("emulated subnet {}: mode {:04o} lets group or others write it; chmod 700 it", dir,
                          st.st_mode & 07777));
  }
  return fd;
}

namespace {

/// Reads the secret file `name` of `dir` (open with O_NOFOLLOW | O_NONBLOCK: never through a
/// link, never blocking on a FIFO) into `out`; throws DeviceError naming `path` unless it is a
/// regular file of kSecretSize bytes, the effective user's, without group or other bits.
void read_secret(int dir, const char* name, const std::string& path, SubnetSecret& out) {
  const Fd f(::openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC));
  if (f.fd < 0) {
    if (errno == ELOOP)
      throw sdp::DeviceError(fmt::format("emulated subnet secret {}: a symbolic link, not the subnet's secret; remove it "
                                         "(it is made again)", path));
    throw sdp::DeviceError(fmt::format("emulated subnet secret {}: {}", path, std::strerror(errno)));
  }
  struct stat st {};
  if (::fstat(f.fd, &st) != 0)
    throw sdp::DeviceError(fmt::format("emulated subnet secret {}: {}", path, std::strerror(errno)));
  std::string fault;
  if (!S_ISREG(st.st_mode))
    fault = "not a regular file";
  else if (st.st_uid != ::geteuid())
    fault = fmt::format("owned by uid {}, not by this user (uid {})", st.st_uid, ::geteuid());
  else if ((st.st_mode & 077) != 0)
    fault = fmt::format("mode {:04o} lets group or others use it", st.st_mode & 07777);
  else if (st.st_size != static_cast<off_t>(kSecretSize))
    fault = fmt::format("{} bytes, not {}", st.st_size, kSecretSize);
  if (!fault.empty())
    throw sdp::DeviceError(fmt::format("emulated subnet secret {}: {}; remove it (it is made again)", path, fault));
  size_t got = 0;
  while (got < out.size()) {
    const ssize_t k = ::read(f.fd, out.data() + got, out.size() - got);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0)
      throw sdp::DeviceError(fmt::format("emulated subnet secret {}: {}", path,
                                         k < 0 ? std::strerror(errno) : "shorter than it says"));
    got += static_cast<size_t>(k);
  }
}

}  // namespace

SubnetSecret subnet_secret() {
  static constexpr const char* kName = "secret";
  const std::string path = subnet_dir() + "/" + kName;
  const Fd d(open_subnet_dir(true));
  // Made and read under the directory's lock (released when `d` closes): a process never reads
  // a secret another is still writing.
  if (::flock(d.fd, LOCK_EX) != 0)
    throw sdp::DeviceError(fmt::format("emulated subnet {}: cannot lock it: {}", subnet_dir(), std::strerror(errno)));
  SubnetSecret key{};
  {
    const Fd f(::openat(d.fd, kName, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600));
    if (f.fd >= 0) {
      ::fchmod(f.fd, 0600);  // whatever the umask
      size_t got = 0;
      while (got < key.size()) {
        const ssize_t k = ::getrandom(key.data() + got, key.size() - got, 0);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
          const int e = errno;
          ::unlinkat(d.fd, kName, 0);
          throw sdp::DeviceError(fmt::format("emulated subnet secret {}: getrandom: {}", path, std::strerror(e)));
        }
        got += static_cast<size_t>(k);
      }
      if (::write(f.fd, key.data(), key.size()) != static_cast<ssize_t>(key.size())) {
        ::unlinkat(d.fd, kName, 0);
        throw sdp::DeviceError(fmt::format("emulated subnet secret {}: cannot write it", path));
      }
    } else if (errno != EEXIST) {
      throw sdp::DeviceError(fmt::format("emulated subnet secret {}: {}", path, std::strerror(errno)));
    }
  }
  // Read back in both cases: what is used is what the file holds, after the same checks.
  read_secret(d.fd, kName, path, key);
  return key;
}

std::array<uint8_t, 16> gid_of_lid(uint16_t lid) {
  std::array<uint8_t, 16> g{};
  const uint64_t hi = kGidPrefix, lo = guid_of_lid(lid);
  for (int i = 0; i < 8; ++i) {
    g[static_cast<size_t>(i)] = static_cast<uint8_t>(hi >> (56 - 8 * i));
    g[static_cast<size_t>(8 + i)] = static_cast<uint8_t>(lo >> (56 - 8 * i));
  }
  return g;
}

std::optional<uint16_t> lid_of_gid(const uint8_t (&gid)[16]) {
  uint64_t hi = 0, lo = 0;
  for (int i = 0; i < 8; ++i) {
    hi = hi << 8 | gid[i];
    lo = lo << 8 | gid[8 + i];
  }
  const auto lid = static_cast<uint16_t>(lo >> 8 & 0xFFFF);
  if (hi != kGidPrefix || lo != guid_of_lid(lid) || lid == 0 || lid > kMaxUnicastLid) return std::nullopt;
  return lid;
}

SubnetPort::SubnetPort(uint16_t tcp_port) : owner_(::getpid()) {
  const std::string dir = subnet_dir();
  Fd d(open_subnet_dir(true));
  // Claims and reclaims of this subnet, one at a time: a stale claim read by two claimers is
  // removed by one of them, never with the other's fresh claim that took its place.
  if (::flock(d.fd, LOCK_EX) != 0)
    throw sdp::DeviceError(fmt::format("emulated subnet {}: cannot lock it: {}", dir, std::strerror(errno)));
  reclaim_temporaries(d.fd);
  static std::atomic<unsigned> serial{0};
  const std::string tmp = fmt::format(".claim-{}-{}", owner_, serial++);
  {
    const Fd f(::openat(d.fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (f.fd < 0) throw sdp::DeviceError(fmt::format("emulated subnet {}/{}: {}", dir, tmp, std::strerror(errno)));
    const std::string line = fmt::format("{} {} {}\n", owner_, tcp_port, process_start_time(owner_));
    if (::write(f.fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
      ::unlinkat(d.fd, tmp.c_str(), 0);
      throw sdp::DeviceError(fmt::format("emulated subnet {}/{}: cannot write it", dir, tmp));
    }
  }
  for (uint32_t lid = 1; lid <= kMaxUnicastLid; ++lid) {
    const std::string name = lid_name(static_cast<uint16_t>(lid));
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (::linkat(d.fd, tmp.c_str(), d.fd, name.c_str(), 0) == 0) {
        ::unlinkat(d.fd, tmp.c_str(), 0);
        ::flock(d.fd, LOCK_UN);
        dir_ = d.fd;
        d.fd = -1;
        name_ = name;
        lid_ = static_cast<uint16_t>(lid);
        return;
      }
      if (errno != EEXIST) break;
      // A claim of a process that is gone, or an entry that is no claim: removed, and the LID
      // tried once more.
      Claim c;
      const Entry e = read_claim(d.fd, name, c);
      if (e == Entry::Claim && c.alive()) break;
      if (::unlinkat(d.fd, name.c_str(), 0) != 0 && errno == EISDIR && ::unlinkat(d.fd, name.c_str(), AT_REMOVEDIR) != 0)
        set_aside(d.fd, dir, name);
    }
  }
  ::unlinkat(d.fd, tmp.c_str(), 0);
  throw sdp::DeviceError(fmt::format("emulated subnet {}: every LID (1 to {}) is taken", dir, kMaxUnicastLid));
}

SubnetPort::~SubnetPort() {
  // A forked child that exits leaves its parent's claim alone.
  const Fd d(dir_);
  if (name_.empty() || ::getpid() != owner_) return;
  Claim c;
  if (read_claim(d.fd, name_, c) == Entry::Claim && c.pid == owner_) ::unlinkat(d.fd, name_.c_str(), 0);
}

std::optional<uint16_t> find_port(uint16_t lid) {
  if (lid == 0 || lid > kMaxUnicastLid) return std::nullopt;
  try {
    const Fd d(open_subnet_dir(false));
    Claim c;
    if (read_claim(d.fd, lid_name(lid), c) != Entry::Claim || !c.alive()) return std::nullopt;
    return static_cast<uint16_t>(c.port);
  } catch (const sdp::DeviceError&) {
    return std::nullopt;
  }
}

namespace {
std::string mcg_name(uint16_t mlid, uint16_t lid) { return fmt::format("mcg-{:04x}-{:04x}", mlid, lid); }
}  // namespace

void join_multicast_port(uint16_t mlid, uint16_t lid) {
  if (!is_multicast_lid(mlid) || lid == 0 || lid > kMaxUnicastLid) return;
  try {
    const Fd d(open_subnet_dir(false));
    const Fd f(::openat(d.fd, mcg_name(mlid, lid).c_str(),
                        O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0600));
  } catch (const sdp::DeviceError&) {
  }
}

void leave_multicast_port(uint16_t mlid, uint16_t lid) {
  try {
    const Fd d(open_subnet_dir(false));
    ::unlinkat(d.fd, mcg_name(mlid, lid).c_str(), 0);
  } catch (const sdp::DeviceError&) {
  }
}

std::vector<uint16_t> multicast_ports(uint16_t mlid) {
  std::vector<uint16_t> out;
  if (!is_multicast_lid(mlid)) return out;
  try {
    const Fd dir(open_subnet_dir(false));
    const int dup = ::fcntl(dir.fd, F_DUPFD_CLOEXEC, 0);
    if (dup < 0) return out;
    DIR* d = ::fdopendir(dup);
    if (d == nullptr) {
      ::close(dup);
      return out;
    }
    const std::string prefix = fmt::format("mcg-{:04x}-", mlid);
    while (const dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name.size() != prefix.size() + 4 || name.compare(0, prefix.size(), prefix) != 0) continue;
      unsigned lid = 0;
      if (std::sscanf(name.c_str() + prefix.size(), "%4x", &lid) != 1 || lid == 0 || lid > kMaxUnicastLid) continue;
      Claim c;
      if (read_claim(dir.fd, lid_name(static_cast<uint16_t>(lid)), c) == Entry::Claim && c.alive())
        out.push_back(static_cast<uint16_t>(lid));
    }
    ::closedir(d);
  } catch (const sdp::DeviceError&) {
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace hcasim::emu
