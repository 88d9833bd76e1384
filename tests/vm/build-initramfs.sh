#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Build the VM suite's guest: Debian's installed kernel (as an uncompressed
# vmlinux when it can be extracted: QEMU then boots it through its PVH entry,
# about twice as fast under TCG as the bzImage) and an initramfs holding
# busybox, the virtio modules, the marker, torpor's programs and plugins,
# every shared library they need (found with ldd), the init script and the
# files of one case.
#
# Usage: build-initramfs.sh [-f SRC=DEST]... [-m MODULE]... [-T] BUILDDIR OUTDIR
#   BUILDDIR  meson build directory holding src/torpor/torpor,
#             src/torpor-resume/torpor-resume, plugins/*.so, tests/vm/marker
#   OUTDIR    where to write initramfs.cpio and kernel.path
#   -f        copy SRC into the initramfs as DEST (absolute), e.g. a config
#   -m        load MODULE (and what it depends on) at boot too, e.g. ext4
#   -T        torpor optional: build without torpor's programs (the
#             kernel-baseline case and scripts/vm-shell before they exist)
# Environment: TORPOR_VM_KERNEL=/boot/vmlinuz-VER picks the kernel (default:
# the newest /boot/vmlinuz-* that has /lib/modules/VER);
# TORPOR_VM_KERNEL_ROOT=DIR takes kernels and modules from DIR/boot and
# DIR/lib/modules instead of the host's (a kernel package unpacked with
# dpkg -x, or a release's root filesystem: see perf.sh).
# Exit: 0 built, 77 no usable kernel, 1 any other failure.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
extra=()
modules=(virtio_pci virtio_blk)
torpor_optional=0
usage="usage: $0 [-f SRC=DEST]... [-m MODULE]... [-T] BUILDDIR OUTDIR"
while getopts "f:m:T" opt; do
	case "$opt" in
	f) extra+=("$OPTARG") ;;
	m) modules+=("$OPTARG") ;;
	T) torpor_optional=1 ;;
	*) echo "$usage" >&2; exit 1 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -eq 2 ] || { echo "$usage" >&2; exit 1; }
builddir=$(cd "$1" && pwd)
mkdir -p "$2"
outdir=$(cd "$2" && pwd)

die() { echo "build-initramfs: $*" >&2; exit 1; }

# --- The kernel -----------------------------------------------------------
kroot=${TORPOR_VM_KERNEL_ROOT:-}
kernel=${TORPOR_VM_KERNEL:-}
if [ -z "$kernel" ]; then
	for k in $(ls "$kroot"/boot/vmlinuz-* 2>/dev/null | sort -V -r); do
		if [ -d "$kroot/lib/modules/${k#"$kroot"/boot/vmlinuz-}" ]; then
			kernel=$k
			break
		fi
	done
fi
if [ -z "$kernel" ] || [ ! -r "$kernel" ]; then
	echo "build-initramfs: no readable $kroot/boot/vmlinuz-* with its $kroot/lib/modules" >&2
	exit 77
fi
kver=${kernel##*/vmlinuz-}
moddir=$kroot/lib/modules/$kver
[ -d "$moddir" ] || { echo "build-initramfs: $moddir missing" >&2; exit 77; }
# modprobe's view of that tree (-d: the root that holds lib/modules).
modprobe_root=()
[ -z "$kroot" ] || modprobe_root=(-d "$kroot")

# The uncompressed kernel, once per kernel, in the build dir; the bzImage
# when it cannot be extracted.
cache=$builddir/vm-kernel
mkdir -p "$cache"
vmlinux=$cache/vmlinux-$kver
boot_kernel=$kernel
"$here/extract-vmlinux.sh" "$kernel" "$vmlinux" ||
	echo "build-initramfs: could not extract vmlinux from $kernel; booting the bzImage (slower)" >&2
[ -s "$vmlinux" ] && boot_kernel=$vmlinux
echo "$boot_kernel" >"$outdir/kernel.path"
echo "$kver" >"$outdir/kernel.release"

# --- The tree -------------------------------------------------------------
root=$outdir/root
rm -rf "$root"
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,dev,proc,sys,run,tmp,etc/torpor,lib/modules,usr/lib/torpor/plugins,mnt}

busybox=$(command -v busybox || true)
[ -n "$busybox" ] || die "busybox not found (install busybox-static)"
file -L "$busybox" 2>/dev/null | grep -q 'statically linked' ||
	ldd "$busybox" 2>&1 | grep -q 'not a dynamic' ||
	die "$busybox is not statically linked (install busybox-static)"
cp "$busybox" "$root/bin/busybox"
for applet in $("$busybox" --list-full); do
	[ -e "$root/$applet" ] || ln -s /bin/busybox "$root/$applet"
done

# The virtio modules (and -m's), in load order, resolved through
# modules.dep.
: >"$root/lib/modules/load-order"
for m in "${modules[@]}"; do
	modprobe "${modprobe_root[@]}" -S "$kver" --show-depends "$m" 2>/dev/null |
		awk '$1 == "insmod" { print $2 }'
done | awk '!seen[$0]++' | while read -r ko; do
	name=$(basename "$ko")
	case "$name" in
	*.ko.xz) xz -dc "$ko" >"$root/lib/modules/${name%.xz}"; name=${name%.xz} ;;
	*.ko.zst) zstd -qdc "$ko" >"$root/lib/modules/${name%.zst}"; name=${name%.zst} ;;
	*.ko.gz) gzip -dc "$ko" >"$root/lib/modules/${name%.gz}"; name=${name%.gz} ;;
	*.ko) cp "$ko" "$root/lib/modules/$name" ;;
	*) die "unexpected module file $ko" ;;
	esac
	echo "$name" >>"$root/lib/modules/load-order"
done
grep -q virtio_blk "$root/lib/modules/load-order" ||
	die "could not resolve virtio_blk in $moddir (modprobe -S $kver --show-depends virtio_blk)"

# Binaries, then every library ldd names for any of them, at the path ldd
# gives (a RUNPATH into the build tree keeps working that way).
bins=()
marker=$builddir/tests/vm/marker
[ -x "$marker" ] || die "$marker missing (meson compile -C $builddir marker)"
cp "$marker" "$root/usr/bin/marker"
bins+=("$marker")
for p in src/torpor/torpor src/torpor-resume/torpor-resume src/torpord/torpord; do
	if [ -x "$builddir/$p" ]; then
		cp "$builddir/$p" "$root/usr/sbin/"
		bins+=("$builddir/$p")
	elif [ "$torpor_optional" = 0 ]; then
		die "$builddir/$p missing: build torpor first"
	fi
done
shopt -s nullglob
for so in "$builddir"/plugins/*.so; do
	cp "$so" "$root/usr/lib/torpor/plugins/"
	bins+=("$so")
done
shopt -u nullglob

for b in "${bins[@]}"; do
	out=$(ldd "$b" 2>&1) || {
		case "$out" in *"not a dynamic"*) continue ;; esac
		die "ldd $b failed: $out"
	}
	if grep -q 'not found' <<<"$out"; then
		die "ldd $b: a library is missing: $(grep 'not found' <<<"$out")"
	fi
	awk '/=>/ { if ($3 ~ /^\//) print $3; next } $1 ~ /^\// { print $1 }' <<<"$out"
done | sort -u | while read -r lib; do
	mkdir -p "$root$(dirname "$lib")"
	cp -L "$lib" "$root$lib"
done
# The loader named by PT_INTERP must exist under that exact path.
[ -e "$root/lib64/ld-linux-x86-64.so.2" ] ||
	die "the dynamic loader was not found by ldd"

install -m 0755 "$here/init" "$root/init"
for e in "${extra[@]}"; do
	src=${e%%=*} dest=${e#*=}
	[ -e "$src" ] || die "missing file $src"
	mkdir -p "$root$(dirname "$dest")"
	cp -L "$src" "$root$dest"
done
echo "$kver" >"$root/etc/kernel-release"

# Uncompressed: unpacking gzip under TCG costs more than copying.
(cd "$root" && find . -print0 | LC_ALL=C sort -z |
	cpio --null -o -H newc --quiet --owner=0:0) >"$outdir/initramfs.cpio.tmp"
mv "$outdir/initramfs.cpio.tmp" "$outdir/initramfs.cpio"
