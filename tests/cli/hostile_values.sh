#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Values at the int64 limits in a snapshot (issue 33 item 6): a segment of 9e18 bytes twice, times
# from -9e18 to 9e18 and a phase across them. `export --format perfetto` (a time span, a phase's
# duration, the tracks' sums) and `ranks --full` (the reserved bytes' sum) must neither overflow
# (undefined behaviour: the UBSan build aborts) nor write wrapped numbers: every duration and
# counter value is >= 0 and the reserved peak is held at the int64 limit.
#
#   hostile_values.sh CUDASNAP PYTHON
set -euo pipefail
cudasnap=$1 python=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

big=9000000000000000000
cat >"$dir/limits.json" <<JSON
{"segments": [
  {"device": 0, "address": 4096, "total_size": $big, "allocated_size": 0, "active_size": 0,
   "requested_size": 0, "stream": 0, "segment_type": "large", "segment_pool_id": [0, 0],
   "is_expandable": false, "frames": [],
   "blocks": [{"address": 4096, "size": $big, "requested_size": 0, "state": "inactive", "frames": []}]},
  {"device": 0, "address": 4096, "total_size": $big, "allocated_size": 0, "active_size": 0,
   "requested_size": 0, "stream": 0, "segment_type": "large", "segment_pool_id": [0, 0],
   "is_expandable": false, "frames": [],
   "blocks": [{"address": 4096, "size": $big, "requested_size": 0, "state": "inactive", "frames": []}]}],
 "device_traces": [[
  {"action": "segment_alloc", "addr": 4096, "size": $big, "stream": 0, "time_us": -$big, "frames": []},
  {"action": "segment_alloc", "addr": 4096, "size": $big, "stream": 0, "time_us": 0, "frames": []},
  {"action": "alloc", "addr": 4096, "size": $big, "stream": 0, "time_us": $big, "frames": []}]],
 "external_annotations": [
  {"device": 0, "stage": "START", "name": "whole", "time_us": -$big},
  {"device": 0, "stage": "END", "name": "whole", "time_us": $big}]}
JSON

fail() { echo "hostile_values: $*" >&2; exit 1; }

"$cudasnap" export --format perfetto -o "$dir/out.trace.json" "$dir/limits.json" >"$dir/export.out" 2>&1 ||
  { cat "$dir/export.out" >&2; fail "export --format perfetto failed"; }
"$python" - "$dir/out.trace.json" <<'PY' || fail "export --format perfetto wrote wrapped numbers"
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
bad = [e for e in events if e.get("dur", 0) < 0 or any(isinstance(v, int) and v < 0 for v in e.get("args", {}).values()
                                                         if e.get("ph") == "C")]
phases = [e for e in events if e.get("ph") == "X" and e.get("name") == "whole"]
if bad or len(phases) != 1 or phases[0]["dur"] != 2**63 - 1:
    print("negative or wrong:", bad[:3], phases, file=sys.stderr)
    sys.exit(1)
PY

"$cudasnap" ranks --json --full "$dir/limits.json" >"$dir/ranks.json" 2>"$dir/ranks.err" ||
  { cat "$dir/ranks.err" >&2; fail "ranks --full failed"; }
"$python" - "$dir/ranks.json" <<'PY' || fail "ranks --full wrote a wrapped reserved peak"
import json, sys
doc = json.load(open(sys.argv[1]))
rows = doc["ranks"] if isinstance(doc, dict) else doc
peaks = [r.get("peak_reserved") for r in rows]
if peaks != [2**63 - 1]:
    print("peak_reserved:", peaks, file=sys.stderr)
    sys.exit(1)
PY
echo "hostile_values: ok"
