#include "sim/pingpong_sim.h"

#include <chrono>
#include <algorithm>
#include <array>
#include <span>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "frontends/config_error.h"
#include "model/mlx4.h"
#include "sim/testbed.h"

namespace hcasim::sim {

namespace {

using frontends::PingpongProgram;

/// rc_pingpong.c: the wr_id of every receive and of every send.
constexpr uint64_t kRecvWrid = 1, kSendWrid = 2;
/// ud_pingpong.c: the GRH room at the head of each receive buffer (IBA 11.4.1.2), bytes.
constexpr uint32_t kGrh = 40;
/// ud_pingpong.c: the Q_Key of both QPs.
constexpr uint32_t kQkey = 0x11111111;
/// struct mlx4_wqe_datagram_seg (providers/mlx4/wqe.h), bytes: a UD send WQE's address vector.
constexpr uint32_t kMlx4DatagramSegBytes = 48;
/// The largest message -c runs with: its buffers hold real bytes (sdp/memory.h), bytes.
constexpr uint64_t kMaxValidateBytes = uint64_t{64} << 20;
/// The page the -c check marks (sysconf(_SC_PAGESIZE) on x86_64), bytes.
constexpr uint32_t kPageBytes = 4096;

/// The cap.max_inline_data libmlx4 reports for the programs' QP (one send SGE, no inline data
/// asked): mlx4_calc_sq_wqe_size picks the smallest WQE of at least 64 B that holds the control
/// segment and, for RC and UC, a remote-address segment and an atomic's segments (64 B), for UD
/// the datagram segment and a data segment (16 + 48 + 16 = 80 B: 128 B); mlx4_set_sq_sizes leaves
/// the room after the control and address segments, less a 4 B inline header per 64 B: 28 B on
/// RC and UC, 60 B on UD. Never above the HCA's hca.max_inline_data.
uint32_t qp_max_inline(PingpongProgram p, uint32_t hca_max_inline) {
  uint32_t v = 0;
  if (p == PingpongProgram::Ud) {
    const uint32_t room = 128 - model::mlx4::kCtrlSegBytes - kMlx4DatagramSegBytes;
    v = room - model::mlx4::kInlineSegHeaderBytes * ((room + model::mlx4::kInlineAlign - 1) / model::mlx4::kInlineAlign);
  } else {
    v = model::mlx4::max_inline_data(model::mlx4::kWqeBasicBlock);
  }
  return std::min(v, hca_max_inline);
}

/// srq_pingpong.c: the QPs it may create (MAX_QP); -q must stay below it.
constexpr uint32_t kSrqMaxQp = 256;

/// One side of the ping-pong: rc_pingpong.c's pingpong_context and main()'s counters
/// (srq_pingpong.c: its QPs on one SRQ and one CQ, a pending mask per QP).
struct Side {
  SimHost* host = nullptr;
  const HostParams* params = nullptr;
  std::vector<Qp*> qps;  ///< rc, uc, ud: one
  Srq* srq = nullptr;    ///< srq: the receives of every QP
  sdp::Addr buf = 0;
  uint32_t key = 0;
  bool inline_sends = false;
  SimWaitQueue cqe_wq;    ///< notified by every CQE written (the polling loop re-checks)
  SimWaitQueue chan_wq;   ///< the completion channel: a thread sleeps in ibv_get_cq_event on it
  uint64_t events_queued = 0;  ///< completion events on the channel not yet read
  int routs = 0, rcnt = 0, scnt = 0;
  std::vector<unsigned> pending;  ///< per QP
  frontends::PingpongSide out;
};

/// The checks of check_pingpong on the hosts' parameters; the setup facts.
frontends::PingpongResult check_config(const HostParams& A, const HostParams& B, const frontends::PingpongConfig& c) {
  const bool srq = c.program == PingpongProgram::Srq;
  if (srq && (c.num_qp == 0 || c.num_qp >= kSrqMaxQp))
    throw InputError(fmt::format("PingpongConfig: num_qp {} is not in 1..{}", c.num_qp, kSrqMaxQp - 1));
  if (srq && c.num_qp > c.rx_depth)
    throw InputError(fmt::format("PingpongConfig: rx_depth {} is below num_qp {}", c.rx_depth, c.num_qp));
  if (!srq && c.num_qp != 1) throw InputError("PingpongConfig: num_qp other than 1 without an SRQ");
  if (c.size == 0) throw InputError("PingpongConfig: a message size of 0 B");
  if (c.iters == 0) throw InputError("PingpongConfig: iters must be >= 1");
  const uint64_t max_msg = std::min(A.max_msg_size, B.max_msg_size);
  if (c.size > max_msg)
    throw frontends::ConfigError("size", fmt::format("{} B is above the HCA's max message size {} B (hca.max_msg_size)",
                                                     c.size, max_msg));
  if (c.validate && c.size > kMaxValidateBytes)
    throw frontends::ConfigError("size", fmt::format("{} B: -c compares real bytes, at most {} B per buffer here",
                                                     c.size, kMaxValidateBytes));
  const std::array<const HostParams*, 2> hosts{&A, &B};
  const std::array<const char*, 2> who{"client", "server"};
  for (size_t i = 0; i < 2; ++i) {
    const HostParams& h = *hosts[i];
    if (c.program == PingpongProgram::Ud && c.size > h.ib.mtu)
      // ud_pingpong.c pp_init_ctx: "Requested size larger than port MTU (%d)".
      throw frontends::ConfigError("size", fmt::format("{} B is larger than the {}'s port MTU {} B (ib.mtu): a UD "
                                                       "message is one datagram",
                                                       c.size, who[i], h.ib.mtu));
    if (c.program != PingpongProgram::Ud && c.path_mtu > h.ib.mtu)
      // ibv_modify_qp to RTR refuses a path MTU above the port's active MTU ("Failed to modify QP to RTR").
      throw frontends::ConfigError("path_mtu", fmt::format("{} B is above the {}'s port MTU {} B (ib.mtu)", c.path_mtu,
                                                           who[i], h.ib.mtu));
    if (c.rx_depth > h.qp_depth)  // srq: the SRQ's max_wr, which mlx4 bounds as a QP's
      throw frontends::ConfigError("rx_depth", fmt::format("{} receives are above the {}'s hca.max_qp_wr {}", c.rx_depth,
                                                           who[i], h.qp_depth));
    // ibv_create_cq(ctx, rx_depth + 1, ...); srq_pingpong.c: rx_depth + num_qp.
    if (uint64_t{c.rx_depth} + c.num_qp > h.cq_entries)
      throw frontends::ConfigError("rx_depth", fmt::format("a CQ of {} + {} entries is above the {}'s hca.cq_entries {}",
                                                           c.rx_depth, c.num_qp, who[i], h.cq_entries));
  }
  frontends::PingpongResult r;
  r.max_inline_data = qp_max_inline(c.program, A.max_inline_data);
  r.inline_sends = r.max_inline_data >= c.size;
  r.path_mtu = c.program == PingpongProgram::Ud ? std::min(A.ib.mtu, B.ib.mtu) : c.path_mtu;
  return r;
}

}  // namespace

frontends::PingpongResult check_pingpong(const model::Platform& local, const model::Platform& remote,
                                         const frontends::PingpongConfig& config) {
  return check_config(read_host_params(local), read_host_params(remote), config);
}

frontends::PingpongResult run_pingpong(const model::Platform& local, const model::Platform& remote,
                                       const frontends::PingpongConfig& cfg) {
  const auto wall0 = std::chrono::steady_clock::now();
  HostParams A = read_host_params(local);
  HostParams B = read_host_params(remote);
  frontends::PingpongResult res = check_config(A, B, cfg);
  const bool ud = cfg.program == PingpongProgram::Ud;
  const bool srq = cfg.program == PingpongProgram::Srq;
  // RC, UC: the QPs' path MTU is -m (pp_connect_ctx), below the ports' MTU: the bed's link trains to it.
  if (!ud) A.ib.mtu = B.ib.mtu = cfg.path_mtu;

  // -c reads what arrived: real bytes. Otherwise the data moves by reference (sdp/memory.h).
  const sdp::DataMode mode = cfg.validate ? sdp::DataMode::Bytes : sdp::DataMode::Reference;
  TwoHostBed bed(A, B, cfg.seed, mode, false);
  std::array<std::vector<Qp*>, 2> qps;
  std::array<Srq*, 2> srqs{};
  if (!srq) {
    QpPairShape shape;
    shape.type = ud ? hca::QpType::Ud : cfg.program == PingpongProgram::Uc ? hca::QpType::Uc : hca::QpType::Rc;
    shape.max_send_wr = 1;                // pp_init_ctx: .max_send_wr = 1
    shape.max_recv_wr = cfg.rx_depth;     // .max_recv_wr = rx_depth
    shape.cq_entries = cfg.rx_depth + 1;  // ibv_create_cq(ctx, rx_depth + 1, ...): sends and receives
    shape.qkey = kQkey;
    shape.rd_atomic = 1;  // pp_connect_ctx: max_dest_rd_atomic 1, max_rd_atomic 1
    const auto [qa, qb] = bed.add_qp_pair(shape);
    qps[0].push_back(qa);
    qps[1].push_back(qb);
  } else {
    // srq_pingpong.c pp_init_ctx, each side: one PD, a CQ of rx_depth + num_qp entries, an SRQ
    // of max_wr rx_depth, then num_qp RC QPs (max_send_wr 1) on that CQ and SRQ; pp_connect_ctx
    // joins QP i to the peer's QP i (max_rd_atomic and max_dest_rd_atomic 1).
    for (int i = 0; i < 2; ++i) {
      Hca& hca = bed.hca(i);
      const uint32_t pd = hca.alloc_pd();
      srqs[static_cast<size_t>(i)] = &hca.create_srq(pd, cfg.rx_depth);
      auto& v = qps[static_cast<size_t>(i)];
      for (uint32_t k = 0; k < cfg.num_qp; ++k) {
        Qp& q = k == 0 ? hca.create_qp(pd, 1, 0, cfg.rx_depth + cfg.num_qp) : hca.create_qp_on_cq(pd, 1, 0, *v.front());
        q.set_srq(*srqs[static_cast<size_t>(i)]);
        v.push_back(&q);
      }
    }
    for (uint32_t k = 0; k < cfg.num_qp; ++k) Qp::connect(*qps[0][k], *qps[1][k], 1);
  }
  bed.set_faults(cfg.faults, cfg.retry);

  const uint64_t buf_bytes = uint64_t{cfg.size} + (ud ? kGrh : 0);  // memalign(page_size, size [+ 40])
  std::array<Side, 2> side;
  for (int i = 0; i < 2; ++i) {
    Side& s = side[static_cast<size_t>(i)];
    s.host = &bed.host(i);
    s.params = i == 0 ? &A : &B;
    s.qps = qps[static_cast<size_t>(i)];
    s.srq = srqs[static_cast<size_t>(i)];
    s.pending.assign(s.qps.size(), 0);
    s.buf = s.host->memory().allocate(buf_bytes, mode);
    s.key = s.qps.front()->reg_mr(s.buf, buf_bytes, sdp::kLocalWrite);
    s.inline_sends = qp_max_inline(cfg.program, s.params->max_inline_data) >= cfg.size;
    if (cfg.validate) {  // memset(ctx->buf, 0x7b, size [+ 40]); srq_pingpong.c: memset(ctx->buf, 0, size)
      const std::vector<uint8_t> fill(buf_bytes, srq ? 0 : 0x7b);
      s.host->memory().write_bytes(s.buf, fill.data(), fill.size());
    }
    s.out.qpn = s.qps.front()->qp_num();
    Side* sp = &s;
    for (Qp* q : s.qps) {
      // rc_pingpong.c, srq_pingpong.c pp_connect_ctx: rnr_retry 7, min_rnr_timer 12.
      if (cfg.program == PingpongProgram::Rc || srq) q->set_rnr(cfg.retry.rnr_retry, 12);
      s.out.qpns.push_back(q->qp_num());
      q->set_handlers([sp] { sp->cqe_wq.notify_all(); },
                      [sp] {
                        // The interrupt handler's completion event: ib_uverbs_comp_handler queues
                        // it on the channel and wakes the thread sleeping in its read().
                        ++sp->events_queued;
                        sp->host->wake(sp->chan_wq);
                      });
    }
  }

  int ready = 0;
  SimWaitQueue barrier;
  auto meet = [&] {  // the address exchange over TCP (pp_client_exch_dest / pp_server_exch_dest): not timed
    yield_rounds(2);
    ++ready;
    barrier.notify_all();
    while (ready < 2) barrier.wait();
    yield_rounds(1);
  };
  const std::string tool = cfg.program == PingpongProgram::Ud   ? "ibv_ud_pingpong"
                           : cfg.program == PingpongProgram::Uc ? "ibv_uc_pingpong"
                           : srq                                ? "ibv_srq_pingpong"
                                                                : "ibv_rc_pingpong";
  const std::array<std::string, 2> who{tool + " client", tool + " server"};
  for (int i = 0; i < 2; ++i) {
    bed.scheduler().spawn(who[static_cast<size_t>(i)], [&, i] {
      const char* me = who[static_cast<size_t>(i)].c_str();
      bed.failure().guard(me, [&] {
        const bool client = i == 0;
        Side& s = side[static_cast<size_t>(i)];
        SimHost& h = *s.host;
        const model::CpuCosts& costs = h.costs();
        h.bind_current(s.params->app_cpu);

        // pp_post_recv: n receives of the whole buffer (ud: the GRH room and the message); srq:
        // ibv_post_srq_recv, each with libmlx4's work of a post (mlx4_post_srq_recv).
        auto post_recvs = [&](int n) {
          for (int k = 0; k < n; ++k) {
            sdp::RecvWr r;
            r.wr_id = kRecvWrid;
            r.sg[0] = {s.buf, static_cast<uint32_t>(buf_bytes), s.key};
            r.num_sge = 1;
            h.charge(model::Activity::Post, costs.user_post_ns);  // libmlx4 mlx4_post_recv, as perftest's loops
            if (s.srq != nullptr)
              s.srq->post_recv(r);
            else
              s.qps.front()->post_recv(r);
          }
        };
        // pp_post_send: one signaled SEND of size bytes (ud: from after the GRH room) on QP `k`,
        // inline when the QP's max_inline_data holds it.
        auto post_send = [&](size_t k) {
          sdp::SendWr w;
          w.wr_id = kSendWrid;
          w.opcode = sdp::WrOpcode::Send;
          w.sg[0] = {s.buf + (ud ? kGrh : 0), cfg.size, s.key};
          w.num_sge = 1;
          w.signaled = true;
          w.inline_data = s.inline_sends;
          h.charge(model::Activity::Post, costs.user_post_ns);  // libmlx4 mlx4_post_send, as perftest's loops
          s.qps[k]->post_send(w);
        };
        // ibv_req_notify_cq: libmlx4 mlx4_arm_cq writes the CQ's arm doorbell record and rings the
        // UAR's CQ doorbell with one uncached store.
        auto arm = [&] {
          h.charge(model::Activity::Completion, s.params->post.mmio.uc_store_ns);
          s.qps.front()->req_notify_cq();  // the CQ every QP of the side completes into
        };
        // rc_pingpong.c: receives are reposted when at most one is left; srq_pingpong.c: when at
        // most num_qp are (one per QP).
        const int refill_at = static_cast<int>(cfg.num_qp);
        // parse_single_wc (rc_pingpong.c; the loop body of uc_pingpong.c, ud_pingpong.c and
        // srq_pingpong.c, whose find_qp names the QP of the completion).
        auto parse = [&](const sdp::Wc& wc) {
          if (wc.status != sdp::WcStatus::Success)
            throw std::runtime_error(fmt::format("{}: Failed status {} ({}) for wr_id {}", me,
                                                 sdp::wc_status_str(wc.status), sdp::wc_status_code(wc.status),
                                                 wc.wr_id));
          size_t k = 0;
          while (k < s.qps.size() && s.qps[k]->qp_num() != wc.qp_num) ++k;
          if (k == s.qps.size())
            throw std::runtime_error(fmt::format("{}: Couldn't find QPN {:06x}", me, wc.qp_num));
          if (wc.wr_id == kSendWrid) {
            ++s.scnt;
          } else if (wc.wr_id == kRecvWrid) {
            if (--s.routs <= refill_at) {
              const int n = static_cast<int>(cfg.rx_depth) - s.routs;
              post_recvs(n);
              s.routs += n;
            }
            ++s.rcnt;
          } else {
            throw std::runtime_error(fmt::format("{}: Completion for unknown wr_id {}", me, wc.wr_id));
          }
          s.pending[k] &= ~static_cast<unsigned>(wc.wr_id);
          if (s.scnt < static_cast<int>(cfg.iters) && s.pending[k] == 0) {
            post_send(k);
            s.pending[k] = kRecvWrid | kSendWrid;
          }
        };

        post_recvs(static_cast<int>(cfg.rx_depth));
        s.routs = static_cast<int>(cfg.rx_depth);
        if (cfg.events) arm();
        meet();
        for (unsigned& p : s.pending) p = kRecvWrid;
        if (client) {
          if (cfg.validate)  // ctx->buf[i] = i / page_size % sizeof(char): 0 at each page's start
            for (uint64_t p = 0; p < cfg.size; p += kPageBytes) {
              const uint8_t zero = 0;
              h.memory().write_bytes(s.buf + (ud ? kGrh : 0) + p, &zero, 1);
            }
          for (size_t k = 0; k < s.qps.size(); ++k) {  // srq_pingpong.c: one SEND on every QP
            post_send(k);
            s.pending[k] |= kSendWrid;
          }
        }
        s.out.start_ns = h.now_ns();  // gettimeofday(&start)
        // ibv_poll_cq's array: rc_pingpong.c 2 entries, srq_pingpong.c num_qp + rx_depth.
        std::vector<sdp::Wc> wc(srq ? cfg.num_qp + cfg.rx_depth : 2);
        const std::span<sdp::Wc> wcs(wc);
        const auto iters = static_cast<int>(cfg.iters);
        while (s.rcnt < iters || s.scnt < iters) {
          int ne = 0;
          if (cfg.events) {
            // ibv_get_cq_event: a read() on the channel's fd, asleep until an event is queued.
            h.charge(model::Activity::Syscall, costs.syscall_ns);
            h.sleep(s.chan_wq, [&] { return s.events_queued > 0; });
            --s.events_queued;
            ++s.out.cq_events;
            arm();
            ne = s.qps.front()->poll_cq(wcs);  // once: ne may be 0
          } else {
            // do { ne = ibv_poll_cq(cq, 2, wc); } while (ne < 1): the CPU spins on the CQ.
            h.spin(s.cqe_wq, [&] { return ne > 0 || (ne = s.qps.front()->poll_cq(wcs)) > 0; },
                   std::numeric_limits<double>::infinity());
          }
          h.charge(model::Activity::Completion, costs.user_poll_cq_ns * ne);
          for (int k = 0; k < ne; ++k) parse(wc[static_cast<size_t>(k)]);
        }
        s.out.end_ns = h.now_ns();  // gettimeofday(&end)
        if (!client && cfg.validate)  // the server checks the first byte of every page it received into
          for (uint64_t p = 0; p < cfg.size; p += kPageBytes) {
            uint8_t b = 0;
            h.memory().read_bytes(s.buf + (ud ? kGrh : 0) + p, &b, 1);
            if (b != 0) s.out.invalid_pages.push_back(static_cast<uint32_t>(p / kPageBytes));
          }
        h.flush();
      });
    });
  }
  // The watchdog: 1 s per exchange plus 1 us per byte of simulated time, at least a day.
  const double limit_s = 86400 + static_cast<double>(cfg.iters) * (1 + static_cast<double>(cfg.size) * 1e-6);
  bed.run(limit_s);
  if (bed.failure().failed()) throw std::runtime_error(bed.failure().message());
  for (const Side& s : side)
    if (s.rcnt < static_cast<int>(cfg.iters) || s.scnt < static_cast<int>(cfg.iters))
      throw std::runtime_error("simulation ended before the ping-pong finished");
  for (int i = 0; i < 2; ++i) {
    res.side[static_cast<size_t>(i)] = side[static_cast<size_t>(i)].out;
    res.side[static_cast<size_t>(i)].interrupts = bed.hca(i).interrupts();
  }
  res.blueflame_posts = bed.hca(0).blueflame_posts();
  res.doorbell_posts = bed.hca(0).doorbell_posts();
  res.simulated_s = now_ns() * 1e-9;
  res.max_rss_kb = max_rss_kb();
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  res.faults_configured = cfg.faults.any();
  res.local_faults = bed.hca(0).fault_stats();
  res.remote_faults = bed.hca(1).fault_stats();
  return res;
}

}  // namespace hcasim::sim
