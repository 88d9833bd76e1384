#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The plugin SDK as someone outside this tree gets it: `meson install
# --destdir` of this build, then plugins built against that tree alone
# (its headers and torpor-plugin.pc, no -I into the sources), loaded by
# the installed programs and run through full cycles on the simulated
# snapshot device (resumed by the build tree's torpor-resume-sim: the
# installed torpor-resume has no simulator, which is checked too).
#
# Usage: sdk.sh example   the example filter (examples/zero-elide), built
#                         with its meson.build and with its Makefile
#        sdk.sh filters   lzo, lz4, zlib and checksum, each compiled from
#                         its own folder with `pkg-config --cflags
#                         torpor-plugin` and its codec library
# Environment (from meson): TORPOR_BUILD_ROOT, TORPOR_SOURCE_ROOT, CC, and
# TORPOR_PLUGINS, the plugins this build has.
. "$TORPOR_SOURCE_ROOT/tests/integration/lib.sh"
mode="$1"
SRC=$(realpath "$TORPOR_SOURCE_ROOT")
ROOT="$(realpath "$WORK")/root"
CC=${CC:-cc}
# The project's own warnings (meson.build): unused parameters are the rule
# for plugin methods, so -Wunused-parameter is off there too.
WARN="-std=c11 -Wall -Wextra -Wno-unused-parameter -Wshadow
	-Wmissing-prototypes -Wstrict-prototypes -Wformat=2 -Wvla -Werror"

command -v meson >/dev/null || { echo "SKIP: meson is not in PATH"; exit 77; }
command -v pkg-config >/dev/null || { echo "SKIP: no pkg-config"; exit 77; }

# The loader refuses, as root, a plugin directory that others can write.
chmod 0755 "$WORK"

t_run install meson install -C "$TORPOR_BUILD_ROOT" --no-rebuild \
	--destdir "$ROOT" --quiet
expect_rc 0 "meson install --destdir"
[ "$rc" -eq 0 ] || finish
pcdir=$(dirname "$(find "$ROOT" -name torpor-plugin.pc | head -n 1)")
TORPOR=$(find "$ROOT" -path '*bin/torpor' -type f | head -n 1)
INSTALLED_RESUME=$(find "$ROOT" -path '*bin/torpor-resume' -type f | head -n 1)
if [ ! -f "$pcdir/torpor-plugin.pc" ] || [ ! -x "$TORPOR" ] ||
   [ ! -x "$INSTALLED_RESUME" ]; then
	fail "the installed tree lacks torpor-plugin.pc or the programs"
	finish
fi
TORPOR_RESUME=$TORPOR_RESUME_SIM

# with_sdk CMD...: run CMD with a pkg-config that sees only the installed
# tree's torpor-plugin.pc, its paths moved into the destdir.
with_sdk() {
	PKG_CONFIG_LIBDIR="$pcdir" PKG_CONFIG_PATH='' \
		PKG_CONFIG_SYSROOT_DIR="$ROOT" "$@"
}

# The installed plugin directory, from the .pc file's plugindir variable
# (pkgconf moves it into the sysroot; pkg-config 0.29 does not).
PLUGINDIR=$(with_sdk pkg-config --variable=plugindir torpor-plugin)
case "$PLUGINDIR" in "$ROOT"/*) ;; *) PLUGINDIR="$ROOT$PLUGINDIR" ;; esac
[ -f "$PLUGINDIR/raw.so" ] ||
	fail "plugindir=$PLUGINDIR (torpor-plugin.pc): no installed plugins"
# The ABI the headers describe, as a build system can ask for it.
abi=$(with_sdk pkg-config --variable=abi_version torpor-plugin)
abi_h=$(sed -n 's/^#define TORPOR_PLUGIN_ABI_VERSION \([0-9]*\)$/\1/p' \
	"$SRC/include/torpor/plugin.h")
[ -n "$abi" ] && [ "$abi" = "$abi_h" ] ||
	fail "torpor-plugin.pc: abi_version=$abi, the header says $abi_h"

# check_sources DEPFILE DIR: the compiler read torpor's headers from the
# installed tree only, and nothing of the source tree outside DIR.
check_sources() {
	local dep="$1" dir="$2" f files
	# Canonical paths: "../other/x.h" from DIR is outside DIR.
	read -r -a files < <(sed -e 's/\\$//' -e 's/^[^:]*://' "$dep" |
		tr '\n' ' ')
	for f in $(realpath -m "${files[@]}"); do
		case "$f" in
		"$ROOT"/*) ;;
		*/torpor/*.h) fail "$dep: $f is not the installed header" ;;
		"$dir"/*) ;;
		"$SRC"/*) fail "$dep: reads $f, outside its own folder $dir" ;;
		esac
	done
}

# cycle FILTERS: hibernate, verify, resume, and a second resume that finds
# nothing, with the installed programs (torpor-resume-sim for the resume)
# and the plugins in $PLUGINDIR_OVERRIDE.  The installed torpor-resume
# first, which cannot open the simulated device and leaves the image.
cycle() {
	local filters="$1" pages=4096 what="[$1]"
	rm -f "$IMAGE"
	write_config "sim:$((pages * 4096)):9" "$filters"
	t_run hib torpor hibernate --direct
	expect_rc 0 "$what: hibernate"
	expect_out "^hibernate: $pages pages, " "$what: hibernate summary"
	cp "$OUT" "$WORK/hibernate.out"
	t_run ver torpor verify
	expect_rc 0 "$what: verify"
	expect_out "^verify: image is intact: .* chain $filters raw\$" \
		"$what: verify"
	TORPOR_RESUME=$INSTALLED_RESUME t_run installed torpor_resume
	expect_rc 1 "$what: the installed torpor-resume on a sim image"
	expect_err "is the simulated snapshot device, which this program is built without" \
		"$what: the installed torpor-resume says it has no simulator"
	t_run res torpor_resume
	expect_rc 0 "$what: resume"
	expect_out "^resume: $pages pages restored and verified" \
		"$what: resume"
	t_run again torpor_resume
	expect_rc 0 "$what: second resume"
	expect_out "no image found" "$what: second resume"
}

example() {
	local ex="$SRC/examples/zero-elide" exports pct n
	t_run setup with_sdk meson setup "$WORK/example-build" "$ex"
	expect_rc 0 "example: meson setup"
	expect_out "torpor-plugin found: YES" "example: meson finds the SDK"
	t_run compile meson compile -C "$WORK/example-build"
	expect_rc 0 "example: meson compile"
	install -m 0755 "$WORK/example-build/zero-elide.so" "$PLUGINDIR/" ||
		fail "example: cannot copy zero-elide.so into $PLUGINDIR"
	exports=$(nm -D --defined-only "$PLUGINDIR/zero-elide.so" |
		awk '{print $3}')
	[ "$exports" = torpor_plugin_entry ] ||
		fail "example: exports '$exports', not only torpor_plugin_entry"

	PLUGINDIR_OVERRIDE="$PLUGINDIR"
	write_config "sim:4096" ""
	t_run list torpor plugins
	expect_rc 0 "example: torpor plugins"
	expect_out "^zero-elide +filter +abi $abi " "example: torpor plugins"
	for n in lzo lz4 zlib; do
		if built "$n"; then
			cycle "zero-elide $n"
			break
		fi
	done
	cycle "zero-elide"
	# The sim's memory has zero pages: leaving them out must show.
	pct=$(sed -n 's/^hibernate: .* stored (\([0-9]*\)%).*/\1/p' \
		"$WORK/hibernate.out")
	if [ -z "$pct" ] || [ "$pct" -ge 100 ]; then
		fail "example: zero-elide alone stored ${pct:-?}% of the image"
	fi

	# The Makefile, run from outside the source tree.
	if ! command -v make >/dev/null; then
		echo "note: make is not installed; the Makefile is not tried"
		return
	fi
	mkdir -m 0755 "$WORK/make"
	t_run make with_sdk make -C "$WORK/make" -f "$ex/Makefile" \
		CC="$CC" CFLAGS="-O2 -Werror"
	expect_rc 0 "example: make"
	PLUGINDIR_OVERRIDE="$WORK/make"
	t_run list torpor plugins
	expect_out "^zero-elide +filter +abi $abi " \
		"example: the Makefile's build loads"
}

# built NAME: whether this build has plugin NAME (its feature and library).
built() {
	case " $TORPOR_PLUGINS " in *" $1 "*) return 0 ;; esac
	return 1
}

# filter NAME PKG: compile plugins/NAME/NAME.c against the installed SDK.
# A plugin this build left out (-Dlz4=disabled, no liblz4) may lack its
# library here too.
filter() {
	local name="$1" lib="$2" out="$WORK/plugins/$1.so"
	if ! pkg-config --exists "$lib"; then
		if built "$name"; then
			fail "$name: pkg-config does not find $lib"
		else
			echo "note: $lib is not installed; $name is not built"
		fi
		return 1
	fi
	# shellcheck disable=SC2046,SC2086
	t_run cc $CC $WARN -shared -fPIC -fvisibility=hidden \
		$(with_sdk pkg-config --cflags torpor-plugin) \
		$(pkg-config --cflags "$lib") \
		-Wl,--version-script="$SRC/plugins/plugin.map" -Wl,-z,defs \
		-MD -MF "$WORK/$name.d" -o "$out" \
		"$SRC/plugins/$name/$name.c" $(pkg-config --libs "$lib")
	expect_rc 0 "$name: compile from plugins/$name/ and the installed SDK"
	[ "$rc" -eq 0 ] || return 1
	check_sources "$WORK/$name.d" "$SRC/plugins/$name"
}

filters() {
	local built="" n
	mkdir -m 0755 "$WORK/plugins"
	filter lzo lzo2 && built+=" lzo"
	filter lz4 liblz4 && built+=" lz4"
	filter zlib zlib && built+=" zlib"
	filter checksum libgcrypt && built+=" checksum"
	# The writer of the cycles is the installed one.
	install -m 0755 "$PLUGINDIR/raw.so" "$WORK/plugins/"

	PLUGINDIR_OVERRIDE="$WORK/plugins"
	write_config "sim:4096" ""
	t_run list torpor plugins
	expect_rc 0 "torpor plugins"
	for n in $built; do
		expect_out "^$n +filter +abi $abi " "$n: loads"
	done
	grep -q refused "$ERR" && fail "the loader refused a plugin"
	for n in $built; do
		case "$n" in
		checksum) ;;
		*) cycle "checksum $n" ;;
		esac
	done
}

case "$mode" in
example) example ;;
filters) filters ;;
*) echo "usage: $0 example|filters" >&2; exit 2 ;;
esac
finish
