#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# A raw client of torpord's protocol (doc/protocol.md) for the tests:
# sends what it is told, then prints every message it gets, one JSON
# object a line, and "EOF" when torpord closes the connection.
#
#   torpord-client.py SOCKET [--request JSON]... [--raw HEX]
#                     [--sent FILE] [--close | --shut]
#
# --request: a framed message (several are sent in one write);
# --raw: bytes as they are; --sent: created once everything is sent;
# --close: close the connection right after sending; --shut: shut its
# sending side (torpord sees the end of the stream), then read.
import socket
import struct
import sys


def frame(text):
    body = text.encode()
    return struct.pack(">I", len(body)) + body


def main(argv):
    path, out, sent, close, shut = argv[1], b"", None, False, False
    i = 2
    while i < len(argv):
        if argv[i] == "--request":
            out += frame(argv[i + 1])
        elif argv[i] == "--raw":
            out += bytes.fromhex(argv[i + 1])
        elif argv[i] == "--sent":
            sent = argv[i + 1]
        elif argv[i] == "--close":
            close, i = True, i - 1
        elif argv[i] == "--shut":
            shut, i = True, i - 1
        i += 2
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    if out:
        s.sendall(out)
    if sent:
        open(sent, "w").close()
    if close:
        s.close()
        return 0
    if shut:
        s.shutdown(socket.SHUT_WR)
    buf = b""
    while True:
        data = s.recv(65536)
        if not data:
            break
        buf += data
        while len(buf) >= 4:
            (n,) = struct.unpack(">I", buf[:4])
            if len(buf) < 4 + n:
                break
            print(buf[4:4 + n].decode().strip(), flush=True)
            buf = buf[4 + n:]
    print("EOF", flush=True)
    return 0


sys.exit(main(sys.argv))
