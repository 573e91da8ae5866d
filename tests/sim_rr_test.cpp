// netperf TCP_RR and TCP_MAERTS over SDP on the simulated hosts (sim/netperf_sim.h). Each TEST
// builds its own SimGrid engine, so ctest runs each in its own process. The transaction time is
// worked by hand from the platform file and model/'s formulas, with the arithmetic in comments.
#include <gtest/gtest.h>

#include <string>

#include "frontends/netperf_cli.h"
#include "frontends/netperf_output.h"
#include "model/hca.h"
#include "model/ib.h"
#include "model/mlx4.h"
#include "model/platform.h"
#include "sim/netperf_sim.h"
#include "sim/testbed.h"

using namespace hcasim;

namespace {

model::Platform platform(const std::string& name) {
  return model::Platform::load_file(std::string(HCASIM_REFERENCE_DIR) + "/../scenarios/platforms/" + name + ".toml");
}

frontends::TcpStreamConfig rr(double length_s) {
  frontends::TcpStreamConfig c;
  c.test = frontends::NetperfTest::Rr;
  c.length_s = length_s;
  return c;
}

/// The stages of one way of an SDP TCP_RR -r 1,1 transaction on two hosts of platform `p`, from
/// the moment the receive CQE of the message before it is visible to the polling receiver until
/// the receive CQE of this one is visible to the other side, polling in its recv(), ns.
struct OneWay {
  double recv_cqe, recv_copy, recv_repost, lock_wakeup, send_call, send_skb, send_copy, send_post, doorbell_and_fetch,
      wire, pipeline, packet_store;
  double total() const {
    return recv_cqe + recv_copy + recv_repost + lock_wakeup + send_call + send_skb + send_copy + send_post +
           doorbell_and_fetch + wire + pipeline + packet_store;
  }
};

OneWay one_way(const model::Platform& p) {
  const sim::HostParams h = sim::read_host_params(p);
  const model::CpuCosts& k = h.costs;
  const uint32_t kBsdh = 16, kPayload = 1, kRecvBuffer = 2048;  // BSDH + 1 B; SDP's first receive buffers
  OneWay w{};
  // The side whose recv() polls the CQ (sdp.recv_poll) sees the CQE at once and, in recv():
  w.recv_cqe = k.cqe_ns;                           // poll_cq: the CQE and SDP's handler (cpu.cqe)
  w.recv_copy = k.copy_rx_ns(kPayload);            // copy_to_user of 1 B (cpu.copy_rx_rate)
  w.recv_repost = k.post_wr_ns + k.post_map_ns(kBsdh) + k.post_map_ns(kRecvBuffer);  // the buffer reposted
  // release_sock wakes the completion work (the CQ's interrupt, sdp_work) that sleeps in
  // lock_sock on the interrupt CPU: try_to_wake_up and the reschedule IPI to that CPU.
  w.lock_wakeup = k.wakeup_ns + k.ipi_ns;
  // send() of the response: the system call, one skb, 1 B copied from a cached buffer, the post.
  w.send_call = k.syscall_ns + k.sendmsg_ns;
  w.send_skb = k.skb_ns;
  w.send_copy = k.copy_tx_ns(kPayload, kPayload);
  w.send_post = k.post_wr_ns + k.post_map_ns(kBsdh) + k.post_map_ns(kPayload);
  // The SEND of two gather entries (BSDH, payload) is not inline: a doorbell store, then the HCA
  // fetches the WQE (model::post_timing: mmio_write_latency, dma_read_rtt, the read's bus time).
  model::mlx4::WqeShape shape;
  shape.opcode = model::mlx4::Opcode::Send;
  shape.num_sge = 2;
  const model::PostTiming post = model::post_timing(h.post, shape);
  EXPECT_FALSE(post.blueflame);
  w.doorbell_and_fetch = post.wqe_at_hca_ns;
  // The 17 B message on its route, its busiest link (the WQE's bytes crossed before it started).
  const model::ib::Config ib = model::ib::trained(h.ib, h.ib);
  const model::MessageWire mw = model::message_wire(h.bus, ib, h.bus, post, false, kBsdh + kPayload, true, false);
  w.wire = model::message_link_time_ns(ib, mw);
  // The HCA pipeline after the last byte: the gather's DMA read round trip, tx processing,
  // propagation, rx processing, the posted write of data and CQE (model::receive_completion_latency_ns),
  // and the receiving HCA's store of the packet before its DMA write (model::receive_store_ns).
  w.pipeline = model::receive_completion_latency_ns(h.timing, h.timing, false, kBsdh + kPayload);
  const sim::PathRates r = sim::path_rates(h, h);
  w.packet_store = model::receive_store_ns(kBsdh + kPayload, ib.mtu, r.ib_Bps, r.bus_write_Bps);
  return w;
}

}  // namespace

TEST(SimRr, ConnectxTransactionIsTwoOneWayMessages) {
  // connectx-ddr-pcie1x8 (2.33 GHz, no IOMMU, PCIe gen1 x8, DDR 4x), one way:
  //   recv(): cqe 699 cycles = 300 ns, copy 1 B / 1.40 B/ns = 0.714 ns, repost post_wr 466 cycles
  //     = 200 ns (no IOMMU: the maps cost nothing)
  //   release_sock wakes the completion work: wakeup 2330 cycles = 1000 ns + IPI 500 ns
  //   send(): syscall + sendmsg (349.5 + 1864) cycles = 950 ns, skb 699 cycles = 300 ns, copy 1 B
  //     at 0.412 B/cycle = 1.042 ns, post_wr 200 ns
  //   doorbell and WQE fetch (model::post_timing): 1406 ns
  //   the message: 50.6 ns on the busiest link; pipeline dma_read_rtt 900 + tx 300 + propagation
  //     25 + rx 300 + posted write 300 = 1825 ns; packet store of 17 B, 8.4 ns
  // = 6742 ns one way; a transaction is both ways: 13484 ns, 74161 transactions/s.
  const model::Platform p = platform("connectx-ddr-pcie1x8");
  const OneWay w = one_way(p);
  EXPECT_NEAR(w.recv_cqe, 300, 0.01);
  EXPECT_NEAR(w.lock_wakeup, 1500, 0.01);
  EXPECT_NEAR(w.send_call, 950, 0.01);
  EXPECT_NEAR(w.pipeline, 1825, 0.01);
  EXPECT_NEAR(w.doorbell_and_fetch, 1406, 1);
  const double expected = 2 * w.total();
  EXPECT_NEAR(expected, 13484, 2);
  const auto res = sim::run_tcp_rr(p, p, rr(0.1));
  ASSERT_GT(res.transactions, 0u);
  // A timed run ends at its alarm: the transaction it interrupts is not counted, so the mean
  // time per transaction is above the period by at most one period over the count.
  const double per_transaction_ns = res.elapsed_s * 1e9 / static_cast<double>(res.transactions);
  EXPECT_NEAR(per_transaction_ns, expected, 2 + expected / static_cast<double>(res.transactions));
  EXPECT_EQ(res.bytes_sent, res.transactions + 1);  // the interrupted transaction's request went too
  EXPECT_EQ(res.send_calls, res.transactions + 1);
  // Its response is not counted: one recv() of 1 B per transaction completed by the alarm.
  EXPECT_EQ(res.bytes_received, res.transactions);
  EXPECT_EQ(res.recv_calls, res.transactions);
  EXPECT_DOUBLE_EQ(res.elapsed_s, 0.1);
  // Two SDP messages per transaction: each response's BSDH returns the credit of its request.
  EXPECT_LE(res.sdp_messages, 2 * (res.transactions + 1) + 2);
}

TEST(SimRr, InfinihostTransactionIsTwoOneWayMessages) {
  // infinihost3-pcie1x8: the same stages, with its own HCA latencies and SDR link (and its
  // application on CPU 0, interrupts on CPU 1: the wake still crosses CPUs).
  const model::Platform p = platform("infinihost3-pcie1x8");
  const double expected = 2 * one_way(p).total();
  const auto res = sim::run_tcp_rr(p, p, rr(0.1));
  ASSERT_GT(res.transactions, 0u);
  const double per_transaction_ns = res.elapsed_s * 1e9 / static_cast<double>(res.transactions);
  EXPECT_NEAR(per_transaction_ns, expected, 2 + expected / static_cast<double>(res.transactions));
}

TEST(SimRr, CountedRunDoesExactlyNTransactionsAndVerifiesTheBytes) {
  // -l -500 -r 100,3000: 500 requests of 100 B and responses of 3000 B (two SDP messages each:
  // the first receive buffers hold 2048 B), every byte checked at its receiver.
  const model::Platform p = platform("connectx-ddr-pcie1x8");
  frontends::TcpStreamConfig c = rr(1);
  c.transactions = 500;
  c.request_size = 100;
  c.response_size = 3000;
  c.verify_data = true;
  const auto res = sim::run_tcp_rr(p, p, c);
  EXPECT_EQ(res.transactions, 500u);
  EXPECT_EQ(res.bytes_sent, 500u * 100);
  EXPECT_EQ(res.bytes_received, 500u * 3000);
  EXPECT_TRUE(res.data_verified);
  EXPECT_GE(res.recv_calls, 500u);
  // The four buffers as Linux grants them without -s/-S: tcp_wmem/tcp_rmem defaults.
  EXPECT_EQ(res.local_send_socket, 16384u);
  EXPECT_EQ(res.local_recv_socket, 87380u);
  EXPECT_EQ(res.remote_send_socket, 16384u);
  EXPECT_EQ(res.remote_recv_socket, 87380u);
}

TEST(SimRr, ServiceDemandIsMicrosecondsPerTransaction) {
  // netperf's calc_service_demand(nummessages * 1024, ...): util/100 x CPUs x 1e6 / rate.
  frontends::NetperfOptions o;
  o.test = "TCP_RR";
  o.local_cpu = o.remote_cpu = true;
  frontends::TcpStreamResult r;
  r.transactions = 50000;
  r.elapsed_s = 1;
  r.local_cpus = 8;
  r.remote_cpus = 4;
  r.local_util_pct = 12.5;   // one CPU of 8: 1 s of CPU per 50000 transactions = 20 us/Tr
  r.remote_util_pct = 50;    // two CPUs of 4: 40 us/Tr
  const auto f = frontends::netperf_figures(o, r);
  EXPECT_DOUBLE_EQ(f.transaction_rate, 50000);
  EXPECT_DOUBLE_EQ(f.throughput, 50000);
  EXPECT_NEAR(f.local_sd_us_per_kb, 20, 1e-9);
  EXPECT_NEAR(f.remote_sd_us_per_kb, 40, 1e-9);
}

TEST(SimMaerts, NetserverSendsAndNetperfReceives) {
  // TCP_MAERTS is TCP_STREAM turned round: the same stream from the remote host to the local
  // one. With both hosts alike it moves what TCP_STREAM moves; the buffers printed are netperf's
  // receive buffer and netserver's send buffer, and -T's CPUs stay with their programs.
  const model::Platform p = platform("connectx-ddr-pcie1x8");
  frontends::TcpStreamConfig s;
  s.length_s = 0.02;
  s.send_size = 65536;
  frontends::TcpStreamConfig m = s;
  m.test = frontends::NetperfTest::Maerts;
  m.local_recv_socket = 65536;   // -s ,64K: granted doubled, 131072
  m.remote_send_socket = 32768;  // -S 32K,: 65536
  m.local_cpu = 3;
  m.remote_cpu = 5;
  const sim::StreamSetup setup = sim::stream_setup(sim::read_host_params(p), sim::read_host_params(p), p, p,
                                                   sim::maerts_stream_config(m));
  EXPECT_EQ(setup.send_socket, 65536u);   // netserver's
  EXPECT_EQ(setup.recv_socket, 131072u);  // netperf's
  EXPECT_EQ(setup.local_cpu, 5);          // the sender is netserver
  EXPECT_EQ(setup.remote_cpu, 3);
  const auto r = sim::run_tcp_maerts(p, p, m);
  EXPECT_EQ(r.local_recv_socket, 131072u);
  EXPECT_EQ(r.remote_send_socket, 65536u);
  EXPECT_EQ(r.local_send_socket, 16384u);    // lss, printed by the -c/-C row
  EXPECT_EQ(r.remote_recv_socket, 87380u);   // rsr
  EXPECT_EQ(r.send_size, 65536u);
  EXPECT_EQ(r.bytes_sent, r.bytes_received);
  EXPECT_GT(r.bytes_received, 0u);
  EXPECT_TRUE(r.data_verified);
  // The receiving (local) host's application CPU polls in recv(); the sending host's pins pages.
  ASSERT_EQ(r.local_profile.size(), 8u);
  double local_busy = 0, remote_busy = 0;
  for (const auto& [a, ns] : r.local_profile[3].busy_ns) local_busy += ns;
  for (const auto& [a, ns] : r.remote_profile[5].busy_ns) remote_busy += ns;
  EXPECT_GT(local_busy, 0);
  EXPECT_GT(remote_busy, 0);
}
