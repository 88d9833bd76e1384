#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Secrets stay secret, on the sim source with the raw writer on a file:
#   scan         keygen, hibernate, verify and resume (sealed and keyfile
#                modes) run under secret-scan.so, which looks for the
#                passphrase and the key file's bytes in every freed block
#                and, at exit, in the heap, the stacks and all anonymous
#                memory: none may be found.  A control run (sed reading
#                the passphrase file) must be caught, or the scan proves
#                nothing.
#   unprivileged a user who is not root cannot hibernate the machine:
#                `torpor hibernate` on /dev/snapshot stops at the device
#                (root only) with a message, before any hook or write.
#   plaintext    with crypt in the chain, no page of the memory image
#                reaches the disk in clear: text taken from the image
#                written without filters (where it must be present) is
#                absent from the images written with crypt.
# Usage: secrets.sh CASE   (SECRET_SCAN and the usual TORPOR* from meson)
# Exit 0 pass, 1 fail, 77 skip (crypt not built; scan: a sanitizer build,
# whose shadow memory cannot be scanned).
CASE=${1:?usage: secrets.sh CASE}
for f in "$TORPOR" "$TORPOR_RESUME" "$TORPOR_PLUGINDIR/crypt.so" \
	 "$TORPOR_PLUGINDIR/raw.so"; do
	[ -e "$f" ] || { echo "SKIP: $f is not built"; exit 77; }
done
. "$(dirname "$0")/../lib.sh"

KEYS="$WORK/keys"
PASS="$WORK/passphrase"
mkdir -m 0700 "$KEYS"
# Long and unlike anything else in memory.
printf 'secrets test passphrase %s\n' "$(head -c 12 /dev/urandom | od -A n -t x1 | tr -d ' \n')" >"$PASS"
chmod 600 "$PASS"

sealed_config() {
	write_config "$1" "$2" "" "[crypt]" "mode = sealed" \
		"public_key = $KEYS/crypt.pub" "private_key = $KEYS/crypt.key"
}
keyfile_config() {
	write_config "$1" "$2" "" "[crypt]" "mode = keyfile" \
		"key_file = $KEYS/crypt.keyfile"
}

# scanned WHAT CMD...: CMD (scan_env ...) must exit 0, the scan must have
# run and found nothing.
scanned() {
	local what=$1; shift
	"$@" >"$OUT" 2>"$ERR"
	rc=$?
	expect_rc 0 "$what"
	expect_err '^secret-scan: done: ' "$what: the scan ran"
	grep -q '^secret-scan: FOUND' "$ERR" && fail "$what: a secret was left in memory"
	grep -h '^secret-scan: done' "$ERR" | sed "s/^secret-scan: done/$what/"
}
# scan_env SECRET-FILES CMD...  (without meson's MALLOC_PERTURB_, which
# would overwrite freed heap blocks before the scan at exit sees them)
scan_env() {
	env -u MALLOC_PERTURB_ LD_PRELOAD="$SECRET_SCAN" TORPOR_SECRET_FILES="$1" "${@:2}"
}

case $CASE in
scan)
	[ -e "${SECRET_SCAN:-}" ] || { echo "FAIL: SECRET_SCAN is not built"; exit 1; }
	if ldd "$TORPOR" 2>/dev/null | grep -q 'libasan'; then
		echo "SKIP: a sanitizer build (its shadow memory cannot be scanned)"
		exit 77
	fi
	# The control: a program that leaves the passphrase in its heap.
	scan_env "$PASS" sed -n p "$PASS" >"$OUT" 2>"$ERR"
	rc=$?
	expect_rc 97 "control: sed keeps the passphrase in freed memory"
	expect_err '^secret-scan: FOUND secret 1' "control: the scan finds it"

	scanned "keygen (sealed)" scan_env "$PASS" \
		"$TORPOR" keygen --passphrase-file "$PASS" --output "$KEYS" \
		--kdf-memory 1024 --kdf-passes 1
	"$TORPOR" keygen --keyfile --output "$KEYS" >/dev/null || fail "keygen --keyfile"
	KEY="$KEYS/crypt.keyfile"

	rm -f "$IMAGE"; sealed_config sim:16M:3 "lzo crypt"
	scanned "hibernate (sealed)" scan_env "$PASS" \
		"$TORPOR" --config "$CONF" --plugin-dir "$TORPOR_PLUGINDIR" hibernate --direct
	scanned "verify (sealed)" scan_env "$PASS" \
		"$TORPOR" --config "$CONF" --plugin-dir "$TORPOR_PLUGINDIR" verify --passphrase-file "$PASS"
	expect_out '^verify: image is intact' "verify (sealed)"
	scanned "resume (sealed)" scan_env "$PASS" \
		"$TORPOR_RESUME" --config "$CONF" --plugin-dir "$TORPOR_PLUGINDIR" \
		--cmdline /dev/null --passphrase-file "$PASS"
	expect_out '^resume: [0-9]+ pages restored and verified' "resume (sealed)"

	rm -f "$IMAGE"; keyfile_config sim:16M:3 "lzo crypt"
	scanned "hibernate (keyfile)" scan_env "$KEY" \
		"$TORPOR" --config "$CONF" --plugin-dir "$TORPOR_PLUGINDIR" hibernate --direct
	scanned "resume (keyfile)" scan_env "$KEY" \
		"$TORPOR_RESUME" --config "$CONF" --plugin-dir "$TORPOR_PLUGINDIR" --cmdline /dev/null
	expect_out '^resume: [0-9]+ pages restored and verified' "resume (keyfile)"
	;;
unprivileged)
	[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to become another user"; exit 77; }
	command -v setpriv >/dev/null || { echo "SKIP: setpriv is missing"; exit 77; }
	as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
	# Only ever run torpor as that user, never as root here.
	[ "$(as_nobody id -u)" = 65534 ] || { echo "FAIL: setpriv did not drop to uid 65534"; exit 1; }
	chmod 0755 "$WORK"
	# The snapshot device's node as the kernel makes it (10:231, root
	# 0600), where this host may have none: the permission check is the
	# node's, whatever driver is behind it.
	snap=/dev/snapshot
	if [ ! -e "$snap" ]; then
		snap=$WORK/snapshot
		mknod -m 0600 "$snap" c 10 231 || fail "mknod"
	fi
	{
		echo "[torpor]"
		echo "snapshot = $snap"
		echo "filters ="
		echo "writer = raw"
		echo "[raw]"
		echo "device = $WORK/never-written"
	} >"$CONF"
	chmod 0644 "$CONF"
	t_run user as_nobody "$TORPOR" --config "$CONF" --plugin-dir "$TORPOR_PLUGINDIR" \
		hibernate --direct --test
	[ "$rc" -ne 0 ] || fail "an unprivileged user's hibernate exited 0"
	expect_err "cannot open $snap: .*needs root" "the refusal says why"
	[ -e "$WORK/never-written" ] && fail "the unprivileged hibernate created the image file"
	grep -q 'sleep-hooks: ran' "$ERR" && fail "the unprivileged hibernate ran the sleep hooks"
	echo "refused: $(grep -m1 'cannot open' "$ERR")"
	;;
plaintext)
	"$TORPOR" keygen --keyfile --output "$KEYS" >/dev/null || fail "keygen --keyfile"
	sim=sim:8M:11
	# The image without filters: its pages are on the disk as they are.
	rm -f "$IMAGE"; write_config "$sim" ""
	t_run plain torpor hibernate --direct
	expect_rc 0 "hibernate without filters"
	mv "$IMAGE" "$WORK/plain.img"
	# Markers: lines of text from the simulated memory, 48 bytes or more.
	grep -a -o -E '[[:alpha:] ,.]{48,}' "$WORK/plain.img" | sort -u | head -n 50 >"$WORK/markers"
	n=$(wc -l <"$WORK/markers")
	[ "$n" -ge 20 ] || fail "only $n text markers in the unfiltered image"
	for chain in "crypt" "checksum crypt"; do
		rm -f "$IMAGE"; keyfile_config "$sim" "$chain"
		t_run crypt torpor hibernate --direct
		expect_rc 0 "hibernate with filters = $chain"
		found=$(grep -a -c -F -f "$WORK/markers" "$IMAGE")
		[ "$found" = 0 ] || fail "filters = $chain: $found line(s) of the image's plaintext are on the disk"
		echo "filters = $chain: none of $n plaintext markers on the disk ($(wc -c <"$IMAGE") bytes)"
		# The image is real: it resumes.
		t_run res torpor_resume
		expect_rc 0 "resume with filters = $chain"
	done
	;;
*)
	echo "FAIL: unknown case $CASE"
	exit 1
	;;
esac
finish
