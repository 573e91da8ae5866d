// netperf TCP_STREAM over IPoIB: TCP's sender and receiver and the two applications
// (sim/ipoib_stream.h), as Linux 2.6.10-2.6.12's tcp.c, tcp_input.c and tcp_output.c do them,
// with their buffer tuning: what netperf does not set with -s / -S grows as Linux grows it.
#include <algorithm>

#include "sim/ipoib_stream.h"

namespace hcasim::sim::ipoib_detail {

uint64_t Stream::receive_window() const {
  // __tcp_select_window (tcp_output.c): the free space, at most rcv_ssthresh, in whole segments
  // (the receiver's estimate of the sender's segment size); nothing when less than a segment is
  // free and less than half the full window (silly window avoidance).
  const uint64_t space = model::tcp_window_from_space(rcvbuf_);
  const uint64_t full = std::min(window_clamp_, space);
  const uint64_t mss = std::min<uint64_t>(mss_, full);
  const uint64_t free = space > rcv_queue_ ? space - rcv_queue_ : 0;
  if (mss == 0 || (free < full / 2 && free < mss)) return 0;
  return std::min(free, rcv_ssthresh_) / mss * mss;
}

void Stream::window_seen(uint64_t window) {
  if (window <= max_window_) return;
  max_window_ = window;
  mss_ = model::tcp_mss_for_window(mss_clamp_, max_window_, header_bytes_ - 20);
}

uint64_t Stream::jiffies() const {
  const double hz = side_[1].hp.costs.timer_hz > 0 ? side_[1].hp.costs.timer_hz : 1000;
  return static_cast<uint64_t>(sim::now_ns() * 1e-9 * hz);
}

void Stream::rcv_space_adjust() {
  const uint64_t now = jiffies();
  if (rcvq_timed_) {
    // The receiver's RTT estimate is in jiffies (tcp_rcv_rtt_update): an IB round trip measures
    // 0, counted as 1, so the buffer is re-measured at most once a jiffy; none before a sample.
    if (!rcv_rtt_known_ || now - rcvq_time_ < 1) return;
    const uint64_t space = std::max(rcvq_space_, 2 * (copied_ - rcvq_seq_));
    if (space != rcvq_space_) {
      rcvq_space_ = space;
      if (side_[1].p.net.moderate_rcvbuf && !rcv_locked_) {
        const uint64_t grown = model::tcp_drs_rcvbuf(rcvbuf_, space, mss_clamp_, side_[1].p.net.tcp_rmem_max);
        if (grown > rcvbuf_) {
          rcvbuf_ = grown;
          window_clamp_ = space;  // "make the window clamp follow along"
        }
      }
    }
  }
  rcvq_seq_ = copied_;
  rcvq_time_ = now;
  rcvq_timed_ = true;
}

void Stream::delack_loop() {
  Side& s = side_[1];
  const Ctx c{irq_ctx_[1].core, /*softirq=*/true};  // the timer softirq
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
  // netstack.ipoib_post is ipoib_send's work without the doorbell store, which the HCA model
  // charges with the post (Qp::post_send): the CPU is charged the work, the profile both.
  if (trace_ != nullptr) [[unlikely]]
    s.host->charge_labelled(model::kernel_fn_activity(KernelFn::IpoibXmit), s.p.net.ipoib_post_ns,
                            trace_label(KernelFn::IpoibXmit, c.softirq));
  else
    s.host->charge(model::kernel_fn_activity(KernelFn::IpoibXmit), s.p.net.ipoib_post_ns);
  profile(s, c, KernelFn::IpoibXmit, s.p.net.ipoib_post_ns + s.post_cpu_ns);
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
    if (trace_ != nullptr) [[unlikely]]
      trace_->message(p.seq, p.len, sim::now_ns());
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
  auto in_flight = [this] { return (snd_nxt_ - snd_una_ + mss_ - 1) / mss_; };  // segments
  const uint64_t prior_in_flight = in_flight();
  const bool freed = p.ack_seq > snd_una_;
  if (freed) snd_una_ = p.ack_seq;
  window_seen(p.window);
  snd_wnd_right_ = std::max(snd_wnd_right_, p.ack_seq + p.window);
  // Slow start (tcp_cong_avoid, tcp_slow_start): one segment more per ACK while the window is
  // full. No loss ends it, and the model's sender is not held by it: it sizes the send buffer.
  if (freed && prior_in_flight >= cwnd_) ++cwnd_;
  // tcp_check_space: the queue shrank after the writer ran out of room: tcp_new_space grows an
  // unlocked send buffer while the congestion window is not full.
  if (freed && nospace_ && !snd_locked_ && in_flight() < cwnd_)
    sndbuf_ = model::tcp_expand_sndbuf(sndbuf_, std::max(mss_clamp_, mss_), cwnd_, side_[0].p.net.tcp_wmem_max);
  // sk_stream_write_space (net/core/stream.c): wake the writer once the free space is at
  // least half of what is queued (sk_stream_wspace >= sk_stream_min_wspace).
  const uint64_t queued = queued_bytes();
  if (sndbuf_ >= queued && sndbuf_ - queued >= queued / 2) {
    nospace_ = false;
    wake(s, c);
  }
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
  // tcp_event_data_recv: with timestamps every full segment samples the receiver's RTT
  // (tcp_rcv_rtt_measure_ts; without, the first window does); tcp_grow_window opens
  // rcv_ssthresh by two segments per segment of 128 B or more, up to the window clamp.
  rcv_rtt_known_ = true;
  if (p.len >= 128 && rcv_ssthresh_ < window_clamp_) {
    const uint64_t space = model::tcp_window_from_space(rcvbuf_);
    if (rcv_ssthresh_ < (space > rcv_queue_ ? space - rcv_queue_ : 0))
      rcv_ssthresh_ = std::min(rcv_ssthresh_ + 2 * uint64_t{mss_clamp_}, window_clamp_);
  }
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
  if (cfg_.explain) {
    bed_.reset_link_busy();
    for (int i = 0; i < 2; ++i) bed_.hca(i).measure(&hca_busy_[static_cast<size_t>(i)]);
  }
  t_start_ = sim::now_ns();
  if (trace_ != nullptr) trace_->set_origin(t_start_);
  const double stop = t_start_ + cfg_.length_s * 1e9;
  stop_ns_ = stop;
  demo_.emplace(cfg_.demo, frontends::demo_default_units(cfg_.demo, false, sndbuf_created_, rcvbuf_created_));
  demo_->start(t_start_);
  uint64_t fill = 0;  // bytes in the tail skb
  while (cfg_.length_bytes ? sent_ < cfg_.length_bytes : sim::now_ns() < stop) {
    const uint64_t len = cfg_.length_bytes ? std::min(send_size_, cfg_.length_bytes - sent_) : send_size_;
    yield_to_irq(s, c);
    const double call_ns = sim::now_ns();
    ++send_calls_;
    charge(s, c, KernelFn::TcpSendmsg, s.p.net.send_call_ns);
    s.owned = true;
    uint64_t left = len;
    while (left > 0) {
      auto queued = [&] { return queued_bytes(); };
      // tcp_sendmsg: the tail skb fills up to the segment size; a new one is allocated only
      // while the queued memory is below the send buffer (sk_stream_memory_free), else the
      // writer sets SOCK_NOSPACE and waits (a buffer below one segment holds one at a time).
      if (fill == 0 && queued() >= sndbuf_) {
        nospace_ = true;
        // sk_stream_wait_memory: release the socket (its backlog runs), sleep for room.
        while (!s.backlog.empty()) {
          const Packet p = s.backlog.front();
          s.backlog.pop_front();
          sender_ack(c, p);
        }
        s.owned = false;
        sleep(s, c, [&] { return queued() < sndbuf_; });
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
    if (trace_ != nullptr) [[unlikely]]
      trace_->call(0, "netperf", TraceCall::Send, call_ns, sim::now_ns(), sent_ - len, len);
    if (!cfg_.demo.at_receiver && (cfg_.length_bytes || sim::now_ns() <= stop))
      demo_->tick(sim::now_ns(), static_cast<double>(len));
  }
  if (!cfg_.demo.at_receiver) demo_->finish(cfg_.length_bytes ? sim::now_ns() : std::min(sim::now_ns(), stop));
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
    const double call_ns = sim::now_ns();
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
    rcv_space_adjust();
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
    if (trace_ != nullptr) [[unlikely]]
      trace_->call(1, "netserver", TraceCall::Recv, call_ns, sim::now_ns(), copied_ - n, n);
    if (cfg_.demo.at_receiver && demo_ && (total_target || sim::now_ns() <= stop_ns_))
      demo_->tick(sim::now_ns(), static_cast<double>(n));
    if (total_target && copied_ >= total_target) break;
  }
  if (cfg_.demo.at_receiver && demo_)
    demo_->finish(total_target ? sim::now_ns() : std::min(sim::now_ns(), stop_ns_));
  t_end_ = sim::now_ns();
  if (cfg_.explain) {
    link_use_ = bed_.link_use();
    for (int i = 0; i < 2; ++i) bed_.hca(i).measure(nullptr);
  }
}

}  // namespace hcasim::sim::ipoib_detail
