#pragma once
// For the validation tests: runs a shipped scenario as a user does (`hcasim run NAME -j 2
// --csv FILE`, HCASIM_BINARY), prints its report on stdout, and hands back the exit status and
// the results CSV, its columns by name.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "scenarios/run.h"

struct ScenarioRun {
  int exit_status = -1;  ///< -1 when hcasim did not exit normally
  bool csv_found = false;
  std::vector<std::vector<std::string>> rows;  ///< the CSV, header first
  std::map<std::string, size_t> col;           ///< header name -> column
};

inline ScenarioRun run_shipped_scenario(const std::string& name) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("hcasim-validation-" + name + "-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path csv = dir / (name + ".csv");
  const std::string cmd = std::string(HCASIM_BINARY) + " run " + name + " -j 2 --csv " + csv.string() + " > " +
                          (dir / "report.txt").string();
  const int rc = std::system(cmd.c_str());
  std::ifstream report(dir / "report.txt");
  std::stringstream rs;
  rs << report.rdbuf();
  std::cout << rs.str();
  ScenarioRun out;
  if (WIFEXITED(rc)) out.exit_status = WEXITSTATUS(rc);
  std::ifstream in(csv);
  out.csv_found = in.good();
  if (out.csv_found) {
    std::stringstream ss;
    ss << in.rdbuf();
    out.rows = hcasim::scenarios::parse_csv(ss.str(), csv.string());
    if (!out.rows.empty())
      for (size_t i = 0; i < out.rows[0].size(); ++i) out.col[out.rows[0][i]] = i;
  }
  fs::remove_all(dir);
  return out;
}
