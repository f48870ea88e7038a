# SPDX-License-Identifier: Apache-2.0
"""Fixtures of the Python package's tests: each test runs small Python programs in processes of
their own, under cudasnap on the fake driver (tests/fakes) or without it, and reads back what they
report. The paths come from ctest (tests/python/CMakeLists.txt)."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

SOURCE = os.environ.get("CUDASNAP_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
LIBRARY = os.environ.get("CUDASNAP_LIBRARY", "")
TOOL = os.environ.get("CUDASNAP_TOOL", "")
FAKES = os.environ.get("CUDASNAP_FAKES", "")


def _require(path, what):
    if not path or not os.path.exists(path):
        pytest.fail("%s not found (%r): run these tests through ctest (-L python)" % (what, path))
    return path


class Run:
    """The result of one program: its exit status, output, and the RESULT lines as dicts."""

    def __init__(self, proc):
        self.returncode, self.stdout, self.stderr = proc.returncode, proc.stdout, proc.stderr
        lines = [l[len("RESULT "):] for l in self.stdout.splitlines() if l.startswith("RESULT ")]
        self.results = [json.loads(l) for l in lines]

    @property
    def result(self):
        assert len(self.results) == 1, "expected one RESULT line:\n" + self.stdout + self.stderr
        return self.results[0]


@pytest.fixture
def run_python(tmp_path):
    """run_python(code, preload=True, env={}, check=True): run `code` in a fresh Python process, in
    tmp_path, with the package (python/) and tests/python/driver.py importable and the fake driver
    first on the library path; preloaded with libcudasnap.so unless preload=False."""

    def run(code, preload=True, env=None, check=True, args=()):
        full = dict(os.environ)
        for name in ("LD_PRELOAD", "CUDASNAP_OUTPUT", "CUDASNAP_FORMAT", "CUDASNAP_NVTX", "CUDASNAP_MEMINFO"):
            full.pop(name, None)
        full["PYTHONPATH"] = os.pathsep.join([os.path.join(SOURCE, "python"), os.path.dirname(__file__)])
        full["LD_LIBRARY_PATH"] = _require(FAKES, "the fake driver's folder")
        full["CUDASNAP_DUMP_ON"] = "none"  # no exit snapshot unless a test asks
        full["PYTHONDONTWRITEBYTECODE"] = "1"
        if preload:
            full["LD_PRELOAD"] = _require(LIBRARY, "libcudasnap.so")
        full.update(env or {})
        script = tmp_path / "program.py"
        script.write_text(textwrap.dedent(code))
        proc = subprocess.run([sys.executable, str(script)] + list(args), cwd=str(tmp_path), env=full,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
        out = Run(proc)
        if check and proc.returncode != 0:
            pytest.fail("the program failed (%d):\n%s\n%s" % (proc.returncode, proc.stdout, proc.stderr))
        return out

    return run


@pytest.fixture
def tool():
    """Run the cudasnap tool: tool(args...) -> CompletedProcess (checked)."""
    path = _require(TOOL, "the cudasnap tool")

    def run(*args, check=True):
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        return subprocess.run([path] + [str(a) for a in args], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True, check=check, timeout=120)

    return run
