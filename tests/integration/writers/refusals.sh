#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Capacity and vanished storage: hibernate refuses before freezing, with
# "need X MiB, Y MiB free on DEVICE", and leaves the swap area untouched;
# a swap area that disappears between setup and hibernate gives a clear
# error.
. "$(dirname "$0")/lib.sh"

make_loop small 2 || { echo "FAIL: losetup"; exit 1; }
small=$LOOP
mkswap "$small" >/dev/null || { echo "FAIL: mkswap"; exit 1; }
page0=$(dd if="$small" bs=4096 count=1 status=none | sha256sum)
write_config swap "device = $small"
t_run torpor hibernate --direct
[ "$rc" -ne 0 ] || fail "hibernate to a 2 MiB swap area succeeded"
expect_err "need [0-9]+ MiB, [0-9]+ MiB free on $small" "capacity message"
[ "$(dd if="$small" bs=4096 count=1 status=none | sha256sum)" = "$page0" ] ||
	fail "the swap header changed although nothing was written"
swapon "$small" && swapoff "$small" || fail "swapon after the refusal"

make_loop fs 128 || { echo "FAIL: losetup"; exit 1; }
dev=$LOOP
mnt="$WORK/mnt"
make_ext4 "$dev" "$mnt" || { echo "FAIL: mkfs/mount"; exit 1; }
write_config file "path = $mnt/image" "size = 2M"
t_run "$TORPOR_BIN" file-setup --config "$CONF"
expect_rc 0 "file-setup 2M"
t_run torpor hibernate --direct
[ "$rc" -ne 0 ] || fail "hibernate to a 2 MiB file succeeded"
expect_err "need [0-9]+ MiB, 2 MiB free on $mnt/image" "capacity message (file)"

make_loop gone 64 || { echo "FAIL: losetup"; exit 1; }
gone=$LOOP
mkswap "$gone" >/dev/null
write_config swap "device = $gone"
t_run torpor status
losetup -d "$gone"
# Detached here: the number may go to someone else, so do not undo it.
unset 'UNDO[${#UNDO[@]}-1]'
t_run torpor hibernate --direct
[ "$rc" -ne 0 ] || fail "hibernate to a detached loop device succeeded"
expect_err "disappeared|cannot find|is gone" "vanished swap area message"

# No device configured and no active swap area to choose (zram never
# counts): the refusal says what would work.  Only where this machine has
# no other active swap, as the writer would choose it.
if ! awk 'NR > 1 && $1 !~ "^/dev/zram"' /proc/swaps | grep -q .; then
	write_config swap
	t_run torpor hibernate --direct --test
	expect_rc 1 "hibernate with no swap area to choose"
	expect_err "no \\[swap\\] device= configured and no active swap area to choose: zram does not count, as a power-off empties it \\(name a swap partition or file in \\[swap\\] device=, or let torpor setup make an image file for the file writer\\)" \
		"no swap area to choose: what would work"
else
	echo "SKIP (part): this machine has an active swap area, which the writer would choose"
fi
finish
