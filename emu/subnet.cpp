#include "emu/subnet.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "sdp/device.h"

namespace hcasim::emu {

namespace {

std::string lid_path(const std::string& dir, uint16_t lid) { return fmt::format("{}/lid-{:04x}", dir, lid); }

/// The "PID TCP_PORT" line of a claim file; false when unreadable or malformed.
bool read_claim(const std::string& path, long& pid, unsigned& port) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return false;
  const bool ok = std::fscanf(f, "%ld %u", &pid, &port) == 2;
  std::fclose(f);
  return ok && pid > 0 && port > 0 && port < 65536;
}

bool alive(long pid) { return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH; }

}  // namespace

std::string subnet_dir() {
  if (const char* e = std::getenv(kSubnetEnv); e != nullptr && *e != '\0') return e;
  return fmt::format("/tmp/hcasim-subnet-{}", ::getuid());
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

SubnetPort::SubnetPort(uint16_t tcp_port) {
  const std::string dir = subnet_dir();
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    throw sdp::DeviceError(fmt::format("emulated subnet {}: {}", dir, std::strerror(errno)));
  const std::string tmp = fmt::format("{}/.claim-{}", dir, ::getpid());
  {
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) throw sdp::DeviceError(fmt::format("emulated subnet {}: {}", tmp, std::strerror(errno)));
    const std::string line = fmt::format("{} {}\n", ::getpid(), tcp_port);
    const bool ok = ::write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
    ::close(fd);
    if (!ok) {
      ::unlink(tmp.c_str());
      throw sdp::DeviceError(fmt::format("emulated subnet {}: cannot write", tmp));
    }
  }
  for (uint32_t lid = 1; lid <= kMaxUnicastLid; ++lid) {
    const std::string p = lid_path(dir, static_cast<uint16_t>(lid));
    for (int attempt = 0; attempt < 2; ++attempt) {
      if (::link(tmp.c_str(), p.c_str()) == 0) {
        ::unlink(tmp.c_str());
        path_ = p;
        lid_ = static_cast<uint16_t>(lid);
        return;
      }
      if (errno != EEXIST) break;
      long pid = 0;
      unsigned port = 0;
      // A claim of a process that is gone: removed, and the LID tried once more.
      if (read_claim(p, pid, port) && !alive(pid)) {
        ::unlink(p.c_str());
        continue;
      }
      break;
    }
  }
  ::unlink(tmp.c_str());
  throw sdp::DeviceError(fmt::format("emulated subnet {}: every LID is taken", dir));
}

SubnetPort::~SubnetPort() {
  if (!path_.empty()) ::unlink(path_.c_str());
}

std::optional<uint16_t> find_port(uint16_t lid) {
  long pid = 0;
  unsigned port = 0;
  if (lid == 0 || lid > kMaxUnicastLid || !read_claim(lid_path(subnet_dir(), lid), pid, port) || !alive(pid))
    return std::nullopt;
  return static_cast<uint16_t>(port);
}

}  // namespace hcasim::emu
