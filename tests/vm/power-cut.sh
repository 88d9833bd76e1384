# SPDX-License-Identifier: GPL-2.0-or-later
#
# The power-cut case of the VM suite (sourced by run-case.sh, which sets the
# disk, the kernel, the initramfs and the helpers boot, has, field, fail).
#
# One disk image, one swap partition.  Each cut: boot the guest, start the
# marker and `torpor hibernate --direct -v`, and kill QEMU (SIGKILL: the
# power goes, nothing is flushed by the guest) at a random point: a random
# tenth of the image's stream (from torpor's progress lines) plus a random
# delay, or a random delay after "VM: hibernate start"; then a check boot.  The check boot must never
# resume a partial image: either the image was complete (QEMU had already
# powered off, or the cut came after the commit) and the marker of the cut
# boot comes back with its token, or torpor-resume finds no image, the
# boot goes on, the swap signature is SWAPSPACE2 and swapon works.  The
# next cut boot keeps that swap area (no mkswap) and must hibernate again.
# A last uncut cycle shows that hibernation still works afterwards.
#
# The cut points come from a seed printed in the log: TORPOR_VM_SEED=N
# replays a run, TORPOR_VM_CUTS=N sets the number of real cuts (default 12;
# a round where QEMU had powered off before the cut does not count).

# boot_cut N TENTH EXTRA_MS MKSWAP: a hibernating boot (torpor -v prints a
# progress line per tenth of the stream), cut EXTRA_MS after the line for
# TENTH tenths (1..10: "hibernate: 10%" .. "hibernate: 100%", the last one
# just before the commit), or after "VM: hibernate start" for 0 (around
# the freeze and the snapshot), or not at all for "none".  The guest
# writes to the serial port as it goes, so the host sees the lines in
# time.  Sets cut_state to "cut" or "exited" (QEMU had ended by itself).
# A cut boot that stopped dead before its cut (tests/vm/qemu-lib.sh: no
# output for its last 60 s, ended by the time-out) is booted once more
# from the disk as it was, as qemu_boot does for the other boots; its log
# is kept as .stopped and scripts/test names it.
boot_cut() {
	local before=$disk.before
	cp --sparse=always "$disk" "$before" || { fail "cut $1: cannot copy the disk"; return 0; }
	boot_cut_once "$@"
	if [ "$cut_state" = exited ] && grep -q 'terminating on signal' "$logdir/bootcut$1.log" &&
	   guest_stopped "$logdir/bootcut$1.log" $((90 * scale)); then
		echo "VM-RETRY $case_name: cut $1: the guest stopped dead (bootcut$1.log, -smp $vm_smp; log kept as bootcut$1.log.stopped): booting it again from the disk as it was"
		mv "$logdir/bootcut$1.log" "$logdir/bootcut$1.log.stopped"
		mv -f "$before" "$disk"
		boot_cut_once "$@"
	fi
	rm -f "$before"
}

boot_cut_once() {
	local n=$1 tenth=$2 extra=$3 mk=$4 log=$logdir/bootcut$1.log
	local start pipe qpid i trigger pidfile=$logdir/qemu.pid
	local limit=$((90 * scale))
	local append="console=ttyS0 quiet loglevel=5 panic=-1 oops=panic no_timer_check"
	append="$append torpor.case=$case_name torpor.boot=1 resume=$dev"
	append="$append torpor.swap=$dev torpor.mkswap=$mk torpor.verbose=1"
	case $tenth in
	0) trigger='VM: hibernate start' ;;
	none) trigger= ;;
	*) trigger="hibernate: ${tenth}0% " ;;
	esac
	rm -f "$pidfile"
	start=${EPOCHREALTIME/./}
	( timeout -k 5 "$limit" qemu-system-x86_64 \
		-machine pc,accel=tcg -cpu qemu64 -m "$MEM" -smp "$vm_smp" \
		-nodefaults -no-reboot -display none -monitor none \
		-serial stdio -net none -pidfile "$pidfile" \
		-kernel "$kernel" -initrd "$initrd" -append "$append" \
		-drive "file=$disk,if=virtio,format=raw" \
		</dev/null 2>&1 | stamp_lines "$start" >"$log" ) &
	pipe=$!
	cut_state=exited
	if [ -n "$trigger" ]; then
		i=0
		while ! grep -qF -- "$trigger" "$log" 2>/dev/null; do
			kill -0 "$pipe" 2>/dev/null || break
			[ "$i" -lt $((limit * 20)) ] || break
			sleep 0.05
			i=$((i + 1))
		done
		if grep -qF -- "$trigger" "$log"; then
			sleep "$((extra / 1000)).$(printf '%03d' $((extra % 1000)))"
			qpid=$(cat "$pidfile" 2>/dev/null)
			if [ -n "$qpid" ] && kill -KILL "$qpid" 2>/dev/null; then
				cut_state=cut
			fi
		fi
	fi
	wait "$pipe"
	grep -q 'VM: hibernate start' "$log" ||
		fail "cut $n: the guest did not start hibernating: $(grep -h '^[0-9.]* VM:' "$log" | tail -n 3)"
	trouble=$(kernel_trouble "$log" 'WARNING: ') &&
		fail "cut $n: kernel trouble: $(sed -n "${trouble%%:*},+3p" "$log")"
	return 0
}

# check_boot N: the boot after cut N (see the top of this file).  Sets
# check_result to "resumed" or "fresh".
check_boot() {
	local n=$1 b=check$1 token r
	token=$(grep -E -m1 '^[0-9.]+ MARKER pid=' "$logdir/bootcut$n.log" |
		tr ' ' '\n' | sed -n 's/^token=//p')
	boot "$b" "$MEM" 40 ""
	if has "$b" 'MARKER-AFTER'; then
		check_result=resumed
		[ -n "$token" ] && has "$b" "MARKER-AFTER .*token=$token " ||
			fail "check $n: resumed a marker that is not the cut boot's (token $token)"
		has "$b" 'VM: hibernate exit 0' ||
			fail "check $n: the resumed hibernate did not exit 0"
		[ "$cut_state" = cut ] ||
			note "cut $n: the hibernation had completed; its image was resumed"
	else
		check_result=fresh
		[ "$cut_state" = cut ] ||
			fail "check $n: the hibernation completed (QEMU powered off) but its image was not resumed"
		r=$(torpor_resume_rc "$b")
		[ "$r" = 0 ] ||
			fail "check $n: torpor-resume exit '$r' after a cut, wanted 0 (no image): $(grep -h 'torpor-resume' "$logdir/boot$b.log" | head -n 3)"
		has "$b" 'VM: no image, normal boot' ||
			fail "check $n: no normal boot after the cut"
	fi
	has "$b" "VM: swap signature 'SWAPSPACE2'" ||
		fail "check $n: the swap signature is not SWAPSPACE2 after the cut"
	has "$b" 'VM: swapon .* ok' || [ "$check_result" = resumed ] ||
		fail "check $n: swapon failed after the cut"
	return 0
}

# last_words N: the last line torpor printed in cut boot N (a progress
# line says how far the stream had got).
last_words() {
	grep -E '^[0-9.]+ (torpor|hibernate|VM: hibernate)' "$logdir/bootcut$1.log" |
		tail -n 1 | cut -d' ' -f2-
}

power_cuts() {
	local seed=${TORPOR_VM_SEED:-$(( $(date +%s) % 32768 ))}
	local cuts=${TORPOR_VM_CUTS:-12} n tenth extra at mk=1 resumed=0 fresh=0
	note "power cuts: seed=$seed cuts=$cuts (replay: TORPOR_VM_SEED=$seed)"
	RANDOM=$seed
	# Rounds go on until $cuts of them were real cuts (a cut that comes
	# after QEMU powered off by itself is none), then one uncut round.
	# On a quiet host about a third of the cuts come too late (the last
	# tenths and the commit take ~100 ms): up to 3 x $cuts rounds.
	local round=0 real=0 last=0
	while [ "$last" = 0 ]; do
		round=$((round + 1))
		n=$round
		# Where: a tenth of the stream (0: before it), and up to
		# 300 ms more (2 s around the freeze).
		tenth=$((RANDOM % 10))
		extra=$((RANDOM % 300))
		[ "$tenth" = 0 ] && extra=$((RANDOM % 2000))
		# The last round is not cut: hibernation still works.
		if [ "$real" -ge "$cuts" ] || [ "$round" -gt $((cuts * 3)) ]; then
			tenth=none
			last=1
		fi
		boot_cut "$n" "$tenth" "$extra" "$mk"
		mk=0
		case $tenth in
		0) at="'hibernate start'" ;;
		none) at="nothing (no cut)" ;;
		*) at="the ${tenth}0% line" ;;
		esac
		note "round $n: $extra ms after $at: $cut_state; last line: $(last_words "$n"); disk: $(disk_state)"
		check_boot "$n"
		note "round $n: check boot: $check_result"
		if [ "$last" = 0 ]; then
			[ "$cut_state" = cut ] && real=$((real + 1))
			case $check_result in
			resumed) resumed=$((resumed + 1)) ;;
			fresh) fresh=$((fresh + 1)) ;;
			esac
		elif [ "$check_result" != resumed ]; then
			fail "the uncut hibernation after the cuts did not resume"
		fi
		[ "$failures" = 0 ] || break
	done
	[ "$real" -ge "$cuts" ] || fail "only $real real cuts in $((round - 1)) rounds"
	cuts=$real
	note "power cuts: $((round - 1)) rounds, $cuts real cuts; after them $fresh boots found no image, $resumed resumed an image that was complete"
	echo "VM-TIMING $case_name rounds $((round - 1)) cuts $cuts fresh $fresh resumed $resumed seed $seed" |
		tee "$logdir/timing.txt"
}
