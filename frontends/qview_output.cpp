#include "frontends/qview_output.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

namespace hcasim::frontends {

namespace {

struct Prefix {
  char c;        ///< '\0': none
  double scale;  ///< value of one unit of the prefix
};
constexpr Prefix kPrefixes[] = {{'n', 1e-9}, {'u', 1e-6}, {'m', 1e-3}, {'\0', 1}, {'k', 1e3}, {'M', 1e6}, {'G', 1e9}};

/// Three significant digits of a mantissa in [1, 1000).
std::string mantissa(double m) {
  if (m >= 100) return fmt::format("{:.0f}", m);
  if (m >= 10) return fmt::format("{:.1f}", m);
  return fmt::format("{:.2f}", m);
}

}  // namespace

std::string format_qview_number(double v) {
  if (v == 0) return "0";
  if (!(v >= 1e-9 && v < 1e12)) return fmt::format("{:.3g}", v);
  if (v >= 1 && v < 1000 && v == std::floor(v)) return fmt::format("{:.0f}", v);
  for (size_t i = 0; i < std::size(kPrefixes); ++i) {
    const Prefix& p = kPrefixes[i];
    const double m = v / p.scale;
    if (m >= 1000 && i + 1 < std::size(kPrefixes)) continue;
    // Rounding to three digits may reach 1000: that is 1.00 of the next prefix.
    const std::string text = mantissa(m);
    if (text == "1000" && i + 1 < std::size(kPrefixes)) {
      const Prefix& next = kPrefixes[i + 1];
      return next.c ? fmt::format("1.00{}", next.c) : "1.00";
    }
    return p.c ? text + p.c : text;
  }
  return fmt::format("{:.3g}", v);  // unreachable: the last prefix takes everything up to 1e12
}

std::optional<double> parse_qview_number(std::string_view text) {
  if (text.empty()) return std::nullopt;
  double scale = 1;
  const char last = text.back();
  for (const Prefix& p : kPrefixes)
    if (p.c && last == p.c) {
      scale = p.scale;
      text.remove_suffix(1);
      break;
    }
  if (text.empty() || text.size() > 64) return std::nullopt;
  const std::string s(text);
  // strtod alone would take "inf", "0x1p3" and leading blanks: allow digits and one point only.
  if (s.find_first_not_of("0123456789.") != std::string::npos || std::count(s.begin(), s.end(), '.') > 1 || s == ".")
    return std::nullopt;
  return std::strtod(s.c_str(), nullptr) * scale;
}

std::string format_qview_row(const QviewRow& row, double pct, double cumul_s) {
  return fmt::format("{:6.2f}{:10.2f}{:10.2f}{:>10}{:>10}{:>10} {}", pct, row.self_s, cumul_s,
                     format_qview_number(row.calls),
                     row.calls > 0 ? format_qview_number(row.self_s / row.calls) : std::string("-"),
                     row.total_s && row.calls > 0 ? format_qview_number(*row.total_s / row.calls) : std::string("-"),
                     row.name);
}

std::string format_qview_profile(std::string_view title, std::vector<QviewRow> rows, double profiled_s) {
  rows.erase(std::remove_if(rows.begin(), rows.end(), [](const QviewRow& r) { return r.self_s <= 0 && r.calls <= 0; }),
             rows.end());
  std::stable_sort(rows.begin(), rows.end(), [](const QviewRow& a, const QviewRow& b) { return a.self_s > b.self_s; });
  std::string out = fmt::format("{}\n% time      self     cumul     calls self/call  tot/call name\n", title);
  double cumul = 0;
  for (const QviewRow& r : rows) {
    cumul += r.self_s;
    const double pct = profiled_s > 0 ? 100 * r.self_s / profiled_s : 0;
    out += format_qview_row(r, pct, cumul);
    out += '\n';
  }
  return out;
}

std::string format_ipoib_profile(const IpoibStreamResult& r, std::string_view local_name,
                                 std::string_view remote_name) {
  std::string out;
  const double elapsed = r.stream.elapsed_s;
  auto host = [&](const std::vector<KernelProfile>& kernel, const model::KernelNaming& naming,
                  const std::vector<CoreProfile>& cores, std::string_view platform, std::string_view program) {
    for (size_t i = 0; i < kernel.size() && i < cores.size(); ++i) {
      double busy_ns = 0, timer_ns = 0;
      for (const auto& [name, ns] : cores[i].busy_ns) {
        busy_ns += ns;
        if (name == "timer") timer_ns = ns;
      }
      if (busy_ns <= timer_ns) continue;  // the CPU only took timer ticks
      std::vector<QviewRow> rows;
      for (size_t f = 0; f < model::kKernelFnCount; ++f) {
        const double self = kernel[i].ns[f] * 1e-9;
        rows.push_back(
            {std::string(model::kernel_fn_name(static_cast<model::KernelFn>(f), naming)), self, kernel[i].calls[f], self});
      }
      rows.push_back({"timer_interrupt", timer_ns * 1e-9, 0, std::nullopt});
      rows.push_back({"default_idle", std::max(0.0, elapsed - busy_ns * 1e-9), 0, std::nullopt});
      out += '\n';  // not "\n" + std::string&&: GCC 12's false -Wrestrict (GCC bug 105329)
      out += format_qview_profile(fmt::format("Flat profile of CPU time on cpu{} of {} ({}), simulated, {:.2f} s:",
                                              kernel[i].core, platform, program, elapsed),
                                  std::move(rows), elapsed);
    }
  };
  host(r.local_kernel, r.local_naming, r.stream.local_profile, local_name, "netperf");
  host(r.remote_kernel, r.remote_naming, r.stream.remote_profile, remote_name, "netserver");
  return out;
}

}  // namespace hcasim::frontends
