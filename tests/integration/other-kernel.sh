#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# An image offered to another kernel than the one that wrote it (issue 42,
# items 1 and 6), on the simulated device, which checks a header page as
# the kernel does: as x86-64 (the default) by its architecture header
# (the machine and the firmware memory map, $TORPOR_SIM_MEMORY_MAP), not
# by the release; as any other machine ($TORPOR_SIM_MACHINE) by the
# release.  The image file must be left as it was by every refusal.
# Usage: other-kernel.sh CASE
. "$(dirname "$0")/lib.sh"
case_name="$1"

write_config "sim:$((300 * 4096)):7" "checksum lzo"
written=$(uname -r)
case "$case_name" in
entry-console|old-format)
	# A Debian 12 /boot with 6.12.43+bpo the default and 6.1.0-28 in
	# "Advanced options", running 6.1.0-28: as after an update.  No
	# grubenv, so no one-shot can be set and hibernate would refuse
	# (tests/integration/next-boot.sh): --force, as a user who will
	# pick the entry by hand.
	mkdir -p "$WORK/root/boot/grub"
	cp "$TORPOR_BOOTLOADER_DATA/debian12.cfg" "$WORK/root/boot/grub/grub.cfg"
	written=6.1.0-28-amd64
	entry="Advanced options for Debian GNU/Linux > Debian GNU/Linux, with Linux 6.1.0-28-amd64"
	TORPOR_TEST_SYSROOT="$WORK/root" TORPOR_SIM_KERNEL_RELEASE=$written \
		t_run hib torpor hibernate --direct --force -v
	expect_err "boot entry of this kernel: '$entry'" "the entry recorded"
	;;
*)
	t_run hib torpor hibernate --direct ;;
esac
expect_rc 0 "hibernate"
before=$(sha256sum "$IMAGE" | cut -d' ' -f1)
unchanged() {
	[ "$(sha256sum "$IMAGE" | cut -d' ' -f1)" = "$before" ] ||
		fail "$1: the image changed on disk"
}

case "$case_name" in
accepted)
	# A point update: another release, the same memory map.  The
	# kernel's check decides, and it accepts.
	TORPOR_SIM_KERNEL_RELEASE=9.9.9-other t_run resume torpor_resume
	expect_rc 0 "another release, the same memory map"
	expect_out "pages restored and verified" "restored"
	expect_err "written by kernel $written, this is kernel 9.9.9-other: this kernel checks the image's architecture header itself" "the note"
	;;
memory-map)
	# Another release and another firmware memory map: refused by the
	# kernel, at the page after the header, with its own words.
	TORPOR_SIM_KERNEL_RELEASE=9.9.9-other TORPOR_SIM_MEMORY_MAP=other-e820 \
		t_run resume torpor_resume
	expect_rc 2 "another memory map"
	expect_err "image refused by the kernel: it was written by kernel $written, and kernel 9.9.9-other does not accept it \(the write of page 1, the first after the image's header, failed: Operation not permitted\); the kernel said: \"Hibernate inconsistent memory map detected!\"; \"PM: hibernation: Image mismatch: architecture specific data\"; boot $written to resume it" "the kernel's reason"
	expect_err "image refused: nothing was restored \(the 1 page handed to the snapshot device is dropped with it\); the image was left as it was" "only the header page was handed"
	grep -q "pages restored" "$OUT" && fail "memory-map: restored"
	unchanged memory-map
	# The same kernel under another memory map: the same refusal, not
	# blamed on the kernel.
	TORPOR_SIM_MEMORY_MAP=other-e820 t_run resume torpor_resume
	expect_rc 2 "the same kernel, another memory map"
	expect_err "image refused by the kernel: it does not accept the image's header \(the write of page 1 failed: Operation not permitted\); the kernel said: \"Hibernate inconsistent memory map detected!\"" "same kernel: the kernel's reason"
	unchanged memory-map-same-kernel
	;;
not-x86)
	# A kernel that compares releases: refused by torpor by the release,
	# before the device is opened.
	TORPOR_SIM_MACHINE=aarch64 TORPOR_SIM_KERNEL_RELEASE=9.9.9-other \
		t_run resume torpor_resume
	expect_rc 2 "not x86-64"
	expect_err "image refused: it was written by kernel $written, this is kernel 9.9.9-other; boot $written to resume it" "refused by the release"
	expect_err "image refused: nothing was handed to the snapshot device; the image was left as it was" "nothing handed"
	unchanged not-x86
	# The same release on another machine: its kernel refuses it.
	TORPOR_SIM_MACHINE=aarch64 t_run resume torpor_resume
	expect_rc 2 "not x86-64, an x86-64 image"
	expect_err "the kernel said: \"PM: hibernation: Image mismatch: machine\"" "the machine differs"
	unchanged not-x86-machine
	;;
entry-console)
	# Refused because another kernel booted: the console (not only the
	# log) names the entry that resumes it, by the kernel's check ...
	CONSOLE="$WORK/console"
	: >"$CONSOLE"
	TORPOR_SIM_KERNEL_RELEASE=6.12.43+bpo-amd64 TORPOR_SIM_MEMORY_MAP=other-e820 \
		t_run resume torpor_resume --console "$CONSOLE"
	expect_rc 2 "the kernel refuses"
	said="torpor-resume: this image was written by $written: choose '$entry' in the boot menu to resume it"
	expect_err_line "$said" "the entry in the log"
	grep -Fxq -- "$said" "$CONSOLE" || fail "the entry is not on the console: $(cat "$CONSOLE")"
	unchanged entry-console
	# ... and by the release where the kernel compares releases.
	: >"$CONSOLE"
	TORPOR_SIM_KERNEL_RELEASE=6.12.43+bpo-amd64 TORPOR_SIM_MACHINE=aarch64 \
		t_run resume torpor_resume --console "$CONSOLE"
	expect_rc 2 "refused by the release"
	grep -Fxq -- "$said" "$CONSOLE" || fail "not x86: the entry is not on the console: $(cat "$CONSOLE")"
	# A refusal of another kind names no entry.
	: >"$CONSOLE"
	TORPOR_SIM_MEMORY_MAP=other-e820 TORPOR_SIM_KERNEL_RELEASE=$written \
		t_run resume torpor_resume --console "$CONSOLE"
	expect_rc 2 "the same kernel, another memory map"
	grep -q "boot menu" "$CONSOLE" && fail "an entry named for a refusal by the memory map"
	unchanged entry-console-same-kernel
	;;
old-format)
	# The format the release before wrote (3: no boot entry), as after
	# an upgrade with an image stored: still resumed ...
	"$IMAGE_TOOL" downgrade "$IMAGE" 3 || fail "image-tool downgrade 3"
	"$IMAGE_TOOL" layout "$IMAGE" >/dev/null || fail "the downgraded image does not read"
	before=$(sha256sum "$IMAGE" | cut -d' ' -f1)
	# ... refused by another kernel without an entry to name ...
	: >"$WORK/console"
	TORPOR_SIM_KERNEL_RELEASE=6.12.43+bpo-amd64 TORPOR_SIM_MACHINE=aarch64 \
		t_run resume torpor_resume --console "$WORK/console"
	expect_rc 2 "format 3, another kernel"
	grep -Fxq "torpor-resume: this image was written by $written: choose that kernel in the boot menu (Debian lists it under \"Advanced options\") to resume it" "$WORK/console" ||
		fail "format 3: no advice on the console: $(cat "$WORK/console")"
	unchanged old-format
	# ... and resumed by its own.
	TORPOR_SIM_KERNEL_RELEASE=$written t_run resume torpor_resume
	expect_rc 0 "format 3 resumes"
	expect_out "pages restored and verified" "format 3: restored"
	;;
*)
	echo "unknown case $case_name"; exit 1 ;;
esac
finish
