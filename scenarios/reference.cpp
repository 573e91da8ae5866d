// Reference and result CSVs (reference.h).
#include "scenarios/reference.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <tuple>
#include <utility>

#include <fmt/format.h>

#include "scenarios/datadir.h"
#include "util/csv.h"
#include "util/input_file.h"
#include "util/number.h"

namespace hcasim::scenarios {

namespace {

namespace fs = std::filesystem;

using util::parse_csv;

/// Index of `name` in a CSV header, or -1.
int column(const std::vector<std::string>& header, std::string_view name) {
  const auto it = std::find(header.begin(), header.end(), name);
  return it == header.end() ? -1 : static_cast<int>(it - header.begin());
}

std::optional<double> number_cell(const std::vector<std::string>& header,
                                  const std::vector<std::string>& row, std::string_view name,
                                  const std::string& origin) {
  const int c = column(header, name);
  if (c < 0 || static_cast<size_t>(c) >= row.size() || row[static_cast<size_t>(c)].empty())
    return std::nullopt;
  const std::string& text = row[static_cast<size_t>(c)];
  const auto v = util::parse_number(text);
  if (!v) throw InputError(fmt::format("{}: column {}: '{}' is not a number", origin, name, text));
  return v;
}

/// A non-negative integer cell (a message size); InputError "ORIGIN: column NAME: 'X' is not
/// a whole number" otherwise, also when the cell is empty.
uint64_t whole_number_cell(const std::vector<std::string>& header,
                           const std::vector<std::string>& row, std::string_view name,
                           const std::string& origin) {
  const int c = column(header, name);
  if (c < 0) throw InputError(fmt::format("{}: no column '{}'", origin, name));
  const std::string text = static_cast<size_t>(c) < row.size() ? row[static_cast<size_t>(c)] : "";
  const auto v = util::parse_number(text);
  if (!v || *v < 0 || *v != std::floor(*v) || *v > 9007199254740992.0)  // 2^53
    throw InputError(fmt::format("{}: column {}: '{}' is not a whole number", origin, name, text));
  return static_cast<uint64_t>(*v);
}

/// The header and the one row of CSV text that `spec.match` selects. Throws InputError
/// "ORIGIN: ..." when the file is empty, a match column is missing, or the match selects no
/// row or more than one.
struct SelectedRow {
  std::vector<std::string> header, row;
  std::string where;  ///< "ORIGIN:LINE" of the row, for the errors about its cells
};

SelectedRow select_row(std::string_view csv_text, const std::string& origin, const ReferenceSpec& spec) {
  std::vector<size_t> lines;
  auto rows = parse_csv(csv_text, origin, &lines);
  if (rows.empty()) throw InputError(origin + ": empty file");
  const auto& header = rows.front();
  // A column named twice: the match and the figures would read only the first.
  for (size_t c = 0; c < header.size(); ++c)
    if (std::find(header.begin(), header.begin() + static_cast<std::ptrdiff_t>(c), header[c]) !=
        header.begin() + static_cast<std::ptrdiff_t>(c))
      throw InputError(fmt::format("{}:{}: column '{}' twice", origin, lines[0], header[c]));
  // A row with fewer or more cells than the header is a damaged file, not unmeasured columns.
  for (size_t r = 1; r < rows.size(); ++r)
    if (rows[r].size() != header.size())
      throw InputError(fmt::format("{}:{}: {} fields, the header has {}", origin, lines[r], rows[r].size(),
                                   header.size()));
  std::vector<std::pair<size_t, std::string>> wanted;
  std::string described;
  for (const auto& [name, value] : spec.match) {
    const int c = column(header, name);
    if (c < 0) throw InputError(fmt::format("{}: no column '{}'", origin, name));
    wanted.emplace_back(static_cast<size_t>(c), value);
    described += fmt::format("{}{}={}", described.empty() ? "" : ", ", name, value);
  }
  size_t found = 0, count = 0;
  for (size_t r = 1; r < rows.size(); ++r) {
    const auto& row = rows[r];
    const bool ok = std::all_of(wanted.begin(), wanted.end(), [&](const auto& w) {
      return w.first < row.size() && row[w.first] == w.second;
    });
    if (ok) {
      found = r;
      ++count;
    }
  }
  if (count != 1)
    throw InputError(fmt::format("{}: match {{{}}} selects {} rows (must select exactly one)",
                                 origin, described, count));
  return {std::move(rows.front()), std::move(rows[found]), fmt::format("{}:{}", origin, lines[found])};
}

}  // namespace

fs::path reference_path(const ReferenceSpec& spec, const std::string& base_dir) {
  return fs::path(spec.file).is_absolute() ? fs::path(spec.file) : fs::path(base_dir) / spec.file;
}

namespace {
/// The netperf figures of one CSV row (reference or simulated: the same column names).
Figures netperf_row_figures(const std::vector<std::string>& header, const std::vector<std::string>& row,
                            const std::string& origin) {
  Figures f;
  f.throughput_mbps = number_cell(header, row, "throughput_mbps", origin);
  f.sd_local = number_cell(header, row, "sd_local_us_per_kb", origin);
  f.sd_remote = number_cell(header, row, "sd_remote_us_per_kb", origin);
  f.util_local = number_cell(header, row, "util_local_pct", origin);
  f.util_remote = number_cell(header, row, "util_remote_pct", origin);
  f.transaction_rate = number_cell(header, row, "transaction_rate_per_s", origin);
  return f;
}

/// The latency figures of one CSV row (reference or simulated: the same column names).
LatencyFigures latency_row_figures(const std::vector<std::string>& header, const std::vector<std::string>& row,
                                   const std::string& origin) {
  LatencyFigures f;
  f.bytes = whole_number_cell(header, row, "bytes", origin);
  f.t_min_us = number_cell(header, row, "t_min_us", origin);
  f.t_max_us = number_cell(header, row, "t_max_us", origin);
  f.t_typical_us = number_cell(header, row, "t_typical_us", origin);
  return f;
}
}  // namespace

/// A measurement is > 0: the comparison divides by it (relative errors) or it is a time.
void check_measured(const std::optional<double>& v, std::string_view column, const std::string& where) {
  if (v && !(*v > 0))
    throw InputError(fmt::format("{}: column {}: measured {} (a measurement must be > 0; leave the cell empty when "
                                 "it was not measured)",
                                 where, column, *v));
}

Figures reference_figures(std::string_view csv_text, const std::string& origin,
                          const ReferenceSpec& spec) {
  const SelectedRow r = select_row(csv_text, origin, spec);
  const Figures f = netperf_row_figures(r.header, r.row, r.where);
  check_measured(f.throughput_mbps, "throughput_mbps", r.where);
  check_measured(f.sd_local, "sd_local_us_per_kb", r.where);
  check_measured(f.sd_remote, "sd_remote_us_per_kb", r.where);
  check_measured(f.util_local, "util_local_pct", r.where);
  check_measured(f.util_remote, "util_remote_pct", r.where);
  // A header without throughput_mbps (a typo) or a row with every figure empty would make a
  // gated point that compares nothing, and passes.
  if (column(r.header, "throughput_mbps") < 0) throw InputError(fmt::format("{}: no column 'throughput_mbps'", origin));
  if (!f.throughput_mbps && !f.sd_local && !f.sd_remote && !f.util_local && !f.util_remote)
    throw InputError(fmt::format("{}: no figure measured (throughput_mbps, sd_*_us_per_kb and util_*_pct are all "
                                 "empty): the point would compare nothing",
                                 r.where));
  return f;
}

Figures read_reference(const ReferenceSpec& spec, const std::string& base_dir) {
  return read_reference_with(spec, base_dir, reference_figures);
}

std::string read_reference_text(const std::string& path) { return util::read_text(path, path); }

namespace {
/// InputError "ORIGIN: no column 'NAME'" unless `header` has column `name`.
void require_column(const std::vector<std::string>& header, std::string_view name, const std::string& origin) {
  if (column(header, name) < 0) throw InputError(fmt::format("{}: no column '{}'", origin, name));
}

/// InputError naming the row when none of `figures` was measured: a point would compare nothing.
void require_some(std::initializer_list<std::optional<double>> figures, std::string_view names,
                  const std::string& where) {
  if (std::none_of(figures.begin(), figures.end(), [](const auto& f) { return f.has_value(); }))
    throw InputError(
        fmt::format("{}: no figure measured ({} are all empty): the point would compare nothing", where, names));
}

/// The row's cells in columns `gated` and `reported` (a perftest or pingpong result's two
/// figures), each checked as check_measured checks it; InputError when both are empty.
std::pair<std::optional<double>, std::optional<double>> two_figures(const SelectedRow& r, std::string_view gated,
                                                                    std::string_view reported) {
  const std::optional<double> a = number_cell(r.header, r.row, gated, r.where),
                              b = number_cell(r.header, r.row, reported, r.where);
  check_measured(a, gated, r.where);
  check_measured(b, reported, r.where);
  require_some({a, b}, fmt::format("{} and {}", gated, reported), r.where);
  return {a, b};
}
}  // namespace

Figures rr_reference_figures(std::string_view csv_text, const std::string& origin, const ReferenceSpec& spec) {
  const SelectedRow r = select_row(csv_text, origin, spec);
  require_column(r.header, "transaction_rate_per_s", origin);
  Figures f;
  const std::pair<std::optional<double>*, const char*> cells[] = {
      {&f.transaction_rate, "transaction_rate_per_s"}, {&f.sd_local, "sd_local_us_per_tr"},
      {&f.sd_remote, "sd_remote_us_per_tr"},           {&f.util_local, "util_local_pct"},
      {&f.util_remote, "util_remote_pct"}};
  for (const auto& [into, name] : cells) {
    *into = number_cell(r.header, r.row, name, r.where);
    check_measured(*into, name, r.where);
  }
  require_some({f.transaction_rate, f.sd_local, f.sd_remote, f.util_local, f.util_remote},
               "transaction_rate_per_s, sd_*_us_per_tr and util_*_pct", r.where);
  return f;
}

BandwidthFigures bandwidth_reference_figures(std::string_view csv_text, const std::string& origin,
                                             const ReferenceSpec& spec) {
  const SelectedRow r = select_row(csv_text, origin, spec);
  require_column(r.header, "bw_avg_gbit_s", origin);
  BandwidthFigures f;
  f.bytes = whole_number_cell(r.header, r.row, "bytes", r.where);
  std::tie(f.bw_average_gbit_s, f.msg_rate_mpps) = two_figures(r, "bw_avg_gbit_s", "msg_rate_mpps");
  return f;
}

PingpongFigures pingpong_reference_figures(std::string_view csv_text, const std::string& origin,
                                           const ReferenceSpec& spec) {
  const SelectedRow r = select_row(csv_text, origin, spec);
  require_column(r.header, "usec_per_iter", origin);
  PingpongFigures f;
  std::tie(f.usec_per_iter, f.mbit_s) = two_figures(r, "usec_per_iter", "mbit_s");
  return f;
}

LatencyFigures latency_reference_figures(std::string_view csv_text, const std::string& origin,
                                         const ReferenceSpec& spec) {
  const SelectedRow r = select_row(csv_text, origin, spec);
  const LatencyFigures f = latency_row_figures(r.header, r.row, r.where);
  check_measured(f.t_min_us, "t_min_us", r.where);
  check_measured(f.t_max_us, "t_max_us", r.where);
  check_measured(f.t_typical_us, "t_typical_us", r.where);
  for (const char* name : {"t_min_us", "t_max_us", "t_typical_us"})
    if (column(r.header, name) < 0) throw InputError(fmt::format("{}: no column '{}'", origin, name));
  if (!f.t_min_us && !f.t_max_us && !f.t_typical_us)
    throw InputError(fmt::format("{}: no figure measured (t_min_us, t_max_us and t_typical_us are all empty): the "
                                 "point would compare nothing",
                                 r.where));
  return f;
}

LatencyFigures read_latency_reference(const ReferenceSpec& spec, const std::string& base_dir) {
  return read_reference_with(spec, base_dir, latency_reference_figures);
}

Figures netperf_csv_figures(std::string_view csv_text, const std::string& origin) {
  const auto rows = parse_csv(csv_text, origin);
  if (rows.size() != 2) throw InputError(origin + ": expected a header and one row");
  return netperf_row_figures(rows[0], rows[1], origin);
}

std::vector<LatencyFigures> latency_csv_rows(std::string_view csv_text, const std::string& origin) {
  const auto rows = parse_csv(csv_text, origin);
  if (rows.empty()) throw InputError(origin + ": empty file");
  const auto& header = rows.front();
  for (const char* name : {"bytes", "t_min_us", "t_max_us", "t_typical_us"})
    if (column(header, name) < 0) throw InputError(fmt::format("{}: no column '{}'", origin, name));
  if (rows.size() < 2) throw InputError(origin + ": no data row");
  std::vector<LatencyFigures> out;
  for (size_t r = 1; r < rows.size(); ++r) out.push_back(latency_row_figures(header, rows[r], origin));
  return out;
}

std::vector<BandwidthFigures> bandwidth_csv_rows(std::string_view csv_text, const std::string& origin) {
  const auto rows = parse_csv(csv_text, origin);
  if (rows.empty()) throw InputError(origin + ": empty file");
  const auto& header = rows.front();
  for (const char* name : {"bytes", "bw_avg_gbit_s", "msg_rate_mpps"})
    if (column(header, name) < 0) throw InputError(fmt::format("{}: no column '{}'", origin, name));
  if (rows.size() < 2) throw InputError(origin + ": no data row");
  std::vector<BandwidthFigures> out;
  for (size_t r = 1; r < rows.size(); ++r)
    out.push_back({whole_number_cell(header, rows[r], "bytes", origin), number_cell(header, rows[r], "bw_avg_gbit_s", origin),
                   number_cell(header, rows[r], "msg_rate_mpps", origin)});
  return out;
}

PingpongFigures pingpong_csv_figures(std::string_view csv_text, const std::string& origin) {
  const auto rows = parse_csv(csv_text, origin);
  if (rows.empty()) throw InputError(origin + ": empty file");
  const auto& header = rows.front();
  for (const char* name : {"size_bytes", "iterations", "mbit_s", "usec_per_iter"})
    if (column(header, name) < 0) throw InputError(fmt::format("{}: no column '{}'", origin, name));
  if (rows.size() != 2) throw InputError(fmt::format("{}: {} data rows, not one", origin, rows.size() - 1));
  return {whole_number_cell(header, rows[1], "size_bytes", origin), whole_number_cell(header, rows[1], "iterations", origin),
          number_cell(header, rows[1], "usec_per_iter", origin), number_cell(header, rows[1], "mbit_s", origin)};
}

std::optional<LatencyFigures> latency_row_for_bytes(const std::vector<LatencyFigures>& rows,
                                                    uint64_t bytes) {
  const auto it = std::find_if(rows.begin(), rows.end(),
                               [&](const LatencyFigures& f) { return f.bytes == bytes; });
  if (it == rows.end()) return std::nullopt;
  return *it;
}

}  // namespace hcasim::scenarios
