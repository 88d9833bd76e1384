#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Round trips on the simulated snapshot device through one chain, for images
# of 1, 31, 32, 33 and 65,536 pages and two seeds: hibernate, then resume
# must hand back every page byte for byte (the sim verifies each), then a
# second resume must find no image.
# Usage: roundtrip.sh "FILTERS"   (e.g. "checksum lzo", or "" for none)
. "$(dirname "$0")/lib.sh"
filters="$1"

for seed in 1 7; do
	for pages in 1 31 32 33 65536; do
		what="[$filters] $pages pages seed $seed"
		rm -f "$IMAGE"
		write_config "sim:$((pages * 4096)):$seed" "$filters"
		t_run hib torpor hibernate --direct
		expect_rc 0 "$what: hibernate"
		expect_out "^hibernate: $pages pages, " "$what: hibernate summary"
		t_run ver torpor verify
		expect_rc 0 "$what: verify"
		expect_out "^verify: image is intact: " "$what: verify"
		t_run res torpor_resume
		expect_rc 0 "$what: resume"
		expect_out "^resume: $pages pages restored and verified" "$what: resume"
		t_run again torpor_resume
		expect_rc 0 "$what: second resume"
		expect_out "no image found" "$what: second resume"
	done
done
# The largest chunks the configuration allows (1024 pages, 4 MiB): verify
# reads the stream through a window, not a cache, and must fit a stored
# chunk larger than its usual 1 MiB piece.
what="[$filters] chunk_pages 1024"
rm -f "$IMAGE"
write_config "sim:$((2500 * 4096)):3" "$filters" "chunk_pages = 1024"
t_run hib torpor hibernate --direct
expect_rc 0 "$what: hibernate"
t_run ver torpor verify
expect_rc 0 "$what: verify"
expect_out "^verify: image is intact: 3 chunks" "$what: verify"
t_run res torpor_resume
expect_rc 0 "$what: resume"
expect_out "^resume: 2500 pages restored and verified" "$what: resume"
# [lz4] acceleration: a higher one stores more of the same pages, and the
# image resumes (decoding does not need the value).
case " $filters " in
*" lz4 "*)
	for a in 1 64; do
		what="[$filters] acceleration $a"
		rm -f "$IMAGE"
		write_config "sim:$((4096 * 4096)):5" "$filters"
		printf '\n[lz4]\nacceleration = %s\n' "$a" >>"$CONF"
		t_run hib torpor hibernate --direct
		expect_rc 0 "$what: hibernate"
		pct=$(sed -n 's/^hibernate: .* stored (\([0-9]*\)%).*/\1/p' "$OUT")
		[ -n "$pct" ] || fail "$what: no stored share in the summary"
		eval "pct_$a=\${pct:-0}"
		t_run res torpor_resume
		expect_rc 0 "$what: resume"
		expect_out "^resume: 4096 pages restored and verified" "$what: resume"
	done
	[ "$pct_64" -gt "$pct_1" ] ||
		fail "[$filters] acceleration 64 stored $pct_64%, acceleration 1 $pct_1%: not applied"
	;;
esac
finish
