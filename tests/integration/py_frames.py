# SPDX-License-Identifier: Apache-2.0
"""Python frames in cudasnap's stacks (issue 12): a ctypes program on the fake driver that
allocates from Python code DEPTH calls deep and leaves one 3 MiB block allocated at exit, so the
exit leak report, the snapshot's frames and `cudasnap summary` can be checked for this file's
function and line (the line is printed: site_line=N).
With "threads": 4 threads allocate at once (ctypes releases the GIL around each call), thread i
from worker(i) through i + 1 nested calls, 200 times, and leaves one block of (i + 1) MiB.
Usage: python3 py_frames.py [DEPTH] [ALLOCATIONS] | python3 py_frames.py threads"""

import ctypes
import sys
import threading

MIB = 1 << 20


def driver():
    cuda = ctypes.CDLL("libcuda.so.1")
    cuda.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
    cuda.cuMemFree_v2.argtypes = [ctypes.c_uint64]
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    if (cuda.cuInit(0) or cuda.cuDeviceGet(ctypes.byref(dev), 0)
            or cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) or cuda.cuCtxSetCurrent(ctx)):
        sys.exit("py_frames.py: no context on the fake driver")
    cuda.primary_ctx = ctx
    return cuda


def allocate_weights(cuda, size):
    dptr = ctypes.c_uint64()
    rc = cuda.cuMemAlloc_v2(ctypes.byref(dptr), size)  # SITE
    if rc:
        sys.exit("py_frames.py: cuMemAlloc_v2 failed: %d" % rc)
    return dptr.value


def nested(depth, fn, *args):
    """fn(*args) called from `depth` more Python frames."""
    if depth <= 0:
        return fn(*args)
    return nested(depth - 1, fn, *args)


def worker(cuda, i, barrier):
    if cuda.cuCtxSetCurrent(cuda.primary_ctx):  # the current context is per thread
        errors.append("thread %d: cuCtxSetCurrent failed" % i)
        return
    barrier.wait()
    for _ in range(200):
        cuda.cuMemFree_v2(nested(i + 1, allocate_weights, cuda, 4096 * (i + 1)))
    nested(i + 1, allocate_weights, cuda, (i + 1) * MIB)


errors = []


def threads():
    cuda = driver()
    barrier = threading.Barrier(4)
    pool = [threading.Thread(target=worker, args=(cuda, i, barrier)) for i in range(4)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    if errors:
        sys.exit("py_frames.py: " + "; ".join(errors))


def main():
    if sys.argv[1:] == ["threads"]:
        return threads()
    depth = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    cuda = driver()
    for _ in range(count):
        cuda.cuMemFree_v2(nested(depth, allocate_weights, cuda, 4096))
    nested(depth, allocate_weights, cuda, 3 * MIB)  # left allocated: the exit report names it
    site = next(i for i, text in enumerate(open(__file__), 1) if text.rstrip().endswith("# SITE"))
    print("site_line=%d" % site)


if __name__ == "__main__":
    main()
