#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Build (once) a Debian root filesystem for the distribution cases of the
# VM suite, as a tarball in a cache directory, keyed by a hash of
# everything that decides its content (the recipe's version, the release,
# the kind, the packages).  A later call with the same inputs reuses it.
#
# Usage: build-debian.sh RELEASE KIND CACHEDIR
#   RELEASE  bookworm (Debian 12), trixie (Debian 13) or sid (unstable)
#   KIND     initramfs-tools | dracut: a guest with systemd, the release's
#            own kernel (linux-image-amd64) and that generator (a release
#            cannot have both); build: a chroot with the release's
#            compiler, meson and torpor's build dependencies, where torpor
#            is built for the guest as that release's packager would,
#            and its Debian package with the release's debhelper
#            KIND-crypt (initramfs-tools-crypt, dracut-crypt): the guest
#            with cryptsetup and lvm2 as well, for the encrypted layouts
#            (and cryptsetup-initramfs, which initramfs-tools needs to
#            unlock a disk)
#            initramfs-tools-grub (bookworm only): the guest with GRUB
#            (grub-pc) and a second kernel, bookworm-backports' 6.12.57,
#            beside Debian 12's 6.1 (distro-grub: a kernel update not yet
#            booted); grub-install and update-grub are the case's, on its
#            disk
# Prints the tarball's path on stdout.  Two calls for the same tarball at
# once (tests/vm/prepare.sh builds ahead of the cases) build it once: the
# second waits for the first.  TORPOR_VM_TIMES, when set, names a file
# that gets a line "RELEASE-KIND SECONDS" for each tarball built (the
# table at the end of scripts/test).
# Exit: 0 built or cached, 77 the package archive cannot be reached,
# 1 any other failure.
set -eu

[ $# -eq 3 ] || { echo "usage: $0 RELEASE KIND CACHEDIR" >&2; exit 1; }
release=$1 kind=$2 cache=$3
case "$release" in
bookworm | trixie | sid) ;;
*) echo "build-debian: unknown release '$release'" >&2; exit 1 ;;
esac

case "$kind" in
initramfs-tools | dracut | initramfs-tools-crypt | dracut-crypt | initramfs-tools-grub)
	# systemd as PID 1 with logind (D-Bus) and polkit (what answers an
	# ordinary user's CanHibernate), the kernel, the generator, the
	# libraries torpor and its plugins link, and what the case checks
	# with (e2fsprogs for fsck, util-linux for swapon and setpriv).
	pkgs="systemd,systemd-sysv,dbus,udev,kmod,e2fsprogs,util-linux,procps,polkitd"
	gen=${kind%-crypt}
	gen=${gen%-grub}
	pkgs="$pkgs,linux-image-amd64,$gen"
	pkgs="$pkgs,libinih1,libgcrypt20,liblz4-1,liblzo2-2,zlib1g,libargon2-1"
	case "$kind" in
	initramfs-tools-crypt) pkgs="$pkgs,cryptsetup,cryptsetup-initramfs,lvm2" ;;
	dracut-crypt) pkgs="$pkgs,cryptsetup,lvm2" ;;
	initramfs-tools-grub)
		[ "$release" = bookworm ] ||
			{ echo "build-debian: $kind is for bookworm only" >&2; exit 1; }
		pkgs="$pkgs,grub-pc,linux-image-6.12.57+deb12-amd64" ;;
	esac
	;;
build)
	pkgs="gcc,libc6-dev,meson,ninja-build,pkg-config,liblzo2-dev,zlib1g-dev"
	pkgs="$pkgs,libgcrypt20-dev,libinih-dev,liblz4-dev,linux-libc-dev"
	# The Debian package, built and checked with the release's own
	# debhelper and lintian (distro_build_deb); systemd.pc, which says
	# where units go, is systemd-dev's from Debian 13 on.
	pkgs="$pkgs,build-essential,debhelper,dpkg-dev,fakeroot,lintian"
	case "$release" in
	bookworm) pkgs="$pkgs,systemd" ;;
	*) pkgs="$pkgs,systemd-dev" ;;
	esac
	;;
*) echo "build-debian: unknown kind '$kind'" >&2; exit 1 ;;
esac

# The key: the packages and the recipe's version (raise it when a change
# below changes what the tarball holds).
recipe=3
key=$(echo "$recipe $release $kind $pkgs" | sha256sum | cut -c1-16)
mkdir -p "$cache"
tarball=$cache/$release-$kind-$key.tar
exec 9>"$cache/.lock-$release-$kind"
flock 9
if [ -s "$tarball" ]; then
	echo "$tarball"
	exit 0
fi

command -v mmdebstrap >/dev/null ||
	{ echo "build-debian: mmdebstrap is not installed" >&2; exit 1; }

# The archive: the host's own mirror (a mirror or proxy configured there
# is used here too), for any release; sid's Release file may be past its
# Valid-Until.
mirror=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null |
	grep -v security | head -n1)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $2 !~ /security/ { print $2; exit }' \
	/etc/apt/sources.list 2>/dev/null)
[ -n "$mirror" ] || mirror=http://deb.debian.org/debian

tmp=$tarball.tmp.$$
log=$cache/build-$release-$kind.log
trap 'rm -f "$tmp"' EXIT
echo "build-debian: building $tarball (log: $log)" >&2
began=$EPOCHSECONDS
hooks=(--customize-hook='rm -f "$1"/var/cache/apt/archives/*.deb')
if [ "$kind" != build ]; then
	# The guest's root is /dev/vda1 (ext4), its swap /dev/vda2: an fstab
	# the way an installer writes it, an empty root password (a shell
	# on the console when debugging by hand), no gettys (the console is
	# the case's), an ordinary user for logind's answers.  Under TCG
	# and on 2 cores every initramfs build counts: the guest needs the
	# virtio and ext4 modules only.  dracut's configuration must be
	# there before the kernel's package builds the first initramfs
	# (setup hook); distro-case.sh does the same for initramfs-tools.
	dracut_conf='hostonly="no"
drivers+=" virtio_pci virtio_blk ext4 "'
	hooks+=(--setup-hook='mkdir -p "$1/etc/dracut.conf.d"'
		--setup-hook="printf '%s\\n' '$dracut_conf' >\"\$1/etc/dracut.conf.d/10-torpor-vm.conf\""
		--customize-hook='echo "/dev/vda1 / ext4 errors=remount-ro 0 1" >"$1/etc/fstab"'
		--customize-hook='echo torpor-vm >"$1/etc/hostname"'
		--customize-hook='chroot "$1" passwd -d root'
		--customize-hook='chroot "$1" useradd -m -s /bin/sh vmuser'
		--customize-hook='chroot "$1" systemctl mask serial-getty@ttyS0.service getty@tty1.service')
fi
sources=("$mirror")
# (The backports kernel: named by its package, the only one of that name.)
[ "$kind" = initramfs-tools-grub ] &&
	sources+=("deb $mirror $release-backports main")
if ! mmdebstrap --variant=minbase --format=tar --include="$pkgs" \
	--aptopt='Acquire::Check-Valid-Until "false"' \
	--aptopt='Acquire::Retries "3"' \
	"${hooks[@]}" "$release" "$tmp" "${sources[@]}" >"$log" 2>&1; then
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
[ -z "${TORPOR_VM_TIMES:-}" ] ||
	echo "$release-$kind $((EPOCHSECONDS - began))" >>"$TORPOR_VM_TIMES"
# Older tarballs of this release and kind are stale: their inputs changed
# (debian12-KIND-*: bookworm's, named before there were other releases).
old_names=("$cache/$release-$kind"-*.tar)
[ "$release" = bookworm ] && old_names+=("$cache"/debian12-"$kind"-*.tar)
for old in "${old_names[@]}"; do
	# (RELEASE-KIND-* also matches RELEASE-KIND-crypt-*: another kind's.)
	case "$old" in "$cache/$release-$kind"-crypt-* | "$cache/$release-$kind"-grub-*) continue ;; esac
	[ "$old" = "$tarball" ] || rm -f "$old"
done
echo "$tarball"
