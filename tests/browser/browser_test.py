# SPDX-License-Identifier: Apache-2.0
"""What the browser tests (test_report.py, test_job.py) share: the skip status, a failed check as
an exception the test's main turns into one line and status 1, and running the tool."""
import subprocess

SKIP = 77  # ctest's SKIP_RETURN_CODE for these tests: no Chromium here


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


def run(args, env=None):
    """stdout of args; Failure with its stderr when it exits non-zero."""
    p = subprocess.run(args, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise Failure("%s exited %d: %s" % (" ".join(args), p.returncode, p.stderr.strip()))
    return p.stdout
