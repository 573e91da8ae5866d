#pragma once
/// \file The lines the libibverbs example programs print, from a simulated run: the address
/// lines and the two result lines, computed as rdma-core v44's rc_pingpong.c main() computes
/// them, and hcasim's --json document of a run.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "frontends/json_output.h"
#include "frontends/pingpong_cli.h"
#include "frontends/pingpong_config.h"

namespace hcasim::frontends {

/// The microseconds the program computes from its two gettimeofday() calls at simulated times
/// `start_ns` and `end_ns`: (end.tv_sec - start.tv_sec) * 1000000 + (end.tv_usec -
/// start.tv_usec), the clock reading whole microseconds of simulated time.
int64_t pingpong_usec(double start_ns, double end_ns);

/// The figures of the two result lines (rc_pingpong.c main(), after the loop): `usec` held in a
/// float, bytes = size x iters x 2 (long long), seconds = usec / 1e6, Mbit/s = bytes x 8 / usec
/// (double), usec/iter = usec / iters in float arithmetic.
struct PingpongFigures {
  long long bytes = 0;
  float usec = 0;
  double seconds = 0;
  double mbit_s = 0;
  float usec_per_iter = 0;
};
PingpongFigures pingpong_figures(uint32_t size, uint32_t iters, int64_t usec);

/// "8192000 bytes in 0.02 seconds = 3276.80 Mbit/sec\n1000 iters in 0.02 seconds = 20.00 usec/iter\n".
std::string format_pingpong_figures(uint32_t iters, const PingpongFigures& f);

/// The PSN a side prints: lrand48() & 0xffffff after srand48 of hcasim's seed (the program seeds
/// with getpid() x time(NULL)); side 0 the client, 1 the server.
uint32_t pingpong_psn(uint64_t seed, int side);
/// The PSNs of a side's `n` QPs (srq_pingpong.c: lrand48() & 0xffffff for QP 0, 1, ... in turn,
/// after the one srand48); the first is pingpong_psn's.
std::vector<uint32_t> pingpong_psns(uint64_t seed, int side, uint32_t n);

/// One address line: "  local address:  LID 0x0001, QPN 0x000048, PSN 0x1b2c3d, GID ::" (ud's
/// local line has ": GID", as ud_pingpong.c prints it). `gid`: the port's GID as inet_ntop
/// writes it, or "::".
std::string pingpong_address_line(PingpongProgram program, bool remote, uint32_t lid, uint32_t qpn, uint32_t psn,
                                  std::string_view gid);

/// Everything the shown side prints on stdout: its address lines (srq: a local line for each of
/// its QPs, then a remote line for each of the peer's), its result lines, and with -c on the
/// server the "invalid data in page N" lines. The client's when a servername was given, else the
/// server's.
std::string format_pingpong_output(const PingpongOptions& options, const PingpongResult& result);

/// --csv: the header "program,side,size_bytes,iterations,bytes,usec,seconds,mbit_s,usec_per_iter"
/// and one row, the shown side's (client or server) result lines' figures at full precision
/// (pingpong_figures).
std::string format_pingpong_csv(const PingpongOptions& options, const PingpongResult& result);

/// --json: {"schema": "hcasim.pingpong/1", "command_line", "platform", "remote_platform", "set",
/// "seed", "program", "shown_side" ("client" or "server"), "setup": {size_bytes, iterations,
/// rx_depth, path_mtu_bytes, events, max_inline_data_bytes, inline; srq: num_qp}, "client" and
/// "server": {lid, qpn, psn, bytes, usec, seconds, mbit_s, usec_per_iter, elapsed_ns, cq_events,
/// interrupts; srq: qpns, psns (every QP's)}}.
Json pingpong_json(const std::vector<std::string>& args, const PingpongOptions& options, const PingpongResult& result,
                   std::string_view local_platform, std::string_view remote_platform);

}  // namespace hcasim::frontends
