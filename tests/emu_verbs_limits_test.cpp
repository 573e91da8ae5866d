// The verbs shim's device against what a program may ask of it beyond its resources, as the
// kernel and mlx4 answer (the test links libhcasim-verbs-emu.so, so ibv_* are the shim's):
// memory registration checked as ib_umem_get checks it (drivers/infiniband/core/umem.c, in
// its order: a wrapping range EINVAL, RLIMIT_MEMLOCK 0 EPERM, no page or more than UINT_MAX
// pages EINVAL, pinned pages over RLIMIT_MEMLOCK ENOMEM without CAP_IPC_LOCK, pages not mapped
// as the access needs EFAULT), the device's object tables (max_cq, max_mr: ENOMEM beyond, as
// mlx4's bitmaps), ibv_dealloc_pd with live objects (EBUSY, the kernel's pd->usecnt),
// libmlx4's ibv_poll_cq with a negative count, ibv_dereg_mr racing a peer's RDMA WRITE into
// the MR (once dereg returns the memory may be unmapped), requests to a peer that never
// reaches RTR timing out on the side that waits for the stream as on the side that opens it,
// UC sends without a stream completing as sent, the device's other limits (max_pd, max_srq,
// max_qp_wr, max_sge, max_inline_data, max_cqe), MR indexes reused and dereg's cost against
// the number of QPs, a UD datagram of another partition dropped and counted in the port's
// bad_pkey_cntr, every socket close-on-exec, the RDMA CM listener against strangers (idle,
// without the subnet's secret) and without descriptors, a subnet directory others may write
// failing the open, and a forked child's verbs leaving its parent's alone.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <rdma/rdma_cma.h>
#include <linux/capability.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "emu/auth.h"
#include "emu/subnet.h"
#include "emu/wire.h"
#include "tests/forked_child.h"
#include "tests/subnet_env.h"
#include "tests/verbs_fixture.h"

namespace {

const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new hcasim::testing::SubnetEnv("hcasim-limits-test"));
using hcasim::testing::VerbsQp;

const size_t kPage = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
constexpr int kWritable = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;

/// ibv_reg_mr's errno (0 when it registered; the MR is deregistered again).
int reg_errno(ibv_pd* pd, void* addr, size_t len, int access) {
  errno = 0;
  ibv_mr* mr = ibv_reg_mr(pd, addr, len, access);
  if (mr == nullptr) return errno;
  EXPECT_EQ(ibv_dereg_mr(mr), 0);
  return 0;
}

/// Drops CAP_IPC_LOCK from the effective set for its lifetime (kept in the permitted set, so
/// it comes back): the process is then limited by RLIMIT_MEMLOCK, as an unprivileged user is.
class WithoutIpcLock {
 public:
  WithoutIpcLock() {
    if (::syscall(SYS_capget, &head_, saved_.data()) != 0) return;
    auto lowered = saved_;
    lowered[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
    changed_ = ::syscall(SYS_capset, &head_, lowered.data()) == 0;
  }
  ~WithoutIpcLock() {
    if (changed_) ::syscall(SYS_capset, &head_, saved_.data());
  }

 private:
  __user_cap_header_struct head_{_LINUX_CAPABILITY_VERSION_3, 0};
  std::array<__user_cap_data_struct, _LINUX_CAPABILITY_U32S_3> saved_{};
  bool changed_ = false;
};

/// The soft RLIMIT_MEMLOCK set to `bytes` for its lifetime (lowering is always allowed).
class MemlockLimit {
 public:
  explicit MemlockLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_MEMLOCK, &saved_);
    rlimit r = saved_;
    r.rlim_cur = bytes;
    EXPECT_EQ(::setrlimit(RLIMIT_MEMLOCK, &r), 0);
  }
  ~MemlockLimit() { ::setrlimit(RLIMIT_MEMLOCK, &saved_); }

 private:
  rlimit saved_{};
};

/// Whether the process may pin without limit (capable(CAP_IPC_LOCK)).
bool has_ipc_lock() {
  __user_cap_header_struct head{_LINUX_CAPABILITY_VERSION_3, 0};
  std::array<__user_cap_data_struct, _LINUX_CAPABILITY_U32S_3> data{};
  if (::syscall(SYS_capget, &head, data.data()) != 0) return false;
  return (data[CAP_IPC_LOCK / 32].effective & (1u << (CAP_IPC_LOCK % 32))) != 0;
}

TEST_F(VerbsQp, MemoryNotMappedAsTheAccessNeedsIsEfault) {
  // Three pages: the middle one unmapped, then the first made PROT_NONE, the last read-only.
  auto* p = static_cast<char*>(::mmap(nullptr, 3 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(p, MAP_FAILED);
  ASSERT_EQ(reg_errno(pd, p, 3 * kPage, kWritable), 0);
  ASSERT_EQ(::munmap(p + kPage, kPage), 0);
  EXPECT_EQ(reg_errno(pd, p, 3 * kPage, kWritable), EFAULT);  // a hole
  EXPECT_EQ(reg_errno(pd, p + kPage + 8, 16, 0), EFAULT);     // inside the hole
  EXPECT_EQ(reg_errno(pd, p, kPage, kWritable), 0);
  ASSERT_EQ(::mprotect(p, kPage, PROT_NONE), 0);
  EXPECT_EQ(reg_errno(pd, p, kPage, kWritable), EFAULT);
  EXPECT_EQ(reg_errno(pd, p, kPage, 0), EFAULT);  // not even readable
  ASSERT_EQ(::mprotect(p + 2 * kPage, kPage, PROT_READ), 0);
  EXPECT_EQ(reg_errno(pd, p + 2 * kPage, kPage, IBV_ACCESS_LOCAL_WRITE), EFAULT);  // FOLL_WRITE
  EXPECT_EQ(reg_errno(pd, p + 2 * kPage, kPage, IBV_ACCESS_REMOTE_READ), 0);      // read-only MR
  ::munmap(p, kPage);
  ::munmap(p + 2 * kPage, kPage);
}

TEST_F(VerbsQp, RangesTheKernelCannotPinAreEinval) {
  // addr + length wraps past 2^64: EINVAL, never an exception.
  auto* top = reinterpret_cast<void*>(std::numeric_limits<uintptr_t>::max() - 100);
  EXPECT_EQ(reg_errno(pd, top, 4096, kWritable), EINVAL);
  // Its end rounded up to a page wraps (PAGE_ALIGN(addr + size) < addr + size).
  EXPECT_EQ(reg_errno(pd, top, 50, kWritable), EINVAL);
  // Length 0 on a page boundary touches no page (ib_umem_num_pages 0): EINVAL. Off a boundary
  // it touches one page, which the kernel pins: registered.
  auto* p = static_cast<char*>(::mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(p, MAP_FAILED);
  EXPECT_EQ(reg_errno(pd, p, 0, kWritable), EINVAL);
  EXPECT_EQ(reg_errno(pd, p + 16, 0, kWritable), 0);
  // 2^46 bytes over a 4 KiB buffer: 2^34 pages, more than ib_umem_get's UINT_MAX.
  EXPECT_EQ(reg_errno(pd, p, size_t{1} << 46, kWritable), EINVAL);
  ::munmap(p, kPage);
}

TEST_F(VerbsQp, PinnedPagesAreCountedAgainstRlimitMemlock) {
  // The fixture's 64 KiB buffer is registered already: 16 or 17 pages (it need not be aligned).
  auto* p = static_cast<char*>(::mmap(nullptr, 64 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(p, MAP_FAILED);
  {
    WithoutIpcLock unprivileged;
    ASSERT_FALSE(has_ipc_lock());
    {
      MemlockLimit none(0);
      EXPECT_EQ(reg_errno(pd, p, kPage, kWritable), EPERM);  // can_do_mlock()
    }
    const uintptr_t b = reinterpret_cast<uintptr_t>(buf.data());
    const size_t held = ((b + buf.size() + kPage - 1) / kPage) - b / kPage;  // the fixture's MR
    MemlockLimit limit((held + 8) * kPage);
    ibv_mr* eight = ibv_reg_mr(pd, p, 8 * kPage, kWritable);
    ASSERT_NE(eight, nullptr) << errno;  // exactly at the limit
    EXPECT_EQ(reg_errno(pd, p + 8 * kPage, 1, kWritable), ENOMEM);  // one page over
    EXPECT_EQ(reg_errno(pd, p, kPage, kWritable), ENOMEM);          // overlaps count too (pinned_vm)
    ASSERT_EQ(ibv_dereg_mr(eight), 0);
    EXPECT_EQ(reg_errno(pd, p + 8 * kPage, 8 * kPage, kWritable), 0);  // given back
    // 10 GiB with nothing mapped: the limit answers first.
    EXPECT_EQ(reg_errno(pd, p, size_t{10} << 30, kWritable), ENOMEM);
  }
  if (has_ipc_lock()) {
    // With CAP_IPC_LOCK (root) the limit does not apply: the unmapped pages answer, EFAULT.
    MemlockLimit limit(64 * kPage);
    EXPECT_EQ(reg_errno(pd, p, size_t{10} << 30, kWritable), EFAULT);
    EXPECT_EQ(reg_errno(pd, p, 64 * kPage, kWritable), 0);
  }
  ::munmap(p, 64 * kPage);
}

/// $NAME set to `value` for its lifetime, unset after (the tests run with it unset).
class EnvSetting {
 public:
  EnvSetting(const char* name, const std::string& value) : name_(name) { EXPECT_EQ(::setenv(name, value.c_str(), 1), 0); }
  ~EnvSetting() { ::unsetenv(name_); }
  EnvSetting(const EnvSetting&) = delete;
  EnvSetting& operator=(const EnvSetting&) = delete;

 private:
  const char* name_;
};

TEST_F(VerbsQp, HcasimMemlockIsTheLimitInsteadOfRlimitMemlock) {
  // $HCASIM_MEMLOCK (emu/verbs_shim/resources.h): the locked-memory limit of the machine the
  // program would run on, which a CI user cannot set as its RLIMIT_MEMLOCK. With RLIMIT_MEMLOCK
  // 0 (EPERM by itself) and no CAP_IPC_LOCK, the fixture's pages + 8 are allowed, one more is
  // ENOMEM; "unlimited" takes 64 pages.
  auto* p = static_cast<char*>(::mmap(nullptr, 64 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(p, MAP_FAILED);
  {
    WithoutIpcLock unprivileged;
    ASSERT_FALSE(has_ipc_lock());
    MemlockLimit none(0);
    const uintptr_t b = reinterpret_cast<uintptr_t>(buf.data());
    const size_t held = ((b + buf.size() + kPage - 1) / kPage) - b / kPage;  // the fixture's MR
    {
      EnvSetting limit("HCASIM_MEMLOCK", std::to_string((held + 8) * kPage));
      ibv_mr* eight = ibv_reg_mr(pd, p, 8 * kPage, kWritable);
      ASSERT_NE(eight, nullptr) << errno;                               // exactly at the limit
      EXPECT_EQ(reg_errno(pd, p + 8 * kPage, 1, kWritable), ENOMEM);  // one page over
      ASSERT_EQ(ibv_dereg_mr(eight), 0);
    }
    {
      EnvSetting unlimited("HCASIM_MEMLOCK", "unlimited");
      EXPECT_EQ(reg_errno(pd, p, 64 * kPage, kWritable), 0);
    }
    EXPECT_EQ(reg_errno(pd, p, kPage, kWritable), EPERM);  // unset: RLIMIT_MEMLOCK 0 again
  }
  ::munmap(p, 64 * kPage);
}

TEST_F(VerbsQp, ABadHcasimMemlockIsOneLineAndExitStatus2) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // the shim's I/O thread runs
  auto* p = static_cast<char*>(::mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(p, MAP_FAILED);
  for (const char* bad : {"8M", "-1", "", "unlimited ", "99999999999999999999999"}) {
    EXPECT_EXIT(
        {
          ::setenv("HCASIM_MEMLOCK", bad, 1);
          reg_errno(pd, p, kPage, kWritable);
        },
        testing::ExitedWithCode(2),
        "hcasim-verbs-emu: HCASIM_MEMLOCK=.*: not a number of bytes or \"unlimited\"")
        << bad;
  }
  ::munmap(p, kPage);
}

TEST_F(VerbsQp, DeallocPdWithLiveObjectsIsEbusy) {
  ibv_pd* other = ibv_alloc_pd(ctx);
  ASSERT_NE(other, nullptr);
  ibv_mr* m = ibv_reg_mr(other, buf.data(), 64, int{IBV_ACCESS_LOCAL_WRITE});
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(ibv_dealloc_pd(other), EBUSY);
  ASSERT_EQ(ibv_dereg_mr(m), 0);
  ibv_cq* cq = ibv_create_cq(ctx, 4, nullptr, nullptr, 0);
  ibv_qp* qp = make_qp(cq, cq, other);
  ASSERT_NE(qp, nullptr);
  EXPECT_EQ(ibv_dealloc_pd(other), EBUSY);
  ASSERT_EQ(ibv_destroy_qp(qp), 0);
  ibv_ah_attr ah{};
  ah.dlid = hcasim::testing::kLid;
  ah.port_num = 1;
  ibv_ah* h = ibv_create_ah(other, &ah);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(ibv_dealloc_pd(other), EBUSY);
  ASSERT_EQ(ibv_destroy_ah(h), 0);
  EXPECT_EQ(ibv_dealloc_pd(other), 0);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
}

TEST_F(VerbsQp, PollCqWithANegativeCountIsZero) {
  // libmlx4's mlx4_poll_cq: `for (npolled = 0; npolled < ne; ++npolled)`, then npolled.
  ibv_cq* cq = ibv_create_cq(ctx, 4, nullptr, nullptr, 0);
  ibv_wc wc{};
  EXPECT_EQ(ibv_poll_cq(cq, -1, &wc), 0);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
}

TEST_F(VerbsQp, CqsBeyondTheDevicesMaxCqAreEnomem) {
  ibv_device_attr dev{};
  ASSERT_EQ(ibv_query_device(ctx, &dev), 0);
  ASSERT_EQ(dev.max_cq, 65408);  // ConnectX-3 (ibv_devinfo -v on mlx4)
  std::vector<ibv_cq*> cqs;
  cqs.reserve(static_cast<size_t>(dev.max_cq));
  for (;;) {
    errno = 0;
    ibv_cq* c = ibv_create_cq(ctx, 1, nullptr, nullptr, 0);
    if (c == nullptr) break;
    cqs.push_back(c);
    ASSERT_LE(cqs.size(), static_cast<size_t>(dev.max_cq));
  }
  EXPECT_EQ(errno, ENOMEM);
  EXPECT_EQ(cqs.size(), static_cast<size_t>(dev.max_cq));
  ASSERT_EQ(ibv_destroy_cq(cqs.back()), 0);
  cqs.back() = ibv_create_cq(ctx, 1, nullptr, nullptr, 0);  // one freed, one more
  EXPECT_NE(cqs.back(), nullptr);
  for (ibv_cq* c : cqs) ibv_destroy_cq(c);
}

TEST_F(VerbsQp, QpsBeyondTheDevicesMaxQpAreEnomem) {
  // mlx4_qp_reserve_range: max_qp QPs (of one WR each way), then ENOMEM; one destroyed makes
  // room for one more. 131000 QPs hold about 380 MB (0.6 s to make).
#if defined(HCASIM_SANITIZE)
  GTEST_SKIP() << "131000 QPs under AddressSanitizer's shadow and redzones: over a gigabyte";
#endif
  ibv_device_attr dev{};
  ASSERT_EQ(ibv_query_device(ctx, &dev), 0);
  ASSERT_EQ(dev.max_qp, 131000);
  ibv_cq* cq = ibv_create_cq(ctx, 1, nullptr, nullptr, 0);
  ibv_qp_init_attr a{};
  a.send_cq = a.recv_cq = cq;
  a.qp_type = IBV_QPT_RC;
  a.cap.max_send_wr = a.cap.max_recv_wr = 1;
  a.cap.max_send_sge = a.cap.max_recv_sge = 1;
  std::vector<ibv_qp*> qps;
  qps.reserve(static_cast<size_t>(dev.max_qp));
  for (;;) {
    errno = 0;
    ibv_qp* q = ibv_create_qp(pd, &a);
    if (q == nullptr) break;
    qps.push_back(q);
    ASSERT_LE(qps.size(), static_cast<size_t>(dev.max_qp));
  }
  EXPECT_EQ(errno, ENOMEM);
  EXPECT_EQ(qps.size(), static_cast<size_t>(dev.max_qp));
  ASSERT_EQ(ibv_destroy_qp(qps.back()), 0);
  qps.back() = ibv_create_qp(pd, &a);
  EXPECT_NE(qps.back(), nullptr);
  for (ibv_qp* q : qps) ibv_destroy_qp(q);
  ibv_destroy_cq(cq);
}

TEST_F(VerbsQp, QpCqAndSrqSizesBeyondTheDevicesAreEinval) {
  // mlx4_ib's set_rq_size / set_user_sq_size refuse more WRs than max_qp_wr, more SGEs than
  // max_sge and more inline data than the device's (EINVAL); mlx4_ib_create_cq more CQEs than
  // its max_cqe; a post with more SGEs than max_sge is EINVAL, libmlx4's post_send of more
  // inline bytes than the QP's max_inline_data ENOMEM.
  ibv_device_attr dev{};
  ASSERT_EQ(ibv_query_device(ctx, &dev), 0);
  ASSERT_EQ(dev.max_qp_wr, 16351);
  ASSERT_EQ(dev.max_sge, 8);
  ASSERT_EQ(dev.max_cqe, 4194303);
  ibv_cq* cq = ibv_create_cq(ctx, dev.max_cqe, nullptr, nullptr, 0);
  ASSERT_NE(cq, nullptr);
  errno = 0;
  EXPECT_EQ(ibv_create_cq(ctx, dev.max_cqe + 1, nullptr, nullptr, 0), nullptr);
  EXPECT_EQ(errno, EINVAL);
  auto qp_errno = [&](uint32_t send_wr, uint32_t recv_wr, uint32_t sge, uint32_t inline_bytes) {
    ibv_qp_init_attr a{};
    a.send_cq = a.recv_cq = cq;
    a.qp_type = IBV_QPT_RC;
    a.cap.max_send_wr = send_wr;
    a.cap.max_recv_wr = recv_wr;
    a.cap.max_send_sge = a.cap.max_recv_sge = sge;
    a.cap.max_inline_data = inline_bytes;
    errno = 0;
    ibv_qp* q = ibv_create_qp(pd, &a);
    if (q == nullptr) return errno;
    EXPECT_EQ(ibv_destroy_qp(q), 0);
    return 0;
  };
  EXPECT_EQ(qp_errno(16351, 16351, 8, 912), 0);
  EXPECT_EQ(qp_errno(16352, 1, 1, 0), EINVAL);
  EXPECT_EQ(qp_errno(1, 16352, 1, 0), EINVAL);
  EXPECT_EQ(qp_errno(1, 1, 9, 0), EINVAL);
  EXPECT_EQ(qp_errno(1, 1, 1, 913), EINVAL);
  ibv_srq_init_attr sa{};
  sa.attr.max_wr = 16351;
  sa.attr.max_sge = 8;
  ibv_srq* srq = ibv_create_srq(pd, &sa);
  ASSERT_NE(srq, nullptr);
  EXPECT_EQ(ibv_destroy_srq(srq), 0);
  sa.attr.max_wr = 16352;
  errno = 0;
  EXPECT_EQ(ibv_create_srq(pd, &sa), nullptr);
  EXPECT_EQ(errno, EINVAL);
  sa.attr.max_wr = 1;
  sa.attr.max_sge = 9;
  errno = 0;
  EXPECT_EQ(ibv_create_srq(pd, &sa), nullptr);
  EXPECT_EQ(errno, EINVAL);
  // Posts beyond the device's SGEs (9: EINVAL) and the QP's inline bytes (65 on a QP of 64,
  // at RTS: ENOMEM).
  ibv_qp_init_attr a{};
  a.send_cq = a.recv_cq = cq;
  a.qp_type = IBV_QPT_RC;
  a.cap.max_send_wr = a.cap.max_recv_wr = 4;
  a.cap.max_send_sge = a.cap.max_recv_sge = 1;
  a.cap.max_inline_data = 64;
  ibv_qp* qp = ibv_create_qp(pd, &a);
  ibv_qp* peer = ibv_create_qp(pd, &a);
  ASSERT_TRUE(qp && peer);
  connect(qp, peer, 1, 2);
  ibv_sge sg[9];
  for (int i = 0; i < 9; ++i) sg[i] = {reinterpret_cast<uintptr_t>(buf.data() + 64 * i), 64, mr->lkey};
  ibv_send_wr wr{};
  wr.sg_list = sg;
  wr.num_sge = 9;
  wr.opcode = IBV_WR_SEND;
  ibv_send_wr* bad = nullptr;
  EXPECT_EQ(ibv_post_send(qp, &wr, &bad), EINVAL);
  EXPECT_EQ(bad, &wr);
  sg[0].length = 65;
  wr.num_sge = 1;
  wr.send_flags = IBV_SEND_INLINE;
  bad = nullptr;
  EXPECT_EQ(ibv_post_send(qp, &wr, &bad), ENOMEM);
  EXPECT_EQ(bad, &wr);
  EXPECT_EQ(ibv_destroy_qp(qp), 0);
  EXPECT_EQ(ibv_destroy_qp(peer), 0);
  EXPECT_EQ(ibv_destroy_cq(cq), 0);
}

TEST_F(VerbsQp, PdsAndSrqsBeyondTheDevicesMaxAreEnomem) {
  // mlx4_pd_alloc's and mlx4_srq_alloc's bitmaps: max_pd PDs (the fixture's among them, and
  // the RDMA CM's device PD when this process made one), max_srq SRQs, then ENOMEM; one freed
  // makes room for one more.
  ibv_device_attr dev{};
  ASSERT_EQ(ibv_query_device(ctx, &dev), 0);
  ASSERT_EQ(dev.max_pd, 32764);
  ASSERT_EQ(dev.max_srq, 65472);
  std::vector<ibv_pd*> pds;
  for (;;) {
    errno = 0;
    ibv_pd* p = ibv_alloc_pd(ctx);
    if (p == nullptr) break;
    pds.push_back(p);
    ASSERT_LE(pds.size(), static_cast<size_t>(dev.max_pd));
  }
  EXPECT_EQ(errno, ENOMEM);
  EXPECT_TRUE(pds.size() == static_cast<size_t>(dev.max_pd) - 1 || pds.size() == static_cast<size_t>(dev.max_pd) - 2)
      << pds.size() << " PDs besides the fixture's";
  ASSERT_EQ(ibv_dealloc_pd(pds.back()), 0);
  pds.back() = ibv_alloc_pd(ctx);
  EXPECT_NE(pds.back(), nullptr);
  for (ibv_pd* p : pds) ibv_dealloc_pd(p);
  std::vector<ibv_srq*> srqs;
  ibv_srq_init_attr sa{};
  sa.attr.max_wr = 1;
  sa.attr.max_sge = 1;
  for (;;) {
    errno = 0;
    ibv_srq* q = ibv_create_srq(pd, &sa);
    if (q == nullptr) break;
    srqs.push_back(q);
    ASSERT_LE(srqs.size(), static_cast<size_t>(dev.max_srq));
  }
  EXPECT_EQ(errno, ENOMEM);
  EXPECT_EQ(srqs.size(), static_cast<size_t>(dev.max_srq));
  ASSERT_EQ(ibv_destroy_srq(srqs.back()), 0);
  srqs.back() = ibv_create_srq(pd, &sa);
  EXPECT_NE(srqs.back(), nullptr);
  for (ibv_srq* q : srqs) ibv_destroy_srq(q);
}

TEST_F(VerbsQp, MrsBeyondTheDevicesMaxMrAreEnomem) {
  if (!has_ipc_lock()) GTEST_SKIP() << "max_mr one-page MRs pin 2 GiB: needs CAP_IPC_LOCK";
  ibv_device_attr dev{};
  ASSERT_EQ(ibv_query_device(ctx, &dev), 0);
  ASSERT_EQ(dev.max_mr, 524032);  // ConnectX-3 (ibv_devinfo -v on mlx4)
  std::vector<ibv_mr*> mrs;
  mrs.reserve(static_cast<size_t>(dev.max_mr));
  mrs.push_back(mr);  // the fixture's
  for (;;) {
    errno = 0;
    ibv_mr* m = ibv_reg_mr(pd, buf.data(), 64, int{IBV_ACCESS_LOCAL_WRITE});
    if (m == nullptr) break;
    mrs.push_back(m);
    ASSERT_LE(mrs.size(), static_cast<size_t>(dev.max_mr));
  }
  EXPECT_EQ(errno, ENOMEM);
  EXPECT_EQ(mrs.size(), static_cast<size_t>(dev.max_mr));
  for (size_t i = 1; i < mrs.size(); ++i) ASSERT_EQ(ibv_dereg_mr(mrs[i]), 0);
}

TEST_F(VerbsQp, ADeregisteredMrsIndexIsReusedWithAnotherKeyByte) {
  // mlx4 reuses an MPT entry once its MR is gone (mlx4_mpt_release); a process that registers
  // and deregisters in a loop must never run out of indexes (2^24 - 1) with no MR live.
  ibv_mr* first = ibv_reg_mr(pd, buf.data(), 4096, int{IBV_ACCESS_LOCAL_WRITE});
  ASSERT_NE(first, nullptr);
  const uint32_t index = first->lkey >> 8;
  uint32_t last_key = first->lkey;
  ASSERT_EQ(ibv_dereg_mr(first), 0);
  for (int i = 0; i < 100000; ++i) {
    ibv_mr* m = ibv_reg_mr(pd, buf.data(), 4096, int{IBV_ACCESS_LOCAL_WRITE});
    ASSERT_NE(m, nullptr) << "registration " << i << ": errno " << errno;
    ASSERT_EQ(m->lkey >> 8, index) << "registration " << i;
    ASSERT_NE(m->lkey, last_key) << "registration " << i << ": the last MR's key names the new one";
    last_key = m->lkey;
    ASSERT_EQ(ibv_dereg_mr(m), 0);
  }
}

TEST_F(VerbsQp, DeregDoesNotGrowWithTheNumberOfQps) {
  // ibv_dereg_mr waits for the accesses to its MR only, not for every QP of the device: with
  // 10000 idle QPs live (and 10000 more created and destroyed) a reg + dereg stays in
  // microseconds (waiting for every QP's lock, live or destroyed, it took 1.26 ms here).
  ibv_cq* cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
  std::vector<ibv_qp*> qps;
  for (int i = 0; i < 20000; ++i) {
    ibv_qp* q = make_qp(cq, cq);
    ASSERT_NE(q, nullptr) << "QP " << i;
    qps.push_back(q);
  }
  for (size_t i = 0; i < qps.size(); i += 2) ASSERT_EQ(ibv_destroy_qp(qps[i]), 0);
  constexpr int kRegs = 2000;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kRegs; ++i) {
    ibv_mr* m = ibv_reg_mr(pd, buf.data(), 4096, int{IBV_ACCESS_LOCAL_WRITE});
    ASSERT_NE(m, nullptr);
    ASSERT_EQ(ibv_dereg_mr(m), 0);
  }
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / kRegs;
  EXPECT_LT(us, 100.0) << "reg + dereg with 10000 QPs live";
  for (size_t i = 1; i < qps.size(); i += 2) ASSERT_EQ(ibv_destroy_qp(qps[i]), 0);
  ibv_destroy_cq(cq);
}

TEST_F(VerbsQp, RequestsOfTheSideThatWaitsForTheStreamTimeOutToo) {
  // Of two QPs on one port the larger QPN waits for the smaller one's stream (docs/emulate.md).
  // b's peer a never reaches RTR; c's peer QPN 1 does not exist. On a fabric their requests go
  // unanswered: retry_cnt + 1 local ACK timeouts, then RETRY_EXC_ERR (IBA 9.7.6.1.3). The
  // fixture's timeout 14 is 4.096 us x 2^14 = 67.1 ms; retry_cnt 7 makes 8 x 67.1 = 536.9 ms.
  ibv_cq* cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
  ibv_qp* a = make_qp(cq, cq);
  ibv_qp* b = make_qp(cq, cq);
  ibv_qp* c = make_qp(cq, cq);
  ASSERT_TRUE(a && b && c);
  ASSERT_LT(a->qp_num, b->qp_num);
  ASSERT_EQ(to_init(a), 0);
  for (ibv_qp* q : {b, c}) ASSERT_EQ(to_init(q), 0);
  ASSERT_EQ(to_rtr(b, a->qp_num, 1), 0);
  ASSERT_EQ(to_rtr(c, 1, 1), 0);
  for (ibv_qp* q : {b, c}) ASSERT_EQ(to_rts(q, 2), 0);
  const auto start = std::chrono::steady_clock::now();
  post_send(b, 7, 0, 64);
  post_send(c, 8, 0, 64);
  const auto got = poll_n(cq, 2);
  const auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(got.size(), 2u);
  for (const ibv_wc& w : got) EXPECT_EQ(w.status, IBV_WC_RETRY_EXC_ERR) << ibv_wc_status_str(w.status);
  EXPECT_GE(ms, 536.0);
  EXPECT_LT(ms, 3000.0);
  for (ibv_qp* q : {a, b, c}) ibv_destroy_qp(q);
  ibv_destroy_cq(cq);
}

TEST_F(VerbsQp, UcSendsWithNoStreamCompleteAsSentAsOnAnHca) {
  // UC has no ACK (IBA 9.8.2): an HCA completes a send once it is on the wire, whether or not
  // the peer QP is at RTR or exists; the packets are lost. b waits for a's stream (a never
  // reaches RTR), c's peer QPN 1 does not exist, d's DLID has no port: their sends complete
  // IBV_WC_SUCCESS, b's and c's after the kUcStreamWaitMs (2 s) wait for a stream, d's at once.
  ibv_cq* cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
  auto make_uc = [&] {
    ibv_qp_init_attr a{};
    a.send_cq = a.recv_cq = cq;
    a.qp_type = IBV_QPT_UC;
    a.cap.max_send_wr = a.cap.max_recv_wr = 4;
    a.cap.max_send_sge = a.cap.max_recv_sge = 1;
    return ibv_create_qp(pd, &a);
  };
  ibv_qp* a = make_uc();
  ibv_qp* b = make_uc();
  ibv_qp* c = make_uc();
  ibv_qp* d = make_uc();
  ASSERT_TRUE(a && b && c && d);
  ASSERT_LT(a->qp_num, b->qp_num);
  auto connect_uc = [](ibv_qp* q, uint32_t dest, uint16_t dlid) {
    ibv_qp_attr x{};
    x.qp_state = IBV_QPS_INIT;
    x.port_num = 1;
    x.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
    if (ibv_modify_qp(q, &x, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0) return false;
    x = {};
    x.qp_state = IBV_QPS_RTR;
    x.path_mtu = IBV_MTU_1024;
    x.dest_qp_num = dest;
    x.rq_psn = 1;
    x.ah_attr.dlid = dlid;
    x.ah_attr.port_num = 1;
    if (ibv_modify_qp(q, &x, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN) != 0)
      return false;
    x = {};
    x.qp_state = IBV_QPS_RTS;
    x.sq_psn = 2;
    return ibv_modify_qp(q, &x, IBV_QP_STATE | IBV_QP_SQ_PSN) == 0;
  };
  ASSERT_TRUE(connect_uc(b, a->qp_num, hcasim::testing::kLid));
  ASSERT_TRUE(connect_uc(c, 1, hcasim::testing::kLid));
  ASSERT_TRUE(connect_uc(d, 0x12345, 0x77));
  const auto start = std::chrono::steady_clock::now();
  post_send(d, 9, 0, 64);
  const auto first = poll_n(cq, 1);
  const auto first_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].wr_id, 9u);
  EXPECT_EQ(first[0].status, IBV_WC_SUCCESS) << ibv_wc_status_str(first[0].status);
  EXPECT_LT(first_ms, 1000.0);
  post_send(b, 7, 0, 64);
  post_send(c, 8, 0, 64);
  const auto got = poll_n(cq, 2);
  const auto ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(got.size(), 2u);
  for (const ibv_wc& w : got) EXPECT_EQ(w.status, IBV_WC_SUCCESS) << w.wr_id << ": " << ibv_wc_status_str(w.status);
  EXPECT_GE(ms, 1990.0);
  EXPECT_LT(ms, 5000.0);
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  ASSERT_EQ(ibv_query_qp(b, &attr, IBV_QP_STATE, &init), 0);
  EXPECT_EQ(attr.qp_state, IBV_QPS_RTS);
  for (ibv_qp* q : {a, b, c, d}) ibv_destroy_qp(q);
  ibv_destroy_cq(cq);
}

TEST_F(VerbsQp, AfterDeregReturnsThePeersWritesNoLongerTouchTheMemory) {
  // b writes into a's MR in a loop; a deregisters the MR and unmaps its pages at once. On an
  // HCA the writes after the dereg fail (REM_ACCESS_ERR) and the memory is not touched; here
  // a write that had passed the key check when dereg began must be finished when it returns,
  // or the unmapped page faults the process.
  ibv_cq* cq = ibv_create_cq(ctx, 256, nullptr, nullptr, 0);
  ibv_qp* a = make_qp(cq, cq);
  ibv_qp* b = make_qp(cq, cq);
  connect(a, b, 100, 200);
  const size_t len = 64 * kPage;
  auto* target = static_cast<char*>(::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(target, MAP_FAILED);
  ibv_mr* tmr = ibv_reg_mr(pd, target, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
  ASSERT_NE(tmr, nullptr);
  int posted = 0;
  auto write_one = [&] {
    ibv_sge s{reinterpret_cast<uintptr_t>(buf.data()), 32768, mr->lkey};
    ibv_send_wr wr{};
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = reinterpret_cast<uintptr_t>(target) + 16384;
    wr.wr.rdma.rkey = tmr->rkey;
    ibv_send_wr* bad = nullptr;
    if (ibv_post_send(b, &wr, &bad) == 0) ++posted;
  };
  for (int i = 0; i < 32; ++i) write_one();
  // Let some land, then dereg with writes still in flight and unmap at once.
  const auto first = poll_n(cq, 1);  // one or a few (it polls 8 at a time)
  ASSERT_GE(first.size(), 1u);
  for (const ibv_wc& w : first) EXPECT_EQ(w.status, IBV_WC_SUCCESS);
  ASSERT_EQ(ibv_dereg_mr(tmr), 0);
  ASSERT_EQ(::munmap(target, len), 0);
  const size_t left = static_cast<size_t>(posted) - first.size();
  const auto rest = poll_n(cq, left);
  ASSERT_EQ(rest.size(), left);
  // In order: successes, then the first write that found the key gone fails with
  // REM_ACCESS_ERR (IBA 9.7.5.2.2: the responder NAKs it, b goes to ERROR), then flushes.
  size_t i = 0;
  while (i < rest.size() && rest[i].status == IBV_WC_SUCCESS) ++i;
  if (i < rest.size()) {
    EXPECT_EQ(rest[i].status, IBV_WC_REM_ACCESS_ERR) << ibv_wc_status_str(rest[i].status);
    for (++i; i < rest.size(); ++i) EXPECT_EQ(rest[i].status, IBV_WC_WR_FLUSH_ERR);
  }
  ibv_destroy_qp(a);
  ibv_destroy_qp(b);
  ibv_destroy_cq(cq);
}

TEST_F(VerbsQp, AForkedChildsVerbsLeaveTheParentsQpsAndLidAlone) {
  // ibv_fork_init(3): a child must not disturb its parent's RDMA. The parent's pair (LID 1)
  // moves a SEND before and after a child that posts on the inherited QP and destroys it, then
  // opens the device again, gets a port of its own (LID 2), moves a SEND between two QPs of its
  // own and exits. The inherited objects are inert in the child (nothing of its post reaches
  // the parent's peer), and the child's exit gives back its LID, not the parent's.
  ibv_cq* cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
  ibv_qp* a = make_qp(cq, cq);
  ibv_qp* b = make_qp(cq, cq);
  connect(a, b, 10, 20);
  post_recv(b, 1, 0, 64);
  post_send(a, 2, 4096, 64);
  ASSERT_EQ(poll_n(cq, 2).size(), 2u);
  post_recv(b, 3, 0, 64);
  const std::string subnet = std::getenv("HCASIM_SUBNET");
  // The parent's I/O thread idle (in epoll_wait, no lock held) when the child is made: it takes a
  // QP's lock for each frame it reads or writes, the last ACK's too, and a child made while it
  // holds one blocks in that QP (docs/emulate.md, fork). Natively the window is microseconds;
  // under valgrind, which runs one thread at a time and lets another run at a system call, the
  // fork comes while the thread is in its read under the lock.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const pid_t child = ::fork();
  if (child == 0) {
    hcasim::testing::forked_child_leaks_are_not_errors();
    int failed = 0;  // the first check that failed, as the exit status
    auto check = [&failed](bool ok, int code) {
      if (!ok && failed == 0) failed = code;
    };
    ibv_sge s{reinterpret_cast<uintptr_t>(buf.data() + 8192), 64, mr->lkey};
    ibv_send_wr wr{};
    wr.wr_id = 99;
    wr.sg_list = &s;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_SEND;
    wr.send_flags = IBV_SEND_SIGNALED;
    ibv_send_wr* bad = nullptr;
    ibv_post_send(a, &wr, &bad);  // the parent's QP: goes nowhere
    ibv_destroy_qp(a);
    ibv_context* c = hcasim::testing::context();
    ibv_port_attr pa{};
    check(c != nullptr && ibv_query_port(c, 1, &pa) == 0, 10);
    check(pa.lid == 2, 11);
    ibv_pd* p = ibv_alloc_pd(c);
    std::vector<char> mine(1 << 12);
    ibv_mr* m = ibv_reg_mr(p, mine.data(), mine.size(), int{IBV_ACCESS_LOCAL_WRITE});
    ibv_cq* q = ibv_create_cq(c, 16, nullptr, nullptr, 0);
    ibv_qp* x = make_qp(q, q, p);
    ibv_qp* y = make_qp(q, q, p);
    check(p && m && q && x && y, 12);
    if (failed == 0) {
      check(to_init(x) == 0 && to_init(y) == 0, 13);
      check(to_rtr(x, y->qp_num, 5, kRtrMask, pa.lid) == 0 && to_rtr(y, x->qp_num, 5, kRtrMask, pa.lid) == 0, 14);
      check(to_rts(x, 5) == 0 && to_rts(y, 5) == 0, 15);
      ibv_sge rs{reinterpret_cast<uintptr_t>(mine.data()), 64, m->lkey};
      ibv_recv_wr rw{};
      rw.sg_list = &rs;
      rw.num_sge = 1;
      ibv_recv_wr* rbad = nullptr;
      check(ibv_post_recv(y, &rw, &rbad) == 0, 16);
      ibv_sge ss{reinterpret_cast<uintptr_t>(mine.data() + 2048), 64, m->lkey};
      wr.sg_list = &ss;
      check(ibv_post_send(x, &wr, &bad) == 0, 17);
      const auto got = poll_n(q, 2);
      check(got.size() == 2 && got[0].status == IBV_WC_SUCCESS && got[1].status == IBV_WC_SUCCESS, 18);
      ibv_destroy_qp(x);
      ibv_destroy_qp(y);
    }
    std::exit(failed);  // exit handlers run: the child's port gives back LID 2
  }
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the child's first failed check (see the test)";
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ibv_wc none{};
  EXPECT_EQ(ibv_poll_cq(cq, 1, &none), 0) << "the child's post on the parent's QP reached the peer";
  EXPECT_TRUE(std::filesystem::exists(subnet + "/lid-0001"));
  EXPECT_FALSE(std::filesystem::exists(subnet + "/lid-0002"));
  post_send(a, 4, 4096, 64);
  const auto after = poll_n(cq, 2);
  ASSERT_EQ(after.size(), 2u);
  for (const ibv_wc& w : after) EXPECT_EQ(w.status, IBV_WC_SUCCESS) << ibv_wc_status_str(w.status);
  ibv_destroy_qp(a);
  ibv_destroy_qp(b);
  ibv_destroy_cq(cq);
}

/// A synchronous RDMA CM listener on 127.0.0.1 (rdma_create_ep, RAI_PASSIVE) whose thread accepts
/// one request and keeps the connection until the test ends.
struct CmServer {
  rdma_cm_id* listen_id = nullptr;
  rdma_cm_id* conn = nullptr;
  std::string port;
  std::thread thread;
  std::atomic<int> accepted{-1};  // rdma_accept's result
  CmServer() {
    rdma_addrinfo hints{};
    hints.ai_flags = RAI_PASSIVE;
    hints.ai_family = AF_INET;
    rdma_addrinfo* passive = nullptr;
    EXPECT_EQ(rdma_getaddrinfo("127.0.0.1", "0", &hints, &passive), 0);
    ibv_qp_init_attr attr{};
    attr.cap.max_send_wr = attr.cap.max_recv_wr = 1;
    attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
    EXPECT_EQ(rdma_create_ep(&listen_id, passive, nullptr, &attr), 0);
    rdma_freeaddrinfo(passive);
    EXPECT_EQ(rdma_listen(listen_id, 0), 0);
    port = std::to_string(ntohs(rdma_get_src_port(listen_id)));
  }
  void serve_one() {
    thread = std::thread([this] {
      if (rdma_get_request(listen_id, &conn) == 0) accepted = rdma_accept(conn, nullptr);
    });
  }
  ~CmServer() {
    if (thread.joinable()) thread.join();
    if (conn != nullptr) rdma_destroy_ep(conn);
    rdma_destroy_ep(listen_id);
  }
  /// A raw TCP connection to the listener (close-on-exec), or -1.
  int raw_connect() const {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sin.sin_port = htons(static_cast<uint16_t>(std::stoi(port)));
    if (::connect(fd, reinterpret_cast<sockaddr*>(&sin), sizeof sin) != 0) {
      ::close(fd);
      return -1;
    }
    return fd;
  }
};

/// rdma_connect of a synchronous id to 127.0.0.1:`port` with a QP: its result and the seconds it took.
std::pair<int, double> cm_connect(const std::string& port) {
  rdma_addrinfo* active = nullptr;
  EXPECT_EQ(rdma_getaddrinfo("127.0.0.1", port.c_str(), nullptr, &active), 0);
  ibv_qp_init_attr attr{};
  attr.cap.max_send_wr = attr.cap.max_recv_wr = 1;
  attr.cap.max_send_sge = attr.cap.max_recv_sge = 1;
  rdma_cm_id* id = nullptr;
  EXPECT_EQ(rdma_create_ep(&id, active, nullptr, &attr), 0);
  rdma_freeaddrinfo(active);
  const auto t0 = std::chrono::steady_clock::now();
  const int rc = rdma_connect(id, nullptr);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  rdma_destroy_ep(id);
  return {rc, s};
}

TEST(VerbsCm, AnIdleStrangerDoesNotHoldUpAGenuineClient) {
  // A local process connects to rping's port and says nothing; a genuine client connecting
  // after it is served at once (each request is read on its own, within 2 s), not after the
  // stranger's CM timeout (10 s, when the listener read each REQ in turn).
  CmServer server;
  server.serve_one();
  const int idle = server.raw_connect();
  ASSERT_GE(idle, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto [rc, seconds] = cm_connect(server.port);
  EXPECT_EQ(rc, 0) << std::strerror(errno);
  EXPECT_LT(seconds, 1.0);
  server.thread.join();
  EXPECT_EQ(server.accepted.load(), 0);
  ::close(idle);
}

TEST(VerbsCm, AStrangersReqWithoutTheSubnetsSecretIsClosedUnanswered) {
  // A local process of another user (it cannot read the subnet's secret) sends a well-formed CM
  // REQ to the listener: the listener's challenge is all it gets, the connection is closed
  // after the 2 s handshake time, and no CONNECT_REQUEST reaches the program. Then a genuine
  // client connects.
  CmServer server;
  const int stranger = server.raw_connect();
  ASSERT_GE(stranger, 0);
  const std::vector<uint8_t> req =
      hcasim::emu::encode(hcasim::emu::Packet{.op = hcasim::emu::Op::CmReq, .local_qpn = 0x1234});
  ASSERT_EQ(::write(stranger, req.data(), req.size()), static_cast<ssize_t>(req.size()));
  std::vector<uint8_t> got;
  uint8_t chunk[256];
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    pollfd pfd{stranger, POLLIN, 0};
    if (::poll(&pfd, 1, 5000) <= 0) break;
    const ssize_t k = ::read(stranger, chunk, sizeof chunk);
    if (k <= 0) break;
    got.insert(got.end(), chunk, chunk + k);
  }
  const double closed_after = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(got.size(), hcasim::emu::kChallengeSize) << "the challenge and nothing else (no CM REP)";
  EXPECT_GE(closed_after, 1.9);
  EXPECT_LT(closed_after, 4.0);
  ::close(stranger);
  pollfd pfd{server.listen_id->channel->fd, POLLIN, 0};
  EXPECT_EQ(::poll(&pfd, 1, 100), 0) << "a CONNECT_REQUEST for the stranger";
  server.serve_one();
  const auto [rc, seconds] = cm_connect(server.port);
  EXPECT_EQ(rc, 0) << std::strerror(errno);
  EXPECT_LT(seconds, 1.0);
}

TEST(VerbsCm, AListenerOutOfDescriptorsDoesNotSpin) {
  // accept(2) fails EMFILE while connections wait in the backlog: the listener tries again
  // every 100 ms, as the subnet port does, instead of spinning on the error.
#if defined(HCASIM_SANITIZE)
  // As EmuAuth.APortOutOfDescriptorsBacksOffInsteadOfSpinning: UBSan's vptr check needs a
  // descriptor, and reports a false finding in a process without one.
  GTEST_SKIP() << "needs a process without a free descriptor, where UBSan's vptr check cannot work";
#endif
  CmServer server;
  std::vector<int> waiting;  // made now, connected once no descriptor is left
  for (int i = 0; i < 4; ++i) waiting.push_back(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  for (int fd : waiting) ASSERT_GE(fd, 0);
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sin.sin_port = htons(static_cast<uint16_t>(std::stoi(server.port)));
  const int lowest = ::dup(0);
  ASSERT_GE(lowest, 0);
  ::close(lowest);
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  rlimit tight = saved;
  tight.rlim_cur = static_cast<rlim_t>(lowest);  // no descriptor left for accept(2)
  rusage before{}, after{};
  ::getrusage(RUSAGE_SELF, &before);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &tight), 0);
  for (int fd : waiting) EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&sin), sizeof sin), 0);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  ::setrlimit(RLIMIT_NOFILE, &saved);
  ::getrusage(RUSAGE_SELF, &after);
  auto cpu = [](const rusage& r) {
    return static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
           static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
  };
  EXPECT_LT(cpu(after) - cpu(before), 0.25) << "CPU seconds over 1 s out of descriptors";
  for (int fd : waiting) ::close(fd);
}

TEST(VerbsOpen, ASubnetDirectoryOthersCanWriteFailsTheOpenWithOneLine) {
  // Another user could plant a claim in it (emu/subnet.h): the port does not join, and the
  // open says so rather than giving a context whose ACTIVE port has LID 0. The open is a forked
  // child's, whose first verbs call makes a port of its own whether or not this process's
  // other tests opened the device before (the port joins once per process).
  const std::string dir = std::getenv("HCASIM_SUBNET");
  ASSERT_EQ(::chmod(dir.c_str(), 0777), 0);
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    hcasim::testing::forked_child_leaks_are_not_errors();
    ::dup2(out[1], 2);
    int n = 0;
    ibv_device** list = ibv_get_device_list(&n);
    errno = 0;
    ibv_context* c = n == 1 ? ibv_open_device(list[0]) : nullptr;
    const int err = errno;
    ibv_free_device_list(list);
    ::_exit(n != 1 ? 1 : c != nullptr ? 2 : err == ENODEV ? 0 : 3);
  }
  ::close(out[1]);
  std::string said;
  char chunk[512];
  for (ssize_t k; (k = ::read(out[0], chunk, sizeof chunk)) > 0;) said.append(chunk, static_cast<size_t>(k));
  ::close(out[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ::chmod(dir.c_str(), 0700);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: no device listed, 2: the open succeeded, 3: errno other than ENODEV";
  EXPECT_EQ(said, "hcasim-verbs-emu: emulated subnet " + dir + ": mode 0777 lets group or others write it; chmod 700 it\n");
}

TEST_F(VerbsQp, ADatagramOfAnotherPartitionCountsInTheBadPkeyCounter) {
  // A UD datagram with the subnet's MAC (a process of this user) but another partition's P_Key
  // (0x8001) fails the UD QP's P_Key check (IBA 10.9.4): no completion, and ibv_query_port's
  // bad_pkey_cntr (PortInfo P_KeyViolations) counts it. The same datagram with the default
  // P_Key is then received: the drop was the P_Key's.
  ibv_cq* cq = ibv_create_cq(ctx, 8, nullptr, nullptr, 0);
  ibv_qp* q = make_qp(cq, cq, nullptr, IBV_QPT_UD);
  ASSERT_NE(q, nullptr);
  constexpr uint32_t kQkey = 0x11111111;
  ibv_qp_attr m{};
  m.qp_state = IBV_QPS_INIT;
  m.port_num = 1;
  m.qkey = kQkey;
  ASSERT_EQ(ibv_modify_qp(q, &m, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY), 0);
  m.qp_state = IBV_QPS_RTR;
  ASSERT_EQ(ibv_modify_qp(q, &m, IBV_QP_STATE), 0);
  post_recv(q, 1, 0, 40 + 64);
  ibv_port_attr before{};
  ASSERT_EQ(ibv_query_port(ctx, 1, &before), 0);
  // The port's UDP port number, from its claim file as any local process reads it.
  char claim[32];
  std::snprintf(claim, sizeof claim, "/lid-%04x", before.lid);
  std::ifstream f(hcasim::emu::subnet_dir() + claim);
  long pid = 0;
  unsigned port = 0;
  f >> pid >> port;
  ASSERT_NE(port, 0u);
  auto send_datagram = [&](uint16_t pkey) {
    std::vector<uint8_t> d = hcasim::emu::encode({.op = hcasim::emu::Op::UdSendOnly, .dest_qpn = q->qp_num,
                                                  .pkey = pkey, .local_qpn = 0x99, .qkey = kQkey, .slid = before.lid,
                                                  .payload = std::vector<uint8_t>(64, 0xEE)});
    const auto mac = hcasim::emu::datagram_mac(hcasim::emu::subnet_secret(), d);
    d.insert(d.end(), mac.begin(), mac.end());
    const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(static_cast<uint16_t>(port));
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::sendto(fd, d.data(), d.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to),
              static_cast<ssize_t>(d.size()));
    ::close(fd);
  };
  send_datagram(0x8001);
  ibv_port_attr after{};
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  do {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_EQ(ibv_query_port(ctx, 1, &after), 0);
  } while (after.bad_pkey_cntr == before.bad_pkey_cntr && std::chrono::steady_clock::now() < end);
  EXPECT_EQ(after.bad_pkey_cntr, before.bad_pkey_cntr + 1);
  ibv_wc wc{};
  EXPECT_EQ(ibv_poll_cq(cq, 1, &wc), 0) << "a datagram of another partition was received";
  send_datagram(hcasim::hca::kDefaultPkey);
  const auto got = poll_n(cq, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].status, IBV_WC_SUCCESS);
  EXPECT_EQ(got[0].byte_len, 40u + 64u);
  EXPECT_EQ(static_cast<uint8_t>(buf[40]), 0xEE);
  ASSERT_EQ(ibv_query_port(ctx, 1, &after), 0);
  EXPECT_EQ(after.bad_pkey_cntr, before.bad_pkey_cntr + 1);
  ibv_destroy_qp(q);
  ibv_destroy_cq(cq);
}

TEST_F(VerbsQp, EverySocketOfTheDeviceIsCloseOnExec) {
  // A program that runs another (system("exec sleep 6 &")) must not hand it the port's
  // listener, its datagram sockets, a QP's stream or an RDMA CM listener and its streams: the
  // child would hold the port after the program exits.
  ibv_cq* cq = ibv_create_cq(ctx, 16, nullptr, nullptr, 0);
  ibv_qp* a = make_qp(cq, cq);
  ibv_qp* b = make_qp(cq, cq);
  connect(a, b, 1, 2);
  post_recv(b, 1, 0, 64);
  post_send(a, 2, 4096, 64);
  ASSERT_EQ(poll_n(cq, 2).size(), 2u);  // both streams up
  rdma_cm_id* listener = nullptr;
  ASSERT_EQ(rdma_create_id(nullptr, &listener, nullptr, RDMA_PS_TCP), 0);
  sockaddr_in sin{};
  sin.sin_family = AF_INET;
  sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(rdma_bind_addr(listener, reinterpret_cast<sockaddr*>(&sin)), 0);
  ASSERT_EQ(rdma_listen(listener, 8), 0);
  sin.sin_port = rdma_get_src_port(listener);
  const int raw = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);  // a client that stays idle
  ASSERT_EQ(::connect(raw, reinterpret_cast<sockaddr*>(&sin), sizeof sin), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the listener has accepted it
  int sockets = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const std::string target = std::filesystem::read_symlink(e.path(), ec).string();
    if (ec || !target.starts_with("socket:")) continue;
    ++sockets;
    const int fd = std::stoi(e.path().filename().string());
    EXPECT_NE(::fcntl(fd, F_GETFD) & FD_CLOEXEC, 0) << "descriptor " << fd << " (" << target << ")";
  }
  // The port's TCP listener and UDP socket, its sending socket, two stream ends, the CM
  // listener, the idle client and its accepted end.
  EXPECT_GE(sockets, 8);
  ::close(raw);
  rdma_destroy_id(listener);
  ibv_destroy_qp(a);
  ibv_destroy_qp(b);
  ibv_destroy_cq(cq);
}

}  // namespace
