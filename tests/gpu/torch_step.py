# SPDX-License-Identifier: Apache-2.0
"""Check 4 of scripts/gpu-check.sh: a small, seeded, deterministic PyTorch training step, run with
and without cudasnap and under each PyTorch allocator setting (the script sets the environment).

Prints LOSS <float.hex of each step's loss> (must be identical in every run: addresses must not
change results), and writes a JSON file (argv[1]) with what the script compares:
  torch_base/torch_after         torch.cuda.memory_stats() at the start and end of the measured
                                 step (the third; stats reset just before it)
  cudasnap_base/cudasnap_after   the same from cudasnap's API, when preloaded
  torch_reserved, cudasnap_allocated  at the end, both allocators' view of held memory
With GC_TRAIN_SECONDS set (check 12: the live view while it trains), it then prints PID,
TOTAL_BYTES (the device's, from the driver) and READY, flushed, and goes on training until the file
GC_TRAIN_STOP exists (the script has read the live view) or that many seconds pass, before printing
LOSS (the first three steps' losses, as without it).
"""
import json
import os
import sys

# before CUDA initializes: cuBLAS's deterministic workspace (PyTorch's reproducibility notes)
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gc_cudasnap  # noqa: E402

torch.manual_seed(0)
torch.use_deterministic_algorithms(True)
torch.backends.cudnn.deterministic = True
torch.backends.cudnn.benchmark = False
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = torch.device("cuda", 0)

# conv (cuDNN) + MLP (cuBLAS), sizes that use the small and the large pool
model = torch.nn.Sequential(
    torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(),
    torch.nn.Linear(32 * 32 * 32, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.randn(64, 3, 32, 32, device=dev)
y = torch.randint(0, 10, (64,), device=dev)


def step():
    opt.zero_grad(set_to_none=True)
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss.item()  # synchronizes


losses = [step(), step()]
torch.cuda.synchronize()
torch.cuda.reset_peak_memory_stats(dev)
torch.cuda.reset_accumulated_memory_stats(dev)
if gc_cudasnap.preloaded():
    gc_cudasnap.call("cudasnap_reset_peak_memory_stats", 0)
    gc_cudasnap.call("cudasnap_reset_accumulated_memory_stats", 0)
out = {"torch_base": torch.cuda.memory_stats(dev), "cudasnap_base": gc_cudasnap.memory_stats(0)}
losses.append(step())
torch.cuda.synchronize()
out.update(torch_after=torch.cuda.memory_stats(dev), cudasnap_after=gc_cudasnap.memory_stats(0),
           torch_reserved=torch.cuda.memory_reserved(dev),
           cudasnap_allocated=gc_cudasnap.call("cudasnap_memory_allocated", 0),
           losses=[v.hex() for v in losses])
with open(sys.argv[1], "w") as f:
    json.dump(out, f, indent=1, sort_keys=True)
train_seconds = float(os.environ.get("GC_TRAIN_SECONDS", "0"))
if train_seconds > 0:
    import time
    print("PID %d\nTOTAL_BYTES %d\nREADY 1" % (os.getpid(), torch.cuda.mem_get_info(dev)[1]), flush=True)
    end = time.monotonic() + train_seconds
    stop = os.environ.get("GC_TRAIN_STOP", "")
    while time.monotonic() < end and not (stop and os.path.exists(stop)):
        step()
print("LOSS " + " ".join(v.hex() for v in losses))
