// hcasim-verbs-probe: a program linked against rdma-core's libibverbs and librdmacm like any
// other (its references are versioned: ibv_query_device@IBVERBS_1.1,
// _ibv_query_gid_ex@IBVERBS_1.11, ...), run with the verbs shim preloaded by the ctest
// VerbsShim.DeviceSurface (tests/stock/stock.py).
// It calls the device side of the shim (emu/verbs_shim/device.h) through every way verbs.h
// offers: exported functions, verbs.h's inline wrappers over the verbs_context ops, the legacy
// ibv_context_ops, and a few "not emulated" verbs. One line per check, "ok ..." or "FAIL ...",
// then "probe: N checks, M failed"; exit status 1 when any failed, 2 without the device.
#include <endian.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rsocket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

extern "C" int ibv_dontfork_range(void* base, size_t size);

namespace {

int checks = 0;
int failed = 0;

void check(bool ok, const std::string& what) {
  ++checks;
  if (!ok) ++failed;
  std::printf("%s %s\n", ok ? "ok" : "FAIL", what.c_str());
}

}  // namespace

int main() {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (list == nullptr || n != 1) {
    std::printf("probe: no device (%d)\n", n);
    return 2;
  }
  ibv_device* dev = list[0];
  check(std::strcmp(ibv_get_device_name(dev), "hcasim_emu0") == 0, "ibv_get_device_name is hcasim_emu0");
  const uint64_t guid = be64toh(ibv_get_device_guid(dev));
  check(guid >> 40 == 0x0002c9, "ibv_get_device_guid has the Mellanox OUI 00:02:c9");
  check(ibv_get_device_index(dev) == 0, "ibv_get_device_index is 0");
  check(dev->node_type == IBV_NODE_CA && dev->transport_type == IBV_TRANSPORT_IB, "an IB channel adapter");
  // Its uverbs node, as UCX's uct_ib_device_is_accessible (src/uct/ib/base/ib_md.c) checks it
  // before it lists the device: a character device it may read and write
  // (emu/verbs_shim/dev_node.cpp); other paths are the kernel's.
  const std::string node = std::string("/dev/infiniband/") + dev->dev_name;
  struct stat st {};
  check(node == "/dev/infiniband/uverbs-hcasim0" && stat(node.c_str(), &st) == 0 && S_ISCHR(st.st_mode) &&
            (st.st_mode & 07777) == 0666 && major(st.st_rdev) == 231 && minor(st.st_rdev) == 192,
        "stat of /dev/infiniband/uverbs-hcasim0: a character device 231:192, mode 0666");
  check(access(node.c_str(), R_OK | W_OK) == 0, "access(R_OK | W_OK) of the uverbs node");
  errno = 0;
  check(access(node.c_str(), X_OK) == -1 && errno == EACCES, "access(X_OK) of the uverbs node is EACCES");
  errno = 0;
  check(stat("/dev/infiniband/uverbs-hcasim1", &st) == -1 && errno == ENOENT, "stat of another uverbs node is ENOENT");
  check(stat("/", &st) == 0 && S_ISDIR(st.st_mode) && access("/", R_OK) == 0, "stat and access of / are the kernel's");

  ibv_context* ctx = ibv_open_device(dev);
  check(ctx != nullptr, "ibv_open_device");
  if (ctx == nullptr) return 1;
  verbs_context* vctx = verbs_get_ctx(ctx);
  check(vctx != nullptr && vctx->sz >= sizeof(verbs_context), "the context is a verbs_context of full size");

  ibv_device_attr a{};
  check(ibv_query_device(ctx, &a) == 0, "ibv_query_device");
  check(a.vendor_id == 0x02c9 && a.vendor_part_id == 4099, "vendor 0x02c9 part 4099 (ConnectX-3)");
  check(be64toh(a.node_guid) == guid && be64toh(a.sys_image_guid) == guid + 3, "node GUID = device GUID, system image GUID + 3");
  check(a.max_qp_rd_atom == 16 && a.atomic_cap == IBV_ATOMIC_HCA && a.phys_port_cnt == 1, "max_qp_rd_atom 16, ATOMIC_HCA, 1 port");
  check(std::strcmp(a.fw_ver, "2.42.5000") == 0, "fw_ver 2.42.5000");
  ibv_device_attr legacy{};
  check(ctx->ops._compat_query_device(ctx, &legacy) == 0 && std::memcmp(&legacy, &a, sizeof a) == 0,
        "the legacy ops._compat_query_device gives the same attributes");

  ibv_device_attr_ex ax{};
  check(ibv_query_device_ex(ctx, nullptr, &ax) == 0 && std::memcmp(&ax.orig_attr, &a, sizeof a) == 0,
        "ibv_query_device_ex (inline, verbs_context op) gives the same attributes");
  ibv_query_device_ex_input in{};
  in.comp_mask = 1;
  check(ibv_query_device_ex(ctx, &in, &ax) == EINVAL, "ibv_query_device_ex with an unknown comp_mask is EINVAL");

  ibv_port_attr p{};
  check(ibv_query_port(ctx, 1, &p) == 0, "ibv_query_port (inline, verbs_context op)");
  check(p.state == IBV_PORT_ACTIVE && p.phys_state == 5 && p.link_layer == IBV_LINK_LAYER_INFINIBAND,
        "port ACTIVE, LinkUp, InfiniBand");
  check(p.max_mtu == IBV_MTU_4096 && p.active_mtu == IBV_MTU_2048, "MTU 4096 max, 2048 active");
  check(p.active_width == 2 && p.active_speed == 2, "4X DDR");
  check(p.lid != 0 && p.lmc == 0 && p.sm_lid != 0, "a LID, LMC 0, an SM LID");
  check(p.gid_tbl_len == 128 && p.pkey_tbl_len == 128 && p.port_cap_flags == 0x02514868u, "tables of 128, cap mask 0x02514868");
  ibv_port_attr old{};
  check((ibv_query_port)(ctx, 1, reinterpret_cast<_compat_ibv_port_attr*>(&old)) == 0 && old.lid == p.lid &&
            old.state == p.state && old.link_layer == p.link_layer,
        "the exported ibv_query_port (compat struct) agrees");
  check(ibv_query_port(ctx, 2, &p) == EINVAL, "port 2 is EINVAL");

  ibv_gid g{};
  check(ibv_query_gid(ctx, 1, 0, &g) == 0 && be64toh(g.global.subnet_prefix) == 0xfe80000000000000ull &&
            be64toh(g.global.interface_id) == guid + 1,
        "GID 0 is fe80::/64 + port GUID (node GUID + 1)");
  ibv_gid zero{};
  check(ibv_query_gid(ctx, 1, 1, &g) == 0 && std::memcmp(&g, &zero, sizeof g) == 0, "GID 1 is zero");
  check(ibv_query_gid(ctx, 1, 128, &g) == -1, "GID 128 is past the table");
  ibv_gid_entry e{};
  check(ibv_query_gid_ex(ctx, 1, 0, &e, 0) == 0 && e.gid_type == IBV_GID_TYPE_IB && e.port_num == 1,
        "ibv_query_gid_ex 0: an IB GID of port 1");
  check(ibv_query_gid_ex(ctx, 1, 1, &e, 0) == ENODATA, "ibv_query_gid_ex 1 is ENODATA (empty)");
  ibv_gid_entry table[4]{};
  check(ibv_query_gid_table(ctx, table, 4, 0) == 1, "ibv_query_gid_table has 1 entry");

  __be16 pkey = 0;
  check(ibv_query_pkey(ctx, 1, 0, &pkey) == 0 && be16toh(pkey) == 0xffff, "P_Key 0 is 0xffff");
  check(ibv_get_pkey_index(ctx, 1, htobe16(0xffff)) == 0, "ibv_get_pkey_index(0xffff) is 0");

  check(std::strcmp(ibv_port_state_str(IBV_PORT_ACTIVE), "active") == 0, "ibv_port_state_str");
  check(std::strcmp(ibv_node_type_str(IBV_NODE_CA), "InfiniBand channel adapter") == 0, "ibv_node_type_str");
  check(std::strcmp(ibv_event_type_str(IBV_EVENT_PORT_ACTIVE), "port active") == 0, "ibv_event_type_str");
  check(std::strcmp(ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR), "transport retry counter exceeded") == 0, "ibv_wc_status_str");
  check(ibv_rate_to_mult(IBV_RATE_40_GBPS) == 16 && mult_to_ibv_rate(8) == IBV_RATE_20_GBPS, "ibv_rate_to_mult / mult_to_ibv_rate");
  check(ibv_rate_to_mbps(IBV_RATE_56_GBPS) == 56250 && mbps_to_ibv_rate(14062) == IBV_RATE_14_GBPS,
        "ibv_rate_to_mbps / mbps_to_ibv_rate");
  check(ibv_fork_init() == 0 && ibv_is_fork_initialized() == IBV_FORK_UNNEEDED, "fork: UNNEEDED");
  char page[64];
  check(ibv_dontfork_range(page, sizeof page) == 0, "ibv_dontfork_range");

  ibv_values_ex v{};
  v.comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
  check(ibv_query_rt_values_ex(ctx, &v) == 0 && (v.raw_clock.tv_sec != 0 || v.raw_clock.tv_nsec != 0),
        "ibv_query_rt_values_ex: a raw clock");

  const int fl = fcntl(ctx->async_fd, F_GETFL);
  check(fl >= 0 && fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK) == 0, "the async fd is a file descriptor");
  ibv_async_event ev{};
  errno = 0;
  check(ibv_get_async_event(ctx, &ev) == -1 && errno == EAGAIN, "no async event: EAGAIN when non-blocking");

  // Memory windows (legacy ops): types 1 and 2, another type EINVAL.
  ibv_pd* pd = ibv_alloc_pd(ctx);
  check(pd != nullptr, "ibv_alloc_pd");
  ibv_mw* mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
  check(mw != nullptr && mw->type == IBV_MW_TYPE_2 && mw->rkey != 0 && mw->pd == pd, "ibv_alloc_mw (legacy op): type 2");
  check(mw != nullptr && ibv_dealloc_pd(pd) == EBUSY, "ibv_dealloc_pd with a memory window on it: EBUSY");
  check(mw != nullptr && ibv_dealloc_mw(mw) == 0, "ibv_dealloc_mw");
  errno = 0;
  check(ibv_alloc_mw(pd, static_cast<ibv_mw_type>(3)) == nullptr && errno == EINVAL, "ibv_alloc_mw of type 3: EINVAL");
  // Verbs the emulator does not do: NULL / EOPNOTSUPP, and one stderr line each however often.
  ibv_gid mgid{};
  mgid.raw[0] = 0xff;
  check(ibv_attach_mcast(nullptr, &mgid, 0xc001) == EINVAL, "ibv_attach_mcast (exported) without a QP: EINVAL");
  for (int i = 0; i < 2; ++i) {
    ibv_alloc_dm_attr dm{};
    dm.length = 64;
    errno = 0;
    check(ibv_alloc_dm(ctx, &dm) == nullptr && errno == EOPNOTSUPP, "ibv_alloc_dm (verbs_context op): EOPNOTSUPP");
    errno = 0;
    check(ibv_reg_dmabuf_mr(pd, 0, 4096, 0, -1, IBV_ACCESS_LOCAL_WRITE) == nullptr && errno == EOPNOTSUPP,
          "ibv_reg_dmabuf_mr (exported): EOPNOTSUPP");
  }
  check(ibv_dealloc_pd(pd) == 0, "ibv_dealloc_pd");

  // librdmacm: its device list is the same verbs_context.
  int nc = 0;
  ibv_context** cms = rdma_get_devices(&nc);
  check(cms != nullptr && nc == 1 && cms[0] == ctx, "rdma_get_devices: the same context as ibv_open_device");
  if (cms != nullptr) rdma_free_devices(cms);
  check(std::strcmp(rdma_event_str(RDMA_CM_EVENT_ESTABLISHED), "RDMA_CM_EVENT_ESTABLISHED") == 0, "rdma_event_str");
  // rsockets without a peer: options, flags and the errnos a socket gives.
  errno = 0;
  check(rsocket(AF_INET, SOCK_DGRAM, 0) == -1 && errno == ENOTSUP, "rsocket SOCK_DGRAM: -1, ENOTSUP");
  errno = 0;
  check(rsocket(AF_UNIX, SOCK_STREAM, 0) == -1 && errno == EAFNOSUPPORT, "rsocket AF_UNIX: -1, EAFNOSUPPORT");
  const int rs = rsocket(AF_INET, SOCK_STREAM, 0);
  check(rs >= 0, "rsocket AF_INET SOCK_STREAM: a descriptor");
  int opt = 1 << 18;
  socklen_t vl = sizeof opt;
  check(rsetsockopt(rs, SOL_SOCKET, SO_RCVBUF, &opt, sizeof opt) == 0, "rsetsockopt SO_RCVBUF");
  opt = 0;
  check(rgetsockopt(rs, SOL_SOCKET, SO_RCVBUF, &opt, &vl) == 0 && opt == 1 << 18, "rgetsockopt SO_RCVBUF: 262144");
  opt = 128;
  check(rsetsockopt(rs, SOL_RDMA, RDMA_SQSIZE, &opt, sizeof opt) == 0, "rsetsockopt RDMA_SQSIZE");
  opt = 0;
  vl = sizeof opt;
  check(rgetsockopt(rs, SOL_RDMA, RDMA_SQSIZE, &opt, &vl) == 0 && opt == 128, "rgetsockopt RDMA_SQSIZE: 128");
  opt = 1;
  check(rsetsockopt(rs, IPPROTO_TCP, TCP_NODELAY, &opt, sizeof opt) == 0, "rsetsockopt TCP_NODELAY");
  check(rsetsockopt(rs, SOL_SOCKET, SO_KEEPALIVE, &opt, sizeof opt) == 0, "rsetsockopt SO_KEEPALIVE");
  const linger lg{1, 2};
  check(rsetsockopt(rs, SOL_SOCKET, SO_LINGER, &lg, sizeof lg) == 0, "rsetsockopt SO_LINGER");
  errno = 0;
  check(rsetsockopt(rs, SOL_SOCKET, SO_BROADCAST, &opt, sizeof opt) == -1 && errno == ENOTSUP,
        "rsetsockopt SO_BROADCAST: -1, ENOTSUP");
  check(rfcntl(rs, F_SETFL, O_NONBLOCK) == 0 && (rfcntl(rs, F_GETFL) & O_NONBLOCK) != 0, "rfcntl O_NONBLOCK");
  char byte = 0;
  errno = 0;
  check(rrecv(rs, &byte, 1, 0) == -1 && errno == ENOTCONN, "rrecv unconnected: -1, ENOTCONN");
  errno = 0;
  check(rsend(rs, &byte, 1, 0) == -1 && errno == ENOTCONN, "rsend unconnected: -1, ENOTCONN");
  pollfd pf{rs, POLLIN | POLLOUT, 0};
  check(rpoll(&pf, 1, 0) == 1 && pf.revents == (POLLOUT | POLLHUP), "rpoll unconnected: POLLOUT | POLLHUP");
  sockaddr_in nobody{};
  nobody.sin_family = AF_INET;
  nobody.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  nobody.sin_port = htons(1);  // tcpmux: nobody listens
  check(rfcntl(rs, F_SETFL, 0) == 0, "rfcntl back to blocking");  // a non-blocking one answers EINPROGRESS
  errno = 0;
  check(rconnect(rs, reinterpret_cast<sockaddr*>(&nobody), sizeof nobody) == -1 && errno == ECONNREFUSED,
        "rconnect to a port nobody listens on: -1, ECONNREFUSED");
  check(rclose(rs) == 0, "rclose");
  errno = 0;
  check(rclose(rs) == -1 && errno == EBADF, "rclose again: -1, EBADF");
  check(ibv_close_device(ctx) == 0, "ibv_close_device");
  ibv_free_device_list(list);
  std::printf("probe: %d checks, %d failed\n", checks, failed);
  return failed == 0 ? 0 : 1;
}
