#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The exact words of the refusals a new user meets first: each names the
# object, the rule it broke and the command that puts it right.  One case
# per run (the argument); none needs root.
#   image-not-private       the raw writer's image file is mode 0644
#   passphrase-not-private  keygen's passphrase file is mode 0644
#   plugin-not-found        the configuration names a plugin not built
#   bench-plugin-not-found  torpor bench's default chain lacks a plugin
#   bench-relative-dir      torpor bench --plugin-dir with a relative path
# A device in use is writers/in-use.sh's (it needs root and loop devices).
. "$(dirname "$0")/lib.sh"

case "${1:?usage: $0 CASE}" in
image-not-private)
	(umask 022 && : >"$IMAGE")
	write_config sim:8M ""
	t_run hibernate torpor hibernate --direct --test
	[ "$rc" -ne 0 ] || fail "hibernate accepted an image file of mode 0644"
	owner=$([ "$(id -u)" = 0 ] && echo root || echo "this user")
	expect_err_line "torpor: raw: refusing image file $IMAGE: it has mode 0644: other users could read the memory image (it must be 0600); the image holds the whole memory, so it must be private to $owner: remove it and create it again private (rm $IMAGE; umask 077; truncate -s SIZE $IMAGE), as chmod does not shut out a user who already has it open" \
		"image file of mode 0644"
	;;
passphrase-not-private)
	printf 'correct horse\n' >"$WORK/pass"
	chmod 644 "$WORK/pass"
	t_run keygen "$TORPOR" keygen --passphrase-file "$WORK/pass" --output "$WORK/keys"
	[ "$rc" -ne 0 ] || fail "keygen took a passphrase file of mode 0644"
	expect_err_line "torpor: passphrase file $WORK/pass: others may read or change it (mode 0644): refusing it (chmod 600 $WORK/pass)" \
		"passphrase file of mode 0644"
	[ -e "$WORK/keys/crypt.key" ] && fail "keygen wrote a key anyway"
	;;
plugin-not-found)
	write_config sim:8M "nosuch"
	t_run hibernate torpor hibernate --direct --test
	[ "$rc" -ne 0 ] || fail "hibernate ran with a filter that is not built"
	expect_err_line "torpor: $CONF:3: [torpor] key 'filters': plugin 'nosuch' is not installed: the plugin directory $TORPOR_PLUGINDIR has no nosuch.so" \
		"a filter that is not built"
	;;
bench-plugin-not-found)
	# A plugin directory with everything but zlib.
	mkdir "$WORK/plugins"
	cp "$TORPOR_PLUGINDIR"/*.so "$WORK/plugins/"
	rm "$WORK/plugins/zlib.so"
	t_run bench "$TORPOR" bench --size 4M --threads 1 --dir "$WORK" \
		--plugin-dir "$WORK/plugins"
	expect_err_line "torpor: bench: skipping chain 'zlib': plugin 'zlib' is not built: no zlib.so in $WORK/plugins (build it, or name the directory that has it with --plugin-dir)" \
		"bench without zlib.so"
	;;
bench-relative-dir)
	t_run bench "$TORPOR" bench --size 4M --plugin-dir plugins
	expect_rc 1 "bench --plugin-dir plugins"
	expect_err_line "torpor: bench: --plugin-dir plugins: not an absolute path: plugins are loaded only from one (--plugin-dir \"\$(realpath plugins)\")" \
		"bench with a relative plugin directory"
	;;
*)
	echo "unknown case $1"
	exit 1
	;;
esac
finish
