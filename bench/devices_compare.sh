#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One thread driving several devices, two builds of libcudasnap.so by turns (bench/README.md,
# "One thread, several devices (issue 33)"): an alloc/free pair's cost with 1, 4 and 8 devices.
#
#   bench/devices_compare.sh BEFORE.so AFTER.so [ROUNDS] [PAIRS]
#
# Each round runs bench_hotpath devices N PAIRS 3 40 for N = 1, 4, 8 with BEFORE, then AFTER
# (stacks off, CUDASNAP_DUMP_ON=none, the history on as by default; the fake driver with 8
# devices): one thread, each pair on the next device's primary context. Prints the machine on
# stderr and, per N and build, the median over the rounds of each run's median ns per pair:
#   BENCH devices_<N>_<before|after> <ns> ns
# The programs and the fake driver come from the Release tree bench/run.sh builds
# (CS_BENCH_BUILD_DIR, default <repo>/build-bench). ROUNDS defaults to 7, PAIRS (per sample) to 200000.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${CS_BENCH_BUILD_DIR:-$root/build-bench}
usage="usage: bench/devices_compare.sh BEFORE.so AFTER.so [ROUNDS] [PAIRS]"
before=${1:?$usage} after=${2:?$usage}
rounds=${3:-7} pairs=${4:-200000}
fakes=$build/tests/fakes
for f in "$before" "$after" "$build/bench/bench_hotpath" "$fakes/libcuda.so.1"; do
  [[ -e $f ]] || { echo "bench/devices_compare.sh: missing $f (run bench/run.sh once first)" >&2; exit 1; }
done
unset LD_PRELOAD
while IFS= read -r name; do unset "$name"; done < <(compgen -e | grep '^CUDASNAP_' || true)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "devices_compare: $(date -u '+%Y-%m-%d %H:%M UTC'); $(lscpu | sed -n 's/^Model name: *//p' | head -n1), $(nproc) CPUs;" \
  "load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for ((r = 1; r <= rounds; r++)); do
  echo "devices_compare: round $r of $rounds" >&2
  for n in 1 4 8; do
    for v in before after; do
      lib=$before
      [[ $v == after ]] && lib=$after
      env LD_LIBRARY_PATH="$fakes" LD_PRELOAD="$lib" BENCH_EXPECT_PRELOAD=1 FAKE_CUDA_DEVICES=8 \
        CUDASNAP_DUMP_ON=none CUDASNAP_STACKS=none "$build/bench/bench_hotpath" devices "$n" "$pairs" 3 40 \
        >>"$tmp/$n.$v"
    done
  done
done
echo "devices_compare: load average at the end $(cut -d' ' -f1-3 /proc/loadavg)" >&2
for n in 1 4 8; do
  for v in before after; do
    echo "BENCH devices_${n}_$v $(sort -g "$tmp/$n.$v" | awk '{v[NR] = $1} END {
      if (NR % 2) printf "%.2f", v[(NR + 1) / 2]; else printf "%.2f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }') ns"
  done
done
