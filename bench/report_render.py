#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""How long a `cudasnap report` page takes to render in headless Chromium (bench/README.md).

    bench/report_render.py PAGE.html [RUNS] [NAME]

Opens the page RUNS times (default 5), each in a fresh tab of one headless Chromium at
1280x1000, and prints, as bench/run.sh does,
    BENCH report_<NAME>_render_ms <median> ms          first frame on screen, since navigation
    BENCH report_<NAME>_load_event_ms <median> ms      Page.navigate sent -> load event, wall clock
    BENCH report_<NAME>_hover_ms <median> ms           the timeline's tooltip after a mouse move
"render" is the page's own mark: performance.now() in the first animation frame after every
section was built and drawn (report.js sets data-rendered-ms), i.e. parsing the HTML and the
data, laying out and drawing. A console error or any request but the page's own fails the run.
Exits 2 without Chromium.
"""

import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "browser"))
from chromium import Chromium, find_chromium  # noqa: E402


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    page_path = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    name = sys.argv[3] if len(sys.argv) > 3 else "page"
    chromium = find_chromium()
    if chromium is None:
        print("bench/report_render.py: no Chromium (apt-get install chromium)", file=sys.stderr)
        return 2
    render, load, hover = [], [], []
    with Chromium(chromium) as browser:
        for _ in range(runs):
            page = browser.open_page(page_path, 1280, 1000)
            render.append(float(page.wait_for("document.documentElement.getAttribute('data-rendered-ms')")))
            load.append(page.load_s * 1000)
            box = page.evaluate("(function(){var c=document.querySelector('canvas'); if(!c) return null;"
                                "var r=c.getBoundingClientRect(); return [r.left, r.top, r.width, r.height];})()")
            if box:
                started = time.monotonic()
                page.move_mouse(box[0] + box[2] / 2, box[1] + box[3] - 40)
                page.wait_for("document.getElementById('tip').style.display === 'block'", timeout=10)
                hover.append((time.monotonic() - started) * 1000)
            if page.errors or page.requests != [page.url]:
                print("bench/report_render.py: errors %s, requests %s" % (page.errors, page.requests), file=sys.stderr)
                return 1
            page.send("Page.close")
    print("BENCH report_%s_render_ms %.0f ms" % (name, statistics.median(render)))
    print("BENCH report_%s_load_event_ms %.0f ms" % (name, statistics.median(load)))
    if hover:
        print("BENCH report_%s_hover_ms %.1f ms" % (name, statistics.median(hover)))
    print("bench: %s: render %s ms" % (name, ", ".join("%.0f" % r for r in render)), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
