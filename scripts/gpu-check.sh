#!/usr/bin/env bash
# cudasnap's correctness checks on a real GPU, in one invocation (the programs are in tests/gpu/,
# each file says what it tests and why). Needs an NVIDIA GPU, its driver, the CUDA Toolkit (nvcc,
# cuBLAS) and what scripts/setup.sh installs; uses cuDNN, PyTorch, JAX, CuPy, numba and
# compute-sanitizer when present and reports SKIP for each one that is not.
#
#   scripts/gpu-check.sh [--dry-run]
#
# 1. nvcc-built programs, static cudart and -cudart shared: every cudaMalloc reaches the cache
#    (cudasnap's statistics and the snapshot's trace), the checksum equals a run without cudasnap,
#    the snapshot is clean under `cudasnap check`.
# 2. The free hazard (a kernel still reading a freed block that a new allocation reuses) in each
#    CUDASNAP_FREE mode: no corruption with sync and fence; what stream does is reported. A
#    kernel fault before a free is returned by that free in sync mode, as without cudasnap.
# 3. cuBLAS's and cuDNN's allocations appear in the snapshot with their call sites.
# 4. PyTorch: a seeded, deterministic training step with PYTORCH_NO_CUDA_MEMORY_CACHING=1, with
#    PyTorch's allocator, and with expandable segments, all under cudasnap: the loss equals a run
#    without cudasnap bit for bit; the pickle snapshots load in torch.cuda._memory_viz (stats,
#    trace, segments); cudasnap's memory_stats agree with torch.cuda.memory_stats() where the
#    policies coincide (tests/gpu/torch_compare.py lists the keys and why).
# 5. JAX (platform allocator), CuPy (no memory pool), numba: allocations seen, results unchanged.
# 6. cudaDeviceReset mid-run; fork after CUDA init; exit without freeing (the leak report names
#    the site); SIGUSR1 while kernels run (a snapshot is written, the result unchanged).
# 7. compute-sanitizer memcheck on the check-1 program under cudasnap: no error.
#
# Every check runs even when an earlier one failed. Results: $OUT/report.md (markdown: the machine,
# the commit, each check's PASS/FAIL/SKIP with its numbers), the same table on stderr, every run's
# stdout and stderr under $OUT/logs/, snapshots under $OUT/snapshots/ ($OUT defaults to
# build-gpu-check/results). Exit status 1 when any check FAILs, 0 otherwise.
#
#   --dry-run   no GPU: builds everything (cudasnap, every tests/gpu program with nvcc, where the
#               libraries they link are installed), byte-compiles the Python programs, runs the
#               programs that also build as host code (checks 1 and 6, in part) on the fake CUDA
#               runtime of tests/fakes, and reports every other check as SKIP
#
# Environment: NVCC (default: nvcc on PATH, else /usr/local/cuda/bin/nvcc), PYTHON (python3),
# CUDNN_ROOT (a directory with include/cudnn.h and lib/libcudnn.so; otherwise the CUDA Toolkit,
# the system and the nvidia-cudnn Python package are searched), GPU_CHECK_TIMEOUT (seconds per
# program run, default 180).
set -uo pipefail # not -e: a failing check is recorded and the next one runs

usage() { sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }

dry=0
for arg in "$@"; do
  case $arg in
    --dry-run) dry=1 ;;
    -h | --help) usage; exit 0 ;;
    *) printf 'scripts/gpu-check.sh: unknown argument "%s"\n\n' "$arg" >&2; usage >&2; exit 2 ;;
  esac
done

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build-gpu-check
[[ $dry == 1 ]] && build=$root/build-gpu-check-dry
out=${OUT:-$build/results}
logs=$out/logs
snaps=$out/snapshots
bin=$build/gpu-programs
report=$out/report.md
jobs=$(nproc 2>/dev/null || echo 2)
python=${PYTHON:-python3}
limit=${GPU_CHECK_TIMEOUT:-180}
gpu=$root/tests/gpu

say() { printf 'gpu-check: [%4ds] %s\n' "$SECONDS" "$*" >&2; }
# Setup failures (no build, no machine) stop the script: no check could mean anything.
die() { printf 'gpu-check: FAILED before the checks: %s\n' "$*" >&2; exit 1; }

unset LD_PRELOAD
export PYTHONDONTWRITEBYTECODE=1 # keep tests/gpu free of __pycache__
while IFS= read -r name; do unset "$name"; done < <(compgen -e | grep -E '^(CUDASNAP_|PYTORCH_CUDA_ALLOC_CONF$|PYTORCH_NO_CUDA_MEMORY_CACHING$|XLA_PYTHON_CLIENT_)' || true)

rm -rf "$logs" "$snaps" "$bin"
mkdir -p "$logs" "$snaps" "$bin" || die "cannot create $out"

# ---- results ------------------------------------------------------------------------------------
names=() states=() details=()
failed=0
# result NAME PASS|FAIL|SKIP DETAILS
result() {
  names+=("$1") states+=("$2") details+=("$3")
  [[ $2 == FAIL ]] && failed=$((failed + 1))
  say "$2  $1: $3"
}
nogpu() { result "$1" SKIP "no GPU (dry run)"; }
# verdict CHECK NUMBERS: PASS, or FAIL with the problems collected in the array msg
verdict() {
  if ((${#msg[@]})); then result "$1" FAIL "$(IFS=';'; echo "${msg[*]}"); $2"; else result "$1" PASS "$2"; fi
}

# ---- the machine --------------------------------------------------------------------------------
say "checking the machine"
command -v cmake >/dev/null || die "cmake not found (scripts/setup.sh installs it)"
gpu_name="none (dry run)" driver="none (dry run)"
if [[ $dry == 0 ]]; then
  command -v nvidia-smi >/dev/null || die "nvidia-smi not found: no NVIDIA driver on this machine"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$logs/nvidia-smi.txt" 2>&1 ||
    die "nvidia-smi failed: no usable GPU ($logs/nvidia-smi.txt)"
  gpu_name=$(head -n1 "$logs/nvidia-smi.txt" | cut -d, -f1)
  driver=$(head -n1 "$logs/nvidia-smi.txt" | cut -d, -f2 | tr -d ' ')
  [[ -n $gpu_name ]] || die "nvidia-smi lists no GPU"
fi
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[[ -x $nvcc ]] || die "nvcc not found (install the CUDA Toolkit or set NVCC)"
cuda_home=$(cd "$(dirname "$nvcc")/.." && pwd)
nvcc_version=$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
commit="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$root" diff --quiet HEAD 2>/dev/null || echo ' (modified)')"
say "GPU: $gpu_name; driver: $driver; nvcc: $nvcc_version; commit: $commit"

# ---- build --------------------------------------------------------------------------------------
say "building libcudasnap.so and the cudasnap tool (Release) in $build"
tests=OFF
[[ $dry == 1 ]] && tests=ON # the fake driver and runtime live with the tests
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCS_DEBUG=0 -DCS_BUILD_TESTS=$tests \
  >"$logs/cmake.log" 2>&1 || die "cmake failed ($logs/cmake.log)"
targets=(cudasnap cudasnap_cli)
[[ $dry == 1 ]] && targets+=(fake_cuda fake_cudart)
cmake --build "$build" -j "$jobs" --target "${targets[@]}" >>"$logs/cmake.log" 2>&1 ||
  die "build failed ($logs/cmake.log)"
lib=$build/interpose/libcudasnap.so
tool=$build/cli/cudasnap
[[ -f $lib && -x $tool ]] || die "no $lib or $tool after the build"

# cuDNN: CUDNN_ROOT, the toolkit, the system, or the wheel PyTorch depends on
cudnn_inc="" cudnn_lib=""
for d in ${CUDNN_ROOT:+"$CUDNN_ROOT"} "$cuda_home" /usr \
  "$("$python" -c 'import nvidia.cudnn; print(list(nvidia.cudnn.__path__)[0])' 2>/dev/null)"; do
  [[ -n $d && -f $d/include/cudnn.h ]] || continue
  for l in "$d/lib" "$d/lib64" "$d/lib/x86_64-linux-gnu" /usr/lib/x86_64-linux-gnu; do
    if compgen -G "$l/libcudnn.so*" >/dev/null; then cudnn_inc=$d/include cudnn_lib=$l; break 2; fi
  done
done

say "building the tests/gpu programs with nvcc"
arch=()
if [[ $dry == 0 ]] && "$nvcc" -arch=native -o "$bin/arch-probe" -x cu - <<<'int main() { return 0; }' >"$logs/nvcc-arch.log" 2>&1; then
  arch=(-arch=native)
fi
# shellcheck disable=SC2054 # -Xcompiler takes a comma-separated list
nvflags=(-std=c++17 -O2 -g -I"$root" "${arch[@]}" -Werror all-warnings -Xcompiler -Wall,-Wextra)
built=() # programs that built, by name
# nv NAME SOURCE [extra nvcc arguments...]
nv() {
  local name=$1 src=$2
  shift 2
  if "$nvcc" "${nvflags[@]}" -o "$bin/$name" "$gpu/$src" "$@" -ldl >"$logs/nvcc-$name.log" 2>&1; then
    built+=("$name")
  else
    say "nvcc failed for $name ($logs/nvcc-$name.log)"
  fi
}
have() { local b; for b in "${built[@]}"; do [[ $b == "$1" ]] && return 0; done; return 1; }
nv alloc_static alloc_basic.cu
nv alloc_shared alloc_basic.cu -cudart shared
nv free_hazard free_hazard.cu
nv sticky_error sticky_error.cu
nv cublas_workspace cublas_workspace.cu -lcublas
[[ -n $cudnn_inc ]] && nv cudnn_workspace cudnn_workspace.cu -I"$cudnn_inc" -L"$cudnn_lib" -lcudnn
nv device_reset device_reset.cu
nv fork_child fork_child.cu
nv leak leak.cu
nv signal_dump signal_dump.cu
build_failures=0
for p in alloc_static alloc_shared free_hazard sticky_error cublas_workspace device_reset fork_child leak signal_dump \
  ${cudnn_inc:+cudnn_workspace}; do
  have "$p" || build_failures=$((build_failures + 1))
done
if [[ $build_failures == 0 ]]; then
  result "build: nvcc programs" PASS "${#built[@]} programs ($([[ -n $cudnn_inc ]] && echo "cuDNN from $cudnn_inc" || echo "no cuDNN"))"
else
  result "build: nvcc programs" FAIL "$build_failures failed to build (logs/nvcc-*.log)"
fi
if PYTHONPYCACHEPREFIX=$build/pycache "$python" -m py_compile "$gpu"/*.py >"$logs/py_compile.log" 2>&1; then
  pyfiles=("$gpu"/*.py)
  result "build: Python programs" PASS "${#pyfiles[@]} files compile"
else
  result "build: Python programs" FAIL "py_compile failed (logs/py_compile.log)"
fi

run_env=(env)
if [[ $dry == 1 ]]; then
  # the programs that also build as host code, against the fake runtime (no kernels)
  fakes=$build/tests/fakes
  for name in alloc_basic fork_child leak; do
    "${CXX:-g++}" -std=c++17 -O2 -g -Wall -Wextra -Werror -x c++ -I"$root" -isystem "$cuda_home/include" \
      -o "$bin/host_$name" "$gpu/$name.cu" -L"$fakes" -l:libcudart.so.13 -ldl >"$logs/cxx-$name.log" 2>&1 ||
      die "host build of $name failed ($logs/cxx-$name.log)"
  done
  run_env+=("LD_LIBRARY_PATH=$fakes")
fi

# ---- running programs ---------------------------------------------------------------------------
# run TAG [VAR=value...] -- COMMAND...: stdout to logs/TAG.out, stderr to logs/TAG.err, status
# returned. Under cudasnap when the settings include CS=1: then LD_PRELOAD and CUDASNAP_OUTPUT
# (snapshots/TAG-%p-%n-%t.json unless the caller sets it) are added.
run() {
  local tag=$1
  shift
  local -a e=("${run_env[@]}")
  local cs=0
  while [[ $1 != -- ]]; do
    if [[ $1 == CS=1 ]]; then cs=1; else e+=("$1"); fi
    shift
  done
  shift
  if [[ $cs == 1 ]]; then
    e=("${e[0]}" "LD_PRELOAD=$lib" "CUDASNAP_OUTPUT=$snaps/$tag-%p-%n-%t.json" "${e[@]:1}")
  fi
  timeout "$limit" "${e[@]}" "$@" >"$logs/$tag.out" 2>"$logs/$tag.err"
}
# val TAG KEY: the value of the line "KEY value" the run printed
val() { awk -v k="$2" '$1 == k { $1 = ""; sub(/^ /, ""); print; exit }' "$logs/$1.out"; }
# snap TAG TRIGGER: the first snapshot of that run with that trigger (exit, signal, ...)
snap() { compgen -G "$snaps/$1-*-$2.*" | head -n1; }
# clean FILE: `cudasnap check` says it has no error and no warning
clean() { [[ -n $1 && -f $1 ]] && "$tool" check "$1" >"$logs/check-$(basename "$1").log" 2>&1; }

# ---- 1. nvcc-built programs ---------------------------------------------------------------------
check_alloc() { # NAME TAG PROGRAM
  local name=$1 prog=$3 ref=$2-ref cs=$2-cs
  if ! run "$ref" -- "$prog"; then result "$name" FAIL "the run without cudasnap failed (logs/$ref.err)"; return; fi
  if ! run "$cs" CS=1 -- "$prog"; then result "$name" FAIL "the run under cudasnap failed (logs/$cs.err)"; return; fi
  local f q msg=()
  f=$(snap "$cs" exit)
  q=$("$python" "$gpu/snapshot_query.py" allocs "$f" 2>>"$logs/$cs.err")
  local allocs traced
  allocs=$(val "$cs" ALLOCS) traced=$(sed -n 's/.*trace_allocs=\([0-9]*\).*/\1/p' <<<"$q")
  [[ $(val "$ref" CHECKSUM) == "$(val "$cs" CHECKSUM)" && -n $(val "$ref" CHECKSUM) ]] || msg+=("checksum differs")
  clean "$f" || msg+=("snapshot not clean (${f:-none written})")
  [[ -n $traced && -n $allocs && $traced -ge $allocs ]] || msg+=("trace has ${traced:-no} allocs for $allocs cudaMalloc calls")
  local numbers
  numbers="cudaMalloc calls $allocs, cudasnap allocations $(val "$cs" CS_ALLOCATIONS), trace allocs $traced, live bytes $(val "$cs" CS_LIVE_BYTES) for $(val "$cs" REQUESTED_BYTES) requested"
  verdict "$name" "$numbers"
}
if [[ $dry == 1 ]]; then
  check_alloc "1. host-built program on the fake runtime" alloc_host "$bin/host_alloc_basic"
  nogpu "1. nvcc program, static cudart"
  nogpu "1. nvcc program, -cudart shared"
else
  for v in static shared; do
    if have "alloc_$v"; then check_alloc "1. nvcc program, $([[ $v == static ]] && echo static cudart || echo -cudart shared)" "alloc_$v" "$bin/alloc_$v"
    else result "1. nvcc program, $v cudart" FAIL "did not build"; fi
  done
fi

# ---- 2. the free hazard; errors at free ---------------------------------------------------------
if [[ $dry == 1 ]]; then
  nogpu "2. free hazard"
  nogpu "2. kernel fault reported at cudaFree"
else
  if ! have free_hazard; then result "2. free hazard" FAIL "did not build"
  elif ! run hazard-ref -- "$bin/free_hazard"; then result "2. free hazard" FAIL "the run without cudasnap failed (logs/hazard-ref.err)"
  elif [[ $(val hazard-ref CORRUPT) != 0 ]]; then
    result "2. free hazard" FAIL "corrupt without cudasnap: the test itself is wrong (logs/hazard-ref.out)"
  else
    for mode in sync fence stream; do
      tag=hazard-$mode
      if ! run "$tag" CS=1 CUDASNAP_FREE=$mode -- "$bin/free_hazard"; then
        result "2. free hazard, CUDASNAP_FREE=$mode" FAIL "the run failed (logs/$tag.err)"
        continue
      fi
      numbers="corrupt $(val "$tag" CORRUPT), block reused $(val "$tag" REUSED), sum $(val "$tag" SUM) of $(val "$tag" EXPECTED), cudaFree took $(val "$tag" FREE_MS) ms (without cudasnap: $(val hazard-ref FREE_MS) ms)"
      if [[ $mode == stream ]]; then
        # stream-ordered reuse is the documented contract of this mode: reported, never a failure
        result "2. free hazard, CUDASNAP_FREE=stream" PASS "reported only (corruption expected, documented): $numbers"
      elif [[ $(val "$tag" CORRUPT) == 0 ]]; then
        result "2. free hazard, CUDASNAP_FREE=$mode" PASS "$numbers"
      else
        result "2. free hazard, CUDASNAP_FREE=$mode" FAIL "$numbers"
      fi
    done
  fi
  if ! have sticky_error; then result "2. kernel fault reported at cudaFree" FAIL "did not build"
  else
    run sticky-ref -- "$bin/sticky_error"
    run sticky-cs CS=1 CUDASNAP_FREE=sync -- "$bin/sticky_error"
    e0=$(val sticky-ref FREE_ERROR) e1=$(val sticky-cs FREE_ERROR)
    numbers="cudaFree returned $e1 ($(val sticky-cs FREE_ERROR_NAME)) under cudasnap, ${e0:-nothing} ($(val sticky-ref FREE_ERROR_NAME)) without"
    if [[ -z $e0 || $e0 == 0 ]]; then result "2. kernel fault reported at cudaFree" FAIL "the real cudaFree reported no error: the test itself is wrong; $numbers"
    elif [[ $e1 == "$e0" ]]; then result "2. kernel fault reported at cudaFree" PASS "$numbers"
    else result "2. kernel fault reported at cudaFree" FAIL "$numbers"; fi
  fi
fi

# ---- 3. cuBLAS and cuDNN ------------------------------------------------------------------------
# A frame of the library itself: its module, or an exported name (cublasSgemm); not our gc_* sites
# or source files (Python regular expressions, case-sensitive).
cublas_frame='libcublas|(^|\s)cublas[A-Z]'
cudnn_frame='libcudnn|(^|\s)cudnn[A-Z]'
if [[ $dry == 1 ]]; then
  nogpu "3. cuBLAS workspace"
  nogpu "3. cuDNN workspace"
else
  if ! have cublas_workspace; then result "3. cuBLAS workspace" FAIL "did not build"
  elif ! run cublas-ref -- "$bin/cublas_workspace" || ! run cublas-cs CS=1 -- "$bin/cublas_workspace"; then
    result "3. cuBLAS workspace" FAIL "a run failed (logs/cublas-*.err)"
  else
    f=$(snap cublas-cs exit) msg=()
    q=$("$python" "$gpu/snapshot_query.py" sites "$f" "$cublas_frame" 'gc_cublas_(create|gemm)_site' 2>>"$logs/cublas-cs.err") ||
      msg+=("no allocation with a libcublas frame and a gc_cublas_* site")
    [[ $(val cublas-ref CHECKSUM) == "$(val cublas-cs CHECKSUM)" ]] || msg+=("checksum differs")
    clean "$f" || msg+=("snapshot not clean")
    numbers="${q:-no match}; cudaMalloc calls inside cuBLAS: $(val cublas-cs CUBLAS_ALLOCS); max error $(val cublas-cs MAX_ABS_ERROR)"
    verdict "3. cuBLAS workspace" "$numbers"
  fi
  if [[ -z $cudnn_inc ]]; then result "3. cuDNN workspace" SKIP "cuDNN headers or libraries not found (set CUDNN_ROOT)"
  elif ! have cudnn_workspace; then result "3. cuDNN workspace" FAIL "did not build"
  elif ! run cudnn-ref LD_LIBRARY_PATH="$cudnn_lib" -- "$bin/cudnn_workspace" ||
    ! run cudnn-cs CS=1 LD_LIBRARY_PATH="$cudnn_lib" -- "$bin/cudnn_workspace"; then
    result "3. cuDNN workspace" FAIL "a run failed (logs/cudnn-*.err)"
  else
    f=$(snap cudnn-cs exit) msg=()
    q=$("$python" "$gpu/snapshot_query.py" sites "$f" 'gc_cudnn_workspace_site' 'main' 2>>"$logs/cudnn-cs.err") ||
      msg+=("the workspace allocation is not in the snapshot with its site")
    inner=$("$python" "$gpu/snapshot_query.py" sites "$f" "$cudnn_frame" 'gc_cudnn_' 2>>"$logs/cudnn-cs.err")
    [[ $(val cudnn-ref CHECKSUM) == "$(val cudnn-cs CHECKSUM)" ]] || msg+=("checksum differs")
    clean "$f" || msg+=("snapshot not clean")
    numbers="workspace $(val cudnn-cs WORKSPACE_BYTES) B: ${q:-no match}; cuDNN's own allocations: ${inner:-none}; cuDNN $(val cudnn-cs CUDNN_VERSION); max error $(val cudnn-cs MAX_ABS_ERROR)"
    verdict "3. cuDNN workspace" "$numbers"
  fi
fi

# ---- 4. PyTorch ---------------------------------------------------------------------------------
torch_run() { # TAG [VAR=value...]: torch_step.py, its JSON in logs/TAG.json, a pickle snapshot
  local tag=$1
  shift
  run "$tag" "$@" "CUDASNAP_OUTPUT=$snaps/$tag-%p-%n-%t.pickle" -- "$python" "$gpu/torch_step.py" "$logs/$tag.json"
}
if [[ $dry == 1 ]]; then
  nogpu "4. PyTorch"
elif ! "$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >"$logs/torch-import.log" 2>&1; then
  result "4. PyTorch" SKIP "$python cannot import torch with CUDA (logs/torch-import.log)"
elif ! torch_run torch-ref; then
  result "4. PyTorch" FAIL "the run without cudasnap failed (logs/torch-ref.err)"
else
  ref_loss=$(val torch-ref LOSS)
  torch_version=$("$python" -c 'import torch; print(torch.__version__)' 2>/dev/null)
  for variant in nocache torchalloc expandable; do
    tag=torch-$variant
    case $variant in
      nocache) label="(a) PYTORCH_NO_CUDA_MEMORY_CACHING=1"; settings=(PYTORCH_NO_CUDA_MEMORY_CACHING=1 CUDASNAP_ALLOC_CONF=split_large:True) ;;
      torchalloc) label="(b) PyTorch's allocator"; settings=() ;;
      expandable) label="(c) expandable_segments:True"; settings=(PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True) ;;
    esac
    if ! torch_run "$tag" CS=1 "${settings[@]}"; then result "4. PyTorch $label" FAIL "the run failed (logs/$tag.err)"; continue; fi
    msg=() extra=""
    [[ -n $ref_loss && $(val "$tag" LOSS) == "$ref_loss" ]] || msg+=("loss $(val "$tag" LOSS) != $ref_loss")
    f=$(snap "$tag" exit)
    clean "$f" || msg+=("snapshot not clean (${f:-none written})")
    for sub in stats trace segments; do
      args=("$sub" "$f")
      [[ $sub == segments ]] && args+=(-o "$logs/$tag-segments.svg")
      "$python" -m torch.cuda._memory_viz "${args[@]}" >"$logs/$tag-memory_viz-$sub.log" 2>&1 ||
        msg+=("_memory_viz $sub failed (logs/$tag-memory_viz-$sub.log)")
    done
    case $variant in
      nocache)
        extra=$("$python" "$gpu/torch_compare.py" stats "$logs/torch-ref.json" "$logs/$tag.json" 2>&1 | tee "$logs/$tag-compare.log" | tail -n1)
        "$python" "$gpu/torch_compare.py" stats "$logs/torch-ref.json" "$logs/$tag.json" >/dev/null 2>&1 ||
          msg+=("memory_stats differ from torch's (logs/$tag-compare.log)") ;;
      torchalloc)
        extra=$("$python" "$gpu/torch_compare.py" held "$logs/$tag.json" 2>&1) ||
          msg+=("cudasnap holds less than torch.cuda.memory_reserved()") ;;
      expandable)
        extra="cudasnap_memory_allocated $("$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["cudasnap_allocated"])' "$logs/$tag.json" 2>/dev/null) (expandable segments map memory with the VMM API, which cudasnap passes through)" ;;
    esac
    numbers="torch $torch_version; loss ${ref_loss%% *}...; $extra"
    verdict "4. PyTorch $label" "$numbers"
  done
fi

# ---- 5. JAX, CuPy, numba ------------------------------------------------------------------------
if [[ $dry == 1 ]]; then
  nogpu "5. JAX, CuPy, numba"
else
  for pkg in jax cupy numba; do
    settings=()
    [[ $pkg == jax ]] && settings=(XLA_PYTHON_CLIENT_ALLOCATOR=platform XLA_PYTHON_CLIENT_PREALLOCATE=false)
    run "$pkg-ref" "${settings[@]}" -- "$python" "$gpu/${pkg}_check.py"
    rc=$?
    if [[ $rc == 3 ]]; then result "5. $pkg" SKIP "$(head -n1 "$logs/$pkg-ref.out")"; continue; fi
    if [[ $rc != 0 ]]; then result "5. $pkg" FAIL "the run without cudasnap failed (logs/$pkg-ref.err)"; continue; fi
    if ! run "$pkg-cs" CS=1 "${settings[@]}" -- "$python" "$gpu/${pkg}_check.py"; then
      result "5. $pkg" FAIL "the run under cudasnap failed (logs/$pkg-cs.err)"; continue
    fi
    msg=()
    [[ $(val "$pkg-ref" RESULT) == "$(val "$pkg-cs" RESULT)" ]] || msg+=("result differs")
    n=$(val "$pkg-cs" CS_ALLOCS)
    [[ -n $n && $n -gt 0 ]] || msg+=("cudasnap served no allocation")
    f=$(snap "$pkg-cs" exit)
    clean "$f" || msg+=("snapshot not clean (${f:-none written})")
    numbers="cudasnap allocations $n; $("$python" "$gpu/snapshot_query.py" allocs "$f" 2>/dev/null)"
    verdict "5. $pkg" "$numbers"
  done
fi

# ---- 6. process life --------------------------------------------------------------------------------
prefix=""
[[ $dry == 1 ]] && prefix=host_
if [[ $dry == 1 ]]; then nogpu "6. cudaDeviceReset mid-run"
elif ! have device_reset; then result "6. cudaDeviceReset mid-run" FAIL "did not build"
elif ! run reset-ref -- "$bin/device_reset" || ! run reset-cs CS=1 -- "$bin/device_reset"; then
  result "6. cudaDeviceReset mid-run" FAIL "a run failed (logs/reset-*.err)"
else
  msg=()
  [[ $(val reset-ref CHECKSUM) == "$(val reset-cs CHECKSUM)" ]] || msg+=("checksum differs")
  f=$(snap reset-cs exit)
  clean "$f" || msg+=("snapshot not clean (${f:-none written})")
  numbers="cudasnap_memory_allocated at the end $(val reset-cs CS_ALLOCATED_AFTER)"
  verdict "6. cudaDeviceReset mid-run" "$numbers"
fi

if [[ $dry == 0 ]] && ! have fork_child; then result "6. fork after CUDA init" FAIL "did not build"
elif ! run fork-ref -- "$bin/${prefix}fork_child" || ! run fork-cs CS=1 -- "$bin/${prefix}fork_child"; then
  result "6. fork after CUDA init" FAIL "a run failed (logs/fork-*.err)"
else
  msg=()
  parent=$(val fork-cs PARENT_PID) child=$(val fork-cs CHILD_PID)
  [[ $(val fork-cs CHILD_STATUS) == 0 ]] || msg+=("the child exited with $(val fork-cs CHILD_STATUS)")
  [[ $(val fork-ref CHECKSUM) == "$(val fork-cs CHECKSUM)" ]] || msg+=("checksum differs")
  files=$(compgen -G "$snaps/fork-cs-*" | wc -l)
  compgen -G "$snaps/fork-cs-$child-*" >/dev/null && msg+=("the child wrote a snapshot")
  f=$(snap "fork-cs-$parent" exit)
  clean "$f" || msg+=("the parent's snapshot is missing or not clean")
  numbers="child status $(val fork-cs CHILD_STATUS); snapshots written: $files (the parent's only expected)"
  verdict "6. fork after CUDA init" "$numbers"
fi

if [[ $dry == 0 ]] && ! have leak; then result "6. exit without freeing: leak report" FAIL "did not build"
elif ! run leak-cs CS=1 -- "$bin/${prefix}leak"; then
  result "6. exit without freeing: leak report" FAIL "the run failed (logs/leak-cs.err)"
else
  line=$(grep -m1 '^cudasnap:.*gc_leaky_site' "$logs/leak-cs.err")
  if [[ -n $line ]]; then result "6. exit without freeing: leak report" PASS "stderr: ${line#cudasnap: }"
  else result "6. exit without freeing: leak report" FAIL "no leak line names gc_leaky_site (logs/leak-cs.err)"; fi
fi

if [[ $dry == 1 ]]; then nogpu "6. SIGUSR1 while kernels run"
elif ! have signal_dump; then result "6. SIGUSR1 while kernels run" FAIL "did not build"
elif ! run signal-ref -- "$bin/signal_dump" || ! run signal-cs CS=1 -- "$bin/signal_dump"; then
  result "6. SIGUSR1 while kernels run" FAIL "a run failed (logs/signal-*.err)"
else
  msg=()
  [[ $(val signal-ref CHECKSUM) == "$(val signal-cs CHECKSUM)" ]] || msg+=("checksum differs")
  [[ $(val signal-cs SIGNALED) == 1 ]] || msg+=("the program did not see cudasnap and sent no signal")
  [[ $(val signal-cs KERNEL_RUNNING) == 1 ]] || msg+=("the kernel had finished 200 ms after the signal: the test did not test a running kernel")
  f=$(snap signal-cs signal)
  clean "$f" || msg+=("signal snapshot missing or not clean (${f:-none written})")
  numbers="signal snapshot $(basename "${f:-none}"), $(stat -c %s "${f:-/dev/null}" 2>/dev/null) B"
  verdict "6. SIGUSR1 while kernels run" "$numbers"
fi

# ---- 7. compute-sanitizer -----------------------------------------------------------------------
sanitizer=$(command -v compute-sanitizer || echo "$cuda_home/bin/compute-sanitizer")
if [[ $dry == 1 ]]; then nogpu "7. compute-sanitizer memcheck"
elif [[ ! -x $sanitizer ]]; then result "7. compute-sanitizer memcheck" SKIP "compute-sanitizer not found"
elif ! have alloc_static; then result "7. compute-sanitizer memcheck" FAIL "alloc_static did not build"
else
  # no leak check: cudasnap keeps its cache to the end and makes no CUDA call at exit, by design
  run sanitizer -- "$sanitizer" --tool memcheck --error-exitcode 99 --print-limit 20 \
    env "LD_PRELOAD=$lib" "CUDASNAP_OUTPUT=$snaps/sanitizer-%p-%n-%t.json" "$bin/alloc_static"
  rc=$?
  summary=$(grep -m1 'ERROR SUMMARY' "$logs/sanitizer.out" "$logs/sanitizer.err" | sed 's/^[^:]*:[^:]*: //')
  if [[ $rc == 0 && $summary == *" 0 errors"* && $(val sanitizer CHECKSUM) == "$(val alloc_static-ref CHECKSUM)" ]]; then
    result "7. compute-sanitizer memcheck" PASS "$summary"
  else
    result "7. compute-sanitizer memcheck" FAIL "status $rc, ${summary:-no ERROR SUMMARY}, checksum $(val sanitizer CHECKSUM) vs $(val alloc_static-ref CHECKSUM) (logs/sanitizer.*)"
  fi
fi

# ---- report -------------------------------------------------------------------------------------
{
  echo "# cudasnap GPU checks$([[ $dry == 1 ]] && echo ' (dry run, no GPU)')"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- GPU: $gpu_name"
  echo "- driver: $driver"
  echo "- nvcc: $nvcc_version"
  echo "- commit: $commit"
  echo "- logs: \`$logs\`"
  echo
  echo "| check | result | numbers |"
  echo "| --- | --- | --- |"
  for i in "${!names[@]}"; do
    printf '| %s | %s | %s |\n' "${names[$i]}" "${states[$i]}" "${details[$i]//|/\\|}"
  done
  echo
  echo "$failed of ${#names[@]} checks failed."
} >"$report"
cat "$report" >&2
say "report: $report"
[[ $failed == 0 ]]
