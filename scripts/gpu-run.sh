#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# cudasnap's checks on a real GPU, run from a bundle: this file is the bundle's run.sh (see
# `scripts/gpu-check.sh --bundle DIR`, which builds everything it runs). It needs only what
# base.txt beside it lists (an Ubuntu 24.04 CUDA machine: driver, CUDA libraries, python3 with
# PyTorch, JAX, CuPy, numba where present), no network and no build tools, and ends within about
# eight minutes on an H100.
#
#   run.sh [--dry-run] [--no-bench] [--only LIST] [OUTDIR]
#
# The checks (the programs are in gpu/ and py/, each source in tests/gpu/ says what it tests):
#  1. nvcc-built programs, static cudart and -cudart shared: every cudaMalloc reaches the cache,
#     the checksum equals a run without cudasnap, the snapshot is clean under `cudasnap check`.
#  2. The free hazard in each CUDASNAP_FREE mode (no corruption with sync and fence; stream is
#     reported); a kernel fault before a free is returned by that free in sync mode.
#  3. cuBLAS's and cuDNN's allocations appear in the snapshot with their call sites.
#  4. PyTorch, a seeded training step three ways (PYTORCH_NO_CUDA_MEMORY_CACHING=1, PyTorch's
#     allocator, expandable_segments:True): the loss bit for bit, the pickles read by
#     torch.cuda._memory_viz (stats, trace, and segments/memory without fetching flamegraph.pl),
#     memory_stats compared; expandable segments drawn as VMM segments
#     totalling torch.cuda.memory_reserved(); Python frames naming the script's allocating line.
#  5. JAX (platform allocator), CuPy (no pool), numba: allocations seen, results unchanged.
#  6. cudaDeviceReset mid-run; fork after CUDA init; the leak report; SIGUSR1 while kernels run;
#     _exit(3) leaves an exit snapshot and status 3; a SIGSEGV leaves a "crash" snapshot and the
#     process still dies by SIGSEGV.
#  7. Pass-through memory drawn in a snapshot: NCCL-style VMM, cudaMallocAsync, managed, pitch
#     (and gone from the exit snapshot once freed).
#  8. compute-sanitizer memcheck on the check-1 program under cudasnap.
#  9. Two ranks on one GPU and `cudasnap ranks`. 10. `cudasnap export` to pprof and Perfetto.
# 11. The overhead a user pays: a PyTorch training loop and CuPy allocating, with and without.
# 12. A real OOM (a cudaMalloc loop, and PyTorch's torch.OutOfMemoryError beside cudasnap's
#     answer); `cudasnap top --once --json` and `cudasnap metrics --once` while a program (and
#     PyTorch) runs; the exit snapshot's reconciliation with the driver, with its numbers; the cost
#     of a cache growth that asks the driver.
# Then the GPU benchmark (bench.sh --quick, scripts/gpu-bench.sh) in what time is left (without its
# PyTorch part when less than four minutes are).
#
# Each program run has a time limit (GPU_CHECK_TIMEOUT, default 120 s), the checks together
# GPU_CHECK_BUDGET (default 360 s; a check that would start later is reported SKIP), the benchmark
# GPU_BENCH_BUDGET (default 300 s, and never past eight minutes in all). Every check runs even when
# an earlier one failed.
#
# Results in OUTDIR (default $OUT, else ./gpu-check-results), at most four files: report.md (the
# machine, the bundle, each check's PASS/FAIL/SKIP with its numbers, the benchmark's lines),
# bench.txt (the BENCH lines), bench-machine.txt, logs.tar.gz (every run's stdout and stderr, and
# the snapshots). Exit status 1 when any check FAILs, 0 otherwise; 2 on bad arguments.
#
#   --dry-run   no GPU: runs the host-built programs (dry/) on the fake CUDA runtime of dry/fakes
#               (check 1 with one program, check 6 but SIGUSR1, checks 7, 9 and 10, check 12 but
#               PyTorch, and the benchmark's script) and reports the rest SKIP
#   --no-bench  no benchmark
#   --only LIST only these checks, by number, comma-separated (e.g. 4,7 after a fix, to spend less of
#               a GPU machine's time); "bench" in the list runs the benchmark too, which --only
#               otherwise leaves out. The others are reported SKIP.
#
# Environment: PYTHON (python3), CUDA_HOME (where to look for CUDA libraries a program needs and
# compute-sanitizer; /usr/local/cuda and the nvidia-* Python packages are searched too),
# GPU_CHECK_KEEP=1 (keep the work directory under $TMPDIR, whose logs and snapshots the tarball holds).
set -uo pipefail # not -e: a failing check is recorded and the next one runs

usage() { sed -n '3,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }

dry=0 bench=1 out="" only=""
while (($#)); do
  case $1 in
    --dry-run) dry=1 ;;
    --no-bench) bench=0 ;;
    --only)
      [[ ${2-} =~ ^([0-9]|1[012]|bench)(,([0-9]|1[012]|bench))*$ ]] ||
        { printf 'run.sh: --only takes check numbers 0-12 and "bench", comma-separated (e.g. 4,7), not "%s"\n' "${2-}" >&2; exit 2; }
      only=$2
      shift ;;
    -h | --help) usage; exit 0 ;;
    -*) printf 'run.sh: unknown option "%s"\n\n' "$1" >&2; usage >&2; exit 2 ;;
    *)
      [[ -z $out ]] || { printf 'run.sh: one output directory only ("%s" and "%s")\n' "$out" "$1" >&2; exit 2; }
      out=$1 ;;
  esac
  shift
done
# selected WHAT: a check number, or "bench", that --only (if given) names
selected() { [[ -z $only || ",$only," == *",$1,"* ]]; }
[[ -n $only ]] && ! selected bench && bench=0

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${out:-${OUT:-$PWD/gpu-check-results}}
python=${PYTHON:-python3}
limit=${GPU_CHECK_TIMEOUT:-120}
budget=${GPU_CHECK_BUDGET:-360}
bench_budget=${GPU_BENCH_BUDGET:-300}
lib=$here/lib/libcudasnap.so
tool=$here/bin/cudasnap
bin=$here/gpu
py=$here/py
fakes=$here/dry/fakes
[[ $dry == 1 ]] && bin=$here/dry

say() { printf 'gpu-check: [%4ds] %s\n' "$SECONDS" "$*" >&2; }
# Setup failures stop the script: no check could mean anything.
die() { printf 'gpu-check: FAILED before the checks: %s\n' "$*" >&2; exit 1; }

for v in GPU_CHECK_TIMEOUT GPU_CHECK_BUDGET GPU_BENCH_BUDGET; do
  [[ ${!v:-1} =~ ^[0-9]+$ ]] || { printf 'run.sh: %s="%s" is not a number of seconds\n' "$v" "${!v}" >&2; exit 2; }
done
# a copy that lost its modes on the way (an archive, a file transfer) still runs
for f in "$here"/bin/* "$here"/gpu/* "$here"/dry/*; do [[ -f $f && ! -x $f ]] && chmod +x "$f" 2>/dev/null; done
[[ -f $lib && -x $tool && -f $here/BUNDLE.txt ]] || die "$here is not a complete bundle (no lib/libcudasnap.so, bin/cudasnap or BUNDLE.txt)"

unset LD_PRELOAD
export PYTHONDONTWRITEBYTECODE=1
while IFS= read -r name; do unset "$name"; done < <(compgen -e | grep -E '^(CUDASNAP_|PYTORCH_CUDA_ALLOC_CONF$|PYTORCH_NO_CUDA_MEMORY_CACHING$|XLA_PYTHON_CLIENT_)' || true)
ulimit -c 0 # the crash check must not leave a core file

work=$(mktemp -d "${TMPDIR:-/tmp}/cudasnap-gpu-check.XXXXXX") || die "cannot create a work directory"
logs=$work/logs
snaps=$work/snapshots
mkdir -p "$logs" "$snaps" "$out" || die "cannot create $out"
rm -f "$out/report.md" "$out/logs.tar.gz" "$out/bench.txt" "$out/bench-machine.txt"

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
# skipped CHECK: true (and the check reported SKIP) when --only leaves it out, or when the checks'
# time budget is spent; CHECK's label starts with its number
skipped() {
  if ! selected "${1%%.*}"; then result "$1" SKIP "not selected (--only $only)"; return 0; fi
  ((SECONDS < budget)) && return 1
  result "$1" SKIP "the checks' time budget (${budget}s, GPU_CHECK_BUDGET) was spent before it started"
}

# ---- the machine --------------------------------------------------------------------------------
say "checking the machine"
missing=()
while read -r kind name _; do
  [[ $kind == program ]] || continue
  [[ $name == nvidia-smi && $dry == 1 ]] && continue
  command -v "$name" >/dev/null || missing+=("$name")
done <"$here/base.txt"
((${#missing[@]} == 0)) || die "this machine lacks ${missing[*]} (base.txt lists what a bundle expects)"
gpu_name="none (dry run)" driver="none (dry run)" cuda_driver="" cc=""
if [[ $dry == 0 ]]; then
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader >"$logs/nvidia-smi.txt" 2>&1 ||
    die "nvidia-smi failed: no usable GPU ($(head -c 300 "$logs/nvidia-smi.txt"))"
  IFS=, read -r gpu_name driver cc <"$logs/nvidia-smi.txt"
  driver=${driver// /} cc=${cc// /}
  [[ -n $gpu_name ]] || die "nvidia-smi lists no GPU"
  cuda_driver=$(nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9.]*\).*/\1/p' | head -n1)
fi
bundle_commit=$(sed -n 's/^commit: //p' "$here/BUNDLE.txt")
bundle_archs=$(sed -n 's/^gpu archs: //p' "$here/BUNDLE.txt")
say "GPU: $gpu_name${cc:+ (compute capability $cc)}; driver: $driver${cuda_driver:+ (CUDA $cuda_driver)}; bundle: $bundle_commit"

# Libraries a program needs that the loader does not find by itself (the CUDA Toolkit outside the
# loader's path, cuDNN inside a Python package): searched once in the usual places.
lib_roots=()
for d in ${CUDA_HOME:+"$CUDA_HOME"} ${CUDA_PATH:+"$CUDA_PATH"} /usr/local/cuda /usr/local/cuda-*; do
  [[ -d $d ]] && lib_roots+=("$d")
done
while IFS= read -r d; do [[ -d $d ]] && lib_roots+=("$d"); done < <("$python" -c 'import nvidia; print("\n".join(nvidia.__path__))' 2>/dev/null)
((${#lib_roots[@]})) || lib_roots=(/nonexistent) # find must not search the current directory
declare -A lib_dir_of=()
# libpath PROGRAM: an LD_LIBRARY_PATH that resolves every library PROGRAM needs, or nothing
libpath() {
  local dirs=() soname d
  while read -r soname; do
    d=${lib_dir_of[$soname]-}
    if [[ -z $d ]]; then
      d=$(find "${lib_roots[@]}" -maxdepth 5 -name "$soname" -print -quit 2>/dev/null)
      d=${d%/*}
      lib_dir_of[$soname]=${d:-none}
    fi
    [[ -n $d && $d != none ]] && dirs+=("$d")
  done < <(ldd "$1" 2>/dev/null | awk '$2 == "=>" && $3 == "not" { print $1 }')
  ((${#dirs[@]})) && (IFS=:; echo "${dirs[*]}")
}

# ---- running programs ---------------------------------------------------------------------------
# run TAG [VAR=value...] -- COMMAND...: stdout to logs/TAG.out, stderr to logs/TAG.err, status
# returned (124 after the time limit, which is then noted in TAG.err). Under cudasnap when the
# settings include CS=1: then LD_PRELOAD and CUDASNAP_OUTPUT (snapshots/TAG-%p-%n-%t.json unless
# the caller sets it) are added. A program of the bundle gets the library path it needs; in the
# dry run every program runs on the fake runtime.
run() {
  local tag=$1
  shift
  local -a e=(env)
  local cs=0
  while [[ $1 != -- ]]; do
    if [[ $1 == CS=1 ]]; then cs=1; else e+=("$1"); fi
    shift
  done
  shift
  if [[ $dry == 1 ]]; then
    e+=("LD_LIBRARY_PATH=$fakes")
  elif [[ $1 == "$bin"/* ]]; then
    local p
    p=$(libpath "$1")
    [[ -n $p ]] && e+=("LD_LIBRARY_PATH=$p")
  fi
  if [[ $cs == 1 ]]; then
    e=("${e[0]}" "LD_PRELOAD=$lib" "CUDASNAP_OUTPUT=$snaps/$tag-%p-%n-%t.json" "${e[@]:1}")
  fi
  local left=$((budget + 60 - SECONDS)) # a check that started in time may finish a little late
  ((left > limit)) && left=$limit
  ((left < 10)) && left=10
  timeout "$left" "${e[@]}" "$@" >"$logs/$tag.out" 2>"$logs/$tag.err"
  local rc=$?
  [[ $rc == 124 ]] && echo "gpu-check: timed out after ${left}s" >>"$logs/$tag.err"
  return $rc
}
# why TAG: a short reason a run failed, for the report
why() {
  if grep -q '^gpu-check: timed out' "$logs/$1.err" 2>/dev/null; then echo "$1 timed out (logs/$1.err)"
  else echo "$1 failed: $(grep -v '^\s*$' "$logs/$1.err" 2>/dev/null | tail -n1 | cut -c1-160) (logs/$1.err)"; fi
}
# val TAG KEY: the value of the line "KEY value" the run printed
val() { awk -v k="$2" '$1 == k { $1 = ""; sub(/^ /, ""); print; exit }' "$logs/$1.out" 2>/dev/null; }
# snap TAG TRIGGER: the first snapshot of that run with that trigger (exit, signal, crash, ...)
snap() { compgen -G "$snaps/$1-*-$2.*" | head -n1; }
# clean FILE: `cudasnap check` says it has no error and no warning
clean() { [[ -n $1 && -f $1 ]] && "$tool" check "$1" >"$logs/check-$(basename "$1").log" 2>&1; }
query() { "$python" "$py/snapshot_query.py" "$@"; }
have() { [[ -x $bin/$1 ]]; }

# ---- 0. the bundle ------------------------------------------------------------------------------
expected=(alloc_static alloc_shared free_hazard ipc_small sticky_error cublas_workspace device_reset fork_child leak
  signal_dump passthrough_kinds exit_paths memory_pressure gpu_alloc)
[[ $dry == 1 ]] && expected=(alloc_basic fork_child leak device_reset exit_paths passthrough_kinds memory_pressure gpu_alloc)
absent=()
for p in "${expected[@]}"; do have "$p" || absent+=("$p"); done
if ((${#absent[@]})); then result "0. bundle programs" FAIL "missing: ${absent[*]}"
else
  numbers="${#expected[@]} programs$([[ $dry == 0 ]] && have cudnn_workspace && echo ' + cudnn_workspace'), built for ${bundle_archs:-?} at $bundle_commit"
  if [[ $dry == 0 && -n $cc && -n $bundle_archs ]]; then
    sm=sm_${cc//./}
    if [[ " $bundle_archs " == *" $sm "* ]]; then numbers+="; this GPU ($sm) has machine code"
    else numbers+="; this GPU ($sm) runs the PTX (JIT)"; fi
  fi
  result "0. bundle programs" PASS "$numbers"
fi

# ---- 1. nvcc-built programs ---------------------------------------------------------------------
check_alloc() { # NAME TAG PROGRAM
  local name=$1 prog=$3 ref=$2-ref cs=$2-cs
  skipped "$name" && return
  if ! run "$ref" -- "$prog"; then result "$name" FAIL "without cudasnap: $(why "$ref")"; return; fi
  if ! run "$cs" CS=1 -- "$prog"; then result "$name" FAIL "under cudasnap: $(why "$cs")"; return; fi
  local f q msg=()
  f=$(snap "$cs" exit)
  q=$(query allocs "$f" 2>>"$logs/$cs.err")
  local allocs traced
  allocs=$(val "$cs" ALLOCS) traced=$(sed -n 's/.*trace_allocs=\([0-9]*\).*/\1/p' <<<"$q")
  [[ $(val "$ref" CHECKSUM) == "$(val "$cs" CHECKSUM)" && -n $(val "$ref" CHECKSUM) ]] || msg+=("checksum differs")
  clean "$f" || msg+=("snapshot not clean (${f:-none written})")
  [[ -n $traced && -n $allocs && $traced -ge $allocs ]] || msg+=("trace has ${traced:-no} allocs for $allocs cudaMalloc calls")
  verdict "$name" "cudaMalloc calls $allocs, cudasnap allocations $(val "$cs" CS_ALLOCATIONS), trace allocs $traced, live bytes $(val "$cs" CS_LIVE_BYTES) for $(val "$cs" REQUESTED_BYTES) requested"
}
if [[ $dry == 1 ]]; then
  check_alloc "1. host-built program on the fake runtime" alloc_host "$bin/alloc_basic"
  nogpu "1. nvcc program, static cudart"
  nogpu "1. nvcc program, -cudart shared"
else
  for v in static shared; do
    label="1. nvcc program, $([[ $v == static ]] && echo static cudart || echo -cudart shared)"
    if have "alloc_$v"; then check_alloc "$label" "alloc_$v" "$bin/alloc_$v"; else result "$label" FAIL "not in the bundle"; fi
  done
fi

# ---- 2. the free hazard; errors at free ---------------------------------------------------------
if [[ $dry == 1 ]]; then
  nogpu "2. free hazard"
  nogpu "2. stream frees need CUDASNAP_FREE_STREAM_ACK"
  nogpu "2. stream frees on the legacy stream"
  nogpu "2. IPC of a small block"
  nogpu "2. kernel fault reported at cudaFree"
else
  if skipped "2. free hazard"; then :
  elif ! have free_hazard; then result "2. free hazard" FAIL "not in the bundle"
  elif ! run hazard-ref -- "$bin/free_hazard"; then result "2. free hazard" FAIL "without cudasnap: $(why hazard-ref)"
  elif [[ $(val hazard-ref CORRUPT) != 0 ]]; then
    result "2. free hazard" FAIL "corrupt without cudasnap: the test itself is wrong (logs/hazard-ref.out)"
  else
    for mode in sync fence stream; do
      tag=hazard-$mode
      if ! run "$tag" CS=1 CUDASNAP_FREE=$mode CUDASNAP_FREE_STREAM_ACK=1 -- "$bin/free_hazard"; then
        result "2. free hazard, CUDASNAP_FREE=$mode" FAIL "$(why "$tag")"
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
  # stream frees: refused without the acknowledgement (sync is used, so no corruption); with it,
  # the program that keeps to the legacy stream gets its block back at once, uncorrupted (issue 39)
  if skipped "2. stream frees need CUDASNAP_FREE_STREAM_ACK"; then :
  elif ! have free_hazard; then result "2. stream frees need CUDASNAP_FREE_STREAM_ACK" FAIL "not in the bundle"
  elif ! run hazard-stream-noack CS=1 CUDASNAP_FREE=stream -- "$bin/free_hazard"; then
    result "2. stream frees need CUDASNAP_FREE_STREAM_ACK" FAIL "$(why hazard-stream-noack)"
  else
    numbers="corrupt $(val hazard-stream-noack CORRUPT), block reused $(val hazard-stream-noack REUSED)"
    if ! grep -q 'CUDASNAP_FREE=stream reuses a freed block at once' "$logs/hazard-stream-noack.err"; then
      result "2. stream frees need CUDASNAP_FREE_STREAM_ACK" FAIL "no refusal line on stderr; $numbers"
    elif [[ $(val hazard-stream-noack CORRUPT) != 0 ]]; then result "2. stream frees need CUDASNAP_FREE_STREAM_ACK" FAIL "$numbers"
    else result "2. stream frees need CUDASNAP_FREE_STREAM_ACK" PASS "refused with one line, sync used: $numbers"; fi
  fi
  if skipped "2. stream frees on the legacy stream"; then :
  elif ! have free_hazard; then result "2. stream frees on the legacy stream" FAIL "not in the bundle"
  elif ! run hazard-stream-legacy CS=1 CUDASNAP_FREE=stream CUDASNAP_FREE_STREAM_ACK=1 GC_HAZARD_STREAMS=legacy -- "$bin/free_hazard"; then
    result "2. stream frees on the legacy stream" FAIL "$(why hazard-stream-legacy)"
  else
    numbers="corrupt $(val hazard-stream-legacy CORRUPT), block reused $(val hazard-stream-legacy REUSED), cudaFree took $(val hazard-stream-legacy FREE_MS) ms"
    if [[ $(val hazard-stream-legacy CORRUPT) == 0 && $(val hazard-stream-legacy REUSED) == 1 ]]; then
      result "2. stream frees on the legacy stream" PASS "$numbers"
    else result "2. stream frees on the legacy stream" FAIL "$numbers (want corrupt 0, reused 1)"; fi
  fi
  # legacy IPC of a small block: never a wrong mapping (issue 39, item 3)
  if skipped "2. IPC of a small block"; then :
  elif ! have ipc_small; then result "2. IPC of a small block" FAIL "not in the bundle"
  elif ! run ipc-ref -- "$bin/ipc_small"; then result "2. IPC of a small block" FAIL "without cudasnap: $(why ipc-ref)"
  elif ! run ipc-cs CS=1 -- "$bin/ipc_small"; then result "2. IPC of a small block" FAIL "$(why ipc-cs)"
  elif ! run ipc-own CS=1 CUDASNAP_ALLOC_CONF=ipc_small:True -- "$bin/ipc_small"; then result "2. IPC of a small block" FAIL "$(why ipc-own)"
  else
    numbers="without cudasnap match $(val ipc-ref MATCH); default: refused $(val ipc-cs REFUSED), match $(val ipc-cs MATCH), block $(val ipc-cs OFFSET) bytes after the first; ipc_small:True: refused $(val ipc-own REFUSED), match $(val ipc-own MATCH)"
    if [[ $(val ipc-ref MATCH) != 1 ]]; then result "2. IPC of a small block" FAIL "the driver's own export did not map the block: the test itself is wrong; $numbers"
    elif [[ $(val ipc-cs MATCH) == 0 || $(val ipc-own MATCH) != 1 ]]; then result "2. IPC of a small block" FAIL "$numbers"
    else result "2. IPC of a small block" PASS "$numbers"; fi
  fi
  if skipped "2. kernel fault reported at cudaFree"; then :
  elif ! have sticky_error; then result "2. kernel fault reported at cudaFree" FAIL "not in the bundle"
  elif ! run sticky-ref -- "$bin/sticky_error"; then result "2. kernel fault reported at cudaFree" FAIL "without cudasnap: $(why sticky-ref)"
  elif ! run sticky-cs CS=1 CUDASNAP_FREE=sync -- "$bin/sticky_error"; then result "2. kernel fault reported at cudaFree" FAIL "$(why sticky-cs)"
  else
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
  if skipped "3. cuBLAS workspace"; then :
  elif ! have cublas_workspace; then result "3. cuBLAS workspace" FAIL "not in the bundle"
  elif ! run cublas-ref -- "$bin/cublas_workspace"; then result "3. cuBLAS workspace" FAIL "without cudasnap: $(why cublas-ref)"
  elif ! run cublas-cs CS=1 -- "$bin/cublas_workspace"; then result "3. cuBLAS workspace" FAIL "$(why cublas-cs)"
  else
    f=$(snap cublas-cs exit) msg=()
    q=$(query sites "$f" "$cublas_frame" 'gc_cublas_(create|gemm)_site' 2>>"$logs/cublas-cs.err") ||
      msg+=("no allocation with a libcublas frame and a gc_cublas_* site")
    [[ $(val cublas-ref CHECKSUM) == "$(val cublas-cs CHECKSUM)" ]] || msg+=("checksum differs")
    clean "$f" || msg+=("snapshot not clean")
    verdict "3. cuBLAS workspace" "${q:-no match}; cudaMalloc calls inside cuBLAS: $(val cublas-cs CUBLAS_ALLOCS); max error $(val cublas-cs MAX_ABS_ERROR)"
  fi
  if skipped "3. cuDNN workspace"; then :
  elif ! have cudnn_workspace; then result "3. cuDNN workspace" SKIP "not in the bundle (no cuDNN where it was built)"
  elif ! run cudnn-ref -- "$bin/cudnn_workspace"; then
    if grep -q 'libcudnn.*cannot open' "$logs/cudnn-ref.err"; then result "3. cuDNN workspace" SKIP "no libcudnn.so.9 on this machine"
    else result "3. cuDNN workspace" FAIL "without cudasnap: $(why cudnn-ref)"; fi
  elif ! run cudnn-cs CS=1 -- "$bin/cudnn_workspace"; then result "3. cuDNN workspace" FAIL "$(why cudnn-cs)"
  else
    f=$(snap cudnn-cs exit) msg=()
    q=$(query sites "$f" 'gc_cudnn_workspace_site' 'main' 2>>"$logs/cudnn-cs.err") ||
      msg+=("the workspace allocation is not in the snapshot with its site")
    inner=$(query sites "$f" "$cudnn_frame" 'gc_cudnn_' 2>>"$logs/cudnn-cs.err")
    [[ $(val cudnn-ref CHECKSUM) == "$(val cudnn-cs CHECKSUM)" ]] || msg+=("checksum differs")
    clean "$f" || msg+=("snapshot not clean")
    verdict "3. cuDNN workspace" "workspace $(val cudnn-cs WORKSPACE_BYTES) B: ${q:-no match}; cuDNN's own allocations: ${inner:-none}; cuDNN $(val cudnn-cs CUDNN_VERSION); max error $(val cudnn-cs MAX_ABS_ERROR)"
  fi
fi

# ---- 4. PyTorch ---------------------------------------------------------------------------------
torch_run() { # TAG [VAR=value...]: torch_step.py, its JSON in logs/TAG.json, a pickle snapshot
  local tag=$1
  shift
  run "$tag" "$@" "CUDASNAP_OUTPUT=$snaps/$tag-%p-%n-%t.pickle" -- "$python" "$py/torch_step.py" "$logs/$tag.json"
}
json_val() { "$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2" 2>/dev/null; }
torch_ok=0
if [[ $dry == 1 ]]; then
  nogpu "4. PyTorch"
elif skipped "4. PyTorch"; then :
elif ! "$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >"$logs/torch-import.log" 2>&1; then
  result "4. PyTorch" SKIP "$python cannot import torch with CUDA: $(tail -n1 "$logs/torch-import.log")"
elif ! torch_run torch-ref; then
  result "4. PyTorch" FAIL "without cudasnap: $(why torch-ref)"
else
  torch_ok=1
  ref_loss=$(val torch-ref LOSS)
  torch_version=$("$python" -c 'import torch; print(torch.__version__)' 2>/dev/null)
  for variant in nocache torchalloc expandable; do
    tag=torch-$variant
    case $variant in
      nocache) label="4. PyTorch (a) PYTORCH_NO_CUDA_MEMORY_CACHING=1"; settings=(PYTORCH_NO_CUDA_MEMORY_CACHING=1 CUDASNAP_ALLOC_CONF=split_large:True) ;;
      torchalloc) label="4. PyTorch (b) PyTorch's allocator"; settings=() ;;
      expandable) label="4. PyTorch (c) expandable_segments:True"; settings=(PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True) ;;
    esac
    skipped "$label" && continue
    if ! torch_run "$tag" CS=1 "${settings[@]}"; then result "$label" FAIL "$(why "$tag")"; continue; fi
    msg=() extra=""
    [[ -n $ref_loss && $(val "$tag" LOSS) == "$ref_loss" ]] || msg+=("loss $(val "$tag" LOSS) != $ref_loss")
    f=$(snap "$tag" exit)
    clean "$f" || msg+=("snapshot not clean (${f:-none written})")
    # PyTorch's reader of the pickle: `stats` and `trace` as a user types them; `segments` and
    # `memory` through the module (snapshot_query.py memviz), since on the command line they fetch
    # flamegraph.pl from GitHub and this machine may have no network
    for sub in stats trace; do
      timeout "$limit" "$python" -m torch.cuda._memory_viz "$sub" "$f" >"$logs/$tag-memory_viz-$sub.log" 2>&1 ||
        msg+=("_memory_viz $sub failed (logs/$tag-memory_viz-$sub.log)")
    done
    viz=$(timeout "$limit" "$python" "$py/snapshot_query.py" memviz "$f" "$logs/$tag-segments.folded" \
      2>"$logs/$tag-memory_viz-folded.log") ||
      msg+=("torch.cuda._memory_viz's segments/memory: ${viz:-failed} (logs/$tag-memory_viz-folded.log)")
    case $variant in
      nocache)
        extra=$("$python" "$py/torch_compare.py" stats "$logs/torch-ref.json" "$logs/$tag.json" 2>&1 | tee "$logs/$tag-compare.log" | tail -n1)
        "$python" "$py/torch_compare.py" stats "$logs/torch-ref.json" "$logs/$tag.json" >/dev/null 2>&1 ||
          msg+=("memory_stats differ from torch's (logs/$tag-compare.log)") ;;
      torchalloc)
        extra=$("$python" "$py/torch_compare.py" held "$logs/$tag.json" 2>&1) ||
          msg+=("cudasnap holds less than torch.cuda.memory_reserved()") ;;
      expandable)
        # PyTorch maps expandable segments with cuMemCreate/cuMemMap, which cudasnap passes through:
        # the snapshot must draw them as VMM segments, as many bytes as PyTorch holds
        reserved=$(json_val "$logs/$tag.json" torch_reserved)
        q=$(query vmm "$f" 2>>"$logs/$tag.err")
        vmm_bytes=$(sed -n 's/.*vmm_bytes=\([0-9]*\).*/\1/p' <<<"$q")
        [[ -n $vmm_bytes && $vmm_bytes != 0 ]] || msg+=("no VMM segment in the snapshot")
        [[ -n $vmm_bytes && -n $reserved && $vmm_bytes == "$reserved" ]] || msg+=("VMM segments hold ${vmm_bytes:-?} B, torch.cuda.memory_reserved() ${reserved:-?} B")
        extra="${q:-no segments read}; torch.cuda.memory_reserved() $reserved" ;;
    esac
    verdict "$label" "torch $torch_version; loss ${ref_loss%% *}...; $extra; _memory_viz: ${viz:-not read}"
  done
fi

label="4. PyTorch Python frames"
if [[ $dry == 1 ]]; then nogpu "$label"
elif skipped "$label"; then :
elif [[ $torch_ok == 0 ]]; then result "$label" SKIP "no working PyTorch (see check 4)"
elif ! run frames-ref PYTORCH_NO_CUDA_MEMORY_CACHING=1 -- "$python" "$py/torch_frames.py"; then
  result "$label" FAIL "without cudasnap: $(why frames-ref)"
elif ! run frames-cs CS=1 PYTORCH_NO_CUDA_MEMORY_CACHING=1 CUDASNAP_STACKS=all -- "$python" "$py/torch_frames.py"; then
  result "$label" FAIL "$(why frames-cs)"
else
  msg=()
  f=$(snap frames-cs exit)
  script=$(val frames-cs SCRIPT) line=$(val frames-cs ALLOC_LINE)
  [[ $(val frames-ref RESULT) == "$(val frames-cs RESULT)" && -n $(val frames-ref RESULT) ]] || msg+=("result differs")
  clean "$f" || msg+=("snapshot not clean (${f:-none written})")
  q=$(query frame "$f" "$script" "$line" "$(val frames-cs ALLOC_BYTES)" 2>>"$logs/frames-cs.err") ||
    msg+=("no frame names $(basename "$script"):$line")
  verdict "$label" "CUDASNAP_STACKS=all; allocation of $(val frames-cs ALLOC_BYTES) B at $(basename "$script"):$line in $(val frames-cs ALLOC_FUNCTION): ${q:-no snapshot read}"
fi

# ---- 5. JAX, CuPy, numba ------------------------------------------------------------------------
if [[ $dry == 1 ]]; then
  nogpu "5. JAX, CuPy, numba"
else
  for pkg in jax cupy numba; do
    skipped "5. $pkg" && continue
    settings=()
    [[ $pkg == jax ]] && settings=(XLA_PYTHON_CLIENT_ALLOCATOR=platform XLA_PYTHON_CLIENT_PREALLOCATE=false)
    run "$pkg-ref" "${settings[@]}" -- "$python" "$py/${pkg}_check.py"
    rc=$?
    if [[ $rc == 3 ]]; then result "5. $pkg" SKIP "$(head -n1 "$logs/$pkg-ref.out")"; continue; fi
    if [[ $rc != 0 ]]; then result "5. $pkg" FAIL "without cudasnap: $(why "$pkg-ref")"; continue; fi
    if ! run "$pkg-cs" CS=1 "${settings[@]}" -- "$python" "$py/${pkg}_check.py"; then
      result "5. $pkg" FAIL "$(why "$pkg-cs")"; continue
    fi
    msg=()
    [[ $(val "$pkg-ref" RESULT) == "$(val "$pkg-cs" RESULT)" ]] || msg+=("result differs")
    n=$(val "$pkg-cs" CS_ALLOCS)
    [[ -n $n && $n -gt 0 ]] || msg+=("cudasnap served no allocation")
    f=$(snap "$pkg-cs" exit)
    clean "$f" || msg+=("snapshot not clean (${f:-none written})")
    verdict "5. $pkg" "cudasnap allocations $n; $(query allocs "$f" 2>/dev/null)"
  done
fi

# ---- 6. process life ----------------------------------------------------------------------------
label="6. cudaDeviceReset mid-run"
if skipped "$label"; then :
elif ! have device_reset; then result "$label" FAIL "not in the bundle"
elif ! run reset-ref -- "$bin/device_reset"; then result "$label" FAIL "without cudasnap: $(why reset-ref)"
elif ! run reset-cs CS=1 -- "$bin/device_reset"; then result "$label" FAIL "$(why reset-cs)"
else
  msg=()
  [[ $(val reset-ref CHECKSUM) == "$(val reset-cs CHECKSUM)" ]] || msg+=("checksum differs")
  f=$(snap reset-cs exit)
  clean "$f" || msg+=("snapshot not clean (${f:-none written})")
  verdict "$label" "cudasnap_memory_allocated at the end $(val reset-cs CS_ALLOCATED_AFTER)"
fi

label="6. fork after CUDA init"
if skipped "$label"; then :
elif ! have fork_child; then result "$label" FAIL "not in the bundle"
elif ! run fork-ref -- "$bin/fork_child"; then result "$label" FAIL "without cudasnap: $(why fork-ref)"
elif ! run fork-cs CS=1 -- "$bin/fork_child"; then result "$label" FAIL "$(why fork-cs)"
else
  msg=()
  parent=$(val fork-cs PARENT_PID) child=$(val fork-cs CHILD_PID)
  [[ $(val fork-cs CHILD_STATUS) == 0 ]] || msg+=("the child exited with $(val fork-cs CHILD_STATUS)")
  [[ $(val fork-ref CHECKSUM) == "$(val fork-cs CHECKSUM)" ]] || msg+=("checksum differs")
  files=$(compgen -G "$snaps/fork-cs-*" | wc -l)
  compgen -G "$snaps/fork-cs-$child-*" >/dev/null && msg+=("the child wrote a snapshot")
  f=$(snap "fork-cs-$parent" exit)
  clean "$f" || msg+=("the parent's snapshot is missing or not clean")
  verdict "$label" "child status $(val fork-cs CHILD_STATUS); snapshots written: $files (the parent's only expected)"
fi

label="6. exit without freeing: leak report"
if skipped "$label"; then :
elif ! have leak; then result "$label" FAIL "not in the bundle"
elif ! run leak-cs CS=1 -- "$bin/leak"; then result "$label" FAIL "$(why leak-cs)"
else
  line=$(grep -m1 '^cudasnap:.*gc_leaky_site' "$logs/leak-cs.err")
  if [[ -n $line ]]; then result "$label" PASS "stderr: ${line#cudasnap: }"
  else result "$label" FAIL "no leak line names gc_leaky_site (logs/leak-cs.err)"; fi
fi

label="6. SIGUSR1 while kernels run"
if [[ $dry == 1 ]]; then nogpu "$label"
elif skipped "$label"; then :
elif ! have signal_dump; then result "$label" FAIL "not in the bundle"
elif ! run signal-ref -- "$bin/signal_dump"; then result "$label" FAIL "without cudasnap: $(why signal-ref)"
elif ! run signal-cs CS=1 -- "$bin/signal_dump"; then result "$label" FAIL "$(why signal-cs)"
else
  msg=()
  [[ $(val signal-ref CHECKSUM) == "$(val signal-cs CHECKSUM)" ]] || msg+=("checksum differs")
  [[ $(val signal-cs SIGNALED) == 1 ]] || msg+=("the program did not see cudasnap and sent no signal")
  [[ $(val signal-cs KERNEL_RUNNING) == 1 ]] || msg+=("the kernel had finished 200 ms after the signal: the test did not test a running kernel")
  f=$(snap signal-cs signal)
  clean "$f" || msg+=("signal snapshot missing or not clean (${f:-none written})")
  verdict "$label" "signal snapshot $(basename "${f:-none}"), $(stat -c %s "${f:-/dev/null}" 2>/dev/null) B"
fi

# The two endings that skip exit handlers: the status (or signal) must be the program's own, and
# the snapshot must hold the blocks gc_ending_site allocated.
check_ending() { # LABEL MODE TRIGGER EXPECTED_STATUS
  local label=$1 mode=$2 trigger=$3 want=$4 ref=ending-$2-ref cs=ending-$2-cs
  skipped "$label" && return
  have exit_paths || { result "$label" FAIL "not in the bundle"; return; }
  run "$ref" -- "$bin/exit_paths" "$mode"
  local rc0=$?
  if [[ $rc0 != "$want" ]]; then result "$label" FAIL "without cudasnap the status is $rc0, not $want: the test itself is wrong ($(why "$ref"))"; return; fi
  run "$cs" CS=1 "CUDASNAP_DUMP_ON=exit,signal,oom,crash" -- "$bin/exit_paths" "$mode"
  local rc=$? f q msg=()
  [[ $rc == "$want" ]] || msg+=("status $rc under cudasnap, $want without")
  [[ $(val "$ref" CHECKSUM) == "$(val "$cs" CHECKSUM)" && -n $(val "$ref" CHECKSUM) ]] || msg+=("checksum differs")
  f=$(snap "$cs" "$trigger")
  if [[ -z $f ]]; then
    msg+=("no *-$trigger snapshot (written: $(cd "$snaps" && compgen -G "$cs-*" | tr '\n' ' '))")
  else
    clean "$f" || msg+=("snapshot not clean")
    q=$(query sites "$f" 'gc_ending_site' '.' 2>>"$logs/$cs.err") || msg+=("the snapshot has no block from gc_ending_site")
    [[ $(query allocs "$f" 2>/dev/null) == "trigger=$trigger "* ]] || msg+=("its trigger is not $trigger")
  fi
  verdict "$label" "status $rc (without cudasnap $rc0); snapshot $(basename "${f:-none}") $(stat -c %s "${f:-/dev/null}" 2>/dev/null) B; ${q:-}"
}
check_ending "6. _exit(3): exit snapshot, status kept" exit exit 3
check_ending "6. SIGSEGV: crash snapshot, still killed by SIGSEGV" crash crash 139

# ---- 7. pass-through memory drawn -----------------------------------------------------------------
label="7. pass-through memory drawn (VMM as NCCL maps it, async, managed, pitch, graph memory)"
if skipped "$label"; then :
elif ! have passthrough_kinds; then result "$label" FAIL "not in the bundle"
elif ! run passthrough-ref -- "$bin/passthrough_kinds" /dev/null; then result "$label" FAIL "without cudasnap: $(why passthrough-ref)"
elif ! run passthrough-cs CS=1 -- "$bin/passthrough_kinds" "$snaps/passthrough-live.json"; then result "$label" FAIL "$(why passthrough-cs)"
else
  msg=() specs=() gone=()
  while read -r _ kind addr bytes; do
    case $kind in
      vmm) specs+=("vmm=$addr:$bytes:vmm") ;;
      host) specs+=("?host=$addr:$bytes") ;;
      *) specs+=("$kind=$addr:$bytes") ;;
    esac
    gone+=("?$kind=$addr:$bytes")
  done < <(grep '^RANGE ' "$logs/passthrough-cs.out")
  [[ $(val passthrough-ref CHECKSUM) == "$(val passthrough-cs CHECKSUM)" ]] || msg+=("checksum differs")
  [[ $(val passthrough-cs DUMP) == 0 ]] || msg+=("cudasnap_dump returned $(val passthrough-cs DUMP)")
  live=$snaps/passthrough-live.json
  clean "$live" || msg+=("the live snapshot is missing or not clean")
  q=$(query ranges "$live" "${specs[@]}" 2>>"$logs/passthrough-cs.err") || msg+=("not every range is drawn")
  f=$(snap passthrough-cs exit)
  clean "$f" || msg+=("the exit snapshot is missing or not clean")
  after=$(query ranges "$f" "${gone[@]}" 2>>"$logs/passthrough-cs.err")
  [[ $after == *"=drawn"* ]] && msg+=("drawn after being freed: $after")
  verdict "$label" "while live: ${q:-no snapshot read}; at exit: ${after:-?}"
fi

# ---- 8. compute-sanitizer -----------------------------------------------------------------------
label="8. compute-sanitizer memcheck"
sanitizer=$(command -v compute-sanitizer || true)
for d in ${CUDA_HOME:+"$CUDA_HOME"} /usr/local/cuda /usr/local/cuda-*; do
  [[ -z $sanitizer && -x $d/bin/compute-sanitizer ]] && sanitizer=$d/bin/compute-sanitizer
done
if [[ $dry == 1 ]]; then nogpu "$label"
elif skipped "$label"; then :
elif [[ -z $sanitizer ]]; then result "$label" SKIP "compute-sanitizer not found"
elif ! have alloc_static; then result "$label" FAIL "alloc_static not in the bundle"
else
  # first without cudasnap: where the sanitizer itself cannot run (some sandboxes refuse it), SKIP
  san=("$sanitizer" --tool memcheck --error-exitcode 99 --print-limit 20)
  if ! run sanitizer-ref -- "${san[@]}" "$bin/alloc_static"; then
    result "$label" SKIP "compute-sanitizer does not run here without cudasnap: $(why sanitizer-ref)"
  else
    # no leak check: cudasnap keeps its cache to the end and makes no CUDA call at exit, by design
    run sanitizer -- "${san[@]}" env "LD_PRELOAD=$lib" "CUDASNAP_OUTPUT=$snaps/sanitizer-%p-%n-%t.json" "$bin/alloc_static"
    rc=$?
    summary=$(grep -h -m1 'ERROR SUMMARY' "$logs/sanitizer.out" "$logs/sanitizer.err" | sed 's/^=* *//')
    if [[ $rc == 0 && $summary == *" 0 errors"* && $(val sanitizer CHECKSUM) == "$(val sanitizer-ref CHECKSUM)" ]]; then
      result "$label" PASS "$summary"
    else
      result "$label" FAIL "status $rc, ${summary:-no ERROR SUMMARY}, checksum $(val sanitizer CHECKSUM) vs $(val sanitizer-ref CHECKSUM) (logs/sanitizer.*)"
    fi
  fi
fi
# ---- 9. two ranks on one GPU, and `cudasnap ranks` over their files (issue 25) ------------------
label="9. two ranks on one GPU: cudasnap ranks"
if ! skipped "$label"; then
  prog=$bin/alloc_shared
  [[ $dry == 1 ]] && prog=$bin/alloc_basic
  run rank0 CS=1 RANK=0 LOCAL_RANK=0 WORLD_SIZE=2 -- "$prog" &
  run rank1 CS=1 RANK=1 LOCAL_RANK=1 WORLD_SIZE=2 -- "$prog"
  rc1=$?
  wait $!
  rc0=$?
  msg=()
  ((rc0 == 0)) || msg+=("$(why rank0)")
  ((rc1 == 0)) || msg+=("$(why rank1)")
  f0=$(snap rank0 exit) f1=$(snap rank1 exit)
  [[ -n $f0 && -n $f1 ]] || msg+=("an exit snapshot is missing (${f0:-none}, ${f1:-none})")
  "$tool" ranks "$f0" "$f1" >"$logs/ranks.out" 2>"$logs/ranks.err" || msg+=("cudasnap ranks failed (logs/ranks.err)")
  seen=$("$tool" ranks --json "$f0" "$f1" 2>>"$logs/ranks.err" |
    "$python" -c 'import json, sys; print(" ".join(str(r["rank"]) for r in json.load(sys.stdin)["ranks"]))' 2>>"$logs/ranks.err")
  [[ $seen == "0 1" ]] || msg+=("ranks --json lists ranks '${seen:-none}', not '0 1'")
  verdict "$label" "ranks $seen; $(grep -m1 '^spread' "$logs/ranks.out" 2>/dev/null || echo 'no spread line')"
fi

# ---- 10. exports that other viewers read (issue 26) -------------------------------------------
label="10. cudasnap export: pprof and Perfetto"
if ! skipped "$label"; then
  f=$(snap torch-torchalloc exit)
  what="PyTorch's run (check 4 b)"
  [[ -n $f ]] || { f=$(snap rank0 exit); what="rank 0 of check 9"; }
  msg=()
  if [[ -z $f ]]; then
    msg+=("no snapshot to export")
  else
    mkdir -p "$logs/export"
    "$tool" export --format pprof -o "$logs/export/profile.pb.gz" "$f" 2>"$logs/export-pprof.err" ||
      msg+=("export --format pprof failed (logs/export-pprof.err)")
    "$tool" export --format perfetto -o "$logs/export/trace.json" "$f" 2>"$logs/export-perfetto.err" ||
      msg+=("export --format perfetto failed (logs/export-perfetto.err)")
    [[ $(head -c2 "$logs/export/profile.pb.gz" 2>/dev/null | od -An -tx1 | tr -d ' \n') == 1f8b ]] ||
      msg+=("the pprof file is not gzip")
    events=$("$python" -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["traceEvents"]))' "$logs/export/trace.json" 2>>"$logs/export-perfetto.err")
    [[ -n $events && $events -gt 0 ]] || msg+=("the Perfetto file has no events")
  fi
  # go tool pprof is not on the GPU machine: it reads logs/export/profile.pb.gz where the logs come back
  verdict "$label" "of $what: profile.pb.gz $(stat -c %s "$logs/export/profile.pb.gz" 2>/dev/null || echo 0) B, trace.json ${events:-0} events (read them with go tool pprof / ui.perfetto.dev from logs.tar.gz)"
fi

# ---- 11. the overhead a user pays (issue 29) -------------------------------------------------
# median_of TAG...: the median of the SECONDS lines of these runs
median_of() { for t in "$@"; do val "$t" SECONDS; done | sort -g | awk '{v[NR] = $1} END {if (NR) print v[int((NR + 1) / 2)]}'; }
# overhead CHECK SCRIPT KEY TARGET: 3 interleaved rounds of SCRIPT alone, under cudasnap, and under
# cudasnap with CUDASNAP_STACKS=none; KEY (LOSS or CHECKSUM) must be the same in every run
overhead() {
  local label=$1 script=$2 key=$3 target=$4 name=${2%.py}
  if [[ $dry == 1 ]]; then nogpu "$label"; return; fi
  skipped "$label" && return
  local r cfg tag
  run "$name-probe" -- "$python" "$py/$script"
  case $? in
    0) ;;
    3) result "$label" SKIP "$(head -n1 "$logs/$name-probe.out")"; return ;;
    *) result "$label" FAIL "without cudasnap: $(why "$name-probe")"; return ;;
  esac
  local -A tags=()
  for r in 1 2 3; do
    for cfg in none default nostacks; do
      tag=$name-$cfg-$r
      case $cfg in
        none) run "$tag" -- "$python" "$py/$script" ;;
        default) run "$tag" CS=1 -- "$python" "$py/$script" ;;
        nostacks) run "$tag" CS=1 CUDASNAP_DUMP_ON=none CUDASNAP_STACKS=none -- "$python" "$py/$script" ;;
      esac || { result "$label" FAIL "$(why "$tag")"; return; }
      tags[$cfg]+=" $tag"
    done
  done
  msg=()
  local want t same=yes
  want=$(val "$name-none-1" "$key")
  for t in ${tags[none]} ${tags[default]} ${tags[nostacks]}; do
    [[ -n $want && $(val "$t" "$key") == "$want" ]] || { msg+=("$key of $t $(val "$t" "$key") != $want"); same=no; }
  done
  local none default nostacks
  # shellcheck disable=SC2086
  none=$(median_of ${tags[none]}) default=$(median_of ${tags[default]}) nostacks=$(median_of ${tags[nostacks]})
  local pct_default pct_nostacks
  pct_default=$(awk -v a="$default" -v b="$none" 'BEGIN { printf "%+.2f", (a / b - 1) * 100 }')
  pct_nostacks=$(awk -v a="$nostacks" -v b="$none" 'BEGIN { printf "%+.2f", (a / b - 1) * 100 }')
  awk -v p="$pct_default" -v t="$target" 'BEGIN { exit !(p <= t) }' ||
    msg+=("default settings cost ${pct_default}%, over the target of ${target}%")
  verdict "$label" "median of 3 (s): without ${none}, cudasnap ${default} (${pct_default}%), stacks off ${nostacks} (${pct_nostacks}%); target <= ${target}%; $key equal in all 9 runs: $same"
}
overhead "11. overhead: PyTorch training loop (200 steps, default settings)" torch_overhead.py LOSS 2
# the target here: faster with cudasnap than without (its cache against real cudaMalloc/cudaFree)
overhead "11. overhead: CuPy allocating in a loop (no CuPy pool)" cupy_loop.py CHECKSUM 0

# ---- 12. what landed after the bundle was first written (issue 37, item 3) ----------------------
# A real OOM with cudasnap's answer beside PyTorch's own message; the live view (`cudasnap top`,
# `cudasnap metrics`) of a process while it runs; the exit snapshot's reconciliation with the driver,
# with its numbers; the cost of a cache growth that asks the driver. The parts that need no kernel
# and no PyTorch run on the fake runtime in the dry run too.

# torch_size BYTES: a size as PyTorch's format_size writes it ("1024.00 MiB": its bounds are <=)
torch_size() {
  awk -v b="$1" 'BEGIN { if (b <= 1024) printf "%d bytes", b; else if (b <= 1048576) printf "%.2f KiB", b / 1024;
    else if (b <= 1073741824) printf "%.2f MiB", b / 1048576; else printf "%.2f GiB", b / 1073741824 }'
}
# size_bytes "1.00 GiB": back to bytes (two decimals: within 0.5% of the size written)
size_bytes() {
  awk -v s="$1" 'BEGIN { n = split(s, a, " "); m = 1; if (a[2] == "KiB") m = 1024; else if (a[2] == "MiB") m = 1048576;
    else if (a[2] == "GiB") m = 1073741824; else if (a[2] == "TiB") m = 1099511627776; if (n == 2) printf "%.0f", a[1] * m }'
}
# near A B: A and B (bytes) agree within 0.5% (what two decimals of a unit keep)
near() { [[ -n $1 && -n $2 ]] && awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= b * 0.005) }'; }
# asked_of TEXT: the size after "Tried to allocate" in TEXT (PyTorch's message or cudasnap's headline)
asked_of() { sed -n 's/.*Tried to allocate \([0-9.]* [A-Za-z]*\).*/\1/p' <<<"$1" | head -n1; }
# oom_answer TAG: the first lines of `cudasnap summary` of that run's OOM snapshot, joined by " / "
# (the headline, who asked, the verdict and the first site it names); nothing when there is no OOM
# snapshot
oom_answer() {
  local f
  f=$(snap "$1" oom)
  [[ -n $f ]] || return 1
  "$tool" summary "$f" >"$logs/$1-summary.txt" 2>&1 || return 1
  awk '/^out of memory on device/ { on = 1 } on && /^ *(out of memory|asked by|verdict:)/ { sub(/^ */, ""); printf "%s%s", sep, $0; sep = " / " }
    v { if (/^    [^ ]/) { sub(/^ */, ""); printf " / %s", $0 } exit } on && /^ *verdict:/ { v = 1 }' "$logs/$1-summary.txt"
}
torch_state="" # "", or why PyTorch cannot run here (asked once)
torch_usable() {
  [[ -z $torch_state ]] && if "$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >"$logs/torch-usable.log" 2>&1; then
    torch_state=yes
  else torch_state="$python cannot import torch with CUDA: $(tail -n1 "$logs/torch-usable.log")"; fi
  [[ $torch_state == yes ]]
}

# (a) OOM. The C program first (every size, every line of the answer checked; on the fake runtime
# too, with a small device), then PyTorch: its message without and under cudasnap, and cudasnap's
label="12. OOM: cudasnap's answer to a cudaMalloc loop"
if ! skipped "$label"; then
  oom_args=(oom $((1 << 30)) 4096) oom_env=()
  [[ $dry == 1 ]] && oom_args=(oom $((16 << 20)) 64) oom_env=(FAKE_CUDA_CAPACITY=$((256 << 20)))
  if ! have memory_pressure; then result "$label" FAIL "not in the bundle"
  elif ! run oom-c CS=1 "${oom_env[@]}" -- "$bin/memory_pressure" "${oom_args[@]}"; then result "$label" FAIL "$(why oom-c)"
  else
    msg=()
    answer=$(oom_answer oom-c) || msg+=("no OOM snapshot, or cudasnap summary failed on it (logs/oom-c-summary.txt)")
    want=$(torch_size "$(val oom-c ASKED_BYTES)") said=$(asked_of "$answer")
    near "$(size_bytes "$said")" "$(val oom-c ASKED_BYTES)" ||
      msg+=("cudasnap says 'Tried to allocate ${said:-nothing}', the program asked $(val oom-c ASKED_BYTES) B ($want)")
    words="in PyTorch's words"
    [[ $said == "$want" ]] || words="PyTorch's format_size would write '$want'"
    [[ $answer == *"asked by gc_oom_site"* ]] || msg+=("the answer does not name gc_oom_site")
    [[ $answer == *"verdict: "* ]] || msg+=("no verdict")
    clean "$(snap oom-c oom)" || msg+=("the OOM snapshot is not clean")
    verdict "$label" "$(val oom-c ALLOCS) chunks of $(val oom-c ASKED_BYTES) B, then status $(val oom-c ERROR); the size $words; cudasnap: ${answer:-none}"
  fi
fi
label="12. OOM: PyTorch's message beside cudasnap's answer"
if [[ $dry == 1 ]]; then nogpu "$label"
elif skipped "$label"; then :
elif ! torch_usable; then result "$label" SKIP "$torch_state"
elif ! run oom-torch-ref -- "$python" "$py/torch_oom.py"; then result "$label" FAIL "without cudasnap: $(why oom-torch-ref)"
elif ! run oom-torch CS=1 -- "$python" "$py/torch_oom.py"; then result "$label" FAIL "$(why oom-torch)"
else
  msg=()
  asked=$(val oom-torch ASKED_BYTES) torch_msg=$(val oom-torch TORCH_MESSAGE)
  answer=$(oom_answer oom-torch) || msg+=("no OOM snapshot, or cudasnap summary failed on it (logs/oom-torch-summary.txt)")
  t=$(asked_of "$torch_msg") c=$(asked_of "$answer")
  near "$(size_bytes "$t")" "$asked" || msg+=("PyTorch says 'Tried to allocate ${t:-?}' for $asked B")
  near "$(size_bytes "$c")" "$asked" || msg+=("cudasnap says 'Tried to allocate ${c:-?}' where PyTorch asked $asked B")
  same="same words"
  [[ $t == "$c" ]] || same="the same size in other words: PyTorch writes '$t', cudasnap '$c'"
  verdict "$label" "$(val oom-torch ALLOCS) tensors of $asked B, then torch.OutOfMemoryError; size asked: $same; PyTorch under cudasnap: «$torch_msg»; cudasnap: «${answer:-none}»; PyTorch without cudasnap: «$(val oom-torch-ref TORCH_MESSAGE)»"
fi

# (b) the live view while it runs, and (c) its exit snapshot reconciled with the driver.
# live_view LABEL TAG COMMAND...: COMMAND (under cudasnap) prints PID, TOTAL_BYTES and READY while
# it runs; `cudasnap top --once --json --pid` and `cudasnap metrics --once` are read then, and the
# file $work/TAG.stop made to tell it to end. Sets live_ok=1 when all went well.
live_view() {
  local label=$1 tag=$2
  shift 2
  live_ok=0
  skipped "$label" && return
  run "$tag" CS=1 CUDASNAP_LIVE_INTERVAL=1 "${live_env[@]}" -- "$@" &
  local job=$! i pid total top_q="" met_q="" tries=0
  for ((i = 0; i < 600; i++)); do # 60 s for the program to get going (PyTorch starting up)
    grep -q '^READY' "$logs/$tag.out" 2>/dev/null && break
    kill -0 "$job" 2>/dev/null || break
    sleep 0.1
  done
  pid=$(val "$tag" PID) total=$(val "$tag" TOTAL_BYTES)
  msg=()
  if [[ -z $pid || -z $total ]]; then
    msg+=("the program never said READY")
  else
    # the first publication after READY may be up to one interval (1 s, the least) later: a few tries
    for tries in 1 2 3 4 5 6 7 8 9 10; do
      sleep 0.3
      "$tool" top --once --json --pid "$pid" >"$logs/$tag-top.json" 2>"$logs/$tag-top.err" &&
        top_q=$("$python" "$py/live_query.py" top "$logs/$tag-top.json" "$pid" "$total" 2>>"$logs/$tag-top.err") && break
    done
    [[ $top_q == device=* && $top_q != *';'* ]] || msg+=("cudasnap top --once --json: ${top_q:-failed} (logs/$tag-top.*)")
    "$tool" metrics --once >"$logs/$tag-metrics.txt" 2>"$logs/$tag-metrics.err" || msg+=("cudasnap metrics --once failed (logs/$tag-metrics.err)")
    met_q=$("$python" "$py/live_query.py" metrics "$logs/$tag-metrics.txt" "$pid" 2>>"$logs/$tag-metrics.err") ||
      msg+=("the exposition: ${met_q:-not parsed} (logs/$tag-metrics.*)")
  fi
  : >"$work/$tag.stop"
  wait "$job" || msg+=("$(why "$tag")")
  ((${#msg[@]})) || live_ok=1
  verdict "$label" "pid ${pid:-?} on a ${total:-?} B device, read on try $tries: top: ${top_q:-none}; metrics: ${met_q:-none}"
}
# reconciled LABEL TAG: the exit snapshot's cudasnap.memory[], with its numbers
reconciled() {
  local label=$1 tag=$2 f q
  skipped "$label" && return
  msg=()
  f=$(snap "$tag" exit)
  if [[ -z $f ]]; then result "$label" FAIL "no exit snapshot of $tag"; return; fi
  q=$(query memory "$f" 2>>"$logs/$tag.err") || msg+=("the reconciliation does not add up or the driver was not asked")
  verdict "$label" "$(basename "$f"): ${q:-not read}"
}
live_env=()
[[ $dry == 1 ]] && live_env=(FAKE_CUDA_CAPACITY=$((1 << 30)))
label="12. live view while it runs: cudasnap top --once --json, metrics --once (memory_pressure)"
if have memory_pressure; then
  live_view "$label" live-c "$bin/memory_pressure" live 60 "$work/live-c.stop"
  reconciled "12. exit snapshot reconciled with the driver (memory_pressure)" live-c
else
  result "$label" FAIL "not in the bundle"
fi
live_env=()
label="12. live view of PyTorch while it trains: top --once --json, metrics --once"
if [[ $dry == 1 ]]; then nogpu "$label"; nogpu "12. exit snapshot reconciled with the driver (PyTorch)"
elif skipped "$label"; then :
elif ! torch_usable; then result "$label" SKIP "$torch_state"
else
  live_env=("CUDASNAP_OUTPUT=$snaps/live-torch-%p-%n-%t.pickle" GC_TRAIN_SECONDS=60 "GC_TRAIN_STOP=$work/live-torch.stop")
  live_view "$label" live-torch "$python" "$py/torch_step.py" "$logs/live-torch.json"
  if [[ $live_ok == 1 && -n ${ref_loss:-} && $(val live-torch LOSS) != "$ref_loss" ]]; then
    result "12. PyTorch's loss under the live view" FAIL "loss $(val live-torch LOSS) != $ref_loss (check 4 without cudasnap)"
  fi
  reconciled "12. exit snapshot reconciled with the driver (PyTorch)" live-torch
fi

# (d) the cost of a cache growth that asks the driver: each allocation a new segment, 105 ms apart
# (the driver is asked at most once per 100 ms), after an untimed warm-up allocation; timed alone,
# under cudasnap, and with stacks off, 3 rounds interleaved as check 11 does; on the fake runtime in
# the dry run (its numbers are the fake's, the script is what is tested)
label="12. cost of a cache growth that asks the driver"
if skipped "$label"; then :
elif ! have memory_pressure; then result "$label" FAIL "not in the bundle"
else
  grow=(grow 16 $((64 << 20)) $((2 << 20)) 105)
  [[ $dry == 1 ]] && grow=(grow 6 $((64 << 20)) $((2 << 20)) 105)
  declare -A gtags=()
  msg=()
  for r in 1 2 3; do
    for cfg in none default nostacks; do
      tag=grow-$cfg-$r
      case $cfg in
        none) run "$tag" -- "$bin/memory_pressure" "${grow[@]}" ;;
        default) run "$tag" CS=1 -- "$bin/memory_pressure" "${grow[@]}" ;;
        nostacks) run "$tag" CS=1 CUDASNAP_DUMP_ON=none CUDASNAP_STACKS=none -- "$bin/memory_pressure" "${grow[@]}" ;;
      esac || msg+=("$(why "$tag")")
      gtags[$cfg]+=" $tag"
    done
  done
  if ((${#msg[@]})); then result "$label" FAIL "$(IFS=';'; echo "${msg[*]}")"
  else
    # shellcheck disable=SC2086
    g_none=$(median_of ${gtags[none]}) g_default=$(median_of ${gtags[default]}) g_nostacks=$(median_of ${gtags[nostacks]})
    n=${grow[1]}
    per() { awk -v s="$1" -v n="$n" 'BEGIN { printf "%.1f", s / n * 1e6 }'; }
    pct() { awk -v a="$1" -v b="$g_none" 'BEGIN { printf "%+.2f", (a / b - 1) * 100 }'; }
    verdict "$label" "$n growths of $(torch_size "${grow[2]}") to $(torch_size $((grow[2] + (n - 1) * grow[3]))), ${grow[4]} ms apart$([[ $dry == 1 ]] && echo ' (fake runtime)'); median of 3, us per growth: without $(per "$g_none"), cudasnap $(per "$g_default") ($(pct "$g_default")%), stacks off $(per "$g_nostacks") ($(pct "$g_nostacks")%); slowest call under cudasnap $(val grow-default-1 MAX_US) us (without $(val grow-none-1 MAX_US) us); segments $(val grow-default-1 CS_SEGMENTS)"
  fi
fi

checks_s=$SECONDS

# ---- the benchmark ------------------------------------------------------------------------------
bench_note="not run ($([[ -n $only ]] && echo "--only $only" || echo --no-bench))"
if [[ $bench == 1 ]]; then
  left=$((480 - 20 - SECONDS)) # the whole run ends within eight minutes, packing included
  ((left > bench_budget)) && left=$bench_budget
  if ((left < 30)); then
    bench_note="not run: ${left}s left of the eight minutes"
  else
    bench_args=(--prebuilt "$here" --quick)
    [[ $dry == 1 ]] && bench_args+=(--dry-run)
    torch_part=""
    # the allocation pairs take about two minutes on a GPU, the PyTorch steps two more
    if ((left < 240)) && [[ $dry == 0 ]]; then bench_args+=(--no-torch) torch_part=", PyTorch part left out"; fi
    say "benchmark: bench.sh ${bench_args[*]:2}, at most ${left}s"
    OUT=$work/bench PYTHON=$python timeout "$left" bash "$here/bench.sh" "${bench_args[@]}" >"$logs/bench.out" 2>"$logs/bench.err"
    rc=$?
    cp "$work/bench/results.txt" "$out/bench.txt" 2>/dev/null
    cp "$work/bench/machine.txt" "$out/bench-machine.txt" 2>/dev/null
    [[ -d $work/bench/logs ]] && cp -r "$work/bench/logs" "$logs/bench-logs"
    case $rc in
      0) bench_note="complete ($((SECONDS - checks_s))s${torch_part:+; ${left}s were left, so the PyTorch part was left out})" ;;
      124) bench_note="cut off after ${left}s (GPU_BENCH_BUDGET): the lines below are what finished" ;;
      *) bench_note="failed (status $rc): $(tail -n1 "$logs/bench.err")" ;;
    esac
  fi
  say "benchmark: $bench_note"
fi

# ---- report -------------------------------------------------------------------------------------
{
  echo "# cudasnap GPU checks$([[ $dry == 1 ]] && echo ' (dry run, no GPU)')"
  echo
  echo "- date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- GPU: $gpu_name${cc:+ (compute capability $cc)}"
  echo "- driver: $driver${cuda_driver:+ (CUDA $cuda_driver)}"
  echo "- host: $(uname -sr), $(nproc) CPUs; $("$python" --version 2>&1)${torch_version:+, torch $torch_version}"
  echo "- bundle: $(sed -n 's/^commit: //p' "$here/BUNDLE.txt"), built $(sed -n 's/^built: //p' "$here/BUNDLE.txt") with nvcc $(sed -n 's/^nvcc: //p' "$here/BUNDLE.txt") for $bundle_archs"
  echo "- checks took ${checks_s}s (budget ${budget}s, ${limit}s per program run)${only:+; only checks $only (--only)}; logs and snapshots: logs.tar.gz"
  echo
  echo "| check | result | numbers |"
  echo "| --- | --- | --- |"
  for i in "${!names[@]}"; do
    printf '| %s | %s | %s |\n' "${names[$i]}" "${states[$i]}" "${details[$i]//|/\\|}"
  done
  echo
  echo "$failed of ${#names[@]} checks failed."
  echo
  echo "## GPU benchmark (bench.sh --quick)"
  echo
  echo "$bench_note."
  if [[ -s $out/bench.txt ]]; then
    echo
    echo '```'
    cat "$out/bench.txt"
    echo '```'
  fi
} >"$out/report.md"

# logs and snapshots as one file (the machine hands back a few files, not hundreds); snapshots
# over 4 MiB are left out, and all of them if the archive would pass 15 MiB
pack() { tar -czf "$out/logs.tar.gz" -C "$work" "$@" 2>/dev/null; }
find "$snaps" -type f -size +4M -delete
pack logs snapshots
if (($(stat -c %s "$out/logs.tar.gz" 2>/dev/null || echo 0) > 15 * 1024 * 1024)); then pack logs; fi
cat "$out/report.md" >&2
if [[ ${GPU_CHECK_KEEP:-0} == 1 ]]; then say "report: $out/report.md (work directory kept: $work)"
else rm -rf "$work"; say "report: $out/report.md"; fi
[[ $failed == 0 ]]
