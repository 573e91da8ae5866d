#include "model/hca.h"

#include <algorithm>

#include <fmt/format.h>

namespace hcasim::model {

HcaTiming HcaTiming::from_platform(const Platform& p) {
  HcaTiming t;
  t.dma_read_rtt_ns = p.nonneg("pcie.dma_read_rtt", "ns");
  t.posted_write_ns = p.nonneg("pcie.posted_write_latency", "ns");
  t.tx_processing_ns = p.nonneg("hca.tx_processing", "ns");
  t.rx_processing_ns = p.nonneg("hca.rx_processing", "ns");
  t.interrupt_latency_ns = p.nonneg("hca.interrupt_latency", "ns");
  t.propagation_ns = p.nonneg("ib.propagation", "ns");
  t.inline_copy_rate_Bpns = p.positive("hca.inline_copy_rate", "B/ns");
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

PostConfig PostConfig::from_platform(const Platform& p, const pcie::Config& pcie, double dma_read_rtt_ns) {
  PostConfig c;
  c.mmio = mmio::Config::from_platform(p);
  c.pcie = pcie;
  c.dma_read_rtt_ns = dma_read_rtt_ns;
  c.blueflame = p.flag("hca.blueflame");
  const int64_t bf = p.integer("hca.bf_buf_size", "B");
  if (bf < 64 || bf > 4096 || bf % 64 != 0)
    p.fail("hca.bf_buf_size", fmt::format("{} B is not a multiple of 64 in 64..4096", bf));
  c.bf_buf_size = static_cast<uint32_t>(bf);
  return c;
}

namespace {
/// The CplDs of a doorbell's WQE read: whole 64 B basic blocks.
uint64_t wqe_fetch_wire_bytes(const pcie::Config& link, uint32_t wqe_bytes) {
  const uint64_t blocks = (wqe_bytes + mlx4::kWqeBasicBlock - 1) / mlx4::kWqeBasicBlock;
  return pcie::dma_read(link, 0, blocks * mlx4::kWqeBasicBlock).completions.wire_bytes;
}
}  // namespace

double wqe_fetch_ns(const pcie::Config& link, double rtt_ns, uint32_t wqe_bytes) {
  return rtt_ns + mmio::link_ns(link, wqe_fetch_wire_bytes(link, wqe_bytes));
}

MessageWire message_wire(const pcie::Config& tx, const ib::Config& ib, const pcie::Config& rx, const PostTiming& post,
                         bool inline_data, uint64_t bytes, bool send, bool with_post) {
  constexpr uint32_t kCqeBytes = 32;  // mlx4 CQE (struct mlx4_cqe)
  MessageWire w;
  if (with_post) {
    w.tx_h2d = post.mmio.wire_bytes;
    if (!post.blueflame) w.tx_h2d += wqe_fetch_wire_bytes(tx, post.wqe_bytes);
  }
  if (!inline_data) w.tx_h2d += pcie::dma_read(tx, 0, bytes).completions.wire_bytes;
  w.ib = send ? ib::send_wire_bytes(ib, bytes) : ib::rdma_write_wire_bytes(ib, bytes);
  w.rx_d2h = pcie::dma_write(rx, 0, bytes).wire_bytes;
  if (send) w.rx_d2h += pcie::tlp_wire_bytes(pcie::TlpType::MWr, kCqeBytes, rx);
  return w;
}

double message_link_time_ns(const pcie::Config& tx, const ib::Config& ib, const pcie::Config& rx, const MessageWire& w) {
  const double h2d = mmio::link_ns(tx, w.tx_h2d);
  const double wire = static_cast<double>(w.ib) * 8.0 / ib::data_rate_gbps(ib);
  const double d2h = mmio::link_ns(rx, w.rx_d2h);
  return std::max({h2d, wire, d2h});
}

PostTiming post_timing(const PostConfig& cfg, const mlx4::WqeShape& w) {
  PostTiming t;
  t.wqe_bytes = mlx4::wqe_bytes(w);
  t.blueflame = cfg.blueflame && mlx4::blueflame_eligible(1, w, cfg.bf_buf_size);
  if (t.blueflame) {
    t.mmio = mmio::copy_to_device(cfg.mmio, cfg.pcie, mlx4::blueflame_copy_bytes(w), t.wqe_bytes, mlx4::kMmioStoreBytes);
    t.wqe_at_hca_ns = t.mmio.ready_ns;
  } else {
    t.mmio = mmio::doorbell(cfg.mmio, cfg.pcie);
    t.wqe_at_hca_ns = t.mmio.ready_ns + wqe_fetch_ns(cfg.pcie, cfg.dma_read_rtt_ns, t.wqe_bytes);
  }
  t.cpu_ns = t.mmio.cpu_ns;
  return t;
}

}  // namespace hcasim::model
