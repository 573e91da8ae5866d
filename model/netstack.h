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
/// arch/ia64/lib/do_csum.S, arch/ia64/hp/common/sba_iommu.c.
#include <array>
#include <cstdint>
#include <string_view>

#include "model/cpu.h"

namespace hcasim::model {

class Platform;

/// The rows of an IPoIB run's profile: kernel functions, or groups named after the function
/// that dominates them in seed 003's profile (the doc of each says what it stands for).
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
  Interrupt,         ///< "mthca_eq_int": one interrupt (entry, handle_IRQ_event, EQ, exit)
  DmaMap,            ///< "sba_map_single": map + unmap of one buffer page through the IOMMU
  Schedule,          ///< "schedule": waking a blocked thread and switching to it
  Other,             ///< "(other)": the remaining per-segment work the profiles do not list
  Count_
};
inline constexpr std::size_t kKernelFnCount = static_cast<std::size_t>(KernelFn::Count_);

/// The profile name of a row ("do_csum", "ipt_do_table", ...).
std::string_view kernel_fn_name(KernelFn);
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

}  // namespace hcasim::model
