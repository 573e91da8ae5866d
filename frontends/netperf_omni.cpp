// netperf 2.7's output selectors (netperf_omni.h). Names, header lines and printf formats are
// those of netperf 2.7.0 src/nettest_omni.c print_omni_init_list; the values are computed as
// send_omni_inner computes them at the end of a test.
#include "frontends/netperf_omni.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstring>
#include <optional>
#include <string_view>

#include <unistd.h>

#include <fmt/format.h>

#include "frontends/cformat.h"
#include "frontends/netperf_output.h"
#include "model/cpu.h"
#include "model/error.h"
#include "util/input_file.h"

namespace hcasim::frontends {

namespace {

[[noreturn]] void fail(const std::string& what) { throw InputError(what); }

/// Every selector name netperf 2.7 knows (netperf_output_enum_to_str), in its enum order.
constexpr std::string_view kAllNames[] = {
    "OUTPUT_NONE", "COMMAND_LINE", "UUID", "RESULT_BRAND", "SOCKET_TYPE", "DIRECTION", "PROTOCOL", "ELAPSED_TIME",
    "SOURCE_PORT", "SOURCE_ADDR", "SOURCE_FAMILY", "DEST_PORT", "DEST_ADDR", "DEST_FAMILY", "THROUGHPUT",
    "LOCAL_SEND_THROUGHPUT", "LOCAL_RECV_THROUGHPUT", "REMOTE_SEND_THROUGHPUT", "REMOTE_RECV_THROUGHPUT",
    "THROUGHPUT_UNITS", "CONFIDENCE_LEVEL", "CONFIDENCE_INTERVAL", "CONFIDENCE_ITERATION", "THROUGHPUT_CONFID",
    "LOCAL_CPU_CONFID", "REMOTE_CPU_CONFID", "RT_LATENCY", "TRANSACTION_RATE", "BURST_SIZE",
    "LOCAL_TRANSPORT_RETRANS", "REMOTE_TRANSPORT_RETRANS", "TRANSPORT_MSS", "REQUEST_SIZE", "RESPONSE_SIZE",
    "LSS_SIZE_REQ", "LSS_SIZE", "LSS_SIZE_END", "LSR_SIZE_REQ", "LSR_SIZE", "LSR_SIZE_END", "LOCAL_SEND_SIZE",
    "LOCAL_RECV_SIZE", "LOCAL_SEND_CALLS", "LOCAL_RECV_CALLS", "LOCAL_BYTES_PER_RECV", "LOCAL_BYTES_PER_SEND",
    "LOCAL_BYTES_SENT", "LOCAL_BYTES_RECVD", "LOCAL_BYTES_XFERD", "LOCAL_SEND_OFFSET", "LOCAL_RECV_OFFSET",
    "LOCAL_RECV_ALIGN", "LOCAL_SEND_ALIGN", "LOCAL_SEND_WIDTH", "LOCAL_RECV_WIDTH", "LOCAL_SEND_DIRTY_COUNT",
    "LOCAL_RECV_DIRTY_COUNT", "LOCAL_RECV_CLEAN_COUNT", "LOCAL_CPU_UTIL", "LOCAL_CPU_PERCENT_USER",
    "LOCAL_CPU_PERCENT_SYSTEM", "LOCAL_CPU_PERCENT_IOWAIT", "LOCAL_CPU_PERCENT_IRQ", "LOCAL_CPU_PERCENT_SWINTR",
    "LOCAL_CPU_BIND", "LOCAL_SD", "SD_UNITS", "LOCAL_CPU_METHOD", "LOCAL_CPU_COUNT", "LOCAL_CPU_PEAK_UTIL",
    "LOCAL_CPU_PEAK_ID", "LOCAL_NODELAY", "LOCAL_CORK", "RSS_SIZE_REQ", "RSS_SIZE", "RSS_SIZE_END",
    "RSR_SIZE_REQ", "RSR_SIZE", "RSR_SIZE_END", "REMOTE_SEND_SIZE", "REMOTE_RECV_SIZE", "REMOTE_SEND_CALLS",
    "REMOTE_RECV_CALLS", "REMOTE_BYTES_PER_RECV", "REMOTE_BYTES_PER_SEND", "REMOTE_BYTES_SENT",
    "REMOTE_BYTES_RECVD", "REMOTE_BYTES_XFERD", "REMOTE_SEND_OFFSET", "REMOTE_RECV_OFFSET", "REMOTE_RECV_ALIGN",
    "REMOTE_SEND_ALIGN", "REMOTE_SEND_WIDTH", "REMOTE_RECV_WIDTH", "REMOTE_SEND_DIRTY_COUNT",
    "REMOTE_RECV_DIRTY_COUNT", "REMOTE_RECV_CLEAN_COUNT", "REMOTE_CPU_UTIL", "REMOTE_CPU_PERCENT_USER",
    "REMOTE_CPU_PERCENT_SYSTEM", "REMOTE_CPU_PERCENT_IOWAIT", "REMOTE_CPU_PERCENT_IRQ", "REMOTE_CPU_PERCENT_SWINTR",
    "REMOTE_CPU_BIND", "REMOTE_SD", "REMOTE_CPU_METHOD", "REMOTE_CPU_COUNT", "REMOTE_CPU_PEAK_UTIL",
    "REMOTE_CPU_PEAK_ID", "REMOTE_NODELAY", "REMOTE_CORK", "LOCAL_INTERFACE_SLOT", "REMOTE_INTERFACE_SLOT",
    "REMOTE_INTERFACE_SUBDEVICE", "REMOTE_INTERFACE_SUBVENDOR", "REMOTE_INTERFACE_DEVICE",
    "REMOTE_INTERFACE_VENDOR", "LOCAL_INTERFACE_SUBDEVICE", "LOCAL_INTERFACE_SUBVENDOR", "LOCAL_INTERFACE_DEVICE",
    "LOCAL_INTERFACE_VENDOR", "LOCAL_INTERFACE_NAME", "REMOTE_INTERFACE_NAME", "REMOTE_DRIVER_NAME",
    "REMOTE_DRIVER_VERSION", "REMOTE_DRIVER_FIRMWARE", "REMOTE_DRIVER_BUS", "LOCAL_DRIVER_NAME",
    "LOCAL_DRIVER_VERSION", "LOCAL_DRIVER_FIRMWARE", "LOCAL_INTERVAL_USECS", "LOCAL_INTERVAL_BURST",
    "REMOTE_INTERVAL_USECS", "REMOTE_INTERVAL_BURST", "LOCAL_SECURITY_TYPE_ID", "LOCAL_SECURITY_ENABLED_NUM",
    "LOCAL_SECURITY_TYPE", "LOCAL_SECURITY_ENABLED", "LOCAL_SECURITY_SPECIFIC", "REMOTE_SECURITY_TYPE_ID",
    "REMOTE_SECURITY_ENABLED_NUM", "REMOTE_SECURITY_TYPE", "REMOTE_SECURITY_ENABLED", "REMOTE_SECURITY_SPECIFIC",
    "LOCAL_DRIVER_BUS", "REMOTE_SYSNAME", "REMOTE_MACHINE", "REMOTE_VERSION", "REMOTE_RELEASE", "LOCAL_SYSNAME",
    "LOCAL_MACHINE", "LOCAL_VERSION", "LOCAL_RELEASE", "REMOTE_CPU_MODEL", "REMOTE_CPU_FREQUENCY",
    "REMOTE_SYSTEM_MODEL", "LOCAL_CPU_MODEL", "LOCAL_CPU_FREQUENCY", "LOCAL_SYSTEM_MODEL", "MIN_LATENCY",
    "MAX_LATENCY", "P50_LATENCY", "P90_LATENCY", "P99_LATENCY", "MEAN_LATENCY", "STDDEV_LATENCY",
    "LOCAL_SOCKET_PRIO", "REMOTE_SOCKET_PRIO", "LOCAL_SOCKET_TOS", "REMOTE_SOCKET_TOS", "LOCAL_CONG_CONTROL",
    "REMOTE_CONG_CONTROL", "LOCAL_FILL_FILE", "REMOTE_FILL_FILE", "OUTPUT_END"};

/// The four header lines of the selectors hcasim fills (print_omni_init_list's set_output_elt).
struct Header {
  std::string_view name;
  std::string_view line[4];
};
constexpr Header kHeaders[] = {
    {"OUTPUT_NONE", {" ", "", "", ""}},
    {"SOCKET_TYPE", {"Socket", "Type", "", ""}},
    {"DIRECTION", {"Direction", "", "", ""}},
    {"PROTOCOL", {"Protocol", "", "", ""}},
    {"ELAPSED_TIME", {"Elapsed", "Time", "(sec)", ""}},
    {"SOURCE_PORT", {"Source", "Port", "", ""}},
    {"DEST_PORT", {"Destination", "Port", "", ""}},
    {"THROUGHPUT", {"Throughput", "", "", ""}},
    {"LOCAL_SEND_THROUGHPUT", {"Local", "Send", "Throughput", ""}},
    {"LOCAL_RECV_THROUGHPUT", {"Local", "Recv", "Throughput", ""}},
    {"REMOTE_SEND_THROUGHPUT", {"Remote", "Send", "Throughput", ""}},
    {"REMOTE_RECV_THROUGHPUT", {"Remote", "Recv", "Throughput", ""}},
    {"THROUGHPUT_UNITS", {"Throughput", "Units", "", ""}},
    {"RT_LATENCY", {"Round", "Trip", "Latency", "usec/tran"}},
    {"TRANSACTION_RATE", {"Transaction", "Rate", "Tran/s", ""}},
    {"BURST_SIZE", {"Initial", "Burst", "Requests", ""}},
    {"REQUEST_SIZE", {"Request", "Size", "Bytes", ""}},
    {"RESPONSE_SIZE", {"Response", "Size", "Bytes", ""}},
    {"LSS_SIZE_REQ", {"Local", "Send Socket", "Size", "Requested"}},
    {"LSS_SIZE", {"Local", "Send Socket", "Size", "Initial"}},
    {"LSS_SIZE_END", {"Local", "Send Socket", "Size", "Final"}},
    {"LSR_SIZE_REQ", {"Local", "Recv Socket", "Size", "Requested"}},
    {"LSR_SIZE", {"Local", "Recv Socket", "Size", "Initial"}},
    {"LSR_SIZE_END", {"Local", "Recv Socket", "Size", "Final"}},
    {"LOCAL_SEND_SIZE", {"Local", "Send", "Size", ""}},
    {"LOCAL_RECV_SIZE", {"Local", "Recv", "Size", ""}},
    {"LOCAL_SEND_CALLS", {"Local", "Send", "Calls", ""}},
    {"LOCAL_RECV_CALLS", {"Local", "Recv", "Calls", ""}},
    {"LOCAL_BYTES_PER_RECV", {"Local", "Bytes", "Per", "Recv"}},
    {"LOCAL_BYTES_PER_SEND", {"Local", "Bytes", "Per", "Send"}},
    {"LOCAL_BYTES_RECVD", {"Local", "Bytes", "Received", ""}},
    {"LOCAL_BYTES_SENT", {"Local", "Bytes", "Sent", ""}},
    {"LOCAL_BYTES_XFERD", {"Local", "Bytes", "Xferred", ""}},
    {"LOCAL_CPU_UTIL", {"Local", "CPU", "Util", "%"}},
    {"LOCAL_CPU_BIND", {"Local", "CPU", "Bind", ""}},
    {"LOCAL_SD", {"Local", "Service", "Demand", ""}},
    {"SD_UNITS", {"Service", "Demand", "Units", ""}},
    {"LOCAL_CPU_METHOD", {"Local", "CPU", "Util", "Method"}},
    {"LOCAL_NODELAY", {"Local", "NODELAY", "", ""}},
    {"RSS_SIZE_REQ", {"Remote", "Send Socket", "Size", "Requested"}},
    {"RSS_SIZE", {"Remote", "Send Socket", "Size", "Initial"}},
    {"RSS_SIZE_END", {"Remote", "Send Socket", "Size", "Final"}},
    {"RSR_SIZE_REQ", {"Remote", "Recv Socket", "Size", "Requested"}},
    {"RSR_SIZE", {"Remote", "Recv Socket", "Size", "Initial"}},
    {"RSR_SIZE_END", {"Remote", "Recv Socket", "Size", "Final"}},
    {"REMOTE_SEND_SIZE", {"Remote", "Send", "Size", ""}},
    {"REMOTE_RECV_SIZE", {"Remote", "Recv", "Size", ""}},
    {"REMOTE_SEND_CALLS", {"Remote", "Send", "Calls", ""}},
    {"REMOTE_RECV_CALLS", {"Remote", "Recv", "Calls", ""}},
    {"REMOTE_BYTES_PER_RECV", {"Remote", "Bytes", "Per", "Recv"}},
    {"REMOTE_BYTES_PER_SEND", {"Remote", "Bytes", "Per", "Send"}},
    {"REMOTE_BYTES_RECVD", {"Remote", "Bytes", "Received", ""}},
    {"REMOTE_BYTES_SENT", {"Remote", "Bytes", "Sent", ""}},
    {"REMOTE_BYTES_XFERD", {"Remote", "Bytes", "Xferred", ""}},
    {"REMOTE_CPU_UTIL", {"Remote", "CPU", "Util", "%"}},
    {"REMOTE_CPU_BIND", {"Remote", "CPU", "Bind", ""}},
    {"REMOTE_SD", {"Remote", "Service", "Demand", ""}},
    {"REMOTE_CPU_METHOD", {"Remote", "CPU", "Util", "Method"}},
    {"REMOTE_NODELAY", {"Remote", "NODELAY", "", ""}},
    {"MIN_LATENCY", {"Minimum", "Latency", "Microseconds", ""}},
    {"MAX_LATENCY", {"Maximum", "Latency", "Microseconds", ""}},
    {"MEAN_LATENCY", {"Mean", "Latency", "Microseconds", ""}},
    {"STDDEV_LATENCY", {"Stddev", "Latency", "Microseconds", ""}},
};

const Header* header_of(std::string_view name) {
  for (const auto& h : kHeaders)
    if (h.name == name) return &h;
  return nullptr;
}

std::string upper(std::string_view s) {
  std::string u(s);
  for (auto& c : u) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return u;
}

/// match_string_to_output_mnenomic: the name, upper case, or "" for a name netperf does not know.
std::string match_mnemonic(std::string_view candidate) {
  const std::string u = upper(candidate);
  for (const auto n : kAllNames)
    if (n == u) return u;
  return "";
}

/// match_string_to_output (a selection file's entries): the mnemonic or a selector's header
/// lines joined by single spaces (up to the first empty line), case-insensitively; else
/// OUTPUT_NONE.
std::string match_file_entry(std::string_view candidate) {
  if (std::string m = match_mnemonic(candidate); !m.empty()) return m;
  const std::string u = upper(candidate);
  for (const auto& h : kHeaders) {
    std::string joined;
    for (const auto line : h.line) {
      if (line.empty()) break;
      if (!joined.empty()) joined += ' ';
      joined += line;
    }
    if (upper(joined) == u) return std::string(h.name);
  }
  return "OUTPUT_NONE";
}

const char* flag_of(const NetperfOptions& o) {
  switch (o.output_mode) {
    case NetperfOptions::OutputMode::Csv: return "-o";
    case NetperfOptions::OutputMode::Human: return "-O";
    default: return "-k";
  }
}

/// set_output_list_by_test's lists (NETPERF_OUTPUT_STREAM, _MAERTS, NETPERF_RR, NETPERF_TPUT,
/// NETPERF_CPU).
std::string default_list(const NetperfOptions& o) {
  const std::string tput = "ELAPSED_TIME,THROUGHPUT,THROUGHPUT_UNITS";
  const std::string cpu =
      "LOCAL_CPU_UTIL,LOCAL_CPU_PERCENT_USER,LOCAL_CPU_PERCENT_SYSTEM,LOCAL_CPU_PERCENT_IOWAIT,LOCAL_CPU_PERCENT_IRQ,"
      "LOCAL_CPU_PERCENT_SWINTR,LOCAL_CPU_METHOD,REMOTE_CPU_UTIL,REMOTE_CPU_PERCENT_USER,REMOTE_CPU_PERCENT_SYSTEM,"
      "REMOTE_CPU_PERCENT_IOWAIT,REMOTE_CPU_PERCENT_IRQ,REMOTE_CPU_PERCENT_SWINTR,REMOTE_CPU_METHOD,LOCAL_SD,"
      "REMOTE_SD,SD_UNITS";
  std::string list = o.test == "TCP_RR"       ? "LSS_SIZE_END,LSR_SIZE_END,RSR_SIZE_END,RSS_SIZE_END,REQUEST_SIZE,RESPONSE_SIZE"
                     : o.test == "TCP_MAERTS" ? "RSS_SIZE_END,LSR_SIZE_END,REMOTE_SEND_SIZE"
                                              : "LSS_SIZE_END,RSR_SIZE_END,LOCAL_SEND_SIZE";
  list += "," + tput;
  if (o.local_cpu || o.remote_cpu) list += "," + cpu;
  return list;
}

/// parse_output_selection_line: names separated by ' ' or ',' (strtok), unknown ones dropped.
std::vector<std::string> parse_line(std::string_view line, std::vector<std::string>* dropped) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == ',')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != ',') ++j;
    if (j > i) {
      const std::string_view token = line.substr(i, j - i);
      if (std::string m = match_mnemonic(token); !m.empty())
        out.push_back(m);
      else if (dropped)
        dropped->emplace_back(token);
    }
    i = j;
  }
  return out;
}

/// What the end of a migrated test knows, in netperf 2.7's variables.
struct Omni {
  char fmt = 'm';
  double elapsed = 0;  ///< lib_elapsed, a float
  bool rr = false, stream = false, maerts = false;
  double local_sent = 0, local_recv = 0, remote_sent = 0, remote_recv = 0;
};

/// calc_thruput_interval with libfmt `fmt` (netlib.c; 'x' divides by 1).
double thruput(double units, double secs, char fmt) {
  if (fmt == 'x') return units / secs;
  return netperf_throughput(units, secs, fmt);
}

double as_float(double v) { return static_cast<double>(static_cast<float>(v)); }

/// calc_service_demand_fmt: us of CPU per KB (per transaction with 'x'), as a float.
double service_demand(double units, double elapsed_f, double util_pct, int cpus, char fmt) {
  const double divisor = fmt == 'x' ? 1.0 : 1024.0;
  const double tput = units / divisor / elapsed_f;
  return as_float(as_float(util_pct) * 10000.0 / tput * static_cast<float>(cpus));
}

/// The reason hcasim cannot fill `name` for `o`, or "" when it can.
std::string unfillable(const std::string& name, const NetperfOptions& o) {
  const bool rr = o.test == "TCP_RR", stream = o.test == "TCP_STREAM", maerts = o.test == "TCP_MAERTS";
  if (name == "OUTPUT_END" || header_of(name) == nullptr) {
    if (name.find("CPU_PERCENT") != std::string::npos)
      return "the simulated CPU time is not split into user, system, I/O-wait, IRQ and softirq time as /proc/stat "
             "splits it";
    if (name.find("LATENCY") != std::string::npos)
      return rr ? "hcasim keeps the mean, minimum, maximum and deviation of the transaction times, not their "
                  "histogram's percentiles"
                : fmt::format("hcasim times the transactions of TCP_RR, not the send() calls of {}", o.test);
    return "a property of a real host, socket or netperf build that the simulation does not have";
  }
  const std::string test = o.test;
  if (name == "MIN_LATENCY" || name == "MAX_LATENCY" || name == "MEAN_LATENCY" || name == "STDDEV_LATENCY")
    return rr ? "" : fmt::format("hcasim times the transactions of TCP_RR, not the send() calls of {}", test);
  const auto side_unused = [&](const char* what) {
    return fmt::format("{} is not simulated as netperf counts it for {}", what, test);
  };
  if (name == "LOCAL_SEND_SIZE" && !stream) return side_unused("netperf's send size");
  if (name == "LOCAL_RECV_SIZE" && !maerts) return side_unused("netperf's receive size");
  if (name == "REMOTE_SEND_SIZE" && !maerts) return side_unused("netserver's send size");
  if (name == "REMOTE_RECV_SIZE" && !stream) return side_unused("netserver's receive size");
  if ((name == "LOCAL_SEND_CALLS" || name == "LOCAL_BYTES_PER_SEND") && maerts) return side_unused("netperf's send calls");
  if ((name == "LOCAL_RECV_CALLS" || name == "LOCAL_BYTES_PER_RECV") && stream) return side_unused("netperf's recv calls");
  const bool remote_count = name.rfind("REMOTE_", 0) == 0 &&
                            (name.find("CALLS") != std::string::npos || name.find("BYTES") != std::string::npos ||
                             name.find("THROUGHPUT") != std::string::npos);
  if (remote_count && rr) return "netserver's own counts of a TCP_RR are not kept by the simulation";
  if ((name == "REMOTE_SEND_CALLS" || name == "REMOTE_BYTES_PER_SEND") && stream)
    return side_unused("netserver's send calls");
  if ((name == "REMOTE_RECV_CALLS" || name == "REMOTE_BYTES_PER_RECV") && maerts)
    return side_unused("netserver's recv calls");
  if (rr && name == "THROUGHPUT" && omni_format(o) != 'x')
    return "with -f, TCP_RR's throughput is of netserver's byte counts, which the simulation does not keep";
  return "";
}

}  // namespace

std::string netperf_units_27(char format) {
  if (format == 'x') return "Trans";
  return netperf_units(format);
}

char omni_format(const NetperfOptions& o) {
  if (o.test == "TCP_RR" && !o.format_given) return 'x';
  return o.format;
}

OutputSelection parse_output_selection(const NetperfOptions& o, std::vector<std::string>* dropped) {
  const char* flag = flag_of(o);
  const std::string spec = o.output_selection.empty() ? default_list(o) : o.output_selection;
  OutputSelection sel;
  if (upper(spec) == "ALL")
    fail(fmt::format("{} all: every netperf 2.7 selector, most of which describe a real host hcasim does not have "
                     "(LOCAL_SYSNAME, UUID, ...); list the ones wanted",
                     flag));
  constexpr size_t kMaxBlocks = 4;  // NETPERF_MAX_BLOCKS; later blocks are ignored, as in netperf
  if (spec.find(',') != std::string::npos || spec.find(';') != std::string::npos || !match_mnemonic(spec).empty()) {
    // parse_output_selection_direct: blocks separated by ';'.
    size_t start = 0;
    for (;;) {
      const size_t semi = spec.find(';', start);
      const std::string_view block = std::string_view(spec).substr(start, semi == std::string::npos ? std::string::npos : semi - start);
      if (sel.size() < kMaxBlocks) sel.push_back(parse_line(block, dropped));
      if (semi == std::string::npos) break;
      start = semi + 1;
    }
  } else {
    // parse_output_selection_file: one block per line, entries separated by ','.
    // Only a regular file, read whole and bounded (a FIFO or /dev/zero would never end), after
    // netperf's own refusal of a file it cannot open.
    const std::string what = fmt::format("{} {}", flag, spec);
    util::refuse_non_file(spec, what);
    if (::access(spec.c_str(), R_OK) != 0)
      fail(fmt::format("{}: Could not open output selection file '{}' errno {} (not a selector name either)", what,
                       spec, errno));
    const std::string text = util::read_text(spec, what);
    std::vector<std::string> block;
    std::string name;
    size_t line = 0, column = 1;
    for (const char c : text) {
      if (line >= kMaxBlocks) break;
      if (name.size() == 80)
        fail(fmt::format("{} {}: Output selection starting column {} on line {} is too long", flag, spec, line + 1, column));
      if (c == ',') {
        block.push_back(match_file_entry(name));
        name.clear();
      } else if (c == '\n') {
        block.push_back(match_file_entry(name));
        sel.push_back(block);
        block.clear();
        name.clear();
        ++line;
      } else if (std::isprint(static_cast<unsigned char>(c))) {
        name += c;
      }
      ++column;
    }
    if (line < kMaxBlocks && !name.empty()) block.push_back(match_file_entry(name));
    if (line < kMaxBlocks && !block.empty()) sel.push_back(block);
  }
  // OUTPUT_END ends its block's list (print_omni_* stop at it).
  for (auto& b : sel)
    if (const auto end = std::find(b.begin(), b.end(), "OUTPUT_END"); end != b.end()) b.erase(end, b.end());
  // netperf would run the test and print no result: refused before anything runs.
  if (std::none_of(sel.begin(), sel.end(), [](const auto& b) {
        return std::any_of(b.begin(), b.end(), [](const std::string& n) { return !n.empty() && n != "OUTPUT_NONE"; });
      }))
    fail(fmt::format("{} {}: selects no output (no selector netperf knows): the run would print no result", flag,
                     o.output_selection.empty() ? std::string("''") : o.output_selection));
  return sel;
}

void check_output_selection(const NetperfOptions& o, const OutputSelection& sel) {
  for (const auto& block : sel)
    for (const auto& name : block)
      if (const std::string why = unfillable(name, o); !why.empty())
        fail(fmt::format("{} {}: hcasim cannot fill this selector for {}: {}", flag_of(o), name, o.test, why));
}

namespace {

/// The value of selector `name` as netperf 2.7 formats it (its set_output_elt format).
std::string value_of(const std::string& name, const NetperfOptions& o, const TcpStreamResult& r, const Omni& m,
                     const IpoibStreamResult* ipoib) {
  const auto i = [](int64_t v) { return fmt::format("{}", v); };
  const auto f2 = [](double v) { return cformat("%.2f", v); };
  const auto f3 = [](double v) { return cformat("%.3f", v); };
  const auto req = [](uint64_t v) { return v == 0 ? int64_t{-1} : static_cast<int64_t>(v); };
  // The buffers at the end of the test, both sockets' (IpoibStreamResult::SocketEnd): Linux's
  // autotuning grows those of the IPoIB path's sockets netperf did not set; SDP's keep their size.
  const auto end_of = [&](IpoibStreamResult::SocketEnd IpoibStreamResult::*end, uint64_t initial) {
    return static_cast<int64_t>(ipoib != nullptr ? (ipoib->*end).bytes : initial);
  };
  const double local_xferd = m.local_sent + m.local_recv;
  const double sd_units = m.fmt == 'x' ? static_cast<double>(r.transactions) : local_xferd;
  const char bytes_fmt = m.fmt == 'x' ? 'm' : m.fmt;
  if (name == "OUTPUT_NONE") return " ";
  if (name == "SOCKET_TYPE") return "Stream";
  if (name == "DIRECTION") return m.rr ? "Send|Recv" : m.maerts ? "Receive" : "Send";
  if (name == "PROTOCOL") return "TCP";
  if (name == "ELAPSED_TIME") return f2(m.elapsed);
  if (name == "SOURCE_PORT") return o.local_data_port;
  if (name == "DEST_PORT") return o.remote_data_port;
  if (name == "THROUGHPUT") {
    if (m.rr) return f2(thruput(static_cast<double>(r.transactions), m.elapsed, 'x'));
    return f2(thruput(m.maerts ? local_xferd : m.remote_recv + m.remote_sent, m.elapsed, m.fmt));
  }
  if (name == "LOCAL_SEND_THROUGHPUT") return f2(thruput(m.local_sent, m.elapsed, bytes_fmt));
  if (name == "LOCAL_RECV_THROUGHPUT") return f2(thruput(m.local_recv, m.elapsed, bytes_fmt));
  if (name == "REMOTE_SEND_THROUGHPUT") return f2(thruput(m.remote_sent, m.elapsed, bytes_fmt));
  if (name == "REMOTE_RECV_THROUGHPUT") return f2(thruput(m.remote_recv, m.elapsed, bytes_fmt));
  if (name == "THROUGHPUT_UNITS") return netperf_units_27(m.fmt) + "/s";
  if (name == "RT_LATENCY")
    return f3(m.rr ? 1.0 / (static_cast<double>(r.transactions) / m.elapsed) * 1000000.0 * (1 + 0) : -1.0);
  if (name == "TRANSACTION_RATE") return f3(m.rr ? static_cast<double>(r.transactions) / m.elapsed : 1.0);
  if (name == "BURST_SIZE") return "0";
  if (name == "REQUEST_SIZE") return i(m.rr ? static_cast<int64_t>(r.request_size) : -1);
  if (name == "RESPONSE_SIZE") return i(m.rr ? static_cast<int64_t>(r.response_size) : -1);
  if (name == "LSS_SIZE_REQ") return i(req(o.local_send_socket));
  if (name == "LSR_SIZE_REQ") return i(req(o.local_recv_socket));
  if (name == "RSS_SIZE_REQ") return i(req(o.remote_send_socket));
  if (name == "RSR_SIZE_REQ") return i(req(o.remote_recv_socket));
  if (name == "LSS_SIZE") return i(static_cast<int64_t>(r.local_send_socket));
  if (name == "LSR_SIZE") return i(static_cast<int64_t>(r.local_recv_socket));
  if (name == "RSS_SIZE") return i(static_cast<int64_t>(r.remote_send_socket));
  if (name == "RSR_SIZE") return i(static_cast<int64_t>(r.remote_recv_socket));
  if (name == "LSS_SIZE_END") return i(end_of(&IpoibStreamResult::local_send_end, r.local_send_socket));
  if (name == "LSR_SIZE_END") return i(end_of(&IpoibStreamResult::local_recv_end, r.local_recv_socket));
  if (name == "RSS_SIZE_END") return i(end_of(&IpoibStreamResult::remote_send_end, r.remote_send_socket));
  if (name == "RSR_SIZE_END") return i(end_of(&IpoibStreamResult::remote_recv_end, r.remote_recv_socket));
  if (name == "LOCAL_SEND_SIZE" || name == "REMOTE_SEND_SIZE") return i(static_cast<int64_t>(r.send_size));
  if (name == "LOCAL_RECV_SIZE" || name == "REMOTE_RECV_SIZE") return i(static_cast<int64_t>(r.recv_size));
  if (name == "LOCAL_SEND_CALLS" || name == "REMOTE_SEND_CALLS") return i(static_cast<int64_t>(r.send_calls));
  if (name == "LOCAL_RECV_CALLS" || name == "REMOTE_RECV_CALLS") return i(static_cast<int64_t>(r.recv_calls));
  const auto per = [&](double bytes, uint64_t calls) {
    return f2(calls > 0 ? bytes / static_cast<double>(calls) : 0.0);
  };
  if (name == "LOCAL_BYTES_PER_SEND") return per(m.local_sent, r.send_calls);
  if (name == "LOCAL_BYTES_PER_RECV") return per(m.local_recv, r.recv_calls);
  if (name == "REMOTE_BYTES_PER_SEND") return per(m.remote_sent, r.send_calls);
  if (name == "REMOTE_BYTES_PER_RECV") return per(m.remote_recv, r.recv_calls);
  if (name == "LOCAL_BYTES_SENT") return fmt::format("{}", static_cast<uint64_t>(m.local_sent));
  if (name == "LOCAL_BYTES_RECVD") return fmt::format("{}", static_cast<uint64_t>(m.local_recv));
  if (name == "LOCAL_BYTES_XFERD") return cformat("%.0f", local_xferd);
  if (name == "REMOTE_BYTES_SENT") return fmt::format("{}", static_cast<uint64_t>(m.remote_sent));
  if (name == "REMOTE_BYTES_RECVD") return fmt::format("{}", static_cast<uint64_t>(m.remote_recv));
  if (name == "REMOTE_BYTES_XFERD") return cformat("%.0f", m.remote_sent + m.remote_recv);
  if (name == "LOCAL_CPU_UTIL") return f2(o.local_cpu ? as_float(r.local_util_pct) : -1.0);
  if (name == "REMOTE_CPU_UTIL") return f2(o.remote_cpu ? as_float(r.remote_util_pct) : -1.0);
  if (name == "LOCAL_SD")
    return f3(o.local_cpu ? service_demand(sd_units, m.elapsed, r.local_util_pct, r.local_cpus, m.fmt) : -1.0);
  if (name == "REMOTE_SD")
    return f3(o.remote_cpu ? service_demand(sd_units, m.elapsed, r.remote_util_pct, r.remote_cpus, m.fmt) : -1.0);
  if (name == "SD_UNITS") return m.fmt == 'x' ? "usec/Tran" : "usec/KB";
  // format_cpu_method: 'S' (/proc/stat) for a side whose CPU was measured, else 'U'.
  if (name == "LOCAL_CPU_METHOD") return o.local_cpu ? "S" : "U";
  if (name == "REMOTE_CPU_METHOD") return o.remote_cpu ? "S" : "U";
  if (name == "LOCAL_CPU_BIND") return i(o.local_cpu_bind ? *o.local_cpu_bind : -1);
  if (name == "REMOTE_CPU_BIND") return i(o.remote_cpu_bind ? *o.remote_cpu_bind : -1);
  if (name == "LOCAL_NODELAY" || name == "REMOTE_NODELAY") return o.nodelay ? "1" : "0";
  // HIST_get_stats: the integer-us transaction times' min, max, mean and deviation.
  const LatencyStats& h = r.latency_us;
  const double total = static_cast<double>(h.total);
  if (name == "MIN_LATENCY") return i(h.min_us);
  if (name == "MAX_LATENCY") return i(h.max_us);
  if (name == "MEAN_LATENCY") return f2(h.total ? h.sum_us / total : 0.0);
  if (name == "STDDEV_LATENCY")
    return f2(h.total ? std::sqrt((h.sumsquare_us2 * total - std::pow(h.sum_us, 2)) / std::pow(total, 2)) : 0.0);
  throw std::logic_error("netperf_omni: no value for selector " + name);
}

/// print_top_test_header of send_omni_inner's "MIGRATED ..." name (netperf 2.7 nettest_bsd.c).
std::string banner_27(const NetperfOptions& o) {
  const std::string address = o.host == "localhost" ? "127.0.0.1" : o.host;
  const char* name = o.test == "TCP_RR"       ? "MIGRATED TCP REQUEST/RESPONSE TEST"
                     : o.test == "TCP_MAERTS" ? "MIGRATED TCP MAERTS TEST"
                                              : "MIGRATED TCP STREAM TEST";
  std::string line = fmt::format("{} from 0.0.0.0 (0.0.0.0) port {} AF_INET to {} ({}) port {} AF_INET", name,
                                 o.local_data_port, o.host, address, o.remote_data_port);
  if (o.nodelay) line += " : nodelay";
  if (o.demo) line += " : demo";
  if (o.test == "TCP_RR") line += " : first burst 0";  // WANT_FIRST_BURST: 2.7's configure default
  if (o.cpu_binding_requested) line += " : cpu bind";
  return line + "\n";
}

}  // namespace

std::string format_netperf_omni(const NetperfOptions& o, const OutputSelection& sel, const TcpStreamResult& r,
                                const IpoibStreamResult* ipoib) {
  Omni m;
  m.fmt = omni_format(o);
  m.elapsed = as_float(r.elapsed_s);
  m.rr = o.test == "TCP_RR";
  m.maerts = o.test == "TCP_MAERTS";
  m.stream = !m.rr && !m.maerts;
  if (m.maerts) {
    m.local_recv = static_cast<double>(r.bytes_received);
    m.remote_sent = static_cast<double>(r.bytes_sent);
  } else if (m.stream) {
    m.local_sent = static_cast<double>(r.bytes_sent);
    m.remote_recv = static_cast<double>(r.bytes_received);
  } else {
    m.local_sent = static_cast<double>(r.bytes_sent);
    m.local_recv = static_cast<double>(r.bytes_received);
  }

  std::string out;
  if (o.print_headers) out += banner_27(o);
  // netlib.c demo_interval_display, in the output mode's form; the end time is the simulated
  // clock's seconds and milliseconds (gettimeofday's tv_sec, tv_usec / 1000).
  const std::string units = netperf_units_27(m.fmt);
  int count = 0;
  for (const auto& ir : r.interim) {
    const double secs = ir.interval_us / 1000000.0;
    const double tput = thruput(ir.units, secs, m.fmt);
    const long sec = static_cast<long>(ir.end_us / 1000000), ms = static_cast<long>(ir.end_us % 1000000 / 1000);
    switch (o.output_mode) {
      case NetperfOptions::OutputMode::Csv:
        out += cformat("%7.2f,%s/s,%.3f,%ld.%.3ld\n", tput, units.c_str(), secs, sec, ms);
        break;
      case NetperfOptions::OutputMode::Keyval:
        out += cformat("NETPERF_INTERIM_RESULT[%d]=%.2f\nNETPERF_UNITS[%d]=%s/s\nNETPERF_INTERVAL[%d]=%.3f\n"
                       "NETPERF_ENDING[%d]=%ld.%.3ld\n",
                       count, tput, count, units.c_str(), count, secs, count, sec, ms);
        ++count;
        break;
      default:
        out += cformat("Interim result: %7.2f %s/s over %.3f seconds ending at %ld.%.3ld\n", tput, units.c_str(), secs,
                       sec, ms);
    }
  }

  const bool any = !sel.empty() && !sel[0].empty();
  switch (o.output_mode) {
    case NetperfOptions::OutputMode::Keyval:
      // print_omni_keyword: NAME=value, every block in order.
      for (const auto& block : sel)
        for (const auto& name : block) out += name + "=" + value_of(name, o, r, m, ipoib) + "\n";
      break;
    case NetperfOptions::OutputMode::Csv: {
      // print_omni_csv: one header row (each selector's header lines joined by spaces, up to
      // the first empty one) and one value row, every block on them; nothing if the first
      // block is empty.
      if (!any) break;
      std::string hdr, val;
      bool first = true;
      for (const auto& block : sel)
        for (const auto& name : block) {
          const Header* h = header_of(name);
          std::string joined;
          for (const auto line : h->line) {
            if (line.empty()) break;
            if (!joined.empty()) joined += ' ';
            joined += line;
          }
          if (!first) hdr += ',', val += ',';
          first = false;
          hdr += joined;
          val += value_of(name, o, r, m, ipoib);
        }
      if (o.print_headers) out += hdr + "\n";
      out += val + "\n";
      break;
    }
    default: {
      // print_omni_human: per block, four header lines and a value line in columns of the
      // widest of the selector's header lines and its value plus one, one space apart (lines
      // keep their trailing spaces); a blank line between blocks.
      for (size_t b = 0; b < sel.size(); ++b) {
        const auto& block = sel[b];
        if (block.empty()) continue;
        std::string lines[4], val;
        for (const auto& name : block) {
          const Header* h = header_of(name);
          const std::string v = value_of(name, o, r, m, ipoib);
          size_t width = 0;
          for (const auto line : h->line) width = std::max(width, line.size());
          width = std::max(width, v.size() + 1);
          for (int k = 0; k < 4; ++k) {
            lines[k] += h->line[k];
            lines[k].append(width + 1 - h->line[k].size(), ' ');
          }
          val += v;
          val.append(width + 1 - v.size(), ' ');
        }
        if (b > 0) out += "\n";
        if (o.print_headers)
          for (const auto& l : lines) out += l + "\n";
        out += val + "\n";
      }
    }
  }
  return out;
}

}  // namespace hcasim::frontends
