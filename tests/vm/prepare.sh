#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Build ahead what the distribution cases of the VM suite need and do not
# test: each release's root filesystems and build chroot (build-debian.sh,
# cached in TORPOR_VM_CACHE), and torpor built in each release's chroot
# (BUILDDIR/vm-distro-RELEASE) with its Debian package (BUILDDIR/vm-deb-
# RELEASE).  scripts/test starts it in the background
# as soon as the build directory is configured, so that mmdebstrap, bound
# to one core for most of its run, goes on beside the unit and sanitizer
# passes instead of inside the first case of each release.  The cases
# never rely on it: each calls build-debian.sh and builds torpor itself,
# which finds the work done (or waits for it, under a lock) or does it.
#
# Usage: prepare.sh SRCDIR BUILDDIR CASE...   (the distro-* cases to run;
# others are ignored)
# Environment: TORPOR_VM_PREPARE_JOBS (default 2): tarballs built at once.
# Logs in BUILDDIR/tests/vm/vm-logs/prepare/; step times in its steps.txt.
# Exit: 0 all built, 1 something failed (the case that needs it will fail
# with the reason, or skip when the archive cannot be reached).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 2 ] || { echo "usage: $0 SRCDIR BUILDDIR CASE..." >&2; exit 1; }
srcdir=$(cd "$1" && pwd)
builddir=$(cd "$2" && pwd)
shift 2
cache=${TORPOR_VM_CACHE:-/var/cache/torpor-vm}
jobs=${TORPOR_VM_PREPARE_JOBS:-2}
logdir=$builddir/tests/vm/vm-logs/prepare
mkdir -p "$logdir"
rm -f "$logdir/steps.txt"
case_name=prepare
. "$here/qemu-lib.sh"
. "$here/distro-lib.sh"

# The tarballs, the releases' build chroots first, in the order of the
# releases (torpor's builds need them, and start as each is there).
tarballs=() builds=() releases=()
for c in "$@"; do
	case "$c" in distro-*) ;; *) continue ;; esac
	distro_parse "$c" || exit 1
	case " ${releases[*]} " in *" $release "*) ;; *)
		releases+=("$release") builds+=("$release build") ;;
	esac
	case " ${tarballs[*]/ /:} " in *" $release:$kind "*) ;; *)
		[ "$kind" = build ] || tarballs+=("$release $kind") ;;
	esac
done
[ ${#releases[@]} -gt 0 ] || exit 0

# torpor in each release's chroot, one build at a time, each as soon as
# its chroot's tarball is there (build-debian.sh waits for the one under
# way), beside the tarballs still being built.
(
	rc=0
	for release in "${releases[@]}"; do
		buildtar=$("$here/build-debian.sh" "$release" build "$cache") || { rc=1; continue; }
		mkdir -p "$logdir/$release"
		step_start "torpor-build-$release"
		distro_build_torpor "$release" "$buildtar" "$srcdir" "$builddir" "$logdir/$release" || rc=1
		step_end "torpor-build-$release"
		step_start "deb-build-$release"
		distro_build_deb "$release" "$builddir" "$logdir/$release" || rc=1
		step_end "deb-build-$release"
	done
	exit $rc
) &
torpor_builds=$!

step_start tarballs
printf "%s $cache\n" "${builds[@]}" "${tarballs[@]}" |
	xargs -P "$jobs" -L 1 sh -c '"$0" "$@" >/dev/null' "$here/build-debian.sh" 2>&1 |
	sed 's/^/prepare: /'
rc=${PIPESTATUS[1]}
step_end tarballs
wait "$torpor_builds" || rc=1
exit "$rc"
