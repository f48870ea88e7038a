#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# cudasnap on a real GPU (bench/README.md, "GPU benchmarks"). Needs an NVIDIA GPU, its driver, the
# CUDA Toolkit (nvcc, CUB) and what scripts/setup.sh installs; PyTorch with CUDA for part 2.
#
#   scripts/gpu-bench.sh [--quick] [--no-torch] [--dry-run] [--prebuilt BUNDLE]
#
# 1. Allocation pairs (bench/gpu_alloc.cu, built with nvcc): cudaMalloc/cudaFree alone, under
#    cudasnap in each free mode (sync, fence, stream; stacks off, and stream with 32-frame stacks),
#    cudaMallocAsync from a caching pool, and CUB's CachingDeviceAllocator; same-size and
#    random-64 patterns; idle (no device work) and with a kernel writing each block before it is
#    freed; one thread, and 8 threads. Median ns per pair over interleaved rounds.
# 2. A PyTorch training step (a Transformer encoder, forward + backward + AdamW): PyTorch's own
#    caching allocator vs PYTORCH_NO_CUDA_MEMORY_CACHING=1 under cudasnap in each free mode. Median
#    step time and peak reserved bytes (torch.cuda.max_memory_reserved, or cudasnap's
#    cudasnap_max_memory_reserved), interleaved rounds; then one run that writes a snapshot at exit,
#    checked with a restricted unpickler.
#
# Results: BENCH lines on stdout and in $OUT/results.txt ($OUT defaults to build-gpu-bench/results),
# the machine in $OUT/machine.txt, every run's stderr under $OUT/logs/. Any failure stops the
# script with a message naming the step and its log.
#
#   --quick     2 rounds instead of 5, fewer pairs and steps
#   --no-torch  skip part 2 (otherwise it is skipped, with a message, only when PyTorch with CUDA
#               cannot be imported)
#   --dry-run   no GPU: builds gpu_alloc as host code against the fake CUDA runtime of tests/fakes
#               and runs part 1 idle only, with tiny counts, to check this script itself
#   --prebuilt BUNDLE  build nothing: use the library and gpu_alloc of a bundle made by
#               `scripts/gpu-check.sh --bundle` (lib/libcudasnap.so, gpu/gpu_alloc, and for
#               --dry-run dry/gpu_alloc on dry/fakes); needs no cmake, nvcc or CUB. The bundle
#               carries this script as bench.sh, and its run.sh calls it so.
#
# Environment: NVCC (default: nvcc on PATH, else /usr/local/cuda/bin/nvcc), PYTHON (python3),
# GPU_BENCH_TORCH_LAYERS/DMODEL/BATCH/SEQ/STEPS (model size and timed steps: 8, 1024, 16, 512, 20).
set -euo pipefail

usage() { sed -n '3,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }

quick=0 torch=1 dry=0 prebuilt=""
while (($#)); do
  case $1 in
    --quick) quick=1 ;;
    --no-torch) torch=0 ;;
    --dry-run) dry=1 ;;
    --prebuilt)
      [[ $# -ge 2 && -d $2 ]] || { printf 'scripts/gpu-bench.sh: --prebuilt needs a bundle directory\n' >&2; exit 2; }
      prebuilt=$(cd "$2" && pwd)
      shift ;;
    -h | --help) usage; exit 0 ;;
    *) printf 'scripts/gpu-bench.sh: unknown argument "%s"\n\n' "$1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build-gpu-bench
[[ $dry == 1 ]] && build=$root/build-gpu-bench-dry
[[ -n $prebuilt ]] && build=$PWD/gpu-bench-results # results only; nothing is built
out=${OUT:-$build/results}
logs=$out/logs
results=$out/results.txt
jobs=$(nproc 2>/dev/null || echo 2)
step_name="setup"

say() { printf 'gpu-bench: [%4ds] %s\n' "$SECONDS" "$*" >&2; }
die() { printf 'gpu-bench: FAILED during %s: %s\n' "$step_name" "$*" >&2; exit 1; }
step() { step_name=$1; say "$1"; }
emit() { echo "BENCH $*" | tee -a "$results"; }

unset LD_PRELOAD
while IFS= read -r name; do unset "$name"; done < <(compgen -e | grep -E '^(CUDASNAP_|PYTORCH_CUDA_ALLOC_CONF$|PYTORCH_NO_CUDA_MEMORY_CACHING$)' || true)

mkdir -p "$logs" || die "cannot create $logs"
: >"$results"

# ---- preconditions --------------------------------------------------------------------------------
step "checking the machine"
[[ -n $prebuilt ]] || command -v cmake >/dev/null || die "cmake not found (scripts/setup.sh installs it)"
if [[ $dry == 0 ]]; then
  command -v nvidia-smi >/dev/null || die "nvidia-smi not found: no NVIDIA driver on this machine"
  nvidia-smi -L >"$logs/nvidia-smi.txt" 2>&1 || die "nvidia-smi -L failed: no usable GPU ($logs/nvidia-smi.txt)"
  grep -q '^GPU ' "$logs/nvidia-smi.txt" || die "nvidia-smi lists no GPU"
else
  say "dry run: no GPU used; the fake CUDA runtime of tests/fakes stands in"
fi
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
if [[ -z $prebuilt ]]; then
  source "$root/scripts/cuda-home.sh"
  if [[ -x $nvcc ]]; then
    cuda_include=$(cuda_home_of "$nvcc")/include
  elif [[ $dry == 0 ]]; then
    die "nvcc not found (install the CUDA Toolkit or set NVCC)"
  else
    cuda_include=/usr/local/cuda/include
  fi
  [[ -f $cuda_include/cuda_runtime_api.h ]] || die "no cuda_runtime_api.h in $cuda_include"
  cub_include=""
  for d in "$cuda_include/cccl" "$cuda_include"; do
    if [[ -f $d/cub/util_allocator.cuh ]]; then cub_include=$d; break; fi
  done
  [[ -n $cub_include ]] || die "cub/util_allocator.cuh not found under $cuda_include (CUB ships with the CUDA Toolkit)"
  commit="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$root" diff --quiet 2>/dev/null || echo ' (modified)')"
else
  commit="$(sed -n 's/^commit: //p' "$prebuilt/BUNDLE.txt" 2>/dev/null) (bundle)"
fi

{
  echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "commit: $commit"
  echo "cpu: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n1), $jobs CPUs"
  if [[ $dry == 0 ]]; then
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
    if [[ -n $prebuilt ]]; then echo "gpu_alloc built with nvcc $(sed -n 's/^nvcc: //p' "$prebuilt/BUNDLE.txt")"
    else "$nvcc" --version | tail -n2; fi
  else
    echo "dry run: fake CUDA runtime (tests/fakes), no GPU"
  fi
} >"$out/machine.txt" 2>&1 || die "cannot describe the machine"
say "$(tr '\n' ';' <"$out/machine.txt")"

# ---- build ------------------------------------------------------------------------------------------
run_env=(env)
if [[ -n $prebuilt ]]; then
  lib=$prebuilt/lib/libcudasnap.so
  prog=$prebuilt/gpu/gpu_alloc
  if [[ $dry == 1 ]]; then
    prog=$prebuilt/dry/gpu_alloc
    run_env+=("LD_LIBRARY_PATH=$prebuilt/dry/fakes")
  fi
  [[ -f $lib && -x $prog ]] || die "$prebuilt has no lib/libcudasnap.so or ${prog#"$prebuilt"/}"
else
  step "building libcudasnap.so (Release) in $build"
  tests=OFF
  [[ $dry == 1 ]] && tests=ON # the fake driver and runtime live with the tests
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCS_DEBUG=0 -DCS_BUILD_TESTS=$tests \
    >"$logs/cmake.log" 2>&1 || die "cmake failed ($logs/cmake.log)"
  targets=(cudasnap)
  [[ $dry == 1 ]] && targets+=(fake_cuda fake_cudart)
  cmake --build "$build" -j "$jobs" --target "${targets[@]}" >>"$logs/cmake.log" 2>&1 ||
    die "build failed ($logs/cmake.log)"
  lib=$build/interpose/libcudasnap.so
  [[ -f $lib ]] || die "no $lib after the build"

  step "building gpu_alloc"
  prog=$build/gpu_alloc
  src=$root/bench/gpu_alloc.cu
  if [[ $dry == 0 ]]; then
    flags=(-O2 -std=c++17 -I"$root" -I"$cub_include" -o "$prog" "$src" -ldl -lpthread)
    if ! "$nvcc" -arch=native "${flags[@]}" >"$logs/nvcc.log" 2>&1; then
      say "nvcc -arch=native failed; building for nvcc's default architecture"
      "$nvcc" "${flags[@]}" >>"$logs/nvcc.log" 2>&1 || die "nvcc failed ($logs/nvcc.log)"
    fi
  else
    fakes=$build/tests/fakes
    "${CXX:-g++}" -O2 -std=c++17 -x c++ -I"$root" -isystem "$cub_include" -isystem "$cuda_include" -o "$prog" "$src" \
      -L"$fakes" -l:libcudart.so.13 -ldl -lpthread >"$logs/cxx.log" 2>&1 || die "host build failed ($logs/cxx.log)"
    run_env+=("LD_LIBRARY_PATH=$fakes")
  fi
fi

# ---- helpers ------------------------------------------------------------------------------------------

median() {
  sort -g "$1" | awk '{ v[NR] = $1 } END {
    if (NR == 0) exit 1
    if (NR % 2) printf "%.2f\n", v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# alloc CONFIG PATTERN THREADS KERNEL(0|1) -> ns per pair. Every run does about $pairs pairs per
# sample in all (divided among the threads); cudaMalloc/cudaFree, which reach the driver every time
# and synchronize, a tenth of that.
alloc() {
  local config=$1 pattern=$2 threads=$3 kernel=$4
  local n=$((pairs / threads))
  if [[ $config == cudart ]]; then n=$((n / 10)); fi
  if ((n < 100)); then n=100; fi
  local -a e=("${run_env[@]}" CUDASNAP_DUMP_ON=none "GPU_ALLOC_KERNEL=$kernel")
  local mode=raw
  case $config in
    cudart) e+=(BENCH_EXPECT_PRELOAD=0) ;;
    async) mode=async; e+=(BENCH_EXPECT_PRELOAD=0) ;;
    cub) mode=cub; e+=(BENCH_EXPECT_PRELOAD=0) ;;
    cudasnap_sync | cudasnap_fence | cudasnap_stream)
      e+=("LD_PRELOAD=$lib" BENCH_EXPECT_PRELOAD=1 CUDASNAP_STACKS=none "CUDASNAP_FREE=${config#cudasnap_}" CUDASNAP_FREE_STREAM_ACK=1) ;;
    cudasnap_stream_stacks32)
      e+=("LD_PRELOAD=$lib" BENCH_EXPECT_PRELOAD=1 CUDASNAP_STACKS=native CUDASNAP_STACK_DEPTH=32 CUDASNAP_FREE=stream CUDASNAP_FREE_STREAM_ACK=1) ;;
    *) die "unknown configuration $config" ;;
  esac
  local log=$logs/alloc-$config-$pattern-t$threads-k$kernel.log
  "${e[@]}" "$prog" "$mode" "$pattern" "$n" "$threads" "$samples" 40 2>>"$log" ||
    die "gpu_alloc $mode $pattern ($config, $threads threads, kernel=$kernel) failed ($log)"
}

# ---- 1. allocation pairs ------------------------------------------------------------------------------
if [[ $dry == 1 ]]; then rounds=2 pairs=2000 samples=3 variants=(0)
elif [[ $quick == 1 ]]; then rounds=2 pairs=20000 samples=3 variants=(0 1)
else rounds=5 pairs=50000 samples=5 variants=(0 1); fi
configs=(cudart cudasnap_sync cudasnap_fence cudasnap_stream cudasnap_stream_stacks32 async cub)
thread_configs=(cudart cudasnap_sync cudasnap_stream async cub)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpu-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

step "allocation pairs: ${#configs[@]} allocators, 2 patterns, kernel variants (${variants[*]}), $rounds rounds"
for ((r = 1; r <= rounds; r++)); do
  for kernel in "${variants[@]}"; do
    for pattern in same random64; do
      for config in "${configs[@]}"; do alloc "$config" "$pattern" 1 "$kernel" >>"$tmp/a.$kernel.$pattern.$config"; done
      for config in "${thread_configs[@]}"; do alloc "$config" "$pattern" 8 "$kernel" >>"$tmp/t.$kernel.$pattern.$config"; done
    done
  done
done
for kernel in "${variants[@]}"; do
  variant=$([[ $kernel == 1 ]] && echo kernel || echo idle)
  for pattern in same random64; do
    for config in "${configs[@]}"; do
      emit "gpu_alloc_${variant}_${pattern}_$config $(median "$tmp/a.$kernel.$pattern.$config") ns"
    done
    for config in "${thread_configs[@]}"; do
      ns=$(median "$tmp/t.$kernel.$pattern.$config")
      emit "gpu_alloc_${variant}_${pattern}_${config}_t8 $(awk -v ns="$ns" 'BEGIN { printf "%.3f", 1000 / ns }') Mpairs/s"
    done
  done
done

# ---- 2. PyTorch training step ---------------------------------------------------------------------------
python=${PYTHON:-python3}
if [[ $dry == 1 ]]; then
  torch=0
  say "dry run: PyTorch part skipped"
elif [[ $torch == 1 ]] && ! "$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' \
  >"$logs/torch-import.log" 2>&1; then
  torch=0
  say "SKIPPED the PyTorch part: $python cannot import torch with CUDA ($logs/torch-import.log)"
  echo "# PyTorch part skipped: no torch with CUDA" >>"$results"
fi

if [[ $torch == 1 ]]; then
  script=$out/torch_step.py
  cat >"$script" <<'PY'
# One training step of a Transformer encoder LM head; prints STEP_MS, PEAK_RESERVED_MIB and
# PEAK_ALLOCATED_MIB. argv[1]: "torch" (PyTorch's caching allocator) or "cudasnap" (cudasnap must be
# preloaded and PyTorch's cache off).
import ctypes, os, statistics, sys, time
import torch
import torch.nn.functional as F

mode = sys.argv[1]
env = lambda k, d: int(os.environ.get("GPU_BENCH_TORCH_" + k, d))
layers, d_model, batch, seq, steps = env("LAYERS", 8), env("DMODEL", 1024), env("BATCH", 16), env("SEQ", 512), env("STEPS", 20)
vocab, warmup = 32000, 3

def fail(msg):
    print("torch_step: " + msg, file=sys.stderr)
    sys.exit(1)

lib = ctypes.CDLL(None)
preloaded = hasattr(lib, "cudasnap_max_memory_reserved")
if mode == "cudasnap":
    if not preloaded:
        fail("cudasnap is not preloaded")
    if os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING") != "1":
        fail("PYTORCH_NO_CUDA_MEMORY_CACHING=1 is not set: PyTorch's cache would hide the program's allocations")
elif preloaded:
    fail("cudasnap is preloaded in the PyTorch-allocator run")

torch.manual_seed(0)
dev = torch.device("cuda", 0)
layer = torch.nn.TransformerEncoderLayer(d_model, 16, 4 * d_model, dropout=0.0, batch_first=True)
model = torch.nn.Sequential(torch.nn.TransformerEncoder(layer, layers), torch.nn.Linear(d_model, vocab)).to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
x = torch.randn(batch, seq, d_model, device=dev)
y = torch.randint(0, vocab, (batch, seq), device=dev)

def step():
    opt.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(x).reshape(-1, vocab), y.reshape(-1))
    loss.backward()
    opt.step()
    return loss

for _ in range(warmup):
    step()
torch.cuda.synchronize()
times = []
for _ in range(steps):
    t0 = time.perf_counter()
    loss = step()
    torch.cuda.synchronize()
    times.append(time.perf_counter() - t0)
if not torch.isfinite(loss).item():
    fail("the loss is not finite")

if mode == "cudasnap":
    for name in ("cudasnap_max_memory_reserved", "cudasnap_max_memory_allocated"):
        getattr(lib, name).restype = ctypes.c_int64
        getattr(lib, name).argtypes = [ctypes.c_int]
    reserved, allocated = lib.cudasnap_max_memory_reserved(0), lib.cudasnap_max_memory_allocated(0)
    if reserved <= 0:
        fail("cudasnap reserved nothing: PyTorch's allocations did not reach it")
else:
    reserved, allocated = torch.cuda.max_memory_reserved(dev), torch.cuda.max_memory_allocated(dev)
print("STEP_MS %.3f" % (statistics.median(times) * 1e3))
print("PEAK_RESERVED_MIB %.1f" % (reserved / 2**20))
print("PEAK_ALLOCATED_MIB %.1f" % (allocated / 2**20))
PY
  if [[ $quick == 1 ]]; then trounds=2; export GPU_BENCH_TORCH_STEPS=${GPU_BENCH_TORCH_STEPS:-8}; else trounds=5; fi
  tconfigs=(torch cudasnap_sync cudasnap_fence cudasnap_stream)
  # torch_run CONFIG [VAR=value...] -> the script's three lines
  torch_run() {
    local config=$1
    shift
    local -a e=(env CUDASNAP_DUMP_ON=none)
    local mode=torch
    if [[ $config != torch ]]; then
      mode=cudasnap
      e+=("LD_PRELOAD=$lib" PYTORCH_NO_CUDA_MEMORY_CACHING=1 CUDASNAP_STACKS=none "CUDASNAP_FREE=${config#cudasnap_}" CUDASNAP_FREE_STREAM_ACK=1)
    fi
    e+=("$@") # the caller's settings come last and win
    local log=$logs/torch-$config.log
    "${e[@]}" "$python" "$script" "$mode" 2>>"$log" || die "the PyTorch step ($config) failed ($log)"
  }
  step "PyTorch training step: ${tconfigs[*]}, $trounds rounds"
  for ((r = 1; r <= trounds; r++)); do
    for config in "${tconfigs[@]}"; do
      torch_run "$config" >"$tmp/run.txt"
      for key in STEP_MS PEAK_RESERVED_MIB PEAK_ALLOCATED_MIB; do
        v=$(awk -v k="$key" '$1 == k { print $2 }' "$tmp/run.txt")
        [[ -n $v ]] || die "the PyTorch step ($config) printed no $key"
        echo "$v" >>"$tmp/torch.$config.$key"
      done
    done
  done
  for config in "${tconfigs[@]}"; do
    emit "torch_step_$config $(median "$tmp/torch.$config.STEP_MS") ms"
    emit "torch_peak_reserved_$config $(median "$tmp/torch.$config.PEAK_RESERVED_MIB") MiB"
    emit "torch_peak_allocated_$config $(median "$tmp/torch.$config.PEAK_ALLOCATED_MIB") MiB"
  done

  step "PyTorch training step with a snapshot at exit"
  snap=$out/torch-step.pickle
  rm -f "$snap"
  torch_run cudasnap_stream GPU_BENCH_TORCH_STEPS=2 CUDASNAP_DUMP_ON=exit CUDASNAP_STACKS=native "CUDASNAP_OUTPUT=$snap" >/dev/null
  [[ -s $snap ]] || die "no snapshot at $snap"
  "$python" - "$snap" >>"$logs/snapshot-check.log" 2>&1 <<'PY' || die "the snapshot does not load ($logs/snapshot-check.log)"
import pickle, sys
class Restricted(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError("global %s.%s" % (module, name))
with open(sys.argv[1], "rb") as f:
    s = Restricted(f).load()
assert isinstance(s, dict) and s.get("segments") and s.get("device_traces"), "no segments or device_traces"
print("snapshot: %d segments, %d trace events" % (len(s["segments"]), sum(len(t) for t in s["device_traces"])))
PY
  emit "torch_snapshot_bytes $(stat -c %s "$snap") B"
fi

step "done"
say "results: $results"
