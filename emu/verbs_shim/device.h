#pragma once
/// \file The verbs shim's device side (emu/verbs_shim/device.cpp): the emulated HCA as a
/// Mellanox ConnectX-3 (mlx4, PCI device 0x1003 = vendor_part_id 4099) with one InfiniBand port
/// reports itself through ibv_query_device(3), ibv_query_device_ex(3), ibv_query_port(3),
/// ibv_query_gid(3) and ibv_query_pkey(3); the `struct verbs_context` behind every context the
/// shim hands out; and the "not emulated" stubs (emu/verbs_shim/unsupported.cpp).
///
/// Sources of the values below (public ibv_devinfo -v / ibstat outputs of ConnectX-3 MT4099
/// adapters on InfiniBand, read, not copied):
///  - [infinity5]: github.com/claudebarthels/infinity/issues/5 (2019-07-10), `ibv_devinfo -v` of
///    an mlx4 device, fw 2.33.5100: every device attribute below marked [infinity5].
///  - [ibstat]: ibstat of single- and dual-port MT4099 adapters (fw 2.42.5000, hardware version
///    1, node GUID ...d0 / system image GUID ...d3 / port 1 GUID ...d1, capability mask
///    0x02514868, link layer InfiniBand, rates 40 and 56), and an ibv_devinfo -v port section of
///    an mlx4 IB port (max_msg_sz 0x40000000, max_vl_num 8 (4), pkey_tbl_len 128, gid_tbl_len
///    128, subnet_timeout 18, active_width 4X (2), board MT_1100120019, max_mtu 4096 (5)).
///
/// Where the emulated adapter enforces a tighter limit than the card (SGEs, queue and CQ depths,
/// RDMA reads in flight) the device reports the emulator's limit, so that a program sizing its
/// queues from ibv_query_device gets queues the emulator accepts.
///
/// This header has no rdma-core include: unsupported.cpp, which defines functions under
/// libibverbs' names with other C prototypes, includes it.
#include <atomic>
#include <cstdint>

struct ibv_context;
struct ibv_cq_ex;
struct ibv_cq_init_attr_ex;
struct ibv_qp;
struct ibv_qp_init_attr_ex;

namespace hcasim::emu::shim {

struct Device;

/// The emulated device's uverbs name (ibv_device.dev_name, the kernel's uverbsN): its character
/// device node is /dev/infiniband/<this> (kUverbsNode), its sysfs directory
/// /sys/class/infiniband_verbs/<this> (ibv_device.dev_path).
inline constexpr const char* kUverbsName = "uverbs-hcasim0";
/// The device node a verbs user checks before it opens the device, as UCX's
/// uct_ib_device_is_accessible (src/uct/ib/base/ib_md.c) does with stat(2) and access(2):
/// emulated by emu/verbs_shim/dev_node.cpp, which answers for this path only.
inline constexpr const char* kUverbsNode = "/dev/infiniband/uverbs-hcasim0";

/// The ConnectX-3's identity and limits (ibv_device_attr, ibv_port_attr; see the file comment
/// for [infinity5] and [ibstat]).
namespace cx3 {
/// PCI vendor ID of Mellanox (IEEE OUI 00:02:c9), ibv_device_attr.vendor_id [infinity5].
inline constexpr uint32_t kVendorId = 0x02c9;
/// ConnectX-3 (MT27500, PCI device ID 0x1003), ibv_device_attr.vendor_part_id [infinity5].
inline constexpr uint32_t kVendorPartId = 4099;
/// Hardware revision (ibstat "Hardware version: 1") [ibstat].
inline constexpr uint32_t kHwVer = 1;
/// Firmware version string, the last ConnectX-3 firmware line [ibstat].
inline constexpr const char* kFwVer = "2.42.5000";
/// Board ID (the sysfs board_id file ibv_devinfo prints): a single-port ConnectX-3 [ibstat].
inline constexpr const char* kBoardId = "MT_1100120019";
/// hca_type in sysfs (ibstat "CA type").
inline constexpr const char* kHcaType = "MT4099";
/// Node GUID, host byte order: Mellanox OUI 00:02:c9, then 03:00 and a board serial as the
/// ConnectX-3 GUIDs of [ibstat]. Port 1's GUID is node + 1, the system image GUID node + 3
/// [ibstat]. Bits 8..23 carry the port's LID (port_lid()) so that two emulated hosts with
/// different LIDs have different GUIDs; bits 0..7 are 0 (node), 1 (port 1), 3 (system image).
inline constexpr uint64_t kNodeGuidBase = 0x0002c90300000000ull;
/// Largest MR, B (max_mr_size 0xffffffffffffffff) [infinity5].
inline constexpr uint64_t kMaxMrSize = ~0ull;
/// Page sizes the MTT takes: 512 B up to 2 GiB (page_size_cap 0xfffffe00) [infinity5].
inline constexpr uint64_t kPageSizeCap = 0xfffffe00ull;
/// QPs (max_qp 131000) [infinity5].
inline constexpr int kMaxQp = 131000;
/// WRs per work queue (max_qp_wr 16351) [infinity5]; the emulator takes up to kMaxQpWr (shim.h).
inline constexpr int kMaxQpWr = 16351;
/// device_cap_flags 0x057e9c66 as [infinity5] prints it (BAD_PKEY_CNTR, BAD_QKEY_CNTR,
/// CHANGE_PHY_PORT, UD_AV_PORT_ENFORCE, PORT_ACTIVE_EVENT, SYS_IMAGE_GUID, RC_RNR_NAK_GEN,
/// MEM_WINDOW, UD_IP_CSUM, XRC, MEM_MGT_EXTENSIONS, MEM_WINDOW_TYPE_2B, RAW_IP_CSUM and the
/// bits libibverbs has no name for).
inline constexpr uint32_t kDeviceCapFlags = 0x057e9c66u;
/// SGEs per WR (max_sge 32, max_sge_rd 30) [infinity5]; reported as min(this, sdp::kMaxSge).
inline constexpr int kMaxSge = 32;    ///< max_sge
inline constexpr int kMaxSgeRd = 30;  ///< max_sge_rd
/// CQs and CQEs per CQ (max_cq 65408, max_cqe 4194303) [infinity5]; CQEs reported as
/// min(this, shim.h's kMaxCqe), the same.
inline constexpr int kMaxCq = 65408;     ///< max_cq
inline constexpr int kMaxCqe = 4194303;  ///< max_cqe
/// MRs and PDs (max_mr 524032, max_pd 32764) [infinity5].
inline constexpr int kMaxMr = 524032;  ///< max_mr
inline constexpr int kMaxPd = 32764;   ///< max_pd
/// RDMA reads / atomics in flight per QP as responder (max_qp_rd_atom 16, equal to shim.h's
/// kRdAtom) and as a whole (max_res_rd_atom 2096000) [infinity5]. As initiator the card says
/// 128 (max_qp_init_rd_atom); the emulated QP allows kRdAtom, which is reported.
inline constexpr int kMaxQpRdAtom = 16;        ///< max_qp_rd_atom
inline constexpr int kMaxResRdAtom = 2096000;  ///< max_res_rd_atom
/// Multicast (max_mcast_grp 8192, max_mcast_qp_attach 248, max_total_mcast_qp_attach 2031616),
/// address handles (max_ah 2147483647), SRQs (max_srq 65472, max_srq_wr 16383, max_srq_sge
/// 31), P_Keys (max_pkeys 128) and local_ca_ack_delay 15 [infinity5]. Not emulated, reported.
inline constexpr int kMaxMcastGrp = 8192;               ///< max_mcast_grp
inline constexpr int kMaxMcastQpAttach = 248;           ///< max_mcast_qp_attach
inline constexpr int kMaxTotalMcastQpAttach = 2031616;  ///< max_total_mcast_qp_attach
inline constexpr int kMaxAh = 2147483647;               ///< max_ah
inline constexpr int kMaxSrq = 65472;                   ///< max_srq
inline constexpr int kMaxSrqWr = 16383;                 ///< max_srq_wr
inline constexpr int kMaxSrqSge = 31;                   ///< max_srq_sge
inline constexpr uint16_t kMaxPkeys = 128;              ///< max_pkeys
inline constexpr uint8_t kLocalCaAckDelay = 15;         ///< local_ca_ack_delay (4.096 us * 2^15)

/// Port 1: capability mask 0x02514868 (IsTrapSupported, IsAutomaticMigrationSupported,
/// IsSLMappingSupported, IsLEDInfoSupported, IsSystemImageGUIDSupported, IsVendorClassSupported,
/// IsCapabilityMaskNoticeSupported, IsClientReregistrationSupported, IsDeviceManagementSupported,
/// ... ; no IsSM) [ibstat].
inline constexpr uint32_t kPortCapFlags = 0x02514868u;
// The largest message (max_msg_sz 0x40000000 [ibstat]) is hca::DeviceLimits::max_msg_sz, the
// limit the core's requester checks.
/// GID and P_Key table lengths (gid_tbl_len 128, pkey_tbl_len 128) [ibstat].
inline constexpr int kGidTblLen = 128;        ///< gid_tbl_len
inline constexpr uint16_t kPkeyTblLen = 128;  ///< pkey_tbl_len
/// VLs: max_vl_num 4 = VL0-VL7 ("8 (4)") [ibstat].
inline constexpr uint8_t kMaxVlNum = 4;
/// Subnet timeout 18 (4.096 us * 2^18 = 1.07 s) [ibstat].
inline constexpr uint8_t kSubnetTimeout = 18;
/// The subnet manager's LID. The emulated subnet has no SM; a port that is ACTIVE has had one
/// assign its LID, so the SM LID is reported as 1 (port_lid() of the first host).
inline constexpr uint16_t kSmLid = 1;
/// IBA PortInfo LinkWidthActive 4X (ibv_port_attr.active_width 2) [ibstat].
inline constexpr uint8_t kActiveWidth4x = 2;
/// IBA PortInfo LinkSpeedActive: DDR, 5.0 Gbit/s per lane (ibv_port_attr.active_speed 2). A
/// ConnectX-3 trains to the speed of its switch (SDR to FDR; [ibstat] shows QDR "Rate: 40" and
/// FDR "Rate: 56"); DDR is what hcasim models by default (model/ib.h IbConfig::speed,
/// scenarios/platforms/connectx-ddr-pcie1x8.toml), so the rate a program derives from the port
/// (4X DDR = 20 Gbit/s signalling, 16 Gbit/s of data) is the simulated link's.
inline constexpr uint8_t kActiveSpeedDdr = 2;
/// PortInfo PortPhysicalState LinkUp (ibv_port_attr.phys_state 5).
inline constexpr uint8_t kPhysStateLinkUp = 5;
/// Link-local GID prefix fe80::/64 (IBA 4.1.1), host byte order.
inline constexpr uint64_t kGidPrefix = 0xfe80000000000000ull;
}  // namespace cx3

/// The node GUID, host byte order: cx3::kNodeGuidBase with the port's LID (shim.h port_lid(),
/// claimed on the emulated subnet, emu/subnet.h) in bits 8..23.
uint64_t node_guid();

/// Fills `d`: its ibv_device (name, sysfs paths), its verbs_context (abi_compat
/// __VERBS_ABI_IS_EXTENDED, sz, every extended op and every legacy op; the data-path ops
/// poll_cq, req_notify_cq, post_send and post_recv as "not emulated" until the caller sets
/// them) and the context's async event fd. Called once, by device() (ibverbs.cpp).
void init_device(Device& d);

/// Prints "hcasim verbs shim: VERB is not emulated" on stderr the first time `said` is passed
/// (once per verb per process).
void not_emulated(std::atomic<bool>& said, const char* verb);

/// verbs_context::create_cq_ex and create_qp_ex (ibv_create_cq_ex(3), ibv_create_qp_ex(3)):
/// weak "not emulated" definitions in device.cpp (NULL, errno EOPNOTSUPP), for the CQ/QP side
/// to replace with ordinary definitions.
ibv_cq_ex* create_cq_ex(ibv_context* context, ibv_cq_init_attr_ex* attr);
ibv_qp* create_qp_ex(ibv_context* context, ibv_qp_init_attr_ex* attr);

}  // namespace hcasim::emu::shim
