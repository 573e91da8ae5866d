#pragma once
// For the validation tests: the results of a shipped scenario from the report directory that
// the ValidationReport fixture writes once for all of them (`hcasim validate -j 2 --report
// HCASIM_VALIDATION_REPORT_DIR`, tests/validation_report_test.cpp, ctest FIXTURES_SETUP
// validation_report): prints the scenario's report (DIR/NAME-report.txt, what `hcasim run NAME`
// prints) on stdout, and hands back the status `hcasim run NAME` would exit with and the
// results CSV (DIR/NAME-results.csv), its columns by name.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "scenarios/run_report.h"
#include "scenarios/scenario.h"
#include "util/csv.h"

struct ScenarioRun {
  int exit_status = -1;  ///< from the report's verdict line: 0 "ok: ...", 1 "FAIL: ...", -1 no report
  bool csv_found = false;
  std::vector<std::vector<std::string>> rows;  ///< the CSV, header first
  std::map<std::string, size_t> col;           ///< header name -> column
};

inline ScenarioRun validated_scenario(const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path dir = HCASIM_VALIDATION_REPORT_DIR;
  ScenarioRun out;
  std::ifstream report(dir / (name + "-report.txt"));
  if (report.good()) {
    std::stringstream rs;
    rs << report.rdbuf();
    const std::string text = rs.str();
    std::cout << text;
    // The verdict is the report's last paragraph (format_run_report).
    const std::string verdict = text.substr(text.rfind("\n\n") == std::string::npos ? 0 : text.rfind("\n\n") + 2);
    if (verdict.rfind("ok: ", 0) == 0) out.exit_status = 0;
    if (verdict.rfind("FAIL: ", 0) == 0) out.exit_status = 1;
  } else {
    std::cout << "no " << (dir / (name + "-report.txt")).string()
              << ": did the ValidationReport fixture run (ctest runs it first)?\n";
  }
  const fs::path csv = dir / (name + "-results.csv");
  std::ifstream in(csv);
  out.csv_found = in.good();
  if (out.csv_found) {
    std::stringstream ss;
    ss << in.rdbuf();
    out.rows = hcasim::util::parse_csv(ss.str(), csv.string());
    if (!out.rows.empty())
      for (size_t i = 0; i < out.rows[0].size(); ++i) out.col[out.rows[0][i]] = i;
  }
  return out;
}
