#!/usr/bin/env bash
# Cross build for arm64 (aarch64 Linux, NEON) on an x86 Debian host, and its unit tests under
# qemu-user (docs/cpu-targets.md, "arm64"). Leaves the host's own packages and build/ alone:
#  1. installs what is missing of Debian's cross compiler (g++-aarch64-linux-gnu), qemu-user-static
#     and mmdebstrap: host packages only, no foreign architecture is added to the host's dpkg;
#  2. makes an arm64 sysroot holding the -dev libraries of scripts/install-deps.sh, if there is none:
#     mmdebstrap's extract variant unpacks the packages and their dependencies and runs no maintainer
#     script, so no arm64 program runs and binfmt_misc is not needed;
#  3. configures $RFA_BUILD_DIR (build-arm64) with cmake/toolchain-aarch64.cmake and RFA_ARCH=armv8-a,
#     and builds it (niced, RFA_JOBS=2 jobs: the machine is shared);
#  4. runs ctest there (default `-L unit`; other arguments replace it), each test program through
#     qemu-aarch64 -L sysroot (CMAKE_CROSSCOMPILING_EMULATOR). Emulated speed says nothing about arm64's.
# RFA_SYSROOT: the sysroot (default /var/tmp/arm64-sysroot); RFA_SYSROOT_SUITE: its Debian release
# (default the host's, so that the cross g++ and the sysroot's libstdc++ are the same GCC).
# Run an arm64 rfa by hand: QEMU_LD_PREFIX=$RFA_SYSROOT qemu-aarch64-static build-arm64/rfa --help
set -euo pipefail
cd "$(dirname "$0")/.."
sysroot=${RFA_SYSROOT:-/var/tmp/arm64-sysroot}
build_dir=${RFA_BUILD_DIR:-build-arm64}
jobs=${RFA_JOBS:-2}
suite=${RFA_SYSROOT_SUITE:-$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")}

# The arm64 twins of scripts/install-deps.sh's libraries, and the compiler's own runtime.
sysroot_packages=(libc6-dev libstdc++-12-dev libgcc-12-dev libgomp1
                  libdnnl-dev ocl-icd-opencl-dev libsentencepiece-dev libcli11-dev libspdlog-dev doctest-dev
                  libyaml-cpp-dev nlohmann-json3-dev libxxhash-dev libopenmpi-dev libcpp-httplib-dev)

as_root=()
[ "$(id -u)" -ne 0 ] && as_root=(sudo)
missing=()
command -v aarch64-linux-gnu-g++ >/dev/null || missing+=(g++-aarch64-linux-gnu)
command -v qemu-aarch64-static >/dev/null || missing+=(qemu-user-static)
command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
command -v ninja >/dev/null || missing+=(ninja-build)
if [ ${#missing[@]} -gt 0 ]; then
  echo "[arm64] installing on the host: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${as_root[@]}" apt-get update -qq
  "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ ! -e "$sysroot/usr/lib/aarch64-linux-gnu/libdnnl.so" ]; then
  echo "[arm64] making the sysroot $sysroot ($suite, arm64)"
  [ -e "$sysroot" ] && { echo "[arm64] $sysroot exists but holds no arm64 libdnnl; remove it first" >&2; exit 1; }
  include=$(IFS=,; echo "${sysroot_packages[*]}")
  "${as_root[@]}" mmdebstrap --mode=root --variant=extract --architectures=arm64 --include="$include" \
    "$suite" "$sysroot" </dev/null
fi

if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/toolchain-aarch64.cmake" \
    -DRFA_SYSROOT="$sysroot" -DCMAKE_BUILD_TYPE=Release -DRFA_ARCH=armv8-a
fi
nice -n 15 cmake --build "$build_dir" -j "$jobs"

export QEMU_LD_PREFIX=$sysroot
[ $# -eq 0 ] && set -- -L unit
ctest --test-dir "$build_dir" --output-on-failure "$@"
