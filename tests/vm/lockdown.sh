# SPDX-License-Identifier: GPL-2.0-or-later
#
# The lockdown case of the VM suite (sourced by run-case.sh).  One boot
# with `lockdown=integrity` on the kernel command line: the kernel refuses
# /dev/snapshot with EPERM as it does under Secure Boot, and `torpor
# hibernate` must say "hibernation is disabled by kernel lockdown"
# (read from /sys/kernel/security/lockdown), exit non-zero, write no
# image and leave the marker running.

lockdown_case() {
	local log=$logdir/boot1.log token
	boot 1 "$MEM" 50 "lockdown=integrity"
	has 1 '^[0-9.]+ MARKER pid=' || fail "the marker did not start"
	token=$(field 1 '^[0-9.]+ MARKER pid=' token)
	has 1 'Kernel is locked down from command line|lockdown: .*integrity|Lockdown: ' ||
		note "the kernel said nothing about lockdown at boot"
	has 1 'VM: torpor-resume exit 0' ||
		fail "torpor-resume did not exit 0 on an empty disk under lockdown"
	has 1 'hibernation is disabled by kernel lockdown \(integrity mode' ||
		fail "torpor hibernate did not name the lockdown: $(grep -h 'torpor' "$log" | tail -n 3)"
	has 1 'VM: hibernate exit 0' && fail "torpor hibernate exited 0 under lockdown"
	has 1 'VM: hibernate exit [1-9]' || fail "torpor hibernate did not return"
	has 1 "MARKER-AFTER .*token=$token " || fail "the marker is not running afterwards"
	[ "$(disk_state)" = none ] || fail "an image was written under lockdown"
	has 1 'VM: power off' || fail "the boot did not reach the power-off"
	note "$(grep -h -m1 'hibernation is disabled' "$log" | cut -d' ' -f2-)"
	echo "VM-TIMING $case_name refused" | tee "$logdir/timing.txt"
}
