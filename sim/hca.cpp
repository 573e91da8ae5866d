#include "sim/hca.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace hcasim::sim {

using sdp::WcStatus;
using sdp::WrOpcode;

// ---- Hca ----------------------------------------------------------------------------------------

Hca::Hca(SimHost& host, const model::HcaTiming& timing, const model::PostConfig& post, const hca::DeviceLimits& limits,
         Timer& timer, Failure& failure, const model::IrqConfig& irq)
    : host_(host), timing_(timing), post_(post), limits_(limits), timer_(timer), failure_(failure), irq_(irq) {}

Hca::~Hca() = default;

uint32_t Hca::alloc_pd() { return mrs_.alloc_pd(); }

uint32_t Hca::reg_mr(uint32_t pd, sdp::Addr addr, uint64_t len, unsigned access) {
  if (!mrs_.has_pd(pd)) throw sdp::VerbsError(fmt::format("reg_mr: no PD {}", pd));
  if (!host_.memory().contains(addr, len))
    throw sdp::VerbsError(fmt::format("reg_mr: [{:#x}, +{}) is not allocated memory", addr, len));
  return mrs_.reg(pd, addr, len, access);
}

uint32_t Hca::dma_mr(uint32_t pd) { return mrs_.reg_all_memory(pd, sdp::kLocalWrite); }

Qp& Hca::create_qp(uint32_t pd, uint32_t max_send_wr, uint32_t max_recv_wr, uint32_t cq_entries, hca::QpType type) {
  if (!mrs_.has_pd(pd)) throw sdp::VerbsError(fmt::format("create_qp: no PD {}", pd));
  auto arm = std::make_shared<CqArm>();
  arm->moderator = model::EventModerator(irq_.moderation_count, irq_.moderation_period_ns);
  qps_.push_back(std::make_unique<Qp>(*this, pd, next_qpn_++, max_send_wr, max_recv_wr,
                                      std::make_shared<hca::Cq>(cq_entries), std::move(arm), type));
  qps_.back()->apply_faults();
  return *qps_.back();
}

Qp& Hca::create_qp_on_cq(uint32_t pd, uint32_t max_send_wr, uint32_t max_recv_wr, Qp& cq_of) {
  if (!mrs_.has_pd(pd)) throw sdp::VerbsError(fmt::format("create_qp: no PD {}", pd));
  if (&cq_of.hca_ != this) throw sdp::VerbsError("create_qp: the CQ belongs to another HCA");
  qps_.push_back(
      std::make_unique<Qp>(*this, pd, next_qpn_++, max_send_wr, max_recv_wr, cq_of.cq_, cq_of.arm_, hca::QpType::Rc));
  qps_.back()->apply_faults();
  return *qps_.back();
}

Srq& Hca::create_srq(uint32_t pd, uint32_t max_wr) {
  if (!mrs_.has_pd(pd)) throw sdp::VerbsError(fmt::format("create_srq: no PD {}", pd));
  if (max_wr == 0 || max_wr > limits_.max_qp_wr)
    throw sdp::VerbsError(fmt::format("create_srq: max_wr {} is not in 1..{} (hca.max_qp_wr)", max_wr, limits_.max_qp_wr));
  srqs_.push_back(std::make_unique<Srq>(*this, pd, max_wr));
  return *srqs_.back();
}

// ---- Srq ----------------------------------------------------------------------------------------

void Srq::post_recv(const sdp::RecvWr& wr) {
  hca_.host().flush();
  if (wr.num_sge > sdp::kMaxSge)
    throw sdp::VerbsError(fmt::format("post_srq_recv: {} SGEs, max {}", wr.num_sge, sdp::kMaxSge));
  if (q_.size() >= max_wr_) throw sdp::VerbsError(fmt::format("post_srq_recv: the SRQ holds its {} WRs", max_wr_));
  q_.push_back(wr);
}

bool Srq::take(sdp::RecvWr& out) {
  if (q_.empty()) return false;
  out = q_.front();
  q_.pop_front();
  return true;
}

void Hca::set_route(const model::ib::Config& ib, double bottleneck_Bps, double wire_Bps, double drain_Bps,
                    const Route& route) {
  ib_ = ib;
  bottleneck_Bps_ = bottleneck_Bps;
  wire_Bps_ = wire_Bps;
  drain_Bps_ = drain_Bps;
  route_ = &route;
}

void Hca::set_faults(const model::FaultConfig& faults, const model::RcRetry& retry, uint64_t side) {
  faults_ = faults;
  retry_ = retry;
  side_ = side;
  for (auto& q : qps_) q->apply_faults();
}

model::FaultStats Hca::fault_stats() const {
  model::FaultStats s;
  for (const auto& q : qps_) {
    if (q->req_faults_) s += q->req_faults_->stats();
    if (q->resp_faults_) s += q->resp_faults_->stats();
    s += q->core_.stats();
  }
  return s;
}

void Hca::start() {
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

namespace {

/// `port` takes `packets` packets of `per_packet_ns` each, offered at `at_ns`: returns when it
/// starts on them; adds them to `ns` and `count` when the interval is measured (non-null).
double take_packets(hca::Stage& port, double at_ns, uint64_t packets, double per_packet_ns, double* ns,
                    uint64_t* count) {
  const double service = static_cast<double>(packets) * per_packet_ns;
  if (ns != nullptr) {
    *ns += service;
    *count += packets;
  }
  return port.take(at_ns, service);
}

}  // namespace

double Hca::take_tx_port(double at_ns, uint64_t packets) {
  return take_packets(tx_port_, at_ns, packets, timing().tx_packet_ns, busy_ ? &busy_->tx_port_ns : nullptr,
                      busy_ ? &busy_->tx_packets : nullptr);
}

double Hca::take_rx_port(double at_ns, uint64_t packets) {
  return take_packets(rx_port_, at_ns, packets, timing().rx_packet_ns, busy_ ? &busy_->rx_port_ns : nullptr,
                      busy_ ? &busy_->rx_packets : nullptr);
}

void Hca::ring_doorbell(const Qp& qp) {
  const size_t slot = qp.qpn_ - kFirstQpn;
  if (doorbells_.size() <= slot / 64) doorbells_.resize(slot / 64 + 1, 0);
  doorbells_[slot / 64] |= uint64_t{1} << (slot % 64);
  engine_wq_.notify_all();
}

frontends::HcaUse HcaBusy::use() const {
  frontends::HcaUse u{engine_ns * 1e-9, wqe_wait_ns * 1e-9, trains};
  for (const auto& [qpn, q] : qp_wqe)
    if (q.first * 1e-9 > u.qp_wqe_busy_s || u.qp_wqes == 0) {
      u.qp_wqe_busy_s = q.first * 1e-9;
      u.qp_wqe_qpn = qpn;
      u.qp_wqes = q.second;
    }
  u.tx_port_busy_s = tx_port_ns * 1e-9;
  u.tx_packets = tx_packets;
  u.rx_port_busy_s = rx_port_ns * 1e-9;
  u.rx_packets = rx_packets;
  return u;
}

Qp* Hca::next_ready(size_t from, size_t& slot, double& wake_ns) {
  const size_t n = qps_.size();
  const double now = now_ns();
  // Two passes over the bit words: [from, n), then [0, from).
  for (int pass = 0; pass < 2; ++pass) {
    const size_t begin = pass == 0 ? from : 0, end = pass == 0 ? n : from;
    for (size_t w = begin / 64; w < doorbells_.size() && w * 64 < end; ++w) {
      uint64_t bits = doorbells_[w];
      if (w == begin / 64) bits &= ~uint64_t{0} << (begin % 64);
      while (bits != 0) {
        const size_t i = w * 64 + static_cast<size_t>(std::countr_zero(bits));
        if (i >= end) break;
        bits &= bits - 1;
        if (qps_[i]->core_.has_request()) {
          if (const double free = qps_[i]->wqe_unit_.free_at_ns(); free > now) {
            wake_ns = std::min(wake_ns, free);  // its unit is on its last WQE: stays marked
            continue;
          }
          slot = i;
          return qps_[i].get();
        }
        doorbells_[w] &= ~(uint64_t{1} << (i % 64));  // idle: its next request rings again
      }
    }
  }
  return nullptr;
}

void Hca::raise_interrupt(Qp* qp) {
  pending_irqs_.push_back(qp);
  irq_wq_.notify_all();
}

void Hca::send_engine() {
  bool idle = true;
  size_t next = 0;
  for (;;) {
    size_t slot = 0;
    double wake_ns = std::numeric_limits<double>::infinity();
    Qp* qp = qps_.empty() ? nullptr : next_ready(next, slot, wake_ns);  // round robin over send queues
    if (qp != nullptr) next = (slot + 1) % qps_.size();
    if (qp == nullptr) {
      // Every QP with requests waits for its WQE processing unit: the engine goes on when the
      // first is free, or at a doorbell. Otherwise the send queues are empty.
      if (std::isinf(wake_ns)) idle = true;
      engine_wq_.wait(std::isinf(wake_ns) ? wake_ns : to_s(wake_ns));
      continue;
    }
    if (busy_ != nullptr) [[unlikely]] {
      const double t0 = now_ns();
      qp->execute_one(idle);
      if (busy_ != nullptr) {  // measure(nullptr) may have come meanwhile
        busy_->engine_ns += now_ns() - t0;
        ++busy_->trains;
      }
    } else {
      qp->execute_one(idle);
    }
    idle = false;
  }
}

Qp* Hca::take_interrupt() {
  if (pending_irqs_.empty()) return nullptr;
  Qp* qp = pending_irqs_.front();
  pending_irqs_.pop_front();
  ++interrupts_;
  host_.charge(model::Activity::Interrupt, irq_.handler_ns(host_.costs().interrupt_ns));
  return qp;
}

void Hca::interrupt_handler() {
  yield_rounds(2);
  for (;;) {
    while (pending_irqs_.empty()) {
      irq_wq_.wait();
    }
    yield_rounds(1);
    Qp* qp = take_interrupt();
    if (qp == nullptr) continue;  // taken meanwhile by a bottom half on this CPU
    if (qp->on_event_) qp->on_event_();
    host_.flush();
    yield_rounds(2);
  }
}

// ---- Qp: verbs ------------------------------------------------------------------------------------

Qp::Qp(Hca& hca, uint32_t pd, uint32_t qpn, uint32_t max_send_wr, uint32_t max_recv_wr, std::shared_ptr<hca::Cq> cq,
       std::shared_ptr<CqArm> arm, hca::QpType type)
    : hca_(hca),
      pd_(pd),
      qpn_(qpn),
      cq_(std::move(cq)),
      core_(type, qpn, pd, max_send_wr, max_recv_wr, hca.limits(), *this),
      arm_(std::move(arm)) {}

void Qp::apply_faults() {
  req_faults_.emplace(hca_.faults_, hca_.fault_stream(qpn_, false));
  resp_faults_.emplace(hca_.faults_, hca_.fault_stream(qpn_, true));
  core_.set_retry(hca_.retry_.timeout, hca_.retry_.retry_cnt);
  core_.set_rnr_retry(hca_.retry_.rnr_retry);
}

void Qp::modify(State next) {
  if (next == State::Rtr && peer_ == nullptr)  // RTR needs the remote QP (the CM's REP)
    throw sdp::VerbsError(fmt::format("modify_qp: QP {:#x} to RTR without a remote QP", qpn_));
  const State cur = core_.state();
  hca::check_transition(qpn_, cur, next);
  if (core_.modify_state(next) != 0)
    throw sdp::VerbsError(fmt::format("modify_qp: QP {:#x} to {}: an attribute out of range", qpn_, hca::qp_state_name(next)));
  if (next == State::Reset) {  // IBA 10.3.1: RESET empties the queues, and the CQ of this QP's CQEs
    clean_cq();
    posts_.clear();
  }
}

int Qp::modify(const hca::QpAttr& a, unsigned mask) {
  const State cur = core_.state();
  const State next = (mask & hca::attr::kState) != 0 ? a.qp_state : cur;
  if (cur == State::Init && next == State::Rtr && peer_ == nullptr) return EINVAL;  // no remote QP to go to
  if (const int e = core_.modify(a, mask); e != 0) return e;
  if (next == State::Reset) {  // IBA 10.3.1: RESET empties the queues, and the CQ of this QP's CQEs
    clean_cq();
    posts_.clear();
  }
  return 0;
}

void Qp::pair(Qp& a, Qp& b) {
  a.peer_ = &b;
  b.peer_ = &a;
}

void Qp::connect(Qp& a, Qp& b, uint8_t rd_atomic) {
  using namespace hca::attr;
  pair(a, b);
  for (Qp* q : {&a, &b}) {
    hca::QpAttr x = q->core_.attr();
    x.qp_state = State::Init;
    x.qp_access_flags = q->core_.type() == hca::QpType::Uc ? sdp::kRemoteWrite  // UC: no READ, no atomics
                                                            : sdp::kRemoteWrite | sdp::kRemoteRead | hca::kRemoteAtomic;
    if (q->core_.modify(x, kState | kPkeyIndex | kPort | kAccessFlags) != 0)
      hca::check_transition(q->qpn_, q->core_.state(), State::Init);
  }
  if (a.core_.type() == hca::QpType::Uc) {
    // UC (uc_pingpong.c pp_connect_ctx): RTR with the address, path MTU, remote QPN and PSN; RTS
    // with the send PSN. No ACKs, so no retry attributes, and no RDMA READ or atomics.
    for (Qp* q : {&a, &b}) {
      hca::QpAttr x = q->core_.attr();
      x.qp_state = State::Rtr;
      x.dlid = 1;
      x.path_mtu = q->hca_.ib_.mtu;
      x.dest_qp_num = q->peer_->qpn_;
      x.rq_psn = 0;
      if (q->core_.modify(x, kState | kAv | kPathMtu | kDestQpn | kRqPsn) != 0)
        throw sdp::VerbsError(fmt::format("connect: UC QP {:#x} to RTR: path MTU {} B", q->qpn_, x.path_mtu));
      x.qp_state = State::Rts;
      x.sq_psn = 0;
      if (q->core_.modify(x, kState | kSqPsn) != 0)
        throw sdp::VerbsError(fmt::format("connect: UC QP {:#x} to RTS", q->qpn_));
    }
    return;
  }
  for (Qp* q : {&a, &b}) {
    const model::RcRetry& r = q->hca_.retry_;
    hca::QpAttr x = q->core_.attr();
    x.qp_state = State::Rtr;
    x.dlid = 1;  // the bed's one link names the peer
    x.path_mtu = q->hca_.ib_.mtu;
    x.dest_qp_num = q->peer_->qpn_;
    x.rq_psn = 0;
    x.max_dest_rd_atomic = rd_atomic != 0 ? rd_atomic : q->hca_.limits_.max_qp_rd_atom;
    if (q->core_.modify(x, kState | kAv | kPathMtu | kDestQpn | kRqPsn | kMaxDestRdAtomic | kMinRnrTimer) != 0)
      throw sdp::VerbsError(fmt::format("connect: QP {:#x} to RTR: path MTU {} B", q->qpn_, x.path_mtu));
    x.qp_state = State::Rts;
    x.sq_psn = 0;
    x.timeout = r.timeout;
    x.retry_cnt = r.retry_cnt;
    x.rnr_retry = q->core_.attr().rnr_retry;
    x.max_rd_atomic = rd_atomic != 0 ? rd_atomic : q->hca_.limits_.max_qp_rd_atom;
    if (q->core_.modify(x, kState | kSqPsn | kTimeout | kRetryCnt | kRnrRetry | kMaxQpRdAtomic) != 0)
      throw sdp::VerbsError(fmt::format("connect: QP {:#x} to RTS: a retry attribute out of range", q->qpn_));
  }
}

void Qp::connect_ud(Qp& a, Qp& b, uint32_t qkey) {
  using namespace hca::attr;
  a.peer_ = &b;
  b.peer_ = &a;
  for (Qp* q : {&a, &b}) {
    hca::QpAttr x = q->core_.attr();
    x.qkey = qkey;
    x.qp_state = State::Init;
    if (q->core_.modify(x, kState | kPkeyIndex | kPort | kQkey) != 0)
      hca::check_transition(q->qpn_, q->core_.state(), State::Init);
    x.qp_state = State::Rtr;
    if (q->core_.modify(x, kState) != 0) hca::check_transition(q->qpn_, q->core_.state(), State::Rtr);
    x.qp_state = State::Rts;
    x.sq_psn = 0;
    if (q->core_.modify(x, kState | kSqPsn) != 0) hca::check_transition(q->qpn_, q->core_.state(), State::Rts);
  }
}

void Qp::set_srq(Srq& srq) {
  if (core_.state() != State::Reset)
    throw sdp::VerbsError(fmt::format("set_srq: QP {:#x} is in {}, not RESET", qpn_, hca::qp_state_name(core_.state())));
  if (&srq.hca() != &hca_ || srq.pd() != pd_)
    throw sdp::VerbsError(fmt::format("set_srq: QP {:#x}: the SRQ is of another HCA or PD", qpn_));
  srq_ = &srq;
  core_.set_srq(true);
}

void Qp::set_handlers(std::function<void()> on_cqe, std::function<void()> on_event) {
  on_cqe_ = std::move(on_cqe);
  on_event_ = std::move(on_event);
}

void Qp::set_rnr(uint8_t rnr_retry, uint8_t min_rnr_timer) {
  core_.set_rnr_retry(rnr_retry);  // throws VerbsError when > 7
  hca::QpAttr x = core_.attr();
  x.min_rnr_timer = min_rnr_timer;
  if (core_.modify(x, hca::attr::kMinRnrTimer) != 0)
    throw sdp::VerbsError(fmt::format("modify_qp: min_rnr_timer {} > 31", min_rnr_timer));
}

void Qp::set_write_handler(std::function<void(sdp::Addr, uint64_t)> on_write) { on_write_ = std::move(on_write); }

namespace {
model::mlx4::WqeShape wqe_shape(const sdp::SendWr& wr, hca::QpType type) {
  model::mlx4::WqeShape w;
  w.ud = type == hca::QpType::Ud;
  w.opcode = wr.opcode == WrOpcode::Send        ? model::mlx4::Opcode::Send
             : wr.opcode == WrOpcode::RdmaWrite ? model::mlx4::Opcode::RdmaWrite
             : wr.opcode == WrOpcode::RdmaRead  ? model::mlx4::Opcode::RdmaRead
                                                : model::mlx4::Opcode::Atomic;
  w.num_sge = wr.num_sge;
  w.inline_data = wr.inline_data;
  w.inline_bytes = wr.inline_data ? static_cast<uint32_t>(wr.length()) : 0;
  return w;
}

/// Copies `len` bytes from `src`'s buffers at offset src.offset + off into `to` at `dst`.
void copy_from(sdp::HostMemory& to, sdp::Addr dst, const SimPayload& src, uint64_t off, uint64_t len) {
  uint64_t pos = 0, done = 0;
  const uint64_t start = src.offset + off;
  for (uint8_t i = 0; i < src.num_sge && done < len; ++i) {
    const sdp::Sge& g = src.sg[i];
    if (pos + g.length > start + done) {
      const uint64_t in = start + done - pos;
      const uint64_t n = std::min<uint64_t>(g.length - in, len - done);
      sdp::HostMemory::copy(to, dst + done, *src.mem, g.addr + in, n);
      done += n;
    }
    pos += g.length;
  }
}
}  // namespace

uint32_t Qp::reg_mr(sdp::Addr addr, uint64_t len, unsigned access) { return hca_.reg_mr(pd_, addr, len, access); }

uint32_t Qp::dma_mr() { return hca_.dma_mr(pd_); }

const model::PostTiming& Qp::post_timing_of(const model::mlx4::WqeShape& s) {
  PostMemo& m = post_memo_;
  if (!m.valid || m.shape.opcode != s.opcode || m.shape.num_sge != s.num_sge || m.shape.inline_data != s.inline_data ||
      m.shape.inline_bytes != s.inline_bytes || m.shape.ud != s.ud) {
    m.timing = model::post_timing(hca_.post_config(), s);
    m.shape = s;
    m.valid = true;
  }
  return m.timing;
}

hca::PostCheck Qp::post_checked(hca::SendWqe& w) {
  hca_.host().flush();  // the WQE is posted when the CPU gets here
  if (core_.type() == hca::QpType::Ud && peer_ != nullptr) {  // the address handle: the bed's other port
    w.x.ud_dlid = 1;
    w.x.ud_qpn = peer_->qpn_;
  }
  const uint64_t seq = core_.next_seq();
  posting_ = true;  // the doorbell rings once the WQE's timing is kept (kick)
  const hca::PostCheck c = core_.post_send(w);
  posting_ = false;
  if (c.post != hca::Post::Accept) [[unlikely]]
    return c;  // refused, or flushed: its completion is written
  // The WQE is in the send queue; the MMIO that hands it to the HCA costs the CPU its stores
  // (charged now, slept off at the caller's next visible step) and reaches the HCA later.
  const model::PostTiming& t = post_timing_of(wqe_shape(w.wr, core_.type()));
  hca_.host().charge(model::Activity::Post, t.cpu_ns);
  ++(t.blueflame ? hca_.blueflame_posts_ : hca_.doorbell_posts_);
  posts_.push_back({seq, t.blueflame, now_ns() + t.wqe_at_hca_ns, t, false});
  hca_.ring_doorbell(*this);
  if (hca_.trace_ != nullptr) [[unlikely]] {
    // The call began with the WQE build its caller charged (cpu.user_post) and ends with the stores.
    static constexpr const char* kOp[] = {"SEND", "RDMA WRITE", "RDMA READ", "CMP_AND_SWAP", "FETCH_AND_ADD"};
    uint64_t bytes = 0;
    for (uint8_t i = 0; i < w.wr.num_sge; ++i) bytes += w.wr.sg[i].length;
    hca_.trace_->work_request(hca_.host().id(), qpn_, peer_ != nullptr ? peer_->qpn_ : 0, w.wr.wr_id,
                              kOp[static_cast<size_t>(w.wr.opcode)], bytes, w.wr.signaled,
                              std::max(0.0, now_ns() - hca_.host().costs().user_post_ns), now_ns() + t.cpu_ns);
  }
  return c;
}

void Qp::post_send(const sdp::SendWr& wr) {
  hca::SendWqe w;
  w.wr = wr;
  // An sdp::SendWr names no Q_Key: a UD one goes with the peer's (the Q_Key both sides share).
  if (core_.type() == hca::QpType::Ud && peer_ != nullptr) w.x.ud_qkey = peer_->core_.attr().qkey;
  const hca::PostCheck c = post_checked(w);
  if (c.post == hca::Post::Refuse) [[unlikely]] {
    const hca::SendLimits lim{core_.max_send_wr(), core_.limits().max_inline_data};
    throw sdp::VerbsError(hca::post_error_text("post_send", qpn_, core_.state(), c.error, &wr, &lim));
  }
}

int Qp::post(const hca::SendWqe& wqe) {
  hca::SendWqe w = wqe;
  const hca::PostCheck c = post_checked(w);
  return c.post == hca::Post::Refuse ? hca::post_errno(c.error) : 0;
}

void Qp::post_recv(const sdp::RecvWr& wr) {
  hca_.host().flush();
  const hca::PostCheck c = core_.post_recv(wr);
  if (c.post == hca::Post::Refuse) [[unlikely]]
    throw sdp::VerbsError(hca::post_error_text("post_recv", qpn_, core_.state(), c.error, nullptr, nullptr));
}

void Qp::clean_cq() {
  // libmlx4's __mlx4_cq_clean (rdma-core providers/mlx4/cq.c), which mlx4_modify_qp to RESET
  // and mlx4_destroy_qp call: this QP's CQEs go, the other QPs' stay in their order.
  const uint32_t qpn = qpn_;
  cq_->remove_if([qpn](const sdp::Wc& w) { return w.qp_num == qpn; });
}

int Qp::poll_cq(std::span<sdp::Wc> out) {
  hca_.host().flush();
  const int n = cq_->poll(out);
  if (hca_.trace_ != nullptr && n > 0) [[unlikely]]  // each CQE's handling: cpu.user_poll_cq, charged by the caller
    hca_.trace_->completions(hca_.host().id(), out.first(static_cast<size_t>(n)), now_ns(),
                             now_ns() + n * hca_.host().costs().user_poll_cq_ns);
  return n;
}

bool Qp::req_notify_cq() {
  hca_.host().flush();
  arm_->armed = true;
  return !cq_->empty();
}

void Qp::separate_send_cq_events() {
  send_arm_ = std::make_unique<CqArm>();
  send_arm_->moderator = model::EventModerator(hca_.irq_.moderation_count, hca_.irq_.moderation_period_ns);
}

bool Qp::req_notify_send_cq() {
  if (!send_arm_) throw std::logic_error("req_notify_send_cq without separate_send_cq_events");
  hca_.host().flush();
  send_arm_->armed = true;
  return !cq_->empty();
}

bool Qp::take_event_from_send_cq() {
  if (event_sides_.empty()) return false;
  const bool send = event_sides_.front();
  event_sides_.pop_front();
  return send;
}

CqArm& Qp::arm_of(const sdp::Wc& wc) {
  const bool send = wc.opcode != sdp::WcOpcode::Recv;
  return send && send_arm_ ? *send_arm_ : *arm_;
}

// ---- Qp: the core's backend --------------------------------------------------------------------

void Qp::write(sdp::Addr dst, uint64_t len, const void* payload, uint64_t offset) {
  const SimPayload& src = *static_cast<const SimPayload*>(payload);
  if (landed_at_ns_ > 0) {
    // An RDMA WRITE's payload becomes visible in memory with the last posted write; a CPU
    // polling it (perftest's latency loop) is told when the message's last packet lands (with
    // faults a message arrives as several trains, each written on its own).
    hca_.timer().at(landed_at_ns_, [this, dst, len, src, offset, ends = landed_ends_message_] {
      copy_from(hca_.host().memory(), dst, src, offset, len);
      if (ends && on_write_) on_write_(dst, len);
    });
    return;
  }
  copy_from(hca_.host().memory(), dst, src, offset, len);
}

void Qp::store(sdp::Addr dst, const void* src, uint64_t len) {
  hca_.host().memory().write_bytes(dst, static_cast<const uint8_t*>(src), len);
}

uint64_t Qp::atomic(sdp::Addr addr, bool compare_swap, uint64_t compare_add, uint64_t swap) {
  uint64_t v = 0;
  hca_.host().memory().read_bytes(addr, reinterpret_cast<uint8_t*>(&v), 8);
  const uint64_t orig = v;
  v = compare_swap ? (v == compare_add ? swap : v) : v + compare_add;
  hca_.host().memory().write_bytes(addr, reinterpret_cast<const uint8_t*>(&v), 8);
  return orig;
}

bool Qp::complete(const hca::Cqe& c, bool) {
  if (defer_cqes_) {
    deferred_.push_back(c);
    return true;
  }
  if (cqe_at_ns_ > now_ns()) {
    // Visible when the HCA's pipeline has written it (the latency of the step that made it).
    hca_.timer().at(cqe_at_ns_, [this, c] {
      if (!write_cqe(c, true)) core_.to_error("CQ overrun");
    });
    return true;
  }
  return write_cqe(c, c.wc.status != WcStatus::WrFlushErr || core_.state() != State::Error);
}

bool Qp::write_cqe(const hca::Cqe& c, bool notify) {
  // A CQE made visible later (cqe_at_ns_) of a QP gone to RESET meanwhile goes with its QP.
  if (core_.state() == State::Reset) [[unlikely]] return true;
  if (!cq_->push(c.wc)) [[unlikely]]
    return false;  // CQ overrun (hca/cq.h): nothing written, the core moves the QP to ERROR
  if (!notify) return true;
  if (on_cqe_) on_cqe_();
  if (CqArm& arm = arm_of(c.wc); arm.armed) moderate_event(arm);
  return true;
}

void Qp::kick() {
  // Requests wake the send engine (a doorbell; a post rings it itself, after it kept the WQE's
  // timing); responses leave with the step that made them.
  if (!posting_ && core_.has_request()) hca_.ring_doorbell(*this);
}

void Qp::ack_timer(bool run) {
  const double ns = run ? hca::local_ack_timeout_ns(core_.attr().timeout) : 0;
  ack_deadline_ns_ = ns > 0 ? now_ns() + ns : 0;  // timeout 0: no timer, the WR waits for ever
  if (ack_deadline_ns_ == 0 || ack_event_) return;
  ack_event_ = true;
  // One event at a time: a restart only moves the deadline, and the event, when due, waits again
  // for a deadline that moved.
  struct Fire {
    Qp* q;
    void operator()() const {
      q->ack_event_ = false;
      if (q->ack_deadline_ns_ == 0) return;
      if (q->ack_deadline_ns_ > now_ns()) {
        q->ack_event_ = true;
        q->hca_.timer().at(q->ack_deadline_ns_, Fire{q});
        return;
      }
      q->ack_deadline_ns_ = 0;
      q->core_.ack_timeout();
    }
  };
  hca_.timer().at(ack_deadline_ns_, Fire{this});
}

void Qp::rnr_timer(double ns) {
  const uint64_t gen = ++rnr_gen_;
  hca_.timer().at(now_ns() + ns, [this, gen] {
    if (gen == rnr_gen_) core_.rnr_timeout();
  });
}

void Qp::on_error(const std::string&) {
  ++rnr_gen_;
  if (on_cqe_) on_cqe_();
  if (arm_->armed) fire_event(*arm_, 0);
  if (send_arm_ && send_arm_->armed) fire_event(*send_arm_, 0);
}

void Qp::moderate_event(CqArm& arm) {
  model::EventModerator& m = arm.moderator;
  switch (m.on_cqe(now_ns())) {
    case model::EventModerator::Decision::Fire:
      fire_event(arm, hca_.timing().interrupt_latency_ns);
      break;
    case model::EventModerator::Decision::Wait: {
      const uint64_t w = m.window();
      hca_.timer().at(m.deadline_ns(), [this, &arm, w] {
        if (arm.armed && arm.moderator.on_deadline(w)) fire_event(arm, hca_.timing().interrupt_latency_ns);
      });
      break;
    }
    case model::EventModerator::Decision::Pending:
      break;
  }
}

void Qp::fire_event(CqArm& arm, double delay_ns) {
  // EQE + interrupt after the CQE (mlx4/mthca: one event per arming).
  arm.armed = false;
  arm.moderator.reset();
  const bool send_side = &arm == send_arm_.get();
  hca_.timer().at(now_ns() + delay_ns, [this, send_side] {
    if (send_arm_) event_sides_.push_back(send_side);
    hca_.raise_interrupt(this);
  });
}

}  // namespace hcasim::sim
