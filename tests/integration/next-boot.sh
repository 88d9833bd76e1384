#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The next boot and the hibernation (issue 42): a fake root
# ($TORPOR_TEST_SYSROOT) holds a boot loader whose default is another
# kernel than the running one ($TORPOR_SIM_KERNEL_RELEASE), on the
# simulated snapshot device.  The sim's "next boot" ($TORPOR_SIM_NEXT_BOOT)
# copies what the boot loader would read at the power-off.
#   grub         the one-shot (grubenv next_entry) is set at the power-off
#                and gone after the resume; the block is as it was
#   grub-used    GRUB used it at boot (next_entry emptied): the user's own
#                one-shot comes back
#   systemd-boot LoaderEntryOneShot, set and removed again
#   fail         the snapshot fails (no memory for its copy): taken back
#   cancel       cancelled by a sleep hook before the freeze: taken back
#   refuse       no one-shot can be set (grubenv others may write):
#                refused before the freeze, with what to do; --force
#                hibernates, the new kernel's initramfs checked too;
#                through torpord too
#   hostile      grubenv of another owner or mode: refused; a symbolic
#                link or of another size: cannot tell; never written
#   unknown      no boot loader at all: cannot tell, hibernates
#   status       status's next boot line and JSON for each verdict
. "$(dirname "$0")/lib.sh"

NEW=6.12.57+bpo-amd64
OLD=6.1.0-28-amd64
NEW_RE='6\.12\.57\+bpo-amd64'	# in the regular expressions
UUID=3b8b6c5e-2f0a-4d7e-9c41-5a1e2d7f9b20
GUID=4a67b082-0a4c-41cf-b6c7-440b29bb8c4f
SYSROOT=$WORK/root
ENV=$SYSROOT/boot/grub/grubenv
ONESHOT=$SYSROOT/sys/firmware/efi/efivars/LoaderEntryOneShot-$GUID
AT_OFF=$WORK/at-poweroff
export TORPOR_TEST_SYSROOT=$SYSROOT TORPOR_SIM_KERNEL_RELEASE=$OLD
mkdir -p "$SYSROOT/proc"
write_config sim:8M ""

# grub_root [GRUBENV_LINES]: Debian's grub.cfg shape, the new kernel the
# default and the running one in "Advanced options".
grub_root() {
	mkdir -p "$SYSROOT/boot/grub"
	cat >"$SYSROOT/boot/grub/grub.cfg" <<-CFG
	if [ -s \$prefix/grubenv ]; then
	  set have_grubenv=true
	  load_env
	fi
	if [ "\${next_entry}" ] ; then
	   set default="\${next_entry}"
	   set next_entry=
	   save_env next_entry
	   set boot_once=true
	else
	   set default="0"
	fi
	menuentry 'Debian GNU/Linux' --class debian \$menuentry_id_option 'gnulinux-simple-$UUID' {
		linux	/boot/vmlinuz-$NEW root=UUID=$UUID ro quiet
	}
	submenu 'Advanced options for Debian GNU/Linux' \$menuentry_id_option 'gnulinux-advanced-$UUID' {
		menuentry 'Debian GNU/Linux, with Linux $NEW' --class debian \$menuentry_id_option 'gnulinux-$NEW-advanced-$UUID' {
			linux	/boot/vmlinuz-$NEW root=UUID=$UUID ro quiet
		}
		menuentry 'Debian GNU/Linux, with Linux $OLD' --class debian \$menuentry_id_option 'gnulinux-$OLD-advanced-$UUID' {
			linux	/boot/vmlinuz-$OLD root=UUID=$UUID ro quiet
		}
	}
	CFG
	grubenv "${1:-}"
}

# grubenv LINES: the 1024-byte block.
grubenv() {
	python3 - "$ENV" "$1" <<-'PY'
	import sys
	b = b"# GRUB Environment Block\n" + sys.argv[2].encode()
	open(sys.argv[1], "wb").write(b + b"#" * (1024 - len(b)))
	PY
	chmod 644 "$ENV"
}

next_entry() {	# next_entry FILE: its next_entry value
	sed -n 's/^next_entry=//p' "$1" | tr -d '#'
}

ONCE_ID="gnulinux-advanced-$UUID>gnulinux-$OLD-advanced-$UUID"

case_grub() {
	grub_root "saved_entry=0
"
	cp "$ENV" "$WORK/before"
	TORPOR_SIM_NEXT_BOOT="cp '$ENV' '$AT_OFF'" t_run hib torpor hibernate --direct
	expect_rc 0 "hibernate"
	expect_err "next boot: a one-shot boot of \"Debian GNU/Linux, with Linux $OLD\" \\($ONCE_ID\\) is set; the default stays $NEW_RE" "the one-shot is said"
	[ "$(next_entry "$AT_OFF")" = "$ONCE_ID" ] ||
		fail "at the power-off next_entry is '$(next_entry "$AT_OFF")'"
	grep -q '^saved_entry=0$' "$AT_OFF" || fail "the default changed at the power-off"
	[ "$(stat -c %s "$AT_OFF")" = 1024 ] || fail "grubenv is no longer 1024 bytes"
	cmp -s "$ENV" "$WORK/before" || fail "grubenv is not as it was after the resume"
	# --test sets it and takes it back too.
	t_run hib torpor hibernate --direct --test
	expect_rc 0 "hibernate --test"
	expect_err "next boot: a one-shot boot of" "--test sets the one-shot"
	cmp -s "$ENV" "$WORK/before" || fail "grubenv is not as it was after --test"
}

case_grub_used() {
	grub_root "next_entry=0
"
	# GRUB at the boot: next_entry emptied, as its grub.cfg does.
	TORPOR_SIM_NEXT_BOOT="cp '$ENV' '$AT_OFF'; python3 -c 'import sys; b=b\"# GRUB Environment Block\\nnext_entry=\\n\"; open(sys.argv[1],\"wb\").write(b+b\"#\"*(1024-len(b)))' '$ENV'" \
		t_run hib torpor hibernate --direct
	expect_rc 0 "hibernate"
	[ "$(next_entry "$AT_OFF")" = "$ONCE_ID" ] || fail "at the power-off next_entry is '$(next_entry "$AT_OFF")'"
	[ "$(next_entry "$ENV")" = 0 ] || fail "the user's one-shot did not come back: '$(next_entry "$ENV")'"
}

# The systemd-boot root: two type #1 entries, the newest first.
sd_root() {
	local d=$SYSROOT/efi/loader/entries v
	mkdir -p "$d" "$SYSROOT/sys/firmware/efi/efivars"
	for v in "$OLD" "$NEW"; do
		printf 'title Debian (%s)\nversion %s\nlinux /abc/%s/linux\n' "$v" "$v" "$v" >"$d/abc-$v.conf"
	done
}

case_systemd_boot() {
	sd_root
	TORPOR_SIM_NEXT_BOOT="cp '$ONESHOT' '$AT_OFF'" t_run hib torpor hibernate --direct
	expect_rc 0 "hibernate"
	expect_err "next boot: a one-shot boot of \"Debian \\($OLD\\)\" \\(abc-$OLD.conf\\) is set" "the one-shot is said"
	python3 - "$AT_OFF" "abc-$OLD.conf" <<-'PY' || fail "LoaderEntryOneShot at the power-off: $(od -c "$AT_OFF" | head -3)"
	import sys
	d = open(sys.argv[1], "rb").read()
	assert d == b"\x07\0\0\0" + (sys.argv[2] + "\0").encode("utf-16-le"), d
	PY
	[ -e "$ONESHOT" ] && fail "LoaderEntryOneShot is left after the resume"
	true
}

case_fail() {
	grub_root ""
	cp "$ENV" "$WORK/before"
	# The snapshot's copy has no room: CREATE_IMAGE fails after the freeze.
	printf 'MemTotal: 524288 kB\nMemFree: 100 kB\nMemAvailable: 200 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n' \
		>"$SYSROOT/proc/meminfo"
	t_run hib torpor hibernate --direct
	expect_rc 1 "hibernate without the memory for the copy"
	expect_err "next boot: a one-shot boot of" "the one-shot was set"
	expect_err "could not create the image" "the snapshot failed"
	cmp -s "$ENV" "$WORK/before" || fail "grubenv is not as it was after the failure: $(next_entry "$ENV")"
	rm -f "$SYSROOT/proc/meminfo"
	sd_root
	rm -rf "$SYSROOT/boot"
	printf 'MemTotal: 524288 kB\nMemFree: 100 kB\nMemAvailable: 200 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n' \
		>"$SYSROOT/proc/meminfo"
	t_run hib torpor hibernate --direct
	expect_rc 1 "hibernate without the memory for the copy (systemd-boot)"
	expect_err "next boot: a one-shot boot of" "the one-shot was set (systemd-boot)"
	[ -e "$ONESHOT" ] && fail "LoaderEntryOneShot is left after the failure"
	true
}

case_cancel() {
	[ -e "$TORPOR_PLUGINDIR/sleep-hooks.so" ] || { echo "SKIP: no sleep-hooks plugin"; exit 77; }
	grub_root ""
	cp "$ENV" "$WORK/before"
	mkdir -p "$WORK/hooks"
	printf '#!/bin/sh\n[ "$1" = pre ] && kill -INT $PPID\nexit 0\n' >"$WORK/hooks/cancel"
	chmod 755 "$WORK/hooks/cancel"
	write_config sim:8M ""
	printf '\n[sleep-hooks]\ndirectory = %s\n' "$WORK/hooks" >>"$CONF"
	t_run hib torpor hibernate --direct
	expect_rc 1 "a cancelled hibernation"
	expect_err "next boot: a one-shot boot of" "the one-shot was set before the cancel"
	expect_err "cancelled" "cancelled"
	cmp -s "$ENV" "$WORK/before" || fail "grubenv is not as it was after the cancel: $(next_entry "$ENV")"
}

case_refuse() {
	grub_root ""
	chmod 666 "$ENV"
	cp "$ENV" "$WORK/before"
	t_run hib torpor hibernate --direct
	expect_rc 1 "hibernate with no one-shot possible"
	expect_err "^torpor: next boot: $NEW_RE \\(GRUB default\\); the running kernel is $OLD: an image written now would be refused, and torpor cannot set a one-shot boot of the running kernel: .*grubenv or its folder may be changed by others than root" "why"
	expect_err "^torpor: the next boot could not resume this image: pick \"Debian GNU/Linux, with Linux $OLD\" in the GRUB menu at the next boot; .*or hibernate with --force" "what to do"
	grep -Eq 'freeze|sim: poweroff' "$ERR" && fail "a refused cycle froze"
	cmp -s "$ENV" "$WORK/before" || fail "a refused cycle wrote grubenv"
	t_run hib torpor hibernate --direct --force
	expect_rc 0 "hibernate --force"
	expect_err "hibernating anyway \\(--force\\)" "--force is said"
	cmp -s "$ENV" "$WORK/before" || fail "a forced cycle wrote grubenv"
	# The new kernel's initramfs is checked too (item 5): none, then one
	# without torpor-resume; warnings with --force.
	expect_err "no initramfs found \\($SYSROOT/boot/initrd.img-$NEW_RE or .*\\): hibernating anyway \\(--force\\)" "the next kernel's initramfs is looked for"
	echo "not a cpio archive" >"$SYSROOT/boot/initrd.img-$NEW"
	t_run hib torpor hibernate --direct --force --test
	expect_rc 0 "hibernate --force --test"
	expect_err "initramfs $SYSROOT/boot/initrd.img-$NEW_RE: " "the next kernel's initramfs is checked"
	# Through torpord: refused, and --force reaches it.
	local sock=$WORK/torpord.sock dlog=$WORK/torpord.log
	"$TORPORD" --config "$CONF" --plugin-dir "$TORPOR_PLUGINDIR" --socket "$sock" >>"$dlog" 2>&1 &
	local dpid=$!
	for _ in $(seq 200); do
		[ -S "$sock" ] && "$TORPOR" -q --socket "$sock" status >/dev/null 2>&1 && break
		sleep 0.05
	done
	t_run hib "$TORPOR" --socket "$sock" hibernate --test
	expect_rc 1 "hibernate through torpord"
	expect_err "the next boot could not resume this image: pick" "torpord's refusal reaches the client"
	t_run hib "$TORPOR" --socket "$sock" hibernate --test --force
	expect_rc 0 "hibernate --force through torpord"
	expect_out 'hibernate \(test\):' "the forced cycle ran"
	kill "$dpid"; wait "$dpid" 2>/dev/null
}

# hostile WHAT: grubenv made so by the commands given; never written.
hostile() {
	local what=$1; shift
	rm -rf "$SYSROOT/boot"
	grub_root ""
	"$@"
	cp "$ENV" "$WORK/before"
	t_run hib torpor hibernate --direct
	expect_rc 1 "$what: refused"
	expect_err "may be changed by others than root" "$what: said"
	grep -q "one-shot boot of .* is set" "$ERR" && fail "$what: a one-shot was set"
	cmp -s "$ENV" "$WORK/before" || fail "$what: written"
}

case_hostile() {
	# A symbolic link: GRUB's files cannot be read as they are, torpor
	# cannot tell, and neither writes nor refuses.
	grub_root ""
	mv "$ENV" "$WORK/other" && ln -s "$WORK/other" "$ENV"
	cp "$WORK/other" "$WORK/other-before"
	t_run hib torpor hibernate --direct --test
	expect_rc 0 "grubenv a symbolic link: cannot tell"
	expect_err "next boot: cannot tell: GRUB: .*grubenv: a symbolic link, not followed" "symbolic link: said"
	cmp -s "$WORK/other" "$WORK/other-before" || fail "written through the symbolic link"
	hostile "another owner" chown 65534 "$ENV"
	hostile "another mode" chmod 664 "$ENV"
	# Another size: the block cannot be read as GRUB's, so torpor cannot
	# tell; it neither writes nor refuses.
	rm -rf "$SYSROOT/boot"
	grub_root ""
	head -c 1000 "$ENV" >"$WORK/short" && cat "$WORK/short" >"$ENV"
	cp "$ENV" "$WORK/before"
	t_run hib torpor hibernate --direct --test
	expect_rc 0 "grubenv of 1000 bytes: cannot tell"
	expect_err "next boot: cannot tell: GRUB: .*grubenv" "another size: said"
	cmp -s "$ENV" "$WORK/before" || fail "a grubenv of another size was written"
}

case_unknown() {
	t_run hib torpor hibernate --direct --test
	expect_rc 0 "no boot loader"
	expect_err "next boot: cannot tell: no boot loader torpor knows" "cannot tell, said"
	t_run st torpor status
	expect_out "^next boot: +cannot tell: no boot loader torpor knows" "status: cannot tell"
	# The sim without a test root: no boot involved, not looked at.
	env -u TORPOR_TEST_SYSROOT "$TORPOR" --config "$CONF" --plugin-dir "$TORPOR_PLUGINDIR" status >"$OUT" 2>"$ERR"
	expect_out "^next boot: +not looked at: the simulated snapshot device" "status on the sim"
}

# status_json VERDICT PYTHON-ASSERTIONS: on d, the next_boot object.
status_json() {
	t_run st torpor status --json
	python3 -c "import json,sys; d=json.load(open(sys.argv[1]))['next_boot']; assert d['verdict'] == sys.argv[2], d; $2" \
		"$OUT" "$1" || fail "status --json next_boot ($1): $(cat "$OUT")"
}

case_status() {
	grub_root ""
	t_run st torpor status
	expect_rc 0 "status with a one-shot possible"
	expect_out "^next boot: +$NEW_RE \\(GRUB default\\); the running kernel is $OLD: torpor hibernate sets a one-shot boot of \"Debian GNU/Linux, with Linux $OLD\" \\(grubenv next_entry\\), so the image resumes" "redirect"
	status_json redirect "assert d['loader'] == 'grub' and d['release'] == '$NEW' and d['running'] == '$OLD' and d['one_shot'] == '$ONCE_ID' and d['by'] == 'GRUB default' and d['running_entry'] == 'Debian GNU/Linux, with Linux $OLD' and d['fix'] is None, d"
	TORPOR_SIM_KERNEL_RELEASE=$NEW t_run st torpor status
	expect_out "^next boot: +$NEW_RE \\(GRUB default\\), the running kernel: an image written now resumes" "running"
	chmod 666 "$ENV"
	t_run st torpor status
	expect_rc 1 "status when hibernate would refuse"
	expect_out "^next boot: +$NEW_RE \\(GRUB default\\); the running kernel is $OLD: an image written now would be refused" "refuse"
	expect_out "^hibernate: +not possible: the next boot starts $NEW_RE, not the running $OLD: pick" "refuse: the reason"
	status_json refuse "assert d['one_shot'] is None and 'pick' in d['fix'], d"
	python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['can_hibernate'] is False and 'next boot starts' in d['disabled_reason'], d" "$OUT" ||
		fail "status --json: the refusal is no reason"
	rm -rf "$SYSROOT/boot"
	status_json unknown "assert d['loader'] is None and d['release'] is None and d['description'].startswith('cannot tell'), d"
}

case "${1:?usage: $0 CASE}" in
grub) case_grub ;;
grub-used) case_grub_used ;;
systemd-boot) case_systemd_boot ;;
fail) case_fail ;;
cancel) case_cancel ;;
refuse) case_refuse ;;
hostile) case_hostile ;;
unknown) case_unknown ;;
status) case_status ;;
*) echo "unknown case $1"; exit 1 ;;
esac
finish
