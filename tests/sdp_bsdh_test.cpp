// SDP wire headers (sdp/bsdh.h): exact bytes written out by hand, round trips, decode errors.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "sdp/bsdh.h"

namespace hcasim::sdp {
namespace {

using Bytes = std::vector<uint8_t>;

template <size_t N>
Bytes bytes_of(const std::array<uint8_t, N>& a) {
  return Bytes(a.begin(), a.end());
}

/// Expects `fn` to throw ProtocolError whose what() is exactly `message`.
template <class Fn>
void expect_protocol_error(Fn fn, const std::string& message) {
  try {
    fn();
    ADD_FAILURE() << "no ProtocolError, expected: " << message;
  } catch (const ProtocolError& e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
}

// ---- MIDs ----

TEST(Mid, ValuesAndNames) {
  // Annex A4 / OpenIB sdp_msgs.h / docs/design.md values, written out.
  const std::vector<std::pair<unsigned, std::string>> expected = {
      {0x00, "Hello"},          {0x01, "HelloAck"},        {0x02, "DisConn"},
      {0x03, "AbortConn"},      {0x04, "SendSM"},          {0x05, "RdmaWrCompl"},
      {0x06, "RdmaRdCompl"},    {0x07, "ModeChange"},      {0x08, "SrcAvailCancel"},
      {0x09, "SinkAvailCancel"}, {0x0A, "SinkCancelAck"},  {0x0B, "ChRcvBuf"},
      {0x0C, "ChRcvBufAck"},    {0x0D, "SuspComm"},        {0x0E, "SuspCommAck"},
      {0xFD, "SinkAvail"},      {0xFE, "SrcAvail"},        {0xFF, "Data"}};
  ASSERT_EQ(kAllMids.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(static_cast<unsigned>(kAllMids[i]), expected[i].first);
    EXPECT_EQ(std::string(mid_name(kAllMids[i])), expected[i].second);
  }
  EXPECT_EQ(static_cast<unsigned>(Mid::SendSM), 0x04u);
  EXPECT_EQ(static_cast<unsigned>(Mid::Data), 0xFFu);
  EXPECT_EQ(std::string(mid_name(static_cast<Mid>(0x42))), "unknown");
}

TEST(Mid, KnownMids) {
  int known = 0;
  for (unsigned v = 0; v < 256; ++v) known += is_known_mid(static_cast<uint8_t>(v)) ? 1 : 0;
  EXPECT_EQ(known, 18);
  EXPECT_TRUE(is_known_mid(0x00));
  EXPECT_TRUE(is_known_mid(0x0E));
  EXPECT_FALSE(is_known_mid(0x0F));
  EXPECT_FALSE(is_known_mid(0x42));
  EXPECT_FALSE(is_known_mid(0xFC));
  EXPECT_TRUE(is_known_mid(0xFD));
  EXPECT_TRUE(is_known_mid(0xFF));
}

// ---- BSDH ----

TEST(Bsdh, FlagValues) {
  EXPECT_EQ(Bsdh::kOobPres, 0x01);
  EXPECT_EQ(Bsdh::kOobPend, 0x02);
  EXPECT_EQ(Bsdh::kReqPipe, 0x04);
  EXPECT_EQ(Bsdh::kSize, 16u);
}

TEST(Bsdh, DataHeaderBytes) {
  const Bsdh h{.mid = Mid::Data, .flags = 0, .bufs = 64, .len = 32784, .mseq = 7, .mseq_ack = 5};
  const Bytes expected = {0xFF, 0x00, 0x00, 0x40, 0x00, 0x00, 0x80, 0x10,
                          0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x05};
  EXPECT_EQ(bytes_of(h.to_bytes()), expected);
  EXPECT_EQ(Bsdh::decode(expected), h);
}

TEST(Bsdh, UrgentDataHeaderBytes) {
  // OFED 1.3 marks urgent data with OOB_PRES | OOB_PEND (sdp_bcopy.c sdp_post_send).
  const Bsdh h{.mid = Mid::Data, .flags = Bsdh::kOobPres | Bsdh::kOobPend, .bufs = 1, .len = 17,
               .mseq = 0xFFFFFFFF, .mseq_ack = 0};
  const Bytes expected = {0xFF, 0x03, 0x00, 0x01, 0x00, 0x00, 0x00, 0x11,
                          0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00};
  EXPECT_EQ(bytes_of(h.to_bytes()), expected);
  EXPECT_EQ(Bsdh::decode(expected), h);
}

TEST(Bsdh, ByteOrderOfEveryField) {
  const Bsdh h{.mid = Mid::DisConn, .flags = 0xA5, .bufs = 0x1234, .len = 0x01020304,
               .mseq = 0x89ABCDEF, .mseq_ack = 0xFEDCBA98};
  const Bytes expected = {0x02, 0xA5, 0x12, 0x34, 0x01, 0x02, 0x03, 0x04,
                          0x89, 0xAB, 0xCD, 0xEF, 0xFE, 0xDC, 0xBA, 0x98};
  EXPECT_EQ(bytes_of(h.to_bytes()), expected);
  EXPECT_EQ(Bsdh::decode(expected), h);  // reserved flag bits are carried, not checked
}

TEST(Bsdh, EncodeIntoSpan) {
  std::array<uint8_t, 20> buf{};
  buf.fill(0xEE);
  const Bsdh h{.mid = Mid::SendSM, .len = 16};
  h.encode(std::span<uint8_t, 20>(buf).first<16>());
  EXPECT_EQ(buf[0], 0x04);
  EXPECT_EQ(buf[7], 0x10);
  EXPECT_EQ(buf[16], 0xEE);  // nothing written past the 16 bytes
}

TEST(Bsdh, RoundTripEveryMid) {
  uint32_t n = 1;
  for (Mid mid : kAllMids) {
    const Bsdh h{.mid = mid, .flags = static_cast<uint8_t>(n & 7), .bufs = static_cast<uint16_t>(n * 3),
                 .len = 16 + n * 1000, .mseq = n * 0x01010101u, .mseq_ack = ~n};
    const auto b = h.to_bytes();
    EXPECT_EQ(b[0], static_cast<uint8_t>(mid));
    EXPECT_EQ(Bsdh::decode(b), h) << mid_name(mid);
    ++n;
  }
}

TEST(Bsdh, DecodeIgnoresTrailingBody) {
  Bytes msg = {0xFF, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x15, 0, 0, 0, 1, 0, 0, 0, 0,
               'h',  'e',  'l',  'l',  'o'};
  const Bsdh h = Bsdh::decode(msg);
  EXPECT_EQ(h.len, 21u);
  EXPECT_NO_THROW(h.check_len(msg.size()));
}

TEST(Bsdh, Errors) {
  const Bytes nine(9, 0xFF);
  expect_protocol_error([&] { Bsdh::decode(nine); }, "BSDH: 9 bytes, need 16");
  expect_protocol_error([] { Bsdh::decode({}); }, "BSDH: 0 bytes, need 16");

  Bytes b = bytes_of(Bsdh{.mid = Mid::Data, .len = 16}.to_bytes());
  b[0] = 0x42;
  expect_protocol_error([&] { Bsdh::decode(b); }, "BSDH: unknown MID 0x42");
  b[0] = 0x0F;
  expect_protocol_error([&] { Bsdh::decode(b); }, "BSDH: unknown MID 0x0F");
  b[0] = 0xFC;
  expect_protocol_error([&] { Bsdh::decode(b); }, "BSDH: unknown MID 0xFC");

  const Bytes short_len = {0xFF, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x08,
                           0x00, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00, 0x05};
  expect_protocol_error([&] { Bsdh::decode(short_len); },
                        "BSDH: len 8 shorter than the 16-byte header");

  const Bsdh h{.mid = Mid::Data, .len = 100};
  expect_protocol_error([&] { h.check_len(64); }, "BSDH: len 100 but 64 bytes received");

  // ProtocolError is a std::runtime_error.
  EXPECT_THROW(Bsdh::decode(nine), std::runtime_error);
}

// ---- Hello (HH) ----

HelloHeader ofed_hello() {
  // What OFED 1.3 sdp_cma.c sends with default module parameters: 2064-byte receive buffers
  // (PAGE_SIZE / 2 + 16-byte BSDH), one advertisement, len = 16 + 76.
  HelloHeader h;
  h.bsdh = Bsdh{.mid = Mid::Hello, .bufs = 64, .len = 92};
  h.majv_minv = 0x22;
  h.ipv_cap = 0x40;  // IPv4 (set by rdma_cm's sdp_set_ip_ver)
  h.max_adverts = 1;
  h.desremrcvsz = 2064;
  h.localrcvsz = 2064;
  h.port = 5001;
  h.src_addr = ipv4_field(0xC0A80001);  // 192.168.0.1
  h.dst_addr = ipv4_field(0xC0A80002);  // 192.168.0.2
  return h;
}

TEST(Hello, Sizes) {
  EXPECT_EQ(HelloHeader::kSize, 64u);
  EXPECT_EQ(HelloHeader::kPrivateDataSize, 92u);
  EXPECT_EQ(HelloHeader{}.bsdh.mid, Mid::Hello);
  EXPECT_EQ(HelloHeader{}.bsdh.len, 92u);
  EXPECT_EQ(HelloHeader{}.majv_minv, 0x22);
}

TEST(Hello, ByteLayout) {
  const Bytes expected = {
      // 0: BSDH
      0x00, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0x5C, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      // 16 majv_minv, 17 ipv_cap, 18 rsvd, 19 max_adverts, 20 desremrcvsz, 24 localrcvsz,
      // 28 port, 30 rsvd
      0x22, 0x40, 0x00, 0x01, 0x00, 0x00, 0x08, 0x10, 0x00, 0x00, 0x08, 0x10, 0x13, 0x89, 0x00, 0x00,
      // 32: src_addr
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xC0, 0xA8, 0x00, 0x01,
      // 48: dst_addr
      0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xC0, 0xA8, 0x00, 0x02};
  const HelloHeader h = ofed_hello();
  const Bytes b = bytes_of(h.to_bytes());
  ASSERT_EQ(b.size(), 64u);
  EXPECT_EQ(b, expected);
  EXPECT_EQ(HelloHeader::decode(expected), h);

  EXPECT_EQ(h.major_version(), 2);
  EXPECT_EQ(h.minor_version(), 2);
  EXPECT_EQ(h.ip_version(), 4);
}

TEST(Hello, FieldOffsets) {
  HelloHeader h;  // all zero but for one field at a time
  h.bsdh = Bsdh{.mid = Mid::Hello, .len = 64};
  h.majv_minv = 0;
  h.ipv_cap = 0;
  h.max_adverts = 0;
  const auto zero = h.to_bytes();
  auto only = [&](size_t off, std::initializer_list<uint8_t> want, auto set) {
    HelloHeader x = h;
    set(x);
    const auto b = x.to_bytes();
    size_t i = 0;
    for (uint8_t w : want) EXPECT_EQ(b[off + i++], w) << "offset " << off + i - 1;
    for (size_t j = 0; j < b.size(); ++j) {
      if (j < off || j >= off + want.size()) {
        EXPECT_EQ(b[j], zero[j]) << "offset " << j;
      }
    }
  };
  only(16, {0x21}, [](HelloHeader& x) { x.majv_minv = 0x21; });
  only(17, {0x60}, [](HelloHeader& x) { x.ipv_cap = 0x60; });
  only(19, {0x07}, [](HelloHeader& x) { x.max_adverts = 7; });
  only(20, {0xDE, 0xAD, 0xBE, 0xEF}, [](HelloHeader& x) { x.desremrcvsz = 0xDEADBEEF; });
  only(24, {0x00, 0x00, 0x80, 0x10}, [](HelloHeader& x) { x.localrcvsz = 32784; });
  only(28, {0xAB, 0xCD}, [](HelloHeader& x) { x.port = 0xABCD; });
  only(32, {0x11}, [](HelloHeader& x) { x.src_addr[0] = 0x11; });
  only(47, {0x22}, [](HelloHeader& x) { x.src_addr[15] = 0x22; });
  only(48, {0x33}, [](HelloHeader& x) { x.dst_addr[0] = 0x33; });
  only(63, {0x44}, [](HelloHeader& x) { x.dst_addr[15] = 0x44; });
}

TEST(Hello, DecodesTheWhole92BytePrivateData) {
  Bytes pd = bytes_of(ofed_hello().to_bytes());
  pd.resize(92, 0x00);
  EXPECT_EQ(HelloHeader::decode(pd), ofed_hello());
}

TEST(Hello, ReservedBytesAreWrittenZeroAndIgnoredOnRead) {
  std::array<uint8_t, 64> buf;
  buf.fill(0xFF);
  ofed_hello().encode(buf);
  EXPECT_EQ(buf[18], 0x00);
  EXPECT_EQ(buf[30], 0x00);
  EXPECT_EQ(buf[31], 0x00);
  buf[18] = 0x5A;
  buf[30] = 0x5A;
  EXPECT_EQ(HelloHeader::decode(buf), ofed_hello());
}

TEST(Hello, Errors) {
  const Bytes full = bytes_of(ofed_hello().to_bytes());
  expect_protocol_error([&] { HelloHeader::decode(std::span(full).first(40)); },
                        "HH: 40 bytes, need 64");
  expect_protocol_error([&] { HelloHeader::decode(std::span(full).first(9)); },
                        "HH: 9 bytes, need 64");
  Bytes b = full;
  b[0] = 0xFF;
  expect_protocol_error([&] { HelloHeader::decode(b); }, "HH: MID Data (0xFF), expected Hello");
  b[0] = 0x42;
  expect_protocol_error([&] { HelloHeader::decode(b); }, "BSDH: unknown MID 0x42");
  b = full;
  b[7] = 16;  // len 16
  expect_protocol_error([&] { HelloHeader::decode(b); },
                        "HH: len 16 shorter than the 64-byte Hello header");
  b[7] = 8;  // len 8: the BSDH check comes first
  expect_protocol_error([&] { HelloHeader::decode(b); },
                        "BSDH: len 8 shorter than the 16-byte header");
}

// ---- HelloAck (HAH) ----

HelloAckHeader ofed_hello_ack() {
  HelloAckHeader h;
  h.bsdh = Bsdh{.mid = Mid::HelloAck, .bufs = 64, .len = 196};
  h.majv_minv = 0x22;
  h.ipv_cap = 0x00;
  h.ext_max_adverts = 1;
  h.actrcvsz = 2064;
  return h;
}

TEST(HelloAck, Sizes) {
  EXPECT_EQ(HelloAckHeader::kSize, 24u);
  EXPECT_EQ(HelloAckHeader::kPrivateDataSize, 196u);
  EXPECT_EQ(HelloAckHeader{}.bsdh.mid, Mid::HelloAck);
  EXPECT_EQ(HelloAckHeader{}.bsdh.len, 196u);
}

TEST(HelloAck, ByteLayout) {
  const Bytes expected = {
      // 0: BSDH, len 196 = 0xC4
      0x01, 0x00, 0x00, 0x40, 0x00, 0x00, 0x00, 0xC4, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      // 16 majv_minv, 17 ipv_cap, 18 rsvd, 19 ext_max_adverts, 20 actrcvsz
      0x22, 0x00, 0x00, 0x01, 0x00, 0x00, 0x08, 0x10};
  const HelloAckHeader h = ofed_hello_ack();
  const Bytes b = bytes_of(h.to_bytes());
  ASSERT_EQ(b.size(), 24u);
  EXPECT_EQ(b, expected);
  EXPECT_EQ(HelloAckHeader::decode(expected), h);

  HelloAckHeader x = h;
  x.ipv_cap = 0x60;
  x.ext_max_adverts = 0x09;
  x.actrcvsz = 0x01020304;
  const auto bx = x.to_bytes();
  EXPECT_EQ(bx[17], 0x60);
  EXPECT_EQ(bx[18], 0x00);
  EXPECT_EQ(bx[19], 0x09);
  EXPECT_EQ(bx[20], 0x01);
  EXPECT_EQ(bx[23], 0x04);

  Bytes pd = b;
  pd.resize(196, 0x00);
  EXPECT_EQ(HelloAckHeader::decode(pd), h);
}

TEST(HelloAck, Errors) {
  const Bytes full = bytes_of(ofed_hello_ack().to_bytes());
  expect_protocol_error([&] { HelloAckHeader::decode(std::span(full).first(20)); },
                        "HAH: 20 bytes, need 24");
  Bytes b = full;
  b[0] = 0x00;
  expect_protocol_error([&] { HelloAckHeader::decode(b); },
                        "HAH: MID Hello (0x00), expected HelloAck");
  b = full;
  b[7] = 16;
  expect_protocol_error([&] { HelloAckHeader::decode(b); },
                        "HAH: len 16 shorter than the 24-byte HelloAck header");
}

// ---- ChRcvBuf / ChRcvBufAck ----

TEST(ChRcvBuf, ByteLayout) {
  ChRcvBufHeader h;
  h.bsdh = Bsdh{.mid = Mid::ChRcvBufAck, .bufs = 62, .len = 20, .mseq = 0x12345678,
                .mseq_ack = 0x9ABCDEF0};
  h.size = 32768;
  const Bytes expected = {0x0C, 0x00, 0x00, 0x3E, 0x00, 0x00, 0x00, 0x14, 0x12, 0x34,
                          0x56, 0x78, 0x9A, 0xBC, 0xDE, 0xF0, 0x00, 0x00, 0x80, 0x00};
  EXPECT_EQ(bytes_of(h.to_bytes()), expected);
  EXPECT_EQ(ChRcvBufHeader::decode(expected), h);

  ChRcvBufHeader req;  // defaults: ChRcvBuf, len 20
  req.size = 0x00010000;
  const Bytes req_expected = {0x0B, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00,
                              0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00};
  EXPECT_EQ(bytes_of(req.to_bytes()), req_expected);
  EXPECT_EQ(ChRcvBufHeader::decode(req_expected), req);
  EXPECT_EQ(ChRcvBufHeader::kSize, 20u);
}

TEST(ChRcvBuf, Errors) {
  const Bytes full = bytes_of(ChRcvBufHeader{}.to_bytes());
  expect_protocol_error([&] { ChRcvBufHeader::decode(std::span(full).first(16)); },
                        "CRBH: 16 bytes, need 20");
  Bytes b = full;
  b[0] = 0xFF;
  expect_protocol_error([&] { ChRcvBufHeader::decode(b); },
                        "CRBH: MID Data (0xFF), expected ChRcvBuf or ChRcvBufAck");
  b = full;
  b[7] = 16;
  expect_protocol_error([&] { ChRcvBufHeader::decode(b); },
                        "CRBH: len 16 shorter than the 20-byte ChRcvBuf message");
}

TEST(IpField, Ipv4) {
  const IpField f = ipv4_field(0x0A000001);  // 10.0.0.1
  const IpField expected = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0A, 0x00, 0x00, 0x01};
  EXPECT_EQ(f, expected);
}

}  // namespace
}  // namespace hcasim::sdp
