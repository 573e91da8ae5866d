#pragma once
/// \file CPU topology of a host: sockets, cores and which cores share a last-level cache, and
/// what it costs a core to take a cache line another core wrote last (a coherence transfer).
///
/// CPUs are numbered as Linux numbers them on the machines the platforms describe: socket by
/// socket, and within a socket cache domain by cache domain (CPU c is in socket
/// c / cores_per_socket and in cache domain c / cores_per_cache). A platform whose BIOS
/// enumerates otherwise says so in its [topology] section's sources.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hcasim::model {

class Platform;

/// Where two cores sit relative to each other, nearest first.
enum class CoreDistance : uint8_t {
  SameCore,     ///< the line is already in this core's caches
  SharedCache,  ///< another core behind the same last-level cache (Core 2's shared L2)
  SameSocket,   ///< another cache in the same package (two dies sharing a front-side bus)
  CrossSocket,  ///< a core in another package
};

/// Short lower-case name ("same-core", "shared-cache", "same-socket", "cross-socket").
std::string_view distance_name(CoreDistance d);

/// Sockets, cores and caches of one host, and the coherence cost between them.
struct CpuTopology {
  int sockets = 1;           ///< packages
  int cores_per_socket = 1;  ///< CPUs (cores; no SMT modelled) per package
  int cores_per_cache = 1;   ///< CPUs sharing one last-level cache; divides cores_per_socket
  double line_shared_cache_ns = 0;  ///< take a line modified by a core behind the same cache, ns
  double line_same_socket_ns = 0;   ///< ... by a core of another cache in the same package, ns
  double line_cross_socket_ns = 0;  ///< ... by a core in another package, ns

  /// Reads [topology] (sockets, cores_per_socket, cores_per_cache, line_shared_cache,
  /// line_same_socket, line_cross_socket). `cpus` is host.cpus, which must equal
  /// sockets x cores_per_socket. Throws InputError naming the key otherwise.
  static CpuTopology from_platform(const Platform& p, int cpus);

  int cpus() const { return sockets * cores_per_socket; }
  int socket_of(int cpu) const { return cpu / cores_per_socket; }
  int cache_of(int cpu) const { return cpu / cores_per_cache; }
  /// How far core `to` is from core `from` (both 0..cpus()-1).
  CoreDistance distance(int from, int to) const;
  /// ns a core at `to` stalls to take one 64 B line last written at `from` (0 when equal).
  double line_transfer_ns(int from, int to) const;
};

/// Parses a Linux CPU list as /proc/irq/N/smp_affinity_list and taskset -c write it: "1",
/// "0-3", "0,2,4-5". Returns the CPUs in ascending order without duplicates. Throws InputError
/// "CPU list 'TEXT': ..." on a malformed list or a CPU >= cpus.
std::vector<int> parse_cpu_list(std::string_view text, int cpus);

}  // namespace hcasim::model
