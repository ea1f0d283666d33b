# Sourced by the e2e scripts, which ctest runs as `bash <script> <path-to-rfa> <source-dir>`:
# strict mode, $rfa and $src from the arguments, a scratch $tmp removed on exit
# (with the background rfa in $pid, if any), and the checks and inputs they share.
# Not named *.sh: tests/CMakeLists.txt registers every tests/e2e/*.sh as a test.
# The script sets -euo pipefail before sourcing this.
rfa=$1
src=$2
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
expect_in() {  # expect_in <file> <text>: the file contains the text
  grep -qF -- "$2" "$1" || { echo "--- $1:" >&2; cat "$1" >&2; fail "expected '$2' in $1"; }
}

# metrics.jsonl lines (stdin) without the fields that measure time.
untimed() { sed -E 's/,"(tokens_per_s|ms_per_step|elapsed_s)":[^,}]*//g'; }
# The lines (stdin) of steps >= $1.
from_step() { awk -v s="$1" 'match($0, /"step":[0-9]+/) { if (substr($0, RSTART + 7, RLENGTH - 7) + 0 >= s) print }'; }

# corpus_write <lines>: $tmp/corpus.txt, numbered lines of one English sentence.
corpus_write() {
  for i in $(seq 1 "$1"); do
    echo "Line $i: the quick brown fox jumps over the lazy dog, $((i * 7919 % 1000)) times; said Zoe."
  done >"$tmp/corpus.txt"
}

# config_write <file> <kind> <train entries> [<optim entries>] [<checkpoint entries>]: a run config
# for the tiny model (L=2, C=32, H=2, T=32, F=8, chunks of 16) on $tmp/corpus.txt with a char
# tokenizer and token file in $tmp/data.
config_write() {
  cat >"$1" <<YAML
model: {n_layers: 2, d_model: 32, n_heads: 2, context_length: 32}
attention: {kind: $2, num_features: 8, chunk_size: 16}
tokenizer: {path: $tmp/data/char.model, kind: char, vocab_size: 300}
data: {corpus: $tmp/corpus.txt, tokens: $tmp/data/corpus.tokens, val_fraction: 0.1}
train: {$3}
optim: {${4:-lr: 3.0e-3, warmup_steps: 5}}
checkpoint: {${5:-every: 0}}
YAML
}

# spawn <command...>: runs the command in the background, its pid in $pid; `reap` waits for it to
# end and sets $rc to its exit code. The exit code comes from a waiter subshell that forks nothing
# else, not from this shell's `wait`: under load, with thousands of short-lived children (sleep,
# grep, $(...)), bash 5.2 once lost a background job's record ("wait_for: No record of process N")
# and `wait` returned 127 for a run that had exited as it should.
spawn() {
  rm -f "$tmp/spawn.pid" "$tmp/spawn.rc"
  (
    "$@" &
    echo $! >"$tmp/spawn.pid.tmp" && mv "$tmp/spawn.pid.tmp" "$tmp/spawn.pid"
    code=0
    wait $! || code=$?
    echo "$code" >"$tmp/spawn.rc.tmp" && mv "$tmp/spawn.rc.tmp" "$tmp/spawn.rc"
  ) &
  spawn_waiter=$!
  for _ in $(seq 1 1000); do
    [ -s "$tmp/spawn.pid" ] && break
    sleep 0.01
  done
  pid=$(cat "$tmp/spawn.pid") || fail "spawn: no pid for $*"
}
# reap: until the spawned command has ended (120 s), then $rc is its exit code and $pid is cleared.
reap() {
  for _ in $(seq 1 12000); do
    [ -s "$tmp/spawn.rc" ] && break
    sleep 0.01
  done
  [ -s "$tmp/spawn.rc" ] || fail "reap: pid $pid still running after 120 s"
  rc=$(cat "$tmp/spawn.rc")
  wait "$spawn_waiter" 2>/dev/null || true
  pid=
}

# wait_for <file> <text>: until a line of the file contains text; fails after 60 s.
wait_for() {
  for _ in $(seq 1 600); do
    grep -q -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  fail "timed out waiting for '$2' in $1"
}

# state_step <checkpoint dir>: the step its state.json records.
state_step() { sed -n 's/.*"step": *\([0-9]*\).*/\1/p' "$1/state.json"; }

# train_ok <log> args...: `rfa train args` must succeed (stderr to log, shown on failure);
# --threads $train_threads (default 2).
train_ok() {
  local log=$1
  shift
  "$rfa" --threads "${train_threads:-2}" train "$@" 2>"$log" || { cat "$log" >&2; fail "rfa train $*"; }
}

# checkpoint_files_same <run_a> <run_b> <step-dir> <file>...: the files of that checkpoint are byte-identical.
checkpoint_files_same() {
  local a=$1 b=$2 step=$3 f
  shift 3
  for f in "$@"; do
    cmp -s "$a/checkpoints/$step/$f" "$b/checkpoints/$step/$f" || fail "$b/checkpoints/$step/$f differs from $a's"
  done
}
