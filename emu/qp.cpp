#include "emu/qp.h"

#include <algorithm>
#include <cstring>
#include <future>

#include <fmt/format.h>


namespace hcasim::emu {

namespace asio = boost::asio;
using asio::ip::tcp;
using sdp::WcStatus;

namespace {
/// Bytes the write queue holds before the QP stops taking packets from the core: the emulator's
/// own buffering, beyond which the transport waits as an HCA's send engine waits for its link (an
/// RDMA READ's response is read from memory as it goes out, not all at once).
constexpr size_t kWriteQueueBytes = 2u << 20;
/// The read buffer: frames are parsed out of it as they arrive, a batch per read.
constexpr size_t kReadBuffer = 256u << 10;

Frame make_frame(const Packet& p) { return std::make_shared<const std::vector<uint8_t>>(encode(p)); }

/// The transport's view of a decoded frame (one packet), from the peer QP `src_qpn`.
hca::Packet to_core(const Packet& f, uint32_t src_qpn) {
  hca::Packet p;
  p.op = p.last_op = static_cast<hca::Opcode>(f.op);
  p.npkts = 1;
  p.dest_qpn = f.dest_qpn;
  p.psn = f.psn;
  p.ack_req = f.ack_req;
  p.va = f.va;
  p.rkey = f.rkey;
  p.dma_len = f.dma_len;
  p.syndrome = f.syndrome;
  p.msn = f.msn;
  p.imm = f.imm;
  p.ieth_rkey = f.ieth_rkey;
  p.swap = f.swap;
  p.compare = f.compare;
  p.orig = f.orig;
  p.qkey = f.qkey;
  p.src_qpn = src_qpn;
  p.slid = f.slid;
  p.xrc = f.xrc;
  p.xrc_srqn = f.xrc_srqn;
  p.payload_len = static_cast<uint32_t>(f.payload.size());
  return p;
}
}  // namespace

Qp::Qp(Hca& hca, hca::QpType type, uint32_t qpn, uint32_t pd, const sdp::QpCaps& caps,
       std::shared_ptr<CompQueue> send_cq, std::shared_ptr<CompQueue> recv_cq)
    : hca_(hca),
      type_(type),
      qpn_(qpn),
      pd_(pd),
      caps_(caps),
      scq_(std::move(send_cq)),
      rcq_(std::move(recv_cq)),
      socket_(hca.io()),
      ack_timer_(hca.io()),
      rnr_timer_(hca.io()),
      reorder_timer_(hca.io()),
      link_timer_(hca.io()),
      core_(type, qpn, pd, caps.max_send_wr, caps.max_recv_wr, hca.limits(), *this),
      faults_(hca.faults(), qpn) {
  core_.set_max_inline_data(kMaxInlineData);
  core_.set_rnr_retry(hca.retry().rnr_retry);
}

Qp::~Qp() = default;

bool Qp::on_io_thread() { return hca_.io().get_executor().running_in_this_thread(); }

template <class F>
void Qp::on_io(F f) {
  if (on_io_thread()) {
    f();
    return;
  }
  asio::post(hca_.io(), [self = shared_from_this(), f] {
    std::lock_guard g(self->m_);
    f();
  });
}

// ---- verbs -------------------------------------------------------------------------------------

uint32_t Qp::reg_mr(sdp::Addr addr, uint64_t len, unsigned access) { return hca_.reg_mr(pd_, addr, len, access); }

uint32_t Qp::dma_mr() { return hca_.dma_mr(pd_); }

int Qp::post(const hca::SendWqe& w) {
  const hca::PostCheck c = post_checked(w);
  return c.post == hca::Post::Refuse ? hca::post_errno(c.error) : 0;
}

hca::PostCheck Qp::post_checked(const hca::SendWqe& w) {
  std::lock_guard g(m_);
  while (!inline_.empty() && inline_.front().first < core_.oldest_seq()) inline_.pop_front();
  const uint64_t seq = core_.next_seq();
  const hca::PostCheck c = core_.post_send(w);
  if (c.post == hca::Post::Accept && w.wr.inline_data) {
    // The inline payload is in the WQE from now on (libmlx4 copies it at post): the buffer may be
    // reused at once. The I/O thread cannot send the WQE before this copy: it needs m_.
    std::vector<uint8_t> bytes(w.wr.length());
    size_t off = 0;
    for (uint8_t i = 0; i < w.wr.num_sge; ++i) {
      if (w.wr.sg[i].length > 0)
        std::memcpy(bytes.data() + off, reinterpret_cast<const void*>(w.wr.sg[i].addr), w.wr.sg[i].length);
      off += w.wr.sg[i].length;
    }
    inline_.push_back({seq, std::move(bytes)});
  }
  return c;
}

void Qp::post_send(const sdp::SendWr& wr) {
  hca::SendWqe w;
  w.wr = wr;
  const hca::PostCheck c = post_checked(w);
  if (c.post == hca::Post::Refuse) {
    std::lock_guard g(m_);
    const hca::SendLimits lim{caps_.max_send_wr, core_.limits().max_inline_data};
    throw sdp::VerbsError(hca::post_error_text("post_send", qpn_, core_.state(), c.error, &wr, &lim));
  }
}

int Qp::post_receive(const sdp::RecvWr& wr) {
  std::lock_guard g(m_);
  const hca::PostCheck c = core_.post_recv(wr);
  return c.post == hca::Post::Refuse ? hca::post_errno(c.error) : 0;
}

void Qp::post_recv(const sdp::RecvWr& wr) {
  std::lock_guard g(m_);
  const hca::PostCheck c = core_.post_recv(wr);
  if (c.post == hca::Post::Refuse)
    throw sdp::VerbsError(hca::post_error_text("post_recv", qpn_, core_.state(), c.error, nullptr, nullptr));
}

int Qp::poll_cq(std::span<sdp::Wc> out) { return scq_->poll(out); }

bool Qp::req_notify_cq() { return scq_->arm(); }

int Qp::modify(const hca::QpAttr& a, unsigned mask) {
  std::unique_lock g(m_);
  const State cur = core_.state();
  if (const int e = core_.modify(a, mask); e != 0) return e;
  const State next = core_.state();
  if (next == State::Reset && cur != State::Reset) {  // IBA 10.3.1: RESET empties the queues and the CQs
    scq_->remove_qp(qpn_);
    if (rcq_ != scq_) rcq_->remove_qp(qpn_);
    inline_.clear();
    if (type_ != hca::QpType::Ud && (linked_ || socket_.is_open())) {
      // The old stream goes, on the I/O thread that runs its socket; this call returns after.
      g.unlock();
      if (hca_.io().get_executor().running_in_this_thread()) {
        std::lock_guard g2(m_);
        reset_stream();
      } else {
        auto done = std::make_shared<std::promise<void>>();
        std::future<void> f = done->get_future();
        asio::post(hca_.io(), [self = shared_from_this(), done] {
          {
            std::lock_guard g2(self->m_);
            self->reset_stream();
          }
          done->set_value();
        });
        f.wait();
      }
      return 0;
    }
  }
  if (cur == State::Init && next == State::Rtr) {
    const uint32_t rq_psn = core_.attr().rq_psn;
    g.unlock();
    if (type_ == hca::QpType::Ud) {
      hca_.lid();  // the port's datagram path is up before anything is sent to it
    } else {
      {
        std::lock_guard g2(m_);
        oob_ = true;
      }
      open_stream(a.dlid, rq_psn);
    }
  }
  return 0;
}

void Qp::modify(State next) {
  std::lock_guard g(m_);
  const State cur = core_.state();
  hca::check_transition(qpn_, cur, next, type_);
  if (next == State::Rtr || (next == State::Rts && cur != State::Rts))  // they need the peer's attributes
    throw sdp::VerbsError(fmt::format("modify_qp: QP {:#x} goes to {} with its peer's attributes (modify with a "
                                      "QpAttr, or the CM's to_rts)",
                                      qpn_, hca::qp_state_name(next)));
  if (core_.modify_state(next) != 0)
    throw sdp::VerbsError(fmt::format("modify_qp: QP {:#x} to {}: an attribute out of range", qpn_, hca::qp_state_name(next)));
  if (next == State::Reset && cur != State::Reset) {
    scq_->remove_qp(qpn_);
    if (rcq_ != scq_) rcq_->remove_qp(qpn_);
    inline_.clear();
  }
}

hca::QpAttr Qp::attr() {
  std::lock_guard g(m_);
  return core_.attr();
}

void Qp::set_srq(std::shared_ptr<Srq> srq) {
  std::lock_guard g(m_);
  srq_ = std::move(srq);
  core_.set_srq(srq_ != nullptr);
}

void Qp::set_xrcd(uint32_t xrcd) {
  std::lock_guard g(m_);
  xrcd_ = xrcd;
  core_.set_srq(true);
}

void Qp::set_max_inline_data(uint32_t bytes) {
  std::lock_guard g(m_);
  core_.set_max_inline_data(bytes);
}

void Qp::set_rnr_retry(uint8_t n) {
  std::lock_guard g(m_);
  core_.set_rnr_retry(n);
}

// ---- hca::QpBackend --------------------------------------------------------------------------

hca::MrRefusal Qp::check_mr(uint32_t key, uint32_t pd, sdp::Addr addr, uint64_t len, unsigned need) {
  return hca_.check_mr(key, pd, addr, len, need, qpn_, &m_);  // held until m_ is unlocked
}

bool Qp::local_op(const hca::SendWqe& w, uint32_t qpn, uint32_t pd) { return hca_.mw_op(w, qpn, pd); }

hca::MrRefusal Qp::remote_invalidate(uint32_t rkey, uint32_t qpn, uint32_t pd) {
  return hca_.remote_invalidate(rkey, qpn, pd);
}

void Qp::write(sdp::Addr dst, uint64_t len, const void* payload, uint64_t offset) {
  std::memcpy(reinterpret_cast<void*>(dst), static_cast<const uint8_t*>(payload) + offset, len);
}

void Qp::store(sdp::Addr dst, const void* src, uint64_t len) { std::memcpy(reinterpret_cast<void*>(dst), src, len); }

uint64_t Qp::atomic(sdp::Addr addr, bool compare_swap, uint64_t compare_add, uint64_t swap) {
  // Atomic with respect to this HCA and to the host's own atomics (IBV_ATOMIC_HCA and more).
  auto* target = reinterpret_cast<uint64_t*>(addr);
  if (compare_swap) {
    uint64_t expected = compare_add;
    __atomic_compare_exchange_n(target, &expected, swap, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return expected;
  }
  return __atomic_fetch_add(target, compare_add, __ATOMIC_SEQ_CST);
}

bool Qp::complete(const hca::Cqe& c, bool recv) {
  if (closed_) return true;  // destroyed: it writes no CQE (its CQs may be other QPs' too)
  // An XRC target's receives complete on the CQ of the XRC SRQ they came from.
  CompQueue& cq = recv && type_ == hca::QpType::XrcRecv && xsrq_ != nullptr ? *xsrq_->cq() : recv ? *rcq_ : *scq_;
  const bool ok = cq.push(c);
  cv_.notify_all();
  return ok;
}

void Qp::kick() {
  if (pump_scheduled_) return;
  pump_scheduled_ = true;
  asio::post(hca_.io(), [self = shared_from_this()] {
    std::lock_guard g(self->m_);
    self->pump();
  });
}

void Qp::ack_timer(bool run) {
  ack_running_ = run;
  const uint64_t gen = ++ack_gen_;
  const double ns = run ? hca::local_ack_timeout_ns(core_.attr().timeout) : 0;
  on_io([self = shared_from_this(), gen, ns] {
    if (gen != self->ack_gen_) return;
    if (ns <= 0) {  // stopped, or no timer (timeout 0)
      self->ack_timer_.cancel();
      return;
    }
    self->ack_timer_.expires_after(std::chrono::nanoseconds(static_cast<int64_t>(ns)));
    self->ack_timer_.async_wait([self, gen](boost::system::error_code ec) {
      if (ec) return;
      std::lock_guard g(self->m_);
      if (gen != self->ack_gen_ || !self->ack_running_ || self->closed_) return;
      self->ack_running_ = false;
      self->core_.ack_timeout();
      self->pump();
    });
  });
}

void Qp::rnr_timer(double ns) {
  const uint64_t gen = ++rnr_gen_;
  on_io([self = shared_from_this(), gen, ns] {
    self->rnr_timer_.expires_after(std::chrono::nanoseconds(static_cast<int64_t>(ns)));
    self->rnr_timer_.async_wait([self, gen](boost::system::error_code ec) {
      if (ec) return;
      std::lock_guard g(self->m_);
      if (gen != self->rnr_gen_ || self->closed_) return;
      self->core_.rnr_timeout();
      self->pump();
    });
  });
}

bool Qp::take_srq_recv(sdp::RecvWr& out) {
  const std::shared_ptr<Srq>& s = type_ == hca::QpType::XrcRecv ? xsrq_ : srq_;
  return s != nullptr && s->take(out);
}

hca::XrcSrqRefusal Qp::xrc_srq(uint32_t srqn, uint32_t& pd) {
  std::shared_ptr<Srq> s = hca_.find_srq(srqn);
  if (s == nullptr || s->xrcd() == 0) return hca::XrcSrqRefusal::Unknown;  // none, or a basic SRQ
  if (s->xrcd() != xrcd_) return hca::XrcSrqRefusal::OtherXrcd;
  pd = s->pd();
  xsrq_ = std::move(s);
  return hca::XrcSrqRefusal::None;
}

void Qp::on_error(const std::string& why) {
  reason_ = why;
  // The emulated responder is a process: its ACKs wait until the OS runs it. Timeouts shorter
  // than the machine's scheduling delays expire on a live peer (docs/emulate.md, faults: measured).
  if (why.rfind("transport retry counter exceeded: a timeout", 0) == 0 && core_.attr().timeout < model::RcRetry{}.timeout)
    reason_ += "; the emulated peer ACKs only when the OS runs it: on a loaded machine use qp.timeout=14 or more";
  faults_.discard();
  ++rnr_gen_;
  on_io([self = shared_from_this()] {
    self->rnr_timer_.cancel();
    self->reorder_timer_.cancel();
  });
  cv_.notify_all();
}

// ---- transmission ----------------------------------------------------------------------------

void Qp::pump() {
  pump_scheduled_ = false;
  if (closed_) return;
  // The peer went away (link_down): without a local ACK timer a request would wait for ever, so
  // it fails now; with one it goes out to nowhere and fails when the timer has run out its retries.
  if (peer_gone_ && hca::reliable_connected(type_) && core_.attr().timeout == 0 && core_.has_request()) {
    core_.to_error("transport retry counter exceeded: the peer QP is gone", WcStatus::RetryExcErr);
    return;
  }
  hca::Packet p;
  while (wq_bytes_ < kWriteQueueBytes && core_.next_response(1, p)) send_packet(p);
  const bool can_send = type_ == hca::QpType::Ud || linked_ || uc_void_;
  while (can_send && wq_bytes_ < kWriteQueueBytes && core_.next_request(1, p)) send_packet(p);
  if (!can_send && type_ != hca::QpType::Ud && !link_wait_ && core_.state() == State::Rts && core_.has_request())
    wait_for_link();
}

void Qp::wait_for_link() {
  // On a fabric the requests would leave and go unanswered (the peer not in RTR, or no such
  // QP): retry_cnt + 1 local ACK timeouts, then RETRY_EXC_ERR (IBA 9.7.6.1.3). Here they wait
  // for the peer's stream for as long; with timeout 0 there is no timer, and they wait for ever.
  // UC has no ACK and no timer: an HCA sends and completes at once, and the frames are lost
  // when the peer is not at RTR. Here they wait kUcStreamWaitMs for the stream (the peer's RTR
  // is usually a few milliseconds away), then go nowhere and complete as sent (no_stream).
  const hca::QpAttr& a = core_.attr();
  const bool uc = type_ == hca::QpType::Uc;
  if (!uc && a.timeout == 0) return;
  link_wait_ = true;
  const double ns = uc ? kUcStreamWaitMs * 1e6 : hca::local_ack_timeout_ns(a.timeout) * (a.retry_cnt + 1);
  link_timer_.expires_after(std::chrono::nanoseconds(static_cast<int64_t>(ns)));
  link_timer_.async_wait([self = shared_from_this(), uc](boost::system::error_code ec) {
    if (ec) return;
    std::lock_guard g(self->m_);
    self->link_wait_ = false;
    if (self->closed_ || self->linked_ || self->core_.state() != State::Rts || !self->core_.has_request()) return;
    if (uc) return self->no_stream("no stream from the peer QP");
    self->core_.to_error("transport retry counter exceeded: no stream from the peer QP (not in RTR, or no such QP)",
                         WcStatus::RetryExcErr, true);
  });
}

void Qp::gather(const hca::Packet& p, std::vector<uint8_t>& out) {
  out.resize(p.payload_len);
  if (p.payload_len == 0) return;
  if (p.inline_data) {
    for (const auto& [seq, bytes] : inline_)
      if (seq == p.wqe_seq) {
        std::memcpy(out.data(), bytes.data() + p.msg_offset, p.payload_len);
        return;
      }
    return;  // not reached: an inline WQE keeps its copy until it is retired
  }
  uint64_t pos = 0, done = 0;
  for (uint8_t i = 0; i < p.num_sge && done < out.size(); ++i) {
    const sdp::Sge& g = p.sg[i];
    if (pos + g.length > p.msg_offset + done) {
      const uint64_t in = p.msg_offset + done - pos;
      const uint64_t n = std::min<uint64_t>(g.length - in, out.size() - done);
      std::memcpy(out.data() + done, reinterpret_cast<const uint8_t*>(g.addr) + in, n);
      done += n;
    }
    pos += g.length;
  }
}

void Qp::send_packet(const hca::Packet& p) {
  Packet f;
  f.op = static_cast<Op>(p.op);
  f.dest_qpn = p.dest_qpn;
  f.psn = p.psn;
  f.ack_req = p.ack_req;
  f.pkey = hca_.pkey(core_.attr().pkey_index);  // IBA 9.2: the sending QP's P_Key
  f.va = p.va;
  f.rkey = p.rkey;
  f.dma_len = p.dma_len;
  f.syndrome = p.syndrome;
  f.msn = p.msn;
  f.imm = p.imm;
  f.ieth_rkey = p.ieth_rkey;
  f.swap = p.swap;
  f.compare = p.compare;
  f.orig = p.orig;
  f.qkey = p.qkey;
  f.xrc = p.xrc;
  f.xrc_srqn = p.xrc_srqn;
  if (type_ == hca::QpType::Ud) {
    f.local_qpn = qpn_;
    f.slid = hca_.lid();
    f.dlid = p.dlid;
  }
  const hca::OpKind k = hca::op_kind(p.op);
  if (k == hca::OpKind::ReadResponse) {
    f.va = 0;  // the responder's own address: not on the wire
    const auto* src = reinterpret_cast<const uint8_t*>(p.va);
    f.payload.assign(src, src + p.payload_len);
  } else if (hca::is_request(p.op) && hca::op_has_payload(p.op)) {
    gather(p, f.payload);
  }
  payload_.sent += f.payload.size();
  const Frame fr = make_frame(f);
  auto arrive = [this, dlid = p.dlid](const hca::Packet&, bool corrupted, const Frame& h, uint64_t) {
    Frame out = h;
    if (corrupted) {
      // One byte of the body flipped (any byte after the length field, ICRC included): the
      // receiver's ICRC check fails and it drops the frame.
      auto bad = std::make_shared<std::vector<uint8_t>>(*h);
      const size_t body = bad->size() - kLengthSize;
      (*bad)[kLengthSize + (faults_.stats().packets * 0x9E3779B1u) % body] ^= 0xA5;
      out = std::move(bad);
    }
    if (type_ == hca::QpType::Ud)
      hca_.send_datagram(dlid, *out);  // lost when no port has the LID (UD: no recovery)
    else
      send_frame(std::move(out));
  };
  faults_.transmit(p, fr, core_.attr().path_mtu, arrive);
  if (faults_.holding()) arm_reorder();
}

void Qp::arm_reorder() {
  // The held packet's next one releases it; without one, the timer does (hca::kReorderHoldNs).
  reorder_timer_.expires_after(std::chrono::nanoseconds(static_cast<int64_t>(hca::kReorderHoldNs)));
  reorder_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (ec) return;
    std::lock_guard g(self->m_);
    if (self->closed_ || self->core_.state() == State::Error) return;
    self->faults_.release([&](const hca::Packet& p, bool, const Frame& h, uint64_t) {
      if (self->type_ == hca::QpType::Ud)
        self->hca_.send_datagram(p.dlid, *h);
      else
        self->send_frame(h);
    });
  });
}

void Qp::send_frame(Frame f) {
  if (peer_gone_) return;  // the stream is closed: the frame goes nowhere (link_down)
  if (!linked_ && uc_void_) return;  // UC without a stream: lost as on a path to nowhere
  wq_bytes_ += f->size();
  wq_.push_back(std::move(f));
  if (!writing_) start_write();
}

void Qp::start_write() {
  if (wq_.empty()) {
    writing_ = false;
    cv_.notify_all();  // wait_written
    if (shutdown_after_write_) {
      boost::system::error_code ec;
      socket_.shutdown(tcp::socket::shutdown_send, ec);
      if (close_after_write_) socket_.close(ec);
    }
    return;
  }
  writing_ = true;
  // The queued frames in one write (a writev): one system call for many packets.
  batch_.clear();
  std::vector<asio::const_buffer> bufs;
  size_t bytes = 0;
  while (!wq_.empty() && batch_.size() < 64 && bytes < (1u << 20)) {
    bytes += wq_.front()->size();
    bufs.emplace_back(asio::buffer(*wq_.front()));
    batch_.push_back(std::move(wq_.front()));
    wq_.pop_front();
  }
  asio::async_write(socket_, bufs, [self = shared_from_this(), bytes, gen = stream_gen_](boost::system::error_code ec, size_t) {
    std::lock_guard g(self->m_);
    if (gen != self->stream_gen_) return;  // a stream the QP left at RESET (its batch_ may be the new one's)
    self->batch_.clear();
    self->wq_bytes_ -= bytes;
    if (ec) {
      self->writing_ = false;
      self->link_down(fmt::format("lost the peer without a CM DREQ ({})", ec.message()), false);
      return;
    }
    // The local ACK timer counts from the last frame that left: frames waiting in the emulator's
    // own write queue (megabytes, behind a busy loopback) are not yet on a real HCA's wire.
    if (self->ack_running_) self->ack_timer(true);
    self->start_write();
    if (!self->shutdown_after_write_) self->pump();  // room in the write queue again
  });
}

// ---- reception ---------------------------------------------------------------------------------

void Qp::start_read() {
  if (rbuf_.size() < kReadBuffer) rbuf_.resize(kReadBuffer);
  socket_.async_read_some(
      asio::buffer(rbuf_.data() + rlen_, rbuf_.size() - rlen_),
      [self = shared_from_this(), gen = stream_gen_](boost::system::error_code ec, size_t n) {
        std::lock_guard g(self->m_);
        if (gen != self->stream_gen_) return;  // a stream the QP left at RESET
        if (ec) {
          self->link_down(fmt::format("lost the peer without a CM DREQ ({})",
                                      ec == asio::error::eof ? std::string("end of stream") : ec.message()),
                          false);
          return;
        }
        self->rlen_ += n;
        size_t off = 0;
        while (self->socket_.is_open() && !self->peer_gone_ && self->rlen_ - off >= kLengthSize) {
          uint32_t len = 0;
          try {
            len = decode_length(std::span<const uint8_t, kLengthSize>(self->rbuf_.data() + off, kLengthSize));
          } catch (const WireError& e) {
            self->link_down(fmt::format("malformed packet from the peer: {}", e.what()), false);
            return;
          }
          if (self->rlen_ - off - kLengthSize < len) break;
          self->on_frame(std::span<const uint8_t>(self->rbuf_.data() + off + kLengthSize, len));
          off += kLengthSize + len;
        }
        if (off > 0) {
          std::memmove(self->rbuf_.data(), self->rbuf_.data() + off, self->rlen_ - off);
          self->rlen_ -= off;
        }
        self->pump();  // the responses of this batch leave together
        self->cv_.notify_all();  // drain: unsignaled WRs retire without a CQE
        if (self->socket_.is_open() && !self->peer_gone_) self->start_read();
      });
}

void Qp::on_frame(std::span<const uint8_t> body) {
  if (closed_) return;
  if (!icrc_ok(body)) {
    ++icrc_drops_;  // IBA 7.8.1: dropped silently, no NAK; the requester's timer recovers
    return;
  }
  Packet f;
  try {
    f = decode(body);
  } catch (const WireError& e) {
    link_down(fmt::format("malformed packet from the peer: {}", e.what()), false);
    return;
  }
  // IBA 9.6.1.3: a packet whose BTH names another QP fails the transport header check and is
  // dropped silently, not answered. The stream's source is checked once, when it was taken
  // (its handshake names the peer's LID and QPN, take_stream), and the opcode's transport, the
  // PSN and the Q_Key by the core (hca/responder.cpp).
  if (f.dest_qpn != qpn_) {
    ++header_drops_;
    return;
  }
  if (is_cm(f.op)) {
    if (f.op == Op::CmDreq)
      link_down("the peer disconnected (CM DREQ)", true);
    else
      link_down(fmt::format("{} on an established connection", op_name(f.op)), false);
    return;
  }
  if (!pkey_ok(f)) return;
  count_received(f);
  core_.receive(to_core(f, core_.attr().dest_qp_num), f.payload.data());
}

bool Qp::pkey_ok(const Packet& f) {
  // IBA 10.9.4: a packet whose BTH P_Key does not match the QP's (its P_Key index's entry in the
  // port's table, by 10.9.3's rule) is dropped silently and counted in the port's P_Key
  // violations, as rxe's check_keys does (drivers/infiniband/sw/rxe/rxe_recv.c).
  if (hca::pkey_match(f.pkey, hca_.pkey(core_.attr().pkey_index))) return true;
  hca_.count_pkey_violation();
  return false;
}

void Qp::count_received(const Packet& f) {
  payload_.received += f.payload.size();
  ++payload_.packets_received;
}

void Qp::on_datagram(const Packet& f, const uint8_t* grh) {
  std::lock_guard g(m_);
  if (closed_) return;
  if (type_ != hca::QpType::Ud) {  // IBA 9.6.1.3: a datagram for a connected QP
    ++header_drops_;
    return;
  }
  if (!pkey_ok(f)) return;
  count_received(f);
  hca::Packet p = to_core(f, f.local_qpn);
  p.grh = grh;
  core_.receive(p, f.payload.data());
}

// ---- the stream (the rest is emu/qp_stream.cpp) -------------------------------------------

void Qp::reset_stream() {
  ++stream_gen_;
  boost::system::error_code ec;
  socket_.close(ec);  // its reads and writes end (operation_aborted); their handlers see the old generation
  linked_ = false;
  oob_ = false;
  peer_gone_ = false;
  link_wait_ = false;
  wq_.clear();
  wq_bytes_ = 0;
  writing_ = false;
  rlen_ = 0;
  link_timer_.cancel();
}

void Qp::start_io() {
  linked_ = true;
  on_io([self = shared_from_this()] {
    self->start_read();
    self->pump();
  });
}

// ---- state, events, teardown -----------------------------------------------------------------

void Qp::to_error_state(const std::string& why) {
  std::lock_guard g(m_);
  core_.to_error(why);
}

Qp::State Qp::state() {
  std::lock_guard g(m_);
  return core_.state();
}

void Qp::set_event_handler(EventHandler h) { scq_->set_event_handler(std::move(h)); }

void Qp::set_link_handler(LinkHandler h) {
  std::lock_guard g(m_);
  on_link_ = std::move(h);
}

bool Qp::wait_cq_event(int timeout_ms) {
  {
    std::lock_guard g(m_);
    if (closed_) return false;
  }
  return scq_->wait_event(timeout_ms);
}

bool Qp::drain(int timeout_ms) {
  std::unique_lock g(m_);
  return cv_.wait_for(g, std::chrono::milliseconds(timeout_ms),
                      [&] { return core_.state() == State::Error || core_.send_outstanding() == 0; }) &&
         core_.state() != State::Error;
}

void Qp::disconnect() {
  std::lock_guard g(m_);
  if (core_.state() == State::Error) return;
  const bool connected = (core_.state() == State::Rts || core_.state() == State::Rtr) && linked_;
  // The QP goes to ERROR now (rdma_disconnect(3)); the DREQ leaves on the I/O thread.
  core_.to_error("disconnected");
  if (!connected) return;
  shutdown_after_write_ = true;
  on_io([self = shared_from_this()] {
    self->faults_.release([&](const hca::Packet&, bool, const Frame& h, uint64_t) { self->send_frame(h); });
    self->send_frame(make_frame(Packet{.op = Op::CmDreq, .dest_qpn = self->core_.attr().dest_qp_num}));
  });
}

void Qp::send_posted_datagrams() {
  // A UD QP's sends posted before ibv_destroy_qp(3) leave first: an HCA has sent them
  // microseconds after the doorbell, before the program gets to destroy the QP (mckey's
  // sender posts unsignaled sends and destroys its QP at once).
  if (type_ != hca::QpType::Ud || closed_ || core_.state() != State::Rts) return;
  hca::Packet p;
  while (core_.next_request(1, p)) send_packet(p);
}

void Qp::flush_datagrams() {
  std::lock_guard g(m_);
  send_posted_datagrams();
}

void Qp::close() {
  {
    std::lock_guard g(m_);
    send_posted_datagrams();
    closed_ = true;
    // ibv_destroy_qp(3) on mlx4 removes the QP's CQEs from its CQs and keeps the other QPs' in
    // order (libmlx4 mlx4_destroy_qp -> __mlx4_cq_clean, rdma-core providers/mlx4/verbs.c, cq.c;
    // the kernel's destroy_qp_common -> __mlx4_ib_cq_clean, drivers/infiniband/hw/mlx4/qp.c).
    scq_->remove_qp(qpn_);
    if (rcq_ != scq_) rcq_->remove_qp(qpn_);
    on_link_ = nullptr;
    pending_.reset();
    ++ack_gen_;
    ++rnr_gen_;
    cv_.notify_all();
  }
  if (own_cq_) scq_->set_event_handler(nullptr);
  scq_->wake();
  if (rcq_ != scq_) rcq_->wake();
  asio::post(hca_.io(), [self = shared_from_this()] {
    std::lock_guard g(self->m_);
    boost::system::error_code ec;
    self->ack_timer_.cancel();
    self->rnr_timer_.cancel();
    self->reorder_timer_.cancel();
    self->link_timer_.cancel();
    // Frames still queued go out first, and start_write closes the socket after them: a DREQ
    // being written, or the ACK of the last message a program polled before it destroyed its
    // QP (a real HCA has sent that ACK when the CQE becomes visible; dropped, the peer's send
    // ended in RETRY_EXC_ERR: ibv_srq_pingpong's client, about 1 run in 5).
    if (self->writing_ || !self->wq_.empty()) {
      self->shutdown_after_write_ = true;
      self->close_after_write_ = true;
      return;
    }
    self->socket_.close(ec);
  });
  hca_.forget_qp(shared_from_this());  // no stream or datagram finds it any more; quiesce still does
}

std::string Qp::reason() {
  std::lock_guard g(m_);
  return reason_;
}

model::FaultStats Qp::fault_stats() {
  std::lock_guard g(m_);
  model::FaultStats s = faults_.stats();
  const model::FaultStats& t = core_.stats();
  s.retransmitted = t.retransmitted;
  s.naks = t.naks;
  s.timeouts = t.timeouts;
  s.rnr_naks = t.rnr_naks;
  return s;
}

uint64_t Qp::icrc_drops() {
  std::lock_guard g(m_);
  return icrc_drops_;
}

uint64_t Qp::header_drops() {
  std::lock_guard g(m_);
  return header_drops_;
}

Qp::PayloadStats Qp::payload_stats() {
  std::lock_guard g(m_);
  return payload_;
}

}  // namespace hcasim::emu
