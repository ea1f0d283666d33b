#!/usr/bin/env bash
# Configures and builds rfa into build/ (Release, for RFA_ARCH: native by default, or
# x86-64-v3 / x86-64-v4 / ...; docs/cpu-targets.md). A build directory keeps the RFA_ARCH it
# was configured with: use one directory per level (RFA_BUILD_DIR=build-v3 RFA_ARCH=x86-64-v3).
# RFA_SANITIZE=ON configures an AddressSanitizer + UBSan build (RelWithDebInfo: -O2 -g)
# instead; give it its own RFA_BUILD_DIR (scripts/test.sh --sanitize uses build-sanitize).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${RFA_BUILD_DIR:-build}
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
launcher=()  # ccache, when the machine has it (a developer's rebuilds; never required)
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
if [ -f "$build_dir/CMakeCache.txt" ] && [ -n "${RFA_ARCH:-}" ] &&
   ! grep -qx "RFA_ARCH:STRING=${RFA_ARCH}" "$build_dir/CMakeCache.txt"; then
  cmake -S . -B "$build_dir" -DRFA_ARCH="$RFA_ARCH"  # another level asked of an existing directory
fi
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  build_type=Release
  [ "${RFA_SANITIZE:-OFF}" = ON ] && build_type=RelWithDebInfo
  cmake -S . -B "$build_dir" "${generator[@]}" "${launcher[@]}" -DCMAKE_BUILD_TYPE="$build_type" -DRFA_ARCH="${RFA_ARCH:-native}" -DRFA_NATIVE="${RFA_NATIVE:-ON}" \
    -DRFA_SANITIZE="${RFA_SANITIZE:-OFF}"
fi
cmake --build "$build_dir" -j "$(nproc)"
