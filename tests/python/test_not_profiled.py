# SPDX-License-Identifier: Apache-2.0
"""Outside cudasnap every call that asks the profiler raises one error that says how to start the
program under cudasnap; the package never loads a copy of the library itself."""

import os
import sys

from conftest import LIBRARY

CALLS = """
    import sys, cudasnap
    calls = {
        "memory_stats": lambda: cudasnap.memory_stats(),
        "memory_summary": lambda: cudasnap.memory_summary(abbreviated=True),
        "memory_allocated": lambda: cudasnap.memory_allocated(),
        "max_memory_allocated": lambda: cudasnap.max_memory_allocated(0),
        "memory_reserved": lambda: cudasnap.memory_reserved("cuda:0"),
        "max_memory_reserved": lambda: cudasnap.max_memory_reserved(),
        "reset_peak_memory_stats": lambda: cudasnap.reset_peak_memory_stats(),
        "reset_accumulated_memory_stats": lambda: cudasnap.reset_accumulated_memory_stats(),
        "empty_cache": lambda: cudasnap.empty_cache(),
        "mem_get_info": lambda: cudasnap.mem_get_info(),
        "record_history": lambda: cudasnap.record_history(True),
        "dump_snapshot": lambda: cudasnap.dump_snapshot("x.json"),
        "phase (with)": lambda: cudasnap.phase("forward").__enter__(),
        "phase (decorator)": lambda: cudasnap.phase("step")(lambda: 1)(),
        "phase (bare decorator)": lambda: cudasnap.phase(lambda: 1)(),
    }
    errors = {}
    for name, call in calls.items():
        try:
            call()
            errors[name] = None
        except cudasnap.NotProfiledError as err:
            errors[name] = str(err)
    maps = open("/proc/self/maps").read()
    import driver
    driver.report(available=cudasnap.is_available(), errors=errors,
                  mapped="libcudasnap" in maps, is_runtime_error=issubclass(cudasnap.NotProfiledError, RuntimeError))
"""


def test_every_call_raises_one_clear_error_without_cudasnap(run_python, tmp_path):
    r = run_python(CALLS, preload=False, args=["--epochs", "3"]).result
    assert r["available"] is False and r["is_runtime_error"]
    messages = set(r["errors"].values())
    assert None not in messages, r["errors"]
    assert len(messages) == 1  # one error, whatever the call
    message = messages.pop()
    assert "does not run under cudasnap" in message and "libcudasnap.so is not preloaded" in message
    # how to start this very program
    program = "%s %s --epochs 3" % (os.path.basename(sys.executable), tmp_path / "program.py")
    assert "run -- %s`" % program in message
    assert "`LD_PRELOAD=" in message and "libcudasnap.so %s`" % program in message
    assert not r["mapped"]  # the package loaded no copy of the library


def test_a_copy_that_was_not_preloaded_is_not_used(run_python):
    """A libcudasnap.so opened with dlopen (RTLD_LOCAL, as NVTX opens its injection) profiles
    nothing: the package says so instead of asking it."""
    r = run_python("""
        import ctypes, sys
        ctypes.CDLL(sys.argv[1])  # RTLD_LOCAL: not in the global scope
        import cudasnap, driver
        try:
            cudasnap.memory_allocated()
            error = None
        except cudasnap.NotProfiledError as err:
            error = str(err)
        driver.report(available=cudasnap.is_available(), error=error)
    """, preload=False, args=[LIBRARY]).result
    assert r["available"] is False
    assert "libcudasnap.so is in the process but was not preloaded" in r["error"]


def test_load_needs_no_profiler(run_python, tmp_path):
    (tmp_path / "s.json").write_text('{"segments": [], "device_traces": [[]]}')
    r = run_python("""
        import cudasnap, driver
        driver.report(snap=cudasnap.load("s.json"))
    """, preload=False).result
    assert r["snap"] == {"segments": [], "device_traces": [[]]}
