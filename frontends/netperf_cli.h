#pragma once
/// \file Command line of `hcasim netperf`: netperf 2.4's own flags plus hcasim's long options.
///
///     hcasim netperf [hcasim long options and netperf global options, any order]
///                    [-- test options]
///
/// The netperf flags are read as netperf 2.4.3 reads them (netsh.c scan_cmd_line for the
/// global options, nettest_bsd.c scan_sockets_args for the test options): getopt style, so
/// values may be attached (-l60, -P0, -T0,0, -tTCP_STREAM) or separate (-l 60), flags without
/// a value may be grouped (-cC), and -c/-C take an optional CPU rate only from the next word.
/// Two-value options follow netperf's break_args(): "a" sets both values, "a," only the first,
/// ",b" only the second, "a,b" both.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "frontends/netperf_config.h"
#include "model/error.h"

namespace hcasim::frontends {

/// Platform used when --platform is not given (scenarios/platforms/NAME.toml).
inline constexpr const char* kDefaultPlatform = "connectx-ddr-pcie1x8";

/// Everything `hcasim netperf` was asked for. Sizes are in bytes; 0 means "not given, let the
/// simulation take the platform default" exactly as netperf passes 0 to the socket layer.
struct NetperfOptions {
  // --- netperf global options (netsh.c) -------------------------------------------------
  std::string test = "TCP_STREAM";      ///< -t: TCP_STREAM, TCP_MAERTS or TCP_RR (upper case)
  double length_s = 10.0;               ///< -l, seconds (> 0); netperf's default is 10 s
  uint64_t length_bytes = 0;            ///< -l -N: stop after N bytes instead (0 = timed); only
                                        ///< when parse_netperf_args allows a byte count
  bool local_cpu = false;               ///< -c: measure and print local CPU utilisation
  bool remote_cpu = false;              ///< -C: same for the remote host
  std::optional<double> local_cpu_rate;   ///< -c RATE (accepted, unused: nothing to calibrate)
  std::optional<double> remote_cpu_rate;  ///< -C RATE (accepted, unused)
  bool print_headers = true;            ///< -P 0|1 (netperf's default is 1)
  bool cpu_binding_requested = false;   ///< any -T given (netperf adds " : cpu bind" to the banner)
  std::optional<int> local_cpu_bind;    ///< -T lcpu
  std::optional<int> remote_cpu_bind;   ///< -T ,rcpu
  int verbosity = 1;                    ///< -v N (netperf's default is 1)
  std::string host = "localhost";       ///< -H host (only printed in the banner)
  char format = 'm';                    ///< -f: k m g (10^3.. bits/s) or K M G (2^10.. bytes/s)
  bool help = false;                    ///< -h (global or test option): print the usage, run nothing
  bool format_given = false;            ///< -f was given (netperf 2.7's TCP_RR selectors default to 'x')
  /// -D [INTERVAL[,UNITS]]: demo mode, interim results while the test runs (netsh.c 2.4.3:
  /// the optional value is the next word when it starts with a digit; break_args_explicit).
  bool demo = false;
  double demo_interval_s = 1.0;         ///< -D INTERVAL, seconds (> 0); netperf's default 1
  uint64_t demo_units = 0;              ///< -D ,UNITS: the first guess of units per interval; 0 = the test's

  // --- netperf TCP_STREAM test options, after "--" (nettest_bsd.c) ----------------------
  uint64_t send_size = 0;               ///< -m: bytes per send(); 0 = local send socket size
  uint64_t recv_size = 0;               ///< -M: bytes per recv(); 0 = remote recv socket size
  uint64_t local_send_socket = 0;       ///< -s send[,recv]: first value (local SO_SNDBUF)
  uint64_t local_recv_socket = 0;       ///< -s send[,recv]: second value (local SO_RCVBUF)
  uint64_t remote_send_socket = 0;      ///< -S send[,recv]: first value (remote SO_SNDBUF)
  uint64_t remote_recv_socket = 0;      ///< -S send[,recv]: second value (remote SO_RCVBUF)
  std::optional<std::string> request_size;  ///< -r as written (TCP_STREAM and TCP_MAERTS ignore it)
  uint64_t rr_request = 1;              ///< -r REQ: TCP_RR request bytes (netperf's default 1)
  uint64_t rr_response = 1;             ///< -r ,RSP: TCP_RR response bytes (netperf's default 1)
  bool nodelay = false;                 ///< -D: TCP_NODELAY on both data sockets
  /// -P port[,port]: the data connection's local and remote ports (scan_sockets_args: strings
  /// for getaddrinfo; "0" lets the system choose). They change nothing in the simulation; the
  /// banner and the SOURCE_PORT / DEST_PORT selectors print them.
  std::string local_data_port = "0", remote_data_port = "0";
  /// -o / -O / -k [LIST]: netperf 2.7's output selectors (nettest_omni.c scan_omni_args: CSV,
  /// HUMAN, KEYVAL); Classic = netperf 2.4.3's tables. The last of them wins, as in netperf.
  enum class OutputMode { Classic, Csv, Human, Keyval };
  OutputMode output_mode = OutputMode::Classic;
  /// The selector list or file after -o/-O/-k (empty: the test's default list,
  /// set_output_list_by_test), already checked by parse_netperf_args.
  std::string output_selection;
  std::vector<std::string> test_words;  ///< the words after "--", as given (for reports)

  // --- hcasim long options --------------------------------------------------------------
  std::string platform = kDefaultPlatform;     ///< --platform NAME|FILE (local host)
  /// --transport sdp|ipoib: netperf over SDP (libsdp preloaded, the default) or over IPoIB
  /// (the Linux TCP/IP stack on the ib0 interface, sim/ipoib_sim.h)
  std::string transport = "sdp";
  std::optional<std::string> remote_platform;  ///< --remote-platform; empty = same as --platform
  std::vector<std::string> sets;        ///< --set section.key=value, in order, for both hosts
  bool stats = false;                   ///< --stats: one statistics line on stderr
  bool profile = false;                 ///< --profile: per-CPU flat profile of both hosts on
                                        ///< stdout after netperf's output (not in the CSV)
  std::optional<std::string> csv_path;  ///< --csv PATH
  bool json = false;                    ///< --json: the figures as JSON on stdout instead of
                                        ///< netperf's text (frontends/json_output.h)
  bool verify_data = false;             ///< --verify-data
  bool explain = false;                 ///< --explain: what bounds the run, after netperf's output
                                        ///< (frontends/explain.h; in --json an "explain" object)
  uint64_t seed = 1;                    ///< --seed N
  /// --trace FILE: the run's spans as Chrome's trace-event JSON, written to FILE (docs/cli.md)
  std::optional<std::string> trace_path;
  /// --trace-window START,LEN: the window of the trace, simulated seconds after the stream's
  /// start (START >= 0, LEN > 0); empty = the first 1 ms
  std::optional<std::pair<double, double>> trace_window;
  /// --steady REL: measure the stream's steady state to the relative precision REL (0 < REL <
  /// 0.1), within -l (TcpStreamConfig::steady_rel); 0 = the whole run
  double steady_rel = 0;

  /// Lines for stderr, each "hcasim: note: ...", about flags accepted but ignored or
  /// reinterpreted (-H, -4, -6, -i/-I, "---m"). The -r note needs the simulated send size and
  /// is made by request_size_note() after the run.
  std::vector<std::string> notes;
};

/// Parses the words after `hcasim netperf` (a leading word "netperf" is skipped, so a pasted
/// netperf command line works). Throws InputError with one line naming the flag at fault, e.g.
/// "unknown option -Z", "-l: 'abc' is not a number", "-m: bad size '12Q' (...)",
/// "-t UDP_STREAM: hcasim simulates TCP_STREAM, TCP_MAERTS and TCP_RR", "-l: missing value",
/// "--profile: takes no value (got '5')", "-r 0: a TCP_RR request of 0 bytes moves nothing".
/// `allow_byte_count`: accept netperf's negative -l (a byte count, for the wall-clock
/// hcasim-sdp-client, and `hcasim netperf`, whose sender then sends exactly that many bytes).
NetperfOptions parse_netperf_args(const std::vector<std::string>& args, bool allow_byte_count = false);

/// Throws InputError "-t TEST: WHAT takes TCP_STREAM runs only" unless options.test is
/// TCP_STREAM: for the readers of netperf command lines that compare or sweep a stream's
/// throughput (scenarios, sweeps) and the wall-clock hcasim-sdp-client.
void require_stream_test(const NetperfOptions& options, std::string_view what);

/// `--trace-window START,LEN` as (START, LEN), seconds: two numbers, START >= 0, LEN > 0, both
/// finite. Throws InputError naming the flag otherwise, and `origin` (what START counts from).
/// (perftest's front end reads it too.)
std::pair<double, double> parse_trace_window(const std::string& text, std::string_view origin = "the stream's start");

/// The simulation's view of the options (sim/netperf_sim.h): length (seconds or bytes), sizes,
/// CPU binding, data verification, seed, and the --set fault.* / qp.* assignments.
TcpStreamConfig to_tcp_stream_config(const NetperfOptions& options);

/// The netperf option that sets TcpStreamConfig field `field` (frontends/config_error.h):
/// local_cpu and remote_cpu "-T", local_send_socket "-s", remote_recv_socket "-S", transport
/// "--transport ipoib"; another field keeps its own name.
std::string netperf_option(const std::string& field);

/// About how many bytes of real data --verify-data holds at once (0 without it): netperf's send
/// ring (two -m buffers once -m is above the send socket, nettest_bsd.c send_width) and the
/// receive buffer (-M): 2 x -m + -M, as measured (-m 1G: 2.0 GiB of RSS, and the run needs
/// between 2.2 and 2.4 GB of ulimit -v; -m 1G -M 1G: 3.0 GiB). Sizes taken from the socket (no
/// -m, no -M) are a few MB at most and not counted. TCP_RR: a request and a response buffer
/// on each host, 2 x (REQ + RSP).
uint64_t verify_data_bytes(const NetperfOptions& options);

/// Throws InputError "--verify-data: -m M and -M N need about X GiB of real bytes (...), more
/// than ..." when verify_data_bytes(options) is above the address space this process has left
/// under RLIMIT_AS (ulimit -v) or above the machine's physical memory: found before the
/// simulation, where an allocation that fails inside it aborted the process (SIGABRT, nothing
/// printed).
void check_verify_data_memory(const NetperfOptions& options);

/// The note for a given -r, or an empty string when -r was not given or the test is TCP_RR:
/// TCP_STREAM and TCP_MAERTS ignore -r; TCP_STREAM
/// sends `send_size` bytes per call (netperf 2.4.3 nettest_bsd.c send_tcp_stream: when -m is
/// absent, send_size = the local send socket size). `send_size` is the simulated one.
std::string request_size_note(const NetperfOptions& options, uint64_t send_size);

}  // namespace hcasim::frontends
