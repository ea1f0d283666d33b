#!/usr/bin/env bash
# Stops `rfa train` with SIGTERM or SIGINT at random moments, many times, on a real
# config, and checks every trial: exit 0, the stop message, a checkpoint that loads
# (`rfa eval perplexity`), and a resume that continues with the very losses of a run
# that never stopped (same thread count). Slow (minutes), so not part of ctest;
# run it after touching signals, the training loop, or the libraries.
#
#   scripts/signal-trials.sh [--trials N] [--threads T] [--max-delay S] [--seed S] [--rfa BIN]
#                            [--config FILE] [--set key=value ...]
# Defaults: 40 trials, --threads 1, a signal 0..3 s after the first logged step,
# configs/shakespeare-char-rfa-gate.yaml on tinyshakespeare (scripts/get-data.sh),
# evaluating and checkpointing every 10 steps so the signals also land in those.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
trials=40 threads=1 max_delay=3 seed=$RANDOM rfa=$repo/build/rfa
config=$repo/configs/shakespeare-char-rfa-gate.yaml
sets=()
while [ $# -gt 0 ]; do
  case $1 in
    --trials) trials=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --max-delay) max_delay=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --rfa) rfa=$2; shift 2 ;;
    --config) config=$2; shift 2 ;;
    --set) sets+=(--set "$2"); shift 2 ;;
    *) echo "usage: $0 [--trials N] [--threads T] [--max-delay S] [--seed S] [--rfa BIN] [--config FILE] [--set k=v]" >&2
       exit 2 ;;
  esac
done
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
[ -x "$rfa" ] || { echo "no rfa binary at $rfa; build first (scripts/build.sh) or pass --rfa" >&2; exit 2; }
cd "$repo"
if grep -q 'data/tinyshakespeare' "$config" && [ ! -f data/tinyshakespeare.txt ]; then
  scripts/get-data.sh shakespeare
fi
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
RANDOM=$seed
echo "signal-trials: $trials trials, --threads $threads, signal 0..${max_delay}s into training, seed $seed, $config"

train_args=(--threads "$threads" train --config "$config" "${sets[@]}" --set train.log_every=1
  --set train.eval_every=10 --set checkpoint.every=10)
# Train lines without timing, and without val_loss (a stop evaluates where a straight run does not).
untimed() { grep '"type":"train"' "$1" | sed -E 's/,"(val_loss|tokens_per_s|ms_per_step|elapsed_s)":[^,}]*//g'; }
line_of() { grep "\"step\":$2," "$1" || true; }  # <untimed lines> <step>
state_step() { sed -n 's/.*"step": *\([0-9]*\).*/\1/p' "$1/state.json"; }
fail() { echo "FAIL trial $1: $2" >&2; [ -f "$3" ] && tail -5 "$3" >&2; failures=$((failures + 1)); }

# Data first, so that every trial starts training at once.
"$rfa" data prepare --config "$config" "${sets[@]}" 2>"$tmp/prep.log" || { cat "$tmp/prep.log" >&2; exit 1; }

# The reference: the losses of a run that is never stopped, extended on demand.
ref_steps=0
reference_to() {  # reference_to <step>
  [ "$1" -le "$ref_steps" ] && return
  ref_steps=$(($1 + 40))
  rm -rf "$tmp/ref"
  "$rfa" "${train_args[@]}" --set train.run_dir="$tmp/ref" --stop-after "$ref_steps" 2>"$tmp/ref.log" ||
    { cat "$tmp/ref.log" >&2; echo "reference run failed" >&2; exit 1; }
  untimed "$tmp/ref/metrics.jsonl" >"$tmp/ref.lines"
}

failures=0 during_step=0 after_step=0
start_all=$SECONDS
for trial in $(seq 1 "$trials"); do
  run=$tmp/run-$trial
  sig=TERM
  [ $((RANDOM % 2)) = 0 ] && sig=INT
  delay_ms=$((RANDOM * 32768 + RANDOM))
  delay_ms=$((delay_ms % (max_delay * 1000)))
  # A background job of this script inherits SIGINT ignored, which rfa keeps (core/stop_signals.h): reset it.
  env --default-signal=INT "$rfa" "${train_args[@]}" --set train.run_dir="$run" 2>"$tmp/$trial.log" &
  pid=$!
  for _ in $(seq 1 600); do
    grep -q '"type":"train"' "$run/metrics.jsonl" 2>/dev/null && break
    sleep 0.05
  done
  sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
  kill -"$sig" "$pid"
  rc=0
  wait "$pid" || rc=$?
  pid=
  log=$tmp/$trial.log
  if [ "$rc" != 0 ]; then fail "$trial" "SIG$sig after ${delay_ms} ms: exit code $rc" "$log"; continue; fi
  if grep -q "received: stopped during step" "$log"; then
    during_step=$((during_step + 1))
  elif grep -q "received: stopped after step" "$log"; then
    after_step=$((after_step + 1))
  else
    fail "$trial" "SIG$sig: no stop message" "$log"; continue
  fi
  step=$(state_step "$run/checkpoints/$(cat "$run/checkpoints/latest")")
  "$rfa" --threads "$threads" eval perplexity "$run" --max-tokens 2000 --json >"$tmp/ppl.json" 2>"$tmp/ppl.log" ||
    { fail "$trial" "eval perplexity of the step-$step checkpoint" "$tmp/ppl.log"; continue; }
  to=$((step + 2))
  "$rfa" --threads "$threads" train --resume "$run" --stop-after "$to" 2>"$tmp/resume.log" ||
    { fail "$trial" "resume from step $step" "$tmp/resume.log"; continue; }
  reference_to "$to"
  untimed "$run/metrics.jsonl" >"$tmp/run.lines"
  for s in $((step + 1)) "$to"; do
    got=$(line_of "$tmp/run.lines" "$s") want=$(line_of "$tmp/ref.lines" "$s")
    [ -n "$got" ] && [ "$got" = "$want" ] || fail "$trial" "step $s after resuming from $step: '$got' != '$want'" ""
  done
  echo "trial $trial: SIG$sig after ${delay_ms} ms -> exit 0, checkpoint step $step loads, resume to $to matches"
  rm -rf "$run"
done
echo "signal-trials: $((trials - failures))/$trials trials passed ($during_step stopped during a step, dropping it;" \
  "$after_step after one) in $((SECONDS - start_all)) s; seed $seed"
[ "$failures" = 0 ]
