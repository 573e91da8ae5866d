#include "sim/ipoib_sim.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>

#include <fmt/format.h>

#include "frontends/config_error.h"
#include "model/cpu.h"
#include "model/error.h"
#include "model/hca.h"
#include "model/ib.h"
#include "model/ipoib.h"
#include "sim/kernel.h"
#include "sim/testbed.h"

namespace hcasim::sim {

using model::KernelFn;

namespace {

// --- parameters -------------------------------------------------------------------------

/// What the IPoIB path reads of one host beyond a simulated host's parameters (HostParams):
/// the TCP/IP stack's costs, the IPoIB mode and its rings.
struct IpoibHost {
  model::NetstackCosts net;
  model::ipoib::Config ipoib;
  uint32_t send_ring = 0, recv_ring = 0;
};

IpoibHost read_ipoib_host(const model::Platform& p) {
  IpoibHost h;
  h.net = model::NetstackCosts::from_platform(p);
  h.ipoib.mode = model::ipoib::parse_mode(p.str("ipoib.mode"));  // one of the schema's choices
  h.ipoib.connected_mtu = p.u32("ipoib.connected_mtu");
  h.ipoib.tcp_timestamps = p.flag("socket.tcp_timestamps");
  h.send_ring = p.u32("ipoib.send_ring");
  h.recv_ring = p.u32("ipoib.recv_ring");
  p.check_used_in(model::ParamWhen::Ipoib);
  return h;
}

}  // namespace

void check_ipoib_parameters(const model::Platform& p) { (void)read_ipoib_host(p); }

namespace {

/// IPOIB_QKEY (Linux drivers/infiniband/ulp/ipoib/ipoib.h): the Q_Key of IPoIB's UD QPs.
constexpr uint32_t kIpoibQkey = 0x00000b1b;
/// IPOIB_NUM_WC (2.6.11 ipoib.h): the CQEs ipoib_ib_completion polls per ib_poll_cq call.
constexpr size_t kIpoibNumWc = 4;
using hca::kGrhBytes;

/// A packet on the wire: a TCP data segment or an ACK.
struct Packet {
  bool ack = false;
  uint64_t seq = 0;      ///< data: first byte's offset in the stream
  uint32_t len = 0;      ///< data: payload bytes
  uint64_t ack_seq = 0;  ///< ACK: next byte expected
  uint64_t window = 0;   ///< ACK: bytes the receiver can take beyond ack_seq
};

/// A completion the IPoIB CQ gave (one CQ for sends and receives, as 2005's IPoIB), on its way
/// to the softirq.
struct Cqe {
  bool send = false;     ///< send completion (else a packet received)
  uint32_t frame = 0;    ///< bytes of the IPoIB frame (for the DMA unmap)
  Packet packet;         ///< received packet
};

// --- one host's state ----------------------------------------------------------------------

struct Ctx {
  int core = 0;
};

struct Side {
  HostParams hp;                 ///< the simulated host (CPU, bus, HCA, link)
  IpoibHost p;                   ///< its TCP/IP stack and IPoIB
  SimHost* host = nullptr;       ///< the bed's
  Hca* hca = nullptr;
  Qp* qp = nullptr;              ///< IPoIB's QP: UD (datagram) or RC (connected)
  uint32_t lkey = 0;             ///< the DMA MR of the frames (ib_get_dma_mr)
  sdp::Addr send_buf = 0, recv_buf = 0;  ///< send_ring / recv_ring buffers of one frame each
  uint32_t send_slot = 0, recv_slot = 0;   ///< bytes of one buffer
  uint32_t next_send = 0;        ///< the send ring's next buffer
  double post_cpu_ns = 0;        ///< the doorbell's CPU cost, charged by the HCA model (Qp::post_send)
  std::vector<frontends::KernelProfile> prof;
  std::deque<Cqe> softirq;       ///< polled CQEs waiting for the softirq (netif_rx's backlog)
  bool in_irq = false;           ///< the interrupt CPU is in a hard interrupt or the softirq
  SimWaitQueue irq_idle;         ///< notified when it leaves them
  uint32_t tx_outstanding = 0;   ///< posted sends not yet completed (IPoIB's send ring)
  std::deque<Packet> qdisc;      ///< packets waiting for room in the send ring (the ACK side)
  // Socket state.
  bool owned = false;            ///< the application is inside send()/recv() (lock_sock)
  std::deque<Packet> backlog;    ///< packets softirq left for the owner (sk_add_backlog)
  std::deque<Packet> prequeue;   ///< packets softirq left for a sleeping reader (tcp_prequeue)
  bool reader_waiting = false;   ///< netserver sleeps in recv() (ucopy.task set)
  bool asleep = false;           ///< the application is on the socket's wait queue
  std::unique_ptr<SimWaitQueue> sock_wq;
};

class Stream {
 public:
  /// `ha`, `hb`: the hosts; `a`, `b`: their stacks. All must outlive the stream.
  Stream(const HostParams& ha, const HostParams& hb, const IpoibHost& a, const IpoibHost& b,
         const frontends::TcpStreamConfig& cfg, uint64_t sndbuf, uint64_t rcvbuf, uint64_t send_size,
         uint64_t recv_size, int lcpu, int rcpu);
  frontends::IpoibStreamResult run();

 private:
  /// A call of `fn` taking `ns` in the profile of the calling context's core, without charging
  /// the CPU (the HCA model charged it: the interrupt entry, the doorbell store).
  void profile(Side& s, const Ctx& c, KernelFn fn, double ns, double calls = 1) {
    auto& k = s.prof[static_cast<size_t>(c.core)];
    k.ns[static_cast<size_t>(fn)] += ns;
    k.calls[static_cast<size_t>(fn)] += calls;
  }
  // CPU accounting: time and a call of `fn` on the calling context's core.
  void charge(Side& s, const Ctx& c, KernelFn fn, double ns, double calls = 1) {
    s.host->charge(model::kernel_fn_activity(fn), ns);
    profile(s, c, fn, ns, calls);
  }
  /// SimHost::sleep / wake, counted as calls of schedule (their time is SimHost's Wakeup).
  void sleep(Side& s, const Ctx& c, const std::function<bool()>& ready) {
    s.host->flush();
    if (ready()) return;
    // The sleeper is on the wait queue whenever it checks and finds nothing (prepare_to_wait);
    // a wake takes it off (autoremove_wake_function), so later wakes find the queue empty.
    s.host->sleep(*s.sock_wq, [&] {
      const bool r = ready();
      s.asleep = !r;
      return r;
    });
    s.prof[static_cast<size_t>(c.core)].calls[static_cast<size_t>(KernelFn::Schedule)] += 1;
  }
  void wake(Side& s, const Ctx& c) {
    if (!s.asleep) return;  // nobody on the queue: wake_up costs next to nothing
    s.asleep = false;
    s.host->wake(*s.sock_wq);
    s.prof[static_cast<size_t>(c.core)].calls[static_cast<size_t>(KernelFn::Schedule)] += 1;
  }
  void csum(Side& s, const Ctx& c, uint64_t bytes, bool cold) {
    if (s.p.net.csum_offload) return;
    charge(s, c, KernelFn::DoCsum, s.p.net.csum_ns(bytes, cold));
  }
  void netfilter(Side& s, const Ctx& c, bool input, uint32_t tcp_bytes) {
    if (!s.p.net.netfilter) return;
    // Two hooks each way: PRE_ROUTING + LOCAL_IN, LOCAL_OUT + POST_ROUTING. Conntrack runs at
    // PRE_ROUTING and LOCAL_OUT; at PRE_ROUTING its tcp_error() verifies the TCP checksum over
    // the whole segment (ip_conntrack_proto_tcp.c), the first read of DMA-written data.
    charge(s, c, KernelFn::IptDoTable, 2 * s.p.net.nf_hook_ns, 2);
    charge(s, c, KernelFn::Conntrack, s.p.net.conntrack_ns);
    if (input) csum(s, c, tcp_bytes, /*cold=*/true);
  }
  uint32_t ip_bytes(const Packet& p) const { return header_bytes_ + (p.ack ? 0 : p.len); }
  uint32_t frame_bytes(const Packet& p) const { return ip_bytes(p) + model::ipoib::kEncapBytes; }
  static uint32_t rx_buffer_bytes(const Side& s) {
    // IPoIB receive buffers: the MTU plus the encapsulation header plus room for a GRH.
    return model::ipoib::interface_mtu(s.p.ipoib, s.hp.ib) + model::ipoib::kEncapBytes + kGrhBytes;
  }

  /// Sets up side i's IPoIB in its interrupt CPU's context: the DMA MR, the rings' buffers,
  /// the receive ring posted, the CQ armed (ipoib_ib_dev_open).
  void open(int i);
  /// Posts a packet from side `from` at the current time (its CPU work is done, but for the
  /// post's doorbell, which the HCA model charges): the frame is a SEND of the IPoIB QP, its
  /// TCP/IP header travels beside it (the direction's in-flight list). With the send ring full,
  /// it waits in the qdisc for a send completion.
  void transmit(int from, const Packet& p);
  /// The CQ's completion event, in the HCA's interrupt context on the interrupt CPU (the HCA
  /// has charged the interrupt's entry): the hard interrupt, then the NET_RX softirq on its exit.
  void irq_event(int side);
  /// An application on the interrupt CPU runs only when no interrupt or softirq work is
  /// pending there (they preempt it): waits for that, without CPU cost.
  void yield_to_irq(Side& s, const Ctx& c);
  /// The hard interrupt: re-arm the CQ, poll it dry, queue what was received for the softirq.
  void hard_irq(int side, const Ctx& c);
  /// The delayed-ACK timer's context (the timer softirq on the receiver's interrupt CPU).
  void delack_loop();
  /// The softirq's work for one packet received: IP input, netfilter, TCP.
  void handle_packet(int side, const Ctx& c, const Packet& p);
  /// TCP/IP output of one packet on side s (CPU only; the caller flushes, then transmits).
  void output_cost(Side& s, const Ctx& c, const Packet& p);
  /// Sender: transmit what the window, the send ring and the data allow (tcp_write_xmit).
  void push(const Ctx& c);
  /// Sender: an ACK processed by TCP (tcp_ack).
  void sender_ack(const Ctx& c, const Packet& p);
  /// Receiver: a data segment processed by TCP (tcp_rcv_established), in context c.
  void receiver_segment(const Ctx& c, const Packet& p, bool in_softirq);
  /// Receiver: the ACK of everything received, with the window offered now (updates rcv_wup,
  /// the advertised window and its right edge).
  Packet make_ack();
  /// Receiver: send an ACK now from context c.
  void send_ack(const Ctx& c);
  uint64_t receive_window() const;
  /// Send-buffer memory in use (sk_wmem_queued): unacknowledged bytes plus, per skb, the
  /// struct sk_buff and skb_shared_info Linux charges as truesize (~256 B on 2.6 ia64).
  uint64_t queued_bytes() const {
    const uint64_t bytes = write_seq_ - snd_una_;
    return bytes + (bytes + mss_ - 1) / mss_ * 256;
  }
  void netperf();
  void netserver();

  const frontends::TcpStreamConfig& cfg_;
  TwoHostBed bed_;
  std::array<Side, 2> side_;
  /// Per direction (by sending side): the TCP/IP headers of the frames posted and not yet
  /// received, in order (the IPoIB path moves byte counts, not bytes; each receive CQE's length
  /// is checked against its frame).
  std::array<std::deque<Packet>, 2> in_flight_;
  uint32_t mss_ = 0, header_bytes_ = 0;
  uint64_t sndbuf_, rcvbuf_, send_size_, recv_size_;
  int lcpu_, rcpu_;
  Ctx irq_ctx_[2];
  // Sender TCP state (bytes of the stream).
  uint64_t write_seq_ = 0, snd_nxt_ = 0, snd_una_ = 0, snd_wnd_right_ = 0;
  bool sending_done_ = false;
  // Receiver TCP state.
  uint64_t rcv_nxt_ = 0, rcv_wup_ = 0, rcv_adv_right_ = 0, rcv_wnd_ = 0, copied_ = 0;
  uint64_t rcv_queue_ = 0;  ///< bytes received and not yet read
  bool delack_armed_ = false, delack_due_ = false;
  int ring_dry_ = -1;  ///< the side whose receive ring ran dry (a datagram dropped), else -1
  SimWaitQueue delack_wq_;
  uint64_t segments_ = 0, acks_ = 0;
  double t_start_ = 0, t_end_ = 0;
  uint64_t sent_ = 0, send_calls_ = 0, recv_calls_ = 0;
};

Stream::Stream(const HostParams& ha, const HostParams& hb, const IpoibHost& a, const IpoibHost& b,
               const frontends::TcpStreamConfig& cfg, uint64_t sndbuf, uint64_t rcvbuf, uint64_t send_size,
               uint64_t recv_size, int lcpu, int rcpu)
    : cfg_(cfg),
      bed_(ha, hb, cfg.seed, sdp::DataMode::Reference, /*first_pair=*/false),
      sndbuf_(sndbuf),
      rcvbuf_(rcvbuf),
      send_size_(send_size),
      recv_size_(recv_size),
      lcpu_(lcpu),
      rcpu_(rcpu) {
  const std::array<const HostParams*, 2> hp{&ha, &hb};
  const std::array<const IpoibHost*, 2> p{&a, &b};
  for (size_t i = 0; i < 2; ++i) {
    Side& s = side_[i];
    s.hp = *hp[i];
    s.p = *p[i];
    s.host = &bed_.host(static_cast<int>(i));
    s.hca = &bed_.hca(static_cast<int>(i));
    s.prof.resize(static_cast<size_t>(s.hp.costs.cpus));
    for (int k = 0; k < s.hp.costs.cpus; ++k) s.prof[static_cast<size_t>(k)].core = k;
    s.sock_wq = std::make_unique<SimWaitQueue>();
    irq_ctx_[i].core = s.hp.irq.target_cpu();
    s.post_cpu_ns = model::post_timing(s.hp.post, {}).cpu_ns;  // ipoib_send: a SEND of one SGE (the skb's data)
  }
  // One CQ for sends and receives, sized for both rings (ipoib_transport_dev_init).
  const bool connected = a.ipoib.mode == model::ipoib::Mode::Connected;
  QpPairShape shape;
  shape.type = connected ? hca::QpType::Rc : hca::QpType::Ud;
  shape.qkey = kIpoibQkey;
  shape.max_send_wr = std::max(a.send_ring, b.send_ring);
  shape.max_recv_wr = std::max(a.recv_ring, b.recv_ring);
  shape.cq_entries = shape.max_send_wr + shape.max_recv_wr;
  std::tie(side_[0].qp, side_[1].qp) = bed_.add_qp_pair(shape);
  mss_ = std::min(model::ipoib::tcp_mss(a.ipoib, ha.ib), model::ipoib::tcp_mss(b.ipoib, hb.ib));
  header_bytes_ = model::ipoib::kIpTcpHeaderBytes + (a.ipoib.tcp_timestamps ? model::ipoib::kTcpTimestampBytes : 0);
  rcv_wnd_ = rcv_adv_right_ = snd_wnd_right_ = receive_window();
}

uint64_t Stream::receive_window() const {
  const uint64_t space = model::tcp_window_from_space(rcvbuf_);
  const uint64_t free = space > rcv_queue_ ? space - rcv_queue_ : 0;
  return free / mss_ * mss_;  // Linux offers whole segments (tcp_select_window rounds to MSS)
}

void Stream::open(int i) {
  Side& s = side_[static_cast<size_t>(i)];
  s.host->bind_current(irq_ctx_[i].core);
  s.lkey = s.qp->dma_mr();
  s.send_slot = model::ipoib::interface_mtu(s.p.ipoib, s.hp.ib) + model::ipoib::kEncapBytes;
  s.recv_slot = rx_buffer_bytes(s);
  auto& mem = s.host->memory();
  s.send_buf = mem.allocate(static_cast<uint64_t>(s.send_slot) * s.p.send_ring, sdp::DataMode::Reference);
  s.recv_buf = mem.allocate(static_cast<uint64_t>(s.recv_slot) * s.p.recv_ring, sdp::DataMode::Reference);
  s.qp->set_handlers(nullptr, [this, i] { irq_event(i); });
  for (uint32_t k = 0; k < s.p.recv_ring; ++k) {
    sdp::RecvWr w;
    w.wr_id = k;
    w.sg[0] = {s.recv_buf + static_cast<uint64_t>(k) * s.recv_slot, s.recv_slot, s.lkey};
    w.num_sge = 1;
    s.qp->post_recv(w);
  }
  s.qp->req_notify_cq();
}

void Stream::transmit(int from, const Packet& p) {
  Side& s = side_[static_cast<size_t>(from)];
  if (s.tx_outstanding >= s.p.send_ring) {  // netif_stop_queue: the packet waits in the qdisc
    s.qdisc.push_back(p);
    return;
  }
  const uint32_t frame = frame_bytes(p);
  sdp::SendWr wr;
  wr.wr_id = frame;  // what the send completion unmaps
  wr.opcode = sdp::WrOpcode::Send;
  wr.sg[0] = {s.send_buf + static_cast<uint64_t>(s.next_send) * s.send_slot, frame, s.lkey};
  wr.num_sge = 1;
  s.next_send = (s.next_send + 1) % s.p.send_ring;
  in_flight_[static_cast<size_t>(from)].push_back(p);
  ++s.tx_outstanding;
  s.qp->post_send(wr);
  // A datagram the peer dropped (its receive ring empty) would need TCP's retransmission, which
  // this path does not model: the run fails rather than stall.
  if (side_[static_cast<size_t>(1 - from)].qp->datagrams_dropped() > 0) {
    ring_dry_ = 1 - from;
    throw std::runtime_error("a receive ring ran dry");  // ends the run; run() says why
  }
}

void Stream::irq_event(int i) {
  Side& s = side_[static_cast<size_t>(i)];
  const Ctx& c = irq_ctx_[i];
  const double entry_ns = s.hp.irq.handler_ns(s.hp.costs.interrupt_ns);
  s.in_irq = true;
  profile(s, c, KernelFn::Interrupt, entry_ns);
  hard_irq(i, c);
  // The NET_RX softirq on irq exit: the packets netif_rx queued, one at a time; an
  // interrupt that comes meanwhile runs first (hard interrupts preempt softirqs).
  bool restart_tx = false;
  while (!s.softirq.empty()) {
    while (s.hca->take_interrupt() != nullptr) {
      profile(s, c, KernelFn::Interrupt, entry_ns);
      hard_irq(i, c);
    }
    const Cqe cqe = s.softirq.front();
    s.softirq.pop_front();
    if (cqe.send) {
      restart_tx = true;
      continue;
    }
    handle_packet(i, c, cqe.packet);
    s.host->flush();
  }
  // NET_TX: a queue stopped on a full send ring restarts once completions freed slots.
  if (restart_tx) {
    while (!s.qdisc.empty() && s.tx_outstanding < s.p.send_ring) {
      const Packet p = s.qdisc.front();
      s.qdisc.pop_front();
      transmit(i, p);
    }
    if (i == 0) push(c);
  }
  s.host->flush();
  s.in_irq = false;
  s.irq_idle.notify_all();
}

void Stream::yield_to_irq(Side& s, const Ctx& c) {
  if (c.core != s.hp.irq.target_cpu()) return;
  s.host->flush();
  yield_rounds(2);
  while (s.in_irq || s.hca->interrupt_pending()) {
    s.irq_idle.wait();
  }
  yield_rounds(1);
}

void Stream::hard_irq(int i, const Ctx& c) {
  Side& s = side_[static_cast<size_t>(i)];
  std::deque<Packet>& arriving = in_flight_[static_cast<size_t>(1 - i)];
  const bool ud = s.qp->type() == hca::QpType::Ud;
  // ipoib_ib_completion (2.6.11 ipoib_ib.c): re-arm the CQ first, then poll batches of
  // IPOIB_NUM_WC until one comes back short; each CQE: a send's unmapped and freed, a receive's
  // unmapped, a new buffer allocated, mapped and posted, netif_rx. A CQE that arrives after the
  // re-arm raises another interrupt, though this loop may poll it first.
  s.qp->req_notify_cq();
  std::array<sdp::Wc, kIpoibNumWc> wc;
  int n = 0;
  do {
    n = s.qp->poll_cq(wc);
    for (int k = 0; k < n; ++k) {
      const sdp::Wc& w = wc[static_cast<size_t>(k)];
      if (w.status != sdp::WcStatus::Success)
        throw std::runtime_error(fmt::format("IPoIB {} completion with status {}",
                                             w.opcode == sdp::WcOpcode::Send ? "send" : "receive",
                                             sdp::wc_status_str(w.status)));
      charge(s, c, KernelFn::IpoibCompletion, s.p.net.ipoib_cqe_ns);
      if (w.opcode == sdp::WcOpcode::Send) {
        const auto frame = static_cast<uint32_t>(w.wr_id);
        charge(s, c, KernelFn::DmaMap, 0.5 * s.p.net.dma_map_ns(frame));
        --s.tx_outstanding;
        s.softirq.push_back(Cqe{true, frame, Packet{}});
        continue;
      }
      if (arriving.empty()) throw std::logic_error("IPoIB: a frame received that was never sent");
      const Packet p = arriving.front();
      arriving.pop_front();
      const uint32_t frame = frame_bytes(p);
      if (w.byte_len != frame + (ud ? kGrhBytes : 0))
        throw std::logic_error(fmt::format("IPoIB: a receive of {} B where the frame sent has {} B", w.byte_len, frame));
      charge(s, c, KernelFn::DmaMap, s.p.net.dma_map_ns(rx_buffer_bytes(s)));
      // The new buffer's post (ipoib_ib_post_receive posts one WR; the buffer is the ring's slot).
      sdp::RecvWr r;
      r.wr_id = w.wr_id;
      r.sg[0] = {s.recv_buf + w.wr_id * s.recv_slot, s.recv_slot, s.lkey};
      r.num_sge = 1;
      s.qp->post_recv(r);
      s.softirq.push_back(Cqe{false, frame, p});
    }
  } while (n == static_cast<int>(kIpoibNumWc));
  s.host->flush();
}

void Stream::delack_loop() {
  Side& s = side_[1];
  const Ctx& c = irq_ctx_[1];
  s.host->bind_current(c.core);
  for (;;) {
    while (!delack_due_) delack_wq_.wait();
    delack_due_ = false;
    if (rcv_nxt_ > rcv_wup_) send_ack(c);
  }
}

void Stream::handle_packet(int i, const Ctx& c, const Packet& p) {
  Side& s = side_[static_cast<size_t>(i)];
  // The IP input path (netif_receive_skb .. ip_local_deliver_finish) with ip_fast_csum over
  // the IP header.
  charge(s, c, KernelFn::TcpReceive, s.p.net.rx_packet_ns);
  csum(s, c, 20, /*cold=*/true);
  const uint32_t tcp_bytes = header_bytes_ - 20 + (p.ack ? 0 : p.len);
  netfilter(s, c, /*input=*/true, tcp_bytes);
  if (i == 0) {
    // The sender gets ACKs: tcp_v4_rcv checks the short segment's checksum at once.
    csum(s, c, tcp_bytes, false);
    if (s.owned) {
      s.backlog.push_back(p);
      return;
    }
    sender_ack(c, p);
    return;
  }
  // The receiver gets data.
  if (s.owned) {
    s.backlog.push_back(p);
  } else if (s.reader_waiting) {
    s.prequeue.push_back(p);
    if (s.prequeue.size() == 1) {
      s.reader_waiting = false;
      wake(s, c);
    }
  } else {
    receiver_segment(c, p, /*in_softirq=*/true);
  }
}

void Stream::output_cost(Side& s, const Ctx& c, const Packet& p) {
  charge(s, c, KernelFn::TcpTransmit, s.p.net.tx_packet_ns);
  csum(s, c, header_bytes_ - 20, false);  // tcp_v4_send_check: the TCP header (payload summed at copy)
  csum(s, c, 20, false);                  // ip_send_check
  netfilter(s, c, /*input=*/false, 0);
  charge(s, c, KernelFn::DmaMap, 0.5 * s.p.net.dma_map_ns(frame_bytes(p)));
  // netstack.ipoib_post includes the doorbell store, which the HCA model charges with the post
  // (Qp::post_send): the CPU is charged the rest, the profile the whole.
  s.host->charge(model::kernel_fn_activity(KernelFn::IpoibXmit), s.p.net.ipoib_post_ns - s.post_cpu_ns);
  profile(s, c, KernelFn::IpoibXmit, s.p.net.ipoib_post_ns);
}

void Stream::push(const Ctx& c) {
  Side& s = side_[0];
  for (;;) {
    const uint64_t unsent = write_seq_ - snd_nxt_;
    if (unsent == 0) return;
    // Nagle: a short segment goes only when nothing is in flight or the stream ends.
    if (unsent < mss_ && !(sending_done_ || snd_nxt_ == snd_una_)) return;
    const auto len = static_cast<uint32_t>(std::min<uint64_t>(unsent, mss_));
    if (snd_nxt_ + len > snd_wnd_right_) return;      // the peer's window
    if (s.tx_outstanding >= s.p.send_ring) return;    // netif_stop_queue: the ring is full
    Packet p;
    p.seq = snd_nxt_;
    p.len = len;
    snd_nxt_ += len;
    ++segments_;
    output_cost(s, c, p);
    charge(s, c, KernelFn::Other, s.p.net.other_segment_ns);
    s.host->flush();
    transmit(0, p);
  }
}

void Stream::sender_ack(const Ctx& c, const Packet& p) {
  Side& s = side_[0];
  charge(s, c, KernelFn::TcpReceive, s.p.net.rx_tcp_ns);
  charge(s, c, KernelFn::TcpAck, s.p.net.ack_rx_ns);
  if (p.ack_seq > snd_una_) snd_una_ = p.ack_seq;
  snd_wnd_right_ = std::max(snd_wnd_right_, p.ack_seq + p.window);
  // sk_stream_write_space (net/core/stream.c): wake the writer once the free space is at
  // least half of what is queued (sk_stream_wspace >= sk_stream_min_wspace).
  const uint64_t queued = queued_bytes();
  if (sndbuf_ >= queued && sndbuf_ - queued >= queued / 2) wake(s, c);
  push(c);
}

void Stream::receiver_segment(const Ctx& c, const Packet& p, bool in_softirq) {
  Side& s = side_[1];
  charge(s, c, KernelFn::TcpReceive, s.p.net.rx_tcp_ns);
  // TCP's checksum of the segment: cold unless conntrack has just read it.
  csum(s, c, header_bytes_ - 20 + p.len, !s.p.net.netfilter);
  charge(s, c, KernelFn::Other, s.p.net.other_segment_ns);
  rcv_nxt_ += p.len;
  rcv_queue_ += p.len;
  // __tcp_ack_snd_check: more than one full segment unacknowledged and the window offered now
  // is no smaller than the last one advertised (a receiver whose queue grows, because its
  // reader lags, does not ACK from here: its reader's recv() will); else the delayed-ACK timer.
  if (rcv_nxt_ - rcv_wup_ > mss_ && receive_window() >= rcv_wnd_) {
    send_ack(c);
  } else if (!delack_armed_) {
    delack_armed_ = true;
    bed_.timer().at(sim::now_ns() + 40e6, [this] {
      // The timer's ACK (rare: only a stream's tail waits 40 ms) goes from the timer softirq.
      delack_armed_ = false;
      delack_due_ = true;
      delack_wq_.notify_all();
    });
  }
  if (in_softirq) wake(s, c);
}

Packet Stream::make_ack() {
  Packet a;
  a.ack = true;
  a.ack_seq = rcv_nxt_;
  a.window = receive_window();
  rcv_wup_ = rcv_nxt_;
  rcv_wnd_ = a.window;
  rcv_adv_right_ = std::max(rcv_adv_right_, a.ack_seq + a.window);
  ++acks_;
  return a;
}

void Stream::send_ack(const Ctx& c) {
  Side& s = side_[1];
  const Packet a = make_ack();
  output_cost(s, c, a);
  s.host->flush();
  transmit(1, a);
}

void Stream::netperf() {
  Side& s = side_[0];
  const Ctx c{lcpu_};
  s.host->bind_current(c.core);
  for (auto& side : side_) {
    side.host->reset_accounts();
    for (auto& k : side.prof) k.ns.fill(0), k.calls.fill(0);
  }
  t_start_ = sim::now_ns();
  const double stop = t_start_ + cfg_.length_s * 1e9;
  uint64_t fill = 0;  // bytes in the tail skb
  while (cfg_.length_bytes ? sent_ < cfg_.length_bytes : sim::now_ns() < stop) {
    const uint64_t len = cfg_.length_bytes ? std::min(send_size_, cfg_.length_bytes - sent_) : send_size_;
    yield_to_irq(s, c);
    ++send_calls_;
    charge(s, c, KernelFn::TcpSendmsg, s.p.net.send_call_ns);
    s.owned = true;
    uint64_t left = len;
    while (left > 0) {
      auto queued = [&] { return queued_bytes(); };
      if (queued() + std::min<uint64_t>(left, mss_) > sndbuf_) {
        // sk_stream_wait_memory: release the socket (its backlog runs), sleep for room.
        while (!s.backlog.empty()) {
          const Packet p = s.backlog.front();
          s.backlog.pop_front();
          sender_ack(c, p);
        }
        s.owned = false;
        sleep(s, c, [&] { return queued() + std::min<uint64_t>(left, mss_) <= sndbuf_; });
        yield_to_irq(s, c);
        s.owned = true;
        continue;
      }
      const uint64_t chunk = std::min<uint64_t>(left, mss_ - fill);
      // csum_and_copy_from_user: netperf's send ring stays in the cache.
      charge(s, c, KernelFn::CopyUser, s.p.net.copy_ns(chunk));
      csum(s, c, chunk, false);
      write_seq_ += chunk;
      left -= chunk;
      fill = (fill + chunk) % mss_;
      if (fill == 0) push(c);
    }
    sent_ += len;
    // release_sock: the backlog's ACKs are processed by the sender itself.
    while (!s.backlog.empty()) {
      const Packet p = s.backlog.front();
      s.backlog.pop_front();
      sender_ack(c, p);
    }
    s.owned = false;
    push(c);
    s.host->flush();
  }
  sending_done_ = true;
  push(c);
  s.host->flush();
  side_[1].host->notify(*side_[1].sock_wq);  // the FIN: a reader with nothing left to read returns
}

void Stream::netserver() {
  Side& s = side_[1];
  const Ctx c{rcpu_};
  s.host->bind_current(c.core);
  const uint64_t total_target = cfg_.length_bytes;
  for (;;) {
    yield_to_irq(s, c);
    ++recv_calls_;
    charge(s, c, KernelFn::TcpRecvmsg, s.p.net.recv_call_ns);
    s.owned = true;
    auto drain = [&](std::deque<Packet>& q) {
      while (!q.empty()) {
        const Packet p = q.front();
        q.pop_front();
        receiver_segment(c, p, false);
      }
    };
    drain(s.backlog);
    while (rcv_queue_ == 0) {
      if (sending_done_ && copied_ == write_seq_) break;
      // Sleep in sk_wait_data with ucopy.task set: softirq prequeues for us.
      s.owned = false;
      s.reader_waiting = true;
      sleep(s, c, [&] { return !s.prequeue.empty() || rcv_queue_ > 0 || (sending_done_ && copied_ == write_seq_); });
      yield_to_irq(s, c);
      s.reader_waiting = false;
      s.owned = true;
      drain(s.prequeue);
      drain(s.backlog);
    }
    if (rcv_queue_ == 0) break;  // the stream ended
    const uint64_t n = std::min(rcv_queue_, recv_size_);
    // skb_copy_datagram_iovec: one __copy_user per skb (segment) copied.
    charge(s, c, KernelFn::CopyUser, s.p.net.copy_ns(n) + s.p.net.copy_call_ns * static_cast<double>((n - 1) / mss_),
           static_cast<double>((n + mss_ - 1) / mss_));
    rcv_queue_ -= n;
    copied_ += n;
    // tcp_cleanup_rbuf (tcp.c): ACK now when more than a segment is unacknowledged, or when the
    // window the reader opened is at least twice what is left of the advertised one and that
    // is at most half the largest window.
    const uint64_t now_left = rcv_adv_right_ > rcv_nxt_ ? rcv_adv_right_ - rcv_nxt_ : 0;
    if (rcv_nxt_ - rcv_wup_ > mss_ ||
        (2 * now_left <= model::tcp_window_from_space(rcvbuf_) && receive_window() >= 2 * std::max<uint64_t>(now_left, 1)))
      send_ack(c);
    drain(s.backlog);  // release_sock
    s.owned = false;
    s.host->flush();
    if (total_target && copied_ >= total_target) break;
  }
  t_end_ = sim::now_ns();
}

frontends::IpoibStreamResult Stream::run() {
  const auto wall0 = std::chrono::steady_clock::now();
  Scheduler& s = bed_.scheduler();
  Failure& f = bed_.failure();
  for (int i = 0; i < 2; ++i)
    s.spawn(i == 0 ? "ipoib-open-A" : "ipoib-open-B", [this, i, &f] { f.guard("ipoib open", [this, i] { open(i); }); });
  s.spawn("netserver", [this, &f] { f.guard("netserver", [this] { netserver(); }); });
  s.spawn("netperf", [this, &f] { f.guard("netperf", [this] { netperf(); }); });
  s.spawn("delack-B", [this, &f] { f.guard("delayed ACK timer", [this] { delack_loop(); }); }, true);
  const double limit_s =
      cfg_.length_bytes ? 60 + static_cast<double>(cfg_.length_bytes) * 8 / 1e7 : 2 * cfg_.length_s + 10;
  bed_.run(limit_s);
  if (ring_dry_ >= 0) {
    const Side& d = side_[static_cast<size_t>(ring_dry_)];
    throw InputError(fmt::format("ipoib.recv_ring: the {} host's ring of {} buffers ran dry and a datagram was dropped; "
                                 "packet loss and TCP's retransmission are not modelled: give a larger ring",
                                 ring_dry_ == 0 ? "local" : "remote", d.p.recv_ring));
  }
  if (f.failed()) throw std::runtime_error(f.message());
  if (t_end_ <= t_start_) throw std::runtime_error("simulation ended before the test finished");

  frontends::IpoibStreamResult out;
  frontends::TcpStreamResult& r = out.stream;
  r.local_send_socket = sndbuf_;
  r.remote_recv_socket = rcvbuf_;
  r.send_size = send_size_;
  r.recv_size = recv_size_;
  r.elapsed_s = (t_end_ - t_start_) * 1e-9;
  r.bytes_sent = sent_;
  r.bytes_received = copied_;
  r.send_calls = send_calls_;
  r.recv_calls = recv_calls_;
  r.local_cpus = side_[0].hp.costs.cpus;
  r.remote_cpus = side_[1].hp.costs.cpus;
  r.data_verified = copied_ == sent_;
  if (!r.data_verified)
    throw std::runtime_error(fmt::format("stream check failed: sent {} B, received {} B", sent_, copied_));
  const double elapsed_ns = t_end_ - t_start_;
  for (size_t i = 0; i < 2; ++i) {
    auto acc = side_[i].host->accounts();
    auto& prof = side_[i].prof;
    for (size_t k = 0; k < acc.size(); ++k) {
      // The timer tick, as in the SDP path; it shows in the utilisation, not in the profile.
      double& timer = acc[k].busy_ns[static_cast<size_t>(model::Activity::Timer)];
      timer += side_[i].hp.costs.timer_hz * r.elapsed_s * side_[i].hp.costs.timer_tick_ns;
      timer -= std::min(timer, std::max(0.0, acc[k].total_ns() - elapsed_ns));
      prof[k].ns[static_cast<size_t>(KernelFn::Schedule)] = acc[k].busy_ns[static_cast<size_t>(model::Activity::Wakeup)];
    }
    (i == 0 ? r.local_util_pct : r.remote_util_pct) = model::utilisation_pct(acc, elapsed_ns);
    std::vector<frontends::CoreProfile> cp;
    for (size_t k = 0; k < acc.size(); ++k) {
      frontends::CoreProfile p;
      p.core = static_cast<int>(k);
      for (size_t a = 0; a < model::kActivityCount; ++a)
        p.busy_ns.emplace_back(std::string(model::activity_name(static_cast<model::Activity>(a))), acc[k].busy_ns[a]);
      cp.push_back(std::move(p));
    }
    (i == 0 ? r.local_profile : r.remote_profile) = std::move(cp);
  }
  out.local_kernel = side_[0].prof;
  out.remote_kernel = side_[1].prof;
  out.mss = mss_;
  out.segments = segments_;
  out.acks = acks_;
  out.local_interrupts = side_[0].hca->interrupts();
  out.remote_interrupts = side_[1].hca->interrupts();
  r.simgrid_activities = bed_.stats().activities();
  r.simgrid_time_steps = bed_.stats().time_steps;
  bed_.scheduler().stats().copy_to(r);
  r.max_rss_kb = max_rss_kb();
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return out;
}

}  // namespace

frontends::IpoibStreamResult run_ipoib_stream(const model::Platform& local, const model::Platform& remote,
                                   const frontends::TcpStreamConfig& cfg) {
  // A precondition on the config: the front end rejects -l 0 in its own words (frontends/netperf_cli.cpp).
  if (cfg.length_bytes == 0 && !(cfg.length_s > 0)) throw InputError(fmt::format("TcpStreamConfig: length_s {} must be > 0 when length_bytes is 0", cfg.length_s));
  if (cfg.verify_data)
    throw InputError("TcpStreamConfig: verify_data is set, but the IPoIB path moves byte counts, not bytes");
  if (cfg.faults.any())
    throw InputError("TcpStreamConfig: faults are set, but faults on the wire are modelled for SDP only");
  for (const model::Platform* p : {&local, &remote})
    if (!p->has("netstack.send_call"))
      throw frontends::ConfigError("transport", fmt::format("platform {} has no [netstack] section (the Linux TCP/IP "
                                   "path's costs; the zx1 and connectx-ddr-pcie1x8 platforms have one)",
                                   p->name()));
  const IpoibHost a = read_ipoib_host(local);
  const IpoibHost b = read_ipoib_host(remote);
  HostParams ha = read_host_params(local);
  HostParams hb = read_host_params(remote);
  for (auto [h, n] : {std::pair{&ha, &a}, std::pair{&hb, &b}}) {
    // The interrupt's entry and handler are IPoIB's (netstack.interrupt), not SDP's (cpu.interrupt).
    h->costs.interrupt_ns = n->net.interrupt_ns;
    // The kernel's IPoIB posts with the send doorbell: BlueFlame serves libmlx4's user QPs
    // (mlx4_ib_post_send of the 2.6 kernels writes the doorbell register only).
    h->post.blueflame = false;
    if (const double store_ns = model::post_timing(h->post, {}).cpu_ns; n->net.ipoib_post_ns < store_ns)
      throw InputError(fmt::format("netstack.ipoib_post: {} ns is below the doorbell store it includes ({} ns, cpu.uc_store)",
                                   n->net.ipoib_post_ns, store_ns));
  }
  if (a.ipoib.mode != b.ipoib.mode)
    throw InputError("ipoib.mode: both hosts must use the same IPoIB mode (datagram or connected)");
  if (ha.ib.mtu != hb.ib.mtu || (a.ipoib.mode == model::ipoib::Mode::Connected && a.ipoib.connected_mtu != b.ipoib.connected_mtu))
    throw InputError("ib.mtu / ipoib.connected_mtu: both hosts must have the same MTU");
  const StreamSetup setup = stream_setup(ha, hb, local, remote, cfg);
  const uint64_t sndbuf = setup.send_socket, rcvbuf = setup.recv_socket;
  if (model::tcp_window_from_space(rcvbuf) < 2 * static_cast<uint64_t>(model::ipoib::tcp_mss(b.ipoib, hb.ib)))
    throw frontends::ConfigError("remote_recv_socket",
                                 fmt::format("a receive buffer of {} B offers less than two segments of {} B; Linux would "
                                             "grow it (tcp_moderate_rcvbuf), which hcasim does not model: give a larger "
                                             "buffer (and raise socket.rmem_max)", rcvbuf, model::ipoib::tcp_mss(b.ipoib, hb.ib)));
  // A send buffer below one segment stalls the modelled send path (the watchdog ended such a run
  // with an internal error: connected mode's 65468 B segments over the 16 KB default); Linux
  // would send sub-MSS segments, which hcasim does not model.
  if (sndbuf < model::ipoib::tcp_mss(a.ipoib, ha.ib))
    throw frontends::ConfigError("local_send_socket",
                                 fmt::format("a send buffer of {} B holds less than one segment of {} B, which hcasim does "
                                             "not model: give a larger buffer (and raise socket.wmem_max)",
                                             sndbuf, model::ipoib::tcp_mss(a.ipoib, ha.ib)));
  Stream stream(ha, hb, a, b, cfg, sndbuf, rcvbuf, setup.send_size, setup.recv_size, setup.local_cpu, setup.remote_cpu);
  return stream.run();
}

}  // namespace hcasim::sim
