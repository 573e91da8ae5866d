#include "sdp/process_memory.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

#include <fmt/format.h>

namespace hcasim::sdp {

ProcessMemory::ProcessMemory(uint64_t capacity) : capacity_(capacity) {
  void* p = ::mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    throw MemoryError(fmt::format("cannot reserve {} bytes of memory: {}", capacity, std::strerror(errno)));
  arena_ = static_cast<uint8_t*>(p);
}

ProcessMemory::~ProcessMemory() { ::munmap(arena_, capacity_); }

Addr ProcessMemory::allocate(uint64_t len, DataMode, uint64_t align) {
  if (len == 0) len = 1;
  std::unique_lock lock(regions_lock_);
  const Addr base0 = reinterpret_cast<Addr>(arena_);
  const auto up = [align](Addr a) { return (a + align - 1) & ~(align - 1); };
  Addr from = base0;  // first fit: the lowest gap between regions that holds len aligned
  for (const auto& [b, l] : regions_) {
    if (up(from) + len <= b) break;
    from = b + l;
  }
  const Addr base = up(from);
  if (base + len > base0 + capacity_)
    throw MemoryError(fmt::format("memory arena of {} bytes exhausted allocating {} bytes ({} in use)", capacity_,
                                  len, used_));
  used_ = std::max<uint64_t>(used_, base + len - base0);
  regions_.emplace(base, len);
  return base;
}

void ProcessMemory::free(Addr base) {
  std::unique_lock lock(regions_lock_);
  if (regions_.erase(base) == 0) return;
  const Addr base0 = reinterpret_cast<Addr>(arena_);
  used_ = regions_.empty() ? 0 : regions_.rbegin()->first + regions_.rbegin()->second - base0;
}

ArenaScope::~ArenaScope() {
  for (Addr a : mine_) arena_.free(a);
}

Addr ArenaScope::allocate(uint64_t len, DataMode mode, uint64_t align) {
  const Addr a = arena_.allocate(len, mode, align);
  std::lock_guard g(lock_);
  mine_.push_back(a);
  return a;
}

void ProcessMemory::release_to(uint64_t used) {
  std::unique_lock lock(regions_lock_);
  if (used >= used_) return;
  regions_.erase(regions_.lower_bound(reinterpret_cast<Addr>(arena_) + used), regions_.end());
  used_ = used;
}

bool ProcessMemory::contains(Addr addr, uint64_t len) const {
  std::shared_lock lock(regions_lock_);
  auto it = regions_.upper_bound(addr);
  if (it == regions_.begin()) return false;
  --it;
  return addr >= it->first && len <= it->second && addr - it->first <= it->second - len;
}

const uint8_t* ProcessMemory::bytes(Addr addr, uint64_t len) const {
  if (!contains(addr, len))
    throw MemoryError(fmt::format("access [{:#x}, +{}) outside any allocated region", addr, len));
  return reinterpret_cast<const uint8_t*>(addr);
}

uint8_t* ProcessMemory::bytes(Addr addr, uint64_t len) {
  return const_cast<uint8_t*>(static_cast<const ProcessMemory&>(*this).bytes(addr, len));
}

void ProcessMemory::write_bytes(Addr addr, const uint8_t* data, uint64_t len) {
  if (len > 0) std::memcpy(bytes(addr, len), data, len);
}

void ProcessMemory::read_bytes(Addr addr, uint8_t* out, uint64_t len) const {
  if (len > 0) std::memcpy(out, bytes(addr, len), len);
}

void ProcessMemory::copy_local(Addr dst, Addr src, uint64_t len) {
  if (len > 0) std::memmove(bytes(dst, len), bytes(src, len), len);
}

}  // namespace hcasim::sdp
