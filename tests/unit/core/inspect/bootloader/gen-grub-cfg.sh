#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# How the grub.cfg fixtures beside this script were made: Debian's own
# grub-mkconfig and /etc/grub.d scripts, of the release given, run in a
# private mount namespace over a fake /boot holding two kernels
# (6.1.0-28-amd64 and 6.12.43+bpo-amd64), with grub-probe and
# grub-mkrelpath replaced by stubs that describe one ext4 root
# filesystem (so the output does not depend on this machine's disks).
# The grub.cfg is the same for BIOS and EFI: what differs (fwsetup, the
# boot loader interface) is decided by GRUB at boot ($grub_platform).
#
# Usage (root; nothing outside the namespace changes):
#   gen-grub-cfg.sh PKGROOT OUT [LINE]
# PKGROOT: grub-common and grub2-common of one release unpacked with
# dpkg -x (apt-get download grub-common grub2-common).  LINE is added to
# the release's /etc/default/grub (GRUB_DEFAULT=saved, say).  Not run by the
# tests.  A newer release's grub-script-check may not run on an older
# host (glibc): SCRIPT_CHECK then names one that does (bookworm's), for
# the syntax check grub-mkconfig makes of its output.
set -eu
pkg=$(cd "${1:?PKGROOT}" && pwd)
out=${2:?OUT}
line=${3:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/stub/sbin" "$work/stub/bin" "$work/etc-up" "$work/etc-w" \
	"$work/usr-w" "$work/usr-up"
cat >"$work/stub/sbin/grub-probe" <<'STUB'
#!/bin/sh
target=
for a; do case $a in --target=*) target=${a#--target=} ;; esac; done
case $target in
device) echo /dev/vda1 ;;
fs_uuid) echo 3b8b6c5e-2f0a-4d7e-9c41-5a1e2d7f9b20 ;;
fs) echo ext2 ;;
partmap) echo msdos ;;
compatibility_hint) echo hd0,msdos1 ;;
hints_string) echo '--hint-bios=hd0,msdos1 --hint-efi=hd0,msdos1 --hint-baremetal=ahci0,msdos1' ;;
drive) echo '(hd0,msdos1)' ;;
abstraction|partuuid|cryptodisk_uuid) ;;
*) exit 1 ;;
esac
STUB
printf '#!/bin/sh\necho "$1"\n' >"$work/stub/bin/grub-mkrelpath"
chmod +x "$work/stub/sbin/grub-probe" "$work/stub/bin/grub-mkrelpath"
if ! "$pkg/usr/bin/grub-script-check" /dev/null 2>/dev/null; then
	cp "${SCRIPT_CHECK:?grub-script-check does not run here}" \
		"$work/stub/bin/grub-script-check"
fi

unshare -m --propagation private sh -eu -c '
	pkg=$1 work=$2 line=$3
	mount -t tmpfs tmpfs /boot
	for v in 6.1.0-28-amd64 6.12.43+bpo-amd64; do
		for f in vmlinuz config System.map initrd.img; do
			echo "$f $v" >/boot/$f-$v
		done
	done
	mkdir /boot/grub
	mount -t overlay overlay -o lowerdir=/etc,upperdir=$work/etc-up,workdir=$work/etc-w /etc
	rm -rf /etc/grub.d /etc/default/grub /etc/default/grub.d
	cp -a "$pkg/etc/grub.d" /etc/grub.d
	cp "$pkg/usr/share/grub/default/grub" /etc/default/grub
	[ -z "$line" ] || echo "$line" >>/etc/default/grub
	mount -t overlay overlay -o lowerdir=$work/stub:$pkg/usr:/usr,upperdir=$work/usr-up,workdir=$work/usr-w /usr
	grub-mkconfig -o /boot/grub/grub.cfg
	cp /boot/grub/grub.cfg "$work/grub.cfg"
	cp /etc/default/grub "$work/default-grub"
' sh "$pkg" "$work" "$line"
cp "$work/grub.cfg" "$out"
