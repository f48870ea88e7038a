"""Questions scripts/gpu-check.sh asks of a JSON snapshot (validity is `cudasnap check`'s job).

  snapshot_query.py allocs FILE
      the number of "alloc" events in every device trace, and of blocks in the segments
  snapshot_query.py sites FILE REGEX_A REGEX_B
      allocations (trace alloc events and segment blocks, by address) whose stack has a frame
      matching REGEX_A and a frame matching REGEX_B (Python regular expressions, case-sensitive,
      searched in "NAME FILENAME" of each frame)
Prints one line of KEY=VALUE pairs."""
import json
import re
import sys


def frames_text(frames):
    return ["%s %s" % (f.get("name", ""), f.get("filename", "")) for f in frames or []]


def main():
    cmd, path = sys.argv[1], sys.argv[2]
    with open(path) as f:
        s = json.load(f)
    allocs = [e for t in s.get("device_traces", []) for e in t if e.get("action") == "alloc"]
    blocks = [b for seg in s.get("segments", []) for b in seg.get("blocks", []) if b.get("state") != "inactive"]
    if cmd == "allocs":
        print("trace_allocs=%d live_blocks=%d segments=%d" % (len(allocs), len(blocks), len(s.get("segments", []))))
        return 0
    if cmd == "sites":
        a, b = re.compile(sys.argv[3]), re.compile(sys.argv[4])
        hits = {}
        for e in allocs + blocks:
            text = frames_text(e.get("frames"))
            if any(a.search(t) for t in text) and any(b.search(t) for t in text):
                hits[e.get("addr", e.get("address", id(e)))] = e.get("size", 0)
        print("matching_allocations=%d bytes=%d" % (len(hits), sum(hits.values())))
        return 0 if hits else 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
