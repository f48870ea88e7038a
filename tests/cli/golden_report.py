#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Digest of a `cudasnap report` page for tests/cli/golden.sh: what a golden file can hold.

    golden_report.py PAGE.html

Prints the page's size, the sha256 of its template (the page with its data element emptied and the
tool's version replaced by @VERSION@), the sha256 of the data element's text, then per member of
the data its sha256, the small members (title, path, writer, facts, settings) verbatim and per
device its events, peak and reserved peak, so a changed page says which part changed.
"""

import hashlib
import json
import sys

OPEN = '<script type="application/json" id="cs-data">'


def sha(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def main():
    version = sys.argv[2] if len(sys.argv) > 2 else None
    raw = open(sys.argv[1], "rb").read()
    html = raw.decode("utf-8")
    start = html.index(OPEN) + len(OPEN)
    end = html.index("</script>", start)
    blob = html[start:end]
    template = html[:start] + "@DATA@" + html[end:]
    if version:
        template = template.replace(version, "@VERSION@")
    data = json.loads(blob)
    print("page bytes: %d" % len(raw))
    print("template sha256: %s" % sha(template))
    print("data sha256: %s" % sha(blob))
    for key, value in data.items():
        print("data.%s sha256: %s" % (key, sha(json.dumps(value, sort_keys=True))))
    for key in ("title", "path", "writer", "facts", "settings"):
        if key in data:
            print("%s: %s" % (key, json.dumps(data[key])))
    for dev in data.get("devices", []):
        print("device %s: events %s, peak %s, reserved_peak %s" % (
            dev.get("device"), dev.get("events"), json.dumps(dev.get("peak")),
            json.dumps(dev.get("reserved_peak"))))


if __name__ == "__main__":
    main()
