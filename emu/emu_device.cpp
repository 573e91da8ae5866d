#include "emu/emu_device.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "emu/emu_qp.h"
#include "emu/wire.h"

namespace hcasim::emu {

namespace asio = boost::asio;
using asio::ip::tcp;
using sdp::Wc;
using sdp::WcOpcode;
using sdp::WcStatus;
using sdp::WrOpcode;

namespace {
using hca::psn_before;
/// How long a frame drawn "reordered" waits for a next frame to overtake it before it goes out
/// anyway (well under the smallest useful local ACK timeout, 4.096 us x 2^4 = 65.5 us).
constexpr auto kReorderHold = std::chrono::microseconds(20);
Frame frame(const Packet& p) { return std::make_shared<const std::vector<uint8_t>>(encode(p)); }

std::string endpoint_text(const tcp::socket& s) {
  boost::system::error_code ec;
  const auto ep = s.remote_endpoint(ec);
  return ec ? std::string("peer") : fmt::format("{}:{}", ep.address().to_string(), ep.port());
}
}  // namespace

Packet read_frame_until(tcp::socket& s, std::chrono::steady_clock::time_point deadline, const std::string& peer) {
  auto read_exact = [&](uint8_t* out, size_t n) {
    size_t got = 0;
    while (got < n) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) throw sdp::DeviceError(fmt::format("{}: no answer within {} ms during connection setup", peer, kCmTimeoutMs));
      pollfd pfd{s.native_handle(), POLLIN, 0};
      if (::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) continue;
      boost::system::error_code ec;
      const size_t k = s.read_some(asio::buffer(out + got, n - got), ec);
      if (ec == asio::error::eof) throw sdp::DeviceError(fmt::format("{}: connection closed during connection setup", peer));
      if (ec) throw sdp::DeviceError(fmt::format("{}: {} during connection setup", peer, ec.message()));
      got += k;
    }
  };
  std::array<uint8_t, kLengthSize> len{};
  read_exact(len.data(), len.size());
  try {
    std::vector<uint8_t> body(decode_length(len));
    read_exact(body.data(), body.size());
    if (!icrc_ok(body)) throw WireError("bad ICRC");  // the CM's frames are not fault-injected
    return decode(body);
  } catch (const WireError& e) {
    throw sdp::DeviceError(fmt::format("{}: malformed CM message: {}", peer, e.what()));
  }
}

void write_frame(tcp::socket& s, const Packet& p, const std::string& peer) {
  boost::system::error_code ec;
  asio::write(s, asio::buffer(encode(p)), ec);
  if (ec) throw sdp::DeviceError(fmt::format("{}: {} during connection setup", peer, ec.message()));
}

// ---- the adapter -----------------------------------------------------------------------------

Hca::Hca(const sdp::ProcessMemory* memory, const model::FaultConfig& faults, const model::RcRetry& retry)
    : memory_(memory), faults_(faults), retry_(retry), guard_(asio::make_work_guard(io_)) {
  pd_ = mrs_.alloc_pd();
  thread_ = std::thread([this] { io_.run(); });
}

Hca::~Hca() {
  {
    std::lock_guard g(qps_lock_);
    for (auto& w : qps_)
      if (auto q = w.lock()) q->close();
  }
  // The subnet port's acceptor and datagram socket wait for ever: closed, so that run() returns.
  asio::post(io_, [this] {
    boost::system::error_code ec;
    if (acceptor_) acceptor_->close(ec);
    if (udp_) udp_->close(ec);
  });
  guard_.reset();
  thread_.join();
  if (send_fd_ >= 0) ::close(send_fd_);
}

uint32_t Hca::reg_mr(sdp::Addr addr, uint64_t len, unsigned access) {
  if (memory_ != nullptr && !memory_->contains(addr, len))
    throw sdp::VerbsError(fmt::format("reg_mr: [{:#x}, +{}) is not allocated memory", addr, len));
  std::lock_guard g(mr_lock_);
  return mrs_.reg(pd_, addr, len, access);
}

bool Hca::dereg_mr(uint32_t key) {
  std::lock_guard g(mr_lock_);
  return mrs_.dereg(key);
}

uint32_t Hca::dma_mr() {
  if (memory_ == nullptr) throw sdp::VerbsError("dma_mr: this emulated HCA has no memory arena");
  std::lock_guard g(mr_lock_);
  return mrs_.reg_all_memory(pd_, sdp::kLocalWrite);
}

bool Hca::mr_allows(uint32_t key, sdp::Addr addr, uint64_t len, unsigned need) {
  std::lock_guard g(mr_lock_);
  return mrs_.allows(key, pd_, addr, len, need,
                     [this](sdp::Addr a, uint64_t n) { return memory_ != nullptr && memory_->contains(a, n); });
}

std::shared_ptr<Qp> Hca::create_qp(const sdp::QpCaps& caps) {
  auto cq = std::make_shared<CompQueue>(caps.cq_entries);
  auto qp = create_qp(caps, cq, cq);
  qp->own_cq_ = true;
  return qp;
}

std::shared_ptr<Qp> Hca::create_qp(const sdp::QpCaps& caps, std::shared_ptr<CompQueue> send_cq,
                                   std::shared_ptr<CompQueue> recv_cq) {
  std::lock_guard g(qps_lock_);
  auto qp = std::make_shared<Qp>(*this, next_qpn_++, caps, std::move(send_cq), std::move(recv_cq), faults_, retry_);
  std::erase_if(qps_, [](const std::weak_ptr<Qp>& w) { return w.expired(); });
  qps_.push_back(qp);
  return qp;
}

std::shared_ptr<Qp> Hca::find_qp(uint32_t qpn) {
  std::lock_guard g(qps_lock_);
  for (auto& w : qps_)
    if (auto q = w.lock(); q && q->qp_num() == qpn) return q;
  return nullptr;
}

uint16_t Hca::lid() {
  std::lock_guard g(port_lock_);
  if (port_) return port_->lid();
  // The stream acceptor and the datagram socket on one port number (TCP and UDP): a few
  // tries, for a port number whose UDP side is taken.
  boost::system::error_code ec;
  for (int attempt = 0; attempt < 8 && !acceptor_; ++attempt) {
    auto a = std::make_unique<tcp::acceptor>(io_);
    const tcp::endpoint ep(asio::ip::address_v4::loopback(), 0);
    a->open(ep.protocol(), ec);
    if (!ec) a->bind(ep, ec);
    if (!ec) a->listen(64, ec);
    if (ec) throw sdp::DeviceError(fmt::format("emulated port: cannot listen on 127.0.0.1: {}", ec.message()));
    auto u = std::make_unique<asio::ip::udp::socket>(io_);
    u->open(asio::ip::udp::v4(), ec);
    if (!ec) u->bind(asio::ip::udp::endpoint(asio::ip::address_v4::loopback(), a->local_endpoint().port()), ec);
    if (ec) continue;
    // A deep socket buffer: datagrams wait there while the I/O thread is not running (a UD
    // datagram is lost only when no receive WR is posted, as on a real HCA, not here).
    const int bytes = 8 << 20;
    if (::setsockopt(u->native_handle(), SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) != 0)
      ::setsockopt(u->native_handle(), SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
    acceptor_ = std::move(a);
    udp_ = std::move(u);
  }
  if (!acceptor_) throw sdp::DeviceError(fmt::format("emulated port: no UDP port on 127.0.0.1: {}", ec.message()));
  send_fd_ = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  port_ = std::make_unique<SubnetPort>(acceptor_->local_endpoint().port());
  dgram_.resize(kLengthSize + kHeaderSize + 16 + kMaxUdPayload + kIcrcSize);
  asio::post(io_, [this] {
    accept_next();
    receive_datagram();
  });
  return port_->lid();
}

bool Hca::send_datagram(uint16_t dlid, const std::vector<uint8_t>& frame) {
  const std::optional<uint16_t> port = find_port(dlid);
  if (!port) return false;
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(*port);
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::lock_guard g(send_lock_);
  return ::sendto(send_fd_, frame.data(), frame.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to) ==
         static_cast<ssize_t>(frame.size());
}

void Hca::receive_datagram() {
  udp_->async_receive(asio::buffer(dgram_), [this](boost::system::error_code ec, size_t n) {
    if (ec == asio::error::operation_aborted) return;
    if (!ec && n >= kLengthSize) {
      try {
        const uint32_t len = decode_length(std::span<const uint8_t, kLengthSize>(dgram_.data(), kLengthSize));
        const std::span<const uint8_t> body(dgram_.data() + kLengthSize, n - kLengthSize);
        if (len == body.size() && icrc_ok(body)) {
          const Packet p = decode(body);
          if (p.op == Op::UdSendOnly || p.op == Op::UdSendOnlyWithImm)
            if (auto qp = find_qp(p.dest_qpn)) qp->on_datagram(p);
        }
      } catch (const WireError&) {
        // A malformed datagram is dropped, as a bad packet is.
      }
    }
    receive_datagram();
  });
}

void Hca::accept_next() {
  // Each accepted stream's first frame is a CM REQ naming the QP it is for (Qp::to_rtr).
  acceptor_->async_accept([this](boost::system::error_code ec, tcp::socket s) {
    if (ec == asio::error::operation_aborted) return;
    if (!ec) {
      s.set_option(tcp::no_delay(true), ec);
      auto sock = std::make_shared<tcp::socket>(std::move(s));
      auto len = std::make_shared<std::array<uint8_t, kLengthSize>>();
      asio::async_read(*sock, asio::buffer(*len), [this, sock, len](boost::system::error_code e1, size_t) {
        if (e1) return;
        uint32_t n = 0;
        try {
          n = decode_length(*len);
        } catch (const WireError&) {
          return;
        }
        auto body = std::make_shared<std::vector<uint8_t>>(n);
        asio::async_read(*sock, asio::buffer(*body), [this, sock, body](boost::system::error_code e2, size_t) {
          if (e2 || !icrc_ok(*body)) return;
          Packet req;
          try {
            req = decode(*body);
          } catch (const WireError&) {
            return;
          }
          if (req.op != Op::CmReq) return;
          if (auto qp = find_qp(req.dest_qpn)) qp->take_stream(std::move(*sock), req.local_qpn);
          // No such QP: the stream closes; the peer's requests time out (RETRY_EXC_ERR).
        });
      });
    }
    accept_next();
  });
}

// ---- the QP: state ---------------------------------------------------------------------------

Qp::Qp(Hca& hca, uint32_t qpn, const sdp::QpCaps& caps, std::shared_ptr<CompQueue> send_cq,
       std::shared_ptr<CompQueue> recv_cq, const model::FaultConfig& faults, const model::RcRetry& retry)
    : hca_(hca),
      qpn_(qpn),
      caps_(caps),
      socket_(hca.io()),
      rnr_timer_(hca.io()),
      ack_timer_(hca.io()),
      reorder_timer_(hca.io()),
      rnr_(retry.rnr_retry),
      retry_(retry),
      retries_(retry.retry_cnt),
      faults_(faults),
      draw_(faults, qpn),
      scq_(std::move(send_cq)),
      rcq_(std::move(recv_cq)) {}

// ---- the SRQ ---------------------------------------------------------------------------------

bool Srq::post(const sdp::RecvWr& wr) {
  std::lock_guard g(m_);
  if (q_.size() >= max_wr_) return false;
  q_.push_back(wr);
  return true;
}

std::optional<sdp::RecvWr> Srq::take() {
  std::lock_guard g(m_);
  if (q_.empty()) return std::nullopt;
  sdp::RecvWr w = q_.front();
  q_.pop_front();
  return w;
}

void Qp::set_srq(std::shared_ptr<Srq> srq) {
  std::lock_guard g(m_);
  srq_ = std::move(srq);
}

void Qp::set_datagram(uint32_t qkey) {
  std::lock_guard g(m_);
  ud_ = true;
  qkey_ = qkey;
}

void Qp::set_qkey(uint32_t qkey) {
  std::lock_guard g(m_);
  qkey_ = qkey;
}

void Qp::to_rtr_datagram() {
  hca_.lid();  // the port's datagram path is up before anything is sent to it
  std::lock_guard g(m_);
  hca::check_transition(qpn_, state_, State::Rtr);
  state_ = State::Rtr;
}

void Qp::on_datagram(const Packet& p) {
  std::lock_guard g(m_);
  if (closed_ || !ud_ || (state_ != State::Rtr && state_ != State::Rts) || p.qkey != qkey_) return;
  const std::optional<sdp::RecvWr> r = take_recv();
  if (!r) return;  // no receive: dropped (IBA 9.8.3)
  std::vector<uint8_t> data(40 + p.payload.size(), 0);  // the GRH's room (IBA 11.4.1.2), zero
  if (!p.payload.empty()) std::memcpy(data.data() + 40, p.payload.data(), p.payload.size());
  Cqe c;
  c.src_qp = p.local_qpn;
  c.slid = p.slid;
  c.with_imm = p.op == Op::UdSendOnlyWithImm;
  c.imm = p.imm;
  if (!scatter(r->sg, r->num_sge, data)) {
    c.wc = {r->wr_id, WcStatus::LocLenErr, WcOpcode::Recv, 0, qpn_};
    push_cqe(c);
    return;
  }
  c.wc = {r->wr_id, WcStatus::Success, WcOpcode::Recv, static_cast<uint32_t>(data.size()), qpn_};
  push_cqe(c);
}

void Qp::set_unreliable() {
  std::lock_guard g(m_);
  uc_ = true;
}

// ---- the CQ ----------------------------------------------------------------------------------

bool CompQueue::push(const Cqe& c) {
  std::lock_guard g(m_);
  if (!cq_.push(c)) return false;
  if (armed_) {  // one completion event per arming (ibv_req_notify_cq(3))
    armed_ = false;
    event_ = true;
    if (on_event_) on_event_();
    cv_.notify_all();
  }
  return true;
}

int CompQueue::poll(std::span<Cqe> out) {
  std::lock_guard g(m_);
  return cq_.poll(out);
}

int CompQueue::poll(std::span<Wc> out) {
  std::array<Cqe, 32> buf;
  std::lock_guard g(m_);
  size_t total = 0;
  while (total < out.size()) {
    const size_t want = std::min(buf.size(), out.size() - total);
    const int n = cq_.poll(std::span<Cqe>(buf.data(), want));
    for (int i = 0; i < n; ++i) out[total++] = buf[static_cast<size_t>(i)].wc;
    if (static_cast<size_t>(n) < want) break;
  }
  return static_cast<int>(total);
}

bool CompQueue::arm() {
  std::lock_guard g(m_);
  armed_ = true;
  return !cq_.empty();
}

void CompQueue::set_event_handler(EventHandler h) {
  std::lock_guard g(m_);
  on_event_ = std::move(h);
}

bool CompQueue::wait_event(int timeout_ms) {
  std::unique_lock g(m_);
  const uint64_t w = wakes_;
  if (!cv_.wait_for(g, std::chrono::milliseconds(timeout_ms), [&] { return event_ || wakes_ != w; })) return false;
  const bool e = event_;
  event_ = false;
  return e;
}

void CompQueue::wake() {
  std::lock_guard g(m_);
  ++wakes_;
  cv_.notify_all();
}

void CompQueue::remove_qp(uint32_t qpn) {
  std::lock_guard g(m_);
  std::vector<Cqe> keep;
  std::array<Cqe, 64> buf;
  for (int n; (n = cq_.poll(buf)) > 0;)
    for (int i = 0; i < n; ++i)
      if (buf[static_cast<size_t>(i)].wc.qp_num != qpn) keep.push_back(buf[static_cast<size_t>(i)]);
  for (const Cqe& c : keep) cq_.push(c);
}

void Qp::attach(tcp::socket socket) { socket_ = std::move(socket); }

void Qp::to_init() {
  std::lock_guard g(m_);
  if (state_ == State::Reset) state_ = State::Init;
}

void Qp::modify(State next) {
  std::lock_guard g(m_);
  hca::check_transition(qpn_, state_, next);
  switch (next) {
    case State::Reset:  // IBA 10.3.1: RESET empties the queues and the CQ
      sq_.clear();
      unacked_.clear();
      rq_.clear();
      scq_->remove_qp(qpn_);
      if (rcq_ != scq_) rcq_->remove_qp(qpn_);
      sq_outstanding_ = 0;
      state_ = State::Reset;
      break;
    case State::Init: state_ = State::Init; break;
    case State::Error: to_error("modify_qp to ERROR", std::nullopt); break;
    case State::Rtr:
    case State::Rts:
      throw sdp::VerbsError(fmt::format("modify_qp: QP {:#x} goes to {} with the CM exchange (to_rts)", qpn_,
                                        hca::qp_state_name(next)));
  }
}

void Qp::set_max_inline_data(uint32_t bytes) {
  std::lock_guard g(m_);
  max_inline_data_ = bytes;
}

void Qp::set_min_rnr_timer(uint8_t code) {
  if (code > 31) throw sdp::VerbsError(fmt::format("modify_qp: min_rnr_timer {} > 31", code));
  std::lock_guard g(m_);
  min_rnr_timer_ = code;
}

void Qp::to_rts(uint32_t remote_qpn) {
  {
    std::lock_guard g(m_);
    if (state_ != State::Init) return;  // already in ERROR
    remote_qpn_ = remote_qpn;
    hca::check_transition(qpn_, State::Init, State::Rtr);  // the REP gives the remote QPN
    hca::check_transition(qpn_, State::Rtr, State::Rts);   // the RTU
    state_ = State::Rts;
    linked_ = true;
  }
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    self->read_length();
    std::lock_guard g(self->m_);
    self->pump();
  });
}

void Qp::to_rtr(const RtrAttr& a) {
  if (a.min_rnr_timer > 31) throw sdp::VerbsError(fmt::format("modify_qp: min_rnr_timer {} > 31", a.min_rnr_timer));
  const uint16_t my_lid = hca_.lid();
  bool connect = false;
  {
    std::lock_guard g(m_);
    hca::check_transition(qpn_, state_, State::Rtr);
    oob_ = true;
    remote_qpn_ = a.dest_qpn & hca::kPsnMask;
    dlid_ = a.dlid;
    responder_.reset(a.rq_psn);
    min_rnr_timer_ = a.min_rnr_timer;
    state_ = State::Rtr;
    // The smaller (LID, QPN) opens the stream; the other waits for it (or has it already).
    connect = std::pair(my_lid, qpn_) < std::pair(a.dlid, remote_qpn_);
    if (!connect) {
      if (pending_ && pending_from_ == remote_qpn_) {
        socket_ = std::move(*pending_);
        pending_.reset();
        start_io();
      } else {
        pending_.reset();
      }
      return;
    }
  }
  const std::optional<uint16_t> port = find_port(a.dlid);
  tcp::socket s(hca_.io());
  boost::system::error_code ec;
  if (port) s.connect(tcp::endpoint(asio::ip::address_v4::loopback(), *port), ec);
  const std::string peer = fmt::format("LID {:#x} QP {:#x}", a.dlid, remote_qpn_);
  if (!port || ec) {
    std::lock_guard g(m_);
    to_error(port ? fmt::format("{}: {}", peer, ec.message())
                  : fmt::format("{}: no port with that LID on the emulated subnet {}", peer, subnet_dir()),
             std::nullopt);
    return;
  }
  s.set_option(tcp::no_delay(true), ec);
  try {
    write_frame(s, Packet{.op = Op::CmReq, .dest_qpn = remote_qpn_, .psn = a.rq_psn, .local_qpn = qpn_}, peer);
  } catch (const sdp::DeviceError& e) {
    std::lock_guard g(m_);
    to_error(e.what(), std::nullopt);
    return;
  }
  std::lock_guard g(m_);
  if (state_ == State::Error || closed_) return;
  socket_ = std::move(s);
  start_io();
}

void Qp::take_stream(tcp::socket s, uint32_t from_qpn) {
  std::lock_guard g(m_);
  if (closed_ || linked_ || state_ == State::Error) return;  // s closes
  if (state_ == State::Rtr || state_ == State::Rts) {
    if (from_qpn != remote_qpn_) return;
    socket_ = std::move(s);
    start_io();
    return;
  }
  pending_.emplace(std::move(s));  // RESET / INIT: kept for the RTR
  pending_from_ = from_qpn;
}

void Qp::start_io() {
  linked_ = true;
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    self->read_length();
    std::lock_guard g(self->m_);
    self->pump();
  });
}

void Qp::to_rts(const RtsAttr& a) {
  if (a.retry_cnt > 7 || a.rnr_retry > 7 || a.timeout > 31)
    throw sdp::VerbsError(fmt::format("modify_qp: retry_cnt {} / rnr_retry {} / timeout {} out of range", a.retry_cnt,
                                      a.rnr_retry, a.timeout));
  std::lock_guard g(m_);
  hca::check_transition(qpn_, state_, State::Rts);
  next_psn_ = a.sq_psn & hca::kPsnMask;
  retry_.timeout = a.timeout;
  retry_.retry_cnt = a.retry_cnt;
  retry_.rnr_retry = a.rnr_retry;
  retries_ = hca::RetryCounter(a.retry_cnt);
  rnr_ = hca::RnrCounter(a.rnr_retry);
  state_ = State::Rts;
  if (linked_)
    asio::post(socket_.get_executor(), [self = shared_from_this()] {
      std::lock_guard g2(self->m_);
      self->pump();
    });
}

void Qp::wait_written(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock g(m_);
  // A closed QP still writes what it had queued (close), so closed_ alone does not end the wait.
  cv_.wait_until(g, deadline, [&] { return peer_gone_ || !socket_.is_open() || (wq_.empty() && !writing_); });
}

void Hca::quiesce(int ms) {
  std::vector<std::shared_ptr<Qp>> all;
  {
    std::lock_guard g(qps_lock_);
    for (auto& w : qps_)
      if (auto q = w.lock()) all.push_back(std::move(q));
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  for (auto& q : all) q->wait_written(deadline);
}

void Hca::release_port() {
  std::lock_guard g(port_lock_);
  port_.reset();
}

uint32_t Qp::remote_qpn() {
  std::lock_guard g(m_);
  return remote_qpn_;
}

void Qp::to_error_state(const std::string& why) {
  std::lock_guard g(m_);
  to_error(why, std::nullopt);
}

Qp::State Qp::state() {
  std::lock_guard g(m_);
  return state_;
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
                      [&] { return state_ == State::Error || (sq_.empty() && unacked_.empty()); }) &&
         state_ != State::Error;
}

void Qp::disconnect() {
  std::lock_guard g(m_);
  if (state_ == State::Error) return;
  const bool connected = (state_ == State::Rts || state_ == State::Rtr) && linked_;
  // The QP goes to ERROR now (rdma_disconnect(3)); the DREQ leaves on the I/O thread.
  to_error("disconnected", std::nullopt);
  if (!connected) return;
  shutdown_after_write_ = true;
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    std::lock_guard g2(self->m_);
    self->release_held();
    self->send_frame(frame(Packet{.op = Op::CmDreq, .dest_qpn = self->remote_qpn_}));
  });
}

void Qp::close() {
  {
    std::lock_guard g(m_);
    closed_ = true;
    on_link_ = nullptr;
    pending_.reset();
    cv_.notify_all();
  }
  if (own_cq_) scq_->set_event_handler(nullptr);
  scq_->wake();
  if (rcq_ != scq_) rcq_->wake();
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    std::lock_guard g(self->m_);
    boost::system::error_code ec;
    self->rnr_timer_.cancel();
    self->stop_ack_timer();
    self->reorder_timer_.cancel();
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
}

void Qp::set_rnr_retry(uint8_t n) {
  const hca::RnrCounter c(n);  // throws when > 7
  std::lock_guard g(m_);
  rnr_ = c;
}

std::string Qp::reason() {
  std::lock_guard g(m_);
  return reason_;
}

model::FaultStats Qp::fault_stats() {
  std::lock_guard g(m_);
  return stats_;
}

uint64_t Qp::icrc_drops() {
  std::lock_guard g(m_);
  return icrc_drops_;
}

void Qp::ack(uint32_t psn, uint8_t syndrome) {
  if (uc_) return;  // UC: no acknowledgements (IBA 9.8.2)
  transmit(frame(Packet{.op = Op::Acknowledge, .dest_qpn = remote_qpn_, .psn = psn, .syndrome = syndrome, .msn = psn}));
}

void Qp::link_down(const std::string& why, bool orderly) {
  if (closed_ || peer_gone_) return;
  if (oob_ && !orderly) {
    // A peer QP connected out of band that goes away (its process exits) says nothing on a
    // real fabric: requests on the wire time out (RETRY_EXC_ERR, the rest flush); with none,
    // the QP stays as it is, its receives posted, until its next request fails the same way.
    // Those on the wire fail as on a fabric, when the local ACK timer has expired retry_cnt + 1
    // times (their retransmissions go nowhere, send_frame), not at once: a program that is done
    // but for polling (ibv_srq_pingpong's server, its sends beyond the peer's last receive in
    // flight) exits before they fail, as it does on a real HCA. No timer (timeout 0) or an RNR
    // wait: they fail now.
    peer_gone_ = true;
    boost::system::error_code ec;
    socket_.close(ec);
    if (!unacked_.empty() && (retry_.timeout == 0 || rnr_waiting_))
      to_error(why, WcStatus::RetryExcErr);
    else
      arm_ack_timer();
    if (on_link_) on_link_(orderly, why);
    return;
  }
  to_error(why, orderly ? std::nullopt : std::optional<WcStatus>(WcStatus::RetryExcErr));
  boost::system::error_code ec;
  socket_.close(ec);
  if (on_link_) on_link_(orderly, why);
}

// ---- the device ------------------------------------------------------------------------------

class EmuDevice final : public sdp::Device {
 public:
  EmuDevice(uint64_t memory_bytes, const model::FaultConfig& faults, const model::RcRetry& retry)
      : memory_(memory_bytes), hca_(&memory_, faults, retry) {}
  std::string name() const override { return "emu"; }
  sdp::ProcessMemory& memory() override { return memory_; }
  std::unique_ptr<sdp::Connection> connect(const std::string& host, uint16_t port, const sdp::QpCaps& caps,
                                          const sdp::MakeRequest& request, std::vector<uint8_t>& reply) override;
  std::unique_ptr<sdp::Listener> listen(const std::string& bind_addr, uint16_t port) override;
  Hca& hca() { return hca_; }
  asio::io_context& io() { return hca_.io(); }

 private:
  sdp::ProcessMemory memory_;
  Hca hca_;  // after memory_: its QPs close before the arena goes
};
/// sdp::Connection over a Qp: closing it closes the QP's socket.
class EmuConnection final : public sdp::Connection {
 public:
  EmuConnection(std::shared_ptr<Qp> qp, std::string peer) : qp_(std::move(qp)), peer_(std::move(peer)) {}
  ~EmuConnection() override { qp_->close(); }
  sdp::Verbs& verbs() override { return *qp_; }
  bool wait_cq_event(int timeout_ms) override { return qp_->wait_cq_event(timeout_ms); }
  bool drain(int timeout_ms) override { return qp_->drain(timeout_ms); }
  void disconnect() override { qp_->disconnect(); }
  std::string error_reason() override { return qp_->reason(); }
  model::FaultStats fault_stats() override { return qp_->fault_stats(); }
  std::string peer() const override { return peer_; }

 private:
  std::shared_ptr<Qp> qp_;
  std::string peer_;
};

/// The passive side: next() takes TCP connections as they come and hands each over at once;
/// its CM handshake runs in EmuIncoming::accept, on the caller's thread, with its own
/// kCmTimeoutMs from the TCP accept. A peer that connects and says nothing, or starts a frame
/// and stalls, holds up only its own request (it used to block the listener for the whole CM
/// timeout, and a real client connecting meanwhile timed out).
class EmuListener final : public sdp::Listener {
 public:
  EmuListener(EmuDevice& dev, tcp::acceptor acceptor) : dev_(dev), acceptor_(std::move(acceptor)) {}
  uint16_t port() const override { return acceptor_.local_endpoint().port(); }
  std::unique_ptr<sdp::Incoming> next() override;

 private:
  EmuDevice& dev_;
  tcp::acceptor acceptor_;
};

/// An accepted TCP connection whose CM REQ has not been read yet.
class EmuIncoming final : public sdp::Incoming {
 public:
  EmuIncoming(EmuDevice& dev, tcp::socket socket, std::string peer, std::chrono::steady_clock::time_point deadline)
      : dev_(dev), socket_(std::move(socket)), peer_(std::move(peer)), deadline_(deadline) {}
  std::string peer() const override { return peer_; }
  std::unique_ptr<sdp::Connection> accept(const sdp::QpCaps& caps, const sdp::AnswerRequest& answer) override;

 private:
  EmuDevice& dev_;
  tcp::socket socket_;
  std::string peer_;
  std::chrono::steady_clock::time_point deadline_;
};

// ---- Qp: verbs -------------------------------------------------------------------------------

uint32_t Qp::reg_mr(sdp::Addr addr, uint64_t len, unsigned access) { return hca_.reg_mr(addr, len, access); }

uint32_t Qp::dma_mr() { return hca_.dma_mr(); }

void Qp::post_send(const sdp::SendWr& wr) { post_send_ext(wr, WrExt{}); }

void Qp::post_send_ext(const sdp::SendWr& wr, const WrExt& x) {
  if (x.atomic() && (wr.length() != 8 || wr.remote_addr % 8 != 0 || wr.opcode != WrOpcode::RdmaRead))
    throw sdp::VerbsError(fmt::format("post_send: QP {:#x}: an atomic needs one 8-byte SGE and an 8-byte aligned "
                                      "remote address (got {} B at {:#x})", qpn_, wr.length(), wr.remote_addr));
  std::lock_guard g(m_);
  // hca::check_post_send: a WR posted while the QP is in ERROR completes at once with
  // WR_FLUSH_ERR, as an HCA does (IBA 10.3.1; mlx4/mlx5 accept the post): the peer going away
  // must not make a post fail.
  const hca::SendLimits lim{caps_.max_send_wr, max_inline_data_, kMaxMessage};
  const hca::PostCheck c = hca::check_post_send(state_, sq_outstanding_, lim, wr);
  if (c.post == hca::Post::Refuse)
    throw sdp::VerbsError(hca::post_error_text("post_send", qpn_, state_, c.error, &wr, &lim));
  if (c.post == hca::Post::Flush) {
    ++sq_outstanding_;  // push_cqe counts it back
    push_cqe(hca::send_wc(wr, WcStatus::WrFlushErr, qpn_));
    return;
  }
  if (ud_) {  // one datagram, sent now; done once sent (lost when no port has the LID)
    ++sq_outstanding_;
    std::vector<uint8_t> payload;
    if (wr.opcode != WrOpcode::Send) {
      complete_send(wr, WcStatus::LocProtErr, x);  // UD: SEND only (the shim refuses others)
      return;
    }
    if (!gather(wr, payload)) {
      complete_send(wr, WcStatus::LocProtErr, x);
      return;
    }
    if (payload.size() > kMaxUdPayload) {
      complete_send(wr, WcStatus::LocLenErr, x);
      return;
    }
    Packet p{.op = x.kind == WrExt::Kind::SendImm ? Op::UdSendOnlyWithImm : Op::UdSendOnly,
             .dest_qpn = x.ud_qpn,
             .psn = next_psn_,
             .local_qpn = qpn_,
             .imm = x.imm,
             .qkey = (x.ud_qkey & 0x80000000u) != 0 ? qkey_ : x.ud_qkey,
             .slid = hca_.lid(),
             .payload = std::move(payload)};
    next_psn_ = hca::psn_add(next_psn_, 1);
    ++stats_.packets;
    hca_.send_datagram(x.ud_dlid, encode(p));
    complete_send(wr, WcStatus::Success, x);
    return;
  }
  sq_.push_back({wr, x});
  ++sq_outstanding_;
  if (sq_.size() == 1)
    asio::post(socket_.get_executor(), [self = shared_from_this()] {
      std::lock_guard g2(self->m_);
      self->pump();
    });
}

void Qp::post_recv(const sdp::RecvWr& wr) {
  std::lock_guard g(m_);
  if (srq_) throw sdp::VerbsError(fmt::format("post_recv: QP {:#x} receives from its SRQ", qpn_));
  const hca::PostCheck c = hca::check_post_recv(state_, rq_.size(), caps_.max_recv_wr, wr);
  if (c.post == hca::Post::Refuse)
    throw sdp::VerbsError(hca::post_error_text("post_recv", qpn_, state_, c.error, nullptr, nullptr));
  if (c.post == hca::Post::Flush) {  // as post_send
    push_cqe(hca::recv_error_wc(wr, WcStatus::WrFlushErr, qpn_));
    return;
  }
  rq_.push_back(wr);
}

int Qp::poll_cq(std::span<Wc> out) { return scq_->poll(out); }

bool Qp::req_notify_cq() { return scq_->arm(); }

// ---- Qp: completions -------------------------------------------------------------------------

void Qp::push_cqe(const Wc& wc) {
  Cqe c;
  c.wc = wc;
  if (wc.opcode == WcOpcode::Recv) c.src_qp = remote_qpn_;
  push_cqe(c);
}

void Qp::push_cqe(const Cqe& c) {
  const Wc& wc = c.wc;
  if (wc.opcode != WcOpcode::Recv && sq_outstanding_ > 0) --sq_outstanding_;
  CompQueue& cq = wc.opcode == WcOpcode::Recv ? *rcq_ : *scq_;
  if (!cq.push(c)) {  // CQ overrun (hca/cq.h): nothing written, the QP goes to ERROR
    to_error(fmt::format("CQ overrun ({} entries)", cq.depth()), std::nullopt);
    cv_.notify_all();
    return;
  }
  cv_.notify_all();
}

void Qp::complete_send(const sdp::SendWr& wr, WcStatus status, const WrExt& x) {
  if (wr.signaled || status != WcStatus::Success) {
    Cqe c;
    c.wc = hca::send_wc(wr, status, qpn_);
    if (x.kind == WrExt::Kind::CmpSwap) c.kind = Cqe::Kind::CompSwap;
    if (x.kind == WrExt::Kind::FetchAdd) c.kind = Cqe::Kind::FetchAdd;
    push_cqe(c);
  } else if (sq_outstanding_ > 0)
    --sq_outstanding_;
}

void Qp::fail_front(WcStatus status, const std::string& why) {
  Outstanding o = unacked_.front();
  unacked_.pop_front();
  complete_send(o.wr, status, o.x);
  to_error(why, std::nullopt);
}

void Qp::to_error(const std::string& why, std::optional<WcStatus> first) {
  if (state_ == State::Error) return;
  state_ = State::Error;
  reason_ = why;
  // The timer is the I/O thread's (this may run on the caller's); its handler checks the state.
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    std::lock_guard g(self->m_);
    self->rnr_timer_.cancel();
    self->stop_ack_timer();
    self->reorder_timer_.cancel();
    self->held_.reset();
  });
  // The oldest WR on the wire completes with `first` when given; the rest flush in order (the
  // transmitted ones, the queued ones, the receives: hca::flush_queues).
  if (first && !unacked_.empty()) {
    push_cqe(hca::send_wc(unacked_.front().wr, *first, qpn_));
    unacked_.pop_front();
  }
  std::deque<sdp::RecvWr> none;
  hca::flush_queues(qpn_, unacked_, [](const Outstanding& o) -> const sdp::SendWr& { return o.wr; }, none,
                    [this](const Wc& wc) { push_cqe(wc); });
  hca::flush_queues(qpn_, sq_, [](const SqWr& w) -> const sdp::SendWr& { return w.wr; }, rq_,
                    [this](const Wc& wc) { push_cqe(wc); });
  cv_.notify_all();
}

// ---- Qp: transmission ------------------------------------------------------------------------

bool Qp::gather(const sdp::SendWr& wr, std::vector<uint8_t>& out) {
  out.resize(wr.length());
  size_t off = 0;
  for (uint8_t i = 0; i < wr.num_sge; ++i) {
    const sdp::Sge& s = wr.sg[i];
    if (!hca_.mr_allows(s.lkey, s.addr, s.length, 0)) return false;
    if (s.length > 0) std::memcpy(out.data() + off, reinterpret_cast<const void*>(s.addr), s.length);
    off += s.length;
  }
  return true;
}

bool Qp::scatter(const std::array<sdp::Sge, sdp::kMaxSge>& sg, uint8_t n, const std::vector<uint8_t>& data) {
  uint64_t capacity = 0;
  for (uint8_t i = 0; i < n; ++i) {
    if (!hca_.mr_allows(sg[i].lkey, sg[i].addr, sg[i].length, sdp::kLocalWrite)) return false;
    capacity += sg[i].length;
  }
  if (data.size() > capacity) return false;
  size_t off = 0;
  for (uint8_t i = 0; i < n && off < data.size(); ++i) {
    const size_t k = std::min<size_t>(sg[i].length, data.size() - off);
    std::memcpy(reinterpret_cast<void*>(sg[i].addr), data.data() + off, k);
    off += k;
  }
  return true;
}

void Qp::pump() {
  // The peer went away (link_down): without a local ACK timer a request would wait for ever, so
  // it fails now; with one it goes out to nowhere and fails when the timer has run out its retries.
  if (peer_gone_ && retry_.timeout == 0 && state_ == State::Rts && !sq_.empty()) {
    const SqWr w = sq_.front();
    sq_.pop_front();
    complete_send(w.wr, WcStatus::RetryExcErr, w.x);
    to_error("transport retry counter exceeded: the peer QP is gone", std::nullopt);
    return;
  }
  while (state_ == State::Rts && linked_ && !sq_.empty()) {
    const sdp::SendWr wr = sq_.front().wr;
    const WrExt x = sq_.front().x;
    sq_.pop_front();
    Outstanding o{next_psn_, wr, x, nullptr, std::nullopt};
    next_psn_ = hca::psn_add(next_psn_, 1);
    Packet p{.dest_qpn = remote_qpn_, .psn = o.psn, .imm = x.imm};
    if (x.atomic()) {
      p.op = x.kind == WrExt::Kind::CmpSwap ? Op::CompareSwap : Op::FetchAdd;
      p.compare = x.compare_add;
      p.swap = x.swap;
    } else if (wr.opcode == WrOpcode::RdmaRead) {
      p.op = Op::RdmaReadRequest;
      p.dma_len = static_cast<uint32_t>(wr.length());
    } else if (!gather(wr, p.payload)) {
      o.local_error = WcStatus::LocProtErr;
    } else if (wr.opcode == WrOpcode::RdmaWrite) {
      p.op = x.kind == WrExt::Kind::WriteImm ? Op::RdmaWriteOnlyWithImm : Op::RdmaWriteOnly;
      p.dma_len = static_cast<uint32_t>(p.payload.size());
    } else {
      p.op = x.kind == WrExt::Kind::SendImm ? Op::SendOnlyWithImm : Op::SendOnly;
    }
    if (wr.opcode != WrOpcode::Send) {
      p.va = wr.remote_addr;
      p.rkey = wr.rkey;
    }
    if (!o.local_error) {
      o.frame = frame(p);
      if (!rnr_waiting_) transmit(o.frame);  // else the retransmission after the RNR timer sends it
    }
    if (uc_) {  // UC: done once on the wire, nothing to wait for
      if (o.local_error) {
        complete_send(wr, *o.local_error, x);
        to_error("local protection error in a gather list", std::nullopt);
        return;
      }
      complete_send(wr, WcStatus::Success, x);
      continue;
    }
    unacked_.push_back(std::move(o));
    arm_ack_timer();
    if (unacked_.front().local_error) {  // nothing older in flight: fail it now
      fail_front(*unacked_.front().local_error, "local protection error in a gather list");
      return;
    }
  }
}

void Qp::transmit(Frame f) {
  ++stats_.packets;
  const model::Fate fate = draw_.next();
  switch (fate) {
    case model::Fate::Lose:
      ++stats_.lost;
      break;
    case model::Fate::Corrupt: {
      // One byte of the body flipped (any byte after the length field, ICRC included): the
      // receiver's ICRC check fails and it drops the frame.
      auto bad = std::make_shared<std::vector<uint8_t>>(*f);
      const size_t body = bad->size() - kLengthSize;
      (*bad)[kLengthSize + (stats_.packets * 0x9E3779B1u) % body] ^= 0xA5;
      ++stats_.corrupted;
      send_frame(std::move(bad));
      break;
    }
    case model::Fate::Duplicate:
      ++stats_.duplicated;
      send_frame(f);
      send_frame(std::move(f));
      break;
    case model::Fate::Reorder:
      if (!held_) {  // one frame held at a time; a second in a row goes out in order
        ++stats_.reordered;
        held_ = std::move(f);
        // The next frame releases it; without one, the timer does (well under any ACK timeout).
        reorder_timer_.expires_after(kReorderHold);
        reorder_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
          if (ec) return;
          std::lock_guard g(self->m_);
          self->release_held();
        });
        return;
      }
      send_frame(std::move(f));
      break;
    case model::Fate::Deliver:
      send_frame(std::move(f));
      break;
  }
  release_held();
}

void Qp::release_held() {
  if (!held_ || closed_ || state_ == State::Error) return;
  send_frame(std::move(held_));
  held_.reset();
}

void Qp::arm_ack_timer() {
  if (ack_timer_running_ || retry_.timeout == 0 || closed_ || state_ != State::Rts || unacked_.empty()) return;
  ack_timer_running_ = true;
  const uint64_t gen = ++ack_timer_gen_;
  ack_timer_.expires_after(std::chrono::nanoseconds(static_cast<int64_t>(retry_.local_ack_timeout_ns())));
  ack_timer_.async_wait([self = shared_from_this(), gen](boost::system::error_code ec) {
    if (ec) return;
    std::lock_guard g(self->m_);
    if (gen != self->ack_timer_gen_) return;  // re-armed or stopped since
    self->ack_timer_running_ = false;
    self->on_ack_timeout();
  });
}

void Qp::restart_ack_timer() {
  stop_ack_timer();
  if (!rnr_waiting_) arm_ack_timer();
}

void Qp::stop_ack_timer() {
  if (!ack_timer_running_) return;
  ack_timer_running_ = false;
  ++ack_timer_gen_;
  ack_timer_.cancel();
}

void Qp::on_ack_timeout() {
  if (closed_ || state_ != State::Rts || unacked_.empty() || rnr_waiting_) return;
  retry("timeout");
}

void Qp::retry(const std::string& cause) {
  if (!retries_.retry()) {
    // The emulated responder is a process: its ACKs wait until the OS runs it. Timeouts shorter
    // than the machine's scheduling delays expire on a live peer (docs/emulate.md, faults: measured).
    const bool short_timer = cause == "timeout" && retry_.timeout < model::RcRetry{}.timeout;
    fail_front(WcStatus::RetryExcErr,
               fmt::format("transport retry counter exceeded: a {} after {} retries without an ACK (retry_cnt {}, "
                           "local ACK timeout {:.1f} us){}",
                           cause, retries_.count() - 1, retry_.retry_cnt, retry_.local_ack_timeout_ns() * 1e-3,
                           short_timer ? "; the emulated peer ACKs only when the OS runs it: on a loaded machine "
                                         "use qp.timeout=14 or more"
                                       : ""));
    return;
  }
  if (cause == "timeout")
    ++stats_.timeouts;
  else
    ++stats_.naks;
  stop_ack_timer();
  retransmit_from(unacked_.front().psn);
}

void Qp::progress() {
  retries_.progress();
  naked_psn_.reset();
  restart_ack_timer();
}

void Qp::send_frame(Frame f) {
  if (peer_gone_) return;  // the stream is closed: the frame goes nowhere (link_down)
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
  Frame f = wq_.front();
  asio::async_write(socket_, asio::buffer(*f), [self = shared_from_this(), f](boost::system::error_code ec, size_t) {
    std::lock_guard g(self->m_);
    if (ec) {
      self->writing_ = false;
      self->link_down(fmt::format("lost the peer without a CM DREQ ({})", ec.message()), false);
      return;
    }
    self->wq_.pop_front();
    // The local ACK timer counts from the last frame that left: frames waiting in the emulator's
    // own write queue (megabytes, behind a busy loopback) are not yet on a real HCA's wire.
    if (self->ack_timer_running_) self->restart_ack_timer();
    self->start_write();
  });
}

// ---- Qp: reception ---------------------------------------------------------------------------

void Qp::read_length() {
  asio::async_read(socket_, asio::buffer(len_buf_), [self = shared_from_this()](boost::system::error_code ec, size_t) {
    std::lock_guard g(self->m_);
    if (ec) {
      self->link_down(fmt::format("lost the peer without a CM DREQ ({})",
                                  ec == asio::error::eof ? std::string("end of stream") : ec.message()),
                      false);
      return;
    }
    uint32_t n = 0;
    try {
      n = decode_length(self->len_buf_);
    } catch (const WireError& e) {
      self->link_down(fmt::format("malformed packet from the peer: {}", e.what()), false);
      return;
    }
    self->read_body(n);
  });
}

void Qp::read_body(uint32_t n) {
  body_.resize(n);
  asio::async_read(socket_, asio::buffer(body_), [self = shared_from_this()](boost::system::error_code ec, size_t) {
    std::lock_guard g(self->m_);
    if (ec) {
      self->link_down(fmt::format("lost the peer without a CM DREQ ({})", ec.message()), false);
      return;
    }
    try {
      if (icrc_ok(self->body_))
        self->on_packet(decode(self->body_));
      else
        ++self->icrc_drops_;  // IBA 7.8.1: dropped silently, no NAK; the requester's timer recovers
    } catch (const WireError& e) {
      self->link_down(fmt::format("malformed packet from the peer: {}", e.what()), false);
      return;
    }
    if (self->socket_.is_open()) self->read_length();
  });
}

void Qp::on_packet(const Packet& p) {
  if (closed_) return;
  switch (p.op) {
    case Op::SendOnly:
    case Op::SendOnlyWithImm:
    case Op::RdmaWriteOnly:
    case Op::RdmaWriteOnlyWithImm:
    case Op::RdmaReadRequest:
    case Op::CompareSwap:
    case Op::FetchAdd:
      as_responder(p);
      break;
    case Op::Acknowledge:
    case Op::RdmaReadResponseOnly:
    case Op::AtomicAcknowledge:
      as_requester(p);
      break;
    case Op::CmDreq:
      link_down("the peer disconnected (CM DREQ)", true);
      break;
    default:
      link_down(fmt::format("{} on an established connection", op_name(p.op)), false);
      break;
  }
}

void Qp::as_responder(const Packet& p) {
  if (state_ != State::Rts && state_ != State::Rtr) return;  // ERROR: silently dropped
  // UC: a PSN out of order means lost packets: the message is taken and the PSN followed.
  if (uc_ && p.psn != responder_.epsn()) responder_.reset(p.psn);
  const hca::RcResponder::Verdict v = responder_.on_request(p.psn);
  if (v != hca::RcResponder::Verdict::Execute) {
    if (v == hca::RcResponder::Verdict::Duplicate) {
      // A duplicate (its ACK was lost, or go-back-N resent it, or the wire doubled it): a SEND
      // or RDMA WRITE is acknowledged again and not executed again; an RDMA READ is executed
      // again, reads being idempotent (IBA 9.7.5.1.2).
      if (p.op == Op::CompareSwap || p.op == Op::FetchAdd) {
        atomic_request(p, true);  // replayed, not executed again (IBA 9.4.5)
      } else if (p.op != Op::RdmaReadRequest) {
        ack(responder_.last_executed(), aeth::kAck);
      } else if (hca_.mr_allows(p.rkey, p.va, p.dma_len, sdp::kRemoteRead)) {
        Packet r{.op = Op::RdmaReadResponseOnly, .dest_qpn = remote_qpn_, .psn = p.psn, .syndrome = aeth::kAck, .msn = p.psn};
        const auto* src = reinterpret_cast<const uint8_t*>(p.va);
        r.payload.assign(src, src + p.dma_len);
        transmit(frame(r));
      }
    } else if (v == hca::RcResponder::Verdict::NakSequence) {
      // A PSN beyond the expected one: a packet went missing. One NAK (PSN sequence error,
      // carrying the expected PSN), then everything is dropped until that PSN comes again
      // (IBA 9.7.5.1.1). After an RNR NAK the requester goes back by itself.
      ack(responder_.epsn(), aeth::kNakPsnSeq);
    }
    return;
  }
  switch (p.op) {
    case Op::SendOnly:
    case Op::SendOnlyWithImm: {
      std::optional<sdp::RecvWr> got = take_recv();
      if (!got) {  // receiver not ready: RNR NAK with our RNR timer, the requester retries then
        if (uc_) {  // UC: dropped (IBA 9.8.2), the next message is awaited
          responder_.executed();
          return;
        }
        ack(p.psn, static_cast<uint8_t>(aeth::kRnrNak | min_rnr_timer_));
        responder_.rnr_naked();
        return;
      }
      const sdp::RecvWr r = *got;
      uint64_t capacity = 0;
      for (uint8_t i = 0; i < r.num_sge; ++i) capacity += r.sg[i].length;
      if (p.payload.size() > capacity || !scatter(r.sg, r.num_sge, p.payload)) {
        const bool too_long = p.payload.size() > capacity;
        push_cqe(Wc{r.wr_id, too_long ? WcStatus::LocLenErr : WcStatus::LocProtErr, WcOpcode::Recv, 0, qpn_});
        ack(p.psn, aeth::kNakInvReq);
        to_error(too_long ? fmt::format("a {} B SEND for a {} B receive", p.payload.size(), capacity)
                          : std::string("local protection error in a scatter list"),
                 std::nullopt);
        return;
      }
      Cqe c;
      c.wc = {r.wr_id, WcStatus::Success, WcOpcode::Recv, static_cast<uint32_t>(p.payload.size()), qpn_};
      c.src_qp = remote_qpn_;
      c.with_imm = p.op == Op::SendOnlyWithImm;
      c.imm = p.imm;
      push_cqe(c);
      break;
    }
    case Op::CompareSwap:
    case Op::FetchAdd:
      atomic_request(p, false);
      return;
    case Op::RdmaWriteOnlyWithImm:
    case Op::RdmaWriteOnly:
      if (!hca_.mr_allows(p.rkey, p.va, p.dma_len, sdp::kRemoteWrite)) {
        ack(p.psn, aeth::kNakRemAccess);  // nothing written; the responder's QP goes to ERROR too
        to_error(fmt::format("RDMA WRITE to [{:#x}, +{}) with rkey {:#x}: remote access violation", p.va, p.dma_len,
                             p.rkey),
                 std::nullopt);
        return;
      }
      {
        // WITH_IMM consumes a receive (IBA 9.4.3): none posted is RNR, before anything is written.
        std::optional<sdp::RecvWr> r;
        if (p.op == Op::RdmaWriteOnlyWithImm) {
          r = take_recv();
          if (!r) {
            if (uc_) {
              responder_.executed();
              return;
            }
            ack(p.psn, static_cast<uint8_t>(aeth::kRnrNak | min_rnr_timer_));
            responder_.rnr_naked();
            return;
          }
        }
        if (p.dma_len > 0) std::memcpy(reinterpret_cast<void*>(p.va), p.payload.data(), p.dma_len);
        if (r) {
          Cqe c;
          c.wc = {r->wr_id, WcStatus::Success, WcOpcode::Recv, p.dma_len, qpn_};
          c.kind = Cqe::Kind::RecvRdmaWithImm;
          c.src_qp = remote_qpn_;
          c.with_imm = true;
          c.imm = p.imm;
          push_cqe(c);
        }
      }
      break;
    case Op::RdmaReadRequest: {
      if (!hca_.mr_allows(p.rkey, p.va, p.dma_len, sdp::kRemoteRead)) {
        ack(p.psn, aeth::kNakRemAccess);
        to_error(fmt::format("RDMA READ of [{:#x}, +{}) with rkey {:#x}: remote access violation", p.va, p.dma_len,
                             p.rkey),
                 std::nullopt);
        return;
      }
      Packet r{.op = Op::RdmaReadResponseOnly, .dest_qpn = remote_qpn_, .psn = p.psn, .syndrome = aeth::kAck, .msn = p.psn};
      const auto* src = reinterpret_cast<const uint8_t*>(p.va);
      r.payload.assign(src, src + p.dma_len);
      transmit(frame(r));
      responder_.executed();
      return;
    }
    default:
      return;
  }
  responder_.executed();
  ack(p.psn, aeth::kAck);
}

std::optional<sdp::RecvWr> Qp::take_recv() {
  if (srq_) return srq_->take();
  if (rq_.empty()) return std::nullopt;
  sdp::RecvWr r = rq_.front();
  rq_.pop_front();
  return r;
}

void Qp::atomic_request(const Packet& p, bool duplicate) {
  auto reply = [&](uint64_t orig) {
    transmit(frame(Packet{.op = Op::AtomicAcknowledge, .dest_qpn = remote_qpn_, .psn = p.psn, .syndrome = aeth::kAck,
                          .msn = p.psn, .orig = orig}));
  };
  if (duplicate) {  // the saved answer, if still kept; else dropped (the requester's timer resends)
    for (const auto& [psn, orig] : atomic_replies_)
      if (psn == p.psn) reply(orig);
    return;
  }
  if (p.va % 8 != 0) {
    ack(p.psn, aeth::kNakInvReq);
    to_error(fmt::format("atomic at {:#x}: not 8-byte aligned", p.va), std::nullopt);
    return;
  }
  if (!hca_.mr_allows(p.rkey, p.va, 8, kRemoteAtomic)) {
    ack(p.psn, aeth::kNakRemAccess);
    to_error(fmt::format("atomic at {:#x} with rkey {:#x}: remote access violation", p.va, p.rkey), std::nullopt);
    return;
  }
  // Atomic with respect to this HCA and to the host's own atomics (IBV_ATOMIC_HCA and more).
  auto* target = reinterpret_cast<uint64_t*>(p.va);
  uint64_t orig = 0;
  if (p.op == Op::CompareSwap) {
    orig = p.compare;
    __atomic_compare_exchange_n(target, &orig, p.swap, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  } else {
    orig = __atomic_fetch_add(target, p.compare, __ATOMIC_SEQ_CST);
  }
  atomic_replies_.emplace_back(p.psn, orig);
  if (atomic_replies_.size() > 16) atomic_replies_.pop_front();
  responder_.executed();
  reply(orig);
}

void Qp::retire_acked(uint32_t psn) {
  // An ACK is cumulative (IBA 9.7.5.1.1): every WR up to its PSN is done, except an RDMA READ,
  // which only its response completes.
  bool retired = false;
  while (!unacked_.empty() && !psn_before(psn, unacked_.front().psn)) {
    Outstanding& o = unacked_.front();
    if (o.wr.opcode == WrOpcode::RdmaRead) break;
    const sdp::SendWr wr = o.wr;
    const WrExt x = o.x;
    unacked_.pop_front();
    complete_send(wr, WcStatus::Success, x);
    rnr_.progress();
    retired = true;
  }
  if (unacked_.empty()) acked_psn_.reset();
  if (retired) progress();
  if (!unacked_.empty() && unacked_.front().local_error)
    fail_front(*unacked_.front().local_error, "local protection error in a gather list");
  cv_.notify_all();
}

void Qp::retransmit_from(uint32_t psn) {
  for (const Outstanding& o : unacked_)
    if (!psn_before(o.psn, psn) && o.frame) {
      ++stats_.retransmitted;
      transmit(o.frame);
    }
  arm_ack_timer();
}

void Qp::as_requester(const Packet& p) {
  if (state_ != State::Rts) return;
  if (unacked_.empty() || psn_before(p.psn, unacked_.front().psn)) return;  // stale
  if (p.op == Op::RdmaReadResponseOnly || p.op == Op::AtomicAcknowledge) {
    const bool atomic = p.op == Op::AtomicAcknowledge;
    std::vector<uint8_t> orig;
    if (atomic) {  // the original value lands in the SGE in host order
      orig.resize(8);
      std::memcpy(orig.data(), &p.orig, 8);
    }
    const std::vector<uint8_t>& data = atomic ? orig : p.payload;
    // A READ response acknowledges every request before it (IBA 9.7.5.1.1); one for a later
    // READ than the oldest outstanding (whose response was lost) is dropped, the timer resends.
    retire_acked(hca::psn_prev(p.psn));
    if (unacked_.empty() || unacked_.front().psn != p.psn) return;
    Outstanding& o = unacked_.front();
    if (o.wr.opcode != WrOpcode::RdmaRead || o.x.atomic() != atomic || data.size() != o.wr.length()) {
      link_down(fmt::format("{} PSN {} / {} B does not match the request", op_name(p.op), p.psn, data.size()), false);
      return;
    }
    if (!scatter(o.wr.sg, o.wr.num_sge, data)) {
      fail_front(WcStatus::LocProtErr, "local protection error in an RDMA READ's scatter list");
      return;
    }
    const sdp::SendWr wr = o.wr;
    const WrExt x = o.x;
    unacked_.pop_front();
    complete_send(wr, WcStatus::Success, x);
    progress();
    // WRs behind the READ that a cumulative ACK already covered complete now.
    retire_acked(acked_psn_ && psn_before(p.psn, *acked_psn_) ? *acked_psn_ : p.psn);
    return;
  }
  const hca::AckKind kind = hca::ack_kind(p.syndrome);
  if (kind == hca::AckKind::Ack) {
    if (!acked_psn_ || psn_before(*acked_psn_, p.psn)) acked_psn_ = p.psn;
    retire_acked(p.psn);
  } else if (kind == hca::AckKind::RnrNak) {  // RNR NAK: everything before it is done; retry it later
    retire_acked(hca::psn_prev(p.psn));
    if (unacked_.empty() || unacked_.front().psn != p.psn || rnr_waiting_) return;  // stale, or a duplicate
    ++stats_.rnr_naks;
    stop_ack_timer();  // the RNR timer runs instead
    if (!rnr_.retry()) {
      fail_front(WcStatus::RnrRetryExcErr, fmt::format("receiver not ready after {} retries", rnr_.count()));
      return;
    }
    rnr_waiting_ = true;
    // The responder's RNR timer, from the NAK's code (IBA table 45).
    rnr_timer_.expires_after(
        std::chrono::nanoseconds(static_cast<int64_t>(hca::rnr_timer_ns(hca::rnr_code(p.syndrome)))));
    rnr_timer_.async_wait([self = shared_from_this(), psn = p.psn](boost::system::error_code ec) {
      if (ec) return;
      std::lock_guard g(self->m_);
      self->rnr_waiting_ = false;
      if (self->state_ == State::Rts && !self->closed_) self->retransmit_from(psn);
    });
  } else if (kind == hca::AckKind::NakPsnSeq) {
    retire_acked(hca::psn_prev(p.psn));
    // The responder NAKs a sequence error once; the same NAK again is a duplicate frame.
    if (unacked_.empty() || unacked_.front().psn != p.psn || naked_psn_ == p.psn || rnr_waiting_) return;
    naked_psn_ = p.psn;
    retry("NAK (PSN sequence error)");
  } else {
    retire_acked(hca::psn_prev(p.psn));
    if (unacked_.empty() || unacked_.front().psn != p.psn) return;
    const WcStatus s = hca::nak_status(kind);
    fail_front(s, fmt::format("the responder answered NAK ({})", sdp::wc_status_str(s)));
  }
}

// ---- connection setup ------------------------------------------------------------------------

std::unique_ptr<sdp::Connection> EmuDevice::connect(const std::string& host, uint16_t port, const sdp::QpCaps& caps,
                                                   const sdp::MakeRequest& request, std::vector<uint8_t>& reply) {
  const std::string peer = fmt::format("{}:{}", host, port);
  tcp::socket socket(io());
  boost::system::error_code ec;
  tcp::resolver resolver(io());
  const auto endpoints = resolver.resolve(host, std::to_string(port), ec);
  if (ec) throw sdp::DeviceError(fmt::format("cannot resolve {}: {}", host, ec.message()));
  asio::connect(socket, endpoints, ec);
  if (ec) throw sdp::DeviceError(fmt::format("cannot connect to {}: {}", peer, ec.message()));
  socket.set_option(tcp::no_delay(true), ec);
  auto qp = hca_.create_qp(caps);
  qp->attach(std::move(socket));
  qp->to_init();
  const std::vector<uint8_t> private_data = request(*qp);
  if (private_data.size() > kReqPrivateData)
    throw sdp::DeviceError(fmt::format("{}: {} B of REQ private data, the CM carries {}", peer, private_data.size(), kReqPrivateData));
  write_frame(qp->socket(), Packet{.op = Op::CmReq, .local_qpn = qp->qp_num(), .payload = private_data}, peer);
  const Packet rep = read_frame_until(qp->socket(), std::chrono::steady_clock::now() + std::chrono::milliseconds(kCmTimeoutMs), peer);
  if (rep.op == Op::CmRej)
    throw sdp::DeviceError(fmt::format("{} rejected the connection: {}", peer, std::string(rep.payload.begin(), rep.payload.end())));
  if (rep.op != Op::CmRep) throw sdp::DeviceError(fmt::format("{}: {} where a CM REP was expected", peer, op_name(rep.op)));
  reply = rep.payload;
  write_frame(qp->socket(), Packet{.op = Op::CmRtu, .dest_qpn = rep.local_qpn}, peer);
  qp->to_rts(rep.local_qpn);
  return std::make_unique<EmuConnection>(std::move(qp), peer);
}

std::unique_ptr<sdp::Listener> EmuDevice::listen(const std::string& bind_addr, uint16_t port) {
  boost::system::error_code ec;
  const auto addr = asio::ip::make_address(bind_addr.empty() ? "0.0.0.0" : bind_addr, ec);
  if (ec) throw sdp::DeviceError(fmt::format("cannot listen on '{}': not an IP address", bind_addr));
  tcp::acceptor acceptor(io());
  const tcp::endpoint ep(addr, port);
  acceptor.open(ep.protocol(), ec);
  if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor.bind(ep, ec);
  if (!ec) acceptor.listen(8, ec);
  if (ec == boost::system::errc::address_not_available)  // -L names an address this machine lacks: bad input
    throw InputError(fmt::format("cannot listen on {}:{}: {} (not an address of this machine)", addr.to_string(), port,
                                 ec.message()));
  if (ec) throw sdp::DeviceError(fmt::format("cannot listen on {}:{}: {}", addr.to_string(), port, ec.message()));
  return std::make_unique<EmuListener>(*this, std::move(acceptor));
}

std::unique_ptr<sdp::Incoming> EmuListener::next() {
  tcp::socket socket(dev_.io());
  boost::system::error_code ec;
  acceptor_.accept(socket, ec);
  if (ec) throw sdp::DeviceError(fmt::format("accept on port {}: {}", port(), ec.message()));
  socket.set_option(tcp::no_delay(true), ec);
  std::string peer = endpoint_text(socket);
  return std::make_unique<EmuIncoming>(dev_, std::move(socket), std::move(peer),
                                       std::chrono::steady_clock::now() + std::chrono::milliseconds(kCmTimeoutMs));
}

std::unique_ptr<sdp::Connection> EmuIncoming::accept(const sdp::QpCaps& caps, const sdp::AnswerRequest& answer) {
  const std::string& peer = peer_;
  const Packet req = read_frame_until(socket_, deadline_, peer);
  if (req.op != Op::CmReq) throw sdp::DeviceError(fmt::format("{}: {} where a CM REQ was expected", peer, op_name(req.op)));
  auto qp = dev_.hca().create_qp(caps);
  qp->attach(std::move(socket_));
  qp->to_init();
  std::vector<uint8_t> rep;
  try {
    // The IB CM REQ's private data field is 92 bytes, zero-filled past what the sender put
    // there (an rdma-core peer sends at most 56 with RDMA_PS_TCP): the answer sees all 92.
    std::vector<uint8_t> request = req.payload;
    if (request.size() < kReqPrivateData) request.resize(kReqPrivateData, 0);
    rep = answer(*qp, request);
    if (rep.size() > kRepPrivateData)
      throw sdp::DeviceError(fmt::format("{} B of REP private data, the CM carries {}", rep.size(), kRepPrivateData));
  } catch (const std::exception& e) {
    std::string why = e.what();
    Packet rej{.op = Op::CmRej};
    rej.payload.assign(why.begin(), why.begin() + static_cast<long>(std::min(why.size(), kRejReason)));
    boost::system::error_code ignored;
    asio::write(qp->socket(), asio::buffer(encode(rej)), ignored);
    qp->close();
    throw sdp::DeviceError(fmt::format("rejected the connection from {}: {}", peer, why));
  }
  write_frame(qp->socket(), Packet{.op = Op::CmRep, .dest_qpn = req.local_qpn, .local_qpn = qp->qp_num(), .payload = rep},
              peer);
  const Packet rtu = read_frame_until(qp->socket(), deadline_, peer);
  if (rtu.op != Op::CmRtu) throw sdp::DeviceError(fmt::format("{}: {} where a CM RTU was expected", peer, op_name(rtu.op)));
  qp->to_rts(req.local_qpn);
  return std::make_unique<EmuConnection>(std::move(qp), peer);
}

// ---- public ----------------------------------------------------------------------------------

std::unique_ptr<sdp::Device> open_emu_device(uint64_t memory_bytes, const model::FaultConfig& faults,
                                            const model::RcRetry& retry) {
  try {
    return std::make_unique<EmuDevice>(memory_bytes, faults, retry);
  } catch (const sdp::MemoryError& e) {
    throw sdp::DeviceError(fmt::format("emulated HCA: {}", e.what()));
  }
}

void set_rnr_retry(sdp::Verbs& verbs, uint8_t rnr_retry) {
  auto* qp = dynamic_cast<Qp*>(&verbs);
  if (qp == nullptr) throw sdp::VerbsError("set_rnr_retry: not a QP of the emulated HCA");
  qp->set_rnr_retry(rnr_retry);
}

std::string error_reason(sdp::Verbs& verbs) {
  auto* qp = dynamic_cast<Qp*>(&verbs);
  return qp == nullptr ? std::string() : qp->reason();
}

model::FaultStats fault_stats(sdp::Verbs& verbs) {
  auto* qp = dynamic_cast<Qp*>(&verbs);
  return qp == nullptr ? model::FaultStats{} : qp->fault_stats();
}

uint64_t icrc_drops(sdp::Verbs& verbs) {
  auto* qp = dynamic_cast<Qp*>(&verbs);
  return qp == nullptr ? 0 : qp->icrc_drops();
}

}  // namespace hcasim::emu
