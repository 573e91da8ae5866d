#pragma once
/// \file Command line of `hcasim ibv_rc_pingpong|ibv_uc_pingpong|ibv_ud_pingpong|
/// ibv_srq_pingpong`: the rdma-core v44 example programs' flags plus hcasim's long options, in
/// any order.
///
///     hcasim ibv_rc_pingpong [hcasim long options and the program's flags] [servername]
///
/// The flags are read as the programs read them (libibverbs/examples/rc_pingpong.c main():
/// getopt_long with "p:d:i:s:m:r:n:l:eg:oOPtcjN"; uc_pingpong.c "p:d:i:s:m:r:n:l:eg:c";
/// ud_pingpong.c "p:d:i:s:r:n:l:eg:c"; srq_pingpong.c "p:d:i:s:m:q:r:n:l:eog:c"), so values may be attached (-s64, --size=64) or separate,
/// flags group (-ec), long options may be abbreviated to a unique prefix (--iter=10), the server
/// name may stand anywhere (GNU getopt permutes) and "--" ends the options. A later flag
/// overrides an earlier one. The programs read numbers with strtoul(optarg, NULL, 0), which takes
/// any text; hcasim reads them the same way (decimal, 0x hex, 0 octal) but refuses text that is
/// not wholly a number, and the values the programs would fail on later (a path MTU that is no IB
/// MTU, a port above 65535, an SL above 15) with one line naming the flag.
///
/// With a servername the command is the client's and hcasim prints what the client prints;
/// without one it is the server's, and hcasim prints the server's lines. Both sides always run.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "frontends/netperf_cli.h"  // kDefaultPlatform
#include "frontends/pingpong_config.h"
#include "model/error.h"

namespace hcasim::frontends {

// --- rdma-core v44 libibverbs/examples defaults (main() of each program) ----------------------
inline constexpr uint32_t kPingpongDefSize = 4096;    ///< rc, uc, srq: size = 4096
inline constexpr uint32_t kPingpongDefSizeUd = 1024;  ///< ud_pingpong.c: size = 1024 (its usage says 2048)
inline constexpr uint32_t kPingpongDefIters = 1000;   ///< iters = 1000
inline constexpr uint32_t kPingpongDefRxDepth = 500;  ///< rx_depth = 500
inline constexpr uint32_t kPingpongDefNumQp = 16;     ///< srq_pingpong.c: num_qp = 16
inline constexpr uint32_t kPingpongSrqMaxQp = 256;    ///< srq_pingpong.c: MAX_QP; -q must be below it
inline constexpr uint32_t kPingpongDefMtu = 1024;     ///< mtu = IBV_MTU_1024 (rc, uc, srq)
inline constexpr uint32_t kPingpongDefPort = 18515;   ///< the TCP port of -p
inline constexpr uint32_t kPingpongUdGrh = 40;        ///< ud_pingpong.c: the GRH room ahead of each receive, bytes
inline constexpr uint32_t kPingpongUdQkey = 0x11111111;  ///< ud_pingpong.c: the Q_Key of both QPs

/// Everything `hcasim ibv_*_pingpong` was asked for, defaulted as the program defaults it.
struct PingpongOptions {
  PingpongProgram program = PingpongProgram::Rc;

  // --- the program's flags ------------------------------------------------------------------
  uint32_t size = kPingpongDefSize;      ///< -s, bytes
  uint32_t iters = kPingpongDefIters;    ///< -n
  uint32_t rx_depth = kPingpongDefRxDepth;  ///< -r
  uint32_t num_qp = kPingpongDefNumQp;   ///< -q (srq): QPs per side, 1..255; the others have one
  uint32_t mtu = kPingpongDefMtu;        ///< -m (RC, UC), bytes: 256 512 1024 2048 4096
  bool events = false;                   ///< -e
  bool validate = false;                 ///< -c
  bool new_send = false;                 ///< -N (rc): the ibv_wr_* post API, the same WQE
  uint32_t tcp_port = kPingpongDefPort;  ///< -p (no TCP connection is simulated)
  std::string device;                    ///< -d; empty: the first device, the platform's hca.device
  int ib_port = 1;                       ///< -i (the simulated HCA has one port)
  int sl = 0;                            ///< -l: service level, 0..15 (one link: no effect)
  int gid_index = -1;                    ///< -g: -1 none; 0 prints the port's GID
  std::optional<std::string> server;     ///< the servername: the command is the client's
  bool help = false;                     ///< -h / --help

  // --- hcasim long options ------------------------------------------------------------------
  std::string platform = kDefaultPlatform;     ///< --platform NAME|FILE: the client's host
  std::optional<std::string> remote_platform;  ///< --remote-platform: the server's host
  std::vector<std::string> sets;               ///< --set section.key=value, both hosts
  uint64_t seed = 1;                           ///< --seed N: the PSNs (srand48)
  bool json = false;                           ///< --json: the figures as one JSON document
  /// --csv PATH: the shown side's figures (format_pingpong_csv); /dev/stdout after the text
  std::optional<std::string> csv_path;
  bool stats = false;                          ///< --stats: simulator statistics on stderr

  /// "hcasim: note: ..." lines for stderr: flags accepted with no effect on the simulation.
  std::vector<std::string> notes;
};

/// "ibv_rc_pingpong", "ibv_uc_pingpong", "ibv_ud_pingpong" or "ibv_srq_pingpong".
std::string_view pingpong_tool_name(PingpongProgram program);

/// The program `tool` names (also without "ibv_": "rc_pingpong" as built in rdma-core's tree).
std::optional<PingpongProgram> pingpong_program_named(std::string_view tool);

/// Parses the words after `hcasim TOOL`. Throws InputError with one line naming the flag at
/// fault: "-m: 1000 is not an IB MTU (256, 512, 1024, 2048 or 4096)", "-s: 'abc' is not a
/// number", "-o (--odp): on-demand paging is not simulated by hcasim ibv_rc_pingpong",
/// "unknown option -q", "--s: ambiguous option (...)", "-s: missing value", "unexpected argument
/// 'b' (the program takes one servername, 'a' is already given)". ibv_srq_pingpong's own checks
/// after its options, with its own words: "rx_depth 8 is too small for 16 QPs -- must have at
/// least one receive per QP." (-q above -r), "num_qp 300 must be less than 255" (-q at least
/// MAX_QP 256; the program's text says 255), and hcasim's "-q 0: ..." (the program would poll
/// its empty CQ for ever).
PingpongOptions parse_pingpong_args(PingpongProgram program, const std::vector<std::string>& args);

/// The simulation's view of the options.
PingpongConfig to_pingpong_config(const PingpongOptions& options);

/// The program flag that sets PingpongConfig field `field` (frontends/config_error.h): size
/// "-s", iters "-n", rx_depth "-r", path_mtu "-m", num_qp "-q"; another field keeps its own name.
std::string pingpong_option(const std::string& field);

/// hcasim's help for the program (-h / --help): the program's own usage text and hcasim's options.
std::string pingpong_usage(PingpongProgram program);

}  // namespace hcasim::frontends
