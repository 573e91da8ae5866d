#pragma once
/// \file Readers of real netperf and perftest runs pasted into a text file ("run files"), so that
/// a run can be simulated with the same command and compared.
///
/// A run file is a pasted terminal session: mail, notes and prose may surround the commands.
///
/// Command lines. A *command line* is a line that, after leading blanks and an optional shell
/// prompt, then an optional `sudo` (with flag-only options such as `-E`), optional `env` and
/// environment assignments `VAR=value` (e.g. `LD_PRELOAD=libsdp.so`), and an optional
/// `taskset [-a] [-c] CPUS` (or `/usr/bin/taskset -c CPUS`), starts with a tool word whose last
/// path component is `netperf` or one of perftest 4.5's tools hcasim simulates: `ib_write_lat`,
/// `ib_write_bw`, `ib_send_lat`, `ib_send_bw`, `ib_read_lat`, `ib_read_bw`, `ib_atomic_lat`,
/// `ib_atomic_bw` (`/opt/netperf/netperf`). Another perftest program (`ib_read_dc_lat`,
/// `raw_ethernet_bw`, ...) is an error naming the tools a run file takes. A prompt is the line's first blank-separated word when it ends in
/// `#`, `$` or `>` (`#`, `$`, `ionize:~#`, `user@host:~$`), or a bracketed `[...]` followed at
/// once by one of those characters (`[root@x ~]#`). Without a prompt (seed 003's bare
/// `/opt/netperf/netperf -l 60 ...`), a line is a command line only when the tool word has a
/// path, a prefix (sudo, env, VAR=value, taskset) comes before it, or the word after it is absent
/// or starts with '-': a sentence that begins with "netperf is ..." is prose. The command is split
/// like a POSIX shell (split_command_line); pipes and redirections are not understood.
///
/// Outputs. Every line after a command line, up to the next command line or the next line that
/// starts with a prompt (whatever follows it), is that command's output; lines before the first
/// command are ignored. A prompt line with any other command is ignored with its output
/// (`# echo $LD_PRELOAD` then `libsdp.so`), except these, which change the simulator parameters
/// (`set`) of the commands after them in the same file (a later value of a key replaces the
/// earlier one):
/// - `echo N > /sys/module/ib_sdp/sdp_zcopy_thresh` (or `.../ib_sdp/parameters/sdp_zcopy_thresh`,
///   `>>`, `>PATH` attached, or `echo N | [sudo] tee [-a] PATH`), with or without a prompt: sets
///   `sdp.zcopy_thresh=N` (seed 000: 0 is bcopy "SDP", 1 is "BZCOPY"). Any other prompt line
///   that mentions sdp_zcopy_thresh (`sudo sh -c "..."`, `modprobe ib_sdp sdp_zcopy_thresh=1`)
///   is an error: ignored, it would leave the runs after it in the wrong mode;
/// - a directive line `# hcasim: --set key=value` (also `#hcasim:`; repeatable on the line and
///   in the file): sets
///   `key=value`; `# hcasim: --platform NAME|FILE` names the platform of the runs after it (seed
///   001's two machines). A run file is the only place these can be said, since a real command
///   line has no hcasim options.
///
/// netperf output: TCP_STREAM, TCP_MAERTS and TCP_RR (netperf 2.3 to 2.4; what
/// frontends/netperf_output.h prints reads back exactly). The command's own flags, read with
/// parse_netperf_args (-H, -i, -I, -4, -6 accepted), tell the test (-t, default TCP_STREAM) and
/// the layout: -P, -c/-C, -f and -v. netperf 2.7's output selectors (-o, -O, -k) are refused:
/// their output is not these tables.
/// - TCP_STREAM and TCP_MAERTS (nettest_bsd.c send_tcp_stream, send_tcp_maerts) print the same
///   table. `-v 1` or `-v 2` (default 1) with `-P 0`: the first non-blank line of the output is
///   the result row, 5 numbers (Recv Socket Size, Send Socket Size, Send Message Size, Elapsed
///   Time, Throughput) or 9 with -c or -C (plus Utilization local, Utilization remote, Service
///   Demand local, Service Demand remote, in us/KB; netperf prints -1 for a side it did not
///   measure). The throughput is in the -f unit (default m). In TCP_MAERTS netserver sends and
///   netperf receives: the throughput counts the bytes netserver sent, "local" (-c) is netperf's
///   host, the receiver, and the sizes are, without -c/-C, netperf's receive socket, netserver's
///   send socket and netserver's send size (-m); with -c/-C netperf 2.4.3 to 2.4.5 pass the
///   remote receive and local send sockets, as TCP_STREAM does. netperf 2.4.3's TCP_MAERTS row
///   ends "   \n ": the line after it is one blank (and the next prompt may follow it).
/// - TCP_RR (send_tcp_rr): the row is 6 numbers (local Send and Recv Socket Size, Request Size,
///   Response Size, Elapsed Time, Trans. Rate per sec) or 10 with -c or -C (plus CPU local and
///   remote in %, S.dem local and remote in us/Tr, CPU us per transaction), then a second line of
///   2 numbers, the remote Send and Recv socket sizes; both are required. The rate is in
///   transactions per second whatever -f says (netperf 2.4.3; 2.4.4 and later print a throughput
///   in the -f unit when -f is given, whose titles, "Throughput" or "Tput", are refused). A TCP_RR
///   with -f and no titles (-P 0 or -v 0) is refused: its row could be either.
/// - with `-P 1` (netperf's default): everything up to the column titles is skipped except the
///   banner (`TCP STREAM TEST from ... to ...`, netperf 2.3: `TCP STREAM TEST to ...`; `TCP
///   MAERTS TEST ...`; `TCP REQUEST/RESPONSE TEST ...`), whose confidence text (`+/-2.5% @ 99%
///   conf.`, printed with -i/-I) is kept, and netperf's `!!! WARNING` block (`!!! Desired
///   confidence was not achieved within the specified iterations.` and the achieved intervals).
///   A banner of another test than the command's is an error. The titles' last line is the one
///   whose first word is `bytes` and that has `secs.`: for the stream tests the word after
///   `secs.` (`10^6bits/sec`, or `10^6bits/s  % S ...` with CPU columns) names the throughput
///   unit (10^3bits, 10^6bits, 10^9bits, KBytes, MBytes, GBytes) and it, not -f, is used; for
///   TCP_RR it is `per sec`. The first non-blank line after the titles is the row.
/// - `-v 0` (terse): the first line that is not blank, a banner or a `!!!` line is the throughput
///   alone, in the -f unit (TCP_RR: the transaction rate); sizes and elapsed time are not
///   printed. netperf 2.4.3 prints only a service demand at -v 0 with -c/-C, and no result row
///   at all above -v 2: such runs are refused.
/// - after the row, whatever follows (the -v 2 alignment/bytes/sends/recvs block and the TCP MSS
///   block, prose) is ignored.
///
/// perftest output (perftest 2.x's five latency columns as in seed 001, perftest 4.5's nine, and
/// the bw tables; the same for WRITE, SEND, READ and atomic tools; what
/// frontends/perftest_output.h prints reads back exactly). The command is read with
/// parse_perftest_args for its tool, so a flag perftest refuses for that tool (-s 64 for an
/// atomic test, -I for READ, -q for a latency test) is the same error as on hcasim's command line. Everything up to the table header (banner, address lines,
/// dashed separators, labels such as `[1] BF on, WC available`) is skipped. The header is a line
/// whose first word is `#bytes`; its columns are recognised by name:
/// - latency tools: `#bytes #iterations t_min[U] t_max[U] t_typical[U]`, optionally followed by
///   `t_avg[U] t_stdev[U] 99% percentile[U] 99.9% percentile[U]`, U being `usec` or `cycles`;
/// - bw tools: `#bytes #iterations BW peak[U] BW average[U] MsgRate[Mpps]`, U being `MB/sec`
///   (perftest's MB is 2^20 B: print_report_bw divides by 0x100000), `MiB/sec` (the same unit,
///   as later perftest releases name it) or `Gb/sec` (10^9 bit/s, --report_gbits).
/// The rows are the lines after the header whose first word starts with a digit, up to the first
/// line that does not (a blank or dashed line). With -U or -H (latency tools) perftest prints the
/// header, then the samples (`#, usec` and `N, VALUE` lines), then the header again and the row:
/// the table is the second header's. A second header under the same command is an
/// error: repeat the command line before each table.
///
/// perftest -C (--report-cycles) reports CPU cycles instead of us. perftest 4.5 keeps `[usec]` in
/// its header even then (the installed binary has no other latency header), so the values are
/// read as cycles when the header says `[cycles]` or the command has -C. For the latency tools the
/// reader removes -C from `words` (the simulation that is compared reports us) and sets
/// PerftestReading::cycles; a bw tool's -C is left for the parser, which refuses it as perftest
/// does.
///
/// seed 000's mail-mangled `---m 64K` / `---r 64K` (a lost space of `-- -m 64K`) is read as `--`,
/// `-m`, `64K`, as parse_netperf_args reads it.
///
/// libibverbs example programs (ibv_rc_pingpong, ibv_uc_pingpong, ibv_ud_pingpong and
/// ibv_srq_pingpong, also without `ibv_` as rdma-core's build tree names them; the command is
/// read with parse_pingpong_args): everything but the two result lines is skipped (the address
/// lines, -c's "invalid data in page" lines). Both are required, once each, in that order; their
/// "I iters" must be the command's -n (default 1000), their "N bytes" -s x -n x 2 (default -s
/// 4096; ud: 1024), and their two "S seconds" equal.
///
/// Contradictions between a command and its output are errors too: a netperf row whose Send
/// Message Size is not the command's -m (when it has one), a TCP_RR row whose Request or
/// Response Size is not the command's -r (netperf's default 1,1 without it), a banner of another
/// test, a second netperf result row under one
/// command (a line of as many numbers after the row; at -v 2 only before the alignment block), a
/// perftest row whose #bytes is not a size the command runs (-s, or -a's 2..2^23) and a second
/// row of one size.
///
/// Errors are InputError "ORIGIN:LINE: what is wrong", LINE being the command's line for a bad
/// command or a missing result, the offending line for a bad row or header.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "model/error.h"

namespace hcasim::scenarios {

/// A netperf run's result as printed, in canonical units (netperf 2.4.3 nettest_bsd.c
/// send_tcp_stream and send_tcp_maerts: tput_fmt_0/1, cpu_fmt_0/1; send_tcp_rr: tput_fmt_0,
/// tput_fmt_1_line_1/2, cpu_fmt_1_line_1/2). The stream fields are 0 or empty for TCP_RR, the
/// TCP_RR fields for the stream tests.
struct NetperfReading {
  std::string test = "TCP_STREAM";  ///< the command's -t: TCP_STREAM, TCP_MAERTS or TCP_RR
  // --- TCP_STREAM and TCP_MAERTS ---
  double recv_socket_bytes = 0;   ///< B, the Recv Socket Size column (0 at -v 0: not printed):
                                  ///< TCP_STREAM the remote receive socket; TCP_MAERTS netperf's
                                  ///< own receive socket, with -c/-C the remote one
  double send_socket_bytes = 0;   ///< B, the Send Socket Size column (0 at -v 0): TCP_STREAM
                                  ///< the local send socket; TCP_MAERTS the remote one, with
                                  ///< -c/-C the local one
  double send_message_bytes = 0;  ///< B per send() of the sender (TCP_MAERTS: netserver's; 0
                                  ///< at -v 0)
  double elapsed_s = 0;           ///< s (0 at -v 0)
  double throughput_mbps = 0;     ///< 10^6 bit/s, converted from the printed unit: 10^3bits,
                                  ///< 10^6bits, 10^9bits (bit/s) or KBytes, MBytes, GBytes
                                  ///< (2^10, 2^20, 2^30 B/s)
  double throughput = 0;          ///< the throughput as printed, in `format`'s unit
  char format = 'm';              ///< the printed unit as netperf's -f letter: k m g K M G
  std::optional<double> sd_local_us_per_kb;   ///< us of CPU per KB (2^10 B) of the throughput's
                                              ///< bytes; nullopt without -c
  std::optional<double> sd_remote_us_per_kb;  ///< nullopt without -C
  // --- TCP_RR ---
  double local_send_socket_bytes = 0;   ///< B (0 at -v 0)
  double local_recv_socket_bytes = 0;   ///< B (0 at -v 0)
  double remote_send_socket_bytes = 0;  ///< B, the second line (0 at -v 0)
  double remote_recv_socket_bytes = 0;  ///< B, the second line (0 at -v 0)
  double request_bytes = 0;             ///< B, Request Size (0 at -v 0)
  double response_bytes = 0;            ///< B, Response Size (0 at -v 0)
  double transaction_rate = 0;          ///< transactions per second, as printed
  std::optional<double> sd_local_us_per_tr;   ///< us of CPU per transaction; nullopt without -c
  std::optional<double> sd_remote_us_per_tr;  ///< nullopt without -C
  // --- every test ---
  std::optional<double> util_local_pct;   ///< % of all CPUs of netperf's host; netperf's -1 (not
                                          ///< measured, no -c) is nullopt
  std::optional<double> util_remote_pct;  ///< % of all CPUs of netserver's host; nullopt without -C
  std::optional<std::string> confidence;  ///< "+/-2.5% @ 99% conf." from the -i/-I banner (-P 1)
  bool confidence_achieved = true;  ///< false when netperf printed its "!!! WARNING ... Desired
                                    ///< confidence was not achieved" block
  bool terse = false;               ///< -v 0: only the throughput (or transaction rate) was printed
  uint32_t line = 0;                ///< line of the result row
};

/// One row of a perftest latency table. Values in us unless the reading's `cycles`: half the round
/// trip for ib_write_lat and ib_send_lat, the whole round trip for ib_read_lat and ib_atomic_lat
/// (perftest print_report_lat's rtt_factor).
struct LatencyRow {
  uint64_t bytes = 0;       ///< message size, B
  uint64_t iterations = 0;  ///< perftest's #iterations column
  double t_min = 0;
  double t_max = 0;
  double t_typical = 0;     ///< perftest's median
  std::optional<double> t_avg;    ///< perftest 4.5's extra columns, when printed
  std::optional<double> t_stdev;
  std::optional<double> p99;      ///< 99% percentile
  std::optional<double> p999;     ///< 99.9% percentile
  uint32_t line = 0;        ///< line of the row
};

/// The unit of a perftest bandwidth table.
enum class BandwidthUnit {
  MiBps,  ///< `[MB/sec]` (perftest's MB = 2^20 B) or `[MiB/sec]`
  Gbps,   ///< `[Gb/sec]`, 10^9 bit/s (--report_gbits)
};

/// One row of a perftest bandwidth table.
struct BandwidthRow {
  uint64_t bytes = 0;       ///< message size, B
  uint64_t iterations = 0;  ///< perftest's #iterations column (iterations x QPs)
  double bw_peak = 0;       ///< as printed, in the reading's bandwidth_unit (0 with -N)
  double bw_average = 0;    ///< as printed
  double bw_peak_gbit_s = 0;     ///< the same in 10^9 bit/s (MB/s x 2^20 x 8 / 10^9)
  double bw_average_gbit_s = 0;  ///< 10^9 bit/s
  double msg_rate_mpps = 0;      ///< 10^6 messages per second
  uint32_t line = 0;        ///< line of the row
};

/// A perftest results table.
struct PerftestReading {
  bool cycles = false;  ///< values are CPU cycles, not us: the header says [cycles], or the
                        ///< command has -C / --report-cycles (perftest 4.5 keeps "[usec]")
  BandwidthUnit bandwidth_unit = BandwidthUnit::MiBps;  ///< bw tables: the header's unit
  bool extended = false;  ///< latency: the header has perftest 4.5's t_avg .. 99.9% columns
  std::vector<LatencyRow> latency;      ///< latency tools, one per row in printed order
  std::vector<BandwidthRow> bandwidth;  ///< bw tools
  uint32_t header_line = 0;             ///< line of the `#bytes ...` header
};

/// The two result lines of a libibverbs example program (ibv_rc_pingpong, ibv_uc_pingpong,
/// ibv_ud_pingpong, ibv_srq_pingpong; rdma-core rc_pingpong.c main() after its loop):
/// "N bytes in S seconds = R Mbit/sec" and "I iters in S seconds = U usec/iter", client or
/// server alike.
struct PingpongReading {
  uint64_t bytes = 0;          ///< B counted: -s x -n x 2 (both directions)
  uint64_t iters = 0;          ///< the -n iterations
  double seconds = 0;          ///< s, as printed (%.2f)
  double mbit_s = 0;           ///< 10^6 bit/s, bytes x 8 / usec (%.2f)
  double usec_per_iter = 0;    ///< us per iteration, one round trip (%.2f)
  uint32_t line = 0;           ///< line of the usec/iter line
};

/// One real run: a command line and what it printed.
struct RealRun {
  std::string origin;     ///< the file, as given to parse_run_file
  uint32_t line = 0;      ///< line of the command (from 1)
  std::string command;    ///< the command as typed after the prompt (sudo, env, taskset kept)
  std::string tool;       ///< "netperf", a perftest tool ("ib_write_lat" ... "ib_atomic_bw") or a
                          ///< libibverbs example ("ibv_rc_pingpong" ... "ibv_srq_pingpong")
  std::vector<std::string> words;  ///< the tool's arguments, split like a shell: no prompt, sudo,
                                   ///< env, VAR=value, taskset or tool word; netperf's `---m` as
                                   ///< `--`, `-m`; perftest's -C / --report-cycles removed
  std::vector<std::string> set;    ///< "sdp.zcopy_thresh=0", ...: the file's settings in force
  std::vector<uint32_t> set_lines;  ///< the line that wrote each of `set`, parallel to it
  std::optional<std::string> platform;  ///< the last `# hcasim: --platform` before the command
  uint32_t platform_line = 0;           ///< the line of that directive (0: none)
  std::variant<NetperfReading, PerftestReading, PingpongReading> output;
};

/// Reads every run of a run file's `text` (see the \file comment), in file order. `origin`
/// names the file in messages and in RealRun::origin. Throws InputError "ORIGIN:LINE: ..." for a
/// bad command (unknown flag, unterminated quote, a tool hcasim cannot read such as
/// ib_read_dc_lat),
/// a bad directive or zcopy value, output without a result ("netperf output ends before its
/// result row"), a row with the wrong number of fields or a field that is not a number (naming
/// the column), an unrecognised table header, a second table under one perftest command, and a
/// row that contradicts its command (another -m, -r or -s, a banner of another test, a second row).
std::vector<RealRun> parse_run_file(std::string_view text, const std::string& origin);

/// Reads the file at `path` and returns parse_run_file(text, path); InputError "PATH: cannot
/// read" when it cannot be read.
std::vector<RealRun> load_run_file(const std::string& path);

}  // namespace hcasim::scenarios
