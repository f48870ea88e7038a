#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Hostile texts in a real snapshot, and the checks of what the tool makes of them (issue 45 item 2).

    hostile_text.py make SNAPSHOT.json OUT_DIR
        Writes OUT_DIR/hostile.json, OUT_DIR/hostile_raw.json and OUT_DIR/hostile.pickle: SNAPSHOT
        (a cudasnap snapshot of a real program) whose frame names and file names, phase names and
        threads' names, host, job, argv, allocator frames and head sites hold what a program can
        put there: escape sequences, C1 controls (CSI, U+009B), DEL, NUL, newlines that start a
        forged line, a lone surrogate, U+2028/U+2029, `</script><script>alert(1)</script>`, a
        name of 20,000 bytes, and invalid UTF-8 bytes (raw, in hostile_raw.json and the pickle).
    hostile_text.py terminal FILE...
        Each FILE (what a subcommand printed) is safe for a terminal: valid UTF-8, no control
        character (C0 but newline, DEL, C1), no line that a name forged.
    hostile_text.py json FILE [lines]
        FILE is strict UTF-8 and JSON (JSON Lines with `lines`).
"""
import json
import pickle
import re
import sys

ESC = "\x1b[2J\x1b[H"
# each hostile text ends a name; RAWBAD is replaced by invalid bytes in the raw forms
HOSTILE = (ESC + "\x9b31m\x7f\udc80\u2028\u2029</script><script>alert(1)</script>\nINJECTED line\t"
           "&amp;<b>x</b>RAWBAD\x00after NUL")
RAW = b"\xff\xfe\xc3(\x80\xc0"  # as long as RAWBAD, so the pickle's lengths hold
LONG = "\u00e9" * 10000


LONG_LEFT = [1]  # one frame only gets the long name: the file stays small


def poison_frames(frames):
    for f in frames or []:
        if not isinstance(f, dict):
            continue
        if "prog_" in str(f.get("filename", "")):
            f["name"] = str(f.get("name")) + HOSTILE
            f["filename"] = str(f["filename"]).replace("prog_", "dir" + HOSTILE + "/prog_")
        elif f.get("name") == "start_thread" and LONG_LEFT[0]:
            LONG_LEFT[0] = 0
            f["name"] = "start_thread" + LONG + HOSTILE


def make(src, out):
    with open(src, "rb") as fh:
        s = json.load(fh)
    for seg in s.get("segments", []):
        poison_frames(seg.get("frames"))
        for b in seg.get("blocks", []):
            poison_frames(b.get("frames"))
    for trace in s.get("device_traces", []):
        for ev in trace:
            poison_frames(ev.get("frames"))
    threads = {}
    for a in s.get("external_annotations", []):
        a["name"] = a["name"] + HOSTILE
        t = a.get("thread")
        threads.setdefault(t, "worker%d" % len(threads) + HOSTILE)
        a["thread_name"] = threads[t]
    c = s.setdefault("cudasnap", {})
    c["host"] = "node" + HOSTILE
    c["job"] = {"host": "node" + HOSTILE, "job_id": "job" + HOSTILE, "rank": 0}
    c["argv"] = ["/bin/prog" + HOSTILE, "arg" + HOSTILE]
    c["allocator_frames"] = ["nomatch*" + HOSTILE]
    h = s.get("cudasnap_summary")
    if isinstance(h, dict):
        h["host"] = "node" + HOSTILE
        h["job"] = dict(c["job"])
        for site in h.get("sites", []):
            site["site"] = site["site"] + HOSTILE
    text = json.dumps(s).encode("ascii")  # lone surrogates as \udc80 escapes, as json allows
    with open(out + "/hostile.json", "wb") as fh:
        fh.write(text)
    with open(out + "/hostile_raw.json", "wb") as fh:
        fh.write(text.replace(b"RAWBAD", RAW))
    data = pickle.dumps(s, protocol=4)
    assert data.count(b"RAWBAD") > 0
    with open(out + "/hostile.pickle", "wb") as fh:
        fh.write(data.replace(b"RAWBAD", RAW))


def check_terminal(path):
    data = open(path, "rb").read()
    bad = re.search(rb"[\x00-\x09\x0b-\x1f\x7f]", data)
    if bad:
        sys.exit("%s: control byte %r at %d: %r" % (path, bad.group(), bad.start(), data[max(0, bad.start() - 80):bad.start() + 40]))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        sys.exit("%s: not UTF-8: %s: %r" % (path, e, data[max(0, e.start - 80):e.start + 40]))
    c1 = re.search("[\x80-\x9f]", text)
    if c1:
        sys.exit("%s: C1 control U+%04X at %d: %r" % (path, ord(c1.group()), c1.start(), text[max(0, c1.start() - 80):c1.start() + 40]))
    for line in text.split("\n"):
        if line.startswith("INJECTED"):
            sys.exit("%s: a name's newline started a line: %r" % (path, line[:80]))


def check_json(path, lines=False):
    data = open(path, "rb").read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        sys.exit("%s: not UTF-8: %s: %r" % (path, e, data[max(0, e.start - 80):e.start + 40]))
    try:
        if lines:
            for line in text.splitlines():
                if line.strip():
                    json.loads(line)
        else:
            json.loads(text)
    except ValueError as e:
        sys.exit("%s: not JSON: %s" % (path, e))


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "make":
        make(sys.argv[2], sys.argv[3])
    elif cmd == "terminal":
        for p in sys.argv[2:]:
            check_terminal(p)
    elif cmd == "json":
        check_json(sys.argv[2], len(sys.argv) > 3 and sys.argv[3] == "lines")
    else:
        sys.exit("usage: hostile_text.py make|terminal|json ...")
