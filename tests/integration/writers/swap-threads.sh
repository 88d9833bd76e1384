#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The swap writer with the writer thread and worker threads, as on every
# machine with more than one CPU.  The sim keeps /dev/snapshot's lock:
# an ioctl (SNAPSHOT_ALLOC_SWAP_PAGE from the writer thread) fails with
# EBUSY while another thread is inside read().  Every call on the device
# must therefore go through one owner at a time; a cycle that lets the
# writer thread allocate while the cycle's thread reads fails here, as it
# failed in 8 of 9 real hibernations at 2 vCPUs.
. "$(dirname "$0")/lib.sh"

make_swap swap 512 "tt$$" || { echo "FAIL: losetup/mkswap"; exit 1; }
dev=$LOOP
uuid=$SWAP_UUID

# No compression: the most writes overlap the reading.  write_thread =
# yes whatever the CPU count, so that a one-CPU machine tests it too.
for chain in "" "checksum lzo"; do
	FILTERS=$chain SIM=sim:96M:11 TORPOR_EXTRA=$'write_thread = yes\nthreads = 2' \
		write_config swap "device = $dev"
	for round in 1 2 3; do
		full_cycle "chain '$chain', round $round"
		grep -q 'Device or resource busy' "$ERR" &&
			fail "chain '$chain', round $round: EBUSY from the device"
	done
	# --test runs the same threads and unfreezes instead of powering off.
	t_run torpor hibernate --direct --test -v
	expect_rc 0 "chain '$chain': hibernate --test"
	# No filter: 96 MiB of stream, so at least one early flush of the
	# device (every 64 MiB, on the writer thread) before the commit's.
	[ -n "$chain" ] ||
		expect_err "early flushes of $dev while writing: [1-9]" \
			"chain '$chain': the device flushed early"
	expect_swap_area "$dev" "$uuid" "tt$$" "chain '$chain': after --test"
done
finish
