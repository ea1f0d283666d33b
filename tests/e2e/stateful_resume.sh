#!/usr/bin/env bash
# Stateful training (train.stateful) across processes, on a tiny corpus written here:
#   A: 12 steps straight (grad_accum 2: two micro-batches of 4 streams each);
#   B: the same stopped after step 7 (--stop-after), then `rfa train --resume` to step 12;
#   T: a run of unbounded length stopped by SIGTERM at whatever moment it arrives (a step in
#      flight is dropped), resumed to 3 steps later, against a straight run to that step.
# The weights, AdamW moments, stream offsets and carried states (stream.safetensors) and the
# train and eval lines must be identical. Then: the checkpoint evaluates with `rfa eval
# perplexity` in one pass, softmax refuses the option, a resume cannot switch it off nor change
# ranks x grad_accum.
# Usage: stateful_resume.sh <path-to-rfa> <source-dir>
set -euo pipefail
source "$(dirname "$0")/lib/common.bash"


corpus_write 1500
config_write "$tmp/c.yaml" rfa_gate \
  "run_dir: $tmp/unused, batch_size: 4, grad_accum: 2, steps: 12, log_every: 1, eval_every: 4, eval_batches: 2, stateful: true" \
  "lr: 3.0e-3, warmup_steps: 3" "every: 3, keep_last: 10"
A=$tmp/A B=$tmp/B
train_ok "$tmp/A.log" --config "$tmp/c.yaml" --set train.run_dir="$A"
expect_in "$tmp/A.log" "stateful: 8 streams of"
[ -f "$A/checkpoints/step-000012/stream.safetensors" ] || fail "no stream.safetensors in A's checkpoint"
train_ok "$tmp/B1.log" --config "$tmp/c.yaml" --set train.run_dir="$B" --stop-after 7
train_ok "$tmp/B2.log" --resume "$B"
expect_in "$tmp/B2.log" "resuming from $B/checkpoints/step-000007 at step 7/12"
untimed <"$A/metrics.jsonl" | grep -v '"step":7,' >"$tmp/a.jsonl"
untimed <"$B/metrics.jsonl" | sed 's/\("step":7,.*\),"val_loss":[^,}]*/\1/' | grep -v '"step":7,' >"$tmp/b.jsonl"
diff "$tmp/a.jsonl" "$tmp/b.jsonl" >"$tmp/diff.txt" || { cat "$tmp/diff.txt" >&2; fail "resumed metrics differ"; }
checkpoint_files_same "$A" "$B" step-000012 model.safetensors optimizer.safetensors stream.safetensors
echo "stateful_resume: --stop-after 7 + resume equals 12 steps straight"

# SIGTERM at an arbitrary moment of a long run, then resume.
config_write "$tmp/long.yaml" rfa_gate \
  "run_dir: $tmp/unused, batch_size: 4, grad_accum: 2, steps: 1000000, log_every: 1, eval_every: 0, eval_batches: 2, stateful: true"
T=$tmp/T
"$rfa" --threads 2 train --config "$tmp/long.yaml" --set train.run_dir="$T" 2>"$tmp/T1.log" &
pid=$!
wait_for "$T/metrics.jsonl" '"step":3,'
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
pid=
[ "$rc" = 0 ] || { cat "$tmp/T1.log" >&2; fail "SIGTERM: exit code $rc, expected 0"; }
expect_in "$tmp/T1.log" "signal 15 received: stopped"
step=$(state_step "$T/checkpoints/$(cat "$T/checkpoints/latest")")
to=$((step + 3))
train_ok "$tmp/T2.log" --resume "$T" --stop-after "$to"
S=$tmp/S
train_ok "$tmp/S.log" --config "$tmp/long.yaml" --set train.run_dir="$S" --stop-after "$to"
checkpoint_files_same "$S" "$T" "$(printf 'step-%06d' "$to")" model.safetensors optimizer.safetensors stream.safetensors
diff <(grep '"type":"train"' "$T/metrics.jsonl" | untimed | from_step $((step + 1))) \
  <(grep '"type":"train"' "$S/metrics.jsonl" | untimed | from_step $((step + 1))) >"$tmp/diff.txt" ||
  { cat "$tmp/diff.txt" >&2; fail "losses after SIGTERM + resume differ"; }
echo "stateful_resume: SIGTERM at step $step + resume to $to equals a straight run"

# Evaluation of the stateful checkpoint: one pass carrying the state, as the trainer's val loss.
"$rfa" eval perplexity "$A" --json >"$tmp/ppl.json" 2>"$tmp/ppl.log" || { cat "$tmp/ppl.log" >&2; fail "eval"; }
expect_in "$tmp/ppl.json" '"perplexity":'
expect_in "$tmp/ppl.json" 'one pass'

# Softmax has no fixed-size state: refused before anything is written.
config_write "$tmp/soft.yaml" softmax "run_dir: $tmp/soft, batch_size: 4, steps: 2, stateful: true"
if "$rfa" train --config "$tmp/soft.yaml" 2>"$tmp/soft.log"; then fail "softmax accepted train.stateful"; fi
expect_in "$tmp/soft.log" "'train.stateful' is true but 'attention.kind' is softmax"
[ ! -e "$tmp/soft/checkpoints" ] || fail "the refused run wrote checkpoints"
# A resume keeps the saved config: train.stateful cannot be switched off.
if "$rfa" train --resume "$A" --set train.stateful=false --set train.steps=20 2>"$tmp/off.log"; then
  fail "a resume switched train.stateful off"
fi
expect_in "$tmp/off.log" "--resume: train.stateful is 'true' in checkpoint"
# Another ranks x grad_accum cuts the split into other streams: refused naming the global batch and
# the fix, before the stream tensors' shapes (which differ too) are compared.
if "$rfa" train --resume "$A" --set train.grad_accum=1 --set train.steps=20 2>"$tmp/accum.log"; then
  fail "a resume changed ranks x grad_accum of a stateful run"
fi
expect_in "$tmp/accum.log" "was trained on 1 rank(s) x train.grad_accum 2 = 2 micro-batches per step"
expect_in "$tmp/accum.log" "Pass --set train.grad_accum=2"
echo "stateful_resume: ok"
