#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`cudasnap report` pages in a real browser (headless Chromium), as a person would open them.

    test_report.py --cudasnap BIN --program TRAIN_STEP --out DIR [--traces DIR]...

Makes a cudasnap snapshot of TRAIN_STEP (examples/train_step.c, on the fake driver: the caller
puts tests/fakes on LD_LIBRARY_PATH), takes every PyTorch snapshot in the --traces folders, and
for each one writes the report and opens it. A page passes when:
  - it logs no console error or exception, and makes no request but for its own file;
  - the peak card shows the peak `cudasnap summary` prints (exact bytes and the readable value),
    and the top-site card names summary's top site at the peak;
  - hovering the top site in the "at the peak" list shows its stack in the stack panel;
  - hovering the timeline at the peak shows the top site (its band) with its stack;
  - the segment map is drawn when there are segments;
  - the peak card says it counts requested bytes and the memory_summary table says it counts block
    bytes (memory_allocated()), so the two peaks are never unlabeled side by side.
An out-of-memory snapshot (TRAIN_STEP on a 64 MiB fake device, and the fixture with an oom entry)
passes when its first screen, unscrolled, shows summary's OOM answer: the headline ("Tried to
allocate ...; ... free"), the site that asked and the verdict.
Screenshots of each page (the first screen and the whole page) go to DIR, with the time each
page took to render. Exits 0 when all pass, 1 on a failure, 77 (ctest's skip) without Chromium.
"""

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser_test import SKIP, Failure, check, run  # noqa: E402
from chromium import Chromium, ProtocolError, find_chromium  # noqa: E402

WIDTH, HEIGHT = 1280, 1000


def summary_expectations(cudasnap, snapshot):
    """The first device section of `cudasnap summary`: its peak bytes, the readable form, and the
    top site at the peak (its function name, or None when nothing was live)."""
    out = run([cudasnap, "summary", snapshot])
    lines = out.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^top allocation sites at the trace's peak \((\d+) B(?: \(([0-9.]+ \w+)\))? live", line)
        if not m:
            continue
        readable = m.group(2) or "%s B" % m.group(1)
        top = lines[i + 1] if i + 1 < len(lines) else ""
        site = re.match(r"^  \d+ B.* in \d+ blocks?: (.*)$", top)
        name = None
        if site:
            text = site.group(1)
            name = text if text == "(no stack)" else re.sub(r" \S+:\d+$", "", text)
        return int(m.group(1)), readable, name
    raise Failure("no peak in `cudasnap summary %s`:\n%s" % (snapshot, out))


def center_of(page, selector):
    box = page.evaluate("(function(){var e=document.querySelector(%s); if(!e) return null; e.scrollIntoView({block:'center'});"
                        "var r=e.getBoundingClientRect(); return [r.left, r.top, r.width, r.height];})()" % json.dumps(selector))
    check(box is not None, "no element %s" % selector)
    return box[0] + box[2] / 2, box[1] + box[3] / 2


def check_page(page, expect, out_dir, name, is_cudasnap):
    rendered_ms = float(page.wait_for("document.documentElement.getAttribute('data-rendered-ms')"))
    peak_bytes, readable, top_name = expect
    peak_text = page.evaluate("document.getElementById('peak-value').innerText")
    check("requested" in peak_text.lower(), "the peak card %r does not say it counts requested bytes" % peak_text)
    table_note = page.evaluate("(function(){var e=document.getElementById('table-bytes'); return e ? e.innerText : '';})()")
    check("memory_allocated()" in table_note and "Block bytes" in table_note,
          "the memory_summary table does not say it counts block bytes: %r" % table_note)
    check(str(peak_bytes) in peak_text.replace(",", ""), "peak card %r lacks summary's %d bytes" % (peak_text, peak_bytes))
    check(readable in peak_text, "peak card %r lacks %r" % (peak_text, readable))
    if top_name is not None:
        top_text = page.evaluate("document.getElementById('top-site').innerText")
        check(top_name in top_text, "top-site card %r lacks summary's top site %r" % (top_text, top_name))

        # Hovering the top site shows its stack.
        before = page.evaluate("document.getElementById('stack-panel').innerText")
        check(top_name not in before, "the stack panel shows %r before any hover" % top_name)
        page.move_mouse(*center_of(page, "#peak-sites .site-row"))
        panel = page.evaluate("document.getElementById('stack-panel').innerText")
        check(top_name in panel, "hovering the top site: the stack panel says %r" % panel[:300])
        if top_name != "(no stack)":
            frames = page.evaluate("document.querySelectorAll('#stack-panel .frames li:not(.more)').length")
            check(frames >= 1, "hovering the top site: no frame in the stack panel")
            site_frame = page.evaluate("(document.querySelector('#stack-panel .frames li.site')||{}).innerText")
            check(site_frame and top_name in site_frame, "the site's frame is not marked in its stack: %r" % site_frame)
        if is_cudasnap:
            # train_step's sites are called from main: the whole stack is there, not just the site.
            check("main" in panel, "the top site's stack lacks main(): %r" % panel[:500])

    data = page.evaluate("JSON.parse(document.getElementById('cs-data').textContent).devices[0]")
    if data["events"] and top_name is not None:
        # Hover the timeline at the peak, going up from the axis: one of the bands there is the
        # top site's, and its tooltip names it (with its stack).
        page.evaluate("window.scrollTo(0, 0)")
        box = page.evaluate("(function(){var r=document.getElementById('timeline-%d').getBoundingClientRect();"
                            "return [r.left, r.top, r.width, r.height];})()" % data["device"])
        left, right, axis, top = box[0] + 78, box[0] + box[2] - 18, box[1] + box[3] - 30, box[1] + 22
        x = left + (right - left) * data["peak"]["after"] / max(1, data["events"]) + 0.5
        tip, y = "", axis - 2
        while y > top and top_name not in tip:
            page.move_mouse(x, y)
            tip = page.evaluate("(function(){var t=document.getElementById('tip'); return t.style.display==='block' ? t.innerText : '';})()")
            check("live" in tip and "after entry" in tip, "hovering the timeline at (%d, %d) shows no tooltip: %r" % (x, y, tip[:300]))
            y -= 3
        check(top_name in tip, "no band at the peak names the top site %r" % top_name)
        if is_cudasnap:
            check("main" in tip, "the top site's tooltip has no stack down to main(): %r" % tip[:500])
            # The picture for the README (docs/report.png): the first screen, the tooltip showing
            # the top site's stack at the peak.
            tip_box = page.evaluate("(function(){var r=document.getElementById('tip').getBoundingClientRect(); return r.bottom;})()")
            page.screenshot(os.path.join(out_dir, name + "-hover.png"), clip=(0, 0, WIDTH, max(box[1] + box[3], tip_box) + 12))
        page.move_mouse(1, 1)
    if data["segments"]:
        drawn = page.evaluate("(function(){var c=document.getElementById('segments-%d'); return c ? c.width * c.height : 0;})()"
                              % data["device"])
        check(drawn > 0, "no segment map drawn")

    # The other controls draw without an error: the time axis, the segment map scrolled to its end.
    page.evaluate("(function(){var b=document.querySelectorAll('.switch button'); if(b.length&&!b[1].disabled) b[1].click();"
                  "var s=document.querySelector('.seg-scroll'); if(s) { s.scrollTop = s.scrollHeight; s.dispatchEvent(new Event('scroll')); }"
                  "return true;})()")
    page.wait_for("new Promise(function(r){requestAnimationFrame(function(){r(true);});})")
    if data["segments"]:
        rows = page.evaluate("(function(){var s=document.querySelector('.seg-scroll'); return s.scrollTop;})()")
        check(len(data["segments"]) <= 26 or rows > 0, "the segment map does not scroll")
    page.evaluate("(function(){var b=document.querySelectorAll('.switch button'); if(b.length) b[0].click();"
                  "var s=document.querySelector('.seg-scroll'); if(s) s.scrollTop = 0; return true;})()")
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(os.path.join(out_dir, name + ".png"))
    page.screenshot(os.path.join(out_dir, name + "-full.png"), full_page=True)
    page.resize(WIDTH, HEIGHT)
    errors = page.errors
    check(not errors, "console errors: %s" % "; ".join(errors))
    others = [u for u in page.requests if u != page.url and not u.startswith("data:")]
    check(not others, "the page made requests: %s" % ", ".join(others))
    check(page.requests.count(page.url) == 1, "the page's own file was requested %d times" % page.requests.count(page.url))
    return rendered_ms


def summary_oom(cudasnap, snapshot):
    """summary's OOM answer: the lines from "out of memory on" to the verdict (None when none)."""
    lines = run([cudasnap, "summary", snapshot]).splitlines()
    start = [i for i, l in enumerate(lines) if l.startswith("out of memory on device ")]
    if not start:
        return None
    answer = []
    for line in lines[start[0]:]:
        if not line:
            break
        answer.append(line.strip())
    return answer


def check_oom_page(page, answer, out_dir, name):
    """The OOM answer is on the first screen, as summary words it."""
    page.wait_for("document.documentElement.getAttribute('data-rendered-ms')")
    check(not page.errors, "console errors: %s" % "; ".join(page.errors))
    box = page.evaluate("(function(){window.scrollTo(0,0); var e=document.getElementById('oom-answer'); if(!e) return null;"
                        "var r=e.getBoundingClientRect(); return [r.top, r.bottom, e.innerText];})()")
    check(box is not None, "no OOM answer on the page")
    top, bottom, text = box
    check(bottom <= HEIGHT, "the OOM answer ends at %d px, below the first screen (%d px)" % (bottom, HEIGHT))
    headline = answer[0].replace("out of memory on ", "")
    check(headline in text, "the OOM answer %r lacks summary's headline %r" % (text[:300], headline))
    check("Tried to allocate " in headline, "summary's headline %r is not PyTorch's words" % headline)
    for line in answer[1:]:
        if line.startswith(("asked by ", "verdict: ")):
            check(line in text, "the OOM answer %r lacks summary's %r" % (text[:600], line))
    page.screenshot(os.path.join(out_dir, name + ".png"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cudasnap", required=True)
    ap.add_argument("--program", required=True, help="examples/train_step")
    ap.add_argument("--out", required=True, help="folder for the pages and screenshots")
    ap.add_argument("--traces", action="append", default=[], help="a folder of PyTorch snapshots (missing: skipped)")
    ap.add_argument("--fixtures", help="a folder of odd snapshots whose pages need only open cleanly")
    args = ap.parse_args()

    chromium = find_chromium()
    if chromium is None:
        print("SKIP: no Chromium found (apt-get install chromium, which scripts/setup.sh does; or set CHROMIUM=/path)")
        return SKIP
    os.makedirs(args.out, exist_ok=True)

    work = tempfile.mkdtemp(prefix="cs-report-test-")
    run([args.cudasnap, "run", "-o", os.path.join(work, "train_step-%n-%t.json"), "--", args.program, "20"])
    # by a relative name, as the example script gives it: the page shows the name it was given
    inputs = [("train_step-1-exit.json", True)]
    seen = set()
    for folder in args.traces:
        if not os.path.isdir(folder):
            print("note: no trace folder %s; its snapshots are not tested" % folder)
            continue
        for path in sorted(glob.glob(os.path.join(folder, "*"))):
            name = os.path.basename(path)
            if name.endswith((".pickle", ".pkl", ".json")) and name not in seen:
                seen.add(name)
                inputs.append((path, False))

    failed = 0
    with Chromium(chromium) as browser:
        for path, is_cudasnap in inputs:
            name = re.sub(r"\.(json|pickle|pkl)$", "", os.path.basename(path))
            html = os.path.abspath(os.path.join(args.out, name + ".html"))
            if is_cudasnap:
                path = os.path.join(work, path)
            try:
                expect = summary_expectations(args.cudasnap, path)
                said = subprocess.run([args.cudasnap, "report", "-o", html, os.path.basename(path) if is_cudasnap else path],
                                      capture_output=True, text=True, cwd=work if is_cudasnap else None).stdout
                check(said.startswith("wrote %s: " % html), "report said %r" % said)
                page = browser.open_page(html, WIDTH, HEIGHT)
                ms = check_page(page, expect, args.out, name, is_cudasnap)
                print("ok   %s: %d bytes, rendered in %.0f ms (load event after %.0f ms); screenshot %s" % (
                    name, os.path.getsize(html), ms, page.load_s * 1000, os.path.join(args.out, name + ".png")))
            except (Failure, ProtocolError) as e:
                failed += 1
                print("FAIL %s: %s" % (name, e))
        # Out of memory: the example on a 64 MiB device (it stops at its first failed cudaMalloc),
        # and the fixture whose trace has an oom entry; the answer leads the page.
        oom_dir = os.path.join(work, "oom")
        os.makedirs(oom_dir)
        subprocess.run([args.cudasnap, "run", "-o", os.path.join(oom_dir, "train_step-%n-%t.json"), "--", args.program, "20"],
                       capture_output=True, env=dict(os.environ, FAKE_CUDA_CAPACITY=str(64 << 20)))
        ooms = sorted(glob.glob(os.path.join(oom_dir, "*-oom.json")))
        if args.fixtures:
            ooms.append(os.path.join(args.fixtures, "memviz_minimal_valid.json"))
        for path in ooms:
            name = "oom-" + re.sub(r"\.(json|pickle|pkl)$", "", os.path.basename(path))
            inputs.append((path, False))
            try:
                answer = summary_oom(args.cudasnap, path)
                check(answer is not None, "summary of %s has no OOM answer" % path)
                html = os.path.abspath(os.path.join(args.out, name + ".html"))
                run([args.cudasnap, "report", "-o", html, path])
                check_oom_page(browser.open_page(html, WIDTH, HEIGHT), answer, args.out, name)
                print("ok   %s: the OOM answer on the first screen: %s" % (name, answer[0]))
            except (Failure, ProtocolError) as e:
                failed += 1
                print("FAIL %s: %s" % (name, e))
        if not any(p.endswith("-oom.json") for p in ooms):
            failed += 1
            print("FAIL: the example on a 64 MiB device wrote no OOM snapshot")
        # Odd snapshots (tests/data/fixtures: missing keys, strings for numbers, addresses above
        # 2^53, ...): their pages need only draw without an error and fetch nothing.
        odd = []
        if args.fixtures:
            odd = sorted(glob.glob(os.path.join(args.fixtures, "*.json")) + glob.glob(os.path.join(args.fixtures, "*.pickle")))
        opened = 0
        for path in odd:
            html = os.path.join(work, os.path.basename(path) + ".html")
            if subprocess.run([args.cudasnap, "report", "-o", html, path], capture_output=True).returncode != 0:
                continue  # not a snapshot at all: cli_test.sh checks the one-line error
            opened += 1
            try:
                page = browser.open_page(html, WIDTH, HEIGHT)
                page.wait_for("document.documentElement.getAttribute('data-rendered-ms')")
                # every device's view, for snapshots of several devices
                page.evaluate("(function(){var n=document.querySelectorAll('.tabs button').length;"
                              "for(var i=n-1;i>=0;i--) document.querySelectorAll('.tabs button')[i].click(); return n;})()")
                check(not page.errors, "console errors: %s" % "; ".join(page.errors))
                check(page.requests == [page.url], "requests: %s" % page.requests)
            except (Failure, ProtocolError) as e:
                failed += 1
                print("FAIL %s: %s" % (os.path.basename(path), e))
        if opened:
            print("ok   %d fixture pages opened" % opened)
        inputs += [(None, False)] * opened
    print("%d passed, %d failed" % (len(inputs) - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
