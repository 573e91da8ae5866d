#!/usr/bin/env bash
# bench_vs_simgrid: simulated SDP messages per wall second (hcasim netperf --stats, bcopy -m 1M)
# against a bare SimGrid ping-pong's messages per wall second (simgrid_pingpong), both in this
# run and this build. Issue 20's target: the ratio at least 2.
# Usage: vs_simgrid.sh HCASIM SIMGRID_PINGPONG SECONDS ROUND_TRIPS
set -euo pipefail
hcasim=$1 pingpong=$2 seconds=$3 rounds=$4
pp=$("$pingpong" "$rounds")
echo "$pp"
stats=$("$hcasim" netperf --stats -P 0 --set sdp.zcopy_thresh=0 -l "$seconds" -- -m 1M 2>&1 >/dev/null | grep '^hcasim: stats:')
echo "$stats"
field() { sed -n "s/.*[ :]$1=\([0-9.]*\).*/\1/p" <<<"$2"; }
messages=$(field sdp_messages "$stats") wall=$(field wall_s "$stats") pp_rate=$(field messages_per_wall_s "$pp")
awk -v m="$messages" -v w="$wall" -v p="$pp_rate" 'BEGIN {
  r = m / w
  printf "bench_vs_simgrid: hcasim %.0f SDP messages per wall s, bare SimGrid ping-pong %.0f messages per wall s, ratio %.2f (target >= 2)\n", r, p, r / p
}'
