#!/usr/bin/env bash
# The weight check that runs every train.log_every steps stops a run whose ranks hold
# different weights, naming the step and each rank's checksum. The test hook
# RFA_TEST_PERTURB_RANK=R:S (RFA_TEST_HOOKS builds, the default with tests) makes rank R
# add 1e-3 to its first weight after step S.
# Usage: mpi_divergence.sh <path-to-rfa> <source-dir>
set -euo pipefail
source "$(dirname "$0")/lib/common.bash"
source "$(dirname "$0")/lib/mpi.bash"

corpus_write 1500
config_write "$tmp/c.yaml" rfa_gate "run_dir: $tmp/run, batch_size: 4, steps: 20, log_every: 4, eval_every: 0, eval_batches: 2" \
  "" "every: 2"
"$rfa" data prepare --config "$tmp/c.yaml" 2>"$tmp/prep.log" || { cat "$tmp/prep.log" >&2; fail "data prepare"; }

rc=0
RFA_TEST_PERTURB_RANK=1:5 mpi_run 2 --threads 1 train --config "$tmp/c.yaml" >"$tmp/out.log" 2>"$tmp/err.log" || rc=$?
cat "$tmp/out.log" >>"$tmp/err.log"
[ "$rc" != 0 ] || { cat "$tmp/err.log" >&2; fail "a diverged run exited 0"; }
expect_in "$tmp/err.log" "after step 8: the 2 ranks' weights differ (checksums rank 0: "
expect_in "$tmp/err.log" "data-parallel ranks must hold identical weights"
# It stopped there: the last checkpoint is from before the divergence was seen.
[ "$(cat "$tmp/run/checkpoints/latest")" = step-000006 ] || fail "latest is $(cat "$tmp/run/checkpoints/latest"), expected step-000006"
grep -q '"step":9,' "$tmp/run/metrics.jsonl" && fail "the run went on after the divergence"

# Without the hook the same run passes every check.
mpi_run 2 --threads 1 train --config "$tmp/c.yaml" --overwrite >"$tmp/ok.out" 2>"$tmp/ok.log" ||
  { cat "$tmp/ok.out" "$tmp/ok.log" >&2; fail "the same run without the hook"; }
expect_in "$tmp/ok.log" "[train] step 20/20"
echo "mpi_divergence: ok"
