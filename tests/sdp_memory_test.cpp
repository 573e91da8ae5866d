// Host memory as data moves through it: stream descriptors (Reference mode) and real bytes
// (--verify-data) must both catch a wrong, missing or reordered byte range.
#include <gtest/gtest.h>

#include "sdp/memory.h"

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

TEST(HostMemory, OutOfRegionAccessThrows) {
  HostMemory a(0, 1);
  const Addr p = a.allocate(64, DataMode::Bytes);
  uint8_t buf[8];
  EXPECT_THROW(a.read_bytes(p + 60, buf, 8), MemoryError);
  EXPECT_FALSE(a.contains(p, 65));
  EXPECT_TRUE(a.contains(p, 64));
}
