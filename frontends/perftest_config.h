#pragma once
/// \file What a perftest front end (frontends/perftest_cli.h) hands the simulator and gets back:
/// plain structs, no SimGrid. sim/perftest_sim.h run_perftest takes a PerftestConfig;
/// frontends/perftest_output.h turns a PerftestResult into perftest's figures.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "frontends/measure.h"
#include "model/fault.h"

namespace hcasim::frontends {

/// The perftest program being simulated.
enum class PerftestTest {
  WriteLat,  ///< ib_write_lat: RDMA WRITE ping-pong polling the last byte of the buffer
  WriteBw,   ///< ib_write_bw: a stream of RDMA WRITEs
  SendBw,    ///< ib_send_bw: a stream of SENDs into posted receives
  SendLat,   ///< ib_send_lat: SEND ping-pong, each side polling its receive CQ (send_lat.c)
  ReadLat,   ///< ib_read_lat: one RDMA READ at a time, the client polling its send CQ (read_lat.c)
  ReadBw,    ///< ib_read_bw: a stream of RDMA READs, at most out_reads outstanding (read_bw.c)
  AtomicLat, ///< ib_atomic_lat: one 8 B atomic at a time (atomic_lat.c)
  AtomicBw,  ///< ib_atomic_bw: a stream of 8 B atomics, at most out_reads outstanding (atomic_bw.c)
};

/// The QPs' transport (-c; perftest_parameters.c connStr): RC, UC on the WRITE and SEND tools,
/// UD on the SEND tools.
enum class PerftestConnection {
  Rc,  ///< reliable connected (perftest's default)
  Uc,  ///< unreliable connected: no ACKs; a send completes once its message has left
  Ud,  ///< unreliable datagram: one packet per message (at most the path MTU), an address
       ///< handle and Q_Key per send, 40 B of GRH room before each receive's data
};

/// "RC", "UC", "UD": perftest's banner's "Connection type".
inline const char* perftest_connection_name(PerftestConnection c) {
  return c == PerftestConnection::Uc ? "UC" : c == PerftestConnection::Ud ? "UD" : "RC";
}

/// The atomic of ib_atomic_lat / ib_atomic_bw (-A; perftest_parameters.c atomicTypesStr).
enum class PerftestAtomic {
  FetchAndAdd,  ///< IBV_WR_ATOMIC_FETCH_AND_ADD (perftest's default)
  CmpAndSwap,   ///< IBV_WR_ATOMIC_CMP_AND_SWP
};

/// What perftest was asked for, in perftest's own terms (already defaulted by the CLI).
struct PerftestConfig {
  PerftestTest test = PerftestTest::WriteLat;
  std::vector<uint64_t> sizes;   ///< message sizes in bytes, run in this order (-s, or -a's sweep)
  uint64_t iterations = 1000;    ///< -n: exchanges (lat) or messages per QP (bw) per size, >= 2 for lat
  uint32_t inline_size = 0;      ///< -I: largest message posted with IBV_SEND_INLINE, bytes
  uint32_t tx_depth = 1;         ///< -t: send WRs outstanding per QP (1 for ib_write_lat)
  uint32_t rx_depth = 512;       ///< -r: receives posted per QP (ib_send_bw)
  uint32_t cq_mod = 1;           ///< -Q: one signaled WR per cq_mod (bw tests; 1 for lat)
  uint32_t num_qps = 1;          ///< -q: QPs (bw tests), messages spread round robin
  PerftestConnection connection = PerftestConnection::Rc;  ///< -c
  /// -o: RDMA READs / atomics outstanding per QP (max_rd_atomic and the peer's
  /// max_dest_rd_atomic); 0 = the device's max_qp_rd_atom, as perftest's ctx_set_out_reads
  /// takes it when -o is not given; above the device's it is the device's (sim::check_perftest).
  uint32_t out_reads = 0;
  PerftestAtomic atomic = PerftestAtomic::FetchAndAdd;  ///< -A (atomic tests)
  uint64_t seed = 1;             ///< seed of the host noise model (--seed)
  model::FaultConfig faults;     ///< --set fault.*: faults on the wire (none by default)
  model::RcRetry retry;          ///< --set qp.*: retry_cnt, timeout, rnr_retry (perftest's defaults)
  bool explain = false;          ///< --explain: measure each size's resources (PerftestPoint::explain)
  /// --trace: record the run's spans (PerftestResult::trace_json) in the window [trace_start_s,
  /// trace_start_s + trace_len_s) of simulated seconds after the client's first post (the
  /// start of the first size's measured iterations).
  bool trace = false;
  double trace_start_s = 0;      ///< --trace-window START, s (>= 0)
  double trace_len_s = 1e-3;     ///< --trace-window LEN, s (> 0); default the first 1 ms
  /// -e: wait for completions in ibv_get_cq_event (a completion channel, an interrupt per
  /// event) instead of busy-polling the CQ (perftest_resources.h ctx_notify_events); not on
  /// the WRITE tools.
  bool use_event = false;
  /// -b: both sides post the same stream at once (perftest's duplex); the bw tools only. Each
  /// side measures its own stream, and perftest reports the sum of the two (PerftestResult::
  /// remote_points).
  bool duplex = false;
  /// -D: perftest's duration mode, seconds; 0 runs `iterations` (-n) instead. The run lasts
  /// duration_s; its first and last margin_s (-f) are not measured (catch_alarm's START,
  /// SAMPLE, STOP_SAMPLE and END states), and the report counts the iterations completed in the
  /// window between them (PerftestPoint::iterations, sample_start_ns, sample_end_ns).
  double duration_s = 0;
  double margin_s = 0;   ///< -f, seconds, 2 margin_s < duration_s
};

/// Raw timestamps of one message size, ns of simulated time, as perftest records them in
/// its tposted[] / tcompleted[] arrays (client side).
struct PerftestPoint {
  uint64_t bytes = 0;                  ///< message size
  uint64_t iterations = 0;             ///< as perftest prints it (#iterations column)
  std::vector<double> tposted_ns;      ///< lat: one per iteration, when the client posts its WRITE;
                                       ///< bw: one per WR posted (all QPs, in posting order)
  std::vector<double> tcompleted_ns;   ///< bw: one per WR completed (the signaled CQE's time for
                                       ///< each WR it covers); empty for lat
  /// With PerftestConfig::explain: the resources' use from the client's first post of this size
  /// to its last completion (bw tools), and for ib_write_lat the one-way time's stages (model/).
  std::optional<ExplainMeasure> explain;
  std::vector<LatencyStage> latency_stages;
  /// -D: the sampled window, ns of simulated time: when catch_alarm entered SAMPLE_STATE
  /// (perftest's tposted[0]) and left it (tcompleted[0]); iterations counts what completed in
  /// it. tposted_ns and tcompleted_ns stay empty.
  double sample_start_ns = 0;
  double sample_end_ns = 0;
};

/// What the simulated perftest run reports, plus simulator statistics.
struct PerftestResult {
  std::vector<PerftestPoint> points;   ///< one per entry of PerftestConfig::sizes, same order
  /// -b: the server's own points (its stream's timestamps, as its run_iter_bw or run_iter_bi
  /// records them), one per size: the report perftest's xchg_bw_reports hands the client.
  /// Empty without -b.
  std::vector<PerftestPoint> remote_points;
  uint32_t max_inline_data = 0;        ///< the QP's max inline data, bytes (perftest's banner)
  uint32_t mtu = 0;                    ///< path MTU, bytes (perftest's banner "Mtu : 2048[B]")
  /// READ and atomic tests: the outstanding reads the run used (banner "Outstand reads"), the
  /// config's out_reads resolved against both HCAs' hca.max_qp_rd_atom; 0 for the other tests.
  uint32_t out_reads = 0;
  uint32_t max_qp_rd_atom = 0;         ///< the smaller hca.max_qp_rd_atom of the two hosts
  bool blueflame = false;              ///< hca.blueflame of the client host
  bool write_combining = false;        ///< host.write_combining of the client host
  uint64_t blueflame_posts = 0;        ///< WRs the client posted through BlueFlame
  uint64_t doorbell_posts = 0;         ///< WRs the client posted with a doorbell
  uint64_t simgrid_activities = 0;     ///< SimGridStats::activities(): comms, sleeps, suspensions
  uint64_t simgrid_time_steps = 0;  ///< SimGridStats::time_steps: instants the engine stopped at
  uint64_t kernel_events = 0;       ///< Scheduler::Stats::events: events fired on hcasim's calendar
  uint64_t context_switches = 0;    ///< Scheduler::Stats::switches: switches into a context
  uint64_t transfers_simgrid = 0;   ///< Scheduler::Stats::transfers_simgrid: transfers timed by SimGrid (sharing a link)
  uint64_t transfers_alone = 0;     ///< Scheduler::Stats::transfers_alone: transfers timed alone (closed form)
  /// Busy time of each SimGrid link of the routes over the whole run, s (TwoHostBed::link_busy_s).
  std::vector<std::pair<std::string, double>> link_busy_s;
  uint64_t max_rss_kb = 0;          ///< the process\'s peak resident set at the end (getrusage), KiB
  double simulated_s = 0;              ///< simulated seconds, all sizes
  double wall_s = 0;                   ///< wall-clock seconds spent in the simulation
  bool faults_configured = false;      ///< any fault.* probability above 0
  model::FaultStats local_faults;      ///< the client's HCA (model/fault.h)
  model::FaultStats remote_faults;     ///< the server's HCA
  /// With PerftestConfig::trace: the trace, Chrome's trace-event JSON (sim/chrome_trace.h).
  std::string trace_json;
};

}  // namespace hcasim::frontends
