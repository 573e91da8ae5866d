// Host memory as data moves through it: stream descriptors (Reference mode) and real bytes
// (--verify-data) must both catch a wrong, missing or reordered byte range.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "sdp/memory.h"
#include "sdp/process_memory.h"

using namespace hcasim::sdp;

TEST(HostMemory, ReferenceCopiesKeepStreamOffsets) {
  HostMemory a(0, 1), b(1, 1);
  const Addr src = a.allocate(100000, DataMode::Reference);
  const Addr dst = b.allocate(100000, DataMode::Reference);
  a.write_stream(src, 100000, 5000);
  HostMemory::copy(b, dst, a, src + 10, 50000);  // DMA of bytes 10..50009 of the buffer
  EXPECT_TRUE(b.check_stream(dst, 50000, 5010));
  EXPECT_FALSE(b.check_stream(dst, 50000, 5000));   // wrong offset
  EXPECT_FALSE(b.check_stream(dst, 50001, 5010));   // one byte never written
  HostMemory::copy(b, dst + 100, a, src + 900, 10);  // overwrite 10 bytes out of order
  EXPECT_FALSE(b.check_stream(dst, 50000, 5010));
  EXPECT_TRUE(b.check_stream(dst, 100, 5010));
}

TEST(HostMemory, ReferenceWritesOverlappingInAnyOrderMatchAByteByByteModel) {
  // Segments are spliced into a region's list in one pass (put_segments): a write may cover
  // segments whole, cut one at either end, or fall inside one. A model holding the stream offset
  // of every byte (-1: never written) says what check_stream must answer, over 3000 seeded
  // writes and copies (within one region too) of random ranges, each followed by checks.
  constexpr uint64_t kLen = 512;
  HostMemory m(0, 1);
  const Addr a = m.allocate(kLen, DataMode::Reference);
  const Addr b = m.allocate(kLen, DataMode::Reference);
  std::vector<int64_t> model_a(kLen, -1), model_b(kLen, -1);
  std::mt19937_64 rng(20);
  auto range = [&](uint64_t& off, uint64_t& len) {
    off = rng() % kLen;
    len = 1 + rng() % (kLen - off);
  };
  // True when bytes [off, off+len) of `model` hold stream bytes [first, first+len).
  auto holds = [](const std::vector<int64_t>& model, uint64_t off, uint64_t len, int64_t first) {
    for (uint64_t i = 0; i < len; ++i)
      if (model[off + i] != first + static_cast<int64_t>(i)) return false;
    return true;
  };
  for (int step = 0; step < 3000; ++step) {
    uint64_t off = 0, len = 0;
    range(off, len);
    const bool into_a = rng() % 2 == 0;
    Addr dst = into_a ? a : b;
    std::vector<int64_t>& model = into_a ? model_a : model_b;
    switch (rng() % 3) {
      case 0: {  // the application writes stream bytes
        const uint64_t stream = rng() % 100000;
        m.write_stream(dst + off, len, stream);
        for (uint64_t i = 0; i < len; ++i) model[off + i] = static_cast<int64_t>(stream + i);
        break;
      }
      case 1: {  // a copy from the other region
        const uint64_t src_off = rng() % (kLen - len + 1);
        const std::vector<int64_t>& src = into_a ? model_b : model_a;
        HostMemory::copy(m, dst + off, m, (into_a ? b : a) + src_off, len);
        for (uint64_t i = 0; i < len; ++i) model[off + i] = src[src_off + i];
        break;
      }
      default: {  // a copy within the region (memmove: the source is read first)
        const uint64_t src_off = rng() % (kLen - len + 1);
        const std::vector<int64_t> before = model;
        HostMemory::copy(m, dst + off, m, dst + src_off, len);
        for (uint64_t i = 0; i < len; ++i) model[off + i] = before[src_off + i];
        break;
      }
    }
    // Checks: the range just written against its first byte's offset, and a random range
    // against what the model holds at its start (never-written bytes hold nothing).
    for (int c = 0; c < 2; ++c) {
      uint64_t coff = off, clen = len;
      if (c == 1) range(coff, clen);
      const int64_t first = model[coff];
      const bool expect = first >= 0 && holds(model, coff, clen, first);
      ASSERT_EQ(m.check_stream(dst + coff, clen, first >= 0 ? static_cast<uint64_t>(first) : 0), expect)
          << "step " << step << ": [" << coff << ", +" << clen << ")";
    }
  }
}

TEST(HostMemory, BytesModeComparesRealBytes) {
  HostMemory a(0, 9), b(1, 9);
  const Addr src = a.allocate(4096, DataMode::Bytes);
  const Addr dst = b.allocate(4096, DataMode::Bytes);
  a.write_stream(src, 4096, 77);
  HostMemory::copy(b, dst, a, src, 4096);
  EXPECT_TRUE(b.check_stream(dst, 4096, 77));
  const uint8_t flip = static_cast<uint8_t>(b.pattern_byte(77 + 100) ^ 1);
  b.write_bytes(dst + 100, &flip, 1);  // one corrupted bit
  EXPECT_FALSE(b.check_stream(dst, 4096, 77));
}

TEST(HostMemory, BytesNeverWrittenReadAsZeros) {
  // Bytes regions allocate their storage on the first write; until then they read as zeros,
  // and copying such a region over written bytes zeroes them.
  HostMemory m(0, 3);
  const Addr blank = m.allocate(64, DataMode::Bytes);
  const Addr used = m.allocate(64, DataMode::Bytes);
  uint8_t out[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  m.read_bytes(blank + 8, out, 8);
  for (uint8_t b : out) EXPECT_EQ(b, 0);
  const uint8_t ones[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  m.write_bytes(used, ones, 8);
  HostMemory::copy(m, used + 4, m, blank, 2);
  m.read_bytes(used, out, 8);
  EXPECT_EQ(out[3], 0xff);
  EXPECT_EQ(out[4], 0);
  EXPECT_EQ(out[5], 0);
  EXPECT_EQ(out[6], 0xff);
  EXPECT_FALSE(m.check_stream(blank, 64, 0));  // 64 zeros are not the seeded pattern
}

TEST(HostMemory, OutOfRegionAccessThrows) {
  HostMemory a(0, 1);
  const Addr p = a.allocate(64, DataMode::Bytes);
  uint8_t buf[8];
  EXPECT_THROW(a.read_bytes(p + 60, buf, 8), MemoryError);
  EXPECT_FALSE(a.contains(p, 65));
  EXPECT_TRUE(a.contains(p, 64));
}

TEST(ProcessMemory, AddressesArePointersInsideTheArena) {
  ProcessMemory m(1 << 20);
  const Addr a = m.allocate(100, DataMode::Reference, 64);  // every region holds bytes
  EXPECT_EQ(m.data_mode(), DataMode::Bytes);
  EXPECT_EQ(a % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uint8_t*>(a), m.bytes(a, 100));
  EXPECT_GE(reinterpret_cast<uint8_t*>(a), m.arena());
  const uint8_t hello[3] = {1, 2, 3};
  m.write_bytes(a + 10, hello, 3);
  uint8_t back[3] = {};
  m.read_bytes(a + 10, back, 3);
  EXPECT_EQ(back[2], 3);
  const Addr b = m.allocate(100, DataMode::Bytes, 4096);
  m.copy_local(b, a + 10, 3);  // copy_from_user
  EXPECT_EQ(m.bytes(b, 3)[1], 2);
}

TEST(ProcessMemory, BoundsAndExhaustionAreErrors) {
  ProcessMemory m(8192);
  const Addr a = m.allocate(4096, DataMode::Bytes);
  EXPECT_TRUE(m.contains(a, 4096));
  EXPECT_FALSE(m.contains(a, 4097));
  EXPECT_FALSE(m.contains(a + 4096, 1));  // past the only region
  EXPECT_THROW(m.bytes(a + 4000, 200), MemoryError);
  // 4096 used; a second 4096-aligned page fits, a third does not.
  m.allocate(4096, DataMode::Bytes);
  try {
    m.allocate(1, DataMode::Bytes);
    FAIL() << "allocated past the arena";
  } catch (const MemoryError& e) {
    EXPECT_EQ(std::string(e.what()), "memory arena of 8192 bytes exhausted allocating 1 bytes (8192 in use)");
  }
}

TEST(ProcessMemory, ReleaseToFreesEverythingAfterTheMark) {
  ProcessMemory m(16384);
  const Addr keep = m.allocate(10, DataMode::Bytes);
  const uint64_t mark = m.used();
  const Addr gone = m.allocate(4096, DataMode::Bytes);
  m.release_to(mark);
  EXPECT_TRUE(m.contains(keep, 10));
  EXPECT_FALSE(m.contains(gone, 1));
  EXPECT_EQ(m.allocate(4096, DataMode::Bytes), gone);  // the same page again
}

// A server running tests side by side frees each test's regions when it ends (ArenaScope); a
// later allocation takes the first gap that fits, and the other test's regions stay.
TEST(ProcessMemory, AScopeFreesItsRegionsAndTheGapIsReused) {
  ProcessMemory m(8 * 4096);
  const Addr base = reinterpret_cast<Addr>(m.arena());
  Addr first = 0, second = 0;
  {
    ArenaScope a(m);
    first = a.allocate(4096, DataMode::Bytes);
    {
      ArenaScope b(m);
      second = b.allocate(2 * 4096, DataMode::Bytes);
      EXPECT_EQ(second, base + 4096);
      const Addr third = a.allocate(100, DataMode::Bytes);
      EXPECT_EQ(third, base + 3 * 4096);
      EXPECT_EQ(m.used(), 3u * 4096 + 100);
    }  // b's 8 KiB are free again; a's regions stay
    EXPECT_TRUE(m.contains(first, 4096));
    EXPECT_FALSE(m.contains(second, 1));
    EXPECT_TRUE(m.contains(base + 3 * 4096, 100));
    EXPECT_EQ(a.allocate(4096, DataMode::Bytes), base + 4096);  // the first gap that fits
    EXPECT_EQ(a.allocate(8192, DataMode::Bytes), base + 4 * 4096);  // the 4 KiB gap left is too small
  }
  EXPECT_EQ(m.used(), 0u);
  EXPECT_FALSE(m.contains(first, 1));
  EXPECT_EQ(m.allocate(8 * 4096, DataMode::Bytes), base);  // the whole arena again
}
