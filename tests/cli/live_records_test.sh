#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# live_records_test.sh TEST CUDASNAP PROG_LIVE PROG_FORGE PYTHON SOURCE_DIR
#
# The live records on a shared node, tried as another user would (issue 45; docs/live.md, "Where
# the records live" and "What the tools trust"). TEST is one of
#   squat      another user takes the names of a user's records first (a directory, a file, a link,
#              the old layout's file names): the user's programs still register, and are seen once
#   forge      10,000 records of another user, their sequence words odd (the dead ones' and some
#              naming that user's live processes), and one with no string terminated: top and
#              metrics list in under a second, see the real program, remove the dead records,
#              read no byte past a field (valgrind)
#   cap        another user's 140 processes with 64 devices and 16 sites each: at most 128 of them
#              and 256 series each reach the exposition, which promtool still takes
#   signal     a record whose owner rewrote its signal to KILL: dump --all sends nothing
#   race       the pid of a process that dump --all checked is taken by another user's process
#              while dump globs the first one's output pattern (tests/cli/live_race.py)
#   container  a program in its own PID namespace (unshare --pid --mount-proc, a private tmpfs on
#              /dev/shm) writing to a shared CUDASNAP_LIVE_DIR: seen under its host pid with its
#              pod labels, dump and dump --all reach it, a reader that cannot see it leaves it
#   dir        CUDASNAP_LIVE_DIR: where records go and are read; bad values
#   isolation  another profiled program of the same user runs with the default directory: the
#              live tests (live_test.sh json, top) still pass
#   manifest   docs/live.md's DaemonSet manifest parsed, its systemd unit through systemd-analyze
# Every group but manifest runs as root (setpriv gives the other users: uids 65530-65533) in a
# mount namespace with a private tmpfs on /dev/shm, so the machine's own records are never read;
# exit 77 (skipped) when not root or without setpriv/unshare. PROG_LIVE is tests/cli/prog_live.c on
# the fake driver, PROG_FORGE tests/cli/prog_forge.c.
set -u
[[ -n ${CS_TRACE:-} ]] && set -x
test=$1 cudasnap=$(realpath "$2") prog=$(realpath "$3") forge=$(realpath "$4") python=$5 src=$(realpath "$6")
here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "FAIL [$test]: $*" >&2; exit 1; }
skip() { echo "skip [$test]: $*"; exit 77; }

if [[ $test != manifest && -z ${CS_TEST_LIVE_NS:-} ]]; then
  [[ $(id -u) -eq 0 ]] || skip "not root: the other users come from setpriv"
  command -v setpriv >/dev/null || skip "no setpriv"
  # a mount namespace (a private /dev/shm), and but for container (whose exporter is in the PID
  # namespace the machine started with, as a DaemonSet's with hostPID is) a PID namespace too: its
  # own ns_last_pid for the race, no other test's processes
  ns=(unshare -m -p -f --mount-proc)
  [[ $test == container ]] && ns=(unshare -m)
  "${ns[@]}" true 2>/dev/null || skip "no unshare"
  CS_TEST_LIVE_NS=1 exec "${ns[@]}" bash "$0" "$@"
fi
if [[ $test != manifest ]]; then
  mount -t tmpfs -o mode=1777,size=512m cudasnap-test /dev/shm || fail "cannot mount a tmpfs on /dev/shm"
fi
unset CUDASNAP_LIVE_DIR
A=65532 B=65533 C=65531 D=65530 # users: A, C, D victims, B the other user
dir=$(mktemp -d)
chmod 755 "$dir"
work=$dir/work # the programs' current directory, where they write snapshots
mkdir -m 1777 "$work"
pids=
cleanup() {
  for p in $pids; do kill -9 "$p" 2>/dev/null; done
  for p in $pids; do wait "$p" 2>/dev/null; done
  mountpoint -q "$dir/tree" 2>/dev/null && umount "$dir/tree"
  rm -rf "$dir"
}
trap cleanup EXIT
ms() { echo $(($(date +%s%N) / 1000000)); }
as() { # as UID COMMAND...: COMMAND as that user (0: as root)
  local user=$1
  shift
  if ((user == 0)); then "$@"; else setpriv --reuid="$user" --regid="$user" --clear-groups -- "$@"; fi
}

# the programs' fifos closed in a process about to start, so that each program sees its own end
close_fifos() {
  local v
  for v in ${!fd_*}; do eval "exec ${!v}>&-"; done
}
# start NAME UID [VAR=value...]: prog_live under cudasnap as UID, its commands through a fifo;
# sets $pid_NAME
start() {
  local name=$1 user=$2
  shift 2
  mkfifo "$dir/$name.in"
  local as_user=()
  ((user != 0)) && as_user=(setpriv --reuid="$user" --regid="$user" --clear-groups --)
  (
    close_fifos
    cd "$work" && exec env "$@" "${as_user[@]}" "$cudasnap" run -- "$prog"
  ) <"$dir/$name.in" >"$dir/$name.out" 2>"$dir/$name.err" &
  local p=$!
  pids="$pids $p"
  eval "exec {fd_$name}>\"\$dir/\$name.in\""
  eval "pid_$name=$p"
  wait_ready "$name" 1
}
wait_ready() { # wait_ready NAME N: until the program printed N "ready" lines
  for _ in $(seq 200); do
    (($(grep -c '^ready$' "$dir/$1.out" 2>/dev/null || true) >= $2)) && return 0
    sleep 0.05
  done
  fail "$1 not ready: $(cat "$dir/$1.err")"
}
send() { # send NAME N COMMAND: one command, then wait for its N-th ready
  local fd
  eval "fd=\$fd_$1"
  echo "$3" >&"$fd"
  wait_ready "$1" "$2"
}
sleeper() { # sleeper UID: a process of that user, its pid in $sleeper
  (
    close_fifos
    exec setpriv --reuid="$1" --regid="$1" --clear-groups -- sleep 300
  ) &
  sleeper=$!
  pids="$pids $sleeper"
}
# json_rows FILE PID: "allocated_bytes labels" of every row of PID in top --once --json's FILE
json_rows() {
  "$python" - "$1" "$2" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for p in doc["processes"]:
    if p["pid"] == int(sys.argv[2]):
        print(p["allocated_bytes"], json.dumps(p.get("labels", {}), sort_keys=True))
PY
}
# until_seen PID BYTES: top --once --json shows PID holding BYTES (5 s at most)
until_seen() {
  for _ in $(seq 50); do
    "$cudasnap" top --once --json >"$dir/top.json" 2>"$dir/top.err" || fail "top: $(cat "$dir/top.err")"
    [[ $(json_rows "$dir/top.json" "$1" | cut -d' ' -f1) == "$2" ]] && return 0
    sleep 0.1
  done
  fail "top never showed $1 holding $2: $(cat "$dir/top.json" "$dir/top.err")"
}
pid_ns=$(stat -L -c %i /proc/self/ns/pid)

case $test in
squat)
  # B takes every name A, C and D could use first: the new layout's directory (as B's directory, a
  # link to it, a file) and the old layout's record names for the pids to come
  as $B mkdir -m 777 /dev/shm/b-own
  as $B mkdir -m 777 /dev/shm/cudasnap-live-$A
  as $B ln -s /dev/shm/b-own /dev/shm/cudasnap-live-$C
  as $B touch /dev/shm/cudasnap-live-$D
  for u in $A $C $D; do
    as $B mkdir -m 777 /dev/shm/cudasnap-live-$u-squat
    as $B touch $(printf "/dev/shm/cudasnap-live-$u-$pid_ns-%d " $(seq 2 400))
  done
  for u in $A $C $D; do
    start u$u $u
    send u$u 2 "hold 0 4"
    eval "p=\$pid_u$u"
    grep -q 'cannot make the live record' "$dir/u$u.err" && fail "$u did not register: $(cat "$dir/u$u.err")"
    until_seen "$p" 4194304
    # B's copy of the record, in a directory of B's named like A's: never taken
    as $B "$forge" make /dev/shm/cudasnap-live-$u-squat "$p" uid=$u signal=9 bytes=999 ||
      fail "forge"
    as $B "$forge" make /dev/shm/cudasnap-live-$u "$p" uid=$u signal=9 bytes=999 2>/dev/null
    "$cudasnap" top --once --json >"$dir/top.json" || fail "top"
    [[ $(json_rows "$dir/top.json" "$p") == "4194304 {}" ]] || fail "$u's rows: $(json_rows "$dir/top.json" "$p")"
    # where it went: a directory of its own, 0700, its record 0600
    rec=$(find /dev/shm -name "$pid_ns-$p" -user $u)
    [[ $(wc -l <<<"$rec") -eq 1 && -n $rec ]] || fail "$u's record: '$rec'"
    [[ $(stat -c '%a %U' "$(dirname "$rec")") == "700 $u" || $(stat -c '%a %u' "$(dirname "$rec")") == "700 $u" ]] ||
      fail "$u's directory: $(stat -c '%a %u' "$(dirname "$rec")")"
    [[ $(stat -c %a "$rec") == 600 ]] || fail "$u's record mode $(stat -c %a "$rec")"
    eval "dir_u$u=\$(dirname \"\$rec\")"
  done
  # root's dump --all reaches each once, with its own signal; none is killed
  "$cudasnap" dump --all --all-users --timeout 10 >"$dir/dump.out" 2>"$dir/dump.err" ||
    fail "dump --all: $(cat "$dir/dump.out" "$dir/dump.err")"
  [[ $(grep -c '^wrote ' "$dir/dump.out") -eq 3 ]] || fail "dump --all: $(cat "$dir/dump.out" "$dir/dump.err")"
  for u in $A $C $D; do
    eval "p=\$pid_u$u"
    kill -0 "$p" || fail "$u's program was killed"
  done
  # with its name taken, every process of a user has a directory of its own: 40 are all seen
  seen=
  for i in $(seq 40); do
    sleeper $C
    as $C mkdir -m 700 /dev/shm/cudasnap-live-$C-own$i
    as $C "$forge" make /dev/shm/cudasnap-live-$C-own$i "$sleeper" bytes=$((i << 20))
    seen="$seen $sleeper"
  done
  # and a record copied into another directory of the user's is one process still
  as $C mkdir -m 700 /dev/shm/cudasnap-live-$C-copy
  first=${seen# }
  as $C cp /dev/shm/cudasnap-live-$C-own1/"$pid_ns-${first%% *}" /dev/shm/cudasnap-live-$C-copy/ || fail "cp"
  "$cudasnap" top --once --json >"$dir/top.json" 2>"$dir/top.err" || fail "top: $(cat "$dir/top.err")"
  for p in $seen; do
    [[ $(json_rows "$dir/top.json" "$p" | wc -l) -eq 1 ]] || fail "$C's process $p: $(json_rows "$dir/top.json" "$p")"
  done
  # a program that ends takes its record and a directory of its own along
  eval "exec $fd_u65532>&-"
  wait "$pid_u65532" || fail "A's program failed: $(cat "$dir/u65532.err")"
  [[ ! -e $dir_u65532 ]] || fail "A's directory outlived it: $(ls -la "$dir_u65532")"
  ;;

forge)
  start a 0
  send a 2 "hold 0 4"
  # B: 9,950 records of processes that do not exist (above pid_max), their sequence words odd
  as $B mkdir -m 700 /dev/shm/cudasnap-live-$B
  as $B "$forge" make /dev/shm/cudasnap-live-$B 100000 count=9950 seq=1 || fail "forge"
  # D: 50 of its live processes' records, odd too, so they pass the process check
  as $D mkdir -m 700 /dev/shm/cudasnap-live-$D
  for _ in $(seq 50); do
    sleeper $D
    as $D "$forge" make /dev/shm/cudasnap-live-$D "$sleeper" seq=3
  done
  # C: one whole record with every string filled to its field's end
  as $C mkdir -m 700 /dev/shm/cudasnap-live-$C
  sleeper $C
  filled=$sleeper
  as $C "$forge" make /dev/shm/cudasnap-live-$C "$filled" fill=1 devices=2 sites=16
  until_seen "$pid_a" 4194304
  as $B "$forge" make /dev/shm/cudasnap-live-$B 100000 count=9950 seq=1 # again, those removed
  t0=$(ms)
  "$cudasnap" top --once --json >"$dir/top.json" 2>"$dir/top.err" || fail "top: $(cat "$dir/top.err")"
  t=$(($(ms) - t0))
  echo "top --once --json over 10,001 forged records: $t ms"
  ((t < 1000)) || fail "top --once took $t ms"
  [[ $(json_rows "$dir/top.json" "$pid_a") == "4194304 {}" ]] || fail "a: $(cat "$dir/top.json")"
  grep -q "passed over: 50 records whose sequence word stayed odd" "$dir/top.err" || fail "top said: $(cat "$dir/top.err")"
  grep -q "records of 1 user beyond the caps" "$dir/top.err" || fail "top said: $(cat "$dir/top.err")"
  # the record with no terminator: its strings end at their fields' ends
  "$python" - "$dir/top.json" "$filled" <<'PY' || fail "the filled record: $(head -c 3000 "$dir/top.json")"
import json, sys
rows = [p for p in json.load(open(sys.argv[1]))["processes"] if p["pid"] == int(sys.argv[2])]
assert len(rows) == 2, rows
for p in rows:
    assert p["host"] == "x" * 255, len(p["host"])
    assert p["phase"] == "x" * 127, p["phase"]
    assert [len(s["site"]) for s in p["top_sites"]] == [239] * 16, p["top_sites"]
    assert p["labels"] == {"k" * 31: "v" * 255}, p["labels"]
PY
  as $B "$forge" make /dev/shm/cudasnap-live-$B 100000 count=9950 seq=1
  t0=$(ms)
  "$cudasnap" metrics --once >"$dir/m.txt" 2>"$dir/m.err" || fail "metrics: $(cat "$dir/m.err")"
  t=$(($(ms) - t0))
  echo "metrics --once over 10,001 forged records: $t ms"
  ((t < 1000)) || fail "metrics --once took $t ms"
  grep -q "^cudasnap_allocated_bytes{pid=\"$pid_a\",.*} 4194304$" "$dir/m.txt" || fail "a in metrics: $(grep allocated "$dir/m.txt")"
  grep -q '^# cudasnap: passed over: ' "$dir/m.txt" || fail "no comment on what was passed over"
  if command -v promtool >/dev/null; then
    promtool check metrics <"$dir/m.txt" >"$dir/promtool.out" 2>&1 || fail "promtool: $(cat "$dir/promtool.out")"
  fi
  # the dead ones are removed as they are read, the cap's worth at a time: never read forever
  for _ in $(seq 15); do
    "$cudasnap" top --once >/dev/null 2>&1
    [[ -z $(ls /dev/shm/cudasnap-live-$B) ]] && break
  done
  left=$(ls /dev/shm/cudasnap-live-$B | wc -l)
  ((left == 0)) || fail "$left of B's dead records left"
  [[ $(ls /dev/shm/cudasnap-live-$D | wc -l) -eq 50 ]] || fail "D's records of live processes were removed"
  # nothing read past a field: valgrind on the table and the JSON
  if command -v valgrind >/dev/null; then
    for args in "--once" "--once --json"; do
      valgrind -q --error-exitcode=99 "$cudasnap" top $args >/dev/null 2>"$dir/vg.err"
      (($? != 99)) || fail "valgrind, top $args: $(head -c 3000 "$dir/vg.err")"
    done
  fi
  ;;

cap)
  start a 0
  send a 2 "hold 0 4"
  as $B mkdir -m 700 /dev/shm/cudasnap-live-$B
  for _ in $(seq 140); do
    sleeper $B
    as $B "$forge" make /dev/shm/cudasnap-live-$B "$sleeper" devices=64 sites=16
  done
  until_seen "$pid_a" 4194304
  "$cudasnap" metrics --once >"$dir/m.txt" 2>"$dir/m.err" || fail "metrics: $(cat "$dir/m.err")"
  echo "exposition: $(wc -c <"$dir/m.txt") bytes, $(grep -vc '^#' "$dir/m.txt") samples"
  if command -v promtool >/dev/null; then
    promtool check metrics <"$dir/m.txt" >"$dir/promtool.out" 2>&1 || fail "promtool: $(cat "$dir/promtool.out")"
  fi
  "$python" - "$dir/m.txt" "$pid_a" <<'PY' || fail "caps"
import collections, re, sys
per = collections.Counter()
for line in open(sys.argv[1]):
    m = re.match(r'^cudasnap_\w+\{pid="(\d+)",.*job="forged"', line)
    if m:
        per[m.group(1)] += 1
assert 0 < len(per) <= 128, len(per)
assert max(per.values()) <= 256, max(per.values())
text = open(sys.argv[1]).read()
assert f'cudasnap_allocated_bytes{{pid="{sys.argv[2]}",' in text
assert "# cudasnap: passed over: records of 1 user beyond the caps (128 records" in text, text[:500]
assert re.search(r"^# cudasnap: process \d+: 1025 of its 1281 series left out \(at most 256 per process\)$", text, re.M)
PY
  "$cudasnap" top --once >/dev/null 2>"$dir/top.err" || fail "top"
  grep -q 'beyond the caps' "$dir/top.err" || fail "top said: $(cat "$dir/top.err")"
  ;;

signal)
  start a $A
  send a 2 "hold 0 1"
  until_seen "$pid_a" 1048576
  rec=$(find /dev/shm -type f -name "*$pid_ns-$pid_a")
  # its owner makes the record name KILL: nothing is sent
  as $A "$forge" set "$rec" signal=9 || fail "set"
  "$cudasnap" dump --all --all-users --timeout 5 >"$dir/dump.out" 2>"$dir/dump.err" && fail "dump --all sent something"
  sleep 0.3
  kill -0 "$pid_a" 2>/dev/null || fail "the record's signal was sent: a's program is gone"
  grep -q "its live record names signal 9, but it listens on USR1 (its CUDASNAP_SIGNAL); nothing sent" "$dir/dump.err" ||
    fail "dump said: $(cat "$dir/dump.err")"
  # put back, it is asked as usual
  as $A "$forge" set "$rec" signal=10
  "$cudasnap" dump --all --all-users --timeout 10 >"$dir/dump.out" 2>"$dir/dump.err" ||
    fail "dump --all: $(cat "$dir/dump.out" "$dir/dump.err")"
  grep -q "^wrote $work/cudasnap-.*-$pid_a-1-signal.json$" "$dir/dump.out" || fail "dump: $(cat "$dir/dump.out")"
  ;;

race)
  export CUDASNAP_LIVE_DIR=$dir/live
  mkdir -m 1777 "$CUDASNAP_LIVE_DIR"
  tree=$dir/tree
  # 32^3 directories for dump's glob of the owner's pattern to walk, on a tmpfs (made and gone fast)
  mkdir "$tree" && mount -t tmpfs -o mode=755 cudasnap-tree "$tree" || fail "cannot mount a tmpfs on $tree"
  "$python" -c '
import os, sys
for i in range(32):
    for j in range(32):
        for k in range(32):
            os.makedirs(f"{sys.argv[1]}/{i}/{j}/{k}", mode=0o755)' "$tree"
  "$python" "$here/live_race.py" "$cudasnap" "$prog" "$tree" "$work" $A $B || fail "the race"
  ;;

container)
  export CUDASNAP_LIVE_DIR=$dir/live # a hostPath volume, for the pods and the exporter
  mkdir -m 1777 "$CUDASNAP_LIVE_DIR"
  start host 0 # a program of this PID namespace
  send host 2 "hold 0 2"
  # pod: its own PID namespace and /proc, a private /dev/shm, the shared directory, the downward API
  mkfifo "$dir/pod.in" "$dir/pod2.in"
  pod() { # pod NAME VAR=value...: prog_live in a container of its own
    local name=$1
    shift
    unshare -m -p -f --mount-proc env "$@" sh -c \
      "mount -t tmpfs -o mode=1777 pod-shm /dev/shm && cd '$work' && exec '$cudasnap' run -- '$prog'" \
      <"$dir/$name.in" >"$dir/$name.out" 2>"$dir/$name.err" &
    pids="$pids $!"
    eval "unshare_$name=$!"
    eval "exec {fd_$name}>\"\$dir/\$name.in\""
    wait_ready "$name" 1
  }
  pod pod POD_NAME=trainer-0 POD_NAMESPACE=ml CUDASNAP_LABELS=team=vision
  send pod 2 "hold 0 4"
  pod_pid=$(cat "/proc/$unshare_pod/task/$unshare_pod/children" | tr -d ' ')
  [[ -n $pod_pid && $(awk '/^NSpid:/ {print $NF}' "/proc/$pod_pid/status") == 1 ]] || fail "the pod's program: '$pod_pid'"
  pids="$pids $pod_pid"
  # and a pod that keeps its records in its own /dev/shm: never seen here, and none the worse
  pod pod2 CUDASNAP_LIVE_DIR=
  send pod2 2 "hold 0 1"
  until_seen "$pod_pid" 4194304
  [[ $(json_rows "$dir/top.json" "$pod_pid") == '4194304 {"namespace": "ml", "pod": "trainer-0", "team": "vision"}' ]] ||
    fail "the pod's row: $(json_rows "$dir/top.json" "$pod_pid")"
  [[ $(json_rows "$dir/top.json" "$pid_host") == '2097152 {}' ]] || fail "the host's row: $(cat "$dir/top.json")"
  [[ $("$python" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["processes"]))' "$dir/top.json") == 2 ]] ||
    fail "not two rows: $(cat "$dir/top.json")"
  [[ -f $CUDASNAP_LIVE_DIR/cudasnap-live-0/$(stat -L -c %i "/proc/$pod_pid/ns/pid")-1 ]] || fail "the pod's record"
  "$cudasnap" metrics --once >"$dir/m.txt" || fail "metrics"
  grep -qE "^cudasnap_allocated_bytes\{pid=\"$pod_pid\",.*,host=\"[^\"]*\",team=\"vision\",pod=\"trainer-0\",namespace=\"ml\",device=\"0\"\} 4194304$" \
    "$dir/m.txt" || fail "the pod's samples: $(grep allocated "$dir/m.txt")"
  if command -v promtool >/dev/null; then
    promtool check metrics <"$dir/m.txt" >"$dir/promtool.out" 2>&1 || fail "promtool: $(cat "$dir/promtool.out")"
  fi
  # dump PID by its host pid, and dump --all, reach it (it names its file with its own pid, 1)
  "$cudasnap" dump --timeout 10 "$pod_pid" >"$dir/dump.out" 2>"$dir/dump.err" || fail "dump: $(cat "$dir/dump.err")"
  grep -qx "wrote $work/cudasnap-.*-1-1-signal.json" "$dir/dump.out" || fail "dump: $(cat "$dir/dump.out")"
  "$cudasnap" dump --all --timeout 10 >"$dir/dump.out" 2>"$dir/dump.err" || fail "dump --all: $(cat "$dir/dump.err")"
  [[ $(grep -c '^wrote ' "$dir/dump.out") -eq 2 ]] || fail "dump --all: $(cat "$dir/dump.out" "$dir/dump.err")"
  grep -qx "wrote $work/cudasnap-.*-1-2-signal.json" "$dir/dump.out" || fail "dump --all: $(cat "$dir/dump.out")"
  # a reader in another PID namespace sees neither, and removes neither: it cannot tell
  unshare -p -f --mount-proc "$cudasnap" top --once --json >"$dir/other.json" || fail "top in another namespace"
  grep -q '"processes":\[\]' "$dir/other.json" || fail "another namespace saw: $(cat "$dir/other.json")"
  [[ $(ls "$CUDASNAP_LIVE_DIR/cudasnap-live-0" | wc -l) -eq 2 ]] || fail "a record was removed by a reader that cannot see it"
  # the pod is killed: it leaves the view, and its record is removed by a reader in the PID
  # namespace the machine started with, which sees every namespace there is
  kill -9 "$pod_pid"
  wait "$unshare_pod" 2>/dev/null
  "$cudasnap" top --once --json >"$dir/top.json"
  [[ -z $(json_rows "$dir/top.json" "$pod_pid") ]] || fail "the killed pod is still shown"
  if [[ $pid_ns == $((0xEFFFFFFC)) ]]; then
    [[ $(ls "$CUDASNAP_LIVE_DIR/cudasnap-live-0" | wc -l) -eq 1 ]] || fail "the killed pod's record was not removed"
  fi
  ;;

dir)
  # a relative value: one line, and /dev/shm
  start rel 0 CUDASNAP_LIVE_DIR=relative/live
  send rel 2 "hold 0 1"
  [[ $(grep -c 'CUDASNAP_LIVE_DIR=relative/live is not accepted (an absolute path of at most 255 bytes' "$dir/rel.err") -eq 1 &&
    $(wc -l <"$dir/rel.err") -eq 1 ]] || fail "the program said: $(cat "$dir/rel.err")"
  grep -q 'using /dev/shm$' "$dir/rel.err" || fail "not the default: $(cat "$dir/rel.err")"
  ls /dev/shm/cudasnap-live-0/"$pid_ns-$pid_rel" >/dev/null || fail "no record in /dev/shm"
  CUDASNAP_LIVE_DIR=relative until_seen "$pid_rel" 1048576 # read in /dev/shm
  [[ $(wc -l <"$dir/top.err") -eq 1 ]] && grep -q 'CUDASNAP_LIVE_DIR=relative is not accepted .*; using /dev/shm$' "$dir/top.err" ||
    fail "top said: $(cat "$dir/top.err")"
  # a directory of its own: written there, read there, nothing of /dev/shm seen
  mkdir -m 1777 "$dir/live"
  start own 0 CUDASNAP_LIVE_DIR=$dir/live
  send own 2 "hold 0 2"
  [[ ! -s $dir/own.err ]] || fail "own: $(cat "$dir/own.err")"
  ls "$dir/live/cudasnap-live-0/$pid_ns-$pid_own" >/dev/null || fail "no record in $dir/live"
  CUDASNAP_LIVE_DIR=$dir/live until_seen "$pid_own" 2097152
  [[ -z $(json_rows "$dir/top.json" "$pid_rel") ]] || fail "top in $dir/live: $(cat "$dir/top.json")"
  CUDASNAP_LIVE_DIR=$dir/live "$cudasnap" metrics --once | grep -q "pid=\"$pid_rel\"" && fail "metrics read /dev/shm"
  # one that does not exist: the program says so once and runs on; the tools list nothing
  start missing 0 CUDASNAP_LIVE_DIR=$dir/missing
  send missing 2 "hold 0 1"
  [[ $(grep -c "cannot make the live record in $dir/missing (No such file or directory)" "$dir/missing.err") -eq 1 ]] ||
    fail "missing: $(cat "$dir/missing.err")"
  CUDASNAP_LIVE_DIR=$dir/missing "$cudasnap" top --once --json >"$dir/top.json" 2>"$dir/top.err" || fail "top: $(cat "$dir/top.err")"
  grep -q '"processes":\[\]' "$dir/top.json" || fail "missing dir: $(cat "$dir/top.json")"
  # one the user may not write in: the same
  mkdir -m 755 "$dir/closed"
  start closed $A CUDASNAP_LIVE_DIR=$dir/closed
  send closed 2 "hold 0 1"
  [[ $(grep -c "cannot make the live record in $dir/closed (Permission denied)" "$dir/closed.err") -eq 1 ]] ||
    fail "closed: $(cat "$dir/closed.err")"
  ;;

isolation)
  # another profiled program of this user, in the default directory, holding the most memory
  start outside 0
  send outside 2 "hold 0 64"
  until_seen "$pid_outside" 67108864
  for group in json top; do
    bash "$here/live_test.sh" $group "$cudasnap" "$prog" "$python" >"$dir/$group.log" 2>&1
    rc=$?
    ((rc == 0 || rc == 77)) || fail "live_test.sh $group with another program running: $(tail -5 "$dir/$group.log")"
  done
  kill -0 "$pid_outside" || fail "the outside program was disturbed"
  ;;

manifest)
  doc=$src/docs/live.md
  "$python" - "$doc" <<'PY' || fail "the DaemonSet manifest"
import re, sys
text = open(sys.argv[1]).read()
blocks = re.findall(r"```yaml\n(.*?)```", text, re.S)
docs = []
try:
    import yaml
    for b in blocks:
        docs.extend(d for d in yaml.safe_load_all(b) if d)
except ImportError:
    sys.exit("no yaml module: " + sys.executable)
kinds = {d.get("kind"): d for d in docs if isinstance(d, dict) and "kind" in d}
ds, pod = kinds["DaemonSet"], kinds["Pod"]
spec = ds["spec"]["template"]["spec"]
assert spec["hostPID"] is True, "the exporter sees the host's PID namespace"
c = spec["containers"][0]
args = c.get("command", []) + c.get("args", [])
assert "metrics" in args and "0.0.0.0:9840" in " ".join(args), args
env = {e["name"]: e.get("value") for e in c["env"]}
mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
volumes = {v["name"]: v for v in spec["volumes"]}
live = [n for n, p in mounts.items() if p == env["CUDASNAP_LIVE_DIR"]]
assert live, (env, mounts)
host_path = volumes[live[0]]["hostPath"]["path"]
assert c["securityContext"]["runAsUser"] == 0, "root reads every user's records"
assert any(p["containerPort"] == 9840 for p in c["ports"]), c["ports"]
assert ds["spec"]["selector"]["matchLabels"].items() <= ds["spec"]["template"]["metadata"]["labels"].items()
# a profiled pod: the same host directory, its name and namespace through the downward API
ps = pod["spec"]
pc = ps["containers"][0]
penv = {e["name"]: e for e in pc["env"]}
assert penv["POD_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.name"
assert penv["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
pmounts = {m["name"]: m["mountPath"] for m in pc["volumeMounts"]}
pvolumes = {v["name"]: v for v in ps["volumes"]}
plive = [n for n, p in pmounts.items() if p == penv["CUDASNAP_LIVE_DIR"]["value"]]
assert plive and pvolumes[plive[0]]["hostPath"]["path"] == host_path, (pmounts, pvolumes, host_path)
assert "libcudasnap.so" in penv["LD_PRELOAD"]["value"]
print("manifest: DaemonSet and Pod share", host_path)
PY
  # the systemd unit, with this build's cudasnap where the unit names the installed one
  "$python" - "$doc" "$cudasnap" "$dir/cudasnap-metrics.service" <<'PY' || fail "no systemd unit in $doc"
import re, sys
text = open(sys.argv[1]).read()
units = [b for b in re.findall(r"```ini\n(.*?)```", text, re.S) if "[Service]" in b]
assert len(units) == 1, units
unit = units[0]
assert "ExecStart=/usr/local/bin/cudasnap metrics --listen 0.0.0.0:9840" in unit, unit
open(sys.argv[3], "w").write(unit.replace("/usr/local/bin/cudasnap", sys.argv[2]))
PY
  command -v systemd-analyze >/dev/null || skip "no systemd-analyze (the manifest was checked)"
  systemd-analyze verify "$dir/cudasnap-metrics.service" >"$dir/verify.out" 2>&1 ||
    fail "systemd-analyze verify: $(cat "$dir/verify.out")"
  [[ ! -s $dir/verify.out ]] || fail "systemd-analyze verify said: $(cat "$dir/verify.out")"
  ;;

*) fail "unknown test $test" ;;
esac
echo "ok [$test]"
