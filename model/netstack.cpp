/// \file TCP/IPoIB CPU costs; the sources are in netstack.h and the platform files.
#include "model/netstack.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include <fmt/format.h>

#include "model/platform.h"

namespace hcasim::model {

KernelNaming KernelNaming::from_platform(const Platform& p) {
  KernelNaming n;
  n.driver = hca_driver(p.str("hca.device"));
  n.iommu = p.flag("host.iommu");
  return n;
}

std::string_view kernel_fn_name(KernelFn f, const KernelNaming& naming) {
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
    // The EQ handler each driver's interrupt handlers call: drivers/infiniband/hw/mthca/
    // mthca_eq.c mthca_eq_int (from mthca_tavor_interrupt, mthca_arbel_interrupt and their MSI-X
    // variants); drivers/net/mlx4/eq.c mlx4_eq_int (Linux 2.6.25, from mlx4_interrupt and
    // mlx4_msi_x_interrupt). Another driver's is unknown here: the row is then the kernel's
    // handle_IRQ_event (kernel/irq/handle.c), which calls every driver's handler.
    case KernelFn::Interrupt:
      if (!naming.driver) return "handle_IRQ_event";
      return *naming.driver == HcaDriver::Mlx4 ? "mlx4_eq_int" : "mthca_eq_int";
    // What dma_map_single calls: the zx1's sba_map_single (arch/ia64/hp/common/sba_iommu.c), or
    // without an IOMMU x86_64's nommu_map_single, a translation (arch/x86_64/kernel/pci-nommu.c,
    // the map_single of dma_ops from Linux 2.6.16; arch/x86/kernel/ after the x86 merge).
    case KernelFn::DmaMap: return naming.iommu ? "sba_map_single" : "nommu_map_single";
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
  c.tcp_wmem_max = p.u32("socket.tcp_wmem_max");
  c.tcp_rmem_max = p.u32("socket.tcp_rmem_max");
  c.moderate_rcvbuf = p.flag("socket.tcp_moderate_rcvbuf");
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

uint64_t tcp_skb_mem(uint32_t mss) { return mss + kTcpSkbOverhead; }

namespace {
/// tcp_fixup_rcvbuf's and tcp_rcv_space_adjust's rcvmem: one skb, grown by 128 B until the
/// window it gives holds a segment.
uint64_t rcvmem(uint32_t advmss) {
  uint64_t m = tcp_skb_mem(advmss);
  while (tcp_window_from_space(m) < advmss) m += 128;
  return m;
}
}  // namespace

uint64_t tcp_fixup_rcvbuf(uint64_t rcvbuf, uint32_t advmss, uint64_t rmem_max) {
  const uint64_t want = 4 * rcvmem(advmss);
  return rcvbuf < want ? std::max(rcvbuf, std::min(want, rmem_max)) : rcvbuf;
}

uint64_t tcp_fixup_sndbuf(uint64_t sndbuf, uint32_t mss_clamp, uint64_t wmem_max) {
  const uint64_t want = 3 * tcp_skb_mem(mss_clamp);
  return sndbuf < want ? std::max(sndbuf, std::min(want, wmem_max)) : sndbuf;
}

uint64_t tcp_expand_sndbuf(uint64_t sndbuf, uint32_t mss, uint32_t cwnd, uint64_t wmem_max) {
  constexpr uint32_t kReordering = 3;  // sysctl_tcp_reordering (TCP_FASTRETRANS_THRESH)
  const uint64_t want = tcp_skb_mem(mss) * 2 * std::max(cwnd, kReordering + 1);
  return want > sndbuf ? std::max(sndbuf, std::min(want, wmem_max)) : sndbuf;
}

uint64_t tcp_drs_rcvbuf(uint64_t rcvbuf, uint64_t space, uint32_t advmss, uint64_t rmem_max) {
  const uint64_t skbs = std::max<uint64_t>(space / advmss, 1);
  const uint64_t want = std::min(skbs * rcvmem(advmss), rmem_max);
  return std::max(rcvbuf, want);
}

uint64_t tcp_initial_window(uint64_t rcvbuf, uint32_t mss) {
  uint64_t space = tcp_window_from_space(rcvbuf);
  if (space > mss) space = space / mss * mss;
  const uint64_t init_cwnd = mss > 1460 * 3 ? 2 : mss > 1460 ? 3 : 4;
  return std::min({space, uint64_t{65535}, init_cwnd * mss});
}

uint32_t tcp_mss_for_window(uint32_t mss, uint64_t max_window, uint32_t tcp_header_bytes) {
  if (max_window == 0 || mss <= max_window / 2) return mss;
  const uint64_t floor = tcp_header_bytes < 68 ? 68 - tcp_header_bytes : 1;
  return static_cast<uint32_t>(std::max(max_window / 2, floor));
}

uint32_t tcp_initial_cwnd(uint32_t mss) { return mss > 2190 ? 2 : mss > 1095 ? 3 : 4; }

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
    integer("socket.tcp_wmem_max", "B", 1, 1073741824,
            "bound of an unset send buffer's growth (net.ipv4.tcp_wmem[2]: tcp_fixup_sndbuf, tcp_new_space)",
            ParamWhen::Ipoib),
    integer("socket.tcp_rmem_max", "B", 1, 1073741824,
            "bound of an unset receive buffer's growth (net.ipv4.tcp_rmem[2]: tcp_fixup_rcvbuf, tcp_rcv_space_adjust)",
            ParamWhen::Ipoib),
    flag("socket.tcp_moderate_rcvbuf", "receive-buffer autotuning of unset buffers (net.ipv4.tcp_moderate_rcvbuf)",
         ParamWhen::Ipoib),
};
}  // namespace
std::span<const ParamSpec> netstack() { return kNetstack; }
}  // namespace hcasim::model::schema
