#!/usr/bin/env bash
# names_test.sh GROUP CUDASNAP LIBCUDASNAP SOURCE_DIR PYTHON TRAIN_RANK [SERVER]
#
# What a site is named in the program shapes of issue 46, on the fake driver (the caller puts
# tests/fakes on LD_LIBRARY_PATH):
#   inlined  a rank of a training job and a server's worker, built with -O2 -g: the leak's site is
#            the inlined function (stash_for_logging, KvCache::append_page), its caller the function
#            it was inlined into, in the snapshot's frames, the exit leak report, summary, the
#            report, ranks, pprof (one Location, a Line per function), Perfetto's OOM event and a
#            recovered recording.
set -u
group=$1 cudasnap=$2 lib=$3 src=$4 python=$5 train=$6 server=${7:-}
fail() { echo "FAIL [names $group]: $*" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# The line of a mark ("@site NAME", "@call NAME") in a source file.
line_of() { grep -n "$2" "$1" | head -1 | cut -d: -f1; }

# Run a program with the library preloaded and snapshots at exit only: run NAME PROGRAM [VAR=VALUE...]
run() {
  local name=$1 prog=$2
  shift 2
  env "$@" CUDASNAP_DUMP_ON=exit CUDASNAP_OUTPUT="$dir/$name.json" LD_PRELOAD="$lib" "$prog" \
    >"$dir/$name.out" 2>"$dir/$name.err" || fail "$name failed: $(cat "$dir/$name.err")"
  [[ -s $dir/$name.json ]] || fail "$name wrote no snapshot: $(cat "$dir/$name.err")"
}

group_inlined() {
  local c="$src/tests/cli/prog_train_rank.c"
  local site call
  site=$(line_of "$c" '@site stash_for_logging')
  call=$(line_of "$c" '@call stash_for_logging')
  # The test means something only where the compiler did inline the function.
  if nm "$train" | grep -q stash_for_logging; then fail "stash_for_logging was not inlined into main"; fi
  run rank0 "$train" RANK=0
  run rank1 "$train" RANK=1

  # The snapshot: two frames for one return address, the inlined one marked.
  "$python" - "$dir/rank0.json" "$c" "$site" "$call" <<'PY' || fail "rank 0's frames"
import json, sys
snap, path, site, call = json.load(open(sys.argv[1])), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
live = [b for s in snap["segments"] for b in s["blocks"] if b["state"] == "active_allocated"]
assert len(live) == 1, live
f = live[0]["frames"]
assert f[0] == {"filename": path, "line": site, "name": "stash_for_logging", "inlined": True}, f[:3]
assert f[1] == {"filename": path, "line": call, "name": "main"}, f[:3]
PY
  echo "ok frames"
  grep -qF "3.0 MiB in 1 block: stash_for_logging ($c:$site)" "$dir/rank0.err" ||
    fail "the leak report: $(cat "$dir/rank0.err")"
  echo "ok leak report"

  "$cudasnap" summary --site-frames 2 "$dir/rank0.json" >"$dir/summary" 2>&1 || fail "summary: $(cat "$dir/summary")"
  grep -A2 '^top allocation sites by live bytes' "$dir/summary" >"$dir/live_sites"
  grep -qF "3145728 B (3.0 MiB) in 1 block: stash_for_logging $c:$site" "$dir/live_sites" ||
    fail "summary's site: $(cat "$dir/live_sites")"
  grep -qF "from main $c:$call" "$dir/live_sites" || fail "summary's caller: $(cat "$dir/live_sites")"
  echo "ok summary"

  "$cudasnap" report -o "$dir/rank0.html" "$dir/rank0.json" >/dev/null 2>"$dir/err" || fail "report: $(cat "$dir/err")"
  grep -qF "\"stash_for_logging\",\"$c\",$site" "$dir/rank0.html" || fail "the report names no stash_for_logging"
  echo "ok report"

  # ranks reads the heads the library wrote, and the whole files: both name it, rank 1's top site
  # (6 MiB kept for logging) and the site that differs most (3 MiB more than rank 0's)
  mkdir "$dir/job"
  cp "$dir/rank0.json" "$dir/rank1.json" "$dir/job/"
  for full in "" --full; do
    "$cudasnap" ranks --json $full "$dir/job" >"$dir/ranks" 2>"$dir/err" || fail "ranks $full: $(cat "$dir/err")"
    "$python" - "$dir/ranks" "stash_for_logging $c:$site" <<'PY' || fail "ranks $full: $(cat "$dir/ranks")"
import json, sys
o, want = json.load(open(sys.argv[1])), sys.argv[2]
top = {r["rank"]: r["top_site"] for r in o["ranks"]}
assert top[1] == want, top
assert o["differing_sites"][0]["site"] == want, o["differing_sites"]
PY
  done
  echo "ok ranks"

  # Perfetto: rank 1's OOM, asked in stash_for_logging
  "$cudasnap" export --format perfetto -o "$dir/rank1.trace.json" "$dir/rank1.json" >/dev/null 2>"$dir/err" ||
    fail "export perfetto: $(cat "$dir/err")"
  "$python" - "$dir/rank1.trace.json" "stash_for_logging $c:$site" <<'PY' || fail "Perfetto's OOM event"
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
ooms = [e for e in events if e.get("name") == "OOM"]
assert len(ooms) == 1 and ooms[0]["args"]["site"] == sys.argv[2], ooms
PY
  echo "ok perfetto"

  # pprof: one Location for the address, a Line per function, the inlined one first
  "$cudasnap" export --format pprof -o "$dir/rank0.pb.gz" "$dir/rank0.json" >/dev/null 2>"$dir/err" ||
    fail "export pprof: $(cat "$dir/err")"
  if command -v go >/dev/null 2>&1; then
    go tool pprof -raw "$dir/rank0.pb.gz" >"$dir/raw" 2>&1 || fail "go tool pprof -raw: $(cat "$dir/raw")"
    grep -A1 -E '^ +[0-9]+: 0x0 M=1 stash_for_logging ' "$dir/raw" >"$dir/location"
    grep -qF "stash_for_logging $c:$site" "$dir/location" && grep -qE "^ +main $c:$call " "$dir/location" ||
      fail "pprof's location: $(sed -n '/^Locations/,/^Mappings/p' "$dir/raw")"
    go tool pprof -traces "$dir/rank0.pb.gz" 2>&1 | grep -A1 'stash_for_logging (inline)' | grep -qE '^ +main$' ||
      fail "pprof -traces: $(go tool pprof -traces "$dir/rank0.pb.gz" 2>&1)"
    echo "ok pprof"
  else
    echo "skipped pprof (no go)"
  fi

  # A recording, recovered: the tool's own symbolizer names the same frames.
  env RANK=0 CUDASNAP_DUMP_ON=none CUDASNAP_RECORD="$dir/rank0.rec" LD_PRELOAD="$lib" "$train" \
    >/dev/null 2>"$dir/err" || fail "recording: $(cat "$dir/err")"
  "$cudasnap" recover -o "$dir/recovered.json" "$dir/rank0.rec" >/dev/null 2>"$dir/err" || fail "recover: $(cat "$dir/err")"
  "$cudasnap" summary "$dir/recovered.json" 2>&1 | grep -A1 '^top allocation sites by live bytes' |
    grep -qF "stash_for_logging $c:$site" || fail "the recovered snapshot's site"
  echo "ok recover"

  [[ -n $server ]] || { echo "skipped the server (no C++ compiler)"; return; }
  local cxx="$src/tests/cli/prog_server.cpp"
  site=$(line_of "$cxx" '@site append_page')
  call=$(line_of "$cxx" '@call append_page')
  if nm -C "$server" | grep -q 'KvCache::append_page'; then fail "KvCache::append_page was not inlined"; fi
  run server "$server"
  "$python" - "$dir/server.json" "$cxx" "$site" "$call" <<'PY' || fail "the server's frames"
import json, sys
snap, path, site, call = json.load(open(sys.argv[1])), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
live = [b for s in snap["segments"] for b in s["blocks"] if b["state"] == "active_allocated"]
assert len(live) == 6, live
for b in live:
    f = b["frames"]
    assert f[0] == {"filename": path, "line": site, "name": "KvCache::append_page(int)", "inlined": True}, f[:3]
    assert f[1] == {"filename": path, "line": call, "name": "worker_main(int, int)"}, f[:3]
PY
  "$cudasnap" summary --site-frames 2 "$dir/server.json" 2>&1 | grep -A2 '^top allocation sites by live bytes' >"$dir/live_sites"
  grep -qF "12582912 B (12.0 MiB) in 6 blocks: KvCache::append_page(int) $cxx:$site" "$dir/live_sites" &&
    grep -qF "from worker_main(int, int) $cxx:$call" "$dir/live_sites" || fail "the server's site: $(cat "$dir/live_sites")"
  echo "ok server"
}

case $group in
inlined) group_inlined ;;
*) fail "unknown group" ;;
esac
echo "PASS [names $group]"
