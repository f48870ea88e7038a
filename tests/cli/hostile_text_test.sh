#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# hostile_text_test.sh CUDASNAP LIBCUDASNAP IT_SERVER PYTHON
#
# Issue 45 item 2 on the read side: a real snapshot of the server shape (IT_SERVER on the fake
# driver, the caller puts tests/fakes on LD_LIBRARY_PATH) whose names were then made hostile by
# hostile_text.py (escape sequences, C1, DEL, NUL, newlines, a lone surrogate, U+2028/U+2029,
# `</script>`, a 20,000-byte name, raw invalid UTF-8 in a JSON file and in a pickle). Every
# subcommand that reads snapshots prints only text safe for a terminal (stdout and stderr), every
# JSON it writes is strict UTF-8 and loads, and the report's embedded data cannot end its script
# element.
set -u
cudasnap=$1 lib=$2 server=$3 python=$4
here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "FAIL [hostile_text]: $*" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
(cd "$dir" && env FAKE_CUDA_CAPACITY=$((64 << 20)) LD_PRELOAD="$lib" CS_IT_EXPECT_PRELOAD=1 CUDASNAP_DUMP_ON=oom,exit \
  CUDASNAP_OUTPUT="$dir/snap-%n-%t.json" "$server" 10 >"$dir/server.out" 2>"$dir/server.err") ||
  fail "it_server: $(head -c 2000 "$dir/server.err")"
exit_snap=$(ls "$dir"/snap-*-exit.json) && oom_snap=$(ls "$dir"/snap-*-oom.json | head -1) || fail "no snapshots"
"$python" "$here/hostile_text.py" make "$exit_snap" "$dir" || fail "hostile_text.py make"
terminal() { "$python" "$here/hostile_text.py" terminal "$@" || fail "not safe for a terminal: $*"; }
json() { "$python" "$here/hostile_text.py" json "$@" || fail "not strict UTF-8 JSON: $*"; }
for f in hostile.json hostile_raw.json hostile.pickle; do
  in=$dir/$f b=$dir/${f/./_}
  "$cudasnap" summary "$in" >"$b.summary" 2>&1 || fail "summary $f: $(head -c 2000 "$b.summary")"
  grep -q 'request' "$b.summary" || fail "summary $f names no phase: $(head -c 3000 "$b.summary")"
  "$cudasnap" check "$in" >"$b.check" 2>&1
  "$cudasnap" diff "$oom_snap" "$in" >"$b.diff" 2>&1 || fail "diff $f: $(head -c 2000 "$b.diff")"
  "$cudasnap" ranks "$in" "$oom_snap" >"$b.ranks" 2>&1 || fail "ranks $f: $(head -c 2000 "$b.ranks")"
  "$cudasnap" ranks --json "$in" "$oom_snap" >"$b.ranks.json" 2>"$b.ranks.err" || fail "ranks --json $f"
  "$cudasnap" export --format pprof -o "$b.pb.gz" "$in" >"$b.export" 2>&1 || fail "export pprof $f"
  "$cudasnap" export --format perfetto -o "$b.perfetto.json" "$in" >>"$b.export" 2>&1 || fail "export perfetto $f"
  "$cudasnap" report -o "$b.html" "$in" >"$b.report" 2>&1 || fail "report $f: $(head -c 2000 "$b.report")"
  "$cudasnap" convert --force "$in" "$b.conv.json" >"$b.convert" 2>&1 || fail "convert $f"
  "$cudasnap" convert --force "$in" "$b.conv.pickle" >>"$b.convert" 2>&1 || fail "convert $f to a pickle"
  terminal "$b.summary" "$b.check" "$b.diff" "$b.ranks" "$b.ranks.err" "$b.export" "$b.report" "$b.convert"
  json "$b.ranks.json"
  json "$b.perfetto.json"
  json "$b.conv.json"
  "$python" - "$b.html" <<'PY' || fail "the report's page of $f"
import sys
page = open(sys.argv[1], "rb").read().decode("utf-8")
# the template's own script elements only: no name closed one or opened another
assert page.count("<script") == 2 and page.count("</script") == 2, (page.count("<script"), page.count("</script"))
for bad in ("\u2028", "\u2029", "<b>x</b>", "alert(1)</"):
    assert bad not in page, repr(bad)
PY
  if command -v go >/dev/null; then
    go tool pprof -top "$b.pb.gz" >"$b.pprof" 2>&1 || fail "go tool pprof -top $f: $(head -c 2000 "$b.pprof")"
  fi
done
echo "hostile_text: ok"
