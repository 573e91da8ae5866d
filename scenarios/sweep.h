#pragma once
/// \file `hcasim sweep TOOL [tool flags] [-- test flags]`: one tool's figures against message
/// size, for one or more variants of the platform, as a table, a CSV and a gnuplot plot.
///
///     hcasim sweep netperf -c -C -l 10 -- -m 64..4M --vary sdp.zcopy_thresh=0,1
///     hcasim sweep ib_write_bw -a --vary pcie.max_read_request=128,512,4096
///     hcasim sweep ib_write_lat -s 2,64,1K --vary platform=connectx-ddr-pcie1x8,infinihost3-pcie1x8
///
/// TOOL is netperf (SDP, or TCP over IPoIB with --transport ipoib), ib_write_lat, ib_write_bw or
/// ib_send_bw; every word after it is the tool's, as `hcasim TOOL` takes them, except the
/// sweep's own options, which may stand anywhere among them (also after netperf's `--`):
/// `--vary KEY=V1,V2,...` (repeatable), `-j N`, `--csv FILE`, `--plot PREFIX`, `--reference FILE`,
/// `--list-commands DIR` and `--collect DIR` (fanout.h: the points run elsewhere), `--json`.
///
/// Sizes: the value of netperf's test option `-m` (after `--`) or of perftest's `-s` (`--size`)
/// is a size, a list `64,1K,64K`, or a doubling range `64..4M` (64, 128, ... up to and with 4M if
/// a power-of-two multiple of 64); K, M, G are 2^10.., k, m, g 10^3.. (model::parse_size, also for
/// perftest, whose own -s has no suffixes). perftest's `-a` runs its own 2..8M doubling in one
/// process per variant.
///
/// Variants: each `--vary KEY=V1,V2` names a platform parameter (any `--set` key) and its values,
/// or `platform=NAME,NAME` (--platform); several give their cartesian product, the first
/// `--vary` varying slowest. A variant's label is its assignments joined by spaces
/// ("sdp.zcopy_thresh=1 platform=infinihost3-pcie1x8"), as a run file's settings read.
///
/// Every point (size x variant) is its own child process, `hcasim TOOL WORDS` with the size
/// written in bytes in the size option's place and the variant's `--platform` / `--set` in front
/// (children.h run_children, `-j` at once, default the online CPUs; a progress bar when stderr
/// is a terminal): exactly what that command prints by hand. Everything is checked before any
/// child starts (sizes, variants against the platforms, the tool's flags for every point, the
/// output paths, gnuplot for --plot); errors are one line, nothing is written.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/error.h"
#include "scenarios/fanout.h"

namespace hcasim::scenarios {

/// One `--vary KEY=V1,V2,...`.
struct Vary {
  std::string key;                  ///< "sdp.zcopy_thresh", or "platform"
  std::vector<std::string> values;  ///< in the order given
};

/// Options of `hcasim sweep`.
struct SweepOptions {
  std::string tool;                ///< netperf, ib_write_lat, ib_write_bw, ib_send_bw
  std::vector<std::string> words;  ///< the tool's words, the sweep's own options removed
  size_t size_word = 0;            ///< index in `words` of the word holding the size value
  std::string size_prefix;         ///< what precedes the value in that word ("-m" of "-m64..4M",
                                   ///< "--size=" of "--size=2,64"; "" when the value is its own word)
  std::string size_text;           ///< the size value as typed ("64..4M")
  std::vector<uint64_t> sizes;     ///< bytes, in order; empty with perftest's -a
  bool perftest_all = false;       ///< perftest -a: one child per variant, its own sizes
  std::vector<Vary> vary;          ///< --vary, in order
  int jobs = 0;                    ///< -j N (1..4096); 0 = online CPUs
  std::optional<std::string> csv_path;   ///< --csv FILE
  std::optional<std::string> plot;       ///< --plot PREFIX
  std::optional<std::string> reference;  ///< --reference FILE (a CSV, or a run file)
  Fanout fanout;                         ///< --list-commands DIR / --collect DIR (fanout.h)
  bool json = false;                     ///< --json: the points as JSON on stdout instead of the table
  std::vector<std::string> args;         ///< the words after `sweep`, as given (the JSON's command_line)
};

/// The sizes of `text`, the value of option `flag` ("-m", "-s"): a size, a comma-separated
/// list, or a doubling range `A..B` (A, 2A, 4A, ... <= B, then B itself when the doubling
/// does not land on it: 100..1000 is 100, 200, 400, 800, 1000). Throws InputError "FLAG TEXT: ..."
/// for a range without a start or an end ("64.."), a start above its end ("4M..64"), a start
/// of 0, an empty list item, more than 4096 sizes, or a bad size (model::parse_size's message).
std::vector<uint64_t> parse_size_list(const std::string& text, const std::string& flag);

/// One `--vary` item "KEY=V1,V2,..."; InputError "--vary ITEM: ..." when it has no '=', no key
/// or an empty value.
Vary parse_vary(const std::string& item);

/// Parses the words after `hcasim sweep`: the tool, the sweep's options and the size option
/// (see the \file comment). Throws InputError for an unknown tool, a missing or bad size option
/// ("-m: give the sizes as -- -m LIST or A..B"), -a with -s, a bad -j, --vary, --csv or --plot,
/// an option given twice, a `--vary platform` with --platform among the tool's words, a
/// `--vary KEY` given twice or also set with --set, or --json with --list-commands or with
/// --csv on stdout.
SweepOptions parse_sweep_args(const std::vector<std::string>& args);

/// Runs the sweep: prints the table on stdout (with --json: one document, schema
/// "hcasim.sweep/1", each point's CSV row under the tool's --json key names, sweep_json_key),
/// writes --csv and --plot (with --list-commands: prints
/// the points' commands and nothing else; with --collect: reads their CSVs). Returns 0, 2 when a
/// child failed (its stderr, then one error line naming the point), 128 + N on signal N (nothing
/// written). Throws InputError for bad input before any child starts.
int run_sweep(const SweepOptions& options);

/// The --json key of a point's CSV column `column` (a tool's --csv header name): the name the
/// tool's own --json gives the figure (throughput_mbps -> throughput_mbit_s,
/// sd_local_us_per_kb -> service_demand_local_us_per_kb, bw_avg_gbit_s -> bw_average_gbit_s,
/// ...), else the column's own name.
std::string sweep_json_key(const std::string& column);

}  // namespace hcasim::scenarios
