# SPDX-License-Identifier: Apache-2.0
"""Check 12 of scripts/gpu-check.sh (issue 37, item 3): a real out-of-memory error in PyTorch. With
PyTorch's own caching allocator (default settings), tensors of CHUNK bytes (argv[1], default
1 GiB: a multiple of 2 MiB over 10 MiB, so PyTorch asks cudaMalloc for exactly that) are allocated
and kept until torch raises torch.OutOfMemoryError. Prints
  ALLOCS <tensors that were allocated>
  ASKED_BYTES <CHUNK>
  TORCH_MESSAGE <PyTorch's own message, on one line>
then frees everything and exits 0. Exit 1 if no error came within 4096 tensors, 3 (skip) when torch
cannot use CUDA. Under cudasnap, cudasnap's cache serves PyTorch's cudaMalloc calls and writes an
OOM snapshot when the driver refuses; the script compares its answer with TORCH_MESSAGE."""
import sys

from torch_cuda import torch_with_cuda  # noqa: E402

torch = torch_with_cuda()

chunk = int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 30
dev = torch.device("cuda", 0)
held = []
message = None
try:
    while len(held) < 4096:
        held.append(torch.empty(chunk, dtype=torch.uint8, device=dev))
except torch.OutOfMemoryError as e:
    message = " ".join(str(e).split())
allocs = len(held)
del held
torch.cuda.empty_cache()
print("ALLOCS %d" % allocs)
print("ASKED_BYTES %d" % chunk)
if message is None:
    print("no out-of-memory error after %d tensors of %d bytes" % (allocs, chunk), file=sys.stderr)
    sys.exit(1)
print("TORCH_MESSAGE " + message)
