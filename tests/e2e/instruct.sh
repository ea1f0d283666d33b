#!/usr/bin/env bash
# Documents and instruction tuning through the binary (docs/fine-tuning.md):
#   - a jsonl corpus trains from scratch (its tokenizer trained on the documents' text), and
#     `rfa eval perplexity RUN --split val` prints the trainer's val loss (EOS counted);
#     several files (data.corpus a,b) train too;
#   - an alpaca set fine-tunes a pretrained model (--init-from, a longer context_length):
#     the log counts examples and drops, metrics.jsonl carries val_prompt_loss, and
#     `rfa eval perplexity` prints the same response and prompt NLL for the run's split and
#     for a --data file of those examples; stopped and resumed, it equals the straight run;
#   - `rfa generate --instruction --input` prints the response alone;
#   - data.document_boundaries reset: jsonl documents train with the attention restarting at
#     each (its val loss is again what eval perplexity prints), and so do packed alpaca rows;
#   - refusals before anything is written: document_boundaries reset with train.stateful, a
#     token file of another format than data.format.
# Usage: instruct.sh <path-to-rfa> <source-dir>
set -euo pipefail
source "$(dirname "$0")/lib/common.bash"

field() { sed -n "s/.*\"$1\": *\([0-9.e+-]*\).*/\1/p"; }  # field <name> (stdin: one JSON line)
last_eval() { grep '"type":"eval"' "$1" | tail -1; }

# 1. jsonl documents from scratch.
words=(the fox king land said unto him and of all)
for i in $(seq 1 400); do
  printf '{"text": "Document %d: %s %s %s, and %s."}\n' "$i" "${words[i % 10]}" "${words[i * 3 % 10]}" \
    "${words[i * 7 % 10]}" "${words[(i + 1) % 10]}"
done >"$tmp/docs.jsonl"
cat >"$tmp/docs.yaml" <<YAML
model: {n_layers: 2, d_model: 32, n_heads: 2, context_length: 32}
attention: {kind: rfa_gate, num_features: 8, chunk_size: 16}
tokenizer: {path: $tmp/data/docs.model, kind: char, vocab_size: 300}
data: {corpus: $tmp/docs.jsonl, tokens: $tmp/data/docs.tokens, format: jsonl, val_fraction: 0.1}
train: {run_dir: $tmp/docs, batch_size: 4, steps: 8, log_every: 4, eval_every: 0}
YAML
train_ok "$tmp/docs.log" --config "$tmp/docs.yaml"
expect_in "$tmp/docs.log" "[tokenizer] extracting the text of $tmp/docs.jsonl (1 file(s), jsonl)"
expect_in "$tmp/docs.log" "400 documents"
expect_in "$tmp/docs.log" "documents: 400 (jsonl format), joined by EOS"
ls "$tmp/data"/docs.model.corpus-* 2>/dev/null && fail "the extracted tokenizer text was left behind"
"$rfa" --threads 2 eval perplexity "$tmp/docs" --split val --json >"$tmp/ppl.json" 2>"$tmp/ppl.log" ||
  { cat "$tmp/ppl.log" >&2; fail "eval of the jsonl run"; }
[ "$(last_eval "$tmp/docs/metrics.jsonl" | field val_loss)" = "$(field mean_nll <"$tmp/ppl.json")" ] ||
  fail "jsonl: the trainer's val loss is not what eval perplexity prints"
"$rfa" eval perplexity "$tmp/docs" --data "$tmp/docs.jsonl" >"$tmp/ppl.txt" 2>"$tmp/ppl.log" ||
  { cat "$tmp/ppl.log" >&2; fail "eval --data of a jsonl file"; }
expect_in "$tmp/ppl.txt" "(jsonl, 400 documents)"
# Several files: the same text split in two.
head -200 "$tmp/docs.jsonl" | sed 's/.*"text": "\(.*\)"}/\1/' >"$tmp/a.txt"
tail -200 "$tmp/docs.jsonl" | sed 's/.*"text": "\(.*\)"}/\1/' >"$tmp/b.txt"
train_ok "$tmp/two.log" --config "$tmp/docs.yaml" --set data.format=text --set "data.corpus=$tmp/a.txt,$tmp/b.txt" \
  --set data.tokens="$tmp/data/two.tokens" --set train.run_dir="$tmp/two"
expect_in "$tmp/two.log" "documents: 2 (text format), joined by EOS"
# The attention restarting at each document: trains, and eval restarts as the trainer's validation did.
train_ok "$tmp/docsR.log" --config "$tmp/docs.yaml" --set data.document_boundaries=reset \
  --set train.run_dir="$tmp/docsR"
expect_in "$tmp/docsR.log" "data.document_boundaries reset: attention restarts at each document's first token"
"$rfa" --threads 2 eval perplexity "$tmp/docsR" --split val --json >"$tmp/pplR.json" 2>"$tmp/pplR.log" ||
  { cat "$tmp/pplR.log" >&2; fail "eval of the jsonl reset run"; }
expect_in "$tmp/pplR.json" "restarted at each document"
[ "$(last_eval "$tmp/docsR/metrics.jsonl" | field val_loss)" = "$(field mean_nll <"$tmp/pplR.json")" ] ||
  fail "jsonl reset: the trainer's val loss is not what eval perplexity prints"
[ "$(field mean_nll <"$tmp/pplR.json")" != "$(field mean_nll <"$tmp/ppl.json")" ] ||
  fail "jsonl reset: the same val loss as the run across documents"
if "$rfa" train --config "$tmp/docs.yaml" --set data.document_boundaries=reset --set train.stateful=true \
  --set train.run_dir="$tmp/docsS" 2>"$tmp/docsS.log"; then fail "reset with train.stateful accepted"; fi
expect_in "$tmp/docsS.log" "'data.document_boundaries' is reset but 'train.stateful' is true"
[ ! -e "$tmp/docsS" ] || fail "a refused run wrote its run directory"

# 2. Instruction tuning from a pretrained model.
corpus_write 600
config_write "$tmp/parent.yaml" rfa_gate "run_dir: $tmp/parent, batch_size: 4, steps: 6, log_every: 3, eval_every: 0"
train_ok "$tmp/parent.log" --config "$tmp/parent.yaml"
printf '{"instruction": "%0300d", "output": "too long for the context"}\n' 0 >"$tmp/sft.jsonl"
for i in $(seq 1 240); do
  w=${words[i % 10]}
  if [ $((i % 4)) = 0 ]; then
    printf '{"instruction": "Say the word twice.", "input": "%s", "output": "%s %s"}\n' "$w" "$w" "$w"
  else
    printf '{"instruction": "Count to %d.", "output": "%s"}\n' $((i % 5 + 1)) "$(seq -s ' ' 1 $((i % 5 + 1)))"
  fi
done >>"$tmp/sft.jsonl"
sft_config() {  # sft_config <run_dir> [extra line]
  cat <<YAML
model: {context_length: 128}
data: {corpus: $tmp/sft.jsonl, tokens: $tmp/data/sft.tokens, format: alpaca, template: alpaca_short,
       packing: pack, val_fraction: 0.1}
train: {run_dir: $1, batch_size: 4, grad_accum: 2, steps: 10, log_every: 1, eval_every: 5, seed: 3}
optim: {lr: 3.0e-3, warmup_steps: 2}
checkpoint: {every: 5, keep_last: 5}
${2:-}
YAML
}
sft_config "$tmp/sftA" >"$tmp/sft.yaml"
# Refusals, before anything is written.
if "$rfa" train --config "$tmp/sft.yaml" --init-from "$tmp/parent" --set data.tokens="$tmp/data/corpus.tokens" \
  2>"$tmp/other.log"; then fail "a text token file accepted for alpaca data"; fi
expect_in "$tmp/other.log" "holds one text (version 2) but data.format is alpaca"
[ ! -e "$tmp/sftA/checkpoints" ] && [ ! -e "$tmp/data/sft.tokens" ] || fail "a refused run wrote files"

train_ok "$tmp/sftA.log" --config "$tmp/sft.yaml" --init-from "$tmp/parent"
expect_in "$tmp/sftA.log" "instruction examples (alpaca): 216 for training in"
expect_in "$tmp/sftA.log" "(pack: whole examples back to back), 1 dropped as longer than context_length + 1 = 129"
expect_in "$tmp/sftA.log" "val loss: mean response-token NLL of 24 held-out examples"
grep -q '"type":"eval","step":0,"val_loss":[0-9.e+-]*,"val_prompt_loss":' "$tmp/sftA/metrics.jsonl" ||
  fail "no step-0 evaluation with the prompt loss"
"$rfa" --threads 2 eval perplexity "$tmp/sftA" --split val --json >"$tmp/sft.json" 2>"$tmp/sft.log" ||
  { cat "$tmp/sft.log" >&2; fail "eval of the instruction run"; }
val=$(last_eval "$tmp/sftA/metrics.jsonl")
[ "$(field val_loss <<<"$val")" = "$(field mean_nll <"$tmp/sft.json")" ] ||
  fail "the trainer's response NLL '$(field val_loss <<<"$val")' is not eval's '$(field mean_nll <"$tmp/sft.json")'"
[ "$(field val_prompt_loss <<<"$val")" = "$(field prompt_nll <"$tmp/sft.json")" ] || fail "prompt NLL differs"
tail -24 "$tmp/sft.jsonl" >"$tmp/held.jsonl"  # the validation split: the last floor(10% of 241) examples
"$rfa" --threads 2 eval perplexity "$tmp/sftA" --data "$tmp/held.jsonl" --json >"$tmp/held.json" 2>/dev/null
[ "$(field mean_nll <"$tmp/held.json")" = "$(field mean_nll <"$tmp/sft.json")" ] ||
  fail "--data of the held-out examples scores otherwise than the run's split"
expect_in "$tmp/held.json" '"examples": 24, "skipped": 0'

# Stopped after step 5, resumed: the same run.
sft_config "$tmp/sftB" >"$tmp/sftB.yaml"
train_ok "$tmp/B1.log" --config "$tmp/sftB.yaml" --init-from "$tmp/parent" --stop-after 5
train_ok "$tmp/B2.log" --resume "$tmp/sftB"
diff <(untimed <"$tmp/sftA/metrics.jsonl") <(untimed <"$tmp/sftB/metrics.jsonl") >&2 ||
  fail "the resumed instruction run differs from the straight one"
checkpoint_files_same "$tmp/sftA" "$tmp/sftB" step-000010 model.safetensors optimizer.safetensors

# Packed examples with the attention restarting at each: trains, and differs from across.
sft_config "$tmp/sftR" >"$tmp/reset.yaml"
sed -i 's/packing: pack,/packing: pack, document_boundaries: reset,/' "$tmp/reset.yaml"
train_ok "$tmp/reset.log" --config "$tmp/reset.yaml" --init-from "$tmp/parent"
grep '"type":"train"' "$tmp/sftR/metrics.jsonl" | tail -1 | grep -q '"loss":' || fail "the reset run logged no loss"
[ "$(grep '"type":"train"' "$tmp/sftR/metrics.jsonl" | tail -1 | field loss)" != \
  "$(grep '"type":"train"' "$tmp/sftA/metrics.jsonl" | tail -1 | field loss)" ] ||
  fail "packed rows with reset train exactly as across examples"

# The response alone, rendered with the run's template.
"$rfa" generate "$tmp/sftA" --instruction "Say the word twice." --input "fox" --greedy -n 40 >"$tmp/gen.txt" \
  2>"$tmp/gen.log" || { cat "$tmp/gen.log" >&2; fail "generate --instruction"; }
grep -q "###" "$tmp/gen.txt" && fail "generate --instruction printed the prompt"
expect_in "$tmp/gen.log" "sample(s) stopped at the end-of-sequence token"
if "$rfa" generate "$tmp/sftA" --input "fox" 2>"$tmp/gen2.log"; then fail "--input without --instruction"; fi
echo "instruct: ok (jsonl val $(field mean_nll <"$tmp/ppl.json"), response NLL $(field mean_nll <"$tmp/sft.json"))"
