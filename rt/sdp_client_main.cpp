// hcasim-sdp-client: netperf's TCP_STREAM over the real SDP engine, on an RDMA device or the
// emulated HCA (--device emu). Takes netperf's flags and prints netperf's output.
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "frontends/netperf_cli.h"
#include "frontends/netperf_output.h"
#include "model/error.h"
#include "rt/interrupt.h"
#include "rt/sdp_connection.h"
#include "rt/stream.h"
#include "util/number.h"
#include "util/output_file.h"

using namespace hcasim;

namespace {

constexpr const char* kProg = "hcasim-sdp-client";
constexpr uint64_t kDefaultSendSize = 65536;   // ib_sdp's sk_sndbuf when netperf asks nothing
constexpr uint64_t kMaxCallSize = rt::kMaxRecvSize;  // -m and -M, bytes
constexpr uint64_t kPatternBytes = (1u << 20) + 4093;  // the stream repeats after this many bytes

const char* kUsage =
    "usage: hcasim-sdp-client [--device NAME] [-p PORT] [netperf options] [-- -m SIZE -M SIZE]\n"
    "  netperf TCP_STREAM over the SDP engine to hcasim-sdp-server on -H HOST (default localhost).\n"
    "  --device NAME   emu (the emulated HCA, no hardware needed) or an RDMA device; default\n"
    "                  $HCASIM_DEVICE, else the first RDMA device\n"
    "  -p PORT         the server's port (default 12865)\n"
    "  -l SECONDS      test length (default 10); -l -BYTES sends that many bytes instead\n"
    "  --set sdp.zcopy_thresh=N   ib_sdp's sdp_zcopy_thresh: sends of at least N bytes use\n"
    "                  bzcopy (0 = bcopy only; default 65536)\n"
    "  --set fault.loss|corrupt|dup|reorder=P, fault.seed=N   faults injected by the emulated\n"
    "                  HCA on each frame it sends (--device emu; the server takes its own)\n"
    "  --set qp.retry_cnt=N, qp.timeout=N, qp.rnr_retry=N   the QP's RC retry attributes\n"
    "                  (emulated HCA; defaults 7, 14 = 67.1 ms, 7)\n"
    "  -c -C -P 0|1 -f FMT -T L,R -v N and the test options -m -M -s -S as netperf's.\n"
    "  The data is checked: the client prints both ends' CRC-32 on stderr and exits 1 on a\n"
    "  mismatch. With faults, the QP's fault counters follow on stderr (\"faults: ...\").\n";

struct ClientArgs {
  std::optional<std::string> device;
  uint16_t port = rt::kDefaultPort;
  std::vector<std::string> netperf_words;
};

/// Takes --device and -p out of the words before `--`; the rest is netperf's.
ClientArgs split_args(const std::vector<std::string>& words) {
  ClientArgs a;
  bool test = false;
  std::optional<std::string> device_seen, port_seen;
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (test || w == "--") {
      test = true;
      a.netperf_words.push_back(w);
      continue;
    }
    auto value = [&](const std::string& flag) {
      if (i + 1 >= words.size()) throw InputError(flag + ": missing value");
      return words[++i];
    };
    // A second --device or -p is an error, as every single-valued option of hcasim's is.
    auto once = [&](const std::string& flag, std::optional<std::string>& seen, const std::string& v) {
      if (seen) util::check_single_value(flag, {*seen, v});
      seen = v;
      return v;
    };
    if (w == "--device") {
      a.device = once("--device", device_seen, value("--device"));
    } else if (w.rfind("--device=", 0) == 0) {
      a.device = once("--device", device_seen, w.substr(9));
    } else if (w == "-p" || (w.rfind("-p", 0) == 0 && w.size() > 2 && w[2] != '-')) {
      const std::string v = once("-p", port_seen, w == "-p" ? value("-p") : w.substr(2));
      const bool digits = !v.empty() && v.size() <= 5 && v.find_first_not_of("0123456789") == std::string::npos;
      const int n = digits ? std::stoi(v) : 0;
      if (n < 1 || n > 65535) throw InputError(fmt::format("-p: '{}' is not a port (1-65535)", v));
      a.port = static_cast<uint16_t>(n);
    } else {
      a.netperf_words.push_back(w);
    }
  }
  if (a.device && a.device->empty()) throw InputError("--device: empty name");
  return a;
}

/// What --set sets in a real run: the SDP engine's sdp.zcopy_thresh, the emulated HCA's faults
/// and the QP's retry attributes.
struct Settings {
  sdp::SdpConfig engine;
  model::FaultConfig faults;
  model::RcRetry retry;
};

/// ib_sdp's defaults and the model's, with the --set assignments applied.
Settings settings(const frontends::NetperfOptions& o) {
  Settings st;
  sdp::SdpConfig& c = st.engine;
  for (const std::string& s : o.sets) {
    if (model::apply_fault_setting(s, st.faults, st.retry)) continue;
    const auto eq = s.find('=');
    const std::string key = s.substr(0, eq), v = eq == std::string::npos ? "" : s.substr(eq + 1);
    if (key != "sdp.zcopy_thresh")
      throw InputError(fmt::format("--set {}: a real run sets only sdp.zcopy_thresh, fault.* and qp.* (the "
                                   "platform parameters are the machine's own)", s));
    const auto n = util::parse_number(v);
    if (!n || *n < 0 || *n != static_cast<double>(static_cast<uint64_t>(*n)))
      throw InputError(fmt::format("--set {}: '{}' is not a byte count", s, v));
    c.zcopy_thresh = static_cast<uint64_t>(*n);
  }
  return st;
}

void refuse_simulator_options(const frontends::NetperfOptions& o) {
  auto no = [](const char* flag) {
    throw InputError(fmt::format("{}: a simulator option; a real run uses the machine it runs on", flag));
  };
  if (o.platform != frontends::kDefaultPlatform) no("--platform");
  if (o.remote_platform) no("--remote-platform");
  if (o.profile) no("--profile");
  if (o.stats) no("--stats");
  if (o.csv_path) no("--csv");
  if (o.verify_data) no("--verify-data (the data is always checked by CRC-32)");
}

int run(const std::vector<std::string>& words) {
  const ClientArgs args = split_args(words);
  frontends::NetperfOptions o = frontends::parse_netperf_args(args.netperf_words, /*allow_byte_count=*/true);
  frontends::require_stream_test(o, "hcasim-sdp-client");
  refuse_simulator_options(o);
  const Settings st = settings(o);
  const sdp::SdpConfig& config = st.engine;
  const uint64_t send_size = o.send_size ? o.send_size : (o.local_send_socket ? o.local_send_socket : kDefaultSendSize);
  const uint64_t recv_size = o.recv_size ? o.recv_size : send_size;
  // The buffers live in the device's memory arena, which an RDMA device pins whole.
  if (send_size > kMaxCallSize || recv_size > kMaxCallSize)
    throw InputError(fmt::format("-m {} / -M {} bytes: at most {} bytes per call", send_size, recv_size, kMaxCallSize));
  if (o.local_cpu_bind) {
    try {
      rt::bind_to_cpu(*o.local_cpu_bind);
    } catch (const sdp::DeviceError& e) {  // a CPU this machine lacks: the flag is wrong, as in hcasim netperf
      throw InputError(e.what());
    }
  }

  const uint64_t memory = (32u << 20) + kPatternBytes + send_size + recv_size;
  auto device = rt::open_device(rt::device_name(args.device), memory, st.faults, st.retry);
  sdp::ProcessMemory& mem = device->memory();
  rt::WallHost host(mem, rt::online_cpus());

  // The send data: a seeded pseudo-random pattern, stream byte i = pattern[i % kPatternBytes];
  // the buffer holds one period plus one send so that every send is one contiguous slice.
  const sdp::Addr pattern = mem.allocate(kPatternBytes + send_size, sdp::DataMode::Bytes);
  {
    uint8_t* p = mem.bytes(pattern, kPatternBytes + send_size);
    uint64_t x = o.seed * 0x9E3779B97F4A7C15ULL + 1;
    for (uint64_t i = 0; i < kPatternBytes; ++i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;  // xorshift64 (Marsaglia 2003)
      p[i] = static_cast<uint8_t>(x >> 24);
    }
    for (uint64_t i = 0; i < send_size; ++i) p[kPatternBytes + i] = p[i % kPatternBytes];
  }
  const sdp::Addr inbox = mem.allocate(std::max<uint64_t>(recv_size, rt::StreamReport::kSize), sdp::DataMode::Bytes);

  auto conn = rt::SdpConnection::connect(*device, host, o.host, args.port, config);
  rt::StreamRequest req;
  req.recv_size = recv_size;
  req.remote_cpu = o.remote_cpu_bind ? *o.remote_cpu_bind : -1;
  const auto req_bytes = req.encode();
  mem.write_bytes(inbox, req_bytes.data(), req_bytes.size());
  conn->send(inbox, req_bytes.size());

  const uint64_t bzcopy_before = conn->stats().bzcopy_calls;  // the request's send, if it was one
  const rt::CpuTimes cpu0 = rt::read_cpu_times();
  const auto t0 = std::chrono::steady_clock::now();
  const auto deadline = t0 + std::chrono::duration<double>(o.length_s);
  uint64_t sent = 0, calls = 0;
  uint32_t crc = 0;
  for (;;) {
    uint64_t n = send_size;
    if (o.length_bytes) {
      if (sent >= o.length_bytes) break;
      n = std::min(n, o.length_bytes - sent);
    } else if (std::chrono::steady_clock::now() >= deadline) {
      break;
    }
    const uint64_t off = sent % kPatternBytes;
    crc = rt::crc32_update(crc, mem.bytes(pattern + off, n), n);
    sent += conn->send(pattern + off, n);
    ++calls;
  }
  conn->close();
  // The report, then the server's end of stream.
  std::array<uint8_t, rt::StreamReport::kSize> rep{};
  if (!conn->recv_exact(inbox, rep.size())) throw sdp::DeviceError("the server closed the connection without its report");
  mem.read_bytes(inbox, rep.data(), rep.size());
  while (conn->recv(inbox, recv_size) > 0) {
  }
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const rt::CpuTimes cpu1 = rt::read_cpu_times();
  const sdp::SdpStats stats = conn->stats();
  conn->finish(2000);
  const model::FaultStats faults = conn->fault_stats();
  const rt::StreamReport report = rt::StreamReport::decode(rep);

  frontends::TcpStreamResult r;
  r.local_send_socket = o.local_send_socket ? o.local_send_socket : uint64_t{config.tx_ring} * config.max_recv_size;
  r.remote_recv_socket = o.remote_recv_socket ? o.remote_recv_socket : uint64_t{config.rx_ring} * config.max_recv_size;
  r.send_size = send_size;
  r.recv_size = recv_size;
  r.elapsed_s = elapsed;
  r.bytes_sent = sent;
  r.bytes_received = report.bytes;
  r.send_calls = calls;
  r.recv_calls = report.recv_calls;
  r.local_cpus = rt::online_cpus();
  r.remote_cpus = static_cast<int>(report.cpus);
  r.local_util_pct = rt::utilisation_pct(cpu0, cpu1);
  r.remote_util_pct = report.util_pct;
  r.data_verified = report.bytes == sent && report.crc32 == crc;
  std::fputs(frontends::format_netperf_output(o, r, frontends::netperf_figures(o, r)).c_str(), stdout);
  std::fflush(stdout);
  const bool ok = report.bytes == sent && report.crc32 == crc;
  std::fprintf(stderr, "%s: device %s: sent %llu bytes crc32 %08x, the server received %llu bytes crc32 %08x: %s\n",
               kProg, device->name().c_str(), static_cast<unsigned long long>(sent), crc,
               static_cast<unsigned long long>(report.bytes), report.crc32, ok ? "match" : "MISMATCH");
  if (report.flags & rt::StreamReport::kUnbound)
    std::fprintf(stderr, "%s: note: the server could not bind to CPU %d (-T ,%d) and ran unbound\n", kProg,
                 req.remote_cpu, req.remote_cpu);
  std::fprintf(stderr, "%s: sdp: %llu send calls, %llu of them bzcopy (sdp_zcopy_thresh %llu), %llu SDP messages sent\n",
               kProg, static_cast<unsigned long long>(calls), static_cast<unsigned long long>(stats.bzcopy_calls - bzcopy_before),
               static_cast<unsigned long long>(config.zcopy_thresh), static_cast<unsigned long long>(stats.msgs_sent));
  // netperf's output above stays netperf's; the emulated wire's counters are ours, on stderr.
  if (st.faults.any()) std::fprintf(stderr, "%s: %s\n", kProg, faults.summary().c_str());
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> words(argv + 1, argv + argc);
  for (const auto& w : words)
    if (w == "-h" || w == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
  rt::exit_on_interrupt(kProg);
  try {
    return run(words);
  } catch (const InputError& e) {
    std::fprintf(stderr, "%s: %s\n", kProg, e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", kProg, e.what());
    return 1;
  }
}
