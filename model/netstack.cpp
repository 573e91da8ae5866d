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
  c.send_call_ns = p.nonneg("netstack.send_call", "ns");
  c.recv_call_ns = p.nonneg("netstack.recv_call", "ns");
  c.copy_call_ns = p.nonneg("netstack.copy_call", "ns");
  c.copy_bytes_per_ns = p.positive("netstack.copy_rate", "B/ns");
  c.csum_call_ns = p.nonneg("netstack.csum_call", "ns");
  c.csum_hot_bytes_per_ns = p.positive("netstack.csum_hot_rate", "B/ns");
  c.csum_cold_bytes_per_ns = p.positive("netstack.csum_cold_rate", "B/ns");
  c.tx_packet_ns = p.nonneg("netstack.tx_packet", "ns");
  c.rx_packet_ns = p.nonneg("netstack.rx_packet", "ns");
  c.rx_tcp_ns = p.nonneg("netstack.rx_tcp", "ns");
  c.ack_rx_ns = p.nonneg("netstack.ack_rx", "ns");
  c.nf_hook_ns = p.nonneg("netstack.nf_hook", "ns");
  c.conntrack_ns = p.nonneg("netstack.conntrack", "ns");
  c.ipoib_post_ns = p.nonneg("netstack.ipoib_post", "ns");
  c.ipoib_cqe_ns = p.nonneg("netstack.ipoib_cqe", "ns");
  c.interrupt_ns = p.nonneg("netstack.interrupt", "ns");
  c.iommu_map_ns = p.nonneg("netstack.iommu_map", "ns/page");
  c.iommu_page_bytes = p.positive("netstack.iommu_page", "B");
  const auto page = static_cast<uint64_t>(c.iommu_page_bytes);
  if (c.iommu_page_bytes < 512 || c.iommu_page_bytes > (1 << 30) || c.iommu_page_bytes != static_cast<double>(page) ||
      (page & (page - 1)) != 0)
    p.fail("netstack.iommu_page", fmt::format("{} B is not a power of two in 512..2^30", c.iommu_page_bytes));
  c.fmr_map_ns = p.nonneg("netstack.fmr_map", "ns/page");
  c.other_segment_ns = p.nonneg("netstack.other_segment", "ns");
  c.netfilter = p.flag("host.netfilter");
  c.fmr = p.flag("hca.fmr");
  c.csum_offload = p.flag("hca.csum_offload");
  const double wmax = p.positive("socket.wmem_max", "B"), rmax = p.positive("socket.rmem_max", "B");
  if (wmax > (1u << 30) || wmax != std::floor(wmax)) p.fail("socket.wmem_max", "must be a whole number of bytes up to 1 GiB");
  if (rmax > (1u << 30) || rmax != std::floor(rmax)) p.fail("socket.rmem_max", "must be a whole number of bytes up to 1 GiB");
  c.wmem_max = static_cast<uint64_t>(wmax);
  c.rmem_max = static_cast<uint64_t>(rmax);
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
