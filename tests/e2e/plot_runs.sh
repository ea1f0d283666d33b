#!/usr/bin/env bash
# scripts/plot-runs.py draws two runs into one PNG, and refuses what is not a run with a
# message naming it. `rfa train` ends by printing the plot command.
# Skipped (exit 77, ctest's Skipped, with a note) where Debian's python3 has no matplotlib: the suite needs no Python.
# Usage: plot_runs.sh <path-to-rfa> <source-dir>
set -euo pipefail
source "$(dirname "$0")/lib/common.bash"

plot="$src/scripts/plot-runs.py"
if ! /usr/bin/python3 -c "import matplotlib" 2>/dev/null; then
  echo "skipped: /usr/bin/python3 has no matplotlib (scripts/install-deps.sh installs python3-matplotlib)"
  exit 77
fi

corpus_write 2000
for kind in rfa_gate softmax; do
  config_write "$tmp/$kind.yaml" "$kind" \
    "run_dir: $tmp/run-$kind, batch_size: 4, steps: 20, log_every: 5, eval_every: 10, eval_batches: 2"
  "$rfa" --threads 2 train --config "$tmp/$kind.yaml" 2>"$tmp/$kind.log" || { cat "$tmp/$kind.log" >&2; fail "train $kind"; }
done
expect_in "$tmp/rfa_gate.log" "loss curves: scripts/plot-runs.py $tmp/run-rfa_gate -o $tmp/run-rfa_gate/loss.png"

"$plot" "$tmp/run-rfa_gate" "$tmp/run-softmax" -o "$tmp/both.png" >"$tmp/plot.out" 2>&1 \
  || { cat "$tmp/plot.out" >&2; fail "plot of two runs"; }
expect_in "$tmp/plot.out" "wrote $tmp/both.png (2 runs)"
# A PNG: the 8-byte signature, and more than an empty canvas.
[ "$(head -c 8 "$tmp/both.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "not a PNG"
[ "$(stat -c %s "$tmp/both.png")" -gt 20000 ] || fail "PNG suspiciously small"

# Mistakes name the thing and exit non-zero.
if "$plot" "$tmp/nope" -o "$tmp/x.png" 2>"$tmp/err1"; then fail "missing run accepted"; fi
expect_in "$tmp/err1" "'$tmp/nope' is not a directory"
mkdir -p "$tmp/empty-run"
if "$plot" "$tmp/empty-run" -o "$tmp/x.png" 2>"$tmp/err2"; then fail "run without metrics accepted"; fi
expect_in "$tmp/err2" "metrics.jsonl' does not exist"
if "$plot" "$tmp/run-softmax" -o "$tmp/x.jpg" 2>"$tmp/err3"; then fail "non-PNG output accepted"; fi
expect_in "$tmp/err3" "name it *.png"
[ ! -e "$tmp/x.png" ] || fail "a failed plot left a file"
echo "plot_runs: ok"
