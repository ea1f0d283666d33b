#!/usr/bin/env bash
# Long-context training cost, side by side in one run: `rfa bench train` at
# 6 layers, width 384, 6 heads (configs/bench-6x384.yaml), constant tokens per
# step (B*T = 16,384), T = 256 / 1024 / 4096 / 16384 for rfa_gate and softmax
# (the blockwise one, memory linear in T). Prints one table row per run:
# median ms/step, tokens/s, CPU ms/step (all threads) and tokens per
# CPU-second, activation arena and peak RSS, and the ratios the issue asks for,
# by wall time and by CPU time (the steadier one when other processes share the
# cores: it does not count the time they held them). The configurations are
# interleaved (rfa_gate then softmax at each T) so a busy neighbour slows both
# of a pair alike.
#
# usage: scripts/bench-long-context.sh [RFA_BINARY] [STEPS] [WARMUP]
#   defaults: build/rfa, 3 timed steps after 1 warm-up; THREADS=2; TS="256 1024 4096 16384"
set -euo pipefail
cd "$(dirname "$0")/.."
rfa=${1:-build/rfa}
steps=${2:-3}
warmup=${3:-1}
threads=${THREADS:-2}
ts=${TS:-256 1024 4096 16384}
tokens=16384
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}

[ -x "$rfa" ] || { echo "no rfa binary at $rfa; build with scripts/build.sh" >&2; exit 1; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT

declare -A tps cps
printf '%-9s %6s %3s %10s %9s %11s %11s %11s %11s\n' kind T B "ms/step" "tokens/s" "CPU ms/st" "tok/CPU-s" \
  "act arena" "peak RSS"
for T in $ts; do
  B=$((tokens / T))
  for kind in rfa_gate softmax; do
    "$rfa" --threads "$threads" bench train --config configs/bench-6x384.yaml --steps "$steps" --warmup "$warmup" \
      --set model.vocab_size=2048 --set attention.kind="$kind" --set model.context_length="$T" \
      --set train.batch_size="$B" >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
    ms=$(sed -n 's/.*median \([0-9.]*\) ms\/step.*/\1/p' "$log")
    tok=$(sed -n 's/.*\] \([0-9]*\) tokens\/s.*/\1/p' "$log")
    cpu=$(sed -n 's/.*CPU time \([0-9.]*\) ms\/step.*/\1/p' "$log")
    ctok=$(sed -n 's/.*: \([0-9]*\) tokens per CPU-second.*/\1/p' "$log")
    arena=$(sed -n 's/.*activation arena \([^,]*\),.*/\1/p' "$log")
    rss=$(sed -n 's/.*peak RSS \(.*\)$/\1/p' "$log")
    tps[$kind,$T]=$tok
    cps[$kind,$T]=$ctok
    printf '%-9s %6d %3d %10s %9s %11s %11s %11s %11s\n' "$kind" "$T" "$B" "$ms" "$tok" "$cpu" "$ctok" "$arena" "$rss"
  done
done
first=${ts%% *}
echo
for T in $ts; do
  awk -v t="$T" -v f="$first" -v r="${tps[rfa_gate,$T]}" -v s="${tps[softmax,$T]}" -v r0="${tps[rfa_gate,$first]}" \
    -v cr="${cps[rfa_gate,$T]}" -v cs="${cps[softmax,$T]}" -v cr0="${cps[rfa_gate,$first]}" \
    'BEGIN { printf "T=%-6d rfa_gate/softmax %.2fx (CPU time %.2fx)   rfa_gate vs its T=%d: %.2fx (CPU time %.2fx)\n",
                    t, r / s, cr / cs, f, r / r0, cr / cr0 }'
done
