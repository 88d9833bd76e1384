#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A swap image whose saved layout (the writer's run list, its own CRC
# intact) points past the end of the device: every run is checked against
# the device before anything is read, so torpor verify and torpor-resume
# refuse it (exit 2, not an error part-way through the read) and the swap
# area gets its signature back, as after every refusal.
. "$(dirname "$0")/lib.sh"
IMAGE_TOOL=${IMAGE_TOOL:-$BUILD/tests/integration/image-tool}

label=tl$$
make_swap swaplayout 256 "$label" || { echo "FAIL: losetup/mkswap"; exit 1; }
dev=$LOOP
uuid=$SWAP_UUID
size=$(blockdev --getsize64 "$dev")

write_config swap "device = $dev"
t_run torpor hibernate --direct
expect_rc 0 "hibernate"
# The last run of the stream one page past the device's end.
"$IMAGE_TOOL" writer-run "$dev" $((size + 4096)) || fail "image-tool writer-run"
t_run torpor status
expect_out "^stored image: +stored, damaged: the image's saved layout on $dev has run .* past the end of the device" \
	"status sees it without reading the stream"
t_run torpor verify
expect_rc 2 "verify of an image laid out past the device"
expect_err "swap: the image's saved layout on $dev has run [0-9]+ of [0-9]+ \([0-9]+ bytes at byte $((size + 4096))\) past the end of the device \($size bytes\)" \
	"verify names the run and the device's size"
grep -q "cannot read" "$ERR" && fail "verify read the stream before checking the layout"
t_run torpor_resume
expect_rc 2 "torpor-resume of an image laid out past the device"
expect_err "past the end of the device" "torpor-resume names the run"
expect_err "image refused: .*the damaged image can never be resumed: its storage goes back to the system" \
	"torpor-resume: what became of the image"
expect_swap_area "$dev" "$uuid" "$label" "after the refusal"
t_run torpor_resume
expect_rc 0 "torpor-resume after the refusal"
expect_out 'no image found' "no image after the refusal"
finish
