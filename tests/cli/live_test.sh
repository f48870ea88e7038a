#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# live_test.sh TEST CUDASNAP PROG_LIVE PYTHON
#
# The live view from outside, with the real clients (docs/live.md): TEST is one of
#   json        top --once --json checked field by field against programs holding known amounts,
#               a change seen within two publications, a killed process's record skipped and
#               removed, an ended one's removed, CUDASNAP_LIVE=0 and a bad CUDASNAP_LIVE_INTERVAL
#   metrics     metrics --once through promtool check metrics; /metrics over HTTP, the same samples
#   prometheus  a real Prometheus server scraping the exporter every second holds the programs' values
#   top         top driven in tmux (send-keys, capture-pane): rows, the sort, Enter, d, q, 80
#               columns without colours
# PROG_LIVE is tests/cli/prog_live.c on the fake driver (the caller puts tests/fakes on
# LD_LIBRARY_PATH). The records go to a CUDASNAP_LIVE_DIR of this test's own, so the tools see this
# test's programs only, never another profiled process of the same user (another test's, or one
# that runs on the machine). Exit 77: a client this group needs is missing.
set -u
test=$1 cudasnap=$(realpath "$2") prog=$(realpath "$3") python=$4
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
cd "$dir" || exit 1 # the programs write their snapshots here
export CUDASNAP_LIVE_DIR=$dir/live # the programs' records and the tools' reading
mkdir "$CUDASNAP_LIVE_DIR"
records=$CUDASNAP_LIVE_DIR/cudasnap-live-$(id -u)
pids=
cleanup() {
  for p in $pids; do kill "$p" 2>/dev/null; done
  for p in $pids; do wait "$p" 2>/dev/null; done
  [[ -n ${tmux_sock:-} ]] && tmux -S "$tmux_sock" kill-server 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL [$test]: $*" >&2; exit 1; }
need() { command -v "$1" >/dev/null || { echo "skip [$test]: no $1"; exit 77; }; }
MiB=1048576

# start NAME [VAR=value...]: prog_live under cudasnap, commands through fd of a fifo; sets $pid_NAME
start() {
  local name=$1
  shift
  mkfifo "$dir/$name.in"
  env "$@" "$cudasnap" run -- "$prog" <"$dir/$name.in" >"$dir/$name.out" 2>"$dir/$name.err" &
  local p=$!
  pids="$pids $p"
  eval "exec {fd_$name}>\"\$dir/\$name.in\""
  eval "pid_$name=$p"
  wait_ready "$name" 1
}
# wait_ready NAME N: until the program printed N "ready" lines
wait_ready() {
  for _ in $(seq 200); do
    (($(grep -c '^ready$' "$dir/$1.out" 2>/dev/null || true) >= $2)) && return 0
    sleep 0.05
  done
  fail "$1 not ready: $(cat "$dir/$1.err")"
}
# send NAME N COMMAND: one command, then wait for its N-th ready
send() {
  local fd
  eval "fd=\$fd_$1"
  echo "$3" >&"$fd"
  wait_ready "$1" "$2"
}
# until_json PID CHECK: poll top --once --json (8 s at most) until the python expression CHECK
# holds for the entries `e` of PID (a list, one per device)
until_json() {
  for _ in $(seq 80); do
    "$cudasnap" top --once --json --pid "$1" >"$dir/json" 2>"$dir/json.err" || fail "top --json failed: $(cat "$dir/json.err")"
    "$python" - "$dir/json" "$1" "$2" <<'PY' && return 0
import json, sys
doc = json.load(open(sys.argv[1]))
e = [p for p in doc["processes"] if p["pid"] == int(sys.argv[2])]
sys.exit(0 if eval(sys.argv[3]) else 1)
PY
    sleep 0.1
  done
  fail "top --json never showed $2 for $1: $(cat "$dir/json")"
}

case $test in
json)
  started=$(date +%s.%N)
  start a RANK=3 LOCAL_RANK=1 WORLD_SIZE=8 SLURM_JOB_ID=4711
  start b RANK=5 LOCAL_RANK=0 SLURM_JOB_ID=4711
  send a 2 "hold 0 4"
  send a 3 "other 0 2"
  send a 4 "hold 1 6"
  send b 2 "other 0 2"
  send b 3 "oom"
  # a: 4 + 2 MiB on device 0, 6 MiB on device 1; b: 2 MiB on device 0 and one OOM (sizes of whole
  # 2 MiB segments: the allocated bytes, which count blocks as rounded, are the sizes asked for)
  until_json "$pid_a" 'len(e) == 2 and e[0]["allocated_bytes"] + e[1]["allocated_bytes"] == 12 * 2**20'
  until_json "$pid_b" 'len(e) == 1 and e[0]["ooms"] == 1'
  "$cudasnap" top --once --json >"$dir/all.json" || fail "top --once --json"
  "$python" - "$dir/all.json" "$pid_a" "$pid_b" "$(hostname)" "$started" <<'PY' || fail "fields: $(cat "$dir/all.json")"
import json, sys, time
doc = json.load(open(sys.argv[1]))
a, b, host, started = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], float(sys.argv[5])
assert set(doc) == {"processes"}, doc.keys()
keys = {"pid", "rank", "local_rank", "host", "labels", "device", "allocated_bytes", "reserved_bytes", "peak_allocated_bytes",
        "driver_used_bytes", "driver_used_timestamp_seconds", "phase", "ooms", "top_sites"}
# this test's programs only, whatever else runs on the machine (its own CUDASNAP_LIVE_DIR)
assert {p["pid"] for p in doc["processes"]} == {a, b}, [p["pid"] for p in doc["processes"]]
rows = {(p["pid"], p["device"]): p for p in doc["processes"]}
assert set(rows) == {(a, 0), (a, 1), (b, 0)}, sorted(rows)
for p in rows.values():
    assert set(p) == keys, set(p) ^ keys
    assert p["host"] == host, p["host"]
    assert p["labels"] == {}, p["labels"]
    assert p["phase"] is None
    assert p["reserved_bytes"] >= p["allocated_bytes"]
    # the driver's answer when last asked (on a segment's growth, at most every 100 ms): a count
    assert p["driver_used_bytes"] is None or p["driver_used_bytes"] > 0, p
    # and when it answered: within this test, for the age top shows
    ts = p["driver_used_timestamp_seconds"]
    assert (ts is None) == (p["driver_used_bytes"] is None), p
    assert ts is None or started - 1 <= ts <= time.time() + 1, (ts, started, p)
    for s in p["top_sites"]:
        assert set(s) == {"site", "bytes", "blocks"}, s
MiB = 2**20
def sites(p):
    return [(s["site"].split(" ")[0], s["bytes"], s["blocks"]) for s in p["top_sites"]]
p = rows[(a, 0)]
assert (p["rank"], p["local_rank"]) == (3, 1), p
assert p["allocated_bytes"] == 6 * MiB and p["peak_allocated_bytes"] == 6 * MiB, p
assert p["reserved_bytes"] == 6 * MiB, p
assert p["ooms"] == 0
assert sites(p) == [("live_hold", 4 * MiB, 1), ("live_other", 2 * MiB, 1)], sites(p)
assert "prog_live.c:" in p["top_sites"][0]["site"], p["top_sites"][0]
p = rows[(a, 1)]
assert p["allocated_bytes"] == 6 * MiB and sites(p) == [("live_hold", 6 * MiB, 1)], p
p = rows[(b, 0)]
assert (p["rank"], p["local_rank"]) == (5, 0), p
assert p["allocated_bytes"] == 2 * MiB and p["ooms"] == 1, p
assert sites(p) == [("live_other", 2 * MiB, 1)], sites(p)
# sorted by allocated, the largest first
order = [p["allocated_bytes"] for p in doc["processes"]]
assert order == sorted(order, reverse=True), order
PY
  # a program whose only allocation on a device is stream-ordered (past the cache) and failed:
  # its row is there, with the OOM, in top and in metrics
  start s
  send s 2 "async_oom 1"
  until_json "$pid_s" 'len(e) == 1 and e[0]["device"] == 1 and e[0]["ooms"] == 1 and e[0]["allocated_bytes"] == 0'
  "$cudasnap" metrics --once >"$dir/s.prom" 2>"$dir/s.err" || fail "metrics --once: $(cat "$dir/s.err")"
  grep -Eq "^cudasnap_ooms_total\{.*\} 1\$" <(grep "pid=\"$pid_s\"" "$dir/s.prom" | grep 'device="1"') ||
    fail "metrics has no OOM of $pid_s on device 1: $(grep ooms "$dir/s.prom")"
  eval "exec $fd_s>&-"
  wait "$pid_s" || fail "prog_live s failed: $(cat "$dir/s.err")"
  # a change shows within two publications (1 s each): 8 MiB more on a's device 0, then freed
  send a 5 "hold 0 8"
  until_json "$pid_a" 'any(p["device"] == 0 and p["allocated_bytes"] == 14 * 2**20 for p in e)'
  send a 6 "free"
  until_json "$pid_a" 'all(p["allocated_bytes"] == 0 and p["top_sites"] == [] for p in e) and any(p["peak_allocated_bytes"] == 14 * 2**20 for p in e)'
  # --json without --once: a JSON object a line, every interval (JSON Lines), until the reader
  # goes away (head: EPIPE) or a stop signal; exit 0 and whole lines in each case
  timeout 20 "$cudasnap" top --json --interval 0.1 --pid "$pid_a" 2>"$dir/lines.err" | head -3 >"$dir/lines"
  rcs=("${PIPESTATUS[@]}")
  [[ ${rcs[0]} -eq 0 && ! -s $dir/lines.err ]] || fail "top --json | head -3: exit ${rcs[0]}: $(cat "$dir/lines.err")"
  "$python" - "$dir/lines" "$pid_a" 3 <<'PY' || fail "top --json lines: $(cat "$dir/lines")"
import json, sys
lines = open(sys.argv[1]).read().split("\n")
assert lines[-1] == "" and len(lines) == int(sys.argv[3]) + 1, lines  # whole lines, each ended
for line in lines[:-1]:
    doc = json.loads(line)
    assert set(doc) == {"processes"} and {p["pid"] for p in doc["processes"]} == {int(sys.argv[2])}, doc
PY
  for sig in TERM INT HUP; do
    "$cudasnap" top --json --interval 0.1 --pid "$pid_a" >"$dir/lines" 2>"$dir/lines.err" &
    top_pid=$!
    pids="$pids $top_pid"
    for _ in $(seq 100); do (($(wc -l <"$dir/lines") >= 2)) && break; sleep 0.05; done
    kill -"$sig" "$top_pid"
    wait "$top_pid"
    rc=$?
    [[ $rc -eq 0 && ! -s $dir/lines.err ]] || fail "top --json after SIG$sig: exit $rc: $(cat "$dir/lines.err")"
    n=$(wc -l <"$dir/lines")
    "$python" - "$dir/lines" "$pid_a" "$n" <<'PY' || fail "top --json lines after SIG$sig: $(cat "$dir/lines")"
import json, sys
lines = open(sys.argv[1]).read().split("\n")
assert int(sys.argv[3]) >= 2 and lines[-1] == "" and len(lines) == int(sys.argv[3]) + 1, lines
for line in lines[:-1]:
    assert {p["pid"] for p in json.loads(line)["processes"]} == {int(sys.argv[2])}, line
PY
  done
  # the table at 80 columns
  COLUMNS=80 "$cudasnap" top --once >"$dir/table" || fail "top --once"
  head -1 "$dir/table" | grep -qE '^ +PID RANK DEV ALLOCATED +RESERVED +PEAK DRIVER USED PHASE +OOMS TOP SITE' ||
    fail "table header: $(cat "$dir/table")"
  grep -qE "^ +$pid_b +5 +0 +2.0M " "$dir/table" || fail "b's row: $(cat "$dir/table")"
  # DRIVER USED: the driver's answer and its age ("2.0M 3s"), or "-" before it was asked
  grep -E "^ +$pid_b " "$dir/table" | grep -qE ' 2.0M +(- |[0-9.]+[0-9BKMGTP]* [0-9]+[smhd] )' ||
    fail "b's DRIVER USED: $(cat "$dir/table")"
  # killed: its record is skipped, then removed by the reader
  rec=$(ls "$records"/*-"$pid_b")
  kill -9 "$pid_b"
  wait "$pid_b" 2>/dev/null
  [[ -f $rec ]] || fail "the record went with kill -9?"
  until_json "$pid_b" 'e == []'
  [[ ! -e $rec ]] || fail "the dead process's record $rec was not removed"
  # ended: the record goes with it
  rec=$(ls "$records"/*-"$pid_a")
  eval "exec $fd_a>&-"
  wait "$pid_a" || fail "prog_live a failed: $(cat "$dir/a.err")"
  [[ ! -e $rec ]] || fail "the record $rec outlived its process"
  # CUDASNAP_LIVE=0: registered (dump --all finds it) but no figures
  start c CUDASNAP_LIVE=0
  send c 2 "hold 0 1"
  sleep 1.5
  "$cudasnap" top --once --json --pid "$pid_c" >"$dir/json"
  grep -q '"processes":\[\]' "$dir/json" || fail "CUDASNAP_LIVE=0 published: $(cat "$dir/json")"
  ls "$records"/*-"$pid_c" >/dev/null || fail "CUDASNAP_LIVE=0: no registration"
  # a bad interval: one line, the default kept
  start d CUDASNAP_LIVE_INTERVAL=0.5
  [[ $(grep -c 'CUDASNAP_LIVE_INTERVAL=0.5 is not accepted' "$dir/d.err") -eq 1 ]] || fail "d: $(cat "$dir/d.err")"
  send d 2 "hold 0 1"
  until_json "$pid_d" 'len(e) == 1 and e[0]["allocated_bytes"] == 2**20'
  ;;

metrics)
  need promtool
  need curl
  start a RANK=0 LOCAL_RANK=0 SLURM_JOB_ID=j1
  send a 2 "hold 0 4"
  until_json "$pid_a" 'len(e) == 1 and e[0]["allocated_bytes"] == 4 * 2**20'
  "$cudasnap" metrics --once >"$dir/m.txt" || fail "metrics --once"
  promtool check metrics <"$dir/m.txt" >"$dir/promtool.out" 2>&1 || fail "promtool: $(cat "$dir/promtool.out")"
  for m in allocated_bytes reserved_bytes peak_allocated_bytes driver_used_bytes driver_used_timestamp_seconds ooms_total \
    site_allocated_bytes process_info; do
    grep -q "^# TYPE cudasnap_$m " "$dir/m.txt" || fail "no TYPE for cudasnap_$m"
    grep -q "^# HELP cudasnap_$m " "$dir/m.txt" || fail "no HELP for cudasnap_$m"
  done
  labels="pid=\"$pid_a\",rank=\"0\",local_rank=\"0\",job=\"j1\",host=\"$(hostname)\",device=\"0\""
  grep -qxF "cudasnap_allocated_bytes{$labels} 4194304" "$dir/m.txt" || fail "allocated: $(cat "$dir/m.txt")"
  grep -qxF "cudasnap_reserved_bytes{$labels} 4194304" "$dir/m.txt" || fail "reserved: $(cat "$dir/m.txt")"
  grep -qxF "cudasnap_ooms_total{$labels} 0" "$dir/m.txt" || fail "ooms"
  grep -qE "^cudasnap_site_allocated_bytes\{$labels,site=\"live_hold [^\"]*prog_live.c:[0-9]+\"\} 4194304$" "$dir/m.txt" ||
    fail "site: $(grep site_allocated "$dir/m.txt")"
  # the driver's answer and when it was given come together, the time within this test
  "$python" - "$dir/m.txt" "$labels" "$(date +%s)" <<'PY' || fail "driver samples: $(grep driver_ "$dir/m.txt")"
import sys, time
lines = open(sys.argv[1]).read().splitlines()
def sample(name):
    for line in lines:
        if line.startswith(name + "{" + sys.argv[2] + "} "):
            return float(line.rsplit(" ", 1)[1])
used, when = sample("cudasnap_driver_used_bytes"), sample("cudasnap_driver_used_timestamp_seconds")
assert (used is None) == (when is None), (used, when)
assert when is None or float(sys.argv[3]) - 60 <= when <= time.time() + 1, when
PY
  # over HTTP, on a port the kernel picks
  "$cudasnap" metrics --listen 127.0.0.1:0 >"$dir/listen.out" 2>"$dir/listen.err" &
  pids="$pids $!"
  for _ in $(seq 100); do grep -q '^listening on ' "$dir/listen.out" && break; sleep 0.05; done
  addr=$(sed -n 's/^listening on //p' "$dir/listen.out")
  [[ $addr == 127.0.0.1:* ]] || fail "listening on '$addr' ($(cat "$dir/listen.err"))"
  curl -sf -D "$dir/head" "http://$addr/metrics" >"$dir/http.txt" || fail "GET /metrics"
  grep -qi '^content-type: text/plain; version=0.0.4' "$dir/head" || fail "content type: $(cat "$dir/head")"
  grep -qxF "cudasnap_allocated_bytes{$labels} 4194304" "$dir/http.txt" || fail "HTTP allocated"
  promtool check metrics <"$dir/http.txt" >/dev/null 2>&1 || fail "promtool on HTTP"
  code=$(curl -s -o /dev/null -w '%{http_code}' "http://$addr/nothing")
  [[ $code == 404 ]] || fail "GET /nothing: $code"
  expect_usage=$("$cudasnap" metrics --listen nonsense 2>&1 >/dev/null; echo "rc=$?")
  [[ $expect_usage == *"rc=2" ]] || fail "--listen nonsense: $expect_usage"
  ;;

prometheus)
  need prometheus
  need curl
  start a RANK=0 LOCAL_RANK=0 SLURM_JOB_ID=p1
  start b RANK=1 LOCAL_RANK=1 SLURM_JOB_ID=p1
  send a 2 "hold 0 4"
  send b 2 "other 0 6"
  "$cudasnap" metrics --listen 127.0.0.1:0 >"$dir/listen.out" 2>"$dir/listen.err" &
  pids="$pids $!"
  for _ in $(seq 100); do grep -q '^listening on ' "$dir/listen.out" && break; sleep 0.05; done
  addr=$(sed -n 's/^listening on //p' "$dir/listen.out")
  port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  cat >"$dir/prometheus.yml" <<YML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: cudasnap
    honor_labels: true # the exporter's job label is the job's id (docs/live.md)
    static_configs:
      - targets: ["$addr"]
YML
  prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/tsdb" \
    --web.listen-address="127.0.0.1:$port" >"$dir/prom.log" 2>&1 &
  pids="$pids $!"
  # query QUERY: the values of the instant query, "labels value" lines
  query() {
    curl -sf --get "http://127.0.0.1:$port/api/v1/query" --data-urlencode "query=$1" | "$python" -c '
import json, sys
for r in json.load(sys.stdin)["data"]["result"]:
    print(r["metric"].get("rank", ""), r["metric"].get("site", "").split(" ")[0], r["value"][1])'
  }
  until_prom() { # until_prom QUERY EXPECTED: 30 s at most
    for _ in $(seq 150); do
      [[ $(query "$1" 2>/dev/null | sort) == "$2" ]] && return 0
      sleep 0.2
    done
    fail "prometheus: $1 gave '$(query "$1" | sort)', expected '$2' ($(tail -3 "$dir/prom.log"))"
  }
  until_prom "cudasnap_allocated_bytes{job=\"p1\"}" "$(printf '0  4194304\n1  6291456')"
  until_prom "cudasnap_site_allocated_bytes{job=\"p1\"}" "$(printf '0 live_hold 4194304\n1 live_other 6291456')"
  until_prom "sum(cudasnap_reserved_bytes{job=\"p1\"})" "  10485760"
  # a change reaches the server within a scrape or two
  send a 3 "other 0 2"
  until_prom "cudasnap_allocated_bytes{job=\"p1\",rank=\"0\"}" "0  6291456"
  until_prom "cudasnap_ooms_total{job=\"p1\",rank=\"1\"}" "1  0"
  # every query of the Grafana dashboard answers with the job's series
  dashboard=$here/../../docs/grafana/cudasnap-dashboard.json
  "$python" -c '
import json, sys
for p in json.load(open(sys.argv[1]))["panels"]:
    for t in p["targets"]:
        print(t["expr"].replace("$job", "p1"))' "$dashboard" >"$dir/exprs" || fail "dashboard JSON"
  [[ $(wc -l <"$dir/exprs") -ge 6 ]] || fail "dashboard queries: $(cat "$dir/exprs")"
  while IFS= read -r expr; do
    [[ -n $(query "$expr") ]] || fail "the dashboard's query $expr has no result"
  done <"$dir/exprs"
  ;;

top)
  need tmux
  start a RANK=0 SLURM_JOB_ID=t1
  start b RANK=1 SLURM_JOB_ID=t1
  send a 2 "hold 0 8"
  send b 2 "other 0 2"
  until_json "$pid_a" 'len(e) == 1 and e[0]["allocated_bytes"] == 8 * 2**20'
  until_json "$pid_b" 'len(e) == 1 and e[0]["allocated_bytes"] == 2 * 2**20'
  tmux_sock=$dir/tmux.sock
  # 80 columns, no colours; the tmux server must not hold the programs' pipes open
  (
    exec {fd_a}>&- {fd_b}>&-
    tmux -S "$tmux_sock" new-session -d -x 80 -y 24 \
      "env TERM=dumb NO_COLOR=1 CUDASNAP_LIVE_DIR=$CUDASNAP_LIVE_DIR $cudasnap top --interval 0.5; sleep 30"
  )
  screen() { tmux -S "$tmux_sock" capture-pane -p >"$dir/screen"; }
  until_screen() { # until_screen PATTERN: 10 s at most
    for _ in $(seq 100); do
      screen
      grep -qE -- "$1" "$dir/screen" && return 0
      sleep 0.1
    done
    fail "top never showed '$1': $(cat "$dir/screen")"
  }
  until_screen "^>? +$pid_a +0 +0 +8.0M"
  until_screen "^ +$pid_b +1 +0 +2.0M"
  awk 'length > 80 { exit 1 }' "$dir/screen" || fail "a line wider than 80 columns"
  # TOP SITE at 80 columns: too narrow for a site (11 columns), so each row's site is on a line of
  # its own under the row, its function and file:line kept (not "live_hold /wor")
  grep -A1 -E "^>? +$pid_a " "$dir/screen" | tail -1 | grep -qE '^ {9}live_hold (.*/)?prog_live\.c:[0-9]+$' ||
    fail "a's site under its row: $(cat "$dir/screen")"
  grep -A1 -E "^>? +$pid_b " "$dir/screen" | tail -1 | grep -qE '^ {9}live_other (.*/)?prog_live\.c:[0-9]+$' ||
    fail "b's site under its row: $(cat "$dir/screen")"
  # at 100 columns the site has its column (31), the path by its base name: the file and line kept
  tmux -S "$tmux_sock" new-session -d -s wide -x 100 -y 24 \
    "env TERM=dumb NO_COLOR=1 $cudasnap top --once --pid $pid_a; sleep 30"
  for _ in $(seq 50); do
    tmux -S "$tmux_sock" capture-pane -p -t wide >"$dir/wide"
    grep -qE "^ +$pid_a " "$dir/wide" && break
    sleep 0.1
  done
  grep -qE "^ +$pid_a +0 +0 +8.0M .* live_hold prog_live\.c:[0-9]+$" "$dir/wide" ||
    fail "at 100 columns: $(cat "$dir/wide")"
  tmux -S "$tmux_sock" kill-session -t wide
  grep -q $'\e' "$dir/screen" && fail "escape sequences in the pane"
  grep -qE 'PID RANK DEV ALLOCATED +RESERVED +PEAK DRIVER USED PHASE +OOMS TOP SITE' "$dir/screen" || fail "header"
  # sorted by allocated: a (7 MiB) above b (2 MiB)
  [[ $(grep -nE "^.? +$pid_a " "$dir/screen" | cut -d: -f1) -lt $(grep -nE "^.? +$pid_b " "$dir/screen" | cut -d: -f1) ]] ||
    fail "not sorted by allocated: $(cat "$dir/screen")"
  # s: sorted by reserved, then peak, driver, pid, rank
  for col in RESERVED PEAK "DRIVER USED" PID RANK; do
    tmux -S "$tmux_sock" send-keys s
    until_screen "sorted by $col"
  done
  # down selects b (rank order: a, b), Enter shows its sites, Enter again goes back
  tmux -S "$tmux_sock" send-keys Down
  until_screen "^> +$pid_b "
  tmux -S "$tmux_sock" send-keys Enter
  until_screen "^pid $pid_b .* rank 1 device 0: 2.0 MiB allocated, 1 site"
  until_screen "^ +2.0M +1  live_other "
  tmux -S "$tmux_sock" send-keys Enter
  until_screen "^> +$pid_b "
  # d: a snapshot of the selected process, its file named
  tmux -S "$tmux_sock" send-keys d
  until_screen "^wrote .*-$pid_b-1-signal\.json"
  file=$(sed -n 's/^wrote //p' "$dir/screen" | head -1)
  [[ -f $file ]] || fail "no file $file"
  # a process that ends leaves within two refreshes
  eval "exec $fd_b>&-"
  wait "$pid_b"
  for _ in $(seq 20); do
    screen
    grep -qE "^.? +$pid_b " "$dir/screen" || break
    sleep 0.1
  done
  grep -qE "^.? +$pid_b " "$dir/screen" && fail "b still shown after 2 s: $(cat "$dir/screen")"
  # q quits
  tmux -S "$tmux_sock" send-keys q
  until_screen "^$"
  for _ in $(seq 50); do
    tmux -S "$tmux_sock" list-panes -F '#{pane_current_command}' | grep -q '^sleep$' && break
    sleep 0.1
  done
  tmux -S "$tmux_sock" list-panes -F '#{pane_current_command}' | grep -q '^sleep$' || fail "q did not quit"
  ;;

*) fail "unknown test $test" ;;
esac
echo "ok [$test]"
