#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# torpor setup against a test root ($TORPOR_TEST_SYSROOT, as every test
# gives one; setup's --root names the same, checked once): its proc/, sys/,
# etc/ and boot/ are files made here, its generator
# (usr/sbin/update-initramfs) a script that packs an initramfs the way the
# hook would; the swap area it finds is a real loop device (named in the
# fake proc/swaps, never activated).  The existing configuration keeps the
# sim source, so the `hibernate --test` setup runs is a simulated one.
. "$(dirname "$0")/writers/lib.sh" "$1"

for t in cpio gzip readelf; do
	command -v "$t" >/dev/null || { echo "FAIL: $t is not installed"; exit 1; }
done

ROOT=$WORK/root
RELEASE=$(uname -r)
GENLOG=$WORK/generator.log
PLUGINS_IN=/usr/lib/torpor/plugins

make_loop swap 128 || { echo "FAIL: losetup"; exit 1; }
SWAP=$LOOP
mkswap -L "tpsetup$$" "$SWAP" >/dev/null || { echo "FAIL: mkswap"; exit 1; }
uuid=$(blkid -p -o value -s UUID "$SWAP")

# The fake generator: what initramfs-tools' hook copies, packed early
# cpio + gzip; GEN_OMIT names a file it leaves out.
write_generator() {
	cat >"$ROOT/usr/sbin/update-initramfs" <<-EOF
	#!/bin/bash
	echo "generator \$*" >>"$GENLOG"
	tree=\$(mktemp -d "$WORK/tree.XXXXXX")
	mkdir -p "\$tree/sbin" "\$tree/$PLUGINS_IN" "\$tree${TORPOR_DEFAULT_CONFIG%/*}"
	cp "$TORPOR_BIN" "\$tree/sbin/torpor-resume"
	cp "$PLUGINS"/*.so "\$tree/$PLUGINS_IN/"
	mkdir -p "\$tree/lib"
	for p in "$PLUGINS"/*.so; do
		for l in \$(readelf -d "\$p" | sed -n 's/.*(NEEDED).*\\[\\(.*\\)\\]\$/\\1/p'); do
			: >"\$tree/lib/\$l"
		done
	done
	cp "$ROOT$TORPOR_DEFAULT_CONFIG" "\$tree${TORPOR_DEFAULT_CONFIG%/*}/"
	rm -f "\$tree/${GEN_OMIT:-nothing}"
	[ -z "${GEN_EXTRA:-}" ] || cp -a "${GEN_EXTRA:-}/." "\$tree/"
	mkdir -p "$ROOT/boot"
	(cd "\$tree" && find . | cpio -o -H newc --quiet | gzip) >"$ROOT/boot/initrd.img-$RELEASE"
	rm -rf "\$tree"
	EOF
	chmod 755 "$ROOT/usr/sbin/update-initramfs"
}

# A machine that can hibernate: MEM_KIB of memory, the loop device as
# its only swap area, grub without the resume words.
make_root() {
	rm -rf "$ROOT" "$GENLOG"
	mkdir -p "$ROOT/proc" "$ROOT/sys/power" "$ROOT/sys/kernel/security" \
		"$ROOT/usr/sbin" "$ROOT/etc/default" "$ROOT${TORPOR_DEFAULT_CONFIG%/*}" "$ROOT/boot"
	printf 'MemTotal: %s kB\nMemFree: 1000 kB\n' "${MEM_KIB:-131072}" >"$ROOT/proc/meminfo"
	printf 'Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n%s\tpartition\t131068\t0\t-2\n' \
		"$SWAP" >"$ROOT/proc/swaps"
	echo "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet" >"$ROOT/proc/cmdline"
	echo "freeze mem disk" >"$ROOT/sys/power/state"
	echo 0:0 >"$ROOT/sys/power/resume"
	echo 0 >"$ROOT/sys/power/resume_offset"
	echo "[none] integrity confidentiality" >"$ROOT/sys/kernel/security/lockdown"
	echo 'GRUB_CMDLINE_LINUX="quiet"' >"$ROOT/etc/default/grub"
	{
		echo "[torpor]"
		echo "snapshot = sim:32M:5"
		echo "filters = $(filters)"
		echo "plugin_dir = $PLUGINS_IN"
		echo
		echo "[checksum]"
		echo "algorithm = crc32c"
	} >"$ROOT$TORPOR_DEFAULT_CONFIG"
	write_generator
}

# Every file of the root and the swap area's first page.
state() {
	(cd "$ROOT" && find . -printf '%p %m %l\n' | sort && find . -type f -exec sha256sum {} + | sort)
	dd if="$SWAP" bs=4096 count=1 status=none | sha256sum
}

setup() { TORPOR_TEST_SYSROOT=$ROOT "$TORPOR_BIN" --plugin-dir "$PLUGINS" setup "$@"; }

expect_unchanged() {	# expect_unchanged WHAT
	[ "$(state)" = "$before" ] || fail "$1: the root or the swap area changed"
	[ ! -e "$GENLOG" ] || fail "$1: the generator ran"
}

# --dry-run: says everything, changes nothing.  grub still has the
# kernel's resume= word, which would only slow every boot.
make_root
echo "GRUB_CMDLINE_LINUX_DEFAULT=\"resume=UUID=$uuid\"" >>"$ROOT/etc/default/grub"
before=$(state)
t_run setup --dry-run
expect_rc 0 "dry run"
expect_out "storage: swap writer on UUID=$uuid" "dry run: the swap area"
expect_out "would write $ROOT$TORPOR_DEFAULT_CONFIG" "dry run: the configuration"
expect_out "device = UUID=$uuid" "dry run: the configuration's text"
expect_out "location as kernel command line words \\(torpor resume-args\\): resume=UUID=$uuid; not needed" "dry run: words"
expect_out "running kernel's command line has no resume= word: good" "dry run: /proc/cmdline"
expect_out "GRUB_CMDLINE_LINUX in /etc/default/grub .* has 'resume=UUID=$uuid': remove it; the generators' own resume step would wait" "dry run: grub"
expect_out "would run $ROOT/usr/sbin/update-initramfs -u -k $RELEASE" "dry run: the generator"
expect_out 'dry run: nothing was changed' "dry run"
expect_out '^setup: next boot: cannot tell: no boot loader torpor knows' "dry run: the next boot"
expect_unchanged "dry run"

# --root DIR, torpor(8)'s word for the same root: the same plan.
cp "$OUT" "$WORK/dry-run.out"
t_run "$TORPOR_BIN" --plugin-dir "$PLUGINS" setup --root "$ROOT" --dry-run
expect_rc 0 "dry run, --root"
cmp -s "$OUT" "$WORK/dry-run.out" || fail "dry run, --root: another plan than with \$TORPOR_TEST_SYSROOT"
expect_unchanged "dry run, --root"

# GRUB's default another kernel, and no grubenv for a one-shot: said,
# with what hibernate will refuse.
mkdir -p "$ROOT/boot/grub"
printf "menuentry 'New' {\n\tlinux /boot/vmlinuz-9.9.9-new\n}\nmenuentry 'Running' {\n\tlinux /boot/vmlinuz-%s\n}\n" \
	"$RELEASE" >"$ROOT/boot/grub/grub.cfg"
t_run setup --dry-run
expect_rc 0 "dry run, another kernel next"
expect_out "^setup: next boot: 9\\.9\\.9-new \\(GRUB's first entry \\(grub.cfg sets no default\\)\\); the running kernel is .*: an image written now would be refused" "dry run: another kernel next"
expect_out '^setup: until then torpor hibernate refuses: pick "Running" in the GRUB menu' "dry run: what to do"
rm -rf "$ROOT/boot/grub"

# Without --yes and with no terminal: nothing is done.
t_run setup </dev/null
expect_rc 1 "no --yes"
expect_err 'pass --yes' "no --yes"
expect_unchanged "no --yes"

# The whole way.
old=$(cat "$ROOT$TORPOR_DEFAULT_CONFIG")
t_run setup --yes
expect_rc 0 "setup"
conf=$ROOT$TORPOR_DEFAULT_CONFIG
[ "$(stat -c '%u %g %a %F' "$conf")" = "0 0 644 regular file" ] ||
	fail "setup: the configuration is $(stat -c '%u %g %a %F' "$conf")"
grep -q '^writer = swap$' "$conf" || fail "setup: no writer = swap"
grep -q "^device = UUID=$uuid\$" "$conf" || fail "setup: no device"
grep -q '^snapshot = sim:32M:5$' "$conf" || fail "setup: the existing snapshot key was lost"
grep -q '^algorithm = crc32c$' "$conf" || fail "setup: the [checksum] section was lost"
[ "$(cat "$conf.bak")" = "$old" ] || fail "setup: the backup is not the old file"
grep -qx "generator -u -k $RELEASE" "$GENLOG" ||
	fail "setup: the generator did not run with -u -k $RELEASE"
expect_out 'the new initramfs holds what a resume needs' "setup: initramfs check"
expect_out '^hibernate \(test\): [0-9]+ pages' "setup: hibernate --test"
expect_out 'done' "setup"
expect_out "^setup: logind's CanHibernate: not running: systemd is not the init system" "setup: logind"
ls -A "$ROOT${TORPOR_DEFAULT_CONFIG%/*}" | grep -q '^\.' && fail "setup: a temporary file was left"
[ "$(blkid -p -o value -s TYPE "$SWAP")" = swap ] || fail "setup: the swap area is not swap after the test"

# The generator leaves torpor-resume out: refused with the fix.
GEN_OMIT=sbin/torpor-resume write_generator
t_run setup --yes
expect_rc 1 "stale initramfs"
expect_err 'it has no torpor-resume' "stale initramfs"
expect_err "rebuild the initramfs \\(update-initramfs -u -k $RELEASE\\)" "stale initramfs"
! grep -q 'hibernate (test)' "$OUT" || fail "stale initramfs: the test cycle ran"

# The generator makes no initramfs where the running kernel's belongs.
cat >"$ROOT/usr/sbin/update-initramfs" <<EOF
#!/bin/sh
rm -f "$ROOT/boot/initrd.img-$RELEASE"
EOF
t_run setup --yes
expect_rc 1 "no initramfs"
expect_err "no initramfs of the running kernel found \\($ROOT/boot/initrd.img-$RELEASE or $ROOT/boot/initramfs-$RELEASE.img\\)" "no initramfs"
expect_err 'Set \[torpor\] initramfs = PATH' "no initramfs"

# A configuration that is a symbolic link is not replaced.
make_root
echo "[torpor]" >"$WORK/elsewhere.conf"
ln -sf "$WORK/elsewhere.conf" "$ROOT$TORPOR_DEFAULT_CONFIG"
t_run setup --yes
expect_rc 1 "symlink"
expect_err 'not a regular file' "symlink"
[ "$(cat "$WORK/elsewhere.conf")" = "[torpor]" ] || fail "symlink: its target changed"
[ -L "$ROOT$TORPOR_DEFAULT_CONFIG" ] || fail "symlink: replaced"

# Refusals before anything is changed.
refused() {	# refused WHAT REGEX: setup --yes refuses, nothing changes
	before=$(state)
	t_run setup --yes
	expect_rc 1 "$1"
	expect_err "$2" "$1"
	expect_unchanged "$1"
}
make_root
echo "none [integrity] confidentiality" >"$ROOT/sys/kernel/security/lockdown"
refused "lockdown" 'disabled by kernel lockdown \(integrity mode.*Boot without lockdown to hibernate'
make_root
echo "BOOT_IMAGE=/vmlinuz nohibernate" >"$ROOT/proc/cmdline"
refused "nohibernate" "'nohibernate' on the kernel command line: remove it from the kernel command line"
make_root
printf 'BOOT_IMAGE=/vmlinuz\thibernate=no\n' >"$ROOT/proc/cmdline"
refused "hibernate=no" "'nohibernate' on the kernel command line: remove it"
# No "disk" in the power states: a process holding secretmem, which
# status names too, else no cause seen.
make_root
echo "freeze mem" >"$ROOT/sys/power/state"
mkdir -p "$ROOT/proc/4242"
echo "7f0000000000-7f0000001000 rw-s 00000000 00:01 77 /secretmem (deleted)" >"$ROOT/proc/4242/maps"
refused "secretmem" "disabled while secretmem is in use \\(process 4242 holds memfd_secret memory\\): run setup again once it has ended"
rm -r "$ROOT/proc/4242"
refused "no disk" "this kernel cannot hibernate \\('disk' is not in /sys/power/state\\)"
make_root
rm "$ROOT/usr/sbin/update-initramfs"
refused "no generator" 'no initramfs generator \(update-initramfs or dracut\)'
# 64 TiB of memory: neither the swap area nor the filesystem has room.
MEM_KIB=68719476736 make_root
refused "no room" 'not enough room: the image needs [0-9]+ MiB; no active swap area has that much free'
# A file on tmpfs cannot hold an image.
MEM_KIB=68719476736 make_root
mkdir -p "$ROOT/var/lib"
mount -t tmpfs -o size=1M tmpfs "$ROOT/var/lib" && UNDO+=("umount $ROOT/var/lib")
refused "tmpfs" "no usable image file can be made: $ROOT/var/lib is on tmpfs"
umount "$ROOT/var/lib"

# No swap area with room: a file on ext4, made by file-setup's code, and
# the file writer's test cycle.
make_loop fs 192 || { echo "FAIL: losetup"; exit 1; }
make_root
printf 'Filename\tType\tSize\tUsed\tPriority\n' >"$ROOT/proc/swaps"
make_ext4 "$LOOP" "$ROOT/var/lib" || { echo "FAIL: ext4"; exit 1; }
t_run setup --yes --size 96M
expect_rc 0 "file"
expect_out "file-setup: $ROOT/var/lib/torpor/image: 96 MiB allocated and written" "file: made"
grep -q '^writer = file$' "$conf" || fail "file: no writer = file"
grep -q "^path = $ROOT/var/lib/torpor/image\$" "$conf" || fail "file: no path"
expect_out 'location as kernel command line words \(torpor resume-args\): resume=.* resume_offset=[0-9]+$' "file: words"
expect_out "running kernel's command line lacks them: it needs 'resume=.* resume_offset=[0-9]+'" "file: /proc/cmdline"
expect_out 'GRUB_CMDLINE_LINUX .* lacks them: it needs' "file: grub"
expect_out '^hibernate \(test\): [0-9]+ pages' "file: hibernate --test"
expect_out 'done: .* once the kernel command line has the words above' "file: done"
# The running kernel gets the location at once (logind on a BIOS machine
# wants a resume device): the file's device and its first page.
off=$(sed -nE 's/.*resume_offset=([0-9]+)$/\1/p' "$OUT" | head -n 1)
[ "$(cat "$ROOT/sys/power/resume")" = "$(printf '%d:%d' "0x$(stat -c %t "$LOOP")" "0x$(stat -c %T "$LOOP")")" ] ||
	fail "file: the kernel's resume device is '$(cat "$ROOT/sys/power/resume")', not $LOOP's"
[ -n "$off" ] && [ "$(cat "$ROOT/sys/power/resume_offset")" = "$off" ] ||
	fail "file: the kernel's resume_offset is '$(cat "$ROOT/sys/power/resume_offset")', not '$off'"
expect_out "handing the image's location to the running kernel" "file: said"
# Again: the file is there and reused, its room counted as free.
t_run setup --yes --size 96M
expect_rc 0 "file, again"
expect_out "file-setup: $ROOT/var/lib/torpor/image: 96 MiB allocated and written" "file, again"
expect_out '^hibernate \(test\): [0-9]+ pages' "file, again: hibernate --test"
umount "$ROOT/var/lib"

# The same on btrfs (Fedora's default root, with zram swap only): the
# zram area is passed over with the reason, the file is made NOCOW and
# the test cycle runs.
if command -v mkfs.btrfs >/dev/null && { grep -qw btrfs /proc/filesystems || modprobe btrfs 2>/dev/null; }; then
	make_loop btrfs 400 || { echo "FAIL: losetup"; exit 1; }
	make_root
	printf 'Filename\tType\tSize\tUsed\tPriority\n/dev/zram0\tpartition\t8388604\t0\t100\n' >"$ROOT/proc/swaps"
	mkdir -p "$ROOT/var/lib"
	mkfs.btrfs -q -f "$LOOP" >/dev/null && mount "$LOOP" "$ROOT/var/lib" ||
		{ echo "FAIL: btrfs"; exit 1; }
	UNDO+=("umount $ROOT/var/lib")
	t_run setup --yes
	expect_rc 0 "btrfs"
	expect_out "active swap /dev/zram0 is zram, compressed RAM that a power-off empties: never a place for the image" "btrfs: zram passed over"
	expect_out "setup: $ROOT/var/lib is on btrfs on $LOOP: the image file will be NOCOW" "btrfs: said"
	expect_out "file-setup: $ROOT/var/lib/torpor/image: [0-9]+ MiB allocated and written, [0-9]+ extents? on $LOOP" "btrfs: made"
	lsattr "$ROOT/var/lib/torpor/image" | grep -q '^[^ ]*C' || fail "btrfs: the image file is not NOCOW"
	expect_out '^hibernate \(test\): [0-9]+ pages' "btrfs: hibernate --test"
	umount "$ROOT/var/lib"
else
	echo "SKIP (part): no btrfs here (mkfs.btrfs or the kernel's)"
fi

# Debian's encrypted LVM: the swap area is an LVM volume in a LUKS
# container (the root's /sys says so of the loop device: volume vg-swap_1
# on mapping swapcrypt).  The initramfs must hold lvm and cryptsetup, and
# initramfs-tools' cryptroot/crypttab must name the mapping.
make_root
dev=$ROOT/sys/dev/block/$((16#$(stat -c %t "$SWAP"))):$((16#$(stat -c %T "$SWAP")))
mkdir -p "$dev/dm" "$dev/slaves" "$ROOT/sys/block/dm-9/dm"
echo "LVM-0123456789abcdef" >"$dev/dm/uuid"
echo vg-swap_1 >"$dev/dm/name"
: >"$dev/slaves/dm-9"
echo "CRYPT-LUKS2-0123456789abcdef0123456789abcdef-swapcrypt" >"$ROOT/sys/block/dm-9/dm/uuid"
echo swapcrypt >"$ROOT/sys/block/dm-9/dm/name"
mkdir -p "$WORK/extra/cryptroot" "$WORK/extra/sbin"
t_run setup --yes
expect_rc 1 "LUKS swap, no cryptsetup"
expect_out "setup: it is the LVM volume vg-swap_1: the initramfs must activate it" "LVM: said"
expect_out "setup: it lies in the dm-crypt mapping swapcrypt: the initramfs must unlock it" "LUKS swap: said"
expect_err "it has no cryptsetup, and the image's device lies in the dm-crypt mapping swapcrypt" "LUKS swap, no cryptsetup"
expect_err "it has no lvm, and the image's device is the LVM volume vg-swap_1" "LVM, no lvm"
: >"$WORK/extra/sbin/cryptsetup"
: >"$WORK/extra/sbin/lvm"
echo "sda5_crypt UUID=1 none luks" >"$WORK/extra/cryptroot/crypttab"
GEN_EXTRA=$WORK/extra write_generator
t_run setup --yes
expect_rc 1 "LUKS swap, not in cryptroot/crypttab"
expect_err "its /cryptroot/crypttab does not unlock swapcrypt, which holds the image's device: add the option initramfs" "LUKS swap, not in cryptroot/crypttab"
echo "swapcrypt UUID=2 none luks,initramfs" >>"$WORK/extra/cryptroot/crypttab"
t_run setup --yes
expect_rc 0 "LUKS swap, unlocked by the initramfs"
expect_out 'the new initramfs holds what a resume needs' "LUKS swap, unlocked by the initramfs"
GEN_EXTRA= write_generator

# Swap encrypted with a new random key at each boot (crypttab's key file
# /dev/urandom) is passed over with the reason; the image goes to a file.
make_root
printf 'Filename\tType\tSize\tUsed\tPriority\n/dev/dm-7\tpartition\t8388604\t0\t-2\n' >"$ROOT/proc/swaps"
mkdir -p "$ROOT/sys/block/dm-7/dm" "$ROOT/etc"
echo cryptswap >"$ROOT/sys/block/dm-7/dm/name"
printf '# <target> <source> <key> <options>\nsda3_crypt UUID=1234 none luks\ncryptswap /dev/sda2 /dev/urandom swap,cipher=aes-xts-plain64,size=256\n' \
	>"$ROOT/etc/crypttab"
t_run setup --dry-run
expect_out "active swap /dev/dm-7 is encrypted with a new random key at each boot \(/etc/crypttab: cryptswap /dev/sda2 /dev/urandom\): an image there could not be read after the power-off: never a place for the image" "random-key swap: passed over"
expect_out "no active swap area has [0-9]+ MiB free: the image goes to a file \(the file writer\)" "random-key swap: the file instead"
# A LUKS swap (a key that survives) is taken.
printf 'cryptswap UUID=77 none luks\n' >"$ROOT/etc/crypttab"
t_run setup --dry-run
! grep -q 'random key' "$OUT" || fail "LUKS swap: taken for random-key swap"
expect_out "active swap /dev/dm-7 \(partition\)" "LUKS swap: considered"
finish
