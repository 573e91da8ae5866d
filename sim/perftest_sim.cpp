#include "sim/perftest_sim.h"

#include <chrono>
#include <cmath>
#include <deque>
#include <limits>
#include <memory>

#include <fmt/format.h>
#include <simgrid/s4u.hpp>

#include "model/noise.h"
#include "sim/testbed.h"

namespace hcasim::sim {

namespace s4u = simgrid::s4u;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// One side of a perftest run: its host, QP, buffers and the state its loops wait on.
struct Side {
  SimHost* host = nullptr;
  SimQp* qp = nullptr;
  const HostParams* params = nullptr;
  int core = 0;
  sdp::Addr buf = 0;            ///< perftest's buffer: [0, half) sent from, [half, 2 half) written by the peer
  uint64_t half = 0;            ///< bytes per half (the largest message size)
  uint32_t key = 0;             ///< lkey = rkey of the buffer
  SimWaitQueue wq;              ///< woken by CQEs and by the peer's RDMA WRITEs landing
  std::deque<double> landed_ns; ///< landing times of the peer's WRITEs not yet noticed
  std::unique_ptr<model::CpuNoise> noise;
};

/// Busy-polls until `ready` (the CPU spins: perftest never sleeps).
void spin_until(Side& s, const std::function<bool()>& ready) { s.host->spin(s.wq, ready, kInf); }

/// Polls the send CQ for one completion (perftest's do { ibv_poll_cq } while (ne == 0)),
/// and fails on an error status as perftest does ("Completion with error").
void poll_one(Side& s, const char* who) {
  std::array<sdp::Wc, 1> wc{};
  bool got = false;  // the readiness test consumes the CQE, so it must run poll_cq only until it succeeds
  spin_until(s, [&] { return got = got || s.qp->poll_cq(wc) > 0; });
  s.host->charge(model::Activity::Completion, s.host->costs().user_poll_cq_ns);
  if (wc[0].status != sdp::WcStatus::Success)
    throw std::runtime_error(fmt::format("{}: completion with error (status {})", who, static_cast<int>(wc[0].status)));
}

/// Waits for the peer's WRITE number `rcnt` to be visible at the last byte of the message in
/// this side's buffer (perftest: while (*poll_buf != (char)rcnt);). The loop notices it one
/// poll turn after it lands (a uniformly distributed phase of cpu.poll_miss), or when the
/// CPU is back from a tick or an interference window.
void wait_for_byte(Side& s, uint64_t size, uint64_t rcnt, const char* who) {
  spin_until(s, [&] { return !s.landed_ns.empty(); });
  const double landed = s.landed_ns.front();
  s.landed_ns.pop_front();
  double seen = landed + s.noise->uniform() * s.host->costs().poll_miss_ns;
  seen = s.noise->available_at(std::max(seen, now_ns()));
  if (seen > now_ns()) s4u::this_actor::sleep_until(to_s(seen));
  uint8_t byte = 0;
  s.host->memory().read_bytes(s.buf + s.half + size - 1, &byte, 1);
  if (byte != static_cast<uint8_t>(rcnt))
    throw std::runtime_error(fmt::format("{}: poll byte is {}, expected {} (iteration {})", who, byte,
                                         static_cast<uint8_t>(rcnt), rcnt));
}

/// Posts the RDMA WRITE of `size` bytes from this side's first half to the peer's second
/// half, after writing the iteration number into its last byte (perftest: *post_buf = ++scnt).
void post_write(Side& s, const Side& peer, uint64_t size, uint64_t scnt, bool inline_data, bool signaled) {
  const uint8_t byte = static_cast<uint8_t>(scnt);
  s.host->memory().write_bytes(s.buf + size - 1, &byte, 1);
  s.host->charge(model::Activity::Post, s.host->costs().user_post_ns);
  sdp::SendWr wr;
  wr.wr_id = scnt;
  wr.opcode = sdp::WrOpcode::RdmaWrite;
  wr.sg[0] = {s.buf, static_cast<uint32_t>(size), s.key};
  wr.num_sge = 1;
  wr.signaled = signaled;
  wr.inline_data = inline_data;
  wr.remote_addr = peer.buf + peer.half;
  wr.rkey = peer.key;
  s.qp->post_send(wr);
}

/// perftest write_lat's run_iter_lat_write for one size, on one side. The client records
/// tposted[] before each post.
void latency_loop(Side& s, const Side& peer, bool client, uint64_t size, uint64_t iters, bool inline_data,
                  std::vector<double>* tposted, const char* who) {
  uint64_t scnt = 0, rcnt = 0, ccnt = 0;
  while (scnt < iters || ccnt < iters || rcnt < iters) {
    if (rcnt < iters && !(scnt < 1 && client)) {
      ++rcnt;
      wait_for_byte(s, size, rcnt, who);
    }
    if (scnt < iters) {
      if (tposted != nullptr) tposted->push_back(now_ns());
      ++scnt;
      post_write(s, peer, size, scnt, inline_data, true);
    }
    if (ccnt < iters) {
      poll_one(s, who);
      ++ccnt;
    }
  }
  s.host->flush();
}

}  // namespace

PerftestResult run_perftest(const model::Platform& local, const model::Platform& remote, const PerftestConfig& cfg) {
  const HostParams A = read_host_params(local);
  const HostParams B = read_host_params(remote);
  if (cfg.sizes.empty()) throw InputError("perftest: no message size");
  uint64_t max_size = 0;
  for (uint64_t size : cfg.sizes) {
    if (size == 0) throw InputError("-s: message size must be > 0");
    const uint64_t limit = std::min(A.max_msg_size, B.max_msg_size);
    if (size > limit)
      throw InputError(fmt::format("-s: {} B is above the HCA's max message size {} B (hca.max_msg_size)", size, limit));
    max_size = std::max(max_size, size);
  }
  if (cfg.test != PerftestTest::WriteLat)
    throw InputError("perftest: only ib_write_lat is simulated so far");
  if (cfg.iterations < 2) throw InputError(fmt::format("-n: {} iterations; ib_write_lat needs at least 2", cfg.iterations));
  const uint32_t max_inline = std::min(A.max_inline_data, B.max_inline_data);
  if (cfg.inline_size > max_inline)
    throw InputError(fmt::format("-I: inline size {} B is above the HCA's max_inline_data {} B (hca.max_inline_data)",
                                 cfg.inline_size, max_inline));

  PerftestResult res;
  res.max_inline_data = cfg.inline_size;
  res.mtu = A.ib.mtu;
  res.blueflame = A.post.blueflame;
  res.write_combining = A.post.mmio.write_combining;

  const auto wall0 = std::chrono::steady_clock::now();
  TwoHostBed bed(A, B, cfg.seed, sdp::DataMode::Bytes);
  std::array<Side, 2> side;
  for (int i = 0; i < 2; ++i) {
    Side& s = side[static_cast<size_t>(i)];
    s.host = &bed.host(i);
    s.qp = &bed.qp(i);
    s.params = i == 0 ? &A : &B;
    s.core = s.params->app_cpu;
    s.half = max_size;
    s.buf = s.host->memory().allocate(2 * max_size, sdp::DataMode::Bytes);
    s.key = s.qp->reg_mr(s.buf, 2 * max_size, sdp::kLocalWrite | sdp::kRemoteWrite | sdp::kRemoteRead);
    // Each host's noise has its own stream, derived from the seed and the side.
    s.noise = std::make_unique<model::CpuNoise>(s.params->noise, cfg.seed * 2 + static_cast<uint64_t>(i));
    Side* sp = &s;
    s.qp->set_handlers([sp] { sp->wq.cv->notify_all(); }, [] {});
    s.qp->set_write_handler([sp](sdp::Addr, uint64_t) {
      sp->landed_ns.push_back(now_ns());
      sp->wq.cv->notify_all();
    });
  }

  res.points.resize(cfg.sizes.size());
  for (size_t k = 0; k < cfg.sizes.size(); ++k) {
    res.points[k].bytes = cfg.sizes[k];
    res.points[k].iterations = cfg.iterations;
    res.points[k].tposted_ns.reserve(cfg.iterations);
  }
  // The two sides meet before every size (perftest's ctx_hand_shake over its TCP socket);
  // the exchange is not timed.
  int ready = 0;
  SimWaitQueue barrier;
  auto meet = [&](int round) {
    std::unique_lock<s4u::Mutex> lock(*barrier.mutex);
    ++ready;
    barrier.cv->notify_all();
    while (ready < 2 * round) barrier.cv->wait(lock);
  };
  for (int i = 0; i < 2; ++i) {
    const bool client = i == 0;
    s4u::Actor::create(client ? "ib_write_lat-client" : "ib_write_lat-server", bed.cpu_node(i), [&, i, client] {
      const char* who = client ? "ib_write_lat client" : "ib_write_lat server";
      bed.failure().guard(who, [&] {
        Side& s = side[static_cast<size_t>(i)];
        s.host->bind_current(s.core);
        for (size_t k = 0; k < cfg.sizes.size(); ++k) {
          meet(static_cast<int>(k) + 1);
          const uint64_t size = cfg.sizes[k];
          latency_loop(s, side[static_cast<size_t>(1 - i)], client, size, cfg.iterations, size <= cfg.inline_size,
                       client ? &res.points[k].tposted_ns : nullptr, who);
        }
      });
    });
  }
  // A generous bound: every exchange below 1 ms of simulated time.
  double limit_s = 10;
  for (uint64_t size : cfg.sizes) limit_s += static_cast<double>(cfg.iterations) * (1e-3 + static_cast<double>(size) * 1e-8);
  bed.run(limit_s);
  if (bed.failure().failed()) throw std::runtime_error(bed.failure().message());
  for (const auto& p : res.points)
    if (p.tposted_ns.size() != cfg.iterations) throw std::runtime_error("simulation ended before the test finished");

  res.blueflame_posts = bed.hca(0).blueflame_posts();
  res.doorbell_posts = bed.hca(0).doorbell_posts();
  res.simgrid_activities = bed.counter().count;
  res.simulated_s = now_ns() * 1e-9;
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return res;
}

}  // namespace hcasim::sim
