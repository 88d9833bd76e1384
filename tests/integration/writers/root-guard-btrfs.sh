#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The root-filesystem guard on a btrfs root (Fedora's), on the sim source:
# a btrfs loop device mounted under $WORK stands for the root
# (TORPOR_SIM_ROOT_GUARD).  btrfs keeps no mount count; its generation,
# which every commit raises, and its tree log (an fsync since the last
# commit) stand for it.  Unchanged, or mounted again without a write, the
# image resumes; written and committed since, or fsynced since, it is
# refused as stale by verify and torpor-resume, which discards it (the swap
# area is a swap area again).
. "$(dirname "$0")/lib.sh"
for tool in mkfs.btrfs; do
	command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool is missing (btrfs-progs)"; exit 77; }
done
grep -qw btrfs /proc/filesystems || modprobe btrfs 2>/dev/null ||
	{ echo "SKIP: this kernel has no btrfs"; exit 77; }

SIM=sim:8M:4
ROOT=$WORK/root

make_loop rootguard-btrfs 256 || { echo "FAIL: losetup"; exit 1; }
FSDEV=$LOOP
mkfs.btrfs -q -f "$FSDEV" >/dev/null && mkdir -p "$ROOT" && mount "$FSDEV" "$ROOT" ||
	{ echo "FAIL: mkfs.btrfs/mount"; exit 1; }
UNDO+=("umount $ROOT")
FSUUID=$(blkid -p -o value -s UUID "$FSDEV")
export TORPOR_SIM_ROOT_GUARD=$ROOT
make_swap rootguard-swap 64 rootguard || { echo "FAIL: swap area"; exit 1; }
SWDEV=$LOOP
write_config swap "device = $SWDEV"

# The generation the superblock holds now (the primary copy at 64 KiB).
generation() {
	dd if="$FSDEV" bs=4096 skip=16 count=1 iflag=direct status=none |
		od -A n -t u8 -j 72 -N 8 | tr -d ' '
}

hibernate() {	# hibernate WHAT
	sync
	t_run torpor hibernate --direct -vv
	expect_rc 0 "$1: hibernate"
	expect_err "root filesystem guard: btrfs generation $(generation) after the snapshot" \
		"$1: the guard read the generation after the snapshot"
}

resumes() {	# resumes WHAT: torpor-resume restores every page
	t_run torpor_resume
	expect_rc 0 "$1: torpor-resume"
	expect_out 'resume: [0-9]+ pages restored and verified' "$1: restored"
	! grep -q 'root filesystem' "$ERR" || fail "$1: a word about the guard"
	expect_swap_area "$SWDEV" "$SWAP_UUID" rootguard "$1: after the resume"
}

refused() {	# refused WHAT PATTERN: stale for verify and torpor-resume
	local stale="the root filesystem \(btrfs\) UUID=$FSUUID on $FSDEV was written since this image was written \($2\): the image is stale"
	t_run torpor verify
	expect_rc 2 "$1: verify"
	expect_err "image refused: $stale\$" "$1: verify"
	t_run torpor_resume
	expect_rc 2 "$1: torpor-resume"
	expect_err "image refused: $stale and is discarded\$" "$1: torpor-resume"
	expect_swap_area "$SWDEV" "$SWAP_UUID" rootguard "$1: after the refusal"
	t_run torpor_resume
	expect_rc 0 "$1: second torpor-resume"
	expect_out 'no image found' "$1: the image is gone"
}

# 1. Unchanged: resumes.
hibernate "unchanged"
t_run torpor verify
expect_rc 0 "unchanged: verify"
resumes "unchanged"

# 2. Mounted again, nothing written: btrfs commits nothing, and nothing
# was lost: resumes.
hibernate "remounted"
umount "$ROOT" && mount "$FSDEV" "$ROOT" || fail "remounted: remount"
resumes "remounted"

# 3. Written and committed since (what any boot does): stale.
hibernate "written"
g=$(generation)
echo data >"$ROOT/file" && sync
refused "written" "generation $((g + 1)); the image expects $g"

# 4. Only fsynced since (a tree log, the generation unchanged): stale.
hibernate "fsynced"
g=$(generation)
dd if=/dev/zero of="$ROOT/fsynced" bs=4096 count=1 conv=fsync status=none
refused "fsynced" "generation $g with a tree log; the image expects $g"
finish
