#pragma once
/// \file What a simulation measures of the resources of a run, for `--profile` and `--explain`
/// (frontends/explain.h): plain structs, no SimGrid; sim/ fills them.
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "model/bus.h"
#include "model/ib.h"

namespace hcasim::frontends {

/// Time spent by one CPU core, by activity, in ns of simulated time, and the scheduler's events
/// its "wakeup" time is made of (model::CoreAccount).
struct CoreProfile {
  int core = 0;
  std::vector<std::pair<std::string, double>> busy_ns;  ///< activity -> ns, in a fixed order
  uint64_t wakeups = 0;           ///< sleepers this core woke (cpu.wakeup each)
  uint64_t ipis = 0;              ///< of those, on another core (cpu.ipi each)
  uint64_t context_switches = 0;  ///< sleepers resumed on this core (cpu.context_switch each)
};

/// One SimGrid link of a route over the measured interval: its name as the testbed names it
/// ("A-pcie-h2d", "A-dma-read-tags", "ib-A-to-B", "B-pcie-d2h", "A-pcix", "A-pcix-read"), its
/// busy time (every transfer's bytes / the link's bandwidth, s: Route::busy_s) and that
/// bandwidth, the payload ceiling model/ gives the link (Gbit/s = 10^9 bit/s).
struct LinkUse {
  std::string link;
  double busy_s = 0;
  double ceiling_gbit_s = 0;
};

/// One HCA over the measured interval (sim::Hca::measure): its send engine's time on trains
/// (from taking a WQE to its last byte leaving the route's bottleneck, s), the part of it spent
/// waiting for a WQE to reach the HCA (doorbell + WQE fetch, or the BlueFlame copy, s), the trains
/// it moved; and its pipeline stages' time taken (hca/stage.h, s): the busiest QP's WQE
/// processing (hca.qp_wqe_time per WQE), the port's transmit and receive packet processing
/// (hca.tx_packet_time, hca.rx_packet_time per packet), with the jobs each took.
struct HcaUse {
  double engine_busy_s = 0;
  double wqe_wait_s = 0;
  uint64_t trains = 0;
  double qp_wqe_busy_s = 0;
  uint32_t qp_wqe_qpn = 0;  ///< the busiest QP's number
  uint64_t qp_wqes = 0;     ///< its WQEs
  double tx_port_busy_s = 0;
  uint64_t tx_packets = 0;
  double rx_port_busy_s = 0;
  uint64_t rx_packets = 0;
};

/// What one measured interval used, as the simulation measured it, with what a what-if needs
/// from the model: each host's bus, the DMA-read round trip and tag limit, the trained IB link.
struct ExplainMeasure {
  double interval_s = 0;                       ///< the measured interval, simulated s
  std::vector<LinkUse> links;                  ///< every link of both routes, route order
  std::array<HcaUse, 2> hca{};                 ///< local (A), remote (B)
  std::array<std::vector<CoreProfile>, 2> cores;  ///< per CPU, ns by activity, local then remote
  std::array<std::string, 2> host_role{"local", "remote"};  ///< "netperf", "netserver", "client", ...
  std::array<int, 2> app_cpu{0, 0};            ///< the CPU the application runs on
  std::array<int, 2> irq_cpu{0, 0};            ///< the CPU the HCA's interrupts go to
  std::array<model::HostBus, 2> bus{};         ///< each host's slot
  std::array<double, 2> dma_read_rtt_ns{0, 0};  ///< HcaTiming::dma_read_rtt_ns
  std::array<int, 2> max_outstanding_reads{0, 0};  ///< hca.max_outstanding_reads (PCIe)
  model::ib::Config ib;                        ///< the link as both ports trained it
  uint64_t ib_message_bytes = 0;               ///< the SEND size the IB ceiling is computed for
};

/// One stage of a one-way latency, from model/'s closed forms, ns.
struct LatencyStage {
  std::string stage;   ///< what happens
  double ns = 0;       ///< its time, ns
  std::string source;  ///< the closed form or platform key it comes from
};

}  // namespace hcasim::frontends
