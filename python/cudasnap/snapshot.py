# SPDX-License-Identifier: Apache-2.0
"""Reading snapshot files: cudasnap.load(path) gives what pickle.load gives for PyTorch's own
snapshot file (dicts, lists, tuples, strings, numbers, booleans, None), whatever the format:
pickle (PyTorch's, or cudasnap's .pickle) or JSON (cudasnap's default). Needs no profiler."""

import io
import json
import os
import pickle


class _SnapshotUnpickler(pickle.Unpickler):
    """A snapshot holds only Python's built-in values. A pickle that names anything else (a class,
    a function: the way a pickle runs code) is refused, so load() is safe on files from others."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(
            "cudasnap.load: the pickle refers to %s.%s; a memory snapshot holds only dicts, lists, "
            "tuples, strings, numbers, booleans and None, so it is not read" % (module, name))

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("cudasnap.load: the pickle refers to a persistent object; not a memory snapshot")


def _read(stream, name):
    head = stream.read(1)
    if head == b"\x80":  # PROTO: every pickle of protocol 2 or later starts so
        if stream.seekable():
            stream.seek(-1, io.SEEK_CUR)
            return _SnapshotUnpickler(stream).load()
        return _SnapshotUnpickler(io.BufferedReader(_Prefixed(head, stream), 1 << 20)).load()
    text = head + stream.read()
    if not text.strip():
        raise ValueError("cudasnap.load: %s is empty" % name)
    try:
        return json.loads(text)
    except ValueError as err:
        raise ValueError("cudasnap.load: %s is neither a pickle nor JSON: %s" % (name, err)) from None


class _Prefixed(io.RawIOBase):
    """The stream with the byte already read put back in front (for streams that cannot seek)."""

    def __init__(self, head, stream):
        self._head, self._stream = head, stream

    def readable(self):
        return True

    def readinto(self, buf):
        if self._head:
            n = min(len(buf), len(self._head))
            buf[:n], self._head = self._head[:n], self._head[n:]
            return n
        data = self._stream.read(len(buf))
        buf[:len(data)] = data
        return len(data)


def load(path):
    """The snapshot in `path` (a file name, or a binary file object) as Python objects: a dict
    with "segments", "device_traces" and, in cudasnap's files, "external_annotations" and
    "cudasnap". JSON has no tuples, so where a pickle holds a tuple (segment_pool_id) the JSON
    form of the same snapshot holds a list; everything else is equal."""
    if hasattr(path, "read"):
        return _read(path, getattr(path, "name", "the file"))
    with open(os.fspath(path), "rb") as stream:
        return _read(stream, os.fsdecode(os.fspath(path)))
