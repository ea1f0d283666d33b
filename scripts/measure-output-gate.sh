#!/usr/bin/env bash
# tinyshakespeare characters, the nano shape (4 x 128, T 64, B 12), 2000 steps, one seed (1337):
# attention.output_gate (docs/output-gate.md) on RFA-Gate with and without the short convolution and on
# softmax with it; the same recipe as scripts/measure-short-conv.sh, whose runs give the baselines.
# (The shipped configs now carry the option and the convolution; every run names both.)
# Then the option's training cost: rfa bench train, without and with it, alternating.
set -euo pipefail
# Needs: build/rfa, data/tinyshakespeare.txt (scripts/get-data.sh).
cd "$(dirname "$0")/.."
mkdir -p runs
export OMP_WAIT_POLICY=passive
config_of() { [ "$1" = softmax ] && echo configs/shakespeare-char-softmax.yaml || echo configs/shakespeare-char-rfa-gate.yaml; }
for run in rfa_gate:4 rfa_gate:0 softmax:4; do
  kind=${run%:*}; conv=${run#*:}
  dir=runs/shk-$kind-conv$conv-gate
  build/rfa --threads 2 train --config "$(config_of $kind)" --set attention.short_conv=$conv \
    --set attention.output_gate=true --set train.run_dir=$dir --set checkpoint.every=0 --overwrite 2>$dir.log
  build/rfa --threads 2 eval perplexity $dir --split val --json >$dir.ppl.json 2>/dev/null
  build/rfa --threads 2 eval perplexity $dir --split val --sliding --json >$dir.sliding.json 2>/dev/null
  grep "done:" $dir.log
  cat $dir.ppl.json $dir.sliding.json
done
# The control: rfa_gate without the option, as many extra parameters in the FFN (ffn_hidden 400, not 352).
dir=runs/shk-rfa_gate-conv0-ffn400
build/rfa --threads 2 train --config configs/shakespeare-char-rfa-gate.yaml --set model.ffn_hidden=400 \
  --set attention.short_conv=0 --set attention.output_gate=false \
  --set train.run_dir=$dir --set checkpoint.every=0 --overwrite 2>$dir.log
build/rfa --threads 2 eval perplexity $dir --split val --json >$dir.ppl.json 2>/dev/null
grep "done:" $dir.log
cat $dir.ppl.json
for rep in 1 2 3; do
  for gate in false true; do
    echo "bench rfa_gate output_gate=$gate (repetition $rep)"
    build/rfa --threads 2 bench train --config configs/shakespeare-char-rfa-gate.yaml \
      --set attention.short_conv=0 --set attention.output_gate=$gate --steps 200 --warmup 10 2>&1 | grep -i "ms/step\|median" || true
  done
done
echo ALL DONE
