#pragma once
/// \file The CM stream's handshake (emu/cm.h) on a raw socket, as a process of this user does it:
/// it reads the subnet's secret ($HCASIM_SUBNET, emu/subnet.h), so the emulated CM of the other
/// side takes what follows. For tests that speak the emulated CM by hand to a listener of this
/// machine (cm_prove) or listen for one of its clients (cm_challenge).
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "emu/auth.h"
#include "emu/subnet.h"

namespace hcasim::testing {

/// Reads exactly `n` bytes of `fd` within 5 s; false on EOF, an error or the time.
inline bool cm_read(int fd, uint8_t* out, size_t n) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (size_t got = 0; got < n;) {
    if (std::chrono::steady_clock::now() > until) return false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const ssize_t k = ::read(fd, out + got, n - got);
    if (k <= 0) return false;
    got += static_cast<size_t>(k);
  }
  return true;
}

/// The connector's side on `fd` (connected to a listener of this machine): the challenge read,
/// the answer sent, the listener's proof checked. False when any of it fails.
inline bool cm_prove(int fd) {
  emu::auth_init();
  const emu::SubnetSecret key = emu::subnet_secret();
  emu::Challenge challenge{};
  if (!cm_read(fd, challenge.data(), challenge.size())) return false;
  const emu::Nonce mine = emu::make_nonce();
  const emu::Answer answer = emu::make_answer(key, challenge, mine, {});
  if (::write(fd, answer.data(), answer.size()) != static_cast<ssize_t>(answer.size())) return false;
  emu::Proof proof{};
  return cm_read(fd, proof.data(), proof.size()) && emu::check_proof(key, challenge, mine, {}, proof);
}

/// The listener's side on `fd` (accepted from a client of this machine): the challenge sent,
/// the answer checked, the proof sent. False when any of it fails.
inline bool cm_challenge(int fd) {
  emu::auth_init();
  const emu::SubnetSecret key = emu::subnet_secret();
  const emu::Challenge challenge = emu::make_nonce();
  if (::write(fd, challenge.data(), challenge.size()) != static_cast<ssize_t>(challenge.size())) return false;
  emu::Answer answer{};
  if (!cm_read(fd, answer.data(), answer.size())) return false;
  emu::Nonce theirs{};
  const auto req = emu::check_answer(key, challenge, answer, theirs);
  if (!req) return false;
  const emu::Proof proof = emu::make_proof(key, challenge, theirs, *req);
  return ::write(fd, proof.data(), proof.size()) == static_cast<ssize_t>(proof.size());
}

}  // namespace hcasim::testing
