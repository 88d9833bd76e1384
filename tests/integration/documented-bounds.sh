#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What the manual promises, the program does: each case reads one range
# that a manual page states (the pages meson installs, unchanged, from
# $TORPOR_MANDIR), then checks that the program accepts the documented
# maximum (and minimum) and refuses the next value, with the message it
# gives word for word.  A page that no longer states the range fails the
# case: rewording it means looking at this test again.
# Usage: documented-bounds.sh CASE
. "$(dirname "$0")/lib.sh"
case_name="$1"

# page_text PAGE: the page's text on one line, without the roff: macro
# names, font escapes, quotes and comments gone, \- and \(aq as - and '.
# Line breaks in the source are blanks, so a phrase may span them.
page_text() {
	sed -E -e '/^\.\\"/d' -e 's/^\.[A-Za-z]+[[:space:]]?//' \
		-e 's/\\f[BIRP]//g' -e 's/\\-/-/g' -e "s/\\\\\(aq/'/g" \
		-e 's/\\\(bu//g' -e 's/\\&//g' -e 's/"//g' \
		"$TORPOR_MANDIR/$1" | tr '\n' ' ' | tr -s ' '
}

# stated PAGE ERE: the numbers the ERE's groups catch in PAGE, in $lo and
# $hi (the first two groups); a page that does not say it ends the case.
stated() {
	local text
	text=$(page_text "$1")
	if ! [[ $text =~ $2 ]]; then
		fail "$1 no longer states /$2/"
		finish
	fi
	lo=${BASH_REMATCH[1]}
	hi=${BASH_REMATCH[2]:-}
}

# same WHAT A B: two places state the same figure.
same() {
	[ "$2" = "$3" ] || fail "$1: $2 here, $3 there"
}

# expect_only TEXT WHAT: stderr is TEXT and nothing else.
expect_only() {
	[ "$(cat "$ERR")" = "$1" ] || fail "$2: stderr is not just '$1'"
}

need_plugin() {
	[ -e "$TORPOR_PLUGINDIR/$1.so" ] || { echo "SKIP: no $1"; exit 77; }
}

line_of() { grep -n -E -- "$1" "$CONF" | head -n 1 | cut -d: -f1; }

# [torpor] KEY = VALUE through `torpor config`: accepted, or refused with
# the core's FILE:LINE message.
core_accepts() {	# core_accepts KEY VALUE
	write_config "sim:1M" "" "$1 = $2"
	t_run cfg torpor config
	expect_rc 0 "$1 = $2"
}
core_refuses() {	# core_refuses KEY VALUE REASON
	write_config "sim:1M" "" "$1 = $2"
	t_run cfg torpor config
	expect_rc 1 "$1 = $2"
	expect_err_line "torpor: $CONF:$(line_of "^$1 = "): [torpor] key '$1': $3" \
		"$1 = $2"
}

# [PLUGIN] KEY = VALUE: checked by the core before the plugin runs.
plugin_accepts() {	# plugin_accepts PLUGIN KEY VALUE
	write_config "sim:1M" ""
	printf '\n[%s]\n%s = %s\n' "$1" "$2" "$3" >>"$CONF"
	t_run cfg torpor config
	expect_rc 0 "[$1] $2 = $3"
}
plugin_refuses() {	# plugin_refuses PLUGIN KEY VALUE REASON
	write_config "sim:1M" ""
	printf '\n[%s]\n%s = %s\n' "$1" "$2" "$3" >>"$CONF"
	t_run cfg torpor config
	expect_rc 1 "[$1] $2 = $3"
	expect_err_line "torpor: $CONF:$(line_of "^$2 = "): [$1] key '$2': $4" \
		"[$1] $2 = $3"
}

# keygen judges all its arguments before it looks for the keys it would
# replace, and refuses to replace one before it asks for a passphrase or
# derives anything: with a crypt.key already there, that refusal alone
# says every argument was accepted, without Argon2id taking a GiB.
KEYS=$WORK/keys
keygen_accepts() {	# keygen_accepts ARGS...
	mkdir -p "$KEYS" && : >"$KEYS/crypt.key"
	t_run kg "$TORPOR" keygen --output "$KEYS" "$@"
	expect_rc 1 "keygen $*"
	expect_only "torpor: keygen: $KEYS/crypt.key already exists; use --force to replace it (images sealed for the old key can then no longer be resumed)" \
		"keygen $*: accepted"
}
keygen_refuses() {	# keygen_refuses REASON ARGS...
	local reason=$1; shift
	mkdir -p "$KEYS" && : >"$KEYS/crypt.key"
	t_run kg "$TORPOR" keygen --output "$KEYS" "$@"
	expect_rc 1 "keygen $*"
	expect_only "torpor: keygen: $reason" "keygen $*: refused"
}

# keygen_help_states TEXT: --help says the same.
keygen_help_states() {
	t_run help "$TORPOR" keygen --help
	grep -Fq -- "$1" "$OUT" || fail "keygen --help does not say '$1'"
}

# crypt_md_states ERE: doc/crypt.md says it too (one line of it).
crypt_md_states() {
	grep -Eq -- "$1" "$TORPOR_DOCDIR/crypt.md" ||
		fail "doc/crypt.md does not say /$1/"
}

case "$case_name" in
kdf-memory)
	stated torpor.8 '--kdf-memory KIB Argon2id memory in KiB: ([0-9]+) to ([0-9]+)'
	keygen_help_states "Argon2id memory in KiB: $lo to $hi"
	crypt_md_states "≤ m ≤ 1 GiB \\($hi KiB\\)"
	keygen_accepts --kdf-memory "$hi"
	keygen_accepts --kdf-memory "$lo" --kdf-passes 1
	keygen_refuses "--kdf-memory wants a number from $lo to $hi, not '$((hi + 1))'" \
		--kdf-memory $((hi + 1))
	keygen_refuses "--kdf-memory wants a number from $lo to $hi, not '$((lo - 1))'" \
		--kdf-memory $((lo - 1))
	# At least this much per lane.
	most=$hi
	stated torpor.8 'Argon2id memory in KiB: [0-9]+ to [0-9]+ \([^)]*\), at least ([0-9]+) per lane'
	keygen_help_states "$lo per lane"
	keygen_accepts --kdf-parallelism 16 --kdf-memory $((16 * lo))
	keygen_refuses "Argon2id memory $((16 * lo - 1)) KiB is out of range $((16 * lo))..$most KiB" \
		--kdf-parallelism 16 --kdf-memory $((16 * lo - 1))
	;;
kdf-passes)
	stated torpor.8 '--kdf-passes N Argon2id passes: ([0-9]+) to ([0-9]+)'
	keygen_help_states "Argon2id passes: $lo to $hi"
	crypt_md_states "$lo ≤ t ≤ $hi,"
	keygen_accepts --kdf-passes "$hi"
	keygen_accepts --kdf-passes "$lo"
	keygen_refuses "--kdf-passes wants a number from $lo to $hi, not '$((hi + 1))'" \
		--kdf-passes $((hi + 1))
	keygen_refuses "--kdf-passes wants a number from $lo to $hi, not '$((lo - 1))'" \
		--kdf-passes $((lo - 1))
	;;
kdf-parallelism)
	stated torpor.8 '--kdf-parallelism N Argon2id lanes: ([0-9]+) to ([0-9]+)'
	keygen_help_states "Argon2id lanes: $lo to $hi"
	crypt_md_states "$lo ≤ p ≤ $hi,"
	keygen_accepts --kdf-parallelism "$hi"
	keygen_accepts --kdf-parallelism "$lo"
	keygen_refuses "--kdf-parallelism wants a number from $lo to $hi, not '$((hi + 1))'" \
		--kdf-parallelism $((hi + 1))
	keygen_refuses "--kdf-parallelism wants a number from $lo to $hi, not '$((lo - 1))'" \
		--kdf-parallelism $((lo - 1))
	;;
kdf-work)
	stated torpor.8 'The passes times the memory may be at most ([0-9]+) KiB'
	keygen_help_states "The passes times the memory may be at most $lo KiB."
	crypt_md_states "t × m ≤ 4 GiB \\($lo KiB\\)"
	keygen_accepts --kdf-passes 8 --kdf-memory $((lo / 8))
	keygen_refuses "Argon2id passes x memory (8 x $((lo / 8 + 1)) KiB) is more than $lo KiB" \
		--kdf-passes 8 --kdf-memory $((lo / 8 + 1))
	;;
threads)
	stated torpor.conf.5 'Worker threads that run the filters, ([0-9]+) to ([0-9]+)\.'
	core_accepts threads "$hi"
	core_accepts threads "$lo"
	core_refuses threads $((hi + 1)) "$((hi + 1)) is out of range $lo..$hi"
	;;
chunk-pages)
	stated torpor.conf.5 'Pages per chunk, the unit the filters work on: ([0-9]+) to ([0-9]+),'
	core_accepts chunk_pages "$hi"
	core_accepts chunk_pages "$lo"
	core_refuses chunk_pages $((hi + 1)) "$((hi + 1)) is out of range $lo..$hi"
	core_refuses chunk_pages $((lo - 1)) "$((lo - 1)) is out of range $lo..$hi"
	;;
hibernate-delay)
	stated torpor.conf.5 'before the RTC wakes it to hibernate: ([0-9]+) to ([0-9]+) \(a year\)'
	core_accepts hibernate_delay "$hi"
	core_accepts hibernate_delay "$lo"
	core_refuses hibernate_delay $((hi + 1)) "$((hi + 1)) is out of range $lo..$hi"
	# --delay, "up to a year" in torpor(8): the same figure.  The
	# kernel's files are faked: a regular /sys/power/state "suspends"
	# and returns at once, woken before the alarm.
	export TORPOR_TEST_SYSROOT=$WORK/sysroot
	mkdir -p "$TORPOR_TEST_SYSROOT/sys/power" \
		"$TORPOR_TEST_SYSROOT/sys/class/rtc/rtc0"
	echo "freeze mem disk" >"$TORPOR_TEST_SYSROOT/sys/power/state"
	echo "s2idle [deep]" >"$TORPOR_TEST_SYSROOT/sys/power/mem_sleep"
	: >"$TORPOR_TEST_SYSROOT/sys/class/rtc/rtc0/wakealarm"
	write_config "sim:1M" ""
	t_run s2h torpor suspend-then-hibernate --direct --delay "$hi"
	expect_rc 0 "--delay $hi"
	expect_err "the RTC wakes the machine in $hi s" "--delay $hi: the alarm"
	t_run s2h torpor suspend-then-hibernate --direct --delay $((hi + 1))
	expect_rc 1 "--delay $((hi + 1))"
	expect_only "torpor: --delay '$((hi + 1))': expected seconds (or a time span such as 90min), at most $hi" \
		"--delay $((hi + 1))"
	;;
filter-name)
	stated torpor.conf.5 'Plugin names \(lower-case letters, digits and - ?, ([0-9]+) to ([0-9]+) characters\)'
	name=$(printf "%${hi}s" "" | tr ' ' a)
	# `torpor config` requires no filter: the name is only judged.
	write_config "sim:1M" "$name"
	t_run cfg torpor config
	expect_rc 0 "a filter name of $hi characters"
	write_config "sim:1M" "${name}a"
	t_run cfg torpor config
	expect_rc 1 "a filter name of $((hi + 1)) characters"
	expect_only "torpor: $CONF:$(line_of '^filters = '): [torpor] key 'filters': '${name}a' is not a plugin name ([a-z0-9-], $lo to $hi characters)" \
		"a filter name of $((hi + 1)) characters"
	;;
zlib-level)
	need_plugin zlib
	stated torpor-plugins.7 'level \(integer ([0-9]+) to ([0-9]+); default'
	page_lo=$lo page_hi=$hi
	stated torpor.conf.5 '\[zlib\] level = ([0-9]+)\.\.([0-9]+)'
	same "zlib level: torpor-plugins(7) and torpor.conf(5)" "$page_lo..$page_hi" "$lo..$hi"
	plugin_accepts zlib level "$hi"
	plugin_accepts zlib level "$lo"
	plugin_refuses zlib level $((hi + 1)) "$((hi + 1)) is out of range $lo..$hi (integer)"
	plugin_refuses zlib level $((lo - 1)) "$((lo - 1)) is out of range $lo..$hi (integer)"
	;;
lz4-acceleration)
	need_plugin lz4
	stated torpor-plugins.7 'acceleration \(integer ([0-9]+) to ([0-9]+); default'
	page_lo=$lo page_hi=$hi
	stated torpor.conf.5 '\[lz4\] acceleration = ([0-9]+)\.\.([0-9]+)'
	same "lz4 acceleration: torpor-plugins(7) and torpor.conf(5)" "$page_lo..$page_hi" "$lo..$hi"
	plugin_accepts lz4 acceleration "$hi"
	plugin_accepts lz4 acceleration "$lo"
	plugin_refuses lz4 acceleration $((hi + 1)) "$((hi + 1)) is out of range $lo..$hi (integer)"
	plugin_refuses lz4 acceleration $((lo - 1)) "$((lo - 1)) is out of range $lo..$hi (integer)"
	;;
sleep-hooks-timeout)
	need_plugin sleep-hooks
	stated torpor-plugins.7 'timeout = SECONDS ([0-9]+) to ([0-9]+), default'
	plugin_accepts sleep-hooks timeout "$hi"
	plugin_accepts sleep-hooks timeout "$lo"
	plugin_refuses sleep-hooks timeout $((hi + 1)) "$((hi + 1)) is out of range $lo..$hi (integer)"
	plugin_refuses sleep-hooks timeout $((lo - 1)) "$((lo - 1)) is out of range $lo..$hi (integer)"
	;;
file-size)
	need_plugin file
	stated torpor-plugins.7 'size \(size, at least ([0-9]+)M; no default\)'
	page_lo=$lo
	stated torpor.8 'The size is bytes with an optional K, M, G or T suffix, at least ([0-9]+)M,'
	same "the least image file: torpor-plugins(7) and torpor(8)" "$page_lo" "$lo"
	least=$((lo * 1048576))
	plugin_accepts file size "${lo}M"
	plugin_refuses file size $((least - 1)) "$((least - 1)) is out of range $least..9223372036854775807 bytes (size)"
	# file-setup makes the file; as root on a file system it takes,
	# the least size is made, elsewhere it is refused for another
	# reason than its size.
	write_config "sim:1M" ""
	t_run fs "$TORPOR" file-setup --config "$CONF" --path "$WORK/fs/image" --size "${lo}M"
	if [ "$rc" -eq 0 ]; then
		expect_out "$WORK/fs/image: $lo MiB allocated and written" "file-setup --size ${lo}M"
	elif grep -q 'is not a size' "$ERR"; then
		fail "file-setup refused --size ${lo}M for its size"
	fi
	t_run fs "$TORPOR" file-setup --config "$CONF" --path "$WORK/fs/small" --size $((least - 1))
	expect_rc 1 "file-setup --size $((least - 1))"
	expect_only "torpor: file-setup: size '$((least - 1))' is not a size of at least ${lo}M" \
		"file-setup --size $((least - 1))"
	[ -e "$WORK/fs/small" ] && fail "file-setup made a file smaller than ${lo}M"
	;;
wait-device)
	stated torpor.8 '--wait-device waits up to SECONDS \(([0-9]+) to ([0-9]+);'
	page_lo=$lo page_hi=$hi
	stated torpor-resume.8 'for up to SECONDS \(([0-9]+) to ([0-9]+);'
	same "--wait-device: torpor(8) and torpor-resume(8)" "$page_lo..$page_hi" "$lo..$hi"
	# The device is there and holds no image: no wait at all.
	write_config "sim:1M" ""
	truncate -s 1M "$IMAGE"
	t_run inv torpor invalidate --stale --wait-device "$hi"
	expect_rc 0 "invalidate --stale --wait-device $hi"
	t_run inv torpor invalidate --stale --wait-device $((hi + 1))
	expect_rc 1 "invalidate --stale --wait-device $((hi + 1))"
	expect_only "torpor: --wait-device '$((hi + 1))': expected seconds, $lo to $hi" \
		"invalidate --wait-device $((hi + 1))"
	t_run res torpor_resume --wait-device "$hi"
	expect_rc 0 "torpor-resume --wait-device $hi"
	expect_out "no image found" "torpor-resume --wait-device $hi"
	t_run res torpor_resume --wait-device $((hi + 1))
	expect_rc 1 "torpor-resume --wait-device $((hi + 1))"
	expect_only "torpor-resume: --wait-device '$((hi + 1))': expected seconds, $lo to $hi" \
		"torpor-resume --wait-device $((hi + 1))"
	;;
passphrase-file)
	stated torpor.8 'a regular file of at most ([0-9]+) KiB owned by the user running torpor'
	page_lo=$lo
	stated torpor-resume.8 'must be a regular file of at most ([0-9]+) KiB owned by root'
	same "the passphrase file: torpor(8) and torpor-resume(8)" "$page_lo" "$lo"
	most=$((lo * 1024))
	# The passphrase is the first line; the rest is the file's size.
	for size in "$most" $((most + 1)); do
		(umask 077 && { printf 'a passphrase\n'; head -c $((size - 13)) /dev/zero | tr '\0' x; } >"$WORK/pass$size")
	done
	t_run kg "$TORPOR" keygen --passphrase-file "$WORK/pass$most" --output "$WORK/k1" \
		--kdf-memory 8 --kdf-passes 1
	expect_rc 0 "a passphrase file of $most bytes"
	t_run kg "$TORPOR" keygen --passphrase-file "$WORK/pass$((most + 1))" --output "$WORK/k2" \
		--kdf-memory 8 --kdf-passes 1
	expect_rc 1 "a passphrase file of $((most + 1)) bytes"
	expect_err_line "torpor: passphrase file $WORK/pass$((most + 1)): $((most + 1)) bytes, more than a passphrase file may hold ($most): refusing it" \
		"a passphrase file of $((most + 1)) bytes"
	[ -e "$WORK/k2/crypt.key" ] && fail "keygen wrote a key from a file too large"
	;;
config-size)
	stated torpor.conf.5 'The file must be a regular file of at most 1 MiB \(([0-9]+) bytes\)'
	# A configuration of exactly that many bytes, comments filling it
	# (each line within the length a line may have), then one more.
	for size in "$lo" $((lo + 1)); do
		write_config "sim:1M" ""
		have=$(stat -c %s "$CONF")
		n=$(( (size - have) / 101 ))
		for ((i = 0; i < n; i++)); do
			printf '#%099d\n' 0
		done >>"$CONF"
		left=$((size - have - n * 101))
		if [ "$left" -gt 1 ]; then
			{ printf '#%*s' $((left - 2)) '' | tr ' ' x; echo; } >>"$CONF"
		elif [ "$left" -eq 1 ]; then
			echo >>"$CONF"
		fi
		[ "$(stat -c %s "$CONF")" -eq "$size" ] || fail "the test wrote $(stat -c %s "$CONF") bytes, not $size"
		t_run cfg torpor config
		if [ "$size" -eq "$lo" ]; then
			expect_rc 0 "a configuration of $size bytes"
		else
			expect_rc 1 "a configuration of $size bytes"
			expect_only "torpor: $CONF: $size bytes, larger than a configuration may be ($lo bytes): refusing to read it" \
				"a configuration of $size bytes"
		fi
	done
	;;
config-line)
	stated torpor.conf.5 'A line may be at most ([0-9]+) characters long once the blanks around it are removed, and at most ([0-9]+) bytes with them\.'
	# state_dir = /aaa...: a value that the parser takes at any length.
	value() { printf '/%*s' $(($1 - 13)) "" | tr ' ' a; }
	write_config "sim:1M" "" "state_dir = $(value "$lo")"
	t_run cfg torpor config
	expect_rc 0 "a line of $lo characters"
	write_config "sim:1M" "" "state_dir = $(value $((lo + 1)))"
	t_run cfg torpor config
	expect_rc 1 "a line of $((lo + 1)) characters"
	expect_only "torpor: $CONF:$(line_of '^state_dir'): [torpor]: line too long (at most $lo characters)" \
		"a line of $((lo + 1)) characters"
	# Blanks before it, up to the bytes a line may have.
	write_config "sim:1M" "" "$(printf '%*s' $((hi - lo)) '')state_dir = $(value "$lo")"
	t_run cfg torpor config
	expect_rc 0 "a line of $hi bytes"
	write_config "sim:1M" "" "$(printf '%*s' $((hi + 1 - lo)) '')state_dir = $(value "$lo")"
	t_run cfg torpor config
	expect_rc 1 "a line of $((hi + 1)) bytes"
	expect_only "torpor: $CONF:$(line_of '^ *state_dir'): [torpor]: line too long (more than $hi bytes)" \
		"a line of $((hi + 1)) bytes"
	;;
*)
	echo "unknown case $case_name"; exit 1 ;;
esac
finish
