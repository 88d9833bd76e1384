#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Before freezing, hibernate checks the initramfs the next boot loads
# ([torpor] initramfs = PATH turns the check on for the sim source): small
# initramfs images built here, an uncompressed early cpio in front of a
# gzip or zstd one, as the generators make them.  Something missing:
# refused with the fix; everything there: the cycle runs; --force: runs
# with warnings; initramfs = none: nothing checked.
. "$(dirname "$0")/lib.sh"

for t in cpio gzip zstd readelf; do
	command -v "$t" >/dev/null ||
		{ echo "FAIL: $t is not installed (scripts/install-deps test)"; exit 1; }
done

PLUGINS_IN=/usr/lib/torpor/plugins
TREE=$WORK/tree
EARLY=$WORK/early

# The configuration, as the hook would copy it.
base_config() {	# base_config INITRAMFS [EXTRA...]
	local initramfs=$1; shift
	write_config sim:8M checksum "plugin_dir = $PLUGINS_IN" \
		"initramfs = $initramfs" "$@"
}

needed_libs() {
	readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'
}

# A tree with what the hooks put in an initramfs for $CONF.
make_tree() {
	rm -rf "$TREE" "$EARLY"
	mkdir -p "$TREE/usr/sbin" "$TREE/$PLUGINS_IN" "$TREE${TORPOR_DEFAULT_CONFIG%/*}" \
		"$TREE/bin" "$EARLY/kernel/x86/microcode"
	echo busybox >"$TREE/bin/sh"
	echo program >"$TREE/usr/sbin/torpor-resume"
	for p in checksum raw; do echo "$p" >"$TREE/$PLUGINS_IN/$p.so"; done
	cp "$CONF" "$TREE$TORPOR_DEFAULT_CONFIG"
	# The libraries the plugins link, by name (the check looks for names).
	mkdir -p "$TREE/usr/lib/x86_64-linux-gnu"
	for p in "$TORPOR_PLUGINDIR"/*.so; do
		for l in $(needed_libs "$p"); do
			echo "$l" >"$TREE/usr/lib/x86_64-linux-gnu/$l"
		done
	done
	head -c 4096 /dev/zero >"$EARLY/kernel/x86/microcode/GenuineIntel.bin"
}

# pack OUT COMPRESSOR: the early archive uncompressed, then the tree.
pack() {
	(cd "$EARLY" && find . | cpio -o -H newc --quiet) >"$1"
	early_size=$(stat -c %s "$1")
	(cd "$TREE" && find . | cpio -o -H newc --quiet) | $2 >>"$1"
}

# Half of what follows the early archive is cut (cpio pads its output
# with zeros: a few bytes less would only cut the padding).
halve() {
	truncate -s $((early_size + ($(stat -c %s "$1") - early_size) / 2)) "$1"
}

INITRD=$WORK/boot/initrd.img-test
mkdir -p "$WORK/boot"

# One configuration path for the programs and the hooks, whatever the
# build's sysconfdir (a test build's is not /etc): the hooks copy it to
# the same path inside the initramfs, where torpor-resume and this check
# look for it.
expect_path() {	# expect_path WHAT FILE FIXED-STRING
	grep -qF -- "$3" "$2" || fail "$1: $(basename "$2") does not have '$3'"
}
hooks=$TORPOR_INITRAMFS_BUILD
for p in "$TORPOR" "$TORPOR_RESUME"; do
	"$p" --help >"$WORK/help" 2>&1
	expect_path "$(basename "$p") --help" "$WORK/help" "(default $TORPOR_DEFAULT_CONFIG)"
done
expect_path "initramfs-files" "$hooks/initramfs-files" "conf=\${1:-$TORPOR_DEFAULT_CONFIG}"
expect_path "initramfs-files" "$hooks/initramfs-files" 'echo "file $conf"'
expect_path "initramfs-tools hook" "$hooks/hook-torpor" "[ ! -f $TORPOR_DEFAULT_CONFIG ]"
expect_path "initramfs-tools hook" "$hooks/hook-torpor" 'file) copy_file torpor "$path" ;;'
expect_path "dracut module" "$hooks/module-setup.sh" "[[ -f $TORPOR_DEFAULT_CONFIG ]]"
expect_path "dracut module" "$hooks/module-setup.sh" 'file) inst_simple "$path" ;;'

expect_refused() {	# expect_refused WHAT REGEX
	t_run "$1" torpor hibernate --direct --test
	expect_rc 1 "$1"
	expect_err "$2" "$1"
	expect_err 'rebuild the initramfs \(update-initramfs -u\), or hibernate with --force' "$1"
	! grep -q 'hibernate (test):' "$OUT" || fail "$1: a cycle ran"
}

# Everything there, gzip and zstd: the cycle runs.
for z in "gzip -9" "zstd -q -19"; do
	base_config "$INITRD"
	make_tree
	pack "$INITRD" "$z"
	t_run "complete ($z)" torpor -v hibernate --direct --test
	expect_rc 0 "complete ($z)"
	expect_err "initramfs $INITRD holds what a resume needs" "complete ($z)"
	expect_out 'hibernate \(test\):' "complete ($z)"
done

# The early archive alone: nothing of torpor's.
base_config "$INITRD"
make_tree
(cd "$EARLY" && find . | cpio -o -H newc --quiet) >"$INITRD"
expect_refused "early archive only" 'it has no torpor-resume'

rm "$TREE/usr/sbin/torpor-resume"
pack "$INITRD" gzip
expect_refused "no torpor-resume" 'it has no torpor-resume'

# --force: the same initramfs, the cycle runs with a warning.
t_run "--force" torpor hibernate --direct --test --force
expect_rc 0 "--force"
expect_err 'it has no torpor-resume' "--force"
expect_err 'hibernating anyway \(--force\)' "--force"
expect_out 'hibernate \(test\):' "--force"

make_tree
rm "$TREE/$PLUGINS_IN/checksum.so"
pack "$INITRD" gzip
expect_refused "no checksum plugin" "it has no plugin 'checksum' \\($PLUGINS_IN/checksum.so\\)"

# A library a plugin links (the dracut module once missed them).
lib=$(needed_libs "$TORPOR_PLUGINDIR/checksum.so" | grep -v '^libc\.' | head -n 1)
if [ -n "$lib" ]; then
	make_tree
	rm "$TREE/usr/lib/x86_64-linux-gnu/$lib"
	pack "$INITRD" gzip
	expect_refused "no $lib" "it has no $lib, which plugin 'checksum' links"
else
	fail "checksum.so links no library but libc: the library case has nothing to take out"
fi

make_tree
rm "$TREE$TORPOR_DEFAULT_CONFIG"
pack "$INITRD" gzip
expect_refused "no torpor.conf" "it has no $TORPOR_DEFAULT_CONFIG"

# A copy naming another device: the image would be looked for elsewhere.
make_tree
sed -i "s|^device = .*|device = $WORK/other|" "$TREE$TORPOR_DEFAULT_CONFIG"
pack "$INITRD" gzip
expect_refused "another location" "its torpor.conf has \\[raw\\] device = $WORK/other, this system's $IMAGE"

make_tree
sed -i 's|^writer = .*|writer = swap|' "$TREE$TORPOR_DEFAULT_CONFIG"
pack "$INITRD" gzip
expect_refused "another writer" 'its torpor.conf names writer swap, this system.s raw'

# A later archive's copy replaces the earlier one, as when unpacked.
make_tree
pack "$INITRD" gzip
sed -i "s|^device = .*|device = $WORK/other|" "$TREE$TORPOR_DEFAULT_CONFIG"
(cd "$TREE" && find ".${TORPOR_DEFAULT_CONFIG%/*}" | cpio -o -H newc --quiet) | gzip >>"$INITRD"
expect_refused "stale copy in a later archive" "\\[raw\\] device = $WORK/other"

# Not an initramfs, a truncated one, none at all.
head -c 1000 /dev/urandom | sed 's/^/x/' >"$INITRD"
expect_refused "garbage" 'neither a cpio archive nor a compressed one'
make_tree
pack "$INITRD" cat
halve "$INITRD"
expect_refused "truncated" 'is not a whole cpio archive'
make_tree
pack "$INITRD" gzip
halve "$INITRD"
expect_refused "truncated gzip" 'has a gzip part that does not hold whole cpio archives'
rm -f "$INITRD"
expect_refused "missing" "initramfs $INITRD: it cannot be opened"

# dracut's name: its fix.
base_config "$WORK/boot/initramfs-test.img"
make_tree
rm "$TREE/usr/sbin/torpor-resume"
pack "$WORK/boot/initramfs-test.img" gzip
t_run "dracut's fix" torpor hibernate --direct --test
expect_rc 1 "dracut's fix"
expect_err 'rebuild the initramfs \(dracut -f\)' "dracut's fix"

# initramfs = none: not checked, even with nothing there.
base_config none
t_run "none" torpor hibernate --direct --test
expect_rc 0 "none"
expect_out 'hibernate \(test\):' "none"

# The crypt filter's key file: there, missing, stale.
if [ -f "$TORPOR_PLUGINDIR/crypt.so" ]; then
	key=$WORK/crypt.keyfile
	(umask 077 && head -c 32 /dev/urandom >"$key")
	crypt_config() {
		write_config sim:8M crypt "plugin_dir = $PLUGINS_IN" \
			"initramfs = $INITRD"
		printf '\n[crypt]\nmode = keyfile\nkey_file = %s\n' "$key" >>"$CONF"
	}
	crypt_config
	make_tree
	echo crypt >"$TREE/$PLUGINS_IN/crypt.so"
	mkdir -p "$TREE/$(dirname "$key")"
	cp "$key" "$TREE/$key"
	pack "$INITRD" gzip
	t_run "crypt key there" torpor hibernate --direct --test
	expect_rc 0 "crypt key there"
	(umask 077 && head -c 32 /dev/urandom >"$key")
	expect_refused "crypt key stale" "its copy of $key differs from this system's"
	rm "$TREE/$key"
	pack "$INITRD" gzip
	expect_refused "crypt key missing" "it has no $key \\(\\[crypt\\] key_file\\)"
fi
finish
