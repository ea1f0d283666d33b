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
