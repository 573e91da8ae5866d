#include "sdp/memory.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include <fmt/format.h>

namespace hcasim::sdp {

namespace {
constexpr int kHostShift = 48;  // host id in the address's top bits

uint64_t splitmix64(uint64_t x) {  // Steele, Lea, Flood: "Fast splittable PRNGs" (2014)
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
}  // namespace

HostMemory::HostMemory(int host_id, uint64_t seed, DataMode data_mode)
    : host_id_(host_id), seed_(seed), data_mode_(data_mode), next_((static_cast<Addr>(host_id) + 1) << kHostShift) {}

Addr HostMemory::allocate(uint64_t len, DataMode mode, uint64_t align) {
  if (len == 0) len = 1;
  Addr base = (next_ + align - 1) & ~(align - 1);
  next_ = base + len;
  Region r;
  r.base = base;
  r.len = len;
  r.mode = mode;
  // Bytes mode: zeros, allocated on the first write (Region::writable).
  bases_.push_back(base);
  regions_.push_back(std::move(r));
  return base;
}

const HostMemory::Region* HostMemory::find_slow(Addr addr, uint64_t len) const {
  auto it = std::upper_bound(bases_.begin(), bases_.end(), addr);
  if (it == bases_.begin()) return nullptr;
  const Region* r = &regions_[static_cast<size_t>(it - bases_.begin()) - 1];
  if (!inside(*r, addr, len)) return nullptr;
  by_page_[(addr >> 12) % kPageSlots] = r;
  return r;
}

bool HostMemory::contains(Addr addr, uint64_t len) const { return find(addr, len) != nullptr; }

void HostMemory::outside(Addr addr, uint64_t len) const {
  throw MemoryError(fmt::format("host {}: access [{:#x}, +{}) outside any region", host_id_, addr, len));
}

uint8_t HostMemory::pattern_byte(uint64_t off) const {
  return static_cast<uint8_t>(splitmix64(seed_ ^ (off >> 3)) >> ((off & 7) * 8));
}

void HostMemory::get_segments(const Region& r, uint64_t off, uint64_t len, std::vector<Segment>& out) {
  out.clear();
  uint64_t end = off + len;
  for (const Segment& s : r.segments) {
    uint64_t s_end = s.off + s.len;
    if (s_end <= off || s.off >= end) continue;
    uint64_t a = std::max(s.off, off), b = std::min(s_end, end);
    out.push_back({a - off, b - a, s.stream_off + (a - s.off)});
  }
}

inline void HostMemory::append_merged(std::vector<Segment>& list, const Segment& s) {
  // A segment that continues the last one (in the region and in the stream) extends it.
  if (!list.empty() && list.back().off + list.back().len == s.off && list.back().stream_off + list.back().len == s.stream_off)
    list.back().len += s.len;
  else
    list.push_back(s);
}

void HostMemory::put_segments(Region& r, uint64_t off, uint64_t len, std::span<const Segment> segs) {
  uint64_t end = off + len;
  if (!r.raw.empty()) {
    // Raw bytes overlapping [off, end): an entry holds at most kMaxRawBytes, so it starts no
    // earlier than that before off.
    auto it = r.raw.lower_bound(off > kMaxRawBytes ? off - kMaxRawBytes : 0);
    while (it != r.raw.end() && it->first < end)
      it = it->first + it->second.size() > off ? r.raw.erase(it) : std::next(it);
  }
  const std::vector<Segment>& old = r.segments;
  if (old.empty() || (old.front().off >= off && old.back().off + old.back().len <= end)) {
    // Every segment of the region lies inside the new range (a buffer written whole, as a
    // stream's buffers are on every message): the new list is the new segments alone, built in
    // place.
    r.segments.clear();
    for (const Segment& s : segs)
      if (s.len > 0) append_merged(r.segments, {off + s.off, s.len, s.stream_off});
    if (r.segments.capacity() > 2 * r.segments.size() + 16) r.segments.shrink_to_fit();
    return;
  }
  // The region's list is sorted and merged; the new list is spliced in one pass: the segments
  // before `off` (the head of one straddling it), the new ones, the segments after `end` (the
  // tail of one straddling it). A scratch list kept between calls becomes the region's, and the
  // old one the next call's scratch: a stream rewrites the same buffers' segments on every
  // message, with no allocation. thread_local: HostMemory objects on different threads (tests)
  // never share it.
  thread_local std::vector<Segment> merged;
  merged.clear();
  size_t i = 0;
  for (; i < old.size() && old[i].off + old[i].len <= off; ++i) append_merged(merged, old[i]);
  if (i < old.size() && old[i].off < off) append_merged(merged, {old[i].off, off - old[i].off, old[i].stream_off});
  for (const Segment& s : segs)
    if (s.len > 0) append_merged(merged, {off + s.off, s.len, s.stream_off});
  for (; i < old.size(); ++i) {
    const Segment& s = old[i];
    const uint64_t s_end = s.off + s.len;
    if (s_end <= end) continue;  // inside the new range (or its head kept above)
    if (s.off < end)
      append_merged(merged, {end, s_end - end, s.stream_off + (end - s.off)});
    else
      append_merged(merged, s);
  }
  install(r, merged);
}

void HostMemory::install(Region& r, std::vector<Segment>& list) {
  r.segments.swap(list);  // the old list's storage is the next call's scratch
  // A long list once seen elsewhere must not leave every region holding its capacity.
  if (r.segments.capacity() > 2 * r.segments.size() + 16) r.segments.shrink_to_fit();
}

void HostMemory::write_stream(Addr addr, uint64_t len, uint64_t stream_off) {
  Region& r = region(addr, len);
  uint64_t off = addr - r.base;
  if (r.mode == DataMode::Bytes) {
    uint8_t* b = r.writable();
    for (uint64_t i = 0; i < len; ++i) b[off + i] = pattern_byte(stream_off + i);
  } else {
    const Segment whole{0, len, stream_off};
    put_segments(r, off, len, {&whole, 1});
  }
}

bool HostMemory::check_stream(Addr addr, uint64_t len, uint64_t stream_off) const {
  const Region& r = region(addr, len);
  uint64_t off = addr - r.base;
  if (r.mode == DataMode::Bytes) {
    const uint8_t* b = r.readable();
    for (uint64_t i = 0; i < len; ++i)
      if ((b ? b[off + i] : 0) != pattern_byte(stream_off + i)) return false;
    return true;
  }
  thread_local std::vector<Segment> segs;  // scratch, as put_segments'
  get_segments(r, off, len, segs);
  uint64_t at = 0;
  for (const Segment& s : segs) {
    if (s.off != at || s.stream_off != stream_off + at) return false;
    at += s.len;
  }
  return at == len;
}

void HostMemory::write_bytes(Addr addr, const uint8_t* data, uint64_t len) {
  Region& r = region(addr, len);
  if (r.mode == DataMode::Bytes) {
    std::memcpy(r.writable() + (addr - r.base), data, len);
    return;
  }
  // A header in a data buffer (a UD receive's GRH): kept beside the region, as copy() keeps one.
  if (len > kMaxRawBytes) throw MemoryError("write_bytes of more than 64 B into a Reference region");
  if (len == 0) return;
  const uint64_t off = addr - r.base;
  // The same place written again (a ring buffer's header): raw entries never overlap, so one of
  // this size at `off`, with no stream data written over it since, is the only thing there.
  if (auto it = r.raw.find(off); it != r.raw.end() && it->second.size() == len) {
    auto seg = std::partition_point(r.segments.begin(), r.segments.end(),
                                    [&](const Segment& g) { return g.off + g.len <= off; });
    if (seg == r.segments.end() || seg->off >= off + len) {
      std::memcpy(it->second.data(), data, len);
      return;
    }
  }
  put_segments(r, off, len, {});
  r.raw[off].assign(data, data + len);
}

void HostMemory::read_bytes(Addr addr, uint8_t* out, uint64_t len) const {
  const Region& r = region(addr, len);
  if (r.mode != DataMode::Bytes) {
    const uint64_t off = addr - r.base;
    auto it = r.raw.upper_bound(off);
    if (it != r.raw.begin()) {
      --it;
      if (off >= it->first && off + len <= it->first + it->second.size()) {
        std::memcpy(out, it->second.data() + (off - it->first), len);
        return;
      }
    }
    throw MemoryError("read_bytes from stream data in a Reference region");
  }
  if (const uint8_t* b = r.readable())
    std::memcpy(out, b + (addr - r.base), len);
  else
    std::fill_n(out, len, uint8_t{0});
}

void HostMemory::copy(HostMemory& dst_mem, Addr dst, const HostMemory& src_mem, Addr src, uint64_t len) {
  if (len == 0) return;
  const Region& s = src_mem.region(src, len);
  Region& d = dst_mem.region(dst, len);
  uint64_t so = src - s.base, doff = dst - d.base;
  if (s.mode == DataMode::Bytes && d.mode == DataMode::Bytes) {
    if (const uint8_t* sb = s.readable())
      std::memmove(d.writable() + doff, sb + so, len);  // s may be d: writable() keeps its bytes
    else if (d.readable())
      std::fill_n(d.writable() + doff, len, uint8_t{0});
  } else if (s.mode == DataMode::Reference && d.mode == DataMode::Reference) {
    thread_local std::vector<Segment> segs;  // scratch, as put_segments'
    get_segments(s, so, len, segs);
    put_segments(d, doff, len, segs);
  } else if (s.mode == DataMode::Reference) {  // materialise the pattern
    uint8_t* db = d.writable();
    std::fill_n(db + doff, len, uint8_t{0});
    thread_local std::vector<Segment> segs;
    get_segments(s, so, len, segs);
    for (const Segment& seg : segs)
      for (uint64_t i = 0; i < seg.len; ++i) db[doff + seg.off + i] = src_mem.pattern_byte(seg.stream_off + i);
  } else {
    if (len > kMaxRawBytes) throw MemoryError("copy of more than 64 raw bytes into a Reference region");
    put_segments(d, doff, len, {});
    if (const uint8_t* sb = s.readable())
      d.raw[doff].assign(sb + so, sb + so + len);
    else
      d.raw[doff].assign(len, 0);
  }
}

}  // namespace hcasim::sdp
