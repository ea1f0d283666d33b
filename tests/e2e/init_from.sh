#!/usr/bin/env bash
# Fine-tuning with `rfa train --init-from` (docs/fine-tuning.md), across processes:
#   - the child's val loss at step 0 (metrics.jsonl) is the number `rfa eval perplexity
#     PARENT --tokens CHILD_TOKENS` prints: the parent's weights and fixed random matrices
#     on the child's data, bit for bit;
#   - the child's corpus is encoded with the parent's tokenizer (copied into the run), and
#     state.json records the parent (path, step, checksum of its model.safetensors);
#   - a fine-tune stopped after step 4 and resumed equals the uninterrupted one: every
#     metrics line and the final safetensors files byte for byte;
#   - refusals, each before anything is written: a different architecture (naming the key
#     and both values), --init-from with --resume, the parent's own run directory, a
#     token file encoded by another tokenizer.
# Usage: init_from.sh <path-to-rfa> <source-dir>
set -euo pipefail
source "$(dirname "$0")/lib/common.bash"

refused() {  # refused <log> <text> args...: `rfa train args` fails saying text
  local log=$1 text=$2
  shift 2
  if "$rfa" --threads 2 train "$@" 2>"$log"; then fail "rfa train $* should be refused"; fi
  expect_in "$log" "$text"
}

corpus_write 800
config_write "$tmp/parent.yaml" rfa_gate "run_dir: $tmp/parent, batch_size: 4, steps: 8, log_every: 4, eval_every: 0"
train_ok "$tmp/parent.log" --config "$tmp/parent.yaml"

# The child's own text; a config with no model, attention or tokenizer keys (they come from the parent).
for i in $(seq 1 600); do echo "Verse $i: and the child said unto the fox, $((i * 31 % 97)) times, go thy way."; done \
  >"$tmp/child.txt"
child_config() {  # child_config <run_dir> [extra line]
  cat <<YAML
data: {corpus: $tmp/child.txt, tokens: $tmp/data/child.tokens, val_fraction: 0.1}
train: {run_dir: $1, batch_size: 3, grad_accum: 2, steps: 10, log_every: 1, eval_every: 5, seed: 7}
optim: {lr: 2.0e-3, warmup_steps: 2}
checkpoint: {every: 4, keep_last: 10}
${2:-}
YAML
}
child_config "$tmp/A" >"$tmp/child.yaml"

# Refusals first: none may write the run directory or the token file.
child_config "$tmp/X" "model: {n_layers: 3}" >"$tmp/bad.yaml"
refused "$tmp/bad.log" "model.n_layers is '3' in the new config but '2' in the parent checkpoint" \
  --config "$tmp/bad.yaml" --init-from "$tmp/parent"
# A key given with its default value (4 layers) is a key given: refused like any other, naming the line.
child_config "$tmp/X" "model: {n_layers: 4}" >"$tmp/default.yaml"
refused "$tmp/default.log" "$tmp/default.yaml:5: --init-from $tmp/parent: model.n_layers is '4' in the new config but \
'2' in the parent checkpoint" --config "$tmp/default.yaml" --init-from "$tmp/parent"
refused "$tmp/resume.log" "give one of them" --resume "$tmp/parent" --init-from "$tmp/parent"
refused "$tmp/own.log" "is the parent's own run" --config "$tmp/child.yaml" --init-from "$tmp/parent" \
  --set train.run_dir="$tmp/parent"
[ ! -e "$tmp/X" ] && [ ! -e "$tmp/data/child.tokens" ] || fail "a refused fine-tune wrote files"
[ "$(cat "$tmp/parent/checkpoints/latest")" = step-000008 ] || fail "the parent's run changed"

# Given equal to the parent's, accepted; the changeable context_length given with its default (64, the parent
# 32) is the child's. The tokenizer keys name the parent's tokenizer and corpus.
child_config "$tmp/X" "model: {n_layers: 2, context_length: 64}" >"$tmp/same.yaml"
"$rfa" train --config "$tmp/same.yaml" --init-from "$tmp/parent" --dump-config >"$tmp/same-dump.yaml" \
  2>"$tmp/same.log" || { cat "$tmp/same.log" >&2; fail "a config giving the parent's n_layers"; }
expect_in "$tmp/same-dump.yaml" "  n_layers: 2  #"
expect_in "$tmp/same-dump.yaml" "  context_length: 64  #"
expect_in "$tmp/same-dump.yaml" "  path: \"$tmp/data/char.model\"  #"
expect_in "$tmp/same-dump.yaml" "  corpus: \"$tmp/corpus.txt\"  # training text"

# rfa data prepare of a fine-tune's config encodes with the parent's tokenizer, as rfa train does (it would
# once train a tokenizer of the child's corpus), and no warning calls that tokenizer another corpus's.
"$rfa" data prepare --config "$tmp/child.yaml" --set train.init_from="$tmp/parent" \
  --set data.tokens="$tmp/data/prep.tokens" 2>"$tmp/prep-child.log" || { cat "$tmp/prep-child.log" >&2; fail "prepare"; }
expect_in "$tmp/prep-child.log" "encoding with the parent's tokenizer $tmp/parent/checkpoints/step-000008/tokenizer.model"
grep -qF "training it" "$tmp/prep-child.log" && fail "data prepare of a fine-tune trained a tokenizer"
grep -qF "was trained on" "$tmp/prep-child.log" && fail "data prepare of a fine-tune warned of the parent's tokenizer"

# A: ten steps straight.
train_ok "$tmp/A.log" --config "$tmp/child.yaml" --init-from "$tmp/parent"
expect_in "$tmp/A.log" "[init] weights and fixed random matrices of $tmp/parent/checkpoints/step-000008 (step 8"
expect_in "$tmp/A.log" "with $tmp/parent/checkpoints/step-000008/tokenizer.model"  # the corpus, encoded
expect_in "$tmp/A.log" "[init] this run's corpus $tmp/child.txt is encoded with the parent's tokenizer \
$tmp/parent/checkpoints/step-000008/tokenizer.model, trained on $tmp/corpus.txt"
grep -qF "was trained on" "$tmp/A.log" && fail "the fine-tune warned that the parent's tokenizer is another corpus's"
cmp -s "$tmp/data/child.tokens" "$tmp/data/prep.tokens" || fail "data prepare and train encoded the child differently"
cmp -s "$tmp/A/tokenizer.model" "$tmp/data/char.model" || fail "the run's tokenizer is not the parent's"
expect_in "$tmp/A/checkpoints/step-000010/state.json" "\"init_from\": \"$tmp/parent/checkpoints/step-000008\""
expect_in "$tmp/A/checkpoints/step-000010/state.json" "\"init_from_step\": 8"
sum=$(sed -n 's/.*"init_from_checksum": "\([0-9a-f]*\)".*/\1/p' "$tmp/A/checkpoints/step-000010/state.json")
[ ${#sum} = 16 ] || fail "no init_from_checksum in state.json"
expect_in "$tmp/A/config.yaml" "n_layers: 2"
expect_in "$tmp/A/config.yaml" "init_from: \"$tmp/parent\""

# Step 0: the parent's own number on the child's validation split.
val0=$(grep '"type":"eval","step":0,' "$tmp/A/metrics.jsonl" | sed 's/.*"val_loss":\([0-9.e+-]*\).*/\1/')
"$rfa" --threads 2 eval perplexity "$tmp/parent" --tokens "$tmp/data/child.tokens" --json >"$tmp/ppl.json" \
  2>"$tmp/ppl.log" || { cat "$tmp/ppl.log" >&2; fail "eval of the parent on the child's data"; }
nll=$(sed -n 's/.*"mean_nll": *\([0-9.e+-]*\).*/\1/p' "$tmp/ppl.json")
[ -n "$val0" ] && [ "$val0" = "$nll" ] || fail "child's val loss at step 0 '$val0' != the parent's '$nll'"

# B: stopped after step 4, resumed in a fresh process: the same run as A.
child_config "$tmp/B" >"$tmp/childB.yaml"
train_ok "$tmp/B1.log" --config "$tmp/childB.yaml" --init-from "$tmp/parent" --stop-after 4
train_ok "$tmp/B2.log" --resume "$tmp/B"
expect_in "$tmp/B2.log" "resuming from $tmp/B/checkpoints/step-000004 at step 4/10"
untimed <"$tmp/A/metrics.jsonl" >"$tmp/a.jsonl"
untimed <"$tmp/B/metrics.jsonl" | grep -v '"type":"eval","step":4,' | sed 's/\("step":4,.*\),"val_loss":[^,}]*/\1/' \
  >"$tmp/b.jsonl"
diff "$tmp/a.jsonl" "$tmp/b.jsonl" >&2 || fail "the resumed fine-tune's metrics differ from the straight one's"
checkpoint_files_same "$tmp/A" "$tmp/B" step-000010 model.safetensors optimizer.safetensors
expect_in "$tmp/B/checkpoints/step-000010/state.json" "\"init_from_checksum\": \"$sum\""

# A token file encoded by another tokenizer is refused, as for any run.
config_write "$tmp/other.yaml" rfa_gate "run_dir: $tmp/unused"
sed -i "s#char.model#other.model#; s#corpus.tokens#other.tokens#; s#corpus: $tmp/corpus.txt#corpus: $tmp/child.txt#" \
  "$tmp/other.yaml"
"$rfa" data prepare --config "$tmp/other.yaml" 2>"$tmp/prep.log" || { cat "$tmp/prep.log" >&2; fail "prepare"; }
refused "$tmp/tok.log" 'prepare` with this tokenizer' --config "$tmp/child.yaml" --init-from "$tmp/parent" \
  --set train.run_dir="$tmp/C" --set data.tokens="$tmp/data/other.tokens"
expect_in "$tmp/tok.log" "this run's corpus is encoded with the parent's tokenizer"
[ ! -e "$tmp/C/checkpoints" ] || fail "a refused fine-tune left a run behind"
echo "init_from: ok (val at step 0 $val0 = the parent's; resume exact)"
