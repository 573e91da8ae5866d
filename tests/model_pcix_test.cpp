// Unit tests of model/pcix: every expected number is worked out by hand in the comment next to
// it from the transaction layout documented in model/pcix.h, not taken from a run.
//
// Shorthand used below, for the default Config (64-bit 133 MHz, dual address cycle, decode A
// for bridge and device, no wait states, 1 idle clock, hidden arbitration):
//   clock period             1000 / (400/3) = 7.5 ns
//   write / request overhead address 1 + DAC 1 + attribute 1 + decode 1 + idle 1 = 5 clocks
//   read request             5 + split response 1 = 6 clocks
//   split completion overhd. address 1 (never a DAC) + attribute 1 + decode 1 + idle 1 = 4
//   data phases              one per 8 B block touched (64-bit bus)
#include "model/pcix.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "model/error.h"

namespace pcix = hcasim::model::pcix;
using hcasim::InputError;

namespace {

// The zx1 slot with the model's defaults (MMRBC 512, 4 KB write bursts).
pcix::Config zx1() { return pcix::Config{}; }

// The same with MMRBC raised to 4096 (what mthca's tune_pci=1 asks for when the device's
// designed maximum is 4 KB).
pcix::Config zx1_mmrbc4k() {
  pcix::Config c;
  c.max_memory_read_byte_count = 4096;
  return c;
}

std::string message_of(const pcix::Config& c) {
  try {
    pcix::validate(c);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

double mbps(double gbps) { return gbps * 125.0; }  // 10^9 bit/s -> 10^6 B/s

}  // namespace

TEST(ModelPcixClock, FrequencyAndPeriod) {
  pcix::Config c = zx1();
  // PCI-X 133 runs at 400/3 = 133.333 MHz: 1000 / 133.333 = 7.5 ns.
  EXPECT_NEAR(pcix::clock_frequency_mhz(c), 133.333333, 1e-6);
  EXPECT_DOUBLE_EQ(pcix::clock_period_ns(c), 7.5);
  c.clock_mhz = 100;  // 100 MHz: 10 ns
  EXPECT_DOUBLE_EQ(pcix::clock_frequency_mhz(c), 100.0);
  EXPECT_DOUBLE_EQ(pcix::clock_period_ns(c), 10.0);
  c.clock_mhz = 66;  // 200/3 = 66.667 MHz: 15 ns
  EXPECT_NEAR(pcix::clock_frequency_mhz(c), 66.666667, 1e-6);
  EXPECT_DOUBLE_EQ(pcix::clock_period_ns(c), 15.0);
  // Bus time: 517 clocks * 7.5 ns = 3877.5 ns.
  EXPECT_DOUBLE_EQ(pcix::bus_time_ns(zx1(), 517), 3877.5);
}

TEST(ModelPcixClock, PeakDataRate) {
  pcix::Config c = zx1();
  EXPECT_EQ(pcix::bus_width_bytes(c), 8u);
  // 8 B / 7.5 ns = 1.06667 B/ns = 8.53333 Gbit/s = 1066.67 MB/s.
  EXPECT_NEAR(pcix::peak_data_rate_gbps(c), 8.533333, 1e-6);
  EXPECT_NEAR(mbps(pcix::peak_data_rate_gbps(c)), 1066.666667, 1e-6);
  c.width_bits = 32;  // 4 B / 7.5 ns = 4.26667 Gbit/s (533.3 MB/s)
  EXPECT_EQ(pcix::bus_width_bytes(c), 4u);
  EXPECT_NEAR(pcix::peak_data_rate_gbps(c), 4.266667, 1e-6);
  c.width_bits = 64;
  c.clock_mhz = 100;  // 8 B / 10 ns = 6.4 Gbit/s (800 MB/s)
  EXPECT_DOUBLE_EQ(pcix::peak_data_rate_gbps(c), 6.4);
  c.clock_mhz = 66;  // 8 B / 15 ns = 4.26667 Gbit/s (533.3 MB/s)
  EXPECT_NEAR(pcix::peak_data_rate_gbps(c), 4.266667, 1e-6);
}

TEST(ModelPcixPhases, DataPhases) {
  pcix::Config c = zx1();
  EXPECT_EQ(pcix::data_phases(c, 0, 4096), 512u);  // 4096 / 8
  EXPECT_EQ(pcix::data_phases(c, 0, 1), 1u);       // a partial phase is a whole phase
  EXPECT_EQ(pcix::data_phases(c, 4, 8), 2u);       // bytes 4..11 touch blocks 0 and 1
  EXPECT_EQ(pcix::data_phases(c, 7, 2), 2u);       // bytes 7, 8: blocks 0 and 1
  EXPECT_EQ(pcix::data_phases(c, 8, 8), 1u);       // one aligned block
  EXPECT_EQ(pcix::data_phases(c, 0, 0), 0u);
  c.width_bits = 32;
  EXPECT_EQ(pcix::data_phases(c, 0, 4096), 1024u);  // 4096 / 4
  EXPECT_EQ(pcix::data_phases(c, 2, 4), 2u);        // bytes 2..5: DWs 0 and 1
}

TEST(ModelPcixWrite, OneBurst) {
  pcix::Config c = zx1();
  // 4096 B aligned: address 1 + DAC 1 + attribute 1 + decode A 1 + 512 data + idle 1
  // = 517 clocks = 517 * 7.5 = 3877.5 ns.
  EXPECT_EQ(pcix::write_transaction_clocks(c, 0, 4096), 517u);
  EXPECT_DOUBLE_EQ(pcix::bus_time_ns(c, pcix::write_transaction_clocks(c, 0, 4096)), 3877.5);
  // 8 B at 4 (two data phases): 2 + 1 + 1 + 2 + 1 = 7.
  EXPECT_EQ(pcix::write_transaction_clocks(c, 4, 8), 7u);
  c.dual_address_cycle = false;  // below 4 GB: one address clock, 516
  EXPECT_EQ(pcix::write_transaction_clocks(c, 0, 4096), 516u);
  c = zx1();
  c.host_decode_clocks = 2;  // decode B: 518
  EXPECT_EQ(pcix::write_transaction_clocks(c, 0, 4096), 518u);
  c.host_decode_clocks = 4;  // subtractive: 520
  EXPECT_EQ(pcix::write_transaction_clocks(c, 0, 4096), 520u);
  c = zx1();
  c.target_wait_states = 2;  // 517 + 2 = 519
  EXPECT_EQ(pcix::write_transaction_clocks(c, 0, 4096), 519u);
  c = zx1();
  c.idle_clocks = 2;
  c.arbitration_clocks = 1;  // 517 + 1 + 1 = 519
  EXPECT_EQ(pcix::write_transaction_clocks(c, 0, 4096), 519u);
  c = zx1();
  c.width_bits = 32;  // 2 + 1 + 1 + 1024 + 1 = 1029
  EXPECT_EQ(pcix::write_transaction_clocks(c, 0, 4096), 1029u);
  // A transaction carries 1..4096 B (12-bit Byte Count).
  EXPECT_THROW(pcix::write_transaction_clocks(zx1(), 0, 0), std::invalid_argument);
  EXPECT_THROW(pcix::write_transaction_clocks(zx1(), 0, 4097), std::invalid_argument);
}

TEST(ModelPcixRead, RequestAndCompletion) {
  pcix::Config c = zx1();
  // Memory Read Block request: 2 + 1 + 1 + split response 1 + idle 1 = 6.
  EXPECT_EQ(pcix::read_request_clocks(c), 6u);
  // Split completion of 512 B: address 1 + attribute 1 + decode A 1 + 64 + idle 1 = 68.
  EXPECT_EQ(pcix::split_completion_clocks(c, 0, 512), 68u);
  // 4096 B: 1 + 1 + 1 + 512 + 1 = 516.
  EXPECT_EQ(pcix::split_completion_clocks(c, 0, 4096), 516u);
  c.dual_address_cycle = false;  // request 5; the completion never had a DAC: still 68
  EXPECT_EQ(pcix::read_request_clocks(c), 5u);
  EXPECT_EQ(pcix::split_completion_clocks(c, 0, 512), 68u);
  c = zx1();
  c.host_decode_clocks = 3;  // decode C at the bridge: request 6 + 2 = 8
  EXPECT_EQ(pcix::read_request_clocks(c), 8u);
  c.device_decode_clocks = 3;  // decode C at the device: completion 68 + 2 = 70
  EXPECT_EQ(pcix::split_completion_clocks(c, 0, 512), 70u);
  EXPECT_THROW(pcix::split_completion_clocks(zx1(), 0, 0), std::invalid_argument);
  EXPECT_THROW(pcix::split_completion_clocks(zx1(), 0, 8192), std::invalid_argument);
}

TEST(ModelPcixWrite, DmaWrite) {
  pcix::Config c = zx1();
  EXPECT_EQ(pcix::dma_write(c, 0, 0), pcix::Traffic{});
  // 8192 B aligned, 4 KB bursts: 2 transactions, 2 * 5 + 1024 = 1034 clocks.
  EXPECT_EQ(pcix::dma_write(c, 0, 8192), (pcix::Traffic{8192, 1034, 2}));
  // 4096 B at 2048 crosses 4 KB: 2 bursts of 2048, 2 * 5 + 512 = 522.
  EXPECT_EQ(pcix::dma_write(c, 2048, 4096), (pcix::Traffic{4096, 522, 2}));
  // 100 B at 4090: bytes 4090..4189 cross 4096 -> 2 bursts; 8 B blocks 511..523 = 13
  // phases: 2 * 5 + 13 = 23.
  EXPECT_EQ(pcix::dma_write(c, 4090, 100), (pcix::Traffic{100, 23, 2}));
  c.write_burst = 512;  // 4096 B: 8 bursts, 8 * 5 + 512 = 552
  EXPECT_EQ(pcix::dma_write(c, 0, 4096), (pcix::Traffic{4096, 552, 8}));
  c = zx1();
  c.write_disconnect_size = 128;  // the bridge disconnects at every ADB: 32 * 5 + 512 = 672
  EXPECT_EQ(pcix::dma_write(c, 0, 4096), (pcix::Traffic{4096, 672, 32}));
  c.write_burst = 256;
  c.write_disconnect_size = 1024;  // grid min(256, 1024): 16 * 5 + 512 = 592
  EXPECT_EQ(pcix::dma_write(c, 0, 4096), (pcix::Traffic{4096, 592, 16}));
  // Constant time in len: 1 TB = 2^40 B in 2^28 bursts of 4 KB: 2^28 * 5 + 2^37 clocks.
  const pcix::Traffic big = pcix::dma_write(zx1(), 0, uint64_t{1} << 40);
  EXPECT_EQ(big.transactions, uint64_t{1} << 28);
  EXPECT_EQ(big.clocks, (uint64_t{1} << 28) * 5 + (uint64_t{1} << 37));
  EXPECT_THROW(pcix::dma_write(zx1(), UINT64_MAX, 2), std::invalid_argument);
}

TEST(ModelPcixRead, DmaRead) {
  pcix::Config c = zx1();
  EXPECT_EQ(pcix::dma_read(c, 0, 0), pcix::ReadTraffic{});
  // 4096 B, MMRBC 512: 8 requests * 6 = 48 clocks; 8 completions * (4 + 64) = 544;
  // total 592 clocks = 4440 ns.
  pcix::ReadTraffic r = pcix::dma_read(c, 0, 4096);
  EXPECT_EQ(r.requests, (pcix::Traffic{0, 48, 8}));
  EXPECT_EQ(r.completions, (pcix::Traffic{4096, 544, 8}));
  EXPECT_EQ(r.clocks(), 592u);
  // MMRBC 4096: one request (6) and one completion (4 + 512 = 516): 522 clocks.
  r = pcix::dma_read(zx1_mmrbc4k(), 0, 4096);
  EXPECT_EQ(r.requests, (pcix::Traffic{0, 6, 1}));
  EXPECT_EQ(r.completions, (pcix::Traffic{4096, 516, 1}));
  EXPECT_EQ(r.clocks(), 522u);
  // A bridge that returns one ADB per completion: 512 B -> 1 request (6) + 4 completions
  // * (4 + 16) = 80: 86 clocks.
  c.split_completion_size = 128;
  r = pcix::dma_read(c, 0, 512);
  EXPECT_EQ(r.requests, (pcix::Traffic{0, 6, 1}));
  EXPECT_EQ(r.completions, (pcix::Traffic{512, 80, 4}));
  // Unaligned, MMRBC 512: 1000 B at 256 = bytes 256..1255 touch 512 B blocks 0, 1, 2:
  // 3 requests (18 clocks) and 3 completions; 8 B blocks 32..156 = 125 data phases:
  // 3 * 4 + 125 = 137.
  r = pcix::dma_read(zx1(), 256, 1000);
  EXPECT_EQ(r.requests, (pcix::Traffic{0, 18, 3}));
  EXPECT_EQ(r.completions, (pcix::Traffic{1000, 137, 3}));
  // split_completion_size above MMRBC changes nothing: MMRBC 1024, 4096 B -> 4 requests
  // (24) and 4 completions of 1024 B (4 * (4 + 128) = 528).
  c = zx1();
  c.max_memory_read_byte_count = 1024;
  r = pcix::dma_read(c, 0, 4096);
  EXPECT_EQ(r.requests, (pcix::Traffic{0, 24, 4}));
  EXPECT_EQ(r.completions, (pcix::Traffic{4096, 528, 4}));
  EXPECT_THROW(pcix::dma_read(zx1(), UINT64_MAX, 2), std::invalid_argument);
}

TEST(ModelPcixCeiling, DmaWrite) {
  const double peak_mbps = mbps(pcix::peak_data_rate_gbps(zx1()));  // 1066.67
  // 64-bit 133 MHz, 4 KB bursts: 4096 B per 517 clocks = 3877.5 ns:
  // 32768 bit / 3877.5 ns = 8.45081 Gbit/s = 1056.35 MB/s, i.e. 99.0 % of the peak (the 5
  // overhead clocks per 512 data clocks). The zx1 seed (openib-general, 2005-01-12: "these
  // boxes are capable of 800-900 MB/s on the PCI bus") sits below this bus ceiling.
  const double w = pcix::dma_write_ceiling_gbps(zx1());
  EXPECT_NEAR(w, 8.450806, 1e-6);
  EXPECT_NEAR(mbps(w), 1056.350741, 1e-6);
  EXPECT_GT(mbps(w), 800.0);
  EXPECT_GT(mbps(w), 900.0);
  EXPECT_LT(mbps(w), 1066.0);
  EXPECT_LT(mbps(w), peak_mbps);
  // A bridge that disconnects every write at the ADB (or 128 B bursts): 128 B per 5 + 16 =
  // 21 clocks = 157.5 ns: 1024 / 157.5 = 6.50159 Gbit/s = 812.70 MB/s.
  pcix::Config adb = zx1();
  adb.write_disconnect_size = 128;
  EXPECT_NEAR(pcix::dma_write_ceiling_gbps(adb), 6.501587, 1e-6);
  EXPECT_NEAR(mbps(pcix::dma_write_ceiling_gbps(adb)), 812.698413, 1e-6);
  // 66 MHz: 32768 / (517 * 15) = 4.22540 Gbit/s.
  pcix::Config slow = zx1();
  slow.clock_mhz = 66;
  EXPECT_NEAR(pcix::dma_write_ceiling_gbps(slow), 4.225403, 1e-6);
}

TEST(ModelPcixCeiling, DmaRead) {
  const double peak_mbps = mbps(pcix::peak_data_rate_gbps(zx1()));
  // MMRBC 512 (reset value): 512 B per 6 + 68 = 74 clocks = 555 ns: 4096 / 555
  // = 7.38018 Gbit/s = 922.52 MB/s.
  const double r512 = pcix::dma_read_ceiling_gbps(zx1());
  EXPECT_NEAR(r512, 7.380180, 1e-6);
  EXPECT_NEAR(mbps(r512), 922.522523, 1e-6);
  EXPECT_GT(mbps(r512), 800.0);
  EXPECT_LT(mbps(r512), peak_mbps);
  // MMRBC 4096: 4096 B per 6 + 516 = 522 clocks = 3915 ns: 32768 / 3915 = 8.36986 Gbit/s
  // = 1046.23 MB/s.
  const double r4k = pcix::dma_read_ceiling_gbps(zx1_mmrbc4k());
  EXPECT_NEAR(r4k, 8.369860, 1e-6);
  EXPECT_NEAR(mbps(r4k), 1046.232439, 1e-6);
  EXPECT_LT(mbps(r4k), peak_mbps);
  // Reads cost more bus time than writes: the extra request and its split response.
  EXPECT_LT(r4k, pcix::dma_write_ceiling_gbps(zx1_mmrbc4k()));
  // MMRBC 4096 returned one ADB at a time: 6 + 32 * (4 + 16) = 646 clocks = 4845 ns:
  // 32768 / 4845 = 6.76326 Gbit/s = 845.41 MB/s.
  pcix::Config adb = zx1_mmrbc4k();
  adb.split_completion_size = 128;
  EXPECT_NEAR(pcix::dma_read_ceiling_gbps(adb), 6.763261, 1e-6);
}

TEST(ModelPcixCeiling, MixedStream) {
  const pcix::Config c = zx1_mmrbc4k();
  // Shares 0 and 1 are the one-way ceilings.
  EXPECT_DOUBLE_EQ(pcix::mixed_ceiling_gbps(c, 0.0), pcix::dma_write_ceiling_gbps(c));
  EXPECT_DOUBLE_EQ(pcix::mixed_ceiling_gbps(c, 1.0), pcix::dma_read_ceiling_gbps(c));
  // Half read, half write (a device that sends and receives as much), MMRBC 4096: per 4096 B
  // each way 517 + 522 = 1039 clocks = 7792.5 ns for 8192 B: 65536 / 7792.5 = 8.41014
  // Gbit/s in total, 4.20507 each way: one shared half-duplex bus.
  EXPECT_NEAR(pcix::mixed_ceiling_gbps(c, 0.5), 8.410138, 1e-6);
  EXPECT_DOUBLE_EQ(pcix::mixed_bus_time_ns(c, 4096, 4096), 7792.5);
  EXPECT_DOUBLE_EQ(pcix::mixed_bus_time_ns(c, 0, 0), 0.0);
  // Defaults (MMRBC 512): 4096 B written in 517 clocks, 4096 B read in 8 * 74 = 592:
  // 65536 / (1109 * 7.5) = 65536 / 8317.5 = 7.87929 Gbit/s.
  EXPECT_NEAR(pcix::mixed_ceiling_gbps(zx1(), 0.5), 7.879291, 1e-6);
  EXPECT_DOUBLE_EQ(pcix::mixed_bus_time_ns(zx1(), 4096, 4096), 8317.5);
  // A quarter read, defaults: 4096 B read (4440 ns) + 12288 B written (3 * 3877.5 =
  // 11632.5 ns): 131072 / 16072.5 = 8.15505 Gbit/s.
  EXPECT_NEAR(pcix::mixed_ceiling_gbps(zx1(), 0.25), 8.155047, 1e-6);
  EXPECT_THROW(pcix::mixed_ceiling_gbps(c, -0.1), InputError);
  EXPECT_THROW(pcix::mixed_ceiling_gbps(c, 1.5), InputError);
  EXPECT_THROW(pcix::mixed_ceiling_gbps(c, std::nan("")), InputError);
  EXPECT_THROW(pcix::mixed_bus_time_ns(c, -1, 0), InputError);
  EXPECT_THROW(pcix::mixed_bus_time_ns(c, 0, std::numeric_limits<double>::infinity()),
               InputError);
}

TEST(ModelPcixCeiling, ReadLatencyBound) {
  pcix::Config c = zx1();
  c.split_completion_latency_ns = 1000;
  // 1 outstanding * 512 B * 8 / 1000 ns = 4.096 Gbit/s (512 MB/s): below the bus ceiling.
  EXPECT_DOUBLE_EQ(pcix::dma_read_latency_bound_gbps(c), 4.096);
  EXPECT_LT(pcix::dma_read_latency_bound_gbps(c), pcix::dma_read_ceiling_gbps(c));
  // 8 outstanding * 4096 B * 8 / 2000 ns = 131.072 Gbit/s: the bus is the limit.
  c.max_outstanding_split = 8;
  c.max_memory_read_byte_count = 4096;
  c.split_completion_latency_ns = 2000;
  EXPECT_DOUBLE_EQ(pcix::dma_read_latency_bound_gbps(c), 131.072);
  try {
    pcix::dma_read_latency_bound_gbps(zx1());  // latency 0 = unknown
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("pcix.split_completion_latency_ns: ", 0), 0u);
  }
}

TEST(ModelPcixConfig, Validate) {
  EXPECT_EQ(message_of(zx1()), "");
  EXPECT_EQ(message_of(zx1_mmrbc4k()), "");
  pcix::Config c = zx1();
  c.clock_mhz = 120;
  EXPECT_EQ(message_of(c), "pcix.clock_mhz: 120 is not 66, 100 or 133");
  c = zx1();
  c.width_bits = 16;
  EXPECT_EQ(message_of(c), "pcix.width_bits: 16 is not 32 or 64");
  c = zx1();
  c.max_memory_read_byte_count = 256;
  EXPECT_EQ(message_of(c),
            "pcix.max_memory_read_byte_count: 256 is not a power of two in 512..4096");
  c.max_memory_read_byte_count = 8192;
  EXPECT_EQ(message_of(c),
            "pcix.max_memory_read_byte_count: 8192 is not a power of two in 512..4096");
  c.max_memory_read_byte_count = 1000;
  EXPECT_EQ(message_of(c),
            "pcix.max_memory_read_byte_count: 1000 is not a power of two in 512..4096");
  c = zx1();
  c.max_outstanding_split = 5;
  EXPECT_EQ(message_of(c),
            "pcix.max_outstanding_split: 5 is not one of 1, 2, 3, 4, 8, 12, 16, 32");
  c.max_outstanding_split = 0;
  EXPECT_EQ(message_of(c),
            "pcix.max_outstanding_split: 0 is not one of 1, 2, 3, 4, 8, 12, 16, 32");
  c = zx1();
  c.write_burst = 4;
  EXPECT_EQ(message_of(c), "pcix.write_burst: 4 is not a power of two in 8..4096");
  c.write_burst = 8192;
  EXPECT_EQ(message_of(c), "pcix.write_burst: 8192 is not a power of two in 8..4096");
  c = zx1();
  c.write_disconnect_size = 64;  // below the ADB
  EXPECT_EQ(message_of(c),
            "pcix.write_disconnect_size: 64 is not a power of two in 128..4096");
  c = zx1();
  c.split_completion_size = 96;
  EXPECT_EQ(message_of(c),
            "pcix.split_completion_size: 96 is not a power of two in 128..4096");
  c = zx1();
  c.host_decode_clocks = 0;
  EXPECT_EQ(message_of(c),
            "pcix.host_decode_clocks: 0 is not 1..4 (decode speed A, B, C or subtractive)");
  c.host_decode_clocks = 5;
  EXPECT_EQ(message_of(c),
            "pcix.host_decode_clocks: 5 is not 1..4 (decode speed A, B, C or subtractive)");
  c = zx1();
  c.device_decode_clocks = 5;
  EXPECT_EQ(message_of(c),
            "pcix.device_decode_clocks: 5 is not 1..4 (decode speed A, B, C or subtractive)");
  c = zx1();
  c.target_wait_states = -1;
  EXPECT_EQ(message_of(c), "pcix.target_wait_states: -1 is not 0..16");
  c.target_wait_states = 17;
  EXPECT_EQ(message_of(c), "pcix.target_wait_states: 17 is not 0..16");
  c = zx1();
  c.idle_clocks = 0;  // the turnaround clock cannot be skipped
  EXPECT_EQ(message_of(c), "pcix.idle_clocks: 0 is not 1..1024");
  c = zx1();
  c.arbitration_clocks = -1;
  EXPECT_EQ(message_of(c), "pcix.arbitration_clocks: -1 is not 0..1024");
  c = zx1();
  c.split_completion_latency_ns = -1;
  EXPECT_EQ(message_of(c).rfind("pcix.split_completion_latency_ns: -1", 0), 0u);
  c.split_completion_latency_ns = std::nan("");
  EXPECT_EQ(message_of(c).rfind("pcix.split_completion_latency_ns: ", 0), 0u);
  c.split_completion_latency_ns = std::numeric_limits<double>::infinity();
  EXPECT_EQ(message_of(c).rfind("pcix.split_completion_latency_ns: ", 0), 0u);
  // Every function validates its Config.
  c = zx1();
  c.clock_mhz = 0;
  EXPECT_THROW(pcix::clock_period_ns(c), InputError);
  EXPECT_THROW(pcix::dma_write(c, 0, 64), InputError);
  EXPECT_THROW(pcix::dma_read(c, 0, 64), InputError);
  EXPECT_THROW(pcix::write_transaction_clocks(c, 0, 64), InputError);
  EXPECT_THROW(pcix::dma_write_ceiling_gbps(c), InputError);
  EXPECT_THROW(pcix::dma_read_ceiling_gbps(c), InputError);
}
