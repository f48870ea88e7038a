#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The live record's publication against an allocating thread, two builds of libcudasnap.so by
# turns (bench/README.md, "The live record without a walk"): bench_live_stall over 100,000 and
# 1,000,000 live blocks, while the library publishes the live record every second.
#
#   bench/live_stall.sh BEFORE.so AFTER.so [ROUNDS] [SECONDS]
#
# Each round runs bench_live_stall LIVE SECONDS for LIVE = 100000 and 1000000, with BEFORE, then
# AFTER (CUDASNAP_STACKS=none, CUDASNAP_DUMP_ON=none, the live record on as by default), then AFTER
# with CUDASNAP_LIVE=0 ("nolive": no publication at all, the machine's own noise). Prints,
# per build and number of live blocks, the medians over rounds of each run's p50, p99 and p99.99
# pair, the median and the largest of each run's longest pair, and the median count of pairs over
# 1 ms; then every run's line. ROUNDS defaults to 5, SECONDS to 5.
#
# BENCH_RT=1 runs each program at a real-time priority (chrt -f 10; root or CAP_SYS_NICE), so that
# other work on a shared machine does not preempt the allocating thread for milliseconds at a time
# and hide what the publication does (the program pauses 2 ms every 20 ms to stay under the
# kernel's real-time throttling). Uses bench_live_stall and the fake driver of the Release tree
# bench/run.sh builds (CS_BENCH_BUILD_DIR, default <repo>/build-bench), building that target.
set -euo pipefail
(($# >= 2)) || { sed -n '3,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
before=$1 after=$2 rounds=${3:-5} seconds=${4:-5}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${CS_BENCH_BUILD_DIR:-$root/build-bench}
[[ -f $build/CMakeCache.txt ]] || { echo "live_stall.sh: no build tree $build (run bench/run.sh once first)" >&2; exit 1; }
cmake --build "$build" --target bench_live_stall fake_cuda >/dev/null
bin=$build/bench/bench_live_stall fakes=$build/tests/fakes
for f in "$before" "$after" "$bin" "$fakes/libcuda.so.1"; do
  [[ -e $f ]] || { echo "live_stall.sh: missing $f" >&2; exit 1; }
done
prio=()
[[ ${BENCH_RT:-0} == 1 ]] && prio=(chrt -f 10)
unset LD_PRELOAD
while IFS= read -r name; do unset "$name"; done < <(compgen -e | grep '^CUDASNAP_' || true)
results=$(mktemp)
trap 'rm -f "$results"' EXIT

echo "live_stall: $(date -u '+%Y-%m-%d %H:%M UTC'), $(lscpu | sed -n 's/^Model name: *//p' | head -n1), $(nproc) CPUs," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg)${prio:+, real-time priority}" >&2
for ((round = 1; round <= rounds; round++)); do
  for live in 100000 1000000; do
    for which in before after nolive; do
      lib=$after live_on=1
      [[ $which == before ]] && lib=$before
      [[ $which == nolive ]] && live_on=0
      line=$("${prio[@]}" env LD_LIBRARY_PATH="$fakes" LD_PRELOAD="$lib" CUDASNAP_DUMP_ON=none CUDASNAP_STACKS=none \
        CUDASNAP_LIVE=$live_on "$bin" "$live" "$seconds")
      echo "$round $live $which $line" >>"$results"
    done
  done
  printf 'live_stall: round %d of %d\n' "$round" "$rounds" >&2
done

python3 - "$results" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
lines = open(sys.argv[1]).read().splitlines()
for line in lines:
    rnd, live, which, *fields = line.split()
    runs[(int(live), which)].append(dict(f.split("=", 1) for f in fields))
print("%-9s %-6s %6s %6s %8s %12s %12s %10s" % ("live", "build", "p50", "p99", "p99.99", "max median", "max largest",
                                               ">1ms median"))
order = {"before": 0, "after": 1, "nolive": 2}
for (live, which), rs in sorted(runs.items(), key=lambda kv: (kv[0][0], order[kv[0][1]])):
    med = lambda k: statistics.median(int(r[k]) for r in rs)
    print("%-9d %-6s %6.0f %6.0f %8.0f %12.0f %12d %10.0f" % (
        live, which, med("p50"), med("p99"), med("p9999"), med("max"), max(int(r["max"]) for r in rs), med("over1ms")))
print("ns; every run:")
for line in lines:
    print("  " + line)
PY
