#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# swap writer on a swap file on ext4 on a loop device: the full cycle with
# the location named by resume-args (UUID of the filesystem, resume_offset
# from FIEMAP), with no path on the filesystem looked up from the
# snapshot on; afterwards swapon works, blkid shows the same UUID and
# label, and e2fsck -fn finds the filesystem clean.
. "$(dirname "$0")/lib.sh"
command -v strace >/dev/null 2>&1 || { echo "SKIP: strace is missing"; exit 77; }

make_swap_file_fs swfile
dev=$FSDEV mnt=$MNT sw=$SW
uuid=$(blkid -p -o value -s UUID "$sw")
fsuuid=$(blkid -p -o value -s UUID "$dev")
phys=$(filefrag -v "$sw" | awk '$1 == "0:" { sub(/\.\..*/, "", $4); print $4 }')

write_config swap "device = $sw"
t_run torpor resume-args
expect_rc 0 "resume-args"
expect_out "^resume=UUID=$fsuuid resume_offset=$phys\$" "resume-args names the filesystem and the file's first page"
# For the running kernel: the filesystem's device and the file's page.
mkdir -p "$WORK/sysroot/sys/power"
: >"$WORK/sysroot/sys/power/resume"
: >"$WORK/sysroot/sys/power/resume_offset"
t_run env TORPOR_TEST_SYSROOT="$WORK/sysroot" "$TORPOR_BIN" --config "$CONF" --plugin-dir "$PLUGINS" resume-args --kernel
expect_rc 0 "resume-args --kernel"
[ "$(cat "$WORK/sysroot/sys/power/resume_offset")" = "$phys" ] ||
	fail "resume-args --kernel: offset '$(cat "$WORK/sysroot/sys/power/resume_offset")', not $phys"
[ "$(cat "$WORK/sysroot/sys/power/resume")" = "$(printf '%d:%d' "0x$(stat -c %t "$dev")" "0x$(stat -c %T "$dev")")" ] ||
	fail "resume-args --kernel: device '$(cat "$WORK/sysroot/sys/power/resume")'"
LOCATION_IN_FS=yes
full_cycle "swap file"
[ "$(blkid -p -o value -s TYPE "$sw")" = swap ] || fail "blkid TYPE after resume"
[ "$(blkid -p -o value -s UUID "$sw")" = "$uuid" ] || fail "UUID changed"
[ "$(blkid -p -o value -s LABEL "$sw")" = swfile ] || fail "label changed"
swapon "$sw" && swapoff "$sw" || fail "swapon after resume"

no_lookup_after_snapshot "swap file" "$mnt"
t_run torpor invalidate
expect_rc 0 "invalidate"
t_run torpor_resume
expect_out 'no image found' "torpor-resume after invalidate"
swapon "$sw" && swapoff "$sw" || fail "swapon after invalidate"

umount "$mnt" || fail "umount"
e2fsck -fn "$dev" >"$OUT" 2>&1 || fail "e2fsck -fn after the cycles"
mount "$dev" "$mnt"
finish
