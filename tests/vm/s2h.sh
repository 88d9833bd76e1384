# SPDX-License-Identifier: GPL-2.0-or-later
# The suspend-then-hibernate case's checks (sourced by run-case.sh): boot 1
# suspends to RAM (S3) with the RTC's alarm $s2h seconds ahead; the alarm
# wakes the guest and torpor hibernates; boot 2 resumes the marker.

# S3 must be offered to the guest (PIIX4's _S3 package; QEMU 7.2 offers it
# by default, later machine types may not).
qemu_extra=(-global PIIX4_PM.disable_s3=0)

# The bzImage, not the vmlinux the other cases boot through its PVH entry:
# a PVH-booted guest does not survive S3 here (QEMU 7.2, TCG, Debian's
# 6.1 kernel).  SeaBIOS's debug console shows "In resume (status=254)" and
# "Jump to resume vector (991f0)", then the machine resets (QEMU exits
# under -no-reboot) instead of the kernel's "ACPI: PM: Waking up from
# system sleep state S3"; booted through the bzImage the same guest wakes.
# It boots in about 11 s instead of 4, so the timeouts are doubled.
kernel=/boot/vmlinuz-$(cat "$guest/kernel.release")
[ -f "$kernel" ] || { echo "vm: FAIL $case_name: no $kernel" >&2; exit 1; }
scale=$((scale * 2))

check_s2h_boot1() {
	local t_sus t_woke
	has 1 'VM: hook pre suspend-then-hibernate suspend$' ||
		fail "boot 1: no pre hook with SYSTEMD_SLEEP_ACTION=suspend"
	has 1 "suspending to RAM; the RTC wakes the machine in $s2h s" ||
		fail "boot 1: torpor did not suspend with the alarm $s2h s ahead"
	# The kernel disables the alarm once it has rung.
	has 1 'torpor: the RTC alarm has rung: awake after' ||
		fail "boot 1: the RTC alarm had not rung when the guest woke"
	has 1 'the RTC alarm woke the machine: hibernating' ||
		fail "boot 1: torpor did not see the RTC alarm wake the guest: $(grep -h -E 'torpor|woken|suspend' "$logdir/boot1.log" | head -8)"
	has 1 'VM: hook post suspend-then-hibernate suspend$' ||
		fail "boot 1: no post hook after the suspend"
	has 1 'VM: hook pre suspend-then-hibernate hibernate$' ||
		fail "boot 1: no pre hook with SYSTEMD_SLEEP_ACTION=hibernate"
	# A figure, not a verdict: host seconds asleep.
	t_sus=$(ts 1 'suspending to RAM;')
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
