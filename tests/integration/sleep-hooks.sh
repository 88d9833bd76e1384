#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The sleep-hooks plugin runs the system-sleep hooks as systemd-sleep
# would: every executable of the directory, with "pre"/"post" and the
# action, SYSTEMD_SLEEP_ACTION set; a failing or hanging hook is logged
# and never stops the hibernation.  On the simulated snapshot device.
. "$(dirname "$0")/lib.sh"

hooks=$WORK/hooks
calls=$WORK/calls
mkdir -p "$hooks"
# Two well-behaved hooks, one that fails, one that is not executable.
for h in 10-first 20-second; do
	printf '#!/bin/sh\necho "%s $1 $2 $SYSTEMD_SLEEP_ACTION" >>"%s"\n' \
		"$h" "$calls" >"$hooks/$h"
	chmod 755 "$hooks/$h"
done
printf '#!/bin/sh\nexit 3\n' >"$hooks/30-fails"
chmod 755 "$hooks/30-fails"
printf '#!/bin/sh\necho "not executable ran" >>"%s"\n' "$calls" >"$hooks/40-plain"
chmod 644 "$hooks/40-plain"

hooks_config() {	# hooks_config AFTER [EXTRA...]
	local after=$1; shift
	write_config sim:8M lzo "after = $after"
	{
		echo
		echo "[sleep-hooks]"
		echo "directory = $hooks"
		for line in "$@"; do echo "$line"; done
	} >>"$CONF"
}

hooks_config poweroff
: >"$calls"
t_run "hibernate with hooks" torpor hibernate --direct
expect_rc 0 "hibernate with hooks"
want="10-first pre hibernate hibernate
20-second pre hibernate hibernate
10-first post hibernate hibernate
20-second post hibernate hibernate"
# pre hooks run together (in any order among themselves), all before post.
got=$(head -n2 "$calls" | sort; tail -n +3 "$calls" | sort)
[ "$got" = "$want" ] || { fail "hook calls:"; cat "$calls"; }
expect_err '30-fails pre failed with exit status 3' "a failing pre hook is logged"
expect_err '30-fails post failed with exit status 3' "a failing post hook is logged"
grep -q 'not executable' "$calls" && fail "a file without the x bit ran"
t_run "resume after hooks" torpor_resume
expect_rc 0 "resume after hooks"

# Suspend to both is hybrid-sleep for the hooks.
hooks_config suspend
: >"$calls"
t_run "hybrid sleep" torpor hibernate --direct
expect_rc 0 "hybrid sleep"
grep -q '^10-first pre hybrid-sleep hybrid-sleep$' "$calls" ||
	fail "hybrid-sleep: $(cat "$calls")"

# A hook that hangs is killed after the timeout; the cycle goes on.
printf '#!/bin/sh\nexec sleep 300\n' >"$hooks/50-hangs"
chmod 755 "$hooks/50-hangs"
hooks_config poweroff "timeout = 1"
t_run "hanging hook" torpor hibernate --direct
expect_rc 0 "hibernate with a hanging hook"
expect_err '50-hangs did not finish within 1 s: killed' "the hanging hook is killed"
rm -f "$hooks/50-hangs"

# The simulated device never runs the machine's own hooks, the default
# directory, whatever path names it: the machine does not sleep.
machine_hooks=/usr/lib/systemd/system-sleep
write_config sim:8M lzo
t_run "the machine's hooks on the sim" torpor -v hibernate --direct
expect_rc 0 "hibernate with the default directory"
expect_err "the machine does not sleep \\(the snapshot is not the running kernel's\\): its own hooks in $machine_hooks are not run" \
	"the default directory is not run on the sim"
grep -q "hook(s) from $machine_hooks" "$ERR" && fail "the machine's hooks ran on the sim"
if [ -d "$machine_hooks" ]; then
	ln -s "$machine_hooks" "$WORK/alias"
	write_config sim:8M lzo "[sleep-hooks]" "directory = $WORK/alias"
	t_run "the machine's hooks by another name" torpor -v hibernate --direct
	expect_rc 0 "hibernate with the machine's hooks by another name"
	expect_err "its own hooks in $WORK/alias are not run" \
		"the machine's hooks by another name are not run on the sim"
	grep -q "hook(s) from $WORK/alias" "$ERR" && fail "the machine's hooks ran on the sim by another name"
fi

finish
