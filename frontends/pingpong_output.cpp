// The libibverbs example programs' lines (pingpong_output.h).
#include "frontends/pingpong_output.h"

#include <cmath>

#include <fmt/format.h>

#include "frontends/cformat.h"
#include "frontends/perftest_output.h"  // perftest_srand48, perftest_lrand48: glibc's drand48 family

namespace hcasim::frontends {

namespace {

/// The LID of side 0 (the client's host) and side 1, as the perftest tools print them.
uint32_t lid_of(int side) { return side == 0 ? 0x0001 : 0x0002; }

/// The port GID ibv_query_gid returns for index 0: the subnet prefix fe80::/64 and the port
/// GUID (Mellanox OUI 00:02:c9), as inet_ntop(AF_INET6) prints it; "::" without -g.
std::string gid_of(const PingpongOptions& o, int side) {
  if (o.gid_index < 0) return "::";
  return fmt::format("fe80::2:c903:0:{:x}", side == 0 ? 1 : 2);
}

}  // namespace

int64_t pingpong_usec(double start_ns, double end_ns) {
  // gettimeofday reads whole microseconds: each reading is floored, then subtracted.
  return static_cast<int64_t>(std::floor(end_ns / 1000.0)) - static_cast<int64_t>(std::floor(start_ns / 1000.0));
}

PingpongFigures pingpong_figures(uint32_t size, uint32_t iters, int64_t usec) {
  PingpongFigures f;
  // rc_pingpong.c: float usec = ...; long long bytes = (long long) size * iters * 2;
  f.usec = static_cast<float>(usec);
  f.bytes = static_cast<long long>(size) * iters * 2;
  f.seconds = f.usec / 1000000.;
  f.mbit_s = static_cast<double>(f.bytes) * 8. / f.usec;
  f.usec_per_iter = f.usec / static_cast<float>(iters);  // float / unsigned int: float arithmetic
  return f;
}

std::string format_pingpong_figures(uint32_t iters, const PingpongFigures& f) {
  return cformat("%lld bytes in %.2f seconds = %.2f Mbit/sec\n", f.bytes, f.seconds, f.mbit_s) +
         cformat("%d iters in %.2f seconds = %.2f usec/iter\n", static_cast<int>(iters), f.seconds,
                 static_cast<double>(f.usec_per_iter));
}

uint32_t pingpong_psn(uint64_t seed, int side) {
  uint64_t state = perftest_srand48(seed * 2 + static_cast<uint64_t>(side));
  return perftest_lrand48(state) & 0xffffff;
}

std::vector<uint32_t> pingpong_psns(uint64_t seed, int side, uint32_t n) {
  uint64_t state = perftest_srand48(seed * 2 + static_cast<uint64_t>(side));
  std::vector<uint32_t> out;
  out.reserve(n);
  for (uint32_t k = 0; k < n; ++k) out.push_back(perftest_lrand48(state) & 0xffffff);
  return out;
}

std::string pingpong_address_line(PingpongProgram program, bool remote, uint32_t lid, uint32_t qpn, uint32_t psn,
                                  std::string_view gid) {
  const std::string g(gid);
  if (remote) return cformat("  remote address: LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n", lid, qpn, psn, g.c_str());
  // ud_pingpong.c prints its local line with ": GID".
  const char* sep = program == PingpongProgram::Ud ? ":" : ",";
  return cformat("  local address:  LID 0x%04x, QPN 0x%06x, PSN 0x%06x%s GID %s\n", lid, qpn, psn, sep, g.c_str());
}

std::string format_pingpong_output(const PingpongOptions& o, const PingpongResult& r) {
  const int me = o.server ? 0 : 1;
  const int peer = 1 - me;
  const auto& s = r.side[static_cast<size_t>(me)];
  const auto& p = r.side[static_cast<size_t>(peer)];
  std::string out;
  if (o.program == PingpongProgram::Srq) {  // srq_pingpong.c: every local QP's line, then every remote one's
    const auto mine = pingpong_psns(o.seed, me, static_cast<uint32_t>(s.qpns.size()));
    for (size_t k = 0; k < s.qpns.size(); ++k)
      out += pingpong_address_line(o.program, false, lid_of(me), s.qpns[k], mine[k], gid_of(o, me));
    const auto theirs = pingpong_psns(o.seed, peer, static_cast<uint32_t>(p.qpns.size()));
    for (size_t k = 0; k < p.qpns.size(); ++k)
      out += pingpong_address_line(o.program, true, lid_of(peer), p.qpns[k], theirs[k], gid_of(o, peer));
  } else {
    out += pingpong_address_line(o.program, false, lid_of(me), s.qpn, pingpong_psn(o.seed, me), gid_of(o, me));
    out += pingpong_address_line(o.program, true, lid_of(peer), p.qpn, pingpong_psn(o.seed, peer), gid_of(o, peer));
  }
  out += format_pingpong_figures(o.iters, pingpong_figures(o.size, o.iters, pingpong_usec(s.start_ns, s.end_ns)));
  for (uint32_t page : s.invalid_pages) out += cformat("invalid data in page %u\n", page);
  return out;
}

std::string format_pingpong_csv(const PingpongOptions& o, const PingpongResult& r) {
  const int me = o.server ? 0 : 1;
  const auto& s = r.side[static_cast<size_t>(me)];
  const PingpongFigures f = pingpong_figures(o.size, o.iters, pingpong_usec(s.start_ns, s.end_ns));
  return "program,side,size_bytes,iterations,bytes,usec,seconds,mbit_s,usec_per_iter\n" +
         fmt::format("{},{},{},{},{},{},{},{},{}\n", pingpong_tool_name(o.program), me == 0 ? "client" : "server",
                     o.size, o.iters, f.bytes, f.usec, f.seconds, f.mbit_s, f.usec_per_iter);
}

Json pingpong_json(const std::vector<std::string>& args, const PingpongOptions& o, const PingpongResult& r,
                   std::string_view local_platform, std::string_view remote_platform) {
  const std::string_view tool = pingpong_tool_name(o.program);
  Json doc;
  doc["schema"] = "hcasim.pingpong/1";
  doc["command_line"] = json_command_line(tool, args);
  doc["platform"] = local_platform;
  doc["remote_platform"] = remote_platform;
  doc["set"] = o.sets;
  doc["seed"] = o.seed;
  doc["program"] = tool;
  doc["shown_side"] = o.server ? "client" : "server";
  Json setup;
  setup["size_bytes"] = o.size;
  setup["iterations"] = o.iters;
  setup["rx_depth"] = o.rx_depth;
  setup["path_mtu_bytes"] = r.path_mtu;
  setup["events"] = o.events;
  setup["max_inline_data_bytes"] = r.max_inline_data;
  setup["inline"] = r.inline_sends;
  if (o.program == PingpongProgram::Srq) setup["num_qp"] = o.num_qp;
  doc["setup"] = std::move(setup);
  for (int i = 0; i < 2; ++i) {
    const auto& s = r.side[static_cast<size_t>(i)];
    const int64_t usec = pingpong_usec(s.start_ns, s.end_ns);
    const PingpongFigures f = pingpong_figures(o.size, o.iters, usec);
    Json side;
    side["lid"] = lid_of(i);
    side["qpn"] = s.qpn;
    side["psn"] = pingpong_psn(o.seed, i);
    side["bytes"] = f.bytes;
    side["usec"] = usec;
    side["seconds"] = f.seconds;
    side["mbit_s"] = usec > 0 ? Json(f.mbit_s) : Json(nullptr);
    side["usec_per_iter"] = static_cast<double>(f.usec_per_iter);
    side["elapsed_ns"] = s.end_ns - s.start_ns;
    side["cq_events"] = s.cq_events;
    side["interrupts"] = s.interrupts;
    if (o.program == PingpongProgram::Srq) {
      side["qpns"] = s.qpns;
      side["psns"] = pingpong_psns(o.seed, i, static_cast<uint32_t>(s.qpns.size()));
    }
    doc[i == 0 ? "client" : "server"] = std::move(side);
  }
  if (r.faults_configured) {
    doc["local_faults"] = fault_stats_json(r.local_faults);
    doc["remote_faults"] = fault_stats_json(r.remote_faults);
  }
  return doc;
}

}  // namespace hcasim::frontends
