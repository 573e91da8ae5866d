// netperf 2.4.3 TCP_STREAM output (netperf_output.h). Field widths and precisions are those of
// netperf 2.4.3 src/nettest_bsd.c send_tcp_stream and print_top_test_header; the numbers pass
// through C float where netperf keeps them in float (elapsed_time, utilisations, service
// demands), so rounding at the printed precision is netperf's.
#include "frontends/netperf_output.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <unistd.h>

#include "frontends/cformat.h"
#include "model/cpu.h"

namespace hcasim::frontends {

namespace {

/// netperf keeps these in float; printing the float reproduces its rounding.
double as_float(double v) { return static_cast<double>(static_cast<float>(v)); }

/// netlib.c format_cpu_method: 'S' for /proc/stat (PROC_STAT, Linux), 'U' (CPU_UNKNOWN) for a
/// side whose CPU was not measured (cpu_method is only set by cpu_start when measuring).
char cpu_method(bool measured) { return measured ? 'S' : 'U'; }

/// Banner, print_top_test_header("TCP STREAM TEST", ...) ("TCP MAERTS TEST", "TCP
/// REQUEST/RESPONSE TEST"): the local data address is 0.0.0.0 (no -L); the remote is the -H
/// name and its address; the ports -P's; " : nodelay" after the test's -D, " : demo" after
/// the global -D, " : cpu bind" after -T, in that order.
std::string banner(const NetperfOptions& o) {
  const std::string address = o.host == "localhost" ? "127.0.0.1" : o.host;
  const char* name = o.test == "TCP_RR" ? "TCP REQUEST/RESPONSE TEST" : o.test == "TCP_MAERTS" ? "TCP MAERTS TEST" : "TCP STREAM TEST";
  // The ports are getaddrinfo's of -P's local and remote data ports (complete_addrinfos).
  std::string line = fmt::format("{} from 0.0.0.0 (0.0.0.0) port {} AF_INET to {} ({}) port {} AF_INET", name,
                                 o.local_data_port, o.host, address, o.remote_data_port);
  if (o.nodelay) line += " : nodelay";
  if (o.demo) line += " : demo";  // only a netperf built with --enable-demo takes -D (WANT_DEMO)
  if (o.cpu_binding_requested) line += " : cpu bind";
  return line + "\n";
}

/// netperf 2.4.3 send_tcp_rr's output after the banner (tput_title, tput_fmt_0,
/// tput_fmt_1_line_1/2, cpu_title, cpu_fmt_0, cpu_fmt_1_line_1/2, ksink_fmt).
std::string rr_output(const NetperfOptions& o, const TcpStreamResult& r, const NetperfFigures& f) {
  std::string out;
  const double elapsed = as_float(f.elapsed_s);
  const auto lss = static_cast<int>(r.local_send_socket), lsr = static_cast<int>(r.local_recv_socket);
  const auto rss = static_cast<int>(r.remote_send_socket), rsr = static_cast<int>(r.remote_recv_socket);
  const auto req = static_cast<int>(r.request_size), rsp = static_cast<int>(r.response_size);
  if (o.local_cpu || o.remote_cpu) {
    if (o.verbosity == 0) {
      const bool local = o.local_cpu;
      out += cformat("%6.3f %c %s\n", as_float(local ? f.local_sd_us_per_kb : f.remote_sd_us_per_kb),
                     cpu_method(local ? o.local_cpu : o.remote_cpu), "");
    } else if (o.verbosity <= 2) {
      if (o.print_headers) {
        out += "Local /Remote\n"
               "Socket Size   Request Resp.  Elapsed Trans.   CPU    CPU    S.dem   S.dem\n"
               "Send   Recv   Size    Size   Time    Rate     local  remote local   remote\n";
        out += cformat("bytes  bytes  bytes   bytes  secs.   per sec  %% %c    %% %c    us/Tr   us/Tr\n\n",
                       cpu_method(o.local_cpu), cpu_method(o.remote_cpu));
      }
      out += cformat("%-6d %-6d %-6d  %-6d %-6.2f  %-6.2f  %-6.2f %-6.2f %-6.3f  %-6.3f %s\n", lss, lsr, req, rsp,
                     elapsed, f.throughput, as_float(f.local_util_pct), as_float(f.remote_util_pct),
                     as_float(f.local_sd_us_per_kb), as_float(f.remote_sd_us_per_kb), "");
      out += cformat("%-6d %-6d\n", rss, rsr);
    }
  } else {
    if (o.verbosity == 0) {
      out += cformat("%7.2f %s\n", f.throughput, "");
    } else if (o.verbosity <= 2) {
      if (o.print_headers)
        out += "Local /Remote\n"
               "Socket Size   Request  Resp.   Elapsed  Trans.\n"
               "Send   Recv   Size     Size    Time     Rate         \n"
               "bytes  Bytes  bytes    bytes   secs.    per sec   \n\n";
      out += cformat("%-6d %-6d %-6d   %-6d  %-6.2f   %7.2f   %s\n", lss, lsr, req, rsp, elapsed, f.throughput, "");
      out += cformat("%-6d %-6d\n", rss, rsr);
    }
  }
  if (o.verbosity > 1) {
    // ksink_fmt: local send alignment, then (as 2.4.3 passes them) the remote receive offset, the
    // local send offset and the remote receive offset again: netperf's defaults 8, 0, 0, 0.
    out += cformat("Alignment      Offset\nLocal  Remote  Local  Remote\nSend   Recv    Send   Recv\n%5d  %5d   %5d  %5d\n",
                   8, 0, 0, 0);
  }
  return out;
}

/// netperf 2.4.3 send_tcp_maerts's output after the banner (tput_title, tput_fmt_0/1, cpu_title,
/// cpu_fmt_0/1, ksink_fmt, ksink_fmt2). Its tput_fmt_1 ends "   \n %s": the row's line is
/// followed by a space and no newline, as netperf prints it.
std::string maerts_output(const NetperfOptions& o, const TcpStreamResult& r, const NetperfFigures& f) {
  std::string out;
  const std::string units = netperf_units(o.format);
  const double elapsed = as_float(f.elapsed_s);
  const auto send = static_cast<int>(r.send_size);
  if (o.local_cpu || o.remote_cpu) {
    if (o.verbosity == 0) {
      const bool local = o.local_cpu;
      out += cformat("%6.3f %c %s\n", as_float(local ? f.local_sd_us_per_kb : f.remote_sd_us_per_kb),
                     cpu_method(local ? o.local_cpu : o.remote_cpu), "");
    } else if (o.verbosity <= 2) {
      if (o.print_headers) {
        out +=
            "Recv   Send    Send                          Utilization       Service Demand\n"
            "Socket Socket  Message  Elapsed              Send     Recv     Send    Recv\n"
            "Size   Size    Size     Time     Throughput  local    remote   local   remote\n";
        out += cformat("bytes  bytes   bytes    secs.    %-8.8s/s  %% %c      %% %c      us/KB   us/KB\n\n",
                       units.c_str(), cpu_method(o.local_cpu), cpu_method(o.remote_cpu));
      }
      // cpu_fmt_1 is given rsr_size and lss_size (the remote receive and local send buffers),
      // as in send_tcp_stream.
      out += cformat("%6d %6d %6d    %-6.2f     %7.2f   %-6.2f   %-6.2f   %-6.3f  %-6.3f %s\n",
                     static_cast<int>(r.remote_recv_socket), static_cast<int>(r.local_send_socket), send, elapsed,
                     f.throughput, as_float(f.local_util_pct), as_float(f.remote_util_pct),
                     as_float(f.local_sd_us_per_kb), as_float(f.remote_sd_us_per_kb), "");
    }
  } else {
    if (o.verbosity == 0) {
      out += cformat("%7.2f %s\n", f.throughput, "");
    } else if (o.verbosity <= 2) {
      if (o.print_headers) {
        out +=
            "Recv   Send    Send                          \n"
            "Socket Socket  Message  Elapsed              \n"
            "Size   Size    Size     Time     Throughput  \n";
        out += cformat("bytes  bytes   bytes    secs.    %s/sec  \n\n", units.c_str());
      }
      out += cformat("%6d %6d %6d    %-6.2f   %7.2f   \n %s", static_cast<int>(r.local_recv_socket),
                     static_cast<int>(r.remote_send_socket), send, elapsed, f.throughput, "");
    }
  }
  if (o.verbosity > 1) {
    // ksink_fmt: alignments 8, offsets 0, the bytes netserver sent, per recv and recvs (netperf's),
    // per send and sends (netserver's); ksink_fmt2: the MSS (-1 on an SDP socket).
    const auto bytes = static_cast<double>(r.bytes_sent);
    out += cformat("\nAlignment      Offset         %-8.8s %-8.8s    Recvs   %-8.8s Sends\n", "Bytes", "Bytes", "Bytes");
    out += "Local  Remote  Local  Remote  Xfered   Per                 Per\n";
    out += "Recv   Send    Recv   Send             Recv (avg)          Send (avg)\n";
    out += cformat("%5d   %5d  %5d   %5d %6.4g  %6.2f    %6d   %6.2f %6d\n", 8, 8, 0, 0, bytes,
                   bytes / static_cast<double>(r.recv_calls), static_cast<int>(r.recv_calls),
                   bytes / static_cast<double>(r.send_calls), static_cast<int>(r.send_calls));
    out += cformat("\nMaximum\nSegment\nSize (bytes)\n%6d\n", -1);
  }
  return out;
}

/// -D's interim results as netperf 2.4.3 prints them while the test runs (nettest_bsd.c
/// DEMO_STREAM_INTERVAL: "Interim result: %7.2f %s/s over %.2f seconds", the throughput in -f's
/// units; DEMO_RR_INTERVAL: "%.2f Trans/s").
std::string interim_lines(const NetperfOptions& o, const TcpStreamResult& r) {
  std::string out;
  for (const auto& ir : r.interim) {
    const double secs = ir.interval_us / 1000000.0;
    if (o.test == "TCP_RR")
      out += cformat("Interim result: %.2f %s/s over %.2f seconds\n", interim_figure(o, ir), "Trans", secs);
    else
      out += cformat("Interim result: %7.2f %s/s over %.2f seconds\n", interim_figure(o, ir),
                     netperf_units(o.format).c_str(), secs);
  }
  return out;
}

std::string cell(double v, bool present) { return present ? fmt::format("{}", v) : ""; }

}  // namespace

double netperf_throughput(double bytes, double elapsed_s, char format) {
  double divisor = 1024.0;
  switch (format) {
    case 'K': divisor = 1024.0; break;
    case 'M': divisor = 1024.0 * 1024.0; break;
    case 'G': divisor = 1024.0 * 1024.0 * 1024.0; break;
    case 'k': divisor = 1000.0 / 8.0; break;
    case 'm': divisor = 1000.0 * 1000.0 / 8.0; break;
    case 'g': divisor = 1000.0 * 1000.0 * 1000.0 / 8.0; break;
    default: break;
  }
  return bytes / divisor / elapsed_s;
}

double interim_figure(const NetperfOptions& o, const InterimResult& ir) {
  const double secs = ir.interval_us / 1000000.0;
  return o.test == "TCP_RR" ? ir.units / secs : netperf_throughput(ir.units, secs, o.format);
}

std::string netperf_units(char format) {
  switch (format) {
    case 'M': return "MBytes";
    case 'G': return "GBytes";
    case 'k': return "10^3bits";
    case 'm': return "10^6bits";
    case 'g': return "10^9bits";
    default: return "KBytes";
  }
}

NetperfFigures netperf_figures(const NetperfOptions& o, const TcpStreamResult& r) {
  NetperfFigures f;
  f.elapsed_s = r.elapsed_s;
  if (o.test == "TCP_RR") {
    // send_tcp_rr: thruput = nummessages / elapsed_time (a float); the service demands are
    // calc_service_demand(nummessages * 1024, ...), i.e. us of CPU per transaction.
    const auto n = static_cast<double>(r.transactions);
    f.throughput = n / as_float(r.elapsed_s);
    f.transaction_rate = f.throughput;
    f.throughput_mbps = static_cast<double>(r.bytes_sent + r.bytes_received) * 8 / r.elapsed_s / 1e6;
    if (o.local_cpu) {
      f.local_util_pct = r.local_util_pct;
      f.local_sd_us_per_kb = model::service_demand_us_per_kb(r.local_util_pct, r.local_cpus, r.transactions * 1024, r.elapsed_s);
    }
    if (o.remote_cpu) {
      f.remote_util_pct = r.remote_util_pct;
      f.remote_sd_us_per_kb =
          model::service_demand_us_per_kb(r.remote_util_pct, r.remote_cpus, r.transactions * 1024, r.elapsed_s);
    }
    return f;
  }
  // send_tcp_stream counts the remote's bytes received, send_tcp_maerts the remote's bytes sent.
  const uint64_t counted = o.test == "TCP_MAERTS" ? r.bytes_sent : r.bytes_received;
  const auto bytes = static_cast<double>(counted);
  // calc_thruput divides by lib_elapsed, a float.
  f.throughput = netperf_throughput(bytes, as_float(r.elapsed_s), o.format);
  f.throughput_mbps = netperf_throughput(bytes, r.elapsed_s, 'm');
  if (o.local_cpu) {
    f.local_util_pct = r.local_util_pct;
    f.local_sd_us_per_kb =
        model::service_demand_us_per_kb(r.local_util_pct, r.local_cpus, counted, r.elapsed_s);
  }
  if (o.remote_cpu) {
    f.remote_util_pct = r.remote_util_pct;
    f.remote_sd_us_per_kb = model::service_demand_us_per_kb(r.remote_util_pct, r.remote_cpus,
                                                          counted, r.elapsed_s);
  }
  return f;
}

std::string format_netperf_output(const NetperfOptions& o, const TcpStreamResult& r,
                                  const NetperfFigures& f) {
  std::string out;
  if (o.print_headers) out += banner(o);
  out += interim_lines(o, r);
  if (o.test == "TCP_RR") return out + rr_output(o, r, f);
  if (o.test == "TCP_MAERTS") return out + maerts_output(o, r, f);
  const std::string units = netperf_units(o.format);
  const uint64_t rsr = r.remote_recv_socket, lss = r.local_send_socket, send = r.send_size;
  const double elapsed = as_float(f.elapsed_s);

  if (o.local_cpu || o.remote_cpu) {
    if (o.verbosity == 0) {
      // cpu_fmt_0: the local service demand if measured, else the remote one.
      const bool local = o.local_cpu;
      out += cformat("%6.3f %c %s\n",
                     as_float(local ? f.local_sd_us_per_kb : f.remote_sd_us_per_kb),
                     cpu_method(local ? o.local_cpu : o.remote_cpu), "");
    } else if (o.verbosity <= 2) {
      if (o.print_headers) {
        out +=
            "Recv   Send    Send                          Utilization       Service Demand\n"
            "Socket Socket  Message  Elapsed              Send     Recv     Send    Recv\n"
            "Size   Size    Size     Time     Throughput  local    remote   local   remote\n";
        out += cformat("bytes  bytes   bytes    secs.    %-8.8s/s  %% %c      %% %c      "
                       "us/KB   us/KB\n\n",
                       units.c_str(), cpu_method(o.local_cpu), cpu_method(o.remote_cpu));
      }
      out += cformat("%6" PRIu64 " %6" PRIu64 " %6" PRIu64
                     "    %-6.2f     %7.2f   %-6.2f   %-6.2f   %-6.3f  %-6.3f %s\n",
                     rsr, lss, send, elapsed, f.throughput, as_float(f.local_util_pct),
                     as_float(f.remote_util_pct), as_float(f.local_sd_us_per_kb),
                     as_float(f.remote_sd_us_per_kb), "");
    }
    // netperf 2.4.3 has no case for a verbosity above 2 here: no row is printed.
  } else {
    if (o.verbosity == 0) {
      out += cformat("%7.2f %s\n", f.throughput, "");
    } else if (o.verbosity <= 2) {
      if (o.print_headers) {
        out +=
            "Recv   Send    Send                          \n"
            "Socket Socket  Message  Elapsed              \n"
            "Size   Size    Size     Time     Throughput  \n";
        out += cformat("bytes  bytes   bytes    secs.    %s/sec  \n\n", units.c_str());
      }
      out += cformat("%6" PRIu64 " %6" PRIu64 " %6" PRIu64 "    %-6.2f   %7.2f   %s\n", rsr, lss,
                     send, elapsed, f.throughput, "");
    }
  }

  if (o.verbosity > 1) {
    // ksink_fmt: alignments (netperf's defaults: 8), offsets (0), bytes (the remote's count,
    // "%6.4g"), bytes per send and sends, bytes per recv and recvs.
    const auto bytes = static_cast<double>(r.bytes_received);
    out += "\n";
    out += cformat("Alignment      Offset         %-8.8s %-8.8s    Sends   %-8.8s Recvs\n",
                   "Bytes", "Bytes", "Bytes");
    out += "Local  Remote  Local  Remote  Xfered   Per                 Per\n";
    out += "Send   Recv    Send   Recv             Send (avg)          Recv (avg)\n";
    out += cformat("%5d   %5d  %5d   %5d %6.4g  %6.2f    %6" PRIu64 "   %6.2f %6" PRIu64 "\n", 8,
                   8, 0, 0, bytes, bytes / static_cast<double>(r.send_calls), r.send_calls,
                   bytes / static_cast<double>(r.recv_calls), r.recv_calls);
    // ksink_fmt2: TCP MSS from getsockopt(TCP_MAXSEG), which an SDP socket does not answer.
    out += cformat("\nMaximum\nSegment\nSize (bytes)\n%6d\n", -1);
  }
  return out;
}

std::string format_cpu_profile(std::string_view host, const std::vector<CoreProfile>& cores,
                               double elapsed_s) {
  const double elapsed_ns = elapsed_s * 1e9;
  auto pct = [&](double ns) { return elapsed_ns > 0 ? 100.0 * ns / elapsed_ns : 0.0; };
  auto row = [&](double ns, std::string_view name) {
    return fmt::format("          {:6.2f}  {:10.6f}  {}\n", pct(ns), ns * 1e-9, name);
  };

  std::string body;
  double all_busy_ns = 0;
  for (const auto& core : cores) {
    double busy_ns = 0;
    std::vector<std::pair<std::string_view, double>> rows;
    for (const auto& [name, ns] : core.busy_ns) {
      busy_ns += ns;
      rows.emplace_back(name, ns);
    }
    all_busy_ns += busy_ns;
    rows.emplace_back("idle", elapsed_ns > 0 ? std::max(0.0, elapsed_ns - busy_ns) : 0.0);
    std::stable_sort(rows.begin(), rows.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    body += fmt::format("  CPU {:<3d} % time     seconds  activity\n", core.core);
    for (const auto& [name, ns] : rows)
      if (ns != 0.0) body += row(ns, name);
    body += row(busy_ns, "total busy");
    // What the wakeup row is made of: cpu.wakeup (+ cpu.ipi) per sleeper woken, cpu.context_switch
    // per sleeper resumed on this CPU.
    if (core.wakeups + core.context_switches > 0)
      body += fmt::format("          wakeups {} ({} with an IPI), context switches {}\n", core.wakeups, core.ipis,
                          core.context_switches);
  }

  if (cores.empty()) return fmt::format("{}: no CPUs\n", host);
  const auto n = static_cast<double>(cores.size());
  return fmt::format("{}: utilisation {:.2f} % (mean over {} CPU{}) in {:.6f} s\n", host,
                     pct(all_busy_ns) / n, cores.size(), cores.size() == 1 ? "" : "s",
                     elapsed_s) +
         body;
}

std::string format_netperf_profile(const TcpStreamResult& r) {
  // fmt, not "\n" + std::string&&: GCC 12 warns (-Wrestrict) on that operator+ (GCC bug 105329).
  return fmt::format("\n{}\n{}", format_cpu_profile("local host (netperf)", r.local_profile, r.elapsed_s),
                     format_cpu_profile("remote host (netserver)", r.remote_profile, r.elapsed_s));
}

std::string netperf_csv_header() {
  return "test,send_size_bytes,recv_size_bytes,remote_recv_socket_bytes,local_send_socket_bytes,"
         "elapsed_s,throughput_mbps,util_local_pct,util_remote_pct,sd_local_us_per_kb,"
         "sd_remote_us_per_kb,bytes_received,send_calls,recv_calls,transaction_rate_per_s";
}

std::string format_netperf_csv(const NetperfOptions& o, const TcpStreamResult& r,
                               const NetperfFigures& f) {
  return fmt::format("{}\n{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", netperf_csv_header(),
                     o.test, r.send_size, r.recv_size, r.remote_recv_socket, r.local_send_socket,
                     f.elapsed_s, f.throughput_mbps, cell(f.local_util_pct, o.local_cpu),
                     cell(f.remote_util_pct, o.remote_cpu),
                     cell(f.local_sd_us_per_kb, o.local_cpu),
                     cell(f.remote_sd_us_per_kb, o.remote_cpu), r.bytes_received, r.send_calls,
                     r.recv_calls, cell(f.transaction_rate, o.test == "TCP_RR"));
}

std::string format_stats_line(const TcpStreamResult& r) {
  const std::string speed =
      r.wall_s > 0 ? fmt::format("{:.2f}", r.elapsed_s / r.wall_s) : std::string("inf");
  const std::string per_message =
      r.sdp_messages > 0 ? fmt::format("{:.2f}", static_cast<double>(r.simgrid_activities) / static_cast<double>(r.sdp_messages))
                         : std::string("-");
  return fmt::format(
      "hcasim: stats: activities={} time_steps={} events={} switches={} transfers_simgrid={} transfers_alone={} "
      "sdp_messages={} activities_per_message={} simulated_s={:.3f} wall_s={:.3f} speed={} simulated s per wall s "
      "max_rss_mb={:.1f}",
      r.simgrid_activities, r.simgrid_time_steps, r.kernel_events, r.context_switches, r.transfers_simgrid,
      r.transfers_alone, r.sdp_messages, per_message, r.elapsed_s, r.wall_s, speed,
      static_cast<double>(r.max_rss_kb) / 1024);
}

std::string format_link_busy_line(const std::vector<std::pair<std::string, double>>& links, double interval_s) {
  std::string out = "hcasim: link busy:";
  for (const auto& [name, busy] : links) {
    out += fmt::format(" {}={:.6f}s", name, busy);
    if (interval_s > 0) out += fmt::format("({:.1f}%)", 100.0 * busy / interval_s);
  }
  return out;
}

std::string format_progress_line(double simulated_s, double length_s, double wall_s) {
  const double speed = wall_s > 0 ? simulated_s / wall_s : 0;
  std::string left = "?";
  if (speed > 0) {
    const double s = std::max(0.0, length_s - simulated_s) / speed;
    if (s < 120) left = fmt::format("{:.0f} s", s);
    else if (s < 7200) left = fmt::format("{:.0f} min", s / 60);
    else if (s < 48 * 3600.0) left = fmt::format("{:.1f} h", s / 3600);
    else if (s < 730 * 86400.0) left = fmt::format("{:.1f} days", s / 86400);
    else left = fmt::format("{:.3g} years", s / (365.25 * 86400));
  }
  return fmt::format("hcasim: simulated {:.1f} s of {} s ({:.1f} %) at {:.3g} simulated s per wall s, about {} to go",
                     simulated_s, length_s, length_s > 0 ? 100 * simulated_s / length_s : 0.0, speed, left);
}

std::string format_tcp_tuning_line(const IpoibStreamResult& r) {
  auto buffer = [](const char* what, uint64_t created, const IpoibStreamResult::SocketEnd& end) {
    return end.tuned ? fmt::format("{} buffer {} -> {} B (autotuned)", what, created, end.bytes)
                     : fmt::format("{} buffer {} B (set)", what, created);
  };
  const TcpStreamResult& s = r.stream;
  std::string line = "hcasim: tcp: netperf " + buffer("send", s.local_send_socket, r.local_send_end) + ", " +
                     buffer("receive", s.local_recv_socket, r.local_recv_end) + "; netserver " +
                     buffer("send", s.remote_send_socket, r.remote_send_end) + ", " +
                     buffer("receive", s.remote_recv_socket, r.remote_recv_end);
  line += r.mss_first == r.mss ? fmt::format("; segments {} B", r.mss)
                               : fmt::format("; segments {} B, then {} B", r.mss_first, r.mss);
  return line;
}

}  // namespace hcasim::frontends
