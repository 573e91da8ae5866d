#include "emu/auth.h"

#include <sodium.h>

#include <cstring>
#include <string_view>
#include <vector>

#include "sdp/be.h"
#include "sdp/device.h"

namespace hcasim::emu {

namespace be = sdp::be;

namespace {

// Each message's MAC starts with a label of its own, so that no MAC of one kind is accepted as
// another (the acceptor's proof is not the connector's answer sent back).
constexpr std::string_view kReqLabel = "hcasim stream req";
constexpr std::string_view kRepLabel = "hcasim stream rep";
constexpr std::string_view kDatagramLabel = "hcasim datagram";

static_assert(kSecretSize == crypto_auth_hmacsha256_KEYBYTES);
static_assert(kMacSize == crypto_auth_hmacsha256_BYTES);

using Fields = std::array<uint8_t, kReqFieldsSize>;

Fields fields_of(const StreamReq& r) {
  Fields f{};
  be::put32(f.data(), r.dest_qpn);
  be::put16(f.data() + 4, r.slid);
  be::put32(f.data() + 8, r.src_qpn);
  be::put32(f.data() + 12, r.psn);
  return f;
}

/// HMAC-SHA256 keyed with `key` over `label`, `first`, `second` and `fields`.
std::array<uint8_t, kMacSize> mac(const SubnetSecret& key, std::string_view label, const Nonce& first,
                                  const Nonce& second, const Fields& fields) {
  crypto_auth_hmacsha256_state st;
  crypto_auth_hmacsha256_init(&st, key.data(), key.size());
  crypto_auth_hmacsha256_update(&st, reinterpret_cast<const unsigned char*>(label.data()), label.size());
  crypto_auth_hmacsha256_update(&st, first.data(), first.size());
  crypto_auth_hmacsha256_update(&st, second.data(), second.size());
  crypto_auth_hmacsha256_update(&st, fields.data(), fields.size());
  std::array<uint8_t, kMacSize> out{};
  crypto_auth_hmacsha256_final(&st, out.data());
  sodium_memzero(&st, sizeof st);
  return out;
}

}  // namespace

void auth_init() {
  if (sodium_init() < 0) throw sdp::DeviceError("emulated port: libsodium cannot be initialised (no randomness?)");
}

Nonce make_nonce() {
  Nonce n{};
  randombytes_buf(n.data(), n.size());
  return n;
}

Answer make_answer(const SubnetSecret& key, const Challenge& challenge, const Nonce& mine, const StreamReq& req) {
  const Fields f = fields_of(req);
  const auto m = mac(key, kReqLabel, challenge, mine, f);
  Answer a{};
  std::memcpy(a.data(), mine.data(), kNonceSize);
  std::memcpy(a.data() + kNonceSize, f.data(), f.size());
  std::memcpy(a.data() + kNonceSize + kReqFieldsSize, m.data(), m.size());
  return a;
}

std::optional<StreamReq> check_answer(const SubnetSecret& key, const Challenge& challenge, const Answer& answer,
                                      Nonce& theirs) {
  std::memcpy(theirs.data(), answer.data(), kNonceSize);
  Fields f{};
  std::memcpy(f.data(), answer.data() + kNonceSize, f.size());
  const auto want = mac(key, kReqLabel, challenge, theirs, f);
  if (sodium_memcmp(want.data(), answer.data() + kNonceSize + kReqFieldsSize, kMacSize) != 0) return std::nullopt;
  const StreamReq r{.dest_qpn = be::get32(f.data()),
                    .slid = be::get16(f.data() + 4),
                    .src_qpn = be::get32(f.data() + 8),
                    .psn = be::get32(f.data() + 12)};
  if (r.dest_qpn > 0xFFFFFF || r.src_qpn > 0xFFFFFF || r.psn > 0xFFFFFF || be::get16(f.data() + 6) != 0)
    return std::nullopt;
  return r;
}

Proof make_proof(const SubnetSecret& key, const Challenge& challenge, const Nonce& theirs, const StreamReq& req) {
  return mac(key, kRepLabel, theirs, challenge, fields_of(req));
}

bool check_proof(const SubnetSecret& key, const Challenge& challenge, const Nonce& mine, const StreamReq& req,
                 const Proof& proof) {
  const Proof want = make_proof(key, challenge, mine, req);
  return sodium_memcmp(want.data(), proof.data(), proof.size()) == 0;
}

std::array<uint8_t, kDatagramMacSize> datagram_mac(const SubnetSecret& key, std::span<const uint8_t> frame) {
  crypto_auth_hmacsha256_state st;
  crypto_auth_hmacsha256_init(&st, key.data(), key.size());
  crypto_auth_hmacsha256_update(&st, reinterpret_cast<const unsigned char*>(kDatagramLabel.data()),
                                kDatagramLabel.size());
  crypto_auth_hmacsha256_update(&st, frame.data(), frame.size());
  std::array<uint8_t, kMacSize> full{};
  crypto_auth_hmacsha256_final(&st, full.data());
  std::array<uint8_t, kDatagramMacSize> out{};
  std::memcpy(out.data(), full.data(), out.size());
  return out;
}

bool datagram_ok(const SubnetSecret& key, std::span<const uint8_t> datagram) {
  if (datagram.size() < kDatagramMacSize) return false;
  const size_t n = datagram.size() - kDatagramMacSize;
  const auto want = datagram_mac(key, datagram.first(n));
  return sodium_memcmp(want.data(), datagram.data() + n, kDatagramMacSize) == 0;
}

}  // namespace hcasim::emu
