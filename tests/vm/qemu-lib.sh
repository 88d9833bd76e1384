# SPDX-License-Identifier: GPL-2.0-or-later
# Shared by the VM suite's case scripts (sourced): one QEMU boot with a
# host-timestamped serial log, and the helpers that read those logs.
# The caller sets logdir (the logs are $logdir/bootN.log).

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

# qemu_boot LOG LIMIT MEM KERNEL INITRD APPEND DISK: one boot under TCG,
# ended by `timeout` after LIMIT seconds; sets boot_rc and boot_secs.
# The array qemu_extra, when set, adds QEMU options.
qemu_boot() {
	local log=$1 limit=$2 mem=$3 kernel=$4 initrd=$5 append=$6 disk=$7
	local start end
	start=${EPOCHREALTIME/./}
	timeout -k 5 "$limit" qemu-system-x86_64 \
		-machine pc,accel=tcg -cpu qemu64 -m "$mem" -smp 1 \
		-nodefaults -no-reboot -display none -monitor none \
		-serial stdio -net none \
		-kernel "$kernel" -initrd "$initrd" -append "$append" \
		-drive "file=$disk,if=virtio,format=raw" \
		${qemu_extra[@]+"${qemu_extra[@]}"} \
		</dev/null 2>&1 | stamp_lines "$start" >"$log"
	boot_rc=${PIPESTATUS[0]}
	end=${EPOCHREALTIME/./}
	boot_secs=$(((end - start) / 1000))
	boot_secs=$((boot_secs / 1000)).$(printf '%03d' $((boot_secs % 1000)))
}

# has BOOT REGEX: the line is in that boot's log.
has() { grep -qE -- "$2" "$logdir/boot$1.log"; }
# ts BOOT REGEX: host seconds of the first matching line.
ts() { grep -E -m1 -- "$2" "$logdir/boot$1.log" | cut -d' ' -f1; }
# field BOOT REGEX KEY: KEY=value from the first matching line.
field() {
	grep -E -m1 -- "$2" "$logdir/boot$1.log" |
		tr ' ' '\n' | sed -n "s/^$3=//p" | head -n 1
}
