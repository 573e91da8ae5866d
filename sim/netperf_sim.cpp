#include "sim/netperf_sim.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <memory>

#include <fmt/format.h>
#include <zlib.h>

#include "frontends/config_error.h"
#include "model/cpu.h"
#include "model/netstack.h"
#include "sdp/socket.h"
#include "sim/chrome_trace.h"
#include "sim/testbed.h"
#include "util/steady_state.h"

namespace hcasim::sim {

namespace {

/// The sender's and receiver's counters at one instant.
struct Counts {
  uint64_t sent = 0, received = 0, send_calls = 0, recv_calls = 0;
};

/// What a steady measurement reports: its end (simulated ns), what moved in it, each host's CPU
/// accounts and the links' busy times.
struct Snapshot {
  double t_ns = 0;
  Counts counts;
  std::vector<model::CoreAccount> local, remote;
  std::vector<std::pair<std::string, double>> link_busy_s;
};

/// Busy time of all of a host's cores, ns.
double busy_ns(const std::vector<model::CoreAccount>& cores) {
  double sum = 0;
  for (const auto& c : cores) sum += c.total_ns();
  return sum;
}

/// A host's CPU accounts over a measured interval of `elapsed_ns` with the timer tick added
/// (host.timer_hz x timer_tick). The tick interrupts whatever runs: on a core that was busy the
/// whole interval it takes its time from the polling, else from the tick's own share (the work
/// it interrupted already fills the interval), so no core is ever busier than the interval.
std::vector<model::CoreAccount> with_timer(std::vector<model::CoreAccount> acc, const HostParams& s,
                                           double elapsed_ns) {
  for (auto& c : acc) {
    double& timer = c.busy_ns[static_cast<size_t>(model::Activity::Timer)];
    double& poll = c.busy_ns[static_cast<size_t>(model::Activity::Poll)];
    timer += s.costs.timer_hz * elapsed_ns * 1e-9 * s.costs.timer_tick_ns;
    poll -= std::min(poll, std::max(0.0, c.total_ns() - elapsed_ns));
    timer -= std::min(timer, std::max(0.0, c.total_ns() - elapsed_ns));
  }
  return acc;
}

/// The accounts as --profile prints them: busy ns by activity, per core.
std::vector<frontends::CoreProfile> profile(const std::vector<model::CoreAccount>& acc) {
  std::vector<frontends::CoreProfile> out;
  for (size_t i = 0; i < acc.size(); ++i) {
    frontends::CoreProfile p;
    p.core = static_cast<int>(i);
    for (size_t a = 0; a < model::kActivityCount; ++a)
      p.busy_ns.emplace_back(std::string(model::activity_name(static_cast<model::Activity>(a))), acc[i].busy_ns[a]);
    p.wakeups = acc[i].wakeups;
    p.ipis = acc[i].ipis;
    p.context_switches = acc[i].context_switches;
    out.push_back(std::move(p));
  }
  return out;
}

/// The pair of sockets, created inside the actors (verbs calls need a CPU context).
struct Rendezvous {
  sdp::SdpSocket* server = nullptr;
  bool connected = false;
  SimWaitQueue wq;
};

}  // namespace

StreamSetup stream_setup(const HostParams& a, const HostParams& b, const model::Platform& local,
                         const model::Platform& remote, const frontends::TcpStreamConfig& cfg) {
  StreamSetup s;
  s.send_socket = model::linux_socket_buffer(cfg.local_send_socket, a.wmem_max, a.wmem_default, model::kSockMinSndbuf);
  s.recv_socket = model::linux_socket_buffer(cfg.remote_recv_socket, b.rmem_max, b.rmem_default, model::kSockMinRcvbuf);
  s.send_size = cfg.send_size ? cfg.send_size : s.send_socket;
  s.recv_size = cfg.recv_size ? cfg.recv_size : s.recv_socket;
  s.local_cpu = cfg.local_cpu.value_or(a.app_cpu);
  s.remote_cpu = cfg.remote_cpu.value_or(b.app_cpu);
  if (s.local_cpu < 0 || s.local_cpu >= a.costs.cpus)
    throw frontends::ConfigError("local_cpu", fmt::format("local CPU {} does not exist ({} has {} CPUs)", s.local_cpu,
                                                          local.name(), a.costs.cpus));
  if (s.remote_cpu < 0 || s.remote_cpu >= b.costs.cpus)
    throw frontends::ConfigError("remote_cpu", fmt::format("remote CPU {} does not exist ({} has {} CPUs)", s.remote_cpu,
                                                           remote.name(), b.costs.cpus));
  return s;
}

frontends::TcpStreamResult run_tcp_stream(const model::Platform& local, const model::Platform& remote,
                               const frontends::TcpStreamConfig& cfg) {
  // A precondition on the config: the front end rejects -l 0 in its own words (frontends/netperf_cli.cpp).
  if (cfg.length_bytes == 0 && !(cfg.length_s > 0)) throw InputError(fmt::format("TcpStreamConfig: length_s {} must be > 0 when length_bytes is 0", cfg.length_s));
  const HostParams A = read_host_params(local);
  const HostParams B = read_host_params(remote);

  frontends::TcpStreamResult res;
  // An SDP socket's SO_SNDBUF/SO_RCVBUF go through Linux's sock_setsockopt as a TCP socket's do,
  // and netperf prints what getsockopt returns.
  const StreamSetup setup = stream_setup(A, B, local, remote, cfg);
  res.local_send_socket = setup.send_socket;
  res.remote_recv_socket = setup.recv_socket;
  // The two buffers the stream does not use, as getsockopt gives them at creation (the omni
  // selectors LSR_SIZE, RSS_SIZE of TCP_STREAM print them).
  res.local_recv_socket = model::linux_socket_buffer(cfg.local_recv_socket, A.rmem_max, A.rmem_default, model::kSockMinRcvbuf);
  res.remote_send_socket = model::linux_socket_buffer(cfg.remote_send_socket, B.wmem_max, B.wmem_default, model::kSockMinSndbuf);
  res.send_size = setup.send_size;
  res.recv_size = setup.recv_size;
  res.local_cpus = A.costs.cpus;
  res.remote_cpus = B.costs.cpus;
  const int lcpu = setup.local_cpu;
  const int rcpu = setup.remote_cpu;

  const auto wall0 = std::chrono::steady_clock::now();
  const sdp::DataMode mode = cfg.verify_data ? sdp::DataMode::Bytes : sdp::DataMode::Reference;
  std::unique_ptr<ChromeTrace> trace;  // --trace; outlives the bed, whose contexts report to it
  if (cfg.trace)
    trace = std::make_unique<ChromeTrace>(
        TraceWindow{cfg.trace_start_s, cfg.trace_len_s},
        std::array<std::string, 2>{fmt::format("A: netperf on {}", local.name()),
                                   fmt::format("B: netserver on {}", remote.name())});
  TwoHostBed bed(A, B, cfg.seed, mode);
  bed.set_faults(cfg.faults, cfg.retry);
  if (trace) bed.set_trace(trace.get());
  SimHost& host_a = bed.host(0);
  SimHost& host_b = bed.host(1);
  Qp& qp_a = bed.qp(0);
  Qp& qp_b = bed.qp(1);
  Failure& failure = bed.failure();

  Rendezvous rv;
  double t_start = 0, t_end = 0;
  std::unique_ptr<sdp::SdpSocket> sock_a, sock_b;
  bool data_ok = true;
  // zlib crc32 of each side's stream, when the bytes are real (verify_data).
  uLong sent_crc = crc32(0L, Z_NULL, 0), received_crc = sent_crc;
  std::vector<uint8_t> crc_buf;
  auto crc_of = [&](const sdp::HostMemory& mem, sdp::Addr addr, uint64_t n, uLong& crc) {
    if (!cfg.verify_data) return;
    crc_buf.resize(n);
    mem.read_bytes(addr, crc_buf.data(), n);
    crc = crc32_z(crc, crc_buf.data(), n);
  };
  uint64_t received = 0, recv_calls = 0, sent = 0, send_calls = 0;
  // --steady: the measured interval is the stream's steady state (util::SteadyState).
  std::optional<util::SteadyState> steady;
  if (cfg.steady_rel > 0 && cfg.length_bytes == 0) steady.emplace(cfg.steady_rel);
  Counts measured;                   // the counters when the measured interval started
  std::optional<Snapshot> steady_end;  // the figures when it ended
  std::array<HcaBusy, 2> hca_busy{};  // --explain
  std::vector<frontends::LinkUse> link_use;
  // -D: netperf's interim results, ticked by its send() calls (its recv() calls for TCP_MAERTS,
  // where netperf is this run's receiver) while the test runs.
  frontends::DemoClock demo(cfg.demo, frontends::demo_default_units(cfg.demo, false, setup.send_socket, setup.recv_socket));
  double demo_stop = 0;  // a timed run's alarm: a call it interrupts ends the loop before its tick

  // netserver: accept, then recv() until the end of the stream, checking every byte range.
  bed.scheduler().spawn("netserver", [&] {
    failure.guard("netserver", [&] {
      host_b.bind_current(rcpu);
      sock_b = std::make_unique<sdp::SdpSocket>(host_b, qp_b, B.sdp, "netserver");
      qp_b.set_handlers([&] { sock_b->on_cqe(); }, [&] { sock_b->on_cq_event(); });
      qp_b.req_notify_cq();
      if (cfg.nodelay) sock_b->set_nodelay(true);
      {  // listen, then wait for the active side's Hello (accept)
        yield_rounds(2);
        rv.server = sock_b.get();
        rv.wq.notify_all();
        while (!rv.connected) rv.wq.wait();
        yield_rounds(1);
      }
      const sdp::Addr buf = host_b.memory().allocate(res.recv_size, mode);
      for (;;) {
        const double call_ns = now_ns();
        const uint64_t n = sock_b->recv(buf, res.recv_size);
        if (n == 0) break;
        // The call ends when the copy it charged ends (slept off at the next call's start).
        if (trace) trace->call(1, "netserver", TraceCall::Recv, call_ns, host_b.pending_end_ns(), received, n);
        ++recv_calls;
        if (!host_b.memory().check_stream(buf, n, received)) data_ok = false;
        crc_of(host_b.memory(), buf, n, received_crc);
        received += n;
        if (cfg.demo.at_receiver && (cfg.length_bytes || now_ns() <= demo_stop)) {
          host_b.flush();
          demo.tick(now_ns(), static_cast<double>(n));
        }
      }
      if (cfg.demo.at_receiver) demo.finish(std::min(now_ns(), cfg.length_bytes ? now_ns() : demo_stop));
      sock_b->close();
    });
  });

  // netperf: connect, send for the test length, shutdown, wait for the remote close.
  bed.scheduler().spawn("netperf", [&] {
    failure.guard("netperf", [&] {
      host_a.bind_current(lcpu);
      sock_a = std::make_unique<sdp::SdpSocket>(host_a, qp_a, A.sdp, "netperf");
      qp_a.set_handlers([&] { sock_a->on_cqe(); }, [&] { sock_a->on_cq_event(); });
      qp_a.req_notify_cq();
      if (trace) sock_a->set_message_observer([&](uint64_t offset, uint64_t bytes) { trace->message(offset, bytes, now_ns()); });
      if (cfg.nodelay) sock_a->set_nodelay(true);  // netperf sets it before connect (create_data_socket)
      {
        yield_rounds(2);
        while (rv.server == nullptr) rv.wq.wait();
        yield_rounds(1);
      }
      // Hello / HelloAck travel in the CM REQ / REP private data.
      auto hello = sock_a->hello(12865);
      auto ack = rv.server->accept_hello(hello);
      sock_a->hello_ack(ack);
      rv.connected = true;
      rv.wq.notify_all();
      // netperf's send ring: send_width buffers of the send size (nettest_bsd.c:
      // send_width = lss_size / send_size + 1, at least 2).
      uint64_t width = res.local_send_socket / res.send_size + 1;
      if (width < 2) width = 2;
      std::vector<sdp::Addr> ring;
      for (uint64_t i = 0; i < width; ++i) ring.push_back(host_a.memory().allocate(res.send_size, mode, 8));
      host_a.reset_accounts();
      host_b.reset_accounts();
      bed.reset_link_busy();
      if (cfg.explain)
        for (int i = 0; i < 2; ++i) bed.hca(i).measure(&hca_busy[static_cast<size_t>(i)]);
      t_start = now_ns();
      if (trace) trace->set_origin(t_start);
      const double stop = t_start + cfg.length_s * 1e9;
      demo.start(t_start);
      demo_stop = stop;
      double next_check = t_start + kSteadyWindowS * 1e9;
      double busy_before_a = 0, busy_before_b = 0;
      size_t k = 0;
      // netperf -l -N: exactly N bytes (the last send() shorter); else for the test length.
      while (cfg.length_bytes ? sent < cfg.length_bytes : now_ns() < stop) {
        const sdp::Addr buf = ring[k++ % ring.size()];
        const uint64_t len = cfg.length_bytes ? std::min(res.send_size, cfg.length_bytes - sent) : res.send_size;
        host_a.memory().write_stream(buf, len, sent);
        crc_of(host_a.memory(), buf, len, sent_crc);
        const double call_ns = now_ns();
        const uint64_t offset = sent;
        sent += sock_a->send(buf, len);
        ++send_calls;
        host_a.flush();
        if (trace) trace->call(0, "netperf", TraceCall::Send, call_ns, now_ns(), offset, sent - offset);
        if (!cfg.demo.at_receiver && (cfg.length_bytes || now_ns() <= stop))
          demo.tick(now_ns(), static_cast<double>(len));
        if (steady && now_ns() >= next_check) {
          next_check = now_ns() + kSteadyWindowS * 1e9;
          // Running totals: the CPU time before the accounts were last reset counts too.
          const double totals[] = {static_cast<double>(received), busy_before_a + busy_ns(host_a.accounts()),
                                   busy_before_b + busy_ns(host_b.accounts())};
          const util::SteadyState::Step step = steady->checkpoint(now_ns(), totals);
          if (step == util::SteadyState::Step::Start) {
            // The measured interval starts here, as netperf's starts after the connection is up.
            busy_before_a = totals[1];
            busy_before_b = totals[2];
            host_a.reset_accounts();
            host_b.reset_accounts();
            bed.reset_link_busy();
            hca_busy = {};
            t_start = now_ns();
            measured = Counts{sent, received, send_calls, recv_calls};
          } else if (step == util::SteadyState::Step::Done) {
            // ... and ends here: the figures as they stand, then the stream closes as usual.
            steady_end = Snapshot{now_ns(), Counts{sent - measured.sent, received - measured.received,
                                                   send_calls - measured.send_calls, recv_calls - measured.recv_calls},
                                  host_a.accounts(), host_b.accounts(), bed.link_busy_s()};
            if (cfg.explain) {
              link_use = bed.link_use();
              for (int i = 0; i < 2; ++i) bed.hca(i).measure(nullptr);
            }
            break;
          }
        }
      }
      if (!cfg.demo.at_receiver) demo.finish(cfg.length_bytes ? now_ns() : std::min(now_ns(), stop));
      sock_a->close();
      const sdp::Addr scratch = ring[0];
      while (sock_a->recv(scratch, res.send_size) > 0) {
      }
      host_a.flush();
      t_end = now_ns();
      res.link_busy_s = bed.link_busy_s();
      if (cfg.explain && !steady_end) {
        link_use = bed.link_use();
        for (int i = 0; i < 2; ++i) bed.hca(i).measure(nullptr);
      }
    });
  });

  // netperf stops sending at -l; draining and closing take far less than the test itself.
  // A byte count: allow it 10 Mbit/s at worst (each lost tail costs a 67 ms ACK timeout).
  bed.run(cfg.length_bytes ? 60 + static_cast<double>(cfg.length_bytes) * 8 / 1e7 : 2 * cfg.length_s + 10);
  if (failure.failed()) {
    std::string why = failure.message();
    if (qp_a.state() == Qp::State::Error || qp_b.state() == Qp::State::Error)
      why += " (the connection's QP went to the error state: with faults on the wire, the transport retries "
             "ran out, qp.retry_cnt)";
    throw std::runtime_error(why);
  }
  if (t_end <= t_start) throw std::runtime_error("simulation ended before the test finished");

  // A steady measurement ends where its figures were steady, not after the close.
  if (steady_end) t_end = steady_end->t_ns;
  const Counts counts = steady_end ? steady_end->counts : Counts{sent, received, send_calls, recv_calls};
  res.interim = demo.results();
  res.elapsed_s = (t_end - t_start) * 1e-9;
  res.steady_settled = steady_end.has_value();
  res.bytes_sent = counts.sent;
  res.bytes_received = counts.received;
  res.send_calls = counts.send_calls;
  res.recv_calls = counts.recv_calls;
  res.crc_computed = cfg.verify_data;
  res.crc_bytes_sent = sent;
  res.crc_bytes_received = received;
  res.sent_crc32 = static_cast<uint32_t>(sent_crc);
  res.received_crc32 = static_cast<uint32_t>(received_crc);
  res.faults_configured = cfg.faults.any();
  res.local_faults = bed.hca(0).fault_stats();
  res.remote_faults = bed.hca(1).fault_stats();
  res.data_verified = data_ok && received == sent && sent_crc == received_crc;
  // With verify_data the command line reports a mismatch (exit 1); otherwise it is a bug.
  if (!res.data_verified && !cfg.verify_data)
    throw std::runtime_error(fmt::format("data check failed: sent {} B, received {} B, content {}", sent, received,
                                         data_ok ? "in order" : "corrupted"));
  const double elapsed_ns = t_end - t_start;
  const auto acc_a = with_timer(steady_end ? steady_end->local : host_a.accounts(), A, elapsed_ns);
  const auto acc_b = with_timer(steady_end ? steady_end->remote : host_b.accounts(), B, elapsed_ns);
  if (steady_end) res.link_busy_s = steady_end->link_busy_s;
  res.local_util_pct = model::utilisation_pct(acc_a, elapsed_ns);
  res.remote_util_pct = model::utilisation_pct(acc_b, elapsed_ns);
  res.local_profile = profile(acc_a);
  res.remote_profile = profile(acc_b);
  if (cfg.explain) {
    frontends::ExplainMeasure m;
    m.interval_s = res.elapsed_s;
    m.links = std::move(link_use);
    for (size_t i = 0; i < 2; ++i)
      m.hca[i] = hca_busy[i].use();
    m.cores = {res.local_profile, res.remote_profile};
    m.host_role = {"netperf", "netserver"};
    bed.describe(m, {lcpu, rcpu});
    res.explain = std::move(m);
  }
  if (trace)
    res.trace_json = trace->json(
        {{"tool", "netperf"}, {"transport", "sdp"}, {"local_platform", local.name()}, {"remote_platform", remote.name()}});
  res.simgrid_activities = bed.stats().activities();
  res.simgrid_time_steps = bed.stats().time_steps;
  bed.scheduler().stats().copy_to(res);
  res.max_rss_kb = max_rss_kb();
  res.sdp_messages = sock_a->stats().msgs_sent + sock_b->stats().msgs_sent;
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return res;
}


frontends::TcpStreamResult run_tcp_rr(const model::Platform& local, const model::Platform& remote,
                                      const frontends::TcpStreamConfig& cfg) {
  if (cfg.transactions == 0 && !(cfg.length_s > 0))
    throw InputError(fmt::format("TcpStreamConfig: length_s {} must be > 0 when transactions is 0", cfg.length_s));
  if (cfg.request_size == 0 || cfg.response_size == 0)
    throw InputError("TcpStreamConfig: TCP_RR request and response sizes must be at least 1 byte");
  const HostParams A = read_host_params(local);
  const HostParams B = read_host_params(remote);

  frontends::TcpStreamResult res;
  // The four socket buffers as Linux grants them (netperf prints what getsockopt returns;
  // send_tcp_rr prints lss, lsr on its first line and rss, rsr on its second).
  const StreamSetup setup = stream_setup(A, B, local, remote, cfg);
  res.local_send_socket = setup.send_socket;
  res.remote_recv_socket = setup.recv_socket;
  res.local_recv_socket = model::linux_socket_buffer(cfg.local_recv_socket, A.rmem_max, A.rmem_default, model::kSockMinRcvbuf);
  res.remote_send_socket = model::linux_socket_buffer(cfg.remote_send_socket, B.wmem_max, B.wmem_default, model::kSockMinSndbuf);
  res.request_size = cfg.request_size;
  res.response_size = cfg.response_size;
  res.send_size = cfg.request_size;
  res.recv_size = cfg.response_size;
  res.local_cpus = A.costs.cpus;
  res.remote_cpus = B.costs.cpus;
  const int lcpu = setup.local_cpu;
  const int rcpu = setup.remote_cpu;

  const auto wall0 = std::chrono::steady_clock::now();
  const sdp::DataMode mode = cfg.verify_data ? sdp::DataMode::Bytes : sdp::DataMode::Reference;
  TwoHostBed bed(A, B, cfg.seed, mode);
  bed.set_faults(cfg.faults, cfg.retry);
  SimHost& host_a = bed.host(0);
  SimHost& host_b = bed.host(1);
  Qp& qp_a = bed.qp(0);
  Qp& qp_b = bed.qp(1);
  Failure& failure = bed.failure();

  Rendezvous rv;
  double t_start = 0, t_end = 0;
  std::unique_ptr<sdp::SdpSocket> sock_a, sock_b;
  bool data_ok = true;
  // Each direction is a byte stream: requests A -> B, responses B -> A, checked by offset.
  uint64_t req_sent = 0, req_received = 0, rsp_sent = 0, rsp_received = 0;
  uint64_t send_calls = 0, recv_calls = 0, transactions = 0;
  // --verify-data: zlib crc32 of each direction at its sender and at its receiver.
  uLong req_sent_crc = crc32(0L, Z_NULL, 0), req_recv_crc = req_sent_crc, rsp_sent_crc = req_sent_crc,
        rsp_recv_crc = req_sent_crc;
  std::vector<uint8_t> crc_buf;
  auto crc_of = [&](const sdp::HostMemory& mem, sdp::Addr addr, uint64_t n, uLong& crc) {
    if (!cfg.verify_data) return;
    crc_buf.resize(n);
    mem.read_bytes(addr, crc_buf.data(), n);
    crc = crc32_z(crc, crc_buf.data(), n);
  };
  std::optional<std::pair<std::vector<model::CoreAccount>, std::vector<model::CoreAccount>>> at_stop;
  // -D: interim results ticked once per transaction (DEMO_RR_INTERVAL(1); 2.7 omni with a byte
  // format: request + response bytes).
  frontends::DemoClock demo(cfg.demo, frontends::demo_default_units(cfg.demo, true, 0, 0));
  frontends::LatencyStats latency;  // keep_latency: netperf's histogram of transaction times

  // netserver (nettest_bsd.c recv_tcp_rr): recv() until the whole request is in, send() the
  // response, until netperf closes.
  bed.scheduler().spawn("netserver", [&] {
    failure.guard("netserver", [&] {
      host_b.bind_current(rcpu);
      sock_b = std::make_unique<sdp::SdpSocket>(host_b, qp_b, B.sdp, "netserver");
      qp_b.set_handlers([&] { sock_b->on_cqe(); }, [&] { sock_b->on_cq_event(); });
      qp_b.req_notify_cq();
      if (cfg.nodelay) sock_b->set_nodelay(true);
      {
        yield_rounds(2);
        rv.server = sock_b.get();
        rv.wq.notify_all();
        while (!rv.connected) rv.wq.wait();
        yield_rounds(1);
      }
      const sdp::Addr req_buf = host_b.memory().allocate(cfg.request_size, mode, 8);
      const sdp::Addr rsp_buf = host_b.memory().allocate(cfg.response_size, mode, 8);
      for (;;) {
        uint64_t left = cfg.request_size;
        while (left > 0) {
          const sdp::Addr at = req_buf + (cfg.request_size - left);
          const uint64_t n = sock_b->recv(at, left);
          if (n == 0) break;
          if (!host_b.memory().check_stream(at, n, req_received)) data_ok = false;
          crc_of(host_b.memory(), at, n, req_recv_crc);
          req_received += n;
          left -= n;
        }
        if (left > 0) break;  // netperf closed (its partial request is not answered)
        host_b.memory().write_stream(rsp_buf, cfg.response_size, rsp_sent);
        crc_of(host_b.memory(), rsp_buf, cfg.response_size, rsp_sent_crc);
        rsp_sent += sock_b->send(rsp_buf, cfg.response_size);
        host_b.flush();
      }
      sock_b->close();
    });
  });

  // netperf (nettest_bsd.c send_tcp_rr): one send() of the request, recv() until the whole
  // response is in; for -l seconds (the alarm ends the test: a transaction it interrupts is not
  // counted) or -l -N transactions.
  bed.scheduler().spawn("netperf", [&] {
    failure.guard("netperf", [&] {
      host_a.bind_current(lcpu);
      sock_a = std::make_unique<sdp::SdpSocket>(host_a, qp_a, A.sdp, "netperf");
      qp_a.set_handlers([&] { sock_a->on_cqe(); }, [&] { sock_a->on_cq_event(); });
      qp_a.req_notify_cq();
      if (cfg.nodelay) sock_a->set_nodelay(true);  // create_data_socket, before connect
      {
        yield_rounds(2);
        while (rv.server == nullptr) rv.wq.wait();
        yield_rounds(1);
      }
      auto hello = sock_a->hello(12865);
      auto ack = rv.server->accept_hello(hello);
      sock_a->hello_ack(ack);
      rv.connected = true;
      rv.wq.notify_all();
      // send_width = recv_width = 1 for a request/response test (send_tcp_rr).
      const sdp::Addr req_buf = host_a.memory().allocate(cfg.request_size, mode, 8);
      const sdp::Addr rsp_buf = host_a.memory().allocate(cfg.response_size, mode, 8);
      host_a.reset_accounts();
      host_b.reset_accounts();
      bed.reset_link_busy();
      t_start = now_ns();
      const double stop = t_start + cfg.length_s * 1e9;
      demo.start(t_start);
      for (;;) {
        if (cfg.transactions ? transactions >= cfg.transactions : now_ns() >= stop) break;
        // HIST_timestamp(&time_one): gettimeofday's microseconds.
        const int64_t time_one_us = static_cast<int64_t>(std::floor(now_ns() / 1000.0));
        host_a.memory().write_stream(req_buf, cfg.request_size, req_sent);
        crc_of(host_a.memory(), req_buf, cfg.request_size, req_sent_crc);
        req_sent += sock_a->send(req_buf, cfg.request_size);
        ++send_calls;
        uint64_t left = cfg.response_size, calls = 0;
        while (left > 0) {
          const sdp::Addr at = rsp_buf + (cfg.response_size - left);
          const uint64_t n = sock_a->recv(at, left);
          if (n == 0) throw std::runtime_error("netserver closed the connection in the middle of a transaction");
          ++calls;
          if (!host_a.memory().check_stream(at, n, rsp_received)) data_ok = false;
          crc_of(host_a.memory(), at, n, rsp_recv_crc);
          rsp_received += n;
          left -= n;
        }
        host_a.flush();
        // The alarm went off inside this transaction: netperf's recv() returned EINTR and the
        // loop ended. Its request was sent and is counted; its response's receives are not
        // (netperf 2.7 nettest_omni.c send_omni_inner: bytes_sent and local_send_calls grow after
        // send_data, bytes_received and local_receive_calls only when recv_data returns the
        // whole response; on EINTR it returns -1 and the loop breaks).
        if (!cfg.transactions && now_ns() > stop) break;
        recv_calls += calls;
        if (cfg.keep_latency) latency.add(static_cast<int64_t>(std::floor(now_ns() / 1000.0)) - time_one_us);
        demo.tick(now_ns(), cfg.demo.rr_ticks_bytes ? static_cast<double>(cfg.request_size + cfg.response_size) : 1.0);
        ++transactions;
      }
      demo.finish(cfg.transactions ? now_ns() : std::min(now_ns(), stop));
      // A timed test ends at its alarm (cpu_stop right after the interrupted call); a counted
      // one when its last response is in.
      t_end = cfg.transactions ? now_ns() : stop;
      at_stop.emplace(host_a.accounts(), host_b.accounts());
      res.link_busy_s = bed.link_busy_s();
      sock_a->close();
      while (sock_a->recv(rsp_buf, cfg.response_size) > 0) {
      }
      host_a.flush();
    });
  });

  bed.run(cfg.transactions ? 60 + static_cast<double>(cfg.transactions) * 1e-3 : 2 * cfg.length_s + 10);
  if (failure.failed()) {
    std::string why = failure.message();
    if (qp_a.state() == Qp::State::Error || qp_b.state() == Qp::State::Error)
      why += " (the connection's QP went to the error state: with faults on the wire, the transport retries "
             "ran out, qp.retry_cnt)";
    throw std::runtime_error(why);
  }
  if (!at_stop || t_end <= t_start) throw std::runtime_error("simulation ended before the test finished");

  res.interim = demo.results();
  res.latency_us = latency;
  res.elapsed_s = (t_end - t_start) * 1e-9;
  res.transactions = transactions;
  res.bytes_sent = req_sent;
  res.bytes_received = transactions * cfg.response_size;  // each counted recv_data returned a whole response
  res.send_calls = send_calls;
  res.recv_calls = recv_calls;
  res.crc_bytes_sent = req_sent;
  res.crc_bytes_received = rsp_received;
  res.faults_configured = cfg.faults.any();
  res.local_faults = bed.hca(0).fault_stats();
  res.remote_faults = bed.hca(1).fault_stats();
  // One crc32 per end: the requests followed by the responses, as sent and as received.
  res.crc_computed = cfg.verify_data;
  res.sent_crc32 = static_cast<uint32_t>(crc32_combine(req_sent_crc, rsp_sent_crc, static_cast<z_off_t>(rsp_sent)));
  res.received_crc32 =
      static_cast<uint32_t>(crc32_combine(req_recv_crc, rsp_recv_crc, static_cast<z_off_t>(rsp_received)));
  res.data_verified = data_ok && req_received == req_sent && rsp_received == rsp_sent &&
                      req_sent_crc == req_recv_crc && rsp_sent_crc == rsp_recv_crc;
  if (!res.data_verified && !cfg.verify_data)
    throw std::runtime_error(fmt::format("data check failed: requests {} B sent, {} B received; responses {} B sent, "
                                         "{} B received; content {}",
                                         req_sent, req_received, rsp_sent, rsp_received,
                                         data_ok ? "in order" : "corrupted"));
  const double elapsed_ns = t_end - t_start;
  const auto acc_a = with_timer(at_stop->first, A, elapsed_ns);
  const auto acc_b = with_timer(at_stop->second, B, elapsed_ns);
  res.local_util_pct = model::utilisation_pct(acc_a, elapsed_ns);
  res.remote_util_pct = model::utilisation_pct(acc_b, elapsed_ns);
  res.local_profile = profile(acc_a);
  res.remote_profile = profile(acc_b);
  res.simgrid_activities = bed.stats().activities();
  res.simgrid_time_steps = bed.stats().time_steps;
  bed.scheduler().stats().copy_to(res);
  res.max_rss_kb = max_rss_kb();
  res.sdp_messages = sock_a->stats().msgs_sent + sock_b->stats().msgs_sent;
  res.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
  return res;
}

frontends::TcpStreamConfig maerts_stream_config(const frontends::TcpStreamConfig& cfg) {
  frontends::TcpStreamConfig c = cfg;
  c.test = frontends::NetperfTest::Stream;
  c.local_send_socket = cfg.remote_send_socket;   // -S S,: netserver's send buffer
  c.remote_recv_socket = cfg.local_recv_socket;   // -s ,R: netperf's receive buffer
  c.local_recv_socket = cfg.remote_recv_socket;
  c.remote_send_socket = cfg.local_send_socket;
  c.local_cpu = cfg.remote_cpu;
  c.remote_cpu = cfg.local_cpu;
  c.demo.at_receiver = true;  // netperf's recv loop ticks the interim results (send_tcp_maerts)
  return c;
}

void maerts_result(frontends::TcpStreamResult& r, const model::Platform& local, const model::Platform& remote,
                   const frontends::TcpStreamConfig& cfg) {
  // The stream ran from netserver's host ("local" of the run) to netperf's: turn it round.
  const HostParams A = read_host_params(local);
  const HostParams B = read_host_params(remote);
  r.remote_send_socket = r.local_send_socket;
  r.local_recv_socket = r.remote_recv_socket;
  r.local_send_socket = model::linux_socket_buffer(cfg.local_send_socket, A.wmem_max, A.wmem_default, model::kSockMinSndbuf);
  r.remote_recv_socket = model::linux_socket_buffer(cfg.remote_recv_socket, B.rmem_max, B.rmem_default, model::kSockMinRcvbuf);
  std::swap(r.local_cpus, r.remote_cpus);
  std::swap(r.local_util_pct, r.remote_util_pct);
  std::swap(r.local_faults, r.remote_faults);
  std::swap(r.local_profile, r.remote_profile);
}

frontends::TcpStreamResult run_tcp_maerts(const model::Platform& local, const model::Platform& remote,
                                          const frontends::TcpStreamConfig& cfg) {
  // The -T CPUs checked in netperf's terms first (a CPU the host lacks is named by its side).
  (void)stream_setup(read_host_params(local), read_host_params(remote), local, remote, cfg);
  frontends::TcpStreamResult r;
  try {
    r = run_tcp_stream(remote, local, maerts_stream_config(cfg));
  } catch (const frontends::ConfigError& e) {
    throw frontends::ConfigError(maerts_field(e.field()), e.reason());
  }
  maerts_result(r, local, remote, cfg);
  return r;
}

std::string maerts_field(const std::string& field) {
  if (field == "local_cpu") return "remote_cpu";
  if (field == "remote_cpu") return "local_cpu";
  if (field == "local_send_socket") return "remote_send_socket";
  if (field == "remote_recv_socket") return "local_recv_socket";
  return field;
}

}  // namespace hcasim::sim
