// SDP wire headers (see bsdh.h for the layouts and their sources).
#include "sdp/bsdh.h"

#include "sdp/be.h"

#include <algorithm>
#include <cstdio>

namespace hcasim::sdp {

namespace {

using be::get16;
using be::get32;
using be::put16;
using be::put32;

std::string hex2(unsigned v) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02X", v & 0xFFu);
  return buf;
}

/// "Data (0xFF)"
std::string mid_text(Mid mid) {
  return std::string(mid_name(mid)) + " (" + hex2(static_cast<unsigned>(mid)) + ")";
}

/// Checks the size of `in`, decodes its BSDH and checks the BSDH len against the header size.
Bsdh decode_prefix(std::span<const uint8_t> in, const char* header, size_t size) {
  if (in.size() < size)
    throw ProtocolError(std::string(header) + ": " + std::to_string(in.size()) +
                        " bytes, need " + std::to_string(size));
  return Bsdh::decode(in);
}

void check_header_len(const Bsdh& h, const char* header, size_t size, const char* what) {
  if (h.len < size)
    throw ProtocolError(std::string(header) + ": len " + std::to_string(h.len) +
                        " shorter than the " + std::to_string(size) + "-byte " + what);
}

}  // namespace

const char* mid_name(Mid mid) {
  switch (mid) {
    case Mid::Hello: return "Hello";
    case Mid::HelloAck: return "HelloAck";
    case Mid::DisConn: return "DisConn";
    case Mid::AbortConn: return "AbortConn";
    case Mid::SendSM: return "SendSM";
    case Mid::RdmaWrCompl: return "RdmaWrCompl";
    case Mid::RdmaRdCompl: return "RdmaRdCompl";
    case Mid::ModeChange: return "ModeChange";
    case Mid::SrcAvailCancel: return "SrcAvailCancel";
    case Mid::SinkAvailCancel: return "SinkAvailCancel";
    case Mid::SinkCancelAck: return "SinkCancelAck";
    case Mid::ChRcvBuf: return "ChRcvBuf";
    case Mid::ChRcvBufAck: return "ChRcvBufAck";
    case Mid::SuspComm: return "SuspComm";
    case Mid::SuspCommAck: return "SuspCommAck";
    case Mid::SinkAvail: return "SinkAvail";
    case Mid::SrcAvail: return "SrcAvail";
    case Mid::Data: return "Data";
  }
  return "unknown";
}

bool is_known_mid(uint8_t mid) { return mid <= 0x0E || mid >= 0xFD; }

// ---- BSDH ----

void Bsdh::encode(std::span<uint8_t, kSize> out) const {
  uint8_t* p = out.data();
  p[0] = static_cast<uint8_t>(mid);
  p[1] = flags;
  put16(p + 2, bufs);
  put32(p + 4, len);
  put32(p + 8, mseq);
  put32(p + 12, mseq_ack);
}

std::array<uint8_t, Bsdh::kSize> Bsdh::to_bytes() const {
  std::array<uint8_t, kSize> out{};
  encode(out);
  return out;
}

Bsdh Bsdh::decode(std::span<const uint8_t> in) {
  if (in.size() < kSize)
    throw ProtocolError("BSDH: " + std::to_string(in.size()) + " bytes, need " +
                        std::to_string(kSize));
  const uint8_t* p = in.data();
  if (!is_known_mid(p[0])) throw ProtocolError("BSDH: unknown MID " + hex2(p[0]));
  Bsdh h;
  h.mid = static_cast<Mid>(p[0]);
  h.flags = p[1];
  h.bufs = get16(p + 2);
  h.len = get32(p + 4);
  h.mseq = get32(p + 8);
  h.mseq_ack = get32(p + 12);
  if (h.len < kSize)
    throw ProtocolError("BSDH: len " + std::to_string(h.len) + " shorter than the " +
                        std::to_string(kSize) + "-byte header");
  return h;
}

void Bsdh::check_len(size_t received) const {
  if (len != received)
    throw ProtocolError("BSDH: len " + std::to_string(len) + " but " + std::to_string(received) +
                        " bytes received");
}

IpField ipv4_field(uint32_t addr) {
  IpField f{};
  put32(f.data() + 12, addr);
  return f;
}

// ---- Hello ----

void HelloHeader::encode(std::span<uint8_t, kSize> out) const {
  std::fill(out.begin(), out.end(), uint8_t{0});
  uint8_t* p = out.data();
  bsdh.encode(out.first<Bsdh::kSize>());
  p[16] = majv_minv;
  p[17] = ipv_cap;
  p[19] = max_adverts;
  put32(p + 20, desremrcvsz);
  put32(p + 24, localrcvsz);
  put16(p + 28, port);
  std::copy(src_addr.begin(), src_addr.end(), p + 32);
  std::copy(dst_addr.begin(), dst_addr.end(), p + 48);
}

std::array<uint8_t, HelloHeader::kSize> HelloHeader::to_bytes() const {
  std::array<uint8_t, kSize> out{};
  encode(out);
  return out;
}

HelloHeader HelloHeader::decode(std::span<const uint8_t> in) {
  HelloHeader h;
  h.bsdh = decode_prefix(in, "HH", kSize);
  if (h.bsdh.mid != Mid::Hello)
    throw ProtocolError("HH: MID " + mid_text(h.bsdh.mid) + ", expected Hello");
  check_header_len(h.bsdh, "HH", kSize, "Hello header");
  const uint8_t* p = in.data();
  h.majv_minv = p[16];
  h.ipv_cap = p[17];
  h.max_adverts = p[19];
  h.desremrcvsz = get32(p + 20);
  h.localrcvsz = get32(p + 24);
  h.port = get16(p + 28);
  std::copy(p + 32, p + 48, h.src_addr.begin());
  std::copy(p + 48, p + 64, h.dst_addr.begin());
  return h;
}

// ---- HelloAck ----

void HelloAckHeader::encode(std::span<uint8_t, kSize> out) const {
  std::fill(out.begin(), out.end(), uint8_t{0});
  uint8_t* p = out.data();
  bsdh.encode(out.first<Bsdh::kSize>());
  p[16] = majv_minv;
  p[17] = ipv_cap;
  p[19] = ext_max_adverts;
  put32(p + 20, actrcvsz);
}

std::array<uint8_t, HelloAckHeader::kSize> HelloAckHeader::to_bytes() const {
  std::array<uint8_t, kSize> out{};
  encode(out);
  return out;
}

HelloAckHeader HelloAckHeader::decode(std::span<const uint8_t> in) {
  HelloAckHeader h;
  h.bsdh = decode_prefix(in, "HAH", kSize);
  if (h.bsdh.mid != Mid::HelloAck)
    throw ProtocolError("HAH: MID " + mid_text(h.bsdh.mid) + ", expected HelloAck");
  check_header_len(h.bsdh, "HAH", kSize, "HelloAck header");
  const uint8_t* p = in.data();
  h.majv_minv = p[16];
  h.ipv_cap = p[17];
  h.ext_max_adverts = p[19];
  h.actrcvsz = get32(p + 20);
  return h;
}

// ---- ChRcvBuf / ChRcvBufAck ----

void ChRcvBufHeader::encode(std::span<uint8_t, kSize> out) const {
  bsdh.encode(out.first<Bsdh::kSize>());
  put32(out.data() + 16, size);
}

std::array<uint8_t, ChRcvBufHeader::kSize> ChRcvBufHeader::to_bytes() const {
  std::array<uint8_t, kSize> out{};
  encode(out);
  return out;
}

ChRcvBufHeader ChRcvBufHeader::decode(std::span<const uint8_t> in) {
  ChRcvBufHeader h;
  h.bsdh = decode_prefix(in, "CRBH", kSize);
  if (h.bsdh.mid != Mid::ChRcvBuf && h.bsdh.mid != Mid::ChRcvBufAck)
    throw ProtocolError("CRBH: MID " + mid_text(h.bsdh.mid) + ", expected ChRcvBuf or ChRcvBufAck");
  check_header_len(h.bsdh, "CRBH", kSize, "ChRcvBuf message");
  h.size = get32(in.data() + 16);
  return h;
}

}  // namespace hcasim::sdp
