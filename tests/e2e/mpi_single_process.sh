#!/usr/bin/env bash
# Under mpirun -np 2 only `rfa train` and `rfa bench train` run (data parallel); every other
# command is refused by name before it does anything, instead of running once per rank (two
# copies of a generation interleaved on stdout, two writers of --save-state or a token file).
# Usage: mpi_single_process.sh <path-to-rfa> <source-dir>
set -euo pipefail
source "$(dirname "$0")/lib/common.bash"
source "$(dirname "$0")/lib/mpi.bash"

corpus_write 300
config_write "$tmp/c.yaml" rfa_gate "run_dir: $tmp/run, batch_size: 2, steps: 2"
refused() {  # refused <command words> -- <args...>
  local words=$1
  shift
  rc=0
  mpi_run 2 --threads 1 "$@" >"$tmp/out.txt" 2>"$tmp/err.txt" || rc=$?
  cat "$tmp/out.txt" >>"$tmp/err.txt"
  [ "$rc" != 0 ] || { cat "$tmp/err.txt" >&2; fail "mpirun -np 2 rfa $words exited 0"; }
  expect_in "$tmp/err.txt" "'rfa $words' runs in one process, but mpirun started 2 ranks"
}
refused "generate" generate "$tmp/run" -p "Line" -n 5 --save-state "$tmp/state"
[ ! -e "$tmp/state" ] || fail "a refused generate wrote its state"
refused "eval perplexity" eval perplexity "$tmp/run"
refused "data prepare" data prepare --config "$tmp/c.yaml"
[ ! -e "$tmp/data" ] || fail "a refused data prepare wrote $tmp/data"
refused "tokenizer train" tokenizer train --config "$tmp/c.yaml"
refused "bench decode" bench decode --positions 8 --steps 1 --repeats 1
# One rank under mpirun is one process: allowed.
mpi_run 1 --threads 1 data prepare --config "$tmp/c.yaml" >"$tmp/one.out" 2>"$tmp/one.log" ||
  { cat "$tmp/one.out" "$tmp/one.log" >&2; fail "mpirun -np 1 rfa data prepare"; }
echo "mpi_single_process: ok"
