// `hcasim run` without simulations (scenarios/scenario.h, reference.h, compare.h, run_report.h,
// run.h; util/): scenario files and their errors, shell-like splitting, reference CSV rows,
// comparison, report and CSV text, options.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "scenarios/datadir.h"
#include "scenarios/compare.h"
#include "scenarios/reference.h"
#include "scenarios/run.h"
#include "scenarios/run_report.h"
#include "scenarios/scenario.h"
#include "util/command_words.h"
#include "util/csv.h"
#include "util/statistics.h"

namespace hcasim::scenarios {
namespace {

using namespace ::hcasim::util;


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
  // A platform file where a scenario is expected (hcasim run scenarios/platforms/zx1-rx2600-pcix.toml).
  EXPECT_EQ(scenario_error("name = \"zx1\"\n[hca]\nmax_qp_wr = { value = 1, unit = \"\", source = \"x\" }\n"),
            "s.toml: a platform file, not a scenario file (a scenario names its platform in platform = \"NAME\"; "
            "docs/scenarios.md); give a platform as --platform");
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
            "s.toml:9: point 1: command must start with netperf, ib_{write,send,read,atomic}_{lat,bw} or "
            "ibv_{rc,uc,ud,srq}_pingpong (or a path to one)");
  // Seed 003's command as printed, with its path.
  EXPECT_EQ(parse_scenario(replaced("command = \"netperf -C", "command = \"/opt/netperf/netperf -C"), "s.toml")
                .points[0]
                .tool,
            "netperf");
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
  EXPECT_EQ(error({{"table", "T3_m_flag"}}), "r.csv:5: column throughput_mbps: 'bad' is not a number");

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
  // A spreadsheet's UTF-8 byte order mark is not part of the first column's name.
  EXPECT_EQ(parse_csv("\xEF\xBB\xBFsize,x\r\n64K,1\r\n", "bom.csv")[0][0], "size");
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
  EXPECT_DOUBLE_EQ(f.util_local.value(), 12.0);
  EXPECT_FALSE(f.util_remote);  // netperf without -C: empty cell
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
  EXPECT_DOUBLE_EQ(s.tolerance.utilisation, 0.25);  // the project's target: "within 25%"
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
  EXPECT_DOUBLE_EQ(f.util_local.value(), 13.32);
  EXPECT_DOUBLE_EQ(f.util_remote.value(), 14.87);
  const Figures t1 = read_reference(s.points[0].reference, dir);  // T1: not measured
  EXPECT_FALSE(t1.util_local);
  EXPECT_FALSE(t1.util_remote);
  EXPECT_TRUE(t1.sd_local);

  const ScenarioPoint& v = s.points[35];
  EXPECT_EQ(v.table, "V_netperf_2.4.4");
  EXPECT_FALSE(v.gated);
  EXPECT_EQ(v.command, "netperf -v2 -4 -H 193.168.10.143 -l 30 -t TCP_STREAM -c -C -- -m 1M");
  const Figures fv = read_reference(v.reference, dir);
  EXPECT_DOUBLE_EQ(fv.throughput_mbps.value(), 10615.03);
  EXPECT_FALSE(fv.sd_local);
  EXPECT_FALSE(fv.util_local);
}

// Seeds 003/004: two platforms (netperf on the rx2600, netserver on the rx4640), the scenario's
// remote_platform for every point; the references are validation/seed003's CSV rows.
TEST(Seed003, ShippedScenarioResolvesWithARemotePlatform) {
  const std::string dir = HCASIM_SOURCE_DATA_DIR;
  const Scenario s = load_scenario(dir + "/scenarios/seed003.toml");
  EXPECT_EQ(s.platform, "zx1-rx2600-pcix");
  EXPECT_EQ(s.remote_platform, "zx1-rx4640-pcix");
  ASSERT_EQ(s.points.size(), 4u);
  // Seed 003's run, seed 004's IPoIB before and after FMR, seed 004's SDP after FMR.
  const double measured[] = {1588.33, 1720, 3500, 3500};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(s.points[i].remote_platform, "zx1-rx4640-pcix");
    EXPECT_DOUBLE_EQ(read_reference(s.points[i].reference, dir).throughput_mbps.value(), measured[i]);
    EXPECT_EQ(s.points[i].gated, i < 3) << i;
  }
  EXPECT_EQ(s.points[2].set, (std::vector<std::string>{"host.netfilter=off", "hca.fmr=on"}));
  EXPECT_EQ(s.points[3].set, (std::vector<std::string>{"hca.fmr=on"}));
  // A point may name its own remote platform; the key is checked like the others.
  const std::string text = std::string(kScenario);
  const std::string with_remote = text.substr(0, text.find("command = \"netperf -v2")) +
                                  "remote_platform = \"plat-c\"\n" + text.substr(text.find("command = \"netperf -v2"));
  EXPECT_EQ(parse_scenario(with_remote, "s.toml").points[1].remote_platform, "plat-c");
  EXPECT_EQ(parse_scenario(kScenario, "s.toml").points[1].remote_platform, "");
  EXPECT_NE(scenario_error(text.substr(0, text.find("[tolerance]")) + "remote_plat = \"x\"\n" +
                           text.substr(text.find("[tolerance]")))
                .find("remote_plat"),
            std::string::npos);
}

TEST(Compare, ErrorsAndStatus) {
  const Scenario s = parse_scenario(kScenario, "s.toml");
  const Tolerance tol{0.15, 0.25};
  Figures meas{1000.0, 1.0, 2.0, {}, {}, {}};
  PointOutcome o = evaluate_point(s.points[0], tol, meas, Figures{1100.0, 0.8, 2.4, {}, {}, {}});
  EXPECT_NEAR(o.throughput.error.value(), 0.10, 1e-12);
  EXPECT_NEAR(o.sd_local.error.value(), -0.20, 1e-12);
  EXPECT_NEAR(o.sd_remote.error.value(), 0.20, 1e-12);
  EXPECT_EQ(o.status, "ok");

  o = evaluate_point(s.points[0], tol, meas, Figures{800.0, 1.0, 2.0, {}, {}, {}});
  EXPECT_FALSE(o.throughput.within);
  EXPECT_EQ(o.status, "FAIL");

  o = evaluate_point(s.points[0], tol, Figures{1000.0, std::nullopt, 2.0, {}, {}, {}},
                     Figures{1000.0, 9.0, 2.0, {}, {}, {}});
  EXPECT_FALSE(o.sd_local.error);  // not measured: not compared
  EXPECT_TRUE(o.sd_local.within);
  EXPECT_EQ(o.status, "ok");

  o = evaluate_point(s.points[0], tol, meas, Figures{1000.0, std::nullopt, 2.0, {}, {}, {}});
  EXPECT_EQ(o.status, "FAIL");  // measured but not simulated

  o = evaluate_point(s.points[1], tol, meas, Figures{100.0, 9.0, 9.0, {}, {}, {}});
  EXPECT_EQ(o.status, "not gated");
}

TEST(Compare, ReportAndCsv) {
  const Scenario s = parse_scenario(kScenario, "s.toml");
  std::vector<PointOutcome> outcomes = {
      evaluate_point(s.points[0], s.tolerance, Figures{8323.20, 1.020, 1.074, {}, {}, {}},
                     Figures{7000.0, 1.2, 1.074, {}, {}, {}}),
      evaluate_point(s.points[1], s.tolerance, Figures{6925.68, std::nullopt, std::nullopt, {}, {}, {}},
                     Figures{7618.248, 1.5, 1.6, {}, {}, {}})};
  const std::string report = format_run_report(s, outcomes);
  const std::string expected =
      "scenario tiny: platform plat-a; tolerance: throughput 15%, service demand 25%\n"
      "measured: a mail\n"
      "\n"
      "                                      throughput, Mbit/s          SD local, us/KB       SD remote, us/KB         util local, %         util remote, %\n"
      "table            mode    size      measured simulated   error    meas    sim   error    meas    sim   error    meas    sim   error    meas    sim   error  status\n"
      "T3_m_flag        SDP     -m 64K     8323.20   7000.00  -15.9%   1.020  1.200  +17.6%   1.074  1.074   +0.0%       -      -       -       -      -       -  FAIL\n"
      "V                BZCOPY  -m 128K    6925.68   7618.25  +10.0%       -  1.500       -       -  1.600       -       -      -       -       -      -       -  not gated\n"
      "\n"
      "per table        points  |error| throughput     |error| service demand     |error| utilisation\n"
      "                         median / max           median / max               median / max\n"
      "T3_m_flag             1  15.9% / 15.9%          8.8% / 17.6%               -\n"
      "V                     1  10.0% / 10.0%          -                          -\n"
      "\n"
      "FAIL: 1 of 1 gated points out of tolerance:\n"
      "  T3_m_flag SDP -m 64K (throughput -15.9% beyond 15%)\n";
  EXPECT_EQ(report, expected);

  const std::string csv = format_run_csv(s, outcomes);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "scenario,table,mode,size_flag,command,gated,meas_throughput_mbps,"
            "sim_throughput_mbps,err_throughput_pct,meas_sd_local,sim_sd_local,err_sd_local_pct,"
            "meas_sd_remote,sim_sd_remote,err_sd_remote_pct,meas_util_local_pct,"
            "sim_util_local_pct,err_util_local_pct,meas_util_remote_pct,sim_util_remote_pct,"
            "err_util_remote_pct,status");
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
            "128K,false,6925.68,7618.248,10.0000,,1.5,,,1.6,,,,,,,,not gated\n");

  // All within tolerance.
  outcomes[0] = evaluate_point(s.points[0], s.tolerance, Figures{8323.20, 1.020, 1.074, {}, {}, {}},
                               Figures{8323.20, 1.020, 1.074, {}, {}, {}});
  const std::string ok = format_run_report(s, outcomes);
  EXPECT_EQ(ok.substr(ok.rfind("\n\n") + 2), "ok: all 1 gated points within tolerance\n");
}

// --- CPU utilisation of netperf points ----------------------------------------------------------

// Line numbers below are those of this text (line 1 is "name = ...").
constexpr const char* kUtilScenario = R"(name = "util"
platform = "plat-a"
[tolerance]
throughput = 0.15
service_demand = 0.25
utilisation = 0.25

[[point]]
table = "T2_r_flag"
mode = "SDP"
command = "netperf -C -c -P 0 -t TCP_STREAM -H 193.168.10.143 -l 60 -- -r 64K"
reference = { file = "r.csv", match = { table = "T2_r_flag" } }

[[point]]
table = "T1_script"
mode = "SDP"
command = "netperf -C -c -P 0 -t TCP_STREAM -H 193.168.10.143 -l 60 -- -m 64K"
reference = { file = "r.csv", match = { table = "T1_script" } }
)";

// Seed 000's layout (validation/seed000/seed000_sdp_netperf_mlx4.csv): the T1 row has no
// utilisation (empty cells), the T2 row is the seed's "7106.72 13.32 14.87 1.228 1.370".
constexpr const char* kUtilReference =
    "table,mode,netperf_size_flag,throughput_mbps,util_local_pct,util_remote_pct,"
    "sd_local_us_per_kb,sd_remote_us_per_kb\n"
    "T1_script,SDP,-m 64K,8215.17,,,1.025,1.243\n"
    "T2_r_flag,SDP,-r 64K,7106.72,13.32,14.87,1.228,1.370\n";

std::string without(std::string text, const std::string& part) {
  text.erase(text.find(part), part.size());
  return text;
}

TEST(Utilisation, ReferenceColumnsAndEmptyCells) {
  const Figures t2 =
      reference_figures(kUtilReference, "r.csv", ReferenceSpec{"r.csv", {{"table", "T2_r_flag"}}});
  EXPECT_DOUBLE_EQ(t2.util_local.value(), 13.32);
  EXPECT_DOUBLE_EQ(t2.util_remote.value(), 14.87);
  EXPECT_DOUBLE_EQ(t2.sd_local.value(), 1.228);
  const Figures t1 =
      reference_figures(kUtilReference, "r.csv", ReferenceSpec{"r.csv", {{"table", "T1_script"}}});
  EXPECT_FALSE(t1.util_local);  // empty cell: not measured
  EXPECT_FALSE(t1.util_remote);
  EXPECT_DOUBLE_EQ(t1.sd_remote.value(), 1.243);
  try {
    reference_figures("table,util_remote_pct\nT,n/a\n", "r.csv",
                      ReferenceSpec{"r.csv", {{"table", "T"}}});
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "r.csv:2: column util_remote_pct: 'n/a' is not a number");
  }
}

TEST(Utilisation, ToleranceKey) {
  Scenario s = parse_scenario(kUtilScenario, "s.toml");
  EXPECT_DOUBLE_EQ(s.tolerance.utilisation, 0.25);
  EXPECT_EQ(s.tolerance_line, 3u);
  EXPECT_EQ(scenario_error(without(kUtilScenario, "utilisation = 0.25\n")), "");  // optional
  const std::string base = kUtilScenario;
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = base;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  EXPECT_EQ(scenario_error(replaced("utilisation = 0.25", "utilisation = -0.25")),
            "s.toml:6: tolerance: 'utilisation' must be > 0");
  EXPECT_EQ(scenario_error(replaced("utilisation = 0.25", "utilisation = \"25%\"")),
            "s.toml:6: tolerance: 'utilisation' must be a number");
  EXPECT_EQ(scenario_error(replaced("utilisation = 0.25", "utilization = 0.25")),
            "s.toml:6: tolerance: unknown key 'utilization'");

  // Required once a reference row has a utilisation value, reported at [tolerance].
  const Figures t2 =
      reference_figures(kUtilReference, "r.csv", ReferenceSpec{"r.csv", {{"table", "T2_r_flag"}}});
  const Figures t1 =
      reference_figures(kUtilReference, "r.csv", ReferenceSpec{"r.csv", {{"table", "T1_script"}}});
  EXPECT_NO_THROW(check_reference_tolerances(s, 0, t2));
  s = parse_scenario(without(kUtilScenario, "utilisation = 0.25\n"), "s.toml");
  EXPECT_EQ(s.tolerance.utilisation, 0.0);
  EXPECT_NO_THROW(check_reference_tolerances(s, 1, t1));  // T1: nothing measured, not needed
  try {
    check_reference_tolerances(s, 0, t2);
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "s.toml:3: tolerance: missing key 'utilisation' (point 1's reference measures "
                 "utilisation)");
  }
  // One side is enough.
  Figures remote_only;
  remote_only.util_remote = 14.87;
  EXPECT_THROW(check_reference_tolerances(s, 0, remote_only), InputError);
}

// The shipped seed 000 without its utilisation tolerance: the first point that needs it is T2
// SDP -r 64K (point 7; the T1 rows measured no utilisation), reported at [tolerance] (line 14).
TEST(Utilisation, ShippedSeed000NeedsTheTolerance) {
  const std::string dir = HCASIM_SOURCE_DATA_DIR;
  std::ifstream in(dir + "/scenarios/seed000.toml");
  std::stringstream text;
  text << in.rdbuf();
  const Scenario s = parse_scenario(without(text.str(), "utilisation = 0.25\n"), "seed000.toml");
  EXPECT_EQ(s.tolerance_line, 14u);
  std::string error;
  size_t needing = 0;
  for (size_t i = 0; i < s.points.size(); ++i) {
    try {
      check_reference_tolerances(s, i, read_reference(s.points[i].reference, dir));
    } catch (const InputError& e) {
      if (error.empty()) error = e.what();
      ++needing;
    }
  }
  EXPECT_EQ(error,
            "seed000.toml:14: tolerance: missing key 'utilisation' (point 7's reference measures "
            "utilisation)");
  EXPECT_EQ(needing, 12u);  // T2 and T3
}

// run_scenario checks the tolerance while it reads the references, before any platform is
// looked up or any child starts (the platform here does not exist: reaching it is an error
// too, but another one).
TEST(Utilisation, RunRequiresTheToleranceBeforeRunning) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("hcasim-run-test-util-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path ref = dir / "r.csv", toml = dir / "s.toml", csv = dir / "out.csv";
  std::ofstream(ref) << kUtilReference;
  auto run_error = [&](const std::string& text) {
    std::ofstream(toml) << text;
    RunOptions o;
    o.scenario = toml.string();
    o.jobs = 1;
    o.csv_path = csv.string();
    try {
      run_scenario(o);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string text = kUtilScenario;
  text.replace(text.find("plat-a"), 6, "no-such-platform-run-test");
  for (size_t at = text.find("\"r.csv\""); at != std::string::npos; at = text.find("\"r.csv\""))
    text.replace(at, 7, "\"" + ref.string() + "\"");
  EXPECT_EQ(run_error(without(text, "utilisation = 0.25\n")),
            toml.string() +
                ":3: tolerance: missing key 'utilisation' (point 1's reference measures "
                "utilisation)");
  const std::string declared = run_error(text);
  EXPECT_NE(declared.find("no-such-platform-run-test: no such platform"), std::string::npos)
      << declared;
  EXPECT_FALSE(fs::exists(csv));
  fs::remove_all(dir);
}

TEST(Utilisation, RelativeErrorsGated) {
  const Scenario s = parse_scenario(kUtilScenario, "s.toml");
  const Figures t2{7106.72, 1.228, 1.370, 13.32, 14.87, {}};

  // 13.32 -> 15.0: (15.0 - 13.32) / 13.32 = 1.68 / 13.32 = +12.6%, within 25%.
  PointOutcome o =
      evaluate_point(s.points[0], s.tolerance, t2, Figures{7106.72, 1.228, 1.370, 15.0, 14.87, {}});
  EXPECT_NEAR(o.util_local.error.value(), 1.68 / 13.32, 1e-12);
  EXPECT_NEAR(o.util_local.error.value(), 0.126126, 1e-6);
  EXPECT_TRUE(o.util_local.within);
  EXPECT_NEAR(o.util_remote.error.value(), 0.0, 1e-12);
  EXPECT_EQ(o.status, "ok");

  // 14.87 -> 11.0: -3.87 / 14.87 = -26.0%, beyond 25%: FAIL, though everything else is exact.
  o = evaluate_point(s.points[0], s.tolerance, t2, Figures{7106.72, 1.228, 1.370, 15.0, 11.0, {}});
  EXPECT_NEAR(o.util_remote.error.value(), -3.87 / 14.87, 1e-12);
  EXPECT_FALSE(o.util_remote.within);
  EXPECT_TRUE(o.throughput.within && o.sd_local.within && o.sd_remote.within);
  EXPECT_EQ(o.status, "FAIL");
  // 14.87 -> 12.0: -2.87 / 14.87 = -19.3%: within.
  o = evaluate_point(s.points[0], s.tolerance, t2, Figures{7106.72, 1.228, 1.370, 15.0, 12.0, {}});
  EXPECT_NEAR(o.util_remote.error.value(), -0.193006, 1e-6);
  EXPECT_EQ(o.status, "ok");
  // 13.32 -> 16.70: +25.4%, beyond; 13.32 -> 16.60: +24.6%, within.
  o = evaluate_point(s.points[0], s.tolerance, t2, Figures{7106.72, 1.228, 1.370, 16.70, 14.87, {}});
  EXPECT_EQ(o.status, "FAIL");
  o = evaluate_point(s.points[0], s.tolerance, t2, Figures{7106.72, 1.228, 1.370, 16.60, 14.87, {}});
  EXPECT_EQ(o.status, "ok");

  // Measured but not simulated (netperf without -c): FAIL.
  o = evaluate_point(s.points[0], s.tolerance, t2,
                     Figures{7106.72, 1.228, 1.370, std::nullopt, 14.87, {}});
  EXPECT_FALSE(o.util_local.error);
  EXPECT_FALSE(o.util_local.within);
  EXPECT_EQ(o.status, "FAIL");

  // Not measured (T1's empty cells): not compared, whatever the simulation says.
  o = evaluate_point(s.points[1], s.tolerance, Figures{8215.17, 1.025, 1.243, {}, {}, {}},
                     Figures{8215.17, 1.025, 1.243, 99.0, 1.0, {}});
  EXPECT_FALSE(o.util_local.error);
  EXPECT_FALSE(o.util_remote.error);
  EXPECT_TRUE(o.util_local.within && o.util_remote.within);
  EXPECT_DOUBLE_EQ(o.util_local.simulated.value(), 99.0);
  EXPECT_EQ(o.status, "ok");

  // Not gated: reported, never FAIL.
  ScenarioPoint free = s.points[0];
  free.gated = false;
  o = evaluate_point(free, s.tolerance, t2, Figures{7106.72, 1.228, 1.370, 30.0, 30.0, {}});
  EXPECT_NEAR(o.util_local.error.value(), (30.0 - 13.32) / 13.32, 1e-12);
  EXPECT_EQ(o.status, "not gated");
}

TEST(Utilisation, ReportAndCsv) {
  const Scenario s = parse_scenario(kUtilScenario, "s.toml");
  const std::vector<PointOutcome> outcomes = {
      evaluate_point(s.points[0], s.tolerance, Figures{7106.72, 1.228, 1.370, 13.32, 14.87, {}},
                     Figures{7106.72, 1.228, 1.370, 15.0, 11.0, {}}),
      evaluate_point(s.points[1], s.tolerance, Figures{8215.17, 1.025, 1.243, {}, {}, {}},
                     Figures{8215.17, 1.025, 1.243, 20.0, 30.0, {}})};
  // T2's |errors| of utilisation: 1.68 / 13.32 = 12.6% and 3.87 / 14.87 = 26.0%, median 19.3%.
  const std::string expected =
      "scenario util: platform plat-a; tolerance: throughput 15%, service demand 25%, utilisation 25%\n"
      "\n"
      "                                      throughput, Mbit/s          SD local, us/KB       SD remote, us/KB         util local, %         util remote, %\n"
      "table            mode    size      measured simulated   error    meas    sim   error    meas    sim   error    meas    sim   error    meas    sim   error  status\n"
      "T2_r_flag        SDP     -r 64K     7106.72   7106.72   +0.0%   1.228  1.228   +0.0%   1.370  1.370   +0.0%   13.32  15.00  +12.6%   14.87  11.00  -26.0%  FAIL\n"
      "T1_script        SDP     -m 64K     8215.17   8215.17   +0.0%   1.025  1.025   +0.0%   1.243  1.243   +0.0%       -  20.00       -       -  30.00       -  ok\n"
      "\n"
      "per table        points  |error| throughput     |error| service demand     |error| utilisation\n"
      "                         median / max           median / max               median / max\n"
      "T2_r_flag             1  0.0% / 0.0%            0.0% / 0.0%                19.3% / 26.0%\n"
      "T1_script             1  0.0% / 0.0%            0.0% / 0.0%                -\n"
      "\n"
      "FAIL: 1 of 2 gated points out of tolerance:\n"
      "  T2_r_flag SDP -r 64K (util remote -26.0% beyond 25%)\n";
  EXPECT_EQ(format_run_report(s, outcomes), expected);

  // Errors in % of the measured utilisation, 4 decimals: 12.6126 and -26.0256.
  EXPECT_EQ(format_run_csv(s, outcomes),
            run_csv_header() + "\n"
            "util,T2_r_flag,SDP,-r 64K,netperf -C -c -P 0 -t TCP_STREAM -H 193.168.10.143 -l 60 "
            "-- -r 64K,true,7106.72,7106.72,0.0000,1.228,1.228,0.0000,1.37,1.37,0.0000,13.32,15,"
            "12.6126,14.87,11,-26.0256,FAIL\n"
            "util,T1_script,SDP,-m 64K,netperf -C -c -P 0 -t TCP_STREAM -H 193.168.10.143 -l 60 "
            "-- -m 64K,true,8215.17,8215.17,0.0000,1.025,1.025,0.0000,1.243,1.243,0.0000,,20,,,"
            "30,,ok\n");

  // Both utilisations beyond: both named.
  const std::vector<PointOutcome> both = {
      evaluate_point(s.points[0], s.tolerance, Figures{7106.72, 1.228, 1.370, 13.32, 14.87, {}},
                     Figures{7106.72, 1.228, 1.370, 20.0, std::nullopt, {}}),
      outcomes[1]};
  const std::string report = format_run_report(s, both);
  EXPECT_EQ(report.substr(report.rfind("\n\n") + 2),
            "FAIL: 1 of 2 gated points out of tolerance:\n"
            "  T2_r_flag SDP -r 64K (util local +50.2% beyond 25%, util remote not simulated)\n");
}

// --- latency points (ib_write_lat) -----------------------------------------------------------

// Line numbers below are those of this text (line 1 is "name = ...").
constexpr const char* kLatencyScenario = R"(name = "lat"
platform = "plat-a"
source = "a mail"
[tolerance]
t_typical_us = 0.05
t_min_us = 0.08

[[point]]
table = "kvm_passthrough"
mode = "BF on, WC off"
platform = "plat-kvm"
set = ["hca.blueflame=on"]
command = "taskset -c 0 ib_write_lat -d mlx4_0 -i 1 -F -s 2 -n 1000000"
reference = { file = "validation/l.csv", match = { environment = "kvm_passthrough", blueflame = "on", bytes = 2 } }

[[point]]
table = "bare_metal"
mode = "BF off, WC on"
command = "/usr/bin/taskset 0x1 ib_write_lat -a"
reference = { file = "validation/l.csv", match = { environment = "bare_metal", blueflame = "off", bytes = 128 } }
gated = false
)";

TEST(LatencyScenario, Parses) {
  const Scenario s = parse_scenario(kLatencyScenario, "s.toml");
  EXPECT_DOUBLE_EQ(s.tolerance.t_typical_us, 0.05);  // absolute, us
  EXPECT_DOUBLE_EQ(s.tolerance.t_min_us, 0.08);
  EXPECT_EQ(s.tolerance.throughput, 0.0);  // not needed without netperf points: not declared
  EXPECT_EQ(s.tolerance.service_demand, 0.0);
  ASSERT_EQ(s.points.size(), 2u);

  const ScenarioPoint& a = s.points[0];
  EXPECT_EQ(a.kind, PointKind::Latency);
  EXPECT_EQ(a.tool, "ib_write_lat");
  EXPECT_EQ(a.command, "taskset -c 0 ib_write_lat -d mlx4_0 -i 1 -F -s 2 -n 1000000");
  EXPECT_EQ(a.words, (std::vector<std::string>{"-d", "mlx4_0", "-i", "1", "-F", "-s", "2", "-n",
                                               "1000000"}));  // taskset -c 0 dropped
  EXPECT_EQ(a.size_flag, "");
  EXPECT_EQ(a.platform, "plat-kvm");
  EXPECT_EQ(a.set, std::vector<std::string>{"hca.blueflame=on"});
  EXPECT_EQ(a.reference.match, (std::vector<std::pair<std::string, std::string>>{
                                   {"blueflame", "on"}, {"bytes", "2"}, {"environment", "kvm_passthrough"}}));
  EXPECT_TRUE(a.gated);
  EXPECT_EQ(a.line, 8u);

  const ScenarioPoint& b = s.points[1];
  EXPECT_EQ(b.kind, PointKind::Latency);
  EXPECT_EQ(b.words, std::vector<std::string>{"-a"});  // a mask instead of -c, taskset as a path
  EXPECT_EQ(b.platform, "plat-a");
  EXPECT_FALSE(b.gated);
  EXPECT_EQ(b.line, 16u);

  // netperf points keep their kind and tool; a mixed file needs both kinds of tolerance.
  std::string mixed = kLatencyScenario;
  mixed.replace(mixed.find("t_typical_us"), 0, "throughput = 0.15\nservice_demand = 0.25\n");
  mixed += "\n[[point]]\ntable = \"T\"\nmode = \"SDP\"\ncommand = \"netperf -- -m 64K\"\n"
           "reference = { file = \"x.csv\", match = { a = 1 } }\n";
  const Scenario m = parse_scenario(mixed, "m.toml");
  ASSERT_EQ(m.points.size(), 3u);
  EXPECT_EQ(m.points[2].kind, PointKind::Netperf);
  EXPECT_EQ(m.points[2].tool, "netperf");
  EXPECT_EQ(m.points[2].size_flag, "-m 64K");
  EXPECT_DOUBLE_EQ(m.tolerance.throughput, 0.15);
  EXPECT_DOUBLE_EQ(m.tolerance.t_min_us, 0.08);
}

TEST(LatencyScenario, ErrorsNameFileAndLine) {
  const std::string base = kLatencyScenario;
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = base;
    t.replace(t.find(from), from.size(), to);
    return t;
  };
  // The tolerance of a kind of point the file has: required, reported at [tolerance].
  EXPECT_EQ(scenario_error(replaced("t_min_us = 0.08\n", "")),
            "s.toml:4: tolerance: missing key 't_min_us'");
  EXPECT_EQ(scenario_error(replaced("t_typical_us = 0.05\n", "")),
            "s.toml:4: tolerance: missing key 't_typical_us'");
  EXPECT_EQ(scenario_error(replaced("t_min_us = 0.08", "t_min_us = 0")),
            "s.toml:6: tolerance: 't_min_us' must be > 0");
  EXPECT_EQ(scenario_error(replaced("t_min_us = 0.08", "t_min_us = 0.08\nlatency = 1")),
            "s.toml:7: tolerance: unknown key 'latency'");
  // Declared though unused: still checked.
  EXPECT_EQ(scenario_error(replaced("t_min_us = 0.08", "t_min_us = 0.08\nthroughput = -1")),
            "s.toml:7: tolerance: 'throughput' must be > 0");
  // A netperf point in the file makes the netperf tolerances required again.
  EXPECT_EQ(scenario_error(base + "\n[[point]]\ntable = \"T\"\nmode = \"SDP\"\n"
                                  "command = \"netperf -- -m 64K\"\n"
                                  "reference = { file = \"x.csv\", match = { a = 1 } }\n"),
            "s.toml:4: tolerance: missing key 'throughput'");
  // Commands.
  EXPECT_EQ(scenario_error(replaced("ib_write_lat -d", "netperf -d")),
            "s.toml:8: point 1: command: taskset is not taken before netperf (netperf binds with -T)");
  EXPECT_EQ(scenario_error(replaced("taskset -c 0 ib_write_lat", "taskset -p 0 ib_write_lat")),
            "s.toml:8: point 1: command: taskset -p pins a running process, not a command");
  EXPECT_EQ(scenario_error(replaced("taskset -c 0 ib_write_lat", "taskset --verbose 0 ib_write_lat")),
            "s.toml:8: point 1: command: taskset: unsupported option '--verbose'");
  EXPECT_EQ(scenario_error(replaced("taskset -c 0 ib_write_lat -d mlx4_0 -i 1 -F -s 2 -n 1000000",
                                    "taskset -c 0")),
            "s.toml:8: point 1: command: taskset needs a CPU mask or list and a command");
  // A bandwidth point's BW average is gated by `throughput`, which this latency file lacks.
  EXPECT_EQ(scenario_error(replaced("ib_write_lat -d", "ib_write_bw -d")), "s.toml:4: tolerance: missing key 'throughput'");
  EXPECT_EQ(scenario_error(replaced("-n 1000000\"", "-n 1000000 --set hca.blueflame=off\"")),
            "s.toml:8: point 1: command: --set is set by the scenario (use the point's keys)");
  EXPECT_EQ(scenario_error(replaced("-n 1000000\"", "-n 1000000 --csv=x.csv\"")),
            "s.toml:8: point 1: command: --csv is set by the scenario (use the point's keys)");
  // perftest flags are checked when the scenario is read, not when the point runs.
  EXPECT_EQ(scenario_error(replaced("-n 1000000\"", "-n 3\"")),
            "s.toml:8: point 1: command: -n: 3 is out of range (perftest: 5..100000000)");
  EXPECT_EQ(scenario_error(replaced("-n 1000000\"", "-n 1000000 --bogus\"")),
            "s.toml:8: point 1: command: unknown option --bogus");
  EXPECT_EQ(scenario_error(replaced("-F -s 2", "-F -s '2")),
            "s.toml:8: point 1: command: unterminated single quote in: taskset -c 0 ib_write_lat "
            "-d mlx4_0 -i 1 -F -s '2 -n 1000000");
}

// The seed 001 layout.
constexpr const char* kLatencyReference =
    "environment,write_combining,blueflame,bytes,iterations,t_min_us,t_max_us,t_typical_us\n"
    "kvm_passthrough,off,on,2,1000000,0.74,186.16,0.79\n"
    "kvm_passthrough,off,on,128,1000000,1.05,405.58,1.47\n"
    "kvm_passthrough,off,off,128,1000000,0.96,78.20,1.00\n"
    "bare_metal,on,on,2,1000000,0.74,131.62,\n"
    "bare_metal,on,off,2,1000000,1.05,137.55,x\n"
    "bare_metal,on,off,2.5,1000000,1.05,137.55,1.10\n";

TEST(LatencyReference, SelectsRowByBytes) {
  ReferenceSpec spec{"l.csv", {{"environment", "kvm_passthrough"}, {"blueflame", "on"}, {"bytes", "128"}}};
  LatencyFigures f = latency_reference_figures(kLatencyReference, "l.csv", spec);
  EXPECT_EQ(f.bytes, 128u);
  EXPECT_DOUBLE_EQ(f.t_min_us.value(), 1.05);
  EXPECT_DOUBLE_EQ(f.t_max_us.value(), 405.58);
  EXPECT_DOUBLE_EQ(f.t_typical_us.value(), 1.47);

  spec.match = {{"environment", "bare_metal"}, {"blueflame", "on"}};
  f = latency_reference_figures(kLatencyReference, "l.csv", spec);
  EXPECT_EQ(f.bytes, 2u);
  EXPECT_FALSE(f.t_typical_us);  // empty cell: not measured

  auto error = [](std::string_view csv, std::vector<std::pair<std::string, std::string>> match) {
    try {
      latency_reference_figures(csv, "l.csv", ReferenceSpec{"l.csv", std::move(match)});
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error(kLatencyReference, {{"bytes", "128"}}),
            "l.csv: match {bytes=128} selects 2 rows (must select exactly one)");
  EXPECT_EQ(error(kLatencyReference, {{"blueflame", "off"}, {"bytes", "2"}}),
            "l.csv:6: column t_typical_us: 'x' is not a number");
  EXPECT_EQ(error(kLatencyReference, {{"bytes", "2.5"}}),
            "l.csv:7: column bytes: '2.5' is not a whole number");
  EXPECT_EQ(error("environment,t_min_us\nkvm,0.7\n", {{"environment", "kvm"}}),
            "l.csv:2: no column 'bytes'");
}

// What `hcasim ib_write_lat --csv` writes, here for a -a sweep cut at 64 B.
constexpr const char* kLatencyChildCsv =
    "tool,bytes,iterations,t_min_us,t_max_us,t_typical_us,t_avg_us,t_stdev_us,t_p99_us,t_p999_us\n"
    "ib_write_lat,2,1000,0.7312,12.5,0.8,0.81,0.02,0.9,1.2\n"
    "ib_write_lat,4,1000,0.7313,12.6,0.8000000000000002,0.81,0.02,0.9,1.2\n"
    "ib_write_lat,64,1000,1.01,3e1,1.0625,1.07,0.03,1.1,1.3\n";

TEST(LatencyReference, ChildCsvRowsAndSelectionByBytes) {
  const std::vector<LatencyFigures> rows = latency_csv_rows(kLatencyChildCsv, "c.csv");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].bytes, 2u);
  EXPECT_EQ(rows[1].bytes, 4u);
  EXPECT_DOUBLE_EQ(rows[1].t_typical_us.value(), 0.8000000000000002);

  const auto r64 = latency_row_for_bytes(rows, 64);
  ASSERT_TRUE(r64);
  EXPECT_EQ(r64->bytes, 64u);
  EXPECT_DOUBLE_EQ(r64->t_min_us.value(), 1.01);
  EXPECT_DOUBLE_EQ(r64->t_max_us.value(), 30.0);
  EXPECT_DOUBLE_EQ(r64->t_typical_us.value(), 1.0625);
  EXPECT_DOUBLE_EQ(latency_row_for_bytes(rows, 2)->t_min_us.value(), 0.7312);
  EXPECT_FALSE(latency_row_for_bytes(rows, 8));  // not run: no row

  // Columns are found by name; others, in any order, are ignored.
  const auto other = latency_csv_rows(
      "test,blueflame,write_combining,bytes,iterations,t_min_us,t_max_us,t_typical_us,t_avg_us\n"
      "ib_write_lat,on,off,128,1000,1.39,228,1.44,1.45\n",
      "c.csv");
  ASSERT_EQ(other.size(), 1u);
  EXPECT_EQ(other[0].bytes, 128u);
  EXPECT_DOUBLE_EQ(other[0].t_min_us.value(), 1.39);
  EXPECT_DOUBLE_EQ(other[0].t_max_us.value(), 228.0);
  EXPECT_DOUBLE_EQ(other[0].t_typical_us.value(), 1.44);

  auto error = [](std::string_view csv) {
    try {
      latency_csv_rows(csv, "c.csv");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error("tool,bytes,t_min_us,t_max_us\nib_write_lat,2,1,2\n"),
            "c.csv: no column 't_typical_us'");
  EXPECT_EQ(error("tool,bytes,t_min_us,t_max_us,t_typical_us\n"), "c.csv: no data row");
  EXPECT_EQ(error(""), "c.csv: empty file");
  EXPECT_EQ(error("bytes,t_min_us,t_max_us,t_typical_us\n-2,1,2,1\n"),
            "c.csv: column bytes: '-2' is not a whole number");
  EXPECT_EQ(error("bytes,t_min_us,t_max_us,t_typical_us\n2,1,2,inf\n"),
            "c.csv: column t_typical_us: 'inf' is not a number");
  // The netperf CSV reader still wants its own format.
  EXPECT_THROW(netperf_csv_figures(kLatencyChildCsv, "c.csv"), InputError);
}

TEST(LatencyCompare, AbsoluteErrorsAndStatus) {
  const Scenario s = parse_scenario(kLatencyScenario, "s.toml");
  const Tolerance tol = s.tolerance;
  const LatencyFigures meas{2, 0.74, 186.16, 0.79};

  // t_typical 0.79 -> 0.83: +0.04 us, within 0.05; t_min 0.74 -> 0.83: +0.09 us, beyond 0.08.
  PointOutcome o = evaluate_latency_point(s.points[0], tol, meas, LatencyFigures{2, 0.83, 5.0, 0.83});
  EXPECT_EQ(o.kind, PointKind::Latency);
  EXPECT_EQ(o.bytes, 2u);
  EXPECT_NEAR(o.t_typical.error.value(), 0.04, 1e-12);
  EXPECT_TRUE(o.t_typical.within);
  EXPECT_NEAR(o.t_min.error.value(), 0.09, 1e-12);
  EXPECT_FALSE(o.t_min.within);
  EXPECT_EQ(o.status, "FAIL");

  // Within both; signed errors; t_max far off is never gated.
  o = evaluate_latency_point(s.points[0], tol, meas, LatencyFigures{2, 0.70, 1e6, 0.75});
  EXPECT_NEAR(o.t_typical.error.value(), -0.04, 1e-12);
  EXPECT_NEAR(o.t_min.error.value(), -0.04, 1e-12);
  EXPECT_TRUE(o.t_max.within);
  EXPECT_EQ(o.status, "ok");

  // Exactly at the limit, as decimals: within, though 0.74 - 0.69 is 0.050000000000000044 in
  // binary; a hair beyond: FAIL.
  const LatencyFigures meas069{2, 0.74, 186.16, 0.69};
  o = evaluate_latency_point(s.points[0], tol, meas069, LatencyFigures{2, 0.82, 5.0, 0.74});
  EXPECT_GT(*o.t_typical.error, 0.05);
  EXPECT_EQ(o.status, "ok");
  o = evaluate_latency_point(s.points[0], tol, meas069, LatencyFigures{2, 0.82, 5.0, 0.7401});
  EXPECT_EQ(o.status, "FAIL");

  // Measured but not simulated: FAIL; not measured: not compared.
  o = evaluate_latency_point(s.points[0], tol, meas, LatencyFigures{2, 0.74, 5.0, std::nullopt});
  EXPECT_FALSE(o.t_typical.within);
  EXPECT_EQ(o.status, "FAIL");
  o = evaluate_latency_point(s.points[0], tol, LatencyFigures{2, std::nullopt, 186.16, 0.79},
                             LatencyFigures{2, 9.0, 5.0, 0.79});
  EXPECT_FALSE(o.t_min.error);
  EXPECT_EQ(o.status, "ok");

  o = evaluate_latency_point(s.points[1], tol, meas, LatencyFigures{2, 9.0, 9.0, 9.0});
  EXPECT_EQ(o.status, "not gated");
}

TEST(LatencyCompare, ReportAndCsv) {
  const Scenario s = parse_scenario(kLatencyScenario, "s.toml");
  const std::vector<PointOutcome> outcomes = {
      evaluate_latency_point(s.points[0], s.tolerance, LatencyFigures{2, 0.74, 186.16, 0.79},
                             LatencyFigures{2, 0.83, 12.5, 0.83}),
      evaluate_latency_point(s.points[1], s.tolerance, LatencyFigures{128, 1.22, 212.19, 1.27},
                             LatencyFigures{128, 1.2, 3.25, 1.3})};
  const std::string expected =
      "scenario lat: platform plat-a; tolerance: t_typical 0.05 us, t_min 0.08 us\n"
      "measured: a mail\n"
      "\n"
      "ib_write_lat latency: half the round trip, in us; error = simulated - measured\n"
      "                                                t_typical                t_min          t_max (not gated)\n"
      "table            mode              bytes    meas    sim   error    meas    sim   error      meas      sim  status\n"
      "kvm_passthrough  BF on, WC off         2   0.790  0.830  +0.040   0.740  0.830  +0.090    186.16    12.50  FAIL\n"
      "bare_metal       BF off, WC on       128   1.270  1.300  +0.030   1.220  1.200  -0.020    212.19     3.25  not gated\n"
      "\n"
      "per table        points  max |error| t_typical  max |error| t_min  platform\n"
      "kvm_passthrough       1  0.040 us               0.090 us           plat-kvm\n"
      "bare_metal            1  0.030 us               0.020 us           plat-a\n"
      "\n"
      "FAIL: 1 of 1 gated points out of tolerance:\n"
      "  kvm_passthrough BF on, WC off 2 B (t_min +0.090 us beyond 0.08 us)\n";
  EXPECT_EQ(format_run_report(s, outcomes), expected);

  // The CSV: the netperf columns (empty), then the latency columns.
  const std::string csv = format_run_csv(s, outcomes);
  EXPECT_EQ(csv,
            run_csv_header() +
                ",bytes,meas_t_typical_us,sim_t_typical_us,err_t_typical_us,meas_t_min_us,"
                "sim_t_min_us,err_t_min_us,meas_t_max_us,sim_t_max_us\n"
                "lat,kvm_passthrough,\"BF on, WC off\",,taskset -c 0 ib_write_lat -d mlx4_0 -i 1 "
                "-F -s 2 -n 1000000,true,,,,,,,,,,,,,,,,FAIL,2,0.79,0.83,0.0400,0.74,0.83,0.0900,186.16,12.5\n"
                "lat,bare_metal,\"BF off, WC on\",,/usr/bin/taskset 0x1 ib_write_lat -a,false,,,,,,,,,,,,,,,,"
                "not gated,128,1.27,1.3,0.0300,1.22,1.2,-0.0200,212.19,3.25\n");
  EXPECT_EQ(run_csv_header({.latency = true}), csv.substr(0, csv.find('\n')));
}

TEST(LatencyCompare, MixedScenarioKeepsTheNetperfTable) {
  // kScenario's netperf points followed by kLatencyScenario's latency points.
  std::string mixed = kScenario;
  mixed.replace(mixed.find("service_demand = 0.25\n"), 22,
                "service_demand = 0.25\nt_typical_us = 0.05\nt_min_us = 0.08\n");
  const std::string lat = kLatencyScenario;
  mixed += lat.substr(lat.find("[[point]]"));
  const Scenario m = parse_scenario(mixed, "s.toml");
  ASSERT_EQ(m.points.size(), 4u);
  const Scenario n = parse_scenario(kScenario, "s.toml");
  const Scenario l = parse_scenario(kLatencyScenario, "s.toml");

  const std::vector<PointOutcome> netperf = {
      evaluate_point(n.points[0], n.tolerance, Figures{8323.20, 1.020, 1.074, {}, {}, {}},
                     Figures{7000.0, 1.2, 1.074, {}, {}, {}}),
      evaluate_point(n.points[1], n.tolerance, Figures{6925.68, std::nullopt, std::nullopt, {}, {}, {}},
                     Figures{7618.248, 1.5, 1.6, {}, {}, {}})};
  const std::vector<PointOutcome> latency = {
      evaluate_latency_point(l.points[0], l.tolerance, LatencyFigures{2, 0.74, 186.16, 0.79},
                             LatencyFigures{2, 0.83, 12.5, 0.83}),
      evaluate_latency_point(l.points[1], l.tolerance, LatencyFigures{128, 1.22, 212.19, 1.27},
                             LatencyFigures{128, 1.2, 3.25, 1.3})};
  std::vector<PointOutcome> all = netperf;
  all.insert(all.end(), latency.begin(), latency.end());
  const std::string report = format_run_report(m, all);

  // The netperf part is the netperf-only report's, the latency part the latency-only one's.
  const std::string n_report = format_run_report(n, netperf);
  const std::string l_report = format_run_report(l, latency);
  const std::string n_table = n_report.substr(n_report.find("\n\n") + 2,
                                              n_report.rfind("\n\n") - n_report.find("\n\n") - 1);
  const std::string l_table = l_report.substr(l_report.find("ib_write_lat latency"),
                                              l_report.rfind("\n\n") - l_report.find("ib_write_lat latency") + 1);
  EXPECT_EQ(report.substr(0, report.find('\n')),
            "scenario tiny: platform plat-a; tolerance: throughput 15%, service demand 25%, "
            "t_typical 0.05 us, t_min 0.08 us");
  EXPECT_NE(report.find("\n\n" + n_table + "\n" + l_table + "\n"), std::string::npos) << report;
  EXPECT_EQ(report.substr(report.rfind("\n\n") + 2),
            "FAIL: 2 of 2 gated points out of tolerance:\n"
            "  T3_m_flag SDP -m 64K (throughput -15.9% beyond 15%)\n"
            "  kvm_passthrough BF on, WC off 2 B (t_min +0.090 us beyond 0.08 us)\n");

  // The CSV of a mixed scenario: netperf rows have empty latency cells.
  const std::string csv = format_run_csv(m, all);
  const std::string header = csv.substr(0, csv.find('\n'));
  EXPECT_EQ(header, run_csv_header({.latency = true}));
  const std::string row2 = csv.substr(csv.find("tiny,V,"));
  EXPECT_EQ(row2.substr(0, row2.find('\n')),
            "tiny,V,BZCOPY,-m 128K,netperf -v2 -4 -H 'my host' -l 30 -t TCP_STREAM -c -C -- -m "
            "128K,false,6925.68,7618.248,10.0000,,1.5,,,1.6,,,,,,,,not gated,,,,,,,,,");
}

// The shipped seed 001 scenario: 4 series x 7 sizes, every reference row found.
// --- netperf TCP_RR points (compare's run files) ------------------------------------------------

/// A run file's scenario as compare builds it: two TCP_RR runs and a stream run, none gated.
Scenario rr_scenario() {
  Scenario s;
  s.name = "rr.txt";
  s.origin = "rr.txt";
  s.platform = "plat-a";
  auto point = [](std::string table, PointKind kind, std::string size_flag, std::string command) {
    ScenarioPoint p;
    p.table = std::move(table);
    p.mode = "-";
    p.kind = kind;
    p.tool = "netperf";
    p.size_flag = std::move(size_flag);
    p.command = std::move(command);
    p.gated = false;
    return p;
  };
  s.points = {point("rr.txt:1", PointKind::NetperfRr, "-r 64,1024", "netperf -t TCP_RR -c -C -- -r 64,1024"),
              point("rr.txt:4", PointKind::NetperfRr, "", "netperf -t TCP_RR"),
              point("rr.txt:7", PointKind::Netperf, "-m 64K", "netperf -- -m 64K")};
  return s;
}

TEST(RrCompare, TransactionRateReportCsvAndVerdict) {
  const Scenario s = rr_scenario();
  Figures meas1, sim1, meas2, sim2;
  meas1.transaction_rate = 60000;  // simulated 66000: +10 %
  sim1.transaction_rate = 66000;
  meas1.sd_local = 20;  // us/Tr; simulated 18: -10 %
  sim1.sd_local = 18;
  meas1.sd_remote = 25;  // simulated 25: 0 %
  sim1.sd_remote = 25;
  meas1.util_local = sim1.util_local = 15;
  meas1.util_remote = 16;  // simulated 12: -25 %
  sim1.util_remote = 12;
  sim1.throughput_mbps = 523.6;  // the child's CSV has it (both directions' bytes): not compared
  meas2.transaction_rate = 50000;  // simulated 45000: -10 %
  sim2.transaction_rate = 45000;
  const std::vector<PointOutcome> outcomes = {
      evaluate_point(s.points[0], s.tolerance, meas1, sim1), evaluate_point(s.points[1], s.tolerance, meas2, sim2),
      evaluate_point(s.points[2], s.tolerance, Figures{8000.0, {}, {}, {}, {}, {}}, Figures{8800.0, {}, {}, {}, {}, {}})};
  EXPECT_EQ(outcomes[0].kind, PointKind::NetperfRr);
  EXPECT_NEAR(outcomes[0].transaction_rate.error.value(), 0.10, 1e-12);
  EXPECT_NEAR(outcomes[0].sd_local.error.value(), -0.10, 1e-12);
  EXPECT_NEAR(outcomes[0].util_remote.error.value(), -0.25, 1e-12);
  EXPECT_FALSE(outcomes[0].throughput.simulated);  // a TCP_RR's throughput is not compared
  EXPECT_FALSE(outcomes[2].transaction_rate.measured);
  const std::string report = format_run_report(s, outcomes);
  const std::string expected =
      "scenario rr.txt: platform plat-a; tolerance: none (not gated)\n"
      "\n"
      "                                      throughput, Mbit/s          SD local, us/KB       SD remote, us/KB         util local, %         util remote, %\n"
      "table            mode    size      measured simulated   error    meas    sim   error    meas    sim   error    meas    sim   error    meas    sim   error  status\n"
      "rr.txt:7         -       -m 64K     8000.00   8800.00  +10.0%       -      -       -       -      -       -       -      -       -       -      -       -  not gated\n"
      "\n"
      "per table        points  |error| throughput     |error| service demand     |error| utilisation\n"
      "                         median / max           median / max               median / max\n"
      "all runs              1  10.0% / 10.0%          -                          -\n"
      "\n"
      "netperf TCP_RR: transaction rate in transactions/s, service demand in us/Tr (CPU us per transaction); error = (simulated - measured) / measured\n"
      "                                           transactions/s             SD local, us/Tr       SD remote, us/Tr         util local, %         util remote, %\n"
      "table            mode    size         measured  simulated   error    meas    sim   error    meas    sim   error    meas    sim   error    meas    sim   error  status\n"
      "rr.txt:1         -       -r 64,1024   60000.00   66000.00  +10.0%  20.000 18.000  -10.0%  25.000 25.000   +0.0%   15.00  15.00   +0.0%   16.00  12.00  -25.0%  not gated\n"
      "rr.txt:4         -       -            50000.00   45000.00  -10.0%       -      -       -       -      -       -       -      -       -       -      -       -  not gated\n"
      "\n"
      "all runs         points  |error| transaction rate  |error| service demand     |error| utilisation\n"
      "                         median / max              median / max               median / max\n"
      "                      2  10.0% / 10.0%             5.0% / 10.0%               12.5% / 25.0%\n"
      "\n"
      "compared: 3 points, none gated\n";
  EXPECT_EQ(report, expected);
  // The CSV: a TCP_RR row's rate and us/Tr service demands in their own columns, its
  // utilisations in the util columns, the stream's throughput and us/KB cells empty.
  const std::string csv = format_run_csv(s, outcomes);
  EXPECT_EQ(csv.substr(0, csv.find('\n')), run_csv_header({.rr = true}));
  EXPECT_EQ(csv.substr(csv.find('\n') + 1),
            "rr.txt,rr.txt:1,-,\"-r 64,1024\",\"netperf -t TCP_RR -c -C -- -r 64,1024\",false,,,,,,,,,,15,15,0.0000,"
            "16,12,-25.0000,not gated,60000,66000,10.0000,20,18,-10.0000,25,25,0.0000\n"
            "rr.txt,rr.txt:4,-,,netperf -t TCP_RR,false,,,,,,,,,,,,,,,,not gated,50000,45000,-10.0000,,,,,,\n"
            "rr.txt,rr.txt:7,-,-m 64K,netperf -- -m 64K,false,8000,8800,10.0000,,,,,,,,,,,,,not gated,,,,,,,,,\n");
}

TEST(RrCompare, GatedTransactionRateBeyondTolerance) {
  // A gated TCP_RR point (run files never gate; the verdict names the rate as it names a
  // throughput): 60000 measured, 45000 simulated is -25 %, beyond 15 %.
  Scenario s = rr_scenario();
  s.points.resize(1);
  s.points[0].gated = true;
  s.tolerance = Tolerance{0.15, 0.25};
  Figures meas, sim;
  meas.transaction_rate = 60000;
  sim.transaction_rate = 45000;
  const PointOutcome o = evaluate_point(s.points[0], s.tolerance, meas, sim);
  EXPECT_EQ(o.status, "FAIL");
  const std::string report = format_run_report(s, {o});
  EXPECT_EQ(report.substr(report.rfind("\n\n") + 2),
            "FAIL: 1 of 1 gated points out of tolerance:\n"
            "  rr.txt:1 - -r 64,1024 (transaction rate -25.0% beyond 15%)\n");
}

TEST(Seed001, ShippedScenarioResolves) {
  const std::string dir = HCASIM_SOURCE_DATA_DIR;
  const Scenario s = load_scenario(dir + "/scenarios/seed001.toml");
  EXPECT_EQ(s.name, "seed001");
  EXPECT_DOUBLE_EQ(s.tolerance.t_typical_us, 0.05);
  EXPECT_DOUBLE_EQ(s.tolerance.t_min_us, 0.08);
  ASSERT_EQ(s.points.size(), 28u);
  const std::vector<uint64_t> sizes = {2, 4, 8, 16, 32, 64, 128};
  for (size_t i = 0; i < s.points.size(); ++i) {
    const ScenarioPoint& p = s.points[i];
    EXPECT_EQ(p.kind, PointKind::Latency);
    // Two t_min rows the model cannot explain are not gated (see the scenario's comments).
    const bool unexplained = p.table == "kvm_passthrough" && p.mode == "BF on, WC off" && (i == 3 || i == 6);
    EXPECT_EQ(p.gated, !unexplained) << i;
    EXPECT_EQ(p.platform, p.table == "kvm_passthrough" ? "connectx3-pcie3x8-kvm" : "connectx3-pcie3x8");
    const bool bf = p.mode.rfind("BF on", 0) == 0;
    EXPECT_EQ(p.set, std::vector<std::string>{bf ? "hca.blueflame=on" : "hca.blueflame=off"});
    const LatencyFigures f = read_latency_reference(p.reference, dir);
    EXPECT_EQ(f.bytes, sizes[i % 7]) << i;
    EXPECT_EQ(p.command, "taskset -c 0 ib_write_lat -d mlx4_0 -i 1 -F -s " +
                             std::to_string(f.bytes) + " -n 1000000");
    EXPECT_TRUE(f.t_min_us && f.t_max_us && f.t_typical_us);
  }
  // "using BF has latency of 1.47us and no usage of BF only 1us" (128 B, KVM).
  EXPECT_DOUBLE_EQ(read_latency_reference(s.points[6].reference, dir).t_typical_us.value(), 1.47);
  EXPECT_DOUBLE_EQ(read_latency_reference(s.points[13].reference, dir).t_typical_us.value(), 1.00);
  // bare metal, BF off, 16 B: "16 1000000 1.06 1261.99 1.11".
  const LatencyFigures f = read_latency_reference(s.points[24].reference, dir);
  EXPECT_EQ(s.points[24].table, "bare_metal");
  EXPECT_EQ(s.points[24].mode, "BF off, WC on");
  EXPECT_DOUBLE_EQ(f.t_min_us.value(), 1.06);
  EXPECT_DOUBLE_EQ(f.t_max_us.value(), 1261.99);
  EXPECT_DOUBLE_EQ(f.t_typical_us.value(), 1.11);
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
  EXPECT_EQ(error({"-j"}), "-j: missing value");
  EXPECT_EQ(error({"-j", "--json"}),
            "-j: missing value (the next word, '--json', is an option; a value that starts with '-' is written -jVALUE)");
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
