# SPDX-License-Identifier: GPL-2.0-or-later
# Shared by distro-case.sh and prepare.sh (sourced): what a distribution
# case's name says, and torpor built in a chroot of the case's release.

# distro_parse NAME: set release, gen, layout, luks_swap, corrupt, stale,
# action and efi from a case's name, distro-[RELEASE-]WHAT[-efi].
# RELEASE: bookworm (the default: Debian 12), trixie (Debian 13) or sid
# (unstable); -efi boots through OVMF instead of SeaBIOS.  layout: swap
# (an ext4 root, a swap partition), btrfs (Fedora's: a btrfs root, zram
# swap only, the image in a NOCOW file on the root) or luks (Debian's
# encrypted LVM, see distro-case.sh; luks_swap=file: Ubuntu's swap file
# instead of the swap volume, partition: a LUKS swap partition).
# grub=1 (distro-grub, Debian 12 only): GRUB in the disk's MBR boots the
# guest (no QEMU -kernel), two kernels installed (6.1 and backports'
# 6.12.57, the default), boot 1 runs 6.1; see distro-case.sh.
# kernel_own=1 (distro-grub-kernel): the same guest without torpor, the
# kernel's own hibernation (a measurement, vm-full); grub_other=1
# (distro-grub-other): 6.12.57 chosen by hand after torpor hibernated 6.1;
# grub_refuse=1 (distro-grub-refuse): a grubenv torpor will not write.
# package=1 (distro-[RELEASE-]package): torpor from its Debian package,
# installed, upgraded and purged with apt in the guest, see distro-case.sh.
# action=deb (distro-[RELEASE-]deb): no guest; the Debian package built
# and checked with lintian in the release's chroot.
# Also sets kind, the root filesystem's tarball kind (build-debian.sh),
# and corrupt_again: after the resume, the normal boot hibernates again
# and the next boot must refuse that image, damaged by the host (luks,
# and bookworm's suspend-then-hibernate: distro-corrupt's checks, without
# a boot 1 of their own).
distro_parse() {
	local what=${1#distro-}
	release=bookworm gen=initramfs-tools corrupt=0 stale=0 action=hibernate efi=0
	layout=swap luks_swap=lv package=0 grub=0 kernel_own=0 grub_other=0 grub_refuse=0
	case "$what" in
	bookworm-* | trixie-* | sid-*) release=${what%%-*} what=${what#*-} ;;
	esac
	case "$what" in
	*-efi) efi=1 what=${what%-efi} ;;
	esac
	case "$what" in
	initramfs-tools) ;;
	suspend-then-hibernate) action=suspend-then-hibernate ;;
	corrupt) corrupt=1 ;;
	stale) stale=1 ;;
	stale-root) stale=2 ;;
	dracut) gen=dracut ;;
	dracut-corrupt) gen=dracut corrupt=1 ;;
	btrfs) gen=dracut layout=btrfs ;;
	btrfs-stale-root) gen=dracut layout=btrfs stale=3 ;;
	luks-lvm) layout=luks ;;
	dracut-luks-lvm) gen=dracut layout=luks ;;
	luks-swapfile) layout=luks luks_swap=file ;;
	luks-swap-partition) layout=luks luks_swap=partition ;;
	package) package=1 ;;
	grub) grub=1 ;;
	grub-kernel) grub=1 kernel_own=1 ;;
	grub-other) grub=1 grub_other=1 ;;
	grub-refuse) grub=1 grub_refuse=1 ;;
	deb) action=deb ;;
	*) echo "distro-case: unknown case '$1'" >&2; return 1 ;;
	esac
	kind=$gen corrupt_again=0
	[ "$action" = deb ] && kind=build
	[ "$layout" = luks ] && kind=$gen-crypt corrupt_again=1
	[ "$grub" = 1 ] && kind=$gen-grub
	[ "$action" = suspend-then-hibernate ] && [ "$release" = bookworm ] && corrupt_again=1
	return 0
}

# in_build DEST CMD...: run CMD in the build chroot ($bchroot), the source
# ($srcdir) at /src (read-only), the build directory ($pb) at /build, DEST
# (if not empty) at /dest.  In a mount namespace of its own whose root is
# the chroot (pivot_root), the host's other mounts detached from it: a
# new mount namespace holds a copy of every mount there is, and such a
# copy keeps a filesystem busy after the host unmounts it (prepare.sh
# builds while the unit tests mount and check filesystems on loop
# devices: writers-root's `btrfs check` found its device busy).
in_build() {
	unshare --mount --propagation private -- sh -c '
		r=$1 s=$2 b=$3 d=$4; shift 4
		mkdir -p "$r/src" "$r/build" "$r/dest" "$r/mnt" &&
		mount --bind "$r" "$r" &&
		mount -t proc proc "$r/proc" && mount --rbind /dev "$r/dev" &&
		mount --bind "$s" "$r/src" && mount -o remount,bind,ro "$r/src" &&
		mount --bind "$b" "$r/build" &&
		{ [ -z "$d" ] || mount --bind "$d" "$r/dest"; } &&
		cd "$r" && pivot_root . mnt && umount -l /mnt &&
		exec chroot / "$@"' sh "$bchroot" "$srcdir" "$pb" "$1" "${@:2}"
}

# distro_build_torpor RELEASE BUILDTAR SRCDIR BUILDDIR LOGDIR: torpor built
# in RELEASE's chroot (unpacked from BUILDTAR into BUILDDIR/vm-chroot-
# RELEASE) for /usr, as README says: the release's compiler, meson and
# libraries, -Werror, as its packager would; the build directory is
# BUILDDIR/vm-distro-RELEASE.  Sets bchroot, pb and srcdir for in_build.
# One build at a time for a release (prepare.sh builds ahead of the cases).
distro_build_torpor() {
	local rel=$1 buildtar=$2 log=$5 rc=0
	srcdir=$3 bchroot=$4/vm-chroot-$1 pb=$4/vm-distro-$1
	exec 8>"$bchroot.lock"
	flock 8
	if [ "$(cat "$bchroot.stamp" 2>/dev/null)" != "$buildtar" ]; then
		rm -rf "$bchroot" "$pb"
		mkdir -p "$bchroot"
		tar -xf "$buildtar" -C "$bchroot" ||
			{ echo "vm: unpacking $buildtar failed" >&2; rc=1; }
		[ "$rc" != 0 ] || echo "$buildtar" >"$bchroot.stamp"
	fi
	mkdir -p "$pb"
	if [ "$rc" = 0 ] && [ ! -f "$pb/build.ninja" ]; then
		in_build "" meson setup /build /src --prefix=/usr --sysconfdir=/etc \
			--localstatedir=/var -Dtests=disabled -Dbuildtype=debugoptimized \
			-Dwerror=true >"$log/meson-setup.log" 2>&1 ||
			{ cat "$log/meson-setup.log" >&2
			  echo "vm: meson setup in the $rel chroot failed" >&2; rc=1; }
	fi
	if [ "$rc" = 0 ]; then
		in_build "" ninja -C /build -j2 >"$log/ninja.log" 2>&1 ||
			{ tail -30 "$log/ninja.log" >&2
			  echo "vm: building torpor in the $rel chroot failed (-Werror)" >&2; rc=1; }
	fi
	flock -u 8
	exec 8>&-
	return $rc
}

# distro_build_deb RELEASE BUILDDIR LOGDIR: torpor's Debian packages built
# in RELEASE's chroot (distro_build_torpor first: it unpacks the chroot
# and sets bchroot) with that release's dpkg-buildpackage and debhelper,
# then checked with its lintian (an error fails, as scripts/test's check
# on the host does).  The .deb files are left in BUILDDIR/vm-deb-RELEASE;
# sets debdir to it.  Built again only when the source or the chroot
# changed (its stamp: the chroot's tarball and a digest of the files the
# build sees).  The unit suite is not
# run (nocheck): scripts/test runs it on the host.
distro_build_deb() {
	local rel=$1 log=$3 key rc=0
	debdir=$2/vm-deb-$1
	exec 8>"$bchroot.lock"
	flock 8
	mkdir -p "$debdir"
	rm -rf "$debdir/src"
	"$srcdir/scripts/deb" --tree "$debdir/src" >"$log/deb-tree.log" 2>&1 ||
		{ cat "$log/deb-tree.log" >&2; rc=1; }
	# (And the chroot's tarball: another debhelper or lintian builds and
	# checks again.)
	key="$(cat "$bchroot.stamp" 2>/dev/null) $(cd "$debdir/src" &&
		find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum)"
	if [ "$rc" = 0 ] && [ "$(cat "$debdir/stamp" 2>/dev/null)" != "$key" ]; then
		rm -f "$debdir"/*.deb "$debdir/stamp"
		in_build "$debdir" sh -c 'cd /dest/src/torpor-* &&
			DEB_BUILD_PROFILES=nocheck DEB_BUILD_OPTIONS="nocheck parallel=2" \
			dpkg-buildpackage -us -uc -b' >"$log/deb-build.log" 2>&1 ||
			{ tail -30 "$log/deb-build.log" >&2
			  echo "vm: dpkg-buildpackage in the $rel chroot failed" >&2; rc=1; }
		if [ "$rc" = 0 ]; then
			in_build "$debdir" sh -c 'lintian --version && lintian --fail-on error /dest/src/*.changes' \
				>"$log/lintian.log" 2>&1 ||
				{ cat "$log/lintian.log" >&2
				  echo "vm: lintian of the $rel chroot found an error" >&2; rc=1; }
		fi
		if [ "$rc" = 0 ]; then
			mv "$debdir"/src/*.deb "$debdir/" && echo "$key" >"$debdir/stamp" || rc=1
		fi
	fi
	rm -rf "$debdir/src"
	flock -u 8
	exec 8>&-
	return $rc
}
