// The QP verbs of the verbs shim (emu/verbs_shim/shim.h) without the CM: ibv_create_qp(3),
// ibv_destroy_qp(3), ibv_modify_qp(3) and ibv_query_qp(3), as a provider (mlx4, through the
// kernel's ib_modify_qp_is_ok) takes them for an RC QP: the QP state machine of IBA 1.2.1
// 10.3.1, and for each transition the attributes it requires and those it allows (IBA
// 11.2.4.2, table 92 / the kernel's qp_state_table). A QP goes to RTR with its peer's LID (or
// its GID, fe80::/64 + the GUID of emu/subnet.h) and QPN, exchanged out of band as
// ibv_rc_pingpong and perftest do over their own TCP socket; the emulated QP finds the peer
// port on the machine's emulated subnet and joins its stream (emu::Qp::to_rtr).
#include <cerrno>
#include <cstring>

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

/// The attributes a transition of an RC QP requires and those it also allows (IBA table 92).
struct Rule {
  bool valid = false;
  int required = 0, optional = 0;
};

Rule rule(ibv_qp_type type, ibv_qp_state cur, ibv_qp_state next) {
  constexpr int kPath = IBV_QP_ALT_PATH;
  if (next == IBV_QPS_RESET || next == IBV_QPS_ERR) return {true, 0, 0};
  if (type == IBV_QPT_UD) {  // no peer: the Q_Key; RTR takes nothing
    if (cur == IBV_QPS_RESET && next == IBV_QPS_INIT) return {true, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY, 0};
    if (cur == IBV_QPS_INIT && next == IBV_QPS_INIT) return {true, 0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY};
    if (cur == IBV_QPS_INIT && next == IBV_QPS_RTR) return {true, 0, IBV_QP_PKEY_INDEX | IBV_QP_QKEY};
    if (cur == IBV_QPS_RTR && next == IBV_QPS_RTS) return {true, IBV_QP_SQ_PSN, IBV_QP_CUR_STATE | IBV_QP_QKEY};
    if (cur == IBV_QPS_RTS && next == IBV_QPS_RTS) return {true, 0, IBV_QP_CUR_STATE | IBV_QP_QKEY};
    return {};
  }
  if (type == IBV_QPT_UC) {  // no ACKs, no RDMA READ: no retry, RNR or RDMA READ attributes
    if (cur == IBV_QPS_RESET && next == IBV_QPS_INIT) return {true, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0};
    if (cur == IBV_QPS_INIT && next == IBV_QPS_INIT) return {true, 0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS};
    if (cur == IBV_QPS_INIT && next == IBV_QPS_RTR)
      return {true, IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN,
              kPath | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX};
    if (cur == IBV_QPS_RTR && next == IBV_QPS_RTS)
      return {true, IBV_QP_SQ_PSN, IBV_QP_CUR_STATE | kPath | IBV_QP_ACCESS_FLAGS | IBV_QP_PATH_MIG_STATE};
    if (cur == IBV_QPS_RTS && next == IBV_QPS_RTS)
      return {true, 0, IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | kPath | IBV_QP_PATH_MIG_STATE};
    return {};
  }
  switch (cur) {
    case IBV_QPS_RESET:
      if (next == IBV_QPS_INIT) return {true, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0};
      break;
    case IBV_QPS_INIT:
      if (next == IBV_QPS_INIT) return {true, 0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS};
      if (next == IBV_QPS_RTR)
        return {true,
                IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
                    IBV_QP_MIN_RNR_TIMER,
                kPath | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX};
      break;
    case IBV_QPS_RTR:
      if (next == IBV_QPS_RTS)
        return {true, IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC,
                IBV_QP_CUR_STATE | kPath | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE};
      break;
    case IBV_QPS_RTS:
      if (next == IBV_QPS_RTS)
        return {true, 0,
                IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | kPath | IBV_QP_PATH_MIG_STATE | IBV_QP_MIN_RNR_TIMER};
      break;
    default: break;
  }
  return {};
}

/// The values' ranges (ibv_modify_qp(3), IBA 11.2.4.2); EINVAL when one is out of range.
int check_values(const ibv_qp_attr& a, int mask) {
  if ((mask & IBV_QP_PORT) != 0 && a.port_num != 1) return EINVAL;
  if ((mask & IBV_QP_PKEY_INDEX) != 0 && a.pkey_index != 0) return EINVAL;  // one P_Key
  if ((mask & IBV_QP_PATH_MTU) != 0 && (a.path_mtu < IBV_MTU_256 || a.path_mtu > IBV_MTU_4096)) return EINVAL;
  if ((mask & IBV_QP_DEST_QPN) != 0 && a.dest_qp_num > 0xFFFFFF) return EINVAL;
  if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) != 0 && a.max_dest_rd_atomic > kRdAtom) return EINVAL;
  if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) != 0 && a.max_rd_atomic > kRdAtom) return EINVAL;
  if ((mask & IBV_QP_MIN_RNR_TIMER) != 0 && a.min_rnr_timer > 31) return EINVAL;
  if ((mask & IBV_QP_TIMEOUT) != 0 && a.timeout > 31) return EINVAL;
  if ((mask & IBV_QP_RETRY_CNT) != 0 && a.retry_cnt > 7) return EINVAL;
  if ((mask & IBV_QP_RNR_RETRY) != 0 && a.rnr_retry > 7) return EINVAL;
  if ((mask & IBV_QP_AV) != 0) {
    const ibv_ah_attr& ah = a.ah_attr;
    if (ah.port_num != 0 && ah.port_num != 1) return EINVAL;
    if (ah.is_global == 0 && ah.dlid == 0) return EINVAL;
  }
  return 0;
}

/// The peer port's LID of an address vector: the GID's (emu::lid_of_gid) when it has a GRH,
/// else its DLID. 0 when neither names a port of the emulated subnet.
uint16_t dlid_of(const ibv_ah_attr& ah) {
  if (ah.is_global != 0)
    if (const auto lid = lid_of_gid(ah.grh.dgid.raw)) return *lid;
  return ah.dlid;
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

/// ibv_create_qp(3): an RC QP (shim::create_qp's checks and limits) in RESET. Null with errno
/// EINVAL or EOPNOTSUPP (not RC, or an SRQ) when refused.
ibv_qp* ibv_create_qp(ibv_pd* pd, ibv_qp_init_attr* qp_init_attr) {
  shim::QpObj* q = shim::create_qp(pd, qp_init_attr);
  if (q == nullptr) return nullptr;
  q->emu->modify(hcasim::emu::Qp::State::Reset);  // created in RESET, as by the kernel
  q->qp.state = IBV_QPS_RESET;
  return &q->qp;
}

/// ibv_destroy_qp(3). Returns 0, or EINVAL for a null QP.
int ibv_destroy_qp(ibv_qp* qp) {
  if (qp == nullptr) return EINVAL;
  shim::destroy_qp(shim::qp_of(qp));
  return 0;
}

/// ibv_modify_qp(3) of an RC QP: RESET -> INIT (port 1, P_Key index 0, access flags),
/// INIT -> RTR (the peer: ah_attr's DLID or GRH DGID, dest_qp_num; rq_psn, path_mtu,
/// max_dest_rd_atomic, min_rnr_timer), RTR -> RTS (sq_psn, timeout, retry_cnt, rnr_retry,
/// max_rd_atomic), INIT -> INIT, RTS -> RTS, any state -> RESET or ERR. Returns 0, or EINVAL
/// for another transition, a required attribute missing from attr_mask, one the transition
/// does not take, a value out of range or IBV_QP_CUR_STATE not the current state; the QP is then
/// unchanged. Without IBV_QP_STATE the QP stays in its state (the attributes that state allows).
int ibv_modify_qp(ibv_qp* qp, ibv_qp_attr* attr, int attr_mask) {
  using State = hcasim::emu::Qp::State;
  if (qp == nullptr || attr == nullptr) return EINVAL;
  shim::QpObj* q = shim::qp_of(qp);
  std::lock_guard g(q->m);
  const ibv_qp_state cur = shim::to_ibv(q->emu->state());
  if ((attr_mask & IBV_QP_CUR_STATE) != 0 && attr->cur_qp_state != cur) return EINVAL;
  const ibv_qp_state next = (attr_mask & IBV_QP_STATE) != 0 ? attr->qp_state : cur;
  const shim::Rule r = shim::rule(qp->qp_type, cur, next);
  const int given = attr_mask & ~(IBV_QP_STATE | IBV_QP_CUR_STATE);
  if (!r.valid || (given & r.required) != r.required || (given & ~(r.required | r.optional)) != 0) return EINVAL;
  if (const int e = shim::check_values(*attr, attr_mask); e != 0) return e;
  try {
    if ((attr_mask & IBV_QP_QKEY) != 0) q->emu->set_qkey(attr->qkey);  // UD (the rules allow it for UD only)
    if (next == IBV_QPS_ERR) {
      q->emu->to_error_state("moved to the error state by ibv_modify_qp");
    } else if (next == IBV_QPS_RESET) {
      q->emu->modify(State::Reset);
      const ibv_qp_cap cap = q->attr.cap;
      std::memset(&q->attr, 0, sizeof q->attr);
      q->attr.cap = cap;
      q->attr.port_num = 1;
    } else if (cur == IBV_QPS_RESET && next == IBV_QPS_INIT) {
      q->emu->modify(State::Init);
    } else if (qp->qp_type == IBV_QPT_UD) {
      if (cur == IBV_QPS_INIT && next == IBV_QPS_RTR) q->emu->to_rtr_datagram();
      if (cur == IBV_QPS_RTR && next == IBV_QPS_RTS)
        q->emu->to_rts(hcasim::emu::RtsAttr{.sq_psn = attr->sq_psn, .timeout = 0, .retry_cnt = 0, .rnr_retry = 0});
    } else if (next == IBV_QPS_RTR) {
      const uint16_t dlid = shim::dlid_of(attr->ah_attr);
      if (dlid == 0) return EINVAL;
      shim::port_lid();  // the port on the subnet (and its quiesce at exit)
      q->emu->to_rtr({.dlid = dlid, .dest_qpn = attr->dest_qp_num, .rq_psn = attr->rq_psn,
                      .min_rnr_timer = (attr_mask & IBV_QP_MIN_RNR_TIMER) != 0 ? attr->min_rnr_timer
                                                                               : hcasim::hca::kDefaultMinRnrTimer});
    } else if (cur == IBV_QPS_RTR && next == IBV_QPS_RTS) {
      if (qp->qp_type == IBV_QPT_UC)
        q->emu->to_rts(hcasim::emu::RtsAttr{.sq_psn = attr->sq_psn, .timeout = 0, .retry_cnt = 0, .rnr_retry = 0});
      else
        q->emu->to_rts(hcasim::emu::RtsAttr{.sq_psn = attr->sq_psn, .timeout = attr->timeout,
                                            .retry_cnt = attr->retry_cnt, .rnr_retry = attr->rnr_retry});
      if ((attr_mask & IBV_QP_MIN_RNR_TIMER) != 0) q->emu->set_min_rnr_timer(attr->min_rnr_timer);
    } else if ((attr_mask & IBV_QP_MIN_RNR_TIMER) != 0) {  // RTS -> RTS
      q->emu->set_min_rnr_timer(attr->min_rnr_timer);
    }
  } catch (const hcasim::sdp::VerbsError&) {
    return EINVAL;
  } catch (const hcasim::sdp::DeviceError&) {
    return EINVAL;
  }
  shim::record(q->attr, *attr, attr_mask);
  qp->state = next;
  return 0;
}

/// ibv_query_qp(3): the QP's current state and the attributes ibv_modify_qp set (every field,
/// whatever attr_mask asks), its caps, and the ibv_qp_init_attr it was created with. Returns 0,
/// or EINVAL for a null argument.
int ibv_query_qp(ibv_qp* qp, ibv_qp_attr* attr, int /*attr_mask*/, ibv_qp_init_attr* init_attr) {
  if (qp == nullptr || attr == nullptr || init_attr == nullptr) return EINVAL;
  shim::QpObj* q = shim::qp_of(qp);
  std::lock_guard g(q->m);
  *attr = q->attr;
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

/// ibv_create_srq(3): an SRQ of max_wr WRs (1 to kMaxQpWr) of max_sge SGEs (at most
/// sdp::kMaxSge); the values given are written back. Null with errno EINVAL otherwise.
ibv_srq* ibv_create_srq(ibv_pd* pd, ibv_srq_init_attr* attr) {
  if (pd == nullptr || attr == nullptr || attr->attr.max_wr == 0 ||
      attr->attr.max_wr > static_cast<uint32_t>(shim::kMaxQpWr) || attr->attr.max_sge > hcasim::sdp::kMaxSge) {
    errno = EINVAL;
    return nullptr;
  }
  auto* s = new shim::SrqObj;
  s->emu = std::make_shared<hcasim::emu::Srq>(attr->attr.max_wr);
  s->max_sge = attr->attr.max_sge == 0 ? 1 : attr->attr.max_sge;
  s->limit = attr->attr.srq_limit;
  s->srq.context = pd->context;
  s->srq.srq_context = attr->srq_context;
  s->srq.pd = pd;
  pthread_mutex_init(&s->srq.mutex, nullptr);
  pthread_cond_init(&s->srq.cond, nullptr);
  // verbs.h's ibv_post_srq_recv calls the context's op.
  pd->context->ops.post_srq_recv = shim::post_srq_recv;
  return &s->srq;
}

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
  delete s;
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
  a->ah.context = pd->context;
  a->ah.pd = pd;
  a->dlid = dlid;
  a->attr = *attr;
  return &a->ah;
}

/// ibv_destroy_ah(3). Returns 0, or EINVAL for a null AH.
int ibv_destroy_ah(ibv_ah* ah) {
  if (ah == nullptr) return EINVAL;
  delete reinterpret_cast<shim::AhObj*>(ah);
  return 0;
}
