# SPDX-License-Identifier: Apache-2.0
"""Issue #13: processes that end through _exit, from Python (endings.sh runs them with and without
cudasnap and compares how they ended).

Usage: python3 ctypes_endings.py MODE
  os_exit   allocate through the driver with ctypes, free most, keep 3 MiB, then os._exit(3)
  mp_fork   the same in the parent (which then returns normally); a multiprocessing child (fork
            start method) allocates and keeps 5 MiB itself and returns 4 from its target's
            sys.exit, which multiprocessing turns into os._exit(4); the parent checks the exit code
  segv      the same, then a null pointer read through ctypes (run it with -X faulthandler: its
            handler, installed before any CUDA call, prints the traceback, restores SIG_DFL and
            raises the signal again)
  interrupt the same, then SIGINT: Python's own handler raises KeyboardInterrupt, nothing catches
            it, and the interpreter ends itself with SIGINT (SIG_DFL, kill) as it exits
"""

import ctypes
import multiprocessing
import os
import signal
import sys
import time

MIB = 1 << 20


def fail(msg):
    sys.stderr.write("FAIL ctypes_endings.py: %s\n" % msg)
    sys.exit(1)


def driver():
    cuda = ctypes.CDLL("libcuda.so.1")
    for name in ("cuInit", "cuDeviceGet", "cuDevicePrimaryCtxRetain", "cuCtxSetCurrent", "cuMemAlloc_v2",
                 "cuMemFree_v2"):
        getattr(cuda, name).restype = ctypes.c_int
    cuda.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
    cuda.cuMemFree_v2.argtypes = [ctypes.c_uint64]
    return cuda


def init(cuda):
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    if (cuda.cuInit(0) or cuda.cuDeviceGet(ctypes.byref(dev), 0)
            or cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) or cuda.cuCtxSetCurrent(ctx)):
        fail("driver initialization failed")


def alloc(cuda, size):
    p = ctypes.c_uint64()
    rc = cuda.cuMemAlloc_v2(ctypes.byref(p), size)
    if rc or not p.value:
        fail("cuMemAlloc_v2 of %d bytes: error %d" % (size, rc))
    return p.value


def work_and_keep(cuda, keep_bytes):
    """Allocations and frees, and one block of keep_bytes never freed."""
    for i in range(1, 21):
        p = alloc(cuda, i << 16)
        if cuda.cuMemFree_v2(p):
            fail("cuMemFree_v2 failed")
    return alloc(cuda, keep_bytes)


def child(cuda):
    work_and_keep(cuda, 5 * MIB)
    sys.exit(4)


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    cuda = driver()
    init(cuda)
    work_and_keep(cuda, 3 * MIB)
    sys.stdout.flush()
    if mode == "os_exit":
        os._exit(3)
    if mode == "segv":
        ctypes.string_at(0)
    if mode == "interrupt":
        os.kill(os.getpid(), signal.SIGINT)
        while True:
            time.sleep(0.01)
    if mode == "mp_fork":
        p = multiprocessing.get_context("fork").Process(target=child, args=(cuda,))
        p.start()
        p.join()
        if p.exitcode != 4:
            fail("the child's exit code is %s, expected 4" % p.exitcode)
        print("child exit code 4")
        return
    fail("unknown mode %r" % mode)


if __name__ == "__main__":
    main()
