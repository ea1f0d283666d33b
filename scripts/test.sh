#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite with ctest.
# Extra arguments go to ctest, e.g. `scripts/test.sh -L unit` for the fast inner loop.
# `scripts/test.sh --sanitize [ctest args]` does the same in an AddressSanitizer +
# UndefinedBehaviorSanitizer build in build-sanitize/ (any finding fails its test).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --sanitize ]; then
  shift
  export RFA_SANITIZE=ON RFA_BUILD_DIR=${RFA_BUILD_DIR:-build-sanitize}
fi
scripts/install-deps.sh
scripts/build.sh
build_dir=${RFA_BUILD_DIR:-build}
ctest --test-dir "$build_dir" --output-on-failure -j 2 "$@"
