#!/usr/bin/env bash
# train.precision bf16 and --precision bf16 through the binary: a bf16 run stopped
# and resumed in a fresh process equals the straight run (metrics lines, untimed);
# a resume may switch precision with a log line; generate, eval perplexity and
# bench decode accept --precision bf16, and a bad value is named. The refusals without
# AVX512-BF16 are checked on every CPU (a test hook hides it); without it, only they run,
# and the test exits 77, which ctest reports as Skipped (SKIP_RETURN_CODE): the bf16 runs,
# its subject, did not run. RFA_TEST_NO_AVX512BF16 in the environment does the same on a
# CPU that has it (the hook, for the whole script).
# Usage: bf16_smoke.sh <path-to-rfa> <source-dir>
set -euo pipefail
source "$(dirname "$0")/lib/common.bash"
export OMP_WAIT_POLICY=passive

corpus_write 1500
# The refusals without AVX512-BF16, on any CPU: RFA_TEST_NO_AVX512BF16 (a test hook, honoured in
# RFA_TEST_HOOKS builds) hides it. Each entry point names the option and the fp32 way round it,
# and a refused run leaves nothing: no run directory, no prepared data.
refused() {  # refused <expected text> <args of rfa...>
  local want=$1
  shift
  if RFA_TEST_NO_AVX512BF16=1 "$rfa" --threads 1 "$@" >/dev/null 2>"$tmp/no.log"; then
    fail "rfa $* ran bf16 without AVX512-BF16"
  fi
  expect_in "$tmp/no.log" "$want"
}
config_write "$tmp/c.yaml" rfa_gate "run_dir: $tmp/r, batch_size: 4, steps: 4, eval_every: 0, precision: bf16"
no_cpu="asks for bf16, but this CPU has no AVX512-BF16"
refused "train.precision bf16 $no_cpu (see avx512_bf16 in /proc/cpuinfo); set train.precision: fp32" \
  train --config "$tmp/c.yaml"
[ ! -e "$tmp/r" ] && [ ! -e "$tmp/data" ] || fail "the refused bf16 run left $(ls -d "$tmp/r" "$tmp/data" 2>/dev/null)"
refused "train.precision bf16 $no_cpu" bench train --config "$tmp/c.yaml" --set model.vocab_size=50 --steps 1
refused "--precision bf16 $no_cpu (see avx512_bf16 in /proc/cpuinfo); pass --precision fp32" \
  bench decode --positions 8 --steps 1 --repeats 1 --precision bf16
"$rfa" --threads 1 train --config "$tmp/c.yaml" --set train.precision=fp32 2>"$tmp/fp32.log" ||
  { cat "$tmp/fp32.log" >&2; fail "fp32 train"; }
refused "(a resume switches with --set train.precision=fp32)" train --resume "$tmp/r" --set train.steps=6 \
  --set train.precision=bf16
refused "--precision bf16 $no_cpu" generate "$tmp/r" -p x -n 2 --precision bf16
refused "--precision bf16 $no_cpu" eval perplexity "$tmp/r" --precision bf16
[ "$(cat "$tmp/r/checkpoints/latest")" = step-000004 ] || fail "a refused resume moved the run"
rm -rf "$tmp/r"
if ! grep -qw avx512_bf16 /proc/cpuinfo || [ -n "${RFA_TEST_NO_AVX512BF16:-}" ]; then
  echo "bf16_smoke: SKIPPED the bf16 runs: this CPU has no AVX512-BF16 (checked the refusals only)"
  exit 77
fi
# A build for a level below AVX-512 (RFA_ARCH=x86-64-v3, docs/cpu-targets.md) holds oneDNN there,
# and refuses bf16 on any CPU, saying so.
if ! "$rfa" --threads 1 bench decode --positions 8 --steps 1 --repeats 1 --precision bf16 >/dev/null 2>"$tmp/lvl.log"; then
  expect_in "$tmp/lvl.log" "asks for bf16, but this rfa holds its matrix products at"
  expect_in "$tmp/lvl.log" "build with RFA_ARCH=native or x86-64-v4 for bf16"
  echo "bf16_smoke: SKIPPED the bf16 runs: this build's level has no bf16 products (checked the refusals only)"
  exit 77
fi

train_entries() { echo "run_dir: $1, batch_size: 4, steps: 12, log_every: 1, eval_every: 6, eval_batches: 2, precision: bf16"; }
A="$tmp/A" B="$tmp/B"
config_write "$tmp/a.yaml" rfa_gate "$(train_entries "$A")" "" "every: 6"
config_write "$tmp/b.yaml" rfa_gate "$(train_entries "$B")" "" "every: 6"
"$rfa" --threads 2 train --config "$tmp/a.yaml" 2>"$tmp/a.log" || { cat "$tmp/a.log" >&2; fail "bf16 train"; }
expect_in "$tmp/a.log" "train.precision bf16: matrix products on bf16 copies"
"$rfa" --threads 2 train --config "$tmp/b.yaml" --stop-after 6 2>"$tmp/b1.log" || { cat "$tmp/b1.log" >&2; fail "bf16 train to 6"; }
"$rfa" --threads 2 train --resume "$B" 2>"$tmp/b2.log" || { cat "$tmp/b2.log" >&2; fail "bf16 resume"; }
# Train lines and the final weights, bit for bit.
untimed <"$A/metrics.jsonl" | grep '"type":"train"' >"$tmp/a.jsonl"
untimed <"$B/metrics.jsonl" | grep '"type":"train"' >"$tmp/b.jsonl"
[ "$(wc -l <"$tmp/a.jsonl")" = 12 ] || fail "expected 12 train lines"
cmp -s "$tmp/a.jsonl" "$tmp/b.jsonl" || { diff "$tmp/a.jsonl" "$tmp/b.jsonl" >&2 || true; fail "bf16 resume differs"; }
for f in model.safetensors optimizer.safetensors; do
  cmp -s "$A/checkpoints/step-000012/$f" "$B/checkpoints/step-000012/$f" || fail "bf16 resume: $f differs at step 12"
done

# Switching precision on resume: allowed, and said.
"$rfa" --threads 2 train --resume "$B/checkpoints/step-000006" --set train.run_dir="$tmp/C" \
  --set train.precision=fp32 2>"$tmp/c.log" || { cat "$tmp/c.log" >&2; fail "resume into fp32"; }
expect_in "$tmp/c.log" "train.precision switches from bf16"

"$rfa" generate "$A" -p "Line 7" -n 30 --seed 3 --precision bf16 >"$tmp/g.txt" 2>"$tmp/g.log" || { cat "$tmp/g.log" >&2; fail "generate bf16"; }
head -c 6 "$tmp/g.txt" | grep -qF "Line 7" || fail "generate bf16: output does not start with the prompt"
expect_in "$tmp/g.log" "bf16 products"
"$rfa" eval perplexity "$A" --precision bf16 --json >"$tmp/p16.json" 2>/dev/null || fail "eval bf16"
"$rfa" eval perplexity "$A" --json >"$tmp/p32.json" 2>/dev/null || fail "eval fp32"
nll() { sed -E 's/.*"mean_nll": ([0-9.e+-]+).*/\1/' "$1"; }
awk -v a="$(nll "$tmp/p16.json")" -v b="$(nll "$tmp/p32.json")" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d < 0.02 * b) }' ||
  fail "eval: bf16 NLL $(nll "$tmp/p16.json") is not within 2% of fp32's $(nll "$tmp/p32.json")"
"$rfa" --threads 1 bench decode --positions 8,64 --steps 4 --repeats 1 --rfa-only --precision bf16 >"$tmp/d.txt" 2>"$tmp/d.log" ||
  { cat "$tmp/d.log" >&2; fail "bench decode bf16"; }
expect_in "$tmp/d.txt" '"precision": "bf16"'
"$rfa" generate "$A" -p x --precision bf17 2>"$tmp/bad.log" && fail "--precision bf17 accepted"
expect_in "$tmp/bad.log" "--precision: bf17 not in {fp32,bf16}"
echo "bf16_smoke: ok"
