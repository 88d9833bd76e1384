# SPDX-License-Identifier: GPL-2.0-or-later
#
# The VM suite's case `perf`, sourced by run-case.sh once the guest is built
# (it uses boot(), has(), ts(), fail(), note() and disk_state() from there).
#
# The same guest (one initramfs, -m 512, one swap partition on one disk)
# hibernates and resumes in modes, round-robin, each TORPOR_VM_PERF_ROUNDS
# times (default 3), first with 1 vCPU and then with 2 (TORPOR_VM_PERF_SMP,
# default "1 2"), under each kernel of TORPOR_VM_PERF_KERNELS (default
# "host sid": the host's Debian kernel, 6.1 on Debian 12, and Debian
# unstable's, taken from the sid root filesystem that build-debian.sh
# makes for the distribution cases): one table per kernel and vCPU count,
# the ratios within it.  TORPOR_VM_PERF_MODES picks the modes (in that
# order; kernel is needed for the ratios), by default kernel, kernel-lz4,
# kernel-nocomp, lz4, lzo, none and lz4-a16-d:
#   kernel         the kernel's own hibernation (swsusp, LZO by default)
#   kernel-lz4     the same with hibernate.compressor=lz4 (kernels from
#                  6.9 on; the guest loads the lz4 modules at boot, and the
#                  kernel's "Using N thread(s) for lz4 compression" line
#                  must say lz4: without the module it falls back silently)
#   kernel-nocomp  the same with hibernate=nocompress
#   lz4 lzo none   torpor hibernate --direct with that chain (none: no
#                  filter) and the swap writer
#   lz4-wt none-wt the same with [torpor] write_thread = yes (not among
#                  the default modes: ask for them in TORPOR_VM_PERF_MODES)
#   lz4-a4 lz4-a16 lz4 with [lz4] acceleration = 4 or 16
#   none-c128 lz4-a16-c128
#                  the same with chunk_pages = 128 (not among the
#                  default modes)
#   MODE-d         a torpor MODE through torpord, started (and so its
#                  cycle prepared) before the trigger: `torpor hibernate`
#                  is its client (as systemctl hibernate finds it); the
#                  phases are torpord's line, without a program start, so
#                  its power-off holds the client's start and request
# Each cycle is two boots: boot 1 starts the marker and hibernates, boot 2
# resumes it; the marker must come back with its token and checksum.  The
# case fails only when a cycle does not work or torpor's peak RSS (either
# program's, VmHWM) passes the issue's 64 MiB, never on a timing.
#
# Figures (host clock; the guest's clocks jump across a resume):
#   hibernate  "VM: hibernate start" on the serial console -> QEMU exits
#              (the guest powered off): freeze, snapshot, write, sync,
#              power-off, and the console line's own latency, alike for all
#   resume     kernel start -> MARKER-THAWED in boot 2: the marker, a user
#              process, running again after the thaw (it watches the clocks
#              itself, so neither the hibernating program's work after the
#              thaw nor the init script's next steps count); the kernel
#              start is the host time of the "VM-T init" line minus the
#              uptime that line carries (read before any resume, so the
#              guest clock is still the boot's own)
#   restore    the resume hook starting -> MARKER-THAWED (what differs
#              between the modes; kernel start -> hook is the same boot)
#   pages      "Need to copy N pages" (7.x: "Normal pages needed: N + ...")
#              from the resumed system's kernel log
#              (every mode: the kernel's snapshot counts the same way), and
#              for torpor its header's page count (image pages + metadata)
#   k.wrote    the kernel modes' own "PM: hibernation: Wrote N kbytes in S
#   k.read     seconds" (boot 1) and "... Read N kbytes in S seconds" (boot
#              2), printed on the console (these boots have loglevel=7),
#              beside torpor's write and read+decode phases: the phase
#              each owns
# Sizes (TORPOR_VM_PERF_SIZES, default "512"): each MEM or MEM:MARKER, the
# guest's MiB of RAM and the marker's locked MiB.  512 alone is the guest
# above with the usual 16 MiB random marker; a larger guest (the issue's
# scale: "2560:1024") gets a marker of MARKER MiB of partly compressible
# memory (MARKER_FILL=mixed, tests/vm/marker.c), a swap partition of
# 3 GiB, and boot time-outs grown with the RAM.
# The table goes to the test log and to LOGDIR/table.txt; every cycle's
# logs stay in LOGDIR/KERNEL/smpN[-mMEM]/MODE-ROUND/.

perf_rounds=${TORPOR_VM_PERF_ROUNDS:-3}
perf_smps=${TORPOR_VM_PERF_SMP:-1 2}
perf_kernels=${TORPOR_VM_PERF_KERNELS:-host sid}
perf_sizes=${TORPOR_VM_PERF_SIZES:-512}
perf_all_modes=${TORPOR_VM_PERF_MODES:-kernel kernel-lz4 kernel-nocomp lz4 lzo none lz4-a16-d}
# The torpor modes among them, for the phase table.
perf_torpor=$(for m in $perf_all_modes; do [ "${m#kernel}" = "$m" ] && echo "$m"; done)

# The kernel modes' console lines (PM: Using, Wrote, Read) are pr_info.
perf_append() {
	case "$1" in
	kernel) echo "torpor.kernel=1 loglevel=7" ;;
	kernel-lz4) echo "torpor.kernel=1 loglevel=7 hibernate.compressor=lz4" ;;
	kernel-nocomp) echo "torpor.kernel=1 loglevel=7 hibernate=nocompress" ;;
	*-d) echo "torpor.conf=perf-${1%-d} torpor.verbose=1 torpor.daemon=1" ;;
	*) echo "torpor.conf=perf-$1 torpor.verbose=1" ;;
	esac
	[ -z "$perf_fill" ] || echo "torpor.marker=$perf_marker torpor.marker_fill=$perf_fill"
}

# perf_size MEM[:MARKER]: this size's RAM, marker (and its fill: mixed, or
# empty for random), disk, boot time-out and log directory suffix.
perf_size() {
	perf_mem=${1%%:*} perf_marker=16 perf_fill= perf_disk_mib=1024 perf_limit=120 perf_tag=
	[ "$1" != "${1#*:}" ] && perf_marker=${1#*:}
	if [ "$perf_mem" != 512 ]; then
		perf_fill=mixed perf_disk_mib=3072
		perf_limit=$((120 * perf_mem / 512))
		perf_tag=-m$perf_mem
	fi
}

# perf_num LOG REGEX: the first number after REGEX on a matching line.
perf_num() {
	grep -E -m1 -o -- "$2 *[0-9.]+" "$1" | grep -oE '[0-9.]+$'
}

# perf_cycle MODE ROUND: two boots at -smp $vm_smp; appends a record to
# $records.
perf_cycle() {
	local mode=$1 round=$2 extra dir before=$failures
	local t_hib hib k0 init_host init_up t_after t_hook res restore kwrote kread kusing kthreads kalg
	local token sum pages hpages stored phases rphases disk_mib wio hrss rrss n

	extra=$(perf_append "$mode" | tr '\n' ' ')
	dir=$logdir/$perf_kernel/smp$vm_smp$perf_tag/$mode-$round
	rm -rf "$dir"
	mkdir -p "$dir"
	# A fresh sparse disk each cycle: its allocated blocks afterwards
	# are what the hibernation wrote (the kernel's own image size).
	rm -f "$disk"
	truncate -s "${perf_disk_mib}M" "$disk"
	write_mbr "$disk" 2048 $((perf_disk_mib * 2048 - 2048))
	boot 1 "$perf_mem" "$perf_limit" "$extra"
	cycle_trouble=$boot_rc
	guest_known_oops "$logdir/boot1.log" && cycle_trouble=panicked
	hib=$boot_secs
	disk_mib=$(du -k "$disk" | awk '{ printf "%.1f", $1 / 1024 }')
	token=$(field 1 '^[0-9.]+ MARKER pid=' token)
	sum=$(field 1 '^[0-9.]+ MARKER pid=' sum)
	[ -n "$token" ] || fail "$mode-$round: the marker did not start"
	has 1 'VM: hibernate exit' &&
		fail "$mode-$round: the hibernation returned instead of powering off"
	[ "$(disk_state)" = image ] || fail "$mode-$round: no image after boot 1"
	t_hib=$(ts 1 'VM: hibernate start')
	# What boot 1 wrote sits dirty in the host's page cache (QEMU's
	# default cache=writeback), as on a disk that had it all before the
	# power-off.  Written back now, so that boot 2's first flush (torpor
	# invalidates the image durably before the restore; the kernel's
	# modes flush nothing then) does not wait for the host's writeback
	# of a gigabyte.
	sync "$disk"
	boot 2 "$perf_mem" "$perf_limit" "$extra"
	[ "$boot_rc" = 124 ] && cycle_trouble=124
	guest_known_oops "$logdir/boot2.log" && cycle_trouble=panicked
	has 2 "MARKER-AFTER .*token=$token sum=$sum" ||
		fail "$mode-$round: boot 2 did not resume the marker"
	[ "$(disk_state)" = none ] || fail "$mode-$round: the image is still on the disk after the resume"

	init_host=$(ts 2 'VM-T init ')
	init_up=$(grep -E -m1 'VM-T init ' "$logdir/boot2.log" | awk '{ print $NF }')
	t_after=$(ts 2 'MARKER-THAWED')
	[ -n "$t_after" ] || fail "$mode-$round: no MARKER-THAWED in boot 2"
	t_hook=$(ts 2 'VM-T resume-hook')
	pages=$(perf_num "$logdir/boot2.log" 'Need to copy')
	# (7.x no longer prints that line: its count of the pages to copy.)
	[ -n "$pages" ] || pages=$(perf_num "$logdir/boot2.log" 'Normal pages needed:')
	hpages=$(grep -hoE 'hibernate: [0-9]+ pages' "$logdir/boot1.log" | grep -oE '[0-9]+' | head -n1)
	stored=$(grep -hE 'hibernate: [0-9]+ pages' "$logdir/boot1.log" | grep -oE '[0-9.]+ MiB stored' |
		head -n1 | cut -d' ' -f1)
	[ "${mode#kernel}" != "$mode" ] && stored=$disk_mib
	# torpor's phase lines (hibernate -v before the power-off, and
	# torpor-resume -v before the restore): "NAME SECONDS" pairs.
	phases=$(grep -h -m1 'hibernate: phases (s):' "$logdir/boot1.log" | sed 's/.*phases (s): *//')
	rphases=$(grep -h -m1 'resume: phases (s):' "$logdir/boot2.log" | sed 's/.*phases (s): *//')
	# Of the write phase, the seconds spent in the writer's write():
	# what overlapping the I/O with the encoding could save at most.
	wio=$(grep -h -m1 -oE "writes: [0-9.]+ s in the writer's write" "$logdir/boot1.log" |
		grep -oE '[0-9.]+')
	# Each program's peak RSS (VmHWM, KiB), printed after its phases.
	hrss=$(perf_num "$logdir/boot1.log" 'hibernate: peak RSS')
	rrss=$(perf_num "$logdir/boot2.log" 'resume: peak RSS')
	# The issue's bound on torpor's memory, kept at every size: not a
	# timing, so a breach fails the case.
	if [ "${mode#kernel}" = "$mode" ]; then
		for n in "hibernate:$hrss" "resume:$rrss"; do
			if [ -z "${n#*:}" ]; then
				fail "$mode-$round: no '${n%%:*}: peak RSS' line"
			elif [ "${n#*:}" -gt 65536 ]; then
				fail "$mode-$round: ${n%%:*} peaked at ${n#*:} KiB, more than 64 MiB"
			fi
		done
	fi
	# The kernel's own phases, and the threads and algorithm it used.
	kwrote=$(perf_num "$logdir/boot1.log" 'Wrote [0-9]+ kbytes in')
	kread=$(perf_num "$logdir/boot2.log" 'Read [0-9]+ kbytes in')
	kusing=$(grep -a -m1 -oE 'Using [0-9]+ thread\(s\) for [a-zA-Z0-9 ]*compression' "$logdir/boot1.log")
	kthreads=$(sed -nE 's/^Using ([0-9]+) thread.*/\1/p' <<<"$kusing")
	kalg=$(sed -E 's/.*thread\(s\) for //; s/ ?compression$//' <<<"$kusing")
	if [ "$mode" = kernel-lz4 ] && [ "$kalg" != lz4 ]; then
		fail "$mode-$round: the kernel did not compress with lz4 (its line: '${kusing:-none}')"
	fi
	awk -v m="$mode" -v r="$round" -v th="$t_hib" -v q="$hib" \
		-v ih="$init_host" -v iu="$init_up" -v ta="$t_after" -v tk="$t_hook" \
		-v p="${pages:--}" -v hp="${hpages:--}" -v st="${stored:--}" \
		-v ph="$phases" -v rp="$rphases" -v wio="$wio" -v hrss="$hrss" -v rrss="$rrss" \
		-v kw="$kwrote" -v kr="$kread" -v kt="$kthreads" 'BEGIN {
		hib = (th == "" ? "-" : sprintf("%.3f", q - th));
		res = (ta == "" || ih == "" ? "-" : sprintf("%.3f", ta - (ih - iu)));
		rst = (ta == "" || tk == "" ? "-" : sprintf("%.3f", ta - tk));
		printf "%s %s hib=%s res=%s restore=%s pages=%s hpages=%s stored=%s", m, r, hib, res, rst, p, hp, st;
		n = split(ph, a, /[ ,]+/);
		for (i = 1; i + 1 <= n; i += 2) { printf " h.%s=%s", a[i], a[i + 1]; hs += a[i + 1] }
		# What the phase lines cannot show: the power-off (after the
		# last line) and, at resume, from the atomic restore to the
		# marker running in the resumed system.
		if (n > 1 && hib != "-") printf " h.power-off=%.3f", hib - hs;
		if (wio != "") printf " h.write-io=%s", wio;
		n = split(rp, a, /[ ,]+/);
		for (i = 1; i + 1 <= n; i += 2) { printf " r.%s=%s", a[i], a[i + 1]; rs += a[i + 1] }
		if (n > 1 && rst != "-") printf " r.restore=%.3f", rst - rs;
		if (hrss != "") printf " h.rss=%.1f", hrss / 1024;
		if (rrss != "") printf " r.rss=%.1f", rrss / 1024;
		if (kw != "") printf " k.wrote=%s", kw;
		if (kr != "") printf " k.read=%s", kr;
		if (kt != "") printf " k.threads=%s", kt;
		printf "\n" }' >>"$records"
	note "$(tail -n1 "$records")"
	for n in 1 2; do
		mv "$logdir/boot$n.log" "$dir/boot$n.log"
	done
	if [ "$failures" != "$before" ]; then
		for n in 1 2; do
			echo "======== $dir/boot$n.log ========" >&2
			cat "$dir/boot$n.log" >&2
		done
	fi
}

# perf_cycle_retried MODE ROUND: a cycle, and once more when a boot of it
# timed out or oopsed early (perf_cycle's cycle_trouble; the first try's
# logs are kept as MODE-ROUND.rerun).  With 2 vCPUs under TCG (QEMU 7.2) a guest now and then stops
# dead, the kernel's own hibernation as well as torpor's (seen once in
# about 140 boots of this case: kernel-nocomp, no output for 117 s after
# "hibernate start"); each cycle has a fresh disk, so the rerun is the same
# cycle.  So is a cycle whose kernel oopsed before user space started:
# Debian unstable's 7.2 at 2 vCPUs, once in its first 10 boots here, took
# an int3 it did not recognise in sched_clock_cpu at 1 s (its text
# patching under TCG), long before torpor or the kernel's hibernation
# ran.  The rerun is said (VM-RETRY) and counted in the table; a second
# time-out or early oops fails the case.
perf_retries=0
vm_retry_stopped=0	# the whole cycle runs again instead (qemu-lib.sh)
perf_cycle_retried() {
	local before=$failures why
	perf_cycle "$1" "$2"
	case "$cycle_trouble" in
	124) why="a boot timed out" ;;
	panicked) why="the kernel oopsed before user space started, or took an int3 in its own text" ;;
	*) return 0 ;;
	esac
	local d=$logdir/$perf_kernel/smp$vm_smp$perf_tag/$1-$2
	echo "VM-RETRY perf: $1 round $2 at -smp $vm_smp ($perf_kernel kernel): $why; the cycle runs again (logs kept in $d.rerun)"
	rm -rf "$d.rerun"
	mv "$d" "$d.rerun"
	sed -i "/^$1 $2 /d" "$records"
	failures=$before
	perf_retries=$((perf_retries + 1))
	perf_cycle "$1" "$2"
}

# perf_median MODE KEY [max]: the median of KEY over MODE's records ("-":
# none); with max, the largest.
perf_median() {
	awk -v m="$1" -v k="$2" -v max="${3:-}" '$1 == m {
		for (i = 3; i <= NF; i++) {
			split($i, kv, "=");
			if (kv[1] == k && kv[2] != "-") v[n++] = kv[2] + 0;
		}
	} END {
		if (n == 0) { print "-"; exit }
		for (i = 0; i < n; i++) for (j = i + 1; j < n; j++)
			if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
		x = n % 2 ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
		if (max != "") x = v[n - 1];
		print k ~ /pages|threads/ ? sprintf("%.0f", x) : k ~ /stored|rss/ ? sprintf("%.1f", x) : sprintf("%.3f", x)
	}' "$records"
}

# perf_round_ratios SIDE: torpor's best chain ÷ the kernel's best mode
# (the modes named kernel*) in each round, as "median (min–max over N
# rounds)" ("-": no round has both).
perf_round_ratios() {
	awk -v side="$1" '{
		v = "-";
		for (i = 3; i <= NF; i++) {
			split($i, kv, "=");
			if (kv[1] == side) v = kv[2];
		}
		if (v == "-") next;
		kernel = ($1 ~ /^kernel/);
		if (kernel && (!($2 in bk) || v + 0 < bk[$2])) bk[$2] = v + 0;
		if (!kernel && (!($2 in bt) || v + 0 < bt[$2])) bt[$2] = v + 0;
	} END {
		for (r in bt) if ((r in bk) && bk[r] > 0) x[n++] = bt[r] / bk[r];
		if (n == 0) { print "-"; exit }
		for (i = 0; i < n; i++) for (j = i + 1; j < n; j++)
			if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
		m = n % 2 ? x[(n - 1) / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
		printf "%.2f (%.2f–%.2f over %d rounds)\n", m, x[0], x[n - 1], n
	}' "$records"
}

perf_div() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f", a / b }'
}

perf_sub() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		if (a == "-" || b == "-") print "-"; else printf "%+d", a - b }'
}

perf_table() {
	local m khib kres kpages best_t best_k
	khib=$(perf_median kernel hib)
	kres=$(perf_median kernel res)
	kpages=$(perf_median kernel pages)
	echo "perf: kernel $(cat "$guest/kernel.release") ($perf_kernel): medians of $perf_rounds rounds (seconds, host clock), -smp $vm_smp, -cpu $vm_cpu, -m $perf_mem, marker $perf_marker MiB${perf_fill:+ ($perf_fill)}, TCG, swap partition; cycles rerun after a guest stopped, so far: $perf_retries"
	printf '%-14s %9s %9s %9s %8s %8s %8s %8s %8s %8s\n' mode hibernate resume restore \
		'hib/kLZO' 'res/kLZO' pages 'Δpages' 'hdr-pg' 'MiB'
	for m in $perf_modes; do
		local h r
		h=$(perf_median "$m" hib)
		r=$(perf_median "$m" res)
		printf '%-14s %9s %9s %9s %8s %8s %8s %8s %8s %8s\n' "$m" "$h" "$r" \
			"$(perf_median "$m" restore)" "$(perf_div "$h" "$khib")" \
			"$(perf_div "$r" "$kres")" "$(perf_median "$m" pages)" \
			"$(perf_sub "$(perf_median "$m" pages)" "$kpages")" \
			"$(perf_median "$m" hpages)" "$(perf_median "$m" stored)"
	done
	# The issue's second target: torpor's best chain against the
	# kernel's best mode, for each side.
	for side in hib res; do
		best_t=$(for m in $perf_torpor; do perf_median "$m" "$side"; done | grep -v '^-' | sort -n | head -n1)
		best_k=$(for m in kernel kernel-lz4 kernel-nocomp; do perf_median "$m" "$side"; done | grep -v '^-' | sort -n | head -n1)
		echo "best torpor ÷ best kernel ($side): $(perf_div "${best_t:--}" "${best_k:--}") of the medians; per round $(perf_round_ratios "$side")"
	done
	echo
	echo "torpor phases (medians, seconds)"
	printf '%-10s %7s %7s %7s %7s %7s %8s %7s %7s | %7s %7s %7s %7s\n' chain prog \
		start-up freeze snapshot write write-io sync power-off r.prog r.header r.read r.restore
	for m in $perf_torpor; do
		printf '%-10s' "$m"
		for k in h.program-start h.start-up h.freeze h.snapshot h.write; do
			printf ' %7s' "$(perf_median "$m" "$k")"
		done
		printf ' %8s' "$(perf_median "$m" h.write-io)"
		for k in h.sync h.power-off; do
			printf ' %7s' "$(perf_median "$m" "$k")"
		done
		printf ' |'
		for k in r.program-start r.header r.read+decode r.restore; do
			printf ' %7s' "$(perf_median "$m" "$k")"
		done
		printf '\n'
	done
	echo
	echo "torpor's peak RSS (MiB, VmHWM; the largest over the rounds): the hibernating"
	echo "program (torpord for MODE-d) before the power-off, torpor-resume before the restore"
	printf '%-10s %9s %9s\n' chain hibernate resume
	for m in $perf_torpor; do
		printf '%-10s %9s %9s\n' "$m" "$(perf_median "$m" h.rss max)" "$(perf_median "$m" r.rss max)"
	done
	echo
	echo "the kernel's own phases (medians, seconds): its Wrote line (the compression"
	echo "and the write, after the snapshot) and its Read line (reading and decoding)"
	printf '%-14s %7s %7s %8s\n' mode write r.read threads
	for m in $perf_modes; do
		[ "${m#kernel}" != "$m" ] || continue
		printf '%-14s %7s %7s %8s\n' "$m" "$(perf_median "$m" k.wrote)" \
			"$(perf_median "$m" k.read)" "$(perf_median "$m" k.threads)"
	done
	echo "hibernate: prog = exec to the cycle (loading, plugins); write-io = the part of"
	echo "write spent in the writer's write() calls; power-off = the rest up to"
	echo "QEMU's exit.  resume (from the hook): r.prog = exec to the run, r.restore = the"
	echo "atomic restore to the marker running in the resumed system (kernel and thaw)."
}

# perf_kernel_root NAME: "" for the host's kernel; for a release (sid), a
# directory holding the kernel and the modules of the release's root
# filesystem (build-debian.sh's tarball, kept beside it).
perf_kernel_root() {
	local tarball kroot
	[ "$1" = host ] && return 0
	tarball=$("$here/build-debian.sh" "$1" initramfs-tools "${TORPOR_VM_CACHE:-/var/cache/torpor-vm}") ||
		return 1
	kroot=${tarball%.tar}.kernel
	if [ ! -d "$kroot" ]; then
		rm -rf "$kroot.tmp"
		mkdir -p "$kroot.tmp"
		# (./boot whole: modules/VER/config is a hard link into it.)
		tar -xf "$tarball" -C "$kroot.tmp" --wildcards './boot/*' './usr/lib/modules/*' &&
			ln -s usr/lib "$kroot.tmp/lib" && mv "$kroot.tmp" "$kroot" || return 1
	fi
	echo "$kroot"
}

# perf_kernel_modes: the modes this kernel has (kernel-lz4 from 6.9 on).
perf_kernel_modes() {
	local rel v m
	rel=$(cat "$guest/kernel.release")
	v=$(awk -F'[.-]' '{ print $1 * 1000 + $2 }' <<<"$rel")
	for m in $perf_all_modes; do
		[ "$m" = kernel-lz4 ] && [ "$v" -lt 6009 ] && continue
		echo "$m"
	done
}

perf_run() {
	local round m kroot
	: >"$logdir/table.txt"
	for perf_kernel in $perf_kernels; do
		if ! kroot=$(perf_kernel_root "$perf_kernel"); then
			fail "no $perf_kernel kernel: its root filesystem could not be built or unpacked (build-debian.sh, tar)"
			continue
		fi
		TORPOR_VM_KERNEL_ROOT=$kroot build_guest
		perf_modes=$(perf_kernel_modes | tr '\n' ' ')
		note "kernel $(cat "$guest/kernel.release") ($perf_kernel): modes $perf_modes"
		for size in $perf_sizes; do
			perf_size "$size"
			for vm_smp in $perf_smps; do
				records=$logdir/records-$perf_kernel-smp$vm_smp$perf_tag
				: >"$records"
				for round in $(seq 1 "$perf_rounds"); do
					for m in $perf_modes; do
						note "$perf_kernel kernel, -smp $vm_smp, -m $perf_mem: $m, round $round of $perf_rounds"
						perf_cycle_retried "$m" "$round"
					done
				done
				perf_table | tee -a "$logdir/table.txt"
				echo | tee -a "$logdir/table.txt"
			done
		done
	done
}

perf_run
[ "$failures" = 0 ] || exit 1
note "passed"
exit 0
