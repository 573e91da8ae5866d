// `--json` of run, compare and validate (json_report.h); schema in docs/cli.md "--json".
#include "scenarios/json_report.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include "scenarios/run_report.h"
#include "util/statistics.h"

namespace hcasim::scenarios {

namespace {

using frontends::Json;

Json value_or_null(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

/// A relative error in % (x 100, as the run CSV's err_*_pct before its 4 decimals), or null.
Json pct_or_null(const std::optional<double>& e) { return e ? Json(*e * 100.0) : Json(nullptr); }

/// One compared quantity: relative (`relative`, error in %) or absolute (latency, in us).
/// "within" is the gate's verdict, so null where nothing is gated: a point that is not gated, a
/// quantity not measured, or one never gated (`gated` false: t_max, the message rate).
Json metric_json(const Metric& m, bool relative, bool gated) {
  Json j;
  j["measured"] = value_or_null(m.measured);
  j["simulated"] = value_or_null(m.simulated);
  if (relative)
    j["error_pct"] = pct_or_null(m.error);
  else
    j["error_us"] = value_or_null(m.error);
  j["within"] = gated && m.measured ? Json(m.within) : Json(nullptr);
  return j;
}

/// {"median", "max"} of |errors| x `scale`, or null when there is none (the text's "-").
Json median_max_json(const std::vector<double>& abs_errors, double scale) {
  if (abs_errors.empty()) return nullptr;
  return {{"median", util::median(abs_errors) * scale},
          {"max", *std::max_element(abs_errors.begin(), abs_errors.end()) * scale}};
}

bool has_kind(const Scenario& s, PointKind kind) {
  return std::any_of(s.points.begin(), s.points.end(), [&](const ScenarioPoint& p) { return p.kind == kind; });
}

/// The tolerances as the scenario file declares them (relative, 0.15 = 15 %, or in us); null
/// when not declared.
Json tolerance_json(const Tolerance& t) {
  auto declared = [](double v) { return v > 0 ? Json(v) : Json(nullptr); };
  Json j;
  j["throughput_relative"] = declared(t.throughput);
  j["service_demand_relative"] = declared(t.service_demand);
  j["utilisation_relative"] = declared(t.utilisation);
  j["t_typical_us"] = declared(t.t_typical_us);
  j["t_min_us"] = declared(t.t_min_us);
  return j;
}

}  // namespace

Json scenario_report_json(const Scenario& s, const std::vector<PointOutcome>& outcomes) {
  Json doc;
  doc["name"] = s.name;
  doc["platform"] = s.platform;
  doc["remote_platform"] = s.remote_platform.empty() ? Json(nullptr) : Json(s.remote_platform);
  doc["source"] = s.source;
  doc["gated"] = std::any_of(s.points.begin(), s.points.end(), [](const ScenarioPoint& p) { return p.gated; });
  doc["tolerance"] = tolerance_json(s.tolerance);

  Json points = Json::array();
  for (size_t i = 0; i < s.points.size(); ++i) {
    const ScenarioPoint& p = s.points[i];
    const PointOutcome& o = outcomes.at(i);
    Json j;
    j["table"] = p.table;
    j["mode"] = p.mode;
    j["size_flag"] = p.size_flag;
    j["command"] = p.command;
    j["kind"] = point_kind_name(p.kind);
    j["gated"] = p.gated;
    j["status"] = o.status;
    switch (p.kind) {
      case PointKind::Netperf:
        j["throughput_mbit_s"] = metric_json(o.throughput, true, p.gated);
        j["service_demand_local_us_per_kb"] = metric_json(o.sd_local, true, p.gated);
        j["service_demand_remote_us_per_kb"] = metric_json(o.sd_remote, true, p.gated);
        j["util_local_pct"] = metric_json(o.util_local, true, p.gated);
        j["util_remote_pct"] = metric_json(o.util_remote, true, p.gated);
        break;
      case PointKind::NetperfRr:
        j["transaction_rate_per_s"] = metric_json(o.transaction_rate, true, p.gated);
        j["service_demand_local_us_per_tr"] = metric_json(o.sd_local, true, p.gated);
        j["service_demand_remote_us_per_tr"] = metric_json(o.sd_remote, true, p.gated);
        j["util_local_pct"] = metric_json(o.util_local, true, p.gated);
        j["util_remote_pct"] = metric_json(o.util_remote, true, p.gated);
        break;
      case PointKind::Latency:
        j["bytes"] = o.bytes;
        j["t_typical_us"] = metric_json(o.t_typical, false, p.gated);
        j["t_min_us"] = metric_json(o.t_min, false, p.gated);
        j["t_max_us"] = metric_json(o.t_max, false, false);
        break;
      case PointKind::Bandwidth:
        j["bytes"] = o.bytes;
        j["bw_average_gbit_s"] = metric_json(o.bw_average, true, p.gated);
        j["msg_rate_mpps"] = metric_json(o.msg_rate, true, false);
        break;
      case PointKind::Pingpong:
        j["bytes"] = o.bytes;
        j["usec_per_iter"] = metric_json(o.usec_per_iter, true, p.gated);
        j["mbit_s"] = metric_json(o.mbit_s, true, false);
        break;
    }
    points.push_back(std::move(j));
  }
  doc["points"] = std::move(points);

  // The per-table lines of format_run_report, for the kinds of point the scenario has.
  Json tables;
  const bool latency = has_kind(s, PointKind::Latency), bandwidth = has_kind(s, PointKind::Bandwidth);
  const bool rr = has_kind(s, PointKind::NetperfRr), pingpong = has_kind(s, PointKind::Pingpong);
  if (has_kind(s, PointKind::Netperf) || (!latency && !bandwidth && !rr && !pingpong)) {
    Json rows = Json::array();
    for (const TableErrors& t : table_errors(s, outcomes, PointKind::Netperf))
      rows.push_back({{"table", t.table},
                      {"points", t.points},
                      {"throughput_abs_error_pct", median_max_json(t.throughput, 100.0)},
                      {"service_demand_abs_error_pct", median_max_json(t.service_demand, 100.0)},
                      {"utilisation_abs_error_pct", median_max_json(t.utilisation, 100.0)}});
    tables["netperf"] = std::move(rows);
  }
  if (latency) {
    Json rows = Json::array();
    auto max_abs = [](const std::vector<double>& v) {
      return v.empty() ? Json(nullptr) : Json(*std::max_element(v.begin(), v.end()));
    };
    for (const TableErrors& t : table_errors(s, outcomes, PointKind::Latency))
      rows.push_back({{"table", t.table},
                      {"points", t.points},
                      {"t_typical_max_abs_error_us", max_abs(t.t_typical)},
                      {"t_min_max_abs_error_us", max_abs(t.t_min)},
                      {"platforms", t.platforms}});
    tables["latency"] = std::move(rows);
  }
  if (bandwidth) {
    const TableErrors t = table_errors(s, outcomes, PointKind::Bandwidth).front();
    tables["bandwidth"] = Json::array({{{"table", t.table},
                                        {"points", t.points},
                                        {"bw_average_abs_error_pct", median_max_json(t.bw_average, 100.0)},
                                        {"msg_rate_abs_error_pct", median_max_json(t.msg_rate, 100.0)}}});
  }
  if (rr) {
    const TableErrors t = table_errors(s, outcomes, PointKind::NetperfRr).front();
    tables["netperf_rr"] =
        Json::array({{{"table", t.table},
                      {"points", t.points},
                      {"transaction_rate_abs_error_pct", median_max_json(t.transaction_rate, 100.0)},
                      {"service_demand_abs_error_pct", median_max_json(t.service_demand, 100.0)},
                      {"utilisation_abs_error_pct", median_max_json(t.utilisation, 100.0)}}});
  }
  if (pingpong) {
    const TableErrors t = table_errors(s, outcomes, PointKind::Pingpong).front();
    tables["pingpong"] = Json::array({{{"table", t.table},
                                       {"points", t.points},
                                       {"usec_per_iter_abs_error_pct", median_max_json(t.usec_per_iter, 100.0)},
                                       {"mbit_s_abs_error_pct", median_max_json(t.mbit_s, 100.0)}}});
  }
  doc["tables"] = std::move(tables);

  size_t gated = 0;
  Json failed = Json::array();
  for (size_t i = 0; i < s.points.size(); ++i) {
    if (!s.points[i].gated) continue;
    ++gated;
    if (outcomes[i].status == "FAIL") failed.push_back(point_label(s.points[i], outcomes[i].bytes));
  }
  const bool ok = failed.empty();
  doc["verdict"] = {{"gated_points", gated}, {"failed", std::move(failed)}, {"ok", ok}};
  return doc;
}

Json validate_summary_json(const std::vector<Scenario>& scenarios,
                           const std::vector<std::vector<PointOutcome>>& outcomes) {
  Json tables = Json::array();
  size_t gated = 0, failed = 0, netperf_tables = 0, targets_met = 0;
  for (size_t k = 0; k < scenarios.size(); ++k) {
    const Scenario& s = scenarios[k];
    for (size_t i = 0; i < s.points.size(); ++i) {
      if (!s.points[i].gated) continue;
      ++gated;
      if (outcomes[k].at(i).status == "FAIL") ++failed;
    }
    for (const TableSummary& t : summarize_tables(s, outcomes.at(k))) {
      const bool netperf = t.kind == PointKind::Netperf;  // the target's tables
      // Latency's errors are absolute (us), every other kind's relative (x 100: %).
      const bool relative = t.kind != PointKind::Latency;
      const double scale = relative ? 100.0 : 1.0;
      const std::string unit = relative ? "_pct" : "_us";
      Json metrics = Json::array();
      for (const MetricSummary& m : t.metrics) {
        Json j;
        j["name"] = m.name;
        j["median_abs_error" + unit] = m.median ? Json(*m.median * scale) : Json(nullptr);
        j["max_abs_error" + unit] = m.max ? Json(*m.max * scale) : Json(nullptr);
        // Tolerances, spreads and the target as declared: relative (0.15 = 15 %) or in us.
        j[relative ? "tolerance_relative" : "tolerance_us"] = m.tolerance > 0 ? Json(m.tolerance) : Json(nullptr);
        j["gated"] = m.gated;
        j["gated_within"] = m.gated_within;
        if (netperf) {
          j["spread_relative"] = m.spread ? Json(*m.spread) : Json(nullptr);
          j["allowed_median_relative"] = m.allowed_median;
          j["allowed_max_relative"] = m.allowed_max;
          j["target_met"] = m.target_met;
        }
        metrics.push_back(std::move(j));
      }
      Json row;
      row["scenario"] = s.name;
      row["table"] = t.table;
      row["kind"] = point_kind_name(t.kind);
      row["points"] = t.points;
      row["gated"] = t.gated;
      row["within"] = t.within;
      if (netperf) {
        row["target_met"] = t.target_met;
        ++netperf_tables;
        if (t.target_met) ++targets_met;
      }
      row["metrics"] = std::move(metrics);
      tables.push_back(std::move(row));
    }
  }
  Json doc;
  doc["tables"] = std::move(tables);
  doc["gated_points"] = gated;
  doc["failed_points"] = failed;
  doc["netperf_tables"] = netperf_tables;
  doc["netperf_tables_target_met"] = targets_met;
  doc["ok"] = failed == 0;
  return doc;
}

}  // namespace hcasim::scenarios
