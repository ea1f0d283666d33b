#!/usr/bin/env bash
# `rfa train` on a small generated corpus from a bare config: it creates the
# missing tokenizer and token file, trains a few steps with evaluation, writes
# the run directory (config.yaml, tokenizer.model, metrics.jsonl, train.log)
# and a final checkpoint; the loss goes down. Then `rfa bench train` runs.
# Usage: train_smoke.sh <path-to-rfa> <source-dir>
set -euo pipefail
source "$(dirname "$0")/lib/common.bash"

corpus_write 2000

for kind in rfa_gate softmax; do
  run="$tmp/run-$kind"
  config_write "$tmp/$kind.yaml" "$kind" \
    "run_dir: $run, batch_size: 4, steps: 40, log_every: 10, eval_every: 20, eval_batches: 2"
  "$rfa" --threads 2 train --config "$tmp/$kind.yaml" 2>"$tmp/$kind.log" || { cat "$tmp/$kind.log" >&2; fail "train $kind"; }
  expect_in "$tmp/$kind.log" "[train] step 40/40"
  expect_in "$tmp/$kind.log" "final val loss"
  for f in config.yaml tokenizer.model metrics.jsonl train.log checkpoints/latest \
           checkpoints/step-000040/model.safetensors checkpoints/step-000040/optimizer.safetensors \
           checkpoints/step-000040/state.json checkpoints/step-000040/config.yaml checkpoints/step-000040/tokenizer.model; do
    [ -s "$run/$f" ] || fail "$kind: $run/$f missing or empty"
  done
  expect_in "$run/config.yaml" "kind: $kind"
  expect_in "$run/train.log" "[train] step 40/40"
  [ "$(grep -c '"type":"eval"' "$run/metrics.jsonl")" = 2 ] || fail "$kind: expected 2 eval lines in metrics.jsonl"
  [ "$(grep -c '"type":"train"' "$run/metrics.jsonl")" -ge 5 ] || fail "$kind: expected >= 5 train lines"
  # Loss goes down: the last logged train loss is below the first.
  first=$(grep '"type":"train"' "$run/metrics.jsonl" | head -1 | sed 's/.*"loss":\([0-9.e+-]*\).*/\1/')
  last=$(grep '"type":"train"' "$run/metrics.jsonl" | tail -1 | sed 's/.*"loss":\([0-9.e+-]*\).*/\1/')
  awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a - 0.5) }' || fail "$kind: loss $first -> $last did not drop"
done

# The bench command runs the same step and reports its numbers.
"$rfa" --threads 2 bench train --config "$tmp/rfa_gate.yaml" --set model.vocab_size=50 --steps 3 --warmup 1 \
  2>"$tmp/bench.log" || { cat "$tmp/bench.log" >&2; fail "bench"; }
expect_in "$tmp/bench.log" "ms/step"
expect_in "$tmp/bench.log" "of the measured sgemm peak"
expect_in "$tmp/bench.log" "kernels: "
# --profile: where the step's time goes, one row per kernel that ran, each with its share.
"$rfa" --threads 2 bench train --config "$tmp/rfa_gate.yaml" --set model.vocab_size=50 --steps 2 --warmup 1 --profile \
  2>"$tmp/bench_p.log" || { cat "$tmp/bench_p.log" >&2; fail "bench --profile"; }
for row in "gemm " "attention forward" "attention backward" "rmsnorm" "swiglu" "cross-entropy" "embedding" "adamw" \
           "grad norm/clip" "random features" "other" "FMA of this build's" "products by shape" "A·Bᵀ"; do
  expect_in "$tmp/bench_p.log" "$row"
done
# Any vocabulary a run may have (token ids past 16 bits), and stateful streams past the 64 windows
# the bench draws by default (ranks x grad_accum x B streams): both once failed inside the bench.
"$rfa" --threads 1 bench train --config "$tmp/rfa_gate.yaml" --set model.vocab_size=70000 --steps 1 --warmup 0 \
  2>"$tmp/bench_v.log" || { cat "$tmp/bench_v.log" >&2; fail "bench with V 70000"; }
expect_in "$tmp/bench_v.log" "V=70000"
"$rfa" --threads 1 bench train --config "$tmp/rfa_gate.yaml" --set model.vocab_size=50 --set train.stateful=true \
  --set train.batch_size=2 --set train.grad_accum=65 --steps 1 --warmup 0 2>"$tmp/bench_s.log" ||
  { cat "$tmp/bench_s.log" >&2; fail "bench stateful with 130 streams"; }
expect_in "$tmp/bench_s.log" "ms/step"

# A config naming a missing corpus fails with its path.
sed "s#$tmp/corpus.txt#$tmp/nope.txt#; s#$tmp/data/#$tmp/data2/#g; s#run-softmax#run-missing#" "$tmp/softmax.yaml" \
  >"$tmp/missing.yaml"
if "$rfa" train --config "$tmp/missing.yaml" 2>"$tmp/missing.log"; then fail "missing corpus accepted"; fi
expect_in "$tmp/missing.log" "$tmp/nope.txt"

# A new run into a directory that holds one is refused (nothing lost); --overwrite starts afresh.
if "$rfa" train --config "$tmp/softmax.yaml" 2>"$tmp/again.log"; then fail "existing run overwritten silently"; fi
expect_in "$tmp/again.log" "already holds a run"
expect_in "$tmp/again.log" "--resume"
[ -f "$tmp/run-softmax/checkpoints/step-000040/model.safetensors" ] || fail "refused run touched the old checkpoint"
"$rfa" --threads 2 train --config "$tmp/softmax.yaml" --set train.steps=20 --overwrite 2>"$tmp/over.log" ||
  { cat "$tmp/over.log" >&2; fail "--overwrite"; }
[ ! -e "$tmp/run-softmax/checkpoints/step-000040" ] || fail "--overwrite kept the old run's checkpoint"
[ -f "$tmp/run-softmax/checkpoints/step-000020/model.safetensors" ] || fail "--overwrite run saved no checkpoint"
echo "train_smoke: ok"
