// The validation fixture (ctest FIXTURES_SETUP validation_report; ValidationSeed000, 001, 002
// and 003 require it): runs every shipped scenario once, as a user does, with `hcasim validate -j 2
// --report HCASIM_VALIDATION_REPORT_DIR`, prints its output (each scenario's report, then the
// summary), and checks the report directory: report.md, each scenario's results CSV and report
// text, and every PNG report.md links to (a PNG by its magic bytes, not tiny). It passes when
// validate ran to the end (exit status 0 or 1) and its exit status agrees with the results
// CSVs; whether each scenario's gated points are within tolerance is the ValidationSeed tests'
// to say, from those CSVs, so that a failing scenario fails its own test.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <string>

#include "util/csv.h"
#include "tests/sim_length.h"

namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ValidationReport, ValidateWritesTheReportOfEveryScenario) {
  const fs::path dir = HCASIM_VALIDATION_REPORT_DIR;
  // Never let the ValidationSeed tests read a previous run's results.
  fs::remove_all(dir);
  const fs::path out = dir.string() + ".stdout", err = dir.string() + ".stderr";
  const std::string cmd = std::string(HCASIM_BINARY) + " validate -j 2" + test_validate_length_args() +
                          " --report " + dir.string() + " > " +
                          out.string() + " 2> " + err.string();
  const int rc = std::system(cmd.c_str());
  const std::string text = slurp(out);
  std::cout << text << slurp(err);
  fs::remove(out);
  fs::remove(err);
  ASSERT_TRUE(WIFEXITED(rc)) << "hcasim validate did not exit";
  const int status = WEXITSTATUS(rc);
  ASSERT_TRUE(status == 0 || status == 1) << "hcasim validate failed (exit status " << status << ")";

  ASSERT_TRUE(fs::is_regular_file(dir / "report.md")) << "no report.md";
  const std::string md = slurp(dir / "report.md");
  bool any_fail = false;
  for (const char* name : {"seed000", "seed001", "seed002", "seed003"}) {
    const fs::path csv = dir / (std::string(name) + "-results.csv");
    ASSERT_TRUE(fs::is_regular_file(csv)) << csv;
    EXPECT_TRUE(fs::is_regular_file(dir / (std::string(name) + "-report.txt"))) << name;
    EXPECT_NE(md.find(std::string("\n## ") + name + "\n"), std::string::npos) << name;
    const auto rows = hcasim::util::parse_csv(slurp(csv), csv.string());
    ASSERT_FALSE(rows.empty());
    const auto status_col = std::find(rows[0].begin(), rows[0].end(), "status") - rows[0].begin();
    ASSERT_LT(static_cast<size_t>(status_col), rows[0].size()) << csv << ": no status column";
    for (size_t i = 1; i < rows.size(); ++i) any_fail = any_fail || rows[i].at(status_col) == "FAIL";
  }
  // The exit status and the summary's verdict say what the CSVs say.
  EXPECT_EQ(status, any_fail ? 1 : 0);
  const std::string last = text.substr(text.rfind('\n', text.size() - 2) + 1);
  EXPECT_EQ(last.rfind(any_fail ? "FAIL: " : "ok: ", 0), 0u) << last;

  // Every PNG report.md shows: seed000 has 6 netperf tables, seed001 2 latency tables, seed002
  // 2 netperf tables, seed003 2 netperf tables, and each scenario one error chart.
  std::set<std::string> pngs;
  for (size_t at = md.find("]("); at != std::string::npos; at = md.find("](", at + 2)) {
    const size_t end = md.find(')', at);
    const std::string link = md.substr(at + 2, end - at - 2);
    if (link.size() > 4 && link.compare(link.size() - 4, 4, ".png") == 0) pngs.insert(link);
  }
  EXPECT_EQ(pngs.size(), 6u + 1 + 2 + 1 + 2 + 1 + 2 + 1);
  for (const auto& png : pngs) {
    const fs::path p = dir / png;
    ASSERT_TRUE(fs::is_regular_file(p)) << png;
    const std::string bytes = slurp(p);
    EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8)) << png << ": not a PNG";
    EXPECT_GT(bytes.size(), 10000u) << png << ": too small to hold a plot";
  }
  EXPECT_TRUE(pngs.count("seed000-T3_m_flag-throughput.png"));
  EXPECT_TRUE(pngs.count("seed001-kvm_passthrough-t_typical.png"));
  EXPECT_TRUE(pngs.count("seed002-errors.png"));
  EXPECT_TRUE(pngs.count("seed003-seed004-throughput.png"));
}

}  // namespace
