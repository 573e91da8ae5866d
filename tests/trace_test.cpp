// --trace (sim/chrome_trace.h): a trace of a 1 ms netperf run opened with a JSON parser, its
// span counts against netperf's own figures and the HCA's trains, and span durations against
// times worked by hand from connectx-ddr-pcie1x8's parameters; the output with --trace is the
// output without it; the default window.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "model/bus.h"
#include "model/platform.h"
#include "tests/hcasim_run.h"
#include "tests/proc.h"

using namespace hcasim;
using json = nlohmann::json;

namespace {

class TraceRun : public test::HcasimCommandTest {
 protected:
  TraceRun() : HcasimCommandTest("trace") {}
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  json read(const std::string& name) const { return json::parse(test::slurp(dir_ / name)); }
};

/// The spans of a trace by thread name ("pid/name") and span name.
struct Spans {
  std::map<std::pair<int, int>, std::string> thread;
  std::vector<json> x, flow_s, flow_f;
  explicit Spans(const json& t) {
    for (const json& e : t["traceEvents"]) {
      if (e["ph"] == "M" && e["name"] == "thread_name") thread[{e["pid"], e["tid"]}] = e["args"]["name"];
      if (e["ph"] == "X") x.push_back(e);
      if (e["ph"] == "s") flow_s.push_back(e);
      if (e["ph"] == "f") flow_f.push_back(e);
    }
  }
  std::vector<json> on(int pid, const std::string& thread_name, const std::string& name) const {
    std::vector<json> out;
    for (const json& e : x)
      if (e["pid"] == pid && thread.at({e["pid"], e["tid"]}) == thread_name && e["name"] == name) out.push_back(e);
    return out;
  }
};

constexpr const char* kRun = "netperf -l 0.001 -- -m 64K";

}  // namespace

TEST_F(TraceRun, OneMillisecondRunItsCountsAndHandWorkedTimes) {
  // The whole run in the window (0 to 1 s after the stream's start), so that every send() and
  // recv() and every message is in the file.
  const test::Outcome o = run(std::string(kRun) + " --json --trace " + path("t.json") + " --trace-window 0,1");
  ASSERT_EQ(o.status, 0) << o.err;
  const json r = json::parse(o.out)["result"];
  const json t = read("t.json");
  EXPECT_EQ(t["displayTimeUnit"], "ns");
  EXPECT_EQ(t["otherData"]["clock"], "simulated");
  const Spans s(t);

  // Counts. One span per send() and recv() netperf counted; one flow per SDP data message, each
  // with both ends, and as many as host A's HCA moved SENDs with data (payload above the 16 B
  // BSDH of a credit update, ChRcvBuf's 20 B); their bytes add up to what netserver received.
  const auto sends = s.on(1, "netperf", "send()");
  const auto recvs = s.on(2, "netserver", "recv()");
  EXPECT_EQ(sends.size(), r["send_calls"].get<size_t>());
  EXPECT_EQ(recvs.size(), r["recv_calls"].get<size_t>());
  ASSERT_EQ(s.flow_s.size(), s.flow_f.size());
  size_t data_trains = 0;
  for (const json& e : s.on(1, "HCA send engine", "SEND")) data_trains += e["args"]["payload_bytes"] > 20;
  EXPECT_EQ(s.flow_s.size(), data_trains);
  uint64_t flow_bytes = 0;
  for (const json& f : s.flow_s) flow_bytes += f["args"]["bytes"].get<uint64_t>();
  EXPECT_EQ(flow_bytes, r["bytes_received"].get<uint64_t>());
  EXPECT_EQ(t["otherData"]["flows"], s.flow_s.size());
  EXPECT_GT(s.flow_s.size(), 40u);  // 1 ms at ~8 Gbit/s: ~1 MB, 2 KB then 32 KB messages

  // Each flow starts inside a send() of host A's netperf thread and ends inside a recv() of B's.
  for (size_t i = 0; i < s.flow_s.size(); ++i) {
    EXPECT_EQ(s.flow_s[i]["id"], s.flow_f[i]["id"]);
    EXPECT_EQ(s.flow_f[i]["bp"], "e");
    auto inside = [](const std::vector<json>& calls, double ts) {
      for (const json& c : calls)
        if (c["ts"].get<double>() < ts && ts < c["ts"].get<double>() + c["dur"].get<double>()) return true;
      return false;
    };
    EXPECT_TRUE(inside(sends, s.flow_s[i]["ts"])) << i;
    EXPECT_TRUE(inside(recvs, s.flow_f[i]["ts"])) << i;
  }

  // Times, by hand from scenarios/platforms/connectx-ddr-pcie1x8.toml.
  // (1) -m 64K >= sdp.zcopy_thresh (65536): every send() is a bzcopy, whose pin span is
  //     cpu.bzcopy_setup + pages x (cpu.pin_page + cpu.dma_map_page), all work at 2.33 GHz:
  //     949 cycles = 407.296 ns, 932 cycles = 400 ns, 116.5 cycles = 50 ns. netperf's send ring
  //     is 8-byte aligned, not page aligned, so 65536 B span 17 pages of 4096 B:
  //     949 / 2.33 + 17 x (400 + 50) = 8057.296 ns.
  const auto pins = s.on(1, "CPU 1", "pin");
  ASSERT_EQ(pins.size(), sends.size());
  for (const json& e : pins) EXPECT_NEAR(e["dur"].get<double>(), (949 / 2.33 + 17 * 450) / 1e3, 1e-9);
  // (2) netserver's copy of a whole 32 KB receive buffer (sdp.max_recv_buffer = 32768 B) out of
  //     DMA-written memory at cpu.copy_rx_rate = 1.50 B/ns: 32768 / 1.50 = 21845.333 ns.
  int full_copies = 0;
  for (const json& e : s.on(2, "CPU 1", "copy"))
    if (std::abs(e["dur"].get<double>() - 21.845333) < 1e-6) ++full_copies;
  EXPECT_GT(full_copies, 20);
  // (3) The IB link A->B: DDR 4x signals 5 Gbit/s per lane x 4 = 20 Gbit/s, 8b/10b leaves
  //     16 Gbit/s = 2 B/ns. Its payload rate is that of SENDs of the receiver's buffers
  //     (32768 + 16 B BSDH = 32784 B) on a 2048 B MTU: 17 packets, each LRH 8 + BTH 12 + ICRC 4 +
  //     VCRC 2 = 26 B of headers and 2 B of delimiters: 32784 + 17 x 28 = 33260 B on the wire,
  //     2 x 32784 / 33260 = 1.971377 B/ns. A transfer of N bytes is busy N / 1.971377 ns; a
  //     32 KB data message (32784 B) carries 32784 B plus its share of WQE and header traffic
  //     on the route's busiest link (model::message_link_time_ns), under 2 % more.
  const double ib_B_per_ns = 2.0 * 32784 / 33260;
  int big = 0;
  for (const json& e : s.on(3, "A->B", "transfer")) {
    const double bytes = e["args"]["bytes"].get<double>();
    EXPECT_NEAR(e["dur"].get<double>() * 1e3, bytes / ib_B_per_ns, 1e-6) << bytes;
    if (bytes >= 32784) {
      ++big;
      EXPECT_LT(bytes, 32784 * 1.02);
    }
  }
  EXPECT_GT(big, 20);
  // (4) Host A's PCIe host->device link (the DMA reads' completions) is the route's bottleneck:
  //     each SEND's train on the send engine lasts exactly its transfer there, bytes / the
  //     ceiling model/pcie.h gives PCIe gen1 x8, MaxPayload 128, MaxReadReq 512, 64 B completions.
  const model::Platform p = model::Platform::load_file(std::string(HCASIM_REFERENCE_DIR) +
                                                       "/../scenarios/platforms/connectx-ddr-pcie1x8.toml");
  const double read_B_per_ns = model::HostBus::from_platform(p).dma_read_ceiling_gbps() / 8;
  const auto trains = s.on(1, "HCA send engine", "SEND");
  const auto h2d = s.on(1, "PCIe host->device (DMA read completions)", "transfer");
  ASSERT_EQ(trains.size(), h2d.size());
  for (size_t i = 0; i < trains.size(); ++i) {
    EXPECT_DOUBLE_EQ(trains[i]["ts"].get<double>(), h2d[i]["ts"].get<double>());
    EXPECT_NEAR(trains[i]["dur"].get<double>(), h2d[i]["dur"].get<double>(), 1e-9);
    EXPECT_NEAR(h2d[i]["dur"].get<double>() * 1e3, h2d[i]["args"]["bytes"].get<double>() / read_B_per_ns, 1e-6);
  }
}

TEST_F(TraceRun, OutputUnchangedAndTraceDeterministic) {
  const test::Outcome plain = run(kRun);
  const test::Outcome a = run(std::string(kRun) + " --trace " + path("a.json"));
  const test::Outcome b = run(std::string(kRun) + " --trace " + path("b.json"));
  ASSERT_EQ(plain.status, 0) << plain.err;
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_EQ(a.out, plain.out);
  EXPECT_EQ(a.err, plain.err);
  const std::string ta = test::slurp(dir_ / "a.json"), tb = test::slurp(dir_ / "b.json");
  EXPECT_FALSE(ta.empty());
  EXPECT_EQ(ta, tb);
}

TEST_F(TraceRun, DefaultWindowIsTheStreamsFirstMillisecond) {
  const test::Outcome o = run("netperf -l 0.01 --json --trace " + path("t.json") + " -- -m 64K");
  ASSERT_EQ(o.status, 0) << o.err;
  const json r = json::parse(o.out)["result"];
  const json t = read("t.json");
  const double w0 = t["otherData"]["window_start_us"], w1 = t["otherData"]["window_end_us"];
  EXPECT_DOUBLE_EQ(w0, t["otherData"]["origin_us"].get<double>());
  EXPECT_NEAR(w1 - w0, 1000.0, 1e-9);
  const Spans s(t);
  // Every span overlaps the window, except the recv() that ends a flow sent in it.
  for (const json& e : s.x) {
    if (e["name"] == "recv()") continue;
    EXPECT_LT(e["ts"].get<double>(), w1);
    EXPECT_GT(e["ts"].get<double>() + e["dur"].get<double>(), w0);
  }
  // About a tenth of the 10 ms run's send() calls.
  const size_t sends = s.on(1, "netperf", "send()").size();
  EXPECT_GT(sends, 0u);
  EXPECT_LT(sends, r["send_calls"].get<size_t>() / 5);
}

TEST_F(TraceRun, AStartBeyondTheRunKeepsNoSpans) {
  const test::Outcome o = run(std::string(kRun) + " --trace " + path("t.json") + " --trace-window 5,0.001");
  ASSERT_EQ(o.status, 0) << o.err;
  const Spans s(read("t.json"));
  EXPECT_TRUE(s.x.empty());
  EXPECT_TRUE(s.flow_s.empty());
}

TEST_F(TraceRun, BadInputIsOneLineAndWritesNothing) {
  const std::string t = path("t.json");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--trace-window 0.5 --trace " + t, "--trace-window: '0.5' is not START,LEN"},
      {"--trace-window=-1,1 --trace " + t, "--trace-window: '-1,1' is not START,LEN"},
      {"--trace-window 0,0 --trace " + t, "--trace-window: '0,0' is not START,LEN"},
      {"--trace-window 0,nan --trace " + t, "--trace-window: '0,nan' is not START,LEN"},
      {"--trace-window 0,1", "--trace-window: needs --trace FILE"},
      {"--transport ipoib --trace-window 0,-1 --trace " + t, "--trace-window: '0,-1' is not START,LEN"},
      {"--trace " + t + " --csv " + t, "--trace " + t + ": also the --csv file"},
      // The same file, relative to the working directory the command runs in.
      {"--trace " + t + " --csv " + std::filesystem::relative(t).string(), "--trace " + t + ": also the --csv file"},
      {"--trace " + path("no/such/t.json"), "cannot write (no such directory)"},
      {"--trace " + t + " --trace " + path("u.json"), "--trace: given twice"},
  };
  for (const auto& [args, want] : cases) {
    const test::Outcome o = run("netperf -l 0.001 " + args);
    EXPECT_EQ(o.status, 2) << args;
    EXPECT_TRUE(o.out.empty()) << args;
    EXPECT_NE(o.err.find("hcasim: error: " + std::string(want.rfind("--", 0) == 0 ? want : "")), std::string::npos)
        << args << ": " << o.err;
    EXPECT_NE(o.err.find(want), std::string::npos) << args << ": " << o.err;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << args << ": " << o.err;
    EXPECT_FALSE(std::filesystem::exists(t)) << args;
  }
}

// ---- perftest --------------------------------------------------------------------------------

namespace {
/// The flows of a trace, each with the span its start lies in and the span its end lies in
/// (strictly inside: the binding the viewers make), found among `from` and `to`.
struct FlowEnds {
  size_t bound = 0;  ///< flows whose two ends lie in a span of `from` and of `to`
  std::map<size_t, size_t> ends_per_to;  ///< index in `to` -> flows ending in it
};
FlowEnds bind_flows(const Spans& s, const std::vector<json>& from, const std::vector<json>& to) {
  auto inside = [](const std::vector<json>& spans, const json& e) -> std::optional<size_t> {
    for (size_t i = 0; i < spans.size(); ++i) {
      const json& c = spans[i];
      const double ts = e["ts"], t0 = c["ts"], dur = c["dur"];
      if (c["pid"] == e["pid"] && c["tid"] == e["tid"] && t0 < ts && ts < t0 + dur) return i;
    }
    return std::nullopt;
  };
  FlowEnds out;
  for (size_t i = 0; i < s.flow_s.size(); ++i) {
    const auto a = inside(from, s.flow_s[i]), b = inside(to, s.flow_f[i]);
    if (a && b) {
      ++out.bound;
      ++out.ends_per_to[*b];
    }
  }
  return out;
}
}  // namespace

TEST_F(TraceRun, WriteLatencyEachWriteFlowsToThePeersPoll) {
  // -n 100 and the whole run in the window: each side posts 100 RDMA WRITEs, each is noticed
  // once by the other side's loop polling the buffer's last byte (run_iter_lat_write).
  const test::Outcome o = run("ib_write_lat -n 100 --trace " + path("t.json") + " --trace-window 0,1");
  ASSERT_EQ(o.status, 0) << o.err;
  const json t = read("t.json");
  EXPECT_EQ(t["otherData"]["tool"], "ib_write_lat");
  const Spans s(t);
  const auto posts_a = s.on(1, "ib_write_lat client", "ibv_post_send()");
  const auto posts_b = s.on(2, "ib_write_lat server", "ibv_post_send()");
  const auto seen_a = s.on(1, "ib_write_lat client", "poll: peer's WRITE seen");
  const auto seen_b = s.on(2, "ib_write_lat server", "poll: peer's WRITE seen");
  const auto cq_a = s.on(1, "ib_write_lat client", "ibv_poll_cq()");
  ASSERT_EQ(posts_a.size(), 100u);
  ASSERT_EQ(posts_b.size(), 100u);
  EXPECT_EQ(seen_a.size(), 100u);
  EXPECT_EQ(seen_b.size(), 100u);
  EXPECT_EQ(cq_a.size(), 100u);  // every WRITE of a latency test is signaled: one CQE each
  EXPECT_EQ(s.on(1, "HCA send engine", "RDMA WRITE").size(), 100u);
  EXPECT_EQ(s.on(3, "A->B", "transfer").size(), 100u);
  // One flow per WRITE: from a post on one host to a noticing on the other, in order.
  ASSERT_EQ(s.flow_s.size(), 200u);
  ASSERT_EQ(s.flow_f.size(), 200u);
  EXPECT_EQ(t["otherData"]["flows"], 200);
  std::vector<json> posts = posts_a, seen = seen_b;
  posts.insert(posts.end(), posts_b.begin(), posts_b.end());
  seen.insert(seen.end(), seen_a.begin(), seen_a.end());
  const FlowEnds ends = bind_flows(s, posts, seen);
  EXPECT_EQ(ends.bound, 200u);
  EXPECT_EQ(ends.ends_per_to.size(), 200u);  // each noticing ends exactly one flow
  for (size_t i = 0; i < s.flow_s.size(); ++i) {
    EXPECT_EQ(s.flow_s[i]["id"], s.flow_f[i]["id"]);
    EXPECT_NE(s.flow_s[i]["pid"], s.flow_f[i]["pid"]) << i;
    EXPECT_LT(s.flow_s[i]["ts"].get<double>(), s.flow_f[i]["ts"].get<double>()) << i;
    EXPECT_EQ(s.flow_s[i]["args"]["opcode"], "RDMA WRITE");
    EXPECT_EQ(s.flow_s[i]["args"]["bytes"], 2);
  }

  // Times, by hand from scenarios/platforms/connectx-ddr-pcie1x8.toml (2.33 GHz).
  // (1) ibv_post_send of a 2 B inline WRITE: libmlx4 builds the WQE (cpu.user_post 233 cycles =
  //     100 ns), then copies it by BlueFlame: control 16 B + remote address 16 B + inline
  //     header 4 B and 2 B of data rounded to 16 B = 48 B, a 64 B basic block, 8 stores of 8 B
  //     into the write-combining buffer (cpu.wc_store 1.165 cycles = 0.5 ns each) and the sfence
  //     (cpu.wc_flush 20 ns): 100 + 8 x 0.5 + 20 = 124 ns.
  for (const json& e : posts) EXPECT_NEAR(e["dur"].get<double>(), 0.124, 1e-9);
  // (2) ibv_poll_cq finding one CQE: cpu.user_poll_cq 116.5 cycles = 50 ns.
  for (const json& e : cq_a) {
    EXPECT_EQ(e["args"]["cqes"], 1);
    EXPECT_NEAR(e["dur"].get<double>(), 0.050, 1e-9);
  }
  // (3) The loop sees a landed WRITE one poll turn later, a uniform phase of cpu.poll_miss
  //     (100 ns): every noticing lasts 0..100 ns (no timer tick or interference in 1 ms here).
  for (const json& e : seen_b) {
    EXPECT_GE(e["dur"].get<double>(), 0.0);
    EXPECT_LE(e["dur"].get<double>(), 0.100 + 1e-9);
  }
}

TEST_F(TraceRun, WriteBandwidthEachWorkRequestFlowsToItsSignaledCompletion) {
  // -s 4096 -n 1000: tx depth 128, one WR in cq_mod = 100 signaled (4096 B <= 8192 B keeps
  // perftest's CQ moderation), so 10 CQEs each retire 100 WRs.
  const test::Outcome o = run("ib_write_bw -s 4096 -n 1000 --trace " + path("t.json") + " --trace-window 0,1");
  ASSERT_EQ(o.status, 0) << o.err;
  const json t = read("t.json");
  const Spans s(t);
  const auto posts = s.on(1, "ib_write_bw client", "ibv_post_send()");
  const auto polls = s.on(1, "ib_write_bw client", "ibv_poll_cq()");
  ASSERT_EQ(posts.size(), 1000u);
  ASSERT_EQ(polls.size(), 10u);
  size_t signaled = 0;
  for (const json& e : posts) signaled += e["args"]["signaled"].get<bool>();
  EXPECT_EQ(signaled, 10u);
  ASSERT_EQ(s.flow_s.size(), 1000u);
  const FlowEnds ends = bind_flows(s, posts, polls);
  EXPECT_EQ(ends.bound, 1000u);
  ASSERT_EQ(ends.ends_per_to.size(), 10u);
  for (const auto& [poll, n] : ends.ends_per_to) EXPECT_EQ(n, 100u) << poll;
  const auto trains = s.on(1, "HCA send engine", "RDMA WRITE");
  ASSERT_EQ(trains.size(), 1000u);
  // The server only waits: no verbs calls of its own.
  EXPECT_TRUE(s.on(2, "ib_write_bw server", "ibv_post_send()").empty());

  // Times, by hand from scenarios/platforms/connectx-ddr-pcie1x8.toml.
  // (1) ibv_post_send of a non-inline WRITE: the WQE build (cpu.user_post, 100 ns) and one
  //     uncached doorbell store (cpu.uc_store, 200 ns): 300 ns.
  for (const json& e : posts) EXPECT_NEAR(e["dur"].get<double>(), 0.300, 1e-9);
  // (2) Each poll finds one CQE: cpu.user_poll_cq = 50 ns.
  for (const json& e : polls) EXPECT_NEAR(e["dur"].get<double>(), 0.050, 1e-9);
  // (3) Host A's PCIe host->device link (the DMA read completions) is the route's bottleneck
  //     for 4096 B: each train lasts its transfer there, 4096 B / the ceiling model/pcie.h gives
  //     PCIe gen1 x8 with MaxPayload 128, MaxReadReq 512 and 64 B completions.
  const model::Platform p = model::Platform::load_file(std::string(HCASIM_REFERENCE_DIR) +
                                                       "/../scenarios/platforms/connectx-ddr-pcie1x8.toml");
  const double read_B_per_ns = model::HostBus::from_platform(p).dma_read_ceiling_gbps() / 8;
  for (const json& e : trains) {
    EXPECT_EQ(e["args"]["payload_bytes"], 4096);
    EXPECT_NEAR(e["dur"].get<double>() * 1e3, 4096 / read_B_per_ns, 1e-6);
  }
}

TEST_F(TraceRun, PerftestOutputUnchangedAndTraceDeterministic) {
  for (const std::string cmd : {"ib_write_lat -n 200", "ib_write_bw -n 300 -q 2", "ib_send_lat -n 100",
                                "ib_send_bw -n 200", "ib_read_bw -n 100", "ib_atomic_lat -n 50"}) {
    const test::Outcome plain = run(cmd);
    const test::Outcome a = run(cmd + " --trace " + path("a.json"));
    const test::Outcome b = run(cmd + " --trace=" + path("b.json"));
    ASSERT_EQ(plain.status, 0) << cmd << ": " << plain.err;
    ASSERT_EQ(a.status, 0) << cmd << ": " << a.err;
    EXPECT_EQ(a.out, plain.out) << cmd;
    EXPECT_EQ(a.err, plain.err) << cmd;
    const std::string ta = test::slurp(dir_ / "a.json"), tb = test::slurp(dir_ / "b.json");
    EXPECT_EQ(ta, tb) << cmd;
    const Spans s(json::parse(ta));
    EXPECT_FALSE(s.x.empty()) << cmd;
    EXPECT_FALSE(s.flow_s.empty()) << cmd;
  }
}

TEST_F(TraceRun, SendLatencyFlowsToThePeersReceiveCompletion) {
  const test::Outcome o = run("ib_send_lat -n 50 --trace " + path("t.json") + " --trace-window 0,1");
  ASSERT_EQ(o.status, 0) << o.err;
  const Spans s(read("t.json"));
  const auto posts_a = s.on(1, "ib_send_lat client", "ibv_post_send()");
  const auto polls_b = s.on(2, "ib_send_lat server", "ibv_poll_cq()");
  ASSERT_EQ(posts_a.size(), 50u);
  ASSERT_EQ(s.flow_s.size(), 100u);  // 50 SENDs each way
  // The client's SENDs end in the server's polls (its receive CQEs): 50 flows.
  EXPECT_EQ(bind_flows(s, posts_a, polls_b).bound, 50u);
}

TEST_F(TraceRun, DefaultPerftestWindowIsTheFirstMillisecond) {
  // ib_write_bw's default 5000 x 64 KB run lasts ~0.23 s: the first 1 ms holds ~1/200 of it.
  const test::Outcome o = run("ib_write_bw --trace " + path("t.json"));
  ASSERT_EQ(o.status, 0) << o.err;
  const json t = read("t.json");
  const double w0 = t["otherData"]["window_start_us"], w1 = t["otherData"]["window_end_us"];
  EXPECT_NEAR(w1 - w0, 1000.0, 1e-9);
  const Spans s(t);
  const size_t posts = s.on(1, "ib_write_bw client", "ibv_post_send()").size();
  EXPECT_GT(posts, 0u);
  EXPECT_LT(posts, 5000u / 20);
  for (const json& e : s.x) {
    if (e["name"] == "ibv_poll_cq()") continue;  // the end of a flow posted in the window
    EXPECT_LT(e["ts"].get<double>(), w1);
    EXPECT_GT(e["ts"].get<double>() + e["dur"].get<double>(), w0);
  }
}

// ---- netperf over IPoIB ------------------------------------------------------------------------

TEST_F(TraceRun, IpoibEachSegmentFlowsToTheRecvThatReturnsIt) {
  const test::Outcome o = run("netperf --transport ipoib -l 0.001 --json --trace " + path("t.json") +
                              " --trace-window 0,1 -- -m 64K");
  ASSERT_EQ(o.status, 0) << o.err;
  const json r = json::parse(o.out)["result"];
  const json t = read("t.json");
  EXPECT_EQ(t["otherData"]["transport"], "ipoib");
  const Spans s(t);
  const auto sends = s.on(1, "netperf", "send()");
  const auto recvs = s.on(2, "netserver", "recv()");
  EXPECT_EQ(sends.size(), r["send_calls"].get<size_t>());
  // netserver's count includes its last recv(), which returns 0 at the stream's end.
  EXPECT_EQ(recvs.size() + 1, r["recv_calls"].get<size_t>());
  // One flow per TCP data segment: host A sends nothing else over IPoIB (the ACKs go B->A), so
  // as many as A's HCA moved SENDs; their bytes add up to what netserver received.
  const auto segs = s.on(1, "HCA send engine", "SEND");
  ASSERT_FALSE(segs.empty());
  ASSERT_EQ(s.flow_s.size(), segs.size());
  EXPECT_EQ(s.flow_s.front()["name"], "TCP segment");
  uint64_t bytes = 0;
  for (const json& f : s.flow_s) bytes += f["args"]["bytes"].get<uint64_t>();
  EXPECT_EQ(bytes, r["bytes_received"].get<uint64_t>());
  EXPECT_EQ(bind_flows(s, sends, recvs).bound, s.flow_s.size());

  // Times, by hand from connectx-ddr-pcie1x8's [netstack] section at 2.33 GHz.
  // (1) Each send() starts with tcp_sendmsg: netstack.send_call 2213.5 cycles = 950 ns.
  const auto sendmsg = s.on(1, "CPU 1", "tcp_sendmsg");
  ASSERT_EQ(sendmsg.size(), sends.size());
  for (const json& e : sendmsg) EXPECT_NEAR(e["dur"].get<double>(), 0.950, 1e-9);
  // (2) Each segment's TCP/IP output on netperf's CPU: netstack.tx_packet 605.8 cycles = 260 ns;
  //     IPoIB's post of it: netstack.ipoib_post 466 cycles = 200 ns.
  for (const json& e : s.on(1, "CPU 1", "tcp_transmit_skb")) EXPECT_NEAR(e["dur"].get<double>(), 0.260, 1e-9);
  for (const json& e : s.on(1, "CPU 1", "ipoib_start_xmit")) EXPECT_NEAR(e["dur"].get<double>(), 0.200, 1e-9);
  // (3) The receiver's softirq: tcp_v4_rcv of each packet, netstack.rx_packet 629.1 cycles = 270 ns
  //     (IP input) or rx_tcp 372.8 cycles = 160 ns (TCP's part), on the interrupt CPU (0).
  const auto rcv = s.on(2, "CPU 0", "tcp_v4_rcv (softirq)");
  ASSERT_FALSE(rcv.empty());
  for (const json& e : rcv) {
    const double d = e["dur"].get<double>();
    EXPECT_TRUE(std::abs(d - 0.270) < 1e-9 || std::abs(d - 0.160) < 1e-9) << d;
  }
}

TEST_F(TraceRun, IpoibOutputUnchangedWithTrace) {
  const std::string cmd = "netperf --transport ipoib -l 0.002 -- -m 16K";
  const test::Outcome plain = run(cmd);
  const test::Outcome a = run(cmd + " --trace " + path("a.json"));
  ASSERT_EQ(plain.status, 0) << plain.err;
  ASSERT_EQ(a.status, 0) << a.err;
  EXPECT_EQ(a.out, plain.out);
  EXPECT_EQ(a.err, plain.err);
}
