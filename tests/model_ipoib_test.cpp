// IPoIB framing (model/ipoib.h): every expected number is a hand calculation from the sources
// that file cites.
#include "model/ipoib.h"

#include <stdexcept>

#include <gtest/gtest.h>

#include "model/error.h"

namespace ip = hcasim::model::ipoib;
namespace ib = hcasim::model::ib;

namespace {
const ib::Config kSdr2048{ib::Speed::SDR, 4, 2048};  // seed 003's Topspin/InfiniHost SDR 4x fabric
}

TEST(ModelIpoib, DatagramMtuIsTheIbMtuLessTheEncapsulationHeader) {
  const ip::Config ud{ip::Mode::Datagram};
  EXPECT_EQ(ip::interface_mtu(ud, kSdr2048), 2044u);  // ipoib.rst: 2048 - 4 = 2044
  EXPECT_EQ(ip::interface_mtu(ud, {ib::Speed::DDR, 4, 4096}), 4092u);
  // Seed 003's receiver: 5.51M tcp_v4_rcv calls in 54.7 s at 1588.33 Mbit/s are 1971 B per
  // segment, about the 1992 B MSS (2044 - 20 IP - 20 TCP - 12 timestamps).
  EXPECT_EQ(ip::tcp_mss(ud, kSdr2048), 1992u);
  EXPECT_EQ(ip::tcp_mss({ip::Mode::Datagram, 65520, false}, kSdr2048), 2004u);
}

TEST(ModelIpoib, ConnectedMtuIsConfiguredUpTo65520) {
  const ip::Config cm{ip::Mode::Connected};
  EXPECT_EQ(ip::interface_mtu(cm, kSdr2048), 65520u);
  EXPECT_EQ(ip::tcp_mss(cm, kSdr2048), 65520u - 52u);
  EXPECT_EQ(ip::interface_mtu({ip::Mode::Connected, 9000}, kSdr2048), 9000u);
}

TEST(ModelIpoib, UdPacketBytes) {
  // A full 2044 B IP packet: frame 2048, + LRH 8 + BTH 12 + DETH 8 + ICRC 4 + VCRC 2 = 2082,
  // + 2 delimiters = 2084.
  EXPECT_EQ(ip::ip_packet_wire_bytes({ip::Mode::Datagram}, kSdr2048, 2044), 2084u);
  // A bare ACK with timestamps: 52 B IP packet, frame 56, 56 + 34 + 2 = 92.
  EXPECT_EQ(ip::ip_packet_wire_bytes({ip::Mode::Datagram}, kSdr2048, 52), 92u);
  // Padding to whole DWs: a 53 B packet's 57 B frame takes 60.
  EXPECT_EQ(ip::ud_packet_wire_bytes(kSdr2048, 57), 96u);
  EXPECT_THROW(ip::ud_packet_wire_bytes(kSdr2048, 2049), std::invalid_argument);
  EXPECT_THROW(ip::ip_packet_wire_bytes({ip::Mode::Datagram}, kSdr2048, 2045), std::invalid_argument);
}

TEST(ModelIpoib, ConnectedPacketIsOneRcSend) {
  // 65520 B IP packet + 4 = 65524 B SEND at MTU 2048: 32 packets (31 x 2048 + 2036), each
  // LRH + BTH + ICRC + VCRC = 26 B + 2 delimiters: 65524 + 32 x 28 = 66420.
  EXPECT_EQ(ip::ip_packet_wire_bytes({ip::Mode::Connected}, kSdr2048, 65520), 66420u);
}

TEST(ModelIpoib, GoodputCeilings) {
  // SDR 4x carries 8 Gbit/s of data (model/ib.h). Datagram: 8 x 1992 / 2084.
  EXPECT_NEAR(ip::tcp_goodput_ceiling_gbps({ip::Mode::Datagram}, kSdr2048), 8.0 * 1992 / 2084, 1e-12);
  EXPECT_NEAR(ip::tcp_goodput_ceiling_gbps({ip::Mode::Datagram}, kSdr2048), 7.647, 5e-4);
  // Connected: 8 x 65468 / 66420 = 7.885; more than datagram (fewer headers per byte).
  EXPECT_NEAR(ip::tcp_goodput_ceiling_gbps({ip::Mode::Connected}, kSdr2048), 8.0 * 65468 / 66420, 1e-12);
  // Seed 003's 1588 Mbit/s is a fifth of the link's ceiling: the link is not what limits it.
  EXPECT_GT(ip::tcp_goodput_ceiling_gbps({ip::Mode::Datagram}, kSdr2048), 4 * 1.58833);
}

TEST(ModelIpoib, BadInputNamesTheField) {
  EXPECT_EQ(ip::parse_mode("connected"), ip::Mode::Connected);
  try {
    ip::parse_mode("cm");
    FAIL();
  } catch (const hcasim::InputError& e) {
    EXPECT_STREQ(e.what(), "ipoib.mode: 'cm' is not datagram or connected");
  }
  for (uint32_t bad : {575u, 65521u, 0u}) {
    try {
      ip::interface_mtu({ip::Mode::Connected, bad}, kSdr2048);
      FAIL() << bad;
    } catch (const hcasim::InputError& e) {
      EXPECT_EQ(std::string(e.what()), "ipoib.connected_mtu: " + std::to_string(bad) + " is not in 576..65520");
    }
  }
  EXPECT_THROW(ip::tcp_mss({ip::Mode::Datagram}, {ib::Speed::SDR, 4, 2000}), hcasim::InputError);
}
