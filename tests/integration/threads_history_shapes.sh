#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# threads_history_shapes.sh BIN_DIR CUDASNAP_LIB CUDASNAP_TOOL devices|churn
#
# Issue 33: the exit snapshot's history of two job shapes (it_job_shapes) must be what one ring per
# device would have kept:
#   devices  one thread, alloc/free pairs round-robin over 8 devices, 20,000 rounds;
#   churn    500 threads that each allocate once and exit, then the main thread's 20,000 pairs.
# The program logs every pair it made (address, bytes, device, in its order). With room for all,
# each device's history must hold every pair's alloc, free_requested and free_completed, in the
# program's order (the churn's threads in any order before the main thread's pairs); wrapped to
# 60,000 and to 3,000 entries, exactly that many, the newest of them: a suffix, never one with
# holes. Segment events, which the program does not see, are left out of the comparison, not out
# of the count. Each snapshot replays by the viewer's rules (`cudasnap check`). Stacks are off:
# the entries are what is checked, and the files stay small.
set -u
bin=$1 lib=$2 tool=$3 shape=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() {
  echo "FAIL [threads_history_shapes $shape]: $*" >&2
  [[ -f $dir/err ]] && head -c 3000 "$dir/err" >&2
  exit 1
}
case $shape in
  devices) args=(devices 8 20000) devices=8 ;;
  churn) args=(churn 500 20000) devices=1 ;;
  *) fail "unknown shape (devices or churn)" ;;
esac
for entries in 1000000 60000 3000; do
  rm -f "$dir"/*.json
  (cd "$dir" && env LD_PRELOAD="$lib" FAKE_CUDA_DEVICES=8 CUDASNAP_DUMP_ON=exit CUDASNAP_STACKS=none \
    CUDASNAP_MAX_ENTRIES="$entries" CUDASNAP_OUTPUT="$dir/s-%n-%t.json" "$bin/it_job_shapes" "${args[@]}" \
    "$dir/pairs" >"$dir/out" 2>"$dir/err") || fail "it_job_shapes ${args[*]} exited $? (entries $entries)"
  f=$(ls "$dir"/s-*-exit.json 2>/dev/null | head -n1)
  [[ -n $f ]] || fail "no exit snapshot (entries $entries)"
  "$tool" check "$f" >"$dir/check" 2>&1 || fail "cudasnap check, entries $entries: $(head -c 2000 "$dir/check")"
  python3 - "$f" "$dir/pairs" "$devices" "$entries" <<'PY' || fail "the history kept with room for $entries entries"
import collections, json, sys
traces = json.load(open(sys.argv[1]))["device_traces"]
devices, entries = int(sys.argv[3]), int(sys.argv[4])
ACTIONS = ("alloc", "free_requested", "free_completed")
main = collections.defaultdict(list)     # device -> the main thread's pair events, in order
threads = collections.defaultdict(list)  # device -> the churn's pair events
for line in open(sys.argv[2]):
    d, who, addr, size = line.split()
    (main if who == "m" else threads)[int(d)] += [(a, int(addr), int(size)) for a in ACTIONS]
if len(traces) < devices:
    sys.exit("%d device traces, expected %d" % (len(traces), devices))
for d in range(devices):
    got = [(e["action"], e["addr"], e["size"]) for e in traces[d]]
    pairs = [e for e in got if e[0] in ACTIONS]  # without segment events
    if entries >= len(main[d]) + len(threads[d]) + 100:  # room for all
        n = len(main[d])
        if pairs[len(pairs) - n:] != main[d]:
            sys.exit("device %d: the main thread's %d pair events are not all there in order (%d kept)"
                     % (d, n, len(pairs)))
        if collections.Counter(pairs[:len(pairs) - n]) != collections.Counter(threads[d]):
            sys.exit("device %d: %d entries of the threads that came and went, expected %d"
                     % (d, len(pairs) - n, len(threads[d])))
    else:
        if len(got) != entries:
            sys.exit("device %d: %d entries kept, expected %d" % (d, len(got), entries))
        if pairs != main[d][len(main[d]) - len(pairs):]:
            first = next(i for i, (a, b) in enumerate(zip(pairs, main[d][len(main[d]) - len(pairs):])) if a != b)
            sys.exit("device %d: the %d entries kept are not the newest (first difference at %d)"
                     % (d, len(got), first))
PY
done
echo "threads_history_shapes $shape: every pair kept with room for all; wrapped, exactly the newest 60000 and 3000"
