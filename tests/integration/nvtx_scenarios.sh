#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# nvtx_scenarios.sh SCENARIO BIN_DIR CUDASNAP_LIB CUDASNAP_TOOL
#
# Issue 19: with nothing but LD_PRELOAD, a program's NVTX ranges and marks become the snapshot's
# external_annotations, and `cudasnap summary` names the phase of the peak. BIN_DIR holds it_nvtx,
# the spy injection and the ctypes shim.
set -u
scenario=$1 bin=$2 lib=$3 tool=$4
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL [$scenario]: $*" >&2; exit 1; }
run() { # run under cudasnap in $dir, snapshot at exit to $dir/snap.json; stderr kept in $dir/err
  (cd "$dir" && env LD_PRELOAD="$lib" CUDASNAP_DUMP_ON=exit CUDASNAP_OUTPUT="$dir/snap.json" "$@" \
    >"$dir/out" 2>"$dir/err") || fail "$* exited $?: $(head -c 2000 "$dir/err")"
}
checked() { # the snapshot passes the viewer's rules
  [[ -f $dir/snap.json ]] || fail "no snapshot: $(cat "$dir/err")"
  "$tool" check "$dir/snap.json" >"$dir/check" 2>&1 || fail "cudasnap check: $(cat "$dir/check")"
}
annotations() { # the external_annotations as "STAGE name device" lines, in file order
  python3 - "$dir/snap.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
for a in s["external_annotations"]:
    # PyTorch's keys in its order, then cudasnap's: the thread whose range it is, and its name
    assert list(a)[:4] == ["stage", "name", "device", "time_us"], a
    assert list(a)[4:] in (["thread"], ["thread", "thread_name"]), a
    assert isinstance(a["thread"], int) and a["thread"] > 0, a
    assert a["stage"] in ("START", "END") and isinstance(a["time_us"], int), a
    print(a["stage"], a["name"], a["device"])
PY
}

case $scenario in
phases)
  run "$bin/it_nvtx" phases
  checked
  annotations >"$dir/ann" || fail "bad annotations"
  for name in snapbar_step snapbar_forward trainer::backward; do
    [[ $(grep -c "^START $name 0\$" "$dir/ann") -eq 3 && $(grep -c "^END $name 0\$" "$dir/ann") -eq 3 ]] ||
      fail "expected 3 START/END of $name: $(cat "$dir/ann")"
  done
  for name in snapbar_setup snapbar_io snapbar_loader snapbar_start snapbar_batch_ready "snapbar_doneé"; do
    [[ $(grep -c "^START $name 0\$" "$dir/ann") -eq 1 && $(grep -c "^END $name 0\$" "$dir/ann") -eq 1 ]] ||
      fail "expected one START/END of $name: $(cat "$dir/ann")"
  done
  python3 - "$dir/snap.json" <<'PY' || fail "phase times do not frame the allocations"
import json, sys
s = json.load(open(sys.argv[1]))
ann = s["external_annotations"]
trace = s["device_traces"][0]
times = [a["time_us"] for a in ann]
assert times == sorted(times), "annotations not in time order"
first_alloc = min(e["time_us"] for e in trace if e["action"] == "alloc")
setup = [a["time_us"] for a in ann if a["name"] == "snapbar_setup"]
assert setup[0] <= first_alloc <= setup[1], (setup, first_alloc)   # recorded before CUDA was
mark = [a["time_us"] for a in ann if a["name"] == "snapbar_start"]
assert mark[0] == mark[1], mark                                     # a mark has no length
# every 24 MiB grad allocation happens inside the last step's backward
bw = [a["time_us"] for a in ann if a["name"] == "trainer::backward"]
big = [e["time_us"] for e in trace if e["action"] == "alloc" and e["size"] == 24 << 20]
assert len(big) == 1 and bw[4] <= big[0] <= bw[5], (bw, big)
# ranges are their threads': the start/end range main opened and the other thread ended is main's at
# both ends; the other thread's own push and mark are its own; main made every allocation
main = {a["thread"] for a in ann if a["name"] in ("snapbar_step", "snapbar_io", "snapbar_setup")}
other = {a["thread"] for a in ann if a["name"] in ("snapbar_loader", "snapbar_batch_ready")}
assert len(main) == 1 and len(other) == 1 and main != other, (main, other)
# (the cache's events carry their thread; memory passed through, the stream-ordered pool, none)
assert {e["thread"] for e in trace if e["action"] == "alloc" and "thread" in e} == main, trace
assert [e["size"] for e in trace if e["action"] == "alloc" and "thread" not in e] == [4 << 20], trace
PY
  "$tool" summary "$dir/snap.json" >"$dir/summary" || fail "summary failed"
  # two threads have phases: the line names the thread of the peak's allocation, main, and its own
  grep -q "^peak .* at event [0-9]*, on thread [0-9]*, during snapbar_step > trainer::backward\$" "$dir/summary" ||
    fail "summary does not name the peak's phase: $(cat "$dir/summary")"
  grep -q "^  snapbar_step: .*(30.0 MiB)" "$dir/summary" ||
    fail "summary lacks the largest bytes inside snapbar_step: $(cat "$dir/summary")"
  # the head (cudasnap_summary) places the phase at the peak as the whole file does
  "$tool" ranks "$dir/snap.json" >"$dir/ranks" && "$tool" ranks --full "$dir/snap.json" >"$dir/ranks_full" ||
    fail "ranks failed"
  grep -q ' snapbar_step > trainer::backward on thread [0-9]* ' "$dir/ranks" && diff "$dir/ranks" "$dir/ranks_full" >/dev/null ||
    fail "ranks from the head: $(cat "$dir/ranks" "$dir/ranks_full")"
  # diff --phase: both sides at the peak of the last backward, 30 MiB and (doubled) 54 MiB
  (cd "$dir" && env LD_PRELOAD="$lib" CUDASNAP_DUMP_ON=exit CUDASNAP_OUTPUT="$dir/bigger.json" \
    "$bin/it_nvtx" phases bigger >/dev/null 2>"$dir/err") || fail "bigger run: $(cat "$dir/err")"
  "$tool" diff --phase trainer::backward "$dir/snap.json" "$dir/bigger.json" >"$dir/diff" || fail "diff --phase failed"
  grep -q "^$dir/bigger.json: peak of trainer::backward: 56623104 B (54.0 MiB) after event " "$dir/diff" &&
    grep -q "^  +25165824 B (24.0 MiB): 31457280 B (30.0 MiB) -> 56623104 B (54.0 MiB), 3 -> 3 blocks: alloc_filled " "$dir/diff" ||
    fail "diff --phase: $(cat "$dir/diff")"
  "$tool" diff --phase no_such_phase "$dir/snap.json" "$dir/bigger.json" >/dev/null 2>"$dir/differr" &&
    fail "diff --phase of an unknown phase succeeded"
  grep -q "no phase named 'no_such_phase'" "$dir/differr" || fail "diff: $(cat "$dir/differr")"
  # the HTML report carries the phases placed on the trace (entries applied when each began and ended)
  "$tool" report "$dir/snap.json" -o "$dir/report.html" >/dev/null 2>&1 || fail "report failed"
  python3 - "$dir/report.html" "$dir/snap.json" <<'PY' || fail "report phases"
import json, re, sys
html = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r'"phases":(\[\[.*?\]\]),"phases_left_out"', html)
assert m, "no phases in the report's data"
phases = json.loads(m.group(1))
trace = json.load(open(sys.argv[2]))["device_traces"][0]
big = next(i for i, e in enumerate(trace) if e["action"] == "alloc" and e["size"] == 24 << 20)
bw = [p for p in phases if p[0] == "trainer::backward"]
# inside snapbar_step on the main thread, and inside main's snapbar_io too while it is open (the
# other thread ends it during the first step): the other thread's own ranges never count
io = [p for p in phases if p[0] == "snapbar_io"]
assert len(io) == 1 and io[0][6] == bw[0][6], phases
assert len(bw) == 3 and all(p[6] == bw[0][6] for p in bw), phases
assert all(p[1] == (2 if io[0][4] <= p[4] < io[0][5] else 1) for p in bw), (bw, io)
assert all(p[1] == 0 and p[6] != bw[0][6] for p in phases if p[0] == "snapbar_loader"), phases
assert bw[2][2] <= big < bw[2][3], (bw, big)                     # the last backward holds the 24 MiB alloc
PY
  # the pickle carries the same annotations (read with a restricted unpickler, as torch's tools do)
  (cd "$dir" && env LD_PRELOAD="$lib" CUDASNAP_DUMP_ON=exit CUDASNAP_OUTPUT="$dir/snap.pickle" \
    "$bin/it_nvtx" phases >/dev/null 2>"$dir/err") || fail "pickle run: $(cat "$dir/err")"
  python3 - "$dir/snap.pickle" "$dir/ann" <<'PY' || fail "pickle annotations differ"
import pickle, sys
class Restricted(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError("global %s.%s" % (module, name))
s = Restricted(open(sys.argv[1], "rb")).load()
got = ["%s %s %d" % (a["stage"], a["name"], a["device"]) for a in s["external_annotations"]]
want = open(sys.argv[2], encoding="utf-8").read().split("\n")[:-1]
assert sorted(got) == sorted(want), (got, want)
PY
  ;;
none)
  run "$bin/it_nvtx" none
  checked
  [[ -z $(annotations) ]] || fail "annotations without NVTX: $(annotations)"
  "$tool" summary "$dir/snap.json" >"$dir/summary" || fail "summary failed"
  grep -q "^peak .*during" "$dir/summary" && fail "a phase named without NVTX: $(cat "$dir/summary")"
  # NVTX without CUDA: nothing written, no thread, no output
  rm -f "$dir"/*
  out=$(cd "$dir" && env LD_PRELOAD="$lib" CUDASNAP_OUTPUT="$dir/snap.json" python3 -c "
import ctypes, os, sys
s = ctypes.CDLL(sys.argv[1]); s.shim_push.argtypes = [ctypes.c_char_p]
s.shim_push(b'x'); s.shim_pop()
print(len(os.listdir('/proc/self/task')))" "$bin/libit_nvtx_shim.so" 2>&1) || fail "python exited $?: $out"
  [[ $out == 1 ]] || fail "NVTX without CUDA: expected one thread and no output, got: $out"
  [[ -z $(ls "$dir") ]] || fail "NVTX without CUDA left files: $(ls "$dir")"
  ;;
other_tool)
  # another injection (Nsight Systems' place) is never replaced, keeps receiving its calls
  run env NVTX_INJECTION64_PATH="$bin/libit_nvtx_spy.so" CUDASNAP_LOG=debug "$bin/it_nvtx" phases
  checked
  grep -q "^nvtx_spy: 5 pushes\$" "$dir/err" || fail "the other injection lost calls: $(cat "$dir/err")"
  [[ $(grep -c "NVTX_INJECTION64_PATH names another tool" "$dir/err") -eq 1 ]] ||
    fail "no debug line about the other tool: $(cat "$dir/err")"
  [[ -z $(annotations) ]] || fail "annotations while another tool has NVTX: $(annotations)"
  ;;
off)
  run env CUDASNAP_NVTX=0 "$bin/it_nvtx" phases
  checked
  [[ -z $(annotations) ]] || fail "annotations with CUDASNAP_NVTX=0: $(annotations)"
  ;;
children_off)
  # CUDASNAP_CHILDREN=0: the child inherits NVTX_INJECTION64_PATH but not the preload; cudasnap,
  # opened by the child's NVTX, refuses and removes the variable, so the grandchild lacks it
  (cd "$dir" && env LD_PRELOAD="$lib" CUDASNAP_CHILDREN=0 CUDASNAP_DUMP_ON=exit CUDASNAP_OUTPUT="$dir/snap.json" \
    sh -c "python3 -c \"
import ctypes, os, sys
s = ctypes.CDLL(sys.argv[1]); s.shim_push.argtypes = [ctypes.c_char_p]
r = s.shim_push(b'x')
os.system('echo grandchild: \\\${NVTX_INJECTION64_PATH:-unset}')
\" $bin/libit_nvtx_shim.so; $bin/it_nvtx phases" >"$dir/out" 2>"$dir/err") || fail "exited $?: $(cat "$dir/err")"
  grep -q "^grandchild: unset\$" "$dir/out" || fail "the variable reached the grandchild: $(cat "$dir/out")"
  grep -q "^checksum=" "$dir/out" || fail "it_nvtx failed: $(cat "$dir/out" "$dir/err")"
  [[ ! -e $dir/snap.json ]] || fail "a child was profiled with CUDASNAP_CHILDREN=0"
  [[ ! -s $dir/err ]] || fail "output on stderr: $(cat "$dir/err")"
  ;;
pools)
  # a pool's NVTX regions drawn inside its block, with their stacks and names; mistakes reported
  run env IT_NVTX_POOL_SNAPSHOT="$dir/pool" "$bin/it_nvtx" phases
  for n in 1 2; do
    "$tool" check "$dir/pool-$n.json" >"$dir/check" 2>&1 || fail "cudasnap check pool-$n: $(cat "$dir/check")"
  done
  [[ $(grep -c "^cudasnap: warning: nvtxMemRegionsRegister: overlaps a registered region (address 0x[0-9a-f]*, 1048576 bytes): ignored\$" "$dir/err") -eq 1 ]] ||
    fail "no warning for the overlapping region: $(cat "$dir/err")"
  [[ $(grep -c "^cudasnap: warning: nvtxMemRegionsRegister: region outside its heap" "$dir/err") -eq 1 ]] ||
    fail "no warning for the region outside the heap: $(cat "$dir/err")"
  [[ $(grep -c "^cudasnap: warning: nvtxMemRegionsUnregister: no such region" "$dir/err") -eq 1 ]] ||
    fail "no warning for the unknown region: $(cat "$dir/err")"
  python3 - "$dir/pool-1.json" "$dir/pool-2.json" <<'PY' || fail "pool regions not drawn as expected"
import json, sys
MIB = 1 << 20
def pool_blocks(path, size=8 * MIB, pools_expected=1):
    s = json.load(open(path))
    pools = s["cudasnap"]["pools"]
    assert len(pools) == pools_expected, pools
    pool = [p for p in pools if p["size"] == size][0]
    base = pool["address"]
    for seg in s["segments"]:
        addr = seg["address"]
        out = []
        for b in seg["blocks"]:
            if base <= addr < base + size:
                out.append(((addr - base) // MIB, b["size"] // MIB, b["state"], b.get("user_metadata", ""),
                            [f["name"] for f in b["frames"]], seg["cudasnap"]["kind"]))
            addr += b["size"]
        if out:
            return pool, out, s
    raise AssertionError("no pool block")
# a heap over memory passed through (a stream-ordered allocation) is drawn as the cache's are
pool, blocks, s = pool_blocks(sys.argv[1], 4 * MIB, 2)
assert [b[:4] for b in blocks] == [(0, 1, "inactive", ""), (1, 1, "active_allocated", ""),
                                   (2, 2, "inactive", "")], blocks
assert all(b[5] == "async" for b in blocks), blocks
assert any(f.startswith("stream_ordered_pool") for f in blocks[1][4]), blocks
pool, blocks, s = pool_blocks(sys.argv[1], 8 * MIB, 2)
assert [b[:4] for b in blocks] == [(0, 1, "active_allocated", ""), (1, 3, "active_allocated", ""),
                                   (4, 4, "active_allocated", "kv_cache")], blocks
assert pool["regions"] == 3 and pool["registered_bytes"] == 8 * MIB, pool
assert all("pool_with_regions" in b[4] for b in blocks), blocks   # the registering call's stack
# the region's alloc in the trace carries its name too (the timelines' hover text reads the trace)
named = [(t["action"], t["size"]) for t in s["device_traces"][0] if t.get("user_metadata")]
assert named == [("alloc", 4 * MIB)], named
assert [t["user_metadata"] for t in s["device_traces"][0] if t.get("user_metadata")] == ["kv_cache"]
pool, blocks, s = pool_blocks(sys.argv[2])
assert [b[:4] for b in blocks] == [(0, 4, "inactive", ""), (4, 4, "active_allocated", "kv_cache")], blocks
assert pool["regions"] == 1 and pool["registered_bytes"] == 4 * MIB, pool
# the caching allocator's statistics still count the pool's one 8 MiB block
stats = s["cudasnap"]["memory_stats"][0]
assert stats["allocation.all.current"] == 2, stats   # weights and the pool
PY
  "$tool" summary "$dir/pool-1.json" >"$dir/summary" || fail "summary failed"
  grep -q "^  pool 0x[0-9a-f]* (8388608 B (8.0 MiB)): 8388608 B (8.0 MiB) registered in 3 regions; top region sites:\$" "$dir/summary" &&
    grep -q "^    8388608 B (8.0 MiB) in 3 blocks: pool_with_regions " "$dir/summary" ||
    fail "no inside-pools table: $(cat "$dir/summary")"
  ;;
ctypes)
  run python3 "$here/nvtx_ctypes.py" "$bin/libit_nvtx_shim.so"
  checked
  annotations >"$dir/ann" || fail "bad annotations"
  for name in py_epoch py_step_1 py_done; do
    [[ $(grep -c "^START $name 0\$" "$dir/ann") -eq 1 && $(grep -c "^END $name 0\$" "$dir/ann") -eq 1 ]] ||
      fail "expected one START/END of $name: $(cat "$dir/ann")"
  done
  "$tool" summary "$dir/snap.json" >"$dir/summary" || fail "summary failed"
  grep -q "during py_epoch > py_step_1\$" "$dir/summary" || fail "no peak phase: $(cat "$dir/summary")"
  ;;
threads)
  # issue 44: a server's threads, each with its own nested ranges and its own name, allocating
  # under them: every view keeps each thread's phases its own, never one nesting across threads
  run env IT_NVTX_THREADS="$dir/tids" "$bin/it_nvtx" threads
  checked
  python3 - "$dir/snap.json" "$dir/tids" <<'PY' || fail "the snapshot's threads"
import json, sys
s = json.load(open(sys.argv[1]))
tids = {}
for line in open(sys.argv[2]):
    f = line.split()
    tids["main" if f[0] == "main" else int(f[1])] = int(f[-1])
ann = s["external_annotations"]
by_thread = {}
for a in ann:
    by_thread.setdefault(a["thread"], []).append(a)
assert set(by_thread) == set(tids.values()), (sorted(by_thread), tids)
assert [(a["stage"], a["name"]) for a in by_thread[tids["main"]]] == [("START", "serve"), ("END", "serve")]
assert all("thread_name" not in a for a in by_thread[tids["main"]]), by_thread[tids["main"]]  # never named
for i in range(4):
    stage = "decode" if i % 2 else "prefill"
    one = [("START", "request"), ("START", stage)] + ([("START", "grow"), ("END", "grow")] if i == 3 else [])
    one += [("END", stage), ("END", "request")]
    got = [(a["stage"], a["name"]) for a in by_thread[tids[i]]]
    assert got == one * 3, (i, got)
    # named with nvtxNameOsThreadA (0, 1), pthread_setname_np (2), nvtxNameOsThreadW (3)
    assert {a.get("thread_name") for a in by_thread[tids[i]]} == {"worker-%d" % i}, by_thread[tids[i]]
# each allocation carries the thread that made it
MiB = 1 << 20
trace = s["device_traces"][0]
allocs = [e for e in trace if e["action"] == "alloc"]
assert len(allocs) == 15, allocs
for e in allocs:
    if e["size"] in (8 * MiB, 16 * MiB, 24 * MiB):
        assert e["thread"] == tids[3], e
    else:
        i = (e["size"] - MiB) // MiB
        assert e["size"] == (1 + i) * MiB + i * 4096 and e["thread"] == tids[i], e
assert all("thread" in e for e in trace), [e for e in trace if "thread" not in e]
PY
  read -r _ main < <(grep '^main ' "$dir/tids")
  for i in 0 1 2 3; do read -r _ _ "w$i" < <(grep "^worker $i " "$dir/tids"); done
  # summary: the peak is worker 3's last grow, on its own thread, and every other thread's phases
  # open then are listed on their own, in the order the threads began them
  "$tool" summary "$dir/snap.json" >"$dir/summary" || fail "summary failed"
  sed -n '/^peak /,/^largest/p' "$dir/summary" | sed 's/ at event [0-9]*,/ at event N,/' >"$dir/peak"
  printf '%s\n' "peak 35676160 B (34.0 MiB) at event N, on thread $w3 (worker-3), during request > decode > grow" \
    "  open on thread $main: serve" "  open on thread $w0 (worker-0): request > prefill" \
    "  open on thread $w1 (worker-1): request > decode" "  open on thread $w2 (worker-2): request > prefill" \
    "largest live bytes inside each top-level phase:" >"$dir/peak.want"
  diff "$dir/peak.want" "$dir/peak" >&2 || fail "summary's phases at the peak: $(cat "$dir/summary")"
  # the same file without the peak entry's thread: every thread's open phases, none taken as its;
  # without any thread (a file of cudasnap before threads were recorded): read as it always was
  python3 - "$dir/snap.json" "$dir/nopeak.json" "$dir/old.json" <<'PY' || fail "cannot rewrite the snapshot"
import json, sys
s = json.load(open(sys.argv[1]))
big = [e for e in s["device_traces"][0] if e["action"] == "alloc" and e["size"] == 24 << 20]
del big[0]["thread"]
json.dump(s, open(sys.argv[2], "w"))
for a in s["external_annotations"]:
    a.pop("thread", None)
    a.pop("thread_name", None)
for e in s["device_traces"][0]:
    e.pop("thread", None)
del s["cudasnap_summary"]
json.dump(s, open(sys.argv[3], "w"))
PY
  "$tool" summary "$dir/nopeak.json" | sed -n '/^peak /,/^largest/p' | sed 's/ at event [0-9]*,/ at event N,/' >"$dir/peak"
  printf '%s\n' "peak 35676160 B (34.0 MiB) at event N, on a thread not recorded" "  open on thread $main: serve" \
    "  open on thread $w0 (worker-0): request > prefill" "  open on thread $w1 (worker-1): request > decode" \
    "  open on thread $w2 (worker-2): request > prefill" "  open on thread $w3 (worker-3): request > decode > grow" \
    "largest live bytes inside each top-level phase:" >"$dir/peak.want"
  diff "$dir/peak.want" "$dir/peak" >&2 || fail "summary without the peak's thread"
  "$tool" summary "$dir/old.json" | grep '^peak ' | sed 's/ at event [0-9]*,/ at event N,/' >"$dir/peak"
  python3 - "$(cat "$dir/peak")" <<'PY' || fail "a file without threads: $(cat "$dir/peak")"
import sys
head, _, chain = sys.argv[1].partition(", during ")   # one nesting of every thread's open ranges
names = chain.split(" > ")
assert head == "peak 35676160 B (34.0 MiB) at event N" and names[0] == "serve" and names[-1] == "grow", names
assert sorted(names) == sorted(["serve"] + ["request"] * 4 + ["prefill", "decode"] * 2 + ["grow"]), names
PY
  # ranks (from the snapshot's head, and from the whole file) and its JSON: the peak's own phase
  "$tool" ranks "$dir/snap.json" >"$dir/ranks" && "$tool" ranks --full "$dir/snap.json" >"$dir/ranks_full" &&
    "$tool" ranks --json "$dir/snap.json" >"$dir/ranks.json" || fail "ranks failed"
  grep -q " request > decode > grow on thread $w3 (worker-3) " "$dir/ranks" && diff "$dir/ranks" "$dir/ranks_full" >&2 ||
    fail "ranks: $(cat "$dir/ranks" "$dir/ranks_full")"
  python3 - "$dir/ranks.json" "request > decode > grow on thread $w3 (worker-3)" <<'PY' || fail "ranks --json: $(cat "$dir/ranks.json")"
import json, sys
doc = json.load(open(sys.argv[1]))
rows = doc["ranks"] if isinstance(doc, dict) else doc
assert [r["phase"] for r in rows] == [sys.argv[2]], rows
PY
  # the report's data: each thread's phases nested in their own lane, the lanes named
  "$tool" report "$dir/snap.json" -o "$dir/report.html" >/dev/null 2>&1 || fail "report failed"
  python3 - "$dir/report.html" "$dir/tids" <<'PY' || fail "report phases"
import json, re, sys
html = open(sys.argv[1], encoding="utf-8").read()
phases = json.loads(re.search(r'"phases":(\[\[.*?\]\]),"phases_left_out"', html).group(1))
lanes = json.loads(re.search(r'"phase_threads":(\[\[.*?\]\])', html).group(1))
tids = {}
for line in open(sys.argv[2]):
    f = line.split()
    tids["main" if f[0] == "main" else int(f[1])] = int(f[-1])
want = [[tids["main"], "thread %d" % tids["main"]]] + [[tids[i], "thread %d (worker-%d)" % (tids[i], i)] for i in range(4)]
assert lanes == want, lanes
depth = {"serve": 0, "request": 0, "prefill": 1, "decode": 1, "grow": 2}
got = sorted((p[6], p[0], p[1]) for p in phases)
expect = [(0, "serve", 0)] + sorted((1 + i, n, depth[n]) for i in range(4) for _ in range(3)
                                    for n in ["request", "decode" if i % 2 else "prefill"] + (["grow"] if i == 3 else []))
assert got == expect, (got, expect)
PY
  # Perfetto: a track per thread, each with its own slices
  "$tool" export --format perfetto -o "$dir/trace.json" "$dir/snap.json" >/dev/null || fail "export failed"
  python3 - "$dir/trace.json" "$dir/tids" <<'PY' || fail "perfetto tracks"
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
tids = {}
for line in open(sys.argv[2]):
    f = line.split()
    tids["main" if f[0] == "main" else int(f[1])] = int(f[-1])
names = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
want = {1: "phases: thread %d" % tids["main"]}
want.update({2 + i: "phases: thread %d (worker-%d)" % (tids[i], i) for i in range(4)})
assert names == want, names
slices = sorted((e["tid"], e["name"]) for e in events if e["ph"] == "X")
expect = sorted([(1, "serve")] + [(2 + i, n) for i in range(4) for _ in range(3)
                                   for n in ["request", "decode" if i % 2 else "prefill"] + (["grow"] if i == 3 else [])])
assert slices == expect, slices
PY
  # pprof: an allocation's phase label is the innermost phase open on its own thread
  if command -v go >/dev/null; then
    "$tool" export --format pprof -o "$dir/p.pb.gz" "$dir/snap.json" >/dev/null || fail "export pprof failed"
    GOCACHE=$dir/go HOME=$dir go tool pprof -raw "$dir/p.pb.gz" >"$dir/p.raw" 2>"$dir/p.err" || fail "pprof -raw: $(cat "$dir/p.err")"
    python3 - "$dir/p.raw" <<'PY' || fail "pprof phase labels: $(cat "$dir/p.raw")"
import re, sys
lines = open(sys.argv[1]).read().split("\n")
got = {}
for i, line in enumerate(lines):
    m = re.match(r"^\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+): ", line)
    if m:
        phase = re.search(r"phase:\[([^\]]*)\]", lines[i + 1])
        key = phase.group(1) if phase else None
        got[key] = got.get(key, 0) + int(m.group(4))
MiB = 1 << 20
size = lambda i: (1 + i) * MiB + i * 4096
want = {"prefill": 3 * (size(0) + size(2)), "decode": 3 * (size(1) + size(3)), "grow": (8 + 16 + 24) * MiB}
assert got == want, (got, want)
PY
  fi
  ;;
live)
  # issue 44: the live record's phase is the one open on the thread that allocated last on the
  # device: a's while b has only opened its range, b's once b allocates inside it
  mkfifo "$dir/in"
  (cd "$dir" && exec env LD_PRELOAD="$lib" CUDASNAP_DUMP_ON=none "$bin/it_nvtx" live <"$dir/in" >"$dir/out" 2>"$dir/err") &
  prog=$!
  exec {to_prog}>"$dir/in"
  trap 'kill $prog 2>/dev/null; rm -rf "$dir"' EXIT
  ready() { # until the program printed "ready $1"
    for _ in $(seq 200); do grep -q "^ready $1\$" "$dir/out" && return 0; sleep 0.05; done
    fail "not ready $1: $(cat "$dir/out" "$dir/err")"
  }
  phase_is() { # until top shows phase $1 on device 0 (8 s at most)
    for _ in $(seq 80); do
      "$tool" top --once --json --pid "$prog" >"$dir/top.json" 2>"$dir/top.err" || fail "top: $(cat "$dir/top.err")"
      python3 - "$dir/top.json" "$1" <<'PY' && return 0
import json, sys
rows = [p for p in json.load(open(sys.argv[1]))["processes"] if p["device"] == 0]
sys.exit(0 if len(rows) == 1 and rows[0]["phase"] == sys.argv[2] else 1)
PY
      sleep 0.1
    done
    fail "top never showed phase $1: $(cat "$dir/top.json")"
  }
  ready 1
  phase_is live_a
  echo go >&"$to_prog"
  ready 2
  phase_is live_b
  echo end >&"$to_prog"
  exec {to_prog}>&-
  wait "$prog" || fail "it_nvtx live exited $?: $(cat "$dir/err")"
  ;;
*) fail "unknown scenario" ;;
esac
echo "ok: $scenario"
