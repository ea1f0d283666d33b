#!/usr/bin/env bash
# Issue 21's quality table (docs/quality.md): for a task, every row (an attention variant) trained
# once per seed at equal steps, then again at equal wall time (the in-step time softmax took for the
# same steps, each row's step count scaled by its own measured ms/step), evaluated on the whole
# validation split. The ms/step that sets the budget is `rfa bench train` of every row, the rows
# alternating over 3 rounds (medians), so a busy neighbour slows them alike. Prints one TSV line per run to stdout and, at the end, a markdown table of the
# means and spreads (min-max over the seeds); the runs stay in runs/quality/TASK/.
#
# usage: scripts/measure-quality.sh TASK [SEED ...]          (default seeds: 1 2 3)
#   TASK  shk64    tinyshakespeare characters, 4x128, T 64, B 12, 2000 steps (configs/shakespeare-char-*.yaml)
#         shk256   the same text and tokens per step at T 256 (B 3), 2000 steps
#         kjv512   KJV BPE 2048, 4x256, T 512, B 8, 240 steps (configs/kjv-long.yaml, not stateful)
#         kjv1024  the same at T 1024, B 4 (the same tokens per step)
#         mqar64   MQAR T 64, 8 pairs, vocab 512 (data/mqar-t64-p8: rfa data mqar ...), 3000 steps of 32,
#                  lr 3e-3, gate bias 5 (a long memory at init); answer accuracy (rfa eval accuracy)
#   env:  ROWS    the rows to run, names from the table below (default: all)
#         WALL    1 (default) to add the equal-wall-time runs, 0 for equal steps only
#         RFA     the binary (default build/rfa); THREADS (2); STEPS: another step count (a smoke test)
#         MODE    decode: only time decoding (rfa generate, 1024 tokens, one thread, greedy) of every
#                 row's seed-1 run (at equal steps, else at equal wall time), 3 rounds alternating;
#                 prints ms/token (median)
#                 bench: only measure the rows' ms/step into bench.txt (then exit)
#         ONLY    wall: only the equal-wall-time runs (softmax at its steps, the others at theirs)
#         TAG, SETS  a variant of every row: SETS (space-separated KEY=VALUE) added to each row's
#                 overrides, TAG (e.g. @lr2e-3) appended to its name in the run directories, results.tsv
#                 and the table. The budgets stay the untagged rows' (SETS must not change the speed:
#                 the learning rate, the seed of the draws).
#         BENCH_STEPS  timed steps of each bench (100; 10 on KJV)
#         BENCH_WAIT_POLICY  OMP_WAIT_POLICY of the bench (default: none set, OpenMP's own, what a
#                 user's run gets). passive (the training runs' setting here, for two at a time) makes
#                 every parallel region wake its threads from sleep, which costs the rows with more
#                 kernels more: at 4x128 T 64 it put rfa_gate+conv+outgate at 1.30x softmax's step,
#                 against 1.23x with the default policy (docs/quality.md).
# The bench medians are kept in runs/quality/TASK/bench.txt and reused: delete it to measure again
# (measure on a quiet machine; then several instances, each with its own ROWS and THREADS=1, can
# share the cores). softmax trains only when ROWS names it (or is empty). Every finished
# run's line is kept in runs/quality/TASK/results.tsv; the table at the end is made from all of them.
# Needs data/tinyshakespeare.txt (scripts/get-data.sh shakespeare), data/kjv.txt (get-data.sh kjv)
# or data/mqar-t64-p8.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { sed -n '2,/^set -euo pipefail/{/^set/!p}' "$0" >&2; exit 2; }
task=$1
shift
seeds=("$@")
[ ${#seeds[@]} -gt 0 ] || seeds=(1 2 3)
rfa=${RFA:-build/rfa}
threads=${THREADS:-2}
wall=${WALL:-1}
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}

# name | overrides (space-separated KEY=VALUE, applied with --set; every row names both options, so a
# config's own defaults do not leak in; @ is a space inside a value). softmax comes first: the
# equal-wall-time budget is its time.
all_rows=(
  "softmax|attention.kind=softmax attention.short_conv=0 attention.output_gate=false"
  "rfa_gate|attention.kind=rfa_gate attention.short_conv=0 attention.output_gate=false"
  "rfa_gate+conv|attention.kind=rfa_gate attention.short_conv=4 attention.output_gate=false"
  "rfa_gate+conv+outgate|attention.kind=rfa_gate attention.short_conv=4 attention.output_gate=true"
  "rfa_delta+conv+outgate|attention.kind=rfa_delta attention.short_conv=4 attention.output_gate=true"
  "hybrid-window|attention.kind=rfa_gate attention.short_conv=4 attention.output_gate=false attention.layers=3*rfa_gate,softmax@window=W"
  "rfa_gate+outgate|attention.kind=rfa_gate attention.short_conv=0 attention.output_gate=true"
  "softmax+conv|attention.kind=softmax attention.short_conv=4 attention.output_gate=false"
  "softmax+conv+outgate|attention.kind=softmax attention.short_conv=4 attention.output_gate=true"
  "rfa_gate+conv+outgate+D16|attention.kind=rfa_gate attention.short_conv=4 attention.output_gate=true attention.num_features=16"
)

case $task in
  shk64) config=configs/shakespeare-char-rfa-gate.yaml steps=2000 window=16 extra=() ;;
  shk256) config=configs/shakespeare-char-rfa-gate.yaml steps=2000 window=64 \
    extra=(model.context_length=256 train.batch_size=3) ;;
  kjv512) config=configs/kjv-long.yaml steps=240 window=64 extra=(train.stateful=false) ;;
  kjv1024) config=configs/kjv-long.yaml steps=240 window=64 \
    extra=(train.stateful=false model.context_length=1024 train.batch_size=4) ;;
  mqar64) config=data/mqar-t64-p8/mqar.yaml steps=3000 window=16 \
    extra=(train.batch_size=32 optim.lr=3e-3 optim.warmup_steps=100 train.eval_every=500 attention.gate_bias_init=5) ;;
  *) echo "unknown task '$task': shk64, shk256, kjv512, kjv1024 or mqar64" >&2; exit 2 ;;
esac
steps=${STEPS:-$steps}
bench_steps=${BENCH_STEPS:-100}  # about 2-4 s a bench at T 64
[[ $task == kjv* ]] && bench_steps=10  # a step is 0.3-1 s there
[ -f "$config" ] || { echo "no $config (see the usage: scripts/get-data.sh or rfa data mqar)" >&2; exit 2; }
[ -x "$rfa" ] || { echo "no rfa binary at $rfa; build with scripts/build.sh" >&2; exit 2; }

# MODE=decode: ms/token of `rfa generate` for each row's trained seed-1 run (one thread: a single
# conversation's cost), 3 rounds alternating, medians.
decode_rows() {
  local round name dir ms
  declare -A all=()
  for round in 1 2 3; do
    for entry in "${all_rows[@]}"; do
      name=${entry%%|*}
      wanted "$name" || continue
      dir=$root/$name-s${seeds[0]}-n$steps  # else its run at equal wall time
      [ -f "$dir.metric" ] || dir=$(ls -d "$root/$name-s${seeds[0]}"-n* 2>/dev/null | grep -v '\.' | head -1 || true)
      [ -n "$dir" ] && [ -f "$dir.metric" ] || continue
      ms=$("$rfa" --threads 1 generate "$dir" -p "The " -n 1024 --ignore-eos --greedy 2>&1 >/dev/null |
        sed -n 's/.* \([0-9.]*\) ms\/token.*/\1/p')
      all[$name]="${all[$name]:-} $ms"
    done
  done
  echo "| $task row | decode ms/token, 1024 tokens from a 4-character prompt, 1 thread (3 runs) | median |"
  echo "|---|---|---:|"
  for entry in "${all_rows[@]}"; do
    name=${entry%%|*}
    [ -n "${all[$name]:-}" ] || continue
    echo "| $name |${all[$name]} | $(tr ' ' '\n' <<<"${all[$name]}" | grep . | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }') |"
  done
}

wanted() { [ -z "${ROWS:-}" ] || [[ " $ROWS " == *" $1 "* ]]; }
root=runs/quality/$task
mkdir -p "$root"
if [ "${MODE:-}" = decode ]; then decode_rows; exit 0; fi

# run NAME SEED STEPS OVERRIDES... -> prints "metric ms_per_step" of the finished run
run() {
  local name=$1 seed=$2 n=$3
  shift 3
  local dir=$root/$name${TAG:-}-s$seed-n$n sets=()
  for kv in "${extra[@]}" "$@" ${SETS:-} train.seed=$seed train.steps=$n checkpoint.every=0; do
    sets+=(--set "${kv//@/ }")
  done
  sets+=(--set "train.run_dir=$dir")  # (not through the @ -> space of the overrides: TAG has an @)
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
  local policy=()  # OpenMP's own wait policy unless BENCH_WAIT_POLICY names one
  [ -n "${BENCH_WAIT_POLICY:-}" ] && policy=(OMP_WAIT_POLICY="$BENCH_WAIT_POLICY")
  env -u OMP_WAIT_POLICY "${policy[@]}" "$rfa" --threads "$threads" bench train --config "$config" "${sets[@]}" \
    --steps "$bench_steps" --warmup 3 2>&1 |
    sed -n 's/.*median \([0-9.]*\) ms\/step.*/\1/p'
}
row_names=()  # the rows this instance runs
for entry in "${all_rows[@]}"; do
  name=${entry%%|*}
  wanted "$name" && row_names+=("$name")
done
# The bench medians, in $root/bench.txt ("row median ms/step, the 3 rounds"): rows missing from it
# are measured here beside softmax (alternating, 3 rounds); a row added to an existing file is
# scaled by softmax's median there over softmax's median now, so only ratios measured side by side
# enter the budget.
declare -A bench
bench_file=$root/bench.txt
if [ -s "$bench_file" ]; then
  while read -r name median rest; do
    bench[$name]=$median
    echo "# bench train $name: $rest ms/step -> median $median ($bench_file)" >&2
  done <"$bench_file"
fi
missing=()
if [ "$wall" = 1 ]; then
  for name in "${row_names[@]}"; do [ -n "${bench[$name]:-}" ] || missing+=("$name"); done
fi
if [ ${#missing[@]} -gt 0 ]; then
  declare -A bench_all
  for round in 1 2 3; do
    for entry in "${all_rows[@]}"; do
      name=${entry%%|*}
      [ "$name" = softmax ] || [[ " ${missing[*]} " == *" $name "* ]] || continue
      read -r -a sets <<<"${entry#*|}"
      sets=("${sets[@]//W/$window}")
      bench_all[$name]="${bench_all[$name]:-} $(bench_ms "${sets[@]}")"
    done
  done
  median_of() { tr ' ' '\n' <<<"$1" | grep . | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
  soft_now=$(median_of "${bench_all[softmax]}")
  soft_then=${bench[softmax]:-$soft_now}
  [ -n "${bench[softmax]:-}" ] || { bench[softmax]=$soft_now; echo "softmax $soft_now ${bench_all[softmax]}" >>"$bench_file"; }
  for name in "${missing[@]}"; do
    [ "$name" = softmax ] && continue
    bench[$name]=$(awk -v m="$(median_of "${bench_all[$name]}")" -v a="$soft_then" -v b="$soft_now" 'BEGIN { printf "%.2f", m * a / b }')
    echo "$name ${bench[$name]} ${bench_all[$name]} (softmax then $soft_then, now $soft_now)" >>"$bench_file"
    echo "# bench train $name: ${bench_all[$name]} ms/step -> ${bench[$name]} at softmax's $soft_then" >&2
  done
fi
[ "${MODE:-}" = bench ] && exit 0
if [ "$wall" = 1 ]; then
  for name in softmax "${row_names[@]}"; do
    [ -n "${bench[$name]:-}" ] || { echo "$bench_file has no $name: delete it to measure every row again" >&2; exit 2; }
  done
fi

metric_name=val_nll
[ "$task" = mqar64 ] && metric_name=accuracy
results=$root/results.tsv
[ -f "$results" ] || printf 'task\trow\tseed\tsteps\t%s\tms_per_step\tbudget\n' "$metric_name" >"$results"
# record LINE: prints it and keeps it in results.tsv once (the same row, seed, steps and budget once)
record() {
  echo "$1"
  local key
  key=$(cut -f2-4,7 <<<"$1")
  awk -F'\t' -v k="$key" '($2 "\t" $3 "\t" $4 "\t" $7) == k { found = 1 } END { exit !found }' "$results" ||
    echo "$1" >>"$results"
}
for entry in "${all_rows[@]}"; do
  name=${entry%%|*}
  wanted "$name" || continue
  read -r -a sets <<<"${entry#*|}"
  sets=("${sets[@]//W/$window}")
  for seed in "${seeds[@]}"; do
    if [ "${ONLY:-}" != wall ] || [ "$name" = softmax ]; then
      out=$(run "$name" "$seed" "$steps" "${sets[@]}") || exit 1
      read -r metric ms <<<"$out"
      record "$(printf '%s\t%s\t%s\t%s\t%s\t%s\tsteps' "$task" "$name${TAG:-}" "$seed" "$steps" "$metric" "$ms")"
    fi
    if [ "$name" != softmax ] && [ "$wall" = 1 ]; then
      # the same wall time as softmax's $steps steps: steps scaled by softmax's ms/step over this row's
      n=$(awk -v a="${bench[softmax]}" -v b="${bench[$name]}" -v s="$steps" 'BEGIN { printf "%d", s * a / b }')
      if [ "$n" != "$steps" ]; then
        out=$(run "$name" "$seed" "$n" "${sets[@]}") || exit 1
        read -r metric2 ms2 <<<"$out"
        record "$(printf '%s\t%s\t%s\t%s\t%s\t%s\twall' "$task" "$name${TAG:-}" "$seed" "$n" "$metric2" "$ms2")"
      fi
    fi
  done
done

# The table, from every run recorded for this task (rows in the order of all_rows).
echo
echo "| $task | $metric_name, equal steps: mean (min-max) | ms/step in training (bench) | $metric_name, equal wall time: mean (min-max), steps |"
echo "|---|---|---|---|"
awk -F'\t' '
  NR > 1 { k = $2; b = $7; v[k, b] = v[k, b] " " $5; ms[k, b] = ms[k, b] " " $6; st[k, b] = st[k, b] " " $4; seen[k] = 1 }
  function stats(s,   a, i, m, lo, hi, c) { c = split(s, a, " "); if (!c) return "-"; m = 0; lo = a[1]; hi = a[1];
    for (i = 1; i <= c; ++i) { m += a[i]; if (a[i] < lo) lo = a[i]; if (a[i] > hi) hi = a[i] } m /= c;
    return sprintf("%.4f (%.4f-%.4f), %d seeds", m, lo, hi, c) }
  function mean(s,   a, i, m, c) { c = split(s, a, " "); if (!c) return "-"; m = 0; for (i = 1; i <= c; ++i) m += a[i]; return sprintf("%.1f", m / c) }
  END { c = split(bench_list, pairs, ";"); for (i = 1; i <= c; ++i) { split(pairs[i], kv, "="); bench[kv[1]] = kv[2] }
    n = split(order, base, " "); m = 0;
    for (i = 1; i <= n; ++i) { names[++m] = base[i]; c = 0;  # a base row, then its tagged variants
      for (k in seen) if (index(k, base[i] "@") == 1) tagged[++c] = k;
      for (a = 1; a <= c; ++a) for (b = a + 1; b <= c; ++b) if (tagged[b] < tagged[a]) { t = tagged[a]; tagged[a] = tagged[b]; tagged[b] = t }
      for (a = 1; a <= c; ++a) names[++m] = tagged[a] }
    for (i = 1; i <= m; ++i) { k = names[i]; if (!(k in seen)) continue; kb = k; sub(/@.*/, "", kb);
    w = (kb == "softmax") ? stats(v[k, "steps"]) : ((k, "wall") in v ? stats(v[k, "wall"]) ", steps" st[k, "wall"] : "-");
    printf "| %s | %s | %s (%s) | %s |\n", k, stats(v[k, "steps"]), mean(ms[k, "steps"]), (kb in bench) ? bench[kb] : "-", w } }' \
  bench_list="$(for k in "${!bench[@]}"; do printf '%s=%s;' "$k" "${bench[$k]}"; done)" \
  order="$(for entry in "${all_rows[@]}"; do printf '%s ' "${entry%%|*}"; done)" "$results"
