// Unit tests of model/pcie: every expected number is worked out by hand in the comment next
// to it (sizes from PCIe Base Spec 1.1 as documented in model/pcie.h), not taken from a run.
#include "model/pcie.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "model/error.h"

namespace pcie = hcasim::model::pcie;
using pcie::TlpType;
using hcasim::InputError;

namespace {

// The seed machine: gen1 x8, MPS 128, MRRS 512, RCB 64, 64 B completions, 64-bit addresses.
pcie::Config seed() { return pcie::Config{}; }

// Another legal configuration: gen2 x4, MPS 256, MRRS 1024, RCB 64, 128 B completions.
pcie::Config gen2x4() {
  pcie::Config c;
  c.gen = 2;
  c.lanes = 4;
  c.max_payload = 256;
  c.max_read_request = 1024;
  c.completion_size = 128;
  return c;
}

std::string message_of(const pcie::Config& c) {
  try {
    pcie::validate(c);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(PcieRates, TransferRateAndEncoding) {
  EXPECT_DOUBLE_EQ(pcie::transfer_rate_gtps(1), 2.5);
  EXPECT_DOUBLE_EQ(pcie::transfer_rate_gtps(2), 5.0);
  EXPECT_DOUBLE_EQ(pcie::transfer_rate_gtps(3), 8.0);
  EXPECT_DOUBLE_EQ(pcie::encoding_efficiency(1), 0.8);  // 8b/10b
  EXPECT_DOUBLE_EQ(pcie::encoding_efficiency(2), 0.8);
  // gen3 128b/130b: 128 / 130 = 0.984615...
  EXPECT_NEAR(pcie::encoding_efficiency(3), 0.9846154, 1e-7);
}

TEST(PcieRates, LinkDataRate) {
  // gen1 x8: 2.5 GT/s * 0.8 * 8 lanes = 16.0 Gbit/s per direction.
  EXPECT_DOUBLE_EQ(pcie::link_data_rate_gbps(seed()), 16.0);
  // gen2 x4: 5.0 * 0.8 * 4 = 16.0 Gbit/s.
  EXPECT_DOUBLE_EQ(pcie::link_data_rate_gbps(gen2x4()), 16.0);
  // gen3 x8: 8.0 * 128/130 * 8 = 64 * 0.9846154 = 63.015385 Gbit/s.
  pcie::Config g3 = seed();
  g3.gen = 3;
  EXPECT_NEAR(pcie::link_data_rate_gbps(g3), 63.015385, 1e-6);
  // gen3 x16: twice that, 126.030769.
  g3.lanes = 16;
  EXPECT_NEAR(pcie::link_data_rate_gbps(g3), 126.030769, 1e-6);
}

TEST(PcieTlp, HeaderBytes) {
  pcie::Config c = seed();
  EXPECT_EQ(pcie::tlp_header_bytes(TlpType::MWr, c), 16u);  // 4 DW, 64-bit address
  EXPECT_EQ(pcie::tlp_header_bytes(TlpType::MRd, c), 16u);
  EXPECT_EQ(pcie::tlp_header_bytes(TlpType::CplD, c), 12u);  // 3 DW
  EXPECT_EQ(pcie::tlp_header_bytes(TlpType::Cpl, c), 12u);
  c.addr64 = false;
  EXPECT_EQ(pcie::tlp_header_bytes(TlpType::MWr, c), 12u);  // 3 DW, 32-bit address
  EXPECT_EQ(pcie::tlp_header_bytes(TlpType::MRd, c), 12u);
}

TEST(PcieTlp, WireBytes) {
  pcie::Config c = seed();
  // MWr 128 B: STP 1 + seq 2 + hdr 16 + 128 + LCRC 4 + END 1 = 152.
  EXPECT_EQ(pcie::tlp_wire_bytes(TlpType::MWr, 128, c), 152u);
  // MRd: 1 + 2 + 16 + 4 + 1 = 24.
  EXPECT_EQ(pcie::tlp_wire_bytes(TlpType::MRd, 0, c), 24u);
  // CplD 64 B: 1 + 2 + 12 + 64 + 4 + 1 = 84.
  EXPECT_EQ(pcie::tlp_wire_bytes(TlpType::CplD, 64, c), 84u);
  // Cpl: 1 + 2 + 12 + 4 + 1 = 20.
  EXPECT_EQ(pcie::tlp_wire_bytes(TlpType::Cpl, 0, c), 20u);
  // 3 B of payload travel as one whole DW: 24 + 4 = 28.
  EXPECT_EQ(pcie::tlp_wire_bytes(TlpType::MWr, 3, c), 28u);
  // 32-bit MWr 128 B: 8 + 12 + 128 = 148.
  pcie::Config c32 = c;
  c32.addr64 = false;
  EXPECT_EQ(pcie::tlp_wire_bytes(TlpType::MWr, 128, c32), 148u);
  // ECRC adds 4: 152 + 4 = 156.
  pcie::Config ce = c;
  ce.ecrc = true;
  EXPECT_EQ(pcie::tlp_wire_bytes(TlpType::MWr, 128, ce), 156u);
  // Programming errors: payload on an MRd, payload above MPS.
  EXPECT_THROW(pcie::tlp_wire_bytes(TlpType::MRd, 4, c), std::invalid_argument);
  EXPECT_THROW(pcie::tlp_wire_bytes(TlpType::MWr, 256, c), std::invalid_argument);
}

TEST(PcieTlp, DllpBytes) {
  // 4 B content + 2 B CRC-16 + SDP 1 + END 1 = 8.
  EXPECT_EQ(pcie::dllp_wire_bytes(), 8u);
}

TEST(PcieDmaWrite, Aligned4KiB) {
  // 4096 / 128 = 32 MWr of 152 B: 32 * 152 = 4864 B.
  EXPECT_EQ(pcie::dma_write(seed(), 0, 4096), (pcie::Traffic{4096, 4864, 32}));
}

TEST(PcieDmaWrite, UnalignedCrossesMpsBoundary) {
  // [100, 200) crosses 128: MWr [100,128) 28 B + MWr [128,200) 72 B (both DW-aligned ends).
  // Wire: 2 * 24 + 28 + 72 = 148.
  EXPECT_EQ(pcie::dma_write(seed(), 100, 100), (pcie::Traffic{100, 148, 2}));
  // [64, 4160): 64 B + 31 * 128 B + 64 B = 33 TLPs; wire 33 * 24 + 4096 = 792 + 4096 = 4888.
  EXPECT_EQ(pcie::dma_write(seed(), 64, 4096), (pcie::Traffic{4096, 4888, 33}));
}

TEST(PcieDmaWrite, NeverCrosses4KiB) {
  // [4032, 4160) straddles 4096: [4032,4096) 64 B + [4096,4160) 64 B = 2 * 24 + 128 = 176.
  EXPECT_EQ(pcie::dma_write(seed(), 4032, 128), (pcie::Traffic{128, 176, 2}));
}

TEST(PcieDmaWrite, SubDwordAndEmpty) {
  // [1, 3): one MWr carrying the DW [0, 4): 24 + 4 = 28 B.
  EXPECT_EQ(pcie::dma_write(seed(), 1, 2), (pcie::Traffic{2, 28, 1}));
  EXPECT_EQ(pcie::dma_write(seed(), 12345, 0), (pcie::Traffic{}));
}

TEST(PcieDmaRead, Aligned512With64ByteCompletions) {
  // 1 MRd of 24 B; 512 / 64 = 8 CplD of 20 + 64 = 84 B: 8 * 84 = 672.
  const pcie::ReadTraffic r = pcie::dma_read(seed(), 0, 512);
  EXPECT_EQ(r.requests, (pcie::Traffic{0, 24, 1}));
  EXPECT_EQ(r.completions, (pcie::Traffic{512, 672, 8}));
}

TEST(PcieDmaRead, Aligned4KiB) {
  // 4096 / 512 = 8 MRd: 8 * 24 = 192; 4096 / 64 = 64 CplD: 64 * 84 = 5376.
  const pcie::ReadTraffic r = pcie::dma_read(seed(), 0, 4096);
  EXPECT_EQ(r.requests, (pcie::Traffic{0, 192, 8}));
  EXPECT_EQ(r.completions, (pcie::Traffic{4096, 5376, 64}));
}

TEST(PcieDmaRead, Unaligned) {
  // [32, 544): MRd [32,512) and [512,544) = 2 * 24 = 48.
  // CplDs end on multiples of 64: [32,64), 7 x 64 up to 512, then [512,544): 9 CplD;
  // wire 9 * 20 + 512 = 692.
  const pcie::ReadTraffic r = pcie::dma_read(seed(), 32, 512);
  EXPECT_EQ(r.requests, (pcie::Traffic{0, 48, 2}));
  EXPECT_EQ(r.completions, (pcie::Traffic{512, 692, 9}));
}

TEST(PcieDmaRead, CompletionLargerThanRequest) {
  // MPS 256, MRRS 128, completion_size 256: each 128 B request gets one 128 B CplD.
  // 512 B: 4 MRd (96 B) and 4 CplD of 20 + 128 = 148 (592 B).
  pcie::Config c = seed();
  c.max_payload = 256;
  c.max_read_request = 128;
  c.completion_size = 256;
  const pcie::ReadTraffic r = pcie::dma_read(c, 0, 512);
  EXPECT_EQ(r.requests, (pcie::Traffic{0, 96, 4}));
  EXPECT_EQ(r.completions, (pcie::Traffic{512, 592, 4}));
}

TEST(PcieLink, SkipEfficiency) {
  // gen1/2: 4-symbol SKP OS every 1180 symbol times: 1176 / 1180 = 0.9966102.
  EXPECT_NEAR(pcie::skip_efficiency(seed()), 0.9966102, 1e-7);
  EXPECT_NEAR(pcie::skip_efficiency(gen2x4()), 0.9966102, 1e-7);
  // gen3: 1 SKP block per 370 data blocks: 370 / 371 = 0.9973046.
  pcie::Config g3 = seed();
  g3.gen = 3;
  EXPECT_NEAR(pcie::skip_efficiency(g3), 0.9973046, 1e-7);
}

TEST(PcieLink, AckLatencyMatchesSpecTables) {
  // floor((MPS + 28) * AckFactor / lanes + InternalDelay); values in pcie-bench's tables.
  // gen1 x8 MPS 128: 156 * 2.5 / 8 + 19 = 48.75 + 19 = 67.75 -> 67.
  EXPECT_EQ(pcie::ack_latency_symbols(seed()), 67u);
  pcie::Config c = seed();
  c.max_payload = 512;  // 540 * 1.0 / 8 + 19 = 67.5 + 19 = 86.5 -> 86
  EXPECT_EQ(pcie::ack_latency_symbols(c), 86u);
  c = seed();
  c.lanes = 1;  // 156 * 1.4 / 1 + 19 = 218.4 + 19 = 237.4 -> 237
  EXPECT_EQ(pcie::ack_latency_symbols(c), 237u);
  c = seed();
  c.lanes = 16;
  c.max_payload = 256;  // 284 * 3.0 / 16 + 19 = 53.25 + 19 = 72.25 -> 72
  EXPECT_EQ(pcie::ack_latency_symbols(c), 72u);
  c = seed();
  c.lanes = 32;
  c.max_payload = 2048;  // 2076 * 2.0 / 32 + 19 = 129.75 + 19 = 148.75 -> 148
  EXPECT_EQ(pcie::ack_latency_symbols(c), 148u);
  // gen2 x4 MPS 256: 284 * 1.4 / 4 + 70 = 99.4 + 70 = 169.4 -> 169.
  EXPECT_EQ(pcie::ack_latency_symbols(gen2x4()), 169u);
  c = seed();
  c.gen = 3;
  c.max_payload = 256;  // 284 * 2.5 / 8 + 115 = 88.75 + 115 = 203.75 -> 203
  EXPECT_EQ(pcie::ack_latency_symbols(c), 203u);
  EXPECT_EQ(pcie::update_fc_latency_symbols(seed()), 67u);
}

TEST(PcieLink, Coalescing) {
  // MWr 152 B on x8 arrive every 19 symbol times: floor(67 / 19) + 1 = 3 + 1 = 4.
  EXPECT_EQ(pcie::tlps_per_coalesced_dllp(67, 19.0), 4u);
  // CplD 84 B on x8: every 10.5: floor(67 / 10.5) + 1 = 6 + 1 = 7.
  EXPECT_EQ(pcie::tlps_per_coalesced_dllp(67, 10.5), 7u);
  // MRds one per 672 B completion train: 84 > 67, floor(67 / 84) + 1 = 1.
  EXPECT_EQ(pcie::tlps_per_coalesced_dllp(67, 84.0), 1u);
  // A TLP arriving exactly at expiry is covered: floor(60 / 20) + 1 = 4.
  EXPECT_EQ(pcie::tlps_per_coalesced_dllp(60, 20.0), 4u);
}

TEST(PcieLink, ReverseDllpBytes) {
  const pcie::Config c = seed();
  // 4 KB write = 32 MWr of 152 B back to back: 4 per DLLP -> 8 Acks + 8 UpdateFC-P
  // = 16 DLLPs * 8 = 128 B host -> device.
  EXPECT_EQ(pcie::reverse_dllp_bytes(c, 32, 4096), 128u);
  // One MRd (24 B, spacing 3): 1 Ack + 1 UpdateFC-NP = 16 B.
  EXPECT_EQ(pcie::reverse_dllp_bytes(c, 1, 0), 16u);
  // 8 MRd back to back (spacing 3 symbol times, floor(67/3)+1 = 23 per DLLP): 1 + 1 = 16 B.
  EXPECT_EQ(pcie::reverse_dllp_bytes(c, 8, 0), 16u);
  // 8 CplD of 84 B (spacing 10.5, 7 per Ack): ceil(8 / 7) = 2 Acks, no UpdateFC = 16 B.
  EXPECT_EQ(pcie::reverse_dllp_bytes(c, TlpType::CplD, 8, 512), 16u);
  EXPECT_EQ(pcie::reverse_dllp_bytes(c, 0, 0), 0u);
}

TEST(PcieCeiling, WriteSeed) {
  // Write direction carries only MWr: 128 B payload per 152 B TLP, then SKP:
  // 16 * 128/152 = 13.473684; * 1176/1180 = 16*128*1176 / (152*1180) = 2408448 / 179360
  // = 13.428011 Gbit/s. (pcie-bench's "8 B Ack + 8 B FC per 67 B" reading would give
  // 16 * (1 - 16/67 - 4/1538) * 128/152 = 10.2.)
  EXPECT_NEAR(pcie::dma_write_ceiling_gbps(seed()), 13.428011, 1e-6);
}

TEST(PcieCeiling, ReadSeed) {
  // Per 512 B request: completion direction 8 CplD * 84 = 672 B; MRds come one per train,
  // 672 / 8 = 84 symbol times apart > 67, so each gets its own Ack and UpdateFC-NP: +16 B
  // = 688 B. Request direction: MRd 24 B + Acks for 8 CplD at one per 7: 24 + 8/7 * 8
  // = 33.142857 B (not the bottleneck).
  const pcie::ReadStreamBytes b = pcie::dma_read_stream_bytes(seed());
  EXPECT_DOUBLE_EQ(b.payload, 512.0);
  EXPECT_DOUBLE_EQ(b.completion_dir, 688.0);
  EXPECT_NEAR(b.request_dir, 33.142857, 1e-6);
  // 16 * 512/688 * 1176/1180 = 16*512*1176 / (688*1180) = 9633792 / 811840 = 11.866614.
  EXPECT_NEAR(pcie::dma_read_ceiling_gbps(seed()), 11.866614, 1e-6);
}

TEST(PcieCeiling, ReadSmallRequestsCoalesce) {
  // MRRS 128: per request 2 CplD = 168 B, MRds 168/8 = 21 symbol times apart,
  // floor(67/21)+1 = 4 MRds per Ack and per UpdateFC-NP: 16/4 = 4 B -> 172 B per 128 B.
  // 16 * 128/172 * 1176/1180 = 11.866614 (128/172 = 512/688: the same ceiling).
  pcie::Config c = seed();
  c.max_read_request = 128;
  const pcie::ReadStreamBytes b = pcie::dma_read_stream_bytes(c);
  EXPECT_DOUBLE_EQ(b.completion_dir, 172.0);
  EXPECT_NEAR(pcie::dma_read_ceiling_gbps(c), 11.866614, 1e-6);
}

TEST(PcieCeiling, SeedMeasurementsBelowCeilings) {
  // docs/design.md: seed runs reach 10.3 (SDP receive = DMA write) and 11.1 Gbit/s (SDP send =
  // DMA read) of payload; a ceiling must not be below a measurement.
  EXPECT_GT(pcie::dma_write_ceiling_gbps(seed()), 10.3);
  EXPECT_GT(pcie::dma_read_ceiling_gbps(seed()), 11.1);
}

TEST(PcieCeiling, Gen2x4) {
  // Write: MWr 256 B = 8 + 16 + 256 = 280 B. 16 * 256/280 * 1176/1180
  // = 4816896 / 330400 = 14.578983 Gbit/s.
  EXPECT_NEAR(pcie::dma_write_ceiling_gbps(gen2x4()), 14.578983, 1e-6);
  // Read: per 1024 B request 8 CplD of 8 + 12 + 128 = 148 B = 1184 B; MRds 1184/4 = 296
  // symbol times apart > 169: 16 B of DLLPs each -> 1200 B. Request direction: 24 + 8 CplD
  // at floor(169/37)+1 = 5 per Ack: 24 + 8/5 * 8 = 36.8 B.
  const pcie::ReadStreamBytes b = pcie::dma_read_stream_bytes(gen2x4());
  EXPECT_DOUBLE_EQ(b.completion_dir, 1200.0);
  EXPECT_NEAR(b.request_dir, 36.8, 1e-9);
  // 16 * 1024/1200 * 1176/1180 = 19267584 / 1416000 = 13.607051 Gbit/s.
  EXPECT_NEAR(pcie::dma_read_ceiling_gbps(gen2x4()), 13.607051, 1e-6);
}

TEST(PcieCeiling, Gen3x8Write) {
  // 8 * 128/130 * 8 * 256/280 * 370/371 = 64*128*256*370 / (130*280*371)
  // = 775946240 / 13504400 = 57.458772 Gbit/s.
  pcie::Config c = seed();
  c.gen = 3;
  c.max_payload = 256;
  EXPECT_NEAR(pcie::dma_write_ceiling_gbps(c), 57.458772, 1e-6);
}

TEST(PcieCeiling, ReadLatencyBound) {
  // 16 outstanding * 512 B * 8 / 1000 ns = 65536 / 1000 = 65.536 Gbit/s.
  EXPECT_DOUBLE_EQ(pcie::dma_read_latency_bound_gbps(seed(), 1000.0, 16), 65.536);
  // 4 * 512 * 8 / 2000 = 16384 / 2000 = 8.192 Gbit/s.
  EXPECT_DOUBLE_EQ(pcie::dma_read_latency_bound_gbps(seed(), 2000.0, 4), 8.192);
  EXPECT_THROW(pcie::dma_read_latency_bound_gbps(seed(), 0.0, 4), InputError);
  EXPECT_THROW(pcie::dma_read_latency_bound_gbps(seed(), 1000.0, 0), InputError);
}

TEST(PcieErrors, InvalidConfigs) {
  EXPECT_EQ(message_of(seed()), "");
  pcie::Config c = seed();
  c.max_payload = 100;
  EXPECT_EQ(message_of(c), "pcie.max_payload: 100 is not a power of two in 128..4096");
  c = seed();
  c.max_payload = 8192;
  EXPECT_EQ(message_of(c), "pcie.max_payload: 8192 is not a power of two in 128..4096");
  c = seed();
  c.max_payload = 64;
  EXPECT_EQ(message_of(c), "pcie.max_payload: 64 is not a power of two in 128..4096");
  c = seed();
  c.gen = 4;
  EXPECT_EQ(message_of(c), "pcie.gen: 4 is not 1, 2 or 3");
  c.gen = 0;
  EXPECT_EQ(message_of(c), "pcie.gen: 0 is not 1, 2 or 3");
  c = seed();
  c.lanes = 3;
  EXPECT_EQ(message_of(c), "pcie.lanes: 3 is not one of 1, 2, 4, 8, 12, 16, 32");
  c.lanes = 64;
  EXPECT_EQ(message_of(c), "pcie.lanes: 64 is not one of 1, 2, 4, 8, 12, 16, 32");
  c = seed();
  c.max_read_request = 1000;
  EXPECT_EQ(message_of(c), "pcie.max_read_request: 1000 is not a power of two in 128..4096");
  c = seed();
  c.read_completion_boundary = 32;
  EXPECT_EQ(message_of(c), "pcie.read_completion_boundary: 32 is not 64 or 128");
  c = seed();
  c.completion_size = 96;
  EXPECT_EQ(message_of(c).rfind("pcie.completion_size: 96 ", 0), 0u);
  c.completion_size = 256;  // above MPS 128
  EXPECT_EQ(message_of(c).rfind("pcie.completion_size: 256 ", 0), 0u);
  c = seed();
  c.read_completion_boundary = 128;  // 64 B completions below a 128 B RCB
  EXPECT_EQ(message_of(c).rfind("pcie.completion_size: 64 ", 0), 0u);
  EXPECT_THROW(pcie::transfer_rate_gtps(4), InputError);
  EXPECT_THROW(pcie::encoding_efficiency(0), InputError);
  c = seed();
  c.lanes = 3;
  EXPECT_THROW(pcie::dma_write(c, 0, 128), InputError);
  EXPECT_THROW(pcie::dma_read_ceiling_gbps(c), InputError);
}
