#!/usr/bin/env bash
# The default thread count follows the CPUs the process may run on (core/cpu_cores.h): under
# `taskset -c 0` rfa runs one thread; asked for more threads than it has CPUs it warns, and the
# benchmark's core-distance probe (two threads spinning on one cache line, minutes when they
# share a CPU) is skipped. Each run is bounded in time: the probe would hang it.
# Usage: threads.sh <path-to-rfa> <source-dir>
set -euo pipefail
source "$(dirname "$0")/lib/common.bash"
command -v taskset >/dev/null || { echo "SKIP: no taskset (util-linux)"; exit 77; }

bench=(bench train --config "$src/configs/shakespeare-char-rfa-gate.yaml" --set model.vocab_size=65 --steps 2 --warmup 0)

# One CPU, no --threads: one thread, no warning.
timeout 120 taskset -c 0 "$rfa" "${bench[@]}" >"$tmp/one.out" 2>&1 || fail "taskset -c 0 rfa bench train: $(cat "$tmp/one.out")"
expect_in "$tmp/one.out" "B=12x1: 887056 parameters (3.5 MB of fp32 gradient), 1 threads,"
grep -q "warning" "$tmp/one.out" && fail "a warning with the default thread count: $(cat "$tmp/one.out")"
# and says why it runs fewer threads than the machine has cores (when it has more than one).
cores=$(lscpu -p=SOCKET,CORE 2>/dev/null | grep -v '^#' | sort -u | wc -l)
if [ "$cores" -ge 2 ]; then
  expect_in "$tmp/one.out" "1 thread: this process may use 1 of the machine's $cores cores (its CPU affinity"
fi

# One CPU, --threads 2: the warning names the CPUs and the fix; the run completes in time.
timeout 120 taskset -c 0 "$rfa" --threads 2 "${bench[@]}" >"$tmp/two.out" 2>&1 ||
  fail "taskset -c 0 rfa --threads 2 bench train (exit $?): $(cat "$tmp/two.out")"
expect_in "$tmp/two.out" "--threads asks for 2 threads, but this process may run on 1 CPU (its CPU affinity"
expect_in "$tmp/two.out" "use --threads 1 (or leave --threads out)"
expect_in "$tmp/two.out" "2 threads share fewer CPUs: the distance between threads 0 and 1 is not measured"
expect_in "$tmp/two.out" "median"

# As many threads as CPUs: no warning.
if [ "$(nproc)" -ge 2 ]; then
  timeout 120 taskset -c 0,1 "$rfa" --threads 2 "${bench[@]}" >"$tmp/fit.out" 2>&1 || fail "taskset -c 0,1: $(cat "$tmp/fit.out")"
  grep -q "warning" "$tmp/fit.out" && fail "a warning for 2 threads on 2 CPUs: $(cat "$tmp/fit.out")"
fi
echo "threads: ok"
