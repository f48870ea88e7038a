#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""http_clients.py MODE HOST:PORT ...: the clients a hostile or broken scraper is, against
`cudasnap metrics` (live_test.sh, group serve). Each prints what it saw, one line, for the test:

  slow ADDR INTERVAL LIMIT  sends a request one byte every INTERVAL s; prints
                            "closed after S" when the server closed it (S seconds after connecting),
                            or "open after LIMIT" when it still was after LIMIT seconds
  noread ADDR N HOLD        N connections ask for /metrics with a tiny receive buffer and read nothing
                            for HOLD s, then read what comes within 5 s; prints, per connection,
                            "got BYTES of LENGTH eof|open": the server gave up when BYTES < LENGTH
                            and eof (LENGTH: the body's Content-Length, plus its head)
  idle ADDR N               N connections that send nothing, held until stdin ends; prints "open N"
                            once all are connected, then "closed K" at the end: how many of them
                            the server closed meanwhile
"""
import select
import socket
import sys
import time


def connect(addr, rcvbuf=None):
    host, port = addr.rsplit(":", 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.connect((host, int(port)))
    return s


def closed(s, timeout):
    """Did the server close s (EOF or reset) within timeout seconds? Data is read and dropped."""
    end = time.monotonic() + timeout
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return False
        r, _, _ = select.select([s], [], [], left)
        if not r:
            return False
        try:
            if not s.recv(65536):
                return True
        except OSError:
            return True


def slow(addr, interval, limit):
    start = time.monotonic()
    s = connect(addr)
    request = b"GET /metrics HTTP/1.1\r\nHost: cudasnap\r\nUser-Agent: one byte at a time\r\n\r\n"
    for i in range(len(request)):
        if time.monotonic() - start >= limit:
            break
        try:
            s.send(request[i:i + 1])
        except OSError:
            print(f"closed after {time.monotonic() - start:.2f}")
            return
        if closed(s, interval):
            print(f"closed after {time.monotonic() - start:.2f}")
            return
    print(f"open after {limit}")


def noread(addr, n, hold):
    conns = []
    for _ in range(n):
        s = connect(addr, rcvbuf=4096)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: cudasnap\r\n\r\n")
        conns.append(s)
    time.sleep(hold)
    for s in conns:
        got, eof = b"", False
        end = time.monotonic() + 5
        s.setblocking(False)
        while time.monotonic() < end:
            r, _, _ = select.select([s], [], [], end - time.monotonic())
            if not r:
                break
            try:
                chunk = s.recv(1 << 20)
            except OSError:
                eof = True
                break
            if not chunk:
                eof = True
                break
            got += chunk
        head, _, _ = got.partition(b"\r\n\r\n")
        length = None
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":", 1)[1]) + len(head) + 4
        print(f"got {len(got)} of {length} {'eof' if eof else 'open'}")


def idle(addr, n):
    conns = [connect(addr) for _ in range(n)]
    print(f"open {n}", flush=True)
    sys.stdin.read()
    gone = sum(1 for s in conns if closed(s, 0.01))
    print(f"closed {gone}", flush=True)


def main():
    mode, addr = sys.argv[1], sys.argv[2]
    if mode == "slow":
        slow(addr, float(sys.argv[3]), float(sys.argv[4]))
    elif mode == "noread":
        noread(addr, int(sys.argv[3]), float(sys.argv[4]))
    elif mode == "idle":
        idle(addr, int(sys.argv[3]))
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
