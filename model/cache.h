#pragma once
/// \file Cache residency of a re-read buffer: is the source of a copy still in the cache?
///
/// A buffer read again after D other bytes went through the same cache is still resident,
/// with a random-like replacement policy, with probability about min(1, C / D), C being the
/// capacity left to such buffers (the classic working-set / random-replacement approximation;
/// Hennessy & Patterson, "Computer Architecture: A Quantitative Approach", 5.2). netperf's
/// send ring is the case at hand: each send() re-reads the buffer it sent `width` calls ago,
/// so D is the ring's size, and a ring larger than the cache streams from memory.
#include <cstdint>
#include <unordered_map>

namespace hcasim::model {

/// Reuse distances of the buffers one cache has streamed, and their resident fraction.
class ReuseCache {
 public:
  /// `capacity_bytes` = C above (>= 0; 0 = nothing ever stays resident).
  explicit ReuseCache(double capacity_bytes) : capacity_(capacity_bytes) {}

  /// Reads `bytes` at `addr` through the cache; returns the fraction (0..1) of them found
  /// resident: min(1, C / D) with D the bytes read through this cache since `addr` was last
  /// read (0 on the first read of `addr`).
  double read(uint64_t addr, uint64_t bytes);

 private:
  double capacity_;
  uint64_t streamed_ = 0;                          // bytes read through the cache so far
  std::unordered_map<uint64_t, uint64_t> last_;    // addr -> streamed_ after its last read
};

}  // namespace hcasim::model
