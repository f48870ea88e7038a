# SPDX-License-Identifier: Apache-2.0
"""Check 5 of scripts/gpu-check.sh: JAX with XLA_PYTHON_CLIENT_ALLOCATOR=platform (set by the
script), so XLA allocates each buffer with cuMemAlloc (through libcuda it dlopen()s) instead of
its own BFC pool. Prints RESULT (a reduction, the same with and without cudasnap) and CS_ALLOCS
(cudasnap's allocation.all.allocated, -1 without cudasnap). Exits 3 (skip) when jax or its GPU
backend is missing."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gc_cudasnap  # noqa: E402

try:
    import jax
    import jax.numpy as jnp
    gpus = jax.devices("gpu")
except Exception as e:  # ImportError, or RuntimeError without a CUDA backend
    print("SKIP jax: %s" % e)
    sys.exit(3)

x = jax.device_put(jnp.arange(1 << 20, dtype=jnp.float32) / 1024.0, gpus[0])
y = jnp.sin(x) @ jnp.ones((1 << 20,), dtype=jnp.float32)
z = jnp.dot(x.reshape(1024, 1024), x.reshape(1024, 1024)).sum()
print("RESULT %s %s" % (float(y).hex(), float(z).hex()))
s = gc_cudasnap.memory_stats(0)
print("CS_ALLOCS %d" % (s["allocation.all.allocated"] if s else -1))
