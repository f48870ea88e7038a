#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# server.sh BIN_DIR CUDASNAP_LIB CUDASNAP_TOOL [REQUESTS_PER_THREAD]
#
# Issue 44: the server shape (it_server: 4 workers, a stream each, cudaMalloc and cudaMallocAsync
# buffers, a KV cache grown until out of memory then evicted, NVTX per request) runs alone and
# under cudasnap with OOM and exit snapshots. Exact checks: the out-of-memory answers the program
# counted are num_ooms and the `oom` entries of the exit snapshot, and the OOM snapshots account
# for each of them; every snapshot is clean for `cudasnap check` and never holds two live
# allocations at one address (live_check.py).
# Issue 46: the out-of-memory answer about each OOM is the same in its OOM snapshot, the exit
# snapshot and `cudasnap recover` of a recording (a second, shorter run with CUDASNAP_RECORD), and
# every verdict is whole, in summary, the report's data and Perfetto (oom_same.py, oom_answers).
set -u
bin=$1 lib=$2 tool=$3 requests=${4:-300}
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL [server]: $*" >&2; exit 1; }
export FAKE_CUDA_CAPACITY=$((256 << 20))
env -u LD_PRELOAD CS_IT_EXPECT_PRELOAD=0 "$bin/it_server" "$requests" >"$dir/out0" 2>"$dir/err0" ||
  fail "without cudasnap it exited $?: $(head -c 2000 "$dir/err0")"
(cd "$dir" && env LD_PRELOAD="$lib" CS_IT_EXPECT_PRELOAD=1 CUDASNAP_DUMP_ON=oom,exit CUDASNAP_MAX_ENTRIES=2000000 \
  CUDASNAP_OUTPUT="$dir/snap-%n-%t.json" "$bin/it_server" "$requests" >"$dir/out" 2>"$dir/err") ||
  fail "it_server exited $?: $(head -c 3000 "$dir/err")"
ooms=$(sed -n 's/^ooms //p' "$dir/out")
served=$(sed -n 's/^requests //p' "$dir/out")
[[ $served == $((4 * requests)) ]] || fail "served $served requests of $((4 * requests))"
((ooms > 0)) || fail "the KV cache never ran out of memory: nothing was tested"
files=("$dir"/snap-*.json) oom_files=("$dir"/snap-*-oom.json) exits=("$dir"/snap-*-exit.json)
for f in "${files[@]}"; do
  "$tool" check "$f" >"$dir/check" 2>&1 || fail "cudasnap check $(basename "$f"): $(head -c 3000 "$dir/check")"
  python3 "$here/live_check.py" "$f" >"$dir/live" 2>&1 || fail "live_check.py $(basename "$f"): $(head -c 3000 "$dir/live")"
done
python3 - "$ooms" "${files[@]}" <<'PY' || fail "the snapshots do not count the answers"
import json, sys
ooms = int(sys.argv[1])
snaps = [json.load(open(f)) for f in sys.argv[2:]]
exits = [s for s in snaps if s["cudasnap"]["trigger"] == "exit"]
assert len(exits) == 1, [s["cudasnap"]["trigger"] for s in snaps]
s = exits[0]
assert s["cudasnap"]["dropped_events"] == 0, "the history wrapped"
num_ooms = s["cudasnap"]["memory_stats"][0]["num_ooms"]
entries = [e for e in s["device_traces"][0] if e["action"] == "oom"]
assert num_ooms == ooms, f"num_ooms {num_ooms}, the program got {ooms}"
assert len(entries) == ooms, f"{len(entries)} oom entries, the program got {ooms}"
assert all(e["size"] > 0 and "device_free" in e and "stream" in e for e in entries), entries[:3]
answered = sum(o["cudasnap"]["oom_coalesced"] + 1 for o in snaps if o["cudasnap"]["trigger"] == "oom")
assert answered == ooms, f"the OOM snapshots account for {answered} answers, not {ooms}"
async_ooms = s["cudasnap"]["passthrough_stats"][0]["passthrough_ooms.async"]
print(f"server: {ooms} out-of-memory answers ({async_ooms} of cudaMallocAsync), all counted; "
      f"{len(snaps)} snapshots clean")
PY
# each worker's NVTX ranges are its own (issue 44, item 4): per thread, exactly its requests' ranges
# in order, request > prefill and request > decode; summary says the peak on one thread, never a
# nesting of several threads' requests (built without NVTX's headers the program opens no range)
exit_snap=$(grep -l '"trigger": *"exit"' "${files[@]}" | head -1)
nvtx=$(python3 - "$exit_snap" "$requests" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
by_thread = {}
for a in s["external_annotations"]:
    by_thread.setdefault(a["thread"], []).append((a["stage"], a["name"]))
one = [("START", "request"), ("START", "prefill"), ("END", "prefill"), ("START", "decode"), ("END", "decode"),
       ("END", "request")]
assert not by_thread or len(by_thread) == 4, sorted(by_thread)
for thread, got in by_thread.items():
    assert got == one * int(sys.argv[2]), (thread, got[:12])
print("yes" if by_thread else "no")
PY
) || fail "the workers' phases are not their own"
if [[ $nvtx == yes ]]; then
  "$tool" summary "$exit_snap" >"$dir/summary" || fail "summary of the exit snapshot"
  grep -q 'request > request' "$dir/summary" && fail "one nesting across threads: $(grep -A5 '^peak' "$dir/summary")"
  grep -qE '^peak .* at event [0-9]+, on (thread [0-9]+, (during request( > (prefill|decode))?|outside any phase)|a thread not recorded)$' \
    "$dir/summary" || fail "summary's peak: $(grep -A5 '^peak' "$dir/summary")"
  echo "server: each worker's phases its own"
fi

python3 "$here/oom_same.py" "$tool" --answers "$bin/oom_answers" --later "${exits[0]}" "${oom_files[@]}" ||
  fail "the OOM snapshots and the exit snapshot do not give the same answers"

# the same with the history in a recording file (the ring's path), and its recovery
rm -f "$dir"/snap-*.json
(cd "$dir" && env LD_PRELOAD="$lib" CS_IT_EXPECT_PRELOAD=1 CUDASNAP_DUMP_ON=oom,exit CUDASNAP_MAX_ENTRIES=2000000 \
  CUDASNAP_RECORD="$dir/rec" CUDASNAP_OUTPUT="$dir/snap-%n-%t.json" "$bin/it_server" $(((requests + 1) / 2)) \
  >"$dir/out" 2>"$dir/err") || fail "it_server (recorded) exited $?: $(head -c 3000 "$dir/err")"
"$tool" recover -o "$dir/recovered.json" "$dir/rec" >"$dir/recover" 2>&1 ||
  fail "cudasnap recover: $(head -c 3000 "$dir/recover")"
oom_files=("$dir"/snap-*-oom.json) exits=("$dir"/snap-*-exit.json)
python3 "$here/oom_same.py" "$tool" --answers "$bin/oom_answers" --later "${exits[0]}" --recovered "$dir/recovered.json" \
  "${oom_files[@]}" || fail "the recorded run's snapshots and its recovery do not give the same answers"

# ended by SIGTERM, and a second one 10 ms later, while the workers go on meeting OOMs: the exit
# status is the signal's, as without cudasnap, the ending writes the first and the latest OOM once
# each (the OOMs that come while it writes do not keep it writing), and every snapshot is clean
rm -f "$dir"/snap-*.json
(cd "$dir" && exec env LD_PRELOAD="$lib" CS_IT_EXPECT_PRELOAD=1 CUDASNAP_DUMP_ON=oom,term CUDASNAP_OUTPUT="$dir/snap-%n-%t.json" \
  "$bin/it_server" 1000000 >"$dir/out" 2>"$dir/err") &
pid=$!
sleep 0.4
kill -TERM "$pid"
sleep 0.01
kill -TERM "$pid" 2>/dev/null
wait "$pid"
rc=$?
((rc == 143)) || fail "ended by SIGTERM, it exited $rc, not 143: $(head -c 2000 "$dir/err")"
oom_files=("$dir"/snap-*-oom.json) terms=("$dir"/snap-*-term.json)
[[ -f ${terms[0]} ]] && ((${#oom_files[@]} <= 2 && ${#terms[@]} == 1)) ||
  fail "the ending wrote ${#oom_files[@]} OOM snapshots and ${#terms[@]} term snapshots: $(ls "$dir")"
for f in "$dir"/snap-*.json; do
  "$tool" check "$f" >"$dir/check" 2>&1 || fail "cudasnap check $(basename "$f"): $(head -c 2000 "$dir/check")"
done
exit 0
