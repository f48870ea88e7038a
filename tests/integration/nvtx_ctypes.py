# SPDX-License-Identifier: Apache-2.0
"""Issue 19: NVTX calls from Python through ctypes (a library carrying NVTX v3, as torch.cuda.nvtx
reaches it) become phases. Usage: python3 nvtx_ctypes.py SHIM.so

Pushes "py_epoch", allocates 8 MiB through the driver (ctypes), pushes "py_step" with a name built
at run time (a transient buffer, as Python passes its strings), frees, pops both."""

import ctypes
import sys
import time

shim = ctypes.CDLL(sys.argv[1])
shim.shim_push.argtypes = [ctypes.c_char_p]
shim.shim_mark.argtypes = [ctypes.c_char_p]
cuda = ctypes.CDLL("libcuda.so.1")


def check(r, what):
    if r != 0:
        sys.stderr.write("FAIL nvtx_ctypes.py: %s returned %d\n" % (what, r))
        sys.exit(1)


check(cuda.cuInit(0), "cuInit")
dev = ctypes.c_int()
check(cuda.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
ctx = ctypes.c_void_p()
check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
check(cuda.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
shim.shim_push(b"py_epoch")
time.sleep(0.002)
shim.shim_push(("py_" + "step_%d" % 1).encode())
time.sleep(0.002)
p = ctypes.c_uint64()
check(cuda.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(8 << 20)), "cuMemAlloc_v2")
time.sleep(0.002)
check(cuda.cuMemFree_v2(p), "cuMemFree_v2")
time.sleep(0.002)
shim.shim_pop()
shim.shim_pop()
shim.shim_mark(b"py_done")
print("ok")
