// `hcasim validate` without the shipped scenarios' simulations (scenarios/validate.h,
// scenarios/report.h): its options and their errors, the [spread] table, the summary's medians
// and maxima and the target verdict on fabricated outcomes, the report writer (files, gnuplot,
// PNG magic, nothing half-written), and one end-to-end run of a tiny scenario through the
// binary (-l 0.2 points: well under a second).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "scenarios/report.h"
#include "scenarios/compare.h"
#include "scenarios/run_report.h"
#include "scenarios/scenario.h"
#include "scenarios/simulate.h"
#include "util/statistics.h"
#include "scenarios/validate.h"

namespace hcasim::scenarios {
namespace {

using namespace ::hcasim::util;


namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// A fresh directory under the temporary directory, removed at the end of the test.
class TempDir {
 public:
  explicit TempDir(const std::string& tag)
      : path_(fs::temp_directory_path() / ("hcasim-validate-test-" + tag + "-" + std::to_string(::getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// --- options ------------------------------------------------------------------------------------

TEST(ValidateArgs, Parses) {
  ValidateOptions o = parse_validate_args({});
  EXPECT_TRUE(o.scenarios.empty());
  EXPECT_EQ(o.jobs, 0);
  EXPECT_FALSE(o.report_dir);
  o = parse_validate_args({"seed000", "-j", "2", "my.toml", "--report", "out"});
  EXPECT_EQ(o.scenarios, (std::vector<std::string>{"seed000", "my.toml"}));
  EXPECT_EQ(o.jobs, 2);
  EXPECT_EQ(o.report_dir.value(), "out");
  EXPECT_EQ(parse_validate_args({"-j3"}).jobs, 3);
}

std::string args_error(const std::vector<std::string>& args) {
  try {
    parse_validate_args(args);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(ValidateArgs, BadJobsAndReport) {
  EXPECT_EQ(args_error({"-j", "0"}), "-j: '0' must be 1..4096");
  EXPECT_EQ(args_error({"-j", "5000"}), "-j: '5000' must be 1..4096");
  EXPECT_EQ(args_error({"-j", "two"}), "-j: 'two' is not a number");
  EXPECT_EQ(args_error({"-j", "1.5"}), "-j: '1.5' is not a number");
  EXPECT_EQ(args_error({"--report", ""}), "--report: empty path");
  EXPECT_NE(args_error({"--bogus"}).find("--bogus"), std::string::npos);
}

TEST(ValidateArgs, DurationAndIterationsShortenThePointsAndSaySo) {
  ValidateOptions o = parse_validate_args({});
  EXPECT_EQ(o.duration_s, 0);
  EXPECT_EQ(o.iterations, 0u);
  EXPECT_EQ(sim_length_note(o), "");
  o = parse_validate_args({"--duration", "2.5", "--iterations", "20000"});
  EXPECT_EQ(o.duration_s, 2.5);
  EXPECT_EQ(o.iterations, 20000u);
  EXPECT_EQ(sim_length_note(o),
            "netperf points are simulated for 2.5 s (--duration), whatever their -l says; perftest points for at "
            "most 20000 iterations (--iterations)");
  EXPECT_EQ(sim_length_note(parse_validate_args({"--iterations", "500"})),
            "perftest points for at most 500 iterations (--iterations)");
  EXPECT_EQ(args_error({"--duration", "-1"}), "--duration: '-1' must be 0..3600 seconds");
  EXPECT_EQ(args_error({"--duration", "long"}), "--duration: 'long' must be 0..3600 seconds");
  EXPECT_EQ(args_error({"--iterations", "1.5"}),
            "--iterations: '1.5' must be 0 or a whole number 5..100000000 (perftest's -n)");
  // A cap below perftest's MIN_ITER (5) was accepted, then every perftest child refused its -n.
  EXPECT_EQ(args_error({"--iterations", "2"}), "--iterations: '2' must be 0 or a whole number 5..100000000 (perftest's -n)");
  EXPECT_EQ(parse_validate_args({"--iterations", "5"}).iterations, 5u);
  EXPECT_EQ(parse_validate_args({"--iterations", "0"}).iterations, 0u);
}

TEST(SimLength, NetperfLengthReplacedPerftestIterationsCapped) {
  const std::vector<std::string> netperf = {"-P", "0", "-l", "60", "--", "-m", "64K"};
  EXPECT_EQ(with_sim_length("netperf", netperf, {}), netperf);
  EXPECT_EQ(with_sim_length("netperf", netperf, {2.0, 500, std::nullopt}),
            (std::vector<std::string>{"-P", "0", "-l", "60", "-l", "2", "--", "-m", "64K"}));
  EXPECT_EQ(with_sim_length("ib_write_lat", {"-s", "2", "-n", "1000000"}, {2.0, 20000, std::nullopt}),
            (std::vector<std::string>{"-s", "2", "-n", "1000000", "-n", "20000"}));
  EXPECT_EQ(with_sim_length("ib_write_lat", {"-s", "2"}, {std::nullopt, 20000, std::nullopt}),
            (std::vector<std::string>{"-s", "2", "-n", "1000"}));
}

std::string validate_error(const ValidateOptions& o) {
  try {
    validate(o);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

// Both fail before any simulation starts (validate returns only after simulating).
TEST(ValidateArgs, UnknownScenarioAndUnwritableReport) {
  ::setenv("HCASIM_DATA_DIR", HCASIM_SOURCE_DATA_DIR, 1);
  ValidateOptions o;
  o.scenarios = {"seed002", "no-such-scenario"};
  EXPECT_EQ(validate_error(o), "no-such-scenario: no such scenario file or name (looked in " HCASIM_SOURCE_DATA_DIR
                               "/scenarios)");

  TempDir tmp("args");
  o.scenarios = {"seed002"};
  o.report_dir = "/nonexistent-hcasim/report";
  EXPECT_EQ(validate_error(o), "--report /nonexistent-hcasim/report: cannot write (no such directory "
                               "/nonexistent-hcasim)");
  const fs::path file = tmp.path() / "a-file";
  std::ofstream(file) << "x";
  o.report_dir = (file / "report").string();  // under a regular file
  EXPECT_EQ(validate_error(o), "--report " + *o.report_dir + ": cannot write (no such directory " +
                                   file.string() + ")");
  o.report_dir = file.string();  // a file where the directory should be
  EXPECT_EQ(validate_error(o), "--report " + file.string() + ": cannot write (it exists and is not a directory)");
  fs::create_directories(tmp.path() / "mine");
  std::ofstream(tmp.path() / "mine" / "notes.txt") << "keep me";
  o.report_dir = (tmp.path() / "mine").string();  // somebody's directory: never replaced
  EXPECT_EQ(validate_error(o), "--report " + *o.report_dir +
                                   ": cannot write (it is a directory that holds no report.md: not a report to "
                                   "replace)");
  EXPECT_EQ(slurp(tmp.path() / "mine" / "notes.txt"), "keep me");
  ::unsetenv("HCASIM_DATA_DIR");
}

// The binary: one line on stderr, status 2, nothing on stdout.
TEST(ValidateArgs, BinaryExitsTwoWithOneLine) {
  TempDir tmp("binary");
  auto run = [&](const std::string& args, std::string& err) {
    const std::string cmd = std::string(HCASIM_BINARY) + " validate " + args + " > " + (tmp.path() / "out").string() +
                            " 2> " + (tmp.path() / "err").string();
    const int rc = std::system(cmd.c_str());
    err = slurp(tmp.path() / "err");
    EXPECT_EQ(slurp(tmp.path() / "out"), "") << args;
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  };
  std::string err;
  EXPECT_EQ(run("-j 0", err), 2);
  EXPECT_EQ(err, "hcasim: error: -j: '0' must be 1..4096\n");
  EXPECT_EQ(run("seed002 no-such-scenario", err), 2);
  EXPECT_EQ(err.substr(0, 58), "hcasim: error: no-such-scenario: no such scenario file or ");
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1);
  EXPECT_EQ(run("seed002 --report /nonexistent-hcasim/r", err), 2);
  EXPECT_EQ(err, "hcasim: error: --report /nonexistent-hcasim/r: cannot write (no such directory "
                 "/nonexistent-hcasim)\n");
}

TEST(ValidateArgs, DefaultIsEveryScenarioFileSortedByName) {
  ::setenv("HCASIM_DATA_DIR", HCASIM_SOURCE_DATA_DIR, 1);
  const std::string dir = std::string(HCASIM_SOURCE_DATA_DIR) + "/scenarios/";
  EXPECT_EQ(default_scenario_files(),
            (std::vector<std::string>{dir + "seed000.toml", dir + "seed001.toml", dir + "seed002.toml",
                                      dir + "seed003.toml"}));
  TempDir tmp("empty-data");
  fs::create_directories(tmp.path() / "scenarios");
  ::setenv("HCASIM_DATA_DIR", tmp.path().c_str(), 1);
  try {
    default_scenario_files();
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), (tmp.path() / "scenarios").string() + ": no scenario files (*.toml)");
  }
  ::unsetenv("HCASIM_DATA_DIR");
}

// --- [spread] -------------------------------------------------------------------------------------

// Line numbers below are those of this text (line 1 is "name = ...").
constexpr const char* kSpreadScenario = R"(name = "sp"
platform = "plat-a"
[tolerance]
throughput = 0.15
service_demand = 0.25
[spread]
throughput = 0.0397
service_demand = 0.2182
source = "max |T1 - T3| / T3"

[[point]]
table = "T"
mode = "SDP"
command = "netperf -l 60 -- -m 64K"
reference = { file = "r.csv", match = { table = "T" } }
)";

std::string spread_error(const std::string& from, const std::string& to) {
  std::string text = kSpreadScenario;
  text.replace(text.find(from), from.size(), to);
  try {
    parse_scenario(text, "s.toml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Spread, Parses) {
  const Scenario s = parse_scenario(kSpreadScenario, "s.toml");
  ASSERT_TRUE(s.spread);
  EXPECT_DOUBLE_EQ(s.spread->throughput.value(), 0.0397);
  EXPECT_DOUBLE_EQ(s.spread->service_demand.value(), 0.2182);
  EXPECT_FALSE(s.spread->utilisation);
  EXPECT_EQ(s.spread->source, "max |T1 - T3| / T3");
  EXPECT_EQ(s.spread->line, 6u);
  std::string without = kSpreadScenario;
  without.erase(without.find("[spread]"), without.find("\n[[point]]") - without.find("[spread]"));
  EXPECT_FALSE(parse_scenario(without, "s.toml").spread);
}

TEST(Spread, ErrorsNameFileAndLine) {
  EXPECT_EQ(spread_error("throughput = 0.0397", "throughput = 0"), "s.toml:7: spread: 'throughput' must be > 0");
  EXPECT_EQ(spread_error("throughput = 0.0397", "throughput = \"4%\""),
            "s.toml:7: spread: 'throughput' must be a number");
  EXPECT_EQ(spread_error("service_demand = 0.2182", "sd = 0.2182"), "s.toml:8: spread: unknown key 'sd'");
  EXPECT_EQ(spread_error("source = \"max |T1 - T3| / T3\"\n", ""), "s.toml:6: spread: missing key 'source'");
  EXPECT_EQ(spread_error("source = \"max |T1 - T3| / T3\"", "source = 3"), "s.toml:9: spread: 'source' must be a string");
  EXPECT_EQ(spread_error("throughput = 0.0397\nservice_demand = 0.2182\n", ""),
            "s.toml:6: spread: no metric declared (throughput, service_demand or utilisation)");
  std::string flat = kSpreadScenario;  // spread = 0.04 at the top level
  flat.erase(flat.find("[spread]"), flat.find("\n[[point]]") - flat.find("[spread]"));
  flat.replace(flat.find("platform = \"plat-a\"\n"), 19, "platform = \"plat-a\"\nspread = 0.04\n");
  try {
    parse_scenario(flat, "s.toml");
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "s.toml:3: 'spread' must be a table");
  }
  // Only netperf points have a target.
  std::string latency = kSpreadScenario;
  latency.replace(latency.find("throughput = 0.15\nservice_demand = 0.25"), 38, "t_typical_us = 0.05\nt_min_us = 0.08");
  latency.replace(latency.find("netperf -l 60 -- -m 64K"), 23, "ib_write_lat -s 2");
  try {
    parse_scenario(latency, "s.toml");
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "s.toml:6: spread: applies to netperf points, and the file has none");
  }
}

TEST(Spread, ShippedScenariosDeclareTheirs) {
  const Scenario s0 = load_scenario(std::string(HCASIM_SOURCE_DATA_DIR) + "/scenarios/seed000.toml");
  ASSERT_TRUE(s0.spread);
  // max |T1 - T3| / T3: throughput BZCOPY -m 1M, |9847.76 - 10254.89| / 10254.89;
  // service demand BZCOPY -m 1M send, |0.603 - 0.495| / 0.495.
  EXPECT_NEAR(s0.spread->throughput.value(), (10254.89 - 9847.76) / 10254.89, 5e-5);
  EXPECT_NEAR(s0.spread->service_demand.value(), (0.603 - 0.495) / 0.495, 5e-5);
  EXPECT_FALSE(s0.spread->utilisation);  // T1 did not measure it
  const Scenario s2 = load_scenario(std::string(HCASIM_SOURCE_DATA_DIR) + "/scenarios/seed002.toml");
  ASSERT_TRUE(s2.spread);
  // BZCOPY -m 1M, -T 2,2 vs -T 0,0: send service demand 0.811 vs 0.996, throughput 7250.43 vs 7457.95.
  EXPECT_NEAR(s2.spread->service_demand.value(), (0.996 - 0.811) / 0.996, 5e-4);
  EXPECT_NEAR(s2.spread->throughput.value(), (7457.95 - 7250.43) / 7457.95, 5e-4);
  const Scenario s1 = load_scenario(std::string(HCASIM_SOURCE_DATA_DIR) + "/scenarios/seed001.toml");
  EXPECT_FALSE(s1.spread);
}

// --- summary and target -----------------------------------------------------------------------------

// Line numbers are irrelevant here; points 0-3 table T, 4 table U, 5-7 latency table L.
constexpr const char* kFabricated = R"(name = "fab"
platform = "plat-a"
[tolerance]
throughput = 0.15
service_demand = 0.25
t_typical_us = 0.05
t_min_us = 0.08
[spread]
service_demand = 0.20
source = "made up"

[[point]]
table = "T"
mode = "SDP"
command = "netperf -l 60 -- -m 64K"
reference = { file = "r.csv", match = { p = "0" } }
[[point]]
table = "T"
mode = "SDP"
command = "netperf -l 60 -- -m 1M"
reference = { file = "r.csv", match = { p = "1" } }
[[point]]
table = "T"
mode = "BZCOPY"
command = "netperf -l 60 -- -m 64K"
reference = { file = "r.csv", match = { p = "2" } }
[[point]]
table = "T"
mode = "BZCOPY"
command = "netperf -l 60 -- -r 1M"
reference = { file = "r.csv", match = { p = "3" } }
gated = false
[[point]]
table = "U"
mode = "SDP"
command = "netperf -l 60"
reference = { file = "r.csv", match = { p = "4" } }
[[point]]
table = "L"
mode = "BF on"
command = "ib_write_lat -s 2"
reference = { file = "l.csv", match = { p = "5" } }
[[point]]
table = "L"
mode = "BF on"
command = "ib_write_lat -s 64"
reference = { file = "l.csv", match = { p = "6" } }
[[point]]
table = "L"
mode = "BF off"
command = "ib_write_lat -s 2"
reference = { file = "l.csv", match = { p = "7" } }
gated = false
)";

Figures netperf_figures(double thr, double sdl, double sdr) {
  Figures f;
  f.throughput_mbps = thr;
  f.sd_local = sdl;
  f.sd_remote = sdr;
  return f;
}

LatencyFigures latency(uint64_t bytes, double typical, double min) {
  LatencyFigures f;
  f.bytes = bytes;
  f.t_typical_us = typical;
  f.t_min_us = min;
  f.t_max_us = 5.0;
  return f;
}

/// The fabricated outcomes; errors in the comments.
std::vector<PointOutcome> fabricated_outcomes(const Scenario& s) {
  const Tolerance& t = s.tolerance;
  return {
      // throughput +10 %, SD -10 % and 0 %
      evaluate_point(s.points[0], t, netperf_figures(1000, 1.0, 2.0), netperf_figures(1100, 0.9, 2.0)),
      // throughput -2 %, SD +5 % and +20 %
      evaluate_point(s.points[1], t, netperf_figures(1000, 1.0, 1.0), netperf_figures(980, 1.05, 1.2)),
      // throughput +3 %, SD 0 % and 0 %
      evaluate_point(s.points[2], t, netperf_figures(2000, 1.0, 1.0), netperf_figures(2060, 1.0, 1.0)),
      // not gated: throughput -30 %, SD -15 % and 0 %
      evaluate_point(s.points[3], t, netperf_figures(1000, 1.0, 1.0), netperf_figures(700, 0.85, 1.0)),
      // table U: throughput -10 %, SD +50 % (FAIL) and 0 %
      evaluate_point(s.points[4], t, netperf_figures(500, 1.0, 1.0), netperf_figures(450, 1.5, 1.0)),
      // latency: t_typical +0.02, t_min 0
      evaluate_latency_point(s.points[5], t, latency(2, 1.00, 0.90), latency(2, 1.02, 0.90)),
      // t_typical -0.05 (at the tolerance), t_min 0
      evaluate_latency_point(s.points[6], t, latency(64, 1.10, 1.00), latency(64, 1.05, 1.00)),
      // not gated: t_typical +0.10, t_min -0.10
      evaluate_latency_point(s.points[7], t, latency(2, 1.20, 1.10), latency(2, 1.30, 1.00)),
  };
}

TEST(Summary, MediansMaximaAndGatedCounts) {
  const Scenario s = parse_scenario(kFabricated, "fab.toml");
  const auto outcomes = fabricated_outcomes(s);
  const auto tables = summarize_tables(s, outcomes);
  ASSERT_EQ(tables.size(), 3u);

  const TableSummary& t = tables[0];
  EXPECT_EQ(t.table, "T");
  EXPECT_EQ(t.kind, PointKind::Netperf);
  EXPECT_EQ(t.points, 4u);
  EXPECT_EQ(t.gated, 3u);
  EXPECT_TRUE(t.within);
  ASSERT_EQ(t.metrics.size(), 2u);  // no point measured utilisation
  const MetricSummary& thr = t.metrics[0];
  EXPECT_EQ(thr.name, "throughput");
  // |errors| 0.10 0.02 0.03 0.30: median (0.03 + 0.10) / 2, max 0.30 (the not-gated point)
  EXPECT_NEAR(thr.median.value(), 0.065, 1e-12);
  EXPECT_NEAR(thr.max.value(), 0.30, 1e-12);
  EXPECT_DOUBLE_EQ(thr.tolerance, 0.15);
  EXPECT_EQ(thr.gated, 3u);
  EXPECT_EQ(thr.gated_within, 3u);
  const MetricSummary& sd = t.metrics[1];
  EXPECT_EQ(sd.name, "service demand");
  // |errors| 0.10 0 0.05 0.20 0 0 0.15 0 -> 0 0 0 0 0.05 0.10 0.15 0.20: median 0.025, max 0.20
  EXPECT_EQ(sd.abs_errors.size(), 8u);
  EXPECT_NEAR(sd.median.value(), 0.025, 1e-12);
  EXPECT_NEAR(sd.max.value(), 0.20, 1e-12);
  EXPECT_EQ(sd.gated_within, 3u);

  const TableSummary& u = tables[1];
  EXPECT_EQ(u.table, "U");
  EXPECT_FALSE(u.within);
  EXPECT_EQ(u.metrics[1].gated, 1u);
  EXPECT_EQ(u.metrics[1].gated_within, 0u);  // SD +50 % beyond 25 %
  EXPECT_EQ(u.metrics[0].gated_within, 1u);
  // |errors| 0.50 and 0: median 0.25
  EXPECT_NEAR(u.metrics[1].median.value(), 0.25, 1e-12);

  const TableSummary& l = tables[2];
  EXPECT_EQ(l.table, "L");
  EXPECT_EQ(l.kind, PointKind::Latency);
  EXPECT_EQ(l.points, 3u);
  EXPECT_EQ(l.gated, 2u);
  ASSERT_EQ(l.metrics.size(), 2u);
  // t_typical |errors| 0.02 0.05 0.10, us; t_min 0 0 0.10
  EXPECT_NEAR(l.metrics[0].median.value(), 0.05, 1e-12);
  EXPECT_NEAR(l.metrics[0].max.value(), 0.10, 1e-12);
  EXPECT_EQ(l.metrics[0].gated_within, 2u);  // -0.05 is at the tolerance: within
  EXPECT_NEAR(l.metrics[1].median.value(), 0.0, 1e-12);
  EXPECT_NEAR(l.metrics[1].max.value(), 0.10, 1e-12);
  EXPECT_EQ(l.metrics[1].gated_within, 2u);
  EXPECT_TRUE(l.within);
}

TEST(Summary, TargetAndTheSpreadRule) {
  EXPECT_EQ(target_allowance(std::nullopt), std::make_pair(0.05, 0.10));
  EXPECT_EQ(target_allowance(0.07), std::make_pair(0.07, 0.10));
  EXPECT_EQ(target_allowance(0.2182), std::make_pair(0.2182, 0.2182));

  Scenario s = parse_scenario(kFabricated, "fab.toml");
  const auto outcomes = fabricated_outcomes(s);
  auto tables = summarize_tables(s, outcomes);
  // Throughput: median 6.5 % > 5 %: missed. Service demand: max 20 % > 10 %, but the declared
  // spread of 20 % allows median and max up to 20 %: met.
  EXPECT_FALSE(tables[0].metrics[0].target_met);
  EXPECT_TRUE(tables[0].metrics[1].target_met);
  EXPECT_DOUBLE_EQ(tables[0].metrics[1].allowed_max, 0.20);
  EXPECT_FALSE(tables[0].target_met);

  // Without the spread the service demand misses it too; with a throughput spread of 7 % the
  // throughput median passes (6.5 <= 7) but not its max (30 % > 10 %).
  s.spread.reset();
  tables = summarize_tables(s, outcomes);
  EXPECT_FALSE(tables[0].metrics[1].target_met);
  s.spread = Spread{};
  s.spread->throughput = 0.07;
  tables = summarize_tables(s, outcomes);
  EXPECT_DOUBLE_EQ(tables[0].metrics[0].allowed_median, 0.07);
  EXPECT_FALSE(tables[0].metrics[0].target_met);
  s.spread->throughput = 0.30;
  tables = summarize_tables(s, outcomes);
  EXPECT_TRUE(tables[0].metrics[0].target_met);
}

TEST(Summary, PrintedSummary) {
  const Scenario s = parse_scenario(kFabricated, "fab.toml");
  const std::string text = format_validate_summary({s}, {fabricated_outcomes(s)});
  const std::string expected_rows =
      "scenario  table  kind     points  gated  metric             median        max  tolerance  gated within\n"
      "fab       T      netperf       4      3  throughput          6.5 %     30.0 %       15 %  3/3 yes\n"
      "                                         service demand      2.5 %     20.0 %       25 %  3/3 yes\n"
      "                                         target missed (throughput: median 6.5 %, max 30.0 %, allowed 5.0 % / "
      "10.0 %)\n"
      "          U      netperf       1      1  throughput         10.0 %     10.0 %       15 %  1/1 yes\n"
      "                                         service demand     25.0 %     50.0 %       25 %  0/1 NO\n"
      "                                         target missed (throughput: median 10.0 %, max 10.0 %, allowed 5.0 % / "
      "10.0 %; service demand: median 25.0 %, max 50.0 %, allowed 20.0 % / 20.0 %)\n"
      "          L      latency       3      2  t_typical        0.050 us   0.100 us    0.05 us  2/2 yes\n"
      "                                         t_min            0.000 us   0.100 us    0.08 us  2/2 yes\n"
      "\n"
      "gated points within tolerance: fab 5 of 6\n"
      "target met by 0 of 2 netperf tables\n"
      "FAIL: 1 of 6 gated points out of tolerance (fab: 1)\n";
  ASSERT_NE(text.find("scenario  table"), std::string::npos) << text;
  EXPECT_EQ(text.substr(text.find("scenario  table")), expected_rows);
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "summary of 1 scenario, 8 points: |error| relative for netperf, in us for latency; median and max over "
            "every point of a table, gated or not");
}

// --- the report ---------------------------------------------------------------------------------------

TEST(Report, SizesAndLabels) {
  const Scenario s = parse_scenario(kFabricated, "fab.toml");
  EXPECT_EQ(netperf_message_size(s.points[0]).value(), 65536u);
  EXPECT_EQ(netperf_message_size(s.points[1]).value(), 1048576u);
  bool from_request = false;
  EXPECT_EQ(netperf_message_size(s.points[1], &from_request).value(), 1048576u);
  EXPECT_FALSE(from_request);
  EXPECT_EQ(netperf_message_size(s.points[3], &from_request).value(), 1048576u);  // -r 1M
  EXPECT_TRUE(from_request);
  EXPECT_FALSE(netperf_message_size(s.points[4]));                 // no -m, no -r
  EXPECT_FALSE(netperf_message_size(s.points[5]));                 // a latency point
  EXPECT_EQ(size_label(2), "2");
  EXPECT_EQ(size_label(1536), "1536");
  EXPECT_EQ(size_label(65536), "64K");
  EXPECT_EQ(size_label(4194304), "4M");
  EXPECT_EQ(size_label(1ull << 31), "2G");
}

TEST(Report, FilesAndData) {
  const Scenario s = parse_scenario(kFabricated, "fab.toml");
  const ReportFiles r = make_report_files({s}, {fabricated_outcomes(s)});
  std::vector<std::string> names;
  for (const auto& [name, content] : r.files) names.push_back(name);
  // U's one point has no message size (no -m, no -r): no plot of U.
  EXPECT_EQ(names, (std::vector<std::string>{"report.md", "fab-results.csv", "fab-report.txt", "fab-T-throughput.dat",
                                             "fab-L-t_typical.dat", "fab-errors-netperf.dat",
                                             "fab-errors-latency.dat", "plots.gp"}));
  EXPECT_EQ(r.plots, (std::vector<std::string>{"fab-T-throughput.png", "fab-L-t_typical.png",
                                               "fab-errors-netperf.png", "fab-errors-latency.png"}));
  auto file = [&](const std::string& name) {
    for (const auto& [n, content] : r.files)
      if (n == name) return content;
    return std::string();
  };
  // Table T: SDP at 64K and 1M, BZCOPY at 64K and (-r) 1M, sorted by size within each mode.
  const std::string t = file("fab-T-throughput.dat");
  EXPECT_NE(t.find("# index 0: SDP\n65536 1000 1100\n1048576 1000 980\n\n\n# index 1: BZCOPY\n65536 2000 2060\n"
                   "1048576 1000 700\n"),
            std::string::npos)
      << t;
  // One of T's sizes is a -r value: the axis says so.
  EXPECT_NE(file("plots.gp").find("set xlabel 'message size (B, log2 scale): the -r value; TCP_STREAM ignores -r"),
            std::string::npos);
  // Errors: throughput in %, t_typical in us, gated 1/0.
  const std::string e = file("fab-errors-netperf.dat");
  EXPECT_NE(e.find("\n0 10 1 \"T SDP -m 64K\"\n"), std::string::npos) << e;
  EXPECT_NE(e.find("\n3 -30 0 \"T BZCOPY -r 1M\"\n"), std::string::npos) << e;
  const std::string l = file("fab-errors-latency.dat");
  EXPECT_NE(l.find("\n2 0.10000000000000009 0 \"L BF off 2 B\"\n"), std::string::npos) << l;
  EXPECT_EQ(file("fab-results.csv"), format_run_csv(s, fabricated_outcomes(s)));
  const std::string md = file("report.md");
  EXPECT_NE(md.find("**FAIL**: 1 of 6 gated points out of tolerance."), std::string::npos);
  EXPECT_NE(md.find("![fab: error per point](fab-errors-netperf.png)"), std::string::npos);
  EXPECT_NE(md.find("| T | netperf | 4 | 3 | throughput | 6.5 % | 30.0 % | 15 % | 3/3 yes | missed (allowed 5.0 % / "
                    "10.0 %) |"),
            std::string::npos)
      << md;
}

bool is_png(const fs::path& p) {
  const std::string bytes = slurp(p);
  return bytes.size() > 8 && bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0;
}

TEST(Report, WritesPngsWithGnuplotAndNothingHalfWritten) {
  const auto gnuplot = find_in_path("gnuplot");
  ASSERT_TRUE(gnuplot) << "gnuplot is not installed (scripts/install-deps.sh installs gnuplot-nox)";
  const Scenario s = parse_scenario(kFabricated, "fab.toml");
  const std::vector<std::vector<PointOutcome>> outcomes = {fabricated_outcomes(s)};
  TempDir tmp("report");
  const fs::path dir = tmp.path() / "report";
  write_validation_report(dir.string(), {s}, outcomes, *gnuplot);
  const ReportFiles r = make_report_files({s}, outcomes);
  for (const auto& [name, content] : r.files) EXPECT_EQ(slurp(dir / name), content) << name;
  for (const auto& png : r.plots) {
    EXPECT_TRUE(is_png(dir / png)) << png;
    EXPECT_GT(fs::file_size(dir / png), 5000u) << png;
  }
  EXPECT_EQ(fs::status(dir).permissions() & fs::perms::others_read, fs::perms::others_read);

  // gnuplot failing or missing: one line naming --report, the previous report left as it was,
  // no temporary directory left beside it.
  std::ofstream(dir / "marker") << "previous";
  auto error = [&](const std::string& program) {
    try {
      write_validation_report(dir.string(), {s}, outcomes, program);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error("/bin/false"), "--report " + dir.string() + ": gnuplot failed (exit status 1): (no message)");
  EXPECT_EQ(error("/nonexistent/gnuplot"),
            "--report " + dir.string() + ": cannot run /nonexistent/gnuplot (No such file or directory)");
  EXPECT_EQ(slurp(dir / "marker"), "previous");
  size_t entries = 0;
  for (const auto& entry : fs::directory_iterator(tmp.path())) {
    ++entries;
    EXPECT_EQ(entry.path().filename(), "report");
  }
  EXPECT_EQ(entries, 1u);

  // A new report replaces the previous one whole.
  write_validation_report(dir.string(), {s}, outcomes, *gnuplot);
  EXPECT_FALSE(fs::exists(dir / "marker"));
  EXPECT_TRUE(is_png(dir / "fab-errors-latency.png"));
}

// --- end to end -----------------------------------------------------------------------------------------

TEST(ValidateRun, TinyScenarioSameOutputWhateverJAndExitStatus) {
  TempDir tmp("e2e");
  std::ofstream(tmp.path() / "ref.csv") << "size,throughput_mbps,sd_local_us_per_kb,sd_remote_us_per_kb\n"
                                           "64K,7500,0.75,1.1\n1M,7200,1.1,1.1\n";
  auto scenario = [&](const std::string& name, const std::string& tolerance) {
    std::string text = "name = \"" + name + "\"\nplatform = \"infinihost3-pcie1x8\"\n[tolerance]\nthroughput = " +
                       tolerance + "\nservice_demand = 0.15\n";
    for (const char* size : {"64K", "1M"})
      text += std::string("[[point]]\ntable = \"A\"\nmode = \"SDP\"\nset = [\"sdp.zcopy_thresh=0\"]\n") +
              "command = \"netperf -T 0,0 -c -C -t TCP_STREAM -H peer -l 0.2 -- -m " + size + "\"\n" +
              "reference = { file = \"" + (tmp.path() / "ref.csv").string() + "\", match = { size = \"" + size +
              "\" } }\n";
    std::ofstream(tmp.path() / (name + ".toml")) << text;
    return (tmp.path() / (name + ".toml")).string();
  };
  const std::string loose = scenario("loose", "0.10"), tight = scenario("tight", "0.001");
  auto run = [&](const std::string& args, std::string& out) {
    const std::string cmd = std::string(HCASIM_BINARY) + " validate " + args + " > " + (tmp.path() / "out").string() +
                            " 2> " + (tmp.path() / "err").string();
    const int rc = std::system(cmd.c_str());
    out = slurp(tmp.path() / "out");
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  };
  std::string one, two;
  EXPECT_EQ(run(loose + " " + tight + " -j 1", one), 1);  // tight's 0.1 % is missed
  EXPECT_EQ(run(tight + " " + loose + " -j 2", two), 1);
  std::string ordered;
  EXPECT_EQ(run(loose + " " + tight + " -j 2", ordered), 1);
  EXPECT_EQ(one, ordered);  // -j changes nothing
  EXPECT_NE(one.find("scenario loose: platform infinihost3-pcie1x8"), std::string::npos);
  EXPECT_LT(one.find("scenario loose:"), one.find("scenario tight:"));
  EXPECT_LT(two.find("scenario tight:"), two.find("scenario loose:"));  // in the order given
  EXPECT_NE(one.find("\ngated points within tolerance: loose 2 of 2, tight 0 of 2\n"), std::string::npos) << one;
  EXPECT_EQ(one.substr(one.rfind("\n", one.size() - 2) + 1), "FAIL: 2 of 4 gated points out of tolerance (tight: 2)\n");
  std::string alone;
  EXPECT_EQ(run(loose + " --report " + (tmp.path() / "rep").string(), alone), 0);
  EXPECT_EQ(alone.substr(alone.rfind("\n", alone.size() - 2) + 1), "ok: all 2 gated points of 1 scenario within tolerance\n");
  EXPECT_TRUE(is_png(tmp.path() / "rep" / "loose-A-throughput.png"));
  EXPECT_TRUE(is_png(tmp.path() / "rep" / "loose-errors.png"));
  EXPECT_TRUE(fs::exists(tmp.path() / "rep" / "loose-results.csv"));
}

}  // namespace
}  // namespace hcasim::scenarios
