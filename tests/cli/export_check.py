#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks `cudasnap export` against the snapshots it came from (tests/cli/export_test.sh runs it).

  export_check.py pprof-format OUT SNAPSHOT    pprof_format_read.mjs's output (a second reader): the
                                               same totals, the sample types, the default
  export_check.py pprof-raw RAW SNAPSHOT       the `go tool pprof -raw` text of an export: totals
                                               per sample type equal the snapshot's
  export_check.py perfetto TRACE PEAK...       a Perfetto export of N files and each file's peak
                                               (from `cudasnap summary`)
  export_check.py pprof-top SUMMARY TOP LINES  `go tool pprof -top` (by function) and `-top -lines`
                                               (by line) name what `cudasnap summary --top N` does:
                                               the first flat row by line is summary's top site,
                                               the first by function is the function whose sites
                                               sum to most (pprof adds a function's lines up)

pprof: inuse_objects/inuse_space are the active_allocated blocks of the segments and their
requested bytes; alloc_objects/alloc_space every `alloc` of the device traces and its size.

Perfetto: the rules Perfetto's JSON importer applies (google/perfetto,
src/trace_processor/importers/json/: json_trace_tokenizer.cc and json_trace_parser_impl.cc): the
file is an object with a traceEvents array; every event is an object with a one-letter string
"ph"; "ts" is a number on every event but metadata (M); "pid" and "tid" are integers; X events
carry a numeric "dur" >= 0 and the slices of one thread nest (a slice that ends after the slice
around it is an improperly nested one, dropped with an error stat); B/E pair up per thread; each
argument of a C event is a number (a counter track per argument); an instant (i/I) has scope "s"
in g, p or t; M process_name/thread_name carry args.name as a string. Then: each process's
"device D allocated" counter reaches exactly the peak `cudasnap summary` printed for its file, and
no counter track has more points than the documented bound.
"""
import collections
import json
import re
import sys

import same_content  # tests/cli, beside this script

MAX_POINTS = 4096


def fail(msg):
    print("FAIL:", msg, file=sys.stderr)
    sys.exit(1)


def load(path):
    """A snapshot file as Python objects (same_content.py's reader: pickles refuse every global)."""
    return same_content.load(path)[0]


def snapshot_totals(path):
    snap = load(path)
    if isinstance(snap, list):
        snap = {"segments": snap}
    inuse_n = inuse_b = 0
    for seg in snap.get("segments", []):
        for b in seg.get("blocks", []):
            if b.get("state") == "active_allocated":
                inuse_n += 1
                inuse_b += b.get("requested_size", b.get("size", 0))
    alloc_n = alloc_b = 0
    for trace in snap.get("device_traces", []):
        for e in trace:
            if e.get("action") == "alloc":
                alloc_n += 1
                alloc_b += e["size"]
    return [inuse_n, inuse_b, alloc_n, alloc_b]


def pprof_raw(raw_path, snapshot):
    totals = [0, 0, 0, 0]
    in_samples = False
    for line in open(raw_path):
        if line.startswith("Samples:"):
            in_samples = True
            continue
        if line.startswith("Locations"):
            break
        m = re.match(r"^\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+):", line)
        if in_samples and m:
            for i in range(4):
                totals[i] += int(m.group(i + 1))
    want = snapshot_totals(snapshot)
    if totals != want:
        fail(f"{snapshot}: pprof totals {totals} != the snapshot's {want}")
    print(f"ok pprof totals {snapshot}: {totals}")


def pprof_format(out_path, snapshot):
    """The output of pprof_format_read.mjs (a second reader): sample types, default, totals."""
    lines = dict(line.split(" ", 1) for line in open(out_path).read().splitlines() if " " in line)
    types = "inuse_objects/count inuse_space/bytes alloc_objects/count alloc_space/bytes"
    if lines.get("types") != types:
        fail(f"{snapshot}: pprof-format reads the sample types {lines.get('types')!r}, not {types!r}")
    if lines.get("default") != "inuse_space":
        fail(f"{snapshot}: pprof-format reads the default sample type {lines.get('default')!r}")
    totals = [int(x) for x in lines.get("totals", "").split()]
    want = snapshot_totals(snapshot)
    if totals != want:
        fail(f"{snapshot}: pprof-format totals {totals} != the snapshot's {want}")
    print(f"ok pprof-format totals {snapshot}: {totals}")


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def perfetto(trace_path, peaks):
    doc = json.load(open(trace_path))
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        fail("not an object with a traceEvents array")
    slices = collections.defaultdict(list)
    open_be = collections.defaultdict(list)
    counters = collections.defaultdict(list)
    names = {}
    for e in doc["traceEvents"]:
        if not isinstance(e, dict) or not isinstance(e.get("ph"), str) or len(e["ph"]) != 1:
            fail(f"bad event {e}")
        ph = e["ph"]
        if not isinstance(e.get("pid"), int) or not isinstance(e.get("tid"), int):
            fail(f"pid/tid not integers: {e}")
        if ph != "M" and not is_num(e.get("ts")):
            fail(f"no numeric ts: {e}")
        key = (e["pid"], e["tid"])
        if ph == "X":
            if not is_num(e.get("dur")) or e["dur"] < 0:
                fail(f"X without dur >= 0: {e}")
            slices[key].append((e["ts"], e["ts"] + e["dur"]))
        elif ph == "B":
            open_be[key].append(e["ts"])
        elif ph == "E":
            if not open_be[key]:
                fail(f"E without B: {e}")
            open_be[key].pop()
        elif ph == "C":
            args = e.get("args")
            if not isinstance(args, dict) or not args or not all(is_num(v) for v in args.values()):
                fail(f"C with non-numeric args: {e}")
            for k, v in args.items():
                counters[(e["pid"], e["name"] + " " + k)].append((e["ts"], v))
        elif ph in "iI":
            if e.get("s", "t") not in ("g", "p", "t"):
                fail(f"instant with bad scope: {e}")
        elif ph == "M":
            if e.get("name") in ("process_name", "thread_name"):
                if not isinstance(e.get("args", {}).get("name"), str):
                    fail(f"M without args.name: {e}")
                if e["name"] == "process_name":
                    names[e["pid"]] = e["args"]["name"]
        else:
            fail(f"unexpected ph {ph}")
    for key, stack in open_be.items():
        if stack:
            fail(f"B without E on {key}")
    for key, spans in slices.items():
        # the importer's order: by start, the longer first at one start
        spans.sort(key=lambda s: (s[0], -s[1]))
        ends = []
        for start, end in spans:
            while ends and ends[-1] <= start:
                ends.pop()
            if ends and end > ends[-1]:
                fail(f"slice [{start}, {end}] on {key} ends after its parent ({ends[-1]})")
            ends.append(end)
    for (pid, name), points in counters.items():
        if len(points) > MAX_POINTS:
            fail(f"{name} of process {pid}: {len(points)} points > {MAX_POINTS}")
    for i, peak in enumerate(peaks):
        pid = i + 1
        if pid not in names:
            fail(f"process {pid} has no process_name")
        got = max((v for (p, n), pts in counters.items() if p == pid and re.match(r"device \d+ allocated bytes$", n)
                   for _, v in pts), default=None)
        if got != int(peak):
            fail(f"process {pid} ({names[pid]}): allocated counter maximum {got} != summary's peak {peak}")
        print(f"ok perfetto process {pid} ({names[pid]}): peak {got}")


def pprof_short(name, filename):
    """The name `go tool pprof` shows for a function: what its symbolizer does to a name whose
    system_name equals it and that looks like demangled C++ (<>[] or ::), with the default
    demangle=simple: every (...) and <...> removed (symbolizer.go's demangleSingleFunction). A
    Python frame (a .py file, or synthetic <...> code) has no system_name and keeps its name."""
    if filename.endswith((".py", ".pyw")) or (filename.startswith("<") and filename.endswith(">")):
        return name
    if ".<" in name or "]). " in name or not (any(c in name for c in "<>[]") or "::" in name):
        return name
    for open_, close in (("(", ")"), ("<", ">")):
        out, depth = [], 0
        for c in name:
            if c == open_:
                depth += 1
            elif c == close and depth > 0:
                depth -= 1
            elif depth == 0:
                out.append(c)
        name = "".join(out)
    return name


def summary_sites(path):
    """Every site of every device's "by live bytes" list: (bytes, function, file, line)."""
    sites, inside = [], False
    for line in open(path, encoding="utf-8"):
        if line.startswith("top allocation sites by live bytes:"):
            inside = True
            continue
        m = re.match(r"^  (\d+) B.* in \d+ blocks?: (.*)$", line.rstrip("\n")) if inside else None
        if not m:
            inside = False
            continue
        text = m.group(2)
        if text == "(no stack)":
            sites.append((int(m.group(1)), "(no stack)", "", 0))
            continue
        func, where = text.rsplit(" ", 1)
        file, _, lineno = where.rpartition(":")
        sites.append((int(m.group(1)), func, file, int(lineno)))
    return sites


def pprof_first_flat(path):
    """(flat bytes, name text) of the first row of a `go tool pprof -top -unit=byte` listing."""
    rows = open(path, encoding="utf-8").read().splitlines()
    for i, line in enumerate(rows):
        if line.split()[:2] == ["flat", "flat%"] and i + 1 < len(rows):
            parts = rows[i + 1].split(None, 5)
            return int(parts[0].rstrip("B")), parts[5]
    fail("%s: no rows" % path)


def pprof_top(summary_path, top_path, lines_path):
    sites = summary_sites(summary_path)
    if not sites:
        fail("%s: no site" % summary_path)
    # By line: the top site (pprof adds up equal sites of several devices, as it should).
    by_line = collections.Counter()
    for b, func, file, line in sites:
        by_line[(pprof_short(func, file), file, line)] += b
    most = max(by_line.values())
    flat, text = pprof_first_flat(lines_path)

    def shown(key):  # pprof -lines: "NAME FILE:LINE" (the path cleaned), "NAME ??" without a line
        name, file, line = key
        base = re.split(r"[/\\]", file)[-1]
        return text == name or text.startswith(name + " ") and (line == 0 or text.endswith("%s:%d" % (base, line)))

    want = [k for k, v in by_line.items() if v == most]
    if flat != most or not any(shown(k) for k in want):
        fail("pprof -top -lines: first row %r (%d B); summary's top site: %s (%d B)" % (text, flat, want, most))
    # By function: pprof's node is the function (name and file); its lines add up.
    by_func = collections.Counter()
    for b, func, file, line in sites:
        by_func[(pprof_short(func, file), file)] += b
    most = max(by_func.values())
    flat, text = pprof_first_flat(top_path)
    want = [k[0] for k, v in by_func.items() if v == most]
    if flat != most or text not in want:
        fail("pprof -top: first row %r (%d B); summary's sites by function: %s (%d B)" % (text, flat, want, most))
    print("ok pprof first flat row: %s (%d B)" % (text, flat))


def main():
    if len(sys.argv) >= 5 and sys.argv[1] == "pprof-top":
        pprof_top(sys.argv[2], sys.argv[3], sys.argv[4])
        return
    if len(sys.argv) >= 4 and sys.argv[1] == "pprof-raw":
        pprof_raw(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 4 and sys.argv[1] == "pprof-format":
        pprof_format(sys.argv[2], sys.argv[3])
    elif len(sys.argv) >= 3 and sys.argv[1] == "perfetto":
        perfetto(sys.argv[2], sys.argv[3:])
    else:
        fail(__doc__)


if __name__ == "__main__":
    main()
