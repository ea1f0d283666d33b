#!/usr/bin/env bash
# Stopping a 2-rank run (docs/distributed.md, "Stopping a run"):
#   SIGTERM to one rank only: the ranks agree on the stop (an all-reduce of the stop flag
#     every step), all stop after the same step, rank 0 writes one checkpoint, mpirun exits 0;
#     resumed on 2 ranks, the run is bit-identical to an uninterrupted 2-rank run.
#   SIGUSR1 to mpirun (which forwards it to every rank; Open MPI's mpirun turns SIGTERM and
#     SIGINT into killing the job): the same graceful stop.
# Usage: mpi_signals.sh <path-to-rfa> <source-dir>
set -euo pipefail
source "$(dirname "$0")/lib/common.bash"
source "$(dirname "$0")/lib/mpi.bash"


corpus_write 1500
config_write "$tmp/c.yaml" rfa_gate "run_dir: $tmp/unused, batch_size: 4, steps: 1000000, log_every: 1, eval_every: 0, eval_batches: 2"
"$rfa" data prepare --config "$tmp/c.yaml" 2>"$tmp/prep.log" || { cat "$tmp/prep.log" >&2; fail "data prepare"; }

run=$tmp/run-TERM
"${mpi_cmd[@]}" -np 2 "$rfa" --threads 1 train --config "$tmp/c.yaml" --set train.run_dir="$run" \
  >"$tmp/term.out" 2>"$tmp/term.log" &
pid=$!
wait_for "$run/metrics.jsonl" '"step":3,'
ranks=$(pgrep -P "$pid" || true)  # mpirun starts the local ranks itself
[ "$(echo "$ranks" | wc -w)" = 2 ] || fail "expected 2 rank processes under mpirun $pid, found '$ranks'"
kill -TERM "$(echo "$ranks" | tail -n 1)"  # one rank only
rc=0
wait "$pid" || rc=$?
pid=
[ "$rc" = 0 ] || { cat "$tmp/term.out" "$tmp/term.log" >&2; fail "SIGTERM to one rank: mpirun exit code $rc, expected 0"; }
expect_in "$tmp/term.log" "signal 15 received: stopped after step"
step=$(state_step "$run/checkpoints/$(cat "$run/checkpoints/latest")")
[ "$step" -ge 3 ] || fail "checkpoint step '$step'"
[ "$(ls "$run/checkpoints" | grep -c '^step-')" = 1 ] || fail "expected one checkpoint: $(ls "$run/checkpoints")"
echo "mpi_signals: SIGTERM to one rank stopped both after step $step"

to=$((step + 3))
mpi_run 2 --threads 1 train --resume "$run" --stop-after "$to" >"$tmp/resume.out" 2>"$tmp/resume.log" ||
  { cat "$tmp/resume.out" "$tmp/resume.log" >&2; fail "2-rank resume"; }
expect_in "$tmp/resume.log" "resuming from"
straight=$tmp/run-straight
mpi_run 2 --threads 1 train --config "$tmp/c.yaml" --set train.run_dir="$straight" --stop-after "$to" \
  >"$tmp/straight.out" 2>"$tmp/straight.log" || { cat "$tmp/straight.out" "$tmp/straight.log" >&2; fail "straight run"; }
ck=$(printf 'step-%06d' "$to")
for f in model.safetensors optimizer.safetensors; do
  cmp "$run/checkpoints/$ck/$f" "$straight/checkpoints/$ck/$f" || fail "$ck/$f after SIGTERM + resume differs"
done
diff <(train_lines "$run/metrics.jsonl" | from_step $((step + 1))) \
  <(train_lines "$straight/metrics.jsonl" | from_step $((step + 1))) >"$tmp/diff.txt" ||
  { cat "$tmp/diff.txt" >&2; fail "losses after SIGTERM + resume differ"; }
echo "mpi_signals: SIGTERM at step $step + resume to $to equals a straight 2-rank run"

run=$tmp/run-USR1
"${mpi_cmd[@]}" -np 2 "$rfa" --threads 1 train --config "$tmp/c.yaml" --set train.run_dir="$run" \
  >"$tmp/usr1.out" 2>"$tmp/usr1.log" &
pid=$!
wait_for "$run/metrics.jsonl" '"step":2,'
kill -USR1 "$pid"
rc=0
wait "$pid" || rc=$?
pid=
[ "$rc" = 0 ] || { cat "$tmp/usr1.out" "$tmp/usr1.log" >&2; fail "SIGUSR1 to mpirun: exit code $rc, expected 0"; }
expect_in "$tmp/usr1.log" "signal 10 received: stopped after step"
[ -f "$run/checkpoints/latest" ] || fail "no checkpoint after SIGUSR1"
echo "mpi_signals: ok"
