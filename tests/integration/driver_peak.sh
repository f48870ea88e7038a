#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# driver_peak.sh SCENARIO BIN_DIR CUDASNAP_LIB CUDASNAP_TOOL
#
# Issue 28: a snapshot taken after the program fell from its peak says what the driver held at the
# peak (cudasnap.memory[].driver_at_peak), and `cudasnap summary` prints it. SCENARIO is a mode
# of it_driver_peak (prog_driver_peak.c), or passthrough (passthrough_burst): mode sampled (burst)
# with CUDASNAP_CACHE=0, where a free of memory passed through does not catch the peak up, so
# that the kept answer is, all but always, the one on the way up.
set -u
scenario=$1 bin=$2 lib=$3 tool=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() {
  echo "FAIL [$scenario]: $*" >&2
  [[ -f $dir/err ]] && head -c 3000 "$dir/err" >&2
  exit 1
}
mode=$scenario cache=1
[[ $scenario == passthrough ]] && mode=sampled cache=0
[[ $scenario == passthrough_burst ]] && mode=burst cache=0
(cd "$dir" && env LD_PRELOAD="$lib" CUDASNAP_CACHE=$cache CUDASNAP_DUMP_ON=none \
  "$bin/it_driver_peak" "$mode" "$dir/snap.json" >"$dir/out" 2>"$dir/err") || fail "it_driver_peak exited $?"
"$tool" check "$dir/snap.json" >"$dir/check" 2>&1 || fail "cudasnap check: $(cat "$dir/check")"
peak_used=$(sed -n 's/^peak_used //p' "$dir/out")
[[ -n $peak_used ]] || fail "the program printed no peak_used line"
# at_peak: whether the driver was asked at the peak itself (always, but in burst mode)
at_peak=$(python3 - "$dir/snap.json" "$peak_used" "$scenario" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
peak_used, scenario = int(sys.argv[2]), sys.argv[3]
m = s["cudasnap"]["memory"][0]
p = m["driver_at_peak"]
assert p["seen_bytes"] == 24 << 20, p
assert p["time_us"] <= s["cudasnap"]["time_us"], p
assert p["answered"], p
assert m["driver_known"] and m["driver_used"] < peak_used, (m, peak_used)
if scenario.endswith("burst") and not p["at_peak"]:
    # asked on the way up, and says so
    assert p["answer_seen_bytes"] < p["seen_bytes"] and p["answer_time_us"] <= p["time_us"], p
else:
    assert p["at_peak"] and p["answer_seen_bytes"] == p["seen_bytes"], p
    assert p["answer_time_us"] >= p["time_us"], p
    assert p["driver_used"] == peak_used, (p, peak_used)
    assert p["remainder"] == 0, p  # the fake driver counts no context and no modules
print(1 if p["at_peak"] else 0)
PY
) || fail "not the driver's answer at the peak"
"$tool" summary "$dir/snap.json" >"$dir/summary" || fail "cudasnap summary failed"
grep -q "^  at the peak of the cache + memory passed through, 25165824 B (24.0 MiB), at " "$dir/summary" ||
  fail "cudasnap summary does not show the peak: $(cat "$dir/summary")"
if ((at_peak)); then
  grep -q "^    the driver's answer at the peak, at " "$dir/summary" || fail "summary: no answer at the peak"
  grep -qE "^      driver used \(total - free\) +$peak_used B " "$dir/summary" ||
    fail "summary does not show the driver's used bytes at the peak ($peak_used): $(cat "$dir/summary")"
else
  # the answer from lower down is labelled as that moment's, with how far below the peak it was
  # (issue 46: "its answer on the way up, at 8388608 B" read as a figure of the peak)
  below=$(python3 -c 'import json, sys; p = json.load(open(sys.argv[1]))["cudasnap"]["memory"][0]["driver_at_peak"]
print(p["answer_seen_bytes"], p["seen_bytes"] - p["answer_seen_bytes"])' "$dir/snap.json")
  read -r then gap <<<"$below"
  gap_text=$(awk -v b="$gap" 'BEGIN { printf "%.1f MiB", b / 1048576 }')
  grep -qx "    no answer at the peak itself (the driver is asked at most once per 100 ms)" "$dir/summary" &&
    grep -qE "^    the driver's last answer before the peak, at .*, when the cache \+ memory passed through held $then B \
\([0-9.]+ [KM]iB\), $gap_text below the peak \(figures of that moment, not of the peak\):$" "$dir/summary" ||
    fail "summary does not say which moment the answer is of ($then B, $gap_text below): $(cat "$dir/summary")"
fi
exit 0
