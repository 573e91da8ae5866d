#pragma once
// The pure-logic half of the shim's rsockets (emu/verbs_shim/rsocket.cpp): what each SEND's
// immediate data says, the peer's receive credits, and the ring of send slots. No verbs here,
// so that tests/rsocket_flow_test.cpp checks the accounting alone.
//
// The protocol (both ends are this shim; it is not rsocket.c's wire format, but the same
// idea as librdmacm/rsocket.c's rs_send / rs_poll_cq / rs_update_credits): each side posts
// `buffers` receive buffers of one size and tells the peer both in the CM private data; every
// message is a SEND with immediate data into one such buffer, so it costs the sender one
// credit; the receiver reposts a buffer once the program has read all of it and gives the
// credit back in the immediate data of its next message, or in a message of its own (kind
// Credit) once half its buffers wait to be announced.
#include <algorithm>
#include <cstdint>

namespace hcasim::emu::shim {

/// What a message is: the top byte of its immediate data (host order).
enum class RsKind : uint8_t {
  Data = 0,     ///< stream bytes, the whole payload
  Credit = 1,   ///< no payload: credits only
  Fin = 2,      ///< the sender shut down writing (rshutdown SHUT_WR, rclose): EOF after the data
  IoMap = 3,    ///< payload RsIoMapWire: the sender's riomap(3) region, writable by riowrite
  IoUnmap = 4,  ///< payload RsIoMapWire: that region is gone (riounmap)
};

/// The immediate data of a message of kind `k` returning `credits` buffers (at most 0xffff).
constexpr uint32_t rs_imm(RsKind k, uint16_t credits) { return (static_cast<uint32_t>(k) << 24) | credits; }
/// The kind of a received immediate; an unknown kind reads as Data only if it is 0.
constexpr RsKind rs_kind(uint32_t imm) { return static_cast<RsKind>(imm >> 24); }
/// The credits a received immediate returns.
constexpr uint16_t rs_credits(uint32_t imm) { return static_cast<uint16_t>(imm & 0xffff); }

/// The payload of IoMap / IoUnmap (all fields in host order: both ends are one machine's shim).
struct RsIoMapWire {
  uint64_t offset;  ///< riomap's offset, the name riowrite uses
  uint64_t addr;    ///< the region's virtual address in the mapping process
  uint64_t length;  ///< bytes
  uint32_t rkey;
  uint32_t pad;
};

/// The private data of rdma_connect / rdma_accept: the sender's receive buffers.
struct RsHello {
  uint32_t magic;    ///< kRsMagic
  uint32_t buffers;  ///< receive buffers posted (the peer's initial credits)
  uint32_t size;     ///< bytes each; the peer's messages carry at most this
};
inline constexpr uint32_t kRsMagic = 0x68727331;  // "hrs1"

/// The credits of one direction: how many of the peer's receive buffers this side may fill
/// (`available`), and how many of its own it reposted without telling the peer yet.
/// One credit stays for messages that return credits or end the stream, so that two sides
/// that both wait for credits always have one to tell the other (SDP's rule, as rsocket.c
/// keeps its last credit for rs_give_credits).
class RsCredits {
 public:
  /// `peer_buffers`: the peer's RsHello.buffers; `local_buffers`: this side's.
  RsCredits(uint32_t peer_buffers, uint32_t local_buffers)
      : available_(peer_buffers), threshold_(std::max<uint32_t>(1, local_buffers / 2)) {}
  RsCredits() : RsCredits(0, 0) {}

  /// A Data or IoMap message may go: two credits or more.
  bool can_send_data() const { return available_ >= 2; }
  /// A Credit or Fin message may go: one credit.
  bool can_send_control() const { return available_ >= 1; }
  /// Spends a credit on a message; returns the credits it carries back (all owed, at most
  /// 0xffff). Precondition: a credit is available.
  uint16_t spend() {
    --available_;
    const auto give = static_cast<uint16_t>(std::min<uint32_t>(owed_, 0xffff));
    owed_ -= give;
    return give;
  }
  /// A message came with immediate `imm`: its returned credits become available.
  void received(uint32_t imm) { available_ += rs_credits(imm); }
  /// One of this side's buffers is posted again (its data read, or a message without data).
  void reposted() { ++owed_; }
  /// A Credit message is due: half this side's buffers or more wait to be announced, and a
  /// credit is there to send it.
  bool update_due() const { return owed_ >= threshold_ && can_send_control(); }

  uint32_t available() const { return available_; }
  uint32_t owed() const { return owed_; }

 private:
  uint32_t available_;
  uint32_t owed_ = 0;
  uint32_t threshold_;
};

/// The send slots of a QP: `count` buffers used in order, freed in order (an RC QP's send
/// completions come in posting order), each one work request's data.
class RsSlotRing {
 public:
  explicit RsSlotRing(uint32_t count = 0) : count_(count) {}
  /// A slot is free.
  bool available() const { return used_ < count_; }
  /// Takes the next slot; returns its index. Precondition: available().
  uint32_t take() {
    const uint32_t i = static_cast<uint32_t>(head_ % count_);
    ++head_;
    ++used_;
    return i;
  }
  /// The oldest slot's work request completed: it is free again. Ignored when none is used.
  void complete() {
    if (used_ > 0) --used_;
  }
  uint32_t in_use() const { return used_; }
  uint32_t count() const { return count_; }

 private:
  uint32_t count_;
  uint64_t head_ = 0;
  uint32_t used_ = 0;
};

}  // namespace hcasim::emu::shim
