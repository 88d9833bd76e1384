#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# dracut module: torpor-resume in the initramfs, as a pre-mount hook or, in a
# systemd initrd, as torpor-resume.service.
check() {
	[[ -x @sbindir@/torpor-resume ]] || return 1
	return 0
}

depends() {
	return 0
}

install() {
	inst_binary @sbindir@/torpor-resume
	local p
	for p in @plugindir@/*.so; do
		[[ -e $p ]] && inst_library "$p"
	done
	inst_simple /etc/torpor/torpor.conf
	[[ -f /etc/torpor/crypt.key ]] && inst_simple /etc/torpor/crypt.key
	[[ -f /etc/torpor/crypt.keyfile ]] && inst_simple /etc/torpor/crypt.keyfile
	if dracut_module_included "systemd"; then
		inst_simple "${systemdsystemunitdir}/torpor-resume.service"
		$SYSTEMCTL -q --root "$initdir" enable torpor-resume.service
	else
		inst_hook pre-mount 10 "$moddir/torpor-resume.sh"
	fi
}
