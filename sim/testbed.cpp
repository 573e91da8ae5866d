#include "sim/testbed.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <tuple>

#include "sim/ipoib_sim.h"

namespace hcasim::sim {

namespace s4u = simgrid::s4u;

HostParams read_host_params(const model::Platform& p) {
  HostParams s;
  s.costs = model::CpuCosts::from_platform(p);
  s.bus = model::HostBus::from_platform(p);
  s.ib.speed = model::ib::parse_speed(p.str("ib.speed"));  // one of the schema's choices
  s.ib.width = static_cast<int>(p.u32("ib.width"));
  s.ib.mtu = p.u32("ib.mtu");
  try {
    model::ib::validate(s.ib);
  } catch (const InputError& e) {
    p.fail_from(e);
  }
  if (!s.bus.is_pcix()) s.max_outstanding_reads = static_cast<int>(p.u32("hca.max_outstanding_reads"));
  s.timing = model::HcaTiming::from_platform(p);
  s.post = model::PostConfig::from_platform(p, s.bus, s.timing.dma_read_rtt_ns);
  s.noise = model::NoiseConfig::from_platform(p, s.costs);
  s.max_inline_data = p.u32("hca.max_inline_data");
  s.max_msg_size = p.u32("hca.max_msg_size");
  s.qp_depth = p.u32("hca.max_qp_wr");
  s.max_qp_rd_atom = p.u32("hca.max_qp_rd_atom");
  s.cq_entries = p.u32("hca.cq_entries");
  s.sdp.tx_ring = p.u32("sdp.tx_ring");
  s.sdp.rx_ring = p.u32("sdp.rx_ring");
  s.sdp.initial_recv_size = p.u32("sdp.initial_recv_buffer");
  s.sdp.max_recv_size = p.u32("sdp.max_recv_buffer");
  if (s.sdp.max_recv_size < s.sdp.initial_recv_size)
    throw InputError(fmt::format("platform {}: sdp.max_recv_buffer is below sdp.initial_recv_buffer", p.name()));
  s.sdp.min_credits = p.u32("sdp.min_credits");
  // Below this the credit-update rule (peer view doubled above min_credits, compared with the
  // posted buffers) sends updates back and forth for ever, or no data can ever go.
  if (2 * (s.sdp.min_credits + 1) > s.sdp.rx_ring)
    throw InputError(fmt::format("platform {}: sdp.min_credits = {} needs sdp.rx_ring >= 2 x (min_credits + 1) = {}, "
                                 "not {}", p.name(), s.sdp.min_credits, 2 * (s.sdp.min_credits + 1), s.sdp.rx_ring));
  s.sdp.zcopy_thresh = static_cast<uint64_t>(p.integer("sdp.zcopy_thresh"));
  if (s.sdp.tx_ring > s.qp_depth || s.sdp.rx_ring > s.qp_depth)
    throw InputError(fmt::format("platform {}: sdp.tx_ring/sdp.rx_ring exceed hca.max_qp_wr = {}", p.name(), s.qp_depth));
  if (s.cq_entries < s.sdp.tx_ring + s.sdp.rx_ring)
    throw InputError(fmt::format("platform {}: hca.cq_entries = {} is below sdp.tx_ring + sdp.rx_ring = {} (the CQ "
                                 "would overrun)", p.name(), s.cq_entries, s.sdp.tx_ring + s.sdp.rx_ring));
  s.sdp.page_size = p.u32("host.page_size");
  (void)p.num("host.clock");  // read by the cost readers (Platform::cost_ns); checked here on every path
  s.sdp.recv_poll_ns = p.num("sdp.recv_poll") * 1e3;
  s.sdp.bzcopy_poll_ns = p.num("sdp.bzcopy_poll") * 1e3;
  s.sdp.socket_lines = p.u32("sdp.socket_lines");
  s.sdp.skb_lines = p.u32("sdp.skb_lines");
  s.topology = model::CpuTopology::from_platform(p, s.costs.cpus);
  s.irq = model::IrqConfig::from_platform(p, s.costs.cpus);
  s.app_cpu = static_cast<int>(p.u32("host.default_app_cpu"));
  s.rmem_default = p.u32("socket.tcp_rmem_default");
  s.wmem_default = p.u32("socket.tcp_wmem_default");
  s.rmem_max = p.u32("socket.rmem_max");
  s.wmem_max = p.u32("socket.wmem_max");
  if (s.app_cpu >= s.costs.cpus)
    p.fail("host.default_app_cpu", fmt::format("CPU {} does not exist (host.cpus = {})", s.app_cpu, s.costs.cpus));
  // The IPoIB path's parameters (sim/ipoib_sim.cpp) are checked whichever transport runs, on a
  // platform that has them; on one without a [netstack] section a --set of them changes nothing.
  if (p.has("netstack.send_call")) {
    check_ipoib_parameters(p);
    p.check_all_used();
  } else {
    p.check_all_used(model::ParamWhen::Ipoib);
  }
  return s;
}

PathRates path_rates(const HostParams& tx, const HostParams& rx) {
  PathRates r;
  r.bus_read_Bps = tx.bus.dma_read_ceiling_gbps() * 1e9 / 8;
  r.dma_tags_Bps = tx.bus.dma_read_latency_bound_gbps(tx.timing.dma_read_rtt_ns, tx.max_outstanding_reads) * 1e9 / 8;
  r.ib_Bps = model::ib::send_goodput_ceiling_gbps(model::ib::trained(tx.ib, rx.ib), rx.sdp.max_recv_size + sdp::Bsdh::kSize) *
             1e9 / 8;
  r.bus_write_Bps = rx.bus.dma_write_ceiling_gbps() * 1e9 / 8;
  return r;
}

TwoHostBed::TwoHostBed(const HostParams& a, const HostParams& b, uint64_t seed, sdp::DataMode mode, bool first_pair) {
  engine_ = make_engine();

  auto* zone = s4u::create_full_zone("hcasim");
  hca_node_ = {zone->create_host("A-hca", 1e9), zone->create_host("B-hca", 1e9)};
  auto link = [&](const std::string& name, double Bps) { return zone->create_link(name, Bps)->set_latency(0)->seal(); };
  using LR = s4u::LinkInRoute;
  const std::array<const HostParams*, 2> p{&a, &b};
  const char* names[] = {"A", "B"};
  // A PCI-X bus is half duplex and shared: one link, in the routes of both directions, at the
  // write ceiling; the sending direction also crosses a link at the read ceiling. A one-way
  // stream of either kind thus gets its ceiling; a mixed stream gets reads + writes <= the
  // write ceiling, which overstates the bus by up to 7 % (model/pcix.h mixed_ceiling_gbps:
  // 7.88 vs 8.45 Gbit/s at read_share 0.5 on the zx1 slot). PCIe's two directions are two links.
  std::array<s4u::Link*, 2> pcix_bus{};
  for (size_t i = 0; i < 2; ++i)
    if (p[i]->bus.is_pcix()) pcix_bus[i] = link(std::string(names[i]) + "-pcix", p[i]->bus.dma_write_ceiling_gbps() * 1e9 / 8);
  std::array<double, 2> bottleneck{}, wire{}, drain{};
  for (int from = 0; from < 2; ++from) {  // one route per direction of data
    const int to = 1 - from;
    const auto fi = static_cast<size_t>(from), ti = static_cast<size_t>(to);
    const PathRates r = path_rates(*p[fi], *p[ti]);
    const std::string f = names[from], t = names[to];
    std::vector<LR> route;
    if (pcix_bus[fi]) route.emplace_back(pcix_bus[fi]);
    route.emplace_back(link(f + (pcix_bus[fi] ? "-pcix-read" : "-pcie-h2d"), r.bus_read_Bps));
    route.emplace_back(link(f + "-dma-read-tags", r.dma_tags_Bps));
    route.emplace_back(link("ib-" + f + "-to-" + t, r.ib_Bps));
    route.emplace_back(pcix_bus[ti] ? pcix_bus[ti] : link(t + "-pcie-d2h", r.bus_write_Bps));
    zone->add_route(hca_node_[fi]->get_netpoint(), hca_node_[ti]->get_netpoint(), nullptr, nullptr, route, false);
    bottleneck[fi] = std::min({r.bus_read_Bps, r.dma_tags_Bps, r.ib_Bps, r.bus_write_Bps});
    wire[fi] = r.ib_Bps;
    drain[fi] = r.bus_write_Bps;
    Route& rt = routes_[fi];
    rt.from = hca_node_[fi];
    rt.to = hca_node_[ti];
    rt.rate_Bps = std::numeric_limits<double>::infinity();
    for (const LR& l : route) {
      rt.add_link(l.get_link());
      rt.rate_Bps = std::min(rt.rate_Bps, l.get_link()->get_bandwidth());
    }
  }
  zone->seal();

  scheduler_ = std::make_unique<Scheduler>(failure_);
  timer_ = std::make_unique<Timer>();
  const model::ib::Config trained = model::ib::trained(a.ib, b.ib);  // one link, as both ports trained it
  for (size_t i = 0; i < 2; ++i) {
    host_[i] = std::make_unique<SimHost>(static_cast<int>(i), names[i], p[i]->costs, p[i]->topology, seed, mode);
    hca::DeviceLimits lim;
    lim.max_qp_wr = p[i]->qp_depth;
    lim.max_inline_data = p[i]->max_inline_data;
    lim.max_msg_sz = p[i]->max_msg_size;
    lim.max_qp_rd_atom = static_cast<uint8_t>(p[i]->max_qp_rd_atom);
    lim.port_mtu = p[i]->ib.mtu;
    hca_[i] = std::make_unique<Hca>(*host_[i], p[i]->timing, p[i]->post, lim, *timer_, failure_, p[i]->irq);
    hca_[i]->set_route(trained, bottleneck[i], wire[i], drain[i], routes_[i]);
  }
  params_ = p;
  if (first_pair) std::tie(qp_[0], qp_[1]) = add_qp_pair();
}

std::pair<Qp*, Qp*> TwoHostBed::add_qp_pair(const QpPairShape& shape) {
  std::array<Qp*, 2> q{};
  for (size_t i = 0; i < 2; ++i) {
    const HostParams& p = *params_[i];
    auto or_host = [](uint32_t v, uint32_t host) { return v != 0 ? v : host; };
    q[i] = &hca_[i]->create_qp(hca_[i]->alloc_pd(), or_host(shape.max_send_wr, p.qp_depth),
                               or_host(shape.max_recv_wr, p.qp_depth), or_host(shape.cq_entries, p.cq_entries),
                               shape.type);
  }
  if (shape.type == hca::QpType::Ud)
    Qp::connect_ud(*q[0], *q[1], shape.qkey);
  else
    Qp::connect(*q[0], *q[1], shape.rd_atomic);
  return {q[0], q[1]};
}

void TwoHostBed::set_faults(const model::FaultConfig& faults, const model::RcRetry& retry) {
  for (size_t i = 0; i < 2; ++i) hca_[i]->set_faults(faults, retry, i);
}

TwoHostBed::~TwoHostBed() {
  // Destroy what holds SimGrid objects before the engine itself.
  for (auto& h : hca_) h.reset();
  for (auto& h : host_) h.reset();
  timer_.reset();
  scheduler_.reset();
}

std::vector<std::pair<std::string, double>> TwoHostBed::link_busy_s() const {
  std::vector<std::pair<std::string, double>> out;
  for (const Route& r : routes_)
    for (size_t i = 0; i < r.links.size(); ++i) {
      const std::string name = r.links[i]->get_name();
      auto it = std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.first == name; });
      if (it == out.end())
        out.emplace_back(name, r.busy_s[i]);
      else
        it->second += r.busy_s[i];
    }
  return out;
}

std::vector<frontends::LinkUse> TwoHostBed::link_use() const {
  std::vector<frontends::LinkUse> out;
  for (const Route& r : routes_)
    for (size_t i = 0; i < r.links.size(); ++i) {
      const std::string name = r.links[i]->get_name();
      auto it = std::find_if(out.begin(), out.end(), [&](const auto& e) { return e.link == name; });
      if (it == out.end())
        out.push_back({name, r.busy_s[i], r.links[i]->get_bandwidth() * 8 / 1e9});
      else
        it->busy_s += r.busy_s[i];
    }
  return out;
}

void TwoHostBed::describe(frontends::ExplainMeasure& m, const std::array<int, 2>& app_cpu) const {
  for (size_t i = 0; i < 2; ++i) {
    const HostParams& p = *params_[i];
    m.bus[i] = p.bus;
    m.dma_read_rtt_ns[i] = p.timing.dma_read_rtt_ns;
    m.max_outstanding_reads[i] = p.max_outstanding_reads;
    m.app_cpu[i] = app_cpu[i];
    m.irq_cpu[i] = p.irq.target_cpu();
  }
  m.ib = model::ib::trained(params_[0]->ib, params_[1]->ib);
  m.ib_message_bytes = params_[1]->sdp.max_recv_size + sdp::Bsdh::kSize;
}

void TwoHostBed::set_trace(TraceSink* sink) {
  scheduler_->set_trace(sink);
  for (size_t i = 0; i < 2; ++i) {
    host_[i]->set_trace(sink);
    hca_[i]->set_trace(sink);
  }
}

void TwoHostBed::reset_link_busy() {
  for (Route& r : routes_) std::fill(r.busy_s.begin(), r.busy_s.end(), 0.0);
}

void TwoHostBed::run(double limit_s) {
  for (auto& h : hca_) h->start();
  // Watchdog: a run still going long after its expected end is a protocol stall.
  scheduler_->spawn("watchdog", [this, limit_s] {
    failure_.guard("watchdog", [limit_s] {
      sleep_until_s(limit_s);
      throw std::runtime_error(fmt::format("the run did not finish within {} s of simulated time", limit_s));
    });
  }, true);
  scheduler_->run(hca_node_[0]);
}

}  // namespace hcasim::sim
