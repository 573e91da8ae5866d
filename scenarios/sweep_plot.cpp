// The sweep's plot and its measured points (sweep_plot.h).
#include "scenarios/sweep_plot.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "scenarios/children.h"
#include "scenarios/datadir.h"
#include "scenarios/gnuplot.h"
#include "scenarios/run_file.h"
#include "util/csv.h"
#include "util/input_file.h"
#include "util/number.h"
#include "util/output_file.h"

namespace hcasim::scenarios {

namespace {

namespace fs = std::filesystem;

/// The files --plot PREFIX writes, by suffix.
constexpr const char* kSuffixes[] = {".png", ".svg", ".dat", ".ref.dat", ".gp"};

/// A series' name in the legend.
std::string legend(const std::string& title, bool measured) {
  if (measured) return title.empty() ? "measured" : "measured " + title;
  return title.empty() ? "simulated" : title;
}

/// A measured cell as a data file value: the number as written, "-" when empty.
std::string measured_cell(const std::string& cell, const std::string& where) {
  if (cell.empty()) return "-";
  const auto v = util::parse_number(cell);
  if (!v) throw InputError(fmt::format("{}: '{}' is not a number", where, cell));
  return cell;
}

/// A number as a data file value ("{}": the shortest text that reads back the same).
std::string number_cell(const std::optional<double>& v) { return v ? fmt::format("{}", *v) : "-"; }

/// A run's settings as a variant's label reads (sweep.h): its --set values, then platform=.
std::string settings_label(const RealRun& run) {
  std::vector<std::string> words = run.set;
  if (run.platform) words.push_back("platform=" + *run.platform);
  return fmt::format("{}", fmt::join(words, " "));
}

/// The measured series of a run file (sweep_plot.h load_reference_series).
std::vector<PlotSeries> run_file_series(const std::string& path, const std::string& tool,
                                        const std::vector<PlotMetric>& metrics) {
  std::vector<PlotSeries> series;
  auto series_of = [&](const std::string& title) -> PlotSeries& {
    for (auto& s : series)
      if (s.title == title) return s;
    series.push_back({title, {}});
    return series.back();
  };
  for (const RealRun& run : load_run_file(path)) {
    if (run.tool != tool) continue;
    PlotSeries& s = series_of(settings_label(run));
    if (const auto* n = std::get_if<NetperfReading>(&run.output)) {
      if (n->send_message_bytes <= 0) continue;  // -v 0: no size printed
      std::vector<std::string> cells;
      for (const auto& m : metrics) {
        if (m.column == "throughput_mbps") cells.push_back(number_cell(n->throughput_mbps));
        else if (m.column == "sd_local_us_per_kb") cells.push_back(number_cell(n->sd_local_us_per_kb));
        else if (m.column == "sd_remote_us_per_kb") cells.push_back(number_cell(n->sd_remote_us_per_kb));
        else cells.push_back("-");
      }
      s.points.emplace_back(static_cast<uint64_t>(n->send_message_bytes), std::move(cells));
      continue;
    }
    const auto* table = std::get_if<PerftestReading>(&run.output);
    if (!table) continue;  // a pingpong run: sweep has no pingpong tool
    const auto& p = *table;
    if (p.cycles)
      throw InputError(fmt::format("--reference {}:{}: the output is in CPU cycles (perftest -C), not us", path, run.line));
    for (const LatencyRow& row : p.latency) {
      std::vector<std::string> cells;
      for (const auto& m : metrics) cells.push_back(m.column == "t_typical_us" ? number_cell(row.t_typical) : "-");
      s.points.emplace_back(row.bytes, std::move(cells));
    }
    for (const BandwidthRow& row : p.bandwidth) {
      std::vector<std::string> cells;
      for (const auto& m : metrics)
        cells.push_back(m.column == "bw_avg_gbit_s" ? number_cell(row.bw_average_gbit_s)
                        : m.column == "msg_rate_mpps" ? number_cell(row.msg_rate_mpps)
                                                       : "-");
      s.points.emplace_back(row.bytes, std::move(cells));
    }
  }
  series.erase(std::remove_if(series.begin(), series.end(), [](const PlotSeries& s) { return s.points.empty(); }),
               series.end());
  if (series.empty()) throw InputError(fmt::format("--reference {}: no {} run with a message size in it", path, tool));
  return series;
}

/// Whether column `name` of a reference CSV holds a measurement (or a count, a size, a note)
/// rather than what tells its rows' configurations apart.
bool measured_column(const std::string& name) {
  static const char* const kUnitSuffixes[] = {"_bytes", "_s", "_us", "_pct", "_mbps", "_us_per_kb", "_mpps"};
  for (const char* suffix : kUnitSuffixes) {
    const std::string_view sv(suffix);
    if (name.size() > sv.size() && name.compare(name.size() - sv.size(), sv.size(), sv) == 0) return true;
  }
  return name == "bytes" || name == "iterations" || name == "run" || name == "note" || name == "netperf_size_flag";
}

/// The columns naming a reference CSV's series: its configuration columns (not measured_column),
/// less those that are the same in every row and those that only repeat an earlier one's
/// partition of the rows (seed 000's sdp_zcopy_thresh, one-to-one with its mode).
std::vector<int> label_columns(const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                               int size_col) {
  auto cell = [&](size_t r, size_t c) { return c < rows[r].size() ? rows[r][c] : std::string(); };
  std::vector<int> kept;
  for (size_t c = 0; c < header.size(); ++c) {
    if (static_cast<int>(c) == size_col || measured_column(header[c])) continue;
    bool constant = true;
    for (size_t r = 2; r < rows.size(); ++r) constant = constant && cell(r, c) == cell(1, c);
    if (constant) continue;
    bool repeats = false;
    for (int k : kept) {
      std::map<std::string, std::string> forward, backward;
      bool one_to_one = true;
      for (size_t r = 1; r < rows.size() && one_to_one; ++r) {
        const auto [f, f_new] = forward.emplace(cell(r, k), cell(r, c));
        const auto [b, b_new] = backward.emplace(cell(r, c), cell(r, k));
        one_to_one = (f_new || f->second == cell(r, c)) && (b_new || b->second == cell(r, k));
      }
      repeats = repeats || one_to_one;
    }
    if (!repeats) kept.push_back(static_cast<int>(c));
  }
  return kept;
}

/// The measured series of a reference CSV (sweep_plot.h load_reference_series).
std::vector<PlotSeries> csv_series(const std::string& path, const std::vector<PlotMetric>& metrics) {
  const std::string where = "--reference " + path;
  std::vector<size_t> lines;
  const auto rows = util::parse_csv(util::read_text(path, where), where, &lines);
  if (rows.size() < 2) throw InputError(fmt::format("{}: no data row", where));
  const auto& header = rows.front();
  auto col = [&](const std::string& name) {
    const auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? -1 : static_cast<int>(it - header.begin());
  };
  int size_col = col("send_size_bytes");
  if (size_col < 0) size_col = col("bytes");
  if (size_col < 0) throw InputError(fmt::format("{}: no size column (send_size_bytes or bytes)", where));
  const std::vector<int> label_cols = label_columns(header, rows, size_col);
  std::vector<int> metric_cols;
  for (const auto& m : metrics) {
    int c = col(m.column);
    if (c < 0 && m.column == "bw_avg_gbit_s") c = col("bw_average_gbit_s");
    metric_cols.push_back(c);
  }
  std::vector<PlotSeries> series;
  for (size_t r = 1; r < rows.size(); ++r) {
    const auto& row = rows[r];
    auto cell = [&](int c) { return c >= 0 && static_cast<size_t>(c) < row.size() ? row[c] : std::string(); };
    const std::string at = fmt::format("{}:{}", where, lines[r]);
    const std::string size_text = cell(size_col);
    const auto size = util::parse_number(size_text);
    if (!size || *size < 1 || *size != static_cast<double>(static_cast<uint64_t>(*size)))
      throw InputError(fmt::format("{}: size '{}' is not a whole number of bytes", at, size_text));
    std::string title;
    for (int c : label_cols) {
      if (cell(c).empty()) continue;
      const bool named = header[c] != "table" && header[c] != "mode";
      if (!title.empty()) title += ' ';
      if (named) title += header[c] + '=';
      title += cell(c);
    }
    auto it = std::find_if(series.begin(), series.end(), [&](const PlotSeries& s) { return s.title == title; });
    if (it == series.end()) it = series.insert(series.end(), PlotSeries{title, {}});
    std::vector<std::string> cells;
    for (int c : metric_cols) cells.push_back(measured_cell(cell(c), at));
    it->points.emplace_back(static_cast<uint64_t>(*size), std::move(cells));
  }
  return series;
}

/// A directory made next to `prefix`, removed with its contents unless released.
struct TempBeside {
  fs::path path;
  bool keep = false;
  ~TempBeside() {
    std::error_code ec;
    if (!keep && !path.empty()) fs::remove_all(path, ec);
  }
};

}  // namespace

std::string format_plot_data(const SweepPlotSpec& spec, const std::vector<PlotSeries>& series,
                             const std::string& what) {
  std::string out = fmt::format("# {}\n# {} points; columns: message size (B)", spec.title, what);
  for (const auto& m : spec.metrics) out += ", " + m.column;
  out += "; '-' = none\n# one block per series, in this order (gnuplot index 0, 1, ...)\n";
  for (size_t i = 0; i < series.size(); ++i) {
    out += fmt::format("{}# index {}: {}\n", i ? "\n\n" : "", i, legend(series[i].title, what == "measured"));
    auto points = series[i].points;
    std::stable_sort(points.begin(), points.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [size, cells] : points) {
      out += std::to_string(size);
      for (const auto& c : cells) out += " " + c;
      out += "\n";
    }
  }
  return out;
}

std::string format_plot_script(const SweepPlotSpec& spec, const std::string& png, const std::string& svg,
                               const std::string& data_file, const std::string& reference_file) {
  std::set<uint64_t> sizes;
  for (const auto* list : {&spec.simulated, &spec.measured})
    for (const auto& s : *list)
      for (const auto& p : s.points) sizes.insert(p.first);
  const size_t panels = spec.panels.size();
  const size_t height = 120 + 380 * panels;
  std::string body = fmt::format("set multiplot layout {},1 title {}\n", panels, gp_dquote(spec.title));
  body += "set logscale x 2\nset grid\nset key outside right top\nset datafile missing '-'\n";
  body += "set lmargin 10\nset rmargin at screen 0.66\n";  // the panels' axes aligned, whatever their keys
  body += "set xlabel 'message size (B)'\n";
  if (!sizes.empty()) {
    body += fmt::format("set xrange [{}:{}]\n", static_cast<double>(*sizes.begin()) / 1.5,
                        static_cast<double>(*sizes.rbegin()) * 1.5);
    body += size_tics(sizes);
    if (sizes.size() > 12) body += "set xtics rotate by 45 right\n";
  }
  body += "set yrange [0:*]\n";
  // A measured series named as a variant takes the variant's colour.
  auto measured_colour = [&](size_t k) {
    for (size_t v = 0; v < spec.simulated.size(); ++v)
      if (spec.simulated[v].title == spec.measured[k].title) return plot_colour(v);
    return plot_colour(spec.simulated.size() + k);
  };
  for (size_t panel = 0; panel < panels; ++panel) {
    body += fmt::format("set ylabel {}\n", gp_quote(spec.panels[panel]));
    std::vector<std::string> items;
    for (size_t m = 0; m < spec.metrics.size(); ++m) {
      const PlotMetric& metric = spec.metrics[m];
      if (metric.panel != panel) continue;
      const std::string suffix = metric.title.empty() ? "" : " (" + metric.title + ")";
      for (size_t v = 0; v < spec.simulated.size(); ++v)
        items.push_back(fmt::format("{} index {} using 1:{} with linespoints lw 2 pt 6 ps 1 {}lc rgb '{}' title {}",
                                    gp_quote(data_file), v, m + 2, metric.dashed ? "dt 2 " : "", plot_colour(v),
                                    gp_quote(legend(spec.simulated[v].title, false) + suffix)));
      for (size_t k = 0; k < spec.measured.size(); ++k)
        items.push_back(fmt::format("{} index {} using 1:{} with points pt {} ps 1.6 lc rgb '{}' title {}",
                                    gp_quote(reference_file), k, m + 2, metric.dashed ? 5 : 7, measured_colour(k),
                                    gp_quote(legend(spec.measured[k].title, true) + suffix)));
    }
    std::string joined;
    for (const auto& item : items) joined += (joined.empty() ? "  " : ", \\\n  ") + item;
    body += "plot \\\n" + joined + "\n";
  }
  body += "unset multiplot\n";
  std::string gp = fmt::format("# The plot of `{}`: run in this directory (gnuplot {}).\n", spec.title,
                               fs::path(png).replace_extension(".gp").filename().string());
  gp += fmt::format("set terminal pngcairo noenhanced font 'sans,10' size 1000,{}\nset output {}\n", height, gp_quote(png));
  gp += body;
  gp += fmt::format("set terminal svg noenhanced font 'sans,10' size 1000,{}\nset output {}\n", height, gp_quote(svg));
  gp += body;
  gp += "set output\n";
  return gp;
}

std::vector<PlotSeries> load_reference_series(const std::string& path, const std::string& tool,
                                              const std::vector<PlotMetric>& metrics) {
  const std::string ext = fs::path(path).extension().string();
  if (ext == ".csv" || ext == ".CSV") return csv_series(path, metrics);
  try {
    return run_file_series(path, tool, metrics);
  } catch (const InputError& e) {
    const std::string message = e.what();
    if (message.rfind("--reference ", 0) == 0) throw;
    throw InputError("--reference " + message);
  }
}

std::vector<std::string> plot_files(const std::string& prefix) {
  std::vector<std::string> files;
  for (const char* suffix : kSuffixes) files.push_back(prefix + suffix);
  return files;
}

void check_plot_prefix(const std::string& prefix) {
  if (prefix.empty() || prefix.back() == '/') throw InputError(fmt::format("--plot {}: give a file name prefix", prefix));
  for (const char* suffix : kSuffixes) {
    if (util::is_stdout_path(prefix + suffix)) throw InputError(fmt::format("--plot {}: not a file", prefix));
    util::check_output_path(prefix + suffix, "--plot");
  }
}

void write_sweep_plot(const std::string& prefix, const SweepPlotSpec& spec, const std::string& gnuplot) {
  const fs::path target(prefix);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const std::string stem = target.filename().string();
  TempBeside tmp;
  std::string pattern = (dir / (stem + ".tmp-XXXXXX")).string();
  if (!::mkdtemp(pattern.data()))
    throw InputError(fmt::format("--plot {}: cannot write ({})", prefix, std::strerror(errno)));
  tmp.path = pattern;

  std::vector<std::pair<std::string, std::string>> files = {
      {".dat", format_plot_data(spec, spec.simulated, "simulated")}};
  if (!spec.measured.empty()) files.emplace_back(".ref.dat", format_plot_data(spec, spec.measured, "measured"));
  files.emplace_back(".gp", format_plot_script(spec, stem + ".png", stem + ".svg", stem + ".dat", stem + ".ref.dat"));
  for (const auto& [suffix, content] : files) {
    std::ofstream out(tmp.path / (stem + suffix), std::ios::binary);
    out << content;
    out.close();
    if (!out) throw InputError(fmt::format("--plot {}: cannot write {} ({})", prefix, stem + suffix, std::strerror(errno)));
  }
  ProgramResult gp;
  try {
    gp = run_program({gnuplot, stem + ".gp"}, tmp.path.string());
  } catch (const InputError& e) {
    throw InputError(fmt::format("--plot {}: {}", prefix, e.what()));
  }
  if (!WIFEXITED(gp.status) || WEXITSTATUS(gp.status) != 0)
    throw InputError(fmt::format("--plot {}: gnuplot failed ({}): {}", prefix, describe_status(gp.status),
                                 gnuplot_last_line(gp.errors)));
  for (const char* image : {".png", ".svg"}) {
    std::error_code ec;
    const fs::path made = tmp.path / (stem + image);
    if (!fs::is_regular_file(made, ec) || fs::file_size(made, ec) == 0)
      throw InputError(fmt::format("--plot {}: gnuplot made no {} ({})", prefix, stem + image, gnuplot_last_line(gp.errors)));
  }
  files.emplace_back(".png", "");
  files.emplace_back(".svg", "");
  // mkstemp-like files are 0600; the outputs are made as any file the user writes.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  for (const auto& [suffix, content] : files) {
    const fs::path from = tmp.path / (stem + suffix), to = dir / (stem + suffix);
    ::chmod(from.c_str(), 0666 & ~mask);
    if (std::rename(from.c_str(), to.c_str()) != 0)
      throw InputError(fmt::format("--plot {}: cannot write {} ({})", prefix, to.string(), std::strerror(errno)));
  }
  // A reference file of an earlier plot with the same prefix would no longer match its script.
  if (spec.measured.empty()) {
    std::error_code ec;
    fs::remove(dir / (stem + ".ref.dat"), ec);
  }
}

}  // namespace hcasim::scenarios
