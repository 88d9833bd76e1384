#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# One case of the VM suite: boot Debian's kernel under QEMU (TCG) up to
# three times on one sparse disk image.
#   boot 1  the marker starts, then the machine hibernates and powers off
#   boot 2  the resume hook restores the image: the marker prints the same
#           token and checksum, `torpor hibernate` exits 0, power off
#   boot 3  no image any more: a normal boot
# Negative cases change what happens between or during the boots.
#
# Usage: run-case.sh CASE BUILDDIR [LOGDIR]
#   LOGDIR (default BUILDDIR/tests/vm/vm-logs/CASE) keeps each boot's serial
#   log, host-timestamped (seconds since QEMU started), and timing.txt.
# Exit: 0 passed, 1 failed, 77 QEMU cannot run here at all.
# Environment: TORPOR_VM_TIMEOUT_SCALE (default 1) stretches every timeout;
# TORPOR_VM_APPEND adds to every boot's kernel command line (debugging);
# TORPOR_VM_KEEP_DISK=1 keeps LOGDIR/disk.img.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 2 ] || { echo "usage: $0 CASE BUILDDIR [LOGDIR]" >&2; exit 1; }
case_name=$1
builddir=$(cd "$2" && pwd)
logdir=${3:-$builddir/tests/vm/vm-logs/$case_name}
mkdir -p "$logdir"
logdir=$(cd "$logdir" && pwd)
scale=${TORPOR_VM_TIMEOUT_SCALE:-1}

MEM=512
. "$here/qemu-lib.sh"

# --- Can QEMU run at all? (the only reason to skip) -----------------------
if ! command -v qemu-system-x86_64 >/dev/null || ! command -v mkfs.btrfs >/dev/null ||
   ! ls /boot/vmlinuz-* >/dev/null 2>&1 || ! command -v busybox >/dev/null; then
	"$here/install-deps.sh"
	case $? in
	0) ;;
	77) skip "QEMU, a kernel or busybox is missing and cannot be installed" ;;
	*) skip "installing QEMU, the kernel or busybox failed" ;;
	esac
fi
command -v qemu-system-x86_64 >/dev/null || skip "no qemu-system-x86_64"
qemu-system-x86_64 -version >/dev/null 2>&1 ||
	skip "qemu-system-x86_64 does not start"

# --- The case -------------------------------------------------------------
# writer: raw | swap | kernel; part: "" (whole disk) or 1 (one partition)
writer=raw filters="lzo checksum" test_mode=0 boots=3 mem2=$MEM append1= append2=
flip=0 expect=resume after=poweroff daemon=0 s2h= conf_extra=
# fs: the writer's storage is a file on a partition that the host makes:
# swapfile (a swap file, the swap writer) or imagefile (the file writer's
# image, made by torpor file-setup); boot 1 mounts it.  fstype: that
# partition's filesystem, ext4 or btrfs.  zram: boot 1 also swaps on zram.
fs= fstype=ext4 zram=0
# expect_wt: 1, boot 1 must have written on the writer thread (which
# `auto` turns on with more than one CPU); 0, on the cycle's own thread.
expect_wt=
# Every case boots 2 vCPUs (qemu-lib.sh) but one-cpu.
case "$case_name" in
kernel-baseline) writer=kernel ;;
raw-lzo) append1=torpor.verbose=1 expect_wt=1 ;;
# The one-CPU paths: no worker thread, no writer thread, resume decoding
# on its own thread (session.c, pool.c).
one-cpu) vm_smp=1 writer=swap filters="lz4 checksum" append1=torpor.verbose=1 expect_wt=0 ;;
reboot-lzo) after=reboot ;;
daemon-lzo) daemon=1 ;;
# Suspend to RAM (S3), woken by the RTC after 3 s, then hibernate.
suspend-then-hibernate) s2h=3 ;;
# The same, woken through QMP before the alarm: it must stay up.
suspend-then-hibernate-early) s2h=60 expect=test ;;
# --test at 2 vCPUs: the same threads as a hibernation (the writer
# thread taking swap pages from the kernel), as `torpor setup` runs it.
test-mode) writer=swap filters="lz4 checksum" test_mode=1 expect=test append1=torpor.verbose=1 expect_wt=1 ;;
# after = suspend (suspend to both), woken from RAM through QMP.
suspend-both) writer=swap filters="lz4 checksum" after=suspend expect=test append1=torpor.verbose=1 expect_wt=1 ;;
corrupt) flip=1 expect=refused ;;
wrong-mem) mem2=768 expect=refused ;;
noresume) append2=noresume expect=noresume ;;
# The swap writer takes its pages from the kernel on the writer thread
# while the cycle's thread reads the snapshot: what failed with EBUSY at
# 2 vCPUs before every call went through one owner.
swap-lz4) writer=swap filters="lz4 checksum" append1=torpor.verbose=1 expect_wt=1 ;;
corrupt-swap) writer=swap filters="lz4 checksum" flip=1 expect=refused ;;
swap-crypt) writer=swap filters="zlib crypt" ;;
swapfile-lz4) writer=swap fs=swapfile filters="lz4 checksum" append1=torpor.verbose=1 expect_wt=1 ;;
file-lzo) writer=file fs=imagefile append1=torpor.verbose=1 expect_wt=1 ;;
# Fedora's layout: btrfs, zram swap, the image in a file on btrfs whose
# device offsets come from the chunk map.  The swap file is made as
# Fedora's guide says (btrfs filesystem mkswapfile: NOCOW, fallocated);
# the image file by torpor file-setup.
swapfile-btrfs) writer=swap fs=swapfile fstype=btrfs zram=1 filters="lz4 checksum" append1=torpor.verbose=1 expect_wt=1 ;;
file-btrfs) writer=file fs=imagefile fstype=btrfs zram=1 filters="lz4 checksum" append1=torpor.verbose=1 expect_wt=1 ;;
# The kernel's own hibernation against torpor's chains: tests/vm/perf.sh.
perf) writer=swap filters="lz4 lzo" ;;
power-cut) writer=swap filters="lz4 checksum" expect=cuts ;;
kill-thaw) filters="zlib checksum" test_mode=1 expect=kills ;;
lockdown) expect=lockdown ;;
*) echo "run-case: unknown case '$case_name'" >&2; exit 1 ;;
esac

guest=$logdir/guest
rm -f "$logdir"/boot*.log "$logdir/timing.txt" "$logdir/steps.txt"
mkdir -p "$guest"
disk=$logdir/disk.img
rm -f "$disk"
truncate -s 1G "$disk"

# le32 N: N as four little-endian bytes, in printf escapes.
le32() {
	printf '\\%03o\\%03o\\%03o\\%03o' $(($1 & 255)) $((($1 >> 8) & 255)) \
		$((($1 >> 16) & 255)) $((($1 >> 24) & 255))
}
# write_mbr DISK START SECTORS [TYPE]: one primary partition, of TYPE (an
# octal printf escape; default \202, 0x82: Linux swap).
write_mbr() {
	local entry
	entry="\\000\\000\\000\\000${4:-\\202}\\000\\000\\000$(le32 "$2")$(le32 "$3")"
	printf "$entry" | dd of="$1" bs=1 seek=446 conv=notrunc 2>/dev/null
	printf '\125\252' | dd of="$1" bs=1 seek=510 conv=notrunc 2>/dev/null
}

dev=/dev/vda
part_offset=0
if [ -n "$fs" ]; then
	# An ext4 partition (0x83) that holds the swap file or image file.
	write_mbr "$disk" 2048 $((1024 * 2048 - 2048)) '\203'
	dev=/dev/vda1
	part_offset=$((2048 * 512))
elif [ "$writer" = swap ]; then
	# A swap partition, as on a real machine: an MBR with one partition
	# of type 82 (Linux swap) from sector 2048 to the end.
	write_mbr "$disk" 2048 $((1024 * 2048 - 2048))
	dev=/dev/vda1
	part_offset=$((2048 * 512))
fi

# The plugins this case names must be in the build: a missing one fails.
if [ "$writer" != kernel ]; then
	for p in $writer $filters; do
		[ -f "$builddir/plugins/$p.so" ] ||
			{ echo "vm: FAIL $case_name: plugin $p.so is not in $builddir/plugins" >&2; exit 1; }
	done
	for p in src/torpor/torpor src/torpor-resume/torpor-resume src/torpord/torpord; do
		[ -x "$builddir/$p" ] ||
			{ echo "vm: FAIL $case_name: $builddir/$p is not built" >&2; exit 1; }
	done
fi

# write_conf FILE FILTERS [LINE] [TEXT]: the case's torpor.conf with that
# chain (and LINE in [torpor], TEXT at the end).
write_conf() {
	{
		echo "# VM suite case $case_name"
		echo "[torpor]"
		echo "writer = $writer"
		echo "filters = $2"
		echo "plugin_dir = /usr/lib/torpor/plugins"
		echo "after = $after"
		[ -z "${3:-}" ] || echo "$3"
		# The guest runs from the initramfs the host built (QEMU
		# -initrd), which holds torpor-resume and this file: no /boot
		# to check.
		echo "initramfs = none"
		# The last cycle's figures (status reads them after the
		# resume), whatever prefix the build has.
		echo "state_dir = /var/lib/torpor"
		echo
		echo "[$writer]"
		echo "$storage"
		case "$2" in
		*crypt*)
			echo
			echo "[crypt]"
			echo "mode = keyfile"
			echo "key_file = /etc/torpor/crypt.keyfile"
			;;
		esac
		[ -z "${4:-}" ] || printf '\n%s\n' "$4"
	} >"$1"
}
# The writer's storage, as the guest names it.
case "$fs" in
swapfile) storage="device = /mnt/swapfile" ;;
imagefile) storage="path = /mnt/torpor/image" ;;
*) storage="device = $dev" ;;
esac
conf=$guest/torpor.conf
files=()
write_conf "$conf" "$filters" "$conf_extra"
files+=(-f "$conf=/etc/torpor/torpor.conf")
if [ "$case_name" = perf ]; then
	# One guest for every mode: each chain's configuration is in it,
	# picked on the kernel command line (torpor.conf=NAME); NAME-wt:
	# the same chain written on the writer thread; NAME-c128: with
	# chunk_pages = 128; lz4-aN: lz4 with [lz4] acceleration = N.
	for f in lz4 lzo none lz4-wt none-wt lz4-a4 lz4-a16 none-c128 \
		 lz4-a16-c128; do
		c=${f%-wt} extra= section=
		[ "$f" != "${f%-wt}" ] && extra="write_thread = yes"
		[ "$f" != "${f%-c128}" ] && c=${f%-c128} extra="chunk_pages = 128"
		[ "$c" = none ] && c=
		case "$c" in
		lz4-a*) section=$(printf '[lz4]\nacceleration = %s' "${c#lz4-a}") c=lz4 ;;
		esac
		write_conf "$guest/perf-$f.conf" "$c" "$extra" "$section"
		files+=(-f "$guest/perf-$f.conf=/etc/torpor/perf-$f.conf")
	done
fi
case "$filters" in
*crypt*)
	# A fresh key per run, only inside the initramfs (the disk image
	# holds nothing but ciphertext).
	head -c 32 /dev/urandom >"$guest/crypt.keyfile"
	chmod 600 "$guest/crypt.keyfile"
	files+=(-f "$guest/crypt.keyfile=/etc/torpor/crypt.keyfile")
	;;
esac

if [ -n "$s2h" ]; then
	# A system-sleep hook that says each step on the console.
	printf '#!/bin/sh\necho "VM: hook $1 $2 $SYSTEMD_SLEEP_ACTION"\n' >"$guest/sleep-hook"
	chmod 755 "$guest/sleep-hook"
	files+=(-f "$guest/sleep-hook=/usr/lib/systemd/system-sleep/10-vm")
fi

opt_t=()
[ "$writer" = kernel ] && opt_t=(-T)
[ -n "$fs" ] && opt_t+=(-m "$fstype")
[ "$zram" = 1 ] && opt_t+=(-m zram)
[ "$case_name" = perf ] && opt_t+=(-m lz4)
# build_guest: the kernel and the initramfs in $guest (perf.sh builds it
# again for each kernel it compares, TORPOR_VM_KERNEL_ROOT set).
build_guest() {
	local rc=0
	# (Not `if ! CMD; then rc=$?`: that is the status of the `!`, 0.)
	"$here/build-initramfs.sh" "${opt_t[@]}" "${files[@]}" "$builddir" "$guest" \
		>"$logdir/build-initramfs.log" 2>&1 || rc=$?
	if [ "$rc" != 0 ]; then
		cat "$logdir/build-initramfs.log" >&2
		[ "$rc" = 77 ] && skip "no kernel to boot"
		echo "vm: FAIL $case_name: building the initramfs failed" >&2
		exit 1
	fi
	kernel=$(cat "$guest/kernel.path")
	initrd=$guest/initramfs.cpio
}
build_guest

# --- The filesystem of the fs cases, made on the host ---------------------
# resume_words: the kernel command line's resume location: the device,
# or for a file what `torpor resume-args` says (the filesystem's UUID and
# the file's first page), as a user would put it there.
resume_words="resume=$dev"
fs_page0=
# fs_loop: the partition on a loop device; its path in $fs_dev.
fs_loop() {
	fs_dev=$(losetup -f --show -o "$part_offset" \
		--sizelimit $((1024 * 1024 * 1024 - part_offset)) "$disk")
}
make_fs() {
	local mnt=$logdir/mnt hostconf=$logdir/host.conf rc=0
	fs_loop || return 1
	mkdir -p "$mnt"
	local mkfs=(mkfs.ext4 -q -F -b 4096)
	[ "$fstype" = btrfs ] && mkfs=(mkfs.btrfs -q -f)
	if ! "${mkfs[@]}" "$fs_dev" >"$logdir/mkfs.log" 2>&1 || ! mount "$fs_dev" "$mnt"; then
		losetup -d "$fs_dev"
		return 1
	fi
	# The host's view of the guest's configuration: the same storage
	# under the host's mount point, the sim so that nothing here
	# touches the host's /dev/snapshot.
	printf '[torpor]\nsnapshot = sim\nwriter = %s\nfilters =\nplugin_dir = %s\n\n[%s]\n%s\n' \
		"$writer" "$builddir/plugins" "$writer" "${storage/\/mnt/$mnt}" >"$hostconf"
	[ "$fs" = imagefile ] && echo "size = 256M" >>"$hostconf"
	case $fs in
	swapfile)
		if [ "$fstype" = btrfs ]; then
			btrfs filesystem mkswapfile -s 256m "$mnt/swapfile" >"$logdir/mkswapfile.log" 2>&1 || rc=1
		else
			dd if=/dev/zero of="$mnt/swapfile" bs=1M count=256 conv=fsync status=none &&
				chmod 600 "$mnt/swapfile" && mkswap "$mnt/swapfile" >/dev/null || rc=1
		fi ;;
	imagefile)
		"$builddir/src/torpor/torpor" file-setup --config "$hostconf" >"$logdir/file-setup.log" 2>&1 || rc=1 ;;
	esac
	[ "$rc" = 0 ] && resume_words=$("$builddir/src/torpor/torpor" resume-args --config "$hostconf" 2>"$logdir/resume-args.log") || rc=1
	umount "$mnt"
	losetup -d "$fs_dev"
	return "$rc"
}
if [ -n "$fs" ]; then
	make_fs || { cat "$logdir"/mkfs.log "$logdir"/mkswapfile.log "$logdir"/file-setup.log \
			"$logdir"/resume-args.log >&2 2>/dev/null
		echo "vm: FAIL $case_name: making the $fstype partition failed" >&2; exit 1; }
	note "storage on $fstype: $storage; $resume_words"
	# Where the file's first page lies on the disk image.
	off=$(sed -nE 's/.*resume_offset=([0-9]+).*/\1/p' <<<"$resume_words")
	fs_page0=$((part_offset + ${off:-0} * 4096))
fi

# --- Booting --------------------------------------------------------------
# boot N MEM TIMEOUT EXTRA-APPEND: sets boot_rc and boot_secs.
boot() {
	local n=$1 mem=$2 limit=$3 extra=$4 log=$logdir/boot$1.log
	# loglevel=5 after quiet: kernel warnings (level 4) reach the log,
	# where any WARNING fails the case.
	# no_timer_check: on a starved host (TCG, shared cores) the kernel's
	# early IO-APIC timer check can miss its ticks and panic ("IO-APIC +
	# timer doesn't work!"), as it did here under a load of 20.
	local append="console=ttyS0 quiet loglevel=5 panic=-1 oops=panic no_timer_check"
	append="$append torpor.case=$case_name torpor.boot=$n $resume_words"
	case "$fs" in
	swapfile) append="$append torpor.fs=$dev torpor.fstype=$fstype torpor.swapfile=/mnt/swapfile" ;;
	imagefile) append="$append torpor.fs=$dev torpor.fstype=$fstype" ;;
	*) [ "$writer" = swap ] && append="$append torpor.swap=$dev" ;;
	esac
	[ "$zram" = 1 ] && append="$append torpor.zram=1"
	[ "$test_mode" = 1 ] && append="$append torpor.test=1"
	[ "$daemon" = 1 ] && append="$append torpor.daemon=1"
	[ -n "$s2h" ] && append="$append torpor.s2h=$s2h"
	[ -n "$extra" ] && append="$append $extra"
	[ -n "${TORPOR_VM_APPEND:-}" ] && append="$append $TORPOR_VM_APPEND"
	limit=$((limit * scale))
	note "boot $n (-m $mem, timeout ${limit}s): $append"
	qemu_boot "$log" "$limit" "$mem" "$kernel" "$initrd" "$append" "$disk"
	note "boot $n: QEMU exit $boot_rc after ${boot_secs}s"
	[ "$boot_rc" = 124 ] && fail "boot $n timed out after ${limit}s; blocked: $(hang_summary "$log")"
	[ "$boot_rc" = 0 ] || [ "$boot_rc" = 124 ] ||
		fail "boot $n: QEMU exited with $boot_rc"
	grep -q 'VM: power off' "$log" || [ "$n" = 1 ] ||
		fail "boot $n did not reach the power-off"
	trouble=$(kernel_trouble "$log") && fail "boot $n: kernel panic or oops: ${trouble#*:}"
	# A distribution's crash reporter files every WARNING as a kernel bug
	# (thaw_processes warns when a thread that the freezer created is
	# still there at the thaw).  A case may name one it provokes on
	# purpose in warn_ok (kill-thaw: the kernel's own thaw after a kill).
	local warnings
	warnings=$(grep -E 'WARNING: ' "$log")
	[ -n "${warn_ok:-}" ] && warnings=$(grep -vE -- "$warn_ok" <<<"$warnings")
	[ -n "$warnings" ] &&
		fail "boot $n: kernel WARNING: $(grep -m1 -A3 -F -- "$(head -n1 <<<"$warnings")" "$log")"
	return 0
}

torpor_resume_rc() {
	grep -m1 'VM: torpor-resume exit' "$logdir/boot$1.log" | awk '{print $NF}'
}

raw_signature() {
	head -c 16 "$disk" | tr -d '\0'
}
swap_tail() {
	dd if="$disk" bs=1 skip=$((${fs_page0:-$part_offset} + 4086)) count=10 2>/dev/null | tr -d '\0'
}
# What the host sees on the disk: "image" or "none".
disk_state() {
	case "$writer" in
	raw) [ "$(raw_signature)" = TORPOR-RAW-SIG01 ] && echo image || echo none ;;
	file) [ "$(dd if="$disk" bs=1 skip="$fs_page0" count=8 2>/dev/null)" = TORPORF1 ] &&
		echo image || echo none ;;
	swap|kernel) [ "$(swap_tail)" = SWAPSPACE2 ] && echo none || echo image ;;
	esac
}

# Flip one byte in the middle of the stored data stream.
flip_byte() {
	local at old new
	if [ "$writer" = raw ]; then
		# The signature block gives the stream's offset and length.
		local off len
		off=$(od -A n -t u8 -j 24 -N 8 "$disk" | tr -d ' ')
		len=$(od -A n -t u8 -j 32 -N 8 "$disk" | tr -d ' ')
		at=$((off + len / 2))
	else
		# Swap pages are handed out from the start of an empty area:
		# the middle of the stored bytes lies inside the image.
		local mib
		mib=$(grep -hoE '[0-9.]+ MiB stored' "$logdir/boot1.log" | head -n1 | cut -d' ' -f1)
		[ -n "$mib" ] || mib=8
		at=$((part_offset + 4096 + ${mib%.*} * 1024 * 1024 / 2))
	fi
	old=$(od -A n -t u1 -j "$at" -N 1 "$disk" | tr -d ' ')
	new=$((old ^ 0x5a))
	printf "$(printf '\\%03o' "$new")" |
		dd of="$disk" bs=1 seek="$at" count=1 conv=notrunc 2>/dev/null
	note "flipped the byte at $at ($old -> $new)"
}

# After the real resume the resumed system read back torpor-resume's
# statistics slot: status (run in the guest, VM-STATUS) shows a read time
# and the pages that torpor-resume said it handed to the kernel.
check_read_back() {
	local st pages
	[ "$writer" != kernel ] || return 0
	st=$(grep -h -m1 'VM-STATUS ' "$logdir/boot2.log" | sed 's/.*VM-STATUS //')
	pages=$(grep -h -m1 -oE 'torpor-resume: resume: [0-9]+ pages|^[0-9.]+ resume: [0-9]+ pages' "$logdir/boot2.log" |
		grep -oE '[0-9]+ pages' | grep -oE '[0-9]+')
	[ -n "$pages" ] || { fail "boot 2: torpor-resume logged no page count"; return; }
	read_back=$(python3 - "$st" "$pages" <<'PY'
import json, sys
try:
    r = json.loads(sys.argv[1])["last_cycle"]["resume"]
except Exception as e:
    sys.exit("status --json unreadable: %s" % e)
if not r or not r["seconds"] > 0 or r["pages"] != int(sys.argv[2]):
    sys.exit("resume figures %r, torpor-resume handed %s pages" % (r, sys.argv[2]))
print("%d pages, read+decode %.3f s" % (r["pages"], r["seconds"]))
PY
) || { fail "boot 2: the resume figures were not read back: $read_back"; return; }
	note "read back after the resume: $read_back"
}

on_exit() {
	if [ "$failures" -gt 0 ]; then
		for f in "$logdir"/boot*.log; do
			[ -f "$f" ] || continue
			echo "======== $f ========" >&2
			cat "$f" >&2
		done
		echo "vm: $case_name: $failures failure(s); logs in $logdir" >&2
	fi
	rm -f "$disk.before"
	[ "${TORPOR_VM_KEEP_DISK:-0}" = 1 ] || rm -f "$disk"
}
trap on_exit EXIT

if [ "$case_name" = perf ]; then
	. "$here/perf.sh"
	exit 1
fi
if [ -n "$s2h" ] || [ "$case_name" = suspend-both ]; then
	. "$here/s2h.sh"
fi

# The power cuts have their own loop of boots (tests/vm/power-cut.sh), the
# kills and the lockdown one boot each (kill-thaw.sh, lockdown.sh).
if [ "$expect" = cuts ] || [ "$expect" = kills ] || [ "$expect" = lockdown ]; then
	. "$here/power-cut.sh"
	. "$here/kill-thaw.sh"
	. "$here/lockdown.sh"
	case $expect in
	cuts) power_cuts ;;
	kills) kill_thaw ;;
	lockdown) lockdown_case ;;
	esac
	[ "$failures" = 0 ] || exit 1
	note "passed"
	exit 0
fi

# --- Boot 1: the marker, then hibernation ---------------------------------
boot 1 "$MEM" 50 "$append1"
boot1_secs=$boot_secs
# Allocated blocks of the sparse disk: what the hibernation wrote.
disk_mib=$(du -k "$disk" | awk '{ printf "%.1f", $1 / 1024 }')
has 1 '^[0-9.]+ MARKER pid=' || fail "boot 1: the marker did not start"
token=$(field 1 '^[0-9.]+ MARKER pid=' token)
sum=$(field 1 '^[0-9.]+ MARKER pid=' sum)
has 1 'VM: hibernate start' || fail "boot 1 did not reach the hibernation"
case "$expect_wt" in
1) has 1 'writes: .* \(writer thread\)' ||
	fail "boot 1: the image was not written on the writer thread" ;;
0) has 1 'writes: ' && ! has 1 'writes: .* \(writer thread\)' ||
	fail "boot 1: the image was not written on the cycle's thread" ;;
esac
has 1 'Device or resource busy' &&
	fail "boot 1: EBUSY: $(grep -m1 'Device or resource busy' "$logdir/boot1.log")"
if [ "$writer" != kernel ]; then
	has 1 'VM: torpor-resume exit 0' ||
		fail "boot 1: torpor-resume did not exit 0 on an empty disk"
fi
if [ "$expect" = test ]; then
	[ -n "$s2h" ] && check_s2h_boot1
	[ "$case_name" = suspend-both ] && check_both_boot1
	has 1 'VM: hibernate exit 0' || fail "boot 1: torpor hibernate --test did not exit 0"
	has 1 "MARKER-AFTER .*token=$token sum=$sum" ||
		fail "boot 1: the marker is not running after --test"
	[ "$(disk_state)" = none ] || fail "the --test image was not invalidated"
else
	has 1 'VM: hibernate exit' &&
		fail "boot 1: the hibernation returned instead of powering off: $(grep -h -E 'VM: hibernate exit|hibernate:|error|refus' "$logdir/boot1.log" | head -5)"
	[ "$(disk_state)" = image ] || fail "after boot 1 the disk holds no image"
	# QEMU runs with -no-reboot: a reboot ends it as a power-off does,
	# and the kernel says that it restarts.  (The power-off through the
	# platform's S4 state says nothing.)
	if [ "$daemon" = 1 ]; then
		has 1 'torpor: through torpord on /run/torpor/torpord.sock' ||
			fail "boot 1: torpor hibernate did not go through torpord"
		has 1 'torpord: .*: hibernating' ||
			fail "boot 1: torpord did not run the cycle"
	fi
	[ -n "$s2h" ] && check_s2h_boot1
	if [ "$after" = reboot ]; then
		has 1 'reboot: Restarting system' ||
			fail "boot 1: after = reboot did not restart the machine"
	fi
fi
[ "$failures" = 0 ] || exit 1

# --- Between the boots, and boot 2 ----------------------------------------
[ "$flip" = 1 ] && flip_byte
boot 2 "$mem2" 40 "$append2"
after_re="MARKER-AFTER .*token=$token sum=$sum"
case "$expect" in
resume)
	has 2 "$after_re" ||
		fail "boot 2: no MARKER-AFTER with token=$token sum=$sum: $(grep -h MARKER "$logdir/boot2.log")"
	has 2 'VM: hibernate exit 0' || fail "boot 2: the resumed hibernate did not exit 0"
	check_read_back
	[ -n "$s2h" ] && check_s2h_boot2
	if [ "$zram" = 1 ]; then
		# zram was swapped on ahead of the image's area; status in
		# the resumed system names it, and the image went to disk.
		has 1 'VM: zram swap on: /dev/zram0 ' || fail "boot 1: no zram swap"
		grep -h 'VM-STATUS ' "$logdir/boot2.log" | grep -q '"zram_swap": "/dev/zram0 (' ||
			fail "boot 2: torpor status --json does not name the zram swap: $(grep -h -o '"zram_swap": "[^"]*"' "$logdir/boot2.log")"
	fi
	if [ "$daemon" = 1 ]; then
		has 2 'torpor: resumed ' ||
			fail "boot 2: the client did not get torpord's phases after the resume"
	fi
	;;
test)
	has 2 'MARKER-AFTER' && fail "boot 2 resumed a --test image"
	[ "$(torpor_resume_rc 2)" = 0 ] || fail "boot 2: torpor-resume exit $(torpor_resume_rc 2), wanted 0"
	;;
refused)
	has 2 'MARKER-AFTER' && fail "boot 2 resumed a refused image"
	r=$(torpor_resume_rc 2)
	[ "$r" = 2 ] || fail "boot 2: torpor-resume exit '$r', wanted 2 (image refused)"
	# torpor-resume itself must say what failed (the kernel's own
	# "Image mismatch" line does not count).
	has 2 '^[0-9.]+ torpor-resume: .*(refused|mismatch|corrupt|does not match|differ)' ||
		fail "boot 2: torpor-resume printed no message saying why the image was refused"
	has 2 'VM: power off' || fail "boot 2 did not boot on normally"
	if [ "$writer" = swap ]; then
		has 2 "VM: swap signature 'SWAPSPACE2'" ||
			fail "boot 2: the swap signature is not back after the refusal"
		has 2 'VM: swapon .* ok' || fail "boot 2: swapon failed after the refusal"
	fi
	;;
noresume)
	has 2 'MARKER-AFTER' && fail "boot 2 resumed despite noresume"
	r=$(torpor_resume_rc 2)
	[ "$r" = 0 ] || fail "boot 2: torpor-resume exit '$r' with noresume, wanted 0"
	[ "$(disk_state)" = none ] || fail "noresume left the image on the disk"
	;;
esac
if [ "$writer" = kernel ]; then
	has 2 "$after_re" || fail "boot 2: the kernel did not resume the marker"
fi

# --- Boot 3: nothing to resume --------------------------------------------
if [ "$case_name" = wrong-mem ]; then
	# Back to the right memory size: an image still on the disk (refused
	# before it was invalidated) must resume now; otherwise the disk must
	# be clean and the boot normal.
	state=$(disk_state)
	boot 3 "$MEM" 40 ""
	if [ "$state" = image ]; then
		note "the refused image was kept: boot 3 (right memory) must resume it"
		has 3 "$after_re" || fail "boot 3 (right memory) did not resume the kept image"
	else
		note "the refused image was invalidated: boot 3 must boot normally"
		has 3 'MARKER-AFTER' && fail "boot 3 resumed an invalidated image"
		[ "$(torpor_resume_rc 3)" = 0 ] ||
			fail "boot 3: torpor-resume exit $(torpor_resume_rc 3), wanted 0"
	fi
elif [ "$expect" = refused ] && [ "$writer" = raw ]; then
	# The raw writer leaves a refused image as it was: it must be
	# refused again, never half-restored.
	boot 3 "$MEM" 30 ""
	has 3 'MARKER-AFTER' && fail "boot 3 resumed a corrupt image"
	[ "$(torpor_resume_rc 3)" = 2 ] ||
		fail "boot 3: the corrupt image was not refused again"
else
	[ "$(disk_state)" = none ] ||
		fail "after boot 2 the disk still holds an image"
	boot 3 "$MEM" 30 ""
	has 3 'MARKER-AFTER' && fail "boot 3 resumed something"
	has 3 'VM: no image, normal boot' || fail "boot 3 did not boot normally"
	if [ "$writer" != kernel ]; then
		[ "$(torpor_resume_rc 3)" = 0 ] ||
			fail "boot 3: torpor-resume exit $(torpor_resume_rc 3), wanted 0"
	fi
	if [ "$writer" = swap ]; then
		has 3 "VM: swap signature 'SWAPSPACE2'" ||
			fail "boot 3: no swap signature"
	fi
fi

# The file's filesystem: nothing of it changed after the snapshot.
if [ -n "$fs" ]; then
	fsck=(e2fsck -fn)
	[ "$fstype" = btrfs ] && fsck=(btrfs check --readonly)
	if fs_loop; then
		"${fsck[@]}" "$fs_dev" >"$logdir/fsck.log" 2>&1 ||
			fail "${fsck[*]}: the $fstype partition is not clean: $(tail -5 "$logdir/fsck.log")"
		losetup -d "$fs_dev"
	else
		fail "no loop device for the filesystem check"
	fi
fi

# --- Figures --------------------------------------------------------------
sub() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "") print "-"; else printf "%.1f", a - b }'; }
t_hib=$(ts 1 'VM: hibernate start')

summary=$(grep -h -m1 -E 'hibernate( \(test\))?: [0-9]+ pages' "$logdir"/boot*.log | head -n1 | cut -d' ' -f2-)
pages=$(sed -nE 's/.*: ([0-9]+) pages.*/\1/p' <<<"$summary")
stored=$(sed -nE 's/.* ([0-9.]+) MiB stored.*/\1/p' <<<"$summary")
if [ "$writer" = kernel ]; then
	# The resumed system's log still holds the snapshot's own lines.
	pages=$(grep -h -m1 -oE 'Need to copy [0-9]+ pages' "$logdir/boot2.log" | grep -oE '[0-9]+' | head -n1)
	stored=$disk_mib
fi
if [ "$expect" = resume ]; then
	t_res=$(ts 2 'MARKER-AFTER')
	t_hook=$(ts 2 'VM-T resume-hook')
	restore=$(sub "$t_res" "$t_hook")
else
	t_res= restore=-
fi
line=$(printf '%-16s boot-to-hibernate %5ss  hibernate %5ss  resume %5ss (restore %5ss)  pages %6s  stored %6s MiB' \
	"$case_name" "$(sub "$t_hib" 0)" "$(sub "$boot1_secs" "$t_hib")" \
	"$(sub "$t_res" 0)" "$restore" "${pages:--}" "${stored:--}")
echo "$line" >"$logdir/timing.txt"
echo "VM-TIMING $line"

[ "$failures" = 0 ] || exit 1
note "passed"
exit 0
