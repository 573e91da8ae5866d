#pragma once
/// \file The reference CSVs a scenario's points reproduce (validation/, the ../shared seeds
/// in CSV form) and the CSVs the children write: selecting a point's row and reading its figures.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/error.h"
#include "scenarios/scenario.h"

namespace hcasim::scenarios {

/// Where spec.file is: itself when absolute, else relative to `base_dir` (the data directory).
std::filesystem::path reference_path(const ReferenceSpec& spec, const std::string& base_dir);

/// Measured (or simulated) values of one point; empty = not measured.
struct Figures {
  std::optional<double> throughput_mbps;  ///< 10^6 bits/s
  std::optional<double> sd_local;         ///< us/KB; TCP_RR: us per transaction (netperf's us/Tr)
  std::optional<double> sd_remote;        ///< us/KB; TCP_RR: us per transaction
  std::optional<double> util_local;       ///< CPU utilisation of netperf's host (TCP_STREAM: the sender), %
  std::optional<double> util_remote;      ///< of netserver's host (TCP_STREAM: the receiver), % (0..100)
  std::optional<double> transaction_rate;  ///< TCP_RR: transactions per second
};

/// The reference row of `spec` in CSV text `csv_text` (named `origin` in messages). Throws
/// InputError "ORIGIN: ..." when a match column is missing, the match selects no row or more
/// than one, or a measured cell is not a number.
Figures reference_figures(std::string_view csv_text, const std::string& origin,
                          const ReferenceSpec& spec);

/// Reads spec.file (relative to `base_dir` unless absolute) and returns reference_figures().
Figures read_reference(const ReferenceSpec& spec, const std::string& base_dir);


/// The reference row of a netperf TCP_RR point, selected as reference_figures() selects it:
/// transaction_rate_per_s (the column required), sd_local_us_per_tr and sd_remote_us_per_tr
/// (netperf's us/Tr, into sd_local and sd_remote), util_local_pct and util_remote_pct. Throws as
/// reference_figures(), also when every figure is empty.
Figures rr_reference_figures(std::string_view csv_text, const std::string& origin, const ReferenceSpec& spec);

/// The simulated figures from the CSV `hcasim netperf --csv` writes (frontends/netperf_output.h; its
/// util_* and sd_* cells are empty for a side netperf did not measure, -c / -C; its
/// transaction_rate_per_s cell is TCP_RR's rate, empty for the stream tests, and a TCP_RR's sd_*
/// cells are us per transaction).
Figures netperf_csv_figures(std::string_view csv_text, const std::string& origin);

/// Measured (or simulated) latency of one message size, as perftest reports it (half the
/// round trip for WRITE and SEND, the whole one for READ and atomics); empty = not measured.
struct LatencyFigures {
  uint64_t bytes = 0;                  ///< message size, B
  std::optional<double> t_min_us;      ///< us
  std::optional<double> t_max_us;      ///< us
  std::optional<double> t_typical_us;  ///< us (perftest's t_typical: the median)
};

/// The reference row of a latency point: selected as reference_figures() selects it (same
/// errors), its `bytes` cell (required: InputError "ORIGIN: no column 'bytes'" or "ORIGIN:
/// column bytes: 'X' is not a whole number") and its t_min_us, t_max_us, t_typical_us cells.
LatencyFigures latency_reference_figures(std::string_view csv_text, const std::string& origin,
                                         const ReferenceSpec& spec);

/// Reads spec.file (relative to `base_dir` unless absolute) and returns
/// latency_reference_figures().
LatencyFigures read_latency_reference(const ReferenceSpec& spec, const std::string& base_dir);

/// Every row of the CSV a perftest latency tool writes (`hcasim ib_write_lat|ib_send_lat|
/// ib_read_lat|ib_atomic_lat --csv`, header
/// `tool,bytes,iterations,t_min_us,t_max_us,t_typical_us,t_avg_us,t_stdev_us,t_p99_us,t_p999_us`,
/// one row per message size), in file order. Throws InputError "ORIGIN: ..." when a column
/// bytes, t_min_us, t_max_us or t_typical_us is missing, there is no data row, or a cell is
/// not a number (bytes: not a whole number).
std::vector<LatencyFigures> latency_csv_rows(std::string_view csv_text, const std::string& origin);

/// Measured (or simulated) bandwidth of one message size, as perftest's bw tools report it;
/// empty = not measured.
struct BandwidthFigures {
  uint64_t bytes = 0;                        ///< message size, B
  std::optional<double> bw_average_gbit_s;   ///< BW average, 10^9 bit/s
  std::optional<double> msg_rate_mpps;       ///< MsgRate, 10^6 messages/s
};

/// The reference row of a bandwidth point, selected as reference_figures() selects it: bytes
/// (required, a whole number), bw_avg_gbit_s (the column required; perftest's BW average in
/// 10^9 bit/s) and msg_rate_mpps. Throws as reference_figures(), also when both are empty.
BandwidthFigures bandwidth_reference_figures(std::string_view csv_text, const std::string& origin,
                                             const ReferenceSpec& spec);

/// Every row of the CSV a perftest bw tool writes (`hcasim ib_write_bw|ib_send_bw|ib_read_bw|ib_atomic_bw --csv`) (perftest_csv_header:
/// bytes, bw_avg_gbit_s, msg_rate_mpps among its columns), in file order. Throws InputError
/// "ORIGIN: ..." for a missing column, no data row or a cell that is not a number.
std::vector<BandwidthFigures> bandwidth_csv_rows(std::string_view csv_text, const std::string& origin);

/// Measured (or simulated) figures of one run of rdma-core's pingpong programs
/// (ibv_rc_pingpong and its siblings): its two result lines, "B bytes in S seconds = R Mbit/sec"
/// and "N iters in S seconds = U usec/iter", as the shown side prints them.
struct PingpongFigures {
  uint64_t size = 0;                     ///< message size (-s), B
  uint64_t iters = 0;                    ///< iterations (-n), each one round trip
  std::optional<double> usec_per_iter;   ///< us per iteration
  std::optional<double> mbit_s;          ///< 10^6 bit/s: size x iters x 2 x 8 / usec
};

/// The reference row of a pingpong point, selected as reference_figures() selects it:
/// usec_per_iter (the column required) and mbit_s; size and iters are left 0 (the point's
/// command says them). Throws as reference_figures(), also when both are empty.
PingpongFigures pingpong_reference_figures(std::string_view csv_text, const std::string& origin,
                                           const ReferenceSpec& spec);

/// The text of reference file `path`; InputError "PATH: cannot read" when it cannot be read.
std::string read_reference_text(const std::string& path);

/// Reads spec.file (relative to `base_dir` unless absolute) and returns what `read` (one of the
/// *_reference_figures above) makes of it.
template <typename Read>
auto read_reference_with(const ReferenceSpec& spec, const std::string& base_dir, Read read) {
  const std::string file = reference_path(spec, base_dir).string();
  return read(read_reference_text(file), file, spec);
}

/// The one row of the CSV a pingpong program writes (`hcasim ibv_rc_pingpong ... --csv`,
/// format_pingpong_csv: size_bytes, iterations, mbit_s and usec_per_iter among its columns).
/// Throws InputError "ORIGIN: ..." for a missing column, not exactly one data row, or a cell
/// that is not a number.
PingpongFigures pingpong_csv_figures(std::string_view csv_text, const std::string& origin);

/// The first of `rows` whose bytes equals `bytes`, or nullopt.
std::optional<LatencyFigures> latency_row_for_bytes(const std::vector<LatencyFigures>& rows,
                                                    uint64_t bytes);



}  // namespace hcasim::scenarios
