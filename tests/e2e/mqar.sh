#!/usr/bin/env bash
# The MQAR recall benchmark through the binary (docs/recall.md):
#   - `rfa data mqar` writes the same files for the same seed, other tokens for another;
#   - `rfa train --config DIR/mqar.yaml` trains on it (loss on the answers only: the log counts
#     4 supervised targets per example), and its validation loss is the answers' mean NLL that
#     `rfa eval accuracy` prints beside the accuracy, over every validation example;
#   - `rfa data prepare` of an mqar config is refused, naming `rfa data mqar`.
# Usage: mqar.sh <path-to-rfa> <source-dir>
set -euo pipefail
source "$(dirname "$0")/lib/common.bash"

field() { sed -n "s/.*\"$1\": *\([0-9.e+-]*\).*/\1/p"; }  # field <name> (stdin: one JSON line)

gen() {  # gen <dir> <seed>
  "$rfa" data mqar --out "$1" --seq-len 32 --pairs 4 --vocab 64 --train 300 --val 24 --seed "$2" 2>"$1.log" ||
    { cat "$1.log" >&2; fail "rfa data mqar --out $1"; }
}
gen "$tmp/a" 1
gen "$tmp/b" 1
gen "$tmp/c" 2
cmp -s "$tmp/a/mqar.tokens" "$tmp/b/mqar.tokens" || fail "the same seed wrote different token files"
cmp -s "$tmp/a/mqar.model" "$tmp/b/mqar.model" || fail "the same options wrote different tokenizers"
cmp -s "$tmp/a/mqar.tokens" "$tmp/c/mqar.tokens" && fail "another seed wrote the same token file"
expect_in "$tmp/a.log" "300 train + 24 validation examples of 33 tokens (4 pairs, 4 queries, vocab 64 + blank"
expect_in "$tmp/a/mqar.yaml" "format: mqar"

for kind in rfa_gate softmax; do
  train_ok "$tmp/$kind.log" --config "$tmp/a/mqar.yaml" --set attention.kind=$kind --set model.n_layers=2 \
    --set model.d_model=32 --set model.n_heads=2 --set attention.num_features=8 --set attention.chunk_size=16 \
    --set train.run_dir="$tmp/run-$kind" --set train.batch_size=8 --set train.steps=6 --set train.log_every=3 \
    --set train.eval_every=0 --set checkpoint.every=0
  expect_in "$tmp/$kind.log" "instruction examples (mqar): 300 for training"
  expect_in "$tmp/$kind.log" "answers only"
  "$rfa" --threads 2 eval accuracy "$tmp/run-$kind" --json >"$tmp/acc.json" 2>"$tmp/acc.log" ||
    { cat "$tmp/acc.log" >&2; fail "rfa eval accuracy of the $kind run"; }
  [ "$(field examples <"$tmp/acc.json")" = 24 ] || fail "$kind: not every validation example was scored"
  [ "$(field scored <"$tmp/acc.json")" = 96 ] || fail "$kind: scored answers are not 24 x 4: $(cat "$tmp/acc.json")"
  acc=$(field accuracy <"$tmp/acc.json")
  awk -v a="$acc" 'BEGIN { exit !(a >= 0 && a <= 1) }' || fail "$kind: accuracy $acc outside [0, 1]"
  val=$(grep '"type":"eval"' "$tmp/run-$kind/metrics.jsonl" | tail -1 | field val_loss)
  [ "$val" = "$(field mean_nll <"$tmp/acc.json")" ] ||
    fail "$kind: the trainer's val loss $val is not the answers' NLL eval accuracy prints: $(cat "$tmp/acc.json")"
  "$rfa" eval accuracy "$tmp/run-$kind" >"$tmp/acc.txt" 2>"$tmp/acc.log" || { cat "$tmp/acc.log" >&2; fail "table"; }
  expect_in "$tmp/acc.txt" "of 96 answers"
done

if "$rfa" data prepare --config "$tmp/a/mqar.yaml" 2>"$tmp/prepare.log"; then fail "data prepare of mqar ran"; fi
expect_in "$tmp/prepare.log" "rfa data mqar"
echo "mqar: OK"
