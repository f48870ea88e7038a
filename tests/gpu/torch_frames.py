# SPDX-License-Identifier: Apache-2.0
"""Python frames in stacks (scripts/gpu-run.sh): with PYTORCH_NO_CUDA_MEMORY_CACHING=1 every
tensor is a cudaMalloc, so the allocation of `weights` below happens on one known line of this
script, inside one known function. Under cudasnap with Python stacks on, the snapshot must hold that
allocation with a frame whose filename is this file and whose line is that line.

Prints SCRIPT (this file's real path), ALLOC_LINE, ALLOC_FUNCTION, ALLOC_BYTES and RESULT (the same
with and without cudasnap)."""
import inspect
import os

import torch


def build_weights(dev):
    frame = inspect.currentframe()
    line = frame.f_lineno + 1  # the next line allocates
    weights = torch.full((3, 1 << 20), 0.5, dtype=torch.float32, device=dev)  # 12 MiB
    return weights, line


def main():
    dev = torch.device("cuda", 0)
    weights, line = build_weights(dev)
    result = (weights * torch.arange(1 << 20, device=dev, dtype=torch.float32)).sum().item()
    torch.cuda.synchronize()
    print("SCRIPT %s" % os.path.realpath(__file__))
    print("ALLOC_LINE %d" % line)
    print("ALLOC_FUNCTION build_weights")
    print("ALLOC_BYTES %d" % (weights.numel() * weights.element_size()))
    print("RESULT %s" % float(result).hex())


if __name__ == "__main__":
    main()
