#!/usr/bin/env bash
# Installs the Debian packages rfa needs, if any are missing (as root, or via sudo).
set -euo pipefail
packages=(build-essential cmake ninja-build pkg-config
          libdnnl-dev ocl-icd-opencl-dev libsentencepiece-dev libcli11-dev libspdlog-dev doctest-dev libyaml-cpp-dev
          nlohmann-json3-dev libxxhash-dev openmpi-bin libopenmpi-dev libcpp-httplib-dev
          bible-kjv python3-matplotlib curl tmux)
# ocl-icd-opencl-dev: oneDNN's dnnl-config.cmake calls find_package(OpenCL), and libdnnl-dev only recommends it.
# nlohmann-json3-dev, libxxhash-dev: the JSON reader and XXH64 of checkpoints (src/io/json.cpp, src/io/hash.cpp).
# openmpi-bin, libopenmpi-dev: data-parallel training (CMake option RFA_MPI, docs/distributed.md);
# mpirun also runs the suite's multi-rank tests.
# libcpp-httplib-dev: the HTTP server of `rfa serve` (src/serve/http_server.cpp); curl, nodejs, npm: its e2e
# tests (tests/e2e/serve_*.sh; npm installs the pinned `openai` client into the build tree, loopback only);
# tmux: the e2e test that types into `rfa chat` as a person would.
# python3-matplotlib: scripts/plot-runs.py draws loss curves (the suite skips its e2e test without it).
# The test suite needs no Python: tests/e2e/resume.sh runs the README's numpy snippet only
# where a python3 with numpy already exists.
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node and npm by command, not by package: a machine with another vendor's nodejs (which bundles npm and
# conflicts with Debian's npm package) already has what the tests need. Debian 12's node 18 runs the client.
command -v node >/dev/null && command -v npm >/dev/null || missing+=(nodejs npm)
[ ${#missing[@]} -eq 0 ] && exit 0
echo "[deps] installing: ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "[deps] need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
