// The simulated HCA's send engine (sim/hca.h): each train of a QP's requests over the route, the
// responder's answers and the RDMA READ and atomic round trips, timed by model/'s latencies.
#include "sim/hca.h"

#include <algorithm>
#include <cmath>

namespace hcasim::sim {

void Qp::transfer_first(const hca::Packet& p, const PostInfo& pi) {
  // One communication over the route, sized so that alone it lasts the longer of its stream
  // time (bytes / bottleneck) and its busiest link's time with every header counted.
  const uint64_t bytes = p.payload_len;
  // When the engine waited for the WQE, its MMIO and fetch bytes crossed the link before it
  // started (post_timing counts them).
  const bool send = hca::op_kind(p.op) == hca::OpKind::Send, with_post = !pi.waited;
  WireMemo& m = wire_memo_;
  if (!m.valid || m.bytes != bytes || m.inline_data != p.inline_data || m.send != send || m.with_post != with_post ||
      m.blueflame != pi.post.blueflame || m.wqe_bytes != pi.post.wqe_bytes || m.mmio_bus_ns != pi.post.mmio.bus_ns) {
    const model::MessageWire w = model::message_wire(hca_.post_config().bus, hca_.ib_, peer_->hca_.post_config().bus,
                                                     pi.post, p.inline_data, bytes, send, with_post);
    const double link_ns = model::message_link_time_ns(hca_.ib_, w);
    const double size = std::max(static_cast<double>(std::max<uint64_t>(bytes, 1)), link_ns * 1e-9 * hca_.bottleneck_Bps_);
    m = {true, p.inline_data, send, with_post, pi.post.blueflame, bytes, pi.post.wqe_bytes, pi.post.mmio.bus_ns,
         static_cast<uint64_t>(std::ceil(size))};
  }
  Scheduler::current().transfer(hca_.route(), m.size);
}

void Qp::wire(Qp& from, uint64_t bytes) {
  Scheduler::current().transfer(from.hca_.route(), std::max<uint64_t>(bytes, 1));
}

void Qp::execute_one(bool after_idle) {
  uint64_t seq = 0;
  bool fresh = false;
  if (!core_.peek_request(seq, fresh)) return;
  PostInfo* pi = nullptr;
  if (fresh) {
    while (!posts_.empty() && posts_.front().seq < seq) posts_.pop_front();
    if (!posts_.empty() && posts_.front().seq == seq) pi = &posts_.front();
  }
  // A BlueFlame WQE is usable when its stores have arrived. After a doorbell on an idle queue
  // the HCA waits for the doorbell, then fetches the WQE; a busy queue prefetches WQEs while
  // the previous message streams, which hides both.
  if (pi != nullptr && (pi->blueflame || after_idle) && pi->wqe_at_hca_ns > now_ns()) {
    if (hca_.busy_ != nullptr) hca_.busy_->wqe_wait_ns += pi->wqe_at_hca_ns - now_ns();
    if (hca_.trace_ != nullptr) [[unlikely]]
      hca_.trace_->engine(hca_.host().id(), pi->blueflame ? "WQE wait: BlueFlame copy" : "WQE wait: doorbell and WQE fetch",
                          now_ns(), pi->wqe_at_hca_ns, qpn_, 0);
    sleep_until_s(to_s(pi->wqe_at_hca_ns));
    pi->waited = true;
    uint64_t again = 0;
    bool still = false;
    if (!core_.peek_request(again, still) || again != seq || !still) return;  // flushed or rewound meanwhile
  }
  // A WQE that fails its local checks completes when the HCA has read it: after the gather's
  // DMA read for a SEND or WRITE; at once for an RDMA READ, whose local SGEs are written later.
  const hca::SendWqe* w = core_.wqe(seq);
  cqe_at_ns_ = now_ns() + (w != nullptr && !w->rd_atomic() ? hca_.timing().dma_read_rtt_ns : 0);
  hca::Packet p;
  // A UD or UC send completes as its train leaves (Requester::next retires it with the train, no
  // ACK to wait for: IBA 9.8.2, 9.8.3): its CQE waits for the train's transfer below; a local
  // error's does not.
  defer_cqes_ = core_.type() != hca::QpType::Rc;
  const bool got = core_.next_request(UINT32_MAX, p);
  defer_cqes_ = false;
  if (!got) flush_deferred(cqe_at_ns_);  // a local error: when the HCA has read the WQE
  cqe_at_ns_ = 0;
  if (!got) {
    if (pi != nullptr) posts_.pop_front();
    return;
  }
  const hca::OpKind k = hca::op_kind(p.op);
  const double taken = now_ns();  // the train's WQE is the HCA's from here
  // The QP's processing unit works on this WQE (next_ready took the QP only with its unit free):
  // the QP's next WQE starts hca.qp_wqe_time later at the earliest, while this one's packets go.
  const model::HcaTiming& t = hca_.timing();
  wqe_unit_.take(taken, t.qp_wqe_ns);
  if (hca_.busy_ != nullptr) {
    auto& [ns, wqes] = hca_.busy_->qp_wqe[qpn_];
    ns += t.qp_wqe_ns;
    ++wqes;
  }
  if (k == hca::OpKind::ReadRequest || k == hca::OpKind::CompareSwap || k == hca::OpKind::FetchAdd) {
    if (pi != nullptr) posts_.pop_front();
    execute_read(p);
    if (hca_.trace_ != nullptr) [[unlikely]]
      hca_.trace_->engine(hca_.host().id(), k == hca::OpKind::ReadRequest ? "RDMA READ" : "atomic", taken, now_ns(), qpn_,
                          p.payload_len);
    return;
  }
  const bool first = pi != nullptr;
  if (pi != nullptr) {
    const PostInfo info = *pi;
    posts_.pop_front();
    transfer_first(p, info);
  } else {
    wire(*this, p.payload_len);  // go-back-N: the packets again, through the same route
  }
  deliver(p);
  if (hca_.trace_ != nullptr) [[unlikely]]
    hca_.trace_->engine(hca_.host().id(),
                        !first ? "retransmission"
                        : k == hca::OpKind::Write ? "RDMA WRITE"
                                                  : "SEND",
                        taken, now_ns(), qpn_, p.payload_len);
  // The datagram's (UC: the message's) last byte has left the bottleneck: its send CQE follows
  // with the posted write.
  flush_deferred(now_ns() + t.posted_write_ns);
  // The port's transmit scheduler took each packet for hca.tx_packet_time: a train of short
  // packets holds the engine for that long when the route is faster.
  const uint64_t packets = core_.packets_of(p.payload_len);
  const double port_done = hca_.take_tx_port(taken, packets) + static_cast<double>(packets) * t.tx_packet_ns;
  if (port_done > now_ns()) sleep_until_s(to_s(port_done));
}

void Qp::flush_deferred(double at_ns) {
  if (deferred_.empty()) return;
  const double keep = cqe_at_ns_;
  cqe_at_ns_ = at_ns;
  std::vector<hca::Cqe> cqes;
  cqes.swap(deferred_);
  for (const hca::Cqe& c : cqes)
    if (!complete(c, false)) core_.to_error("CQ overrun");
  cqe_at_ns_ = keep;
}

void Qp::deliver(const hca::Packet& p) {
  Qp* peer = peer_;
  const model::HcaTiming& t = hca_.timing();
  const model::HcaTiming& pt = peer->hca_.timing();
  const uint64_t bytes = p.payload_len;
  // The last byte left the bottleneck: the train reaches the responder. Its receive CQE and, for
  // an RDMA WRITE, its data are visible after the pipeline's tail and the responder's packet
  // store (model::receive_store_ns); its ACK, sent once the last packet has passed its checks,
  // arrives back later and does not wait for the stored packet to drain.
  // The responder's port takes the train's packets one at a time for hca.rx_packet_time each
  // (checks, the receive WQE, the scatter): a train that finds it busy waits, and so do its
  // data, CQE and ACK.
  const double now = peer->hca_.take_rx_port(now_ns(), core_.packets_of(bytes));
  const double recv_done =
      now + model::receive_completion_latency_ns(t, pt, p.inline_data, bytes) + hca_.peer_store_ns(bytes);
  const double send_done = now + model::send_completion_latency_ns(t, pt, p.inline_data, bytes);
  SimPayload src{&hca_.host().memory(), p.sg, p.num_sge, p.msg_offset};
  const uint64_t dups = req_faults_->stats().duplicated;
  auto arrive = [&](const hca::Packet& sub, bool corrupted, const SimPayload& h, uint64_t skip) {
    peer->request_arrives(sub, corrupted, h, skip, recv_done);
  };
  req_faults_->transmit(p, src, hca_.ib_.mtu, arrive);
  // A reordered packet waits for the next one on the wire; with nothing queued behind it, it
  // goes after this train at once (the emulator holds it hca::kReorderHoldNs; the simulated
  // train has no packet-level time to wait in).
  if (req_faults_->holding() && !core_.has_request()) req_faults_->release(arrive);
  // Each duplicate crosses the wire once more (the responder re-ACKs it, IBA 9.7.5.1.2).
  if (const uint64_t d = req_faults_->stats().duplicated - dups; d > 0)
    wire(*this, d * std::min<uint64_t>(hca_.ib_.mtu, std::max<uint64_t>(bytes, 1)));
  // A NAK leaves the responder once it has seen the train: propagation, the responder's receive
  // and transmit processing, propagation back, the requester's receive processing.
  const double nak_at = now + t.propagation_ns + pt.rx_processing_ns + pt.tx_processing_ns + pt.propagation_ns +
                        t.rx_processing_ns;
  peer->send_responses(*this, send_done, nak_at);
  // Link-level flow control (IBA 7.9): the responder's receive buffer takes no more than this
  // train while its port is behind, so the sending port waits until it starts on it.
  if (now > now_ns()) sleep_until_s(to_s(now));
}

void Qp::response_arrives(Qp& to, const hca::Packet& sub, bool corrupted, const SimPayload& h, uint64_t skip,
                          double ack_at_ns, double nak_at_ns) {
  if (corrupted) {
    ++to.icrc_drops_;  // IBA 7.8.1
    return;
  }
  const hca::OpKind k = hca::op_kind(sub.op);
  if (k == hca::OpKind::ReadResponse || k == hca::OpKind::AtomicAck) {
    // Its completion is visible after the responder's read round trip and packet build, the
    // propagation, the requester's receive processing and packet store, and its posted write of
    // data and CQE.
    SimPayload from = h;
    from.offset += skip;
    to.cqe_at_ns_ = std::max(now_ns() + model::receive_completion_latency_ns(hca_.timing(), to.hca_.timing()) +
                                 hca_.peer_store_ns(sub.payload_len),
                             to.rsp_visible_ns_);  // ordered DMA writes, as request_arrives
    to.rsp_visible_ns_ = to.cqe_at_ns_;
    to.core_.receive(sub, &from);
    to.cqe_at_ns_ = 0;
    return;
  }
  const InFlight f{sub.op, sub.psn, sub.syndrome, sub.msn, sub.orig};
  const bool nak = hca::ack_kind(sub.syndrome) != hca::AckKind::Ack;
  hca_.timer().at(nak ? nak_at_ns : ack_at_ns, [&to, f] {
    hca::Packet a;
    a.op = a.last_op = f.op;
    a.psn = f.psn;
    a.syndrome = f.syndrome;
    a.msn = f.msn;
    a.orig = f.orig;
    a.dest_qpn = to.qpn_;
    to.core_.receive(a, nullptr);
  });
}

void Qp::request_arrives(const hca::Packet& sub, bool corrupted, const SimPayload& h, uint64_t skip,
                         double recv_done_ns) {
  if (corrupted) {
    ++icrc_drops_;  // IBA 7.8.1: dropped at the receiver's ICRC check
    return;
  }
  SimPayload from = h;
  from.offset += skip;
  const hca::OpKind kind = hca::op_kind(sub.op);
  const bool lands = kind == hca::OpKind::Write;
  // The responder's DMA writes are ordered (PCIe posted writes): a message that was stored for a
  // shorter time is not in memory before the one ahead of it. An RDMA READ request or an atomic
  // writes nothing into this host's memory on arrival (an atomic's write is the atomic unit's,
  // execute_read), so it does not move the point the next write is ordered behind.
  recv_done_ns = std::max(recv_done_ns, rx_visible_ns_);
  if (kind == hca::OpKind::Send || kind == hca::OpKind::Write) rx_visible_ns_ = recv_done_ns;
  cqe_at_ns_ = recv_done_ns;
  landed_at_ns_ = lands ? recv_done_ns : 0;
  landed_ends_message_ = lands && hca::op_ends(sub.last_op);
  core_.receive(sub, &from);
  cqe_at_ns_ = 0;
  landed_at_ns_ = 0;
  landed_ends_message_ = false;
}

void Qp::send_responses(Qp& to, double ack_at_ns, double nak_at_ns) {
  auto arrive = [&](const hca::Packet& sub, bool corrupted, const SimPayload& h, uint64_t skip) {
    response_arrives(to, sub, corrupted, h, skip, ack_at_ns, nak_at_ns);
  };
  hca::Packet r;
  while (core_.next_response(UINT32_MAX, r)) resp_faults_->transmit(r, SimPayload{}, hca_.ib_.mtu, arrive);
  if (resp_faults_->holding()) resp_faults_->release(arrive);  // nothing queued behind it
}

void Qp::execute_read(const hca::Packet& p) {
  Qp* peer = peer_;
  const model::HcaTiming& t = hca_.timing();
  const model::HcaTiming& pt = peer->hca_.timing();
  // The request, one packet, leaves when the port's transmit scheduler takes it and travels to
  // the responder, whose port's receive processing takes it; then the responder starts its DMA
  // read of the data.
  if (const double start = hca_.take_tx_port(now_ns(), 1); start > now_ns()) sleep_until_s(to_s(start));
  sleep_for_ns(t.tx_processing_ns + t.propagation_ns + pt.rx_processing_ns);
  if (const double start = peer->hca_.take_rx_port(now_ns(), 1); start > now_ns()) sleep_until_s(to_s(start));
  // A SEND or WRITE packet held by reordering may arrive with it: it lands as deliver's would.
  const double recv_done = now_ns() + model::receive_completion_latency_ns(t, pt, false, 0);
  req_faults_->transmit(p, SimPayload{}, hca_.ib_.mtu, [&](const hca::Packet& sub, bool corrupted, const SimPayload& h,
                                                           uint64_t skip) {
    peer->request_arrives(sub, corrupted, h, skip, recv_done);
  });
  // The responder's DMA read of the data does not pass its posted writes (PCIe ordering): an
  // RDMA WRITE ahead of this request on the QP is in memory first, out of its packet store.
  if (peer->rx_visible_ns_ > now_ns()) sleep_until_s(to_s(peer->rx_visible_ns_));
  // An atomic waits for the responder's atomic unit, which takes one at a time for hca.atomic
  // (the target locked through its read-modify-write); its operand's DMA read round trip is in
  // the response's latency below, as an RDMA READ's data fetch.
  if (p.op == hca::Opcode::RcCompareSwap || p.op == hca::Opcode::RcFetchAdd) {
    const double start = std::max(now_ns(), peer->hca_.atomic_free_ns_);
    peer->hca_.atomic_free_ns_ = start + pt.atomic_ns;
    if (peer->hca_.atomic_free_ns_ > now_ns()) sleep_until_s(to_s(peer->hca_.atomic_free_ns_));
  }
  hca::Packet r;
  double nak_at = 0;
  auto arrive = [&](const hca::Packet& sub, bool corrupted, const SimPayload& h, uint64_t skip) {
    peer->response_arrives(*this, sub, corrupted, h, skip, nak_at, nak_at);
  };
  while (peer->core_.next_response(UINT32_MAX, r)) {
    const hca::OpKind k = hca::op_kind(r.op);
    // A NAK comes back after the responder's processing and the flight; the response data
    // flows responder -> requester over the reverse route.
    nak_at = now_ns() + pt.tx_processing_ns + t.propagation_ns + t.rx_processing_ns;
    if (k != hca::OpKind::ReadResponse && k != hca::OpKind::AtomicAck) {
      peer->resp_faults_->transmit(r, SimPayload{}, hca_.ib_.mtu, arrive);
      continue;
    }
    // An atomic ACK's 8 B original value (AtomicAckETH) costs as an 8 B RDMA READ response (no
    // published figure for the ConnectX-3's read-modify-write is known to the model). The
    // response's packets wait for the responder's port to transmit them (hca.tx_packet_time
    // each), cross the route, and wait for the requester's port to take them (hca.rx_packet_time
    // each) before their data and CQE are written: each port a rate, so a response that finds it
    // free goes at once and its latency is unchanged.
    const uint64_t packets = peer->core_.packets_of(r.payload_len);
    if (const double start = peer->hca_.take_tx_port(now_ns(), packets); start > now_ns())
      sleep_until_s(to_s(start));
    wire(*peer, k == hca::OpKind::ReadResponse ? r.payload_len : 8);
    if (const double start = hca_.take_rx_port(now_ns(), packets); start > now_ns()) sleep_until_s(to_s(start));
    SimPayload src{&peer->hca_.host().memory(), {sdp::Sge{r.va, r.payload_len, 0}}, 1, 0};
    const uint64_t dups = peer->resp_faults_->stats().duplicated;
    peer->resp_faults_->transmit(r, src, hca_.ib_.mtu, arrive);
    if (const uint64_t d = peer->resp_faults_->stats().duplicated - dups; d > 0)
      wire(*peer, d * std::min<uint64_t>(hca_.ib_.mtu, std::max<uint64_t>(r.payload_len, 1)));
  }
  if (peer->resp_faults_->holding()) peer->resp_faults_->release(arrive);  // nothing queued behind it
}

}  // namespace hcasim::sim
