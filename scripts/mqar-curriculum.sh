#!/usr/bin/env bash
# MQAR by a curriculum (docs/recall.md, "A curriculum"): one 4 x 128 rfa_gate model (short
# convolution, output gate, gate bias 5, lr 3e-3, batches of 32) trained on 8 pairs at T 64, then
# fine-tuned (train.init_from) on 16 pairs at T 128, then on 64 pairs at T 256, each stage with
# sigma held at or above SIGMA_FLOOR. Prints each stage's answer accuracy over its whole
# validation split (rfa eval accuracy --json).
# Usage: scripts/mqar-curriculum.sh [WORK]        (WORK default runs/mqar-curriculum; about half
#        an hour: the three stages take about 6, 6 and 13 minutes on one Zen 5 core)
#   env: RFA (build/rfa), THREADS (1), SEED (1), D (num_features, 32), SIGMA_FLOOR (3; 0 = off;
#        stage 1 reaches it over its first 1500 updates, the fine-tunes hold it from the first),
#        STEPS1 / STEPS2 / STEPS3 (3000 / 1500 / 1500), SETS (more --set KEY=VALUE, space-separated)
# Each stage's run directory is WORK/stage{1,2,3}; a stage whose checkpoint exists is not rerun.
set -euo pipefail
cd "$(dirname "$0")/.."
rfa=${RFA:-build/rfa}
work=${1:-runs/mqar-curriculum}
threads=${THREADS:-1}
floor=${SIGMA_FLOOR:-3}
read -r -a more <<<"${SETS:-}"
sets=()
for s in "${more[@]}"; do sets+=(--set "$s"); done
[ -x "$rfa" ] || { echo "no rfa binary at $rfa; build with scripts/build.sh" >&2; exit 2; }
mkdir -p "$work"
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}

# data <T> <pairs>: the examples of a stage (the same generator seed as docs/recall.md's runs).
data() {
  local dir=$work/data-t$1-p$2
  [ -f "$dir/mqar.tokens" ] || "$rfa" data mqar --out "$dir" --seq-len "$1" --pairs "$2" --vocab 512 \
    --train "$3" --val 1000 --seed 1 2>"$dir.log"
  echo "$dir"
}
d1=$(data 64 8 40000)
d2=$(data 128 16 150000)
d3=$(data 256 64 40000)

# stage <n> <data dir> <steps> [parent]: trains (or fine-tunes from parent) and prints the accuracy.
stage() {
  local run=$work/stage$1 data=$2 steps=$3 parent=${4:-}
  # Stage 1 raises the floor over its first 1500 updates; a fine-tune holds it from the first (its
  # parent's sigma already sits there).
  local init=() ramp=1500
  [ -n "$parent" ] && init=(--set train.init_from="$parent") && ramp=0
  if [ ! -f "$run/checkpoints/latest" ]; then
    # Every stage reads stage 1's tokenizer: the same 772 symbols (it depends only on the vocab),
    # and a fine-tune must name its parent's tokenizer.
    "$rfa" --threads "$threads" train --config "$data/mqar.yaml" --set tokenizer.path="$d1/mqar.model" \
      --set train.run_dir="$run" "${init[@]}" --set attention.kind=rfa_gate --set attention.short_conv=4 \
      --set attention.output_gate=true --set attention.num_features="${D:-32}" \
      --set attention.gate_bias_init=5 --set train.batch_size=32 --set optim.lr=3e-3 \
      --set optim.warmup_steps=100 --set train.eval_every=500 --set train.steps="$steps" \
      --set train.seed="${SEED:-1}" --set optim.sigma_floor="$floor" --set optim.sigma_floor_steps="$ramp" \
      "${sets[@]}" 2>"$run.log"
  fi
  echo "{\"stage\": $1, \"data\": \"$data\", \"result\": $("$rfa" --threads "$threads" eval accuracy "$run" --json 2>/dev/null)}"
}
stage 1 "$d1" "${STEPS1:-3000}"
stage 2 "$d2" "${STEPS2:-1500}" "$work/stage1"
stage 3 "$d3" "${STEPS3:-1500}" "$work/stage2"
