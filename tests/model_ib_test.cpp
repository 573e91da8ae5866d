// Unit tests of model/ib: every expected number is worked out by hand in the comment next to
// it (header sizes from IBA 1.2 as documented in model/ib.h), not taken from a run.
#include "model/ib.h"

#include <gtest/gtest.h>

#include <string>

#include "model/error.h"

namespace ib = hcasim::model::ib;
using hcasim::InputError;
using ib::Packet;

namespace {

ib::Config ddr4x2048() { return ib::Config{}; }  // DDR, 4x, MTU 2048

std::string message_of(const ib::Config& c) {
  try {
    ib::validate(c);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(IbRate, FdrUses64b66b) {
  ib::Config c;
  c.speed = ib::Speed::FDR;  // 14.0625 Gbaud x 4 = 56.25; x 64/66 = 54.5454...
  EXPECT_DOUBLE_EQ(ib::signalling_rate_gbps(c), 56.25);
  EXPECT_NEAR(ib::data_rate_gbps(c), 54.545454, 1e-5);
  c.speed = ib::Speed::FDR10;  // 10.3125 x 4 = 41.25; x 64/66 = 40
  EXPECT_DOUBLE_EQ(ib::data_rate_gbps(c), 40.0);
}

TEST(IbSpeed, Parse) {
  EXPECT_EQ(ib::parse_speed("SDR"), ib::Speed::SDR);
  EXPECT_EQ(ib::parse_speed("ddr"), ib::Speed::DDR);
  EXPECT_EQ(ib::parse_speed("Qdr"), ib::Speed::QDR);
  EXPECT_EQ(ib::parse_speed("fdr10"), ib::Speed::FDR10);
  EXPECT_EQ(ib::parse_speed("FDR"), ib::Speed::FDR);
  try {
    ib::parse_speed("EDR");
    FAIL() << "EDR accepted";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "ib.speed: 'EDR' is not SDR, DDR, QDR, FDR10 or FDR");
  }
  EXPECT_THROW(ib::parse_speed(""), InputError);
}

TEST(IbRates, SignallingAndData) {
  ib::Config c = ddr4x2048();
  // DDR 4x: 5 Gbaud * 4 = 20; * 8/10 = 16 Gbit/s of data.
  EXPECT_DOUBLE_EQ(ib::signalling_rate_gbps(c), 20.0);
  EXPECT_DOUBLE_EQ(ib::data_rate_gbps(c), 16.0);
  c.speed = ib::Speed::SDR;  // 2.5 * 4 = 10; 8
  EXPECT_DOUBLE_EQ(ib::signalling_rate_gbps(c), 10.0);
  EXPECT_DOUBLE_EQ(ib::data_rate_gbps(c), 8.0);
  c.speed = ib::Speed::QDR;  // 10 * 4 = 40; 32
  EXPECT_DOUBLE_EQ(ib::signalling_rate_gbps(c), 40.0);
  EXPECT_DOUBLE_EQ(ib::data_rate_gbps(c), 32.0);
  c.width = 12;  // 10 * 12 = 120; 96
  EXPECT_DOUBLE_EQ(ib::data_rate_gbps(c), 96.0);
  c = ddr4x2048();
  c.width = 1;  // 5 * 1 = 5; 4
  EXPECT_DOUBLE_EQ(ib::data_rate_gbps(c), 4.0);
}

TEST(IbHeaders, Sizes) {
  // LRH 8 + BTH 12 + ICRC 4 + VCRC 2 = 26.
  EXPECT_EQ(ib::header_bytes(Packet::SendFirst), 26u);
  EXPECT_EQ(ib::header_bytes(Packet::SendMiddle), 26u);
  EXPECT_EQ(ib::header_bytes(Packet::SendLast), 26u);
  EXPECT_EQ(ib::header_bytes(Packet::SendOnly), 26u);
  EXPECT_EQ(ib::header_bytes(Packet::RdmaWriteMiddle), 26u);
  EXPECT_EQ(ib::header_bytes(Packet::RdmaWriteLast), 26u);
  EXPECT_EQ(ib::header_bytes(Packet::RdmaReadResponseMiddle), 26u);
  // + RETH 16 = 42.
  EXPECT_EQ(ib::header_bytes(Packet::RdmaWriteFirst), 42u);
  EXPECT_EQ(ib::header_bytes(Packet::RdmaWriteOnly), 42u);
  EXPECT_EQ(ib::header_bytes(Packet::RdmaReadRequest), 42u);
  // + AETH 4 = 30.
  EXPECT_EQ(ib::header_bytes(Packet::RdmaReadResponseFirst), 30u);
  EXPECT_EQ(ib::header_bytes(Packet::RdmaReadResponseLast), 30u);
  EXPECT_EQ(ib::header_bytes(Packet::RdmaReadResponseOnly), 30u);
  EXPECT_EQ(ib::header_bytes(Packet::Ack), 30u);
}

TEST(IbHeaders, PacketWireBytes) {
  // Send Only, 5 B payload padded to 8: 26 + 8 + 2 delimiters = 36.
  EXPECT_EQ(ib::packet_wire_bytes(Packet::SendOnly, 5), 36u);
  // Ack: 30 + 2 = 32; RDMA READ Request: 42 + 2 = 44.
  EXPECT_EQ(ib::ack_wire_bytes(), 32u);
  EXPECT_EQ(ib::rdma_read_request_wire_bytes(), 44u);
}

TEST(IbPackets, PacketsFor) {
  EXPECT_EQ(ib::packets_for(0, 2048), 1u);      // empty message: one packet
  EXPECT_EQ(ib::packets_for(1, 2048), 1u);
  EXPECT_EQ(ib::packets_for(2048, 2048), 1u);   // exactly one MTU
  EXPECT_EQ(ib::packets_for(2049, 2048), 2u);   // one byte more: 2
  EXPECT_EQ(ib::packets_for(32768, 2048), 16u); // 32768 / 2048 = 16
  EXPECT_EQ(ib::packets_for(32769, 256), 129u); // ceil(32769 / 256) = 128 + 1
  EXPECT_THROW(ib::packets_for(1, 300), InputError);
}

TEST(IbMessages, SendWireBytes) {
  const ib::Config c = ddr4x2048();
  // 32 KB: 16 packets of 26 + 2048 + 2 = 2076: 16 * 2076 = 33216.
  EXPECT_EQ(ib::send_wire_bytes(c, 32768), 33216u);
  // 0 B: Send Only 26 + 0 + 2 = 28.
  EXPECT_EQ(ib::send_wire_bytes(c, 0), 28u);
  // 1 B: 26 + 4 (padded) + 2 = 32.
  EXPECT_EQ(ib::send_wire_bytes(c, 1), 32u);
  // 2049 B: First 26 + 2048 + 2 = 2076, Last 26 + 4 + 2 = 32: 2108.
  EXPECT_EQ(ib::send_wire_bytes(c, 2049), 2108u);
}

TEST(IbMessages, RdmaWriteWireBytes) {
  const ib::Config c = ddr4x2048();
  // 32 KB: First 42 + 2048 + 2 = 2092, 14 Middle * 2076 = 29064, Last 2076:
  // 2092 + 29064 + 2076 = 33232.
  EXPECT_EQ(ib::rdma_write_wire_bytes(c, 32768), 33232u);
  // 100 B: Only 42 + 100 + 2 = 144.
  EXPECT_EQ(ib::rdma_write_wire_bytes(c, 100), 144u);
}

TEST(IbMessages, RdmaReadResponseWireBytes) {
  const ib::Config c = ddr4x2048();
  // 32 KB: First 30 + 2048 + 2 = 2080, 14 Middle * 2076 = 29064, Last 2080:
  // 2080 + 29064 + 2080 = 33224.
  EXPECT_EQ(ib::rdma_read_response_wire_bytes(c, 32768), 33224u);
  // 4 B: Only 30 + 4 + 2 = 36.
  EXPECT_EQ(ib::rdma_read_response_wire_bytes(c, 4), 36u);
}

TEST(IbCeiling, Send32KiBDdr) {
  // 16 * 32768 / 33216 = 16 * 512/519 = 8192 / 519 = 15.784200 Gbit/s.
  EXPECT_NEAR(ib::send_goodput_ceiling_gbps(ddr4x2048(), 32768), 15.784200, 1e-6);
}

TEST(IbCeiling, Send64KiBQdr4096) {
  // QDR 4x MTU 4096, 64 KB: 16 packets of 26 + 4096 + 2 = 4124.
  // 32 * 65536 / (16 * 4124) = 131072 / 4124 = 31.782735 Gbit/s.
  ib::Config c = ddr4x2048();
  c.speed = ib::Speed::QDR;
  c.mtu = 4096;
  EXPECT_NEAR(ib::send_goodput_ceiling_gbps(c, 65536), 31.782735, 1e-6);
}

TEST(IbErrors, InvalidConfigs) {
  EXPECT_EQ(message_of(ddr4x2048()), "");
  ib::Config c = ddr4x2048();
  c.width = 3;
  EXPECT_EQ(message_of(c), "ib.width: 3 is not one of 1, 4, 8, 12");
  c = ddr4x2048();
  c.mtu = 300;
  EXPECT_EQ(message_of(c), "ib.mtu: 300 is not one of 256, 512, 1024, 2048, 4096");
  c.mtu = 8192;
  EXPECT_EQ(message_of(c), "ib.mtu: 8192 is not one of 256, 512, 1024, 2048, 4096");
  c = ddr4x2048();
  c.width = 2;
  EXPECT_THROW(ib::send_wire_bytes(c, 100), InputError);
  EXPECT_THROW(ib::send_goodput_ceiling_gbps(c, 100), InputError);
}

TEST(IbTraining, TheLinkTrainsToWhatBothPortsSupport) {
  // IBA 1.2 Vol. 2 ch. 5 link training: the highest common speed (each port supports every lower
  // one), the widest common width (a port of width w supports 1x, 4x and w), the smaller MTU.
  ib::Config fdr{ib::Speed::FDR, 4, 4096}, sdr{ib::Speed::SDR, 4, 2048};
  for (const auto& [a, b] : {std::pair{fdr, sdr}, std::pair{sdr, fdr}}) {
    const ib::Config t = ib::trained(a, b);
    EXPECT_EQ(t.speed, ib::Speed::SDR);
    EXPECT_EQ(t.width, 4);
    EXPECT_EQ(t.mtu, 2048u);
  }
  EXPECT_EQ(ib::trained({ib::Speed::FDR, 4, 2048}, {ib::Speed::FDR10, 4, 2048}).speed, ib::Speed::FDR10);
  EXPECT_EQ(ib::trained({ib::Speed::QDR, 12, 2048}, {ib::Speed::QDR, 8, 2048}).width, 4);  // 8x and 12x share 4x
  EXPECT_EQ(ib::trained({ib::Speed::QDR, 12, 2048}, {ib::Speed::QDR, 12, 2048}).width, 12);
  EXPECT_EQ(ib::trained({ib::Speed::QDR, 4, 2048}, {ib::Speed::QDR, 1, 2048}).width, 1);
  EXPECT_EQ(ib::trained(ddr4x2048(), {ib::Speed::DDR, 4, 256}).mtu, 256u);
  EXPECT_THROW(ib::trained(ddr4x2048(), {ib::Speed::DDR, 3, 2048}), InputError);
}
