// netperf TCP_STREAM over IPoIB (sim/ipoib_sim.h): the rings, the HCA's completions and the
// interrupt path of each host, and the run.
#include "sim/ipoib_sim.h"

#include <algorithm>
#include <chrono>
#include <memory>

#include <fmt/format.h>

#include "frontends/config_error.h"
#include "model/cpu.h"
#include "model/error.h"
#include "model/hca.h"
#include "model/ib.h"
#include "model/ipoib.h"
#include "sim/ipoib_stream.h"
#include "sim/kernel.h"
#include "sim/testbed.h"

namespace hcasim::sim {

namespace ipoib_detail {

IpoibHost read_ipoib_host(const model::Platform& p) {
  IpoibHost h;
  h.net = model::NetstackCosts::from_platform(p);
  h.naming = model::KernelNaming::from_platform(p);
  h.ipoib.mode = model::ipoib::parse_mode(p.str("ipoib.mode"));  // one of the schema's choices
  h.ipoib.connected_mtu = p.u32("ipoib.connected_mtu");
  h.ipoib.tcp_timestamps = p.flag("socket.tcp_timestamps");
  h.send_ring = p.u32("ipoib.send_ring");
  h.recv_ring = p.u32("ipoib.recv_ring");
  p.check_used_in(model::ParamWhen::Ipoib);
  return h;
}

Stream::Stream(const HostParams& ha, const HostParams& hb, const IpoibHost& a, const IpoibHost& b,
               const frontends::TcpStreamConfig& cfg, const std::array<uint64_t, 4>& buffers, uint64_t send_size,
               uint64_t recv_size, int lcpu, int rcpu, ChromeTrace* trace)
    : cfg_(cfg),
      trace_(trace),
      bed_(ha, hb, cfg.seed, sdp::DataMode::Reference, /*first_pair=*/false),
      send_size_(send_size),
      recv_size_(recv_size),
      lcpu_(lcpu),
      rcpu_(rcpu) {
  if (trace_ != nullptr) bed_.set_trace(trace_);
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
    for (size_t f = 0; f < model::kKernelFnCount; ++f) {
      s.label[f] = model::kernel_fn_name(static_cast<KernelFn>(f), s.p.naming);
      s.softirq_label[f] = s.label[f] + " (softirq)";
    }
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
  mss_clamp_ = std::min(model::ipoib::tcp_mss(a.ipoib, ha.ib), model::ipoib::tcp_mss(b.ipoib, hb.ib));
  header_bytes_ = model::ipoib::kIpTcpHeaderBytes + (a.ipoib.tcp_timestamps ? model::ipoib::kTcpTimestampBytes : 0);
  // The buffers as netperf set them: -s S,R on netperf's socket, -S S,R on netserver's.
  flow_[0].from = 0;
  flow_[0].sndbuf = buffers[0];
  flow_[0].rcvbuf = buffers[3];
  flow_[0].snd_locked = cfg.local_send_socket != 0;
  flow_[0].rcv_locked = cfg.remote_recv_socket != 0;
  flow_[1].from = 1;
  flow_[1].sndbuf = buffers[2];
  flow_[1].rcvbuf = buffers[1];
  flow_[1].snd_locked = cfg.remote_send_socket != 0;
  flow_[1].rcv_locked = cfg.local_recv_socket != 0;
  for (Flow& f : flow_) establish(f);
}

void Stream::establish(Flow& f) {
  const Side& tx = side_[static_cast<size_t>(f.from)];
  const Side& rx = side_[static_cast<size_t>(1 - f.from)];
  f.sndbuf_created = f.sndbuf;
  f.rcvbuf_created = f.rcvbuf;
  // The SYN (or SYN-ACK) offers a window from the receiver's buffer (tcp_select_initial_window);
  // the sender bounds its segments to half of it (tcp_sync_mss after the handshake).
  const uint64_t syn_window = model::tcp_initial_window(f.rcvbuf, mss_clamp_);
  f.max_window = syn_window;
  f.mss = f.mss_first = model::tcp_mss_for_window(mss_clamp_, f.max_window, header_bytes_ - 20);
  f.cwnd = model::tcp_initial_cwnd(f.mss);
  // tcp_init_buffer_space at establishment: the unlocked buffers' fixups, then the window clamp
  // (the full window, less one segment kept back when that leaves at least two: tcp_app_win).
  if (!f.rcv_locked) f.rcvbuf = model::tcp_fixup_rcvbuf(f.rcvbuf, mss_clamp_, rx.p.net.tcp_rmem_max);
  if (!f.snd_locked) f.sndbuf = model::tcp_fixup_sndbuf(f.sndbuf, mss_clamp_, tx.p.net.tcp_wmem_max);
  const uint64_t maxwin = model::tcp_window_from_space(f.rcvbuf);
  f.window_clamp = maxwin;
  if (f.window_clamp > 2 * uint64_t{mss_clamp_} && f.window_clamp + mss_clamp_ > maxwin)
    f.window_clamp = std::max(2 * uint64_t{mss_clamp_}, maxwin - mss_clamp_);
  f.rcv_ssthresh = std::min(syn_window, f.window_clamp);
  f.rcvq_space = syn_window;
  f.rcv_wnd = f.rcv_adv_right = f.snd_wnd_right = syn_window;
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
  Ctx& irq = irq_ctx_[i];
  irq.softirq = true;
  while (!s.softirq.empty()) {
    while (s.hca->take_interrupt() != nullptr) {
      profile(s, c, KernelFn::Interrupt, entry_ns);
      irq.softirq = false;
      hard_irq(i, c);
      irq.softirq = true;
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
    push(flow_[static_cast<size_t>(i)], c);
  }
  s.host->flush();
  irq.softirq = false;
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

frontends::IpoibStreamResult Stream::run() {
  const auto wall0 = std::chrono::steady_clock::now();
  Scheduler& s = bed_.scheduler();
  Failure& f = bed_.failure();
  for (int i = 0; i < 2; ++i)
    s.spawn(i == 0 ? "ipoib-open-A" : "ipoib-open-B", [this, i, &f] { f.guard("ipoib open", [this, i] { open(i); }); });
  if (rr()) {
    s.spawn("netserver", [this, &f] { f.guard("netserver", [this] { rr_netserver(); }); });
    s.spawn("netperf", [this, &f] { f.guard("netperf", [this] { rr_netperf(); }); });
    s.spawn("delack-A", [this, &f] { f.guard("delayed ACK timer", [this] { delack_loop(flow_[1]); }); }, true);
  } else {
    s.spawn("netserver", [this, &f] { f.guard("netserver", [this] { netserver(); }); });
    s.spawn("netperf", [this, &f] { f.guard("netperf", [this] { netperf(); }); });
  }
  s.spawn("delack-B", [this, &f] { f.guard("delayed ACK timer", [this] { delack_loop(flow_[0]); }); }, true);
  const double limit_s = rr()                ? (cfg_.transactions ? 60 + static_cast<double>(cfg_.transactions) * 1e-3
                                                                  : 2 * cfg_.length_s + 10)
                         : cfg_.length_bytes ? 60 + static_cast<double>(cfg_.length_bytes) * 8 / 1e7
                                             : 2 * cfg_.length_s + 10;
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
  const Flow& f0 = flow_[0];
  const Flow& f1 = flow_[1];
  r.local_send_socket = f0.sndbuf_created;
  r.remote_recv_socket = f0.rcvbuf_created;
  r.local_recv_socket = f1.rcvbuf_created;
  r.remote_send_socket = f1.sndbuf_created;
  // Each socket's two buffers: netperf's sends flow 0 and receives flow 1, netserver's the reverse.
  out.local_send_end = {f0.sndbuf, !f0.snd_locked};
  out.remote_recv_end = {f0.rcvbuf, !f0.rcv_locked};
  out.remote_send_end = {f1.sndbuf, !f1.snd_locked};
  out.local_recv_end = {f1.rcvbuf, !f1.rcv_locked};
  out.mss_first = f0.mss_first;
  r.send_size = send_size_;
  r.recv_size = recv_size_;
  r.elapsed_s = (t_end_ - t_start_) * 1e-9;
  if (demo_) r.interim = demo_->results();
  r.bytes_sent = sent_;
  r.send_calls = send_calls_;
  r.recv_calls = recv_calls_;
  r.local_cpus = side_[0].hp.costs.cpus;
  r.remote_cpus = side_[1].hp.costs.cpus;
  if (rr()) {
    // Requests one way, responses the other: every request netperf sent was read by netserver
    // (it reads until netperf closes); netperf counts the responses of the transactions
    // completed by the alarm (the one it interrupted was read, but not counted).
    r.transactions = transactions_;
    r.request_size = cfg_.request_size;
    r.response_size = cfg_.response_size;
    r.latency_us = latency_;
    r.bytes_received = transactions_ * cfg_.response_size;
    r.data_verified = f0.copied == sent_ && f1.copied >= transactions_ * cfg_.response_size;
    if (!r.data_verified)
      throw std::runtime_error(fmt::format("stream check failed: requests {} B sent, {} B received; responses {} B "
                                           "received for {} transactions",
                                           sent_, f0.copied, f1.copied, transactions_));
  } else {
    r.bytes_received = f0.copied;
    r.data_verified = f0.copied == sent_;
    if (!r.data_verified)
      throw std::runtime_error(fmt::format("stream check failed: sent {} B, received {} B", sent_, f0.copied));
  }
  const double elapsed_ns = t_end_ - t_start_;
  // What netperf measured: a TCP_RR's CPU at its alarm, a stream's at its end.
  std::array<std::vector<frontends::KernelProfile>, 2> profs;
  for (size_t i = 0; i < 2; ++i) {
    auto acc = accounts_at_stop_ ? (*accounts_at_stop_)[i] : side_[i].host->accounts();
    auto& prof = profs[i];
    prof = profiles_at_stop_ ? (*profiles_at_stop_)[i] : side_[i].prof;
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
      p.wakeups = acc[k].wakeups;
      p.ipis = acc[k].ipis;
      p.context_switches = acc[k].context_switches;
      cp.push_back(std::move(p));
    }
    (i == 0 ? r.local_profile : r.remote_profile) = std::move(cp);
  }
  if (cfg_.explain) {
    frontends::ExplainMeasure m;
    m.interval_s = r.elapsed_s;
    m.links = link_use_;
    for (size_t i = 0; i < 2; ++i)
      m.hca[i] = hca_busy_[i].use();
    m.cores = {r.local_profile, r.remote_profile};
    m.host_role = {"netperf", "netserver"};
    bed_.describe(m, {lcpu_, rcpu_});
    r.explain = std::move(m);
  }
  out.local_kernel = std::move(profs[0]);
  out.remote_kernel = std::move(profs[1]);
  out.mss = f0.mss;
  out.segments = f0.segments + f1.segments;
  out.acks = f0.acks + f1.acks;
  out.local_interrupts = side_[0].hca->interrupts();
  out.remote_interrupts = side_[1].hca->interrupts();
  r.simgrid_activities = bed_.stats().activities();
  r.simgrid_time_steps = bed_.stats().time_steps;
  bed_.scheduler().stats().copy_to(r);
  r.max_rss_kb = max_rss_kb();
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return out;
}

}  // namespace ipoib_detail

using ipoib_detail::IpoibHost;
using ipoib_detail::read_ipoib_host;
using ipoib_detail::Stream;

void check_ipoib_parameters(const model::Platform& p) { (void)read_ipoib_host(p); }

namespace {

/// The TCP connection over IPoIB of run_ipoib_stream and run_ipoib_rr (cfg.test chooses).
frontends::IpoibStreamResult run_ipoib(const model::Platform& local, const model::Platform& remote,
                                       const frontends::TcpStreamConfig& cfg) {
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
  }
  if (a.ipoib.mode != b.ipoib.mode)
    throw InputError("ipoib.mode: both hosts must use the same IPoIB mode (datagram or connected)");
  if (ha.ib.mtu != hb.ib.mtu || (a.ipoib.mode == model::ipoib::Mode::Connected && a.ipoib.connected_mtu != b.ipoib.connected_mtu))
    throw InputError("ib.mtu / ipoib.connected_mtu: both hosts must have the same MTU");
  const StreamSetup setup = stream_setup(ha, hb, local, remote, cfg);
  // The four socket buffers as getsockopt gives them at creation (-s S,R and -S S,R).
  const std::array<uint64_t, 4> buffers{
      setup.send_socket,
      model::linux_socket_buffer(cfg.local_recv_socket, ha.rmem_max, ha.rmem_default, model::kSockMinRcvbuf),
      model::linux_socket_buffer(cfg.remote_send_socket, hb.wmem_max, hb.wmem_default, model::kSockMinSndbuf),
      setup.recv_socket};
  const bool rr = cfg.test == frontends::NetperfTest::Rr;
  std::unique_ptr<ChromeTrace> trace;  // --trace; outlives the stream, whose bed reports to it
  if (cfg.trace) {
    trace = std::make_unique<ChromeTrace>(
        TraceWindow{cfg.trace_start_s, cfg.trace_len_s},
        std::array<std::string, 2>{fmt::format("A: netperf on {}", local.name()),
                                   fmt::format("B: netserver on {}", remote.name())});
    trace->set_message_name("TCP segment");
  }
  Stream stream(ha, hb, a, b, cfg, buffers, rr ? cfg.request_size : setup.send_size,
                rr ? cfg.response_size : setup.recv_size, setup.local_cpu, setup.remote_cpu, trace.get());
  frontends::IpoibStreamResult out = stream.run();
  out.local_naming = a.naming;
  out.remote_naming = b.naming;
  if (trace)
    out.stream.trace_json = trace->json({{"tool", "netperf"}, {"transport", "ipoib"},
                                         {"ipoib_mode", a.ipoib.mode == model::ipoib::Mode::Connected ? "connected" : "datagram"},
                                         {"local_platform", local.name()}, {"remote_platform", remote.name()}});
  return out;
}

}  // namespace

frontends::IpoibStreamResult run_ipoib_stream(const model::Platform& local, const model::Platform& remote,
                                              const frontends::TcpStreamConfig& cfg) {
  // Preconditions on the config: the front end rejects -l 0 in its own words (frontends/netperf_cli.cpp).
  if (cfg.test == frontends::NetperfTest::Rr) throw InputError("TcpStreamConfig: a TCP_RR runs with run_ipoib_rr");
  if (cfg.length_bytes == 0 && !(cfg.length_s > 0))
    throw InputError(fmt::format("TcpStreamConfig: length_s {} must be > 0 when length_bytes is 0", cfg.length_s));
  return run_ipoib(local, remote, cfg);
}

frontends::IpoibStreamResult run_ipoib_rr(const model::Platform& local, const model::Platform& remote,
                                          const frontends::TcpStreamConfig& cfg) {
  if (cfg.test != frontends::NetperfTest::Rr) throw InputError("TcpStreamConfig: run_ipoib_rr runs a TCP_RR");
  if (cfg.transactions == 0 && !(cfg.length_s > 0))
    throw InputError(fmt::format("TcpStreamConfig: length_s {} must be > 0 when transactions is 0", cfg.length_s));
  if (cfg.request_size == 0 || cfg.response_size == 0)
    throw InputError("TcpStreamConfig: TCP_RR request and response sizes must be at least 1 byte");
  frontends::IpoibStreamResult out = run_ipoib(local, remote, cfg);
  // send_tcp_rr's sizes: -r's request and response.
  out.stream.send_size = cfg.request_size;
  out.stream.recv_size = cfg.response_size;
  return out;
}

}  // namespace hcasim::sim

namespace hcasim::sim {

frontends::IpoibStreamResult run_ipoib_maerts(const model::Platform& local, const model::Platform& remote,
                                              const frontends::TcpStreamConfig& cfg) {
  // The -T CPUs checked in netperf's terms first (a CPU the host lacks is named by its side).
  (void)stream_setup(read_host_params(local), read_host_params(remote), local, remote, cfg);
  frontends::IpoibStreamResult r;
  try {
    r = run_ipoib_stream(remote, local, maerts_stream_config(cfg));
  } catch (const frontends::ConfigError& e) {
    throw frontends::ConfigError(maerts_field(e.field()), e.reason());
  }
  maerts_result(r.stream, local, remote, cfg);
  std::swap(r.local_send_end, r.remote_send_end);
  std::swap(r.local_recv_end, r.remote_recv_end);
  std::swap(r.local_kernel, r.remote_kernel);
  std::swap(r.local_naming, r.remote_naming);
  std::swap(r.local_interrupts, r.remote_interrupts);
  return r;
}

}  // namespace hcasim::sim
