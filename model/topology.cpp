#include "model/topology.h"

#include <algorithm>
#include <charconv>

#include <fmt/format.h>

#include "model/error.h"
#include "model/platform.h"

namespace hcasim::model {

std::string_view distance_name(CoreDistance d) {
  switch (d) {
    case CoreDistance::SameCore: return "same-core";
    case CoreDistance::SharedCache: return "shared-cache";
    case CoreDistance::SameSocket: return "same-socket";
    case CoreDistance::CrossSocket: return "cross-socket";
  }
  return "?";
}

CpuTopology CpuTopology::from_platform(const Platform& p, int cpus) {
  CpuTopology t;
  auto count = [&](const std::string& key) { return static_cast<int>(p.u32(key)); };
  t.sockets = count("topology.sockets");
  t.cores_per_socket = count("topology.cores_per_socket");
  t.cores_per_cache = count("topology.cores_per_cache");
  if (t.cores_per_socket % t.cores_per_cache != 0)
    p.fail("topology.cores_per_cache",
           fmt::format("{} does not divide topology.cores_per_socket = {}", t.cores_per_cache, t.cores_per_socket));
  if (t.cpus() != cpus) {
    // Blame the key the user changed on the command line, if one of the three was: with
    // `--set host.cpus=1`, host.cpus is the mistake, not the file's cores_per_socket line.
    std::string blame = "topology.cores_per_socket";
    for (const char* key : {"host.cpus", "topology.sockets", "topology.cores_per_socket"})
      if (p.has(key) && p.param(key).origin == "--set") {
        blame = key;
        break;
      }
    p.fail(blame, fmt::format("sockets x cores_per_socket = {} x {} = {} but host.cpus = {}",
                                                    t.sockets, t.cores_per_socket, t.cpus(), cpus));
  }
  t.line_shared_cache_ns = p.cost_ns("topology.line_shared_cache");
  t.line_same_socket_ns = p.cost_ns("topology.line_same_socket");
  t.line_cross_socket_ns = p.cost_ns("topology.line_cross_socket");
  return t;
}

CoreDistance CpuTopology::distance(int from, int to) const {
  if (from == to) return CoreDistance::SameCore;
  if (cache_of(from) == cache_of(to)) return CoreDistance::SharedCache;
  if (socket_of(from) == socket_of(to)) return CoreDistance::SameSocket;
  return CoreDistance::CrossSocket;
}

double CpuTopology::line_transfer_ns(int from, int to) const {
  switch (distance(from, to)) {
    case CoreDistance::SameCore: return 0;
    case CoreDistance::SharedCache: return line_shared_cache_ns;
    case CoreDistance::SameSocket: return line_same_socket_ns;
    case CoreDistance::CrossSocket: return line_cross_socket_ns;
  }
  return 0;
}

std::vector<int> parse_cpu_list(std::string_view text, int cpus) {
  auto bad = [&](const std::string& what) {
    return InputError(fmt::format("CPU list '{}': {}", text, what));
  };
  auto number = [&](std::string_view s) {
    int v = -1;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || ptr != s.data() + s.size() || v < 0)
      throw bad(fmt::format("'{}' is not a CPU number", s));
    if (v >= cpus) throw bad(fmt::format("CPU {} does not exist (the host has {} CPUs)", v, cpus));
    return v;
  };
  std::vector<int> out;
  size_t pos = 0;
  if (text.empty()) throw bad("empty");
  while (pos <= text.size()) {
    const size_t comma = std::min(text.find(',', pos), text.size());
    const std::string_view item = text.substr(pos, comma - pos);
    const size_t dash = item.find('-');
    if (dash == std::string_view::npos) {
      out.push_back(number(item));
    } else {
      if (dash == 0 || dash + 1 == item.size()) throw bad(fmt::format("'{}' is not a CPU number or range", item));
      const int lo = number(item.substr(0, dash)), hi = number(item.substr(dash + 1));
      if (lo > hi) throw bad(fmt::format("range {} is backwards", item));
      for (int c = lo; c <= hi; ++c) out.push_back(c);
    }
    pos = comma + 1;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace hcasim::model

namespace hcasim::model::schema {
namespace {
using namespace decl;
constexpr ParamSpec kTopology[] = {
    integer("topology.sockets", "", 1, 1024, "CPU packages; sockets x cores_per_socket = host.cpus"),
    integer("topology.cores_per_socket", "", 1, 1024, "CPUs per package"),
    integer("topology.cores_per_cache", "", 1, 1024, "CPUs sharing one last-level cache; divides cores_per_socket"),
    stall("topology.line_shared_cache", "ns", "a cache line moving between two CPUs behind one shared cache"),
    stall("topology.line_same_socket", "ns", "a cache line moving between two caches of one package"),
    stall("topology.line_cross_socket", "ns", "a cache line moving between two packages"),
};
}  // namespace
std::span<const ParamSpec> topology() { return kTopology; }
}  // namespace hcasim::model::schema
