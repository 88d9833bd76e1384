#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# dracut module: torpor-resume in the initramfs, as torpor-resume.service in
# a systemd initrd, as a pre-mount hook otherwise.
check() {
	require_binaries @sbindir@/torpor-resume || return 1
	[[ -f @torpor_conf@ ]] || return 1
	return 0
}

depends() {
	return 0
}

install() {
	local list kind path

	list=$(@libexecdir@/torpor/initramfs-files) || {
		derror "torpor: the initramfs could not resume a torpor image"
		return 1
	}
	inst_binary @sbindir@/torpor-resume
	inst_script @libexecdir@/torpor/torpor-initrd-resume
	while read -r kind path; do
		case $kind in
		# inst_binary resolves the plugin's libraries (ldd), as for
		# an executable.
		plugin) inst_binary "$path" ;;
		file) inst_simple "$path" ;;
		esac
	done <<<"$list"
	inst_multiple mkdir
	if dracut_module_included "systemd"; then
		inst_simple "$moddir/torpor-resume.service" \
			"$systemdsystemunitdir/torpor-resume.service"
		$SYSTEMCTL -q --root "$initdir" enable torpor-resume.service
	else
		inst_hook pre-mount 10 "$moddir/torpor-resume.sh"
	fi
}
