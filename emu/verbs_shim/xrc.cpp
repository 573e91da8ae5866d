// The XRC verbs of the verbs shim (emu/verbs_shim/shim.h; IBA 1.2.1 annex A14, eXtended Reliable
// Connected): ibv_open_xrcd(3) and ibv_close_xrcd(3), ibv_get_srq_num(3) and the XRC receive QP of
// ibv_create_qp_ex(3). The XRC SRQ is ibv_create_srq_ex's (qp.cpp), the XRC send QP create_qp's
// (ibverbs.cpp); the transport is the HCA core's (hca/responder.h: the XRCETH's SRQ).
#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <map>

#include "emu/verbs_shim/resources.h"
#include "emu/verbs_shim/shim.h"

namespace hcasim::emu::shim {
namespace {

/// An XRC domain of the process: its openings and its users (XRC SRQs, XRC receive QPs).
struct Domain {
  int opens = 0;
  int users = 0;
  dev_t dev = 0;
  ino_t ino = 0;  ///< 0: no file (fd -1)
};

std::mutex g_xrcd_m;
std::map<uint32_t, Domain> g_domains;  // by XRC domain number, under g_xrcd_m

XrcdObj* xrcd_of(ibv_xrcd* x) { return reinterpret_cast<XrcdObj*>(x); }

}  // namespace

/// As the kernel's ib_uverbs_open_xrcd (drivers/infiniband/core/uverbs_cmd.c) behind
/// ibv_cmd_open_xrcd (libibverbs/cmd_xrcd.c), which mlx4_open_xrcd calls: comp_mask must name
/// IBV_XRCD_INIT_ATTR_FD and IBV_XRCD_INIT_ATTR_OFLAGS (else EINVAL; bits beyond them:
/// EOPNOTSUPP). fd -1: a new domain of its own. Otherwise the domain of fd's file (its device and
/// inode): EBADF for an fd that is not open; when that file has none yet, a new one with O_CREAT
/// in oflags, EINVAL without; when it has one, EINVAL with O_EXCL, else that domain. Null with
/// errno set when refused.
ibv_xrcd* open_xrcd(ibv_context* context, ibv_xrcd_init_attr* attr) {
  constexpr uint32_t kNeed = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
  if (attr == nullptr) {
    errno = EINVAL;
    return nullptr;
  }
  if (attr->comp_mask >= IBV_XRCD_INIT_ATTR_RESERVED) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  if ((attr->comp_mask & kNeed) != kNeed) {
    errno = EINVAL;
    return nullptr;
  }
  dev_t dev = 0;
  ino_t ino = 0;
  if (attr->fd != -1) {
    struct stat st{};
    if (::fstat(attr->fd, &st) != 0) {
      errno = EBADF;
      return nullptr;
    }
    dev = st.st_dev;
    ino = st.st_ino;
  }
  std::lock_guard g(g_xrcd_m);
  uint32_t id = 0;
  if (attr->fd != -1) {
    for (auto& [n, d] : g_domains)
      if (d.ino == ino && d.dev == dev && d.ino != 0) id = n;
    if ((id == 0 && (attr->oflags & O_CREAT) == 0) || (id != 0 && (attr->oflags & O_EXCL) != 0)) {
      errno = EINVAL;
      return nullptr;
    }
  }
  if (id == 0) {
    id = device().hca->alloc_xrcd();
    g_domains[id] = Domain{0, 0, dev, ino};
  }
  ++g_domains[id].opens;
  auto* x = new XrcdObj;
  x->xrcd.context = context;
  x->id = id;
  x->dev = dev;
  x->ino = ino;
  return &x->xrcd;
}

/// As the kernel's XRC domain release (ib_uverbs_dealloc_xrcd): 0; EBUSY, nothing closed, when
/// this is the domain's last opening and XRC SRQs or XRC receive QPs are still on it; EINVAL for
/// a null one.
int close_xrcd(ibv_xrcd* xrcd) {
  if (xrcd == nullptr) return EINVAL;
  XrcdObj* x = xrcd_of(xrcd);
  std::lock_guard g(g_xrcd_m);
  auto it = g_domains.find(x->id);
  if (it != g_domains.end()) {
    if (it->second.opens == 1 && it->second.users > 0) return EBUSY;
    if (--it->second.opens == 0) g_domains.erase(it);
  }
  delete x;
  return 0;
}

uint32_t xrcd_id(ibv_xrcd* xrcd) { return xrcd_of(xrcd)->id; }

void xrcd_use(ibv_xrcd* xrcd, int delta) {
  std::lock_guard g(g_xrcd_m);
  auto it = g_domains.find(xrcd_of(xrcd)->id);
  if (it != g_domains.end()) it->second.users += delta;
}

/// mlx4_get_srq_num: every SRQ has its number (an XRC SRQ's is the one XRC senders name in
/// wr.qp_type.xrc.remote_srqn). Returns 0, or EINVAL for a null argument.
int get_srq_num(ibv_srq* srq, uint32_t* srq_num) {
  if (srq == nullptr || srq_num == nullptr) return EINVAL;
  *srq_num = reinterpret_cast<SrqObj*>(srq)->emu->srqn();
  return 0;
}

ibv_qp* create_xrc_recv_qp(ibv_qp_init_attr_ex* attr) {
  if (!take_resource(Resource::Qp)) {  // mlx4_qp_reserve_range: the QP table is full
    errno = ENOMEM;
    return nullptr;
  }
  Hca& h = *device().hca;
  // Nothing completes on the QP's own CQ: its receives complete on the CQs of the XRC SRQs its
  // requests name (emu::Qp::complete); the core's QP wants one.
  auto cq = std::make_shared<CompQueue>(1);
  auto* q = new QpObj;
  q->emu = h.create_qp(hca::QpType::XrcRecv, h.device_pd(), sdp::QpCaps{0, 0, 1}, cq, cq);
  q->emu->set_xrcd(xrcd_id(attr->xrcd));
  q->emu->modify(hca::QpState::Reset);
  q->xrcd = attr->xrcd;
  xrcd_use(attr->xrcd, +1);
  attr->cap = ibv_qp_cap{};
  q->qp.context = attr->xrcd->context;
  q->qp.qp_context = attr->qp_context;
  q->qp.qp_num = q->emu->qp_num();
  q->qp.state = IBV_QPS_RESET;
  q->qp.qp_type = IBV_QPT_XRC_RECV;
  pthread_mutex_init(&q->qp.mutex, nullptr);
  pthread_cond_init(&q->qp.cond, nullptr);
  q->init.qp_context = attr->qp_context;
  q->init.qp_type = IBV_QPT_XRC_RECV;
  q->attr.port_num = 1;
  q->attr.path_mtu = IBV_MTU_1024;
  q->attr.path_mig_state = IBV_MIG_MIGRATED;
  return &q->qp;
}

}  // namespace hcasim::emu::shim
