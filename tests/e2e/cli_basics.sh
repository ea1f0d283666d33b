#!/usr/bin/env bash
# The command line's basics: help, version, --dump-config with --config and
# --set, and that configuration mistakes exit non-zero with the message on stderr.
# Usage: cli_basics.sh <path-to-rfa> <source-dir>
set -euo pipefail
source "$(dirname "$0")/lib/common.bash"

# Help and version.
"$rfa" --help >"$tmp/help" 2>&1 || fail "rfa --help exited non-zero"
expect_in "$tmp/help" "Usage:"
expect_in "$tmp/help" "tokenizer"
"$rfa" --version >"$tmp/version" 2>&1 || fail "rfa --version exited non-zero"
# The version, and the CPU level the kernels were built for (docs/cpu-targets.md).
grep -qE '^rfa [0-9]+\.[0-9]+\.[0-9]+, kernels for [a-z0-9-]+ \([A-Za-z0-9+-]+, [0-9]+-byte vectors\)$' "$tmp/version" ||
  fail "unexpected version line: $(cat "$tmp/version")"
"$rfa" tokenizer train --help >"$tmp/sub_help" 2>&1 || fail "rfa tokenizer train --help exited non-zero"
expect_in "$tmp/sub_help" "--dump-config"
expect_in "$tmp/sub_help" "--set"

# --dump-config prints the merge of file and --set, in that order of precedence, on stdout only.
"$rfa" tokenizer train --config "$src/configs/kjv-quick.yaml" --set model.n_layers=3 --set optim.lr=5e-4 \
  --set optim.lr=4e-4 --dump-config >"$tmp/dump.yaml" 2>"$tmp/dump.err" || fail "--dump-config exited non-zero"
expect_in "$tmp/dump.yaml" "  n_layers: 3  #"          # --set over the file's 4
expect_in "$tmp/dump.yaml" "  lr: 0.0004  #"           # the last --set wins
expect_in "$tmp/dump.yaml" "  vocab_size: 2048  #"     # from the file
expect_in "$tmp/dump.yaml" "  keep_best: true  #"      # a default
[ -s "$tmp/dump.err" ] && fail "--dump-config wrote to stderr: $(cat "$tmp/dump.err")"

# The dump loads back to the same configuration.
"$rfa" tokenizer train --config "$tmp/dump.yaml" --dump-config >"$tmp/dump2.yaml" || fail "the dump does not load"
cmp -s "$tmp/dump.yaml" "$tmp/dump2.yaml" || fail "dump of a dump differs: $(diff "$tmp/dump.yaml" "$tmp/dump2.yaml")"

# An unknown --set key: non-zero exit, message with suggestion on stderr, nothing on stdout.
if "$rfa" tokenizer train --set model.n_layer=3 --dump-config >"$tmp/bad.out" 2>"$tmp/bad.err"; then
  fail "an unknown --set key exited 0"
fi
expect_in "$tmp/bad.err" "unknown key 'model.n_layer'; did you mean 'model.n_layers'?"
[ -s "$tmp/bad.out" ] && fail "an unknown key still printed to stdout"

# An unknown key in a file names the file and line.
printf 'model:\n  d_model: 128\n  n_layer: 4\n' >"$tmp/bad.yaml"
if "$rfa" tokenizer train --config "$tmp/bad.yaml" --dump-config >/dev/null 2>"$tmp/bad_file.err"; then
  fail "an unknown key in a file exited 0"
fi
expect_in "$tmp/bad_file.err" "$tmp/bad.yaml:3: unknown key 'model.n_layer'; did you mean 'model.n_layers'?"

# A malformed --set and an impossible value.
if "$rfa" tokenizer train --set model.n_layers --dump-config >/dev/null 2>"$tmp/form.err"; then
  fail "a --set without '=' exited 0"
fi
expect_in "$tmp/form.err" "expected the form key.path=value"
if "$rfa" tokenizer train --set model.n_heads=5 --dump-config >/dev/null 2>"$tmp/heads.err"; then
  fail "n_heads not dividing d_model exited 0"
fi
expect_in "$tmp/heads.err" "'model.n_heads' is 5, which does not divide 'model.d_model' = 128"

# A word that is not a command is named, with the commands there are.
if "$rfa" frobnicate >/dev/null 2>"$tmp/cmd.err"; then fail "rfa frobnicate exited 0"; fi
expect_in "$tmp/cmd.err" "'frobnicate' is not a command of rfa; the commands are: tokenizer, data, train, bench, generate, eval"
if "$rfa" bench frob >/dev/null 2>"$tmp/sub.err"; then fail "rfa bench frob exited 0"; fi
expect_in "$tmp/sub.err" "'frob' is not a command of rfa bench; the commands are: train, decode"
if "$rfa" eval >/dev/null 2>"$tmp/none.err"; then fail "rfa eval exited 0"; fi
expect_in "$tmp/none.err" "rfa eval needs a command: perplexity"

# --help (or --help-all, --version) with a word that is not a command is refused exactly as the word alone:
# a script probing `rfa plot --help` must not see the main help and exit 0.
same_refusal() {  # same_refusal <words...>: `rfa words` and `rfa words --help` exit alike, non-zero, same stderr
  local rc=0 rc_help=0 flag
  "$rfa" "$@" >"$tmp/probe.out" 2>"$tmp/probe.err" || rc=$?
  [ "$rc" != 0 ] || fail "rfa $* exited 0"
  for flag in --help -h; do
    rc_help=0
    "$rfa" "$@" "$flag" >"$tmp/probe-help.out" 2>"$tmp/probe-help.err" || rc_help=$?
    [ "$rc_help" = "$rc" ] || fail "rfa $* $flag exited $rc_help, rfa $* exited $rc"
    cmp -s "$tmp/probe.err" "$tmp/probe-help.err" ||
      fail "rfa $* $flag said '$(cat "$tmp/probe-help.err")', rfa $* said '$(cat "$tmp/probe.err")'"
    [ -s "$tmp/probe-help.out" ] && fail "rfa $* $flag printed to stdout: $(head -3 "$tmp/probe-help.out")"
  done
  return 0
}
same_refusal plot
expect_in "$tmp/probe-help.err" "'plot' is not a command of rfa; the commands are: tokenizer, data, train, bench"
same_refusal bench plot
expect_in "$tmp/probe-help.err" "'plot' is not a command of rfa bench; the commands are: train, decode"
same_refusal eval foo
expect_in "$tmp/probe-help.err" "'foo' is not a command of rfa eval; the commands are: perplexity"
same_refusal tokenizer frob
same_refusal train foo  # train takes no word: CLI11's own refusal, with or without --help
expect_in "$tmp/probe-help.err" "The following argument was not expected: foo"
for args in "--help plot" "--help-all plot" "plot --help-all" "plot --version"; do
  # shellcheck disable=SC2086  # the words are meant to split
  "$rfa" $args >/dev/null 2>"$tmp/before.err" && fail "rfa $args exited 0"
  expect_in "$tmp/before.err" "'plot' is not a command of rfa"
done
# Real commands still answer --help with exit 0.
for words in "" "bench" "eval" "eval perplexity" "bench decode" "data prepare"; do
  # shellcheck disable=SC2086  # the words are meant to split
  "$rfa" $words --help >"$tmp/ok.out" 2>&1 || fail "rfa $words --help exited non-zero"
  expect_in "$tmp/ok.out" "Usage:"
done

# A log file in a missing directory is refused by path, before any work.
if "$rfa" --log-file "$tmp/no/such/dir/x.log" tokenizer train --dump-config >/dev/null 2>"$tmp/log.err"; then
  fail "--log-file in a missing directory exited 0"
fi
expect_in "$tmp/log.err" "--log-file '$tmp/no/such/dir/x.log': directory '$tmp/no/such/dir' does not exist"
[ -e "$tmp/no" ] && fail "--log-file created the missing directory"

# Integer flags name the flag, the value and the range, readably (no 300-digit bound).
expect_flag_error() {  # expect_flag_error <message> <rfa args...>
  local message=$1
  shift
  if "$rfa" "$@" >/dev/null 2>"$tmp/flag.err"; then fail "rfa $* exited 0"; fi
  expect_in "$tmp/flag.err" "$message"
  if grep -qE '[0-9]{30}' "$tmp/flag.err"; then fail "rfa $* printed a very long number: $(cat "$tmp/flag.err")"; fi
}
expect_flag_error "--seed: -1 is not an integer in [0, 2^64-1]" generate "$tmp" -p hi --seed -1
expect_flag_error "--seed: 18446744073709551616 is not an integer in [0, 2^64-1]" generate "$tmp" -p hi \
  --seed 18446744073709551616
expect_flag_error "--prefill-segment: 0 is not an integer in [1, 2^31-1]" generate "$tmp" -p hi --prefill-segment 0
expect_flag_error "--stride: -1 is not an integer in [0, 2^31-1]" eval perplexity "$tmp" --sliding --stride -1
expect_flag_error "--stop-after: 0 is not an integer in [1, 2^63-1]" train --stop-after 0
expect_flag_error "--window: -2 is not an integer in [0, 2^31-1]" generate "$tmp" -p hi --window -2
expect_flag_error "--steps: 0 is not an integer in [1, 2^31-1]" bench train --steps 0
expect_flag_error "--threads: 2000 is not an integer in [0, 1024]" --threads 2000 bench train

# Config files: a directory, an empty file, a repeated section, a second document.
expect_config_error() {  # expect_config_error <file> <message>
  if "$rfa" train --config "$1" --dump-config >/dev/null 2>"$tmp/cfg.err"; then fail "--config $1 exited 0"; fi
  expect_in "$tmp/cfg.err" "$2"
}
mkdir -p "$tmp/cfgdir"
expect_config_error "$tmp/cfgdir" "config file '$tmp/cfgdir' is a directory; give a YAML file"
printf '# nothing yet\n' >"$tmp/empty.yaml"
expect_config_error "$tmp/empty.yaml" "$tmp/empty.yaml: the config file is empty"
printf 'model:\n  n_layers: 2\ntrain:\n  steps: 3\nmodel:\n  d_model: 64\n' >"$tmp/twice.yaml"
expect_config_error "$tmp/twice.yaml" "$tmp/twice.yaml:5: section 'model:' is given twice (first on line 1)"
printf 'model:\n  n_layers: 2\n---\nmodel:\n  d_model: 64\n' >"$tmp/docs.yaml"
expect_config_error "$tmp/docs.yaml" "$tmp/docs.yaml:3: a second YAML document starts here ('---')"

# Absurd sizes are refused by the key's bound; a model that fits no machine by the memory
# estimate, before the run directory or the data are touched.
expect_flag_error "'model.d_model' is '1000000000'; it must be in [1, 65536]" train --set model.d_model=1000000000
expect_flag_error "'model.n_layers' is '100000'; it must be in [1, 1024]" train --set model.n_layers=100000
expect_flag_error "'train.grad_accum' is '1000000000'; it must be in [1, 65536]" train --set train.grad_accum=1000000000
expect_flag_error "not enough memory: training this model needs about" train --set model.d_model=65536 \
  --set model.n_layers=1024 --set train.run_dir="$tmp/huge_run" --set data.corpus="$tmp/missing.txt"
expect_in "$tmp/flag.err" "the largest part is AdamW m and v: shrink model.n_layers (1024), model.d_model (65536)"
[ -e "$tmp/huge_run" ] && fail "a run refused for memory created its run directory"
# 2^30 positions of softmax KV cache: terabytes, refused before the rfa_gate half runs.
expect_flag_error "not enough memory: the softmax decoding benchmark needs about" bench decode --positions 64,1073741824
expect_in "$tmp/flag.err" "the largest part is KV cache: shrink --positions (largest 1073741824)"

echo "cli_basics: all checks passed"
