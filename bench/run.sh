#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# cudasnap's benchmarks (bench/README.md): builds them in their own Release tree and prints one
# machine-readable line per figure on stdout,
#     BENCH <name> <value> <unit>
# and progress on stderr. No GPU is needed: the hot path runs on the fake CUDA driver of
# tests/fakes; everything else drives cudasnap's layers directly.
#
#   bench/run.sh [--quick]
#
#   --quick   fewer rounds and iterations, no 1,000,000-event dumps or reads, shorter thread
#             runs: under a minute on a 2-core machine, including a fresh build.
#
# CS_BENCH_BEFORE=PATH/libcudasnap.so (another build of the library, e.g. main's before a change)
# adds it to the hot path (stacks off and 32 frames), the thread scaling and one thread on several
# devices, interleaved with this tree's, as hotpath_*_before_*, threads_*_before_* and
# devices_*_before_* lines. BENCH_CLOCK=cpu times one thread's hot-path samples by its CPU time
# (for a machine shared with other work; threads stay on wall time).
# Environment: CS_BENCH_BUILD_DIR (default <repo>/build-bench), CS_BENCH_TRACES (the PyTorch
# snapshots to replay; default <repo>/tests/data/traces, which the repository holds; the fragmentation part is
# skipped with a message when the directory is absent), CS_BENCH_MEMVIZ_PY (a copy of PyTorch's
# torch/cuda/_memory_viz.py, for its `stats` beside ours in the reading figures; bench/read.sh).
# Inherited CUDASNAP_* variables and LD_PRELOAD are cleared: every run sets exactly what it measures.
# The report's render time needs python3 and Chromium (skipped with a message without them).
set -euo pipefail

usage() {
  sed -n '3,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
}

quick=0
for arg in "$@"; do
  case $arg in
    --quick) quick=1 ;;
    -h | --help) usage; exit 0 ;;
    *) printf 'bench/run.sh: unknown argument "%s"\n\n' "$arg" >&2; usage >&2; exit 2 ;;
  esac
done

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${CS_BENCH_BUILD_DIR:-$root/build-bench}
traces=${CS_BENCH_TRACES:-$root/tests/data/traces}
jobs=$(nproc 2>/dev/null || echo 2)

log() { printf 'bench: [%3ds] %s\n' "$SECONDS" "$*" >&2; }
die() { printf 'bench/run.sh: %s\n' "$*" >&2; exit 1; }

unset LD_PRELOAD
while IFS= read -r name; do unset "$name"; done < <(compgen -e | grep '^CUDASNAP_' || true)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cudasnap-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# ---- machine ----------------------------------------------------------------------------------
model=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n1 || true)
log "$(date -u '+%Y-%m-%d %H:%M UTC'); ${model:-unknown CPU}, $jobs CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg)"
log "mode: $([[ $quick == 1 ]] && echo quick || echo full); one thread timed by the ${BENCH_CLOCK:-wall} clock"

# ---- build ------------------------------------------------------------------------------------
log "building in $build (Release, CS_DEBUG=0)"
# Configure once; later builds re-run cmake by themselves when a CMakeLists.txt changes.
cache=$build/CMakeCache.txt
if ! [[ -f $cache ]] || ! grep -qx 'CMAKE_BUILD_TYPE:STRING=Release' "$cache" ||
  ! grep -qx 'CS_DEBUG:STRING=0' "$cache"; then
  if ! out=$(cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCS_DEBUG=0 2>&1); then
    printf '%s\n' "$out" >&2
    die "cmake configuration failed"
  fi
fi
targets=(bench_allocator bench_snapshot bench_memory bench_frag bench_hotpath bench_nvtx cudasnap cudasnap_cli fake_cuda fake_cudart)
have_cub=0
if [[ -d $build/bench/CMakeFiles/bench_cub.dir ]]; then
  targets+=(bench_cub)
  have_cub=1
else
  log "bench_cub is not configured (no C++ compiler or no cub/util_allocator.cuh): CUB figures are missing"
fi
if ! out=$(cmake --build "$build" -j "$jobs" --target "${targets[@]}" 2>&1); then
  printf '%s\n' "$out" >&2
  die "build failed"
fi

bin=$build/bench
lib=$build/interpose/libcudasnap.so
fakes=$build/tests/fakes
for f in "$bin/bench_hotpath" "$lib" "$fakes/libcuda.so.1" "$fakes/libcudart.so.13"; do
  [[ -e $f ]] || die "missing $f after the build"
done

# ---- helpers ----------------------------------------------------------------------------------

# median FILE: the median of the numbers in FILE, one per line
median() {
  sort -g "$1" | awk '{ v[NR] = $1 } END {
    if (NR == 0) exit 1
    if (NR % 2) printf "%.2f\n", v[(NR + 1) / 2]; else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# run LOGNAME CMD...: run a benchmark program, its stdout to ours; stderr shown only on failure
run() {
  local name=$1
  shift
  if ! "$@" 2>"$tmp/$name.err"; then
    cat "$tmp/$name.err" >&2
    die "$name failed: $*"
  fi
}

# One hot-path measurement: hot CONFIG PATTERN PAIRS THREADS SAMPLES -> ns per pair on stdout.
# Every run: the fake driver on the library path, no snapshot at all (CUDASNAP_DUMP_ON=none), and a
# stack 40 frames deep below the allocating loop (DEPTH), so that 8 and 32-frame captures are full.
depth=40
hot() {
  local config=$1 pattern=$2 pairs=$3 threads=$4 samples=$5
  local -a env=(env "LD_LIBRARY_PATH=$fakes" CUDASNAP_DUMP_ON=none)
  local -a preload=("LD_PRELOAD=$lib" BENCH_EXPECT_PRELOAD=1)
  local -a cmd=("$bin/bench_hotpath" "$pattern" "$pairs" "$threads" "$samples" "$depth")
  case $config in
    fake_driver) env+=(BENCH_EXPECT_PRELOAD=0) ;;
    ctx_calls) env+=(BENCH_EXPECT_PRELOAD=0); cmd[1]=ctxcalls ;;
    cudasnap_nostacks) env+=("${preload[@]}" CUDASNAP_STACKS=none) ;;
    cudasnap_stacks8) env+=("${preload[@]}" CUDASNAP_STACKS=native CUDASNAP_STACK_DEPTH=8) ;;
    cudasnap_stacks32) env+=("${preload[@]}" CUDASNAP_STACKS=native CUDASNAP_STACK_DEPTH=32) ;;
    cudasnap_stacks32_all) env+=("${preload[@]}" CUDASNAP_STACKS=all CUDASNAP_STACK_DEPTH=32) ;;
    cudasnap_nostacks_streamfree) env+=("${preload[@]}" CUDASNAP_STACKS=none CUDASNAP_FREE=stream CUDASNAP_FREE_STREAM_ACK=1) ;;
    # the history, stacks and module map in a recording file (CUDASNAP_RECORD, issue 13)
    cudasnap_nostacks_record) env+=("${preload[@]}" CUDASNAP_STACKS=none "CUDASNAP_RECORD=$tmp/rec-%p.csrec") ;;
    cudasnap_stacks32_record)
      env+=("${preload[@]}" CUDASNAP_STACKS=native CUDASNAP_STACK_DEPTH=32 "CUDASNAP_RECORD=$tmp/rec-%p.csrec") ;;
    cudasnap_nohistory) env+=("${preload[@]}" CUDASNAP_STACKS=none CUDASNAP_MAX_ENTRIES=0) ;;
    cudasnap_nohistory_streamfree)
      env+=("${preload[@]}" CUDASNAP_STACKS=none CUDASNAP_MAX_ENTRIES=0 CUDASNAP_FREE=stream CUDASNAP_FREE_STREAM_ACK=1) ;;
    cub) cmd[0]=$bin/bench_cub ;;
    *) die "unknown configuration $config" ;;
  esac
  run "hot-$config-$pattern" "${env[@]}" "${cmd[@]}"
  rm -f "$tmp"/rec-*.csrec
}

# ---- 1. hot path ------------------------------------------------------------------------------
if [[ $quick == 1 ]]; then
  # 200,000 pairs per one-thread run, as the full mode: a process's first pairs pay its history's
  # page faults, which at 20,000 pairs made the same-size pair read 1.9x CUB where 200,000 read
  # 1.2x; the runs are short next to the processes' start either way.
  rounds=3 pairs=200000 floor_pairs=1000 samples=3
  # 20,000 pairs per thread, not fewer: a thread's first pairs pay its history chunk's page
  # faults, which at 5,000 pairs made one thread read 0.3x CUB where longer runs read 0.9x.
  thread_rounds=3 thread_pairs=20000 thread_patterns=(same random64)
else
  rounds=9 pairs=200000 floor_pairs=10000 samples=5
  thread_rounds=5 thread_pairs=50000 thread_patterns=(same random64)
fi
configs=(fake_driver cudasnap_nostacks cudasnap_stacks8 cudasnap_stacks32 cudasnap_stacks32_all
  cudasnap_nostacks_record cudasnap_stacks32_record)
if [[ $have_cub == 1 ]]; then configs+=(cub); fi
if [[ $quick == 0 ]]; then configs+=(cudasnap_nostacks_streamfree cudasnap_nohistory cudasnap_nohistory_streamfree); fi
# configurations compared with CUB round by round: ratio name -> configuration
declare -A over_cub=([cudasnap_over_cub]=cudasnap_nostacks [cudasnap_stacks32_over_cub]=cudasnap_stacks32)
if [[ $quick == 0 ]]; then over_cub[cudasnap_streamfree_over_cub]=cudasnap_nostacks_streamfree; fi
# CS_BENCH_BEFORE=OLD/libcudasnap.so: another build, interleaved with this one (issue 36)
before=${CS_BENCH_BEFORE:-}
if [[ -n $before ]]; then
  [[ -f $before ]] || die "CS_BENCH_BEFORE=$before: no such library"
  configs+=(before_cudasnap_nostacks before_cudasnap_stacks32)
  over_cub[before_cudasnap_over_cub]=before_cudasnap_nostacks
  over_cub[before_cudasnap_stacks32_over_cub]=before_cudasnap_stacks32
fi

log "hot path: ${#configs[@]} configurations x 2 patterns, $rounds interleaved rounds"
for ((r = 1; r <= rounds; r++)); do
  for pattern in same random64; do
    for config in "${configs[@]}"; do
      n=$pairs
      if [[ $config == fake_driver ]]; then n=$floor_pairs; fi
      case $config in
        before_*) lib=$before hot "${config#before_}" "$pattern" "$n" 1 "$samples" ;;
        *) hot "$config" "$pattern" "$n" 1 "$samples" ;;
      esac >>"$tmp/hot.$pattern.$config"
    done
    if [[ $have_cub == 1 ]]; then
      # the ratios of this round's runs
      b=$(tail -n1 "$tmp/hot.$pattern.cub")
      for ratio in "${!over_cub[@]}"; do
        a=$(tail -n1 "$tmp/hot.$pattern.${over_cub[$ratio]}")
        awk -v a="$a" -v b="$b" 'BEGIN { printf "%.4f\n", a / b }' >>"$tmp/hot.$pattern.$ratio"
      done
    fi
  done
  if [[ $quick == 0 ]]; then hot ctx_calls same "$pairs" 1 "$samples" >>"$tmp/hot.ctx_calls"; fi
  run clock "$bin/bench_hotpath" clock 200000 >>"$tmp/hot.clock"
done
for pattern in same random64; do
  for config in "${configs[@]}"; do
    echo "BENCH hotpath_${pattern}_$config $(median "$tmp/hot.$pattern.$config") ns"
  done
  if [[ $have_cub == 1 ]]; then
    for ratio in $(printf '%s\n' "${!over_cub[@]}" | sort); do
      echo "BENCH hotpath_${pattern}_$ratio $(median "$tmp/hot.$pattern.$ratio") ratio"
    done
  else
    log "hotpath_${pattern}_cub: missing (bench_cub not built)"
  fi
done
if [[ $quick == 0 ]]; then echo "BENCH hotpath_fake_driver_ctx_calls $(median "$tmp/hot.ctx_calls") ns"; fi
echo "BENCH clock_gettime_monotonic $(median "$tmp/hot.clock") ns"

# ---- 1d. Python frames: pairs from 20 Python frames deep (ctypes on the fake driver) -----------
python=$(command -v python3 || true)
if [[ -z $python ]]; then
  log "python3 not found: the Python frame figures are missing"
else
  if [[ $quick == 1 ]]; then py_rounds=3 py_pairs=20000; else py_rounds=7 py_pairs=200000; fi
  py_configs=(nopreload none native all python)
  log "Python frames: ${#py_configs[@]} configurations, $py_rounds interleaved rounds ($($python -V 2>&1))"
  for ((r = 1; r <= py_rounds; r++)); do
    for config in "${py_configs[@]}"; do
      local_env=(env "LD_LIBRARY_PATH=$fakes" CUDASNAP_DUMP_ON=none)
      if [[ $config != nopreload ]]; then local_env+=("LD_PRELOAD=$lib" "CUDASNAP_STACKS=$config"); fi
      run "py-$config" "${local_env[@]}" "$python" "$root/bench/bench_python.py" "$py_pairs" 3 20 \
        >>"$tmp/py.$config"
    done
  done
  for config in "${py_configs[@]}"; do
    echo "BENCH python20_$config $(median "$tmp/py.$config") ns"
  done
fi

# ---- 1b. threads: total throughput of all threads (pairs per second of wall time) --------------
thread_configs=(cudasnap_nostacks cudasnap_streamfree)
if [[ $have_cub == 1 ]]; then thread_configs+=(cub); fi
if [[ -n $before ]]; then thread_configs+=(before_cudasnap_nostacks before_cudasnap_streamfree); fi
log "threads: 1-16 threads, ${thread_patterns[*]}, $thread_rounds interleaved rounds: ${thread_configs[*]}"
for ((r = 1; r <= thread_rounds; r++)); do
  for pattern in "${thread_patterns[@]}"; do
    for t in 1 2 4 8 16; do
      for config in "${thread_configs[@]}"; do
        case $config in
          cudasnap_streamfree) hot cudasnap_nostacks_streamfree "$pattern" "$thread_pairs" "$t" 3 ;;
          before_cudasnap_nostacks) lib=$before hot cudasnap_nostacks "$pattern" "$thread_pairs" "$t" 3 ;;
          before_cudasnap_streamfree) lib=$before hot cudasnap_nostacks_streamfree "$pattern" "$thread_pairs" "$t" 3 ;;
          *) hot "$config" "$pattern" "$thread_pairs" "$t" 3 ;;
        esac >>"$tmp/thr.$pattern.$t.$config"
      done
      if [[ $have_cub == 1 ]]; then # throughput over CUB's, this round's runs (ns CUB / ns ours)
        b=$(tail -n1 "$tmp/thr.$pattern.$t.cub")
        for config in "${thread_configs[@]}"; do
          [[ $config == cub ]] && continue
          a=$(tail -n1 "$tmp/thr.$pattern.$t.$config")
          awk -v a="$a" -v b="$b" 'BEGIN { printf "%.4f\n", b / a }' >>"$tmp/thr.$pattern.$t.${config}_over_cub"
        done
      fi
    done
  done
done
for pattern in "${thread_patterns[@]}"; do
  for t in 1 2 4 8 16; do
    for config in "${thread_configs[@]}"; do
      ns=$(median "$tmp/thr.$pattern.$t.$config")
      echo "BENCH threads_${pattern}_${config}_t$t $(awk -v ns="$ns" 'BEGIN { printf "%.2f", 1000 / ns }') Mpairs/s"
    done
    if [[ $have_cub == 1 ]]; then
      for config in "${thread_configs[@]}"; do
        [[ $config == cub ]] && continue
        echo "BENCH threads_${pattern}_${config}_over_cub_t$t $(median "$tmp/thr.$pattern.$t.${config}_over_cub") ratio"
      done
    fi
  done
done

# ---- 1c. one thread, several devices: an alloc/free pair round-robin over 1, 4, 8 devices ------
# (issue 33): the cost must not grow with the devices. Stacks off, the history on; with
# CS_BENCH_BEFORE, that build interleaved as devices_<N>_before_cudasnap_nostacks.
dev_configs=(cudasnap_nostacks)
[[ -n $before ]] && dev_configs+=(before_cudasnap_nostacks)
log "one thread, 1/4/8 devices: $thread_rounds interleaved rounds: ${dev_configs[*]}"
for ((r = 1; r <= thread_rounds; r++)); do
  for n in 1 4 8; do
    for config in "${dev_configs[@]}"; do
      dev_lib=$lib
      [[ $config == before_* ]] && dev_lib=$before
      run "devices-$config" env "LD_LIBRARY_PATH=$fakes" "LD_PRELOAD=$dev_lib" BENCH_EXPECT_PRELOAD=1 FAKE_CUDA_DEVICES=8 \
        CUDASNAP_DUMP_ON=none CUDASNAP_STACKS=none "$bin/bench_hotpath" devices "$n" "$pairs" 3 "$depth" \
        >>"$tmp/dev.$n.$config"
    done
  done
done
for n in 1 4 8; do
  for config in "${dev_configs[@]}"; do
    echo "BENCH devices_${n}_$config $(median "$tmp/dev.$n.$config") ns"
  done
done

# ---- 1d. NVTX calls: not injected, cudasnap injected, cudasnap preloaded with CUDASNAP_NVTX=0 ------
if [[ $quick == 1 ]]; then nvtx_rounds=3 nvtx_ops=50000; else nvtx_rounds=9 nvtx_ops=500000; fi
nvtx_configs=(none cudasnap cudasnap_off)
log "NVTX: push/pop, mark, domain push/pop; 1 and 2 threads for push/pop; $nvtx_rounds interleaved rounds"
for ((r = 1; r <= nvtx_rounds; r++)); do
  for what in push:1 push:2 mark:1 domain:1; do
    for config in "${nvtx_configs[@]}"; do
      case $config in
        none) env=(env BENCH_EXPECT_INJECTED=0) ;;
        cudasnap) env=(env LD_PRELOAD="$lib" BENCH_EXPECT_INJECTED=1) ;;
        cudasnap_off) env=(env LD_PRELOAD="$lib" CUDASNAP_NVTX=0 BENCH_EXPECT_INJECTED=0) ;;
      esac
      run "nvtx-$config" "${env[@]}" "$bin/bench_nvtx" "${what%:*}" "$nvtx_ops" 5 "${what#*:}" \
        >>"$tmp/nvtx.${what%:*}_t${what#*:}.$config"
    done
  done
done
# a pool's region register + unregister (the fake driver serves the pool's memory)
for ((r = 1; r <= nvtx_rounds; r++)); do
  for config in none cudasnap_nostacks cudasnap; do
    case $config in
      none) env=(env "LD_LIBRARY_PATH=$fakes" BENCH_EXPECT_INJECTED=0) ;;
      cudasnap_nostacks) env=(env "LD_LIBRARY_PATH=$fakes" LD_PRELOAD="$lib" CUDASNAP_DUMP_ON=none CUDASNAP_STACKS=none) ;;
      cudasnap) env=(env "LD_LIBRARY_PATH=$fakes" LD_PRELOAD="$lib" CUDASNAP_DUMP_ON=none) ;;
    esac
    run "nvtx-region-$config" "${env[@]}" "$bin/bench_nvtx" region "$nvtx_ops" 5 1 >>"$tmp/nvtx.region_t1.$config"
  done
done
for what in push_t1 push_t2 mark_t1 domain_t1; do
  for config in "${nvtx_configs[@]}"; do
    echo "BENCH nvtx_${what}_$config $(median "$tmp/nvtx.$what.$config") ns"
  done
done
for config in none cudasnap_nostacks cudasnap; do
  echo "BENCH nvtx_region_t1_$config $(median "$tmp/nvtx.region_t1.$config") ns"
done

# ---- 1c. the allocator alone, over the simulated device ----------------------------------------
log "allocator over the simulated device"
if [[ $quick == 1 ]]; then run allocator "$bin/bench_allocator" 200000 3; else run allocator "$bin/bench_allocator" 2000000 9; fi

# ---- 2. dumps and symbolization -----------------------------------------------------------------
log "snapshot writing"
if [[ $quick == 1 ]]; then
  run dump-100k "$bin/bench_snapshot" dump 100000 3 "$tmp"
else
  run dump-100k "$bin/bench_snapshot" dump 100000 5 "$tmp"
  run dump-1m "$bin/bench_snapshot" dump 1000000 3 "$tmp"
  run dump-1m-devnull "$bin/bench_snapshot" dump 1000000 3 /dev/null
fi
log "symbolization"
run symbolize "$bin/bench_snapshot" symbolize 10000 "$([[ $quick == 1 ]] && echo 3 || echo 7)"

# ---- 3. fragmentation on PyTorch traces ---------------------------------------------------------
shopt -s nullglob
trace_files=("$traces"/*.pickle "$traces"/*.pkl "$traces"/*.json)
shopt -u nullglob
if [[ ! -d $traces ]]; then
  log "skipping fragmentation: no trace directory $traces (set CS_BENCH_TRACES)"
elif [[ ${#trace_files[@]} == 0 ]]; then
  log "skipping fragmentation: no .pickle/.pkl/.json snapshot in $traces"
else
  log "fragmentation: ${#trace_files[@]} snapshots from $traces"
  run frag "$bin/bench_frag" "${trace_files[@]}"
  cat "$tmp/frag.err" >&2 # what was replayed, and what was skipped
fi

# ---- 4. host memory -----------------------------------------------------------------------------
log "host memory"
run memory-100k "$bin/bench_memory" 100000
if [[ $quick == 0 ]]; then run memory-1m "$bin/bench_memory" 1000000 | grep -v '_sizeof '; fi

# ---- 5. the report page of a 100,000-event snapshot ----------------------------------------------
log "report of a 100,000-event snapshot"
run report-snapshot "$bin/bench_snapshot" write 100000 "$tmp/snap-100k.json"
echo "BENCH report_100k_snapshot_bytes $(stat -c %s "$tmp/snap-100k.json") B"
start=$(date +%s.%N)
run report "$build/cli/cudasnap" report -o "$tmp/snap-100k.html" "$tmp/snap-100k.json" >/dev/null
echo "BENCH report_100k_write_s $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }') s"
echo "BENCH report_100k_page_bytes $(stat -c %s "$tmp/snap-100k.html") B"
if python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import chromium; sys.exit(chromium.find_chromium() is None)' \
  "$root/tests/browser" 2>/dev/null; then
  run report-render python3 "$root/bench/report_render.py" "$tmp/snap-100k.html" "$([[ $quick == 1 ]] && echo 3 || echo 7)" 100k
else
  log "skipping the render time: no Chromium (apt-get install chromium)"
fi

# ---- 6. reading at scale: every subcommand on 100,000 and 1,000,000 events -----------------------
log "reading snapshots$([[ $quick == 1 ]] && echo ' (100,000 events only)')"
bash "$root/bench/read.sh" "$build" $([[ $quick == 1 ]] && echo --quick)

# ---- 6b. `cudasnap ranks` over 1,024 files of 100,000 events (their heads; 128 in quick mode) -----
log "ranks at scale"
if [[ $quick == 1 ]]; then bash "$root/bench/ranks.sh" "$build" --quick; else bash "$root/bench/ranks.sh" "$build"; fi
log "done"
