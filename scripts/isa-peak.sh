#!/usr/bin/env bash
# Prints one core's fp32 FMA and bf16 dot-product peaks (scripts/isa-peak.c), three times.
# Tells whether bf16 matrix products can beat fp32 on this CPU at all (docs/bf16.md).
set -euo pipefail
grep -qw avx512_bf16 /proc/cpuinfo || { echo "isa-peak: this CPU has no AVX512-BF16 (bf16 products are not available)" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
${CC:-cc} -O2 -mavx512f -mavx512bf16 -o "$out/isa-peak" "$here/isa-peak.c"
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
# Every timed instruction must be in the binary: a compiler that merges the identical chains
# would time one latency-bound chain and report a fraction of the peak as the peak.
for insn in vfmadd231ps vdpbf16ps; do
  n=$(objdump -d --no-show-raw-insn "$out/isa-peak" | grep -c "$insn" || true)
  [ "$n" -ge 48 ] || { echo "isa-peak: the compiler kept $n of 48 $insn instructions; this measurement would be wrong" >&2; exit 1; }
done
"$out/isa-peak"
