#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# swap writer on a swap partition (a loop device): hibernate and resume on
# the sim source, every page verified; afterwards the swap area is intact
# (same UUID and label, swapon works); `torpor invalidate` after a
# hibernate leaves no image and a usable swap area; noresume discards.
. "$(dirname "$0")/lib.sh"

# A label of this run's own: LABEL= takes the first area that has it,
# and another run on the same machine may have its own loop devices.
label=tp$$
make_swap swap 512 "$label" || { echo "FAIL: losetup/mkswap"; exit 1; }
dev=$LOOP
uuid=$SWAP_UUID
# The header page but for the 54 bytes before the signature, where a
# resume leaves its consumed-image record (doc/writers.md).
page0_sum() {
	dd if="$dev" of="$WORK/page0" bs=4096 count=1 status=none
	{ head -c 4032 "$WORK/page0"; tail -c 10 "$WORK/page0"; } | sha256sum
}
page0=$(page0_sum)
swapon "$dev" && swapoff "$dev" || fail "swapon before the cycle"

write_config swap "device = $dev"
full_cycle "swap partition"
expect_swap_area "$dev" "$uuid" "$label" "after resume"
[ "$(page0_sum)" = "$page0" ] ||
	fail "swap header page differs after resume (beyond the record)"
[ "$(dd if="$dev" bs=1 skip=4032 count=8 status=none)" = TORPORCR ] ||
	fail "no consumed-image record after resume"

# resume-args --kernel: the location for the running kernel (logind's
# resume device), here into a fake /sys/power.
mkdir -p "$WORK/sysroot/sys/power"
echo 0:0 >"$WORK/sysroot/sys/power/resume"
echo 0 >"$WORK/sysroot/sys/power/resume_offset"
t_run env TORPOR_TEST_SYSROOT="$WORK/sysroot" "$TORPOR_BIN" --config "$CONF" --plugin-dir "$PLUGINS" resume-args --kernel
expect_rc 0 "resume-args --kernel"
devno=$(printf '%d:%d' "0x$(stat -c %t "$dev")" "0x$(stat -c %T "$dev")")
[ "$(cat "$WORK/sysroot/sys/power/resume")" = "$devno" ] ||
	fail "resume-args --kernel wrote '$(cat "$WORK/sysroot/sys/power/resume")', not $devno"
[ "$(cat "$WORK/sysroot/sys/power/resume_offset")" = 0 ] || fail "resume-args --kernel: offset"
expect_out "the kernel's resume device is now $devno \\($dev\\), offset 0 pages" "resume-args --kernel says it"
# status reads it as logind does: the configuration's device (a stand-in
# for busctl answers for logind).
mkdir -p "$WORK/sysroot/run/systemd/system"
printf '#!/bin/sh\necho "s \\"yes\\""\n' >"$WORK/busctl"
chmod 755 "$WORK/busctl"
t_run env TORPOR_TEST_SYSROOT="$WORK/sysroot" TORPOR_TEST_BUSCTL="$WORK/busctl" "$TORPOR_BIN" --config "$CONF" --plugin-dir "$PLUGINS" status
expect_out "^logind: +yes: the kernel's resume device is $devno \\(the configuration's\\)$" "status: logind"
echo 7:99 >"$WORK/sysroot/sys/power/resume"
t_run env TORPOR_TEST_SYSROOT="$WORK/sysroot" TORPOR_TEST_BUSCTL="$WORK/busctl" "$TORPOR_BIN" --config "$CONF" --plugin-dir "$PLUGINS" status
expect_out "^logind: +yes: the kernel's resume device is 7:99, not the configuration's: run \`torpor resume-args --kernel\`" "status: logind, another device"
rm -rf "$WORK/sysroot/run"
rm -f "$WORK/sysroot/sys/power/resume"
t_run env TORPOR_TEST_SYSROOT="$WORK/sysroot" "$TORPOR_BIN" --config "$CONF" --plugin-dir "$PLUGINS" resume-args --kernel
expect_rc 1 "resume-args --kernel without /sys/power/resume"
expect_err "cannot open .*/sys/power/resume" "resume-args --kernel without /sys/power/resume"

# By UUID= and LABEL=, with no udev links: the writer scans itself.
write_config swap "device = UUID=$uuid"
full_cycle "swap by UUID"
write_config swap "device = LABEL=$label"
full_cycle "swap by LABEL"

# invalidate after hibernate: swap usable, no image for torpor-resume.
write_config swap "device = $dev"
t_run torpor hibernate --direct
expect_rc 0 "hibernate before invalidate"
[ "$(blkid -p -o value -s TYPE "$dev")" != swap ] || fail "signature not replaced by hibernate"
t_run torpor invalidate
expect_rc 0 "invalidate"
t_run torpor_resume
expect_rc 0 "torpor-resume after invalidate"
expect_out 'no image found' "torpor-resume after invalidate"
[ "$(blkid -p -o value -s UUID "$dev")" = "$uuid" ] || fail "UUID after invalidate"
swapon "$dev" && swapoff "$dev" || fail "swapon after invalidate"

# noresume: the image is discarded and the swap area given back.
t_run torpor hibernate --direct
expect_rc 0 "hibernate before noresume"
echo "noresume" >"$CMDLINE"
t_run torpor_resume
expect_rc 0 "torpor-resume noresume"
: >"$CMDLINE"
t_run torpor_resume
expect_out 'no image found' "image gone after noresume"
swapon "$dev" && swapoff "$dev" || fail "swapon after noresume"
finish
