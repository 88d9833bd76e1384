#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Resume memory is bounded, whatever the image's size: torpor-resume reads
# the stored stream once, through a few MiB of read-ahead, and keeps no
# copy of it.  A 256 MiB sim image stored uncompressed (checksum only)
# must resume, every page verified, within a generous 64 MiB of peak RSS
# (a cache of the stream alone would be 256 MiB).  Peak RSS comes from
# GNU time; without it the test is skipped.
. "$(dirname "$0")/lib.sh"

[ -x /usr/bin/time ] || { echo "SKIP: no /usr/bin/time"; exit 77; }
pages=65536
write_config "sim:$((pages * 4096)):11" "checksum"
t_run hib torpor hibernate --direct
expect_rc 0 "hibernate"
t_run res /usr/bin/time -f 'maxrss_kib=%M' "$TORPOR_RESUME" --config "$CONF" \
	--plugin-dir "$TORPOR_PLUGINDIR" --cmdline /dev/null
expect_rc 0 "resume"
expect_out "^resume: $pages pages restored and verified" "resume"
rss=$(sed -nE 's/^maxrss_kib=([0-9]+)$/\1/p' "$ERR" | tail -n1)
echo "torpor-resume peak RSS: ${rss:-?} KiB for a $((pages * 4096 >> 20)) MiB image"
[ -n "$rss" ] || fail "no peak RSS from /usr/bin/time"
[ -n "$rss" ] && [ "$rss" -gt $((64 * 1024)) ] &&
	fail "torpor-resume peaked at $rss KiB, more than 64 MiB"
finish
