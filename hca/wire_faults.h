#pragma once
/// \file Faults on one direction of a wire, packet by packet (model/fault.h): the one injector of
/// both backends, so that a fault does the same to the simulated HCA's trains as to the emulated
/// HCA's frames, and the transport (hca/queue_pair.h) recovers from it with the same code.
///
/// Each packet a train carries meets one fate, drawn in PSN order: delivered; lost; corrupted (it
/// arrives, its ICRC fails and the receiver drops it, IBA 7.8.1); duplicated (it arrives twice);
/// reordered (it arrives after the packet sent next; one packet is held at a time, a second
/// reordered one while one is held goes in order). A packet held with nothing sent behind it is
/// the backend's to release after kReorderHoldNs (release()).
#include <cstdint>
#include <optional>
#include <utility>

#include "hca/packet.h"
#include "model/fault.h"

namespace hcasim::hca {

/// How long a reordered packet with nothing sent behind it waits before it goes anyway, ns (well
/// under the smallest useful local ACK timeout, 4.096 us x 2^4 = 65.5 us).
inline constexpr double kReorderHoldNs = 20000;

/// The injector of one wire direction; `H` is the backend's handle on a train's payload (a frame's
/// bytes in emu/, the sender's buffers in sim/), kept with a held packet.
template <class H>
class WireFaults {
 public:
  /// Fates of `config`, from the stream `stream` (one per QP and direction: model::FaultDraw).
  WireFaults(const model::FaultConfig& config, uint64_t stream) : draw_(config, stream), on_(config.any()) {}
  /// True when any fault is configured (else transmit delivers every train whole, drawing nothing).
  bool active() const { return on_; }
  /// Puts train `p` (payload `h`, path MTU `mtu`) on the wire: calls arrive(sub, corrupted, h,
  /// skip) for what reaches the far end, in arrival order: `sub` a train of consecutive packets of
  /// `p` (packet_slice) whose payload is `skip` bytes into `h`'s, `corrupted` when its ICRC fails.
  template <class Arrive>
  void transmit(const Packet& p, const H& h, uint32_t mtu, Arrive&& arrive) {
    if (!on_) {
      stats_.packets += p.npkts;
      arrive(p, false, h, 0);
      return;
    }
    uint32_t run = 0;  // first packet of the run of delivered packets not yet handed over
    auto flush = [&](uint32_t end) {
      if (end > run) arrive(packet_slice(p, run, end, mtu), false, h, static_cast<uint64_t>(run) * mtu);
    };
    for (uint32_t k = 0; k < p.npkts; ++k) {
      ++stats_.packets;
      const model::Fate f = draw_.next();
      const bool release_after = held_.has_value();  // a held packet arrives after this one
      switch (f) {
        case model::Fate::Deliver: break;
        case model::Fate::Lose:
          ++stats_.lost;
          flush(k);
          run = k + 1;
          break;
        case model::Fate::Corrupt:
          ++stats_.corrupted;
          flush(k);
          arrive(packet_slice(p, k, k + 1, mtu), true, h, static_cast<uint64_t>(k) * mtu);
          run = k + 1;
          break;
        case model::Fate::Duplicate:
          ++stats_.duplicated;
          flush(k + 1);
          arrive(packet_slice(p, k, k + 1, mtu), false, h, static_cast<uint64_t>(k) * mtu);
          run = k + 1;
          break;
        case model::Fate::Reorder:
          if (held_) break;  // one held at a time: this one goes in order
          ++stats_.reordered;
          flush(k);
          held_.emplace(packet_slice(p, k, k + 1, mtu), std::make_pair(h, static_cast<uint64_t>(k) * mtu));
          run = k + 1;
          continue;  // nothing was sent behind the held packet yet
      }
      if (release_after) {
        flush(k + 1);
        run = k + 1;
        release(arrive);
      }
    }
    flush(p.npkts);
  }
  /// True while a reordered packet waits for one sent behind it.
  bool holding() const { return held_.has_value(); }
  /// The held packet arrives now (the backend's hold timer ran out, or the wire closes).
  template <class Arrive>
  void release(Arrive&& arrive) {
    if (!held_) return;
    auto h = std::move(*held_);
    held_.reset();
    arrive(h.first, false, h.second.first, h.second.second);
  }
  /// Drops a held packet (the QP went to ERROR).
  void discard() { held_.reset(); }
  /// What the faults did so far: packets, lost, corrupted, duplicated, reordered.
  const model::FaultStats& stats() const { return stats_; }

 private:
  model::FaultDraw draw_;
  bool on_;
  model::FaultStats stats_;
  std::optional<std::pair<Packet, std::pair<H, uint64_t>>> held_;
};

}  // namespace hcasim::hca
