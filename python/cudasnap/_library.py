# SPDX-License-Identifier: Apache-2.0
"""The libcudasnap.so this process was started with, as ctypes functions.

The package never loads the library itself: a second copy would profile nothing (the program's
allocations go through the preloaded one) and would start a second set of hooks behind the
program's back. It only looks the API up in the process's global scope, where a preloaded library
(LD_PRELOAD, or `cudasnap run`, which sets it) puts its symbols; ctypes.CDLL(None) is that scope.
"""

import ctypes
import os
import shlex
import shutil
import sys
import threading


class CudasnapError(RuntimeError):
    """A call to cudasnap failed; the message says why."""


class NotProfiledError(CudasnapError):
    """The program does not run under cudasnap, so there is no profiler to ask."""


class Stat(ctypes.Structure):
    """cudasnap_stat_t of include/cudasnap.h."""

    _fields_ = [("key", ctypes.c_char_p), ("value", ctypes.c_int64)]


# name: (restype, argtypes), as include/cudasnap.h declares them
_SIGNATURES = {
    "cudasnap_memory_stats": (ctypes.c_int, [ctypes.c_int, ctypes.POINTER(Stat), ctypes.c_size_t]),
    "cudasnap_memory_allocated": (ctypes.c_int64, [ctypes.c_int]),
    "cudasnap_max_memory_allocated": (ctypes.c_int64, [ctypes.c_int]),
    "cudasnap_memory_reserved": (ctypes.c_int64, [ctypes.c_int]),
    "cudasnap_max_memory_reserved": (ctypes.c_int64, [ctypes.c_int]),
    "cudasnap_reset_peak_memory_stats": (None, [ctypes.c_int]),
    "cudasnap_reset_accumulated_memory_stats": (None, [ctypes.c_int]),
    "cudasnap_empty_cache": (ctypes.c_int, [ctypes.c_int]),
    "cudasnap_get_memory_info": (
        ctypes.c_int, [ctypes.c_int, ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_size_t)]),
    "cudasnap_memory_summary": (ctypes.c_size_t, [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]),
    "cudasnap_record_history": (None, [ctypes.c_int]),
    "cudasnap_dump_snapshot": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]),
    "cudasnap_phase_start": (ctypes.c_uint64, [ctypes.c_char_p]),
    "cudasnap_phase_end": (None, [ctypes.c_uint64]),
    "cudasnap_allocator_frame": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]),
}

_lock = threading.Lock()
_functions = {}
_scope = None  # ctypes.CDLL(None), or False when the API is not in the global scope


def _global_scope():
    global _scope
    if _scope is None:
        try:
            scope = ctypes.CDLL(None)
            scope.cudasnap_memory_stats  # noqa: B018 - the lookup is the test
            _scope = scope
        except (OSError, AttributeError):
            _scope = False
    return _scope


def is_available():
    """True when this process runs under cudasnap (its library is preloaded), as
    torch.cuda.is_available() tells whether there is something to ask."""
    return bool(_global_scope())


def _mapped_library():
    """The path of a libcudasnap.so mapped into this process, or None (from /proc/self/maps)."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                fields = line.split(None, 5)
                if len(fields) == 6 and os.path.basename(fields[5].strip()).startswith("libcudasnap.so"):
                    return fields[5].strip()
    except OSError:
        pass
    return None


def _installed_library():
    """(libcudasnap.so, the cudasnap tool) of the prefix this package was installed into by
    `cmake --install` (PREFIX/lib/pythonX.Y/site-packages/cudasnap), or (None, None)."""
    here = os.path.dirname(os.path.abspath(__file__))
    prefix = os.path.normpath(os.path.join(here, "..", "..", "..", ".."))
    library = os.path.join(prefix, "lib", "libcudasnap.so")
    tool = os.path.join(prefix, "bin", "cudasnap")
    return (library, tool) if os.path.isfile(library) else (None, None)


def _program_command():
    """How this program was started, as a shell command line (best effort)."""
    python = os.path.basename(sys.executable or "python3") or "python3"
    argv = list(getattr(sys, "argv", None) or [])
    if argv and argv[0] and os.path.isfile(argv[0]):
        return " ".join(shlex.quote(a) for a in [python] + argv)
    return python + " your_program.py"


def not_profiled_message():
    library, tool = _installed_library()
    tool = tool if tool and os.access(tool, os.X_OK) else (shutil.which("cudasnap") or "cudasnap")
    library = library or "/path/to/libcudasnap.so"
    command = _program_command()
    mapped = _mapped_library()
    why = ("libcudasnap.so is not preloaded" if not mapped else
           "%s is in the process but was not preloaded, so it profiles nothing" % mapped)
    return ("cudasnap: this program does not run under cudasnap (%s), so there is no profiler to ask. "
            "Start it under cudasnap: `%s run -- %s`, or `LD_PRELOAD=%s %s`; for a notebook, start the "
            "Jupyter server or kernel that way. cudasnap.is_available() tells whether it runs under "
            "cudasnap; cudasnap.load() reads snapshot files without it."
            % (why, tool, command, library, command))


def function(name):
    """The API function `name` of the preloaded library, typed; NotProfiledError without one."""
    fn = _functions.get(name)
    if fn is not None:
        return fn
    scope = _global_scope()
    if not scope:
        raise NotProfiledError(not_profiled_message())
    with _lock:
        try:
            fn = getattr(scope, name)
        except AttributeError:
            raise CudasnapError(
                "cudasnap: the libcudasnap.so this program runs under (%s) has no %s: it is older than "
                "this Python package (%s); install both from one build of cudasnap"
                % (_mapped_library() or "preloaded", name, os.path.dirname(os.path.abspath(__file__)))) from None
        fn.restype, fn.argtypes = _SIGNATURES[name]
        _functions[name] = fn
    return fn
