#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The raw writer refuses a device that is someone else's, before it writes
# a byte: a mounted ext4 filesystem (`hibernate --test` exits non-zero,
# the first 8 KiB with the superblock are unchanged, blkid still sees the
# filesystem, e2fsck -fn finds it clean), an active swap area, a device
# that device-mapper holds (when device-mapper works on this host).  The
# same device, once nobody uses it, takes a full cycle.  On the simulated
# device the swap writer refuses an active swap area too: a partition
# (the simulated device will not hand out its pages) and a swap file (it
# leaves the file to the writer, who takes no page the kernel may use).
. "$(dirname "$0")/lib.sh"
[ -e "$PLUGINS/raw.so" ] || { echo "FAIL: $PLUGINS/raw.so is not built"; exit 1; }

head_sum() { head -c 8192 "$1" | sha256sum; }

# A mounted ext4 filesystem.
make_loop fs 64 || { echo "FAIL: losetup"; exit 1; }
fs=$LOOP
mnt="$WORK/mnt"
make_ext4 "$fs" "$mnt" || { echo "FAIL: mkfs/mount"; exit 1; }
echo "keep me" >"$mnt/keep" && sync
fsuuid=$(blkid -p -o value -s UUID "$fs")
# Frozen, the mounted ext4 writes nothing of its own (a journal commit
# updates its superblock: seen once on a loaded host); a write through
# the block device would still show.
fsfreeze -f "$mnt" || fail "fsfreeze"
before=$(head_sum "$fs")
write_config raw "device = $fs"
t_run torpor hibernate --direct --test
[ "$rc" -ne 0 ] || fail "hibernate --test to a mounted device exited 0"
# The exact words: what, the rule, and what to do.
expect_err_line "torpor: raw: refusing $fs: it is mounted on $mnt; the raw writer overwrites the whole device, so it must be one nobody uses (end that use: umount, swapoff; or name another device in [raw] device=)" \
	"mounted device: message"
t_run torpor invalidate
[ "$rc" -ne 0 ] || fail "invalidate on a mounted device exited 0"
[ "$(head_sum "$fs")" = "$before" ] || fail "the superblock of the mounted filesystem changed"
fsfreeze -u "$mnt" || fail "fsfreeze -u"
umount "$mnt" || fail "umount"
[ "$(blkid -p -o value -s TYPE "$fs")" = ext4 ] || fail "blkid no longer sees ext4"
[ "$(blkid -p -o value -s UUID "$fs")" = "$fsuuid" ] || fail "the filesystem UUID changed"
e2fsck -fn "$fs" >"$OUT" 2>&1 || fail "e2fsck -fn after the refusal"
mount "$fs" "$mnt" && grep -q "keep me" "$mnt/keep" || fail "the file on the filesystem is gone"

# An active swap area.
make_loop swap 64 || { echo "FAIL: losetup"; exit 1; }
sw=$LOOP
mkswap -L torpor-inuse "$sw" >/dev/null && swapon "$sw" || { echo "FAIL: mkswap/swapon"; exit 1; }
UNDO+=("swapoff $sw")
before=$(head_sum "$sw")
write_config raw "device = $sw"
t_run torpor hibernate --direct --test
[ "$rc" -ne 0 ] || fail "hibernate --test to an active swap area exited 0"
expect_err "refusing $sw: it is an active swap area" "active swap: message"
[ "$(head_sum "$sw")" = "$before" ] || fail "the active swap area's header changed"
write_config swap "device = $sw"
t_run torpor hibernate --direct --test
[ "$rc" -ne 0 ] || fail "swap writer on an active swap partition (sim) exited 0"
expect_err "the simulated snapshot device cannot use swap area $sw: it is active" \
	"swap writer, active partition: the simulated device's message"
[ "$(head_sum "$sw")" = "$before" ] || fail "swap writer: the active swap partition's header changed"
swapoff "$sw" || fail "swapoff"

# An active swap file, with the swap writer.
swf="$mnt/swapfile"
dd if=/dev/zero of="$swf" bs=1M count=16 status=none conv=fsync &&
	chmod 600 "$swf" && mkswap "$swf" >/dev/null && swapon "$swf" ||
	{ echo "FAIL: an active swap file"; exit 1; }
UNDO+=("swapoff $swf")
before=$(head_sum "$swf")
write_config swap "device = $swf"
t_run torpor hibernate --direct --test
[ "$rc" -ne 0 ] || fail "swap writer on an active swap file (sim) exited 0"
expect_err "swap area $swf is in use by the kernel: only the running kernel knows which of its pages are free, and this snapshot device does not hand them out; run swapoff $swf first" \
	"swap writer, active swap file: message"
[ "$(head_sum "$swf")" = "$before" ] || fail "swap writer: the active swap file's header changed"
swapoff "$swf" || fail "swapoff of the swap file"

# Held by device-mapper (a linear target over the whole device).
if command -v dmsetup >/dev/null 2>&1 && dmsetup version >/dev/null 2>&1; then
	make_loop held 32 || { echo "FAIL: losetup"; exit 1; }
	held=$LOOP
	name="torpor-inuse-$$"
	dmsetup create "$name" --table "0 $(blockdev --getsz "$held") linear $held 0" ||
		{ echo "FAIL: dmsetup create"; exit 1; }
	UNDO+=("dmsetup remove $name")
	write_config raw "device = $held"
	t_run torpor hibernate --direct --test
	[ "$rc" -ne 0 ] || fail "hibernate --test to a device held by device-mapper exited 0"
	expect_err "refusing $held: it is held by dm-" "held device: message"
else
	echo "SKIP (part): device-mapper does not work here, no holder test ($(dmsetup version 2>&1 | tail -1))"
fi

# The swap area's device, now unused: accepted, and a full cycle works.
write_config raw "device = $sw"
full_cycle "raw on an unused device"
finish
