// `hcasim sweep` (sweep.h): the command line, the points as child processes, the table, the CSV
// and the plot (sweep_plot.h).
#include "scenarios/sweep.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "frontends/json_output.h"
#include "frontends/netperf_cli.h"
#include "frontends/perftest_cli.h"
#include "model/units.h"
#include "scenarios/children.h"
#include "scenarios/datadir.h"
#include "scenarios/fanout.h"
#include "scenarios/report.h"
#include "scenarios/sweep_plot.h"
#include "sim/testbed.h"
#include "util/cli_values.h"
#include "util/csv.h"
#include "util/number.h"
#include "util/output_file.h"

namespace hcasim::scenarios {

namespace fs = std::filesystem;

namespace {

/// The most points (sizes x variants) one sweep runs: a mistyped range must not start a
/// million processes.
constexpr size_t kMaxPoints = 4096;

/// The perftest tools a sweep runs: every one with a message size (the atomic tests move 8 B only).
bool is_perftest(const std::string& tool) {
  const auto t = frontends::perftest_test_named(tool);
  return t && !frontends::perftest_is_atomic(*t);
}

frontends::PerftestTest perftest_test(const std::string& tool) {
  return frontends::perftest_test_named(tool).value_or(frontends::PerftestTest::SendBw);
}

/// Splits `text` at commas (empty items kept).
std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    items.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return items;
    start = comma + 1;
  }
}

/// One variant: its assignments (key, value) in --vary order.
using Variant = std::vector<std::pair<std::string, std::string>>;

std::string variant_label(const Variant& v) {
  std::string label;
  for (const auto& [key, value] : v) label += fmt::format("{}{}={}", label.empty() ? "" : " ", key, value);
  return label;
}

/// The cartesian product of `vary`, the first varying slowest; one empty variant without any.
std::vector<Variant> variants_of(const std::vector<Vary>& vary) {
  std::vector<Variant> out = {{}};
  for (const Vary& v : vary) {
    std::vector<Variant> next;
    for (const Variant& base : out)
      for (const std::string& value : v.values) {
        Variant w = base;
        w.emplace_back(v.key, value);
        next.push_back(std::move(w));
      }
    out = std::move(next);
  }
  return out;
}

/// The variant's options for the child, in front of the tool's words.
std::vector<std::string> variant_flags(const Variant& v) {
  std::vector<std::string> flags;
  for (const auto& [key, value] : v) {
    if (key == "platform")
      flags.insert(flags.end(), {"--platform", value});
    else
      flags.insert(flags.end(), {"--set", key + "=" + value});
  }
  return flags;
}

/// The tool's words with `bytes` in the size option's place.
std::vector<std::string> words_for_size(const SweepOptions& o, uint64_t bytes) {
  std::vector<std::string> words = o.words;
  if (!o.perftest_all) words[o.size_word] = o.size_prefix + std::to_string(bytes);
  return words;
}

/// The value of a sweep option at words[i] ("--csv F", "--csv=F", "-jN"), advancing i past it;
/// nullopt when words[i] is not `name` (or `short_name`).
std::optional<std::string> take_option(const std::vector<std::string>& words, size_t& i, const std::string& name,
                                       const std::string& short_name = "") {
  const std::string& w = words[i];
  for (const std::string& n : {name, short_name}) {
    if (n.empty()) continue;
    if (w == n) {
      const std::string& value = util::next_word_value(n, i + 1 < words.size() ? &words[i + 1] : nullptr);
      i += 2;
      return value;
    }
    const std::string attached = n.size() == 2 ? n : n + "=";  // -j4, --csv=F
    if (w.size() > attached.size() && w.compare(0, attached.size(), attached) == 0) {
      ++i;
      return w.substr(attached.size());
    }
  }
  return std::nullopt;
}

/// Where the size value is among `words`: netperf's -m after "--", perftest's -s / --size.
/// Returns false when there is none.
bool find_size_word(SweepOptions& o) {
  const bool netperf = o.tool == "netperf";
  const auto dashes = std::find(o.words.begin(), o.words.end(), "--");
  size_t i = netperf ? static_cast<size_t>(dashes - o.words.begin()) + 1 : 0;
  if (netperf && dashes == o.words.end()) return false;
  bool found = false;
  for (; i < o.words.size(); ++i) {
    const std::string& w = o.words[i];
    if (!netperf && w == "--") break;
    const std::vector<std::string> names = netperf ? std::vector<std::string>{"-m"} : std::vector<std::string>{"-s", "--size"};
    for (const std::string& n : names) {
      const std::string attached = n.size() == 2 ? n : n + "=";
      if (w == n && i + 1 < o.words.size()) {
        o.size_word = i + 1, o.size_prefix = "", o.size_text = o.words[i + 1];
        found = true;
      } else if (w.size() > attached.size() && w.compare(0, attached.size(), attached) == 0) {
        o.size_word = i, o.size_prefix = attached, o.size_text = w.substr(attached.size());
        found = true;
      }
    }
  }
  return found;  // the last one given, as the tools read it
}

}  // namespace

std::vector<uint64_t> parse_size_list(const std::string& text, const std::string& flag) {
  const std::string what = fmt::format("{} {}", flag, text);
  std::vector<uint64_t> sizes;
  if (const size_t dots = text.find(".."); dots != std::string::npos) {
    const std::string first = text.substr(0, dots), last = text.substr(dots + 2);
    if (first.empty() || last.empty())
      throw InputError(fmt::format("{}: a range needs a start and an end (e.g. 64..4M)", what));
    const uint64_t a = model::parse_size(first, flag), b = model::parse_size(last, flag);
    if (a == 0) throw InputError(fmt::format("{}: a doubling range cannot start at 0", what));
    if (a > b) throw InputError(fmt::format("{}: the range's start {} is above its end {}", what, first, last));
    for (uint64_t s = a; s <= b; s *= 2) {
      sizes.push_back(s);
      if (s > b / 2) break;
    }
    if (sizes.back() != b) sizes.push_back(b);  // the end asked for, off the doubling grid
    return sizes;
  }
  for (const std::string& item : split_commas(text)) {
    if (item.empty()) throw InputError(fmt::format("{}: an empty item in the list", what));
    sizes.push_back(model::parse_size(item, flag));
  }
  if (sizes.size() > kMaxPoints) throw InputError(fmt::format("{}: more than {} sizes", what, kMaxPoints));
  return sizes;
}

Vary parse_vary(const std::string& item) {
  const size_t eq = item.find('=');
  if (eq == std::string::npos || eq == 0)
    throw InputError(fmt::format("--vary {}: give KEY=V1,V2,... (a --set key, or platform)", item));
  Vary v{item.substr(0, eq), split_commas(item.substr(eq + 1))};
  for (const auto& value : v.values)
    if (value.empty()) throw InputError(fmt::format("--vary {}: an empty value", item));
  return v;
}

SweepOptions parse_sweep_args(const std::vector<std::string>& args) {
  if (args.empty())
    throw InputError("sweep: name the tool (netperf, ib_write_lat, ib_write_bw, ib_send_lat, ib_send_bw, ib_read_lat "
                     "or ib_read_bw)");
  SweepOptions o;
  o.tool = args[0];
  if (o.tool != "netperf" && !is_perftest(o.tool))
    throw InputError(fmt::format("sweep: unknown tool '{}' (use netperf, ib_write_lat, ib_write_bw, ib_send_lat, "
                                 "ib_send_bw, ib_read_lat or ib_read_bw; the atomic tests have one size)", o.tool));
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  std::vector<std::string> jobs, csv, plot, reference, list_dirs, collect_dirs;
  for (size_t i = 0; i < rest.size();) {
    if (auto v = take_option(rest, i, "--vary")) o.vary.push_back(parse_vary(*v));
    else if (auto j = take_option(rest, i, "--jobs", "-j")) jobs.push_back(*j);
    else if (auto c = take_option(rest, i, "--csv")) csv.push_back(*c);
    else if (auto p = take_option(rest, i, "--plot")) plot.push_back(*p);
    else if (auto r = take_option(rest, i, "--reference")) reference.push_back(*r);
    else if (auto l = take_option(rest, i, "--list-commands")) list_dirs.push_back(*l);
    else if (auto d = take_option(rest, i, "--collect")) collect_dirs.push_back(*d);
    else if (rest[i] == "--json") o.json = true, ++i;
    else if (rest[i] == "--explain" || rest[i].rfind("--explain=", 0) == 0)
      throw InputError("--explain: sweep prints a table of points; run one point with --explain to see what bounds it");
    else if (rest[i] == "--profile" || rest[i] == "--stats")
      throw InputError(fmt::format("{}: sweep prints one table of points; run one point with hcasim {} {} for its {}",
                                   rest[i], o.tool, rest[i], rest[i] == "--profile" ? "CPU profile" : "counters"));
    else if (rest[i] == "--trace" || rest[i].rfind("--trace=", 0) == 0 || rest[i] == "--trace-window" ||
             rest[i].rfind("--trace-window=", 0) == 0)
      throw InputError(fmt::format("{}: sweep runs many points into one table; trace one point with hcasim {} --trace",
                                   rest[i].substr(0, rest[i].find('=')), o.tool));
    else o.words.push_back(rest[i++]);
  }
  util::check_single_value("-j", jobs);
  if (!jobs.empty()) o.jobs = parse_jobs(jobs.front());
  util::check_given_once("--csv", csv);
  util::check_given_once("--plot", plot);
  util::check_single_value("--reference", reference);
  auto path_of = [](const std::vector<std::string>& given, std::optional<std::string>& slot, const char* name) {
    if (given.empty()) return;
    if (given.front().empty()) throw InputError(fmt::format("{}: empty path", name));
    slot = given.front();
  };
  path_of(csv, o.csv_path, "--csv");
  path_of(plot, o.plot, "--plot");
  path_of(reference, o.reference, "--reference");
  set_fanout(o.fanout, list_dirs, collect_dirs);
  if (o.json && o.fanout.mode == Fanout::Mode::List)
    throw InputError("--json: --list-commands prints the points' commands, not figures; give --json with --collect");
  if (o.json)
    if (const std::string conflict = frontends::json_csv_conflict(o.csv_path); !conflict.empty())
      throw InputError(conflict);
  o.args = args;
  for (size_t a = 0; a < o.vary.size(); ++a)
    for (size_t b = 0; b < a; ++b)
      if (o.vary[a].key == o.vary[b].key) throw InputError(fmt::format("--vary {}: given twice", o.vary[a].key));

  const bool netperf = o.tool == "netperf";
  bool all = false;
  if (!netperf) {
    // -a as perftest reads it (grouped short flags too): parse the words as they are.
    all = frontends::parse_perftest_args(perftest_test(o.tool), o.words).all;
  }
  const bool have_size = find_size_word(o);
  const std::string flag = netperf ? "-m" : "-s";
  if (all) {
    if (have_size) throw InputError("-a and -s: perftest's -a runs its own sizes; give one of them");
    o.perftest_all = true;
  } else if (!have_size) {
    throw InputError(netperf ? "-m: give the sizes as -- -m LIST or A..B (e.g. -- -m 64..4M)"
                             : "-s: give the sizes as -s LIST or A..B (e.g. -s 2..8M), or -a");
  } else {
    o.sizes = parse_size_list(o.size_text, flag);
  }
  return o;
}

namespace {

/// One point: a variant and a size (0 for perftest -a: every size its child runs).
struct Point {
  size_t variant = 0;
  uint64_t size = 0;
};

/// A child's CSV: its header line, and its data rows as text and as cells.
struct ToolCsv {
  std::string header;
  std::vector<std::string> lines;
  std::vector<std::vector<std::string>> rows;
};

ToolCsv read_tool_csv(const std::string& text, const std::string& origin) {
  ToolCsv csv;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    if (csv.header.empty()) csv.header = line;
    else csv.lines.push_back(line);
  }
  const auto cells = util::parse_csv(text, origin);
  if (cells.size() < 2 || cells.size() != csv.lines.size() + 1)
    throw InputError(fmt::format("{}: no data row", origin));
  csv.rows.assign(cells.begin() + 1, cells.end());
  return csv;
}

/// The columns the table and the plot show, per tool.
struct ToolView {
  std::string size_column;                ///< send_size_bytes or bytes
  std::vector<std::string> table_columns;  ///< CSV columns printed after size and variant
  std::vector<std::string> table_titles;   ///< their headings
  std::vector<std::string> table_units;
  std::vector<int> decimals;
  SweepPlotSpec plot;
};

ToolView view_of(const SweepOptions& o) {
  ToolView v;
  if (o.tool == "netperf") {
    const auto opts = frontends::parse_netperf_args(words_for_size(o, o.sizes.front()), true);
    frontends::require_stream_test(opts, "hcasim sweep");
    v.size_column = "send_size_bytes";
    v.table_columns = {"throughput_mbps"}, v.table_titles = {"throughput"}, v.table_units = {"10^6bits/s"};
    v.decimals = {2};
    v.plot.panels = {"throughput (10^6 bit/s)"};
    v.plot.metrics = {{"throughput_mbps", "", 0, false}};
    if (opts.local_cpu || opts.remote_cpu) v.plot.panels.push_back("service demand (us/KB)");
    auto side = [&](bool on, const char* name, const char* util, const char* sd, bool dashed) {
      if (!on) return;
      v.table_columns.insert(v.table_columns.end(), {util, sd});
      v.table_titles.insert(v.table_titles.end(), {fmt::format("util {}", name), fmt::format("SD {}", name)});
      v.table_units.insert(v.table_units.end(), {"%", "us/KB"});
      v.decimals.insert(v.decimals.end(), {2, 3});
      v.plot.metrics.push_back({sd, name, 1, dashed});
    };
    side(opts.local_cpu, "local", "util_local_pct", "sd_local_us_per_kb", false);
    side(opts.remote_cpu, "remote", "util_remote_pct", "sd_remote_us_per_kb", true);
  } else if (frontends::perftest_is_bw(perftest_test(o.tool))) {
    v.size_column = "bytes";
    v.table_columns = {"iterations", "bw_peak_gbit_s", "bw_avg_gbit_s", "bw_avg_mib_s", "msg_rate_mpps"};
    v.table_titles = {"#iterations", "BW peak", "BW average", "BW average", "MsgRate"};
    v.table_units = {"", "Gb/s", "Gb/s", "MiB/s", "Mpps"};
    v.decimals = {0, 2, 2, 2, 6};
    v.plot.panels = {"BW average (Gb/s)", "message rate (Mpps)"};
    v.plot.metrics = {{"bw_avg_gbit_s", "", 0, false}, {"msg_rate_mpps", "", 1, false}};
  } else {
    v.size_column = "bytes";
    v.table_columns = {"iterations", "t_min_us", "t_max_us", "t_typical_us", "t_avg_us"};
    v.table_titles = {"#iterations", "t_min", "t_max", "t_typical", "t_avg"};
    v.table_units = {"", "usec", "usec", "usec", "usec"};
    v.decimals = {0, 2, 2, 2, 2};
    v.plot.panels = {"t_typical (us)"};
    v.plot.metrics = {{"t_typical_us", "", 0, false}};
  }
  return v;
}

int column(const std::vector<std::string>& header, const std::string& name, const std::string& origin) {
  const auto it = std::find(header.begin(), header.end(), name);
  if (it == header.end()) throw InputError(fmt::format("{}: no column '{}'", origin, name));
  return static_cast<int>(it - header.begin());
}

std::string shown(const std::string& cell, int decimals) {
  if (cell.empty()) return "-";
  try {
    return fmt::format("{:.{}f}", std::stod(cell), decimals);
  } catch (const std::exception&) {
    return cell;
  }
}

/// A CSV cell as JSON: empty is null (not measured), a whole number an integer, another
/// number (shortest round-trip form, as the tools write them) the same double, else a string.
frontends::Json cell_json(const std::string& cell) {
  if (cell.empty()) return nullptr;
  if (cell.find_first_not_of("0123456789") == std::string::npos && cell.size() < 20) return std::stoull(cell);
  if (const auto v = util::parse_number(cell)) return *v;
  return cell;
}

/// The sweep's command line as the plot's title.
std::string command_line(const SweepOptions& o) {
  std::string line = "hcasim sweep " + o.tool;
  for (const auto& w : o.words) line += " " + w;
  for (const auto& v : o.vary) {
    line += " --vary " + v.key + "=";
    for (size_t i = 0; i < v.values.size(); ++i) line += (i ? "," : "") + v.values[i];
  }
  return line;
}

/// Checks every variant against the platforms before any child starts: the tool's own
/// --platform / --set first, then each variant's, worded as --vary.
void check_variants(const SweepOptions& o, const std::vector<Variant>& variants) {
  std::string platform = frontends::kDefaultPlatform;
  std::optional<std::string> remote;
  std::vector<std::string> sets;
  bool platform_given = false;
  for (const auto& w : o.words)
    if (w == "--platform" || w.rfind("--platform=", 0) == 0) platform_given = true;
  if (o.tool == "netperf") {
    const auto opts = frontends::parse_netperf_args(words_for_size(o, o.sizes.front()), true);
    platform = opts.platform, remote = opts.remote_platform, sets = opts.sets;
  } else {
    const auto opts = frontends::parse_perftest_args(perftest_test(o.tool), words_for_size(o, o.sizes.empty() ? 0 : o.sizes.front()));
    platform = opts.platform, remote = opts.remote_platform, sets = opts.sets;
  }
  (void)load_host_platforms(platform, remote, sets);
  for (const Vary& v : o.vary) {
    if (v.key == "platform" && platform_given)
      throw InputError("--vary platform: the tool's words give --platform too; give one of them");
    for (const auto& s : sets)
      if (s.rfind(v.key + "=", 0) == 0)
        throw InputError(fmt::format("--vary {}: also given as --set {}; give one of them", v.key, s));
  }
  for (const Variant& variant : variants) {
    std::string p = platform;
    std::vector<std::string> with = sets;
    for (const auto& [key, value] : variant) {
      if (key == "platform") {
        (void)resolve_platform(value, "--vary platform");
        p = value;
      } else {
        with.push_back(key + "=" + value);
      }
    }
    try {
      // The children's model checks too (a value out of its range, --set host.clock=100), so
      // that a bad variant is named as --vary, not reported as a failed point.
      const auto [local, far] = load_host_platforms(p, remote, with);
      (void)sim::read_host_params(local);
      (void)sim::read_host_params(far);
    } catch (const InputError& e) {
      std::string message = e.what();
      if (message.rfind("--set ", 0) == 0) message.replace(0, 6, "--vary ");
      throw InputError(message);
    }
  }
}

}  // namespace

int run_sweep(const SweepOptions& o) {
  const std::vector<Variant> variants = variants_of(o.vary);
  std::vector<Point> points;
  for (size_t v = 0; v < variants.size(); ++v) {
    if (o.perftest_all) points.push_back({v, 0});
    for (uint64_t s : o.sizes) points.push_back({v, s});
  }
  if (points.size() > kMaxPoints)
    throw InputError(fmt::format("sweep: {} points (sizes x variants); at most {}", points.size(), kMaxPoints));

  // Everything checked before the first child: the tool's flags at every size (a size the tool
  // refuses is its own one-line error), the variants, the outputs, gnuplot.
  for (uint64_t s : o.sizes) {
    if (o.tool == "netperf") frontends::require_stream_test(frontends::parse_netperf_args(words_for_size(o, s), true), "hcasim sweep");
    else (void)frontends::parse_perftest_args(perftest_test(o.tool), words_for_size(o, s));
  }
  check_variants(o, variants);
  ToolView view = view_of(o);
  if (o.reference && !o.plot)
    throw InputError("--reference: the measured points go on the plot: give --plot PREFIX too");
  std::vector<std::string> inputs;
  if (o.reference) inputs.push_back(*o.reference);
  if (o.csv_path) {
    util::check_output_path(*o.csv_path, "--csv");
    util::check_not_an_input(*o.csv_path, inputs, "--csv");
    if (o.plot)
      for (const std::string& f : plot_files(*o.plot))
        if (fs::weakly_canonical(fs::absolute(f)) == fs::weakly_canonical(fs::absolute(*o.csv_path)))
          throw InputError(fmt::format("--csv {}: --plot {} writes that file too", *o.csv_path, *o.plot));
  }
  std::string gnuplot;
  if (o.plot) {
    check_plot_prefix(*o.plot);
    const auto found = find_in_path("gnuplot");
    if (!found)
      throw InputError("--plot: gnuplot not found in PATH (Debian: apt-get install gnuplot-nox, or "
                       "scripts/install-deps.sh)");
    gnuplot = *found;
  }
  if (o.reference) view.plot.measured = load_reference_series(*o.reference, o.tool, view.plot.metrics);

  std::vector<ChildRun> runs;
  for (const Point& p : points) {
    std::vector<std::string> argv = {"hcasim", o.tool};
    const auto flags = variant_flags(variants[p.variant]);
    argv.insert(argv.end(), flags.begin(), flags.end());
    const auto words = words_for_size(o, p.size);
    argv.insert(argv.end(), words.begin(), words.end());
    const std::string label = variant_label(variants[p.variant]);
    const std::string size = o.perftest_all ? "-a" : fmt::format("{} {}", o.tool == "netperf" ? "-m" : "-s", size_label(p.size));
    runs.push_back({std::move(argv), label.empty() ? size : size + " " + label, ""});
  }
  const size_t parallel = static_cast<size_t>(o.jobs > 0 ? o.jobs : online_cpus());
  std::vector<ChildResult> results;
  try {
    auto executed = execute_runs(runs, parallel, o.fanout);
    if (!executed) return 0;  // --list-commands: the commands are the output
    results = std::move(*executed);
  } catch (const ChildFailure& e) {
    return print_child_failure(e);
  } catch (const Interrupted& e) {
    return print_interrupted(e);
  }

  // The rows: each child's CSV rows behind its variant's label.
  std::string header;
  std::vector<std::vector<std::string>> header_cells;
  std::string csv;
  std::vector<PlotSeries> series(variants.size());
  for (size_t v = 0; v < variants.size(); ++v) series[v].title = variant_label(variants[v]);
  struct Row {
    size_t variant;
    std::vector<std::string> cells;
  };
  std::vector<Row> rows;
  std::vector<std::string> columns;
  for (size_t i = 0; i < points.size(); ++i) {
    const ToolCsv t = read_tool_csv(results[i].csv, results[i].source.empty() ? fmt::format("{} CSV", runs[i].label)
                                                                               : results[i].source);
    if (header.empty()) {
      header = t.header;
      columns = util::parse_csv(t.header, "CSV header").front();
      csv = "variant," + header + "\n";
    } else if (t.header != header) {
      throw InputError(fmt::format("{} CSV: its header differs from the first point's", runs[i].label));
    }
    for (size_t r = 0; r < t.rows.size(); ++r) {
      csv += util::csv_cell(variant_label(variants[points[i].variant])) + "," + t.lines[r] + "\n";
      rows.push_back({points[i].variant, t.rows[r]});
    }
  }
  const std::string origin = "sweep CSV";
  const int size_col = column(columns, view.size_column, origin);
  std::vector<int> table_cols, plot_cols;
  for (const auto& c : view.table_columns) table_cols.push_back(column(columns, c, origin));
  for (const auto& m : view.plot.metrics) plot_cols.push_back(column(columns, m.column, origin));
  for (const Row& r : rows) {
    std::vector<std::string> cells;
    for (int c : plot_cols) cells.push_back(r.cells.at(c).empty() ? "-" : r.cells.at(c));
    series[r.variant].points.emplace_back(std::stoull(r.cells.at(size_col)), std::move(cells));
  }

  // The table.
  size_t variant_w = 7;
  for (const auto& s : series) variant_w = std::max(variant_w, s.title.size());
  // The title names the sweep without the program's name, so that it reads as no command line.
  std::string table = fmt::format("sweep of {}: {} points\n", command_line(o).substr(13), rows.size());
  auto line = [&](const std::string& size, const std::string& variant, const std::vector<std::string>& cells) {
    std::string l = fmt::format("{:>8}  {:<{}}", size, variant, variant_w);
    for (size_t c = 0; c < cells.size(); ++c) l += fmt::format("  {:>11}", cells[c]);
    l.erase(l.find_last_not_of(' ') + 1);
    return l + "\n";
  };
  table += line("size", "variant", view.table_titles);
  table += line("bytes", "", view.table_units);
  for (const Row& r : rows) {
    std::vector<std::string> cells;
    for (size_t c = 0; c < table_cols.size(); ++c) cells.push_back(shown(r.cells.at(table_cols[c]), view.decimals[c]));
    const std::string& label = series[r.variant].title;
    table += line(size_label(std::stoull(r.cells.at(size_col))), label.empty() ? "-" : label, cells);
  }

  // Files first (a failure to write one leaves stdout empty); --csv /dev/stdout after the table.
  // The plot before the CSV: gnuplot is what may fail.
  const bool csv_to_stdout = o.csv_path && util::is_stdout_path(*o.csv_path);
  if (o.plot) {
    view.plot.title = command_line(o);
    view.plot.simulated = series;
    try {
      write_sweep_plot(*o.plot, view.plot, gnuplot);
    } catch (const Interrupted& e) {
      return print_interrupted(e);
    }
  }
  if (o.csv_path && !csv_to_stdout) util::write_file_atomically(*o.csv_path, csv, "--csv");
  if (o.json) {
    frontends::Json doc;
    doc["schema"] = "hcasim.sweep/1";
    doc["command_line"] = frontends::json_command_line("sweep", o.args);
    doc["tool"] = o.tool;
    doc["sizes_bytes"] = o.perftest_all ? frontends::Json(nullptr) : frontends::Json(o.sizes);
    doc["perftest_all"] = o.perftest_all;
    frontends::Json vary = frontends::Json::array();
    for (const Vary& v : o.vary) vary.push_back({{"key", v.key}, {"values", v.values}});
    doc["vary"] = std::move(vary);
    frontends::Json labels = frontends::Json::array();
    for (const auto& s : series) labels.push_back(s.title);
    doc["variants"] = std::move(labels);
    doc["csv"] = o.csv_path ? frontends::Json(*o.csv_path) : frontends::Json(nullptr);
    doc["plot"] = o.plot ? frontends::Json(*o.plot) : frontends::Json(nullptr);
    frontends::Json json_points = frontends::Json::array();
    for (const Row& r : rows) {
      frontends::Json j;
      j["variant"] = series[r.variant].title;
      for (size_t c = 0; c < columns.size() && c < r.cells.size(); ++c) j[sweep_json_key(columns[c])] = cell_json(r.cells[c]);
      json_points.push_back(std::move(j));
    }
    doc["points"] = std::move(json_points);
    std::cout << frontends::dump_json(doc);
  } else {
    std::cout << table;
  }
  std::cout << std::flush;
  if (csv_to_stdout) util::write_file_atomically(*o.csv_path, csv, "--csv");
  return 0;
}

std::string sweep_json_key(const std::string& column) {
  static const std::map<std::string, std::string, std::less<>> renamed = {
      {"throughput_mbps", "throughput_mbit_s"},
      {"sd_local_us_per_kb", "service_demand_local_us_per_kb"},
      {"sd_remote_us_per_kb", "service_demand_remote_us_per_kb"},
      {"bw_avg_mib_s", "bw_average_mib_s"},
      {"bw_avg_gbit_s", "bw_average_gbit_s"}};
  const auto it = renamed.find(column);
  return it == renamed.end() ? column : it->second;
}

}  // namespace hcasim::scenarios
