#pragma once
/// \file The verbs shim's objects: the emulated HCA (emu/adapter.h, emu/qp.h) behind libibverbs' and
/// librdmacm's own types, so that a program built for rdma-core 44 (hw/rdma_device.cpp) runs on
/// it when libhcasim-verbs-emu.so is LD_PRELOADed in front of libibverbs and librdmacm.
///
/// Each rdma-core object is a real `struct ibv_*` / `struct rdma_*` embedded first in a shim
/// object, so the pointers the program holds are the ones verbs.h's inline functions read:
/// ibv_post_send, ibv_post_recv, ibv_poll_cq and ibv_req_notify_cq dispatch through
/// `qp->context->ops` / `cq->context->ops`, which the shim fills. The context is a
/// `struct verbs_context` (abi_compat __VERBS_ABI_IS_EXTENDED), so verbs_get_ctx_op() finds the
/// extended verbs too (ibv_query_device_ex, ibv_query_port, ...); those the emulator does not do
/// say so once on stderr and fail as a provider without them (emu/verbs_shim/device.h).
///
/// One device, kDeviceName, with one port. Emulated, as emu/emu_device.h says: protection domains
/// kept apart (an MR serves the QPs of its own PD only; lkey = rkey), RC, UC and UD QPs with CQs of
/// their own or shared. A QP is connected by the
/// CM or by ibv_modify_qp(3) to RTR with the peer's LID (or GID) and QPN, found on the emulated
/// subnet of the machine (emu/subnet.h).
/// The CM runs over TCP on the RDMA CM address itself: rdma_listen on IP:port listens on that
/// TCP IP:port, rdma_connect to IP:port connects there (emu/wire.h: REQ / REP / RTU / REJ / DREQ).
#include <infiniband/verbs.h>
#include <sys/types.h>
#include <rdma/rdma_cma.h>

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>

#include "emu/adapter.h"
#include "emu/qp.h"
#include "emu/queues.h"

namespace hcasim::emu::shim {

/// The emulated device's name (ibv_get_device_name(3)).
inline constexpr const char* kDeviceName = "hcasim_emu0";
/// The environment variable with the fault and QP settings of every QP (fault.* and qp.*, as
/// hcasim-sdp-client's --set, comma-separated: "fault.loss=1e-3,qp.timeout=10"); read once,
/// when the device is first used.
inline constexpr const char* kFaultEnv = "HCASIM_FAULT";
/// The environment variable that, set to 1, makes every QP print its fault statistics on
/// stderr when destroyed (report_fault_stats).
inline constexpr const char* kFaultStatsEnv = "HCASIM_FAULT_STATS";
/// RDMA reads outstanding per QP each way the device allows (ibv_device_attr max_qp_rd_atom,
/// max_qp_init_rd_atom: the HCA core's device limit), also reported in CONNECT_REQUEST events
/// (the emulated REQ does not carry the peer's).
inline constexpr int kRdAtom = hca::DeviceLimits{}.max_qp_rd_atom;
/// Largest CQ size (max_cqe), entries: the ConnectX-3's (device.h cx3::kMaxCqe). A CQ holds its
/// completions in a queue that grows as they wait (sdp::Fifo), so a large CQ costs memory only
/// for what waits in it. libfabric's ofi_rxm asks for (tx + rx size) x its universe size
/// (262144 by default, prov/rxm/src/rxm_ep.c, rxm_ep_msg_cq_open).
inline constexpr int kMaxCqe = 4194303;

/// The one emulated device: its ibv_device, its context (the one ibv_open_device(3) and
/// rdma_get_devices(3) return and every cm_id is bound to: `ctx`, the ibv_context inside the
/// verbs_context `vctx`) and the emulated adapter. Created on first use, never destroyed
/// (libibverbs keeps its devices open until exit too). Filled by init_device (device.h).
struct Device {
  ibv_device dev{};
  verbs_context vctx{};
  ibv_context& ctx = vctx.context;
  int async_write_fd = -1;  ///< the write end of ctx.async_fd's pipe (never written)
  /// The HCA; in the child of a fork(2), one of the child's own from its first verbs call on.
  std::unique_ptr<Hca> hca;
  /// The port's LID on the subnet once claimed (port_lid()); 0 when the claim failed.
  uint16_t lid = 0;
  bool lid_claimed = false;
};
/// The device, created on first call (thread-safe). Its ibv_device and ibv_context stay at
/// their addresses for the life of the process, also across fork(2) in the child.
Device& device();

/// ibv_comp_channel(3): a pipe whose read end is `ch.fd`; one byte per completion event, the
/// CQs of the events in `events`. Any number of CQs may report to one channel.
struct CompChannel {
  ibv_comp_channel ch{};
  int write_fd = -1;
  std::mutex m;
  std::deque<ibv_cq*> events;
  /// Queues an event for `cq` and makes `ch.fd` readable.
  void notify(ibv_cq* cq);
};

/// ibv_cq: the emulated CQ (emu::CompQueue), which any number of QPs complete into (their send
/// queue, receive queue or both); `qps` counts them (ibv_destroy_cq(3) is EBUSY while any).
/// A CQ of ibv_create_cq_ex(3) is the same object seen as an ibv_cq_ex (whose first fields are
/// an ibv_cq's, verbs.h ibv_cq_ex_to_cq); `cur` is the completion its start_poll / next_poll
/// made current, which its read_* functions read.
struct Cq {
  union {
    ibv_cq cq;
    ibv_cq_ex cq_ex{};
  };
  std::shared_ptr<CompQueue> emu;
  std::atomic<int> qps{0};
  ibv_wc cur{};
};

/// Creates a CQ for ibv_create_cq(3) and ibv_create_cq_ex(3): `cqe` entries (1 to kMaxCqe),
/// events to `channel` (may be null), `comp_vector` below the context's num_comp_vectors.
/// Null with errno EINVAL (cqe or comp_vector out of range, as the kernel's create_cq checks:
/// drivers/infiniband/core/uverbs_cmd.c, mlx4_ib_create_cq) or ENOMEM beyond max_cq.
Cq* new_cq(ibv_context* context, int cqe, void* cq_context, ibv_comp_channel* channel, int comp_vector);
/// A completion of the emulated CQ as ibv_poll_cq(3) returns it.
void to_ibv_wc(const hca::Cqe& e, ibv_wc& w);
/// verbs_context::modify_cq (ibv_modify_cq(3)), emu/verbs_shim/cq_ex.cpp.
int modify_cq(ibv_cq* cq, ibv_modify_cq_attr* attr);
/// verbs_context::create_srq_ex (ibv_create_srq_ex(3)), emu/verbs_shim/qp.cpp.
ibv_srq* create_srq_ex(ibv_context* context, ibv_srq_init_attr_ex* attr);

/// ibv_xrcd: one opening of an XRC domain (ibv_open_xrcd(3); IBA 1.2.1 annex A14). Openings of
/// the same file (its device and inode) share the domain `id` (emu::Hca::alloc_xrcd), as the
/// kernel's xrcd tree does (drivers/infiniband/core/uverbs_cmd.c ib_uverbs_open_xrcd); an fd of
/// -1 gives a domain of its own. `users` counts the XRC SRQs and XRC receive QPs on the domain.
struct XrcdObj {
  ibv_xrcd xrcd{};
  uint32_t id = 0;
  dev_t dev = 0;  ///< the file's device and inode; ino 0: no file (fd -1)
  ino_t ino = 0;
};
/// ibv_open_xrcd(3), verbs_context::open_xrcd (emu/verbs_shim/xrc.cpp).
ibv_xrcd* open_xrcd(ibv_context* context, ibv_xrcd_init_attr* attr);
/// ibv_close_xrcd(3), verbs_context::close_xrcd.
int close_xrcd(ibv_xrcd* xrcd);
/// An XRC receive QP (IBV_QPT_XRC_RECV) in attr->xrcd's domain, in RESET (create_qp_ex's
/// checks done). Its caps are 0: it has no queue. Null with errno ENOMEM beyond max_qp.
ibv_qp* create_xrc_recv_qp(ibv_qp_init_attr_ex* attr);
/// ibv_get_srq_num(3), verbs_context::get_srq_num: the SRQ's number (emu::Srq::srqn).
int get_srq_num(ibv_srq* srq, uint32_t* srq_num);
/// The number of the XRC domain of `xrcd` (an XrcdObj of open_xrcd).
uint32_t xrcd_id(ibv_xrcd* xrcd);
/// Counts a user (an XRC SRQ or XRC receive QP) of `xrcd`'s domain in or out (`delta` +1 / -1).
void xrcd_use(ibv_xrcd* xrcd, int delta);
/// ibv_srq: the emulated SRQ (emu::Srq), whose receives the QPs created on it consume. An XRC
/// SRQ has its XRC domain and its CQ (`xrcd`, `cq`), counted as their user while it lives.
struct SrqObj {
  ibv_srq srq{};
  std::shared_ptr<Srq> emu;
  uint32_t max_sge = 0;
  uint32_t limit = 0;  // ibv_modify_srq's srq_limit (kept; no limit event is raised)
  ibv_xrcd* xrcd = nullptr;
  Cq* cq = nullptr;
};
/// An SRQ as ibv_create_srq(3) and ibv_create_srq_ex(3) make it: on `pd`, of attr's max_wr and
/// max_sge (written back), in XRC domain `xrcd` completing on `cq` when given (an XRC SRQ).
/// Null with errno EINVAL (max_wr 0 or beyond the device's max_qp_wr, max_sge beyond
/// sdp::kMaxSge) or ENOMEM (beyond max_srq).
ibv_srq* new_srq(ibv_pd* pd, ibv_srq_init_attr* attr, ibv_xrcd* xrcd, Cq* cq);

/// ibv_pd: a protection domain of the emulated adapter (Hca::alloc_pd).
struct PdObj {
  ibv_pd pd{};
  uint32_t id = 0;
  /// The MRs, QPs, SRQs and AHs created on it: ibv_dealloc_pd(3) is EBUSY while any live (the
  /// kernel's pd->usecnt, ib_destroy_usecnt).
  std::atomic<int> users{0};
};
/// The shim object of an ibv_pd the shim allocated.
inline PdObj* pd_of(ibv_pd* pd) { return reinterpret_cast<PdObj*>(pd); }

/// ibv_mr: the registration and the pages it pinned (resources.h pin_user_memory).
struct MrObj {
  ibv_mr mr{};
  uint64_t pinned_pages = 0;
  unsigned access = 0;  ///< the ibv_access_flags it was registered (or reregistered) with
};

/// ibv_ah: the port it names on the emulated subnet (emu/subnet.h).
struct AhObj {
  ibv_ah ah{};
  uint16_t dlid = 0;
  ibv_ah_attr attr{};
};

/// ibv_qp: the emulated QP, its CQs and the attributes ibv_modify_qp(3) set (ibv_query_qp(3)
/// returns them).
struct QpObj {
  ibv_qp qp{};
  std::shared_ptr<Qp> emu;
  Cq* send_cq = nullptr;
  Cq* recv_cq = nullptr;
  bool sq_sig_all = false;
  std::mutex m;               // attr
  ibv_qp_attr attr{};
  ibv_qp_init_attr init{};
  /// An XRC receive QP's XRC domain (counted as its user), else null.
  ibv_xrcd* xrcd = nullptr;
  /// The cm_id whose QP this is (rdma_create_qp), or null: destroyed with ibv_destroy_qp rather
  /// than rdma_destroy_qp (rping does), the QP is taken off the id, so that rdma_destroy_id
  /// does not touch a freed QP.
  rdma_cm_id* cm_id = nullptr;
};

/// Creates an RC, UC, UD or XRC send QP on `pd` for rdma_create_qp(3) and ibv_create_qp(3) (the
/// checks: one of those types, a send and a receive CQ (the same or two; an XRC send QP has no
/// receive side, so needs no receive CQ and gets no SRQ or receive WRs), an SRQ or not, at most
/// sdp::kMaxSge SGEs, the device's max_qp_wr WRs and max_inline_data bytes inline; the caps
/// actually given are written back). The QP is in INIT. Returns null with errno set (EINVAL, EOPNOTSUPP for another
/// type) when refused. A UD QP starts with Q_Key 0.
QpObj* create_qp(ibv_pd* pd, ibv_qp_init_attr* attr);
/// With $HCASIM_FAULT_STATS=1: one line on stderr, "hcasim verbs shim: QP 0x48: N frames lost,
/// M retransmitted (...)", what the injected faults did on the QP's sending side, and a second,
/// "hcasim verbs shim: QP 0x48 (RC): N payload bytes sent in P packets, M received in Q packets"
/// (emu::Qp::payload_stats; emu/verbs_shim/fault_stats.cpp). Nothing otherwise.
void report_fault_stats(QpObj& q);
/// With $HCASIM_FAULT_STATS=1: one line on stderr at exit, what the port refused of processes
/// without the subnet's secret (emu::Hca::strangers_refused, datagrams_refused). Nothing
/// otherwise.
void report_port_stats();
/// Destroys a QP of create_qp (its emulated QP closes; its CQs count it no more).
void destroy_qp(QpObj* qp);
/// The QP of cm_id `id` is being destroyed (ibv_destroy_qp or rdma_destroy_qp): an
/// asynchronous rdma_connect still waiting for its REP must no longer touch it (rdmacm.cpp).
void forget_cm_qp(rdma_cm_id* id);
/// The LID of the emulated port on this machine's emulated subnet (emu/subnet.h:
/// $HCASIM_SUBNET, default /tmp/hcasim-subnet-$UID), claimed on the first call; 0 (with one
/// line on stderr) when the subnet directory cannot be used. For ibv_query_port(3)'s lid.
uint16_t port_lid();
/// The port's GUID, 0x0002c90300000000 | port_lid() << 8 | 1 (emu::guid_of_lid; ibv_query_gid(3):
/// GID 0 is fe80::/64 + this GUID, emu::gid_of_lid). 0 as port_lid.
uint64_t port_guid();
/// ibv_access_flags bits -> sdp::Access bits and hca::kRemoteAtomic (an MR's; remote write implies
/// local write, as ibv_reg_mr(3) requires).
unsigned to_access(unsigned flags);
/// A QP's qp_access_flags -> the HCA core's (sdp::kRemoteWrite, kRemoteRead, hca::kRemoteAtomic).
unsigned to_qp_access(unsigned flags);
/// The shim object of an ibv_qp the shim created.
inline QpObj* qp_of(ibv_qp* qp) { return reinterpret_cast<QpObj*>(qp); }

}  // namespace hcasim::emu::shim
