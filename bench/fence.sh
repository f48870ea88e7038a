#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/fence.sh [BEFORE_REV [ROUNDS]]
#
# Issue 24, defect 5: fence mode with many streams. Builds bench/bench_fence.c twice with -O2
# (CS_DEBUG=0), against BEFORE_REV's allocator/ (default HEAD~1) and against the working tree's,
# and runs the two interleaved, ROUNDS rounds (default 7), in these cases:
#   threads  streams  sync_us
#   1        1        0        the fence path as it was: one event per free (hot-path check)
#   4        8        0        8 events per free, 4 threads
#   1        100      50       past the stream limit: a 50 us synchronization per free
#   4        100      50       the same, 4 threads: under the lock they queue behind each other
# and prints, per case, the median ns per pair of each build:
#   BENCH fence_<threads>t_<streams>s_<sync_us>us_<before|after> <ns> ns
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
before=${1:-HEAD~1}
rounds=${2:-7}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

build() { # build NAME ALLOCATOR_ROOT: the bench against ALLOCATOR_ROOT/allocator/*.c
  local flags=(-std=c11 -O2 -D_GNU_SOURCE -DCS_DEBUG=0 -Wall -Wextra -Wpedantic -Wconversion -Werror)
  gcc "${flags[@]}" -I"$2" -I"$repo" -o "$dir/$1" "$repo/bench/bench_fence.c" "$2"/allocator/*.c \
    "$repo"/common/*.c "$repo"/stats/*.c -lpthread -lm -ldl
}
mkdir -p "$dir/src-before"
git -C "$repo" archive "$before" allocator | tar -x -C "$dir/src-before"
build before "$dir/src-before"
build after "$repo"

cases=("1 1 0 400000" "4 8 0 100000" "1 100 50 4000" "4 100 50 2000")
declare -A samples
for ((r = 0; r < rounds; r++)); do
  for c in "${cases[@]}"; do
    for v in before after; do
      samples["$c/$v"]+="$("$dir/$v" $c) "
    done
  done
done
median() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
for c in "${cases[@]}"; do
  read -r threads streams sync_us _ <<<"$c"
  for v in before after; do
    echo "BENCH fence_${threads}t_${streams}s_${sync_us}us_$v $(median <<<"${samples["$c/$v"]}") ns"
  done
done
