# SPDX-License-Identifier: Apache-2.0
"""Questions scripts/gpu-run.sh asks of a snapshot, JSON or pickle (validity is `cudasnap check`'s
job). Pickles are read with an unpickler that refuses every global, as a viewer would.

  snapshot_query.py allocs FILE
      the snapshot's trigger, the number of "alloc" events in every device trace, of blocks in the
      segments, and of segments
  snapshot_query.py sites FILE REGEX_A REGEX_B
      allocations (trace alloc events and segment blocks, by address) whose stack has a frame
      matching REGEX_A and a frame matching REGEX_B (Python regular expressions, case-sensitive,
      searched in "NAME FILENAME" of each frame)
  snapshot_query.py ranges FILE NAME=ADDRESS:BYTES[:TAG]...
      for each range, the segment that covers it, if any, and that segment's kind (segment_type,
      its "cudasnap" field, "expandable" when is_expandable): drawn, missing, or drawn without TAG
      in its kind (case-insensitive); a NAME starting with '?' is reported but not required
  snapshot_query.py vmm FILE
      segments whose kind says VMM (or that are expandable), and the others: counts and bytes
  snapshot_query.py frame FILE SCRIPT LINE MIN_BYTES
      an allocation of at least MIN_BYTES with a frame whose filename is SCRIPT (same real path)
      and whose line is LINE; otherwise the frames of the largest such allocation, for the report
  snapshot_query.py memviz FILE FOLDED
      PyTorch's own reader of pickled snapshots, torch.cuda._memory_viz, over FILE without the
      network: its `stats` summary (segsum, which asserts that every segment's blocks add up),
      `trace`, and the flame graph input of `segments` and `memory`. Those two subcommands hand
      their folded stacks to flamegraph.pl, which _memory_viz downloads from GitHub on first use,
      so here a stand-in formatter keeps the folded lines; their bytes must add up to the segments'
      total_size, and those of `segments` are written to FOLDED
  snapshot_query.py memory FILE
      the reconciliation with the driver (cudasnap.memory[], docs/memory-kinds.md) of each device
      that holds memory: the driver's total and used bytes, the cache's reserved bytes, memory
      passed through by kind, the pools and the graph pool, accounted and remainder; "no" when no
      device was asked of the driver, or an answer does not add up (used over total, accounted
      under the cache's reserved, a negative remainder without managed memory to explain it)
Prints one line of KEY=VALUE pairs; exit status 1 when a question's answer is no."""
import json
import os
import pickle
import re
import sys


class _NoGlobals(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError("global %s.%s in a snapshot" % (module, name))


def load(path):
    with open(path, "rb") as f:
        head = f.read(1)
        f.seek(0)
        if head == b"\x80":  # a pickle's PROTO opcode
            return _NoGlobals(f).load()
        return json.load(f)


def frames_text(frames):
    return ["%s %s" % (f.get("name", ""), f.get("filename", "")) for f in frames or []]


def flatten(value):
    if isinstance(value, dict):
        return " ".join("%s %s" % (k, flatten(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return " ".join(flatten(v) for v in value)
    return "" if value is None else str(value)


def kind(seg):
    words = [str(seg.get("segment_type", "")), flatten(seg.get("cudasnap"))]
    if seg.get("is_expandable"):
        words.append("expandable")
    return " ".join(w for w in words if w).strip()


def is_vmm(seg):
    return bool(seg.get("is_expandable")) or "vmm" in kind(seg).lower()


def allocations(s):
    allocs = [e for t in s.get("device_traces", []) for e in t if e.get("action") == "alloc"]
    blocks = [b for seg in s.get("segments", []) for b in seg.get("blocks", []) if b.get("state") != "inactive"]
    return allocs, blocks


def cmd_allocs(s, args):
    allocs, blocks = allocations(s)
    trigger = (s.get("cudasnap") or {}).get("trigger", "none")
    print("trigger=%s trace_allocs=%d live_blocks=%d segments=%d" % (trigger, len(allocs), len(blocks), len(s.get("segments", []))))
    return 0


def cmd_sites(s, args):
    a, b = re.compile(args[0]), re.compile(args[1])
    allocs, blocks = allocations(s)
    hits = {}
    for e in allocs + blocks:
        text = frames_text(e.get("frames"))
        if any(a.search(t) for t in text) and any(b.search(t) for t in text):
            hits[e.get("addr", e.get("address", id(e)))] = e.get("size", 0)
    print("matching_allocations=%d bytes=%d" % (len(hits), sum(hits.values())))
    return 0 if hits else 1


def cmd_ranges(s, args):
    segs = s.get("segments", [])
    out, ok = [], True
    for spec in args:
        name, _, rest = spec.partition("=")
        parts = rest.split(":")
        addr, size = int(parts[0]), int(parts[1])
        tag = parts[2] if len(parts) > 2 else ""
        optional = name.startswith("?")
        name = name.lstrip("?")
        seg = next((g for g in segs if g["address"] <= addr and addr + size <= g["address"] + g["total_size"]), None)
        if seg is None:
            state = "missing"
        elif tag and tag.lower() not in kind(seg).lower() and not (tag.lower() == "vmm" and is_vmm(seg)):
            state = "drawn-without-%s(%s)" % (tag, kind(seg) or "no kind")
        else:
            state = "drawn(%s)" % (kind(seg) or "no kind")
        if not optional and not state.startswith("drawn("):
            ok = False
        out.append("%s=%s" % (name, state.replace(" ", "/")))
    print(" ".join(out))
    return 0 if ok else 1


def cmd_vmm(s, args):
    segs = s.get("segments", [])
    vmm = [g for g in segs if is_vmm(g)]
    other = [g for g in segs if not is_vmm(g)]
    print("vmm_segments=%d vmm_bytes=%d other_segments=%d other_bytes=%d" % (
        len(vmm), sum(g["total_size"] for g in vmm), len(other), sum(g["total_size"] for g in other)))
    return 0 if vmm else 1


def cmd_memory(s, args):
    devices = [m for m in (s.get("cudasnap") or {}).get("memory") or []
               if m.get("cache_reserved") or m.get("accounted") or m.get("driver_known")]
    asked, bad, parts = 0, [], []
    for m in devices:
        passthrough = ",".join("%s:%d" % (k, v) for k, v in sorted((m.get("passthrough") or {}).items()) if v)
        keys = ["driver_known", "driver_total", "driver_free", "driver_used", "cache_reserved", "cache_allocated",
                "pools_known", "pool_reserved", "pool_used", "graph_known", "graph_reserved", "accounted", "remainder"]
        text = " ".join("%s=%s" % (k, int(m[k]) if isinstance(m.get(k), (bool, int)) else m.get(k, "?"))
                        for k in keys)
        parts.append("device=%s %s passthrough=%s" % (m.get("device"), text, passthrough or "none"))
        if not m.get("driver_known"):
            continue
        asked += 1
        managed = (m.get("passthrough") or {}).get("managed", 0)
        if m["driver_used"] > m["driver_total"]:
            bad.append("device %s: used over total" % m.get("device"))
        if m["accounted"] < m["cache_reserved"]:
            bad.append("device %s: accounted under the cache's reserved" % m.get("device"))
        if m["remainder"] < 0 and not managed:
            bad.append("device %s: negative remainder" % m.get("device"))
    if not asked:
        bad.append("no device's driver answer (%s)" % ", ".join(
            str(m.get("driver_not_asked", "not asked")) for m in devices) or "no cudasnap.memory")
    print("; ".join(parts + bad) or "no cudasnap.memory")
    return 1 if bad else 0


def cmd_frame(s, args):
    script, line, min_bytes = os.path.realpath(args[0]), int(args[1]), int(args[2])
    allocs, blocks = allocations(s)
    big = [e for e in allocs + blocks if e.get("size", 0) >= min_bytes]

    def same_file(name):
        return bool(name) and (name == script or os.path.realpath(name) == script)

    for e in big:
        for f in e.get("frames") or []:
            if same_file(f.get("filename")) and f.get("line") == line:
                print("found=1 bytes=%d frame=%s@%s:%d" % (e.get("size", 0), f.get("name", "?"), os.path.basename(script), line))
                return 0
    if not big:
        print("found=0 no_allocation_of_at_least=%d" % min_bytes)
        return 1
    e = max(big, key=lambda x: x.get("size", 0))
    shown = ["%s@%s:%s" % (f.get("name", "?"), os.path.basename(str(f.get("filename", "?"))), f.get("line", "?"))
             for f in (e.get("frames") or [])[:6]]
    print("found=0 largest=%d frames=%s" % (e.get("size", 0), ",".join(shown) or "none"))
    return 1


def cmd_memviz(s, args):
    from torch.cuda import _memory_viz as viz  # the real client; ImportError is a failed check

    folded = {}

    def keep(which):
        def formatter(lines):
            folded[which] = lines
            return lines
        return formatter

    summary = viz.segsum(s)
    trace = viz.trace(s)
    viz.segments(s, format_flamegraph=keep("segments"))
    viz.memory(s, format_flamegraph=keep("memory"))
    reserved = sum(seg["total_size"] for seg in s.get("segments", []))
    bad = []
    for which, lines in folded.items():
        total = sum(int(line.rsplit(" ", 1)[1]) for line in lines.splitlines() if line.strip())
        if total != reserved:
            bad.append("%s_folded_bytes=%d" % (which, total))
    with open(args[0], "w") as f:
        f.write(folded.get("segments", ""))
    allocated = re.search(r"total_allocated: (\S+)", summary)
    print("segsum_total_allocated=%s reserved=%d trace_lines=%d folded_lines=%d%s" % (
        allocated.group(1) if allocated else "?", reserved, len(trace.splitlines()),
        len(folded.get("segments", "").splitlines()), "".join(" " + b for b in bad)))
    return 1 if bad or not allocated else 0


COMMANDS = {"allocs": (cmd_allocs, 0), "sites": (cmd_sites, 2), "ranges": (cmd_ranges, 1), "vmm": (cmd_vmm, 0),
            "memory": (cmd_memory, 0),
            "frame": (cmd_frame, 3), "memviz": (cmd_memviz, 1)}


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in COMMANDS:
        print(__doc__, file=sys.stderr)
        return 2
    fn, nargs = COMMANDS[sys.argv[1]]
    args = sys.argv[3:]
    if len(args) < nargs:
        print(__doc__, file=sys.stderr)
        return 2
    return fn(load(sys.argv[2]), args)


if __name__ == "__main__":
    sys.exit(main())
