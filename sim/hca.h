#pragma once
/// \file The simulated HCA: the HCA core's transport (hca/queue_pair.h: requester, responder,
/// completer) with simulated time and modelled transfers around it. What is not time (keys and
/// bounds, QP states and attributes, post checks, PSNs, ACK/NAK, RNR and go-back-N, CQ depth,
/// flush) is the core's, the same code the emulated HCA runs; this adds the doorbell and BlueFlame
/// timing of a post, the send engine that moves each train of packets over SimGrid links (PCIe
/// read at the sender, the IB link, PCIe write at the receiver), the latencies at which CQEs
/// become visible, the MSI-X interrupts, and the faults on the wire (hca/wire_faults.h).
///
/// Timing (docs/design.md "Granularity"): one transfer per message over the route [sender PCIe
/// host->device, sender DMA-read tag limit, IB link, receiver PCIe device->host], each link's
/// bandwidth being the payload rate model/ computes for bulk DMA/IB traffic, so a message takes
/// bytes / bottleneck and concurrent traffic shares links max-min. The message reaches the
/// responder when its last byte leaves the bottleneck; the fixed pipeline latencies (model/hca.h)
/// are added to its receive CQE and to its ACK's arrival at the requester, so they overlap with the
/// next message's data as they do in a pipelined HCA; the receiving HCA's packet store
/// (model::receive_store_ns) delays the data and its CQE, not the ACK. An RDMA READ's request flies for the
/// requester's transmit and the responder's receive processing and propagation; its response
/// crosses the responder's route. Without faults a message is one train: every packet on the path
/// MTU, handed to the responder at once.
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <simgrid/s4u.hpp>

#include "hca/cq.h"
#include "frontends/measure.h"
#include "hca/mr.h"
#include "hca/queue_pair.h"
#include "hca/stage.h"
#include "hca/wire_faults.h"
#include "model/fault.h"
#include "model/hca.h"
#include "model/interrupt.h"
#include "sdp/fifo.h"
#include "sdp/verbs.h"
#include "sim/kernel.h"

namespace hcasim::sim {

class Hca;
class Qp;

/// A shared receive queue (ibv_create_srq(3), IBA 10.2.9): receive WRs that every QP attached to
/// it (Qp::set_srq) consumes in the order posted, instead of a receive queue of its own; a QP that
/// finds it empty answers as with an empty receive queue (RC: RNR NAK, hca/responder.h). The
/// simulated HCA takes a receive WQE from it as from a QP's receive queue: no bus traffic or
/// time of its own (the receive WQE's read is not modelled for either; the HCA's work from a
/// packet to its scatter is hca.rx_processing). The SRQ limit event is not modelled.
class Srq {
 public:
  /// An SRQ of `max_wr` WRs (ibv_srq_init_attr.attr.max_wr, as the emulators give it: exactly) in
  /// `pd` of `hca`.
  Srq(Hca& hca, uint32_t pd, uint32_t max_wr) : hca_(hca), pd_(pd), max_wr_(max_wr) {}
  /// ibv_post_srq_recv(3) of `wr`, at the CPU's current time (its charged work slept off first).
  /// Throws sdp::VerbsError when max_wr WRs wait already (libmlx4 mlx4_post_srq_recv: ENOMEM)
  /// or `wr` has more SGEs than sdp::kMaxSge (EINVAL).
  void post_recv(const sdp::RecvWr& wr);
  /// The oldest WR into `out`; false when none waits.
  bool take(sdp::RecvWr& out);
  /// WRs posted and not yet taken.
  size_t posted() const { return q_.size(); }
  uint32_t max_wr() const { return max_wr_; }
  uint32_t pd() const { return pd_; }
  const Hca& hca() const { return hca_; }

 private:
  Hca& hca_;
  uint32_t pd_;
  uint32_t max_wr_;
  sdp::Fifo<sdp::RecvWr> q_;
};

/// The completion-event state of one CQ (ibv_req_notify_cq(3): armed for its next CQE) and its
/// event moderation, shared by every QP completing into the CQ: an arming is the CQ's, so the
/// next CQE of any of its QPs generates the one event.
struct CqArm {
  bool armed = false;
  model::EventModerator moderator{0, 0};
};

/// What an HCA did while measured (Hca::measure): its send engine's time on trains and the part
/// of it waiting for a WQE to reach the HCA, ns; trains moved; its stages' time taken (ns) and
/// jobs (hca/stage.h): WQE processing per QP (by QPN), the port's transmit and receive packets.
struct HcaBusy {
  double engine_ns = 0;
  double wqe_wait_ns = 0;
  uint64_t trains = 0;
  std::map<uint32_t, std::pair<double, uint64_t>> qp_wqe;  ///< QPN -> (ns, WQEs)
  double tx_port_ns = 0;
  uint64_t tx_packets = 0;
  double rx_port_ns = 0;
  uint64_t rx_packets = 0;
  /// As --explain takes it (seconds; the busiest QP's WQE processing).
  frontends::HcaUse use() const;
};

/// Where a train's payload is read from, for the backend that writes it (the core's payload
/// handle, hca/backend.h): the sender's memory and the buffers the train's bytes start in.
struct SimPayload {
  const sdp::HostMemory* mem = nullptr;
  std::array<sdp::Sge, sdp::kMaxSge> sg{};
  uint8_t num_sge = 0;
  uint64_t offset = 0;  ///< of the train's first byte in the buffers
};

/// One host's HCA: owns the PDs, MRs (hca::MrTable) and QPs, the send engine and interrupt
/// contexts.
class Hca {
 public:
  /// `irq` says which core takes the interrupt of every CQ (its affinity), MSI-X or INTx, and
  /// the CQs' event moderation. Errors inside the HCA's contexts are reported to `failure`.
  /// Its route to the peer (SimGrid's links) comes with set_route().
  /// `post` is how the CPU hands WQEs over (doorbell / BlueFlame, model/hca.h); `limits` are what
  /// its QPs check (the largest inline payload and message, the queue depths: hca.max_inline_data,
  /// hca.max_msg_size, hca.max_qp_wr).
  Hca(SimHost& host, const model::HcaTiming& timing, const model::PostConfig& post, const hca::DeviceLimits& limits,
      Timer& timer, Failure& failure, const model::IrqConfig& irq);
  ~Hca();

  /// ibv_alloc_pd: a new protection domain's handle.
  uint32_t alloc_pd();
  /// ibv_reg_mr in `pd`: [addr, addr+len) with the given access (sdp::Access). Returns the key
  /// (lkey = rkey, as mlx4). Throws VerbsError for an unknown PD, unallocated memory or a
  /// range wrapping past 2^64 (hca::MrTable::reg).
  uint32_t reg_mr(uint32_t pd, sdp::Addr addr, uint64_t len, unsigned access);
  /// A key covering all host memory for local access (ib_get_dma_mr) in `pd`.
  uint32_t dma_mr(uint32_t pd);
  /// Creates a QP of `type` (RC, UC or UD) in `pd` with its own CQ (send and receive completions),
  /// in RESET.
  Qp& create_qp(uint32_t pd, uint32_t max_send_wr, uint32_t max_recv_wr, uint32_t cq_entries,
                hca::QpType type = hca::QpType::Rc);
  /// Creates an RC QP in `pd`, in RESET, completing into the CQ of `cq_of` (an earlier QP of
  /// this HCA): ibv_create_qp(3) with another QP's send_cq and recv_cq. Polling either QP polls
  /// the one CQ, in the order its CQEs were written; a QP going to RESET removes its own CQEs
  /// only. The arming is the CQ's (req_notify_cq through either QP arms it for the next CQE of
  /// both); the event is delivered to the handler of the QP whose CQE raised it (set_handlers).
  Qp& create_qp_on_cq(uint32_t pd, uint32_t max_send_wr, uint32_t max_recv_wr, Qp& cq_of);
  /// ibv_create_srq(3) in `pd`: an SRQ of `max_wr` WRs, for QPs of this HCA (Qp::set_srq). Throws
  /// sdp::VerbsError for an unknown PD, or max_wr 0 or above hca.max_qp_wr (mlx4_ib's
  /// create_srq: EINVAL).
  Srq& create_srq(uint32_t pd, uint32_t max_wr);
  /// The route to the peer: its IB link, the payload rate of the route's bottleneck
  /// (bytes/s, TwoHostBed's path_rates) and its SimGrid links (`route`, which must outlive the
  /// HCA). A message occupies the route for the longer of bytes / bottleneck and
  /// model::message_link_time_ns (per-message headers and WQE traffic). `wire_Bps` and
  /// `drain_Bps` are the payload rates of the route's IB link and of the peer's DMA writes into
  /// its memory (B/s): the two sides of the peer HCA's packet store (model::receive_store_ns).
  void set_route(const model::ib::Config& ib, double bottleneck_Bps, double wire_Bps, double drain_Bps,
                 const Route& route);
  const Route& route() const { return *route_; }
  const model::ib::Config& ib() const { return ib_; }
  /// Faults on the packets of this HCA's QPs (model/fault.h) and the RC retry attributes of
  /// its QPs (retry_cnt, the local ACK timeout, rnr_retry: applied to every QP, existing and
  /// new). `side` (0 or 1) separates the fate streams of the two HCAs of a bed, whose QPNs
  /// coincide. Call before start(). Without it: no faults, RcRetry's defaults.
  void set_faults(const model::FaultConfig& faults, const model::RcRetry& retry, uint64_t side);
  const model::FaultConfig& faults() const { return faults_; }
  const model::RcRetry& rc_retry() const { return retry_; }
  /// What the faults did to the packets this HCA's QPs put on the wire (as requester: data, RDMA
  /// READ requests; as responder: ACKs, NAKs, RDMA READ responses), the retransmissions they made
  /// and the NAKs, timeouts and RNR NAKs that caused them.
  model::FaultStats fault_stats() const;
  /// The fate stream (FaultDraw's `stream`) of the packets QP `qpn` of this HCA sends as
  /// requester (`responder` false) or as responder.
  uint64_t fault_stream(uint32_t qpn, bool responder) const {
    return (side_ << 40) | (static_cast<uint64_t>(qpn) << 1) | (responder ? 1u : 0u);
  }
  /// Spawns the send-engine and interrupt contexts (daemons) on the Scheduler.
  void start();
  /// Adds the send engine's busy time from now on to `*busy` (nullptr: stops; the default). Off,
  /// it costs the engine one pointer test per train.
  void measure(HcaBusy* busy) { busy_ = busy; }
  /// Reports each step of the send engine to `sink` from now on (nullptr: none, the default;
  /// --trace): one pointer test per train when off.
  void set_trace(TraceSink* sink) { trace_ = sink; }

  SimHost& host() { return host_; }
  const model::HcaTiming& timing() const { return timing_; }
  const model::PostConfig& post_config() const { return post_; }
  const hca::DeviceLimits& limits() const { return limits_; }
  uint32_t max_inline_data() const { return limits_.max_inline_data; }
  uint64_t blueflame_posts() const { return blueflame_posts_; }
  uint64_t doorbell_posts() const { return doorbell_posts_; }
  Timer& timer() { return timer_; }
  /// model::receive_store_ns of a message of `bytes` this HCA sends over its route: how much
  /// later than the stream's end its data is in the peer's memory.
  double peer_store_ns(uint64_t bytes) const { return model::receive_store_ns(bytes, ib_.mtu, wire_Bps_, drain_Bps_); }
  uint64_t interrupts() const { return interrupts_; }
  /// True while an interrupt is raised and its handler has not yet taken it.
  bool interrupt_pending() const { return !pending_irqs_.empty(); }
  /// Takes the oldest raised interrupt now, in the calling context (which runs on the interrupt
  /// CPU), as the handler would: counts it and charges its entry, but does not call the QP's
  /// event handler; returns its QP, or nullptr when none is raised. For a bottom half that a hard
  /// interrupt preempts (Linux's NET_RX softirq runs on the CPU the interrupt takes).
  Qp* take_interrupt();

 private:
  friend class Qp;
  /// hca::MrTable::check, an all-memory MR asking the host's memory.
  hca::MrRefusal check_mr(uint32_t key, uint32_t pd, sdp::Addr addr, uint64_t len, unsigned need) const {
    return mrs_.check(key, pd, addr, len, need, [this](sdp::Addr a, uint64_t n) { return host_.memory().contains(a, n); });
  }
  /// The port's transmit scheduler takes `packets` packets offered at `at_ns`, hca.tx_packet_time
  /// each (hca::Stage): returns when it starts on them (>= at_ns) and counts them in the measured
  /// interval (HcaBusy::tx_port_ns, tx_packets).
  double take_tx_port(double at_ns, uint64_t packets);
  /// The same for the port's receive processing (hca.rx_packet_time; HcaBusy::rx_port_ns,
  /// rx_packets).
  double take_rx_port(double at_ns, uint64_t packets);
  /// `qp` has requests: marks its send queue for the send engine's round robin and wakes it.
  void ring_doorbell(const Qp& qp);
  /// The send engine's next QP in round-robin order from slot `from` among those marked by
  /// ring_doorbell whose requester is ready; a marked QP found not ready is unmarked. nullptr
  /// when none is. Every path that makes a requester ready kicks its backend (hca/backend.h
  /// QpBackend::kick), so the ready QPs are among the marked ones and the order is that of a
  /// scan over every QP, at a cost per WQE that does not grow with the number of QPs.
  /// A QP whose WQE processing unit is still busy (hca.qp_wqe_time) is passed over, keeping its
  /// mark; `wake_ns` is then set to the earliest time one of those is free (else left alone).
  Qp* next_ready(size_t from, size_t& slot, double& wake_ns);
  void raise_interrupt(Qp* qp);
  void send_engine();
  void interrupt_handler();

  SimHost& host_;
  model::HcaTiming timing_;
  model::PostConfig post_;
  hca::DeviceLimits limits_;
  uint64_t blueflame_posts_ = 0, doorbell_posts_ = 0;
  model::ib::Config ib_;
  double bottleneck_Bps_ = 0;
  double wire_Bps_ = 0, drain_Bps_ = 0;  // the peer's packet store (set_route)
  const Route* route_ = nullptr;
  Timer& timer_;
  Failure& failure_;
  model::IrqConfig irq_;
  static constexpr uint32_t kFirstQpn = 0x48;  ///< the first QPN (qps_[qpn - kFirstQpn])
  uint32_t next_qpn_ = kFirstQpn;
  hca::MrTable mrs_;
  std::vector<std::unique_ptr<Qp>> qps_;
  std::vector<std::unique_ptr<Srq>> srqs_;
  std::vector<uint64_t> doorbells_;  ///< one bit per qps_ slot: rung since the engine last found it idle
  SimWaitQueue engine_wq_, irq_wq_;
  sdp::Fifo<Qp*> pending_irqs_;
  uint64_t interrupts_ = 0;
  HcaBusy* busy_ = nullptr;  // measure()
  TraceSink* trace_ = nullptr;  // set_trace()
  double atomic_free_ns_ = 0;  // the atomic unit (hca.atomic) takes the next atomic from then on
  hca::Stage tx_port_, rx_port_;  // the port's packet processing (hca.tx_packet_time, rx_packet_time)
  model::FaultConfig faults_;
  model::RcRetry retry_;
  uint64_t side_ = 0;
};

/// An RC, UC or UD queue pair with its CQ, implementing the verbs interface over the simulated HCA.
/// A UD QP's datagrams go to its peer's QP (the bed's one other port: the address handle and
/// remote QPN a two-host bed's neighbour has) with the peer's Q_Key.
class Qp : public sdp::Verbs, public hca::QpBackend {
 public:
  using State = hca::QpState;

  /// A QP completing into `cq` (its own, or one it shares: Hca::create_qp_on_cq) armed through
  /// `arm` (the CQ's).
  Qp(Hca& hca, uint32_t pd, uint32_t qpn, uint32_t max_send_wr, uint32_t max_recv_wr, std::shared_ptr<hca::Cq> cq,
     std::shared_ptr<CqArm> arm, hca::QpType type);
  /// ibv_modify_qp to `next` with the attributes the transition requires from the QP's own
  /// (hca::QueuePair::modify_state); INIT->RTR needs a peer (connect). Throws VerbsError on a
  /// transition the core refuses.
  void modify(State next);
  /// Connects two QPs as the CM does: RESET -> INIT -> RTR -> RTS on both, each the other's peer
  /// (all remote access, PSNs from 0, the path MTU of the IB link, the HCA's retry attributes,
  /// `rd_atomic` RDMA READs and atomics each way: max_rd_atomic and max_dest_rd_atomic, 0 for each
  /// HCA's max_qp_rd_atom). Two UC QPs get remote write access, the address, path MTU and PSNs
  /// only (a UC send completes once its message has left).
  static void connect(Qp& a, Qp& b, uint8_t rd_atomic = 0);
  /// Brings two UD QPs to RTS as ipoib_init_qp does (Q_Key `qkey`, SQ PSN 0), each the other's
  /// destination.
  static void connect_ud(Qp& a, Qp& b, uint32_t qkey);
  /// Takes this QP's receives from `srq` (ibv_qp_init_attr.srq), not from post_recv. In RESET,
  /// `srq` of this HCA and of the QP's PD (ibv_create_qp(3): EINVAL otherwise), outliving the QP.
  /// Throws sdp::VerbsError otherwise.
  void set_srq(Srq& srq);
  /// Called for every CQE written (wakes pollers) and for every completion event (the CQ's
  /// interrupt, in interrupt context).
  void set_handlers(std::function<void()> on_cqe, std::function<void()> on_event);
  /// rnr_retry (0..7, 7 = retry for ever; this QP as requester) and min_rnr_timer (the IBA
  /// table 45 code of the RNR NAKs this QP sends as responder). IBA 10.2.4.3. Default: the HCA's
  /// RcRetry::rnr_retry and code 12 (0.64 ms, what perftest and the RDMA CM set).
  void set_rnr(uint8_t rnr_retry, uint8_t min_rnr_timer);
  static constexpr uint8_t kRnrRetryForever = hca::kRnrRetryForever;
  /// ibv_post_send(3) of `w` with its errno, as emu::Qp::post: 0, or hca::post_errno of the
  /// core's refusal (post_send throws instead). A UD WR goes to the peer as post_send's does,
  /// with the Q_Key it names (w.x.ud_qkey: wr.ud.remote_qkey, IBA 10.2.5), not the peer's.
  int post(const hca::SendWqe& w);
  /// ibv_modify_qp(3) with the attributes of `mask` (hca::attr bits) through the core's table
  /// (hca::QueuePair::modify): 0, or EINVAL with the QP unchanged. INIT -> RTR needs a peer
  /// (connect, or pair); to RESET empties the CQ, as modify(State) does.
  int modify(const hca::QpAttr& a, unsigned mask);
  /// Makes `a` and `b` each other's remote QP without moving their states (what the CM's REQ and
  /// REP tell each side), so that modify() can take them through RTR and RTS.
  static void pair(Qp& a, Qp& b);
  /// The attributes (ibv_query_qp(3)), the state among them.
  const hca::QpAttr& attr() const { return core_.attr(); }
  /// Called when an RDMA WRITE message into this QP's memory has landed whole (its last packet's
  /// data visible), once per message: perftest's latency loop polls on the last byte.
  void set_write_handler(std::function<void(sdp::Addr, uint64_t)> on_write);

  State state() const { return core_.state(); }
  hca::QpType type() const { return core_.type(); }
  /// Datagrams this UD QP dropped as responder: no receive WQE posted, or a Q_Key that does not
  /// match (IBA 9.8.3, 10.2.5).
  uint64_t datagrams_dropped() const { return core_.datagrams_dropped(); }

  // sdp::Verbs. A post is the core's (hca::QueuePair::post_send / post_recv): refused with
  // VerbsError (too many SGEs, not RTS, queue full, inline rules), or, in ERROR, completed at
  // once with WR_FLUSH_ERR.
  uint32_t reg_mr(sdp::Addr addr, uint64_t len, unsigned access) override;
  uint32_t dma_mr() override;
  void post_send(const sdp::SendWr& wr) override;
  void post_recv(const sdp::RecvWr& wr) override;
  int poll_cq(std::span<sdp::Wc> out) override;
  bool req_notify_cq() override;

  /// Gives this QP's send completions (SEND, RDMA WRITE and READ, atomics) a completion event of
  /// their own, as a QP created with send_cq apart from recv_cq (ibv_create_qp(3)) whose two CQs
  /// share one completion channel: each is armed on its own (req_notify_cq arms the receive
  /// side, req_notify_send_cq the send side) and raises one event per arming, with the HCA's
  /// event moderation each. The CQEs stay in one queue, in the order written: the poller sorts
  /// them by kind. Call before the first CQE; the QP must not share its CQ (create_qp_on_cq).
  void separate_send_cq_events();
  /// ibv_req_notify_cq(3) on the send side's CQ (after separate_send_cq_events): arms it for its
  /// next CQE. Returns whether a CQE was already queued (as req_notify_cq).
  bool req_notify_send_cq();
  /// After separate_send_cq_events, for each event the on_event handler got, in order: true when
  /// the send side's CQ raised it. Call once per event, from the handler.
  bool take_event_from_send_cq();
  uint32_t qp_num() const override { return qpn_; }
  uint32_t max_send_wr() const override { return core_.max_send_wr(); }
  uint32_t max_recv_wr() const override { return core_.max_recv_wr(); }

 private:
  friend class Hca;
  /// The core's verdict on `w` (a UD WR addressed to the peer's QP, with the Q_Key it names); an
  /// accepted WR is handed to the HCA (doorbell or BlueFlame).
  hca::PostCheck post_checked(hca::SendWqe& w);
  /// How a posted WR was handed to the HCA, kept for its first transmission (by WQE seq).
  struct PostInfo {
    uint64_t seq = 0;
    bool blueflame = false;    ///< copied by BlueFlame (else rung with a doorbell)
    double wqe_at_hca_ns = 0;  ///< the HCA holds the WQE (BlueFlame), or has fetched it after an idle doorbell
    model::PostTiming post;    ///< how it was posted (for its link bytes)
    bool waited = false;       ///< the engine waited for the WQE: its MMIO/fetch bytes already crossed the link
  };
  /// A response on its way to the requester (its fields of hca::Packet).
  struct InFlight {
    hca::Opcode op = hca::Opcode::RcAcknowledge;
    uint32_t psn = 0;
    uint8_t syndrome = 0;
    uint32_t msn = 0;
    uint64_t orig = 0;
  };

  // hca::QpBackend
  hca::MrRefusal check_mr(uint32_t key, uint32_t pd, sdp::Addr addr, uint64_t len, unsigned need) override {
    return hca_.check_mr(key, pd, addr, len, need);
  }
  void write(sdp::Addr dst, uint64_t len, const void* payload, uint64_t offset) override;
  void store(sdp::Addr dst, const void* src, uint64_t len) override;
  uint64_t atomic(sdp::Addr addr, bool compare_swap, uint64_t compare_add, uint64_t swap) override;
  bool complete(const hca::Cqe& c, bool recv) override;
  void kick() override;
  void ack_timer(bool run) override;
  void rnr_timer(double ns) override;
  void on_error(const std::string& why) override;
  bool take_srq_recv(sdp::RecvWr& out) override { return srq_ != nullptr && srq_->take(out); }

  /// model::post_timing for `shape`, remembered for the last shape posted: a stream posts the
  /// same shape over and over, and the result depends on nothing else (the HCA's PostConfig).
  const model::PostTiming& post_timing_of(const model::mlx4::WqeShape& shape);
  struct PostMemo {
    bool valid = false;
    model::mlx4::WqeShape shape;
    model::PostTiming timing;
  } post_memo_;
  /// The bytes of the one transfer a message of this shape occupies the route with
  /// (transfer_first), remembered for the last shape: every input of the computation.
  struct WireMemo {
    bool valid = false, inline_data = false, send = false, with_post = false, blueflame = false;
    uint64_t bytes = 0;
    uint32_t wqe_bytes = 0;
    double mmio_bus_ns = 0;
    uint64_t size = 0;
  } wire_memo_;
  /// Moves a message's first transmission across the route (one communication, sized so that
  /// alone it lasts the longer of its stream time and its busiest link's time with every header).
  void transfer_first(const hca::Packet& p, const PostInfo& pi);
  /// Writes the CQEs kept back (defer_cqes_) as visible at `at_ns` (0: now).
  void flush_deferred(double at_ns);
  /// Removes this QP's CQEs from its CQ (to RESET), keeping the others' in order.
  void clean_cq();
  /// Writes a CQE now: false when the CQ overran (hca/cq.h). `notify`: wake pollers and raise the
  /// completion event (a flush notifies once, in on_error).
  bool write_cqe(const hca::Cqe& c, bool notify);
  /// The CQ is armed and a CQE arrived: generate the event (EQE + interrupt) now or when the
  /// moderation window closes.
  void moderate_event(CqArm& arm);
  /// Raises `arm`'s event (disarms it) after `delay_ns`; `send_side`: the send CQ's
  /// (separate_send_cq_events), recorded for take_event_from_send_cq.
  void fire_event(CqArm& arm, double delay_ns);
  /// The arming a CQE of `wc` completes into: the send side's for a send completion after
  /// separate_send_cq_events, else the CQ's.
  CqArm& arm_of(const sdp::Wc& wc);
  /// The send engine's step: the requester's next train onto the wire (send-engine actor).
  void execute_one(bool after_idle);
  /// A SEND or RDMA WRITE train: through the faults to the responder, whose answers come back.
  void deliver(const hca::Packet& p);
  /// An RDMA READ request or an atomic: its flight, the responder, its response's transfer.
  void execute_read(const hca::Packet& p);
  /// Request packets `sub` reach this QP (as responder; the fault injector's arrive): payload
  /// `h` from `skip` bytes on; CQEs and an RDMA WRITE's data visible at `recv_done_ns`.
  void request_arrives(const hca::Packet& sub, bool corrupted, const SimPayload& h, uint64_t skip, double recv_done_ns);
  /// Response packets `sub` of this QP (as responder) reach requester `to` (the fault injector's
  /// arrive): a READ response or atomic ACK is received now, an ACK at `ack_at_ns`, a NAK at
  /// `nak_at_ns` (simulated ns); a corrupted one is dropped at the ICRC check.
  void response_arrives(Qp& to, const hca::Packet& sub, bool corrupted, const SimPayload& h, uint64_t skip,
                        double ack_at_ns, double nak_at_ns);
  /// Sends this QP's responses (as responder) to `to`: ACKs arrive at `ack_at_ns` (the send
  /// CQE's time), NAKs at `nak_at_ns` (simulated ns).
  void send_responses(Qp& to, double ack_at_ns, double nak_at_ns);
  /// One transfer of `bytes` from `from`'s HCA to its peer's over its route.
  static void wire(Qp& from, uint64_t bytes);
  void apply_faults();

  Hca& hca_;
  uint32_t pd_;
  uint32_t qpn_;
  std::shared_ptr<hca::Cq> cq_;
  hca::QueuePair core_;
  Qp* peer_ = nullptr;
  sdp::Fifo<PostInfo> posts_;
  bool posting_ = false;  // inside post_send: the doorbell waits until the WQE's timing is kept
  std::shared_ptr<CqArm> arm_;  // the CQ's arming, shared as cq_ is; its moderation from the HCA's IrqConfig
  std::unique_ptr<CqArm> send_arm_;  // separate_send_cq_events: the send side's CQ's arming
  std::deque<bool> event_sides_;     // separate_send_cq_events: per event raised, the send side's?
  Srq* srq_ = nullptr;          // set_srq
  std::optional<hca::WireFaults<SimPayload>> req_faults_, resp_faults_;
  hca::Stage wqe_unit_;  // the processing unit that owns this QP's WQEs (hca.qp_wqe_time)
  uint64_t icrc_drops_ = 0;
  /// A CQE the core writes during the current step becomes visible at this time (0: now).
  double cqe_at_ns_ = 0;
  /// A UD send's CQE is written once its datagram has left (IBA 9.8.3): kept here meanwhile.
  bool defer_cqes_ = false;
  std::vector<hca::Cqe> deferred_;
  /// An RDMA WRITE's data lands in memory at this time (the step delivering it), else 0.
  double landed_at_ns_ = 0;
  /// When the last request this QP received as responder is in memory (its CQE, its data), and
  /// the last RDMA READ response or atomic ACK it received as requester.
  double rx_visible_ns_ = 0, rsp_visible_ns_ = 0;
  /// The write being executed ends its RDMA WRITE message: the write handler is told of it.
  bool landed_ends_message_ = false;
  // the local ACK timer (one calendar event at a time; restarts move its deadline) and the RNR one
  double ack_deadline_ns_ = 0;
  bool ack_event_ = false;
  uint64_t rnr_gen_ = 0;
  std::function<void()> on_cqe_, on_event_;
  std::function<void(sdp::Addr, uint64_t)> on_write_;
};

}  // namespace hcasim::sim
