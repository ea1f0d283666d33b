#!/usr/bin/env bash
# Instruction tuning and DPO are data parallel like any run (docs/fine-tuning.md): the step's loss
# is the mean over every target (DPO: every pair) the step trains on, across ranks, so 2 ranks x
# batch B give the per-step losses, validation losses and weights of 1 rank x grad_accum 2 x B
# within 1e-6 relative (as tests/e2e/mpi_equivalence.sh for text), on examples of different
# lengths, where a mean of each rank's own mean would weigh them otherwise.
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
same_losses() {  # same_losses <run a> <run b> <lines at least> <relative tolerance>
  paste -d' ' <(losses "$1/metrics.jsonl") <(losses "$2/metrics.jsonl") >"$tmp/losses.txt"
  [ "$(wc -l <"$tmp/losses.txt")" -ge "$3" ] || { cat "$tmp/losses.txt" >&2; fail "expected $3 losses"; }
  awk -v tol="$4" '{ d = $3 - $6; if (d < 0) d = -d; if ($1 != $4 || $2 != $5 || d > tol * $3) { print "step " $1 " " $2 ": " $3 " vs " $6; bad = 1 } }
       END { exit bad }' "$tmp/losses.txt" || fail "losses of 2 ranks x B differ from 1 rank x 2 x B by more than $4"
}
same_losses "$tmp/one" "$tmp/two" 10 1e-6
echo "mpi_instruct: 2 ranks x B == 1 rank x 2 x B on instruction examples: $(tail -n 1 "$tmp/cmp.txt")"

# DPO from the first run, on pairs whose answers differ in length. Within 2e-5: a pair's weight
# depends on the step's own log-probabilities, which carry the two summation orders' noise
# (measured: 7.2e-6 worst, layers.0.attn.wo, with the kernels of 2026-12-01; the mistake this
# guards against, a per-rank normaliser, is 3.6% off).
for i in $(seq 1 60); do
  printf '{"prompt": "Repeat %d times.", "chosen": "%s", "rejected": "fox"}\n' $((i % 5 + 1)) \
    "$(printf 'fox %.0s' $(seq 1 $((i % 5 + 1))))"
done >"$tmp/pairs.jsonl"
sed -i "s#^data: .*#data: {corpus: $tmp/pairs.jsonl, tokens: $tmp/data/pairs.tokens, format: preference, val_fraction: 0.1}#" \
  "$tmp/c.yaml"
"$rfa" --threads 1 train --config "$tmp/c.yaml" --init-from "$tmp/one" --set train.run_dir="$tmp/dpo1" \
  --set train.grad_accum=2 --set train.batch_size=4 2>"$tmp/dpo1.log" || { cat "$tmp/dpo1.log" >&2; fail "1-rank DPO"; }
mpi_run 2 --threads 1 train --config "$tmp/c.yaml" --init-from "$tmp/one" --set train.run_dir="$tmp/dpo2" \
  --set train.batch_size=4 >"$tmp/dpo2.out" 2>"$tmp/dpo2.log" || { cat "$tmp/dpo2.out" "$tmp/dpo2.log" >&2; fail "2-rank DPO"; }
"$compare" "$tmp/dpo1/checkpoints/$ck/model.safetensors" "$tmp/dpo2/checkpoints/$ck/model.safetensors" 2e-5 \
  >"$tmp/cmp.txt" || { cat "$tmp/cmp.txt" >&2; fail "DPO: the weights of 2 ranks x B differ from 1 rank x 2 x B"; }
same_losses "$tmp/dpo1" "$tmp/dpo2" 11 2e-5
echo "mpi_instruct: 2 ranks x B == 1 rank x 2 x B in DPO: $(tail -n 1 "$tmp/cmp.txt")"
