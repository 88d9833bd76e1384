#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# torpor setup --undo against a test root ($TORPOR_TEST_SYSROOT): the
# configuration put back from its .bak or removed, initramfs-tools'
# RESUME=none given the swap area again, the generator run (without the
# configuration, when none was put back), the words the boot loader needs
# said, and every file that is not root's alone refused with nothing
# changed.  The swap
# area the configuration names is a real loop device (never activated):
# `torpor resume-args` names it by its UUID.
. "$(dirname "$0")/writers/lib.sh" "$1"

ROOT=$WORK/root
RELEASE=$(uname -r)
GENLOG=$WORK/generator.log
ETC=$ROOT${TORPOR_DEFAULT_CONFIG%/*}
CONFIG=$ROOT$TORPOR_DEFAULT_CONFIG
RESUME=$ROOT/etc/initramfs-tools/conf.d/resume

make_loop swap 64 || { echo "FAIL: losetup"; exit 1; }
SWAP=$LOOP
mkswap -L "tpundo$$" "$SWAP" >/dev/null || { echo "FAIL: mkswap"; exit 1; }
uuid=$(blkid -p -o value -s UUID "$SWAP")

# make_root [GENERATOR]: a machine that torpor setup set up on the loop
# device (GENERATOR: usr/sbin/update-initramfs, or usr/bin/dracut); the
# generator notes its arguments and whether the configuration is there.
make_root() {
	local gen=${1:-usr/sbin/update-initramfs}
	rm -rf "$ROOT" "$GENLOG"
	mkdir -p "$ROOT/proc" "$ROOT/etc/default" "$ETC" \
		"$ROOT/etc/initramfs-tools/conf.d" "$ROOT/${gen%/*}"
	echo "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet" >"$ROOT/proc/cmdline"
	echo 'GRUB_CMDLINE_LINUX="quiet"' >"$ROOT/etc/default/grub"
	cat >"$ROOT/$gen" <<-EOF
	#!/bin/sh
	if [ -e "$CONFIG" ]; then c=yes; else c=no; fi
	echo "generator \$* config=\$c" >>"$GENLOG"
	EOF
	chmod 755 "$ROOT/$gen"
	{
		echo "# Written by 'torpor setup'; the previous file is kept beside it as .bak."
		echo "[torpor]"
		echo "filters = checksum"
		echo "writer = swap"
		echo "snapshot = sim:32M:5"
		echo
		echo "[swap]"
		echo "device = UUID=$uuid"
	} >"$CONFIG"
	chmod 644 "$CONFIG"
}

state() {
	(cd "$ROOT" && find . -printf '%p %m %u %l\n' | sort &&
		find . -type f -exec sha256sum {} + | sort)
}

undo() { TORPOR_TEST_SYSROOT=$ROOT "$TORPOR_BIN" --plugin-dir "$PLUGINS" setup --undo "$@"; }

expect_unchanged() {	# expect_unchanged WHAT
	[ "$(state)" = "$before" ] || fail "$1: the root changed"
	[ ! -e "$GENLOG" ] || fail "$1: the generator ran"
}

expect_file() {	# expect_file PATH TEXT WHAT: root's, 0644, holding TEXT
	[ "$(stat -c '%u %g %a %F' "$1")" = "0 0 644 regular file" ] ||
		fail "$3: $1 is $(stat -c '%u %g %a %F' "$1")"
	[ "$(cat "$1")" = "$2" ] || fail "$3: $1 holds '$(cat "$1")', not '$2'"
}

# The README's manual steps wrote RESUME=none; setup kept the
# administrator's own configuration as .bak.  A dry run says it all and
# changes nothing.
make_root
old=$'[torpor]\nsnapshot = sim:32M:5\nthreads = 2'
printf '%s\n' "$old" >"$CONFIG.bak"
printf '# the resume device\nRESUME=none\n' >"$RESUME"
before=$(state)
t_run undo --dry-run
expect_rc 0 "dry run"
expect_out "would put back $ETC/torpor.conf.bak as $CONFIG: the configuration from before setup: torpor stays set up" "dry run: the .bak"
expect_out "would replace 'RESUME=none' in $RESUME with 'RESUME=UUID=$uuid'" "dry run: RESUME="
expect_out "would rebuild the initramfs: $ROOT/usr/sbin/update-initramfs -u -k $RELEASE" "dry run: the generator"
expect_out "finds UUID=$uuid through initramfs-tools \\(RESUME=\\): no resume= word is needed" "dry run: the words"
expect_out 'dry run: nothing was changed' "dry run"
expect_unchanged "dry run"

# Without --yes and with no terminal: nothing is done.
t_run undo </dev/null
expect_rc 1 "no --yes"
expect_err 'pass --yes' "no --yes"
expect_unchanged "no --yes"

t_run undo --yes
expect_rc 0 "from .bak"
expect_file "$CONFIG" "$old" "from .bak: the configuration"
[ ! -e "$CONFIG.bak" ] || fail "from .bak: the .bak is still there"
expect_file "$RESUME" $'# the resume device\nRESUME=UUID='"$uuid" "from .bak: RESUME="
grep -qx "generator -u -k $RELEASE config=yes" "$GENLOG" ||
	fail "from .bak: the generator did not run with -u -k $RELEASE ($(cat "$GENLOG" 2>/dev/null))"
expect_out "put back $CONFIG from its .bak" "from .bak: said"
expect_out "goes through torpor while its systemd drop-ins are installed: remove the package" "from .bak: what is left"
expect_out '^setup: undone$' "from .bak"
ls -A "$ROOT/etc/initramfs-tools/conf.d" | grep -q '^\.' && fail "from .bak: a temporary file was left"

# A .bak that an earlier setup wrote: put back, and said to leave torpor
# set up.  RESUME=none alone, and no swap area named: the file goes, so
# that initramfs-tools finds the swap itself.
make_root
cp "$CONFIG" "$CONFIG.bak"
printf '[torpor]\nsnapshot = sim:32M:5\n' >"$CONFIG"
echo 'RESUME="none"' >"$RESUME"
t_run undo --yes
expect_rc 0 "setup's .bak"
expect_out "itself written by an earlier torpor setup: torpor stays set up \\(run --undo again to remove it\\)" "setup's .bak"
expect_out "remove $RESUME \\(it says only 'RESUME=\"none\"'\\)" "setup's .bak: RESUME="
[ ! -e "$RESUME" ] || fail "setup's .bak: $RESUME is still there"
head -n 1 "$CONFIG" | grep -q "^# Written by 'torpor setup'" || fail "setup's .bak: not put back"

# dracut, and no configuration before setup: the configuration goes, the
# generator runs without it, and the boot loader needs resume= for
# dracut's own resume.  Again: nothing is set up, nothing to do.
make_root usr/bin/dracut
rmdir "$ROOT/etc/initramfs-tools/conf.d"
t_run undo --yes
expect_rc 0 "no .bak"
[ ! -e "$CONFIG" ] || fail "no .bak: the configuration is still there"
grep -qx "generator -f --kver $RELEASE config=no" "$GENLOG" ||
	fail "no .bak: the generator did not run without the configuration ($(cat "$GENLOG" 2>/dev/null))"
expect_out "remove $CONFIG \\(setup found none to keep\\)" "no .bak: said"
expect_out "GRUB_CMDLINE_LINUX in /etc/default/grub .* has no resume= word: add 'resume=UUID=$uuid' for the kernel's own resume" "no .bak: grub"
expect_out "running kernel's command line has no resume= word: add 'resume=UUID=$uuid'" "no .bak: /proc/cmdline"
t_run undo --yes
expect_rc 0 "again"
expect_out "no $CONFIG: torpor is not set up" "again"

# The same words already there: kept.
make_root usr/bin/dracut
echo "GRUB_CMDLINE_LINUX_DEFAULT=\"resume=UUID=$uuid\"" >>"$ROOT/etc/default/grub"
t_run undo --dry-run
expect_out "GRUB_CMDLINE_LINUX .* has 'resume=UUID=$uuid': keep it" "dracut, words there"

# --keep-config (the package's prerm): RESUME= given back, the
# configuration and the initramfs left to the removal and the trigger.
make_root
cp "$CONFIG" "$CONFIG.bak"
printf 'RESUME=none\nRESUME_OFFSET=0\n' >"$RESUME"
t_run undo --yes --keep-config
expect_rc 0 "keep-config"
[ -e "$CONFIG" ] && [ -e "$CONFIG.bak" ] || fail "keep-config: the configuration changed"
[ ! -e "$GENLOG" ] || fail "keep-config: the generator ran"
expect_file "$RESUME" $'RESUME=UUID='"$uuid"$'\nRESUME_OFFSET=0' "keep-config: RESUME="
expect_out "is kept \\(--keep-config\\)" "keep-config"
expect_out "not rebuilt here: removing the package" "keep-config"
! grep -q 'drop-ins' "$OUT" || fail "keep-config: the drop-ins named, which the removal takes"

# Another RESUME= is the administrator's: left as it is.
make_root
echo "RESUME=/dev/sdb2" >"$RESUME"
t_run undo --yes
expect_rc 0 "other RESUME="
expect_file "$RESUME" "RESUME=/dev/sdb2" "other RESUME="
expect_out "$RESUME is left as it is" "other RESUME="

# Files that are not root's alone: refused before anything changes.
refused() {	# refused WHAT REGEX
	before=$(state)
	t_run undo --yes
	expect_rc 1 "$1"
	expect_err "$2" "$1"
	expect_unchanged "$1"
}
make_root
echo "[torpor]" >"$WORK/elsewhere.conf"
ln -s "$WORK/elsewhere.conf" "$CONFIG.bak"
refused "a .bak that is a link" "refusing to touch $ETC/torpor.conf.bak: it is not a regular file"
[ "$(cat "$WORK/elsewhere.conf")" = "[torpor]" ] || fail "a .bak that is a link: its target changed"
make_root
cp "$CONFIG" "$CONFIG.bak"
chown 65534 "$CONFIG.bak"
refused "a .bak of another user" "torpor.conf.bak: it belongs to user 65534, not root"
make_root
chmod 777 "$ETC"
refused "a directory anyone may write" "$ETC is not root's alone \\(owner 0, mode 777\\): refused"
make_root
mv "$ETC" "$WORK/etc-torpor" && ln -s "$WORK/etc-torpor" "$ETC"
refused "a directory that is a link" "cannot open the directory $ETC \\(a symbolic link is refused\\)"
rm -rf "$WORK/etc-torpor"
make_root
echo "RESUME=none" >"$WORK/resume"
ln -s "$WORK/resume" "$RESUME"
refused "RESUME= through a link" "refusing to touch $ROOT/etc/initramfs-tools/conf.d/resume: it is not a regular file"
[ "$(cat "$WORK/resume")" = "RESUME=none" ] || fail "RESUME= through a link: its target changed"
make_root
echo "RESUME=none" >"$RESUME"
chown 65534 "$ROOT/etc/initramfs-tools/conf.d"
refused "conf.d of another user" "conf.d is not root's alone \\(owner 65534"
make_root
head -c 8192 /dev/zero | tr '\0' '#' >"$RESUME"
echo "RESUME=none" >>"$RESUME"
refused "a RESUME= file too long" "cannot read $RESUME"

# Words that go with --undo only.
TORPOR_TEST_SYSROOT=$ROOT t_run "$TORPOR_BIN" setup --keep-config
expect_rc 1 "--keep-config alone"
expect_err 'goes with --undo' "--keep-config alone"
t_run undo --size 1G
expect_rc 1 "--undo --size"
expect_err '--size is for setup' "--undo --size"
finish
