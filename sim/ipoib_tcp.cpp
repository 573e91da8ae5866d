// netperf TCP_STREAM and TCP_RR over IPoIB: TCP's sender and receiver and the two applications
// (sim/ipoib_stream.h), as Linux 2.6.10-2.6.12's tcp.c, tcp_input.c and tcp_output.c do them,
// with their buffer tuning: what netperf does not set with -s / -S grows as Linux grows it.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "sim/ipoib_stream.h"

namespace hcasim::sim::ipoib_detail {

uint64_t Stream::receive_window(const Flow& f) const {
  // __tcp_select_window (tcp_output.c): the free space, at most rcv_ssthresh, in whole segments
  // (the receiver's estimate of the sender's segment size); nothing when less than a segment is
  // free and less than half the full window (silly window avoidance).
  const uint64_t space = model::tcp_window_from_space(f.rcvbuf);
  const uint64_t full = std::min(f.window_clamp, space);
  const uint64_t mss = std::min<uint64_t>(f.mss, full);
  const uint64_t free = space > f.rcv_queue ? space - f.rcv_queue : 0;
  if (mss == 0 || (free < full / 2 && free < mss)) return 0;
  return std::min(free, f.rcv_ssthresh) / mss * mss;
}

void Stream::window_seen(Flow& f, uint64_t window) {
  if (window <= f.max_window) return;
  f.max_window = window;
  f.mss = model::tcp_mss_for_window(mss_clamp_, f.max_window, header_bytes_ - 20);
}

uint64_t Stream::jiffies(int i) const {
  const auto& costs = side_[static_cast<size_t>(i)].hp.costs;
  const double hz = costs.timer_hz > 0 ? costs.timer_hz : 1000;
  return static_cast<uint64_t>(sim::now_ns() * 1e-9 * hz);
}

void Stream::rcv_space_adjust(Flow& f) {
  const int rx = 1 - f.from;
  const uint64_t now = jiffies(rx);
  if (f.rcvq_timed) {
    // The receiver's RTT estimate is in jiffies (tcp_rcv_rtt_update): an IB round trip measures
    // 0, counted as 1, so the buffer is re-measured at most once a jiffy; none before a sample.
    if (!f.rcv_rtt_known || now - f.rcvq_time < 1) return;
    const uint64_t space = std::max(f.rcvq_space, 2 * (f.copied - f.rcvq_seq));
    if (space != f.rcvq_space) {
      f.rcvq_space = space;
      const auto& net = side_[static_cast<size_t>(rx)].p.net;
      if (net.moderate_rcvbuf && !f.rcv_locked) {
        const uint64_t grown = model::tcp_drs_rcvbuf(f.rcvbuf, space, mss_clamp_, net.tcp_rmem_max);
        if (grown > f.rcvbuf) {
          f.rcvbuf = grown;
          f.window_clamp = space;  // "make the window clamp follow along"
        }
      }
    }
  }
  f.rcvq_seq = f.copied;
  f.rcvq_time = now;
  f.rcvq_timed = true;
}

void Stream::delack_loop(Flow& f) {
  const int rx = 1 - f.from;
  Side& s = side_[static_cast<size_t>(rx)];
  const Ctx c{irq_ctx_[rx].core, /*softirq=*/true};  // the timer softirq
  s.host->bind_current(c.core);
  for (;;) {
    while (!f.delack_due) f.delack_wq.wait();
    f.delack_due = false;
    if (f.rcv_nxt > f.rcv_wup) send_ack(f, c);
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
  if (p.ack) {
    // A pure ACK of this side's data: tcp_v4_rcv checks the short segment's checksum at once.
    csum(s, c, tcp_bytes, false);
    if (s.owned) {
      s.backlog.push_back(p);
      return;
    }
    sender_ack(flow_[static_cast<size_t>(i)], c, p);
    return;
  }
  // Data of the peer.
  if (s.owned) {
    s.backlog.push_back(p);
  } else if (s.reader_waiting) {
    s.prequeue.push_back(p);
    if (s.prequeue.size() == 1) {
      s.reader_waiting = false;
      wake(s, c);
    }
  } else {
    receiver_segment(inbound(i), c, p, /*in_softirq=*/true);
  }
}

void Stream::backlog_packet(int i, const Ctx& c, const Packet& p) {
  if (p.ack)
    sender_ack(flow_[static_cast<size_t>(i)], c, p);
  else
    receiver_segment(inbound(i), c, p, false);
}

void Stream::output_cost(Side& s, const Ctx& c, const Packet& p) {
  charge(s, c, KernelFn::TcpTransmit, s.p.net.tx_packet_ns);
  csum(s, c, header_bytes_ - 20, false);  // tcp_v4_send_check: the TCP header (payload summed at copy)
  csum(s, c, 20, false);                  // ip_send_check
  netfilter(s, c, /*input=*/false, 0);
  charge(s, c, KernelFn::DmaMap, 0.5 * s.p.net.dma_map_ns(frame_bytes(p)));
  // netstack.ipoib_post is ipoib_send's work without the doorbell store, which the HCA model
  // charges with the post (Qp::post_send): the CPU is charged the work, the profile both.
  if (trace_ != nullptr) [[unlikely]]
    s.host->charge_labelled(model::kernel_fn_activity(KernelFn::IpoibXmit), s.p.net.ipoib_post_ns,
                            trace_label(s, KernelFn::IpoibXmit, c.softirq));
  else
    s.host->charge(model::kernel_fn_activity(KernelFn::IpoibXmit), s.p.net.ipoib_post_ns);
  profile(s, c, KernelFn::IpoibXmit, s.p.net.ipoib_post_ns + s.post_cpu_ns);
}

void Stream::push(Flow& f, const Ctx& c) {
  Side& s = side_[static_cast<size_t>(f.from)];
  for (;;) {
    const uint64_t unsent = f.write_seq - f.snd_nxt;
    if (unsent == 0) return;
    // Nagle: a short segment waits while data is in flight, unless the stream ends or
    // TCP_NODELAY (netperf's test option -D) is set. Transactions use Linux 2.6's variant,
    // Minshall's (tcp_nagle_check, tcp_minshall_check): it waits only while an earlier short
    // segment is unacknowledged, and each send() starts a new skb once the last went out. A
    // stream keeps the classic rule with its tail skb filled across send() calls: the seeds'
    // streams were measured and fitted with it (docs/design.md, IPoIB).
    const bool held = rr() ? f.snd_sml > f.snd_una && f.snd_sml <= f.snd_nxt : true;
    if (unsent < f.mss && !(f.sending_done || cfg_.nodelay) && f.snd_nxt != f.snd_una && held) return;
    const auto len = static_cast<uint32_t>(std::min<uint64_t>(unsent, f.mss));
    if (f.snd_nxt + len > f.snd_wnd_right) return;   // the peer's window
    if (s.tx_outstanding >= s.p.send_ring) return;    // netif_stop_queue: the ring is full
    Packet p;
    p.seq = f.snd_nxt;
    p.len = len;
    // Every segment carries the ACK of what this side has received (tcp_transmit_skb); only a
    // connection with data both ways has any to carry.
    if (rr()) fill_ack(inbound(f.from), p);
    f.snd_nxt += len;
    if (len < f.mss) f.snd_sml = f.snd_nxt;  // tcp_minshall_update
    ++f.segments;
    if (trace_ != nullptr) [[unlikely]]
      trace_->message(p.seq, p.len, sim::now_ns());
    output_cost(s, c, p);
    charge(s, c, KernelFn::Other, s.p.net.other_segment_ns);
    s.host->flush();
    transmit(f.from, p);
  }
}

void Stream::sender_ack(Flow& f, const Ctx& c, const Packet& p, bool with_data) {
  // tcp_rcv_established's fast path calls tcp_ack for a data segment only when its ACK field
  // acknowledges something new (ack_seq != snd_una).
  if (with_data && p.ack_seq <= f.snd_una) {
    window_seen(f, p.window);
    f.snd_wnd_right = std::max(f.snd_wnd_right, p.ack_seq + p.window);
    return;
  }
  Side& s = side_[static_cast<size_t>(f.from)];
  if (!with_data) charge(s, c, KernelFn::TcpReceive, s.p.net.rx_tcp_ns);
  charge(s, c, KernelFn::TcpAck, s.p.net.ack_rx_ns);
  auto in_flight = [&f] { return (f.snd_nxt - f.snd_una + f.mss - 1) / f.mss; };  // segments
  const uint64_t prior_in_flight = in_flight();
  const bool freed = p.ack_seq > f.snd_una;
  if (freed) f.snd_una = p.ack_seq;
  window_seen(f, p.window);
  f.snd_wnd_right = std::max(f.snd_wnd_right, p.ack_seq + p.window);
  // Slow start (tcp_cong_avoid, tcp_slow_start): one segment more per ACK while the window is
  // full. No loss ends it, and the model's sender is not held by it: it sizes the send buffer.
  if (freed && prior_in_flight >= f.cwnd) ++f.cwnd;
  // tcp_check_space: the queue shrank after the writer ran out of room: tcp_new_space grows an
  // unlocked send buffer while the congestion window is not full.
  if (freed && f.nospace && !f.snd_locked && in_flight() < f.cwnd)
    f.sndbuf = model::tcp_expand_sndbuf(f.sndbuf, std::max(mss_clamp_, f.mss), f.cwnd, s.p.net.tcp_wmem_max);
  // sk_stream_write_space (net/core/stream.c): a writer that ran out of room (SOCK_NOSPACE) is
  // woken once the free space is at least half of what is queued (sk_stream_wspace >=
  // sk_stream_min_wspace).
  const uint64_t queued = queued_bytes(f);
  if (f.nospace && f.sndbuf >= queued && f.sndbuf - queued >= queued / 2) {
    f.nospace = false;
    wake(s, c);
  }
  push(f, c);
}

void Stream::receiver_segment(Flow& f, const Ctx& c, const Packet& p, bool in_softirq) {
  Side& s = side_[static_cast<size_t>(1 - f.from)];
  charge(s, c, KernelFn::TcpReceive, s.p.net.rx_tcp_ns);
  // TCP's checksum of the segment: cold unless conntrack has just read it.
  csum(s, c, header_bytes_ - 20 + p.len, !s.p.net.netfilter);
  charge(s, c, KernelFn::Other, s.p.net.other_segment_ns);
  // The segment's ACK field, for this side's own data (tcp_ack before the data is queued).
  if (p.piggyback) sender_ack(flow_[static_cast<size_t>(1 - f.from)], c, p, /*with_data=*/true);
  f.rcv_nxt += p.len;
  f.rcv_queue += p.len;
  // tcp_event_data_recv: with timestamps every full segment samples the receiver's RTT
  // (tcp_rcv_rtt_measure_ts; without, the first window does); tcp_grow_window opens
  // rcv_ssthresh by two segments per segment of 128 B or more, up to the window clamp.
  f.rcv_rtt_known = true;
  if (p.len >= 128 && f.rcv_ssthresh < f.window_clamp) {
    const uint64_t space = model::tcp_window_from_space(f.rcvbuf);
    if (f.rcv_ssthresh < (space > f.rcv_queue ? space - f.rcv_queue : 0))
      f.rcv_ssthresh = std::min(f.rcv_ssthresh + 2 * uint64_t{mss_clamp_}, f.window_clamp);
  }
  // __tcp_ack_snd_check: more than one full segment unacknowledged and the window offered now
  // is no smaller than the last one advertised (a receiver whose queue grows, because its
  // reader lags, does not ACK from here: its reader's recv() will); else the delayed-ACK timer,
  // which an ACK sent before it expires cancels (a response carries it, in TCP_RR).
  if (f.rcv_nxt - f.rcv_wup > f.mss && receive_window(f) >= f.rcv_wnd) {
    send_ack(f, c);
  } else if (!f.delack_armed) {
    f.delack_armed = true;
    const uint64_t generation = f.acks_sent;
    bed_.timer().at(sim::now_ns() + 40e6, [&f, generation] {
      if (f.acks_sent != generation) return;  // an ACK went out: the timer was cleared
      // The timer's ACK goes from the timer softirq.
      f.delack_armed = false;
      f.delack_due = true;
      f.delack_wq.notify_all();
    });
  }
  if (in_softirq) wake(s, c);
}

void Stream::fill_ack(Flow& f, Packet& a) {
  a.piggyback = !a.ack;
  a.ack_seq = f.rcv_nxt;
  a.window = receive_window(f);
  f.rcv_wup = f.rcv_nxt;
  f.rcv_wnd = a.window;
  f.rcv_adv_right = std::max(f.rcv_adv_right, a.ack_seq + a.window);
  f.delack_armed = false;
  ++f.acks_sent;
}

void Stream::send_ack(Flow& f, const Ctx& c) {
  const int rx = 1 - f.from;
  Side& s = side_[static_cast<size_t>(rx)];
  Packet a;
  a.ack = true;
  fill_ack(f, a);
  ++f.acks;
  output_cost(s, c, a);
  s.host->flush();
  transmit(rx, a);
}

void Stream::start_measuring() {
  for (auto& side : side_) {
    side.host->reset_accounts();
    for (auto& k : side.prof) k.ns.fill(0), k.calls.fill(0);
  }
  if (cfg_.explain) {
    bed_.reset_link_busy();
    for (int i = 0; i < 2; ++i) bed_.hca(i).measure(&hca_busy_[static_cast<size_t>(i)]);
  }
  t_start_ = sim::now_ns();
  if (trace_ != nullptr) trace_->set_origin(t_start_);
}

void Stream::send_call(int i, const Ctx& c, uint64_t len) {
  Side& s = side_[static_cast<size_t>(i)];
  Flow& f = flow_[static_cast<size_t>(i)];
  // A send() after everything queued went out starts a new skb (tcp_sendmsg: no send head).
  if (rr() && f.snd_nxt == f.write_seq) f.fill = 0;
  charge(s, c, KernelFn::TcpSendmsg, s.p.net.send_call_ns);
  s.owned = true;
  auto release_backlog = [&] {
    while (!s.backlog.empty()) {
      const Packet p = s.backlog.front();
      s.backlog.pop_front();
      backlog_packet(i, c, p);
    }
  };
  uint64_t left = len;
  while (left > 0) {
    // tcp_sendmsg: the tail skb fills up to the segment size; a new one is allocated only
    // while the queued memory is below the send buffer (sk_stream_memory_free), else the
    // writer sets SOCK_NOSPACE and waits (a buffer below one segment holds one at a time).
    if (f.fill == 0 && queued_bytes(f) >= f.sndbuf) {
      f.nospace = true;
      // sk_stream_wait_memory: release the socket (its backlog runs), sleep for room.
      release_backlog();
      s.owned = false;
      sleep(s, c, [&] { return queued_bytes(f) < f.sndbuf; });
      yield_to_irq(s, c);
      s.owned = true;
      continue;
    }
    const uint64_t chunk = std::min<uint64_t>(left, f.mss - f.fill);
    // csum_and_copy_from_user: the application's buffer stays in the cache.
    charge(s, c, KernelFn::CopyUser, s.p.net.copy_ns(chunk));
    csum(s, c, chunk, false);
    f.write_seq += chunk;
    left -= chunk;
    f.fill = (f.fill + chunk) % f.mss;
    if (f.fill == 0) push(f, c);
  }
  // release_sock: the backlog's packets are processed by the caller itself.
  release_backlog();
  s.owned = false;
  // tcp_push at the end of tcp_sendmsg: a short tail goes too, if Nagle lets it.
  push(f, c);
  s.host->flush();
}

uint64_t Stream::recv_call(int i, const Ctx& c, uint64_t max) {
  Side& s = side_[static_cast<size_t>(i)];
  Flow& f = inbound(i);
  charge(s, c, KernelFn::TcpRecvmsg, s.p.net.recv_call_ns);
  s.owned = true;
  auto drain = [&](std::deque<Packet>& q) {
    while (!q.empty()) {
      const Packet p = q.front();
      q.pop_front();
      backlog_packet(i, c, p);
    }
  };
  drain(s.backlog);
  auto closed = [&f] { return f.sending_done && f.copied == f.write_seq; };
  while (f.rcv_queue == 0) {
    if (closed()) break;
    // Sleep in sk_wait_data with ucopy.task set: softirq prequeues for us.
    s.owned = false;
    s.reader_waiting = true;
    sleep(s, c, [&] { return !s.prequeue.empty() || f.rcv_queue > 0 || closed(); });
    yield_to_irq(s, c);
    s.reader_waiting = false;
    s.owned = true;
    drain(s.prequeue);
    drain(s.backlog);
  }
  if (f.rcv_queue == 0) {  // the peer closed
    s.owned = false;
    return 0;
  }
  const uint64_t n = std::min(f.rcv_queue, max);
  // skb_copy_datagram_iovec: one __copy_user per skb (segment) copied.
  charge(s, c, KernelFn::CopyUser, s.p.net.copy_ns(n) + s.p.net.copy_call_ns * static_cast<double>((n - 1) / f.mss),
         static_cast<double>((n + f.mss - 1) / f.mss));
  f.rcv_queue -= n;
  f.copied += n;
  rcv_space_adjust(f);
  // tcp_cleanup_rbuf (tcp.c): ACK now when more than a segment is unacknowledged, or when the
  // window the reader opened is at least twice what is left of the advertised one and that
  // is at most half the largest window.
  const uint64_t now_left = f.rcv_adv_right > f.rcv_nxt ? f.rcv_adv_right - f.rcv_nxt : 0;
  if (f.rcv_nxt - f.rcv_wup > f.mss ||
      (2 * now_left <= model::tcp_window_from_space(f.rcvbuf) && receive_window(f) >= 2 * std::max<uint64_t>(now_left, 1)))
    send_ack(f, c);
  drain(s.backlog);  // release_sock
  s.owned = false;
  s.host->flush();
  return n;
}

void Stream::netperf() {
  const Ctx c{lcpu_};
  Flow& f = flow_[0];
  side_[0].host->bind_current(c.core);
  start_measuring();
  const double stop = t_start_ + cfg_.length_s * 1e9;
  stop_ns_ = stop;
  demo_.emplace(cfg_.demo, frontends::demo_default_units(cfg_.demo, false, f.sndbuf_created, f.rcvbuf_created));
  demo_->start(t_start_);
  while (cfg_.length_bytes ? sent_ < cfg_.length_bytes : sim::now_ns() < stop) {
    const uint64_t len = cfg_.length_bytes ? std::min(send_size_, cfg_.length_bytes - sent_) : send_size_;
    yield_to_irq(side_[0], c);
    const double call_ns = sim::now_ns();
    ++send_calls_;
    send_call(0, c, len);
    sent_ += len;
    if (trace_ != nullptr) [[unlikely]]
      trace_->call(0, "netperf", TraceCall::Send, call_ns, sim::now_ns(), sent_ - len, len);
    if (!cfg_.demo.at_receiver && (cfg_.length_bytes || sim::now_ns() <= stop))
      demo_->tick(sim::now_ns(), static_cast<double>(len));
  }
  if (!cfg_.demo.at_receiver) demo_->finish(cfg_.length_bytes ? sim::now_ns() : std::min(sim::now_ns(), stop));
  f.sending_done = true;
  push(f, c);
  side_[0].host->flush();
  side_[1].host->notify(*side_[1].sock_wq);  // the FIN: a reader with nothing left to read returns
}

void Stream::netserver() {
  const Ctx c{rcpu_};
  const Flow& f = flow_[0];
  side_[1].host->bind_current(c.core);
  const uint64_t total_target = cfg_.length_bytes;
  for (;;) {
    yield_to_irq(side_[1], c);
    const double call_ns = sim::now_ns();
    ++recv_calls_;
    const uint64_t n = recv_call(1, c, recv_size_);
    if (n == 0) break;  // the stream ended
    if (trace_ != nullptr) [[unlikely]]
      trace_->call(1, "netserver", TraceCall::Recv, call_ns, sim::now_ns(), f.copied - n, n);
    if (cfg_.demo.at_receiver && demo_ && (total_target || sim::now_ns() <= stop_ns_))
      demo_->tick(sim::now_ns(), static_cast<double>(n));
    if (total_target && f.copied >= total_target) break;
  }
  if (cfg_.demo.at_receiver && demo_)
    demo_->finish(total_target ? sim::now_ns() : std::min(sim::now_ns(), stop_ns_));
  t_end_ = sim::now_ns();
  if (cfg_.explain) {
    link_use_ = bed_.link_use();
    for (int i = 0; i < 2; ++i) bed_.hca(i).measure(nullptr);
  }
}

void Stream::rr_netperf() {
  // nettest_bsd.c send_tcp_rr: one send() of the request, recv() until the whole response is
  // in; for -l seconds (the alarm ends the test: a transaction it interrupts is not counted) or
  // -l -N transactions.
  const Ctx c{lcpu_};
  side_[0].host->bind_current(c.core);
  start_measuring();
  const double stop = t_start_ + cfg_.length_s * 1e9;
  stop_ns_ = stop;
  demo_.emplace(cfg_.demo, frontends::demo_default_units(cfg_.demo, true, 0, 0));
  demo_->start(t_start_);
  for (;;) {
    if (cfg_.transactions ? transactions_ >= cfg_.transactions : sim::now_ns() >= stop) break;
    // HIST_timestamp(&time_one): gettimeofday's microseconds.
    const auto time_one_us = static_cast<int64_t>(std::floor(sim::now_ns() / 1000.0));
    yield_to_irq(side_[0], c);
    ++send_calls_;
    send_call(0, c, cfg_.request_size);
    sent_ += cfg_.request_size;
    uint64_t left = cfg_.response_size, calls = 0;
    while (left > 0) {
      yield_to_irq(side_[0], c);
      const uint64_t n = recv_call(0, c, left);
      if (n == 0) throw std::runtime_error("netserver closed the connection in the middle of a transaction");
      ++calls;
      left -= n;
    }
    // The alarm went off inside this transaction: its request is counted, its response's
    // receives are not (as in run_tcp_rr, sim/netperf_sim.cpp: nettest_omni.c recv_data returns
    // -1 on EINTR).
    if (!cfg_.transactions && sim::now_ns() > stop) break;
    recv_calls_ += calls;
    if (cfg_.keep_latency) latency_.add(static_cast<int64_t>(std::floor(sim::now_ns() / 1000.0)) - time_one_us);
    demo_->tick(sim::now_ns(),
                cfg_.demo.rr_ticks_bytes ? static_cast<double>(cfg_.request_size + cfg_.response_size) : 1.0);
    ++transactions_;
  }
  demo_->finish(cfg_.transactions ? sim::now_ns() : std::min(sim::now_ns(), stop));
  // A timed test ends at its alarm (cpu_stop right after the interrupted call); a counted one
  // when its last response is in. What netperf measures is taken there.
  t_end_ = cfg_.transactions ? sim::now_ns() : stop;
  accounts_at_stop_.emplace();
  profiles_at_stop_.emplace();
  for (size_t i = 0; i < 2; ++i) {
    (*accounts_at_stop_)[i] = side_[i].host->accounts();
    (*profiles_at_stop_)[i] = side_[i].prof;
  }
  flow_[0].sending_done = true;
  push(flow_[0], c);
  side_[0].host->flush();
  side_[1].host->notify(*side_[1].sock_wq);  // the FIN: netserver's recv() returns 0
}

void Stream::rr_netserver() {
  // nettest_bsd.c recv_tcp_rr: recv() until the whole request is in, send() the response,
  // until netperf closes.
  const Ctx c{rcpu_};
  side_[1].host->bind_current(c.core);
  for (;;) {
    uint64_t left = cfg_.request_size;
    while (left > 0) {
      yield_to_irq(side_[1], c);
      const uint64_t n = recv_call(1, c, left);
      if (n == 0) return;  // netperf closed (its partial request is not answered)
      left -= n;
    }
    yield_to_irq(side_[1], c);
    send_call(1, c, cfg_.response_size);
  }
}

}  // namespace hcasim::sim::ipoib_detail
