// Seeds 003/004 validation: reads what the ValidationReport fixture simulated for seed003 (`hcasim
// validate`: tests/scenario_run.h) and checks its three gated points against
// validation/seed003/seed003_004_ipoib_zx1.csv within the declared 10 % (scenarios/seed003.toml):
// seed 003's profiled IPoIB run (1588.33 Mbit/s), seed 004's before-FMR (1720) and after-FMR
// (3500) runs with netserver pinned away from the interrupt CPU, and the FMR doubling itself
// (seed 004: 3500 / 1720 = 2.03; at least 1.8 here). The fourth point, seed 004's SDP after FMR
// (3500), is not gated (the model misses it: docs/seeds/seed003.md): checked here is what the
// model says of it, that SDP is not held to IPoIB's figure on these hosts (at least 1.3 times
// IPoIB with FMR: the receive copy bounds it, not the sender's per-segment work). Sources:
// shared/seeds/003_53dfb8b0c199e3c9.txt and 004_928f1b11ac85aec2.txt (Grant Grundler, 2005).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "tests/scenario_run.h"

TEST(ValidationSeed003, EveryPointWithinToleranceAndTheFmrDoubling) {
  ScenarioRun run = validated_scenario("seed003");
  ASSERT_NE(run.exit_status, -1) << "no seed003 report from the ValidationReport fixture";
  EXPECT_EQ(run.exit_status, 0) << "some gated point is outside its tolerance (report above)";
  ASSERT_TRUE(run.csv_found) << "no results CSV";
  const auto& rows = run.rows;
  auto& col = run.col;
  ASSERT_EQ(rows.size(), 5u);  // header + 4 points
  for (const char* c : {"table", "mode", "gated", "sim_throughput_mbps", "err_throughput_pct"})
    ASSERT_TRUE(col.count(c)) << "missing column " << c;
  std::map<std::string, double> thr;
  for (size_t i = 1; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const std::string mode = r[col["mode"]];
    thr[mode] = std::stod(r[col["sim_throughput_mbps"]]);
    if (mode.rfind("SDP", 0) == 0) {
      EXPECT_EQ(r[col["gated"]], "false") << mode;
      continue;
    }
    EXPECT_EQ(r[col["gated"]], "true") << mode;
    EXPECT_LE(std::fabs(std::stod(r[col["err_throughput_pct"]])), 10.0) << mode;
  }
  ASSERT_EQ(thr.size(), 4u);
  EXPECT_GE(thr["IPoIB, FMR, pinned"] / thr["IPoIB, no FMR, pinned"], 1.8);
  EXPECT_GE(thr["SDP, FMR, pinned"] / thr["IPoIB, FMR, pinned"], 1.3);
}
