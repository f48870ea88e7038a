#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Thread scaling of two builds of libcudasnap.so and CUB, by turns (bench/README.md, "Threads
# (issue 27)"): the table of before and after in one run, with the fake driver of each side.
#
#   bench/threads_compare.sh BEFORE.so AFTER.so [ROUNDS] [PAIRS]
#
# Each round runs, for both patterns (same, random64) and 1, 2, 4, 8 and 16 threads,
# bench_hotpath PATTERN PAIRS THREADS 3 40 with BEFORE and AFTER in sync and stream free mode
# (stacks off, CUDASNAP_DUMP_ON=none), then bench_cub. Prints each configuration's median total
# throughput in Mpairs/s. The programs and the fake driver come from the Release tree bench/run.sh
# builds (CS_BENCH_BUILD_DIR, default <repo>/build-bench); BENCH_BEFORE_FAKES=DIR runs BEFORE (and
# a second CUB column) on another fake driver's directory, e.g. one built before a change to it.
# ROUNDS defaults to 5, PAIRS (per thread and sample) to 30000.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${CS_BENCH_BUILD_DIR:-$root/build-bench}
before=${1:?usage: bench/threads_compare.sh BEFORE.so AFTER.so [ROUNDS] [PAIRS]}
after=${2:?usage: bench/threads_compare.sh BEFORE.so AFTER.so [ROUNDS] [PAIRS]}
rounds=${3:-5} pairs=${4:-30000}
fakes=$build/tests/fakes before_fakes=${BENCH_BEFORE_FAKES:-$build/tests/fakes}
for f in "$before" "$after" "$build/bench/bench_hotpath" "$build/bench/bench_cub" "$fakes/libcuda.so.1"; do
  [[ -e $f ]] || { echo "bench/threads_compare.sh: missing $f (run bench/run.sh once first)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
configs=(before_sync before_stream after_sync after_stream cub)
[[ $before_fakes != "$fakes" ]] && configs+=(cub_before_fakes)

one() { # CONFIG PATTERN THREADS -> ns per pair
  local lib=$after fk=$fakes mode=${1#*_}
  case $1 in before_*) lib=$before fk=$before_fakes ;; cub_before_fakes) fk=$before_fakes ;; esac
  case $1 in
    cub*) env LD_LIBRARY_PATH="$fk" "$build/bench/bench_cub" "$2" "$pairs" "$3" 3 40 ;;
    *) local -a extra=()
       [[ $mode == stream ]] && extra=(CUDASNAP_FREE=stream CUDASNAP_FREE_STREAM_ACK=1)
       env LD_LIBRARY_PATH="$fk" LD_PRELOAD="$lib" BENCH_EXPECT_PRELOAD=1 CUDASNAP_DUMP_ON=none \
         CUDASNAP_STACKS=none "${extra[@]}" "$build/bench/bench_hotpath" "$2" "$pairs" "$3" 3 40 ;;
  esac
}

for ((r = 1; r <= rounds; r++)); do
  echo "threads_compare: round $r of $rounds" >&2
  for p in same random64; do for t in 1 2 4 8 16; do for c in "${configs[@]}"; do
    one "$c" "$p" "$t" >>"$tmp/$p.$t.$c"
  done; done; done
done
for p in same random64; do
  echo "$p (Mpairs/s): threads ${configs[*]}"
  for t in 1 2 4 8 16; do
    line="t$t"
    for c in "${configs[@]}"; do
      ns=$(sort -g "$tmp/$p.$t.$c" | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}')
      line+=" $(awk -v ns="$ns" 'BEGIN { printf "%.2f", 1000 / ns }')"
    done
    echo "$line"
  done
done
