#pragma once
/// \file The report directory of `hcasim validate --report DIR`: Markdown, CSVs, gnuplot data,
/// script and PNG plots.
///
/// DIR holds, for each scenario NAME (safe_file_name):
/// - NAME-results.csv: the run CSV (format_run_csv), as `hcasim run NAME --csv` writes it;
/// - NAME-report.txt: the text `hcasim run` prints (format_run_report);
/// - per netperf table T: NAME-T-throughput.png, throughput (Mbit/s) vs message size (B, the
///   value of the command's -m, else of its -r, which the axis label then says; log2 axis),
///   measured as points and simulated as lines, a colour per mode; its data
///   NAME-T-throughput.dat (a table none of whose points has -m or -r gets no plot);
/// - per latency table T: NAME-T-t_typical.png, t_typical (us) vs message size (B, log2 axis),
///   the same way; its data NAME-T-t_typical.dat;
/// - NAME-errors.png: a bar per point of its signed error (throughput in % for netperf points,
///   t_typical in us for latency points; grey when not gated), the tolerance as horizontal
///   lines; its data NAME-errors.dat. A scenario with both kinds has NAME-errors-netperf.png and
///   NAME-errors-latency.png instead.
/// and, for all of them, report.md (per scenario the summary table, the plots and a table of
/// every point) and plots.gp, the gnuplot script that draws every PNG from the .dat files
/// (`cd DIR && gnuplot plots.gp` draws them again).
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "scenarios/compare.h"
#include "scenarios/run_report.h"
#include "scenarios/scenario.h"

namespace hcasim::scenarios {

/// The text files of a report and the PNGs its plots.gp draws.
struct ReportFiles {
  std::vector<std::pair<std::string, std::string>> files;  ///< name in DIR -> content
  std::vector<std::string> plots;                          ///< PNG names plots.gp writes
};

/// The message size of a netperf point, B: its command's -m, else its -r (the request size,
/// which TCP_STREAM ignores, as seed 000's T2 typed it; then `*from_request`, when given, is set
/// to true); nullopt when it has neither.
std::optional<uint64_t> netperf_message_size(const ScenarioPoint& point, bool* from_request = nullptr);

/// "2", "64K", "1M", "1536": `bytes` with the largest of K, M, G (2^10, 2^20, 2^30) that
/// divides it, as netperf's size flags write it.
std::string size_label(uint64_t bytes);

/// Everything of the report but the PNGs (report.h), for `scenarios` and their `outcomes`
/// (outcomes[k] of scenarios[k], in point order). Deterministic: the same inputs give the same
/// bytes. `length_note`: as write_validation_report's.
ReportFiles make_report_files(const std::vector<Scenario>& scenarios,
                              const std::vector<std::vector<PointOutcome>>& outcomes,
                              const std::string& length_note = "");

/// Checks before a long run that `dir` can be made the report directory later: not empty, not
/// an existing file, not an existing directory that is neither empty nor a previous report
/// (one holding report.md: it is replaced), and its parent directory exists and a directory
/// can be made in it. Throws InputError "--report DIR: cannot write (reason)" otherwise.
void check_report_dir(const std::string& dir);

/// The path of the executable regular file `name` in a directory of $PATH, or nullopt.
std::optional<std::string> find_in_path(const std::string& name);

/// Writes the report (make_report_files) into a new directory beside `dir`
/// (DIR.tmp-XXXXXX), runs `gnuplot` (a program name or path) on plots.gp there, checks that
/// every PNG was made, then renames the directory to `dir`, replacing a previous report. On
/// any failure the new directory is removed and `dir` is left as it was: throws InputError
/// "--report DIR: ..." (one line: gnuplot's exit status and first error line when gnuplot
/// fails, "cannot run GNUPLOT (reason)" when it cannot start), or Interrupted on
/// SIGINT/SIGTERM. `length_note`, when not empty, is a paragraph put under the report's first
/// line (validate's --duration / --iterations note: the points ran shorter than their commands).
void write_validation_report(const std::string& dir, const std::vector<Scenario>& scenarios,
                             const std::vector<std::vector<PointOutcome>>& outcomes,
                             const std::string& gnuplot, const std::string& length_note = "");

}  // namespace hcasim::scenarios
