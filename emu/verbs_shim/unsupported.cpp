// The functions of libibverbs.so.1 and librdmacm.so.1 (rdma-core 44) the emulator does not do,
// so that no call of a program, or of libibverbs' own code, reaches rdma-core's implementation
// with the shim's objects: each one says "hcasim verbs shim: NAME is not emulated" on stderr the
// first time it is called, then fails as rdma-core does for a verb the provider lacks.
//
// No rdma-core header is included: these definitions take no parameters (the System V x86-64
// calling convention lets a callee ignore its arguments) and return in the register the real
// return type uses (a pointer, or a long whose low half is the int). Each is weak, so that an
// ordinary definition elsewhere in the shim (ibverbs.cpp, rdmacm.cpp, device.cpp) replaces it
// when a verb becomes emulated: nothing here needs to be edited for that.
#include <cerrno>

#include "emu/verbs_shim/device.h"

using hcasim::emu::shim::not_emulated;

// Kinds of failure, by the real function's return convention:
//   PTR   a pointer: NULL with errno EOPNOTSUPP
//   ERR   an int errno value: EOPNOTSUPP (errno set too)
//   NEG   0 / -1 with errno: -1 with errno EOPNOTSUPP (int or ssize_t: -1 either way)
//   ZERO  a count or flag: 0 (none, not guaranteed)
//   VOID  nothing
#define HCASIM_RET_PTR void*
#define HCASIM_RET_ERR long
#define HCASIM_RET_NEG long
#define HCASIM_RET_ZERO long
#define HCASIM_RET_VOID void
#define HCASIM_BODY_PTR errno = EOPNOTSUPP; return nullptr;
#define HCASIM_BODY_ERR errno = EOPNOTSUPP; return EOPNOTSUPP;
#define HCASIM_BODY_NEG errno = EOPNOTSUPP; return -1;
#define HCASIM_BODY_ZERO return 0;
#define HCASIM_BODY_VOID return;

#define HCASIM_NOT_EMULATED(kind, name)                          \
  extern "C" __attribute__((weak)) HCASIM_RET_##kind name() {    \
    static std::atomic<bool> said;                               \
    not_emulated(said, #name);                                   \
    HCASIM_BODY_##kind                                           \
  }

// ---- libibverbs.so.1: verbs (IBVERBS_1.0 .. 1.14) ----
HCASIM_NOT_EMULATED(PTR, ibv_create_ah)
HCASIM_NOT_EMULATED(PTR, ibv_create_ah_from_wc)
HCASIM_NOT_EMULATED(ERR, ibv_destroy_ah)
HCASIM_NOT_EMULATED(ERR, ibv_init_ah_from_wc)
HCASIM_NOT_EMULATED(ERR, ibv_attach_mcast)
HCASIM_NOT_EMULATED(ERR, ibv_detach_mcast)
HCASIM_NOT_EMULATED(PTR, ibv_create_qp)
HCASIM_NOT_EMULATED(ERR, ibv_destroy_qp)
HCASIM_NOT_EMULATED(ERR, ibv_query_qp)
HCASIM_NOT_EMULATED(ZERO, ibv_query_qp_data_in_order)
HCASIM_NOT_EMULATED(PTR, ibv_qp_to_qp_ex)
HCASIM_NOT_EMULATED(ERR, ibv_query_ece)
HCASIM_NOT_EMULATED(ERR, ibv_set_ece)
HCASIM_NOT_EMULATED(PTR, ibv_create_srq)
HCASIM_NOT_EMULATED(ERR, ibv_destroy_srq)
HCASIM_NOT_EMULATED(ERR, ibv_modify_srq)
HCASIM_NOT_EMULATED(ERR, ibv_query_srq)
HCASIM_NOT_EMULATED(ERR, ibv_resize_cq)
HCASIM_NOT_EMULATED(ERR, ibv_rereg_mr)
HCASIM_NOT_EMULATED(PTR, ibv_reg_dmabuf_mr)
HCASIM_NOT_EMULATED(PTR, ibv_import_device)
HCASIM_NOT_EMULATED(PTR, ibv_import_pd)
HCASIM_NOT_EMULATED(PTR, ibv_import_mr)
HCASIM_NOT_EMULATED(PTR, ibv_import_dm)
HCASIM_NOT_EMULATED(VOID, ibv_unimport_pd)
HCASIM_NOT_EMULATED(VOID, ibv_unimport_mr)
HCASIM_NOT_EMULATED(VOID, ibv_unimport_dm)

// ---- libibverbs.so.1: the provider interface (IBVERBS_PRIVATE_34; no provider runs here) ----
HCASIM_NOT_EMULATED(ZERO, __ioctl_final_num_attrs)
HCASIM_NOT_EMULATED(PTR, _verbs_init_and_alloc_context)
HCASIM_NOT_EMULATED(ERR, execute_ioctl)
HCASIM_NOT_EMULATED(NEG, ibv_read_ibdev_sysfs_file)
HCASIM_NOT_EMULATED(VOID, verbs_init_cq)
HCASIM_NOT_EMULATED(PTR, verbs_open_device)
HCASIM_NOT_EMULATED(VOID, verbs_set_ops)
HCASIM_NOT_EMULATED(VOID, verbs_uninit_context)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_advise_mr)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_alloc_dm)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_alloc_mw)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_alloc_pd)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_attach_mcast)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_close_xrcd)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_create_ah)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_create_counters)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_create_cq)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_create_cq_ex)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_create_flow)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_create_flow_action_esp)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_create_qp)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_create_qp_ex)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_create_qp_ex2)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_create_rwq_ind_table)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_create_srq)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_create_srq_ex)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_create_wq)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_dealloc_mw)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_dealloc_pd)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_dereg_mr)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_destroy_ah)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_destroy_counters)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_destroy_cq)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_destroy_flow)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_destroy_flow_action)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_destroy_qp)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_destroy_rwq_ind_table)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_destroy_srq)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_destroy_wq)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_detach_mcast)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_free_dm)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_get_context)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_modify_cq)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_modify_flow_action_esp)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_modify_qp)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_modify_qp_ex)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_modify_srq)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_modify_wq)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_open_qp)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_open_xrcd)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_poll_cq)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_post_recv)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_post_send)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_post_srq_recv)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_query_context)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_query_device_any)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_query_mr)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_query_port)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_query_qp)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_query_srq)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_read_counters)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_reg_dm_mr)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_reg_dmabuf_mr)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_reg_mr)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_req_notify_cq)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_rereg_mr)
HCASIM_NOT_EMULATED(ERR, ibv_cmd_resize_cq)

// ---- librdmacm.so.1 (RDMACM_1.0 .. 1.3) ----
HCASIM_NOT_EMULATED(NEG, rdma_create_ep)
HCASIM_NOT_EMULATED(VOID, rdma_destroy_ep)
HCASIM_NOT_EMULATED(NEG, rdma_create_qp_ex)
HCASIM_NOT_EMULATED(NEG, rdma_create_srq)
HCASIM_NOT_EMULATED(NEG, rdma_create_srq_ex)
HCASIM_NOT_EMULATED(VOID, rdma_destroy_srq)
HCASIM_NOT_EMULATED(NEG, rdma_establish)
HCASIM_NOT_EMULATED(NEG, rdma_getaddrinfo)
HCASIM_NOT_EMULATED(VOID, rdma_freeaddrinfo)
HCASIM_NOT_EMULATED(NEG, rdma_get_request)
HCASIM_NOT_EMULATED(NEG, rdma_get_remote_ece)
HCASIM_NOT_EMULATED(NEG, rdma_set_local_ece)
HCASIM_NOT_EMULATED(NEG, rdma_reject_ece)
HCASIM_NOT_EMULATED(NEG, rdma_init_qp_attr)
HCASIM_NOT_EMULATED(NEG, rdma_join_multicast)
HCASIM_NOT_EMULATED(NEG, rdma_join_multicast_ex)
HCASIM_NOT_EMULATED(NEG, rdma_leave_multicast)
HCASIM_NOT_EMULATED(NEG, rdma_notify)
HCASIM_NOT_EMULATED(NEG, rdma_set_option)
