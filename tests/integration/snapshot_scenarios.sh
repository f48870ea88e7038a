#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# snapshot_scenarios.sh SCENARIO BIN_DIR CUDASNAP_LIB
#
# Issue #4's snapshot scenarios: a program runs under cudasnap with snapshots on, in an empty
# directory, and every snapshot it leaves must satisfy the viewer's rules (snapshot_check) plus
# the scenario's own expectations. BIN_DIR holds the test programs and snapshot_check.
set -u
scenario=$1 bin=$2 lib=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL [$scenario]: $*" >&2; exit 1; }
check() { "$bin/snapshot_check" "$@" || fail "snapshot_check $*"; }
one() { # the single file matching a pattern
  local files=("$dir"/$1)
  [[ ${#files[@]} -eq 1 && -f ${files[0]} ]] || fail "expected one $1, found: $(ls "$dir")"
  echo "${files[0]}"
}
run() { # run a program under cudasnap in $dir; stderr kept in $dir/err
  (cd "$dir" && env LD_PRELOAD="$lib" CUDASNAP_DUMP_ON=exit,signal,oom "$@" >"$dir/out" 2>"$dir/err") ||
    fail "$* exited $?: $(head -c 2000 "$dir/err")"
}

case $scenario in
cache_on | cache_off)
  cache=1
  [[ $scenario == cache_off ]] && cache=0
  run env CUDASNAP_CACHE=$cache CUDASNAP_OUTPUT="$dir/snap-%n-%t.json" "$bin/it_loader_linked" 300
  f=$(one 'snap-*-exit.json')
  check "$f" --action alloc --action free_completed --action segment_alloc --devices 2
  grep -q "^cudasnap: wrote $f (" "$dir/err" || fail "no report line for $f: $(cat "$dir/err")"
  [[ $(grep -c '^cudasnap: ' "$dir/err") -eq 1 ]] || fail "expected one cudasnap line: $(cat "$dir/err")"
  ;;
two_devices)
  run env CUDASNAP_OUTPUT="$dir/two.pickle" "$bin/it_two_devices"
  f=$(one 'two.pickle')
  check "$f" --devices 2 --action alloc
  python3 - "$f" <<'PY' || fail "not both devices"
import pickle, sys
s = pickle.load(open(sys.argv[1], "rb"))
assert {seg["device"] for seg in s["segments"]} == {0, 1}, s["segments"]
assert all(len(t) > 0 for t in s["device_traces"])
PY
  ;;
oom)
  run env FAKE_CUDA_CAPACITY=$((64 << 20)) CUDASNAP_OUTPUT="$dir/snap-%t.json" "$bin/it_oom"
  check "$(one 'snap-oom.json')" --action oom
  check "$(one 'snap-exit.json')" --action oom
  ;;
oom_loop)
  # 1000 OOMs, each recovered from: a few snapshots, not 1000 (the first at once, then at most
  # one per 10 s, and the last OOM's at the end); together they account for every OOM, and the
  # last says the program recovered (issue 24, defect 2)
  run env FAKE_CUDA_CAPACITY=$((64 << 20)) CUDASNAP_DUMP_ON=oom CUDASNAP_OUTPUT="$dir/snap-%n-%t.json" \
    "$bin/it_oom_loop" 1000
  files=("$dir"/snap-*-oom.json)
  ((${#files[@]} >= 2 && ${#files[@]} <= 4)) || fail "expected 2 to 4 OOM snapshots, found ${#files[@]}"
  for f in "${files[@]}"; do check "$f" --action oom; done
  python3 - "${files[@]}" <<'PY' || fail "the OOM snapshots do not account for the 1000 OOMs"
import json, sys
snaps = sorted((json.load(open(f))["cudasnap"] for f in sys.argv[1:]), key=lambda c: c["dump_number"])
assert sum(c["oom_coalesced"] + 1 for c in snaps) == 1000, [c["oom_coalesced"] for c in snaps]
assert snaps[-1]["oom_recovered"] is True, snaps[-1]
assert all(c.get("oom_recovered", True) is True for c in snaps), snaps
PY
  ;;
oom_pending_signals)
  # An OOM snapshot waiting out its 10 s interval is written when it is due, although the program
  # asks for a snapshot by signal every 300 ms meanwhile (issue 33: each request restarted the wait)
  out=$(env LD_PRELOAD="$lib" FAKE_CUDA_CAPACITY=$((64 << 20)) CUDASNAP_DUMP_ON=oom,signal CUDASNAP_OUTPUT="$dir/snap-%n-%t.json" \
    "$bin/it_oom_loop" --signals "$dir" 2>"$dir/err") || fail "it_oom_loop --signals failed: $(cat "$dir/err")"
  [[ $out == oom_files=2 ]] || fail "expected both OOM snapshots before the exit, the program saw: $out"
  ;;
signal)
  run env CUDASNAP_OUTPUT="$dir/snap-%n-%t.json" "$bin/it_snapshot_signal" "$dir"
  check "$(one 'snap-*-signal.json')" --action alloc
  check "$(one 'snap-*-exit.json')" --action snapshot # the signal dump's mark, as PyTorch records it
  without=$(env -u LD_PRELOAD "$bin/it_snapshot_signal" "$dir" 2>/dev/null | grep checksum=) ||
    fail "the program failed without cudasnap"
  grep -qx "$without" "$dir/out" || fail "checksum differs with cudasnap: $(cat "$dir/out") vs $without"
  ;;
small_ring)
  run env CUDASNAP_MAX_ENTRIES=50 CUDASNAP_OUTPUT="$dir/small.json" "$bin/it_loader_linked" 300
  f=$(one 'small.json')
  check "$f" --dropped --action alloc
  grep -q "events, oldest dropped" "$dir/err" || fail "the report does not say entries were dropped"
  ;;
unwritable)
  run env CUDASNAP_OUTPUT=/nonexistent-dir/snap.json "$bin/it_loader_linked" 100
  [[ $(grep '^cudasnap:' "$dir/err") == "cudasnap: error: cannot write snapshot /nonexistent-dir/snap.json: No such file or directory" ]] ||
    fail "expected exactly one cudasnap line, the error, got: $(cat "$dir/err")"
  grep -q '^checksum=' "$dir/out" || fail "the program did not finish"
  ;;
api_and_leaks)
  run env CUDASNAP_DUMP_ON=none "$bin/it_snapshot_api" "$dir/api.json" "$dir/api.pickle"
  read -r _ line < <(grep '^frame=allocate_weights' "$dir/out") || fail "no frame line on stdout"
  check "$dir/api.json" --frame allocate_weights prog_snapshot_api.c "$line"
  check "$dir/api.pickle" --frame allocate_weights prog_snapshot_api.c "$line"
  python3 "$(dirname "$0")/pickle_check.py" "$dir/api.pickle" "$dir/api.json" >/dev/null || fail "pickle_check"
  grep -q '^cudasnap: 1 block (3.0 MiB) never freed; top allocation sites by bytes:$' "$dir/err" ||
    fail "no leak report: $(cat "$dir/err")"
  grep -qE "^cudasnap:   3\.0 MiB in 1 block: allocate_weights \(.*prog_snapshot_api\.c:$line\)$" "$dir/err" ||
    fail "the leak report does not name allocate_weights at line $line: $(cat "$dir/err")"
  ;;
passthrough)
  # The IPC child used CUDA and ends with _exit: it writes an exit snapshot of its own (issue 13).
  run env CUDASNAP_OUTPUT="$dir/exit-%p.json" "$bin/it_passthrough" "$dir/dump.json" "$dir/dump.pickle" "$dir/child.json"
  child_pid=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["cudasnap"]["pid"])' "$dir/child.json")
  check "$dir/exit-$child_pid.json" --action segment_alloc
  mv "$dir/exit-$child_pid.json" "$dir/child-exit.json"
  exit_json=$(one 'exit-*.json')
  for f in "$dir/dump.json" "$dir/dump.pickle"; do
    check "$f" --devices 2 --action segment_map --action segment_unmap --action segment_free
    python3 "$(dirname "$0")/passthrough_check.py" "$f" "$dir/out" dump >/dev/null || fail "passthrough_check $f"
  done
  check "$exit_json" --devices 2
  check "$dir/child.json" --action segment_alloc
  python3 - "$dir/child.json" <<'PY' || fail "the child's IPC import is not drawn"
import json, sys
s = json.load(open(sys.argv[1]))
ipc = [seg for seg in s["segments"] if seg["cudasnap"]["kind"] == "ipc_imported"]
assert len(ipc) == 1 and ipc[0]["total_size"] == 4 << 20, ipc
assert any(f["name"] == "open_ipc" for f in ipc[0]["blocks"][0]["frames"]), ipc[0]["blocks"][0]["frames"]
m = s["cudasnap"]["memory"][0]
assert m["passthrough"]["ipc_imported"] == 4 << 20 and m["driver_known"], m
# another process's memory: not in what this process accounts for (the stream-ordered and graph
# pools are the fake driver's state the child inherited; the child allocated nothing itself)
assert m["accounted"] == m["pool_reserved"] + m["graph_reserved"], m
PY
  python3 "$(dirname "$0")/passthrough_check.py" "$exit_json" "$dir/out" exit >/dev/null || fail "passthrough_check exit"
  python3 "$(dirname "$0")/pickle_check.py" "$dir/dump.pickle" "$dir/dump.json" >/dev/null || fail "pickle_check"
  # cudasnap summary: the reconciliation after each memory_summary table, adding up
  "$bin/../../cli/cudasnap" summary "$dir/dump.pickle" >"$dir/summary" || fail "cudasnap summary"
  [[ $(grep -c '^device memory, reconciled with the driver:$' "$dir/summary") -eq 2 ]] ||
    fail "no reconciliation table per device: $(cat "$dir/summary")"
  # managed memory is counted whole, the driver counts resident pages: the remainder is a range
  # from 0 (the fake driver counts every managed page) up to the managed bytes, never negative
  [[ $(grep -cE '^  remainder \(context, modules, others\) +between 0 B and [0-9]+ B .*not resident\)$' \
    "$dir/summary") -eq 2 ]] || fail "the remainder is not a range from 0 on both devices: $(cat "$dir/summary")"
  grep -qE '^  passed through: managed +3145728 B \(3\.0 MiB\) \(at most: ' "$dir/summary" ||
    fail "device 0's managed row is not an upper bound: $(cat "$dir/summary")"
  grep -qE '^  graph memory pool reserved +4194304 B \(4\.0 MiB\); used 3145728 B \(3\.0 MiB\)$' "$dir/summary" ||
    fail "device 0's graph memory pool: $(cat "$dir/summary")"
  grep -qE '^  drawn: graph allocations +3145728 B \(3\.0 MiB\) \(of the graph pool\)$' "$dir/summary" ||
    fail "device 0's graph allocations are not drawn: $(cat "$dir/summary")"
  grep -qE '^  stream-ordered pools reserved +4194304 B \(4\.0 MiB\); used 3145728 B \(3\.0 MiB\)$' "$dir/summary" ||
    fail "device 0's stream-ordered pools: $(cat "$dir/summary")"
  # at exit cudasnap asks the driver too (passthrough_check above: it adds up): the driver's
  # used bytes and the pools on both devices, and no 'not asked'
  "$bin/../../cli/cudasnap" summary "$exit_json" >"$dir/exit-summary" || fail "cudasnap summary (exit)"
  [[ $(grep -cE '^  driver used \(total - free\) +[0-9]+ B' "$dir/exit-summary") -eq 2 ]] ||
    fail "the exit snapshot does not say what the driver used on both devices: $(cat "$dir/exit-summary")"
  [[ $(grep -cE '^  (stream-ordered pools|graph memory pool) reserved +[0-9]+ B.*; used ' "$dir/exit-summary") -eq 4 ]] ||
    fail "the exit snapshot's pools are not known on both devices: $(cat "$dir/exit-summary")"
  ! grep -q 'not asked' "$dir/exit-summary" || fail "the exit snapshot says 'not asked': $(cat "$dir/exit-summary")"
  grep -qE '^  passed through: vmm_physical +12582912 B \(12\.0 MiB\)$' "$dir/summary" ||
    fail "device 0's physical VMM bytes: $(cat "$dir/summary")"
  grep -qE '^host memory \(not device memory\): pinned 1048576 B \(1\.0 MiB\), registered 0 B$' "$dir/summary" ||
    fail "no host memory line: $(cat "$dir/summary")"
  # cudasnap report: the same table per device, as summary prints it
  "$bin/../../cli/cudasnap" report -o "$dir/dump.html" "$dir/dump.pickle" >/dev/null || fail "cudasnap report"
  python3 - "$dir/dump.html" "$dir/summary" <<'PY' || fail "the report's driver tables differ from summary's"
import json, sys
html = open(sys.argv[1], encoding="utf-8").read()
start = html.index('<script type="application/json"')
start = html.index(">", start) + 1
data = json.loads(html[start:html.index("</script>", start)])
tables = [d["driver_table"] for d in data["devices"]]
summary = open(sys.argv[2]).read()
assert len(tables) == 2 and all(t.startswith("device memory, reconciled with the driver:\n") for t in tables), tables
assert all(t in summary for t in tables), (tables, summary)
assert "remainder (context, modules, others)" in tables[0] and tables[0] != tables[1], tables
PY
  # the exit leak report: every kind left live, with its site
  while read -r kind function; do
    grep -qE "^cudasnap: passed through, $kind: [0-9]+ allocations? \(.*\) never freed; top allocation sites by bytes:$" "$dir/err" ||
      fail "no leak line for $kind: $(cat "$dir/err")"
    grep -qE "^cudasnap:   .* in [0-9]+ blocks?: $function \(.*prog_passthrough\.c:[0-9]+\)$" "$dir/err" ||
      fail "the leak report does not name $function: $(cat "$dir/err")"
  done <<'KINDS'
device alloc_legacy
pitch alloc_pitched
managed alloc_managed
async alloc_from_pool
array alloc_array_2d
array alloc_mipmapped
vmm_mapped map_piece
vmm_physical create_physical
host_pinned alloc_pinned
KINDS
  ;;
*) fail "unknown scenario" ;;
esac
echo "ok [$scenario]"
