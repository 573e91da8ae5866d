// The QP verbs of the verbs shim (emu/verbs_shim/shim.h) without the CM: ibv_create_qp(3),
// ibv_destroy_qp(3), ibv_modify_qp(3) and ibv_query_qp(3). The state machine and the attribute
// rules are the HCA core's (hca/qp.h: IBA 1.2.1 10.3.1 and table 92, the kernel's qp_state_table);
// this file translates libibverbs' structures. A QP goes to RTR with its peer's LID (or its GID,
// fe80::/64 + the GUID of emu/subnet.h) and QPN, exchanged out of band as ibv_rc_pingpong and
// perftest do over their own TCP socket; the emulated QP finds the peer port on the machine's
// emulated subnet and joins its stream (emu::Qp::modify).
#include <cerrno>
#include <cstring>

#include "emu/verbs_shim/device.h"
#include "emu/verbs_shim/resources.h"
#include "emu/verbs_shim/shim.h"

namespace hcasim::emu::shim {

namespace {

ibv_qp_state to_ibv(Qp::State s) {
  switch (s) {
    case Qp::State::Reset: return IBV_QPS_RESET;
    case Qp::State::Init: return IBV_QPS_INIT;
    case Qp::State::Rtr: return IBV_QPS_RTR;
    case Qp::State::Rts: return IBV_QPS_RTS;
    case Qp::State::Error: return IBV_QPS_ERR;
  }
  return IBV_QPS_ERR;
}

hca::QpState from_ibv(ibv_qp_state s) {
  switch (s) {
    case IBV_QPS_RESET: return hca::QpState::Reset;
    case IBV_QPS_INIT: return hca::QpState::Init;
    case IBV_QPS_RTR: return hca::QpState::Rtr;
    case IBV_QPS_RTS: return hca::QpState::Rts;
    default: return hca::QpState::Error;
  }
}

// The HCA core's attribute bits are libibverbs' (hca/qp.h): a mask passes unchanged.
static_assert(IBV_QP_STATE == hca::attr::kState && IBV_QP_CUR_STATE == hca::attr::kCurState &&
              IBV_QP_ACCESS_FLAGS == hca::attr::kAccessFlags && IBV_QP_PKEY_INDEX == hca::attr::kPkeyIndex &&
              IBV_QP_PORT == hca::attr::kPort && IBV_QP_QKEY == hca::attr::kQkey && IBV_QP_AV == hca::attr::kAv &&
              IBV_QP_PATH_MTU == hca::attr::kPathMtu && IBV_QP_TIMEOUT == hca::attr::kTimeout &&
              IBV_QP_RETRY_CNT == hca::attr::kRetryCnt && IBV_QP_RNR_RETRY == hca::attr::kRnrRetry &&
              IBV_QP_RQ_PSN == hca::attr::kRqPsn && IBV_QP_MAX_QP_RD_ATOMIC == hca::attr::kMaxQpRdAtomic &&
              IBV_QP_ALT_PATH == hca::attr::kAltPath && IBV_QP_MIN_RNR_TIMER == hca::attr::kMinRnrTimer &&
              IBV_QP_SQ_PSN == hca::attr::kSqPsn && IBV_QP_MAX_DEST_RD_ATOMIC == hca::attr::kMaxDestRdAtomic &&
              IBV_QP_PATH_MIG_STATE == hca::attr::kPathMigState && IBV_QP_CAP == hca::attr::kCap &&
              IBV_QP_DEST_QPN == hca::attr::kDestQpn);

/// The peer port's LID of an address vector: the GID's (emu::lid_of_gid) when it has a GRH,
/// else its DLID. 0 when neither names a port of the emulated subnet.
uint16_t dlid_of(const ibv_ah_attr& ah) {
  if (ah.is_global != 0)
    if (const auto lid = lid_of_gid(ah.grh.dgid.raw)) return *lid;
  return ah.dlid;
}

/// The HCA core's attributes of `a` (the mask says which count). Its enum fields are read only
/// when `mask` names them: a program leaves the others unset (ibv_xsrq_pingpong does), and an
/// enum holding no enumerator must not be loaded (C++ [dcl.enum]; UBSan's -fsanitize=enum).
hca::QpAttr core_attr(const ibv_qp_attr& a, unsigned mask) {
  hca::QpAttr c;
  if ((mask & IBV_QP_STATE) != 0) c.qp_state = from_ibv(a.qp_state);
  if ((mask & IBV_QP_CUR_STATE) != 0) c.cur_qp_state = from_ibv(a.cur_qp_state);
  c.qp_access_flags = to_qp_access(a.qp_access_flags);
  c.pkey_index = a.pkey_index;
  c.port_num = a.port_num;
  c.qkey = a.qkey;
  c.dlid = dlid_of(a.ah_attr);
  c.ah_port_num = a.ah_attr.port_num;
  if ((mask & IBV_QP_PATH_MTU) != 0) c.path_mtu = hca::mtu_bytes(a.path_mtu);
  c.timeout = a.timeout;
  c.retry_cnt = a.retry_cnt;
  c.rnr_retry = a.rnr_retry;
  c.rq_psn = a.rq_psn;
  c.sq_psn = a.sq_psn;
  c.max_rd_atomic = a.max_rd_atomic;
  c.max_dest_rd_atomic = a.max_dest_rd_atomic;
  c.min_rnr_timer = a.min_rnr_timer;
  c.dest_qp_num = a.dest_qp_num;
  return c;
}

/// Copies the attributes of `mask` from `a` into the QP's record.
void record(ibv_qp_attr& r, const ibv_qp_attr& a, int mask) {
  if ((mask & IBV_QP_PKEY_INDEX) != 0) r.pkey_index = a.pkey_index;
  if ((mask & IBV_QP_PORT) != 0) r.port_num = a.port_num;
  if ((mask & IBV_QP_ACCESS_FLAGS) != 0) r.qp_access_flags = a.qp_access_flags;
  if ((mask & IBV_QP_AV) != 0) r.ah_attr = a.ah_attr;
  if ((mask & IBV_QP_PATH_MTU) != 0) r.path_mtu = a.path_mtu;
  if ((mask & IBV_QP_DEST_QPN) != 0) r.dest_qp_num = a.dest_qp_num;
  if ((mask & IBV_QP_RQ_PSN) != 0) r.rq_psn = a.rq_psn & 0xFFFFFF;
  if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) != 0) r.max_dest_rd_atomic = a.max_dest_rd_atomic;
  if ((mask & IBV_QP_MIN_RNR_TIMER) != 0) r.min_rnr_timer = a.min_rnr_timer;
  if ((mask & IBV_QP_SQ_PSN) != 0) r.sq_psn = a.sq_psn & 0xFFFFFF;
  if ((mask & IBV_QP_TIMEOUT) != 0) r.timeout = a.timeout;
  if ((mask & IBV_QP_RETRY_CNT) != 0) r.retry_cnt = a.retry_cnt;
  if ((mask & IBV_QP_RNR_RETRY) != 0) r.rnr_retry = a.rnr_retry;
  if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) != 0) r.max_rd_atomic = a.max_rd_atomic;
  if ((mask & IBV_QP_ALT_PATH) != 0) r.alt_ah_attr = a.alt_ah_attr;
  if ((mask & IBV_QP_PATH_MIG_STATE) != 0) r.path_mig_state = a.path_mig_state;
  if ((mask & IBV_QP_QKEY) != 0) r.qkey = a.qkey;
}

}  // namespace

}  // namespace hcasim::emu::shim

namespace shim = hcasim::emu::shim;

/// ibv_create_qp(3): an RC, UC, UD or XRC send QP (shim::create_qp's checks and limits) in RESET.
/// Null with errno EINVAL or EOPNOTSUPP (another type) when refused.
ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* qp_init_attr) {
  shim::QpObj* q = shim::create_qp(pd, qp_init_attr);
  if (q == nullptr) return nullptr;
  q->emu->modify(hcasim::hca::QpState::Reset);  // created in RESET, as by the kernel
  q->qp.state = IBV_QPS_RESET;
  return &q->qp;
}

/// ibv_destroy_qp(3). Returns 0, or EINVAL for a null QP.
int ibv_destroy_qp(ibv_qp* qp) {
  if (qp == nullptr) return EINVAL;
  shim::destroy_qp(shim::qp_of(qp));
  return 0;
}

/// ibv_modify_qp(3): the HCA core's one table of transitions and their required and allowed
/// attributes for the QP's type, and its value checks (hca::QueuePair::modify): RESET -> INIT,
/// INIT -> RTR (the peer: ah_attr's DLID or GRH DGID, dest_qp_num, found on the emulated subnet),
/// RTR -> RTS, INIT -> INIT, RTS -> RTS, any state -> RESET or ERR. Returns 0, or EINVAL with the
/// QP unchanged (another transition, SQD or SQE, a required attribute missing or one the transition
/// does not take, a value out of range, IBV_QP_CUR_STATE not the current state). Without
/// IBV_QP_STATE the QP stays in its state (the attributes that state allows).
int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask) {
  if (qp == nullptr || attr == nullptr) return EINVAL;
  shim::QpObj* q = shim::qp_of(qp);
  std::lock_guard g(q->m);
  const unsigned mask = static_cast<unsigned>(attr_mask);
  if ((mask & IBV_QP_STATE) != 0) {
    // SQD and SQE are not emulated; read as an integer: a value past IBV_QPS_ERR is no enumerator.
    unsigned s = 0;
    std::memcpy(&s, &attr->qp_state, sizeof s);
    if (s == IBV_QPS_SQD || s == IBV_QPS_SQE || s > IBV_QPS_ERR) return EINVAL;
  }
  if ((mask & IBV_QP_AV) != 0 && shim::dlid_of(attr->ah_attr) != 0) shim::port_lid();  // the port (and its quiesce at exit)
  const int e = q->emu->modify(shim::core_attr(*attr, mask), mask);
  if (e != 0) return e;
  if ((mask & IBV_QP_STATE) != 0 && attr->qp_state == IBV_QPS_RESET) {
    const ibv_qp_cap cap = q->attr.cap;
    std::memset(&q->attr, 0, sizeof q->attr);
    q->attr.cap = cap;
    q->attr.port_num = 1;
  } else {
    shim::record(q->attr, *attr, attr_mask);
  }
  qp->state = shim::to_ibv(q->emu->state());
  return 0;
}

/// ibv_query_qp(3): the QP's current state and the attributes ibv_modify_qp set (every field,
/// whatever attr_mask asks; for a QP the RDMA CM connected, its path and retry attributes as the
/// CM set them), its caps, and the ibv_qp_init_attr it was created with. Returns 0,
/// or EINVAL for a null argument.
int ibv_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int /*attr_mask*/, ibv_qp_init_attr* init_attr) {
  if (qp == nullptr || attr == nullptr || init_attr == nullptr) return EINVAL;
  shim::QpObj* q = shim::qp_of(qp);
  std::lock_guard g(q->m);
  *attr = q->attr;
  if (q->cm_id != nullptr) {
    // The CM moved the QP (rdma_connect, rdma_accept): its path and retry attributes are the
    // ones the CM gave the HCA core, not ibv_modify_qp's record.
    const hcasim::hca::QpAttr c = q->emu->attr();
    attr->path_mtu = static_cast<ibv_mtu>(hcasim::hca::mtu_code(c.path_mtu));
    attr->dest_qp_num = c.dest_qp_num;
    attr->rq_psn = c.rq_psn;
    attr->sq_psn = c.sq_psn;
    attr->timeout = c.timeout;
    attr->retry_cnt = c.retry_cnt;
    attr->rnr_retry = c.rnr_retry;
    attr->max_rd_atomic = c.max_rd_atomic;
    attr->max_dest_rd_atomic = c.max_dest_rd_atomic;
    attr->min_rnr_timer = c.min_rnr_timer;
  }
  attr->qp_state = attr->cur_qp_state = shim::to_ibv(q->emu->state());
  attr->sq_draining = 0;
  *init_attr = q->init;
  init_attr->cap = q->attr.cap;
  return 0;
}

namespace hcasim::emu::shim {
namespace {

/// ops.post_srq_recv (ibv_post_srq_recv(3)): 0, or EINVAL (too many SGEs) / ENOMEM (the SRQ
/// full) with *bad_wr at the first WR not posted.
int post_srq_recv(ibv_srq* ibsrq, ibv_recv_wr* wr, ibv_recv_wr** bad_wr) {
  auto* s = reinterpret_cast<SrqObj*>(ibsrq);
  for (; wr != nullptr; wr = wr->next) {
    int err = 0;
    sdp::RecvWr w;
    w.wr_id = wr->wr_id;
    if (wr->num_sge < 0 || static_cast<uint32_t>(wr->num_sge) > s->max_sge) {
      err = EINVAL;
    } else {
      w.num_sge = static_cast<uint8_t>(wr->num_sge);
      for (uint8_t i = 0; i < w.num_sge; ++i) w.sg[i] = {wr->sg_list[i].addr, wr->sg_list[i].length, wr->sg_list[i].lkey};
      if (!s->emu->post(w)) err = ENOMEM;
    }
    if (err != 0) {
      if (bad_wr != nullptr) *bad_wr = wr;
      return err;
    }
  }
  return 0;
}

}  // namespace
}  // namespace hcasim::emu::shim

/// ibv_create_srq(3): an SRQ of max_wr WRs (1 to the device's max_qp_wr) of max_sge SGEs (at most
/// sdp::kMaxSge); the values given are written back. Null with errno EINVAL otherwise, ENOMEM
/// beyond the device's max_srq (mlx4_srq_alloc's bitmap).
ibv_srq* ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) { return shim::new_srq(pd, attr, nullptr, nullptr); }

namespace hcasim::emu::shim {

ibv_srq* new_srq(ibv_pd* pd, ibv_srq_init_attr* attr, ibv_xrcd* xrcd, Cq* cq) {
  if (pd == nullptr || attr == nullptr || attr->attr.max_wr == 0 ||
      attr->attr.max_wr > device().hca->limits().max_qp_wr || attr->attr.max_sge > sdp::kMaxSge) {
    errno = EINVAL;
    return nullptr;
  }
  if (!take_resource(Resource::Srq)) {
    errno = ENOMEM;
    return nullptr;
  }
  ++pd_of(pd)->users;
  auto* s = new SrqObj;
  s->emu = xrcd == nullptr ? std::make_shared<Srq>(attr->attr.max_wr)
                           : std::make_shared<Srq>(attr->attr.max_wr, xrcd_id(xrcd), pd_of(pd)->id, cq->emu);
  device().hca->add_srq(s->emu);
  s->xrcd = xrcd;
  s->cq = cq;
  if (xrcd != nullptr) {
    xrcd_use(xrcd, +1);
    ++cq->qps;  // ibv_destroy_cq(3) is EBUSY while an SRQ completes on it
  }
  s->max_sge = attr->attr.max_sge == 0 ? 1 : attr->attr.max_sge;
  s->limit = attr->attr.srq_limit;
  s->srq.context = pd->context;
  s->srq.srq_context = attr->srq_context;
  s->srq.pd = pd;
  pthread_mutex_init(&s->srq.mutex, nullptr);
  pthread_cond_init(&s->srq.cond, nullptr);
  // verbs.h's ibv_post_srq_recv calls the context's op.
  pd->context->ops.post_srq_recv = post_srq_recv;
  return &s->srq;
}

}  // namespace hcasim::emu::shim

/// ibv_modify_srq(3): IBV_SRQ_LIMIT is kept (the limit event is not emulated); IBV_SRQ_MAX_WR
/// (resizing) is EINVAL. Returns 0 or EINVAL.
int ibv_modify_srq(ibv_srq* srq, ibv_srq_attr* attr, int mask) {
  if (srq == nullptr || attr == nullptr || (mask & IBV_SRQ_MAX_WR) != 0) return EINVAL;
  if ((mask & IBV_SRQ_LIMIT) != 0) reinterpret_cast<shim::SrqObj*>(srq)->limit = attr->srq_limit;
  return 0;
}

/// ibv_query_srq(3): max_wr, max_sge and srq_limit. Returns 0 or EINVAL.
int ibv_query_srq(ibv_srq* srq, ibv_srq_attr* attr) {
  if (srq == nullptr || attr == nullptr) return EINVAL;
  auto* s = reinterpret_cast<shim::SrqObj*>(srq);
  attr->max_wr = s->emu->max_wr();
  attr->max_sge = s->max_sge;
  attr->srq_limit = s->limit;
  return 0;
}

/// ibv_destroy_srq(3). Returns 0 (the QPs on it keep their reference until destroyed).
int ibv_destroy_srq(ibv_srq* srq) {
  if (srq == nullptr) return EINVAL;
  auto* s = reinterpret_cast<shim::SrqObj*>(srq);
  pthread_cond_destroy(&s->srq.cond);
  pthread_mutex_destroy(&s->srq.mutex);
  shim::device().hca->remove_srq(s->emu->srqn());
  if (s->xrcd != nullptr) {
    shim::xrcd_use(s->xrcd, -1);
    --s->cq->qps;
  }
  --shim::pd_of(s->srq.pd)->users;
  delete s;
  shim::give_resource(shim::Resource::Srq);
  return 0;
}

/// ibv_create_ah(3): an address handle naming the port of ah_attr's DLID, or of its GRH DGID
/// (fe80::/64 + a GUID of emu/subnet.h) when is_global. Null with errno EINVAL for port_num
/// other than 1 or no LID.
ibv_ah* ibv_create_ah(ibv_pd* pd, ibv_ah_attr* attr) {
  if (pd == nullptr || attr == nullptr || (attr->port_num != 0 && attr->port_num != 1)) {
    errno = EINVAL;
    return nullptr;
  }
  const uint16_t dlid = shim::dlid_of(*attr);
  if (dlid == 0) {
    errno = EINVAL;
    return nullptr;
  }
  auto* a = new shim::AhObj;
  ++shim::pd_of(pd)->users;
  a->ah.context = pd->context;
  a->ah.pd = pd;
  a->dlid = dlid;
  a->attr = *attr;
  return &a->ah;
}

/// ibv_destroy_ah(3). Returns 0, or EINVAL for a null AH.
int ibv_destroy_ah(ibv_ah* ah) {
  if (ah == nullptr) return EINVAL;
  --shim::pd_of(ah->pd)->users;
  delete reinterpret_cast<shim::AhObj*>(ah);
  return 0;
}

namespace hcasim::emu::shim {

/// verbs_context::create_qp_ex (ibv_create_qp_ex(3); verbs.h calls ibv_create_qp itself when
/// comp_mask is IBV_QP_INIT_ATTR_PD alone): an RC, UC, UD or XRC send QP as ibv_create_qp's
/// (create_qp's checks and limits), or an XRC receive QP (IBV_QPT_XRC_RECV: its XRC domain,
/// IBV_QP_INIT_ATTR_XRCD, and no PD, CQ or queue), in RESET. As mlx4's create_qp_ex
/// (providers/mlx4/verbs.c) and the kernel behind it: null with errno EINVAL for WRs, SGEs or
/// inline data beyond the device's, without a PD (IBV_QP_INIT_ATTR_PD and pd) on a QP other
/// than an XRC receive QP, without an XRC domain on one, or a create flag other than
/// IBV_QP_CREATE_BLOCK_SELF_MCAST_LB on a UD QP (its own multicast sends then do not reach it);
/// EOPNOTSUPP (mlx4's ENOTSUP) for a comp_mask beyond PD, XRCD, CREATE_FLAGS and MAX_TSO_HEADER
/// (so IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, the ibv_wr_* API, which mlx4 lacks), for TSO and for
/// QP types other than RC, UC, UD and the two XRC ones (raw packet QPs are not emulated).
ibv_qp* create_qp_ex(ibv_context* /*context*/, ibv_qp_init_attr_ex* attr) {
  if (attr == nullptr) {
    errno = EINVAL;
    return nullptr;
  }
  const ibv_qp_cap& cap = attr->cap;
  const hca::DeviceLimits& lim = device().hca->limits();
  if (cap.max_send_wr > lim.max_qp_wr || cap.max_recv_wr > lim.max_qp_wr || cap.max_send_sge > sdp::kMaxSge ||
      cap.max_recv_sge > sdp::kMaxSge || cap.max_inline_data > lim.max_inline_data) {
    errno = EINVAL;
    return nullptr;
  }
  constexpr uint32_t kMlx4Mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_XRCD | IBV_QP_INIT_ATTR_CREATE_FLAGS |
                                 IBV_QP_INIT_ATTR_MAX_TSO_HEADER;
  const bool known = attr->qp_type == IBV_QPT_RC || attr->qp_type == IBV_QPT_UC || attr->qp_type == IBV_QPT_UD ||
                     attr->qp_type == IBV_QPT_XRC_SEND || attr->qp_type == IBV_QPT_XRC_RECV;
  if ((attr->comp_mask & ~kMlx4Mask) != 0 || (attr->comp_mask & IBV_QP_INIT_ATTR_MAX_TSO_HEADER) != 0 || !known) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  if (attr->qp_type == IBV_QPT_XRC_RECV) {
    if ((attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) == 0 || attr->xrcd == nullptr) {
      errno = EINVAL;
      return nullptr;
    }
    return create_xrc_recv_qp(attr);
  }
  const uint32_t flags = (attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) != 0 ? attr->create_flags : 0;
  const uint32_t allowed = attr->qp_type == IBV_QPT_UD ? IBV_QP_CREATE_BLOCK_SELF_MCAST_LB : 0;
  if ((attr->comp_mask & IBV_QP_INIT_ATTR_PD) == 0 || attr->pd == nullptr || (flags & ~allowed) != 0) {
    errno = EINVAL;
    return nullptr;
  }
  ibv_qp_init_attr init{};
  init.qp_context = attr->qp_context;
  init.send_cq = attr->send_cq;
  init.recv_cq = attr->recv_cq;
  init.srq = attr->srq;
  init.cap = attr->cap;
  init.qp_type = attr->qp_type;
  init.sq_sig_all = attr->sq_sig_all;
  ibv_qp* qp = ibv_create_qp(attr->pd, &init);
  if (qp != nullptr) attr->cap = init.cap;
  if (qp != nullptr && (flags & IBV_QP_CREATE_BLOCK_SELF_MCAST_LB) != 0) qp_of(qp)->emu->block_self_multicast();
  return qp;
}

/// verbs_context::create_srq_ex (ibv_create_srq_ex(3); verbs.h calls ibv_create_srq itself for
/// a basic SRQ with comp_mask PD or PD | TYPE): a basic SRQ as ibv_create_srq's, whatever else
/// comp_mask names (mlx4_create_srq_ex ignores it for IBV_SRQT_BASIC). Null with errno EINVAL
/// without a PD; EOPNOTSUPP for XRC and tag-matching SRQs (not emulated; mlx4 has no
/// tag matching).
ibv_srq* create_srq_ex(ibv_context* /*context*/, ibv_srq_init_attr_ex* attr) {
  if (attr == nullptr) {
    errno = EINVAL;
    return nullptr;
  }
  const bool xrc = (attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) != 0 && attr->srq_type == IBV_SRQT_XRC;
  if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) != 0 && attr->srq_type != IBV_SRQT_BASIC && !xrc) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  if (xrc) {
    // An XRC SRQ needs its XRC domain and its CQ (mlx4_create_srq_ex, mlx4_create_xrc_srq:
    // EINVAL without them), and a PD (ibv_cmd_create_srq_ex).
    constexpr uint32_t kNeed = IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_PD;
    if ((attr->comp_mask & kNeed) != kNeed || attr->xrcd == nullptr || attr->cq == nullptr || attr->pd == nullptr) {
      errno = EINVAL;
      return nullptr;
    }
    ibv_srq_init_attr init{};
    init.srq_context = attr->srq_context;
    init.attr = attr->attr;
    ibv_srq* srq = new_srq(attr->pd, &init, attr->xrcd, reinterpret_cast<Cq*>(attr->cq));
    if (srq != nullptr) attr->attr = init.attr;
    return srq;
  }
  if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) == 0 || attr->pd == nullptr) {
    errno = EINVAL;
    return nullptr;
  }
  ibv_srq_init_attr init{};
  init.srq_context = attr->srq_context;
  init.attr = attr->attr;
  ibv_srq* srq = ibv_create_srq(attr->pd, &init);
  if (srq != nullptr) attr->attr = init.attr;
  return srq;
}

}  // namespace hcasim::emu::shim

namespace {

/// The MGID of `gid` (ibv_gid.raw) as the HCA keeps it.
std::array<uint8_t, 16> mgid_of(const ibv_gid* gid) {
  std::array<uint8_t, 16> out{};
  std::memcpy(out.data(), gid->raw, out.size());
  return out;
}

}  // namespace

/// ibv_attach_mcast(3): the UD QP joins the multicast group `gid` (the MGID) / `lid` (its MLID)
/// on the emulated HCA (emu::Hca::attach_mcast): UD sends to the MLID from any process of the
/// subnet reach it, with a GRH (IBV_WC_GRH). 0, or EINVAL for a QP that is not UD, a GID
/// outside ff00::/8 or a LID outside 0xC000-0xFFFE (the kernel's ib_attach_mcast,
/// drivers/infiniband/core/verbs.c).
int ibv_attach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
  namespace shim = hcasim::emu::shim;
  if (qp == nullptr || gid == nullptr || qp->qp_type != IBV_QPT_UD) return EINVAL;
  if (shim::port_lid() == 0) return ENODEV;  // the port cannot join the subnet (one line on stderr)
  return shim::device().hca->attach_mcast(qp->qp_num, mgid_of(gid), lid);
}

/// ibv_detach_mcast(3): the QP leaves the group. 0, or EINVAL for a QP that is not UD or not
/// attached to that MGID and MLID (mlx4_qp_detach_common's "MGID not found").
int ibv_detach_mcast(ibv_qp* qp, const ibv_gid* gid, uint16_t lid) {
  namespace shim = hcasim::emu::shim;
  if (qp == nullptr || gid == nullptr || qp->qp_type != IBV_QPT_UD) return EINVAL;
  return shim::device().hca->detach_mcast(qp->qp_num, mgid_of(gid), lid);
}

/// ibv_init_ah_from_wc(3): the address vector answering the sender of a UD receive `wc`: DLID
/// the WC's SLID, its SL and path bits, `port_num`; with IBV_WC_GRH the GRH's SGID as DGID and
/// the index of the GRH's DGID in the port's GID table as sgid_index (libibverbs' verbs.c,
/// set_ah_attr_by_ipv6). 0, or -1 with errno EINVAL when the GRH's DGID is a multicast GID (a
/// group cannot be answered through its own address), EPROTONOSUPPORT for a GRH that is not
/// IB's (next header 0x1B), ENOENT when the DGID is not the port's GID.
int ibv_init_ah_from_wc(ibv_context* context, uint8_t port_num, ibv_wc* wc, ibv_grh* grh, ibv_ah_attr* ah_attr) {
  if (context == nullptr || wc == nullptr || ah_attr == nullptr) {
    errno = EINVAL;
    return -1;
  }
  std::memset(ah_attr, 0, sizeof *ah_attr);
  ah_attr->dlid = wc->slid;
  ah_attr->sl = wc->sl;
  ah_attr->src_path_bits = wc->dlid_path_bits;
  ah_attr->port_num = port_num;
  if ((wc->wc_flags & IBV_WC_GRH) == 0) return 0;
  if (grh == nullptr) {
    errno = EINVAL;
    return -1;
  }
  const uint32_t flow = be32toh(grh->version_tclass_flow);
  ah_attr->is_global = 1;
  ah_attr->grh.flow_label = flow & 0xFFFFF;
  if (grh->dgid.raw[0] == 0xFF) {
    errno = EINVAL;
    return -1;
  }
  if (grh->next_hdr != 0x1B) {
    errno = EPROTONOSUPPORT;
    return -1;
  }
  ibv_gid own{};
  if (ibv_query_gid(context, port_num, 0, &own) != 0 || std::memcmp(own.raw, grh->dgid.raw, 16) != 0) {
    errno = ENOENT;
    return -1;
  }
  ah_attr->grh.dgid = grh->sgid;
  ah_attr->grh.sgid_index = 0;
  ah_attr->grh.hop_limit = grh->hop_limit;
  ah_attr->grh.traffic_class = static_cast<uint8_t>((flow >> 20) & 0xFF);
  return 0;
}

/// ibv_create_ah_from_wc(3): ibv_create_ah of ibv_init_ah_from_wc's address vector. Null with
/// the errno of either.
ibv_ah* ibv_create_ah_from_wc(ibv_pd* pd, ibv_wc* wc, ibv_grh* grh, uint8_t port_num) {
  if (pd == nullptr) {
    errno = EINVAL;
    return nullptr;
  }
  ibv_ah_attr attr{};
  if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr) != 0) return nullptr;
  return ibv_create_ah(pd, &attr);
}
