#pragma once
/// \file Two simulated hosts joined by an IB link, each with its HCA in a PCIe slot: the
/// SimGrid platform (one link per PCIe direction, per DMA-read tag limit and per IB direction),
/// the hosts' cores and memory, the HCAs and one connected RC QP pair. Everything a
/// simulation of two hosts needs before its application actors start; one per process
/// (SimGrid allows one engine per process).
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <simgrid/s4u.hpp>

#include "frontends/measure.h"
#include "model/cpu.h"
#include "model/fault.h"
#include "model/hca.h"
#include "model/ib.h"
#include "model/interrupt.h"
#include "model/topology.h"
#include "model/noise.h"
#include "model/bus.h"
#include "model/pcie.h"
#include "model/platform.h"
#include "sdp/socket.h"
#include "sim/hca.h"
#include "sim/kernel.h"

namespace hcasim::sim {

/// One host's parameters, read and checked from its platform file.
struct HostParams {
  model::CpuCosts costs;
  model::HostBus bus;             ///< the HCA's slot: [pcie] or [pcix]
  model::ib::Config ib;
  model::HcaTiming timing;
  model::PostConfig post;         ///< doorbell / BlueFlame path of the send queue
  model::NoiseConfig noise;       ///< timer ticks and interference (latency tools)
  uint32_t max_inline_data = 0;   ///< hca.max_inline_data, bytes
  uint64_t max_msg_size = 0;      ///< hca.max_msg_size, bytes
  sdp::SdpConfig sdp;
  int max_outstanding_reads = 0;  ///< HCA's outstanding DMA reads (tags; PCIe only: PCI-X's are
                                  ///< pcix.max_outstanding_split)
  uint32_t qp_depth = 0;          ///< hca.max_qp_wr
  uint32_t max_qp_rd_atom = 0;    ///< hca.max_qp_rd_atom: RDMA READs / atomics outstanding per QP
  uint32_t cq_entries = 0;        ///< hca.cq_entries
  model::CpuTopology topology;    ///< [topology]
  model::IrqConfig irq;           ///< irq.affinity, hca.msi_x, CQ moderation
  int app_cpu = 0;                ///< host.default_app_cpu
  uint64_t rmem_default = 0;      ///< socket.tcp_rmem_default, bytes
  uint64_t wmem_default = 0;      ///< socket.tcp_wmem_default, bytes
  uint64_t rmem_max = 0;          ///< socket.rmem_max (net.core.rmem_max), bytes: caps -S
  uint64_t wmem_max = 0;          ///< socket.wmem_max (net.core.wmem_max), bytes: caps -s
};

/// Reads every parameter a simulated host needs. Throws InputError naming the platform and
/// key on a missing, out-of-range or inconsistent value.
HostParams read_host_params(const model::Platform& p);

/// Payload-rate bandwidths (bytes/s) of the links one direction's data crosses, from model/'s
/// closed-form ceilings (model/bus.h): the sender's bus reading the data (PCIe host->device
/// completions, or PCI-X requests and split completions), the sender's DMA-read latency
/// bound (PCIe tags, PCI-X outstanding split transactions), the IB link as the two ports train
/// it (model::ib::trained; SENDs of the receiver's largest buffer), the receiver's bus writing it
/// (PCIe device->host, PCI-X).
struct PathRates {
  double bus_read_Bps = 0, dma_tags_Bps = 0, ib_Bps = 0, bus_write_Bps = 0;
};
PathRates path_rates(const HostParams& tx, const HostParams& rx);

/// A QP pair of add_qp_pair: its transport (RC, UC or UD), each QP's queue depths and CQ entries
/// (0: its host's hca.max_qp_wr, hca.cq_entries), and for UD the Q_Key both use.
struct QpPairShape {
  hca::QpType type = hca::QpType::Rc;
  uint32_t max_send_wr = 0, max_recv_wr = 0, cq_entries = 0;
  uint32_t qkey = 0;
  /// An RC pair's max_rd_atomic and max_dest_rd_atomic, each way (perftest's -o); 0: the
  /// device's max_qp_rd_atom (hca.max_qp_rd_atom), as Qp::connect sets it.
  uint8_t rd_atomic = 0;
};

/// Two hosts, A (index 0) and B (index 1), with their HCAs and a connected RC QP pair.
class TwoHostBed {
 public:
  /// Builds the SimGrid engine (exact-timing configuration of docs/design.md) and platform.
  /// `a` and `b` must outlive the bed (add_qp_pair reads them). Without `first_pair` the bed
  /// has no QPs (qp() is not to be called) until add_qp_pair(shape) makes them.
  TwoHostBed(const HostParams& a, const HostParams& b, uint64_t seed, sdp::DataMode mode, bool first_pair = true);
  ~TwoHostBed();

  simgrid::s4u::Host* hca_node(int i) { return hca_node_[static_cast<size_t>(i)]; }
  SimHost& host(int i) { return *host_[static_cast<size_t>(i)]; }
  Hca& hca(int i) { return *hca_[static_cast<size_t>(i)]; }
  Qp& qp(int i) { return *qp_[static_cast<size_t>(i)]; }
  /// Creates one QP pair of `shape` (A's first, then B's), each in a new PD, connected (RC) or
  /// brought to RTS as each other's destination (UD); by default an RC pair sized like the
  /// first. Call before run().
  std::pair<Qp*, Qp*> add_qp_pair(const QpPairShape& shape = {});
  /// Faults on the wire and the RC retry attributes of every QP, on both HCAs
  /// (Hca::set_faults; A's fate streams are side 0, B's side 1). Call before run().
  void set_faults(const model::FaultConfig& faults, const model::RcRetry& retry);
  Failure& failure() { return failure_; }
  const SimGridStats& stats() const { return stats_; }
  Timer& timer() { return *timer_; }
  Scheduler& scheduler() { return *scheduler_; }
  /// Busy time of every SimGrid link of the two routes since the last reset_link_busy(), s, in
  /// route order (A to B, then B's links A's route does not cross): the bytes every transfer
  /// moved over it / its bandwidth (Route::busy_s), counted when the transfer starts. Each PCIe
  /// direction, the DMA-read tag limit, each IB direction; a PCI-X bus once, busy with both
  /// directions at its write ceiling (the reads' own limit is the route's -pcix-read link).
  std::vector<std::pair<std::string, double>> link_busy_s() const;
  /// Zeroes the links' busy time (the start of the measured interval).
  void reset_link_busy();
  /// link_busy_s() with each link's bandwidth (the payload ceiling model/ gave it, Gbit/s).
  std::vector<frontends::LinkUse> link_use() const;
  /// What --explain needs of the hosts besides their measurements: buses, DMA-read round trips
  /// and tags, the trained link, the SEND size of the IB ceiling (path_rates), the application
  /// and interrupt CPUs (`app_cpu`: each host's), into `m`.
  void describe(frontends::ExplainMeasure& m, const std::array<int, 2>& app_cpu) const;

  /// Reports the run's spans to `sink` from now on (nullptr: none): the Scheduler's transfers,
  /// both hosts' CPU work and polling, both HCAs' send engines (--trace).
  void set_trace(TraceSink* sink);

  /// Starts the HCAs' contexts and the watchdog, then runs the Scheduler until the application
  /// contexts end. A run still going at `limit_s` of simulated time fails with a message.
  void run(double limit_s);

 private:
  std::unique_ptr<simgrid::s4u::Engine> engine_;
  SimGridStats stats_;
  Failure failure_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<Timer> timer_;
  std::array<simgrid::s4u::Host*, 2> hca_node_{};
  std::array<Route, 2> routes_;  ///< A to B, B to A
  std::array<std::unique_ptr<SimHost>, 2> host_;
  std::array<std::unique_ptr<Hca>, 2> hca_;
  std::array<Qp*, 2> qp_{};
  std::array<const HostParams*, 2> params_{};
};

}  // namespace hcasim::sim
