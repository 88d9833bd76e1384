#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Faults during hibernation, on the sim source and real loop devices:
# write errors at the start, in the middle and at the commit of the swap
# and raw writers, a full device, a filter whose initialise() fails, and
# SIGKILL at random moments.  After each fault: the cycle aborted (exit
# status not 0), one line names what failed, `torpor verify` and
# torpor-resume find no image (or, after a kill that came after the
# commit, a complete image that resumes with every page verified), the
# swap area still carries its signature and swapon works, and the next
# `torpor hibernate --test` works.  The write errors come twice: with the
# writes on the cycle's thread and on the writer thread (write_thread).
#
# Usage: faults.sh BUILD_DIR CASE
#   io-start io-middle io-commit io-sync enospc full init-fails kill dm
# The write errors come from device-mapper's error target when the kernel
# has it (case dm) and otherwise from fault-inject.so, an LD_PRELOAD
# library that fails the writer's pwrite/fsync calls on one device
# (FAULT_INJECT, set by meson).  TORPOR_FAULT_SEED=N replays the kill case.
. "$(dirname "$0")/../writers/lib.sh"
CASE=${2:?usage: $0 BUILD_DIR CASE}
INJECT=${FAULT_INJECT:-$BUILD/tests/integration/fault-inject.so}
INIT_FAILS=${INIT_FAILS_PLUGIN:-$BUILD/tests/integration/init-fails.so}
[ -e "$INJECT" ] || { echo "FAIL: $INJECT is not built"; exit 1; }
[ -e "$PLUGINS/raw.so" ] || { echo "SKIP: the raw writer is not built"; exit 77; }
# An ASan build wants its runtime first; the preload comes before it.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0

# with_fault DEV VAR=VALUE... -- CMD...: run CMD with the fault injector.
with_fault() {
	local dev=$1; shift
	local vars=()
	while [ "$1" != -- ]; do vars+=("$1"); shift; done
	shift
	env LD_PRELOAD="$INJECT" TORPOR_FAULT_DEV="$dev" "${vars[@]}" "$@"
}

# swap_intact DEV WHAT: still a swap area, and swapon takes it.
swap_intact() {
	[ "$(blkid -p -o value -s TYPE "$1")" = swap ] ||
		fail "$2: $1 is no longer a swap area ($(blkid -p "$1"))"
	if swapon "$1"; then swapoff "$1"; else fail "$2: swapon $1 failed"; fi
}

# no_image WHAT: neither verify nor torpor-resume finds an image.
no_image() {
	t_run torpor verify
	expect_rc 0 "$1: verify"
	expect_out 'no image found' "$1: verify finds no image"
	t_run torpor_resume
	expect_rc 0 "$1: torpor-resume"
	expect_out 'no image found' "$1: torpor-resume finds no image"
}

# next_works WHAT: the next hibernation (no fault) works.
next_works() {
	t_run torpor hibernate --test
	expect_rc 0 "$1: the next hibernate --test"
	expect_out '^hibernate \(test\): [0-9]+ pages' "$1: the next hibernate --test"
}

# aborted WHAT REGEX: the faulty hibernate failed and said why in a line
# matching REGEX.
aborted() {
	[ "$rc" -ne 0 ] || fail "$1: hibernate exited 0 despite the fault"
	expect_err "$2" "$1: the line that says what failed"
	grep -q '^hibernate' "$OUT" && fail "$1: a summary line after a failed cycle"
}

# fault_cycle WRITER DEV WHAT REGEX VAR=VALUE...: one faulty hibernation
# and every check after it.
fault_cycle() {
	local writer=$1 dev=$2 what=$3 regex=$4; shift 4
	t_run with_fault "$dev" "$@" -- "$TORPOR_BIN" --config "$CONF" \
		--plugin-dir "$PLUGINS" hibernate --direct
	grep -q '^fault-inject: ' "$ERR" || fail "$what: no fault was injected"
	aborted "$what" "$regex"
	local said
	said=$(grep -E -m1 -- "$regex" "$ERR")
	no_image "$what"
	[ "$writer" = swap ] && swap_intact "$dev" "$what"
	next_works "$what"
	[ "$writer" = swap ] && swap_intact "$dev" "$what (after --test)"
	echo "ok: $what: $said"
}

swap_dev() {
	make_loop swap 256 || { echo "FAIL: losetup"; exit 1; }
	mkswap -L "tpf$$" "$LOOP" >/dev/null || { echo "FAIL: mkswap"; exit 1; }
	write_config swap "device = $LOOP"
}

raw_dev() {
	make_loop raw 256 || { echo "FAIL: losetup"; exit 1; }
	write_config raw "device = $LOOP"
}

io_error='could not (write|commit).*Input/output error'
# The write errors again with the writes on the writer thread.
wt="write_thread = yes"
case $CASE in
io-start)
	# Every write fails: the first data write is refused.
	swap_dev
	fault_cycle swap "$LOOP" "swap, error from the start" "writer 'swap' $io_error" \
		TORPOR_FAULT_FROM=0
	TORPOR_EXTRA=$wt write_config swap "device = $LOOP"
	fault_cycle swap "$LOOP" "swap, error from the start, writer thread" \
		"writer 'swap' $io_error" TORPOR_FAULT_FROM=0
	raw_dev
	fault_cycle raw "$LOOP" "raw, error from the start" \
		"raw.*Input/output error" TORPOR_FAULT_FROM=0
	TORPOR_EXTRA=$wt write_config raw "device = $LOOP"
	fault_cycle raw "$LOOP" "raw, error from the start, writer thread" \
		"raw.*Input/output error" TORPOR_FAULT_FROM=0
	;;
io-middle)
	# As a linear table that ends in an error target 8 MiB in: the
	# stream (about 22 MiB) breaks in the middle.
	swap_dev
	fault_cycle swap "$LOOP" "swap, error in the middle" "writer 'swap' $io_error" \
		TORPOR_FAULT_FROM=$((8 << 20))
	TORPOR_EXTRA=$wt write_config swap "device = $LOOP"
	fault_cycle swap "$LOOP" "swap, error in the middle, writer thread" \
		"writer 'swap' $io_error" TORPOR_FAULT_FROM=$((8 << 20))
	raw_dev
	fault_cycle raw "$LOOP" "raw, error in the middle" "writer 'raw' $io_error" \
		TORPOR_FAULT_FROM=$((8 << 20))
	TORPOR_EXTRA=$wt write_config raw "device = $LOOP"
	fault_cycle raw "$LOOP" "raw, error in the middle, writer thread" \
		"writer 'raw' $io_error" TORPOR_FAULT_FROM=$((8 << 20))
	;;
io-commit)
	# The swap header page (written last, at the commit) cannot be
	# written: the stream is complete, the signature is not.
	swap_dev
	fault_cycle swap "$LOOP" "swap, error at the commit" \
		"writer 'swap' could not commit.*Input/output error" \
		TORPOR_FAULT_FROM=0 TORPOR_FAULT_TO=4096
	;;
io-sync)
	# The flush before the signature fails (the raw writer syncs once
	# at the reserve, when it clears an old signature).
	swap_dev
	fault_cycle swap "$LOOP" "swap, flush fails at the commit" \
		"writer 'swap' could not commit.*Input/output error" TORPOR_FAULT_SYNC=1
	raw_dev
	fault_cycle raw "$LOOP" "raw, flush fails at the commit" \
		"writer 'raw' could not commit.*Input/output error" TORPOR_FAULT_SYNC=2
	;;
enospc)
	# The raw writer on an image file whose filesystem fills up halfway.
	make_loop fs 128 || { echo "FAIL: losetup"; exit 1; }
	make_ext4 "$LOOP" "$WORK/mnt" || { echo "FAIL: mkfs/mount"; exit 1; }
	(umask 077 && : >"$WORK/mnt/image")
	write_config raw "device = $WORK/mnt/image"
	fault_cycle raw "$WORK/mnt/image" "raw file, filesystem full halfway" \
		"writer 'raw' could not write.*No space left on device" \
		TORPOR_FAULT_FROM=$((8 << 20)) TORPOR_FAULT_ENOSPC=1
	TORPOR_EXTRA=$wt write_config raw "device = $WORK/mnt/image"
	fault_cycle raw "$WORK/mnt/image" "raw file, filesystem full halfway, writer thread" \
		"writer 'raw' could not write.*No space left on device" \
		TORPOR_FAULT_FROM=$((8 << 20)) TORPOR_FAULT_ENOSPC=1
	;;
full)
	# Too small for the image: refused before anything is written, with
	# the sizes.
	make_loop small 8 || { echo "FAIL: losetup"; exit 1; }
	mkswap "$LOOP" >/dev/null || { echo "FAIL: mkswap"; exit 1; }
	write_config swap "device = $LOOP"
	t_run torpor hibernate --direct
	aborted "full swap" 'swap: need [0-9]+ MiB, [0-9]+ MiB free'
	no_image "full swap"
	swap_intact "$LOOP" "full swap"
	make_loop fs 24 || { echo "FAIL: losetup"; exit 1; }
	make_ext4 "$LOOP" "$WORK/mnt" || { echo "FAIL: mkfs/mount"; exit 1; }
	(umask 077 && : >"$WORK/mnt/image")
	write_config raw "device = $WORK/mnt/image"
	t_run torpor hibernate --direct
	aborted "full filesystem" 'raw: need [0-9]+ MiB, [0-9]+ MiB free'
	[ -s "$WORK/mnt/image" ] && fail "full filesystem: the image file was written"
	# The next cycle works once there is room.
	SIM=sim:8M:3 write_config raw "device = $WORK/mnt/image"
	next_works "full filesystem, smaller image"
	;;
init-fails)
	# A filter whose initialise() fails: nothing is written.
	[ -e "$INIT_FAILS" ] || { echo "FAIL: $INIT_FAILS is not built"; exit 1; }
	mkdir -m 0755 "$WORK/plugins"
	cp "$PLUGINS"/*.so "$INIT_FAILS" "$WORK/plugins/"
	swap_dev
	page0=$(dd if="$LOOP" bs=4096 count=1 status=none | sha256sum)
	write_config swap "device = $LOOP"
	sed -i 's/^filters = .*/filters = init-fails lzo/' "$CONF"
	t_run "$TORPOR_BIN" --config "$CONF" --plugin-dir "$WORK/plugins" hibernate --direct
	aborted "initialise fails" "filter 'init-fails' did not initialise.*Input/output error"
	no_image "initialise fails"
	[ "$(dd if="$LOOP" bs=4096 count=1 status=none | sha256sum)" = "$page0" ] ||
		fail "initialise fails: the swap header page changed"
	swap_intact "$LOOP" "initialise fails"
	write_config swap "device = $LOOP"
	next_works "initialise fails"
	;;
kill)
	# SIGKILL at random moments of a 384 MiB hibernation to swap.
	make_loop swap 512 || { echo "FAIL: losetup"; exit 1; }
	mkswap "$LOOP" >/dev/null || { echo "FAIL: mkswap"; exit 1; }
	SIM=sim:384M:5 write_config swap "device = $LOOP"
	start=${EPOCHREALTIME/./}
	next_works "before the kills"
	span=$(((${EPOCHREALTIME/./} - start) / 1000))
	seed=${TORPOR_FAULT_SEED:-$((RANDOM))}
	echo "kill: seed $seed (TORPOR_FAULT_SEED=$seed replays), a cycle takes ${span} ms"
	RANDOM=$seed
	none=0 complete=0
	for i in $(seq 1 12); do
		delay=$((RANDOM % (span + span / 4 + 1)))
		# The program itself, not a shell around it, gets the signal.
		"$TORPOR_BIN" --config "$CONF" --plugin-dir "$PLUGINS" \
			hibernate --direct >"$OUT" 2>"$ERR" &
		pid=$!
		sleep "$((delay / 1000)).$(printf '%03d' $((delay % 1000)))"
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		krc=$?
		t_run torpor verify
		expect_rc 0 "kill $i after $delay ms: verify"
		if grep -q 'no image found' "$OUT"; then
			none=$((none + 1))
			swap_intact "$LOOP" "kill $i after $delay ms"
			state="no image, swap intact"
		elif grep -q 'image is intact' "$OUT"; then
			# The kill came after the commit: the image is whole.
			complete=$((complete + 1))
			t_run torpor_resume
			expect_rc 0 "kill $i after $delay ms: resume of the complete image"
			expect_out 'resume: [0-9]+ pages restored and verified' \
				"kill $i after $delay ms: every page verified"
			swap_intact "$LOOP" "kill $i after $delay ms, after the resume"
			state="complete image (exit $krc), resumed"
		else
			fail "kill $i after $delay ms: verify says neither 'no image' nor 'intact'"
			state=bad
		fi
		echo "kill $i after $delay ms: $state"
	done
	echo "kill: $none left no image, $complete a complete image"
	next_works "after the kills"
	;;
dm)
	# The same faults in the kernel: a linear table over a loop device
	# that ends in an error target 8 MiB in.
	why=
	command -v dmsetup >/dev/null || why="dmsetup is not installed"
	[ -z "$why" ] && ! dmsetup targets 2>/dev/null | grep -q '^error' &&
		why="the kernel has no device-mapper (modprobe dm_mod: $(modprobe dm_mod 2>&1 | head -n 1))"
	if [ -n "$why" ]; then
		echo "********************************************************"
		echo "SKIP: faults-dm: $why."
		echo "The same write errors are injected by fault-inject.so in"
		echo "faults-io-start, faults-io-middle, faults-io-commit and"
		echo "faults-io-sync; the VM suite's power-cut case cuts QEMU."
		echo "********************************************************"
		exit 77
	fi
	make_loop dm 256 || { echo "FAIL: losetup"; exit 1; }
	mkswap "$LOOP" >/dev/null || { echo "FAIL: mkswap"; exit 1; }
	name=torpor-faults-$$
	sectors=$((256 * 2048)) cut=$((8 * 2048))
	printf '0 %d linear %s 0\n%d %d error\n' "$cut" "$LOOP" "$cut" \
		$((sectors - cut)) | dmsetup create "$name" || { echo "FAIL: dmsetup create"; exit 1; }
	UNDO+=("dmsetup remove --retry $name")
	udevadm settle 2>/dev/null
	dm=/dev/mapper/$name
	[ -b "$dm" ] || dm=/dev/dm-$(dmsetup info -c --noheadings -o minor "$name" | tr -d ' ')
	write_config swap "device = $dm"
	t_run torpor hibernate --direct
	aborted "dm error target" "writer 'swap' $io_error"
	no_image "dm error target"
	# The whole device mapped again (the loop device is dm's now: swapon
	# goes through dm): the swap area and the next cycle work.
	if printf '0 %d linear %s 0\n' "$sectors" "$LOOP" | dmsetup reload "$name"; then
		dmsetup resume "$name" || fail "dmsetup resume"
	else
		fail "dmsetup reload"
	fi
	swap_intact "$dm" "dm error target"
	next_works "dm error target"
	;;
*)
	echo "FAIL: unknown case $CASE"
	exit 1
	;;
esac
finish
