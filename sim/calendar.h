#pragma once
/// \file The calendar of the Scheduler (sim/kernel.h): timed events in (time, order of
/// scheduling) order, any of which can be taken off before it is due.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "sim/kernel.h"

namespace hcasim::sim {

/// A binary heap of events whose entries know their place, so that an event can be cancelled:
/// the deadline of a wait that was notified, the end of a transfer that moved to SimGrid
/// (Scheduler: a context resumed otherwise takes its pending event off). Without cancelling,
/// such void events stayed until their time: recv's busy-poll arms a 700 us deadline per SDP
/// message, about twenty void events in a bulk stream's heap, each popped and discarded when
/// due. With it the heap holds 2-3 events at a push (bcopy -m 1M, ib_write_lat).
///
/// Each event has a payload slot (what it does) that stays valid from push() until release(),
/// at a fixed address (slots live in blocks that never move), so that an event's callback can
/// run in place while it schedules others; free slots are reused, so that scheduling allocates
/// nothing once the calendar has grown.
class Calendar {
 public:
  /// A heap entry: small and trivially copied (the heap moves entries on every push and pop);
  /// what the event does is in the payload slot it names.
  /// 16 bytes: the order of scheduling and the slot share one word (the order in the high bits,
  /// so that comparing words compares orders).
  struct Event {
    double t;      ///< when, s
    uint64_t key;  ///< order of scheduling << kSlotBits | slot
    uint32_t slot() const { return static_cast<uint32_t>(key & kSlotMask); }
    /// Earlier time first; at one instant, the order of scheduling.
    bool before(const Event& o) const { return t < o.t || (t == o.t && key < o.key); }
  };
  /// Slots that can be taken at once (events pending at once): 2^kSlotBits; the order of
  /// scheduling has the other 40 bits (10^12 events).
  static constexpr unsigned kSlotBits = 24;
  static constexpr uint64_t kSlotMask = (uint64_t{1} << kSlotBits) - 1;
  /// What an event does: resume `fiber` (fn empty), or run fn (for `fiber`'s suspension `gen`,
  /// or for no context when fiber is null).
  struct Payload {
    Scheduler::Fiber* fiber = nullptr;
    uint64_t gen = 0;
    Callback fn;
  };

  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }
  /// The earliest event (the calendar must not be empty).
  const Event& top() const { return heap_.front(); }
  /// The payload of `slot`; its address does not change while the slot is taken.
  Payload& payload(uint32_t slot) { return blocks_[slot >> kBlockShift][slot & (kBlock - 1)]; }

  /// Schedules an event at t_s for `f` and `gen`, running *fn if given (moved from) or else
  /// resuming f; returns its slot.
  uint32_t push(double t_s, Scheduler::Fiber* f, uint64_t gen, Callback* fn) {
    if (free_slots_.empty()) grow();
    const uint32_t slot = free_slots_.back();
    free_slots_.pop_back();
    Payload& p = payload(slot);
    p.fiber = f;
    p.gen = gen;
    if (fn != nullptr) p.fn = std::move(*fn);  // else a resumption (a released slot's fn is empty)
    heap_.emplace_back();
    sift_up(heap_.size() - 1, Event{t_s, (seq_++ << kSlotBits) | slot});
    return slot;
  }
  /// Takes the earliest event off the heap (the calendar must not be empty); its payload slot
  /// stays taken until release().
  uint32_t pop() {
    const uint32_t slot = heap_.front().slot();
    remove_at(0);
    return slot;
  }
  /// Takes the event of `slot`, still on the heap, off before it is due and frees its slot.
  void cancel(uint32_t slot) {
    remove_at(pos_[slot]);
    release(slot);
  }
  /// Frees the slot of a popped event (its callback destroyed) for reuse.
  void release(uint32_t slot) {
    payload(slot).fn.reset();
    free_slots_.push_back(slot);
  }

 private:
  static constexpr uint32_t kBlockShift = 6, kBlock = 1u << kBlockShift;  ///< slots per block
  /// One more block of free slots, taken lowest first.
  void grow() {
    const auto first = static_cast<uint32_t>(blocks_.size()) << kBlockShift;
    if (first + kBlock > kSlotMask + 1) throw std::length_error("Calendar: more than 2^24 events pending at once");
    blocks_.push_back(std::make_unique<Payload[]>(kBlock));
    pos_.resize(pos_.size() + kBlock);
    for (uint32_t i = kBlock; i-- > 0;) free_slots_.push_back(first + i);
  }
  void place(std::size_t i, const Event& e) {
    heap_[i] = e;
    pos_[e.slot()] = static_cast<uint32_t>(i);
  }
  /// Puts `e` at hole `i` or above it.
  void sift_up(std::size_t i, const Event& e) {
    while (i > 0) {
      const std::size_t parent = (i - 1) / 2;
      if (!e.before(heap_[parent])) break;
      place(i, heap_[parent]);
      i = parent;
    }
    place(i, e);
  }
  /// Puts `e` at hole `i` or below it.
  void sift_down(std::size_t i, const Event& e) {
    const std::size_t n = heap_.size();
    for (;;) {
      std::size_t child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && heap_[child + 1].before(heap_[child])) ++child;
      if (!heap_[child].before(e)) break;
      place(i, heap_[child]);
      i = child;
    }
    place(i, e);
  }
  /// Removes the entry at index i: the last entry fills the hole, up or down from there.
  void remove_at(std::size_t i) {
    const Event last = heap_.back();
    heap_.pop_back();
    if (i == heap_.size()) return;
    if (i > 0 && last.before(heap_[(i - 1) / 2]))
      sift_up(i, last);
    else
      sift_down(i, last);
  }

  std::vector<Event> heap_;
  std::vector<std::unique_ptr<Payload[]>> blocks_;  ///< payloads by slot, kBlock per block
  std::vector<uint32_t> pos_;  ///< by slot: its entry's index in the heap
  std::vector<uint32_t> free_slots_;
  uint64_t seq_ = 0;
};

}  // namespace hcasim::sim
