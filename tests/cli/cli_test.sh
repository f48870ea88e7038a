#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# cli_test.sh TEST CUDASNAP PROG_HOLD PROG_SNAPSHOT_API SOURCE_DIR PYTHON
#
# The cudasnap tool, driven from outside as a user would (docs/design.md section 6). TEST picks one
# group: help, check, convert, summary, sites, run, dump, dump_all, diff, report, bad_input. CUDASNAP is the built tool,
# PROG_HOLD tests/cli/prog_hold.c, PROG_SNAPSHOT_API tests/integration/prog_snapshot_api.c, and
# SOURCE_DIR the repository (fixtures, the real trace, same_content.py) and PYTHON a python3
# that runs same_content.py, the independent reader of both formats (needed by convert only). The programs run on the
# fake driver: the caller puts tests/fakes on LD_LIBRARY_PATH. report needs PYTHON too (it reads the
# page's data back).
set -u
test=$1 cudasnap=$2 prog_hold=$3 prog_api=$4 src=$5 python=${6:-}
fixtures=$src/tests/data/fixtures
trace=$src/tests/data/traces/cs336-MAGMA27_memory_snapshot_pythononly.pickle
same_content() { "$python" "$src/tests/cli/same_content.py" "$@"; }
dir=$(mktemp -d)
# the programs' live records (dump --all reads them) in a directory of this test's own
export CUDASNAP_LIVE_DIR=$dir/live
mkdir "$CUDASNAP_LIVE_DIR"
cleanup() {
  [[ -n ${pids:-} ]] && kill $pids 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL [$test]: $*" >&2; exit 1; }

# expect STATUS CMD...: run CMD with stdout in $dir/out and stderr in $dir/err; STATUS is the exit
# status wanted, or "nonzero".
expect() {
  local want=$1
  shift
  "$@" >"$dir/out" 2>"$dir/err"
  local got=$?
  if [[ $want == nonzero ]]; then
    [[ $got -ne 0 ]] || fail "$* exited 0, expected non-zero: $(cat "$dir/out" "$dir/err")"
  else
    [[ $got -eq $want ]] || fail "$* exited $got, expected $want: $(head -c 2000 "$dir/err")"
  fi
}
one_stderr_line() { # exactly one line on stderr, matching the pattern if one is given
  [[ $(wc -l <"$dir/err") -eq 1 ]] || fail "expected one line on stderr, got: $(cat "$dir/err")"
  [[ -z ${1:-} ]] || grep -qE -- "$1" "$dir/err" || fail "stderr does not match '$1': $(cat "$dir/err")"
}
stdout_has() { grep -qE -- "$1" "$dir/out" || fail "stdout lacks '$1': $(head -c 3000 "$dir/out")"; }

# An API snapshot of prog_snapshot_api (allocate_weights holds 9 MiB in 2 blocks) as JSON and pickle.
api_snapshots() {
  (cd "$dir" && CUDASNAP_DUMP_ON=none "$cudasnap" run -- "$prog_api" "$dir/api.json" "$dir/api.pickle" \
    >"$dir/api.out" 2>"$dir/api.err") || fail "prog_snapshot_api failed: $(cat "$dir/api.err")"
}

# Wait until file $1 has a line matching $2 (at most 10 s).
wait_for_line() {
  for _ in $(seq 200); do
    grep -q "$2" "$1" 2>/dev/null && return 0
    sleep 0.05
  done
  fail "no '$2' in $1: $(cat "$1" 2>/dev/null)"
}

case $test in
help)
  for cmd in run dump summary convert check diff report recover ranks top metrics; do
    expect 0 "$cudasnap" $cmd --help
    stdout_has "^usage: cudasnap $cmd"
  done
  expect 0 "$cudasnap" --help
  stdout_has "^usage: cudasnap COMMAND"
  stdout_has "^  dump .*PID\\|--all "            # every form a user needs is listed
  stdout_has "^  report -o OUT.html FILE FILE\\.\\.\\. "
  # the commands' descriptions start in one column (the synopses are padded to it)
  desc_columns=$(sed -n '/^commands:/,/^$/p' "$dir/out" | grep '^  [a-z]' |
    sed -E 's/^(  .*[^ ] {2,})[^ ].*$/\1/' | awk '{ print length($0) }' | sort -u | wc -l)
  [[ $desc_columns -eq 1 ]] ||
    fail "the command list's descriptions do not start in one column: $(cat "$dir/out")"
  expect 0 "$cudasnap" run --help
  stdout_has "docs/configuration.md"
  stdout_has "--no-argv"
  expect 0 "$cudasnap" --version
  stdout_has '^cudasnap [0-9]+\.[0-9]+\.[0-9]+$'
  expect 2 "$cudasnap" frobnicate
  one_stderr_line "unknown command 'frobnicate'"
  expect 2 "$cudasnap"
  ;;

check)
  # Every fixture gets the viewer's verdict: PASS ones have no error (exit 0 unless they draw
  # warnings, which are silent problems), FAIL ones exit 1.
  while IFS=$'\t' read -r file verdict _; do
    [[ $file == file ]] && continue
    "$cudasnap" check "$fixtures/$file" >"$dir/out" 2>"$dir/err"
    rc=$?
    if [[ $verdict == PASS ]]; then
      ! grep -q ': error: ' "$dir/out" || fail "$file: errors on a PASS fixture: $(cat "$dir/out")"
      [[ -s $dir/err ]] && fail "$file: stderr: $(cat "$dir/err")"
      if grep -q ': warning: ' "$dir/out"; then
        [[ $rc -eq 1 ]] || fail "$file: warnings but exit $rc"
        tail -1 "$dir/out" | grep -qE ': 0 errors, [0-9]+ warnings?$' || fail "$file: verdict $(tail -1 "$dir/out")"
      else
        [[ $rc -eq 0 ]] || fail "$file: PASS fixture without warnings exited $rc: $(cat "$dir/out")"
        [[ $(tail -1 "$dir/out") == "$fixtures/$file: clean" ]] || fail "$file: verdict $(tail -1 "$dir/out")"
      fi
    else
      [[ $rc -eq 1 ]] || fail "$file: FAIL fixture exited $rc: $(cat "$dir/out" "$dir/err")"
    fi
  done <"$fixtures/MANIFEST.tsv"
  expect 0 "$cudasnap" check "$fixtures/memviz_minimal_valid.p4.pickle"
  expect 1 "$cudasnap" check "$fixtures/memviz_bad_orphan_free_requested.json"
  stdout_has "^$fixtures/memviz_bad_orphan_free_requested.json: error: [^:]+: "
  stdout_has ": 1 error, 0 warnings$"
  ;;

convert)
  # JSON -> pickle -> JSON (and pickle -> JSON -> pickle) gives the same content; the pickle of a
  # JSON snapshot is the smaller file. Every PASS fixture and a real PyTorch snapshot. The pairs
  # to compare are collected and compared in one run of same_content.py.
  inputs=("$trace")
  pairs=()
  while IFS=$'\t' read -r file verdict _; do
    [[ $verdict == PASS ]] && inputs+=("$fixtures/$file")
  done <"$fixtures/MANIFEST.tsv"
  for input in "${inputs[@]}"; do
    base=$dir/$(basename "$input")
    if [[ $input == *.json ]]; then
      expect 0 "$cudasnap" convert "$input" "$base.pickle"
      stdout_has "^wrote $base.pickle: pickle, [0-9]+ bytes$"
      expect 0 "$cudasnap" convert "$base.pickle" "$base.back.json"
      [[ $(stat -c %s "$base.pickle") -lt $(stat -c %s "$input") ]] || fail "$input: the pickle is not smaller"
      pairs+=("$input" "$base.back.json" "$input" "$base.pickle")
    else
      expect 0 "$cudasnap" convert "$input" "$base.json"
      stdout_has "^wrote $base.json: json, [0-9]+ bytes$"
      expect 0 "$cudasnap" convert "$base.json" "$base.back.pickle"
      expect 0 "$cudasnap" convert "$base.back.pickle" "$base.back.json"
      pairs+=("$input" "$base.json" "$input" "$base.back.pickle")
      cmp -s "$base.json" "$base.back.json" || fail "$input: JSON -> pickle -> JSON is not byte-identical"
      [[ $(stat -c %s "$base.back.pickle") -lt $(stat -c %s "$base.json") ]] || fail "$input: the pickle is not smaller"
    fi
  done
  same_content "${pairs[@]}" || fail "conversion changed the content"
  # The viewer's verdict survives conversion, and shared frame lists are checked too.
  expect 0 "$cudasnap" check "$dir/$(basename "$trace").back.pickle"
  expect 0 "$cudasnap" check "$dir/$(basename "$trace").json"
  # --format beats the extension; an existing OUT is replaced (the tool's one rule, with report,
  # export and recover), --force or not; IN itself never is.
  expect 0 "$cudasnap" convert --format pickle "$fixtures/memviz_minimal_valid.json" "$dir/p.json"
  [[ $(head -c 1 "$dir/p.json" | od -An -tx1 | tr -d ' ') == 80 ]] || fail "--format pickle wrote no pickle"
  expect 0 "$cudasnap" convert "$fixtures/memviz_minimal_valid.json" "$dir/p.json"
  [[ $(head -c 1 "$dir/p.json") == "{" ]] || fail "an existing OUT was not replaced with JSON"
  stdout_has "^wrote $dir/p.json: json"
  expect 0 "$cudasnap" convert --force --format pickle "$fixtures/memviz_minimal_valid.json" "$dir/p.json"
  [[ $(head -c 1 "$dir/p.json" | od -An -tx1 | tr -d ' ') == 80 ]] || fail "--force did not replace OUT"
  cp "$dir/p.json" "$dir/p.before"
  expect 1 "$cudasnap" convert "$dir/p.json" "$dir/p.json"
  one_stderr_line "p.json is the snapshot being read"
  cmp -s "$dir/p.json" "$dir/p.before" || fail "convert IN IN changed IN"
  expect 2 "$cudasnap" convert --format xml "$fixtures/memviz_minimal_valid.json" "$dir/x"
  one_stderr_line "--format xml is not accepted"
  ls "$dir" | grep -q '\.tmp\.' && fail "temporary files left behind: $(ls "$dir")"
  ;;

summary)
  api_snapshots
  read -r _ line < <(grep '^frame=allocate_weights' "$dir/api.out") || fail "no frame line from prog_snapshot_api"
  for f in "$dir/api.json" "$dir/api.pickle"; do
    expect 0 "$cudasnap" summary "$f"
    stdout_has "^$f: cudasnap [0-9.]+ snapshot, pid [0-9]+, trigger api, [0-9]+ devices?$"
    stdout_has '^\|                  PyTorch CUDA memory summary, device ID 0                 \|$'
    stdout_has '^\|        Metric         \| Cur Usage  \| Peak Usage \| Tot Alloc  \| Tot Freed  \|$'
    stdout_has '^\| Allocated memory      \|  10240 KiB \|'
    stdout_has '^\| Oversize GPU segments \|'
    top=$(grep -m1 -A1 '^top allocation sites by live bytes:$' "$dir/out" | tail -1)
    [[ $top =~ ^\ \ 9437184\ B\ \(9\.0\ MiB\)\ in\ 2\ blocks:\ allocate_weights\ .*prog_snapshot_api\.c:$line$ ]] ||
      fail "top live site: '$top'"
    peak=$(grep -m1 -A1 "^top allocation sites at the trace's peak" "$dir/out" | tail -1)
    [[ $peak == *"allocate_weights "*"prog_snapshot_api.c:$line" ]] || fail "top site at the peak: '$peak'"
    stdout_has '^blocks live at the snapshot: 2 blocks, 9437184 B \(9\.0 MiB\)$'
    stdout_has '^free bytes inside segments: [0-9]+ B.*: rounding [0-9]+ B.*, gaps [0-9]+ B'
    [[ -s $dir/err ]] && fail "stderr: $(cat "$dir/err")"
  done
  # A PyTorch snapshot: no cudasnap statistics, so the history columns are unknown.
  expect 0 "$cudasnap" summary --top 2 "$trace"
  stdout_has ": PyTorch snapshot, 1 device$"
  stdout_has '^\| Allocated memory      \|   1313 MiB \|      \?     \|'
  stdout_has '^note: no cudasnap statistics'
  live_rows=$(sed -n '/^top allocation sites by live bytes:$/,/^top allocation sites at/p' "$dir/out" | grep -c '^  ')
  [[ $live_rows -eq 2 ]] || fail "--top 2 listed $live_rows live sites"
  stdout_has "^top allocation sites at the trace's peak \([0-9]+ B \([0-9.]+ GiB\) live after event [0-9]+ of 5163\):$"
  expect 2 "$cudasnap" summary --top 0 "$trace"
  one_stderr_line "--top 0 is not accepted"
  ;;

sites)
  # Real PyTorch snapshots: the top sites are the user's own lines (model, optimizer, notebook
  # cell), not PyTorch's unwinder, allocator or dispatcher, installed packages or the interpreter.
  traces=$src/tests/data/traces
  # top_sites FILE N: the first N live sites with a stack ("(no stack)" rows left out)
  top_sites() {
    expect 0 "$cudasnap" summary --top 20 "$1"
    sed -n '/^top allocation sites by live bytes:$/,/^top allocation sites at/p' "$dir/out" |
      grep '^  [0-9]' | grep -v '(no stack)$' | head -n "$2" >"$dir/top"
    [[ $(wc -l <"$dir/top") -eq $2 ]] || fail "$1: fewer than $2 sites: $(cat "$dir/out")"
    grep -E 'torch::unwind|c10::|at::detail|_PyEval|site-packages|dist-packages|<frozen' "$dir/top" &&
      fail "$1: a framework or interpreter frame names a top site: $(cat "$dir/top")"
    return 0
  }
  top_sites "$traces/cs336-kkaitlyn111_memory_ctx128_fullstep.pickle" 2
  grep -qE ' step /home/c-kaitwang/assignment1/cs336_basics/optimizers\.py:82$' "$dir/top" || fail "optimizer step: $(cat "$dir/top")"
  grep -qE ' step /home/c-kaitwang/assignment1/cs336_basics/optimizers\.py:84$' "$dir/top" || fail "optimizer step: $(cat "$dir/top")"
  stdout_has '^blocks live at the snapshot: 1201 blocks, [0-9]+ B \(50\.8 GiB\); 324 blocks, [0-9]+ B \(12\.7 GiB\) of them allocated before recording began \(no stack\)$'
  # the backward pass (autograd's thread, no Python): the op's backward node, not the unwinder
  grep -qE '^  [0-9]+ B \(12\.6 GiB\) in 225 blocks: torch::autograd::generated::BmmBackward0::apply' "$dir/out" ||
    fail "backward site: $(cat "$dir/out")"
  top_sites "$traces/ftcourse-cranberrii_memory_snapshot.pickle" 1
  grep -qE ' <module> /tmp/ipykernel_114/3105878423\.py:21$' "$dir/top" || fail "notebook cell: $(cat "$dir/top")"
  top_sites "$trace" 2
  grep -qE ' forward .*cs336_basics.model\.py:39$' "$dir/top" || fail "model forward: $(cat "$dir/top")"
  # --site-frames N: the user's callers under each site, interpreter and torch frames skipped.
  expect 0 "$cudasnap" summary --top 3 --site-frames 2 "$traces/cs336-kkaitlyn111_memory_ctx128_fullstep.pickle"
  grep -A2 -m1 'optimizers\.py:82$' "$dir/out" | tail -2 >"$dir/ctx"
  [[ $(sed -n 1p "$dir/ctx") == '      from run_memory_foward_fullstep /home/c-kaitwang/assignment2/cs336-a2-systems/cs336_systems/benchmark.py:232' &&
     $(sed -n 2p "$dir/ctx") == '      from profile_memory_forward_fullstep /home/c-kaitwang/assignment2/cs336-a2-systems/cs336_systems/benchmark.py:328' ]] ||
    fail "--site-frames 2: $(cat "$dir/out")"
  expect 2 "$cudasnap" summary --site-frames 65 "$trace"
  one_stderr_line "--site-frames 65 is not accepted"
  ;;

run)
  expect 7 "$cudasnap" run -- sh -c 'exit 7'
  expect 0 "$cudasnap" run -- printf '[%s]\n' "two words" "" ' x '
  [[ $(cat "$dir/out") == $'[two words]\n[]\n[ x ]' ]] || fail "arguments changed: $(cat "$dir/out")"
  # The program's own options are its own, with or without --.
  expect 0 "$cudasnap" run printf '%s\n' -o --depth
  [[ $(cat "$dir/out") == $'-o\n--depth' ]] || fail "program options taken: $(cat "$dir/out")"
  # LD_PRELOAD: the library first, an existing entry kept after it.
  expect 0 env -u LD_PRELOAD "$cudasnap" run -- printenv LD_PRELOAD
  lib=$(cat "$dir/out")
  [[ $lib == /*/libcudasnap.so && -f $lib ]] || fail "LD_PRELOAD=$lib"
  expect 0 env LD_PRELOAD=libm.so.6 "$cudasnap" run -- printenv LD_PRELOAD
  [[ $(cat "$dir/out") == "$lib:libm.so.6" ]] || fail "existing LD_PRELOAD not kept: $(cat "$dir/out")"
  # Options become variables.
  expect 0 "$cudasnap" run -o "$dir/x-%p.pickle" --format pickle --stacks none --depth 8 --max-entries 5 \
    --free fence --no-cache --no-nvtx --signal USR2 --record "$dir/r-%p.csrec" -- env
  for v in "CUDASNAP_OUTPUT=$dir/x-%p.pickle" CUDASNAP_FORMAT=pickle CUDASNAP_STACKS=none \
    CUDASNAP_STACK_DEPTH=8 CUDASNAP_MAX_ENTRIES=5 CUDASNAP_FREE=fence CUDASNAP_CACHE=0 CUDASNAP_NVTX=0 \
    CUDASNAP_SIGNAL=USR2 "CUDASNAP_RECORD=$dir/r-%p.csrec"; do
    grep -qxF "$v" "$dir/out" || fail "no $v in the program's environment"
  done
  # Bad values: one line naming the option, the value and what is accepted; exit 2.
  expect 2 "$cudasnap" run --depth 300 -- true
  one_stderr_line "^cudasnap run: --depth '300' is not accepted: an integer from 1 to 256$"
  expect 2 "$cudasnap" run --signal KILL -- true
  one_stderr_line "^cudasnap run: --signal 'KILL' is not accepted: USR1, USR2"
  expect 2 "$cudasnap" run --format xml -- true
  one_stderr_line "--format 'xml' is not accepted"
  expect 2 "$cudasnap" run --free later -- true
  one_stderr_line "--free 'later' is not accepted: sync, fence or stream"
  expect 2 "$cudasnap" run -o 'snap-%q.json' -- true
  one_stderr_line "--output 'snap-%q.json' is not accepted"
  expect 2 "$cudasnap" run --record 'r-%n.csrec' -- true
  one_stderr_line "--record 'r-%n.csrec' is not accepted: .* specifiers %e %p %h %r and %%$"
  expect 2 "$cudasnap" run --max-entries -1 -- true
  one_stderr_line "--max-entries '-1' is not accepted"
  expect 2 "$cudasnap" run --bogus -- true
  one_stderr_line "unknown option --bogus"
  expect 2 "$cudasnap" run --depth
  one_stderr_line "option --depth needs a value"
  expect 2 "$cudasnap" run --
  one_stderr_line "expected the program to run"
  # A program that cannot be started: 127, as a shell says.
  expect 127 "$cudasnap" run -- "$dir/no-such-program"
  one_stderr_line "^cudasnap run: cannot run $dir/no-such-program: No such file or directory$"
  # Without the library next to it (../lib or ../interpose), the tool says where it looked.
  mkdir -p "$dir/bin" && cp "$cudasnap" "$dir/bin/cudasnap"
  expect 2 "$dir/bin/cudasnap" run -- true
  one_stderr_line "^cudasnap run: libcudasnap.so not found: looked for $dir/bin/../lib/libcudasnap.so and $dir/bin/../interpose/libcudasnap.so$"
  # The installed layout: bin/cudasnap finds lib/libcudasnap.so.
  mkdir -p "$dir/lib" && cp "$lib" "$dir/lib/libcudasnap.so"
  expect 0 env -u LD_PRELOAD "$dir/bin/cudasnap" run -- printenv LD_PRELOAD
  [[ $(cat "$dir/out") == "$dir/lib/libcudasnap.so" ]] || fail "installed layout: LD_PRELOAD=$(cat "$dir/out")"
  ;;

dump)
  mkfifo "$dir/in"
  (cd "$dir" && exec "$cudasnap" run -o 'snap-%n-%t.json' -- "$prog_hold" <"$dir/in" >"$dir/hold.out" 2>"$dir/hold.err") &
  pid=$!
  pids=$pid
  exec 3>"$dir/in"
  wait_for_line "$dir/hold.out" '^ready 1$'
  expect 0 "$cudasnap" dump "$pid"
  [[ $(cat "$dir/out") == "wrote $dir/snap-1-signal.json" ]] || fail "dump said: $(cat "$dir/out" "$dir/err")"
  expect 0 "$cudasnap" check "$dir/snap-1-signal.json"
  echo >&3
  wait_for_line "$dir/hold.out" '^ready 2$'
  expect 0 "$cudasnap" dump --timeout 20 "$pid"
  [[ $(cat "$dir/out") == "wrote $dir/snap-2-signal.json" ]] || fail "second dump said: $(cat "$dir/out" "$dir/err")"
  exec 3>&-
  wait "$pid" || fail "prog_hold exited $?: $(cat "$dir/hold.err")"
  pids=
  expect 0 "$cudasnap" summary "$dir/snap-2-signal.json"
  stdout_has '^  8388608 B \(8\.0 MiB\) in 1 block: hold_large .*prog_hold\.c:[0-9]+$'
  # A process without libcudasnap: said so, exit 1.
  sleep 30 &
  pids=$!
  expect 1 "$cudasnap" dump "$pids"
  one_stderr_line "^cudasnap dump: process $pids does not have libcudasnap loaded"
  kill "$pids"
  # Preloaded but no CUDA call yet: the signal would end it, so none is sent.
  "$cudasnap" run -- sleep 30 &
  pids=$!
  for _ in $(seq 100); do grep -q libcudasnap "/proc/$pids/maps" 2>/dev/null && break; sleep 0.05; done
  expect 1 "$cudasnap" dump "$pids"
  one_stderr_line "^cudasnap dump: process $pids has not started cudasnap yet"
  kill -0 "$pids" || fail "the process did not survive"
  kill "$pids"
  # Snapshots on signal turned off.
  CUDASNAP_SIGNAL=none "$cudasnap" run -- sleep 30 &
  pids=$!
  for _ in $(seq 100); do grep -q libcudasnap "/proc/$pids/maps" 2>/dev/null && break; sleep 0.05; done
  expect 1 "$cudasnap" dump "$pids"
  one_stderr_line "snapshots on signal turned off"
  kill "$pids"
  pids=
  expect 2 "$cudasnap" dump not-a-pid
  one_stderr_line "PID not-a-pid is not accepted"
  ;;

dump_all)
  # `dump --all` signals the processes whose live records it finds: this test's only, in its own
  # CUDASNAP_LIVE_DIR, and in a PID namespace of its own (with its own /proc) besides.
  if [[ -z ${CS_TEST_PIDNS:-} ]]; then
    for ns in "unshare -Urpf --mount-proc" "unshare -pf --mount-proc"; do
      if $ns true 2>/dev/null; then
        CS_TEST_PIDNS=1 exec $ns bash "$0" "$@"
      fi
    done
    echo "skip [dump_all]: no PID namespace (unshare) here"
    exit 0
  fi
  # Three held programs, each with its own pipe (two of job A, one of job B); one preloaded that
  # never calls CUDA; and a decoy that maps a file named libcudasnap* and handles SIGUSR1 itself,
  # which dump --all must never signal: only processes that registered as profiled are asked.
  pids=
  for i in 1 2 3; do
    mkfifo "$dir/in$i"
    job=jobA
    ((i == 3)) && job=jobB
    (cd "$dir" && SLURM_JOB_ID=$job exec "$cudasnap" run -o 'snap-%p-%n-%t.json' -- "$prog_hold" <"$dir/in$i" \
      >"$dir/hold$i.out" 2>"$dir/hold$i.err") &
    pids="$pids $!"
    eval "exec $((2 + i))>\"\$dir/in$i\""
    wait_for_line "$dir/hold$i.out" '^ready 1$'
  done
  "$cudasnap" run -- sleep 30 &
  idle=$!
  pids="$pids $idle"
  mkfifo "$dir/decoy.in"
  "$(dirname "$prog_hold")/cli_prog_decoy" "$dir/libcudasnap-decoy.so" <"$dir/decoy.in" >"$dir/decoy.out" &
  decoy=$!
  pids="$pids $decoy"
  exec 6>"$dir/decoy.in"
  wait_for_line "$dir/decoy.out" '^ready$'
  grep -q libcudasnap-decoy "/proc/$decoy/maps" || fail "the decoy does not map its file"
  for _ in $(seq 100); do grep -q libcudasnap "/proc/$idle/maps" 2>/dev/null && break; sleep 0.05; done
  expect 0 "$cudasnap" dump --all --timeout 10
  [[ $(grep -c '^wrote ' "$dir/out") -eq 3 ]] || fail "dump --all said: $(cat "$dir/out" "$dir/err")"
  [[ ! -s $dir/err ]] || fail "dump --all said on stderr: $(cat "$dir/err")"
  ! grep -q signalled "$dir/decoy.out" || fail "dump --all signalled the decoy"
  cp "$dir/out" "$dir/wrote"
  for p in $(awk '{print $2}' "$dir/wrote"); do
    [[ -f $p ]] || fail "no file $p"
    expect 0 "$cudasnap" check "$p"
  done
  [[ $(sed 's/.*snap-\([0-9]*\)-.*/\1/' "$dir/wrote" | sort -u | wc -l) -eq 3 ]] ||
    fail "not one snapshot per process: $(cat "$dir/wrote")"
  # --job: the processes of one job only
  expect 0 "$cudasnap" dump --all --job jobA --timeout 10
  [[ $(grep -c '^wrote ' "$dir/out") -eq 2 ]] || fail "dump --all --job jobA said: $(cat "$dir/out" "$dir/err")"
  expect 0 "$cudasnap" dump --all --job jobB --timeout 10
  [[ $(grep -c '^wrote ' "$dir/out") -eq 1 ]] || fail "dump --all --job jobB said: $(cat "$dir/out" "$dir/err")"
  grep -q "snap-${pids%% *}-" "$dir/out" && fail "job B's dump asked a process of job A"
  expect 1 "$cudasnap" dump --all --job jobC
  one_stderr_line "^cudasnap dump: no profiled process of job jobC on this machine$"
  expect 2 "$cudasnap" dump --job jobA 42
  ! grep -q signalled "$dir/decoy.out" || fail "dump --all signalled the decoy"
  exec 3>&- 4>&- 5>&- 6>&-
  kill "$idle"
  wait || true
  pids=
  # None left: said so, exit 1.
  expect 1 "$cudasnap" dump --all
  one_stderr_line "^cudasnap dump: no profiled process of this user on this machine$"
  expect 2 "$cudasnap" dump --all 42
  ;;

diff)
  # Two snapshots of prog_hold: hold_large appears between them.
  mkfifo "$dir/in"
  (cd "$dir" && exec "$cudasnap" run -o 'snap-%n-%t.json' -- "$prog_hold" <"$dir/in" >"$dir/hold.out" 2>"$dir/hold.err") &
  pids=$!
  exec 3>"$dir/in"
  wait_for_line "$dir/hold.out" '^ready 1$'
  expect 0 "$cudasnap" dump "$pids"
  echo >&3
  wait_for_line "$dir/hold.out" '^ready 2$'
  expect 0 "$cudasnap" dump "$pids"
  exec 3>&-
  wait "$pids" || fail "prog_hold failed: $(cat "$dir/hold.err")"
  pids=
  expect 0 "$cudasnap" convert "$dir/snap-2-signal.json" "$dir/snap-2.pickle"
  expect 0 "$cudasnap" diff "$dir/snap-1-signal.json" "$dir/snap-2.pickle"
  stdout_has "^$dir/snap-1-signal.json -> $dir/snap-2.pickle: live bytes by allocation site, largest change first:$"
  first=$(sed -n 2p "$dir/out")
  [[ $first =~ ^\ \ \+8388608\ B\ \(8\.0\ MiB\):\ 0\ B\ -\>\ 8388608\ B\ \(8\.0\ MiB\),\ 0\ -\>\ 1\ blocks:\ hold_large\ .*prog_hold\.c:[0-9]+$ ]] ||
    fail "first row: '$first'"
  stdout_has '^total: \+8388608 B \(8\.0 MiB\): 1048576 B \(1\.0 MiB\) -> 9437184 B \(9\.0 MiB\), 1 -> 2 blocks$'
  grep -q hold_small "$dir/out" && fail "an unchanged site is listed: $(cat "$dir/out")"
  # The other way round, the change is negative.
  expect 0 "$cudasnap" diff --top 1 "$dir/snap-2.pickle" "$dir/snap-1-signal.json"
  [[ $(sed -n 2p "$dir/out") == "  -8388608 B (8.0 MiB): "* ]] || fail "reverse diff: $(cat "$dir/out")"
  ;;

report)
  # report_page.py checks a page as a reader of its bytes: one data blob that parses, nothing
  # outside the file referred to, no "</" inside the blob; it prints the first device's peak.
  page_peak() { "$python" "$src/tests/cli/report_page.py" "$@"; }
  summary_peak() { # the first device's peak bytes, as `cudasnap summary` says
    "$cudasnap" summary "$1" | sed -nE "s/^top allocation sites at the trace's peak \(([0-9]+) B.*/\1/p" | head -1
  }
  api_snapshots
  inputs=("$dir/api.json" "$dir/api.pickle" "$src"/tests/data/traces/*.pickle)
  while IFS=$'\t' read -r file verdict _; do
    [[ $verdict == PASS ]] && inputs+=("$fixtures/$file")
  done <"$fixtures/MANIFEST.tsv"
  for input in "${inputs[@]}"; do
    out=$dir/$(basename "$input").html
    expect 0 "$cudasnap" report -o "$out" "$input"
    [[ $(cat "$dir/out") =~ ^wrote\ $out:\ [0-9]+\ bytes$ ]] || fail "report said: $(cat "$dir/out")"
    [[ -s $dir/err ]] && fail "$input: stderr: $(cat "$dir/err")"
    peak=$(page_peak "$out") || fail "$input: the page is not right: $peak"
    want=$(summary_peak "$input")
    [[ -z $want || $peak == "$want" ]] || fail "$input: the page's peak $peak is not summary's $want"
  done
  # Snapshots the viewer rejects still get a page, or one line saying why not: never a crash.
  for input in "$fixtures"/*.json "$fixtures"/*.pickle; do
    "$cudasnap" report -o "$dir/fixture.html" "$input" >"$dir/out" 2>"$dir/err"
    rc=$?
    if [[ $rc -eq 0 ]]; then
      page_peak "$dir/fixture.html" >/dev/null || fail "$input: the page is not right"
    else
      [[ $rc -eq 1 ]] || fail "$input: report exited $rc"
      one_stderr_line "^$input: [^:]+: "
      "$cudasnap" summary "$input" >/dev/null 2>&1 && fail "$input: report refused what summary reads"
    fi
  done
  # The API snapshot: allocate_weights is the top site at the peak, with its stack.
  page_peak --top allocate_weights --frame main "$dir/api.json.html" >/dev/null || fail "api.json: no allocate_weights site with its stack"
  # A hostile frame name cannot end the data element or start a script.
  "$python" - "$fixtures/memviz_minimal_valid.json" "$dir/hostile.json" <<'PY' || fail "cannot write hostile.json"
import json, sys
snap = json.load(open(sys.argv[1]))
for seg in snap["segments"]:
    for block in seg["blocks"]:
        for frame in block.get("frames", []):
            frame["name"] = "</script><script>alert(1)</script><!--"
json.dump(snap, open(sys.argv[2], "w"))
PY
  expect 0 "$cudasnap" report "$dir/hostile.json"
  [[ $(grep -o '</script>' "$dir/hostile.html" | wc -l) -eq 2 ]] || fail "a frame name ended a script element"
  page_peak --site '</script><script>alert(1)</script><!--' "$dir/hostile.html" >/dev/null || fail "the hostile name did not survive"
  # OUT by default: FILE's extension replaced by .html (or .html added); an existing OUT replaced.
  cp "$dir/api.pickle" "$dir/snap.pkl"
  cp "$dir/api.json" "$dir/plain"
  expect 0 "$cudasnap" report "$dir/snap.pkl"
  [[ $(cat "$dir/out") == "wrote $dir/snap.html: "* && -s $dir/snap.html ]] || fail "default OUT: $(cat "$dir/out")"
  expect 0 "$cudasnap" report "$dir/snap.pkl"
  expect 0 "$cudasnap" report "$dir/plain"
  [[ -s $dir/plain.html ]] || fail "no plain.html"
  # Never over the snapshot itself, never a half-written page.
  cp "$dir/api.json" "$dir/keep.json"
  expect 1 "$cudasnap" report -o "$dir/keep.json" "$dir/keep.json"
  one_stderr_line "^cudasnap report: $dir/keep.json is the snapshot itself"
  cmp -s "$dir/keep.json" "$dir/api.json" || fail "the snapshot was changed"
  expect 1 "$cudasnap" report -o "$dir/no-such-dir/x.html" "$dir/api.json"
  one_stderr_line "^$dir/no-such-dir/x.html: cannot write: No such file or directory$"
  ls "$dir" | grep -q '\.tmp\.' && fail "temporary files left behind: $(ls "$dir")"
  expect 2 "$cudasnap" report -o "" "$dir/api.json"
  one_stderr_line "^cudasnap report: --output '' is not accepted"
  # Several files: the job page, which needs a name.
  expect 2 "$cudasnap" report "$dir/api.json" "$dir/api.pickle"
  one_stderr_line "^cudasnap report: several FILEs make one page for the job: give it a name with -o OUT.html$"
  expect 0 "$cudasnap" report -o "$dir/job.html" "$dir/api.json" "$dir/api.pickle"
  stdout_has "^wrote $dir/job.html: [0-9]+ bytes$"
  # the two are snapshots of one process: one row, its latest, with its own report's data
  "$python" - "$dir/job.html" <<'PY' || fail "job page data"
import json, re, sys
html = open(sys.argv[1]).read()
data = json.loads(re.search(r'<script type="application/json" id="cs-data">(.*?)</script>', html, re.S).group(1))
rows = data["job"]["ranks"]
assert len(rows) == 1 and len(data["details"]) == 1, (len(rows), len(data["details"]))
assert rows[0]["curve"] and data["details"][0]["devices"], rows[0]
PY
  expect 1 "$cudasnap" report -o "$dir/job2.html" "$dir/api.json" "$dir/no-such.json"
  [[ -e $dir/job2.html ]] && fail "a job page with a missing file"
  ;;

bad_input)
  # Truncated, garbled, empty and missing files: non-zero exit, one line on stderr, no output
  # file, for every subcommand that reads files.
  head -c 100 "$fixtures/memviz_minimal_valid.p2.pickle" >"$dir/truncated.pickle"
  head -c 100 "$fixtures/memviz_minimal_valid.json" >"$dir/truncated.json"
  printf '\x80\x02\xff\xfe garbage \x00\x01 bytes' >"$dir/garbage.pickle"
  printf 'this is not a snapshot\n' >"$dir/garbage.txt"
  : >"$dir/empty.json"
  good=$fixtures/memviz_minimal_valid.json
  for bad in truncated.pickle truncated.json garbage.pickle garbage.txt empty.json missing.json; do
    f=$dir/$bad
    for cmd in "summary $f" "check $f" "convert $f $dir/out.pickle" "convert $f $dir/out.json" "diff $f $good" \
      "diff $good $f" "report -o $dir/out.html $f"; do
      # shellcheck disable=SC2086 # the words of cmd are the arguments
      expect nonzero "$cudasnap" $cmd
      if [[ $bad == missing.json ]]; then
        one_stderr_line "^$f: cannot read: No such file or directory$"
      else
        one_stderr_line "^$f: byte [0-9]+: "
      fi
      [[ -e $dir/out.pickle || -e $dir/out.json || -e $dir/out.html ]] && fail "$cmd left an output file"
      ls "$dir" | grep -q '\.tmp\.' && fail "$cmd left a temporary file"
    done
  done
  # Files that parse but whose numbers mean nothing: summary, diff and report refuse them with one line,
  # FILE: WHERE: problem (check calls each an error too).
  printf '{}\n' >"$dir/empty-dict.json"
  printf '{"segments":[{"device":0,"address":1e999,"total_size":-4096,"stream":0,"blocks":[{"size":-4096,"requested_size":-4096,"state":"active_allocated"}]}],"device_traces":[[]]}\n' >"$dir/infinite.json"
  printf '{"segments":[{"device":0,"address":1048576,"total_size":-4096,"stream":0,"blocks":[{"size":-4096,"requested_size":1,"state":"active_allocated"}]}],"device_traces":[[]]}\n' >"$dir/negative.json"
  declare -A problem=([empty-dict.json]="\(top level\): neither 'segments' \(missing\) nor 'device_traces' \(missing\) is a list"
    [infinite.json]="segments\[0\]\.address: is not finite \(inf\)"
    [negative.json]="segments\[0\]\.total_size: 2 negative address/size values")
  for bad in empty-dict.json infinite.json negative.json; do
    f=$dir/$bad
    for cmd in "summary $f" "diff $f $good" "diff $good $f" "report -o $dir/out.html $f"; do
      # shellcheck disable=SC2086
      expect 1 "$cudasnap" $cmd
      one_stderr_line "^$f: ${problem[$bad]}"
      [[ -s $dir/out ]] && fail "$cmd printed: $(cat "$dir/out")"
      [[ -e $dir/out.html ]] && fail "$cmd left a page"
    done
    expect 1 "$cudasnap" check "$f"
    stdout_has "^$f: error: "
  done
  # What the viewer fails on but still has meaningful numbers is summarized: a legacy bare list of
  # segments (torch.cuda.memory_snapshot()), a snapshot without device_traces; so are files that
  # only draw warnings.
  printf '[{"device":0,"address":1048576,"total_size":4096,"stream":0,"blocks":[{"size":4096,"requested_size":4000,"state":"active_allocated"}]}]\n' >"$dir/legacy.json"
  expect 0 "$cudasnap" report -o "$dir/legacy.html" "$dir/legacy.json"
  expect 0 "$cudasnap" summary "$dir/legacy.json"
  stdout_has "^$dir/legacy.json: PyTorch snapshot, 1 device$"
  stdout_has '^blocks live at the snapshot: 1 block, 4000 B \(3\.9 KiB\); 1 block, 4000 B \(3\.9 KiB\) of them allocated before recording began \(no stack\)$'
  [[ -s $dir/err ]] && fail "stderr: $(cat "$dir/err")"
  for ok in memviz_bad_missing_device_traces.json memviz_silent_no_time_us.json memviz_silent_unknown_block_state.json; do
    expect 0 "$cudasnap" summary "$fixtures/$ok"
    [[ -s $dir/err ]] && fail "$ok: stderr: $(cat "$dir/err")"
    expect 0 "$cudasnap" diff "$fixtures/$ok" "$good"
  done
  # A directory is not a file either.
  expect 1 "$cudasnap" summary "$dir"
  one_stderr_line ": cannot read: Is a directory$"
  # Unknown options and missing operands: exit 2 and one line.
  for cmd in summary check convert diff dump report; do
    expect 2 "$cudasnap" $cmd --bogus
    one_stderr_line "^cudasnap $cmd: unknown option --bogus"
    expect 2 "$cudasnap" $cmd
    one_stderr_line "^cudasnap $cmd: expected "
  done
  ;;

*) fail "unknown test" ;;
esac
exit 0
