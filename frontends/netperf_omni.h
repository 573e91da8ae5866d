#pragma once
/// \file netperf 2.7's output selectors (test options -o, -O, -k) on the simulated netperf.
///
/// netperf 2.7 runs TCP_STREAM, TCP_MAERTS and TCP_RR as "migrated" omni tests
/// (src/nettest_omni.c send_tcp_stream -> send_omni_inner); -o, -O or -k (scan_omni_args) turn
/// the classic tables off and print the selected values instead: as CSV (print_omni_csv), in
/// columns under four header lines (print_omni_human) or as NAME=value lines
/// (print_omni_keyword). The selectors, their header lines and formats are
/// print_omni_init_list's; the list is parsed as parse_output_selection does (a list of names
/// separated by ',' or ' ', blocks by ';', or else a file of them); without a list the test's
/// default (set_output_list_by_test).
///
/// hcasim prints a selector only when the simulation knows its value; a known selector it
/// cannot fill (e.g. LOCAL_CPU_PERCENT_USER: the simulated CPU time is not split into user,
/// system and interrupt time as /proc/stat splits it) is refused with a one-line error naming
/// it, never printed as a made-up value.
#include <string>
#include <vector>

#include "frontends/netperf_cli.h"
#include "frontends/netperf_config.h"

namespace hcasim::frontends {

/// The selector lists of -o/-O/-k: up to four blocks (NETPERF_MAX_BLOCKS) of names, upper case.
using OutputSelection = std::vector<std::vector<std::string>>;

/// Parses `spec` as netperf 2.7's parse_output_selection: "all" is refused (most of netperf's
/// selectors describe a real host hcasim does not have); a spec with ',' or ';', or a single
/// selector name, is a direct list (names matched case-insensitively; a name netperf does not
/// know is dropped as netperf drops it, and reported in `dropped`); anything else is a file
/// of comma-separated names, one block per line (an unknown entry becomes OUTPUT_NONE, a blank
/// column, as in netperf). An empty spec gives the test's default list (`o.test`, -c/-C).
/// Throws InputError naming the flag for a file netperf could not open, "all", a name longer
/// than netperf's 80 characters.
OutputSelection parse_output_selection(const NetperfOptions& o, std::vector<std::string>* dropped = nullptr);

/// Throws InputError naming the first selector of `sel` hcasim cannot fill for `o` (its test,
/// its -c/-C), before anything runs: "-o LOCAL_CPU_PERCENT_USER: ..." with the reason.
void check_output_selection(const NetperfOptions& o, const OutputSelection& sel);

/// The whole stdout of a migrated test with output selectors: with -P 1 the banner
/// ("MIGRATED TCP STREAM TEST from ..."; " : first burst 0" for TCP_RR, netperf 2.7 being built
/// with --enable-burst by default), the interim results of -D in the output mode's form
/// (netlib.c demo_interval_display), then the selected values. `ipoib`: the IPoIB run's
/// end-of-test socket buffers (the *_SIZE_END selectors; nullptr for SDP, whose buffers do not
/// change).
std::string format_netperf_omni(const NetperfOptions& o, const OutputSelection& sel, const TcpStreamResult& r,
                                const IpoibStreamResult* ipoib);

/// netperf 2.7's format_units() of the -f letter ('x': "Trans").
std::string netperf_units_27(char format);

/// The -f letter netperf 2.7 uses for a migrated test: 'x' (transactions) for TCP_RR without
/// -f, else -f's (nettest_omni.c scan_omni_args: libfmt '?' resolved by the test's direction).
char omni_format(const NetperfOptions& o);

}  // namespace hcasim::frontends
