// The libibverbs examples' front end (frontends/pingpong_cli.h, frontends/pingpong_output.h):
// their flags as getopt_long reads them, and their two result lines computed as rdma-core v44's
// rc_pingpong.c main() computes them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "frontends/pingpong_cli.h"
#include "frontends/pingpong_output.h"

using namespace hcasim;
using namespace hcasim::frontends;

TEST(PingpongCli, DefaultsAreThePrograms) {
  const auto rc = parse_pingpong_args(PingpongProgram::Rc, {});
  EXPECT_EQ(rc.size, 4096u);
  EXPECT_EQ(rc.iters, 1000u);
  EXPECT_EQ(rc.rx_depth, 500u);
  EXPECT_EQ(rc.mtu, 1024u);
  EXPECT_FALSE(rc.events);
  EXPECT_FALSE(rc.server);
  const auto ud = parse_pingpong_args(PingpongProgram::Ud, {});
  EXPECT_EQ(ud.size, 1024u);  // ud_pingpong.c main(): size = 1024 (its usage text says 2048)
  EXPECT_EQ(to_pingpong_config(ud).path_mtu, 0u);
  const auto c = to_pingpong_config(rc);
  EXPECT_EQ(c.retry.timeout, 14);  // pp_connect_ctx: timeout 14, retry_cnt 7, rnr_retry 7
  EXPECT_EQ(c.retry.retry_cnt, 7);
  EXPECT_EQ(c.retry.rnr_retry, 7);
}

TEST(PingpongCli, FlagsAsGetoptLongReadsThem) {
  const auto o = parse_pingpong_args(PingpongProgram::Rc, {"ibv_rc_pingpong", "-s64", "--iter=10", "-ec", "node1",
                                                           "-r", "0x10", "--mtu", "2048", "--platform=connectx3-pcie3x8"});
  EXPECT_EQ(o.size, 64u);
  EXPECT_EQ(o.iters, 10u);  // --iter: the unique prefix of --iters
  EXPECT_TRUE(o.events);
  EXPECT_TRUE(o.validate);
  EXPECT_EQ(o.rx_depth, 16u);  // strtoul(..., 0): hex
  EXPECT_EQ(o.mtu, 2048u);
  EXPECT_EQ(o.server, "node1");  // permuted: anywhere on the line
  EXPECT_EQ(o.platform, "connectx3-pcie3x8");
  EXPECT_EQ(pingpong_program_named("rc_pingpong"), PingpongProgram::Rc);
  EXPECT_EQ(pingpong_program_named("ibv_ud_pingpong"), PingpongProgram::Ud);
  EXPECT_FALSE(pingpong_program_named("ibv_xsrq_pingpong"));
}

TEST(PingpongOutput, TheTwoLinesAsTheProgramComputesThem) {
  // 4096 B x 1000 iters x 2 = 8192000 B in 20000 us: 8192000 x 8 / 20000 = 3276.80 Mbit/s, 20 us/iter.
  EXPECT_EQ(format_pingpong_figures(1000, pingpong_figures(4096, 1000, 20000)),
            "8192000 bytes in 0.02 seconds = 3276.80 Mbit/sec\n1000 iters in 0.02 seconds = 20.00 usec/iter\n");
  // usec / iters is float arithmetic: 1675 / 1000 is 1.67499995f, printed "1.67" (in double, 1.68).
  EXPECT_EQ(format_pingpong_figures(1000, pingpong_figures(2, 1000, 1675)),
            "4000 bytes in 0.00 seconds = 19.10 Mbit/sec\n1000 iters in 0.00 seconds = 1.67 usec/iter\n");
  // gettimeofday reads whole microseconds: 0.9 us to 2.1 us is 2 - 0 = 2 us.
  EXPECT_EQ(pingpong_usec(900, 2100), 2);
  EXPECT_EQ(pingpong_usec(1000, 1999), 0);
}

TEST(PingpongOutput, AddressLines) {
  EXPECT_EQ(pingpong_address_line(PingpongProgram::Rc, false, 1, 0x48, 0xca97db, "::"),
            "  local address:  LID 0x0001, QPN 0x000048, PSN 0xca97db, GID ::\n");
  EXPECT_EQ(pingpong_address_line(PingpongProgram::Ud, false, 1, 0x48, 0xca97db, "::"),
            "  local address:  LID 0x0001, QPN 0x000048, PSN 0xca97db: GID ::\n");
  EXPECT_EQ(pingpong_address_line(PingpongProgram::Ud, true, 2, 0x48, 0x410b11, "fe80::2:c903:0:2"),
            "  remote address: LID 0x0002, QPN 0x000048, PSN 0x410b11, GID fe80::2:c903:0:2\n");
}

TEST(PingpongCli, SrqTakesItsQpCountAndRefusesAsTheProgramDoes) {
  // srq_pingpong.c main(): num_qp = 16, rx_depth = 500, getopt "p:d:i:s:m:q:r:n:l:eog:c".
  const auto d = parse_pingpong_args(PingpongProgram::Srq, {});
  EXPECT_EQ(d.num_qp, 16u);
  EXPECT_EQ(d.rx_depth, 500u);
  EXPECT_EQ(d.size, 4096u);
  EXPECT_EQ(to_pingpong_config(d).num_qp, 16u);
  EXPECT_EQ(to_pingpong_config(parse_pingpong_args(PingpongProgram::Rc, {})).num_qp, 1u);  // one QP elsewhere
  const auto o = parse_pingpong_args(PingpongProgram::Srq, {"--num-qp=0x4", "-r4", "host"});
  EXPECT_EQ(o.num_qp, 4u);
  EXPECT_EQ(o.rx_depth, 4u);  // one receive per QP is enough
  auto error = [](const std::vector<std::string>& args) -> std::string {
    try {
      parse_pingpong_args(PingpongProgram::Srq, args);
    } catch (const InputError& e) {
      return e.what();
    }
    return "(accepted)";
  };
  // The program's checks after its options, in its order and its words.
  EXPECT_EQ(error({"-q", "16", "-r", "8"}),
            "rx_depth 8 is too small for 16 QPs -- must have at least one receive per QP.");
  EXPECT_EQ(error({"-r", "0"}), "rx_depth 0 is too small for 16 QPs -- must have at least one receive per QP.");
  EXPECT_EQ(error({"-q", "300"}), "num_qp 300 must be less than 255");  // MAX_QP 256; its text says 255
  EXPECT_EQ(error({"-q", "256", "-r", "256"}), "num_qp 256 must be less than 255");
  EXPECT_EQ(error({"-q", "4294967295", "-r", "100"}),  // %d of an unsigned int
            "rx_depth 100 is too small for -1 QPs -- must have at least one receive per QP.");
  EXPECT_EQ(error({"-q", "0"}), "-q 0: no QP would send or receive; ibv_srq_pingpong would poll its CQ for ever");
  EXPECT_EQ(error({"-q", "-2"}), "-q: '-2' is not a number");
  EXPECT_EQ(error({"-o"}), "-o (--odp): on-demand paging is not simulated by hcasim ibv_srq_pingpong");
  EXPECT_EQ(error({"-N"}), "unknown option -N (ibv_srq_pingpong -h lists them)");
  EXPECT_EQ(error({"-q", "255", "-r", "255"}), "(accepted)");
  EXPECT_EQ(error({"-h", "-q", "0"}), "(accepted)");  // -h prints the usage before any check
}

TEST(PingpongOutput, SrqPrintsAnAddressLineForEveryQp) {
  // srq_pingpong.c: one srand48, then lrand48() & 0xffffff for QP 0, 1, ...: the first PSN is
  // the single-QP programs' one.
  const auto psns = pingpong_psns(1, 0, 3);
  ASSERT_EQ(psns.size(), 3u);
  EXPECT_EQ(psns[0], pingpong_psn(1, 0));
  EXPECT_EQ(psns[0], 0xca97dbu);
  EXPECT_NE(psns[1], psns[0]);
  PingpongOptions o = parse_pingpong_args(PingpongProgram::Srq, {"-q", "2", "host"});
  PingpongResult r;
  r.side[0].qpns = {0x48, 0x49};
  r.side[1].qpns = {0x48, 0x49};
  r.side[0].start_ns = 0;
  r.side[0].end_ns = 10000;  // 10 us: 2 x 4096 x 1000 B x 8 / 10 us
  const auto peer = pingpong_psns(1, 1, 2);
  EXPECT_EQ(format_pingpong_output(o, r),
            pingpong_address_line(PingpongProgram::Srq, false, 1, 0x48, psns[0], "::") +
                pingpong_address_line(PingpongProgram::Srq, false, 1, 0x49, psns[1], "::") +
                pingpong_address_line(PingpongProgram::Srq, true, 2, 0x48, peer[0], "::") +
                pingpong_address_line(PingpongProgram::Srq, true, 2, 0x49, peer[1], "::") +
                "8192000 bytes in 0.00 seconds = 6553600.00 Mbit/sec\n1000 iters in 0.00 seconds = 0.01 usec/iter\n");
}
