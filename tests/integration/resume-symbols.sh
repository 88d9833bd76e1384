#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# torpor-resume lives in every initramfs: it must carry nothing of the
# hibernate side and nothing of the simulator.  meson gives it only the
# resume side of the core (src/torpor-resume/meson.build); this checks
# the binary that meson installs, so that a dependency added later cannot
# bring the cycle or the simulated device back unseen.
#
# Usage: resume-symbols.sh TORPOR_RESUME LIB...
#        resume-symbols.sh --self-check TORPOR_RESUME_SIM LIB...
# Fails when the program defines a symbol that one of the libraries (the
# hibernate, inspect and report areas, the simulator) defines, one of the
# names below, or any symbol named like the simulator's (sim_*, *_sim_*,
# *_sim), or when it holds the name of one of the simulator's levers
# (TORPOR_SIM_*).  --self-check runs the same checks on a program that
# does link the simulator (torpor-resume-sim) and fails unless both the
# symbol checks and the lever check catch it: the check can fail.
# Exits 77 (skip) without nm.
set -u

self_check=false
if [ "${1:-}" = --self-check ]; then
	self_check=true
	shift
fi
bin=${1:?usage: $0 [--self-check] TORPOR_RESUME LIB...}
shift
command -v nm >/dev/null || { echo "resume-symbols: no nm" >&2; exit 77; }
[ -e "$bin" ] || { echo "resume-symbols: $bin is not built" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/torpor-syms.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Whatever a build calls them, these are the hibernate side and the
# simulator.
printf '%s\n' cycle_hibernate cycle_prepare initramfs_check \
	initramfs_list elf_needed status_report plugins_report logind_view \
	snapshot_sim_open sim_generate_page sim_generate_header \
	sim_pages_fill snapshot_sim_premake >"$work/named"
for lib in "$@"; do
	[ -e "$lib" ] || { echo "resume-symbols: $lib is not built" >&2; exit 1; }
	nm --defined-only --extern-only "$lib" 2>/dev/null |
		awk 'NF == 3 { print $3 }'
done | cat - "$work/named" | sort -u >"$work/forbidden"
nm --defined-only "$bin" | awk 'NF == 3 { print $3 }' | sort -u >"$work/defined"
{
	comm -12 "$work/forbidden" "$work/defined"
	grep -E '(^|_)sim(_|$)' "$work/defined"
} | sort -u >"$work/symbols"
grep -aoE 'TORPOR_SIM_[A-Z_]+' "$bin" | sort -u >"$work/levers"

if $self_check; then
	if [ -s "$work/symbols" ] && [ -s "$work/levers" ]; then
		echo "ok: the check catches $bin: $(wc -l <"$work/symbols") symbols, $(wc -l <"$work/levers") lever names"
		exit 0
	fi
	echo "FAIL: $bin links the simulator, but the check found $(wc -l <"$work/symbols") of its symbols and $(wc -l <"$work/levers") of its lever names"
	exit 1
fi

status=0
if [ -s "$work/symbols" ]; then
	echo "FAIL: $bin carries symbols of the hibernate side or the simulator:"
	sed 's/^/  /' "$work/symbols"
	status=1
fi
if [ -s "$work/levers" ]; then
	echo "FAIL: $bin holds the names of the simulator's levers:"
	sed 's/^/  /' "$work/levers"
	status=1
fi
[ "$status" -eq 0 ] &&
	echo "ok: $(wc -l <"$work/forbidden") hibernate-side and simulator symbols, none in $bin, nor a sim_ name or a TORPOR_SIM_ lever"
exit "$status"
