/// \file TCP/IPoIB CPU costs; the sources are in netstack.h and the platform files.
#include "model/netstack.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "model/platform.h"

namespace hcasim::model {

std::string_view kernel_fn_name(KernelFn f) {
  switch (f) {
    case KernelFn::TcpSendmsg: return "tcp_sendmsg";
    case KernelFn::TcpRecvmsg: return "tcp_recvmsg";
    case KernelFn::CopyUser: return "__copy_user";
    case KernelFn::DoCsum: return "do_csum";
    case KernelFn::TcpTransmit: return "tcp_transmit_skb";
    case KernelFn::TcpReceive: return "tcp_v4_rcv";
    case KernelFn::TcpAck: return "tcp_ack";
    case KernelFn::IptDoTable: return "ipt_do_table";
    case KernelFn::Conntrack: return "ip_conntrack_in";
    case KernelFn::IpoibXmit: return "ipoib_start_xmit";
    case KernelFn::IpoibCompletion: return "ipoib_ib_completion";
    case KernelFn::Interrupt: return "mthca_eq_int";
    case KernelFn::DmaMap: return "sba_map_single";
    case KernelFn::Schedule: return "schedule";
    case KernelFn::Other: return "(other)";
    case KernelFn::Count_: break;
  }
  return "?";
}

Activity kernel_fn_activity(KernelFn f) {
  switch (f) {
    case KernelFn::TcpSendmsg:
    case KernelFn::TcpRecvmsg: return Activity::Syscall;
    case KernelFn::CopyUser: return Activity::Copy;
    case KernelFn::DmaMap: return Activity::Pin;
    case KernelFn::IpoibXmit: return Activity::Post;
    case KernelFn::IpoibCompletion: return Activity::Completion;
    case KernelFn::Interrupt: return Activity::Interrupt;
    case KernelFn::Schedule: return Activity::Wakeup;
    // Protocol processing has no activity of its own in model/cpu.h: it is the stack's work
    // per packet, which the SDP engine books as completion handling.
    default: return Activity::Completion;
  }
}

NetstackCosts NetstackCosts::from_platform(const Platform& p) {
  NetstackCosts c;
  c.send_call_ns = p.num("netstack.send_call");
  c.recv_call_ns = p.num("netstack.recv_call");
  c.copy_call_ns = p.num("netstack.copy_call");
  c.copy_bytes_per_ns = p.num("netstack.copy_rate");
  c.csum_call_ns = p.num("netstack.csum_call");
  c.csum_hot_bytes_per_ns = p.num("netstack.csum_hot_rate");
  c.csum_cold_bytes_per_ns = p.num("netstack.csum_cold_rate");
  c.tx_packet_ns = p.num("netstack.tx_packet");
  c.rx_packet_ns = p.num("netstack.rx_packet");
  c.rx_tcp_ns = p.num("netstack.rx_tcp");
  c.ack_rx_ns = p.num("netstack.ack_rx");
  c.nf_hook_ns = p.num("netstack.nf_hook");
  c.conntrack_ns = p.num("netstack.conntrack");
  c.ipoib_post_ns = p.num("netstack.ipoib_post");
  c.ipoib_cqe_ns = p.num("netstack.ipoib_cqe");
  c.interrupt_ns = p.num("netstack.interrupt");
  c.iommu_map_ns = p.num("netstack.iommu_map");
  c.iommu_page_bytes = p.num("netstack.iommu_page");
  c.fmr_map_ns = p.num("netstack.fmr_map");
  c.other_segment_ns = p.num("netstack.other_segment");
  c.netfilter = p.flag("host.netfilter");
  c.fmr = p.flag("hca.fmr");
  c.csum_offload = p.flag("hca.csum_offload");
  c.wmem_max = p.u32("socket.wmem_max");
  c.rmem_max = p.u32("socket.rmem_max");
  return c;
}

uint64_t NetstackCosts::iommu_pages(uint64_t bytes) const {
  const auto page = static_cast<uint64_t>(iommu_page_bytes);
  return bytes == 0 ? 0 : (bytes + page - 1) / page;
}

uint64_t linux_socket_buffer(uint64_t request, uint64_t max, uint64_t dflt, uint64_t floor) {
  if (request == 0) return std::max(dflt, floor);
  return std::max(std::min(request, max) * 2, floor);
}

uint64_t tcp_window_from_space(uint64_t rcvbuf, int adv_win_scale) {
  if (adv_win_scale <= 0) return rcvbuf >> -adv_win_scale;
  return rcvbuf - (rcvbuf >> adv_win_scale);
}

}  // namespace hcasim::model

namespace hcasim::model::schema {
namespace {
using namespace decl;
constexpr ParamSpec kNetstack[] = {
    nonneg("netstack.send_call", "ns", "entry and per-call work of send() on a TCP socket", ParamWhen::Ipoib),
    nonneg("netstack.recv_call", "ns", "entry and per-call work of recv() on a TCP socket", ParamWhen::Ipoib),
    nonneg("netstack.copy_call", "ns", "setup and tail of one copy to or from user space", ParamWhen::Ipoib),
    positive("netstack.copy_rate", "B/ns",
             "copy_to_user of data the checksum has just read (cache-hot)", ParamWhen::Ipoib),
    nonneg("netstack.csum_call", "ns", "setup and tail of one csum_partial", ParamWhen::Ipoib),
    positive("netstack.csum_hot_rate", "B/ns", "checksumming data in the cache", ParamWhen::Ipoib),
    positive("netstack.csum_cold_rate", "B/ns", "checksumming DMA-written data on its first read (from memory)",
             ParamWhen::Ipoib),
    nonneg("netstack.tx_packet", "ns", "IP and TCP output work per sent segment", ParamWhen::Ipoib),
    nonneg("netstack.rx_packet", "ns", "IP input work per received packet", ParamWhen::Ipoib),
    nonneg("netstack.rx_tcp", "ns", "TCP input work per received data segment", ParamWhen::Ipoib),
    nonneg("netstack.ack_rx", "ns", "receiving and processing one pure ACK at the sender", ParamWhen::Ipoib),
    nonneg("netstack.nf_hook", "ns", "netfilter hooks per packet; only with host.netfilter on", ParamWhen::Ipoib),
    nonneg("netstack.conntrack", "ns", "connection tracking per packet; only with host.netfilter on", ParamWhen::Ipoib),
    nonneg("netstack.ipoib_post", "ns", "ipoib_send: building the UD WQE and ringing the doorbell", ParamWhen::Ipoib),
    nonneg("netstack.ipoib_cqe", "ns", "IPoIB's handling of one CQE (and the receive repost)", ParamWhen::Ipoib),
    nonneg("netstack.interrupt", "ns", "the HCA's interrupt on the IPoIB path (entry, EQ, completion handler, exit)",
           ParamWhen::Ipoib),
    nonneg("netstack.iommu_map", "ns/page", "mapping one IOMMU page (the whole map/unmap pair) with host.iommu on",
           ParamWhen::Ipoib),
    power_of_two("netstack.iommu_page", "B", 512, 1073741824,
                 "IOMMU page: the unit of mapping (512 B, the smallest MMU page, .. 1 GiB, the largest x86 page)",
                 ParamWhen::Ipoib),
    nonneg("netstack.fmr_map", "ns/page",
           "mapping one page through an FMR instead (with hca.fmr on)", ParamWhen::Ipoib),
    nonneg("netstack.other_segment", "ns", "per-segment work outside the rest (timers, socket accounting)",
           ParamWhen::Ipoib),
    flag("host.netfilter", "iptables rules and connection tracking on the IPoIB path (netstack.nf_hook, conntrack)",
         ParamWhen::Ipoib),
    flag("hca.fmr", "the IPoIB path maps memory with FMRs (netstack.fmr_map) rather than the IOMMU", ParamWhen::Ipoib),
    flag("hca.csum_offload", "the HCA computes the IP checksums (ConnectX datagram mode)", ParamWhen::Ipoib),
    integer("socket.tcp_rmem_default", "B", 1, 1073741824,
            "receive buffer without -S (net.ipv4.tcp_rmem[1]); 1 GiB: the bound of the socket sizes, which Linux "
            "doubles into 32 bits"),
    integer("socket.tcp_wmem_default", "B", 1, 1073741824, "send buffer without -s (net.ipv4.tcp_wmem[1])"),
    integer("socket.wmem_max", "B", 1, 1073741824, "largest -s request (net.core.wmem_max); Linux grants twice it"),
    integer("socket.rmem_max", "B", 1, 1073741824, "largest -S request (net.core.rmem_max); Linux grants twice it"),
};
}  // namespace
std::span<const ParamSpec> netstack() { return kNetstack; }
}  // namespace hcasim::model::schema
