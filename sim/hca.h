#pragma once
/// \file The emulated HCA: protection domains, memory regions with lkey/rkey and bounds, a
/// completion queue per QP, RC queue pairs with their state machine, and the send engine that
/// moves each WQE's data over SimGrid links (PCIe read at the sender, the IB link, PCIe write
/// at the receiver), then writes CQEs and raises MSI-X interrupts.
///
/// Timing (docs/design.md "Granularity"): one SimGrid communication per message over the route
/// [sender PCIe host->device, sender DMA-read tag limit, IB link, receiver PCIe device->host],
/// each link's bandwidth being the payload rate model/ computes for bulk DMA/IB traffic, so a
/// message takes bytes / bottleneck and concurrent traffic shares links max-min. The fixed
/// pipeline latencies (model/hca.h) are added when the CQEs are written, so they overlap with
/// the next message's data as they do in a pipelined HCA.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <simgrid/s4u.hpp>

#include "model/fault.h"
#include "model/hca.h"
#include "model/interrupt.h"
#include "hca/cq.h"
#include "hca/mr.h"
#include "hca/qp.h"
#include "hca/rc.h"
#include "sdp/fifo.h"
#include "sdp/verbs.h"
#include "sim/kernel.h"

namespace hcasim::sim {

class SimQp;

/// One host's HCA: owns the PDs, MRs (hca::MrTable) and QPs, the send engine and interrupt
/// contexts. What is not time (keys, bounds, states, post checks, CQ depth, flush, retry
/// counting) is the HCA core's (hca/); this adds the timing and SimGrid's transfers.
class EmulatedHca {
 public:
  /// `irq` says which core takes the interrupt of every CQ (its affinity), MSI-X or INTx, and
  /// the CQs' event moderation. Errors inside the HCA's contexts are reported to `failure`.
  /// Its route to the peer (SimGrid's links) comes with set_route().
  /// `post` is how the CPU hands WQEs over (doorbell / BlueFlame, model/hca.h) and
  /// `max_inline_data` the largest inline payload a QP accepts, bytes.
  EmulatedHca(SimHost& host, const model::HcaTiming& timing, const model::PostConfig& post,
              uint32_t max_inline_data, Timer& timer, Failure& failure,
              const model::IrqConfig& irq);
  ~EmulatedHca();

  /// ibv_alloc_pd: a new protection domain's handle.
  uint32_t alloc_pd();
  /// ibv_reg_mr in `pd`: [addr, addr+len) with the given access (sdp::Access). Returns the key
  /// (lkey = rkey, as mlx4). Throws VerbsError for an unknown PD, unallocated memory or a
  /// range wrapping past 2^64 (hca::MrTable::reg).
  uint32_t reg_mr(uint32_t pd, sdp::Addr addr, uint64_t len, unsigned access);
  /// A key covering all host memory for local access (ib_get_dma_mr) in `pd`.
  uint32_t dma_mr(uint32_t pd);
  /// Creates an RC QP in `pd` with its own CQ (send and receive completions), in RESET.
  SimQp& create_qp(uint32_t pd, uint32_t max_send_wr, uint32_t max_recv_wr, uint32_t cq_entries);
  /// The route to the peer: its IB link, the payload rate of the route's bottleneck
  /// (bytes/s, TwoHostBed's path_rates) and its SimGrid links (`route`, which must outlive the
  /// HCA). A message occupies the route for the longer of bytes / bottleneck and
  /// model::message_link_time_ns (per-message headers and WQE traffic).
  void set_route(const model::ib::Config& ib, double bottleneck_Bps, const Route& route);
  const Route& route() const { return *route_; }
  /// Faults on the packets of this HCA's QPs (model/fault.h) and the RC retry attributes of
  /// its QPs (retry_cnt, the local ACK timeout, rnr_retry: applied to every QP, existing and
  /// new). `side` (0 or 1) separates the fate streams of the two HCAs of a bed, whose QPNs
  /// coincide. Call before start(). Without it: no faults, RcRetry's defaults.
  void set_faults(const model::FaultConfig& faults, const model::RcRetry& retry, uint64_t side);
  const model::FaultConfig& faults() const { return faults_; }
  const model::RcRetry& rc_retry() const { return retry_; }
  /// What the faults did to the packets this HCA put on the wire (as requester: data, RDMA
  /// READ requests; as responder: ACKs, NAKs, RDMA READ responses) and the retransmissions
  /// it made.
  const model::FaultStats& fault_stats() const { return fault_stats_; }
  /// The fate stream (FaultDraw's `stream`) of the packets QP `qpn` of this HCA sends as
  /// requester (`responder` false) or as responder.
  uint64_t fault_stream(uint32_t qpn, bool responder) const {
    return (side_ << 40) | (static_cast<uint64_t>(qpn) << 1) | (responder ? 1u : 0u);
  }
  /// Spawns the send-engine and interrupt contexts (daemons) on the Scheduler.
  void start();

  SimHost& host() { return host_; }
  const model::HcaTiming& timing() const { return timing_; }
  const model::PostConfig& post_config() const { return post_; }
  uint32_t max_inline_data() const { return max_inline_data_; }
  uint64_t blueflame_posts() const { return blueflame_posts_; }
  uint64_t doorbell_posts() const { return doorbell_posts_; }
  Timer& timer() { return timer_; }
  uint64_t interrupts() const { return interrupts_; }

 private:
  friend class SimQp;
  /// True when key names an MR of `pd` covering [addr, addr+len) with every access bit of
  /// `need` (local read needs none): hca::MrTable::allows, an all-memory MR asking the host's
  /// memory.
  bool mr_allows(uint32_t key, uint32_t pd, sdp::Addr addr, uint64_t len, unsigned need) const {
    return mrs_.allows(key, pd, addr, len, need, [this](sdp::Addr a, uint64_t n) { return host_.memory().contains(a, n); });
  }
  void ring_doorbell();
  void raise_interrupt(SimQp* qp);
  void send_engine();
  void interrupt_handler();

  SimHost& host_;
  model::HcaTiming timing_;
  model::PostConfig post_;
  uint32_t max_inline_data_;
  uint64_t blueflame_posts_ = 0, doorbell_posts_ = 0;
  model::ib::Config ib_;
  double bottleneck_Bps_ = 0;
  const Route* route_ = nullptr;
  Timer& timer_;
  Failure& failure_;
  model::IrqConfig irq_;
  uint32_t next_qpn_ = 0x48;
  hca::MrTable mrs_;
  std::vector<std::unique_ptr<SimQp>> qps_;
  SimWaitQueue engine_wq_, irq_wq_;
  sdp::Fifo<SimQp*> pending_irqs_;
  uint64_t interrupts_ = 0;
  model::FaultConfig faults_;
  model::RcRetry retry_;
  uint64_t side_ = 0;
  model::FaultStats fault_stats_;
};

/// An RC queue pair with its CQ, implementing the verbs interface over the emulated HCA.
class SimQp : public sdp::Verbs {
 public:
  /// ibv_qp_state, the RC subset (IBA 10.3.1): the core's.
  using State = hca::QpState;

  SimQp(EmulatedHca& hca, uint32_t pd, uint32_t qpn, uint32_t max_send_wr, uint32_t max_recv_wr, uint32_t cq_entries);
  /// ibv_modify_qp to `next`: hca::transition_allowed, and INIT->RTR needs a peer. Throws
  /// VerbsError on any other transition.
  void modify(State next);
  /// Connects two QPs as the CM does: RESET -> INIT -> RTR -> RTS on both.
  static void connect(SimQp& a, SimQp& b);
  /// Called for every CQE written (wakes pollers) and for every completion event (the CQ's
  /// interrupt, in interrupt context).
  void set_handlers(std::function<void()> on_cqe, std::function<void()> on_event);
  /// rnr_retry (0..7, 7 = retry for ever; this QP as requester) and min_rnr_timer (ns; how
  /// long a requester waits after this QP, as responder, answered RNR NAK). IBA 10.2.4.3.
  /// Default: the HCA's RcRetry::rnr_retry (7, for ever, unless set_faults said otherwise)
  /// and 0.64 ms (min_rnr_timer 12, IBA table 45, what perftest and the RDMA CM set).
  void set_rnr(uint8_t rnr_retry, double min_rnr_timer_ns);
  static constexpr uint8_t kRnrRetryForever = hca::kRnrRetryForever;
  /// Called when an RDMA WRITE from the peer has landed in this host's memory (its last byte
  /// visible to the CPU), with the target range: what a CPU polling that memory watches.
  void set_write_handler(std::function<void(sdp::Addr, uint64_t)> on_write);

  State state() const { return state_; }

  // sdp::Verbs. A post is checked by hca::check_post_send / check_post_recv: refused with
  // VerbsError (too many SGEs, not RTS, queue full, inline rules), or, in ERROR, completed at
  // once with WR_FLUSH_ERR.
  uint32_t reg_mr(sdp::Addr addr, uint64_t len, unsigned access) override;
  uint32_t dma_mr() override;
  void post_send(const sdp::SendWr& wr) override;
  void post_recv(const sdp::RecvWr& wr) override;
  int poll_cq(std::span<sdp::Wc> out) override;
  bool req_notify_cq() override;
  uint32_t qp_num() const override { return qpn_; }
  uint32_t max_send_wr() const override { return max_send_wr_; }
  uint32_t max_recv_wr() const override { return max_recv_wr_; }

 private:
  friend class EmulatedHca;
  /// A WR in the send queue and when its WQE reaches the HCA.
  struct Posted {
    sdp::SendWr wr;
    bool blueflame = false;    ///< copied by BlueFlame (else rung with a doorbell)
    double wqe_at_hca_ns = 0;  ///< the HCA holds the WQE (BlueFlame), or has fetched it after an idle doorbell
    model::PostTiming post;    ///< how it was posted (for its link bytes)
    bool waited = false;       ///< the engine waited for the WQE: its MMIO/fetch bytes already crossed the link
  };
  bool gather_ok(const sdp::SendWr& wr) const;
  /// model::post_timing for `shape`, remembered for the last shape posted: a stream posts the
  /// same shape over and over, and the result depends on nothing else (the HCA's PostConfig).
  const model::PostTiming& post_timing_of(const model::mlx4::WqeShape& shape);
  struct PostMemo {
    bool valid = false;
    model::mlx4::WqeShape shape;
    model::PostTiming timing;
  } post_memo_;
  /// The bytes of the one transfer a message of this shape occupies the route with
  /// (gather_and_transfer), remembered for the last shape: every input of the computation.
  struct WireMemo {
    bool valid = false, inline_data = false, send = false, with_post = false, blueflame = false;
    uint64_t bytes = 0;
    uint32_t wqe_bytes = 0;
    double mmio_bus_ns = 0;
    uint64_t size = 0;
  } wire_memo_;
  /// Checks the gather list (LocProtErr completion if bad) and moves the data across the
  /// path (one SimGrid communication). Returns false when the WR failed.
  bool gather_and_transfer(const Posted& p, sdp::Wc& swc);
  /// Writes the requester's CQE at at_ns when the WR is signaled.
  void complete(const sdp::SendWr& wr, const sdp::Wc& swc, double at_ns);
  void push_cqe(const sdp::Wc& wc);
  /// The CQ is armed and a CQE arrived: generate the event (EQE + interrupt) now or when the
  /// moderation window closes.
  void moderate_event();
  void fire_event(double delay_ns);
  void fail_wr(const sdp::Wc& wc, double at_ns);
  /// Completes the WR in flight with `status` now and moves the QP to ERROR (flushing the rest):
  /// transport retries exhausted (IBA 10.8.3), or flushed while it waited to retry.
  void fail_now(sdp::Wc wc, sdp::WcStatus status);
  /// Executes the oldest send WQE (send-engine actor).
  void execute_one(bool after_idle);
  void execute_send(const Posted& p);
  void execute_rdma_write(const Posted& p);
  void execute_rdma_read(const sdp::SendWr& wr);
  void to_error();
  /// A WR posted in ERROR: its WR_FLUSH_ERR completion now.
  void flush_posted(const sdp::Wc& wc);
  /// A post the core did not accept: throws VerbsError when refused, else flushes the WR
  /// (out of line and cold: the post path stays short).
  [[gnu::cold, gnu::noinline]] void refuse_or_flush(const hca::PostCheck& c, const sdp::SendWr& wr,
                                                    const hca::SendLimits& lim);
  [[gnu::cold, gnu::noinline]] void refuse_or_flush(const hca::PostCheck& c, const sdp::RecvWr& wr);
  /// Outcome of the fault recovery of one message.
  enum class Recovery { Delivered, RetryExceeded, Flushed };
  /// Go-back-N over a message of `bytes` that has just crossed the wire once: from this QP to
  /// its peer (the data of a SEND / RDMA WRITE), or from the peer to this QP
  /// (`read_response`). Draws each packet's fate; while the receiver dropped one (lost, bad
  /// ICRC, or overtaken), waits for the NAK (a later packet showed the gap) or the local ACK
  /// timeout (nothing came after it), then sends the packets from the first dropped one again.
  /// Every NAK or timeout counts one retry of the WR (`retries`).
  Recovery recover_data(uint64_t bytes, bool read_response, hca::RetryCounter& retries);
  /// The ACK ending a SEND / RDMA WRITE of `bytes`: when it is lost and no WR is posted behind
  /// it before the local ACK timer expires (whose ACK would cover it), sends the whole message
  /// again (duplicates the responder re-ACKs), and so on.
  Recovery recover_ack(uint64_t bytes, hca::RetryCounter& retries);
  /// The RDMA READ request packet: while it is lost, NAK or timeout, then sent again.
  Recovery recover_read_request(hca::RetryCounter& retries);
  /// True when `r` is Delivered; else returns false, having completed the WR `swc` with
  /// RETRY_EXC_ERR (the QP to ERROR) when retries ran out; a flushed WR has its WR_FLUSH_ERR
  /// from to_error already.
  bool recovered(Recovery r, const sdp::Wc& swc);
  /// Draws one packet's fate from `src`'s stream and counts it in `src`'s HCA.
  static model::Fate draw_fate(SimQp& src, bool responder);
  /// One transfer of `bytes` from `from`'s HCA to its peer's over its route.
  static void wire(SimQp& from, uint64_t bytes);
  /// Waits `ns` of simulated time.
  void wait_ns(double ns);
  /// Waits until a WR is queued on this send queue behind the one in flight, or `ns` pass (the
  /// local ACK timer; 0 = no timer, for ever), or the QP leaves RTS. True when a WR is queued.
  bool wait_next_wr(double ns);

  EmulatedHca& hca_;
  uint32_t pd_;
  uint32_t qpn_;
  uint32_t max_send_wr_, max_recv_wr_;
  State state_ = State::Reset;
  SimQp* peer_ = nullptr;
  sdp::Fifo<Posted> sq_;
  uint32_t sq_outstanding_ = 0;   // posted, completion not yet written
  sdp::Fifo<sdp::RecvWr> rq_;
  hca::Cq cq_;
  bool armed_ = false;
  model::EventModerator moderator_{0, 0};  // set from the HCA's IrqConfig
  uint8_t rnr_retry_ = 0;
  double min_rnr_timer_ns_ = hca::rnr_timer_ns(hca::kDefaultMinRnrTimer);
  std::optional<model::FaultDraw> draw_requester_, draw_responder_;
  /// The WQE the send engine is executing (taken off sq_), while its completion is undecided:
  /// to_error flushes it first, in send-queue order (IBA 10.3.1), and its execution then stops.
  const Posted* executing_ = nullptr;
  std::function<void()> on_cqe_, on_event_;
  std::function<void(sdp::Addr, uint64_t)> on_write_;
};

}  // namespace hcasim::sim
