#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# threads_history.sh BIN_DIR CUDASNAP_LIB CUDASNAP_TOOL FREE_MODE
#
# Issue 27: 16 threads allocate at once (it_threads); the exit snapshot's history, kept in
# per-thread chunks and merged by event number, must replay by the viewer's rules (`cudasnap
# check` clean), once with the whole history and once with a history small enough to wrap many
# times (a suffix of what happened, never one with holes), and keep the entries it promises.
set -u
bin=$1 lib=$2 tool=$3 mode=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() {
  echo "FAIL [threads_history $mode]: $*" >&2
  [[ -f $dir/err ]] && head -c 3000 "$dir/err" >&2
  exit 1
}
for entries in 1000000 3000; do
  rm -f "$dir"/*.json
  (cd "$dir" && env LD_PRELOAD="$lib" CUDASNAP_DUMP_ON=exit CUDASNAP_FREE="$mode" CUDASNAP_FREE_STREAM_ACK=1 CUDASNAP_MAX_ENTRIES=$entries \
    CUDASNAP_OUTPUT="$dir/t-%n-%t.json" "$bin/it_threads" >"$dir/out" 2>"$dir/err") || fail "it_threads exited $?"
  f=$(ls "$dir"/t-*-exit.json 2>/dev/null | head -n1)
  [[ -n $f ]] || fail "no exit snapshot (entries $entries)"
  "$tool" check "$f" >"$dir/check" 2>&1 || fail "cudasnap check, entries $entries: $(head -c 2000 "$dir/check")"
  n=$(python3 -c 'import json, sys; print(sum(len(t) for t in json.load(open(sys.argv[1]))["device_traces"]))' "$f")
  if [[ $entries == 3000 ]]; then
    [[ $n == 3000 ]] || fail "a wrapped history of 3000 entries kept $n"
  else
    ((n > 3000)) || fail "the whole history has only $n entries"
  fi
done
echo "threads_history $mode: both histories replay"
