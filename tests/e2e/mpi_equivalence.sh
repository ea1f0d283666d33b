#!/usr/bin/env bash
# Data parallelism computes what one process computes (docs/distributed.md, "Correctness"):
#   2 ranks x batch B give, after 10 steps, the weights and per-step losses of 1 rank x
#   grad_accum 2 of B within 1e-6 relative. Both draw the same global micro-batches; not bit
#   for bit because one rank accumulates its second micro-batch into the first one's
#   gradients inside the gemms (beta = 1, partial sums added to the first gradient in
#   blocks), while 2 ranks add two complete gradients: the same sum in another order.
#   The 2-rank checkpoint resumes on 1 rank only with the same global batch.
# Usage: mpi_equivalence.sh <path-to-rfa> <source-dir>
set -euo pipefail
source "$(dirname "$0")/lib/common.bash"
source "$(dirname "$0")/lib/mpi.bash"
compare=$3  # rfa_tensor_compare

corpus_write 1500
config_write "$tmp/c.yaml" rfa_gate "run_dir: $tmp/unused, batch_size: 4, steps: 10, log_every: 1, eval_every: 5, eval_batches: 2" \
  "lr: 1.0e-3, warmup_steps: 5"
"$rfa" data prepare --config "$tmp/c.yaml" 2>"$tmp/prep.log" || { cat "$tmp/prep.log" >&2; fail "data prepare"; }

one=$tmp/one
"$rfa" --threads 1 train --config "$tmp/c.yaml" --set train.run_dir="$one" --set train.grad_accum=2 \
  2>"$tmp/one.log" || { cat "$tmp/one.log" >&2; fail "1-rank run"; }
two=$tmp/two
mpi_run 2 --threads 1 train --config "$tmp/c.yaml" --set train.run_dir="$two" >"$tmp/two.out" 2>"$tmp/two.log" ||
  { cat "$tmp/two.out" "$tmp/two.log" >&2; fail "2-rank run"; }
expect_in "$tmp/two.log" "data parallel: 2 ranks x batch 4x1x32 = 256 tokens/step"
ck=$(printf 'step-%06d' 10)
"$compare" "$one/checkpoints/$ck/model.safetensors" "$two/checkpoints/$ck/model.safetensors" 1e-6 >"$tmp/cmp.txt" ||
  { cat "$tmp/cmp.txt" >&2; fail "the weights of 2 ranks x B differ from 1 rank x 2 x B by more than 1e-6 relative"; }
# Losses (train and validation) step by step, within 1e-6 relative.
losses() { sed -nE 's/.*"step":([0-9]+).*"(loss|val_loss)":([^,}]*).*/\1 \2 \3/p' "$1"; }
paste -d' ' <(losses "$one/metrics.jsonl") <(losses "$two/metrics.jsonl") >"$tmp/losses.txt"
[ "$(wc -l <"$tmp/losses.txt")" -ge 12 ] || { cat "$tmp/losses.txt" >&2; fail "expected 10 train and 2 eval losses"; }
awk '{ d = $3 - $6; if (d < 0) d = -d; if ($1 != $4 || $2 != $5 || d > 1e-6 * $3) { print "step " $1 " " $2 ": " $3 " vs " $6; bad = 1 } }
     END { exit bad }' "$tmp/losses.txt" || fail "losses of 2 ranks x B differ from 1 rank x 2 x B by more than 1e-6 relative"
# Rank 0 alone writes the run directory: one log line per step, not one per rank.
[ "$(grep -c '\[train\] step 10/10' "$tmp/two.log")" = 1 ] || fail "expected one log line per step"
grep -q '"ranks": 2' "$two/checkpoints/$ck/state.json" || fail "state.json does not record the ranks"
echo "mpi_equivalence: 2 ranks x B == 1 rank x 2 x B after 10 steps: $(tail -n 1 "$tmp/cmp.txt")"

# Resuming the 2-rank run on 1 rank keeps the global batch or refuses.
rc=0
"$rfa" --threads 1 train --resume "$two" --set train.steps=12 2>"$tmp/refuse.log" || rc=$?
[ "$rc" = 1 ] || { cat "$tmp/refuse.log" >&2; fail "1-rank resume of a 2-rank run: exit $rc, expected 1"; }
expect_in "$tmp/refuse.log" "was trained on 2 rank(s) x train.grad_accum 1 = 2 micro-batches per step, and this run has 1 rank(s) x 1 = 1"
expect_in "$tmp/refuse.log" "Pass --set train.grad_accum=2"
"$rfa" --threads 1 train --resume "$two" --set train.steps=12 --set train.grad_accum=2 2>"$tmp/resume1.log" ||
  { cat "$tmp/resume1.log" >&2; fail "1-rank resume with grad_accum 2"; }
expect_in "$tmp/resume1.log" "continues on 1 x 2"
# ... and continues as the 1-rank run does (within the float noise it started with).
"$rfa" --threads 1 train --resume "$one" --set train.steps=12 2>"$tmp/one12.log" ||
  { cat "$tmp/one12.log" >&2; fail "1-rank resume of the 1-rank run"; }
ck=$(printf 'step-%06d' 12)
"$compare" "$one/checkpoints/$ck/model.safetensors" "$two/checkpoints/$ck/model.safetensors" 1e-5 >"$tmp/cmp12.txt" ||
  { cat "$tmp/cmp12.txt" >&2; fail "the 2-rank run resumed on 1 rank differs from the 1-rank run"; }
echo "mpi_equivalence: ok"
