// Command line of the perftest tools `hcasim ib_*` (perftest_cli.h).
//
// perftest 4.5 reads its flags with glibc getopt_long (src/perftest_parameters.c parser()). The
// scanner below is a small getopt_long written for it rather than CLI11 (which netperf_cli.cpp
// uses for hcasim's own long options): CLI11 2.1 cannot reproduce getopt_long's unique-prefix
// abbreviation of long options (--iter=100 is --iters), its rule that the word after an option
// taking a value is that value even when it starts with '-' (-s -5 is a bad size, not a flag),
// its permutation of the one positional argument (the server host) to anywhere on the line, and
// perftest's table of about a hundred long options of which hcasim supports a few: a flag it
// does not support must fail with its own name, not as "unknown". hcasim's long options live in
// the same table, so one pass reads the whole line in order.
#include "frontends/perftest_cli.h"

#include <algorithm>
#include <map>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdlib>
#include <string>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include <fmt/ranges.h>

#include "model/fault.h"

#include "util/cli_values.h"
#include "util/command_words.h"
#include "util/output_file.h"

namespace hcasim::frontends {

using util::base_name;
using util::taskset_cpus_index;


namespace {

[[noreturn]] void fail(const std::string& what) { throw InputError(what); }

/// perftest 4.5's getopt option string (perftest_parameters.c parser()); a letter followed by
/// ':' takes a value.
constexpr std::string_view kOptString =
    "w:y:p:d:i:m:s:n:t:u:S:x:c:q:I:o:M:r:Q:A:l:D:f:B:T:L:E:J:j:K:k:X:W:aFegzRvhbNVCHUOZP";

/// Whether short option `c` exists in perftest 4.5 and whether it takes a value.
enum class ShortKind { Unknown, Flag, WithValue };
ShortKind short_kind(char c) {
  if (c == ':') return ShortKind::Unknown;
  const size_t at = kOptString.find(c);
  if (at == std::string_view::npos) return ShortKind::Unknown;
  return at + 1 < kOptString.size() && kOptString[at + 1] == ':' ? ShortKind::WithValue
                                                                  : ShortKind::Flag;
}

/// One entry of the long option table: perftest 4.5's long_options (perftest_parameters.c
/// parser(), as built into Debian's perftest 4.5+0.17: the options of later perftest releases,
/// e.g. --use_cuda or --write_with_imm, are absent) followed by hcasim's own.
enum class LongKind {
  Short,        ///< the long form of short option `letter`
  ReportGbits,  ///< --report_gbits (perftest: a flag-only long option)
  Unsupported,  ///< a perftest long-only option hcasim does not simulate
  Platform, RemotePlatform, Set, Seed, Csv, Stats, Columns, Json, Explain, Trace, TraceWindow,  ///< hcasim
};
struct LongOption {
  std::string_view name;
  bool has_arg;
  LongKind kind;
  char letter = 0;  ///< for LongKind::Short
};

const std::vector<LongOption>& long_options() {
  static const std::vector<LongOption> table = [] {
    std::vector<LongOption> t;
    auto shorts = {
        std::pair<std::string_view, char>{"port", 'p'}, {"ib-dev", 'd'}, {"ib-port", 'i'},
        {"mtu", 'm'}, {"size", 's'}, {"iters", 'n'}, {"tx-depth", 't'}, {"qp-timeout", 'u'},
        {"sl", 'S'}, {"gid-index", 'x'}, {"all", 'a'}, {"CPU-freq", 'F'}, {"connection", 'c'},
        {"qp", 'q'}, {"events", 'e'}, {"vector", 'X'}, {"inline_size", 'I'}, {"outs", 'o'},
        {"mcg", 'g'}, {"comm_rdma_cm", 'z'}, {"rdma_cm", 'R'}, {"tos", 'T'}, {"hop_limit", 'L'},
        {"help", 'h'}, {"MGID", 'M'}, {"rx-depth", 'r'}, {"bidirectional", 'b'}, {"cq-mod", 'Q'},
        {"noPeak", 'N'}, {"version", 'V'}, {"report-cycles", 'C'}, {"report-histogrm", 'H'},
        {"report-unsorted", 'U'}, {"atomic_type", 'A'}, {"dualport", 'O'}, {"post_list", 'l'},
        {"duration", 'D'}, {"margin", 'f'}, {"source_mac", 'B'}, {"dest_mac", 'E'},
        {"dest_ip", 'J'}, {"source_ip", 'j'}, {"dest_port", 'K'}, {"source_port", 'k'},
        {"ethertype", 'Y'}, {"limit_bw", 'w'}, {"limit_msgrate", 'y'}, {"server", 'Z'},
        {"client", 'P'}, {"mac_fwd", 'v'}, {"use_rss", 'G'}, {"report-counters", 'W'}};
    for (const auto& [name, letter] : shorts)
      t.push_back({name, short_kind(letter) == ShortKind::WithValue, LongKind::Short, letter});
    // Long-only perftest options: name and whether it takes a value.
    auto long_only = {
        std::pair<std::string_view, bool>{"force-link", true}, {"remote_mac", true},
        {"local_mac", true}, {"remote_ip", true}, {"local_ip", true}, {"remote_port", true},
        {"local_port", true}, {"run_infinitely", false}, {"use-srq", false},
        {"report-both", false}, {"reversed", false}, {"pkey_index", true},
        {"inline_recv", true}, {"tcp", false}, {"burst_size", true},
        {"typical_pkt_size", true}, {"rate_limit", true}, {"rate_limit_type", true},
        {"rate_units", true}, {"output", true}, {"cpu_util", false}, {"out_json", false},
        {"out_json_file", true}, {"latency_gap", true}, {"flow_label", true},
        {"retry_count", true}, {"dont_xchg_versions", false}, {"mmap", true},
        {"mmap-offset", true}, {"ipv6", false}, {"raw_ipv6", false},
        {"report-per-port", false}, {"odp", false}, {"use_hugepages", false},
        {"use_old_post_send", false}, {"promiscuous", false}, {"sniffer", false},
        {"raw_mcast", false}, {"mr_per_qp", false}, {"dlid", true}, {"tclass", true},
        {"wait_destroy", true}, {"flows", true}, {"flows_burst", true}, {"reply_every", true},
        {"perform_warm_up", false}, {"vlan_en", false}, {"vlan_pcp", true},
        {"recv_post_list", true}, {"aes_xts", false}, {"encrypt_on_tx", false},
        {"sig_before", false}, {"aes_block_size", true}, {"kek_path", true},
        {"credentials_path", true}, {"data_enc_keys_number", true},
        {"data_enc_key_app_path", true}, {"log_dci_streams", true},
        {"log_active_dci_streams", true}, {"disable_pcie_relaxed", false}};
    t.push_back({"report_gbits", false, LongKind::ReportGbits});
    for (const auto& [name, has_arg] : long_only) t.push_back({name, has_arg, LongKind::Unsupported});
    t.push_back({"platform", true, LongKind::Platform});
    t.push_back({"remote-platform", true, LongKind::RemotePlatform});
    t.push_back({"set", true, LongKind::Set});
    t.push_back({"seed", true, LongKind::Seed});
    t.push_back({"csv", true, LongKind::Csv});
    t.push_back({"stats", false, LongKind::Stats});
    t.push_back({"json", false, LongKind::Json});
    t.push_back({"explain", false, LongKind::Explain});
    t.push_back({"trace", true, LongKind::Trace});
    t.push_back({"trace-window", true, LongKind::TraceWindow});
    t.push_back({"columns", true, LongKind::Columns});
    return t;
  }();
  return table;
}

/// The long option `name` names, as getopt_long finds it: an exact match, else the only option
/// `name` is a prefix of. Throws InputError when none or several match.
const LongOption& find_long_option(const std::string& name) {
  const auto& table = long_options();
  for (const auto& o : table)
    if (o.name == name) return o;
  std::vector<const LongOption*> matches;
  for (const auto& o : table)
    if (o.name.substr(0, name.size()) == name) matches.push_back(&o);
  if (matches.empty()) fail("unknown option --" + name);
  if (matches.size() > 1) {
    std::vector<std::string> names;
    for (const auto* m : matches) names.push_back("--" + std::string(m->name));
    std::sort(names.begin(), names.end());
    fail(fmt::format("--{}: ambiguous option ({})", name, fmt::join(names, ", ")));
  }
  return *matches.front();
}

/// The long name of short option `c` in perftest's table, if it has one.
std::string_view long_name_of(char c) {
  for (const auto& o : long_options())
    if (o.kind == LongKind::Short && o.letter == c) return o.name;
  return {};
}

/// A perftest program name (ib_*_lat, ib_*_bw, raw_ethernet_*).
bool looks_like_perftest_tool(std::string_view name) {
  const bool ib = name.substr(0, 3) == "ib_" && (name.size() > 4) &&
                  (name.substr(name.size() - 4) == "_lat" || name.substr(name.size() - 3) == "_bw");
  return ib || name.substr(0, 13) == "raw_ethernet_";
}

class Parser {
 public:
  Parser(PerftestTest test, PerftestOptions& o) : test_(test), o_(o) {}

  void run(const std::vector<std::string>& args) {
    size_t i = skip_prefix(args);
    bool options_ended = false;
    while (i < args.size()) {
      const std::string& w = args[i];
      if (options_ended || w.size() < 2 || w[0] != '-') {
        positional(w);
        ++i;
      } else if (w == "--") {
        options_ended = true;
        ++i;
      } else if (w[1] == '-') {
        i = long_option(args, i);
      } else {
        i = short_group(args, i);
      }
    }
  }

 private:
  std::string_view tool() const { return perftest_tool_name(test_); }
  bool bw() const { return perftest_is_bw(test_); }
  bool read_or_atomic() const { return perftest_is_read_or_atomic(test_); }

  void note(const std::string& text) {
    const std::string line = "hcasim: note: " + text;
    if (std::find(o_.notes.begin(), o_.notes.end(), line) == o_.notes.end())
      o_.notes.push_back(line);
  }

  /// Skips "taskset [-a] [-c] CPUS" and the tool's own name at the start of a pasted command.
  size_t skip_prefix(const std::vector<std::string>& args) {
    if (const size_t i = taskset_cpus_index(args)) {
      if (i + 1 >= args.size() || base_name(args[i + 1]) != tool())
        fail(fmt::format("taskset must be followed by CPUS and {}", tool()));
      note(fmt::format("taskset ignored: hcasim does not pin processes (the simulated {} runs "
                       "where the platform puts it)",
                       tool()));
      return i + 2;
    }
    if (!args.empty()) {
      const std::string_view first = base_name(args[0]);
      if (first == tool()) return 1;
      if (looks_like_perftest_tool(first)) {
        std::vector<std::string_view> names;
        for (PerftestTest t : perftest_tests()) names.push_back(perftest_tool_name(t));
        fail(fmt::format("{}: this is hcasim {} (hcasim simulates {})", args[0], tool(),
                         fmt::join(names, ", ")));
      }
    }
    return 0;
  }

  void positional(const std::string& w) {
    if (o_.server)
      fail(fmt::format("unexpected argument '{}' (perftest takes one server host, '{}' is already "
                       "given)",
                       w, *o_.server));
    o_.server = w;
    note(fmt::format("server host {} not used: the remote host is simulated (--remote-platform)",
                     w));
  }

  size_t long_option(const std::vector<std::string>& args, size_t i) {
    const std::string& w = args[i];
    const size_t eq = w.find('=');
    const std::string name = w.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    if (name.empty()) fail("unknown option " + w);
    const LongOption& opt = find_long_option(name);
    const std::string flag = "--" + std::string(opt.name);
    std::string value;
    if (opt.has_arg) {
      if (eq != std::string::npos) {
        value = w.substr(eq + 1);
      } else if (opt.kind == LongKind::Short || opt.kind == LongKind::Unsupported) {
        if (i + 1 >= args.size()) fail(flag + ": missing value");
        value = args[++i];  // perftest's own: getopt_long takes the next word, whatever it is
      } else {
        value = util::next_word_value(flag, i + 1 < args.size() ? &args[i + 1] : nullptr);  // hcasim's own
        ++i;
      }
    } else if (eq != std::string::npos) {
      fail(flag + ": takes no value");
    }
    // hcasim's own single-valued options: a second one is an error, not the last winning.
    if (opt.kind == LongKind::Platform || opt.kind == LongKind::RemotePlatform || opt.kind == LongKind::Seed ||
        opt.kind == LongKind::Columns || opt.kind == LongKind::TraceWindow) {
      const auto [it, first] = hcasim_values_.emplace(flag, value);
      if (!first) util::check_single_value(flag, {it->second, value});
    }
    switch (opt.kind) {
      case LongKind::Short: apply(opt.letter, value, flag); break;
      case LongKind::ReportGbits:
        if (bw())
          o_.report_gbits = true;
        else
          note(fmt::format("--report_gbits ignored: {} reports latency", tool()));
        break;
      case LongKind::Unsupported:
        fail(fmt::format("{}: perftest option not supported by hcasim {}", flag, tool()));
      case LongKind::Platform: o_.platform = non_empty(flag, value); break;
      case LongKind::RemotePlatform: o_.remote_platform = non_empty(flag, value); break;
      case LongKind::Set:
        if (value.find('=') == std::string::npos || value.front() == '=')
          fail(fmt::format("--set: '{}' is not section.key=value", value));
        {  // fault.* and qp.* are checked here (the platform keys on loading)
          model::FaultConfig f;
          model::RcRetry r;
          model::apply_fault_setting(value, f, r);
        }
        o_.sets.push_back(value);
        break;
      case LongKind::Seed: {
        uint64_t v = 0;
        const auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
        if (value.empty() || ec != std::errc() || ptr != value.data() + value.size())
          fail(fmt::format("--seed: '{}' is not a non-negative integer", value));
        o_.seed = v;
        break;
      }
      case LongKind::Csv:
        if (o_.csv_path) util::check_given_once("--csv", {*o_.csv_path, value});
        o_.csv_path = non_empty(flag, value);
        break;
      case LongKind::Stats: o_.stats = true; break;
      case LongKind::Json: o_.json = true; break;
      case LongKind::Explain: o_.explain = true; break;
      case LongKind::Trace:
        if (o_.trace_path) util::check_given_once("--trace", {*o_.trace_path, value});
        o_.trace_path = non_empty(flag, value);
        break;
      case LongKind::TraceWindow: o_.trace_window = parse_trace_window(value, kTraceOrigin); break;
      case LongKind::Columns:
        if (value == "classic")
          o_.columns = PerftestColumns::Classic;
        else if (value == "extended")
          o_.columns = PerftestColumns::Extended;
        else
          fail(fmt::format("--columns: '{}' is not classic or extended", value));
        break;
    }
    return i + 1;
  }

  static std::string non_empty(const std::string& flag, const std::string& value) {
    if (value.empty()) fail(flag + ": empty value");
    return value;
  }

  size_t short_group(const std::vector<std::string>& args, size_t i) {
    const std::string& w = args[i];
    for (size_t pos = 1; pos < w.size(); ++pos) {
      const char c = w[pos];
      const std::string flag = std::string("-") + c;
      switch (short_kind(c)) {
        case ShortKind::Unknown: fail("unknown option " + flag);
        case ShortKind::Flag: apply(c, "", flag); break;
        case ShortKind::WithValue: {
          std::string value = w.substr(pos + 1);
          if (value.empty()) {
            if (i + 1 >= args.size()) fail(flag + ": missing value");
            value = args[++i];
          }
          apply(c, value, flag);
          return i + 1;
        }
      }
    }
    return i + 1;
  }

  /// perftest's CHECK_VALUE: strtol(optarg, &end, 0) and the whole text must be read
  /// ("%s argument %s should be int" otherwise). Returns the value as strtol gives it (LONG_MAX /
  /// LONG_MIN on overflow, which then fails the range checks as it does in perftest).
  long integer(const std::string& flag, const std::string& text) {
    errno = 0;
    char* end = nullptr;
    const long v = std::strtol(text.c_str(), &end, 0);
    if (text.empty() || *end != '\0') fail(fmt::format("{}: '{}' is not an integer", flag, text));
    octal_note(flag, text, v);
    return v;
  }

  void octal_note(const std::string& flag, const std::string& text, long v) {
    size_t d = text.find_first_not_of(" \t+-");
    if (d != std::string::npos && text[d] == '0' && d + 1 < text.size() && text[d + 1] != 'x' &&
        text[d + 1] != 'X')
      note(fmt::format("{} {} read as octal ({}), as perftest's strtol(..., 0) reads it", flag,
                       text, v));
  }

  /// perftest's CHECK_VALUE_IN_RANGE(_UNS): "NAME should be between MIN and MAX".
  template <typename T>
  T in_range(const std::string& flag, const std::string& text, long long min, long long max) {
    const long v = integer(flag, text);
    if (v < min || v > max)
      fail(fmt::format("{}: {} is out of range (perftest: {}..{})", flag, text, min, max));
    return static_cast<T>(v);
  }

  /// CHECK_VALUE(arg, int, ...): strtol's long stored in an int. A value an int cannot hold is
  /// refused rather than truncated as perftest's cast would.
  int int_value(const std::string& flag, const std::string& text) {
    const long v = integer(flag, text);
    if (v < INT_MIN || v > INT_MAX)
      fail(fmt::format("{}: {} is out of range (perftest stores it in an int: {}..{})", flag, text, INT_MIN, INT_MAX));
    return static_cast<int>(v);
  }

  /// -s as perftest 4.5 reads it (parser() case 's'): a trailing K or M multiplies by 2^10 or
  /// 2^20 (no other suffix, no lower case), strtol(..., 0) reads the leading number and ignores
  /// the rest, and the size must be 1..UINT_MAX/2 bytes. The arithmetic is perftest's: the
  /// number, converted to uint64_t, times the factor.
  uint64_t size_value(const std::string& flag, const std::string& text) {
    std::string digits = text;
    uint64_t factor = 1;
    if (!digits.empty() && digits.back() == 'K') {
      digits.pop_back();
      factor = 1024;
    } else if (!digits.empty() && digits.back() == 'M') {
      digits.pop_back();
      factor = 1024 * 1024;
    }
    errno = 0;
    char* end = nullptr;
    const long v = std::strtol(digits.c_str(), &end, 0);
    const uint64_t size = static_cast<uint64_t>(v) * factor;  // perftest's unsigned arithmetic
    if (end == digits.c_str())  // no leading number at all (perftest would read 0)
      fail(fmt::format("{}: '{}' is not a size (bytes, or a number with K or M)", flag, text));
    if (size < 1 || size > kPerftestMaxSizeArg)
      fail(fmt::format("{}: '{}' is out of range (perftest: 1..{} B)", flag, text,
                       kPerftestMaxSizeArg));
    if (*end != '\0')
      note(fmt::format("{} {} read as {} B: perftest reads the leading number and ignores the "
                       "rest (its only suffixes are K and M)",
                       flag, text, size));
    else
      octal_note(flag, digits, v);
    return size;
  }

  [[noreturn]] void unsupported(char c, const std::string& flag) {
    const std::string_view long_name = long_name_of(c);
    if (flag.size() == 2 && !long_name.empty())
      fail(fmt::format("{} (--{}): perftest flag not supported by hcasim {}", flag, long_name,
                       tool()));
    fail(fmt::format("{}: perftest flag not supported by hcasim {}", flag, tool()));
  }

  void apply(char c, const std::string& value, const std::string& flag) {
    switch (c) {
      case 'a': o_.all = true; break;
      case 'F': o_.cpu_freq_f = true; break;
      case 'h': o_.help = true; break;
      case 'V': o_.version = true; break;
      case 's':
        o_.size = size_value(flag, value);
        o_.size_given = true;
        break;
      case 'n':
        o_.iterations = in_range<uint64_t>(flag, value, kPerftestMinIters, kPerftestMaxIters);
        o_.iterations_given = true;
        break;
      case 'b':
        // parser() case 'b': " Bidirectional is only available in BW test".
        if (!bw()) fail(fmt::format("{}: perftest's bidirectional mode is for the bw tests only", flag));
        o_.duplex = true;
        break;
      case 'D':
        // parser() case 'D': CHECK_VALUE_POSITIVE(duration, int, "Duration period").
        o_.duration = int_value(flag, value);
        if (*o_.duration <= 0)
          fail(fmt::format("{}: {} is not a positive number of seconds (perftest: Duration period must be positive)",
                           flag, value));
        break;
      case 'f':
        // parser() case 'f': CHECK_VALUE_NON_NEGATIVE(margin, int, "Margin").
        o_.margin = int_value(flag, value);
        if (*o_.margin < 0)
          fail(fmt::format("{}: {} is not a number of seconds (perftest: Margin must be non-negative)", flag, value));
        break;
      case 'd':
        o_.device = non_empty(flag, value);
        break;
      case 'i': {
        // CHECK_VALUE(ib_port, uint8_t, ...) then "IB Port can't be less than 1".
        const auto port = static_cast<uint8_t>(integer(flag, value));
        if (port < 1) fail(fmt::format("{}: {} is not a port number (perftest: at least 1)", flag, value));
        o_.ib_port = port;
        if (port != 1)
          note(fmt::format("{} {}: the simulated HCA has one port, used as port {}", flag, value,
                           port));
        break;
      }
      case 'I':
        o_.inline_size = in_range<uint32_t>(flag, value, 0, kPerftestMaxInline);
        // parser() case 'I': "Inline feature not available on READ/Atomic verbs".
        if (read_or_atomic())
          fail(fmt::format("{}: perftest's inline feature is not available on READ/atomic tests", flag));
        break;
      case 'o':
        // parser() case 'o': CHECK_VALUE(out_reads, int, ...), then "Setting Outstanding reads only
        // available on READ verb" (atomics included).
        {
          const long v = integer(flag, value);
          if (!read_or_atomic())
            fail(fmt::format("{}: outstanding reads are for perftest's READ and atomic tests only", flag));
          o_.out_reads = v;
        }
        break;
      case 'A':
        // parser() case 'A': "You are not running the atomic_lat/bw test!", then
        // "Invalid Atomic type! please choose from {CMP_AND_SWAP,FETCH_AND_ADD}".
        if (!perftest_is_atomic(test_))
          fail(fmt::format("{}: the atomic type is for ib_atomic_lat and ib_atomic_bw only", flag));
        if (value == "CMP_AND_SWAP")
          o_.atomic = PerftestAtomic::CmpAndSwap;
        else if (value == "FETCH_AND_ADD")
          o_.atomic = PerftestAtomic::FetchAndAdd;
        else
          fail(fmt::format("{}: '{}' is not an atomic type (perftest takes CMP_AND_SWAP, FETCH_AND_ADD)",
                           flag, value));
        break;
      case 'q':
        if (!bw())
          fail(fmt::format("{}: multiple QPs are for perftest's bw tests only ({} has one QP)",
                           flag, tool()));
        o_.num_qps = in_range<uint32_t>(flag, value, 1, kPerftestMaxQps);
        break;
      case 't':
        o_.tx_depth = in_range<uint32_t>(flag, value, 1, kPerftestMaxTx);
        break;
      case 'r': {
        const auto depth = in_range<uint32_t>(flag, value, 1, kPerftestMaxRx);
        if (!perftest_is_send(test_) && depth > kPerftestDefRxRdma)
          fail(fmt::format("{}: on RDMA {} tests perftest allows only an rx depth of 1", flag,
                           read_or_atomic() ? "READ and atomic" : "WRITE"));
        o_.rx_depth = depth;
        break;
      }
      case 'Q':
        o_.cq_mod = in_range<uint32_t>(flag, value, 1, kPerftestMaxCqMod);
        if (!bw()) note(fmt::format("{} ignored: {} signals every WR", flag, tool()));
        break;
      case 'N':
        if (!bw()) fail(fmt::format("{}: perftest's noPeak is for the bw tests only", flag));
        o_.no_peak = true;
        break;
      case 'm': {
        const long mtu = integer(flag, value);
        o_.mtu = static_cast<int>(std::clamp<long>(mtu, INT_MIN, INT_MAX));
        if (mtu != 0 && mtu != 256 && mtu != 512 && mtu != 1024 && mtu != 2048 && mtu != 4096)
          note(fmt::format("{} {}: not one of 256 512 1024 2048 4096; perftest runs with the "
                           "port's active MTU",
                           flag, value));
        break;
      }
      case 'e':
        // parser() case 'e': " Events feature not available on WRITE verb".
        if (!perftest_is_send(test_) && !read_or_atomic())
          fail(fmt::format("{}: perftest's events feature is not available on WRITE tests", flag));
        o_.use_event = true;
        break;
      case 'C':
      case 'U':
      case 'H':
        // parser() cases 'C', 'U', 'H': " Available only on Latency tests".
        if (bw())
          fail(fmt::format("{}: perftest's {} report is for the latency tests only", flag,
                           c == 'C' ? "cycles" : c == 'U' ? "unsorted" : "histogram"));
        (c == 'C' ? o_.report_cycles : c == 'U' ? o_.report_unsorted : o_.report_histogram) = true;
        break;
      case 'c':
        if (value == "RC") {
          o_.connection = PerftestConnection::Rc;
          break;
        }
        // change_conn_type(): perftest's own refusals by verb come first.
        if (value == "UC" && read_or_atomic())
          fail(fmt::format("{} {}: UC connection not possible in READ/atomic tests (perftest)", flag, value));
        if (value == "UC") {
          o_.connection = PerftestConnection::Uc;
          break;
        }
        if (value == "UD" && !perftest_is_send(test_))
          fail(fmt::format("{} {}: UD connection only possible in SEND tests (perftest)", flag, value));
        if (value == "UD") {
          o_.connection = PerftestConnection::Ud;
          break;
        }
        if (value == "XRC" || value == "DC" || value == "SRD")
          fail(fmt::format("{} {}: hcasim simulates RC, UC and UD connections only", flag, value));
        fail(fmt::format("{}: '{}' is not a connection type (perftest takes RC, UC, UD, XRC, DC, "
                         "SRD)",
                         flag, value));
      case 'R':
        o_.rdma_cm = true;
        note(fmt::format("{}: rdma_cm connection setup is not simulated (only the banner shows it)",
                         flag));
        break;
      case 'z':
        o_.comm_rdma_cm = true;
        note(fmt::format("{}: the rdma_cm data exchange is not simulated (only the banner shows "
                         "it)",
                         flag));
        break;
      case 'x':
        o_.gid_index = in_range<int>(flag, value, 0, kPerftestMaxGidIndex);
        note(fmt::format("{} {}: the GID is only printed (an IB port needs no GRH)", flag, value));
        break;
      case 'p':
        o_.tcp_port = static_cast<int>(integer(flag, value));
        note(fmt::format("{} ignored: no TCP connection is simulated", flag));
        break;
      default: unsupported(c, flag);
    }
  }

  PerftestTest test_;
  PerftestOptions& o_;
  std::map<std::string, std::string> hcasim_values_;  // hcasim's single-valued options seen: the first value
};

}  // namespace

std::string_view perftest_tool_name(PerftestTest test) {
  switch (test) {
    case PerftestTest::WriteLat: return "ib_write_lat";
    case PerftestTest::WriteBw: return "ib_write_bw";
    case PerftestTest::SendBw: return "ib_send_bw";
    case PerftestTest::SendLat: return "ib_send_lat";
    case PerftestTest::ReadLat: return "ib_read_lat";
    case PerftestTest::ReadBw: return "ib_read_bw";
    case PerftestTest::AtomicLat: return "ib_atomic_lat";
    case PerftestTest::AtomicBw: return "ib_atomic_bw";
  }
  return "ib_write_lat";
}

const std::vector<PerftestTest>& perftest_tests() {
  static const std::vector<PerftestTest> all{PerftestTest::WriteLat, PerftestTest::WriteBw, PerftestTest::SendLat,
                                             PerftestTest::SendBw,   PerftestTest::ReadLat, PerftestTest::ReadBw,
                                             PerftestTest::AtomicLat, PerftestTest::AtomicBw};
  return all;
}

std::optional<PerftestTest> perftest_test_named(std::string_view tool) {
  for (PerftestTest t : perftest_tests())
    if (perftest_tool_name(t) == tool) return t;
  return std::nullopt;
}

bool perftest_is_bw(PerftestTest test) {
  return test == PerftestTest::WriteBw || test == PerftestTest::SendBw || test == PerftestTest::ReadBw ||
         test == PerftestTest::AtomicBw;
}

bool perftest_is_send(PerftestTest test) { return test == PerftestTest::SendBw || test == PerftestTest::SendLat; }

bool perftest_is_atomic(PerftestTest test) { return test == PerftestTest::AtomicLat || test == PerftestTest::AtomicBw; }

bool perftest_is_read_or_atomic(PerftestTest test) {
  return perftest_is_atomic(test) || test == PerftestTest::ReadLat || test == PerftestTest::ReadBw;
}

int perftest_rtt_factor(PerftestTest test) { return perftest_is_read_or_atomic(test) ? 1 : 2; }

PerftestOptions parse_perftest_args(PerftestTest test, const std::vector<std::string>& args) {
  PerftestOptions o;
  o.test = test;
  // init_perftest_params(): size DEF_SIZE_BW for bw tests, DEF_SIZE_LAT otherwise; iterations
  // DEF_ITERS_WB for ib_write_bw, DEF_ITERS otherwise.
  // The atomic tests: DEF_SIZE_ATOMIC.
  o.size = perftest_is_atomic(test) ? kPerftestDefSizeAtomic
           : perftest_is_bw(test)   ? kPerftestDefSizeBw
                                    : kPerftestDefSizeLat;
  o.iterations = test == PerftestTest::WriteBw ? kPerftestDefItersWriteBw : kPerftestDefIters;
  Parser(test, o).run(args);
  // force_dependecies: -a makes the size MAX_SIZE, and an atomic test of any size but 8 B exits
  // with "Message size cannot be changed for Atomic tests".
  // --explain's latency stages are the WRITE ping-pong's (sim/perftest_sim.cpp one_way_stages);
  // the bw tools' resources apply to every verb.
  if (o.explain && !perftest_is_bw(test) && test != PerftestTest::WriteLat)
    throw InputError(fmt::format("--explain: the latency stages are ib_write_lat's; {} has none (the bw tools and "
                                 "ib_write_lat take --explain)", perftest_tool_name(test)));
  if (o.trace_window && !o.trace_path)
    throw InputError("--trace-window: needs --trace FILE (the window bounds what the trace file holds)");
  if (perftest_is_atomic(test) && o.all)
    throw InputError("-a: perftest's atomic tests have one size, 8 B (message size cannot be changed for atomic tests)");
  if (perftest_is_atomic(test) && o.size != kPerftestDefSizeAtomic)
    throw InputError(fmt::format("-s: {} B: perftest's atomic tests move 8 B (message size cannot be changed for "
                                 "atomic tests)", o.size));
  // force_dependecies on duration mode: "Duration mode doesn't work with events", "Duration mode
  // currently doesn't support running on all sizes"; then "please check that DURATION >
  // 2*MARGIN", checked with DEF_DURATION when -D is not given.
  if (o.duration) {
    if (o.use_event) throw InputError("-e: perftest's duration mode (-D) does not work with completion events");
    if (o.all) throw InputError("-a: perftest's duration mode (-D) does not run all sizes");
    // hcasim's: the report of a duration run is perftest's text only.
    if (o.json) throw InputError("--json: hcasim reports a -D run in perftest's text only (no --json)");
    if (o.csv_path) throw InputError("--csv: hcasim reports a -D run in perftest's text only (no --csv)");
    if (o.explain) throw InputError("--explain: not with -D (hcasim explains iteration runs, -n)");
    if (o.iterations_given)
      o.notes.push_back("hcasim: note: -n ignored with -D: perftest counts the iterations of the measured window");
    if (!perftest_is_bw(test) && (o.report_cycles || o.report_unsorted || o.report_histogram))
      o.notes.push_back("hcasim: note: -C, -U and -H ignored with -D: perftest's duration report is the average "
                        "latency and the transactions per second");
  }
  const int64_t duration = o.duration.value_or(kPerftestDefDuration);
  const int64_t margin = perftest_margin(o);
  if (!(duration > 2 * margin))
    throw InputError(fmt::format("-f: a margin of {} s on each side leaves nothing to measure in {}{} s (perftest: "
                                 "DURATION > 2*MARGIN)",
                                 margin, o.duration ? "" : "perftest's default ", duration));
  if (o.margin && !o.duration)
    o.notes.push_back("hcasim: note: -f ignored without -D: perftest's margin bounds a duration run");
  // hcasim's: -b with -e would need both sides' event loops (run_iter_bi arms two CQs).
  if (o.duplex && o.use_event)
    throw InputError("-e: hcasim does not simulate completion events with -b");
  if (o.all && o.size_given)
    o.notes.push_back(fmt::format("hcasim: note: -s ignored with -a: perftest sweeps 2..{} B",
                                  uint64_t{1} << kPerftestAllMaxLog2));
  return o;
}

std::vector<uint64_t> perftest_all_sizes() {
  std::vector<uint64_t> sizes;
  for (int i = 1; i <= kPerftestAllMaxLog2; ++i) sizes.push_back(uint64_t{1} << i);
  return sizes;
}

PerftestConfig to_perftest_config(const PerftestOptions& o) {
  PerftestConfig c;
  c.test = o.test;
  c.sizes = o.all ? perftest_all_sizes() : std::vector<uint64_t>{o.size};
  c.iterations = o.iterations;
  c.connection = o.connection;
  const bool bw = perftest_is_bw(o.test);
  // force_dependecies(): in iteration mode the tx depth is at most the iterations.
  const bool iteration_mode = !o.duration;
  c.tx_depth = o.tx_depth.value_or(bw ? kPerftestDefTxBw : kPerftestDefTxLat);
  if (iteration_mode && c.tx_depth > o.iterations) c.tx_depth = static_cast<uint32_t>(o.iterations);
  if (perftest_is_send(o.test)) {
    c.rx_depth = o.rx_depth.value_or(kPerftestDefRxSend);
    if (iteration_mode && c.rx_depth > o.iterations) c.rx_depth = static_cast<uint32_t>(o.iterations);
    // force_dependecies: UC and UD take up to UC_MAX_RX receives when the depth is still
    // DEF_RX_SEND (given or not), a message lost on them having no retry to wait for.
    if (iteration_mode && o.connection != PerftestConnection::Rc && c.rx_depth == kPerftestDefRxSend)
      c.rx_depth = static_cast<uint32_t>(std::min<uint64_t>(o.iterations, kPerftestUcMaxRx));
    if (c.rx_depth % 2 == 1 && !o.all) c.rx_depth += 1;  // "WA for a bug when rx_depth is odd"
  } else {
    c.rx_depth = kPerftestDefRxRdma;  // force_dependecies: verb WRITE -> DEF_RX_RDMA
  }
  const bool ud = o.connection == PerftestConnection::Ud;
  if (bw) {
    c.cq_mod = o.cq_mod.value_or(kPerftestDefCqMod);
    // "we disable cq_mod for large message size" unless -Q was given, -a runs all sizes, -e
    // waits for events or the QPs are UD ("it doesn't support large enough messages":
    // force_dependecies).
    if (o.size > kPerftestCqModSizeLimit && !o.all && !o.use_event && !o.cq_mod && !ud) c.cq_mod = 1;
    if (c.cq_mod > c.tx_depth) c.cq_mod = c.tx_depth;
  } else {
    c.cq_mod = 1;  // the latency tools signal every WR (DEF_CQ_MOD capped at DEF_TX_LAT)
  }
  // ctx_set_max_inline(): for a recognised device (ConnectX, ConnectX-2/3 included) the latency
  // tests default to DEF_INLINE_WRITE on RC, the bw tests to 0.
  // ib_send_lat on UD: DEF_INLINE_SEND_UD.
  c.inline_size = o.inline_size.value_or(bw                                ? 0u
                                         : o.test != PerftestTest::SendLat ? kPerftestDefInlineWrite
                                         : ud                              ? kPerftestDefInlineSendUd
                                                                           : kPerftestDefInlineSend);
  // force_dependecies: READ and atomics carry no inline data; ctx_set_out_reads: -o of 0 or
  // below is the device's maximum.
  if (perftest_is_read_or_atomic(o.test)) c.inline_size = 0;
  c.out_reads = o.out_reads && *o.out_reads > 0
                    ? static_cast<uint32_t>(std::min<long>(*o.out_reads, UINT32_MAX))
                    : 0;
  c.atomic = o.atomic;
  c.num_qps = bw ? o.num_qps : 1;
  c.seed = o.seed;
  c.explain = o.explain;
  c.trace = o.trace_path.has_value();
  if (o.trace_window) std::tie(c.trace_start_s, c.trace_len_s) = *o.trace_window;
  c.use_event = o.use_event;
  c.duplex = o.duplex;
  if (o.duration) {
    c.duration_s = *o.duration;
    c.margin_s = perftest_margin(o);
  }
  for (const auto& s : o.sets) model::apply_fault_setting(s, c.faults, c.retry);
  return c;
}

std::string perftest_option(const std::string& field) {
  if (field == "sizes") return "-s";
  if (field == "tx_depth") return "-t";
  if (field == "rx_depth") return "-r";
  if (field == "inline_size") return "-I";
  if (field == "iterations") return "-n";
  if (field == "num_qps") return "-q";
  if (field == "cq_mod") return "-Q";
  return field;
}

bool perftest_no_peak(const PerftestOptions& o) {
  if (!perftest_is_bw(o.test)) return false;
  return o.no_peak || o.duration || o.iterations > kPerftestNoPeakIters;
}

int perftest_margin(const PerftestOptions& o) {
  if (o.margin) return *o.margin;
  return o.duration ? *o.duration / 4 : 0;
}

bool perftest_sums_both_sides(const PerftestOptions& o) {
  return o.duplex && !(perftest_is_send(o.test) && o.duration);
}

std::string perftest_ud_sizes(const PerftestOptions& o, PerftestConfig& c, uint64_t path_mtu) {
  if (o.connection != PerftestConnection::Ud) return "";
  if (o.all) {
    std::erase_if(c.sizes, [path_mtu](uint64_t s) { return s > path_mtu; });
    return fmt::format("hcasim: note: -a -c UD: a UD message is one packet, so the sizes stop at the path MTU, {} B "
                       "(perftest: \"Max msg size in UD is MTU {}\")",
                       path_mtu, path_mtu);
  }
  for (uint64_t& s : c.sizes) s = std::min(s, path_mtu);
  return "";
}

int perftest_path_mtu(const PerftestOptions& o, int active_mtu, std::string* note) {
  if (note) note->clear();
  if (!o.mtu || *o.mtu == 0) return active_mtu;
  const int m = *o.mtu;
  // Not an IB MTU: the parser has noted it already.
  if (m != 256 && m != 512 && m != 1024 && m != 2048 && m != 4096) return active_mtu;
  if (m > active_mtu) {
    if (note)
      *note = fmt::format("hcasim: note: -m {}: above the port's active MTU; perftest changes to "
                          "the active MTU ({} B)",
                          m, active_mtu);
    return active_mtu;
  }
  return m;
}

}  // namespace hcasim::frontends
