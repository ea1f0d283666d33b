#!/usr/bin/env bash
# The feature gate's training step against the scalar gate's, side by side in one run:
# `rfa bench train` at the nano reference shape (configs/shakespeare-char-rfa-gate.yaml,
# V 65), the two alternating ROUNDS times, and per variant the median over rounds of
# each run's median ms/step, min ms/step and CPU ms/step (CPU time is the steadier
# figure on a shared machine). Extra arguments go to every `rfa bench train`.
#   scripts/bench-feature-gate.sh [RFA_BIN] [ROUNDS] [--set KEY=VALUE ...]
set -euo pipefail
bin=${1:-build/rfa}
rounds=${2:-6}
shift $(( $# >= 2 ? 2 : $# ))
export OMP_WAIT_POLICY=passive
threads=${RFA_BENCH_THREADS:-2}
variants=("scalar:--set attention.gate=scalar" "feature:--set attention.gate=feature")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for ((r = 1; r <= rounds; r++)); do
  for v in "${variants[@]}"; do
    name=${v%%:*}
    # shellcheck disable=SC2086
    "$bin" --threads "$threads" bench train --config configs/shakespeare-char-rfa-gate.yaml \
      --set model.vocab_size=65 --set attention.short_conv=0 --set attention.output_gate=false ${v#*:} --steps 30 "$@" 2>&1 |
      awk -v n="$name" '/median .* ms\/step/ { gsub(/[(),:]/, " "); for (i = 1; i <= NF; i++) {
                          if ($i == "median") med = $(i + 1); if ($i == "min") mn = $(i + 1) } }
                        /CPU time/ { for (i = 1; i < NF; i++) if ($i == "time") { cpu = $(i + 1); break } }
                        END { print n, med, mn, cpu }' >> "$tmp/runs"
  done
done

median() { sort -g | awk '{ a[NR] = $1 } END { print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2) }'; }
echo "variant  median_ms  min_ms  cpu_ms   (medians over $rounds alternating runs of 30 steps, $threads threads)"
for v in "${variants[@]}"; do
  name=${v%%:*}
  med=$(awk -v n="$name" '$1 == n { print $2 }' "$tmp/runs" | median)
  mn=$(awk -v n="$name" '$1 == n { print $3 }' "$tmp/runs" | median)
  cpu=$(awk -v n="$name" '$1 == n { print $4 }' "$tmp/runs" | median)
  printf '%-8s %9s %7s %7s\n' "$name" "$med" "$mn" "$cpu"
  echo "$name $med $mn $cpu" >> "$tmp/summary"
done
awk 'NR == 1 { m = $2; n = $3; c = $4 } NR == 2 { printf "feature / scalar: median %.2fx  min %.2fx  cpu %.2fx\n", $2 / m, $3 / n, $4 / c }' \
  "$tmp/summary"
