# SPDX-License-Identifier: Apache-2.0
"""Python frames on the hot path (bench/README.md, section 1d): allocate+free pairs of 4 KiB
through the CUDA driver API from Python (ctypes on the fake driver), DEPTH Python frames below the
loop. Prints the fastest of SAMPLES runs, in ns of this thread's CPU time per pair (CPU time and the
minimum: the machine these run on is shared and busy; wall time there measures the neighbours). Run it with and without cudasnap
preloaded and with CUDASNAP_STACKS=none/native/all/python: the differences are cudasnap's cost.
Usage: python3 bench_python.py PAIRS SAMPLES DEPTH"""

import ctypes
import sys
import time


def driver():
    cuda = ctypes.CDLL("libcuda.so.1")
    cuda.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
    cuda.cuMemFree_v2.argtypes = [ctypes.c_uint64]
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    if (cuda.cuInit(0) or cuda.cuDeviceGet(ctypes.byref(dev), 0)
            or cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) or cuda.cuCtxSetCurrent(ctx)):
        sys.exit("bench_python.py: no context on the fake driver")
    return cuda


def pairs_loop(cuda, pairs):
    alloc, free = cuda.cuMemAlloc_v2, cuda.cuMemFree_v2
    dptr = ctypes.c_uint64()
    ref = ctypes.byref(dptr)
    start = time.thread_time_ns()
    for _ in range(pairs):
        if alloc(ref, 4096):
            sys.exit("bench_python.py: cuMemAlloc_v2 failed")
        free(dptr.value)
    return time.thread_time_ns() - start


def deep(depth, cuda, pairs):
    """pairs_loop from `depth` more Python frames (plain calls: 3.11 runs them in one C frame)."""
    if depth <= 1:
        return pairs_loop(cuda, pairs)
    return deep(depth - 1, cuda, pairs)


def main():
    pairs, samples, depth = (int(a) for a in sys.argv[1:4])
    cuda = driver()
    deep(depth, cuda, max(pairs // 10, 1))  # warm up: caches, interned stacks and code records
    ns = [deep(depth, cuda, pairs) / pairs for _ in range(samples)]
    print("%.1f" % min(ns))


if __name__ == "__main__":
    main()
