# SPDX-License-Identifier: Apache-2.0
"""Allocator frames from Python: the program's own allocation helpers, named part of the allocator
so that a site is the caller of the helper, not the helper (CUDASNAP_ALLOCATOR_FRAMES from inside
the program; docs/python.md).

    @cudasnap.allocator_frame
    def cuda_alloc(nbytes): ...

    cudasnap.allocator_frame("MemoryPool.*")      # a glob over function names
"""

import ctypes

from ._library import function, is_available

_GLOB_SPECIAL = "*?[\\"


def _escaped(name):
    """A glob that matches `name` alone."""
    return "".join("\\" + c if c in _GLOB_SPECIAL else c for c in name)


def _code_name(func):
    """The name cudasnap's stacks give a frame of func: its code's qualified name (Python 3.11
    and later: "Pool.alloc"), else its name ("alloc")."""
    target = getattr(func, "__func__", func)  # a bound method, staticmethod or classmethod
    code = getattr(target, "__code__", None)
    if code is None:
        raise TypeError("cudasnap.allocator_frame: %r is no Python function (it has no code); name a C or "
                        "C++ function by a glob string, such as cudasnap.allocator_frame('MyPool::*')" % (func,))
    return getattr(code, "co_qualname", None) or code.co_name


def allocator_frame(what):
    """Name a function part of the program's allocator: every stack's site is then the first frame
    outside such functions, in snapshots, `cudasnap summary`, the report, pprof and `cudasnap top`.

    `what` is a Python function (used as a decorator, it is returned unchanged) or a glob over
    function names as frames show them: Python's qualified names ("Pool.alloc"; "alloc" before
    Python 3.11), C names, C++ names ("MyPool::*"); `*`, `?`, `[...]` as in the shell. Returns
    `what`. Does nothing when the program does not run under cudasnap, so that a decorated
    program runs the same without it. Raises ValueError for a glob cudasnap does not take (the
    message says why), TypeError for anything else."""
    if isinstance(what, str):
        glob = what
    elif callable(what):
        glob = _escaped(_code_name(what))
    else:
        raise TypeError("cudasnap.allocator_frame takes a function or a glob string, not %r" % (what,))
    if "\0" in glob:
        raise ValueError("cudasnap.allocator_frame: %r holds a NUL character" % (glob,))
    if not is_available():
        return what
    why = ctypes.create_string_buffer(256)
    if function("cudasnap_allocator_frame")(glob.encode("utf-8"), why, len(why)) != 0:
        raise ValueError("cudasnap.allocator_frame: %r %s" % (glob, why.value.decode("utf-8", "replace")))
    return what
