#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The job page (`cudasnap report -o OUT.html FILE...`) in headless Chromium.

    test_job.py --cudasnap BIN --program PROG_RANKS --out DIR

Runs tests/cli/prog_ranks.c as the 8 ranks of a fake job (as tests/cli/ranks_test.sh does: rank 3
holds 96 MiB of embeddings, rank 5 runs out of memory; the caller puts tests/fakes on
LD_LIBRARY_PATH), writes the job page of its snapshots and opens it. It passes when the page logs
no console error, fetches nothing but itself, shows the ranks in the order and with the OOM row of
`cudasnap ranks --json`, draws one curve per rank, and a row opens that rank's own report (its
peak card) with a way back. Screenshots go to DIR (job.png: the README's picture). Exits 0, 1 on
a failure, 77 (ctest's skip) without Chromium.
"""

import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from browser_test import SKIP, Failure, check, run  # noqa: E402
from chromium import Chromium, ProtocolError, find_chromium  # noqa: E402



def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cudasnap", required=True)
    ap.add_argument("--program", required=True, help="tests/cli/prog_ranks")
    ap.add_argument("--out", required=True, help="folder for the page and screenshots")
    args = ap.parse_args()
    chromium = find_chromium()
    if chromium is None:
        print("SKIP: no Chromium found (apt-get install chromium, or set CHROMIUM=/path)")
        return SKIP
    os.makedirs(args.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="cs-job-test-")
    files = []
    for r in range(8):
        ext = "pickle" if r % 2 else "json"
        env = dict(os.environ, RANK=str(r), WORLD_SIZE="8", SLURM_JOB_ID="4242",
                   FAKE_CUDA_CAPACITY=str(50331648 if r == 5 else 1073741824),
                   CUDASNAP_OUTPUT=os.path.join(work, "snap-r%r-%n-%t." + ext))
        run([args.cudasnap, "run", "--", args.program], env=env)
    files = sorted(os.path.join(work, f) for f in os.listdir(work))
    want = json.loads(run([args.cudasnap, "ranks", "--json"] + files))["ranks"]
    html = os.path.abspath(os.path.join(args.out, "job.html"))
    said = run([args.cudasnap, "report", "-o", html] + files)
    check(said.startswith("wrote %s: " % html), "report said %r" % said)
    try:
        with Chromium(chromium) as browser:
            page = browser.open_page(html, 1280, 900)
            page.wait_for("document.documentElement.getAttribute('data-rendered-ms')")
            ranks = page.evaluate("Array.from(document.querySelectorAll('#job-ranks tbody tr')).map(function(t){"
                                  "return [t.getAttribute('data-rank'), t.classList.contains('oom')];})")
            check([r[0] for r in ranks] == [str(w["rank"]) for w in want],
                  "ranks on the page %s, `ranks` says %s" % ([r[0] for r in ranks], [w["rank"] for w in want]))
            check([r[1] for r in ranks] == [w["oom"] for w in want], "OOM rows on the page: %s" % ranks)
            # the OOM cell says the size asked, as `ranks` does (its oom_bytes)
            cells = page.evaluate("Array.from(document.querySelectorAll('#job-ranks tbody tr td.oom-mark')).map(function(t){"
                                  "return t.title;})")
            asked = ["the last OOM tried to allocate {:,} B".format(w["oom_bytes"]) for w in want if w["oom"]]
            check([c.replace("\u202f", ",") for c in cells] == asked, "OOM cells %s, `ranks` says %s" % (cells, asked))
            curves = page.evaluate("document.querySelectorAll('#job-multiples svg.curve polyline').length")
            check(curves == len(want), "%d curves for %d ranks" % (curves, len(want)))
            spread = page.evaluate("document.getElementById('job-spread').innerText")
            check(spread.startswith("spread: highest / median peak = ") and "rank 3" in spread, "spread: %r" % spread)
            page.screenshot(os.path.join(args.out, "job.png"))
            # the highest rank's own report, one click away, and back
            page.evaluate("document.querySelector('#job-ranks tbody tr').click()")
            peak = page.wait_for("(document.getElementById('peak-value')||{}).innerText")
            check(str(want[0]["peak_allocated"]) in peak.replace(",", ""), "rank 3's peak card: %r" % peak)
            page.screenshot(os.path.join(args.out, "job-rank3.png"))
            page.evaluate("document.getElementById('back-to-job').click()")
            page.wait_for("!!document.getElementById('job-ranks')")
            check(not page.errors, "console errors: %s" % "; ".join(page.errors))
            check(page.requests == [page.url], "requests: %s" % page.requests)
    except (Failure, ProtocolError) as e:
        print("FAIL job page: %s" % e)
        return 1
    print("ok   job page: %d ranks, %d bytes; screenshot %s" % (len(want), os.path.getsize(html),
                                                              os.path.join(args.out, "job.png")))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Failure as e:
        print("FAIL job page: %s" % e)
        sys.exit(1)
