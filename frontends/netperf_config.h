#pragma once
/// \file What a netperf front end (frontends/netperf_cli.h) hands the simulator and gets back:
/// plain structs, no SimGrid. sim/netperf_sim.h run_tcp_stream and sim/ipoib_sim.h
/// run_ipoib_stream take a TcpStreamConfig, already checked by the front end, and never see a
/// flag; frontends/netperf_output.h and qview_output.h print the results.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "frontends/measure.h"
#include "frontends/netperf_demo.h"
#include "model/fault.h"
#include "model/netstack.h"

namespace hcasim::frontends {

/// The netperf tests hcasim simulates (-t): TCP_STREAM (netperf sends), TCP_MAERTS (netserver
/// sends, netperf receives) and TCP_RR (request/response transactions), nettest_bsd.c
/// send_tcp_stream, send_tcp_maerts, send_tcp_rr.
enum class NetperfTest { Stream, Maerts, Rr };

/// What netperf's TCP_STREAM, TCP_MAERTS or TCP_RR asks for, in netperf's own terms.
struct TcpStreamConfig {
  NetperfTest test = NetperfTest::Stream;  ///< -t
  double length_s = 10.0;               ///< -l: test length in simulated seconds (> 0)
  uint64_t length_bytes = 0;            ///< -l -N: send exactly N bytes instead (0 = timed by length_s)
  uint64_t send_size = 0;               ///< -m: bytes per send() call; 0 = local send socket size
  uint64_t recv_size = 0;               ///< -M: bytes per recv() call; 0 = remote recv socket size
  uint64_t local_send_socket = 0;       ///< -s: local socket buffer; 0 = platform default (tcp_wmem)
  uint64_t remote_recv_socket = 0;      ///< -S: remote socket buffer; 0 = platform default (tcp_rmem)
  uint64_t local_recv_socket = 0;       ///< -s ,R: local receive buffer (TCP_RR, TCP_MAERTS); 0 = tcp_rmem
  uint64_t remote_send_socket = 0;      ///< -S S,: remote send buffer (TCP_RR, TCP_MAERTS); 0 = tcp_wmem
  uint64_t request_size = 1;            ///< TCP_RR -r REQ: bytes of each request (netperf's default 1)
  uint64_t response_size = 1;           ///< TCP_RR -r ,RSP: bytes of each response (netperf's default 1)
  uint64_t transactions = 0;            ///< TCP_RR -l -N: exactly N transactions (0 = timed by length_s)
  std::optional<int> local_cpu;         ///< -T lcpu: core of netperf; empty = scheduler's choice
  std::optional<int> remote_cpu;        ///< -T ,rcpu: core of netserver
  bool verify_data = false;             ///< move real bytes and compare them at the receiver
  bool nodelay = false;                 ///< -D: TCP_NODELAY on both sockets (SDP: no Nagle hold)
  uint64_t seed = 1;                    ///< seed of the data pattern (and of any noise)
  /// --steady REL: > 0 measures only the stream's steady state, to the relative precision REL
  /// (util::SteadyState over windows of sim::kSteadyWindowS), within the -l length; 0 = the whole
  /// run, as netperf measures it. SDP only.
  double steady_rel = 0;
  model::FaultConfig faults;            ///< --set fault.*: faults on the wire (none by default)
  model::RcRetry retry;                 ///< --set qp.*: RC retry attributes of the SDP QPs
  bool explain = false;                 ///< --explain: measure the resources (TcpStreamResult::explain)
  /// --trace: record the run's spans (TcpStreamResult::trace_json) in the window [trace_start_s,
  /// trace_start_s + trace_len_s) of simulated seconds after the stream's start.
  bool trace = false;
  double trace_start_s = 0;             ///< --trace-window START, s after the stream's start (>= 0)
  double trace_len_s = 1e-3;            ///< --trace-window LEN, s (> 0); default the first 1 ms
  DemoConfig demo;                      ///< global -D: interim results (frontends/netperf_demo.h)
  /// Time each transaction (TCP_RR) as netperf's histogram does (HIST_timestamp before the
  /// send, after the last recv): TcpStreamResult::latency_us. For the omni selectors
  /// MIN_LATENCY, MAX_LATENCY, MEAN_LATENCY, STDDEV_LATENCY.
  bool keep_latency = false;
};

/// Integer-microsecond latencies of a run's transactions, as netperf 2.7's histogram sums
/// them (netlib.c HIST_add: total, sum, sumsquare, min, max).
struct LatencyStats {
  uint64_t total = 0;
  double sum_us = 0, sumsquare_us2 = 0;
  int64_t min_us = 0, max_us = 0;
  /// HIST_add(time_delta): one transaction of `delta_us`.
  void add(int64_t delta_us) {
    if (delta_us < 0) return;  // netperf counts it as "ridiculous", not in the statistics
    if (total == 0) min_us = max_us = delta_us;
    ++total;
    sum_us += static_cast<double>(delta_us);
    sumsquare_us2 += static_cast<double>(delta_us) * static_cast<double>(delta_us);
    if (delta_us < min_us) min_us = delta_us;
    if (delta_us > max_us) max_us = delta_us;
  }
};

/// What a netperf TCP_STREAM, TCP_MAERTS or TCP_RR run reports, plus simulator statistics. The
/// byte counts and CPU figures are netperf's (local = netperf's host, remote = netserver's);
/// for TCP_MAERTS bytes_sent are netserver's, bytes_received netperf's.
struct TcpStreamResult {
  uint64_t remote_recv_socket = 0;  ///< bytes, as netperf prints (first column)
  uint64_t local_send_socket = 0;   ///< bytes
  uint64_t local_recv_socket = 0;   ///< bytes (TCP_RR, TCP_MAERTS)
  uint64_t remote_send_socket = 0;  ///< bytes (TCP_RR, TCP_MAERTS)
  uint64_t request_size = 0;        ///< TCP_RR: bytes per request
  uint64_t response_size = 0;       ///< TCP_RR: bytes per response
  uint64_t transactions = 0;        ///< TCP_RR: transactions completed in elapsed_s (nummessages)
  uint64_t send_size = 0;           ///< bytes per send() call
  uint64_t recv_size = 0;           ///< bytes per recv() call
  double elapsed_s = 0;             ///< from the first send to the end of the close, simulated s
  bool steady_settled = false;      ///< with TcpStreamConfig::steady_rel: the interval is the steady state (else the whole run)
  uint64_t bytes_sent = 0;          ///< by the sender's send() calls
  uint64_t bytes_received = 0;      ///< by the receiver's recv() calls (netperf's throughput uses this)
  uint64_t send_calls = 0;
  uint64_t recv_calls = 0;
  int local_cpus = 0;               ///< number of CPUs of the sending host
  int remote_cpus = 0;
  double local_util_pct = 0;        ///< system-wide CPU utilisation of the sending host, %
  double remote_util_pct = 0;       ///< of the receiving host, %
  bool data_verified = false;       ///< every byte (or every descriptor) checked at the receiver
  bool crc_computed = false;        ///< verify_data: the CRCs below were computed
  uint32_t sent_crc32 = 0;          ///< zlib crc32 of the bytes the sender's send() calls passed
  uint32_t received_crc32 = 0;      ///< zlib crc32 of the bytes the receiver's recv() calls returned
  /// The bytes the CRCs cover (TCP_RR: the requests netperf sent, the responses it read). A
  /// timed TCP_RR's include the response of the transaction its alarm interrupted, which
  /// bytes_received leaves out as netperf does.
  uint64_t crc_bytes_sent = 0, crc_bytes_received = 0;
  bool faults_configured = false;   ///< any fault.* probability above 0
  model::FaultStats local_faults;   ///< the sending host's HCA (model/fault.h)
  model::FaultStats remote_faults;  ///< the receiving host's HCA
  // Simulator statistics (for --stats; never part of netperf's output).
  uint64_t simgrid_activities = 0;  ///< SimGridStats::activities(): comms, sleeps, suspensions
  uint64_t simgrid_time_steps = 0;  ///< SimGridStats::time_steps: instants the engine stopped at
  uint64_t kernel_events = 0;       ///< Scheduler::Stats::events: events fired on hcasim's calendar
  uint64_t context_switches = 0;    ///< Scheduler::Stats::switches: switches into a context
  uint64_t transfers_simgrid = 0;   ///< Scheduler::Stats::transfers_simgrid: transfers timed by SimGrid (sharing a link)
  uint64_t transfers_alone = 0;     ///< Scheduler::Stats::transfers_alone: transfers timed alone (closed form)
  /// Busy time of each SimGrid link of the routes over the measured interval (from the start of
  /// the stream to the remote close, netperf's elapsed time), s (TwoHostBed::link_busy_s).
  std::vector<std::pair<std::string, double>> link_busy_s;
  uint64_t max_rss_kb = 0;          ///< the process\'s peak resident set at the end (getrusage), KiB
  uint64_t sdp_messages = 0;        ///< SDP messages (BSDH) sent by both sides
  double wall_s = 0;                ///< wall-clock seconds spent in the simulation
  std::vector<CoreProfile> local_profile;   ///< per core of the sending host
  std::vector<CoreProfile> remote_profile;  ///< per core of the receiving host
  /// With TcpStreamConfig::explain: the resources' use over the measured interval (the
  /// interval and the CPUs are netperf's: elapsed_s and the profiles above, timer included).
  std::optional<ExplainMeasure> explain;
  /// With TcpStreamConfig::trace: the trace, Chrome's trace-event JSON (sim/chrome_trace.h).
  std::string trace_json;
  /// With TcpStreamConfig::demo: the interim results, in order (frontends/netperf_demo.h).
  std::vector<InterimResult> interim;
  /// With TcpStreamConfig::keep_latency (TCP_RR): the transactions' latencies, us.
  LatencyStats latency_us;
};

/// Calls and time per kernel function (model::KernelFn) on one core.
struct KernelProfile {
  int core = 0;
  std::array<double, model::kKernelFnCount> ns{};     ///< ns of simulated time
  std::array<double, model::kKernelFnCount> calls{};  ///< times the function ran
};

/// A run of netperf TCP_STREAM over IPoIB: netperf's figures and each host's per-function
/// profile (one entry per CPU of the host).
struct IpoibStreamResult {
  TcpStreamResult stream;                     ///< as the SDP path reports it
  std::vector<KernelProfile> local_kernel;    ///< sending host, every CPU
  std::vector<KernelProfile> remote_kernel;   ///< receiving host, every CPU
  model::KernelNaming local_naming, remote_naming;  ///< each host's names of its rows (kernel_fn_name)
  uint32_t mss = 0;                           ///< the segment size the sender used last, B
  uint32_t mss_first = 0;                     ///< the segment size after the SYN-ACK (half its window at most), B
  /// A socket buffer at the end of the run: its size, B, and whether Linux tuned it (netperf did
  /// not set it with -s or -S; a buffer set is locked and keeps the size netperf prints).
  struct SocketEnd {
    uint64_t bytes = 0;
    bool tuned = false;
  };
  /// The four socket buffers at the end of the run, as netperf 2.7 reads them on Linux for its
  /// *_SIZE_END selectors (getsockopt SO_SNDBUF and SO_RCVBUF of netperf's socket after its loop
  /// and of netserver's after its own: nettest_omni.c send_omni_inner, recv_omni). Linux tunes
  /// every buffer netperf did not set, from the size netperf prints (TcpStreamResult's, taken at
  /// socket creation), whichever way the data went: tcp_init_buffer_space at establishment, then
  /// the writer's and the reader's growth (model/netstack.h).
  SocketEnd local_send_end, local_recv_end, remote_send_end, remote_recv_end;
  uint64_t segments = 0;                      ///< data segments sent
  uint64_t acks = 0;                          ///< ACKs the receiver sent
  uint64_t local_interrupts = 0, remote_interrupts = 0;
};

}  // namespace hcasim::frontends
