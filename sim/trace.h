#pragma once
/// \file Where a simulation reports its modelled steps for `--trace` (sim/chrome_trace.h writes
/// them as Chrome's trace-event JSON). The Scheduler, each SimHost and each Hca hold a TraceSink
/// pointer, null by default: a run without --trace pays one pointer test per hook. Every time is
/// simulated ns since the simulation started.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "model/cpu.h"
#include "sdp/verbs.h"

namespace hcasim::sim {

struct Route;

/// The application calls a trace shows on a context's own track.
enum class TraceCall { Send, Recv };

/// Receives the spans of a simulation as they are modelled. Hosts are 0 (A, local) and 1 (B,
/// remote); cores are the host's 0-based CPU numbers.
class TraceSink {
 public:
  virtual ~TraceSink() = default;
  /// One charge() of CPU work (SimHost::charge) on `core`, as it is slept off (SimHost::flush):
  /// it occupies the core from `start_ns` for `dur_ns`; `context` names the execution context
  /// that charged it (netperf, netserver, the HCA's interrupt handler, ...); `label` what the
  /// work is when its charger named it (SimHost::charge_labelled: a kernel function), else empty.
  virtual void cpu_work(int host, int core, model::Activity activity, double start_ns, double dur_ns,
                        const std::string& context, std::string_view label) = 0;
  /// A context busy-polls on `core` (SimHost::spin) from `t_ns` (begin) or stops at `t_ns`
  /// (end). The core's other work in between is reported by cpu_work.
  virtual void poll(int host, int core, bool begin, double t_ns) = 0;
  /// One step of host `host`'s HCA send engine (Qp::execute_one): `what` (a train's opcode, or
  /// the wait for a WQE to reach the HCA) from `start_ns` to `end_ns`, of QP `qpn`, carrying
  /// `payload_bytes` of message payload.
  virtual void engine(int host, const char* what, double start_ns, double end_ns, uint32_t qpn,
                      uint64_t payload_bytes) = 0;
  /// A transfer of `bytes` over `route` starts at `start_ns` (Scheduler::transfer): each of the
  /// route's links is busy for bytes x its seconds per byte (Route::busy_s).
  virtual void transfer(const Route& route, uint64_t bytes, double start_ns) = 0;
  /// An application call on host `host` by context `context`: from `start_ns` to `end_ns`, the
  /// stream bytes [offset, offset + bytes) it sent or returned.
  virtual void call(int host, const std::string& context, TraceCall call, double start_ns, double end_ns,
                    uint64_t offset, uint64_t bytes) = 0;
  /// An SDP data message carrying the stream bytes [offset, offset + bytes) is posted at `t_ns`.
  /// Over IPoIB: a TCP segment carrying them is handed to IPoIB.
  virtual void message(uint64_t offset, uint64_t bytes, double t_ns) = 0;

  // Verbs (Qp::post_send, Qp::poll_cq): a sink that shows work requests overrides these; the
  // others ignore them.

  /// Host `host`'s QP `qpn` (connected to the peer's `peer_qpn`) accepted a send WR `wr_id` of
  /// `opcode` ("RDMA WRITE", "SEND", ...) and `bytes` of payload, `signaled` or not. The
  /// calling context's ibv_post_send ran from `start_ns` (its WQE build, cpu.user_post, charged
  /// by the caller before the call) to `end_ns` (the doorbell or BlueFlame stores).
  virtual void work_request(int host, uint32_t qpn, uint32_t peer_qpn, uint64_t wr_id, const char* opcode,
                            uint64_t bytes, bool signaled, double start_ns, double end_ns) {
    (void)host, (void)qpn, (void)peer_qpn, (void)wr_id, (void)opcode, (void)bytes, (void)signaled, (void)start_ns,
        (void)end_ns;
  }
  /// The calling context on host `host` polled the completions `wcs` (one or more); the poll
  /// and the CQEs' handling (cpu.user_poll_cq each, charged by the caller) run from `start_ns`
  /// to `end_ns`.
  virtual void completions(int host, std::span<const sdp::Wc> wcs, double start_ns, double end_ns) {
    (void)host, (void)wcs, (void)start_ns, (void)end_ns;
  }
  /// The calling context on host `host` noticed a message the peer wrote into QP `qpn`'s memory
  /// (perftest's latency loop polling a byte): it landed at `landed_ns`, was seen at `seen_ns`.
  virtual void noticed(int host, uint32_t qpn, double landed_ns, double seen_ns) {
    (void)host, (void)qpn, (void)landed_ns, (void)seen_ns;
  }
};

}  // namespace hcasim::sim
