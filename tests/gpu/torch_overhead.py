# SPDX-License-Identifier: Apache-2.0
"""Check 11 of scripts/gpu-check.sh (issue 29): the overhead a PyTorch user pays. A small MLP
trained for 200 steps from a fixed seed with PyTorch's own caching allocator (default settings),
timed from the first step to the last synchronize. Prints
  SECONDS <wall time of the 200 steps>
  LOSS <float.hex of the last step's loss>   (the same bit for bit with and without cudasnap)
Exit 3 with a reason when torch cannot use CUDA."""
import os
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
from torch_cuda import torch_with_cuda  # noqa: E402

torch = torch_with_cuda()

torch.manual_seed(0)
torch.use_deterministic_algorithms(True)
torch.backends.cuda.matmul.allow_tf32 = False
dev = torch.device("cuda", 0)
steps = int(os.environ.get("OVERHEAD_STEPS", "200"))
model = torch.nn.Sequential(
    torch.nn.Linear(1024, 4096), torch.nn.GELU(), torch.nn.Linear(4096, 4096), torch.nn.GELU(),
    torch.nn.Linear(4096, 10)).to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
gen = torch.Generator(device=dev).manual_seed(1)
x = torch.randn(512, 1024, device=dev, generator=gen)
y = torch.randint(0, 10, (512,), device=dev, generator=gen)
for _ in range(3):  # warm-up: kernels chosen, caches filled, as a training loop's first steps
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
torch.cuda.synchronize()
t0 = time.perf_counter()
for _ in range(steps):
    loss = torch.nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
torch.cuda.synchronize()
print("SECONDS %.6f" % (time.perf_counter() - t0))
print("LOSS %s" % float(loss.item()).hex())
