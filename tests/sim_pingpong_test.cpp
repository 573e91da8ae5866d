// The simulated libibverbs examples end to end (sim/pingpong_sim.h). Each TEST builds its own
// SimGrid engine, so ctest runs each in its own process. Expected values are worked by hand from
// the platform files, with the arithmetic in the comments (as tests/sim_perftest_test.cpp works
// ib_send_lat's one way).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "frontends/config_error.h"
#include "frontends/pingpong_cli.h"
#include "frontends/pingpong_output.h"
#include "model/platform.h"
#include "sim/pingpong_sim.h"
#include "sim/testbed.h"

using namespace hcasim;

namespace {

model::Platform platform(const std::string& name) {
  return model::Platform::load_file(std::string(HCASIM_REFERENCE_DIR) + "/../scenarios/platforms/" + name + ".toml");
}

// gen3 x8 after 128b/130b and SKP (370/371), Gbit/s.
const double kGen3 = 8.0 * 128 / 130 * 8 * 370 / 371;

/// ibv_rc_pingpong -s 2 on connectx3-pcie3x8 (BlueFlame, write combining), one way of the
/// ping-pong, from the moment a side's receive CQE is in memory to the moment the peer's is:
///   the polling side takes the CQE: libmlx4 poll_cq 104 cycles / 2.6 GHz = 40 ns
///   (parse_single_wc: the send's CQE came earlier, with its ACK), posts its SEND: 156 cycles = 60 ns
///   BlueFlame copy of the 2 B inline SEND WQE (the QP's max_inline_data is 28 B) rounded to 64 B:
///     8 stores x 0.5 ns, one 88 B MWr (88 x 8 / 62.845 = 11.202 ns), 200 ns
///   the message on the route: its busiest link, the responder's PCIe writes of the data (MWr
///     24 + 4 B) and of the 32 B CQE (MWr 24 + 32 B): 84 x 8 / 62.845 = 10.693 ns
///   inline copy 2 B / 1.02 B/ns = 1.961 ns, tx 150, propagation 10, rx 100
///   the responder's packet store (2 B at the PCIe write ceiling, 0.255 ns), posted write 190.
/// This is ib_send_lat's one way (SimPerftest.SendLatencyOfTwoBytesIsTheSumOfItsStages) without
/// its repost of one receive per message: rc_pingpong refills its receives in batches.
double rc_one_way_ns() {
  return 40 + 60 + (8 * 0.5 + 88 * 8 / kGen3 + 200) + 84 * 8 / kGen3 + 2 / 1.02 + 150 + 10 + 100 + 2 * 8 / 62.845 + 190;
}

/// The client's gettimeofday interval of `iters` exchanges with `rx_depth` receives, polling:
/// 2 x iters one-way trips, less the 60 ns of the first (the client posts its first SEND before
/// gettimeofday(&start)), plus the refills on the
/// path: a side reposts rx_depth - 1 receives (60 ns each) when its posted count falls to 1, after
/// its receives number rx_depth - 1, 2 (rx_depth - 1), ... up to iters, each before its next SEND
/// (or, the client's last, before gettimeofday(&end)).
double rc_client_elapsed_ns(uint32_t iters, uint32_t rx_depth) {
  const uint32_t refills = iters / (rx_depth - 1);  // per side
  return 2.0 * iters * rc_one_way_ns() - 60 + 2.0 * refills * (rx_depth - 1) * 60;
}

frontends::PingpongConfig rc(uint32_t size, uint32_t iters, uint32_t rx_depth, bool events = false) {
  frontends::PingpongConfig c;
  c.program = frontends::PingpongProgram::Rc;
  c.size = size;
  c.iters = iters;
  c.rx_depth = rx_depth;
  c.events = events;
  return c;
}

}  // namespace

TEST(SimPingpong, RcUsecPerIterIsTwiceTheOneWaySendPlusTheProgramsOwnWork) {
  // rc_pingpong -s 2 -n 1000 (rx_depth 500): one way 778.11 ns (rc_one_way_ns). Refills: each
  // side after its receives 499 and 998, 499 posts each: 4 x 499 x 60 = 119760 ns. So
  //   elapsed = 2000 x 778.11 - 60 + 119760 = 1675921 ns, 1.676 us per iteration:
  //   twice the one way plus 119.76 ns of refill per iteration.
  // The simulation sizes each message's one transfer in whole bytes at the route's bottleneck
  // rate (Qp::transfer_first), up to 1 B / 7.4 B/ns = 0.135 ns more a trip, and its first exchange
  // is 24 ns shorter than the steady one: within 2000 x 0.135 + 30 = 300 ns of the 1.676 ms,
  // 0.3 ns of the 1676 ns per iteration.
  const auto p = platform("connectx3-pcie3x8");
  const auto r = sim::run_pingpong(p, p, rc(2, 1000, 500));
  const double expected = rc_client_elapsed_ns(1000, 500);
  EXPECT_NEAR(expected, 1675921, 1);
  const auto& client = r.side[0];
  EXPECT_NEAR(client.end_ns - client.start_ns, expected, 300);
  EXPECT_TRUE(r.inline_sends);
  EXPECT_EQ(r.max_inline_data, 28u);  // libmlx4: 64 B WQE - 16 ctrl - 16 raddr - one 4 B inline header
  EXPECT_EQ(r.blueflame_posts, 1000u);
  EXPECT_EQ(client.cq_events, 0u);
  // What the client prints: gettimeofday's whole microseconds (1675 or 1676, by where the
  // interval falls on the microsecond grid), divided in float: 1675 / 1000 is 1.67499995f, "1.67".
  const int64_t usec = frontends::pingpong_usec(client.start_ns, client.end_ns);
  EXPECT_GE(usec, 1675);
  EXPECT_LE(usec, 1676);
  EXPECT_EQ(frontends::format_pingpong_figures(1000, frontends::pingpong_figures(2, 1000, usec)),
            usec == 1675 ? "4000 bytes in 0.00 seconds = 19.10 Mbit/sec\n1000 iters in 0.00 seconds = 1.67 usec/iter\n"
                         : "4000 bytes in 0.00 seconds = 19.09 Mbit/sec\n1000 iters in 0.00 seconds = 1.68 usec/iter\n");
}

TEST(SimPingpong, EventsAddTheInterruptHandlerAndWakeupToEveryHalfRoundTrip) {
  // rc_pingpong -e -s 2 -n 1000 on connectx3-pcie3x8. Against polling (the test above, by hand:
  // 1675921 ns, the simulation within 300 ns of it), each of the 2000 one-way trips ends with the receiving side asleep in
  // ibv_get_cq_event instead of spinning on the CQ, and gets back to its poll through:
  //   hca.interrupt_latency (CQE -> EQE -> MSI-X -> handler entry)       1000 ns
  //   cpu.interrupt (MSI-X entry, mlx4_eq_int, exit: 5200 cycles)         2000 ns
  //   cpu.wakeup (try_to_wake_up of the reader, 1820 cycles; the IRQ and
  //     the program share CPU 0, irq.affinity = host.default_app_cpu: no IPI) 700 ns
  //   cpu.context_switch (schedule() back to the reader, 3900 cycles)     1500 ns
  //   the re-arm, ibv_req_notify_cq: one uncached store to the UAR (cpu.uc_store) 50 ns
  // = 5250 ns per half round trip. The read() syscall's entry (cpu.syscall) is spent before the
  // reader sleeps, off the path. The send's CQE has its own event, handled while the peer works:
  // two events per side and iteration.
  const double per_half_rtt = 1000 + 2000 + 700 + 1500 + 50;
  const auto p = platform("connectx3-pcie3x8");
  const auto r = sim::run_pingpong(p, p, rc(2, 1000, 500, true));
  const auto& client = r.side[0];
  EXPECT_NEAR(client.end_ns - client.start_ns - rc_client_elapsed_ns(1000, 500), 2000 * per_half_rtt, 300);
  EXPECT_EQ(client.cq_events, 2000u);
  EXPECT_EQ(r.side[1].cq_events, 2000u);
  EXPECT_EQ(r.side[0].interrupts, 2000u);
}

TEST(SimPingpong, UdPingpongMovesDatagramsAndChecksTheData) {
  // ud_pingpong -s 2048 -c on connectx3-pcie3x8 (port MTU 2048): every message is one datagram
  // into a receive of 40 + 2048 B; the server finds the client's marks (0 at each page's start)
  // where the GRH room ends. 2048 B is above the 60 B a UD QP inlines.
  const auto p = platform("connectx3-pcie3x8");
  frontends::PingpongConfig c;
  c.program = frontends::PingpongProgram::Ud;
  c.size = 2048;
  c.iters = 200;
  c.rx_depth = 50;
  c.path_mtu = 0;
  c.validate = true;
  const auto r = sim::run_pingpong(p, p, c);
  EXPECT_EQ(r.max_inline_data, 60u);  // libmlx4: 128 B WQE - 16 ctrl - 48 datagram - one 4 B header
  EXPECT_FALSE(r.inline_sends);
  EXPECT_EQ(r.path_mtu, 2048u);
  EXPECT_TRUE(r.side[1].invalid_pages.empty());
  // Two one-way trips per iteration, each above the RC 2 B trip (778 ns) and below 10 us.
  const double per_iter = (r.side[0].end_ns - r.side[0].start_ns) / 200;
  EXPECT_GT(per_iter, 2 * rc_one_way_ns());
  EXPECT_LT(per_iter, 20000);
}

TEST(SimPingpong, TheHcasRefusalsNameTheField) {
  const auto p = platform("connectx3-pcie3x8");
  auto field = [&](const frontends::PingpongConfig& c) -> std::string {
    try {
      sim::check_pingpong(p, p, c);
    } catch (const frontends::ConfigError& e) {
      return e.field();
    }
    return "(not refused)";
  };
  auto c = rc(4096, 10, 500);
  c.path_mtu = 4096;  // above ib.mtu 2048
  EXPECT_EQ(field(c), "path_mtu");
  c = rc(4096, 10, 16351);  // rx_depth + 1 = 16352 CQEs, above hca.cq_entries 4096
  EXPECT_EQ(field(c), "rx_depth");
  c = rc(4096, 10, 16352);  // above hca.max_qp_wr 16351
  EXPECT_EQ(field(c), "rx_depth");
  c.program = frontends::PingpongProgram::Ud;
  c.rx_depth = 10;
  c.size = 4096;  // one datagram: at most the port MTU 2048
  EXPECT_EQ(field(c), "size");
  c = rc(4096, 10, 4081);  // srq: a CQ of rx_depth + num_qp = 4081 + 16 = 4097, above hca.cq_entries 4096
  c.program = frontends::PingpongProgram::Srq;
  c.num_qp = 16;
  EXPECT_EQ(field(c), "rx_depth");
  c.rx_depth = 4080;  // 4096 CQEs: the CQ holds them
  EXPECT_EQ(field(c), "(not refused)");
  c.rx_depth = 8;  // fewer receives than QPs: the program's own refusal, before any HCA
  EXPECT_THROW(sim::check_pingpong(p, p, c), InputError);
}

TEST(SimPingpong, UcPingpongTakesTheRcTripsWithoutAcks) {
  // uc_pingpong -s 2 -n 1000 on connectx3-pcie3x8: the same SEND on the same route as RC's (the
  // UC QP's max_inline_data is RC's, 28 B: its WQE has the same segments), so the same one-way
  // trip and refills (rc_client_elapsed_ns: 1675921 ns, the simulation within 300 ns of it as
  // RcUsecPerIterIsTwiceTheOneWaySendPlusTheProgramsOwnWork explains). Only the send completions differ: a UC send completes once its
  // message has left, with no ACK, which the ping-pong does not wait for anyway.
  const auto p = platform("connectx3-pcie3x8");
  auto c = rc(2, 1000, 500);
  c.program = frontends::PingpongProgram::Uc;
  const auto r = sim::run_pingpong(p, p, c);
  EXPECT_EQ(r.max_inline_data, 28u);
  EXPECT_NEAR(r.side[0].end_ns - r.side[0].start_ns, rc_client_elapsed_ns(1000, 500), 300);
  // One 2 B packet each way per exchange and no ACKs (RC puts 2000 on each HCA's wire: its data
  // and its ACKs of the peer's).
  EXPECT_EQ(r.local_faults.packets, 1000u);
  EXPECT_EQ(r.remote_faults.packets, 1000u);
}

namespace {
frontends::PingpongConfig srq(uint32_t num_qp, uint32_t size, uint32_t iters, uint32_t rx_depth, bool events = false) {
  auto c = rc(size, iters, rx_depth, events);
  c.program = frontends::PingpongProgram::Srq;
  c.num_qp = num_qp;
  return c;
}
}  // namespace

TEST(SimPingpong, SrqWithOneQpTakesTheRcTrips) {
  // srq_pingpong -q 1 -s 2 -n 1000 -r 500 on connectx3-pcie3x8: one RC QP whose receives come
  // from the SRQ. The SEND, its route and its inline rule are rc_pingpong's (the QP's
  // max_inline_data is 28 B: the same WQE segments); the HCA takes a receive WQE from the SRQ as
  // from a receive queue, at no cost of its own (both inside hca.rx_processing); the program
  // reposts when at most num_qp = 1 receives are left, as rc_pingpong does at 1, each post
  // (ibv_post_srq_recv) 60 ns. So the client's interval is rc's by hand, 1675921 ns
  // (rc_client_elapsed_ns; within 300 ns as RcUsecPerIterIsTwiceTheOneWaySendPlusTheProgramsOwnWork explains).
  const auto p = platform("connectx3-pcie3x8");
  const auto r = sim::run_pingpong(p, p, srq(1, 2, 1000, 500));
  EXPECT_EQ(r.max_inline_data, 28u);
  EXPECT_TRUE(r.inline_sends);
  EXPECT_NEAR(r.side[0].end_ns - r.side[0].start_ns, rc_client_elapsed_ns(1000, 500), 300);
  EXPECT_EQ(r.side[0].qpns, std::vector<uint32_t>{0x48});
}

TEST(SimPingpong, SrqEventsWithOneQpAddWhatRcsEventsAdd) {
  // srq_pingpong -e -q 1 -s 2: the CQ's one arming per event, as rc_pingpong -e
  // (EventsAddTheInterruptHandlerAndWakeupToEveryHalfRoundTrip: 5250 ns per half round trip,
  // two events per side and iteration).
  const auto p = platform("connectx3-pcie3x8");
  const auto r = sim::run_pingpong(p, p, srq(1, 2, 1000, 500, true));
  EXPECT_NEAR(r.side[0].end_ns - r.side[0].start_ns - rc_client_elapsed_ns(1000, 500), 2000 * 5250.0, 300);
  EXPECT_EQ(r.side[0].cq_events, 2000u);
  EXPECT_EQ(r.side[1].cq_events, 2000u);
}

TEST(SimPingpong, SrqEventsOnSixteenQpsTakeOneEventPerArmingOfTheSharedCq) {
  // srq_pingpong -e (16 QPs, one CQ per side): an event comes only for the CQ's arming, whichever
  // QP's CQE fires it, and the program re-arms once per event; each event finds at least one CQE
  // (2 per iteration: the SEND's and the receive's), so a side takes at most 2 x iters events and
  // its HCA raises one interrupt per event.
  const auto p = platform("connectx-ddr-pcie1x8");
  const auto r = sim::run_pingpong(p, p, srq(16, 4096, 1000, 500, true));
  for (const auto& s : r.side) {
    EXPECT_GT(s.cq_events, 0u);
    EXPECT_LE(s.cq_events, 2000u + 16);  // the client's last sends: up to num_qp more than iters
    EXPECT_EQ(s.interrupts, s.cq_events);
    EXPECT_EQ(s.qpns.size(), 16u);
  }
}

TEST(SimPingpong, SrqQpsFillTheRouteOnLongMessages) {
  // srq_pingpong -q 64 -s 4096 -n 20000 on connectx-ddr-pcie1x8: 64 SENDs in flight each way.
  // Each side's send engine moves one message at a time, so an iteration (one message each way,
  // the two directions on disjoint links) takes at least 4096 B / the route's bottleneck
  // (sim::path_rates: here the DMA read of the gen1 x8 slot, 11.87 Gbit/s of payload with 64 B
  // completions, model/pcie.h), 2761 ns, ib_send_bw's figure for 4096 B. With 64 QPs the engines
  // never wait in the steady state; the interval adds only the pipeline's fill and drain, at most
  // one pass of the 64 messages through an engine (64 x 2761 ns = 177 us): within 64 / 20000 of
  // the bound per iteration.
  const auto p = platform("connectx-ddr-pcie1x8");
  const auto hp = sim::read_host_params(p);
  const sim::PathRates pr = sim::path_rates(hp, hp);
  const double bottleneck_Bps = std::min({pr.bus_read_Bps, pr.dma_tags_Bps, pr.ib_Bps, pr.bus_write_Bps});
  const double per_message_ns = 4096 / bottleneck_Bps * 1e9;
  EXPECT_NEAR(per_message_ns, 4096 * 8 / 11.87, 20);
  const auto r = sim::run_pingpong(p, p, srq(64, 4096, 20000, 500));
  const double per_iter = (r.side[0].end_ns - r.side[0].start_ns) / 20000;
  EXPECT_GE(per_iter, per_message_ns);
  EXPECT_LE(per_iter, per_message_ns * (1 + 64.0 / 20000));
}
