# SPDX-License-Identifier: Apache-2.0
"""The Python of docs/python.md and the README runs as shown: the notebook session's cells, in
order in one process under cudasnap on the fake driver, print exactly the output the page shows;
the README's lines log the peak of each step."""

import os
import re
import textwrap

from conftest import SOURCE

FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.S | re.M)


def read(*path):
    with open(os.path.join(SOURCE, *path), encoding="utf-8") as f:
        return f.read()


def section(text, heading):
    start = text.index("\n## %s\n" % heading)
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def test_the_notebook_session_prints_what_the_page_shows(run_python):
    blocks = FENCE.findall(section(read("docs", "python.md"), "A notebook session"))
    code = "\n".join(body for lang, body in blocks if lang == "python")
    shown = "".join(body for lang, body in blocks if lang == "text")
    assert code.count("cudasnap.") > 10 and shown
    r = run_python(code)
    assert r.stdout == shown


FIRST_LINES = """
    import cudasnap, driver  # the test's stand-ins for a data loader and a training step

    loader = [1, 3, 2]
    def train_step(batch):
        blocks = [driver.alloc(batch << 20) for _ in range(4)]
        for b in blocks:
            driver.free(b)
"""


def test_the_readme_logs_the_peak_per_step(run_python):
    readme = [body for lang, body in FENCE.findall(read("README.md")) if lang == "python"]
    page = [body for lang, body in FENCE.findall(read("docs", "python.md")) if lang == "python"]
    assert len(readme) == 1 and readme[0] == page[0]  # the front page's lines are the page's first
    assert readme[0].count("\n") == 6 and "reset_peak_memory_stats()" in readme[0]
    r = run_python(textwrap.dedent(FIRST_LINES) + "\n" + readme[0])
    # 1 MiB: small-pool blocks of 1 MiB; 3 MiB: segments of their own, rounded to 4 MiB; 2 MiB: those
    # cached segments, reused whole (docs/allocator.md). Each step's own peak: the reset works.
    assert r.stdout.splitlines() == ["step 0: peak 4 MiB", "step 1: peak 16 MiB", "step 2: peak 16 MiB"]
