# SPDX-License-Identifier: Apache-2.0
"""Phases from Python, without the nvtx package: `with cudasnap.phase("forward"):` or
`@cudasnap.phase("step")`. cudasnap records them as it records NVTX ranges, so snapshots carry
them in `external_annotations` and `cudasnap summary`, `report` and `diff --phase` show them."""

import functools
import inspect
import threading

from ._library import function


class phase:
    """A named phase of the program: a context manager and a decorator.

        with cudasnap.phase("forward"):
            loss = model(batch)

        @cudasnap.phase("optimizer")      # or @cudasnap.phase: the function's qualified name
        def step(): ...

    One object may be entered again while it is open (nested or from other threads); each entry
    is a range of its own. Raises NotProfiledError when entered outside cudasnap."""

    def __new__(cls, name):
        if callable(name) and not isinstance(name, str):  # @cudasnap.phase without a name
            func = name
            label = getattr(func, "__qualname__", None) or getattr(func, "__name__", None) or repr(func)
            return cls(label)._wrap(func)  # a plain function, so methods still bind
        return super().__new__(cls)

    def __init__(self, name):
        self.name = str(name)
        self._encoded = self.name.encode("utf-8", "replace")
        self._open = threading.local()

    def _start(self):
        return function("cudasnap_phase_start")(self._encoded)

    @staticmethod
    def _end(range_id):
        function("cudasnap_phase_end")(range_id)

    def __enter__(self):
        stack = getattr(self._open, "ids", None)
        if stack is None:
            stack = self._open.ids = []
        stack.append(self._start())
        return self

    def __exit__(self, *exc):
        self._end(self._open.ids.pop())
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError("cudasnap.phase(name) decorates a function, not %r" % (func,))
        return self._wrap(func)

    def _wrap(self, func):
        if inspect.iscoroutinefunction(func):
            @functools.wraps(func)
            async def async_wrapper(*args, **kwargs):
                range_id = self._start()
                try:
                    return await func(*args, **kwargs)
                finally:
                    self._end(range_id)
            return async_wrapper

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            range_id = self._start()
            try:
                return func(*args, **kwargs)
            finally:
                self._end(range_id)
        return wrapper

    def __repr__(self):
        return "cudasnap.phase(%r)" % self.name
