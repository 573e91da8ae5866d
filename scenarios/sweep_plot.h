#pragma once
/// \file The plot of `hcasim sweep --plot PREFIX` (sweep.h) and the measured points of
/// `--reference FILE` drawn on it.
///
/// PREFIX.dat holds the simulated points, a block per variant (gnuplot `index` 0, 1, ...,
/// blocks separated by two blank lines, each headed by a comment naming its variant); each line
/// is the message size in bytes and one column per metric, written exactly as the sweep's CSV
/// cell ("-" where the CSV's is empty). PREFIX.ref.dat (with --reference) holds the measured
/// points the same way, a block per measured series. PREFIX.gp is the gnuplot script that draws
/// PREFIX.png and PREFIX.svg from them (`gnuplot PREFIX.gp` in PREFIX's directory draws them
/// again): a panel per quantity, message size on a log2 axis, a line per variant (simulated)
/// and points per measured series.
#include <cstdint>
#include <string>
#include <vector>

#include "model/error.h"

namespace hcasim::scenarios {

/// One metric of a sweep: a column of the sweep's CSV, drawn in a panel.
struct PlotMetric {
  std::string column;  ///< the CSV column ("throughput_mbps") and the reference column it reads
  std::string title;   ///< legend suffix ("" for a panel's only metric, "local", "remote")
  size_t panel = 0;    ///< index into SweepPlotSpec::panels
  bool dashed = false; ///< drawn dashed (the remote side)
};

/// One line (a variant) or set of points (a measured series) of the plot.
struct PlotSeries {
  std::string title;  ///< the variant's label, or the measured series' name
  /// (size in bytes, one cell per metric as text: the CSV cell, "-" when empty), by size
  std::vector<std::pair<uint64_t, std::vector<std::string>>> points;
};

/// Everything the plot shows.
struct SweepPlotSpec {
  std::string title;                ///< the sweep's command line
  std::vector<std::string> panels;  ///< each panel's y axis label ("throughput (10^6 bit/s)")
  std::vector<PlotMetric> metrics;  ///< the data files' columns after the size, in order
  std::vector<PlotSeries> simulated;  ///< one per variant, in variant order
  std::vector<PlotSeries> measured;   ///< --reference's series (may be empty)
};

/// The text of a data file: a header naming the columns, then a block per series (see the
/// \file comment). Deterministic.
std::string format_plot_data(const SweepPlotSpec& spec, const std::vector<PlotSeries>& series,
                             const std::string& what);

/// The gnuplot script drawing PREFIX.png then PREFIX.svg from `data_file` and, when
/// spec.measured is not empty, `reference_file` (names relative to the script's directory).
std::string format_plot_script(const SweepPlotSpec& spec, const std::string& png, const std::string& svg,
                               const std::string& data_file, const std::string& reference_file);

/// The measured series of `path` for a sweep of `tool` and `metrics`: a reference CSV (a name
/// ending in .csv: a size column send_size_bytes or bytes, the metrics' columns, those missing
/// read as not measured; a series per configuration: the values of the columns that are no
/// measurement, size, count or note, `table` and `mode` as they are and others as NAME=VALUE,
/// leaving out a column equal in every row or one-to-one with an earlier one; one series
/// "measured" without any)
/// or else a run file (run_file.h: the runs of `tool`, a series per run's settings, named as a
/// variant is, "measured" without any). Throws InputError "--reference PATH: ..." when the file
/// cannot be read, has no size column, a cell is not a number, or no point of `tool`.
std::vector<PlotSeries> load_reference_series(const std::string& path, const std::string& tool,
                                              const std::vector<PlotMetric>& metrics);

/// Checks before the sweep runs that PREFIX.png, .svg, .dat, .gp (and .ref.dat) can be written
/// (util::check_output_path); InputError "--plot PREFIX...: ..." otherwise.
/// The files --plot PREFIX writes: PREFIX.png, .svg, .dat, .ref.dat and .gp.
std::vector<std::string> plot_files(const std::string& prefix);

void check_plot_prefix(const std::string& prefix);

/// Writes the data files and the script into a new directory beside PREFIX, runs `gnuplot`
/// there, checks that both images were made and renames every file into place. On any failure
/// nothing is left: InputError "--plot PREFIX: gnuplot failed (exit status N): LINE", or
/// Interrupted on SIGINT/SIGTERM.
void write_sweep_plot(const std::string& prefix, const SweepPlotSpec& spec, const std::string& gnuplot);

}  // namespace hcasim::scenarios
