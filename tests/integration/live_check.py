# SPDX-License-Identifier: Apache-2.0
"""live_check.py SNAPSHOT.json [--live-site KIND FUNCTION]...

Issue 44: a snapshot never holds two live allocations at one address of one device. Replays
each device's trace forward: a segment (segment_alloc, segment_map) is live until its
segment_free/segment_unmap, a block (alloc) until its free_completed; a segment or a block made
at an address that is live already is an error. The trace may be a suffix of the history: frees
of what it never saw made are skipped. Also the segments live at the end: no two at one address.

--live-site KIND FUNCTION: every live segment drawn as memory passed through of KIND has a
block whose frames name FUNCTION (the allocation live is the one the program made last).
Exits 1 with one line per error."""
import json
import sys


def main():
    path = sys.argv[1]
    args = sys.argv[2:]
    sites = []
    while args:
        if args[0] != "--live-site" or len(args) < 3:
            sys.exit(__doc__)
        sites.append((args[1], args[2]))
        args = args[3:]
    snap = json.load(open(path))
    errors = []
    for device, trace in enumerate(snap.get("device_traces", [])):
        segments, blocks = set(), set()
        for i, e in enumerate(trace):
            action, addr = e.get("action"), e.get("addr")
            if action in ("segment_alloc", "segment_map"):
                if addr in segments:
                    errors.append(f"device {device} event {i}: {action} at 0x{addr:x}, where a segment is live")
                segments.add(addr)
            elif action in ("segment_free", "segment_unmap"):
                segments.discard(addr)
            elif action == "alloc":
                if addr in blocks:
                    errors.append(f"device {device} event {i}: alloc at 0x{addr:x}, where a block is live")
                blocks.add(addr)
            elif action == "free_completed":
                blocks.discard(addr)
    seen = {}
    for seg in snap.get("segments", []):
        key = (seg["device"], seg["address"])
        if key in seen:
            errors.append(f"device {key[0]}: two live segments at 0x{key[1]:x}")
        seen[key] = seg
    for kind, function in sites:
        for seg in snap.get("segments", []):
            if seg.get("cudasnap", {}).get("kind") != kind:
                continue
            names = {f.get("name") for b in seg.get("blocks", []) for f in b.get("frames", [])}
            if function not in names:
                errors.append(f"live {kind} segment at 0x{seg['address']:x} was not made by {function}: {sorted(n for n in names if n)}")
    for e in errors[:20]:
        print(e)
    if errors:
        print(f"{path}: {len(errors)} errors")
        sys.exit(1)


main()
