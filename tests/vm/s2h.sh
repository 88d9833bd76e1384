# SPDX-License-Identifier: GPL-2.0-or-later
# The cases that suspend to RAM (sourced by run-case.sh).  Boot 1 suspends
# to RAM (S3):
#   suspend-then-hibernate        with the RTC's alarm $s2h seconds ahead:
#                                 the alarm wakes the guest and torpor
#                                 hibernates; boot 2 resumes the marker
#   suspend-then-hibernate-early  the same, but the host wakes the guest
#                                 through QMP (system_wakeup) long before
#                                 the alarm: torpor stays up, the marker
#                                 runs on, no image (run as --test's boots
#                                 are)
#   suspend-both                  after = suspend: the image written, the
#                                 guest suspends; the host wakes it through
#                                 QMP: torpor discards the image and the
#                                 marker runs on (as --test's boots)

# S3 must be offered to the guest (PIIX4's _S3 package; QEMU 7.2 offers it
# by default, later machine types may not).
qemu_extra=(-global PIIX4_PM.disable_s3=0)

# The bzImage, not the vmlinux the other cases boot through its PVH entry:
# a PVH-booted guest does not survive S3 here (QEMU 7.2, TCG, Debian's
# 6.1 kernel).  SeaBIOS's debug console shows "In resume (status=254)" and
# "Jump to resume vector (991f0)", then the machine resets (QEMU exits
# under -no-reboot) instead of the kernel's "ACPI: PM: Waking up from
# system sleep state S3"; booted through the bzImage the same guest wakes.
# It boots in about 11 s instead of 4 (60 s at a load of 10): the timeouts
# are tripled.
kernel=/boot/vmlinuz-$(cat "$guest/kernel.release")
[ -f "$kernel" ] || { echo "vm: FAIL $case_name: no $kernel" >&2; exit 1; }
scale=$((scale * 3))

# wake_early LINE: wake the suspended guest through QMP once boot 1 says
# LINE (that it suspends).
wake_early() {
	local i
	for i in $(seq $((240 * scale))); do
		grep -qF -- "$1" "$logdir/boot1.log" 2>/dev/null && break
		sleep 0.5
	done
	sleep 3
	python3 - "$logdir/qmp.sock" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(20)
s.connect(sys.argv[1])
f = s.makefile("rw")
f.readline()
for cmd in ("qmp_capabilities", "system_wakeup"):
    f.write(json.dumps({"execute": cmd}) + "\n")
    f.flush()
    print("qmp:", cmd, f.readline().strip())
# The WAKEUP event may come after the answer.
try:
    for _ in range(3):
        print("qmp:", f.readline().strip())
except OSError:
    pass
PY
}

case "$case_name" in
suspend-then-hibernate-early) wake_line='the RTC wakes the machine in' ;;
suspend-both) wake_line='image written: suspending to RAM' ;;
*) wake_line= ;;
esac
if [ -n "$wake_line" ]; then
	rm -f "$logdir/qmp.sock"
	qemu_extra+=(-qmp "unix:$logdir/qmp.sock,server=on,wait=off")
	wake_early "$wake_line" >"$logdir/qmp.log" 2>&1 &
fi

# after = suspend: the image was written before the suspend, discarded
# after the wake.
check_both_boot1() {
	has 1 'hibernate: [0-9]+ pages' || fail "boot 1: no image was written"
	grep -q '"event": "WAKEUP"' "$logdir/qmp.log" ||
		fail "QMP's system_wakeup did not wake the guest: $(cat "$logdir/qmp.log")"
	has 1 'woke up from suspend to RAM: discarding the image on disk' ||
		fail "boot 1: torpor did not say it woke from RAM and discarded the image"
}

check_s2h_early() {
	has 1 'VM: hook pre suspend-then-hibernate suspend$' ||
		fail "boot 1: no pre hook with SYSTEMD_SLEEP_ACTION=suspend"
	has 1 'VM-DMESG .*PM: suspend entry \(deep\)' ||
		fail "boot 1: the kernel never entered S3"
	grep -q '"event": "WAKEUP"' "$logdir/qmp.log" ||
		fail "QMP's system_wakeup did not wake the guest: $(cat "$logdir/qmp.log")"
	has 1 'torpor: awake after [0-9.]+ s, before the RTC alarm' ||
		fail "boot 1: torpor did not see an early wake"
	has 1 'woken up before the RTC alarm: staying up' ||
		fail "boot 1: torpor did not stay up"
	has 1 'VM: hook post suspend-then-hibernate suspend$' ||
		fail "boot 1: no post hook after the suspend"
	has 1 'suspend-then-hibernate hibernate$' &&
		fail "boot 1: the hibernation step ran after an early wake"
	note "woken early: $(grep -h -m1 'torpor: awake after' "$logdir/boot1.log")"
}

check_s2h_boot1() {
	local t_sus t_woke
	[ "$case_name" = suspend-then-hibernate-early ] && { check_s2h_early; return; }
	has 1 'VM: hook pre suspend-then-hibernate suspend$' ||
		fail "boot 1: no pre hook with SYSTEMD_SLEEP_ACTION=suspend"
	has 1 "suspending \\('mem'\\); the RTC wakes the machine in $s2h s" ||
		fail "boot 1: torpor did not suspend with the alarm $s2h s ahead"
	# The kernel disables the alarm once it has rung (or torpor saw the
	# time asleep reach the delay first: distro-case.sh says why).
	has 1 'torpor: the RTC alarm has rung: awake after' ||
		awake_after_delay 1 "$s2h" ||
		fail "boot 1: the RTC alarm had not rung when the guest woke"
	has 1 'the RTC alarm woke the machine: hibernating' ||
		fail "boot 1: torpor did not see the RTC alarm wake the guest: $(grep -h -E 'torpor|woken|suspend' "$logdir/boot1.log" | head -8)"
	has 1 'VM: hook post suspend-then-hibernate suspend$' ||
		fail "boot 1: no post hook after the suspend"
	has 1 'VM: hook pre suspend-then-hibernate hibernate$' ||
		fail "boot 1: no pre hook with SYSTEMD_SLEEP_ACTION=hibernate"
	# A figure, not a verdict: host seconds asleep.
	t_sus=$(ts 1 'the RTC wakes the machine in')
	t_woke=$(ts 1 'the RTC alarm woke the machine')
	note "suspended at ${t_sus}s, awake and hibernating at ${t_woke}s (host time)"
}

check_s2h_boot2() {
	has 2 'VM-DMESG .*PM: suspend entry \(deep\)' ||
		fail "boot 2: the kernel of boot 1 never entered S3 (PM: suspend entry (deep))"
	has 2 'VM-DMESG .*PM: suspend exit' ||
		fail "boot 2: the kernel of boot 1 never left suspend to RAM"
	has 2 'VM: hook post suspend-then-hibernate hibernate$' ||
		fail "boot 2: no post hook after the resume"
}
