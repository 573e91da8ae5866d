// The process's pinned pages and device objects (resources.h).
#include "emu/verbs_shim/resources.h"

#include <infiniband/verbs.h>
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "emu/verbs_shim/device.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22  // Linux 5.14 include/uapi/asm-generic/mman-common.h
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace hcasim::emu::shim {
namespace {

std::array<std::atomic<int>, 5> held{};
std::atomic<uint64_t> pinned_pages{0};  // mm->pinned_vm of the MRs of this process

/// capable(CAP_IPC_LOCK) for this process: bit 14 of its effective set (capget(2)).
bool has_ipc_lock() {
  __user_cap_header_struct head{_LINUX_CAPABILITY_VERSION_3, 0};
  std::array<__user_cap_data_struct, _LINUX_CAPABILITY_U32S_3> data{};
  if (::syscall(SYS_capget, &head, data.data()) != 0) return false;
  return (data[CAP_IPC_LOCK / 32].effective & (1u << (CAP_IPC_LOCK % 32))) != 0;
}

/// $HCASIM_MEMLOCK (kMemlockEnv) in bytes, the largest value for "unlimited"; `set` is false
/// when it is unset. Read when the device is made and at each registration. A value that is
/// neither: one line on stderr and exit status 2, as a bad $HCASIM_FAULT (the run would not be
/// the one asked for).
uint64_t memlock_setting(bool& set) {
  const char* env = std::getenv(kMemlockEnv);
  set = env != nullptr;
  if (env == nullptr) return 0;
  if (std::strcmp(env, "unlimited") == 0) return std::numeric_limits<uint64_t>::max();
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(env, &end, 10);
  if (env[0] < '0' || env[0] > '9' || *end != '\0' || errno == ERANGE) {
    std::fprintf(stderr, "hcasim-verbs-emu: %s=%s: not a number of bytes or \"unlimited\"\n", kMemlockEnv, env);
    std::fflush(stderr);
    std::_Exit(2);
  }
  return static_cast<uint64_t>(n);
}

/// The locked-memory limit the pinned pages count against, in bytes: $HCASIM_MEMLOCK when set,
/// else the soft RLIMIT_MEMLOCK (RLIM_INFINITY as the largest value).
uint64_t memlock_limit() {
  bool set = false;
  const uint64_t setting = memlock_setting(set);
  if (set) return setting;
  rlimit r{};
  if (::getrlimit(RLIMIT_MEMLOCK, &r) != 0 || r.rlim_cur == RLIM_INFINITY) return std::numeric_limits<uint64_t>::max();
  return r.rlim_cur;
}

/// Whether every page of [begin, end) (page-aligned) is mapped readable, and writable when
/// `writable`, by /proc/self/maps: the check where MADV_POPULATE_* is not known (before 5.14).
bool mapped_by_proc_maps(uintptr_t begin, uintptr_t end, bool writable) {
  std::FILE* f = std::fopen("/proc/self/maps", "re");
  if (f == nullptr) return false;
  uintptr_t covered = begin;  // the lines are in address order
  unsigned long lo = 0, hi = 0;
  char perms[5] = {};
  int c = 0;
  while (covered < end && std::fscanf(f, "%lx-%lx %4s", &lo, &hi, perms) == 3) {
    while ((c = std::fgetc(f)) != EOF && c != '\n') {
    }
    if (hi <= covered) continue;
    if (lo > covered) break;  // a hole
    if (perms[0] != 'r' || (writable && perms[1] != 'w')) break;
    covered = hi;
  }
  std::fclose(f);
  return covered >= end;
}

}  // namespace

int resource_limit(Resource r) {
  switch (r) {
    case Resource::Pd: return cx3::kMaxPd;
    case Resource::Cq: return cx3::kMaxCq;
    case Resource::Qp: return cx3::kMaxQp;
    case Resource::Srq: return cx3::kMaxSrq;
    case Resource::Mr: return cx3::kMaxMr;
  }
  return 0;
}

bool take_resource(Resource r) {
  std::atomic<int>& n = held[static_cast<size_t>(r)];
  int now = n.load();
  do {
    if (now >= resource_limit(r)) return false;
  } while (!n.compare_exchange_weak(now, now + 1));
  return true;
}

void give_resource(Resource r) { --held[static_cast<size_t>(r)]; }

int resources_held(Resource r) { return held[static_cast<size_t>(r)].load(); }

int pin_user_memory(uintptr_t addr, size_t length, unsigned access, uint64_t& pages) {
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  // ib_umem_get: the end, and the end rounded up to a page, must not wrap.
  const uintptr_t end = addr + length;
  if (end < addr || end > std::numeric_limits<uintptr_t>::max() - (page - 1)) return EINVAL;
  const uint64_t memlock = memlock_limit();
  if (memlock == 0 && !has_ipc_lock()) return EPERM;  // can_do_mlock()
  // ib_umem_num_pages: the pages the range touches; none (length 0 at a page boundary) or
  // more than UINT_MAX is EINVAL.
  const uintptr_t first = addr & ~(page - 1);
  const uintptr_t last = (end + page - 1) & ~(page - 1);
  const uint64_t npages = (last - first) / page;
  if (npages == 0 || npages > std::numeric_limits<uint32_t>::max()) return EINVAL;
  // mm->pinned_vm against RLIMIT_MEMLOCK in pages, unless capable(CAP_IPC_LOCK).
  const uint64_t total = pinned_pages.fetch_add(npages) + npages;
  if (total > memlock / page && !has_ipc_lock()) {
    pinned_pages -= npages;
    return ENOMEM;
  }
  // pin_user_pages_fast with FOLL_WRITE when the HCA may write (ib_access_writable).
  const bool writable = (access & (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC |
                                   IBV_ACCESS_MW_BIND)) != 0;
  bool ok = ::madvise(reinterpret_cast<void*>(first), last - first, writable ? MADV_POPULATE_WRITE : MADV_POPULATE_READ) == 0;
  if (!ok && errno == EINVAL) ok = mapped_by_proc_maps(first, last, writable);  // before 5.14, or VM_IO/PFNMAP
  if (!ok) {
    pinned_pages -= npages;
    return EFAULT;
  }
  pages = npages;
  return 0;
}

void unpin_user_memory(uint64_t pages) { pinned_pages -= pages; }

void check_memlock_setting() {
  bool set = false;
  (void)memlock_setting(set);
}

}  // namespace hcasim::emu::shim
