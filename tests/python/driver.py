# SPDX-License-Identifier: Apache-2.0
"""For the programs the tests run under cudasnap: device memory through the (fake) driver API by
ctypes, as a CUDA library would allocate it, the C API's own answers, and a way to report back.
Imported by the child processes only (PYTHONPATH has this folder)."""

import ctypes
import json
import sys

_cuda = ctypes.CDLL("libcuda.so.1")
_contexts = {}


def check(status, what):
    if status != 0:
        raise RuntimeError("%s returned %d" % (what, status))


def use_device(ordinal):
    """Make `ordinal`'s primary context current (creating it the first time)."""
    if not _contexts:
        check(_cuda.cuInit(0), "cuInit")
    if ordinal not in _contexts:
        dev = ctypes.c_int()
        check(_cuda.cuDeviceGet(ctypes.byref(dev), ordinal), "cuDeviceGet")
        ctx = ctypes.c_void_p()
        check(_cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
        _contexts[ordinal] = ctx
    check(_cuda.cuCtxSetCurrent(_contexts[ordinal]), "cuCtxSetCurrent")


def alloc(nbytes):
    if not _contexts:
        use_device(0)
    p = ctypes.c_uint64()
    check(_cuda.cuMemAlloc_v2(ctypes.byref(p), ctypes.c_size_t(nbytes)), "cuMemAlloc_v2")
    return p.value


def free(pointer):
    check(_cuda.cuMemFree_v2(ctypes.c_uint64(pointer)), "cuMemFree_v2")


class _Stat(ctypes.Structure):
    _fields_ = [("key", ctypes.c_char_p), ("value", ctypes.c_int64)]


class CApi:
    """The C API of include/cudasnap.h, declared here apart from the package, so the package's
    answers are checked against the library's own."""

    def __init__(self):
        self.lib = ctypes.CDLL(None)
        for name in ("memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved"):
            getattr(self.lib, "cudasnap_" + name).restype = ctypes.c_int64
        self.lib.cudasnap_memory_summary.restype = ctypes.c_size_t
        self.lib.cudasnap_memory_summary.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
        self.lib.cudasnap_phase_start.restype = ctypes.c_uint64
        self.lib.cudasnap_phase_start.argtypes = [ctypes.c_char_p]
        self.lib.cudasnap_phase_end.argtypes = [ctypes.c_uint64]
        self.lib.cudasnap_dump_snapshot.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]

    def stats(self, device):
        n = self.lib.cudasnap_memory_stats(device, None, 0)
        buf = (_Stat * n)()
        self.lib.cudasnap_memory_stats(device, buf, n)
        return {s.key.decode(): s.value for s in buf}

    def value(self, name, device):
        return getattr(self.lib, "cudasnap_" + name)(device)

    def summary(self, device, abbreviated):
        buf = ctypes.create_string_buffer(1 << 16)
        self.lib.cudasnap_memory_summary(device, abbreviated, buf, len(buf))
        return buf.value.decode()

    def mem_info(self, device):
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        rc = self.lib.cudasnap_get_memory_info(device, ctypes.byref(free), ctypes.byref(total))
        return None if rc != 0 else (free.value, total.value)


def report(**values):
    """One line the test reads back: RESULT <json>."""
    sys.stdout.write("RESULT " + json.dumps(values) + "\n")
    sys.stdout.flush()
