#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The root-filesystem guard (image format 3) on the sim source: an ext4
# loop device mounted under $WORK stands for the root filesystem
# (TORPOR_SIM_ROOT_GUARD, honoured on the sim source only).  Unchanged, the
# image resumes; mounted again since the hibernation, it is refused as
# stale by verify, status and torpor-resume, which discards it (the swap
# area is a swap area again); not visible at all, the resume goes on with
# a note.  A format 2 image (no guard) still resumes, and a guard changed
# on the storage stops at the header checksum.
. "$(dirname "$0")/lib.sh"

IMAGE_TOOL=${IMAGE_TOOL:-$BUILD/tests/integration/image-tool}
SIM=sim:8M:4
ROOT=$WORK/root

make_loop rootguard-fs 64 || { echo "FAIL: losetup"; exit 1; }
FSDEV=$LOOP
make_ext4 "$FSDEV" "$ROOT" || { echo "FAIL: mkfs/mount"; exit 1; }
FSUUID=$(blkid -p -o value -s UUID "$FSDEV")
export TORPOR_SIM_ROOT_GUARD=$ROOT
make_swap rootguard-swap 64 rootguard || { echo "FAIL: swap area"; exit 1; }
SWDEV=$LOOP
write_config swap "device = $SWDEV"

hibernate() {	# hibernate WHAT
	t_run torpor hibernate --direct
	expect_rc 0 "$1: hibernate"
	[ "$(blkid -p -o value -s TYPE "$SWDEV")" != swap ] ||
		fail "$1: hibernate left the swap signature"
}

resumes() {	# resumes WHAT: torpor-resume restores every page
	t_run torpor_resume
	expect_rc 0 "$1: torpor-resume"
	expect_out 'resume: [0-9]+ pages restored and verified' "$1: restored"
}

# 1. Unchanged (files written in the same mount change nothing the guard
# reads: only a mount does): resumes, quietly about the guard.
hibernate "unchanged"
echo data >"$ROOT/file" && sync
t_run torpor verify
expect_rc 0 "unchanged: verify"
resumes "unchanged"
! grep -q 'root filesystem' "$ERR" || fail "unchanged: a word about the guard"
expect_swap_area "$SWDEV" "$SWAP_UUID" rootguard "unchanged: after the resume"

# 2. Mounted again since: stale for verify and status, refused and
# discarded by torpor-resume, the swap area back, nothing left to resume.
hibernate "mounted since"
umount "$ROOT" && mount "$FSDEV" "$ROOT" || fail "mounted since: remount"
stale="the root filesystem UUID=$FSUUID on $FSDEV was mounted since this image was written \(mounted at [0-9: -]+ UTC, mount count 2; the image expects [0-9: -]+ UTC, count 1\): the image is stale"
t_run torpor verify
expect_rc 2 "mounted since: verify"
expect_err "image refused: $stale\$" "mounted since: verify"
t_run torpor status
expect_out "^stored image: +stored, stale \(never resumable\): image refused: $stale" \
	"mounted since: status"
t_run torpor status --json
expect_out '"image": \{"state": "stale"' "mounted since: status --json"
t_run torpor_resume
expect_rc 2 "mounted since: torpor-resume"
expect_err "image refused: $stale and is discarded\$" "mounted since: torpor-resume"
expect_err "nothing was handed to the snapshot device; the stale image can never be resumed: its storage goes back" \
	"mounted since: storage"
[ "$(grep -c 'image refused: the root' "$ERR")" = 1 ] ||
	fail "mounted since: the stale line is not said once"
expect_swap_area "$SWDEV" "$SWAP_UUID" rootguard "mounted since: after the refusal"
t_run torpor_resume
expect_rc 0 "mounted since: second torpor-resume"
expect_out 'no image found' "mounted since: the image is gone"

# 3. A format 2 image (an older torpor's, no guard) on the raw writer
# still resumes, even over a root mounted since.
(umask 077 && : >"$WORK/raw.img")
write_config raw "device = $WORK/raw.img"
t_run torpor hibernate --direct
expect_rc 0 "format 2: hibernate"
"$IMAGE_TOOL" downgrade "$WORK/raw.img" || fail "format 2: image-tool downgrade"
umount "$ROOT" && mount "$FSDEV" "$ROOT" || fail "format 2: remount"
t_run torpor verify
expect_rc 0 "format 2: verify"
resumes "format 2"
! grep -q 'root filesystem' "$ERR" || fail "format 2: a word about the guard"

# 4. A guard changed on the storage (its mount count, 4 + 16 + 8 bytes
# into the guard at header offset 242) stops at the header checksum.
t_run torpor hibernate --direct
expect_rc 0 "tampered: hibernate"
hdr=$("$IMAGE_TOOL" offset "$WORK/raw.img" header)
"$IMAGE_TOOL" flip "$WORK/raw.img" $((hdr + 242 + 28)) || fail "tampered: flip"
t_run torpor_resume
expect_rc 2 "tampered: torpor-resume"
expect_err 'image refused: header: header checksum mismatch \(CRC32C at offset [0-9]+\)' \
	"tampered: torpor-resume"

# 5. The filesystem is not visible at all (its device is gone): the guard
# cannot judge, says so once, and the resume goes on.
write_config swap "device = $SWDEV"
hibernate "not found"
umount "$ROOT" && losetup -d "$FSDEV" || fail "not found: detach"
# losetup -d only asks: while udev or blkid still has the device open it
# keeps its filesystem (seen once on a loaded host).  Wait until it is gone.
for _ in $(seq 100); do
	[ -e "/sys/block/${FSDEV#/dev/}/loop/backing_file" ] || break
	sleep 0.1
done
[ ! -e "/sys/block/${FSDEV#/dev/}/loop/backing_file" ] || fail "not found: $FSDEV still attached after 10 s"
t_run torpor verify
expect_rc 0 "not found: verify"
expect_err "verify: note: the root filesystem UUID=$FSUUID recorded in the image is not visible \(no such device\): whether it was mounted since cannot be told; resuming" \
	"not found: verify"
resumes "not found"
expect_err "resume: note: the root filesystem UUID=$FSUUID recorded in the image is not visible" \
	"not found: torpor-resume"
[ "$(grep -c 'root filesystem' "$ERR")" = 1 ] || fail "not found: not one note"
expect_swap_area "$SWDEV" "$SWAP_UUID" rootguard "not found: after the resume"
finish
