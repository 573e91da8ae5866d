#pragma once
/// \file `--trace FILE`: a TraceSink (sim/trace.h) that keeps the spans of a window of simulated
/// time and writes them as Chrome's trace-event JSON (the JSON object form, which
/// ui.perfetto.dev and chrome://tracing open). docs/cli.md "--trace" says what each track and
/// span means.
///
/// Layout: host A is process 1, host B process 2, the IB link process 3. In a host: one thread per
/// application context (its send() and recv() calls, tid 1..), the HCA's send engine (tid 50), the
/// links of its slot (PCIe host->device, the DMA reads in flight, PCIe device->host, or the PCI-X
/// bus and its reads: tids 60..64) and one thread per CPU (tid 100 + CPU). In the IB link: one
/// thread per direction (A->B tid 1, B->A tid 2). Each SDP data message (over IPoIB: each TCP
/// segment) is a flow from the send() that wrote its last byte to the recv() that returned it.
/// With show_work_requests (perftest): each context's ibv_post_send and ibv_poll_cq calls on its
/// thread, and each work request a flow from its post to the poll that retires it (or to the
/// peer's noticing of it).
#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/trace.h"

namespace hcasim::sim {

/// The window of simulated time a trace keeps, relative to the trace's origin (the start of the
/// measured interval: ChromeTrace::set_origin): [start_s, start_s + len_s), seconds.
struct TraceWindow {
  double start_s = 0;
  double len_s = 1e-3;
};

/// Keeps every span that overlaps the window, whole (not clipped at its edges), and writes them.
class ChromeTrace : public TraceSink {
 public:
  /// `hosts`: each host's process name (e.g. "A: netperf on connectx-ddr-pcie1x8").
  ChromeTrace(TraceWindow window, std::array<std::string, 2> hosts);

  /// The origin of the window, ns of simulated time (the measured interval's start). Until it is
  /// set everything is kept; then what lies outside the window is dropped. The first call counts.
  void set_origin(double t_ns);
  /// From now on, shows each ibv_post_send and each ibv_poll_cq that found completions on the
  /// calling context's thread, and each send work request as a flow: to the poll of the CQE
  /// that retires it (the signaled one it is covered by), or with `to_peer` a SEND's or RDMA
  /// WRITE's to the peer's noticing of it (its receive completion polled, or noticed()).
  void show_work_requests(bool to_peer) {
    wrs_ = true;
    wr_to_peer_ = to_peer;
  }
  /// The name of message()'s flows: "SDP message" unless set ("TCP segment" over IPoIB).
  void set_message_name(std::string name) { message_name_ = std::move(name); }

  void cpu_work(int host, int core, model::Activity activity, double start_ns, double dur_ns,
                const std::string& context, std::string_view label) override;
  void poll(int host, int core, bool begin, double t_ns) override;
  void engine(int host, const char* what, double start_ns, double end_ns, uint32_t qpn,
              uint64_t payload_bytes) override;
  void transfer(const Route& route, uint64_t bytes, double start_ns) override;
  void call(int host, const std::string& context, TraceCall call, double start_ns, double end_ns, uint64_t offset,
            uint64_t bytes) override;
  void message(uint64_t offset, uint64_t bytes, double t_ns) override;
  void work_request(int host, uint32_t qpn, uint32_t peer_qpn, uint64_t wr_id, const char* opcode, uint64_t bytes,
                    bool signaled, double start_ns, double end_ns) override;
  void completions(int host, std::span<const sdp::Wc> wcs, double start_ns, double end_ns) override;
  void noticed(int host, uint32_t qpn, double landed_ns, double seen_ns) override;

  /// The trace as Chrome's trace-event JSON object: metadata (process and thread names), the
  /// spans ("X") in order of start, then the flows ("s"/"f"). `other` (key, text value) is
  /// written as "otherData", with the window and the counts added. The same spans give the same
  /// bytes.
  std::string json(const std::vector<std::pair<std::string, std::string>>& other) const;

 private:
  enum class Kind : uint8_t { Cpu, Poll, Engine, Link, Call, Post, CqPoll, Noticed };
  struct Span {
    double start_ns = 0, dur_ns = 0;
    int pid = 0, tid = 0;
    Kind kind = Kind::Cpu;
    std::string name;
    std::string context;  ///< Cpu: the charging context; Post: the opcode
    /// Cpu: the activity and 1 when the span is named by its label; Engine: qpn, payload; Link:
    /// bytes; Call: offset, bytes; Post: qpn, wr_id, bytes, signaled; CqPoll: CQEs; Noticed: qpn
    uint64_t a = 0, b = 0, c = 0, d = 0;
    uint64_t id = 0;  ///< Post, CqPoll, Noticed: what a work request's flow names its ends by
  };
  /// A work request posted and not yet at its flow's end: its post span's id (0: not kept).
  struct Wr {
    uint64_t span_id = 0, wr_id = 0, bytes = 0;
    uint32_t qpn = 0;
    const char* opcode = "";
  };
  struct WrFlow {
    uint64_t from = 0, to = 0;  ///< span ids
    Wr wr;
  };
  struct CallRec {
    Span span;
    uint64_t offset = 0, bytes = 0;
  };
  struct Message {
    uint64_t offset = 0, bytes = 0;
  };
  struct PollState {
    int open = 0;
    double cursor = 0;
  };
  bool in_window(double start_ns, double end_ns) const;
  void add(Span s);
  void name_thread(int pid, int tid, const std::string& name);
  std::pair<int, int> link_thread(const std::string& link);
  /// The thread of `context` on host `host` (tid 1.., in order of appearance).
  int app_thread(int host, const std::string& context);
  /// A call [start_ns, end_ns] of `context` on its thread, moved after its previous call's end:
  /// the span, not yet kept.
  Span app_span(int host, const std::string& context, Kind kind, const char* name, double start_ns, double end_ns);
  /// Keeps span `s` when it overlaps the window, or when `force`; names its thread `context`.
  bool keep(Span s, const std::string& context, bool force);
  /// The flows from the kept post spans of `ending` to span `to` (if kept).
  void end_flows(const std::vector<Wr>& ending, uint64_t to);

  TraceWindow window_;
  std::array<std::string, 2> hosts_;
  std::optional<double> origin_;
  double w0_ = 0, w1_ = 0;  // the window in ns, once the origin is set
  std::vector<Span> spans_;
  std::map<std::pair<int, int>, std::string> threads_;        // (pid, tid) -> name
  std::map<std::pair<int, int>, PollState> polls_;            // (host, core)
  std::unordered_map<const void*, std::pair<int, int>> link_tid_;  // SimGrid link -> (pid, tid)
  std::map<std::pair<int, int>, double> link_free_;           // (pid, tid) -> end of its last span
  std::map<std::pair<int, std::string>, int> app_tid_;        // (host, context) -> tid
  std::map<std::pair<int, int>, double> call_end_;            // (pid, tid) -> end of its last call
  std::vector<CallRec> sends_, recvs_;
  std::deque<Message> messages_;
  uint64_t drop_below_ = 0;                // messages ending below this offset have no written send()
  std::optional<uint64_t> max_offset_;     // the first byte of the first send() after the window
  std::string message_name_ = "SDP message";
  bool wrs_ = false, wr_to_peer_ = false;  // show_work_requests
  uint64_t next_id_ = 0;
  std::map<std::pair<int, uint32_t>, std::deque<Wr>> wr_pending_;    // (host, qpn): awaiting a CQE
  std::map<std::pair<int, uint32_t>, std::deque<Wr>> wr_to_notice_;  // (peer host, peer qpn): awaiting the peer
  std::vector<WrFlow> wr_flows_;
};

}  // namespace hcasim::sim
