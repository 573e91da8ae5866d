#include "sim/hca.h"

#include <fmt/format.h>

namespace hcasim::sim {

namespace s4u = simgrid::s4u;
using sdp::Wc;
using sdp::WcOpcode;
using sdp::WcStatus;

EmulatedHca::EmulatedHca(SimHost& host, s4u::Host* node, const HcaTiming& timing, Timer& timer,
                         ActivityCounter& counter, Failure& failure, int irq_core)
    : host_(host), node_(node), timing_(timing), timer_(timer), counter_(counter), failure_(failure), irq_core_(irq_core) {}

SimQp& EmulatedHca::create_qp(uint32_t max_send_wr, uint32_t max_recv_wr, uint32_t cq_entries) {
  qps_.push_back(std::make_unique<SimQp>(*this, next_qpn_++, max_send_wr, max_recv_wr, cq_entries));
  return *qps_.back();
}

void EmulatedHca::start() {
  s4u::Actor::create(host_.name() + "-hca-send", node_, [this] {
    failure_.guard(host_.name() + " HCA send engine", [this] { send_engine(); });
  })->daemonize();
  s4u::Actor::create(host_.name() + "-irq", node_, [this] {
    failure_.guard(host_.name() + " interrupt handler", [this] {
      host_.bind_current(irq_core_);
      interrupt_handler();
    });
  })->daemonize();
}

void EmulatedHca::ring_doorbell() { engine_wq_.cv->notify_all(); }

void EmulatedHca::raise_interrupt(SimQp* qp) {
  pending_irqs_.push_back(qp);
  irq_wq_.cv->notify_all();
}

void EmulatedHca::send_engine() {
  std::unique_lock<s4u::Mutex> lock(*engine_wq_.mutex);
  bool idle = true;
  size_t next = 0;
  for (;;) {
    bool did = false;
    for (size_t i = 0; i < qps_.size() && !did; ++i) {  // round robin over the send queues
      SimQp& qp = *qps_[(next + i) % qps_.size()];
      if (!qp.sq_.empty()) {
        lock.unlock();
        qp.execute_one(idle);
        lock.lock();
        did = true;
        next = (next + i + 1) % qps_.size();
      }
    }
    if (did) {
      idle = false;
      continue;
    }
    idle = true;
    ++counter_.count;
    engine_wq_.cv->wait(lock);
  }
}

void EmulatedHca::interrupt_handler() {
  std::unique_lock<s4u::Mutex> lock(*irq_wq_.mutex);
  for (;;) {
    while (pending_irqs_.empty()) {
      ++counter_.count;
      irq_wq_.cv->wait(lock);
    }
    SimQp* qp = pending_irqs_.front();
    pending_irqs_.pop_front();
    ++interrupts_;
    lock.unlock();
    host_.charge(model::Activity::Interrupt, host_.costs().interrupt_ns);
    if (qp->on_event_) qp->on_event_();
    host_.flush();
    lock.lock();
  }
}

SimQp::SimQp(EmulatedHca& hca, uint32_t qpn, uint32_t max_send_wr, uint32_t max_recv_wr, uint32_t cq_entries)
    : hca_(hca), qpn_(qpn), max_send_wr_(max_send_wr), max_recv_wr_(max_recv_wr), cq_entries_(cq_entries) {}

void SimQp::connect(SimQp& a, SimQp& b) {
  a.peer_ = &b;
  b.peer_ = &a;
  a.state_ = b.state_ = State::Rts;
}

void SimQp::set_handlers(std::function<void()> on_cqe, std::function<void()> on_event) {
  on_cqe_ = std::move(on_cqe);
  on_event_ = std::move(on_event);
}

uint32_t SimQp::reg_mr(sdp::Addr addr, uint64_t len, unsigned access) {
  if (!hca_.host().memory().contains(addr, len))
    throw sdp::VerbsError(fmt::format("reg_mr: [{:#x}, +{}) is not allocated memory", addr, len));
  mrs_.push_back({addr, len, access});
  return kDmaKey + static_cast<uint32_t>(mrs_.size());
}

bool SimQp::sge_ok(const sdp::Sge& s) const {
  if (s.lkey == kDmaKey) return hca_.host().memory().contains(s.addr, s.length);
  if (s.lkey <= kDmaKey || s.lkey - kDmaKey > mrs_.size()) return false;
  const Mr& m = mrs_[s.lkey - kDmaKey - 1];
  return s.addr >= m.addr && s.addr + s.length <= m.addr + m.len;
}

void SimQp::post_send(const sdp::SendWr& wr) {
  hca_.host().flush();
  if (state_ != State::Rts) throw sdp::VerbsError(fmt::format("post_send: QP {:#x} is not in RTS", qpn_));
  if (sq_outstanding_ >= max_send_wr_) throw sdp::VerbsError(fmt::format("post_send: QP {:#x} send queue full", qpn_));
  if (wr.opcode != sdp::WrOpcode::Send)
    throw sdp::VerbsError("post_send: only SEND is emulated in simulate mode so far");
  sq_.push_back(wr);
  ++sq_outstanding_;
  hca_.ring_doorbell();
}

void SimQp::post_recv(const sdp::RecvWr& wr) {
  hca_.host().flush();
  if (state_ == State::Error) throw sdp::VerbsError(fmt::format("post_recv: QP {:#x} is in error", qpn_));
  if (rq_.size() >= max_recv_wr_) throw sdp::VerbsError(fmt::format("post_recv: QP {:#x} receive queue full", qpn_));
  rq_.push_back(wr);
}

int SimQp::poll_cq(std::span<Wc> out) {
  hca_.host().flush();
  int n = 0;
  while (n < static_cast<int>(out.size()) && !cq_.empty()) {
    out[static_cast<size_t>(n++)] = cq_.front();
    cq_.pop_front();
  }
  return n;
}

bool SimQp::req_notify_cq() {
  hca_.host().flush();
  armed_ = true;
  return !cq_.empty();
}

void SimQp::push_cqe(const Wc& wc) {
  if (wc.opcode != WcOpcode::Recv) --sq_outstanding_;
  if (cq_.size() >= cq_entries_) {  // CQ overrun: the HCA moves the QP to error (IBA 11.4.2.1)
    to_error();
    return;
  }
  cq_.push_back(wc);
  if (on_cqe_) on_cqe_();
  if (armed_) {
    armed_ = false;
    hca_.timer().at(now_ns() + hca_.timing().interrupt_latency_ns, [this] { hca_.raise_interrupt(this); });
  }
}

void SimQp::to_error() {
  if (state_ == State::Error) return;
  state_ = State::Error;
  while (!sq_.empty()) {  // flush outstanding work with WR_FLUSH_ERR
    cq_.push_back({sq_.front().wr_id, WcStatus::WrFlushErr, WcOpcode::Send, 0, qpn_});
    sq_.pop_front();
  }
  while (!rq_.empty()) {
    cq_.push_back({rq_.front().wr_id, WcStatus::WrFlushErr, WcOpcode::Recv, 0, qpn_});
    rq_.pop_front();
  }
  if (on_cqe_) on_cqe_();
  if (armed_) {
    armed_ = false;
    hca_.timer().at(now_ns(), [this] { hca_.raise_interrupt(this); });
  }
}

bool SimQp::execute_one(bool after_idle) {
  if (sq_.empty()) return false;
  const sdp::SendWr wr = sq_.front();
  sq_.pop_front();
  const HcaTiming& t = hca_.timing();
  ActivityCounter& counter = hca_.counter_;
  if (after_idle) {  // doorbell MMIO reaches the HCA, then the WQE is fetched by a DMA read
    ++counter.count;
    s4u::this_actor::sleep_for(to_s(t.mmio_write_ns + t.dma_read_rtt_ns));
  }
  if (state_ != State::Rts) return true;  // flushed meanwhile
  for (uint8_t i = 0; i < wr.num_sge; ++i) {
    if (!sge_ok(wr.sg[i])) {
      Wc wc{wr.wr_id, WcStatus::LocProtErr, WcOpcode::Send, 0, qpn_};
      hca_.timer().at(now_ns() + t.dma_read_rtt_ns, [this, wc] {
        push_cqe(wc);
        to_error();
      });
      return true;
    }
  }
  const uint64_t bytes = wr.length();
  SimQp* peer = peer_;
  ++counter.count;
  s4u::Comm::sendto_async(hca_.node(), peer->hca_.node(), std::max<uint64_t>(bytes, 1))->wait();

  // The last byte left the bottleneck: deliver the message functionally to the responder.
  const double now = now_ns();
  const HcaTiming& pt = peer->hca_.timing();
  const double to_remote_memory = t.dma_read_rtt_ns + t.tx_processing_ns + t.propagation_ns +
                                  pt.rx_processing_ns + pt.posted_write_ns;
  const double ack_back = t.dma_read_rtt_ns + t.tx_processing_ns + 2 * t.propagation_ns +
                          pt.rx_processing_ns + t.rx_processing_ns + t.posted_write_ns;
  Wc swc{wr.wr_id, WcStatus::Success, WcOpcode::Send, 0, qpn_};
  if (peer->state_ != State::Rts || peer->rq_.empty()) {
    swc.status = peer->state_ != State::Rts ? WcStatus::RemAccessErr : WcStatus::RnrRetryExcErr;
    hca_.timer().at(now + ack_back, [this, swc] {
      push_cqe(swc);
      to_error();
    });
    return true;
  }
  sdp::RecvWr rwr = peer->rq_.front();
  peer->rq_.pop_front();
  uint64_t capacity = 0;
  for (uint8_t i = 0; i < rwr.num_sge; ++i) capacity += rwr.sg[i].length;
  bool scatter_ok = bytes <= capacity;
  for (uint8_t i = 0; i < rwr.num_sge && scatter_ok; ++i) scatter_ok = peer->sge_ok(rwr.sg[i]);
  if (!scatter_ok) {
    Wc rwc{rwr.wr_id, bytes > capacity ? WcStatus::LocLenErr : WcStatus::LocProtErr, WcOpcode::Recv, 0, peer->qpn_};
    swc.status = WcStatus::RemInvReqErr;
    hca_.timer().at(now + to_remote_memory, [peer, rwc] {
      peer->push_cqe(rwc);
      peer->to_error();
    });
    hca_.timer().at(now + ack_back, [this, swc] {
      push_cqe(swc);
      to_error();
    });
    return true;
  }
  // gather -> scatter, SGE by SGE
  uint8_t gi = 0, si = 0;
  uint64_t goff = 0, soff = 0, left = bytes;
  while (left > 0) {
    const sdp::Sge& g = wr.sg[gi];
    const sdp::Sge& s = rwr.sg[si];
    const uint64_t n = std::min<uint64_t>({g.length - goff, s.length - soff, left});
    sdp::HostMemory::copy(peer->hca_.host().memory(), s.addr + soff, hca_.host().memory(), g.addr + goff, n);
    goff += n;
    soff += n;
    left -= n;
    if (goff == g.length) ++gi, goff = 0;
    if (soff == s.length) ++si, soff = 0;
  }
  Wc rwc{rwr.wr_id, WcStatus::Success, WcOpcode::Recv, static_cast<uint32_t>(bytes), peer->qpn_};
  hca_.timer().at(now + to_remote_memory, [peer, rwc] { peer->push_cqe(rwc); });
  if (wr.signaled)
    hca_.timer().at(now + ack_back, [this, swc] { push_cqe(swc); });
  else
    --sq_outstanding_;
  return true;
}

}  // namespace hcasim::sim
