#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# file writer on btrfs (Fedora's default root filesystem) on a loop device:
# `torpor file-setup` makes the file NOCOW before it allocates it, the
# writer maps it through the chunk tree, and a full cycle on the sim
# source works, and from the snapshot on it looks up no path on the
# filesystem; afterwards every other file is unchanged and btrfs check
# finds the filesystem clean.  A btrfs over two devices is refused with
# its reason, before any file is allocated.
. "$(dirname "$0")/lib.sh"
for tool in mkfs.btrfs btrfs lsattr strace; do
	command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool is missing (btrfs-progs, strace)"; exit 77; }
done
grep -qw btrfs /proc/filesystems || modprobe btrfs 2>/dev/null ||
	{ echo "SKIP: this kernel has no btrfs"; exit 77; }

make_loop fs 512 || { echo "FAIL: losetup"; exit 1; }
dev=$LOOP
mnt="$WORK/mnt"
mkfs.btrfs -q -f "$dev" >/dev/null && mkdir -p "$mnt" && mount "$dev" "$mnt" ||
	{ echo "FAIL: mkfs.btrfs/mount"; exit 1; }
UNDO+=("umount $mnt")
img="$mnt/torpor/image"
dd if=/dev/urandom of="$mnt/other" bs=1M count=8 status=none
sync

write_config file "path = $img" "size = 256M"
t_run "$TORPOR_BIN" file-setup --config "$CONF"
expect_rc 0 "file-setup on btrfs"
expect_out 'allocated and written' "file-setup says what it did"
expect_out "resume=UUID=$(blkid -p -o value -s UUID "$dev") resume_offset=" \
	"file-setup names the filesystem and the offset"
lsattr "$img" | grep -q '^[^ ]*C' || fail "file-setup did not make the file NOCOW"
before=$(cd "$mnt" && sha256sum other)

LOCATION_IN_FS=yes
full_cycle "file writer on btrfs"
no_lookup_after_snapshot "file writer on btrfs" "$mnt"

umount "$mnt" || fail "umount"
btrfs check --readonly "$dev" >"$OUT" 2>&1 || fail "btrfs check after the cycle"
mount "$dev" "$mnt" || fail "mount"
[ "$(cd "$mnt" && sha256sum other)" = "$before" ] || fail "another file changed"
umount "$mnt" || fail "umount"

# Two devices: the image would need both at boot; refused, nothing made.
make_loop a 300 || { echo "FAIL: losetup"; exit 1; }
a=$LOOP
make_loop b 300 || { echo "FAIL: losetup"; exit 1; }
b=$LOOP
mkfs.btrfs -q -f -d single -m raid1 "$a" "$b" >/dev/null && btrfs device scan "$a" "$b" >/dev/null &&
	mount "$a" "$mnt" || { echo "FAIL: mkfs.btrfs on two devices"; exit 1; }
t_run "$TORPOR_BIN" file-setup --config "$CONF"
expect_rc 1 "file-setup on a btrfs of two devices"
expect_err "is on a btrfs filesystem of 2 devices: an image needs one device it can name at boot" \
	"the refusal says why"
umount "$mnt" || fail "umount"
# The scanned devices go with their loop devices.
UNDO+=("btrfs device scan --forget")
finish
