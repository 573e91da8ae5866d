#include "sdp/socket.h"

#include <algorithm>
#include <array>
#include <exception>
#include <limits>
#include <optional>

#include <fmt/format.h>

namespace hcasim::sdp {

using model::Activity;

namespace {
constexpr uint32_t kHdr = static_cast<uint32_t>(Bsdh::kSize);
constexpr uint32_t kCtlHdr = static_cast<uint32_t>(ChRcvBufHeader::kSize);
}  // namespace

SdpSocket::SdpSocket(Host& host, Verbs& verbs, const SdpConfig& config, std::string name)
    : host_(host), verbs_(verbs), cfg_(config), name_(std::move(name)) {
  if (cfg_.tx_ring == 0 || cfg_.rx_ring == 0 || cfg_.tx_ring > verbs_.max_send_wr() ||
      cfg_.rx_ring > verbs_.max_recv_wr())
    throw VerbsError(fmt::format("{}: rings {}/{} do not fit the QP ({}/{})", name_, cfg_.tx_ring,
                                 cfg_.rx_ring, verbs_.max_send_wr(), verbs_.max_recv_wr()));
  tx_wq_ = host_.make_wait_queue();
  rx_wq_ = host_.make_wait_queue();
  cq_wq_ = host_.make_wait_queue();
  lock_wq_ = host_.make_wait_queue();
  lkey_ = verbs_.dma_mr();
  Memory& mem = host_.memory();
  // Transmit buffers: payload regions of the largest SEND; one header region per ring slot.
  for (uint32_t i = 0; i < cfg_.tx_ring; ++i) {
    Buf b;
    b.payload = mem.allocate(cfg_.max_recv_size, mem.data_mode());
    b.capacity = cfg_.max_recv_size;
    b.hdr = mem.allocate(kCtlHdr, DataMode::Bytes, 64);  // the slot's header
    tx_bufs_.push_back(b);
    tx_free_.push_back(static_cast<int>(cfg_.tx_ring - 1 - i));
  }
  tx_ring_.resize(cfg_.tx_ring);
  tx_owner_.resize(cfg_.tx_ring);
  rx_owner_.resize(cfg_.rx_ring);
  rx_size_ = cfg_.initial_recv_size;
  for (uint32_t i = 0; i < cfg_.rx_ring; ++i) {
    rx_bufs_.push_back(make_buf(rx_size_));
    post_recv_buf(static_cast<int>(i));
  }
  remote_credits_ = static_cast<int64_t>(rx_posted_.size());
}

SdpSocket::~SdpSocket() = default;

SdpSocket::Buf SdpSocket::make_buf(uint32_t capacity) {
  Memory& mem = host_.memory();
  Buf b;
  b.hdr = mem.allocate(kCtlHdr, DataMode::Bytes, 64);
  b.payload = mem.allocate(capacity, mem.data_mode());
  b.capacity = capacity;
  return b;
}

uint32_t SdpSocket::skb_lines(uint32_t len, bool pages) const {
  return cfg_.skb_lines + (pages ? (len + cfg_.page_size - 1) / cfg_.page_size : 0);
}

// ---- connection establishment (CM private data) -------------------------------------------

std::vector<uint8_t> SdpSocket::hello(uint16_t port) {
  HelloHeader hh;
  hh.bsdh.bufs = static_cast<uint16_t>(rx_posted_.size());
  hh.bsdh.mseq = tx_head_ = tx_tail_ = 1;  // OFED 1.3 starts the rings at 1 (sdp_init_qp)
  hh.bsdh.mseq_ack = 0;
  hh.desremrcvsz = cfg_.max_recv_size + kHdr;
  hh.localrcvsz = rx_size_ + kHdr;
  hh.port = port;
  auto bytes = hh.to_bytes();
  std::vector<uint8_t> out(HelloHeader::kPrivateDataSize, 0);
  std::copy(bytes.begin(), bytes.end(), out.begin());
  return out;
}

std::vector<uint8_t> SdpSocket::accept_hello(std::span<const uint8_t> hello_bytes) {
  HelloHeader hh = HelloHeader::decode(hello_bytes);
  if (hh.localrcvsz <= kHdr) throw ProtocolError(fmt::format("HH: localrcvsz {} too small", hh.localrcvsz));
  tx_head_ = tx_tail_ = 1;
  tx_credits_ = hh.bsdh.bufs;
  xmit_goal_ = std::min(hh.localrcvsz - kHdr, cfg_.max_recv_size);
  rx_last_mseq_ = 0;
  HelloAckHeader hah;
  hah.bsdh.bufs = static_cast<uint16_t>(rx_posted_.size());
  hah.bsdh.mseq = 1;
  hah.bsdh.mseq_ack = 0;
  hah.actrcvsz = rx_size_ + kHdr;
  state_ = State::Established;
  auto bytes = hah.to_bytes();
  std::vector<uint8_t> out(HelloAckHeader::kPrivateDataSize, 0);
  std::copy(bytes.begin(), bytes.end(), out.begin());
  return out;
}

void SdpSocket::hello_ack(std::span<const uint8_t> ack_bytes) {
  HelloAckHeader hah = HelloAckHeader::decode(ack_bytes);
  if (hah.actrcvsz <= kHdr) throw ProtocolError(fmt::format("HAH: actrcvsz {} too small", hah.actrcvsz));
  tx_credits_ = hah.bsdh.bufs;
  xmit_goal_ = std::min(hah.actrcvsz - kHdr, cfg_.max_recv_size);
  rx_last_mseq_ = 0;
  state_ = State::Established;
}

// ---- posting ---------------------------------------------------------------------------------

bool SdpSocket::tx_ring_busy() const { return tx_head_ - tx_tail_ >= cfg_.tx_ring / 2; }

bool SdpSocket::ring_full() const { return tx_head_ - tx_tail_ >= cfg_.tx_ring; }

bool SdpSocket::can_post_data() const {
  return tx_credits_ > static_cast<int64_t>(cfg_.min_credits) && !ring_full();
}

void SdpSocket::post_recv_buf(int buf) {
  // sdp_post_recv maps a new receive buffer (header and pages) for this I/O.
  const Buf& rb = rx_bufs_[static_cast<size_t>(buf)];
  host_.charge(Activity::Post, host_.costs().post_wr_ns + host_.costs().post_map_ns(kHdr) +
                                   host_.costs().post_map_ns(rb.capacity));
  host_.sync();  // then post at once: the RQ and rx_posted_ stay in the same order
  const Buf& b = rx_bufs_[static_cast<size_t>(buf)];
  RecvWr wr;
  wr.wr_id = static_cast<uint64_t>(buf);
  wr.sg[0] = {b.hdr, kHdr, lkey_};
  wr.sg[1] = {b.payload, b.capacity, lkey_};
  wr.num_sge = 2;
  verbs_.post_recv(wr);
  rx_posted_.push_back(buf);
}

void SdpSocket::repost_or_grow(int buf) {
  if (state_ == State::Aborted || state_ == State::Closed) return;
  if (rx_bufs_[static_cast<size_t>(buf)].capacity < rx_size_) rx_bufs_[static_cast<size_t>(buf)] = make_buf(rx_size_);
  post_recv_buf(buf);
}

void SdpSocket::post_now(const Skb& skb) {
  const uint32_t slot = tx_head_ % cfg_.tx_ring;
  const Addr hdr = tx_bufs_[slot].hdr;  // every ring slot owns a header region
  uint32_t hdr_len = kHdr;
  Bsdh h;
  h.mid = skb.mid;
  h.bufs = static_cast<uint16_t>(rx_posted_.size());
  h.mseq = tx_head_;
  h.mseq_ack = rx_last_mseq_;
  if (skb.mid == Mid::ChRcvBuf || skb.mid == Mid::ChRcvBufAck) {
    ChRcvBufHeader c;
    c.bsdh = h;
    c.bsdh.len = kCtlHdr;
    c.size = skb.extra;
    auto bytes = c.to_bytes();
    host_.memory().write_bytes(hdr, bytes.data(), bytes.size());
    hdr_len = kCtlHdr;
  } else {
    h.len = kHdr + skb.len;
    auto bytes = h.to_bytes();
    host_.memory().write_bytes(hdr, bytes.data(), bytes.size());
  }
  SendWr wr;
  wr.wr_id = tx_head_;
  wr.opcode = WrOpcode::Send;
  wr.sg[0] = {hdr, hdr_len, lkey_};
  wr.num_sge = 1;
  if (skb.len > 0) {
    Addr payload = skb.bz ? skb.user : tx_bufs_[static_cast<size_t>(skb.buf)].payload;
    wr.sg[1] = {payload, skb.len, lkey_};
    wr.num_sge = 2;
  }
  wr.signaled = true;  // OFED 1.3 SDP signals every SEND
  tx_ring_[slot] = skb;
  ++tx_head_;
  --tx_credits_;
  remote_credits_ = static_cast<int64_t>(rx_posted_.size());
  ++stats_.msgs_sent;
  if (skb.mid == Mid::Data && skb.len > 0) {
    ++stats_.data_msgs_sent;
    if (on_data_message_) on_data_message_(stats_.bytes_sent, skb.len);
    stats_.bytes_sent += skb.len;
  }
  verbs_.post_send(wr);
}

std::optional<SdpSocket::Skb> SdpSocket::next_to_post(bool take) {
  if (state_ != State::Established && state_ != State::Closing) return std::nullopt;
  if (ring_full()) return std::nullopt;
  // ChRcvBufAck once every posted receive buffer has the new size.
  if (resize_ack_pending_ && tx_credits_ >= 1 &&
      std::all_of(rx_posted_.begin(), rx_posted_.end(),
                  [&](int b) { return rx_bufs_[static_cast<size_t>(b)].capacity >= rx_size_; })) {
    if (take) resize_ack_pending_ = false;
    return Skb{.mid = Mid::ChRcvBufAck, .extra = rx_size_};
  }
  if (!tx_queue_.empty() && can_post_data() && nagle_off(tx_queue_.front())) {
    Skb s = tx_queue_.front();
    if (take) tx_queue_.pop_front();
    return s;
  }
  // Ask for bigger peer buffers (ChRcvBuf) once the stream needs more than one buffer per
  // send. OFED 1.3 asks when credits fall to SDP_MIN_BUFS, which a bulk stream of 2 KB
  // messages reaches within its first ring; hcasim asks at the first send larger than the
  // peer's buffer, the same outcome without depending on the first ring's timing.
  if (want_resize_ && !resize_requested_ && xmit_goal_ < cfg_.max_recv_size && tx_credits_ >= 1) {
    if (take) {
      resize_requested_ = true;
      ++stats_.resize_requests;
    }
    return Skb{.mid = Mid::ChRcvBuf, .extra = cfg_.max_recv_size};
  }
  // Bare BSDH credit update when the peer's view of our receive buffers ran low
  // (sdp_post_sends: c = remote_credits, doubled above SDP_MIN_BUFS, compared to posted).
  int64_t c = remote_credits_;  // the peer's view of our posted receives
  if (c > static_cast<int64_t>(cfg_.min_credits)) c *= 2;
  if (c < static_cast<int64_t>(rx_posted_.size()) && tx_credits_ > 1) {
    if (take) ++stats_.credit_updates_sent;
    return Skb{.mid = Mid::Data, .len = 0};
  }
  if (disconnect_wanted_ && !disconnect_sent_ && tx_queue_.empty() && tx_credits_ >= 1) {
    if (take) disconnect_sent_ = true;
    return Skb{.mid = Mid::DisConn};
  }
  return std::nullopt;
}

void SdpSocket::post_sends() {
  // sdp_post_sends, under the socket lock (every caller holds it, so one context posts at a
  // time). Each post is paid for first, then chosen and posted in one instant, so the mseq
  // order is the order on the wire.
  while (std::optional<Skb> next = next_to_post(false)) {
    // sdp_post_send maps the header and a bcopy buffer's pages for this I/O (unmapped at its
    // completion); bzcopy pages were mapped once in sdp_bz_setup.
    const double map_ns = host_.costs().post_map_ns(kHdr) + (next->bz ? 0.0 : host_.costs().post_map_ns(next->len));
    host_.charge(Activity::Post, host_.costs().post_wr_ns + map_ns);
    host_.sync();
    if (std::optional<Skb> skb = next_to_post(true)) post_now(*skb);
  }
}

// ---- completions -----------------------------------------------------------------------------

void SdpSocket::poll_cq() {
  // Under the socket lock (every caller holds it): one context processes completions at a
  // time, in CQ order, as the kernel's socket lock serialises them.
  std::array<Wc, kPollBatch>& wc = wc_batch_;
  bool rx_woke = false, tx_woke = false;
  for (;;) {
    const int n = verbs_.poll_cq(wc);
    for (int i = 0; i < n; ++i) {
      host_.charge(Activity::Completion, host_.costs().cqe_ns);
      ++stats_.cqes;
      const size_t before_q = rx_queue_.size();
      const uint32_t before_tail = tx_tail_;
      const int64_t before_credits = tx_credits_;
      handle_wc(wc[static_cast<size_t>(i)]);
      rx_woke |= rx_queue_.size() != before_q || peer_disconnected_;
      tx_woke |= tx_tail_ != before_tail || tx_credits_ != before_credits;
    }
    if (n < kPollBatch) break;
  }
  post_sends();
  if (rx_woke || state_ == State::Aborted) host_.wake(*rx_wq_);
  if (tx_woke || state_ == State::Aborted) host_.wake(*tx_wq_);
}

void SdpSocket::handle_wc(const Wc& wc) {
  if (wc.status != WcStatus::Success) {
    if (state_ != State::Closed && state_ != State::Aborted)
      abort(fmt::format("completion error {} on wr_id {}", wc_status_str(wc.status), wc.wr_id));
    return;
  }
  if (wc.opcode == WcOpcode::Recv)
    handle_recv(wc);
  else
    handle_send_done(wc);
}

void SdpSocket::handle_send_done(const Wc& wc) {
  if (wc.wr_id != tx_tail_) {
    abort(fmt::format("send completion for mseq {} but {} is the oldest", wc.wr_id, tx_tail_));
    return;
  }
  Skb& s = tx_ring_[tx_tail_ % cfg_.tx_ring];
  if (s.mid == Mid::Data && s.len > 0 && !s.bz) {  // kfree_skb: the sender's skb and pages
    host_.share(tx_owner_[static_cast<size_t>(s.buf)], skb_lines(s.len, true));
    tx_free_.push_back(s.buf);
  }
  if (s.bz && --bz_busy_ == 0) host_.notify(*cq_wq_);
  ++tx_tail_;
}

void SdpSocket::handle_recv(const Wc& wc) {
  if (rx_posted_.empty() || static_cast<uint64_t>(rx_posted_.front()) != wc.wr_id) {
    abort(fmt::format("receive completion for buffer {} out of order", wc.wr_id));
    return;
  }
  const int buf = rx_posted_.front();
  rx_posted_.pop_front();
  const Buf& b = rx_bufs_[static_cast<size_t>(buf)];
  std::array<uint8_t, kCtlHdr> raw{};
  host_.memory().read_bytes(b.hdr, raw.data(), std::min<uint32_t>(kHdr, wc.byte_len));
  if (wc.byte_len >= kCtlHdr && (raw[0] == static_cast<uint8_t>(Mid::ChRcvBuf) ||
                                 raw[0] == static_cast<uint8_t>(Mid::ChRcvBufAck)))
    host_.memory().read_bytes(b.payload, raw.data() + kHdr, kCtlHdr - kHdr);  // the u32 size
  Bsdh h;
  try {
    h = Bsdh::decode(std::span<const uint8_t>(raw.data(), std::min<size_t>(kHdr, wc.byte_len)));
    h.check_len(wc.byte_len);
    if (h.mseq != rx_last_mseq_ + 1)
      throw ProtocolError(fmt::format("BSDH: mseq {} after {}", h.mseq, rx_last_mseq_));
  } catch (const ProtocolError& e) {
    abort(e.what());
    return;
  }
  ++stats_.msgs_received;
  rx_last_mseq_ = h.mseq;
  --remote_credits_;
  // credits = mseq_ack - tx_head + 1 + bufs (OFED 1.3 sdp_bcopy.c sdp_handle_recv_comp)
  tx_credits_ = static_cast<int64_t>(h.mseq_ack) - static_cast<int64_t>(tx_head_) + 1 + h.bufs;
  switch (h.mid) {
    case Mid::Data:
      if (h.len > kHdr) {  // the skb goes on the socket's receive queue
        host_.share(rx_owner_[static_cast<size_t>(buf)], skb_lines(0, false));
        rx_queue_.push_back({buf, 0, h.len - kHdr});
        stats_.bytes_received += h.len - kHdr;
      } else {
        repost_or_grow(buf);
      }
      break;
    case Mid::ChRcvBuf: {
      auto c = ChRcvBufHeader::decode(std::span<const uint8_t>(raw.data(), kCtlHdr));
      rx_size_ = std::clamp(c.size, cfg_.initial_recv_size, cfg_.max_recv_size);
      resize_ack_pending_ = true;
      repost_or_grow(buf);
      break;
    }
    case Mid::ChRcvBufAck: {
      auto c = ChRcvBufHeader::decode(std::span<const uint8_t>(raw.data(), kCtlHdr));
      xmit_goal_ = std::min(c.size, cfg_.max_recv_size);
      repost_or_grow(buf);
      break;
    }
    case Mid::DisConn:
      peer_disconnected_ = true;
      if (disconnect_sent_) state_ = State::Closed;
      break;
    case Mid::AbortConn:
      abort("peer sent AbortConn");
      break;
    default:
      abort(fmt::format("unsupported MID {} in bcopy/bzcopy mode", mid_name(h.mid)));
      break;
  }
}

// ---- the socket lock -------------------------------------------------------------------------

/// Holds lock_sock for a scope. Released without waking anyone when an exception (an actor
/// being killed among them) leaves the scope. The release itself may be where the actor is
/// killed (the wake-up costs CPU time, slept off): that exception leaves the destructor.
class SdpSocket::Lock {
 public:
  explicit Lock(SdpSocket& s) : s_(s) { s_.lock_sock(); }
  ~Lock() noexcept(false) {
    if (std::uncaught_exceptions() > 0)
      s_.owned_ = false;
    else
      s_.release_sock();
  }
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;

 private:
  SdpSocket& s_;
};

void SdpSocket::lock_sock() {
  while (owned_) host_.sleep(*lock_wq_, [&] { return !owned_; });
  owned_ = true;
  host_.share(sock_owner_, cfg_.socket_lines);
}

void SdpSocket::release_sock() {
  host_.sync();  // the owner's CPU time so far was spent holding the lock
  owned_ = false;
  host_.wake(*lock_wq_);
}

void SdpSocket::on_cq_event() {
  // sdp_completion_handler -> sdp_work (a work queue on the interrupted CPU): lock_sock, poll,
  // re-arm, poll, release_sock (OFED 1.3 sdp_bcopy.c). While a system call owns the socket
  // the work sleeps in lock_sock.
  ++stats_.cq_events;
  Lock lock(*this);
  poll_cq();
  if (state_ == State::Aborted) return;
  verbs_.req_notify_cq();
  poll_cq();
}

void SdpSocket::on_cqe() {
  verbs_has_cqe_ = true;
  host_.notify(*cq_wq_);
}

void SdpSocket::abort(const std::string& why) {
  if (state_ == State::Aborted) return;
  state_ = State::Aborted;
  error_ = fmt::format("{}: {}", name_, why);
  host_.notify(*cq_wq_);
}

// ---- process context -------------------------------------------------------------------------

void SdpSocket::wait(WaitQueue& q, const std::function<bool()>& ready) {
  for (;;) {
    poll_cq();
    if (ready() || state_ == State::Aborted) return;
    if (verbs_.req_notify_cq()) continue;  // completions slipped in before arming
    ++stats_.sleeps;
    release_sock();  // sk_wait_event sleeps with the socket released
    host_.sleep(q, [&] { return ready() || state_ == State::Aborted; });
    lock_sock();
  }
}

void SdpSocket::wait_memory(const std::function<bool()>& ready) {
  while (!ready() && state_ != State::Aborted) {
    if (tx_ring_busy()) {
      poll_cq();
      if (ready() || state_ == State::Aborted) return;
    }
    ++stats_.sleeps;
    release_sock();
    host_.sleep(*tx_wq_, [&] { return ready() || state_ == State::Aborted; });
    lock_sock();
  }
}

void SdpSocket::check_usable() const {
  if (state_ == State::Aborted) throw ProtocolError(error_);
  if (state_ == State::Idle) throw VerbsError(name_ + ": socket not connected");
}

uint64_t SdpSocket::send(Addr user, uint64_t len) {
  check_usable();
  const auto& k = host_.costs();
  host_.charge(Activity::Syscall, k.syscall_ns + k.sendmsg_ns);
  Lock lock(*this);
  if (disconnect_wanted_) throw VerbsError(name_ + ": send after close");
  if (len > xmit_goal_) want_resize_ = true;
  if (cfg_.zcopy_thresh > 0 && len >= cfg_.zcopy_thresh) return send_bzcopy(user, len);
  // bcopy reaps send completions in process context only while more than half the tx ring is
  // in flight (hypothesis, after the later ib_sdp's sdp_post_sends: sdp_xmit_poll when fewer
  // than SDP_TX_SIZE / 2 slots are left); otherwise the completion work (on_cq_event, on the
  // interrupt CPU) frees the SDP buffers, and sendmsg sleeps in sk_stream_wait_memory when none
  // is free.
  // Data goes into the last skb of the write queue while it is unposted and below the size goal
  // (OFED 1.3 sdp_sendmsg: `copy = size_goal - skb->len`); a new skb starts only when it is full
  // or was posted. Whether a partial skb leaves now is the Nagle rule's (nagle_off).
  uint64_t done = 0;
  while (done < len) {
    const uint32_t goal = std::max<uint32_t>(xmit_goal_, 1);
    Skb* tail = appendable_tail();
    if (tail == nullptr) {  // sk_stream_wait_memory: every SDP buffer is queued or in flight
      wait_memory([&] { return !tx_free_.empty(); });
      check_usable();
      const int buf = tx_free_.back();
      tx_free_.pop_back();
      host_.charge(Activity::Syscall, k.skb_ns);
      host_.share(tx_owner_[static_cast<size_t>(buf)], skb_lines(tx_bufs_[static_cast<size_t>(buf)].capacity, true));
      tx_queue_.push_back({.buf = buf, .mid = Mid::Data, .len = 0});  // skb_entail
      tail = &tx_queue_.back();
    }
    const uint64_t chunk = std::min<uint64_t>(len - done, goal - std::min(tail->len, goal));
    host_.memory().copy_local(tx_bufs_[static_cast<size_t>(tail->buf)].payload + tail->len, user + done, chunk);
    host_.charge(Activity::Copy, host_.copy_from_user_ns(user + done, chunk));
    tail->len += static_cast<uint32_t>(chunk);
    done += chunk;
    if (tail->len >= goal) {
      if (tx_ring_busy()) poll_cq();
      post_sends();
    }
  }
  post_sends();  // sdp_push at the end of sendmsg: the Nagle rule decides on a partial skb
  return len;
}

SdpSocket::Skb* SdpSocket::appendable_tail() {
  if (tx_queue_.empty()) return nullptr;
  Skb& s = tx_queue_.back();
  if (s.mid != Mid::Data || s.bz || s.buf < 0 || s.len >= std::max<uint32_t>(xmit_goal_, 1)) return nullptr;
  return &s;
}

bool SdpSocket::nagle_off(const Skb& s) const {
  // OFED 1.3 sdp_bcopy.c sdp_nagle_off: TCP_NODELAY, or not the last skb of the write queue, or
  // within a BSDH of the size goal, or nothing in flight (tx_tail == tx_head, TCP_CORK not
  // modelled). A held skb leaves when its last send completes (sdp_handle_wc -> sdp_post_sends).
  return nodelay_ || tx_queue_.size() > 1 || s.len + kHdr >= xmit_goal_ || tx_head_ == tx_tail_;
}

void SdpSocket::set_nodelay(bool on) {
  Lock lock(*this);
  nodelay_ = on;
  post_sends();  // sdp_setsockopt(TCP_NODELAY): sdp_push_pending_frames
}

uint64_t SdpSocket::send_bzcopy(Addr user, uint64_t len) {
  const auto& k = host_.costs();
  ++stats_.bzcopy_calls;
  // sdp_bz_setup: get_user_pages + dma_map for every page of the buffer, up front.
  const uint64_t first = user / cfg_.page_size, last = (user + len - 1) / cfg_.page_size;
  const uint64_t pages = last - first + 1;
  stats_.pages_pinned += pages;
  host_.charge(Activity::Pin, k.bzcopy_setup_ns + static_cast<double>(pages) * k.pin_ns_per_page +
                                 k.dma_map_ns(pages * cfg_.page_size));
  poll_cq();
  uint64_t done = 0;
  while (done < len) {
    // sdp_bzcopy_wait_memory: wait while slots_free() <= bz->busy, where slots_free is
    // min(credits, free ring entries) - SDP_MIN_BUFS (OFED 1.3 sdp_main.c).
    auto slots_free = [&] {
      int64_t ring_room = static_cast<int64_t>(cfg_.tx_ring) - static_cast<int64_t>(tx_head_ - tx_tail_);
      return std::min(tx_credits_, ring_room) - static_cast<int64_t>(cfg_.min_credits);
    };
    wait(*tx_wq_, [&] { return slots_free() > static_cast<int64_t>(bz_busy_); });
    check_usable();
    const uint64_t chunk = std::min<uint64_t>(len - done, std::max<uint32_t>(xmit_goal_, 1));
    host_.charge(Activity::Syscall, k.skb_ns);
    tx_queue_.push_back({.mid = Mid::Data, .len = static_cast<uint32_t>(chunk), .user = user + done, .bz = true});
    ++bz_busy_;
    done += chunk;
    post_sends();
  }
  // sdp_bz_cleanup: busy-poll the CQ for this call's SENDs, a bounded number of times; if
  // some are still in flight then, sleep until the completion handler reaps them.
  const double spin_until = host_.now_ns() + cfg_.bzcopy_poll_ns;
  while (bz_busy_ > 0 && state_ != State::Aborted) {
    poll_cq();
    if (bz_busy_ == 0) break;
    const double left = spin_until - host_.now_ns();
    if (left <= 0) {
      wait(*tx_wq_, [&] { return bz_busy_ == 0; });
      break;
    }
    verbs_has_cqe_ = false;
    if (!host_.spin(*cq_wq_, [&] { return verbs_has_cqe_ || bz_busy_ == 0 || state_ == State::Aborted; }, left)) {
      wait(*tx_wq_, [&] { return bz_busy_ == 0; });  // polled long enough: sleep
      break;
    }
  }
  check_usable();
  return len;
}

uint64_t SdpSocket::recv(Addr user, uint64_t len) {
  check_usable();
  const auto& k = host_.costs();
  host_.charge(Activity::Syscall, k.syscall_ns + k.sendmsg_ns);
  Lock lock(*this);
  auto readable = [&] { return !rx_queue_.empty() || peer_disconnected_ || state_ == State::Aborted; };
  // Busy-poll the CQ for up to recv_poll before arming it and sleeping (ib_sdp recv_poll).
  if (cfg_.recv_poll_ns > 0) {
    poll_cq();
    const double deadline = host_.now_ns() + cfg_.recv_poll_ns;
    while (!readable()) {
      const double left = deadline - host_.now_ns();
      if (left <= 0) break;
      verbs_has_cqe_ = false;
      if (!host_.spin(*cq_wq_, [&] { return verbs_has_cqe_ || readable(); }, left)) break;  // timed out
      poll_cq();
    }
  }
  wait(*rx_wq_, [&] { return !rx_queue_.empty() || peer_disconnected_; });
  if (state_ == State::Aborted) throw ProtocolError(error_);
  uint64_t copied = 0;
  while (copied < len && !rx_queue_.empty()) {
    RxData& d = rx_queue_.front();
    const uint64_t n = std::min<uint64_t>(len - copied, d.len);
    host_.share(rx_owner_[static_cast<size_t>(d.buf)], skb_lines(0, false));
    host_.memory().copy_local(user + copied, rx_bufs_[static_cast<size_t>(d.buf)].payload + d.off, n);
    host_.charge(Activity::Copy, k.copy_rx_ns(n));
    d.off += static_cast<uint32_t>(n);
    d.len -= static_cast<uint32_t>(n);
    copied += n;
    if (d.len == 0) {
      int buf = d.buf;
      rx_queue_.pop_front();
      repost_or_grow(buf);
    }
    if (rx_queue_.empty() && copied < len) poll_cq();  // more may have landed meanwhile
  }
  post_sends();
  return copied;
}

void SdpSocket::close() {
  if (state_ == State::Aborted || state_ == State::Closed || disconnect_wanted_) return;
  disconnect_wanted_ = true;
  Lock lock(*this);
  if (state_ == State::Established) state_ = State::Closing;
  wait(*tx_wq_, [&] { return disconnect_sent_; });
  if (peer_disconnected_ && state_ != State::Aborted) state_ = State::Closed;
}

}  // namespace hcasim::sdp
