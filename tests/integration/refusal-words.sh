#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The exact words of the refusals a new user meets first: each names the
# object, the rule it broke and the command that puts it right.  One case
# per run (the argument); none needs root.
#   image-not-private       the raw writer's image file is mode 0644
#   image-not-private-resume the raw writer's image file, holding a stored
#                           image, is mode 0644 at resume: the advice keeps
#                           the session (chmod), and following it resumes
#   passphrase-not-private  keygen's passphrase file is mode 0644
#   plugin-not-found        the configuration names a plugin not built
#   bench-plugin-not-found  torpor bench's default chain lacks a plugin
#   bench-relative-dir      torpor bench --plugin-dir with a relative path
#   device-missing          the raw writer's device does not exist
#   config-missing          --config names a file that does not exist
#   user-hibernate          a user (uid 65534) hibernating without torpord
#                           onto root's image (root only, to become the user)
#   config-not-private      root given a configuration others may change,
#                           or one in a folder others may write (root only:
#                           SKIP otherwise)
#   resume-without-sim      the installed torpor-resume ($TORPOR_RESUME_KERNEL,
#                           no simulator) given a simulated image: it says it
#                           has no simulator and leaves the image, which
#                           torpor-resume-sim then resumes
# A device in use is writers/in-use.sh's (it needs root and loop devices);
# the daemon's refusal of a user is daemon.sh's.
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
resume-without-sim)
	write_config sim:8M ""
	t_run hibernate torpor hibernate --direct
	[ "$rc" -eq 0 ] || fail "hibernate"
	TORPOR_RESUME=$TORPOR_RESUME_KERNEL t_run resume torpor_resume
	expect_rc 1 "the installed torpor-resume on a simulated image"
	expect_err_line "torpor-resume: snapshot source 'sim:8M' is the simulated snapshot device, which this program is built without: it restores through the kernel's /dev/snapshot only (the simulator, for tests and demonstrations, is in torpor, torpord and a build tree's torpor-resume-sim)" \
		"the installed torpor-resume says it has no simulator"
	t_run resume torpor_resume
	expect_rc 0 "torpor-resume-sim after the installed one"
	expect_out "restored and verified" "the image left by the installed torpor-resume resumed"
	;;
image-not-private-resume)
	write_config sim:8M ""
	t_run hibernate torpor hibernate --direct
	[ "$rc" -eq 0 ] || fail "hibernate"
	chmod 644 "$IMAGE"
	t_run resume torpor_resume
	[ "$rc" -ne 0 ] || fail "torpor-resume accepted an image file of mode 0644"
	owner=$([ "$(id -u)" = 0 ] && echo root || echo "this user")
	expect_err_line "torpor-resume: raw: refusing image file $IMAGE: it has mode 0644: other users could read the memory image (it must be 0600); the image holds the whole memory, so it must be private to $owner. It may hold a stored session: to keep it, make the file private (chmod 600 $IMAGE, and chown it to $owner when another user owns it) and run this again; rm would throw the session away. Once it is resumed, create the file again private (rm $IMAGE; umask 077; truncate -s SIZE $IMAGE): chmod does not shut out a user who already has it open" \
		"image file of mode 0644 at resume"
	# The advice kept the session: made private, it resumes.
	chmod 600 "$IMAGE"
	t_run resume torpor_resume
	[ "$rc" -eq 0 ] || fail "torpor-resume after chmod 600"
	expect_out "restored and verified" "the stored session resumed after chmod 600"
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
device-missing)
	write_config sim:8M ""
	rm "$IMAGE"
	t_run hibernate torpor hibernate --direct --test
	expect_rc 1 "hibernate with no [raw] device"
	expect_err_line "torpor: raw: device $IMAGE does not exist: name a partition or an image file in [raw] device= (a new image file: umask 077; truncate -s SIZE $IMAGE)" \
		"a raw device that does not exist"
	[ -e "$IMAGE" ] && fail "the refusal created $IMAGE"
	;;
config-missing)
	t_run status "$TORPOR" --config "$WORK/none.conf" hibernate --test
	expect_rc 1 "hibernate with a configuration that does not exist"
	expect_err_line "torpor: configuration $WORK/none.conf does not exist (torpor setup writes $TORPOR_DEFAULT_CONFIG; --config names another)" \
		"a configuration that does not exist"
	;;
user-hibernate)
	[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to become another user"; exit 77; }
	command -v setpriv >/dev/null || { echo "SKIP: no setpriv"; exit 77; }
	write_config sim:8M ""
	chmod 755 "$WORK"
	t_run hibernate setpriv --reuid 65534 --regid 65534 --clear-groups \
		"$TORPOR" --config "$CONF" --plugin-dir "$TORPOR_PLUGINDIR" hibernate --direct --test
	expect_rc 1 "a user's hibernate onto root's image"
	expect_err_line "torpor: hibernate: refused to uid 65534: the snapshot device and the image's device are root's (sudo torpor hibernate; or start torpord, systemctl start torpord.socket, and join the group its group= names)" \
		"a user hibernating without torpord"
	[ -s "$IMAGE" ] && fail "the user's refused hibernate wrote to the image"
	;;
config-not-private)
	[ "$(id -u)" = 0 ] || { echo "SKIP: the rule is root's"; exit 77; }
	write_config sim:8M ""
	chmod 666 "$CONF"
	t_run hibernate torpor hibernate --direct --test
	expect_rc 1 "hibernate as root with a configuration of mode 0666"
	expect_err_line "torpor: configuration $CONF: others may change it (mode 0666, uid 0): refusing to run as root with it, as it names the devices torpor overwrites (chown root:root $CONF; chmod 644 $CONF)" \
		"a configuration of mode 0666"
	chmod 644 "$CONF"
	chown 65534 "$CONF"
	t_run hibernate torpor hibernate --direct --test
	expect_rc 1 "hibernate as root with a configuration uid 65534 owns"
	expect_err_line "torpor: configuration $CONF: not owned by root (mode 0644, uid 65534): refusing to run as root with it, as it names the devices torpor overwrites (chown root:root $CONF; chmod 644 $CONF)" \
		"a configuration another user owns"
	chown 0 "$CONF"
	mkdir "$WORK/open"
	chmod 777 "$WORK/open"
	cp "$CONF" "$WORK/open/torpor.conf"
	CONF="$WORK/open/torpor.conf"
	t_run hibernate torpor hibernate --direct --test
	expect_rc 1 "hibernate as root with a configuration in a folder of mode 0777"
	expect_err_line "torpor: configuration $CONF: the folder $WORK/open (mode 0777, uid 0) lets another user replace it: refusing to run as root with it (chown root:root $WORK/open; chmod go-w $WORK/open)" \
		"a configuration in a folder others may write"
	chmod 755 "$WORK/open"
	t_run hibernate torpor hibernate --direct --test
	expect_rc 0 "the same configuration once its folder is root's"
	[ -s "$IMAGE" ] || fail "the accepted configuration wrote no image"
	;;
*)
	echo "unknown case $1"
	exit 1
	;;
esac
finish
