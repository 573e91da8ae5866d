#!/usr/bin/env bash
# bench_calibrate: docs/calibrate.md's example fit (cpu.copy_tx_rate and cpu.bzcopy_setup to seed
# 000's 64K and 1M runs, the 128K runs held out), -j 2, as a user runs it (netperf runs measured in
# their steady state, --steady 0.002) and at calibrate's full length (--steady 0: every run for the
# whole --duration of 4 s). Prints each fit's wall time, evaluations, fitted values and RMS errors,
# then one line comparing them. The target (docs/performance.md): the first under 60 s on 2 cores.
# Usage: calibrate_bench.sh HCASIM REPO_DIR [EXTRA CALIBRATE ARGS...]; extra arguments (a
# sanitizer build's shorter --duration and --max-evals) skip the full-length fit.
set -euo pipefail
hcasim=$1 repo=$2
shift 2
extra=("$@")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$repo"
fit() {  # NAME STEADY: runs the fit, prints its summary, leaves its wall seconds in $work/NAME.s
  local name=$1 steady=$2 start end
  start=$(date +%s.%N)
  "$hcasim" calibrate --platform connectx-ddr-pcie1x8 --fit cpu.copy_tx_rate,cpu.bzcopy_setup \
    'validation/seed000/runs.txt:(64K|1M)' --holdout 'validation/seed000/runs.txt:128K' -j 2 \
    --steady "$steady" "${extra[@]}" -o "$work/$name.toml" > "$work/$name.txt"
  end=$(date +%s.%N)
  awk -v s="$start" -v e="$end" 'BEGIN { printf "%.1f\n", e - s }' > "$work/$name.s"
  echo "== $name (--steady $steady): $(cat "$work/$name.s") s wall"
  grep -E '^(cpu\.|fit:|RMS error)' "$work/$name.txt"
}
fit steady 0.002
if [ ${#extra[@]} -eq 0 ]; then
  fit full 0
  value() { awk -v k="$1" '$1 == k { print $4 }' "$work/$2.txt"; }
  awk -v a="$(value cpu.copy_tx_rate steady)" -v b="$(value cpu.copy_tx_rate full)" \
      -v c="$(value cpu.bzcopy_setup steady)" -v d="$(value cpu.bzcopy_setup full)" \
      -v ts="$(cat "$work/steady.s")" -v tf="$(cat "$work/full.s")" 'BEGIN {
    printf "bench_calibrate: %.1f s wall with --steady 0.002 (target < 60 s on 2 cores), %.1f s at full length; fitted cpu.copy_tx_rate %s vs %s (%+.2f %%), cpu.bzcopy_setup %s vs %s (%+.2f %%)\n",
           ts, tf, a, b, 100 * (a / b - 1), c, d, 100 * (c / d - 1)
  }'
else
  echo "bench_calibrate: $(cat "$work/steady.s") s wall with --steady 0.002 and ${extra[*]} (an instrumented build: the figure is its own)"
fi
