#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/oom_loop.sh [BUILD_DIR] [LIB...]
#
# Issue 24, defect 2: what a program that fails an allocation and recovers 1,000 times pays for
# cudasnap's out-of-memory snapshots. Runs tests/integration/prog_oom_loop.c (it_oom_loop 1000, on
# the fake driver with 64 MiB) under each LIB (default: BUILD_DIR's libcudasnap.so; BUILD_DIR
# defaults to build/; the library is BUILD_DIR/interpose/libcudasnap.so), with CUDASNAP_DUMP_ON=oom and =none, interleaved, 5 rounds, and prints
#   BENCH oom_loop_<n>_<dump_on> <median us per round> us   (n: the LIB's position, from 1)
#   BENCH oom_loop_<n>_files <OOM snapshots written in one run> files
# One round is one failed cuMemAlloc_v2 (1 GiB) plus a 1 MiB cuMemAlloc_v2/cuMemFree_v2 pair.
set -eu
build=${1:-build}
shift || true
libs=("$@")
((${#libs[@]})) || libs=("$build/interpose/libcudasnap.so")
prog=$build/tests/integration/it_oom_loop
fakes=$build/tests/fakes
[[ -x $prog ]] || { echo "no $prog: build the tree first" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
declare -A samples
for round in 1 2 3 4 5; do
  n=0
  for lib in "${libs[@]}"; do
    n=$((n + 1))
    for dump_on in oom none; do
      rm -f "$dir"/*.json
      us=$(env -u LD_PRELOAD LD_LIBRARY_PATH="$fakes" LD_PRELOAD="$lib" FAKE_CUDA_CAPACITY=$((64 << 20)) \
        CUDASNAP_DUMP_ON=$dump_on CUDASNAP_OUTPUT="$dir/snap-%n-%t.json" CUDASNAP_LOG=quiet \
        "$prog" 1000 | sed -n 's/^us_per_oom=//p')
      samples[$n.$dump_on]+="$us "
      [[ $dump_on == oom && $round == 1 ]] && echo "BENCH oom_loop_${n}_files $(ls "$dir" | grep -c -- '-oom\.json$') files"
    done
  done
done
n=0
for lib in "${libs[@]}"; do
  n=$((n + 1))
  echo "# $n: $lib" >&2
  for dump_on in oom none; do
    median=$(tr ' ' '\n' <<<"${samples[$n.$dump_on]}" | grep . | sort -g | sed -n 3p)
    echo "BENCH oom_loop_${n}_${dump_on} $median us"
  done
done
