#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A damaged image in a swap partition: torpor-resume refuses it (exit 2),
# says the image can never be resumed and that the area goes back to the
# system, and the swap signature, UUID and label are back: swapon works
# and the next torpor-resume finds no image.
. "$(dirname "$0")/lib.sh"

label=tb$$
make_swap swapbad 256 "$label" || { echo "FAIL: losetup/mkswap"; exit 1; }
dev=$LOOP
uuid=$SWAP_UUID

write_config swap "device = $dev"
t_run torpor hibernate --direct
expect_rc 0 "hibernate"
t_run torpor resume-args
expect_rc 0 "resume-args"
cp "$OUT" "$CMDLINE"
# The sim source's pages are allocated front to back after the header
# page: 16 KiB of ones from byte 64 KiB on land in the data stream.
dd if=/dev/zero bs=16384 count=1 status=none | tr '\0' '\377' |
	dd of="$dev" bs=16384 seek=4 conv=notrunc status=none
t_run torpor verify
expect_rc 2 "verify of the damaged image"
expect_err "chunk [0-9]+ at stream offset [0-9]+" "verify says which chunk"
t_run torpor_resume
expect_rc 2 "torpor-resume of the damaged image"
expect_err "image refused: .*the damaged image can never be resumed: its storage goes back to the system" \
	"what became of the image"
if grep -q "left as it was" "$ERR"; then
	fail "torpor-resume says the image was left as it was"
fi
expect_swap_area "$dev" "$uuid" "$label" "after the refusal"
t_run torpor_resume
expect_rc 0 "torpor-resume after the refusal"
expect_out 'no image found' "no image after the refusal"
finish
