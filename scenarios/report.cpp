// The report directory of `hcasim validate --report DIR` (report.h): Markdown, CSVs, gnuplot
// data and script, PNGs drawn by gnuplot in a directory beside DIR and renamed into place.
#include "scenarios/report.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "frontends/netperf_cli.h"
#include "model/units.h"
#include "scenarios/children.h"
#include "scenarios/gnuplot.h"
#include "scenarios/validate.h"
#include "util/statistics.h"

namespace hcasim::scenarios {

using util::median;


namespace {

namespace fs = std::filesystem;

/// A number for a gnuplot data file: full precision, "-" (set datafile missing) when absent.
std::string data_value(const std::optional<double>& v) { return v ? fmt::format("{}", *v) : "-"; }

/// A string inside the double quotes of a gnuplot data file (no quotes or line breaks in it).
std::string data_label(const std::string& text) {
  std::string out;
  for (char c : text) out += (c == '"' || c == '\n' || c == '\r') ? '\'' : c;
  return "\"" + out + "\"";
}

/// A Markdown table cell: '|' escaped, line breaks as spaces.
std::string md(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '|') out += "\\|";
    else if (c == '\n' || c == '\r') out += ' ';
    else out += c;
  }
  return out;
}

std::string fixed(const std::optional<double>& v, int decimals) {
  return v ? fmt::format("{:.{}f}", *v, decimals) : "-";
}

std::string signed_pct(const std::optional<double>& e) {
  return e ? fmt::format("{:+.1f} %", *e * 100.0) : "-";
}

std::string signed_us(const std::optional<double>& e) {
  if (!e) return "-";
  return fmt::format("{:+.3f}", std::fabs(*e) < 0.0005 ? 0.0 : *e);
}

/// A size-sweep plot of one table: a data block per mode (gnuplot `index`), columns size,
/// measured, simulated; measured drawn as points, simulated as lines, a colour per mode.
struct SweepPlot {
  std::string data;    // the .dat text
  std::string script;  // its part of plots.gp
};

struct SweepPoint {
  uint64_t size = 0;
  std::optional<double> measured, simulated;
};

SweepPlot sweep_plot(const std::string& base, const std::string& title, const std::string& what,
                     const std::string& xlabel, const std::string& ylabel,
                     const std::vector<std::pair<std::string, std::vector<SweepPoint>>>& modes,
                     size_t unsized) {
  SweepPlot plot;
  plot.data = fmt::format("# {}\n# columns: message size (B), measured, simulated ({}); '-' = none\n"
                          "# one block per mode, in this order (gnuplot index 0, 1, ...)\n",
                          title, what);
  if (unsized) plot.data += fmt::format("# {} point(s) without a message size left out\n", unsized);
  std::set<uint64_t> sizes;
  for (size_t m = 0; m < modes.size(); ++m) {
    plot.data += fmt::format("{}# index {}: {}\n", m ? "\n\n" : "", m, modes[m].first);
    std::vector<SweepPoint> points = modes[m].second;
    std::stable_sort(points.begin(), points.end(),
                     [](const SweepPoint& a, const SweepPoint& b) { return a.size < b.size; });
    for (const auto& p : points) {
      plot.data += fmt::format("{} {} {}\n", p.size, data_value(p.measured), data_value(p.simulated));
      sizes.insert(p.size);
    }
  }
  std::string& gp = plot.script;
  gp += fmt::format("\n# --- {}\nreset\nset output {}\n", title, gp_quote(base + ".png"));
  gp += fmt::format("set title {}\n", gp_dquote(title + "\npoints: measured, lines: simulated"));
  gp += fmt::format("set xlabel {}\n", gp_quote(xlabel));
  gp += fmt::format("set ylabel {}\n", gp_quote(ylabel));
  gp += "set logscale x 2\nset grid\nset key outside right top\nset datafile missing '-'\n";
  if (!sizes.empty()) {
    gp += fmt::format("set xrange [{}:{}]\n", static_cast<double>(*sizes.begin()) / 1.5,
                      static_cast<double>(*sizes.rbegin()) * 1.5);
    gp += size_tics(sizes);
  }
  gp += "set yrange [0:*]\n";
  std::string plots;
  for (size_t m = 0; m < modes.size(); ++m) {
    const std::string colour = plot_colour(m);
    const std::string file = m == 0 ? gp_quote(base + ".dat") : "''";
    plots += fmt::format("{}{} index {} using 1:2 with points pt 7 ps 1.6 lc rgb '{}' title {}, \\\n"
                         "  '' index {} using 1:3 with linespoints lw 2 pt 6 ps 1 lc rgb '{}' title {}",
                         m ? ", \\\n  " : "  ", file, m, colour, gp_quote(modes[m].first + " measured"), m,
                         colour, gp_quote(modes[m].first + " simulated"));
  }
  gp += "plot \\\n" + plots + "\n";
  return plot;
}

/// The signed error chart of one scenario's points of `kind` (report.h).
SweepPlot error_plot(const Scenario& s, const std::vector<PointOutcome>& outcomes, PointKind kind,
                     const std::string& base) {
  const bool netperf = kind == PointKind::Netperf;
  const double tolerance = netperf ? s.tolerance.throughput * 100.0 : s.tolerance.t_typical_us;
  const std::string unit = netperf ? "%" : "us";
  SweepPlot plot;
  const std::string title =
      netperf ? fmt::format("{}: throughput error per point, (simulated - measured) / measured", s.name)
              : fmt::format("{}: t_typical error per point, simulated - measured", s.name);
  plot.data = fmt::format("# {}\n# columns: bar, error ({}), gated (1/0), point; '-' = not simulated\n",
                          title, unit);
  size_t n = 0;
  double low = -tolerance, high = tolerance;
  for (size_t i = 0; i < s.points.size(); ++i) {
    const ScenarioPoint& p = s.points[i];
    if (p.kind != kind) continue;
    const PointOutcome& o = outcomes.at(i);
    std::optional<double> error = netperf ? o.throughput.error : o.t_typical.error;
    if (error && netperf) *error *= 100.0;
    if (error) {
      low = std::min(low, *error);
      high = std::max(high, *error);
    }
    std::string label = p.table + " " + p.mode + " ";
    label += netperf ? (p.size_flag.empty() ? "-" : p.size_flag) : size_label(o.bytes) + " B";
    plot.data += fmt::format("{} {} {} {}\n", n++, data_value(error), p.gated ? 1 : 0, data_label(label));
  }
  const double margin = (high - low) * 0.08;
  std::string& gp = plot.script;
  gp += fmt::format("\n# --- {}\nreset\n", title);
  gp += fmt::format("set terminal pngcairo noenhanced font 'sans,10' size {},760\n",
                    std::max<size_t>(900, 220 + 34 * n));
  gp += fmt::format("set output {}\nset title {}\n", gp_quote(base + ".png"), gp_dquote(title));
  gp += fmt::format("set ylabel {}\n", gp_quote(netperf ? "throughput error (%)" : "t_typical error (us)"));
  gp += fmt::format("set xlabel {}\n", gp_quote(netperf ? "point (table, mode, size flag)" : "point (table, mode, message size)"));
  gp += "set style fill solid 0.85 border -1\nset boxwidth 0.7\nset grid ytics\n"
        "set xtics rotate by 90 right nomirror\nset key outside top center horizontal\nset datafile missing '-'\n";
  gp += fmt::format("set xrange [-0.75:{}]\nset yrange [{}:{}]\n", static_cast<double>(n) - 0.25,
                    low - margin, high + margin);
  gp += fmt::format("plot {} using 1:2:($3 == 1 ? 0x1f77b4 : 0xaaaaaa):xtic(4) with boxes lc rgb variable "
                    "notitle, \\\n"
                    "  NaN with boxes lc rgb '#1f77b4' title 'gated', \\\n"
                    "  NaN with boxes lc rgb '#aaaaaa' title 'not gated', \\\n"
                    "  {} with lines dt 2 lw 2 lc rgb '#d62728' title {}, \\\n"
                    "  {} with lines dt 2 lw 2 lc rgb '#d62728' notitle, \\\n"
                    "  0 with lines lw 1 lc rgb 'black' notitle\n",
                    gp_quote(base + ".dat"), tolerance, gp_quote(fmt::format("tolerance +/- {:g} {}", tolerance, unit)),
                    -tolerance);
  gp += "set terminal pngcairo noenhanced font 'sans,11' size 1000,620\n";
  return plot;
}

/// The modes of `table`'s points of `kind`, in order of first appearance, each with its points'
/// sizes and figures. `unsized` counts the points without a size; `from_request` tells whether
/// some netperf point's size is its -r.
std::vector<std::pair<std::string, std::vector<SweepPoint>>> table_modes(
    const Scenario& s, const std::vector<PointOutcome>& outcomes, PointKind kind, const std::string& table,
    size_t& unsized, bool& from_request) {
  std::vector<std::pair<std::string, std::vector<SweepPoint>>> modes;
  unsized = 0;
  from_request = false;
  for (size_t i = 0; i < s.points.size(); ++i) {
    const ScenarioPoint& p = s.points[i];
    if (p.kind != kind || p.table != table) continue;
    const PointOutcome& o = outcomes.at(i);
    SweepPoint point;
    if (kind == PointKind::Netperf) {
      const auto size = netperf_message_size(p, &from_request);
      if (!size) {
        ++unsized;
        continue;
      }
      point = {*size, o.throughput.measured, o.throughput.simulated};
    } else {
      point = {o.bytes, o.t_typical.measured, o.t_typical.simulated};
    }
    auto it = std::find_if(modes.begin(), modes.end(), [&](const auto& m) { return m.first == p.mode; });
    if (it == modes.end()) it = modes.insert(modes.end(), {p.mode, {}});
    it->second.push_back(point);
  }
  return modes;
}

/// The per-point Markdown table of the points of `kind`.
std::string points_markdown(const Scenario& s, const std::vector<PointOutcome>& outcomes, PointKind kind) {
  std::string out;
  if (kind == PointKind::Netperf) {
    out += "| table | mode | size | throughput measured, Mbit/s | simulated | error | SD local measured, us/KB "
           "| simulated | error | SD remote measured, us/KB | simulated | error | util local measured, % | "
           "simulated | error | util remote measured, % | simulated | error | status |\n";
    out += "|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|\n";
  } else {
    out += "| table | mode | bytes | t_typical measured, us | simulated | error | t_min measured, us | simulated "
           "| error | t_max measured, us | simulated | status |\n";
    out += "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|\n";
  }
  for (size_t i = 0; i < s.points.size(); ++i) {
    const ScenarioPoint& p = s.points[i];
    if (p.kind != kind) continue;
    const PointOutcome& o = outcomes.at(i);
    if (kind == PointKind::Netperf) {
      out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} "
                         "| {} |\n",
                         md(p.table), md(p.mode), md(p.size_flag.empty() ? "-" : p.size_flag),
                         fixed(o.throughput.measured, 2), fixed(o.throughput.simulated, 2),
                         signed_pct(o.throughput.error), fixed(o.sd_local.measured, 3),
                         fixed(o.sd_local.simulated, 3), signed_pct(o.sd_local.error),
                         fixed(o.sd_remote.measured, 3), fixed(o.sd_remote.simulated, 3),
                         signed_pct(o.sd_remote.error), fixed(o.util_local.measured, 2),
                         fixed(o.util_local.simulated, 2), signed_pct(o.util_local.error),
                         fixed(o.util_remote.measured, 2), fixed(o.util_remote.simulated, 2),
                         signed_pct(o.util_remote.error), md(o.status));
    } else {
      out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", md(p.table),
                         md(p.mode), o.bytes, fixed(o.t_typical.measured, 3), fixed(o.t_typical.simulated, 3),
                         signed_us(o.t_typical.error), fixed(o.t_min.measured, 3), fixed(o.t_min.simulated, 3),
                         signed_us(o.t_min.error), fixed(o.t_max.measured, 2), fixed(o.t_max.simulated, 2),
                         md(o.status));
    }
  }
  return out;
}

/// The summary Markdown table of one scenario (summarize_tables).
std::string summary_markdown(const std::vector<TableSummary>& tables) {
  std::string out =
      "| table | kind | points | gated | metric | median \\|error\\| | max \\|error\\| | tolerance | gated within | "
      "target |\n|---|---|--:|--:|---|--:|--:|--:|---|---|\n";
  for (const TableSummary& t : tables) {
    const bool netperf = t.kind == PointKind::Netperf;
    auto value = [&](const std::optional<double>& v) {
      if (!v) return std::string("-");
      return netperf ? fmt::format("{:.1f} %", *v * 100.0) : fmt::format("{:.3f} us", *v);
    };
    bool first = true;
    for (const MetricSummary& m : t.metrics) {
      std::string tolerance = "-";
      if (m.tolerance > 0)
        tolerance = netperf ? fmt::format("{:.4g} %", m.tolerance * 100.0) : fmt::format("{:g} us", m.tolerance);
      std::string within = m.gated ? fmt::format("{}/{} {}", m.gated_within, m.gated,
                                                 m.gated_within == m.gated ? "yes" : "**NO**")
                                   : "-";
      std::string target = "-";
      if (netperf && m.median)
        target = m.target_met ? "met" : fmt::format("missed (allowed {:.1f} % / {:.1f} %)", m.allowed_median * 100.0,
                                                    m.allowed_max * 100.0);
      out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", first ? md(t.table) : "",
                         first ? (netperf ? "netperf" : "latency") : "", first ? std::to_string(t.points) : "",
                         first ? std::to_string(t.gated) : "", m.name, value(m.median), value(m.max), tolerance,
                         within, target);
      first = false;
    }
  }
  return out;
}

/// A file name part for a table name, unique among `taken` (a suffix -2, -3, ... otherwise).
std::string unique_name(const std::string& wanted, std::set<std::string>& taken) {
  std::string name = wanted;
  for (int n = 2; !taken.insert(name).second; ++n) name = fmt::format("{}-{}", wanted, n);
  return name;
}

/// `dir` without a trailing '/'.
fs::path report_path(const std::string& dir) {
  fs::path p(dir);
  if (!p.has_filename() && p.has_parent_path()) p = p.parent_path();
  return p;
}

/// mkdtemp of PATTERN (ending in XXXXXX); InputError "--report DIR: cannot write (reason)".
fs::path make_temp_dir(const fs::path& pattern, const std::string& dir) {
  std::string text = pattern.string();
  if (!::mkdtemp(text.data()))
    throw InputError(fmt::format("--report {}: cannot write ({})", dir, std::strerror(errno)));
  return fs::path(text);
}

/// Removes a directory tree on destruction unless released.
class RemoveOnExit {
 public:
  explicit RemoveOnExit(fs::path path) : path_(std::move(path)) {}
  ~RemoveOnExit() {
    if (path_.empty()) return;
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  RemoveOnExit(const RemoveOnExit&) = delete;
  RemoveOnExit& operator=(const RemoveOnExit&) = delete;
  void release() { path_.clear(); }

 private:
  fs::path path_;
};

}  // namespace

std::optional<uint64_t> netperf_message_size(const ScenarioPoint& point, bool* from_request) {
  if (point.kind != PointKind::Netperf) return std::nullopt;
  try {
    const frontends::NetperfOptions o = frontends::parse_netperf_args(point.words);
    if (o.send_size > 0) return o.send_size;
    if (o.request_size) {
      const std::string first = o.request_size->substr(0, o.request_size->find(','));
      if (first.empty()) return std::nullopt;
      const uint64_t size = model::parse_size(first, "-r");
      if (from_request) *from_request = true;
      return size;
    }
  } catch (const InputError&) {
  }
  return std::nullopt;
}

std::string size_label(uint64_t bytes) {
  if (bytes == 0) return "0";
  constexpr std::pair<uint64_t, const char*> units[] = {{1ull << 30, "G"}, {1ull << 20, "M"}, {1ull << 10, "K"}};
  for (const auto& [unit, suffix] : units)
    if (bytes % unit == 0) return fmt::format("{}{}", bytes / unit, suffix);
  return std::to_string(bytes);
}

ReportFiles make_report_files(const std::vector<Scenario>& scenarios,
                              const std::vector<std::vector<PointOutcome>>& outcomes,
                              const std::string& length_note) {
  ReportFiles report;
  std::string gp =
      "# The plots of `hcasim validate --report`: run in this directory (gnuplot plots.gp).\n"
      "set encoding utf8\n"
      "set terminal pngcairo noenhanced font 'sans,11' size 1000,620\n";
  size_t points = 0, gated = 0, failed = 0;
  for (size_t k = 0; k < scenarios.size(); ++k) {
    points += scenarios[k].points.size();
    for (size_t i = 0; i < scenarios[k].points.size(); ++i) {
      if (!scenarios[k].points[i].gated) continue;
      ++gated;
      if (outcomes.at(k).at(i).status == "FAIL") ++failed;
    }
  }
  std::string names;
  for (const auto& s : scenarios) names += (names.empty() ? "" : ", ") + s.name;
  std::string md_text = "# hcasim validation report\n\n";
  md_text += fmt::format("`hcasim validate` over {} scenario{} ({}): {} points, {} gated.\n\n", scenarios.size(),
                         scenarios.size() == 1 ? "" : "s", md(names), points, gated);
  if (!length_note.empty()) md_text += length_note + ".\n\n";
  md_text += failed == 0 ? "**ok**: every gated point within its tolerance.\n\n"
                         : fmt::format("**FAIL**: {} of {} gated points out of tolerance.\n\n", failed, gated);
  md_text += fmt::format(
      "Errors: netperf (simulated - measured) / measured; latency simulated - measured, in us. Median and max "
      "|error| are over every point of a table, gated or not; \"gated within\" counts the gated points within the "
      "tolerance. The target of netperf tables (not a gate): median |error| <= {:g} % and max |error| <= {:g} % "
      "per metric, or the seed's measured spread where it ran the same configuration twice, whichever is larger "
      "(allowed: median / max).\n",
      kTargetMedian * 100.0, kTargetMax * 100.0);

  for (size_t k = 0; k < scenarios.size(); ++k) {
    const Scenario& s = scenarios[k];
    const std::vector<PointOutcome>& o = outcomes.at(k);
    const std::string name = safe_file_name(s.name);
    report.files.emplace_back(name + "-results.csv", format_run_csv(s, o));
    report.files.emplace_back(name + "-report.txt", format_run_report(s, o));

    md_text += fmt::format("\n## {}\n\n", md(s.name));
    if (!s.description.empty()) md_text += md(s.description) + "\n\n";
    md_text += fmt::format("- platform: `{}`\n", s.platform);
    if (!s.source.empty()) md_text += fmt::format("- measured: {}\n", md(s.source));
    std::vector<std::string> tolerances;
    const Tolerance& t = s.tolerance;
    if (t.throughput > 0) tolerances.push_back(fmt::format("throughput {:.4g} %", t.throughput * 100.0));
    if (t.service_demand > 0) tolerances.push_back(fmt::format("service demand {:.4g} %", t.service_demand * 100.0));
    if (t.utilisation > 0) tolerances.push_back(fmt::format("utilisation {:.4g} %", t.utilisation * 100.0));
    if (t.t_typical_us > 0) tolerances.push_back(fmt::format("t_typical {:g} us", t.t_typical_us));
    if (t.t_min_us > 0) tolerances.push_back(fmt::format("t_min {:g} us", t.t_min_us));
    std::string joined;
    for (const auto& x : tolerances) joined += (joined.empty() ? "" : ", ") + x;
    md_text += fmt::format("- tolerance: {}\n", joined);
    if (s.spread) {
      std::vector<std::string> parts;
      if (s.spread->throughput) parts.push_back(fmt::format("throughput {:.1f} %", *s.spread->throughput * 100.0));
      if (s.spread->service_demand)
        parts.push_back(fmt::format("service demand {:.1f} %", *s.spread->service_demand * 100.0));
      if (s.spread->utilisation) parts.push_back(fmt::format("utilisation {:.1f} %", *s.spread->utilisation * 100.0));
      std::string spread;
      for (const auto& x : parts) spread += (spread.empty() ? "" : ", ") + x;
      md_text += fmt::format("- measured spread: {} ({})\n", spread, md(s.spread->source));
    }
    size_t s_gated = 0, s_failed = 0;
    for (size_t i = 0; i < s.points.size(); ++i) {
      if (!s.points[i].gated) continue;
      ++s_gated;
      if (o.at(i).status == "FAIL") ++s_failed;
    }
    md_text += fmt::format("- gated points within tolerance: {} of {}\n", s_gated - s_failed, s_gated);
    md_text += fmt::format("- files: [{0}-results.csv]({0}-results.csv) (the run CSV), [{0}-report.txt]({0}-report.txt) "
                           "(the report `hcasim run` prints)\n\n",
                           name);
    md_text += summary_markdown(summarize_tables(s, o));

    // Plots: a size sweep per table, then the error chart(s).
    std::set<std::string> taken;
    std::string images;
    for (const PointKind kind : {PointKind::Netperf, PointKind::Latency}) {
      std::vector<std::string> tables;
      for (const auto& p : s.points)
        if (p.kind == kind && std::find(tables.begin(), tables.end(), p.table) == tables.end())
          tables.push_back(p.table);
      for (const auto& table : tables) {
        const bool netperf = kind == PointKind::Netperf;
        const std::string base = fmt::format("{}-{}-{}", name, unique_name(safe_file_name(table), taken),
                                             netperf ? "throughput" : "t_typical");
        size_t unsized = 0;
        bool from_request = false;
        const auto modes = table_modes(s, o, kind, table, unsized, from_request);
        const bool any_value = std::any_of(modes.begin(), modes.end(), [](const auto& m) {
          return std::any_of(m.second.begin(), m.second.end(),
                             [](const SweepPoint& p) { return p.measured || p.simulated; });
        });
        if (!any_value) {  // gnuplot refuses a plot without a point
          images += fmt::format("(table {}: no point with a message size and a value, no plot)\n\n", md(table));
          continue;
        }
        const std::string title =
            fmt::format("{} {}: {} vs message size", s.name, table, netperf ? "throughput" : "t_typical");
        const std::string xlabel = from_request ? "message size (B, log2 scale): the -r value; TCP_STREAM "
                                                  "ignores -r and sends the send socket size"
                                                : "message size (B, log2 scale)";
        // perftest's READ and atomic latency is the whole round trip (print_report_lat's rtt_factor 1).
        const bool whole_trip = std::any_of(s.points.begin(), s.points.end(), [&](const ScenarioPoint& p) {
          return p.table == table && (p.tool == "ib_read_lat" || p.tool == "ib_atomic_lat");
        });
        const SweepPlot plot = sweep_plot(base, title, netperf ? "throughput, Mbit/s" : "t_typical, us", xlabel,
                                          netperf      ? "throughput (Mbit/s)"
                                          : whole_trip ? "t_typical, the whole round trip (us)"
                                                       : "t_typical, half the round trip (us)",
                                          modes, unsized);
        report.files.emplace_back(base + ".dat", plot.data);
        report.plots.push_back(base + ".png");
        gp += plot.script;
        images += fmt::format("![{}]({}.png)\n\n", md(title), base);
      }
    }
    const bool both = std::any_of(s.points.begin(), s.points.end(), [](const auto& p) { return p.kind == PointKind::Netperf; }) &&
                      std::any_of(s.points.begin(), s.points.end(), [](const auto& p) { return p.kind == PointKind::Latency; });
    for (const PointKind kind : {PointKind::Netperf, PointKind::Latency}) {
      if (std::none_of(s.points.begin(), s.points.end(), [&](const auto& p) { return p.kind == kind; })) continue;
      const std::string base =
          both ? fmt::format("{}-errors-{}", name, kind == PointKind::Netperf ? "netperf" : "latency") : name + "-errors";
      const SweepPlot plot = error_plot(s, o, kind, base);
      report.files.emplace_back(base + ".dat", plot.data);
      report.plots.push_back(base + ".png");
      gp += plot.script;
      images += fmt::format("![{}: error per point]({}.png)\n\n", md(s.name), base);
    }
    md_text += "\n### Plots\n\n" + images;
    md_text += "### Points\n\n";
    for (const PointKind kind : {PointKind::Netperf, PointKind::Latency})
      if (std::any_of(s.points.begin(), s.points.end(), [&](const auto& p) { return p.kind == kind; }))
        md_text += points_markdown(s, o, kind) + "\n";
  }
  gp += "\nunset output\n";
  report.files.emplace_back("plots.gp", gp);
  report.files.emplace(report.files.begin(), "report.md", md_text);
  return report;
}

void check_report_dir(const std::string& dir) {
  auto fail = [&](const std::string& reason) {
    throw InputError(fmt::format("--report {}: cannot write ({})", dir, reason));
  };
  if (dir.empty()) throw InputError("--report: empty path");
  const fs::path path = report_path(dir);
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(path, ec);
  if (!ec && fs::exists(st)) {
    if (!fs::is_directory(st)) fail("it exists and is not a directory");
    if (!fs::is_empty(path, ec) && !fs::exists(path / "report.md", ec))
      fail("it is a directory that holds no report.md: not a report to replace");
  }
  const fs::path parent = path.has_parent_path() ? path.parent_path() : fs::path(".");
  if (!fs::is_directory(parent, ec)) fail(fmt::format("no such directory {}", parent.string()));
  // A directory can be made there (access() would say yes to root on a read-only file system).
  std::string leaf = path.filename().string();
  leaf.insert(0, 1, '.');
  leaf += ".probe-XXXXXX";
  std::string probe = (parent / leaf).string();
  if (!::mkdtemp(probe.data())) fail(std::strerror(errno));
  ::rmdir(probe.c_str());
}

std::optional<std::string> find_in_path(const std::string& name) {
  auto runnable = [](const fs::path& p) {
    std::error_code ec;
    return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
  };
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string::npos) return runnable(name) ? std::optional<std::string>(name) : std::nullopt;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  size_t start = 0;
  while (start <= dirs.size()) {
    const size_t end = std::min(dirs.find(':', start), dirs.size());
    const std::string d = dirs.substr(start, end - start);
    const fs::path candidate = fs::path(d.empty() ? "." : d) / name;
    if (runnable(candidate)) return candidate.string();
    start = end + 1;
  }
  return std::nullopt;
}

void write_validation_report(const std::string& dir, const std::vector<Scenario>& scenarios,
                             const std::vector<std::vector<PointOutcome>>& outcomes,
                             const std::string& gnuplot, const std::string& length_note) {
  check_report_dir(dir);
  const ReportFiles report = make_report_files(scenarios, outcomes, length_note);
  const fs::path path = report_path(dir);
  const fs::path parent = path.has_parent_path() ? path.parent_path() : fs::path(".");
  const std::string stem = path.filename().string();

  const fs::path tmp = make_temp_dir(parent / (stem + ".tmp-XXXXXX"), dir);
  RemoveOnExit remove_tmp(tmp);
  // mkdtemp makes it 0700; a report directory is made as mkdir(1) would make it.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  ::chmod(tmp.c_str(), 0777 & ~mask);
  for (const auto& [name, content] : report.files) {
    std::ofstream out(tmp / name, std::ios::binary);
    out << content;
    out.close();
    if (!out) throw InputError(fmt::format("--report {}: cannot write {} ({})", dir, name, std::strerror(errno)));
  }
  ProgramResult gp;
  try {
    gp = run_program({gnuplot, "plots.gp"}, tmp.string());
  } catch (const InputError& e) {
    throw InputError(fmt::format("--report {}: {}", dir, e.what()));
  }
  if (!WIFEXITED(gp.status) || WEXITSTATUS(gp.status) != 0)
    throw InputError(fmt::format("--report {}: gnuplot failed ({}): {}", dir, describe_status(gp.status),
                                 gnuplot_last_line(gp.errors)));
  for (const auto& png : report.plots) {
    std::error_code ec;
    if (!fs::is_regular_file(tmp / png, ec) || fs::file_size(tmp / png, ec) == 0)
      throw InputError(fmt::format("--report {}: gnuplot made no {} ({})", dir, png, gnuplot_last_line(gp.errors)));
  }

  // Into place: a previous report is moved aside, then removed once the new one is there.
  std::error_code ec;
  if (fs::exists(fs::symlink_status(path, ec))) {
    const fs::path old = make_temp_dir(parent / (stem + ".old-XXXXXX"), dir);
    RemoveOnExit remove_old(old);
    if (std::rename(path.c_str(), old.c_str()) != 0)
      throw InputError(fmt::format("--report {}: cannot replace it ({})", dir, std::strerror(errno)));
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
      const int err = errno;
      std::rename(old.c_str(), path.c_str());
      throw InputError(fmt::format("--report {}: cannot write ({})", dir, std::strerror(err)));
    }
  } else if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    throw InputError(fmt::format("--report {}: cannot write ({})", dir, std::strerror(errno)));
  }
  remove_tmp.release();
}

}  // namespace hcasim::scenarios
