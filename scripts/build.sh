#!/usr/bin/env bash
# Configures and builds rfa into build/ (Release, -march=native unless RFA_NATIVE=OFF).
# RFA_SANITIZE=ON configures an AddressSanitizer + UBSan build (RelWithDebInfo: -O2 -g)
# instead; give it its own RFA_BUILD_DIR (scripts/test.sh --sanitize uses build-sanitize).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${RFA_BUILD_DIR:-build}
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  build_type=Release
  [ "${RFA_SANITIZE:-OFF}" = ON ] && build_type=RelWithDebInfo
  cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE="$build_type" -DRFA_NATIVE="${RFA_NATIVE:-ON}" \
    -DRFA_SANITIZE="${RFA_SANITIZE:-OFF}"
fi
cmake --build "$build_dir" -j "$(nproc)"
