// What hcasim-sdp-client and -server exchange and compute (rt/stream.h).
#include <gtest/gtest.h>

#include "rt/stream.h"
#include "sdp/bsdh.h"

using namespace hcasim;

TEST(StreamRequest, RoundTripsAndRefusesForeignBytes) {
  rt::StreamRequest r;
  r.recv_size = 65536;
  r.remote_cpu = 3;
  auto bytes = r.encode();
  EXPECT_EQ(std::string(bytes.begin(), bytes.begin() + 8), "HCASIMRQ");
  EXPECT_EQ(bytes[12 + 5], 0x01);  // recv_size 65536 = 0x0000000000010000, big-endian at offset 12
  const auto back = rt::StreamRequest::decode(bytes);
  EXPECT_EQ(back.recv_size, 65536u);
  EXPECT_EQ(back.remote_cpu, 3);
  r.remote_cpu = -1;
  EXPECT_EQ(rt::StreamRequest::decode(r.encode()).remote_cpu, -1);
  bytes[0] = 'X';
  EXPECT_THROW(rt::StreamRequest::decode(bytes), sdp::ProtocolError);
  r.recv_size = 0;
  EXPECT_THROW(rt::StreamRequest::decode(r.encode()), sdp::ProtocolError);
  r.recv_size = rt::kMaxRecvSize + 1;
  EXPECT_THROW(rt::StreamRequest::decode(r.encode()), sdp::ProtocolError);
}

TEST(StreamReport, RoundTripsWithUtilisationTo1e4Percent) {
  rt::StreamReport r;
  r.bytes = 1073741824;
  r.recv_calls = 16385;
  r.crc32 = 0x6dabb29c;
  r.cpus = 2;
  r.elapsed_ns = 1760000000;
  r.util_pct = 80.71234;
  const auto back = rt::StreamReport::decode(r.encode());
  EXPECT_EQ(back.bytes, r.bytes);
  EXPECT_EQ(back.recv_calls, r.recv_calls);
  EXPECT_EQ(back.crc32, r.crc32);
  EXPECT_EQ(back.cpus, 2u);
  EXPECT_EQ(back.elapsed_ns, r.elapsed_ns);
  EXPECT_DOUBLE_EQ(back.util_pct, 80.7123);  // sent as 807123 ten-thousandths
}

TEST(CpuTimes, UtilisationIsBusyOverAllJiffies) {
  // 300 busy and 100 idle jiffies between the readings: 75 %.
  EXPECT_DOUBLE_EQ(rt::utilisation_pct({1000, 5000}, {1300, 5100}), 75.0);
  EXPECT_DOUBLE_EQ(rt::utilisation_pct({1000, 5000}, {1000, 5000}), 0.0);
}

TEST(Crc32, MatchesTheStandardCheckValue) {
  // CRC-32 (ISO-HDLC, zlib's) of "123456789" is 0xCBF43926.
  const std::string s = "123456789";
  EXPECT_EQ(rt::crc32_update(0, reinterpret_cast<const uint8_t*>(s.data()), s.size()), 0xCBF43926u);
  // In two pieces, continuing from the first CRC.
  const uint32_t a = rt::crc32_update(0, reinterpret_cast<const uint8_t*>(s.data()), 4);
  EXPECT_EQ(rt::crc32_update(a, reinterpret_cast<const uint8_t*>(s.data()) + 4, 5), 0xCBF43926u);
}

TEST(OpenDevice, EmuOpensAndAnUnknownNameIsOneLine) {
  EXPECT_EQ(rt::open_device("emu", 1 << 20)->name(), "emu");
  try {
    rt::open_device("no_such_hca9", 1 << 20);
    FAIL() << "opened";
  } catch (const sdp::DeviceError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("--device emu"), std::string::npos) << e.what();
  }
}
