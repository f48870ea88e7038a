# SPDX-License-Identifier: Apache-2.0
"""Check 5 of scripts/gpu-check.sh: numba.cuda, which binds the driver itself (ctypes or NVIDIA's
cuda-python, both through dlopen/dlsym of libcuda) and allocates device arrays with cuMemAlloc.
Prints RESULT (the same with and without cudasnap) and CS_ALLOCS (cudasnap's
allocation.all.allocated, -1 without cudasnap). Exits 3 (skip) when numba cannot be imported or
sees no GPU."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gc_cudasnap  # noqa: E402

try:
    import numpy as np
    from numba import cuda
    if not cuda.is_available():
        raise RuntimeError("numba.cuda.is_available() is False")
except Exception as e:
    print("SKIP numba: %s" % e)
    sys.exit(3)


@cuda.jit
def axpy(out, a, x, y):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = a * x[i] + y[i]


n = 1 << 20
x = cuda.to_device(np.arange(n, dtype=np.float32))
y = cuda.to_device(np.ones(n, dtype=np.float32))
out = cuda.device_array(n, dtype=np.float32)
axpy[(n + 255) // 256, 256](out, np.float32(2.5), x, y)
host = out.copy_to_host()
expected = 2.5 * np.arange(n, dtype=np.float32) + 1
if not np.array_equal(host, expected):
    print("numba: wrong result", file=sys.stderr)
    sys.exit(1)
print("RESULT %s" % float(host.astype(np.float64).sum()).hex())
s = gc_cudasnap.memory_stats(0)
print("CS_ALLOCS %d" % (s["allocation.all.allocated"] if s else -1))
