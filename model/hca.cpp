#include "model/hca.h"

#include <algorithm>

#include <fmt/format.h>

namespace hcasim::model {

HcaTiming HcaTiming::from_platform(const Platform& p) {
  HcaTiming t;
  // > 0: the read latency bounds the DMA reads in flight (HostBus::dma_read_latency_bound_gbps).
  t.dma_read_rtt_ns = p.num(HostBus::latency_key(p, HostBus::Latency::DmaRead));
  t.posted_write_ns = p.num(HostBus::latency_key(p, HostBus::Latency::PostedWrite));
  t.tx_processing_ns = p.num("hca.tx_processing");
  t.rx_processing_ns = p.num("hca.rx_processing");
  t.interrupt_latency_ns = p.num("hca.interrupt_latency");
  t.propagation_ns = p.num("ib.propagation");
  t.inline_copy_rate_Bpns = p.num("hca.inline_copy_rate");
  t.atomic_ns = p.num("hca.atomic");
  t.qp_wqe_ns = p.num("hca.qp_wqe_time");
  t.tx_packet_ns = p.num("hca.tx_packet_time");
  t.rx_packet_ns = p.num("hca.rx_packet_time");
  return t;
}

double payload_fetch_ns(const HcaTiming& rq, bool inline_data, uint64_t bytes) {
  return inline_data ? static_cast<double>(bytes) / rq.inline_copy_rate_Bpns : rq.dma_read_rtt_ns;
}

double receive_completion_latency_ns(const HcaTiming& rq, const HcaTiming& rs, bool inline_data, uint64_t bytes) {
  return payload_fetch_ns(rq, inline_data, bytes) + rq.tx_processing_ns + rq.propagation_ns + rs.rx_processing_ns +
         rs.posted_write_ns;
}

double send_completion_latency_ns(const HcaTiming& rq, const HcaTiming& rs, bool inline_data, uint64_t bytes) {
  return payload_fetch_ns(rq, inline_data, bytes) + rq.tx_processing_ns + 2 * rq.propagation_ns +
         rs.rx_processing_ns + rq.rx_processing_ns + rq.posted_write_ns;
}

double receive_store_ns(uint64_t bytes, uint32_t mtu, double wire_Bps, double drain_Bps) {
  if (bytes == 0 || mtu == 0) return 0;
  if (wire_Bps <= drain_Bps) {
    const uint64_t last = bytes - (bytes - 1) / mtu * mtu;  // 1..mtu
    return static_cast<double>(last) / drain_Bps * 1e9;
  }
  return static_cast<double>(std::min<uint64_t>(bytes, mtu)) / wire_Bps * 1e9;
}

std::optional<HcaDriver> hca_driver(std::string_view device) {
  const auto numbered = [&](std::string_view prefix) {
    return device.size() > prefix.size() && device.substr(0, prefix.size()) == prefix &&
           device.substr(prefix.size()).find_first_not_of("0123456789") == std::string_view::npos;
  };
  if (numbered("mthca")) return HcaDriver::Mthca;
  if (numbered("mlx4_")) return HcaDriver::Mlx4;
  return std::nullopt;
}

PostConfig PostConfig::from_platform(const Platform& p, const HostBus& bus, double dma_read_rtt_ns) {
  PostConfig c;
  c.mmio = mmio::Config::from_platform(p);
  c.bus = bus;
  c.dma_read_rtt_ns = dma_read_rtt_ns;
  c.device = p.str("hca.device");
  if (c.device.empty()) p.fail("hca.device", "empty: the verbs device name, such as mlx4_0 or mthca0");
  c.blueflame = p.flag("hca.blueflame");
  if (c.blueflame && bus.is_pcix())
    p.fail("hca.blueflame", fmt::format("BlueFlame needs a PCIe slot; this HCA sits on {}", bus.describe()));
  if (c.blueflame && hca_driver(c.device) == HcaDriver::Mthca)
    p.fail("hca.blueflame",
           fmt::format("BlueFlame needs a ConnectX HCA (mlx4 or later); {} is an InfiniHost (ib_mthca)", c.device));
  c.bf_buf_size = p.u32("hca.bf_buf_size");
  return c;
}

namespace {
/// Bus time of a doorbell's WQE read: whole 64 B basic blocks.
double wqe_fetch_bus_ns(const HostBus& bus, uint32_t wqe_bytes) {
  const uint64_t blocks = (wqe_bytes + mlx4::kWqeBasicBlock - 1) / mlx4::kWqeBasicBlock;
  return bus.dma_read_ns(blocks * mlx4::kWqeBasicBlock);
}
}  // namespace

double wqe_fetch_ns(const HostBus& bus, double rtt_ns, uint32_t wqe_bytes) {
  return rtt_ns + wqe_fetch_bus_ns(bus, wqe_bytes);
}

MessageWire message_wire(const HostBus& tx, const ib::Config& ib, const HostBus& rx, const PostTiming& post,
                         bool inline_data, uint64_t bytes, bool send, bool with_post) {
  constexpr uint32_t kCqeBytes = 32;  // mlx4 CQE (struct mlx4_cqe)
  MessageWire w;
  if (with_post) {
    w.tx_bus_ns = post.mmio.bus_ns;
    if (!post.blueflame) w.tx_bus_ns += wqe_fetch_bus_ns(tx, post.wqe_bytes);
  }
  if (!inline_data) w.tx_bus_ns += tx.dma_read_ns(bytes);
  w.ib = send ? ib::send_wire_bytes(ib, bytes) : ib::rdma_write_wire_bytes(ib, bytes);
  w.rx_bus_ns = rx.dma_write_ns(bytes);
  if (send) w.rx_bus_ns += rx.dma_write_ns(kCqeBytes);
  return w;
}

double message_link_time_ns(const ib::Config& ib, const MessageWire& w) {
  const double wire = static_cast<double>(w.ib) * 8.0 / ib::data_rate_gbps(ib);
  return std::max({w.tx_bus_ns, wire, w.rx_bus_ns});
}

PostTiming post_timing(const PostConfig& cfg, const mlx4::WqeShape& w) {
  PostTiming t;
  t.wqe_bytes = mlx4::wqe_bytes(w);
  t.blueflame = cfg.blueflame && mlx4::blueflame_eligible(1, w, cfg.bf_buf_size);
  if (t.blueflame) {
    t.mmio = mmio::copy_to_device(cfg.mmio, cfg.bus.pcie, mlx4::blueflame_copy_bytes(w), t.wqe_bytes,
                                  mlx4::kMmioStoreBytes);
    t.wqe_at_hca_ns = t.mmio.ready_ns;
  } else {
    t.mmio = mmio::doorbell(cfg.mmio, cfg.bus);
    t.wqe_at_hca_ns = t.mmio.ready_ns + wqe_fetch_ns(cfg.bus, cfg.dma_read_rtt_ns, t.wqe_bytes);
  }
  t.cpu_ns = t.mmio.cpu_ns;
  return t;
}

}  // namespace hcasim::model

namespace hcasim::model::schema {
namespace {
using namespace decl;
/// A pipeline stage's time per job (hca/stage.h), ns, 0..100000.
constexpr ParamSpec stage_time(std::string_view key, std::string_view doc) {
  ParamSpec s = nonneg(key, "ns", doc);
  s.hi = 1e5;
  return s;
}
constexpr ParamSpec kHca[] = {
    text("hca.device",
         "verbs device name (mlx4_0, mthca0), the driver's: mthca has no BlueFlame; perftest prints it; the IPoIB "
         "profile names the driver's interrupt handler (mlx4_eq_int, mthca_eq_int)"),
    flag("hca.blueflame", "posts write the WQE through the BlueFlame page (ConnectX on PCIe only)"),
    {.key = "hca.bf_buf_size", .unit = "B", .type = ParamType::Integer, .lo = 64, .hi = 4096, .step = 64,
     .doc = "BlueFlame buffer: the largest WQE a post writes through it (whole 64 B WQE basic blocks)"},
    nonneg("hca.tx_processing", "ns", "the HCA's work from a WQE to its first packet on the wire (pipelined)"),
    nonneg("hca.rx_processing", "ns", "the HCA's work from a packet to its scatter (pipelined)"),
    // A stage's time per job up to 100 us: 250 times the slowest modelled HCA's (InfiniHost's
    // 400 ns per WQE). Slower units would stretch a run past its simulated-time watchdog.
    stage_time("hca.qp_wqe_time",
               "one WQE through the processing unit that owns its QP, one at a time: a single QP's message rate is "
               "at most 1 / this (0: no bound)"),
    stage_time("hca.tx_packet_time",
               "one packet through the port's transmit scheduler, all QPs: the port's packet rate (0: no bound)"),
    stage_time("hca.rx_packet_time",
               "one packet through the port's receive processing (checks, receive WQE, scatter, CQE): the port's "
               "inbound packet rate (0: no bound)"),
    nonneg("hca.interrupt_latency", "ns", "CQE written to the interrupt handler's entry (EQE, MSI-X)"),
    positive("hca.inline_copy_rate", "B/ns", "the HCA taking inline data out of the WQE"),
    integer("hca.max_outstanding_reads", "", 1, 256,
            "DMA reads in flight (PCIe tags: 32 without, 256 with extended tags, PCIe 2.2.6.2)", ParamWhen::Pcie),
    integer("hca.max_inline_data", "B", 0, 4096, "largest inline send (perftest -I); 4096: above any HCA's WQE"),
    integer("hca.max_msg_size", "B", 1, 2147483648.0,
            "largest message (device cap max_msg_sz; 2^31: the IBA message size limit)"),
    integer("hca.max_qp_rd_atom", "", 1, 255,
            "RDMA READs and atomics outstanding per QP (device cap max_qp_rd_atom; perftest's default -o); 255: "
            "the 8-bit verbs attribute"),
    nonneg("hca.atomic", "ns",
           "the responder's atomic unit per atomic, one at a time (lock, ALU, write back), besides the operand's "
           "DMA read"),
    integer("hca.max_qp_wr", "", 1, 65536,
            "largest QP depth (device cap max_qp_wr); 65536: above any modelled HCA's (ConnectX 16351)"),
    integer("hca.cq_entries", "", 1, 4194304,
            "SDP's CQ depth; >= sdp.tx_ring + sdp.rx_ring; 4194304 = 2^22, the order of mlx4's largest CQ"),
};
}  // namespace
std::span<const ParamSpec> hca() { return kHca; }
}  // namespace hcasim::model::schema
