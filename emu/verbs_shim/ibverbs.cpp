// The libibverbs half of the verbs shim (emu/verbs_shim/shim.h): the functions of
// <infiniband/verbs.h> (rdma-core 44) that hw/rdma_device.cpp calls, with their names, types
// and return conventions (the man pages of each, section 3), on the emulated HCA; and the
// context ops behind verbs.h's inline ibv_post_send, ibv_post_recv, ibv_poll_cq and
// ibv_req_notify_cq.
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#if defined(HCASIM_SANITIZE)
#include <sanitizer/lsan_interface.h>
#endif

#include <array>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <string>
#include <new>
#include <vector>

#include "emu/verbs_shim/device.h"
#include "emu/verbs_shim/resources.h"
#include "emu/verbs_shim/shim.h"

#include <fmt/format.h>

#include "model/error.h"
#include "model/fault.h"

// verbs.h makes ibv_reg_mr a macro (choosing ibv_reg_mr or ibv_reg_mr_iova2 by the access
// flags); the shim defines the function itself.
#undef ibv_reg_mr

namespace hcasim::emu::shim {

namespace {

/// The inverse of to_ibv_status, for completions: sdp::WcStatus -> ibv_wc_status (ibv_poll_cq(3)).
ibv_wc_status to_ibv_status(sdp::WcStatus s) {
  switch (s) {
    case sdp::WcStatus::Success: return IBV_WC_SUCCESS;
    case sdp::WcStatus::LocLenErr: return IBV_WC_LOC_LEN_ERR;
    case sdp::WcStatus::LocProtErr: return IBV_WC_LOC_PROT_ERR;
    case sdp::WcStatus::RemAccessErr: return IBV_WC_REM_ACCESS_ERR;
    case sdp::WcStatus::RemInvReqErr: return IBV_WC_REM_INV_REQ_ERR;
    case sdp::WcStatus::RemOpErr: return IBV_WC_REM_OP_ERR;
    case sdp::WcStatus::RetryExcErr: return IBV_WC_RETRY_EXC_ERR;
    case sdp::WcStatus::RnrRetryExcErr: return IBV_WC_RNR_RETRY_EXC_ERR;
    case sdp::WcStatus::WrFlushErr: return IBV_WC_WR_FLUSH_ERR;
    case sdp::WcStatus::MwBindErr: return IBV_WC_MW_BIND_ERR;
  }
  return IBV_WC_GENERAL_ERR;
}

ibv_wc_opcode to_ibv_opcode(sdp::WcOpcode op) {
  switch (op) {
    case sdp::WcOpcode::Send: return IBV_WC_SEND;
    case sdp::WcOpcode::RdmaWrite: return IBV_WC_RDMA_WRITE;
    case sdp::WcOpcode::RdmaRead: return IBV_WC_RDMA_READ;
    case sdp::WcOpcode::Recv: return IBV_WC_RECV;
    case sdp::WcOpcode::CompSwap: return IBV_WC_COMP_SWAP;
    case sdp::WcOpcode::FetchAdd: return IBV_WC_FETCH_ADD;
  }
  return IBV_WC_SEND;
}

}  // namespace

void to_ibv_wc(const hca::Cqe& e, ibv_wc& w) {
  const sdp::Wc& c = e.wc;
  std::memset(&w, 0, sizeof w);
  w.wr_id = c.wr_id;
  w.status = to_ibv_status(c.status);
  w.opcode = to_ibv_opcode(c.opcode);
  if (e.kind == hca::Cqe::Kind::RecvRdmaWithImm) w.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
  if (e.kind == hca::Cqe::Kind::BindMw) w.opcode = IBV_WC_BIND_MW;
  if (e.kind == hca::Cqe::Kind::LocalInv) w.opcode = IBV_WC_LOCAL_INV;
  w.byte_len = c.byte_len;
  w.qp_num = c.qp_num;
  w.src_qp = e.src_qp;
  w.slid = e.slid;
  if (e.grh) w.wc_flags |= IBV_WC_GRH;
  if (e.with_imm) {
    w.wc_flags |= IBV_WC_WITH_IMM;
    w.imm_data = e.imm;
  }
  if (e.with_inv) {  // libmlx4 mlx4_poll_one: the R_Key in host order, in the imm_data union
    w.wc_flags |= IBV_WC_WITH_INV;
    w.invalidated_rkey = e.imm;
  }
}

unsigned to_access(unsigned flags) {
  unsigned a = to_qp_access(flags);
  if ((flags & (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)) != 0) a |= sdp::kLocalWrite;
  if ((flags & IBV_ACCESS_MW_BIND) != 0) a |= hca::kMwBind;
  return a;
}

unsigned to_qp_access(unsigned flags) {
  unsigned a = 0;
  if ((flags & IBV_ACCESS_REMOTE_WRITE) != 0) a |= sdp::kRemoteWrite;
  if ((flags & IBV_ACCESS_REMOTE_READ) != 0) a |= sdp::kRemoteRead;
  if ((flags & IBV_ACCESS_REMOTE_ATOMIC) != 0) a |= hca::kRemoteAtomic;
  return a;
}

namespace {

/// An SGE list of at most sdp::kMaxSge entries into `out`; false when longer.
template <class Wr>
bool copy_sges(const Wr& wr, std::array<sdp::Sge, sdp::kMaxSge>& out, uint8_t& n) {
  if (wr.num_sge < 0 || static_cast<size_t>(wr.num_sge) > sdp::kMaxSge) return false;
  n = static_cast<uint8_t>(wr.num_sge);
  for (uint8_t i = 0; i < n; ++i) out[i] = {wr.sg_list[i].addr, wr.sg_list[i].length, wr.sg_list[i].lkey};
  return true;
}

/// ops.post_send (ibv_post_send(3)): SEND, RDMA WRITE, RDMA READ, their WITH_IMM forms
/// (imm_data passed through as given), SEND_WITH_INV on RC (the peer invalidates the type 2
/// window of invalidate_rkey: IBV_WC_WITH_INV on its receive), the atomics ATOMIC_CMP_AND_SWP /
/// ATOMIC_FETCH_AND_ADD, and the local BIND_MW (a window's bind: IBV_WC_BIND_MW, or MW_BIND_ERR
/// when refused) and LOCAL_INV (a type 2 window's invalidation: IBV_WC_LOCAL_INV); UD with its
/// address handle.
/// Returns 0, or the errno of the first WR not posted, *bad_wr at it:
/// EINVAL for an opcode the shim does not know, too many SGEs, a UD WR without an address
/// handle or a BIND_MW without its window or MR, else the HCA core's (hca::post_errno: the QP's state, the opcode for its type, inline
/// rules; ENOMEM for a full send queue). An atomic's length and alignment are not checked here
/// (libmlx4 does not): they fail in its completion.
int post_send(ibv_qp* ibqp, ibv_send_wr* wr, ibv_send_wr** bad_wr) {
  QpObj* q = qp_of(ibqp);
  for (; wr != nullptr; wr = wr->next) {
    hca::SendWqe w;
    sdp::SendWr& r = w.wr;
    hca::WrExt& x = w.x;
    r.wr_id = wr->wr_id;
    int err = 0;
    switch (wr->opcode) {
      case IBV_WR_SEND: r.opcode = sdp::WrOpcode::Send; break;
      case IBV_WR_SEND_WITH_IMM:
        r.opcode = sdp::WrOpcode::Send;
        x.kind = hca::WrExt::Kind::SendImm;
        break;
      case IBV_WR_RDMA_WRITE: r.opcode = sdp::WrOpcode::RdmaWrite; break;
      case IBV_WR_RDMA_WRITE_WITH_IMM:
        r.opcode = sdp::WrOpcode::RdmaWrite;
        x.kind = hca::WrExt::Kind::WriteImm;
        break;
      case IBV_WR_RDMA_READ: r.opcode = sdp::WrOpcode::RdmaRead; break;
      case IBV_WR_ATOMIC_CMP_AND_SWP: r.opcode = sdp::WrOpcode::AtomicCmpSwap; break;
      case IBV_WR_ATOMIC_FETCH_AND_ADD: r.opcode = sdp::WrOpcode::AtomicFetchAdd; break;
      case IBV_WR_BIND_MW:
        if (wr->bind_mw.mw == nullptr || wr->bind_mw.bind_info.mr == nullptr) {
          err = EINVAL;
          break;
        }
        x.kind = hca::WrExt::Kind::BindMw;
        x.mw_key = wr->bind_mw.mw->rkey;
        x.mw_new_key = wr->bind_mw.rkey;
        x.mw_mr_key = wr->bind_mw.bind_info.mr->lkey;
        x.mw_addr = wr->bind_mw.bind_info.addr;
        x.mw_len = wr->bind_mw.bind_info.length;
        x.mw_access = to_qp_access(wr->bind_mw.bind_info.mw_access_flags);
        break;
      case IBV_WR_LOCAL_INV: x.kind = hca::WrExt::Kind::LocalInv; break;
      case IBV_WR_SEND_WITH_INV:
        r.opcode = sdp::WrOpcode::Send;
        x.kind = hca::WrExt::Kind::SendInv;
        break;
      default: err = EINVAL; break;
    }
    x.imm = wr->imm_data;  // LOCAL_INV and SEND_WITH_INV: invalidate_rkey, the same union
    if (ibqp->qp_type == IBV_QPT_XRC_SEND) x.xrc_srqn = wr->qp_type.xrc.remote_srqn;  // the XRCETH's
    if (ibqp->qp_type == IBV_QPT_UD && err == 0) {  // to the address handle's port
      if (wr->wr.ud.ah == nullptr) {
        err = EINVAL;
      } else {
        x.ud_dlid = reinterpret_cast<AhObj*>(wr->wr.ud.ah)->dlid;
        x.ud_qpn = wr->wr.ud.remote_qpn;
        x.ud_qkey = wr->wr.ud.remote_qkey;
      }
    }
    if (err == 0 && !x.local() && !copy_sges(*wr, r.sg, r.num_sge)) err = EINVAL;
    if (err == 0) {
      r.signaled = q->sq_sig_all || (wr->send_flags & IBV_SEND_SIGNALED) != 0;
      r.inline_data = (wr->send_flags & IBV_SEND_INLINE) != 0;
      if (r.atomic()) {
        r.remote_addr = wr->wr.atomic.remote_addr;
        r.rkey = wr->wr.atomic.rkey;
        r.compare_add = wr->wr.atomic.compare_add;
        r.swap = wr->wr.atomic.swap;
      } else if (r.opcode != sdp::WrOpcode::Send && ibqp->qp_type != IBV_QPT_UD) {
        r.remote_addr = wr->wr.rdma.remote_addr;
        r.rkey = wr->wr.rdma.rkey;
      }
      err = q->emu->post(w);
    }
    if (err != 0) {
      if (bad_wr != nullptr) *bad_wr = wr;
      return err;
    }
  }
  return 0;
}

/// ops.post_recv (ibv_post_recv(3)): returns 0, or EINVAL (too many SGEs) or the HCA core's errno
/// (the QP in RESET, on an SRQ: EINVAL; the receive queue full: ENOMEM) with *bad_wr at the first
/// WR not posted.
int post_recv(ibv_qp* ibqp, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  QpObj* q = qp_of(ibqp);
  for (; wr != nullptr; wr = wr->next) {
    sdp::RecvWr w;
    w.wr_id = wr->wr_id;
    const int err = copy_sges(*wr, w.sg, w.num_sge) ? q->emu->post_receive(w) : EINVAL;
    if (err != 0) {
      if (bad_wr != nullptr) *bad_wr = wr;
      return err;
    }
  }
  return 0;
}

/// ops.alloc_mw (ibv_alloc_mw(3)): an unbound memory window of type 1 or 2 in `pd`
/// (emu::Hca::alloc_mw); its rkey names nothing until bound. Null with errno EINVAL for another
/// type or a null PD.
ibv_mw* alloc_mw(ibv_pd* pd, ibv_mw_type type) {
  if (pd == nullptr || (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2)) {
    errno = EINVAL;
    return nullptr;
  }
  auto* mw = new ibv_mw{};
  mw->context = pd->context;
  mw->pd = pd;
  mw->type = type;
  mw->rkey = device().hca->alloc_mw(pd_of(pd)->id, type == IBV_MW_TYPE_1 ? 1 : 2);
  mw->handle = mw->rkey >> 8;
  ++pd_of(pd)->users;
  return mw;
}

/// ops.dealloc_mw (ibv_dealloc_mw(3)): the window and its key are gone (accesses under way end
/// first, as ibv_dereg_mr's). Returns 0, or EINVAL for a window the device does not know.
int dealloc_mw(ibv_mw* mw) {
  if (mw == nullptr || !device().hca->dealloc_mw(mw->rkey)) return EINVAL;
  --pd_of(mw->pd)->users;
  delete mw;
  return 0;
}

/// ops.bind_mw (ibv_bind_mw(3), a type 1 window; verbs.h refuses type 2 with EINVAL): as
/// libmlx4's mlx4_bind_mw, an IBV_WR_BIND_MW WR on `qp` with the key ibv_inc_rkey(mw->rkey),
/// and mw->rkey set to that key once posted. The WR completes IBV_WC_BIND_MW (signaled per
/// mw_bind->send_flags) or IBV_WC_MW_BIND_ERR. Returns 0 or post_send's errno.
int bind_mw(ibv_qp* qp, ibv_mw* mw, ibv_mw_bind* mw_bind) {
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.opcode = IBV_WR_BIND_MW;
  wr.wr_id = mw_bind->wr_id;
  wr.send_flags = mw_bind->send_flags;
  wr.bind_mw.mw = mw;
  wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
  wr.bind_mw.bind_info = mw_bind->bind_info;
  if (const int err = post_send(qp, &wr, &bad); err != 0) return err;
  mw->rkey = wr.bind_mw.rkey;
  return 0;
}

/// ops.poll_cq (ibv_poll_cq(3)): up to num_entries completions; the count (0 for a negative
/// num_entries: libmlx4's mlx4_poll_cq loops `npolled < ne` and returns npolled).
int poll_cq(ibv_cq* ibcq, int num_entries, ibv_wc* wc) {
  if (num_entries < 0) return 0;
  CompQueue& cq = *reinterpret_cast<Cq*>(ibcq)->emu;
  std::array<hca::Cqe, 32> buf;
  int total = 0;
  while (total < num_entries) {
    const size_t want = std::min<size_t>(buf.size(), static_cast<size_t>(num_entries - total));
    const int n = cq.poll(std::span<hca::Cqe>(buf.data(), want));
    for (int i = 0; i < n; ++i) {
      to_ibv_wc(buf[static_cast<size_t>(i)], wc[total++]);
    }
    if (static_cast<size_t>(n) < want) break;
  }
  // An empty poll gives the CPU away: a program spinning on ibv_poll_cq (ibv_rc_pingpong
  // without -e, perftest) would otherwise keep the emulator's I/O threads, which do the HCA's
  // work, off the CPU; on 2 cores the two peers' spins starved them (about 700 us per
  // ping-pong iteration). A real HCA needs no host CPU for that work.
  if (total == 0) sched_yield();
  return total;
}

/// ops.req_notify_cq (ibv_req_notify_cq(3)): arms the CQ for its next completion (solicited or
/// not: the emulation has no solicited events). Returns 0.
int req_notify_cq(ibv_cq* ibcq, int /*solicited_only*/) {
  reinterpret_cast<Cq*>(ibcq)->emu->arm();
  return 0;
}

/// $HCASIM_FAULT: the `--set` assignments of hcasim-sdp-client, fault.* and qp.*, comma-separated
/// ("fault.loss=1e-3,qp.timeout=10"), for every QP of the process. A bad one is a one-line
/// message and exit status 2, as the programs' --set: the run would not be the one asked for.
void fault_settings(model::FaultConfig& faults, model::RcRetry& retry) {
  const char* env = std::getenv(kFaultEnv);
  if (env == nullptr) return;
  const std::string all = env;
  try {
    for (size_t b = 0, e; b <= all.size(); b = e + 1) {
      e = all.find(',', b);
      if (e == std::string::npos) e = all.size();
      const std::string one = all.substr(b, e - b);
      if (one.empty()) continue;
      if (!model::apply_fault_setting(one, faults, retry))
        throw InputError(fmt::format("--set {}: only fault.* and qp.* are set here", one));
    }
  } catch (const InputError& e) {
    std::fprintf(stderr, "hcasim-verbs-emu: %s: %s\n", kFaultEnv, e.what());
    std::fflush(stderr);
    std::_Exit(2);
  }
}

}  // namespace

namespace {

/// The device once made (device()), for the fork handler and the exit handler.
Device* g_device = nullptr;
/// Set in the child of a fork(2): the device's HCA is the parent's (its I/O thread is not in
/// this process), and the next device() gives the child an HCA and a port of its own.
std::atomic<bool> g_forked{false};
/// Guards the port's LID (Device::lid) and the child's new HCA; made anew in a child, whose
/// copy may have been held by a thread of the parent at the fork.
pthread_mutex_t g_port_m = PTHREAD_MUTEX_INITIALIZER;

std::unique_ptr<Hca> make_hca() {
  model::FaultConfig faults;
  model::RcRetry retry;
  fault_settings(faults, retry);
  check_memlock_setting();
  return std::make_unique<Hca>(nullptr, faults, retry);
}

/// pthread_atfork(3)'s child handler. What ibv_fork_init(3) promises a parent, that a child
/// cannot disturb its RDMA, holds here as follows: the parent's HCA gets an epoll instance of
/// the child's own (Boost.Asio's io_context::notify_fork; with the parent's, a socket the child
/// opened or closed would change the parent's I/O thread's interest set with pointers into the
/// child's memory), and is kept but never run or destroyed in the child, so that the objects the
/// child inherited stay inert: what is posted on them goes nowhere, and nothing is written to
/// the parent's streams. The child's next verbs call opens an HCA and a port (LID) of its own.
void after_fork_in_child() {
  g_port_m = PTHREAD_MUTEX_INITIALIZER;
  if (g_device == nullptr) return;
  g_device->hca->io().notify_fork(boost::asio::execution_context::fork_child);
#if defined(HCASIM_SANITIZE)
  // What the parent's I/O thread held on its stack (a write under way, Asio's handler memory)
  // is still referenced from there; LeakSanitizer scans only the stacks of live threads.
  if (const auto [lo, bytes] = g_device->hca->io_thread_stack(); bytes != 0) __lsan_register_root_region(lo, bytes);
#endif
  g_forked.store(true, std::memory_order_release);
}

/// At exit the frames already generated (the last ACKs) leave first, at most 200 ms: a peer
/// must not take the exit of a process that completed its work for a lost ACK. Then the I/O
/// thread stops (at most 200 ms more), so that no handler of it runs while the process's static
/// objects are destroyed, and the LID is given back. The HCA's objects are kept, not destroyed:
/// another thread of the program may still be in a verb (exit(3) does not wait for threads, and
/// rdma-core's ibv_close_device(3) is the program's to call, after it released what it made),
/// and finds them intact; what it posts from now on goes nowhere. Nothing of a parent's HCA in
/// a child that did not open its own.
void at_exit() {
  if (g_device == nullptr || g_forked.load(std::memory_order_acquire)) return;
  if (g_device->lid != 0) g_device->hca->quiesce(200);
  g_device->hca->stop_io(200);
  if (g_device->lid == 0) return;
  g_device->hca->release_port();  // the LID's claim file goes with the process
  report_port_stats();
}

}  // namespace

Device& device() {
  static Device* d = [] {
    auto* dv = new Device;
    init_device(*dv);  // device.cpp: the ibv_device, the verbs_context and every op
    dv->ctx.ops.poll_cq = poll_cq;
    dv->ctx.ops.req_notify_cq = req_notify_cq;
    dv->ctx.ops.post_send = post_send;
    dv->ctx.ops.post_recv = post_recv;
    dv->vctx.modify_cq = modify_cq;
    dv->ctx.ops.alloc_mw = alloc_mw;
    dv->ctx.ops.bind_mw = bind_mw;
    dv->ctx.ops.dealloc_mw = dealloc_mw;
    dv->vctx.create_srq_ex = create_srq_ex;
    dv->hca = make_hca();
    g_device = dv;
    ::pthread_atfork(nullptr, nullptr, after_fork_in_child);
    std::atexit(at_exit);
    return dv;
  }();
  if (g_forked.load(std::memory_order_acquire)) [[unlikely]] {
    ::pthread_mutex_lock(&g_port_m);
    if (g_forked.load(std::memory_order_relaxed)) {
      // The parent's HCA: its thread is not here to stop (after_fork_in_child), so it is never
      // destroyed; kept reachable, so that a leak checker does not report it at the child's exit.
      static auto* const parents = new std::vector<Hca*>;
      parents->push_back(d->hca.release());
      d->hca = make_hca();
      d->lid = 0;
      d->lid_claimed = false;
      g_forked.store(false, std::memory_order_release);
    }
    ::pthread_mutex_unlock(&g_port_m);
  }
  return *d;
}

void CompChannel::notify(ibv_cq* cq) {
  std::lock_guard g(m);
  events.push_back(cq);
  const char one = 1;
  if (::write(write_fd, &one, 1) < 0) {
    // Full pipe (64 KiB of unread events): the reader has plenty to read already.
  }
}

Cq* new_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel, int comp_vector) {
  if (cqe < 1 || cqe > kMaxCqe || comp_vector < 0 || context == nullptr || comp_vector >= context->num_comp_vectors) {
    errno = EINVAL;
    return nullptr;
  }
  if (!take_resource(Resource::Cq)) {
    errno = ENOMEM;
    return nullptr;
  }
  auto* cq = new Cq;
  cq->cq.context = context;
  cq->cq.channel = channel;
  cq->cq.cq_context = cq_context;
  cq->cq.cqe = cqe;
  cq->emu = std::make_shared<CompQueue>(static_cast<uint32_t>(cqe));
  if (channel != nullptr) {
    auto* ch = reinterpret_cast<CompChannel*>(channel);
    ibv_cq* ibcq = &cq->cq;
    cq->emu->set_event_handler([ch, ibcq] { ch->notify(ibcq); });
  }
  pthread_mutex_init(&cq->cq.mutex, nullptr);
  pthread_cond_init(&cq->cq.cond, nullptr);
  return cq;
}

QpObj* create_qp(ibv_pd* pd, ibv_qp_init_attr* attr) {
  const bool known_type = attr != nullptr && (attr->qp_type == IBV_QPT_RC || attr->qp_type == IBV_QPT_UC ||
                                              attr->qp_type == IBV_QPT_UD || attr->qp_type == IBV_QPT_XRC_SEND);
  // An XRC send QP has a send queue only: no receive CQ, SRQ or receive WRs (mlx4's
  // create_qp_ex sets its receive caps to 0).
  const bool xrc_send = known_type && attr->qp_type == IBV_QPT_XRC_SEND;
  if (pd == nullptr || !known_type || attr->send_cq == nullptr || (attr->recv_cq == nullptr && !xrc_send)) {
    errno = attr != nullptr && !known_type ? EOPNOTSUPP : EINVAL;
    return nullptr;
  }
  ibv_qp_cap& cap = attr->cap;
  if (xrc_send) {
    cap.max_recv_wr = cap.max_recv_sge = 0;
    attr->srq = nullptr;
  }
  const hca::DeviceLimits& lim = device().hca->limits();
  // No WR on a queue is allowed (a receive-only QP, or one on an SRQ), as mlx4's create_qp
  // takes it (providers/mlx4/verbs.c create_qp_ex): posts to it are then refused, ENOMEM.
  if (cap.max_send_sge > sdp::kMaxSge || cap.max_recv_sge > sdp::kMaxSge ||
      cap.max_send_wr > lim.max_qp_wr || cap.max_recv_wr > lim.max_qp_wr || cap.max_inline_data > lim.max_inline_data) {
    errno = EINVAL;
    return nullptr;
  }
  if (!take_resource(Resource::Qp)) {  // mlx4_qp_reserve_range: the QP table is full
    errno = ENOMEM;
    return nullptr;
  }
  auto* scq = reinterpret_cast<Cq*>(attr->send_cq);
  auto* rcq = xrc_send ? scq : reinterpret_cast<Cq*>(attr->recv_cq);  // an XRC send QP receives nothing
  const hca::QpType type = attr->qp_type == IBV_QPT_UC         ? hca::QpType::Uc
                           : attr->qp_type == IBV_QPT_UD       ? hca::QpType::Ud
                           : attr->qp_type == IBV_QPT_XRC_SEND ? hca::QpType::XrcSend
                                                               : hca::QpType::Rc;
  auto* q = new QpObj;
  const sdp::QpCaps caps{cap.max_send_wr, cap.max_recv_wr, scq->emu->depth()};
  q->emu = device().hca->create_qp(type, pd_of(pd)->id, caps, scq->emu, rcq->emu);
  q->emu->set_max_inline_data(cap.max_inline_data);  // what the caller asked for (libmlx4 takes up to it)
  if (attr->srq != nullptr) q->emu->set_srq(reinterpret_cast<SrqObj*>(attr->srq)->emu);
  q->send_cq = scq;
  q->recv_cq = rcq;
  q->sq_sig_all = attr->sq_sig_all != 0;
  q->qp.context = pd->context;
  q->qp.qp_context = attr->qp_context;
  q->qp.pd = pd;
  q->qp.send_cq = attr->send_cq;
  q->qp.recv_cq = attr->recv_cq;
  q->qp.qp_num = q->emu->qp_num();
  q->qp.state = IBV_QPS_INIT;
  q->qp.qp_type = attr->qp_type;
  q->qp.srq = attr->srq;
  pthread_mutex_init(&q->qp.mutex, nullptr);
  pthread_cond_init(&q->qp.cond, nullptr);
  cap.max_send_sge = cap.max_recv_sge = sdp::kMaxSge;
  q->init = *attr;
  q->attr.cap = cap;
  q->attr.port_num = 1;
  q->attr.path_mtu = IBV_MTU_1024;
  q->attr.path_mig_state = IBV_MIG_MIGRATED;
  q->emu->to_init();  // rdma_create_qp(3): ready for receives
  ++scq->qps;
  ++rcq->qps;
  ++pd_of(pd)->users;
  return q;
}

void destroy_qp(QpObj* q) {
  if (q->cm_id != nullptr && q->cm_id->qp == &q->qp) {
    forget_cm_qp(q->cm_id);
    q->cm_id->qp = nullptr;
  }
  if (&q->emu->hca() == device().hca.get()) q->emu->flush_datagrams();  // counted in the stats below
  report_fault_stats(*q);
  if (&q->emu->hca() != device().hca.get()) {
    // A forked child destroys a QP of its parent's HCA (after_fork_in_child): the QP is left as
    // it is, never run here, and kept (its timers' handlers stay referenced for a leak checker).
    static auto* const inherited = new std::vector<std::shared_ptr<Qp>>;
    inherited->push_back(q->emu);
  } else {
    q->emu->close();
  }
  if (q->send_cq != nullptr) --q->send_cq->qps;  // an XRC receive QP has no CQ, PD or queue
  if (q->recv_cq != nullptr) --q->recv_cq->qps;
  if (q->qp.pd != nullptr) --pd_of(q->qp.pd)->users;
  if (q->xrcd != nullptr) xrcd_use(q->xrcd, -1);
  give_resource(Resource::Qp);
  pthread_cond_destroy(&q->qp.cond);
  pthread_mutex_destroy(&q->qp.mutex);
  delete q;
}

uint16_t port_lid() {
  Device& d = device();
  ::pthread_mutex_lock(&g_port_m);
  if (!d.lid_claimed) {
    d.lid_claimed = true;
    try {
      d.lid = d.hca->lid();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "hcasim-verbs-emu: %s\n", e.what());
    }
  }
  const uint16_t lid = d.lid;
  ::pthread_mutex_unlock(&g_port_m);
  return lid;
}

uint64_t port_guid() {
  const uint16_t lid = port_lid();
  return lid == 0 ? 0 : guid_of_lid(lid);
}

}  // namespace hcasim::emu::shim

using hcasim::emu::shim::CompChannel;
using hcasim::emu::shim::Cq;
using hcasim::emu::shim::device;
using hcasim::emu::shim::give_resource;
using hcasim::emu::shim::pin_user_memory;
using hcasim::emu::shim::Resource;
using hcasim::emu::shim::take_resource;
using hcasim::emu::shim::unpin_user_memory;

/// ibv_alloc_pd(3): a protection domain of its own (an MR of another PD serves none of its QPs).
/// Null with errno ENOMEM beyond the device's max_pd (mlx4_pd_alloc).
ibv_pd* ibv_alloc_pd(ibv_context* context) {
  if (!take_resource(Resource::Pd)) {
    errno = ENOMEM;
    return nullptr;
  }
  auto* pd = new hcasim::emu::shim::PdObj{};
  pd->pd.context = context;
  pd->id = device().hca->alloc_pd();
  return &pd->pd;
}

/// ibv_dealloc_pd(3). Returns 0; EBUSY while an MR, QP, SRQ or AH is still on it (the kernel
/// counts them in pd->usecnt and refuses, ib_destroy_usecnt); EINVAL for a null PD.
int ibv_dealloc_pd(ibv_pd* pd) {
  if (pd == nullptr) return EINVAL;
  if (hcasim::emu::shim::pd_of(pd)->users.load() != 0) return EBUSY;
  delete hcasim::emu::shim::pd_of(pd);
  give_resource(Resource::Pd);
  return 0;
}

/// ibv_reg_mr_iova2(3): registers [addr, addr+length) of this process; the iova must be addr
/// (the emulated HCA addresses memory by virtual address). lkey = rkey. Null with errno EINVAL
/// otherwise, and for REMOTE_WRITE or REMOTE_ATOMIC without LOCAL_WRITE (ibv_reg_mr(3): the
/// kernel refuses it, so a program that passes here would fail on an HCA); the kernel's
/// pinning errno (resources.h pin_user_memory: EINVAL, EPERM, ENOMEM over RLIMIT_MEMLOCK,
/// EFAULT for memory not mapped as the access needs); ENOMEM beyond the device's max_mr.
ibv_mr* ibv_reg_mr_iova2(ibv_pd* pd, void* addr, size_t length, uint64_t iova, unsigned int access) {
  const bool remote_needs_local = (access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) != 0 &&
                                  (access & IBV_ACCESS_LOCAL_WRITE) == 0;
  if (pd == nullptr || iova != reinterpret_cast<uintptr_t>(addr) || remote_needs_local) {
    errno = EINVAL;
    return nullptr;
  }
  uint64_t pages = 0;
  if (const int err = pin_user_memory(reinterpret_cast<uintptr_t>(addr), length, access, pages); err != 0) {
    errno = err;
    return nullptr;
  }
  if (!take_resource(Resource::Mr)) {  // mlx4_mpt_reserve: the MPT table is full
    unpin_user_memory(pages);
    errno = ENOMEM;
    return nullptr;
  }
  auto* m = new hcasim::emu::shim::MrObj{};
  m->pinned_pages = pages;
  m->access = access;
  ibv_mr* mr = &m->mr;
  mr->context = pd->context;
  mr->pd = pd;
  mr->addr = addr;
  mr->length = length;
  try {
    mr->lkey = mr->rkey = device().hca->reg_mr(hcasim::emu::shim::pd_of(pd)->id, reinterpret_cast<uintptr_t>(addr),
                                               length, hcasim::emu::shim::to_access(access));
  } catch (const hcasim::sdp::VerbsError&) {  // a PD the device does not know
    delete m;
    give_resource(Resource::Mr);
    unpin_user_memory(pages);
    errno = EINVAL;
    return nullptr;
  }
  ++hcasim::emu::shim::pd_of(pd)->users;
  return mr;
}

/// ibv_reg_mr(3) (the symbol verbs.h's ibv_reg_mr macro calls for constant access flags).
ibv_mr* ibv_reg_mr(ibv_pd* pd, void* addr, size_t length, int access) {
  return ibv_reg_mr_iova2(pd, addr, length, reinterpret_cast<uintptr_t>(addr), static_cast<unsigned>(access));
}

/// ibv_dereg_mr(3). Returns 0; EINVAL for an MR the device does not know; EBUSY, the MR still
/// registered, while memory windows are bound to it (mlx4: HW2SW_MPT fails, emu::Hca::dereg_mr).
/// Once it returns 0, the emulated HCA touches none of the MR's memory, which may be freed.
int ibv_dereg_mr(ibv_mr* mr) {
  if (mr == nullptr) return EINVAL;
  if (const int err = device().hca->dereg_mr(mr->lkey); err != 0) return err;
  auto* m = reinterpret_cast<hcasim::emu::shim::MrObj*>(mr);
  unpin_user_memory(m->pinned_pages);
  --hcasim::emu::shim::pd_of(mr->pd)->users;
  give_resource(Resource::Mr);
  delete m;
  return 0;
}

/// ibv_create_comp_channel(3): its fd (a pipe's read end, close-on-exec) polls readable while
/// completion events wait. Null with errno set by pipe2(2) on failure.
ibv_comp_channel* ibv_create_comp_channel(ibv_context* context) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return nullptr;
  ::fcntl(fds[1], F_SETFL, O_NONBLOCK);
  auto* c = new CompChannel;
  c->ch.context = context;
  c->ch.fd = fds[0];
  c->write_fd = fds[1];
  return &c->ch;
}

/// ibv_destroy_comp_channel(3). Returns 0.
int ibv_destroy_comp_channel(ibv_comp_channel* channel) {
  auto* c = reinterpret_cast<CompChannel*>(channel);
  ::close(c->ch.fd);
  ::close(c->write_fd);
  delete c;
  return 0;
}

/// ibv_create_cq(3): a CQ of `cqe` entries whose events go to `channel` (may be null); any
/// number of QPs may complete into it. Null with errno as shim::new_cq (EINVAL, ENOMEM).
ibv_cq* ibv_create_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel, int comp_vector) {
  Cq* cq = hcasim::emu::shim::new_cq(context, cqe, cq_context, channel, comp_vector);
  return cq != nullptr ? &cq->cq : nullptr;
}

/// ibv_destroy_cq(3). Returns 0, or EBUSY while a QP is still on it.
int ibv_destroy_cq(ibv_cq* ibcq) {
  auto* cq = reinterpret_cast<Cq*>(ibcq);
  if (cq->qps.load() != 0) return EBUSY;
  pthread_cond_destroy(&cq->cq.cond);
  pthread_mutex_destroy(&cq->cq.mutex);
  delete cq;
  give_resource(Resource::Cq);
  return 0;
}

/// ibv_get_cq_event(3): the next completion event of `channel` (blocks unless its fd is
/// non-blocking). 0 with *cq and *cq_context set, or -1 with errno (EAGAIN when non-blocking
/// and none waits).
int ibv_get_cq_event(ibv_comp_channel* channel, ibv_cq** cq, void** cq_context) {
  auto* c = reinterpret_cast<CompChannel*>(channel);
  char b = 0;
  if (::read(c->ch.fd, &b, 1) != 1) return -1;
  std::lock_guard g(c->m);
  if (c->events.empty()) {
    errno = EAGAIN;
    return -1;
  }
  *cq = c->events.front();
  c->events.pop_front();
  *cq_context = (*cq)->cq_context;
  return 0;
}

/// ibv_ack_cq_events(3): counted, nothing to wait for.
void ibv_ack_cq_events(ibv_cq* cq, unsigned int nevents) {
  if (cq != nullptr) cq->comp_events_completed += nevents;
}


/// ibv_rereg_mr(3): the MR takes a new PD (IBV_REREG_MR_CHANGE_PD), range
/// (IBV_REREG_MR_CHANGE_TRANSLATION: addr, length) and access flags (IBV_REREG_MR_CHANGE_ACCESS)
/// and keeps its lkey and rkey, as mlx4 rewrites the MR's MPT entry in place
/// (drivers/infiniband/hw/mlx4/mr.c mlx4_ib_rereg_user_mr); the emulated HCA applies them to
/// every later access (emu::Hca::rereg_mr). Returns 0, or as libibverbs' ibv_rereg_mr
/// (libibverbs/verbs.c) with errno set: IBV_REREG_MR_ERR_INPUT (EINVAL) for no flag or an unknown
/// one, a translation without addr or length, access flags without CHANGE_ACCESS;
/// IBV_REREG_MR_ERR_CMD when the kernel would refuse: EINVAL for a null PD or REMOTE_WRITE /
/// REMOTE_ATOMIC without LOCAL_WRITE, the pinning errno of the new range (pin_user_memory), EBUSY
/// while memory windows are bound to the MR (mlx4_ib_rereg_user_mr's HW2SW_MPT fails so).
int ibv_rereg_mr(ibv_mr* mr, int flags, ibv_pd* pd, void* addr, size_t length, int access) {
  if (mr == nullptr || flags == 0 || (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) != 0 ||
      ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) != 0 && (length == 0 || addr == nullptr)) ||
      (access != 0 && (flags & IBV_REREG_MR_CHANGE_ACCESS) == 0)) {
    errno = EINVAL;
    return IBV_REREG_MR_ERR_INPUT;
  }
  auto* m = reinterpret_cast<hcasim::emu::shim::MrObj*>(mr);
  ibv_pd* new_pd = (flags & IBV_REREG_MR_CHANGE_PD) != 0 ? pd : mr->pd;
  void* new_addr = (flags & IBV_REREG_MR_CHANGE_TRANSLATION) != 0 ? addr : mr->addr;
  const size_t new_len = (flags & IBV_REREG_MR_CHANGE_TRANSLATION) != 0 ? length : mr->length;
  const unsigned new_access = (flags & IBV_REREG_MR_CHANGE_ACCESS) != 0 ? static_cast<unsigned>(access) : m->access;
  const bool remote_needs_local = (new_access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) != 0 &&
                                  (new_access & IBV_ACCESS_LOCAL_WRITE) == 0;
  if (new_pd == nullptr || remote_needs_local) {
    errno = EINVAL;
    return IBV_REREG_MR_ERR_CMD;
  }
  uint64_t pages = m->pinned_pages;
  const bool repin = (flags & IBV_REREG_MR_CHANGE_TRANSLATION) != 0;
  if (repin) {
    if (const int err = pin_user_memory(reinterpret_cast<uintptr_t>(new_addr), new_len, new_access, pages); err != 0) {
      errno = err;
      return IBV_REREG_MR_ERR_CMD;
    }
  }
  int err = EINVAL;
  try {
    err = device().hca->rereg_mr(mr->lkey, hcasim::emu::shim::pd_of(new_pd)->id,
                                 reinterpret_cast<uintptr_t>(new_addr), new_len,
                                 hcasim::emu::shim::to_access(new_access));
  } catch (const hcasim::sdp::VerbsError&) {  // a PD the device does not know
  }
  if (err != 0) {
    if (repin) unpin_user_memory(pages);
    errno = err;
    return IBV_REREG_MR_ERR_CMD;
  }
  if (repin) {
    unpin_user_memory(m->pinned_pages);
    m->pinned_pages = pages;
  }
  if (new_pd != mr->pd) {
    --hcasim::emu::shim::pd_of(mr->pd)->users;
    ++hcasim::emu::shim::pd_of(new_pd)->users;
  }
  m->access = new_access;
  mr->pd = new_pd;
  mr->addr = new_addr;
  mr->length = new_len;
  return 0;
}
