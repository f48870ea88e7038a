#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Two builds of libcudasnap.so on the hot path, run by turns (bench/README.md, "Comparing two
# builds"): a change that should not touch the hot path is checked against the build before it on
# a machine whose load varies, where only what runs by turns compares.
#
#   bench/compare_libs.sh BEFORE.so AFTER.so [ROUNDS]
#
# Each round runs bench_hotpath (same and random64 patterns, stacks off and 32-frame stacks,
# CUDASNAP_DUMP_ON=none as bench/run.sh runs it) with BEFORE, then with AFTER. Prints, per
# configuration, the median ns per pair of each and the median and quartiles over rounds of the
# ratio AFTER / BEFORE of the same round. Where bench_cub is built, each round also runs CUB on each
# pattern, and each configuration gets the medians over rounds of BEFORE / CUB and AFTER / CUB of
# the same round (issue 36's targets). Uses bench_hotpath and the fake driver of the Release
# tree bench/run.sh builds (CS_BENCH_BUILD_DIR, default <repo>/build-bench; run bench/run.sh once
# first). ROUNDS defaults to 11. BENCH_CLOCK=cpu times the thread's CPU time (bench/README.md).
set -euo pipefail
(($# >= 2)) || { sed -n '3,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
before=$1 after=$2 rounds=${3:-11}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${CS_BENCH_BUILD_DIR:-$root/build-bench}
bin=$build/bench/bench_hotpath cub=$build/bench/bench_cub fakes=$build/tests/fakes
for f in "$before" "$after" "$bin" "$fakes/libcuda.so.1"; do
  [[ -e $f ]] || { echo "compare_libs.sh: missing $f (run bench/run.sh first)" >&2; exit 1; }
done
unset LD_PRELOAD
while IFS= read -r name; do unset "$name"; done < <(compgen -e | grep '^CUDASNAP_' || true)
results=$(mktemp)
trap 'rm -f "$results"' EXIT

for ((round = 1; round <= rounds; round++)); do
  for pattern in same random64; do
    for stacks in none 32; do
      for which in before after; do
        lib=$before
        [[ $which == after ]] && lib=$after
        env=(LD_LIBRARY_PATH="$fakes" LD_PRELOAD="$lib" BENCH_EXPECT_PRELOAD=1 CUDASNAP_DUMP_ON=none)
        if [[ $stacks == none ]]; then env+=(CUDASNAP_STACKS=none); else env+=(CUDASNAP_STACK_DEPTH=32); fi
        ns=$(env "${env[@]}" "$bin" "$pattern" 200000 1 5 40)
        echo "$round $pattern $stacks $which $ns" >>"$results"
      done
    done
    if [[ -x $cub ]]; then
      ns=$(env LD_LIBRARY_PATH="$fakes" "$cub" "$pattern" 200000 1 5 40)
      echo "$round $pattern cub cub $ns" >>"$results"
    fi
  done
  printf 'compare_libs: round %d of %d\n' "$round" "$rounds" >&2
done

python3 - "$results" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(dict)
cub = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    rnd, pattern, stacks, which, ns = line.split()
    if stacks == "cub":
        cub[pattern][rnd] = float(ns)
    else:
        runs[(pattern, stacks)].setdefault(rnd, {})[which] = float(ns)
print("%-9s %-7s %8s %8s %7s %-22s %s" % ("pattern", "stacks", "before", "after", "ratio", "quartiles of the ratio",
                                         "cub before/cub after/cub" if cub else ""))
for (pattern, stacks), rounds in sorted(runs.items()):
    ratios = sorted(r["after"] / r["before"] for r in rounds.values())
    n = len(ratios)
    line = "%-9s %-7s %8.0f %8.0f %7.3f %-22s" % (
        pattern, stacks, statistics.median(r["before"] for r in rounds.values()),
        statistics.median(r["after"] for r in rounds.values()), statistics.median(ratios),
        "%.2f-%.2f" % (ratios[n // 4], ratios[(3 * n) // 4]))
    if cub.get(pattern):
        c = cub[pattern]
        line += " %3.0f %10.2f %9.2f" % (
            statistics.median(c.values()),
            statistics.median(r["before"] / c[k] for k, r in rounds.items() if k in c),
            statistics.median(r["after"] / c[k] for k, r in rounds.items() if k in c))
    print(line.rstrip())
PY
