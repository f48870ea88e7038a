#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""passthrough_check.py SNAPSHOT STDOUT WHEN

Checks a snapshot of prog_passthrough (JSON or pickle) against what the program printed:
  - every kind the program allocated is drawn: a segment of that kind (its `cudasnap` kind) whose
    blocks' frames name the allocating function, and a trace entry of it (alloc) on its device;
  - VMM mappings form expandable segments; stream-ordered ones keep their stream;
  - per device, the reconciliation adds up: accounted == driver_used, remainder 0, and the
    devices' driver_used sum to the fake driver's bytes in use at that moment (WHEN: dump); an
    exit snapshot (WHEN: exit) has asked it too, as the process ended, and adds up the same way;
  - pinned host memory is not drawn but reported under cudasnap.host_memory.
"""
import json
import pickle
import sys

path, out_path, when = sys.argv[1:4]
snap = pickle.load(open(path, "rb")) if path.endswith(".pickle") else json.load(open(path))
lines = open(out_path).read().splitlines()
sites = [l.split()[1:] for l in lines if l.startswith("site ")]
in_use = int(next(l.split()[1] for l in lines if l.startswith(f"in_use_at_{when} ")))
cs = snap["cudasnap"]
errors = []


def names(frames):
    return {f["name"] for f in frames or []}


segments = snap["segments"]
kinds = {}
for seg in segments:
    kind = seg["cudasnap"]["kind"]
    kinds.setdefault(kind, []).append(seg)
    if kind == "vmm_mapped" and not seg["is_expandable"]:
        errors.append(f"a VMM segment is not expandable: {seg['address']:#x}")
    if kind != "vmm_mapped" and seg["is_expandable"]:
        errors.append(f"a {kind} segment is expandable")

drawn = {"device", "pitch", "managed", "async", "array", "vmm_mapped", "graph", "cached"}
freed_before_dump = {"alloc_array_3d"}  # its only allocation is destroyed at once
for kind, function in sites:
    if kind not in drawn or function in freed_before_dump:
        continue
    found = any(function in names(b.get("frames")) for seg in kinds.get(kind, []) for b in seg["blocks"])
    if not found and when == "dump":
        errors.append(f"no {kind} segment has a block made in {function}")

if when == "dump":
    for kind in drawn - {"cached"}:
        if kind not in kinds:
            errors.append(f"no segment of kind {kind}")
    streams = {seg["stream"] for seg in kinds.get("async", []) if seg["device"] == 0}
    if len(streams) < 2:
        errors.append(f"stream-ordered segments of device 0 are on {len(streams)} stream(s), expected 2")
    vmm0 = sorted((s["address"], s["total_size"], len(s["blocks"])) for s in kinds["vmm_mapped"] if s["device"] == 0)
    # the range: [0, 2) mapped, [2, 6) unmapped, [6, 8) mapped, [10, 14) mapped, in MiB
    if [(sz >> 20, n) for _, sz, n in vmm0] != [(2, 1), (2, 1), (4, 1)]:
        errors.append(f"device 0's VMM segments are {vmm0}")
    vmm1 = sorted((s["total_size"] >> 20, len(s["blocks"])) for s in kinds["vmm_mapped"] if s["device"] == 1)
    # one page of range1; two pages mapped one after the other in the PyTorch-like range: one segment
    if vmm1 != [(2, 1), (4, 2)]:
        errors.append(f"device 1's VMM segments are {vmm1}")
    actions = {e["action"] for t in snap["device_traces"] for e in t}
    for a in ("segment_map", "segment_unmap", "segment_alloc", "segment_free", "alloc", "free_completed"):
        if a not in actions:
            errors.append(f"no {a} in the trace")

total_used = 0
for m in cs["memory"]:
    if not m["driver_known"]:
        errors.append(f"device {m['device']}: the driver was not asked")
        continue
    total_used += m["driver_used"]
    if m["accounted"] != m["driver_used"] or m["remainder"] != 0:
        errors.append(f"device {m['device']}: accounted {m['accounted']}, driver used {m['driver_used']}, "
                      f"remainder {m['remainder']}")
    if not m["pools_known"]:
        errors.append(f"device {m['device']}: the pools were not asked")
if when == "dump" and total_used != in_use:
    errors.append(f"the devices' used bytes sum to {total_used}, the fake driver holds {in_use}")
if cs["host_memory"]["host_pinned"] != 1 << 20:
    errors.append(f"host_pinned is {cs['host_memory']['host_pinned']}")
if not isinstance(cs["host"], str) or not cs["host"]:
    errors.append(f"cudasnap.host is {cs['host']!r}, not the machine's name")
if any(seg["cudasnap"]["kind"].startswith("host") for seg in segments):
    errors.append("pinned host memory is drawn as a device segment")
stats = cs["passthrough_stats"]
if stats[1].get("passthrough_bytes.vmm_mapped.current") != 6 << 20 and when == "dump":
    errors.append(f"device 1's vmm_mapped bytes: {stats[1].get('passthrough_bytes.vmm_mapped.current')}")
if stats[0].get("passthrough_bytes.vmm_mapped.peak", 0) < 12 << 20:
    errors.append(f"device 0's vmm_mapped peak is {stats[0].get('passthrough_bytes.vmm_mapped.peak')}")
if stats[-1].get("passthrough_bytes.host_pinned.allocated") != (1 << 20) + (64 << 10):
    errors.append(f"host pinned allocated: {stats[-1]}")

if errors:
    print("\n".join(errors), file=sys.stderr)
    sys.exit(1)
print("ok")
