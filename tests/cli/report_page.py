#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Check a `cudasnap report` page as a reader of its bytes, without a browser.

    report_page.py [--top NAME | --site NAME] [--frame NAME] PAGE.html

The page must hold exactly one data element, <script type="application/json" id="cs-data">, whose
text has no "</" and no "<!--" (either would let the HTML parser end it early) and parses as JSON
with the members the page's script reads; nothing in the page may refer to anything outside it
(no src= attribute, no href= but the empty data: favicon, no "://" outside the data). --top: the
first device's top site at the peak has this function name; --site: some site has it; --frame:
that site's stack has a frame of this name. Every device's timeline runs in trace order from the
start to the end, with at most 3 points per stretch, and its highest point is the peak, kept as a
point. Prints the first device's peak bytes (nothing when no device is in use). Exit 0 when all
holds, 1 with the reason otherwise.
"""

import argparse
import json
import re
import sys

OPEN = '<script type="application/json" id="cs-data">'


def fail(why):
    print(why)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("page")
    ap.add_argument("--top")
    ap.add_argument("--site")
    ap.add_argument("--frame")
    args = ap.parse_args()
    html = open(args.page, encoding="utf-8").read()
    if html.count(OPEN) != 1:
        fail("expected one data element, found %d" % html.count(OPEN))
    start = html.index(OPEN) + len(OPEN)
    end = html.index("</script>", start)
    blob = html[start:end]
    if "</" in blob or "<!--" in blob:
        fail("the data holds '</' or '<!--'")
    data = json.loads(blob)
    outside = html[:start] + html[end:]
    if re.search(r"\ssrc\s*=", outside):
        fail("the page has a src= attribute")
    hrefs = re.findall(r"href\s*=\s*\"([^\"]*)\"", outside)
    if hrefs != ["data:,"]:
        fail("the page refers to %s" % hrefs)
    if "://" in outside:
        fail("the page has a URL: %s" % outside[max(0, outside.index("://") - 40):outside.index("://") + 40])
    for key in ("title", "path", "writer", "facts", "settings", "devices", "stacks", "frames", "sites", "stack_sites"):
        if key not in data:
            fail("the data lacks %s" % key)

    site = None
    if args.top:
        if not data["devices"] or not data["devices"][0]["peak_sites"]:
            fail("no site at the peak")
        site = data["sites"][data["devices"][0]["peak_sites"][0][0]]
        if site[0] != args.top:
            fail("the top site at the peak is %r, not %r" % (site[0], args.top))
    if args.site:
        named = [s for s in data["sites"] if s[0] == args.site]
        if not named:
            fail("no site named %r among %s" % (args.site, [s[0] for s in data["sites"]]))
        site = named[0]
    if args.frame:
        if site is None or site[3] < 0:
            fail("no stack to look for %r in" % args.frame)
        names = [data["frames"][f][0] for f in data["stacks"][site[3]]]
        if args.frame not in names:
            fail("the site's stack %s lacks %r" % (names, args.frame))
    for dev in data["devices"]:
        check_timeline(dev)
    if data["devices"]:
        print(data["devices"][0]["peak"]["bytes"])


def check_timeline(dev):
    """The down-sampled timeline keeps what the page promises: points in trace order, at most 3 per
    stretch (1,200 stretches) besides the start and the end, and the peak itself as a point whose
    bands add up to it."""
    tl, events = dev["timeline"], dev["events"]
    states = tl["state"]
    if not states or states[0] != 0 or states[-1] != events:
        fail("device %d: the timeline does not run from state 0 to %d: %s..." % (dev["device"], events, states[:3]))
    if any(b <= a for a, b in zip(states, states[1:])):
        fail("device %d: timeline states are not increasing" % dev["device"])
    if len(states) > 3 * 1200 + 2:
        fail("device %d: %d points, more than 3 per stretch" % (dev["device"], len(states)))
    if len(tl["bands"]) != len(dev["bands"]) + 1 or any(len(b) != len(states) for b in tl["bands"] + [tl["time"], tl["reserved"]]):
        fail("device %d: the timeline's columns do not match" % dev["device"])
    totals = [sum(b[i] for b in tl["bands"]) for i in range(len(states))]
    peak = dev["peak"]
    if peak["after"] not in states:
        fail("device %d: the peak (after entry %d) is not a point" % (dev["device"], peak["after"]))
    if totals[states.index(peak["after"])] != peak["bytes"] or max(totals) != peak["bytes"]:
        fail("device %d: the timeline's highest point %d is not the peak %d" % (dev["device"], max(totals), peak["bytes"]))
    if len(states) == events + 1 and len(states) > 1 and states != list(range(events + 1)):
        fail("device %d: a short trace lost states" % dev["device"])


if __name__ == "__main__":
    main()
