// The CQ verbs of the verbs shim beyond ibv_create_cq(3): ibv_create_cq_ex(3) with its polling
// functions (ibv_start_poll, ibv_next_poll, ibv_end_poll and the ibv_wc_read_* accessors of
// verbs.h), ibv_resize_cq(3) and ibv_modify_cq(3), with the checks and errno of rdma-core 44's
// mlx4 provider (providers/mlx4/verbs.c create_cq, mlx4_resize_cq; providers/mlx4/cq.c
// mlx4_cq_fill_pfns) and of the kernel behind it.
#include <sched.h>

#include <array>
#include <cerrno>
#include <span>

#include "emu/verbs_shim/device.h"
#include "emu/verbs_shim/shim.h"

namespace hcasim::emu::shim {

namespace {

/// The completion flags an extended CQ may ask for: IBV_WC_STANDARD_FLAGS (byte_len, imm,
/// qp_num, src_qp, slid, sl, dlid_path_bits). mlx4 also takes IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
/// the emulated CQE carries no time, so that one is refused as any other flag.
constexpr uint64_t kSupportedWcFlags = IBV_WC_STANDARD_FLAGS;

Cq* cq_of(ibv_cq_ex* cq) { return reinterpret_cast<Cq*>(cq); }

/// Takes the next completion into cq->cur and the ibv_cq_ex's wr_id and status; ENOENT when none
/// waits (an empty poll gives the CPU away, as ibv_poll_cq does: ibverbs.cpp poll_cq).
int take_next(ibv_cq_ex* cq) {
  Cq* c = cq_of(cq);
  std::array<hca::Cqe, 1> one;
  if (c->emu->poll(std::span<hca::Cqe>(one)) != 1) {
    sched_yield();
    return ENOENT;
  }
  to_ibv_wc(one[0], c->cur);
  cq->wr_id = c->cur.wr_id;
  cq->status = c->cur.status;
  return 0;
}

/// ibv_start_poll(3): the first completion, or ENOENT; EINVAL for a non-zero attr->comp_mask
/// (mlx4_start_poll).
int start_poll(ibv_cq_ex* cq, ibv_poll_cq_attr* attr) {
  if (attr != nullptr && attr->comp_mask != 0) return EINVAL;
  return take_next(cq);
}
int next_poll(ibv_cq_ex* cq) { return take_next(cq); }
void end_poll(ibv_cq_ex* /*cq*/) {}
ibv_wc_opcode read_opcode(ibv_cq_ex* cq) { return cq_of(cq)->cur.opcode; }
uint32_t read_vendor_err(ibv_cq_ex* cq) { return cq_of(cq)->cur.vendor_err; }
uint32_t read_byte_len(ibv_cq_ex* cq) { return cq_of(cq)->cur.byte_len; }
__be32 read_imm_data(ibv_cq_ex* cq) { return cq_of(cq)->cur.imm_data; }
uint32_t read_qp_num(ibv_cq_ex* cq) { return cq_of(cq)->cur.qp_num; }
uint32_t read_src_qp(ibv_cq_ex* cq) { return cq_of(cq)->cur.src_qp; }
unsigned int read_wc_flags(ibv_cq_ex* cq) { return cq_of(cq)->cur.wc_flags; }
uint32_t read_slid(ibv_cq_ex* cq) { return cq_of(cq)->cur.slid; }
uint8_t read_sl(ibv_cq_ex* cq) { return cq_of(cq)->cur.sl; }
uint8_t read_dlid_path_bits(ibv_cq_ex* cq) { return cq_of(cq)->cur.dlid_path_bits; }

}  // namespace

/// verbs_context::create_cq_ex (ibv_create_cq_ex(3)): a CQ as ibv_create_cq's (new_cq: EINVAL
/// for cqe or comp_vector out of range, ENOMEM beyond max_cq) polled through start_poll /
/// next_poll / end_poll and the read functions of attr->wc_flags. Null with errno EOPNOTSUPP
/// (ENOTSUP in mlx4's create_cq) for a comp_mask other than IBV_CQ_INIT_ATTR_MASK_FLAGS, a flag
/// other than IBV_CREATE_CQ_ATTR_SINGLE_THREADED, or a wc_flag beyond IBV_WC_STANDARD_FLAGS.
ibv_cq_ex* create_cq_ex(ibv_context* context, ibv_cq_init_attr_ex* attr) {
  if (attr == nullptr) {
    errno = EINVAL;
    return nullptr;
  }
  if (static_cast<int64_t>(attr->cqe) > kMaxCqe) {  // mlx4's size check comes first
    errno = EINVAL;
    return nullptr;
  }
  if ((attr->comp_mask & ~static_cast<uint32_t>(IBV_CQ_INIT_ATTR_MASK_FLAGS)) != 0 ||
      ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) != 0 &&
       (attr->flags & ~static_cast<uint32_t>(IBV_CREATE_CQ_ATTR_SINGLE_THREADED)) != 0) ||
      (attr->wc_flags & ~kSupportedWcFlags) != 0) {
    errno = EOPNOTSUPP;
    return nullptr;
  }
  Cq* c = new_cq(context, static_cast<int>(attr->cqe), attr->cq_context, attr->channel,
                 static_cast<int>(attr->comp_vector));
  if (c == nullptr) return nullptr;
  ibv_cq_ex& x = c->cq_ex;
  x.start_poll = start_poll;
  x.next_poll = next_poll;
  x.end_poll = end_poll;
  x.read_opcode = read_opcode;
  x.read_vendor_err = read_vendor_err;
  x.read_byte_len = read_byte_len;
  x.read_imm_data = read_imm_data;
  x.read_qp_num = read_qp_num;
  x.read_src_qp = read_src_qp;
  x.read_wc_flags = read_wc_flags;
  x.read_slid = read_slid;
  x.read_sl = read_sl;
  x.read_dlid_path_bits = read_dlid_path_bits;
  return &x;
}

/// verbs_context::modify_cq (ibv_modify_cq(3)): CQ moderation (IBV_CQ_ATTR_MODERATE: cq_count
/// and cq_period, 16 bits each as mlx4's CQ context holds them). Taken and not applied: the
/// emulated HCA raises every event at once. Returns 0; EINVAL for a null argument or an
/// attr_mask other than IBV_CQ_ATTR_MODERATE (the kernel's ib_uverbs_ex_modify_cq).
int modify_cq(ibv_cq* cq, ibv_modify_cq_attr* attr) {
  if (cq == nullptr || attr == nullptr || attr->attr_mask != IBV_CQ_ATTR_MODERATE) return EINVAL;
  return 0;
}

}  // namespace hcasim::emu::shim

/// ibv_resize_cq(3): the CQ holds `cqe` entries from now on (cq->cqe is set), keeping the
/// completions that wait. Returns 0, or EINVAL for cqe below 1 or over max_cqe (mlx4_ib_resize_cq)
/// or below the completions waiting (mlx4_resize_cq). The completions of work posted before the
/// call and done without the peer (UD sends) are counted: the HCA's I/O thread runs what was
/// posted first (emu::Hca::sync, at most 100 ms), as an HCA is done with it microseconds later.
int ibv_resize_cq(ibv_cq* cq, int cqe) {
  if (cq == nullptr || cqe < 1 || cqe > hcasim::emu::shim::kMaxCqe) return EINVAL;
  auto* c = reinterpret_cast<hcasim::emu::shim::Cq*>(cq);
  hcasim::emu::shim::device().hca->sync(100);
  if (!c->emu->resize(static_cast<uint32_t>(cqe))) return EINVAL;
  cq->cqe = cqe;
  return 0;
}
