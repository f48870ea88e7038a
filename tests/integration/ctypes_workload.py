# SPDX-License-Identifier: Apache-2.0
"""Issue #3 test 1d: the loader matrix from Python ctypes (numba's ctypes backend looks the driver
up the same way: dlsym on a CDLL handle, from libffi/_ctypes).

Runs the allocate/write/read/free workload through cuMemAlloc_v2/cuMemFree_v2/cuMemcpyHtoD_v2/
cuMemcpyDtoH_v2 and prints checksum=<hex>. With cudasnap preloaded it also checks, through the fake
driver's counters and cudasnap_memory_stats, that the cache served the allocations and counted
each once. Usage: python3 ctypes_workload.py [ROUNDS]"""

import ctypes
import os
import random
import sys
import zlib

KIB, MIB = 1 << 10, 1 << 20
WINDOW = 4 * KIB
SLOTS = 4


def fail(msg):
    sys.stderr.write("FAIL ctypes_workload.py: %s\n" % msg)
    sys.exit(1)


class FakeCounters(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in (
        "mem_alloc", "mem_free", "mem_alloc_failed", "ctx_synchronize", "event_record",
        "event_query", "capture_violations", "proc_address_lookups", "primary_ctx_resets")] + [
        ("bytes_in_use", ctypes.c_size_t)]


class Stat(ctypes.Structure):
    _fields_ = [("key", ctypes.c_char_p), ("value", ctypes.c_int64)]


def cudasnap_stats():
    """cudasnap_memory_stats(0) as a dict, or None when cudasnap is not preloaded."""
    try:
        fn = ctypes.CDLL(None).cudasnap_memory_stats
    except AttributeError:
        return None
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_int, ctypes.POINTER(Stat), ctypes.c_size_t]
    n = fn(0, None, 0)
    buf = (Stat * n)()
    fn(0, buf, n)
    return {s.key.decode(): s.value for s in buf}


def pick_size(rng, i):
    if i == 0:
        return 1
    if i == 1:
        return 40 * MIB
    cls = rng.randrange(100)
    if cls < 60:
        return rng.randrange(1, 64 * KIB + 1)
    if cls < 85:
        return rng.randrange(64 * KIB, MIB + 1)
    base = rng.choice((3 * MIB, 6 * MIB, 12 * MIB) if cls < 97 else (40 * MIB,))
    return base - rng.randrange(256 * KIB)


def windows(size):
    if size <= 2 * WINDOW:
        return [(0, size)]
    return [(0, WINDOW), (size - WINDOW, WINDOW)]


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    stats = cudasnap_stats()
    preloaded = stats is not None
    expect = os.environ.get("CS_IT_EXPECT_PRELOAD")
    if expect and (expect == "1") != preloaded:
        fail("cudasnap preloaded: %s, expected: %s" % (preloaded, expect == "1"))

    cuda = ctypes.CDLL("libcuda.so.1")
    for name in ("cuInit", "cuDeviceGet", "cuDevicePrimaryCtxRetain", "cuCtxSetCurrent",
                 "cuMemAlloc_v2", "cuMemFree_v2", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2"):
        getattr(cuda, name).restype = ctypes.c_int
    cuda.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
    cuda.cuMemFree_v2.argtypes = [ctypes.c_uint64]
    cuda.cuMemcpyHtoD_v2.argtypes = [ctypes.c_uint64, ctypes.c_void_p, ctypes.c_size_t]
    cuda.cuMemcpyDtoH_v2.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t]

    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    if (cuda.cuInit(0) or cuda.cuDeviceGet(ctypes.byref(dev), 0)
            or cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)
            or cuda.cuCtxSetCurrent(ctx)):
        fail("driver initialization failed")

    get_counters = cuda.fake_cuda_get_counters
    get_counters.restype = None
    before = FakeCounters()
    get_counters(ctypes.byref(before))

    rng = random.Random(0x5EED)
    live = [None] * SLOTS
    checksum = 0
    allocations = 0
    host = ctypes.create_string_buffer(2 * WINDOW)

    def release(slot):
        nonlocal checksum
        dptr, size, tag = live[slot]
        checksum = zlib.crc32(size.to_bytes(8, "little"), checksum)
        for off, n in windows(size):
            if cuda.cuMemcpyDtoH_v2(host, dptr + off, n):
                fail("cuMemcpyDtoH_v2 failed")
            got = host.raw[:n]
            if got != random.Random(tag * 1000003 + off).randbytes(n):
                fail("block 0x%x (%d bytes) lost its contents at +%d" % (dptr, size, off))
            checksum = zlib.crc32(got, checksum)
        rc = cuda.cuMemFree_v2(dptr)
        if rc:
            fail("cuMemFree_v2 of a live block: error %d" % rc)
        live[slot] = None

    for i in range(rounds):
        slot = rng.randrange(SLOTS)
        if live[slot]:
            release(slot)
        size = pick_size(rng, i)
        tag = rng.getrandbits(48)
        dptr = ctypes.c_uint64()
        rc = cuda.cuMemAlloc_v2(ctypes.byref(dptr), size)
        if rc or not dptr.value:
            fail("allocation %d of %d bytes: error %d" % (i, size, rc))
        allocations += 1
        for off, n in windows(size):
            data = random.Random(tag * 1000003 + off).randbytes(n)
            if cuda.cuMemcpyHtoD_v2(dptr.value + off, data, n):
                fail("cuMemcpyHtoD_v2 failed")
        live[slot] = (dptr.value, size, tag)
    for slot in range(SLOTS):
        if live[slot]:
            release(slot)

    after = FakeCounters()
    get_counters(ctypes.byref(after))
    driver = after.mem_alloc - before.mem_alloc
    if after.mem_alloc_failed != before.mem_alloc_failed:
        fail("the driver refused allocations")
    if preloaded:
        stats = cudasnap_stats()
        if not 1 <= driver <= 20:
            fail("cuMemAlloc_v2 reached the driver %d times for %d allocations" % (driver, allocations))
        if stats["allocation.all.allocated"] != allocations:
            fail("cudasnap counted %d allocations, the program made %d"
                 % (stats["allocation.all.allocated"], allocations))
        if stats["allocation.all.current"] != 0 or stats["allocated_bytes.all.current"] != 0:
            fail("cudasnap still counts live blocks after all were freed")
        sys.stderr.write("driver allocations: %d for %d allocations\n" % (driver, allocations))
    elif driver != allocations:
        fail("without cudasnap the driver saw %d allocations of %d" % (driver, allocations))
    print("checksum=%08x" % checksum)


if __name__ == "__main__":
    main()
