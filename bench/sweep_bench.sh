#!/usr/bin/env bash
# bench_sweep: `hcasim sweep` of 20 message sizes x 2 variants (bcopy and bzcopy) of a 10 s
# netperf, -j 2, and the wall time it took. The target (docs/performance.md): under 60 s on 2
# cores. The table goes to stdout as the sweep prints it, then one line with the wall time.
# Usage: sweep_bench.sh HCASIM SECONDS
set -euo pipefail
hcasim=$1 seconds=$2
start=$(date +%s.%N)
"$hcasim" sweep netperf -c -C -l "$seconds" -- -m 64..32M --vary sdp.zcopy_thresh=0,1 -j 2
end=$(date +%s.%N)
awk -v s="$start" -v e="$end" -v l="$seconds" 'BEGIN {
  printf "bench_sweep: 20 sizes x 2 variants of netperf -l %s, -j 2: %.1f s wall (target < 60 s on 2 cores)\n", l, e - s
}'
