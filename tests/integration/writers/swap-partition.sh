#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# swap writer on a swap partition (a loop device): hibernate and resume on
# the sim source, every page verified; afterwards the swap area is intact
# (same UUID and label, swapon works); `torpor invalidate` after a
# hibernate leaves no image and a usable swap area; noresume discards.
. "$(dirname "$0")/lib.sh"

make_loop swap 512 || { echo "FAIL: losetup"; exit 1; }
dev=$LOOP
# A label of this run's own: LABEL= takes the first area that has it,
# and another run on the same machine may have its own loop devices.
label=tp$$
mkswap -L "$label" "$dev" >/dev/null || { echo "FAIL: mkswap"; exit 1; }
uuid=$(blkid -p -o value -s UUID "$dev")
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
[ "$(blkid -p -o value -s TYPE "$dev")" = swap ] || fail "blkid TYPE after resume"
[ "$(blkid -p -o value -s UUID "$dev")" = "$uuid" ] || fail "UUID changed"
[ "$(blkid -p -o value -s LABEL "$dev")" = "$label" ] || fail "label changed"
[ "$(page0_sum)" = "$page0" ] ||
	fail "swap header page differs after resume (beyond the record)"
[ "$(dd if="$dev" bs=1 skip=4032 count=8 status=none)" = TORPORCR ] ||
	fail "no consumed-image record after resume"
swapon "$dev" && swapoff "$dev" || fail "swapon after resume"

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
