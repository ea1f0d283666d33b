#!/usr/bin/env bash
# `rfa generate`, `rfa eval perplexity` and `rfa bench decode` on tiny models
# trained here for a few steps (rfa_gate and softmax): streaming output, same
# seed same text, statistics on stderr, save/continue of an RFA state equal to
# one uninterrupted generation, softmax's --window past the training context,
# perplexity JSON, and clear errors.
# Usage: decode_smoke.sh <path-to-rfa> <source-dir>
set -euo pipefail
source "$(dirname "$0")/lib/common.bash"

corpus_write 1500

for kind in rfa_gate softmax; do
  run="$tmp/run-$kind"
  config_write "$tmp/$kind.yaml" "$kind" \
    "run_dir: $run, batch_size: 4, steps: 30, log_every: 10, eval_every: 0, eval_batches: 2"
  "$rfa" --threads 2 train --config "$tmp/$kind.yaml" 2>"$tmp/$kind.train.log" || { cat "$tmp/$kind.train.log" >&2; fail "train $kind"; }

  # Same seed, same text; the prompt is echoed and tokens follow; stats on stderr.
  "$rfa" generate "$run" -p "Line 7" -n 60 --seed 3 >"$tmp/a.txt" 2>"$tmp/a.log" || { cat "$tmp/a.log" >&2; fail "generate $kind"; }
  "$rfa" generate "$run/checkpoints/step-000030" -p "Line 7" -n 60 --seed 3 >"$tmp/b.txt" 2>/dev/null
  cmp -s "$tmp/a.txt" "$tmp/b.txt" || fail "$kind: same seed gave different text"
  head -c 6 "$tmp/a.txt" | grep -qF "Line 7" || fail "$kind: output does not start with the prompt"
  [ "$(wc -c <"$tmp/a.txt")" -gt 40 ] || fail "$kind: too little output"
  for s in "prompt: 6 tokens" "generated: 60 tokens" "tokens/s" "ms/token" "state:"; do expect_in "$tmp/a.log" "$s"; done
  "$rfa" generate "$run" -p "Line 7" -n 60 --seed 4 >"$tmp/c.txt" 2>/dev/null
  cmp -s "$tmp/a.txt" "$tmp/c.txt" && fail "$kind: another seed gave the same text"
  "$rfa" generate "$run" -p "Line" -n 20 --greedy --num-samples 2 >"$tmp/g.txt" 2>/dev/null
  expect_in "$tmp/g.txt" "---------------"

  # Perplexity on the run's validation split and on a text file.
  "$rfa" eval perplexity "$run" --json >"$tmp/ppl.json" 2>"$tmp/ppl.log" || { cat "$tmp/ppl.log" >&2; fail "eval $kind"; }
  for s in '"perplexity":' '"bits_per_byte":' '"mean_nll":' "\"attention\": \"$kind\""; do expect_in "$tmp/ppl.json" "$s"; done
  "$rfa" eval perplexity "$run" --data "$tmp/corpus.txt" --max-tokens 400 >"$tmp/ppl.txt" 2>/dev/null
  expect_in "$tmp/ppl.txt" "tokens         399 predicted"
  expect_in "$tmp/ppl.txt" "bits per byte"
done
expect_in "$tmp/ppl.txt" "sliding window of 32 tokens"   # softmax says how it covered the text

# A prompt and a text given as pipes (-f /dev/stdin, --data <(cmd)) equal the same given as files.
run="$tmp/run-rfa_gate"
printf 'Line 9' >"$tmp/prompt.txt"
"$rfa" generate "$run" -f "$tmp/prompt.txt" -n 20 --greedy >"$tmp/from_file.txt" 2>/dev/null
printf 'Line 9' | "$rfa" generate "$run" -f /dev/stdin -n 20 --greedy >"$tmp/from_pipe.txt" 2>"$tmp/pipe.log" ||
  { cat "$tmp/pipe.log" >&2; fail "generate -f /dev/stdin"; }
cmp -s "$tmp/from_file.txt" "$tmp/from_pipe.txt" || fail "generate -f /dev/stdin differs from -f FILE"
"$rfa" eval perplexity "$run" --data <(cat "$tmp/corpus.txt") --max-tokens 400 >"$tmp/ppl_pipe.txt" 2>/dev/null ||
  fail "eval --data <(cat FILE)"
"$rfa" eval perplexity "$run" --data "$tmp/corpus.txt" --max-tokens 400 >"$tmp/ppl_file.txt" 2>/dev/null
diff <(grep -vE '^(text|time) ' "$tmp/ppl_file.txt") <(grep -vE '^(text|time) ' "$tmp/ppl_pipe.txt") >/dev/null ||
  fail "eval --data from a pipe differs: $(diff "$tmp/ppl_file.txt" "$tmp/ppl_pipe.txt")"

# An RFA generation saved and continued equals one uninterrupted generation.
"$rfa" generate "$run" -p "Line 9" -n 50 --seed 5 >"$tmp/whole.txt" 2>/dev/null
"$rfa" generate "$run" -p "Line 9" -n 20 --seed 5 --save-state "$tmp/state.st" >"$tmp/part1.txt" 2>/dev/null
"$rfa" generate "$run" -n 30 --seed 5 --load-state "$tmp/state.st" >"$tmp/part2.txt" 2>"$tmp/cont.log" || { cat "$tmp/cont.log" >&2; fail "continue"; }
{ head -c -1 "$tmp/part1.txt"; head -c -1 "$tmp/part2.txt"; echo; } >"$tmp/joined.txt"
cmp -s "$tmp/whole.txt" "$tmp/joined.txt" || { diff "$tmp/whole.txt" "$tmp/joined.txt" >&2 || true; fail "continued text differs"; }
expect_in "$tmp/cont.log" "continuing from"

# Softmax generates past its training context (32) in a window of the last 32
# positions by default, without the warning; --window 0 is the whole growing cache.
sm="$tmp/run-softmax"
"$rfa" generate "$sm" -p "Line 7" -n 120 --seed 3 >"$tmp/w.txt" 2>"$tmp/w.log" || { cat "$tmp/w.log" >&2; fail "windowed generate"; }
[ "$(wc -c <"$tmp/w.txt")" -gt 100 ] || fail "softmax: too little output past the context"
grep -q "quality degrades" "$tmp/w.log" && fail "softmax: default window still warns"
expect_in "$tmp/w.log" "generated: 120 tokens"
expect_in "$tmp/w.log" "a window of the last 32 positions"
"$rfa" generate "$sm" -p "Line 7" -n 120 --seed 3 --window 16 >/dev/null 2>"$tmp/w.log" || fail "--window 16"
expect_in "$tmp/w.log" "a window of the last 16 positions"
"$rfa" generate "$sm" -p "Line 7" -n 120 --seed 3 --window 0 >/dev/null 2>"$tmp/w.log" || fail "--window 0"
expect_in "$tmp/w.log" "quality degrades"
# A prompt longer than the window prefills as it would step: any segmentation, the same text.
long="$(head -c 90 "$tmp/corpus.txt" | tr '\n' ' ')"
"$rfa" generate "$sm" -p "$long" -n 40 --greedy >"$tmp/p1.txt" 2>/dev/null
"$rfa" generate "$sm" -p "$long" -n 40 --greedy --prefill-segment 7 >"$tmp/p2.txt" 2>/dev/null
cmp -s "$tmp/p1.txt" "$tmp/p2.txt" || fail "softmax: windowed prefill depends on the segment length"
"$rfa" generate "$run" -p "Line 7" -n 10 --window 8 >/dev/null 2>"$tmp/w.log" || fail "rfa_gate --window"
expect_in "$tmp/w.log" "--window 8 ignored"
if "$rfa" generate "$sm" -p x -n 2 --window -3 >/dev/null 2>"$tmp/err.log"; then fail "negative --window accepted"; fi

# Errors name the problem.
if "$rfa" generate "$tmp/nowhere" -p x >/dev/null 2>"$tmp/err.log"; then fail "missing run accepted"; fi
expect_in "$tmp/err.log" "does not exist"
if "$rfa" generate "$tmp/run-softmax" -p x -n 2 --save-state "$tmp/s2" >/dev/null 2>"$tmp/err.log"; then fail "softmax state saved"; fi
expect_in "$tmp/err.log" "needs an RFA model"
if "$rfa" generate "$run" -p "" >/dev/null 2>"$tmp/err.log"; then fail "empty prompt accepted"; fi
expect_in "$tmp/err.log" "prompt is empty"
# eval --data takes UTF-8 text only: not random bytes, not a token file.
LC_ALL=C awk 'BEGIN { srand(1); for (i = 0; i < 65536; i++) printf "%c", int(rand() * 256) }' >"$tmp/random.bin"
if "$rfa" eval perplexity "$run" --data "$tmp/random.bin" >/dev/null 2>"$tmp/err.log"; then fail "eval --data random bytes exited 0"; fi
expect_in "$tmp/err.log" "--data file $tmp/random.bin is not"
expect_in "$tmp/err.log" "at byte offset"
if "$rfa" eval perplexity "$run" --data "$tmp/data/corpus.tokens" >/dev/null 2>"$tmp/err.log"; then fail "eval --data token file exited 0"; fi
expect_in "$tmp/err.log" "is a token file, not text; evaluate it with --tokens $tmp/data/corpus.tokens"

"$rfa" bench decode --positions 16,64 --steps 4 --repeats 1 --set model.d_model=32 --set model.n_heads=2 \
  --set model.n_layers=2 --vocab 50 >"$tmp/bench.txt" 2>"$tmp/bench.log" || { cat "$tmp/bench.log" >&2; fail "bench decode"; }
expect_in "$tmp/bench.txt" "softmax/rfa_gate"
expect_in "$tmp/bench.txt" "full KV cache (no window"
expect_in "$tmp/bench.txt" '"bench": "decode"'
# K rows of a decoder of S (a server's busy slots), and the options' mistakes named
"$rfa" bench decode --batch 1,3 --slots 4 --positions 16 --steps 2 --repeats 1 --rfa-only --set model.d_model=32 \
  --set model.n_heads=2 --set model.n_layers=2 --vocab 50 >"$tmp/slots.txt" 2>"$tmp/slots.log" ||
  { cat "$tmp/slots.log" >&2; fail "bench decode --slots"; }
expect_in "$tmp/slots.txt" "K rows of a decoder of 4 in one batched step"
expect_in "$tmp/slots.txt" '"slots": 4'
# --profile: each kernel of a batched step, the roofs, and the step at the roofs
"$rfa" bench decode --batch 1,3 --positions 16 --steps 2 --repeats 1 --rfa-only --profile --set model.d_model=32 \
  --set model.n_heads=2 --set model.n_layers=2 --vocab 50 >"$tmp/profile.txt" 2>"$tmp/profile.log" ||
  { cat "$tmp/profile.log" >&2; fail "bench decode --profile"; }
expect_in "$tmp/profile.log" "profile of rfa_gate x3 rows at position 16"
expect_in "$tmp/profile.log" "step products"
expect_in "$tmp/profile.log" "attention step"
expect_in "$tmp/profile.log" "the step at the roofs"
# --batch times the config's recurrent kind, as the positions' table does (it timed rfa_gate whatever the config)
"$rfa" bench decode --batch 2 --positions 16 --steps 2 --repeats 1 --rfa-only --set attention.kind=rfa_delta \
  --set model.d_model=32 --set model.n_heads=2 --set model.n_layers=2 --vocab 50 >"$tmp/delta.txt" 2>"$tmp/delta.log" ||
  { cat "$tmp/delta.log" >&2; fail "bench decode --batch, rfa_delta"; }
expect_in "$tmp/delta.txt" '"kind": "rfa_delta"'
if "$rfa" bench decode --profile >/dev/null 2>"$tmp/err.log"; then fail "--profile without --batch exited 0"; fi
expect_in "$tmp/err.log" "--profile times the kernels of a batched step: give it --batch too"
if "$rfa" bench decode --batch 8 --slots 4 >/dev/null 2>"$tmp/err.log"; then fail "--batch 8 --slots 4 exited 0"; fi
expect_in "$tmp/err.log" "--batch 8 is more rows than --slots 4"
if "$rfa" bench decode --slots 4 >/dev/null 2>"$tmp/err.log"; then fail "--slots without --batch exited 0"; fi
expect_in "$tmp/err.log" "--slots 4 needs --batch"
echo "decode_smoke: ok"
