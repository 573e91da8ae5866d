// Seed 000 validation: reads what the ValidationReport fixture simulated for seed000 (`hcasim
// validate`, every point in its own process: tests/scenario_run.h) and checks the 18 gated rows
// of validation/seed000/seed000_sdp_netperf_mlx4.csv against their declared tolerances
// (throughput 15%, service demand 25%, CPU utilisation 25% where measured, the T2 and T3 rows:
// scenarios/seed000.toml), plus the effect the seed is about: BZCOPY at least 20% above SDP at
// 128K and 1M (T3), and below it with 16K sends (T2). Source of the measurements:
// shared/seeds/000_e020891d04dfaba2.txt (Jim Mott, 2008).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "tests/scenario_run.h"

namespace {
struct Row {
  double sim_thr = 0, meas_thr = 0, err_thr = 0, err_sdl = 0, err_sdr = 0;
  std::string status;
};
}  // namespace

TEST(ValidationSeed000, EveryGatedRowWithinToleranceAndBzcopyEffect) {
  ScenarioRun run = validated_scenario("seed000");
  ASSERT_NE(run.exit_status, -1) << "no seed000 report from the ValidationReport fixture";
  EXPECT_EQ(run.exit_status, 0) << "some gated point is outside its tolerance (report above)";
  ASSERT_TRUE(run.csv_found) << "no results CSV";
  const auto& rows = run.rows;
  auto& col = run.col;
  ASSERT_GE(rows.size(), 19u);
  for (const char* c : {"table", "mode", "size_flag", "gated", "meas_throughput_mbps", "sim_throughput_mbps",
                        "err_throughput_pct", "err_sd_local_pct", "err_sd_remote_pct",
                        "meas_util_local_pct", "err_util_local_pct", "err_util_remote_pct"})
    ASSERT_TRUE(col.count(c)) << "missing column " << c;
  std::map<std::string, Row> by_key;
  int gated = 0;
  for (size_t i = 1; i < rows.size(); ++i) {
    const auto& r = rows[i];
    if (r[col["gated"]] != "true" && r[col["gated"]] != "1" && r[col["gated"]] != "yes") continue;
    ++gated;
    Row row;
    row.meas_thr = std::stod(r[col["meas_throughput_mbps"]]);
    row.sim_thr = std::stod(r[col["sim_throughput_mbps"]]);
    row.err_thr = std::stod(r[col["err_throughput_pct"]]);
    EXPECT_LE(std::fabs(row.err_thr), 15.0) << r[col["table"]] << " " << r[col["mode"]] << " " << r[col["size_flag"]];
    for (const char* c : {"err_sd_local_pct", "err_sd_remote_pct", "err_util_local_pct",
                          "err_util_remote_pct"}) {
      const std::string& cell = r[col[c]];
      if (cell.empty() || cell == "-") continue;
      EXPECT_LE(std::fabs(std::stod(cell)), 25.0)  // service demand and utilisation: 25%
          << c << " " << r[col["table"]] << " " << r[col["mode"]] << " " << r[col["size_flag"]];
    }
    // T2 and T3 measured utilisation, T1 did not: an unmeasured T2/T3 cell would go unchecked.
    EXPECT_EQ(r[col["meas_util_local_pct"]].empty(), r[col["table"]] == "T1_script")
        << r[col["table"]] << " " << r[col["mode"]] << " " << r[col["size_flag"]];
    by_key[r[col["table"]] + "/" + r[col["mode"]] + "/" + r[col["size_flag"]]] = row;
  }
  EXPECT_EQ(gated, 18);
  // The effect: simulated BZCOPY >= 1.2 x simulated SDP at 128K and 1M, and below it at 16K.
  for (const char* size : {"-m 128K", "-m 1M"}) {
    const double sdp = by_key[std::string("T3_m_flag/SDP/") + size].sim_thr;
    const double bz = by_key[std::string("T3_m_flag/BZCOPY/") + size].sim_thr;
    EXPECT_GE(bz, 1.2 * sdp) << size;
  }
  for (const char* size : {"-r 64K", "-r 128K", "-r 1M"}) {
    const double sdp = by_key[std::string("T2_r_flag/SDP/") + size].sim_thr;
    const double bz = by_key[std::string("T2_r_flag/BZCOPY/") + size].sim_thr;
    EXPECT_LT(bz, sdp) << size;
  }
}
