#!/usr/bin/env bash
# tinyshakespeare characters, the nano shape (4 x 128, T 64, B 12), 2000 steps, one seed (1337).
set -euo pipefail
# Needs: build/rfa, data/tinyshakespeare.txt (scripts/get-data.sh) for the Shakespeare runs;
# data/mqar-t64-p8 from: rfa data mqar --out data/mqar-t64-p8 --seq-len 64 --pairs 8 --vocab 512 --train 40000 --val 1000 --seed 1
cd "$(dirname "$0")/.."
mkdir -p runs
export OMP_WAIT_POLICY=passive
for run in rfa_gate:0 rfa_gate:4 softmax:0 softmax:4; do
  kind=${run%:*}; conv=${run#*:}
  dir=runs/shk-$kind-conv$conv
  build/rfa --threads 2 train --config configs/shakespeare-char-$( [ $kind = softmax ] && echo softmax || echo rfa-gate ).yaml \
    --set attention.short_conv=$conv --set attention.output_gate=false --set train.run_dir=$dir --set checkpoint.every=0 --overwrite 2>$dir.log
  build/rfa --threads 2 eval perplexity $dir --split val --json >$dir.ppl.json 2>/dev/null
  build/rfa --threads 2 eval perplexity $dir --split val --sliding --json >$dir.sliding.json 2>/dev/null
  grep "done:" $dir.log
  cat $dir.ppl.json $dir.sliding.json
done
echo ALL DONE
