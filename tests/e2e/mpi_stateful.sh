#!/usr/bin/env bash
# Stateful training on 2 ranks (train.stateful, docs/long-context.md):
#   Each rank owns its micro-batches' streams and states; a checkpoint (written by rank 0)
#   gathers them in global micro-batch order. After one step every state depends only on
#   the initial weights, so 2 ranks x grad_accum 2 and 1 rank x grad_accum 4 must write the
#   same stream.safetensors bit for bit (same streams, same order: global micro-batch
#   m x ranks + r is rank r's local micro-batch m).
#   SIGTERM to one rank, resumed on 2 ranks: bit-identical to a straight 2-rank run.
#   The 2-rank checkpoint resumed on 1 rank x grad_accum 4 continues the same streams:
#   within 1e-5 of the straight 1-rank run (sums in another order, mpi_equivalence.sh).
# Usage: mpi_stateful.sh <path-to-rfa> <source-dir> <rfa_tensor_compare>
set -euo pipefail
source "$(dirname "$0")/lib/common.bash"
source "$(dirname "$0")/lib/mpi.bash"
compare=$3


corpus_write 1500
config_write "$tmp/c.yaml" rfa_gate \
  "run_dir: $tmp/unused, batch_size: 4, grad_accum: 2, steps: 1000000, log_every: 1, eval_every: 0, eval_batches: 2, stateful: true" \
  "lr: 1.0e-3, warmup_steps: 5"
"$rfa" data prepare --config "$tmp/c.yaml" 2>"$tmp/prep.log" || { cat "$tmp/prep.log" >&2; fail "data prepare"; }

one=$tmp/one
"$rfa" --threads 1 train --config "$tmp/c.yaml" --set train.run_dir="$one" --set train.grad_accum=4 \
  --set checkpoint.every=1 --set checkpoint.keep_last=10 --stop-after 6 2>"$tmp/one.log" || { cat "$tmp/one.log" >&2; fail "1-rank run"; }
two=$tmp/two
mpi_run 2 --threads 1 train --config "$tmp/c.yaml" --set train.run_dir="$two" --stop-after 1 \
  >"$tmp/two.out" 2>"$tmp/two.log" || { cat "$tmp/two.out" "$tmp/two.log" >&2; fail "2-rank run"; }
expect_in "$tmp/two.log" "stateful: 16 streams of"
cmp "$one/checkpoints/step-000001/stream.safetensors" "$two/checkpoints/step-000001/stream.safetensors" ||
  fail "2 ranks x 2 and 1 rank x 4 micro-batches saved different streams or states after step 1"
echo "mpi_stateful: the gathered states of 2 ranks x 2 equal 1 rank's 4 micro-batches"

"$rfa" --threads 1 train --resume "$two" --set train.grad_accum=4 --stop-after 6 2>"$tmp/cross.log" ||
  { cat "$tmp/cross.log" >&2; fail "1-rank resume of the 2-rank checkpoint"; }
"$compare" "$one/checkpoints/step-000006/model.safetensors" "$two/checkpoints/step-000006/model.safetensors" 1e-5 \
  >"$tmp/cmp.txt" || { cat "$tmp/cmp.txt" >&2; fail "2-rank checkpoint resumed on 1 rank left the 1-rank run"; }
echo "mpi_stateful: the 2-rank checkpoint continues on 1 rank x grad_accum 4"

run=$tmp/run-TERM
"${mpi_cmd[@]}" -np 2 "$rfa" --threads 1 train --config "$tmp/c.yaml" --set train.run_dir="$run" \
  >"$tmp/term.out" 2>"$tmp/term.log" &
pid=$!
wait_for "$run/metrics.jsonl" '"step":3,'
ranks=$(pgrep -P "$pid" || true)
[ "$(echo "$ranks" | wc -w)" = 2 ] || fail "expected 2 rank processes under mpirun $pid, found '$ranks'"
kill -TERM "$(echo "$ranks" | tail -n 1)"  # one rank only
rc=0
wait "$pid" || rc=$?
pid=
[ "$rc" = 0 ] || { cat "$tmp/term.out" "$tmp/term.log" >&2; fail "SIGTERM to one rank: mpirun exit code $rc"; }
step=$(state_step "$run/checkpoints/$(cat "$run/checkpoints/latest")")
to=$((step + 3))
mpi_run 2 --threads 1 train --resume "$run" --stop-after "$to" >"$tmp/resume.out" 2>"$tmp/resume.log" ||
  { cat "$tmp/resume.out" "$tmp/resume.log" >&2; fail "2-rank resume"; }
straight=$tmp/run-straight
mpi_run 2 --threads 1 train --config "$tmp/c.yaml" --set train.run_dir="$straight" --stop-after "$to" \
  >"$tmp/straight.out" 2>"$tmp/straight.log" || { cat "$tmp/straight.out" "$tmp/straight.log" >&2; fail "straight"; }
ck=$(printf 'step-%06d' "$to")
for f in model.safetensors optimizer.safetensors stream.safetensors; do
  cmp "$run/checkpoints/$ck/$f" "$straight/checkpoints/$ck/$f" || fail "$ck/$f after SIGTERM + resume differs"
done
diff <(train_lines "$run/metrics.jsonl" | from_step $((step + 1))) \
  <(train_lines "$straight/metrics.jsonl" | from_step $((step + 1))) >"$tmp/diff.txt" ||
  { cat "$tmp/diff.txt" >&2; fail "losses after SIGTERM + resume differ"; }
echo "mpi_stateful: SIGTERM at step $step + resume to $to equals a straight 2-rank run"
