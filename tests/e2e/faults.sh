#!/usr/bin/env bash
# Faults from outside: a write that fails half way (a full disk, here a file-size limit:
# `ulimit -f` with SIGXFSZ ignored makes write(2) fail with EFBIG, as ENOSPC would) and
# damaged run directories.
#   A checkpoint that cannot be written: the run exits non-zero saying which step was lost,
#     that the previous checkpoint is intact and how to continue; `latest` still names it,
#     no temp directory remains, and the resume works once the limit is gone.
#   `rfa tokenizer train` and `rfa data prepare` that cannot write leave no file and no temporary.
#   `rfa generate --save-state` that cannot be written leaves no half file under the name,
#     and an earlier state file there byte for byte.
#   Output to stdout that cannot be written (a full disk) exits 1 naming stdout, not 0.
#   A fresh run into a directory holding a config.yaml / metrics.jsonl that no rfa run wrote is
#     refused (it replaced them) unless --overwrite.
#   Weights made non-finite by an update (optim.lr 1e38) are not checkpointed.
#   SIGHUP stops a training run with a checkpoint (exit 0), and is ignored under nohup.
#   Where a tmpfs can be mounted (root): the same on a real full disk (ENOSPC), a start on a
#     full file system says to free space, and one without room for the checkpoints kept at once warns.
#   Absurd generation limits (-n 2^63-1, --temperature inf) are refused naming the option.
# Usage: faults.sh <path-to-rfa> <source-dir>
set -euo pipefail
source "$(dirname "$0")/lib/common.bash"
mnt=
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; [ -n "$mnt" ] && umount "$mnt" 2>/dev/null; rm -rf "$tmp"' EXIT

refused() {  # log-file expected-text command...: must exit non-zero (not by a signal) with the text
  local log=$1 text=$2 rc=0
  shift 2
  "$@" 2>"$log" >/dev/null || rc=$?
  [ "$rc" = 1 ] || { cat "$log" >&2; fail "$* exited $rc, expected 1"; }
  expect_in "$log" "$text"
}
limited() {  # kbytes command...: runs the command with files limited to that size
  local kb=$1
  shift
  (trap '' XFSZ; ulimit -f "$kb"; exec "$@")
}

corpus_write 1500
config_write "$tmp/c.yaml" rfa_gate "run_dir: $tmp/run, batch_size: 4, steps: 2, log_every: 1, eval_every: 0, eval_batches: 2"
"$rfa" --threads 1 data prepare --config "$tmp/c.yaml" 2>"$tmp/prep.log" || { cat "$tmp/prep.log" >&2; fail "data prepare"; }
run=$tmp/run
"$rfa" --threads 1 train --config "$tmp/c.yaml" 2>"$tmp/train.log" || { cat "$tmp/train.log" >&2; fail "train"; }

# Step 3's checkpoint cannot be written (optimizer.safetensors is ~300 KB, the limit 200 KB).
refused "$tmp/full.log" "the checkpoint of step 3 was not saved: cannot write" \
  limited 200 "$rfa" --threads 1 train --resume "$run" --set train.steps=3
expect_in "$tmp/full.log" "File too large"
expect_in "$tmp/full.log" "The previous checkpoint $run/checkpoints/step-000002 is intact"
expect_in "$tmp/full.log" "continue with: rfa train --resume $run"
[ "$(cat "$run/checkpoints/latest")" = step-000002 ] || fail "latest moved: $(cat "$run/checkpoints/latest")"
ls "$run/checkpoints" | grep -q tmp && fail "a temp directory was left: $(ls "$run/checkpoints")"
"$rfa" --threads 1 train --resume "$run" --set train.steps=3 2>"$tmp/resume.log" ||
  { cat "$tmp/resume.log" >&2; fail "resume after a failed checkpoint write"; }
expect_in "$tmp/resume.log" "checkpoint $run/checkpoints/step-000003"
echo "faults: a checkpoint write that failed kept step 2 and said how to continue"

# A tokenizer (~5 KB) and a token file (~230 KB) that cannot be written: no file, no temporary.
refused "$tmp/tok.log" "cannot write '$tmp/new.model.tmp." \
  limited 2 "$rfa" --threads 1 tokenizer train --config "$tmp/c.yaml" --set tokenizer.path="$tmp/new.model"
expect_in "$tmp/tok.log" "File too large"
refused "$tmp/tokens.log" "cannot write" limited 100 "$rfa" --threads 1 data prepare --config "$tmp/c.yaml" \
  --set data.tokens="$tmp/new.tokens"
ls "$tmp" | grep -q '^new\.' && fail "a failed write left $(ls "$tmp" | grep '^new\.')"
echo "faults: a tokenizer or token file that could not be written left nothing behind"

# --save-state: the first save of a state (~6 KB) to a file limited to 4 KB, then over an earlier one.
state=$tmp/s.state
refused "$tmp/state.log" "--save-state $state: cannot write '$state.tmp." \
  limited 4 "$rfa" --threads 1 generate "$run" -p "Line 1" -n 4 --save-state "$state"
expect_in "$tmp/state.log" "nothing was saved there"
[ -e "$state" ] && fail "a half-written $state was left ($(stat -c %s "$state") bytes)"
ls "$tmp" | grep -q 's.state.tmp' && fail "a temp state file was left"
"$rfa" --threads 1 generate "$run" -p "Line 1" -n 4 --save-state "$state" >/dev/null 2>"$tmp/state-ok.log" ||
  { cat "$tmp/state-ok.log" >&2; fail "generate --save-state"; }
cp "$state" "$tmp/before.state"
refused "$tmp/state2.log" "(the earlier state in it is intact)" \
  limited 4 "$rfa" --threads 1 generate "$run" -p "Line 2" -n 4 --save-state "$state"
cmp -s "$state" "$tmp/before.state" || fail "a failed --save-state changed the earlier $state"
# A writer killed mid-save leaves its temporary; the next save removes it (pid 999999999 is not running).
echo half >"$state.tmp.999999999"
"$rfa" --threads 1 generate "$run" -p "Line 3" -n 4 --save-state "$tmp/other.state" >/dev/null 2>&1 ||
  fail "generate --save-state other.state"
[ -e "$state.tmp.999999999" ] || fail "a save to another file removed $state's temporary"
"$rfa" --threads 1 generate "$run" -p "Line 1" -n 4 --save-state "$state" >/dev/null 2>"$tmp/state-again.log" ||
  { cat "$tmp/state-again.log" >&2; fail "generate --save-state over a stale temporary"; }
[ -e "$state.tmp.999999999" ] && fail "the stale temporary of a killed --save-state was left"
"$rfa" --threads 1 generate "$run" --load-state "$state" -p " more" -n 4 >/dev/null 2>"$tmp/load.log" ||
  { cat "$tmp/load.log" >&2; fail "the kept state does not load"; }
echo "faults: a --save-state that failed left no half file and kept the earlier state"
# Generation limits: -n 2^63-1 on a softmax model overflowed prompt + n into a negative KV cache
# size ("got -9223372036854775807", and signed overflow); it is now a memory refusal naming -n.
config_write "$tmp/sm.yaml" softmax "run_dir: $tmp/smrun, batch_size: 4, steps: 1, log_every: 1, eval_every: 0, eval_batches: 2"
"$rfa" --threads 1 train --config "$tmp/sm.yaml" 2>"$tmp/sm.log" || { cat "$tmp/sm.log" >&2; fail "train softmax"; }
refused "$tmp/huge.log" "not enough memory" "$rfa" --threads 1 generate "$tmp/smrun" -p "Line" -n 9223372036854775807
expect_in "$tmp/huge.log" "shrink -n (9223372036854775807)"
refused "$tmp/inf.log" "--temperature inf must be a finite number >= 0" \
  "$rfa" --threads 1 generate "$tmp/smrun" -p "Line" -n 2 --temperature inf
echo "faults: -n 2^63-1 and --temperature inf are refused by name"
# Output that cannot be written (/dev/full fails every write with ENOSPC, as `> file` on a full
# disk does) exited 0 with the text or the JSON missing.
for cmd in "generate $run -p Line -n 4" "eval perplexity $run --max-tokens 100 --json" \
  "train --config $tmp/c.yaml --dump-config"; do
  rc=0
  # shellcheck disable=SC2086  # the command's words
  "$rfa" --threads 1 $cmd >/dev/full 2>"$tmp/full-out.log" || rc=$?
  [ "$rc" = 1 ] || { cat "$tmp/full-out.log" >&2; fail "rfa $cmd >/dev/full exited $rc, expected 1"; }
  expect_in "$tmp/full-out.log" "cannot write the output to stdout"
done
echo "faults: output to a full disk exits 1"
# A directory that is not a run: its own config.yaml and metrics.jsonl were replaced by the run's.
mine=$tmp/mine
mkdir "$mine"
{ cat "$tmp/c.yaml"; echo "# my notes"; } >"$mine/config.yaml"
echo '{"mine": 1}' >"$mine/metrics.jsonl"
cp "$mine/config.yaml" "$tmp/mine.yaml"
refused "$tmp/mine.log" "holds files that no rfa run wrote and a run would replace with its own: $mine/config.yaml, $mine/metrics.jsonl" \
  "$rfa" --threads 1 train --config "$mine/config.yaml" --set train.run_dir="$mine" --stop-after 1
cmp -s "$mine/config.yaml" "$tmp/mine.yaml" || fail "a refused run changed the user's config.yaml"
[ "$(ls -A "$mine")" = "$(printf 'config.yaml\nmetrics.jsonl')" ] || fail "a refused run left files: $(ls -A "$mine")"
"$rfa" --threads 1 train --config "$tmp/mine.yaml" --set train.run_dir="$mine" --stop-after 1 --overwrite \
  2>"$tmp/mine-ow.log" || { cat "$tmp/mine-ow.log" >&2; fail "--overwrite into a directory with foreign files"; }
# A run that stopped before its first checkpoint left rfa's own files: a new run goes ahead.
rm -rf "$mine/checkpoints"
"$rfa" --threads 1 train --config "$tmp/mine.yaml" --set train.run_dir="$mine" --stop-after 1 2>"$tmp/mine-again.log" ||
  { cat "$tmp/mine-again.log" >&2; fail "a run over an earlier run's files (no checkpoint) was refused"; }
echo "faults: a directory with a user's config.yaml and metrics.jsonl is refused, rfa's own are not"
# An update that overflows (optim.lr 1e38) leaves inf weights after a finite loss: that checkpoint
# became `latest` (and pruned good ones) and failed only when loaded. It is refused now.
refused "$tmp/inf.log" "step 1: the update left weight tok_embedding[0] = -inf, so its checkpoint is not written" \
  "$rfa" --threads 1 train --config "$tmp/c.yaml" --set train.run_dir="$tmp/inf" --set optim.lr=1e38 \
  --set optim.warmup_steps=0 --set optim.lr_min=0 --set checkpoint.every=1
expect_in "$tmp/inf.log" "lower optim.lr"
[ -e "$tmp/inf" ] && fail "the refused run left $tmp/inf"
echo "faults: a non-finite update is not checkpointed"

# SIGHUP (the terminal closed) stops and saves like SIGTERM; under nohup (ignored) it changes nothing.
config_write "$tmp/long.yaml" rfa_gate "run_dir: $tmp/unused, batch_size: 4, steps: 1000000, log_every: 1, eval_every: 0, eval_batches: 2"
"$rfa" --threads 1 train --config "$tmp/long.yaml" --set train.run_dir="$tmp/hup" 2>"$tmp/hup.log" &
pid=$!
wait_for "$tmp/hup/metrics.jsonl" '"type":"train"'
kill -HUP "$pid"
rc=0
wait "$pid" || rc=$?
pid=
[ "$rc" = 0 ] || { cat "$tmp/hup.log" >&2; fail "SIGHUP: exit code $rc, expected 0"; }
expect_in "$tmp/hup.log" "signal 1 received: stopped"
"$rfa" --threads 1 eval perplexity "$tmp/hup" --max-tokens 100 >/dev/null 2>"$tmp/hup-eval.log" ||
  { cat "$tmp/hup-eval.log" >&2; fail "eval after SIGHUP"; }
(trap '' HUP; exec "$rfa" --threads 1 train --config "$tmp/long.yaml" --set train.run_dir="$tmp/nohup") 2>"$tmp/nohup.log" &
pid=$!
wait_for "$tmp/nohup/metrics.jsonl" '"type":"train"'
kill -HUP "$pid"
sleep 0.5
kill -0 "$pid" 2>/dev/null || { cat "$tmp/nohup.log" >&2; fail "an ignored SIGHUP ended the run"; }
kill -TERM "$pid"
wait "$pid" || fail "SIGTERM after an ignored SIGHUP"
pid=
expect_in "$tmp/nohup.log" "signal 15 received: stopped"
echo "faults: SIGHUP stops and saves; ignored (nohup) it does nothing"
# A real full disk (ENOSPC), where mounting a 2 MB tmpfs is allowed (root): a start on a full file
# system says to free space (it said chmod), and a checkpoint that does not fit keeps the previous one.
mkdir "$tmp/mnt"
if mount -t tmpfs -o size=2M tmpfs "$tmp/mnt" 2>/dev/null; then
  mnt=$tmp/mnt
  mkdir "$mnt/run"
  fallocate -l "$(($(df -k --output=avail "$mnt" | tail -1) - 4))k" "$mnt/filler"
  refused "$tmp/df-start.log" "No space left on device), so no checkpoint could be saved; free space on its file system" \
    "$rfa" --threads 1 train --config "$tmp/c.yaml" --set train.run_dir="$mnt/run"
  rm "$mnt/filler"
  # keep_last 2: the third checkpoint (~460 KB each) does not fit in 2 MB with the first two and the filler.
  fallocate -l 800k "$mnt/filler"
  refused "$tmp/df-run.log" "the checkpoint of step 3 was not saved" "$rfa" --threads 1 train --config "$tmp/c.yaml" \
    --set train.run_dir="$mnt/run" --set train.steps=5 --set checkpoint.every=1 --set checkpoint.keep_last=2
  expect_in "$tmp/df-run.log" "No space left on device (the file system is full: free space on it"
  # and it was said at the start: four checkpoints at once (keep_last 2, the best, the next) need more.
  expect_in "$tmp/df-run.log" "'s file system has"
  expect_in "$tmp/df-run.log" "more (4 at once of"
  expect_in "$tmp/df-run.log" "lower checkpoint.keep_last or set checkpoint.keep_best false"
  expect_in "$tmp/df-run.log" "The previous checkpoint $mnt/run/checkpoints/step-000002 is intact"
  [ "$(cat "$mnt/run/checkpoints/latest")" = step-000002 ] || fail "latest after a full disk: $(cat "$mnt/run/checkpoints/latest")"
  ls "$mnt/run/checkpoints" | grep -q tmp && fail "a temp directory was left on the full disk"
  rm "$mnt/filler"
  "$rfa" --threads 1 train --resume "$mnt/run" 2>"$tmp/df-resume.log" || { cat "$tmp/df-resume.log" >&2; fail "resume after freeing space"; }
  umount "$mnt"
  mnt=
  echo "faults: a full tmpfs: refused at start naming free space; a checkpoint that did not fit kept step 2"
else
  echo "faults: full-disk cases skipped (mounting a tmpfs needs root)"
fi
echo "faults: ok"
