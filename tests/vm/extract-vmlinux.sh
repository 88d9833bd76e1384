#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Extract the uncompressed kernel from a bzImage, for QEMU to boot through
# its PVH entry (about twice as fast under TCG as the bzImage).  The
# bzImage carries the kernel as an xz stream; --single-stream stops at the
# end of the stream (trailing data follows it).  Checked: an ELF whose
# every segment lies inside the file.
#
# Usage: extract-vmlinux.sh BZIMAGE OUT
# Exit: 0 OUT is there (made now, or newer than BZIMAGE already), 1 the
# kernel could not be extracted (boot the bzImage instead).
set -u
[ $# -eq 2 ] || { echo "usage: $0 BZIMAGE OUT" >&2; exit 1; }
kernel=$1 vmlinux=$2
[ -s "$vmlinux" ] && [ ! "$vmlinux" -ot "$kernel" ] && exit 0
rm -f "$vmlinux"
off=$(LC_ALL=C grep -obUaP -m 1 '\xfd7zXZ\x00' "$kernel" | cut -d: -f1 | head -n 1)
if [ -n "$off" ] &&
   tail -c +$((off + 1)) "$kernel" >"$vmlinux.xz" &&
   xz -dc --single-stream "$vmlinux.xz" >"$vmlinux.tmp" 2>/dev/null &&
   python3 - "$vmlinux.tmp" <<'PY'
import struct, sys
d = open(sys.argv[1], 'rb').read()
if d[:4] != b'\x7fELF' or d[4] != 2:
    sys.exit(1)
phoff, = struct.unpack_from('<Q', d, 0x20)
phentsize, phnum = struct.unpack_from('<HH', d, 0x36)
for i in range(phnum):
    p_type, _, p_offset, _, _, p_filesz = struct.unpack_from('<IIQQQQ', d, phoff + i * phentsize)
    if p_type == 1 and p_offset + p_filesz > len(d):
        sys.exit(1)
PY
then
	mv "$vmlinux.tmp" "$vmlinux"
	rm -f "$vmlinux.xz"
	exit 0
fi
rm -f "$vmlinux.tmp" "$vmlinux.xz"
exit 1
