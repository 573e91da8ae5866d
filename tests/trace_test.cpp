// --trace (sim/chrome_trace.h): a trace of a 1 ms netperf run opened with a JSON parser, its
// span counts against netperf's own figures and the HCA's trains, and span durations against
// times worked by hand from connectx-ddr-pcie1x8's parameters; the output with --trace is the
// output without it; the default window.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
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
  //     4660 cycles = 2000 ns, 932 cycles = 400 ns, 116.5 cycles = 50 ns. netperf's send ring is
  //     8-byte aligned, not page aligned, so 65536 B span 17 pages of 4096 B:
  //     2000 + 17 x (400 + 50) = 9650 ns.
  const auto pins = s.on(1, "CPU 1", "pin");
  ASSERT_EQ(pins.size(), sends.size());
  for (const json& e : pins) EXPECT_NEAR(e["dur"].get<double>(), 9.650, 1e-9);
  // (2) netserver's copy of a whole 32 KB receive buffer (sdp.max_recv_buffer = 32768 B) out of
  //     DMA-written memory at cpu.copy_rx_rate = 1.40 B/ns: 32768 / 1.40 = 23405.714 ns.
  int full_copies = 0;
  for (const json& e : s.on(2, "CPU 1", "copy"))
    if (std::abs(e["dur"].get<double>() - 23.405714) < 1e-6) ++full_copies;
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
      {"--transport ipoib --trace " + t, "--trace: traced for SDP only"},
      {"--trace " + t + " --csv " + t, "--trace " + t + ": also the --csv file"},
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
