// Steady-state measurement: util::SteadyState on series worked by hand, and `hcasim netperf
// --steady` against the same stream measured as netperf measures it, over a run long enough that
// its start counts for little (each simulation its own process: one SimGrid engine each).
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include <ostream>
#include <sstream>
#include <utility>

#include "tests/hcasim_run.h"
#include "util/steady_state.h"

using namespace hcasim;
using Step = util::SteadyState::Step;

namespace {

/// The steps SteadyState gives for checkpoints at t = 1, 2, ... with these totals (one quantity).
std::vector<Step> steps_of(util::SteadyState& s, const std::vector<double>& totals) {
  std::vector<Step> out;
  for (size_t i = 0; i < totals.size(); ++i) {
    const double v[] = {totals[i]};
    out.push_back(s.checkpoint(static_cast<double>(i + 1), v));
  }
  return out;
}

}  // namespace

TEST(SteadyState, AConstantRateStartsAtTheThirdCheckpointAndEndsFourLater) {
  // Rate 10 per unit from t = 0. Checkpoint 1 has no window yet; 2 gives the first window's
  // rate (10); 3 the second's (10): they agree, so the interval starts at t = 3. Its averages at
  // t = 4..7 are all 10; at t = 7 it holds min_windows = 4 checkpoints and the last three agree.
  util::SteadyState s(0.001);
  const auto steps = steps_of(s, {10, 20, 30, 40, 50, 60, 70, 80});
  const std::vector<Step> expected = {Step::Warming,   Step::Warming,   Step::Start,     Step::Measuring,
                                      Step::Measuring, Step::Measuring, Step::Done,      Step::Done};
  EXPECT_EQ(steps, expected);
}

TEST(SteadyState, AWarmUpEndsOnlyWhenTwoWindowsAgreeWithinThePrecision) {
  // Window rates (from t = 1 on) 4, 9, 9.05, 9.05, ...: 9 against 9.05 differs by 0.55 % (> 0.5 %), so the
  // interval starts at the checkpoint where 9.05 meets 9.05 (t = 5), not at t = 4.
  util::SteadyState s(0.005);
  const std::vector<double> totals = {1, 5, 14, 23.05, 32.1, 41.15, 50.2, 59.25, 68.3};
  const auto steps = steps_of(s, totals);
  EXPECT_EQ(steps[3], Step::Warming);
  EXPECT_EQ(steps[4], Step::Start);
  EXPECT_EQ(steps[8], Step::Done);  // t = 6..9 measured, each average 9.05
}

TEST(SteadyState, AveragesThatStillMoveKeepItMeasuring) {
  // After the start at t = 3 (rates 10, 10) the rate alternates 10 and 20: the averages over
  // [3, t] are 10, 15, 13.33, 15, 14, 15, ...: after n windows the last three spread by about
  // 5 / n, more than 0.1 % of 15 for every n up to 40.
  util::SteadyState s(0.001);
  std::vector<double> totals = {10, 20, 30};
  for (int i = 0; i < 40; ++i) totals.push_back(totals.back() + (i % 2 == 0 ? 10 : 20));
  for (const Step st : steps_of(s, totals)) EXPECT_NE(st, Step::Done);
}

TEST(SteadyState, EveryQuantityMustSettle) {
  // The first quantity is steady from the start, the second doubles its rate at t = 4: no start
  // before the second's windows agree again (t = 6: rates 20 and 20).
  util::SteadyState s(0.001);
  const std::vector<std::vector<double>> totals = {{10, 10}, {20, 20}, {30, 30}, {40, 40},
                                                   {50, 60}, {60, 80}, {70, 100}};
  std::vector<Step> steps;
  for (size_t i = 0; i < totals.size(); ++i) steps.push_back(s.checkpoint(static_cast<double>(i + 1), totals[i]));
  EXPECT_EQ(steps[2], Step::Start);  // both steady at t = 3 ...
  util::SteadyState late(0.001);
  const std::vector<std::vector<double>> later = {{10, 10}, {20, 20}, {30, 40}, {40, 60}, {50, 80}};
  std::vector<Step> late_steps;
  for (size_t i = 0; i < later.size(); ++i) late_steps.push_back(late.checkpoint(static_cast<double>(i + 1), later[i]));
  // ... here the second's rate goes 10, 20, 20: the start waits for t = 4.
  EXPECT_EQ(late_steps[2], Step::Warming);
  EXPECT_EQ(late_steps[3], Step::Start);
}

TEST(SteadyState, BadArgumentsAreRefused) {
  EXPECT_THROW(util::SteadyState(0), std::invalid_argument);
  EXPECT_THROW(util::SteadyState(1), std::invalid_argument);
  EXPECT_THROW(util::SteadyState(0.01, 2), std::invalid_argument);
  util::SteadyState s(0.01);
  const double one[] = {1}, two[] = {1, 2};
  s.checkpoint(1, one);
  EXPECT_THROW(s.checkpoint(1, one), std::invalid_argument);  // time does not increase
  EXPECT_THROW(s.checkpoint(2, two), std::invalid_argument);  // another number of quantities
  EXPECT_THROW(s.checkpoint(3, std::span<const double>{}), std::invalid_argument);
}

namespace {

struct SteadyCase {
  const char* name;
  const char* size;  // netperf's -m
  const char* zcopy_thresh;  // sdp.zcopy_thresh: 0 = bcopy
};

void PrintTo(const SteadyCase& c, std::ostream* os) { *os << c.name; }

/// netperf's -P 0 row with -c -C: sockets, message size, elapsed s, Mbit/s, local and remote
/// utilisation %, local and remote service demand us/KB.
struct Row {
  double elapsed_s = 0, mbps = 0, util_local = 0, util_remote = 0;
};

Row row_of(const std::string& out) {
  std::istringstream in(out);
  double recv_sock = 0, send_sock = 0, msg = 0;
  Row r;
  in >> recv_sock >> send_sock >> msg >> r.elapsed_s >> r.mbps >> r.util_local >> r.util_remote;
  EXPECT_TRUE(in) << "not a netperf -P 0 row: " << out;
  return r;
}

class SteadyNetperf : public test::HcasimCommandTest, public ::testing::WithParamInterface<SteadyCase> {
 protected:
  SteadyNetperf() : HcasimCommandTest("steady") {}
  /// `hcasim netperf -c -C -P 0 ARGS` on connectx-ddr-pcie1x8, its row.
  Row netperf(const std::string& args) {
    const test::Outcome o = run("netperf -c -C -P 0 " + args);
    EXPECT_EQ(o.status, 0) << o.err;
    return row_of(o.out);
  }
};

}  // namespace

TEST_P(SteadyNetperf, FiguresAgreeWithALongRunWithinThePrecision) {
  // Seed 000's sizes in both modes. The reference is a 4 s run, calibrate's default length, in
  // which the start (Hello, the buffers' growth from 2 KB to 32 KB, the first credits) is a few
  // ms: under 0.1 % of its figures. The steady measurement at 0.2 % is the same stream from a
  // later origin to a shorter end, so each figure must be within 0.5 % (the precision plus the
  // long run's own start and close), and it must have measured less than a tenth as long.
  const std::string common = std::string("--set sdp.zcopy_thresh=") + GetParam().zcopy_thresh;
  const std::string test = std::string(" -- -m ") + GetParam().size;
  const Row full = netperf("-l 4 " + common + test);
  const Row steady = netperf("-l 4 --steady 0.002 " + common + test);
  EXPECT_NEAR(steady.mbps / full.mbps, 1, 0.005) << steady.mbps << " against " << full.mbps << " Mbit/s";
  EXPECT_NEAR(steady.util_local / full.util_local, 1, 0.005);
  EXPECT_NEAR(steady.util_remote / full.util_remote, 1, 0.005);
  EXPECT_LT(steady.elapsed_s, 0.4);
}

INSTANTIATE_TEST_SUITE_P(Seed000Sizes, SteadyNetperf,
                         ::testing::Values(SteadyCase{"bcopy_64K", "64K", "0"}, SteadyCase{"bcopy_1M", "1M", "0"},
                                           SteadyCase{"bzcopy_64K", "64K", "65536"},
                                           SteadyCase{"bzcopy_1M", "1M", "65536"}),
                         [](const auto& test_info) { return std::string(test_info.param.name); });

TEST_F(SteadyNetperf, AStreamShorterThanOneWindowIsMeasuredWhole) {
  // 10 ms is half a window (sim::kSteadyWindowS = 20 ms): no checkpoint comes, so no measured
  // interval starts and the figures are netperf's over the whole run, as without --steady.
  const test::Outcome plain = run("netperf -c -C -P 0 -l 0.01 -- -m 64K");
  const test::Outcome steady = run("netperf -c -C -P 0 -l 0.01 --steady 0.002 -- -m 64K");
  EXPECT_EQ(plain.status, 0);
  EXPECT_EQ(steady.out, plain.out);
}

TEST_F(SteadyNetperf, BadValuesAndCombinationsAreOneLineErrors) {
  for (const auto& [args, error] : std::vector<std::pair<std::string, std::string>>{
           {"--steady 0", "--steady: '0' is not a relative precision between 0 and 0.1 (e.g. 0.002)"},
           {"--steady 0.5", "--steady: '0.5' is not a relative precision between 0 and 0.1 (e.g. 0.002)"},
           {"--steady x", "--steady: 'x' is not a relative precision between 0 and 0.1 (e.g. 0.002)"},
           {"--steady 0.01 --transport ipoib",
            "--steady: a steady-state measurement is made for SDP only, not for --transport ipoib"},
           {"--steady 0.01 --set fault.loss=1e-4",
            "--steady: faults on the wire (fault.*) are rare events a steady window does not sample; measure the "
            "whole run"},
           {"--steady 0.01 -l -1000000",
            "--steady: a run of a byte count (-l -N) sends all of it; give a test length in seconds"}}) {
    const test::Outcome o = run("netperf " + args);
    EXPECT_EQ(o.status, 2) << args;
    EXPECT_EQ(o.err, "hcasim: error: " + error + "\n") << args;
    EXPECT_EQ(o.out, "") << args;
  }
}
