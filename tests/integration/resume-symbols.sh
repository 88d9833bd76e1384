#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# torpor-resume lives in every initramfs: it must carry nothing of the
# hibernate side.  meson gives it only the resume side of the core
# (src/torpor-resume/meson.build); this checks the binary, so that a
# dependency added later cannot bring the cycle back unseen.
#
# Usage: resume-symbols.sh TORPOR_RESUME HIBERNATE_SIDE_LIB...
# Fails when torpor-resume defines a symbol that one of the libraries
# (the hibernate, inspect and report areas) defines, or one of the names
# below.  Exits 77 (skip) without nm.
set -u

bin=${1:?usage: $0 TORPOR_RESUME LIB...}
shift
command -v nm >/dev/null || { echo "resume-symbols: no nm" >&2; exit 77; }

work=$(mktemp -d "${TMPDIR:-/tmp}/torpor-syms.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Whatever a build calls them, these are the hibernate side.
printf '%s\n' cycle_hibernate cycle_prepare initramfs_check \
	initramfs_list elf_needed status_report plugins_report logind_view >"$work/named"
for lib in "$@"; do
	[ -e "$lib" ] || { echo "resume-symbols: $lib is not built" >&2; exit 1; }
	nm --defined-only --extern-only "$lib" 2>/dev/null |
		awk 'NF == 3 { print $3 }'
done | cat - "$work/named" | sort -u >"$work/hibernate"
nm --defined-only "$bin" | awk 'NF == 3 { print $3 }' | sort -u >"$work/resume"
comm -12 "$work/hibernate" "$work/resume" >"$work/both"

if [ -s "$work/both" ]; then
	echo "FAIL: $bin carries hibernate-side symbols:"
	sed 's/^/  /' "$work/both"
	exit 1
fi
echo "ok: $(wc -l <"$work/hibernate") hibernate-side symbols, none in $bin"
