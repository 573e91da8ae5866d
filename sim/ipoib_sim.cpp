#include "sim/ipoib_sim.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <functional>
#include <iterator>
#include <map>
#include <memory>

#include <fmt/format.h>
#include <simgrid/s4u.hpp>

#include "frontends/config_error.h"
#include "model/cpu.h"
#include "model/error.h"
#include "model/hca.h"
#include "model/ib.h"
#include "model/interrupt.h"
#include "model/ipoib.h"
#include "model/mmio.h"
#include "model/pcie.h"
#include "model/pcix.h"
#include "model/topology.h"
#include "sim/kernel.h"

namespace hcasim::sim {

namespace s4u = simgrid::s4u;
using model::KernelFn;

namespace {

// --- parameters -------------------------------------------------------------------------

/// An InfiniHost UAR doorbell, send or receive: two 32-bit words written as one 64-bit
/// store (mthca_doorbell.h mthca_write64 on a 64-bit host), B.
constexpr uint32_t kDoorbellBytes = 8;

/// Everything the IPoIB path reads from one host's platform.
struct IpoibHost {
  model::CpuCosts costs;  ///< only what SimHost uses: cpus, wakeup, context switch, IPI, timer
  model::CpuTopology topology;
  model::IrqConfig irq;
  int app_cpu = 0;
  model::NetstackCosts net;
  model::ib::Config ib;
  model::ipoib::Config ipoib;
  uint32_t send_ring = 0, recv_ring = 0;
  model::HostBus bus;
  double read_latency_ns = 0;   ///< PCIe: MRd -> first CplD (HcaTiming::dma_read_rtt_ns); PCI-X: the split latency
  double write_latency_ns = 0;  ///< device write issued -> visible in memory (HcaTiming::posted_write_ns)
  double doorbell_latency_ns = 0;  ///< CPU store -> at the HCA (mmio::Config::latency_ns)
  double hca_tx_ns = 0, hca_rx_ns = 0, interrupt_latency_ns = 0, propagation_ns = 0;
  uint64_t rmem_default = 0, wmem_default = 0;
};

IpoibHost read_ipoib_host(const model::Platform& p) {
  IpoibHost h;
  h.costs.cpus = static_cast<int>(p.u32("host.cpus"));
  h.costs.wakeup_ns = p.num("cpu.wakeup");
  h.costs.context_switch_ns = p.num("cpu.context_switch");
  h.costs.ipi_ns = p.num("cpu.ipi");
  h.costs.timer_hz = p.num("host.timer_hz");
  h.costs.timer_tick_ns = p.num("cpu.timer_tick");
  if (h.costs.timer_hz * h.costs.timer_tick_ns >= 1e9)
    throw InputError(fmt::format("platform {}: host.timer_hz x cpu.timer_tick leaves no time to run", p.name()));
  h.topology = model::CpuTopology::from_platform(p, h.costs.cpus);
  h.irq = model::IrqConfig::from_platform(p, h.costs.cpus);
  h.app_cpu = static_cast<int>(p.u32("host.default_app_cpu"));
  if (h.app_cpu >= h.costs.cpus)
    p.fail("host.default_app_cpu", fmt::format("CPU {} does not exist (host.cpus = {})", h.app_cpu, h.costs.cpus));
  h.net = model::NetstackCosts::from_platform(p);
  h.ib.speed = model::ib::parse_speed(p.str("ib.speed"));  // one of the schema's choices
  h.ib.width = static_cast<int>(p.u32("ib.width"));
  h.ib.mtu = p.u32("ib.mtu");
  try {
    model::ib::validate(h.ib);
  } catch (const InputError& e) {
    p.fail_from(e);
  }
  h.ipoib.mode = model::ipoib::parse_mode(p.str("ipoib.mode"));  // one of the schema's choices
  h.ipoib.connected_mtu = p.u32("ipoib.connected_mtu");
  h.ipoib.tcp_timestamps = p.flag("socket.tcp_timestamps");
  h.send_ring = p.u32("ipoib.send_ring");
  h.recv_ring = p.u32("ipoib.recv_ring");
  h.bus = model::HostBus::from_platform(p);
  const model::HcaTiming t = model::HcaTiming::from_platform(p);
  h.read_latency_ns = t.dma_read_rtt_ns;
  h.write_latency_ns = t.posted_write_ns;
  h.hca_tx_ns = t.tx_processing_ns;
  h.hca_rx_ns = t.rx_processing_ns;
  h.interrupt_latency_ns = t.interrupt_latency_ns;
  h.propagation_ns = t.propagation_ns;
  // IPoIB posts through the same UAR doorbell as SDP: the same keys and checks (BlueFlame needs
  // a PCIe slot). Its CPU cost is inside netstack.ipoib_post (the store with mthca_post_send)
  // and the receive completion's repost; Stream::transmit charges its bus time and latency.
  h.doorbell_latency_ns = model::PostConfig::from_platform(p, h.bus, t.dma_read_rtt_ns).mmio.latency_ns;
  h.rmem_default = p.u32("socket.tcp_rmem_default");
  h.wmem_default = p.u32("socket.tcp_wmem_default");
  p.check_used_in(model::ParamWhen::Ipoib);
  return h;
}

}  // namespace

void check_ipoib_parameters(const model::Platform& p) { (void)read_ipoib_host(p); }

namespace {

// --- the wire -----------------------------------------------------------------------------

/// The busy intervals of one FIFO resource (a bus direction, an HCA engine, a link), kept ahead
/// of time so that a request ready early can use a gap before a reservation made earlier for a
/// later time. Not an event calendar: sim::Calendar runs the kernel's events.
class BusyTimeline {
 public:
  /// Reserves `busy` ns at the earliest start >= ready that fits; returns the start.
  double reserve(double ready, double busy) {
    // Forget intervals that ended before anything can ask again (requests are made at the
    // current simulated time or later).
    const double now = sim::now_ns();
    while (!busy_.empty() && busy_.begin()->second <= now) busy_.erase(busy_.begin());
    double start = ready;
    for (const auto& [s, e] : busy_) {
      if (e <= start) continue;
      if (s >= start + busy) break;
      start = e;
    }
    if (busy > 0) busy_.emplace(start, start + busy);
    return start;
  }

 private:
  std::multimap<double, double> busy_;  ///< start -> end, ns
};

/// A packet on the wire: a TCP data segment or an ACK.
struct Packet {
  bool ack = false;
  uint64_t seq = 0;      ///< data: first byte's offset in the stream
  uint32_t len = 0;      ///< data: payload bytes
  uint64_t ack_seq = 0;  ///< ACK: next byte expected
  uint64_t window = 0;   ///< ACK: bytes the receiver can take beyond ack_seq
};

/// A completion queue entry for the IPoIB CQ (one CQ for sends and receives, as 2005's IPoIB).
struct Cqe {
  bool send = false;     ///< send completion (else a packet received)
  uint32_t frame = 0;    ///< bytes of the IPoIB frame (for the DMA unmap)
  Packet packet;         ///< received packet
};

// --- one host's state ----------------------------------------------------------------------

struct Ctx {
  int core = 0;
};

/// The bus times of one host that transmit() needs per frame: for the fixed sizes (the send
/// doorbell, 64-B WQE fetches, 32-B CQE writes) computed once, and for the last frame size
/// remembered (a stream's frames come in one or two sizes). HostBus counts the transactions anew
/// on every call, a dozen calls per frame.
struct BusTimes {
  explicit BusTimes(const IpoibHost& h)
      : bus(h.bus),
        read_latency_ns(h.read_latency_ns),
        doorbell_ns(h.bus.mmio_store_ns(kDoorbellBytes)),
        read64_ns(h.bus.dma_read_ns(64)),
        read64_wait_ns(h.bus.dma_read_wait_ns(64, h.read_latency_ns)),
        write32_ns(h.bus.dma_write_ns(32)) {}
  model::HostBus bus;
  double read_latency_ns;
  double doorbell_ns, read64_ns, read64_wait_ns, write32_ns;
  /// The frame's DMA read (its gather), the wait before that read's data flows, its DMA write
  /// (the receiver's scatter), for `frame` bytes.
  struct Frame {
    uint32_t bytes = 0;
    double read_ns = 0, read_wait_ns = 0, write_ns = 0;
  };
  const Frame& frame(uint32_t bytes) {
    if (last.bytes != bytes)  // bytes 0: nothing remembered yet (a frame has headers)
      last = {bytes, bus.dma_read_ns(bytes), bus.dma_read_wait_ns(bytes, read_latency_ns), bus.dma_write_ns(bytes)};
    return last;
  }

 private:
  Frame last;
};

struct Side {
  IpoibHost p;
  std::unique_ptr<BusTimes> bus;  ///< p's bus times (made when p is set)
  std::unique_ptr<SimHost> host;
  std::vector<frontends::KernelProfile> prof;
  BusyTimeline bus_read, bus_write;  ///< PCIe: two directions; PCI-X uses bus_read for both
  BusyTimeline hca_tx, hca_rx, link_out;
  double last_delivery_ns = 0;   ///< CQEs of one direction arrive in order
  std::deque<Cqe> cq;
  std::deque<Cqe> softirq;       ///< polled CQEs waiting for the softirq (netif_rx's backlog)
  bool in_irq = false;           ///< the interrupt CPU is in a hard interrupt or the softirq
  SimWaitQueue irq_idle;         ///< notified when it leaves them
  bool armed = true;             ///< CQ armed for an event
  bool irq_pending = false;
  uint64_t interrupts = 0;
  SimWaitQueue irq_wq;
  uint32_t tx_outstanding = 0;   ///< posted sends not yet completed (IPoIB's send ring)
  // Socket state.
  bool owned = false;            ///< the application is inside send()/recv() (lock_sock)
  std::deque<Packet> backlog;    ///< packets softirq left for the owner (sk_add_backlog)
  std::deque<Packet> prequeue;   ///< packets softirq left for a sleeping reader (tcp_prequeue)
  bool reader_waiting = false;   ///< netserver sleeps in recv() (ucopy.task set)
  bool asleep = false;           ///< the application is on the socket's wait queue
  std::unique_ptr<SimWaitQueue> sock_wq;
};

Cqe make_cqe(bool send, uint32_t frame, const Packet& p) { return Cqe{send, frame, p}; }

class Stream {
 public:
  Stream(const IpoibHost& a, const IpoibHost& b, const frontends::TcpStreamConfig& cfg, uint64_t sndbuf, uint64_t rcvbuf,
         uint64_t send_size, uint64_t recv_size, int lcpu, int rcpu);
  ~Stream();
  frontends::IpoibStreamResult run();

 private:
  // CPU accounting: time and a call of `fn` on the calling context's core.
  void charge(Side& s, const Ctx& c, KernelFn fn, double ns, double calls = 1) {
    s.host->charge(model::kernel_fn_activity(fn), ns);
    auto& k = s.prof[static_cast<size_t>(c.core)];
    k.ns[static_cast<size_t>(fn)] += ns;
    k.calls[static_cast<size_t>(fn)] += calls;
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
  uint32_t rx_buffer_bytes(const Side& s) const {
    // IPoIB receive buffers: the MTU plus the encapsulation header plus room for a GRH (40 B).
    return model::ipoib::interface_mtu(s.p.ipoib, s.p.ib) + model::ipoib::kEncapBytes + 40;
  }

  /// Puts a packet on the wire from side `from` at the current time (its CPU work is done):
  /// schedules the receive CQE on the other side and the send CQE on this one.
  void transmit(int from, const Packet& p);
  void deliver(int to, const Cqe& cqe);
  void irq_loop(int side);
  /// An application on the interrupt CPU runs only when no interrupt or softirq work is
  /// pending there (they preempt it): waits for that, without CPU cost.
  void yield_to_irq(Side& s, const Ctx& c);
  /// The hard interrupt: poll the CQ dry, queue what was received for the softirq, re-arm.
  void hard_irq(int side, const Ctx& c);
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
  std::array<Side, 2> side_;
  std::unique_ptr<s4u::Engine> engine_;
  SimGridStats stats_;
  Failure failure_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<Timer> timer_;
  s4u::Host* node_ = nullptr;
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
  bool delack_armed_ = false;
  uint64_t segments_ = 0, acks_ = 0;
  double t_start_ = 0, t_end_ = 0;
  uint64_t sent_ = 0, send_calls_ = 0, recv_calls_ = 0;
};

Stream::Stream(const IpoibHost& a, const IpoibHost& b, const frontends::TcpStreamConfig& cfg, uint64_t sndbuf, uint64_t rcvbuf,
               uint64_t send_size, uint64_t recv_size, int lcpu, int rcpu)
    : cfg_(cfg), sndbuf_(sndbuf), rcvbuf_(rcvbuf), send_size_(send_size), recv_size_(recv_size), lcpu_(lcpu), rcpu_(rcpu) {
  engine_ = make_engine();
  auto* zone = s4u::create_full_zone("hcasim-ipoib");
  node_ = zone->create_host("node", 1e9);
  zone->seal();
  scheduler_ = std::make_unique<Scheduler>(failure_);
  timer_ = std::make_unique<Timer>();
  const std::array<const IpoibHost*, 2> p{&a, &b};
  const char* names[] = {"A", "B"};
  for (size_t i = 0; i < 2; ++i) {
    Side& s = side_[i];
    s.p = *p[i];
    s.bus = std::make_unique<BusTimes>(s.p);
    s.host = std::make_unique<SimHost>(static_cast<int>(i), names[i], s.p.costs, s.p.topology, cfg.seed,
                                       sdp::DataMode::Reference);
    s.prof.resize(static_cast<size_t>(s.p.costs.cpus));
    for (int k = 0; k < s.p.costs.cpus; ++k) s.prof[static_cast<size_t>(k)].core = k;
    s.sock_wq = std::make_unique<SimWaitQueue>();
    irq_ctx_[i].core = s.p.irq.target_cpu();
  }
  mss_ = std::min(model::ipoib::tcp_mss(a.ipoib, a.ib), model::ipoib::tcp_mss(b.ipoib, b.ib));
  header_bytes_ = model::ipoib::kIpTcpHeaderBytes + (a.ipoib.tcp_timestamps ? model::ipoib::kTcpTimestampBytes : 0);
  rcv_wnd_ = rcv_adv_right_ = snd_wnd_right_ = receive_window();
}

Stream::~Stream() {
  for (auto& s : side_) {
    s.sock_wq.reset();
    s.host.reset();
  }
  timer_.reset();
  scheduler_.reset();
}

uint64_t Stream::receive_window() const {
  const uint64_t space = model::tcp_window_from_space(rcvbuf_);
  const uint64_t free = space > rcv_queue_ ? space - rcv_queue_ : 0;
  return free / mss_ * mss_;  // Linux offers whole segments (tcp_select_window rounds to MSS)
}

void Stream::transmit(int from, const Packet& p) {
  Side& s = side_[static_cast<size_t>(from)];
  Side& r = side_[static_cast<size_t>(1 - from)];
  const uint32_t frame = frame_bytes(p);
  const double now = sim::now_ns();
  // The send doorbell: mthca_tavor_post_send writes the UAR's 8-B send doorbell once per call,
  // and ipoib_send posts one WR per skb. An uncached store: it takes the bus (the host->device
  // direction of PCIe, the shared PCI-X segment) and reaches the HCA no sooner than the bus's
  // MMIO write latency after the post.
  BusyTimeline& sread = s.bus_read;
  const double doorbell = s.bus->doorbell_ns;
  double t = std::max(sread.reserve(now, doorbell) + doorbell, now + s.p.doorbell_latency_ns);
  // Sender HCA: the WQE fetch (64 B) and the frame's gather, both DMA reads.
  const BusTimes::Frame& sf = s.bus->frame(frame);
  t = sread.reserve(t + s.bus->read64_wait_ns, s.bus->read64_ns);
  t = sread.reserve(t + s.bus->read64_ns + sf.read_wait_ns, sf.read_ns);
  t += sf.read_ns;
  t = s.hca_tx.reserve(t, s.p.hca_tx_ns) + s.p.hca_tx_ns;
  // The IB link: the frame's wire bytes at the link's data rate.
  const double wire = static_cast<double>(model::ipoib::ip_packet_wire_bytes(s.p.ipoib, s.p.ib, ip_bytes(p)));
  const double link_ns = wire * 8 / model::ib::data_rate_gbps(s.p.ib);
  t = s.link_out.reserve(t, link_ns) + link_ns + s.p.propagation_ns;
  // Send completion: UD completes when the packet has left; RC (connected) on its ACK, one
  // propagation later and back.
  double t_send = t;
  if (s.p.ipoib.mode == model::ipoib::Mode::Connected) t_send += s.p.propagation_ns + r.p.hca_rx_ns;
  // Receiver HCA: check, fetch the receive WQE for the buffer's address (a 64-B DMA read: mthca's
  // smallest WQE stride, mthca_qp.c wqe_shift >= 6), scatter the frame and write the CQE (DMA
  // writes, in order).
  t = r.hca_rx.reserve(t, r.p.hca_rx_ns) + r.p.hca_rx_ns;
  t = r.bus_read.reserve(t + r.bus->read64_wait_ns, r.bus->read64_ns) + r.bus->read64_ns;
  BusyTimeline& rwrite = r.p.bus.is_pcix() ? r.bus_read : r.bus_write;
  const double w = r.bus->frame(frame).write_ns + r.bus->write32_ns;
  t = rwrite.reserve(t, w) + w + r.p.write_latency_ns;
  t = std::max(t, r.last_delivery_ns);
  r.last_delivery_ns = t;
  const int to = 1 - from;
  timer_->at(t, [this, to, frame, p] { deliver(to, make_cqe(false, frame, p)); });
  // The sender's CQE (32 B write on its own bus).
  BusyTimeline& swrite = s.p.bus.is_pcix() ? s.bus_read : s.bus_write;
  const double ws = s.bus->write32_ns;
  t_send = swrite.reserve(t_send, ws) + ws + s.p.write_latency_ns;
  ++s.tx_outstanding;
  timer_->at(t_send, [this, from, frame] { deliver(from, make_cqe(true, frame, Packet{})); });
}

void Stream::deliver(int to, const Cqe& cqe) {
  Side& s = side_[static_cast<size_t>(to)];
  s.cq.push_back(cqe);
  if (s.armed) {
    s.armed = false;
    timer_->at(sim::now_ns() + s.p.interrupt_latency_ns, [&s] {
      s.irq_pending = true;
      s.irq_wq.notify_all();
    });
  }
}

void Stream::irq_loop(int i) {
  Side& s = side_[static_cast<size_t>(i)];
  const Ctx& c = irq_ctx_[i];
  s.host->bind_current(c.core);
  for (;;) {
    yield_rounds(2);
    while (!s.irq_pending) {
      s.irq_wq.wait();
    }
    yield_rounds(1);
    s.in_irq = true;
    hard_irq(i, c);
    // The NET_RX softirq on irq exit: the packets netif_rx queued, one at a time; an
    // interrupt that comes meanwhile runs first (hard interrupts preempt softirqs).
    bool restart_tx = false;
    while (!s.softirq.empty()) {
      if (s.irq_pending) hard_irq(i, c);
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
    if (restart_tx && i == 0) push(c);
    s.host->flush();
    s.in_irq = false;
    s.irq_idle.notify_all();
  }
}

void Stream::yield_to_irq(Side& s, const Ctx& c) {
  if (c.core != s.p.irq.target_cpu()) return;
  s.host->flush();
  yield_rounds(2);
  while (s.in_irq || s.irq_pending) {
    s.irq_idle.wait();
  }
  yield_rounds(1);
}

void Stream::hard_irq(int i, const Ctx& c) {
  Side& s = side_[static_cast<size_t>(i)];
  s.irq_pending = false;
  ++s.interrupts;
  charge(s, c, KernelFn::Interrupt, s.p.irq.handler_ns(s.p.net.interrupt_ns));
  // ipoib_ib_completion: poll every CQE (a send's: unmap and free; a receive's: unmap, a new
  // buffer allocated, mapped and posted, netif_rx), then re-arm the CQ.
  while (!s.cq.empty()) {
    const Cqe cqe = s.cq.front();
    s.cq.pop_front();
    charge(s, c, KernelFn::IpoibCompletion, s.p.net.ipoib_cqe_ns);
    if (cqe.send) {
      charge(s, c, KernelFn::DmaMap, 0.5 * s.p.net.dma_map_ns(cqe.frame));
      --s.tx_outstanding;
    } else {
      charge(s, c, KernelFn::DmaMap, s.p.net.dma_map_ns(rx_buffer_bytes(s)));
      // The new buffer's post: mthca_tavor_post_receive rings the receive doorbell once per
      // call (ipoib_ib_post_receive posts one WR), an uncached store on the bus.
      s.bus_read.reserve(sim::now_ns(), s.bus->doorbell_ns);
    }
    s.softirq.push_back(cqe);
  }
  s.host->flush();
  s.armed = true;
  // CQEs that arrived while the handler ran: the re-armed CQ reports them at once.
  if (!s.cq.empty()) {
    s.armed = false;
    timer_->at(sim::now_ns() + s.p.interrupt_latency_ns, [&s] {
      s.irq_pending = true;
      s.irq_wq.notify_all();
    });
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
  charge(s, c, KernelFn::IpoibXmit, s.p.net.ipoib_post_ns);
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
    timer_->at(sim::now_ns() + 40e6, [this] {
      delack_armed_ = false;
      if (rcv_nxt_ > rcv_wup_) {
        // The timer's ACK (rare: only a stream's tail waits 40 ms) is sent without CPU cost:
        // a timer callback has no CPU context.
        transmit(1, make_ack());
      }
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
  Scheduler& s = *scheduler_;
  s.spawn("netserver", [this] { failure_.guard("netserver", [this] { netserver(); }); });
  s.spawn("netperf", [this] { failure_.guard("netperf", [this] { netperf(); }); });
  for (int i = 0; i < 2; ++i)
    s.spawn(i == 0 ? "irq-A" : "irq-B", [this, i] { failure_.guard("irq", [this, i] { irq_loop(i); }); }, true);
  const double limit_s =
      cfg_.length_bytes ? 60 + static_cast<double>(cfg_.length_bytes) * 8 / 1e7 : 2 * cfg_.length_s + 10;
  s.spawn("watchdog", [this, limit_s] {
    failure_.guard("watchdog", [limit_s] {
      sleep_until_s(limit_s);
      throw std::runtime_error(fmt::format("the run did not finish within {} s of simulated time", limit_s));
    });
  }, true);
  s.run(node_);
  if (failure_.failed()) throw std::runtime_error(failure_.message());
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
  r.local_cpus = side_[0].p.costs.cpus;
  r.remote_cpus = side_[1].p.costs.cpus;
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
      timer += side_[i].p.costs.timer_hz * r.elapsed_s * side_[i].p.costs.timer_tick_ns;
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
  out.local_interrupts = side_[0].interrupts;
  out.remote_interrupts = side_[1].interrupts;
  r.simgrid_activities = stats_.activities();
  r.simgrid_time_steps = stats_.time_steps;
  scheduler_->stats().copy_to(r);
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
  if (a.ipoib.mode != b.ipoib.mode)
    throw InputError("ipoib.mode: both hosts must use the same IPoIB mode (datagram or connected)");
  if (a.ib.mtu != b.ib.mtu || (a.ipoib.mode == model::ipoib::Mode::Connected && a.ipoib.connected_mtu != b.ipoib.connected_mtu))
    throw InputError("ib.mtu / ipoib.connected_mtu: both hosts must have the same MTU");
  // Linux doubles a SO_SNDBUF/SO_RCVBUF request, caps it at 2 x wmem_max/rmem_max and keeps
  // at least SOCK_MIN_SNDBUF/RCVBUF.
  const uint64_t sndbuf =
      model::linux_socket_buffer(cfg.local_send_socket, a.net.wmem_max, a.wmem_default, model::kSockMinSndbuf);
  const uint64_t rcvbuf =
      model::linux_socket_buffer(cfg.remote_recv_socket, b.net.rmem_max, b.rmem_default, model::kSockMinRcvbuf);
  const uint64_t send_size = cfg.send_size ? cfg.send_size : sndbuf;
  const uint64_t recv_size = cfg.recv_size ? cfg.recv_size : rcvbuf;
  const int lcpu = cfg.local_cpu.value_or(a.app_cpu);
  const int rcpu = cfg.remote_cpu.value_or(b.app_cpu);
  if (lcpu < 0 || lcpu >= a.costs.cpus)
    throw frontends::ConfigError("local_cpu", fmt::format("local CPU {} does not exist ({} has {} CPUs)", lcpu, local.name(), a.costs.cpus));
  if (rcpu < 0 || rcpu >= b.costs.cpus)
    throw frontends::ConfigError("remote_cpu", fmt::format("remote CPU {} does not exist ({} has {} CPUs)", rcpu, remote.name(), b.costs.cpus));
  if (model::tcp_window_from_space(rcvbuf) < 2 * static_cast<uint64_t>(model::ipoib::tcp_mss(b.ipoib, b.ib)))
    throw frontends::ConfigError("remote_recv_socket",
                                 fmt::format("a receive buffer of {} B offers less than two segments of {} B; Linux would "
                                             "grow it (tcp_moderate_rcvbuf), which hcasim does not model: give a larger "
                                             "buffer (and raise socket.rmem_max)", rcvbuf, model::ipoib::tcp_mss(b.ipoib, b.ib)));
  // A send buffer below one segment stalls the modelled send path (the watchdog ended such a run
  // with an internal error: connected mode's 65468 B segments over the 16 KB default); Linux
  // would send sub-MSS segments, which hcasim does not model.
  if (sndbuf < model::ipoib::tcp_mss(a.ipoib, a.ib))
    throw frontends::ConfigError("local_send_socket",
                                 fmt::format("a send buffer of {} B holds less than one segment of {} B, which hcasim does "
                                             "not model: give a larger buffer (and raise socket.wmem_max)",
                                             sndbuf, model::ipoib::tcp_mss(a.ipoib, a.ib)));
  Stream stream(a, b, cfg, sndbuf, rcvbuf, send_size, recv_size, lcpu, rcpu);
  return stream.run();
}

}  // namespace hcasim::sim
