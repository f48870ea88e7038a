#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# py_frames.sh LIBCUDASNAP CUDASNAP_TOOL PYTHON SOURCE_DIR
#
# Python frames (issue 12), from outside: tests/integration/py_frames.py (ctypes on the fake
# driver, which releases the GIL around the call as ctypes does) runs with cudasnap preloaded;
# the exit snapshot's frames must hold the Python caller's function, file and line where the
# interpreter's evaluation frames were, and the exit leak report and `cudasnap summary` must name
# that line. Then CUDASNAP_STACKS=python (Python frames alone) and =native (none of them).
# A CPython cudasnap does not read (before 3.9) must run as before, with native frames only and
# one debug line saying why.
# The fake driver must be on LD_LIBRARY_PATH.
set -u
lib=$1 tool=$2 python=$3 src=$4
prog=$src/tests/integration/py_frames.py
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL [py_frames]: $*" >&2; exit 1; }

# run MODE: the program under cudasnap with CUDASNAP_STACKS=MODE; snapshot in $dir/MODE.json
run() {
  env LD_PRELOAD="$lib" CUDASNAP_STACKS="$1" CUDASNAP_DUMP_ON=exit CUDASNAP_OUTPUT="$dir/$1.json" \
    "$python" "$prog" 5 >"$dir/out" 2>"$dir/err" || fail "$1: exit status $?: $(cat "$dir/err")"
  [[ -s $dir/$1.json ]] || fail "$1: no snapshot: $(cat "$dir/err")"
}

# frames MODE: the frames of the snapshot's 3 MiB block, one "name|file|line" a line
frames() {
  "$python" - "$dir/$1.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
blocks = [b for s in d["segments"] for b in s["blocks"] if b["state"] == "active_allocated"]
big = [b for b in blocks if b["requested_size"] == 3 << 20]
assert len(big) == 1, "one 3 MiB block live at exit, got %d" % len(big)
for f in big[0]["frames"]:
    print("%s|%s|%s" % (f["name"], f["filename"], f["line"]))
PY
}

version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])') || fail "$python does not run"
case $version in
  3.9 | 3.10 | 3.11 | 3.12 | 3.13) ;;
  *)
    CUDASNAP_LOG=debug run all
    frames all >"$dir/frames" || fail "reading the snapshot"
    grep -q '\.py|' "$dir/frames" && fail "Python $version: Python frames from an interpreter not known: $(cat "$dir/frames")"
    [[ $(grep -c 'debug: Python frames:' "$dir/err") -eq 1 ]] || fail "Python $version: not one debug line: $(cat "$dir/err")"
    grep -q "debug: Python frames: CPython $version is not one cudasnap knows (3.9 to 3.13); native frames only" "$dir/err" || fail "Python $version: $(cat "$dir/err")"
    exit 0
    ;;
esac

run all
line=$(sed -n 's/^site_line=//p' "$dir/out")
[[ $line =~ ^[0-9]+$ ]] || fail "no site_line from the program: $(cat "$dir/out")"
frames all >"$dir/frames" || fail "reading the snapshot"
here="$prog"
# The Python caller, at its line, below ctypes' native frames; then the nested calls and main.
grep -qxF "allocate_weights|$here|$line" "$dir/frames" || fail "no allocate_weights frame at line $line: $(cat "$dir/frames")"
first_py=$(grep -n '\.py|' "$dir/frames" | head -1 | cut -d: -f1)
ffi=$(grep -n '^ffi_call|' "$dir/frames" | head -1 | cut -d: -f1)
[[ -n $ffi && $ffi -lt $first_py ]] || fail "native ctypes frames should come before the Python caller: $(cat "$dir/frames")"
[[ $(grep -c "^nested|$here|" "$dir/frames") -eq 6 ]] || fail "expected 6 nested frames: $(cat "$dir/frames")"
grep -q "^main|$here|" "$dir/frames" && grep -q "^<module>|$here|" "$dir/frames" || fail "no main/<module>: $(cat "$dir/frames")"
# The Python frames stand where the evaluation frames were.
grep -q '^_PyEval_EvalFrameDefault|' "$dir/frames" && fail "an evaluation frame was left: $(cat "$dir/frames")"
# The exit leak report and the tool name the line.
grep -qE "^cudasnap:   3\.0 MiB in 1 block: allocate_weights \($here:$line\)$" "$dir/err" ||
  fail "leak report: $(cat "$dir/err")"
"$tool" summary "$dir/all.json" >"$dir/summary" || fail "summary failed"
top=$(grep -m1 -A1 '^top allocation sites by live bytes:$' "$dir/summary" | tail -1)
[[ $top == "  3145728 B (3.0 MiB) in 1 block: allocate_weights $here:$line" ]] || fail "summary's top site: '$top'"
grep -q '"stacks": *"all"' "$dir/all.json" || fail "the snapshot does not say stacks=all"

# Threads at once: each block's stack is its own thread's (worker, and i + 1 nested calls).
env LD_PRELOAD="$lib" CUDASNAP_DUMP_ON=exit CUDASNAP_OUTPUT="$dir/threads.json" "$python" "$prog" threads \
  >"$dir/out" 2>"$dir/err" || fail "threads: exit status $?: $(cat "$dir/err")"
"$python" - "$dir/threads.json" "$here" <<'PY' || fail "threads: $(cat "$dir/err")"
import json, sys
d = json.load(open(sys.argv[1]))
here = sys.argv[2]
live = [b for s in d["segments"] for b in s["blocks"] if b["state"] == "active_allocated"]
for i in range(4):
    block = [b for b in live if b["requested_size"] == (i + 1) << 20]
    assert len(block) == 1, "thread %d: %d blocks" % (i, len(block))
    names = [f["name"] for f in block[0]["frames"] if f["filename"] == here]
    want = ["allocate_weights"] + ["nested"] * (i + 2) + ["worker"]
    assert names == want, "thread %d: %s" % (i, names)
PY

run python
frames python >"$dir/frames" || fail "reading the python-only snapshot"
[[ $(head -1 "$dir/frames") == "allocate_weights|$here|$line" ]] || fail "python: first frame: $(cat "$dir/frames")"
grep -v '\.py|' "$dir/frames" && fail "python: a native frame: $(cat "$dir/frames")"

run native
frames native >"$dir/frames" || fail "reading the native snapshot"
grep -q '\.py|' "$dir/frames" && fail "native: a Python frame: $(cat "$dir/frames")"
grep -q '^_PyEval_EvalFrameDefault|' "$dir/frames" || fail "native: no evaluation frame: $(cat "$dir/frames")"
exit 0
