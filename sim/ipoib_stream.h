#pragma once
/// \file The IPoIB stream's insides (sim/ipoib_sim.h is the interface): one host's state, the
/// packets and completions of the path, and the Stream that runs netperf TCP_STREAM over it.
/// Two files implement it: sim/ipoib_sim.cpp (the rings, the HCA's completions and the
/// interrupt path, the run) and sim/ipoib_tcp.cpp (TCP's sender and receiver and the two
/// applications). Not for use outside them.
#include <array>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "frontends/netperf_config.h"
#include "model/cpu.h"
#include "model/ipoib.h"
#include "model/netstack.h"
#include "model/platform.h"
#include "sim/chrome_trace.h"
#include "sim/ipoib_sim.h"
#include "sim/kernel.h"
#include "sim/testbed.h"

namespace hcasim::sim::ipoib_detail {

using model::KernelFn;

/// What the IPoIB path reads of one host beyond a simulated host's parameters (HostParams):
/// the TCP/IP stack's costs, the IPoIB mode and its rings.
struct IpoibHost {
  model::NetstackCosts net;
  model::KernelNaming naming;  ///< the names of its profile's host-dependent rows
  model::ipoib::Config ipoib;
  uint32_t send_ring = 0, recv_ring = 0;
};

/// Reads and checks one host's IPoIB parameters (throws model errors naming the key).
IpoibHost read_ipoib_host(const model::Platform& p);


/// IPOIB_QKEY (Linux drivers/infiniband/ulp/ipoib/ipoib.h): the Q_Key of IPoIB's UD QPs.
constexpr uint32_t kIpoibQkey = 0x00000b1b;
/// IPOIB_NUM_WC (2.6.11 ipoib.h): the CQEs ipoib_ib_completion polls per ib_poll_cq call.
constexpr size_t kIpoibNumWc = 4;
using hca::kGrhBytes;

/// A packet on the wire: a TCP data segment or a pure ACK. In a request/response test every
/// data segment also acknowledges the reverse direction (its ACK field), as Linux sends it.
struct Packet {
  bool ack = false;        ///< a pure ACK (no data)
  bool piggyback = false;  ///< data: ack_seq and window are valid for the reverse direction
  uint64_t seq = 0;        ///< data: first byte's offset in the stream
  uint32_t len = 0;        ///< data: payload bytes
  uint64_t ack_seq = 0;    ///< ACK: next byte expected
  uint64_t window = 0;     ///< ACK: bytes the receiver can take beyond ack_seq
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
  bool softirq = false;  ///< the context runs a softirq now (a trace names its work so)
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
  /// --trace: each row's name (KernelFn order) as its profile gives it, and with " (softirq)".
  std::array<std::string, model::kKernelFnCount> label, softirq_label;
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

/// One direction of the TCP connection: side `from` sends, side 1 - from receives. Linux keeps
/// both halves in one tcp_sock per end; here each direction's sender and receiver state sit
/// together, so that a stream uses one Flow and a request/response test both.
struct Flow {
  int from = 0;  ///< the sending side (0: netperf's host, 1: netserver's)
  // The sender (side `from`).
  uint64_t sndbuf = 0;          ///< the send buffer now (autotuning grows an unlocked one), B
  uint64_t sndbuf_created = 0;  ///< as netperf prints it (getsockopt at creation), B
  bool snd_locked = false;      ///< set with -s / -S (SOCK_SNDBUF_LOCK)
  uint32_t mss = 0;             ///< the segment size the sender uses (tcp_sync_mss), B
  uint32_t mss_first = 0;       ///< the segment size after the SYN-ACK, B
  /// Buffer tuning (Linux 2.6.12 tcp_input.c): the largest window offered, the congestion
  /// window (segments; slow start, which no loss ends: it bounds only the send buffer's growth)
  /// and SOCK_NOSPACE.
  uint64_t max_window = 0;
  uint32_t cwnd = 0;
  bool nospace = false;
  uint64_t write_seq = 0, snd_nxt = 0, snd_una = 0, snd_wnd_right = 0;  ///< bytes of the stream
  uint64_t snd_sml = 0;         ///< the end of the last short segment sent (Minshall's Nagle)
  uint64_t fill = 0;            ///< bytes in the tail skb (tcp_sendmsg fills it to mss)
  bool sending_done = false;    ///< the sender closed (its FIN)
  uint64_t segments = 0;        ///< data segments sent
  // The receiver (side 1 - from).
  uint64_t rcvbuf = 0, rcvbuf_created = 0;  ///< as sndbuf, sndbuf_created
  bool rcv_locked = false;                  ///< SOCK_RCVBUF_LOCK
  /// The window clamp, rcv_ssthresh and the DRS measurement (tcp_rcv_space_adjust).
  uint64_t window_clamp = 0, rcv_ssthresh = 0;
  uint64_t rcvq_space = 0, rcvq_seq = 0, rcvq_time = 0;
  bool rcvq_timed = false, rcv_rtt_known = false;
  uint64_t rcv_nxt = 0, rcv_wup = 0, rcv_adv_right = 0, rcv_wnd = 0, copied = 0;
  uint64_t rcv_queue = 0;  ///< bytes received and not yet read
  /// The delayed-ACK timer: armed, due (its softirq runs), and a count of the ACKs that went
  /// out, which cancels a timer armed before them (inet_csk_clear_xmit_timer on every ACK sent).
  bool delack_armed = false, delack_due = false;
  uint64_t acks_sent = 0, delack_armed_at = 0;
  SimWaitQueue delack_wq;
  uint64_t acks = 0;  ///< pure ACKs the receiver sent
};

class Stream {
 public:
  /// `ha`, `hb`: the hosts; `a`, `b`: their stacks; `trace` (--trace; nullptr: none) the sink of
  /// every host, HCA and link, each send() and recv() and each TCP segment. `buffers`: the
  /// socket buffers at creation, B (send and receive of side 0, then of side 1); `send_size`,
  /// `recv_size`: netperf's and netserver's call sizes (-m, -M; TCP_RR: the request and the
  /// response). All must outlive the stream. cfg.test chooses the run: a stream from side 0 to
  /// side 1, or request/response transactions.
  Stream(const HostParams& ha, const HostParams& hb, const IpoibHost& a, const IpoibHost& b,
         const frontends::TcpStreamConfig& cfg, const std::array<uint64_t, 4>& buffers, uint64_t send_size,
         uint64_t recv_size, int lcpu, int rcpu, ChromeTrace* trace = nullptr);
  frontends::IpoibStreamResult run();

 private:
  /// Flow `f`'s set-up as Linux makes it: the SYN-ACK's window and the segment size it allows,
  /// then tcp_init_buffer_space (the unlocked buffers' fixups, the window clamp, rcv_ssthresh).
  void establish(Flow& f);
  /// A call of `fn` taking `ns` in the profile of the calling context's core, without charging
  /// the CPU (the HCA model charged it: the interrupt entry, the doorbell store).
  void profile(Side& s, const Ctx& c, KernelFn fn, double ns, double calls = 1) {
    auto& k = s.prof[static_cast<size_t>(c.core)];
    k.ns[static_cast<size_t>(fn)] += ns;
    k.calls[static_cast<size_t>(fn)] += calls;
  }
  // CPU accounting: time and a call of `fn` on the calling context's core.
  void charge(Side& s, const Ctx& c, KernelFn fn, double ns, double calls = 1) {
    if (trace_ != nullptr) [[unlikely]]
      s.host->charge_labelled(model::kernel_fn_activity(fn), ns, trace_label(s, fn, c.softirq));
    else
      s.host->charge(model::kernel_fn_activity(fn), ns);
    profile(s, c, fn, ns, calls);
  }
  /// A trace's name of `fn`'s work on side s: its profile name, with " (softirq)" in the
  /// NET_RX/NET_TX softirq.
  static std::string_view trace_label(const Side& s, KernelFn fn, bool softirq) {
    const auto i = static_cast<size_t>(fn);
    return softirq ? s.softirq_label[i] : s.label[i];
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
  bool rr() const { return cfg_.test == frontends::NetperfTest::Rr; }
  /// The flow side `i` receives data of.
  Flow& inbound(int i) { return flow_[static_cast<size_t>(1 - i)]; }

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
  /// Flow f's delayed-ACK timer's context (the timer softirq on the receiver's interrupt CPU).
  void delack_loop(Flow& f);
  /// The softirq's work for one packet received on side i: IP input, netfilter, TCP.
  void handle_packet(int side, const Ctx& c, const Packet& p);
  /// TCP's work on a packet the socket's owner finds in the backlog (release_sock), on side i.
  void backlog_packet(int side, const Ctx& c, const Packet& p);
  /// TCP/IP output of one packet on side s (CPU only; the caller flushes, then transmits).
  void output_cost(Side& s, const Ctx& c, const Packet& p);
  /// Flow f's sender: transmit what the window, the send ring and the data allow (tcp_write_xmit).
  void push(Flow& f, const Ctx& c);
  /// Flow f's sender: an ACK processed by TCP (tcp_ack): a pure ACK, or the ACK field of a data
  /// segment of the reverse direction (`with_data`, processed only when it acknowledges new data).
  void sender_ack(Flow& f, const Ctx& c, const Packet& p, bool with_data = false);
  /// Flow f's receiver: a data segment processed by TCP (tcp_rcv_established), in context c.
  void receiver_segment(Flow& f, const Ctx& c, const Packet& p, bool in_softirq);
  /// Flow f's receiver: the ACK of everything received, with the window offered now, in `a`'s
  /// ACK fields (updates rcv_wup, the advertised window and its right edge; cancels the
  /// delayed ACK).
  void fill_ack(Flow& f, Packet& a);
  /// Flow f's receiver: send a pure ACK now from context c.
  void send_ack(Flow& f, const Ctx& c);
  uint64_t receive_window(const Flow& f) const;
  /// Flow f's sender: a window of `window` bytes offered; tcp_ack_update_window's larger
  /// max_window re-bounds the segment size (tcp_sync_mss: at most half the largest window offered).
  void window_seen(Flow& f, uint64_t window);
  /// Flow f's receiver: tcp_rcv_space_adjust after a copy to the reader (receive autotuning,
  /// unlocked buffer only): at most once per receiver RTT, the buffer grows to hold twice what
  /// was copied in it.
  void rcv_space_adjust(Flow& f);
  /// Side i's jiffies now (host.timer_hz): the clock of TCP's RTT estimates.
  uint64_t jiffies(int side) const;
  /// Send-buffer memory in use (sk_wmem_queued): unacknowledged bytes plus, per skb, the
  /// struct sk_buff and skb_shared_info Linux charges as truesize (~256 B on 2.6 ia64).
  static uint64_t queued_bytes(const Flow& f) {
    const uint64_t bytes = f.write_seq - f.snd_una;
    return bytes + (bytes + f.mss - 1) / f.mss * 256;
  }
  /// One send() of `len` bytes on side i (tcp_sendmsg, then release_sock), in context c.
  void send_call(int side, const Ctx& c, uint64_t len);
  /// One recv() of at most `max` bytes on side i (tcp_recvmsg: it sleeps until data comes),
  /// in context c; returns the bytes read, 0 when the peer closed with nothing left.
  uint64_t recv_call(int side, const Ctx& c, uint64_t max);
  /// netperf's and netserver's loops: the stream (send_tcp_stream, recv_tcp_stream) and the
  /// transactions (send_tcp_rr, recv_tcp_rr).
  void netperf();
  void netserver();
  void rr_netperf();
  void rr_netserver();
  /// Resets both hosts' CPU accounts and profiles, and what --explain measures: netperf's
  /// measurement starts.
  void start_measuring();

  const frontends::TcpStreamConfig& cfg_;
  ChromeTrace* trace_;  ///< --trace, or nullptr
  TwoHostBed bed_;
  std::array<Side, 2> side_;
  /// Per direction (by sending side): the TCP/IP headers of the frames posted and not yet
  /// received, in order (the IPoIB path moves byte counts, not bytes; each receive CQE's length
  /// is checked against its frame).
  std::array<std::deque<Packet>, 2> in_flight_;
  /// flow_[0]: netperf's data to netserver (the stream; TCP_RR's requests); flow_[1]: netserver's
  /// data to netperf (TCP_RR's responses; a stream's carries nothing).
  std::array<Flow, 2> flow_;
  /// mss_clamp_: the smaller of the two interfaces' MSS, which both sides advertise (advmss).
  uint32_t mss_clamp_ = 0, header_bytes_ = 0;
  uint64_t send_size_, recv_size_;
  int lcpu_, rcpu_;
  Ctx irq_ctx_[2];
  int ring_dry_ = -1;  ///< the side whose receive ring ran dry (a datagram dropped), else -1
  double t_start_ = 0, t_end_ = 0;
  std::array<HcaBusy, 2> hca_busy_{};          ///< --explain: the send engines from t_start_ on
  std::vector<frontends::LinkUse> link_use_;   ///< --explain: the links at t_end_
  uint64_t sent_ = 0, send_calls_ = 0, recv_calls_ = 0;
  uint64_t transactions_ = 0;                  ///< TCP_RR: transactions completed by the alarm
  frontends::LatencyStats latency_;            ///< TCP_RR with keep_latency: their times, us
  /// TCP_RR: both hosts' CPU accounts and kernel profiles at the alarm (what netperf measures).
  std::optional<std::array<std::vector<model::CoreAccount>, 2>> accounts_at_stop_;
  std::optional<std::array<std::vector<frontends::KernelProfile>, 2>> profiles_at_stop_;
  /// -D: netperf's interim results, ticked by netperf's send() calls (by netserver's recv()
  /// calls when this stream is a TCP_MAERTS turned round, where they are netperf's; by each
  /// transaction of a TCP_RR); made when netperf's loop starts, from the buffers netperf printed.
  std::optional<frontends::DemoClock> demo_;
  double stop_ns_ = 0;  ///< a timed run's alarm (t_start_ + -l)
};

}  // namespace hcasim::sim::ipoib_detail
