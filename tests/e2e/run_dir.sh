#!/usr/bin/env bash
# The run directory is the trainer's alone, and a failed start loses nothing:
#   --overwrite refused by a bad token file, a vocab mismatch or a context longer than the
#     validation split leaves the earlier run's checkpoints byte for byte; a good one replaces them;
#   a run that fails before its first checkpoint leaves no directory it created (nor its
#     parents), never removes a directory it did not create, and a NaN names the step after
#     the last one logged;
#   a second `rfa train`, `--overwrite` or `--resume` on a directory in use is refused naming the
#     holder's pid (readers still work); the lock dies with its holder, even on SIGKILL;
#   a run or checkpoint directory that accepts no new files is refused before the first step;
#   an edited state.json step (6 -> 7, 6 -> 2) is refused naming the file.
# Usage: run_dir.sh <path-to-rfa> <source-dir>
set -euo pipefail
source "$(dirname "$0")/lib/common.bash"
frozen=
trap '[ -n "$frozen" ] && chattr -i "$frozen" 2>/dev/null; [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT

train_threads=1  # train_ok (lib/common.bash) with one thread, as refused() below
refused() {  # log-file expected-text args...: must exit non-zero with the text
  local log=$1 text=$2
  shift 2
  if "$rfa" --threads 1 train "$@" 2>"$log"; then cat "$log" >&2; fail "rfa train $* succeeded"; fi
  expect_in "$log" "$text"
}
tree_sum() { (cd "$1" && find . -type f | LC_ALL=C sort | xargs md5sum); }

corpus_write 1500
config_write "$tmp/c.yaml" rfa_gate "run_dir: $tmp/unused, batch_size: 4, steps: 6, log_every: 1, eval_every: 0, eval_batches: 2" \
  "lr: 3.0e-3, warmup_steps: 5" "every: 3, keep_last: 10"
"$rfa" data prepare --config "$tmp/c.yaml" 2>"$tmp/prep.log" || { cat "$tmp/prep.log" >&2; fail "data prepare"; }
val_tokens=$(sed -n 's/.* val \([0-9][0-9]*\) tokens.*/\1/p' "$tmp/prep.log" | head -1)
[ -n "$val_tokens" ] || { cat "$tmp/prep.log" >&2; fail "no 'val N tokens' in the data prepare log"; }

# --overwrite validates everything before deleting anything.
A=$tmp/A
train_ok "$tmp/A.log" --config "$tmp/c.yaml" --set train.run_dir="$A"
before=$(tree_sum "$A/checkpoints")
head -c 4096 /dev/urandom >"$tmp/random.tokens"
refused "$tmp/o1.log" "not an rfa token file" --config "$tmp/c.yaml" --set train.run_dir="$A" --overwrite \
  --set data.tokens="$tmp/random.tokens"
refused "$tmp/o2.log" "model.vocab_size 50 differs from the tokenizer" --config "$tmp/c.yaml" \
  --set train.run_dir="$A" --overwrite --set model.vocab_size=50
refused "$tmp/o3.log" "fewer than context_length + 1" --config "$tmp/c.yaml" --set train.run_dir="$A" --overwrite \
  --set model.context_length=$((val_tokens + 8))
refused "$tmp/o4.log" "already holds a run" --config "$tmp/c.yaml" --set train.run_dir="$A"
[ "$(tree_sum "$A/checkpoints")" = "$before" ] || fail "a refused --overwrite changed $A/checkpoints"
train_ok "$tmp/o5.log" --config "$tmp/c.yaml" --set train.run_dir="$A" --overwrite --set checkpoint.every=4
[ ! -e "$A/checkpoints/step-000003" ] && [ -d "$A/checkpoints/step-000004" ] || fail "--overwrite kept the old run"
echo "run_dir: refused --overwrite kept the earlier run; a valid one replaced it"

# A failed start leaves nothing it created, and removes nothing it did not.
refused "$tmp/s1.log" "differs from the tokenizer" --config "$tmp/c.yaml" --set train.run_dir="$tmp/new/deep/run" \
  --set model.vocab_size=50
[ ! -e "$tmp/new" ] || fail "a failed run left $tmp/new behind"
mkdir "$tmp/empty" "$tmp/mine"
echo "notes" >"$tmp/mine/notes.txt"
for dir in empty mine; do
  refused "$tmp/s2.log" "differs from the tokenizer" --config "$tmp/c.yaml" --set train.run_dir="$tmp/$dir" \
    --set model.vocab_size=50
done
[ -d "$tmp/empty" ] && [ -z "$(ls -A "$tmp/empty")" ] || fail "$tmp/empty: $(ls -A "$tmp/empty")"
[ "$(ls -A "$tmp/mine")" = notes.txt ] || fail "$tmp/mine: $(ls -A "$tmp/mine")"
refused "$tmp/nan.log" "is not finite" --config "$tmp/c.yaml" --set train.run_dir="$tmp/nan" --set optim.lr=1e6 \
  --set train.steps=50 --set checkpoint.every=0
[ ! -e "$tmp/nan" ] || fail "a run that diverged before its first checkpoint left $tmp/nan"
logged=$(sed -n 's/.*\[train\] step \([0-9]*\)\/50 .*/\1/p' "$tmp/nan.log" | tail -1)
expect_in "$tmp/nan.log" "step $((logged + 1)): the "
echo "run_dir: failed starts left no files behind; NaN after logged step $logged named step $((logged + 1))"

# One trainer per directory; readers are welcome; the lock dies with its holder.
L=$tmp/long
"$rfa" --threads 1 train --config "$tmp/c.yaml" --set train.run_dir="$L" --set train.steps=1000000 \
  --set checkpoint.every=5 --set checkpoint.keep_last=2 2>"$tmp/long.log" &
pid=$!
wait_for "$L/checkpoints/latest" step-
refused "$tmp/l1.log" "is in use by another trainer (pid $pid, which holds $L/.lock)" --config "$tmp/c.yaml" \
  --set train.run_dir="$L"
refused "$tmp/l2.log" "is in use by another trainer (pid $pid" --config "$tmp/c.yaml" --set train.run_dir="$L" \
  --overwrite
refused "$tmp/l3.log" "is in use by another trainer (pid $pid" --resume "$L"
[ -f "$L/train.log" ] && [ -d "$L/checkpoints" ] || fail "a refused trainer removed the running one's files"
# Readers of a training run: the trainer prunes old checkpoints (keep_last 2, one every 5 steps of
# a tiny model: several a second), so the one `latest` named may vanish while a reader loads it.
for i in 1 2 3 4 5 6 7 8; do
  "$rfa" eval perplexity "$L" --json >"$tmp/ppl.json" 2>"$tmp/ppl.log" || { cat "$tmp/ppl.log" >&2; fail "eval $i of a training run"; }
done
kill -9 "$pid"
{ wait "$pid"; } 2>/dev/null || true
pid=
step=$(sed 's/step-0*//' "$L/checkpoints/latest")
train_ok "$tmp/l4.log" --resume "$L" --stop-after $((step + 2))
expect_in "$tmp/l4.log" "stopped after step $((step + 2))"
echo "run_dir: second trainer refused naming pid; resumed after SIGKILL from step $step"

# A run or checkpoint directory that takes no new files is refused before any step.
freeze() {  # root ignores permission bits; the immutable attribute binds it too
  if [ "$(id -u)" = 0 ]; then chattr +i "$1" 2>/dev/null && frozen=$1; else chmod a-w "$1" && frozen=$1; fi
}
thaw() {
  if [ "$(id -u)" = 0 ]; then chattr -i "$frozen"; else chmod u+w "$frozen"; fi
  frozen=
}
for dir in "$A/checkpoints" "$A"; do
  freeze "$dir" || true
  if [ -z "$frozen" ]; then
    echo "run_dir: SKIPPED the non-writable check: cannot make a directory read-only for root here (no chattr +i)"
    break
  fi
  what="train.run_dir"
  [ "$dir" = "$A" ] || what="the checkpoint directory"
  refused "$tmp/w.log" "$what '$dir' does not accept new files" --resume "$A" --set train.steps=20
  if grep -q "\[train\] step " "$tmp/w.log"; then cat "$tmp/w.log" >&2; fail "trained before refusing"; fi
  thaw
  echo "run_dir: a non-writable $dir refused before training"
done

# state.json is checksummed: an edited step is refused naming the file.
state=$A/checkpoints/step-000006/state.json
cp "$state" "$tmp/state.json"
for edit in 7 2; do
  sed "s/\"step\": 6,/\"step\": $edit,/" "$tmp/state.json" >"$state"
  refused "$tmp/e$edit.log" "$state: checksum" --resume "$A" --set train.steps=20
  expect_in "$tmp/e$edit.log" "Restore the original state.json"
done
cp "$tmp/state.json" "$state"
train_ok "$tmp/e.log" --resume "$A" --set train.steps=8
echo "run_dir: edited state.json steps refused"
