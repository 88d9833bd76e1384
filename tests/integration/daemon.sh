#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# torpord on the simulated snapshot device, one case per run (the case
# names are in tests/integration/meson.build):
#   hibernate    progress events in order, the result, and the image resumes
#   permissions  a user who is neither root nor in [torpor] group may read
#                status and plugins, and is refused hibernate and reload
#   group        a member of [torpor] group may hibernate
#   busy         two hibernate requests at once: exactly one is "busy"
#   bad-requests oversized, malformed, truncated and stalled requests are
#                dropped with one log line each; torpord still answers
#   reload       a broken configuration is reported and the old one kept
#   after        --after reboot / suspend take the sim's recorded path
#   systemd      socket activation (LISTEN_FDS) and sd_notify's messages
#   socket-path  by hand: a file, a symlinked directory, a live daemon at
#                the path are refused, a stale socket replaced
#   cli-cancel   torpor run directly: Ctrl-C before the commit cancels,
#                after it is ignored
#   cancel       a cancel, or the client leaving, before the commit:
#                nothing is kept (gone before the cycle began: no cycle)
#   prepared     the cycle's plugins are initialised at load, not per
#                request: crypt's key file, gone after the load, is not
#                read again; the next cycle is prepared after the last, and
#                when it cannot be the request says why
#   twice        two hibernations in a row through torpord both resume
#   force        --force reaches torpord: a failed initramfs check
#                refuses without it and is a warning with it
#   crowd        a user holding more connections than it may, reopening
#                them as torpord closes them: root hibernates and gets its
#                status through torpord, so does another user's status,
#                the crowd's extra connections are refused, and torpord's
#                descriptors and memory come back down
#   crowd-garbage  the same with oversized, malformed and half-written
#                requests; what the crowd makes torpord log is bounded
#   crowd-many   seven such users, more than the slots other users may
#                hold: root still gets in, and another user takes its
#                share from the crowd
#   dropped      a socket that drops every connection: each command says
#                so and exits 1 (no SIGPIPE), root's hibernate runs
#                directly and says why; a cancel that cannot be sent is
#                an error too
. "$(dirname "$0")/lib.sh"

SOCK="$WORK/torpord.sock"
DLOG="$WORK/torpord.log"
CLIENT="$(dirname "$0")/torpord-client.py"
CROWD="$(dirname "$0")/crowd.py"
DROP="$(dirname "$0")/torpord-drop.py"
DPID=

stop_daemon() {
	if [ -n "$DPID" ]; then
		kill -CONT "$DPID" 2>/dev/null
		kill "$DPID" 2>/dev/null
		wait "$DPID" 2>/dev/null
		DPID=
	fi
}
trap 'stop_daemon; rm -rf "$WORK"' EXIT

# Start torpord on $CONF; returns once its socket answers.
start_daemon() {
	"$TORPORD" --config "$CONF" --plugin-dir "$TORPOR_PLUGINDIR" \
		--socket "$SOCK" >>"$DLOG" 2>&1 &
	DPID=$!
	for _ in $(seq 200); do
		[ -S "$SOCK" ] && "$TORPOR" -q --socket "$SOCK" status >/dev/null 2>&1 && return 0
		kill -0 "$DPID" 2>/dev/null || break
		sleep 0.05
	done
	echo "torpord did not come up:"; cat "$DLOG"
	exit 1
}

tc() { "$TORPOR" --socket "$SOCK" "$@"; }
# as_user GROUPS CMD...: run as nobody with these supplementary groups.
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
as_member() { setpriv --reuid=nobody --regid=nogroup --groups="$GROUP" "$@"; }
# A second user, with no name.
as_other() { setpriv --reuid=65533 --regid=65533 --clear-groups "$@"; }
raw() { python3 "$CLIENT" "$SOCK" "$@"; }
REQ_HIB='{"v": 1, "request": "hibernate"}'

# expect_daemon_json SOCKET true|false WHAT: $OUT, status --json, names
# that socket and whether a daemon runs there.
expect_daemon_json() {
	python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))["daemon"]; sys.exit(d != {"socket": sys.argv[2], "running": sys.argv[3] == "true"})' \
		"$OUT" "$1" "$2" || fail "$3: $(cat "$OUT")"
}

# The events of a hibernation, as a client got them, are in order.
check_events() {	# check_events FILE
	python3 - "$1" <<'PY' || fail "the events are not in order: $(cat "$1")"
import json, sys
lines = [l for l in open(sys.argv[1]) if l.startswith("{")]
ev = [json.loads(l) for l in lines]
assert ev[0]["type"] == "accepted", ev[0]
phases = ["start-up", "freeze", "snapshot", "write", "sync", "power-off", "resumed"]
seen, pct, current = [], -1, None
for e in ev[1:-1]:
    if e["type"] == "phase":
        if e["state"] == "begin":
            assert current is None, e
            current = e["phase"]
            seen.append(current)
        else:
            assert current == e["phase"], e
            assert e["ms"] >= 0
            current = None
    elif e["type"] == "progress":
        assert current == "write" and e["percent"] >= pct, e
        pct = e["percent"]
        assert e["mib_per_s"] >= 0 and "eta_s" in e
assert seen == phases, seen
assert pct == 100, pct
r = ev[-1]
assert r["type"] == "result" and r["ok"] is True and r["exit"] == 0, r
assert "hibernate:" in r["output"], r
PY
}

case_hibernate() {
	write_config sim:16M lzo
	start_daemon
	raw --request "$REQ_HIB" >"$OUT" 2>"$ERR"
	check_events "$OUT"
	grep -q '^EOF$' "$OUT" || fail "torpord did not end the connection"
	t_run "resume" torpor_resume
	expect_rc 0 "resume of the image torpord wrote"
	expect_out 'restored and verified' "the image resumed"
	# The CLI: through the daemon, and says so.
	t_run "cli" tc hibernate --test
	expect_rc 0 "torpor hibernate --test through torpord"
	expect_err 'through torpord' "the CLI says it went through torpord"
	expect_err 'write .* MiB/s' "the CLI shows the write phase"
	expect_out 'hibernate \(test\):' "the summary reaches the CLI"
	# -q through the daemon: errors only, as directly.
	t_run "cli -q" tc -q hibernate --test
	expect_rc 0 "torpor -q hibernate --test through torpord"
	[ -s "$OUT" ] && fail "torpor -q hibernate through torpord: stdout"
	[ -s "$ERR" ] && fail "torpor -q hibernate through torpord: stderr"
	# --direct does not ask the daemon.
	t_run "direct" tc --config "$CONF" --plugin-dir "$TORPOR_PLUGINDIR" --direct hibernate --test
	expect_rc 0 "torpor hibernate --direct"
	expect_err 'running directly' "--direct says so"
	if [ "$(grep -c hibernating "$DLOG")" -ne 3 ]; then
		fail "torpord ran $(grep -c hibernating "$DLOG") cycles, expected 3"
	fi
	# Each cycle's phase times up to the commit, in torpord's log (the
	# journal) before the power-off: its client is frozen by then.
	local num='[0-9]+\.[0-9]{3}' phases
	phases=$(grep -cE "^torpord: hibernate: phases \(s\): start-up $num, freeze $num, snapshot $num, write $num, sync $num\$" "$DLOG")
	[ "$phases" -eq 3 ] ||
		fail "torpord logged the phases of $phases cycles, expected 3: $(grep phases "$DLOG")"
	# And after each, the most memory the daemon has held.
	phases=$(grep -cE "^torpord: hibernate: peak RSS [1-9][0-9]* KiB\$" "$DLOG")
	[ "$phases" -eq 3 ] ||
		fail "torpord logged its peak RSS after $phases cycles, expected 3"
}

case_permissions() {
	[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to become another user"; exit 77; }
	write_config sim:8M lzo
	chmod 755 "$WORK"
	start_daemon
	t_run "status" as_nobody "$TORPOR" --socket "$SOCK" status
	expect_rc 0 "status as nobody"
	expect_out 'hibernate: +possible' "status as nobody says hibernation works"
	t_run "plugins" as_nobody "$TORPOR" --socket "$SOCK" plugins
	expect_rc 0 "plugins as nobody"
	expect_out '^lzo ' "plugins as nobody lists lzo"
	for what in hibernate reload verify invalidate; do
		t_run "$what" as_nobody "$TORPOR" --socket "$SOCK" "$what"
		expect_rc 1 "$what as nobody"
		expect_err "permission denied: '$what' is for root \\(a group may be let in with group= in torpor.conf's \\[torpor\\]\\)" \
			"$what as nobody is refused, and told what would let it in"
	done
	if grep -q hibernating "$DLOG"; then fail "a refused hibernate ran a cycle"; fi
	[ -s "$IMAGE" ] && fail "a refused hibernate wrote to the image"
	[ "$(grep -c 'uid 65534: .*permission denied' "$DLOG")" -eq 4 ] ||
		fail "each refusal is one log line"
}

case_group() {
	[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to become another user"; exit 77; }
	GROUP=users
	getent group "$GROUP" >/dev/null || { echo "SKIP: no group $GROUP"; exit 77; }
	write_config sim:8M lzo "group = $GROUP"
	chmod 755 "$WORK"
	start_daemon
	t_run "member" as_member "$TORPOR" --socket "$SOCK" hibernate --test
	expect_rc 0 "hibernate --test by a member of [torpor] group"
	t_run "not member" as_nobody "$TORPOR" --socket "$SOCK" hibernate --test
	expect_rc 1 "hibernate --test by nobody outside the group"
	expect_err "permission denied: 'hibernate' is for root and the members of group $GROUP \\(usermod -aG $GROUP USER, then log in again\\)" \
		"the non-member is refused and told which group lets it in"
	# An unknown group is a configuration error, found at reload.
	write_config sim:8M lzo "group = no-such-group-torpor"
	t_run "bad group" tc reload
	expect_rc 1 "reload with an unknown group"
	expect_err "no group 'no-such-group-torpor'" "the unknown group is named"
}

# Both requests are in torpord's socket before it reads either: it is
# stopped while they are sent.
case_busy() {
	write_config sim:8M lzo
	start_daemon
	kill -STOP "$DPID"
	raw --request "$REQ_HIB" --sent "$WORK/a.sent" >"$WORK/a.out" 2>&1 &
	local a=$!
	raw --request "$REQ_HIB" --sent "$WORK/b.sent" >"$WORK/b.out" 2>&1 &
	local b=$!
	for _ in $(seq 400); do
		[ -e "$WORK/a.sent" ] && [ -e "$WORK/b.sent" ] && break
		sleep 0.05
	done
	kill -CONT "$DPID"
	wait "$a" "$b"
	local busy ok
	busy=$(cat "$WORK/a.out" "$WORK/b.out" | grep -c '"error": "busy"')
	ok=$(cat "$WORK/a.out" "$WORK/b.out" | grep -c '"type": "result", "ok": true')
	[ "$busy" -eq 1 ] || fail "$busy busy answers, expected 1: $(cat "$WORK"/a.out "$WORK"/b.out)"
	[ "$ok" -eq 1 ] || fail "$ok cycles done, expected 1"
}

case_bad_requests() {
	write_config sim:8M lzo
	start_daemon
	# A stalled client: connects and sends nothing.
	raw >"$WORK/stalled.out" 2>&1 &
	local stalled=$!
	raw --raw 00010001 >"$WORK/big.out" 2>&1
	grep -q '^{' "$WORK/big.out" && fail "an oversized request was answered"
	raw --raw "000000057b6e6f7065" >"$WORK/bad.out" 2>&1
	grep -q '"error": "malformed request"' "$WORK/bad.out" ||
		fail "a malformed request is not answered as such: $(cat "$WORK/bad.out")"
	raw --raw "000000647b7d" --close
	# Others are served while the stalled one waits.
	t_run "status" tc status
	expect_rc 0 "status while a client stalls"
	raw --request '{"v": 2, "request": "status"}' >"$WORK/v2.out" 2>&1
	grep -q 'unsupported protocol version' "$WORK/v2.out" || fail "version 2 is not refused"
	raw --request '{"v": 1, "request": "fly"}' >"$WORK/fly.out" 2>&1
	grep -q 'unknown request' "$WORK/fly.out" || fail "an unknown request is not refused"
	wait "$stalled"
	grep -q '^EOF$' "$WORK/stalled.out" || fail "the stalled client was not dropped"
	t_run "status after" tc status
	expect_rc 0 "status after the bad requests"
	for line in 'larger than 64 KiB' 'malformed request' 'no whole request' \
		    'ended inside a request' 'protocol version' 'unknown request'; do
		[ "$(grep -c "$line" "$DLOG")" -eq 1 ] ||
			fail "'$line' is not logged once: $(cat "$DLOG")"
	done
}

case_reload() {
	write_config sim:8M lzo
	start_daemon
	cp "$CONF" "$WORK/good.conf"
	printf '[torpor]\nsnapshot = sim:8M\nfilters = nosuch\nwriter = raw\n[raw]\ndevice = %s\n' \
		"$IMAGE" >"$CONF"
	t_run "reload broken" tc reload
	expect_rc 1 "reload with a broken configuration"
	expect_err "nosuch" "the reload names what is wrong"
	expect_err 'last good one is kept' "the reload says the old one is kept"
	t_run "status" tc status
	expect_rc 0 "status after a refused reload"
	expect_out 'chain: +lzo -> raw' "the old configuration is still in use"
	t_run "hibernate" tc hibernate --test
	expect_rc 0 "hibernate --test with the kept configuration"
	echo "threads = many" >>"$CONF"
	kill -HUP "$DPID"
	t_run "status after HUP" tc status
	expect_out 'chain: +lzo -> raw' "SIGHUP with a broken file keeps the old one"
	grep -q "torpor.conf:.*threads" "$DLOG" || fail "SIGHUP's error is not logged"
	write_config sim:8M ""
	t_run "reload good" tc reload
	expect_rc 0 "reload with a good configuration"
	t_run "status new" tc status
	expect_out 'chain: +raw$' "the new configuration is in use"
}

case_after() {
	write_config sim:8M lzo
	start_daemon
	t_run "reboot" tc hibernate --after reboot
	expect_rc 0 "hibernate --after reboot"
	expect_err 'sim: reboot' "after=reboot took the reboot path"
	if grep -q 'sim: poweroff' "$ERR"; then fail "after=reboot also powered off"; fi
	t_run "resume" torpor_resume
	expect_out 'restored and verified' "the image resumed after reboot"
	t_run "suspend" tc hibernate --after suspend
	expect_rc 0 "hibernate --after suspend"
	expect_err 'sim: suspend to RAM, woke up' "after=suspend suspended to RAM"
	expect_err 'discarding the image' "after=suspend discards the image"
	t_run "resume" torpor_resume
	expect_out 'no image found' "no image is left after waking from RAM"
	t_run "poweroff" tc hibernate
	expect_err 'sim: poweroff' "the configured after=poweroff"
}

case_cancel() {
	write_config sim:8M lzo
	start_daemon
	raw --request "$REQ_HIB" --request '{"v": 1, "request": "cancel"}' >"$OUT" 2>"$ERR"
	grep -q '"ok": false.*"error": "cancelled before the image was committed' "$OUT" ||
		fail "a cancel before the commit does not cancel: $(cat "$OUT")"
	grep -q '"phase": "freeze"' "$OUT" && fail "a cancelled cycle froze"
	t_run "resume" torpor_resume
	expect_out 'no image found' "a cancelled cycle leaves no image"
	# Gone (its end of the stream) during the cycle: cancelled.
	raw --request "$REQ_HIB" --shut >"$OUT" 2>"$ERR"
	grep -q '"type": "result"' "$OUT" && fail "a client that left got a result"
	grep -q 'the client went away: cancelling' "$DLOG" ||
		fail "a client leaving does not cancel: $(cat "$DLOG")"
	t_run "resume" torpor_resume
	expect_out 'no image found' "the cycle of a client that left leaves no image"
	# Gone at once: before the cycle began (no cycle), or during it
	# (cancelled, or after the commit: not); torpord says which.
	raw --request "$REQ_HIB" --close
	for _ in $(seq 200); do
		[ "$(grep -c ': the client went away' "$DLOG")" -eq 2 ] && break
		sleep 0.05
	done
	[ "$(grep -c ': the client went away' "$DLOG")" -eq 2 ] ||
		fail "a client gone at once is not noticed: $(cat "$DLOG")"
}

# torpor run directly: Ctrl-C (SIGINT, sent by a system-sleep hook, so at
# a known point) before the commit cancels; after it, it is ignored.
case_cli_cancel() {
	[ -e "$TORPOR_PLUGINDIR/sleep-hooks.so" ] || { echo "SKIP: no sleep-hooks"; exit 77; }
	mkdir -p "$WORK/hooks"
	write_config sim:8M lzo
	printf '\n[sleep-hooks]\ndirectory = %s\n' "$WORK/hooks" >>"$CONF"
	printf '#!/bin/sh\n[ "$1" = pre ] && kill -INT $PPID\nexit 0\n' >"$WORK/hooks/10-int"
	chmod 755 "$WORK/hooks/10-int"
	t_run "cancelled" torpor hibernate
	expect_rc 1 "Ctrl-C before the commit"
	# Given --config (lib.sh's torpor), it runs directly and says so
	# only with -v.
	grep -q 'running directly' "$ERR" && fail "--config without -v says it runs directly"
	expect_err 'cancelled: processes thawed, nothing kept' "the cancel is reported"
	grep -q 'torpor: freeze' "$ERR" && fail "a cancelled cycle froze"
	t_run "resume" torpor_resume
	expect_out 'no image found' "a cancelled cycle leaves no image"
	printf '#!/bin/sh\n[ "$1" = post ] && kill -INT $PPID\nexit 0\n' >"$WORK/hooks/10-int"
	t_run "too late" torpor hibernate
	expect_rc 0 "Ctrl-C after the commit"
	expect_err 'Ctrl-C ignored: the image is committed' "a late Ctrl-C says why it is ignored"
	t_run "resume" torpor_resume
	expect_out 'restored and verified' "the image of a late Ctrl-C resumes"
}

# wait_line FILE REGEX: until a line matches (10 s at most).
wait_line() {
	for _ in $(seq 200); do
		grep -qE -- "$2" "$1" && return 0
		sleep 0.05
	done
	return 1
}

# As systemd starts it: socket activation and Type=notify.
case_systemd() {
	local notes="$WORK/notify"
	write_config sim:8M lzo
	python3 "$(dirname "$0")/torpord-systemd.py" "$SOCK" "$WORK/notify.sock" \
		"$TORPORD" --config "$CONF" --plugin-dir "$TORPOR_PLUGINDIR" \
		>"$notes" 2>>"$DLOG" &
	local helper=$!
	wait_line "$notes" '^READY=1' || fail "no READY=1: $(cat "$notes" "$DLOG")"
	DPID=$(sed -n 's/^PID //p' "$notes")
	t_run "status" tc status
	expect_rc 0 "status through the socket systemd made"
	t_run "status --json" tc status --json
	expect_daemon_json "$SOCK" true "status --json does not name systemd's socket"
	kill -HUP "$DPID"
	wait_line "$notes" '^RELOADING=1' || fail "no RELOADING=1 on SIGHUP"
	[ "$(grep -c '^READY=1' "$notes")" -ge 1 ] || fail "no READY=1 after the reload"
	kill "$DPID"
	wait "$helper"
	DPID=
	grep -q '^STOPPING=1' "$notes" || fail "no STOPPING=1"
	[ -S "$SOCK" ] || fail "torpord removed the socket systemd owns"
}

# By hand: what may already be at the socket's path.
case_socket_path() {
	write_config sim:8M lzo
	: >"$SOCK"
	t_run "file" "$TORPORD" --config "$CONF" --socket "$SOCK"
	expect_rc 1 "a file at the socket path"
	expect_err 'is not a socket: refused' "a file at the socket path is refused"
	rm -f "$SOCK"
	mkdir "$WORK/real"
	ln -s "$WORK/real" "$WORK/link"
	t_run "symlink" "$TORPORD" --config "$CONF" --socket "$WORK/link/s.sock"
	expect_rc 1 "a symlink as the socket's directory"
	expect_err 'not a directory \(a symlink\?\): refused' "the symlink is refused"
	chmod 1777 "$WORK/real"
	t_run "writable" "$TORPORD" --config "$CONF" --socket "$WORK/real/s.sock"
	expect_rc 1 "a directory others may write to"
	expect_err 'is not ours alone' "the shared directory is refused"
	start_daemon
	[ "$(stat -c %a "$SOCK")" = 666 ] || fail "the socket's mode is $(stat -c %a "$SOCK")"
	t_run "second" "$TORPORD" --config "$CONF" --socket "$SOCK"
	expect_rc 1 "a second daemon on a live socket"
	expect_err 'another torpord answers' "the second daemon says why"
	kill -KILL "$DPID"
	wait "$DPID" 2>/dev/null
	DPID=
	[ -S "$SOCK" ] || fail "the killed daemon's socket is gone"
	start_daemon	# replaces the stale socket
	t_run "status" tc status
	expect_rc 0 "status after a stale socket was replaced"
	stop_daemon
	[ -e "$SOCK" ] && fail "torpord left its socket behind"
	return 0
}

case_prepared() {
	[ -f "$TORPOR_PLUGINDIR/crypt.so" ] || { echo "SKIP: no crypt plugin"; exit 77; }
	local key=$WORK/crypt.keyfile
	(umask 077 && head -c 32 /dev/urandom >"$key")
	write_config sim:8M "lzo crypt"
	printf '\n[crypt]\nmode = keyfile\nkey_file = %s\n' "$key" >>"$CONF"
	start_daemon
	mv "$key" "$key.away"
	# A cycle of its own initialises the plugins: the key is missing.
	t_run "direct" tc --config "$CONF" --plugin-dir "$TORPOR_PLUGINDIR" --direct hibernate --test
	expect_rc 1 "--direct with the key file gone"
	expect_err "$key" "--direct names the missing key file"
	# torpord initialised them at load: the request goes to the freeze.
	t_run "prepared" tc hibernate --test
	expect_rc 0 "hibernate --test through torpord, prepared at load"
	expect_out 'hibernate \(test\):' "the prepared cycle ran"
	grep -q 'next cycle could not be prepared' "$DLOG" ||
		fail "torpord does not say that the next cycle could not be prepared"
	# Nothing prepared: the request prepares it, and says why it cannot.
	t_run "unprepared" tc hibernate --test
	expect_rc 1 "hibernate --test with nothing prepared and no key"
	expect_err "$key" "the request names the missing key file"
	mv "$key.away" "$key"
	t_run "again" tc hibernate --test
	expect_rc 0 "hibernate --test once the key is back"
	# Loaded once: the requests did not load the configuration again.
	[ "$(grep -c 'loaded: writer' "$DLOG")" -eq 1 ] ||
		fail "torpord loaded its configuration more than once"
	[ "$(grep -c hibernating "$DLOG")" -eq 3 ] ||
		fail "torpord ran $(grep -c hibernating "$DLOG") cycles, expected 3"
}

case_twice() {
	write_config sim:8M lzo
	start_daemon
	for n in 1 2; do
		t_run "hibernate $n" tc hibernate
		expect_rc 0 "hibernation $n through torpord"
		t_run "resume $n" torpor_resume
		expect_rc 0 "resume $n"
		expect_out 'restored and verified' "image $n resumed"
	done
	if grep -q 'could not be prepared' "$DLOG"; then
		fail "torpord could not prepare a cycle: $(cat "$DLOG")"
	fi
}

case_force() {
	local initrd=$WORK/no-initrd.img
	write_config sim:8M lzo "initramfs = $initrd"
	start_daemon
	t_run "refused" tc hibernate --test
	expect_rc 1 "hibernate --test with a failing initramfs check"
	expect_err "initramfs $initrd: it cannot be opened" "the check's reason reaches the client"
	expect_err 'or hibernate with --force' "the check names --force"
	! grep -q 'hibernate (test):' "$OUT" || fail "a refused cycle ran"
	t_run "forced" tc hibernate --test --force
	expect_rc 0 "hibernate --test --force through torpord"
	expect_err 'hibernating anyway \(--force\)' "--force makes the check a warning"
	expect_out 'hibernate \(test\):' "the forced cycle ran"
	grep -q 'hibernating (test) (force)' "$DLOG" || fail "torpord does not log --force"
	raw --request '{"v": 1, "request": "hibernate", "force": "yes"}' >"$OUT" 2>"$ERR"
	grep -q 'force: not true or false' "$OUT" || fail "a force that is not a boolean is taken"
	[ "$(grep -c "uid $(id -u): hibernating" "$DLOG")" -eq 2 ] ||
		fail "torpord ran $(grep -c "uid $(id -u): hibernating" "$DLOG") cycles, expected 2"
}

# wait_until CMD...: until it succeeds (10 s at most).
wait_until() {
	for _ in $(seq 200); do
		"$@" && return 0
		sleep 0.05
	done
	return 1
}

# The daemon's open descriptors, and its resident memory in KiB.
daemon_fds() { ls "/proc/$DPID/fd" | wc -l; }
daemon_rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$DPID/status"; }
fds_at_most() { [ "$(daemon_fds)" -le "$1" ]; }

# A python3 that nobody may run (not a shim in root's home).
nobody_python() {
	local py
	for py in "$(command -v python3)" /usr/bin/python3; do
		as_nobody "$py" -c '' 2>/dev/null && { echo "$py"; return 0; }
	done
	return 1
}

# Stop torpord and check that it exits 0 (under ASan: without a leak).
stop_daemon_cleanly() {
	local r
	kill "$DPID"
	wait "$DPID"
	r=$?
	DPID=
	[ "$r" -eq 0 ] || fail "torpord exited with status $r: $(tail -5 "$DLOG")"
}

# crowd_case MODE USERS: USERS users (nobody, then uids 65501...) each
# hold HOLD connections (one user: 70, more than TORPORD_MAX_CONNS; else
# 12, 4 more than each may) and open a new one whenever torpord closes
# one.  Seven users want more than the 48 slots users other than root and
# the group may hold: they take slots from each other, and a newcomer
# takes one from them.
crowd_case() {
	local mode=$1 users=$2 py n ok root_ok base_fds base_rss rss fds
	local max_fds=0 hold=70 uid pids=() crowd
	local limit=8 shared=48	# TORPORD_MAX_CONNS_PER_USER, 64 - 16 reserved
	[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to become other users"; exit 77; }
	py=$(nobody_python) || { echo "SKIP: no python3 that nobody may run"; exit 77; }
	[ "$users" -eq 1 ] || hold=12
	write_config sim:8M lzo
	chmod 755 "$WORK"
	mkdir -m 777 "$WORK/crowd"
	start_daemon
	# What the requests keep allocated, allocated: a cycle, statuses,
	# and plugins, answered once the cycle after the last status is
	# prepared again (one thread).
	tc hibernate --test >/dev/null 2>&1
	for _ in $(seq 5); do tc status >/dev/null 2>&1; done
	tc plugins >/dev/null 2>&1
	base_fds=$(daemon_fds) base_rss=$(daemon_rss)
	for n in $(seq "$users"); do
		uid=$((n == 1 ? 65534 : 65499 + n))
		setpriv --reuid="$uid" --regid="$uid" --clear-groups \
			"$py" "$CROWD" "$SOCK" "$hold" "$mode" "$WORK/crowd/ready.$n" \
			"$WORK/crowd/stop" "$WORK/crowd/report.$n" 12000 &
		pids+=($!)
	done
	for n in $(seq "$users"); do
		wait_until test -e "$WORK/crowd/ready.$n" ||
			fail "crowd user $n's connections were never refused at its limit"
	done
	t_run "hibernate" tc hibernate --test
	expect_rc 0 "root's hibernate --test with the socket crowded"
	expect_err 'through torpord' "root's hibernate went through torpord"
	expect_out 'hibernate \(test\):' "root's cycle ran"
	! grep -q 'running directly' "$ERR" || fail "root's hibernate had to run directly"
	root_ok=0
	for n in $(seq 20); do
		tc status >/dev/null 2>&1 && root_ok=$((root_ok + 1))
		fds=$(daemon_fds)
		[ "$fds" -le "$max_fds" ] || max_fds=$fds
	done
	[ "$root_ok" -eq 20 ] || fail "root's status answered $root_ok times of 20 with the socket crowded"
	ok=0
	for n in $(seq 5); do
		as_other "$TORPOR" --socket "$SOCK" status >/dev/null 2>&1 && ok=$((ok + 1))
	done
	[ "$ok" -eq 5 ] || fail "another user's status answered $ok times of 5 with the socket crowded"
	echo "under the crowd: root's status answered $root_ok times of 20, another user's $ok of 5; descriptors $base_fds before, $max_fds at most"
	# The crowd's connections within its limits, a root status in flight
	# and what a status opens: far from the $((users * hold)) it tries
	# to hold.
	n=$((users * limit < shared ? users * limit : shared))
	[ "$max_fds" -le $((base_fds + n + 4)) ] ||
		fail "torpord held $max_fds descriptors with the socket crowded, $base_fds before"

	touch "$WORK/crowd/stop"
	for crowd in "${pids[@]}"; do
		wait "$crowd" || fail "a crowd user failed"
	done
	for n in $(seq "$users"); do
		echo "crowd user $n: $(cat "$WORK/crowd/report.$n")"
		python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["refused"] == 0)' \
			"$WORK/crowd/report.$n" || fail "none of crowd user $n's connections was refused"
	done
	if [ "$users" -eq 1 ]; then
		grep -q "uid 65534: too many connections: uid 65534 holds $limit, the most one user may: refused" "$DLOG" ||
			fail "torpord does not say why it refused nobody"
	else
		# (The log has the first 20 lines of the refusals only.)  The
		# other user's status, answered above, took a slot from them.
		grep -q "too many connections: the $shared that users other than root and \[torpor\] group may hold are taken" "$WORK"/crowd/report.* ||
			fail "the crowd never found the users' slots all taken"
	fi
	kill -0 "$DPID" || fail "torpord died under the crowd"
	wait_until fds_at_most "$base_fds" ||
		fail "torpord holds $(daemon_fds) descriptors once the crowd left, $base_fds before"
	tc status >/dev/null 2>&1
	tc plugins >/dev/null 2>&1 || fail "torpord does not answer once the crowd left"
	rss=$(daemon_rss)
	echo "VmRSS: $base_rss KiB before, $rss KiB after"
	# ASan keeps what is freed in quarantine: its RSS says nothing here
	# (its leak check runs when torpord exits, below).
	if ! ldd "$TORPORD" 2>/dev/null | grep -q libasan &&
	   [ "$rss" -gt $((base_rss + 2048)) ]; then
		fail "torpord's VmRSS went from $base_rss KiB to $rss KiB"
	fi
}

case_crowd() {
	crowd_case idle 1
	t_run "status --json" tc status --json
	expect_daemon_json "$SOCK" true "status --json does not name the socket it asked"
	stop_daemon_cleanly
}

case_crowd_many() {
	crowd_case idle 7
	stop_daemon_cleanly
}

case_crowd_garbage() {
	crowd_case garbage 1
	# What an unprivileged user makes torpord log is bounded: the line
	# that counts what was left out comes once a window of 10 s is over.
	wait_until grep -q 'more lines about unprivileged clients left out' "$DLOG" ||
		wait_until grep -q 'more lines about unprivileged clients left out' "$DLOG" ||
		fail "torpord logged every line the crowd caused: $(grep -c 'uid 65534' "$DLOG") lines"
	stop_daemon_cleanly
}

case_dropped() {
	local server client what n
	write_config sim:8M lzo
	chmod 755 "$WORK"
	python3 "$DROP" "$SOCK" close "$WORK/stop" &
	server=$!
	wait_until test -S "$SOCK" || fail "the dropping socket did not come up"
	for what in status "status --json" plugins verify invalidate reload; do
		for n in $(seq 5); do
			t_run "$what" tc $what
			[ "$rc" -eq 1 ] || { fail "$what on a dropped connection: exit status $rc, expected 1"; break; }
			expect_err "torpord on $SOCK did not take the request: " "$what says that torpord did not take it"
		done
	done
	# Root's hibernation does not depend on the socket: it runs directly,
	# and its line says why.
	t_run "hibernate" tc --config "$CONF" --plugin-dir "$TORPOR_PLUGINDIR" hibernate --test
	expect_rc 0 "root's hibernate --test past a dropped connection"
	expect_err "torpord on $SOCK did not take the request: .*: running directly" \
		"root's hibernate says why it runs directly"
	expect_out 'hibernate \(test\):' "root's direct cycle ran"
	if [ "$(id -u)" = 0 ]; then
		t_run "nobody" as_nobody "$TORPOR" --socket "$SOCK" hibernate --test
		expect_rc 1 "nobody's hibernate --test past a dropped connection"
		expect_err "did not take the request" "nobody is told that torpord did not take it"
		! grep -q 'running directly' "$ERR" || fail "nobody's hibernate ran directly"
	fi
	touch "$WORK/stop"
	wait "$server"
	rm -f "$WORK/stop"
	# Accepted, then the connection cannot take the cancel Ctrl-C sends.
	python3 "$DROP" "$SOCK" shut "$WORK/stop" "$WORK/mark" &
	server=$!
	wait_until test -S "$SOCK" || fail "the dropping socket did not come up"
	"$TORPOR" --socket "$SOCK" hibernate --test >"$OUT" 2>"$ERR" &
	client=$!
	wait_until test -e "$WORK/mark" || fail "the request did not arrive"
	kill -INT "$client"
	wait_until grep -q 'could not send the cancel' "$ERR"
	touch "$WORK/stop"
	wait "$client"
	rc=$?
	expect_rc 1 "hibernate whose cancel could not be sent"
	expect_err 'could not send the cancel to torpord \(Broken pipe\)' "the failed cancel is said"
	wait "$server"
	# No daemon at all: status names the socket it asked.
	t_run "status --json" tc --config "$CONF" --plugin-dir "$TORPOR_PLUGINDIR" status --json
	expect_daemon_json "$SOCK" false "status --json does not name the socket it asked"
}

case "${1:-}" in
crowd) case_crowd ;;
crowd-garbage) case_crowd_garbage ;;
crowd-many) case_crowd_many ;;
dropped) case_dropped ;;
prepared) case_prepared ;;
twice) case_twice ;;
force) case_force ;;
systemd) case_systemd ;;
socket-path) case_socket_path ;;
cli-cancel) case_cli_cancel ;;
hibernate) case_hibernate ;;
permissions) case_permissions ;;
group) case_group ;;
busy) case_busy ;;
bad-requests) case_bad_requests ;;
reload) case_reload ;;
after) case_after ;;
cancel) case_cancel ;;
*) echo "daemon.sh: unknown case '${1:-}'"; exit 1 ;;
esac
finish
