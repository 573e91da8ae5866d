// hcasim's help for the perftest tools (perftest_cli.h perftest_usage): the flags each tool takes,
// as perftest 4.5's usage() lists them per verb and test type (src/perftest_parameters.c).
#include <string>

#include <fmt/format.h>

#include "frontends/perftest_cli.h"

namespace hcasim::frontends {

std::string perftest_usage(PerftestTest test) {
  const std::string_view t = perftest_tool_name(test);
  const bool bw = perftest_is_bw(test);
  const bool rd = perftest_is_read_or_atomic(test);
  const bool atomic = perftest_is_atomic(test);
  std::string u = fmt::format(
      "Usage:\n"
      "  hcasim {0} [hcasim options] [perftest flags] [server-host]\n"
      "\n"
      "Simulates perftest 4.5's {0} client between two simulated hosts and prints perftest's\n"
      "output. perftest flags (read as perftest reads them):\n",
      t);
  // perftest's usage(): no -a or -s for the atomic tests (8 B only), no -I for READ and atomics,
  // -o for READ and atomics, -A for atomics, -r for SEND.
  if (atomic)
    u += "  -A, --atomic_type=TYPE    CMP_AND_SWAP or FETCH_AND_ADD (default FETCH_AND_ADD); 8 B\n";
  else
    u += fmt::format(
        "  -a, --all                 sizes 2 .. 2^23 B\n"
        "  -s, --size=SIZE           message size, bytes (K and M suffixes; default {})\n",
        bw ? kPerftestDefSizeBw : kPerftestDefSizeLat);
  u += fmt::format("  -n, --iters=N             iterations, {}..{} (default {})\n", kPerftestMinIters, kPerftestMaxIters,
                   test == PerftestTest::WriteBw ? kPerftestDefItersWriteBw : kPerftestDefIters);
  // parser() cases 'D' and 'f'; force_dependecies: the margin defaults to -D / 4.
  u += "  -D, --duration=SECONDS    run for SECONDS instead of -n; report the window between margins\n"
       "  -f, --margin=SECONDS      seconds left out at each end of a -D run (default -D / 4)\n";
  if (rd)
    u += "  -o, --outs=N              outstanding reads/atomics (default: the device's max_qp_rd_atom)\n";
  else
    u += fmt::format("  -I, --inline_size=N       largest inline message, 0..{} B (default {})\n", kPerftestMaxInline,
                     bw                                ? 0u
                     : test == PerftestTest::SendLat ? kPerftestDefInlineSend
                                                     : kPerftestDefInlineWrite);
  u += fmt::format("  -t, --tx-depth=N          send queue depth (default {})\n", bw ? kPerftestDefTxBw : kPerftestDefTxLat);
  if (bw) {
    u += "  -b, --bidirectional       both sides send; the report sums both sides' bandwidth\n"
         "  -q, --qp=N                QPs (default 1)\n"
         "  -Q, --cq-mod=N            one CQE per N WRs (default 100; 1 above 8192 B)\n"
         "  -N, --noPeak              no peak bandwidth (also above 20000 iterations)\n"
         "      --report_gbits        Gb/s instead of MB/s (MB = 2^20 B)\n";
  }
  if (perftest_is_send(test)) u += "  -r, --rx-depth=N          receive queue depth (default 512)\n";
  if (!bw)  // parser() cases 'C', 'U', 'H': latency tests only
    u += "  -C, --report-cycles       report times in cycles of host.clock\n"
         "  -U, --report-unsorted     every sample, in the order measured, before the row\n"
         "  -H, --report-histogrm     the sorted samples before the row\n";
  // parser() case 'e': not on the WRITE verb (nor, in hcasim, on ib_send_lat).
  if (test == PerftestTest::SendBw || rd)
    u += "  -e, --events              sleep for completion events instead of polling the CQ\n";
  u += "  -m, --mtu=N               path MTU: 256 512 1024 2048 4096\n"
       "  -F, -d DEV, -i PORT, -R, -z, -x GID, -p PORT, -c RC: accepted (printed or noted)\n"
       "\n"
       "hcasim options:\n"
       "  --platform NAME|FILE         local host (default connectx-ddr-pcie1x8)\n"
       "  --remote-platform NAME|FILE  remote host (default: same as --platform)\n"
       "  --set section.key=value      change a platform parameter on both hosts (repeatable)\n"
       "  --columns classic|extended   results table of perftest 2.x (default) or 4.5\n"
       "  --csv PATH                   results as CSV, one row per size\n"
       "  --json                       the report as one JSON document on stdout (docs/cli.md)\n"
       "  --stats                      simulator statistics on stderr\n"
       "  --explain                    after the report, each size's resources by utilisation, the\n"
       "                               bottleneck and a what-if (ib_write_lat: the one-way time as\n"
       "                               its stages)\n"
       "  --seed N                     seed of the host noise model\n"
       "  --trace FILE                 the run's steps (CPUs, verbs calls, HCA, PCIe, IB, each work\n"
       "                               request) as a trace for ui.perfetto.dev (docs/cli.md \"--trace\")\n"
       "  --trace-window START,LEN     the trace's window, simulated s after the client's first post\n"
       "                               (default 0,0.001)\n";
  return u;
}

}  // namespace hcasim::frontends
