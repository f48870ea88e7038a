#!/usr/bin/env bash
# Install what cudasnap needs to build and test, if it is missing. Safe to run again.
#   scripts/setup.sh
# Debian/Ubuntu packages come from apt-get (as root, or through sudo). The CUDA Toolkit is not
# installed here: only its headers are needed, and they are looked up as CMake will look them up
# (scripts/gpu-check.sh --bundle also uses its nvcc).
set -euo pipefail
cd "$(dirname "$0")/.."

# chromium: the browser test of `cudasnap report` pages (ctest label browser) and its benchmark.
# patchelf: the $ORIGIN run paths of the GPU bundle (scripts/gpu-check.sh --bundle).
# zlib1g-dev: `cudasnap export --format pprof` (gzip). golang-go: `go tool pprof`, the reader of those
# exports in the tests (ctest cli_export; skipped without it).
# prometheus (with promtool), tmux, curl: the live view's tests with the real clients (ctest
# cli_live_*: a Prometheus server scraping `cudasnap metrics`, `cudasnap top` driven in tmux).
packages=(cmake make gcc g++ pkg-config python3 libunwind-dev libcjson-dev libyajl-dev libcmocka-dev libdw-dev libjemalloc2 clang libclang-rt-14-dev
  zlib1g-dev golang-go
  chromium patchelf
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
if command -v npm >/dev/null && ! [[ -d .cache/npm/node_modules/pprof-format ]]; then
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
