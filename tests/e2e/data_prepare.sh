#!/usr/bin/env bash
# `rfa tokenizer train` and `rfa data prepare` on a small generated corpus:
# prepare trains the missing tokenizer, then reuses it; outputs land where the
# config says; a missing corpus fails with its path on stderr; a corpus that is
# not text is refused before a tokenizer is trained; a failed prepare removes
# the tokenizer it trained; a killed prepare's temporary is removed by the next;
# a flipped bit in a token file's header is refused.
# Usage: data_prepare.sh <path-to-rfa> <source-dir>
set -euo pipefail
source "$(dirname "$0")/lib/common.bash"

corpus_write 3000

cat >"$tmp/cfg.yaml" <<YAML
tokenizer:
  path: $tmp/out/tok.model
  kind: bpe
  vocab_size: 320
data:
  corpus: $tmp/corpus.txt
  tokens: $tmp/out/corpus.tokens
  val_fraction: 0.25
YAML

# First run: no tokenizer yet, so prepare trains it (creating out/), then encodes.
"$rfa" data prepare --config "$tmp/cfg.yaml" 2>"$tmp/run1.log" || { cat "$tmp/run1.log" >&2; fail "first prepare"; }
expect_in "$tmp/run1.log" "does not exist yet; training it"
expect_in "$tmp/run1.log" "[data] prepared $tmp/out/corpus.tokens"
[ -s "$tmp/out/tok.model" ] || fail "no tokenizer model written"
[ -s "$tmp/out/corpus.tokens" ] || fail "no token file written"
head -c 8 "$tmp/out/corpus.tokens" | grep -q RFATOKS || fail "token file has no RFATOKS magic"

# Second run: the tokenizer exists and is reused unchanged.
model_sum=$(md5sum <"$tmp/out/tok.model")
"$rfa" data prepare --config "$tmp/cfg.yaml" 2>"$tmp/run2.log" || { cat "$tmp/run2.log" >&2; fail "second prepare"; }
grep -qF "training it" "$tmp/run2.log" && fail "second prepare retrained the tokenizer"
[ "$(md5sum <"$tmp/out/tok.model")" = "$model_sum" ] || fail "second prepare changed the tokenizer"

# tokenizer train always (re)trains, here as a char model at another path given by --set.
"$rfa" tokenizer train --config "$tmp/cfg.yaml" --set tokenizer.kind=char --set "tokenizer.path=$tmp/char.model" \
  2>"$tmp/train.log" || { cat "$tmp/train.log" >&2; fail "tokenizer train"; }
expect_in "$tmp/train.log" "training a char tokenizer"
[ -s "$tmp/char.model" ] || fail "tokenizer train wrote no model"

# A missing corpus fails, naming it.
if "$rfa" data prepare --config "$tmp/cfg.yaml" --set "data.corpus=$tmp/missing.txt" \
  --set "tokenizer.path=$tmp/other.model" 2>"$tmp/missing.log"; then
  fail "prepare with a missing corpus exited 0"
fi
expect_in "$tmp/missing.log" "$tmp/missing.txt"

# Not text (random bytes, deterministic): refused naming the file and the offset, leaving no tokenizer.
LC_ALL=C awk 'BEGIN { srand(1); for (i = 0; i < 65536; i++) printf "%c", int(rand() * 256) }' >"$tmp/random.bin"
if "$rfa" tokenizer train --config "$tmp/cfg.yaml" --set "tokenizer.corpus=$tmp/random.bin" \
  --set "tokenizer.path=$tmp/rand.model" 2>"$tmp/rand.log"; then
  fail "tokenizer train accepted random bytes"
fi
expect_in "$tmp/rand.log" "tokenizer corpus $tmp/random.bin is not"
expect_in "$tmp/rand.log" "at byte offset"
ls "$tmp"/rand.model* >/dev/null 2>&1 && fail "a failed tokenizer train left $(ls "$tmp"/rand.model*)"
# data prepare checks the corpus before training the missing tokenizer.
if "$rfa" data prepare --config "$tmp/cfg.yaml" --set "data.corpus=$tmp/random.bin" \
  --set "tokenizer.path=$tmp/rand.model" --set "data.tokens=$tmp/rand.tokens" 2>"$tmp/rand2.log"; then
  fail "data prepare accepted random bytes"
fi
expect_in "$tmp/rand2.log" "corpus (data.corpus) $tmp/random.bin is not"
grep -qF "training it" "$tmp/rand2.log" && fail "data prepare trained a tokenizer on random bytes"
ls "$tmp"/rand.model* "$tmp"/rand.tokens* >/dev/null 2>&1 && fail "a refused prepare left files behind"

# A prepare that fails after training its tokenizer removes that tokenizer (later runs would reuse it).
echo "a file, not a directory" >"$tmp/blocker"
if "$rfa" data prepare --config "$tmp/cfg.yaml" --set "tokenizer.path=$tmp/new.model" \
  --set "data.tokens=$tmp/blocker/x.tokens" 2>"$tmp/blocked.log"; then
  fail "prepare into a path under a file exited 0"
fi
expect_in "$tmp/blocked.log" "removed the tokenizer $tmp/new.model trained by this run"
[ ! -e "$tmp/new.model" ] || fail "the failed prepare left the tokenizer it trained"
# ... but never a tokenizer that was there before.
if "$rfa" data prepare --config "$tmp/cfg.yaml" --set "data.tokens=$tmp/blocker/x.tokens" 2>"$tmp/blocked2.log"; then
  fail "prepare into a path under a file exited 0"
fi
[ "$(md5sum <"$tmp/out/tok.model")" = "$model_sum" ] || fail "a failed prepare touched the existing tokenizer"

# A killed prepare leaves its temporary file; the next prepare removes it (the pid is dead).
line=$(head -1 "$tmp/corpus.txt")
(yes "$line" || true) | head -c 40000000 >"$tmp/big.txt"
"$rfa" --threads 1 data prepare --config "$tmp/cfg.yaml" --set "data.corpus=$tmp/big.txt" 2>/dev/null &
pid=$!
for _ in $(seq 1 600); do
  ls "$tmp"/out/corpus.tokens.tmp.* >/dev/null 2>&1 && break
  sleep 0.05
done
stale=$(ls "$tmp"/out/corpus.tokens.tmp.* 2>/dev/null) || fail "prepare of 40 MB wrote no temporary in 30 s"
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
pid=
[ -e "$stale" ] || fail "the killed prepare left no temporary (it should: SIGKILL runs no cleanup)"
"$rfa" data prepare --config "$tmp/cfg.yaml" 2>"$tmp/stale.log" || { cat "$tmp/stale.log" >&2; fail "prepare after kill"; }
expect_in "$tmp/stale.log" "removed $stale, left behind by an encoding that was killed"
[ ! -e "$stale" ] || fail "the stale temporary $stale is still there"

# The header is checksummed: a flipped bit in the token count is refused by name.
cp "$tmp/out/corpus.tokens" "$tmp/flip.tokens"
byte=$(od -An -tu1 -j24 -N1 "$tmp/flip.tokens" | tr -d ' ')
printf "\\x$(printf %02x $((byte ^ 1)))" | dd of="$tmp/flip.tokens" bs=1 seek=24 conv=notrunc 2>/dev/null
cmp -s "$tmp/out/corpus.tokens" "$tmp/flip.tokens" && fail "the bit flip did not change the file"
config_write "$tmp/run.yaml" rfa_gate "run_dir: $tmp/run, batch_size: 2, steps: 1, eval_every: 0"
if "$rfa" train --config "$tmp/run.yaml" --set "tokenizer.path=$tmp/out/tok.model" --set tokenizer.kind=bpe \
  --set tokenizer.vocab_size=320 --set "data.tokens=$tmp/flip.tokens" 2>"$tmp/flip.log"; then
  fail "train read a token file with a flipped header bit"
fi
expect_in "$tmp/flip.log" "token file $tmp/flip.tokens is corrupt: its header checksum"

# My corpus, someone else's tokenizer. With tokenizer.path and data.tokens "" (the defaults), another corpus
# gets its own tokenizer and token file next to it, named after it (the default once named one tokenizer for
# every corpus); a tokenizer trained on another corpus than the configured one is used, with a warning naming both.
sed 's/the quick brown fox/a slow grey cat/' "$tmp/corpus.txt" >"$tmp/other.txt"
"$rfa" data prepare --config "$tmp/cfg.yaml" --set tokenizer.path= --set data.tokens= --set "data.corpus=$tmp/other.txt" \
  2>"$tmp/own.log" || { cat "$tmp/own.log" >&2; fail "prepare with the default paths"; }
expect_in "$tmp/own.log" "[tokenizer] $tmp/other-bpe320.model does not exist yet; training it"
expect_in "$tmp/own.log" "[data] prepared $tmp/other.txt.tokens"
grep -qF "was trained on" "$tmp/own.log" && fail "a tokenizer of this very corpus was called another's"
"$rfa" data prepare --config "$tmp/cfg.yaml" --set "data.corpus=$tmp/other.txt" --set "data.tokens=$tmp/other.tokens" \
  2>"$tmp/foreign.log" || { cat "$tmp/foreign.log" >&2; fail "prepare with another corpus's tokenizer"; }
expect_in "$tmp/foreign.log" "[tokenizer] $tmp/out/tok.model was trained on $tmp/corpus.txt, not on the configured corpus \
$tmp/other.txt (data.corpus); its pieces fit the other text. For a tokenizer of $tmp/other.txt: set tokenizer.path to \
\"\" (then $tmp/other-bpe320.model) or to a new file, or retrain this one with \`rfa tokenizer train\`"
# The same file by another spelling is the same corpus.
"$rfa" data prepare --config "$tmp/cfg.yaml" --set "data.corpus=$tmp/./corpus.txt" 2>"$tmp/same.log" ||
  { cat "$tmp/same.log" >&2; fail "prepare with the corpus spelt another way"; }
grep -qF "was trained on" "$tmp/same.log" && fail "the tokenizer's own corpus, spelt $tmp/./corpus.txt, was called another"

# A directory and a list follow the same rule: a directory's tokenizer and token file go beside it (inside, they
# would join the corpus), a list's beside its first path, named after it and how many paths follow it. The model
# records the corpus as configured (not the text extracted for its training), so the next run has nothing to warn.
mkdir -p "$tmp/books"
cp "$tmp/corpus.txt" "$tmp/books/1.txt"
cp "$tmp/other.txt" "$tmp/books/2.txt"
prepare_quiet() {  # prepare_quiet <log> args...: prepare succeeds and calls no tokenizer another corpus's
  local log=$1
  shift
  "$rfa" data prepare --config "$tmp/cfg.yaml" --set tokenizer.path= "$@" 2>"$log" ||
    { cat "$log" >&2; fail "prepare $*"; }
  if grep -qF "was trained on" "$log"; then cat "$log" >&2; fail "prepare $* warned of a foreign tokenizer"; fi
}
prepare_quiet "$tmp/dir1.log" --set data.tokens= --set "data.corpus=$tmp/books/"
expect_in "$tmp/dir1.log" "[tokenizer] $tmp/books-bpe320.model does not exist yet; training it"
expect_in "$tmp/dir1.log" "[data] prepared $tmp/books.tokens"
prepare_quiet "$tmp/dir2.log" --set data.tokens= --set "data.corpus=$tmp/books"  # the same directory
grep -qF "training it" "$tmp/dir2.log" && fail "the directory spelt without its '/' got another tokenizer"
[ "$(ls "$tmp/books")" = "$(printf '1.txt\n2.txt')" ] || fail "a derived file landed inside the corpus directory"
# The list as a YAML block sequence; --dump-config prints it as one string, which loads back the same.
sed "s#^  corpus: .*#  corpus:\n    - $tmp/corpus.txt\n    - $tmp/books#; s#^  path: .*#  path: \"\"#" \
  "$tmp/cfg.yaml" >"$tmp/list.yaml"
"$rfa" data prepare --config "$tmp/list.yaml" --dump-config >"$tmp/list-dump.yaml"
expect_in "$tmp/list-dump.yaml" "  corpus: \"$tmp/corpus.txt,$tmp/books\""
"$rfa" data prepare --config "$tmp/list-dump.yaml" --dump-config | cmp -s - "$tmp/list-dump.yaml" ||
  fail "the dump of a list config does not load back to the same"
"$rfa" data prepare --config "$tmp/list.yaml" 2>"$tmp/list1.log" || { cat "$tmp/list1.log" >&2; fail "prepare a list"; }
expect_in "$tmp/list1.log" "[tokenizer] $tmp/corpus+1-bpe320.model does not exist yet; training it"
grep -qF "was trained on" "$tmp/list1.log" && fail "a list's tokenizer was called another corpus's"
prepare_quiet "$tmp/list2.log" --set "data.corpus=$tmp/corpus.txt,$tmp/books/"
grep -qF "training it" "$tmp/list2.log" && fail "the list given by --set got another tokenizer"

echo "data_prepare: all checks passed"
