// q-view's flat profile form (frontends/qview_output.h), checked against the text of seed 003's
// profiles (shared/seeds/003_53dfb8b0c199e3c9.txt) and their transcription in
// validation/seed003/seed003_zx1_ipoib_profile.csv.
#include "frontends/qview_output.h"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace hs = hcasim::frontends;

namespace {

std::vector<std::vector<std::string>> read_profile_csv() {
  std::ifstream in(std::string(HCASIM_REFERENCE_DIR) + "/seed003/seed003_zx1_ipoib_profile.csv");
  EXPECT_TRUE(in.good());
  std::vector<std::vector<std::string>> rows;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) f.push_back(cell);
    rows.push_back(f);
  }
  return rows;
}

}  // namespace

TEST(QviewNumber, PrintsTheSeedsNumbers) {
  EXPECT_EQ(hs::format_qview_number(80.7e3), "80.7k");
  EXPECT_EQ(hs::format_qview_number(35.9e6), "35.9M");
  EXPECT_EQ(hs::format_qview_number(355e3), "355k");
  EXPECT_EQ(hs::format_qview_number(186e-6), "186u");
  EXPECT_EQ(hs::format_qview_number(1.15e-6), "1.15u");
  EXPECT_EQ(hs::format_qview_number(22.5e-9), "22.5n");
  EXPECT_EQ(hs::format_qview_number(13.8e-9), "13.8n");
  // Rounding up to 1000 of a prefix is 1.00 of the next: 999.7n -> 1.00u, 999.6k -> 1.00M.
  EXPECT_EQ(hs::format_qview_number(999.7e-9), "1.00u");
  EXPECT_EQ(hs::format_qview_number(999.6e3), "1.00M");
  EXPECT_EQ(hs::format_qview_number(999.4e3), "999k");
  // Whole counts below 1000 print as integers; other values below 1 keep their prefix.
  EXPECT_EQ(hs::format_qview_number(5), "5");
  EXPECT_EQ(hs::format_qview_number(2.5), "2.50");
  EXPECT_EQ(hs::format_qview_number(0.25), "250m");
  EXPECT_EQ(hs::format_qview_number(0), "0");
}

TEST(QviewNumber, ParsesAndReprintsEveryNumberOfTheSeedProfile) {
  const auto rows = read_profile_csv();
  ASSERT_EQ(rows.size(), 35u);  // 15 sender rows + 20 receiver rows
  int checked = 0;
  for (const auto& r : rows) {
    ASSERT_EQ(r.size(), 8u);
    for (size_t col : {4, 5, 6}) {  // calls, self/call, tot/call
      if (r[col] == "-") {
        EXPECT_FALSE(hs::parse_qview_number(r[col]).has_value());
        continue;
      }
      const auto v = hs::parse_qview_number(r[col]);
      ASSERT_TRUE(v.has_value()) << r[col];
      EXPECT_EQ(hs::format_qview_number(*v), r[col]) << r[7];
      ++checked;
    }
  }
  EXPECT_EQ(checked, 35 * 3 - 2);  // tcp_packet has no total per call on either side
}

TEST(QviewNumber, ParseRefusesWhatIsNotANumber) {
  EXPECT_EQ(hs::parse_qview_number("1.00034m").value(), 1.00034e-3);
  EXPECT_EQ(hs::parse_qview_number("355").value(), 355);
  for (const char* bad : {"", "-", "k", "1.2.3k", "inf", "0x10", " 5", "5 ", "1e3", "5x", "."})
    EXPECT_FALSE(hs::parse_qview_number(bad).has_value()) << bad;
}

// The first three rows of the sender's profile, from their self seconds and calls: q-view's
// self/call is self / calls (14.98 s / 80.7k = 185.6 us -> "186u"; 5.81 / 35.9M = 161.8 ns;
// 3.36 / 27.8M = 120.9 ns), tot/call is the total / calls (ipt_do_table: 136 ns x 27.8M =
// 3.7808 s of total), and % time is of the CPU time profiled: 14.98 s is 25.09 %, so
// 59.705 s (14.98 / 0.2509), which gives 9.73 % and 5.63 % for the next two.
TEST(QviewProfile, ReproducesTheSeedsSenderRows) {
  std::vector<hs::QviewRow> rows = {
      {"ipt_do_table", 3.36, 27.8e6, 27.8e6 * 136e-9},
      {"default_idle", 14.98, 80.7e3, 14.98},
      {"_spin_unlock_irqrestore", 5.81, 35.9e6, 5.81},
  };
  const std::string expected =
      "Flat profile of CPU_CYCLES in kernel-cpu1.hist#0:\n"
      "% time      self     cumul     calls self/call  tot/call name\n"
      " 25.09     14.98     14.98     80.7k      186u      186u default_idle\n"
      "  9.73      5.81     20.79     35.9M      162n      162n _spin_unlock_irqrestore\n"
      "  5.63      3.36     24.15     27.8M      121n      136n ipt_do_table\n";
  EXPECT_EQ(hs::format_qview_profile("Flat profile of CPU_CYCLES in kernel-cpu1.hist#0:", rows, 14.98 / 0.2509),
            expected);
}

// tcp_packet has no total per call in the seed (" 2.33      1.39     34.88     6.79M      205n
// - tcp_packet"): 1.39 s / 6.79M = 204.7 ns.
TEST(QviewProfile, RowWithoutTotalPrintsADash) {
  EXPECT_EQ(hs::format_qview_row({"tcp_packet", 1.39, 6.79e6, std::nullopt}, 2.33, 34.88),
            "  2.33      1.39     34.88     6.79M      205n         - tcp_packet");
}

TEST(QviewProfile, LeavesOutEmptyRowsAndKeepsTiesInOrder) {
  std::vector<hs::QviewRow> rows = {{"b", 1.0, 10, 1.0}, {"never", 0, 0, 0.0}, {"a", 1.0, 10, 1.0}};
  const std::string out = hs::format_qview_profile("t", rows, 4.0);
  EXPECT_EQ(out,
            "t\n% time      self     cumul     calls self/call  tot/call name\n"
            " 25.00      1.00      1.00        10      100m      100m b\n"
            " 25.00      1.00      2.00        10      100m      100m a\n");
}
