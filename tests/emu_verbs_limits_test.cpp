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
// a subnet directory others may write failing the open, and a forked child's verbs leaving
// its parent's alone.
#include <gtest/gtest.h>

#include <infiniband/verbs.h>
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
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <string>
#include <thread>
#include <vector>

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

TEST_F(VerbsQp, DeallocPdWithLiveObjectsIsEbusy) {
  ibv_pd* other = ibv_alloc_pd(ctx);
  ASSERT_NE(other, nullptr);
  ibv_mr* m = ibv_reg_mr(other, buf.data(), 64, IBV_ACCESS_LOCAL_WRITE);
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
    ibv_mr* m = ibv_reg_mr(pd, buf.data(), 64, IBV_ACCESS_LOCAL_WRITE);
    if (m == nullptr) break;
    mrs.push_back(m);
    ASSERT_LE(mrs.size(), static_cast<size_t>(dev.max_mr));
  }
  EXPECT_EQ(errno, ENOMEM);
  EXPECT_EQ(mrs.size(), static_cast<size_t>(dev.max_mr));
  for (size_t i = 1; i < mrs.size(); ++i) ASSERT_EQ(ibv_dereg_mr(mrs[i]), 0);
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
  const pid_t child = ::fork();
  if (child == 0) {
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
    ibv_mr* m = ibv_reg_mr(p, mine.data(), mine.size(), IBV_ACCESS_LOCAL_WRITE);
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

TEST(VerbsOpen, ASubnetDirectoryOthersCanWriteFailsTheOpenWithOneLine) {
  // Another user could plant a claim in it (emu/subnet.h): the port does not join, and the
  // open says so rather than giving a context whose ACTIVE port has LID 0.
  const std::string dir = std::getenv("HCASIM_SUBNET");
  ASSERT_EQ(::chmod(dir.c_str(), 0777), 0);
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  ASSERT_EQ(n, 1);
  ::testing::internal::CaptureStderr();
  errno = 0;
  ibv_context* c = ibv_open_device(list[0]);
  const int err = errno;
  const std::string said = ::testing::internal::GetCapturedStderr();
  ibv_free_device_list(list);
  ::chmod(dir.c_str(), 0700);
  EXPECT_EQ(c, nullptr);
  EXPECT_EQ(err, ENODEV);
  EXPECT_EQ(said, "hcasim-verbs-emu: emulated subnet " + dir + ": mode 0777 lets group or others write it; chmod 700 it\n");
}

}  // namespace
