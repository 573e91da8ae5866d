#include "sim/perftest_sim.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <memory>

#include <fmt/format.h>

#include "frontends/config_error.h"
#include "frontends/perftest_cli.h"
#include "model/noise.h"
#include "sim/chrome_trace.h"
#include "sim/testbed.h"

namespace hcasim::sim {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
/// DEF_QKEY (perftest_parameters.h): the Q_Key of perftest's UD QPs and of its sends' remote_qkey.
constexpr uint32_t kPerftestQkey = 0x11111111;

/// One QP of a side and its buffer: [0, half) is sent from, [half, 2 half) is written or
/// received into by the peer (perftest's ctx->buf per QP).
struct Lane {
  Qp* qp = nullptr;
  sdp::Addr buf = 0;
  uint32_t key = 0;  ///< lkey = rkey of the buffer
};

/// One side of a perftest run: its host, QPs, buffers and the state its loops wait on. The
/// latency test uses lanes[0] only.
struct Side {
  SimHost* host = nullptr;
  const HostParams* params = nullptr;
  int core = 0;
  std::vector<Lane> lanes;
  uint64_t half = 0;            ///< bytes per half (the largest message size)
  /// -c UD: the 40 B a receive keeps before its data for the GRH (perftest's UD_ADDITION: its
  /// receive SGEs are size + 40 B, and a UD completion's byte_len counts them), else 0.
  uint32_t grh_room = 0;
  SimWaitQueue cqe_wq;          ///< woken by CQEs (the CPU polls its CQs)
  SimWaitQueue landed_wq;       ///< woken by the peer's RDMA WRITEs landing (the CPU polls its buffer)
  std::deque<double> landed_ns; ///< landing times of the peer's WRITEs not yet noticed
  bool real_bytes = true;       ///< buffers hold bytes: the poll byte is written and checked
  uint64_t cqes_pending = 0;    ///< CQEs written on this side's CQs and not yet polled
  /// ib_send_lat: completions polled while waiting for the other kind (perftest polls a receive
  /// CQ and a send CQ; the simulated QP has one CQ for both), not yet taken.
  uint64_t recv_stash = 0, send_stash = 0;
  std::unique_ptr<model::CpuNoise> noise;
  /// -e: the lanes whose completion events the interrupt handler delivered to the completion
  /// channel and ibv_get_cq_event has not yet read, oldest first; the thread sleeps on event_wq.
  std::deque<size_t> events;
  /// -e on ib_send_lat: per event of `events`, whether the send CQ raised it (perftest's send and
  /// receive CQs share its completion channel: Qp::separate_send_cq_events).
  std::deque<bool> event_from_send_cq;
  SimWaitQueue event_wq;
  uint64_t cqes_written = 0;    ///< CQEs written on this side's CQs since the start (all sizes)
  bool event_stall = false;     ///< -e: the loop would wait for an event that cannot come
};

/// Busy-polls until `ready` (the CPU spins, as perftest does without -e), re-checking when `wq` (the
/// side's CQE or landing queue) is notified, or until `deadline_ns` of simulated time (a duration
/// run's END_STATE, which perftest's loops test as they spin). Returns `ready()`.
bool spin_until(Side& s, SimWaitQueue& wq, const std::function<bool()>& ready, double deadline_ns = kInf) {
  return s.host->spin(wq, ready, deadline_ns == kInf ? kInf : std::max(0.0, deadline_ns - now_ns()));
}

/// perftest's duration mode (-D) on one side: catch_alarm's states as instants of simulated time.
/// The loop arms it as it starts (run_iter_bw, run_iter_lat_write, run_iter_lat; run_iter_bi on
/// the client) or at its first receive (set_on_first_rx_packet: run_iter_bw_server,
/// run_iter_lat_send; run_iter_bi on the server): START_STATE for the margin (none when it is 0,
/// catch_alarm(0)), SAMPLE_STATE for duration - 2 margin (tposted[0] and tcompleted[0] are read at
/// its two ends), STOP_SAMPLE_STATE for the margin, then END_STATE. alarm() counts whole seconds
/// and -D and -f are whole seconds, so the instants are exact. Unarmed, or in iteration mode, the
/// run never samples nor ends by time.
struct DurationClock {
  bool on = false;              ///< -D
  double sample_start_ns = kInf;
  double sample_end_ns = kInf;
  double end_ns = kInf;

  explicit DurationClock(const frontends::PerftestConfig& cfg) : on(cfg.duration_s > 0), cfg_(&cfg) {}
  bool armed() const { return end_ns < kInf; }
  void arm() {
    const double t0 = now_ns();
    sample_start_ns = t0 + cfg_->margin_s * 1e9;
    sample_end_ns = t0 + (cfg_->duration_s - cfg_->margin_s) * 1e9;
    end_ns = t0 + cfg_->duration_s * 1e9;
  }
  bool sampling() const {
    const double t = now_ns();
    return t >= sample_start_ns && t < sample_end_ns;
  }
  bool ended() const { return now_ns() >= end_ns; }
  /// The sampled window and its iterations into `point`.
  void report(frontends::PerftestPoint& point, uint64_t iters) const {
    point.iterations = iters;
    point.sample_start_ns = sample_start_ns;
    point.sample_end_ns = sample_end_ns;
  }

 private:
  const frontends::PerftestConfig* cfg_;
};

/// -e: perftest's ctx_notify_events (perftest_resources.h), called where the polling loop would
/// spin: ibv_get_cq_event sleeps in read() on the completion channel until the interrupt handler
/// (cpu.interrupt, on the IRQ's CPU, hca.interrupt_latency after the CQE) wakes it (cpu.wakeup,
/// plus cpu.ipi across cores, charged to the handler by SimHost::wake); the thread is switched back
/// in (cpu.context_switch, SimHost::sleep) and the read returns (cpu.syscall: its entry and exit are
/// one lump, charged here where the exit lies on the path; the entry overlaps the HCA's work).
/// ibv_ack_cq_events takes a mutex and counts in user space (libibverbs verbs.c), no device
/// access: no cost of its own. ibv_req_notify_cq re-arms the CQ of the event: libmlx4's mlx4_arm_cq
/// writes the arm doorbell record and stores the doorbell to the UAR page (cpu.uc_store). Returns
/// the lane of the event; perftest then polls that CQ once. On ib_send_lat, whose send and
/// receive CQs share the channel, the CQ re-armed is the event's (ev_cq).
size_t await_event(Side& s) {
  s.host->sleep(s.event_wq, [&] { return !s.events.empty(); });  // charges the context switch when it slept
  const size_t q = s.events.front();
  s.events.pop_front();
  const bool send_cq = s.event_from_send_cq.front();
  s.event_from_send_cq.pop_front();
  s.host->charge(model::Activity::Syscall, s.host->costs().syscall_ns);
  s.host->charge(model::Activity::Completion, s.params->post.mmio.uc_store_ns);
  if (send_cq)
    s.lanes[q].qp->req_notify_send_cq();
  else
    s.lanes[q].qp->req_notify_cq();
  return q;
}

/// -e in run_iter_bw: perftest 4.5 reads one event, then polls CTX_POLL_BATCH (16)
/// completions once, so completions can stay on the CQ with no
/// new one to raise the next event, and perftest waits in ibv_get_cq_event for ever. Throws that
/// as an error when the side is about to wait with no event delivered and `cqes_to_come` 0.
void check_event_can_come(Side& s, uint64_t cqes_to_come, const char* who) {
  if (!s.events.empty() || cqes_to_come > 0) return;
  s.event_stall = true;
  throw std::runtime_error(fmt::format(
        "{}: -e: {} completions left on the CQ and none to come: perftest polls 16 per completion "
        "event and waits for ever here (a larger -Q gives fewer completions)",
        who, s.cqes_pending));
}

/// Polls the send CQ for one completion (perftest's do { ibv_poll_cq } while (ne == 0)),
/// and fails on an error status as perftest does ("Completion with error").
void poll_one(Side& s, const char* who) {
  std::array<sdp::Wc, 1> wc{};
  bool got = false;  // the readiness test consumes the CQE, so it must run poll_cq only until it succeeds
  spin_until(s, s.cqe_wq, [&] { return got = got || s.lanes[0].qp->poll_cq(wc) > 0; });
  --s.cqes_pending;
  s.host->charge(model::Activity::Completion, s.host->costs().user_poll_cq_ns);
  if (wc[0].status != sdp::WcStatus::Success)
    throw std::runtime_error(fmt::format("{}: completion with error (status {}: {})", who,
                                         sdp::wc_status_code(wc[0].status), sdp::wc_status_str(wc[0].status)));
}

/// Waits for the peer's WRITE number `rcnt` to be visible at the last byte of the message in
/// this side's buffer (perftest: while (*poll_buf != (char)rcnt);). The loop notices it one
/// poll turn after it lands (a uniformly distributed phase of cpu.poll_miss), or when the
/// CPU is back from a tick or an interference window.
/// In a duration run the loop also stops at END_STATE (`deadline_ns`); returns false then.
bool wait_for_byte(Side& s, uint64_t size, uint64_t rcnt, const char* who, double deadline_ns = kInf) {
  if (!spin_until(s, s.landed_wq, [&] { return !s.landed_ns.empty(); }, deadline_ns)) return false;
  const double landed = s.landed_ns.front();
  s.landed_ns.pop_front();
  double seen = landed + s.noise->uniform() * s.host->costs().poll_miss_ns;
  seen = s.noise->available_at(std::max(seen, now_ns()));
  if (seen > now_ns()) sleep_until_s(to_s(seen));
  if (TraceSink* t = s.host->trace()) [[unlikely]]
    t->noticed(s.host->id(), s.lanes[0].qp->qp_num(), landed, now_ns());
  if (!s.real_bytes) return true;
  uint8_t byte = 0;
  s.host->memory().read_bytes(s.lanes[0].buf + s.half + size - 1, &byte, 1);
  if (byte != static_cast<uint8_t>(rcnt))
    throw std::runtime_error(fmt::format("{}: poll byte is {}, expected {} (iteration {})", who, byte,
                                         static_cast<uint8_t>(rcnt), rcnt));
  return true;
}

/// The send opcode of `test`'s WRs (perftest's verb; -A for the atomics).
sdp::WrOpcode opcode_of(const frontends::PerftestConfig& cfg) {
  switch (cfg.test) {
    case frontends::PerftestTest::SendBw:
    case frontends::PerftestTest::SendLat: return sdp::WrOpcode::Send;
    case frontends::PerftestTest::ReadLat:
    case frontends::PerftestTest::ReadBw: return sdp::WrOpcode::RdmaRead;
    case frontends::PerftestTest::AtomicLat:
    case frontends::PerftestTest::AtomicBw:
      return cfg.atomic == frontends::PerftestAtomic::CmpAndSwap ? sdp::WrOpcode::AtomicCmpSwap
                                                                 : sdp::WrOpcode::AtomicFetchAdd;
    default: return sdp::WrOpcode::RdmaWrite;
  }
}

/// A send WR of `size` bytes on lane `q`: an RDMA WRITE from this lane's first half to the peer
/// lane's second half, a SEND of the first half, or an RDMA READ / atomic (8 B) of the peer
/// lane's first half into this lane's second half. An atomic adds 1 (FETCH_AND_ADD) or swaps 0
/// for 1 (CMP_AND_SWAP).
sdp::SendWr make_wr(const Side& s, const Side& peer, size_t q, uint64_t size, uint64_t wr_id, sdp::WrOpcode op,
                    bool inline_data, bool signaled) {
  sdp::SendWr wr;
  wr.wr_id = wr_id;
  wr.opcode = op;
  const bool into_local = op != sdp::WrOpcode::Send && op != sdp::WrOpcode::RdmaWrite;
  wr.sg[0] = {s.lanes[q].buf + (into_local ? s.half : 0), static_cast<uint32_t>(size), s.lanes[q].key};
  wr.num_sge = 1;
  wr.signaled = signaled;
  wr.inline_data = inline_data;
  if (op != sdp::WrOpcode::Send) {
    wr.remote_addr = peer.lanes[q].buf + (into_local ? 0 : peer.half);
    wr.rkey = peer.lanes[q].key;
  }
  if (op == sdp::WrOpcode::AtomicFetchAdd) wr.compare_add = 1;
  if (op == sdp::WrOpcode::AtomicCmpSwap) wr.swap = 1;
  return wr;
}

/// Posts the RDMA WRITE of `size` bytes from this side's first half to the peer's second
/// half, after writing the iteration number into its last byte (perftest: *post_buf = ++scnt).
void post_write(Side& s, const Side& peer, uint64_t size, uint64_t scnt, bool inline_data, bool signaled) {
  const uint8_t byte = static_cast<uint8_t>(scnt);
  if (s.real_bytes) s.host->memory().write_bytes(s.lanes[0].buf + size - 1, &byte, 1);
  s.host->charge(model::Activity::Post, s.host->costs().user_post_ns);
  s.lanes[0].qp->post_send(make_wr(s, peer, 0, size, scnt, sdp::WrOpcode::RdmaWrite, inline_data, signaled));
}

/// Takes CQEs off the one simulated CQ until one of the kind wanted (receive or send) is stashed
/// or the CQ is empty, each into its kind's stash (perftest polls a receive CQ and a send CQ);
/// an error status ends the test. Returns the CQEs taken (the caller accounts for them).
uint64_t sort_cqes(Side& s, bool recv, const char* who) {
  uint64_t& mine = recv ? s.recv_stash : s.send_stash;
  uint64_t& other = recv ? s.send_stash : s.recv_stash;
  uint64_t taken = 0;
  std::array<sdp::Wc, 1> wc{};
  while (mine == 0 && s.lanes[0].qp->poll_cq(wc) > 0) {
    ++taken;
    if (wc[0].status != sdp::WcStatus::Success)
      throw std::runtime_error(fmt::format("{}: completion with error (status {}: {})", who,
                                           sdp::wc_status_code(wc[0].status), sdp::wc_status_str(wc[0].status)));
    ++((wc[0].opcode == sdp::WcOpcode::Recv) == recv ? mine : other);
  }
  return taken;
}

/// CQEs taken off the CQ: no longer pending, each one poll's work (cpu.user_poll_cq).
void account_polled(Side& s, uint64_t taken) {
  s.cqes_pending -= taken;
  s.host->charge(model::Activity::Completion, s.host->costs().user_poll_cq_ns * static_cast<double>(taken));
}

/// Polls the one CQ until a completion of the kind wanted (receive or send) is there, keeping
/// the other kind for later: perftest's `do { ibv_poll_cq(recv_cq or send_cq, 1, &wc) } while
/// (ne == 0)` on two CQs. Each CQE taken costs one poll; an error status ends the test.
/// Returns false, having taken none of the wanted kind, when `deadline_ns` (a duration run's END)
/// comes first.
bool poll_kind(Side& s, bool recv, const char* who, double deadline_ns = kInf) {
  uint64_t& mine = recv ? s.recv_stash : s.send_stash;
  uint64_t taken = 0;
  const bool got = spin_until(s, s.cqe_wq, [&] {
    taken += sort_cqes(s, recv, who);
    return mine > 0;
  }, deadline_ns);
  if (got) --mine;
  account_polled(s, taken);
  return got;
}

/// One ibv_poll_cq(recv_cq or send_cq, 1, &wc), as perftest's loops make it after an event
/// (-e: `while (!use_event && ne == 0)` ends after one call): true when a completion of the kind
/// wanted was there (taken, as poll_kind takes it), false when that CQ was empty.
bool poll_kind_once(Side& s, bool recv, const char* who) {
  uint64_t& mine = recv ? s.recv_stash : s.send_stash;
  if (mine == 0) account_polled(s, sort_cqes(s, recv, who));
  if (mine == 0) return false;
  --mine;
  return true;
}

/// Posts one receive of `size` bytes into the second half of lane 0 (perftest's rwr).
void post_recv_one(Side& s, uint64_t size, uint64_t wr_id) {
  sdp::RecvWr r;
  r.wr_id = wr_id;
  r.sg[0] = {s.lanes[0].buf + s.half, static_cast<uint32_t>(size + s.grh_room), s.lanes[0].key};
  r.num_sge = 1;
  s.host->charge(model::Activity::Post, s.host->costs().user_post_ns);
  s.lanes[0].qp->post_recv(r);
}

/// perftest's run_iter_lat_send (perftest_resources.c) for one size on one side, once each side
/// has posted its first rx_depth receives (ctx_set_recv_wqes, before the handshake): wait for a
/// receive completion (not the client before its first send), repost while rcnt + rx_depth <=
/// iters, then (while scnt < iters) record tposted, post the SEND (every one signaled: a latency
/// test's cq_mod is 1) and poll the send CQ for its completion.
/// In duration mode (-D) each side's clock starts at its first receive (set_on_first_rx_packet),
/// the receive wait gives up at END_STATE, every receive is reposted, `sampled` counts the
/// receives of SAMPLE_STATE, and no SEND is posted once the run has ended.
void send_latency_loop(Side& s, const Side& peer, bool client, const frontends::PerftestConfig& cfg, uint64_t size,
                       std::vector<double>* tposted, const char* who, DurationClock& clock, uint64_t& sampled) {
  const uint64_t iters = clock.on ? 0 : cfg.iterations;
  const bool inline_data = size <= cfg.inline_size;
  uint64_t scnt = 0, rcnt = 0;
  uint64_t posted = std::min<uint64_t>(cfg.rx_depth, cfg.iterations);
  if (clock.on) posted = cfg.rx_depth;
  while (scnt < iters || rcnt < iters || (clock.on && !clock.ended())) {
    if ((rcnt < iters || clock.on) && !(scnt < 1 && client)) {
      // -e: one event (of either CQ: they share the channel), then one poll of the receive CQ,
      // which may come back empty (the loop then goes on to its send).
      bool got = false;
      if (cfg.use_event) {
        await_event(s);
        got = poll_kind_once(s, true, who);
      } else {
        got = poll_kind(s, true, who, clock.end_ns);
      }
      if (got) {
        if (clock.on && !clock.armed()) clock.arm();
        ++rcnt;
        if (clock.on && clock.sampling()) ++sampled;
        if (clock.on || rcnt + cfg.rx_depth <= iters) post_recv_one(s, size, posted++);
      }
    }
    if (clock.on && clock.ended()) break;
    if (scnt < iters || clock.on) {
      if (tposted != nullptr && !clock.on) tposted->push_back(now_ns());
      ++scnt;
      s.host->charge(model::Activity::Post, s.host->costs().user_post_ns);
      s.lanes[0].qp->post_send(make_wr(s, peer, 0, size, scnt, sdp::WrOpcode::Send, inline_data, true));
      if (!cfg.use_event) {
        poll_kind(s, false, who);
      } else {
        await_event(s);
        // perftest reads s_wc whether or not the poll found one: an empty send CQ here (the
        // event was the receive CQ's) would have it test an unset work completion.
        if (!poll_kind_once(s, false, who))
          throw std::runtime_error(fmt::format("{}: -e: the event read was the receive CQ's and the send CQ, polled "
                                               "once, was empty: perftest would read an unset work completion here",
                                               who));
      }
    }
  }
  s.host->flush();
}

/// perftest's run_iter_lat (perftest_resources.c), which read_lat.c and atomic_lat.c run on the
/// client: record tposted, post one signaled RDMA READ or atomic, poll the send CQ until its
/// completion, `iters` times. The server only waits.
/// In duration mode (-D) the loop runs until END_STATE (armed as it starts), stops right after the
/// post that finds it ended, and counts the completions of SAMPLE_STATE into `point`.
void read_latency_loop(Side& s, const Side& peer, const frontends::PerftestConfig& cfg, uint64_t size,
                       frontends::PerftestPoint& point, const char* who) {
  const sdp::WrOpcode op = opcode_of(cfg);
  DurationClock clock(cfg);
  if (clock.on) clock.arm();
  uint64_t sampled = 0;
  for (uint64_t scnt = 0; clock.on ? !clock.ended() : scnt < cfg.iterations; ++scnt) {
    if (!clock.on) point.tposted_ns.push_back(now_ns());
    s.host->charge(model::Activity::Post, s.host->costs().user_post_ns);
    s.lanes[0].qp->post_send(make_wr(s, peer, 0, size, scnt, op, false, true));
    if (clock.on && clock.ended()) break;
    if (cfg.use_event) await_event(s);
    poll_one(s, who);
    if (clock.sampling()) ++sampled;
  }
  if (clock.on) clock.report(point, sampled);
  s.host->flush();
}

/// perftest write_lat's run_iter_lat_write for one size, on one side. The client records
/// tposted[] before each post.
/// In duration mode (-D: `clock` on, armed as the loop starts, `iters` 0) each side runs until its
/// own END_STATE: the wait for the peer's byte gives up then, the WRITE after it is still posted
/// (perftest posts before it tests the state), and `sampled` counts the completions polled in
/// SAMPLE_STATE.
void latency_loop(Side& s, const Side& peer, bool client, uint64_t size, uint64_t iters, bool inline_data,
                  std::vector<double>* tposted, const char* who, DurationClock& clock, uint64_t& sampled) {
  uint64_t scnt = 0, rcnt = 0, ccnt = 0;
  if (clock.on) clock.arm();
  while (scnt < iters || ccnt < iters || rcnt < iters || (clock.on && !clock.ended())) {
    if ((rcnt < iters || clock.on) && !(scnt < 1 && client)) {
      ++rcnt;
      wait_for_byte(s, size, rcnt, who, clock.end_ns);
    }
    if (scnt < iters || clock.on) {
      if (tposted != nullptr && !clock.on) tposted->push_back(now_ns());
      ++scnt;
      post_write(s, peer, size, scnt, inline_data, true);
    }
    if (clock.on && clock.ended()) break;
    if (ccnt < iters || clock.on) {
      poll_one(s, who);
      ++ccnt;
      if (clock.sampling()) ++sampled;
    }
  }
  s.host->flush();
}

/// Polls every lane's CQ for up to 16 completions (perftest's CTX_POLL_BATCH), spinning
/// until there is one. Returns (lane, Wc) pairs; an error status ends the test as in perftest.
/// With a `deadline_ns` (a duration run's END) it returns nothing when that comes first.
std::vector<std::pair<size_t, sdp::Wc>> poll_batch(Side& s, const char* who, double deadline_ns = kInf,
                                                   size_t batch = 16) {
  const size_t kBatch = batch;
  std::vector<std::pair<size_t, sdp::Wc>> out;
  if (!spin_until(s, s.cqe_wq, [&] { return s.cqes_pending > 0; }, deadline_ns)) return out;
  std::vector<sdp::Wc> wc(kBatch);
  for (size_t q = 0; q < s.lanes.size() && out.size() < kBatch; ++q) {
    const int n = s.lanes[q].qp->poll_cq(std::span<sdp::Wc>(wc.data(), kBatch - out.size()));
    for (int i = 0; i < n; ++i) out.emplace_back(q, wc[static_cast<size_t>(i)]);
  }
  s.cqes_pending -= out.size();
  s.host->charge(model::Activity::Completion, s.host->costs().user_poll_cq_ns * static_cast<double>(out.size()));
  for (const auto& [q, w] : out)
    if (w.status != sdp::WcStatus::Success)
      throw std::runtime_error(fmt::format("{}: completion with error (status {}: {})", who,
                                           sdp::wc_status_code(w.status), sdp::wc_status_str(w.status)));
  return out;
}

/// A bw loop's send completions of QP `q` up to WR `done` - 1 (perftest's ccnt; `done` is the
/// last completed wr_id + 1, a CQE standing for the cq_mod WRs before it): in iteration mode each
/// WR's tcompleted, in a duration run (-D) the WRs completed in SAMPLE_STATE counted in
/// `sampled` (perftest: iters += cq_mod).
void account_sends(size_t q, uint64_t done, const DurationClock& clock, std::vector<uint64_t>& ccnt,
                   std::vector<std::deque<uint64_t>>& pending, uint64_t& totccnt, uint64_t& sampled,
                   frontends::PerftestPoint& point) {
  if (clock.on) {
    if (clock.sampling()) sampled += done - ccnt[q];
    totccnt += done - ccnt[q];
    ccnt[q] = done;
    return;
  }
  for (; ccnt[q] < done; ++ccnt[q], ++totccnt) {
    point.tcompleted_ns[pending[q].front()] = now_ns();
    pending[q].pop_front();
  }
}

/// perftest's run_iter_bw for one size on the client (and with -b on the server too): keep up to
/// tx_depth WRs outstanding per QP, signal one in cq_mod (and the last), poll completions in
/// batches. tposted[] in posting order; tcompleted[] of every WR a signaled CQE covers, at the
/// time it is polled. In duration mode (-D) the loop runs from the alarm it arms as it starts to
/// END_STATE, with no last WR to signal and no timestamps but the window's, and counts cq_mod
/// iterations per completion polled in SAMPLE_STATE; it stops at END_STATE with WRs in flight,
/// as perftest's does.
void bandwidth_client(Side& s, const Side& peer, const frontends::PerftestConfig& cfg, uint64_t size,
                      frontends::PerftestPoint& point, const char* who) {
  const sdp::WrOpcode op = opcode_of(cfg);
  const size_t nq = s.lanes.size();
  DurationClock clock(cfg);
  if (clock.on) clock.arm();
  const uint64_t iters = clock.on ? 0 : cfg.iterations;  // force_dependecies: iters = 0 with -D
  const uint64_t tot = iters * nq;
  std::vector<uint64_t> scnt(nq, 0), ccnt(nq, 0);
  std::vector<std::deque<uint64_t>> pending(nq);  // global indices of WRs not yet completed
  point.tposted_ns.reserve(tot);
  point.tcompleted_ns.assign(tot, 0.0);
  uint64_t totscnt = 0, totccnt = 0;
  uint64_t sampled = 0;          // -D: iterations completed in SAMPLE_STATE
  uint64_t signaled_posted = 0;  // -e: signaled WRs posted, each a CQE to come
  const uint64_t written0 = s.cqes_written;
  const bool inline_data = size <= cfg.inline_size;
  while (totscnt < tot || totccnt < tot || (clock.on && !clock.ended())) {
    for (size_t q = 0; q < nq; ++q)
      while ((scnt[q] < iters || clock.on) && scnt[q] - ccnt[q] < cfg.tx_depth) {
        const bool signaled = (scnt[q] + 1) % cfg.cq_mod == 0 || (!clock.on && scnt[q] + 1 == iters);
        if (clock.on && clock.ended()) break;
        if (!clock.on) point.tposted_ns.push_back(now_ns());
        s.host->charge(model::Activity::Post, s.host->costs().user_post_ns);
        s.lanes[q].qp->post_send(make_wr(s, peer, q, size, scnt[q], op, inline_data, signaled));
        if (signaled) ++signaled_posted;
        if (!clock.on) pending[q].push_back(totscnt);
        ++scnt[q];
        ++totscnt;
      }
    if (totccnt < tot || (clock.on && totccnt < totscnt)) {
      // -e: run_iter_bw reads one event and polls once, whatever it finds (perftest 4.5).
      std::vector<std::pair<size_t, sdp::Wc>> got;
      if (cfg.use_event) {
        check_event_can_come(s, signaled_posted - (s.cqes_written - written0), who);
        await_event(s);
        if (s.cqes_pending > 0) got = poll_batch(s, who);
      } else {
        got = poll_batch(s, who, clock.end_ns);  // perftest polls without blocking: END_STATE ends the wait
      }
      for (const auto& [q, wc] : got) account_sends(q, wc.wr_id + 1, clock, ccnt, pending, totccnt, sampled, point);
    }
  }
  if (clock.on) clock.report(point, sampled);
  s.host->flush();
}

/// perftest's server side of ib_send_bw: rx_depth receives posted per QP before the client
/// is told to start (perftest posts them before its handshake), then one reposted per
/// completion while more messages are to come.
class SendBwServer {
 public:
  SendBwServer(Side& s, const frontends::PerftestConfig& cfg, uint64_t size)
      : s_(s), cfg_(cfg), size_(size), posted_(s.lanes.size(), 0) {}

  /// Posts the first min(rx_depth, iterations) receives on every QP.
  void post_initial() {
    for (size_t q = 0; q < s_.lanes.size(); ++q)
      for (uint64_t i = 0; i < std::min<uint64_t>(cfg_.rx_depth, cfg_.iterations); ++i) post_one(q);
  }

  /// One receive completion of QP `q`: checks its length and reposts while more messages are to
  /// come (always in duration mode).
  void received(size_t q, const sdp::Wc& wc, const char* who) {
    if (wc.byte_len != size_ + s_.grh_room)
      throw std::runtime_error(fmt::format("{}: received {} B, expected {} B", who, wc.byte_len, size_ + s_.grh_room));
    if (posted_[q] < cfg_.iterations || cfg_.duration_s > 0) post_one(q);
  }

  /// Polls until every message of every QP has arrived, reposting receives. In duration mode
  /// (run_iter_bw_server) the alarm is armed at the first receive (set_on_first_rx_packet) and
  /// the loop polls until END_STATE.
  void serve(const char* who) {
    uint64_t total = 0;
    const uint64_t expected = cfg_.iterations * s_.lanes.size();
    DurationClock clock(cfg_);
    auto take = [&](const std::vector<std::pair<size_t, sdp::Wc>>& got) {
      for (const auto& [q, wc] : got) {
        if (clock.on && !clock.armed()) clock.arm();
        received(q, wc, who);
        ++total;
      }
    };
    if (clock.on) {
      while (!clock.ended()) take(poll_batch(s_, who, clock.end_ns));
      s_.host->flush();
      return;
    }
    while (total < expected) {
      if (!cfg_.use_event) {
        take(poll_batch(s_, who));
        continue;
      }
      // -e: run_iter_bw_server reads one event, then polls batches until the CQ is empty
      // (do { ibv_poll_cq(recv_cq, CTX_POLL_BATCH) } while (ne > 0)), so no completion is left
      // behind an event.
      await_event(s_);
      while (s_.cqes_pending > 0 && total < expected) take(poll_batch(s_, who));
    }
    s_.host->flush();
  }

 private:
  void post_one(size_t q) {
    sdp::RecvWr r;
    r.wr_id = posted_[q]++;
    r.sg[0] = {s_.lanes[q].buf + s_.half, static_cast<uint32_t>(size_ + s_.grh_room), s_.lanes[q].key};
    r.num_sge = 1;
    s_.host->charge(model::Activity::Post, s_.host->costs().user_post_ns);
    s_.lanes[q].qp->post_recv(r);
  }

  Side& s_;
  const frontends::PerftestConfig& cfg_;
  uint64_t size_;
  std::vector<uint64_t> posted_;
};

/// perftest's run_iter_bi (ib_send_bw -b) for one size on one side, its receives already posted
/// (SendBwServer::post_initial): the SEND stream of run_iter_bw, posted only once the side has
/// received something if it is the server (before_first_rx), with each pass polling the receive
/// CQ (up to rx_depth completions, each reposted while more messages are to come) and the send
/// CQ (up to 16). The simulated QP completes both into one CQ, so a pass takes up to rx_depth +
/// 16 completions of either kind. tposted[]/tcompleted[] are the side's SENDs, as perftest
/// records them. In duration mode the client arms its alarm as the loop starts, the server at
/// its first receive, and SAMPLE_STATE counts both receives and cq_mod per send completion, as
/// run_iter_bi does.
void bidirectional_send(Side& s, const Side& peer, bool client, const frontends::PerftestConfig& cfg, uint64_t size,
                        SendBwServer& receiver, frontends::PerftestPoint& point, const char* who) {
  const size_t nq = s.lanes.size();
  DurationClock clock(cfg);
  if (clock.on && client) clock.arm();
  const uint64_t iters = clock.on ? 0 : cfg.iterations;
  const uint64_t tot = iters * nq;
  std::vector<uint64_t> scnt(nq, 0), ccnt(nq, 0);
  std::vector<std::deque<uint64_t>> pending(nq);
  point.tposted_ns.reserve(tot);
  point.tcompleted_ns.assign(tot, 0.0);
  uint64_t totscnt = 0, totccnt = 0, totrcnt = 0, sampled = 0;
  bool before_first_rx = !client;
  const bool inline_data = size <= cfg.inline_size;
  while ((clock.on && !clock.ended()) || totccnt < tot || totrcnt < tot) {
    for (size_t q = 0; q < nq; ++q)
      while (!before_first_rx && (scnt[q] < iters || clock.on) && scnt[q] - ccnt[q] < cfg.tx_depth) {
        const bool signaled = (scnt[q] + 1) % cfg.cq_mod == 0 || (!clock.on && scnt[q] + 1 == iters);
        if (clock.on && clock.ended()) break;
        if (!clock.on) point.tposted_ns.push_back(now_ns());
        s.host->charge(model::Activity::Post, s.host->costs().user_post_ns);
        s.lanes[q].qp->post_send(make_wr(s, peer, q, size, scnt[q], sdp::WrOpcode::Send, inline_data, signaled));
        if (!clock.on) pending[q].push_back(totscnt);
        ++scnt[q];
        ++totscnt;
      }
    // The loop polls without blocking; it has nothing to do until a completion comes (or, in
    // duration mode, END_STATE: armed or not, the server's wait for its first receive ends when a
    // receive comes).
    const auto got = poll_batch(s, who, clock.end_ns, cfg.rx_depth + 16);
    for (const auto& [q, wc] : got) {
      if (wc.opcode == sdp::WcOpcode::Recv) {
        if (before_first_rx) {
          before_first_rx = false;
          if (clock.on) clock.arm();
        }
        ++totrcnt;
        if (clock.on && clock.sampling()) ++sampled;
        receiver.received(q, wc, who);
        continue;
      }
      account_sends(q, wc.wr_id + 1, clock, ccnt, pending, totccnt, sampled, point);
    }
  }
  if (clock.on) clock.report(point, sampled);
  s.host->flush();
}

/// One way of ib_write_lat's ping-pong from `tx` to `rx` for a WRITE of `bytes` as its stages,
/// each a closed form of model/ with the inputs the simulation gives it (latency_loop, post_write,
/// Qp::post_checked, Qp::execute_one, Qp::transfer_first, Qp::deliver, wait_for_byte): the post's
/// CPU work, the MMIO until the HCA holds the WQE (the engine waits for it on an idle queue), the
/// message on the route, the pipeline to the responder's memory, the responder's packet store, and
/// the poll loop's mean delay in noticing the byte (a uniform phase of cpu.poll_miss). Timer ticks
/// and interference (host noise) are left out: they shape the tail, not the median.
std::vector<frontends::LatencyStage> one_way_stages(const HostParams& tx, const HostParams& rx, uint64_t bytes,
                                                    bool inline_data) {
  model::mlx4::WqeShape shape;
  shape.opcode = model::mlx4::Opcode::RdmaWrite;
  shape.num_sge = 1;
  shape.inline_data = inline_data;
  shape.inline_bytes = inline_data ? static_cast<uint32_t>(bytes) : 0;
  const model::PostTiming post = model::post_timing(tx.post, shape);
  const model::ib::Config ib = model::ib::trained(tx.ib, rx.ib);
  const PathRates r = path_rates(tx, rx);
  const double bottleneck = std::min({r.bus_read_Bps, r.dma_tags_Bps, r.ib_Bps, r.bus_write_Bps});
  const model::MessageWire w = model::message_wire(tx.bus, ib, rx.bus, post, inline_data, bytes, false, false);
  const double link_ns = model::message_link_time_ns(ib, w);
  const double route_ns =
      std::ceil(std::max(static_cast<double>(std::max<uint64_t>(bytes, 1)), link_ns * 1e-9 * bottleneck)) / bottleneck * 1e9;
  return {
      {"post: libmlx4 builds the WQE", tx.costs.user_post_ns, "cpu.user_post"},
      {post.blueflame ? "post: BlueFlame copy until the HCA holds the WQE" : "post: doorbell and WQE fetch",
       post.wqe_at_hca_ns, "model::post_timing wqe_at_hca_ns"},
      {"HCA: the message on its route", route_ns, "max(bytes, model::message_link_time_ns x bottleneck) / bottleneck"},
      {inline_data ? "HCA: inline copy, tx/rx processing, propagation, posted write"
                   : "HCA: gather read, tx/rx processing, propagation, posted write",
       model::receive_completion_latency_ns(tx.timing, rx.timing, inline_data, bytes),
       "model::receive_completion_latency_ns"},
      {"responder's packet store", model::receive_store_ns(bytes, ib.mtu, r.ib_Bps, r.bus_write_Bps),
       "model::receive_store_ns"},
      {"poll loop sees the byte (mean of a uniform phase)", rx.costs.poll_miss_ns / 2, "cpu.poll_miss / 2"},
  };
}

/// perftest's ctx_set_out_reads against a device of `max_qp_rd_atom`: -o when given (above 0) and
/// not above the device's maximum, else the maximum.
uint32_t resolve_out_reads(uint32_t asked, uint32_t max_qp_rd_atom) {
  return asked == 0 || asked > max_qp_rd_atom ? max_qp_rd_atom : asked;
}

/// --trace: the sink of a run of `cfg` (nullptr without --trace). Its work requests flow to the
/// poll that retires them, but a latency test's SENDs and RDMA WRITEs to the peer's noticing
/// of them (the ping-pong's other half).
std::unique_ptr<ChromeTrace> make_trace(const frontends::PerftestConfig& cfg, const model::Platform& local,
                                        const model::Platform& remote) {
  if (!cfg.trace) return nullptr;
  const std::string tool(frontends::perftest_tool_name(cfg.test));
  auto t = std::make_unique<ChromeTrace>(TraceWindow{cfg.trace_start_s, cfg.trace_len_s},
                                         std::array<std::string, 2>{fmt::format("A: {} client on {}", tool, local.name()),
                                                                    fmt::format("B: {} server on {}", tool, remote.name())});
  t->show_work_requests(!frontends::perftest_is_bw(cfg.test));
  return t;
}

/// check_perftest's checks on the hosts' parameters, then the banner's facts.
frontends::PerftestResult check_config(const HostParams& A, const HostParams& B, const frontends::PerftestConfig& cfg) {
  // The config's own preconditions (PerftestConfig: sizes, iterations, num_qps, cq_mod) are the
  // front end's to check in its flags' words (frontends/perftest_cli.cpp); the rest checks the
  // config against the hosts' HCAs.
  if (cfg.sizes.empty()) throw InputError("perftest: no message size");
  uint64_t max_size = 0;
  for (uint64_t size : cfg.sizes) {
    if (size == 0) throw InputError("PerftestConfig: a message size of 0 B");
    // A UD message is one packet: at most the path MTU (perftest clamps -s to it and stops -a
    // there: frontends::perftest_ud_sizes).
    const bool ud = cfg.connection == frontends::PerftestConnection::Ud;
    const uint64_t limit = ud ? model::ib::trained(A.ib, B.ib).mtu : std::min(A.max_msg_size, B.max_msg_size);
    if (ud && size > limit)
      throw frontends::ConfigError("sizes", fmt::format("{} B is above the path MTU {} B, a UD message's limit (ib.mtu)",
                                                        size, limit));
    if (size > limit)
      throw frontends::ConfigError("sizes", fmt::format("{} B is above the HCA's max message size {} B (hca.max_msg_size)", size, limit));
    max_size = std::max(max_size, size);
  }
  const bool lat = !frontends::perftest_is_bw(cfg.test);
  if (lat && cfg.iterations < 2)
    throw InputError(fmt::format("PerftestConfig: {} iterations; a latency test needs at least 2", cfg.iterations));
  if (cfg.iterations < 1) throw InputError("PerftestConfig: iterations must be >= 1");
  if (cfg.num_qps < 1) throw InputError("PerftestConfig: num_qps must be >= 1");
  if (cfg.tx_depth < 1 || cfg.tx_depth > std::min(A.qp_depth, B.qp_depth))
    throw frontends::ConfigError("tx_depth", fmt::format("tx depth {} is outside 1..{} (hca.max_qp_wr)", cfg.tx_depth,
                                                         std::min(A.qp_depth, B.qp_depth)));
  if (frontends::perftest_is_send(cfg.test) && (cfg.rx_depth < 1 || cfg.rx_depth > B.qp_depth))
    throw frontends::ConfigError("rx_depth", fmt::format("rx depth {} is outside 1..{} (hca.max_qp_wr)", cfg.rx_depth, B.qp_depth));
  if (cfg.cq_mod < 1) throw InputError("PerftestConfig: cq_mod must be >= 1");
  if (cfg.duplex && lat) throw InputError("PerftestConfig: duplex on a latency test (perftest's -b is for the bw tests)");
  if (cfg.duplex && cfg.use_event) throw InputError("PerftestConfig: use_event with duplex is not simulated");
  if (cfg.duration_s < 0 || cfg.margin_s < 0 || (cfg.duration_s > 0 && !(cfg.duration_s > 2 * cfg.margin_s)))
    throw InputError(fmt::format("PerftestConfig: a duration of {} s with margins of {} s (perftest: DURATION > 2*MARGIN)",
                                 cfg.duration_s, cfg.margin_s));
  if (cfg.duration_s > 0 && cfg.use_event) throw InputError("PerftestConfig: use_event in duration mode (perftest refuses it)");
  if (cfg.test == frontends::PerftestTest::SendBw && cfg.duplex && cfg.rx_depth > A.qp_depth)
    throw frontends::ConfigError("rx_depth", fmt::format("rx depth {} is outside 1..{} (hca.max_qp_wr)", cfg.rx_depth, A.qp_depth));
  if (cfg.use_event && !frontends::perftest_is_send(cfg.test) && !frontends::perftest_is_read_or_atomic(cfg.test))
    throw InputError(fmt::format("PerftestConfig: use_event on {} (perftest's events are for the SEND, READ and "
                                 "atomic tools)", frontends::perftest_tool_name(cfg.test)));
  // The testbed's own RC pair (run_perftest) completes into a CQ of hca.cq_entries; the pairs
  // perftest's runs make (READ, atomics, UC, UD) have CQs of perftest's depths.
  const bool bed_pair = !frontends::perftest_is_read_or_atomic(cfg.test) && cfg.connection == frontends::PerftestConnection::Rc;
  if (bed_pair && std::min(A.cq_entries, B.cq_entries) < std::max(cfg.tx_depth, cfg.rx_depth))
    throw frontends::ConfigError("tx_depth/rx_depth",
                                 fmt::format("depth above hca.cq_entries {}", std::min(A.cq_entries, B.cq_entries)));
  const uint32_t max_inline = std::min(A.max_inline_data, B.max_inline_data);
  if (cfg.inline_size > max_inline)
    throw frontends::ConfigError("inline_size",
                                 fmt::format("inline size {} B is above the HCA's max_inline_data {} B (hca.max_inline_data)",
                                             cfg.inline_size, max_inline));

  frontends::PerftestResult res;
  res.max_inline_data = cfg.inline_size;
  res.mtu = model::ib::trained(A.ib, B.ib).mtu;  // the port's active MTU, as the link trained
  res.blueflame = A.post.blueflame;
  res.write_combining = A.post.mmio.write_combining;
  res.max_qp_rd_atom = std::min(A.max_qp_rd_atom, B.max_qp_rd_atom);
  if (frontends::perftest_is_read_or_atomic(cfg.test))
    res.out_reads = resolve_out_reads(cfg.out_reads, A.max_qp_rd_atom);  // the client prints its own
  return res;
}

}  // namespace

frontends::PerftestResult check_perftest(const model::Platform& local, const model::Platform& remote, const frontends::PerftestConfig& cfg) {
  return check_config(read_host_params(local), read_host_params(remote), cfg);
}

frontends::PerftestResult run_perftest(const model::Platform& local, const model::Platform& remote, const frontends::PerftestConfig& cfg) {
  const HostParams A = read_host_params(local);
  const HostParams B = read_host_params(remote);
  frontends::PerftestResult res = check_config(A, B, cfg);
  const bool lat = !frontends::perftest_is_bw(cfg.test);
  const bool duration = cfg.duration_s > 0;  // -D
  uint64_t max_size = 0;
  for (uint64_t size : cfg.sizes) max_size = std::max(max_size, size);

  const auto wall0 = std::chrono::steady_clock::now();
  // The latency loop polls a byte, so its buffers hold real bytes, up to 64 MB per buffer half
  // (above that the data moves by reference and the loop trusts the landing event alone); the
  // bandwidth tests move up to 8 MB per message and keep their data by reference (sdp/memory.h).
  constexpr uint64_t kMaxRealBytes = uint64_t{64} << 20;
  // An atomic reads and writes its 8 B target: real bytes too.
  const bool real_bytes = (lat || frontends::perftest_is_atomic(cfg.test)) && max_size <= kMaxRealBytes;
  const sdp::DataMode mode = real_bytes ? sdp::DataMode::Bytes : sdp::DataMode::Reference;
  // READ and atomics: each QP pair takes -o outstanding each way (perftest: the client's
  // max_rd_atomic is the server's out_reads, the server's max_dest_rd_atomic its own), each side's
  // out_reads resolved against its own device; the smaller, so that both QPs accept it.
  const bool rd = frontends::perftest_is_read_or_atomic(cfg.test);
  QpPairShape shape;
  // -c UC, -c UD: perftest's ctx_init creates IBV_QPT_UC or IBV_QPT_UD QPs (UD: Q_Key DEF_QKEY,
  // each side's address handle to the other's LID).
  const bool ud = cfg.connection == frontends::PerftestConnection::Ud;
  if (cfg.connection == frontends::PerftestConnection::Uc) shape.type = hca::QpType::Uc;
  // perftest's send CQ (tx_depth) and receive CQ (rx_depth) as the one simulated CQ
  // (perftest_resources.c create_reg_cqs).
  shape.cq_entries = cfg.tx_depth + cfg.rx_depth;
  if (ud) {
    shape.type = hca::QpType::Ud;
    shape.qkey = kPerftestQkey;
  }
  if (rd)
    shape.rd_atomic = static_cast<uint8_t>(std::min(resolve_out_reads(cfg.out_reads, A.max_qp_rd_atom),
                                                    resolve_out_reads(cfg.out_reads, B.max_qp_rd_atom)));
  const std::unique_ptr<ChromeTrace> trace = make_trace(cfg, local, remote);  // outlives the bed
  // The bed's own first pair is RC with the device's rd_atomic: READ, atomics and UC make theirs.
  const bool own_pairs = rd || cfg.connection != frontends::PerftestConnection::Rc;
  TwoHostBed bed(A, B, cfg.seed, mode, !own_pairs);
  if (trace) bed.set_trace(trace.get());
  std::vector<std::pair<Qp*, Qp*>> pairs;
  if (!own_pairs) pairs.emplace_back(&bed.qp(0), &bed.qp(1));
  while (pairs.size() < (lat ? 1u : cfg.num_qps)) pairs.push_back(bed.add_qp_pair(shape));
  bed.set_faults(cfg.faults, cfg.retry);
  std::array<Side, 2> side;
  for (int i = 0; i < 2; ++i) {
    Side& s = side[static_cast<size_t>(i)];
    s.host = &bed.host(i);
    s.params = i == 0 ? &A : &B;
    s.core = s.params->app_cpu;
    s.half = max_size;
    s.grh_room = ud ? hca::kGrhBytes : 0;
    s.real_bytes = real_bytes;
    // Each host's noise has its own stream, derived from the seed and the side.
    s.noise = std::make_unique<model::CpuNoise>(s.params->noise, cfg.seed * 2 + static_cast<uint64_t>(i));
    Side* sp = &s;
    for (const auto& pair : pairs) {
      Lane l;
      l.qp = i == 0 ? pair.first : pair.second;
      l.buf = s.host->memory().allocate(2 * max_size + s.grh_room, mode);
      l.key = l.qp->reg_mr(l.buf, 2 * max_size + s.grh_room,
                           sdp::kLocalWrite | sdp::kRemoteWrite | sdp::kRemoteRead | (rd ? sdp::kRemoteAtomic : 0u));
      // perftest: rnr_retry 7 (qp.rnr_retry), min_rnr_timer 12 = 0.64 ms (IBA table 45); UC
      // has no RNR NAK (a SEND without a receive is dropped, IBA 9.7.5.2.2).
      if (cfg.connection == frontends::PerftestConnection::Rc) l.qp->set_rnr(cfg.retry.rnr_retry, hca::kDefaultMinRnrTimer);
      // The completion event (-e), in the interrupt handler's context: the channel gets it and
      // the sleeping thread is woken (ib_uverbs_comp_handler's wake_up_interruptible).
      const size_t lane = s.lanes.size();
      l.qp->set_handlers([sp] {
        ++sp->cqes_pending;
        ++sp->cqes_written;
        sp->cqe_wq.notify_all();
      }, [sp, lane, qp = l.qp] {
        sp->events.push_back(lane);
        sp->event_from_send_cq.push_back(qp->take_event_from_send_cq());
        sp->host->wake(sp->event_wq);
      });
      // ib_send_lat: a send CQ and a receive CQ on one completion channel (ctx_init).
      if (cfg.use_event && cfg.test == frontends::PerftestTest::SendLat) l.qp->separate_send_cq_events();
      if (cfg.test == frontends::PerftestTest::WriteLat)
        l.qp->set_write_handler([sp](sdp::Addr, uint64_t) {
          sp->landed_ns.push_back(now_ns());
          sp->landed_wq.notify_all();
        });
      s.lanes.push_back(l);
    }
  }

  res.points.resize(cfg.sizes.size());
  for (size_t k = 0; k < cfg.sizes.size(); ++k) {
    res.points[k].bytes = cfg.sizes[k];
    res.points[k].iterations = cfg.iterations;
  }
  if (cfg.duplex) res.remote_points = res.points;  // -b: the server's own report
  // The two sides meet before every size (perftest's ctx_hand_shake over its TCP socket);
  // the exchange is not timed.
  int ready = 0;
  SimWaitQueue barrier;
  auto meet = [&](int round) {
    yield_rounds(2);
    ++ready;
    barrier.notify_all();
    while (ready < 2 * round) barrier.wait();
    yield_rounds(1);
  };
  const std::string tool(frontends::perftest_tool_name(cfg.test));
  const std::array<std::string, 2> who{tool + " client", tool + " server"};
  std::vector<std::array<HcaBusy, 2>> busy(cfg.sizes.size());  // --explain, per size
  for (int i = 0; i < 2; ++i) {
    const bool client = i == 0;
    bed.scheduler().spawn(who[static_cast<size_t>(i)], [&, i, client] {
      const char* me = who[static_cast<size_t>(i)].c_str();
      bed.failure().guard(me, [&] {
        Side& s = side[static_cast<size_t>(i)];
        const Side& peer = side[static_cast<size_t>(1 - i)];
        s.host->bind_current(s.core);
        // -e: the CQs are armed once before the test (read_lat.c, send_bw.c ... main:
        // ibv_req_notify_cq), re-armed by every event read (await_event).
        if (cfg.use_event)
          for (const Lane& l : s.lanes) {
            l.qp->req_notify_cq();
            if (cfg.test == frontends::PerftestTest::SendLat) l.qp->req_notify_send_cq();
          }
        for (size_t k = 0; k < cfg.sizes.size(); ++k) {
          const uint64_t size = cfg.sizes[k];
          SendBwServer receiver(s, cfg, size);
          // ib_send_bw: the server posts its receives before the handshake, with -b both sides.
          if (cfg.test == frontends::PerftestTest::SendBw && (!client || cfg.duplex)) receiver.post_initial();
          // ib_send_lat: both sides post their first receives before the handshake (rx_depth is
          // at most the iterations only in iteration mode).
          if (cfg.test == frontends::PerftestTest::SendLat) {
            const uint64_t first = duration ? cfg.rx_depth : std::min<uint64_t>(cfg.rx_depth, cfg.iterations);
            for (uint64_t r = 0; r < first; ++r) post_recv_one(s, size, r);
          }
          DurationClock clock(cfg);  // the latency loops' duration mode (-D)
          uint64_t sampled = 0;
          meet(static_cast<int>(k) + 1);
          if (trace && client && k == 0) trace->set_origin(now_ns());  // the measured iterations start
          frontends::PerftestPoint& point = res.points[k];
          // -b: the server measures its own stream, the report perftest exchanges. Without -b
          // there are no remote points and the server measures nothing of its own.
          frontends::PerftestPoint& own = client || !cfg.duplex ? point : res.remote_points[k];
          // --explain: the client measures each size from its first post to its last completion.
          const bool measure = cfg.explain && client;
          std::vector<frontends::LinkUse> links0;
          std::array<std::vector<model::CoreAccount>, 2> acc0;
          double t0 = 0;
          if (measure) {
            links0 = bed.link_use();
            for (int h = 0; h < 2; ++h) {
              acc0[static_cast<size_t>(h)] = bed.host(h).accounts();
              busy[k][static_cast<size_t>(h)] = HcaBusy{};
              bed.hca(h).measure(&busy[k][static_cast<size_t>(h)]);
            }
            t0 = now_ns();
          }
          switch (cfg.test) {
            case frontends::PerftestTest::WriteLat:
              latency_loop(s, peer, client, size, duration ? 0 : cfg.iterations, size <= cfg.inline_size,
                           client ? &point.tposted_ns : nullptr, me, clock, sampled);
              if (duration && client) clock.report(point, sampled);
              break;
            case frontends::PerftestTest::WriteBw:  // the server only waits for the end (perftest's final handshake)
            case frontends::PerftestTest::ReadBw:  // ... unless -b: then it runs the same stream
            case frontends::PerftestTest::AtomicBw:
              if (client || cfg.duplex) bandwidth_client(s, peer, cfg, size, own, me);
              break;
            case frontends::PerftestTest::SendBw:
              if (cfg.duplex)
                bidirectional_send(s, peer, client, cfg, size, receiver, own, me);
              else if (client)
                bandwidth_client(s, peer, cfg, size, point, me);
              else
                receiver.serve(me);
              break;
            case frontends::PerftestTest::SendLat:
              send_latency_loop(s, peer, client, cfg, size, client ? &point.tposted_ns : nullptr, me, clock, sampled);
              if (duration && client) clock.report(point, sampled);
              break;
            case frontends::PerftestTest::ReadLat:
            case frontends::PerftestTest::AtomicLat:
              if (client) read_latency_loop(s, peer, cfg, size, point, me);
              break;
          }
          if (measure) {
            frontends::ExplainMeasure m;
            m.interval_s = (now_ns() - t0) * 1e-9;
            m.links = bed.link_use();
            for (size_t l = 0; l < m.links.size(); ++l) m.links[l].busy_s -= links0[l].busy_s;
            for (int h = 0; h < 2; ++h) {
              const auto hi = static_cast<size_t>(h);
              bed.hca(h).measure(nullptr);
              m.hca[hi] = busy[k][hi].use();
              const auto& acc = bed.host(h).accounts();
              for (size_t c = 0; c < acc.size(); ++c) {
                frontends::CoreProfile p;
                p.core = static_cast<int>(c);
                for (size_t a = 0; a < model::kActivityCount; ++a)
                  p.busy_ns.emplace_back(std::string(model::activity_name(static_cast<model::Activity>(a))),
                                         acc[c].busy_ns[a] - acc0[hi][c].busy_ns[a]);
                m.cores[hi].push_back(std::move(p));
              }
            }
            m.host_role = {"client", "server"};
            bed.describe(m, {side[0].core, side[1].core});
            point.explain = std::move(m);
          }
        }
        meet(static_cast<int>(cfg.sizes.size()) + 1);
      });
    });
  }
  // The watchdog catches a stalled protocol. When every actor waits, SimGrid jumps straight to
  // the watchdog's time, so a generous bound costs no wall-clock time: 1 s per message plus
  // 1 us per byte of simulated time, at least a day.
  double limit_s = 86400 + cfg.duration_s;
  const double messages = static_cast<double>(cfg.iterations) * (lat ? 1 : cfg.num_qps);
  if (!duration)
    for (uint64_t size : cfg.sizes) limit_s += messages * (1 + static_cast<double>(size) * 1e-6);
  bed.run(limit_s);
  if (bed.failure().failed()) {
    if (side[0].event_stall || side[1].event_stall) throw PerftestWaitsForEver(bed.failure().message());
    // UC and UD drop a SEND that finds no receive posted; perftest's server then waits for it.
    if (cfg.connection != frontends::PerftestConnection::Rc && frontends::perftest_is_send(cfg.test))
      throw PerftestWaitsForEver(fmt::format(
          "{} server: -c {}: a SEND found no receive posted and was dropped (receive depth {}); perftest's server "
          "waits for the lost messages for ever (give a larger -r)",
          frontends::perftest_tool_name(cfg.test), frontends::perftest_connection_name(cfg.connection), cfg.rx_depth));
    throw std::runtime_error(bed.failure().message());
  }
  for (const auto* points : {&res.points, &res.remote_points})
    for (const auto& p : *points)
      if (duration ? !(p.sample_end_ns > p.sample_start_ns) : p.tposted_ns.size() != static_cast<uint64_t>(messages))
        throw std::runtime_error("simulation ended before the test finished");

  if (cfg.test == frontends::PerftestTest::WriteLat && cfg.explain)
    for (auto& p : res.points) {
      // perftest's t_typical is half a round trip: the mean of the two ways' stages.
      const bool inl = p.bytes <= cfg.inline_size;
      auto ab = one_way_stages(A, B, p.bytes, inl);
      const auto ba = one_way_stages(B, A, p.bytes, inl);
      for (size_t i = 0; i < ab.size(); ++i) ab[i].ns = (ab[i].ns + ba[i].ns) / 2;
      p.latency_stages = std::move(ab);
    }
  res.blueflame_posts = bed.hca(0).blueflame_posts();
  res.doorbell_posts = bed.hca(0).doorbell_posts();
  res.simgrid_activities = bed.stats().activities();
  res.simgrid_time_steps = bed.stats().time_steps;
  bed.scheduler().stats().copy_to(res);
  res.link_busy_s = bed.link_busy_s();
  res.max_rss_kb = max_rss_kb();
  res.simulated_s = now_ns() * 1e-9;
  res.faults_configured = cfg.faults.any();
  res.local_faults = bed.hca(0).fault_stats();
  res.remote_faults = bed.hca(1).fault_stats();
  if (trace)
    res.trace_json = trace->json({{"tool", std::string(frontends::perftest_tool_name(cfg.test))},
                                  {"local_platform", local.name()},
                                  {"remote_platform", remote.name()}});
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return res;
}

}  // namespace hcasim::sim
