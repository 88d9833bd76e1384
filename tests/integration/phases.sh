#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Phase times (issue 10): `torpor hibernate -v` prints, before the power-off,
# the phases up to the commit, its peak RSS and what the process holds
# before the freeze; back from the cycle, its own phases; `torpor-resume -v`
# prints its phases and its peak RSS before the restore.  Without -v none
# of this is printed.  A cycle that aborts prints the phases it went
# through.
. "$(dirname "$0")/lib.sh"

num='[0-9]+\.[0-9]{3}'
rm -f "$IMAGE"
write_config "sim:$((2000 * 4096)):5" "lzo"
t_run hib torpor hibernate --direct -v
expect_rc 0 "hibernate -v"
expect_err "^hibernate: phases \(s\): program-start $num, start-up $num, freeze $num, snapshot $num, write $num, sync $num\$" \
	"hibernate -v: the phases up to the commit, before the power-off"
expect_err "^hibernate: peak RSS [1-9][0-9]* KiB\$" \
	"hibernate -v: the process's peak memory, before the power-off"
expect_err "^hibernate: this process before the freeze: .*RssAnon [0-9]+ KiB" \
	"hibernate -v: the process's memory before the freeze"
expect_err "^torpor: [1-9][0-9]* writes: $num s in the writer's write\(\), $num s of them waited for( \(writer thread\))?\$" \
	"hibernate -v: the time spent in the writer's write() calls"
expect_err "^torpor: this thread: $num s taking pages from the source, $num s handing chunks to the pool( \(the chain and the CRC, inline\))?, $num s waiting for the workers, $num s framing chunks \(waits for the writer included\); 0 of 63 chunks read straight into the write buffers\$" \
	"hibernate -v: where the streaming thread's time went (lzo: no chunk in place)"
expect_err "^torpor: CPU over the stream's $num s: the process $num s, this thread $num s, [0-9]+ worker threads? $num s\$" \
	"hibernate -v: the stream's CPU time"
expect_err "^hibernate \(this process\): phases \(s\): program-start $num, start-up $num, .*power-off $num, resumed $num\$" \
	"hibernate -v: its own phases once back"
t_run res torpor_resume -v
expect_rc 0 "resume -v"
expect_out "^resume: 2000 pages restored and verified" "resume -v: restored"
expect_err "^resume: phases \(s\): program-start $num, header $num, read\+decode $num\$" \
	"resume -v: the phases before the restore"
expect_err "^resume: peak RSS [1-9][0-9]* KiB\$" \
	"resume -v: the process's peak memory, before the restore"

# Without filters the pages are read straight into the write buffers:
# every chunk of 32 pages that lies in one 1 MiB buffer with its frame
# (seven of each eight), and the image restores and verifies.
for threads in 0 2; do
	for wt in no yes; do
		rm -f "$IMAGE"
		write_config "sim:$((2000 * 4096)):5" "" "threads = $threads" "write_thread = $wt"
		t_run hib torpor hibernate --direct -v
		expect_rc 0 "hibernate -v, no filters, threads $threads, write_thread $wt"
		expect_err "; 5[0-9] of 63 chunks read straight into the write buffers\$" \
			"no filters, threads $threads, write_thread $wt: the chunks in place"
		t_run res torpor_resume -v
		expect_rc 0 "resume, no filters, threads $threads, write_thread $wt"
		expect_out "^resume: 2000 pages restored and verified" \
			"no filters, threads $threads, write_thread $wt: restored"
	done
done

# Quiet without -v.
rm -f "$IMAGE"
write_config "sim:$((2000 * 4096)):5" "lzo"
t_run hib torpor hibernate --direct
expect_rc 0 "hibernate"
grep -q 'phases' "$ERR" && fail "hibernate without -v printed phase times"
t_run res torpor_resume
expect_rc 0 "resume"
grep -q 'phases' "$ERR" && fail "resume without -v printed phase times"

# An aborted cycle (the raw writer's device does not exist: its
# initialise() fails in the start-up phase) says how far it went.
rm -f "$IMAGE"
IMAGE=$WORK/missing/image
write_config "sim:$((2000 * 4096)):5" "lzo" 2>/dev/null
t_run hib torpor hibernate --direct -v
[ "$rc" != 0 ] || fail "hibernate to a missing raw device did not fail"
expect_err "^hibernate \(aborted\): phases \(s\): program-start $num, start-up $num, resumed $num\$" \
	"an aborted hibernate -v: start-up, then the clean-up"
finish
