// Seed 002 validation: reads what the ValidationReport fixture simulated for seed002 (`hcasim
// validate`, every point in its own process: tests/scenario_run.h) and checks the 27 gated rows
// of validation/seed002/seed002_sdp_netperf_mthca_affinity.csv against the declared tolerances
// (throughput 10%, service demand 15%: scenarios/seed002.toml), plus the effect the seed is
// about: with the interrupts on CPU 1, SDP (bcopy) bound to CPU 2 is at least 15% slower than
// bound to CPU 0 from 512K sends up, while BZCOPY moves less than 5%. Source of the
// measurements: shared/seeds/002_fe976eb1aa84c1a6.txt (Craig Prescott, 2008).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "tests/scenario_run.h"

TEST(ValidationSeed002, EveryGatedRowWithinToleranceAndBindingEffect) {
  ScenarioRun run = validated_scenario("seed002");
  ASSERT_NE(run.exit_status, -1) << "no seed002 report from the ValidationReport fixture";
  EXPECT_EQ(run.exit_status, 0) << "some gated point is outside its tolerance (report above)";
  ASSERT_TRUE(run.csv_found) << "no results CSV";
  const auto& rows = run.rows;
  auto& col = run.col;
  ASSERT_EQ(rows.size(), 29u);  // header + 28 points
  for (const char* c : {"table", "mode", "size_flag", "gated", "sim_throughput_mbps", "err_throughput_pct",
                        "err_sd_local_pct", "err_sd_remote_pct"})
    ASSERT_TRUE(col.count(c)) << "missing column " << c;
  std::map<std::string, double> thr;  // "T0_0/SDP/-m 1M" -> simulated Mbit/s
  int gated = 0;
  for (size_t i = 1; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const std::string key = r[col["table"]] + "/" + r[col["mode"]] + "/" + r[col["size_flag"]];
    thr[key] = std::stod(r[col["sim_throughput_mbps"]]);
    if (r[col["gated"]] != "true") continue;
    ++gated;
    EXPECT_LE(std::fabs(std::stod(r[col["err_throughput_pct"]])), 10.0) << key;
    EXPECT_LE(std::fabs(std::stod(r[col["err_sd_local_pct"]])), 15.0) << key;
    EXPECT_LE(std::fabs(std::stod(r[col["err_sd_remote_pct"]])), 15.0) << key;
  }
  EXPECT_EQ(gated, 27);  // all but T0_0 BZCOPY 1M (the seed's own 20% spread, seed002.toml)
  for (const char* size : {"-m 512K", "-m 1M", "-m 2M", "-m 4M"}) {
    const double near = thr[std::string("T0_0/SDP/") + size], far = thr[std::string("T2_2/SDP/") + size];
    EXPECT_LE(far, 0.85 * near) << "SDP " << size << ": -T 2,2 " << far << " vs -T 0,0 " << near;
  }
  for (const char* size : {"-m 64K", "-m 128K", "-m 256K", "-m 512K", "-m 1M", "-m 2M", "-m 4M"}) {
    const double near = thr[std::string("T0_0/BZCOPY/") + size], far = thr[std::string("T2_2/BZCOPY/") + size];
    EXPECT_LE(std::fabs(far / near - 1), 0.05) << "BZCOPY " << size << ": " << far << " vs " << near;
  }
}
