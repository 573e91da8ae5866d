// --trace: the spans of a window of simulated time as Chrome's trace-event JSON (sim/chrome_trace.h).
#include "sim/chrome_trace.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/kernel.h"

namespace hcasim::sim {

namespace {
using ojson = nlohmann::ordered_json;

constexpr int kLinkPid = 3;      // the IB link's process
constexpr int kEngineTid = 50;   // a host's HCA send engine
constexpr int kCoreTid0 = 100;   // a host's CPU 0

/// The trace-event format's time unit: microseconds, as a double.
double us(double ns) { return ns / 1000.0; }
}  // namespace

ChromeTrace::ChromeTrace(TraceWindow window, std::array<std::string, 2> hosts)
    : window_(window), hosts_(std::move(hosts)) {}

bool ChromeTrace::in_window(double start_ns, double end_ns) const {
  if (!origin_) return true;  // kept until the window is known
  if (end_ns > start_ns) return start_ns < w1_ && end_ns > w0_;
  return start_ns >= w0_ && start_ns < w1_;
}

void ChromeTrace::set_origin(double t_ns) {
  if (origin_) return;
  origin_ = t_ns;
  w0_ = t_ns + window_.start_s * 1e9;
  w1_ = w0_ + window_.len_s * 1e9;
  std::erase_if(spans_, [&](const Span& s) { return !in_window(s.start_ns, s.start_ns + s.dur_ns); });
  std::erase_if(sends_, [&](const CallRec& c) {
    const bool before = c.span.start_ns + c.span.dur_ns <= w0_;
    if (before) drop_below_ = std::max(drop_below_, c.offset + c.bytes);
    return !in_window(c.span.start_ns, c.span.start_ns + c.span.dur_ns);
  });
  std::erase_if(recvs_, [&](const CallRec& c) { return c.span.start_ns + c.span.dur_ns <= w0_; });
  std::erase_if(messages_, [&](const Message& m) { return m.offset + m.bytes <= drop_below_; });
}

void ChromeTrace::name_thread(int pid, int tid, const std::string& name) { threads_.emplace(std::pair{pid, tid}, name); }

void ChromeTrace::add(Span s) {
  if (!in_window(s.start_ns, s.start_ns + s.dur_ns)) return;
  spans_.push_back(std::move(s));
}

void ChromeTrace::cpu_work(int host, int core, model::Activity activity, double start_ns, double dur_ns,
                           const std::string& context, std::string_view label) {
  const int pid = host + 1;
  // A busy-poll on this core yields to this work: the poll's span so far ends where it starts.
  if (auto it = polls_.find({host, core}); it != polls_.end() && it->second.open > 0) {
    PollState& p = it->second;
    if (start_ns > p.cursor) add({p.cursor, start_ns - p.cursor, pid, kCoreTid0 + core, Kind::Poll, "poll", {}, 0, 0});
    p.cursor = std::max(p.cursor, start_ns + dur_ns);
  }
  if (!in_window(start_ns, start_ns + dur_ns)) return;
  name_thread(pid, kCoreTid0 + core, fmt::format("CPU {}", core));
  add({start_ns, dur_ns, pid, kCoreTid0 + core, Kind::Cpu,
       std::string(label.empty() ? model::activity_name(activity) : label), context,
       static_cast<uint64_t>(activity), label.empty() ? 0u : 1u});
}

void ChromeTrace::poll(int host, int core, bool begin, double t_ns) {
  PollState& p = polls_[{host, core}];
  if (begin) {
    if (p.open++ == 0) p.cursor = t_ns;
    return;
  }
  if (p.open == 0) return;
  const int pid = host + 1;
  if (t_ns > p.cursor) {
    if (in_window(p.cursor, t_ns)) name_thread(pid, kCoreTid0 + core, fmt::format("CPU {}", core));
    add({p.cursor, t_ns - p.cursor, pid, kCoreTid0 + core, Kind::Poll, "poll", {}, 0, 0});
  }
  p.cursor = std::max(p.cursor, t_ns);
  --p.open;
}

void ChromeTrace::engine(int host, const char* what, double start_ns, double end_ns, uint32_t qpn,
                         uint64_t payload_bytes) {
  if (!in_window(start_ns, end_ns)) return;
  name_thread(host + 1, kEngineTid, "HCA send engine");
  add({start_ns, end_ns - start_ns, host + 1, kEngineTid, Kind::Engine, what, {}, qpn, payload_bytes});
}

std::pair<int, int> ChromeTrace::link_thread(const std::string& link) {
  // The testbed's names (sim/testbed.cpp): ib-A-to-B, ib-B-to-A, then per host X: X-pcie-h2d,
  // X-dma-read-tags, X-pcie-d2h, X-pcix, X-pcix-read.
  if (link == "ib-A-to-B") return {kLinkPid, 1};
  if (link == "ib-B-to-A") return {kLinkPid, 2};
  const int pid = link.rfind("B-", 0) == 0 ? 2 : 1;
  const std::string kind = link.substr(2);
  if (kind == "pcie-h2d") return {pid, 60};
  if (kind == "dma-read-tags") return {pid, 61};
  if (kind == "pcie-d2h") return {pid, 62};
  if (kind == "pcix") return {pid, 63};
  return {pid, 64};  // pcix-read
}

void ChromeTrace::transfer(const Route& route, uint64_t bytes, double start_ns) {
  for (size_t i = 0; i < route.links.size(); ++i) {
    const void* key = route.links[i];
    auto it = link_tid_.find(key);
    if (it == link_tid_.end()) it = link_tid_.emplace(key, link_thread(route.links[i]->get_name())).first;
    const auto [pid, tid] = it->second;
    // A link busy with two transfers at once (a PCI-X bus in both routes) shows their busy times
    // one after the other: the busy time is exact, its place in the shared interval is not.
    double& free = link_free_[{pid, tid}];
    const double start = std::max(start_ns, free);
    const double dur = static_cast<double>(bytes) * route.link_s_per_byte[i] * 1e9;
    free = start + dur;
    if (!in_window(start, start + dur)) continue;
    static const std::map<int, std::string> kNames = {
        {60, "PCIe host->device (DMA read completions)"}, {61, "DMA reads in flight (tag limit)"},
        {62, "PCIe device->host (DMA writes)"}, {63, "PCI-X bus"}, {64, "PCI-X DMA reads"}};
    name_thread(pid, tid, pid == kLinkPid ? (tid == 1 ? "A->B" : "B->A") : kNames.at(tid));
    add({start, dur, pid, tid, Kind::Link, "transfer", {}, bytes, 0});
  }
}

void ChromeTrace::call(int host, const std::string& context, TraceCall call, double start_ns, double end_ns,
                       uint64_t offset, uint64_t bytes) {
  const int pid = host + 1;
  const int tid = app_thread(host, context);
  // A call starts after the CPU work its predecessor charged (SimHost::pending_end_ns).
  double& last = call_end_[{pid, tid}];
  start_ns = std::max(start_ns, last);
  end_ns = std::max(end_ns, start_ns);
  last = end_ns;
  CallRec c{{start_ns, end_ns - start_ns, pid, tid, Kind::Call, call == TraceCall::Send ? "send()" : "recv()", {},
             offset, bytes},
            offset, bytes};
  const bool inside = in_window(start_ns, end_ns);
  if (inside) name_thread(pid, tid, context);
  if (call == TraceCall::Send) {
    if (origin_ && end_ns <= w0_) {
      drop_below_ = std::max(drop_below_, offset + bytes);
      while (!messages_.empty() && messages_.front().offset + messages_.front().bytes <= drop_below_)
        messages_.pop_front();
    }
    if (origin_ && start_ns >= w1_ && !max_offset_) max_offset_ = offset;
    if (inside) sends_.push_back(std::move(c));
    return;
  }
  // A recv() is kept while it may return the last byte of a message sent in the window.
  if (inside || (origin_ && end_ns > w0_ && (!max_offset_ || offset < *max_offset_))) {
    if (!inside) name_thread(pid, tid, context);
    recvs_.push_back(std::move(c));
  }
}

int ChromeTrace::app_thread(int host, const std::string& context) {
  auto it = app_tid_.find({host, context});
  if (it == app_tid_.end()) {
    const auto n = std::count_if(app_tid_.begin(), app_tid_.end(), [&](const auto& e) { return e.first.first == host; });
    it = app_tid_.emplace(std::pair{host, context}, static_cast<int>(n) + 1).first;
  }
  return it->second;
}

ChromeTrace::Span ChromeTrace::app_span(int host, const std::string& context, Kind kind, const char* name,
                                        double start_ns, double end_ns) {
  const int pid = host + 1;
  const int tid = app_thread(host, context);
  double& last = call_end_[{pid, tid}];
  start_ns = std::max(start_ns, last);
  end_ns = std::max(end_ns, start_ns);
  last = end_ns;
  Span s{start_ns, end_ns - start_ns, pid, tid, kind, name, {}, 0, 0, 0, 0, ++next_id_};
  return s;
}

bool ChromeTrace::keep(Span s, const std::string& context, bool force) {
  if (!force && !in_window(s.start_ns, s.start_ns + s.dur_ns)) return false;
  name_thread(s.pid, s.tid, context);
  spans_.push_back(std::move(s));
  return true;
}

void ChromeTrace::end_flows(const std::vector<Wr>& ending, uint64_t to) {
  for (const Wr& w : ending)
    if (w.span_id != 0) wr_flows_.push_back({w.span_id, to, w});
}

void ChromeTrace::work_request(int host, uint32_t qpn, uint32_t peer_qpn, uint64_t wr_id, const char* opcode,
                               uint64_t bytes, bool signaled, double start_ns, double end_ns) {
  if (!wrs_) return;
  const std::string& who = Scheduler::current().current_name();
  Span s = app_span(host, who, Kind::Post, "ibv_post_send()", start_ns, end_ns);
  s.context = opcode;
  s.a = qpn;
  s.b = wr_id;
  s.c = bytes;
  s.d = signaled ? 1 : 0;
  const uint64_t id = s.id;
  const bool kept = keep(std::move(s), who, false);
  const Wr w{kept ? id : 0, wr_id, bytes, qpn, opcode};
  const std::string_view op(opcode);
  if (wr_to_peer_ && (op == "SEND" || op == "RDMA WRITE"))
    wr_to_notice_[{1 - host, peer_qpn}].push_back(w);
  else
    wr_pending_[{host, qpn}].push_back(w);
}

void ChromeTrace::completions(int host, std::span<const sdp::Wc> wcs, double start_ns, double end_ns) {
  if (!wrs_) return;
  std::vector<Wr> ending;
  for (const sdp::Wc& wc : wcs) {
    if (wc.opcode == sdp::WcOpcode::Recv) {
      if (!wr_to_peer_) continue;  // a receive ends no flow of its own
      auto& q = wr_to_notice_[{host, wc.qp_num}];
      if (!q.empty()) {
        ending.push_back(q.front());
        q.pop_front();
      }
      continue;
    }
    // A send CQE retires its WR and the unsignaled ones posted before it on its QP.
    auto& q = wr_pending_[{host, wc.qp_num}];
    while (!q.empty()) {
      const Wr w = q.front();
      q.pop_front();
      ending.push_back(w);
      if (w.wr_id == wc.wr_id) break;
    }
  }
  const std::string& who = Scheduler::current().current_name();
  Span s = app_span(host, who, Kind::CqPoll, "ibv_poll_cq()", start_ns, end_ns);
  s.a = wcs.size();
  const uint64_t id = s.id;
  const bool force = std::any_of(ending.begin(), ending.end(), [](const Wr& w) { return w.span_id != 0; });
  if (keep(std::move(s), who, force)) end_flows(ending, id);
}

void ChromeTrace::noticed(int host, uint32_t qpn, double landed_ns, double seen_ns) {
  if (!wrs_) return;
  std::vector<Wr> ending;
  auto& q = wr_to_notice_[{host, qpn}];
  if (!q.empty()) {
    ending.push_back(q.front());
    q.pop_front();
  }
  const std::string& who = Scheduler::current().current_name();
  Span s = app_span(host, who, Kind::Noticed, "poll: peer's WRITE seen", landed_ns, seen_ns);
  s.a = qpn;
  const uint64_t id = s.id;
  const bool force = !ending.empty() && ending.front().span_id != 0;
  if (keep(std::move(s), who, force)) end_flows(ending, id);
}

void ChromeTrace::message(uint64_t offset, uint64_t bytes, double) {
  if (bytes == 0 || offset + bytes <= drop_below_) return;
  if (max_offset_ && offset + bytes > *max_offset_) return;
  messages_.push_back({offset, bytes});
}

std::string ChromeTrace::json(const std::vector<std::pair<std::string, std::string>>& other_fields) const {
  // The calls that hold each message's last byte: the send() that wrote it, the recv() that
  // returned it. Both lists are in stream order.
  auto holding = [](const std::vector<CallRec>& calls, uint64_t byte) -> const CallRec* {
    auto it = std::upper_bound(calls.begin(), calls.end(), byte, [](uint64_t b, const CallRec& c) { return b < c.offset; });
    if (it == calls.begin()) return nullptr;
    --it;
    return byte < it->offset + it->bytes ? &*it : nullptr;
  };
  struct Flow {
    const CallRec* send;
    const CallRec* recv;
    uint64_t offset, bytes;
  };
  std::vector<Flow> flows;
  std::vector<bool> recv_used(recvs_.size(), false);
  for (const Message& m : messages_) {
    const uint64_t last = m.offset + m.bytes - 1;
    const CallRec* s = holding(sends_, last);
    const CallRec* r = holding(recvs_, last);
    if (s == nullptr || r == nullptr) continue;
    flows.push_back({s, r, m.offset, m.bytes});
    recv_used[static_cast<size_t>(r - recvs_.data())] = true;
  }
  std::vector<const Span*> spans;
  spans.reserve(spans_.size() + sends_.size() + recvs_.size());
  for (const Span& s : spans_) spans.push_back(&s);
  for (const CallRec& c : sends_) spans.push_back(&c.span);
  for (size_t i = 0; i < recvs_.size(); ++i)
    if (recv_used[i] || in_window(recvs_[i].span.start_ns, recvs_[i].span.start_ns + recvs_[i].span.dur_ns))
      spans.push_back(&recvs_[i].span);
  std::stable_sort(spans.begin(), spans.end(), [](const Span* a, const Span* b) {
    if (a->start_ns != b->start_ns) return a->start_ns < b->start_ns;
    if (a->pid != b->pid) return a->pid < b->pid;
    return a->tid < b->tid;
  });

  std::string out = "{\"traceEvents\":[\n";
  bool first = true;
  auto emit = [&](const ojson& e) {
    if (!first) out += ",\n";
    first = false;
    out += e.dump();
  };
  // Processes, then the threads that have an event, named and sorted by tid.
  const std::array<std::string, 3> process = {hosts_[0], hosts_[1], "IB link (as both ports trained it)"};
  for (int pid = 1; pid <= 3; ++pid) {
    emit({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"tid", 0}, {"args", {{"name", process[pid - 1]}}}});
    emit({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", pid}, {"tid", 0}, {"args", {{"sort_index", pid}}}});
  }
  for (const auto& [key, name] : threads_) {
    emit({{"ph", "M"}, {"name", "thread_name"}, {"pid", key.first}, {"tid", key.second}, {"args", {{"name", name}}}});
    emit({{"ph", "M"}, {"name", "thread_sort_index"}, {"pid", key.first}, {"tid", key.second},
          {"args", {{"sort_index", key.second}}}});
  }
  static constexpr const char* kCat[] = {"cpu", "cpu", "hca", "link", "call", "verbs", "verbs", "verbs"};
  for (const Span* s : spans) {
    ojson e = {{"name", s->name}, {"cat", kCat[static_cast<int>(s->kind)]}, {"ph", "X"}, {"pid", s->pid},
               {"tid", s->tid}, {"ts", us(s->start_ns)}, {"dur", us(s->dur_ns)}};
    switch (s->kind) {
      case Kind::Cpu:
        e["args"] = {{"context", s->context}, {"ns", s->dur_ns}};
        if (s->b != 0) e["args"]["activity"] = model::activity_name(static_cast<model::Activity>(s->a));
        break;
      case Kind::Poll: e["args"] = {{"ns", s->dur_ns}}; break;
      case Kind::Engine: e["args"] = {{"qpn", s->a}, {"payload_bytes", s->b}}; break;
      case Kind::Link: e["args"] = {{"bytes", s->a}, {"ns", s->dur_ns}}; break;
      case Kind::Call: e["args"] = {{"stream_offset", s->a}, {"bytes", s->b}}; break;
      case Kind::Post:
        e["args"] = {{"opcode", s->context}, {"qpn", s->a}, {"wr_id", s->b}, {"bytes", s->c}, {"signaled", s->d != 0}};
        break;
      case Kind::CqPoll: e["args"] = {{"cqes", s->a}}; break;
      case Kind::Noticed: e["args"] = {{"qpn", s->a}}; break;
    }
    emit(e);
  }
  // Each flow from the middle of its send() to the middle of its recv(): strictly inside both
  // spans, so that each end binds to its call.
  uint64_t id = 0;
  for (const Flow& f : flows) {
    ++id;
    const Span& s = f.send->span;
    const Span& r = f.recv->span;
    emit({{"name", message_name_}, {"cat", "sdp"}, {"ph", "s"}, {"id", id}, {"pid", s.pid}, {"tid", s.tid},
          {"ts", us(s.start_ns + s.dur_ns / 2)}, {"args", {{"stream_offset", f.offset}, {"bytes", f.bytes}}}});
    emit({{"name", message_name_}, {"cat", "sdp"}, {"ph", "f"}, {"bp", "e"}, {"id", id}, {"pid", r.pid},
          {"tid", r.tid}, {"ts", us(r.start_ns + r.dur_ns / 2)}});
  }
  // Each work request from the middle of its ibv_post_send to the middle of the span that ends it.
  std::unordered_map<uint64_t, const Span*> by_id;
  for (const Span& s : spans_)
    if (s.id != 0) by_id.emplace(s.id, &s);
  size_t wr_flows = 0;
  for (const WrFlow& f : wr_flows_) {
    const auto from = by_id.find(f.from), to = by_id.find(f.to);
    if (from == by_id.end() || to == by_id.end()) continue;
    const Span& s = *from->second;
    const Span& r = *to->second;
    ++id;
    ++wr_flows;
    emit({{"name", "work request"}, {"cat", "verbs"}, {"ph", "s"}, {"id", id}, {"pid", s.pid}, {"tid", s.tid},
          {"ts", us(s.start_ns + s.dur_ns / 2)},
          {"args", {{"opcode", f.wr.opcode}, {"qpn", f.wr.qpn}, {"wr_id", f.wr.wr_id}, {"bytes", f.wr.bytes}}}});
    emit({{"name", "work request"}, {"cat", "verbs"}, {"ph", "f"}, {"bp", "e"}, {"id", id}, {"pid", r.pid},
          {"tid", r.tid}, {"ts", us(r.start_ns + r.dur_ns / 2)}});
  }
  out += "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":";
  ojson other = ojson::object();
  for (const auto& [k, v] : other_fields) other[k] = v;
  other["clock"] = "simulated";
  if (origin_) {
    other["origin_us"] = us(*origin_);
    other["window_start_us"] = us(w0_);
    other["window_end_us"] = us(w1_);
  }
  other["window_rule"] = "spans overlapping the window, whole";
  other["spans"] = spans.size();
  other["flows"] = flows.size() + wr_flows;
  out += other.dump();
  out += "\n}\n";
  return out;
}

}  // namespace hcasim::sim
