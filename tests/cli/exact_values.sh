#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `convert` keeps values exact where the formats allow (issue 33 item 6; docs/tool.md, "What
# convert keeps"): a JSON number too large for a double (1e400, which JSON.parse reads as Infinity)
# converts to JSON and to pickle, and both read back as Infinity in Python (json, pickle); strings
# with lone surrogate escapes ("\ud800", as JSON.parse keeps them) come back from JSON and from
# pickle (CPython's surrogatepass) as the same strings Python's json reads from the input, and a
# pickle made from them converts back to the same JSON.
#
#   exact_values.sh CUDASNAP PYTHON
set -euo pipefail
cudasnap=$1 python=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "exact_values: $*" >&2; exit 1; }

printf '{"segments": [], "device_traces": [], "big": 1e400, "small": -1e400}' >"$dir/inf.json"
for out in inf.out.json inf.out.pickle; do
  "$cudasnap" convert "$dir/inf.json" "$dir/$out" >"$dir/log" 2>&1 || { cat "$dir/log" >&2; fail "convert to $out refused 1e400"; }
done
"$python" - "$dir" <<'PY' || fail "1e400 did not read back as Infinity"
import json, math, pickle, sys
d = sys.argv[1]
for doc in (json.load(open(d + "/inf.out.json")), pickle.load(open(d + "/inf.out.pickle", "rb"))):
    assert doc["big"] == math.inf and doc["small"] == -math.inf, doc
PY
cat >"$dir/sur.json" <<'JSON'
{"segments": [], "device_traces": [],
 "lone": ["a\ud800b", "\udc00", "x\uDBFFy\uDBFF", "\ud800\u0041", "\udc00\ud800"],
 "pair": "\ud83d\ude00 \u00e9", "text": "not an escape: \\ud800", "k\udfff": "key"}
JSON
"$cudasnap" convert "$dir/sur.json" "$dir/sur.out.json" >"$dir/log" 2>&1 || { cat "$dir/log" >&2; fail "convert to JSON"; }
"$cudasnap" convert "$dir/sur.json" "$dir/sur.out.pickle" >"$dir/log" 2>&1 || { cat "$dir/log" >&2; fail "convert to pickle"; }
"$cudasnap" convert "$dir/sur.out.pickle" "$dir/sur.back.json" >"$dir/log" 2>&1 || { cat "$dir/log" >&2; fail "convert back"; }
"$python" - "$dir" <<'PY' || fail "lone surrogates were not kept"
import json, pickle, sys
d = sys.argv[1]
want = json.load(open(d + "/sur.json"))
got = {"json": json.load(open(d + "/sur.out.json")), "pickle": pickle.load(open(d + "/sur.out.pickle", "rb")),
       "pickle -> json": json.load(open(d + "/sur.back.json"))}
bad = {k: v for k, v in got.items() if v != want}
if bad:
    print("want", ascii(want), file=sys.stderr)
    for k, v in bad.items():
        print(k, ascii(v), file=sys.stderr)
    sys.exit(1)
PY
echo "exact_values: ok"
