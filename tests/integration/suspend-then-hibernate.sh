#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# torpor suspend-then-hibernate on the simulated snapshot device, with the
# kernel's files faked under $TORPOR_TEST_SYSROOT: the RTC's wakealarm and
# /sys/power/state.  A regular state file "suspends" and returns at once
# (woken before the alarm: no hibernation); a FIFO that this script reads
# only after the delay has passed keeps the command in its write, asleep
# as far as it can tell, until the alarm would have rung: it hibernates.
. "$(dirname "$0")/lib.sh"

SYSROOT=$WORK/sysroot
STATE=$SYSROOT/sys/power/state
ALARM=$SYSROOT/sys/class/rtc/rtc0/wakealarm
hooks=$WORK/hooks
calls=$WORK/calls
export TORPOR_TEST_SYSROOT=$SYSROOT

mkdir -p "$hooks"
printf '#!/bin/sh\necho "$1 $2 $SYSTEMD_SLEEP_ACTION" >>"%s"\n' "$calls" >"$hooks/10-record"
chmod 755 "$hooks/10-record"

fresh_sysroot() {
	rm -rf "$SYSROOT"
	mkdir -p "$SYSROOT/sys/power" "$SYSROOT/sys/class/rtc/rtc0"
	echo "freeze mem disk" >"$STATE"
	echo "s2idle [deep]" >"$SYSROOT/sys/power/mem_sleep"
	: >"$ALARM"
	: >"$calls"
}

s2h_config() {	# s2h_config [EXTRA [torpor] LINES...]
	write_config sim:8M lzo "$@"
	printf '\n[sleep-hooks]\ndirectory = %s\n' "$hooks" >>"$CONF"
}

expect_calls() {	# expect_calls WHAT LINE...
	local what=$1; shift
	local want
	want=$(printf '%s\n' "$@")
	[ "$(cat "$calls")" = "$want" ] ||
		fail "$what: hook calls: $(tr '\n' '|' <"$calls"), expected $(tr '\n' '|' <<<"$want")"
}

no_hibernation() {	# no_hibernation WHAT
	grep -q 'sim: poweroff' "$ERR" && fail "$1: it hibernated"
	# The raw writer's file stays empty until a first hibernation.
	[ -s "$IMAGE" ] || return 0
	t_run "$1: resume" torpor_resume
	expect_out 'no image found' "$1: no image is left"
}

# --- woken before the alarm: the state write returns at once ----------
fresh_sysroot
s2h_config
t_run "early wake" torpor suspend-then-hibernate --direct --delay 30
expect_rc 0 "woken early"
expect_err 'the RTC wakes the machine in 30 s' "early: the alarm is 30 s ahead"
expect_err 'woken up before the RTC alarm: staying up' "early: it stays up"
expect_err 'awake after [0-9.]+ s, before the RTC alarm' "early: the wake reason"
[ "$(cat "$STATE")" = mem ] || fail "early: /sys/power/state got '$(cat "$STATE")', not mem"
[ "$(cat "$ALARM")" = 0 ] || fail "early: the alarm is left set: '$(cat "$ALARM")'"
expect_calls "early" "pre suspend-then-hibernate suspend" \
	"post suspend-then-hibernate suspend"
no_hibernation "early"

# asleep_on_fifo WHAT DELAY: start suspend-then-hibernate --delay DELAY
# with /sys/power/state a FIFO; returns once the alarm is set (just before
# the write that "suspends").  wake_from_fifo then reads the FIFO, which
# lets the write return, and waits for the command: $got, $rc.
asleep_on_fifo() {
	local what=$1 delay=$2
	fresh_sysroot
	rm -f "$STATE"
	mkfifo "$STATE"
	s2h_config
	"$TORPOR" --config "$CONF" --plugin-dir "$TORPOR_PLUGINDIR" \
		suspend-then-hibernate --direct --delay "$delay" >"$OUT" 2>"$ERR" &
	pid=$!
	for _ in $(seq 600); do
		[ "$(cat "$ALARM")" = "+$delay" ] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	[ "$(cat "$ALARM")" = "+$delay" ] ||
		fail "$what: the RTC alarm was not set to +$delay: '$(cat "$ALARM")'"
}
wake_from_fifo() {
	got=$(timeout 60 cat "$STATE")
	wait "$pid"
	rc=$?
}

# --- woken by the alarm: the state write returns after the delay ------
asleep_on_fifo alarm 3
sleep 4		# the delay passes while the command is "asleep"
wake_from_fifo
expect_rc 0 "woken by the alarm"
[ "$got" = mem ] || fail "alarm: /sys/power/state got '$got', not mem"
expect_err 'the RTC alarm woke the machine: hibernating' "alarm: it hibernates"
expect_err 'awake after [0-9.]+ s: the delay has passed' "alarm: the wake reason"
expect_err 'sim: poweroff' "alarm: the hibernation ran to the power-off"
[ "$(cat "$ALARM")" = 0 ] || fail "alarm: the alarm is left set: '$(cat "$ALARM")'"
expect_calls "alarm" "pre suspend-then-hibernate suspend" \
	"post suspend-then-hibernate suspend" \
	"pre suspend-then-hibernate hibernate" \
	"post suspend-then-hibernate hibernate"
t_run "alarm: resume" torpor_resume
expect_rc 0 "alarm: resume"
expect_out 'restored and verified' "alarm: the image resumes"

# --- the kernel disabled the alarm: it rang, whatever the clock says -----
asleep_on_fifo rung 600
: >"$ALARM"	# as the kernel leaves it once the alarm has rung
wake_from_fifo
expect_rc 0 "rung"
expect_err 'the RTC alarm has rung: awake after' "rung: the reason"
expect_err 'sim: poweroff' "rung: it hibernated"
t_run "rung: resume" torpor_resume
expect_rc 0 "rung: resume"

# --- where the delay comes from ----------------------------------------
delay_is() {	# delay_is SECONDS WHAT [ARGS...]
	local want=$1 what=$2; shift 2
	fresh_sysroot
	t_run "$what" torpor suspend-then-hibernate --direct "$@"
	expect_rc 0 "$what"
	expect_err "the RTC wakes the machine in $want s" "$what: $want s"
}
s2h_config
delay_is 7200 "systemd's default without sleep.conf"
mkdir -p "$SYSROOT/etc/systemd"
write_sleep() {	# write_sleep FILE VALUE
	mkdir -p "$(dirname "$SYSROOT$1")"
	printf '[Sleep]\n#HibernateDelaySec=1s\nHibernateDelaySec=%s\n' "$2" >"$SYSROOT$1"
}
sleep_files() {
	write_sleep /etc/systemd/sleep.conf 1h
	write_sleep /etc/systemd/sleep.conf.d/50-a.conf "90min"
	write_sleep /usr/lib/systemd/sleep.conf.d/60-b.conf "1h 30s"
}
fresh_sysroot; sleep_files
t_run "sleep.conf" torpor -v suspend-then-hibernate --direct
expect_err 'in 3630 s' "the last drop-in by name wins (1h 30s)"
expect_err 'hibernate delay 3630 s \(.*/usr/lib/systemd/sleep.conf.d/60-b.conf HibernateDelaySec=\)' \
	"the delay's origin is named"
fresh_sysroot; sleep_files
: >"$SYSROOT/etc/systemd/sleep.conf.d/60-b.conf"
t_run "masked drop-in" torpor suspend-then-hibernate --direct
expect_err 'in 5400 s' "an /etc drop-in masks /usr/lib's of the same name (90min)"
for v in "2h" "45" "1.5min" "2 min 5 s" "1w" "500ms"; do
	case $v in
	2h) want=7200 ;; 45) want=45 ;; 1.5min) want=90 ;; "2 min 5 s") want=125 ;;
	1w) want=604800 ;; 500ms) want=1 ;;
	esac
	fresh_sysroot; write_sleep /etc/systemd/sleep.conf "$v"
	t_run "HibernateDelaySec=$v" torpor suspend-then-hibernate --direct
	expect_err "in $want s" "HibernateDelaySec=$v is $want s"
done
fresh_sysroot; write_sleep /etc/systemd/sleep.conf "10 parsecs"
t_run "bad HibernateDelaySec" torpor suspend-then-hibernate --direct
expect_rc 0 "a bad HibernateDelaySec is ignored, as systemd does"
expect_err 'HibernateDelaySec=10 parsecs is not a time span: ignored' "bad value named"
expect_err 'in 7200 s' "bad value: the default"
fresh_sysroot; write_sleep /etc/systemd/sleep.conf infinity
t_run "infinity" torpor suspend-then-hibernate --direct
expect_err 'in 7200 s' "HibernateDelaySec=infinity: the default"
s2h_config "hibernate_delay = 11"
delay_is 11 "[torpor] hibernate_delay over sleep.conf"
delay_is 5 "--delay over [torpor] hibernate_delay" --delay 5
rm -rf "$SYSROOT/etc"

# hibernate_delay = 0: hibernate at once, as systemd with a zero delay.
fresh_sysroot
s2h_config "hibernate_delay = 0"
t_run "zero delay" torpor suspend-then-hibernate --direct
expect_rc 0 "zero delay"
expect_err 'hibernating without suspending' "zero delay: no suspend"
expect_err 'sim: poweroff' "zero delay: it hibernated"
[ "$(cat "$STATE")" = "freeze mem disk" ] || fail "zero delay: /sys/power/state was written"
t_run "zero delay: resume" torpor_resume
expect_rc 0 "zero delay: resume"

# --- SuspendState=: the first one /sys/power/state offers ---------------
s2h_config
fresh_sysroot
echo "freeze disk" >"$STATE"
t_run "no mem" torpor suspend-then-hibernate --direct --delay 30
expect_rc 0 "no mem: suspended"
expect_err "suspending \('freeze'\)" "no mem: the next default state"
[ "$(cat "$STATE")" = freeze ] || fail "no mem: /sys/power/state got '$(cat "$STATE")'"
fresh_sysroot
write_sleep /etc/systemd/sleep.conf.d/10-state.conf 30s
printf 'SuspendState=standby freeze\n' >>"$SYSROOT/etc/systemd/sleep.conf.d/10-state.conf"
echo "freeze mem standby disk" >"$STATE"
t_run "SuspendState" torpor suspend-then-hibernate --direct
expect_rc 0 "SuspendState: suspended"
expect_err "suspending \('standby'\); the RTC wakes the machine in 30 s" "SuspendState=standby freeze"
[ "$(cat "$STATE")" = standby ] || fail "SuspendState: /sys/power/state got '$(cat "$STATE")'"
rm -rf "$SYSROOT/etc"

# --- the hibernation step through torpord ------------------------------
# The daemon runs the hooks of the step it hibernates for: they must get
# suspend-then-hibernate with SYSTEMD_SLEEP_ACTION=hibernate.
SOCK=$WORK/torpord.sock
fresh_sysroot
s2h_config "hibernate_delay = 0"
"$TORPORD" --config "$CONF" --plugin-dir "$TORPOR_PLUGINDIR" --socket "$SOCK" \
	>"$WORK/torpord.log" 2>&1 &
DPID=$!
trap 'kill "$DPID" 2>/dev/null; wait "$DPID" 2>/dev/null; rm -rf "$WORK"' EXIT
for _ in $(seq 200); do
	"$TORPOR" -q --socket "$SOCK" status >/dev/null 2>&1 && break
	sleep 0.05
done
t_run "through torpord" "$TORPOR" --config "$CONF" --plugin-dir "$TORPOR_PLUGINDIR" \
	--socket "$SOCK" suspend-then-hibernate
expect_rc 0 "through torpord"
grep -q 'running directly' "$ERR" && fail "torpord: the step ran directly"
expect_calls "torpord" "pre suspend-then-hibernate hibernate" \
	"post suspend-then-hibernate hibernate"
grep -q 'sim: poweroff' "$WORK/torpord.log" || fail "torpord did not hibernate: $(cat "$WORK/torpord.log")"
t_run "torpord: resume" torpor_resume
expect_rc 0 "torpord: resume"
t_run "bad sleep member" python3 "$(dirname "$0")/torpord-client.py" "$SOCK" \
	--request '{"v": 1, "request": "hibernate", "sleep": "nap"}'
grep -q 'sleep: not one of hibernate, suspend-then-hibernate' "$OUT" "$ERR" ||
	fail "torpord accepted sleep = nap"
kill "$DPID"; wait "$DPID" 2>/dev/null

# --- refused before anything sleeps ------------------------------------
refused() {	# refused WHAT REGEX ARGS...
	local what=$1 re=$2; shift 2
	t_run "$what" torpor suspend-then-hibernate --direct "$@"
	expect_rc 1 "$what"
	expect_err "$re" "$what: the reason"
	[ "$(cat "$STATE" 2>/dev/null)" = mem ] && fail "$what: it suspended"
	[ -s "$calls" ] && fail "$what: hooks ran"
	no_hibernation "$what"
}
s2h_config
for bad in abc 5x -3 "" 99999999999; do
	fresh_sysroot
	refused "--delay '$bad'" "--delay '$bad': expected seconds" --delay "$bad"
done
fresh_sysroot
s2h_config "hibernate_delay = 2h"
t_run "hibernate_delay = 2h" torpor suspend-then-hibernate --direct
expect_rc 1 "[torpor] hibernate_delay takes seconds"
expect_err "hibernate_delay" "the bad key is named"
s2h_config
fresh_sysroot
rm -rf "$SYSROOT/sys/class/rtc"
refused "no RTC" "no RTC wake alarm at .*/sys/class/rtc/rtc0/wakealarm" --delay 3
fresh_sysroot
echo "disk" >"$STATE"
refused "no suspend state" "cannot suspend: .*/sys/power/state offers 'disk', none of SuspendState= 'mem standby freeze'" --delay 3
fresh_sysroot
t_run "--delay elsewhere" torpor status --delay 3
expect_rc 1 "--delay with another command"
expect_err "belongs to 'suspend-then-hibernate'" "--delay elsewhere: the reason"

finish
