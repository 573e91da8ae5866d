#pragma once
/// \file The emulated HCA: memory regions, a completion queue, an RC queue pair and the send
/// engine that moves each WQE's data over SimGrid links (PCIe read at the sender, the IB link,
/// PCIe write at the receiver), then writes CQEs and raises MSI-X interrupts.
///
/// Timing (see DESIGN.md "Granularity"): one SimGrid communication per message over the route
/// [sender PCIe host->device, sender DMA-read tag limit, IB link, receiver PCIe device->host],
/// each link's bandwidth being the payload rate model/ computes for bulk DMA/IB traffic, so a
/// message takes bytes / bottleneck and concurrent traffic shares links max-min. The fixed
/// pipeline latencies (DMA read round trip, HCA processing, propagation, posted-write latency)
/// are added when the CQEs are written, so they overlap with the next message's data as they
/// do in a pipelined HCA.
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <simgrid/s4u.hpp>

#include "sdp/verbs.h"
#include "sim/kernel.h"

namespace hcasim::sim {

/// Fixed latencies of one HCA and its slot, ns (platform [pcie], [hca], [ib]).
struct HcaTiming {
  double mmio_write_ns = 0;       ///< CPU doorbell store reaching the HCA (posted MWr)
  double dma_read_rtt_ns = 0;     ///< MRd issued -> first CplD back (WQE fetch, gather)
  double posted_write_ns = 0;     ///< MWr issued -> visible in host memory (payload, CQE)
  double tx_processing_ns = 0;    ///< WQE parsing and packet build in the HCA
  double rx_processing_ns = 0;    ///< packet check and scatter setup in the HCA
  double propagation_ns = 0;      ///< one way on the IB link (cable, switch if any)
  double interrupt_latency_ns = 0;///< CQE written -> EQE + MSI-X -> handler starts on the CPU
};

class SimQp;

/// One host's HCA: owns the send engine and interrupt actors and the host's queue pairs.
class EmulatedHca {
 public:
  /// `node` is the SimGrid host standing for this HCA (routes start and end at it);
  /// `irq_core` takes the MSI-X interrupt of every CQ.
  /// An error inside the HCA's actors is reported to `failure`.
  EmulatedHca(SimHost& host, simgrid::s4u::Host* node, const HcaTiming& timing, Timer& timer,
              ActivityCounter& counter, Failure& failure, int irq_core);
  /// Creates an RC QP with its own CQ (send and receive completions), in RESET.
  SimQp& create_qp(uint32_t max_send_wr, uint32_t max_recv_wr, uint32_t cq_entries);
  /// Starts the send-engine and interrupt actors (daemons) on this HCA's node.
  void start();

  SimHost& host() { return host_; }
  simgrid::s4u::Host* node() { return node_; }
  const HcaTiming& timing() const { return timing_; }
  Timer& timer() { return timer_; }
  uint64_t interrupts() const { return interrupts_; }

  /// Wakes the send engine (a WQE was posted).
  void ring_doorbell();
  /// Queues the interrupt of `qp`'s CQ (called by the timer when the EQE is written).
  void raise_interrupt(SimQp* qp);

 private:
  friend class SimQp;
  void send_engine();
  void interrupt_handler();

  SimHost& host_;
  simgrid::s4u::Host* node_;
  HcaTiming timing_;
  Timer& timer_;
  ActivityCounter& counter_;
  Failure& failure_;
  int irq_core_;
  std::vector<std::unique_ptr<SimQp>> qps_;
  SimWaitQueue engine_wq_, irq_wq_;
  std::deque<SimQp*> pending_irqs_;
  uint64_t interrupts_ = 0;
  uint32_t next_qpn_ = 0x48;
};

/// An RC queue pair with its CQ, implementing the verbs interface over the emulated HCA.
class SimQp : public sdp::Verbs {
 public:
  enum class State { Reset, Init, Rtr, Rts, Error };

  SimQp(EmulatedHca& hca, uint32_t qpn, uint32_t max_send_wr, uint32_t max_recv_wr, uint32_t cq_entries);
  /// Connects two QPs (RESET -> INIT -> RTR -> RTS on both, as the CM does).
  static void connect(SimQp& a, SimQp& b);
  /// Called for every CQE written (wakes pollers) and for every completion event (the CQ's
  /// interrupt, in interrupt context).
  void set_handlers(std::function<void()> on_cqe, std::function<void()> on_event);

  State state() const { return state_; }

  // sdp::Verbs
  uint32_t reg_mr(sdp::Addr addr, uint64_t len, unsigned access) override;
  uint32_t dma_mr() override { return kDmaKey; }
  void post_send(const sdp::SendWr& wr) override;
  void post_recv(const sdp::RecvWr& wr) override;
  int poll_cq(std::span<sdp::Wc> out) override;
  bool req_notify_cq() override;
  uint32_t qp_num() const override { return qpn_; }
  uint32_t max_send_wr() const override { return max_send_wr_; }
  uint32_t max_recv_wr() const override { return max_recv_wr_; }

 private:
  friend class EmulatedHca;
  static constexpr uint32_t kDmaKey = 0x100;
  struct Mr {
    sdp::Addr addr;
    uint64_t len;
    unsigned access;
  };
  bool sge_ok(const sdp::Sge& s) const;
  void push_cqe(const sdp::Wc& wc);
  /// Executes the oldest send WQE (send-engine actor). Returns false when the SQ is empty.
  bool execute_one(bool after_idle);
  void to_error();

  EmulatedHca& hca_;
  uint32_t qpn_;
  uint32_t max_send_wr_, max_recv_wr_, cq_entries_;
  State state_ = State::Reset;
  SimQp* peer_ = nullptr;
  std::vector<Mr> mrs_;
  std::deque<sdp::SendWr> sq_;
  uint32_t sq_outstanding_ = 0;   // posted, completion not yet written
  std::deque<sdp::RecvWr> rq_;
  std::deque<sdp::Wc> cq_;
  bool armed_ = false;
  std::function<void()> on_cqe_, on_event_;
};

}  // namespace hcasim::sim
