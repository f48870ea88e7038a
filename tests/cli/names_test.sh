#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# names_test.sh GROUP CUDASNAP LIBCUDASNAP SOURCE_DIR PYTHON TRAIN_RANK [SERVER [POOL]]
#
# What a site is named in the program shapes of issue 46, on the fake driver (the caller puts
# tests/fakes on LD_LIBRARY_PATH):
#   inlined  a rank of a training job and a server's worker, built with -O2 -g: the leak's site is
#            the inlined function (stash_for_logging, KvCache::append_page), its caller the function
#            it was inlined into, in the snapshot's frames, the exit leak report, summary, the
#            report, ranks, pprof (one Location, a Line per function), Perfetto's OOM event and a
#            recovered recording.
#   allocator_frames
#            a C++ program with its own pool (mem::DevicePool) built with -O2 -g: named part of the
#            allocator (CUDASNAP_ALLOCATOR_FRAMES, or --allocator-frames on a file without the
#            list), the pool's callers are the sites in the leak report, summary, the report,
#            ranks, pprof, Perfetto's OOM event, and diff names both sides alike; the flag on
#            PyTorch's own snapshots; a bad flag; a hostile file's globs and names. (The Python
#            program with its own helper is tests/python/test_allocator_frames.py.)
set -u
group=$1 cudasnap=$2 lib=$3 src=$4 python=$5 train=$6 server=${7:-} pool=${8:-}
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

# The live sites of `summary FILE [FLAGS...]`, one per line.
live_sites() {
  local file=$1
  shift
  "$cudasnap" summary "$@" "$file" 2>"$dir/err" | sed -n '/^top allocation sites by live bytes:$/,/^top allocation sites at/p' |
    sed '1d;$d' || fail "summary $*: $(cat "$dir/err")"
}

group_allocator_frames() {
  local cxx="$src/tests/cli/prog_pool.cpp" glob='mem::DevicePool<*>::*'
  local index tables reserve
  index=$(line_of "$cxx" '@call build_index')
  tables=$(line_of "$cxx" '@call load_tables')
  reserve=$(line_of "$cxx" '@call try_reserve')
  local want="  6291456 B (6.0 MiB) in 3 blocks: build_index() $cxx:$index
  2097152 B (2.0 MiB) in 1 block: load_tables() $cxx:$tables"
  if [[ -n $pool ]]; then
    run plain "$pool"
    run named "$pool" "CUDASNAP_ALLOCATOR_FRAMES=$glob"
    # without the list: the pool is every site, as the issue found it
    [[ $(live_sites "$dir/plain.json") == "  8388608 B (8.0 MiB) in 4 blocks: mem::DevicePool<float>::"* ]] ||
      fail "the pool is not the site without the list: $(live_sites "$dir/plain.json")"
    # with it: the file carries the list, every view names the callers
    "$python" -c 'import json, sys; l = json.load(open(sys.argv[1]))["cudasnap"]["allocator_frames"]; sys.exit(l != [sys.argv[2]])' \
      "$dir/named.json" "$glob" || fail "cudasnap.allocator_frames"
    grep -qF "6.0 MiB in 3 blocks: build_index() ($cxx:$index)" "$dir/named.err" &&
      grep -qF "2.0 MiB in 1 block: load_tables() ($cxx:$tables)" "$dir/named.err" || fail "the leak report: $(cat "$dir/named.err")"
    [[ $(live_sites "$dir/named.json") == "$want" ]] || fail "summary: $(live_sites "$dir/named.json")"
    echo "ok the variable"
    # the flag, on the file made without the list: the same names
    [[ $(live_sites "$dir/plain.json" --allocator-frames "$glob") == "$want" ]] ||
      fail "summary --allocator-frames: $(live_sites "$dir/plain.json" --allocator-frames "$glob")"
    for file in named plain; do
      local flag=()
      [[ $file == plain ]] && flag=(--allocator-frames "$glob")
      "$cudasnap" report "${flag[@]}" -o "$dir/$file.html" "$dir/$file.json" >/dev/null 2>"$dir/err" || fail "report: $(cat "$dir/err")"
      grep -qF "\"build_index()\",\"$cxx\",$index" "$dir/$file.html" || fail "the report of $file names no build_index"
      mkdir -p "$dir/job_$file"
      cp "$dir/$file.json" "$dir/job_$file/rank0.json"
      "$cudasnap" ranks --json "${flag[@]}" "$dir/job_$file" >"$dir/ranks" 2>"$dir/err" || fail "ranks: $(cat "$dir/err")"
      grep -qF "\"top_site\":\"build_index() $cxx:$index\"" "$dir/ranks" || fail "ranks of $file: $(cat "$dir/ranks")"
      "$cudasnap" export --format perfetto "${flag[@]}" -o "$dir/$file.trace.json" "$dir/$file.json" >/dev/null 2>"$dir/err" ||
        fail "export perfetto: $(cat "$dir/err")"
      grep -qF "\"site\":\"try_reserve() $cxx:$reserve\"" "$dir/$file.trace.json" || fail "Perfetto's OOM site of $file"
      if command -v go >/dev/null 2>&1; then
        "$cudasnap" export --format pprof "${flag[@]}" -o "$dir/$file.pb.gz" "$dir/$file.json" >/dev/null 2>"$dir/err" ||
          fail "export pprof: $(cat "$dir/err")"
        go tool pprof -top "$dir/$file.pb.gz" 2>&1 | grep -E '^ +[0-9.]+MB +[0-9.]+% ' | awk '{print $NF}' >"$dir/flat"
        [[ $(tr '\n' ' ' <"$dir/flat") == "build_index() load_tables() " ]] || fail "pprof -top of $file: $(cat "$dir/flat")"
      fi
    done
    echo "ok the flag: summary, report, ranks, Perfetto, pprof"
    # diff names both sides by both lists: nothing changed
    "$cudasnap" diff "$dir/plain.json" "$dir/named.json" >"$dir/diff" 2>"$dir/err" || fail "diff: $(cat "$dir/err")"
    [[ $(grep -c ': .*prog_pool.cpp:' "$dir/diff") -eq 0 ]] || fail "diff named the sides apart: $(cat "$dir/diff")"
    echo "ok diff"
  else
    echo "skipped the pool (no C++ compiler)"
  fi

  # PyTorch's own snapshots: a Python function, and C++ functions by a glob
  local traces="$src/tests/data/traces"
  live_sites "$traces/cs336-kkaitlyn111_memory_ctx128_fullstep.pickle" --allocator-frames step --top 3 >"$dir/sites"
  grep -q '^  .*: step ' "$dir/sites" && fail "step is still a site: $(cat "$dir/sites")"
  grep -qE '^  27254476800 B \(25\.4 GiB\) in 582 blocks: run_memory_foward_fullstep .*/benchmark\.py:232$' "$dir/sites" ||
    fail "PyTorch's trace, --allocator-frames step: $(cat "$dir/sites")"
  live_sites "$traces/ftcourse-cranberrii_memory_snapshot.pickle" --allocator-frames 'torch::autograd::generated::details::*' --top 3 >"$dir/sites"
  grep -qE '^  9011200 B \(8\.6 MiB\) in 88 blocks: torch::autograd::generated::MmBackward0::apply\(' "$dir/sites" ||
    fail "PyTorch's trace, a C++ glob: $(cat "$dir/sites")"
  echo "ok PyTorch's snapshots"

  # a bad flag: one line, the usage status
  "$cudasnap" summary --allocator-frames 'cuda_alloc,[x' "$traces/cs336-kkaitlyn111_memory_ctx128_fullstep.pickle" \
    >"$dir/out" 2>"$dir/err"
  local rc=$?
  [[ $rc -eq 2 && $(wc -l <"$dir/err") -eq 1 && ! -s $dir/out ]] || fail "a bad flag: exit $rc, $(cat "$dir/err")"
  grep -qF 'cudasnap summary: --allocator-frames is not accepted: `[x` has a [ that is not closed' "$dir/err" ||
    fail "a bad flag's line: $(cat "$dir/err")"
  echo "ok a bad flag"

  # A hostile file: 64 globs that make fnmatch backtrack (and more, passed over), names of 64 KiB
  # that almost match them, on 100 distinct stacks. The matcher is linear: seconds at most.
  "$python" - "$dir/hostile.json" <<'PY'
import json, sys
glob = "*a" * 100 + "b"
frames = [[{"filename": "x.py", "line": i, "name": "a" * 65536 + str(i)}] for i in range(100)]
blocks = [{"address": 4096 * i, "size": 512, "requested_size": 512, "state": "active_allocated", "frames": f}
          for i, f in enumerate(frames)]
snap = {"segments": [{"device": 0, "address": 0, "total_size": 4096 * 100, "allocated_size": 512 * 100,
                      "active_size": 512 * 100, "requested_size": 512 * 100, "stream": 0, "segment_type": "large",
                      "segment_pool_id": [0, 0], "is_expandable": False, "frames": [], "blocks": blocks}],
        "device_traces": [[]], "cudasnap": {"allocator_frames": [glob + str(i) for i in range(1000)] + ["[bad", 7]}}
json.dump(snap, open(sys.argv[1], "w"))
PY
  local t0=$SECONDS
  timeout 60 "$cudasnap" summary --top 1 "$dir/hostile.json" >"$dir/out" 2>"$dir/err" || fail "summary of the hostile file: $(cat "$dir/err")"
  grep -qE '^  512 B in 1 block: a{100}' "$dir/out" || fail "the hostile file's site: $(head -c 300 "$dir/out")"
  echo "ok a hostile file ($((SECONDS - t0)) s)"
  # check says which globs are passed over
  "$cudasnap" check "$dir/hostile.json" >"$dir/out" 2>&1
  grep -qF 'warning: cudasnap.allocator_frames[64]: is past the 64th glob: sites are named without it and those after it' \
    "$dir/out" || fail "check: $(cat "$dir/out")"
  echo "ok check"
}

case $group in
inlined) group_inlined ;;
allocator_frames) group_allocator_frames ;;
*) fail "unknown group" ;;
esac
echo "PASS [names $group]"
