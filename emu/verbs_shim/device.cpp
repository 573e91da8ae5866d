// The verbs shim's device side (emu/verbs_shim/device.h): the emulated HCA as a ConnectX-3 with
// one InfiniBand port, behind libibverbs' device, context, port, GID and P_Key functions, the
// `struct verbs_context` every context is (so that verbs.h's inline verbs, which go through
// verbs_get_ctx_op() and ctx->ops, land here), the string and rate helpers, and the context ops
// the emulator does not do ("not emulated": one stderr line per verb, then the error a real
// provider gives for a verb it lacks).
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

#include <endian.h>

#include "emu/verbs_shim/device.h"
#include "emu/verbs_shim/shim.h"

// verbs.h makes these macros over static inline functions; the shim defines the exported symbols.
#undef ibv_query_port
#undef ibv_reg_mr
#undef ibv_reg_mr_iova

namespace hcasim::emu::shim {

uint64_t node_guid() { return cx3::kNodeGuidBase | static_cast<uint64_t>(port_lid()) << 8; }

void not_emulated(std::atomic<bool>& said, const char* verb) {
  if (!said.exchange(true)) std::fprintf(stderr, "hcasim verbs shim: %s is not emulated\n", verb);
}

__attribute__((weak)) ibv_cq_ex* create_cq_ex(ibv_context* /*context*/, ibv_cq_init_attr_ex* /*attr*/) {
  static std::atomic<bool> said;
  not_emulated(said, "ibv_create_cq_ex");
  errno = EOPNOTSUPP;
  return nullptr;
}

__attribute__((weak)) ibv_qp* create_qp_ex(ibv_context* /*context*/, ibv_qp_init_attr_ex* /*attr*/) {
  static std::atomic<bool> said;
  not_emulated(said, "ibv_create_qp_ex");
  errno = EOPNOTSUPP;
  return nullptr;
}

namespace {

/// A context op the emulator does not do, for an op of type F named `Verb` in messages: says so
/// once, then returns as a provider without the verb does (NULL with errno EOPNOTSUPP, or
/// EOPNOTSUPP; nothing for a void op).
template <class F>
struct OpStub;
template <class R, class... A>
struct OpStub<R (*)(A...)> {
  template <const char* Verb>
  static R fn(A...) {
    static std::atomic<bool> said;
    not_emulated(said, Verb);
    errno = EOPNOTSUPP;
    if constexpr (std::is_void_v<R>) {
      return;
    } else if constexpr (std::is_pointer_v<R>) {
      return nullptr;
    } else {
      return static_cast<R>(EOPNOTSUPP);
    }
  }
};

/// Sets `table.field` to the "not emulated" op named `verb` (a string literal).
#define HCASIM_OP_STUB(table, field, verb)                                   \
  do {                                                                       \
    static constexpr char kName[] = verb;                                    \
    (table).field = &OpStub<decltype((table).field)>::template fn<kName>;   \
  } while (0)

/// The port number of the one port.
constexpr uint8_t kPort = 1;

/// Writes the ConnectX-3's attributes, with the emulator's tighter limits (device.h), to `a`.
void fill_device_attr(ibv_device_attr& a) {
  std::memset(&a, 0, sizeof a);
  std::snprintf(a.fw_ver, sizeof a.fw_ver, "%s", cx3::kFwVer);
  a.node_guid = htobe64(node_guid());
  a.sys_image_guid = htobe64(node_guid() + 3);
  a.max_mr_size = cx3::kMaxMrSize;
  a.page_size_cap = cx3::kPageSizeCap;
  a.vendor_id = cx3::kVendorId;
  a.vendor_part_id = cx3::kVendorPartId;
  a.hw_ver = cx3::kHwVer;
  a.max_qp = cx3::kMaxQp;
  a.max_qp_wr = static_cast<int>(device().hca->limits().max_qp_wr);  // cx3::kMaxQpWr, the core checks it
  a.device_cap_flags = cx3::kDeviceCapFlags;
  a.max_sge = std::min(cx3::kMaxSge, static_cast<int>(sdp::kMaxSge));
  a.max_sge_rd = std::min(cx3::kMaxSgeRd, static_cast<int>(sdp::kMaxSge));
  a.max_cq = cx3::kMaxCq;
  a.max_cqe = std::min(cx3::kMaxCqe, kMaxCqe);
  a.max_mr = cx3::kMaxMr;
  a.max_pd = cx3::kMaxPd;
  a.max_qp_rd_atom = std::min(cx3::kMaxQpRdAtom, kRdAtom);
  a.max_res_rd_atom = cx3::kMaxResRdAtom;
  a.max_qp_init_rd_atom = kRdAtom;
  a.atomic_cap = IBV_ATOMIC_HCA;
  a.max_mcast_grp = cx3::kMaxMcastGrp;
  a.max_mcast_qp_attach = cx3::kMaxMcastQpAttach;
  a.max_total_mcast_qp_attach = cx3::kMaxTotalMcastQpAttach;
  a.max_ah = cx3::kMaxAh;
  a.max_srq = cx3::kMaxSrq;
  a.max_srq_wr = cx3::kMaxSrqWr;
  a.max_srq_sge = cx3::kMaxSrqSge;
  a.max_pkeys = cx3::kMaxPkeys;
  a.local_ca_ack_delay = cx3::kLocalCaAckDelay;
  a.phys_port_cnt = 1;
}

/// Port 1 as a ConnectX-3 on an IB subnet reports it (device.h cx3::k*): ACTIVE / LinkUp, 4X
/// DDR, MTU 4096 possible and 2048 active, LID port_lid(), LMC 0.
ibv_port_attr port_attr() {
  ibv_port_attr p{};
  p.state = IBV_PORT_ACTIVE;
  p.max_mtu = IBV_MTU_4096;     // ConnectX-3 does 4096 [ibstat]
  p.active_mtu = IBV_MTU_2048;  // hcasim's modelled path MTU (model/ib.h IbConfig::mtu)
  p.gid_tbl_len = cx3::kGidTblLen;
  p.port_cap_flags = cx3::kPortCapFlags;
  p.max_msg_sz = static_cast<uint32_t>(hca::DeviceLimits{}.max_msg_sz);
  p.pkey_tbl_len = cx3::kPkeyTblLen;
  p.lid = port_lid();
  p.sm_lid = cx3::kSmLid;
  p.lmc = 0;
  p.max_vl_num = cx3::kMaxVlNum;
  p.sm_sl = 0;
  p.subnet_timeout = cx3::kSubnetTimeout;
  p.active_width = cx3::kActiveWidth4x;
  p.active_speed = cx3::kActiveSpeedDdr;
  p.phys_state = cx3::kPhysStateLinkUp;
  p.link_layer = IBV_LINK_LAYER_INFINIBAND;
  // PortInfo P_KeyViolations: 16 bits that stop at 0xFFFF (rxe's set_bad_pkey_cntr).
  p.bad_pkey_cntr = static_cast<uint32_t>(std::min<uint64_t>(device().hca->pkey_violations(), 0xFFFF));
  return p;
}

/// GID index 0 of port 1: fe80::/64 and the port GUID (node GUID + 1), network byte order.
ibv_gid port_gid() {
  ibv_gid g{};
  const uint64_t prefix = htobe64(cx3::kGidPrefix);
  const uint64_t guid = htobe64(node_guid() + 1);
  std::memcpy(g.raw, &prefix, 8);
  std::memcpy(g.raw + 8, &guid, 8);
  return g;
}

/// verbs_context::query_port: the first `len` bytes of port_attr(); EINVAL for another port.
int query_port_op(ibv_context* context, uint8_t port_num, ibv_port_attr* attr, size_t len) {
  if (context == nullptr || attr == nullptr || port_num != kPort) return EINVAL;
  const ibv_port_attr p = port_attr();
  std::memcpy(attr, &p, std::min(len, sizeof p));
  return 0;
}

/// ibv_context_ops::_compat_query_port: the fields of struct _compat_ibv_port_attr, which are
/// those of ibv_port_attr before port_cap_flags2.
int compat_query_port_op(ibv_context* context, uint8_t port_num, _compat_ibv_port_attr* attr) {
  return query_port_op(context, port_num, reinterpret_cast<ibv_port_attr*>(attr), offsetof(ibv_port_attr, port_cap_flags2));
}

/// verbs_context::query_device_ex (ibv_query_device_ex(3)): the ibv_device_attr of
/// ibv_query_device and no extended capability (no ODP, TSO, RSS, timestamps, ...). `input`
/// must be null or have comp_mask 0 (EINVAL otherwise); `attr_size` may be smaller than the
/// struct (an older program): that much is written.
int query_device_ex_op(ibv_context* context, const ibv_query_device_ex_input* input, ibv_device_attr_ex* attr,
                       size_t attr_size) {
  if (context == nullptr || attr == nullptr || attr_size < sizeof(ibv_device_attr)) return EINVAL;
  if (input != nullptr && input->comp_mask != 0) return EINVAL;
  ibv_device_attr_ex a{};
  fill_device_attr(a.orig_attr);
  a.device_cap_flags_ex = cx3::kDeviceCapFlags;
  a.phys_port_cnt_ex = 1;
  std::memcpy(attr, &a, std::min(attr_size, sizeof a));
  return 0;
}

/// verbs_context::query_rt_values (ibv_query_rt_values_ex(3)): the raw clock, taken from
/// CLOCK_MONOTONIC_RAW (the emulated HCA's free-running clock). EINVAL for other fields.
int query_rt_values_op(ibv_context* /*context*/, ibv_values_ex* values) {
  if (values == nullptr || (values->comp_mask & ~static_cast<uint32_t>(IBV_VALUES_MASK_RAW_CLOCK)) != 0) return EINVAL;
  if ((values->comp_mask & IBV_VALUES_MASK_RAW_CLOCK) != 0 && ::clock_gettime(CLOCK_MONOTONIC_RAW, &values->raw_clock) != 0)
    return errno;
  return 0;
}

/// ibv_context_ops::_compat_query_device, and ibv_query_device(3): fill_device_attr. 0, or
/// EINVAL for a null argument.
int compat_query_device_op(ibv_context* context, ibv_device_attr* attr) {
  if (context == nullptr || attr == nullptr) return EINVAL;
  fill_device_attr(*attr);
  return 0;
}

/// The emulated sysfs files of the device (ibv_read_sysfs_file on its ibdev_path): what
/// ibv_devinfo and ibstat read. Empty when `file` is not one of them.
std::string sysfs_file(const char* file) {
  const uint64_t g = node_guid();
  auto guid = [](uint64_t v) {
    char b[20];
    std::snprintf(b, sizeof b, "%04x:%04x:%04x:%04x", static_cast<unsigned>(v >> 48), static_cast<unsigned>((v >> 32) & 0xffff),
                  static_cast<unsigned>((v >> 16) & 0xffff), static_cast<unsigned>(v & 0xffff));
    return std::string(b);
  };
  const std::string f = file;
  if (f == "board_id") return cx3::kBoardId;
  if (f == "fw_ver") return cx3::kFwVer;
  if (f == "hca_type") return cx3::kHcaType;
  if (f == "hw_rev") return std::to_string(cx3::kHwVer);
  if (f == "node_type") return "1: CA";
  if (f == "node_guid") return guid(g);
  if (f == "sys_image_guid") return guid(g + 3);
  if (f == "node_desc") return std::string(kDeviceName) + " HCA-1";
  return {};
}

/// Copies `s` to buf as ibv_read_sysfs_file does: NUL-terminated, truncated to size - 1.
int copy_out(const std::string& s, char* buf, size_t size) {
  if (size == 0) return -1;
  const size_t n = std::min(s.size(), size - 1);
  std::memcpy(buf, s.data(), n);
  buf[n] = '\0';
  return static_cast<int>(n);
}

}  // namespace

void init_device(Device& d) {
  d.dev.node_type = IBV_NODE_CA;
  d.dev.transport_type = IBV_TRANSPORT_IB;
  std::snprintf(d.dev.name, sizeof d.dev.name, "%s", kDeviceName);
  std::snprintf(d.dev.dev_name, sizeof d.dev.dev_name, "%s", kUverbsName);
  std::snprintf(d.dev.dev_path, sizeof d.dev.dev_path, "/sys/class/infiniband_verbs/%s", kUverbsName);
  std::snprintf(d.dev.ibdev_path, sizeof d.dev.ibdev_path, "/sys/class/infiniband/%s", kDeviceName);

  verbs_context& v = d.vctx;
  ibv_context& c = v.context;
  c.device = &d.dev;
  c.cmd_fd = -1;
  c.num_comp_vectors = 1;
  pthread_mutex_init(&c.mutex, nullptr);
  c.abi_compat = __VERBS_ABI_IS_EXTENDED;
  v.sz = sizeof(verbs_context);
  // The async event fd: a pipe nothing writes to (the emulated port never changes state), so
  // that poll(2) on it and ibv_get_async_event behave as on a quiet device.
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) == 0) {
    c.async_fd = fds[0];
    d.async_write_fd = fds[1];
  } else {
    c.async_fd = -1;
  }

  // The legacy ops (struct ibv_context_ops).
  ibv_context_ops& o = c.ops;
  o._compat_query_device = compat_query_device_op;
  o._compat_query_port = compat_query_port_op;
  HCASIM_OP_STUB(o, _compat_alloc_pd, "ibv_alloc_pd (legacy context op)");
  HCASIM_OP_STUB(o, _compat_dealloc_pd, "ibv_dealloc_pd (legacy context op)");
  HCASIM_OP_STUB(o, _compat_reg_mr, "ibv_reg_mr (legacy context op)");
  HCASIM_OP_STUB(o, _compat_rereg_mr, "ibv_rereg_mr (legacy context op)");
  HCASIM_OP_STUB(o, _compat_dereg_mr, "ibv_dereg_mr (legacy context op)");
  HCASIM_OP_STUB(o, alloc_mw, "ibv_alloc_mw");
  HCASIM_OP_STUB(o, bind_mw, "ibv_bind_mw");
  HCASIM_OP_STUB(o, dealloc_mw, "ibv_dealloc_mw");
  HCASIM_OP_STUB(o, _compat_create_cq, "ibv_create_cq (legacy context op)");
  HCASIM_OP_STUB(o, poll_cq, "ibv_poll_cq");
  HCASIM_OP_STUB(o, req_notify_cq, "ibv_req_notify_cq");
  HCASIM_OP_STUB(o, _compat_cq_event, "ibv_get_cq_event (legacy context op)");
  HCASIM_OP_STUB(o, _compat_resize_cq, "ibv_resize_cq (legacy context op)");
  HCASIM_OP_STUB(o, _compat_destroy_cq, "ibv_destroy_cq (legacy context op)");
  HCASIM_OP_STUB(o, _compat_create_srq, "ibv_create_srq (legacy context op)");
  HCASIM_OP_STUB(o, _compat_modify_srq, "ibv_modify_srq (legacy context op)");
  HCASIM_OP_STUB(o, _compat_query_srq, "ibv_query_srq (legacy context op)");
  HCASIM_OP_STUB(o, _compat_destroy_srq, "ibv_destroy_srq (legacy context op)");
  HCASIM_OP_STUB(o, post_srq_recv, "ibv_post_srq_recv");
  HCASIM_OP_STUB(o, _compat_create_qp, "ibv_create_qp (legacy context op)");
  HCASIM_OP_STUB(o, _compat_query_qp, "ibv_query_qp (legacy context op)");
  HCASIM_OP_STUB(o, _compat_modify_qp, "ibv_modify_qp (legacy context op)");
  HCASIM_OP_STUB(o, _compat_destroy_qp, "ibv_destroy_qp (legacy context op)");
  HCASIM_OP_STUB(o, post_send, "ibv_post_send");
  HCASIM_OP_STUB(o, post_recv, "ibv_post_recv");
  HCASIM_OP_STUB(o, _compat_create_ah, "ibv_create_ah (legacy context op)");
  HCASIM_OP_STUB(o, _compat_destroy_ah, "ibv_destroy_ah (legacy context op)");
  HCASIM_OP_STUB(o, _compat_attach_mcast, "ibv_attach_mcast (legacy context op)");
  HCASIM_OP_STUB(o, _compat_detach_mcast, "ibv_detach_mcast (legacy context op)");
  HCASIM_OP_STUB(o, _compat_async_event, "ibv_get_async_event (legacy context op)");

  // The extended ops (struct verbs_context), in its order.
  v.query_port = query_port_op;
  HCASIM_OP_STUB(v, advise_mr, "ibv_advise_mr");
  HCASIM_OP_STUB(v, alloc_null_mr, "ibv_alloc_null_mr");
  HCASIM_OP_STUB(v, read_counters, "ibv_read_counters");
  HCASIM_OP_STUB(v, attach_counters_point_flow, "ibv_attach_counters_point_flow");
  HCASIM_OP_STUB(v, create_counters, "ibv_create_counters");
  HCASIM_OP_STUB(v, destroy_counters, "ibv_destroy_counters");
  HCASIM_OP_STUB(v, reg_dm_mr, "ibv_reg_dm_mr");
  HCASIM_OP_STUB(v, alloc_dm, "ibv_alloc_dm");
  HCASIM_OP_STUB(v, free_dm, "ibv_free_dm");
  HCASIM_OP_STUB(v, modify_flow_action_esp, "ibv_modify_flow_action_esp");
  HCASIM_OP_STUB(v, destroy_flow_action, "ibv_destroy_flow_action");
  HCASIM_OP_STUB(v, create_flow_action_esp, "ibv_create_flow_action_esp");
  HCASIM_OP_STUB(v, modify_qp_rate_limit, "ibv_modify_qp_rate_limit");
  HCASIM_OP_STUB(v, alloc_parent_domain, "ibv_alloc_parent_domain");
  HCASIM_OP_STUB(v, dealloc_td, "ibv_dealloc_td");
  HCASIM_OP_STUB(v, alloc_td, "ibv_alloc_td");
  HCASIM_OP_STUB(v, modify_cq, "ibv_modify_cq");
  HCASIM_OP_STUB(v, post_srq_ops, "ibv_post_srq_ops");
  HCASIM_OP_STUB(v, destroy_rwq_ind_table, "ibv_destroy_rwq_ind_table");
  HCASIM_OP_STUB(v, create_rwq_ind_table, "ibv_create_rwq_ind_table");
  HCASIM_OP_STUB(v, destroy_wq, "ibv_destroy_wq");
  HCASIM_OP_STUB(v, modify_wq, "ibv_modify_wq");
  HCASIM_OP_STUB(v, create_wq, "ibv_create_wq");
  v.query_rt_values = query_rt_values_op;
  v.create_cq_ex = create_cq_ex;
  v.priv = nullptr;
  v.query_device_ex = query_device_ex_op;
  HCASIM_OP_STUB(v, ibv_destroy_flow, "ibv_destroy_flow");
  HCASIM_OP_STUB(v, ibv_create_flow, "ibv_create_flow");
  HCASIM_OP_STUB(v, open_qp, "ibv_open_qp");
  v.create_qp_ex = create_qp_ex;
  v.get_srq_num = get_srq_num;
  HCASIM_OP_STUB(v, create_srq_ex, "ibv_create_srq_ex");
  v.open_xrcd = open_xrcd;
  v.close_xrcd = close_xrcd;
}

}  // namespace hcasim::emu::shim

using hcasim::emu::shim::device;
namespace cx3 = hcasim::emu::shim::cx3;

extern "C" {

/// libibverbs' flag for providers (IBVERBS_PRIVATE_34); no provider runs under the shim.
bool verbs_allow_disassociate_destroy = false;

// The private and undeclared functions the shim gives a real meaning (prototypes of rdma-core 44).
int ibv_query_gid_type(ibv_context* context, uint8_t port_num, unsigned int index, int* type);
int ibv_dontfork_range(void* base, size_t size);
int ibv_dofork_range(void* base, size_t size);
const char* ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size);
void verbs_register_driver_34(const void* ops);
void ibv_register_driver(const char* name, void* init_func);

/// verbs_register_driver_34 (IBVERBS_PRIVATE_34) and ibv_register_driver (IBVERBS_1.1): a
/// provider library registering itself, from its constructor, when a program links it (perftest
/// links libmlx5 for its direct verbs). Ignored, silently: the emulated device is the only one.
void verbs_register_driver_34(const void* /*ops*/) {}
void ibv_register_driver(const char* /*name*/, void* /*init_func*/) {}

}  // extern "C"

/// ibv_get_device_list(3): the emulated device alone; *num_devices = 1. Free with
/// ibv_free_device_list. Null with errno ENOMEM when out of memory.
ibv_device** ibv_get_device_list(int* num_devices) {
  auto** list = static_cast<ibv_device**>(std::calloc(2, sizeof(ibv_device*)));
  if (list == nullptr) {
    errno = ENOMEM;
    return nullptr;
  }
  list[0] = &device().dev;
  if (num_devices != nullptr) *num_devices = 1;
  return list;
}

/// ibv_free_device_list(3).
void ibv_free_device_list(ibv_device** list) { std::free(list); }

/// ibv_get_device_name(3): "hcasim_emu0".
const char* ibv_get_device_name(ibv_device* dev) { return dev != nullptr ? dev->name : nullptr; }

/// ibv_get_device_guid(3): the node GUID, network byte order (0 for a null device).
__be64 ibv_get_device_guid(ibv_device* dev) {
  return dev != nullptr ? htobe64(hcasim::emu::shim::node_guid()) : 0;
}

/// ibv_get_device_index(3): 0, the emulated device's index (-1 for a null device).
int ibv_get_device_index(ibv_device* dev) { return dev != nullptr ? 0 : -1; }

/// ibv_open_device(3): the device's one context (every open shares it, as rdma_get_devices(3)
/// does). Its port joins the emulated subnet here (emu/subnet.h), so that a subnet directory
/// that is refused, or one whose every LID is taken, fails the open (the reason on stderr)
/// instead of leaving an ACTIVE port with LID 0. Null with errno ENODEV for a device that is
/// not the emulated one or a port that cannot join.
ibv_context* ibv_open_device(ibv_device* dev) {
  if (dev != &device().dev || hcasim::emu::shim::port_lid() == 0) {
    errno = ENODEV;
    return nullptr;
  }
  return &device().ctx;
}

/// ibv_close_device(3): 0; the shared context stays until exit.
int ibv_close_device(ibv_context* /*context*/) { return 0; }

/// ibv_query_device(3): the ConnectX-3's attributes (device.h). Returns 0, or EINVAL for a null
/// argument.
int ibv_query_device(ibv_context* context, ibv_device_attr* attr) {
  return hcasim::emu::shim::compat_query_device_op(context, attr);
}

/// ibv_query_port(3), the exported symbol (verbs.h's ibv_query_port goes to the context's
/// query_port op): the fields of struct _compat_ibv_port_attr. 0, or EINVAL (port != 1).
int ibv_query_port(ibv_context* context, uint8_t port_num, _compat_ibv_port_attr* attr) {
  return hcasim::emu::shim::compat_query_port_op(context, port_num, attr);
}

/// ibv_query_gid(3): index 0 of port 1 is fe80::/64 + the port GUID, the other 127 entries are
/// zero. 0, or -1 for another port or an index past the table.
int ibv_query_gid(ibv_context* context, uint8_t port_num, int index, ibv_gid* gid) {
  if (context == nullptr || gid == nullptr || port_num != 1 || index < 0 || index >= cx3::kGidTblLen) {
    errno = EINVAL;
    return -1;
  }
  *gid = index == 0 ? hcasim::emu::shim::port_gid() : ibv_gid{};
  return 0;
}

/// ibv_query_gid_ex(3) (_ibv_query_gid_ex, the symbol its inline wrapper calls): entry 0 of
/// port 1 (an IB GID); ENODATA for the empty entries 1..127; EINVAL for another port, an index
/// past the table, flags != 0 or an entry_size smaller than struct ibv_gid_entry.
int _ibv_query_gid_ex(ibv_context* context, uint32_t port_num, uint32_t gid_index, ibv_gid_entry* entry, uint32_t flags,
                      size_t entry_size) {
  if (context == nullptr || entry == nullptr || port_num != 1 || flags != 0 || entry_size < sizeof(ibv_gid_entry) ||
      gid_index >= static_cast<uint32_t>(cx3::kGidTblLen))
    return EINVAL;
  if (gid_index != 0) return ENODATA;
  std::memset(entry, 0, entry_size);
  entry->gid = hcasim::emu::shim::port_gid();
  entry->gid_index = 0;
  entry->port_num = 1;
  entry->gid_type = IBV_GID_TYPE_IB;
  return 0;
}

/// ibv_query_gid_table(3) (_ibv_query_gid_table): the one valid entry. 1, or -EINVAL (no room,
/// flags != 0, entry_size too small).
ssize_t _ibv_query_gid_table(ibv_context* context, ibv_gid_entry* entries, size_t max_entries, uint32_t flags,
                             size_t entry_size) {
  if (context == nullptr || entries == nullptr || max_entries < 1 || flags != 0 || entry_size < sizeof(ibv_gid_entry))
    return -EINVAL;
  const int rc = _ibv_query_gid_ex(context, 1, 0, entries, 0, entry_size);
  return rc == 0 ? 1 : -rc;
}

/// ibv_query_gid_type (IBVERBS_PRIVATE_34): 0, IB / RoCE v1 (sysfs "IB/RoCE v1"), for the
/// valid GID; -1 otherwise.
int ibv_query_gid_type(ibv_context* context, uint8_t port_num, unsigned int index, int* type) {
  if (context == nullptr || type == nullptr || port_num != 1 || index >= static_cast<unsigned>(cx3::kGidTblLen)) {
    errno = EINVAL;
    return -1;
  }
  *type = 0;
  return 0;
}

/// ibv_query_pkey(3): the port's P_Key table (emu::Hca::pkey): 0xffff (the default P_Key, full
/// member) at index 0, zero in the other 127 entries; network byte order. 0, or -1 for another
/// port or an index past the table.
int ibv_query_pkey(ibv_context* context, uint8_t port_num, int index, __be16* pkey) {
  if (context == nullptr || pkey == nullptr || port_num != 1 || index < 0 || index >= cx3::kPkeyTblLen) {
    errno = EINVAL;
    return -1;
  }
  *pkey = htobe16(device().hca->pkey(static_cast<uint16_t>(index)));
  return 0;
}

/// ibv_get_pkey_index(3): 0 for the default P_Key 0xffff (network byte order), else -1.
int ibv_get_pkey_index(ibv_context* context, uint8_t port_num, __be16 pkey) {
  if (context == nullptr || port_num != 1 || pkey != htobe16(hcasim::hca::kDefaultPkey)) {
    errno = EINVAL;
    return -1;
  }
  return 0;
}

/// ibv_get_async_event(3): the emulated device raises no async event (its port stays ACTIVE):
/// blocks on the context's async_fd, or -1 with errno EAGAIN when that fd is non-blocking.
int ibv_get_async_event(ibv_context* context, ibv_async_event* event) {
  if (context == nullptr || event == nullptr) {
    errno = EINVAL;
    return -1;
  }
  char b;
  const ssize_t n = ::read(context->async_fd, &b, 1);
  if (n == 0) errno = EIO;
  return -1;  // nothing is ever written: any return is an error
}

/// ibv_ack_async_event(3): nothing to acknowledge.
void ibv_ack_async_event(ibv_async_event* /*event*/) {}

/// ibv_node_type_str(3).
const char* ibv_node_type_str(ibv_node_type node_type) {
  switch (node_type) {
    case IBV_NODE_CA: return "InfiniBand channel adapter";
    case IBV_NODE_SWITCH: return "InfiniBand switch";
    case IBV_NODE_ROUTER: return "InfiniBand router";
    case IBV_NODE_RNIC: return "iWARP NIC";
    case IBV_NODE_USNIC: return "usNIC";
    case IBV_NODE_USNIC_UDP: return "usNIC UDP";
    case IBV_NODE_UNSPECIFIED: return "unspecified";
    default: return "unknown";
  }
}

/// ibv_port_state_str(3).
const char* ibv_port_state_str(ibv_port_state port_state) {
  switch (port_state) {
    case IBV_PORT_NOP: return "no state change (NOP)";
    case IBV_PORT_DOWN: return "down";
    case IBV_PORT_INIT: return "init";
    case IBV_PORT_ARMED: return "armed";
    case IBV_PORT_ACTIVE: return "active";
    case IBV_PORT_ACTIVE_DEFER: return "active defer";
    default: return "unknown";
  }
}

/// ibv_event_type_str(3).
const char* ibv_event_type_str(ibv_event_type event) {
  static constexpr std::array<const char*, 20> kText = {
      "CQ error",
      "local work queue catastrophic error",
      "invalid request local work queue error",
      "local access violation work queue error",
      "communication established",
      "send queue drained",
      "path migrated",
      "path migration request error",
      "local catastrophic error",
      "port active",
      "port error",
      "LID change",
      "P_Key change",
      "SM change",
      "SRQ catastrophic error",
      "SRQ limit reached",
      "last WQE reached",
      "client reregistration",
      "GID table change",
      "WQ fatal",
  };
  const auto i = static_cast<size_t>(event);
  return i < kText.size() ? kText[i] : "unknown";
}

/// ibv_wc_status_str(3): rdma-core's text for each status.
const char* ibv_wc_status_str(ibv_wc_status status) {
  static constexpr std::array<const char*, 24> kText = {
      "success",
      "local length error",
      "local QP operation error",
      "local EE context operation error",
      "local protection error",
      "Work Request Flushed Error",
      "memory management operation error",
      "bad response error",
      "local access error",
      "remote invalid request error",
      "remote access error",
      "remote operation error",
      "transport retry counter exceeded",
      "RNR retry counter exceeded",
      "local RDD violation error",
      "remote invalid RD request",
      "aborted error",
      "invalid EE context number",
      "invalid EE context state",
      "fatal error",
      "response timeout error",
      "general error",
      "TM error",
      "TM software rendezvous",
  };
  const auto i = static_cast<size_t>(status);
  return i < kText.size() ? kText[i] : "unknown";
}

namespace {

/// The IBA static rates (ibv_rate) with their multiple of 2.5 Gbit/s (0: not a multiple the
/// legacy ibv_rate_to_mult knows) and their data rate in Mbit/s (IBA vol. 1 9.11, PortInfo).
struct Rate {
  ibv_rate rate;
  int mult;
  int mbps;
};
constexpr std::array<Rate, 24> kRates = {{
    {IBV_RATE_2_5_GBPS, 1, 2500},     {IBV_RATE_5_GBPS, 2, 5000},       {IBV_RATE_10_GBPS, 4, 10000},
    {IBV_RATE_20_GBPS, 8, 20000},     {IBV_RATE_30_GBPS, 12, 30000},    {IBV_RATE_40_GBPS, 16, 40000},
    {IBV_RATE_60_GBPS, 24, 60000},    {IBV_RATE_80_GBPS, 32, 80000},    {IBV_RATE_120_GBPS, 48, 120000},
    {IBV_RATE_14_GBPS, 0, 14062},     {IBV_RATE_56_GBPS, 0, 56250},     {IBV_RATE_112_GBPS, 0, 112500},
    {IBV_RATE_168_GBPS, 0, 168750},   {IBV_RATE_25_GBPS, 0, 25781},     {IBV_RATE_100_GBPS, 0, 103125},
    {IBV_RATE_200_GBPS, 0, 206250},   {IBV_RATE_300_GBPS, 0, 309375},   {IBV_RATE_28_GBPS, 0, 28125},
    {IBV_RATE_50_GBPS, 0, 53125},     {IBV_RATE_400_GBPS, 0, 425000},   {IBV_RATE_600_GBPS, 0, 637500},
    {IBV_RATE_800_GBPS, 0, 850000},   {IBV_RATE_1200_GBPS, 0, 1275000}, {IBV_RATE_MAX, 0, 0},
}};

}  // namespace

/// ibv_rate_to_mult(3): the rate as a multiple of 2.5 Gbit/s; -1 for IBV_RATE_MAX or a rate
/// that is not one (14, 56, ... Gbit/s).
int ibv_rate_to_mult(ibv_rate rate) {
  for (const Rate& r : kRates)
    if (r.rate == rate && r.mult != 0) return r.mult;
  return -1;
}

/// mult_to_ibv_rate(3): the inverse of ibv_rate_to_mult; IBV_RATE_MAX for any other multiple.
ibv_rate mult_to_ibv_rate(int mult) {
  for (const Rate& r : kRates)
    if (r.mult == mult && mult != 0) return r.rate;
  return IBV_RATE_MAX;
}

/// ibv_rate_to_mbps(3): the rate in Mbit/s; -1 for IBV_RATE_MAX or an unknown rate.
int ibv_rate_to_mbps(ibv_rate rate) {
  for (const Rate& r : kRates)
    if (r.rate == rate && r.mbps != 0) return r.mbps;
  return -1;
}

/// mbps_to_ibv_rate(3): the inverse of ibv_rate_to_mbps; IBV_RATE_MAX for any other value.
ibv_rate mbps_to_ibv_rate(int mbps) {
  for (const Rate& r : kRates)
    if (r.mbps == mbps && mbps != 0) return r.rate;
  return IBV_RATE_MAX;
}

/// ibv_fork_init(3): 0. The emulated HCA pins no memory, so a fork(2) child's copy-on-write
/// pages break nothing (ibv_is_fork_initialized says IBV_FORK_UNNEEDED).
int ibv_fork_init(void) { return 0; }

/// ibv_is_fork_initialized(3): IBV_FORK_UNNEEDED (see ibv_fork_init).
ibv_fork_status ibv_is_fork_initialized(void) { return IBV_FORK_UNNEEDED; }

/// ibv_dontfork_range / ibv_dofork_range (IBVERBS_1.1): 0, nothing is pinned.
int ibv_dontfork_range(void* /*base*/, size_t /*size*/) { return 0; }
int ibv_dofork_range(void* /*base*/, size_t /*size*/) { return 0; }

/// ibv_get_sysfs_path (IBVERBS_1.0): "/sys" ($SYSFS_PATH when set, as libibverbs).
const char* ibv_get_sysfs_path(void) {
  const char* env = std::getenv("SYSFS_PATH");
  return env != nullptr && env[0] != '\0' ? env : "/sys";
}

/// __verbs_log (IBVERBS_PRIVATE_34): the log of rdma-core's providers (driver.h's verbs_err,
/// verbs_warn, ...; libefa's efadv calls say "not an EFA device" through it when a program
/// such as libfabric asks them about another device). As libibverbs' (libibverbs/init.c,
/// __verbs_log, verbs_set_log_level, verbs_set_log_file): printed when `level` (1 error ..
/// 4 debug) is at most $VERBS_LOG_LEVEL (default 0: nothing), to $VERBS_LOG_FILE (appended)
/// or, without it or when it cannot be opened, stderr. errno is kept.
extern "C" void __verbs_log(verbs_context* /*ctx*/, uint32_t level, const char* fmt, ...) {
  static const struct Log {
    uint32_t level = 0;
    FILE* fp = stderr;
    Log() {
      if (const char* env = std::getenv("VERBS_LOG_LEVEL"); env != nullptr)
        level = static_cast<uint32_t>(std::strtoul(env, nullptr, 0));
      if (const char* env = std::getenv("VERBS_LOG_FILE"); env != nullptr)
        if (FILE* f = std::fopen(env, "ae"); f != nullptr) fp = f;
    }
  } log;
  if (level > log.level || fmt == nullptr) return;
  const int saved = errno;
  va_list args;
  va_start(args, fmt);
  std::vfprintf(log.fp, fmt, args);
  va_end(args);
  errno = saved;
}

/// ibv_read_sysfs_file (IBVERBS_1.0): `dir`/`file` into buf (NUL-terminated, a trailing newline
/// dropped), its length, or -1. The emulated device's ibdev_path has no sysfs directory: its
/// files (board_id, fw_ver, hca_type, hw_rev, node_type, node_guid, sys_image_guid, node_desc)
/// are the emulated ConnectX-3's; other paths are read from the file system.
int ibv_read_sysfs_file(const char* dir, const char* file, char* buf, size_t size) {
  if (dir == nullptr || file == nullptr || buf == nullptr) {
    errno = EINVAL;
    return -1;
  }
  if (std::strcmp(dir, device().dev.ibdev_path) == 0) {
    const std::string s = hcasim::emu::shim::sysfs_file(file);
    if (s.empty()) {
      errno = ENOENT;
      return -1;
    }
    return hcasim::emu::shim::copy_out(s, buf, size);
  }
  const std::string path = std::string(dir) + "/" + file;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  const ssize_t n = size > 0 ? ::read(fd, buf, size) : -1;
  ::close(fd);
  if (n < 0) return -1;
  size_t len = static_cast<size_t>(n);
  if (len == size) --len;
  buf[len] = '\0';
  if (len > 0 && buf[len - 1] == '\n') buf[--len] = '\0';
  return static_cast<int>(len);
}

/// ibv_resolve_eth_l2_from_gid(3): EINVAL with errno EINVAL: the port's link layer is
/// InfiniBand, a GID has no Ethernet MAC or VLAN.
int ibv_resolve_eth_l2_from_gid(ibv_context* /*context*/, ibv_ah_attr* /*attr*/, uint8_t /*eth_mac*/[ETHERNET_LL_SIZE],
                                uint16_t* /*vid*/) {
  errno = EINVAL;
  return EINVAL;
}

/// ibv_reg_mr_iova(3) (IBVERBS_1.7): ibv_reg_mr_iova2 (ibverbs.cpp) with int access flags.
__attribute__((weak)) ibv_mr* ibv_reg_mr_iova(ibv_pd* pd, void* addr, size_t length, uint64_t iova, int access) {
  return ibv_reg_mr_iova2(pd, addr, length, iova, static_cast<unsigned>(access));
}
