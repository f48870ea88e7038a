# SPDX-License-Identifier: Apache-2.0
"""cudasnap from Python: torch.cuda.memory's names over the profiler the program runs under.

Start the program under cudasnap (`cudasnap run -- python train.py`, or with
LD_PRELOAD=/path/to/libcudasnap.so); then

    import cudasnap
    print(cudasnap.max_memory_allocated())      # bytes, as torch.cuda.max_memory_allocated()
    with cudasnap.phase("forward"):             # a phase in snapshots and reports
        ...
    cudasnap.dump_snapshot("step.pickle")       # a snapshot now
    cudasnap.allocator_frame(cuda_alloc)        # sites are cuda_alloc's callers (or @decorate it)
    snap = cudasnap.load("step.pickle")         # any snapshot file as dicts and lists

Without cudasnap in the process every call that asks the profiler raises NotProfiledError, which
says how to start the program; load() needs no profiler. See docs/python.md."""

from ._library import CudasnapError, NotProfiledError, is_available
from .frames import allocator_frame
from .memory import (
    dump_snapshot,
    empty_cache,
    max_memory_allocated,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_reserved,
    memory_stats,
    memory_summary,
    record_history,
    reset_accumulated_memory_stats,
    reset_peak_memory_stats,
)
from .phases import phase
from .snapshot import load

__version__ = "0.1.0"

__all__ = [
    "CudasnapError",
    "NotProfiledError",
    "allocator_frame",
    "dump_snapshot",
    "empty_cache",
    "is_available",
    "load",
    "max_memory_allocated",
    "max_memory_reserved",
    "mem_get_info",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "memory_summary",
    "phase",
    "record_history",
    "reset_accumulated_memory_stats",
    "reset_peak_memory_stats",
]
