#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# One bad input per run: the image (or configuration) is damaged in one
# precise way, and torpor verify and torpor-resume must refuse it with a
# message saying what and where, exit 2 (refused) or 1 (configuration),
# restore nothing, and leave the image file as it was.  Resume reads the
# image once: a chunk refused half-way may come after pages were handed to
# the snapshot device, which drops them when it is closed without a restore.
# Usage: bad-input.sh CASE
. "$(dirname "$0")/lib.sh"
case_name="$1"

# A small image through checksum + lzo, 200 pages in 7 chunks; for the
# chunks refused half-way and at the end, 4000 pages in 125 chunks, so
# that the pool is full and pages were handed before the refusal.
pages=200
case "$case_name" in chunk-middle|chunk-last) pages=4000 ;; esac
# Chunks moved about must be of one length: checksum alone keeps them so.
# A first page changed in place needs the pages stored as they are.
filters="checksum lzo"
case "$case_name" in
reordered|duplicated|spliced*) filters="checksum" ;;
first-page) filters="" ;;
esac
if [ "${case_name#spliced}" != "$case_name" ]; then
	# Another image of the same size and chain, other pages, other UUID.
	write_config "sim:$((pages * 4096)):6" "$filters"
	t_run hib torpor hibernate --direct
	expect_rc 0 "hibernate (the other image)"
	cp "$IMAGE" "$WORK/other.img"
fi
write_config "sim:$((pages * 4096)):5" "$filters"
t_run hib torpor hibernate --direct
expect_rc 0 "hibernate"

damage_offset() { "$IMAGE_TOOL" offset "$IMAGE" "$@"; }
# Where chunk N's frame is in the data stream (what the messages say).
stream_offset() { echo $(( $(damage_offset frame "$1") - $(damage_offset stream) )); }

want=2
# What torpor-resume says became of the pages: before the device was
# opened, at any time while streaming, after pages were handed.
before_device="nothing was handed to the snapshot device"
streaming="nothing was (handed to the snapshot device|restored)"
handed="nothing was restored \(the [1-9][0-9]* pages? handed to the snapshot device (is|are) dropped"
pages_said=$before_device
case "$case_name" in
chunk-middle|chunk-last)
	n=62; [ "$case_name" = chunk-last ] && n=124
	"$IMAGE_TOOL" flip "$IMAGE" $(( $(damage_offset data $n) + 17 ))
	what="chunk $n at stream offset [0-9]+: .*(CRC32C|corrupt)"
	pages_said=$handed ;;
chunk-data)
	"$IMAGE_TOOL" flip "$IMAGE" $(( $(damage_offset data 3) + 17 ))
	what="chunk 3 .*(CRC32C|corrupt)"
	pages_said=$streaming ;;
chunk-frame)
	"$IMAGE_TOOL" flip "$IMAGE" $(( $(damage_offset frame 2) + 9 ))
	what="chunk 2 at stream offset [0-9]+: .*frame"
	pages_said=$streaming ;;
header)
	"$IMAGE_TOOL" flip "$IMAGE" $(( $(damage_offset header) + 100 ))
	what="header: .*(checksum|CRC)" ;;
truncated)
	# The device ends in the middle of the stream: the header, which
	# follows the stream, is gone too.
	cut=$(damage_offset frame 5)
	truncate -s "$cut" "$IMAGE"
	what="(truncated|cannot read its header)" ;;
out-of-order)
	"$IMAGE_TOOL" swap "$IMAGE" 1 2
	what="chunk 1 at stream offset [0-9]+: out of order: the frame says chunk 2"
	pages_said=$streaming ;;
reordered)
	# Chunks 1 and 2 exchanged, their frames renumbered with valid CRCs:
	# the checksum digest binds each chunk to its place.
	what="chunk 1 at stream offset $(stream_offset 1): refused by the chain"
	"$IMAGE_TOOL" reorder "$IMAGE" 1 2
	extra="checksum: chunk 1: checksum mismatch"
	pages_said=$streaming ;;
duplicated)
	what="chunk 2 at stream offset $(stream_offset 2): refused by the chain"
	"$IMAGE_TOOL" duplicate "$IMAGE" 1 2
	extra="checksum: chunk 2: checksum mismatch"
	pages_said=$streaming ;;
spliced)
	# Chunk 3 of another image, frame and all: the frame is bound to
	# the image's UUID.
	what="chunk 3 at stream offset $(stream_offset 3): frame checksum mismatch .*another image"
	"$IMAGE_TOOL" splice "$IMAGE" "$WORK/other.img" 3
	pages_said=$streaming ;;
spliced-reframed)
	# The same, framed anew for this image: the digest is bound too.
	what="chunk 3 at stream offset $(stream_offset 3): refused by the chain"
	"$IMAGE_TOOL" splice "$IMAGE" "$WORK/other.img" 3 reframe
	extra="checksum: chunk 3: checksum mismatch"
	pages_said=$streaming ;;
stored-larger)
	# The header claims a page more than the stream the writer holds
	# (its signature's length): said with both figures, not as a chunk
	# missing from the stream.
	held=$("$IMAGE_TOOL" layout "$IMAGE" | sed -n 's/^stream [0-9]* +\([0-9]*\)$/\1/p')
	"$IMAGE_TOOL" set "$IMAGE" stored_bytes $((held + 4096))
	what="^torpor(-resume)?: image refused: the header claims $((held + 4096)) stored bytes, more than the $held bytes of stream that writer 'raw' holds\$"
	pages_said=$before_device ;;
first-page)
	# The header says 200 pages, the snapshot's own first page 201.
	"$IMAGE_TOOL" first-pages "$IMAGE" 201
	what="chunk 0 at stream offset 0: the snapshot's first page says 201 pages, the image header 200"
	pages_said=$before_device ;;
test-image)
	# A --test image whose invalidation did not reach the disk.
	"$IMAGE_TOOL" set "$IMAGE" flags 1
	what="not resumable: test image" ;;
foreign-kernel)
	# A kernel that compares releases (not x86-64, whose own check
	# decides: other-kernel.sh).
	export TORPOR_SIM_KERNEL_RELEASE="9.9.9-not-this-one" TORPOR_SIM_MACHINE=aarch64
	what="written by kernel .*, this is kernel 9.9.9-not-this-one" ;;
missing-plugin)
	PLUGINDIR_OVERRIDE="$WORK/plugins"
	mkdir "$PLUGINDIR_OVERRIDE"
	for p in "$TORPOR_PLUGINDIR"/*.so; do
		[ "$(basename "$p")" = lzo.so ] || cp "$p" "$PLUGINDIR_OVERRIDE/"
	done
	what="needs filter 'lzo' \(chain position 1\), which is not installed" ;;
zeroed)
	# A zeroed device holds no image: nothing to resume, boot goes on.
	dd if=/dev/zero of="$IMAGE" bs=4096 count=64 status=none
	want=0
	what="no image found" ;;
empty)
	: >"$IMAGE"
	want=1
	what="too small to hold an image" ;;
unknown-filter)
	write_config "sim:$((200 * 4096)):5" "checksum nosuchfilter"
	t_run hib torpor hibernate --direct
	expect_rc 1 "hibernate with an unknown filter"
	expect_err "nosuchfilter" "hibernate names the unknown filter"
	finish ;;
*)
	echo "unknown case $case_name"; exit 1 ;;
esac

before=$(sha256sum "$IMAGE" | cut -d' ' -f1)
t_run verify torpor verify
expect_rc "$want" "verify"
if [ "$want" = 0 ]; then expect_out "$what" "verify"; else expect_err "$what" "verify"; fi
[ -z "${extra:-}" ] || expect_err "$extra" "verify"
grep -q "intact" "$OUT" && [ "$want" != 0 ] && fail "verify called a refused image intact"
t_run resume torpor_resume
expect_rc "$want" "torpor-resume"
if [ "$want" = 0 ]; then
	expect_out "$what" "torpor-resume"
else
	expect_err "$what" "torpor-resume"
	grep -q "pages restored" "$OUT" && fail "torpor-resume restored pages of a refused image"
	# The summary line is for a resume that reached the restore.
	grep -q "^resume: " "$OUT" && fail "torpor-resume printed a summary for a refused image"
	[ "$want" = 2 ] && expect_err "image refused: $pages_said" "torpor-resume"
fi
after=$(sha256sum "$IMAGE" | cut -d' ' -f1)
[ "$before" = "$after" ] || fail "the image changed on disk"
finish
