# SPDX-License-Identifier: GPL-2.0-or-later
#
# The kill-thaw case of the VM suite (sourced by run-case.sh).  One boot:
# the marker starts, then `torpor hibernate --direct --test` (raw writer,
# image file in the guest's /run) is killed part-way three times by the
# kernel itself: SIGXFSZ when the image file passes a size limit (ulimit
# -f), in the middle of the write, while every other process is frozen.
# No process could send that signal then: they are all frozen.
#
# Each time: torpor died of the signal after its stream had started; the
# guest's init went on (the kernel thawed the processes when the killed
# process's /dev/snapshot was closed: kernel/power/user.c,
# snapshot_release); `torpor verify` finds no image; no kernel WARNING
# (boot checks that).  Afterwards an unkilled `--test` cycle works and the
# marker started before the kills answers with its token.
# TORPOR_VM_SEED=N replays the limits.

kill_thaw() {
	local seed=${TORPOR_VM_SEED:-$(($(date +%s) % 32768))} kills=() k n
	RANDOM=$seed
	# The stored image is about 40 MiB: kill between 2 and 30 MiB.
	for n in 1 2 3; do
		kills+=($((2048 + RANDOM % 28672)))
	done
	k=$(IFS=,; echo "${kills[*]}")
	note "kills at $k KiB of image file (seed=$seed, TORPOR_VM_SEED=$seed replays)"
	boot 1 "$MEM" 90 "torpor.kill=$k"
	has 1 '^[0-9.]+ MARKER pid=' || fail "the marker did not start"
	local token
	token=$(field 1 '^[0-9.]+ MARKER pid=' token)
	local log=$logdir/boot1.log
	n=$(grep -c 'VM: killed hibernate exit' "$log")
	[ "$n" = 3 ] || fail "$n of 3 killed hibernations came back"
	# 153: killed by SIGXFSZ (128 + 25).
	n=$(grep -c 'VM: killed hibernate exit 153' "$log")
	[ "$n" = 3 ] || fail "only $n of 3 hibernations died of SIGXFSZ: $(grep 'killed hibernate' "$log")"
	# The stream had started before each kill: a progress line between
	# "kill at" and the exit.
	n=$(awk '/VM: kill at/ { p = 0 } /hibernate( \(test\))?: [0-9]+%/ { p = 1 }
		 /VM: killed hibernate exit/ { if (p) c++ } END { print c + 0 }' "$log")
	[ "$n" = 3 ] || fail "only $n of 3 kills came after the stream had started"
	n=$(grep -c 'verify: no image found' "$log")
	[ "$n" = 3 ] || fail "verify found an image after $((3 - n)) of 3 kills"
	n=$(grep -c 'VM: verify exit 0' "$log")
	[ "$n" = 3 ] || fail "verify did not exit 0 after every kill"
	has 1 'VM: hibernate exit 0' || fail "the hibernate --test after the kills did not exit 0"
	has 1 "MARKER-AFTER .*token=$token " ||
		fail "the marker started before the kills did not answer (still frozen?)"
	has 1 'VM: power off' || fail "the boot did not reach the power-off"
	grep -E 'VM: kill at|hibernate( \(test\))?: [0-9]+%|VM: killed|VM: image file' "$log" |
		cut -d' ' -f2- | awk '/VM: kill at/ { if (l) print l; l = $0; last = "0%"; next }
			/%/ { match($0, /[0-9]+%/); last = substr($0, RSTART, RLENGTH) }
			/VM: killed/ { l = l ", stream past " last ", " $0 }
			/VM: image file/ { l = l ", " $0 } END { if (l) print l }' |
		while IFS= read -r line; do note "$line"; done
	echo "VM-TIMING $case_name kills 3 at $k KiB seed $seed" | tee "$logdir/timing.txt"
}
