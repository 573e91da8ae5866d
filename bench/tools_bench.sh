#!/usr/bin/env bash
# bench_tools: the speed of each simulated tool (simulated s per wall s) and its peak RSS, from
# hcasim's --stats line: perftest's latency and bandwidth tools of every verb, rdma-core's
# pingpongs and netperf's request/response and reverse-stream tests, each with a run long
# enough (about a wall second or more) that start-up does not decide its figure. A sanitizer
# build passes a smaller SCALE (only that they run is of interest there).
# Usage: tools_bench.sh HCASIM [SCALE]   (SCALE divides iterations and seconds; default 1)
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: tools_bench.sh HCASIM [SCALE]" >&2; exit 2; }
hcasim=$1 scale=${2:-1}
[ -x "$hcasim" ] || { echo "tools_bench.sh: $hcasim: not an executable hcasim" >&2; exit 2; }
[[ $scale =~ ^[1-9][0-9]*$ ]] || { echo "tools_bench.sh: SCALE must be a positive integer, not '$scale'" >&2; exit 2; }
field() { sed -n "s/.*[ :]$1=\([0-9.]*\).*/\1/p" <<<"$2"; }
n=$((200000 / scale)) l=$((10 / scale > 0 ? 10 / scale : 1))
runs=(
  "ib_send_lat -s 2 -n $n"
  "ib_read_lat -s 2 -n $n"
  "ib_atomic_lat -n $n"
  "ib_send_bw -s 64 -n $((10 * n))"
  "ib_read_bw -s 64 -n $((10 * n))"
  "ib_atomic_bw -n $((10 * n))"
  "ib_read_lat -e -s 2 -n $n"
  "ib_send_lat -e -s 2 -n $n"
  "ib_send_lat -c UD -s 2 -n $n"
  "ib_send_bw -c UD -s 2048 -n $((10 * n))"
  "ibv_rc_pingpong -n $n"
  "ibv_uc_pingpong -n $n"
  "ibv_ud_pingpong -n $n"
  "ibv_srq_pingpong -n $n"
  "netperf -t TCP_RR -l $l -- -r 1,1"
  "netperf -t TCP_MAERTS -l $l -- -m 64K"
  "netperf --transport ipoib -l $l -- -m 64K"
  "netperf -t TCP_RR --transport ipoib -l $l -- -r 1,1"
)
for r in "${runs[@]}"; do
  # --stats right after the tool's name: netperf takes what follows `--` as test options.
  # shellcheck disable=SC2086  # each run is its words
  stats=$("$hcasim" ${r%% *} --stats ${r#* } 2>&1 >/dev/null | grep '^hcasim: stats:') ||
    { echo "tools_bench.sh: $hcasim $r --stats printed no stats line" >&2; exit 1; }
  printf '%-48s simulated %9s s in %7s wall s: %8s simulated s per wall s, peak RSS %6s MB\n' "$r" \
    "$(field simulated_s "$stats")" "$(field wall_s "$stats")" "$(field speed "$stats")" "$(field max_rss_mb "$stats")"
done
