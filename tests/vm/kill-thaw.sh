# SPDX-License-Identifier: GPL-2.0-or-later
#
# The kill-thaw case of the VM suite (sourced by run-case.sh).  One boot:
# the marker starts, then `torpor hibernate --direct --test -v` (raw
# writer, zlib, so that the stream takes several seconds of CPU under TCG)
# is killed part-way three times by the kernel itself: RLIMIT_CPU (ulimit
# -t) sends SIGXCPU and then SIGKILL after S seconds of CPU, while every
# other process is frozen.  No process could send a signal then: they are
# all frozen.
#
# Each time: torpor died of the signal; the guest's init went on (the
# kernel thaws the processes when the killed process's /dev/snapshot is
# closed: kernel/power/user.c, snapshot_release); `torpor verify` finds no
# image; no kernel WARNING but one: when the kill comes in the stream, the
# worker threads torpor started after the freeze carry the freezer's
# PF_SUSPEND_TASK flag (threads inherit it) and are still dying when the
# kernel thaws, so thaw_processes warns (kernel/power/process.c).  No
# program can avoid that under SIGKILL short of running single-threaded
# while frozen; the case counts those warnings and fails on any other.  At least one kill came
# inside the stream (after a progress line).  Afterwards an unkilled
# `--test` cycle works, the marker started before the kills answers with
# its token, and the disk holds no image.  TORPOR_VM_SEED=N replays.

kill_thaw() {
	local seed=${TORPOR_VM_SEED:-$(($(date +%s) % 32768))} kills=() k n
	local log=$logdir/boot1.log token inside
	RANDOM=$seed
	for n in 1 2 3; do
		kills+=($((2 + RANDOM % 4)))
	done
	k=$(IFS=,; echo "${kills[*]}")
	note "kills after $k s of CPU (seed=$seed, TORPOR_VM_SEED=$seed replays)"
	warn_ok='WARNING: CPU: [0-9]+ PID: [0-9]+ at kernel/power/process.c:[0-9]+ thaw_processes'
	# A 64 MiB marker: an image of about 160 MiB, whose cycle takes
	# about 8 s of CPU at 2 vCPUs (the 110 MiB of the default marker
	# took under 6 s, and a kill at 6 s came after the cycle had ended).
	boot 1 "$MEM" 150 "torpor.kill=$k torpor.marker=64"
	warn_ok=
	has 1 '^[0-9.]+ MARKER pid=' || fail "the marker did not start"
	token=$(field 1 '^[0-9.]+ MARKER pid=' token)
	n=$(grep -c 'VM: killed hibernate exit' "$log")
	[ "$n" = 3 ] || fail "$n of 3 killed hibernations came back"
	# 152: SIGXCPU (128 + 24), 137: SIGKILL (128 + 9).
	n=$(grep -cE 'VM: killed hibernate exit (152|137)$' "$log")
	[ "$n" = 3 ] || fail "only $n of 3 hibernations were killed: $(grep 'killed hibernate' "$log")"
	# A progress line between "kill at" and the exit: inside the stream.
	inside=$(awk '/VM: kill at/ { p = 0 } /hibernate( \(test\))?: [0-9]+%/ { p = 1 }
		 /VM: killed hibernate exit/ { if (p) c++ } END { print c + 0 }' "$log")
	[ "$inside" -ge 1 ] || fail "no kill came inside the stream"
	n=$(grep -c 'verify: no image found' "$log")
	[ "$n" = 3 ] || fail "verify found an image after $((3 - n)) of 3 kills"
	n=$(grep -c 'VM: verify exit 0' "$log")
	[ "$n" = 3 ] || fail "verify did not exit 0 after every kill"
	has 1 'VM: hibernate exit 0' || fail "the hibernate --test after the kills did not exit 0"
	has 1 "MARKER-AFTER .*token=$token " ||
		fail "the marker started before the kills did not answer (still frozen?)"
	has 1 'VM: power off' || fail "the boot did not reach the power-off"
	[ "$(disk_state)" = none ] || fail "an image is left on the disk"
	grep -E 'VM: kill at|hibernate( \(test\))?: [0-9]+%|VM: killed' "$log" |
		cut -d' ' -f2- | awk '/VM: kill at/ { last = "before the stream"; l = $0; next }
			/%/ { match($0, /[0-9]+%/); last = "past " substr($0, RSTART, RLENGTH) }
			/VM: killed/ { print l ", stream " last ", " $0 }' |
		while IFS= read -r line; do note "$line"; done
	local thaw_warnings
	thaw_warnings=$(grep -cE 'WARNING: .* thaw_processes' "$log")
	note "kernel warnings in thaw_processes after the kills: $thaw_warnings (tolerated, see the top of kill-thaw.sh)"
	# The unkilled cycle after the kills must not warn.
	sed -n '/VM: hibernate start/,$p' "$log" | grep -q 'WARNING: ' &&
		fail "a kernel WARNING in the unkilled cycle after the kills"
	echo "VM-TIMING $case_name kills 3 at $k s of CPU, $inside in the stream, $thaw_warnings thaw warnings, seed $seed" |
		tee "$logdir/timing.txt"
}
