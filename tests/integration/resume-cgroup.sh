#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# torpor-resume sizes its pool from its own memory limit, not from the
# host's free memory: in a memory cgroup of LIMIT MiB, with 64 threads of
# 1024-page chunks asked for (the 64 MiB pool budget alone would allow more
# than the cgroup), it lowers the thread count, says why, and restores every
# page instead of being OOM-killed.  With a limit too small for even one
# thread's buffers it refuses before handing anything to the kernel, and
# the image stays.  Root, and a memory cgroup (v1 or v2) it may create.
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (memory cgroups)"; exit 77; }
# ASan's shadow memory would not fit the limits below.
if ldd "$TORPOR_RESUME" 2>/dev/null | grep -q libasan; then
	echo "SKIP: sanitizer build (its shadow memory does not fit the limit)"
	exit 77
fi

# The directory of a new memory cgroup under this process's own, and the
# names of its limit and usage files.
cg= max_file= procs_file=cgroup.procs
own=$(sed -n 's/^[0-9]*:[^:]*memory[^:]*:\(.*\)$/\1/p' /proc/self/cgroup | head -n1)
if [ -n "$own" ] && [ -d "/sys/fs/cgroup/memory$own" ]; then
	cg=/sys/fs/cgroup/memory$own/torpor-it-$$
	max_file=memory.limit_in_bytes
else
	own=$(sed -n 's/^0::\(.*\)$/\1/p' /proc/self/cgroup)
	parent=/sys/fs/cgroup$own
	if [ -n "$own" ] && grep -qw memory "$parent/cgroup.subtree_control" 2>/dev/null; then
		cg=$parent/torpor-it-$$
		max_file=memory.max
	fi
fi
[ -n "$cg" ] && mkdir "$cg" 2>/dev/null ||
	{ echo "SKIP: cannot create a memory cgroup here"; exit 77; }
cleanup_cg() { rmdir "$cg" 2>/dev/null; }
trap 'cleanup_cg; rm -rf "$WORK"' EXIT

# in_cgroup LIMIT_MIB CMD...: run CMD in the cgroup limited to LIMIT_MIB.
in_cgroup() {
	local mib=$1; shift
	echo $((mib << 20)) >"$cg/$max_file" || fail "cannot set $cg/$max_file"
	(echo "$BASHPID" >"$cg/$procs_file" && exec "$@")
}

pages=16384
resume_in() {	# resume_in LIMIT_MIB
	t_run "resume in $1 MiB" in_cgroup "$1" "$TORPOR_RESUME" --config "$CONF" \
		--plugin-dir "$TORPOR_PLUGINDIR" --cmdline /dev/null
	[ "$rc" -ne 137 ] || fail "torpor-resume was OOM-killed under a $1 MiB limit"
}

# Chunks of 4 MiB: one thread's buffers (4 MiB of read-ahead and the
# chunk slots) are about 45 MiB, more than a 24 MiB cgroup leaves.
# Refused, nothing handed, the image as it was.
write_config "sim:$((pages * 4096)):7" "checksum" "threads = 64" "chunk_pages = 1024"
t_run hib torpor hibernate --direct
expect_rc 0 "hibernate"
sum=$(sha256sum <"$IMAGE")
resume_in 24
[ "$rc" -ne 0 ] || fail "a resume that cannot fit its limit exited 0"
expect_err "not enough memory to resume: .* $cg leaves" "the refusal names the cgroup"
[ "$(sha256sum <"$IMAGE")" = "$sum" ] || fail "the refused resume changed the image"

# Chunks of 1 MiB: the 64 MiB pool budget alone allows 9 threads (about
# 60 MiB, which a 48 MiB cgroup kills); within the cgroup's room, fewer
# threads, every page restored.
write_config "sim:$((pages * 4096)):7" "checksum" "threads = 64" "chunk_pages = 256"
t_run hib torpor hibernate --direct
expect_rc 0 "hibernate"
resume_in 48
expect_rc 0 "resume within a 48 MiB cgroup"
expect_err "worker threads: [0-9] instead of 64: .* $cg leaves" "the lowered thread count names the cgroup"
expect_out "^resume: $pages pages restored and verified" "resume"
finish
