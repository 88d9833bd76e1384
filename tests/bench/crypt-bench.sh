#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Cost of the crypt filter: the lzo filter alone and lzo + crypt over the
# same simulated memory image (the sim source's page generator), in one
# run, through the built plugins; then AES-256-GCM against
# ChaCha20-Poly1305 in libgcrypt, and the default Argon2id unlock time.
#
# Usage: tests/bench/crypt-bench.sh BUILD_DIR [SIZE_MIB]   (default 512)
# Runs the crypt-bench program meson builds (tests/bench/meson.build);
# exits 77 when the plugins or the program are not built.
set -eu

build=${1:?usage: $0 BUILD_DIR [SIZE_MIB]}
size=${2:-512}
build=$(cd "$build" && pwd)
plugins="$build/plugins"

for f in "$plugins/lzo.so" "$plugins/crypt.so" "$build/tests/bench/crypt-bench"; do
	[ -e "$f" ] || { echo "crypt-bench: $f is not built" >&2; exit 77; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

head -c 32 /dev/urandom >"$work/keyfile"
chmod 600 "$work/keyfile"
"$build/tests/bench/crypt-bench" "$plugins" "$work/keyfile" "$size"
