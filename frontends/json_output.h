#pragma once
/// \file `--json`: the figures of netperf's and perftest's simulated runs as one JSON document
/// (nlohmann::ordered_json), and the helpers every command's JSON shares. The schema, key by
/// key, is in docs/cli.md ("--json").
///
/// Every document is an object whose first keys identify the run: "schema" (the command's
/// schema name and version, e.g. "hcasim.netperf/1"), "command_line" (the words as given,
/// after "hcasim"), and where they apply the platforms, the --set assignments and the seed.
/// The figures follow, taken from the same result structs as the text and the CSV; numbers are
/// in full precision (nlohmann's shortest round-trip form), units in the key names (`_s`,
/// `_us`, `_ns`, `_pct`, `_bytes`, `_mbit_s`, `_gbit_s`, `_mib_s`, `_mpps`, `_us_per_kb`), a
/// figure the run did not measure is null. Nothing depends on the wall clock: the same inputs
/// give the same bytes.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "frontends/netperf_cli.h"
#include "frontends/netperf_config.h"
#include "frontends/netperf_output.h"
#include "frontends/perftest_cli.h"
#include "frontends/perftest_config.h"
#include "model/fault.h"

namespace hcasim::frontends {

/// A JSON document whose objects keep their keys in insertion order (the order docs/cli.md
/// lists them).
using Json = nlohmann::ordered_json;

/// `doc` as text: indented by two spaces, UTF-8 as given (strings are not escaped beyond
/// what JSON requires), ending in "\n". Doubles print in nlohmann's shortest form that reads
/// back to the same double; a NaN or an infinity (which JSON cannot hold) prints as null.
std::string dump_json(const Json& doc);
/// The same for a document whose objects keep their keys sorted (`hcasim params`).
std::string dump_json(const nlohmann::json& doc);

/// The words after `hcasim`, as given: ["COMMAND", ARGS...]; the program's own path is left
/// out, so that the document does not depend on where hcasim is installed.
Json json_command_line(std::string_view command, const std::vector<std::string>& args);

/// The message `--json` gives when `csv_path` is stdout (util::is_stdout_path): "--json: --csv
/// PATH would write CSV into the JSON on stdout; write the CSV to a file"; empty otherwise.
std::string json_csv_conflict(const std::optional<std::string>& csv_path);

/// A HCA's fault counters (model::FaultStats), one key per counter: packets, lost, corrupted,
/// duplicated, reordered, retransmitted, naks, timeouts, rnr_naks.
Json fault_stats_json(const model::FaultStats& stats);

/// Per-link busy time: [{"link": NAME, "busy_s": S}, ...] in the given order.
Json link_busy_json(const std::vector<std::pair<std::string, double>>& links);

/// --profile of one host, the figures of format_cpu_profile: {"utilisation_pct", "elapsed_s",
/// "cpus": [{"cpu", "busy_ns": {ACTIVITY: NS, ...} in the given order, zeros kept, "idle_ns",
/// "total_busy_ns", "wakeups", "ipis", "context_switches"}]}. idle_ns is elapsed minus busy,
/// never negative (0 when `elapsed_s` <= 0); the counts are CoreProfile's.
Json cpu_profile_json(const std::vector<CoreProfile>& cores, double elapsed_s);

/// `hcasim netperf --json` (schema "hcasim.netperf/1"): identity (command line, platforms,
/// transport, seed, --set, test, length), "result" (netperf's figures and counts from
/// `result` and `figures`: what the text row and the --csv row print), and when asked for
/// "profile" (--profile: each host's cpu_profile_json, and over IPoIB each CPU's kernel
/// functions), "stats" (--stats: the simulator's counts, without wall time or RSS), "faults"
/// (when a fault.* probability is above 0) and "verify_data" (--verify-data: bytes and crc32
/// of both ends). `ipoib` is the IPoIB run's result (nullptr over SDP).
Json netperf_json(const std::vector<std::string>& args, const NetperfOptions& options,
                  const TcpStreamResult& result, const NetperfFigures& figures,
                  std::string_view local_platform, std::string_view remote_platform,
                  const IpoibStreamResult* ipoib);

/// `hcasim ib_write_lat|ib_write_bw|ib_send_bw --json` (schema "hcasim.perftest/1"):
/// identity, "setup" (what perftest's banner prints: device, connection type, QPs, depths, MTU, inline size,
/// BlueFlame and write combining, the cycle rate `cpu_mhz`), "results" (one object per size:
/// perftest_lat_figures or perftest_bw_figures, the values of the text rows and the --csv
/// rows), and with --stats "stats", with faults "faults".
Json perftest_json(const std::vector<std::string>& args, const PerftestOptions& options,
                   const PerftestResult& result, double cpu_mhz, std::string_view local_platform,
                   std::string_view remote_platform);

}  // namespace hcasim::frontends
