#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# A socket that drops torpor's connections, for the tests (a torpord that
# cannot take the request):
#
#   torpord-drop.py SOCKET close STOP
#       closes every connection as soon as it is accepted, reading
#       nothing, until STOP exists (60 s at most)
#   torpord-drop.py SOCKET shut STOP MARK
#       takes one hibernate request, answers "accepted", shuts its own
#       reading side (what the client sends then is EPIPE), creates MARK,
#       and closes once STOP exists (60 s at most)
import json
import os
import select
import socket
import struct
import sys
import time


def frame(obj):
    body = json.dumps(obj).encode()
    return struct.pack(">I", len(body)) + body


def read_frame(c):
    buf = b""
    while len(buf) < 4 or len(buf) < 4 + struct.unpack(">I", buf[:4])[0]:
        data = c.recv(65536)
        if not data:
            break
        buf += data
    return buf


def main(argv):
    path, mode, stop = argv[1], argv[2], argv[3]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    os.umask(0o111)  # anyone may connect, as to torpord's
    s.bind(path)
    s.listen(64)
    end = time.monotonic() + 60
    while not os.path.exists(stop) and time.monotonic() < end:
        if not select.select([s], [], [], 0.05)[0]:
            continue
        c, _ = s.accept()
        if mode == "close":
            c.close()
            continue
        read_frame(c)
        c.sendall(frame({"v": 1, "type": "accepted",
                         "request": "hibernate"}))
        c.shutdown(socket.SHUT_RD)
        open(argv[4], "w").close()
        while not os.path.exists(stop) and time.monotonic() < end:
            time.sleep(0.05)
        c.close()
    s.close()
    os.unlink(path)
    return 0


sys.exit(main(sys.argv))
