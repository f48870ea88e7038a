#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# live_safe_test.sh TEST CUDASNAP PROG_LIVE PROG_HOSTILE PYTHON [PROG_LIVE_UTF8 ITS_SOURCE]
#
# The exporter and the live view against hostile clients and hostile texts (docs/live.md, "What
# the exporter guarantees" and "Names from programs"), with the real clients. TEST is one of
#   serve  cudasnap metrics while a client sends its request a byte every 1.5 s and 200 idle
#          connections are open (more than the cap), with a real Prometheus scraping every second;
#          then clients that ask for a 6 MB exposition and never read it, and curl scraping
#          meanwhile; the deadlines that close each of them; HEAD, gzip, 404, 405, 400; SIGTERM and
#          SIGINT ending it within a second with such clients attached
#   names  names no cudasnap would make, from real programs (an NVTX range "\e[2J\e[H", a job id, an
#          executable's name, a CUDASNAP_OUTPUT with escape sequences, a site name cut inside a
#          character: PROG_LIVE_UTF8, built from ITS_SOURCE under a long non-ASCII folder) and from
#          hostile records (PROG_HOSTILE): promtool, a real Prometheus, top --once --json read as
#          strict UTF-8, the table, top in tmux (the screen is never cleared: capture-pane), dump's
#          and run's lines
# PROG_LIVE is tests/cli/prog_live.c on the fake driver (the caller puts tests/fakes on
# LD_LIBRARY_PATH). Each group runs in a mount namespace of its own with a private tmpfs on
# /dev/shm, where the live records are: the tools see this test's processes only, never another
# program of the machine (unshare needs root: exit 77 otherwise, as when a client is missing).
set -u
if [[ -z ${CS_LIVE_SAFE_PRIVATE:-} ]]; then
  if ! unshare --mount --propagation private true 2>/dev/null; then
    echo "skip [$1]: a private /dev/shm needs unshare --mount (root)"
    exit 77
  fi
  exec unshare --mount --propagation private env CS_LIVE_SAFE_PRIVATE=1 \
    bash -c 'mount -t tmpfs -o mode=1777 cudasnap-test /dev/shm && exec bash "$@"' bash "$0" "$@"
fi
test=$1 cudasnap=$(realpath "$2") prog=$(realpath "$3") hostile=$(realpath "$4") python=$5
prog_utf8=${6:+$(realpath "$6")} utf8_source=${7:-}
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
cd "$dir" || exit 1 # the programs write their snapshots here
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

# detached COMMAND...: run it without the fifos' write ends this shell holds, so that closing
# one ends its reader
detached() {
  local v
  for v in $(compgen -v fd_); do eval "exec {$v}>&-"; done
  exec "$@"
}
# start NAME COMMAND...: a program reading commands from a fifo (fd_NAME), its pid in pid_NAME
start() {
  local name=$1
  shift
  mkfifo "$dir/$name.in"
  (detached "$@") <"$dir/$name.in" >"$dir/$name.out" 2>"$dir/$name.err" &
  local p=$!
  pids="$pids $p"
  eval "exec {fd_$name}>\"\$dir/\$name.in\""
  eval "pid_$name=$p"
}
# profiled NAME [VAR=value...]: prog_live under cudasnap run, once ready
profiled() {
  local name=$1
  shift
  start "$name" env "$@" "$cudasnap" run -- "${live_program:-$prog}"
  wait_ready "$name" 1
}
# wait_ready NAME N: until NAME printed N "ready" lines
wait_ready() {
  for _ in $(seq 300); do
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
# until_metrics PATTERN: until metrics --once has a line matching PATTERN (10 s at most)
until_metrics() {
  for _ in $(seq 100); do
    "$cudasnap" metrics --once >"$dir/m.txt" 2>"$dir/m.err" && grep -qE -- "$1" "$dir/m.txt" && return 0
    sleep 0.1
  done
  fail "metrics --once never showed $1: $(head -c 2000 "$dir/m.txt") $(cat "$dir/m.err")"
}
# exporter NAME: cudasnap metrics on a port the kernel picks; sets addr_NAME and pid_NAME
exporter() {
  (detached "$cudasnap" metrics --listen 127.0.0.1:0) >"$dir/$1.listen" 2>"$dir/$1.err" &
  local p=$!
  pids="$pids $p"
  for _ in $(seq 100); do grep -q '^listening on ' "$dir/$1.listen" && break; sleep 0.05; done
  local a
  a=$(sed -n 's/^listening on //p' "$dir/$1.listen")
  [[ $a == 127.0.0.1:* ]] || fail "$1 listening on '$a' ($(cat "$dir/$1.err"))"
  eval "addr_$1=$a pid_$1=$p"
}
# start_prometheus ADDR: a real server scraping ADDR every second (1 s timeout); sets prom_port
start_prometheus() {
  prom_port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  cat >"$dir/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: cudasnap
    honor_labels: true
    static_configs:
      - targets: ["$1"]
YML
  (detached prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/tsdb" \
    --web.listen-address="127.0.0.1:$prom_port") >"$dir/prom.log" 2>&1 &
  prom_pid=$!
  pids="$pids $prom_pid"
}
# query PROMQL: the instant query's result as JSON lines {"metric": ..., "value": ...}
query() {
  curl -sf --get "http://127.0.0.1:$prom_port/api/v1/query" --data-urlencode "query=$1" |
    "$python" -c 'import json, sys; [print(json.dumps(r)) for r in json.load(sys.stdin)["data"]["result"]]'
}
# until_prom PROMQL CHECK: until the python expression CHECK holds for `r`, the list of results
# (30 s at most)
until_prom() {
  for _ in $(seq 150); do
    query "$1" >"$dir/prom.q" 2>/dev/null && "$python" -c '
import json, sys
r = [json.loads(line) for line in open(sys.argv[1])]
sys.exit(0 if eval(sys.argv[2]) else 1)' "$dir/prom.q" "$2" && return 0
    sleep 0.2
  done
  fail "prometheus: $1 never gave $2: $(cat "$dir/prom.q"); targets: $(curl -s "http://127.0.0.1:$prom_port/api/v1/targets" | head -c 1500)"
}
clients() { (detached "$python" "$here/http_clients.py" "$@"); }
# scrape ADDR SECONDS [CURL OPTIONS]: GET /metrics within SECONDS, the body in $dir/scrape; prints
# curl's total time
scrape() {
  local a=$1 t=$2
  shift 2
  curl -sf --max-time "$t" "$@" -o "$dir/scrape" -w '%{time_total}' "http://$a/metrics"
}
now() { date +%s.%N; }
later_than() { "$python" -c 'import sys; sys.exit(0 if float(sys.argv[1]) > float(sys.argv[2]) else 1)' "$1" "$2"; }

case $test in
serve)
  need curl
  need prometheus
  profiled a SLURM_JOB_ID=s1
  send a 2 "hold 0 4"
  until_metrics '^cudasnap_allocated_bytes\{pid="'"$pid_a"'",.*\} 4194304$'
  exporter e
  # -- 200 idle connections (the oldest closed for the newest past 64), then one client sending a
  # byte every 1.5 s: Prometheus and curl are served at once
  start idle "$python" "$here/http_clients.py" idle "$addr_e" 200
  for _ in $(seq 100); do grep -q '^open 200$' "$dir/idle.out" && break; sleep 0.05; done
  grep -q '^open 200$' "$dir/idle.out" ||
    fail "200 idle connections were not accepted within 5 s (the server waits on one?): $(cat "$dir/idle.out" "$dir/idle.err")"
  idle_opened=$(now)
  clients slow "$addr_e" 1.5 20 >"$dir/slow.out" 2>&1 &
  slow_pid=$!
  for i in 1 2 3; do
    t=$(scrape "$addr_e" 2) || fail "scrape $i timed out beside a slow client and 200 idle ones"
    later_than 1 "$t" || fail "scrape $i took $t s beside a slow client and 200 idle ones"
    grep -q "^cudasnap_allocated_bytes{pid=\"$pid_a\",.*} 4194304$" "$dir/scrape" || fail "scrape $i: $(head -c 500 "$dir/scrape")"
  done
  # at most 64 connections are open (and the listening socket)
  sockets=$(find "/proc/$pid_e/fd" -lname 'socket:*' | wc -l)
  ((sockets <= 65)) || fail "$sockets sockets open in the exporter, more than the cap of 64 (+1)"
  start_prometheus "$addr_e"
  until_prom 'up{job="cudasnap"}' 'len(r) == 1 and r[0]["value"][1] == "1"'
  until_prom "cudasnap_allocated_bytes{pid=\"$pid_a\"}" 'len(r) == 1 and r[0]["value"][1] == "4194304"'
  sleep 3
  until_prom 'min_over_time(up{job="cudasnap"}[3s])' 'len(r) == 1 and r[0]["value"][1] == "1"'
  until_prom 'max_over_time(scrape_duration_seconds{job="cudasnap"}[3s])' 'len(r) == 1 and float(r[0]["value"][1]) < 0.9'
  # the request deadline: the slow client was closed about 5 s after it connected
  wait "$slow_pid"
  "$python" -c '
import sys
words = open(sys.argv[1]).read().split()
assert words[:2] == ["closed", "after"], words
assert 4.5 <= float(words[2]) <= 7.5, words' "$dir/slow.out" || fail "the slow client: $(cat "$dir/slow.out")"
  # and every idle one, 5 s after it connected
  while ! later_than "$(now)" "$("$python" -c "print($idle_opened + 6)")"; do sleep 0.2; done
  eval "exec $fd_idle>&-"
  for _ in $(seq 100); do grep -q '^closed ' "$dir/idle.out" && break; sleep 0.05; done
  grep -qx 'closed 200' "$dir/idle.out" || fail "idle connections after 6 s: $(cat "$dir/idle.out" "$dir/idle.err")"

  kill "$prom_pid" # it would scrape the big exposition below every second: CPU the test needs
  # -- HEAD, gzip, the other paths and methods
  curl -sf -I --max-time 5 "http://$addr_e/metrics" >"$dir/head" || fail "HEAD /metrics"
  grep -qi '^content-type: text/plain; version=0.0.4' "$dir/head" || fail "HEAD: $(cat "$dir/head")"
  length=$(sed -n 's/^[Cc]ontent-[Ll]ength: *\([0-9]*\).*/\1/p' "$dir/head")
  ((length > 1000)) || fail "HEAD's Content-Length: $(cat "$dir/head")"
  curl -sf --max-time 5 -H 'Accept-Encoding: gzip' -D "$dir/gz.head" -o "$dir/gz" "http://$addr_e/metrics" || fail "gzip GET"
  grep -qi '^content-encoding: gzip' "$dir/gz.head" || fail "no gzip when asked: $(cat "$dir/gz.head")"
  gzip -dc "$dir/gz" >"$dir/gz.txt" || fail "not gzip: $(head -c 100 "$dir/gz" | od -c | head -3)"
  grep -q "^cudasnap_allocated_bytes{pid=\"$pid_a\",.*} 4194304$" "$dir/gz.txt" || fail "gunzipped: $(head -c 500 "$dir/gz.txt")"
  promtool check metrics <"$dir/gz.txt" >"$dir/promtool.out" 2>&1 || fail "promtool on the gunzipped reply: $(cat "$dir/promtool.out")"
  curl -sf --max-time 5 -H 'Accept-Encoding: gzip;q=0' -D "$dir/nogz.head" -o /dev/null "http://$addr_e/metrics"
  grep -qi '^content-encoding' "$dir/nogz.head" && fail "gzip;q=0 got gzip"
  for path in / /metrics/ /nothing /metricsx; do
    code=$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' "http://$addr_e$path")
    [[ $code == 404 ]] || fail "GET $path: $code"
  done
  code=$(curl -s --max-time 5 -o /dev/null -w '%{http_code}' -X POST "http://$addr_e/metrics")
  [[ $code == 405 ]] || fail "POST /metrics: $code"
  reply=$("$python" -c '
import socket, sys
host, port = sys.argv[1].rsplit(":", 1)
s = socket.create_connection((host, int(port)), timeout=5)
s.sendall(b"NONSENSE\r\n\r\n")
print(s.recv(100).split(b"\r\n")[0].decode())' "$addr_e")
  [[ $reply == "HTTP/1.1 400 Bad Request" ]] || fail "a request without a request line: '$reply'"

  # -- a 6 MB exposition (64 processes of 64 devices with a 250-byte host name, each cut at 256
  # series: docs/live.md's cap) to clients that never read it, with a 4 KiB receive buffer each
  start big "$hostile" big 64
  wait_ready big 64
  t=$(scrape "$addr_e" 10) || fail "the big exposition"
  size=$(wc -c <"$dir/scrape")
  ((size > 5000000)) || fail "the big exposition has $size bytes: too small to fill the sockets' buffers"
  clients noread "$addr_e" 4 15 >"$dir/noread.out" 2>&1 &
  noread_pid=$!
  sleep 1
  # (8 s at most each, on a loaded machine: a server that serves one at a time is stuck until the
  # clients read, after 15 s)
  for i in 1 2 3; do
    t=$(scrape "$addr_e" 8) || fail "scrape $i timed out beside 4 clients that do not read"
    grep -q "^cudasnap_allocated_bytes{pid=\"$pid_a\",.*} 4194304$" "$dir/scrape" || fail "scrape $i beside non-readers"
  done
  t=$(scrape "$addr_e" 8 -H 'Accept-Encoding: gzip') || fail "gzip scrape of the big exposition"
  zsize=$(wc -c <"$dir/scrape")
  ((zsize * 10 < size)) || fail "gzip: $zsize bytes of $size"
  # the reply deadline: each was closed 10 s after its request, its reply not all sent
  wait "$noread_pid"
  "$python" -c '
import sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 4, lines
for line in lines:
    w = line.split()
    assert w[0] == "got" and w[4] == "eof" and int(w[1]) < int(w[3]), line' "$dir/noread.out" ||
    fail "the clients that do not read: $(cat "$dir/noread.out")"

  # -- SIGTERM, then SIGINT, end it within a second whatever the clients do: two that asked for
  # the big exposition and do not read it (first: a server that serves one at a time is stuck in
  # sending to them), then a slow one
  for sig in TERM INT; do
    exporter x
    clients noread "$addr_x" 2 30 >/dev/null 2>&1 &
    pids="$pids $!"
    sleep 1
    clients slow "$addr_x" 1.5 30 >/dev/null 2>&1 &
    pids="$pids $!"
    sleep 1
    scrape "$addr_x" 5 >/dev/null || fail "scrape before SIG$sig"
    sent=$(now)
    kill -s "$sig" "$pid_x"
    wait "$pid_x"
    status=$?
    took=$("$python" -c "print($(now) - $sent)")
    [[ $status == 0 ]] || fail "SIG$sig: exit status $status"
    later_than 1 "$took" || fail "SIG$sig ended it after $took s"
  done
  ;;

names)
  need curl
  need promtool
  need prometheus
  need tmux
  esc=$'\e'
  # hostile records: escape sequences, C1, invalid UTF-8 (prog_hostile.c's hostile_*), and
  # unterminated texts
  start h "$hostile" hostile
  wait_ready h 1
  start t "$hostile" unterminated
  wait_ready t 1
  # real programs: a job id and an NVTX range with escape sequences, a C1 control in the
  # executable's name, a CUDASNAP_OUTPUT that would clear the screen
  cp "$prog" "$dir/exe"$'\xc2\x9b''2J'
  live_program="$dir/exe"$'\xc2\x9b''2J' profiled g SLURM_JOB_ID=$'job\e[2J\e[H'
  send g 2 "hold 0 8"
  send g 3 "phase $(printf '\e[2J\e[H' | od -An -tx1 | tr -d ' \n')"
  nvtx=yes
  grep -q '^no nvtx$' "$dir/g.out" && nvtx=no && echo "note [$test]: prog_live has no NVTX: no phase from a real program"
  profiled d CUDASNAP_OUTPUT=$'\e[2J\e[Hsnap-%p.json'
  send d 2 "hold 0 6"
  if [[ -n $prog_utf8 ]]; then
    live_program=$prog_utf8 profiled u
    send u 2 "hold 0 4"
  else
    echo "note [$test]: no program built under a long non-ASCII folder: no cut site name"
  fi
  until_metrics '^cudasnap_allocated_bytes\{pid="'"$pid_d"'",.*\} 6291456$'
  [[ -n $prog_utf8 ]] && until_metrics '^cudasnap_allocated_bytes\{pid="'"$pid_u"'",.*\} 4194304$'
  until_metrics '^cudasnap_allocated_bytes\{pid="'"$pid_g"'",.*\} 8388608$'

  # what each text must become: valid UTF-8, each invalid subpart U+FFFD, each control '?'
  cat >"$dir/expect.py" <<'PY'
import sys
# prog_hostile.c's hostile texts, byte for byte
SITES = [b"\x1b[2J\x1b[Hclear_screen", b"bad_utf8 \xff\xfe \xed\xa0\x80 \xe2\x82", b"c1_csi \xc2\x9b2J \x7f del",
         b"quote\" back\\slash new\nline tab\t", b"valid \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"]
PHASE, JOB, HOST, EXE = b"\x1b[2J\x1b[H", b"job\x1b]0;title\x07", b"host\xc3", b"exe\x1b[31mred\x9b"
def safe(raw):
    text = raw.decode("utf-8", "replace")  # maximal subparts, as common/cs_utf8.h
    return "".join("?" if ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F else c for c in text)
def strict(path):
    """The file as text, failing on any invalid UTF-8 or control character but newlines."""
    text = open(path, "rb").read().decode("utf-8")  # strict
    bad = [c for c in text if c != "\n" and (ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F)]
    assert not bad, bad[:5]
    return text
PY
  # -- the exposition: promtool, the label values as expected
  "$cudasnap" metrics --once >"$dir/m.txt" || fail "metrics --once"
  promtool check metrics <"$dir/m.txt" >"$dir/promtool.out" 2>&1 || fail "promtool: $(cat "$dir/promtool.out")"
  "$python" - "$dir" "$pid_h" "$pid_t" "$pid_g" "${pid_u:-0}" "$utf8_source" "$nvtx" <<'PY' || fail "exposition: $(cat -v "$dir/m.txt" | head -c 3000)"
import re, sys
sys.path.insert(0, sys.argv[1])
from expect import *
d, h, t, g, u, source, nvtx = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6], sys.argv[7]
text = strict(d + "/m.txt")
label = re.compile(r'(\w+)="((?:\\.|[^"\\])*)"')
def unescape(v):
    return re.sub(r'\\(.)', lambda m: {"n": "\n"}.get(m.group(1), m.group(1)), v)
def samples(name, pid):
    out = []
    for line in text.splitlines():
        if line.startswith(name + "{") and f'pid="{pid}"' in line:
            out.append({k: unescape(v) for k, v in label.findall(line)})
    return out
sites = [s["site"] for s in samples("cudasnap_site_allocated_bytes", h)]
assert sites == [safe(s) for s in SITES], (sites, [safe(s) for s in SITES])
info = samples("cudasnap_process_info", h)
assert len(info) == 1, info
assert (info[0]["job"], info[0]["host"], info[0]["exe"]) == (safe(JOB), safe(HOST), safe(EXE)), info
# unterminated texts: each cut at its field, not run on into the next
info = samples("cudasnap_process_info", t)[0]
assert (info["job"], info["host"], info["exe"]) == ("j" * 127, "h" * 255, "e" * 255), info
sites = {s["site"] for s in samples("cudasnap_site_allocated_bytes", t)}
assert sites == {chr(ord("a") + k) * 239 for k in range(16)}, sorted(sites)[:2]
# real programs
info = samples("cudasnap_process_info", g)[0]
assert info["job"] == "job?[2J?[H" and info["exe"] == "exe?2J", info
if u != "0":
    site = samples("cudasnap_site_allocated_bytes", u)[0]["site"]
    whole = "live_hold " + source + ":"
    assert "\ufffd" not in site, site  # cut on a character, not inside one
    assert whole.startswith(site) and 237 <= len(site.encode()) <= 239, (site, whole)
PY
  # the writer cut the site name on a character: the record itself holds valid UTF-8
  if [[ -n $prog_utf8 ]]; then
    record=$(find /dev/shm -name "cudasnap-live-*-$pid_u" -o -path "*/cudasnap-live-*/*-$pid_u" | head -1)
    [[ -f $record ]] || fail "no record of $pid_u: $(find /dev/shm | head)"
    "$python" - "$record" <<'PY' || fail "the record's site name"
import sys
raw = open(sys.argv[1], "rb").read()
at = raw.index(b"live_hold ")
name = raw[at:raw.index(b"\0", at)]
assert 237 <= len(name) <= 239, len(name)
name.decode("utf-8")  # strict: no character cut in two
PY
  fi
  # -- a real Prometheus keeps the target up and every sample
  exporter e
  start_prometheus "$addr_e"
  until_prom 'up{job="cudasnap"}' 'len(r) == 1 and r[0]["value"][1] == "1"'
  until_prom "cudasnap_site_allocated_bytes{pid=\"$pid_h\"}" 'len(r) == 5'
  "$python" - "$dir" "$(query "cudasnap_site_allocated_bytes{pid=\"$pid_h\"}")" <<'PY' || fail "prometheus's site labels"
import json, sys
sys.path.insert(0, sys.argv[1])
from expect import *
got = sorted(json.loads(line)["metric"]["site"] for line in sys.argv[2].splitlines())
assert got == sorted(safe(s) for s in SITES), got
PY
  if [[ -n $prog_utf8 ]]; then
    until_prom "cudasnap_site_allocated_bytes{pid=\"$pid_u\"}" 'len(r) == 1 and r[0]["value"][1] == "4194304"'
  fi
  until_prom "cudasnap_process_info{pid=\"$pid_t\"}" 'len(r) == 1'

  # -- top --once --json: strict UTF-8, the same texts
  "$cudasnap" top --once --json >"$dir/top.json" || fail "top --once --json"
  "$python" - "$dir" "$pid_h" "$pid_t" "$pid_g" "$nvtx" <<'PY' || fail "top --json: $(cat -v "$dir/top.json" | head -c 3000)"
import json, sys
sys.path.insert(0, sys.argv[1])
from expect import *
d, h, t, g, nvtx = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
doc = json.loads(open(d + "/top.json", "rb").read().decode("utf-8"))
rows = {(p["pid"], p["device"]): p for p in doc["processes"]}
p = rows[(h, 0)]
assert p["phase"] == safe(PHASE) and p["host"] == safe(HOST), (p["phase"], p["host"])
assert [s["site"] for s in p["top_sites"]] == [safe(s) for s in SITES], p["top_sites"]
for k in (0, 1):
    p = rows[(t, k)]
    assert p["phase"] == "?" * 127 and p["host"] == "h" * 255, (p["phase"], p["host"])
    assert [s["site"] for s in p["top_sites"]] == [chr(ord("a") + s) * 239 for s in range(16)], p["top_sites"][:1]
if nvtx == "yes":
    assert rows[(g, 0)]["phase"] == "?[2J?[H", rows[(g, 0)]
PY
  # -- the table: no control character, valid UTF-8
  COLUMNS=200 "$cudasnap" top --once >"$dir/table" || fail "top --once"
  "$python" -c "
import sys; sys.path.insert(0, sys.argv[1])
from expect import *
strict(sys.argv[1] + '/table')" "$dir" || fail "the table: $(cat -v "$dir/table")"
  grep -qE "^ +$pid_h .* \?\[2J\?\[H +0 \?\[2J\?\[Hclear_screen" "$dir/table" || fail "h's row: $(cat -v "$dir/table")"

  # -- dump: "wrote PATH" and its messages
  "$cudasnap" dump "$pid_d" >"$dir/dump.out" 2>"$dir/dump.err" || fail "dump $pid_d: $(cat -v "$dir/dump.err")"
  grep -qx "wrote .*/?\[2J?\[Hsnap-$pid_d\.json" "$dir/dump.out" || fail "dump's line: $(cat -v "$dir/dump.out")"
  [[ -f $dir/$'\e[2J\e[H'snap-$pid_d.json ]] || fail "no file $(ls "$dir" | cat -v)"
  profiled n CUDASNAP_OUTPUT=$'nowhere/\e[2J\e[Hsnap.json'
  send n 2 "hold 0 1"
  "$cudasnap" dump --timeout 1 "$pid_n" >"$dir/dump.out" 2>"$dir/dump.err" && fail "dump into nowhere succeeded"
  grep -qF 'nowhere/?\[2J?\[Hsnap' "$dir/dump.err" || fail "dump's message: $(cat -v "$dir/dump.err")"
  grep -q "$esc" "$dir/dump.err" && fail "an escape in dump's message: $(cat -v "$dir/dump.err")"
  # run: its message, and the library's lines from the program it runs
  "$cudasnap" run -- $'\e[2Jnothing' 2>"$dir/run.err" && fail "run of nothing succeeded"
  grep -q 'cannot run ?\[2Jnothing' "$dir/run.err" || fail "run's message: $(cat -v "$dir/run.err")"
  # -- top in tmux: the screen is never cleared, whatever a name holds
  tmux_sock=$dir/tmux.sock
  (detached tmux -S "$tmux_sock" new-session -d -x 100 -y 30 "env TERM=dumb NO_COLOR=1 $cudasnap top --interval 0.5; sleep 30")
  screen() { tmux -S "$tmux_sock" capture-pane -p >"$dir/screen"; }
  until_screen() { # until_screen PATTERN...: until every PATTERN is on the screen at once (10 s at most)
    for _ in $(seq 100); do
      screen
      local all=1 p
      for p in "$@"; do grep -qE -- "$p" "$dir/screen" || all=0; done
      ((all)) && return 0
      sleep 0.1
    done
    fail "top never showed $* at once: $(cat -v "$dir/screen")"
  }
  title='^cudasnap top - '
  header='PID RANK DEV ALLOCATED'
  until_screen "$title" "$header" "^>? +$pid_g .*8\.0M" "^ +$pid_h .* \?\[2J\?\[H +0 \?\[2J\?\[Hclear_screen"
  [[ $nvtx == yes ]] && until_screen "$title" "$header" "^>? +$pid_g .* \?\[2J\?\[H +0 live_hold"
  # d on the process whose output pattern holds escapes: the message line
  for _ in $(seq 10); do
    screen
    grep -qE "^> +$pid_d " "$dir/screen" && break
    tmux -S "$tmux_sock" send-keys Down
    sleep 0.6
  done
  grep -qE "^> +$pid_d " "$dir/screen" || fail "cannot select $pid_d: $(cat -v "$dir/screen")"
  tmux -S "$tmux_sock" send-keys d
  until_screen "$title" "$header" "^wrote .*/\?\[2J\?\[Hsnap-$pid_d(-[0-9]+)?\.json"
  # the sites view of the hostile record
  for _ in $(seq 10); do
    screen
    grep -qE "^> +$pid_h " "$dir/screen" && break
    tmux -S "$tmux_sock" send-keys Down
    sleep 0.6
  done
  grep -qE "^> +$pid_h " "$dir/screen" || fail "cannot select $pid_h: $(cat -v "$dir/screen")"
  tmux -S "$tmux_sock" send-keys Enter
  until_screen "$title" "^pid $pid_h \(exe\?\[31mred[^ ]*\) " "  \?\[2J\?\[Hclear_screen" "  c1_csi \?2J \? del"
  tmux -S "$tmux_sock" send-keys q
  # the library's line as g ends: its executable's name in the file name, the C1 replaced
  eval "exec $fd_g>&-"
  wait "$pid_g"
  grep -q "^cudasnap: wrote .*exe?2J-$pid_g-" "$dir/g.err" || fail "the library's line: $(cat -v "$dir/g.err")"
  "$python" -c "
import sys; sys.path.insert(0, sys.argv[1])
from expect import *
strict(sys.argv[1] + '/g.err'); strict(sys.argv[1] + '/run.err')" "$dir" || fail "a control character: $(cat -v "$dir/g.err" "$dir/run.err")"
  ;;

*) fail "unknown test $test" ;;
esac
echo "ok [$test]"
