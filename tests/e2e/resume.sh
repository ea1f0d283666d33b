#!/usr/bin/env bash
# Exact resume across processes. On a tiny corpus written here, for rfa_gate
# and softmax:
#   A: 12 steps straight;
#   B: the same config stopped after step 7 (--stop-after, the SIGTERM path),
#      then `rfa train --resume B` in a fresh process to step 12;
#   C: a fork resumed from B's older checkpoint step-000006 into another run dir.
# Every train and eval line of metrics.jsonl (timing fields removed) and the
# final model.safetensors / optimizer.safetensors must be identical to A's.
# Then: extending a run with --set train.steps, refusing shape changes and
# --config, and refusing a corrupted or truncated checkpoint with a clear message.
# Usage: resume.sh <path-to-rfa> <source-dir>
set -euo pipefail
source "$(dirname "$0")/lib/common.bash"

same() {  # what file-a file-b
  diff "$2" "$3" >"$tmp/diff.txt" || { cat "$tmp/diff.txt" >&2; fail "$1"; }
}

corpus_write 1500

for kind in rfa_gate softmax; do
  config_write "$tmp/$kind.yaml" "$kind" \
    "run_dir: $tmp/unused, batch_size: 4, grad_accum: 2, steps: 12, log_every: 1, eval_every: 4, eval_batches: 2" \
    "lr: 3.0e-3, warmup_steps: 3" "every: 3, keep_last: 10"
  A=$tmp/$kind-A B=$tmp/$kind-B C=$tmp/$kind-C
  train_ok "$tmp/A.log" --config "$tmp/$kind.yaml" --set train.run_dir="$A"
  [ "$(grep -c '"type":"train"' "$A/metrics.jsonl")" = 12 ] || fail "$kind: A should log 12 train lines"

  train_ok "$tmp/B1.log" --config "$tmp/$kind.yaml" --set train.run_dir="$B" --stop-after 7
  expect_in "$tmp/B1.log" "--stop-after 7: stopped after step 7/12 with checkpoint"
  expect_in "$tmp/B1.log" "continue with: rfa train --resume $B"
  [ "$(cat "$B/checkpoints/latest")" = step-000007 ] || fail "$kind: latest is not step-000007"
  train_ok "$tmp/B2.log" --resume "$B"
  expect_in "$tmp/B2.log" "resuming from $B/checkpoints/step-000007 at step 7/12"
  expect_in "$tmp/B2.log" "[train] step 12/12"
  # B's metrics: steps 1-7 from the first process, 8-12 from the second, plus
  # the evaluation a stop makes (step 7, also shown as val_loss on its train line).
  untimed <"$A/metrics.jsonl" >"$tmp/a.jsonl"
  untimed <"$B/metrics.jsonl" >"$tmp/b.jsonl"
  grep '"type":"train"' "$tmp/a.jsonl" >"$tmp/a-train.jsonl"
  grep '"type":"train"' "$tmp/b.jsonl" | sed 's/\("step":7,.*\),"val_loss":[^,}]*/\1/' >"$tmp/b-train.jsonl"
  same "$kind: resumed train lines differ from the straight run" "$tmp/a-train.jsonl" "$tmp/b-train.jsonl"
  grep '"type":"eval"' "$tmp/a.jsonl" >"$tmp/a-eval.jsonl"
  grep '"type":"eval"' "$tmp/b.jsonl" | grep -v '"step":7,' >"$tmp/b-eval.jsonl"
  same "$kind: resumed eval lines differ from the straight run" "$tmp/a-eval.jsonl" "$tmp/b-eval.jsonl"
  [ "$(wc -l <"$tmp/a-eval.jsonl")" = 3 ] || fail "$kind: expected evals at steps 4, 8, 12"
  checkpoint_files_same "$A" "$B" step-000012 model.safetensors optimizer.safetensors

  # From an explicit older checkpoint, forked into a new run directory.
  train_ok "$tmp/C.log" --resume "$B/checkpoints/step-000006" --set train.run_dir="$C"
  expect_in "$tmp/C.log" "at step 6/12"
  from_step 7 <"$tmp/a.jsonl" >"$tmp/a-7.jsonl"
  untimed <"$C/metrics.jsonl" >"$tmp/c.jsonl"
  same "$kind: the fork from step 6 differs from the straight run" "$tmp/a-7.jsonl" "$tmp/c.jsonl"
  checkpoint_files_same "$A" "$C" step-000012 model.safetensors optimizer.safetensors
  echo "resume: $kind exact"
done

A=$tmp/rfa_gate-A
# The README's numpy snippet reads the weights (where some python3 has numpy).
py=
for p in python3 /usr/bin/python3; do
  if command -v "$p" >/dev/null && "$p" -c 'import numpy' 2>/dev/null; then py=$p; break; fi
done
if [ -n "$py" ]; then
  sed -n '/^```python$/,/^```$/p' "$src/README.md" | sed '1d;$d' |
    sed "s#runs/x/checkpoints/step-000500#$A/checkpoints/step-000012#" >"$tmp/snippet.py"
  grep -q 'np.frombuffer' "$tmp/snippet.py" || fail "README numpy snippet not found"
  printf 'assert len(t) == 26 and t["layers.1.attn.random"].shape == (2, 8, 16), sorted(t)\n' >>"$tmp/snippet.py"
  "$py" "$tmp/snippet.py" >"$tmp/snippet.out" 2>&1 || { cat "$tmp/snippet.out" >&2; fail "README numpy snippet"; }
  expect_in "$tmp/snippet.out" ", 32) [["
  echo "resume: README numpy snippet ok ($py)"
else
  echo "resume: no python3 with numpy here; README snippet not run"
fi
# Nothing left to train: a clear message.
if "$rfa" train --resume "$A" 2>"$tmp/done.log"; then fail "resume of a finished run trained"; fi
expect_in "$tmp/done.log" "is at step 12 and train.steps is 12: nothing to train"
# Extending the run.
train_ok "$tmp/ext.log" --resume "$A" --set train.steps=14
expect_in "$tmp/ext.log" "[train] step 14/14"
[ "$(cat "$A/checkpoints/latest")" = step-000014 ] || fail "extension did not checkpoint step 14"
expect_in "$A/config.yaml" "steps: 14"
# Another thread count continues, with a warning that it is not bit-identical.
"$rfa" --threads 1 train --resume "$A" --set train.steps=15 2>"$tmp/threads.log" || { cat "$tmp/threads.log" >&2; fail "resume with 1 thread"; }
expect_in "$tmp/threads.log" "was trained with 2 threads and this run has 1"
# Shape changes and --config are refused.
if "$rfa" train --resume "$A" --set model.d_model=64 --set train.steps=20 2>"$tmp/shape.log"; then
  fail "shape change accepted"
fi
expect_in "$tmp/shape.log" "model.d_model is '32' in checkpoint"
expect_in "$tmp/shape.log" "makes it '64'"
if "$rfa" train --resume "$A" --config "$tmp/rfa_gate.yaml" 2>"$tmp/cfg.log"; then fail "--config accepted"; fi
expect_in "$tmp/cfg.log" "drop --config"

# A checkpoint write that fails (a 16 KiB file size limit stands in for a full
# disk) stops the run with the path and the reason, and latest stays the previous one.
if (trap '' XFSZ; ulimit -f 16; exec "$rfa" train --resume "$A" --set train.steps=16) 2>"$tmp/full.log"; then
  fail "a failed checkpoint write went unnoticed"
fi
expect_in "$tmp/full.log" "$A/checkpoints/step-000016.tmp-"
expect_in "$tmp/full.log" "File too large"
[ "$(cat "$A/checkpoints/latest")" = step-000015 ] || fail "latest moved after a failed write"
ls "$A/checkpoints" | grep -q 'tmp' && fail "a failed write left its temp dir"
"$rfa" eval perplexity "$A" --json >/dev/null 2>"$tmp/full-eval.log" || { cat "$tmp/full-eval.log" >&2; fail "eval after a failed write"; }

# Token data encoded by another tokenizer is refused (the checkpoint's tokenizer decides).
for i in $(seq 1 300); do echo "Zebra $i yodels: QUIXOTIC jumbled vexing words!"; done >"$tmp/other.txt"
"$rfa" data prepare --config "$tmp/rfa_gate.yaml" --set tokenizer.path="$tmp/data/other.model" \
  --set data.corpus="$tmp/other.txt" --set data.tokens="$tmp/data/other.tokens" 2>"$tmp/other.log" ||
  { cat "$tmp/other.log" >&2; fail "data prepare (other)"; }
if "$rfa" train --resume "$A" --set train.steps=16 --set data.tokens="$tmp/data/other.tokens" 2>"$tmp/tok.log"; then
  fail "token data of another tokenizer accepted"
fi
expect_in "$tmp/tok.log" "token file $tmp/data/other.tokens was made with a tokenizer"

# A flipped byte or a truncation in the weights is refused, naming the file;
# the previous checkpoint still loads.
D=$tmp/damaged
cp -r "$A" "$D"
ck=$D/checkpoints/step-000015
size=$(stat -c %s "$ck/model.safetensors")
printf '\xff' | dd of="$ck/model.safetensors" bs=1 seek=$((size - 100)) conv=notrunc status=none
if "$rfa" train --resume "$D" --set train.steps=16 2>"$tmp/flip.log"; then fail "flipped byte accepted"; fi
expect_in "$tmp/flip.log" "$ck/model.safetensors"
expect_in "$tmp/flip.log" "checksum"
if "$rfa" eval perplexity "$D" 2>"$tmp/flip-eval.log" >/dev/null; then fail "eval read a flipped byte"; fi
expect_in "$tmp/flip-eval.log" "$ck/model.safetensors"
truncate -s $((size / 2)) "$ck/model.safetensors"
if "$rfa" train --resume "$D" --set train.steps=16 2>"$tmp/trunc.log"; then fail "truncated file accepted"; fi
expect_in "$tmp/trunc.log" "$ck/model.safetensors"
grep -q "Segmentation\|Aborted\|unexpected failure" "$tmp/trunc.log" "$tmp/flip.log" && fail "crash on a damaged file"
"$rfa" eval perplexity "$D/checkpoints/step-000012" --json >/dev/null 2>"$tmp/ok.log" || { cat "$tmp/ok.log" >&2; fail "previous checkpoint no longer loads"; }
echo "resume: ok"
