#!/usr/bin/env bash
# From a fresh Debian machine to a trained model: installs what is missing, builds,
# fetches the offline default corpus (the King James Bible from Debian's bible-kjv),
# trains the quick default config, evaluates it and prints a short sample.
# Usage: scripts/quickstart.sh [CONFIG] [--set key=value ...]   (default configs/kjv-quick.yaml)
set -euo pipefail
cd "$(dirname "$0")/.."
config=configs/kjv-quick.yaml
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then config=$1; shift; fi

scripts/install-deps.sh
scripts/build.sh
# Reads one key of the merged config (section, key), e.g. data corpus. awk reads the whole dump
# (no early exit): rfa writing into a pipe already closed would die of SIGPIPE and, under pipefail,
# stop the script (exit 141).
config_value() {
  local section=$1 key=$2; shift 2
  build/rfa train --config "$config" "$@" --dump-config |
    awk -v s="$section:" -v k="$key:" '/^[a-z]/ {sec = $1} !found && sec == s && $1 == k {v = $2; gsub(/"/, "", v); print v; found = 1}'
}
corpus=$(config_value data corpus "$@")
run_dir=$(config_value train run_dir "$@")
case "$corpus" in
  */kjv.txt) scripts/get-data.sh kjv ;;
  */tinyshakespeare.txt) scripts/get-data.sh shakespeare ;;
esac

echo "[quickstart] training $config into $run_dir"
build/rfa train --config "$config" "$@" --overwrite  # the quick start always trains afresh
echo "[quickstart] validation perplexity"
build/rfa eval perplexity "$run_dir" --split val
echo "[quickstart] a sample:"
build/rfa generate "$run_dir" --prompt "And God said" -n 120 --seed 1
echo
