#include "sim/netperf_sim.h"

#include <chrono>
#include <memory>

#include <fmt/format.h>
#include <simgrid/s4u.hpp>
#include <xbt/log.h>

#include "model/cpu.h"
#include "model/ib.h"
#include "model/pcie.h"
#include "sdp/socket.h"
#include "sim/hca.h"
#include "sim/kernel.h"

namespace hcasim::sim {

namespace s4u = simgrid::s4u;

double service_demand_us_per_kb(double util_pct, int cpus, uint64_t bytes, double elapsed_s) {
  if (bytes == 0 || elapsed_s <= 0) return 0;
  const double kb_per_s = static_cast<double>(bytes) / 1024.0 / elapsed_s;
  return util_pct / 100.0 * cpus * 1e6 / kb_per_s;
}

namespace {

/// Parameters of one side read from its platform.
struct Side {
  model::CpuCosts costs;
  model::pcie::Config pcie;
  model::ib::Config ib;
  HcaTiming timing;
  sdp::SdpConfig sdp;
  double dma_read_rtt_ns = 0;
  int max_outstanding_reads = 0;
  uint32_t qp_depth = 0, cq_entries = 0;
  int irq_cpu = 0, app_cpu = 0;
  uint64_t rmem_default = 0, wmem_default = 0;
};

uint32_t u32(const model::Platform& p, const std::string& key, std::string_view unit, uint64_t lo, uint64_t hi) {
  const int64_t v = p.integer(key, unit);
  if (v < static_cast<int64_t>(lo) || v > static_cast<int64_t>(hi))
    throw InputError(fmt::format("platform {}: {} = {} is outside {}..{}", p.name(), key, v, lo, hi));
  return static_cast<uint32_t>(v);
}

double nonneg(const model::Platform& p, const std::string& key, std::string_view unit) {
  const double v = p.num(key, unit);
  if (!(v >= 0)) throw InputError(fmt::format("platform {}: {} = {} must be >= 0", p.name(), key, v));
  return v;
}

Side read_side(const model::Platform& p) {
  Side s;
  s.costs = model::CpuCosts::from_platform(p);
  s.pcie.gen = static_cast<int>(p.integer("pcie.gen", ""));
  s.pcie.lanes = static_cast<int>(p.integer("pcie.lanes", ""));
  s.pcie.max_payload = u32(p, "pcie.max_payload", "B", 1, 4096);
  s.pcie.max_read_request = u32(p, "pcie.max_read_request", "B", 1, 4096);
  s.pcie.read_completion_boundary = u32(p, "pcie.read_completion_boundary", "B", 1, 4096);
  s.pcie.completion_size = u32(p, "pcie.completion_size", "B", 1, 4096);
  s.pcie.addr64 = p.flag("pcie.addr64");
  model::pcie::validate(s.pcie);
  s.ib.speed = model::ib::parse_speed(p.str("ib.speed"));
  s.ib.width = static_cast<int>(p.integer("ib.width", ""));
  s.ib.mtu = u32(p, "ib.mtu", "B", 256, 4096);
  model::ib::validate(s.ib);
  s.dma_read_rtt_ns = nonneg(p, "pcie.dma_read_rtt", "ns");
  s.max_outstanding_reads = static_cast<int>(u32(p, "hca.max_outstanding_reads", "", 1, 256));
  s.timing.dma_read_rtt_ns = s.dma_read_rtt_ns;
  s.timing.mmio_write_ns = nonneg(p, "pcie.mmio_write_latency", "ns");
  s.timing.posted_write_ns = nonneg(p, "pcie.posted_write_latency", "ns");
  s.timing.tx_processing_ns = nonneg(p, "hca.tx_processing", "ns");
  s.timing.rx_processing_ns = nonneg(p, "hca.rx_processing", "ns");
  s.timing.interrupt_latency_ns = nonneg(p, "hca.interrupt_latency", "ns");
  s.timing.propagation_ns = nonneg(p, "ib.propagation", "ns");
  s.qp_depth = u32(p, "hca.max_qp_wr", "", 1, 65536);
  s.cq_entries = u32(p, "hca.cq_entries", "", 1, 4194304);
  s.sdp.tx_ring = u32(p, "sdp.tx_ring", "", 1, 4096);
  s.sdp.rx_ring = u32(p, "sdp.rx_ring", "", 1, 4096);
  s.sdp.initial_recv_size = u32(p, "sdp.initial_recv_buffer", "B", 64, 1u << 20);
  s.sdp.max_recv_size = u32(p, "sdp.max_recv_buffer", "B", 64, 1u << 20);
  if (s.sdp.max_recv_size < s.sdp.initial_recv_size)
    throw InputError(fmt::format("platform {}: sdp.max_recv_buffer is below sdp.initial_recv_buffer", p.name()));
  s.sdp.min_credits = u32(p, "sdp.min_credits", "", 0, 1024);
  // Below this the credit-update rule (peer view doubled above min_credits, compared with the
  // posted buffers) sends updates back and forth for ever, or no data can ever go.
  if (2 * (s.sdp.min_credits + 1) > s.sdp.rx_ring)
    throw InputError(fmt::format("platform {}: sdp.min_credits = {} needs sdp.rx_ring >= 2 x (min_credits + 1) = {}, "
                                 "not {}", p.name(), s.sdp.min_credits, 2 * (s.sdp.min_credits + 1), s.sdp.rx_ring));
  const int64_t zt = p.integer("sdp.zcopy_thresh", "B");
  if (zt < 0) throw InputError(fmt::format("platform {}: sdp.zcopy_thresh must be >= 0", p.name()));
  s.sdp.zcopy_thresh = static_cast<uint64_t>(zt);
  if (s.sdp.tx_ring > s.qp_depth || s.sdp.rx_ring > s.qp_depth)
    throw InputError(fmt::format("platform {}: sdp.tx_ring/sdp.rx_ring exceed hca.max_qp_wr = {}", p.name(), s.qp_depth));
  if (s.cq_entries < s.sdp.tx_ring + s.sdp.rx_ring)
    throw InputError(fmt::format("platform {}: hca.cq_entries = {} is below sdp.tx_ring + sdp.rx_ring = {} (the CQ "
                                 "would overrun)", p.name(), s.cq_entries, s.sdp.tx_ring + s.sdp.rx_ring));
  s.sdp.page_size = u32(p, "host.page_size", "B", 512, 1u << 21);
  s.sdp.recv_poll_ns = nonneg(p, "sdp.recv_poll", "us") * 1e3;
  s.sdp.bzcopy_poll_ns = nonneg(p, "sdp.bzcopy_poll", "us") * 1e3;
  s.irq_cpu = static_cast<int>(u32(p, "irq.affinity", "", 0, 1023));
  s.app_cpu = static_cast<int>(u32(p, "host.default_app_cpu", "", 0, 1023));
  s.rmem_default = u32(p, "socket.tcp_rmem_default", "B", 1, 1u << 30);
  s.wmem_default = u32(p, "socket.tcp_wmem_default", "B", 1, 1u << 30);
  if (s.irq_cpu >= s.costs.cpus || s.app_cpu >= s.costs.cpus)
    throw InputError(fmt::format("platform {}: irq.affinity/host.default_app_cpu beyond host.cpus = {}", p.name(),
                                 s.costs.cpus));
  return s;
}

/// Payload-rate bandwidths (bytes/s) of the links of one direction, from model/'s ceilings.
struct PathRates {
  double pcie_read_Bps, dma_tags_Bps, ib_Bps, pcie_write_Bps;
};

PathRates path_rates(const Side& tx, const Side& rx) {
  PathRates r;
  r.pcie_read_Bps = model::pcie::dma_read_ceiling_gbps(tx.pcie) * 1e9 / 8;
  r.dma_tags_Bps =
      model::pcie::dma_read_latency_bound_gbps(tx.pcie, tx.dma_read_rtt_ns, tx.max_outstanding_reads) * 1e9 / 8;
  r.ib_Bps = model::ib::send_goodput_ceiling_gbps(tx.ib, rx.sdp.max_recv_size + sdp::Bsdh::kSize) * 1e9 / 8;
  r.pcie_write_Bps = model::pcie::dma_write_ceiling_gbps(rx.pcie) * 1e9 / 8;
  return r;
}

void configure_simgrid() {
  // Exact timing (DESIGN.md): a transfer takes latency + bytes/bandwidth, links shared max-min.
  s4u::Engine::set_config("network/model:CM02");
  s4u::Engine::set_config("network/crosstraffic:0");
  s4u::Engine::set_config("network/TCP-gamma:0");
  s4u::Engine::set_config("network/latency-factor:1");
  s4u::Engine::set_config("network/bandwidth-factor:1");
  s4u::Engine::set_config("network/weight-S:0");
}

/// The pair of sockets, created inside the actors (verbs calls need a CPU context).
struct Rendezvous {
  sdp::SdpSocket* server = nullptr;
  bool connected = false;
  SimWaitQueue wq;
};

}  // namespace

TcpStreamResult run_tcp_stream(const model::Platform& local, const model::Platform& remote,
                               const TcpStreamConfig& cfg) {
  if (!(cfg.length_s > 0)) throw InputError(fmt::format("-l: test length {} s must be > 0", cfg.length_s));
  const Side A = read_side(local);
  const Side B = read_side(remote);

  TcpStreamResult res;
  res.local_send_socket = cfg.local_send_socket ? cfg.local_send_socket : A.wmem_default;
  res.remote_recv_socket = cfg.remote_recv_socket ? cfg.remote_recv_socket : B.rmem_default;
  // netperf: without -m the send size is the send socket size; without -M the receive size
  // is the receive socket size (nettest_bsd.c send_tcp_stream / recv_tcp_stream).
  res.send_size = cfg.send_size ? cfg.send_size : res.local_send_socket;
  res.recv_size = cfg.recv_size ? cfg.recv_size : res.remote_recv_socket;
  res.local_cpus = A.costs.cpus;
  res.remote_cpus = B.costs.cpus;
  const int lcpu = cfg.local_cpu.value_or(A.app_cpu);
  const int rcpu = cfg.remote_cpu.value_or(B.app_cpu);
  if (lcpu < 0 || lcpu >= A.costs.cpus)
    throw InputError(fmt::format("-T: local CPU {} does not exist ({} has {} CPUs)", lcpu, local.name(), A.costs.cpus));
  if (rcpu < 0 || rcpu >= B.costs.cpus)
    throw InputError(fmt::format("-T: remote CPU {} does not exist ({} has {} CPUs)", rcpu, remote.name(), B.costs.cpus));

  const auto wall0 = std::chrono::steady_clock::now();
  int argc = 1;
  char arg0[] = "hcasim";
  char* argv[] = {arg0, nullptr};
  // SimGrid's own messages (its deadlock report among them) would break hcasim's one-line
  // errors: silence them; a stalled run is reported by run_tcp_stream itself.
  xbt_log_control_set("root.thres:critical");
  xbt_log_control_set("root.app:file:/dev/null");
  s4u::Engine engine(&argc, argv);
  configure_simgrid();

  // Platform: a CPU node and an HCA node per host; each PCIe direction, the DMA-read tag
  // limit and each IB direction is its own link.
  auto* zone = s4u::create_full_zone("hcasim");
  s4u::Host* a_cpu = zone->create_host("A", 1e9);
  s4u::Host* b_cpu = zone->create_host("B", 1e9);
  s4u::Host* a_hca = zone->create_host("A-hca", 1e9);
  s4u::Host* b_hca = zone->create_host("B-hca", 1e9);
  auto link = [&](const std::string& name, double Bps) { return zone->create_link(name, Bps)->set_latency(0)->seal(); };
  const PathRates ab = path_rates(A, B), ba = path_rates(B, A);
  s4u::Link* a_down = link("A-pcie-h2d", ab.pcie_read_Bps);
  s4u::Link* a_tags = link("A-dma-read-tags", ab.dma_tags_Bps);
  s4u::Link* ib_ab = link("ib-A-to-B", ab.ib_Bps);
  s4u::Link* b_up = link("B-pcie-d2h", ab.pcie_write_Bps);
  s4u::Link* b_down = link("B-pcie-h2d", ba.pcie_read_Bps);
  s4u::Link* b_tags = link("B-dma-read-tags", ba.dma_tags_Bps);
  s4u::Link* ib_ba = link("ib-B-to-A", ba.ib_Bps);
  s4u::Link* a_up = link("A-pcie-d2h", ba.pcie_write_Bps);
  using LR = s4u::LinkInRoute;
  zone->add_route(a_hca->get_netpoint(), b_hca->get_netpoint(), nullptr, nullptr,
                  {LR(a_down), LR(a_tags), LR(ib_ab), LR(b_up)}, false);
  zone->add_route(b_hca->get_netpoint(), a_hca->get_netpoint(), nullptr, nullptr,
                  {LR(b_down), LR(b_tags), LR(ib_ba), LR(a_up)}, false);
  zone->seal();

  ActivityCounter counter;
  Timer timer(counter);
  const sdp::DataMode mode = cfg.verify_data ? sdp::DataMode::Bytes : sdp::DataMode::Reference;
  SimHost host_a(0, "A", A.costs, cfg.seed, mode, counter);
  SimHost host_b(1, "B", B.costs, cfg.seed, mode, counter);
  Failure failure;
  EmulatedHca hca_a(host_a, a_hca, A.timing, timer, counter, failure, A.irq_cpu);
  EmulatedHca hca_b(host_b, b_hca, B.timing, timer, counter, failure, B.irq_cpu);
  SimQp& qp_a = hca_a.create_qp(A.qp_depth, A.qp_depth, A.cq_entries);
  SimQp& qp_b = hca_b.create_qp(B.qp_depth, B.qp_depth, B.cq_entries);
  SimQp::connect(qp_a, qp_b);
  hca_a.start();
  hca_b.start();
  s4u::Actor::create("timer", a_hca, [&] { failure.guard("timer", [&] { timer.run(); }); })->daemonize();

  Rendezvous rv;
  double t_start = 0, t_end = 0;
  std::unique_ptr<sdp::SdpSocket> sock_a, sock_b;
  bool data_ok = true;
  uint64_t received = 0, recv_calls = 0, sent = 0, send_calls = 0;

  // netserver: accept, then recv() until the end of the stream, checking every byte range.
  s4u::Actor::create("netserver", b_cpu, [&] {
    failure.guard("netserver", [&] {
      host_b.bind_current(rcpu);
      sock_b = std::make_unique<sdp::SdpSocket>(host_b, qp_b, B.sdp, "netserver");
      qp_b.set_handlers([&] { sock_b->on_cqe(); }, [&] { sock_b->on_cq_event(); });
      qp_b.req_notify_cq();
      {  // listen, then wait for the active side's Hello (accept)
        std::unique_lock<s4u::Mutex> lock(*rv.wq.mutex);
        rv.server = sock_b.get();
        rv.wq.cv->notify_all();
        while (!rv.connected) rv.wq.cv->wait(lock);
      }
      const sdp::Addr buf = host_b.memory().allocate(res.recv_size, mode);
      for (;;) {
        const uint64_t n = sock_b->recv(buf, res.recv_size);
        if (n == 0) break;
        ++recv_calls;
        if (!host_b.memory().check_stream(buf, n, received)) data_ok = false;
        received += n;
      }
      sock_b->close();
    });
  });

  // netperf: connect, send for the test length, shutdown, wait for the remote close.
  s4u::Actor::create("netperf", a_cpu, [&] {
    failure.guard("netperf", [&] {
      host_a.bind_current(lcpu);
      sock_a = std::make_unique<sdp::SdpSocket>(host_a, qp_a, A.sdp, "netperf");
      qp_a.set_handlers([&] { sock_a->on_cqe(); }, [&] { sock_a->on_cq_event(); });
      qp_a.req_notify_cq();
      {
        std::unique_lock<s4u::Mutex> lock(*rv.wq.mutex);
        while (rv.server == nullptr) rv.wq.cv->wait(lock);
      }
      // Hello / HelloAck travel in the CM REQ / REP private data.
      auto hello = sock_a->hello(12865);
      auto ack = rv.server->accept_hello(hello);
      sock_a->hello_ack(ack);
      rv.connected = true;
      rv.wq.cv->notify_all();
      // netperf's send ring: send_width buffers of the send size (nettest_bsd.c:
      // send_width = lss_size / send_size + 1, at least 2).
      uint64_t width = res.local_send_socket / res.send_size + 1;
      if (width < 2) width = 2;
      std::vector<sdp::Addr> ring;
      for (uint64_t i = 0; i < width; ++i) ring.push_back(host_a.memory().allocate(res.send_size, mode, 8));
      host_a.reset_accounts();
      host_b.reset_accounts();
      t_start = now_ns();
      const double stop = t_start + cfg.length_s * 1e9;
      size_t k = 0;
      while (now_ns() < stop) {
        const sdp::Addr buf = ring[k++ % ring.size()];
        host_a.memory().write_stream(buf, res.send_size, sent);
        sent += sock_a->send(buf, res.send_size);
        ++send_calls;
        host_a.flush();
      }
      sock_a->close();
      const sdp::Addr scratch = ring[0];
      while (sock_a->recv(scratch, res.send_size) > 0) {
      }
      host_a.flush();
      t_end = now_ns();
    });
  });

  // Watchdog: netperf stops sending at -l; draining and closing takes far less than the test
  // itself. A run still going long after that is a protocol stall, reported as such.
  const double limit_s = 2 * cfg.length_s + 10;
  s4u::Actor::create("watchdog", a_hca, [&] {
    failure.guard("watchdog", [&] {
      s4u::this_actor::sleep_until(limit_s);
      throw std::runtime_error(fmt::format("the stream did not finish within {} s of simulated time", limit_s));
    });
  })->daemonize();
  engine.run();
  if (failure.failed()) throw std::runtime_error(failure.message());
  if (t_end <= t_start) throw std::runtime_error("simulation ended before the test finished");

  res.elapsed_s = (t_end - t_start) * 1e-9;
  res.bytes_sent = sent;
  res.bytes_received = received;
  res.send_calls = send_calls;
  res.recv_calls = recv_calls;
  res.data_verified = data_ok && received == sent;
  if (!res.data_verified)
    throw std::runtime_error(fmt::format("data check failed: sent {} B, received {} B, content {}", sent, received,
                                         data_ok ? "in order" : "corrupted"));
  const double elapsed_ns = t_end - t_start;
  auto with_timer = [&](const SimHost& h, const Side& s) {
    auto acc = h.accounts();
    for (auto& c : acc)
      c.busy_ns[static_cast<size_t>(model::Activity::Timer)] += s.costs.timer_hz * res.elapsed_s * s.costs.timer_tick_ns;
    return acc;
  };
  const auto acc_a = with_timer(host_a, A), acc_b = with_timer(host_b, B);
  res.local_util_pct = model::utilisation_pct(acc_a, elapsed_ns);
  res.remote_util_pct = model::utilisation_pct(acc_b, elapsed_ns);
  auto profile = [](const std::vector<model::CoreAccount>& acc) {
    std::vector<CoreProfile> out;
    for (size_t i = 0; i < acc.size(); ++i) {
      CoreProfile p;
      p.core = static_cast<int>(i);
      for (size_t a = 0; a < model::kActivityCount; ++a)
        p.busy_ns.emplace_back(std::string(model::activity_name(static_cast<model::Activity>(a))), acc[i].busy_ns[a]);
      out.push_back(std::move(p));
    }
    return out;
  };
  res.local_profile = profile(acc_a);
  res.remote_profile = profile(acc_b);
  res.simgrid_activities = counter.count;
  res.sdp_messages = sock_a->stats().msgs_sent + sock_b->stats().msgs_sent;
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return res;
}

}  // namespace hcasim::sim
