# SPDX-License-Identifier: Apache-2.0
"""cudasnap's API (include/cudasnap.h) from Python through ctypes, for the Python programs of
tests/gpu. The preloaded library's symbols are global, so ctypes.CDLL(None) finds them; without
the preload every function here returns None."""
import ctypes

_lib = ctypes.CDLL(None)


class _Stat(ctypes.Structure):
    _fields_ = [("key", ctypes.c_char_p), ("value", ctypes.c_int64)]


def preloaded():
    return hasattr(_lib, "cudasnap_memory_stats")


def memory_stats(device=0):
    """cudasnap_memory_stats(device) as a dict, like torch.cuda.memory_stats(); None without cudasnap."""
    if not preloaded():
        return None
    f = _lib.cudasnap_memory_stats
    f.restype = ctypes.c_int
    f.argtypes = [ctypes.c_int, ctypes.POINTER(_Stat), ctypes.c_size_t]
    n = f(device, None, 0)
    out = (_Stat * n)()
    f(device, out, n)
    return {s.key.decode(): s.value for s in out}


def call(name, *args):
    """A cudasnap function taking ints: cudasnap_memory_allocated, cudasnap_reset_peak_memory_stats..."""
    if not preloaded():
        return None
    f = getattr(_lib, name)
    f.restype = ctypes.c_int64
    f.argtypes = [ctypes.c_int] * len(args)
    return f(*args)
