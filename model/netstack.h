#pragma once
/// \file CPU cost of the Linux TCP/IPv4 path over IPoIB, per kernel function: what a send(),
/// a recv(), a segment out, a segment in, an ACK, an interrupt and a DMA mapping cost on one
/// core, in ns. Plain C++, no SimGrid; sim/ipoib_sim.cpp charges these as the events happen and
/// counts calls per function, so that a run prints a flat profile in the form of seed 003's
/// q-view output (frontends/qview_output.h).
///
/// Every value comes from the platform file's [netstack] section (unit and source there;
/// zx1-rx2600-pcix.toml and zx1-rx4640-pcix.toml derive theirs from seed 003's profiles).
/// Kernel paths follow Linux 2.6.10-2.6.12 (the seeds' 2005 kernels): net/ipv4/tcp.c
/// (tcp_sendmsg, tcp_recvmsg), tcp_output.c, tcp_input.c, tcp_ipv4.c, ip_output.c,
/// ip_input.c, netfilter/ip_conntrack_proto_tcp.c, drivers/infiniband/ulp/ipoib/ipoib_ib.c,
/// arch/ia64/lib/do_csum.S; the rows that depend on the host are named after its own kernel
/// (KernelNaming).
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "model/cpu.h"
#include "model/hca.h"

namespace hcasim::model {

class Platform;

/// The rows of an IPoIB run's profile: kernel functions, or groups named after the function
/// that dominates them in seed 003's profile (the doc of each says what it stands for; the
/// names of Interrupt and DmaMap are the host's, KernelNaming).
enum class KernelFn : uint8_t {
  TcpSendmsg,        ///< "tcp_sendmsg": send() entry/exit and tcp_sendmsg's per-call work
  TcpRecvmsg,        ///< "tcp_recvmsg": recv() entry/exit and tcp_recvmsg's per-call work
  CopyUser,          ///< "__copy_user": copy_from_user / copy_to_user of the payload
  DoCsum,            ///< "do_csum": the CPU's Internet checksum, every call (IP header, TCP segment)
  TcpTransmit,       ///< "tcp_transmit_skb": TCP/IP output of one packet (tcp_transmit_skb,
                     ///< ip_queue_xmit, dev_queue_xmit, skb alloc; ACKs included)
  TcpReceive,        ///< "tcp_v4_rcv": IP/TCP input of one packet (netif_rx, netif_receive_skb,
                     ///< ip_rcv, ip_route_input, ip_local_deliver_finish, tcp_v4_rcv,
                     ///< tcp_rcv_established or tcp_ack)
  TcpAck,            ///< "tcp_ack": an ACK's work in TCP (tcp_ack, tcp_clean_rtx_queue freeing the
                     ///< acknowledged skbs, the write-space check)
  IptDoTable,        ///< "ipt_do_table": netfilter hooks (ipt_do_table per table, nf_iterate,
                     ///< the bh locks), per hook a packet passes
  Conntrack,         ///< "ip_conntrack_in": connection tracking per packet (ip_conntrack_in,
                     ///< tcp_packet), without the checksum it computes (counted in DoCsum)
  IpoibXmit,         ///< "ipoib_start_xmit": IPoIB's post of one packet (WQE, doorbell)
  IpoibCompletion,   ///< "ipoib_ib_completion": one CQE polled and handled (skb bookkeeping,
                     ///< a receive buffer allocated and reposted)
  Interrupt,         ///< the HCA driver's EQ handler ("mthca_eq_int", "mlx4_eq_int"): one
                     ///< interrupt (entry, handle_IRQ_event, EQ, exit)
  DmaMap,            ///< the host's DMA mapping ("sba_map_single", "nommu_map_single"): map +
                     ///< unmap of one buffer page
  Schedule,          ///< "schedule": waking a blocked thread and switching to it
  Other,             ///< "(other)": the remaining per-segment work the profiles do not list
  Count_
};
inline constexpr std::size_t kKernelFnCount = static_cast<std::size_t>(KernelFn::Count_);

/// What names a host's rows that depend on its kernel: the HCA driver's event queue handler
/// (Interrupt) and the DMA mapping of its I/O (DmaMap).
struct KernelNaming {
  /// The driver hca.device names; empty for a device of another driver.
  std::optional<HcaDriver> driver = HcaDriver::Mthca;
  /// host.iommu. On is the HP zx1's sba_iommu, the one IOMMU of the platform files; off is
  /// x86_64's DMA without an IOMMU (pci-nommu).
  bool iommu = true;

  /// Reads hca.device and host.iommu.
  static KernelNaming from_platform(const Platform&);
};

/// The profile name of a row on a host whose kernel `naming` describes ("do_csum",
/// "ipt_do_table", "mlx4_eq_int", ...).
std::string_view kernel_fn_name(KernelFn, const KernelNaming& naming);
/// The model/cpu.h activity a row's time counts as (utilisation and service demand).
Activity kernel_fn_activity(KernelFn);

/// Per-host costs of the TCP/IPoIB path. ns of one core unless a unit says otherwise.
struct NetstackCosts {
  double send_call_ns = 0;       ///< netstack.send_call: per send(), beyond the copy
  double recv_call_ns = 0;       ///< netstack.recv_call: per recv(), beyond the copy
  double copy_call_ns = 0;       ///< netstack.copy_call: per __copy_user call
  double copy_bytes_per_ns = 1;  ///< netstack.copy_rate: __copy_user of data in the cache, B/ns
  double csum_call_ns = 0;       ///< netstack.csum_call: per do_csum call
  double csum_hot_bytes_per_ns = 1;   ///< netstack.csum_hot_rate: do_csum of data in the cache, B/ns
  double csum_cold_bytes_per_ns = 1;  ///< netstack.csum_cold_rate: do_csum of DMA-written data (its
                                      ///< first read misses every line), B/ns
  double tx_packet_ns = 0;       ///< netstack.tx_packet: TcpTransmit per packet
  double rx_packet_ns = 0;       ///< netstack.rx_packet: TcpReceive per packet, the IP input path
                                 ///< (netif_rx .. ip_local_deliver_finish), in softirq
  double rx_tcp_ns = 0;          ///< netstack.rx_tcp: TcpReceive per packet, TCP's input (tcp_v4_rcv's
                                 ///< socket part, tcp_rcv_established or tcp_ack), wherever TCP runs
  double ack_rx_ns = 0;          ///< netstack.ack_rx: TcpAck per ACK received
  double nf_hook_ns = 0;         ///< netstack.nf_hook: IptDoTable per hook passed
  double conntrack_ns = 0;       ///< netstack.conntrack: Conntrack per packet
  double ipoib_post_ns = 0;      ///< netstack.ipoib_post: IpoibXmit per packet
  double ipoib_cqe_ns = 0;       ///< netstack.ipoib_cqe: IpoibCompletion per CQE
  double interrupt_ns = 0;       ///< netstack.interrupt: Interrupt per interrupt
  double iommu_map_ns = 0;       ///< netstack.iommu_map: map + unmap of one page per I/O (ns/page);
                                 ///< 0 on a host without an IOMMU
  double iommu_page_bytes = 4096;  ///< netstack.iommu_page: the IOMMU's page, B
  double fmr_map_ns = 0;         ///< netstack.fmr_map: per I/O page with hca.fmr on (ns/page):
                                 ///< the mapping stays cached (see the platform file)
  double other_segment_ns = 0;   ///< netstack.other_segment: Other per data segment sent or received
  bool netfilter = false;        ///< host.netfilter: iptables + conntrack loaded
  bool fmr = false;              ///< hca.fmr: Fast Memory Registration (see iommu_map)
  bool csum_offload = false;     ///< hca.csum_offload: the HCA checksums IP/TCP (no do_csum)
  uint64_t wmem_max = 0;         ///< socket.wmem_max: net.core.wmem_max, B
  uint64_t rmem_max = 0;         ///< socket.rmem_max: net.core.rmem_max, B
  uint64_t tcp_wmem_max = 0;     ///< socket.tcp_wmem_max: net.ipv4.tcp_wmem[2], the send buffer's growth bound, B
  uint64_t tcp_rmem_max = 0;     ///< socket.tcp_rmem_max: net.ipv4.tcp_rmem[2], the receive buffer's growth bound, B
  bool moderate_rcvbuf = true;   ///< socket.tcp_moderate_rcvbuf: receive-buffer autotuning (DRS) on

  /// Reads [netstack] and the flags and limits above. Throws InputError naming the key.
  static NetstackCosts from_platform(const Platform&);

  /// ns of one do_csum call over `bytes`, cold (first touch of DMA-written data) or not.
  double csum_ns(uint64_t bytes, bool cold) const {
    return csum_call_ns + static_cast<double>(bytes) / (cold ? csum_cold_bytes_per_ns : csum_hot_bytes_per_ns);
  }
  /// ns of one __copy_user call of `bytes`.
  double copy_ns(uint64_t bytes) const { return copy_call_ns + static_cast<double>(bytes) / copy_bytes_per_ns; }
  /// IOMMU pages a buffer of `bytes` at a page-aligned start spans: ceil(bytes / page).
  uint64_t iommu_pages(uint64_t bytes) const;
  /// ns to map and unmap a `bytes` buffer for one I/O: pages x (fmr ? fmr_map : iommu_map).
  double dma_map_ns(uint64_t bytes) const {
    return static_cast<double>(iommu_pages(bytes)) * (fmr ? fmr_map_ns : iommu_map_ns);
  }
};

/// The smallest send and receive socket buffers Linux 2.6 grants, B (include/net/sock.h
/// SOCK_MIN_SNDBUF, SOCK_MIN_RCVBUF; later kernels raised the receive floor to 2048 + the
/// size of an sk_buff).
inline constexpr uint64_t kSockMinSndbuf = 2048;
inline constexpr uint64_t kSockMinRcvbuf = 256;

/// Linux's socket buffer for a SO_SNDBUF/SO_RCVBUF request: max(min(request, max) x 2, floor)
/// (net/core/sock.c sock_setsockopt doubles the value to account for skb overhead and keeps at
/// least `floor`, kSockMinSndbuf or kSockMinRcvbuf; getsockopt returns the result, which
/// netperf prints): -s 262144 with wmem_max 131071 gives 262142, the seed's "262142 262142";
/// -s 1 gives 2048. 0 (no request) returns `dflt` (the tcp_rmem/tcp_wmem default), kept at
/// least `floor` too: a platform's socket.tcp_rmem_default = 5 is a 256 B buffer, as -S 1 is.
uint64_t linux_socket_buffer(uint64_t request, uint64_t max, uint64_t dflt, uint64_t floor);

/// The receive window a Linux 2.6 socket can offer with `rcvbuf` bytes of buffer:
/// rcvbuf - rcvbuf / 2^tcp_adv_win_scale (tcp_win_from_space, tcp_adv_win_scale = 2 by
/// default: 3/4 of the buffer; the rest covers skb overhead).
uint64_t tcp_window_from_space(uint64_t rcvbuf, int adv_win_scale = 2);

// Linux 2.6's TCP buffer tuning (net/ipv4/tcp_input.c, tcp_output.c of 2.6.12; the defaults of
// net/ipv4/tcp.c: tcp_wmem = {4096, 16384, 131072}, tcp_rmem = {4096, 87380, 174760}). A socket
// whose buffer the application set (SO_SNDBUF / SO_RCVBUF: SOCK_SNDBUF_LOCK, SOCK_RCVBUF_LOCK)
// keeps it; an unlocked one is tuned by these rules.

/// Memory one full-sized skb of `mss` payload bytes charges against a socket buffer, B:
/// mss + MAX_TCP_HEADER + 16 + sizeof(struct sk_buff) (tcp_fixup_sndbuf's sndmem,
/// tcp_fixup_rcvbuf's rcvmem). MAX_TCP_HEADER is 128 + MAX_HEADER (32 on a kernel without
/// tunnels); struct sk_buff is about 200 B on a 64-bit 2.6 kernel, hence kTcpSkbOverhead.
inline constexpr uint64_t kTcpSkbOverhead = 128 + 32 + 16 + 200;
uint64_t tcp_skb_mem(uint32_t mss);

/// tcp_fixup_rcvbuf (at connection establishment, unlocked receive buffer): room for four
/// segments of `advmss` whose skbs fit the window (rcvmem grown by 128 B until
/// tcp_win_from_space(rcvmem) >= advmss), capped at tcp_rmem[2] = `rmem_max`: returns the larger
/// of `rcvbuf` and that, B.
uint64_t tcp_fixup_rcvbuf(uint64_t rcvbuf, uint32_t advmss, uint64_t rmem_max);

/// tcp_fixup_sndbuf (at connection establishment, unlocked send buffer): room for three
/// segments of `mss_clamp` (the peer's MSS), capped at tcp_wmem[2] = `wmem_max`: returns the
/// larger of `sndbuf` and that, B.
uint64_t tcp_fixup_sndbuf(uint64_t sndbuf, uint32_t mss_clamp, uint64_t wmem_max);

/// tcp_new_space's growth of an unlocked send buffer when an ACK frees room after the writer
/// ran out of it and fewer than `cwnd` segments are in flight: 2 x max(cwnd, tcp_reordering +
/// 1 = 4) skbs of `mss` (tcp_skb_mem), capped at `wmem_max`; returns the larger of `sndbuf` and
/// that, B.
uint64_t tcp_expand_sndbuf(uint64_t sndbuf, uint32_t mss, uint32_t cwnd, uint64_t wmem_max);

/// tcp_rcv_space_adjust's receive buffer for `space` bytes (twice what the reader copied in one
/// receiver RTT, at least the last measurement): whole skbs of `advmss` (at least one), each
/// charged as in tcp_fixup_rcvbuf, capped at `rmem_max`; returns the larger of `rcvbuf` and
/// that, B.
uint64_t tcp_drs_rcvbuf(uint64_t rcvbuf, uint64_t space, uint32_t advmss, uint64_t rmem_max);

/// The receive window a SYN-ACK offers (tcp_select_initial_window, 2.6.12): the window of
/// `rcvbuf` (tcp_full_space) quantised to whole segments of `mss` when it exceeds one, at most
/// 65535 (a SYN's window is not scaled, RFC 1323 2.2) and at most RFC 2414's initial window of
/// 2, 3 or 4 segments (mss > 4380, > 1460, else), B.
uint64_t tcp_initial_window(uint64_t rcvbuf, uint32_t mss);

/// tcp_sync_mss's "bound mss with half of window": the segment size a sender uses when the
/// largest window its peer has offered is `max_window` (0: none yet), B: `mss`, or
/// max(max_window / 2, 68 - `tcp_header_bytes`) when that is smaller.
uint32_t tcp_mss_for_window(uint32_t mss, uint64_t max_window, uint32_t tcp_header_bytes);

/// The initial congestion window of a 2.6 kernel (tcp_init_cwnd, RFC 3390): 2 segments above
/// 2190 B, 3 above 1095 B, else 4.
uint32_t tcp_initial_cwnd(uint32_t mss);

}  // namespace hcasim::model
