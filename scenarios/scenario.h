#pragma once
/// \file The scenario file that `hcasim run` (run.h), `validate` and `calibrate` read: each point
/// a real command line (netperf, or a perftest latency tool) tied to a row of a reference CSV.
///
/// Scenario file (TOML):
///
///     name = "seed000"
///     description = "..."                       # optional
///     platform = "connectx-ddr-pcie1x8"         # NAME or FILE, as --platform
///     source = "shared/seeds/000_...txt (...)"  # optional: where the measurements come from
///     [tolerance]
///     throughput = 0.15                         # netperf: |simulated - measured| / measured
///     service_demand = 0.25
///     utilisation = 0.25                        # netperf, optional: CPU utilisation, relative
///     t_typical_us = 0.05                       # ib_write_lat: |simulated - measured|, in us
///     t_min_us = 0.08
///     [[point]]
///     table = "T3_m_flag"
///     mode = "SDP"
///     set = ["sdp.zcopy_thresh=0"]              # optional: --set for both hosts
///     platform = "..."                          # optional: overrides the scenario's
///     command = "netperf -C -c -P 0 -t TCP_STREAM -H 193.168.10.143 -l 60 -- -m 64K"
///     reference = { file = "validation/seed000/x.csv",          # relative to the data dir
///                   match = { table = "T3_m_flag", mode = "SDP" } }  # selects exactly one row
///     gated = true                              # optional, default true
///     [spread]                                  # optional: the seed's own run-to-run spread
///     throughput = 0.0397                       # relative, like the errors; each key optional
///     service_demand = 0.2182
///     utilisation = 0.05
///     source = "max |T1 - T3| / T3 over ..."    # required: how the values were computed
///
/// `[spread]` declares, where the seed measured the same configuration twice, how far apart
/// the two measurements are (|a - b| / b, the file's comment saying which is b), per metric.
/// It gates nothing: `hcasim validate` uses it in the project's target for netperf tables
/// (validate.h: median |error| <= 5 % and max |error| <= 10 %, or the spread, whichever is
/// larger). At least one metric must be given, each a number > 0; only a scenario with netperf
/// points may declare it.
///
/// Two kinds of point, told apart by the command's first word:
///
/// - netperf points (`netperf ...`): the child is `hcasim netperf WORDS --platform P --set ...
///   --csv TMP`. The measured columns of a reference row are throughput_mbps,
///   sd_local_us_per_kb, sd_remote_us_per_kb, util_local_pct and util_remote_pct (CPU
///   utilisation, %, netperf's "Utilization Send local / Recv remote"); the child's CSV has the
///   same names. Errors are relative and gated by `throughput`, `service_demand` and
///   `utilisation` (local and remote).
/// - latency points (`ib_write_lat ...`, `ib_send_lat ...`, `ib_read_lat ...` or
///   `ib_atomic_lat ...`, optionally after `taskset [-c] CPUS`, which is dropped with its
///   arguments: hcasim does not pin processes, the simulated tool runs where the platform puts
///   it): the child is `hcasim TOOL WORDS --platform P --set ... --csv TMP`. Its words are only split and checked for the reserved options here; the
///   child reports a bad perftest flag (exit 2). The reference row must have a `bytes` column
///   (the message size it measured); its measured columns are t_min_us, t_max_us and
///   t_typical_us, as the tool prints them (half the round trip for WRITE and SEND, the whole
///   round trip for READ and atomics). The simulated figures are the child CSV's row whose `bytes` equals the
///   reference row's (so a command may sweep sizes with -a and several points share it).
///   Errors are absolute, simulated - measured in us, gated by `t_typical_us` and `t_min_us`;
///   t_max is reported but never gated (it is the tail of a noise model).
/// - TCP_RR points (`netperf -t TCP_RR ...`): as netperf points; the reference row's measured
///   columns are transaction_rate_per_s, sd_local_us_per_tr, sd_remote_us_per_tr (netperf's
///   us/Tr) and the utilisations; the rate is gated by `throughput`, the service demands by
///   `service_demand`.
/// - bandwidth points (`ib_write_bw ...`, `ib_send_bw ...`, `ib_read_bw ...`, `ib_atomic_bw
///   ...`): the reference row has `bytes` and bw_avg_gbit_s (perftest's BW average, 10^9
///   bit/s) and msg_rate_mpps; the simulated row is the child CSV's of that size. BW average is
///   gated by `throughput`; the message rate is reported only.
/// - pingpong points (`ibv_rc_pingpong ...`, `ibv_uc_pingpong ...`, `ibv_ud_pingpong ...`,
///   `ibv_srq_pingpong ...`): the reference row's usec_per_iter (one round trip) and mbit_s;
///   usec/iter is gated by `usec_per_iter` (relative), Mbit/sec reported only.
///
/// The tolerances of a kind are required when the scenario has a point of that kind, except
/// `utilisation`, which is required only when some netperf point's reference row has a
/// utilisation value (checked when the references are read: run_scenario,
/// check_reference_tolerances); a tolerance that no point uses is allowed. An empty cell or a
/// missing measured column means "not measured" (seed 000's T1 rows have no utilisation).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/error.h"

namespace hcasim::scenarios {

/// Which row of which reference CSV a point reproduces.
struct ReferenceSpec {
  std::string file;  ///< path relative to the data directory (or absolute)
  std::vector<std::pair<std::string, std::string>> match;  ///< column -> cell text, by column name
};

/// What a point measures, from the tool its command runs.
enum class PointKind {
  Netperf,  ///< netperf TCP_STREAM (and TCP_MAERTS, from run files): throughput and service
            ///< demand, relative errors
  NetperfRr,  ///< netperf TCP_RR: transaction rate and service demand per transaction, relative
              ///< errors
  Latency,  ///< perftest ib_write_lat, ib_send_lat, ib_read_lat, ib_atomic_lat: t_min /
            ///< t_typical / t_max in us, absolute errors
  Bandwidth,  ///< perftest ib_write_bw, ib_send_bw, ib_read_bw, ib_atomic_bw: BW average and
              ///< message rate, relative errors
  Pingpong,  ///< rdma-core's ibv_rc_pingpong, ibv_uc_pingpong, ibv_ud_pingpong, ibv_srq_pingpong:
             ///< usec/iter and Mbit/sec, relative errors
};

/// The kind's name in reports and JSON: "netperf", "netperf_rr", "latency", "bandwidth",
/// "pingpong".
const char* point_kind_name(PointKind kind);

/// One point of a scenario: one command line and its measured counterpart.
struct ScenarioPoint {
  std::string table;                 ///< reference table, e.g. "T3_m_flag"
  std::string mode;                  ///< "SDP", "BZCOPY", "BF on, WC off", ...
  std::vector<std::string> set;      ///< --set assignments for both hosts
  std::vector<std::string> set_origins;  ///< where each of `set` was written when not at the
                                     ///< point (parallel, or shorter): "FILE:LINE" of a run
                                     ///< file's directive, "--set" for the command line, "" the point
  std::string platform;              ///< the point's platform (the scenario's unless overridden)
  std::string remote_platform;       ///< netserver's platform when it differs ("" = platform)
  std::string command;               ///< the literal command line
  PointKind kind = PointKind::Netperf;
  std::string tool;                  ///< the hcasim subcommand of its child: "netperf", "ib_write_lat", ...
  std::vector<std::string> words;    ///< `command` split like a shell, without a leading
                                     ///< `taskset ...` and without the tool's name
  std::string size_flag;             ///< netperf: the test options of `command` ("-m 64K"), or "";
                                     ///< always "" for latency points (their size is the
                                     ///< reference row's bytes)
  ReferenceSpec reference;
  bool gated = true;                 ///< whether an error beyond tolerance fails the run
  uint32_t line = 0;                 ///< line of the point in the scenario file
};

/// Allowed errors. 0 means "not declared", which parse_scenario allows only when no point of
/// that kind needs it.
struct Tolerance {
  double throughput = 0;      ///< netperf: allowed relative error (0.15 = 15 %) of the throughput,
                              ///< of TCP_RR's transaction rate and of perftest's BW average
  double service_demand = 0;  ///< netperf (TCP_RR too): allowed relative error, both service demands
  double t_typical_us = 0;    ///< latency: allowed |simulated - measured| of t_typical, us
  double t_min_us = 0;        ///< latency: allowed |simulated - measured| of t_min, us
  double utilisation = 0;     ///< netperf: allowed relative error, both CPU utilisations
                              ///< (0 = not declared: no reference may measure utilisation)
  double usec_per_iter = 0;   ///< pingpong: allowed relative error of usec/iter
};

/// The seed's own run-to-run spread ([spread]): relative, |a - b| / b between two measurements
/// of the same configuration; nullopt = not declared for that metric.
struct Spread {
  std::optional<double> throughput;      ///< relative (0.04 = 4 %)
  std::optional<double> service_demand;  ///< relative, send and receive service demand
  std::optional<double> utilisation;     ///< relative, send and receive CPU utilisation
  std::string source;                    ///< how the values were computed (which rows, which formula)
  uint32_t line = 0;                     ///< line of [spread] in the file (for messages)
};

/// A parsed scenario file.
struct Scenario {
  std::string name;
  std::string description;
  std::string platform;
  std::string remote_platform;  ///< optional: the remote host's platform for every point ("" = platform)
  std::string source;
  std::string origin;  ///< file name used in messages
  Tolerance tolerance;
  uint32_t tolerance_line = 0;  ///< line of [tolerance] in the file (for messages)
  std::optional<Spread> spread;  ///< [spread], when declared
  std::vector<ScenarioPoint> points;
};

/// Parses scenario TOML. Every command is split; netperf commands are checked with the netperf
/// parser, latency commands only for their tool name and the options the scenario sets.
/// Throws InputError "ORIGIN:LINE: what is wrong" (TOML syntax, missing or mistyped key,
/// unknown key, bad command, a tolerance missing for a kind of point the file has, a [spread]
/// without `source` or without any metric, or in a file without netperf points). A declared
/// `utilisation` is checked (a number > 0) but never required here: the references decide
/// (check_reference_tolerances).
Scenario parse_scenario(std::string_view toml_text, const std::string& origin);

/// Reads and parses a scenario file; InputError "PATH: cannot read" when it cannot be read.
Scenario load_scenario(const std::string& path);

/// "TABLE MODE SIZE" naming point `p` in messages and reports: the size flag of a netperf
/// point, "BYTES B" (`bytes`, its reference's message size) of a perftest point.
std::string point_label(const ScenarioPoint& p, uint64_t bytes = 0);

}  // namespace hcasim::scenarios
