#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# cudasnap's correctness checks on a real GPU (docs/gpu-checks.md). This script builds; the checks
# themselves are scripts/gpu-run.sh, which runs from a bundle as its run.sh.
#
#   scripts/gpu-check.sh --bundle DIR   build everything the checks need into DIR, for a bare GPU
#                                       machine (no GPU needed here); runs nothing
#   scripts/gpu-check.sh [--dry-run]    build a bundle here and run its checks here, on this
#                                       machine's GPU (or, with --dry-run, on the fake runtime)
#
# A bundle holds libcudasnap.so, the cudasnap tool, every tests/gpu program built with nvcc (for
# GPU_ARCHS, plus PTX for newer GPUs), bench/gpu_alloc, the host-built programs and the fake CUDA
# libraries the dry run uses, the Python programs, run.sh and bench.sh. With --bundle it also
# carries the runtime libraries cudasnap and the tool load (libunwind, libdw, libelf, cJSON and
# what they need), taken from this machine's Debian packages with `apt-get download` and
# `dpkg -x`, found through $ORIGIN run paths: it then runs on any x86-64 Ubuntu 24.04 (or newer)
# machine with the NVIDIA driver, the CUDA libraries and python3, which scripts/gpu-bundle-base.txt
# lists. No absolute path of this machine is inside, and it is at most 60 MB. Without --bundle the
# runtime libraries are this machine's own (scripts/setup.sh installs them).
#
# On the GPU machine: `bash DIR/run.sh [--dry-run] [OUTDIR]` (see its --help): report.md, the
# benchmark's lines and a tarball of logs and snapshots in OUTDIR ($OUT by default).
#
# Environment: NVCC (default: nvcc on PATH, else /usr/local/cuda/bin/nvcc), GPU_ARCHS (compute
# capabilities to build machine code for, default "80 90"; PTX of the last is added), CUDNN_ROOT (a
# directory with include/cudnn.h and lib/libcudnn.so; otherwise the CUDA Toolkit, the system and
# the nvidia-cudnn Python package are searched; without cuDNN the cuDNN check is left out),
# GPU_BUNDLE_BUILD (the build tree, default build-gpu-bundle; nvcc outputs and downloaded packages
# are kept there between runs), PYTHON (python3); OUT and the GPU_CHECK_* variables go to run.sh.
set -euo pipefail

usage() { sed -n '3,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }

dry=0 dest=""
while (($#)); do
  case $1 in
    --dry-run) dry=1 ;;
    --bundle)
      [[ $# -ge 2 && -n $2 ]] || { echo "scripts/gpu-check.sh: --bundle needs a directory" >&2; exit 2; }
      dest=$2
      shift ;;
    -h | --help) usage; exit 0 ;;
    *) printf 'scripts/gpu-check.sh: unknown argument "%s"\n\n' "$1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
[[ -n $dest && $dry == 1 ]] && { echo "scripts/gpu-check.sh: --bundle builds only; run DIR/run.sh --dry-run" >&2; exit 2; }

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${GPU_BUNDLE_BUILD:-$root/build-gpu-bundle}
mkdir -p "$build"
build=$(cd "$build" && pwd)
logs=$build/logs
jobs=$(nproc 2>/dev/null || echo 2)
python=${PYTHON:-python3}
gpu=$root/tests/gpu
read -r -a archs <<<"${GPU_ARCHS:-80 90}"
max_bytes=$((60 * 1000 * 1000))

say() { printf 'gpu-check: [%4ds] %s\n' "$SECONDS" "$*" >&2; }
die() { printf 'gpu-check: FAILED: %s\n' "$*" >&2; exit 1; }

mkdir -p "$logs"
# one user of the build tree at a time (ctest runs the bundle test from several build trees)
exec 9>"$build/.lock"
flock 9
if [[ -n $dest ]]; then
  full=1
  mkdir -p "$dest"
  bundle=$(cd "$dest" && pwd)
  case $bundle/ in "$root"/ | "$build"/*) die "the bundle directory must not be the repository or $build" ;; esac
  # replaced only when it is empty or an earlier bundle
  if [[ -n $(ls -A "$bundle") && ! -f $bundle/BUNDLE.txt ]]; then die "$bundle is neither empty nor a bundle"; fi
  find "$bundle" -mindepth 1 -maxdepth 1 -exec rm -rf {} +
  echo "incomplete: scripts/gpu-check.sh --bundle did not finish" >"$bundle/BUNDLE.txt"
else
  full=0
  bundle=$build/local-bundle
  rm -rf "$bundle"
  mkdir -p "$bundle"
fi

# ---- tools --------------------------------------------------------------------------------------
command -v cmake >/dev/null || die "cmake not found (scripts/setup.sh installs it)"
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[[ -x $nvcc ]] || die "nvcc not found (install the CUDA Toolkit or set NVCC)"
source "$root/scripts/cuda-home.sh"
cuda_home=$(cuda_home_of "$nvcc")
nvcc_version=$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
cub_include=""
for d in "$cuda_home/include/cccl" "$cuda_home/include"; do
  if [[ -f $d/cub/util_allocator.cuh ]]; then cub_include=$d; break; fi
done
[[ -n $cub_include ]] || die "cub/util_allocator.cuh not found under $cuda_home/include (CUB ships with the CUDA Toolkit)"
if ((full)); then
  for t in patchelf readelf dpkg dpkg-query apt-get; do
    command -v "$t" >/dev/null || die "$t not found (scripts/setup.sh installs patchelf; the rest come with Debian)"
  done
fi
commit="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$root" diff --quiet HEAD 2>/dev/null || echo ' (modified)')"

# cuDNN: CUDNN_ROOT, the toolkit, the system, or the wheel PyTorch depends on
cudnn_inc="" cudnn_lib=""
for d in ${CUDNN_ROOT:+"$CUDNN_ROOT"} "$cuda_home" /usr \
  "$("$python" -c 'import nvidia.cudnn; print(list(nvidia.cudnn.__path__)[0])' 2>/dev/null)"; do
  [[ -n $d && -f $d/include/cudnn.h ]] || continue
  for l in "$d/lib" "$d/lib64" "$d/lib/x86_64-linux-gnu" /usr/lib/x86_64-linux-gnu; do
    if compgen -G "$l/libcudnn.so*" >/dev/null; then cudnn_inc=$d/include cudnn_lib=$l; break 2; fi
  done
done

# ---- cudasnap, the tool, the fakes --------------------------------------------------------------
# Paths in debug information and __FILE__ are made relative to the source tree (compilers run there), so none of this
# machine's paths lands in the bundle.
prefix_map="-ffile-prefix-map=$root=."
say "building libcudasnap.so, the cudasnap tool and the fake CUDA libraries (Release) in $build/cmake"
cmake -S "$root" -B "$build/cmake" -DCMAKE_BUILD_TYPE=Release -DCS_DEBUG=0 -DCS_BUILD_TESTS=ON \
  "-DCMAKE_C_FLAGS=$prefix_map" >"$logs/cmake.log" 2>&1 || die "cmake failed ($logs/cmake.log)"
cmake --build "$build/cmake" -j "$jobs" --target cudasnap cudasnap_cli fake_cuda fake_cudart \
  >>"$logs/cmake.log" 2>&1 || die "build failed ($logs/cmake.log)"
mkdir -p "$bundle/bin" "$bundle/lib" "$bundle/gpu" "$bundle/dry/fakes" "$bundle/py"
cp "$build/cmake/interpose/libcudasnap.so" "$bundle/lib/"
cp "$build/cmake/cli/cudasnap" "$bundle/bin/"
cp "$build/cmake/tests/fakes/libcuda.so.1" "$build/cmake/tests/fakes/libcudart.so.13" "$bundle/dry/fakes/"

# ---- programs -----------------------------------------------------------------------------------
# Every program is built into $build/programs and copied; one whose sources, flags and compiler
# have not changed since the last build is not built again (nvcc takes tens of seconds each).
gencode=()
for a in "${archs[@]}"; do gencode+=(-gencode "arch=compute_$a,code=sm_$a"); done
gencode+=(-gencode "arch=compute_${archs[-1]},code=compute_${archs[-1]}")
# shellcheck disable=SC2054 # -Xcompiler takes a comma-separated list
nvflags=(-std=c++17 -O2 -g -I"$root" "${gencode[@]}" -Werror all-warnings -Xcompiler "-Wall,-Wextra,$prefix_map")
hostflags=(-std=c++17 -O2 -g -Wall -Wextra -Werror -x c++ -I"$root" -isystem "$cuda_home/include" "$prefix_map")
mkdir -p "$build/programs/gpu" "$build/programs/dry"
pids=() what=()

# build KIND NAME SOURCE COMPILER ARGS...: in the background, at most $jobs at a time; not at all
# when the output was built by the same command from the same sources (its .key file says so)
build() {
  local kind=$1 name=$2 src=$3 out=$build/programs/$1/$2 key
  shift 3
  local -a cmd=("$@" -o "$out" "$src")
  [[ $kind == dry ]] && cmd+=(-L"$build/cmake/tests/fakes" -l:libcudart.so.13)
  cmd+=(-ldl -lpthread)
  key=$({ printf '%s\n' "${cmd[@]}"; cat "$gpu"/*.h "$root"/include/*.h "$src"; "$nvcc" --version; } | sha256sum | cut -d' ' -f1)
  [[ -x $out && -f $out.key && $(cat "$out.key") == "$key" ]] && return 0
  while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
  (cd "$root" && "${cmd[@]}" >"$logs/build-$kind-$name.log" 2>&1 && echo "$key" >"$out.key") &
  pids+=($!) what+=("$kind/$name")
}
say "building the tests/gpu programs with nvcc $nvcc_version for $(printf "sm_%s " "${archs[@]}")(unchanged ones are kept)"
nv() { build gpu "$1" "$gpu/$2" "$nvcc" "${nvflags[@]}" "${@:3}"; }
nv alloc_static alloc_basic.cu
nv alloc_shared alloc_basic.cu -cudart shared
nv free_hazard free_hazard.cu
nv ipc_small ipc_small.cu
nv sticky_error sticky_error.cu
nv cublas_workspace cublas_workspace.cu -lcublas
[[ -n $cudnn_inc ]] && nv cudnn_workspace cudnn_workspace.cu -I"$cudnn_inc" -L"$cudnn_lib" -lcudnn
nv device_reset device_reset.cu
nv fork_child fork_child.cu
nv leak leak.cu
nv signal_dump signal_dump.cu
nv passthrough_kinds passthrough_kinds.cu
nv exit_paths exit_paths.cu
nv memory_pressure memory_pressure.cu
build gpu gpu_alloc "$root/bench/gpu_alloc.cu" "$nvcc" -O2 -std=c++17 -I"$root" -I"$cub_include" "${gencode[@]}" \
  -Xcompiler "$prefix_map"
# the dry run's programs: host code on the fake runtime (no kernels)
for name in alloc_basic fork_child leak device_reset exit_paths passthrough_kinds memory_pressure; do build dry "$name" "$gpu/$name.cu" "${CXX:-g++}" "${hostflags[@]}"; done
build dry gpu_alloc "$root/bench/gpu_alloc.cu" "${CXX:-g++}" -O2 -std=c++17 -x c++ -I"$root" -isystem "$cub_include" \
  -isystem "$cuda_home/include" "$prefix_map"
failures=()
for i in "${!pids[@]}"; do wait "${pids[$i]}" || failures+=("${what[$i]}"); done
((${#failures[@]} == 0)) || die "the build failed for ${failures[*]} (logs: $logs/build-*.log)"
find "$build/programs/gpu" -type f ! -name '*.key' -exec cp {} "$bundle/gpu/" \;
find "$build/programs/dry" -type f ! -name '*.key' -exec cp {} "$bundle/dry/" \;

# ---- runtime libraries --------------------------------------------------------------------------
base=$root/scripts/gpu-bundle-base.txt
declare -A in_base=()
while read -r kind name _; do [[ $kind == lib ]] && in_base[$name]=1; done <"$base"

# needs FILE: the libraries FILE loads: its DT_NEEDED entries, and for libcudasnap.so and the tool
# the names the sources pass to dlopen (libunwind and libdw are loaded privately, never linked)
needs() {
  readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'
  case $(basename "$1") in
    libcudasnap.so | cudasnap)
      grep -rhoE 'dlopen\("[^"]+"' --include='*.c' "$root" --exclude-dir='build*' --exclude-dir=tests \
        --exclude-dir=fuzz --exclude-dir=bench --exclude-dir=examples | sed 's/dlopen("//; s/"$//' | sort -u ;;
  esac
}
# package_of SONAME: the Debian package and version that installed it on this machine. Asked up to
# five times: an apt-get run on this machine (others' too) can leave the loader cache or dpkg's
# database briefly incomplete.
package_of() {
  local path owner try
  for try in 1 2 3 4 5; do
    ((try == 1)) || sleep 3
    # awk reads to the end: a reader that quits early can kill ldconfig with SIGPIPE (pipefail)
    path=$("$(command -v ldconfig || echo /sbin/ldconfig)" -p | awk -v s="$1" '$1 == s && /x86-64/ && !found { print $NF; found = 1 }')
    [[ -n $path ]] || { say "ldconfig -p does not list $1 (try $try)"; continue; }
    path=$(readlink -f "$path")
    owner=$(dpkg -S "$path" 2>/dev/null || dpkg -S "${path#/usr}" 2>/dev/null) ||
      { say "dpkg -S $path names no package (try $try)"; continue; }
    owner=${owner%%:*}
    echo "$owner $(dpkg-query -W -f='${Version}' "$owner:amd64" 2>/dev/null || dpkg-query -W -f='${Version}' "$owner")"
    return 0
  done
  return 1
}
# deb PACKAGE VERSION: the .deb in $build/debs, downloaded once. When the archive no longer has the
# installed version (a stable update replaced it), the archive's version of the same package: same
# SONAME, same ABI. The package lists are updated only when neither can be had. Prints the file's
# path and the version it holds.
deb() {
  local pkg=$1 version=$2 f
  mkdir -p "$build/debs"
  f=$(compgen -G "$build/debs/${pkg}_${version//:/%3a}_amd64.deb" | head -n1 || true)
  if [[ -z $f ]]; then # one downloaded earlier in place of the installed version
    f=$(compgen -G "$build/debs/${pkg}_*_amd64.deb" | head -n1 || true)
  fi
  if [[ -z $f ]]; then
    get() { (cd "$build/debs" && apt-get download -q -o DPkg::Lock::Timeout=120 "$@") >>"$logs/apt.log" 2>&1; }
    if ! get "$pkg:amd64=$version" && ! get "$pkg:amd64"; then
      say "apt-get download $pkg failed; updating the package lists"
      apt-get update -q -o DPkg::Lock::Timeout=120 >>"$logs/apt.log" 2>&1 ||
        { say "apt-get update failed ($logs/apt.log; needs root and the Debian mirrors)"; return 1; }
      get "$pkg:amd64=$version" || get "$pkg:amd64" || { say "apt-get download $pkg failed ($logs/apt.log)"; return 1; }
    fi
    f=$(compgen -G "$build/debs/${pkg}_*_amd64.deb" | head -n1 || true)
  fi
  [[ -n $f ]] || { say "no .deb for $pkg after apt-get download ($logs/apt.log)"; return 1; }
  echo "$f $(dpkg-deb -f "$f" Version)"
}

packages=()
if ((full)); then
  say "bundling the runtime libraries from Debian packages (apt-get download, dpkg -x)"
  declare -A done_lib=()
  queue=("$bundle/lib/libcudasnap.so" "$bundle/bin/cudasnap")
  while ((${#queue[@]})); do
    file=${queue[0]}
    queue=("${queue[@]:1}")
    while read -r soname; do
      [[ -z $soname || -n ${in_base[$soname]-} || -n ${done_lib[$soname]-} || $soname == libcudasnap.so ]] && continue
      done_lib[$soname]=1
      read -r pkg version < <(package_of "$soname") ||
        die "$soname is not installed from a Debian package here, or dpkg did not say (scripts/setup.sh installs what cudasnap uses)"
      read -r debfile version < <(deb "$pkg" "$version") || die "no Debian package for $soname (see above)"
      x=$build/unpacked/$pkg
      rm -rf "$x"
      mkdir -p "$x"
      dpkg -x "$debfile" "$x" || die "dpkg -x $debfile failed"
      found=$(find "$x" -name "$soname" \( -type f -o -type l \) -print -quit)
      [[ -n $found ]] || die "$debfile holds no $soname"
      cp -L "$found" "$bundle/lib/$soname"
      packages+=("$soname $pkg $version")
      queue+=("$bundle/lib/$soname")
    done < <(needs "$file")
  done
  # $ORIGIN run paths: each library finds its neighbours, the tool finds ../lib, whoever loads them
  for f in "$bundle"/lib/*; do patchelf --set-rpath '$ORIGIN' "$f"; done
  patchelf --set-rpath '$ORIGIN/../lib' "$bundle/bin/cudasnap"
fi

# ---- scripts, Python programs, description ------------------------------------------------------
cp "$root/scripts/gpu-run.sh" "$bundle/run.sh"
cp "$root/scripts/gpu-bench.sh" "$bundle/bench.sh"
cp "$base" "$bundle/base.txt"
cp "$gpu"/*.py "$bundle/py/"
chmod +x "$bundle/run.sh" "$bundle/bench.sh"
{
  echo "cudasnap GPU check bundle (scripts/gpu-check.sh --bundle; run: bash run.sh [--dry-run] [OUTDIR])"
  echo "commit: $commit"
  echo "built: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "build machine: $(. /etc/os-release && echo "$PRETTY_NAME"), $(ldd --version | sed -n '1s/.* //p') glibc, gcc $(gcc -dumpfullversion 2>/dev/null)"
  echo "nvcc: $nvcc_version"
  echo "gpu archs: $(printf 'sm_%s ' "${archs[@]}")+ compute_${archs[-1]} PTX"
  if [[ -n $cudnn_inc ]]; then
    echo "cudnn: $(awk '$1 == "#define" && $2 ~ /^CUDNN_(MAJOR|MINOR|PATCHLEVEL)$/ { printf "%s%s", sep, $3; sep = "." }' "$cudnn_inc/cudnn_version.h")"
  else
    echo "cudnn: none here (the bundle has no cuDNN check)"
  fi
  if ((full)); then
    echo "runtime libraries (SONAME, Debian package, version):"
    printf '  %s\n' "${packages[@]}"
  else
    echo "runtime libraries: this machine's own (not a bundle for another machine)"
  fi
} >"$bundle/BUNDLE.txt"

# ---- what a bundle must be ----------------------------------------------------------------------
bytes=$(du -sb "$bundle" | cut -f1)
((bytes <= max_bytes)) || die "the bundle is $bytes bytes, over the limit of $max_bytes"
if ((full)); then
  leaks=$(grep -rlF -e "$root" -e "$build" "$bundle" || true)
  [[ -z $leaks ]] || die "paths of this machine are inside: $(echo "$leaks" | tr '\n' ' ')"
fi
say "bundle: $bundle, $((bytes / 1000)) kB, $(find "$bundle" -type f | wc -l) files"

if ((full)); then
  say "carry $bundle to the GPU machine and run: bash run.sh [OUTDIR]"
  exit 0
fi
args=()
[[ $dry == 1 ]] && args+=(--dry-run)
out=${OUT:-$build/results$([[ $dry == 1 ]] && echo -dry)}
exec 9>&- # the checks do not need the build tree locked
exec bash "$bundle/run.sh" "${args[@]}" "$out"
