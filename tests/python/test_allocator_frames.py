# SPDX-License-Identifier: Apache-2.0
"""A Python program with its own allocation helper (issue 46): cuda_alloc() allocates every byte,
so without more every site reads `cuda_alloc`. Named part of the allocator (CUDASNAP_ALLOCATOR_FRAMES,
@cudasnap.allocator_frame, cudasnap.allocator_frame("...")) its callers are the sites: in the
snapshot the program writes (which carries the list), `cudasnap summary`, the report, pprof and
the live view (`cudasnap top`)."""

import json
import os
import shutil
import subprocess

import pytest

# finetune_sim.py's shape: the helper calls the driver itself (ctypes, as a CUDA binding would),
# and two functions of the program allocate through it: load_model 16 MiB, train_step 4 MiB.
PROGRAM = """
    import ctypes, json, os, subprocess, sys, time
    import cudasnap, driver

    DECORATE = os.environ.get("DECORATE")
    driver.use_device(0)
    _cuda = ctypes.CDLL("libcuda.so.1")

    def cuda_alloc(nbytes):
        p = ctypes.c_uint64()
        driver.check(_cuda.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(nbytes)), "cuMemAlloc_v2")
        return p.value

    if DECORATE == "decorator":
        cuda_alloc = cudasnap.allocator_frame(cuda_alloc)  # as @cudasnap.allocator_frame would

    def load_model():
        weights = []
        for _ in range(2):
            weights.append(cuda_alloc(8 << 20))  # @site load_model
        return weights

    def train_step():
        return cuda_alloc(4 << 20)  # @site train_step

    def live_sites(helper):
        # the live record, as `cudasnap top` reads it (published every second: wait for the 20 MiB,
        # with cuda_alloc a site or not)
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        for _ in range(100):
            out = subprocess.run([os.environ["CUDASNAP_TOOL"], "top", "--once", "--json", "--pid", str(os.getpid())],
                                 env=env, stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
            rows = json.loads(out)["processes"]
            sites = {s["site"].split(" ")[0]: s["bytes"] for r in rows for s in r["top_sites"]}
            if sum(sites.values()) == 20 << 20 and ("cuda_alloc" in sites) == helper:
                return sites
            time.sleep(0.1)
        raise SystemExit("the live record never showed 20 MiB, cuda_alloc %s: %s" % (helper, out))

    model = load_model()
    step = train_step()
    named = DECORATE == "decorator" or os.environ.get("CUDASNAP_ALLOCATOR_FRAMES") == "cuda_alloc"
    before = live_sites(not named)
    if DECORATE == "call":
        cudasnap.allocator_frame("cuda_alloc")  # named late: the live view names its stacks again
    after = live_sites(False) if DECORATE == "call" else before
    driver.report(before=before, after=after)
"""


def _lines(tmp_path):
    src = (tmp_path / "program.py").read_text().splitlines()
    return {name: next(i + 1 for i, l in enumerate(src) if "@site " + name in l)
            for name in ("load_model", "train_step")}


def _live_sites(summary):
    lines = summary.split("top allocation sites by live bytes:\n", 1)[1].split("top allocation sites at", 1)[0]
    return [l.strip() for l in lines.splitlines() if l.strip()]


def _check_callers(tool, tmp_path, snapshot, extra=()):
    lines = _lines(tmp_path)
    path = str(tmp_path / "program.py")
    sites = _live_sites(tool("summary", *extra, snapshot).stdout)
    assert sites == ["16777216 B (16.0 MiB) in 2 blocks: load_model %s:%d" % (path, lines["load_model"]),
                     "4194304 B (4.0 MiB) in 1 block: train_step %s:%d" % (path, lines["train_step"])], sites
    report = tool("report", *extra, "-o", tmp_path / "page.html", snapshot).stdout
    assert report.startswith("wrote ")
    page = (tmp_path / "page.html").read_text()
    assert '"load_model","%s",%d' % (path, lines["load_model"]) in page
    assert '"cuda_alloc"' not in page.split('"sites"', 1)[1].split("]]", 1)[0]  # no site of its own
    if shutil.which("go"):
        tool("export", "--format", "pprof", *extra, "-o", tmp_path / "p.pb.gz", snapshot)
        top = subprocess.run(["go", "tool", "pprof", "-top", str(tmp_path / "p.pb.gz")], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, universal_newlines=True, check=True).stdout
        names = ("load_model", "train_step", "cuda_alloc")
        flat = [l.split()[-1] for l in top.splitlines() if l.strip().endswith(names)]
        assert flat == ["load_model", "train_step"], top


def test_the_variable_makes_the_callers_the_sites(run_python, tool, tmp_path):
    r = run_python(PROGRAM, env={"CUDASNAP_ALLOCATOR_FRAMES": "cuda_alloc", "CUDASNAP_DUMP_ON": "exit",
                                 "CUDASNAP_OUTPUT": "exit.json"})
    assert r.result["before"] == {"load_model": 16 << 20, "train_step": 4 << 20}, r.result
    snapshot = str(tmp_path / "exit.json")
    with open(snapshot) as f:
        assert json.load(f)["cudasnap"]["allocator_frames"] == ["cuda_alloc"]
    _check_callers(tool, tmp_path, snapshot)


def test_without_it_the_helper_takes_every_site(run_python, tool, tmp_path):
    # the shape, and the flag that names it afterwards, on the file as it is
    r = run_python(PROGRAM, env={"CUDASNAP_DUMP_ON": "exit", "CUDASNAP_OUTPUT": "exit.json"})
    assert r.result["before"] == {"cuda_alloc": 20 << 20}, r.result
    snapshot = str(tmp_path / "exit.json")
    with open(snapshot) as f:
        assert "allocator_frames" not in json.load(f)["cudasnap"]
    sites = _live_sites(tool("summary", snapshot).stdout)
    assert len(sites) == 1 and sites[0].startswith("20971520 B (20.0 MiB) in 3 blocks: cuda_alloc "), sites
    _check_callers(tool, tmp_path, snapshot, extra=("--allocator-frames", "cuda_alloc"))


@pytest.mark.parametrize("how", ["decorator", "call"])
def test_the_program_names_its_helper(run_python, tool, tmp_path, how):
    r = run_python(PROGRAM, env={"DECORATE": how, "CUDASNAP_DUMP_ON": "exit", "CUDASNAP_OUTPUT": "exit.json"})
    want = {"load_model": 16 << 20, "train_step": 4 << 20}
    if how == "decorator":
        assert r.result["before"] == want, r.result
    else:  # named after the live record had named the stacks: named again
        assert r.result["before"] == {"cuda_alloc": 20 << 20} and r.result["after"] == want, r.result
    snapshot = str(tmp_path / "exit.json")
    with open(snapshot) as f:
        assert json.load(f)["cudasnap"]["allocator_frames"] == ["cuda_alloc"]
    _check_callers(tool, tmp_path, snapshot)


def test_a_bad_variable_is_one_line_and_no_list(run_python, tmp_path):
    r = run_python(PROGRAM, env={"CUDASNAP_ALLOCATOR_FRAMES": "cuda_alloc,[train", "CUDASNAP_DUMP_ON": "exit",
                                 "CUDASNAP_OUTPUT": "exit.json"})
    warnings = [l for l in r.stderr.splitlines() if "CUDASNAP_ALLOCATOR_FRAMES=" in l]
    assert warnings == ["cudasnap: warning: CUDASNAP_ALLOCATOR_FRAMES=cuda_alloc,[train is not accepted (`[train` has "
                        "a [ that is not closed; it takes a comma-separated list of at most 64 shell globs over "
                        "function names, each of at most 255 bytes); using none"], r.stderr
    assert r.result["before"] == {"cuda_alloc": 20 << 20}, r.result
    with open(tmp_path / "exit.json") as f:
        assert "allocator_frames" not in json.load(f)["cudasnap"]


CALLS = """
    import cudasnap, driver

    class Pool:
        @cudasnap.allocator_frame
        def grow(self, n):
            return n

        @staticmethod
        def helper():
            pass

    results = {"returned": Pool().grow(3), "method": Pool.grow.__qualname__}
    cudasnap.allocator_frame(Pool.helper)
    cudasnap.allocator_frame("Trainer.*")
    for bad, error in (("[x", ValueError), ("a\\0b", ValueError), (42, TypeError), (len, TypeError)):
        try:
            cudasnap.allocator_frame(bad)
            results[repr(bad)] = "accepted"
        except error as e:
            results[repr(bad)] = str(e)
    driver.alloc(1 << 20)  # a snapshot needs a device in use
    snap = cudasnap.load(cudasnap.dump_snapshot("now.json"))
    results["list"] = snap["cudasnap"]["allocator_frames"]
    driver.report(**results)
"""


def test_the_names_a_program_gives(run_python):
    r = run_python(CALLS).result
    assert r["returned"] == 3 and r["method"] == "Pool.grow"
    import sys
    # the name cudasnap's stacks give a Python frame: the qualified name from 3.11 on
    grow, helper = ("Pool.grow", "Pool.helper") if sys.version_info >= (3, 11) else ("grow", "helper")
    assert r["list"] == [grow, helper, "Trainer.*"], r
    assert r["'[x'"] == "cudasnap.allocator_frame: '[x' has a [ that is not closed", r
    assert "holds a NUL character" in r["'a\\x00b'"], r
    assert r["42"].startswith("cudasnap.allocator_frame takes a function or a glob string"), r
    assert "is no Python function" in r[repr(len)], r


def test_without_cudasnap_the_decorator_changes_nothing(run_python):
    r = run_python("""
        import cudasnap, driver

        @cudasnap.allocator_frame
        def cuda_alloc(n):
            return n * 2

        cudasnap.allocator_frame("anything*")
        driver.report(value=cuda_alloc(21), available=cudasnap.is_available())
    """, preload=False).result
    assert r == {"value": 42, "available": False}
