#!/usr/bin/env bash
# Fuzzes every reader of a file a user hands us (tests/fuzz/) with libFuzzer under
# AddressSanitizer + UndefinedBehaviorSanitizer, each target for SECONDS (default 60).
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]     e.g. scripts/fuzz.sh 300 config
#        RFA_FUZZ_JOBS=2 scripts/fuzz.sh             (two targets at a time)
# Builds into $RFA_FUZZ_BUILD_DIR (default build-fuzz) with Debian's clang-14, which it
# installs with libclang-rt-14-dev (libFuzzer and the sanitizer runtimes) when missing;
# the normal build and suite need neither (they replay the corpus with the normal compiler).
# New inputs go to <build>/fuzz-corpus/<target>/, crashes to <build>/fuzz-crashes/<target>/;
# each target's log ends with libFuzzer's final stats (executions, cov, ft).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
build=${RFA_FUZZ_BUILD_DIR:-build-fuzz}

missing=()
for p in clang-14 libclang-rt-14-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  echo "[fuzz] installing: ${missing[*]}"
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
scripts/install-deps.sh

# All code is instrumented (coverage for libFuzzer, ASan, UBSan); -O1 keeps stacks readable.
flags="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -g -O1"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_COMPILER=clang++-14 \
    -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DRFA_FUZZ=ON -DRFA_NATIVE=OFF "${launcher[@]}"
fi
cmake -S . -B "$build" -DRFA_FUZZ_SECONDS="$seconds" >/dev/null
names=("$@")
[ ${#names[@]} -eq 0 ] && names=(safetensors state_json token_file config decode_state tokenizer)
targets=()
for t in "${names[@]}"; do targets+=("rfa_fuzz_$t"); done
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"

# Each target is single-threaded; RFA_FUZZ_JOBS (default 1) of them run at a time.
log="$build/fuzz.log"
status=0
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir "$build" -L fuzz -j "${RFA_FUZZ_JOBS:-1}" -R "^fuzz/($(IFS='|'; echo "${names[*]}"))\$" --output-on-failure -V \
  >"$log" 2>&1 || status=$?
# Per target: libFuzzer's last status line (#executions, cov, ft, corpus) and any finding.
grep -E "Test +#|DONE|stat::number_of_executed_units|==[0-9]+==ERROR|runtime error|SUMMARY|Test crashed|Failed" \
  "$log" || true
echo "[fuzz] log: $log; crash inputs: $build/fuzz-crashes/<target>/"
exit $status
