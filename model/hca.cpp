#include "model/hca.h"

#include <fmt/format.h>

namespace hcasim::model {

namespace {
double nonneg(const Platform& p, const std::string& key) {
  const double v = p.num(key, "ns");
  if (!(v >= 0)) throw InputError(fmt::format("platform {}: {} = {} ns must be >= 0", p.name(), key, v));
  return v;
}
}  // namespace

HcaTiming HcaTiming::from_platform(const Platform& p) {
  HcaTiming t;
  t.mmio_write_ns = nonneg(p, "pcie.mmio_write_latency");
  t.dma_read_rtt_ns = nonneg(p, "pcie.dma_read_rtt");
  t.posted_write_ns = nonneg(p, "pcie.posted_write_latency");
  t.tx_processing_ns = nonneg(p, "hca.tx_processing");
  t.rx_processing_ns = nonneg(p, "hca.rx_processing");
  t.interrupt_latency_ns = nonneg(p, "hca.interrupt_latency");
  t.propagation_ns = nonneg(p, "ib.propagation");
  return t;
}

double receive_completion_latency_ns(const HcaTiming& rq, const HcaTiming& rs) {
  return rq.dma_read_rtt_ns + rq.tx_processing_ns + rq.propagation_ns + rs.rx_processing_ns + rs.posted_write_ns;
}

double send_completion_latency_ns(const HcaTiming& rq, const HcaTiming& rs) {
  return rq.dma_read_rtt_ns + rq.tx_processing_ns + 2 * rq.propagation_ns + rs.rx_processing_ns +
         rq.rx_processing_ns + rq.posted_write_ns;
}

double idle_doorbell_latency_ns(const HcaTiming& t) { return t.mmio_write_ns + t.dma_read_rtt_ns; }

}  // namespace hcasim::model
