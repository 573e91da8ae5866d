// `--json` documents of netperf and perftest (json_output.h); schema in docs/cli.md "--json".
#include "frontends/json_output.h"

#include "frontends/explain.h"

#include <algorithm>
#include <cmath>
#include <string>

#include <fmt/format.h>

#include "frontends/perftest_output.h"
#include "model/netstack.h"
#include "util/output_file.h"

namespace hcasim::frontends {

namespace {

/// A figure netperf marks unmeasured with -1 (NetperfFigures), as null.
Json measured_or_null(double v, bool measured) { return measured ? Json(v) : Json(nullptr); }

/// The identity keys every tool's document starts with.
Json identity(std::string_view schema, std::string_view command, const std::vector<std::string>& args,
              std::string_view local_platform, std::string_view remote_platform, const std::vector<std::string>& sets,
              uint64_t seed) {
  Json doc;
  doc["schema"] = schema;
  doc["command_line"] = json_command_line(command, args);
  doc["platform"] = local_platform;
  doc["remote_platform"] = remote_platform;
  doc["set"] = sets;
  doc["seed"] = seed;
  return doc;
}

}  // namespace

std::string dump_json(const Json& doc) {
  // error_handler_t::replace: a string that is not UTF-8 (a file name) still prints, with
  // U+FFFD in place of the bad bytes, instead of throwing half-way.
  return doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string dump_json(const nlohmann::json& doc) {
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

Json json_command_line(std::string_view command, const std::vector<std::string>& args) {
  Json words = Json::array();
  words.push_back(command);
  for (const auto& a : args) words.push_back(a);
  return words;
}

std::string json_csv_conflict(const std::optional<std::string>& csv_path) {
  if (!csv_path || !util::is_stdout_path(*csv_path)) return "";
  return fmt::format("--json: --csv {} would write CSV into the JSON on stdout; write the CSV to a file", *csv_path);
}

Json fault_stats_json(const model::FaultStats& s) {
  Json j;
  j["packets"] = s.packets;
  j["lost"] = s.lost;
  j["corrupted"] = s.corrupted;
  j["duplicated"] = s.duplicated;
  j["reordered"] = s.reordered;
  j["retransmitted"] = s.retransmitted;
  j["naks"] = s.naks;
  j["timeouts"] = s.timeouts;
  j["rnr_naks"] = s.rnr_naks;
  return j;
}

Json link_busy_json(const std::vector<std::pair<std::string, double>>& links) {
  Json j = Json::array();
  for (const auto& [name, busy] : links) j.push_back({{"link", name}, {"busy_s", busy}});
  return j;
}

Json cpu_profile_json(const std::vector<CoreProfile>& cores, double elapsed_s) {
  const double elapsed_ns = elapsed_s * 1e9;
  Json cpus = Json::array();
  double all_busy_ns = 0;
  for (const auto& core : cores) {
    Json busy = Json::object();
    double busy_ns = 0;
    for (const auto& [name, ns] : core.busy_ns) {
      busy[name] = ns;
      busy_ns += ns;
    }
    all_busy_ns += busy_ns;
    Json cpu;
    cpu["cpu"] = core.core;
    cpu["busy_ns"] = std::move(busy);
    cpu["idle_ns"] = elapsed_ns > 0 ? std::max(0.0, elapsed_ns - busy_ns) : 0.0;
    cpu["total_busy_ns"] = busy_ns;
    cpu["wakeups"] = core.wakeups;
    cpu["ipis"] = core.ipis;
    cpu["context_switches"] = core.context_switches;
    cpus.push_back(std::move(cpu));
  }
  Json host;
  // format_cpu_profile's summary: the mean over the CPUs of their busy share of the interval.
  host["utilisation_pct"] = cores.empty() || elapsed_ns <= 0
                                ? 0.0
                                : 100.0 * all_busy_ns / elapsed_ns / static_cast<double>(cores.size());
  host["elapsed_s"] = elapsed_s;
  host["cpus"] = std::move(cpus);
  return host;
}

namespace {

/// Over IPoIB, each CPU's kernel functions (format_ipoib_profile's rows before sorting):
/// [{"cpu", "functions": [{"name", "self_s", "calls"}...] (those with time or calls, in
/// model/netstack.h order), "timer_interrupt_s", "default_idle_s"}] for the CPUs that did more
/// than take timer ticks.
Json kernel_profile_json(const std::vector<KernelProfile>& kernel, const model::KernelNaming& naming,
                         const std::vector<CoreProfile>& cores, double elapsed_s) {
  Json out = Json::array();
  for (size_t i = 0; i < kernel.size() && i < cores.size(); ++i) {
    double busy_ns = 0, timer_ns = 0;
    for (const auto& [name, ns] : cores[i].busy_ns) {
      busy_ns += ns;
      if (name == "timer") timer_ns = ns;
    }
    if (busy_ns <= timer_ns) continue;
    Json functions = Json::array();
    for (size_t f = 0; f < model::kKernelFnCount; ++f) {
      if (kernel[i].ns[f] <= 0 && kernel[i].calls[f] <= 0) continue;
      functions.push_back({{"name", model::kernel_fn_name(static_cast<model::KernelFn>(f), naming)},
                           {"self_s", kernel[i].ns[f] * 1e-9},
                           {"calls", kernel[i].calls[f]}});
    }
    Json cpu;
    cpu["cpu"] = kernel[i].core;
    cpu["functions"] = std::move(functions);
    cpu["timer_interrupt_s"] = timer_ns * 1e-9;
    cpu["default_idle_s"] = std::max(0.0, elapsed_s - busy_ns * 1e-9);
    out.push_back(std::move(cpu));
  }
  return out;
}

/// The simulator's counts both tools' --stats print, without wall time, speed or RSS (which
/// differ from run to run).
void common_stats(Json& j, uint64_t activities, uint64_t time_steps, uint64_t events, uint64_t switches,
                  uint64_t transfers_simgrid, uint64_t transfers_alone) {
  j["activities"] = activities;
  j["time_steps"] = time_steps;
  j["events"] = events;
  j["switches"] = switches;
  j["transfers_simgrid"] = transfers_simgrid;
  j["transfers_alone"] = transfers_alone;
}

}  // namespace

Json netperf_json(const std::vector<std::string>& args, const NetperfOptions& o, const TcpStreamResult& r,
                  const NetperfFigures& f, std::string_view local_platform, std::string_view remote_platform,
                  const IpoibStreamResult* ipoib) {
  Json doc = identity("hcasim.netperf/1", "netperf", args, local_platform, remote_platform, o.sets, o.seed);
  doc["transport"] = o.transport;
  doc["test"] = o.test;
  doc["length_s"] = o.length_bytes == 0 ? Json(o.length_s) : Json(nullptr);
  doc["length_bytes"] = o.length_bytes == 0 ? Json(nullptr) : Json(o.length_bytes);
  doc["test_options"] = o.test_words;

  Json res;
  res["remote_recv_socket_bytes"] = r.remote_recv_socket;
  res["local_send_socket_bytes"] = r.local_send_socket;
  res["send_size_bytes"] = r.send_size;
  res["recv_size_bytes"] = r.recv_size;
  res["elapsed_s"] = f.elapsed_s;
  // --steady: whether elapsed_s is the steady state found to steady_rel, or the whole run.
  if (o.steady_rel > 0) res["steady"] = {{"rel", o.steady_rel}, {"settled", r.steady_settled}};
  res["throughput_mbit_s"] = f.throughput_mbps;
  res["throughput"] = f.throughput;
  // TCP_RR's row is a transaction rate, its service demands us per transaction (netperf's us/Tr).
  const bool rr = o.test == "TCP_RR";
  res["throughput_unit"] = rr ? std::string("transactions/s") : netperf_units(o.format) + "/s";
  res["util_local_pct"] = measured_or_null(f.local_util_pct, o.local_cpu);
  res["util_remote_pct"] = measured_or_null(f.remote_util_pct, o.remote_cpu);
  const std::string sd_unit = rr ? "us_per_tr" : "us_per_kb";
  res["service_demand_local_" + sd_unit] = measured_or_null(f.local_sd_us_per_kb, o.local_cpu);
  res["service_demand_remote_" + sd_unit] = measured_or_null(f.remote_sd_us_per_kb, o.remote_cpu);
  if (o.test == "TCP_RR") {
    res["request_size_bytes"] = r.request_size;
    res["response_size_bytes"] = r.response_size;
    res["local_recv_socket_bytes"] = r.local_recv_socket;
    res["remote_send_socket_bytes"] = r.remote_send_socket;
    res["transactions"] = r.transactions;
    res["transaction_rate_per_s"] = f.transaction_rate;
  } else if (o.test == "TCP_MAERTS") {
    res["local_recv_socket_bytes"] = r.local_recv_socket;
    res["remote_send_socket_bytes"] = r.remote_send_socket;
  }
  // -D: the interim results of the text, in order, unrounded; a TCP_RR's in transactions/s.
  if (o.demo) {
    Json interim = Json::array();
    for (const InterimResult& ir : r.interim)
      interim.push_back({{"interval_s", ir.interval_us / 1e6},
                         {"end_s", static_cast<double>(ir.end_us) / 1e6},
                         {"throughput", interim_figure(o, ir)}});
    res["interim"] = std::move(interim);
  }
  res["bytes_sent"] = r.bytes_sent;
  res["bytes_received"] = r.bytes_received;
  res["send_calls"] = r.send_calls;
  res["recv_calls"] = r.recv_calls;
  res["local_cpus"] = r.local_cpus;
  res["remote_cpus"] = r.remote_cpus;
  if (ipoib) {
    // Linux's buffer tuning: netperf prints the sizes at socket creation; these are the ends, of
    // the data's sender and receiver (TCP_RR: the requests') and of each socket.
    const bool maerts = o.test == "TCP_MAERTS";
    const IpoibStreamResult::SocketEnd& send = maerts ? ipoib->remote_send_end : ipoib->local_send_end;
    const IpoibStreamResult::SocketEnd& recv = maerts ? ipoib->local_recv_end : ipoib->remote_recv_end;
    res["tcp"] = {{"send_socket_end_bytes", send.bytes},
                  {"recv_socket_end_bytes", recv.bytes},
                  {"send_socket_autotuned", send.tuned},
                  {"recv_socket_autotuned", recv.tuned},
                  {"local_send_socket_end_bytes", ipoib->local_send_end.bytes},
                  {"local_recv_socket_end_bytes", ipoib->local_recv_end.bytes},
                  {"remote_send_socket_end_bytes", ipoib->remote_send_end.bytes},
                  {"remote_recv_socket_end_bytes", ipoib->remote_recv_end.bytes},
                  {"mss_first_bytes", ipoib->mss_first},
                  {"mss_bytes", ipoib->mss}};
  }
  doc["result"] = std::move(res);

  if (o.profile) {
    Json profile;
    profile["local"] = cpu_profile_json(r.local_profile, r.elapsed_s);
    profile["remote"] = cpu_profile_json(r.remote_profile, r.elapsed_s);
    if (ipoib) {
      profile["local"]["kernel"] =
          kernel_profile_json(ipoib->local_kernel, ipoib->local_naming, r.local_profile, r.elapsed_s);
      profile["remote"]["kernel"] =
          kernel_profile_json(ipoib->remote_kernel, ipoib->remote_naming, r.remote_profile, r.elapsed_s);
    }
    doc["profile"] = std::move(profile);
  }
  if (o.stats) {
    Json s;
    common_stats(s, r.simgrid_activities, r.simgrid_time_steps, r.kernel_events, r.context_switches,
                 r.transfers_simgrid, r.transfers_alone);
    s["sdp_messages"] = r.sdp_messages;
    s["simulated_s"] = r.elapsed_s;
    s["link_busy"] = link_busy_json(r.link_busy_s);
    doc["stats"] = std::move(s);
  }
  if (r.faults_configured)
    doc["faults"] = {{"local", fault_stats_json(r.local_faults)}, {"remote", fault_stats_json(r.remote_faults)}};
  if (o.explain && r.explain) doc["explain"] = explain_json(explain(*r.explain));
  if (o.verify_data) {
    Json v;
    v["bytes_sent"] = r.crc_bytes_sent;
    v["sent_crc32"] = fmt::format("{:08x}", r.sent_crc32);
    v["bytes_received"] = r.crc_bytes_received;
    v["received_crc32"] = fmt::format("{:08x}", r.received_crc32);
    v["equal"] = r.data_verified;
    doc["verify_data"] = std::move(v);
  }
  return doc;
}

Json perftest_json(const std::vector<std::string>& args, const PerftestOptions& o, const PerftestResult& r,
                   double cpu_mhz, std::string_view local_platform, std::string_view remote_platform) {
  const std::string_view tool = perftest_tool_name(o.test);
  Json doc = identity("hcasim.perftest/1", tool, args, local_platform, remote_platform, o.sets, o.seed);
  doc["test"] = tool;
  const PerftestConfig c = to_perftest_config(o);
  const bool bw = perftest_is_bw(o.test);

  Json setup;
  setup["device"] = o.device;
  setup["connection_type"] = perftest_connection_name(c.connection);  // the banner's "Connection type"
  setup["num_qps"] = c.num_qps;
  setup["tx_depth"] = c.tx_depth;
  setup["rx_depth"] = c.rx_depth;
  setup["cq_moderation"] = c.cq_mod;
  setup["mtu_bytes"] = r.mtu;
  // format_perftest_head's "Max inline data": what was asked, or less when the QP offers less.
  setup["max_inline_data_bytes"] =
      r.max_inline_data != 0 && r.max_inline_data < c.inline_size ? r.max_inline_data : c.inline_size;
  setup["iterations"] = c.iterations;
  setup["blueflame"] = r.blueflame;
  setup["write_combining"] = r.write_combining;
  setup["cpu_mhz"] = cpu_mhz;
  setup["columns"] = o.columns == PerftestColumns::Classic ? "classic" : "extended";
  if (perftest_is_read_or_atomic(o.test)) setup["out_reads"] = r.out_reads;  // the banner's "Outstand reads"
  if (perftest_is_atomic(o.test))
    setup["atomic_type"] = o.atomic == PerftestAtomic::CmpAndSwap ? "CMP_AND_SWAP" : "FETCH_AND_ADD";
  if (bw) {
    setup["bidirectional"] = o.duplex;
    setup["report_gbits"] = o.report_gbits;
    setup["no_peak"] = perftest_no_peak(o);
  }
  doc["setup"] = std::move(setup);

  Json results = Json::array();
  for (size_t k = 0; k < r.points.size(); ++k) {
    const PerftestPoint& p = r.points[k];
    Json row;
    if (bw) {
      const PerftestBwFigures f = perftest_bw_report(o, r, k, cpu_mhz);
      row["bytes"] = f.bytes;
      row["iterations"] = f.iterations;
      row["bw_peak_mib_s"] = f.bw_peak_mib_s;
      row["bw_average_mib_s"] = f.bw_avg_mib_s;
      row["bw_peak_gbit_s"] = f.bw_peak_gbit_s;
      row["bw_average_gbit_s"] = f.bw_avg_gbit_s;
      row["msg_rate_mpps"] = f.msg_rate_mpps;
    } else {
      const PerftestLatFigures f = perftest_lat_figures(p, cpu_mhz, perftest_rtt_factor(o.test));
      row["bytes"] = f.bytes;
      row["iterations"] = f.iterations;
      row["t_min_us"] = f.t_min_us;
      row["t_max_us"] = f.t_max_us;
      row["t_typical_us"] = f.t_typical_us;
      row["t_avg_us"] = f.t_avg_us;
      row["t_stdev_us"] = f.t_stdev_us;
      row["t_p99_us"] = f.t_p99_us;
      row["t_p99_9_us"] = f.t_p99_9_us;
    }
    results.push_back(std::move(row));
  }
  doc["results"] = std::move(results);

  if (o.stats) {
    Json s;
    common_stats(s, r.simgrid_activities, r.simgrid_time_steps, r.kernel_events, r.context_switches,
                 r.transfers_simgrid, r.transfers_alone);
    s["blueflame_posts"] = r.blueflame_posts;
    s["doorbell_posts"] = r.doorbell_posts;
    s["simulated_s"] = r.simulated_s;
    s["link_busy"] = link_busy_json(r.link_busy_s);
    doc["stats"] = std::move(s);
  }
  if (r.faults_configured)
    doc["faults"] = {{"local", fault_stats_json(r.local_faults)}, {"remote", fault_stats_json(r.remote_faults)}};
  if (o.explain) {
    Json ex = Json::array();
    for (const PerftestPoint& p : r.points) {
      if (!bw) {
        ex.push_back(latency_stages_json(p.bytes, p.latency_stages, perftest_lat_figures(p, cpu_mhz).t_typical_us));
      } else if (p.explain) {
        Json one;
        one["bytes"] = p.bytes;
        const Json e = explain_json(explain(*p.explain));
        for (const auto& [k, v] : e.items()) one[k] = v;
        ex.push_back(std::move(one));
      }
    }
    doc["explain"] = std::move(ex);
  }
  return doc;
}

}  // namespace hcasim::frontends
