# SPDX-License-Identifier: Apache-2.0
"""Check 5 of scripts/gpu-check.sh: CuPy with its memory pool disabled
(cupy.cuda.set_allocator(None)), so every array is a cudaMalloc of CuPy's dynamic libcudart.
Prints RESULT (the same with and without cudasnap) and CS_ALLOCS (cudasnap's
allocation.all.allocated, -1 without cudasnap). Exits 3 (skip) when cupy cannot be imported or
sees no device."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gc_cudasnap  # noqa: E402

try:
    import cupy
    cupy.cuda.runtime.getDeviceCount()
except Exception as e:
    print("SKIP cupy: %s" % e)
    sys.exit(3)

cupy.cuda.set_allocator(None)
cupy.cuda.set_pinned_memory_allocator(None)
a = cupy.arange(1 << 20, dtype=cupy.float64) / 7.0
b = cupy.sqrt(a) * 3.0
c = (a.reshape(1024, 1024) @ b.reshape(1024, 1024)).sum()
print("RESULT %s %s" % (float(b.sum()).hex(), float(c).hex()))
s = gc_cudasnap.memory_stats(0)
print("CS_ALLOCS %d" % (s["allocation.all.allocated"] if s else -1))
