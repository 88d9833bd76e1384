#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The distribution cases of the VM suite: a real Debian 12 with systemd as
# PID 1, torpor installed with `meson install`, configured by hand the way
# README.md says, hibernated with `systemctl hibernate`.
#   boot 1  the marker starts in a service; the root filesystem (ext4) is
#           written to; `systemctl hibernate`; the machine must power off
#   boot 2  the initramfs (initramfs-tools or dracut) resumes: the marker
#           prints the same token and checksum, the system-sleep hook ran
#           pre and post, systemd-hibernate.service succeeded
#           (corrupt: the image is refused, a normal boot, swap usable)
#   boot 3  no image left, swap active, no failed unit (not for corrupt)
# distro-stale has its swap on a disk of its own (/dev/vdb, nofail) and
# boots on after boot 1 without resuming:
#   boot 2  without the swap disk: the initramfs waits its bounded time and
#           says so, torpor-stale-image.service waits its bounded time and
#           says so; the image stays (nothing can reach it)
#   boot 3  the swap disk is attached only once the initramfs has given up
#           (QEMU's monitor): the unit discards the image, saying why,
#           before swap is activated; swap active; then it hibernates again
#   boot 4  without the swap disk again: a normal boot, which mounts the
#           root filesystem read-write
#   boot 5  both disks from the start: torpor-resume refuses the second
#           image as stale (distro-stale-root's check, below): a normal
#           boot, swap active, torpor status says none, no failed unit
# distro-stale-root has the same disks, and the storage back at boot 3:
#   boot 2  without the swap disk: a normal boot, the root filesystem
#           mounted read-write (its mount count goes up)
#   boot 3  both disks from the start: torpor-resume in the initramfs finds
#           the image and refuses it as stale (the root filesystem guard),
#           the swap area is given back: a normal boot, swap active, no
#           image, the data written in boot 1 there, no failed unit
# distro-suspend-then-hibernate is distro-initramfs-tools with
# `systemctl suspend-then-hibernate` (HibernateDelaySec=20s in a
# sleep.conf.d drop-in) instead of `systemctl hibernate`: in boot 1 the
# guest suspends to RAM (S3), the RTC wakes it after 20 s, torpor
# hibernates; boot 2 also checks the kernel's suspend lines and the hooks'
# four calls (suspend, then hibernate).  Booted through the bzImage (S3
# wakes a PVH-booted guest into a reset, see tests/vm/s2h.sh).  Its boot
# 3 (Debian 12's) then hibernates again with `systemctl hibernate`, the
# host damages that image, and boot 4 must refuse it: distro-corrupt's
# checks, without a boot 1 of their own (corrupt_again_boots).
# distro-btrfs is Fedora's layout on Debian 12 with dracut: the root is
# btrfs (one partition), swap is zram only.  Boot 1 runs `torpor setup
# --yes`: it passes over the zram swap, makes the image a NOCOW file on
# the root (/var/lib/torpor/image), rebuilds the initramfs and prints the
# file's place as kernel command line words, which boots 2 on carry.  The
# root filesystem guard records the btrfs generation.
# distro-luks-lvm is Debian's "guided, encrypted LVM" (distro-dracut-luks-lvm
# the same with dracut): /boot on vda1, a
# LUKS2 container on vda2 holding the volume group torpor-vm-vg with the
# root and swap_1 volumes, made by an install boot (tests/vm/distro/
# luks-install: the host has no device-mapper).  Boot 1 runs `torpor setup
# --yes` (it finds the swap volume, writes the configuration, rebuilds the
# initramfs in /boot and runs hibernate --test) before `systemctl
# hibernate`; every boot after the install has the passphrase typed on the
# console at the initramfs' prompt, as a user types it.  The host cannot
# read inside the container: whether an image is stored, and the root
# filesystem's state, are what the guest says.
# distro-luks-swapfile is Ubuntu's encrypted install: the same container
# and volume group with the root volume only, and swap in the file
# /swap.img on the root.  torpor setup takes the swap file and prints its
# place as kernel command line words, which boots 2 on carry (the boot
# loader's part: the case cannot edit one).
# distro-luks-swap-partition is an older setup's: the root volume alone in
# the container on vda2, and swap in a LUKS2 container of its own on vda3
# (vda3_crypt, its own crypttab line, RESUME=none), so that cryptroot
# unlocks it in the initramfs only with crypttab's initramfs option.  Boot
# 1's torpor setup must refuse and say so; the driver adds the option, as
# a user would, and setup passes.  Each boot asks for both passphrases.
# A second swap area on vda4 is encrypted with a new random key at each
# boot (/dev/urandom in crypttab): setup must pass over it and say why.
# distro-grub boots through GRUB (grub-pc) in the disk's MBR, no QEMU
# -kernel: two kernels installed, Debian 12's 6.1 and backports' 6.12.57,
# GRUB's default; boot 1 runs 6.1 (a one-shot the host set), so torpor
# hibernate must set GRUB's next_entry to 6.1's entry:
#   boot 1  GRUB loads 6.1; torpor status says 6.12.57 boots next and that
#           a one-shot will be set; systemctl hibernate; grubenv's
#           next_entry names 6.1's entry
#   boot 2  GRUB starts 6.1 by itself and the session resumes; next_entry
#           cleared (GRUB's save_env)
#   boot 3  a plain boot starts 6.12.57; next_entry still empty
# GRUB's command line is the same at every boot: each boot's words go on a
# small read-only disk (serial torpor-args) the driver reads.
# distro-grub-kernel is the same guest without torpor: the kernel's own
# hibernation from 6.1, and boot 2 starts GRUB's default, 6.12.57 (a
# measurement: what it does with 6.1's image is said, not judged).
# distro-grub-other: boot 1 as distro-grub, then 6.12.57 chosen by hand
# (the host writes grubenv's block in place): torpor-resume lets the
# kernel judge 6.1's image, which it accepts (see grub_other_boots).
# distro-grub-refuse: a grubenv others may change (0666), where torpor
# writes no one-shot: in boot 1, the only one, torpor hibernate refuses
# before freezing anything (see grub_refuse_boot1).
# distro-package installs torpor from its Debian package, upgrades and
# purges it, then hibernates with the kernel's own hibernation (see
# package_boots); distro-deb only builds the package in the release's
# chroot and runs that release's lintian on it.
# Then the host checks the root filesystem with e2fsck -fn (btrfs check).
#
# Usage: distro-case.sh CASE SRCDIR BUILDDIR [LOGDIR]
#   CASE: distro-initramfs-tools | distro-corrupt | distro-dracut |
#         distro-stale | distro-stale-root | distro-btrfs |
#         distro-btrfs-stale-root | distro-luks-lvm | distro-dracut-luks-lvm |
#         distro-luks-swapfile | distro-luks-swap-partition |
#         distro-suspend-then-hibernate | distro-package | distro-deb |
#         distro-grub | distro-grub-kernel | distro-grub-other |
#         distro-grub-refuse
#         (and RELEASE-, -efi variants; distro-deb boots no guest)
# Exit: 0 passed, 1 failed, 77 QEMU or the package archive is unreachable.
# Environment: TORPOR_VM_CACHE (default /var/cache/torpor-vm) keeps the
# Debian root filesystems; TORPOR_VM_TIMEOUT_SCALE stretches the timeouts;
# TORPOR_VM_KEEP_DISK=1 keeps LOGDIR/disk.img.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 3 ] || { echo "usage: $0 CASE SRCDIR BUILDDIR [LOGDIR]" >&2; exit 1; }
case_name=$1
srcdir=$(cd "$2" && pwd)
builddir=$(cd "$3" && pwd)
logdir=${4:-$builddir/tests/vm/vm-logs/$case_name}
mkdir -p "$logdir"
logdir=$(cd "$logdir" && pwd)
rm -f "$logdir/steps.txt"
scale=${TORPOR_VM_TIMEOUT_SCALE:-1}
cache=${TORPOR_VM_CACHE:-/var/cache/torpor-vm}
MEM=512
# The guests' user space without address-space randomisation
# (norandmaps; the kernel's own KASLR stays).  TCG finds its translated
# code by virtual address: with ASLR every new process maps ld.so and
# libc elsewhere and has them translated again.  Measured in a Debian 12
# guest (qemu64, 2 vCPUs): 300 runs of /bin/true 7.7 s with ASLR, 1.4 s
# without.  These guests run thousands of programs (systemd's boot;
# update-initramfs about 1,800), so this is their largest saving.  The
# busybox cases keep ASLR: torpor and torpor-resume run with it there.
# TORPOR_VM_ASLR=1 keeps it here too.
aslr_words=norandmaps
[ "${TORPOR_VM_ASLR:-0}" = 1 ] && aslr_words=

. "$here/qemu-lib.sh"
. "$here/distro-lib.sh"
die() { fail "$*"; exit 1; }

distro_parse "$case_name" || exit 1

# --- What the case needs on the host -------------------------------------
if ! command -v qemu-system-x86_64 >/dev/null || ! command -v mmdebstrap >/dev/null ||
   ! command -v sfdisk >/dev/null || ! command -v mkfs.btrfs >/dev/null || ! ls /boot/vmlinuz-* >/dev/null 2>&1 ||
   ! [ -e /usr/share/OVMF/OVMF_CODE_4M.fd ]; then
	"$here/install-deps.sh"
	case $? in
	0) ;;
	77) skip "QEMU, mmdebstrap or a kernel is missing and cannot be installed" ;;
	*) skip "installing QEMU, mmdebstrap or the kernel failed (package archive unreachable?)" ;;
	esac
fi
qemu-system-x86_64 -version >/dev/null 2>&1 || skip "qemu-system-x86_64 does not start"
[ "$(id -u)" = 0 ] || skip "not root: the guest's root filesystem cannot be assembled"

qemu_extra=()
# S3 must be offered (QEMU 7.2 does, later machine types may not).
[ "$action" = suspend-then-hibernate ] && qemu_extra=(-global PIIX4_PM.disable_s3=0)
if [ "$efi" = 1 ]; then
	# OVMF (Debian's ovmf), its variable store a copy of the case's own
	# kept across the boots, as a machine's NVRAM is.
	ovmf_code=/usr/share/OVMF/OVMF_CODE_4M.fd ovmf_vars=/usr/share/OVMF/OVMF_VARS_4M.fd
	[ -r "$ovmf_code" ] && [ -r "$ovmf_vars" ] || skip "no OVMF ($ovmf_code): install ovmf"
	cp "$ovmf_vars" "$logdir/efivars.fd"
	qemu_extra+=(-drive "if=pflash,format=raw,unit=0,readonly=on,file=$ovmf_code"
		     -drive "if=pflash,format=raw,unit=1,file=$logdir/efivars.fd")
fi

# --- The release's root filesystem and build chroot (cached) -------------
step_start rootfs
tarball=$("$here/build-debian.sh" "$release" "$kind" "$cache")
case $? in
0) ;;
77) skip "the Debian package archive cannot be reached" ;;
*) die "building the $release root filesystem failed (see $cache/build-$release-$kind.log)" ;;
esac
buildtar=$("$here/build-debian.sh" "$release" build "$cache")
case $? in
0) ;;
77) skip "the Debian package archive cannot be reached" ;;
*) die "building the $release build chroot failed (see $cache/build-$release-build.log)" ;;
esac

step_end rootfs

# --- torpor, built in a chroot of the release for /usr as README says -----
step_start torpor-build
distro_build_torpor "$release" "$buildtar" "$srcdir" "$builddir" "$logdir" ||
	die "torpor could not be built in the $release chroot"
note "built in $release: $(in_build "" cc --version | head -n1), $(in_build "" meson --version | head -n1) meson"
step_end torpor-build

# --- The Debian package, built and checked in the release's chroot -------
if [ "$action" = deb ] || [ "$package" = 1 ]; then
	step_start deb-build
	distro_build_deb "$release" "$builddir" "$logdir" ||
		die "torpor's Debian package could not be built or has a lintian error in the $release chroot"
	step_end deb-build
	debs=("$debdir"/torpor_*.deb)
	[ -f "${debs[0]}" ] && [ -f "$(echo "$debdir"/torpor-plugin-dev_*.deb)" ] ||
		die "the $release build left no torpor and torpor-plugin-dev packages in $debdir"
	note "built in $release: $(cd "$debdir" && echo torpor*.deb) with debhelper $(in_build "" dpkg-query -W -f='${Version}' debhelper)"
	if [ "$action" = deb ]; then
		# (lintian ran when the package was built: its stamp is
		# written only after lintian found no error.)
		note "lintian $(in_build "" dpkg-query -W -f='${Version}' lintian) of $release: no error"
		note passed
		exit 0
	fi
fi
step_start guest

# --- The guest: root filesystem, configuration, initramfs -----------------
root=$logdir/root
disk=$logdir/disk.img
cleanup() {
	rm -rf "$root"
	rm -f "$disk.before" "$logdir/swap.img.before" "$logdir/staging.img" "$logdir/staging.img.before"
	rm -f "$logdir/args.img"
	[ "${TORPOR_VM_KEEP_DISK:-0}" = 1 ] || rm -f "$disk" "$logdir/swap.img"
}
trap cleanup EXIT
rm -rf "$root" "$logdir"/boot*.log
mkdir -p "$root"
tar -xf "$tarball" -C "$root" || die "unpacking $tarball failed"
# guest_debs: (package) the package as built, and a previous build of it
# for the upgrade: the same files under a lower version (VERSION~vmprev),
# so that dpkg upgrades from one to the other with every maintainer
# script of an upgrade, in the guest's /var/cache/torpor-vm-deb.
guest_debs() {
	local new=${debs[0]} ver prev=$logdir/prev
	ver=$(dpkg-deb -f "$new" Version) || return 1
	rm -rf "$prev"
	dpkg-deb -R "$new" "$prev" &&
		sed -i "s/^Version: .*/Version: $ver~vmprev/" "$prev/DEBIAN/control" &&
		mkdir -p "$root/var/cache/torpor-vm-deb" &&
		dpkg-deb -Zgzip -b "$prev" "$root/var/cache/torpor-vm-deb/torpor_${ver}~vmprev_amd64.deb" >/dev/null &&
		cp "$new" "$root/var/cache/torpor-vm-deb/" || return 1
	rm -rf "$prev"
}
if [ "$package" = 1 ]; then
	guest_debs || die "the packages could not be put in the guest"
elif [ "$kernel_own" = 0 ]; then
	in_build "$root" meson install -C /build --destdir /dest --no-rebuild --quiet \
		>"$logdir/meson-install.log" 2>&1 ||
		{ cat "$logdir/meson-install.log" >&2; die "meson install --destdir failed"; }
fi

# The release's own kernel: the one its initramfs is built for.  BIOS
# boots the uncompressed kernel through QEMU's PVH entry (faster under
# TCG); EFI and suspend to RAM (only a bzImage-booted guest wakes from
# S3) boot the bzImage.
kver=$(ls "$root/lib/modules" | sort -V | tail -n1)
[ -n "$kver" ] && [ -s "$root/boot/vmlinuz-$kver" ] || die "no kernel in the $release root filesystem"
if [ "$grub" = 1 ]; then
	# GRUB on the disk starts the kernels (no -kernel): kver, the newest,
	# is GRUB's default (the update), kold Debian 12's own 6.1, which
	# boot 1 runs.
	kold=$(ls "$root/lib/modules" | sort -V | head -n1)
	[ "$kold" != "$kver" ] && [ -s "$root/boot/vmlinuz-$kold" ] ||
		die "the grub root filesystem has one kernel, not two: $(ls "$root/lib/modules" | tr '\n' ' ')"
	kernel= kvers="$kold $kver"
	note "$release, kernels $kold (booted) and $kver (GRUB's default), GRUB (grub-pc) in the MBR, $gen, BIOS, $vm_smp vCPUs"
else
	mkdir -p "$builddir/vm-kernel"
	kernel=$builddir/vm-kernel/vmlinuz-$kver
	cp "$root/boot/vmlinuz-$kver" "$kernel"
	if [ "$efi" = 0 ] && [ "$action" != suspend-then-hibernate ] &&
	   "$here/extract-vmlinux.sh" "$kernel" "$builddir/vm-kernel/vmlinux-$kver"; then
		kernel=$builddir/vm-kernel/vmlinux-$kver
	fi
	kvers=$kver
	note "$release, kernel $kver, $gen, $([ "$efi" = 1 ] && echo EFI || echo BIOS), $vm_smp vCPUs"
fi

# in_guest CMD...: run CMD in the guest's root with /proc, /sys and /dev,
# in a mount namespace of its own (the mounts go with it).  With
# guest_cpuinfo set, that file is the chroot's /proc/cpuinfo.
in_guest() {
	unshare --mount --propagation private -- sh -c '
		r=$1 c=$2; shift 2
		mount -t proc proc "$r/proc" && mount -t sysfs sys "$r/sys" &&
		{ [ -z "$c" ] || mount --bind "$c" "$r/proc/cpuinfo"; } &&
		mount --rbind /dev "$r/dev" && exec chroot "$r" "$@"' sh "$root" "${guest_cpuinfo:-}" "$@"
}

# The swap area: a partition of the one disk, or (stale) a disk of its
# own that boot 2 goes without: nofail, so that its absence fails nothing,
# and a device timeout, as for any disk that may be absent: without it
# systemd's swap job waits 90 s for the missing device in boot 2, after
# torpor-stale-image.service is done.  (2 s was too short for the disk
# that is there in boot 1 under TCG; 30 s leaves it room.)
swapdev=/dev/vda2 swapopts=sw
[ "$stale" != 0 ] && swapdev=/dev/vdb swapopts=sw,nofail,x-systemd.device-timeout=30s
# The swap a normal boot has on: the swap writer's area, or (btrfs) zram.
swaps_seen=$swapdev
[ "$layout" = btrfs ] && swaps_seen=/dev/zram0
[ "$layout" = luks ] && swaps_seen='/dev/dm-[0-9]+'
[ "$luks_swap" = file ] && swaps_seen=/swap.img
# (vda3_crypt and the random-key vda4_random, in either order.)
[ "$luks_swap" = partition ] && swaps_seen='/dev/dm-[0-9]+ /dev/dm-[0-9]+'

# guest_conf WRITER LINE...: torpor.conf as README.md gives it, with
# LINEs in the writer's section.
guest_conf() {
	local w=$1
	shift
	printf '# VM suite case %s\n[torpor]\nwriter = %s\nfilters = lz4, checksum\n\n[%s]\n' \
		"$case_name" "$w" "$w"
	printf '%s\n' "$@"
} >"$root/etc/torpor/torpor.conf"

# The swap area's UUID (package: the installer's RESUME= names it).
swap_uuid=$(cat /proc/sys/kernel/random/uuid)

# The btrfs layout's image file, as the guest names it.
imagefile=/var/lib/torpor/image
# configure_btrfs: Fedora's layout on Debian: the root on btrfs (fstab,
# the btrfs module in the initramfs), swap on zram only (a unit doing
# what Fedora's zram-generator does).  No torpor.conf: `torpor setup`
# makes the file writer's image file and the configuration in boot 1.
configure_btrfs() {
	echo "/dev/vda1 / btrfs defaults 0 0" >"$root/etc/fstab"
	echo 'add_drivers+=" btrfs "' >"$root/etc/dracut.conf.d/20-torpor-vm-btrfs.conf"
	cat >"$root/etc/systemd/system/torpor-vm-zram.service" <<-'EOF'
	[Unit]
	Description=zram swap, as Fedora's zram-generator makes it
	DefaultDependencies=no
	Before=swap.target
	[Service]
	Type=oneshot
	RemainAfterExit=yes
	ExecStart=/bin/sh -c 'modprobe zram && echo 256M >/sys/block/zram0/disksize && mkswap /dev/zram0 && swapon -p 100 /dev/zram0'
	[Install]
	WantedBy=swap.target
	EOF
	in_guest systemctl enable -q torpor-vm-zram.service
}

# The configuration, step by step as README.md gives it.
configure_guest() {
	[ "$package" = 1 ] || mkdir -p "$root/etc/torpor"
	if [ "$layout" = btrfs ]; then
		configure_btrfs
	elif [ "$layout" = luks ]; then
		# No torpor.conf: `torpor setup` writes it in boot 1.  The
		# install boot writes fstab, crypttab and RESUME=.
		install -m 755 "$here/distro/luks-install" "$root/usr/local/sbin/torpor-vm-install"
		[ "$gen" = initramfs-tools ] || printf '%s\n' 'add_dracutmodules+=" crypt lvm "' \
			>"$root/etc/dracut.conf.d/20-torpor-vm-luks.conf"
	elif [ "$package" = 1 ] || [ "$kernel_own" = 1 ]; then
		# No torpor yet (package; grub-kernel: none at all): as the
		# installer leaves a machine, the kernel's own resume from the
		# swap partition (RESUME=).
		echo "$swapdev none swap $swapopts 0 0" >>"$root/etc/fstab"
		echo "RESUME=UUID=$swap_uuid" >"$root/etc/initramfs-tools/conf.d/resume"
	else
		guest_conf swap "device = $swapdev"
		echo "$swapdev none swap $swapopts 0 0" >>"$root/etc/fstab"
	fi
	if [ "$gen" = initramfs-tools ]; then
		[ "$layout" = luks ] || [ "$package" = 1 ] || [ "$kernel_own" = 1 ] ||
			echo "RESUME=none" >"$root/etc/initramfs-tools/conf.d/resume"
		# The suite's own: only the modules this guest needs, so
		# that update-initramfs takes seconds, not minutes.
		echo "MODULES=list" >"$root/etc/initramfs-tools/conf.d/torpor-vm"
		printf '%s\n' virtio_pci virtio_blk ext4 \
			>>"$root/etc/initramfs-tools/modules"
	fi
	# The case's own pieces: the marker, the driver, a system-sleep hook.
	install -m 755 "$builddir/tests/vm/marker" "$root/usr/local/bin/marker"
	install -m 755 "$here/distro/driver" "$root/usr/local/sbin/torpor-vm-driver"
	# -D: systemd 257 (Debian 13) no longer ships the empty directory.
	install -D -m 755 "$here/distro/sleep-hook" \
		"$root/usr/lib/systemd/system-sleep/torpor-vm-hook"
	mkdir -p "$root/etc/polkit-1/rules.d"
	install -m 644 "$here/distro/polkit-vmuser.rules" \
		"$root/etc/polkit-1/rules.d/50-torpor-vm.rules"
	install -m 644 "$here/distro/torpor-vm-marker.service" \
		"$here/distro/torpor-vm-driver.service" "$root/etc/systemd/system/"
	mkdir -p "$root/etc/systemd/system/systemd-$action.service.d"
	install -m 644 "$here/distro/hibernate-console.conf" \
		"$root/etc/systemd/system/systemd-$action.service.d/vm-console.conf"
	if [ "$action" = suspend-then-hibernate ]; then
		mkdir -p "$root/etc/systemd/sleep.conf.d"
		install -m 644 "$here/distro/sleep-delay.conf" \
			"$root/etc/systemd/sleep.conf.d/torpor-vm.conf"
	fi
	in_guest systemctl enable -q torpor-vm-marker.service torpor-vm-driver.service
	[ "$grub" = 0 ] || configure_grub
}
# configure_grub: (grub) /etc/default/grub as a user of a serial console
# sets it: the words every boot of the case needs (what boot() gives
# -append; GRUB fixes them), no menu wait, GRUB's own lines on the serial
# console.  update-grub runs on the disk (install_grub).
configure_grub() {
	local f=$root/etc/default/grub
	sed -i -e 's/^GRUB_TIMEOUT=.*/GRUB_TIMEOUT=0/' \
		-e "s/^GRUB_CMDLINE_LINUX=.*/GRUB_CMDLINE_LINUX=\"console=ttyS0 loglevel=4 panic=-1 $aslr_words sysrq_always_enabled systemd.show_status=false ${TORPOR_VM_APPEND:-}\"/" \
		-e 's/^GRUB_CMDLINE_LINUX_DEFAULT=.*/GRUB_CMDLINE_LINUX_DEFAULT="quiet"/' "$f"
	printf '%s\n' 'GRUB_TERMINAL=serial' 'GRUB_SERIAL_COMMAND="serial --unit=0 --speed=115200"' >>"$f"
	grep -q '^GRUB_TIMEOUT=0$' "$f" && grep -q '^GRUB_CMDLINE_LINUX="console=ttyS0 ' "$f"
}
# In a subshell of its own with -e, and not in a tested context (where
# bash ignores -e): any step that fails fails the case.
(set -e; configure_guest) >"$logdir/configure.log" 2>&1
[ $? = 0 ] || { cat "$logdir/configure.log" >&2; die "configuring the guest failed"; }

if [ "$package" = 1 ]; then
	# The previous build, installed with apt in the guest's tree as an
	# image builder pre-installs a package: its maintainer scripts (the
	# units enabled; systemd is not running, nothing is started) and its
	# initramfs trigger, whose initramfs boot 1 starts from.  (In the
	# guest under TCG each initramfs build costs a minute; the upgrade,
	# setup and purge are done there.)
	DEBIAN_FRONTEND=noninteractive in_guest apt-get install -y -o Dpkg::Use-Pty=0 \
		"/$(cd "$root" && echo var/cache/torpor-vm-deb/torpor_*~vmprev_amd64.deb)" >"$logdir/initramfs.log" 2>&1 &&
		in_guest dpkg-query -W -f='${Version}\n' torpor | grep -q '~vmprev$' &&
		in_guest systemctl is-enabled -q torpord.socket
elif [ "$grub" = 1 ]; then
	# Both kernels' (torpor's hook in each).
	in_guest update-initramfs -u -k all >"$logdir/initramfs.log" 2>&1
elif [ "$gen" = initramfs-tools ]; then
	in_guest update-initramfs -u -k "$kver" >"$logdir/initramfs.log" 2>&1
else
	# Built in a chroot: host-only mode would look at this host's disks
	# (build-debian.sh's dracut.conf.d says no-hostonly, virtio and ext4).
	in_guest dracut -f --kver "$kver" >"$logdir/initramfs.log" 2>&1
fi || { tail -30 "$logdir/initramfs.log" >&2; die "$gen failed"; }
initrd=$logdir/initrd.img
cp "$root/boot/initrd.img-$kver" "$initrd" || die "no initrd.img-$kver in the guest"

# host_built_initramfs: (luks) the initramfs that the installer would
# leave in /boot, built here in the guest's tree rather than in the
# install boot, where TCG spent most of that boot over it (initramfs-tools
# 80 s of 150, about 7 s here): what is under test is torpor setup's own
# rebuild in boot 1, and the boots.  The install boot gives vda2's
# container the UUID chosen here (torpor.luks-uuid=) and builds no
# initramfs (torpor.initramfs=built); this one stays in the tree's /boot,
# which the install copies.  What differs from the installer's, none of
# which boot 1 reaches: the root's container is named in a crypttab made
# for the build (initramfs-tools: with the initramfs option, as cryptroot
# cannot see here that the root is on it; dracut: the file itself, as a
# host-only build would carry it, the rest of the build no-hostonly),
# RESUME=none (the installer's names a swap volume that does not exist
# yet, and boot 1 resumes nothing), and cryptroot sees the guest's CPU
# flags, without AES-NI (qemu64), as in the guest.  The tree's crypttab
# and RESUME= are put back as they were: the install writes the
# installer's, and dracut's host-only setting, for setup's rebuild.
luks_uuid=
host_built_initramfs() {
	local tab=$root/etc/crypttab resume=$root/etc/initramfs-tools/conf.d/resume
	local conf=$root/etc/dracut.conf.d/40-torpor-vm-installed.conf rc=0 opts=luks,discard
	luks_uuid=$(cat /proc/sys/kernel/random/uuid)
	[ ! -e "$tab" ] || mv "$tab" "$tab.torpor-vm"
	if [ "$gen" = initramfs-tools ]; then
		[ ! -e "$resume" ] || mv "$resume" "$resume.torpor-vm"
		echo RESUME=none >"$resume"
		opts=$opts,initramfs
	else
		echo 'install_items+=" /etc/crypttab "' >"$conf"
	fi
	printf 'vda2_crypt UUID=%s none %s\n' "$luks_uuid" "$opts" >"$tab"
	sed '/^flags/s/ aes / /' /proc/cpuinfo >"$logdir/cpuinfo"
	if [ "$gen" = initramfs-tools ]; then
		guest_cpuinfo=$logdir/cpuinfo in_guest update-initramfs -u -k "$kver"
	else
		guest_cpuinfo=$logdir/cpuinfo in_guest dracut -f --kver "$kver"
	fi >"$logdir/initramfs-installed.log" 2>&1 || rc=1
	rm -f "$tab" "$resume" "$conf" "$logdir/cpuinfo"
	[ ! -e "$tab.torpor-vm" ] || mv "$tab.torpor-vm" "$tab"
	[ ! -e "$resume.torpor-vm" ] || mv "$resume.torpor-vm" "$resume"
	[ "$rc" = 0 ] || { tail -30 "$logdir/initramfs-installed.log" >&2; return 1; }
	# What boot 1 needs of it: the root's container in its crypttab.
	if [ "$gen" = initramfs-tools ]; then
		in_guest sh -c "unmkinitramfs /boot/initrd.img-$kver /tmp/initrd-check &&
			cat /tmp/initrd-check/main/cryptroot/crypttab /tmp/initrd-check/cryptroot/crypttab 2>/dev/null
			rm -rf /tmp/initrd-check"
	else
		in_guest lsinitrd -f etc/crypttab "/boot/initrd.img-$kver"
	fi | grep -q "^vda2_crypt UUID=$luks_uuid " ||
		{ echo "its crypttab does not unlock vda2_crypt" >&2; return 1; }
}
if [ "$layout" = luks ]; then
	host_built_initramfs || die "the installed system's initramfs could not be built"
fi
step_end guest

# check_initrd PATH: what went into the initramfs at PATH (in the guest's
# root): torpor-resume, the chain's plugins and their libraries, the
# configuration; and (luks) what unlocks and activates the swap volume.
check_initrd() {
	local want wants list=$logdir/initrd.list
	if [ "$gen" = initramfs-tools ]; then
		in_guest lsinitramfs "$1" >"$list" 2>/dev/null
	else
		in_guest lsinitrd "$1" >"$list" 2>/dev/null
	fi
	wants="sbin/torpor-resume torpor/plugins/$writer_so torpor/plugins/lz4.so"
	wants="$wants torpor/plugins/checksum.so liblz4.so libgcrypt.so libinih.so etc/torpor/torpor.conf"
	# (dracut's systemd initrd unlocks with systemd-cryptsetup.)
	[ "$layout" = luks ] && wants="$wants sbin/lvm dm-crypt.ko"
	[ "$layout" = luks ] && [ "$gen" = initramfs-tools ] && wants="$wants sbin/cryptsetup"
	[ "$layout" = luks ] && [ "$gen" = dracut ] && wants="$wants systemd/systemd-cryptsetup"
	for want in $wants; do
		grep -q -- "$want" "$list" || fail "the initramfs lacks $want"
	done
	grep -q 'torpor/plugins/zlib.so' "$list" &&
		fail "the initramfs has a plugin the chain does not use (zlib)"
}
writer_so=swap.so
[ "$layout" = btrfs ] && writer_so=file.so
# (luks, btrfs: torpor setup makes the configuration and the initramfs in
# boot 1.)
if [ "$layout" = swap ] && [ "$package" = 0 ] && [ "$kernel_own" = 0 ]; then
	for k in $kvers; do
		check_initrd "/boot/initrd.img-$k"
	done
fi

# make_btrfs_root: the guest's tree as a btrfs partition (mkfs.btrfs
# --rootdir on an image of its own, copied in at the partition's start).
make_btrfs_root() {
	local part=$logdir/root.btrfs
	rm -f "$part"
	truncate -s $((root_sectors * 512)) "$part"
	mkfs.btrfs -q -f --rootdir "$root" "$part" >"$logdir/mkfs.log" 2>&1 || return 1
	dd if="$part" of="$disk" bs=1M seek=$((root_start / 2048)) conv=notrunc,sparse status=none || return 1
	rm -f "$part"
}

# btrfs_boot_file PATH DEST: copy a file out of the btrfs root, through a
# read-only loop device and a mount that replays no log: the filesystem
# stays as the hibernated guest left it (its generation is the image's
# root filesystem guard).
btrfs_boot_file() {
	local mnt=$logdir/mnt loop rc=0
	loop=$(losetup -f --show -r -o $((root_start * 512)) --sizelimit $((root_sectors * 512)) "$disk") ||
		return 1
	mkdir -p "$mnt"
	if mount -o ro,rescue=nologreplay "$loop" "$mnt"; then
		cp "$mnt$1" "$2" || rc=1
		umount "$mnt"
	else
		rc=1
	fi
	losetup -d "$loop"
	return $rc
}

root_dev=/dev/vda1
argsdisk=$logdir/args.img
# luks: the passphrase, typed at the initramfs' prompt (see qemu-lib.sh).
luks_pass=torpor-vm-passphrase boot_sectors=$((256 * 2048))
if [ "$layout" = luks ]; then
	root_dev=/dev/mapper/torpor--vm--vg-root
	vm_type_when='Please (unlock disk|enter passphrase for disk)'
fi

# boot_file NAME DEST: copy a file out of the disk's /boot (luks: vda1,
# ext4, which the host can read; package: the root filesystem's /boot).
# The guest powered off with the filesystem mounted (or hibernated): its
# journal is replayed on the copy first, as a mount would, so that a file
# written just before is read as the guest left it.
boot_file() {
	local img=$logdir/boot.part rc=0 sectors=$boot_sectors path=/$1
	[ "$layout" = swap ] && sectors=$root_sectors path=/boot/$1
	dd if="$disk" of="$img" bs=1M skip=$((root_start / 2048)) count=$((sectors / 2048)) \
		conv=sparse status=none || rc=1
	# (e2fsck: 0, or 1 when it replayed the journal.)
	[ "$rc" = 0 ] && { e2fsck -E journal_only -y "$img" >/dev/null 2>&1; [ $? -le 1 ]; } || rc=1
	[ "$rc" = 0 ] && debugfs -R "dump $path $2" "$img" >/dev/null 2>&1 && [ -s "$2" ] || rc=1
	rm -f "$img"
	return $rc
}

# install_luks: the install boot (tests/vm/distro/luks-install) from a
# staging copy of the guest's tree on vdb; then the initramfs it built.
install_luks() {
	local staging=$logdir/staging.img append limit=$((600 * scale)) typed=$vm_type_when table
	if [ "$luks_swap" = partition ]; then
		# (vda4: 64 MiB for the random-key swap, after the disk's end;
		# the size said whole rather than grown, so that it cannot be
		# grown twice or from a size other than the one above.)
		truncate -s $(((swap_start + swap_sectors + 64 * 2048) * 512)) "$disk"
		table=$(printf 'label: dos\n%s,%s,83\n%s,%s,83\n%s,%s,83\n%s,%s,83\n' \
			"$root_start" "$boot_sectors" \
			$((root_start + boot_sectors)) $((root_sectors - boot_sectors)) \
			"$swap_start" "$swap_sectors" $((swap_start + swap_sectors)) $((64 * 2048)))
	else
		table=$(printf 'label: dos\n%s,%s,83\n%s,%s,83\n' "$root_start" "$boot_sectors" \
			$((root_start + boot_sectors)) $((root_sectors + swap_sectors - boot_sectors)))
	fi
	# (Once, in a clean-clone run, sfdisk refused the fourth partition
	# with EINVAL, which is what it says when that partition does not fit
	# the disk; the same table passed before and after.  What it was
	# given is said, for the next time.)
	sfdisk -q "$disk" <<<"$table" || {
		echo "sfdisk refused this table for $disk ($(stat -c %s "$disk") bytes): $(tr '\n' ';' <<<"$table")" >&2
		return 1
	}
	rm -f "$staging"
	truncate -s 2G "$staging"
	mkfs.ext4 -q -F -d "$root" "$staging" || return 1
	append="root=/dev/vdb rw init=/usr/local/sbin/torpor-vm-install console=ttyS0 loglevel=4"
	append="$append panic=-1 torpor.pass=$luks_pass torpor.gen=$gen torpor.swap=$luks_swap $aslr_words"
	[ -z "$luks_uuid" ] || append="$append torpor.initramfs=built torpor.luks-uuid=$luks_uuid"
	# (The disk step ends here: the install boot is a step of its own.)
	step_end disk
	note "boot 0: the install (timeout ${limit}s)"
	vm_type_when=
	qemu_boot "$logdir/boot0.log" "$limit" "$MEM" "$kernel" "$initrd" "$append" "$disk" "$staging"
	vm_type_when=$typed
	rm -f "$staging"
	note "boot 0: QEMU exit $boot_rc after ${boot_secs}s"
	has 0 'TORPOR-VM: installed ' || { tail -n 40 "$logdir/boot0.log" >&2; return 1; }
	note "boot 0: $(grep -h -m1 'TORPOR-VM: installed' "$logdir/boot0.log" | sed 's/.*TORPOR-VM: //')"
	# The swap volume's first byte on the disk (under the encryption).
	luks_swap_at=$(field 0 'TORPOR-VM: installed ' swap-sector)
	[ -n "$luks_swap_at" ] || { echo "the install boot did not say where the swap volume lies" >&2; return 1; }
	luks_swap_at=$(((root_start + boot_sectors + luks_swap_at) * 512))
	boot_file "initrd.img-$kver" "$initrd" || { echo "no initrd.img-$kver in the installed /boot" >&2; return 1; }
}

# setup_after_boot N: boot 1's torpor setup rebuilt the initramfs in
# /boot: the next boots use it, and it must hold what a resume needs.
setup_after_boot() {
	[ "$1" = 1 ] || return 0
	if [ "$layout" = btrfs ]; then
		btrfs_boot_file "/boot/initrd.img-$kver" "$initrd"
	else
		boot_file "initrd.img-$kver" "$initrd"
	fi || { fail "boot 1: no initrd.img-$kver in /boot"; return; }
	cp "$initrd" "$root/tmp/initrd.img" && check_initrd /tmp/initrd.img
}

# install_grub: (grub) what the installer does on the disk, on the host
# (not under test, and cheap here): grub-install into the MBR (grub-pc,
# BIOS) and update-grub in a chroot of the root filesystem, as Debian's
# installer runs them; then a one-shot of 6.1's entry (grub-editenv, as
# grub-reboot writes it) for boot 1, which runs the kernel the machine ran
# before the update.  Two loop devices, the disk and its root partition
# (at its offset): this host's kernel scans no partition table on a loop
# device (losetup -P makes no loopNp1), so GRUB sees the root on another
# disk than the MBR it writes, and its core image finds the root by its
# UUID (search.fs_uuid), as it does at boot; part_msdos, which it would
# take from the root's partition, is named (without it: "no such
# device").  The chroot's /dev is its
# own: the two devices named as the guest names them, /dev/vda and
# /dev/vda1 (update-grub's 10_linux writes no entry for a root on a loop
# device backed by a file), and the /dev/disk/by-uuid link without which
# it writes root=/dev/vda1 instead of root=UUID=.
once_61=
install_grub() {
	local dloop ploop mnt=$logdir/mnt rc=0
	dloop=$(losetup -f --show "$disk") || return 1
	ploop=$(losetup -f --show -o $((root_start * 512)) --sizelimit $((root_sectors * 512)) "$disk") ||
		{ losetup -d "$dloop"; return 1; }
	mkdir -p "$mnt"
	once_61="gnulinux-advanced-$root_uuid>gnulinux-$kold-advanced-$root_uuid"
	unshare --mount --propagation private -- sh -exc '
		dloop=$1 ploop=$2 m=$3 uuid=$4 once=$5 logdir=$6 refuse=$7
		d=$logdir/dev
		mkdir -p "$d"
		mount -t tmpfs -o mode=755 dev "$d"
		cp -a /dev/null /dev/zero /dev/full /dev/random /dev/urandom "$d/"
		set -- $(stat -c "%t %T" "$dloop")
		mknod -m 600 "$d/vda" b $((0x$1)) $((0x$2))
		set -- $(stat -c "%t %T" "$ploop")
		mknod -m 600 "$d/torpor-vm-root" b $((0x$1)) $((0x$2))
		mkdir -p "$d/disk/by-uuid"
		ln -s ../../torpor-vm-root "$d/disk/by-uuid/$uuid"
		# (This namespace only: GRUB reads the root device from
		# mountinfo, which must name it as the chroot sees it.)
		mount --bind "$d" /dev
		mount /dev/torpor-vm-root "$m"
		mount --bind /dev "$m/dev"
		mount -t proc proc "$m/proc"
		mount -t sysfs sys "$m/sys"
		chroot "$m" grub-install --target=i386-pc --modules=part_msdos /dev/vda
		chroot "$m" update-grub
		grep -q "root=UUID=$uuid " "$m/boot/grub/grub.cfg"
		chroot "$m" grub-editenv /boot/grub/grubenv set "next_entry=$once"
		chroot "$m" grub-editenv /boot/grub/grubenv list
		# (refuse: a grubenv others may change, which torpor will not
		# write: no one-shot can be set.)
		[ "$refuse" = 0 ] || chmod 0666 "$m/boot/grub/grubenv"
		cp "$m/boot/grub/grub.cfg" "$m/etc/default/grub" "$logdir/"
		umount "$m/sys" "$m/proc" "$m/dev"
		umount "$m"' sh "$dloop" "$ploop" "$mnt" "$root_uuid" "$once_61" "$logdir" "$grub_refuse" || rc=1
	losetup -d "$ploop"
	losetup -d "$dloop"
	[ "$rc" = 0 ] || return 1
	# Both entries there, by the ids the one-shot names.
	grep -q "submenu .*\\\$menuentry_id_option 'gnulinux-advanced-$root_uuid'" "$logdir/grub.cfg" &&
		grep -q "menuentry .*\\\$menuentry_id_option 'gnulinux-$kold-advanced-$root_uuid'" "$logdir/grub.cfg" &&
		grep -q "menuentry .*\\\$menuentry_id_option 'gnulinux-$kver-advanced-$root_uuid'" "$logdir/grub.cfg" ||
		{ echo "grub.cfg lacks the entries of $kold and $kver" >&2; return 1; }
}
# grub_env_of_cfg: the first entry's kernel (GRUB's default, "0").
grub_env_of_cfg() {
	sed -n "s/^[[:space:]]*linux[[:space:]]*\/boot\/vmlinuz-\([^ ]*\) .*/\1/p" "$logdir/grub.cfg" | head -n 1
}

# --- The disk: ext4 root on vda1, swap on vda2 ----------------------------
root_uuid=$(cat /proc/sys/kernel/random/uuid)
# (btrfs: one btrfs partition, vda1, over both.)
root_start=2048 root_sectors=$((1536 * 2048)) swap_sectors=$((768 * 2048))
swap_start=$((root_start + root_sectors))
rm -f "$disk"
truncate -s $(((swap_start + swap_sectors) * 512)) "$disk"
resume_words= image_at=
step_start disk
if [ "$layout" = btrfs ]; then
	root_sectors=$((root_sectors + swap_sectors))
	printf 'label: dos\n%s,%s,83\n' "$root_start" "$root_sectors" | sfdisk -q "$disk" ||
		die "sfdisk failed"
	make_btrfs_root || die "making the btrfs root failed"
	swapdisk=$disk disks=("$disk")
elif [ "$layout" = luks ]; then
	install_luks || die "the install boot failed"
	swapdisk=$disk disks=("$disk")
else
	printf 'label: dos\n%s,%s,83\n%s,%s,82\n' "$root_start" "$root_sectors" \
		"$swap_start" "$swap_sectors" | sfdisk -q "$disk" || die "sfdisk failed"
	mkfs.ext4 -q -F -U "$root_uuid" -E offset=$((root_start * 512)) -d "$root" "$disk" \
		$((root_sectors / 2))k || die "mkfs.ext4 -d failed"
	if [ "$grub" = 1 ]; then
		install_grub >"$logdir/grub-install.log" 2>&1 ||
			{ cat "$logdir/grub-install.log" >&2; die "installing GRUB on the disk failed"; }
		note "GRUB: default $(grub_env_of_cfg), boot 1 once: $once_61"
	fi
	truncate -s $((swap_sectors * 512)) "$logdir/swap.img"
	mkswap -q -U "$swap_uuid" "$logdir/swap.img" >/dev/null || die "mkswap failed"
	dd if="$logdir/swap.img" of="$disk" bs=4096 count=1 seek=$((swap_start / 8)) \
		conv=notrunc 2>/dev/null
	# (package: setup_after_boot lists the initramfs in the tree.)
	[ "$package" = 1 ] || rm -rf "$root"
	swapdisk=$logdir/swap.img swap_at=0 disks=("$disk" "$swapdisk")
	if [ "$stale" = 0 ]; then
		rm -f "$swapdisk"
		swapdisk=$disk swap_at=$((swap_start * 512)) disks=("$disk")
	fi
fi
step_end disk
swap_tail() {
	dd if="$swapdisk" bs=1 skip=$((swap_at + 4086)) count=10 2>/dev/null | tr -d '\0'
}
# stored: "image" when the storage holds an image, else "none" (the swap
# signature is back, or the image file's signature gone); luks: "unknown"
# (the host cannot read inside the container: the guest's own words say).
stored() {
	if [ "$layout" = luks ]; then
		echo unknown
		return
	elif [ "$layout" = btrfs ]; then
		[ "$(dd if="$disk" bs=1 skip="$image_at" count=8 2>/dev/null | tr -d '\0')" = TORPORF1 ]
	else
		[ "$(swap_tail)" != SWAPSPACE2 ]
	fi && echo image || echo none
}
# stored_is WHAT: the storage holds WHAT (image, none), or the host cannot
# tell (luks).
stored_is() {
	case "$(stored)" in
	"$1" | unknown) return 0 ;;
	*) return 1 ;;
	esac
}

# --- Booting --------------------------------------------------------------
# boot N TIMEOUT: sets boot_rc and boot_secs.
boot() {
	local n=$1 limit=$(($2 * scale))
	local append="root=$root_dev ro console=ttyS0 quiet loglevel=4 panic=-1 $aslr_words"
	[ "$layout" = btrfs ] && append="$append rootfstype=btrfs ${boot_words-$resume_words}"
	{ [ "$layout" != swap ] || [ "$package" = 1 ]; } && [ "$n" = 1 ] && append="$append torpor.setup=1"
	[ "$package" = 1 ] && append="$append torpor.package=1"
	# (luks, the swap file: the words torpor setup printed in boot 1.)
	[ "$layout" = luks ] && append="$append $resume_words"
	# luks: in boot 1, after the initramfs rebuild (many programs run),
	# the kernel's preallocation of the image's memory, which zeroes
	# nearly all free pages (Debian's kernels zero every page they hand
	# out: init_on_alloc), took TCG 70 ms a store: not done in 10 minutes,
	# the kernel's own code (clear_page_rep under
	# hibernate_preallocate_memory, SysRq-l), with one host thread or
	# two.  Without it: 0.35 s.  A TCG artefact: leave it out here.
	[ "$layout" = luks ] && append="$append init_on_alloc=0"
	append="$append systemd.show_status=false torpor.boot=$n torpor.action=$action ${boot_extra:-} ${TORPOR_VM_APPEND:-}"
	note "boot $n (timeout ${limit}s)"
	if [ "$grub" = 1 ]; then
		# GRUB's command line is the same at every boot: the boot's
		# own words go on the small disk (serial torpor-args) the
		# driver reads, written before the boot (nothing on the root).
		printf '%s\n' "torpor.boot=$n torpor.action=$action ${boot_extra:-}" >"$argsdisk"
		truncate -s 1M "$argsdisk"
		# (In a PCI slot after the root disk's: SeaBIOS boots the
		# first disk it finds, and only that one.)
		qemu_extra=(-drive "file=$argsdisk,if=none,id=targs,format=raw,readonly=on"
			    -device virtio-blk-pci,drive=targs,serial=torpor-args,addr=0x10)
	fi
	qemu_boot "$logdir/boot$n.log" "$limit" "$MEM" "$kernel" "$initrd" "$append" "${disks[@]}"
	note "boot $n: QEMU exit $boot_rc after ${boot_secs}s"
	{ [ "$layout" != swap ] || [ "$package" = 1 ]; } && setup_after_boot "$n"
	[ "$boot_rc" = 124 ] &&
		fail "boot $n did not power off within ${limit}s; blocked: $(hang_summary "$logdir/boot$n.log")"
	trouble=$(kernel_trouble "$logdir/boot$n.log") &&
		fail "boot $n: kernel panic or oops: ${trouble#*:}"
	return 0
}
show_logs() {
	local f
	[ "$failures" -gt 0 ] || return 0
	for f in "$logdir"/boot*.log; do
		echo "======== $f ========" >&2
		cat "$f" >&2
	done
	echo "vm: $case_name: $failures failure(s); logs in $logdir" >&2
}
trap 'show_logs; cleanup' EXIT

# suspend-then-hibernate, boot 1: the hooks around the suspend, torpor
# suspends with the alarm set, the alarm wakes the guest, torpor hibernates.
s2h_delay=20
check_s2h_boot1() {
	has 1 'hook pre suspend-then-hibernate action=suspend$' ||
		fail "boot 1: no pre hook with SYSTEMD_SLEEP_ACTION=suspend"
	# The delay of the drop-in (without it: 2 hours).
	has 1 "suspending \\('mem'\\); the RTC wakes the machine in $s2h_delay s" ||
		fail "boot 1: torpor did not suspend with the alarm $s2h_delay s (HibernateDelaySec=) ahead: $(grep -h 'suspending' "$logdir/boot1.log")"
	# The kernel disables the alarm once it has rung, but from a work
	# item (the RTC core's irqwork, queued at the resume), which may not
	# have run when torpor looks: then torpor goes by the time asleep,
	# which must have reached the delay (less the RTC's second).
	has 1 'the RTC alarm has rung: awake after' ||
		awake_after_delay 1 "$s2h_delay" ||
		fail "boot 1: the RTC alarm had not rung when the guest woke: $(grep -h 'awake after' "$logdir/boot1.log")"
	has 1 'the RTC alarm woke the machine: hibernating' ||
		fail "boot 1: torpor did not hibernate after the RTC alarm"
	has 1 'hook post suspend-then-hibernate action=suspend$' ||
		fail "boot 1: no post hook after the suspend"
	has 1 'hook pre suspend-then-hibernate action=hibernate$' ||
		fail "boot 1: no pre hook with SYSTEMD_SLEEP_ACTION=hibernate"
}

# suspend-then-hibernate, boot 2: the resumed session's kernel log says it
# entered S3 and left it, woken by the RTC; the hooks ran in order.
check_s2h_boot2() {
	local w1 w2
	has 2 'TORPOR-VM: kernel: .*PM: suspend entry \(deep\)' ||
		fail "boot 2: the kernel of boot 1 never entered S3 (PM: suspend entry (deep))"
	has 2 'TORPOR-VM: kernel: .*PM: suspend exit' ||
		fail "boot 2: the kernel of boot 1 never left suspend to RAM"
	# The RTC's alarm interrupt was handled (its wakeup source's
	# event_count, which the RTC core raises), and it had been by the time
	# torpor, woken, read the RTC's wakealarm (boot 1: "has rung").  Woken
	# through QMP's system_wakeup instead, the count stays 0 (irq 8's does
	# not: it is a figure only); nothing else can wake this guest.
	w1=$(field 1 'TORPOR-VM: wakeups ' rtc-events)
	w2=$(field 2 'TORPOR-VM: wakeups ' rtc-events)
	[ -n "$w1" ] && [ -n "$w2" ] && [ "$w2" -gt "$w1" ] ||
		fail "boot 2: the RTC's wakeup source saw no event across the suspend ($w1 -> $w2)"
	has 2 'hooks=pre suspend-then-hibernate suspend;post suspend-then-hibernate suspend;pre suspend-then-hibernate hibernate;post suspend-then-hibernate hibernate;$' ||
		fail "boot 2: the hooks did not run as systemd-sleep runs them: $(grep -h 'hooks=' "$logdir/boot2.log")"
}
[ "$action" = suspend-then-hibernate ] && scale=$((scale * 2))

# setup_words: the words torpor setup printed in boot 1 for a file's place
# (resume= and resume_offset=), which a user adds to the boot loader's
# command line.
setup_words() {
	resume_words=$(sed -n 's/.*setup: the image.s location as kernel command line words (torpor resume-args): \(resume=[^ ]* resume_offset=[0-9]*\).*/\1/p' \
		"$logdir/boot1.log" | head -n 1)
	[ -n "$resume_words" ] || fail "boot 1: torpor setup printed no resume= and resume_offset= words for the file"
	note "boot 1: the words for the command line: $resume_words"
}

# line_of BOOT REGEX: the text after "TORPOR-VM: " of the line, for a
# failure's message.
line_of() { grep -ah -m1 -E -- "$2" "$logdir/boot$1.log" | sed 's/.*TORPOR-VM: //' | cut -c1-300; }

# package, boot 1: (the previous build installed with apt in the tree)
# torpor setup --yes, the upgrade to this build with nothing stored (its
# trigger rebuilt the initramfs that boot 2 resumes from: setup_after_boot).
check_package_boot1() {
	local ver
	ver=$(dpkg-deb -f "${debs[0]}" Version)
	has 1 "TORPOR-VM: upgrade exit=0 version=$ver\$" ||
		fail "boot 1: the upgrade to $ver: $(line_of 1 'upgrade exit=')"
	# dh_installinitramfs's trigger, on the install (in the tree) and on
	# the upgrade.
	grep -q '^update-initramfs: Generating' "$logdir/initramfs.log" ||
		fail "the package's trigger did not build the initramfs on the install"
	has 1 'TORPOR-VM: upgrade: update-initramfs: Generating' ||
		fail "boot 1: the package's trigger did not rebuild the initramfs on the upgrade"
	has 1 'TORPOR-VM: units torpord.socket=enabled/active torpor-resume-location=static' ||
		fail "boot 1: the package's units: $(line_of 1 'TORPOR-VM: units ')"
}

# package: boot 2's resumed session (after its checks as a resume)
# purged torpor and hibernated with the kernel's own hibernation:
#   boot 3  the kernel's own resume (initramfs-tools' RESUME=, which the
#           installer wrote and the purge left): the second marker and
#           data back, no word of torpor, no wait for a resume device
#           (checked for every boot below: the initramfs looks for the
#           device before it looks for an image)
package_boots() {
	local token2 sum2 data2
	has 2 'TORPOR-VM: purge exit=0 version=$' ||
		fail "boot 2: apt purge torpor: $(line_of 2 'purge exit=')"
	has 2 'TORPOR-VM: purge-files=$' || fail "boot 2: torpor's files left after the purge: $(line_of 2 'purge-files=')"
	has 2 'TORPOR-VM: purge-dpkg-S=dpkg-query: no path found matching pattern \*torpor\* ?$' ||
		fail "boot 2: dpkg -S still finds torpor: $(line_of 2 'purge-dpkg-S=')"
	has 2 'TORPOR-VM: purge-status=(dpkg-query: no packages found matching torpor|[pu]n )$' ||
		fail "boot 2: after the purge dpkg says: $(line_of 2 'purge-status=')"
	has 2 'TORPOR-VM: purge-initramfs=$' ||
		fail "boot 2: the initramfs rebuilt by the purge still holds torpor: $(line_of 2 'purge-initramfs=')"
	has 2 "TORPOR-VM: purge-resume=RESUME=UUID=$swap_uuid\$" ||
		fail "boot 2: initramfs-tools' RESUME= after the purge: $(line_of 2 'purge-resume=')"
	has 2 'TORPOR-VM: purge-units=/lib/systemd/systemd-sleep 0$|TORPOR-VM: purge-units=/usr/lib/systemd/systemd-sleep 0$' ||
		fail "boot 2: systemd-hibernate.service or torpor's units after the purge: $(line_of 2 'purge-units=')"
	has 2 "TORPOR-VM: hibernate start \\(the kernel's own\\)" ||
		fail "boot 2 did not hibernate with the kernel's own hibernation"
	has 2 'systemctl hibernate refused' && fail "boot 2: logind refused the kernel's own hibernation"
	# The second marker's line, and the data written for the second cycle.
	token2=$(grep -h 'MARKER pid=' "$logdir/boot2.log" | grep -v MARKER-AFTER | tail -n 1 | tr ' ' '\n' | sed -n 's/^token=//p')
	sum2=$(grep -h 'MARKER pid=' "$logdir/boot2.log" | grep -v MARKER-AFTER | tail -n 1 | tr ' ' '\n' | sed -n 's/^sum=//p')
	data2=$(grep -h 'TORPOR-VM: data=' "$logdir/boot2.log" | tail -n 1 | sed 's/.*TORPOR-VM: data=//')
	[ -n "$token2" ] && [ "$token2" != "$token" ] || fail "boot 2: no second marker started"
	[ -n "$data2" ] && [ "$data2" != "$data" ] || fail "boot 2 wrote no new data before the kernel's hibernation"
	stored_is image || fail "after boot 2 the swap area holds no image of the kernel's"
	[ "$failures" = 0 ] || return
	boot_file "initrd.img-$kver" "$initrd" || { fail "boot 2: no initrd.img-$kver in /boot"; return; }
	boot 3 400
	has 3 "MARKER-AFTER .*token=$token2 sum=$sum2" ||
		fail "boot 3: the kernel's own resume did not bring the second marker back (token=$token2 sum=$sum2)"
	has 3 'TORPOR-VM: resumed hibernate-service=success status=0' ||
		fail "boot 3: systemd-hibernate.service: $(line_of 3 'TORPOR-VM: resumed')"
	has 3 "data-after=$data2" || fail "boot 3: the data written before the kernel's hibernation is not there"
	has 3 'torpor-resume|torpor: ' && fail "boot 3: torpor spoke after its purge: $(grep -ah -m1 -E 'torpor-resume|torpor: ' "$logdir/boot3.log")"
	stored_is none || fail "after boot 3 the kernel's image is still in the swap area"
}

# distro-grub: what GRUB started, what torpor status said of the next
# boot, and grubenv's next_entry as each boot left it on the disk.
# re TEXT: TEXT as an extended regex that matches it alone.
re() { sed 's/[][\.*^$+?(){}|]/\\&/g' <<<"$1"; }
# grubenv_next AFTER: grubenv's next_entry on the disk, as the guest left
# it (its journal replayed on a copy: boot_file); "?" when unreadable.
grubenv_next() {
	boot_file grub/grubenv "$logdir/grubenv" || { echo '?'; return; }
	cp "$logdir/grubenv" "$logdir/grubenv.after-boot$1"
	sed -n 's/^next_entry=//p' "$logdir/grubenv" | head -n 1
}
# grub_started N KVER: boot N's GRUB loaded KVER's kernel and no other,
# and the kernel that ran says it is KVER.
grub_started() {
	local n=$1 k=$2 other=$kold
	[ "$k" = "$kold" ] && other=$kver
	has "$n" "Loading Linux $(re "$k") \.\.\." ||
		fail "boot $n: GRUB did not load $k: $(grep -aho 'Loading Linux [^ ]*' "$logdir/boot$n.log" | tr '\n' ' ')"
	has "$n" "Loading Linux $(re "$other") " && fail "boot $n: GRUB loaded $other"
	# (Boot 1's and a normal boot's driver, or the resumed session's.)
	has "$n" "TORPOR-VM: (systemd [0-9]+ )?kernel(-after)? $(re "$k")( |\$)" ||
		fail "boot $n: the kernel is not $k: $(grep -ah -m1 -E 'TORPOR-VM: (systemd [0-9]+ )?kernel(-after)? ' "$logdir/boot$n.log" | sed 's/.*TORPOR-VM: //')"
}
# Boot 1: 6.1 runs (the host's one-shot), 6.12.57 is GRUB's default:
# torpor status says so and that torpor hibernate sets a one-shot of
# 6.1's entry; once hibernated, grubenv's next_entry names that entry.
grub_boot1() {
	local ne want
	grub_started 1 "$kold"
	want="$(re "$kver") \(GRUB default\); the running kernel is $(re "$kold"): torpor hibernate sets a one-shot boot of \"Debian GNU/Linux, with Linux $(re "$kold")\" \(grubenv next_entry\), so the image resumes"
	has 1 "TORPOR-VM: next-boot=$want" ||
		fail "boot 1: torpor status on the next boot: $(line_of 1 'TORPOR-VM: next-boot=')"
	note "boot 1: next boot: $(line_of 1 'TORPOR-VM: next-boot=' | sed 's/^next-boot=//')"
	ne=$(grubenv_next 1)
	[ "$ne" = "$once_61" ] ||
		fail "after boot 1 grubenv's next_entry is '$ne', not 6.1's entry '$once_61'"
	note "after boot 1: grubenv next_entry=$ne"
}
# Boot 2: GRUB started 6.1 by itself (torpor's one-shot) and cleared it;
# the resumed session's status sees no one-shot, the default 6.12.57.
grub_boot2() {
	local ne
	grub_started 2 "$kold"
	has 2 "TORPOR-VM: next-boot-after=$(re "$kver") \(GRUB default\); the running kernel is $(re "$kold"): torpor hibernate sets a one-shot" ||
		fail "boot 2: torpor status in the resumed session: $(line_of 2 'TORPOR-VM: next-boot-after=')"
	ne=$(grubenv_next 2)
	[ -z "$ne" ] || fail "after boot 2 grubenv's next_entry is '$ne', not empty"
}
# Boot 3: a plain boot starts the default, 6.12.57, again.
grub_boot3() {
	local ne
	grub_started 3 "$kver"
	has 3 "TORPOR-VM: next-boot=$(re "$kver") \(GRUB default\), the running kernel: an image written now resumes" ||
		fail "boot 3: torpor status on the next boot: $(line_of 3 'TORPOR-VM: next-boot=')"
	ne=$(grubenv_next 3)
	[ -z "$ne" ] || fail "after boot 3 grubenv's next_entry is '$ne', not empty"
}

# distro-grub-kernel: the same guest and boot 1 without torpor: the
# kernel's own hibernation (RESUME=UUID= of the swap partition, as the
# installer writes it).  Nothing sets a one-shot, so boot 2 starts GRUB's
# default, 6.12.57, whose initramfs hands the swap partition to the
# kernel.  A measurement (vm-full, doc/vm-suite.md): what 6.12.57 does
# with 6.1's image is said, not judged; the boot must end either in the
# resumed session (the marker's token, the data) or in a normal boot with
# the data of boot 1.  (Measured 2026-12-07: 6.12.57 restored 6.1's image,
# and the session came back running 6.1.)
grub_kernel_boots() {
	local ne
	ne=$(grubenv_next 1)
	[ -z "$ne" ] || fail "after boot 1 grubenv's next_entry is '$ne': nothing should have set one"
	boot 2 400
	boot2_secs=$boot_secs
	has 2 "Loading Linux $(re "$kver") \\.\\.\\." ||
		fail "boot 2: GRUB did not load its default, $kver"
	if has 2 "MARKER-AFTER .*token=$token sum=$sum"; then
		has 2 "data-after=$data" || fail "boot 2: resumed without the data written before the hibernation"
		note "boot 2: the kernel's own resume: $kver, started by GRUB, restored $kold's image: the session is back, running $(line_of 2 'TORPOR-VM: kernel-after ' | sed 's/^kernel-after //')"
	else
		has 2 'TORPOR-VM: normal boot 2 ' || fail "boot 2 neither resumed nor booted normally"
		has 2 "TORPOR-VM: data=$data" || fail "boot 2: the data written before the hibernation is lost"
		note "boot 2: the kernel's own resume: $kver did not resume $kold's image; the kernel said: $(grep -ahE 'PM: |[Hh]ibernat|[Ii]mage mismatch|memory map' "$logdir/boot2.log" | grep -v TORPOR-VM | cut -d' ' -f2- | tr '\n' ';' | cut -c1-1500)"
	fi
	note "boot 2: the swap area holds $(stored) afterwards (its signature: $(swap_tail))"
}

# distro-grub-other: boot 1 as distro-grub (torpor's one-shot of 6.1's
# entry set); then 6.12.57's entry is chosen by hand at the next boot
# (issue 42 item 1: the kernel judges another kernel's image).  The host
# stands for the user at GRUB's menu (its timeout is 0): it writes
# grubenv's block in place, at its block on the disk, as GRUB's save_env
# does, with next_entry naming 6.12.57's entry; nothing else of the
# hibernated filesystem is touched.
#   boot 2  GRUB starts 6.12.57; torpor-resume sees an image of 6.1 and
#           lets the kernel check its architecture header; the kernel
#           accepts it (as it did with its own hibernation in
#           distro-grub-kernel): the session resumes, running 6.1.  Were
#           it refused, torpor-resume would ask on the console: "d" is
#           typed at the prompt, and the case fails saying what the
#           kernel said.
grub_other_boots() {
	local img=$logdir/root.part blk id block
	id="gnulinux-advanced-$root_uuid>gnulinux-$kver-advanced-$root_uuid"
	dd if="$disk" of="$img" bs=1M skip=$((root_start / 2048)) count=$((root_sectors / 2048)) \
		conv=sparse status=none
	{ e2fsck -E journal_only -y "$img" >/dev/null 2>&1; [ $? -le 1 ]; } &&
		blk=$(debugfs -R "bmap /boot/grub/grubenv 0" "$img" 2>/dev/null)
	rm -f "$img"
	[ -n "$blk" ] && [ "$blk" -gt 0 ] 2>/dev/null || { fail "grubenv's block not found on the disk"; return; }
	block=$(printf '# GRUB Environment Block\nnext_entry=%s\n' "$id")
	{ printf '%s\n' "$block"; head -c $((1024 - ${#block} - 1)) /dev/zero | tr '\0' '#'; } |
		dd of="$disk" bs=1024 seek=$(((root_start * 512 + blk * 4096) / 1024)) count=1 conv=notrunc status=none
	[ "$(grubenv_next 1b)" = "$id" ] || { fail "grubenv's next_entry could not be set to 6.12.57's entry"; return; }
	note "after boot 1: 6.12.57's entry chosen by hand (grubenv next_entry=$id, its block $blk)"
	vm_type_when='Choice: ' vm_type_text=d
	boot 2 400
	vm_type_when= vm_type_text=
	boot2_secs=$boot_secs
	has 2 "Loading Linux $(re "$kver") \\.\\.\\." || fail "boot 2: GRUB did not load $kver"
	has 2 "Loading Linux $(re "$kold") " && fail "boot 2: GRUB loaded $kold"
	# (torpor-resume's note that the kernel judges is not on the
	# console under quiet, and its log was in the initramfs' /run, which
	# the resume replaced: the session on 6.1 after 6.12.57's initramfs
	# is what shows it.)
	if has 2 "MARKER-AFTER .*token=$token sum=$sum"; then
		has 2 "data-after=$data" || fail "boot 2: resumed without the data written before the hibernation"
		has 2 "TORPOR-VM: resumed hibernate-service=success status=0" ||
			fail "boot 2: systemd-hibernate.service: $(line_of 2 'TORPOR-VM: resumed')"
		has 2 "TORPOR-VM: kernel-after $(re "$kold")\$" || fail "boot 2: the resumed kernel is not $kold"
		note "boot 2: $kver restored $kold's image through torpor-resume: the session is back, running $kold"
	else
		fail "boot 2: $kver did not resume $kold's image: $(grep -ah -m3 -E 'refused|mismatch|memory map' "$logdir/boot2.log" | cut -c1-400 | tr '\n' ';')"
	fi
	[ -z "$(grubenv_next 2)" ] || fail "after boot 2 grubenv's next_entry is not empty"
}

# distro-grub-refuse: distro-grub's guest with a boot loader torpor
# cannot redirect: its grubenv may be changed by others than root (mode
# 0666), so torpor writes no one-shot there.  Boot 1 (6.1, the default
# 6.12.57): torpor status says an image would be refused and no one-shot
# can be set; systemctl hibernate: torpor hibernate refuses before it
# freezes anything, saying why and what to do; the hibernation fails,
# the marker answers without a jump of its boot-time clock, nothing is
# stored, grubenv has no next_entry.  One boot.
grub_refuse_boot1() {
	grub_started 1 "$kold"
	has 1 "TORPOR-VM: next-boot=$(re "$kver") \\(GRUB default\\); the running kernel is $(re "$kold"): an image written now would be refused, and torpor cannot set a one-shot boot of the running kernel: .*may be changed by others than root" ||
		fail "boot 1: torpor status on the next boot: $(line_of 1 'TORPOR-VM: next-boot=')"
	has 1 'the next boot could not resume this image: ' ||
		fail "boot 1: torpor hibernate did not refuse, saying why: $(grep -ah -m3 'torpor' "$logdir/boot1.log" | tail -n 2 | cut -c1-300)"
	has 1 'torpor: freeze ' && fail "boot 1: torpor froze the system before it refused"
	has 1 'TORPOR-VM: (resumed hibernate-service=exit-code|systemctl hibernate refused)' ||
		fail "boot 1: the hibernation did not fail: $(line_of 1 'TORPOR-VM: (resumed|systemctl)')"
	has 1 "MARKER-AFTER .*token=$token sum=$sum .*boottime_jump=0\\." ||
		fail "boot 1: the marker did not answer as one that never stopped: $(grep -ah -m1 'MARKER-AFTER' "$logdir/boot1.log")"
	stored_is none || fail "after boot 1 the swap area holds an image"
	[ -z "$(grubenv_next 1)" ] || fail "after boot 1 grubenv has a next_entry"
	note "boot 1: $(grep -ah -m1 'the next boot could not resume this image' "$logdir/boot1.log" | cut -d' ' -f2- | cut -c1-500)"
	note "boot 1: ${boot_secs}s"
}

# Boot 1: the marker, data on the root filesystem, `systemctl $action`
# (luks, btrfs: after torpor setup, which rebuilds the initramfs).
if [ "$layout" != swap ] || [ "$package" = 1 ]; then
	[ "$layout" = luks ] && vm_type_text=$luks_pass
	boot 1 800
	has 1 'TORPOR-VM: setup exit=0' ||
		fail "boot 1: torpor setup --yes failed: $(grep -h 'TORPOR-VM: setup' "$logdir/boot1.log" | tail -n 5)"
	has 1 'TORPOR-VM: setup: setup: the new initramfs holds what a resume needs' ||
		fail "boot 1: torpor setup did not check the new initramfs"
	note "boot 1: $(grep -h -m1 'TORPOR-VM: setup-status=' "$logdir/boot1.log" | sed 's/.*TORPOR-VM: //')"
fi
[ "$package" = 1 ] && check_package_boot1
if [ "$layout" = btrfs ]; then
	# zram is never the image's place; the file is NOCOW on btrfs.
	has 1 'TORPOR-VM: setup: setup: active swap /dev/zram0 is zram, compressed RAM that a power-off empties: never a place for the image' ||
		fail "boot 1: torpor setup did not say that zram cannot hold the image"
	has 1 "TORPOR-VM: setup: setup: /var/lib[^ ]* is on btrfs on /dev/vda1: the image file will be NOCOW" ||
		fail "boot 1: torpor setup did not say that the image file is NOCOW on btrfs"
	setup_words
	off=$(sed -nE 's/.*resume_offset=([0-9]+).*/\1/p' <<<"$resume_words")
	image_at=$((root_start * 512 + ${off:-0} * 4096))
	note "btrfs root: $imagefile at byte $image_at of the disk"
elif [ "$layout" = luks ]; then
	if [ "$luks_swap" = file ]; then
		has 1 'TORPOR-VM: setup: setup: storage: swap writer on /swap.img ' ||
			fail "boot 1: torpor setup did not choose the swap file"
		has 1 'TORPOR-VM: setup: setup: its filesystem is on the LVM volume torpor--vm--vg-root: ' ||
			fail "boot 1: torpor setup did not say that the swap file lies on an LVM volume"
		setup_words
	else
		has 1 'TORPOR-VM: setup: setup: storage: swap writer on UUID=' ||
			fail "boot 1: torpor setup did not choose the swap volume"
	fi
	if [ "$luks_swap" = partition ]; then
		# The first setup refused: cryptroot would not unlock the
		# swap's container; the driver added the option.
		has 1 "TORPOR-VM: setup: .*does not unlock vda3_crypt, which holds the image's device: add the option initramfs" ||
			fail "boot 1: torpor setup did not say that the initramfs does not unlock vda3_crypt"
		has 1 'TORPOR-VM: setup exit=1' || fail "boot 1: the first torpor setup did not refuse"
		has 1 'TORPOR-VM: setup: added the option initramfs to vda3_crypt' ||
			fail "boot 1: the driver did not add the option initramfs"
		has 1 'TORPOR-VM: setup: setup: active swap /dev/dm-[0-9]+ is encrypted with a new random key at each boot \(/etc/crypttab: vda4_random /dev/vda4 /dev/urandom\): .*never a place for the image' ||
			fail "boot 1: torpor setup did not pass over the random-key swap on vda4: $(grep -h 'TORPOR-VM: setup: setup: active swap' "$logdir/boot1.log" | tr '\n' ';')"
	fi
	crypt_name=vda2_crypt
	[ "$luks_swap" = partition ] && crypt_name=vda3_crypt
	has 1 "TORPOR-VM: setup: setup: it lies in the dm-crypt mapping $crypt_name: " ||
		fail "boot 1: torpor setup did not say that the swap space lies in the dm-crypt mapping $crypt_name"
elif [ "$package" = 0 ]; then
	boot 1 400
fi
boot1_secs=$boot_secs
has 1 '^[0-9.]+ .*MARKER pid=' || fail "boot 1: the marker did not start"
token=$(field 1 'MARKER pid=' token)
sum=$(field 1 'MARKER pid=' sum)
data=$(field 1 'TORPOR-VM: data=' data)
has 1 "TORPOR-VM: $action start" || fail "boot 1 did not reach systemctl $action"
[ "$grub_refuse" = 1 ] || ! has 1 "systemctl $action refused" || fail "boot 1: logind refused systemctl $action"
note "boot 1: $(grep -h -m1 'TORPOR-VM: systemd ' "$logdir/boot1.log" | sed 's/.*TORPOR-VM: //')"
# logind lets the desktop offer hibernation, to root and to a user.
has 1 'TORPOR-VM: can-hibernate root=yes user=yes' ||
	fail "boot 1: logind's CanHibernate: $(grep -h 'can-hibernate' "$logdir/boot1.log"); torpor status says: $(grep -h 'torpor-status-logind=' "$logdir/boot1.log")"
# torpor status says what logind answers, and why.
[ "$kernel_own" = 1 ] || has 1 'TORPOR-VM: torpor-status-logind=yes: ' ||
	fail "boot 1: torpor status does not say that logind answers yes: $(grep -h 'torpor-status-logind=' "$logdir/boot1.log")"
note "boot 1: $(grep -h -m1 'torpor-status-logind=' "$logdir/boot1.log" | sed 's/.*TORPOR-VM: //')"
[ "$grub" = 1 ] && [ "$kernel_own" = 0 ] && [ "$grub_refuse" = 0 ] && grub_boot1
[ "$kernel_own" = 1 ] && grub_started 1 "$kold"
if [ "$grub_refuse" = 1 ]; then
	grub_refuse_boot1
	[ "$failures" = 0 ] || exit 1
	note passed
	exit 0
fi
if [ "$action" = hibernate ]; then
	# The hook's console line may be lost: with 2 vCPUs the freeze can
	# come before the serial port has sent it.  Boot 2 checks what the
	# hooks recorded in /run, which the image carries.
	has 1 'hook pre hibernate action=hibernate' ||
		note "boot 1: the pre hook's console line did not arrive (boot 2 checks the hooks' record)"
else
	check_s2h_boot1
fi
has 1 'TORPOR-VM: resumed' && fail "boot 1: the hibernation returned instead of powering off"
stored_is image || fail "after boot 1 the $layout storage holds no image"
[ "$failures" = 0 ] || exit 1

if [ "$corrupt" = 1 ]; then
	# Swap pages are handed out from the start of an empty area: the
	# middle of the stored bytes lies inside the image.
	mib=$(grep -hoE '[0-9.]+ MiB stored' "$logdir/boot1.log" | head -n1 | cut -d' ' -f1)
	mib=${mib:-8}
	at=$((swap_start * 512 + 4096 + ${mib%.*} * 1024 * 1024 / 2))
	old=$(od -A n -t u1 -j "$at" -N 1 "$disk" | tr -d ' ')
	printf "$(printf '\\%03o' $((old ^ 0x5a)))" |
		dd of="$disk" bs=1 seek="$at" count=1 conv=notrunc 2>/dev/null
	note "flipped the byte at $at"
fi

gave_up='torpor: the storage of the hibernation image did not appear; booting normally'

# boot_without_storage N: boot N of the stale cases, without the swap
# disk: a normal boot (which mounts the root filesystem read-write).
boot_without_storage() {
	local n=$1
	disks=("$disk")
	boot "$n" 400
	[ "$n" != 2 ] || boot2_secs=$boot_secs
	has "$n" 'MARKER-AFTER' && fail "boot $n resumed"
	has "$n" "$gave_up" || fail "boot $n: no console line saying the storage did not appear"
	has "$n" 'cannot look for a stale hibernation image: the storage is not there' ||
		fail "boot $n: torpor-stale-image.service did not say the storage is not there"
	has "$n" "TORPOR-VM: normal boot $n swaps=\$" || fail "boot $n: a swap area is active"
	[ "$(swap_tail)" != SWAPSPACE2 ] || fail "boot $n changed the swap disk it did not have"
}

# stale: the image is never resumed; boots 2 to 5 (see the top).  The
# first image is discarded by torpor-stale-image.service (its storage came
# late), the second refused by torpor-resume (the root filesystem was
# mounted since): distro-stale-root's checks, without a boot 1 of their
# own.
stale_boots() {
	local discarded="discarded a stale hibernation image on writer 'swap': its storage did not appear within the initramfs' wait"
	local why='image refused: the root filesystem UUID=[0-9a-f-]+ on /dev/vda1 was mounted since this image was written .*: the image is stale and is discarded'

	boot_without_storage 2

	# Boot 3: the swap disk comes once the initramfs has given up on it;
	# once it has reported, it hibernates again.
	qemu_extra=(-drive "file=$swapdisk,if=none,id=late,format=raw"
		    -monitor "unix:$logdir/monitor.sock,server=on,wait=off")
	rm -f "$logdir/boot3.log"
	attach_late 3 "$gave_up" &
	boot_extra=torpor.hibernate=1 boot 3 400
	wait
	qemu_extra=()
	has 3 'MARKER-AFTER' && fail "boot 3 resumed"
	has 3 "$gave_up" || fail "boot 3: the initramfs did not give up on the storage"
	has 3 "$discarded" || fail "boot 3: torpor-stale-image.service did not discard the image, saying why"
	# (swapon takes the area only with its signature back.)
	has 3 'TORPOR-VM: normal boot 3 swaps=/dev/vdb' || fail "boot 3: swap is not active"
	has 3 'TORPOR-VM: status-image=none' ||
		fail "boot 3: torpor status: $(grep -h 'status-image=' "$logdir/boot3.log")"
	hibernated_again 3
	[ "$failures" = 0 ] || return

	# Boot 4: without the swap disk again, which writes the root.
	boot_without_storage 4

	# Boot 5: both disks from the start: torpor-resume refuses the image.
	disks=("$disk" "$swapdisk")
	boot 5 400
	check_refused_boot 5 "$why" "$data_again"
	has 5 'TORPOR-VM: stale-unit=success' ||
		fail "boot 5: torpor-stale-image.service: $(grep -h 'stale-unit=' "$logdir/boot5.log")"
	echo "VM-TIMING-STALE boot2=${boot2_secs:-?}s initramfs-gave-up=$(ts 3 "$gave_up")s discarded=$(ts 3 "$discarded")s refused=$(ts 5 "$stale_refused")s boot5=${boot_secs}s" |
		tee "$logdir/timing-stale.txt"
}

# attach_late BOOT REGEX: once the line is in that boot's log, plug the
# swap disk in (-drive id=late) through QEMU's monitor.
attach_late() {
	local i
	for ((i = 0; i < 800 * scale; i++)); do
		has "$1" "$2" 2>/dev/null && break
		sleep 0.5
	done
	monitor_send "$logdir/monitor.sock" "device_add virtio-blk-pci,drive=late,id=latedev"
	note "boot $1: the swap disk attached at $(tail -n1 "$logdir/boot$1.log" | cut -d' ' -f1)s"
}

# stale-root: the storage is back at boot 3, after boot 2 mounted the
# root filesystem read-write: the initramfs must refuse the image.
# check_refused_boot N WHY DATA: boot N found the image, refused it with
# the console line WHY (why, or where it is damaged), gave its storage
# back and booted normally: swap active, nothing stored, DATA (written
# before the hibernation) there, no failed unit.
stale_refused='torpor: the hibernation image was refused; booting normally'
check_refused_boot() {
	local n=$1
	has "$n" 'MARKER-AFTER' && fail "boot $n resumed a refused image"
	has "$n" "$stale_refused" || fail "boot $n: no console line saying the image was refused"
	has "$n" "$2" || fail "boot $n: the refusal does not say why or where: $(grep -ah 'image refused' "$logdir/boot$n.log" | head -3)"
	has "$n" "TORPOR-VM: normal boot $n swaps=$swaps_seen" || fail "boot $n: swap is not active"
	has "$n" 'TORPOR-VM: status-image=none' ||
		fail "boot $n: torpor status: $(grep -h 'status-image=' "$logdir/boot$n.log")"
	has "$n" "TORPOR-VM: data=$3" || fail "boot $n: the data written before the hibernation is lost"
	has "$n" 'TORPOR-VM: failed-units=$' ||
		fail "boot $n: failed units: $(grep -h 'failed-units=' "$logdir/boot$n.log")"
	stored_is none || fail "after boot $n the $layout storage still holds the refused image"
}

# hibernated_again N: boot N, a normal boot started with torpor.hibernate=1,
# wrote new data and hibernated again; sets data_again to that data.
hibernated_again() {
	local n=$1
	# (The second data= line: the one written before the hibernation.)
	data_again=$(grep -h 'TORPOR-VM: data=' "$logdir/boot$n.log" | tail -n 1 | sed 's/.*TORPOR-VM: data=//')
	[ -n "$data_again" ] && [ "$data_again" != "$data" ] ||
		fail "boot $n wrote no new data before hibernating again"
	has "$n" 'TORPOR-VM: hibernate start' || fail "boot $n did not reach systemctl hibernate"
	has "$n" 'TORPOR-VM: resumed' && fail "boot $n: the hibernation returned instead of powering off"
	stored_is image || fail "after boot $n the $layout storage holds no image"
}

stale_root_boots() {
	local why='image refused: the root filesystem UUID=[0-9a-f-]+ on /dev/vda1 was mounted since this image was written .*: the image is stale and is discarded'

	boot_without_storage 2

	disks=("$disk" "$swapdisk")
	boot 3 400
	check_refused_boot 3 "$why" "$data"
	echo "VM-TIMING-STALE-ROOT boot2=${boot2_secs:-?}s refused=$(ts 3 "$stale_refused")s boot3=${boot_secs}s" |
		tee "$logdir/timing-stale-root.txt"
}

# distro-btrfs-stale-root: the image stays on the root it was written
# from, so only the guard can stop its resume over a root written since.
#   boot 2  the boot loader's entry lacks the image's place (an older
#           entry) and torpor-stale-image.service is masked (README: "to
#           keep such images"): a normal boot, which writes the root
#   boot 3  with the place: torpor-resume finds the image and refuses it
#           as stale (the btrfs generation moved), discards it; a normal
#           boot, the data written in boot 1 there, no failed unit
btrfs_stale_root_boots() {
	local why='image refused: the root filesystem \(btrfs\) UUID=[0-9a-f-]+ on /dev/vda1 was written since this image was written \(generation [0-9]+; the image expects [0-9]+\): the image is stale and is discarded'

	boot_words="systemd.mask=torpor-stale-image.service" boot 2 400
	boot2_secs=$boot_secs
	has 2 'MARKER-AFTER' && fail "boot 2 resumed without the image's place"
	has 2 'TORPOR-VM: normal boot 2 ' || fail "boot 2 did not boot normally"
	stored_is image || fail "boot 2 discarded the image (torpor-stale-image.service was masked)"
	boot 3 400
	check_refused_boot 3 "$why" "$data"
}

# The corrupt-image refusal after a resume (corrupt_again: luks, and
# distro-suspend-then-hibernate, which took over distro-corrupt's checks:
# one boot 1 fewer under TCG).  luks: the host sees only the ciphertext:
# one byte flipped there garbles a whole 16-byte block of what the guest
# reads (XTS), inside the image.
#   boot 3  (the normal boot, checked as such) hibernates again with
#           systemctl hibernate (torpor.hibernate=1; one boot fewer)
#   boot 4  torpor-resume refuses the image, saying where (on the
#           console): a normal boot, swap active, no image stored (the swap
#           signature back), the data written in boot 3 there
corrupt_again_boots() {
	local at old swap_at0=${luks_swap_at:-0}
	hibernated_again 3
	[ "$failures" = 0 ] || return
	# Swap pages are handed out from the start of an empty area: 4 MiB
	# in lies inside an image of tens of MiB.
	[ "$layout" = luks ] || swap_at0=$swap_at
	at=$((swap_at0 + 4 * 1024 * 1024))
	old=$(od -A n -t u1 -j "$at" -N 1 "$disk" | tr -d ' ')
	printf "$(printf '\\%03o' $((old ^ 0x5a)))" |
		dd of="$disk" bs=1 seek="$at" count=1 conv=notrunc 2>/dev/null
	note "flipped the byte at $at (the swap space's byte $((at - swap_at0)))"
	boot 4 400
	# What and where, on the console.
	check_refused_boot 4 'torpor-resume: chunk [0-9]+ at stream offset [0-9]+: ' "$data_again"
	note "boot 4: $(grep -ah -m1 'at stream offset' "$logdir/boot4.log" | cut -d' ' -f2-)"
}

if [ "$stale" = 1 ]; then
	stale_boots
elif [ "$stale" = 2 ]; then
	stale_root_boots
elif [ "$stale" = 3 ]; then
	btrfs_stale_root_boots
elif [ "$kernel_own" = 1 ]; then
	grub_kernel_boots
elif [ "$grub_other" = 1 ]; then
	grub_other_boots
else
	# Boot 2: the initramfs resumes (or refuses the corrupt image).
	boot 2 400
	boot2_secs=$boot_secs
	after_re="MARKER-AFTER .*token=$token sum=$sum"
	if [ "$corrupt" = 0 ]; then
		has 2 "$after_re" || fail "boot 2: no MARKER-AFTER with token=$token sum=$sum"
		has 2 "TORPOR-VM: resumed $action-service=success status=0" ||
			fail "boot 2: systemd-$action.service did not succeed: $(grep -h 'TORPOR-VM: resumed' "$logdir/boot2.log")"
		if [ "$action" = hibernate ]; then
			has 2 'hooks=pre hibernate hibernate;post hibernate hibernate;' ||
				fail "boot 2: the hooks did not run pre then post: $(grep -h 'hooks=' "$logdir/boot2.log")"
		else
			check_s2h_boot2
		fi
		has 2 "data-after=$data" || fail "boot 2: the data written before hibernation is not there"
		[ "$grub" = 1 ] && grub_boot2
	else
		has 2 'MARKER-AFTER' && fail "boot 2 resumed a corrupt image"
		has 2 'torpor: the hibernation image was refused; booting normally' ||
			fail "boot 2: no console line saying the image was refused"
		has 2 "TORPOR-VM: normal boot 2 swaps=$swaps_seen" ||
			fail "boot 2: swap is not active after the refusal"
		stored_is none || fail "after the refusal the $layout storage still holds the image"
	fi

	# Boot 3: nothing left to resume, a normal boot (corrupt_again: which
	# then hibernates again, see corrupt_again_boots; package: the
	# kernel's own resume, see package_boots).
	if [ "$package" = 1 ]; then
		[ "$failures" = 0 ] && package_boots
	elif [ "$corrupt" = 0 ]; then
		if [ "$corrupt_again" = 1 ]; then
			boot_extra="torpor.hibernate=1 torpor.action=hibernate" boot 3 400
		else
			boot 3 300
		fi
		has 3 'MARKER-AFTER' && fail "boot 3 resumed again"
		has 3 'torpor: no hibernation image to resume; booting normally' ||
			fail "boot 3: no console line saying there was no image"
		has 3 "TORPOR-VM: normal boot 3 swaps=$swaps_seen" || fail "boot 3: swap is not active"
		has 3 "TORPOR-VM: data=$data" || fail "boot 3: the data written before hibernation is lost"
		has 3 'TORPOR-VM: status-image=none' ||
			fail "boot 3: torpor status: $(grep -h 'status-image=' "$logdir/boot3.log")"
		has 3 'TORPOR-VM: failed-units=$' ||
			fail "boot 3: failed units: $(grep -h 'failed-units=' "$logdir/boot3.log")"
		[ "$corrupt_again" = 1 ] || stored_is none ||
			fail "after boot 3 the $layout storage still holds an image"
		[ "$grub" = 1 ] && grub_boot3
	fi
	[ "$corrupt_again" = 1 ] && [ "$failures" = 0 ] && corrupt_again_boots
fi

# No boot waits for the kernel's resume= device: initramfs-tools' own
# resume script would say this after 30 s (issue 12's boot delay), a
# systemd initrd that a job for it timed out.  Every normal boot answers
# CanHibernate as boot 1 did.
for b in 1 2 3 4 5; do
	[ -e "$logdir/boot$b.log" ] || continue
	has "$b" 'Gave up waiting for suspend/resume device|Timed out waiting for device' &&
		fail "boot $b waited for a resume device: $(grep -h -m1 -E 'Gave up waiting|Timed out waiting' "$logdir/boot$b.log")"
	[ "$b" = 1 ] || ! has "$b" 'TORPOR-VM: normal boot' ||
		has "$b" 'TORPOR-VM: can-hibernate root=yes user=yes' ||
		fail "boot $b: logind's CanHibernate: $(grep -h 'can-hibernate' "$logdir/boot$b.log")"
done

# The root filesystem, checked from the host after the last power-off
# (luks: the host cannot open the container).
if [ "$layout" != luks ]; then
	dd if="$disk" of="$logdir/rootfs.img" bs=1M skip=$((root_start / 2048)) \
		count=$((root_sectors / 2048)) conv=sparse 2>/dev/null
	fsck=(e2fsck -fn)
	[ "$layout" = btrfs ] && fsck=(btrfs check --readonly)
	"${fsck[@]}" "$logdir/rootfs.img" >"$logdir/fsck.log" 2>&1 ||
		{ cat "$logdir/fsck.log" >&2; fail "${fsck[*]}: the root filesystem is not clean"; }
	rm -f "$logdir/rootfs.img"
fi

# Figures: boot to marker, trigger to power-off, boot to marker back.
t_marker=$(ts 1 'MARKER pid=')
t_trigger=$(ts 1 "TORPOR-VM: $action start")
t_back=$(ts 2 'MARKER-AFTER')
# torpor's own summary is printed after journald froze; what the resumed
# system read back of torpor-resume's figures says how large the image was.
readback=$(grep -ahoE 'resume \(recorded by torpor-resume\): [0-9]+ pages in [0-9.]+ s' \
	"$logdir/boot2.log" | head -n1 | awk '{ print "resume-pages=" $5 " resume-time=" $8 "s" }')
line="VM-TIMING case=$case_name generator=$gen boot-to-marker=${t_marker:-?}s"
line="$line trigger-to-poweroff=$(awk -v a="${t_trigger:-0}" -v b="$boot1_secs" 'BEGIN { printf "%.1f", b - a }')s"
if [ "$action" = suspend-then-hibernate ]; then
	t_sus=$(ts 1 'the RTC wakes the machine in')
	t_woke=$(ts 1 'the RTC alarm woke the machine')
	line="$line trigger-to-suspend=$(awk -v a="${t_trigger:-0}" -v b="${t_sus:-0}" 'BEGIN { printf "%.1f", b - a }')s"
	line="$line suspended=$(awk -v a="${t_sus:-0}" -v b="${t_woke:-0}" 'BEGIN { printf "%.1f", b - a }')s"
	line="$line wake-to-poweroff=$(awk -v a="${t_woke:-0}" -v b="$boot1_secs" 'BEGIN { printf "%.1f", b - a }')s"
fi
line="$line boot-to-marker-back=${t_back:-n/a}s boot2=${boot2_secs}s ${readback:-resume-pages=n/a}"
echo "$line" | tee "$logdir/timing.txt"
[ "$failures" = 0 ] || exit 1
note "passed"
exit 0
