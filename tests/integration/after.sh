#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# [torpor] after = and power_off = on the simulated snapshot device, which
# records the way the cycle left: poweroff and reboot leave the image for
# torpor-resume; suspend (suspend to both) wakes up from RAM at once, so
# the image on disk is stale and must be discarded.
. "$(dirname "$0")/lib.sh"

# cycle AFTER: hibernate with after = AFTER, then resume.
cycle() {
	write_config sim:8M lzo "after = $1"
	t_run "hibernate after=$1" torpor hibernate --direct
	expect_rc 0 "hibernate after=$1"
}

cycle poweroff
expect_err 'sim: poweroff' "after=poweroff took the power-off path"
t_run "resume after poweroff" torpor_resume
expect_rc 0 "resume after poweroff"
expect_out 'restored and verified' "the image resumed after poweroff"

cycle reboot
expect_err 'rebooting' "after=reboot says it reboots"
expect_err 'sim: reboot' "after=reboot took the reboot path"
if grep -q 'sim: poweroff' "$ERR"; then fail "after=reboot also powered off"; fi
t_run "resume after reboot" torpor_resume
expect_rc 0 "resume after reboot"
expect_out 'restored and verified' "the image resumed after reboot"

cycle suspend
expect_err 'sim: suspend to RAM, woke up' "after=suspend suspended to RAM"
expect_err 'discarding the image' "after=suspend discards the stale image"
if grep -q 'sim: poweroff' "$ERR"; then fail "after=suspend powered off"; fi
t_run "resume after suspend" torpor_resume
expect_rc 0 "resume after suspend"
expect_out 'no image found' "no image is left after waking from RAM"

# --after overrides the file for one cycle (the hybrid-sleep drop-in).
write_config sim:8M lzo "after = poweroff"
t_run "hibernate --after=suspend" torpor hibernate --direct --after=suspend
expect_rc 0 "hibernate --after=suspend"
expect_err 'sim: suspend to RAM, woke up' "--after=suspend overrides after = poweroff"
if grep -q 'sim: poweroff' "$ERR"; then fail "--after=suspend powered off"; fi
t_run "hibernate --after reboot" torpor hibernate --direct --after reboot
expect_rc 0 "hibernate --after reboot"
expect_err 'sim: reboot' "--after reboot took the reboot path"
t_run "resume after --after reboot" torpor_resume
expect_rc 0 "resume after --after reboot"
t_run "hibernate --after=halt" torpor hibernate --direct --after=halt
expect_rc 1 "hibernate --after=halt"
expect_err "--after 'halt': expected poweroff, reboot or suspend" "a wrong --after is named"
t_run "status --after" torpor status --after=suspend
expect_rc 1 "--after with another command"
expect_err '^torpor: status: --after belongs to .hibernate.$' "--after belongs to hibernate"

# power_off = shutdown is accepted and shown; a bad value names its line.
write_config sim:8M lzo "power_off = shutdown"
t_run "config power_off" torpor config
expect_rc 0 "config with power_off = shutdown"
expect_out '^power_off = shutdown' "config shows power_off"
write_config sim:8M lzo "power_off = halt"
t_run "bad power_off" torpor config
expect_rc 1 "config with power_off = halt"
expect_err 'torpor.conf:5: .*power_off' "the bad power_off names its line"

finish
