#pragma once
/// \file What hcasim-sdp-client and hcasim-sdp-server share: opening the device, the test's
/// request and report (sent over the SDP connection itself, before and after the data), the
/// CPU utilisation from /proc/stat, and the data pattern.
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "sdp/device.h"

namespace hcasim::rt {

/// Environment variable naming the device when --device is not given ("emu" for the emulated
/// HCA, or an rdma-core device name).
inline constexpr const char* kDeviceEnv = "HCASIM_DEVICE";
/// netserver's port (netperf 2.4's default control port); the SDP listener takes it.
inline constexpr uint16_t kDefaultPort = 12865;

/// The device to open: `flag` when given, else $HCASIM_DEVICE, else "" (the first RDMA device).
std::string device_name(const std::optional<std::string>& flag);
/// Opens "emu" (emu/) or an rdma-core device (hw/; "" = the first). Throws Error with one line:
/// no device, no such device, or a build without the rdma-core backend. `faults` and `retry`
/// (--set fault.* / qp.*) configure the emulated HCA; a real one takes neither: Throws
/// InputError when they differ from the defaults for a device other than "emu".
std::unique_ptr<sdp::Device> open_device(const std::string& name, uint64_t memory_bytes,
                                    const model::FaultConfig& faults = {}, const model::RcRetry& retry = {});

/// Largest recv size a test may ask of the server, bytes (its memory arena is 64 MiB).
inline constexpr uint64_t kMaxRecvSize = 16u << 20;

/// The client's test request, the first bytes on the connection (32 B, big-endian):
/// magic "HCASIMRQ", version u32 = 1, recv_size u64 (-M, bytes per recv), remote_cpu i32
/// (-T ,N; -1 = none), reserved u32.
struct StreamRequest {
  uint64_t recv_size = 0;
  int32_t remote_cpu = -1;
  static constexpr size_t kSize = 32;
  std::array<uint8_t, kSize> encode() const;
  /// Throws sdp::ProtocolError when the magic or version is wrong or recv_size is 0 or over
  /// kMaxRecvSize.
  static StreamRequest decode(std::span<const uint8_t, kSize> in);
};

/// The server's report after the client's end of stream (48 B, big-endian): magic
/// "HCASIMRP", bytes u64 received, recv_calls u64, crc32 u32 of the received bytes, cpus u32,
/// elapsed_ns u64 (first byte to end of stream), util u32 in 1/10000 % (system-wide), flags
/// u32 (kUnbound: the server could not bind to the CPU -T asked and ran unbound, as
/// netserver does).
struct StreamReport {
  static constexpr uint32_t kUnbound = 1;
  uint64_t bytes = 0;
  uint64_t recv_calls = 0;
  uint32_t crc32 = 0;
  uint32_t cpus = 0;
  uint64_t elapsed_ns = 0;
  double util_pct = 0;
  uint32_t flags = 0;
  static constexpr size_t kSize = 48;
  std::array<uint8_t, kSize> encode() const;
  /// Throws sdp::ProtocolError on a wrong magic.
  static StreamReport decode(std::span<const uint8_t, kSize> in);
};

/// Jiffies of all CPUs from the first line of /proc/stat (proc(5)): busy and idle (idle +
/// iowait), as netperf's "procstat" CPU method reads them (netcpu_procstat.c).
struct CpuTimes {
  uint64_t busy = 0, idle = 0;
};
/// Reads /proc/stat; all zero when it cannot (then utilisation is reported as 0).
CpuTimes read_cpu_times();
/// System-wide utilisation between two readings, %: 100 x busy / (busy + idle).
double utilisation_pct(const CpuTimes& before, const CpuTimes& after);
/// Online CPUs (sysconf _SC_NPROCESSORS_ONLN).
int online_cpus();
/// Binds the calling thread to `cpu` (sched_setaffinity, as netperf -T does). Throws Error.
void bind_to_cpu(int cpu);
/// The calling thread's CPU affinity, to put back after a test bound it (RAII).
class AffinityGuard {
 public:
  AffinityGuard();
  ~AffinityGuard();
  AffinityGuard(const AffinityGuard&) = delete;
  AffinityGuard& operator=(const AffinityGuard&) = delete;

 private:
  std::array<uint64_t, 16> mask_{};  // a cpu_set_t's 1024 bits
  bool saved_ = false;
};

/// zlib's CRC-32 of `data`, continuing from `crc` (0 to start).
uint32_t crc32_update(uint32_t crc, const uint8_t* data, uint64_t len);

}  // namespace hcasim::rt
