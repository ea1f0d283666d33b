#!/usr/bin/env bash
# `rfa tokenizer train` and `rfa data prepare` on a small generated corpus:
# prepare trains the missing tokenizer, then reuses it; outputs land where the
# config says; a missing corpus fails with its path on stderr.
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

echo "data_prepare: all checks passed"
