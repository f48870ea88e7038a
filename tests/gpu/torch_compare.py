# SPDX-License-Identifier: Apache-2.0
"""Check 4 of scripts/gpu-check.sh: compare the statistics of two torch_step.py runs.

  torch_compare.py stats TORCH_RUN.json CUDASNAP_RUN.json
      TORCH_RUN: PyTorch's caching allocator, no cudasnap. CUDASNAP_RUN: PYTORCH_NO_CUDA_MEMORY_CACHING=1
      under cudasnap with CUDASNAP_ALLOC_CONF=split_large:True, so every tensor allocation reaches
      cudasnap as the same request PyTorch's allocator got, and cudasnap places it by PyTorch's
      rules (512 B rounding, small pool <= 1 MiB in 2 MiB segments, PyTorch's large pool).
      Compared, over the measured step only (both sides reset just before it):
        {allocation,allocated_bytes,requested_bytes,active,active_bytes}.{all,small_pool,large_pool}
          .{allocated,freed}  (what the step asked for and gave back)
        the change of .current and the rise of .peak above the start, for the same stats on .all
        num_alloc_retries, num_ooms
      Not compared: reserved_bytes, segment, inactive_split*, num_device_alloc/free,
      num_sync_all_streams, oversize_*: they depend on what the cache held before the step, and
      cudasnap's cache also holds what cuBLAS and cuDNN allocate with cudaMalloc themselves
      (PyTorch never sees those), which changes which cached blocks fit.
  torch_compare.py held RUN.json
      PyTorch's allocator under cudasnap: each of PyTorch's segments is one cudaMalloc, so
      cudasnap's memory_allocated must be at least torch.cuda.memory_reserved() (and positive).
Prints one line per difference and a verdict; exits 1 on any difference."""
import json
import sys


def load(p):
    with open(p) as f:
        return json.load(f)


def stats(torch_run, cs_run):
    t, c = load(torch_run), load(cs_run)
    if not c.get("cudasnap_after"):
        print("no cudasnap statistics in %s: was cudasnap preloaded?" % cs_run)
        return 1
    keys = []
    for stat in ("allocation", "allocated_bytes", "requested_bytes", "active", "active_bytes"):
        for pool in ("all", "small_pool", "large_pool"):
            keys += ["%s.%s.allocated" % (stat, pool), "%s.%s.freed" % (stat, pool)]
    keys += ["num_alloc_retries", "num_ooms"]
    bad = 0

    def same(what, a, b):
        nonlocal bad
        if a != b:
            bad += 1
            print("differs: %s: torch %s, cudasnap %s" % (what, a, b))

    for k in keys:
        same(k, t["torch_after"].get(k), c["cudasnap_after"].get(k))
    for stat in ("allocation", "allocated_bytes", "requested_bytes", "active_bytes"):
        cur, peak = "%s.all.current" % stat, "%s.all.peak" % stat
        same(cur + " change", t["torch_after"][cur] - t["torch_base"][cur],
             c["cudasnap_after"][cur] - c["cudasnap_base"][cur])
        same(peak + " above start", t["torch_after"][peak] - t["torch_base"][cur],
             c["cudasnap_after"][peak] - c["cudasnap_base"][cur])
    n = len(keys) + 8
    print("%d of %d compared values agree; step allocations: torch %s, cudasnap %s" % (
        n - bad, n, t["torch_after"].get("allocation.all.allocated"), c["cudasnap_after"].get("allocation.all.allocated")))
    return 1 if bad else 0


def held(run):
    r = load(run)
    ok = r.get("cudasnap_allocated") is not None and r["torch_reserved"] > 0 and r["cudasnap_allocated"] >= r["torch_reserved"]
    print("torch.cuda.memory_reserved %s, cudasnap_memory_allocated %s" % (r["torch_reserved"], r.get("cudasnap_allocated")))
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "stats":
        sys.exit(stats(sys.argv[2], sys.argv[3]))
    if len(sys.argv) == 3 and sys.argv[1] == "held":
        sys.exit(held(sys.argv[2]))
    print(__doc__, file=sys.stderr)
    sys.exit(2)
