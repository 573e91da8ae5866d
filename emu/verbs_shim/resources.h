// What a process holds of the emulated device, counted as the kernel and mlx4 count it: pages
// pinned by memory registrations (the kernel's ib_umem_get, drivers/infiniband/core/umem.c,
// against RLIMIT_MEMLOCK) and objects numbered from the device's tables (mlx4_core's bitmaps of
// PDs, CQs, QPs, SRQs and MPTs, sized by the caps emu/verbs_shim/device.h reports).
#pragma once

#include <cstddef>
#include <cstdint>

namespace hcasim::emu::shim {

/// A kind of object the device numbers from a table of fixed size.
enum class Resource : uint8_t { Pd, Cq, Qp, Srq, Mr };

/// The device's table size for `r`: max_pd, max_cq, max_qp, max_srq and max_mr of the
/// ConnectX-3 (device.h, ibv_query_device(3)).
int resource_limit(Resource r);

/// Takes one `r`. False when the process already holds resource_limit(r) of them: the create
/// verb then fails with ENOMEM, as mlx4's bitmap allocation does (mlx4_bitmap_alloc returns -1,
/// mlx4_cq_alloc / mlx4_qp_reserve_range / mlx4_mpt_reserve / mlx4_pd_alloc give -ENOMEM).
bool take_resource(Resource r);
/// Gives one `r` back (the destroy verb).
void give_resource(Resource r);
/// How many `r` the process holds now.
int resources_held(Resource r);

/// The environment variable with the locked-memory limit, bytes or "unlimited", that MRs count
/// against instead of the process's RLIMIT_MEMLOCK: the limit of the machine the program would
/// run on with an HCA (its limits.conf), where a CI runner's user cannot raise the hard limit
/// (8 MiB on Debian 12) to what an RDMA program such as UCX registers. CAP_IPC_LOCK still lifts
/// any limit, as in the kernel.
inline constexpr const char* kMemlockEnv = "HCASIM_MEMLOCK";

/// Checks $HCASIM_MEMLOCK when the device is made, as $HCASIM_FAULT is checked: a value that is
/// neither a number of bytes nor "unlimited" is one line on stderr and exit status 2 before the
/// program prints or connects anything, not at its first registration.
void check_memlock_setting();

/// Pins [addr, addr + length) for an MR with ibv_access_flags `access`, as ib_umem_get checks
/// it, in its order. Returns 0 with `pages` set to the 4 KiB pages counted against
/// RLIMIT_MEMLOCK (or $HCASIM_MEMLOCK), or the errno ibv_reg_mr(3) gets from the kernel:
/// - EINVAL: addr + length wraps, or its page-aligned end does; or length is 0 (no page);
/// - EPERM: RLIMIT_MEMLOCK is 0 and the process lacks CAP_IPC_LOCK (can_do_mlock);
/// - ENOMEM: the pages pinned by the process's MRs would exceed RLIMIT_MEMLOCK and the
///   process lacks CAP_IPC_LOCK (mm->pinned_vm; every MR counts its pages, overlaps too);
/// - EFAULT: a page is not mapped, or not readable, or not writable when `access` lets the
///   HCA write it (LOCAL_WRITE, REMOTE_WRITE, REMOTE_ATOMIC: ib_access_writable, FOLL_WRITE).
/// The pages are faulted in as pin_user_pages faults them (madvise MADV_POPULATE_READ /
/// MADV_POPULATE_WRITE, Linux 5.14; on an older kernel /proc/self/maps is read instead).
int pin_user_memory(uintptr_t addr, size_t length, unsigned access, uint64_t& pages);
/// Gives back `pages` pinned by pin_user_memory (ibv_dereg_mr(3)).
void unpin_user_memory(uint64_t pages);

}  // namespace hcasim::emu::shim
