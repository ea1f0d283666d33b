#!/usr/bin/env bash
# Issue 21's quality table (docs/quality.md): for a task, every row (an attention variant) trained
# once per seed at equal steps, then again at equal wall time (the in-step time softmax took for the
# same steps, each row's step count scaled by its own measured ms/step), evaluated on the whole
# validation split. The ms/step that sets the budget is `rfa bench train` of every row, the rows
# alternating over 3 rounds (medians), so a busy neighbour slows them alike. Prints one TSV line per run to stdout and, at the end, a markdown table of the
# means and spreads (min-max over the seeds); the runs stay in runs/quality/TASK/.
#
# usage: scripts/measure-quality.sh TASK [SEED ...]          (default seeds: 1 2 3)
#   TASK  shk64   tinyshakespeare characters, 4x128, T 64, B 12, 2000 steps (configs/shakespeare-char-*.yaml)
#         shk256  the same at T 256, B 12, 2000 steps
#         mqar64  MQAR T 64, 8 pairs, vocab 512 (data/mqar-t64-p8: rfa data mqar ...), 3000 steps of 32,
#                 answer accuracy (rfa eval accuracy)
#   env:  ROWS    the rows to run, names from the table below (default: all)
#         WALL    1 (default) to add the equal-wall-time runs, 0 for equal steps only
#         RFA     the binary (default build/rfa); THREADS (2); STEPS: another step count (a smoke test)
# Needs data/tinyshakespeare.txt (scripts/get-data.sh shakespeare) or data/mqar-t64-p8.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { sed -n '2,19p' "$0" >&2; exit 2; }
task=$1
shift
seeds=("$@")
[ ${#seeds[@]} -gt 0 ] || seeds=(1 2 3)
rfa=${RFA:-build/rfa}
threads=${THREADS:-2}
wall=${WALL:-1}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}

# name | overrides (space-separated KEY=VALUE, applied with --set). softmax must come first: the
# equal-wall-time budget is its time.
all_rows=(
  "softmax|attention.kind=softmax"
  "rfa_gate|attention.kind=rfa_gate"
  "rfa_gate+conv|attention.kind=rfa_gate attention.short_conv=4"
  "rfa_gate+conv+outgate|attention.kind=rfa_gate attention.short_conv=4 attention.output_gate=true"
  "rfa_delta+conv+outgate|attention.kind=rfa_delta attention.short_conv=4 attention.output_gate=true"
  "hybrid-window|attention.kind=rfa_gate attention.short_conv=4 attention.layers=3*rfa_gate,softmax@window=W"
  "softmax+conv|attention.kind=softmax attention.short_conv=4"
  "softmax+conv+outgate|attention.kind=softmax attention.short_conv=4 attention.output_gate=true"
)

case $task in
  shk64) config=configs/shakespeare-char-rfa-gate.yaml steps=2000 window=16 extra=() ;;
  shk256) config=configs/shakespeare-char-rfa-gate.yaml steps=2000 window=64 \
    extra=(model.context_length=256) ;;
  mqar64) config=data/mqar-t64-p8/mqar.yaml steps=3000 window=16 \
    extra=(train.batch_size=32 optim.lr=1e-3 optim.warmup_steps=100 train.eval_every=500) ;;
  *) echo "unknown task '$task': shk64, shk256 or mqar64" >&2; exit 2 ;;
esac
steps=${STEPS:-$steps}
[ -f "$config" ] || { echo "no $config (see the usage: scripts/get-data.sh or rfa data mqar)" >&2; exit 2; }
[ -x "$rfa" ] || { echo "no rfa binary at $rfa; build with scripts/build.sh" >&2; exit 2; }

wanted() { [ -z "${ROWS:-}" ] || [[ " $ROWS " == *" $1 "* ]]; }
root=runs/quality/$task
mkdir -p "$root"

# run NAME SEED STEPS OVERRIDES... -> prints "metric ms_per_step" of the finished run
run() {
  local name=$1 seed=$2 n=$3
  shift 3
  local dir=$root/$name-s$seed-n$n sets=()
  for kv in "${extra[@]}" "$@" train.seed=$seed train.steps=$n "train.run_dir=$dir" checkpoint.every=0; do
    sets+=(--set "${kv//@/ }")
  done
  if [ ! -f "$dir.metric" ]; then
    "$rfa" --threads "$threads" train --config "$config" "${sets[@]}" --overwrite 2>"$dir.log" ||
      { echo "training $name seed $seed failed: $dir.log" >&2; tail -3 "$dir.log" >&2; return 1; }
    if [ "$task" = mqar64 ]; then
      "$rfa" --threads "$threads" eval accuracy "$dir" --json 2>/dev/null | sed -n 's/.*"accuracy": \([0-9.e-]*\).*/\1/p' >"$dir.metric"
    else
      "$rfa" --threads "$threads" eval perplexity "$dir" --split val --json 2>/dev/null |
        sed -n 's/.*"mean_nll": \([0-9.e-]*\).*/\1/p' >"$dir.metric"
    fi
  fi
  # ms/step from "batch ... = 768 tokens/step" and the "done: ..., 10004 tok/s" line (tokens/s in steps)
  local per_step tok_s
  per_step=$(sed -n 's/.* = \([0-9]*\) tokens\/step.*/\1/p' "$dir.log" | head -1)
  tok_s=$(sed -n 's/.*done: [0-9]* steps.* \([0-9]*\) tok\/s.*/\1/p' "$dir.log" | tail -1)
  echo "$(cat "$dir.metric") $(awk -v t="$per_step" -v r="$tok_s" 'BEGIN { printf "%.2f", 1000 * t / r }')"
}

# bench_ms OVERRIDES... -> median ms/step of `rfa bench train` for that row, once
bench_ms() {
  local sets=()
  for kv in "${extra[@]}" "$@"; do sets+=(--set "${kv//@/ }"); done
  "$rfa" --threads "$threads" bench train --config "$config" "${sets[@]}" --steps 30 --warmup 3 2>&1 |
    sed -n 's/.*median \([0-9.]*\) ms\/step.*/\1/p'
}
declare -A bench_all
row_names=()
for entry in "${all_rows[@]}"; do
  name=${entry%%|*}
  wanted "$name" || [ "$name" = softmax ] || continue
  row_names+=("$name")
done
for round in 1 2 3; do
  [ "$wall" = 1 ] || break  # equal steps only: the training logs' ms/step is enough
  for entry in "${all_rows[@]}"; do
    name=${entry%%|*}
    [[ " ${row_names[*]} " == *" $name "* ]] || continue
    read -r -a sets <<<"${entry#*|}"
    sets=("${sets[@]//W/$window}")
    bench_all[$name]="${bench_all[$name]:-} $(bench_ms "${sets[@]}")"
  done
done
declare -A bench
for name in "${row_names[@]}"; do
  [ "$wall" = 1 ] || { bench[$name]=-; continue; }
  bench[$name]=$(echo "${bench_all[$name]}" | tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
  echo "# bench train $name: ${bench_all[$name]} ms/step -> median ${bench[$name]}" >&2
done

metric_name=val_nll
[ "$task" = mqar64 ] && metric_name=accuracy
printf 'task\trow\tseed\tsteps\t%s\tms_per_step\tbudget\n' "$metric_name"
results=$(mktemp)
trap 'rm -f "$results"' EXIT
for entry in "${all_rows[@]}"; do
  name=${entry%%|*}
  wanted "$name" || [ "$name" = softmax ] || continue
  read -r -a sets <<<"${entry#*|}"
  sets=("${sets[@]//W/$window}")
  for seed in "${seeds[@]}"; do
    out=$(run "$name" "$seed" "$steps" "${sets[@]}") || exit 1
    read -r metric ms <<<"$out"
    printf '%s\t%s\t%s\t%s\t%s\t%s\tsteps\n' "$task" "$name" "$seed" "$steps" "$metric" "$ms" | tee -a "$results"
    if [ "$name" != softmax ] && [ "$wall" = 1 ]; then
      # the same wall time as softmax's $steps steps: steps scaled by softmax's ms/step over this row's
      n=$(awk -v a="${bench[softmax]}" -v b="${bench[$name]}" -v s="$steps" 'BEGIN { printf "%d", s * a / b }')
      if [ "$n" != "$steps" ]; then
        out=$(run "$name" "$seed" "$n" "${sets[@]}") || exit 1
        read -r metric2 ms2 <<<"$out"
        printf '%s\t%s\t%s\t%s\t%s\t%s\twall\n' "$task" "$name" "$seed" "$n" "$metric2" "$ms2" | tee -a "$results"
      fi
    fi
  done
done

echo
echo "| $task | $metric_name, equal steps: mean (min-max) | ms/step in training (bench) | $metric_name, equal wall time: mean (min-max), steps |"
echo "|---|---|---|---|"
awk -F'\t' '
  { k = $2; b = $7; v[k, b] = v[k, b] " " $5; ms[k, b] = ms[k, b] " " $6; st[k, b] = st[k, b] " " $4; if (!(k in seen)) { seen[k] = 1; order[++n] = k } }
  function stats(s,   a, i, m, lo, hi, c) { c = split(s, a, " "); if (!c) return "-"; m = 0; lo = a[1]; hi = a[1];
    for (i = 1; i <= c; ++i) { m += a[i]; if (a[i] < lo) lo = a[i]; if (a[i] > hi) hi = a[i] } m /= c;
    return sprintf("%.4f (%.4f-%.4f)", m, lo, hi) }
  function mean(s,   a, i, m, c) { c = split(s, a, " "); if (!c) return "-"; m = 0; for (i = 1; i <= c; ++i) m += a[i]; return sprintf("%.1f", m / c) }
  BEGIN { }
  END { c = split(bench_list, pairs, ";"); for (i = 1; i <= c; ++i) { split(pairs[i], kv, "="); bench[kv[1]] = kv[2] }
    for (i = 1; i <= n; ++i) { k = order[i];
    w = (k == "softmax") ? stats(v[k, "steps"]) : ((k, "wall") in v ? stats(v[k, "wall"]) ", " st[k, "wall"] : "-");
    printf "| %s | %s | %s (%s) | %s |\n", k, stats(v[k, "steps"]), mean(ms[k, "steps"]), bench[k], w } }' \
  bench_list="$(for k in "${row_names[@]}"; do printf '%s=%s;' "$k" "${bench[$k]}"; done)" "$results"
