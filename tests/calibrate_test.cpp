// hcasim calibrate's pieces (scenarios/calibrate.h): --fit items, the child command lines,
// the quantities read back from child CSVs, the RMS objective, the rewritten platform file and
// the observations of scenarios and run files. The fit itself runs end to end in
// calibrate_e2e_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "frontends/netperf_output.h"
#include "frontends/perftest_output.h"
#include "model/error.h"
#include "model/platform.h"
#include "scenarios/calibrate.h"
#include "tests/scratch.h"

namespace {

using namespace hcasim;
using namespace hcasim::scenarios;

const char* kPlatform = R"(name = "tiny"
description = "a test platform"

[cpu]
copy_tx_rate = { value = 0.96, unit = "B/ns", source = "fitted to seed 000 T3" }
interrupt = { value = 3500, unit = "cycles", source = "assumed" }
idle = { value = 0, unit = "ns", source = "none" }
[hca]
blueflame = { value = true, unit = "", source = "mlx4" }
name_tag = { value = "x", unit = "", source = "label" }
)";

model::Platform tiny() { return model::Platform::parse(kPlatform, "tiny.toml"); }

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(CalibrateFit, DefaultBoundsAreAFactorOfFourAroundTheStart) {
  const FitParam p = parse_fit_param("cpu.copy_tx_rate", tiny(), {});
  EXPECT_EQ(p.key, "cpu.copy_tx_rate");
  EXPECT_EQ(p.unit, "B/ns");
  EXPECT_DOUBLE_EQ(p.start, 0.96);
  EXPECT_DOUBLE_EQ(p.lower, 0.24);  // 0.96 / 4
  EXPECT_DOUBLE_EQ(p.upper, 3.84);  // 0.96 * 4
  EXPECT_FALSE(p.integer);
}

TEST(CalibrateFit, ExplicitBoundsStartAndIntegerLiterals) {
  const FitParam p = parse_fit_param("cpu.copy_tx_rate=0.5:2", tiny(), {"cpu.copy_tx_rate=0.7"});
  EXPECT_DOUBLE_EQ(p.lower, 0.5);
  EXPECT_DOUBLE_EQ(p.upper, 2);
  EXPECT_DOUBLE_EQ(p.start, 0.7);
  const FitParam q = parse_fit_param("cpu.interrupt", tiny(), {"cpu.copy_tx_rate=0.7"});
  EXPECT_TRUE(q.integer);  // the file writes 3500: fitted values are rounded
  EXPECT_DOUBLE_EQ(q.start, 3500);
}

TEST(CalibrateFit, BadItemsNameTheItem) {
  const auto p = tiny();
  EXPECT_EQ(error_of([&] { parse_fit_param("cpu.nope", p, {}); }),
            "--fit cpu.nope: platform tiny has no parameter cpu.nope");
  EXPECT_EQ(error_of([&] { parse_fit_param("hca.blueflame", p, {}); }),
            "--fit hca.blueflame: not a number (only numeric parameters can be fitted)");
  EXPECT_EQ(error_of([&] { parse_fit_param("hca.name_tag", p, {}); }),
            "--fit hca.name_tag: not a number (only numeric parameters can be fitted)");
  EXPECT_EQ(error_of([&] { parse_fit_param("cpu.idle", p, {}); }),
            "--fit cpu.idle: its start 0 must be > 0 (the fit works on logarithms; give --start)");
  EXPECT_EQ(error_of([&] { parse_fit_param("cpu.copy_tx_rate=2:1", p, {}); }),
            "--fit cpu.copy_tx_rate=2:1: the lower bound must be below the upper");
  EXPECT_EQ(error_of([&] { parse_fit_param("cpu.copy_tx_rate=0:1", p, {}); }),
            "--fit cpu.copy_tx_rate=0:1: the lower bound must be > 0");
  EXPECT_EQ(error_of([&] { parse_fit_param("cpu.copy_tx_rate=a:b", p, {}); }),
            "--fit cpu.copy_tx_rate=a:b: bounds must be LO:HI, two numbers");
  EXPECT_EQ(error_of([&] { parse_fit_param("cpu.copy_tx_rate=1", p, {}); }),
            "--fit cpu.copy_tx_rate=1: bounds must be LO:HI, two numbers");
  EXPECT_EQ(error_of([&] { parse_fit_param("cpu.copy_tx_rate=1:2", p, {}); }),
            "--fit cpu.copy_tx_rate=1:2: the start 0.96 is outside [1, 2]");
  EXPECT_EQ(error_of([&] { parse_fit_param("cpu.copy_tx_rate", p, {"cpu.copy_tx_rate=fast"}); }),
            "--start cpu.copy_tx_rate=fast: not KEY=NUMBER");
}

TEST(CalibrateFit, RmsOfRelativeErrors) {
  // sqrt((0.03^2 + 0.04^2) / 2) = sqrt(0.00125) = 0.0353553...
  EXPECT_NEAR(rms({0.03, -0.04}), 0.035355339, 1e-9);
  EXPECT_EQ(rms({}), 0);
}

TEST(CalibrateArgv, NetperfLengthGoesBeforeTheTestOptions) {
  Observation o;
  o.tool = "netperf";
  o.words = {"-C", "-c", "-P", "0", "-l", "60", "--", "-m", "64K"};
  const auto argv = observation_argv(o, "/p.toml", {"sdp.zcopy_thresh=0"}, SimLength{4.0, 20000, std::nullopt});
  const std::vector<std::string> expected = {"hcasim", "netperf", "-C", "-c", "-P", "0", "-l", "60", "-l", "4",
                                             "--", "-m", "64K", "--platform", "/p.toml", "--set",
                                             "sdp.zcopy_thresh=0"};
  EXPECT_EQ(argv, expected);
  o.words = {"-c"};
  EXPECT_EQ(observation_argv(o, "/p.toml", {}, SimLength{2.5, std::nullopt, std::nullopt}),
            (std::vector<std::string>{"hcasim", "netperf", "-c", "-l", "2.5", "--platform", "/p.toml"}));
  // --duration 0: as typed.
  EXPECT_EQ(observation_argv(o, "/p.toml", {}, SimLength{}),
            (std::vector<std::string>{"hcasim", "netperf", "-c", "--platform", "/p.toml"}));
}

TEST(CalibrateArgv, SdpRunsAreMeasuredInTheirSteadyStateIpoibRunsAsTheyAre) {
  Observation o;
  o.tool = "netperf";
  o.words = {"-c", "--", "-m", "64K"};
  EXPECT_EQ(observation_argv(o, "/p.toml", {}, SimLength{4.0, 20000, 0.002}),
            (std::vector<std::string>{"hcasim", "netperf", "-c", "-l", "4", "--steady", "0.002", "--", "-m", "64K",
                                      "--platform", "/p.toml"}));
  // --steady is measured for SDP only (sim/netperf_sim.h): IPoIB keeps its whole -l.
  for (const auto& transport : {std::vector<std::string>{"--transport", "ipoib"},
                                std::vector<std::string>{"--transport=ipoib"}}) {
    o.words = transport;
    o.words.insert(o.words.end(), {"--", "-m", "64K"});
    std::vector<std::string> expected = {"hcasim", "netperf"};
    expected.insert(expected.end(), transport.begin(), transport.end());
    expected.insert(expected.end(), {"-l", "4", "--", "-m", "64K", "--platform", "/p.toml"});
    EXPECT_EQ(observation_argv(o, "/p.toml", {}, SimLength{4.0, 20000, 0.002}), expected);
  }
}

TEST(CalibrateArgv, TcpRrRunsAsTypedWithoutSteadyState) {
  // `hcasim netperf -t TCP_RR --steady` is refused (a transaction rate needs no warm-up search):
  // a TCP_RR run gets --duration's -l only, however -t is written.
  Observation o;
  o.tool = "netperf";
  for (const auto& test : {std::vector<std::string>{"-t", "TCP_RR"}, std::vector<std::string>{"-ttcp_rr"}}) {
    o.words = test;
    o.words.insert(o.words.end(), {"-c", "--", "-r", "64,1024"});
    std::vector<std::string> expected = {"hcasim", "netperf"};
    expected.insert(expected.end(), test.begin(), test.end());
    expected.insert(expected.end(), {"-c", "-l", "4", "--", "-r", "64,1024", "--platform", "/p.toml"});
    EXPECT_EQ(observation_argv(o, "/p.toml", {}, SimLength{4.0, 20000, 0.002}), expected);
  }
  // TCP_MAERTS is a stream: measured in its steady state over SDP.
  o.words = {"-t", "TCP_MAERTS", "--", "-m", "64K"};
  EXPECT_EQ(observation_argv(o, "/p.toml", {}, SimLength{4.0, 20000, 0.002}),
            (std::vector<std::string>{"hcasim", "netperf", "-t", "TCP_MAERTS", "-l", "4", "--steady", "0.002", "--",
                                      "-m", "64K", "--platform", "/p.toml"}));
}

TEST(CalibrateArgv, PerftestIterationsAreCappedNeverRaised) {
  Observation o;
  o.tool = "ib_write_lat";
  o.words = {"-a", "-F", "-n", "1000000"};
  EXPECT_EQ(observation_argv(o, "/p.toml", {}, SimLength{4.0, 20000, 0.002}),
            (std::vector<std::string>{"hcasim", "ib_write_lat", "-a", "-F", "-n", "1000000", "-n", "20000",
                                      "--platform", "/p.toml"}));
  o.words = {"-s", "64", "-n", "100"};
  EXPECT_EQ(observation_argv(o, "/p.toml", {}, SimLength{4.0, 20000, 0.002}),
            (std::vector<std::string>{"hcasim", "ib_write_lat", "-s", "64", "-n", "100", "-n", "100", "--platform",
                                      "/p.toml"}));
  o.words = {};  // perftest's default for ib_write_lat: 1000 iterations
  EXPECT_EQ(observation_argv(o, "/p.toml", {}, SimLength{4.0, 500, 0.002}),
            (std::vector<std::string>{"hcasim", "ib_write_lat", "-n", "500", "--platform", "/p.toml"}));
}

TEST(CalibrateQuantities, NetperfCsvGivesThroughputAndServiceDemands) {
  Observation o;
  o.tool = "netperf";
  o.measured = {{"throughput", 8323.2}, {"sd_local", 1.02}, {"sd_remote", 1.074}};
  const std::string csv = frontends::netperf_csv_header() +
                          "\nTCP_STREAM,65536,87380,87380,16384,60,8400.5,13,13.5,1.01,1.05,1,2,3\n";
  EXPECT_EQ(simulated_quantities(o, csv, "c.csv"), (std::vector<double>{8400.5, 1.01, 1.05}));
  const std::string no_cpu =
      frontends::netperf_csv_header() + "\nTCP_STREAM,65536,87380,87380,16384,60,8400.5,,,,,1,2,3\n";
  EXPECT_EQ(error_of([&] { simulated_quantities(o, no_cpu, "c.csv"); }),
            "c.csv: the simulation did not measure sd_local (add -c/-C?)");
}

TEST(CalibrateQuantities, NetperfRrCsvGivesTransactionRateAndServiceDemandsPerTransaction) {
  // hcasim netperf -t TCP_RR --csv: transaction_rate_per_s is the rate; the sd_* cells are us/Tr.
  Observation o;
  o.tool = "netperf";
  o.measured = {{"transaction_rate", 74000}, {"sd_local_per_tr", 15.5}, {"sd_remote_per_tr", 15.4}};
  const std::string csv = frontends::netperf_csv_header() +
                          "\nTCP_RR,1,1,87380,16384,10,1.18656,14.49,14.49,15.631,15.631,741600,741600,741600,74160\n";
  EXPECT_EQ(simulated_quantities(o, csv, "c.csv"), (std::vector<double>{74160, 15.631, 15.631}));
  const std::string stream = frontends::netperf_csv_header() +
                             "\nTCP_STREAM,65536,87380,87380,16384,60,8400.5,,,,,1,2,3,\n";
  EXPECT_EQ(error_of([&] { simulated_quantities(o, stream, "c.csv"); }),
            "c.csv: the simulation did not measure transaction_rate");
}

TEST(CalibrateQuantities, PerftestCsvRowsAreFoundBySize) {
  Observation o;
  o.tool = "ib_write_lat";
  o.measured = {{"t_typical 64 B", 0.85}, {"t_typical 2 B", 0.79}};
  const std::string csv = frontends::perftest_csv_header(frontends::PerftestTest::WriteLat) +
                          "\nib_write_lat,on,on,2,1000,0.7,3,0.8,0.8,0.1,1,2\n"
                          "ib_write_lat,on,on,64,1000,0.8,3,0.86,0.9,0.1,1,2\n";
  EXPECT_EQ(simulated_quantities(o, csv, "l.csv"), (std::vector<double>{0.86, 0.8}));
  o.measured = {{"t_typical 128 B", 0.98}};
  EXPECT_EQ(error_of([&] { simulated_quantities(o, csv, "l.csv"); }), "l.csv: no simulated row for 128 bytes");
  Observation bw;
  bw.tool = "ib_write_bw";
  bw.measured = {{"bw_average 65536 B", 12.5}};
  const std::string bw_csv = frontends::perftest_csv_header(frontends::PerftestTest::WriteBw) +
                             "\nib_write_bw,off,on,65536,5000,1,1500,1490,12.58,12.49,0.0238\n";
  EXPECT_EQ(simulated_quantities(bw, bw_csv, "b.csv"), (std::vector<double>{12.49}));
}

TEST(CalibrateQuantities, PingpongCsvGivesUsecPerIter) {
  // hcasim ibv_rc_pingpong --csv: one row, the shown side's figures (format_pingpong_csv).
  Observation o;
  o.tool = "ibv_rc_pingpong";
  o.measured = {{"usec_per_iter", 13.5}};
  const std::string csv =
      "program,side,size_bytes,iterations,bytes,usec,seconds,mbit_s,usec_per_iter\n"
      "ibv_rc_pingpong,client,4096,1000,8192000,13540,0.01354,4840.47,13.54\n";
  EXPECT_EQ(simulated_quantities(o, csv, "p.csv"), (std::vector<double>{13.54}));
  EXPECT_EQ(error_of([&] { simulated_quantities(o, "program,side\nibv_rc_pingpong,client\n", "p.csv"); }),
            "p.csv: no usec_per_iter row");
}

TEST(CalibrateRuns, RunFilePingpongRunsAreFittedByTheirUsecPerIter) {
  // A pasted client run: 4096 x 1000 x 2 = 8192000 B; calibrate compares its usec/iter and
  // simulates the command as typed, -n capped at --iterations as perftest's is.
  const hcasim::test::Scratch dir("cal-pp");
  const std::string path = dir.path("pp.txt");
  std::ofstream(path) << "$ ibv_rc_pingpong -g 0 server1\n"
                         "8192000 bytes in 0.01 seconds = 5617.42 Mbit/sec\n"
                         "1000 iters in 0.01 seconds = 11.67 usec/iter\n";
  const auto obs = load_observations(path);
  ASSERT_EQ(obs.size(), 1u);
  EXPECT_EQ(obs[0].tool, "ibv_rc_pingpong");
  EXPECT_EQ(obs[0].measured, (std::vector<std::pair<std::string, double>>{{"usec_per_iter", 11.67}}));
  EXPECT_EQ(observation_argv(obs[0], "p.toml", {}, SimLength{std::nullopt, 500, std::nullopt}),
            (std::vector<std::string>{"hcasim", "ibv_rc_pingpong", "-g", "0", "server1", "-n", "500", "--platform",
                                      "p.toml"}));
}

TEST(CalibratePlatform, RewritesValueAndSourceOnTheParameterLine) {
  const std::string out = rewrite_platform(
      kPlatform, "tiny.toml",
      {{"cpu.copy_tx_rate", "1.0123", "fitted to runs.txt by hcasim calibrate (RMS error 1.5 %; was 0.96) $1"},
       {"cpu.interrupt", "1723", "fitted \"quoted\""}});
  EXPECT_NE(out.find("name = \"tiny-fitted\"\n"), std::string::npos);
  EXPECT_NE(out.find("copy_tx_rate = { value = 1.0123, unit = \"B/ns\", source = \"fitted to runs.txt by hcasim "
                     "calibrate (RMS error 1.5 %; was 0.96) $1\" }\n"),
            std::string::npos);
  EXPECT_NE(out.find("interrupt = { value = 1723, unit = \"cycles\", source = \"fitted \\\"quoted\\\"\" }\n"),
            std::string::npos);
  // Everything else is as it was.
  EXPECT_NE(out.find("idle = { value = 0, unit = \"ns\", source = \"none\" }\n"), std::string::npos);
  const model::Platform back = model::Platform::parse(out, "out.toml");
  EXPECT_DOUBLE_EQ(back.num("cpu.copy_tx_rate"), 1.0123);
  EXPECT_DOUBLE_EQ(back.num("cpu.interrupt"), 1723);
}

TEST(CalibratePlatform, AnyKeyOrderAndValueLookalikesInTheSourceAreRewrittenWhole) {
  const std::string text = "[cpu]\ncopy_tx_rate = { source = \"guess, old value = 2 }\", unit = \"B/ns\", "
                           "value = 0.96 }  # keep me\n";
  const std::string out = rewrite_platform(text, "o.toml", {{"cpu.copy_tx_rate", "1.1", "fitted"}});
  EXPECT_EQ(out, "[cpu]\ncopy_tx_rate = { value = 1.1, unit = \"B/ns\", source = \"fitted\" }  # keep me\n");
}

TEST(CalibratePlatform, AParameterNotInItsSectionIsAnError) {
  // Platform files write every parameter as a one-line inline table (model/platform.h), so a
  // key is either on its line in its section or missing.
  EXPECT_EQ(error_of([&] { rewrite_platform(kPlatform, "tiny.toml", {{"hca.copy_tx_rate", "1", "fitted"}}); }),
            "tiny.toml: hca.copy_tx_rate: not found as a one-line { value, unit, source } table in its section");
}

TEST(CalibrateArgs, FlagsAndTheirErrors) {
  const CalibrateOptions o = parse_calibrate_args({"--platform", "p", "--fit", "cpu.a,cpu.b=1:2", "--start",
                                                   "cpu.a=3", "runs.txt", "-j", "2", "--holdout", "h1", "h2"});
  EXPECT_EQ(o.platform, "p");
  EXPECT_EQ(o.fit, (std::vector<std::string>{"cpu.a", "cpu.b=1:2"}));
  EXPECT_EQ(o.starts, (std::vector<std::string>{"cpu.a=3"}));
  EXPECT_EQ(o.runs, (std::vector<std::string>{"runs.txt"}));  // not taken as a second --start
  EXPECT_EQ(o.holdout, (std::vector<std::string>{"h1", "h2"}));
  EXPECT_EQ(o.jobs, 2);
  EXPECT_EQ(o.max_evals, 60);
  EXPECT_DOUBLE_EQ(o.duration_s, 4);
  EXPECT_EQ(o.iterations, 20000u);
  EXPECT_DOUBLE_EQ(o.steady_rel, 0.002);
  EXPECT_DOUBLE_EQ(parse_calibrate_args({"--platform", "p", "--fit", "cpu.a", "r", "--steady", "0"}).steady_rel, 0);
  EXPECT_EQ(error_of([] { parse_calibrate_args({"--platform", "p", "--fit", "cpu.a", "r", "--steady", "0.5"}); }),
            "--steady: '0.5' is not 0 or a relative precision between 0 and 0.1");
  EXPECT_EQ(error_of([] { parse_calibrate_args({"--fit", "cpu.a", "r"}); }), "--platform is required");
  EXPECT_EQ(error_of([] { parse_calibrate_args({"--platform", "p", "r"}); }), "--fit is required");
  EXPECT_EQ(error_of([] { parse_calibrate_args({"--platform", "p", "--fit", "cpu.a"}); }), "runs is required");
  // An unknown option is named, not hidden behind a missing required one.
  EXPECT_EQ(error_of([] { parse_calibrate_args({"--bogus"}); }),
            "calibrate: unknown option --bogus (it takes --platform, --remote-platform, --remote-output, --fit, "
            "--start, --set, --holdout, -o/--output, --csv, -j/--jobs, --max-evals, --duration, --iterations, "
            "--steady, --json)");
  EXPECT_EQ(error_of([] { parse_calibrate_args({"--platform", "p", "--fit", "cpu.a", "r", "-j", "0"}); }),
            "-j: '0' must be 1..4096");
  EXPECT_EQ(error_of([] { parse_calibrate_args({"--platform", "p", "--fit", "cpu.a", "r", "--duration", "-1"}); }),
            "--duration: '-1' must be 0..3600 seconds");
  EXPECT_EQ(error_of([] { parse_calibrate_args({"--platform", "p", "--fit", "cpu.a", "r", "--max-evals", "x"}); }),
            "--max-evals: 'x' is not a whole number");
}

TEST(CalibrateRuns, ScenarioPointsSelectedByLabel) {
  // validation/seed002/...csv, row T0_0 SDP 64K: 7581.14 Mbit/s, SD 0.746 and 1.105 us/KB.
  const auto obs = load_observations("seed002:T0_0 SDP -m 64K$");
  ASSERT_EQ(obs.size(), 1u);
  EXPECT_EQ(obs[0].label, "seed002 T0_0 SDP -m 64K");
  EXPECT_EQ(obs[0].tool, "netperf");
  ASSERT_EQ(obs[0].measured.size(), 3u);
  EXPECT_EQ(obs[0].measured[0], (std::pair<std::string, double>{"throughput", 7581.14}));
  EXPECT_EQ(obs[0].measured[1], (std::pair<std::string, double>{"sd_local", 0.746}));
  EXPECT_EQ(obs[0].measured[2], (std::pair<std::string, double>{"sd_remote", 1.105}));
  EXPECT_EQ(load_observations("seed002:-m (64K|1M)$").size(), 8u);  // 2 bindings x 2 modes x 2 sizes
  EXPECT_EQ(load_observations("seed002").size(), 28u);
  EXPECT_EQ(error_of([] { load_observations("seed002:nothing like this"); }),
            "seed002:nothing like this: no point of scenario seed002 is selected by 'nothing like this'");
  EXPECT_NE(error_of([] { load_observations("seed002:(unclosed"); }).find("is not a regular expression"),
            std::string::npos);
}

TEST(CalibrateRuns, RunFileRunsSelectedByLabelWithTheirSettings) {
  // validation/seed000/runs.txt: seed 000's hand-run T2 (-r) and T3 (-m) tables, 12 runs.
  const std::string file = std::string(HCASIM_REFERENCE_DIR) + "/seed000/runs.txt";
  const auto all = load_observations(file);
  ASSERT_EQ(all.size(), 12u);
  const auto bz = load_observations(file + ":---m 1M \\[sdp.zcopy_thresh=1\\]");
  ASSERT_EQ(bz.size(), 1u);
  // "# netperf -C -c -P 0 ... ---m 1M" after "echo 1 > .../sdp_zcopy_thresh":
  // 87380  16384 1048576 60.00  10254.89  7.74 13.07 0.495 0.835
  EXPECT_EQ(bz[0].set, (std::vector<std::string>{"sdp.zcopy_thresh=1"}));
  EXPECT_EQ(bz[0].measured[0], (std::pair<std::string, double>{"throughput", 10254.89}));
  EXPECT_EQ(bz[0].measured[1], (std::pair<std::string, double>{"sd_local", 0.495}));
  EXPECT_EQ(bz[0].measured[2], (std::pair<std::string, double>{"sd_remote", 0.835}));
  EXPECT_EQ(bz[0].words, (std::vector<std::string>{"-C", "-c", "-P", "0", "-t", "TCP_STREAM", "-H",
                                                    "193.168.10.143", "-l", "60", "--", "-m", "1M"}));
}

TEST(CalibrateRuns, RunFileTcpRrAndMaertsRuns) {
  // A TCP_RR run is fitted on its transaction rate and service demands per transaction, a
  // TCP_MAERTS run on its throughput and service demands per KB, as printed (netperf 2.4.3's
  // send_tcp_rr cpu_fmt_1_line_1/2 and send_tcp_maerts cpu_fmt_1).
  const hcasim::test::Scratch dir("cal-rr");
  const std::string path = dir.path("rr.txt");
  std::ofstream(path) << "$ netperf -P 0 -c -C -t TCP_RR -l 10 -- -r 64,1024\n"
                         "16384  87380  64      1024   10.00   13718.45  12.45  11.98  72.602  69.862 \n"
                         "16384  87380 \n"
                         "$ netperf -P 0 -c -C -t TCP_MAERTS -l 10 -- -m 64K\n"
                         " 87380  16384  65536    10.00      8323.20   12.96    13.64    1.020   1.074  \n";
  const auto obs = load_observations(path);
  ASSERT_EQ(obs.size(), 2u);
  EXPECT_EQ(obs[0].measured, (std::vector<std::pair<std::string, double>>{
                                 {"transaction_rate", 13718.45}, {"sd_local_per_tr", 72.602}, {"sd_remote_per_tr", 69.862}}));
  EXPECT_EQ(obs[1].measured, (std::vector<std::pair<std::string, double>>{
                                 {"throughput", 8323.20}, {"sd_local", 1.020}, {"sd_remote", 1.074}}));
}

TEST(CalibrateRuns, PerftestCyclesAreRefused) {
  const hcasim::test::Scratch dir("cal");
  const std::string path = dir.path("cycles.txt");
  std::ofstream(path) << "$ ib_write_lat -s 2 -C\n"
                         " #bytes #iterations    t_min[cycles]    t_max[cycles]  t_typical[cycles]\n"
                         " 2       1000          2000           9000         2100\n";
  EXPECT_EQ(error_of([&] { load_observations(path); }),
            path + ":1: the output is in CPU cycles (perftest -C); calibrate compares microseconds: run it without -C");
}

}  // namespace
