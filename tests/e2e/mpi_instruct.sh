#!/usr/bin/env bash
# Instruction tuning is data parallel like any run (docs/fine-tuning.md): the step's loss is the
# mean over every target the step trains on, across ranks, so 2 ranks x batch B give the
# per-step losses, validation losses and weights of 1 rank x grad_accum 2 x B within 1e-6
# relative (as tests/e2e/mpi_equivalence.sh for text), on examples of different lengths, where
# a mean of each rank's own mean would weigh them otherwise.
# Usage: mpi_instruct.sh <path-to-rfa> <source-dir> <rfa_tensor_compare>
set -euo pipefail
source "$(dirname "$0")/lib/common.bash"
source "$(dirname "$0")/lib/mpi.bash"
compare=$3

corpus_write 400
for i in $(seq 1 160); do
  printf '{"instruction": "Repeat %d times.", "output": "%s"}\n' $((i % 7 + 1)) "$(printf 'fox %.0s' $(seq 1 $((i % 7 + 1))))"
done >"$tmp/sft.jsonl"
config_write "$tmp/c.yaml" rfa_gate "run_dir: $tmp/unused, batch_size: 3, steps: 8, log_every: 1, eval_every: 4, seed: 5"
sed -i "s#^data: .*#data: {corpus: $tmp/sft.jsonl, tokens: $tmp/data/sft.tokens, format: alpaca, template: alpaca_short, packing: pack, val_fraction: 0.1}#; s#context_length: 32#context_length: 96#" \
  "$tmp/c.yaml"
"$rfa" data prepare --config "$tmp/c.yaml" 2>"$tmp/prep.log" || { cat "$tmp/prep.log" >&2; fail "data prepare"; }
"$rfa" --threads 1 train --config "$tmp/c.yaml" --set train.run_dir="$tmp/one" --set train.grad_accum=2 \
  2>"$tmp/one.log" || { cat "$tmp/one.log" >&2; fail "1-rank run"; }
expect_in "$tmp/one.log" "instruction examples (alpaca): 144 for training"
mpi_run 2 --threads 1 train --config "$tmp/c.yaml" --set train.run_dir="$tmp/two" >"$tmp/two.out" 2>"$tmp/two.log" ||
  { cat "$tmp/two.out" "$tmp/two.log" >&2; fail "2-rank run"; }
ck=step-000008
"$compare" "$tmp/one/checkpoints/$ck/model.safetensors" "$tmp/two/checkpoints/$ck/model.safetensors" 1e-6 \
  >"$tmp/cmp.txt" || { cat "$tmp/cmp.txt" >&2; fail "the weights of 2 ranks x B differ from 1 rank x 2 x B"; }
losses() { sed -nE 's/.*"step":([0-9]+).*"(loss|val_loss)":([^,}]*).*/\1 \2 \3/p' "$1"; }
paste -d' ' <(losses "$tmp/one/metrics.jsonl") <(losses "$tmp/two/metrics.jsonl") >"$tmp/losses.txt"
[ "$(wc -l <"$tmp/losses.txt")" -ge 10 ] || { cat "$tmp/losses.txt" >&2; fail "expected 8 train and 2 eval losses"; }
awk '{ d = $3 - $6; if (d < 0) d = -d; if ($1 != $4 || $2 != $5 || d > 1e-6 * $3) { print "step " $1 " " $2 ": " $3 " vs " $6; bad = 1 } }
     END { exit bad }' "$tmp/losses.txt" || fail "losses of 2 ranks x B differ from 1 rank x 2 x B by more than 1e-6"
echo "mpi_instruct: 2 ranks x B == 1 rank x 2 x B on instruction examples: $(tail -n 1 "$tmp/cmp.txt")"
