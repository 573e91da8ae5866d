// hcasim-sdp-server: netserver's side of TCP_STREAM over the real SDP engine, on an RDMA
// device or the emulated HCA (--device emu). Serves each test on a thread of its own, as
// netserver serves each in a process of its own: for ever, or one test with --once.
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <arpa/inet.h>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "util/output_file.h"
#include "rt/interrupt.h"
#include "rt/sdp_connection.h"
#include "rt/stream.h"

using namespace hcasim;

namespace {

constexpr const char* kProg = "hcasim-sdp-server";

/// One test: the connection's setup, the request, the stream until the client's DisConn, the
/// report, our DisConn. Returns what to log; `faults` gets the connection's fault counters and
/// `peer` the client's address once the connection is set up (an error after that is the
/// peer's to hear about: the log names it). `mem` is this test's share of the device's arena.
std::string serve(sdp::ArenaScope& mem, rt::WallHost& host, sdp::Incoming& incoming, model::FaultStats& faults,
                  std::string& peer) {
  auto conn = rt::SdpConnection::accept(host, incoming, sdp::SdpConfig{});
  peer = conn->peer();
  const sdp::Addr head = mem.allocate(rt::StreamReport::kSize, sdp::DataMode::Bytes);
  std::array<uint8_t, rt::StreamRequest::kSize> raw{};
  if (!conn->recv_exact(head, raw.size())) throw sdp::DeviceError("the client closed the connection before its test request");
  mem.read_bytes(head, raw.data(), raw.size());
  const rt::StreamRequest req = rt::StreamRequest::decode(raw);
  rt::StreamReport report;
  rt::AffinityGuard affinity;  // -T ,N binds this test only
  std::string note;
  if (req.remote_cpu >= 0) {
    try {
      rt::bind_to_cpu(req.remote_cpu);
    } catch (const sdp::DeviceError& e) {  // netserver warns and runs unbound; the client is told
      report.flags |= rt::StreamReport::kUnbound;
      note = fmt::format(" (unbound: {})", e.what());
    }
  }
  const sdp::Addr buf = mem.allocate(req.recv_size, sdp::DataMode::Bytes);

  rt::CpuTimes cpu0{};
  std::chrono::steady_clock::time_point t0;
  for (;;) {
    const uint64_t n = conn->recv(buf, req.recv_size);
    if (report.recv_calls == 0) {  // the clock starts with the first data
      cpu0 = rt::read_cpu_times();
      t0 = std::chrono::steady_clock::now();
    }
    ++report.recv_calls;
    if (n == 0) break;
    report.crc32 = rt::crc32_update(report.crc32, mem.arena().bytes(buf, n), n);
    report.bytes += n;
  }
  report.elapsed_ns = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
  report.util_pct = rt::utilisation_pct(cpu0, rt::read_cpu_times());
  report.cpus = static_cast<uint32_t>(rt::online_cpus());
  const auto bytes = report.encode();
  mem.write_bytes(head, bytes.data(), bytes.size());
  conn->send(head, bytes.size());
  conn->close();
  conn->finish(2000);
  faults = conn->fault_stats();
  return fmt::format("received {} bytes in {} calls, crc32 {:08x}, {:.3f} s{}", report.bytes, report.recv_calls,
                     report.crc32, static_cast<double>(report.elapsed_ns) * 1e-9, note);
}

/// Tests served at once; a connection beyond them is closed at once, with a line.
constexpr int kMaxTests = 64;

/// Serves one test on its own host and share of the arena, logs its outcome in one line (and
/// the fault counters when faults are injected), and returns its exit status (0 or 1).
int serve_test(sdp::Device& device, std::unique_ptr<sdp::Incoming> incoming, bool report_faults) {
  int status = 0;
  model::FaultStats stats;
  std::string peer;  // "" until the connection is set up (setup errors name the peer)
  const auto from = [&] { return peer.empty() ? std::string() : peer + ": "; };
  try {
    // Declared first, so destroyed last: the connection (in serve) is gone before its memory.
    sdp::ArenaScope mem(device.memory());
    rt::WallHost host(mem, rt::online_cpus());
    const std::string done = serve(mem, host, *incoming, stats, peer);
    std::fprintf(stderr, "%s: %s%s\n", kProg, from().c_str(), done.c_str());
    if (report_faults) std::fprintf(stderr, "%s: %s\n", kProg, stats.summary().c_str());
  } catch (const sdp::DeviceError& e) {
    std::fprintf(stderr, "%s: %s%s\n", kProg, from().c_str(), e.what());
    status = 1;
  } catch (const sdp::MemoryError& e) {  // too many tests at once for the arena
    std::fprintf(stderr, "%s: %stest refused: %s\n", kProg, from().c_str(), e.what());
    status = 1;
  } catch (const std::runtime_error& e) {  // the engine: the peer aborted or vanished
    std::fprintf(stderr, "%s: %stest aborted: %s\n", kProg, from().c_str(), e.what());
    status = 1;
  }
  std::fflush(stderr);
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hcasim-sdp-server: the receiving side of hcasim-sdp-client's TCP_STREAM over SDP"};
  std::optional<std::string> device_flag;
  int port = rt::kDefaultPort;
  std::string bind_addr;
  bool once = false;
  app.add_option("--device", device_flag, "emu (the emulated HCA) or an RDMA device; default $HCASIM_DEVICE, else the first")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("-p,--port", port, "port to listen on (0: any free port, printed on stderr)")
      ->check(CLI::Validator(
          [](std::string& v) {
            const bool digits = !v.empty() && v.size() <= 5 && v.find_first_not_of("0123456789") == std::string::npos;
            return digits && std::stoi(v) <= 65535 ? std::string() : "'" + v + "' is not a port (0-65535)";
          },
          "PORT"))
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_option("-L,--local", bind_addr, "IPv4 or IPv6 address to listen on (default: all)")
      ->check(CLI::Validator(
          [](std::string& a) {
            in_addr v4{};
            in6_addr v6{};
            return ::inet_pton(AF_INET, a.c_str(), &v4) == 1 || ::inet_pton(AF_INET6, a.c_str(), &v6) == 1
                       ? std::string()
                       : "'" + a + "' is not an IPv4 or IPv6 address";
          },
          "ADDR"))
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.add_flag("-1,--once", once, "serve one test, then exit with its status");
  std::vector<std::string> sets;
  app.add_option("--set", sets,
                 "fault.loss|corrupt|dup|reorder=P, fault.seed=N: faults the emulated HCA injects on the frames "
                 "it sends; qp.retry_cnt|timeout|rnr_retry=N: the QP's RC retry attributes (--device emu)")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->expected(1);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "%s: %s\n", kProg, e.what());
    return 2;
  }
  try {  // a second --device, -p or -L is an error, not the last one winning
    for (const char* flag : {"--device", "--port", "--local"}) {
      const CLI::Option* opt = app.get_option(flag);
      const std::string shown = opt->get_name() == "--port" ? "-p" : opt->get_name() == "--local" ? "-L" : "--device";
      util::check_single_value(shown, opt->results());
    }
  } catch (const InputError& e) {
    std::fprintf(stderr, "%s: %s\n", kProg, e.what());
    return 2;
  }
  if (device_flag && device_flag->empty()) {
    std::fprintf(stderr, "%s: --device: empty name\n", kProg);
    return 2;
  }
  model::FaultConfig faults;
  model::RcRetry retry;
  try {
    for (const std::string& s : sets)
      if (!model::apply_fault_setting(s, faults, retry))
        throw InputError(fmt::format("--set {}: the server sets only fault.* and qp.*", s));
  } catch (const InputError& e) {
    std::fprintf(stderr, "%s: %s\n", kProg, e.what());
    return 2;
  }
  std::signal(SIGPIPE, SIG_IGN);
  rt::exit_on_interrupt(kProg);
  try {
    auto device = rt::open_device(rt::device_name(device_flag), 64u << 20, faults, retry);
    auto listener = device->listen(bind_addr, static_cast<uint16_t>(port));
    std::fprintf(stderr, "%s: listening on port %u (device %s)\n", kProg, listener->port(), device->name().c_str());
    std::fflush(stderr);
    if (once) return serve_test(*device, listener->next(), faults.any());
    // Each test on a thread of its own: a client that stalls during its setup, or streams for
    // an hour, holds up no other. The device, its listener and memory outlive every test
    // thread (the loop never ends; a signal ends the process).
    std::atomic<int> running{0};
    for (;;) {
      std::unique_ptr<sdp::Incoming> incoming;
      try {
        incoming = listener->next();
      } catch (const sdp::DeviceError& e) {  // EMFILE and the like: say so, breathe, listen on
        std::fprintf(stderr, "%s: %s\n", kProg, e.what());
        std::fflush(stderr);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        continue;
      }
      if (running.load() >= kMaxTests) {
        std::fprintf(stderr, "%s: %s: refused: %d tests are running already\n", kProg, incoming->peer().c_str(),
                     kMaxTests);
        std::fflush(stderr);
        continue;  // the request is dropped: the peer sees its connection close
      }
      const std::string who = incoming->peer();
      ++running;
      try {
        std::thread([&device, &running, report = faults.any(), in = std::move(incoming)]() mutable {
          serve_test(*device, std::move(in), report);
          --running;
        }).detach();
      } catch (const std::system_error& e) {  // no thread to be had: this request only is dropped
        --running;
        std::fprintf(stderr, "%s: %s: refused: no thread for its test: %s\n", kProg, who.c_str(), e.what());
        std::fflush(stderr);
      }
    }
  } catch (const InputError& e) {  // --set fault.* on a real HCA, an -L address this machine lacks
    std::fprintf(stderr, "%s: %s\n", kProg, e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", kProg, e.what());
    return 1;
  }
}
