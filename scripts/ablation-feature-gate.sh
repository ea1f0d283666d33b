#!/usr/bin/env bash
# The gate ablation of docs/feature-gate.md: softmax, scalar gate, feature gate, scalar +
# time discount, feature + time discount, trained one after another for equal steps on
#   shakespeare: configs/shakespeare-char-rfa-gate.yaml (characters, T 64)
#   kjv:         configs/kjv-quick.yaml with model.context_length=256 (BPE 2048)
# then per run: validation loss over the whole validation split (`rfa eval perplexity`,
# one pass for the RFA kinds as the trainer reports it, and with --sliding: windows of
# the training context as training saw them), training wall time and tokens/s (the
# trainer's own figures), and decode ms/token (`rfa bench decode`, 1 thread, the
# variant's shape). Results go to OUT/results.tsv as each run finishes.
#   scripts/ablation-feature-gate.sh [RFA_BIN] [OUT] [SHAKESPEARE_STEPS] [KJV_STEPS] [THREADS]
set -euo pipefail
bin=$(realpath "${1:-build/rfa}")
out=${2:-runs/ablation}
sk_steps=${3:-2000}
kjv_steps=${4:-500}
threads=${5:-2}
export OMP_WAIT_POLICY=passive
mkdir -p "$out"
results=$out/results.tsv
[ -f "$results" ] ||
  printf 'dataset\tvariant\tsteps\tval_loss_one_pass\tval_loss_sliding\ttrain_s_in_steps\ttrain_s_wall\ttokens_per_s\tdecode_ms_per_token\tdecode_cpu_ms_per_token\n' > "$results"

variants=(
  "softmax:--set attention.kind=softmax"
  "scalar:--set attention.kind=rfa_gate --set attention.gate=scalar"
  "feature:--set attention.kind=rfa_gate --set attention.gate=feature"
  "scalar+discount:--set attention.kind=rfa_gate --set attention.gate=scalar --set attention.time_discount=log"
  "feature+discount:--set attention.kind=rfa_gate --set attention.gate=feature --set attention.time_discount=log"
)

to_seconds() {  # "2m27s", "1h02m", "45s" (the trainer's duration_text) -> seconds
  awk -v x="$1" 'BEGIN { s = 0
    if (match(x, /[0-9]+h/)) s += 3600 * substr(x, RSTART, RLENGTH - 1)
    if (match(x, /[0-9]+m/)) s += 60 * substr(x, RSTART, RLENGTH - 1)
    if (match(x, /[0-9]+s/)) s += substr(x, RSTART, RLENGTH - 1)
    print s }'
}
json_field() { sed -n "s/.*\"$1\": \([-0-9.e+]*\).*/\1/p" | head -1; }

run_one() {  # run_one DATASET CONFIG STEPS VOCAB VARIANT_NAME SETS... (extra sets in $extra)
  local dataset=$1 config=$2 steps=$3 vocab=$4 name=$5 sets=$6
  local run=$out/$dataset-${name//+/-}
  if grep -q "^$dataset	$name	" "$results"; then echo "[ablation] $dataset $name: done before"; return; fi
  rm -rf "$run"
  echo "[ablation] $(date -u +%H:%M:%S) $dataset $name: training $steps steps"
  # shellcheck disable=SC2086
  "$bin" --threads "$threads" train --config "$config" $extra $sets --set train.steps="$steps" \
    --set train.eval_every="$steps" --set checkpoint.every=0 --set train.run_dir="$run" > "$run.log" 2>&1
  local done_line
  done_line=$(grep "\[train\] done:" "$run.log" | tail -1)
  local s_steps s_wall tps
  s_steps=$(to_seconds "$(echo "$done_line" | sed -n 's/.*, \([0-9hms]*\) in steps.*/\1/p')")
  s_wall=$(to_seconds "$(echo "$done_line" | sed -n 's/.*(\([0-9hms]*\) wall).*/\1/p')")
  tps=$(echo "$done_line" | sed -n 's/.*wall), \([0-9.]*\) tok\/s.*/\1/p')
  local one sliding
  one=$("$bin" --threads "$threads" eval perplexity "$run" --split val --json 2>/dev/null | json_field mean_nll)
  sliding=$one  # softmax: its evaluation is sliding windows already
  if [ "$name" != softmax ]; then
    sliding=$("$bin" --threads "$threads" eval perplexity "$run" --split val --sliding --json 2>/dev/null |
      json_field mean_nll)
  fi
  # Decode: the variant's shape, one thread, rfa_gate at position 1024 (softmax: its column).
  local dec dec_cpu djson
  # shellcheck disable=SC2086
  djson=$("$bin" --threads 1 bench decode --config "$config" $extra $sets --set attention.kind=rfa_gate \
    --vocab "$vocab" --positions 1024 --steps 64 --repeats 5 $( [ "$name" != softmax ] && echo --rfa-only ) \
    2>/dev/null | tail -1)
  if [ "$name" = softmax ]; then
    dec=$(echo "$djson" | json_field softmax_ms_per_token)
    dec_cpu=$(echo "$djson" | json_field softmax_cpu_ms_per_token)
  else
    dec=$(echo "$djson" | json_field rfa_gate_ms_per_token)
    dec_cpu=$(echo "$djson" | json_field rfa_gate_cpu_ms_per_token)
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$dataset" "$name" "$steps" "$one" "$sliding" "$s_steps" \
    "$s_wall" "$tps" "$dec" "$dec_cpu" >> "$results"
  echo "[ablation] $(date -u +%H:%M:%S) $dataset $name: val $one (sliding $sliding), ${s_steps}s in steps, $tps tok/s"
}

for v in "${variants[@]}"; do
  extra="--set model.vocab_size=0 --set attention.short_conv=0 --set attention.output_gate=false"
  run_one shakespeare configs/shakespeare-char-rfa-gate.yaml "$sk_steps" 384 "${v%%:*}" "${v#*:}"
done
for v in "${variants[@]}"; do
  extra="--set model.context_length=256 --set attention.short_conv=0 --set attention.output_gate=false"
  run_one kjv configs/kjv-quick.yaml "$kjv_steps" 2048 "${v%%:*}" "${v#*:}"
done
column -t -s $'\t' "$results"
