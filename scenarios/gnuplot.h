#pragma once
/// \file What the gnuplot scripts of `hcasim validate --report` (report.h) and `hcasim sweep
/// --plot` (sweep_plot.h) share: quoting, colours, a log2 size axis, gnuplot's error line.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

namespace hcasim::scenarios {

/// The colour of series `index` of a plot, "#rrggbb": matplotlib's "tab10" cycle without its
/// grey and olive, from the start again after eight.
std::string plot_colour(size_t index);

/// `text` inside gnuplot single quotes ('' is a quote; line breaks dropped).
std::string gp_quote(const std::string& text);

/// `text` inside gnuplot double quotes, line breaks kept as \n (titles).
std::string gp_dquote(const std::string& text);

/// The x tics of a log2 size axis: every size of `sizes` (bytes), labelled as netperf writes
/// sizes (report.h size_label): "set xtics (...)\n".
std::string size_tics(const std::set<uint64_t>& sizes);

/// The last non-empty line of gnuplot's stderr `text` (gnuplot ends with the error that stopped
/// it), trimmed; "(no message)" when there is none.
std::string gnuplot_last_line(const std::string& text);

}  // namespace hcasim::scenarios
