# SPDX-License-Identifier: Apache-2.0
"""torch.cuda.memory's names, each against the C API's answer and against the snapshot the same
moment gives (issue 38)."""

import itertools

import pytest

# torch.cuda.memory_stats()'s keys, as PyTorch builds them (shared docs: snapshot-format.md 5.2),
# written out here apart from cudasnap's stats/stats.def
_METRICS = ("allocated", "current", "freed", "peak")
TORCH_KEYS = sorted(
    ["%s.%s.%s" % (name, pool, metric)
     for name, pool, metric in itertools.product(
         ("active", "active_bytes", "allocated_bytes", "allocation", "inactive_split", "inactive_split_bytes",
          "requested_bytes", "reserved_bytes", "segment"), ("all", "large_pool", "small_pool"), _METRICS)]
    + ["oversize_allocations." + m for m in _METRICS] + ["oversize_segments." + m for m in _METRICS]
    + ["max_split_size", "num_alloc_retries", "num_device_alloc", "num_device_free", "num_ooms",
       "num_sync_all_streams"])

# A workload on device 0: blocks of both pools, one freed, then a snapshot. Reports the package's
# answers, the C API's and the snapshot's.
WORKLOAD = """
    import cudasnap, driver
    c = driver.CApi()
    driver.use_device(0)
    keep = [driver.alloc(n) for n in (1000, 200 << 10, 3 << 20, 25 << 20)]
    gone = driver.alloc(40 << 20)
    driver.free(gone)
    stats = cudasnap.memory_stats()
    names = ("memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved")
    path = cudasnap.dump_snapshot("state.pickle")
    snap = cudasnap.load(path)
    driver.report(keys=list(stats), stats=stats, c_stats=c.stats(0), type=type(stats).__name__,
                  py={n: getattr(cudasnap, n)() for n in names}, c={n: c.value(n, 0) for n in names},
                  snap_stats=snap["cudasnap"]["memory_stats"][0], segments=snap["segments"])
"""


def test_memory_stats_has_torchs_keys_and_the_c_apis_values(run_python):
    r = run_python(WORKLOAD).result
    assert r["type"] == "OrderedDict"
    assert r["keys"] == TORCH_KEYS  # PyTorch's keys, in PyTorch's order (sorted)
    assert r["stats"] == r["c_stats"]
    assert r["stats"] == r["snap_stats"]
    assert r["stats"]["allocation.all.current"] == 4
    assert r["stats"]["allocation.all.allocated"] == 5
    assert r["stats"]["allocation.small_pool.current"] == 2


def test_the_four_numbers_agree_with_the_c_api_the_stats_and_the_snapshot(run_python):
    r = run_python(WORKLOAD).result
    py, c, s = r["py"], r["c"], r["stats"]
    assert py == c
    assert py["memory_allocated"] == s["allocated_bytes.all.current"]
    assert py["max_memory_allocated"] == s["allocated_bytes.all.peak"]
    assert py["memory_reserved"] == s["reserved_bytes.all.current"]
    assert py["max_memory_reserved"] == s["reserved_bytes.all.peak"]
    live = [b for seg in r["segments"] for b in seg["blocks"] if b["state"] == "active_allocated"]
    assert len(live) == 4
    assert py["memory_allocated"] == sum(b["size"] for b in live)
    assert py["memory_reserved"] == sum(seg["total_size"] for seg in r["segments"])
    # the 40 MiB block was freed but its peak stays
    assert py["max_memory_allocated"] >= py["memory_allocated"] + (40 << 20)


def test_reset_peak_memory_stats(run_python):
    r = run_python("""
        import cudasnap, driver
        c = driver.CApi()
        keep = driver.alloc(2 << 20)
        driver.free(driver.alloc(30 << 20))
        before = (cudasnap.max_memory_allocated(), c.value("max_memory_allocated", 0))
        cudasnap.reset_peak_memory_stats()
        after = cudasnap.memory_stats()
        snap = cudasnap.load(cudasnap.dump_snapshot("after.json"))
        driver.report(before=before, after=after, c_after=c.stats(0), snap=snap["cudasnap"]["memory_stats"][0])
    """).result
    assert r["before"][0] == r["before"][1] >= 32 << 20
    after = r["after"]
    assert after == r["c_after"] == r["snap"]
    for key, value in after.items():
        if key.endswith(".peak"):
            assert value == after[key[:-len("peak")] + "current"], key
    assert after["allocated_bytes.all.peak"] == 2 << 20
    assert after["allocated_bytes.all.allocated"] == 32 << 20  # accumulated counts stay


def test_reset_accumulated_memory_stats(run_python):
    r = run_python("""
        import cudasnap, driver
        c = driver.CApi()
        keep = driver.alloc(2 << 20)
        driver.free(driver.alloc(30 << 20))
        before = cudasnap.memory_stats()
        cudasnap.reset_accumulated_memory_stats()
        driver.report(before=before, after=cudasnap.memory_stats(), c_after=c.stats(0))
    """).result
    before, after = r["before"], r["after"]
    assert after == r["c_after"]
    assert before["allocated_bytes.all.allocated"] > 0 and before["num_device_alloc"] > 0
    for key, value in after.items():
        if key.endswith((".allocated", ".freed")) or key in ("num_alloc_retries", "num_device_alloc",
                                                              "num_device_free", "num_ooms", "num_sync_all_streams"):
            assert value == 0, key
        else:
            assert value == before[key], key  # current, peak and max_split_size stay


def test_empty_cache_returns_every_devices_free_segments(run_python):
    r = run_python("""
        import cudasnap, driver
        c = driver.CApi()
        driver.use_device(0)
        a = driver.alloc(8 << 20)
        keep = driver.alloc(4 << 20)
        driver.use_device(1)
        b = driver.alloc(6 << 20)
        driver.free(b)
        driver.use_device(0)
        driver.free(a)
        before = [cudasnap.memory_reserved(d) for d in (0, 1)]
        cudasnap.empty_cache()  # no device argument, as torch.cuda.empty_cache()
        after = [cudasnap.memory_reserved(d) for d in (0, 1)]
        snap = cudasnap.load(cudasnap.dump_snapshot("after.json"))
        driver.report(before=before, after=after, c=[c.value("memory_reserved", d) for d in (0, 1)],
                      segments=[(s["device"], s["total_size"]) for s in snap["segments"]],
                      allocated=cudasnap.memory_allocated(0))
    """).result
    assert r["before"][0] >= 12 << 20 and r["before"][1] >= 6 << 20
    assert r["after"] == r["c"]
    assert r["after"][1] == 0  # not the current device: emptied too
    assert r["after"][0] == r["allocated"] == 4 << 20  # the segment with a live block stays
    assert r["segments"] == [[0, 4 << 20]]


@pytest.mark.parametrize("mode", ["adjusted", "raw"])
def test_mem_get_info(run_python, mode):
    env = {"FAKE_CUDA_CAPACITY": str(1 << 30)}
    if mode == "raw":
        env["CUDASNAP_MEMINFO"] = "raw"
    r = run_python("""
        import cudasnap, driver
        c = driver.CApi()
        try:
            cudasnap.mem_get_info(1)
            none_yet = None
        except cudasnap.CudasnapError as err:
            none_yet = str(err)
        keep = driver.alloc(10 << 20)
        driver.free(driver.alloc(20 << 20))
        driver.report(info=list(cudasnap.mem_get_info()), dev0=list(cudasnap.mem_get_info("cuda:0")),
                      c=list(c.mem_info(0)), reserved=cudasnap.memory_reserved(),
                      allocated=cudasnap.memory_allocated(), none_yet=none_yet)
    """, env=env).result
    free, total = r["info"]
    assert r["info"] == r["dev0"] == r["c"]
    assert total == 1 << 30
    if mode == "raw":
        assert free == total - r["reserved"]
    else:  # cached-but-free bytes count as free, as the program's cudaMemGetInfo sees them
        assert free == total - r["allocated"]
    assert "no CUDA context on device 1" in r["none_yet"]


def test_memory_summary_is_the_c_apis_table(run_python):
    r = run_python("""
        import cudasnap, driver
        c = driver.CApi()
        keep = [driver.alloc(n) for n in (512, 5 << 20)]
        driver.report(full=cudasnap.memory_summary(), short=cudasnap.memory_summary(abbreviated=True),
                      c_full=c.summary(0, 0), c_short=c.summary(0, 1), dev1=cudasnap.memory_summary("cuda:1"))
    """).result
    assert r["full"] == r["c_full"] and r["short"] == r["c_short"]
    assert len(r["short"]) < len(r["full"])
    lines = r["full"].splitlines()
    assert lines[1] == "|                  PyTorch CUDA memory summary, device ID 0                 |"
    assert all(len(l) == 77 for l in lines)  # "|" + 75 characters + "|", as PyTorch writes it
    assert "device ID 1" in r["dev1"]
    assert r["full"].endswith("|\n")


def test_record_history_off_forgets_and_on_records(run_python):
    r = run_python("""
        import cudasnap, driver
        keep = driver.alloc(1 << 20)
        cudasnap.record_history(False)
        off = driver.alloc(2 << 20)
        snap_off = cudasnap.load(cudasnap.dump_snapshot("off.json"))
        cudasnap.record_history("all")
        on = driver.alloc(3 << 20)
        snap_on = cudasnap.load(cudasnap.dump_snapshot("on.json"))
        try:
            cudasnap.record_history("everything")
            refused = None
        except ValueError as err:
            refused = str(err)
        sizes = lambda s: [(e["action"], e["size"]) for e in s["device_traces"][0] if e["action"] == "alloc"]
        driver.report(off=sizes(snap_off), on=sizes(snap_on), refused=refused,
                      blocks=sum(b["state"] == "active_allocated" for s in snap_off["segments"] for b in s["blocks"]))
    """).result
    assert r["off"] == []  # off forgot the first allocation and recorded nothing after
    assert r["blocks"] == 2  # the state is kept
    assert r["on"] == [["alloc", 3 << 20]]
    assert "'everything'" in r["refused"]


def test_dump_snapshot_returns_the_path_written(run_python):
    r = run_python("""
        import os, pathlib, cudasnap, driver
        keep = driver.alloc(1 << 20)
        first = cudasnap.dump_snapshot("snap.json")
        second = cudasnap.dump_snapshot("snap.json")  # never replaces: -1 is added
        pickled = cudasnap.dump_snapshot(pathlib.Path("snap.pickle"))
        raw = cudasnap.dump_snapshot(b"snap.pkl")
        named = cudasnap.dump_snapshot()  # CUDASNAP_OUTPUT's name
        try:
            cudasnap.dump_snapshot("no/such/folder/x.json")
            failed = None
        except cudasnap.CudasnapError as err:
            failed = str(err)
        with open(pickled, "rb") as f:
            head = f.read(1)
        driver.report(first=first, second=second, pickled=pickled, raw=raw.decode(), raw_type=type(raw).__name__,
                      named=named, failed=failed, head=head.hex(), exist=[os.path.exists(p) for p in
                      (first, second, pickled, raw, named)], pid=os.getpid())
    """, env={"CUDASNAP_OUTPUT": "out-%p-%t.json"}).result
    assert r["first"] == "snap.json" and r["second"] == "snap-1.json"
    assert r["pickled"] == "snap.pickle" and r["head"] == "80"
    assert r["raw"] == "snap.pkl" and r["raw_type"] == "bytes"
    assert r["named"] == "out-%d-api.json" % r["pid"]
    assert all(r["exist"])
    assert "no snapshot written to no/such/folder/x.json" in r["failed"]


def test_dump_snapshot_refuses_a_nul_in_the_path(run_python):
    """A NUL would cut the name where C reads it (issue 46: 'a.json\\0.pickle' wrote a.json): refused
    with ValueError, as Python's own open() refuses it, and nothing is written."""
    r = run_python("""
        import os, cudasnap, driver
        keep = driver.alloc(1 << 20)
        refused = {}
        for path in ("a.json\\0.pickle", b"b.json\\0.pickle", "\\0"):
            try:
                cudasnap.dump_snapshot(path)
                refused[repr(path)] = None
            except ValueError as err:
                refused[repr(path)] = str(err)
        try:
            open("a.json\\0.pickle", "w")
        except ValueError as err:
            python_says = type(err).__name__
        driver.report(refused=refused, python_says=python_says, files=sorted(os.listdir(".")))
    """).result
    assert r["python_says"] == "ValueError"
    for path, message in r["refused"].items():
        assert message and message.startswith("cudasnap: dump_snapshot: embedded null byte in path"), (path, message)
    assert r["files"] == ["program.py"], r["files"]


def test_dump_snapshot_c_api_reports_a_long_name_cut_short(run_python):
    r = run_python("""
        import ctypes, cudasnap, driver
        c = driver.CApi()
        keep = driver.alloc(1 << 20)
        buf = ctypes.create_string_buffer(8)
        length = c.lib.cudasnap_dump_snapshot(b"a-long-snapshot-name.json", buf, len(buf))
        nothing = c.lib.cudasnap_dump_snapshot(b"no/such/folder/x.json", buf, len(buf))
        driver.report(length=length, cut=buf.value.decode(), nothing=nothing)
    """).result
    assert r["length"] == len("a-long-snapshot-name.json")
    assert r["cut"] == "a-long-"
    assert r["nothing"] == -1
