// `hcasim run` without simulations (scenarios/run.h): scenario files and their errors,
// shell-like splitting, reference CSV rows, comparison, report and CSV text, options.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scenarios/datadir.h"
#include "scenarios/run.h"

namespace hcasim::scenarios {
namespace {

std::string scenario_error(const std::string& text) {
  try {
    parse_scenario(text, "s.toml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// Line numbers below are those of this text (line 1 is "name = ...").
constexpr const char* kScenario = R"(name = "tiny"
description = "two points"
platform = "plat-a"
source = "a mail"
[tolerance]
throughput = 0.15
service_demand = 0.25

[[point]]
table = "T3_m_flag"
mode = "SDP"
set = ["sdp.zcopy_thresh=0"]
command = "netperf -C -c -P 0 -t TCP_STREAM -H 193.168.10.143 -l 60 -- -m 64K"
reference = { file = "validation/x.csv", match = { table = "T3_m_flag", mode = "SDP", send_size_bytes = 65536 } }

[[point]]
table = "V"
mode = "BZCOPY"
platform = "plat-b"
command = "netperf -v2 -4 -H 'my host' -l 30 -t TCP_STREAM -c -C -- -m 128K"
reference = { file = "validation/y.csv", match = { netperf_version = "2.4.1" } }
gated = false
)";

TEST(Scenario, Parses) {
  const Scenario s = parse_scenario(kScenario, "s.toml");
  EXPECT_EQ(s.name, "tiny");
  EXPECT_EQ(s.description, "two points");
  EXPECT_EQ(s.platform, "plat-a");
  EXPECT_EQ(s.source, "a mail");
  EXPECT_EQ(s.origin, "s.toml");
  EXPECT_DOUBLE_EQ(s.tolerance.throughput, 0.15);
  EXPECT_DOUBLE_EQ(s.tolerance.service_demand, 0.25);
  ASSERT_EQ(s.points.size(), 2u);

  const ScenarioPoint& a = s.points[0];
  EXPECT_EQ(a.table, "T3_m_flag");
  EXPECT_EQ(a.mode, "SDP");
  EXPECT_EQ(a.set, std::vector<std::string>{"sdp.zcopy_thresh=0"});
  EXPECT_EQ(a.platform, "plat-a");
  EXPECT_EQ(a.command, "netperf -C -c -P 0 -t TCP_STREAM -H 193.168.10.143 -l 60 -- -m 64K");
  EXPECT_EQ(a.words, (std::vector<std::string>{"-C", "-c", "-P", "0", "-t", "TCP_STREAM", "-H",
                                               "193.168.10.143", "-l", "60", "--", "-m", "64K"}));
  EXPECT_EQ(a.size_flag, "-m 64K");
  EXPECT_EQ(a.reference.file, "validation/x.csv");
  EXPECT_EQ(a.reference.match,
            (std::vector<std::pair<std::string, std::string>>{
                {"mode", "SDP"}, {"send_size_bytes", "65536"}, {"table", "T3_m_flag"}}));
  EXPECT_TRUE(a.gated);
  EXPECT_EQ(a.line, 9u);

  const ScenarioPoint& b = s.points[1];
  EXPECT_EQ(b.platform, "plat-b");
  EXPECT_TRUE(b.set.empty());
  EXPECT_FALSE(b.gated);
  EXPECT_EQ(b.size_flag, "-m 128K");
  EXPECT_EQ(b.words[3], "my host");
  EXPECT_EQ(b.line, 16u);
}

TEST(Scenario, ErrorsNameFileAndLine) {
  const std::string base = kScenario;
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = base;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  EXPECT_EQ(scenario_error("name = \"x\"\nplatform = \n"),
            "s.toml:2: Error while parsing key-value pair: expected value, saw '\\n'");
  EXPECT_EQ(scenario_error(replaced("name = \"tiny\"", "nom = \"tiny\"")),
            "s.toml:1: unknown key 'nom'");
  EXPECT_EQ(scenario_error(replaced("platform = \"plat-a\"\n", "")),
            "s.toml:1: missing key 'platform'");
  EXPECT_EQ(scenario_error(replaced("name = \"tiny\"", "name = 3")),
            "s.toml:1: 'name' must be a string");
  EXPECT_EQ(scenario_error(replaced("throughput = 0.15", "throughput = -0.15")),
            "s.toml:6: tolerance: 'throughput' must be > 0");
  EXPECT_EQ(scenario_error(replaced("throughput = 0.15", "throughput = \"15%\"")),
            "s.toml:6: tolerance: 'throughput' must be a number");
  EXPECT_EQ(scenario_error(replaced("service_demand = 0.25\n", "")),
            "s.toml:5: tolerance: missing key 'service_demand'");
  EXPECT_EQ(scenario_error(replaced("gated = false", "gate = false")),
            "s.toml:22: point 2: unknown key 'gate'");
  EXPECT_EQ(scenario_error(replaced("gated = false", "gated = \"no\"")),
            "s.toml:22: point 2: 'gated' must be true or false");
  EXPECT_EQ(scenario_error(replaced("mode = \"SDP\"\n", "")),
            "s.toml:9: point 1: missing key 'mode'");
  EXPECT_EQ(scenario_error(replaced("-l 60 -- -m 64K", "-l abc -- -m 64K")),
            "s.toml:9: point 1: command: -l: 'abc' is not a number");
  EXPECT_EQ(scenario_error(replaced("-- -m 64K\"", "-- -m 12Q\"")),
            "s.toml:9: point 1: command: -m: bad size '12Q' (use a number with an optional "
            "K/M/G or k/m/g suffix)");
  EXPECT_EQ(scenario_error(replaced("command = \"netperf -C", "command = \"iperf -C")),
            "s.toml:9: point 1: command must start with \"netperf\"");
  EXPECT_EQ(scenario_error(replaced("-- -m 64K\"", "-- -m 64K --csv x.csv\"")),
            "s.toml:9: point 1: command: --csv is set by the scenario (use the point's keys)");
  EXPECT_EQ(scenario_error(replaced("-H 'my host'", "-H 'my host")),
            "s.toml:16: point 2: command: unterminated single quote in: netperf -v2 -4 -H 'my "
            "host -l 30 -t TCP_STREAM -c -C -- -m 128K");
  EXPECT_EQ(scenario_error(replaced("set = [\"sdp.zcopy_thresh=0\"]", "set = [\"sdp\"]")),
            "s.toml:12: point 1: 'set' entries must be strings \"section.key=value\"");
  EXPECT_EQ(scenario_error(replaced("match = { netperf_version = \"2.4.1\" }", "match = {}")),
            "s.toml:21: point 2: reference: 'match' must be a table of column = value");
  EXPECT_EQ(scenario_error(replaced(", match = { netperf_version = \"2.4.1\" }", "")),
            "s.toml:21: point 2: reference: missing key 'match'");
  EXPECT_EQ(scenario_error("name = \"x\"\nplatform = \"p\"\n[tolerance]\nthroughput = 1\n"
                           "service_demand = 1\n"),
            "s.toml:1: no [[point]]");
}

TEST(Scenario, SplitsLikeAShell) {
  EXPECT_EQ(split_command_line("  netperf -l 60\t-- -m 64K  "),
            (std::vector<std::string>{"netperf", "-l", "60", "--", "-m", "64K"}));
  EXPECT_EQ(split_command_line(R"(a 'b c' "d \"e\" \n" f\ g h'i'"j" '' "")"),
            (std::vector<std::string>{"a", "b c", "d \"e\" \\n", "f g", "hij", "", ""}));
  EXPECT_EQ(split_command_line(R"('it''s' "a\\b" 'x\y')"),
            (std::vector<std::string>{"its", "a\\b", "x\\y"}));
  EXPECT_TRUE(split_command_line("   ").empty());
  EXPECT_THROW(split_command_line("a \"b"), InputError);
  try {
    split_command_line("a b\\");
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "trailing backslash in: a b\\");
  }
}

constexpr const char* kReference =
    "table,run,mode,netperf_size_flag,throughput_mbps,sd_local_us_per_kb,sd_remote_us_per_kb\n"
    "T1_script,1,SDP,-m 64K,8215.17,1.025,1.243\n"
    "T2_r_flag,1,SDP,-r 64K,7106.72,,1.370\n"
    "T2_r_flag,2,SDP,-r 64K,7000,1,1\n"
    "T3_m_flag,1,SDP,-m 64K,bad,1,1\n";

TEST(Reference, SelectsExactlyOneRow) {
  ReferenceSpec spec{"r.csv", {{"table", "T1_script"}, {"netperf_size_flag", "-m 64K"}}};
  Figures f = reference_figures(kReference, "r.csv", spec);
  EXPECT_DOUBLE_EQ(f.throughput_mbps.value(), 8215.17);
  EXPECT_DOUBLE_EQ(f.sd_local.value(), 1.025);
  EXPECT_DOUBLE_EQ(f.sd_remote.value(), 1.243);

  spec.match = {{"table", "T2_r_flag"}, {"run", "1"}};
  f = reference_figures(kReference, "r.csv", spec);
  EXPECT_DOUBLE_EQ(f.throughput_mbps.value(), 7106.72);
  EXPECT_FALSE(f.sd_local);  // empty cell: not measured
  EXPECT_DOUBLE_EQ(f.sd_remote.value(), 1.370);

  auto error = [&](std::vector<std::pair<std::string, std::string>> match) {
    try {
      reference_figures(kReference, "r.csv", ReferenceSpec{"r.csv", std::move(match)});
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error({{"table", "T2_r_flag"}}),
            "r.csv: match {table=T2_r_flag} selects 2 rows (must select exactly one)");
  EXPECT_EQ(error({{"table", "T9"}, {"mode", "SDP"}}),
            "r.csv: match {table=T9, mode=SDP} selects 0 rows (must select exactly one)");
  EXPECT_EQ(error({{"version", "2.4.3"}}), "r.csv: no column 'version'");
  EXPECT_EQ(error({{"table", "T3_m_flag"}}), "r.csv: column throughput_mbps: 'bad' is not a number");

  // A CSV without service demand columns: only the throughput is measured.
  f = reference_figures("netperf_version,mode,throughput_mbps\r\n2.4.1,SDP,7749.66\r\n", "v.csv",
                        ReferenceSpec{"v.csv", {{"netperf_version", "2.4.1"}}});
  EXPECT_DOUBLE_EQ(f.throughput_mbps.value(), 7749.66);
  EXPECT_FALSE(f.sd_local);
  EXPECT_FALSE(f.sd_remote);
}

TEST(Reference, CsvQuoting) {
  const auto rows = parse_csv("a,\"b,c\",\"d\"\"e\"\n\n,x\n", "q.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"a", "b,c", "d\"e"}));
  EXPECT_EQ(rows[1], (std::vector<std::string>{"", "x"}));
  EXPECT_THROW(parse_csv("a,\"b\n", "q.csv"), InputError);
  EXPECT_EQ(csv_cell("plain -m 64K"), "plain -m 64K");
  EXPECT_EQ(csv_cell("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_cell("say \"hi\""), "\"say \"\"hi\"\"\"");
}

TEST(Reference, NetperfCsvFigures) {
  const Figures f = netperf_csv_figures(
      "test,send_size_bytes,throughput_mbps,util_local_pct,util_remote_pct,sd_local_us_per_kb,"
      "sd_remote_us_per_kb\nTCP_STREAM,65536,8000.5,12,,1.1,\n",
      "c.csv");
  EXPECT_DOUBLE_EQ(f.throughput_mbps.value(), 8000.5);
  EXPECT_DOUBLE_EQ(f.sd_local.value(), 1.1);
  EXPECT_FALSE(f.sd_remote);
  EXPECT_THROW(netperf_csv_figures("a,b\n", "c.csv"), InputError);
}

// The shipped scenario: 36 points, every reference row found in the source tree.
TEST(Seed000, ShippedScenarioResolves) {
  const std::string dir = HCASIM_SOURCE_DATA_DIR;
  const Scenario s = load_scenario(dir + "/scenarios/seed000.toml");
  EXPECT_EQ(s.name, "seed000");
  EXPECT_EQ(s.platform, "connectx-ddr-pcie1x8");
  EXPECT_DOUBLE_EQ(s.tolerance.throughput, 0.15);
  EXPECT_DOUBLE_EQ(s.tolerance.service_demand, 0.25);
  ASSERT_EQ(s.points.size(), 36u);
  size_t gated = 0;
  for (const auto& p : s.points) {
    EXPECT_NO_THROW(read_reference(p.reference, dir)) << p.table << " " << p.size_flag;
    gated += p.gated;
    EXPECT_EQ(p.set.size(), 1u);
    EXPECT_EQ(p.set[0], p.mode == "SDP" ? "sdp.zcopy_thresh=0" : "sdp.zcopy_thresh=1");
  }
  EXPECT_EQ(gated, 18u);

  // T2 SDP -r 64K is the seed's "87380 16384 16384 60.00 7106.72 13.32 14.87 1.228 1.370".
  const ScenarioPoint& t2 = s.points[6];
  EXPECT_EQ(t2.table, "T2_r_flag");
  EXPECT_EQ(t2.size_flag, "-r 64K");
  EXPECT_EQ(t2.command, "netperf -C -c -P 0 -t TCP_STREAM -H 193.168.10.143 -l 60 -- -r 64K");
  const Figures f = read_reference(t2.reference, dir);
  EXPECT_DOUBLE_EQ(f.throughput_mbps.value(), 7106.72);
  EXPECT_DOUBLE_EQ(f.sd_local.value(), 1.228);
  EXPECT_DOUBLE_EQ(f.sd_remote.value(), 1.370);

  const ScenarioPoint& v = s.points[35];
  EXPECT_EQ(v.table, "V_netperf_2.4.4");
  EXPECT_FALSE(v.gated);
  EXPECT_EQ(v.command, "netperf -v2 -4 -H 193.168.10.143 -l 30 -t TCP_STREAM -c -C -- -m 1M");
  const Figures fv = read_reference(v.reference, dir);
  EXPECT_DOUBLE_EQ(fv.throughput_mbps.value(), 10615.03);
  EXPECT_FALSE(fv.sd_local);
}

TEST(Compare, ErrorsAndStatus) {
  const Scenario s = parse_scenario(kScenario, "s.toml");
  const Tolerance tol{0.15, 0.25};
  Figures meas{1000.0, 1.0, 2.0};
  PointOutcome o = evaluate_point(s.points[0], tol, meas, Figures{1100.0, 0.8, 2.4});
  EXPECT_NEAR(o.throughput.error.value(), 0.10, 1e-12);
  EXPECT_NEAR(o.sd_local.error.value(), -0.20, 1e-12);
  EXPECT_NEAR(o.sd_remote.error.value(), 0.20, 1e-12);
  EXPECT_EQ(o.status, "ok");

  o = evaluate_point(s.points[0], tol, meas, Figures{800.0, 1.0, 2.0});
  EXPECT_FALSE(o.throughput.within);
  EXPECT_EQ(o.status, "FAIL");

  o = evaluate_point(s.points[0], tol, Figures{1000.0, std::nullopt, 2.0},
                     Figures{1000.0, 9.0, 2.0});
  EXPECT_FALSE(o.sd_local.error);  // not measured: not compared
  EXPECT_TRUE(o.sd_local.within);
  EXPECT_EQ(o.status, "ok");

  o = evaluate_point(s.points[0], tol, meas, Figures{1000.0, std::nullopt, 2.0});
  EXPECT_EQ(o.status, "FAIL");  // measured but not simulated

  o = evaluate_point(s.points[1], tol, meas, Figures{100.0, 9.0, 9.0});
  EXPECT_EQ(o.status, "not gated");
}

TEST(Compare, ReportAndCsv) {
  const Scenario s = parse_scenario(kScenario, "s.toml");
  std::vector<PointOutcome> outcomes = {
      evaluate_point(s.points[0], s.tolerance, Figures{8323.20, 1.020, 1.074},
                     Figures{7000.0, 1.2, 1.074}),
      evaluate_point(s.points[1], s.tolerance, Figures{6925.68, std::nullopt, std::nullopt},
                     Figures{7618.248, 1.5, 1.6})};
  const std::string report = format_run_report(s, outcomes);
  const std::string expected =
      "scenario tiny: platform plat-a; tolerance: throughput 15%, service demand 25%\n"
      "measured: a mail\n"
      "\n"
      "                                      throughput, Mbit/s          SD local, us/KB       SD remote, us/KB\n"
      "table            mode    size      measured simulated   error    meas    sim   error    meas    sim   error  status\n"
      "T3_m_flag        SDP     -m 64K     8323.20   7000.00  -15.9%   1.020  1.200  +17.6%   1.074  1.074   +0.0%  FAIL\n"
      "V                BZCOPY  -m 128K    6925.68   7618.25  +10.0%       -  1.500       -       -  1.600       -  not gated\n"
      "\n"
      "per table        points  |error| throughput     |error| service demand\n"
      "                         median / max           median / max\n"
      "T3_m_flag             1  15.9% / 15.9%          8.8% / 17.6%\n"
      "V                     1  10.0% / 10.0%          -\n"
      "\n"
      "FAIL: 1 of 1 gated points out of tolerance:\n"
      "  T3_m_flag SDP -m 64K (throughput -15.9% beyond 15%)\n";
  EXPECT_EQ(report, expected);

  const std::string csv = format_run_csv(s, outcomes);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "scenario,table,mode,size_flag,command,gated,meas_throughput_mbps,"
            "sim_throughput_mbps,err_throughput_pct,meas_sd_local,sim_sd_local,err_sd_local_pct,"
            "meas_sd_remote,sim_sd_remote,err_sd_remote_pct,status");
  EXPECT_EQ(csv.substr(0, csv.find('\n')), run_csv_header());
  const std::string rows = csv.substr(csv.find('\n') + 1);
  const std::string row1 = rows.substr(0, rows.find('\n'));
  const std::string row2 = rows.substr(rows.find('\n') + 1);
  EXPECT_EQ(row1.substr(0, row1.find(",8323.2,")),
            "tiny,T3_m_flag,SDP,-m 64K,netperf -C -c -P 0 -t TCP_STREAM -H 193.168.10.143 -l 60 "
            "-- -m 64K,true");
  EXPECT_EQ(row1.substr(row1.rfind(',') + 1), "FAIL");
  EXPECT_EQ(row2,
            "tiny,V,BZCOPY,-m 128K,netperf -v2 -4 -H 'my host' -l 30 -t TCP_STREAM -c -C -- -m "
            "128K,false,6925.68,7618.248,10.0000,,1.5,,,1.6,,not gated\n");

  // All within tolerance.
  outcomes[0] = evaluate_point(s.points[0], s.tolerance, Figures{8323.20, 1.020, 1.074},
                               Figures{8323.20, 1.020, 1.074});
  const std::string ok = format_run_report(s, outcomes);
  EXPECT_EQ(ok.substr(ok.rfind("\n\n") + 2), "ok: all 1 gated points within tolerance\n");
}

TEST(RunArgs, Parses) {
  RunOptions o = parse_run_args({});
  EXPECT_EQ(o.scenario, "seed000");
  EXPECT_EQ(o.jobs, 0);
  EXPECT_FALSE(o.csv_path);
  o = parse_run_args({"my.toml", "-j", "4", "--csv", "out.csv"});
  EXPECT_EQ(o.scenario, "my.toml");
  EXPECT_EQ(o.jobs, 4);
  EXPECT_EQ(o.csv_path.value(), "out.csv");
  EXPECT_EQ(parse_run_args({"-j2"}).jobs, 2);
  auto error = [](std::vector<std::string> args) {
    try {
      parse_run_args(args);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error({"-j", "0"}), "-j: '0' must be 1..4096");
  EXPECT_EQ(error({"-j", "x"}), "-j: 'x' is not a number");
  EXPECT_EQ(error({"-j", "1.5"}), "-j: '1.5' is not a number");
  EXPECT_EQ(error({"-j"}).substr(0, 6), "--jobs");
  EXPECT_NE(error({"--bogus"}).find("--bogus"), std::string::npos);
  EXPECT_NE(error({"a.toml", "b.toml"}).find("b.toml"), std::string::npos);
}

TEST(DataDir, ResolvesNamesAndFiles) {
  ::setenv("HCASIM_DATA_DIR", HCASIM_SOURCE_DATA_DIR, 1);
  EXPECT_EQ(data_dir(), HCASIM_SOURCE_DATA_DIR);
  EXPECT_EQ(resolve_scenario("seed000"),
            std::string(HCASIM_SOURCE_DATA_DIR) + "/scenarios/seed000.toml");
  const std::string file = std::string(HCASIM_SOURCE_DATA_DIR) + "/scenarios/seed000.toml";
  EXPECT_EQ(resolve_scenario(file), file);
  try {
    resolve_platform("no-such-platform");
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "--platform no-such-platform: no such platform file or name "
                                     "(looked in " HCASIM_SOURCE_DATA_DIR "/scenarios/platforms)");
  }
  try {
    resolve_scenario("nope");
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "nope: no such scenario file or name (looked in " HCASIM_SOURCE_DATA_DIR
              "/scenarios)");
  }
  ::setenv("HCASIM_DATA_DIR", "/nonexistent-hcasim", 1);
  EXPECT_EQ(data_dir(), "/nonexistent-hcasim");
  ::unsetenv("HCASIM_DATA_DIR");
}

}  // namespace
}  // namespace hcasim::scenarios
