// `--json` of every command, end to end: each test runs build/hcasim on a short case with and
// without --json and checks that the JSON's figures are the text's (as the text rounds them)
// and the CSV's (exactly), that the document is the same bytes twice, that a real JSON parser
// (python3's json module) reads it, and that what --json cannot honour is a one-line error.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/hcasim_run.h"
#include "util/csv.h"

namespace fs = std::filesystem;
using hcasim::test::Outcome;
using hcasim::test::slurp;
using Json = nlohmann::ordered_json;

namespace {

class JsonOutput : public hcasim::test::HcasimCommandTest {
 protected:
  JsonOutput() : HcasimCommandTest("json") {}

  /// `hcasim ARGS`, which must succeed, its stdout parsed as JSON.
  Json run_json(const std::string& args, Outcome* outcome = nullptr) {
    Outcome r = run(args);
    EXPECT_EQ(r.status, 0) << args << "\n" << r.err;
    EXPECT_FALSE(r.out.empty()) << args;
    if (outcome) *outcome = r;
    try {
      return Json::parse(r.out);
    } catch (const std::exception& e) {
      ADD_FAILURE() << args << ": not JSON (" << e.what() << "):\n" << r.out;
      return Json();
    }
  }

  /// The CSV file `name` in the scratch directory, as rows of column -> cell.
  std::vector<std::map<std::string, std::string>> csv_rows(const std::string& name) {
    const auto cells = hcasim::util::parse_csv(slurp(dir_ / name), name);
    std::vector<std::map<std::string, std::string>> rows;
    for (size_t r = 1; r < cells.size(); ++r) {
      std::map<std::string, std::string> row;
      for (size_t c = 0; c < cells[0].size() && c < cells[r].size(); ++c) row[cells[0][c]] = cells[r][c];
      rows.push_back(std::move(row));
    }
    return rows;
  }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
};

std::vector<std::string> split_words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

/// `v` with `decimals` decimals, as printf's %.Nf prints a double.
std::string fixed(double v, int decimals) { return fmt::format("{:.{}f}", v, decimals); }
/// netperf keeps utilisations, service demands and the elapsed time in float: %.Nf of the float.
std::string float_fixed(double v, int decimals) { return fixed(static_cast<double>(static_cast<float>(v)), decimals); }

/// The CSV cell as the double it was written from (shortest round-trip form).
double cell(const std::map<std::string, std::string>& row, const std::string& column) {
  const auto it = row.find(column);
  if (it == row.end()) {
    ADD_FAILURE() << "no CSV column " << column;
    return NAN;
  }
  return std::stod(it->second);
}

/// The first line of `text` that starts with `prefix` (after leading spaces when `trim`).
std::string line_starting(const std::string& text, const std::string& prefix, bool trim = false) {
  for (const auto& l : lines_of(text)) {
    const std::string s = trim ? l.substr(std::min(l.size(), l.find_first_not_of(' '))) : l;
    if (s.rfind(prefix, 0) == 0) return l;
  }
  ADD_FAILURE() << "no line starting with '" << prefix << "' in:\n" << text;
  return "";
}

/// The number after `key=` in a stats line ("events=123").
std::string stat(const std::string& line, const std::string& key) {
  std::smatch m;
  if (!std::regex_search(line, m, std::regex("\\b" + key + "=([^ ]+)"))) {
    ADD_FAILURE() << key << " not in " << line;
    return "";
  }
  return m[1];
}

// --- netperf --------------------------------------------------------------------------------

TEST_F(JsonOutput, NetperfFiguresAreTheTextsAndTheCsvs) {
  const std::string cmd = "netperf -c -C -P 0 -l 0.2 --set sdp.zcopy_thresh=1 -- -m 64K --csv ";
  const Outcome text = run(cmd + path("text.csv"));
  ASSERT_EQ(text.status, 0) << text.err;
  Outcome first;
  const Json doc = run_json(cmd + path("json.csv") + " --json", &first);
  const Outcome again = run(cmd + path("json.csv") + " --json");
  EXPECT_EQ(first.out, again.out) << "the same inputs must give the same bytes";
  EXPECT_EQ(slurp(dir_ / "text.csv"), slurp(dir_ / "json.csv")) << "--json changes nothing in the CSV";

  EXPECT_EQ(doc["schema"], "hcasim.netperf/1");
  EXPECT_EQ(doc["command_line"][0], "netperf");
  EXPECT_EQ(doc["command_line"].back(), "--json");
  EXPECT_EQ(doc["platform"], "connectx-ddr-pcie1x8");
  EXPECT_EQ(doc["set"], Json::array({"sdp.zcopy_thresh=1"}));
  EXPECT_EQ(doc["seed"], 1);
  EXPECT_EQ(doc["length_s"], 0.2);
  const Json& r = doc["result"];

  // The text row: Recv Send Send Elapsed Throughput util local, remote, SD local, remote.
  const auto w = split_words(text.out);
  ASSERT_EQ(w.size(), 9u) << text.out;
  EXPECT_EQ(w[0], std::to_string(r["remote_recv_socket_bytes"].get<uint64_t>()));
  EXPECT_EQ(w[1], std::to_string(r["local_send_socket_bytes"].get<uint64_t>()));
  EXPECT_EQ(w[2], std::to_string(r["send_size_bytes"].get<uint64_t>()));
  EXPECT_EQ(w[2], "65536");
  EXPECT_EQ(w[3], float_fixed(r["elapsed_s"], 2));
  EXPECT_EQ(w[4], fixed(r["throughput"], 2));
  EXPECT_EQ(r["throughput_unit"], "10^6bits/s");
  EXPECT_EQ(w[5], float_fixed(r["util_local_pct"], 2));
  EXPECT_EQ(w[6], float_fixed(r["util_remote_pct"], 2));
  EXPECT_EQ(w[7], float_fixed(r["service_demand_local_us_per_kb"], 3));
  EXPECT_EQ(w[8], float_fixed(r["service_demand_remote_us_per_kb"], 3));
  EXPECT_GT(r["throughput_mbit_s"].get<double>(), 1000.0);

  const auto csv = csv_rows("json.csv");
  ASSERT_EQ(csv.size(), 1u);
  EXPECT_EQ(r["throughput_mbit_s"].get<double>(), cell(csv[0], "throughput_mbps"));
  EXPECT_EQ(r["elapsed_s"].get<double>(), cell(csv[0], "elapsed_s"));
  EXPECT_EQ(r["util_local_pct"].get<double>(), cell(csv[0], "util_local_pct"));
  EXPECT_EQ(r["util_remote_pct"].get<double>(), cell(csv[0], "util_remote_pct"));
  EXPECT_EQ(r["service_demand_local_us_per_kb"].get<double>(), cell(csv[0], "sd_local_us_per_kb"));
  EXPECT_EQ(r["service_demand_remote_us_per_kb"].get<double>(), cell(csv[0], "sd_remote_us_per_kb"));
  EXPECT_EQ(r["bytes_received"].get<double>(), cell(csv[0], "bytes_received"));
  EXPECT_EQ(r["send_calls"].get<double>(), cell(csv[0], "send_calls"));
  EXPECT_EQ(r["recv_size_bytes"].get<double>(), cell(csv[0], "recv_size_bytes"));
  EXPECT_FALSE(doc.contains("profile"));
  EXPECT_FALSE(doc.contains("stats"));
}

TEST_F(JsonOutput, NetperfWithoutCpuFiguresHasNulls) {
  const Json doc = run_json("netperf -P 0 -l 0.1 -f g --json -- -m 16K");
  const Outcome text = run("netperf -P 0 -l 0.1 -f g -- -m 16K");
  const auto w = split_words(text.out);
  ASSERT_EQ(w.size(), 5u) << text.out;
  EXPECT_EQ(w[4], fixed(doc["result"]["throughput"], 2));
  EXPECT_EQ(doc["result"]["throughput_unit"], "10^9bits/s");
  // -f g: the same throughput in 10^9 bit/s as throughput_mbit_s in 10^6 (netperf's float
  // elapsed time makes them differ in the last digits only).
  EXPECT_NEAR(doc["result"]["throughput"].get<double>() * 1000, doc["result"]["throughput_mbit_s"].get<double>(), 1e-3);
  EXPECT_TRUE(doc["result"]["util_local_pct"].is_null());
  EXPECT_TRUE(doc["result"]["service_demand_remote_us_per_kb"].is_null());
}

TEST_F(JsonOutput, NetperfProfileAndStatsAreThoseOfTheText) {
  const std::string cmd = "netperf -c -C -P 0 -l 0.2 --profile --stats -- -m 64K";
  const Outcome text = run(cmd);
  ASSERT_EQ(text.status, 0) << text.err;
  Outcome json;
  const Json doc = run_json(cmd + " --json", &json);

  const Json& local = doc["profile"]["local"];
  const std::string summary = line_starting(text.out, "local host (netperf): ");
  EXPECT_EQ(summary, fmt::format("local host (netperf): utilisation {:.2f} % (mean over {} CPUs) in {:.6f} s",
                                 local["utilisation_pct"].get<double>(), local["cpus"].size(),
                                 local["elapsed_s"].get<double>()));
  // The profile's utilisation is netperf's -c figure.
  EXPECT_EQ(split_words(lines_of(text.out)[0])[5], float_fixed(local["utilisation_pct"], 2));
  EXPECT_EQ(doc["profile"]["remote"]["cpus"].size(), local["cpus"].size());

  // Every activity of CPU 1 of the local host: the text's seconds are the JSON's ns.
  const auto lines = lines_of(text.out);
  const auto at = std::find_if(lines.begin(), lines.end(), [](const std::string& l) { return l.rfind("  CPU 1 ", 0) == 0; });
  ASSERT_NE(at, lines.end()) << text.out;
  std::map<std::string, std::string> seconds;
  for (auto l = at + 1; l != lines.end() && l->rfind("  CPU", 0) != 0; ++l) {
    const auto w = split_words(*l);
    if (w.size() >= 3) seconds[w.size() == 4 ? w[2] + " " + w[3] : w[2]] = w[1];
  }
  const Json* cpu1 = nullptr;
  for (const Json& c : local["cpus"])
    if (c["cpu"] == 1) cpu1 = &c;
  ASSERT_NE(cpu1, nullptr);
  size_t compared = 0;
  for (const auto& [activity, ns] : (*cpu1)["busy_ns"].items()) {
    if (ns.get<double>() == 0) continue;
    EXPECT_EQ(seconds[activity], fixed(ns.get<double>() * 1e-9, 6)) << activity;
    ++compared;
  }
  EXPECT_GE(compared, 3u);
  EXPECT_EQ(seconds["total busy"], fixed((*cpu1)["total_busy_ns"].get<double>() * 1e-9, 6));
  // The CPU's events line, as the JSON counts them.
  const auto events =
      std::find_if(at + 1, lines.end(), [](const std::string& l) { return l.find(" wakeups ") != std::string::npos; });
  ASSERT_NE(events, lines.end()) << text.out;
  EXPECT_EQ(*events, fmt::format("          wakeups {} ({} with an IPI), context switches {}",
                                 (*cpu1)["wakeups"].get<uint64_t>(), (*cpu1)["ipis"].get<uint64_t>(),
                                 (*cpu1)["context_switches"].get<uint64_t>()));
  EXPECT_GT((*cpu1)["wakeups"].get<uint64_t>(), 0u);

  // --stats: the counts of the stderr line, which --json leaves where it is.
  const Json& s = doc["stats"];
  const std::string stats_line = line_starting(json.err, "hcasim: stats: ");
  EXPECT_EQ(stat(stats_line, "events"), std::to_string(s["events"].get<uint64_t>()));
  EXPECT_EQ(stat(stats_line, "switches"), std::to_string(s["switches"].get<uint64_t>()));
  EXPECT_EQ(stat(stats_line, "sdp_messages"), std::to_string(s["sdp_messages"].get<uint64_t>()));
  EXPECT_EQ(stat(stats_line, "transfers_alone"), std::to_string(s["transfers_alone"].get<uint64_t>()));
  EXPECT_GT(s["events"].get<uint64_t>(), 1000u);
  EXPECT_EQ(stat(stats_line, "events"), stat(line_starting(text.err, "hcasim: stats: "), "events"));
  const std::string busy = line_starting(json.err, "hcasim: link busy:");
  ASSERT_FALSE(s["link_busy"].empty());
  for (const Json& link : s["link_busy"])
    EXPECT_NE(busy.find(fmt::format(" {}={:.6f}s", link["link"].get<std::string>(), link["busy_s"].get<double>())),
              std::string::npos)
        << link << " in " << busy;
  // Nothing of the wall clock: the same document twice.
  EXPECT_FALSE(s.contains("wall_s"));
  EXPECT_FALSE(s.contains("max_rss_mb"));
  EXPECT_EQ(run(cmd + " --json").out, json.out);
}

TEST_F(JsonOutput, NetperfOverIpoibWithItsKernelProfile) {
  const std::string cmd = "netperf -c -C -P 0 -l 0.3 --transport ipoib --profile -- -m 8192";
  const Outcome text = run(cmd);
  ASSERT_EQ(text.status, 0) << text.err;
  const Json doc = run_json(cmd + " --json");
  EXPECT_EQ(doc["transport"], "ipoib");
  const auto w = split_words(lines_of(text.out)[0]);
  ASSERT_EQ(w.size(), 9u) << text.out;
  EXPECT_EQ(w[4], fixed(doc["result"]["throughput"], 2));
  EXPECT_EQ(w[7], float_fixed(doc["result"]["service_demand_local_us_per_kb"], 3));

  // The first CPU of the local host's q-view profile, row by row.
  const Json& kernel = doc["profile"]["local"]["kernel"];
  ASSERT_FALSE(kernel.empty());
  const Json& cpu = kernel[0];
  const std::string title = fmt::format("Flat profile of CPU time on cpu{} of {} (netperf)", cpu["cpu"].get<int>(),
                                        doc["platform"].get<std::string>());
  const auto lines = lines_of(text.out);
  auto at = std::find_if(lines.begin(), lines.end(), [&](const std::string& l) { return l.rfind(title, 0) == 0; });
  ASSERT_NE(at, lines.end()) << title << " in\n" << text.out;
  std::map<std::string, std::string> self;
  for (auto l = at + 2; l != lines.end() && !l->empty(); ++l) {
    const auto row = split_words(*l);
    self[row.back()] = row[1];
  }
  size_t compared = 0;
  for (const Json& f : cpu["functions"]) {
    const auto name = f["name"].get<std::string>();
    if (f["self_s"].get<double>() <= 0) continue;
    EXPECT_EQ(self[name], fixed(f["self_s"], 2)) << name;
    ++compared;
  }
  EXPECT_GE(compared, 5u);
  EXPECT_EQ(self["default_idle"], fixed(cpu["default_idle_s"], 2));
}

TEST_F(JsonOutput, NetperfVerifyDataAndFaultsAreThoseOfStderr) {
  const Json doc = run_json("netperf -P 0 -l -8388608 --verify-data --set fault.loss=1e-3 --json -- -m 64K");
  const Outcome text = run("netperf -P 0 -l -8388608 --verify-data --set fault.loss=1e-3 -- -m 64K");
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_EQ(doc["length_bytes"], 8388608);
  EXPECT_TRUE(doc["length_s"].is_null());
  const Json& v = doc["verify_data"];
  EXPECT_EQ(line_starting(text.err, "hcasim: data: "),
            fmt::format("hcasim: data: {} B sent, crc32 {}; {} B received, crc32 {}", v["bytes_sent"].get<uint64_t>(),
                        v["sent_crc32"].get<std::string>(), v["bytes_received"].get<uint64_t>(),
                        v["received_crc32"].get<std::string>()));
  EXPECT_EQ(v["bytes_received"], 8388608);
  EXPECT_EQ(v["equal"], true);
  const Json& f = doc["faults"]["local"];
  EXPECT_EQ(line_starting(text.err, "hcasim: local  faults: "),
            fmt::format("hcasim: local  faults: {} packets, {} lost, {} corrupted, {} duplicated, {} reordered; {} "
                        "retransmitted ({} NAKs, {} timeouts), {} RNR NAKs",
                        f["packets"].get<uint64_t>(), f["lost"].get<uint64_t>(), f["corrupted"].get<uint64_t>(),
                        f["duplicated"].get<uint64_t>(), f["reordered"].get<uint64_t>(),
                        f["retransmitted"].get<uint64_t>(), f["naks"].get<uint64_t>(), f["timeouts"].get<uint64_t>(),
                        f["rnr_naks"].get<uint64_t>()));
  EXPECT_GT(f["lost"].get<uint64_t>(), 0u);
}

TEST_F(JsonOutput, NetperfInterimResultsAreThoseOfTheText) {
  for (const std::string test : {"TCP_STREAM", "TCP_RR"}) {
    SCOPED_TRACE(test);
    const std::string cmd = "netperf -P 0 -D 0.25 -l 1 -f k -t " + test;
    const Json doc = run_json(cmd + " --json");
    const Outcome text = run(cmd);
    ASSERT_EQ(text.status, 0) << text.err;
    const Json& interim = doc["result"]["interim"];
    // netperf's -D prints a line per interval that has passed: four in 1 s at 0.25 s.
    ASSERT_GE(interim.size(), 3u);
    std::string lines;
    for (const Json& ir : interim) {
      const double secs = ir["interval_s"].get<double>();
      EXPECT_GT(ir["end_s"].get<double>(), 0.0);
      lines += test == "TCP_RR" ? fmt::format("Interim result: {:.2f} Trans/s over {:.2f} seconds\n",
                                              ir["throughput"].get<double>(), secs)
                                : fmt::format("Interim result: {:7.2f} 10^3bits/s over {:.2f} seconds\n",
                                              ir["throughput"].get<double>(), secs);
    }
    EXPECT_EQ(text.out.substr(0, lines.size()), lines);
  }
  // Without -D there is no "interim" key.
  EXPECT_FALSE(run_json("netperf -P 0 -l 0.1 --json")["result"].contains("interim"));
}

// --- perftest -------------------------------------------------------------------------------

TEST_F(JsonOutput, WriteLatFiguresAreTheTextsAndTheCsvs) {
  const std::string cmd = "ib_write_lat -s 64 -n 2000 --columns extended --seed 7 --csv ";
  const Outcome text = run(cmd + path("text.csv"));
  ASSERT_EQ(text.status, 0) << text.err;
  Outcome json;
  const Json doc = run_json(cmd + path("json.csv") + " --json", &json);
  EXPECT_EQ(json.out.front(), '{') << "no perftest banner before the document";
  EXPECT_EQ(slurp(dir_ / "text.csv"), slurp(dir_ / "json.csv"));
  EXPECT_EQ(doc["schema"], "hcasim.perftest/1");
  EXPECT_EQ(doc["test"], "ib_write_lat");
  EXPECT_EQ(doc["seed"], 7);
  EXPECT_EQ(doc["setup"]["columns"], "extended");
  EXPECT_EQ(line_starting(text.out, " Mtu             : "),
            fmt::format(" Mtu             : {}[B]", doc["setup"]["mtu_bytes"].get<int>()));
  EXPECT_EQ(line_starting(text.out, " Max inline data : "),
            fmt::format(" Max inline data : {}[B]", doc["setup"]["max_inline_data_bytes"].get<int>()));
  ASSERT_EQ(doc["results"].size(), 1u);
  const Json& r = doc["results"][0];
  const auto w = split_words(line_starting(text.out, "64 ", true));
  ASSERT_EQ(w.size(), 9u);
  EXPECT_EQ(w[0], "64");
  EXPECT_EQ(w[1], std::to_string(r["iterations"].get<uint64_t>()));
  const char* keys[] = {"t_min_us", "t_max_us", "t_typical_us", "t_avg_us", "t_stdev_us", "t_p99_us", "t_p99_9_us"};
  const auto csv = csv_rows("json.csv");
  ASSERT_EQ(csv.size(), 1u);
  for (size_t k = 0; k < 7; ++k) {
    EXPECT_EQ(w[2 + k], fixed(r[keys[k]], 2)) << keys[k];
    EXPECT_EQ(r[keys[k]].get<double>(), cell(csv[0], keys[k])) << keys[k];
  }
  EXPECT_GT(r["t_typical_us"].get<double>(), 0.5);
}

TEST_F(JsonOutput, BandwidthFiguresAreTheTextsAndTheCsvs) {
  for (const char* tool : {"ib_write_bw -s 65536 -n 1000", "ib_send_bw -s 4096 -n 1000 --report_gbits"}) {
    const std::string tool_args = tool;
    SCOPED_TRACE(tool_args);
    const bool gbits = tool_args.find("report_gbits") != std::string::npos;
    const std::string cmd = tool_args + " --csv ";
    const Outcome text = run(cmd + path("text.csv"));
    ASSERT_EQ(text.status, 0) << text.err;
    Outcome json;
    const Json doc = run_json(cmd + path("json.csv") + " --json", &json);
    EXPECT_EQ(slurp(dir_ / "text.csv"), slurp(dir_ / "json.csv"));
    EXPECT_EQ(doc["setup"]["report_gbits"], gbits);
    const Json& r = doc["results"][0];
    const auto w = split_words(line_starting(text.out, std::to_string(r["bytes"].get<uint64_t>()) + " ", true));
    ASSERT_EQ(w.size(), 5u);
    EXPECT_EQ(w[1], std::to_string(r["iterations"].get<uint64_t>()));
    EXPECT_EQ(w[2], fixed(r[gbits ? "bw_peak_gbit_s" : "bw_peak_mib_s"], 2));
    EXPECT_EQ(w[3], fixed(r[gbits ? "bw_average_gbit_s" : "bw_average_mib_s"], 2));
    EXPECT_EQ(w[4], fixed(r["msg_rate_mpps"], 6));
    const auto csv = csv_rows("json.csv");
    ASSERT_EQ(csv.size(), 1u);
    EXPECT_EQ(r["bw_average_gbit_s"].get<double>(), cell(csv[0], "bw_avg_gbit_s"));
    EXPECT_EQ(r["bw_peak_mib_s"].get<double>(), cell(csv[0], "bw_peak_mib_s"));
    EXPECT_EQ(r["msg_rate_mpps"].get<double>(), cell(csv[0], "msg_rate_mpps"));
    EXPECT_GT(r["bw_average_gbit_s"].get<double>(), 1.0);
  }
  // perftest -a and --stats: a result per size, and the stderr line's counts.
  Outcome all;
  const Json doc = run_json("ib_write_bw -a -n 100 -q 2 --stats --json", &all);
  EXPECT_EQ(doc["results"].size(), 23u);
  EXPECT_EQ(doc["results"][22]["bytes"], 8388608);
  EXPECT_EQ(doc["setup"]["num_qps"], 2);
  const std::string stats_line = line_starting(all.err, "hcasim: stats: ");
  EXPECT_EQ(stat(stats_line, "doorbell_posts"), std::to_string(doc["stats"]["doorbell_posts"].get<uint64_t>()));
  EXPECT_EQ(stat(stats_line, "simulated_s"), fixed(doc["stats"]["simulated_s"], 6));
}

// --- params ---------------------------------------------------------------------------------

TEST_F(JsonOutput, ParamsValuesAreTheTexts) {
  const Outcome text = run("params --platform zx1-rx2600-pcix");
  ASSERT_EQ(text.status, 0) << text.err;
  const Json doc = run_json("params --platform zx1-rx2600-pcix --json");
  EXPECT_EQ(doc["count"], 135);
  EXPECT_EQ(doc["platform"], "zx1-rx2600-pcix");
  ASSERT_EQ(doc["parameters"].size(), 135u);
  const auto lines = lines_of(text.out);
  size_t with_ns = 0;
  for (const Json& p : doc["parameters"]) {
    const auto key = p["key"].get<std::string>();
    const auto at = std::find_if(lines.begin(), lines.end(), [&](const std::string& l) { return l.rfind(key + " ", 0) == 0; });
    ASSERT_NE(at, lines.end()) << key;
    EXPECT_NE(at->find(p["doc"].get<std::string>()), std::string::npos) << key;
    if (!p.contains("value")) continue;
    const std::string& value_line = *(at + 1);
    EXPECT_NE(value_line.find("(" + p["origin"].get<std::string>() + ") " + p["source"].get<std::string>()),
              std::string::npos)
        << key;
    if (p.contains("value_ns")) {
      EXPECT_NE(value_line.find(fmt::format("({:.6g} ns", p["value_ns"].get<double>())), std::string::npos)
          << key << ": " << value_line;
      ++with_ns;
    }
  }
  EXPECT_GT(with_ns, 10u);
  // Keys within an object are sorted, as the document always had them.
  for (const Json& p : doc["parameters"]) {
    std::vector<std::string> keys;
    for (const auto& [k, v] : p.items()) keys.push_back(k);
    EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  }
}

// --- run, compare, validate -----------------------------------------------------------------

/// A scenario of two short seed 000 points (T3, -m 64K and -m 1M), its reference by path.
std::string short_scenario() {
  const std::string csv = std::string(HCASIM_REFERENCE_DIR) + "/seed000/seed000_sdp_netperf_mlx4.csv";
  std::string toml = "name = \"short\"\nplatform = \"connectx-ddr-pcie1x8\"\nsource = \"seed 000, T3\"\n"
                     "[tolerance]\nthroughput = 0.15\nservice_demand = 0.25\nutilisation = 0.25\n";
  for (const char* size : {"64K", "1M"})
    toml += fmt::format(
        "[[point]]\ntable = \"T3_m_flag\"\nmode = \"SDP\"\nset = [\"sdp.zcopy_thresh=0\"]\n"
        "command = \"netperf -C -c -P 0 -t TCP_STREAM -H 193.168.10.143 -l 0.2 -- -m {0}\"\n"
        "reference = {{ file = \"{1}\", match = {{ table = \"T3_m_flag\", mode = \"SDP\", netperf_size_flag = \"-m {0}\" }} }}\n",
        size, csv);
  return toml;
}

TEST_F(JsonOutput, RunReportIsTheTextsAndTheCsvs) {
  std::ofstream(dir_ / "short.toml") << short_scenario();
  const std::string cmd = "run " + path("short.toml") + " -j 2 --csv ";
  const Outcome text = run(cmd + path("text.csv"));
  ASSERT_EQ(text.status, 0) << text.out << text.err;
  Outcome json;
  const Json doc = run_json(cmd + path("json.csv") + " --json", &json);
  EXPECT_EQ(run(cmd + path("json.csv") + " --json").out, json.out);
  EXPECT_EQ(slurp(dir_ / "text.csv"), slurp(dir_ / "json.csv"));
  EXPECT_EQ(doc["schema"], "hcasim.run/1");
  EXPECT_EQ(doc["csv"], path("json.csv"));
  const Json& s = doc["scenario"];
  EXPECT_EQ(s["name"], "short");
  EXPECT_EQ(s["tolerance"]["throughput_relative"], 0.15);
  ASSERT_EQ(s["points"].size(), 2u);
  const auto csv = csv_rows("json.csv");
  ASSERT_EQ(csv.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const Json& p = s["points"][i];
    SCOPED_TRACE(p["size_flag"].get<std::string>());
    const auto w = split_words(line_starting(text.out, "T3_m_flag        SDP     " + p["size_flag"].get<std::string>()));
    ASSERT_EQ(w.size(), 20u);
    const char* metrics[] = {"throughput_mbit_s", "service_demand_local_us_per_kb", "service_demand_remote_us_per_kb",
                             "util_local_pct", "util_remote_pct"};
    const int decimals[] = {2, 3, 3, 2, 2};
    const char* sim_columns[] = {"sim_throughput_mbps", "sim_sd_local", "sim_sd_remote", "sim_util_local_pct",
                                 "sim_util_remote_pct"};
    const char* err_columns[] = {"err_throughput_pct", "err_sd_local_pct", "err_sd_remote_pct", "err_util_local_pct",
                                 "err_util_remote_pct"};
    for (size_t m = 0; m < 5; ++m) {
      const Json& metric = p[metrics[m]];
      EXPECT_EQ(w[4 + 3 * m], fixed(metric["measured"], decimals[m])) << metrics[m];
      EXPECT_EQ(w[5 + 3 * m], fixed(metric["simulated"], decimals[m])) << metrics[m];
      EXPECT_EQ(w[6 + 3 * m], fmt::format("{:+.1f}%", metric["error_pct"].get<double>())) << metrics[m];
      EXPECT_EQ(metric["simulated"].get<double>(), cell(csv[i], sim_columns[m])) << metrics[m];
      EXPECT_EQ(fixed(metric["error_pct"], 4), csv[i].at(err_columns[m])) << metrics[m];
    }
    EXPECT_EQ(w.back(), p["status"]);
    EXPECT_EQ(csv[i].at("status"), p["status"]);
    // Gated and measured: "within" is the gate's verdict, a point is ok when every metric is.
    bool all_within = true;
    for (const char* m : metrics) {
      ASSERT_TRUE(p[m]["within"].is_boolean()) << m;
      all_within = all_within && p[m]["within"].get<bool>();
    }
    EXPECT_EQ(p["status"], all_within ? "ok" : "FAIL");
  }
  const Json& table = s["tables"]["netperf"][0];
  EXPECT_EQ(table["table"], "T3_m_flag");
  EXPECT_EQ(table["points"], 2);
  const auto t = split_words(line_starting(text.out, fmt::format("{:<16} {:>6}  ", "T3_m_flag", 2)));
  ASSERT_GE(t.size(), 5u);
  EXPECT_EQ(t[2], fmt::format("{:.1f}%", table["throughput_abs_error_pct"]["median"].get<double>()));
  EXPECT_EQ(t[4], fmt::format("{:.1f}%", table["throughput_abs_error_pct"]["max"].get<double>()));
  EXPECT_EQ(s["verdict"]["gated_points"], 2);
  EXPECT_EQ(s["verdict"]["ok"], s["verdict"]["failed"].empty());
  EXPECT_NE(text.out.find(s["verdict"]["ok"].get<bool>() ? "ok: all 2 gated points within tolerance" : "FAIL: "),
            std::string::npos);
}

TEST_F(JsonOutput, CompareReadByARealJsonParser) {
  const std::string runs = std::string(HCASIM_REFERENCE_DIR) + "/seed000/runs.txt";
  const std::string cmd = "compare " + runs + " --duration 0.05 -j 2 --csv ";
  const Outcome text = run(cmd + path("text.csv"));
  ASSERT_EQ(text.status, 0) << text.err;
  const Outcome json = run(cmd + path("json.csv") + " --json");
  ASSERT_EQ(json.status, 0) << json.err;
  std::ofstream(dir_ / "out.json") << json.out;
  // python3's json module, a parser of its own, reads the whole document and finds the values.
  const std::string py = "python3 -c 'import json,sys; d=json.load(sys.stdin); p=d[\"run_files\"][0][\"points\"]; "
                         "print(len(p), repr(p[0][\"throughput_mbit_s\"][\"simulated\"]), d[\"schema\"])' < " +
                         path("out.json") + " > " + path("py.out");
  ASSERT_EQ(std::system(py.c_str()), 0);
  const auto csv = csv_rows("json.csv");
  ASSERT_EQ(csv.size(), 12u);
  const auto w = split_words(slurp(dir_ / "py.out"));
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0], "12");
  EXPECT_EQ(std::stod(w[1]), cell(csv[0], "sim_throughput_mbps"));
  EXPECT_EQ(w[2], "hcasim.compare/1");
  const Json doc = Json::parse(json.out);
  EXPECT_EQ(doc["duration_s"], 0.05);
  EXPECT_EQ(doc["run_files"][0]["run_file"], runs);
  EXPECT_EQ(doc["run_files"][0]["gated"], false);
  const Json& p = doc["run_files"][0]["points"][0];
  const auto row = split_words(line_starting(text.out, p["table"].get<std::string>() + " "));
  ASSERT_GE(row.size(), 6u);
  EXPECT_EQ(row[4], fixed(p["throughput_mbit_s"]["measured"], 2));
  EXPECT_EQ(row[5], fixed(p["throughput_mbit_s"]["simulated"], 2));
  // A run file is not gated: no metric has a gate's verdict, measured or not.
  for (const Json& point : doc["run_files"][0]["points"])
    for (const auto& [key, metric] : point.items())
      if (metric.is_object()) {
        EXPECT_TRUE(metric["within"].is_null()) << key;
      }
  EXPECT_EQ(slurp(dir_ / "text.csv"), slurp(dir_ / "json.csv"));
}

TEST_F(JsonOutput, ValidateSummaryIsTheTexts) {
  std::ofstream(dir_ / "short.toml") << short_scenario();
  const std::string cmd = "validate " + path("short.toml") + " -j 2 --duration 0.1";
  const Outcome text = run(cmd);
  ASSERT_LE(text.status, 1) << text.err;
  const Outcome json = run(cmd + " --json");
  ASSERT_EQ(json.status, text.status) << json.err;
  const Json doc = Json::parse(json.out);
  EXPECT_EQ(doc["schema"], "hcasim.validate/1");
  EXPECT_EQ(doc["duration_s"], 0.1);
  ASSERT_EQ(doc["scenarios"].size(), 1u);
  EXPECT_EQ(doc["scenarios"][0]["points"].size(), 2u);
  const Json& sum = doc["summary"];
  ASSERT_EQ(sum["tables"].size(), 1u);
  const Json& table = sum["tables"][0];
  EXPECT_EQ(table["scenario"], "short");
  EXPECT_EQ(table["kind"], "netperf");
  const auto lines = lines_of(text.out);
  const auto summary = std::find_if(lines.begin(), lines.end(), [](const std::string& l) { return l.rfind("summary of ", 0) == 0; });
  ASSERT_NE(summary, lines.end()) << text.out;
  for (const Json& m : table["metrics"]) {
    const auto name = m["name"].get<std::string>();
    const auto at = std::find_if(summary, lines.end(), [&](const std::string& l) { return l.find(" " + name + " ") != std::string::npos; });
    ASSERT_NE(at, lines.end()) << name;
    const std::string& row = *at;
    EXPECT_NE(row.find(fmt::format("{:.1f} %", m["median_abs_error_pct"].get<double>())), std::string::npos)
        << name << ": " << row;
    EXPECT_NE(row.find(fmt::format("{:.1f} %", m["max_abs_error_pct"].get<double>())), std::string::npos) << row;
    EXPECT_NE(row.find(fmt::format("{}/{}", m["gated_within"].get<int>(), m["gated"].get<int>())), std::string::npos)
        << row;
  }
  EXPECT_EQ(table["metrics"][0]["name"], "throughput");
  EXPECT_EQ(table["metrics"][0]["tolerance_relative"], 0.15);
  EXPECT_EQ(sum["gated_points"], 2);
  EXPECT_NE(text.out.find(sum["ok"].get<bool>() ? "ok: all 2 gated points of 1 scenario within tolerance" : "FAIL: 2"),
            std::string::npos);
  EXPECT_NE(text.out.find(fmt::format("target met by {} of {} netperf tables", sum["netperf_tables_target_met"].get<int>(),
                                      sum["netperf_tables"].get<int>())),
            std::string::npos);
}

// --- sweep ----------------------------------------------------------------------------------

TEST_F(JsonOutput, SweepPointsAreTheTablesAndTheCsvs) {
  const std::string cmd = "sweep ib_write_lat -s 2,64 -n 200 --vary hca.blueflame=on,off -j 2 --csv ";
  const Outcome text = run(cmd + path("text.csv"));
  ASSERT_EQ(text.status, 0) << text.err;
  Outcome json;
  const Json doc = run_json(cmd + path("json.csv") + " --json", &json);
  EXPECT_EQ(run(cmd + path("json.csv") + " --json").out, json.out);
  EXPECT_EQ(slurp(dir_ / "text.csv"), slurp(dir_ / "json.csv"));
  EXPECT_EQ(doc["schema"], "hcasim.sweep/1");
  EXPECT_EQ(doc["sizes_bytes"], Json::array({2, 64}));
  EXPECT_EQ(doc["variants"], Json::array({"hca.blueflame=on", "hca.blueflame=off"}));
  const auto csv = csv_rows("json.csv");
  ASSERT_EQ(doc["points"].size(), 4u);
  ASSERT_EQ(csv.size(), 4u);
  const auto lines = lines_of(text.out);
  for (size_t i = 0; i < 4; ++i) {
    const Json& p = doc["points"][i];
    EXPECT_EQ(p["variant"], csv[i].at("variant"));
    EXPECT_EQ(p["bytes"].get<double>(), cell(csv[i], "bytes"));
    EXPECT_EQ(p["t_typical_us"].get<double>(), cell(csv[i], "t_typical_us"));
    EXPECT_EQ(p["blueflame"], csv[i].at("blueflame"));
    const auto w = split_words(lines.at(3 + i));
    ASSERT_EQ(w.size(), 7u) << lines.at(3 + i);
    EXPECT_EQ(w[0], std::to_string(p["bytes"].get<int>()));
    EXPECT_EQ(w[1], p["variant"]);
    EXPECT_EQ(w[2], std::to_string(p["iterations"].get<int>()));
    EXPECT_EQ(w[3], fixed(p["t_min_us"], 2));
    EXPECT_EQ(w[4], fixed(p["t_max_us"], 2));
    EXPECT_EQ(w[5], fixed(p["t_typical_us"], 2));
    EXPECT_EQ(w[6], fixed(p["t_avg_us"], 2));
  }
  // netperf's columns under netperf --json's names.
  const Json np = run_json("sweep netperf -c -l 0.1 -- -m 16K,64K --json");
  ASSERT_EQ(np["points"].size(), 2u);
  EXPECT_TRUE(np["points"][0].contains("throughput_mbit_s"));
  EXPECT_TRUE(np["points"][0].contains("service_demand_local_us_per_kb"));
  EXPECT_TRUE(np["points"][0]["service_demand_remote_us_per_kb"].is_null());
  EXPECT_EQ(np["points"][1]["send_size_bytes"], 65536);
}

// --- calibrate ------------------------------------------------------------------------------

TEST_F(JsonOutput, CalibrateFitIsTheTextsAndTheCsvs) {
  const std::string runs = std::string(HCASIM_REFERENCE_DIR) + "/seed000/runs.txt:-r 64K";
  const std::string cmd = "calibrate --platform connectx-ddr-pcie1x8 --fit cpu.copy_rx_rate '" + runs +
                          "' --max-evals 4 --duration 0.05 -j 2";
  const Outcome text = run(cmd + " -o " + path("text.toml") + " --csv " + path("text.csv"));
  ASSERT_EQ(text.status, 0) << text.err;
  Outcome json;
  const Json doc = run_json(cmd + " -o " + path("json.toml") + " --csv " + path("json.csv") + " --json", &json);
  EXPECT_EQ(slurp(dir_ / "text.csv"), slurp(dir_ / "json.csv"));
  EXPECT_EQ(doc["schema"], "hcasim.calibrate/1");
  EXPECT_EQ(doc["output"], path("json.toml"));
  EXPECT_TRUE(fs::exists(dir_ / "json.toml"));
  EXPECT_EQ(doc["max_evals"], 4);
  // Every evaluation line of the text.
  const auto& evals = doc["evaluations"];
  ASSERT_FALSE(evals.empty());
  for (const Json& e : evals) {
    const auto w = split_words(line_starting(text.out, std::to_string(e["eval"].get<int>()) + " ", true));
    ASSERT_GE(w.size(), 4u);
    EXPECT_EQ(w[1], fixed(e["rms_error_pct"], 3));
  }
  const Json& p = doc["parameters"][0];
  EXPECT_EQ(p["key"], "cpu.copy_rx_rate");
  const auto w = split_words(line_starting(text.out, "cpu.copy_rx_rate "));
  ASSERT_GE(w.size(), 7u);
  EXPECT_EQ(w[6], fixed(p["sensitivity"], 3));
  const auto csv = csv_rows("json.csv");
  const Json& q = doc["fit"]["quantities"];
  ASSERT_EQ(q.size(), csv.size());
  ASSERT_GE(q.size(), 2u);
  for (size_t i = 0; i < q.size(); ++i) {
    EXPECT_EQ(q[i]["quantity"], csv[i].at("quantity"));
    EXPECT_EQ(q[i]["measured"].get<double>(), cell(csv[i], "measured"));
    EXPECT_EQ(q[i]["fitted"].get<double>(), cell(csv[i], "fitted"));
    EXPECT_EQ(fixed(q[i]["fitted_error_pct"], 4), csv[i].at("fitted_error_pct"));
  }
  EXPECT_NE(text.out.find(fmt::format("RMS error {:.2f} % at the start, {:.2f} % fitted",
                                      doc["fit"]["rms_error_start_pct"].get<double>(),
                                      doc["fit"]["rms_error_fitted_pct"].get<double>())),
            std::string::npos);
}

// --- what --json cannot honour ---------------------------------------------------------------

TEST_F(JsonOutput, WhatJsonCannotHonourIsAOneLineError) {
  const std::string csv = " --csv /dev/stdout";
  const std::string conflict = "hcasim: error: --json: --csv /dev/stdout would write CSV into the JSON on stdout; write "
                               "the CSV to a file\n";
  for (const std::string& args : {"netperf -l 0.1 --json" + csv, "ib_write_lat -n 100 --json" + csv,
                                 "run seed000 --json" + csv, "compare x.txt --json" + csv,
                                 "sweep netperf -l 0.1 -- -m 4K --json" + csv,
                                 "calibrate --platform connectx-ddr-pcie1x8 --fit cpu.syscall x.txt --json" + csv}) {
    const Outcome r = run(args);
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_EQ(r.out, "") << args;
    EXPECT_EQ(r.err, conflict) << args;
  }
  const std::string listing = "hcasim: error: --json: --list-commands prints the points' commands, not figures; give "
                              "--json with --collect\n";
  for (const std::string& args : {"run seed000 --json --list-commands " + path("points"),
                                 "sweep netperf -l 0.1 -- -m 4K --json --list-commands " + path("points")}) {
    const Outcome r = run(args);
    EXPECT_EQ(r.status, 2) << args;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, listing);
    EXPECT_FALSE(fs::exists(dir_ / "points")) << "nothing written";
  }
  // A flag, not an option with a value: `--json FILE` would read FILE as a positional.
  const Outcome value = run("netperf -l 0.1 --json out.json");
  EXPECT_EQ(value.status, 2);
  EXPECT_EQ(value.err, "hcasim: error: --json: takes no value (got 'out.json')\n");
  const Outcome perftest_value = run("ib_write_lat --json=out.json");
  EXPECT_EQ(perftest_value.status, 2);
  EXPECT_EQ(perftest_value.err, "hcasim: error: --json: takes no value\n");
  EXPECT_FALSE(fs::exists(dir_ / "out.json"));
  // perftest's own --out_json (a file of `key: value,` lines, not JSON) stays refused by name.
  const Outcome out_json = run("ib_write_bw --out_json");
  EXPECT_EQ(out_json.status, 2);
  EXPECT_EQ(out_json.err, "hcasim: error: --out_json: perftest option not supported by hcasim ib_write_bw\n");
}

}  // namespace
