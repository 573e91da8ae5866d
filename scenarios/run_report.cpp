// The run report and CSV (run_report.h).
#include "scenarios/run_report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "util/csv.h"
#include "util/statistics.h"

namespace hcasim::scenarios {

namespace {

using util::csv_cell;
using util::median;

// --- report formatting ------------------------------------------------------------------

std::string num(const std::optional<double>& v, int decimals) {
  return v ? fmt::format("{:.{}f}", *v, decimals) : "-";
}

std::string pct(const std::optional<double>& e) {
  return e ? fmt::format("{:+.1f}%", *e * 100.0) : "-";
}

std::string full(const std::optional<double>& v) { return v ? fmt::format("{}", *v) : ""; }

std::string median_max(const std::vector<double>& abs_errors) {
  if (abs_errors.empty()) return "-";
  return fmt::format("{:.1f}% / {:.1f}%", median(abs_errors) * 100.0,
                     *std::max_element(abs_errors.begin(), abs_errors.end()) * 100.0);
}

/// Whether some point of `s` is of `kind`.
bool has_kind(const Scenario& s, PointKind kind) {
  return std::any_of(s.points.begin(), s.points.end(),
                     [&](const ScenarioPoint& p) { return p.kind == kind; });
}

/// Whether some point of `s` is gated.
bool any_gated(const Scenario& s) {
  return std::any_of(s.points.begin(), s.points.end(), [](const ScenarioPoint& p) { return p.gated; });
}

/// The tables of the points of `kind`, in order of first appearance.
std::vector<std::string> tables_of(const Scenario& s, PointKind kind) {
  std::vector<std::string> tables;
  for (const auto& p : s.points)
    if (p.kind == kind && std::find(tables.begin(), tables.end(), p.table) == tables.end())
      tables.push_back(p.table);
  return tables;
}

}  // namespace

std::vector<TableErrors> table_errors(const Scenario& s, const std::vector<PointOutcome>& outcomes, PointKind kind) {
  const bool pooled = kind == PointKind::Bandwidth || kind == PointKind::NetperfRr || kind == PointKind::Pingpong ||
                      !any_gated(s);
  std::vector<TableErrors> tables;
  for (const auto& name : pooled ? std::vector<std::string>{"all runs"} : tables_of(s, kind)) {
    TableErrors t;
    t.table = name;
    auto add = [](std::vector<double>& into, const Metric& m) {
      if (m.error) into.push_back(std::fabs(*m.error));
    };
    for (size_t i = 0; i < s.points.size(); ++i) {
      const auto& p = s.points[i];
      if ((!pooled && p.table != name) || p.kind != kind) continue;
      ++t.points;
      const auto& o = outcomes[i];
      add(t.throughput, o.throughput);
      add(t.transaction_rate, o.transaction_rate);
      add(t.service_demand, o.sd_local);
      add(t.service_demand, o.sd_remote);
      add(t.utilisation, o.util_local);
      add(t.utilisation, o.util_remote);
      add(t.t_typical, o.t_typical);
      add(t.t_min, o.t_min);
      add(t.bw_average, o.bw_average);
      add(t.msg_rate, o.msg_rate);
      add(t.usec_per_iter, o.usec_per_iter);
      add(t.mbit_s, o.mbit_s);
      if (kind == PointKind::Latency && std::find(t.platforms.begin(), t.platforms.end(), p.platform) == t.platforms.end())
        t.platforms.push_back(p.platform);
    }
    tables.push_back(std::move(t));
  }
  return tables;
}

namespace {

/// The rows of a netperf table: the group titles, the column titles and a row per point of
/// `kind`, whose first figure is `first` (throughput or transaction rate) under `first_title` in
/// columns `first_w` wide, then the service demands in `sd_unit`, the utilisations and the status.
/// The mode and size columns are as wide as their longest entry (seed 003's modes, "IPoIB, no
/// FMR, netfilter", are longer than the 7 characters that fit seed 000's "BZCOPY").
std::string netperf_table_rows(const Scenario& s, const std::vector<PointOutcome>& outcomes, PointKind kind,
                               std::string_view first_title, int first_w, Metric PointOutcome::*first,
                               std::string_view sd_unit) {
  size_t mode_w = 7, size_w = 8;
  for (const auto& p : s.points)
    if (p.kind == kind) {
      mode_w = std::max(mode_w, p.mode.size());
      size_w = std::max(size_w, p.size_flag.size());
    }
  const auto lead = [&](std::string_view table, std::string_view mode, std::string_view size) {
    return fmt::format("{:<16} {:<{}} {:<{}} ", table, mode, mode_w, size, size_w);
  };
  const auto figures = [&](auto&&... f) {
    return fmt::format("{:>{}} {:>{}} {:>7}  {:>6} {:>6} {:>7}  {:>6} {:>6} {:>7}  {:>6} {:>6} {:>7}  {:>6} {:>6} {:>7}  {}\n",
                       f...);
  };
  std::string out;
  std::string groups = lead("", "", "") + fmt::format("{:^{}}  {:^21}  {:^21}  {:^21}  {:^21}", first_title,
                                                      2 * first_w + 9, fmt::format("SD local, {}", sd_unit),
                                                      fmt::format("SD remote, {}", sd_unit), "util local, %",
                                                      "util remote, %");
  out += groups.erase(groups.find_last_not_of(' ') + 1) + "\n";
  out += lead("table", "mode", "size") + figures("measured", first_w, "simulated", first_w, "error", "meas", "sim",
                                                 "error", "meas", "sim", "error", "meas", "sim", "error", "meas",
                                                 "sim", "error", "status");
  for (size_t i = 0; i < s.points.size(); ++i) {
    const auto& p = s.points[i];
    const auto& o = outcomes[i];
    if (p.kind != kind) continue;
    const Metric& m = o.*first;
    out += lead(p.table, p.mode, p.size_flag.empty() ? "-" : p.size_flag) +
           figures(num(m.measured, 2), first_w, num(m.simulated, 2), first_w, pct(m.error), num(o.sd_local.measured, 3),
                   num(o.sd_local.simulated, 3), pct(o.sd_local.error), num(o.sd_remote.measured, 3),
                   num(o.sd_remote.simulated, 3), pct(o.sd_remote.error), num(o.util_local.measured, 2),
                   num(o.util_local.simulated, 2), pct(o.util_local.error), num(o.util_remote.measured, 2),
                   num(o.util_remote.simulated, 2), pct(o.util_remote.error), o.status);
  }
  return out;
}

/// The netperf part of the report: a row per netperf point, then per table the median and max
/// |error| (run_report.h format_run_report).
std::string format_netperf_rows(const Scenario& s, const std::vector<PointOutcome>& outcomes) {
  std::string out =
      netperf_table_rows(s, outcomes, PointKind::Netperf, "throughput, Mbit/s", 9, &PointOutcome::throughput, "us/KB");

  // Per table, in order of first appearance.
  constexpr const char* summary = "{:<16} {:>6}  {:<22} {:<26} {}\n";
  out += '\n';
  out += fmt::format(summary, "per table", "points", "|error| throughput", "|error| service demand",
                     "|error| utilisation");
  out += fmt::format(summary, "", "", "median / max", "median / max", "median / max");
  // A scenario without gated points (compare's run files: a table per run) is summed up as one.
  for (const TableErrors& t : table_errors(s, outcomes, PointKind::Netperf))
    out += fmt::format(summary, t.table, t.points, median_max(t.throughput), median_max(t.service_demand),
                       median_max(t.utilisation));
  return out;
}

/// The latency part of the report: its title, a row per latency point, then per table the max
/// |error| of t_typical and t_min and the platforms (run_report.h format_run_report).
std::string format_latency_rows(const Scenario& s, const std::vector<PointOutcome>& outcomes) {
  // perftest prints half the round trip for WRITE and SEND, the whole one for READ and atomics
  // (print_report_lat's rtt_factor).
  std::vector<std::string> half, whole;
  for (const auto& p : s.points) {
    if (p.kind != PointKind::Latency) continue;
    const bool full_trip = p.tool == "ib_read_lat" || p.tool == "ib_atomic_lat";
    auto& tools = full_trip ? whole : half;
    if (std::find(tools.begin(), tools.end(), p.tool) == tools.end()) tools.push_back(p.tool);
  }
  auto joined = [](const std::vector<std::string>& tools) {
    std::string out;
    for (const auto& t : tools) out += (out.empty() ? "" : ", ") + t;
    return out;
  };
  std::string out =
      whole.empty()  ? fmt::format("{} latency: half the round trip, in us", joined(half))
      : half.empty() ? fmt::format("{} latency: the whole round trip, in us", joined(whole))
                     : fmt::format("perftest latency in us: half the round trip ({}), the whole round trip ({})",
                                   joined(half), joined(whole));
  out += "; error = simulated - measured\n";
  constexpr const char* row =
      "{:<16} {:<15} {:>7}  {:>6} {:>6} {:>7}  {:>6} {:>6} {:>7}  {:>8} {:>8}  {}\n";
  std::string groups = fmt::format("{:<16} {:<15} {:>7}  {:^21}  {:^21}  {:^17}", "", "", "",
                                   "t_typical", "t_min", "t_max (not gated)");
  out += groups.erase(groups.find_last_not_of(' ') + 1) + "\n";
  out += fmt::format(row, "table", "mode", "bytes", "meas", "sim", "error", "meas", "sim", "error",
                     "meas", "sim", "status");
  auto err = [](const Metric& m) {
    if (!m.error) return std::string("-");
    // An error that rounds to zero prints as +0.000, never -0.000.
    const double e = std::fabs(*m.error) < 0.0005 ? 0.0 : *m.error;
    return fmt::format("{:+.3f}", e);
  };
  for (size_t i = 0; i < s.points.size(); ++i) {
    const auto& p = s.points[i];
    const auto& o = outcomes[i];
    if (p.kind != PointKind::Latency) continue;
    out += fmt::format(row, p.table, p.mode, o.bytes, num(o.t_typical.measured, 3),
                       num(o.t_typical.simulated, 3), err(o.t_typical), num(o.t_min.measured, 3),
                       num(o.t_min.simulated, 3), err(o.t_min), num(o.t_max.measured, 2),
                       num(o.t_max.simulated, 2), o.status);
  }

  constexpr const char* summary = "{:<16} {:>6}  {:<21}  {:<17}  {}\n";
  out += '\n';
  out += fmt::format(summary, "per table", "points", "max |error| t_typical", "max |error| t_min", "platform");
  auto max_abs = [](const std::vector<double>& v) {
    return v.empty() ? std::string("-")
                     : fmt::format("{:.3f} us", *std::max_element(v.begin(), v.end()));
  };
  for (const TableErrors& t : table_errors(s, outcomes, PointKind::Latency)) {
    std::string platforms;
    for (const auto& name : t.platforms) platforms += (platforms.empty() ? "" : ", ") + name;
    out += fmt::format(summary, t.table, t.points, max_abs(t.t_typical), max_abs(t.t_min), platforms);
  }
  return out;
}

/// One of the two figures of a bandwidth or pingpong table: its group title, the width and
/// decimals of its measured and simulated columns, the outcome's metric and the errors' list.
struct FigureColumn {
  std::string_view title;
  int width;
  int decimals;
  Metric PointOutcome::*metric;
  std::vector<double> TableErrors::*errors;
  std::string_view error_title;  ///< "|error| ..." in the summary
};

/// A table of the points of `kind` with two relative figures (`a`, `b`): `title`, a row per point
/// (table, mode, bytes, each figure's measured, simulated and error, status), then the median
/// and max |error| of both over all runs.
std::string two_figure_rows(const Scenario& s, const std::vector<PointOutcome>& outcomes, PointKind kind,
                            std::string_view title, const FigureColumn& a, const FigureColumn& b) {
  std::string out = std::string(title) + "\n";
  size_t mode_w = 15;
  for (const auto& p : s.points)
    if (p.kind == kind) mode_w = std::max(mode_w, p.mode.size());
  const auto row = [&](auto&&... f) {
    return fmt::format("{:<16} {:<{}} {:>8}  {:>{}} {:>{}} {:>7}  {:>{}} {:>{}} {:>7}  {}\n", f...);
  };
  std::string groups = fmt::format("{:<16} {:<{}} {:>8}  {:^{}}  {:^{}}", "", "", mode_w, "", a.title,
                                   2 * a.width + 9, b.title, 2 * b.width + 9);
  out += groups.erase(groups.find_last_not_of(' ') + 1) + "\n";
  out += row("table", "mode", mode_w, "bytes", "meas", a.width, "sim", a.width, "error", "meas", b.width, "sim",
             b.width, "error", "status");
  for (size_t i = 0; i < s.points.size(); ++i) {
    const auto& p = s.points[i];
    const auto& o = outcomes[i];
    if (p.kind != kind) continue;
    const Metric& ma = o.*a.metric;
    const Metric& mb = o.*b.metric;
    out += row(p.table, p.mode, mode_w, o.bytes, num(ma.measured, a.decimals), a.width, num(ma.simulated, a.decimals),
               a.width, pct(ma.error), num(mb.measured, b.decimals), b.width, num(mb.simulated, b.decimals), b.width,
               pct(mb.error), o.status);
  }
  const TableErrors t = table_errors(s, outcomes, kind).front();
  constexpr const char* summary = "{:<16} {:>6}  {:<22} {}\n";
  out += '\n';
  out += fmt::format(summary, "all runs", "points", a.error_title, b.error_title);
  out += fmt::format(summary, "", "", "median / max", "median / max");
  out += fmt::format(summary, "", t.points, median_max(t.*a.errors), median_max(t.*b.errors));
  return out;
}

/// The bandwidth part of the report (compare's ib_write_bw / ib_send_bw rows): its title, a row
/// per bandwidth point, then the median and max |error| of BW average and message rate.
std::string format_bandwidth_rows(const Scenario& s, const std::vector<PointOutcome>& outcomes) {
  return two_figure_rows(
      s, outcomes, PointKind::Bandwidth,
      "perftest bandwidth: BW average in Gb/s (10^9 bit/s), MsgRate in Mpps; error = (simulated - measured) / measured",
      {"BW average, Gb/s", 7, 2, &PointOutcome::bw_average, &TableErrors::bw_average, "|error| BW average"},
      {"MsgRate, Mpps", 9, 6, &PointOutcome::msg_rate, &TableErrors::msg_rate, "|error| MsgRate"});
}

/// The TCP_RR part of the report (compare's netperf -t TCP_RR runs): its title, a row per point,
/// then the median and max |error| of the transaction rate, service demand and utilisation.
std::string format_rr_rows(const Scenario& s, const std::vector<PointOutcome>& outcomes) {
  std::string out = "netperf TCP_RR: transaction rate in transactions/s, service demand in us/Tr (CPU us per "
                    "transaction); error = (simulated - measured) / measured\n";
  out += netperf_table_rows(s, outcomes, PointKind::NetperfRr, "transactions/s", 10, &PointOutcome::transaction_rate,
                            "us/Tr");
  const TableErrors t = table_errors(s, outcomes, PointKind::NetperfRr).front();
  constexpr const char* summary = "{:<16} {:>6}  {:<25} {:<26} {}\n";
  out += '\n';
  out += fmt::format(summary, "all runs", "points", "|error| transaction rate", "|error| service demand",
                     "|error| utilisation");
  out += fmt::format(summary, "", "", "median / max", "median / max", "median / max");
  out += fmt::format(summary, "", t.points, median_max(t.transaction_rate), median_max(t.service_demand),
                     median_max(t.utilisation));
  return out;
}

/// The pingpong part of the report (compare's ibv_*_pingpong runs): its title, a row per point,
/// then the median and max |error| of usec/iter and Mbit/sec.
std::string format_pingpong_rows(const Scenario& s, const std::vector<PointOutcome>& outcomes) {
  return two_figure_rows(
      s, outcomes, PointKind::Pingpong,
      "rdma-core pingpong: usec/iter (one round trip), Mbit/sec; error = (simulated - measured) / measured",
      {"usec/iter", 9, 2, &PointOutcome::usec_per_iter, &TableErrors::usec_per_iter, "|error| usec/iter"},
      {"Mbit/sec", 9, 2, &PointOutcome::mbit_s, &TableErrors::mbit_s, "|error| Mbit/sec"});
}

}  // namespace

std::string format_run_report(const Scenario& s, const std::vector<PointOutcome>& outcomes) {
  const bool latency = has_kind(s, PointKind::Latency);
  const bool bandwidth = has_kind(s, PointKind::Bandwidth);
  const bool rr = has_kind(s, PointKind::NetperfRr);
  const bool pingpong = has_kind(s, PointKind::Pingpong);
  const bool netperf = has_kind(s, PointKind::Netperf) || (!latency && !bandwidth && !rr && !pingpong);
  // The tolerances of the kinds of point the scenario has, as its file declares them.
  std::vector<std::string> declared;
  if (netperf || rr) {
    declared.push_back(fmt::format("throughput {:.0f}%, service demand {:.0f}%", s.tolerance.throughput * 100.0,
                                   s.tolerance.service_demand * 100.0));
    if (s.tolerance.utilisation > 0) declared.push_back(fmt::format("utilisation {:.0f}%", s.tolerance.utilisation * 100.0));
  } else if (bandwidth) {
    declared.push_back(fmt::format("throughput {:.0f}%", s.tolerance.throughput * 100.0));
  }
  if (latency) declared.push_back(fmt::format("t_typical {} us, t_min {} us", s.tolerance.t_typical_us, s.tolerance.t_min_us));
  if (pingpong) declared.push_back(fmt::format("usec/iter {:.0f}%", s.tolerance.usec_per_iter * 100.0));
  std::string tolerances;
  for (const auto& d : declared) tolerances += (tolerances.empty() ? "" : ", ") + d;
  const bool none_gated = !any_gated(s);
  if (none_gated) tolerances = "none (not gated)";
  std::string out =
      fmt::format("scenario {}: platform {}; tolerance: {}\n", s.name, s.platform, tolerances);
  if (!s.source.empty()) out += fmt::format("measured: {}\n", s.source);
  if (netperf) out += '\n' + format_netperf_rows(s, outcomes);
  if (rr) out += '\n' + format_rr_rows(s, outcomes);
  if (latency) out += '\n' + format_latency_rows(s, outcomes);
  if (bandwidth) out += '\n' + format_bandwidth_rows(s, outcomes);
  if (pingpong) out += '\n' + format_pingpong_rows(s, outcomes);

  // Verdict.
  size_t gated = 0;
  std::vector<std::string> failures;
  for (size_t i = 0; i < s.points.size(); ++i) {
    const auto& p = s.points[i];
    const auto& o = outcomes[i];
    if (!p.gated) continue;
    ++gated;
    if (o.status != "FAIL") continue;
    std::vector<std::string> why;
    auto explain = [&](const Metric& m, const char* name, double tol) {
      if (m.within) return;
      why.push_back(m.error ? fmt::format("{} {} beyond {:.0f}%", name, pct(m.error), tol * 100.0)
                            : fmt::format("{} not simulated", name));
    };
    auto explain_us = [&](const Metric& m, const char* name, double tol) {
      if (m.within) return;
      why.push_back(m.error ? fmt::format("{} {:+.3f} us beyond {} us", name, *m.error, tol)
                            : fmt::format("{} not simulated", name));
    };
    if (p.kind == PointKind::Latency) {
      explain_us(o.t_typical, "t_typical", s.tolerance.t_typical_us);
      explain_us(o.t_min, "t_min", s.tolerance.t_min_us);
    } else if (p.kind == PointKind::Bandwidth) {
      explain(o.bw_average, "BW average", s.tolerance.throughput);
    } else if (p.kind == PointKind::Pingpong) {
      explain(o.usec_per_iter, "usec/iter", s.tolerance.usec_per_iter);
    } else if (p.kind == PointKind::NetperfRr) {
      explain(o.transaction_rate, "transaction rate", s.tolerance.throughput);
      explain(o.sd_local, "SD local", s.tolerance.service_demand);
      explain(o.sd_remote, "SD remote", s.tolerance.service_demand);
      explain(o.util_local, "util local", s.tolerance.utilisation);
      explain(o.util_remote, "util remote", s.tolerance.utilisation);
    } else {
      explain(o.throughput, "throughput", s.tolerance.throughput);
      explain(o.sd_local, "SD local", s.tolerance.service_demand);
      explain(o.sd_remote, "SD remote", s.tolerance.service_demand);
      explain(o.util_local, "util local", s.tolerance.utilisation);
      explain(o.util_remote, "util remote", s.tolerance.utilisation);
    }
    std::string joined;
    for (const auto& w : why) joined += (joined.empty() ? "" : ", ") + w;
    failures.push_back(fmt::format("  {} ({})", point_label(p, o.bytes), joined));
  }
  out += "\n";
  if (none_gated) {
    out += fmt::format("compared: {} points, none gated\n", s.points.size());
  } else if (failures.empty()) {
    out += fmt::format("ok: all {} gated points within tolerance\n", gated);
  } else {
    out += fmt::format("FAIL: {} of {} gated points out of tolerance:\n", failures.size(), gated);
    for (const auto& f : failures) out += f + "\n";
  }
  return out;
}

std::string run_csv_header(const CsvColumns& columns) {
  std::string header =
      "scenario,table,mode,size_flag,command,gated,meas_throughput_mbps,sim_throughput_mbps,"
      "err_throughput_pct,meas_sd_local,sim_sd_local,err_sd_local_pct,meas_sd_remote,"
      "sim_sd_remote,err_sd_remote_pct,meas_util_local_pct,sim_util_local_pct,err_util_local_pct,"
      "meas_util_remote_pct,sim_util_remote_pct,err_util_remote_pct,status";
  if (columns.latency)
    header += ",bytes,meas_t_typical_us,sim_t_typical_us,err_t_typical_us,meas_t_min_us,"
              "sim_t_min_us,err_t_min_us,meas_t_max_us,sim_t_max_us";
  if (columns.bandwidth)
    header += ",bw_bytes,meas_bw_avg_gbit_s,sim_bw_avg_gbit_s,err_bw_avg_pct,meas_msg_rate_mpps,"
              "sim_msg_rate_mpps,err_msg_rate_pct";
  if (columns.rr)
    header += ",meas_transaction_rate_per_s,sim_transaction_rate_per_s,err_transaction_rate_pct,"
              "meas_sd_local_us_per_tr,sim_sd_local_us_per_tr,err_sd_local_us_per_tr_pct,meas_sd_remote_us_per_tr,"
              "sim_sd_remote_us_per_tr,err_sd_remote_us_per_tr_pct";
  if (columns.pingpong)
    header += ",pp_bytes,meas_usec_per_iter,sim_usec_per_iter,err_usec_per_iter_pct,meas_mbit_s,sim_mbit_s,"
              "err_mbit_s_pct";
  return header;
}

std::string format_run_csv(const Scenario& s, const std::vector<PointOutcome>& outcomes, const CsvColumns& columns) {
  const CsvColumns c{.latency = columns.latency || has_kind(s, PointKind::Latency),
                     .bandwidth = columns.bandwidth || has_kind(s, PointKind::Bandwidth),
                     .rr = columns.rr || has_kind(s, PointKind::NetperfRr),
                     .pingpong = columns.pingpong || has_kind(s, PointKind::Pingpong)};
  std::string out = run_csv_header(c) + "\n";
  auto err_pct = [](const Metric& m) {
    return m.error ? fmt::format("{:.4f}", *m.error * 100.0) : std::string();
  };
  auto err_us = [](const Metric& m) {
    return m.error ? fmt::format("{:.4f}", *m.error) : std::string();
  };
  for (size_t i = 0; i < s.points.size(); ++i) {
    const auto& p = s.points[i];
    const auto& o = outcomes[i];
    // A TCP_RR point's service demands are per transaction: its own columns, not the us/KB ones.
    const bool is_rr = p.kind == PointKind::NetperfRr;
    const Metric none;
    const Metric& sd_local_kb = is_rr ? none : o.sd_local;
    const Metric& sd_remote_kb = is_rr ? none : o.sd_remote;
    out += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                       csv_cell(s.name), csv_cell(p.table), csv_cell(p.mode),
                       csv_cell(p.size_flag), csv_cell(p.command), p.gated ? "true" : "false",
                       full(o.throughput.measured), full(o.throughput.simulated),
                       err_pct(o.throughput), full(sd_local_kb.measured),
                       full(sd_local_kb.simulated), err_pct(sd_local_kb),
                       full(sd_remote_kb.measured), full(sd_remote_kb.simulated),
                       err_pct(sd_remote_kb), full(o.util_local.measured),
                       full(o.util_local.simulated), err_pct(o.util_local),
                       full(o.util_remote.measured), full(o.util_remote.simulated),
                       err_pct(o.util_remote), csv_cell(o.status));
    if (c.latency) {
      out += fmt::format(",{},{},{},{},{},{},{},{},{}",
                         p.kind == PointKind::Latency ? std::to_string(o.bytes) : "",
                         full(o.t_typical.measured), full(o.t_typical.simulated),
                         err_us(o.t_typical), full(o.t_min.measured), full(o.t_min.simulated),
                         err_us(o.t_min), full(o.t_max.measured), full(o.t_max.simulated));
    }
    if (c.bandwidth) {
      out += fmt::format(",{},{},{},{},{},{},{}", p.kind == PointKind::Bandwidth ? std::to_string(o.bytes) : "",
                         full(o.bw_average.measured), full(o.bw_average.simulated), err_pct(o.bw_average),
                         full(o.msg_rate.measured), full(o.msg_rate.simulated), err_pct(o.msg_rate));
    }
    if (c.rr) {
      const Metric& sd_local_tr = is_rr ? o.sd_local : none;
      const Metric& sd_remote_tr = is_rr ? o.sd_remote : none;
      out += fmt::format(",{},{},{},{},{},{},{},{},{}", full(o.transaction_rate.measured),
                         full(o.transaction_rate.simulated), err_pct(o.transaction_rate), full(sd_local_tr.measured),
                         full(sd_local_tr.simulated), err_pct(sd_local_tr), full(sd_remote_tr.measured),
                         full(sd_remote_tr.simulated), err_pct(sd_remote_tr));
    }
    if (c.pingpong) {
      out += fmt::format(",{},{},{},{},{},{},{}", p.kind == PointKind::Pingpong ? std::to_string(o.bytes) : "",
                         full(o.usec_per_iter.measured), full(o.usec_per_iter.simulated), err_pct(o.usec_per_iter),
                         full(o.mbit_s.measured), full(o.mbit_s.simulated), err_pct(o.mbit_s));
    }
    out += "\n";
  }
  return out;
}

std::string safe_file_name(const std::string& name) {
  std::string safe = name;
  for (char& ch : safe)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_' && ch != '.') ch = '_';
  if (safe.empty() || safe[0] == '.') safe.insert(0, "scenario");
  return safe;
}

}  // namespace hcasim::scenarios
