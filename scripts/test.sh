#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite with ctest.
# Extra arguments go to ctest, e.g. `scripts/test.sh -L unit` for the fast inner loop.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
build_dir=${RFA_BUILD_DIR:-build}
ctest --test-dir "$build_dir" --output-on-failure -j 2 "$@"
