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
