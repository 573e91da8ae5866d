#pragma once
/// \file The memory of a real process, for the wall-clock modes (emulate and hardware): one
/// arena of anonymous memory, reserved up front, from which the engine and the application
/// allocate. An address is the pointer's value, so an rdma-core HCA can DMA to it, and the
/// whole arena can be registered as one MR (what ib_get_dma_mr gives a kernel ULP).
#include <cstdint>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "sdp/memory.h"

namespace hcasim::sdp {

/// An arena of this process's memory; every region is real bytes (DataMode::Bytes). The SDP
/// engine never frees; a server running tests side by side frees each test's regions when it
/// ends (ArenaScope), and allocation takes the first gap that fits.
class ProcessMemory final : public Memory {
 public:
  /// Reserves `capacity` bytes (mmap, anonymous, private). Throws MemoryError when the
  /// system refuses.
  explicit ProcessMemory(uint64_t capacity);
  ~ProcessMemory() override;
  ProcessMemory(const ProcessMemory&) = delete;
  ProcessMemory& operator=(const ProcessMemory&) = delete;

  DataMode data_mode() const override { return DataMode::Bytes; }
  /// Throws MemoryError naming the request when the arena is exhausted.
  Addr allocate(uint64_t len, DataMode mode, uint64_t align = 4096) override;
  bool contains(Addr addr, uint64_t len) const override;
  void write_bytes(Addr addr, const uint8_t* data, uint64_t len) override;
  void read_bytes(Addr addr, uint8_t* out, uint64_t len) const override;
  void copy_local(Addr dst, Addr src, uint64_t len) override;

  /// The bytes of [addr, addr+len) for a DMA; throws MemoryError unless they lie inside one
  /// allocated region.
  uint8_t* bytes(Addr addr, uint64_t len);
  const uint8_t* bytes(Addr addr, uint64_t len) const;
  /// Bytes allocated so far (a mark for release_to).
  uint64_t used() const { return used_; }
  /// Frees every region allocated after the mark `used` (a server between two tests). The
  /// caller guarantees that no MR (other than one over the whole arena) and no queued work
  /// still refers to them.
  void release_to(uint64_t used);
  /// Frees the region allocated at `base` (nothing when there is none). The caller guarantees
  /// that no MR other than one over the whole arena and no queued work still refers to it.
  void free(Addr base);
  /// First byte and size of the whole arena (bytes), for registering it as one MR.
  uint8_t* arena() { return arena_; }
  uint64_t capacity() const { return capacity_; }

 private:
  uint8_t* arena_ = nullptr;
  uint64_t capacity_ = 0;
  uint64_t used_ = 0;
  std::map<Addr, uint64_t> regions_;  // base -> length
  mutable std::shared_mutex regions_lock_;
};

/// One user's allocations from a shared ProcessMemory (one test of a server serving tests side
/// by side): a Memory that allocates from the arena, remembers what it allocated, and frees all
/// of it when destroyed. Reads, writes and checks go to the whole arena.
class ArenaScope final : public Memory {
 public:
  explicit ArenaScope(ProcessMemory& arena) : arena_(arena) {}
  /// Frees every region allocated through this scope.
  ~ArenaScope() override;
  ArenaScope(const ArenaScope&) = delete;
  ArenaScope& operator=(const ArenaScope&) = delete;

  DataMode data_mode() const override { return DataMode::Bytes; }
  /// ProcessMemory::allocate, remembered for the destructor.
  Addr allocate(uint64_t len, DataMode mode, uint64_t align = 4096) override;
  bool contains(Addr addr, uint64_t len) const override { return arena_.contains(addr, len); }
  void write_bytes(Addr addr, const uint8_t* data, uint64_t len) override { arena_.write_bytes(addr, data, len); }
  void read_bytes(Addr addr, uint8_t* out, uint64_t len) const override { arena_.read_bytes(addr, out, len); }
  void copy_local(Addr dst, Addr src, uint64_t len) override { arena_.copy_local(dst, src, len); }
  /// The arena, for direct access to the bytes (ProcessMemory::bytes).
  ProcessMemory& arena() { return arena_; }

 private:
  ProcessMemory& arena_;
  std::mutex lock_;
  std::vector<Addr> mine_;
};

}  // namespace hcasim::sdp
