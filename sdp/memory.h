#pragma once
/// \file Host memory as the SDP engine and the emulated HCA see it: regions at addresses,
/// holding either real bytes or, by reference, descriptors of a byte stream.
///
/// Simulating a 10 Gbit/s stream for 60 s moves 75 GB; copying them for real would cost more
/// wall-clock time than the whole simulation. A region in Reference mode therefore records,
/// for each byte range, which offset of the application's data stream it holds (a rope of
/// segments); copies and DMA move segments, and the receiver checks that the offsets it gets are
/// the ones the sender wrote. In Bytes mode (--verify-data) real bytes of a seeded pattern move
/// and are compared. Protocol headers (BSDH) always live in Bytes regions.
#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "model/error.h"

namespace hcasim::sdp {

using Addr = uint64_t;

/// How a region holds its content.
enum class DataMode : uint8_t { Bytes, Reference };

/// A memory access outside any region or across two, a mode mismatch: a programming or
/// protocol error (the HCA turns it into a completion error).
class MemoryError : public std::runtime_error {
 public:
  explicit MemoryError(const std::string& what) : std::runtime_error(what) {}
};

/// What the SDP engine asks of a host's memory. Two implementations: HostMemory (simulate
/// mode: addresses in a simulated space, data by reference or as bytes) and ProcessMemory
/// (emulate and hardware modes: an arena of this process's real memory, addresses being
/// pointers, so that an rdma-core HCA can DMA to them).
class Memory {
 public:
  virtual ~Memory() = default;
  /// How data buffers of this host hold their content.
  virtual DataMode data_mode() const = 0;
  /// Allocates `len` bytes aligned to `align` (a power of two) in a fresh region; `mode` is
  /// how the region holds its content (ProcessMemory holds everything as bytes). Throws
  /// MemoryError when the memory is exhausted.
  virtual Addr allocate(uint64_t len, DataMode mode, uint64_t align = 4096) = 0;
  /// True when [addr, addr+len) lies inside one region.
  virtual bool contains(Addr addr, uint64_t len) const = 0;
  /// Writes raw bytes (headers) at addr. Throws MemoryError outside a region.
  virtual void write_bytes(Addr addr, const uint8_t* data, uint64_t len) = 0;
  /// Reads raw bytes at addr. Throws MemoryError outside a region.
  virtual void read_bytes(Addr addr, uint8_t* out, uint64_t len) const = 0;
  /// A CPU copy of len bytes from src to dst, both in this memory (copy_from_user,
  /// copy_to_user, memcpy). Throws MemoryError outside a region.
  virtual void copy_local(Addr dst, Addr src, uint64_t len) = 0;
};

/// The memory of one simulated host.
class HostMemory final : public Memory {
 public:
  /// `seed` selects the byte pattern of the data stream (Bytes mode); `data_mode` is how
  /// data buffers (application and SDP payload buffers) hold their content.
  HostMemory(int host_id, uint64_t seed, DataMode data_mode = DataMode::Reference);
  /// Not copyable: the page cache points into this object's regions.
  HostMemory(const HostMemory&) = delete;
  HostMemory& operator=(const HostMemory&) = delete;
  /// How data buffers of this host hold their content (Reference, or Bytes with --verify-data).
  DataMode data_mode() const override { return data_mode_; }

  /// Allocates `len` bytes aligned to `align` (a power of two) in a fresh region.
  /// Addresses of different hosts never overlap (host_id is in the top bits), which makes a
  /// DMA to the wrong host's address an error rather than a silent hit.
  Addr allocate(uint64_t len, DataMode mode, uint64_t align = 4096) override;
  /// True when [addr, addr+len) lies inside one region.
  bool contains(Addr addr, uint64_t len) const override;

  /// Writes the data stream bytes [stream_off, stream_off+len) at addr (the application
  /// filling its send buffer; costs no simulated time).
  void write_stream(Addr addr, uint64_t len, uint64_t stream_off);
  /// True when addr holds exactly stream bytes [stream_off, stream_off+len).
  bool check_stream(Addr addr, uint64_t len, uint64_t stream_off) const;

  /// Writes raw bytes (headers) into a Bytes region, or at most kMaxRawBytes of them into a
  /// Reference region, kept beside it (for read_bytes). Throws MemoryError above that.
  void write_bytes(Addr addr, const uint8_t* data, uint64_t len) override;
  /// The most raw bytes a Reference region keeps at one offset: a control message's body, a GRH.
  static constexpr uint64_t kMaxRawBytes = 64;
  /// Reads raw bytes from a Bytes region, or from raw bytes kept in a Reference region.
  void read_bytes(Addr addr, uint8_t* out, uint64_t len) const override;

  /// Copies len bytes from (src_mem, src) to (dst_mem, dst): a CPU copy when both are this
  /// host, a DMA (over the wire) otherwise. Reference -> Bytes materialises the pattern;
  /// Bytes -> Reference keeps the raw bytes beside the region (for read_bytes) when they are
  /// at most 64 B (a control message's body), and throws MemoryError above that.
  static void copy(HostMemory& dst_mem, Addr dst, const HostMemory& src_mem, Addr src, uint64_t len);
  /// copy() within this host.
  void copy_local(Addr dst, Addr src, uint64_t len) override { copy(*this, dst, *this, src, len); }

  /// The pattern byte at stream offset `off` for this host's seed.
  uint8_t pattern_byte(uint64_t off) const;

 private:
  struct Segment {  // Reference mode: region bytes [off, off+len) hold stream [stream_off, ...)
    uint64_t off, len, stream_off;
  };
  struct Region {
    Addr base = 0;
    uint64_t len = 0;
    DataMode mode = DataMode::Bytes;
    // Bytes mode: the bytes, allocated (as zeros) by the first write, so that memory never
    // written costs nothing (most of a socket's receive ring in a short run or a fuzz input).
    std::vector<uint8_t> bytes;
    uint8_t* writable() {
      if (bytes.empty()) bytes.assign(len, 0);
      return bytes.data();
    }
    /// nullptr while never written: every byte is 0.
    const uint8_t* readable() const { return bytes.empty() ? nullptr : bytes.data(); }
    std::vector<Segment> segments;   // Reference mode, sorted by off, non-overlapping
    // Reference mode: raw bytes written over part of the region (a control message's body
    // scattered into a data buffer), by offset; cleared where stream data is written.
    std::map<uint64_t, std::vector<uint8_t>> raw;
  };
  /// The region holding [addr, addr+len); throws MemoryError when none does.
  Region& region(Addr addr, uint64_t len) { return const_cast<Region&>(std::as_const(*this).region(addr, len)); }
  const Region& region(Addr addr, uint64_t len) const {
    if (const Region* r = find(addr, len)) [[likely]]
      return *r;
    outside(addr, len);
  }
  [[noreturn]] void outside(Addr addr, uint64_t len) const;
  /// Region bytes [off, off+len) now hold `segs` (offsets relative to `off`, in order of offset
  /// and not overlapping, as get_segments gives them; holes are bytes never written). `segs`
  /// may not point into r.segments.
  static void put_segments(Region& r, uint64_t off, uint64_t len, std::span<const Segment> segs);
  /// The segments of region bytes [off, off+len), offsets relative to `off`, into `out` (cleared
  /// first; a caller's scratch list, so that a copy allocates nothing once it has grown).
  static void get_segments(const Region& r, uint64_t off, uint64_t len, std::vector<Segment>& out);
  /// Appends s to a list sorted by offset, merging it into the last segment when it continues it.
  static void append_merged(std::vector<Segment>& list, const Segment& s);
  /// r's segments become `list`; `list` gets r's old storage (the next call's scratch).
  static void install(Region& r, std::vector<Segment>& list);

  int host_id_;
  uint64_t seed_;
  DataMode data_mode_;
  Addr next_;
  // allocate() bumps an address, so regions come in increasing order of base: bases_ stays
  // sorted by appending, and a lookup is a binary search over contiguous addresses. A deque
  // keeps each Region's address stable (regions are never erased).
  std::vector<Addr> bases_;
  std::deque<Region> regions_;
  /// A direct-mapped cache of lookups: slot (addr / 4096) mod kPageSlots holds the region last
  /// found at an address of that page. A stream touches the same buffers over and over (user
  /// buffers, SDP buffers and their headers, about 25 lookups per SDP message), and a buffer
  /// spans whole pages, so nearly every lookup is one compare; a miss (a page shared by two small
  /// regions, or two pages kPageSlots apart) falls back to the binary search.
  static constexpr size_t kPageSlots = 1024;
  mutable std::array<const Region*, kPageSlots> by_page_{};
  /// True when [addr, addr+len) lies inside r (addr - base <= r.len and len <= r.len - (addr -
  /// base): without overflowing addr + len).
  static bool inside(const Region& r, Addr addr, uint64_t len) {
    return addr >= r.base && addr - r.base <= r.len && len <= r.len - (addr - r.base);
  }
  /// The region holding [addr, addr+len), or nullptr: the page cache's region, else find_slow.
  const Region* find(Addr addr, uint64_t len) const {
    const Region* cached = by_page_[(addr >> 12) % kPageSlots];
    if (cached != nullptr && inside(*cached, addr, len)) [[likely]]
      return cached;
    return find_slow(addr, len);
  }
  /// find() past the cache: a binary search over the bases, whose result the cache keeps.
  const Region* find_slow(Addr addr, uint64_t len) const;
};

}  // namespace hcasim::sdp
