#!/usr/bin/env bash
# Stopping a training run from outside:
#   SIGTERM (and SIGINT) after the first step: the run stops at its next
#     micro-batch, saves a checkpoint, says how to continue and exits 0; the
#     checkpoint loads with `rfa eval perplexity` and `rfa train --resume`.
#   A signal inherited as ignored stays ignored, for train and generate alike
#     (core/stop_signals.h): a script's background job starts with SIGINT ignored
#     (bash does that), so the runs that SIGINT should stop are started with
#     `env --default-signal=INT`, and the ones that must not stop with
#     `env --ignore-signal=INT`; SIGTERM then ends those.
#   SIGTERM in the middle of a long step (grad_accum 1000): the step is dropped,
#     the last finished one is saved at once, and the resume equals a straight run.
#   SIGTERM at random moments on a model of the reference shape at --threads 1,
#     where oneDNN's JIT sgemm runs most of the time (it once corrupted the heap
#     when the signal handler ran on its thread; scripts/signal-trials.sh has the
#     long version of this on the real config).
#   SIGKILL while checkpoints are being written every step: `latest` still
#     names a complete checkpoint that loads, and the run resumes from it.
# Usage: signals.sh <path-to-rfa> <source-dir>
set -euo pipefail
source "$(dirname "$0")/lib/common.bash"

# Waits (up to 20 s) until file $1 has a line matching $2.

corpus_write 1500
config_write "$tmp/c.yaml" rfa_gate "run_dir: $tmp/unused, batch_size: 4, steps: 1000000, log_every: 1, eval_every: 0, eval_batches: 2"
# Prepare the data first so the timed runs below start training at once.
"$rfa" data prepare --config "$tmp/c.yaml" 2>"$tmp/prep.log" || { cat "$tmp/prep.log" >&2; fail "data prepare"; }

for sig in TERM INT; do
  run=$tmp/run-$sig
  spawn env --default-signal=INT "$rfa" --threads 2 train --config "$tmp/c.yaml" --set train.run_dir="$run" 2>"$tmp/$sig.log"
  wait_for "$run/metrics.jsonl" '"type":"train"'
  kill -"$sig" "$pid"
  reap
  [ "$rc" = 0 ] || { cat "$tmp/$sig.log" >&2; fail "SIG$sig: exit code $rc, expected 0"; }
  expect_in "$tmp/$sig.log" "received: stopped"
  expect_in "$tmp/$sig.log" "continue with: rfa train --resume $run"
  latest=$run/checkpoints/$(cat "$run/checkpoints/latest")
  step=$(state_step "$latest")
  [ "$step" -ge 1 ] || fail "SIG$sig: checkpoint step '$step'"
  expect_in "$tmp/$sig.log" "with checkpoint $latest"
  "$rfa" eval perplexity "$run" --json >"$tmp/ppl.json" 2>"$tmp/ppl.log" || { cat "$tmp/ppl.log" >&2; fail "eval after SIG$sig"; }
  expect_in "$tmp/ppl.json" '"perplexity":'
  echo "signals: SIG$sig stopped at step $step"
done

# lives_until <command...>: until the command succeeds (60 s), failing if $pid ends first.
lives_until() {
  for _ in $(seq 1 600); do
    "$@" && return 0
    kill -0 "$pid" 2>/dev/null || { cat "$tmp/ignored.log" >&2; fail "rfa ended before: $*"; }
    sleep 0.1
  done
  fail "timed out waiting for: $*"
}
# signal_and_reap <signal> <expected exit code>: sends the signal to $pid and waits for it to exit so.
signal_and_reap() {
  kill -"$1" "$pid"
  reap
  [ "$rc" = "$2" ] || { cat "$tmp/ignored.log" >&2; fail "SIG$1: exit code $rc, expected $2"; }
}
# SIGINT inherited as ignored: train keeps it ignored, says so, and goes on; SIGTERM stops it.
run=$tmp/run-ignored
spawn env --ignore-signal=INT "$rfa" --threads 2 train --config "$tmp/c.yaml" --set train.run_dir="$run" 2>"$tmp/ignored.log"
wait_for "$run/metrics.jsonl" '"type":"train"'
kill -INT "$pid"
at=$(grep -c '"type":"train"' "$run/metrics.jsonl")
lives_until grep -q "\"step\":$((at + 3))," "$run/metrics.jsonl"
signal_and_reap TERM 0
expect_in "$tmp/ignored.log" "SIGINT was inherited as ignored (nohup, or a script's background job) and stays ignored; SIGTERM (kill -TERM"
expect_in "$tmp/ignored.log" "signal 15 received: stopped"
grep -q "signal 2 received" "$tmp/ignored.log" && fail "an ignored SIGINT was taken: $(grep "signal 2" "$tmp/ignored.log")"
echo "signals: SIGINT inherited as ignored left train running; SIGTERM stopped it"

# generate, the same rule: SIGINT ends it the default way (exit 130), unless inherited as ignored.
# --ignore-eos: a model of a few steps samples EOS now and then, and a sample that ended there
# before the signal came made this test fail now and then ("kill: No such process").
generate_long() {  # generate_long <env args...>: a long sample of run-TERM into $tmp/gen.out, in the background
  spawn env "$@" "$rfa" --threads 1 generate "$tmp/run-TERM" -p "Line" -n 100000000 --ignore-eos >"$tmp/gen.out" 2>"$tmp/ignored.log"
  lives_until test -s "$tmp/gen.out"
}
larger_than() { [ "$(stat -c %s "$1")" -gt "$2" ]; }  # larger_than <file> <bytes>
generate_long --default-signal=INT
signal_and_reap INT 130
generate_long --ignore-signal=INT
kill -INT "$pid"
lives_until larger_than "$tmp/gen.out" "$(stat -c %s "$tmp/gen.out")"
signal_and_reap TERM 143
echo "signals: generate ends on SIGINT, and keeps an inherited ignore of it"

# A second signal while the first is being honoured quits at once (killed by
# the signal); the checkpoint of the first stop, or none, is never damaged.
# SIGINT then SIGTERM back to back: two different signals never merge, and a stop
# (the step's micro-batch, then a checkpoint) takes longer than the gap.
run=$tmp/run-twice
spawn env --default-signal=INT "$rfa" --threads 2 train --config "$tmp/c.yaml" --set train.run_dir="$run" 2>"$tmp/twice.log"
wait_for "$run/metrics.jsonl" '"type":"train"'
kill -INT "$pid"
kill -TERM "$pid" 2>/dev/null || true
reap
# 130/143: the second signal landed during the stop; 0: the stop had finished
# first: all are right, nothing else is.
case $rc in
  130 | 143) echo "signals: a second signal quit at once (exit $rc)" ;;
  0) expect_in "$tmp/twice.log" "received: stopped" ;;
  *) cat "$tmp/twice.log" >&2; fail "SIGINT + SIGTERM: exit code $rc" ;;
esac
if [ -f "$run/checkpoints/latest" ]; then
  "$rfa" eval perplexity "$run" --json >/dev/null 2>"$tmp/ppl.log" || { cat "$tmp/ppl.log" >&2; fail "eval after two signals"; }
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

# A step of 1000 micro-batches: SIGTERM early in step 2 stops at the next micro-batch,
# drops the step and saves step 1 (not written before: checkpoint.every is 0). The
# resume redoes step 2 and equals a straight run byte for byte.
config_write "$tmp/accum.yaml" rfa_gate "run_dir: $tmp/unused, batch_size: 4, grad_accum: 1000, steps: 100, log_every: 1, eval_every: 0, eval_batches: 2"
run=$tmp/run-accum
spawn "$rfa" --threads 2 train --config "$tmp/accum.yaml" --set train.run_dir="$run" 2>"$tmp/accum.log"
wait_for "$run/metrics.jsonl" '"step":1,'
stop_start=$(date +%s%N)
kill -TERM "$pid"
reap
stop_ms=$((($(date +%s%N) - stop_start) / 1000000))
[ "$rc" = 0 ] || { cat "$tmp/accum.log" >&2; fail "SIGTERM in a long step: exit code $rc, expected 0"; }
expect_in "$tmp/accum.log" "signal 15 received: stopped during step 2/100, which is dropped, with checkpoint $run/checkpoints/step-000001 of step 1"
[ "$(cat "$run/checkpoints/latest")" = step-000001 ] || fail "latest after a stop in step 2: $(cat "$run/checkpoints/latest")"
grep -q '"step":2,' "$run/metrics.jsonl" && fail "the dropped step 2 was logged"
"$rfa" --threads 2 train --resume "$run" --stop-after 2 2>"$tmp/accum-resume.log" ||
  { cat "$tmp/accum-resume.log" >&2; fail "resume after a stop in step 2"; }
"$rfa" --threads 2 train --config "$tmp/accum.yaml" --set train.run_dir="$tmp/accum-straight" --stop-after 2 \
  2>"$tmp/accum-straight.log" || { cat "$tmp/accum-straight.log" >&2; fail "straight run of 2 long steps"; }
for f in model.safetensors optimizer.safetensors; do
  cmp -s "$run/checkpoints/step-000002/$f" "$tmp/accum-straight/checkpoints/step-000002/$f" ||
    fail "step-000002/$f after a stop in step 2 + resume differs from a straight run"
done
diff <(grep '"type":"train"' "$run/metrics.jsonl" | untimed) \
  <(grep '"type":"train"' "$tmp/accum-straight/metrics.jsonl" | untimed) >"$tmp/diff.txt" ||
  { cat "$tmp/diff.txt" >&2; fail "losses after a stop in step 2 + resume differ"; }
echo "signals: SIGTERM in a step of 1000 micro-batches stopped in ${stop_ms} ms; resume equals a straight run"

# The reference model shape (L=4, C=128, T=64, B=12, default features) at --threads 1:
# most of a step is oneDNN JIT sgemm. SIGTERM at a random moment of the first steps, eight
# times (before the fix, 5 trials of 15 aborted with "corrupted size vs. prev_size").
config_write "$tmp/ref.yaml" rfa_gate "run_dir: $tmp/unused, batch_size: 12, steps: 1000, log_every: 1, eval_every: 0, eval_batches: 1"
sed -i -e 's/^model: .*/model: {n_layers: 4, d_model: 128, n_heads: 4, context_length: 64}/' \
  -e 's/^attention: .*/attention: {kind: rfa_gate}/' "$tmp/ref.yaml"
for trial in $(seq 1 8); do
  run=$tmp/run-ref-$trial
  spawn "$rfa" --threads 1 train --config "$tmp/ref.yaml" --set train.run_dir="$run" 2>"$tmp/ref.log"
  wait_for "$run/metrics.jsonl" '"type":"train"'
  sleep "0.$((RANDOM % 10))$((RANDOM % 10))"
  kill -TERM "$pid"
  reap
  [ "$rc" = 0 ] || { tail -3 "$tmp/ref.log" >&2; fail "SIGTERM on the reference shape, trial $trial: exit code $rc"; }
  expect_in "$tmp/ref.log" "received: stopped"
  "$rfa" --threads 1 eval perplexity "$run" --max-tokens 200 --json >/dev/null 2>"$tmp/ppl.log" ||
    { cat "$tmp/ppl.log" >&2; fail "eval after SIGTERM on the reference shape, trial $trial"; }
done
echo "signals: SIGTERM at 8 random moments on the reference shape: all stopped cleanly"

# SIGKILL while a checkpoint is written every step: whenever it lands, latest loads.
run=$tmp/run-KILL
spawn "$rfa" --threads 2 train --config "$tmp/c.yaml" --set train.run_dir="$run" --set checkpoint.every=1 \
  --set checkpoint.keep_last=2 2>"$tmp/kill.log"
wait_for "$run/metrics.jsonl" '"step":5,'
kill -9 "$pid"
reap
latest=$run/checkpoints/$(cat "$run/checkpoints/latest")
step=$(state_step "$latest")
"$rfa" eval perplexity "$run" --json >"$tmp/ppl.json" 2>"$tmp/ppl.log" || { cat "$tmp/ppl.log" >&2; fail "eval after SIGKILL"; }
"$rfa" --threads 2 train --resume "$run" --set train.steps=$((step + 1)) 2>"$tmp/resume-kill.log" ||
  { cat "$tmp/resume-kill.log" >&2; fail "resume after SIGKILL"; }
expect_in "$tmp/resume-kill.log" "resuming from $latest at step $step"
ls "$run/checkpoints" | grep -q '\.tmp-' && fail "a stale temp dir of the killed writer was not pruned"
echo "signals: SIGKILL at step >= $step left a loadable latest"
echo "signals: ok"
