# SPDX-License-Identifier: GPL-2.0-or-later
# Shared by the VM suite's case scripts (sourced): one QEMU boot with a
# host-timestamped serial log, and the helpers that read those logs.
# The caller sets case_name, and logdir (the logs are $logdir/bootN.log)
# before it boots.

# The guest's vCPUs: 2, as on the machines people own (MTTCG runs them on
# two host threads).  A case about the one-CPU paths sets vm_smp=1;
# TORPOR_VM_SMP changes the default (debugging).
vm_smp=${TORPOR_VM_SMP:-2}

# The guest's CPU model: QEMU's qemu64 (x86-64 as of 2003: no SSE4.2, so
# a CRC32C is the table loop, emulated).  TORPOR_VM_CPU changes it, e.g.
# for perf with the instructions machines have had since about 2009.
vm_cpu=${TORPOR_VM_CPU:-qemu64}

# skip WHY: the case cannot run here (exit 77, loudly).
skip() {
	echo "***********************************************************" >&2
	echo "vm: SKIP $case_name: $*" >&2
	echo "***********************************************************" >&2
	exit 77
}
# fail WHAT: count a failure and go on; the case exits 1 at its end.
failures=0
fail() {
	echo "vm: FAIL $case_name: $*" >&2
	failures=$((failures + 1))
}
note() { echo "vm: $case_name: $*"; }

# Where a case's time goes, for scripts/test's table (scripts/time-table):
# "NAME SECONDS" lines in $logdir/steps.txt, one a step (a boot, building
# the guest, ...).  step_start NAME notes when a step began; step_end NAME
# writes its line.  qemu_boot_once writes one line a boot.
declare -A step_began=()
step_start() { step_began[$1]=${EPOCHREALTIME/./}; }
step_end() {
	local now=${EPOCHREALTIME/./} began=${step_began[$1]:-}
	[ -n "$began" ] && [ -n "${logdir:-}" ] || return 0
	step_line "$1" "$began" "$now"
	unset "step_began[$1]"
}
# step_line NAME START END (microseconds)
step_line() {
	local us=$(($3 - $2))
	printf '%s %d.%03d\n' "$1" $((us / 1000000)) $((us / 1000 % 1000)) >>"$logdir/steps.txt"
}

# Prefix every serial line with the host time since QEMU started, in
# seconds: the guest's own clocks jump across a resume, the host's do not.
stamp_lines() {
	local start=$1 line now ms
	while IFS= read -r line || [ -n "$line" ]; do
		now=${EPOCHREALTIME/./}
		ms=$(((now - start) / 1000))
		printf '%d.%03d %s\n' $((ms / 1000)) $((ms % 1000)) "${line%$'\r'}"
	done
}

# qemu_boot LOG LIMIT MEM KERNEL INITRD APPEND DISK...: one boot under
# TCG (KERNEL empty: no -kernel, the first disk's boot loader starts the
# kernel; INITRD and APPEND are then unused), the disks as /dev/vda,
# /dev/vdb..., ended by `timeout` after LIMIT
# seconds; sets boot_rc and boot_secs.  The array qemu_extra, when set,
# adds its words to QEMU's command line; vm_smp gives the vCPUs.
#
# A guest that stopped dead is booted once more (vm_retry_stopped=0: not):
# with 2 vCPUs, QEMU 7.2's TCG now and then stops a guest, the kernel's
# own hibernation as well as torpor's (seen twice in about 540 boots: no
# output for the last 117 s, or soft lockups on every vCPU).  A boot that
# timed out with its console silent for its last 60 s, or with soft
# lockups, is kept as LOG.stopped, said in a VM-RETRY line, and run again;
# a second time-out stands.
#
# So is a kernel that panicked before anything in user space wrote to the
# console, torpor-resume included: Debian's 7.2 kernel under TCG at 2 vCPUs
# now and then hits an int3 of its own code patching (text_poke) while it
# unpacks the initramfs (seen once in a normal boot).  Its log is kept as
# LOG.panicked.
#
# The retry starts from the disks as they were before the stopped boot
# (a sparse copy of each, about a second): a guest that stopped after it
# had written its image would otherwise be resumed by its own retry.
vm_retry_stopped=1
qemu_boot() {
	local why= keep= d
	if [ "$vm_retry_stopped" = 1 ]; then
		for d in "${@:7}"; do
			cp --sparse=always "$d" "$d.before" ||
				{ echo "vm: cannot keep a copy of $d for a retry" >&2
				  boot_rc=1 boot_secs=0; return 1; }
		done
	fi
	qemu_boot_once "$@"
	[ "$vm_retry_stopped" = 1 ] || return 0
	if [ "$boot_rc" = 124 ] && guest_stopped "$1" "$2"; then
		why="the guest stopped dead" keep=stopped
	elif guest_known_oops "$1"; then
		why="the kernel panicked before user space started, or took an int3 in its own text" keep=panicked
	else
		for d in "${@:7}"; do
			rm -f "$d.before"
		done
		return 0
	fi
	echo "VM-RETRY $case_name: $why ($(basename "$1"), -smp $vm_smp; log kept as $1.$keep): booting it again from the disks as they were"
	mv "$1" "$1.$keep"
	for d in "${@:7}"; do
		mv -f "$d.before" "$d"
	done
	qemu_boot_once "$@"
}

# kernel_trouble LOG [REGEX]: the first line of LOG where the kernel
# panicked, oopsed or hit a BUG (or matched REGEX too); false when none.
# A soft lockup ("BUG: soft lockup") is not one: under TCG a loaded host
# stalls a vCPU for tens of seconds now and then (seen in boots that went
# on to pass: modprobe in the booted system of the dracut guest, 22 to
# 27 s); a boot that stops for good is retried (qemu_boot) or times out.
kernel_trouble() {
	grep -n -E "Kernel panic|Oops|BUG:${2:+|$2}" "$1" | grep -v 'BUG: soft lockup' |
		head -n 1 | grep .
}

# guest_early_panic LOG: a kernel panic or oops, and before it only the
# kernel's lines (and the firmware's escape sequences).
guest_early_panic() {
	local n
	n=$(kernel_trouble "$1" | cut -d: -f1)
	[ -n "$n" ] || return 1
	! head -n $((n - 1)) "$1" | cut -d' ' -f2- |
		sed 's/\x1b\[[0-9;=?]*[A-Za-z]//g' |
		grep -vE '^[[:space:]]*$|\[ *[0-9]+\.[0-9]+\]' | grep -q .
}

# guest_text_patch_oops LOG: the kernel's first trouble is an int3 trap in
# its own text (RIP in ring 0), whenever it came: Debian unstable's 7.2 at
# 2 vCPUs under TCG now and then takes an int3 it left while patching its
# text (seen in sched_clock_cpu before user space, and in get_random_u64
# under init's clone() a second after it started).  Nothing torpor runs
# puts an int3 in the kernel's text.
guest_text_patch_oops() {
	local n
	n=$(kernel_trouble "$1" | cut -d: -f1)
	[ -n "$n" ] || return 1
	sed -n "${n}p" "$1" | grep -q 'Oops: int3' &&
		sed -n "$n,$((n + 6))p" "$1" | grep -q 'RIP: 0010:'
}

# guest_known_oops LOG: either of the two above, what a boot is retried for.
guest_known_oops() {
	guest_early_panic "$1" || guest_text_patch_oops "$1"
}

# guest_stopped LOG LIMIT: the kernel saw soft lockups or an RCU stall, or
# it did not answer the SysRq keys sent before the time-out (sysrq_before_timeout),
# or its console said nothing in the last 60 s before them (or before the
# end of a boot that ran LIMIT seconds).  A kernel that answers with its
# blocked tasks after a shorter silence is alive: its time-out stands,
# with the dump in its log (a hang of torpor's own looks like that).
guest_stopped() {
	local last sent
	# (Or an RCU stall: a vCPU stuck in the kernel, as in an int3 loop of
	# a text patch TCG got wrong, keeps the console talking every minute.)
	grep -qE 'soft lockup - CPU|rcu: INFO: rcu_(preempt|sched) detected stalls' "$1" && return 0
	sent=$(cat "$1.sysrq" 2>/dev/null)
	if [ -n "$sent" ]; then
		awk -v s="$sent" '$1 >= s && /sysrq: / { found = 1 } END { exit found }' "$1" &&
			return 0
	else
		sent=$2
	fi
	last=$(awk -v s="$sent" '$1 < s && !/terminating on signal/ { l = $1 } END { print l }' "$1")
	awk -v l="${last:-0}" -v t="$sent" 'BEGIN { exit !(t - l > 60) }'
}

# sysrq_before_timeout LOG MONITOR LIMIT: 15 s before the boot's
# time-out, the guest's keyboard gets SysRq-9, -w and -l, so that the log
# of a boot that hangs shows where (the kernel answers only when booted
# with sysrq_always_enabled: qemu_boot_once adds it); the host time of the
# first key goes to LOG.sysrq.
sysrq_before_timeout() {
	local wait=$(($3 - 15)) start=${EPOCHREALTIME/./} now
	[ "$wait" -ge 20 ] || return 0
	sleep "$wait" </dev/null >/dev/null 2>&1
	[ -S "$2" ] || return 0
	now=${EPOCHREALTIME/./}
	echo "$(((now - start) / 1000000))" >"$1.sysrq"
	SECS=2 sysrq_dumps "$2" 2>/dev/null
}

# hang_summary LOG: one line from a SysRq-w dump in LOG: each blocked
# task and the innermost torpor or kernel functions it waits in.
hang_summary() {
	awk '
	function endtask() {
		if (t != "") cur = cur (cur == "" ? "" : " ") t "[" f "]"
		t = ""
	}
	function enddump() {
		endtask()
		if (cur != "") best = cur
		cur = ""
	}
	/sysrq: Show Blocked State/ { enddump(); on = 1; next }
	!on { next }
	/sysrq: / { enddump(); on = 0; next }
	/ task:[^ ]+ +state:/ {
		endtask()
		t = $0; sub(/.* task:/, "", t); sub(/ .*/, "", t); f = ""; n = 0; next
	}
	t != "" && n < 4 {
		for (i = 2; i <= NF; i++)
			if ($i ~ /^[[:alnum:]_.]+\+0x/) {
				if ($(i - 1) == "?") break
				fn = $i; sub(/\+.*/, "", fn)
				if (fn !~ /^(__schedule|schedule|__switch_to|schedule_timeout)$/) {
					f = f (f == "" ? "" : "<") fn; n++
				}
				break
			}
	}
	END { enddump(); printf "%s", best }' "$1"
}

# vm_type_when REGEX, vm_type_text TEXT: type TEXT and Enter on the serial
# console each time REGEX appears on it (a passphrase prompt: it has no
# newline, so the raw console, LOG.raw, is watched, not LOG).
vm_type_when= vm_type_text=
# type_on_console RAW FIFO LIMIT: the typist; holds FIFO (QEMU's input)
# open until it is killed.
type_on_console() {
	local typed=0 n i
	exec 3>"$2"
	for ((i = 0; i < $3 * 4; i++)); do
		n=$(grep -aoE -- "$vm_type_when" "$1" 2>/dev/null | wc -l)
		if [ "$n" -gt "$typed" ]; then
			sleep 0.5
			printf '%s\r' "$vm_type_text" >&3
			typed=$n
		fi
		sleep 0.25
	done
	exec sleep 5
}

# monitor_send SOCKET COMMAND...: each COMMAND to QEMU's human monitor on
# the unix socket SOCKET, one after another, SECS (default 1) apart.
monitor_send() {
	python3 - "$@" <<-'EOF'
	import os, socket, sys, time
	s = socket.socket(socket.AF_UNIX)
	s.connect(sys.argv[1])
	for command in sys.argv[2:]:
	    s.sendall(command.encode() + b"\n")
	    time.sleep(float(os.environ.get("SECS", "1")))
	s.close()
	EOF
}

# sysrq_dumps SOCKET: SysRq-9 (every message to the console: the dumps
# are KERN_INFO), SysRq-w (the blocked tasks) and SysRq-l (every CPU's
# backtrace) on the guest's keyboard, SECS apart (monitor_send).
sysrq_dumps() {
	monitor_send "$1" "sendkey alt-sysrq-9" "sendkey alt-sysrq-w" "sendkey alt-sysrq-l"
}

# TORPOR_VM_SYSRQ=1 (debugging a guest that falls silent): through the
# boot's QEMU monitor (its socket's path is in LOG.mon while QEMU runs),
# once the console has said nothing for 75 s, the guest's keyboard gets
# SysRq-9 (every message to the console: the dumps are KERN_INFO, below
# the guests' loglevel=4 or 5), SysRq-w (the blocked tasks) and SysRq-l
# (every CPU's backtrace), and again after each further 75 s of silence
# (every boot has sysrq_always_enabled).
# sysrq_on_silence LOG MONITOR
sysrq_on_silence() {
	local now age
	while sleep 5; do
		[ -S "$2" ] && [ -e "$1" ] || continue
		now=$(date +%s)
		age=$((now - $(stat -c %Y "$1")))
		[ "$age" -ge 75 ] || continue
		SECS=3 sysrq_dumps "$2"
		echo "vm: $(basename "$1"): silent for ${age}s: sent SysRq-9, SysRq-w and SysRq-l" >&2
		touch "$1"
	done
}

qemu_boot_once() {
	local log=$1 limit=$2 mem=$3 kernel=$4 initrd=$5 append=$6
	local start end disk drives=() serial=(-serial stdio) input=/dev/null typist=
	local direct=()
	shift 6
	for disk in "$@"; do
		drives+=(-drive "file=$disk,if=virtio,format=raw")
	done
	local dumper= watcher= mon
	# The monitor's socket: a short path (a unix socket's is at most 107
	# bytes, and a build directory can be deep), printed for debugging.
	mon=$(mktemp -u /tmp/torpor-vm-mon.XXXXXX)
	echo "$mon" >"$log.mon"
	local monitor=(-monitor "unix:$mon,server=on,wait=off")
	rm -f "$log.sysrq"
	# KERNEL empty: the firmware boots the first disk (its own boot
	# loader, whose configuration holds the command line).
	[ -z "$kernel" ] ||
		direct=(-kernel "$kernel" -initrd "$initrd" -append "sysrq_always_enabled $append")
	sysrq_before_timeout "$log" "$mon" "$limit" 2>/dev/null &
	watcher=$!
	if [ "${TORPOR_VM_SYSRQ:-0}" = 1 ]; then
		sysrq_on_silence "$log" "$mon" &
		dumper=$!
	fi
	if [ -n "$vm_type_when" ]; then
		rm -f "$log.raw" "$log.in"
		mkfifo "$log.in"
		serial=(-chardev "stdio,id=console,logfile=$log.raw" -serial chardev:console)
		type_on_console "$log.raw" "$log.in" "$limit" &
		typist=$! input=$log.in
	fi
	start=${EPOCHREALTIME/./}
	timeout -k 5 "$limit" qemu-system-x86_64 \
		-machine pc,accel=tcg -cpu "$vm_cpu" -m "$mem" -smp "$vm_smp" \
		-nodefaults -no-reboot -display none -monitor none \
		"${serial[@]}" -net none \
		${direct[@]+"${direct[@]}"} \
		"${drives[@]}" ${monitor[@]+"${monitor[@]}"} ${qemu_extra[@]+"${qemu_extra[@]}"} \
		<"$input" 2>&1 | stamp_lines "$start" >"$log"
	boot_rc=${PIPESTATUS[0]}
	for dumper in $dumper $watcher; do
		pkill -P "$dumper" 2>/dev/null
		kill "$dumper" 2>/dev/null
		wait "$dumper" 2>/dev/null
	done
	rm -f "$mon" "$log.mon"
	if [ -n "$typist" ]; then
		kill "$typist" 2>/dev/null
		wait "$typist" 2>/dev/null
		rm -f "$log.in" "$log.raw"
	fi
	end=${EPOCHREALTIME/./}
	[ -z "${logdir:-}" ] || step_line "$(basename "$log" .log)" "$start" "$end"
	boot_secs=$(((end - start) / 1000))
	boot_secs=$((boot_secs / 1000)).$(printf '%03d' $((boot_secs % 1000)))
}

# has BOOT REGEX: the line is in that boot's log.
has() { grep -qE -- "$2" "$logdir/boot$1.log"; }
# awake_after_delay BOOT DELAY: torpor woke from its suspend-then-hibernate
# suspend and went by the time asleep, at least DELAY - 1 s (the RTC counts
# whole seconds).
awake_after_delay() {
	grep -hoE 'awake after [0-9.]+ s: the delay has passed' "$logdir/boot$1.log" |
		awk -v d="$2" '{ if ($3 + 1 >= d) ok = 1 } END { exit !ok }'
}
# ts BOOT REGEX: host seconds of the first matching line.
ts() { grep -E -m1 -- "$2" "$logdir/boot$1.log" | cut -d' ' -f1; }
# field BOOT REGEX KEY: KEY=value from the first matching line.
field() {
	grep -E -m1 -- "$2" "$logdir/boot$1.log" |
		tr ' ' '\n' | sed -n "s/^$3=//p" | head -n 1
}
