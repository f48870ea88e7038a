#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""same_content.py A B [A B ...]

Does each pair of snapshot files (JSON or pickle, told by their first byte as the viewer does) hold
the same content, as the objects Python loads from them? Pickles are read with an unpickler that
refuses every global. Types count: 0 and 0.0 differ (json.loads gives int and float too), and so
do a tuple and a list when both files are pickles (JSON has only lists, so a tuple in a pickle
equals a list in JSON). Exits 0 when every pair is equal; otherwise prints the first difference
of each pair that differs and exits 1."""
import io, json, math, pickle, sys


class NoGlobals(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"global {module}.{name} refused")


def load(path):
    """The object, and whether the file was a pickle."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:1] == b"\x80":
        return NoGlobals(io.BytesIO(data)).load(), True
    return json.loads(data), False


def difference(a, b, tuples, where="$"):
    """tuples: a tuple differs from a list (both sides are pickles)."""
    if tuples and isinstance(a, tuple) != isinstance(b, tuple) and isinstance(a, (list, tuple)):
        return f"{where}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, tuple):
        a = list(a)
    if isinstance(b, tuple):
        b = list(b)
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            return f"{where}: keys {list(a)[:8]} vs {list(b)[:8]}"
        for k in a:
            d = difference(a[k], b[k], tuples, f"{where}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{where}: {len(a)} vs {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b)):
            d = difference(x, y, tuples, f"{where}[{i}]")
            if d:
                return d
        return None
    # int, float and bool are three types to Python (and 0 == 0.0 == False would hide a change)
    if type(a) is not type(b):
        return f"{where}: {a!r} ({type(a).__name__}) vs {b!r} ({type(b).__name__})"
    if isinstance(a, float) and math.copysign(1, a) != math.copysign(1, b):
        return f"{where}: {a!r} vs {b!r}"
    return None if a == b else f"{where}: {a!r} vs {b!r}"



def main():
    status = 0
    for a, b in zip(sys.argv[1::2], sys.argv[2::2]):
        (x, x_pickle), (y, y_pickle) = load(a), load(b)
        d = difference(x, y, x_pickle and y_pickle)
        if d:
            print(f"{a} and {b} differ at {d}")
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
