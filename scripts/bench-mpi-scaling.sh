#!/usr/bin/env bash
# Side-by-side data-parallel scaling on one machine: 1 rank x T threads against N ranks x T threads,
# alternating, so both see the same machine state. Prints each run's `rfa bench train` summary line
# and the ratio of global tokens/s.
#   scripts/bench-mpi-scaling.sh [--ranks N] [--threads T] [--pairs P] [--steps S] CONFIG [--set k=v ...]
set -euo pipefail
ranks=2 threads=1 pairs=3 steps=20
while [[ $# -gt 0 ]]; do
  case "$1" in
    --ranks) ranks=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    -h|--help) sed -n 2,5p "$0"; exit 0 ;;
    *) break ;;
  esac
done
[[ $# -ge 1 ]] || { echo "bench-mpi-scaling: give a config file (e.g. configs/bench-6x384.yaml)" >&2; exit 2; }
config=$1; shift
here=$(cd "$(dirname "$0")/.." && pwd)
rfa=${RFA:-$here/build/rfa}
[[ -x $rfa ]] || { echo "bench-mpi-scaling: $rfa not built (scripts/build.sh)" >&2; exit 2; }
command -v mpirun >/dev/null || { echo "bench-mpi-scaling: mpirun not found (scripts/install-deps.sh installs Open MPI)" >&2; exit 2; }
root_flag=(); [[ $(id -u) == 0 ]] && root_flag=(--allow-run-as-root)
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
tps() { grep -oE '[0-9.,]+ tokens/s' | head -1 | tr -d ', tokens/s'; }
echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), config $config $*"
for ((p = 1; p <= pairs; p++)); do
  one=$("$rfa" --threads "$threads" bench train --config "$config" "$@" --steps "$steps" --warmup 2 2>&1)
  many=$(mpirun --oversubscribe "${root_flag[@]}" --bind-to none -np "$ranks" \
    "$rfa" --threads "$threads" bench train --config "$config" "$@" --steps "$steps" --warmup 2 2>&1)
  echo "pair $p: 1 rank:   $(grep -E '[0-9] tokens/s;' <<<"$one" | head -1 | sed 's/.*\] //')"
  echo "pair $p: $ranks ranks: $(grep -E '[0-9] tokens/s;' <<<"$many" | head -1 | sed 's/.*\] //')"
  echo "pair $p: $(grep -E 'all-reduce' <<<"$many" | head -1 | sed 's/.*all-reduce/all-reduce/')"
  a=$(tps <<<"$one"); b=$(tps <<<"$many")
  awk -v a="$a" -v b="$b" -v p="$p" 'BEGIN { if (a > 0) printf "pair %d: ratio %.3f\n", p, b / a }'
done
