// Command line of `hcasim netperf` (netperf_cli.h). The netperf flags are read the way netperf
// 2.4.3 reads them (netsh.c scan_cmd_line: getopt with the global option string, -c/-C look at
// the next word for an optional rate, break_args() for "a,b" values; nettest_bsd.c
// scan_sockets_args for the test options after "--"); the hcasim long options go through CLI11.
#include "frontends/netperf_cli.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <set>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include "frontends/netperf_omni.h"
#include "model/fault.h"
#include "model/units.h"
#include "util/cli_values.h"
#include "util/number.h"
#include "util/output_file.h"

namespace hcasim::frontends {

namespace {

[[noreturn]] void fail(const std::string& what) { throw InputError(what); }

/// A netperf "a,b" value split as netsh.c break_args() does: no comma sets both to the text,
/// "a," sets only the first, ",b" only the second.
std::pair<std::string, std::string> break_args(const std::string& text) {
  const auto comma = text.find(',');
  if (comma == std::string::npos) return {text, text};
  return {text.substr(0, comma), text.substr(comma + 1)};
}

/// As netsh.c break_args_explicit(): without a comma only the first value is set.
std::pair<std::string, std::string> break_args_explicit(const std::string& text) {
  const auto comma = text.find(',');
  if (comma == std::string::npos) return {text, ""};
  return {text.substr(0, comma), text.substr(comma + 1)};
}

std::optional<int64_t> parse_integer(std::string_view text) {
  int64_t value = 0;
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (first != last && *first == '+') ++first;
  if (first == last) return std::nullopt;
  const auto [ptr, ec] = std::from_chars(first, last, value);
  if (ec != std::errc() || ptr != last) return std::nullopt;
  return value;
}

int integer_value(const std::string& flag, const std::string& text, int64_t min, int64_t max,
                  const char* what) {
  const auto v = parse_integer(text);
  if (!v) fail(fmt::format("{}: '{}' is not {}", flag, text, what));
  if (*v < min || *v > max) fail(fmt::format("{}: '{}' is out of range ({}..{})", flag, text, min, max));
  return static_cast<int>(*v);
}

void add_note(NetperfOptions& o, const std::string& text) {
  const std::string line = "hcasim: note: " + text;
  if (std::find(o.notes.begin(), o.notes.end(), line) == o.notes.end()) o.notes.push_back(line);
}

// hcasim long options, split into the ones taking a value and the flags.
const std::set<std::string, std::less<>> kLongWithValue = {"platform", "remote-platform", "set",
                                                           "csv", "seed", "transport", "steady",
                                                           "trace", "trace-window"};
const std::set<std::string, std::less<>> kLongFlags = {"stats", "verify-data", "profile", "json", "explain"};

// netperf 2.4.3 global options hcasim does not simulate (netsh.c GLOBAL_CMD_LINE_ARGS) and
// TCP_STREAM test options it does not simulate (nettest_bsd.c scan_sockets_args).
constexpr std::string_view kUnsupportedGlobal = "aAbBdFkKLnNoOpwW";
constexpr std::string_view kUnsupportedTest = "bCHLnNp46";

/// Walks a list of words getopt-style. `takes_value(c)` tells whether option char c has a
/// value; the value is the rest of the word or else the next word of the same list.
class ShortOptionReader {
 public:
  explicit ShortOptionReader(const std::vector<std::string>& words) : words_(words) {}
  bool done() const { return index_ >= words_.size(); }
  const std::string& word() const { return words_[index_]; }
  size_t index() const { return index_; }
  void skip_word() { ++index_; }
  /// The next word after the current one, if any (for -c/-C's optional rate).
  const std::string* peek_next() const {
    return index_ + 1 < words_.size() ? &words_[index_ + 1] : nullptr;
  }
  /// Value of option `flag` starting at `rest` of the current word: the rest if non-empty,
  /// else the next word. Advances past what it consumed.
  std::string take_value(const std::string& flag, const std::string& rest) {
    if (!rest.empty()) {
      ++index_;
      return rest;
    }
    if (index_ + 1 >= words_.size()) fail(flag + ": missing value");
    index_ += 2;
    return words_[index_ - 1];
  }

 private:
  const std::vector<std::string>& words_;
  size_t index_ = 0;
};

bool is_long_option(const std::string& w) {
  return w.size() > 2 && w[0] == '-' && w[1] == '-' && w[2] != '-';
}

/// Appends the hcasim long option at words[i] (and its value) to `out` as one "--name=value"
/// or "--flag" word for CLI11. Returns the number of words consumed.
size_t take_long_option(const std::vector<std::string>& words, size_t i,
                        std::vector<std::string>& out) {
  const std::string& w = words[i];
  const auto eq = w.find('=');
  const std::string name = w.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
  if (kLongFlags.count(name)) {
    // --profile and --json are plain switches, neither "--profile=X" nor "--profile X" (the
    // word after it would otherwise be reported as a stray argument); --stats and --verify-data
    // keep CLI11's "--flag=false".
    if (name == "profile" || name == "json" || name == "explain") {
      if (eq != std::string::npos)
        fail(fmt::format("--{}: takes no value (got '{}')", name, w.substr(eq + 1)));
      if (i + 1 < words.size() && (words[i + 1].empty() || words[i + 1][0] != '-'))
        fail(fmt::format("--{}: takes no value (got '{}')", name, words[i + 1]));
    }
    out.push_back(w);
    return 1;
  }
  if (!kLongWithValue.count(name)) fail("unknown option --" + name);
  if (eq != std::string::npos) {
    if (eq + 1 == w.size()) fail("--" + name + ": empty value");
    out.push_back(w);
    return 1;
  }
  const std::string& value = util::next_word_value("--" + name, i + 1 < words.size() ? &words[i + 1] : nullptr);
  if (value.empty()) fail("--" + name + ": empty value");
  out.push_back("--" + name + "=" + value);
  return 2;
}

void parse_global(const std::vector<std::string>& words, NetperfOptions& o,
                  std::vector<std::string>& long_words, bool allow_byte_count) {
  ShortOptionReader r(words);
  while (!r.done()) {
    const std::string& w = r.word();
    if (is_long_option(w)) {
      const size_t n = take_long_option(words, r.index(), long_words);
      for (size_t k = 0; k < n; ++k) r.skip_word();
      continue;
    }
    if (w.size() < 2 || w[0] != '-') {
      if (r.index() == 0 && w == "netperf") {
        r.skip_word();
        continue;
      }
      fail(fmt::format("unexpected argument '{}' (netperf options are -X, test options go "
                       "after --)", w));
    }
    // A group of short options, e.g. "-cC", "-l60", "-T0,0".
    bool consumed = false;
    for (size_t pos = 1; pos < w.size() && !consumed; ++pos) {
      const char c = w[pos];
      const std::string flag = std::string("-") + c;
      const std::string rest = w.substr(pos + 1);
      switch (c) {
        case 'c':
        case 'C': {
          (c == 'c' ? o.local_cpu : o.remote_cpu) = true;
          // netsh.c: the optional rate is the next word when it starts with a digit; here
          // only when it is a number (getopt only looks there at the end of a group).
          if (pos + 1 == w.size()) {
            const std::string* next = r.peek_next();
            if (next && !next->empty() && std::isdigit(static_cast<unsigned char>((*next)[0]))) {
              if (const auto rate = util::parse_number(*next)) {
                (c == 'c' ? o.local_cpu_rate : o.remote_cpu_rate) = *rate;
                add_note(o, flag + " RATE ignored: simulated CPU time needs no calibration");
                r.skip_word();  // the option word
                r.skip_word();  // the rate
                consumed = true;
              }
            }
          }
          break;
        }
        case '4':
        case '6':
          add_note(o, flag + " ignored: the simulated data connection is InfiniBand (SDP, or IPoIB with --transport ipoib), not chosen by address family");
          break;
        case 'f': {
          const std::string v = r.take_value(flag, rest);
          consumed = true;
          if (v.size() != 1 || std::string_view("kmgKMG").find(v[0]) == std::string_view::npos)
            fail(fmt::format("-f: '{}' is not one of k m g K M G", v));
          o.format = v[0];
          o.format_given = true;
          break;
        }
        case 'D': {
          // netsh.c 2.4.3 scan_cmd_line: demo mode; the optional value is the next word when it
          // starts with a digit (getopt only looks there at the end of a group), split by
          // break_args_explicit: INTERVAL (seconds) and UNITS (the first guess of units per
          // interval, convert()).
          o.demo = true;
          if (pos + 1 != w.size()) break;
          const std::string* next = r.peek_next();
          if (!next || next->empty() || !std::isdigit(static_cast<unsigned char>((*next)[0]))) break;
          const std::string v = *next;
          r.skip_word();  // the option word
          r.skip_word();  // its value
          consumed = true;
          const auto [a, b] = break_args_explicit(v);
          if (!a.empty()) {
            const auto secs = util::parse_number(a);
            if (!secs || !std::isfinite(*secs))
              fail(fmt::format("-D {}: the interval '{}' is not a number of seconds", v, a));
            if (!(*secs > 0))
              fail(fmt::format("-D {}: an interval of 0 s asks for an interim result after every send(); give an "
                               "interval > 0 seconds",
                               v));
            if (*secs > 2147483647.0) fail(fmt::format("-D {}: an interval above 2147483647 seconds", v));
            o.demo_interval_s = *secs;
          }
          if (!b.empty()) {
            o.demo_units = model::parse_size(b, "-D");
            if (o.demo_units == 0) fail(fmt::format("-D {}: a first guess of 0 units per interval; give at least 1", v));
          }
          break;
        }
        case 'H': {
          const std::string v = r.take_value(flag, rest);
          consumed = true;
          const auto [host, family] = break_args_explicit(v);
          if (!host.empty()) o.host = host;
          add_note(o, "-H ignored: the remote host is --remote-platform; its name only appears "
                      "in the banner");
          break;
        }
        case 'i':
        case 'I': {
          const std::string v = r.take_value(flag, rest);
          consumed = true;
          const auto [a, b] = break_args(v);
          for (const auto& part : {a, b})
            if (!part.empty()) integer_value(flag, part, 0, 1000000, "a number");
          add_note(o, "-i/-I ignored: the simulation is deterministic, one iteration gives the "
                      "interval");
          break;
        }
        case 'l': {
          const std::string v = r.take_value(flag, rest);
          consumed = true;
          const auto len = util::parse_number(v);
          if (!len) fail(fmt::format("-l: '{}' is not a number", v));
          if (*len < 0 && allow_byte_count) {
            if (*len != std::floor(*len)) fail(fmt::format("-l {}: a byte count must be a whole number", v));
            if (*len < -1e18) fail(fmt::format("-l {}: a byte count of at most 10^18 bytes", v));
            o.length_bytes = static_cast<uint64_t>(-*len);
            break;
          }
          if (*len < 0)
            fail(fmt::format("-l {}: a negative -l is netperf's byte/transaction count; hcasim "
                             "runs timed tests only (give seconds > 0)", v));
          if (*len == 0) fail(fmt::format("-l {}: the test length must be > 0 seconds", v));
          // Below the simulated clock's nanosecond a timed run moves nothing or one message
          // depending on float rounding at its start time (SDP nothing, IPoIB one): refused, in
          // the simulator and in hcasim-sdp-client alike.
          if (*len < 1e-9)
            fail(fmt::format("-l {}: too short to move one message (under 1 ns); give a longer -l", v));
          // netperf's test_time is an int (netsh.c: atoi); beyond it a simulation never ends.
          if (*len > 2147483647.0) fail(fmt::format("-l {}: above netperf's limit of 2147483647 seconds", v));
          o.length_s = *len;
          break;
        }
        case 'P': {
          const std::string v = r.take_value(flag, rest);
          consumed = true;
          if (v != "0" && v != "1") fail(fmt::format("-P: '{}' is not 0 or 1", v));
          o.print_headers = v == "1";
          break;
        }
        case 't': {
          const std::string v = r.take_value(flag, rest);
          consumed = true;
          std::string upper = v;
          for (auto& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
          if (upper != "TCP_STREAM" && upper != "TCP_MAERTS" && upper != "TCP_RR")
            fail(fmt::format("-t {}: hcasim simulates TCP_STREAM, TCP_MAERTS and TCP_RR", v));
          o.test = upper;
          break;
        }
        case 'T': {
          const std::string v = r.take_value(flag, rest);
          consumed = true;
          const auto [a, b] = break_args(v);
          if (!a.empty()) o.local_cpu_bind = integer_value("-T", a, 0, 4095, "a CPU number");
          if (!b.empty()) o.remote_cpu_bind = integer_value("-T", b, 0, 4095, "a CPU number");
          o.cpu_binding_requested = true;
          break;
        }
        case 'v': {
          const std::string v = r.take_value(flag, rest);
          consumed = true;
          o.verbosity = integer_value("-v", v, 0, 1000, "a number");
          break;
        }
        case 'h': o.help = true; break;  // netsh.c: -h prints the usage and exits
        default:
          if (kUnsupportedGlobal.find(c) != std::string_view::npos)
            fail(fmt::format("{}: netperf option not supported by hcasim", flag));
          fail("unknown option " + flag);
      }
    }
    if (!consumed) r.skip_word();
  }
}

uint64_t size_value(const std::string& flag, const std::string& text) {
  const uint64_t v = model::parse_size(text, flag);
  constexpr uint64_t kIntMax = 2147483647;  // netperf 2.4 keeps sizes in C ints (nettest_bsd.c)
  if (v > kIntMax) fail(fmt::format("{}: {} B is above netperf's limit of {} B", flag, v, kIntMax));
  return v;
}

void parse_test(const std::vector<std::string>& words, NetperfOptions& o,
                std::vector<std::string>& long_words) {
  ShortOptionReader r(words);
  while (!r.done()) {
    const std::string& w = r.word();
    if (is_long_option(w)) {  // hcasim long options are accepted after "--" too
      const size_t n = take_long_option(words, r.index(), long_words);
      for (size_t k = 0; k < n; ++k) r.skip_word();
      continue;
    }
    if (w.size() < 2 || w[0] != '-' || w == "--")
      fail(fmt::format("unexpected argument '{}' after --", w));
    const size_t begin = r.index();
    bool consumed = false;
    for (size_t pos = 1; pos < w.size() && !consumed; ++pos) {
      const char c = w[pos];
      const std::string flag = std::string("-") + c;
      const std::string rest = w.substr(pos + 1);
      switch (c) {
        case 'm':
          o.send_size = size_value("-m", r.take_value(flag, rest));
          consumed = true;
          break;
        case 'M':
          o.recv_size = size_value("-M", r.take_value(flag, rest));
          consumed = true;
          break;
        case 's': {  // -s send[,recv]: local socket buffers (TCP_STREAM uses the send one)
          const auto [a, b] = break_args(r.take_value(flag, rest));
          consumed = true;
          if (!a.empty()) o.local_send_socket = size_value("-s", a);
          if (!b.empty()) o.local_recv_socket = size_value("-s", b);
          break;
        }
        case 'S': {  // -S send[,recv]: remote socket buffers (TCP_STREAM uses the recv one)
          const auto [a, b] = break_args(r.take_value(flag, rest));
          consumed = true;
          if (!a.empty()) o.remote_send_socket = size_value("-S", a);
          if (!b.empty()) o.remote_recv_socket = size_value("-S", b);
          break;
        }
        case 'h': o.help = true; break;  // nettest_bsd.c: print_sockets_usage
        case 'D': o.nodelay = true; break;  // nettest_bsd.c: loc_nodelay = rem_nodelay = 1 (no value)
        case 'r': {  // -r req[,rsp]: TCP_RR's request/response sizes (scan_sockets_args), ignored by
                     // TCP_STREAM and TCP_MAERTS
          const std::string v = r.take_value(flag, rest);
          consumed = true;
          const auto [a, b] = break_args(v);
          if (b.find(',') != std::string::npos)
            fail(fmt::format("-r {}: takes two sizes at most, REQ[,RSP]", v));
          if (!a.empty()) o.rr_request = size_value("-r", a);
          if (!b.empty()) o.rr_response = size_value("-r", b);
          o.request_size = v;
          break;
        }
        case 'P': {  // -P port[,port]: the data connection's ports (scan_sockets_args, break_args)
          const std::string v = r.take_value(flag, rest);
          consumed = true;
          const auto [a, b] = break_args(v);
          for (const auto& port : {a, b})
            if (!port.empty()) integer_value("-P", port, 0, 65535, "a port number (hcasim looks up no service names)");
          if (!a.empty()) o.local_data_port = a;
          if (!b.empty()) o.remote_data_port = b;
          break;
        }
        case 'o':
        case 'O':
        case 'k': {
          // nettest_omni.c 2.7 scan_omni_args: -o CSV, -O human, -k keyval; the optional list is
          // the next word when it does not start with '-'. getopt takes no value attached to it.
          if (pos + 1 != w.size())
            fail(fmt::format("{}: takes its output selectors as the next word ({} LIST), as netperf's getopt does; "
                             "'{}' would be read as more options",
                             flag, flag, w));
          o.output_mode = c == 'o'   ? NetperfOptions::OutputMode::Csv
                          : c == 'O' ? NetperfOptions::OutputMode::Human
                                     : NetperfOptions::OutputMode::Keyval;
          o.output_selection.clear();
          const std::string* next = r.peek_next();
          if (next && !next->empty() && (*next)[0] != '-') {
            if (*next == "?") fail(fmt::format("{} ?: the list of selectors is in docs/cli.md (hcasim netperf)", flag));
            o.output_selection = *next;
            r.skip_word();
            r.skip_word();
            consumed = true;
            // The words this option took are the test's (test_words below).
          }
          break;
        }
        default:
          if (kUnsupportedTest.find(c) != std::string_view::npos)
            fail(fmt::format("{}: netperf test option not supported by hcasim", flag));
          fail("unknown test option " + flag);
      }
    }
    if (!consumed) r.skip_word();
    for (size_t k = begin; k < r.index(); ++k) o.test_words.push_back(words[k]);
  }
}

}  // namespace

std::pair<double, double> parse_trace_window(const std::string& text, std::string_view origin) {
  const auto bad = [&] {
    fail(fmt::format("--trace-window: '{}' is not START,LEN (simulated seconds after {}, START >= 0, LEN > 0)", text,
                     origin));
  };
  const auto comma = text.find(',');
  if (comma == std::string::npos) bad();
  const std::optional<double> start = util::parse_number(text.substr(0, comma));
  const std::optional<double> len = util::parse_number(text.substr(comma + 1));
  if (!start || !len || !std::isfinite(*start) || !std::isfinite(*len) || !(*start >= 0) || !(*len > 0)) bad();
  return {*start, *len};
}

namespace {

void parse_long(const std::vector<std::string>& long_words, NetperfOptions& o) {
  if (long_words.empty()) return;
  CLI::App app{"hcasim netperf", "hcasim netperf"};
  app.set_help_flag();
  std::string platform, remote_platform, csv, seed, transport, steady, trace, trace_window;
  std::vector<std::string> sets;
  bool stats = false, verify = false, profile = false, json = false, explain = false;
  auto* opt_platform = app.add_option("--platform", platform);
  auto* opt_remote = app.add_option("--remote-platform", remote_platform);
  app.add_option("--set", sets)->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)->expected(1);
  auto* opt_csv = app.add_option("--csv", csv);
  auto* opt_seed = app.add_option("--seed", seed);
  auto* opt_transport = app.add_option("--transport", transport);
  auto* opt_steady = app.add_option("--steady", steady);
  auto* opt_trace = app.add_option("--trace", trace);
  auto* opt_trace_window = app.add_option("--trace-window", trace_window);
  app.add_flag("--stats", stats);
  app.add_flag("--verify-data", verify);
  app.add_flag("--profile", profile);
  app.add_flag("--json", json);
  app.add_flag("--explain", explain);
  for (auto* opt : {opt_platform, opt_remote, opt_csv, opt_seed, opt_transport, opt_steady, opt_trace, opt_trace_window})
    opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  std::vector<std::string> reversed(long_words.rbegin(), long_words.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    fail(e.what());
  }
  for (auto* opt : {opt_platform, opt_remote, opt_seed, opt_transport, opt_steady, opt_trace_window})
    util::check_single_value(opt->get_name(), opt->results());
  if (opt_platform->count()) o.platform = platform;
  if (opt_remote->count()) o.remote_platform = remote_platform;
  for (const auto& s : sets)
    if (s.find('=') == std::string::npos)
      fail(fmt::format("--set: '{}' is not section.key=value", s));
  model::FaultConfig faults;  // fault.* and qp.* are checked here (the platform keys on loading)
  model::RcRetry retry;
  for (const auto& s : sets) model::apply_fault_setting(s, faults, retry);
  o.sets = sets;
  if (opt_csv->count()) {
    util::check_given_once("--csv", opt_csv->results());
    o.csv_path = csv;
  }
  if (opt_trace->count()) {
    util::check_given_once("--trace", opt_trace->results());
    o.trace_path = trace;
  }
  if (opt_trace_window->count()) {
    o.trace_window = parse_trace_window(trace_window);
    if (!o.trace_path) fail("--trace-window: needs --trace FILE (the window bounds what the trace file holds)");
  }
  if (opt_seed->count()) {
    uint64_t v = 0;
    const auto [ptr, ec] = std::from_chars(seed.data(), seed.data() + seed.size(), v);
    if (seed.empty() || ec != std::errc() || ptr != seed.data() + seed.size())
      fail(fmt::format("--seed: '{}' is not a non-negative integer", seed));
    o.seed = v;
  }
  if (opt_steady->count()) {
    const std::optional<double> v = util::parse_number(steady);
    if (!v || !(*v > 0 && *v < 0.1))
      fail(fmt::format("--steady: '{}' is not a relative precision between 0 and 0.1 (e.g. 0.002)", steady));
    o.steady_rel = *v;
  }
  if (opt_transport->count()) {
    if (transport != "sdp" && transport != "ipoib")
      fail(fmt::format("--transport: '{}' is not sdp or ipoib", transport));
    o.transport = transport;
  }
  o.stats = stats;
  o.verify_data = verify;
  o.profile = profile;
  o.json = json;
  o.explain = explain;
}

}  // namespace

NetperfOptions parse_netperf_args(const std::vector<std::string>& args, bool allow_byte_count) {
  NetperfOptions o;
  std::vector<std::string> global, test, long_words;
  bool in_test = false;
  for (const auto& w : args) {
    if (in_test) {
      test.push_back(w);
    } else if (w == "--") {
      in_test = true;
    } else if (w.size() > 3 && w.compare(0, 3, "---") == 0 &&
               std::isalpha(static_cast<unsigned char>(w[3]))) {
      // "---m 64K": a mail client ate the space of "-- -m" (seed 000 shows such lines).
      in_test = true;
      test.push_back(w.substr(2));
      add_note(o, fmt::format("read '{}' as '-- {}' (a space lost in a pasted command)", w,
                              w.substr(2)));
    } else {
      global.push_back(w);
    }
  }
  parse_global(global, o, long_words, allow_byte_count);
  parse_test(test, o, long_words);
  parse_long(long_words, o);
  if (o.output_mode != NetperfOptions::OutputMode::Classic && !o.help) {
    // The selectors are checked before anything runs: netperf's own refusals first, then the
    // ones hcasim cannot fill. A name netperf does not know is dropped, as netperf drops it.
    std::vector<std::string> dropped;
    check_output_selection(o, parse_output_selection(o, &dropped));
    for (const auto& d : dropped)
      add_note(o, fmt::format("output selector '{}' is not one netperf knows; dropped, as netperf drops it", d));
  }
  return o;
}

uint64_t verify_data_bytes(const NetperfOptions& o) {
  if (!o.verify_data) return 0;
  // TCP_RR: each host holds a request and a response buffer (send_tcp_rr, recv_tcp_rr).
  if (o.test == "TCP_RR") return 2 * (o.rr_request + o.rr_response);
  return 2 * o.send_size + o.recv_size;
}

void check_verify_data_memory(const NetperfOptions& o) {
  const uint64_t need = verify_data_bytes(o);
  if (need == 0) return;
  const auto gib = [](uint64_t b) { return static_cast<double>(b) / (1u << 30); };
  const std::string sizes = o.test == "TCP_RR"   ? fmt::format("-r {},{}", o.rr_request, o.rr_response)
                            : o.recv_size == 0 ? fmt::format("-m {}", o.send_size)
                            : o.send_size == 0 ? fmt::format("-M {}", o.recv_size)
                                               : fmt::format("-m {} and -M {}", o.send_size, o.recv_size);
  const std::string what = fmt::format("--verify-data: {} need{} about {:.1f} GiB of real bytes ({})", sizes,
                                       o.test != "TCP_RR" && o.recv_size != 0 && o.send_size != 0 ? "" : "s",
                                       gib(need),
                                       o.test == "TCP_RR" ? "a request and a response buffer on each host"
                                                          : "netperf's send ring and receive buffer");
  const auto page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  if (const long pages = ::sysconf(_SC_PHYS_PAGES); pages > 0 && need > static_cast<uint64_t>(pages) * page)
    fail(fmt::format("{}, more than this machine's {:.1f} GiB of memory", what, gib(static_cast<uint64_t>(pages) * page)));
  rlimit as{};
  if (::getrlimit(RLIMIT_AS, &as) != 0 || as.rlim_cur == RLIM_INFINITY) return;
  uint64_t in_use = 0;  // /proc/self/statm: the address space in use, in pages, first
  if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
    unsigned long long vm_pages = 0;
    if (std::fscanf(f, "%llu", &vm_pages) == 1) in_use = vm_pages * page;
    std::fclose(f);
  }
  // What the simulation itself adds after this check (SimGrid's engine, its actors, the
  // engine's rings): about 25 MB measured (VmPeak 124.7 MB during a run, against ~100 MB here).
  constexpr uint64_t kSimulationGrowth = uint64_t{64} << 20;
  const uint64_t limit = as.rlim_cur;
  if (in_use + need + kSimulationGrowth > limit)
    fail(fmt::format("{}, more than this process may still allocate: ulimit -v is {:.1f} GiB, {:.1f} GiB in use", what,
                     gib(limit), gib(in_use)));
}

TcpStreamConfig to_tcp_stream_config(const NetperfOptions& o) {
  if (o.transport == "ipoib" && o.verify_data)
    fail("--verify-data: the IPoIB path (--transport ipoib) moves byte counts, not bytes; use --transport sdp");
  TcpStreamConfig c;
  c.test = o.test == "TCP_RR" ? NetperfTest::Rr : o.test == "TCP_MAERTS" ? NetperfTest::Maerts : NetperfTest::Stream;
  c.length_s = o.length_s;
  c.length_bytes = o.length_bytes;
  c.local_recv_socket = o.local_recv_socket;
  c.remote_send_socket = o.remote_send_socket;
  if (c.test == NetperfTest::Rr) {
    // -l -N of a request/response test counts transactions (nettest_bsd.c send_tcp_rr:
    // trans_remaining = test_bytes).
    c.transactions = o.length_bytes;
    c.length_bytes = 0;
    if (o.rr_request == 0 || o.rr_response == 0)
      fail(fmt::format("-r {}: a TCP_RR {} of 0 bytes moves nothing (netperf's recv loop would never end); give "
                       "at least 1 byte",
                       o.request_size.value_or("0"), o.rr_request == 0 ? "request" : "response"));
    c.request_size = o.rr_request;
    c.response_size = o.rr_response;
    // What a transaction test does not do, each in one line.
    if (o.steady_rel > 0) fail("--steady: a steady-state measurement is made for TCP_STREAM and TCP_MAERTS, not TCP_RR");
    if (o.trace_path) fail("--trace: traced for TCP_STREAM only, not TCP_RR");
    if (o.explain) fail("--explain: explained for TCP_STREAM only, not TCP_RR");
    if (o.send_size || o.recv_size)
      fail(fmt::format("{}: TCP_RR sends requests and responses of -r's sizes; -m and -M belong to TCP_STREAM and "
                       "TCP_MAERTS",
                       o.send_size ? "-m" : "-M"));
  }
  if (c.test == NetperfTest::Maerts && o.trace_path) fail("--trace: traced for TCP_STREAM only, not TCP_MAERTS");
  if (c.test == NetperfTest::Maerts && o.explain) fail("--explain: explained for TCP_STREAM only, not TCP_MAERTS");
  for (const auto& s : o.sets) model::apply_fault_setting(s, c.faults, c.retry);
  c.send_size = o.send_size;
  c.recv_size = o.recv_size;
  c.local_send_socket = o.local_send_socket;
  c.remote_recv_socket = o.remote_recv_socket;
  c.local_cpu = o.local_cpu_bind;
  c.remote_cpu = o.remote_cpu_bind;
  c.verify_data = o.verify_data;
  c.nodelay = o.nodelay;
  c.seed = o.seed;
  c.explain = o.explain;
  c.trace = o.trace_path.has_value();
  if (o.trace_window) std::tie(c.trace_start_s, c.trace_len_s) = *o.trace_window;
  c.steady_rel = o.steady_rel;
  // -D: netperf 2.4.3's demo mode for the classic tables, netperf 2.7's (omni) with -o/-O/-k
  // (frontends/netperf_demo.h).
  const bool omni = o.output_mode != NetperfOptions::OutputMode::Classic;
  c.demo.on = o.demo;
  c.demo.interval_us = o.demo_interval_s * 1000000.0;
  c.demo.units = static_cast<double>(o.demo_units);
  c.demo.final_interim = omni;
  c.demo.omni_default = omni;
  c.demo.rr_default_units = omni ? 100 : 1000;
  c.demo.rr_ticks_bytes = omni && o.test == "TCP_RR" && omni_format(o) != 'x';
  c.keep_latency = omni && c.test == NetperfTest::Rr;
  if (omni && o.json)
    fail(fmt::format("{}: output selectors are netperf's text output; not with --json",
                     o.output_mode == NetperfOptions::OutputMode::Csv     ? "-o"
                     : o.output_mode == NetperfOptions::OutputMode::Human ? "-O"
                                                                          : "-k"));
  if (o.steady_rel > 0 && o.transport == "ipoib")
    fail("--steady: a steady-state measurement is made for SDP only, not for --transport ipoib");
  if (o.steady_rel > 0 && c.faults.any())
    fail("--steady: faults on the wire (fault.*) are rare events a steady window does not sample; measure the "
         "whole run");
  if (o.steady_rel > 0 && o.length_bytes > 0)
    fail("--steady: a run of a byte count (-l -N) sends all of it; give a test length in seconds");
  if (o.transport == "ipoib" && c.faults.any())
    fail("fault.*: faults on the wire are modelled for SDP only, not for --transport ipoib");
  return c;
}

void require_stream_test(const NetperfOptions& o, std::string_view what) {
  if (o.test != "TCP_STREAM") fail(fmt::format("-t {}: {} takes TCP_STREAM runs only", o.test, what));
}

std::string netperf_option(const std::string& field) {
  if (field == "local_cpu" || field == "remote_cpu") return "-T";
  if (field == "local_send_socket" || field == "local_recv_socket") return "-s";
  if (field == "remote_recv_socket" || field == "remote_send_socket") return "-S";
  if (field == "transport") return "--transport ipoib";
  return field;
}

std::string request_size_note(const NetperfOptions& o, uint64_t send_size) {
  if (!o.request_size || o.test == "TCP_RR") return "";
  if (o.test == "TCP_MAERTS")
    return fmt::format("hcasim: note: TCP_MAERTS ignores -r; netserver's sends are {} ({} B)",
                       o.send_size != 0 ? "-m's size" : "its send socket size", send_size);
  if (o.send_size != 0)
    return fmt::format("hcasim: note: TCP_STREAM ignores -r; sends are -m's size ({} B)",
                       send_size);
  return fmt::format("hcasim: note: TCP_STREAM ignores -r; sends are the send socket size ({} B)",
                     send_size);
}

}  // namespace hcasim::frontends
