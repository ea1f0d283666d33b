#!/usr/bin/env bash
# Data-parallel ranks must run identical kernels (docs/cpu-targets.md): ranks whose builds differ
# in CPU level or vector width, or whose oneDNN runs another ISA, would round differently and drift
# apart. A mix is refused before anything is written, naming the ranks and the fix. The test hook
# RFA_TEST_OTHER_KERNELS_RANK=1 (test builds only) makes rank 1 report other kernels.
# Usage: mpi_kernels.sh <path-to-rfa> <source-dir>
set -euo pipefail
source "$(dirname "$0")/lib/common.bash"
source "$(dirname "$0")/lib/mpi.bash"

corpus_write 300
config_write "$tmp/c.yaml" rfa_gate "run_dir: $tmp/run, batch_size: 2, steps: 2, eval_every: 0"
"$rfa" data prepare --config "$tmp/c.yaml" 2>"$tmp/prep.log" || { cat "$tmp/prep.log" >&2; fail "data prepare"; }
if RFA_TEST_OTHER_KERNELS_RANK=1 mpi_run 2 --threads 1 train --config "$tmp/c.yaml" >"$tmp/mix.out" 2>"$tmp/mix.log"; then
  fail "ranks with different kernels trained"
fi
expect_in "$tmp/mix.log" "data-parallel ranks must run identical kernels, but rank(s) 1 differ from rank 0"
expect_in "$tmp/mix.log" "RFA_ARCH=x86-64-v3"
[ ! -e "$tmp/run" ] || fail "the refused run left $tmp/run"
# The same ranks with the same kernels train.
mpi_run 2 --threads 1 train --config "$tmp/c.yaml" >"$tmp/ok.out" 2>"$tmp/ok.log" ||
  { cat "$tmp/ok.out" "$tmp/ok.log" >&2; fail "2 ranks with the same kernels"; }
echo "mpi_kernels: a mix of kernels is refused before anything is written; equal kernels train"
