#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Python as an independent reader of the emitter's sample (tests/unit/test_emit.c runs this).

usage: emit_roundtrip.py SAMPLE.json SAMPLE.pickle [SAMPLE.pickle ...]

The JSON is read strictly (json.loads refusing NaN/Infinity; compact; one final newline) and each
pickle with an unpickler that refuses every global. Both must equal the value built by expected()
below, which mirrors emit_sample() in test_emit.c (tuples as lists for JSON). pickletools.genops
then checks the pickle against the viewer's opcode subset (snapshot-format.md section 3.3):
PROTO 2..4, only the allowed opcodes (and every one of them but APPEND, so the sample covers each
encoding), the smallest integer, string and memo encodings, at most 1000 items per MARK batch,
and memo entries only for lists that just ended (frame lists, never dicts).

Exit status 0 when everything holds, 1 with the reasons on stderr otherwise.
"""
import io
import json
import pickle
import pickletools
import sys

ALLOWED = {
    "PROTO", "STOP", "MARK", "EMPTY_DICT", "EMPTY_LIST", "EMPTY_TUPLE", "TUPLE1", "TUPLE2",
    "TUPLE3", "TUPLE", "SETITEMS", "APPENDS", "APPEND", "BININT", "BININT1", "BININT2", "LONG1",
    "BINFLOAT", "SHORT_BINUNICODE", "BINUNICODE", "NEWTRUE", "NEWFALSE", "NONE", "BINPUT",
    "LONG_BINPUT", "BINGET", "LONG_BINGET",
}
BATCH = 1000

INVALID_UTF8 = (b"bad \xff|\xc3(|\xe2\x82|\xed\xa0\x80|\xf4\x90\x80\x80|\xc0\xaf|\xe0\x80\xaf|"
                b"\xf0\x9f\x98")


def expected():
    """The value of emit_sample() in test_emit.c; keep the two in step."""
    frames_a = [{"filename": "train.py", "line": 42, "name": "step"},
                {"filename": "libtorch_cuda.so", "line": 0, "name": "??"}]
    frames_b = [{"filename": "model.py", "line": 7, "name": "forward"}]
    traces = []
    for i in range(4):
        traces.append({
            "action": "alloc", "addr": 0x7F0000000000 + i * 512, "size": 512, "stream": 0,
            "time_us": 1700000000000000 + i, "frames": frames_b if i == 2 else frames_a,
        })
    many = []
    for i in range(300):
        many += [[i, "f"], [i, "f"]]
    return {
        "ints": [0, 255, 256, 65535, 65536, 2**31 - 1, 2**31, -1, -2**31, -2**31 - 1,
                 2**39 - 1, 2**39, -2**39, -2**39 - 1, 2**53, 2**55, -2**63, 2**63 - 1],
        "floats": [0.1, 1.5, -2.0, 1e300, 5e-324, -0.0, 0.0, 0.0, 0.0],
        "strings": [
            "", "plain", 'quote" backslash\\ slash/', "\x00\x01\b\t\n\x0b\f\r\x1f\x7f",
            "h\u00e9llo \u20ac \U0001d11e \u65e5\u672c", INVALID_UTF8.decode("utf-8", "replace"),
            "x" * 300 + "\u00e9", "y" * 254 + "\ufffd",
        ],
        'key "quoted"\n': 1,
        "cl\u00e9": 2,
        "bools": [True, False],
        "none": None,
        "pool_id": (0, 7),
        "tuples": [(), ("one",), (1, 2, 3), (1, 2, 3, 4), ("x" * 300, 2)],
        "nested": {"a": {"b": [[], {}, [[1]], {"c": None}]}},
        "traces": traces,
        "many_frames": many,
        "big_list": list(range(2500)),
        "big_dict": {f"k{i}": i for i in range(1001)},
        "empty_dict": {},
        "empty_list": [],
    }


def as_json(value):
    """What JSON makes of a value: tuples become lists."""
    if isinstance(value, (list, tuple)):
        return [as_json(v) for v in value]
    if isinstance(value, dict):
        return {k: as_json(v) for k, v in value.items()}
    return value


class NoGlobals(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"global {module}.{name} refused")


def refuse_constant(name):
    raise ValueError(f"{name} is not JSON")


def check_json(path, errors):
    with open(path, "rb") as f:
        raw = f.read()
    text = raw.decode("utf-8")  # strict: invalid UTF-8 in the file is an error
    if not text.endswith("\n") or text.endswith("\n\n"):
        errors.append(f"{path}: does not end in exactly one newline")
    in_string = escaped = False
    for i, c in enumerate(text[:-1]):
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
            elif ord(c) < 0x20:
                errors.append(f"{path}: raw control character at {i}")
        elif c == '"':
            in_string = True
        elif c in " \t\r\n":
            errors.append(f"{path}: whitespace at {i}: not compact")
            break
    value = json.loads(text, parse_constant=refuse_constant)
    if value != as_json(expected()):
        errors.append(f"{path}: json.loads differs from the expected value")
    return value


def smallest_int_op(v):
    if 0 <= v <= 0xFF:
        return "BININT1"
    if 0 <= v <= 0xFFFF:
        return "BININT2"
    if -2**31 <= v < 2**31:
        return "BININT"
    return "LONG1"


def check_opcodes(path, data, errors):
    ops = list(pickletools.genops(data))
    used = {op.name for op, _, _ in ops}
    if not used <= ALLOWED:
        errors.append(f"{path}: opcodes outside the viewer's subset: {sorted(used - ALLOWED)}")
    if used != ALLOWED - {"APPEND"}:
        errors.append(f"{path}: the sample should use every allowed opcode but APPEND; "
                      f"missing {sorted(ALLOWED - {'APPEND'} - used)}")
    if ops[0][0].name != "PROTO" or not 2 <= ops[0][1] <= 4:
        errors.append(f"{path}: does not start with PROTO 2..4")
    levels = [0]  # objects pushed since each open MARK (levels[0]: outside any MARK)
    for n, (op, arg, pos) in enumerate(ops):
        end = ops[n + 1][2] if n + 1 < len(ops) else len(data)
        if op.name in ("BININT1", "BININT2", "BININT", "LONG1") and op.name != smallest_int_op(arg):
            errors.append(f"{path}@{pos}: {arg} as {op.name}, not {smallest_int_op(arg)}")
        if op.name == "LONG1" and end - pos - 2 != len(pickle.encode_long(arg)):
            errors.append(f"{path}@{pos}: LONG1 {arg} in {end - pos - 2} bytes, not minimal")
        if op.name == "BINUNICODE" and len(arg.encode("utf-8")) < 256:
            errors.append(f"{path}@{pos}: short string as BINUNICODE")
        if op.name in ("LONG_BINPUT", "LONG_BINGET") and arg < 256:
            errors.append(f"{path}@{pos}: {op.name} {arg} fits the short form")
        if op.name in ("BINPUT", "LONG_BINPUT") and ops[n - 1][0].name not in ("APPENDS", "EMPTY_LIST"):
            errors.append(f"{path}@{pos}: memoizes something other than a list that just ended")
        if op.name == "MARK":
            levels.append(0)
            continue
        before, after = op.stack_before, op.stack_after
        if pickletools.markobject in before:
            items = levels.pop()
            limit = {"APPENDS": BATCH, "SETITEMS": 2 * BATCH}.get(op.name)
            if limit is not None and not 0 < items <= limit:
                errors.append(f"{path}@{pos}: {op.name} with {items} stack items (limit {limit})")
            levels[-1] += len(after) - (len(before) - 2)  # the mark and the slice are gone
        else:
            levels[-1] += len(after) - len(before)


def check_sharing(path, value, errors):
    traces = value["traces"]
    if not (traces[0]["frames"] is traces[1]["frames"] is traces[3]["frames"]):
        errors.append(f"{path}: the frame list of traces 0, 1 and 3 is not one shared object")
    if traces[2]["frames"] is traces[0]["frames"]:
        errors.append(f"{path}: different frame lists are shared")
    many = value["many_frames"]
    if not all(many[2 * i] is many[2 * i + 1] for i in range(300)):
        errors.append(f"{path}: many_frames pairs are not shared")
    if len({id(t) for t in traces}) != len(traces):
        errors.append(f"{path}: trace dicts are shared")


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    errors = []
    from_json = check_json(argv[1], errors)
    for path in argv[2:]:
        with open(path, "rb") as f:
            data = f.read()
        value = NoGlobals(io.BytesIO(data)).load()
        if value != expected():
            errors.append(f"{path}: pickle.loads differs from the expected value")
        if as_json(value) != from_json:
            errors.append(f"{path}: the pickle and the JSON hold different values")
        check_opcodes(path, data, errors)
        check_sharing(path, value, errors)
    for e in errors:
        print(f"emit_roundtrip: {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
