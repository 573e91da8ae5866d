// Readers of real netperf and perftest runs (run_file.h). The command lines are interpreted with
// the project's own parsers (parse_netperf_args, parse_perftest_args); the outputs are read in
// the layouts frontends/netperf_output.cpp and frontends/perftest_output.cpp print, which are
// netperf 2.4.3's and perftest 2.x / 4.5's.
#include "scenarios/run_file.h"

#include "model/fault.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <sstream>
#include <utility>

#include <fmt/format.h>

#include "frontends/netperf_cli.h"
#include "frontends/perftest_cli.h"
#include "frontends/pingpong_cli.h"
#include "scenarios/datadir.h"
#include "util/command_words.h"
#include "util/input_file.h"
#include "util/number.h"

namespace hcasim::scenarios {

using util::base_name;
using util::is_long_option;
using util::split_command_line;
using util::taskset_cpus_index;


namespace {

[[noreturn]] void fail_at(const std::string& origin, uint32_t line, const std::string& what) {
  throw InputError(fmt::format("{}:{}: {}", origin, line, what));
}

/// One line of the file, without its line end, and its number (from 1).
struct Line {
  std::string_view text;
  uint32_t number = 0;
};

/// The file's lines: "\n" ends a line, a "\r" before it is dropped; a last line without "\n"
/// counts.
std::vector<Line> split_lines(std::string_view text) {
  std::vector<Line> lines;
  uint32_t number = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back({line, ++number});
    start = end + 1;
  }
  return lines;
}

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

/// The blank-separated words of `s` (no quoting).
std::vector<std::string_view> fields(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_blank(s[i])) ++i;
    const size_t start = i;
    while (i < s.size() && !is_blank(s[i])) ++i;
    if (i > start) out.push_back(s.substr(start, i - start));
  }
  return out;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

/// A whole non-negative decimal number, the entire text.
std::optional<uint64_t> parse_whole(std::string_view text) {
  uint64_t v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return v;
}

bool is_prompt_char(char c) { return c == '#' || c == '$' || c == '>'; }

/// The length of the shell prompt at the start of `t` (trimmed, not empty), 0 when there is
/// none: a bracketed "[...]" followed at once by '#', '$' or '>' and then a blank or the end
/// ("[root@x ~]#"), or a first word ending in one of them ("#", "$", "ionize:~#").
size_t prompt_length(std::string_view t) {
  if (t.front() == '[') {
    const size_t close = t.find(']');
    if (close != std::string_view::npos && close + 1 < t.size() && is_prompt_char(t[close + 1]) &&
        (close + 2 == t.size() || is_blank(t[close + 2])))
      return close + 2;
  }
  size_t end = 0;
  while (end < t.size() && !is_blank(t[end])) ++end;
  return is_prompt_char(t[end - 1]) ? end : 0;
}

/// The tools whose output this file reads: netperf and every perftest tool hcasim simulates
/// (frontends::perftest_tests).
bool is_known_tool(std::string_view name) {
  return name == "netperf" || frontends::perftest_test_named(name).has_value() ||
         frontends::pingpong_program_named(name).has_value();
}

/// The tools a run file takes, for the refusal of any other: "netperf, ib_write_lat, ...,
/// ib_atomic_bw, ibv_rc_pingpong, ... and ibv_srq_pingpong".
std::string known_tools_list() {
  std::vector<std::string> names = {"netperf"};
  for (const frontends::PerftestTest test : frontends::perftest_tests())
    names.emplace_back(frontends::perftest_tool_name(test));
  for (const frontends::PingpongProgram program :
       {frontends::PingpongProgram::Rc, frontends::PingpongProgram::Uc, frontends::PingpongProgram::Ud,
        frontends::PingpongProgram::Srq})
    names.emplace_back(frontends::pingpong_tool_name(program));
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += i + 1 == names.size() ? " and " : ", ";
    out += names[i];
  }
  return out;
}

/// A perftest program name hcasim does not read (ib_read_lat, ib_send_lat, raw_ethernet_bw...).
bool is_other_perftest_tool(std::string_view name) {
  const bool ib = starts_with(name, "ib_") &&
                  ((name.size() > 7 && name.substr(name.size() - 4) == "_lat") ||
                   (name.size() > 6 && name.substr(name.size() - 3) == "_bw"));
  return ib || starts_with(name, "raw_ethernet_");
}

/// A shell variable assignment "NAME=value".
bool is_assignment(std::string_view w) {
  const size_t eq = w.find('=');
  if (eq == std::string_view::npos || eq == 0) return false;
  if (!(std::isalpha(static_cast<unsigned char>(w[0])) || w[0] == '_')) return false;
  for (size_t i = 1; i < eq; ++i)
    if (!(std::isalnum(static_cast<unsigned char>(w[i])) || w[i] == '_')) return false;
  return true;
}

/// The ib_sdp module parameter file (with or without "parameters/").
bool is_zcopy_path(std::string_view path) {
  return base_name(path) == "sdp_zcopy_thresh" && path.find("ib_sdp/") != std::string_view::npos;
}

/// Adds or replaces "key=value" in `set`, written at `line` (kept in `lines`, parallel): a later
/// value of a key replaces the earlier one.
void apply_setting(std::vector<std::string>& set, std::vector<uint32_t>& lines, const std::string& entry,
                   uint32_t line) {
  const std::string key = entry.substr(0, entry.find('='));
  for (size_t i = set.size(); i-- > 0;)
    if (set[i].substr(0, set[i].find('=')) == key) {
      set.erase(set.begin() + static_cast<std::ptrdiff_t>(i));
      lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(i));
    }
  set.push_back(entry);
  lines.push_back(line);
}

/// What a line of the file is.
enum class LineKind {
  Text,          ///< output of the current command, or ignored
  Tool,          ///< a command line of a tool this file reads
  OtherCommand,  ///< a prompt with any other command (or none): ends the current output
  Setting,       ///< sdp_zcopy_thresh echo or "# hcasim: --set": ends the output, sets values
};

struct Classified {
  LineKind kind = LineKind::Text;
  std::string command;             ///< Tool: the text after the prompt
  std::string tool;                ///< Tool: the tool's name
  std::vector<std::string> words;  ///< Tool: the words after the tool word
  std::vector<std::string> sets;   ///< Setting: "key=value" entries
  std::optional<std::string> platform;  ///< Setting: a directive's --platform
};

/// What a directive "# hcasim: --set key=value --platform NAME ..." says.
struct Directive {
  std::vector<std::string> sets;        ///< "key=value" entries, in order
  std::optional<std::string> platform;  ///< the last --platform
};

/// Reads the words of a directive (after "hcasim:").
Directive read_directive(std::string_view rest, const std::string& origin, uint32_t line) {
  std::vector<std::string> words;
  try {
    words = split_command_line(rest);
  } catch (const InputError& e) {
    fail_at(origin, line, fmt::format("hcasim directive: {}", e.what()));
  }
  if (words.empty())
    fail_at(origin, line, "hcasim directive: empty (write '# hcasim: --set key=value')");
  Directive d;
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    const size_t eq = w.find('=');
    const std::string option = w.substr(0, eq);
    if (option != "--set" && option != "--platform")
      fail_at(origin, line,
              fmt::format("hcasim directive: unknown option '{}' (a directive is '# hcasim: --set "
                          "key=value' or '# hcasim: --platform NAME')",
                          w));
    std::string value;
    if (eq != std::string::npos) {
      value = w.substr(eq + 1);
    } else {
      if (i + 1 >= words.size())
        fail_at(origin, line, fmt::format("hcasim directive: {}: missing value", option));
      value = words[++i];
    }
    if (option == "--platform") {
      if (value.empty()) fail_at(origin, line, "hcasim directive: --platform: empty value");
      d.platform = value;
      continue;
    }
    const size_t key_end = value.find('=');
    if (key_end == std::string::npos || key_end == 0 || key_end + 1 == value.size())
      fail_at(origin, line, fmt::format("hcasim directive: --set: '{}' is not key=value", value));
    try {  // fault.* and qp.* are checked here, the platform keys when the platform is loaded
      model::FaultConfig faults;
      model::RcRetry retry;
      model::apply_fault_setting(value, faults, retry);
    } catch (const InputError& e) {
      fail_at(origin, line, fmt::format("hcasim directive: {}", e.what()));
    }
    d.sets.push_back(value);
  }
  return d;
}

/// The zcopy threshold set by `echo N > .../ib_sdp/sdp_zcopy_thresh` (also ">PATH" attached and
/// "echo N | [sudo] tee [-a] PATH") in `w` from `i` ("echo"), or nullopt when `w` is not that.
std::optional<std::string> zcopy_echo(const std::vector<std::string>& w, size_t i,
                                      const std::string& origin, uint32_t line) {
  if (i + 2 >= w.size() || w[i] != "echo") return std::nullopt;
  std::string path;
  const std::string& redirect = w[i + 2];
  if ((redirect == ">" || redirect == ">>") && i + 3 < w.size()) {
    path = w[i + 3];
  } else if (redirect.size() > 1 && redirect[0] == '>') {
    const size_t start = redirect.find_first_not_of('>');
    if (start == std::string::npos) return std::nullopt;
    path = redirect.substr(start);
  } else if (redirect == "|") {
    size_t j = i + 3;
    if (j < w.size() && base_name(w[j]) == "sudo") ++j;
    if (j >= w.size() || base_name(w[j]) != "tee") return std::nullopt;
    ++j;
    if (j < w.size() && (w[j] == "-a" || w[j] == "--append")) ++j;
    if (j < w.size()) path = w[j];
  }
  if (!is_zcopy_path(path)) return std::nullopt;
  if (!parse_whole(w[i + 1]))
    fail_at(origin, line, fmt::format("sdp_zcopy_thresh: '{}' is not a whole number", w[i + 1]));
  return "sdp.zcopy_thresh=" + w[i + 1];
}

/// Classifies one line (see run_file.h for the rules).
Classified classify(const Line& line, const std::string& origin) {
  Classified c;
  const std::string_view t = trim(line.text);
  if (t.empty()) return c;
  const size_t prompt = prompt_length(t);
  const bool has_prompt = prompt != 0;
  const std::string_view rest = trim(t.substr(prompt));
  if (has_prompt && rest.empty()) {
    c.kind = LineKind::OtherCommand;
    return c;
  }
  // "# hcasim: ..." (also "#hcasim:"): a directive.
  if (t[0] == '#' && starts_with(trim(t.substr(1)), "hcasim:")) {
    c.kind = LineKind::Setting;
    Directive d = read_directive(trim(t.substr(1)).substr(7), origin, line.number);
    c.sets = std::move(d.sets);
    c.platform = std::move(d.platform);
    return c;
  }

  // Split like a shell; prose with an odd quote cannot be split, so fall back to blanks and
  // report the split error only if the line turns out to be a tool's command.
  std::vector<std::string> w;
  std::optional<std::string> split_error;
  try {
    w = split_command_line(rest);
  } catch (const InputError& e) {
    split_error = e.what();
    for (std::string_view f : fields(rest)) w.emplace_back(f);
  }

  const LineKind otherwise = has_prompt ? LineKind::OtherCommand : LineKind::Text;
  size_t i = 0;
  bool prefixed = false;
  if (i < w.size() && base_name(w[i]) == "sudo") {
    prefixed = true;
    for (++i; i < w.size() && w[i].size() > 1 && w[i][0] == '-';) ++i;
  }
  if (i < w.size() && base_name(w[i]) == "env") {
    prefixed = true;
    ++i;
  }
  for (; i < w.size() && is_assignment(w[i]); ++i) prefixed = true;
  if (i < w.size() && base_name(w[i]) == "taskset") {
    const std::vector<std::string> after(w.begin() + static_cast<std::ptrdiff_t>(i), w.end());
    size_t cpus = 0;
    try {
      cpus = taskset_cpus_index(after);
    } catch (const InputError&) {
      c.kind = otherwise;  // "taskset -p PID": not a command to run
      return c;
    }
    if (cpus + 1 >= after.size()) {
      c.kind = otherwise;
      return c;
    }
    prefixed = true;
    i += cpus + 1;
  }
  if (i >= w.size()) {
    c.kind = otherwise;
    return c;
  }

  if (std::optional<std::string> zcopy = zcopy_echo(w, i, origin, line.number)) {
    c.kind = LineKind::Setting;
    c.sets.push_back(*zcopy);
    return c;
  }
  // A command that sets the threshold some other way would be silently ignored, and the runs
  // after it simulated in the wrong mode.
  if (has_prompt && rest.find("sdp_zcopy_thresh") != std::string_view::npos)
    fail_at(origin, line.number,
            "a command that sets sdp_zcopy_thresh in a form hcasim does not read (write 'echo N > "
            "/sys/module/ib_sdp/sdp_zcopy_thresh' or '# hcasim: --set sdp.zcopy_thresh=N')");

  const std::string_view tool = base_name(w[i]);
  const bool known = is_known_tool(tool);
  if (!known && !is_other_perftest_tool(tool)) {
    c.kind = otherwise;
    return c;
  }
  // A bare line must look like a command, not a sentence that starts with the tool's name.
  const bool commandlike = has_prompt || prefixed || w[i].find('/') != std::string::npos ||
                           i + 1 >= w.size() || starts_with(w[i + 1], "-");
  if (!commandlike) {
    c.kind = LineKind::Text;
    return c;
  }
  if (!known)
    fail_at(origin, line.number, fmt::format("{}: hcasim reads runs of {} only", tool, known_tools_list()));
  if (split_error) fail_at(origin, line.number, fmt::format("{}: {}", tool, *split_error));
  c.kind = LineKind::Tool;
  c.command = std::string(rest);
  c.tool = std::string(tool);
  c.words.assign(w.begin() + static_cast<std::ptrdiff_t>(i) + 1, w.end());
  // hcasim's options that name the machine or its settings are `# hcasim:` directives, not part
  // of the command: a --platform here was silently overridden by calibrate's, a --set checked
  // only in the simulation. (--transport stays: it says how the run was made.)
  for (const auto& word : c.words) {
    for (const char* reserved : {"--platform", "--set"})
      if (is_long_option(word, reserved))
        fail_at(origin, line.number,
                fmt::format("{}: {} is hcasim's option, not {}'s: give it as a '# hcasim: {} ...' line before the "
                            "command",
                            tool, reserved, tool, reserved));
    if (is_long_option(word, "--csv"))
      fail_at(origin, line.number, fmt::format("{}: --csv is hcasim's option: calibrate writes its own (--csv)", tool));
    if (is_long_option(word, "--remote-platform"))
      fail_at(origin, line.number,
              fmt::format("{}: --remote-platform: the runs of a run file are between two of the machine it "
                          "describes ('# hcasim: --platform')",
                          tool));
  }
  return c;
}

// --- netperf -----------------------------------------------------------------------------------

/// netperf's test words with a mail-mangled "---m" read as "--", "-m" (before any "--"), as
/// parse_netperf_args reads them.
std::vector<std::string> unmangle_netperf_words(const std::vector<std::string>& words) {
  std::vector<std::string> out;
  bool in_test = false;
  for (const std::string& w : words) {
    if (!in_test && w.size() > 3 && starts_with(w, "---") &&
        std::isalpha(static_cast<unsigned char>(w[3]))) {
      out.emplace_back("--");
      out.push_back(w.substr(2));
      in_test = true;
      continue;
    }
    if (w == "--") in_test = true;
    out.push_back(w);
  }
  return out;
}

/// The -f letter of a unit as netperf prints it in its column titles (netlib.c format_units),
/// from the start of the titles' word after "secs." ("10^6bits/sec", "10^6bits/s", "KBytes").
std::optional<char> netperf_unit_letter(std::string_view word) {
  static constexpr std::pair<std::string_view, char> kUnits[] = {
      {"10^3bits", 'k'}, {"10^6bits", 'm'}, {"10^9bits", 'g'},
      {"KBytes", 'K'},   {"MBytes", 'M'},   {"GBytes", 'G'}};
  for (const auto& [name, letter] : kUnits)
    if (starts_with(word, name)) return letter;
  return std::nullopt;
}

/// A throughput in the -f unit `format` in 10^6 bit/s: k m g are 10^3, 10^6, 10^9 bit/s; K M G
/// are 2^10, 2^20, 2^30 bytes/s (netlib.c calc_thruput_interval).
double netperf_to_mbps(double value, char format) {
  switch (format) {
    case 'k': return value / 1e3;
    case 'g': return value * 1e3;
    case 'K': return value * 1024.0 * 8 / 1e6;
    case 'M': return value * 1024.0 * 1024.0 * 8 / 1e6;
    case 'G': return value * 1024.0 * 1024.0 * 1024.0 * 8 / 1e6;
    default: return value;  // 'm'
  }
}

/// The confidence text of a banner: from "+/-" to "conf." inclusive (or the end of the line).
std::optional<std::string> banner_confidence(std::string_view banner) {
  const size_t start = banner.find("+/-");
  if (start == std::string_view::npos) return std::nullopt;
  std::string_view text = banner.substr(start);
  const size_t conf = text.find("conf.");
  if (conf != std::string_view::npos) text = text.substr(0, conf + 5);
  return std::string(trim(text));
}

/// The banner netperf prints for each test (print_top_test_header's first argument).
std::string_view banner_name(std::string_view test) {
  return test == "TCP_RR" ? "TCP REQUEST/RESPONSE TEST" : test == "TCP_MAERTS" ? "TCP MAERTS TEST" : "TCP STREAM TEST";
}

class NetperfOutputReader {
 public:
  NetperfOutputReader(const frontends::NetperfOptions& o, const std::string& origin, uint32_t command_line)
      : o_(o), origin_(origin), command_line_(command_line), rr_(o.test == "TCP_RR") {}

  NetperfReading read(const std::vector<Line>& out) {
    const bool cpu = o_.local_cpu || o_.remote_cpu;
    if (o_.verbosity == 0 && cpu)
      fail_at(origin_, command_line_,
              fmt::format("netperf -v 0 with -c/-C prints only a service demand, not the {}: hcasim "
                          "cannot read that run (repeat it without -v 0)",
                          rr_ ? "transaction rate" : "throughput"));
    if (o_.verbosity > 2)
      fail_at(origin_, command_line_,
              fmt::format("netperf 2.4.3 prints no {} result row at -v {} (use -v 1 or "
                          "-v 2)",
                          o_.test, o_.verbosity));
    // Without titles nothing tells netperf 2.4.4's throughput in the -f unit from 2.4.3's rate.
    if (rr_ && o_.format_given && (o_.verbosity == 0 || !o_.print_headers))
      fail_at(origin_, command_line_,
              fmt::format("netperf TCP_RR with -f and {}: netperf 2.4.4 and later print a throughput in the -f "
                          "unit, 2.4.3 a transaction rate, and without column titles the row does not say which "
                          "(repeat the run without -f, or with its titles)",
                          o_.verbosity == 0 ? "-v 0" : "-P 0"));
    r_.test = o_.test;
    r_.format = o_.format;
    size_t k = 0;
    if (o_.verbosity != 0 && o_.print_headers) {
      for (; k < out.size(); ++k) {
        const std::string_view t = trim(out[k].text);
        if (banner_or_warning(t, out[k].number)) continue;
        const auto f = fields(t);
        // netperf 2.4.4 and later title a TCP_RR run with -f "Tput" (with -c/-C) or
        // "Throughput": its row is then a throughput in the -f unit, not a transaction rate.
        if (rr_ && !f.empty() && (f.front() == "Socket" || f.front() == "Send") &&
            std::any_of(f.begin(), f.end(), [](std::string_view w) { return w == "Tput" || w == "Throughput"; }))
          band_titles_error(out[k].number, std::nullopt);
        const auto secs = std::find(f.begin(), f.end(), "secs.");
        if (f.empty() || f.front() != "bytes" || secs == f.end()) continue;
        if (rr_) {
          if (secs + 1 != f.end() && netperf_unit_letter(*(secs + 1))) band_titles_error(out[k].number, *(secs + 1));
          if (secs + 1 == f.end() || *(secs + 1) != "per")
            fail_at(origin_, out[k].number, "netperf TCP_RR column titles: expected 'per sec' after 'secs.'");
          break;
        }
        if (secs + 1 == f.end())
          fail_at(origin_, out[k].number, "netperf column titles: no throughput unit after 'secs.'");
        const std::optional<char> unit = netperf_unit_letter(*(secs + 1));
        if (!unit)
          fail_at(origin_, out[k].number,
                  fmt::format("netperf column titles: unknown throughput unit '{}' (netperf prints "
                              "10^3bits, 10^6bits, 10^9bits, KBytes, MBytes or GBytes)",
                              *(secs + 1)));
        r_.format = *unit;
        break;
      }
      if (k == out.size())
        fail_at(origin_, command_line_,
                rr_ ? "netperf output ends before its column titles ('bytes  Bytes  bytes    bytes   secs.    per "
                      "sec'; the command has no -P 0)"
                    : "netperf output ends before its column titles ('bytes  bytes   bytes    secs. "
                      "...'; the command has no -P 0)");
      ++k;
    }
    for (; k < out.size(); ++k) {
      const std::string_view t = trim(out[k].text);
      if (t.empty() || banner_or_warning(t, out[k].number)) continue;
      const auto f = fields(t);
      row(f, out[k].number, cpu);
      size_t next = k + 1;
      if (rr_ && o_.verbosity != 0) next = remote_sockets(out, k + 1);
      no_second_row(out, next, f.size());
      return r_;
    }
    fail_at(origin_, command_line_,
            o_.verbosity == 0 ? fmt::format("netperf output ends before its result (-v 0: the {})",
                                            rr_ ? "transaction rate" : "throughput")
                              : std::string("netperf output ends before its result row"));
  }

 private:
  /// Notes a banner line or a line of the "!!!" warning block; false for any other line. A
  /// banner of another test than the command's is an error at `line`.
  bool banner_or_warning(std::string_view t, uint32_t line) {
    if (starts_with(t, "!!!")) {
      if (t.find("Desired confidence was not achieved") != std::string_view::npos)
        r_.confidence_achieved = false;
      return true;
    }
    for (std::string_view test : {"TCP_STREAM", "TCP_MAERTS", "TCP_RR"}) {
      // netperf 2.3's stream banner is "TCP STREAM TEST to ...": the name is enough. A line that
      // starts with another test's name is that test's banner; one that only mentions it is prose.
      const std::string_view name = banner_name(test);
      if (t.find(name.substr(4)) == std::string_view::npos) continue;
      if (test != o_.test && starts_with(t, name))
        fail_at(origin_, line,
                fmt::format("a {} banner under the -t {} command of line {}: netperf prints '{}'", name, o_.test,
                            command_line_, banner_name(o_.test)));
      if (auto c = banner_confidence(t)) r_.confidence = c;
      return true;
    }
    return false;
  }

  /// The titles of netperf 2.4.4 and later's TCP_RR with -f: a throughput, not a transaction rate.
  [[noreturn]] void band_titles_error(uint32_t line, std::optional<std::string_view> unit) const {
    fail_at(origin_, line,
            fmt::format("netperf TCP_RR column titles: a throughput{} (netperf 2.4.4 or later with -f), not "
                        "netperf 2.4.3's transaction rate ('Trans. Rate per sec'): repeat the run without -f",
                        unit ? fmt::format(" in {}", *unit) : std::string()));
  }

  /// TCP_RR's second line, from index `from`: the first non-blank line must be the remote send and
  /// receive socket sizes (tput_fmt_1_line_2 / cpu_fmt_1_line_2, "%-6d %-6d"). Returns the index
  /// after it.
  size_t remote_sockets(const std::vector<Line>& out, size_t from) {
    for (size_t k = from; k < out.size(); ++k) {
      const auto f = fields(trim(out[k].text));
      if (f.empty()) continue;
      if (f.size() != 2 || !util::parse_number(f[0]) || !util::parse_number(f[1]) || *util::parse_number(f[0]) < 0 ||
          *util::parse_number(f[1]) < 0)
        fail_at(origin_, out[k].number,
                fmt::format("netperf TCP_RR result: expected the remote Send and Recv socket sizes (2 numbers) "
                            "on the line after the row of line {}",
                            r_.line));
      r_.remote_send_socket_bytes = *util::parse_number(f[0]);
      r_.remote_recv_socket_bytes = *util::parse_number(f[1]);
      return k + 1;
    }
    fail_at(origin_, r_.line,
            "netperf TCP_RR output ends after its row, before the line of the remote Send and Recv socket sizes");
  }

  /// After the row at index `from` - 1: a line of as many numbers is a second result row (two
  /// runs pasted under one command line), which would be dropped. At -v 2 the alignment block
  /// that follows the row has such a line, so the search stops at its titles.
  void no_second_row(const std::vector<Line>& out, size_t from, size_t row_fields) const {
    for (size_t k = from; k < out.size(); ++k) {
      const auto f = fields(trim(out[k].text));
      if (!f.empty() && f.front() == "Alignment") return;
      if (f.size() != row_fields) continue;
      if (std::all_of(f.begin(), f.end(), [](std::string_view w) { return util::parse_number(w).has_value(); }))
        fail_at(origin_, out[k].number,
                fmt::format("a second netperf result row under the command of line {} (the first is line {}): "
                            "repeat the command line before each run",
                            command_line_, r_.line));
    }
  }

  void row(const std::vector<std::string_view>& f, uint32_t line, bool cpu) {
    r_.line = line;
    if (o_.verbosity == 0) {
      if (f.size() != 1)
        fail_at(origin_, line,
                fmt::format("netperf -v 0 result has {} fields, expected 1 (the {})", f.size(),
                            rr_ ? "transaction rate" : "throughput"));
      r_.terse = true;
      if (rr_) {
        r_.transaction_rate = number(f[0], line, 0, "Trans. Rate", true);
        return;
      }
      r_.throughput = number(f[0], line, 0, "Throughput", true);
      r_.throughput_mbps = netperf_to_mbps(r_.throughput, r_.format);
      return;
    }
    if (rr_) {
      rr_row(f, line, cpu);
      return;
    }
    static constexpr const char* kNames[] = {
        "Recv Socket Size",          "Send Socket Size",        "Send Message Size",
        "Elapsed Time",              "Throughput",              "Utilization Send local",
        "Utilization Recv remote",   "Service Demand Send local", "Service Demand Recv remote"};
    const std::array<double, 10> v =
        fields_of(f, line, kNames, cpu ? 9 : 5, 4, "",
                  cpu ? "the command has -c/-C: sizes, elapsed time, throughput, two utilisations and two service "
                        "demands"
                      : "no -c/-C: three sizes, elapsed time and throughput");
    r_.recv_socket_bytes = v[0];
    r_.send_socket_bytes = v[1];
    r_.send_message_bytes = v[2];
    // netperf prints the -m it was given: another size is a row pasted under the wrong command,
    // which would be compared with a simulation of the command's size.
    if (o_.send_size != 0 && v[2] != static_cast<double>(o_.send_size))
      fail_at(origin_, line,
              fmt::format("netperf result row: Send Message Size {} differs from the command's -m {} (line {})",
                          f[2], o_.send_size, command_line_));
    r_.elapsed_s = v[3];
    r_.throughput = v[4];
    r_.throughput_mbps = netperf_to_mbps(v[4], r_.format);
    if (cpu) {
      r_.util_local_pct = cpu_figure(v[5], f[5], line, 5, kNames[5], true);
      r_.util_remote_pct = cpu_figure(v[6], f[6], line, 6, kNames[6], true);
      r_.sd_local_us_per_kb = cpu_figure(v[7], f[7], line, 7, kNames[7], false);
      r_.sd_remote_us_per_kb = cpu_figure(v[8], f[8], line, 8, kNames[8], false);
    }
  }

  /// send_tcp_rr's first row line: tput_fmt_1_line_1 (6 numbers) or cpu_fmt_1_line_1 (10).
  void rr_row(const std::vector<std::string_view>& f, uint32_t line, bool cpu) {
    static constexpr const char* kNames[] = {
        "Send Socket Size", "Recv Socket Size", "Request Size", "Response Size", "Elapsed Time",
        "Trans. Rate",      "CPU local",        "CPU remote",   "S.dem local",   "S.dem remote"};
    const std::array<double, 10> v =
        fields_of(f, line, kNames, cpu ? 10 : 6, 5, "TCP_RR ",
                  cpu ? "the command has -c/-C: two socket sizes, request and response sizes, elapsed time, "
                        "transaction rate, two utilisations and two service demands"
                      : "no -c/-C: two socket sizes, request and response sizes, elapsed time and transaction rate");
    r_.local_send_socket_bytes = v[0];
    r_.local_recv_socket_bytes = v[1];
    r_.request_bytes = v[2];
    r_.response_bytes = v[3];
    // netperf prints the -r it was given (1,1 without one): other sizes are a row pasted under
    // the wrong command.
    if (v[2] != static_cast<double>(o_.rr_request) || v[3] != static_cast<double>(o_.rr_response))
      fail_at(origin_, line,
              fmt::format("netperf TCP_RR result row: Request/Response Size {} {} differs from the command's -r "
                          "{},{} (line {}{})",
                          f[2], f[3], o_.rr_request, o_.rr_response, command_line_,
                          o_.request_size ? "" : "; netperf's default without -r"));
    r_.elapsed_s = v[4];
    r_.transaction_rate = v[5];
    if (cpu) {
      r_.util_local_pct = cpu_figure(v[6], f[6], line, 6, kNames[6], true);
      r_.util_remote_pct = cpu_figure(v[7], f[7], line, 7, kNames[7], true);
      r_.sd_local_us_per_tr = cpu_figure(v[8], f[8], line, 8, kNames[8], false);
      r_.sd_remote_us_per_tr = cpu_figure(v[9], f[9], line, 9, kNames[9], false);
    }
  }

  /// The `expected` numbers of a result row, named `names`; from column `first_signed` on they may
  /// be negative (number's signed_figure). A row of another length is an error naming `what`
  /// ("TCP_RR " or "") and the columns the command prints (`columns`).
  std::array<double, 10> fields_of(const std::vector<std::string_view>& f, uint32_t line, const char* const* names,
                                   size_t expected, size_t first_signed, std::string_view what,
                                   std::string_view columns) const {
    if (f.size() != expected)
      fail_at(origin_, line,
              fmt::format("netperf {}result row has {} fields, expected {} ({})", what, f.size(), expected, columns));
    std::array<double, 10> v{};
    for (size_t i = 0; i < expected; ++i) v[i] = number(f[i], line, i, names[i], i >= first_signed);
    return v;
  }

  /// Column `column` (`name`) of a row: a number up to 10^12, and >= 0 unless `signed_figure` (the
  /// throughput or rate, whose sign the comparison checks and names; a CPU column, where netperf
  /// prints -1 for a side it did not measure and cpu_figure checks the rest).
  double number(std::string_view text, uint32_t line, size_t column, const char* name,
                bool signed_figure = false) const {
    const std::optional<double> v = util::parse_number(text);
    const char* what = rr_ ? "TCP_RR " : "";
    if (!v)
      fail_at(origin_, line,
              fmt::format("netperf {}result row: column {} ({}) '{}' is not a number", what, column + 1, name, text));
    // 10^12: beyond any machine's figure (model/params.h kLargest), and wider than the report's columns.
    if ((*v < 0 && !signed_figure) || *v > 1e12)
      fail_at(origin_, line,
              fmt::format("netperf {}result row: column {} ({}) '{}' is not a figure netperf prints (0..1e12)", what,
                          column + 1, name, text));
    return *v;
  }

  /// A CPU column's figure: netperf's -1 (printed -1.00 or -1.000) is a side it did not measure;
  /// any other negative, or a utilisation above 100 % of the host's CPUs, is no measurement.
  std::optional<double> cpu_figure(double v, std::string_view text, uint32_t line, size_t column, const char* name,
                                   bool utilisation) const {
    if (v == -1) return std::nullopt;
    if (v < 0 || (utilisation && v > 100))
      fail_at(origin_, line,
              fmt::format("netperf {}result row: column {} ({}) '{}' is not a {}", rr_ ? "TCP_RR " : "", column + 1,
                          name, text,
                          utilisation ? "utilisation (0..100 % of the host's CPUs, or -1: not measured)"
                                      : "service demand (>= 0, or -1: not measured)"));
    return v;
  }

  const frontends::NetperfOptions& o_;
  const std::string& origin_;
  uint32_t command_line_;
  bool rr_;  ///< -t TCP_RR: send_tcp_rr's table
  NetperfReading r_;
};

// --- perftest ----------------------------------------------------------------------------------

/// perftest 4.5's short options that take a value: the letters followed by ':' in its getopt
/// string (perftest_parameters.c parser(), as frontends/perftest_cli.cpp reads it).
constexpr std::string_view kPerftestValueLetters = "wypdimsntuSxcqIoMrQAlDfBTLEJjKkXW";

/// Removes -C / --report-cycles (alone or in a group such as -aC) from perftest words; true when
/// it was there. A long option is perftest's when its name is a unique prefix of
/// "report-cycles" ("--report-cy" at least; "--report-c" is ambiguous and left to the parser).
bool strip_report_cycles(std::vector<std::string>& words) {
  static constexpr std::string_view kLong = "report-cycles";
  bool found = false;
  std::vector<std::string> out;
  bool ended = false;
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    if (ended || w.size() < 2 || w[0] != '-') {
      out.push_back(w);
    } else if (w == "--") {
      ended = true;
      out.push_back(w);
    } else if (w[1] == '-') {
      const std::string_view name = std::string_view(w).substr(2);
      if (name.size() >= 9 && starts_with(kLong, name)) {
        found = true;
      } else {
        out.push_back(w);
      }
    } else {
      std::string kept = "-";
      bool value_next = false;
      for (size_t pos = 1; pos < w.size(); ++pos) {
        const char c = w[pos];
        if (kPerftestValueLetters.find(c) != std::string_view::npos) {
          kept += w.substr(pos);  // the letter and its attached value
          value_next = pos + 1 == w.size();
          break;
        }
        if (c == 'C') {
          found = true;
        } else {
          kept += c;
        }
      }
      if (kept.size() > 1) out.push_back(kept);
      if (value_next && i + 1 < words.size()) out.push_back(words[++i]);
    }
  }
  words = std::move(out);
  return found;
}

/// A column of a perftest results header.
enum class Column { TMin, TMax, TTypical, TAvg, TStdev, P99, P999, BwPeak, BwAverage, MsgRate };

struct HeaderColumn {
  Column column;
  std::string label;  ///< as printed, e.g. "t_min[usec]", "BW peak[MB/sec]"
  std::string unit;   ///< the text in brackets
};

bool is_latency_column(Column c) { return c <= Column::P999; }

/// Name and bracketed unit of a header word ("t_min[usec]" -> {"t_min", "usec"}).
std::pair<std::string_view, std::string_view> name_and_unit(std::string_view word) {
  const size_t open = word.find('[');
  if (open == std::string_view::npos || word.back() != ']') return {word, {}};
  return {word.substr(0, open), word.substr(open + 1, word.size() - open - 2)};
}

class PerftestOutputReader {
 public:
  /// `options`: the command's, whose sizes (-s, or -a's sweep) every row must have.
  PerftestOutputReader(const frontends::PerftestOptions& options, bool cycles_flag, const std::string& origin,
                       uint32_t command_line)
      : test_(options.test), cycles_flag_(cycles_flag), origin_(origin), command_line_(command_line),
        options_(options), sizes_(frontends::to_perftest_config(options).sizes) {}

  PerftestReading read(const std::vector<Line>& out) {
    size_t k = 0;
    while (k < out.size() && !is_header(out[k])) ++k;
    if (k == out.size())
      fail_at(origin_, command_line_,
              fmt::format("{} output ends before its results table (a '#bytes #iterations ...' "
                          "header and its rows)",
                          tool()));
    // -U and -H (latency tools) print a header, the samples ("#, usec" or "#, cycles", then
    // "N, VALUE" lines) and the header again before the row (perftest print_report_lat): the
    // table is the second header's.
    if (k + 1 < out.size() && starts_with(trim(out[k + 1].text), "#,")) {
      for (++k; k < out.size() && !is_header(out[k]);) ++k;
      if (k == out.size())
        fail_at(origin_, command_line_,
                fmt::format("{} output ends in its samples (-U / -H), before the results table", tool()));
    }
    header(out[k]);
    for (++k; k < out.size(); ++k) {
      const auto f = fields(out[k].text);
      if (f.empty() || !std::isdigit(static_cast<unsigned char>(f.front().front()))) break;
      row(f, out[k].number);
    }
    if (r_.latency.empty() && r_.bandwidth.empty())
      fail_at(origin_, r_.header_line,
              fmt::format("{} results table has no rows", tool()));
    for (; k < out.size(); ++k)
      if (is_header(out[k]))
        fail_at(origin_, out[k].number,
                fmt::format("a second results table under the {} command of line {}: repeat the "
                            "command line before each table",
                            tool(), command_line_));
    return r_;
  }

 private:
  std::string_view tool() const { return frontends::perftest_tool_name(test_); }

  static bool is_header(const Line& line) {
    const auto f = fields(line.text);
    return !f.empty() && f.front() == "#bytes";
  }

  [[noreturn]] void header_error(const std::string& what) const {
    fail_at(origin_, r_.header_line, "perftest table header: " + what);
  }

  void header(const Line& line) {
    r_.header_line = line.number;
    const auto f = fields(line.text);
    if (f.size() < 2 || f[1] != "#iterations") header_error("expected '#bytes #iterations' first");
    for (size_t i = 2; i < f.size(); ++i) {
      HeaderColumn h;
      std::string_view word = f[i];
      std::string label(word);
      if ((word == "BW" || word == "99%" || word == "99.9%") && i + 1 < f.size()) {
        label += " " + std::string(f[i + 1]);
        const auto [name, unit] = name_and_unit(f[i + 1]);
        h.unit = std::string(unit);
        if (word == "BW" && name == "peak") h.column = Column::BwPeak;
        else if (word == "BW" && name == "average") h.column = Column::BwAverage;
        else if (word == "99%" && name == "percentile") h.column = Column::P99;
        else if (word == "99.9%" && name == "percentile") h.column = Column::P999;
        else header_error(fmt::format("unrecognised column '{}'", label));
        ++i;
      } else {
        const auto [name, unit] = name_and_unit(word);
        h.unit = std::string(unit);
        if (name == "t_min") h.column = Column::TMin;
        else if (name == "t_max") h.column = Column::TMax;
        else if (name == "t_typical") h.column = Column::TTypical;
        else if (name == "t_avg") h.column = Column::TAvg;
        else if (name == "t_stdev") h.column = Column::TStdev;
        else if (name == "MsgRate") h.column = Column::MsgRate;
        else header_error(fmt::format("unrecognised column '{}'", label));
      }
      h.label = label;
      for (const HeaderColumn& seen : columns_)
        if (seen.column == h.column) header_error(fmt::format("column '{}' twice", label));
      columns_.push_back(h);
    }
    check_columns();
  }

  bool has(Column c) const {
    return std::any_of(columns_.begin(), columns_.end(),
                       [c](const HeaderColumn& h) { return h.column == c; });
  }

  void check_columns() {
    const bool bw = frontends::perftest_is_bw(test_);
    for (const HeaderColumn& h : columns_) {
      if (is_latency_column(h.column) == bw)
        header_error(fmt::format("column '{}' belongs to a {} table, not {}'s", h.label,
                                 bw ? "latency" : "bandwidth", tool()));
      if (is_latency_column(h.column)) {
        if (h.unit != "usec" && h.unit != "cycles")
          header_error(fmt::format("column '{}': unit '{}' is not usec or cycles", h.label, h.unit));
        if (h.unit != columns_.front().unit)
          header_error(fmt::format("column '{}': unit '{}' differs from '{}'", h.label, h.unit,
                                   columns_.front().unit));
      } else if (h.column == Column::MsgRate) {
        if (h.unit != "Mpps") header_error(fmt::format("column '{}': unit is not Mpps", h.label));
      } else {
        if (h.unit != "MB/sec" && h.unit != "MiB/sec" && h.unit != "Gb/sec")
          header_error(fmt::format("column '{}': unit '{}' is not MB/sec, MiB/sec or Gb/sec",
                                   h.label, h.unit));
        const BandwidthUnit unit = h.unit == "Gb/sec" ? BandwidthUnit::Gbps : BandwidthUnit::MiBps;
        if (h.column == Column::BwPeak) r_.bandwidth_unit = unit;
        else if (unit != r_.bandwidth_unit)
          header_error(fmt::format("column '{}': unit differs from the peak's", h.label));
      }
    }
    const std::vector<std::pair<Column, const char*>> required =
        bw ? std::vector<std::pair<Column, const char*>>{{Column::BwPeak, "BW peak"},
                                                         {Column::BwAverage, "BW average"},
                                                         {Column::MsgRate, "MsgRate"}}
           : std::vector<std::pair<Column, const char*>>{{Column::TMin, "t_min"},
                                                         {Column::TMax, "t_max"},
                                                         {Column::TTypical, "t_typical"}};
    for (const auto& [c, name] : required)
      if (!has(c)) header_error(fmt::format("no {} column", name));
    if (!bw) {
      r_.cycles = cycles_flag_ || columns_.front().unit == "cycles";
      r_.extended = has(Column::TAvg) || has(Column::TStdev) || has(Column::P99) ||
                    has(Column::P999);
    }
  }

  void row(const std::vector<std::string_view>& f, uint32_t line) {
    if (f.size() != columns_.size() + 2)
      fail_at(origin_, line,
              fmt::format("perftest row has {} fields, expected {} (the header of line {})",
                          f.size(), columns_.size() + 2, r_.header_line));
    const uint64_t bytes = whole(f[0], line, 1, "#bytes");
    const uint64_t iterations = whole(f[1], line, 2, "#iterations");
    // A row of a size the command does not run (or a size twice) would be compared with a
    // simulation of another size, or dropped, after the simulation: refused here, before it.
    if (std::find(sizes_.begin(), sizes_.end(), bytes) == sizes_.end())
      fail_at(origin_, line,
              options_.all ? fmt::format("perftest row: {} B is not a size of the command's -a (line {}: powers of "
                                         "two, 2..8388608)",
                                         bytes, command_line_)
                           : fmt::format("perftest row: {} B differs from the command's -s {} (line {})", bytes,
                                         options_.size, command_line_));
    if (const auto it = first_row_of_.find(bytes); it != first_row_of_.end())
      fail_at(origin_, line,
              fmt::format("perftest row: a second row for {} B (the first is line {}): repeat the command line "
                          "before each run",
                          bytes, it->second));
    first_row_of_.emplace(bytes, line);
    if (frontends::perftest_is_bw(test_)) {
      BandwidthRow b;
      b.bytes = bytes;
      b.iterations = iterations;
      b.line = line;
      for (size_t i = 0; i < columns_.size(); ++i) {
        const double v = number(f[i + 2], line, i + 3, columns_[i].label);
        switch (columns_[i].column) {
          case Column::BwPeak: b.bw_peak = v; break;
          case Column::BwAverage: b.bw_average = v; break;
          default: b.msg_rate_mpps = v; break;
        }
      }
      // perftest's MB is 2^20 B (print_report_bw's format_factor 0x100000); Gb is 10^9 bit.
      const double to_gbit =
          r_.bandwidth_unit == BandwidthUnit::Gbps ? 1.0 : 1048576.0 * 8 / 1e9;
      b.bw_peak_gbit_s = b.bw_peak * to_gbit;
      b.bw_average_gbit_s = b.bw_average * to_gbit;
      r_.bandwidth.push_back(b);
      return;
    }
    LatencyRow l;
    l.bytes = bytes;
    l.iterations = iterations;
    l.line = line;
    for (size_t i = 0; i < columns_.size(); ++i) {
      const double v = number(f[i + 2], line, i + 3, columns_[i].label);
      switch (columns_[i].column) {
        case Column::TMin: l.t_min = v; break;
        case Column::TMax: l.t_max = v; break;
        case Column::TTypical: l.t_typical = v; break;
        case Column::TAvg: l.t_avg = v; break;
        case Column::TStdev: l.t_stdev = v; break;
        case Column::P99: l.p99 = v; break;
        default: l.p999 = v; break;
      }
    }
    // The median lies between the least and the greatest sample (perftest sorts them first).
    if (!(l.t_min <= l.t_typical && l.t_typical <= l.t_max))
      fail_at(origin_, line,
              fmt::format("perftest row: t_typical {} is not between t_min {} and t_max {}: not a row perftest "
                          "prints",
                          l.t_typical, l.t_min, l.t_max));
    r_.latency.push_back(l);
  }

  uint64_t whole(std::string_view text, uint32_t line, size_t column, const char* name) const {
    const std::optional<uint64_t> v = parse_whole(text);
    if (!v)
      fail_at(origin_, line,
              fmt::format("perftest row: column {} ({}) '{}' is not a whole number", column, name,
                          text));
    return *v;
  }

  double number(std::string_view text, uint32_t line, size_t column,
                const std::string& name) const {
    const std::optional<double> v = util::parse_number(text);
    if (!v)
      fail_at(origin_, line,
              fmt::format("perftest row: column {} ({}) '{}' is not a number", column, name, text));
    // Times, rates and counts: perftest prints none below zero.
    if (*v < 0)
      fail_at(origin_, line,
              fmt::format("perftest row: column {} ({}) '{}' is negative: not a value perftest prints", column,
                          name, text));
    return *v;
  }

  frontends::PerftestTest test_;
  bool cycles_flag_;
  const std::string& origin_;
  uint32_t command_line_;
  frontends::PerftestOptions options_;
  std::vector<uint64_t> sizes_;              ///< the sizes the command runs
  std::map<uint64_t, uint32_t> first_row_of_;  ///< size -> line of its row
  std::vector<HeaderColumn> columns_;
  PerftestReading r_;
};

/// The perftest test of program name `tool` (ib_write_lat ... ib_atomic_bw). Throws InputError
/// "TOOL: not a perftest tool hcasim simulates (...)" for any other name: a run is never read
/// or simulated as another tool's.
frontends::PerftestTest perftest_test_of(std::string_view tool) {
  if (const std::optional<frontends::PerftestTest> test = frontends::perftest_test_named(tool)) return *test;
  throw InputError(fmt::format("{}: not a perftest tool hcasim simulates (a run file takes {})", tool,
                               known_tools_list()));
}

// --- the libibverbs example programs --------------------------------------------------------

/// Reads a pingpong program's two result lines (run_file.h).
class PingpongOutputReader {
 public:
  PingpongOutputReader(const frontends::PingpongOptions& options, const std::string& origin, uint32_t command_line)
      : options_(options), origin_(origin), command_line_(command_line) {}

  PingpongReading read(const std::vector<Line>& out) {
    // rc_pingpong.c: printf("%lld bytes in %.2f seconds = %.2f Mbit/sec\n", ...) and
    // printf("%d iters in %.2f seconds = %.2f usec/iter\n", ...).
    static const std::regex bytes_line(R"(^\s*([0-9]+) bytes in ([0-9.]+) seconds = ([0-9.]+) Mbit/sec\s*$)");
    static const std::regex iters_line(R"(^\s*([0-9]+) iters in ([0-9.]+) seconds = ([0-9.]+) usec/iter\s*$)");
    PingpongReading r;
    std::optional<uint32_t> bytes_at, iters_at;
    double iters_seconds = 0;
    for (const Line& line : out) {
      const std::string text(line.text);
      std::smatch m;
      if (std::regex_match(text, m, bytes_line)) {
        if (bytes_at) fail_at(origin_, line.number, fmt::format("{}: a second result under one command", tool()));
        bytes_at = line.number;
        r.bytes = whole(m[1].str(), line.number, "bytes");
        r.seconds = number(m[2].str(), line.number, "seconds");
        r.mbit_s = number(m[3].str(), line.number, "Mbit/sec");
      } else if (std::regex_match(text, m, iters_line)) {
        if (!bytes_at)
          fail_at(origin_, line.number,
                  fmt::format("{}: 'iters ... usec/iter' before its 'bytes ... Mbit/sec' line", tool()));
        if (iters_at) fail_at(origin_, line.number, fmt::format("{}: a second result under one command", tool()));
        iters_at = line.number;
        r.iters = whole(m[1].str(), line.number, "iters");
        iters_seconds = number(m[2].str(), line.number, "seconds");
        r.usec_per_iter = number(m[3].str(), line.number, "usec/iter");
        r.line = line.number;
      }
    }
    if (!iters_at)
      fail_at(origin_, command_line_,
              fmt::format("{} output ends before its result lines ('N bytes in S seconds = R Mbit/sec', "
                          "'N iters in S seconds = U usec/iter')",
                          tool()));
    if (r.iters != options_.iters)
      fail_at(origin_, *iters_at, fmt::format("{}: {} iters, the command runs -n {}", tool(), r.iters, options_.iters));
    const uint64_t expected = uint64_t{options_.size} * options_.iters * 2;
    if (r.bytes != expected)
      fail_at(origin_, *bytes_at,
              fmt::format("{}: {} bytes, the command's -s {} x -n {} x 2 = {}", tool(), r.bytes, options_.size,
                          options_.iters, expected));
    if (iters_seconds != r.seconds)
      fail_at(origin_, *iters_at,
              fmt::format("{}: {:.2f} seconds, the line before says {:.2f}", tool(), iters_seconds, r.seconds));
    return r;
  }

 private:
  std::string_view tool() const { return frontends::pingpong_tool_name(options_.program); }
  uint64_t whole(const std::string& text, uint32_t line, const char* what) const {
    const std::optional<uint64_t> v = parse_whole(text);
    if (!v) fail_at(origin_, line, fmt::format("{}: {} '{}' is not a whole number", tool(), what, text));
    return *v;
  }
  double number(const std::string& text, uint32_t line, const char* what) const {
    const std::optional<double> v = util::parse_number(text);
    if (!v || !std::isfinite(*v)) fail_at(origin_, line, fmt::format("{}: {} '{}' is not a number", tool(), what, text));
    return *v;
  }

  const frontends::PingpongOptions& options_;
  const std::string& origin_;
  uint32_t command_line_;
};

/// A command whose output is being collected.
struct Pending {
  RealRun run;
  frontends::NetperfOptions netperf;
  frontends::PerftestOptions perftest;
  frontends::PingpongOptions pingpong;
  bool cycles_flag = false;  ///< perftest -C / --report-cycles
  std::vector<Line> output;
};

}  // namespace

std::vector<RealRun> parse_run_file(std::string_view text, const std::string& origin) {
  std::vector<RealRun> runs;
  std::vector<std::string> set;
  std::vector<uint32_t> set_lines;
  std::optional<std::string> platform;
  uint32_t platform_line = 0;
  std::optional<Pending> current;

  auto finish = [&] {
    if (!current) return;
    RealRun& run = current->run;
    if (run.tool == "netperf")
      run.output = NetperfOutputReader(current->netperf, origin, run.line).read(current->output);
    else if (frontends::pingpong_program_named(run.tool))
      run.output = PingpongOutputReader(current->pingpong, origin, run.line).read(current->output);
    else
      run.output = PerftestOutputReader(current->perftest, current->cycles_flag, origin, run.line)
                       .read(current->output);
    runs.push_back(std::move(run));
    current.reset();
  };

  for (const Line& line : split_lines(text)) {
    Classified c = classify(line, origin);
    switch (c.kind) {
      case LineKind::Text:
        if (current) current->output.push_back(line);
        break;
      case LineKind::OtherCommand: finish(); break;
      case LineKind::Setting:
        finish();
        for (const std::string& s : c.sets) apply_setting(set, set_lines, s, line.number);
        if (c.platform) platform = c.platform, platform_line = line.number;
        break;
      case LineKind::Tool: {
        finish();
        Pending p;
        p.run.origin = origin;
        p.run.line = line.number;
        p.run.command = std::move(c.command);
        p.run.tool = std::move(c.tool);
        p.run.set = set;
        p.run.set_lines = set_lines;
        p.run.platform = platform;
        p.run.platform_line = platform_line;
        try {
          if (p.run.tool == "netperf") {
            p.run.words = unmangle_netperf_words(c.words);
            p.netperf = frontends::parse_netperf_args(p.run.words);
            // netperf 2.7's selectors print other tables (or CSV, or key=value lines).
            if (p.netperf.output_mode != frontends::NetperfOptions::OutputMode::Classic)
              throw InputError("-o, -O, -k: netperf 2.7's output selectors; a run file reads netperf 2.4's "
                               "TCP_STREAM, TCP_MAERTS and TCP_RR tables (repeat the run without them)");
            // What the simulation of this command would refuse (-m with TCP_RR, TCP_RR over
            // --transport ipoib, ...), refused here at the command's line.
            (void)frontends::to_tcp_stream_config(p.netperf);
          } else if (const auto program = frontends::pingpong_program_named(p.run.tool)) {
            p.run.words = std::move(c.words);
            p.pingpong = frontends::parse_pingpong_args(*program, p.run.words);
          } else {
            p.run.words = std::move(c.words);
            const frontends::PerftestTest test = perftest_test_of(p.run.tool);
            // perftest takes -C for the latency tests only: a bw tool's -C stays for the parser to
            // refuse as `hcasim ib_write_bw -C` does.
            if (!frontends::perftest_is_bw(test)) p.cycles_flag = strip_report_cycles(p.run.words);
            p.perftest = frontends::parse_perftest_args(test, p.run.words);
            // A duration run's rows are counted over a window (and the latency tools' have
            // other columns); hcasim reports them as text only, with no CSV to compare.
            if (p.perftest.duration)
              throw InputError("-D: a duration run is not compared from a run file (hcasim reports it as text "
                               "only); paste a run of -n iterations");
          }
        } catch (const InputError& e) {
          fail_at(origin, line.number, fmt::format("{}: {}", p.run.tool, e.what()));
        }
        if (p.netperf.help || p.perftest.help || p.perftest.version || p.pingpong.help)
          fail_at(origin, line.number, fmt::format("{}: -h / -V print the usage or version; no run to read", p.run.tool));
        current = std::move(p);
        break;
      }
    }
  }
  finish();
  return runs;
}

std::vector<RealRun> load_run_file(const std::string& path) {
  return parse_run_file(util::read_text(path, path), path);
}

}  // namespace hcasim::scenarios
