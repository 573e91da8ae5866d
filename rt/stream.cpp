#include "rt/stream.h"

#include <sched.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "emu/emu_device.h"
#include "sdp/be.h"
#include "sdp/bsdh.h"
#ifdef HCASIM_HAVE_RDMA
#include "hw/rdma_device.h"
#endif

namespace hcasim::rt {

namespace be = sdp::be;

namespace {
constexpr char kRequestMagic[] = "HCASIMRQ";
constexpr char kReportMagic[] = "HCASIMRP";
constexpr uint32_t kVersion = 1;
}  // namespace

std::string device_name(const std::optional<std::string>& flag) {
  if (flag) return *flag;
  if (const char* env = std::getenv(kDeviceEnv)) return env;
  return "";
}

std::unique_ptr<sdp::Device> open_device(const std::string& name, uint64_t memory_bytes, const model::FaultConfig& faults,
                                    const model::RcRetry& retry) {
  if (name == "emu") return emu::open_emu_device(memory_bytes, faults, retry);
  const model::RcRetry defaults;
  if (faults.any() || retry.retry_cnt != defaults.retry_cnt || retry.timeout != defaults.timeout ||
      retry.rnr_retry != defaults.rnr_retry)
    throw InputError("--set fault.* / qp.*: faults are injected by the emulated HCA only (--device emu)");
#ifdef HCASIM_HAVE_RDMA
  return hw::open_rdma_device(name, memory_bytes);
#else
  throw sdp::DeviceError(fmt::format("RDMA device '{}': this build has no rdma-core backend (libibverbs-dev and librdmacm-dev "
                          "were missing when it was configured); use --device emu for the emulated HCA",
                          name.empty() ? "(first)" : name));
#endif
}

std::array<uint8_t, StreamRequest::kSize> StreamRequest::encode() const {
  std::array<uint8_t, kSize> out{};
  std::memcpy(out.data(), kRequestMagic, 8);
  be::put32(out.data() + 8, kVersion);
  be::put64(out.data() + 12, recv_size);
  be::put32(out.data() + 20, static_cast<uint32_t>(remote_cpu));
  return out;
}

StreamRequest StreamRequest::decode(std::span<const uint8_t, kSize> in) {
  if (std::memcmp(in.data(), kRequestMagic, 8) != 0) throw sdp::ProtocolError("test request: bad magic (not an hcasim-sdp-client?)");
  if (be::get32(in.data() + 8) != kVersion)
    throw sdp::ProtocolError(fmt::format("test request: version {} (this server speaks {})", be::get32(in.data() + 8), kVersion));
  StreamRequest r;
  r.recv_size = be::get64(in.data() + 12);
  r.remote_cpu = static_cast<int32_t>(be::get32(in.data() + 20));
  if (r.recv_size == 0 || r.recv_size > kMaxRecvSize)
    throw sdp::ProtocolError(fmt::format("test request: recv size {} outside 1..{}", r.recv_size, kMaxRecvSize));
  return r;
}

std::array<uint8_t, StreamReport::kSize> StreamReport::encode() const {
  std::array<uint8_t, kSize> out{};
  std::memcpy(out.data(), kReportMagic, 8);
  be::put64(out.data() + 8, bytes);
  be::put64(out.data() + 16, recv_calls);
  be::put32(out.data() + 24, crc32);
  be::put32(out.data() + 28, cpus);
  be::put64(out.data() + 32, elapsed_ns);
  be::put32(out.data() + 40, static_cast<uint32_t>(util_pct * 10000.0 + 0.5));
  be::put32(out.data() + 44, flags);
  return out;
}

StreamReport StreamReport::decode(std::span<const uint8_t, kSize> in) {
  if (std::memcmp(in.data(), kReportMagic, 8) != 0) throw sdp::ProtocolError("test report: bad magic");
  StreamReport r;
  r.bytes = be::get64(in.data() + 8);
  r.recv_calls = be::get64(in.data() + 16);
  r.crc32 = be::get32(in.data() + 24);
  r.cpus = be::get32(in.data() + 28);
  r.elapsed_ns = be::get64(in.data() + 32);
  r.util_pct = be::get32(in.data() + 40) / 10000.0;
  r.flags = be::get32(in.data() + 44);
  return r;
}

CpuTimes read_cpu_times() {
  std::ifstream f("/proc/stat");
  std::string line;
  if (!std::getline(f, line) || line.rfind("cpu ", 0) != 0) return {};
  std::istringstream in(line.substr(4));
  uint64_t v[8] = {};
  for (auto& x : v) in >> x;  // user nice system idle iowait irq softirq steal
  CpuTimes t;
  t.idle = v[3] + v[4];
  t.busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
  return t;
}

double utilisation_pct(const CpuTimes& a, const CpuTimes& b) {
  const double busy = static_cast<double>(b.busy - a.busy), idle = static_cast<double>(b.idle - a.idle);
  return busy + idle > 0 ? 100.0 * busy / (busy + idle) : 0.0;
}

int online_cpus() {
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

void bind_to_cpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (::sched_setaffinity(0, sizeof set, &set) != 0)
    throw sdp::DeviceError(fmt::format("-T {}: cannot bind to CPU {}: {}", cpu, cpu, std::strerror(errno)));
}

AffinityGuard::AffinityGuard() {
  static_assert(sizeof(cpu_set_t) == sizeof(mask_));
  saved_ = ::sched_getaffinity(0, sizeof(cpu_set_t), reinterpret_cast<cpu_set_t*>(mask_.data())) == 0;
}

AffinityGuard::~AffinityGuard() {
  if (saved_) ::sched_setaffinity(0, sizeof(cpu_set_t), reinterpret_cast<const cpu_set_t*>(mask_.data()));
}

uint32_t crc32_update(uint32_t crc, const uint8_t* data, uint64_t len) {
  return static_cast<uint32_t>(::crc32_z(crc, data, static_cast<z_size_t>(len)));
}

}  // namespace hcasim::rt
