// gnuplot helpers (gnuplot.h).
#include "scenarios/gnuplot.h"

#include <sstream>

#include <fmt/format.h>

#include "scenarios/report.h"

namespace hcasim::scenarios {

std::string plot_colour(size_t index) {
  constexpr const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                      "#9467bd", "#8c564b", "#e377c2", "#17becf"};
  return kColours[index % (sizeof kColours / sizeof kColours[0])];
}

std::string gp_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') out += "''";
    else if (c != '\n' && c != '\r') out += c;
  }
  return out + "'";
}

std::string gp_dquote(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += std::string("\\") + c;
    else if (c == '\n') out += "\\n";
    else if (c != '\r') out += c;
  }
  return out + "\"";
}

std::string size_tics(const std::set<uint64_t>& sizes) {
  std::string tics;
  for (uint64_t b : sizes) tics += fmt::format("{}\"{}\" {}", tics.empty() ? "" : ", ", size_label(b), b);
  return "set xtics (" + tics + ")\n";
}

std::string gnuplot_last_line(const std::string& text) {
  std::istringstream in(text);
  std::string line, last;
  while (std::getline(in, line)) {
    const size_t b = line.find_first_not_of(" \t\r");
    if (b != std::string::npos) last = line.substr(b);
  }
  return last.empty() ? "(no message)" : last;
}

}  // namespace hcasim::scenarios
