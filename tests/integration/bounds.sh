#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Inputs that can be large are bounded before the memory is taken, and bad
# configuration values are told with FILE:LINE by the core: one case per
# run, each checking the exit status and a message naming what and where.
# Where memory is the point, the program runs under `ulimit -v` (not in a
# sanitizer build, whose shadow memory needs terabytes of address space):
# before, each of these needed gigabytes or never ended.
# Usage: bounds.sh CASE
. "$(dirname "$0")/lib.sh"
case_name="$1"

# limited CMD...: run with at most 256 MiB of address space.
limited() {
	if ldd "$TORPOR" 2>/dev/null | grep -q 'libasan'; then
		"$@"
	else
		(ulimit -v 262144 && "$@")
	fi
}

# line_of REGEX: the line number of the configuration matching REGEX.
line_of() { grep -n -E -- "$1" "$CONF" | head -n 1 | cut -d: -f1; }

case "$case_name" in
config-dev-zero)
	# Grew without bound, then gave the defaults and exit 0.
	t_run cfg limited "$TORPOR" --config /dev/zero config
	expect_rc 1 "--config /dev/zero"
	expect_err "^torpor: /dev/zero: not a regular file" "--config /dev/zero: message"
	grep -q '^\[torpor\]' "$OUT" && fail "--config /dev/zero printed a configuration"
	;;
config-huge)
	# 128 MiB: refused by its size, never read.
	write_config "sim:1M" ""
	truncate -s 128M "$CONF"
	t_run cfg limited "$TORPOR" --config "$CONF" config
	expect_rc 1 "a 128 MiB configuration"
	expect_err "$CONF: 134217728 bytes, larger than a configuration may be \(1048576 bytes\)" \
		"a 128 MiB configuration: message"
	;;
config-long-line)
	# A line of almost 1 MiB: refused at its 4097th byte.
	write_config "sim:1M" ""
	{ printf 'plugin_dir = /'; head -c 1000000 /dev/zero | tr '\0' a; echo; } >>"$CONF"
	t_run cfg limited "$TORPOR" --config "$CONF" config
	expect_rc 1 "a 1 MB line"
	expect_err "$CONF:$(line_of '^plugin_dir'): \[raw\]: line too long \(more than 4096 bytes\)" \
		"a 1 MB line: message"
	;;
plugin-value-zlib|plugin-value-lz4|plugin-value-checksum)
	# Told by the core with FILE:LINE before the plugin's load() runs.
	if [ "$case_name" = plugin-value-zlib ]; then
		plugin=zlib key=level value=0 own="not a deflate level"
	elif [ "$case_name" = plugin-value-lz4 ]; then
		plugin=lz4 key=acceleration value=65 own="not a number from 1"
	else
		plugin=checksum key=algorithm value=md5 own="no valid value"
	fi
	[ -e "$TORPOR_PLUGINDIR/$plugin.so" ] || { echo "SKIP: no $plugin"; exit 77; }
	write_config "sim:1M" "$plugin"
	printf '\n[%s]\n%s = %s\n' "$plugin" "$key" "$value" >>"$CONF"
	line=$(line_of "^$key = ")
	for cmd in "hibernate --direct" verify config; do
		t_run run torpor $cmd
		expect_rc 1 "[$plugin] $key = $value: $cmd"
		expect_err "^torpor: $CONF:$line: \[$plugin\] key '$key': .*$value" \
			"[$plugin] $key = $value: $cmd: FILE:LINE"
		grep -q "$own" "$ERR" && fail "[$plugin] $key = $value: $cmd: the plugin's load() ran"
	done
	t_run res torpor_resume
	expect_rc 1 "[$plugin] $key = $value: torpor-resume"
	expect_err "$CONF:$line: \[$plugin\] key '$key'" "[$plugin]: torpor-resume: FILE:LINE"
	;;
empty-section)
	write_config "sim:1M" "" "" "[nosuch]"
	line=$(line_of '^\[nosuch\]')
	t_run hib torpor hibernate --direct
	expect_rc 1 "an empty unknown section"
	expect_err "^torpor: $CONF:$line: \[nosuch\]: no plugin named 'nosuch' is loaded" \
		"an empty unknown section: message"
	;;
passphrase-dev-zero)
	# Never returned.
	t_run kg limited "$TORPOR" keygen --passphrase-file /dev/zero --output "$WORK/keys"
	expect_rc 1 "--passphrase-file /dev/zero"
	expect_err "passphrase file /dev/zero: not a regular file or a pipe" \
		"--passphrase-file /dev/zero: message"
	# The same endless zeros through a pipe: refused at the buffer's end.
	t_run kg limited "$TORPOR" keygen --passphrase-file <(cat /dev/zero) --output "$WORK/keys"
	expect_rc 1 "--passphrase-file from an endless pipe"
	expect_err "passphrase file /dev/fd/[0-9]+: the passphrase is longer than" \
		"--passphrase-file from an endless pipe: message"
	[ -e "$WORK/keys/crypt.key" ] && fail "keygen wrote a key anyway"
	;;
passphrase-readable)
	printf 'a passphrase\n' >"$WORK/pass"
	for mode in 644 640 604; do
		chmod "$mode" "$WORK/pass"
		t_run kg "$TORPOR" keygen --passphrase-file "$WORK/pass" --output "$WORK/keys" \
			--kdf-memory 64 --kdf-passes 1
		expect_rc 1 "a passphrase file of mode $mode"
		expect_err "passphrase file $WORK/pass: others may read or change it \(mode 0$mode\).*chmod 600" \
			"a passphrase file of mode $mode: message"
	done
	[ -e "$WORK/keys/crypt.key" ] && fail "keygen wrote a key from a readable passphrase file"
	chmod 600 "$WORK/pass"
	t_run kg "$TORPOR" keygen --passphrase-file "$WORK/pass" --output "$WORK/keys" \
		--kdf-memory 64 --kdf-passes 1
	expect_rc 0 "a passphrase file of mode 600"
	;;
chain-writer-as-filter|chain-filter-as-writer|chain-missing-filter|chain-missing-writer)
	# A name in filters = or writer = that does not fit is told at that
	# line, as a key error is; a missing plugin with the directory that
	# was searched.  Writer errors stop verify and torpor-resume too.
	case "$case_name" in
	chain-writer-as-filter)
		write_config "sim:1M" "raw"
		key=filters reason="'raw' is a writer, not a filter" ;;
	chain-filter-as-writer)
		[ -e "$TORPOR_PLUGINDIR/lzo.so" ] || { echo "SKIP: no lzo"; exit 77; }
		write_config "sim:1M" ""
		sed -i 's/^writer = raw$/writer = lzo/' "$CONF"
		key=writer reason="'lzo' is a filter, not a writer" ;;
	chain-missing-filter)
		write_config "sim:1M" "checksum, nosuch"
		key=filters reason="plugin 'nosuch' is not installed: the plugin directory $TORPOR_PLUGINDIR has no nosuch.so" ;;
	chain-missing-writer)
		write_config "sim:1M" ""
		sed -i 's/^writer = raw$/writer = nosuch/' "$CONF"
		key=writer reason="plugin 'nosuch' is not installed: the plugin directory $TORPOR_PLUGINDIR has no nosuch.so" ;;
	esac
	where="$CONF:$(line_of "^$key = "): [torpor] key '$key'"
	# Given --config (lib.sh's torpor) it runs directly: the error
	# stands alone, and -v says why torpord was not asked.
	t_run hib torpor hibernate
	expect_rc 1 "$case_name: hibernate"
	[ "$(cat "$ERR")" = "torpor: $where: $reason" ] ||
		fail "$case_name: hibernate: stderr is not just the error"
	t_run hib torpor -v hibernate
	expect_rc 1 "$case_name: hibernate -v"
	expect_err_line "torpor: running directly: --config, --plugin-dir and --passphrase-file are for this command, not torpord" \
		"$case_name: hibernate -v"
	expect_err_line "torpor: $where: $reason" "$case_name: hibernate -v"
	if [ "$key" = writer ]; then
		t_run ver torpor verify
		expect_rc 1 "$case_name: verify"
		[ "$(cat "$ERR")" = "torpor: $where: $reason" ] ||
			fail "$case_name: verify: stderr is not just the error"
		t_run res torpor_resume
		expect_rc 1 "$case_name: torpor-resume"
		[ "$(cat "$ERR")" = "torpor-resume: $where: $reason" ] ||
			fail "$case_name: torpor-resume: stderr is not just the error"
	fi
	;;
threads)
	# 256 threads of 1024-page chunks took 6.5 GiB: now the two that
	# fit, said so, and a working image.
	write_config "sim:$((2048 * 4096)):9" "checksum" "threads = 256" "chunk_pages = 1024"
	t_run hib limited "$TORPOR" --config "$CONF" --plugin-dir "$TORPOR_PLUGINDIR" hibernate --direct
	expect_rc 0 "threads = 256, chunk_pages = 1024: hibernate"
	expect_err "worker threads: 2 instead of 256.* the pool stays under 64 MiB" \
		"threads = 256: the notice"
	t_run res limited "$TORPOR_RESUME" --config "$CONF" --plugin-dir "$TORPOR_PLUGINDIR" \
		--cmdline /dev/null
	expect_rc 0 "threads = 256, chunk_pages = 1024: torpor-resume"
	expect_out "2048 pages restored" "threads = 256: every page restored"
	;;
*)
	echo "unknown case $case_name"; exit 1 ;;
esac
finish
