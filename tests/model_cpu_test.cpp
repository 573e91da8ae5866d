// CPU accounting and netperf's service demand arithmetic, against hand calculations and the
// seed's printed rows (shared/seeds/000_e020891d04dfaba2.txt).
#include <gtest/gtest.h>

#include "model/cpu.h"
#include "model/hca.h"
#include "model/platform.h"

using namespace hcasim;
using namespace hcasim::model;

TEST(ServiceDemand, SeedT3Row64K) {
  // netperf -C -c -P 0 ... -- -m 64K printed "87380 16384 65536 60.00 8323.20 12.96 13.64
  // 1.020 1.074". Bytes = 8323.20e6 / 8 x 60 = 62,424,000,000. KB/s = 62.424e9 / 1024 / 60 =
  // 1,016,015.6. SD local = 12.96/100 x 8 x 1e6 / 1,016,015.6 = 1.0205 us/KB (prints 1.020);
  // SD remote = 13.64/100 x 8 x 1e6 / 1,016,015.6 = 1.0740 (prints 1.074).
  const uint64_t bytes = 62'424'000'000ULL;
  EXPECT_NEAR(service_demand_us_per_kb(12.96, 8, bytes, 60.0), 1.0205, 5e-5);
  EXPECT_NEAR(service_demand_us_per_kb(13.64, 8, bytes, 60.0), 1.0740, 5e-5);
  EXPECT_EQ(service_demand_us_per_kb(50, 8, 0, 60.0), 0.0);
}

TEST(ServiceDemand, OneFullCpuOfEightAtOneGigabytePerSecond) {
  // One of 8 CPUs busy = 12.5 %. 1 GiB/s = 1,048,576 KB/s. SD = 0.125 x 8 x 1e6 / 1,048,576
  // = 0.95367 us/KB: the CPU spends 0.95 us per KB, i.e. exactly 1 s per GiB.
  EXPECT_NEAR(service_demand_us_per_kb(12.5, 8, 1ULL << 30, 1.0), 1e6 / 1048576.0, 1e-9);
}

TEST(Utilisation, SystemWideOverAllCores) {
  // 4 cores over 2 s: core 0 busy 1 s (copy 0.6 + interrupt 0.4), core 1 0.5 s, others idle:
  // 1.5 s / (4 x 2 s) = 18.75 %.
  std::vector<CoreAccount> cores(4);
  cores[0].busy_ns[static_cast<size_t>(Activity::Copy)] = 0.6e9;
  cores[0].busy_ns[static_cast<size_t>(Activity::Interrupt)] = 0.4e9;
  cores[1].busy_ns[static_cast<size_t>(Activity::Syscall)] = 0.5e9;
  EXPECT_DOUBLE_EQ(cores[0].total_ns(), 1e9);
  EXPECT_DOUBLE_EQ(utilisation_pct(cores, 2e9), 18.75);
  EXPECT_EQ(utilisation_pct({}, 2e9), 0.0);
}

TEST(CpuCosts, FromPlatformConvertsRatesAndRejectsNonsense) {
  const std::string base = std::string(HCASIM_REFERENCE_DIR) + "/../scenarios/platforms/connectx-ddr-pcie1x8.toml";
  Platform p = Platform::load_file(base);
  p.set("cpu.copy_tx_rate=2");
  const CpuCosts c = CpuCosts::from_platform(p);
  EXPECT_EQ(c.cpus, 8);
  EXPECT_DOUBLE_EQ(c.copy_tx_ns(32768), 16384.0);  // 32768 B at 2 B/ns
  p.set("cpu.copy_tx_rate=0");
  EXPECT_THROW(CpuCosts::from_platform(p), InputError);
  Platform q = Platform::load_file(base);
  q.set("host.cpus=0");
  EXPECT_THROW(CpuCosts::from_platform(q), InputError);
}

// model::receive_store_ns: a store between the wire and the DMA write ends a message one stored
// packet later than a stream. Path MTU 2048; wire 6e9 B/s, drain 7e9 B/s (the wire slower): the
// last packet at the drain's rate; the drain slower: the first packet at the wire's.
TEST(HcaTiming, TheStoredPacketDelaysTheDataByOnePacket) {
  EXPECT_DOUBLE_EQ(receive_store_ns(0, 2048, 6e9, 7e9), 0);
  EXPECT_DOUBLE_EQ(receive_store_ns(1024, 2048, 6e9, 7e9), 1024 / 7.0);     // one packet of 1024 B
  EXPECT_DOUBLE_EQ(receive_store_ns(4096, 2048, 6e9, 7e9), 2048 / 7.0);     // two of 2048: the last
  EXPECT_DOUBLE_EQ(receive_store_ns(4097, 2048, 6e9, 7e9), 1 / 7.0);        // the last packet holds 1 B
  EXPECT_DOUBLE_EQ(receive_store_ns(4097, 2048, 7e9, 6e9), 2048 / 7.0);     // the drain slower: the first
  EXPECT_DOUBLE_EQ(receive_store_ns(100, 256, 7e9, 6e9), 100 / 7.0);
}

TEST(HcaTiming, PipelineLatenciesAreTheSumsOfTheirParts) {
  HcaTiming a;
  a.dma_read_rtt_ns = 900;
  a.tx_processing_ns = 300;
  a.rx_processing_ns = 300;
  a.propagation_ns = 25;
  a.posted_write_ns = 300;
  a.inline_copy_rate_Bpns = 0.5;
  HcaTiming b = a;
  b.rx_processing_ns = 500;
  b.posted_write_ns = 100;
  // receive CQE: A's read 900 + A's tx 300 + wire 25 + B's rx 500 + B's posted write 100
  EXPECT_DOUBLE_EQ(receive_completion_latency_ns(a, b), 1825);
  // send CQE: 900 + 300 + 2 x 25 + B's rx 500 + A's rx 300 (the ACK) + A's CQE write 300
  EXPECT_DOUBLE_EQ(send_completion_latency_ns(a, b), 2350);
  // Inline 100 B: no gather read; A copies 100 B out of the WQE at 0.5 B/ns = 200 ns.
  EXPECT_DOUBLE_EQ(receive_completion_latency_ns(a, b, true, 100), 1825 - 900 + 200);
  EXPECT_DOUBLE_EQ(send_completion_latency_ns(a, b, true, 100), 2350 - 900 + 200);
}
