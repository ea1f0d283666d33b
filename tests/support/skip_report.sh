#!/usr/bin/env bash
# The skip mechanism end to end (support/skip.h): the test binary exits 77 when every test
# case it started was skipped, 0 when one ran.
#  - a bf16-only file with AVX512-BF16 hidden (RFA_TEST_NO_AVX512BF16, a test hook) skips;
#  - the skip demo case alone, asked to skip (RFA_TEST_SKIP_DEMO), skips; not asked, passes;
#  - the demo with the decision tests beside it passes (cases ran). A failure over skips: skip_test.cpp.
# Usage: skip_report.sh [emulator args...] <path-to-rfa_tests>  (a cross build's qemu goes first)
set -uo pipefail
bin=("$@")
failures=0
expect() {  # expect <code> <description> <command...>
  local want=$1 what=$2
  shift 2
  "$@" --no-intro --duration=false >/dev/null 2>&1
  local got=$?
  if [ "$got" != "$want" ]; then
    echo "skip_report: $what: exit $got, expected $want" >&2
    failures=$((failures + 1))
  fi
}
demo='skip: skip_if records only a true condition and says so'
expect 77 "gemm_bf16 with bf16 hidden" env RFA_TEST_NO_AVX512BF16=1 "${bin[@]}" --source-file='*kernels/gemm_bf16_test.cpp'
expect 77 "train_bf16 with bf16 hidden" env RFA_TEST_NO_AVX512BF16=1 "${bin[@]}" --source-file='*train/train_bf16_test.cpp'
expect 77 "the demo asked to skip" env RFA_TEST_SKIP_DEMO=1 "${bin[@]}" --test-case="$demo"
expect 0 "the demo not asked to skip" "${bin[@]}" --test-case="$demo"
expect 0 "the demo skipping beside cases that ran" env RFA_TEST_SKIP_DEMO=1 "${bin[@]}" --source-file='*support/skip_test.cpp'
[ "$failures" = 0 ] || exit 1
echo "skip_report: ok"
