# SPDX-License-Identifier: Apache-2.0
"""The start of the tests/gpu PyTorch scripts that scripts/gpu-check.sh may skip: torch with a CUDA
device, or exit 3 (the check's skip) with the reason on stdout. The bundle copies every
tests/gpu/*.py beside the others, so a script imports this from its own folder."""
import sys


def torch_with_cuda():
    """The torch module, once it can use a CUDA device; else exit 3 with the reason."""
    try:
        import torch
    except ImportError as e:  # pragma: no cover - the machine decides
        print("torch cannot be imported: %s" % e)
        sys.exit(3)
    if not torch.cuda.is_available():
        print("torch has no CUDA device")
        sys.exit(3)
    return torch
