#pragma once
/// \file The emulated subnet's authentication (emu/subnet.h: the secret only the subnet's owner
/// can read): a handshake that opens every QP stream between two ports, and a MAC on every UD
/// datagram. On a fabric nothing local and unprivileged can put a packet on the wire; on the
/// emulated subnet any local process can reach a port's 127.0.0.1 port number, so a stream or a
/// datagram is taken only from a process that proves it knows the secret.
///
/// Why a MAC and not the secret itself: a secret sent in clear would be handed to whatever
/// listens on the port number the connector was told, and a process of another user may listen
/// there (the port of a process that died, taken again). Each side proves it knows the key with
/// HMAC-SHA256 over both sides' fresh nonces, so what crosses the wire is worth nothing to an
/// eavesdropper or an impostor: it neither reveals the key nor can be replayed on another stream.
///
/// The stream handshake, fixed-size messages, before any frame (emu/wire.h) is read:
///
///     acceptor  -> connector   challenge  nonce_a (32 B)
///     connector -> acceptor    answer     nonce_c (32 B), the CM REQ fields (16 B: dest QPN u32,
///                                         source LID u16, 2 B zero, source QPN u32, PSN u32),
///                                         HMAC(key, "hcasim stream req" | nonce_a | nonce_c | fields)
///     acceptor  -> connector   proof      HMAC(key, "hcasim stream rep" | nonce_c | nonce_a | fields)
///
/// The acceptor hands the stream to the QP the fields name only once the answer's MAC is right;
/// the connector sends its first frame only once the proof is, so it never talks to an impostor.
/// A UD datagram is the frame followed by the first 16 bytes of HMAC(key, "hcasim datagram" |
/// frame), checked before the frame is decoded. The MACs are libsodium's
/// (crypto_auth_hmacsha256), compared in constant time.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "emu/subnet.h"

namespace hcasim::emu {

inline constexpr size_t kNonceSize = 32;
inline constexpr size_t kMacSize = 32;
/// Bytes of the CM REQ fields in the answer.
inline constexpr size_t kReqFieldsSize = 16;
inline constexpr size_t kChallengeSize = kNonceSize;
inline constexpr size_t kAnswerSize = kNonceSize + kReqFieldsSize + kMacSize;
inline constexpr size_t kProofSize = kMacSize;
/// Bytes of the MAC a UD datagram ends with.
inline constexpr size_t kDatagramMacSize = 16;
/// How long each side waits for the other's handshake message, ms: a genuine port answers at
/// once; a stranger that connects and stays idle, or sends slowly, is closed after it.
inline constexpr int kHandshakeTimeoutMs = 2000;
/// Handshakes a port holds at once: the listen backlog (emu::Hca::lid listens with 64). A new
/// stream beyond it closes the oldest one under way, so that strangers that connect and wait
/// hold at most this many descriptors, and a genuine peer, whose handshake takes microseconds,
/// still gets through a flood of them.
inline constexpr size_t kMaxHandshakes = 64;
/// How long the port waits before it accepts again when accept(2) fails for want of descriptors
/// or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM), ms: the pending connection stays in the backlog,
/// and accepting again at once would spin the I/O thread.
inline constexpr int kAcceptBackoffMs = 100;

using Nonce = std::array<uint8_t, kNonceSize>;
using Challenge = std::array<uint8_t, kChallengeSize>;
using Answer = std::array<uint8_t, kAnswerSize>;
using Proof = std::array<uint8_t, kProofSize>;

/// The CM REQ fields a connector names its stream with.
struct StreamReq {
  uint32_t dest_qpn = 0;  ///< the acceptor's QP
  uint16_t slid = 0;      ///< the connector's port
  uint32_t src_qpn = 0;   ///< the connector's QP
  uint32_t psn = 0;       ///< the connector's rq_psn
};

/// Initialises libsodium (idempotent, thread-safe). Throws sdp::DeviceError when it cannot.
void auth_init();
/// A fresh random nonce (libsodium's randombytes_buf).
Nonce make_nonce();
/// The connector's answer to `challenge`, with its own fresh nonce `mine`.
Answer make_answer(const SubnetSecret& key, const Challenge& challenge, const Nonce& mine, const StreamReq& req);
/// The acceptor's check of `answer` to its `challenge`: the fields and the connector's nonce
/// when the MAC is right (constant-time compare), else nothing. Fields out of range (a QPN over
/// 24 bits, the reserved bytes set) are refused as well.
std::optional<StreamReq> check_answer(const SubnetSecret& key, const Challenge& challenge, const Answer& answer,
                                      Nonce& theirs);
/// The acceptor's proof for a checked answer.
Proof make_proof(const SubnetSecret& key, const Challenge& challenge, const Nonce& theirs, const StreamReq& req);
/// The connector's check of the acceptor's proof (constant time).
bool check_proof(const SubnetSecret& key, const Challenge& challenge, const Nonce& mine, const StreamReq& req,
                 const Proof& proof);
/// The MAC a UD datagram carrying `frame` ends with.
std::array<uint8_t, kDatagramMacSize> datagram_mac(const SubnetSecret& key, std::span<const uint8_t> frame);
/// True when `datagram` is at least a MAC long and ends with the MAC of what precedes it
/// (constant time).
bool datagram_ok(const SubnetSecret& key, std::span<const uint8_t> datagram);

}  // namespace hcasim::emu
