# SPDX-License-Identifier: Apache-2.0
"""Phases from Python without the nvtx package: recorded as NVTX ranges are, so the snapshot
carries them in external_annotations and `cudasnap summary` names them at the peak."""

import pytest

PROGRAM = """
    import threading, cudasnap, driver

    @cudasnap.phase("optimizer")
    def optimizer_step(n):
        return driver.alloc(n)

    @cudasnap.phase
    def evaluate():
        driver.free(driver.alloc(1 << 20))

    keep = driver.alloc(1 << 20)
    forward = cudasnap.phase("forward")
    with cudasnap.phase("epoch 1"):
        with forward:
            activations = driver.alloc(96 << 20)  # the peak is here
        driver.free(activations)
        state = optimizer_step(2 << 20)
        evaluate()
    ended_elsewhere = cudasnap.phase("handed over")
    ended_elsewhere.__enter__()
    t = threading.Thread(target=lambda: forward.__enter__() and forward.__exit__(None, None, None))
    t.start(); t.join()
    ended_elsewhere.__exit__(None, None, None)
    path = cudasnap.dump_snapshot("phases.json")
    snap = cudasnap.load(path)
    driver.report(path=path, annotations=snap["external_annotations"], name=repr(forward),
                  wrapped=[optimizer_step.__name__, evaluate.__name__])
"""


@pytest.mark.parametrize("nvtx", ["on", "off"])
def test_phases_are_in_the_snapshot(run_python, nvtx):
    # CUDASNAP_NVTX=off stops cudasnap taking NVTX's calls; phases the program asks for stay
    r = run_python(PROGRAM, env={"CUDASNAP_NVTX": nvtx}).result
    seen = [(a["stage"], a["name"], a["device"]) for a in r["annotations"]]
    assert seen == [("START", "epoch 1", 0), ("START", "forward", 0), ("END", "forward", 0),
                    ("START", "optimizer", 0), ("END", "optimizer", 0), ("START", "evaluate", 0),
                    ("END", "evaluate", 0), ("END", "epoch 1", 0), ("START", "handed over", 0),
                    ("START", "forward", 0), ("END", "forward", 0), ("END", "handed over", 0)]
    times = [a["time_us"] for a in r["annotations"]]
    assert times == sorted(times)
    assert r["name"] == "cudasnap.phase('forward')"
    assert r["wrapped"] == ["optimizer_step", "evaluate"]


def test_summary_names_the_phases_at_the_peak(run_python, tool, tmp_path):
    run_python(PROGRAM)
    out = tool("summary", tmp_path / "phases.json").stdout
    assert "during epoch 1 > forward" in out, out


def test_a_phase_object_nests_and_serves_threads(run_python):
    r = run_python("""
        import threading, cudasnap, driver
        p = cudasnap.phase("layer")
        keep = driver.alloc(1 << 20)
        with p:
            with p:  # the same object entered again: a range of its own
                pass
        done = threading.Event()
        def worker():
            with p:
                done.wait()
        t = threading.Thread(target=worker)
        t.start()
        with p:
            pass
        done.set(); t.join()
        class Trainer:
            @cudasnap.phase("train")
            def train(self, n):
                return n + 1

            @cudasnap.phase
            def evaluate(self):
                return self.train(1)

        methods = Trainer().evaluate()
        async def coro():
            return 7
        wrapped = cudasnap.phase("async step")(coro)
        import asyncio
        value = asyncio.run(wrapped())
        snap = cudasnap.load(cudasnap.dump_snapshot("nest.json"))
        driver.report(stages=[(a["stage"], a["name"]) for a in snap["external_annotations"]], value=value,
                      methods=methods)
    """).result
    stages = r["stages"]
    assert stages[:4] == [["START", "layer"], ["START", "layer"], ["END", "layer"], ["END", "layer"]]
    assert sorted(map(tuple, stages[4:8])) == sorted([("START", "layer")] * 2 + [("END", "layer")] * 2)
    assert stages[8:] == [["START", "Trainer.evaluate"], ["START", "train"], ["END", "train"],
                          ["END", "Trainer.evaluate"], ["START", "async step"], ["END", "async step"]]
    assert r["value"] == 7 and r["methods"] == 2


def test_c_api_phase_ids(run_python):
    r = run_python("""
        import ctypes, threading, cudasnap, driver
        c = driver.CApi()
        keep = driver.alloc(1 << 20)
        first = c.lib.cudasnap_phase_start(b"io")
        again = c.lib.cudasnap_phase_start(b"io")
        other = c.lib.cudasnap_phase_start(b"compute")
        c.lib.cudasnap_phase_end(0)          # nothing
        c.lib.cudasnap_phase_end(12345)      # not an id: nothing
        t = threading.Thread(target=c.lib.cudasnap_phase_end, args=(other,))  # ended on another thread
        t.start(); t.join()
        c.lib.cudasnap_phase_end(first)
        c.lib.cudasnap_phase_end(again)
        snap = cudasnap.load(cudasnap.dump_snapshot("ids.json"))
        driver.report(ids=[first, again, other], stages=[(a["stage"], a["name"]) for a in snap["external_annotations"]])
    """).result
    first, again, other = r["ids"]
    assert first == again != other and first != 0
    assert r["stages"] == [["START", "io"], ["START", "io"], ["START", "compute"], ["END", "compute"],
                           ["END", "io"], ["END", "io"]]
