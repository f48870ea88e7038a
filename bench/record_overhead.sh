#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The hot path with and without a recording file (CUDASNAP_RECORD, issue 13), and against another
# build of libcudasnap.so (the main branch's, to see that a ring in memory costs what it did):
#
#   bench/record_overhead.sh [BASE_LIB] [ROUNDS]
#
# Uses the Release tree bench/run.sh builds (run it first). Per round and pattern (same,
# random64), and per stack setting (none, 32 frames), every configuration runs once, back to back
# in a shuffled order: base (BASE_LIB, when given), off (this tree, no file), on (this tree,
# CUDASNAP_RECORD). Prints the median ns per allocate+free pair of each, and the medians of the
# per-round ratios on/off and off/base, which cancel most of the load a shared machine adds.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${CS_BENCH_BUILD_DIR:-$root/build-bench}
base=${1:-}
rounds=${2:-15}
bin=$build/bench
lib=$build/interpose/libcudasnap.so
fakes=$build/tests/fakes
for f in "$bin/bench_hotpath" "$lib" "$fakes/libcuda.so.1"; do
  [[ -f $f ]] || { echo "record_overhead.sh: $f missing: run bench/run.sh --quick first" >&2; exit 1; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cudasnap-record.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
unset LD_PRELOAD
while IFS= read -r name; do unset "$name"; done < <(compgen -e | grep '^CUDASNAP_' || true)

configs=(off on)
[[ -n $base ]] && configs+=(base)
one() { # one CONFIG PATTERN STACKS -> ns per pair
  local config=$1 pattern=$2 stacks=$3 l=$lib
  local -a env=(env "LD_LIBRARY_PATH=$fakes" CUDASNAP_DUMP_ON=none BENCH_EXPECT_PRELOAD=1)
  if [[ $stacks == none ]]; then env+=(CUDASNAP_STACKS=none); else env+=(CUDASNAP_STACKS=native CUDASNAP_STACK_DEPTH=32); fi
  [[ $config == on ]] && env+=("CUDASNAP_RECORD=$tmp/rec-%p.csrec")
  [[ $config == base ]] && l=$base
  "${env[@]}" "LD_PRELOAD=$l" "$bin/bench_hotpath" "$pattern" 100000 1 3 40 2>/dev/null
  rm -f "$tmp"/rec-*.csrec
}
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

for ((r = 1; r <= rounds; r++)); do
  for pattern in same random64; do
    for stacks in none 32; do
      for config in $(printf '%s\n' "${configs[@]}" | shuf); do
        one "$config" "$pattern" "$stacks" >"$tmp/last.$config"
        cat "$tmp/last.$config" >>"$tmp/$pattern.$stacks.$config"
      done
      awk -v a="$(cat "$tmp/last.on")" -v b="$(cat "$tmp/last.off")" 'BEGIN { printf "%.4f\n", a / b }' \
        >>"$tmp/$pattern.$stacks.on_over_off"
      if [[ -n $base ]]; then
        awk -v a="$(cat "$tmp/last.off")" -v b="$(cat "$tmp/last.base")" 'BEGIN { printf "%.4f\n", a / b }' \
          >>"$tmp/$pattern.$stacks.off_over_base"
      fi
    done
  done
  printf 'record_overhead: round %d of %d\n' "$r" "$rounds" >&2
done
for pattern in same random64; do
  for stacks in none 32; do
    for config in "${configs[@]}" on_over_off $([[ -n $base ]] && echo off_over_base); do
      unit=ns
      [[ $config == *_over_* ]] && unit=ratio
      echo "BENCH record_${pattern}_stacks${stacks}_$config $(median <"$tmp/$pattern.$stacks.$config") $unit"
    done
  done
done
