#!/usr/bin/env bash
# bench_ib_write_bw_many_qps: wall time per WR of ib_write_bw -s 64 over 1 QP and over 1000 QPs,
# the same number of WRs in all (TOTAL, default 1000000), and each run's peak RSS, from
# hcasim's --stats line. The target (docs/performance.md): 1000 QPs cost at most 1.5x what one
# does per WR, peak RSS under 100 MB. Each side runs RUNS times (default 3), alternating, and
# its best is compared (the machine's speed varies from one second to the next).
# Usage: many_qps.sh HCASIM [TOTAL] [RUNS]
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: many_qps.sh HCASIM [TOTAL] [RUNS]" >&2; exit 2; }
hcasim=$1 total=${2:-1000000} runs=${3:-3}
[ -x "$hcasim" ] || { echo "many_qps.sh: $hcasim: not an executable hcasim" >&2; exit 2; }
[[ $total =~ ^[1-9][0-9]*$ && $total -ge 5000 ]] || { echo "many_qps.sh: TOTAL must be an integer >= 5000, not '$total'" >&2; exit 2; }
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "many_qps.sh: RUNS must be a positive integer, not '$runs'" >&2; exit 2; }
field() { sed -n "s/.*[ :]$1=\([0-9.]*\).*/\1/p" <<<"$2"; }
declare -A best rss
for ((i = 1; i <= runs; ++i)); do
  for q in 1 1000; do
    stats=$("$hcasim" ib_write_bw --stats -s 64 -q "$q" -n $((total / q)) 2>&1 >/dev/null | grep '^hcasim: stats:') ||
      { echo "many_qps.sh: $hcasim ib_write_bw --stats -s 64 -q $q printed no stats line" >&2; exit 1; }
    echo "-q $q: $stats"
    wall=$(field wall_s "$stats") mb=$(field max_rss_mb "$stats")
    best[$q]=$(awk -v w="$wall" -v b="${best[$q]:-0}" 'BEGIN { print (b == 0 || w < b) ? w : b }')
    rss[$q]=$(awk -v m="$mb" -v r="${rss[$q]:-0}" 'BEGIN { print (m > r) ? m : r }')
  done
done
awk -v t="$total" -v a="${best[1]}" -v b="${best[1000]}" -v ra="${rss[1]}" -v rb="${rss[1000]}" -v n="$runs" 'BEGIN {
  printf "bench_ib_write_bw_many_qps: %d WRs of 64 B, best of %d runs: -q 1 %.3f us per WR (peak RSS %.1f MB), -q 1000 %.3f us per WR (peak RSS %.1f MB), ratio %.2f (target <= 1.5, RSS < 100 MB)\n", t, n, a * 1e6 / t, ra, b * 1e6 / t, rb, b / a
}'
