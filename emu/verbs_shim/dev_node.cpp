// The emulated device's uverbs character device node, kUverbsNode (emu/verbs_shim/device.h).
//
// A verbs user may check the device node before it opens the device: UCX (1.13,
// uct_ib_device_is_accessible in src/uct/ib/base/ib_md.c) lists an IB device only when
// stat("/dev/infiniband/" + ibv_device.dev_name) says a character device and access(R_OK | W_OK)
// succeeds. The emulated device has no node (no kernel module, no root), so the shim answers
// stat(2) and access(2) for that one path, as the kernel does for a real device's node:
//  - a character device of the uverbs major 231, minor 192 (IB_UVERBS_MAJOR,
//    IB_UVERBS_BASE_MINOR: the Linux kernel's drivers/infiniband/core/uverbs_main.c);
//  - mode 0666, owner root (the mode uverbs_devnode gives the node, same file);
//  - readable and writable by everyone.
// Every other path goes to the kernel unchanged (fstatat(2), faccessat(2)). The names exported
// are the ones a program built against glibc calls: stat and access (glibc 2.33 and later:
// stat@GLIBC_2.33), stat64, and __xstat / __xstat64 (what programs built against an older glibc
// call). Nothing else of the node is emulated: open(2) of it fails with ENOENT, as the shim's
// verbs never open it.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "emu/verbs_shim/device.h"

namespace {

using hcasim::emu::shim::kUverbsNode;

/// The uverbs major number, IB_UVERBS_MAJOR (drivers/infiniband/core/uverbs_main.c).
constexpr unsigned kUverbsMajor = 231;
/// The first uverbs minor number, IB_UVERBS_BASE_MINOR (same file): the first device's node.
constexpr unsigned kUverbsBaseMinor = 192;
/// The node's permissions, as uverbs_devnode sets them (drivers/infiniband/core/uverbs_main.c).
constexpr mode_t kUverbsMode = 0666;

bool is_node(const char* path) { return path != nullptr && std::strcmp(path, kUverbsNode) == 0; }

/// The node's stat(2): a character device, kUverbsMajor:kUverbsBaseMinor, kUverbsMode, root's.
template <class Stat>
void fill_node(Stat& st) {
  std::memset(&st, 0, sizeof st);
  st.st_mode = S_IFCHR | kUverbsMode;
  st.st_rdev = makedev(kUverbsMajor, kUverbsBaseMinor);
  st.st_nlink = 1;
  st.st_blksize = 4096;
}

}  // namespace

// glibc 2.33 and later no longer declare these: programs built against an older glibc call
// them (ver is _STAT_VER, 1 on x86-64).
extern "C" int __xstat(int ver, const char* path, struct stat* st);
extern "C" int __xstat64(int ver, const char* path, struct stat64* st);

/// stat(2): kUverbsNode's emulated node (see the file comment), any other path the kernel's.
extern "C" int stat(const char* path, struct stat* st) {
  if (is_node(path)) {
    fill_node(*st);
    return 0;
  }
  return fstatat(AT_FDCWD, path, st, 0);
}

/// stat64(2): as stat (the same structure on 64-bit Linux).
extern "C" int stat64(const char* path, struct stat64* st) {
  if (is_node(path)) {
    fill_node(*st);
    return 0;
  }
  return fstatat64(AT_FDCWD, path, st, 0);
}

/// __xstat (glibc before 2.33): as stat; `ver` is the structure's version, unused on x86-64.
extern "C" int __xstat(int /*ver*/, const char* path, struct stat* st) { return stat(path, st); }

/// __xstat64 (glibc before 2.33): as stat64.
extern "C" int __xstat64(int /*ver*/, const char* path, struct stat64* st) { return stat64(path, st); }

/// access(2): kUverbsNode is readable and writable by everyone (mode 0666) and not executable;
/// any other path is the kernel's answer.
extern "C" int access(const char* path, int mode) {
  if (is_node(path)) {
    if ((mode & X_OK) != 0) {
      errno = EACCES;
      return -1;
    }
    return 0;
  }
  return faccessat(AT_FDCWD, path, mode, 0);
}
