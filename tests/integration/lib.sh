# SPDX-License-Identifier: GPL-2.0-or-later
# Shared helpers of the integration tests (sourced).  Meson passes the
# paths of the programs in the environment: TORPOR, TORPOR_RESUME,
# TORPOR_PLUGINDIR, IMAGE_TOOL, and the build's default configuration
# ($sysconfdir/torpor/torpor.conf) TORPOR_DEFAULT_CONFIG.
set -u

WORK=$(mktemp -d "${TMPDIR:-/tmp}/torpor-it.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
CONF="$WORK/torpor.conf"
IMAGE="$WORK/image"
OUT="$WORK/out"
ERR="$WORK/err"
failures=0

fail() {
	echo "FAIL: $*"
	echo "--- stdout"; cat "$OUT" 2>/dev/null
	echo "--- stderr"; cat "$ERR" 2>/dev/null
	failures=$((failures + 1))
}

# write_config SNAPSHOT FILTERS [EXTRA...]: a raw-writer configuration.
write_config() {
	local snapshot="$1" filters="$2"; shift 2
	{
		echo "[torpor]"
		echo "snapshot = $snapshot"
		echo "filters = $filters"
		echo "writer = raw"
		for line in "$@"; do echo "$line"; done
		echo
		echo "[raw]"
		echo "device = $IMAGE"
	} >"$CONF"
	# The raw writer refuses an image file others could read.
	[ -e "$IMAGE" ] || (umask 077 && : >"$IMAGE")
}

# t_run NAME CMD...: run, keep stdout/stderr, set $rc.
t_run() {
	shift
	"$@" >"$OUT" 2>"$ERR"
	rc=$?
}

torpor() { "$TORPOR" --config "$CONF" --plugin-dir "${PLUGINDIR_OVERRIDE:-$TORPOR_PLUGINDIR}" "$@"; }
torpor_resume() {
	"$TORPOR_RESUME" --config "$CONF" --plugin-dir "${PLUGINDIR_OVERRIDE:-$TORPOR_PLUGINDIR}" \
		--cmdline "${CMDLINE_FILE:-/dev/null}" "$@"
}

expect_rc() {	# expect_rc WANT WHAT
	[ "$rc" -eq "$1" ] || fail "$2: exit status $rc, expected $1"
}

expect_out() {	# expect_out REGEX WHAT
	grep -Eq -- "$1" "$OUT" || fail "$2: stdout lacks /$1/"
}

expect_err() {	# expect_err REGEX WHAT
	grep -Eq -- "$1" "$ERR" || fail "$2: stderr lacks /$1/"
}

expect_err_line() {	# expect_err_line TEXT WHAT: TEXT is a whole line of stderr
	grep -Fxq -- "$1" "$ERR" || fail "$2: stderr lacks the line '$1'"
}

finish() {
	if [ "$failures" -ne 0 ]; then
		echo "$failures failure(s)"
		exit 1
	fi
	echo "all checks passed"
	exit 0
}
