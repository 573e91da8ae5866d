#include "model/fault.h"

#include <cmath>

#include <gtest/gtest.h>

#include "model/error.h"

namespace hcasim::model {
namespace {

TEST(RcRetry, LocalAckTimeoutIs4096NsTimesTwoToTheTimeout) {
  RcRetry r;
  EXPECT_EQ(r.timeout, 14);                        // perftest's DEF_QP_TIME
  EXPECT_DOUBLE_EQ(r.local_ack_timeout_ns(), 67108864.0);  // 4096 ns x 2^14 = 67.1 ms
  r.timeout = 1;
  EXPECT_DOUBLE_EQ(r.local_ack_timeout_ns(), 8192.0);
  r.timeout = 31;
  EXPECT_DOUBLE_EQ(r.local_ack_timeout_ns(), 4096.0 * 2147483648.0);  // 8796 s, the IBA maximum
  r.timeout = 0;
  EXPECT_EQ(r.local_ack_timeout_ns(), 0.0);  // no timer
}

TEST(FaultSetting, ParsesFaultAndQpKeysAndLeavesOthers) {
  FaultConfig f;
  RcRetry r;
  EXPECT_TRUE(apply_fault_setting("fault.loss=1e-3", f, r));
  EXPECT_TRUE(apply_fault_setting("fault.corrupt=0.5", f, r));
  EXPECT_TRUE(apply_fault_setting("fault.dup=0", f, r));
  EXPECT_TRUE(apply_fault_setting("fault.reorder=0.25", f, r));
  EXPECT_TRUE(apply_fault_setting("fault.seed=42", f, r));
  EXPECT_TRUE(apply_fault_setting("qp.retry_cnt=3", f, r));
  EXPECT_TRUE(apply_fault_setting("qp.rnr_retry=0", f, r));
  EXPECT_TRUE(apply_fault_setting("qp.timeout=18", f, r));
  EXPECT_EQ(f.loss, 1e-3);
  EXPECT_EQ(f.corrupt, 0.5);
  EXPECT_EQ(f.reorder, 0.25);
  EXPECT_EQ(f.seed, 42u);
  EXPECT_EQ(r.retry_cnt, 3);
  EXPECT_EQ(r.rnr_retry, 0);
  EXPECT_EQ(r.timeout, 18);
  EXPECT_FALSE(apply_fault_setting("pcie.max_payload=256", f, r));
  EXPECT_FALSE(apply_fault_setting("faulty=1", f, r));
}

TEST(FaultSetting, BadValuesNameTheKey) {
  FaultConfig f;
  RcRetry r;
  auto msg = [&](const std::string& a) {
    try {
      apply_fault_setting(a, f, r);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(msg("fault.loss=1"), "--set fault.loss: 1 is not a probability in [0, 1)");
  EXPECT_EQ(msg("fault.loss=-0.1"), "--set fault.loss: -0.1 is not a probability in [0, 1)");
  EXPECT_EQ(msg("fault.loss=nan"), "--set fault.loss: 'nan' is not a number");
  EXPECT_EQ(msg("fault.loss=1e-3x"), "--set fault.loss: '1e-3x' is not a number");
  EXPECT_EQ(msg("fault.loss"), "--set fault.loss: expected KEY=VALUE");
  EXPECT_EQ(msg("qp.retry_cnt=8"), "--set qp.retry_cnt: 8 is above 7");
  EXPECT_EQ(msg("qp.timeout=32"), "--set qp.timeout: 32 is above 31");
  EXPECT_EQ(msg("qp.timeout=-1"), "--set qp.timeout: '-1' is not a whole number");
  EXPECT_EQ(msg("fault.los=0.1"),
            "--set fault.los: unknown key (fault.loss, fault.corrupt, fault.dup, fault.reorder, fault.seed, "
            "qp.retry_cnt, qp.rnr_retry, qp.timeout)");
  EXPECT_TRUE(apply_fault_setting("fault.loss=0.6", f, r));
  EXPECT_EQ(msg("fault.dup=0.4"), "--set fault.dup: the fault probabilities add up to 1 (must be below 1)");
  EXPECT_EQ(f.dup, 0.0);  // a refused setting changes nothing
}

TEST(FaultDraw, FatesFollowTheProbabilitiesAndTheSeed) {
  FaultConfig f;
  f.loss = 0.1;
  f.corrupt = 0.05;
  f.dup = 0.02;
  f.reorder = 0.01;
  FaultDraw d(f, 7);
  const int n = 1000000;
  int count[5] = {};
  for (int i = 0; i < n; ++i) ++count[static_cast<int>(d.next())];
  // Binomial counts: mean n p, sigma sqrt(n p (1 - p)); 5 sigma bounds (loss: 100000 +- 1500).
  auto near = [&](Fate fate, double p) {
    const double sigma = std::sqrt(n * p * (1 - p));
    EXPECT_NEAR(count[static_cast<int>(fate)], n * p, 5 * sigma) << fate_name(fate);
  };
  near(Fate::Lose, 0.1);
  near(Fate::Corrupt, 0.05);
  near(Fate::Duplicate, 0.02);
  near(Fate::Reorder, 0.01);
  near(Fate::Deliver, 0.82);
  // Same seed and stream, same fates; another stream, other fates.
  FaultDraw a(f, 7), b(f, 7), c(f, 8);
  int same = 0, differ = 0;
  for (int i = 0; i < 1000; ++i) {
    const Fate fa = a.next();
    same += fa == b.next();
    differ += fa != c.next();
  }
  EXPECT_EQ(same, 1000);
  EXPECT_GT(differ, 100);  // two independent streams disagree on about 30 % of draws
  FaultDraw none(FaultConfig{}, 1);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(none.next(), Fate::Deliver);
}

TEST(FaultStats, SummaryIsOneLine) {
  FaultStats s;
  s.packets = 100;
  s.lost = 2;
  s.retransmitted = 20;
  s.naks = 1;
  s.timeouts = 1;
  FaultStats t = s;
  t += s;
  EXPECT_EQ(t.summary(),
            "faults: 200 packets, 4 lost, 0 corrupted, 0 duplicated, 0 reordered; 40 retransmitted (2 NAKs, 2 timeouts), "
            "0 RNR NAKs");
}

}  // namespace
}  // namespace hcasim::model
