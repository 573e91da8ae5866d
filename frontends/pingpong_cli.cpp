// Command line of the libibverbs examples `hcasim ibv_*_pingpong` (pingpong_cli.h).
//
// The programs read their flags with glibc getopt_long (rdma-core v44 libibverbs/examples/
// rc_pingpong.c, uc_pingpong.c, ud_pingpong.c, srq_pingpong.c main()). The scanner below is the small getopt_long
// of frontends/perftest_cli.cpp cut to these programs' tables: unique-prefix abbreviation of long
// options, the word after an option taking a value is that value, the one positional argument
// (the servername) may stand anywhere, and hcasim's long options share the table.
#include "frontends/pingpong_cli.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "model/fault.h"
#include "util/cli_values.h"
#include "util/command_words.h"
#include "util/output_file.h"

namespace hcasim::frontends {

namespace {

[[noreturn]] void fail(const std::string& what) { throw InputError(what); }

/// The program's getopt option string (main() of each example); a letter followed by ':' takes
/// a value.
std::string_view opt_string(PingpongProgram p) {
  switch (p) {
    case PingpongProgram::Rc: return "p:d:i:s:m:r:n:l:eg:oOPtcjN";
    case PingpongProgram::Uc: return "p:d:i:s:m:r:n:l:eg:c";
    case PingpongProgram::Ud: return "p:d:i:s:r:n:l:eg:c";
    case PingpongProgram::Srq: return "p:d:i:s:m:q:r:n:l:eog:c";
  }
  return "";
}

enum class LongKind { Short, Platform, RemotePlatform, Set, Seed, Json, Csv, Stats, Help };
struct LongOption {
  std::string_view name;
  bool has_arg;
  LongKind kind;
  char letter = 0;  ///< for LongKind::Short
};

/// The program's long_options (main()), those whose letter is in its option string, then
/// hcasim's own.
std::vector<LongOption> long_options(PingpongProgram p) {
  const std::string_view opts = opt_string(p);
  static const std::pair<std::string_view, char> kShorts[] = {
      {"port", 'p'}, {"ib-dev", 'd'}, {"ib-port", 'i'}, {"size", 's'},   {"mtu", 'm'},
      {"num-qp", 'q'}, {"rx-depth", 'r'}, {"iters", 'n'}, {"sl", 'l'},   {"events", 'e'},
      {"gid-idx", 'g'}, {"odp", 'o'},     {"iodp", 'O'},  {"prefetch", 'P'}, {"ts", 't'},
      {"chk", 'c'},  {"dm", 'j'},        {"new_send", 'N'}};
  std::vector<LongOption> t;
  for (const auto& [name, letter] : kShorts) {
    const size_t at = opts.find(letter);
    if (at == std::string_view::npos) continue;
    t.push_back({name, at + 1 < opts.size() && opts[at + 1] == ':', LongKind::Short, letter});
  }
  t.push_back({"platform", true, LongKind::Platform});
  t.push_back({"remote-platform", true, LongKind::RemotePlatform});
  t.push_back({"set", true, LongKind::Set});
  t.push_back({"seed", true, LongKind::Seed});
  t.push_back({"json", false, LongKind::Json});
  t.push_back({"csv", true, LongKind::Csv});
  t.push_back({"stats", false, LongKind::Stats});
  t.push_back({"help", false, LongKind::Help});
  return t;
}

class Parser {
 public:
  Parser(PingpongProgram program, PingpongOptions& o)
      : program_(program), o_(o), opts_(opt_string(program)), table_(long_options(program)) {}

  void run(const std::vector<std::string>& args) {
    size_t i = 0;
    if (!args.empty() && util::base_name(args[0]) == pingpong_tool_name(program_)) i = 1;  // a pasted command
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
  std::string_view tool() const { return pingpong_tool_name(program_); }

  void note(const std::string& text) {
    const std::string line = "hcasim: note: " + text;
    if (std::find(o_.notes.begin(), o_.notes.end(), line) == o_.notes.end()) o_.notes.push_back(line);
  }

  void positional(const std::string& w) {
    if (o_.server)
      fail(fmt::format("unexpected argument '{}' ({} takes one servername, '{}' is already given)", w, tool(),
                       *o_.server));
    o_.server = w;
  }

  const LongOption& find_long(const std::string& name) {
    for (const auto& o : table_)
      if (o.name == name) return o;
    std::vector<const LongOption*> matches;
    for (const auto& o : table_)
      if (o.name.substr(0, name.size()) == name) matches.push_back(&o);
    if (matches.empty()) fail(fmt::format("unknown option --{} ({} -h lists them)", name, tool()));
    if (matches.size() > 1) {
      std::vector<std::string> names;
      for (const auto* m : matches) names.push_back("--" + std::string(m->name));
      std::sort(names.begin(), names.end());
      fail(fmt::format("--{}: ambiguous option ({})", name, fmt::join(names, ", ")));
    }
    return *matches.front();
  }

  size_t long_option(const std::vector<std::string>& args, size_t i) {
    const std::string& w = args[i];
    const size_t eq = w.find('=');
    const std::string name = w.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    if (name.empty()) fail("unknown option " + w);
    const LongOption& opt = find_long(name);
    const std::string flag = "--" + std::string(opt.name);
    std::string value;
    if (opt.has_arg) {
      if (eq != std::string::npos) {
        value = w.substr(eq + 1);
      } else if (opt.kind == LongKind::Short) {
        if (i + 1 >= args.size()) fail(flag + ": missing value");
        value = args[++i];  // the program's own: getopt_long takes the next word, whatever it is
      } else {
        value = util::next_word_value(flag, i + 1 < args.size() ? &args[i + 1] : nullptr);  // hcasim's own
        ++i;
      }
    } else if (eq != std::string::npos) {
      fail(flag + ": takes no value");
    }
    if (opt.kind == LongKind::Platform || opt.kind == LongKind::RemotePlatform || opt.kind == LongKind::Seed) {
      const auto [it, first] = single_.emplace(flag, value);
      if (!first) util::check_single_value(flag, {it->second, value});
    }
    switch (opt.kind) {
      case LongKind::Short: apply(opt.letter, value, flag); break;
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
      case LongKind::Seed: o_.seed = number(flag, value, 0, UINT64_MAX); break;
      case LongKind::Json: o_.json = true; break;
      case LongKind::Csv:
        if (o_.csv_path) util::check_given_once("--csv", {*o_.csv_path, value});
        o_.csv_path = non_empty(flag, value);
        break;
      case LongKind::Stats: o_.stats = true; break;
      case LongKind::Help: o_.help = true; break;
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
      if (c == 'h') {  // not in the programs' tables (they print their usage for it): hcasim's help
        o_.help = true;
        continue;
      }
      const size_t at = c == ':' ? std::string_view::npos : opts_.find(c);
      if (at == std::string_view::npos) fail(fmt::format("unknown option {} ({} -h lists them)", flag, tool()));
      if (at + 1 < opts_.size() && opts_[at + 1] == ':') {
        std::string value = w.substr(pos + 1);
        if (value.empty()) {
          if (i + 1 >= args.size()) fail(flag + ": missing value");
          value = args[++i];
        }
        apply(c, value, flag);
        return i + 1;
      }
      apply(c, "", flag);
    }
    return i + 1;
  }

  /// strtoul(text, NULL, 0) as the programs read their numbers, but only text that is wholly a
  /// number in [min, max]; a sign is refused for an unsigned value.
  static uint64_t number(const std::string& flag, const std::string& text, uint64_t min, uint64_t max) {
    const size_t d = text.find_first_not_of(" \t");
    if (text.empty() || d == std::string::npos || text[d] == '-' || text[d] == '+')
      fail(fmt::format("{}: '{}' is not a number", flag, text));
    errno = 0;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(text.c_str(), &end, 0);
    if (*end != '\0' || end == text.c_str()) fail(fmt::format("{}: '{}' is not a number", flag, text));
    if (errno == ERANGE || v < min || v > max)
      fail(fmt::format("{}: {} is out of range ({}..{})", flag, text, min, max));
    return v;
  }

  /// strtol(text, NULL, 0) for the signed values (-i, -l, -g): text wholly a number.
  static long signed_number(const std::string& flag, const std::string& text) {
    errno = 0;
    char* end = nullptr;
    const long v = std::strtol(text.c_str(), &end, 0);
    if (text.empty() || *end != '\0' || end == text.c_str() || errno == ERANGE)
      fail(fmt::format("{}: '{}' is not a number", flag, text));
    return v;
  }

  std::string named(char c, const std::string& flag) const {
    if (flag.size() != 2) return flag;
    for (const auto& o : table_)
      if (o.kind == LongKind::Short && o.letter == c) return fmt::format("{} (--{})", flag, o.name);
    return flag;
  }

  void apply(char c, const std::string& value, const std::string& flag) {
    switch (c) {
      case 'p':
        // main(): port = strtoul(optarg, NULL, 0); above 65535 the program prints its usage.
        o_.tcp_port = static_cast<uint32_t>(number(flag, value, 0, 65535));
        note(fmt::format("{} ignored: the address exchange over TCP is not simulated", flag));
        break;
      case 'd': o_.device = non_empty(flag, value); break;
      case 'i': {
        // main(): ib_port = strtol(...); below 1 the program prints its usage.
        const long port = signed_number(flag, value);
        if (port < 1) fail(fmt::format("{}: {} is not a port number (at least 1)", flag, value));
        if (port != 1) fail(fmt::format("{}: {}: the simulated HCA has one port, port 1", flag, value));
        o_.ib_port = 1;
        break;
      }
      case 's':
        // main(): size = strtoul(...) into an unsigned int; 0 B would register an empty buffer.
        o_.size = static_cast<uint32_t>(number(flag, value, 1, UINT_MAX));
        break;
      case 'm': {
        // main(): mtu = pp_mtu_to_enum(strtol(...)); not an IB MTU: the program prints its usage.
        const long mtu = signed_number(flag, value);
        if (mtu != 256 && mtu != 512 && mtu != 1024 && mtu != 2048 && mtu != 4096)
          fail(fmt::format("{}: {} is not an IB MTU (256, 512, 1024, 2048 or 4096)", flag, value));
        o_.mtu = static_cast<uint32_t>(mtu);
        break;
      }
      // srq_pingpong.c takes -r 0 and refuses it against -q after the options (parse_pingpong_args).
      case 'r':
        o_.rx_depth = static_cast<uint32_t>(number(flag, value, program_ == PingpongProgram::Srq ? 0 : 1, INT_MAX));
        break;
      // srq_pingpong.c: num_qp = strtoul(optarg, NULL, 0) into an unsigned int, checked after the options.
      case 'q': o_.num_qp = static_cast<uint32_t>(number(flag, value, 0, UINT_MAX)); break;
      // parse_single_wc and the loop count iterations in an int, and print them with %d.
      case 'n': o_.iters = static_cast<uint32_t>(number(flag, value, 1, INT_MAX)); break;
      case 'l': {
        const long sl = signed_number(flag, value);
        if (sl < 0 || sl > 15) fail(fmt::format("{}: {} is not a service level (0..15)", flag, value));
        o_.sl = static_cast<int>(sl);
        break;
      }
      case 'e': o_.events = true; break;
      case 'c': o_.validate = true; break;
      case 'g': {
        const long g = signed_number(flag, value);
        if (g > 0) fail(fmt::format("{}: {}: the simulated port has one GID, index 0", flag, value));
        o_.gid_index = g < 0 ? -1 : 0;
        if (g == 0)
          note(fmt::format("{} 0: the port's GID is printed; the simulated packets carry no GRH (the program's "
                           "address handle would add one)",
                           flag));
        break;
      }
      case 'N':
        o_.new_send = true;
        note(fmt::format("{}: ibv_wr_send builds the same WQE as ibv_post_send; simulated as ibv_post_send", flag));
        break;
      case 'o':
      case 'O':
      case 'P': fail(fmt::format("{}: on-demand paging is not simulated by hcasim {}", named(c, flag), tool()));
      case 't': fail(fmt::format("{}: CQE timestamps are not simulated by hcasim {}", named(c, flag), tool()));
      case 'j': fail(fmt::format("{}: device memory is not simulated by hcasim {}", named(c, flag), tool()));
      default: fail(fmt::format("unknown option {}", flag));
    }
  }

  PingpongProgram program_;
  PingpongOptions& o_;
  std::string_view opts_;
  std::vector<LongOption> table_;
  std::map<std::string, std::string> single_;  // hcasim's single-valued options seen: the first value
};

}  // namespace

std::string_view pingpong_tool_name(PingpongProgram program) {
  switch (program) {
    case PingpongProgram::Rc: return "ibv_rc_pingpong";
    case PingpongProgram::Uc: return "ibv_uc_pingpong";
    case PingpongProgram::Ud: return "ibv_ud_pingpong";
    case PingpongProgram::Srq: return "ibv_srq_pingpong";
  }
  return "ibv_rc_pingpong";
}

std::optional<PingpongProgram> pingpong_program_named(std::string_view tool) {
  for (PingpongProgram p : {PingpongProgram::Rc, PingpongProgram::Uc, PingpongProgram::Ud, PingpongProgram::Srq}) {
    const std::string_view name = pingpong_tool_name(p);
    if (tool == name || tool == name.substr(4)) return p;
  }
  return std::nullopt;
}

PingpongOptions parse_pingpong_args(PingpongProgram program, const std::vector<std::string>& args) {
  PingpongOptions o;
  o.program = program;
  o.size = program == PingpongProgram::Ud ? kPingpongDefSizeUd : kPingpongDefSize;
  Parser(program, o).run(args);
  if (program == PingpongProgram::Srq && !o.help) {
    // srq_pingpong.c main() after its options, in its order and words (%d of unsigned ints).
    if (o.num_qp > o.rx_depth)
      fail(fmt::format("rx_depth {} is too small for {} QPs -- must have at least one receive per QP.",
                       static_cast<int>(o.rx_depth), static_cast<int>(o.num_qp)));
    if (o.num_qp >= kPingpongSrqMaxQp)
      fail(fmt::format("num_qp {} must be less than {}", static_cast<int>(o.num_qp), kPingpongSrqMaxQp - 1));
    if (o.num_qp == 0)
      fail("-q 0: no QP would send or receive; ibv_srq_pingpong would poll its CQ for ever");
  }
  return o;
}

PingpongConfig to_pingpong_config(const PingpongOptions& o) {
  PingpongConfig c;
  c.program = o.program;
  c.size = o.size;
  c.iters = o.iters;
  c.rx_depth = o.rx_depth;
  c.num_qp = o.program == PingpongProgram::Srq ? o.num_qp : 1;
  c.path_mtu = o.program == PingpongProgram::Ud ? 0 : o.mtu;
  c.events = o.events;
  c.validate = o.validate;
  c.seed = o.seed;
  // rc_pingpong.c pp_connect_ctx: timeout 14, retry_cnt 7, rnr_retry 7 (model::RcRetry's
  // defaults); --set qp.* changes them.
  for (const auto& s : o.sets) model::apply_fault_setting(s, c.faults, c.retry);
  return c;
}

std::string pingpong_option(const std::string& field) {
  if (field == "size") return "-s";
  if (field == "iters") return "-n";
  if (field == "rx_depth") return "-r";
  if (field == "path_mtu") return "-m";
  if (field == "num_qp") return "-q";
  return field;
}

std::string pingpong_usage(PingpongProgram program) {
  const std::string tool(pingpong_tool_name(program));
  // The program's usage() text (rdma-core v44), then hcasim's options.
  std::string out = fmt::format(
      "Usage:\n"
      "  hcasim {0}            simulate both sides, print the server's lines\n"
      "  hcasim {0} <host>     simulate both sides, print the client's lines\n"
      "\n"
      "Options:\n"
      "  -p, --port=<port>      listen on/connect to port <port> (default 18515; not simulated)\n"
      "  -d, --ib-dev=<dev>     use IB device <dev> (default first device found: the platform's hca.device)\n"
      "  -i, --ib-port=<port>   use port <port> of IB device (default 1; the simulated HCA has one)\n",
      tool);
  if (program == PingpongProgram::Ud) {
    out += "  -s, --size=<size>      size of message to exchange (default 1024; at most the port MTU)\n";
  } else {
    out += "  -s, --size=<size>      size of message to exchange (default 4096)\n";
    out += "  -m, --mtu=<size>       path MTU (default 1024)\n";
  }
  if (program == PingpongProgram::Srq)
    out += "  -q, --num-qp=<num>     number of QPs to use (default 16)\n";
  out += "  -r, --rx-depth=<dep>   number of receives to post at a time (default 500)\n";
  out += program == PingpongProgram::Srq
             ? "  -n, --iters=<iters>    number of exchanges, over all QPs (default 1000)\n"
             : "  -n, --iters=<iters>    number of exchanges (default 1000)\n";
  out +=
      "  -l, --sl=<sl>          service level value (one link: no effect)\n"
      "  -e, --events           sleep on CQ events (default poll)\n"
      "  -g, --gid-idx=<gid index> local port gid index (0 prints the port's GID)\n"
      "  -c, --chk              validate received buffer\n";
  if (program == PingpongProgram::Rc)
    out +=
        "  -N, --new_send         use new post send WR API (simulated as ibv_post_send)\n"
        "  (-o -O -P on-demand paging, -t timestamps and -j device memory are not simulated)\n";
  if (program == PingpongProgram::Srq) out += "  (-o on-demand paging is not simulated)\n";
  out += fmt::format(
      "\n"
      "hcasim options:\n"
      "  --platform NAME|FILE         the client's host (default {})\n"
      "  --remote-platform NAME|FILE  the server's host (default: same as --platform)\n"
      "  --set section.key=value      change a platform parameter on both hosts (repeatable;\n"
      "                               fault.* and qp.* as for the perftest tools)\n"
      "  --seed N                     seed of the PSNs printed (default 1)\n"
      "  --json                       the figures of both sides as one JSON document\n"
      "  --csv PATH                   the shown side's figures as CSV\n"
      "  --stats                      simulator statistics on stderr\n"
      "See docs/cli.md \"ibv_rc_pingpong\".\n",
      kDefaultPlatform);
  return out;
}

}  // namespace hcasim::frontends
