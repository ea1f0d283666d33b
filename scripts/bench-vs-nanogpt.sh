#!/usr/bin/env bash
# rfa against nanoGPT, side by side in one run on this machine: the training step at
# nanoGPT's CPU shape (4x128, T 64, B 12, V 65) and at 6x384 (T 256, B 16, V 2048),
# rfa's `rfa bench train` (median ms/step) alternating with nanoGPT's step timed by
# scripts/nanogpt-step-time.py (its model.py from a checkout you name; PyTorch from
# Debian's python3-torch with libopenblas0-openmp; nothing of nanoGPT is in this repository). Each pair runs
# ROUNDS times, interleaved, so a busy neighbour slows both alike; the table gives
# the medians and their ratio (nanoGPT ms / rfa ms: above 1, rfa is faster), by wall time and by
# CPU time (all threads; it does not count the time other processes held the cores, so it is the
# figure to read on a shared machine). rfa runs nanoGPT's architecture: plain attention, no short
# convolution and no output gate (the shipped configs' defaults are pinned off here).
#
# usage: scripts/bench-vs-nanogpt.sh NANOGPT_DIR [RFA_BINARY]
#   RFA_BINARY  default build/rfa. A build for x86-64-v3 (RFA_ARCH, docs/cpu-targets.md)
#               holds its products at AVX2; PyTorch is then held there too
#               (OPENBLAS_CORETYPE=Haswell, ATEN_CPU_CAPABILITY=avx2, ONEDNN_MAX_CPU_ISA=AVX2),
#               so both sides run what an AVX2 machine runs.
#   env: ROUNDS (3), STEPS (20), THREADS (2), KINDS ("rfa_gate softmax"), SHAPES ("nano 6x384"),
#        POLICIES ("default passive"): the OpenMP wait policies to run both programs under, one
#        table row each. default = none set (each program's own: its threads spin a while
#        between parallel regions, what a user's run gets on a quiet machine); passive = they
#        sleep at once (OMP_WAIT_POLICY=passive, the setting beside another busy process). Both
#        programs use libgomp; passive makes every parallel region wake its threads, and PyTorch
#        runs many more, smaller regions a step than rfa: at nano it slowed nanoGPT by 44% and rfa
#        by 23% here (docs/cpu-targets.md), so the passive row flatters rfa.
#        RFA_SETS: more `--set KEY=VALUE` for rfa, space-separated (e.g. "train.thread_split=kernels"
#        to time the kernel split instead of the default auto, docs/cpu-targets.md).
set -euo pipefail
rfa_sets=()
for kv in ${RFA_SETS:-}; do rfa_sets+=(--set "$kv"); done
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { sed -n '2,17p' "$0" >&2; exit 2; }
nanogpt=$1
rfa=${2:-build/rfa}
rounds=${ROUNDS:-3}
steps=${STEPS:-20}
threads=${THREADS:-2}
kinds=${KINDS:-rfa_gate softmax}
shapes=${SHAPES:-nano 6x384}
python=/usr/bin/python3
policies=${POLICIES:-default passive}

[ -f "$nanogpt/model.py" ] || { echo "no nanoGPT model.py in $nanogpt" >&2; exit 2; }
[ -x "$rfa" ] || { echo "no rfa binary at $rfa; build with scripts/build.sh" >&2; exit 2; }
"$python" -c 'import torch' 2>/dev/null || { echo "PyTorch is missing: apt-get install python3-torch libopenblas0-openmp (without OpenBLAS its products run in the reference BLAS)" >&2; exit 2; }

log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$rfa" --threads "$threads" bench train --config configs/shakespeare-char-rfa-gate.yaml --set model.vocab_size=65 \
  --set attention.short_conv=0 --set attention.output_gate=false \
  --steps 1 --warmup 0 >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
target=$(sed -n 's/.*kernels: \(.*\)$/\1/p' "$log")
torch_env=()
case $target in
  x86-64-v3*) torch_env=(OPENBLAS_CORETYPE=Haswell ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2) ;;
esac
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'); rfa kernels: $target"
echo "# PyTorch $("$python" -c 'import torch; print(torch.__version__)') ${torch_env[*]:-(its own dispatch)}; $threads threads; load $(cut -d' ' -f1-3 /proc/loadavg)"
[ ${#rfa_sets[@]} -eq 0 ] || echo "# rfa with ${rfa_sets[*]}"
echo "# cores ns: how far apart rfa's two threads ran, one way, per rfa run (min-max of the rounds; rfa bench"
echo "# train measures it). A VM's cores can move between runs; rows at different distances do not compare."

shape_args() {  # shape_args SHAPE -> "CONFIG L H C T B V"
  case $1 in
    nano) echo "configs/shakespeare-char-rfa-gate.yaml 4 4 128 64 12 65" ;;
    6x384) echo "configs/bench-6x384.yaml 6 6 384 256 16 2048" ;;
    *) echo "unknown shape $1" >&2; exit 2 ;;
  esac
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

printf '%-6s %-8s %-9s %12s %14s %12s %13s %15s %12s %10s\n' shape "OMP wait" rfa "rfa ms/step" "nanoGPT ms/st" "nanoGPT/rfa" \
  "rfa CPU ms" "nanoGPT CPU ms" "CPU ratio" "cores ns"
for policy in $policies; do
  policy_env=(env -u OMP_WAIT_POLICY)
  [ "$policy" = default ] || policy_env=(env OMP_WAIT_POLICY="$policy")
  for shape in $shapes; do
    read -r config L H C T B V <<<"$(shape_args "$shape")"
    declare -A rfa_ms=() rfa_cpu=() rfa_ns=()
    nano_ms=() nano_cpu=()
    for r in $(seq 1 "$rounds"); do
      for kind in $kinds; do
        "${policy_env[@]}" "$rfa" --threads "$threads" bench train --config "$config" --set model.vocab_size="$V" \
          --set attention.kind="$kind" --set attention.short_conv=0 --set attention.output_gate=false --steps "$steps" "${rfa_sets[@]}" >"$log" 2>&1 || { cat "$log" >&2; exit 1; }
        rfa_ms[$kind]+="$(sed -n 's/.*median \([0-9.]*\) ms\/step.*/\1/p' "$log") "
        rfa_cpu[$kind]+="$(sed -n 's/.*CPU time \([0-9.]*\) ms\/step.*/\1/p' "$log") "
        rfa_ns[$kind]+="$(sed -n 's/.*threads 0 and 1 are \([0-9]*\) ns apart.*/\1/p' "$log") "
      done
      "${policy_env[@]}" "${torch_env[@]}" "$python" scripts/nanogpt-step-time.py "$nanogpt" --layers "$L" --heads "$H" --width "$C" \
        --context "$T" --batch "$B" --vocab "$V" --steps "$steps" --threads "$threads" >"$log" 2>&1 ||
        { cat "$log" >&2; exit 1; }
      nano_ms+=("$(sed -n 's/.*median_ms=\([0-9.]*\).*/\1/p' "$log")")
      nano_cpu+=("$(sed -n 's/.*cpu_ms=\([0-9.]*\).*/\1/p' "$log")")
    done
    n=$(printf '%s\n' "${nano_ms[@]}" | median)
    nc=$(printf '%s\n' "${nano_cpu[@]}" | median)
    for kind in $kinds; do
      m=$(printf '%s\n' ${rfa_ms[$kind]} | median)
      mc=$(printf '%s\n' ${rfa_cpu[$kind]} | median)
      ns=$(printf '%s\n' ${rfa_ns[$kind]} | sort -g | sed -n '1p;$p' | paste -sd- -)
      printf '%-6s %-8s %-9s %12.2f %14.2f %11.2fx %13.2f %15.2f %11.2fx %10s\n' "$shape" "$policy" "$kind" "$m" "$n" \
        "$(awk -v a="$n" -v b="$m" 'BEGIN { print a / b }')" "$mc" "$nc" "$(awk -v a="$nc" -v b="$mc" 'BEGIN { print a / b }')" "${ns:--}"
    done
    unset rfa_ms rfa_cpu rfa_ns
  done
done
