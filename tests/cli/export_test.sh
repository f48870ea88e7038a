#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# export_test.sh CUDASNAP SOURCE_DIR PYTHON [TRAIN_STEP]
#
# `cudasnap export`, read back by real readers: `go tool pprof` (-raw, -top, -diff_base) for the
# pprof exports, the npm package pprof-format as a second reader of them, and export_check.py (Perfetto's JSON importer rules, the peak) for the Perfetto
# one, on real PyTorch snapshots (tests/data/traces) and a cudasnap one (tests/golden/cli/inputs),
# and, given TRAIN_STEP, a snapshot of examples/train_step.c made here (the caller puts the fake
# driver on LD_LIBRARY_PATH).
# Exits 77 (skipped) without `go`, which scripts/setup.sh installs (Debian's golang-go).
set -u
cudasnap=$1 src=$2 python=$3 train_step=${4:-}
check() { "$python" "$src/tests/cli/export_check.py" "$@"; }
fail() { echo "FAIL [export]: $*" >&2; exit 1; }
command -v go >/dev/null || { echo "export: no go (apt-get install golang-go): skipped"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export GOCACHE=$dir/gocache HOME=$dir # go tool pprof writes its cache and history under them
inputs=("$src/tests/golden/cli/inputs/api.json" "$src"/tests/data/traces/*.pickle)
if [[ -n $train_step ]]; then # the example, as scripts/example.sh profiles it
  "$cudasnap" run -o "$dir/train_step-%t.json" -- "$train_step" 20 >/dev/null 2>"$dir/err" ||
    fail "cudasnap run train_step: $(cat "$dir/err")"
  inputs+=("$dir/train_step-exit.json")
fi
pprof_format=$src/.cache/npm/node_modules
[[ -d $pprof_format ]] || echo "export: no pprof-format under .cache/npm (scripts/setup.sh installs it with npm): go tool pprof only"

# ---- pprof ----------------------------------------------------------------------------------------
for f in "${inputs[@]}"; do
  name=$(basename "${f%.*}")
  "$cudasnap" export --format pprof -o "$dir/$name.pb.gz" "$f" >/dev/null || fail "export pprof $f"
  go tool pprof -raw "$dir/$name.pb.gz" >"$dir/$name.raw" 2>"$dir/err" || fail "pprof -raw $f: $(cat "$dir/err")"
  check pprof-raw "$dir/$name.raw" "$f" || exit 1
  # A second reader: the npm package pprof-format (scripts/setup.sh installs it under .cache/).
  if [[ -d $pprof_format ]] && command -v node >/dev/null; then
    node "$src/tests/cli/pprof_format_read.mjs" "$pprof_format" "$dir/$name.pb.gz" >"$dir/$name.pf" ||
      fail "pprof-format cannot read the export of $f"
    check pprof-format "$dir/$name.pf" "$f" || exit 1
  fi
  # The top site of `summary` (the first user frame of the stacks with the most live bytes) is
  # among pprof's lines by cumulative in-use bytes, with at least its bytes.
  top=$("$cudasnap" summary "$f" | sed -n '/^top allocation sites by live bytes:/{n;p;q}')
  go tool pprof -top -cum -lines -unit=byte -nodecount=100000 "$dir/$name.pb.gz" >"$dir/$name.top" 2>"$dir/err" ||
    fail "pprof -top $f: $(cat "$dir/err")"
  if [[ $top =~ ^\ +([0-9]+)\ B.*:\ \(no\ stack\)$ ]]; then # blocks from before recording began
    bytes=${BASH_REMATCH[1]} func="(no stack)" base="" line=""
    row=$(grep -F " (no stack)" "$dir/$name.top" | head -1)
  elif [[ $top =~ ^\ +([0-9]+)\ B.*:\ ([^ ]+)\ (.+):([0-9]+)$ ]]; then
    bytes=${BASH_REMATCH[1]} func=${BASH_REMATCH[2]} base=$(basename "${BASH_REMATCH[3]}") line=${BASH_REMATCH[4]}
    # pprof's short names drop what is in angle brackets (C++ templates), Python's <module> too
    shown=$([[ $func == '<'* ]] || echo " $func ")
    # line 0: no line information (a build without -g); pprof then shows the file alone
    where=$base:$line
    ((line == 0)) && where=$base
    row=$(grep -F -- "$shown" "$dir/$name.top" | grep -F "$where" | head -1)
  else
    fail "no top site in summary of $f: '$top'"
  fi
  [[ -n $row ]] || fail "$f: summary's top site '$top' is not in pprof -top: $(head -20 "$dir/$name.top")"
  cum=$(awk '{print $4}' <<<"$row" | tr -d B)
  ((cum >= bytes)) || fail "$f: pprof's $func $base:$line has $cum B cumulative, summary's site $bytes B"
  echo "ok pprof top site $name: $func $base:$line ($bytes B; pprof cum $cum B)"
  # The leaf of every sample is its site: pprof's first row by flat bytes is summary's top site
  # (by line), and the function whose sites sum to most (by function, pprof's default).
  "$cudasnap" summary --top 1000000 "$f" >"$dir/$name.summary" || fail "summary $f"
  go tool pprof -top -unit=byte "$dir/$name.pb.gz" >"$dir/$name.flat" 2>/dev/null || fail "pprof -top $f"
  go tool pprof -top -lines -unit=byte "$dir/$name.pb.gz" >"$dir/$name.flatlines" 2>/dev/null || fail "pprof -top -lines $f"
  check pprof-top "$dir/$name.summary" "$dir/$name.flat" "$dir/$name.flatlines" || fail "$f: pprof's leaf is not summary's site"
done
# --all-frames keeps the allocator's frames: the example's leaf is then cudaMalloc's side.
if [[ -n $train_step ]]; then
  "$cudasnap" export --format pprof --all-frames -o "$dir/all.pb.gz" "$dir/train_step-exit.json" >/dev/null || fail "--all-frames"
  first=$(go tool pprof -top -unit=byte "$dir/all.pb.gz" 2>/dev/null | awk '/flat%/{getline; print $6; exit}')
  [[ $first != main ]] || fail "--all-frames: the leaf is still the site ($first)"
  echo "ok pprof --all-frames: leaf $first"
fi
# The native snapshot's leaf is its site: pprof's top line by flat bytes is summary's top site.
flat=$(go tool pprof -top -lines -unit=byte "$dir/api.pb.gz" 2>/dev/null | awk '/flat%/{getline; print; exit}')
[[ $flat =~ ^\ *9437184B\ .*allocate_weights\ .*prog_snapshot_api.c:16 ]] || fail "api: pprof's top flat line: '$flat'"
# --at peak: the in-use samples are the blocks live at the peak (summary's peak line).
"$cudasnap" export --format pprof --at peak -o "$dir/peak.pb.gz" "${inputs[1]}" >/dev/null || fail "export --at peak"
peak=$("$cudasnap" summary "${inputs[1]}" | sed -n "s/^top allocation sites at the trace's peak (\([0-9]*\) B.*/\1/p")
got=$(go tool pprof -raw "$dir/peak.pb.gz" 2>/dev/null | awk '/^Samples:/{s=1;next} /^Locations/{s=0} s && /:/{t+=$2} END{printf "%.0f\n", t}')
[[ $got == "$peak" ]] || fail "--at peak: in-use bytes $got, summary's peak $peak"
echo "ok pprof --at peak: $got B"
# -diff_base: two runs compared by site; what the nodes account for is the difference of the totals.
a=$dir/cs336-MAGMA27_memory_snapshot_pythononly.pb.gz b=$dir/cs336-kkaitlyn111_memory_ctx128_fullstep.pb.gz
go tool pprof -top -unit=byte -nodefraction=0 -diff_base="$a" "$b" >"$dir/diff" 2>"$dir/err" || fail "-diff_base: $(cat "$dir/err")"
total() { go tool pprof -top -unit=byte "$1" 2>/dev/null | sed -n 's/.* of \(-\{0,1\}[0-9]*\)B total.*/\1/p'; }
want=$(($(total "$b") - $(total "$a")))
grep -q "accounting for ${want}B, " "$dir/diff" || fail "-diff_base total is not $want B: $(head -5 "$dir/diff")"
echo "ok pprof -diff_base: $want B"

# ---- perfetto -------------------------------------------------------------------------------------
"$cudasnap" export --format perfetto -o "$dir/all.trace.json" "${inputs[@]}" >/dev/null || fail "export perfetto"
peaks=()
for f in "${inputs[@]}"; do
  peaks+=("$("$cudasnap" summary "$f" | sed -n "s/^top allocation sites at the trace's peak (\([0-9]*\) B.*/\1/p" | head -1)")
done
check perfetto "$dir/all.trace.json" "${peaks[@]}" || exit 1

# An OOM (the example on a 64 MiB device, as rank 3 of 4): the last OOM event's arguments carry
# summary's answer, and the process's name its rank.
if [[ -n $train_step ]]; then
  env FAKE_CUDA_CAPACITY=$((64 << 20)) RANK=3 WORLD_SIZE=4 "$cudasnap" run -o "$dir/oom-%n-%t.json" -- "$train_step" 20 \
    >/dev/null 2>&1
  oomsnap=$(ls "$dir"/oom-*-oom.json 2>/dev/null | head -1)
  [[ -n $oomsnap ]] || fail "train_step on a 64 MiB device wrote no OOM snapshot"
  "$cudasnap" export --format perfetto -o "$dir/oom.trace.json" "$oomsnap" >/dev/null || fail "export perfetto of the OOM"
  "$cudasnap" summary "$oomsnap" >"$dir/oom.summary" || fail "summary of the OOM"
  "$python" - "$dir/oom.trace.json" "$dir/oom.summary" <<'PY' || fail "the Perfetto OOM event does not carry the answer"
import json, re, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
summary = open(sys.argv[2]).read()
m = re.search(r"^out of memory on device (\d+), stream (\d+): (.*)$", summary, re.M)
assert m, "no OOM answer in summary"
verdict = re.search(r"^  verdict: (.*)$", summary, re.M).group(1)
# summary lists the sites it announces on lines of their own; the event says them in the sentence
holders = re.findall(r"^    (\S+ \S+) in (\d+ blocks?): (.*)$", summary, re.M)
if verdict.endswith(":"):
    verdict += "".join("%s %s in %s by %s" % (";" if i else "", h[0], h[1], h[2]) for i, h in enumerate(holders))
site = re.search(r"^  asked by (.*)$", summary, re.M).group(1)
ooms = [e for e in events if e.get("name") == "OOM"]
assert ooms, "no OOM event"
args = ooms[-1]["args"]
assert args.get("message") == m.group(3), (args, m.group(3))
assert args.get("verdict") == verdict and args.get("site") == site, (args, verdict)
assert not verdict.endswith(":"), verdict
assert args.get("device") == int(m.group(1)) and args.get("stream") == int(m.group(2)), args
assert all(k in args for k in ("size", "device_free", "driver_total", "cache_reserved", "cache_free", "largest_free_block")), args
names = [e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"]
assert names and names[0].startswith("rank 3: "), names
print("ok perfetto OOM: %s; process %s" % (args["message"], names[0]))
PY
fi

# ---- bad input: one line naming the file, exit 1; nothing written -----------------------------------
printf '{"segments": 5' >"$dir/bad.json"
"$cudasnap" export --format pprof -o "$dir/bad.pb.gz" "$dir/bad.json" >"$dir/out" 2>"$dir/err" && fail "bad input exited 0"
[[ $(wc -l <"$dir/err") -eq 1 ]] && grep -qF "$dir/bad.json:" "$dir/err" || fail "bad input: $(cat "$dir/err")"
[[ ! -e $dir/bad.pb.gz ]] || fail "bad input left $dir/bad.pb.gz"
"$cudasnap" export --format perfetto -o "$dir/bad.trace.json" "${inputs[0]}" "$dir/bad.json" >"$dir/out" 2>"$dir/err" &&
  fail "perfetto bad input exited 0"
[[ $(wc -l <"$dir/err") -eq 1 ]] && grep -qF "$dir/bad.json:" "$dir/err" || fail "perfetto bad input: $(cat "$dir/err")"
[[ ! -e $dir/bad.trace.json ]] || fail "perfetto bad input left a file"
"$cudasnap" export --format svg "${inputs[0]}" >"$dir/out" 2>"$dir/err"
[[ $? -eq 2 && $(wc -l <"$dir/err") -eq 1 ]] || fail "--format svg: $(cat "$dir/err")"
echo "ok bad input"
