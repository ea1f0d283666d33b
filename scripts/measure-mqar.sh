#!/usr/bin/env bash
# MQAR T 64, 8 pairs, vocab 512: 4 x 128 models, 3000 steps of 32 examples, one seed.
set -euo pipefail
# Needs: build/rfa, data/tinyshakespeare.txt (scripts/get-data.sh) for the Shakespeare runs;
# data/mqar-t64-p8 from: rfa data mqar --out data/mqar-t64-p8 --seq-len 64 --pairs 8 --vocab 512 --train 40000 --val 1000 --seed 1
cd "$(dirname "$0")/.."
mkdir -p runs
export OMP_WAIT_POLICY=passive
for run in softmax:0 rfa_gate:0 softmax:4 rfa_gate:4; do
  kind=${run%:*}; conv=${run#*:}
  dir=runs/mqar-$kind-conv$conv
  build/rfa --threads 2 train --config data/mqar-t64-p8/mqar.yaml --set attention.kind=$kind \
    --set attention.short_conv=$conv --set train.run_dir=$dir --set train.steps=3000 --set train.batch_size=32 \
    --set train.eval_every=500 --set checkpoint.every=0 --set optim.lr=1e-3 --set optim.warmup_steps=100 \
    --overwrite 2>$dir.log
  build/rfa --threads 2 eval accuracy $dir --json >$dir.acc.json 2>/dev/null
  cat $dir.acc.json
done
echo ALL DONE
