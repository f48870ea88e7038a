#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""pickle_check.py SNAPSHOT.pickle SNAPSHOT.json

The pickle uses only opcodes the memory_viz viewer reads (batch sizes are checked by
snapshot_check), and loads (with a restricted unpickler that refuses every global) into the same object as the
JSON, apart from what differs between two dumps of the same state: the `snapshot` trace entries
each dump adds, and the `cudasnap` and `cudasnap_summary` keys (dump number, time)."""
import io, json, pickle, pickletools, sys

ALLOWED = {"PROTO", "FRAME", "STOP", "MARK", "EMPTY_DICT", "EMPTY_LIST", "EMPTY_TUPLE", "SETITEM",
           "SETITEMS", "DICT", "APPEND", "APPENDS", "LIST", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3",
           "BININT", "BININT1", "BININT2", "LONG1", "BINFLOAT", "NONE", "NEWTRUE", "NEWFALSE",
           "SHORT_BINUNICODE", "BINUNICODE", "MEMOIZE", "BINPUT", "LONG_BINPUT", "BINGET", "LONG_BINGET"}


class NoGlobals(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"global {module}.{name} refused")


def normalize(value):
    if isinstance(value, (list, tuple)):
        return [normalize(v) for v in value]
    if isinstance(value, dict):
        return {k: normalize(v) for k, v in value.items()}
    return value


def comparable(snapshot):
    snapshot = normalize(snapshot)
    snapshot.pop("cudasnap", None)
    snapshot.pop("cudasnap_summary", None)
    snapshot["device_traces"] = [[e for e in t if e["action"] != "snapshot"] for t in snapshot["device_traces"]]
    return snapshot


def main():
    data = open(sys.argv[1], "rb").read()
    if data[0] != 0x80 or data[1] not in (2, 3, 4):
        sys.exit(f"{sys.argv[1]}: not a protocol 2-4 pickle")
    for op, _, _ in pickletools.genops(data):
        if op.name not in ALLOWED:
            sys.exit(f"{sys.argv[1]}: opcode {op.name} is not one the viewer reads")
    loaded = NoGlobals(io.BytesIO(data)).load()
    with open(sys.argv[2]) as f:
        reference = json.load(f)
    if comparable(loaded) != comparable(reference):
        sys.exit(f"{sys.argv[1]} and {sys.argv[2]} differ")
    print("pickle ok:", len(data), "bytes")


main()
