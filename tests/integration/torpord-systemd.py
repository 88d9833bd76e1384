#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Start torpord as systemd would: the listening socket as fd 3 with
# LISTEN_FDS/LISTEN_PID, and $NOTIFY_SOCKET; print every notification it
# sends, one a line, as they come.  The test reads them from stdout.
#
#   torpord-systemd.py SOCKET NOTIFY-SOCKET TORPORD [ARGS...]
import os
import socket
import sys

path, notify_path, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(path)
listener.listen(16)
notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
notify.bind(notify_path)
pid = os.fork()
if pid == 0:
    if listener.fileno() != 3:
        os.dup2(listener.fileno(), 3)
    os.set_inheritable(3, True)
    os.environ["LISTEN_FDS"] = "1"
    os.environ["LISTEN_PID"] = str(os.getpid())
    os.environ["NOTIFY_SOCKET"] = notify_path
    os.execv(argv[0], argv)
listener.close()
print("PID %d" % pid, flush=True)
while True:
    msg = notify.recv(4096).decode()
    print(msg, flush=True)
    if "STOPPING=1" in msg:
        break
os.waitpid(pid, 0)
