# SPDX-License-Identifier: Apache-2.0
"""Questions scripts/gpu-run.sh (check 12) asks of the live view of a running process
(docs/live.md); promtool is not on the GPU machine, so the exposition format is parsed here.

  live_query.py top FILE PID TOTAL_BYTES
      FILE holds `cudasnap top --once --json`: PID is listed, and on each of its devices
      0 < allocated_bytes <= reserved_bytes <= TOTAL_BYTES (the device's size)
  live_query.py metrics FILE PID
      FILE holds `cudasnap metrics --once`: every line is a comment, blank, or a sample
      `name{label="value",...} number`; every metric has # HELP and # TYPE before its samples;
      cudasnap_allocated_bytes and cudasnap_reserved_bytes have a nonzero sample with pid="PID"
Prints one line of KEY=VALUE pairs; exit status 1 when an answer is no."""
import json
import math
import re
import sys

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? ([^ ]+)(?: (-?[0-9]+))?$')
LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(,|$)')


def labels_of(text):
    out, pos = {}, 0
    while pos < len(text):
        m = LABEL.match(text, pos)
        if not m:
            raise ValueError("bad labels {%s}" % text)
        out[m.group(1)] = m.group(2)
        pos = m.end()
    return out


def cmd_top(args):
    path, pid, total = args[0], int(args[1]), int(args[2])
    with open(path) as f:
        rows = [r for r in json.load(f)["processes"] if r["pid"] == pid]
    bad = []
    if not rows:
        bad.append("pid %d not listed" % pid)
    for r in rows:
        a, res = r["allocated_bytes"], r["reserved_bytes"]
        if not 0 < a <= res <= total:
            bad.append("device %s: allocated %d, reserved %d, total %d" % (r["device"], a, res, total))
    print(" ".join("device=%s allocated=%d reserved=%d peak=%d driver_used=%s top_site=%s" % (
        r["device"], r["allocated_bytes"], r["reserved_bytes"], r["peak_allocated_bytes"], r["driver_used_bytes"],
        (r.get("top_sites") or [{}])[0].get("site", "none").replace(" ", "_")) for r in rows) + "".join(
        "; " + b for b in bad))
    return 1 if bad else 0


def cmd_metrics(args):
    path, pid = args[0], args[1]
    helped, typed, samples, bad = set(), {}, [], []
    with open(path) as f:
        for n, line in enumerate(f.read().splitlines(), 1):
            if not line.strip():
                continue
            if line.startswith("#"):
                parts = line.split(None, 3)
                if len(parts) >= 3 and parts[1] == "HELP":
                    helped.add(parts[2])
                elif len(parts) >= 4 and parts[1] == "TYPE":
                    typed[parts[2]] = parts[3]
                continue
            m = SAMPLE.match(line)
            if not m:
                bad.append("line %d is not a sample: %s" % (n, line[:80]))
                continue
            try:
                labels, value = labels_of(m.group(2) or ""), float(m.group(3))
            except ValueError as e:
                bad.append("line %d: %s" % (n, e))
                continue
            name = m.group(1)
            family = name[:-len("_total")] if name.endswith("_total") and name not in typed else name
            if name not in typed and family not in typed or name not in helped and family not in helped:
                bad.append("%s has a sample before its # HELP and # TYPE" % name)
            if math.isnan(value):
                bad.append("%s is NaN" % name)
            samples.append((name, labels, value))
    mine = {name: value for name, labels, value in samples if labels.get("pid") == pid}
    for want in ("cudasnap_allocated_bytes", "cudasnap_reserved_bytes"):
        if not mine.get(want):
            bad.append("no nonzero %s{pid=\"%s\"}" % (want, pid))
    print("samples=%d families=%d allocated=%d reserved=%d driver_used=%d ooms=%d%s" % (
        len(samples), len(typed), mine.get("cudasnap_allocated_bytes", 0), mine.get("cudasnap_reserved_bytes", 0),
        mine.get("cudasnap_driver_used_bytes", 0), mine.get("cudasnap_ooms_total", 0),
        "".join("; " + b for b in bad[:5])))
    return 1 if bad else 0


COMMANDS = {"top": (cmd_top, 3), "metrics": (cmd_metrics, 2)}


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS or len(sys.argv) - 2 < COMMANDS[sys.argv[1]][1]:
        print(__doc__, file=sys.stderr)
        return 2
    fn, _ = COMMANDS[sys.argv[1]]
    return fn(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
