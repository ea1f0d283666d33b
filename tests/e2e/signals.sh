#!/usr/bin/env bash
# Stopping a training run from outside:
#   SIGTERM (and SIGINT) after the first step: the run finishes its step,
#     evaluates, saves a checkpoint, says how to continue and exits 0; the
#     checkpoint loads with `rfa eval perplexity` and `rfa train --resume`.
#   SIGKILL while checkpoints are being written every step: `latest` still
#     names a complete checkpoint that loads, and the run resumes from it.
# Usage: signals.sh <path-to-rfa> <source-dir>
set -euo pipefail
source "$(dirname "$0")/lib/common.bash"

# Waits (up to 20 s) until file $1 has a line matching $2.
wait_for() {
  for _ in $(seq 1 200); do
    grep -q -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  fail "timed out waiting for '$2' in $1"
}
state_step() { sed -n 's/.*"step": *\([0-9]*\).*/\1/p' "$1/state.json"; }

corpus_write 1500
config_write "$tmp/c.yaml" rfa_gate "run_dir: $tmp/unused, batch_size: 4, steps: 1000000, log_every: 1, eval_every: 0, eval_batches: 2"
# Prepare the data first so the timed runs below start training at once.
"$rfa" data prepare --config "$tmp/c.yaml" 2>"$tmp/prep.log" || { cat "$tmp/prep.log" >&2; fail "data prepare"; }

for sig in TERM INT; do
  run=$tmp/run-$sig
  "$rfa" --threads 2 train --config "$tmp/c.yaml" --set train.run_dir="$run" 2>"$tmp/$sig.log" &
  pid=$!
  wait_for "$run/metrics.jsonl" '"type":"train"'
  kill -"$sig" "$pid"
  rc=0
  wait "$pid" || rc=$?
  pid=
  [ "$rc" = 0 ] || { cat "$tmp/$sig.log" >&2; fail "SIG$sig: exit code $rc, expected 0"; }
  expect_in "$tmp/$sig.log" "received: stopped after step"
  expect_in "$tmp/$sig.log" "continue with: rfa train --resume $run"
  latest=$run/checkpoints/$(cat "$run/checkpoints/latest")
  step=$(state_step "$latest")
  [ "$step" -ge 1 ] || fail "SIG$sig: checkpoint step '$step'"
  expect_in "$tmp/$sig.log" "stopped after step $step/1000000 with checkpoint $latest"
  "$rfa" eval perplexity "$run" --json >"$tmp/ppl.json" 2>"$tmp/ppl.log" || { cat "$tmp/ppl.log" >&2; fail "eval after SIG$sig"; }
  expect_in "$tmp/ppl.json" '"perplexity":'
  echo "signals: SIG$sig stopped at step $step"
done

# A second signal while the first is being honoured quits at once (killed by
# the signal); the checkpoint of the first stop, or none, is never damaged.
run=$tmp/run-twice
"$rfa" --threads 2 train --config "$tmp/c.yaml" --set train.run_dir="$run" --set train.eval_batches=400 \
  2>"$tmp/twice.log" &
pid=$!
wait_for "$run/metrics.jsonl" '"type":"train"'
kill -INT "$pid"
sleep 0.05
kill -INT "$pid" 2>/dev/null || true
rc=0
wait "$pid" || rc=$?
pid=
# 130: the second signal landed during the stop; 0: the stop had finished first
# (or the kernel merged the two pending signals): both are right, nothing else is.
case $rc in
  130) echo "signals: a second SIGINT quit at once" ;;
  0) expect_in "$tmp/twice.log" "received: stopped after step" ;;
  *) cat "$tmp/twice.log" >&2; fail "two SIGINTs: exit code $rc" ;;
esac
if [ -f "$run/checkpoints/latest" ]; then
  "$rfa" eval perplexity "$run" --json >/dev/null 2>"$tmp/ppl.log" || { cat "$tmp/ppl.log" >&2; fail "eval after two SIGINTs"; }
fi

# The SIGTERM run resumes for two more steps and matches a run that never stopped,
# byte for byte in its weights and moments, line for line in its losses.
run=$tmp/run-TERM
step=$(state_step "$run/checkpoints/$(cat "$run/checkpoints/latest")")
to=$((step + 2))
"$rfa" --threads 2 train --resume "$run" --stop-after "$to" 2>"$tmp/resume.log" ||
  { cat "$tmp/resume.log" >&2; fail "resume after SIGTERM"; }
expect_in "$tmp/resume.log" "[train] step $to/1000000"
straight=$tmp/run-straight
"$rfa" --threads 2 train --config "$tmp/c.yaml" --set train.run_dir="$straight" --stop-after "$to" 2>"$tmp/straight.log" ||
  { cat "$tmp/straight.log" >&2; fail "straight run"; }
ck=$(printf 'step-%06d' "$to")
for f in model.safetensors optimizer.safetensors; do
  cmp -s "$run/checkpoints/$ck/$f" "$straight/checkpoints/$ck/$f" || fail "$ck/$f after SIGTERM + resume differs"
done
untimed_from() {  # metrics file, first step: train lines without timing
  grep '"type":"train"' "$1" | untimed | from_step "$2"
}
diff <(untimed_from "$run/metrics.jsonl" $((step + 1))) <(untimed_from "$straight/metrics.jsonl" $((step + 1))) \
  >"$tmp/diff.txt" || { cat "$tmp/diff.txt" >&2; fail "losses after SIGTERM + resume differ"; }
[ "$(untimed_from "$run/metrics.jsonl" $((step + 1)) | wc -l)" = 2 ] || fail "expected 2 train lines after the resume"
echo "signals: SIGTERM at step $step + resume to $to equals a straight run"

# SIGKILL while a checkpoint is written every step: whenever it lands, latest loads.
run=$tmp/run-KILL
"$rfa" --threads 2 train --config "$tmp/c.yaml" --set train.run_dir="$run" --set checkpoint.every=1 \
  --set checkpoint.keep_last=2 2>"$tmp/kill.log" &
pid=$!
wait_for "$run/metrics.jsonl" '"step":5,'
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
pid=
latest=$run/checkpoints/$(cat "$run/checkpoints/latest")
step=$(state_step "$latest")
"$rfa" eval perplexity "$run" --json >"$tmp/ppl.json" 2>"$tmp/ppl.log" || { cat "$tmp/ppl.log" >&2; fail "eval after SIGKILL"; }
"$rfa" --threads 2 train --resume "$run" --set train.steps=$((step + 1)) 2>"$tmp/resume-kill.log" ||
  { cat "$tmp/resume-kill.log" >&2; fail "resume after SIGKILL"; }
expect_in "$tmp/resume-kill.log" "resuming from $latest at step $step"
ls "$run/checkpoints" | grep -q '\.tmp-' && fail "a stale temp dir of the killed writer was not pruned"
echo "signals: SIGKILL at step >= $step left a loadable latest"
echo "signals: ok"
