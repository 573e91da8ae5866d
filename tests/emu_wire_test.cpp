// The emulated HCA's frames (emu/wire.h): round trips and malformed input.
#include <gtest/gtest.h>

#include <zlib.h>

#include "emu/wire.h"

using namespace hcasim::emu;

namespace {
std::span<const uint8_t> body_of(const std::vector<uint8_t>& frame) {
  return std::span<const uint8_t>(frame).subspan(kLengthSize);
}
/// `body` with its ICRC appended (big-endian CRC-32 of the bytes).
std::vector<uint8_t> with_icrc(std::vector<uint8_t> body) {
  const uint32_t c = static_cast<uint32_t>(::crc32(0, body.data(), static_cast<uInt>(body.size())));
  for (int s = 24; s >= 0; s -= 8) body.push_back(static_cast<uint8_t>(c >> s));
  return body;
}
/// decode's message for `fields` (a body without its ICRC, which is appended).
std::string decode_error(std::vector<uint8_t> fields) {
  const std::vector<uint8_t> body = with_icrc(std::move(fields));
  EXPECT_TRUE(icrc_ok(body));
  try {
    decode(body);
  } catch (const WireError& e) {
    return e.what();
  }
  return "(decoded)";
}
}  // namespace

TEST(EmuWire, RdmaWriteRoundTripsWithItsRethAndLengthField) {
  Packet p{.op = Op::RdmaWriteOnly, .dest_qpn = 0x48, .psn = 0xABCDEF, .va = 0x7F0000001000, .rkey = 0x101};
  p.payload = {1, 2, 3, 4, 5};
  p.dma_len = 5;
  const auto f = encode(p);
  // 4 (length) + 12 (header) + 16 (RETH) + 5 (payload) + 4 (ICRC) bytes; the length field counts 37.
  ASSERT_EQ(f.size(), 41u);
  EXPECT_EQ(decode_length(std::span<const uint8_t, kLengthSize>(f.data(), kLengthSize)), 37u);
  EXPECT_TRUE(icrc_ok(body_of(f)));
  EXPECT_EQ(std::vector<uint8_t>(f.begin() + 4, f.end()), with_icrc({f.begin() + 4, f.end() - 4}));
  EXPECT_EQ(f[4], 0x0A);  // BTH OpCode of RC RDMA WRITE Only
  const Packet q = decode(body_of(f));
  EXPECT_EQ(q.op, Op::RdmaWriteOnly);
  EXPECT_EQ(q.dest_qpn, 0x48u);
  EXPECT_EQ(q.psn, 0xABCDEFu);
  EXPECT_EQ(q.va, 0x7F0000001000u);
  EXPECT_EQ(q.rkey, 0x101u);
  EXPECT_EQ(q.dma_len, 5u);
  EXPECT_EQ(q.payload, p.payload);
}

// SEND Last / Only with Invalidate (BTH OpCode 0x16 / 0x17, IBA 9.2.1 table 38) carry the IETH,
// the 4-byte R_Key to invalidate (IBA 9.3, the Invalidate ETH), between the BTH and the
// payload; SEND First and Middle carry none.
TEST(EmuWire, SendWithInvalidateCarriesTheIethRkey) {
  for (Op op : {Op::SendOnlyWithInvalidate, Op::SendLastWithInvalidate}) {
    Packet p{.op = op, .dest_qpn = 0x48, .psn = 9, .ieth_rkey = 0x1234A7};
    p.payload = {7, 8, 9};
    const auto f = encode(p);
    // 4 (length) + 12 (header) + 4 (IETH) + 3 (payload) + 4 (ICRC).
    ASSERT_EQ(f.size(), 27u);
    EXPECT_EQ(f[4], op == Op::SendOnlyWithInvalidate ? 0x17 : 0x16);
    EXPECT_EQ(f[16], 0x00);
    EXPECT_EQ(f[17], 0x12);
    EXPECT_EQ(f[18], 0x34);
    EXPECT_EQ(f[19], 0xA7);
    EXPECT_EQ(f[20], 7);
    const Packet q = decode(body_of(f));
    EXPECT_EQ(q.op, op);
    EXPECT_EQ(q.ieth_rkey, 0x1234A7u);
    EXPECT_EQ(q.payload, p.payload);
  }
  EXPECT_STREQ(op_name(Op::SendOnlyWithInvalidate), "SEND Only with Invalidate");
  // The IETH of a SEND Only with Invalidate cut short: 2 of its 4 bytes.
  EXPECT_NE(decode_error({0x17, 0, 0xFF, 0xFF, 0, 0, 0, 1, 0, 0, 0, 1, 0x12, 0x34}).find("SEND Only with Invalidate"),
            std::string::npos);
  // 0x15 is reserved on RC: not a frame.
  EXPECT_NE(decode_error({0x15, 0, 0xFF, 0xFF, 0, 0, 0, 1, 0, 0, 0, 1}).find("unknown op 0x15"), std::string::npos);
}

TEST(EmuWire, AckCarriesItsSyndromeAndMsn) {
  const auto f = encode(Packet{.op = Op::Acknowledge, .dest_qpn = 1, .psn = 7, .syndrome = aeth::kNakRemAccess, .msn = 7});
  // AETH = syndrome << 24 | MSN: 0x62 then 0x000007.
  ASSERT_EQ(f.size(), 4u + 12u + 4u + 4u);
  EXPECT_EQ(f[16], 0x62);
  EXPECT_EQ(f[19], 0x07);
  const Packet q = decode(body_of(f));
  EXPECT_EQ(q.syndrome, aeth::kNakRemAccess);
  EXPECT_EQ(q.msn, 7u);
}

TEST(EmuWire, TransportPacketsCarryTheBthPkeyAndCmMessagesNone) {
  // IBA 9.2: the BTH's bytes 2-3 are the P_Key, big-endian: frame bytes 6 and 7.
  const auto f = encode(Packet{.op = Op::SendOnly, .dest_qpn = 0x48, .pkey = 0x8001});
  EXPECT_EQ(f[6], 0x80);
  EXPECT_EQ(f[7], 0x01);
  EXPECT_EQ(decode(body_of(f)).pkey, 0x8001u);
  // Any P_Key decodes, the invalid 0 too: the receiving QP's check drops it (IBA 10.9.4).
  const auto zero = encode(Packet{.op = Op::Acknowledge, .dest_qpn = 0x48, .pkey = 0});
  EXPECT_EQ(decode(body_of(zero)).pkey, 0u);
  // A CM message has no BTH: those bytes are reserved there.
  EXPECT_EQ(decode_error({0xC4, 0, 0xFF, 0xFF, 0, 0, 0, 0x48, 0, 0, 0, 0}), "CM DREQ: reserved bits set");
  EXPECT_THROW(encode(Packet{.op = Op::CmDreq, .pkey = 0xFFFF}), WireError);
}

TEST(EmuWire, CmReqKeepsPrivateDataUpToTheCmLimit) {
  Packet p{.op = Op::CmReq, .local_qpn = 0x49};
  p.payload.assign(kReqPrivateData, 0xAB);
  const Packet q = decode(body_of(encode(p)));
  EXPECT_EQ(q.local_qpn, 0x49u);
  EXPECT_EQ(q.payload.size(), 92u);  // IBA 12.6: REQ private data is 92 bytes
  p.payload.push_back(0);
  EXPECT_THROW(encode(p), WireError);
}

TEST(EmuWire, MalformedFramesAreNamed) {
  EXPECT_EQ(decode_error({0x04, 0, 0}), "frame of 7 bytes is shorter than the 16 byte header and ICRC");
  EXPECT_EQ(decode_error({0x99, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}), "unknown op 0x99");
  EXPECT_EQ(decode_error({0x11, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0x1F, 0, 0, 0}), "Acknowledge: reserved bits set");
  // An ACK without its AETH.
  EXPECT_EQ(decode_error({0x11, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0}), "Acknowledge: 12 bytes, its headers need 16");
  // An ACK with a payload.
  EXPECT_EQ(decode_error({0x11, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0x1F, 0, 0, 0, 9}),
            "Acknowledge: 1 payload bytes, at most 0 allowed");
  // RDMA WRITE whose RETH says 8 bytes but carries 1.
  std::vector<uint8_t> w = {0x0A, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0};
  w.resize(12 + 16, 0);
  w[12 + 15] = 8;
  w.push_back(0xEE);
  EXPECT_EQ(decode_error(w), "RDMA WRITE Only: RETH length 8 but 1 payload bytes");
  // A CM REP whose private data length disagrees with what follows.
  EXPECT_EQ(decode_error({0xC1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0x48, 0, 1, 0, 5, 1}),
            "CM REP: private data length 5 but 1 bytes follow");
  // A CM REQ whose QPN uses the reserved top byte (found by fuzz_emu_wire).
  EXPECT_EQ(decode_error({0xC0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0, 0, 0x48, 0, 1, 0, 0}),
            "CM REQ: QPN 0x80000048 over 24 bits");
  // A SIDR_REQ with a status (only a SIDR_REP has one).
  EXPECT_EQ(decode_error({0xC5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x01, 0, 0, 0x48, 0, 0, 0, 0, 0, 1, 0, 0}),
            "CM SIDR_REQ: reserved bits set");
}

// IBA 12.11: SIDR_REQ carries the requester's QPN and port LID and up to 216 bytes of private
// data; SIDR_REP its status, the listener's QPN, Q_Key and port LID, up to 136 bytes.
TEST(EmuWire, SidrMessagesKeepTheirFields) {
  Packet req{.op = Op::CmSidrReq, .local_qpn = 0x4A, .slid = 3, .payload = std::vector<uint8_t>(216, 0x5A)};
  const auto f = encode(req);
  EXPECT_EQ(f.size(), 4u + 12u + 12u + 216u + 4u);
  const Packet q = decode(std::span<const uint8_t>(f).subspan(kLengthSize));
  EXPECT_EQ(q.op, Op::CmSidrReq);
  EXPECT_EQ(q.local_qpn, 0x4Au);
  EXPECT_EQ(q.slid, 3);
  EXPECT_EQ(q.payload, std::vector<uint8_t>(216, 0x5A));
  req.payload.push_back(0);
  EXPECT_THROW(encode(req), WireError);
  const Packet rep{.op = Op::CmSidrRep, .local_qpn = 0x4B, .qkey = 0x01234567, .slid = 2, .status = 2,
                   .payload = std::vector<uint8_t>(136, 0xA5)};
  const auto g = encode(rep);
  const Packet r = decode(std::span<const uint8_t>(g).subspan(kLengthSize));
  EXPECT_EQ(r.op, Op::CmSidrRep);
  EXPECT_EQ(r.status, 2);
  EXPECT_EQ(r.local_qpn, 0x4Bu);
  EXPECT_EQ(r.qkey, 0x01234567u);
  EXPECT_EQ(r.slid, 2);
  EXPECT_EQ(r.payload.size(), 136u);
  Packet big = rep;
  big.payload.push_back(0);
  EXPECT_THROW(encode(big), WireError);
}

// A multicast UD send carries its DLID (the group's MLID) beside the SLID, so that the
// receiving port finds the group's QPs (DestQP 0xFFFFFF).
TEST(EmuWire, UdSendKeepsItsDestinationLid) {
  const Packet p{.op = Op::UdSendOnly, .dest_qpn = 0xFFFFFF, .local_qpn = 0x48, .qkey = 0x01234567, .slid = 1,
                 .dlid = 0xC123, .payload = {1, 2, 3}};
  const auto f = encode(p);
  const Packet q = decode(std::span<const uint8_t>(f).subspan(kLengthSize));
  EXPECT_EQ(q.dest_qpn, 0xFFFFFFu);
  EXPECT_EQ(q.dlid, 0xC123);
  EXPECT_EQ(q.slid, 1);
  EXPECT_EQ(q.qkey, 0x01234567u);
}

TEST(EmuWire, XrcRequestsCarryTheXrcethAfterTheBth) {
  // IBA 1.2.1 annex A14: XRC opcodes are 101xxxxx with RC's low bits (SEND Only 0xA4, RDMA WRITE
  // Only 0xAA, Acknowledge 0xB1); a request's XRCETH (8 reserved bits, the 24-bit XRC SRQ number)
  // follows the BTH, before the RETH.
  Packet p{.op = Op::RdmaWriteOnly, .dest_qpn = 0x49, .psn = 7, .va = 0x1000, .rkey = 0x202};
  p.xrc = true;
  p.xrc_srqn = 0xABCDEF;
  p.payload = {1, 2, 3};
  p.dma_len = 3;
  const auto f = encode(p);
  // 4 (length) + 12 (header) + 4 (XRCETH) + 16 (RETH) + 3 (payload) + 4 (ICRC).
  ASSERT_EQ(f.size(), 43u);
  EXPECT_EQ(f[4], 0xAA);
  EXPECT_EQ(std::vector<uint8_t>(f.begin() + 16, f.begin() + 20), (std::vector<uint8_t>{0, 0xAB, 0xCD, 0xEF}));
  const Packet d = decode(body_of(f));
  EXPECT_TRUE(d.xrc);
  EXPECT_EQ(d.op, Op::RdmaWriteOnly);
  EXPECT_EQ(d.xrc_srqn, 0xABCDEFu);
  EXPECT_EQ(d.va, 0x1000u);
  EXPECT_EQ(d.rkey, 0x202u);
  EXPECT_EQ(d.payload, p.payload);
  // A response carries no XRCETH: an XRC ACK is an RC ACK's size.
  Packet a{.op = Op::Acknowledge, .dest_qpn = 0x48, .psn = 7, .syndrome = 0, .msn = 1};
  a.xrc = true;
  const auto fa = encode(a);
  EXPECT_EQ(fa.size(), 4u + 12 + 4 + 4);
  EXPECT_EQ(fa[4], 0xB1);
  EXPECT_TRUE(decode(body_of(fa)).xrc);
  // Not RC's: no XRC opcode; an SRQ number over 24 bits does not fit.
  Packet u{.op = static_cast<Op>(0x24), .dest_qpn = 0x48};
  u.xrc = true;
  EXPECT_THROW(encode(u), WireError);
  Packet big{.op = Op::SendOnly, .dest_qpn = 0x48};
  big.xrc = true;
  big.xrc_srqn = 0x1000000;
  EXPECT_THROW(encode(big), WireError);
}

TEST(EmuWire, MalformedXrcFramesAreNamed) {
  // XRC SEND Only whose XRCETH has its reserved byte set; one cut short of its XRCETH; 0xB5 (RC's
  // reserved 0x15 on XRC) and 0xE4 (transport 111) are no opcode.
  EXPECT_EQ(decode_error({0xA4, 0, 0, 0, 0, 0, 0, 0x49, 0, 0, 0, 1, 0x01, 0, 0, 0x40}),
            "XRC SEND Only: XRCETH reserved bits set");
  EXPECT_EQ(decode_error({0xA4, 0, 0, 0, 0, 0, 0, 0x49, 0, 0, 0, 1, 0, 0}), "SEND Only: 14 bytes, its headers need 16");
  EXPECT_EQ(decode_error({0xB5, 0, 0, 0, 0, 0, 0, 0x49, 0, 0, 0, 1}), "unknown op 0xb5");
  EXPECT_EQ(decode_error({0xE4, 0, 0, 0, 0, 0, 0, 0x49, 0, 0, 0, 1}), "unknown op 0xe4");
}

TEST(EmuWire, LengthFieldIsBounded) {
  const std::array<uint8_t, 4> small = {0, 0, 0, 15}, least = {0, 0, 0, 16}, huge = {0x7F, 0xFF, 0xFF, 0xFF};
  EXPECT_THROW(decode_length(small), WireError);  // header + ICRC is 16 bytes
  EXPECT_EQ(decode_length(least), 16u);
  EXPECT_THROW(decode_length(huge), WireError);
}

TEST(EmuWire, AnyFlippedByteFailsTheIcrc) {
  Packet p{.op = Op::SendOnly, .dest_qpn = 0x48, .psn = 3};
  p.payload.assign(100, 0x5A);
  const auto f = encode(p);
  ASSERT_TRUE(icrc_ok(body_of(f)));
  for (size_t i = kLengthSize; i < f.size(); ++i)
    for (uint8_t bit : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xFF}}) {
      auto g = f;
      g[i] ^= bit;
      EXPECT_FALSE(icrc_ok(body_of(g))) << "byte " << i << " ^ " << int{bit};
    }
  EXPECT_FALSE(icrc_ok(std::vector<uint8_t>{1, 2, 3}));
}
