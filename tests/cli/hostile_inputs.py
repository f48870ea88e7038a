#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes small snapshot files built to take quadratic time in a reader (issue 33 item 4).

    hostile_inputs.py OUT_DIR [SCALE]

SCALE (default 1) multiplies every count below: the fuzz harness's test runs them at 0.1.

- memo_open_lists.pickle (300 KB): 150,000 empty lists, each memoized while it is still open,
  then closed all at once by LIST. A reader that scans its open memo entries at every put and
  every close does 10^10 steps here.
- colliding_strings.json (1.1 MB): 60,000 distinct 16-byte strings whose FNV-1a-over-words hash
  (the model's string hash before it was keyed) is the same 64 bits: all in one slot of the
  string table, every insertion probing past all the others.
- colliding_lists.json (2.3 MB): 60,000 distinct lists [a, b] whose multiply-xor hash over the
  container's words (the model's container hash before it was keyed) is the same 64 bits.

Every file reads in well under a second once the reader is linear; the ctest that runs them
(tests/cli/CMakeLists.txt) fails on its TIMEOUT otherwise.
"""
import os
import struct
import sys

M64 = (1 << 64) - 1


def memo_open_lists(n):
    out = bytearray(b"\x80\x04(")  # PROTO 4, MARK
    out += b"]\x94" * n  # EMPTY_LIST, MEMOIZE
    out += b"l."  # LIST, STOP
    return bytes(out)


def colliding_strings(n):
    """16-byte strings s = w0 w1 with (h1 ^ w1) fixed, h1 = FNV step over w0: the hash before the
    key was h3 = ((h1 ^ w1) * P) * P, the same for all."""
    prime, basis = 0x100000001B3, 0xCBF29CE484222325
    target = 0x0123456789ABCDEF
    h0 = basis ^ 16
    strings, k = [], 0
    bad = {0x22, 0x5C}
    while len(strings) < n:
        w0 = bytes(0x61 + (k // 26**i) % 26 for i in range(8))  # a..z, little-endian counter
        k += 1
        h1 = ((h0 ^ int.from_bytes(w0, "little")) * prime) & M64
        w1 = (h1 ^ target).to_bytes(8, "little")
        if any(c < 0x20 or c in bad for c in w1):
            continue
        strings.append(w0 + w1)
    return b'{"colliding":[' + b",".join(b'"' + s + b'"' for s in strings) + b"]}"


def colliding_lists(n):
    """Lists [a, b] of small integers (value words x << 3 | 1) with the same multiply-xor hash:
    h = (h ^ w) * M over the header word, then a's word, then b's; b's word is chosen to make
    h ^ b's word a constant whose low 3 bits keep b's tag."""
    mult, seed = 0xFF51AFD7ED558CCD, 0x9E3779B97F4A7C15
    header = 2 | 1 << 32 | 5 << 48  # two items, depth 1, a list
    hh = ((seed ^ header) * mult) & M64
    items = []
    target = None
    for a in range(1, n + 1):
        wa = (a << 3) | 1
        h2 = ((hh ^ wa) * mult) & M64
        if target is None:
            target = (0x5A5A5A5A5A5A5A58 & ~7) | ((h2 ^ 1) & 7)
        wb = h2 ^ target
        assert wb & 7 == 1
        b = wb >> 3
        if b >= 1 << 60:
            b -= 1 << 61  # the 61-bit signed value the word holds
        items.append(b"[%d,%d]" % (a, b))
    return b'{"colliding":[' + b",".join(items) + b"]}"


def main():
    out = sys.argv[1]
    scale = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    os.makedirs(out, exist_ok=True)
    for name, data in (
        ("memo_open_lists.pickle", memo_open_lists(int(150_000 * scale))),
        ("colliding_strings.json", colliding_strings(int(60_000 * scale))),
        ("colliding_lists.json", colliding_lists(int(60_000 * scale))),
    ):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
