// hcasim calibrate end to end (HCASIM_BINARY): the round trip (simulate with known parameters,
// print netperf's output, read it back, fit from a perturbed start, recover the parameters),
// the cross-validation on seeds 000 and 002 (fit on 64K and 1M, predict the other sizes), and
// bad input.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "model/platform.h"
#include "util/csv.h"
#include "tests/scratch.h"
#include "tests/sim_length.h"

namespace {

namespace fs = std::filesystem;

using hcasim::test::Scratch;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Runs `hcasim ARGS > out 2> err` and returns the exit status (-1 when not exited).
int hcasim(const std::string& args, const std::string& out, const std::string& err) {
  const std::string cmd = std::string(HCASIM_BINARY) + " " + args + " > " + out + " 2> " + err;
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

struct ErrorRow {
  std::string set, run, quantity;
  double measured, start, fitted_error_pct;
};

/// The rows of calibrate's --csv.
std::vector<ErrorRow> error_rows(const std::string& path) {
  const auto rows = hcasim::util::parse_csv(slurp(path), path);
  std::vector<ErrorRow> out;
  for (size_t r = 1; r < rows.size(); ++r)
    out.push_back({rows[r][0], rows[r][1], rows[r][2], std::stod(rows[r][3]), std::stod(rows[r][4]),
                   std::stod(rows[r][7])});
  return out;
}

TEST(CalibrateE2E, RoundTripRecoversKnownParameters) {
  // connectx-ddr-pcie1x8 as shipped, cpu.copy_tx_rate 0.794 B/ns, with cpu.bzcopy_setup set to
  // 4660 cycles (2000 ns), where a 16 KB bzcopy send's throughput depends on it (at the shipped
  // 949 cycles it is 2 % of a call). bcopy with 1M sends is bound by the sender's copy, 95 % of
  // it from a source the cache no longer holds (copy_tx_rate); bzcopy with 16 KB sends pays the
  // per-call setup (bzcopy_setup) on every send. Each run is simulated and printed as netperf
  // prints it, pasted into a run file after the sysfs line that chose the mode.
  // The runs are 1 s long, or the build's shorter test length (tests/sim_length.h): the round
  // trip compares simulations with simulations.
  Scratch s("calibrate-rt");
  const std::string runs = s.path("runs.txt");
  const std::string l = test_netperf_seconds("1");
  {
    std::ofstream out(runs);
    const struct {
      int zcopy;
      std::string flags;
    } cases[] = {{0, "-C -c -P 0 -t TCP_STREAM -l " + l + " -- -m 1M"}, {1, "-C -c -t TCP_STREAM -l " + l + " -- -m 16K"}};
    for (const auto& c : cases) {
      out << "# echo " << c.zcopy << " > /sys/module/ib_sdp/sdp_zcopy_thresh\n# netperf " << c.flags << "\n";
      out.flush();
      ASSERT_EQ(hcasim(std::string("netperf ") + c.flags + " --set cpu.bzcopy_setup=4660 --set sdp.zcopy_thresh=" +
                           std::to_string(c.zcopy),
                       s.path("one.out"), s.path("one.err")),
                0)
          << slurp(s.path("one.err"));
      out << slurp(s.path("one.out"));
    }
  }
  std::cout << slurp(runs);
  // Start 20 % low and 30 % high; --duration 0 simulates the commands' own -l.
  const int rc = hcasim("calibrate --platform connectx-ddr-pcie1x8 --fit cpu.copy_tx_rate,cpu.bzcopy_setup "
                        "--start cpu.copy_tx_rate=0.635 --start cpu.bzcopy_setup=6058 --duration 0 "
                        "--max-evals 90 -j 2 -o " + s.path("fitted.toml") + " " + runs,
                        s.path("cal.out"), s.path("cal.err"));
  std::cout << slurp(s.path("cal.out"));
  ASSERT_EQ(rc, 0) << slurp(s.path("cal.err"));
  const auto fitted = hcasim::model::Platform::load_file(s.path("fitted.toml"));
  EXPECT_NEAR(fitted.num("cpu.copy_tx_rate"), 0.794, 0.02 * 0.794);
  EXPECT_NEAR(fitted.num("cpu.bzcopy_setup"), 4660, 0.02 * 4660);  // cycles: 2000 ns at 2.33 GHz
  EXPECT_NE(fitted.param("cpu.copy_tx_rate").source.find("fitted to runs.txt by hcasim calibrate"),
            std::string::npos);
  EXPECT_EQ(fitted.name(), "connectx-ddr-pcie1x8-fitted");
}

/// Fits `fit` on the `train` runs and predicts `holdout`; every holdout throughput must be
/// within 10 % of its measurement (the project's cross-validation target).
void cross_validate(const std::string& name, const std::string& platform, const std::string& fit,
                    const std::string& starts, const std::string& train, const std::string& holdout,
                    size_t expected_holdout) {
  Scratch s(name);
  const int rc = hcasim("calibrate --platform " + platform + " --fit " + fit + " " + starts + " -j 2 --max-evals 40" +
                            test_calibrate_length_args() + " -o " +
                            s.path("fitted.toml") + " --csv " + s.path("errors.csv") + " '" + train + "' --holdout '" +
                            holdout + "'",
                        s.path("cal.out"), s.path("cal.err"));
  std::cout << slurp(s.path("cal.out"));
  ASSERT_EQ(rc, 0) << slurp(s.path("cal.err"));
  size_t holdout_throughputs = 0;
  for (const ErrorRow& r : error_rows(s.path("errors.csv"))) {
    if (r.set != "holdout" || r.quantity != "throughput") continue;
    ++holdout_throughputs;
    EXPECT_LE(std::abs(r.fitted_error_pct), 10.0) << r.run << ": measured " << r.measured;
  }
  EXPECT_EQ(holdout_throughputs, expected_holdout);
}

TEST(CrossValidation, Seed000FitOn64KAnd1MPredicts128K) {
  // Seed 000's hand-run tables as pasted (validation/seed000/runs.txt: T2 with -r, every send
  // 16 KB, and T3 with -m), bcopy and bzcopy: fit the sender's copy rate and bzcopy's per-call
  // setup on the 64K and 1M runs, from a start 20 % and 30 % off, then predict the four 128K
  // runs.
  const std::string runs = std::string(HCASIM_REFERENCE_DIR) + "/seed000/runs.txt";
  cross_validate("cv-seed000", "connectx-ddr-pcie1x8", "cpu.copy_tx_rate,cpu.bzcopy_setup",
                 "--start cpu.copy_tx_rate=0.635 --start cpu.bzcopy_setup=1234", runs + ":(64K|1M)",
                 runs + ":128K", 4);
}

TEST(CrossValidation, Seed002FitOn64KAnd1MPredictsTheOtherSizes) {
  // Seed 002 (scenarios/seed002.toml): fit the L2-resident copy rate and the cross-package
  // line transfer on the 8 points at 64K and 1M (both bindings, SDP and BZCOPY), from a start
  // 25 % low and 30 % high, then predict the 20 points at 128K, 256K, 512K, 2M and 4M.
  cross_validate("cv-seed002", "infinihost3-pcie1x8", "cpu.copy_tx_hot_rate,topology.line_cross_socket",
                 "--start cpu.copy_tx_hot_rate=0.564 --start topology.line_cross_socket=560", "seed002:-m (64K|1M)$",
                 "seed002:-m (128K|256K|512K|2M|4M)$", 20);
}

TEST(CalibrateE2E, AMeasuredZeroIsRefusedBeforeAnySimulation) {
  Scratch s("calibrate-zero");
  std::ofstream(s.path("zero.txt")) << "# netperf -C -c -P 0 -t TCP_STREAM -l 1 -- -m 1M\n"
                                       " 87380  16384 1048576    1.00       0.00   12.65    13.34    0.000   1.175\n";
  const int rc = hcasim("calibrate --platform connectx-ddr-pcie1x8 --fit cpu.copy_tx_rate -o " + s.path("f.toml") +
                            " " + s.path("zero.txt"),
                        s.path("o"), s.path("e"));
  EXPECT_EQ(rc, 2);
  EXPECT_EQ(slurp(s.path("e")), "hcasim: error: " + s.path("zero.txt") +
                                    ":1: measured throughput is 0: calibrate compares relative errors and needs a "
                                    "measured value > 0\n");
  EXPECT_EQ(slurp(s.path("o")), "");  // no evaluation line: nothing was simulated
  EXPECT_FALSE(fs::exists(s.path("f.toml")));
}

TEST(CalibrateE2E, TheFirstEvaluationIsTheStartEvenNextToABound) {
  // cpu.copy_tx_rate starts at the platform's 0.794 B/ns; with bounds 0.2..1.0 the start sits
  // within BOBYQA's first step (0.25 in log; ln(1.0 / 0.794) = 0.23) of the upper bound, where
  // NLopt moves its first point inward (to 1.0 x e^-0.25 = 0.7788): calibrate simulates the
  // start itself first. It crashed with
  // "internal error: map::at" when the start was never simulated.
  Scratch s("calibrate-bound");
  std::ofstream(s.path("run.txt")) << "# netperf -C -c -P 0 -t TCP_STREAM -l 1 -- -m 1M\n"
                                      " 87380  16384 1048576    1.00    7000.00   12.65    13.34    0.500   1.175\n";
  const int rc = hcasim("calibrate --platform connectx-ddr-pcie1x8 --fit cpu.copy_tx_rate=0.2:1.0 --duration 0.05 "
                        "--max-evals 1 -j 1 -o " + s.path("f.toml") + " " + s.path("run.txt"),
                        s.path("o"), s.path("e"));
  ASSERT_EQ(rc, 0) << slurp(s.path("e"));
  const std::string out = slurp(s.path("o"));
  // One evaluation line, at the start value: "    1     R.RRR %          0.794".
  EXPECT_TRUE(std::regex_search(out, std::regex("\n +1 +[0-9.]+ % +0\\.794\n"))) << out;
  EXPECT_FALSE(std::regex_search(out, std::regex("\n +2 +[0-9.]+ %"))) << out;  // --max-evals 1
  EXPECT_TRUE(fs::exists(s.path("f.toml")));
}

TEST(CalibrateE2E, BadInputIsOneLineExitTwoAndNoFile) {
  Scratch s("calibrate-bad");
  const std::string out = s.path("fitted.toml");
  const struct {
    std::string args, message;
  } cases[] = {
      {"--platform connectx-ddr-pcie1x8 --fit cpu.nope seed002",
       "hcasim: error: --fit cpu.nope: platform connectx-ddr-pcie1x8 has no parameter cpu.nope\n"},
      {"--platform connectx-ddr-pcie1x8 --fit cpu.copy_tx_rate no-such-scenario",
       "no such scenario file or name"},
      {"--platform connectx-ddr-pcie1x8 --fit cpu.copy_tx_rate --start cpu.interrupt=5 seed002",
       "hcasim: error: --start cpu.interrupt=5: cpu.interrupt is not a --fit parameter\n"},
      {"--platform connectx-ddr-pcie1x8 --fit cpu.copy_tx_rate 'seed002:(('",
       "is not a regular expression"},
      {"--platform nowhere --fit cpu.copy_tx_rate seed002", "--platform nowhere: no such platform file or name"},
      {"--platform connectx-ddr-pcie1x8 --fit , seed002",
       "hcasim: error: --fit ,: an empty parameter name (KEY[=LO:HI],...)\n"},
      {"--platform connectx-ddr-pcie1x8 --fit cpu.copy_tx_rate,,cpu.bzcopy_setup seed002",
       "hcasim: error: --fit cpu.copy_tx_rate,,cpu.bzcopy_setup: an empty parameter name (KEY[=LO:HI],...)\n"},
      {"--platform connectx-ddr-pcie1x8 --fit cpu.copy_tx_rate,cpu.copy_tx_rate seed002",
       "hcasim: error: --fit cpu.copy_tx_rate: given twice\n"},
      // seed002's points ran on infinihost3-pcie1x8 (scenarios/seed002.toml).
      {"--platform connectx-ddr-pcie1x8 --fit cpu.copy_tx_rate 'seed002:T0_0 SDP -m 64K$'",
       ": the run is of platform infinihost3-pcie1x8, calibrate fits connectx-ddr-pcie1x8 (--platform): give "
       "runs of one machine\n"},
      {"--platform connectx-ddr-pcie1x8 --fit pcie.gen seed000",
       "hcasim: error: --fit pcie.gen: a count without a unit (a PCIe generation, a number of cores) is the "
       "machine's structure, not a quantity to fit: give it with --set\n"},
      {"--platform connectx-ddr-pcie1x8 --fit cpu.copy_tx_rate seed000 --csv " + out,
       "hcasim: error: --csv " + out + ": the same file as -o\n"},
      {"--platform connectx-ddr-pcie1x8 --fit cpu.copy_tx_rate missing/runs.txt",
       "hcasim: error: missing/runs.txt: no such run file\n"},
      // Seed 003's runs are between two zx1 models: without --remote-platform calibrate
      // simulates both ends as --platform.
      {"--platform zx1-rx2600-pcix --fit cpu.copy_tx_rate seed003",
       ": the run's remote host is platform zx1-rx4640-pcix; calibrate simulates both ends as zx1-rx2600-pcix "
       "(--platform): give --remote-platform zx1-rx4640-pcix, or runs between two of the machine being fitted\n"},
      {"--platform zx1-rx2600-pcix --remote-platform zx1-rx2600-pcix --fit cpu.copy_tx_rate seed003",
       ": the run's remote host is platform zx1-rx4640-pcix, calibrate fits zx1-rx2600-pcix (--remote-platform)\n"},
      {"--platform zx1-rx2600-pcix --fit remote:netstack.ack_rx seed003",
       "hcasim: error: --fit remote:netstack.ack_rx: a remote host's parameter needs --remote-platform\n"},
      {"--platform zx1-rx2600-pcix --remote-platform zx1-rx4640-pcix --fit remote:netstack.nope seed003",
       "hcasim: error: --fit remote:netstack.nope: platform zx1-rx4640-pcix has no parameter netstack.nope\n"},
      {"--platform zx1-rx2600-pcix --remote-platform zx1-rx4640-pcix --fit remote:netstack.ack_rx "
       "--start netstack.ack_rx=2000 seed003",
       "hcasim: error: --start netstack.ack_rx=2000: netstack.ack_rx is not a --fit parameter\n"},
      {"--platform zx1-rx2600-pcix --remote-platform zx1-rx4640-pcix --fit remote:netstack.ack_rx "
       "--start remote:netstack.ack_rx=0 seed003",
       "hcasim: error: --fit remote:netstack.ack_rx: its start 0 must be > 0"},
      {"--platform zx1-rx2600-pcix --remote-platform zx1-rx4640-pcix --fit remote:netstack.ack_rx=0:1 seed003",
       "hcasim: error: --fit remote:netstack.ack_rx=0:1: the lower bound must be > 0\n"},
      // The fitted values are in the platform files and --set comes after them.
      {"--platform zx1-rx2600-pcix --remote-platform zx1-rx4640-pcix --fit netstack.ack_rx "
       "--set netstack.ack_rx=2000 seed003",
       "hcasim: error: --set netstack.ack_rx=2000 sets netstack.ack_rx, a fitted parameter: with "
       "--remote-platform a key is either fitted or set\n"},
      // Seed 000's run file sets sdp_zcopy_thresh before each run (`echo N > /sys/module/...`).
      {"--platform connectx-ddr-pcie1x8 --remote-platform connectx-ddr-pcie1x8 --fit sdp.zcopy_thresh " +
           std::string(HCASIM_REFERENCE_DIR) + "/seed000/runs.txt",
       ": the run's setting sdp.zcopy_thresh="},
      {"--platform zx1-rx2600-pcix --remote-platform no-such-host --fit netstack.ack_rx seed003",
       "hcasim: error: --remote-platform no-such-host: no such platform file or name"},
      {"--platform zx1-rx2600-pcix --remote-platform zx1-rx4640-pcix --fit remote:netstack.ack_rx "
       "--start remote:netstack.ack_rx=abc seed003",
       "hcasim: error: --start remote:netstack.ack_rx=abc: not KEY=NUMBER\n"},
      {"--platform zx1-rx2600-pcix --fit netstack.ack_rx --remote-output " + s.path("r.toml") + " seed003",
       "hcasim: error: --remote-output: needs --remote-platform\n"},
      {"--platform zx1-rx2600-pcix --remote-platform zx1-rx4640-pcix --fit netstack.ack_rx --remote-output " + out +
           " seed003",
       "hcasim: error: --remote-output " + out + ": the same file as -o (two machines, two files)\n"},
      // A value only the model rejects: found before the header lines and the first simulation.
      {"--platform connectx-ddr-pcie1x8 --fit cpu.copy_tx_rate --set pcie.gen=9 seed000",
       "hcasim: error: --set pcie.gen: 9 is not 1, 2 or 3 (platform connectx-ddr-pcie1x8)\n"},
  };
  for (const auto& c : cases) {
    const int rc = hcasim("calibrate " + c.args + " -o " + out, s.path("o"), s.path("e"));
    const std::string err = slurp(s.path("e"));
    EXPECT_EQ(rc, 2) << c.args;
    EXPECT_NE(err.find(c.message), std::string::npos) << c.args << "\n" << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_FALSE(fs::exists(out)) << c.args;
    EXPECT_EQ(slurp(s.path("o")), "") << c.args;
  }
}

TEST(CalibrateE2E, OneFileSpelledTwoWaysIsOneFile) {
  // "a.toml" and "./a.toml" (relative to the working directory) name one file, though it does not
  // exist yet: two outputs there would leave one, so the second is refused before anything runs.
  Scratch s("calibrate-same");
  const std::string a = "calibrate-same-" + std::to_string(::getpid()) + ".toml", a2 = "./" + a;
  const std::string base = "calibrate --platform zx1-rx2600-pcix --remote-platform zx1-rx4640-pcix --fit "
                           "netstack.ack_rx 'seed003:IPoIB, FMR' --max-evals 1 ";
  EXPECT_EQ(hcasim(base + "-o " + a + " --remote-output " + a2, s.path("o"), s.path("e")), 2);
  EXPECT_EQ(slurp(s.path("e")), "hcasim: error: --remote-output " + a2 + ": the same file as -o (two machines, two files)\n");
  EXPECT_EQ(hcasim(base + "-o " + a + " --csv " + a2, s.path("o"), s.path("e")), 2);
  EXPECT_EQ(slurp(s.path("e")), "hcasim: error: --csv " + a2 + ": the same file as -o\n");
  EXPECT_FALSE(fs::exists(a));
}

TEST(CalibrateE2E, TwoMachinesEachFittedKeyInItsOwnHostsFile) {
  // Seed 003's three IPoIB points run from an rx2600 to an rx4640 (scenarios/seed003.toml). One
  // evaluation at the start: its figures are what `hcasim netperf --platform zx1-rx2600-pcix
  // --remote-platform zx1-rx4640-pcix` gives for each point, and each host's file takes its own
  // parameter: netstack.ack_rx on the sender, remote:netstack.other_segment on the receiver.
  Scratch s("calibrate-two");
  const int rc = hcasim("calibrate --platform zx1-rx2600-pcix --remote-platform zx1-rx4640-pcix "
                        "--fit netstack.ack_rx,remote:netstack.other_segment --max-evals 1 --duration 0.5 -j 2 "
                        "-o " + s.path("tx.toml") + " --remote-output " + s.path("rx.toml") + " --csv " +
                            s.path("e.csv") + " 'seed003:seed004 IPoIB, FMR'",
                        s.path("o"), s.path("e"));
  ASSERT_EQ(rc, 0) << slurp(s.path("e"));
  const std::string out = slurp(s.path("o"));
  EXPECT_NE(out.find("remote platform zx1-rx4640-pcix"), std::string::npos) << out;
  EXPECT_NE(out.find("\nremote:netstack.other_segment "), std::string::npos) << out;
  const auto tx = hcasim::model::Platform::load_file(s.path("tx.toml"));
  const auto rx = hcasim::model::Platform::load_file(s.path("rx.toml"));
  EXPECT_EQ(tx.name(), "zx1-rx2600-pcix-fitted");
  EXPECT_EQ(rx.name(), "zx1-rx4640-pcix-fitted");
  const auto fitted = [](const hcasim::model::Platform& p, const std::string& key) {
    return p.param(key).source.find("by hcasim calibrate") != std::string::npos;
  };
  EXPECT_TRUE(fitted(tx, "netstack.ack_rx"));
  EXPECT_FALSE(fitted(tx, "netstack.other_segment"));
  EXPECT_TRUE(fitted(rx, "netstack.other_segment"));
  EXPECT_FALSE(fitted(rx, "netstack.ack_rx"));
  // The start is the two shipped platforms: the same run by hand gives the same throughput.
  ASSERT_EQ(hcasim("netperf -H peer -T ,2 -t TCP_STREAM --transport ipoib -l 0.5 --platform zx1-rx2600-pcix "
                   "--remote-platform zx1-rx4640-pcix --set host.netfilter=off --set hca.fmr=on --csv " +
                       s.path("n.csv") + " -- -m 8192 -s 262144 -S 262144",
                   s.path("n.out"), s.path("n.err")),
            0)
      << slurp(s.path("n.err"));
  const std::vector<ErrorRow> rows = error_rows(s.path("e.csv"));
  ASSERT_EQ(rows.size(), 1u);
  const auto by_hand = hcasim::util::parse_csv(slurp(s.path("n.csv")), s.path("n.csv"));
  ASSERT_EQ(by_hand.size(), 2u);
  ASSERT_EQ(by_hand[0][6], "throughput_mbps");
  EXPECT_DOUBLE_EQ(rows[0].start, std::stod(by_hand[1][6]));
}

}  // namespace
