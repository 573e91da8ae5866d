#pragma once
/// \file The flat kernel profile in the form of q-view (HP's q-tools, the ia64 profiler of
/// seeds 003/004: `q-syscollect` samples, `q-view kernel-cpuN.info#0` prints), so that a
/// simulated profile and the seed's can be read side by side, row for row.
///
/// The form, as the seed prints it (shared/seeds/003_53dfb8b0c199e3c9.txt):
///
///     % time      self     cumul     calls self/call  tot/call name
///      34.69     18.97     18.97     16.6M     1.15u     1.15u do_csum
///
/// Columns: % time "%6.2f", self and cumul seconds "%10.2f", then calls, self/call and
/// tot/call right-aligned in 10 characters as q-view's three-significant-digit numbers with an
/// SI prefix (format_qview_number), "-" where a total per call is unknown (q-view prints it for
/// functions its call-graph sampling did not attribute, tcp_packet in the seed), then a space
/// and the function name.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "frontends/netperf_config.h"

namespace hcasim::frontends {

/// One function (or activity) of a flat profile.
struct QviewRow {
  std::string name;                      ///< kernel function or activity: "do_csum", "default_idle"
  double self_s = 0;                     ///< seconds spent in the function itself
  double calls = 0;                      ///< times it ran (q-view's counts are estimates: real, not integer)
  std::optional<double> total_s;         ///< seconds including its callees; empty prints "-"
};

/// A number as q-view prints it: three significant digits and an SI prefix n, u, m, (none), k,
/// M, G chosen so that the mantissa lies in [1, 1000): 80700 -> "80.7k", 1.86e-4 -> "186u",
/// 2.25e-8 -> "22.5n", 355000 -> "355k". Mantissas of 100 or more print no decimals, of 10 or
/// more one, below 10 two (the seed's 1.15u, 22.5n, 186u). A value that rounds to 1000 moves to
/// the next prefix (999.7 -> "1.00k"). 0 prints "0"; counts below 1000 that are whole print
/// with no decimals ("5"). Negative values and values outside 1e-9..1e12 are printed with
/// "%.3g". Source: the seed's q-view output (all its numbers follow this rule).
std::string format_qview_number(double v);

/// The inverse of format_qview_number for the seed's text: "80.7k" -> 80700, "186u" ->
/// 1.86e-4, "1.00034m" -> 1.00034e-3, "355" -> 355. Empty when `text` is not a number with an
/// optional n/u/m/k/M/G suffix ("-" included).
std::optional<double> parse_qview_number(std::string_view text);

/// One row in q-view's columns (no newline): `pct` % of the profiled time, `cumul_s` the
/// running sum of self seconds down to and including this row.
std::string format_qview_row(const QviewRow& row, double pct, double cumul_s);

/// A whole flat profile of one CPU: a title line (`title`, as given), the column header, then
/// `rows` sorted by self time descending (ties keep the given order), each with its % of
/// `profiled_s` (the CPU time the profile covers, seconds; rows print 0.00 % when it is not
/// > 0) and the running cumul; "\n" ends every line. Rows with no self time and no calls are
/// left out.
std::string format_qview_profile(std::string_view title, std::vector<QviewRow> rows, double profiled_s);

/// --profile of an IPoIB run (sim::run_ipoib_stream): for each host (local = netperf, then
/// remote = netserver) and each of its CPUs that did any work, a q-view flat profile of the
/// measured interval: one row per kernel function of model/netstack.h, named as the host's
/// kernel names it (IpoibStreamResult::local_naming, remote_naming), with time and calls
/// (tot/call = self/call: the simulation has no call graph), "timer_interrupt" for the timer
/// ticks and "default_idle" for the rest of the interval (its calls are the times the CPU went
/// idle, not counted: "-"). Each profile starts with a blank line and a title naming the CPU,
/// the host's platform and the program. `local_name`/`remote_name`: the platform names.
std::string format_ipoib_profile(const IpoibStreamResult& result, std::string_view local_name,
                                 std::string_view remote_name);

}  // namespace hcasim::frontends
