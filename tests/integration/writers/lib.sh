# SPDX-License-Identifier: GPL-2.0-or-later
# Shared helpers of the writer integration tests (sourced).  Each script
# takes the build directory as $1 and exits 0 (pass), 1 (fail) or 77 (skip:
# not root, or a tool is missing).  Loop devices, mounts and swap areas made
# here are undone on every exit path.
set -u

BUILD=${1:?usage: $0 BUILD_DIR}
BUILD=$(cd "$BUILD" && pwd)
TORPOR_BIN=${TORPOR:-$BUILD/src/torpor/torpor}
RESUME_BIN=${TORPOR_RESUME:-$BUILD/src/torpor-resume/torpor-resume-sim}
PLUGINS=${TORPOR_PLUGINDIR:-$BUILD/plugins}

if [ "$(id -u)" != 0 ]; then
	echo "SKIP: needs root (loop devices, mount, swapon)"
	exit 77
fi
for tool in losetup mkswap swapon swapoff blkid mkfs.ext4 e2fsck filefrag sha256sum; do
	command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool is missing"; exit 77; }
done
for f in "$TORPOR_BIN" "$RESUME_BIN" "$PLUGINS/swap.so" "$PLUGINS/file.so"; do
	[ -e "$f" ] || { echo "FAIL: $f is not built"; exit 1; }
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/torpor-writers-it.XXXXXX")
CONF="$WORK/torpor.conf"
CMDLINE="$WORK/cmdline"
OUT="$WORK/out"
ERR="$WORK/err"
: >"$CMDLINE"
UNDO=()
failures=0

cleanup() {
	local i
	for ((i = ${#UNDO[@]} - 1; i >= 0; i--)); do
		eval "${UNDO[i]}" >/dev/null 2>&1
	done
	rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*"
	echo "--- stdout"; cat "$OUT" 2>/dev/null
	echo "--- stderr"; cat "$ERR" 2>/dev/null
	failures=$((failures + 1))
}

# make_loop NAME MIB: a loop device on a sparse backing file, in $LOOP.
# (Not through $(...): the undo list must be kept in this shell.)
make_loop() {
	local img="$WORK/$1.img"
	LOOP=
	truncate -s "$2M" "$img" || return 1
	LOOP=$(losetup -f --show "$img") || return 1
	UNDO+=("losetup -d $LOOP")
}

# make_swap NAME MIB LABEL: a swap area with LABEL on a new loop device,
# in $LOOP; its UUID in $SWAP_UUID.
make_swap() {
	make_loop "$1" "$2" && mkswap -L "$3" "$LOOP" >/dev/null || return 1
	SWAP_UUID=$(blkid -p -o value -s UUID "$LOOP")
}

# expect_swap_area DEV UUID LABEL WHAT: DEV is still that swap area and
# swapon takes it.
expect_swap_area() {
	[ "$(blkid -p -o value -s TYPE "$1")" = swap ] || fail "$4: blkid TYPE"
	[ "$(blkid -p -o value -s UUID "$1")" = "$2" ] || fail "$4: UUID changed"
	[ "$(blkid -p -o value -s LABEL "$1")" = "$3" ] || fail "$4: label changed"
	swapon "$1" && swapoff "$1" || fail "$4: swapon"
}

# make_ext4 LOOP MNT
make_ext4() {
	mkfs.ext4 -q -F -b 4096 "$1" && mkdir -p "$2" && mount "$1" "$2" || return 1
	UNDO+=("umount $2")
}

# make_swap_file_fs LABEL: a 256 MiB swap file (root's, 0600) labelled
# LABEL on a fresh ext4 loop device mounted on $WORK/mnt; sets FSDEV, MNT
# and SW, or exits with FAIL.
make_swap_file_fs() {
	make_loop fs 512 || { echo "FAIL: losetup"; exit 1; }
	FSDEV=$LOOP
	MNT="$WORK/mnt"
	make_ext4 "$FSDEV" "$MNT" || { echo "FAIL: mkfs/mount"; exit 1; }
	SW="$MNT/swapfile"
	dd if=/dev/zero of="$SW" bs=1M count=256 status=none conv=fsync &&
		chmod 600 "$SW" && mkswap -L "$1" "$SW" >/dev/null ||
		{ echo "FAIL: mkswap on a file"; exit 1; }
}

# The filters for the cycle: lzo and checksum when built.
filters() {
	local f=""
	[ -e "$PLUGINS/checksum.so" ] && f="checksum"
	[ -e "$PLUGINS/lzo.so" ] && f="$f lzo"
	echo "$f"
}

# write_config WRITER SECTION_LINES...  ($SIM: the sim spec, $FILTERS: the
# chain instead of filters(), $TORPOR_EXTRA: more [torpor] lines)
write_config() {
	local writer="$1"; shift
	{
		echo "[torpor]"
		echo "snapshot = ${SIM:-sim:64M:3}"
		echo "filters = ${FILTERS-$(filters)}"
		echo "writer = $writer"
		[ -z "${TORPOR_EXTRA:-}" ] || echo "$TORPOR_EXTRA"
		echo
		echo "[$writer]"
		for line in "$@"; do echo "$line"; done
	} >"$CONF"
}

t_run() { "$@" >"$OUT" 2>"$ERR"; rc=$?; }
torpor() { "$TORPOR_BIN" --config "$CONF" --plugin-dir "$PLUGINS" "$@"; }
torpor_resume() { "$RESUME_BIN" --config "$CONF" --plugin-dir "$PLUGINS" --cmdline "$CMDLINE" "$@"; }

expect_rc() { [ "$rc" -eq "$1" ] || fail "$2: exit status $rc, expected $1"; }
expect_out() { grep -Eq -- "$1" "$OUT" || fail "$2: stdout lacks /$1/"; }
expect_err() { grep -Eq -- "$1" "$ERR" || fail "$2: stderr lacks /$1/"; }
# expect_err_line TEXT WHAT: TEXT is a whole line of stderr.
expect_err_line() { grep -Fxq -- "$1" "$ERR" || fail "$2: stderr lacks the line '$1'"; }

# full_cycle WHAT: hibernate on the sim source, name the location with
# resume-args, resume from those words alone, and check that the image is
# gone afterwards.
full_cycle() {
	local what="$1"
	t_run torpor hibernate --direct
	expect_rc 0 "$what: hibernate"
	expect_out '^hibernate: [0-9]+ pages' "$what: hibernate summary"
	t_run torpor status
	expect_out '^stored image: +stored \(header valid' "$what: status after hibernate"
	expect_out '^free space: +[1-9][0-9.]* MiB for the image' "$what: the writer's free space"
	t_run torpor resume-args
	expect_rc 0 "$what: resume-args"
	# Words only where the next boot needs them: a location inside a
	# file system; a partition or a device is found through the
	# configuration, and a resume= word would be in the way.
	if [ "${LOCATION_IN_FS:-}" = yes ]; then
		expect_out '^resume=[^ ]+ resume_offset=[0-9]+$' "$what: resume-args words"
	else
		[ -s "$OUT" ] && fail "$what: resume-args printed words that are not needed"
		expect_err "resume-args: no kernel command line word is needed: torpor-resume finds the image \(resume=[^ ]+\) through the configuration" \
			"$what: resume-args says none is needed"
	fi
	cp "$OUT" "$CMDLINE"
	t_run torpor verify
	expect_rc 0 "$what: verify"
	t_run torpor_resume
	expect_rc 0 "$what: torpor-resume"
	expect_out 'resume: [0-9]+ pages restored and verified' "$what: every page verified"
	t_run torpor_resume
	expect_rc 0 "$what: second torpor-resume"
	expect_out 'no image found' "$what: the image is gone after a resume"
	: >"$CMDLINE"
}

# no_lookup_after_snapshot WHAT DIR: a cycle on the sim source under
# strace; from the snapshot (torpor -v's "snapshot" phase line) to the
# thaw, no system call names a path under DIR, the mount point of the
# writer's filesystem.  The kernel keeps its freezable workqueues frozen
# after the snapshot, and btrfs ends its reads of tree blocks there: a
# lookup that must read the filesystem then waits forever (seen in
# distro-btrfs, doc/writers.md).  Leaves the image stored.  (LeakSanitizer
# does not work under ptrace: off for this run of a sanitizer build.)
no_lookup_after_snapshot() {
	local log=$WORK/strace.log
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		strace -f -qq -s 400 -e trace=%file,write -o "$log" \
		"$TORPOR_BIN" --config "$CONF" --plugin-dir "$PLUGINS" hibernate --direct -v \
		>"$OUT" 2>"$ERR"
	rc=$?
	expect_rc 0 "$1: hibernate under strace"
	grep -q 'write(2, "torpor: snapshot ' "$log" || fail "$1: no snapshot phase line under strace"
	grep -q 'write(2, "torpor: thawing' "$log" || fail "$1: no thaw line under strace"
	sed -n '/write(2, "torpor: snapshot /,/write(2, "torpor: thawing/p' "$log" |
		grep -F -- "\"$2/" >"$WORK/lookups"
	[ -s "$WORK/lookups" ] &&
		fail "$1: paths under $2 looked up after the snapshot: $(head -n 3 "$WORK/lookups")"
	return 0
}

finish() {
	if [ "$failures" -ne 0 ]; then
		echo "$failures check(s) failed"
		exit 1
	fi
	echo "PASS"
	exit 0
}
