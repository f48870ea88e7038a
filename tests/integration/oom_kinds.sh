#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# oom_kinds.sh BIN_DIR CUDASNAP_LIB CUDASNAP_TOOL
#
# Issue 44, item 3: it_oom_kinds gets CUDA_ERROR_OUT_OF_MEMORY from every kind of allocation
# (without cudasnap too: the driver's answers are the program's). Under cudasnap, the exit
# snapshot's num_ooms and its `oom` entries are the device answers the program counted, each entry
# with the size asked, device_free and a stream; the OOM snapshots, coalesced, account for every
# answer, host ones included; every snapshot is clean for `cudasnap check`.
set -u
bin=$1 lib=$2 tool=$3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL [oom_kinds]: $*" >&2; exit 1; }
export FAKE_CUDA_CAPACITY=$((64 << 20)) FAKE_CUDA_HOST_CAPACITY=$((1 << 20))
env -u LD_PRELOAD CS_IT_EXPECT_PRELOAD=0 "$bin/it_oom_kinds" >"$dir/out0" 2>"$dir/err0" ||
  fail "without cudasnap it exited $?: $(head -c 2000 "$dir/err0")"
(cd "$dir" && env LD_PRELOAD="$lib" CS_IT_EXPECT_PRELOAD=1 CUDASNAP_DUMP_ON=oom,exit CUDASNAP_OUTPUT="$dir/snap-%n-%t.json" \
  "$bin/it_oom_kinds" >"$dir/out" 2>"$dir/err") || fail "it_oom_kinds exited $?: $(head -c 2000 "$dir/err")"
cmp -s "$dir/out0" "$dir/out" || fail "the answers differ with cudasnap: $(cat "$dir/out0" "$dir/out")"
device=$(sed -n 's/^device_ooms //p' "$dir/out")
host=$(sed -n 's/^host_ooms //p' "$dir/out")
for f in "$dir"/snap-*.json; do
  "$tool" check "$f" >"$dir/check" 2>&1 || fail "cudasnap check $f: $(head -c 2000 "$dir/check")"
done
python3 - "$device" "$host" "$dir"/snap-*.json <<'PY' || fail "the snapshots do not count the answers"
import json, sys
device, host = int(sys.argv[1]), int(sys.argv[2])
snaps = [json.load(open(f)) for f in sys.argv[3:]]
exits = [s for s in snaps if s["cudasnap"]["trigger"] == "exit"]
ooms = [s for s in snaps if s["cudasnap"]["trigger"] == "oom"]
assert len(exits) == 1, [s["cudasnap"]["trigger"] for s in snaps]
s = exits[0]
num_ooms = s["cudasnap"]["memory_stats"][0]["num_ooms"]
entries = [e for e in s["device_traces"][0] if e["action"] == "oom"]
assert num_ooms == device, f"num_ooms {num_ooms}, the program got {device}"
assert len(entries) == device, f"{len(entries)} oom entries, the program got {device}"
for e in entries:
    assert e["size"] > 0 and "device_free" in e and "stream" in e and "addr" not in e, e
assert sum(1 for e in entries if e["stream"] != 0) == 4, "async, pool, upload and launch name their stream"
pass_ooms = {k: v for k, v in s["cudasnap"]["passthrough_stats"][0].items() if k.startswith("passthrough_ooms.")}
assert sum(pass_ooms.values()) == device - 1, pass_ooms  # all but the cache's own
assert s["cudasnap"]["passthrough_stats"][-1]["passthrough_ooms.host_pinned"] == host
answered = sum(o["cudasnap"]["oom_coalesced"] + 1 for o in ooms)
assert answered == device + host, f"the OOM snapshots account for {answered} answers, not {device + host}"
print(f"oom_kinds: {device} device and {host} host answers, in num_ooms, oom entries and {len(ooms)} OOM snapshots")
PY
