#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Build (once) a Debian 12 root filesystem with systemd for the distribution
# cases of the VM suite, as a tarball in a cache directory, keyed by a hash
# of everything that decides its content (this script, the generator, the
# kernel version).  A later call with the same inputs reuses it.
#
# Usage: build-debian.sh GENERATOR KVER CACHEDIR
#   GENERATOR  initramfs-tools | dracut (Debian 12 cannot have both)
#   KVER       the kernel the VM suite boots (/boot/vmlinuz-KVER on the
#              host): its image package is installed in the guest, so
#              /lib/modules/KVER matches the kernel QEMU boots
# Prints the tarball's path on stdout.
# Exit: 0 built or cached, 77 the package archive cannot be reached,
# 1 any other failure.
set -eu

[ $# -eq 3 ] || { echo "usage: $0 GENERATOR KVER CACHEDIR" >&2; exit 1; }
gen=$1 kver=$2 cache=$3
case "$gen" in
initramfs-tools | dracut) ;;
*) echo "build-debian: unknown generator '$gen'" >&2; exit 1 ;;
esac

# What the guest needs: systemd as PID 1 with logind (D-Bus), the kernel's
# modules, the generator, the libraries torpor and its plugins link, and
# what the case checks with (e2fsprogs for fsck, util-linux for swapon).
pkgs="systemd,systemd-sysv,dbus,udev,kmod,e2fsprogs,util-linux,procps"
pkgs="$pkgs,linux-image-$kver,$gen"
pkgs="$pkgs,libinih1,libgcrypt20,liblz4-1,liblzo2-2,zlib1g,libargon2-1"

# The key: the packages and the recipe's version (raise it when a change
# below changes what the tarball holds).
recipe=2
key=$(echo "$recipe $gen $kver $pkgs" | sha256sum | cut -c1-16)
mkdir -p "$cache"
tarball=$cache/debian12-$gen-$key.tar
if [ -s "$tarball" ]; then
	echo "$tarball"
	exit 0
fi

command -v mmdebstrap >/dev/null ||
	{ echo "build-debian: mmdebstrap is not installed" >&2; exit 1; }

# The archive: the host's own sources, so a mirror or proxy configured
# there is used here too.
mirror=/etc/apt/sources.list.d/debian.sources
[ -s "$mirror" ] || mirror=/etc/apt/sources.list
[ -s "$mirror" ] || mirror=http://deb.debian.org/debian

tmp=$tarball.tmp.$$
log=$cache/build-$gen.log
trap 'rm -f "$tmp"' EXIT
echo "build-debian: building $tarball (log: $log)" >&2
# The guest's root is /dev/vda1 (ext4), its swap /dev/vda2: an fstab the
# way an installer writes it, an empty root password (a shell on the
# console when debugging by hand), no gettys (the console is the case's).
# Under TCG and on 2 cores every initramfs build counts: the guest needs
# the virtio and ext4 modules only.  dracut's configuration must be there
# before the kernel's package builds the first initramfs (setup hook);
# distro-case.sh does the same for initramfs-tools.
dracut_conf='hostonly="no"
drivers+=" virtio_pci virtio_blk ext4 "'
if ! mmdebstrap --variant=minbase --format=tar --include="$pkgs" \
	--setup-hook='mkdir -p "$1/etc/dracut.conf.d"' \
	--setup-hook="printf '%s\\n' '$dracut_conf' >\"\$1/etc/dracut.conf.d/10-torpor-vm.conf\"" \
	--aptopt='Acquire::Check-Valid-Until "false"' \
	--aptopt='Acquire::Retries "3"' \
	--customize-hook='echo "/dev/vda1 / ext4 errors=remount-ro 0 1" >"$1/etc/fstab"' \
	--customize-hook='echo torpor-vm >"$1/etc/hostname"' \
	--customize-hook='chroot "$1" passwd -d root' \
	--customize-hook='chroot "$1" systemctl mask serial-getty@ttyS0.service getty@tty1.service' \
	--customize-hook='rm -f "$1"/var/cache/apt/archives/*.deb' \
	bookworm "$tmp" "$mirror" \
	>"$log" 2>&1; then
	if grep -Eq 'Could not resolve|Failed to fetch|Temporary failure|Unable to connect|Connection failed' "$log"; then
		tail -5 "$log" >&2
		echo "build-debian: the package archive cannot be reached" >&2
		exit 77
	fi
	tail -20 "$log" >&2
	echo "build-debian: mmdebstrap failed" >&2
	exit 1
fi
mv "$tmp" "$tarball"
# Older tarballs of this generator are stale: their inputs changed.
for old in "$cache"/debian12-"$gen"-*.tar; do
	[ "$old" = "$tarball" ] || rm -f "$old"
done
echo "$tarball"
