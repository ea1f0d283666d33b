#!/usr/bin/env bash
# Configures and builds rfa into build/ (Release, -march=native unless RFA_NATIVE=OFF).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${RFA_BUILD_DIR:-build}
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DRFA_NATIVE="${RFA_NATIVE:-ON}"
fi
cmake --build "$build_dir" -j "$(nproc)"
