#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# A hostile local user of torpord's socket, for the tests: holds HOLD
# connections at once and opens a new one as soon as torpord closes one.
#
#   crowd.py SOCKET HOLD MODE READY STOP REPORT MAX_TURNS
#
# MODE idle: each connection sends nothing.  MODE garbage: each sends, in
# turn, a head announcing more than 64 KiB, a frame of bytes that are not
# JSON, half a request, a few random bytes, half a head, or a whole
# status request.
# READY is created once torpord has refused one of its connections at
# its limits (it holds all it may); it stops when STOP exists or after
# MAX_TURNS turns (each 5 to 55 ms), closes everything, and writes REPORT:
# JSON counts of connects, refusals ("limit": true) and connections
# torpord ended otherwise, and the first few reasons it was refused.
import json
import os
import random
import select
import socket
import struct
import sys
import time

PATTERNS = [
    struct.pack(">I", 64 * 1024 + 1),
    struct.pack(">I", 12) + b"\xff{not json!}",
    struct.pack(">I", 200) + b'{"v": 1, "request"',
    None,  # random bytes
    b"\x00\x00",
    struct.pack(">I", 29) + b'{"v": 1, "request": "status"}',
]


def main(argv):
    path, hold, mode, ready, stop, report = argv[1:7]
    hold, max_turns = int(hold), int(argv[7])
    rng = random.Random(41)
    socks, n = {}, {"connects": 0, "refused": 0, "ended": 0,
                    "connect_failed": 0, "turns": 0, "reasons": []}
    k = 0
    while n["turns"] < max_turns and not os.path.exists(stop):
        n["turns"] += 1
        while len(socks) < hold:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(2)
            try:
                s.connect(path)
            except OSError:
                n["connect_failed"] += 1
                s.close()
                break
            n["connects"] += 1
            if mode == "garbage":
                data = PATTERNS[k % len(PATTERNS)]
                k += 1
                if data is None:
                    data = bytes(rng.randrange(256)
                                 for _ in range(rng.randrange(1, 64)))
                try:
                    s.sendall(data)
                except OSError:
                    pass
            s.setblocking(False)
            socks[s.fileno()] = s
        # Thousands of connects a second, not all the CPU of the machine.
        time.sleep(0.005)
        readable, _, _ = select.select(list(socks), [], [], 0.05)
        for fd in readable:
            s = socks[fd]
            try:
                data = s.recv(65536)
            except OSError:
                data = b""
            if data and b'"limit": true' not in data:
                continue  # a reply it does not care for
            if data:
                n["refused"] += 1
                why = json.loads(data[4:4 + struct.unpack(">I", data[:4])[0]])
                if why["error"] not in n["reasons"] and len(n["reasons"]) < 8:
                    n["reasons"].append(why["error"])
                if n["refused"] == 1:
                    open(ready, "w").close()
            else:
                n["ended"] += 1
            s.close()
            del socks[fd]
    for s in socks.values():
        s.close()
    with open(report, "w") as f:
        json.dump(n, f)
    return 0


sys.exit(main(sys.argv))
