#include "sim/hca.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace hcasim::sim {

namespace s4u = simgrid::s4u;
using sdp::Wc;
using sdp::WcOpcode;
using sdp::WcStatus;
using sdp::WrOpcode;

// ---- EmulatedHca -----------------------------------------------------------------------------

EmulatedHca::EmulatedHca(SimHost& host, const model::HcaTiming& timing, const model::PostConfig& post,
                         uint32_t max_inline_data, Timer& timer, Failure& failure,
                         const model::IrqConfig& irq)
    : host_(host),
      timing_(timing),
      post_(post),
      max_inline_data_(max_inline_data),
      timer_(timer),
      failure_(failure),
      irq_(irq) {}

EmulatedHca::~EmulatedHca() = default;

uint32_t EmulatedHca::alloc_pd() { return mrs_.alloc_pd(); }

uint32_t EmulatedHca::reg_mr(uint32_t pd, sdp::Addr addr, uint64_t len, unsigned access) {
  if (!mrs_.has_pd(pd)) throw sdp::VerbsError(fmt::format("reg_mr: no PD {}", pd));
  if (!host_.memory().contains(addr, len))
    throw sdp::VerbsError(fmt::format("reg_mr: [{:#x}, +{}) is not allocated memory", addr, len));
  return mrs_.reg(pd, addr, len, access);
}

uint32_t EmulatedHca::dma_mr(uint32_t pd) { return mrs_.reg_all_memory(pd, sdp::kLocalWrite); }

SimQp& EmulatedHca::create_qp(uint32_t pd, uint32_t max_send_wr, uint32_t max_recv_wr, uint32_t cq_entries) {
  if (!mrs_.has_pd(pd)) throw sdp::VerbsError(fmt::format("create_qp: no PD {}", pd));
  qps_.push_back(std::make_unique<SimQp>(*this, pd, next_qpn_++, max_send_wr, max_recv_wr, cq_entries));
  return *qps_.back();
}

void EmulatedHca::set_route(const model::ib::Config& ib, double bottleneck_Bps, const Route& route) {
  ib_ = ib;
  bottleneck_Bps_ = bottleneck_Bps;
  route_ = &route;
}

void EmulatedHca::set_faults(const model::FaultConfig& faults, const model::RcRetry& retry, uint64_t side) {
  faults_ = faults;
  retry_ = retry;
  side_ = side;
  for (auto& q : qps_) {
    q->rnr_retry_ = retry.rnr_retry;
    q->draw_requester_.reset();
    q->draw_responder_.reset();
  }
}

void EmulatedHca::start() {
  spawn(host_.name() + "-hca-send", [this] {
    failure_.guard(host_.name() + " HCA send engine", [this] { send_engine(); });
  }, true);
  spawn(host_.name() + "-irq", [this] {
    failure_.guard(host_.name() + " interrupt handler", [this] {
      host_.bind_current(irq_.target_cpu());
      interrupt_handler();
    });
  }, true);
}

void EmulatedHca::ring_doorbell() { engine_wq_.notify_all(); }

void EmulatedHca::raise_interrupt(SimQp* qp) {
  pending_irqs_.push_back(qp);
  irq_wq_.notify_all();
}

void EmulatedHca::send_engine() {
  bool idle = true;
  size_t next = 0;
  for (;;) {
    SimQp* qp = nullptr;
    for (size_t i = 0; i < qps_.size() && qp == nullptr; ++i) {  // round robin over send queues
      SimQp& q = *qps_[(next + i) % qps_.size()];
      if (!q.sq_.empty()) {
        qp = &q;
        next = (next + i + 1) % qps_.size();
      }
    }
    if (qp == nullptr) {
      idle = true;
      engine_wq_.wait();
      continue;
    }
    qp->execute_one(idle);
      idle = false;
  }
}

void EmulatedHca::interrupt_handler() {
  yield_rounds(2);
  for (;;) {
    while (pending_irqs_.empty()) {
      irq_wq_.wait();
    }
    SimQp* qp = pending_irqs_.front();
    pending_irqs_.pop_front();
    ++interrupts_;
    yield_rounds(1);
    host_.charge(model::Activity::Interrupt, irq_.handler_ns(host_.costs().interrupt_ns));
    if (qp->on_event_) qp->on_event_();
    host_.flush();
    yield_rounds(2);
  }
}

// ---- SimQp: verbs ----------------------------------------------------------------------------

SimQp::SimQp(EmulatedHca& hca, uint32_t pd, uint32_t qpn, uint32_t max_send_wr, uint32_t max_recv_wr,
             uint32_t cq_entries)
    : hca_(hca),
      pd_(pd),
      qpn_(qpn),
      max_send_wr_(max_send_wr),
      max_recv_wr_(max_recv_wr),
      cq_(cq_entries),
      moderator_(hca.irq_.moderation_count, hca.irq_.moderation_period_ns),
      rnr_retry_(hca.retry_.rnr_retry) {}

void SimQp::modify(State next) {
  hca::check_transition(qpn_, state_, next);
  if (next == State::Rtr && peer_ == nullptr)  // RTR needs the remote QP (the CM's REP)
    throw sdp::VerbsError(fmt::format("modify_qp: QP {:#x} to RTR without a remote QP", qpn_));
  if (next == State::Error) {
    to_error();
    return;
  }
  if (next == State::Reset) {  // IBA 10.3.1: RESET empties the queues
    sq_.clear();
    rq_.clear();
    cq_.clear();
    sq_outstanding_ = 0;
  }
  state_ = next;
}

void SimQp::connect(SimQp& a, SimQp& b) {
  a.modify(State::Init);
  b.modify(State::Init);
  a.peer_ = &b;
  b.peer_ = &a;
  for (SimQp* q : {&a, &b}) {
    q->modify(State::Rtr);
    q->modify(State::Rts);
  }
}

void SimQp::set_handlers(std::function<void()> on_cqe, std::function<void()> on_event) {
  on_cqe_ = std::move(on_cqe);
  on_event_ = std::move(on_event);
}

void SimQp::set_rnr(uint8_t rnr_retry, double min_rnr_timer_ns) {
  (void)hca::RnrCounter(rnr_retry);  // throws VerbsError when > 7
  rnr_retry_ = rnr_retry;
  min_rnr_timer_ns_ = min_rnr_timer_ns;
}

void SimQp::set_write_handler(std::function<void(sdp::Addr, uint64_t)> on_write) { on_write_ = std::move(on_write); }

namespace {
model::mlx4::WqeShape wqe_shape(const sdp::SendWr& wr) {
  model::mlx4::WqeShape w;
  w.opcode = wr.opcode == WrOpcode::Send        ? model::mlx4::Opcode::Send
             : wr.opcode == WrOpcode::RdmaWrite ? model::mlx4::Opcode::RdmaWrite
                                                : model::mlx4::Opcode::RdmaRead;
  w.num_sge = wr.num_sge;
  w.inline_data = wr.inline_data;
  w.inline_bytes = wr.inline_data ? static_cast<uint32_t>(wr.length()) : 0;
  return w;
}
}  // namespace

uint32_t SimQp::reg_mr(sdp::Addr addr, uint64_t len, unsigned access) { return hca_.reg_mr(pd_, addr, len, access); }

uint32_t SimQp::dma_mr() { return hca_.dma_mr(pd_); }

void SimQp::post_send(const sdp::SendWr& wr) {
  hca_.host().flush();  // the WQE is posted when the CPU gets here
  const hca::SendLimits lim{max_send_wr_, hca_.max_inline_data(), UINT64_MAX};
  const hca::PostCheck c = hca::check_post_send(state_, sq_outstanding_, lim, wr);
  if (c.post != hca::Post::Accept) [[unlikely]] {
    refuse_or_flush(c, wr, lim);
    return;
  }
  // The WQE is in the send queue; the MMIO that hands it to the HCA costs the CPU its stores
  // (charged now, slept off at the caller's next visible step) and reaches the HCA later.
  const model::PostTiming& t = post_timing_of(wqe_shape(wr));
  hca_.host().charge(model::Activity::Post, t.cpu_ns);
  ++(t.blueflame ? hca_.blueflame_posts_ : hca_.doorbell_posts_);
  sq_.push_back({wr, t.blueflame, now_ns() + t.wqe_at_hca_ns, t});
  ++sq_outstanding_;
  hca_.ring_doorbell();
}

void SimQp::post_recv(const sdp::RecvWr& wr) {
  hca_.host().flush();
  const hca::PostCheck c = hca::check_post_recv(state_, rq_.size(), max_recv_wr_, wr);
  if (c.post != hca::Post::Accept) [[unlikely]] {
    refuse_or_flush(c, wr);
    return;
  }
  rq_.push_back(wr);
}

int SimQp::poll_cq(std::span<Wc> out) {
  hca_.host().flush();
  return cq_.poll(out);
}

bool SimQp::req_notify_cq() {
  hca_.host().flush();
  armed_ = true;
  return !cq_.empty();
}

// ---- SimQp: completions ----------------------------------------------------------------------

void SimQp::push_cqe(const Wc& wc) {
  if (wc.opcode != WcOpcode::Recv) --sq_outstanding_;
  if (!cq_.push(wc)) [[unlikely]] {  // CQ overrun (hca/cq.h): nothing written, the QP goes to ERROR
    to_error();
    return;
  }
  if (on_cqe_) on_cqe_();
  if (armed_) moderate_event();
}

void SimQp::moderate_event() {
  switch (moderator_.on_cqe(now_ns())) {
    case model::EventModerator::Decision::Fire:
      fire_event(hca_.timing().interrupt_latency_ns);
      break;
    case model::EventModerator::Decision::Wait: {
      const uint64_t w = moderator_.window();
      hca_.timer().at(moderator_.deadline_ns(), [this, w] {
        if (armed_ && moderator_.on_deadline(w)) fire_event(hca_.timing().interrupt_latency_ns);
      });
      break;
    }
    case model::EventModerator::Decision::Pending:
      break;
  }
}

void SimQp::fire_event(double delay_ns) {
  // EQE + interrupt after the CQE (mlx4/mthca: one event per arming).
  armed_ = false;
  moderator_.reset();
  hca_.timer().at(now_ns() + delay_ns, [this] { hca_.raise_interrupt(this); });
}

void SimQp::fail_wr(const Wc& wc, double at_ns) {
  hca_.timer().at(at_ns, [this, wc] {
    push_cqe(wc);
    to_error();
  });
}

bool SimQp::recovered(Recovery r, const Wc& swc) {
  switch (r) {
    case Recovery::Delivered: return true;
    case Recovery::Flushed: return false;  // to_error flushed it (executing_)
    case Recovery::RetryExceeded: fail_now(swc, WcStatus::RetryExcErr); return false;
  }
  return false;
}

void SimQp::fail_now(Wc wc, WcStatus status) {
  // At once, not through the timer: the send engine must not start the next WR first.
  wc.status = status;
  executing_ = nullptr;  // completed here, not by the flush
  const bool was_error = state_ == State::Error;
  push_cqe(wc);
  if (!was_error) to_error();
}

void SimQp::to_error() {
  if (state_ == State::Error) return;
  state_ = State::Error;
  // Outstanding work completes with WR_FLUSH_ERR (hca::flush_queues), as far as the CQ holds it:
  // the WQE in execution first, then the send queue, then the receive queue.
  if (executing_ != nullptr) {
    cq_.push(hca::send_wc(executing_->wr, WcStatus::WrFlushErr, qpn_));
    executing_ = nullptr;
  }
  hca::flush_queues(qpn_, sq_, [](const Posted& p) -> const sdp::SendWr& { return p.wr; }, rq_,
                    [this](const Wc& wc) { cq_.push(wc); });
  if (on_cqe_) on_cqe_();
  if (armed_) fire_event(0);
}

void SimQp::refuse_or_flush(const hca::PostCheck& c, const sdp::SendWr& wr, const hca::SendLimits& lim) {
  if (c.post == hca::Post::Refuse)
    throw sdp::VerbsError(hca::post_error_text("post_send", qpn_, state_, c.error, &wr, &lim));
  flush_posted(hca::send_wc(wr, WcStatus::WrFlushErr, qpn_));
}

void SimQp::refuse_or_flush(const hca::PostCheck& c, const sdp::RecvWr& wr) {
  if (c.post == hca::Post::Refuse)
    throw sdp::VerbsError(hca::post_error_text("post_recv", qpn_, state_, c.error, nullptr, nullptr));
  flush_posted(hca::recv_error_wc(wr, WcStatus::WrFlushErr, qpn_));
}

void SimQp::flush_posted(const Wc& wc) {
  if (!cq_.push(wc)) return;  // an overrun CQ takes nothing more
  if (on_cqe_) on_cqe_();
  if (armed_) moderate_event();
}

// ---- SimQp: the send engine ------------------------------------------------------------------

bool SimQp::gather_ok(const sdp::SendWr& wr) const {
  for (uint8_t i = 0; i < wr.num_sge; ++i)
    if (!hca_.mr_allows(wr.sg[i].lkey, pd_, wr.sg[i].addr, wr.sg[i].length, 0)) return false;
  return true;
}

void SimQp::execute_one(bool after_idle) {
  Posted p = sq_.front();
  sq_.pop_front();
  executing_ = &p;
  const sdp::SendWr& wr = p.wr;
  // A BlueFlame WQE is usable when its stores have arrived. After a doorbell on an idle queue
  // the HCA waits for the doorbell, then fetches the WQE; a busy queue prefetches WQEs while
  // the previous message streams, which hides both.
  if ((p.blueflame || after_idle) && p.wqe_at_hca_ns > now_ns()) {
    sleep_until_s(to_s(p.wqe_at_hca_ns));
    p.waited = true;
  }
  if (state_ == State::Rts) {  // else flushed meanwhile (to_error completed it)
    switch (wr.opcode) {
      case WrOpcode::Send: execute_send(p); break;
      case WrOpcode::RdmaWrite: execute_rdma_write(p); break;
      case WrOpcode::RdmaRead: execute_rdma_read(wr); break;
    }
  }
  executing_ = nullptr;  // its completion is written or scheduled
}

namespace {
/// Copies the gather list of `wr` (in `from`) to `scatter` SGEs (in `to`), SGE by SGE.
template <class Sges>
void move_data(sdp::HostMemory& to, const Sges& scatter, uint8_t n_scatter, const sdp::HostMemory& from,
               const std::array<sdp::Sge, sdp::kMaxSge>& gather, uint8_t n_gather, uint64_t bytes) {
  uint8_t gi = 0, si = 0;
  uint64_t goff = 0, soff = 0, left = bytes;
  while (left > 0 && gi < n_gather && si < n_scatter) {
    const sdp::Sge& g = gather[gi];
    const sdp::Sge& s = scatter[si];
    const uint64_t n = std::min<uint64_t>({g.length - goff, s.length - soff, left});
    sdp::HostMemory::copy(to, s.addr + soff, from, g.addr + goff, n);
    goff += n;
    soff += n;
    left -= n;
    if (goff == g.length) ++gi, goff = 0;
    if (soff == s.length) ++si, soff = 0;
  }
}
}  // namespace

const model::PostTiming& SimQp::post_timing_of(const model::mlx4::WqeShape& s) {
  PostMemo& m = post_memo_;
  if (!m.valid || m.shape.opcode != s.opcode || m.shape.num_sge != s.num_sge || m.shape.inline_data != s.inline_data ||
      m.shape.inline_bytes != s.inline_bytes) {
    m.timing = model::post_timing(hca_.post_config(), s);
    m.shape = s;
    m.valid = true;
  }
  return m.timing;
}

bool SimQp::gather_and_transfer(const Posted& p, Wc& swc) {
  const sdp::SendWr& wr = p.wr;
  if (!gather_ok(wr)) {
    swc.status = WcStatus::LocProtErr;
    fail_wr(swc, now_ns() + hca_.timing().dma_read_rtt_ns);
    return false;
  }
  // One communication over the route, sized so that alone it lasts the longer of its stream
  // time (bytes / bottleneck) and its busiest link's time with every header counted.
  const uint64_t bytes = wr.length();
  // When the engine waited for the WQE, its MMIO and fetch bytes crossed the link before it
  // started (post_timing counts them).
  const bool send = wr.opcode == WrOpcode::Send, with_post = !p.waited;
  WireMemo& m = wire_memo_;
  if (!m.valid || m.bytes != bytes || m.inline_data != wr.inline_data || m.send != send || m.with_post != with_post ||
      m.blueflame != p.post.blueflame || m.wqe_bytes != p.post.wqe_bytes || m.mmio_bus_ns != p.post.mmio.bus_ns) {
    const model::MessageWire w = model::message_wire(hca_.post_config().bus, hca_.ib_, peer_->hca_.post_config().bus,
                                                     p.post, wr.inline_data, bytes, send, with_post);
    const double link_ns = model::message_link_time_ns(hca_.ib_, w);
    const double size = std::max(static_cast<double>(std::max<uint64_t>(bytes, 1)), link_ns * 1e-9 * hca_.bottleneck_Bps_);
    m = {true, wr.inline_data, send, with_post, p.post.blueflame, bytes, p.post.wqe_bytes, p.post.mmio.bus_ns,
         static_cast<uint64_t>(std::ceil(size))};
  }
  Scheduler::current().transfer(hca_.route(), m.size);
  return true;
}

void SimQp::complete(const sdp::SendWr& wr, const Wc& swc, double at_ns) {
  if (wr.signaled)
    hca_.timer().at(at_ns, [this, swc] { push_cqe(swc); });
  else
    --sq_outstanding_;
}

void SimQp::execute_send(const Posted& p) {
  const sdp::SendWr& wr = p.wr;
  const model::HcaTiming& t = hca_.timing();
  SimQp* peer = peer_;
  const model::HcaTiming& pt = peer->hca_.timing();
  Wc swc{wr.wr_id, WcStatus::Success, WcOpcode::Send, 0, qpn_};
  if (!gather_and_transfer(p, swc)) return;
  const uint64_t bytes = wr.length();
  hca::RetryCounter retries(hca_.retry_.retry_cnt);  // NAKs and ACK timeouts of this WR (retry_cnt)
  if (!recovered(recover_data(bytes, false, retries), swc)) return;

  // The last byte left the bottleneck (or, after RNR NAKs, the retry that found a receive
  // did): deliver the message to the responder's oldest receive. CQE times count from then.
  auto recv_done = [&] { return now_ns() + model::receive_completion_latency_ns(t, pt, wr.inline_data, bytes); };
  auto send_done = [&] { return now_ns() + model::send_completion_latency_ns(t, pt, wr.inline_data, bytes); };
  if (peer->state_ != State::Rts && peer->state_ != State::Rtr) {
    swc.status = WcStatus::RemAccessErr;  // no responder: transport retries exhausted
    fail_wr(swc, send_done());
    return;
  }
  // Receiver not ready: the responder answers RNR NAK and the requester retries after the
  // responder's min_rnr_timer, rnr_retry times (7 = for ever; IBA 9.7.5.2.8, 10.2.4.3).
  for (hca::RnrCounter rnr(rnr_retry_); peer->rq_.empty();) {
    if (!rnr.retry()) {
      swc.status = WcStatus::RnrRetryExcErr;
      fail_wr(swc, send_done());
      return;
    }
    ++hca_.fault_stats_.rnr_naks;
    sleep_for_ns(peer->min_rnr_timer_ns_);
    if (state_ != State::Rts) return;  // flushed meanwhile
    if (peer->state_ != State::Rts && peer->state_ != State::Rtr) {
      swc.status = WcStatus::RemAccessErr;
      fail_wr(swc, now_ns());
      return;
    }
  }
  const sdp::RecvWr rwr = peer->rq_.front();
  peer->rq_.pop_front();
  uint64_t capacity = 0;
  bool scatter_ok = true;
  for (uint8_t i = 0; i < rwr.num_sge; ++i) {
    capacity += rwr.sg[i].length;
    scatter_ok = scatter_ok && peer->hca_.mr_allows(rwr.sg[i].lkey, peer->pd_, rwr.sg[i].addr, rwr.sg[i].length,
                                                    sdp::kLocalWrite);
  }
  if (bytes > capacity || !scatter_ok) {
    peer->fail_wr({rwr.wr_id, bytes > capacity ? WcStatus::LocLenErr : WcStatus::LocProtErr, WcOpcode::Recv, 0,
                   peer->qpn_},
                  recv_done());
    swc.status = WcStatus::RemInvReqErr;
    fail_wr(swc, send_done());
    return;
  }
  move_data(peer->hca_.host().memory(), rwr.sg, rwr.num_sge, hca_.host().memory(), wr.sg, wr.num_sge, bytes);
  const Wc rwc{rwr.wr_id, WcStatus::Success, WcOpcode::Recv, static_cast<uint32_t>(bytes), peer->qpn_};
  hca_.timer().at(recv_done(), [peer, rwc] { peer->push_cqe(rwc); });
  if (!recovered(recover_ack(bytes, retries), swc)) return;
  complete(wr, swc, send_done());
}

void SimQp::execute_rdma_write(const Posted& p) {
  const sdp::SendWr& wr = p.wr;
  const model::HcaTiming& t = hca_.timing();
  SimQp* peer = peer_;
  Wc swc{wr.wr_id, WcStatus::Success, WcOpcode::RdmaWrite, 0, qpn_};
  if (!gather_and_transfer(p, swc)) return;
  const uint64_t bytes = wr.length();
  hca::RetryCounter retries(hca_.retry_.retry_cnt);
  if (!recovered(recover_data(bytes, false, retries), swc)) return;
  const double now = now_ns();
  const double landed = now + model::receive_completion_latency_ns(t, peer->hca_.timing(), wr.inline_data, bytes);
  const double send_latency = model::send_completion_latency_ns(t, peer->hca_.timing(), wr.inline_data, bytes);
  const double send_done = now + send_latency;
  if (!peer->hca_.mr_allows(wr.rkey, peer->pd_, wr.remote_addr, bytes, sdp::kRemoteWrite)) {
    swc.status = WcStatus::RemAccessErr;  // the responder NAKs: remote access error
    fail_wr(swc, send_done);
    return;
  }
  // The payload becomes visible in the responder's memory with the last posted write; a CPU
  // polling it (perftest's latency loop) is told then.
  hca_.timer().at(landed, [this, peer, wr, bytes] {
    const std::array<sdp::Sge, 1> target{sdp::Sge{wr.remote_addr, static_cast<uint32_t>(bytes), wr.rkey}};
    move_data(peer->hca_.host().memory(), target, 1, hca_.host().memory(), wr.sg, wr.num_sge, bytes);
    if (peer->on_write_) peer->on_write_(wr.remote_addr, bytes);
  });
  if (!recovered(recover_ack(bytes, retries), swc)) return;
  // After a lost ACK the completion waits for the retransmission's ACK (now_ns() is `now` else).
  complete(wr, swc, now_ns() + send_latency);
}

void SimQp::execute_rdma_read(const sdp::SendWr& wr) {
  const model::HcaTiming& t = hca_.timing();
  SimQp* peer = peer_;
  const model::HcaTiming& pt = peer->hca_.timing();
  Wc swc{wr.wr_id, WcStatus::Success, WcOpcode::RdmaRead, 0, qpn_};
  for (uint8_t i = 0; i < wr.num_sge; ++i)  // the local SGEs are written
    if (!hca_.mr_allows(wr.sg[i].lkey, pd_, wr.sg[i].addr, wr.sg[i].length, sdp::kLocalWrite)) {
      swc.status = WcStatus::LocProtErr;
      fail_wr(swc, now_ns());
      return;
    }
  const uint64_t bytes = wr.length();
  hca::RetryCounter retries(hca_.retry_.retry_cnt);
  if (!recovered(recover_read_request(retries), swc)) return;
  // The read request travels to the responder, which starts its DMA read of the data.
  sleep_for_ns(t.tx_processing_ns + t.propagation_ns + pt.rx_processing_ns);
  if (!peer->hca_.mr_allows(wr.rkey, peer->pd_, wr.remote_addr, bytes, sdp::kRemoteRead)) {
    swc.status = WcStatus::RemAccessErr;
    fail_wr(swc, now_ns() + pt.tx_processing_ns + t.propagation_ns + t.rx_processing_ns);
    return;
  }
  // The response data flows responder -> requester over the reverse route.
  Scheduler::current().transfer(peer->hca_.route(), std::max<uint64_t>(bytes, 1));
  if (!recovered(recover_data(bytes, true, retries), swc)) return;
  const std::array<sdp::Sge, sdp::kMaxSge> source{sdp::Sge{wr.remote_addr, static_cast<uint32_t>(bytes), wr.rkey}};
  move_data(hca_.host().memory(), wr.sg, wr.num_sge, peer->hca_.host().memory(), source, 1, bytes);
  // Pipeline tail of the response: the responder's read round trip and packet build,
  // propagation, the requester's receive processing and its posted write of data and CQE.
  complete(wr, swc, now_ns() + model::receive_completion_latency_ns(pt, t));
}

// ---- SimQp: faults on the wire and RC recovery (model/fault.h) ------------------------------

model::Fate SimQp::draw_fate(SimQp& src, bool responder) {
  auto& d = responder ? src.draw_responder_ : src.draw_requester_;
  if (!d) d.emplace(src.hca_.faults_, src.hca_.fault_stream(src.qpn_, responder));
  const model::Fate f = d->next();
  model::FaultStats& st = src.hca_.fault_stats_;
  ++st.packets;
  switch (f) {
    case model::Fate::Lose: ++st.lost; break;
    case model::Fate::Corrupt: ++st.corrupted; break;
    case model::Fate::Duplicate: ++st.duplicated; break;
    case model::Fate::Reorder: ++st.reordered; break;
    case model::Fate::Deliver: break;
  }
  return f;
}

void SimQp::wire(SimQp& from, uint64_t bytes) {
  Scheduler::current().transfer(from.hca_.route(), std::max<uint64_t>(bytes, 1));
}

void SimQp::wait_ns(double ns) {
  // qp.timeout = 0: no local ACK timer (IBA 9.7.6.1.3), the WR waits for ever; the run's
  // watchdog ends it.
  sleep_for_ns(ns > 0 ? ns : 1e15);
}

bool SimQp::wait_next_wr(double ns) {
  const double deadline = now_ns() + (ns > 0 ? ns : 1e15);  // timeout 0: no timer
  while (sq_.empty() && state_ == State::Rts && now_ns() < deadline) {
    if (!hca_.engine_wq_.wait(to_s(deadline))) break;
  }
  return !sq_.empty() && state_ == State::Rts;
}

namespace {
bool dropped(model::Fate f) { return f == model::Fate::Lose || f == model::Fate::Corrupt; }
}  // namespace

SimQp::Recovery SimQp::recover_data(uint64_t bytes, bool read_response, hca::RetryCounter& retries) {
  if (!hca_.faults_.any()) return Recovery::Delivered;
  const uint32_t mtu = hca_.ib_.mtu;
  const uint32_t n = model::ib::packets_for(bytes, mtu);
  SimQp& src = read_response ? *peer_ : *this;
  SimQp& dst = read_response ? *this : *peer_;
  const model::HcaTiming& t = hca_.timing();
  const model::HcaTiming& pt = peer_->hca_.timing();
  for (uint32_t from = 0;;) {
    // The next WR of this send queue follows at once: its first packet shows a gap at the tail.
    const bool more = !sq_.empty();
    uint32_t first = n, dups = 0;
    bool later = false;  // a packet after the first dropped one reached the receiver
    for (uint32_t k = from; k < n; ++k) {
      const model::Fate f = draw_fate(src, read_response);
      if (f == model::Fate::Duplicate) ++dups;
      if (first == n) {
        // A reordered packet is overtaken by the next one (if any follows): the receiver sees
        // a PSN beyond the expected one and discards until the retransmission (IBA 9.7.5.1.1).
        if (dropped(f) || (f == model::Fate::Reorder && (k + 1 < n || more))) first = k;
      } else if (!dropped(f)) {
        later = true;
      }
    }
    if (first < n && more) later = true;
    bool timed_out = false;
    // Nothing behind the gap yet: the next WR posted before the local ACK timer expires shows
    // it (its first packet's PSN); else the timer does.
    if (first < n && !later) {
      later = wait_next_wr(hca_.retry_.local_ack_timeout_ns());
      timed_out = !later;
    }
    if (dups > 0) {
      // Each duplicate crosses the wire once more; the responder re-ACKs it (IBA 9.7.5.1.2).
      wire(src, static_cast<uint64_t>(dups) * std::min<uint64_t>(mtu, std::max<uint64_t>(bytes, 1)));
      if (!read_response) dst.hca_.fault_stats_.packets += dups;
    }
    if (first == n) return Recovery::Delivered;
    model::FaultStats& st = src.hca_.fault_stats_;
    if (later) {
      ++st.naks;
      if (read_response)  // the requester sees the gap and asks again from that PSN
        wait_ns(t.tx_processing_ns + t.propagation_ns + pt.rx_processing_ns);
      else {  // the responder's NAK (PSN sequence error) comes back
        ++peer_->hca_.fault_stats_.packets;
        wait_ns(t.propagation_ns + pt.rx_processing_ns + pt.tx_processing_ns + pt.propagation_ns +
                t.rx_processing_ns);
      }
    } else if (timed_out) {
      ++hca_.fault_stats_.timeouts;
    }
    if (state_ != State::Rts) return Recovery::Flushed;
    if (!retries.retry()) return Recovery::RetryExceeded;
    // Go-back-N: packets first..n-1 again, through the same route.
    st.retransmitted += n - first;
    wire(src, bytes - std::min<uint64_t>(bytes, static_cast<uint64_t>(first) * mtu));
    from = first;
  }
}

SimQp::Recovery SimQp::recover_ack(uint64_t bytes, hca::RetryCounter& retries) {
  if (!hca_.faults_.any()) return Recovery::Delivered;
  const uint32_t n = model::ib::packets_for(bytes, hca_.ib_.mtu);
  for (;;) {
    if (!dropped(draw_fate(*peer_, true))) return Recovery::Delivered;
    // ACKs are cumulative (an ACK acknowledges every earlier PSN too, IBA 9.7.5.1): a WR
    // posted behind this one before the local ACK timer expires gets an ACK that covers this
    // message. Only a lost last ACK times out.
    if (wait_next_wr(hca_.retry_.local_ack_timeout_ns())) return Recovery::Delivered;
    if (state_ != State::Rts) return Recovery::Flushed;
    ++hca_.fault_stats_.timeouts;
    if (!retries.retry()) return Recovery::RetryExceeded;
    // The whole message again; the responder has it, discards the duplicates and re-ACKs.
    hca_.fault_stats_.retransmitted += n;
    for (uint32_t k = 0; k < n; ++k) draw_fate(*this, false);
    wire(*this, bytes);
  }
}

SimQp::Recovery SimQp::recover_read_request(hca::RetryCounter& retries) {
  if (!hca_.faults_.any()) return Recovery::Delivered;
  const model::HcaTiming& t = hca_.timing();
  const model::HcaTiming& pt = peer_->hca_.timing();
  for (;;) {
    if (!dropped(draw_fate(*this, false))) return Recovery::Delivered;
    if (wait_next_wr(hca_.retry_.local_ack_timeout_ns())) {  // the next request shows the gap: NAK
      ++hca_.fault_stats_.naks;
      ++peer_->hca_.fault_stats_.packets;
      wait_ns(pt.rx_processing_ns + pt.tx_processing_ns + pt.propagation_ns + t.rx_processing_ns +
              t.tx_processing_ns + t.propagation_ns);
    } else if (state_ == State::Rts) {
      ++hca_.fault_stats_.timeouts;
    }
    if (state_ != State::Rts) return Recovery::Flushed;
    if (!retries.retry()) return Recovery::RetryExceeded;
    ++hca_.fault_stats_.retransmitted;
  }
}

}  // namespace hcasim::sim
