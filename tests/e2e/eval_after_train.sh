#!/usr/bin/env bash
# The trainer's val loss is the number `rfa eval perplexity RUN --split val`
# prints for the same checkpoint (whole split; same --threads: bit for bit), for
# every attention kind, and models trained with attention.positions=rope load
# for evaluation and generation (RFA kinds included: their decoder's RoPE table
# slides along the text, past the training context).
# Usage: eval_after_train.sh <path-to-rfa> <source-dir>
set -euo pipefail
source "$(dirname "$0")/lib/common.bash"

corpus_write 800

# field <name> (stdin: one JSON line): the raw number after "name":
field() { sed -n "s/.*\"$1\": *\([0-9.e+-]*\).*/\1/p"; }

for case in rfa_gate softmax rfa:rope rfa_gate:rope; do
  kind=${case%%:*}
  run="$tmp/run-${case/:/-}"
  config_write "$tmp/c.yaml" "$kind" "run_dir: $run, batch_size: 4, steps: 12, log_every: 4, eval_every: 6"
  extra=()
  [ "$case" != "$kind" ] && extra=(--set attention.positions=rope)
  "$rfa" --threads 2 train --config "$tmp/c.yaml" "${extra[@]}" 2>"$tmp/train.log" ||
    { cat "$tmp/train.log" >&2; fail "train $case"; }
  expect_in "$tmp/train.log" "val loss: mean NLL per token over the whole validation split"
  [ "$case" != "$kind" ] && expect_in "$run/config.yaml" "positions: rope"
  val=$(grep '"type":"eval"' "$run/metrics.jsonl" | tail -1 | sed 's/.*"val_loss":\([0-9.e+-]*\).*/\1/')
  "$rfa" --threads 2 eval perplexity "$run" --split val --json >"$tmp/ppl.json" 2>"$tmp/ppl.log" ||
    { cat "$tmp/ppl.log" >&2; fail "eval $case"; }
  nll=$(field mean_nll <"$tmp/ppl.json")
  [ -n "$val" ] && [ "$val" = "$nll" ] || fail "$case: trainer's val loss '$val' != eval perplexity's mean NLL '$nll'"
  "$rfa" generate "$run" -p "Line 3" -n 80 --seed 2 >"$tmp/gen.txt" 2>"$tmp/gen.log" ||
    { cat "$tmp/gen.log" >&2; fail "generate $case"; }
  [ "$(wc -c <"$tmp/gen.txt")" -gt 60 ] || fail "$case: too little output"
  echo "eval_after_train: $case val loss $val = eval perplexity"
done

# train.eval_batches=N caps the evaluation at the split's first N x B x T + 1 tokens, and says so.
run="$tmp/run-capped"
config_write "$tmp/c.yaml" rfa_gate "run_dir: $run, batch_size: 4, steps: 2, log_every: 1, eval_batches: 1"
"$rfa" --threads 2 train --config "$tmp/c.yaml" 2>"$tmp/train.log" || { cat "$tmp/train.log" >&2; fail "capped"; }
expect_in "$tmp/train.log" "over the first 129 of the"
val=$(grep '"type":"eval"' "$run/metrics.jsonl" | tail -1 | sed 's/.*"val_loss":\([0-9.e+-]*\).*/\1/')
"$rfa" --threads 2 eval perplexity "$run" --split val --max-tokens 129 --json >"$tmp/ppl.json" 2>/dev/null
[ "$val" = "$(field mean_nll <"$tmp/ppl.json")" ] || fail "capped val loss $val != eval of the first 129 tokens"
# A long validation pass says how far it is (every 5 s; the test hook makes it every update), and so
# does `rfa eval perplexity`; the numbers are the same with the lines.
run="$tmp/run-progress"
config_write "$tmp/c.yaml" rfa_gate "run_dir: $run, batch_size: 4, steps: 2, log_every: 1"
RFA_TEST_PROGRESS_SECONDS=0 "$rfa" --threads 2 train --config "$tmp/c.yaml" 2>"$tmp/train.log" ||
  { cat "$tmp/train.log" >&2; fail "progress"; }
expect_in "$tmp/train.log" "[train] validation: "
expect_in "$tmp/train.log" " tokens/s, ETA "
RFA_TEST_PROGRESS_SECONDS=0 "$rfa" --threads 2 eval perplexity "$run" --split val --json >"$tmp/ppl.json" \
  2>"$tmp/ppl.log" || { cat "$tmp/ppl.log" >&2; fail "eval progress"; }
expect_in "$tmp/ppl.log" "[eval] "
val=$(grep '"type":"eval"' "$run/metrics.jsonl" | tail -1 | sed 's/.*"val_loss":\([0-9.e+-]*\).*/\1/')
[ "$val" = "$(field mean_nll <"$tmp/ppl.json")" ] || fail "with progress lines: val loss $val != eval's mean NLL"
echo "eval_after_train: ok"
