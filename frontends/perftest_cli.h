#pragma once
/// \file Command line of `hcasim ib_write_lat|ib_write_bw|ib_send_bw|ib_send_lat|ib_read_lat|
/// ib_read_bw|ib_atomic_lat|ib_atomic_bw`: perftest's own flags plus hcasim's long options, in any
/// order.
///
///     hcasim ib_write_lat [hcasim long options and perftest flags, any order] [server-host]
///
/// The perftest flags are read as perftest 4.5 reads them (Debian's perftest 4.5+0.17, which
/// reports "Version: 6.06"; src/perftest_parameters.c parser(): getopt_long with the option
/// string "w:y:p:d:i:m:s:n:t:u:S:x:c:q:I:o:M:r:Q:A:l:D:f:B:T:L:E:J:j:K:k:X:W:aFegzRvhbNVCHUOZP"
/// and its long_options table). So values may be attached (-s64, -n1000, --size=64) or separate
/// (-s 64, --size 64), the next word is a value even when it starts with '-', flags without a
/// value group (-aF), long options may be abbreviated to a unique prefix (--iter=100), the server
/// host may stand anywhere (GNU getopt permutes) and "--" ends the options. A later flag
/// overrides an earlier one (perftest 4.5 has no duplicate check). Value checks and limits are
/// perftest's (CHECK_VALUE* macros and the MIN_* / MAX_* constants of perftest_parameters.h),
/// confirmed against the installed binary's messages.
///
/// hcasim's long options (--platform, --remote-platform, --set, --seed, --csv, --stats,
/// --columns) share getopt_long's table with perftest's, so they too may be abbreviated to a
/// unique prefix and take "=VALUE" or the next word.
///
/// A leading word naming the tool ("ib_write_lat" or a path ending in it) is skipped, and so is
/// a leading "taskset [-a] [-c] CPUS" before it, so that a pasted command line works.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "frontends/netperf_cli.h"  // kDefaultPlatform
#include "frontends/perftest_config.h"
#include "model/error.h"

namespace hcasim::frontends {

// --- perftest 4.5 constants (src/perftest_parameters.h) -----------------------------------------
inline constexpr uint64_t kPerftestDefSizeLat = 2;       ///< DEF_SIZE_LAT, bytes
inline constexpr uint64_t kPerftestDefSizeBw = 65536;    ///< DEF_SIZE_BW, bytes
inline constexpr uint64_t kPerftestDefIters = 1000;      ///< DEF_ITERS (lat tests, ib_send_bw)
inline constexpr uint64_t kPerftestDefItersWriteBw = 5000;  ///< DEF_ITERS_WB (ib_write_bw)
inline constexpr uint64_t kPerftestMinIters = 5;         ///< MIN_ITER
inline constexpr uint64_t kPerftestMaxIters = 100000000; ///< MAX_ITER
inline constexpr uint64_t kPerftestMaxSizeArg = 2147483647;  ///< -s limit: UINT_MAX / 2 (parser)
inline constexpr uint32_t kPerftestDefTxLat = 1;         ///< DEF_TX_LAT
inline constexpr uint32_t kPerftestDefTxBw = 128;        ///< DEF_TX_BW
inline constexpr uint32_t kPerftestMaxTx = 15000;        ///< MAX_TX (MIN_TX is 1)
inline constexpr uint32_t kPerftestDefRxSend = 512;      ///< DEF_RX_SEND
inline constexpr uint32_t kPerftestUcMaxRx = 16000;      ///< UC_MAX_RX (perftest_parameters.h)
inline constexpr uint32_t kPerftestDefRxRdma = 1;        ///< DEF_RX_RDMA
inline constexpr uint32_t kPerftestMaxRx = 16384;        ///< MAX_RX (MIN_RX is 1)
inline constexpr uint32_t kPerftestDefCqMod = 100;       ///< DEF_CQ_MOD
inline constexpr uint32_t kPerftestMaxCqMod = 1024;      ///< MAX_CQ_MOD (MIN_CQ_MOD is 1)
inline constexpr uint64_t kPerftestCqModSizeLimit = 8192;  ///< MSG_SIZE_CQ_MOD_LIMIT, bytes
inline constexpr uint32_t kPerftestMaxQps = 16384;       ///< MAX_QP_NUM (MIN_QP_NUM is 1)
inline constexpr uint32_t kPerftestMaxInline = 912;      ///< MAX_INLINE (-I range 0..912)
inline constexpr uint32_t kPerftestDefInlineWrite = 220; ///< DEF_INLINE_WRITE (write_lat, RC)
inline constexpr uint32_t kPerftestDefInlineSend = 236;  ///< DEF_INLINE_SEND_RC_UC_XRC (send_lat, RC)
inline constexpr uint32_t kPerftestDefInlineSendUd = 188;  ///< DEF_INLINE_SEND_UD (send_lat, UD)
inline constexpr uint64_t kPerftestDefSizeAtomic = 8;    ///< DEF_SIZE_ATOMIC, bytes (the only size)
inline constexpr int kPerftestMaxGidIndex = 64;          ///< MAX_GID_IX (MIN_GID_IX is 0)
inline constexpr int kPerftestDefPort = 18515;           ///< DEF_PORT (TCP port of -p)
inline constexpr uint64_t kPerftestNoPeakIters = 20000;  ///< above this many iterations a bw
                                                         ///< test skips the peak (force_dependecies)
inline constexpr int kPerftestDefDuration = 5;           ///< DEF_DURATION, s (what -f is checked
                                                         ///< against without -D)
inline constexpr int kPerftestAllMaxLog2 = 23;           ///< -a sweeps 2^1 .. 2^23 B (write_lat.c,
                                                         ///< write_bw.c, send_bw.c: i = 1..23)

/// Which results table is printed (hcasim's --columns).
enum class PerftestColumns {
  Classic,   ///< perftest 2.x: ib_write_lat's five columns #bytes #iterations t_min t_max
             ///< t_typical; the bw tools' rows in 2.x's REPORT_FMT (the default)
  Extended,  ///< perftest 4.5: adds t_avg, t_stdev, 99% and 99.9% percentiles (lat); bw rows in
             ///< 4.5's REPORT_FMT
};

/// Everything `hcasim ib_write_lat|ib_write_bw|ib_send_bw` was asked for. Defaults are
/// perftest's for the tool (parse_perftest_args fills them); the values perftest derives from
/// them (depths capped by -n, CQ moderation, inline size) come from to_perftest_config.
struct PerftestOptions {
  PerftestTest test = PerftestTest::WriteLat;

  // --- perftest flags -------------------------------------------------------------------
  bool all = false;                   ///< -a: sizes 2..2^23 B (ignores -s)
  uint64_t size = kPerftestDefSizeLat;  ///< -s, bytes (default DEF_SIZE_LAT / DEF_SIZE_BW)
  bool size_given = false;            ///< -s was given
  uint64_t iterations = kPerftestDefIters;  ///< -n (default 1000; ib_write_bw 5000)
  bool cpu_freq_f = false;            ///< -F: no cpufreq warning (none is printed anyway)
  std::string device;  ///< -d: only printed in the banner ("Device : ..."); empty: the local platform's hca.device, the first device as perftest picks it
  int ib_port = 1;                    ///< -i (the simulated HCA has one port)
  std::optional<uint32_t> inline_size;  ///< -I, bytes; empty = perftest's default for the tool
  uint32_t num_qps = 1;               ///< -q (bw tools)
  bool report_gbits = false;          ///< --report_gbits (bw tools): Gb/s instead of MB/s
  std::optional<uint32_t> tx_depth;   ///< -t; empty = DEF_TX_LAT / DEF_TX_BW
  std::optional<uint32_t> rx_depth;   ///< -r (ib_send_bw; the write tools accept only 1)
  std::optional<uint32_t> cq_mod;     ///< -Q (bw tools)
  bool no_peak = false;               ///< -N (bw tools): no peak bandwidth
  bool use_event = false;             ///< -e: completion events instead of polling (not WRITE)
  bool report_cycles = false;         ///< -C (latency tools): the report in cycles (host.clock)
  bool report_unsorted = false;       ///< -U (latency tools): every sample, in the order measured
  bool report_histogram = false;      ///< -H (latency tools): the sorted samples
  std::optional<int> mtu;             ///< -m as given (applied to the path MTU by perftest_main)
  /// -o (READ and atomic tests): outstanding reads as given; 0 or below (and no -o) is the
  /// device's max_qp_rd_atom (perftest_parameters.c ctx_set_out_reads)
  std::optional<long> out_reads;
  PerftestAtomic atomic = PerftestAtomic::FetchAndAdd;  ///< -A (atomic tests)
  /// -c RC|UC|UD: the QPs' transport (UC on the WRITE and SEND tests, UD on the SEND tests, as
  /// perftest allows them)
  PerftestConnection connection = PerftestConnection::Rc;
  bool rdma_cm = false;               ///< -R: only the banner shows it ("rdma_cm QPs : ON")
  bool comm_rdma_cm = false;          ///< -z: only the banner shows it ("Data ex. method")
  std::optional<int> gid_index;       ///< -x: only printed (banner line and GID lines)
  int tcp_port = kPerftestDefPort;    ///< -p (no TCP connection is simulated)
  std::optional<std::string> server;  ///< the server host (the client form); not used
  bool duplex = false;                ///< -b (bw tools): both sides send (perftest's duplex)
  /// -D: seconds of perftest's duration mode (CHECK_VALUE_POSITIVE, an int); empty: iteration
  /// mode (-n)
  std::optional<int> duration;
  /// -f: the margin in seconds (CHECK_VALUE_NON_NEGATIVE, an int); empty: perftest's
  /// DEF_INIT_MARGIN, which force_dependecies makes -D / 4 (perftest_margin)
  std::optional<int> margin;
  bool iterations_given = false;      ///< -n was given (duration mode ignores it)
  bool help = false;                  ///< -h / --help
  bool version = false;               ///< -V / --version

  // --- hcasim long options --------------------------------------------------------------
  std::string platform = kDefaultPlatform;     ///< --platform NAME|FILE (local host)
  std::optional<std::string> remote_platform;  ///< --remote-platform; empty = --platform
  std::vector<std::string> sets;      ///< --set section.key=value, in order, for both hosts
  uint64_t seed = 1;                  ///< --seed N
  std::optional<std::string> csv_path;  ///< --csv PATH
  bool stats = false;                 ///< --stats: one statistics line on stderr
  bool json = false;                  ///< --json: the figures as JSON on stdout instead of
                                      ///< perftest's report (frontends/json_output.h)
  bool explain = false;               ///< --explain: what bounds each size (frontends/explain.h)
  PerftestColumns columns = PerftestColumns::Classic;  ///< --columns classic|extended
  /// --trace FILE: the run's spans as Chrome's trace-event JSON, written to FILE (docs/cli.md)
  std::optional<std::string> trace_path;
  /// --trace-window START,LEN: the trace's window, simulated seconds after the client's first
  /// post (kTraceOrigin); empty: the first millisecond
  std::optional<std::pair<double, double>> trace_window;

  /// Lines for stderr, each "hcasim: note: ...", about flags accepted but ignored or read in
  /// perftest's lenient way (e.g. "-s 64k" is 64 B for perftest).
  std::vector<std::string> notes;
};

/// What a perftest trace's window counts from (--trace-window's error names it).
inline constexpr std::string_view kTraceOrigin = "the client's first post";

/// The program name of `test`: "ib_write_lat", "ib_write_bw", "ib_send_bw", "ib_send_lat",
/// "ib_read_lat", "ib_read_bw", "ib_atomic_lat" or "ib_atomic_bw".
std::string_view perftest_tool_name(PerftestTest test);

/// The test `tool` names (perftest_tool_name's inverse), or nothing.
std::optional<PerftestTest> perftest_test_named(std::string_view tool);

/// Every tool, in the order hcasim's help lists them.
const std::vector<PerftestTest>& perftest_tests();

/// True for the bandwidth tools (perftest's tst == BW).
bool perftest_is_bw(PerftestTest test);

/// True for the SEND tools (perftest's verb == SEND).
bool perftest_is_send(PerftestTest test);

/// True for the RDMA READ and atomic tools (perftest's verb == READ or ATOMIC): no inline data,
/// -o outstanding reads, RC only.
bool perftest_is_read_or_atomic(PerftestTest test);

/// True for ib_atomic_lat and ib_atomic_bw (perftest's verb == ATOMIC).
bool perftest_is_atomic(PerftestTest test);

/// print_report_lat's rtt_factor: 1 for READ and atomics (their latency is the whole round trip
/// the requester sees), 2 for WRITE and SEND (a ping-pong's deltas are two one-way trips):
/// perftest_parameters.c print_report_lat, `rtt_factor = (verb == READ || verb == ATOMIC) ? 1 : 2`.
int perftest_rtt_factor(PerftestTest test);

/// Parses the words after `hcasim TOOL`. Throws InputError with one line naming the flag at
/// fault, e.g. "-n: 4 is out of range (perftest: 5..100000000)", "-z: ...", "-D: 0 is not a
/// positive number of seconds (perftest: Duration period must be positive)", "unknown option
/// --frobnicate", "--si: ambiguous option (--sig_before, --size)", "-s: missing value".
PerftestOptions parse_perftest_args(PerftestTest test, const std::vector<std::string>& args);

/// The sizes of -a: 2^1 .. 2^23 bytes (perftest's RUN_ALL loop `for (i = 1; i < 24; ++i)`
/// size = 1 << i, in write_lat.c, write_bw.c and send_bw.c main()).
std::vector<uint64_t> perftest_all_sizes();

/// The simulation's view of the options, with the values perftest 4.5 derives
/// (perftest_parameters.c force_dependecies and ctx_set_max_inline):
/// - sizes: -a's sweep, else {-s};
/// - tx_depth: -t or DEF_TX_LAT (1) / DEF_TX_BW (128), capped at -n in iteration mode;
/// - rx_depth: ib_send_bw: -r or DEF_RX_SEND (512), capped at -n in iteration mode, then made
///   even (the "odd rx_depth" workaround, not with -a); the write tools: DEF_RX_RDMA (1);
/// - duplex: -b; duration_s and margin_s: -D and perftest_margin (0 without -D);
/// - cq_mod: latency tools 1 (DEF_CQ_MOD capped at the tx depth of 1); bw tools: -Q or
///   DEF_CQ_MOD (100), 1 when the size is above MSG_SIZE_CQ_MOD_LIMIT (8192 B) without -Q and
///   without -a, then capped at the tx depth;
/// - inline_size: -I, else 220 B (DEF_INLINE_WRITE) for ib_write_lat, 236 B
///   (DEF_INLINE_SEND_RC_UC_XRC) for ib_send_lat, 0 for the bw tools (a recognised Mellanox
///   device, RC); 0 for READ and atomics (force_dependecies);
/// - rx_depth for ib_send_lat as for ib_send_bw (force_dependecies caps it at -n for every SEND
///   test); out_reads: -o, 0 when not given or not above 0 (the device's, resolved by the
///   simulation against hca.max_qp_rd_atom); atomic: -A;
/// - num_qps: -q (1 for the latency tools); iterations: -n; seed: --seed.
PerftestConfig to_perftest_config(const PerftestOptions& options);

/// The perftest option that sets PerftestConfig field `field` (frontends/config_error.h):
/// sizes "-s", tx_depth "-t", rx_depth "-r", inline_size "-I", iterations "-n", num_qps "-q",
/// cq_mod "-Q"; another field keeps its own name.
std::string perftest_option(const std::string& field);

/// The margin of a duration run, seconds: -f, else -D / 4 in integer arithmetic
/// (force_dependecies: DEF_INIT_MARGIN becomes duration / 4), so -D 1 to -D 3 measure the whole
/// run; without -D, -f as given (0 without it).
int perftest_margin(const PerftestOptions& options);

/// Whether perftest sums both sides' reports (print_full_bw_report with the remote report): -b,
/// except ib_send_bw in duration mode, where send_bw.c skips xchg_bw_reports and
/// print_report_bw prints the side's own report.
bool perftest_sums_both_sides(const PerftestOptions& options);

/// Whether perftest skips the peak bandwidth: -N, or more than 20000 iterations in a bw test
/// (perftest 4.5 force_dependecies sets noPeak silently; its -h says "default with peak up to
/// iters=20000"), or duration mode (-D: force_dependecies sets noPeak). Always false for the
/// latency tools.
bool perftest_no_peak(const PerftestOptions& options);

/// The path MTU perftest uses, as perftest_parameters.c set_mtu() picks it: the port's active
/// MTU (`active_mtu`, bytes) without -m or with -m 0; -m when it is one of 256 512 1024 2048
/// 4096 and not above the active MTU; else the active MTU. When -m is above the active MTU,
/// `note` (when not null) receives an "hcasim: note: ..." line saying so (perftest prints
/// "Requested mtu is higher than active mtu"); otherwise it is cleared (a -m that is no IB MTU
/// was noted by parse_perftest_args).
int perftest_path_mtu(const PerftestOptions& options, int active_mtu, std::string* note);

/// -c UD: the sizes of `config` fitted to the path MTU (`path_mtu`, bytes), a UD message being
/// one packet, as perftest does it: -s above the MTU becomes the MTU (perftest_parameters.c
/// ctx_check_and_set... "user_param->size = MTU_SIZE"), -a runs 2 B .. the MTU (send_lat.c,
/// send_bw.c: size_max_pow). Returns the note to print (-a, whose sizes stop at the MTU), or "".
/// Other connections: unchanged, "".
std::string perftest_ud_sizes(const PerftestOptions& options, PerftestConfig& config, uint64_t path_mtu);

/// hcasim's help for the perftest tools (-h / --help).
std::string perftest_usage(PerftestTest test);

}  // namespace hcasim::frontends
