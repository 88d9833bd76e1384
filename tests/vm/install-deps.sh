#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Install what the VM suite needs, when it is missing: QEMU, Debian's
# kernel, a static busybox and the tools build-initramfs.sh uses; for the
# distribution cases, mmdebstrap (the Debian root filesystems), sfdisk and
# e2fsprogs (their disk images) and OVMF (the EFI firmware).
# Idempotent: does nothing when everything is there.
# Exit: 0 everything installed, 77 missing and not root (cannot install),
# 1 apt-get failed.
set -eu

pkgs=(qemu-system-x86 linux-image-amd64 busybox-static xz-utils cpio kmod
	mmdebstrap fdisk e2fsprogs btrfs-progs ovmf)

missing=()
for p in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
		grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	cat >&2 <<EOF
***********************************************************************
vm: missing Debian packages: ${missing[*]}
vm: not root, cannot install them: the VM suite cannot run.
vm: run: sudo apt-get install ${missing[*]}
***********************************************************************
EOF
	exit 77
fi
echo "vm: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq || exit 1
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
	exit 1
