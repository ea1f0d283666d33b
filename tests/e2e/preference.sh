#!/usr/bin/env bash
# Preference tuning (DPO) through the binary (docs/fine-tuning.md):
#   - refused without --init-from (DPO's reference), before anything is written;
#   - at step 0 the policy is its reference: the held-out DPO loss is log 2 exactly;
#   - stopped after step 4 and resumed, the run equals the straight one (metrics, safetensors);
#     the reference is recomputed from the parent state.json records, and a parent whose
#     model.safetensors changed is refused;
#   - `rfa eval perplexity RUN --split val` prints the pair accuracy and margin.
# Usage: preference.sh <path-to-rfa> <source-dir>
set -euo pipefail
source "$(dirname "$0")/lib/common.bash"

corpus_write 600
config_write "$tmp/parent.yaml" rfa_gate "run_dir: $tmp/parent, batch_size: 4, steps: 6, log_every: 3, eval_every: 0"
train_ok "$tmp/parent.log" --config "$tmp/parent.yaml"
words=(the fox king land said unto him and of all)
for i in $(seq 1 80); do
  printf '{"prompt": "Line %d: the quick brown", "chosen": " %s", "rejected": " %s %s"}\n' "$i" "${words[i % 10]}" \
    "${words[(i + 3) % 10]}" "${words[(i + 5) % 10]}"
done >"$tmp/pairs.jsonl"
dpo_config() {
  cat <<YAML
model: {context_length: 96}  # not 64: a default value is taken from the parent
data: {corpus: $tmp/pairs.jsonl, tokens: $tmp/data/pairs.tokens, format: preference, val_fraction: 0.1}
train: {run_dir: $1, batch_size: 4, grad_accum: 2, steps: 8, log_every: 1, eval_every: 4, seed: 2, dpo_beta: 0.5}
optim: {lr: 3.0e-3, warmup_steps: 2}
checkpoint: {every: 4, keep_last: 5}
YAML
}
dpo_config "$tmp/A" >"$tmp/a.yaml"
if "$rfa" train --config "$tmp/a.yaml" 2>"$tmp/none.log"; then fail "DPO without a reference model accepted"; fi
expect_in "$tmp/none.log" "data.format preference trains by DPO against a frozen reference"
[ ! -e "$tmp/A" ] && [ ! -e "$tmp/data/pairs.tokens" ] || fail "a refused DPO run wrote files"

train_ok "$tmp/A.log" --config "$tmp/a.yaml" --init-from "$tmp/parent"
expect_in "$tmp/A.log" "preference pairs: 72 for training"
grep -q '"type":"eval","step":0,"val_loss":0.6931471805599453,"val_pair_accuracy":' "$tmp/A/metrics.jsonl" ||
  { cat "$tmp/A/metrics.jsonl" >&2; fail "the DPO loss at step 0 is not log 2"; }
grep -q '"type":"eval","step":8,.*"val_reward_accuracy":' "$tmp/A/metrics.jsonl" || fail "no pair metrics at the end"

dpo_config "$tmp/B" >"$tmp/b.yaml"
train_ok "$tmp/B1.log" --config "$tmp/b.yaml" --init-from "$tmp/parent" --stop-after 4
train_ok "$tmp/B2.log" --resume "$tmp/B"
expect_in "$tmp/B2.log" "resuming from $tmp/B/checkpoints/step-000004 at step 4/8"
diff <(untimed <"$tmp/A/metrics.jsonl") <(untimed <"$tmp/B/metrics.jsonl") >&2 ||
  fail "the resumed DPO run differs from the straight one"
checkpoint_files_same "$tmp/A" "$tmp/B" step-000008 model.safetensors optimizer.safetensors

"$rfa" --threads 2 eval perplexity "$tmp/A" --split val --json >"$tmp/ppl.json" 2>"$tmp/ppl.log" ||
  { cat "$tmp/ppl.log" >&2; fail "eval of the DPO run"; }
expect_in "$tmp/ppl.json" '"pairs": 8, "pair_accuracy": '

# Another model in the parent's place: the reference would change, so the resume is refused.
config_write "$tmp/other.yaml" rfa_gate "run_dir: $tmp/other, batch_size: 4, steps: 6, log_every: 3, seed: 9"
train_ok "$tmp/other.log" --config "$tmp/other.yaml"
cp "$tmp/other/checkpoints/step-000006/model.safetensors" "$tmp/parent/checkpoints/step-000006/model.safetensors"
if "$rfa" train --resume "$tmp/B/checkpoints/step-000004" --set train.run_dir="$tmp/C" 2>"$tmp/changed.log"; then
  fail "a DPO resume against a changed parent was accepted"
fi
expect_in "$tmp/changed.log" "DPO's reference is the run's parent $tmp/parent/checkpoints/step-000006, whose model.safetensors now has checksum"
echo "preference: ok"
