#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Install what cudasnap needs, if it is missing. Safe to run again.
#   scripts/setup.sh           what building cudasnap and running the example need
#   scripts/setup.sh --tests   that, and what the tests need besides (scripts/test.sh runs this)
# Debian/Ubuntu packages come from apt-get (as root, or through sudo). The CUDA Toolkit is not
# installed here: only its headers are needed, and they are looked up as CMake will look them up
# (scripts/gpu-check.sh --bundle also uses its nvcc).
set -euo pipefail
cd "$(dirname "$0")/.."

tests=0
for arg in "$@"; do
  case $arg in
    --tests) tests=1 ;;
    -h | --help) sed -n '3,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown argument '$arg': --tests or nothing" >&2; exit 2 ;;
  esac
done

# The build: compilers, CMake, and the libraries cudasnap links (libunwind, libdw: stacks; cJSON,
# YAJL: reading snapshots; zlib: `cudasnap export --format pprof`); cmocka: the default build
# configures the tests' folder, where the simulated driver the example runs on is built.
packages=(cmake make gcc g++ pkg-config libunwind-dev libcjson-dev libyajl-dev libcmocka-dev libdw-dev zlib1g-dev)
# The tests only: python3 (scripts of the integration and browser tests); libjemalloc2 (a second
# allocator under the preloaded library); clang + libclang-rt-14-dev (the fuzz target); golang-go
# (`go tool pprof`, the reader of the pprof exports, ctest cli_export); chromium (the browser test
# of `cudasnap report` pages and its benchmark); patchelf (the $ORIGIN run paths of the GPU bundle,
# scripts/gpu-check.sh --bundle); python3-pytest, python3-pip (the Python package's tests,
# tests/python, ctest label python: pytest, and pip installing it); prometheus (with promtool),
# tmux, curl: the live view's tests with the real clients (ctest cli_live_*: a Prometheus server
# scraping `cudasnap metrics`, `cudasnap top` driven in tmux).
((tests)) && packages+=(python3 libjemalloc2 clang libclang-rt-14-dev golang-go chromium patchelf python3-pytest python3-pip
  prometheus tmux curl)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
  fi
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# pprof-format (npm): a second reader of `cudasnap export --format pprof` files in the tests, next
# to `go tool pprof`. Where node and npm are (Debian's nodejs has them), it goes under .cache/npm;
# without them, or without the registry, the tests use go alone and say so.
if ((tests)) && command -v npm >/dev/null && ! [[ -d .cache/npm/node_modules/pprof-format ]]; then
  mkdir -p .cache/npm
  npm install --silent --no-audit --no-fund --prefix .cache/npm pprof-format@2 >/dev/null 2>&1 ||
    echo "setup: npm could not install pprof-format: the export tests use go tool pprof alone"
fi

probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
if ! cmake -S cmake/probe_cuda -B "$probe" >"$probe/log" 2>&1; then
  echo "setup: CUDA Toolkit headers (cuda.h) not found: install the CUDA Toolkit (e.g. apt-get install cuda-toolkit-13-0 from NVIDIA's repository, or nvidia-cuda-toolkit) or set CUDAToolkit_ROOT=/path/to/cuda" >&2
  exit 1
fi
echo "setup: ok ($(grep -o 'cuda.h in .*' "$probe/log"))"
