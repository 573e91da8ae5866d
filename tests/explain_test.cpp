// --explain (frontends/explain.h): what bounds a run. The rule on hand-made measurements, then
// four runs of build/hcasim whose bound is known from the model: ib_write_bw's 1 MB stream on a
// PCIe gen1 x8 slot (its DMA-read completions at model/pcie.h's ceiling), netperf bzcopy -m 1M
// (the receiving CPU's copy), seed 002's -T 2,2 SDP 1M point (netperf's CPU: copy plus
// cross-package coherence) and ib_write_lat -s 2 (its one-way stages add up to t_typical).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "frontends/explain.h"
#include "model/bus.h"
#include "model/platform.h"
#include "tests/hcasim_run.h"

using namespace hcasim;
using json = nlohmann::ordered_json;

namespace {

model::Platform platform(const std::string& name) {
  return model::Platform::load_file(std::string(HCASIM_REFERENCE_DIR) + "/../scenarios/platforms/" + name + ".toml");
}

frontends::CoreProfile core(int id, double work_ns, double poll_ns, const char* activity = "copy") {
  frontends::CoreProfile c;
  c.core = id;
  c.busy_ns = {{activity, work_ns}, {"poll", poll_ns}};
  return c;
}

/// The first resource that may be named (the send engine never is: its time is the route's).
const json& named(const json& explain) {
  for (const json& r : explain["resources"])
    if (r["kind"] != "hca_engine") return r;
  throw std::runtime_error("no resource");
}

class ExplainRun : public test::HcasimCommandTest {
 protected:
  ExplainRun() : HcasimCommandTest("explain") {}
  json run_json(const std::string& args) {
    const test::Outcome o = run(args + " --explain --json");
    EXPECT_EQ(o.status, 0) << o.err;
    return json::parse(o.out);
  }
};

}  // namespace

TEST(Explain, PollingIsNotWorkAndTheEngineIsNeverNamed) {
  frontends::ExplainMeasure m;
  m.interval_s = 1.0;
  // A link busy 0.9 s of 1 s: 90 %. A send engine busy 0.99 s: shown, not named.
  m.links = {{"A-pcie-h2d", 0.9, 11.87}};
  m.hca[0].engine_busy_s = 0.99;
  // CPU 0: 0.5 s of copy and 0.5 s of polling = 50 % work (the poll is waiting, not work).
  // CPU 1: 0.96 s of copy = 96 % work, at or above the 95 % rule: the bound.
  m.cores[1] = {core(0, 0.5e9, 0.5e9), core(1, 0.96e9, 0)};
  m.app_cpu = {0, 1};
  m.irq_cpu = {0, 0};
  const frontends::Explanation e = frontends::explain(m);
  ASSERT_FALSE(e.resources.empty());
  EXPECT_EQ(e.resources[0].kind, "hca_engine");  // busiest, 99 %, listed first
  EXPECT_TRUE(e.bound);
  EXPECT_NE(e.bottleneck.find("remote CPU 1"), std::string::npos) << e.bottleneck;
  EXPECT_NE(e.bottleneck.find("busy 96.0 %"), std::string::npos) << e.bottleneck;
  EXPECT_NE(e.what_if.find("a faster receive CPU"), std::string::npos) << e.what_if;
  // The link: carried = 11.87 x 0.9 / 1 = 10.683 Gbit/s.
  for (const auto& r : e.resources) {
    if (r.kind == "bus_read") {
      EXPECT_NEAR(r.carried_gbit_s, 10.683, 1e-9);
    }
  }
  // Below 95 % everywhere: the busiest is still named, as not saturated.
  m.cores[1] = {core(0, 0.5e9, 0.5e9), core(1, 0.80e9, 0)};
  const frontends::Explanation low = frontends::explain(m);
  EXPECT_FALSE(low.bound);
  EXPECT_NE(low.bottleneck.find("host->device (DMA read completions), busy 90.0 %"), std::string::npos)
      << low.bottleneck;  // the link at 90 % is now the busiest
  EXPECT_NE(low.bottleneck.find("below 95 %"), std::string::npos);
}

TEST_F(ExplainRun, IbWriteBw1MIsBoundByPcieGen1DmaReads) {
  const json doc = run_json("ib_write_bw -s 1M --platform connectx-ddr-pcie1x8");
  ASSERT_EQ(doc["explain"].size(), 1u);
  const json& ex = doc["explain"][0];
  const json& b = named(ex);
  // model/pcie.h: gen1 x8, MPS 128, 64 B completions: the DMA-read payload ceiling, 11.87 Gbit/s
  // (docs/design.md "PCIe"); the platform's bus gives it through HostBus.
  const double ceiling = model::HostBus::from_platform(platform("connectx-ddr-pcie1x8")).dma_read_ceiling_gbps();
  EXPECT_NEAR(ceiling, 11.87, 0.01);
  EXPECT_EQ(b["kind"], "bus_read");
  EXPECT_EQ(b["host"], "local");
  EXPECT_NEAR(b["ceiling_gbit_s"].get<double>(), ceiling, 1e-9);
  EXPECT_GE(b["busy_pct"].get<double>(), 99.0);
  EXPECT_TRUE(ex["bound"].get<bool>());
  EXPECT_NE(ex["bottleneck"].get<std::string>().find("PCIe gen1 x8 host->device (DMA read completions)"), std::string::npos);
  // The rate it carried is perftest's own: 5000 x 1 MiB x 8 bit / the interval = BW average.
  const double interval = ex["interval_s"].get<double>();
  EXPECT_NEAR(5000.0 * 1048576 * 8 / interval / 1e9, doc["results"][0]["bw_average_gbit_s"].get<double>(), 0.01);
  EXPECT_NEAR(b["carried_gbit_s"].get<double>(), 5000.0 * 1048576 * 8 / interval / 1e9, 0.01);
  // The what-if is the model's gen2 ceiling: 2 x the data rate at the same TLP shares.
  model::HostBus gen2 = model::HostBus::from_platform(platform("connectx-ddr-pcie1x8"));
  gen2.pcie.gen = 2;
  EXPECT_NE(ex["what_if"].get<std::string>().find(fmt::format("to {:.2f} Gbit/s", gen2.dma_read_ceiling_gbps())),
            std::string::npos)
      << ex["what_if"];
}

TEST_F(ExplainRun, PciXSplitReadsInFlightBoundAStreamAndDoubleInTheWhatIf) {
  // The zx1 slot with one split read in flight at a time and a 4000 ns split completion:
  // model/pcix.h's latency bound is 1 x MMRBC 512 B x 8 / 4000 ns = 1.024 Gbit/s, below the
  // bus's 7.48 Gbit/s read ceiling and the SDR link's 7.89: the reads in flight bound the stream.
  const json doc = run_json(
      "netperf -P 0 -l 0.2 --platform zx1-rx2600-pcix --remote-platform zx1-rx4640-pcix "
      "--set pcix.max_outstanding_split=1 --set pcix.split_completion_latency_ns=4000 -- -m 1M");
  const json& ex = doc["explain"];
  const json& b = named(ex);
  EXPECT_EQ(b["kind"], "dma_tags");
  EXPECT_EQ(b["host"], "local");
  EXPECT_NEAR(b["ceiling_gbit_s"].get<double>(), 1.024, 1e-9);
  EXPECT_GE(b["busy_pct"].get<double>(), 95.0);
  EXPECT_NE(b["name"].get<std::string>().find("1 split reads x MMRBC 512 B per 4000 ns"), std::string::npos) << b["name"];
  // Two split reads in flight: 2 x 512 x 8 / 4000 = 2.048 Gbit/s.
  EXPECT_NE(ex["what_if"].get<std::string>().find("--set pcix.max_outstanding_split=2): the DMA read latency bound goes "
                                                  "from 1.02 to 2.05 Gbit/s"),
            std::string::npos)
      << ex["what_if"];
}

TEST_F(ExplainRun, NetperfBzcopy1MIsLedByTheReceivingCpuWithNothingSaturated) {
  // sdp.zcopy_thresh is 64 KiB on the platform (docs/cli.md "What is modelled"): -m 1M is bzcopy.
  // The sender waits for each 1 MB send's completions (sdp_bz_cleanup), so no resource is busy
  // the whole interval: the busiest is netserver's CPU, mostly its copy to the user buffer, and
  // the rest of its time it polls. Seed 000 T3 measured 13.07 % remote utilisation over 8 CPUs
  // (netserver's CPU and the interrupt CPU), the model 12.99 % (README's validate table).
  const json doc = run_json("netperf -c -C -P 0 -l 1 --platform connectx-ddr-pcie1x8 -- -m 1M");
  const json& ex = doc["explain"];
  const json& b = named(ex);
  EXPECT_EQ(b["kind"], "cpu");
  EXPECT_EQ(b["host"], "remote");
  EXPECT_EQ(b["cpu"], 1);  // netserver's CPU, host.default_app_cpu
  EXPECT_GT(b["busy_pct"].get<double>(), 80.0);
  EXPECT_LT(b["busy_pct"].get<double>(), 95.0);
  EXPECT_FALSE(ex["bound"].get<bool>());
  EXPECT_NE(ex["bottleneck"].get<std::string>().find("below 95 %: not saturated"), std::string::npos)
      << ex["bottleneck"];
  // Its work is mostly the copy to the user buffer; the work share is the sum of the activities.
  const json& acts = b["activities_pct"];
  EXPECT_EQ(acts.begin().key(), "copy");
  double sum = 0;
  for (const auto& [k, v] : acts.items()) sum += v.get<double>();
  EXPECT_NEAR(sum, b["busy_pct"].get<double>(), 1e-6);
  EXPECT_GT(acts["copy"].get<double>(), 75.0);
  EXPECT_NE(ex["what_if"].get<std::string>().find("a faster receive CPU"), std::string::npos);
}

TEST_F(ExplainRun, Seed002T22Sdp1MIsBoundByTheNetperfCpu) {
  // scenarios/seed002.toml, table T2_2, mode SDP, -m 1M: its command and settings, at the
  // seed's assumed default length (10 s).
  const json doc = run_json(
      "netperf -T 2,2 -c -C -t TCP_STREAM -H peer -P 0 --platform infinihost3-pcie1x8 --set sdp.zcopy_thresh=0 -- -m 1M");
  const json& ex = doc["explain"];
  const json& b = named(ex);
  EXPECT_EQ(b["kind"], "cpu");
  EXPECT_EQ(b["host"], "local");
  EXPECT_EQ(b["cpu"], 2);
  // Its two largest activities: the send copy, then the cross-package cache-line transfers
  // (interrupts on CPU 1, irq.affinity; netperf on CPU 2 of the other package).
  auto it = b["activities_pct"].begin();
  EXPECT_EQ(it.key(), "copy");
  ++it;
  EXPECT_EQ(it.key(), "coherence");
  EXPECT_GT(it.value().get<double>(), 5.0);
  // The busiest resource by some way, not saturated (the rest waits on completions).
  const json& next = ex["resources"][2];
  EXPECT_GT(b["busy_pct"].get<double>(), next["busy_pct"].get<double>() + 5) << next["name"];
  const std::string line = ex["bottleneck"];
  EXPECT_NE(line.find("local CPU 2 (netperf)"), std::string::npos) << line;
  EXPECT_NE(ex["what_if"].get<std::string>().find("interrupt CPU 1"), std::string::npos);
}

TEST_F(ExplainRun, IbWriteLatStagesAddUpToTTypical) {
  const json doc = run_json("ib_write_lat -s 2");
  const json& ex = doc["explain"][0];
  double sum_ns = 0;
  for (const json& s : ex["stages"]) sum_ns += s["ns"].get<double>();
  EXPECT_NEAR(ex["sum_us"].get<double>(), sum_ns * 1e-3, 1e-12);
  // t_typical is the median of perftest's half round trips; the stages leave out only the
  // noise (ticks, interference: the tail) and take the poll loop's mean phase. Tolerance 0.02 us
  // (1.4 % of 1.40 us).
  EXPECT_NEAR(ex["sum_us"].get<double>(), doc["results"][0]["t_typical_us"].get<double>(), 0.02);
  EXPECT_EQ(ex["t_typical_us"], doc["results"][0]["t_typical_us"]);
  // The text prints the same stages and the sum.
  const test::Outcome o = run("ib_write_lat -s 2 --explain");
  EXPECT_NE(o.out.find("sum of the stages"), std::string::npos);
}

TEST_F(ExplainRun, ExplainTakesNoValue) {
  const test::Outcome a = run("netperf --explain=yes");
  EXPECT_EQ(a.status, 2);
  EXPECT_EQ(a.err, "hcasim: error: --explain: takes no value (got 'yes')\n");
  EXPECT_EQ(a.out, "");
  const test::Outcome b = run("ib_write_bw --explain=1");
  EXPECT_EQ(b.status, 2);
  EXPECT_NE(b.err.find("--explain"), std::string::npos) << b.err;
  const test::Outcome c = run("sweep netperf -l 1 -- -m 64K,1M --explain");
  EXPECT_EQ(c.status, 2);
  EXPECT_NE(c.err.find("--explain"), std::string::npos) << c.err;
}
