# SPDX-License-Identifier: Apache-2.0
"""torch.cuda.memory's functions, answered by the cudasnap the program runs under.

Names, arguments and results are PyTorch's, so code written for torch.cuda reads the same; the
numbers are those of cudasnap's cache, which serves every device allocation of the program
(docs/python.md)."""

import collections
import ctypes
import os

from ._library import CudasnapError, Stat, function


_C_INT_MAX = 2 ** 31 - 1  # the C API's device is an int: ctypes would wrap a larger ordinal silently


def _device_index(device):
    """A device as torch.cuda takes one -> the C API's argument: None, "cuda" or a torch.device
    without an index -> -1 (the calling thread's current device); an int, "cuda:N" or a
    torch.device("cuda", N) -> N, refused (ValueError) below 0 or above C's int."""
    wrong = "cudasnap: device must be None, an ordinal, 'cuda', 'cuda:N' or a torch.device, not %r" % (device,)
    if device is None:
        return -1
    if isinstance(device, bool):
        raise ValueError(wrong)
    if isinstance(device, int):
        if device < 0 or device > _C_INT_MAX:
            raise ValueError("cudasnap: invalid device ordinal %d" % device)
        return device
    if isinstance(device, str):
        kind, sep, number = device.strip().partition(":")
        if kind != "cuda" or (sep and not (number.isascii() and number.isdigit())):
            raise ValueError(wrong)
        return _device_index(int(number)) if sep else -1
    if hasattr(device, "type") and hasattr(device, "index"):  # torch.device and its likes
        if device.type != "cuda":
            raise ValueError(wrong)
        return -1 if device.index is None else _device_index(int(device.index))
    raise ValueError(wrong)


_device_count_known = None


def _device_count():
    """The number of devices the program's CUDA driver sees (cuDeviceGetCount, which honours
    CUDA_VISIBLE_DEVICES), or None while it cannot say: the driver is asked only where the process
    has loaded it already (RTLD_NOLOAD: never loaded here) and once the program initialized it."""
    global _device_count_known
    if _device_count_known is None:
        try:
            fn = ctypes.CDLL("libcuda.so.1", mode=os.RTLD_NOLOAD | os.RTLD_LAZY).cuDeviceGetCount
        except (OSError, AttributeError):
            return None
        fn.restype, fn.argtypes = ctypes.c_int, [ctypes.POINTER(ctypes.c_int)]
        count = ctypes.c_int()
        if fn(ctypes.byref(count)) != 0:  # CUDA_ERROR_NOT_INITIALIZED before the program's cuInit
            return None
        _device_count_known = count.value  # fixed for the process's life
    return _device_count_known


def _checked_device(device):
    """The C argument for `device`, refused (ValueError) beyond the devices the program sees (as
    torch.cuda refuses it), and where the library refuses it (its device limit)."""
    index = _device_index(device)
    count = _device_count() if index >= 0 else None
    if count is not None and index >= count:
        raise ValueError("cudasnap: invalid device ordinal %d: the program sees %d CUDA device%s"
                         % (index, count, "" if count == 1 else "s"))
    if function("cudasnap_memory_stats")(index, None, 0) < 0:
        raise ValueError("cudasnap: invalid device %r (cudasnap profiles ordinals below its device limit)" % (device,))
    return index


def memory_stats(device=None):
    """torch.cuda.memory_stats(device): the allocator's statistics as an OrderedDict sorted by
    key, with PyTorch's keys ("allocated_bytes.all.current", ...). A device the program has not
    allocated on yet reports zeros."""
    fn = function("cudasnap_memory_stats")
    index = _checked_device(device)
    while True:
        count = fn(index, None, 0)
        buf = (Stat * count)()
        got = fn(index, buf, count)
        if got == count:
            return collections.OrderedDict(sorted((s.key.decode(), int(s.value)) for s in buf))


def memory_summary(device=None, abbreviated=False):
    """torch.cuda.memory_summary(device, abbreviated): the same table, as a string."""
    fn = function("cudasnap_memory_summary")
    index = _checked_device(device)
    size = fn(index, 1 if abbreviated else 0, None, 0) + 1
    while True:  # again if the table grew in between (another thread allocated)
        buf = ctypes.create_string_buffer(size)
        need = fn(index, 1 if abbreviated else 0, buf, size)
        if need < size:
            return buf.value.decode("utf-8", "replace")
        size = need + 1


def memory_allocated(device=None):
    """torch.cuda.memory_allocated(device): bytes held by the program's live blocks."""
    return int(function("cudasnap_memory_allocated")(_checked_device(device)))


def max_memory_allocated(device=None):
    """torch.cuda.max_memory_allocated(device): the peak of memory_allocated since the start or
    the last reset_peak_memory_stats."""
    return int(function("cudasnap_max_memory_allocated")(_checked_device(device)))


def memory_reserved(device=None):
    """torch.cuda.memory_reserved(device): device bytes the cache holds, blocks and free space."""
    return int(function("cudasnap_memory_reserved")(_checked_device(device)))


def max_memory_reserved(device=None):
    """torch.cuda.max_memory_reserved(device): the peak of memory_reserved."""
    return int(function("cudasnap_max_memory_reserved")(_checked_device(device)))


def reset_peak_memory_stats(device=None):
    """torch.cuda.reset_peak_memory_stats(device): every peak becomes its current value."""
    function("cudasnap_reset_peak_memory_stats")(_checked_device(device))


def reset_accumulated_memory_stats(device=None):
    """torch.cuda.reset_accumulated_memory_stats(device): the allocated/freed totals and the num_*
    counters become 0."""
    function("cudasnap_reset_accumulated_memory_stats")(_checked_device(device))


def empty_cache():
    """torch.cuda.empty_cache(): return every cached segment without a live block to the driver,
    on every device (as PyTorch does)."""
    fn = function("cudasnap_empty_cache")
    stats = function("cudasnap_memory_stats")
    index = 0
    while stats(index, None, 0) >= 0:  # every ordinal the library takes
        status = fn(index)
        if status != 0:
            raise CudasnapError("cudasnap: empty_cache: the driver answered %d on device %d" % (status, index))
        index += 1


def mem_get_info(device=None):
    """torch.cuda.mem_get_info(device): (free, total) bytes of the device, as the program's own
    cudaMemGetInfo sees them (memory cudasnap caches counts as free unless CUDASNAP_MEMINFO=raw)."""
    index = _checked_device(device)
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    if function("cudasnap_get_memory_info")(index, ctypes.byref(free), ctypes.byref(total)) != 0:
        raise CudasnapError("cudasnap: mem_get_info: the program has no CUDA context on device %s yet"
                            % ("current" if index < 0 else index))
    return free.value, total.value


def record_history(enabled=True):
    """Switch the event history on or off, as torch.cuda.memory._record_memory_history(enabled)
    does. PyTorch's values are taken: True and "all" switch it on; False and None switch it off
    and forget the events recorded so far. "state" (PyTorch: segments and blocks, no events) is
    off too, since cudasnap always keeps segments, blocks and their stacks."""
    if enabled in (True, "all"):
        on = 1
    elif enabled in (False, None, "state"):
        on = 0
    else:
        raise ValueError("cudasnap: record_history(enabled): expected True, False, None, 'all' or 'state', got %r"
                         % (enabled,))
    function("cudasnap_record_history")(on)


def dump_snapshot(path=None):
    """torch.cuda.memory._dump_snapshot(path): write a snapshot now and return the path written.
    The extension picks the format (.pickle or .pkl: pickle, else JSON) unless CUDASNAP_FORMAT is
    set; an existing file is never replaced ("-1" is added to the name instead); path None names
    it from CUDASNAP_OUTPUT. Raises CudasnapError when no file was written (nothing allocated
    yet, or the file could not be written: the reason is also on stderr), and ValueError for a
    path holding a NUL byte, as open() does."""
    name = None if path is None else os.fsencode(path)
    if name is not None and b"\0" in name:  # C would cut the name there, and write another file
        raise ValueError("cudasnap: dump_snapshot: embedded null byte in path %r" % (path,))
    fn = function("cudasnap_dump_snapshot")
    buf = ctypes.create_string_buffer(4096)
    length = fn(name, buf, len(buf))
    if length < 0:
        raise CudasnapError("cudasnap: no snapshot written%s (the reason is on stderr)"
                            % ("" if path is None else " to %s" % os.fsdecode(path)))
    if length >= len(buf):
        raise CudasnapError("cudasnap: a snapshot was written, but its name is longer than %d bytes" % len(buf))
    if path is not None and isinstance(os.fspath(path), bytes):
        return buf.value  # bytes in, bytes out, as os functions answer
    return os.fsdecode(buf.value)
