#!/usr/bin/env python3
"""same_content.py A B [A B ...]

Does each pair of snapshot files (JSON or pickle, told by their first byte as the viewer does) hold
the same content? Pickles are read with an unpickler that refuses every global; tuples compare as
lists, since JSON has only lists. Exits 0 when every pair is equal; otherwise prints the first
difference of each pair that differs and exits 1."""
import io, json, pickle, sys


class NoGlobals(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"global {module}.{name} refused")


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:1] == b"\x80":
        return NoGlobals(io.BytesIO(data)).load()
    return json.loads(data)


def difference(a, b, where="$"):
    if isinstance(a, tuple):
        a = list(a)
    if isinstance(b, tuple):
        b = list(b)
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            return f"{where}: keys {list(a)[:8]} vs {list(b)[:8]}"
        for k in a:
            d = difference(a[k], b[k], f"{where}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{where}: {len(a)} vs {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b)):
            d = difference(x, y, f"{where}[{i}]")
            if d:
                return d
        return None
    # 2 == 2.0 in JSON and JavaScript alike; a bool is not a number here
    if type(a) is bool or type(b) is bool:
        return None if a is b else f"{where}: {a!r} vs {b!r}"
    return None if a == b else f"{where}: {a!r} vs {b!r}"


status = 0
for a, b in zip(sys.argv[1::2], sys.argv[2::2]):
    d = difference(load(a), load(b))
    if d:
        print(f"{a} and {b} differ at {d}")
        status = 1
sys.exit(status)
