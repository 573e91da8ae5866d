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
  c.send_call_ns = p.cost_ns("netstack.send_call");
  c.recv_call_ns = p.cost_ns("netstack.recv_call");
  c.copy_call_ns = p.cost_ns("netstack.copy_call");
  c.copy_bytes_per_ns = p.rate_per_ns("netstack.copy_rate");
  c.csum_call_ns = p.cost_ns("netstack.csum_call");
  c.csum_hot_bytes_per_ns = p.rate_per_ns("netstack.csum_hot_rate");
  c.csum_cold_bytes_per_ns = p.rate_per_ns("netstack.csum_cold_rate");
  c.tx_packet_ns = p.cost_ns("netstack.tx_packet");
  c.rx_packet_ns = p.cost_ns("netstack.rx_packet");
  c.rx_tcp_ns = p.cost_ns("netstack.rx_tcp");
  c.ack_rx_ns = p.cost_ns("netstack.ack_rx");
  c.nf_hook_ns = p.cost_ns("netstack.nf_hook");
  c.conntrack_ns = p.cost_ns("netstack.conntrack");
  c.ipoib_post_ns = p.cost_ns("netstack.ipoib_post");
  c.ipoib_cqe_ns = p.cost_ns("netstack.ipoib_cqe");
  c.interrupt_ns = p.cost_ns("netstack.interrupt");
  c.iommu_map_ns = p.cost_ns("netstack.iommu_map");
  c.iommu_page_bytes = p.num("netstack.iommu_page");
  c.fmr_map_ns = p.cost_ns("netstack.fmr_map");
  c.other_segment_ns = p.cost_ns("netstack.other_segment");
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
    work("netstack.send_call", "cycles", "entry and per-call work of send() on a TCP socket", ParamWhen::Ipoib),
    work("netstack.recv_call", "cycles", "entry and per-call work of recv() on a TCP socket", ParamWhen::Ipoib),
    work("netstack.copy_call", "cycles", "setup and tail of one copy to or from user space", ParamWhen::Ipoib),
    work("netstack.copy_rate", "B/cycle",
         "copy_to_user of data the checksum has just read (cache-hot)", ParamWhen::Ipoib),
    work("netstack.csum_call", "cycles", "setup and tail of one csum_partial", ParamWhen::Ipoib),
    work("netstack.csum_hot_rate", "B/cycle", "checksumming data in the cache", ParamWhen::Ipoib),
    stall("netstack.csum_cold_rate", "B/ns", "checksumming DMA-written data on its first read (from memory)",
             ParamWhen::Ipoib),
    work("netstack.tx_packet", "cycles", "IP and TCP output work per sent segment", ParamWhen::Ipoib),
    work("netstack.rx_packet", "cycles", "IP input work per received packet", ParamWhen::Ipoib),
    work("netstack.rx_tcp", "cycles", "TCP input work per received data segment", ParamWhen::Ipoib),
    work("netstack.ack_rx", "cycles", "receiving and processing one pure ACK at the sender", ParamWhen::Ipoib),
    work("netstack.nf_hook", "cycles", "netfilter hooks per packet; only with host.netfilter on", ParamWhen::Ipoib),
    work("netstack.conntrack", "cycles", "connection tracking per packet; only with host.netfilter on", ParamWhen::Ipoib),
    work("netstack.ipoib_post", "cycles", "ipoib_send: building the WQE, without the doorbell store (cpu.uc_store)",
         ParamWhen::Ipoib),
    work("netstack.ipoib_cqe", "cycles", "IPoIB's handling of one CQE (and the receive repost)", ParamWhen::Ipoib),
    work("netstack.interrupt", "cycles", "the HCA's interrupt on the IPoIB path (entry, EQ, completion handler, exit)",
           ParamWhen::Ipoib),
    stall("netstack.iommu_map", "ns/page",
          "mapping one IOMMU page (the whole map/unmap pair) with host.iommu on: the unmap's purge is an MMIO "
          "write and a flushing read (Linux arch/ia64/hp/common/sba_iommu.c sba_mark_invalid)",
          ParamWhen::Ipoib),
    power_of_two("netstack.iommu_page", "B", 512, 1073741824,
                 "IOMMU page: the unit of mapping (512 B, the smallest MMU page, .. 1 GiB, the largest x86 page)",
                 ParamWhen::Ipoib),
    stall("netstack.fmr_map", "ns/page",
          "mapping one page through an FMR instead (with hca.fmr on): MTT writes into the HCA's memory by MMIO "
          "(Linux drivers/infiniband/hw/mthca/mthca_mr.c mthca_tavor_map_phys_fmr)",
          ParamWhen::Ipoib),
    work("netstack.other_segment", "cycles", "per-segment work outside the rest (timers, socket accounting)",
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
