# SPDX-License-Identifier: Apache-2.0
"""Check 11 of scripts/gpu-check.sh (issue 29): a program that allocates in a loop. CuPy with its
memory pool turned off (cupy.cuda.set_allocator(None)), so that every array is a cudaMalloc and
every release a cudaFree: what cudasnap's cache serves against the real driver's. Prints
  SECONDS <wall time of the loop>
  CHECKSUM <sum over the loop's results, as a float hex>   (the same with and without cudasnap)
Exit 3 with a reason when CuPy cannot run."""
import os
import sys
import time

try:
    import cupy
    cupy.cuda.runtime.getDeviceCount()
except Exception as e:  # pragma: no cover - the machine decides
    print("cupy cannot run: %s" % e)
    sys.exit(3)

cupy.cuda.set_allocator(None)
rounds = int(os.environ.get("OVERHEAD_ROUNDS", "2000"))
sizes = [1 << 10, 1 << 16, 1 << 20, 3 << 20, 1 << 22]
total = 0.0
cupy.cuda.Device(0).synchronize()
t0 = time.perf_counter()
for i in range(rounds):
    n = sizes[i % len(sizes)] // 4
    a = cupy.arange(n, dtype=cupy.float32)
    b = a * 0.5 + float(i % 7)
    total += float(b[n // 2])
    del a, b
cupy.cuda.Device(0).synchronize()
print("SECONDS %.6f" % (time.perf_counter() - t0))
print("CHECKSUM %s" % float(total).hex())
