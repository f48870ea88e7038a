#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# record_kill.sh SCENARIO BIN_DIR CUDASNAP_TOOL CUDASNAP_LIB
#
# kill -9 with a recording file (issue 13). it_record_kill runs under cudasnap with
# CUDASNAP_RECORD, says it is ready, and is killed with SIGKILL; then:
#   sigkill          the process died of SIGKILL as it does without cudasnap (status 137), no
#                    snapshot was written, `cudasnap recover` makes one that `cudasnap check` finds
#                    clean, holding the one leaked block named allocate_weights at its file:line,
#                    every event of the run, and the count of events lost at the end (0 here)
#   matches_dump     it_fork (a child forked after CUDA started makes its own recording) and
#                    it_two_devices (two rings, merged by time) exit normally: each recording file
#                    recovers to the history of that process's exit snapshot, event for event (time
#                    and frames included), with the same segments and live blocks
#   small_ring       CUDASNAP_MAX_ENTRIES=20: the rings dropped their oldest events (said so), and
#                    the blocks of the kept ones whose segments came before them still lie in
#                    segments: `cudasnap check` finds the recovery clean
#   kill_anywhere    the program allocates and frees in a loop and is killed at a random moment,
#                    20 times, with a ring of 64 entries (so the kill often lands while the oldest
#                    slot is rewritten): every recovery is clean, at most 1 event lost per ring
#   rebuilt          the program's file is replaced by another build after the kill: recover says
#                    so (one warning) and leaves its frames unnamed rather than naming them from
#                    the wrong build; the snapshot is still written and clean
#   truncated        the recording cut at many lengths, and files that are no recording: recover
#                    exits 1 with one line "FILE: problem", never a crash
#   kinds            it_passthrough (issue 28) killed with every kind of memory passed through live
#                    (v1, pitch, managed, stream-ordered, arrays, VMM mappings, graph memory, and an
#                    IPC import in its child, killed too): the recoveries draw each kind with its
#                    sites, segment for segment as the dumps made just before the kill draw them
#                    (kind, extent, expandable, blocks and frames); `cudasnap check` finds them
#                    clean and `cudasnap summary` names the kinds
#   free_split       it_free_split (a server's cache with rounding inside blocks and free blocks
#                    between them) dumps and is killed: the recovery draws every block of the
#                    cache as the dump does (extent and bytes asked), so `cudasnap summary` splits
#                    the free bytes inside segments the same way (issue 46), with the default
#                    settings and with split_large and roundup_power2_divisions
set -u
scenario=$1 bin=$2 tool=$3 lib=$4
dir=$(mktemp -d)
pid=
child=
trap '[[ -n $pid ]] && kill -9 $pid 2>/dev/null; [[ -n $child ]] && kill -9 $child 2>/dev/null; rm -rf "$dir"' EXIT
fail() { echo "FAIL [$scenario]: $*" >&2; exit 1; }

# Every program runs with $dir as its working directory: one still there at the end was left
# running (a kill that reached a subshell, not the program), paused forever.
left_behind() {
  local p found=()
  for p in /proc/[0-9]*; do
    [[ $(readlink "$p/cwd" 2>/dev/null) == "$dir" ]] && found+=("${p#/proc/}:$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)")
  done
  ((${#found[@]} == 0)) || { kill -9 "${found[@]%%:*}" 2>/dev/null; fail "left running: ${found[*]}"; }
}
steps=25

# Start the program under cudasnap, wait for "ready", kill -9 it; sets $pid, $status, $rec.
run_and_kill() {
  rm -f "$dir/out" # a "ready" left by an earlier run must not be taken for this one's
  (cd "$dir" && exec env LD_PRELOAD="$lib" CUDASNAP_MAX_ENTRIES="${max_entries:-100000}" CUDASNAP_DUMP_ON=exit,signal,oom CUDASNAP_OUTPUT="$dir/snap-%t.json" \
    CUDASNAP_RECORD="$dir/rec-%e-%p.csrec" "${prog:-$bin/it_record_kill}" $steps ${spin:-} >"$dir/out" 2>"$dir/err") &
  pid=$!
  for _ in $(seq 200); do
    grep -q '^ready$' "$dir/out" 2>/dev/null && break
    kill -0 $pid 2>/dev/null || fail "the program ended early: $(cat "$dir/err")"
    sleep 0.05
  done
  grep -q '^ready$' "$dir/out" || fail "the program never said ready"
  [[ -n ${delay:-} ]] && sleep "$delay"
  kill -KILL $pid
  wait $pid
  status=$?
  rec="$dir/rec-it_record_kill-$pid.csrec"
  pid=
  [[ -f $rec ]] || fail "no recording file $rec: $(ls "$dir"): $(cat "$dir/err")"
}

# recover must refuse the file with exit status 1 and exactly one line naming it
refused() {
  local file=$1
  "$tool" recover "$file" -o "$dir/refused.json" >"$dir/rout" 2>"$dir/rerr"
  local rc=$?
  [[ $rc -eq 1 ]] || fail "recover $(basename "$file") exited $rc (want 1): $(cat "$dir/rerr")"
  [[ $(wc -l <"$dir/rerr") -eq 1 ]] && grep -q "^$file: " "$dir/rerr" ||
    fail "recover $(basename "$file"): expected one line '$file: problem', got: $(cat "$dir/rerr")"
  [[ ! -e $dir/refused.json ]] || fail "recover $(basename "$file") left a snapshot"
}

case $scenario in
sigkill)
  run_and_kill
  [[ $status -eq 137 ]] || fail "exit status $status, want 137 (SIGKILL), as without cudasnap"
  [[ -z $(ls "$dir"/snap-* 2>/dev/null) ]] || fail "a snapshot was written although nothing runs at SIGKILL"
  read -r _ line < <(grep '^frame=allocate_weights' "$dir/out") || fail "no frame line on stdout"
  "$tool" recover "$rec" -o "$dir/recovered.json" >"$dir/rout" 2>"$dir/rerr" ||
    fail "recover exited $?: $(cat "$dir/rerr")"
  # 2 weights + steps activations allocated; all freed but the leak; one segment per distinct size
  grep -qE "^wrote $dir/recovered.json: [0-9]+ events \(0 lost at the end, 0 damaged, 0 oldest dropped\), 1 live blocks$" \
    "$dir/rout" || fail "unexpected report: $(cat "$dir/rout" "$dir/rerr")"
  "$tool" check "$dir/recovered.json" >/dev/null || fail "cudasnap check: $("$tool" check "$dir/recovered.json")"
  "$bin/snapshot_check" "$dir/recovered.json" --frame allocate_weights prog_record_kill.c "$line" --action alloc \
    --action free_completed --action segment_alloc || fail "snapshot_check"
  python3 - "$dir/recovered.json" "$line" "$steps" <<'PY' || fail "the recovered snapshot is not the run's"
import json, sys
snap, line, steps = json.load(open(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3])
live = [b for s in snap["segments"] for b in s["blocks"] if b["state"] != "inactive"]
assert len(live) == 1, live
leak = live[0]
# the 3 MiB asked, in the whole 4 MiB segment the allocator gave it (IPC-safe: a large block is
# its segment), as a dump draws it: the 1 MiB is the block's rounding, not a free block
assert leak["state"] == "active_allocated" and leak["requested_size"] == 3 << 20 and leak["size"] == 4 << 20, leak
top = leak["frames"][0]
assert top["name"] == "allocate_weights" and top["filename"].endswith("prog_record_kill.c") and top["line"] == line, top
trace = snap["device_traces"][0]
count = lambda a: sum(e["action"] == a for e in trace)
assert count("alloc") == steps + 2, count("alloc")
assert count("free_requested") == steps + 1 and count("free_completed") == steps + 1, trace
assert snap["cudasnap"]["trigger"] == "recover" and snap["cudasnap"]["lost_events"] == 0
times = [e["time_us"] for e in trace]
assert times == sorted(times) and times[0] > 1.6e15, times[:3]  # wall clock, in order
PY
  ;;
matches_dump)
  for prog in it_fork it_two_devices; do
  rm -f "$dir"/rec-*.csrec "$dir"/snap-*.json
  (cd "$dir" && env LD_PRELOAD="$lib" CUDASNAP_DUMP_ON=exit CUDASNAP_OUTPUT="$dir/snap-%p-%t.json" \
    CUDASNAP_RECORD="$dir/rec-%p.csrec" "$bin/$prog" >"$dir/out" 2>"$dir/err") || fail "$prog: $(cat "$dir/err")"
  recs=("$dir"/rec-*.csrec)
  want=1
  [[ $prog == it_fork ]] && want=2 # the parent's and the child's
  [[ ${#recs[@]} -eq $want ]] || fail "$prog: expected $want recordings: $(ls "$dir")"
  for rec in "${recs[@]}"; do
    pid=${rec##*/rec-}
    pid=${pid%.csrec}
    [[ -f $dir/snap-$pid-exit.json ]] || fail "no exit snapshot of $pid: $(ls "$dir")"
    "$tool" recover "$rec" -o "$dir/recovered-$pid.json" >"$dir/rout" 2>"$dir/rerr" || fail "recover: $(cat "$dir/rerr")"
    grep -q "(0 lost at the end, 0 damaged, 0 oldest dropped)" "$dir/rout" || fail "report: $(cat "$dir/rout")"
    "$tool" check "$dir/recovered-$pid.json" >/dev/null || fail "cudasnap check: $("$tool" check "$dir/recovered-$pid.json")"
    python3 - "$dir/snap-$pid-exit.json" "$dir/recovered-$pid.json" <<'PY' || fail "the recovery of $pid differs from its exit snapshot"
import json, sys
dump, rec = (json.load(open(f)) for f in sys.argv[1:3])
def events(s, device):
    t = s["device_traces"][device] if device < len(s["device_traces"]) else []
    return [(e["action"], e.get("addr"), e["size"], e["time_us"], json.dumps(e.get("frames")))
            for e in t if e["action"] != "snapshot"]
assert sum(map(len, dump["device_traces"])) > 0
same = True
for device in range(max(len(dump["device_traces"]), len(rec["device_traces"]))):
    d, r = events(dump, device), events(rec, device)
    assert r[:len(d)] == d, (device, len(d), len(r), next(((a, b) for a, b in zip(d, r) if a != b), None))
    # after the exit snapshot, only frees can come (destructors)
    assert all(a in ("free_requested", "free_completed", "segment_free") for a, *_ in r[len(d):]), r[len(d):]
    same = same and len(r) == len(d)
if same:
    seg = lambda s: sorted((x["address"], x["total_size"], json.dumps([(b["address"], b["size"], b["state"], b["frames"])
                           for b in x["blocks"] if b["state"] != "inactive"])) for x in s["segments"])
    assert seg(dump) == seg(rec), "segments differ"
PY
  done
  done
  pid=
  ;;
small_ring)
  max_entries=20 run_and_kill
  [[ $status -eq 137 ]] || fail "exit status $status, want 137"
  "$tool" recover "$rec" -o "$dir/recovered.json" >"$dir/rout" 2>"$dir/rerr" || fail "recover: $(cat "$dir/rerr")"
  grep -qE "^wrote $dir/recovered.json: 20 events \(0 lost at the end, 0 damaged, [1-9][0-9]* oldest dropped\)" "$dir/rout" ||
    fail "unexpected report: $(cat "$dir/rout")"
  "$tool" check "$dir/recovered.json" >/dev/null || fail "cudasnap check: $("$tool" check "$dir/recovered.json")"
  "$bin/snapshot_check" "$dir/recovered.json" --dropped || fail "not marked as overflowed"
  # Every view says the live figures are lower bounds, how many events were dropped, and the setting.
  dropped=$(sed -nE 's/.* ([0-9]+) oldest dropped.*/\1/p' "$dir/rout")
  want="the live figures are lower bounds: this snapshot was recovered from a recording whose history had dropped its oldest $dropped events"
  "$tool" summary "$dir/recovered.json" >"$dir/sout" || fail "summary exited $?"
  sed -n 2p "$dir/sout" | grep -qF "recovered.json: warning: $want" || fail "summary does not warn: $(head -3 "$dir/sout")"
  grep -qF "a larger CUDASNAP_MAX_ENTRIES (it was 20) keeps more" "$dir/sout" || fail "summary names no setting: $(head -3 "$dir/sout")"
  "$tool" check "$dir/recovered.json" | grep -qF "recovered.json: warning: cudasnap.dropped_events: $want" ||
    fail "check does not warn: $("$tool" check "$dir/recovered.json")"
  "$tool" ranks "$dir/recovered.json" >"$dir/kout" 2>&1 || fail "ranks exited $?: $(cat "$dir/kout")"
  grep -qF "$want" "$dir/kout" || fail "ranks does not warn: $(cat "$dir/kout")"
  "$tool" report -o "$dir/recovered.html" "$dir/recovered.json" >/dev/null || fail "report exited $?"
  grep -qF "${want#the }" "$dir/recovered.html" || fail "the report's data has no warning"
  ;;
kill_anywhere)
  lost=0
  for i in $(seq 20); do
    max_entries=64 spin=spin delay=0.0$((RANDOM % 10))$((RANDOM % 10)) run_and_kill
    [[ $status -eq 137 ]] || fail "exit status $status, want 137"
    "$tool" recover "$rec" -o "$dir/recovered-$i.json" >"$dir/rout" 2>"$dir/rerr" || fail "recover: $(cat "$dir/rerr")"
    read -r n_lost < <(sed -nE 's/.* events \(([0-9]+) lost at the end, 0 damaged, .*/\1/p' "$dir/rout")
    [[ -n $n_lost && $n_lost -le 1 ]] || fail "run $i: unexpected report: $(cat "$dir/rout")"
    lost=$((lost + n_lost))
    "$tool" check "$dir/recovered-$i.json" >/dev/null || fail "run $i: cudasnap check: $("$tool" check "$dir/recovered-$i.json")"
    rm -f "$rec" "$dir/recovered-$i.json"
  done
  echo "kill_anywhere: $lost of 20 kills landed while an event was being recorded"
  ;;
rebuilt)
  cp "$bin/it_record_kill" "$dir/it_record_kill"
  prog=$dir/it_record_kill run_and_kill
  "$tool" recover "$rec" -o "$dir/same.json" >/dev/null 2>"$dir/rerr" || fail "recover: $(cat "$dir/rerr")"
  [[ ! -s $dir/rerr ]] || fail "warnings for the same build: $(cat "$dir/rerr")"
  grep -q '"allocate_weights"' "$dir/same.json" || fail "the same build's frames are not named"
  cp "$bin/it_fork" "$dir/it_record_kill" # another build at the recorded path
  "$tool" recover "$rec" -o "$dir/other.json" >/dev/null 2>"$dir/rerr" || fail "recover: $(cat "$dir/rerr")"
  grep -qx "cudasnap: warning: $dir/it_record_kill is not the build that ran (its build ID differs, or it is gone): its frames are not named" \
    "$dir/rerr" || fail "no warning about the other build: $(cat "$dir/rerr")"
  ! grep -q '"allocate_weights"\|"main"' "$dir/other.json" || fail "frames named from another build"
  "$tool" check "$dir/other.json" >/dev/null || fail "cudasnap check: $("$tool" check "$dir/other.json")"
  ;;
truncated)
  run_and_kill
  size=$(stat -c %s "$rec")
  "$tool" recover "$rec" -o "$dir/whole.json" >/dev/null 2>&1 || fail "the whole recording does not recover"
  for cut in 0 7 100 4095 4096 8192 $((size / 2)) $((size - 4096)) $((size - 1)); do
    head -c "$cut" "$rec" >"$dir/cut-$cut.csrec"
    refused "$dir/cut-$cut.csrec"
  done
  printf 'not a recording\n' >"$dir/text.csrec"
  refused "$dir/text.csrec"
  refused "$dir/whole.json"
  refused "$dir/missing.csrec"
  # a run that allocated nothing has nothing to show: refused, as a dump writes no empty snapshot
  (cd "$dir" && env LD_PRELOAD="$lib" CUDASNAP_DUMP_ON=none CUDASNAP_RECORD="$dir/empty.csrec" true)
  [[ -f $dir/empty.csrec ]] && fail "a recording file from a program that never used CUDA"
  rm -f "$dir/out"
  (cd "$dir" && exec env LD_PRELOAD="$lib" CUDASNAP_DUMP_ON=none CUDASNAP_MAX_ENTRIES=0 CUDASNAP_RECORD="$dir/nohist.csrec" \
    "$bin/it_record_kill" 0 >"$dir/out" 2>"$dir/err") &
  pid=$!
  for _ in $(seq 200); do grep -q '^ready$' "$dir/out" 2>/dev/null && break; sleep 0.05; done
  kill -KILL $pid
  wait $pid
  pid=
  refused "$dir/nohist.csrec"
  grep -q "nothing to recover" "$dir/rerr" || fail "not said why: $(cat "$dir/rerr")"
  ;;
kinds)
  (cd "$dir" && exec env LD_PRELOAD="$lib" CUDASNAP_DUMP_ON=exit,signal,oom CUDASNAP_OUTPUT="$dir/snap-%p-%t.json" \
    CUDASNAP_RECORD="$dir/rec-%p.csrec" "$bin/it_passthrough" "$dir/dump.json" "$dir/dump.pickle" "$dir/child.json" \
    wait_kill >"$dir/out" 2>"$dir/err") &
  pid=$!
  for _ in $(seq 400); do
    grep -q '^ready ' "$dir/out" 2>/dev/null && break
    kill -0 $pid 2>/dev/null || fail "the program ended early: $(cat "$dir/err")"
    sleep 0.05
  done
  read -r _ child < <(grep '^ready ' "$dir/out") || fail "the program never said ready: $(cat "$dir/err")"
  kill -KILL $child
  kill -KILL $pid
  wait $pid
  status=$?
  [[ $status -eq 137 ]] || fail "exit status $status, want 137"
  for p in $pid $child; do
    [[ -f $dir/rec-$p.csrec ]] || fail "no recording of $p: $(ls "$dir")"
    "$tool" recover "$dir/rec-$p.csrec" -o "$dir/recovered-$p.json" >"$dir/rout" 2>"$dir/rerr" ||
      fail "recover $p exited $?: $(cat "$dir/rerr")"
    [[ ! -s $dir/rerr ]] || fail "recover $p warned: $(cat "$dir/rerr")"
    grep -q "(0 lost at the end, 0 damaged, 0 oldest dropped)" "$dir/rout" || fail "report: $(cat "$dir/rout")"
    "$tool" check "$dir/recovered-$p.json" >/dev/null || fail "cudasnap check $p: $("$tool" check "$dir/recovered-$p.json")"
    "$tool" summary "$dir/recovered-$p.json" >"$dir/summary-$p" || fail "cudasnap summary $p"
  done
  python3 - "$dir/dump.json" "$dir/recovered-$pid.json" "$dir/child.json" "$dir/recovered-$child.json" "$dir/out" <<'PY' ||
import json, sys
dump, rec, child_dump, child_rec = (json.load(open(f)) for f in sys.argv[1:5])
sites = [l.split()[1:] for l in open(sys.argv[5]).read().splitlines() if l.startswith("site ")]
def segments(s):
    # streams are the ring's indexes in a recovery, handles in a dump: not compared; nor the
    # cache's segment types (a recovery tells small from large segments by their size only)
    return sorted((x["device"], x["address"], x["total_size"], x["cudasnap"]["kind"], x["is_expandable"],
                   x["segment_type"] if x["cudasnap"]["kind"] != "cached" else "", json.dumps(x["frames"]),
                   json.dumps([(b["address"], b["size"], b["state"], b["frames"]) for b in x["blocks"]
                               if b["state"] != "inactive"])) for x in s["segments"])
for d, r in ((dump, rec), (child_dump, child_rec)):
    want, got = segments(d), segments(r)
    assert want == got, ("segments differ", [w for w in want if w not in got], [g for g in got if g not in want])
kinds = {x["cudasnap"]["kind"] for x in rec["segments"]}
drawn = {"device", "pitch", "managed", "async", "array", "vmm_mapped", "graph", "cached"}
assert kinds == drawn, kinds
assert [x["cudasnap"]["kind"] for x in child_rec["segments"]] == ["ipc_imported"], child_rec["segments"]
# every site of a drawn kind that is live at the kill names its function in a block of its kind
for kind, function in sites:
    if kind not in drawn | {"ipc_imported"} or function == "alloc_array_3d":  # destroyed at once
        continue
    s = child_rec if kind == "ipc_imported" else rec
    assert any(f["name"] == function and f["filename"].endswith("prog_passthrough.c")
               for x in s["segments"] if x["cudasnap"]["kind"] == kind for b in x["blocks"] for f in b["frames"]), (kind, function)
actions = {e["action"] for t in rec["device_traces"] for e in t}
assert {"segment_map", "segment_unmap", "segment_alloc", "segment_free", "alloc", "free_completed"} <= actions, actions
mem = rec["cudasnap"]["memory"]
assert [m["device"] for m in mem] == [0, 1] and not mem[0]["driver_known"], mem
assert mem[0]["passthrough"]["pitch"] == dump["cudasnap"]["memory"][0]["passthrough"]["pitch"] > 0, mem
PY
    fail "the recovered snapshots do not draw the kinds as the dumps do"
  for row in "passed through: device" "passed through: pitch" "passed through: managed" "passed through: array" \
    "drawn: VMM mappings" "drawn: stream-ordered allocations" "drawn: graph allocations"; do
    [[ $(grep -cE "^  $row +[1-9][0-9]* B" "$dir/summary-$pid") -ge 1 ]] ||
      fail "summary does not name '$row': $(cat "$dir/summary-$pid")"
  done
  grep -qE "^  drawn: IPC imports +4194304 B" "$dir/summary-$child" || fail "summary of the child: $(cat "$dir/summary-$child")"
  # the memory_summary table, made from the segments, counts the cache's only, as the dump's counters do
  "$tool" summary "$dir/dump.json" >"$dir/summary-dump" || fail "cudasnap summary of the dump"
  cur() { sed -nE 's/^\| (GPU reserved memory|Allocated memory) +\| +([0-9]+ [A-Za-z]+) .*/\1 \2/p' "$1"; }
  [[ $(cur "$dir/summary-dump" | wc -l) -eq 4 && "$(cur "$dir/summary-dump")" == "$(cur "$dir/summary-$pid")" ]] ||
    fail "the cache's current bytes differ: $(cur "$dir/summary-dump") vs $(cur "$dir/summary-$pid")"
  grep -q "not asked: recovered from a recording" "$dir/summary-$pid" || fail "summary: $(cat "$dir/summary-$pid")"
  ! grep -q "passed through: vmm_physical" "$dir/summary-$pid" || fail "summary names what was not recorded: $(cat "$dir/summary-$pid")"
  pid= child=
  ;;
free_split)
  for conf in "" "split_large:True,roundup_power2_divisions:4"; do
    rm -f "$dir"/*
    (cd "$dir" && exec env LD_PRELOAD="$lib" CUDASNAP_DUMP_ON=none CUDASNAP_ALLOC_CONF="$conf" \
      CUDASNAP_RECORD="$dir/rec-%p.csrec" "$bin/it_free_split" "$dir/dump.json" >"$dir/out" 2>"$dir/err") &
    pid=$!
    for _ in $(seq 200); do
      grep -q '^ready$' "$dir/out" 2>/dev/null && break
      kill -0 $pid 2>/dev/null || fail "[$conf] the program ended early: $(cat "$dir/err")"
      sleep 0.05
    done
    grep -q '^ready$' "$dir/out" || fail "[$conf] the program never said ready"
    kill -KILL $pid
    wait $pid
    rec="$dir/rec-$pid.csrec"
    pid=
    "$tool" recover "$rec" -o "$dir/recovered.json" >"$dir/rout" 2>"$dir/rerr" || fail "[$conf] recover: $(cat "$dir/rerr")"
    "$tool" check "$dir/recovered.json" >/dev/null || fail "[$conf] check: $("$tool" check "$dir/recovered.json")"
    "$tool" summary "$dir/dump.json" >"$dir/dump.summary" || fail "[$conf] summary of the dump"
    "$tool" summary "$dir/recovered.json" >"$dir/rec.summary" || fail "[$conf] summary of the recovery"
    want=$(grep '^free bytes inside segments: ' "$dir/dump.summary")
    got=$(grep '^free bytes inside segments: ' "$dir/rec.summary")
    [[ -n $want && $want == "$got" ]] || fail "[$conf] the dump says '$want', the recovery '$got'"
    python3 - "$dir/dump.json" "$dir/recovered.json" "$want" <<'PY' || fail "[$conf] the recovery's blocks are not the dump's"
import json, sys
dump, rec = (json.load(open(f)) for f in sys.argv[1:3])
def blocks(s):
    return sorted((x["address"], x["total_size"], [(b["address"], b["size"], b["requested_size"], b["state"])
                                                   for b in x["blocks"]]) for x in s["segments"])
want, got = blocks(dump), blocks(rec)
assert want == got, ([w for w in want if w not in got], [g for g in got if g not in want])
rounding = sum(b["size"] - b["requested_size"] for x in dump["segments"] for b in x["blocks"] if b["state"] != "inactive")
gaps = sum(b["size"] for x in dump["segments"] for b in x["blocks"] if b["state"] == "inactive")
assert rounding > 0 and gaps > 0, (rounding, gaps, sys.argv[3])  # the state has both
print("ok [%s]: %s" % (sys.argv[3], "rounding %d B, gaps %d B" % (rounding, gaps)))
PY
  done
  ;;
*) fail "unknown scenario" ;;
esac
left_behind
exit 0
