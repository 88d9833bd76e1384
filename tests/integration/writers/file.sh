#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# file writer on ext4 on a loop device: `torpor file-setup` makes the file;
# the full cycle; afterwards every other file and the file's content
# outside the image are unchanged and e2fsck -fn finds the filesystem
# clean.  A file made by fallocate alone is refused with a pointer to
# file-setup.
. "$(dirname "$0")/lib.sh"

make_loop fs 512 || { echo "FAIL: losetup"; exit 1; }
dev=$LOOP
mnt="$WORK/mnt"
make_ext4 "$dev" "$mnt" || { echo "FAIL: mkfs/mount"; exit 1; }
img="$mnt/torpor/image"
dd if=/dev/urandom of="$mnt/other" bs=1M count=8 status=none
mkdir -p "$mnt/dir" && dd if=/dev/urandom of="$mnt/dir/small" bs=1k count=3 status=none
sync

write_config file "path = $img" "size = 256M"
t_run "$TORPOR_BIN" file-setup --config "$CONF"
expect_rc 0 "file-setup"
expect_out 'allocated and written' "file-setup says what it did"
expect_out 'resume=UUID=' "file-setup names the resume location"
# The file's last 64 MiB lie outside any image of a 64 MiB sim snapshot.
echo "tail of the file" | dd of="$img" bs=1M seek=200 conv=notrunc,fsync status=none
sums() {
	(cd "$mnt" && find . -path ./torpor -prune -o -type f -print0 | sort -z |
		xargs -0 sha256sum; tail -c $((56 << 20)) torpor/image | sha256sum)
}
before=$(sums)

LOCATION_IN_FS=yes
full_cycle "file writer"

umount "$mnt" || fail "umount"
e2fsck -fn "$dev" >"$OUT" 2>&1 || fail "e2fsck -fn after the cycle"
mount "$dev" "$mnt" || fail "mount"
[ "$(sums)" = "$before" ] || fail "files or the file's content outside the image changed"

t_run torpor hibernate --direct
expect_rc 0 "hibernate before invalidate"
t_run torpor invalidate
expect_rc 0 "invalidate"
t_run torpor_resume
expect_rc 0 "torpor-resume after invalidate"
expect_out 'no image found' "torpor-resume after invalidate"

# torpord maps the file when it prepares a cycle, maybe long before a
# request: a file made again since has other blocks (the old ones here go
# to another file), and the request must map it again.
"$TORPORD" --config "$CONF" --plugin-dir "$PLUGINS" --socket "$WORK/torpord.sock" \
	>"$WORK/torpord.log" 2>&1 &
dpid=$!
UNDO+=("kill $dpid")
for _ in $(seq 200); do
	"$TORPOR_BIN" -q --socket "$WORK/torpord.sock" status >/dev/null 2>&1 && break
	sleep 0.05
done
rm "$img"
dd if=/dev/urandom of="$mnt/filler" bs=1M count=16 conv=fsync status=none
t_run "$TORPOR_BIN" file-setup --config "$CONF"
expect_rc 0 "file-setup of a new file while torpord runs"
filler=$(sha256sum <"$mnt/filler")
t_run "$TORPOR_BIN" --socket "$WORK/torpord.sock" hibernate
expect_rc 0 "hibernate through torpord after the file was made again"
expect_err 'through torpord' "the hibernation went through torpord"
kill "$dpid"; wait "$dpid" 2>/dev/null
[ "$(sha256sum <"$mnt/filler")" = "$filler" ] ||
	fail "torpord wrote into blocks the file no longer has"
t_run torpor resume-args
cp "$OUT" "$CMDLINE"
# resume-args --kernel: the file's device and offset for the running
# kernel (logind's resume device), here into a fake /sys/power.
mkdir -p "$WORK/sysroot/sys/power"
echo 0:0 >"$WORK/sysroot/sys/power/resume"
echo 0 >"$WORK/sysroot/sys/power/resume_offset"
t_run env TORPOR_TEST_SYSROOT="$WORK/sysroot" "$TORPOR_BIN" --config "$CONF" --plugin-dir "$PLUGINS" resume-args --kernel
expect_rc 0 "resume-args --kernel"
want_off=$(sed -n 's/.*resume_offset=\([0-9]*\).*/\1/p' "$CMDLINE")
[ -n "$want_off" ] && [ "$(cat "$WORK/sysroot/sys/power/resume_offset")" = "$want_off" ] ||
	fail "resume-args --kernel: offset '$(cat "$WORK/sysroot/sys/power/resume_offset")', not '$want_off'"
fsdevno=$(printf '%d:%d' "0x$(stat -c %t "$dev")" "0x$(stat -c %T "$dev")")
[ "$(cat "$WORK/sysroot/sys/power/resume")" = "$fsdevno" ] ||
	fail "resume-args --kernel: device '$(cat "$WORK/sysroot/sys/power/resume")', not $fsdevno"
t_run torpor_resume
expect_rc 0 "resume of torpord's image in the new file"
expect_out 'restored and verified' "torpord's image is in the new file"
: >"$CMDLINE"

# At boot, before the root filesystem is mounted, the file is not there
# and a command line without resume= and resume_offset= names no place:
# torpor-resume says so and waits for nothing (a device it waits for can
# appear; a path under the unmounted root never does).
write_config file "path = $WORK/not-mounted/image"
t_run torpor_resume --wait-device 30
[ "$rc" -ne 0 ] || fail "no place for the image file: torpor-resume exit 0"
expect_err "the kernel command line names no place for $WORK/not-mounted/image either: at boot, before the root filesystem is mounted, only resume= and resume_offset= can \\(torpor resume-args prints them\\)" \
	"no place for the image file: torpor-resume says what names it"
! grep -q 'waiting up to' "$ERR" || fail "no place for the image file: torpor-resume waited for it"

# fallocate only: unwritten extents are refused with a pointer to file-setup.
fallocate -l 64M "$mnt/unwritten" || fail "fallocate"
write_config file "path = $mnt/unwritten"
t_run torpor hibernate --direct
[ "$rc" -ne 0 ] || fail "an unwritten file was accepted"
expect_err "file-setup" "the refusal names file-setup"
finish
