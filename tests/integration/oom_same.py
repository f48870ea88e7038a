#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The out-of-memory answer is the same in every snapshot, and every verdict is a whole sentence
(issue 46).

    oom_same.py TOOL [--answers OOM_ANSWERS] --later FILE [--later FILE...] [--recovered FILE]
                OOM_SNAPSHOT...

For each snapshot, OOM snapshots and the later ones (the exit snapshot, a recovery): `TOOL summary`
leads with the answer about its last OOM; the report's page (its data's "oom" lines) says the same
lines; Perfetto's OOM event of that OOM has the same verdict in one line; every verdict is whole
(ends with the sites it announces, or says there are none). A later snapshot whose last OOM is an
OOM snapshot's says the same about it. With --answers (tests/integration/oom_answers.c), the answer
about every OOM of every OOM snapshot is compared with what each later snapshot says about it.
The line "(the last of N OOMs ...)" is left out of the comparisons: N grows with later OOMs. A
recovery (--recovered, a later snapshot too) numbers streams as its histories do, not by handle
(docs/endings.md): the stream in its first line is left out.
Exit 0 when all holds, 1 with the first difference.
"""

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile

DATA = '<script type="application/json" id="cs-data">'
ANNOUNCE = "the sites that held most of the cache then:"


def fail(why):
    print("FAIL: " + why)
    sys.exit(1)


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        fail("%s exited %d: %s" % (" ".join(cmd), p.returncode, p.stderr[:2000]))
    return p.stdout


RECOVERED = set()


def comparable(lines, *paths):
    kept = [l for l in lines if not re.match(r"^\s*\((the last of|one of) \d+ OOMs", l)]
    if kept and RECOVERED.intersection(paths):
        kept[0] = re.sub(r", stream -?\d+:", ", stream S:", kept[0])
    return kept


def summary_answer(tool, path):
    """summary's leading answer: the 'out of memory' line and the indented lines after it."""
    out = run([tool, "summary", path]).splitlines()
    start = [i for i, l in enumerate(out) if l.startswith("out of memory on device")]
    if not start:
        fail("%s: summary leads with no out-of-memory answer" % path)
    lines = [out[start[0]]]
    for l in out[start[0] + 1:]:
        if not l.startswith("  "):
            break
        lines.append(l)
    return lines


def check_whole_block(path, lines):
    """The verdict line ends with its sites' announcement only when site lines follow it."""
    for i, l in enumerate(lines):
        if not l.startswith("  verdict: "):
            continue
        v = l[len("  verdict: "):]
        if v.endswith(ANNOUNCE):
            if i + 1 >= len(lines) or not lines[i + 1].startswith("    "):
                fail("%s: the verdict announces sites and lists none: %r" % (path, l))
        else:
            check_whole(path, v)
        return
    fail("%s: the answer has no verdict: %r" % (path, lines))


def check_whole(path, verdict):
    if not verdict or verdict[-1] in ":;,":
        fail("%s: the verdict is not a whole sentence: %r" % (path, verdict))
    if ANNOUNCE in verdict and verdict.endswith(ANNOUNCE):
        fail("%s: the verdict announces sites and lists none: %r" % (path, verdict))


def report_lines(tool, path, tmp):
    page = os.path.join(tmp, "page.html")
    run([tool, "report", "-o", page, path])
    html = open(page, encoding="utf-8").read()
    start = html.index(DATA) + len(DATA)
    data = json.loads(html[start:html.index("</script>", start)])
    if "oom" not in data:
        fail("%s: the report's data has no oom answer" % path)
    return data["oom"]["lines"]


def perfetto_ooms(tool, path, tmp):
    out = os.path.join(tmp, "trace.json")
    run([tool, "export", "--format", "perfetto", "-o", out, path])
    raw = open(out, "rb").read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return [e for e in json.loads(raw)["traceEvents"] if e.get("name") == "OOM"]


def answers(binary, path):
    """time_us -> (the answer's lines, the verdict in one line), from oom_answers."""
    result, time, lines = {}, None, []
    for l in run([binary, path]).splitlines():
        if l.startswith("== "):
            time, lines = int(l[3:]), []
        elif l.startswith("verdict-inline: "):
            result[time] = (lines, l[len("verdict-inline: "):])
        else:
            lines.append(l)
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tool")
    ap.add_argument("--answers")
    ap.add_argument("--later", action="append", default=[])
    ap.add_argument("--recovered", action="append", default=[])
    ap.add_argument("ooms", nargs="+")
    args = ap.parse_args()
    RECOVERED.update(args.recovered)
    args.later += args.recovered
    tmp = tempfile.mkdtemp()
    leads = {}
    for path in args.ooms + args.later:
        lines = summary_answer(args.tool, path)
        check_whole_block(path, lines)
        if report_lines(args.tool, path, tmp) != lines:
            fail("%s: the report's answer is not summary's:\n%s\n---\n%s" %
                 (path, "\n".join(report_lines(args.tool, path, tmp)), "\n".join(lines)))
        events = [e for e in perfetto_ooms(args.tool, path, tmp) if "verdict" in e["args"]]
        if len(events) != 1:
            fail("%s: %d Perfetto OOM events carry a verdict, not 1" % (path, len(events)))
        check_whole(path, events[0]["args"]["verdict"])
        leads[path] = (lines, events[0])
    for later in args.later:
        lines, event = leads[later]
        for path in args.ooms:
            if leads[path][1]["ts"] == event["ts"] and comparable(leads[path][0], later) != comparable(lines, later):
                fail("%s and %s answer their last OOM differently:\n%s\n---\n%s" %
                     (path, later, "\n".join(leads[path][0]), "\n".join(lines)))
    if not args.answers:
        return
    said = {path: answers(args.answers, path) for path in args.ooms + args.later}
    compared = 0
    for path, events in leads.items():
        lines, event = events
        mine = said[path].get(event["ts"])
        if mine is None or comparable(mine[0]) != comparable(lines) or mine[1] != event["args"]["verdict"]:
            fail("%s: oom_answers does not say what summary and Perfetto say about its last OOM" % path)
    for path in args.ooms:
        for time, (lines, verdict) in said[path].items():
            check_whole(path, verdict)
            for later in args.later:
                theirs = said[later].get(time)
                if theirs is None:
                    fail("%s has no OOM at %d, which %s has" % (later, time, path))
                if comparable(theirs[0], later) != comparable(lines, later) or theirs[1] != verdict:
                    fail("%s and %s answer the OOM at %d differently:\n%s\n---\n%s" %
                         (path, later, time, "\n".join(lines), "\n".join(theirs[0])))
                compared += 1
    print("oom_same: %d answers about %d OOM snapshots' OOMs the same in %d later snapshots, every verdict whole" %
          (compared, len(args.ooms), len(args.later)))


if __name__ == "__main__":
    main()
